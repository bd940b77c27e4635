"""
test_cluster.py - rlockd in [redis] mode = cluster, against a real Redis Cluster of
three masters and three replicas (redis-server --cluster-enabled yes, joined with
redis-cli --cluster create), every node on free loopback ports, started and stopped
by pid by the test.

Each test starts its own cluster (failovers and resharding change it for good).
What is proved: every lock goes straight to its slot's master (no MOVED is ever
needed), hash tags keep names together and "a}b{c}" goes where Redis puts it; two
rlockd exclude and wake each other on every master with sharded pub/sub (auto, on
Redis 7) and with global; so do rlockd and a client running Redisson's own scripts
with global, with sharded, and, for a mixed fleet, with both; node-redisson over
ioredis's Cluster client and rlockd in global mode; a waiter on a slot that moves is
woken on its new master; every lock kind (FAIR's queue, deadlines and per-waiter
channel, READ's timeout keys, FENCED's counter) keeps its keys in the name's slot
and wakes waiters across two rlockd, and so do the semaphores and the latch; a
master killed with SIGKILL is
replaced by its replica, the holds in its slots alone are checked, waiters woken and
new locks served; a seed that is down at start-up is skipped; and slots moved
between masters under 20 looping clients cost no error and no overlap, with MOVED
and ASK followed; a slot left half-migrated answers an error, not a hang; and names
that would reach rlockd's own records, and records rlockd did not write, are refused.
"""

import os
import subprocess
import threading
import time

from harness import (ACQUIRE_SCRIPT, HOST, RELEASE_SCRIPT, Rlockd, RespClient, TempDir, assert_eq,
                     channel_for, is_error, node_with, wait_info, wait_until)
from topology import ClusterSetup


class Setup:
    """A ClusterSetup and one rlockd (more with second()) in cluster mode over it."""

    def __init__(self, rlockd_config=None, seeds=None, tls=None):
        """tls: a certs.RedisTls the nodes speak (test_tls_redis.py)."""
        self.extra = rlockd_config
        self.seeds = seeds
        self.tls = tls
        self.clients = []
        self.daemons = []

    def __enter__(self):
        self.tmp = TempDir()
        self.workdir = self.tmp.__enter__()
        self.cluster = ClusterSetup(self.workdir, tls=self.tls)
        try:
            self.cluster.start()
            self.rlockd = self.second("rlockd")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def second(self, instance="rlockd2", seeds=None):
        config = self.cluster.rlockd_config(self.extra)
        if seeds or self.seeds:
            config["redis"]["nodes"] = ", ".join("%s:%d" % (HOST, p) for p in (seeds or self.seeds))
        d = Rlockd(self.workdir, self.cluster.masters()[0], config, instance=instance)
        self.daemons.append(d)
        d.start()
        return d

    def __exit__(self, exc_type, *exc):
        for c in self.clients:
            c.close()
        for d in self.daemons:
            if exc_type is not None:   # what each rlockd saw of the cluster, for the failure's report
                print("    %s log (tail):\n%s" % (d.instance, "\n".join(
                    "      " + line for line in d.log_tail(40).splitlines())))
            d.stop()
        self.cluster.close()
        self.tmp.__exit__(None, None, None)
        return False

    def client(self, client_id, daemon=None, timeout=5.0):
        c = RespClient((daemon or self.rlockd).port, timeout=timeout, label=client_id)
        self.clients.append(c)
        assert_eq(c.call("CLIENTID", client_id), "OK", "CLIENTID %s" % client_id)
        return c

    def node(self, port):
        c = self.cluster.client(port)
        self.clients.append(c)
        return c

    def info(self, daemon=None):
        return (daemon or self.rlockd).info()


def info_int(daemon, key):
    return int(daemon.info()[key])


def test_locks_go_straight_to_their_slots_master():
    with Setup() as s:
        info = s.info()
        assert_eq(info["redis_mode"], "cluster", "INFO redis_mode")
        assert_eq(info["redis_topology"], "ok", "INFO redis_topology")
        masters = s.cluster.masters()
        listed = dict(part.rsplit(" slots=", 1) for part in info["redis_master"].split(","))
        assert_eq(sorted(listed), sorted("%s:%d" % (HOST, p) for p in masters), "INFO masters")
        assert_eq(sum(int(n) for n in listed.values()), 16384, "slots served")

        a = s.client("router")
        names = s.cluster.names_on_each_master("route", count=2)
        names[s.cluster.master_for("c")].append("a}b{c}")   # Redis hashes it on "c"
        names[s.cluster.master_for("user:1")] += ["{user:1}:a", "{user:1}:b"]
        for port, on_master in names.items():
            for name in on_master:
                assert_eq(a.call("LOCK", name, 1), "OK", "LOCK %s" % name)
                assert_eq(s.node(port).call("HGETALL", name), ["router:1", "1"],
                          "%s on master %d" % (name, port))
        assert_eq(s.cluster.keyslot("{user:1}:a"), s.cluster.keyslot("{user:1}:b"),
                  "a hash tag keeps names in one slot")
        assert_eq(info_int(s.rlockd, "cluster_moved"), 0,
                  "every call went straight to its master (no MOVED)")
        for on_master in names.values():
            for name in on_master:
                assert_eq(a.call("UNLOCK", name, 1), 1, "UNLOCK %s" % name)


def _exclude_and_wake(s, other):
    """A name on each master: held through s.rlockd, waited for through other, which the
    release wakes (the lease is the watchdog's 30 s: only the message is that fast)."""
    for port, (name,) in s.cluster.names_on_each_master("wake").items():
        a = s.client("a-%d" % port)
        b = s.client("b-%d" % port, daemon=other)
        assert_eq(a.call("LOCK", name, 1), "OK", "LOCK %s on the first rlockd" % name)
        b.send("LOCK", name, 1)
        wait_info(other, "waiting_clients", 1, what="the second rlockd's waiter queued")
        b.expect_no_reply(0.3, "LOCK of a name the first rlockd holds")
        before = info_int(other, "unlock_messages")
        t0 = time.monotonic()
        assert_eq(a.call("UNLOCK", name, 1), 1, "UNLOCK %s" % name)
        assert_eq(b.read_reply(timeout=5.0), "OK", "the waiter's LOCK after the release")
        waited = time.monotonic() - t0
        assert info_int(other, "unlock_messages") > before, "woken by the unlock message"
        assert waited < 3.0, "woken after %.2f s" % waited
        assert_eq(s.node(port).call("HGETALL", name), ["b-%d:1" % port, "1"],
                  "%s now held through the second rlockd" % name)
        assert_eq(b.call("UNLOCK", name, 1), 1, "UNLOCK by the second rlockd")


def test_two_rlockd_exclude_and_wake_each_other_with_sharded_pubsub_by_default():
    with Setup({"lock": {"watchdog_timeout_ms": 30000}}) as s:
        other = s.second()
        for d in (s.rlockd, other):
            assert_eq(d.info()["redis_pubsub"], "sharded", "pubsub = auto on Redis 7")
        _exclude_and_wake(s, other)


def test_two_rlockd_exclude_and_wake_each_other_with_global_pubsub():
    with Setup({"redis": {"pubsub": "global"}, "lock": {"watchdog_timeout_ms": 30000}}) as s:
        other = s.second()
        assert_eq(other.info()["redis_pubsub"], "global", "INFO redis_pubsub")
        _exclude_and_wake(s, other)


# Redisson's release, publishing with SPUBLISH as it does with sharded pub/sub on.
SHARDED_RELEASE_SCRIPT = RELEASE_SCRIPT.replace("redis.call('publish'", "redis.call('spublish'")


def _java_listener(s, name, sharded):
    """A Java client's subscription to name's channel: SSUBSCRIBE on the master of its
    slot, or SUBSCRIBE on another master (a cluster delivers PUBLISH to every node)."""
    owner = s.cluster.master_for(name)
    node = s.node(owner if sharded else [p for p in s.cluster.masters() if p != owner][0])
    verb = "SSUBSCRIBE" if sharded else "SUBSCRIBE"
    assert_eq(node.call(verb, channel_for(name))[0], verb.lower(), "Java %s" % verb)
    return node


def _redisson_client_exclusion(s, java_sharded, java_listens_sharded, tag=""):
    """A Redisson-format client runs Redisson's own scripts on each lock's master,
    publishing with SPUBLISH or PUBLISH, and listens sharded or not."""
    release = SHARDED_RELEASE_SCRIPT if java_sharded else RELEASE_SCRIPT
    for port, (name,) in s.cluster.names_on_each_master("java" + tag).items():
        java = s.node(port)
        owner = "java-uuid-%d:1" % port
        w = s.client("w%s-%d" % (tag, port))
        assert_eq(java.call("EVAL", ACQUIRE_SCRIPT, 1, name, 30000, owner), None, "Java acquire")
        w.send("LOCK", name, 1)
        wait_info(s.rlockd, "waiting_clients", 1, what="the rlockd LOCK queued behind Java's")
        w.expect_no_reply(0.3, "rlockd LOCK while Java holds %s" % name)
        t0 = time.monotonic()
        assert_eq(java.call("EVAL", release, 2, name, channel_for(name), 0, 30000, owner),
                  1, "Java release")
        # Java's lease was 30 s: only the unlock message wakes the waiter this fast.
        assert_eq(w.read_reply(timeout=3.0), "OK", "rlockd waiter after Java's unlock")
        assert time.monotonic() - t0 < 3.0, "woken by the message"
        # And the other way round: Java excluded, then told of rlockd's release.
        listener = _java_listener(s, name, java_listens_sharded)
        pttl = java.call("EVAL", ACQUIRE_SCRIPT, 1, name, 30000, owner)
        assert isinstance(pttl, int) and pttl > 0, "Java excluded by rlockd's hold: %r" % (pttl,)
        assert_eq(w.call("UNLOCK", name, 1), 1, "rlockd UNLOCK")
        kind = "smessage" if java_listens_sharded else "message"
        assert_eq(listener.read_reply(timeout=3.0)[:2], [kind, channel_for(name)],
                  "Java's subscriber got rlockd's unlock")
        assert_eq(java.call("EVAL", ACQUIRE_SCRIPT, 1, name, 30000, owner), None,
                  "Java acquires after rlockd's release")
        assert_eq(java.call("EVAL", release, 2, name, channel_for(name), 0, 30000, owner), 1,
                  "Java release")


def _assert_in_slot(s, port, name, keys, what):
    node, slot = s.node(port), s.cluster.keyslot(name)
    for key in [name] + keys:
        assert_eq(node.call("EXISTS", key), 1, "%s (%s) on its slot's master" % (key, what))
        assert_eq(s.cluster.keyslot(key), slot, "%s in %s's slot" % (key, name))


def _kind_hand_off(s, other, port, name, kind, keys):
    """name held with kind through s.rlockd, waited for through other (and, for READ,
    by a second reader there too). keys(stage, owner field) lists the keys the kind
    must have, besides the lock's, on the master of name's slot, in name's slot:
    while the first waiter waits, and once each waiter holds. The holder's UNLOCK
    wakes the waiters by message (the lease is the watchdog's 30 s). Each answers
    what its kind answers: OK, or a fencing token."""
    holder_kind = "WRITE" if kind == "READ" else kind
    a = s.client("%s-a-%d" % (kind, port))
    waiters = [s.client("%s-b%d-%d" % (kind, i, port), daemon=other)
               for i in range(2 if kind == "READ" else 1)]
    first = a.call("LOCK", name, 1, holder_kind)
    assert_eq(first if kind != "FENCED" else "OK", "OK", "%s LOCK %s" % (holder_kind, name))
    before = info_int(other, "unlock_messages")
    for w in waiters:
        w.send("LOCK", name, 1, kind)
    wait_info(other, "waiting_clients", len(waiters), what="the %s waiters queued" % kind)
    _assert_in_slot(s, port, name, keys("waiting", "%s-b0-%d:1" % (kind, port)), kind + " waiting")
    assert_eq(a.call("UNLOCK", name, 1, holder_kind), 1, "%s UNLOCK" % holder_kind)
    for w in waiters:
        got = w.read_reply(timeout=3.0)
        if kind == "FENCED":
            assert isinstance(got, int) and got > first, "token %r after the holder's %r" % (got, first)
        else:
            assert_eq(got, "OK", "the %s waiter after the release" % kind)
    assert info_int(other, "unlock_messages") > before, "woken by the unlock message"
    for i in range(len(waiters)):
        _assert_in_slot(s, port, name, keys("held", "%s-b%d-%d:1" % (kind, i, port)), kind + " held")
    for w in waiters:
        assert_eq(w.call("UNLOCK", name, 1, kind), 1, "the %s waiter's UNLOCK" % kind)
    assert_eq(s.node(port).call("EXISTS", name), 0, "%s released" % name)


def test_every_lock_kind_keeps_its_keys_in_the_names_slot_and_wakes_across_daemons():
    """FAIR (queue, deadlines, a channel per waiter), READ/WRITE (per-hold timeout keys,
    the rwlock channel) and FENCED (the token counter) on a name on each master: a
    script touching a key outside the name's slot would fail with a cross-slot error."""
    kinds = {
        "FAIR": lambda stage, field: (["redisson_lock_queue:{%s}", "redisson_lock_timeout:{%s}"]
                                      if stage == "waiting" else []),
        "READ": lambda stage, field: ["{%%s}:%s:rwlock_timeout:1" % field] if stage == "held" else [],
        "FENCED": lambda stage, field: ["redisson_lock_token:{%s}"],
    }
    with Setup({"lock": {"watchdog_timeout_ms": 30000}}) as s:
        other = s.second()
        for port, names in s.cluster.names_on_each_master("kinds", count=len(kinds)).items():
            for (kind, keys), name in zip(sorted(kinds.items()), names):
                _kind_hand_off(s, other, port, name, kind,
                               lambda stage, field: [k % name for k in keys(stage, field)])
        for d in (s.rlockd, other):
            assert_eq(info_int(d, "cluster_moved"), 0, "every call went straight to its master")


def _woken_across(s, other, port, what, setup, wait, release, want):
    """setup on s.rlockd, a waiter on other (wait), release on s.rlockd; the waiter is
    answered want(reply), and other heard the release's message."""
    a, b = s.client("%s-a-%d" % (what, port)), s.client("%s-b-%d" % (what, port), daemon=other)
    held = [a.call(*c) for c in setup][-1]
    b.send(*wait)
    wait_info(other, "waiting_clients", 1, what="the %s waiter queued" % what)
    before = info_int(other, "unlock_messages")
    a.call(*[held if x is None else x for x in release])
    got = b.read_reply(timeout=5.0)
    assert want(got), "the %s waiter answered %r" % (what, got)
    wait_until(lambda: info_int(other, "unlock_messages") > before, 3.0,
               what="the %s release's message heard by the other rlockd" % what)
    return a, b, got


def test_semaphores_and_latches_keep_their_keys_in_the_names_slot_and_wake_across_daemons():
    with Setup({"lock": {"watchdog_timeout_ms": 30000}}) as s:
        other = s.second()
        for port, (sem, xsem, latch) in s.cluster.names_on_each_master("counting", count=3).items():
            a, b, _ = _woken_across(s, other, port, "semaphore",
                                    [("SETPERMITS", sem, 1), ("ACQUIRE", sem)], ("ACQUIRE", sem),
                                    ("RELEASE", sem), lambda r: r == "OK")
            _assert_in_slot(s, port, sem, ["rlockd_permits:{%s}" % sem,
                                           "rlockd_permits_deadline:{%s}" % sem], "semaphore")
            assert_eq(b.call("RELEASE", sem), 1, "RELEASE through the second rlockd")
            a, b, pid = _woken_across(s, other, port, "expirable",
                                      [("SETPERMITS", xsem, 1), ("ACQUIRE", xsem, "EXPIRABLE")],
                                      ("ACQUIRE", xsem, "EXPIRABLE"), ("RELEASE", xsem, "ID", None),
                                      lambda r: isinstance(r, str) and len(r) == 32)
            _assert_in_slot(s, port, xsem, ["{%s}:timeout" % xsem], "expirable semaphore")
            assert_eq(b.call("RELEASE", xsem, "ID", pid), 1, "RELEASE ID through the second rlockd")
            _woken_across(s, other, port, "latch", [("LATCHSET", latch, 1)], ("AWAIT", latch),
                          ("COUNTDOWN", latch), lambda r: r == 1)
        for d in (s.rlockd, other):
            assert_eq(info_int(d, "cluster_moved"), 0, "every call went straight to its master")


def test_a_redisson_client_with_global_pubsub_excludes_and_wakes_rlockd_clients():
    """Java with shardedSubscriptionMode OFF, or node-redisson: PUBLISH and SUBSCRIBE."""
    with Setup({"redis": {"pubsub": "global"}}) as s:
        _redisson_client_exclusion(s, java_sharded=False, java_listens_sharded=False)


def test_a_redisson_client_with_sharded_pubsub_excludes_and_wakes_rlockd_clients():
    """Java Redisson 3.22+ on Redis 7 (AUTO): SPUBLISH in its scripts, SSUBSCRIBE."""
    with Setup() as s:
        _redisson_client_exclusion(s, java_sharded=True, java_listens_sharded=True)


def test_both_pubsub_wakes_and_tells_clients_of_either_kind():
    """A mixed fleet: rlockd hears a release published either way, and its own releases
    reach listeners of either kind."""
    with Setup({"redis": {"pubsub": "both"}}) as s:
        assert_eq(s.info()["redis_pubsub"], "both", "INFO redis_pubsub")
        _redisson_client_exclusion(s, java_sharded=True, java_listens_sharded=False, tag="a")
        _redisson_client_exclusion(s, java_sharded=False, java_listens_sharded=True, tag="b")


HERE = os.path.dirname(os.path.abspath(__file__))


class NodeRedisson:
    """node_redisson_peer.js: node-redisson 1.0.4 over ioredis's Cluster client."""

    def __init__(self, cluster):
        node, env = node_with("node-redisson")
        seeds = ",".join("%s:%d" % (HOST, p) for p in cluster.masters())
        self.proc = subprocess.Popen([node, os.path.join(HERE, "node_redisson_peer.js"), seeds],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, bufsize=1, start_new_session=True)

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, line, timeout):
        """The next line the peer prints, within timeout."""
        result = []
        reader = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()))
        reader.start()
        reader.join(timeout)
        assert result, "node-redisson: no %r within %.1f s" % (line, timeout)
        assert_eq(result[0].strip(), line, "node-redisson said")

    def close(self):
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdin.close()
        self.proc.stdout.close()


def test_node_redisson_on_the_cluster_excludes_and_wakes_rlockd_clients():
    """node-redisson always publishes with PUBLISH and waits on SUBSCRIBE: rlockd in
    global mode and it wake each other's waiters within a 60 s lease, both ways."""
    with Setup({"redis": {"pubsub": "global"}, "lock": {"watchdog_timeout_ms": 30000}}) as s:
        node = NodeRedisson(s.cluster)
        try:
            for port, (name,) in s.cluster.names_on_each_master("nodejs").items():
                w = s.client("nw-%d" % port)
                node.send("lock " + name)
                node.expect("locked " + name, 10.0)
                w.send("LOCK", name, 1)
                wait_info(s.rlockd, "waiting_clients", 1, what="the rlockd LOCK queued behind node's")
                w.expect_no_reply(0.3, "rlockd LOCK while node-redisson holds %s" % name)
                node.send("unlock " + name)
                node.expect("unlocked " + name, 5.0)
                assert_eq(w.read_reply(timeout=3.0), "OK", "rlockd waiter after node's unlock")
                node.send("lock " + name)   # waits: rlockd holds it
                time.sleep(0.3)
                assert_eq(s.node(port).call("HGETALL", name), ["nw-%d:1" % port, "1"],
                          "still rlockd's while node-redisson waits")
                assert_eq(w.call("UNLOCK", name, 1), 1, "rlockd UNLOCK")
                node.expect("locked " + name, 3.0)   # its lease would be 60 s
                node.send("unlock " + name)
                node.expect("unlocked " + name, 5.0)
        finally:
            node.close()


def test_a_killed_master_is_replaced_and_only_its_holds_are_checked():
    # The hold's TTL must outlast the failover (no renewal reaches a dead master): on a
    # loaded machine promotion took 5 s, and a 3 s watchdog hold expired on the replica
    # first, rightly reported lost.
    with Setup({"lock": {"watchdog_timeout_ms": 60000}}) as s:
        names = s.cluster.names_on_each_master("fo")
        victim, other = s.cluster.masters()[0], s.cluster.masters()[1]
        (doomed,), (safe,) = names[victim], names[other]
        a = s.client("holder")
        b = s.client("waiter")
        for name in (doomed, safe):
            assert_eq(a.call("LOCK", name, 1), "OK", "LOCK %s" % name)
        b.send("LOCK", doomed, 2)
        wait_info(s.rlockd, "waiting_clients", 1, what="the waiter queued")
        # The replica has the hold before the master dies.
        replica = s.cluster.replica_of(victim)
        on_replica = s.node(replica)
        assert_eq(on_replica.call("READONLY"), "OK", "READONLY on the replica")
        wait_until(lambda: on_replica.call("EXISTS", doomed) == 1, 5.0, what="the hold replicated")
        t0 = time.monotonic()
        s.cluster.kill_master(victim)
        new = s.cluster.wait_failover(victim)
        assert_eq(new, replica, "the replica took over")
        checked = lambda: info_int(s.rlockd, "failover_locks_kept") + info_int(s.rlockd, "failover_locks_lost")
        wait_until(lambda: checked() >= 1, 60.0, what="the hold re-checked on the promoted replica")
        recovered = time.monotonic() - t0
        assert_eq(info_int(s.rlockd, "failover_locks_kept"), 1, "the replicated hold kept")
        s.rlockd.wait_log("failed over to %s:%d" % (HOST, new), timeout=1.0)
        assert_eq(checked(), 1, "only the hold in the failed master's slots was checked")
        assert_eq(info_int(s.rlockd, "redis_master_changes"), 1, "one master change")
        wait_info(s.rlockd, "redis_topology", "ok", timeout=10.0)
        listed = s.info()["redis_master"]
        assert "%s:%d" % (HOST, victim) not in listed, "the dead master still listed: %s" % listed
        # The waiter is let go when the holder releases on the new master.
        assert_eq(a.call("UNLOCK", doomed, 1), 1, "UNLOCK on the promoted replica")
        assert_eq(b.read_reply(timeout=5.0), "OK", "the waiter's LOCK after the failover")
        assert_eq(s.node(new).call("HGETALL", doomed), ["waiter:2", "1"], "held on the new master")
        assert_eq(a.call("UNLOCK", safe, 1), 1, "the other master's hold untouched")
        c = s.client("after")
        name = s.cluster.names_on_each_master("after")[new][0]
        assert_eq(c.call("LOCK", name, 1), "OK", "a new LOCK on the new master")
        print("    kill -> hold re-checked on the new master %.2f s" % recovered)


def test_a_seed_that_is_down_at_start_up_is_skipped():
    with Setup() as s:
        masters = s.cluster.masters()
        replica = s.cluster.replica_of(masters[2])
        s.cluster.stop_node(replica)
        late = s.second("late", seeds=[replica, masters[1]])
        c = s.client("late-client", daemon=late)
        for port, (name,) in s.cluster.names_on_each_master("seed").items():
            assert_eq(c.call("LOCK", name, 1), "OK", "LOCK %s with the first seed down" % name)
            assert_eq(s.node(port).call("HGETALL", name), ["late-client:1", "1"], "on its master")
        assert_eq(late.info()["redis_topology"], "ok", "INFO redis_topology")


def test_slots_moved_under_load_cost_no_error_and_no_overlap():
    """20 clients loop LOCK/UNLOCK on names in slots that move between masters, once
    in one step (MOVED) and once held half-migrated for a while (ASK)."""
    with Setup() as s:
        masters = s.cluster.masters()
        src, dst = masters[0], masters[1]
        names = s.cluster.names_on_each_master("load", count=4)[src]
        slots = sorted({s.cluster.keyslot(n) for n in names})
        errors, overlaps, counts = [], [], [0] * 20
        holders = {}
        guard = threading.Lock()
        stop = threading.Event()

        def worker(i):
            c = RespClient(s.rlockd.port, timeout=20.0, label="w%d" % i)
            try:
                c.call("CLIENTID", "w%d" % i)
                k = 0
                while not stop.is_set():
                    name = names[(i + k) % len(names)]
                    k += 1
                    r = c.call("LOCK", name, 1)
                    if r != "OK":
                        errors.append("LOCK %s: %r" % (name, r))
                        continue
                    with guard:
                        if holders.get(name) is not None:
                            overlaps.append((name, holders[name], i))
                        holders[name] = i
                    time.sleep(0.001)
                    with guard:
                        holders[name] = None
                    r = c.call("UNLOCK", name, 1)
                    if r != 1:
                        errors.append("UNLOCK %s: %r" % (name, r))
                    counts[i] += 1
            except Exception as e:   # a lost connection is an error too
                errors.append("w%d: %r" % (i, e))
            finally:
                c.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        def cycles_since(before, count, what):
            wait_until(lambda: errors or sum(counts) >= before + count, 30.0, what=what)

        try:
            cycles_since(0, 20, "the clients looping")
            before = sum(counts)
            s.cluster.move_slot(slots[0], dst)                # one step: MOVED
            for slot in slots[1:]:
                s.cluster.move_slot_begin(slot, dst)          # half-way: ASK
            cycles_since(before, 20, "cycles while slots are half-migrated")
            for slot in slots[1:]:
                s.cluster.move_slot_finish(slot, dst)
            cycles_since(before, 60, "cycles after the slots moved")
            during = sum(counts) - before
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert not errors, "%d client-visible errors, the first: %s" % (len(errors), errors[:5])
        assert_eq(overlaps, [], "two holders of one name at once")
        assert during > 20, "the loop went on while slots moved (%d cycles)" % during
        info = s.info()
        assert int(info["cluster_moved"]) + int(info["cluster_asks"]) > 0, \
            "redirections were followed (MOVED %s, ASK %s)" % (info["cluster_moved"], info["cluster_asks"])
        for name in names:
            assert_eq(s.cluster.master_for(name), dst, "%s moved" % name)
        c = s.client("after-move")
        for name in names:
            assert_eq(c.call("LOCK", name, 1), "OK", "LOCK %s on its new master" % name)
            assert_eq(s.node(dst).call("HGETALL", name), ["after-move:1", "1"], "held on the new master")
        print("    %d LOCK/UNLOCK cycles while %d slots moved; MOVED %s, ASK %s"
              % (during, len(slots), info["cluster_moved"], info["cluster_asks"]))


def test_a_slot_left_half_migrated_answers_an_error_not_a_hang():
    """A migration abandoned half-way: an acquire (one key) follows ASK to the
    importing node; a release (two keys: the lock and its channel, which never exists)
    meets ASK, then TRYAGAIN there, for ever. It is retried for retry_timeout_ms from
    its first refusal, however ASK and TRYAGAIN alternate, then answered."""
    with Setup({"redis": {"retry_timeout_ms": 1000}}) as s:
        src, dst = s.cluster.masters()[0], s.cluster.masters()[1]
        name = s.cluster.names_on_each_master("stuck")[src][0]
        slot = s.cluster.keyslot(name)
        s.cluster.move_slot_begin(slot, dst)
        c = s.client("stuck")
        assert_eq(c.call("LOCK", name, 1), "OK", "LOCK in the migrating slot (ASK)")
        importing = s.node(dst)
        assert_eq(importing.call("ASKING"), "OK", "ASKING")
        assert_eq(importing.call("HGETALL", name), ["stuck:1", "1"], "taken on the importing node")
        t0 = time.monotonic()
        r = c.call("UNLOCK", name, 1, timeout=10.0)
        waited = time.monotonic() - t0
        assert is_error(r) and "TRYAGAIN" in r.line, "UNLOCK in a stuck slot: %r" % (r,)
        assert 0.9 < waited < 5.0, "answered after %.1f s (retry_timeout_ms 1000)" % waited
        assert int(s.info()["cluster_retries"]) > 2, "the call was held back and retried"
        s.cluster.move_slot_finish(slot, dst)
        assert_eq(c.call("UNLOCK", name, 1), 1, "UNLOCK once the slot has moved")
        assert_eq(s.node(dst).call("EXISTS", name), 0, "released on the new owner")


def test_a_waiter_on_a_moved_slot_is_woken_on_its_new_master():
    """Sharded pub/sub: when a slot moves, Redis unsubscribes its channels (an unasked
    sunsubscribe); rlockd subscribes them again on the new master and the waiter is
    woken there by the release."""
    with Setup() as s:
        src, dst = s.cluster.masters()[0], s.cluster.masters()[1]
        name = s.cluster.names_on_each_master("moving")[src][0]
        holder, waiter = s.client("holder"), s.client("waiter")
        assert_eq(holder.call("LOCK", name, 1, "LEASE", 60000), "OK", "LOCK with a 60 s lease")
        waiter.send("LOCK", name, 1)
        wait_info(s.rlockd, "waiting_clients", 1, what="the waiter queued")
        wait_until(lambda: s.node(src).call("PUBSUB", "SHARDNUMSUB", channel_for(name))[1] == 1,
                   5.0, what="the channel subscribed on the old master")
        s.cluster.move_slot(s.cluster.keyslot(name), dst)
        wait_until(lambda: s.node(dst).call("PUBSUB", "SHARDNUMSUB", channel_for(name))[1] == 1,
                   10.0, what="the channel subscribed again on the new master")
        waiter.expect_no_reply(0.2, "LOCK while the lock is held")
        t0 = time.monotonic()
        assert_eq(holder.call("UNLOCK", name, 1), 1, "UNLOCK on the new master")
        assert_eq(waiter.read_reply(timeout=3.0), "OK", "the waiter woken on the new master")
        assert time.monotonic() - t0 < 3.0, "woken by the message (the lease was 60 s)"
        assert_eq(s.node(dst).call("HGETALL", name), ["waiter:1", "1"], "held on the new master")


def test_reserved_names_and_records_rlockd_did_not_write_are_refused_on_a_cluster():
    with Setup({"lock": {"name_prefix": "app:"}}) as s:
        a = s.client("router")
        assert_eq(repr(a.call("LOCK", "rlockd_session:{victim}", 1)),
                  "-ERR reserved name: app:rlockd_session:{victim} is rlockd's record of the session of "
                  "client-id victim", "LOCK of a session record")
        assert_eq(repr(a.call("ACQUIRE", "{sem}:timeout")),
                  "-ERR reserved name: app:{sem}:timeout is rlockd's record of the expirable permits of "
                  "semaphore app:{sem}", "ACQUIRE of an expirable semaphore's permits")
        owners = "rlockd_permits:{app:sem}"
        node = s.node(s.cluster.master_for(owners))
        node.call("HSET", owners, "attacker:1", "1")
        node.call("PEXPIRE", owners, 60000)
        assert_eq(a.call("SETPERMITS", "sem", 1), 1, "SETPERMITS")
        assert_eq(repr(a.call("ACQUIRE", "sem")),
                  "-WRONGTYPE not an rlockd record: %s is a hash with a TTL" % owners, "ACQUIRE")
        record = "app:rlockd_session:{victim}"
        s.node(s.cluster.master_for(record)).call("SET", record, "x")
        victim = RespClient(s.rlockd.port, timeout=5.0, label="victim")
        s.clients.append(victim)
        assert_eq(is_error(victim.call("CLIENTID", "victim", "SECRET", "victim-secret-0123456789"), "WRONGTYPE"),
                  True, "CLIENTID over a string")
        assert_eq(s.rlockd.log_text().count("not an rlockd record: %s" % record), 1, "logged once")
        assert_eq(info_int(s.rlockd, "cluster_moved"), 0, "no MOVED")
