"""Session end: locks released (or left to expire) when a client's last connection closes."""

import time

from harness import Env, assert_eq, holds_for, wait_until

# A long watchdog TTL, so that "released promptly" cannot be mistaken for "expired".
CONFIG = {"lock": {"watchdog_timeout_ms": 10000, "on_disconnect": "release"}}
# What a pooled program sends with its stable client-id on every connection.
POOL_SECRET = "pool-secret-0123456789abcdef"


def _gone(env, name):
    return lambda: env.redis("EXISTS", name) == 0


def test_closing_holder_connection_deletes_its_lock_promptly(env):
    n = env.name("disc")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK")
    assert_eq(a.call("LOCK", n, 1), "OK", "reentrant LOCK")
    assert env.redis("PTTL", n) > 5000, "watchdog TTL should be about 10 s"
    t0 = time.monotonic()
    a.close()
    wait_until(_gone(env, n), 1.0, what="lock key deleted after the holder closed its socket")
    assert time.monotonic() - t0 < 1.0


def test_closing_holder_connection_releases_all_its_locks_and_notifies(env):
    names = [env.name("disc") for _ in range(3)]
    sub = env.redis_client()
    for i, n in enumerate(names):
        ch = "redisson_lock__channel:{%s}" % n
        assert_eq(sub.call("SUBSCRIBE", ch), ["subscribe", ch, i + 1], "SUBSCRIBE")
    a = env.client()
    for i, n in enumerate(names):
        assert_eq(a.call("LOCK", n, i), "OK", "LOCK %s" % n)
    a.call("TRYLOCK", names[0], 0)
    a.close()
    for n in names:
        wait_until(_gone(env, n), 1.0, what="%s deleted after disconnect" % n)
    got = set()
    for _ in names:
        msg = sub.read_reply(1.0)
        assert msg[0] == "message" and msg[2] == "0", "unexpected pub/sub message %r" % (msg,)
        got.add(msg[1])
    assert_eq(got, {"redisson_lock__channel:{%s}" % n for n in names}, "channels notified")


def test_closing_holder_connection_hands_lock_to_waiter_fast(env):
    n = env.name("disc")
    a, b = env.client(), env.client()
    bid = b.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("LOCK", n, 2)
    env.wait_waiting(1, what="b's LOCK queued behind a")
    b.expect_no_reply(0.3, "b's LOCK while a holds it")
    t0 = time.monotonic()
    a.close()
    assert_eq(b.read_reply(2.0), "OK", "b's LOCK after a disconnected")
    dt = time.monotonic() - t0
    assert dt < 1.0, "waiter got the lock %.3fs after the holder disconnected (want < 1s, TTL is 10s)" % dt
    assert_eq(env.redis_hash(n), {"%s:2" % bid: "1"}, "hash after handoff")


def test_closing_holder_connection_releases_lease_locks_too(env):
    n = env.name("disc")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "LEASE", 60000), "OK", "LOCK LEASE 60000")
    a.close()
    wait_until(_gone(env, n), 1.0, what="LEASE lock deleted after the holder closed its socket")


def test_disconnect_release_does_not_free_a_lock_now_held_by_another_owner(env):
    n = env.name("disc")
    a, b = env.client(), env.client()
    bid = b.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    env.redis("DEL", n)   # lost behind rlockd's back ...
    assert_eq(b.call("TRYLOCK", n, 2), 1, "... and taken by b")
    a.close()
    holds_for(lambda: env.redis_hash(n) == {"%s:2" % bid: "1"}, 0.5,
              what="b's lock intact after a (which had lost it) disconnected")


def test_quit_releases_locks_like_a_close(env):
    n = env.name("disc")
    a = env.client()
    a.call("LOCK", n, 1)
    assert_eq(a.call("QUIT"), "OK", "QUIT")
    assert a.wait_closed(1.0), "connection still open after QUIT"
    wait_until(_gone(env, n), 1.0, what="lock deleted after QUIT")


def test_same_owner_is_reentrant_across_connections_with_same_clientid(env):
    n = env.name("pool")
    c1, c2 = env.client(), env.client()
    assert_eq(c1.call("CLIENTID", "pooled-app", "SECRET", POOL_SECRET), "OK", "CLIENTID on c1")
    assert_eq(c2.call("CLIENTID", "pooled-app", "SECRET", POOL_SECRET), "OK", "CLIENTID on c2")
    assert_eq(c1.call("LOCK", n, 1), "OK", "LOCK on c1")
    assert_eq(c2.call("TRYLOCK", n, 1), 1, "TRYLOCK by the same owner on c2 (reentrant)")
    assert_eq(env.redis_hash(n), {"pooled-app:1": "2"}, "hash: one owner, count 2")
    assert_eq(c2.call("HOLDCOUNT", n, 1), 2, "HOLDCOUNT on c2")
    assert_eq(c2.call("TRYLOCK", n, 2), 0, "another thread of the same client is another owner")
    assert_eq(c2.call("UNLOCK", n, 1), 0, "UNLOCK on c2")
    assert_eq(c1.call("UNLOCK", n, 1), 1, "UNLOCK on c1")
    assert_eq(env.redis("EXISTS", n), 0, "key after both UNLOCKs")


def test_locks_survive_until_last_connection_of_clientid_closes(env):
    n = env.name("pool")
    c1, c2, other = env.client(), env.client(), env.client()
    c1.call("CLIENTID", "pooled-app-2", "SECRET", POOL_SECRET)
    c2.call("CLIENTID", "pooled-app-2", "SECRET", POOL_SECRET)
    assert_eq(c1.call("LOCK", n, 1), "OK", "LOCK on c1")
    c1.close()
    holds_for(lambda: env.redis("HGET", n, "pooled-app-2:1") == "1", 0.5,
              what="lock held while another connection of the client-id is open")
    assert_eq(other.call("TRYLOCK", n, 9), 0, "another client's TRYLOCK")
    assert_eq(c2.call("HOLDCOUNT", n, 1), 1, "HOLDCOUNT on the remaining connection")
    c2.close()
    wait_until(_gone(env, n), 1.0, what="lock deleted after the client-id's last connection closed")
    assert_eq(other.call("TRYLOCK", n, 9), 1, "another client's TRYLOCK afterwards")


def test_disconnected_waiter_leaves_no_lock(env):
    n = env.name("wdisc")
    a, b, c = env.client(), env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("LOCK", n, 2)
    env.wait_waiting(1, what="b's LOCK queued behind a")
    b.expect_no_reply(0.3, "b's LOCK")
    b.close()
    env.wait_waiting(0, timeout=1.0, what="INFO waiting_clients back to 0 after the waiter closed")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by a")
    holds_for(lambda: env.redis("EXISTS", n) == 0, 0.5,
              what="no lock key after the holder unlocked (the gone waiter must not get it)")
    assert_eq(c.call("ISLOCKED", n), 0, "ISLOCKED")
    assert_eq(c.call("TRYLOCK", n, 3), 1, "TRYLOCK by a third client")


def test_waiter_closing_during_handoff_leaves_no_orphan_lock(env):
    for i in range(25):
        n = env.name("race")
        a, b = env.client(), env.client()
        assert_eq(a.call("LOCK", n, 1), "OK", "round %d: LOCK by a" % i)
        b.send("LOCK", n, 2)
        if i % 2:
            time.sleep(0.005 * (i % 5))   # sometimes b is queued, sometimes still trying
        # the unlock and the waiter's close race: b's acquire may be in flight
        a.send("UNLOCK", n, 1)
        if i % 3:
            time.sleep(0.0003 * (i % 7))
        b.close()
        assert_eq(a.read_reply(), 1, "round %d: UNLOCK by a" % i)
        wait_until(_gone(env, n), 1.0, what="round %d: no orphan lock after the waiter closed" % i)
        a.close()
    env.wait_waiting(0, timeout=1.0, what="INFO waiting_clients back to 0")


def test_on_disconnect_expire_keeps_key_until_its_ttl():
    with Env({"lock": {"watchdog_timeout_ms": 1500, "on_disconnect": "expire"}}) as env:
        n = env.name("expire")
        a, b = env.client(), env.client()
        aid = a.call("CLIENTID")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
        b.send("LOCK", n, 2)
        env.wait_waiting(1, what="b's LOCK queued behind a")
        b.expect_no_reply(0.2, "b's LOCK")
        a.close()
        t0 = time.monotonic()
        holds_for(lambda: env.redis("HGET", n, "%s:1" % aid) == "1", 0.4,
                  what="a's lock kept after a disconnected (on_disconnect=expire)")
        pttl = env.redis("PTTL", n)
        assert 0 < pttl <= 1500 - 300, "PTTL %d: the lock must no longer be renewed" % pttl
        # no renewal: the key expires within one TTL; b's timer then acquires it
        assert_eq(b.read_reply(2.5), "OK", "b's LOCK once a's lock expired")
        dt = time.monotonic() - t0
        assert dt <= 2.0, "b waited %.2fs after a disconnected (TTL is 1.5s)" % dt
        assert_eq(b.call("HOLDCOUNT", n, 2), 1, "b holds it")
