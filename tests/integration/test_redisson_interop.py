"""A "Java" Redisson client, played by redis-cli EVAL with Redisson's own scripts, against rlockd."""

import time
import uuid

from harness import ACQUIRE_SCRIPT, RELEASE_SCRIPT, assert_eq, channel_for

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}

JAVA_LEASE_MS = 30000  # Redisson's default lockWatchdogTimeout


def java_owner():
    return "%s:%d" % (uuid.uuid4(), 77)


def java_acquire(env, name, owner, lease_ms=JAVA_LEASE_MS):
    """Redisson's tryLockInnerAsync via redis-cli: '(nil)' when acquired, else '(integer) <pttl>'."""
    return env.redis_cli("EVAL", ACQUIRE_SCRIPT, 1, name, lease_ms, owner)


def java_release(env, name, owner, lease_ms=JAVA_LEASE_MS):
    """Redisson's unlockInnerAsync via redis-cli."""
    return env.redis_cli("EVAL", RELEASE_SCRIPT, 2, name, channel_for(name), 0, lease_ms, owner)


def test_rlockd_trylock_fails_while_java_owner_holds_lock(env):
    n = env.name("java")
    owner = java_owner()
    assert_eq(java_acquire(env, n, owner), "(nil)", "Java acquire script on a free lock")
    a = env.client()
    assert_eq(a.call("TRYLOCK", n, 1), 0, "rlockd TRYLOCK while Java holds it")
    t0 = time.monotonic()
    assert_eq(a.call("TRYLOCK", n, 1, "WAIT", 300), 0, "rlockd TRYLOCK WAIT 300 while Java holds it")
    assert time.monotonic() - t0 >= 0.25, "TRYLOCK WAIT 300 gave up early"
    assert_eq(a.call("ISLOCKED", n), 1, "rlockd ISLOCKED")
    assert_eq(a.call("ISHELD", n, 1), 0, "rlockd ISHELD")
    assert_eq(env.redis_hash(n), {owner: "1"}, "Java's hash untouched by rlockd's attempts")
    pttl = a.call("PTTL", n)
    assert 20000 < pttl <= JAVA_LEASE_MS, "rlockd PTTL of Java's lock: %r" % pttl


def test_java_acquire_fails_while_rlockd_client_holds_lock(env):
    n = env.name("java")
    a = env.client()
    cid = a.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1), "OK", "rlockd LOCK")
    r = java_acquire(env, n, java_owner())
    assert r.startswith("(integer) "), "Java acquire script while rlockd holds it: %r (want its PTTL)" % r
    assert 0 < int(r.split()[1]) <= env.watchdog_ms, "PTTL returned to Java: %r" % r
    assert_eq(env.redis_hash(n), {"%s:1" % cid: "1"}, "hash after Java's failed attempt")


def test_java_owner_with_same_field_is_reentrant_with_rlockd_owner(env):
    n = env.name("java")
    a = env.client()
    a.call("CLIENTID", "shared-svc")
    assert_eq(a.call("LOCK", n, 5), "OK", "rlockd LOCK")
    assert_eq(java_acquire(env, n, "shared-svc:5"), "(nil)", "Java acquire with the same owner field")
    assert_eq(a.call("HOLDCOUNT", n, 5), 2, "rlockd HOLDCOUNT after Java re-entered")
    assert_eq(java_release(env, n, "shared-svc:5"), "(integer) 0", "Java release: count stays > 0")
    assert_eq(a.call("HOLDCOUNT", n, 5), 1, "rlockd HOLDCOUNT after Java released once")
    assert_eq(a.call("UNLOCK", n, 5), 1, "rlockd UNLOCK of the last hold")
    assert_eq(env.redis("EXISTS", n), 0, "key after the last hold")


def _waiter_woken_by_java_release(env, n):
    owner = java_owner()
    assert_eq(java_acquire(env, n, owner), "(nil)", "Java acquire")
    w = env.client()
    wid = w.call("CLIENTID")
    w.send("LOCK", n, 3)
    env.wait_waiting(1, what="the rlockd LOCK queued behind Java's lock")
    w.expect_no_reply(0.4, "rlockd LOCK while Java holds the lock")
    t0 = time.monotonic()
    assert_eq(java_release(env, n, owner), "(integer) 1", "Java release script")
    # the Java lock had a 30 s TTL: only the unlock message can wake the waiter this fast
    assert_eq(w.read_reply(1.5), "OK", "rlockd waiter after Java's unlock")
    dt = time.monotonic() - t0
    assert dt < 1.0, "rlockd waiter took %.3fs after Java's unlock (want < 1s)" % dt
    assert_eq(env.redis_hash(n), {"%s:3" % wid: "1"}, "hash after rlockd's grant")
    assert_eq(w.call("UNLOCK", n, 3), 1, "rlockd UNLOCK")


def test_waiter_woken_by_redisson_release_script_run_in_redis(env):
    _waiter_woken_by_java_release(env, env.name("java"))


def test_waiter_woken_by_redisson_release_for_name_with_hash_tag(env):
    _waiter_woken_by_java_release(env, "{%s}.orders" % env.name("javatag"))


def test_two_waiters_both_granted_after_java_releases(env):
    n = env.name("java")
    owner = java_owner()
    assert_eq(java_acquire(env, n, owner), "(nil)", "Java acquire")
    w1, w2 = env.client(), env.client()
    w1.send("LOCK", n, 1)
    env.wait_waiting(1, what="the first rlockd LOCK queued")
    w1.expect_no_reply(0.2, "first rlockd LOCK")
    w2.send("LOCK", n, 2)
    env.wait_waiting(2, what="the second rlockd LOCK queued behind the first")
    w2.expect_no_reply(0.2, "second rlockd LOCK")
    assert_eq(java_release(env, n, owner), "(integer) 1", "Java release")
    assert_eq(w1.read_reply(1.5), "OK", "first waiter (queued first)")
    w2.expect_no_reply(0.2, "second waiter while the first holds the lock")
    assert_eq(w1.call("UNLOCK", n, 1), 1, "first waiter's UNLOCK")
    assert_eq(w2.read_reply(1.5), "OK", "second waiter")


def test_rlockd_unlock_notifies_java_subscribers(env):
    n = env.name("java")
    sub = env.redis_client()
    assert_eq(sub.call("SUBSCRIBE", channel_for(n)), ["subscribe", channel_for(n), 1], "SUBSCRIBE")
    a = env.client()
    a.call("LOCK", n, 1)
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
    assert_eq(sub.read_reply(1.0), ["message", channel_for(n), "0"], "Redisson's unlock message")
    owner = java_owner()
    assert_eq(java_acquire(env, n, owner), "(nil)", "Java acquire after rlockd's UNLOCK")


def test_waiter_acquires_when_java_lock_expires_without_a_message(env):
    n = env.name("javattl")
    owner = java_owner()
    assert_eq(java_acquire(env, n, owner, lease_ms=700), "(nil)", "Java acquire with a 700 ms lease")
    w = env.client()
    t0 = time.monotonic()
    w.send("LOCK", n, 1)
    env.wait_waiting(1, what="the rlockd LOCK queued behind the Java lease")
    w.expect_no_reply(0.3, "rlockd LOCK while the Java lease runs")
    # an expiry publishes nothing: rlockd's own timer (min(PTTL, time left)) must retry
    assert_eq(w.read_reply(2.0), "OK", "rlockd LOCK after the Java lock expired")
    dt = time.monotonic() - t0
    assert 0.5 <= dt < 1.5, "rlockd waiter got the expired lock after %.2fs (lease was 0.7s)" % dt
    assert_eq(w.call("UNLOCK", n, 1), 1, "UNLOCK")


def test_trylock_wait_gets_java_lock_that_expires_within_wait(env):
    n = env.name("javattl")
    assert_eq(java_acquire(env, n, java_owner(), lease_ms=500), "(nil)", "Java acquire with a 500 ms lease")
    w = env.client()
    t0 = time.monotonic()
    assert_eq(w.call("TRYLOCK", n, 1, "WAIT", 3000, timeout=4.0), 1, "TRYLOCK WAIT 3000")
    dt = time.monotonic() - t0
    assert 0.4 <= dt < 1.3, "TRYLOCK WAIT got the expired lock after %.2fs (lease was 0.5s)" % dt


def test_owners_names_whoever_holds_the_lock_with_its_count_and_ttl(env):
    """OWNERS: rlockd's own holder, a Java holder, no lock, and a key that is not a lock
    (which reveals nothing)."""
    n = env.name("owners")
    a = env.client()
    aid = a.call("CLIENTID")
    assert_eq(a.call("OWNERS", n), [-2, [], "none"], "OWNERS of a free lock")
    assert_eq(a.call("LOCK", n, 3), "OK", "LOCK")
    assert_eq(a.call("LOCK", n, 3), "OK", "reentrant LOCK")
    pttl, owners, kind = a.call("OWNERS", n)
    assert_eq((owners, kind), (["%s:3" % aid, 2], "lock"), "OWNERS of rlockd's hold")
    assert 0 < pttl <= env.watchdog_ms, "its PTTL: %r" % pttl
    assert_eq(a.call("UNLOCK", n, 3), 0, "first UNLOCK")
    assert_eq(a.call("UNLOCK", n, 3), 1, "second UNLOCK")
    owner = java_owner()
    assert_eq(java_acquire(env, n, owner), "(nil)", "Java acquire")
    pttl, owners, kind = a.call("OWNERS", n)
    assert_eq((owners, kind), ([owner, 1], "lock"), "OWNERS of a Java hold")
    assert JAVA_LEASE_MS - 5000 < pttl <= JAVA_LEASE_MS, "the Java lease: %r" % pttl
    assert_eq(java_release(env, n, owner), "(integer) 1", "Java release")
    app = env.name("app-data")
    env.redis("HSET", app, "balance", "7")
    assert_eq(a.call("OWNERS", app), [-2, [], "none"], "OWNERS of application data")
