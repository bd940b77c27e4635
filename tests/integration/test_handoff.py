"""Hand-off (issue 15): an UNLOCK that frees a lock passes it to this rlockd's next waiter
with the waiter's acquire right behind the release (one Redis round trip); a LOCK of a lock
held through this rlockd queues without asking Redis. Each keeps the lock's semantics: one owner at a time, FIFO among local
waiters, reentrant counts, LOCKLOST, the unlock message for Java waiters, a fair chance for
waiters elsewhere (max_handoffs_in_a_row), and each client's own reply."""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid

from harness import (ACQUIRE_SCRIPT, RELEASE_SCRIPT, RespClient, assert_eq, assert_error,
                     channel_for, encode_command, wait_until)

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}

# The bound under test in the race tests below. Without it (a very high value) an UNLOCK
# through rlockd always hands the lock to the next local waiter, so while this rlockd's
# clients keep queueing, the lock is never free in Redis: a Java client or another rlockd's
# waiter never wins it and waits forever (starvation). With it, every
# (max_handoffs_in_a_row + 1)th UNLOCK leaves the lock free for all to race for.
MAX_HANDOFFS = 8   # rlockd's default; the race tests run with the default config

JAVA_LEASE_MS = 30000


def own_id(env, c, base):
    """Gives connection c a client-id of its own; returns it."""
    cid = env.name(base)
    assert_eq(c.call("CLIENTID", cid), "OK", "CLIENTID %s" % cid)
    return cid


def hash_of(conn, name):
    flat = conn.call("HGETALL", name)
    assert isinstance(flat, list), "HGETALL %s: %r" % (name, flat)
    return dict(zip(flat[0::2], flat[1::2]))


def info_ints(daemon, *keys):
    info = daemon.info()
    for k in keys:
        assert k in info, "INFO has no field %r (fields: %s)" % (k, sorted(info))
    return {k: int(info[k]) for k in keys}


def granted_one(clients, pending, timeout, what):
    """Waits until one of clients[pending] has a reply; fails if none does, or if more than one
    has."""
    socks = {clients[i].sock: i for i in pending if not clients[i].buf}
    ready = [i for i in pending if clients[i].buf]
    if not ready:
        r, _, _ = select.select(list(socks), [], [], timeout)
        assert r, "%s: no waiter was answered within %.1fs" % (what, timeout)
        ready = [socks[s] for s in r]
    assert len(ready) == 1, "%s: %d waiters answered at once (%r): one owner at a time broken" \
        % (what, len(ready), ready)
    return ready[0]


class HashWatcher(threading.Thread):
    """Reads the lock's hash in Redis as fast as it can, on its own connection, until stop():
    counts the observations with no owner, and keeps every one that is not exactly one owner
    with count 1."""

    def __init__(self, env, name):
        super().__init__(daemon=True)
        self.name = name
        self.conn = env.redis_client(timeout=5.0)
        self.halt = threading.Event()
        self.seen = 0
        self.empty = 0
        self.bad = []
        self.owners = []
        self.error = None

    def run(self):
        try:
            while not self.halt.is_set():
                h = hash_of(self.conn, self.name)
                self.seen += 1
                if not h:
                    self.empty += 1
                elif len(h) != 1 or list(h.values()) != ["1"]:
                    self.bad.append(h)
                elif not self.owners or self.owners[-1] != next(iter(h)):
                    self.owners.append(next(iter(h)))
        except Exception as e:   # noqa: BLE001 - reported by stop()
            self.error = e

    def stop(self):
        self.halt.set()
        self.join(5.0)
        assert not self.is_alive(), "the hash watcher did not stop"
        assert self.error is None, "the hash watcher failed: %r" % (self.error,)
        return self


def queue_waiters(env, name, waiters, daemon=None, tid=1):
    """Sends each waiter's LOCK, each once the one before is queued (a known arrival order)."""
    for i, w in enumerate(waiters):
        w.send("LOCK", name, tid)
        env.wait_waiting(i + 1, daemon=daemon, what="waiter%d's LOCK queued" % i)
    for i, w in enumerate(waiters):
        w.expect_no_reply(0.05, "waiter%d's LOCK while the lock is held" % i)


# ---------------------------------------------------------------- a. FIFO hand-off


def test_unlock_hands_the_lock_to_local_waiters_in_arrival_order_one_owner_at_a_time(env):
    n = env.name("handoff")
    holder = env.client(label="holder")
    waiters = [env.client(label="waiter%d" % i) for i in range(4)]
    fields = ["%s:1" % own_id(env, c, "owner") for c in [holder] + waiters]
    env.wait_waiting(0, what="no waiter left from earlier tests")
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by the holder")
    assert_eq(env.redis_hash(n), {fields[0]: "1"}, "hash while the holder holds")
    queue_waiters(env, n, waiters)
    base = env.info_int("lock_handoffs")
    watcher = HashWatcher(env, n)
    watcher.start()
    try:
        current, pending = holder, list(range(len(waiters)))
        for k in range(len(waiters)):
            # nobody is granted while the current owner has not unlocked
            for j in pending:
                assert not waiters[j].reply_ready(0.03), "waiter%d answered %r before owner %s's UNLOCK" \
                    % (j, waiters[j].read_reply(), fields[k])
            assert_eq(current.call("UNLOCK", n, 1), 1, "UNLOCK by %s" % fields[k])
            i = granted_one(waiters, pending, 2.0, "after UNLOCK #%d" % (k + 1))
            assert_eq(i, k, "waiter granted after UNLOCK #%d (arrival order 0..3)" % (k + 1))
            assert_eq(waiters[i].read_reply(1.0), "OK", "waiter%d's LOCK" % i)
            pending.remove(i)
            assert_eq(env.redis_hash(n), {fields[k + 1]: "1"}, "hash after hand-off #%d" % (k + 1))
            assert_eq(env.info_int("lock_handoffs") - base, k + 1,
                      "lock_handoffs after %d hand-offs" % (k + 1))
            current = waiters[i]
    finally:
        watcher.stop()
    assert not watcher.bad, "the hash had other than one owner with count 1: %r" % watcher.bad[:5]
    assert_eq(watcher.empty, 0, "observations (of %d) with the lock free in Redis during the hand-offs "
              "(each should pass it atomically)" % watcher.seen)
    assert watcher.seen >= 20, "the hash watcher made only %d observations" % watcher.seen
    it = iter(fields)
    assert all(o in it for o in watcher.owners), \
        "owners in the order the watcher saw them %r, not in hand-off order %r" % (watcher.owners, fields)
    assert_eq(current.call("UNLOCK", n, 1), 1, "UNLOCK by the last waiter")
    assert_eq(env.info_int("lock_handoffs") - base, len(waiters),
              "lock_handoffs after an UNLOCK with no waiter")
    assert_eq(env.redis("EXISTS", n), 0, "key after the last UNLOCK")


def test_handoffs_in_a_row_are_bounded_then_one_unlock_goes_alone_and_fifo_holds(env):
    """After max_handoffs_in_a_row (8) hand-offs the 9th UNLOCK is sent alone (not counted);
    the next local waiter still gets the lock, in order, and the 10th hands off again."""
    n = env.name("bound")
    holder = env.client(label="holder")
    waiters = [env.client(label="waiter%d" % i) for i in range(MAX_HANDOFFS + 2)]
    ids = [own_id(env, c, "owner") for c in [holder] + waiters]
    env.wait_waiting(0, what="no waiter left from earlier tests")
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by the holder")
    queue_waiters(env, n, waiters)
    base = env.info_int("lock_handoffs")
    want = [min(k, MAX_HANDOFFS) + (1 if k > MAX_HANDOFFS + 1 else 0) for k in range(1, len(waiters) + 1)]
    current, pending, got = holder, list(range(len(waiters))), []
    for k in range(len(waiters)):
        assert_eq(current.call("UNLOCK", n, 1), 1, "UNLOCK #%d" % (k + 1))
        i = granted_one(waiters, pending, 2.0, "after UNLOCK #%d" % (k + 1))
        assert_eq(i, k, "waiter granted after UNLOCK #%d" % (k + 1))
        assert_eq(waiters[i].read_reply(1.0), "OK", "waiter%d's LOCK" % i)
        pending.remove(i)
        assert_eq(env.redis_hash(n), {"%s:1" % ids[k + 1]: "1"}, "hash after UNLOCK #%d" % (k + 1))
        got.append(env.info_int("lock_handoffs") - base)
        current = waiters[i]
    assert_eq(got, want, "lock_handoffs after each UNLOCK (the %dth goes alone)" % (MAX_HANDOFFS + 1))
    assert_eq(current.call("UNLOCK", n, 1), 1, "last UNLOCK")


# ---------------------------------------------------------------- b. reentrancy


def test_handoff_waits_for_the_holders_last_count(env):
    n = env.name("reentrant")
    holder, waiter = env.client(label="holder"), env.client(label="waiter")
    hid, wid = own_id(env, holder, "holder"), own_id(env, waiter, "waiter")
    assert_eq(holder.call("LOCK", n, 1), "OK", "first LOCK")
    assert_eq(holder.call("LOCK", n, 1), "OK", "reentrant LOCK")
    assert_eq(holder.call("HOLDCOUNT", n, 1), 2, "HOLDCOUNT of the holder")
    waiter.send("LOCK", n, 1)
    env.wait_waiting(1, what="the waiter's LOCK queued")
    base = env.info_int("lock_handoffs")
    assert_eq(holder.call("UNLOCK", n, 1), 0, "first UNLOCK (one count left)")
    waiter.expect_no_reply(0.3, "the waiter's LOCK while the holder has a count left")
    assert_eq(env.redis_hash(n), {"%s:1" % hid: "1"}, "hash after the first UNLOCK")
    assert_eq(env.info_int("lock_handoffs"), base, "lock_handoffs after an UNLOCK that did not free the lock")
    assert_eq(env.info_int("waiting_clients"), 1, "waiting_clients after the first UNLOCK")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "second UNLOCK (the last count)")
    assert_eq(waiter.read_reply(2.0), "OK", "the waiter's LOCK after the last count")
    assert_eq(waiter.call("HOLDCOUNT", n, 1), 1, "HOLDCOUNT of the new owner")
    assert_eq(env.redis_hash(n), {"%s:1" % wid: "1"}, "hash after the hand-off")
    assert_eq(env.info_int("lock_handoffs"), base + 1, "lock_handoffs after the last count")
    assert_eq(holder.call("HOLDCOUNT", n, 1), 0, "HOLDCOUNT of the old holder")
    assert_eq(waiter.call("UNLOCK", n, 1), 1, "UNLOCK by the new owner")


# ---------------------------------------------------------------- c. lock lost


def test_unlock_of_a_lock_deleted_behind_rlockds_back_is_locklost_and_the_waiter_still_gets_it(env):
    n = env.name("lost")
    holder, waiter = env.client(label="holder"), env.client(label="waiter")
    own_id(env, holder, "holder")
    wid = own_id(env, waiter, "waiter")
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by the holder")
    waiter.send("LOCK", n, 1)
    env.wait_waiting(1, what="the waiter's LOCK queued")
    waiter.expect_no_reply(0.1, "the waiter's LOCK while the holder holds")
    assert_eq(env.redis("DEL", n), 1, "DEL of the lock behind rlockd's back")
    t0 = time.monotonic()
    assert_error(holder.call("UNLOCK", n, 1), "LOCKLOST", what="holder's UNLOCK of the deleted lock")
    # a DEL publishes nothing: the waiter may need its timer (the TTL rlockd set: 600 ms)
    assert_eq(waiter.read_reply(3.0), "OK", "the waiter's LOCK after the lock was deleted")
    dt = time.monotonic() - t0
    assert dt < 2.0, "the waiter got the deleted lock %.2fs after the holder's UNLOCK" % dt
    assert_eq(env.redis_hash(n), {"%s:1" % wid: "1"}, "hash once the waiter holds")
    assert_eq(holder.call("HOLDCOUNT", n, 1), 0, "the old holder's HOLDCOUNT")
    assert_eq(waiter.call("UNLOCK", n, 1), 1, "UNLOCK by the waiter")


# ---------------------------------------------------------------- item 2: queued unasked


def test_lock_behind_a_holder_of_this_rlockd_queues_without_asking_redis(env):
    """Neither the first waiter (whose LOCK also subscribes to the lock's channel) nor the
    second sends an acquire while the holder holds. The holder's lock has a 10 s LEASE, so
    no waiter's TTL timer can fire during the test: any acquire seen is an ask."""
    n = env.name("unasked")
    ch = channel_for(n)
    holder, w1, w2 = env.client(label="holder"), env.client(label="waiter1"), env.client(label="waiter2")
    keys = ("lock_attempts", "acquires_queued_unasked")
    assert_eq(holder.call("LOCK", n, 1, "LEASE", 10000), "OK", "LOCK by the holder (LEASE 10 s)")
    before = info_ints(env, *keys)
    w1.send("LOCK", n, 1)
    env.wait_waiting(1, what="the first waiter's LOCK queued")
    wait_until(lambda: env.redis("PUBSUB", "NUMSUB", ch)[1] == 1, 2.0, what="rlockd subscribed to %s" % ch)
    w1.expect_no_reply(0.2, "the first waiter's LOCK")   # time for a confirmation-driven attempt to show
    first = info_ints(env, *keys)
    w2.send("LOCK", n, 1)
    env.wait_waiting(2, what="the second waiter's LOCK queued")
    w2.expect_no_reply(0.2, "the second waiter's LOCK")
    second = info_ints(env, *keys)
    got = [(x["lock_attempts"] - y["lock_attempts"],
            x["acquires_queued_unasked"] - y["acquires_queued_unasked"])
           for x, y in ((first, before), (second, first))]
    assert_eq(got, [(0, 1), (0, 1)],
              "(acquires sent, LOCKs queued unasked) for the first and the second waiter behind a holder "
              "of this rlockd")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "UNLOCK by the holder")
    assert_eq(w1.read_reply(2.0), "OK", "the first waiter, after the UNLOCK")
    w2.expect_no_reply(0.1, "the second waiter while the first holds")
    assert_eq(w1.call("UNLOCK", n, 1), 1, "UNLOCK by the first waiter")
    assert_eq(w2.read_reply(2.0), "OK", "the second waiter, after the first's UNLOCK")
    assert_eq(w2.call("UNLOCK", n, 1), 1, "UNLOCK by the second waiter")


def test_trylock_without_wait_and_a_reentrant_lock_still_ask_redis(env):
    n = env.name("asks")
    holder, waiter, trier = env.client(label="holder"), env.client(label="waiter"), env.client(label="trier")
    hid = own_id(env, holder, "holder")
    keys = ("lock_attempts", "acquires_queued_unasked")
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by the holder")
    waiter.send("LOCK", n, 1)   # queued (and subscribed) first: nothing else asks meanwhile
    env.wait_waiting(1, what="the waiter's LOCK queued")
    waiter.expect_no_reply(0.05, "the waiter's LOCK")
    before = info_ints(env, *keys)
    assert_eq(trier.call("TRYLOCK", n, 1), 0, "TRYLOCK without WAIT by another owner")
    after = info_ints(env, *keys)
    assert after["lock_attempts"] > before["lock_attempts"], \
        "TRYLOCK without WAIT sent no acquire (%r -> %r)" % (before, after)
    assert_eq(after["acquires_queued_unasked"], before["acquires_queued_unasked"],
              "acquires_queued_unasked after a TRYLOCK without WAIT")
    assert_eq(holder.call("LOCK", n, 1), "OK", "reentrant LOCK by the holder")
    reentrant = info_ints(env, *keys)
    assert reentrant["lock_attempts"] > after["lock_attempts"], \
        "the reentrant LOCK sent no acquire (%r -> %r)" % (after, reentrant)
    assert_eq(reentrant["acquires_queued_unasked"], after["acquires_queued_unasked"],
              "acquires_queued_unasked after a reentrant LOCK")
    assert_eq(env.redis_hash(n), {"%s:1" % hid: "2"}, "hash after the reentrant LOCK (count in Redis)")
    assert_eq(holder.call("UNLOCK", n, 1), 0, "UNLOCK (count 1 left)")
    waiter.expect_no_reply(0.1, "the queued LOCK while the holder has a count left")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "last UNLOCK")
    assert_eq(waiter.read_reply(2.0), "OK", "the queued LOCK, after the last UNLOCK")


def test_lock_of_a_lock_held_by_a_java_client_asks_redis(env):
    n = env.name("javaheld")
    java = "%s:77" % uuid.uuid4()
    assert_eq(env.redis("EVAL", ACQUIRE_SCRIPT, 1, n, JAVA_LEASE_MS, java), None, "Java acquire")
    w = env.client(label="waiter")
    before = info_ints(env, "lock_attempts", "acquires_queued_unasked")
    w.send("LOCK", n, 1)
    env.wait_waiting(1, what="the LOCK queued behind Java's lock")
    after = info_ints(env, "lock_attempts", "acquires_queued_unasked")
    assert after["lock_attempts"] > before["lock_attempts"], "LOCK of a Java-held lock sent no acquire"
    assert_eq(after["acquires_queued_unasked"], before["acquires_queued_unasked"],
              "acquires_queued_unasked for a lock not held through rlockd")
    assert_eq(env.redis("EVAL", RELEASE_SCRIPT, 2, n, channel_for(n), 0, JAVA_LEASE_MS, java), 1,
              "Java release")
    assert_eq(w.read_reply(2.0), "OK", "the rlockd LOCK after Java's release")


# ---------------------------------------------------------------- d. Java-style waiters


def test_every_handoff_unlock_publishes_redissons_unlock_message(env):
    n = env.name("pub")
    ch = channel_for(n)
    sub = env.redis_client()
    assert_eq(sub.call("SUBSCRIBE", ch), ["subscribe", ch, 1], "SUBSCRIBE (a Java waiter's)")
    holder = env.client(label="holder")
    waiters = [env.client(label="waiter%d" % i) for i in range(3)]
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by the holder")
    queue_waiters(env, n, waiters)
    base = env.info_int("lock_handoffs")
    current = holder
    for k, w in enumerate(waiters + [None]):
        assert not sub.reply_ready(0.02), "a message before UNLOCK #%d: %r" % (k + 1, sub.read_reply())
        assert_eq(current.call("UNLOCK", n, 1), 1, "UNLOCK #%d" % (k + 1))
        assert_eq(sub.read_reply(1.0), ["message", ch, "0"],
                  "Redisson's unlock message for UNLOCK #%d" % (k + 1))
        if w is not None:
            assert_eq(w.read_reply(1.0), "OK", "waiter%d's LOCK" % k)
            current = w
    assert_eq(env.info_int("lock_handoffs") - base, len(waiters), "hand-offs among those UNLOCKs")
    assert not sub.reply_ready(0.1), "an extra message: %r" % (sub.read_reply(),)


class Contender(threading.Thread):
    """Runs body() on a thread; keeps its exception."""

    def __init__(self, body):
        super().__init__(daemon=True)
        self.body = body
        self.error = None

    def run(self):
        try:
            self.body()
        except Exception as e:   # noqa: BLE001 - reported by the test
            self.error = e


def rlockd_looper(conn, redis_conn, name, inside, halt, grants, errors):
    """Holds the lock as much as it can: LOCK; then, until halt, check it is alone inside the
    lock (a counter in Redis) and send UNLOCK with the next LOCK right behind it in one write,
    so that it is queued again at once and rlockd always has a waiter to hand the lock to;
    a last UNLOCK at halt."""
    def inside_alone():
        if redis_conn.call("INCR", inside) != 1:
            errors.append("%s: someone else inside the lock" % conn.label)
        grants.append(conn.label)
        redis_conn.call("DECR", inside)

    def body():
        r = conn.call("LOCK", name, 1, timeout=10.0)
        if r != "OK":
            errors.append("%s: LOCK replied %r" % (conn.label, r))
            return
        while True:
            inside_alone()
            if halt.is_set():
                break
            conn.send_raw(encode_command("UNLOCK", name, 1) + encode_command("LOCK", name, 1))
            r = conn.read_reply(10.0), conn.read_reply(10.0)
            if r != (1, "OK"):
                errors.append("%s: UNLOCK + LOCK replied %r" % (conn.label, r))
                return
        r = conn.call("UNLOCK", name, 1, timeout=10.0)
        if r != 1:
            errors.append("%s: UNLOCK replied %r" % (conn.label, r))
    return Contender(body)


def stop_all(halt, threads, timeout=15.0):
    halt.set()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    stuck = [t for t in threads if t.is_alive()]
    assert not stuck, "%d contender threads still running %.0fs after stop" % (len(stuck), timeout)
    errs = [repr(t.error) for t in threads if t.error is not None]
    assert not errs, "contender threads failed: %s" % errs[:3]


def java_client(redis_port, name, inside, owner, wins_wanted, budget):
    """A Java client's RLock.lock() loop, in a process of its own (as a JVM would be): Redisson's
    acquire script; refused, it waits for the unlock message (its own SUBSCRIBE) or 2 ms and
    tries again. Each time it wins it checks for 10 ms that it is alone (a counter in Redis) and
    that its field is the hash's only one, then runs Redisson's release script. Stops after
    wins_wanted wins or budget seconds; returns what it saw."""
    ch = channel_for(name)
    jc, jsub = RespClient(redis_port, timeout=5.0), RespClient(redis_port, timeout=5.0)
    assert_eq(jsub.call("SUBSCRIBE", ch), ["subscribe", ch, 1], "the Java client's SUBSCRIBE")
    wins, tries, overlaps = 0, 0, []
    t0 = time.monotonic()
    while wins < wins_wanted and time.monotonic() - t0 < budget:
        while jsub.reply_ready(0):
            jsub.read_reply()
        tries += 1
        if jc.call("EVAL", ACQUIRE_SCRIPT, 1, name, JAVA_LEASE_MS, owner) is not None:   # its PTTL
            jsub.reply_ready(0.002)
            continue
        wins += 1
        if jc.call("INCR", inside) != 1:
            overlaps.append("an rlockd client inside the lock while Java holds it")
        for _ in range(5):
            h = hash_of(jc, name)
            if h != {owner: "1"}:
                overlaps.append("hash while Java holds it: %r" % h)
            time.sleep(0.002)
        jc.call("DECR", inside)
        r = jc.call("EVAL", RELEASE_SCRIPT, 2, name, ch, 0, JAVA_LEASE_MS, owner)
        if r != 1:
            overlaps.append("Java's release script replied %r" % (r,))
        time.sleep(0.01)   # the rlockd clients take it again
    return {"wins": wins, "tries": tries, "overlaps": overlaps, "elapsed": time.monotonic() - t0}


def test_java_client_still_wins_the_lock_from_busy_rlockd_clients(env):
    """Redisson's non-fair RLock lets any waiter win a free lock: with 4 rlockd clients
    holding it as much as they can (UNLOCK and the next LOCK in one write), a Java client
    (java_client, in its own process) wins it again and again (5 times; within a second or so
    here, but the budget is a timeout that only a starved client uses up: 5 s was too short
    beside busy processes), thanks to max_handoffs_in_a_row; while it holds, its field is the
    hash's only one and no rlockd client is inside."""
    n = env.name("javarace")
    inside = n + ":inside"
    java = "%s:1" % uuid.uuid4()
    wins_wanted, budget = 5, 30.0
    halt, grants, errors = threading.Event(), [], []
    loopers = []
    for i in range(4):
        c = env.client(timeout=10.0, label="rlockd-client%d" % i)
        own_id(env, c, "loop")
        loopers.append(rlockd_looper(c, env.redis_client(timeout=10.0), n, inside, halt, grants, errors))
    for t in loopers:
        t.start()
    try:
        wait_until(lambda: len(grants) >= 50, 20.0, what="the rlockd clients up to speed")
        base = env.info_int("lock_handoffs")
        here = os.path.dirname(os.path.abspath(__file__))
        code = ("import json, sys; sys.path.insert(0, %r); import test_handoff as t; "
                "print(json.dumps(t.java_client(*json.loads(sys.argv[1]))))" % here)
        args = json.dumps([env.redis_port, n, inside, java, wins_wanted, budget])
        p = subprocess.run([sys.executable, "-B", "-c", code, args], capture_output=True, text=True,
                           timeout=budget + 15)
        assert p.returncode == 0, "the Java client failed (%d): %s" % (p.returncode, p.stderr[-1500:])
        seen = json.loads(p.stdout.strip().splitlines()[-1])
        handoffs = env.info_int("lock_handoffs") - base
    finally:
        stop_all(halt, loopers)
    assert not errors, "%d problems, first: %s" % (len(errors), errors[:3])
    assert not seen["overlaps"], "while Java held the lock: %r" % seen["overlaps"][:3]
    assert seen["wins"] >= wins_wanted, (
        "the Java client won the lock %d times in %.1fs (%d tries; the rlockd clients got it %d times, "
        "%d hand-offs): local hand-offs starve waiters elsewhere"
        % (seen["wins"], seen["elapsed"], seen["tries"], len(grants), handoffs))
    assert handoffs > 0, "no hand-off happened: the race proved nothing"
    assert_eq(env.redis("EXISTS", n), 0, "lock left behind")


# ---------------------------------------------------------------- e. two daemons


def test_waiter_on_another_rlockd_gets_the_lock_while_this_one_hands_off_locally(env):
    """Three clients of daemon A re-lock as fast as they can (A hands the lock off among them);
    a client of daemon B on the same Redis, looping LOCK/UNLOCK too, still wins it again and
    again (10 times; within a second or so here, but the budget is a timeout that only a
    starved client uses up), thanks to max_handoffs_in_a_row; one owner at a time."""
    other = env.second_rlockd()
    n = env.name("hosts")
    inside = n + ":inside"
    wins_wanted, budget = 10, 30.0
    halt, grants, errors = threading.Event(), [], []
    loopers = []
    for i in range(3):
        c = env.client(timeout=10.0, label="daemonA-client%d" % i)
        own_id(env, c, "a")
        loopers.append(rlockd_looper(c, env.redis_client(timeout=10.0), n, inside, halt, grants, errors))
    b = env.client_of(other, timeout=10.0, label="daemonB-client")
    bid = own_id(env, b, "b")
    br = env.redis_client()
    for t in loopers:
        t.start()
    try:
        wait_until(lambda: len(grants) >= 50, 20.0, what="daemon A's clients up to speed")
        base = env.info_int("lock_handoffs")
        t0 = time.monotonic()
        deadline = t0 + budget
        wins = 0
        while wins < wins_wanted:
            b.send("LOCK", n, 1)
            assert b.reply_ready(max(0.0, deadline - time.monotonic())), (
                "daemon B's client won the lock %d times in %.1fs while daemon A's clients got it %d times: "
                "A's local hand-offs starve B" % (wins, budget, len(grants)))
            assert_eq(b.read_reply(), "OK", "daemon B's LOCK")
            wins += 1
            assert_eq(br.call("INCR", inside), 1, "daemon B's client alone inside the lock")
            assert_eq(hash_of(br, n), {"%s:1" % bid: "1"}, "hash while daemon B's client holds")
            assert_eq(br.call("DECR", inside), 0, "inside counter")
            assert_eq(b.call("UNLOCK", n, 1), 1, "daemon B's UNLOCK")
        assert env.info_int("lock_handoffs") > base, "daemon A handed off nothing: the race proved nothing"
    finally:
        b.close()   # a LOCK still waiting is given up
        stop_all(halt, loopers)
    assert not errors, "%d problems, first: %s" % (len(errors), errors[:3])
    assert_eq(env.redis("EXISTS", n), 0, "lock left behind")


# ---------------------------------------------------------------- f. pipelined calls


def batch_names(env, tag):
    return {k: env.name("%s-%s" % (tag, k)) for k in
            ("a", "b", "c", "d", "e", "f", "held", "str", "free")}


def batch_pipeline(n):
    """40 commands over many names, each with the reply a call of its own gets."""
    NOTOWNER, WRONGTYPE = "NOTOWNER", "WRONGTYPE"
    six = ("a", "b", "c", "d", "e", "f")
    cmds = []
    cmds += [(("LOCK", n[k], 1), "OK") for k in six]                       # each runs alone
    cmds += [(("HOLDCOUNT", n[k], 1), 1) for k in six]                     # these go side by side
    cmds += [(("UNLOCK", n["free"], 1), NOTOWNER),                          # not held
             (("ISLOCKED", n["held"]), 1),
             (("UNLOCK", n["str"], 1), WRONGTYPE),                          # an application string
             (("ISLOCKED", n["str"]), 0),
             (("HOLDCOUNT", n["held"], 1), 0),
             (("TRYLOCK", n["held"], 1), 0),                                # held by another client
             (("LOCK", n["str"], 1), WRONGTYPE),
             (("TRYLOCK", n["str"], 1), WRONGTYPE),
             (("LOCK", n["a"], 1), "OK"),                                   # reentrant
             (("TRYLOCK", n["b"], 1), 1)]                                   # reentrant
    cmds += [(("UNLOCK", n[k], 1), 0 if k in ("a", "b") else 1) for k in six]
    cmds += [(("UNLOCK", n["a"], 1), 1), (("UNLOCK", n["b"], 1), 1),
             (("UNLOCK", n["c"], 1), NOTOWNER), (("ISLOCKED", n["a"]), 0),
             (("ISLOCKED", n["c"]), 0), (("HOLDCOUNT", n["c"], 1), 0),
             (("PTTL", n["free"]), -2), (("ISHELD", n["held"], 1), 0),
             (("ISHELD", n["a"], 1), 0), (("TRYLOCK", n["c"], 1), 1),
             (("UNLOCK", n["c"], 1), 1), (("UNLOCK", n["str"], 1), WRONGTYPE)]
    assert len(cmds) == 40, len(cmds)
    return cmds


def run_pipeline(env, daemon, tag):
    """Sends the 40 commands on one connection at once, then reads the 40 replies; returns
    (commands, replies)."""
    n = batch_names(env, tag)
    holder = env.client_of(daemon, label="%s-holder" % tag)
    assert_eq(holder.call("LOCK", n["held"], 7), "OK", "LOCK of the 'held' name by another client")
    assert_eq(env.redis("SET", n["str"], "application data"), "OK", "SET of the 'str' name")
    c = env.client_of(daemon, timeout=5.0, label="%s-pipeliner" % tag)
    cmds = batch_pipeline(n)
    c.send_raw(b"".join(encode_command(*cmd) for cmd, _ in cmds))
    replies = [c.read_reply(5.0) for _ in cmds]
    assert_eq(env.redis("GET", n["str"]), "application data", "the application string after the pipeline")
    assert_eq(env.redis("EXISTS", *[n[k] for k in ("a", "b", "c", "d", "e", "f")]), 0, "locks left")
    holder.close()
    return cmds, replies


def check_expected(cmds, replies, what):
    for (cmd, want), got in zip(cmds, replies):
        shown = "%s: %s %s" % (what, cmd[0], " ".join(str(a) for a in cmd[1:]))
        if isinstance(want, str) and want.isupper() and want != "OK":
            assert_error(got, want, what=shown)
        else:
            assert_eq(got, want, shown)


def test_pipelined_commands_each_get_the_reply_a_call_of_its_own_gets(env):
    """40 pipelined commands, which reach Redis pipelined too, are answered each as alone: a TRYLOCK of a held lock 0, a LOCK of an application string -WRONGTYPE, an UNLOCK
    of a lock not held -NOTOWNER, and every other one its own value."""
    cmds, replies = run_pipeline(env, env.rlockd, "pipe")
    check_expected(cmds, replies, "pipelined")


def process_state(pid):
    """The state letter of /proc/<pid>/stat (T: stopped)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def many_clients_in_one_turn(env, daemon):
    """Ten clients' LOCK/TRYLOCK, read by rlockd in one loop turn (it is stopped while they
    are sent): one LOCK of an application string (-WRONGTYPE), one TRYLOCK of a held lock (0),
    the others granted. Returns the names granted and the names dict."""
    n = {k: env.name("turn-%s" % k) for k in ("held", "str")}
    free = [env.name("turn-free") for _ in range(7)]
    holder = env.client_of(daemon, label="holder")
    assert_eq(holder.call("LOCK", n["held"], 1), "OK", "LOCK of the 'held' name")
    assert_eq(env.redis("SET", n["str"], "x"), "OK", "SET of the 'str' name")
    cmds = [(("LOCK", f, 1), "OK") for f in free[:4]]
    cmds += [(("LOCK", n["str"], 1), "WRONGTYPE"), (("TRYLOCK", n["held"], 1), 0),
             (("TRYLOCK", free[4], 1), 1), (("TRYLOCK", n["str"], 1), "WRONGTYPE")]
    cmds += [(("LOCK", f, 1), "OK") for f in free[5:]]
    conns = [env.client_of(daemon, timeout=5.0, label="client%d" % i) for i in range(len(cmds))]
    daemon.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: process_state(daemon.proc.pid) in ("T", "t"), 2.0, interval=0.005,
                   what="rlockd stopped (SIGSTOP)")
        for c, (cmd, _) in zip(conns, cmds):
            c.send(*cmd)
    finally:
        daemon.signal(signal.SIGCONT)
    replies = [c.read_reply(5.0) for c in conns]
    check_expected(cmds, replies, "clients in one loop turn")
    assert_eq(env.redis("GET", n["str"]), "x", "the application string")
    assert_eq(env.redis_hash(n["held"]), {"%s:1" % holder.call("CLIENTID"): "1"}, "the held lock's hash")
    for c, (cmd, want) in zip(conns, cmds):
        if want in ("OK", 1):
            assert_eq(env.redis_hash(cmd[1]), {"%s:1" % c.call("CLIENTID"): "1"}, "hash of %s" % cmd[1])
            assert_eq(c.call("UNLOCK", cmd[1], 1), 1, "UNLOCK of %s" % cmd[1])
    return free, n


def test_locks_of_many_clients_in_one_loop_turn_each_get_their_own_reply(env):
    many_clients_in_one_turn(env, env.rlockd)


# ---------------------------------------------------------------- g. hand-off off


def test_max_handoffs_0_never_hands_off_and_waiters_keep_fifo_order(env):
    d = env.second_rlockd({"lock": {"watchdog_timeout_ms": 600, "max_handoffs_in_a_row": 0}})
    n = env.name("nohandoff")
    holder = env.client_of(d, label="holder")
    waiters = [env.client_of(d, label="waiter%d" % i) for i in range(4)]
    ids = [own_id(env, c, "owner") for c in [holder] + waiters]
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by the holder")
    queue_waiters(env, n, waiters, daemon=d)
    current, pending = holder, list(range(len(waiters)))
    for k in range(len(waiters)):
        assert_eq(current.call("UNLOCK", n, 1), 1, "UNLOCK #%d" % (k + 1))
        i = granted_one(waiters, pending, 2.0, "after UNLOCK #%d" % (k + 1))
        assert_eq(i, k, "waiter granted after UNLOCK #%d (arrival order)" % (k + 1))
        assert_eq(waiters[i].read_reply(1.0), "OK", "waiter%d's LOCK" % i)
        pending.remove(i)
        assert_eq(env.redis_hash(n), {"%s:1" % ids[k + 1]: "1"}, "hash after UNLOCK #%d" % (k + 1))
        current = waiters[i]
    assert_eq(current.call("UNLOCK", n, 1), 1, "last UNLOCK")
    info = d.info()
    assert_eq(info["lock_handoffs"], "0", "lock_handoffs with max_handoffs_in_a_row = 0")
    assert int(info["locks_acquired"]) >= 5, "locks_acquired: %s" % info["locks_acquired"]
