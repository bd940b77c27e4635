"""Deadlock detection over real sockets: a LOCK whose wait closes a cycle of this rlockd's
owners (client-id:thread-id) gets -DEADLOCK naming the cycle, once, and the others proceed
when the refused client gives up what it holds; READ/WRITE cycles; MLOCK refused gives back
what it took; no false positives (reentrant acquires, chains, threads of one client, a
Java-format holder); deadlock_detection = off lets a cycle wait; INFO deadlocks_detected."""

import re
import signal

from harness import assert_eq, assert_error

CONFIG = {"lock": {"watchdog_timeout_ms": 30000}}
SECRET = "deadlock-secret-0123456789"


def _owner(env, label):
    """A client with a client-id of its own, and that id."""
    c = env.client(label=label)
    cid = env.name("dl-" + label)
    assert_eq(c.call("CLIENTID", cid), "OK", "CLIENTID %s" % cid)
    return c, cid


def _expect_deadlock(env, reply, cycle, before):
    """reply is -DEADLOCK <cycle>, counted once in INFO and logged at WARN."""
    assert_error(reply, "DEADLOCK", what="the wait that closes the cycle")
    assert_eq(reply.message, cycle, "the cycle named")
    assert_eq(env.info_int("deadlocks_detected"), before + 1, "INFO deadlocks_detected")
    env.rlockd.wait_log(r"WARN.*deadlock refused: " + re.escape(cycle))


def _chain_of_three(env):
    """Owners a, b and c holding x, y and z; a waits for y, b for z: a chain. Returns
    (client, client-id, the name it holds) of each."""
    owners = [_owner(env, label) + (env.name(name),) for label, name in
              (("a", "x"), ("b", "y"), ("c", "z"))]
    for client, _, name in owners:
        assert_eq(client.call("LOCK", name, 1), "OK", "LOCK %s" % name)
    for (client, _, _), (_, _, name) in zip(owners, owners[1:]):
        client.send("LOCK", name, 1)
    env.wait_waiting(2)
    return owners


def test_a_two_party_cycle_is_refused_once_and_the_other_proceeds(env):
    (a, aid), (b, bid) = _owner(env, "a"), _owner(env, "b")
    x, y = env.name("orders"), env.name("stock")
    before = env.info_int("deadlocks_detected")
    assert_eq(a.call("LOCK", x, 1), "OK", "a takes x")
    assert_eq(b.call("LOCK", y, 1), "OK", "b takes y")
    a.send("LOCK", y, 1)
    env.wait_waiting(1)
    _expect_deadlock(env, b.call("LOCK", x, 1),
                     "%s:1 waits for %s held by %s:1, %s:1 waits for %s held by %s:1"
                     % (bid, x, aid, aid, y, bid), before)
    env.wait_waiting(1, what="a still waits")
    assert_eq(b.call("UNLOCK", y, 1), 1, "the refused one gives y up")
    assert_eq(a.read_reply(5.0), "OK", "a gets y")
    assert_eq(env.redis_hash(y), {"%s:1" % aid: "1"}, "y is a's in Redis")


def test_a_three_party_cycle_is_refused_once_and_the_others_proceed(env):
    before = env.info_int("deadlocks_detected")
    (a, aid, x), (b, bid, y), (c, cid, z) = _chain_of_three(env)
    _expect_deadlock(env, c.call("LOCK", x, 1),
                     "%s:1 waits for %s held by %s:1, %s:1 waits for %s held by %s:1, "
                     "%s:1 waits for %s held by %s:1" % (cid, x, aid, aid, y, bid, bid, z, cid),
                     before)
    assert_eq(c.call("UNLOCK", z, 1), 1, "c gives z up")
    assert_eq(b.read_reply(5.0), "OK", "b gets z")
    assert_eq(b.call("UNLOCK", y, 1), 1, "b done with y")
    assert_eq(a.read_reply(5.0), "OK", "a gets y")
    assert_eq(env.info_int("deadlocks_detected"), before + 1, "refused once")


def test_a_read_write_cycle_is_refused(env):
    (a, aid), (b, bid) = _owner(env, "a"), _owner(env, "b")
    d, e = env.name("doc"), env.name("edit")
    before = env.info_int("deadlocks_detected")
    assert_eq(a.call("LOCK", d, 1, "READ"), "OK", "a reads d")
    assert_eq(b.call("LOCK", e, 1, "WRITE"), "OK", "b writes e")
    a.send("LOCK", e, 1, "WRITE")
    env.wait_waiting(1)
    _expect_deadlock(env, b.call("LOCK", d, 1, "WRITE"),
                     "%s:1 waits for %s (WRITE) held by %s:1, %s:1 waits for %s (WRITE) held "
                     "by %s:1" % (bid, d, aid, aid, e, bid), before)
    assert_eq(b.call("UNLOCK", e, 1, "WRITE"), 1, "b gives e up")
    assert_eq(a.read_reply(5.0), "OK", "a writes e")


def test_an_mlock_refused_deadlock_gives_back_what_it_took(env):
    (a, aid), (b, bid) = _owner(env, "a"), _owner(env, "b")
    base = env.name("ml")
    w, x, z = base + "-w", base + "-x", base + "-z"   # MLOCK takes x, then z
    before = env.info_int("deadlocks_detected")
    assert_eq(b.call("LOCK", w, 1), "OK", "b takes w")
    assert_eq(a.call("LOCK", z, 1), "OK", "a takes z")
    a.send("LOCK", w, 1)
    env.wait_waiting(1)
    _expect_deadlock(env, b.call("MLOCK", 1, z, x),
                     "%s:1 waits for %s held by %s:1, %s:1 waits for %s held by %s:1"
                     % (bid, z, aid, aid, w, bid), before)
    assert_eq(env.redis("EXISTS", x), 0, "the MLOCK gave x back")
    assert_eq(b.call("UNLOCK", w, 1), 1, "b gives w up")
    assert_eq(a.read_reply(5.0), "OK", "a gets w")


def test_no_false_positives_reentrant_chains_threads_and_java(env):
    before = env.info_int("deadlocks_detected")
    # a chain a -> b -> c, and a reentrant acquire by the chain's end
    (a, _, x), (b, _, y), (c, _, z) = _chain_of_three(env)
    j = env.name("java")
    assert_eq(c.call("LOCK", z, 1), "OK", "c re-enters z")
    assert_eq(c.call("UNLOCK", z, 1), 0, "once: still held")
    assert_eq(c.call("UNLOCK", z, 1), 1, "twice: z freed")
    assert_eq(b.read_reply(5.0), "OK", "b gets z")
    assert_eq(b.call("UNLOCK", y, 1), 1, "b gives y up")
    assert_eq(a.read_reply(5.0), "OK", "a gets y")
    # two threads of one client: one waiting for the other is a chain
    t1, t2 = env.client(label="t1"), env.client(label="t2")
    tid_client = env.name("dl-threads")
    for t in (t1, t2):
        assert_eq(t.call("CLIENTID", tid_client, "SECRET", SECRET), "OK", "CLIENTID")
    p, q = env.name("p"), env.name("q")
    assert_eq(t1.call("LOCK", p, 1), "OK", "thread 1 takes p")
    assert_eq(t2.call("LOCK", q, 2), "OK", "thread 2 takes q")
    t1.send("LOCK", q, 1)
    env.wait_waiting(1)
    assert_eq(t2.call("UNLOCK", q, 2), 1, "thread 2 gives q up")
    assert_eq(t1.read_reply(5.0), "OK", "thread 1 gets q")
    # a Java holder of j: rlockd cannot see what it waits for, so a's wait for j and b's
    # for a are a chain as far as rlockd knows
    env.redis("HSET", j, "java-uuid:77", 1)
    env.redis("PEXPIRE", j, 30000)
    a.send("TRYLOCK", j, 1, "WAIT", 300)
    env.wait_waiting(1)
    assert_eq(b.call("TRYLOCK", x, 1, "WAIT", 200), 0, "b waits for a, then gives up")
    assert_eq(a.read_reply(5.0), 0, "a waited for Java, then gave up")
    assert_eq(env.info_int("deadlocks_detected"), before, "nothing refused")


def test_detection_off_lets_a_cycle_wait_until_its_wait_runs_out(env):
    (a, _), (b, _) = _owner(env, "a"), _owner(env, "b")
    x, y = env.name("x"), env.name("y")
    before = env.info_int("deadlocks_detected")
    env.rlockd.rewrite_config({"lock": {"deadlock_detection": "off"}})
    env.rlockd.signal(signal.SIGHUP)
    env.rlockd.wait_log(r"reload: \[lock\] deadlock_detection = off")
    try:
        assert_eq(a.call("LOCK", x, 1), "OK", "a takes x")
        assert_eq(b.call("LOCK", y, 1), "OK", "b takes y")
        a.send("TRYLOCK", y, 1, "WAIT", 400)
        env.wait_waiting(1)
        assert_eq(b.call("TRYLOCK", x, 1, "WAIT", 200), 0, "b waits out its WAIT")
        assert_eq(a.read_reply(5.0), 0, "a waits out its WAIT")
        assert_eq(env.info_int("deadlocks_detected"), before, "nothing refused")
    finally:
        env.rlockd.rewrite_config({"lock": {"deadlock_detection": "on"}})
        env.rlockd.signal(signal.SIGHUP)
        env.rlockd.wait_log(r"reload: \[lock\] deadlock_detection = on")
