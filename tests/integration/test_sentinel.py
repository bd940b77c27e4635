"""
test_sentinel.py - rlockd in [redis] mode = sentinel, against a real Sentinel setup:
a master, one replica and three sentinels (redis-server --sentinel), quorum 2, all on
free loopback ports, started and stopped by pid by the test.

Each test starts its own setup (failovers change it for good). What is proved:
discovery through any one sentinel; a failover keeps replicated holds (and renews
them on the new master), lets a waiter go at once and serves new LOCKs; so it does
for a hold of every lock kind, each checked with its own script, and for
semaphore permits; a hold the
replica never got is reported lost to its holder; sync_replicas sends WAIT, and a
grant no replica acknowledges is undone and answered -NOREPLICAS; the master named
again after a doubt (a scripted sentinel orders the events) is no second switch.
"""

import contextlib
import os
import socket
import threading
import time

from harness import (_NEED_MORE, HOST, RedisServer, Rlockd, RespClient, TempDir, _parse, assert_eq,
                     assert_error, encode_command, wait_info,
                     wait_until)
from topology import MASTER_NAME, SentinelSetup

class Setup:
    """A SentinelSetup and an rlockd in sentinel mode over it, as a context manager."""

    def __init__(self, rlockd_config=None, sentinel_password=None, tls=None):
        """tls: a certs.RedisTls the nodes and sentinels speak (test_tls_redis.py)."""
        self.extra = rlockd_config
        self.sentinel_password = sentinel_password
        self.tls = tls
        self.clients = []

    def __enter__(self):
        self.tmp = TempDir()
        workdir = self.tmp.__enter__()
        self.sentinels = SentinelSetup(workdir, self.sentinel_password, tls=self.tls)
        try:
            self.sentinels.start()
            # The port is not used in sentinel mode.
            self.rlockd = Rlockd(workdir, self.sentinels.master_port(), self.sentinels.rlockd_config(self.extra))
            self.rlockd.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, *exc):
        for c in self.clients:
            c.close()
        if getattr(self, "rlockd", None) is not None:
            if exc_type is not None:   # what rlockd saw of the sentinels, for the failure's report
                print("    rlockd log (tail):\n" + "\n".join("      " + line for line in
                                                             self.rlockd.log_tail(40).splitlines()))
            self.rlockd.stop()
        self.sentinels.close()
        self.tmp.__exit__(None, None, None)
        return False

    def client(self, client_id, timeout=5.0):
        c = RespClient(self.rlockd.port, timeout=timeout, label=client_id)
        self.clients.append(c)
        assert_eq(c.call("CLIENTID", client_id), "OK", "CLIENTID %s" % client_id)
        return c

    def master(self):
        """A direct connection to the master the sentinels name now."""
        c = self.sentinels.server_on(self.sentinels.master_port()).client()
        self.clients.append(c)
        return c

    def info(self):
        return self.rlockd.info()


def test_discovers_the_master_through_any_one_sentinel():
    with Setup() as s:
        master = s.sentinels.master_port()
        assert_eq(s.info()["redis_master"], "%s:%d" % (HOST, master), "INFO redis_master")
        assert_eq(s.info()["redis_mode"], "sentinel", "INFO redis_mode")
        assert_eq(s.info()["redis_topology"], "ok", "INFO redis_topology")
        s.rlockd.stop()
        s.sentinels.stop_sentinel(0)
        s.sentinels.stop_sentinel(1)
        s.rlockd.start()   # only the third sentinel answers
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, master), timeout=5.0)
        a = s.client("only-third")
        assert_eq(a.call("LOCK", "disc", 1), "OK", "LOCK through the master the third sentinel named")
        assert_eq(s.master().call("HGETALL", "disc"), ["only-third:1", "1"], "the lock on the master")


def test_sentinels_that_require_a_password_are_asked_with_it():
    password = "sentinel-pw-%d" % time.monotonic_ns()
    with Setup(sentinel_password=password) as s:
        assert_eq(s.info()["redis_master"], "%s:%d" % (HOST, s.sentinels.master_port()), "INFO redis_master")
        assert_eq(s.client("pw").call("LOCK", "pw", 1), "OK", "LOCK")
        assert password not in s.rlockd.log_text(), "the sentinel password appears in rlockd's log"


def test_failover_keeps_replicated_holds_wakes_waiters_and_serves_new_locks():
    with Setup({"lock": {"watchdog_timeout_ms": 3000}}) as s:
        holder, waiter = s.client("holder"), s.client("waiter")
        assert_eq(holder.call("LOCK", "kept", 1), "OK", "LOCK (watchdog)")
        assert_eq(holder.call("LOCK", "leased", 1, "LEASE", 60000), "OK", "LOCK with a lease")
        waiter.send("LOCK", "kept", 2)
        wait_info(s.rlockd, "blocked_clients", "1", timeout=3.0)
        old = s.sentinels.master_port()
        on_old = s.sentinels.server_on(old).client()
        s.clients.append(on_old)
        wait_until(lambda: on_old.call("WAIT", 1, 100) == 1, 5.0, what="the replica to have the holds")
        new = s.sentinels.failover()
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, new), timeout=5.0)
        wait_info(s.rlockd, "failover_locks_kept", "2", timeout=5.0)
        assert_eq(s.info()["failover_locks_lost"], "0", "INFO failover_locks_lost")
        assert_eq(s.info()["redis_master_changes"], "1", "INFO redis_master_changes")
        s.rlockd.wait_log(r"redis master .* -> .*: 2 lock\(s\) kept, 0 lost", timeout=3.0)
        on_new = s.sentinels.server_on(new).client()
        s.clients.append(on_new)
        # Cut the TTL to 2 s on the new master: only a renewal (every second)
        # there can take it above 2 s again.
        assert_eq(on_new.call("PEXPIRE", "kept", 2000), 1, "PEXPIRE on the new master")
        wait_until(lambda: on_new.call("PTTL", "kept") > 2000, 5.0,
                   what="the watchdog renewing the hold on the new master")
        t0 = time.monotonic()
        assert_eq(holder.call("UNLOCK", "kept", 1), 1, "UNLOCK on the new master")
        assert_eq(waiter.read_reply(3.0), "OK", "the waiter granted")
        assert time.monotonic() - t0 < 2.0, "the waiter waited for a TTL"
        fresh = s.client("fresh")
        assert_eq(fresh.call("LOCK", "new-after", 1), "OK", "a new LOCK after the failover")
        assert_eq(holder.call("UNLOCK", "leased", 1), 1, "the leased hold released on the new master")


def test_failover_keeps_a_hold_of_every_kind_and_renews_it_on_the_new_master():
    """Each kind's hold is checked on the new master with its own script (a read hold
    by its field in the read-write hash), kept, and renewed there (a read hold's
    timeout key too); a FAIR waiter queued before the failover is served after it."""
    holds = [("f", 1, "FAIR"), ("rw", 1, "READ"), ("rw", 2, "READ"), ("w", 1, "WRITE"),
             ("t", 1, "FENCED")]
    with Setup({"lock": {"watchdog_timeout_ms": 3000}}) as s:
        holder, waiter = s.client("holder"), s.client("waiter")
        for name, tid, kind in holds:
            got = holder.call("LOCK", name, tid, kind)
            assert got == "OK" or (kind == "FENCED" and got == 1), "%s LOCK %s: %r" % (kind, name, got)
        waiter.send("LOCK", "f", 9, "FAIR")
        wait_info(s.rlockd, "blocked_clients", "1", timeout=3.0)
        on_old = s.master()
        wait_until(lambda: on_old.call("WAIT", 1, 100) == 1, 5.0, what="the replica to have the holds")
        new = s.sentinels.failover()
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, new), timeout=5.0)
        wait_info(s.rlockd, "failover_locks_kept", str(len(holds)), timeout=5.0)
        assert_eq(s.info()["failover_locks_lost"], "0", "INFO failover_locks_lost")
        on_new = s.master()
        time.sleep(2.5)   # longer than a lease's last third: only renewals keep them
        for key in ("f", "rw", "w", "{rw}:holder:1:rwlock_timeout:1", "{rw}:holder:2:rwlock_timeout:1"):
            assert on_new.call("PTTL", key) > 2000, "%s renewed on the new master" % key
        assert_eq(holder.call("TOKEN", "t"), 1, "the token counter replicated")
        assert_eq(holder.call("LOCK", "t", 1, "FENCED"), 2, "a reentrant fenced acquire on the new master")
        assert_eq(holder.call("UNLOCK", "f", 1, "FAIR"), 1, "FAIR UNLOCK on the new master")
        assert_eq(waiter.read_reply(3.0), "OK", "the fair waiter served after the failover")
        for name, tid, kind in holds[1:] + [("t", 1, "FENCED")]:
            assert_eq(holder.call("UNLOCK", name, tid, kind) in (0, 1), True, "%s UNLOCK %s" % (kind, name))
        for name in ("rw", "w", "t"):
            assert_eq(on_new.call("EXISTS", name), 0, "%s released" % name)


def test_failover_keeps_semaphore_permits_and_renews_them_on_the_new_master():
    """Permits are holds too: each looked for on the new master (the session's plain
    permits by its record, an expirable permit by its id), kept, renewed there, and given
    back when released."""
    with Setup({"lock": {"watchdog_timeout_ms": 3000}}) as s:
        holder = s.client("holder")
        assert_eq(holder.call("SETPERMITS", "sem", 3), 1, "SETPERMITS")
        assert_eq(holder.call("ACQUIRE", "sem", "PERMITS", 2), "OK", "ACQUIRE 2")
        assert_eq(holder.call("SETPERMITS", "xsem", 1), 1, "SETPERMITS")
        pid = holder.call("ACQUIRE", "xsem", "EXPIRABLE")
        on_old = s.master()
        wait_until(lambda: on_old.call("WAIT", 1, 100) == 1, 5.0, what="the replica to have the permits")
        new = s.sentinels.failover()
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, new), timeout=5.0)
        wait_info(s.rlockd, "failover_locks_kept", "2", timeout=5.0)
        assert_eq(s.info()["failover_locks_lost"], "0", "INFO failover_locks_lost")
        on_new = s.master()
        time.sleep(2.5)   # longer than a lease's last third: only renewals keep them
        now = time.time() * 1000
        owner = float(on_new.call("ZSCORE", "rlockd_permits_deadline:{sem}", "holder:0"))
        assert owner - now > 2000, "the session's deadline renewed on the new master"
        member = bytes.fromhex(pid)
        assert float(on_new.call("ZSCORE", "{xsem}:timeout", member)) - now > 2000, \
            "the expirable permit renewed on the new master"
        assert_eq(holder.call("RELEASE", "sem", "PERMITS", 2), 1, "RELEASE on the new master")
        assert_eq(holder.call("RELEASE", "xsem", "ID", pid), 1, "RELEASE ID on the new master")
        assert_eq(holder.call("PERMITS", "sem"), 3, "every permit back")
        assert_eq(holder.call("PERMITS", "xsem"), 1, "the expirable permit back")


def test_a_hold_the_replica_never_got_is_reported_lost():
    with Setup({"lock": {"sync_replicas": 0}}) as s:
        holder, other = s.client("holder"), s.client("other")
        old = s.sentinels.master_port()
        replica = next(srv for srv in s.sentinels.servers if srv.port != old)
        replica_admin = replica.client()
        s.clients.append(replica_admin)
        # The replica stops taking the master's stream (it dials a port nobody listens
        # on), so the next write never reaches it; then it is promoted by hand and the
        # sentinels told to follow it, as after a failover that lost that write.
        assert_eq(replica_admin.call("REPLICAOF", HOST, 1), "OK", "replica pointed away")
        assert_eq(holder.call("LOCK", "unsynced", 1, "LEASE", 60000), "OK", "LOCK the replica never sees")
        assert_eq(replica_admin.call("EXISTS", "unsynced"), 0, "the replica has no copy")
        assert_eq(replica_admin.call("REPLICAOF", "NO", "ONE"), "OK", "replica promoted by hand")
        for i in range(3):   # the sentinels follow the promoted node
            s.sentinels.ask(i, "SENTINEL", "REMOVE", MASTER_NAME)
            assert_eq(s.sentinels.ask(i, "SENTINEL", "MONITOR", MASTER_NAME, HOST, replica.port, 2), "OK",
                      "SENTINEL MONITOR the new master")
        # and the old master is demoted, as the sentinels do when it comes back: no event
        # was published, so rlockd finds out from ROLE and its poll of the sentinels
        old_master = s.sentinels.server_on(old).client()
        s.clients.append(old_master)
        assert_eq(old_master.call("REPLICAOF", HOST, replica.port), "OK", "old master demoted")
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, replica.port), timeout=5.0)
        wait_info(s.rlockd, "failover_locks_lost", "1", timeout=5.0)
        assert_error(holder.call("UNLOCK", "unsynced", 1), "LOCKLOST", what="UNLOCK of the lost hold")
        assert_eq(other.call("TRYLOCK", "unsynced", 2), 1, "another client takes it")
        wait_info(s.rlockd, "redis_topology", "ok", timeout=5.0)


def test_sync_replicas_sends_wait_and_undoes_a_grant_no_replica_has():
    with Setup({"lock": {"sync_replicas": 1, "sync_timeout_ms": 500}}) as s:
        a = s.client("sync")
        master_port = s.sentinels.master_port()
        master = s.sentinels.server_on(master_port).client()
        s.clients.append(master)
        assert_eq(a.call("LOCK", "synced", 1), "OK", "LOCK with the replica up")
        stats = parse_info_text(master.call("INFO", "commandstats"))
        assert "cmdstat_wait" in stats, "no WAIT reached the master: %r" % sorted(stats)
        assert int(s.info()["sync_waits"]) >= 1, "INFO sync_waits"
        replica = next(srv for srv in s.sentinels.servers if srv.port != master_port)
        # counted from here: on a loaded machine the first LOCK's WAIT may
        # have run out too, and been undone and tried again
        before = s.info()
        with replica.paused():
            assert_error(a.call("LOCK", "unsynced", 1), "NOREPLICAS", what="LOCK with the replica stopped")
            wait_until(lambda: master.call("EXISTS", "unsynced") == 0, 2.0, what="no key left on the master")
        info = s.info()
        assert_eq(int(info["sync_rollbacks"]) - int(before["sync_rollbacks"]), 3,
                  "INFO sync_rollbacks: each of the 3 attempts undone")
        assert_eq(int(info["noreplicas_replies"]) - int(before["noreplicas_replies"]), 1,
                  "INFO noreplicas_replies")


def parse_info_text(text):
    return {line.split(":", 1)[0]: line.split(":", 1)[1]
            for line in text.splitlines() if ":" in line and not line.startswith("#")}


def test_a_killed_master_is_replaced_and_rlockd_serves_from_the_new_one():
    """SIGKILL of the master: the sentinels fail over after down-after-milliseconds,
    rlockd follows, and a LOCK sent at the switch succeeds; the time from +switch-master
    to that LOCK's reply is printed."""
    with Setup() as s:
        a = s.client("after-kill", timeout=10.0)
        assert_eq(a.call("LOCK", "before", 1, "LEASE", 60000), "OK", "LOCK before the kill")
        listener = s.sentinels.switch_listener()
        s.clients.append(listener)
        killed = s.sentinels.kill_master()
        t_kill = time.monotonic()
        message = listener.read_reply(20.0)
        t_switch = time.monotonic()
        assert_eq(message[1], "+switch-master", "the sentinels' switch")
        assert_eq(a.call("LOCK", "after", 1), "OK", "LOCK sent at the switch")
        t_lock = time.monotonic()
        print("    kill -> +switch-master %.2f s; +switch-master -> LOCK answered %.3f s"
              % (t_switch - t_kill, t_lock - t_switch))
        new = s.sentinels.master_port()
        assert new != killed.port
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, new), timeout=5.0)
        assert_eq(s.master().call("HGETALL", "after"), ["after-kill:1", "1"], "the lock on the new master")


# A replica's first sync starts at once, not after Redis 7's default 5 s
# wait for more replicas (repl-diskless-sync-delay): the tests below wait
# for the replica to have a hold (asked of the replica itself: WAIT on a
# connection that wrote nothing counts a replica that has nothing yet),
# which would otherwise race that delay under load. Their fake sentinel's
# +switch-master waits for rlockd's subscription: a poll does not move a
# master that still answers.
NO_SYNC_DELAY = ("--repl-diskless-sync-delay", "0")

class FakeSentinel:
    """A scripted sentinel on a loopback port: SENTINEL get-master-addr-by-name is answered
    with self.named, and switch() sends a +switch-master message to every subscriber, so a
    test decides what rlockd hears and in which order (real sentinels race)."""

    def __init__(self, named):
        self.named = named
        self.asked = 0       # SENTINEL queries answered
        self.subscribers = []
        self.conns = []
        self.listener = socket.create_server((HOST, 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        while True:
            try:
                data = conn.recv(4096)
            except OSError:
                return
            if not data:
                return
            buf += data
            while True:
                parsed = _parse(buf, 0)
                if parsed is _NEED_MORE:
                    break
                cmd, end = parsed
                buf = buf[end:]
                conn.sendall(self._answer(conn, [str(a).upper() for a in cmd]))

    def _answer(self, conn, cmd):
        if cmd[0] == "SENTINEL":
            self.asked += 1
            return encode_command(HOST, self.named)
        if cmd[0] == "SUBSCRIBE":
            self.subscribers.append(conn)
            return b"*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n"
        return b"+PONG\r\n" if cmd[0] == "PING" else b"+OK\r\n"

    def switch(self, old, new):
        text = "%s %s %d %s %d" % (MASTER_NAME, HOST, old, HOST, new)
        for conn in self.subscribers:
            conn.sendall(encode_command("message", "+switch-master", text))

    def close(self):
        self.listener.close()
        for conn in self.conns:
            conn.close()


@contextlib.contextmanager
def _pair_behind_a_fake_sentinel(poll_ms):
    """A master and its replica (which has synced), a FakeSentinel naming the
    master, and rlockd on it with a holder of "h" (LEASE 60 s) that the
    replica has too, subscribed to the fake's events. Yields (master,
    replica, on_master, on_replica, fake, rlockd, holder); stops them all."""
    with TempDir() as workdir:
        master = RedisServer(os.path.join(workdir, "master"), args=NO_SYNC_DELAY)
        replica = RedisServer(os.path.join(workdir, "replica"), args=NO_SYNC_DELAY)
        fake = None
        rlockd = None
        try:
            for d in ("master", "replica"):
                os.mkdir(os.path.join(workdir, d))
            master.start()
            replica.start()
            on_master, on_replica = master.client(), replica.client()
            assert_eq(on_replica.call("REPLICAOF", HOST, master.port), "OK", "REPLICAOF")
            fake = FakeSentinel(master.port)
            rlockd = Rlockd(workdir, master.port, {"redis": {
                "mode": "sentinel", "master_name": MASTER_NAME,
                "sentinels": "%s:%d" % (HOST, fake.port), "sentinel_poll_ms": poll_ms}})
            rlockd.start()
            wait_info(rlockd, "redis_master", "%s:%d" % (HOST, master.port), timeout=5.0)
            holder = RespClient(rlockd.port, label="holder")
            assert_eq(holder.call("LOCK", "h", 1, "LEASE", 60000), "OK", "LOCK")
            wait_until(lambda: on_replica.call("EXISTS", "h") == 1, 5.0, what="the replica to have the hold")
            wait_until(lambda: fake.subscribers, 5.0, what="rlockd subscribed to the sentinel's events")
            yield master, replica, on_master, on_replica, fake, rlockd, holder
            holder.close()
            on_master.close()
            on_replica.close()
        finally:
            if rlockd is not None:
                rlockd.stop()
            if fake is not None:
                fake.close()
            replica.stop()
            master.stop()


def test_the_master_named_again_after_a_doubt_is_no_second_switch():
    """Every sentinel announces a switch, and a poll after a doubt names the master again:
    only a new address is a switch. Here an event names the old master, now a replica
    (ROLE refuses it), and the poll that follows names the current one: its holds are not
    re-checked a second time, nor a second master change counted."""
    with _pair_behind_a_fake_sentinel(500) as (old, new, on_old, on_new, fake, rlockd, holder):
        assert_eq(on_new.call("REPLICAOF", "NO", "ONE"), "OK", "the replica promoted")
        assert_eq(on_old.call("REPLICAOF", HOST, new.port), "OK", "the old master demoted")
        fake.named = new.port
        fake.switch(old.port, new.port)
        wait_info(rlockd, "failover_locks_kept", "1", timeout=5.0)
        fake.switch(new.port, old.port)   # the poll that follows names the current master
        rlockd.wait_log("named %s:%d as the master, but it is not one" % (HOST, old.port), timeout=5.0)
        wait_info(rlockd, "redis_topology", "ok", timeout=5.0)
        assert_eq(rlockd.info()["redis_master"], "%s:%d" % (HOST, new.port), "INFO redis_master")
        assert_eq(rlockd.info()["redis_master_changes"], "1", "INFO redis_master_changes")
        assert_eq(rlockd.info()["failover_locks_kept"], "1", "INFO failover_locks_kept")


def _kill_all_but_role(me):
    """CLIENT KILL of every connection on me's server but rlockd's ROLE link and me (the
    connection asking): rlockd's pool and subscriber."""
    killed = 0
    for line in me.call("CLIENT", "LIST").splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        if fields.get("cmd") not in ("role", "client|list"):
            killed += me.call("CLIENT", "KILL", "ID", fields["id"])
    return killed


def test_a_stale_sentinel_naming_the_old_master_is_not_followed_back():
    """After a failover from A to B, a sentinel that has not heard of it still names A,
    and A passes ROLE until the sentinels demote it. Its polls come while rlockd's pool
    moves to B, and again while the pool is cut (and kept out: maxclients); ROLE on B
    still answers, so rlockd stays on B: one master change, each hold re-checked once."""
    with _pair_behind_a_fake_sentinel(200) as (a, b, on_a, on_b, fake, rlockd, holder):
        assert_eq(on_b.call("REPLICAOF", "NO", "ONE"), "OK", "B promoted; A not demoted yet")
        fake.switch(a.port, b.port)   # the sentinel that did the failover; fake.named stays A
        wait_info(rlockd, "failover_locks_kept", "1", timeout=5.0)
        wait_info(rlockd, "redis_topology", "ok", timeout=5.0)
        # the polls while the pool moves to B name A
        assert_eq(rlockd.info()["redis_master"], "%s:%d" % (HOST, b.port), "INFO redis_master after the move")
        assert_eq(on_b.call("CONFIG", "SET", "maxclients", "1"), "OK", "no new connections on B")
        assert _kill_all_but_role(on_b) > 0, "rlockd's pool on B found"
        wait_info(rlockd, "redis_connected", "0", timeout=5.0)
        asked = fake.asked
        wait_until(lambda: fake.asked >= asked + 3, 5.0, what="three polls while B is unreachable")
        assert_eq(on_b.call("CONFIG", "SET", "maxclients", "10000"), "OK", "B lets rlockd back")
        wait_info(rlockd, "redis_connected", "1", timeout=5.0)
        assert_eq(rlockd.info()["redis_master"], "%s:%d" % (HOST, b.port), "INFO redis_master")
        assert_eq(rlockd.info()["redis_master_changes"], "1", "INFO redis_master_changes")
        assert_eq(rlockd.info()["failover_locks_kept"], "1", "INFO failover_locks_kept")
        assert_eq(holder.call("UNLOCK", "h", 1), 1, "UNLOCK on B")
