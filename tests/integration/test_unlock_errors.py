"""UNLOCK errors (NOTOWNER, LOCKLOST), FORCEUNLOCK, and scripts flushed from Redis."""

import time

from harness import assert_eq, assert_error, channel_for, wait_until

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}


def test_unlock_by_other_thread_id_is_notowner_and_lock_stays(env):
    n = env.name("own")
    a = env.client()
    a.call("LOCK", n, 1)
    assert_error(a.call("UNLOCK", n, 2), "NOTOWNER", what="UNLOCK by thread 2 of the same client")
    assert_eq(a.call("HOLDCOUNT", n, 1), 1, "holder's count after the refused UNLOCK")
    assert_eq(env.redis("HLEN", n), 1, "fields after the refused UNLOCK")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by the owner")


def test_unlock_by_other_client_with_same_thread_id_is_notowner(env):
    n = env.name("own")
    a, b = env.client(), env.client()
    a.call("LOCK", n, 1)
    assert_error(b.call("UNLOCK", n, 1), "NOTOWNER", what="UNLOCK by another client, same thread-id")
    assert_eq(a.call("HOLDCOUNT", n, 1), 1, "holder's count after the refused UNLOCK")


def test_unlock_of_free_lock_is_notowner(env):
    a = env.client()
    assert_error(a.call("UNLOCK", env.name("own"), 1), "NOTOWNER", what="UNLOCK of a lock nobody holds")


def test_unlock_after_key_deleted_in_redis_is_locklost_and_counted(env):
    n = env.name("lost")
    a = env.client()
    before = env.info_int("locks_lost")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK")
    assert_eq(env.redis("DEL", n), 1, "DEL behind rlockd's back")
    # wait for a renewal to find it gone (renewals every watchdog/3 = 200 ms)
    wait_until(lambda: env.info_int("locks_lost") > before, 5.0, what="a renewal finding the key gone")
    assert_eq(env.redis("EXISTS", n), 0, "key after the renewal (must not be recreated)")
    r = a.call("UNLOCK", n, 1)
    assert_error(r, "LOCKLOST", what="UNLOCK after the key was deleted in Redis")
    assert_eq(env.info_int("locks_lost") - before, 1, "INFO locks_lost increase")
    assert_eq(a.call("HOLDCOUNT", n, 1), 0, "HOLDCOUNT after LOCKLOST")
    assert_eq(a.call("TRYLOCK", n, 1), 1, "the lost lock can be taken again")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK of the re-taken lock")


def test_unlock_after_lease_expired_is_locklost(env):
    n = env.name("lost")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "LEASE", 200), "OK", "LOCK LEASE 200")
    deadline = time.monotonic() + 1.5
    while env.redis("EXISTS", n) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert_eq(env.redis("EXISTS", n), 0, "key after the lease")
    assert_error(a.call("UNLOCK", n, 1), "LOCKLOST", what="UNLOCK after the lease ran out")


def test_unlock_after_lock_taken_over_by_other_owner_is_locklost_and_does_not_free_it(env):
    n = env.name("lost")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    env.redis("DEL", n)
    assert_eq(b.call("TRYLOCK", n, 2), 1, "b takes the deleted lock")
    assert_error(a.call("UNLOCK", n, 1), "LOCKLOST", what="a's UNLOCK after b took over")
    assert_eq(b.call("HOLDCOUNT", n, 2), 1, "b still holds it")
    assert_eq(env.redis("HLEN", n), 1, "b's field is the only one")


def test_forceunlock_deletes_lock_held_by_other_client_and_returns_1(env):
    n = env.name("force")
    a, b = env.client(), env.client()
    a.call("LOCK", n, 1)
    a.call("LOCK", n, 1)
    assert_eq(b.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK of a held lock")
    assert_eq(env.redis("EXISTS", n), 0, "key after FORCEUNLOCK")
    assert_eq(b.call("TRYLOCK", n, 2), 1, "TRYLOCK after FORCEUNLOCK")


def test_forceunlock_of_free_lock_returns_0(env):
    a = env.client()
    assert_eq(a.call("FORCEUNLOCK", env.name("force")), 0, "FORCEUNLOCK of a free lock")


def test_forceunlock_wakes_blocked_waiter_at_once(env):
    n = env.name("force")
    a, b, c = env.client(), env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("LOCK", n, 2)
    env.wait_waiting(1, what="b's LOCK queued behind a")
    b.expect_no_reply(0.3, "b's LOCK while a holds it")
    t0 = time.monotonic()
    assert_eq(c.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK by c")
    assert_eq(b.read_reply(1.0), "OK", "b's LOCK after FORCEUNLOCK")
    assert time.monotonic() - t0 < 0.5, "waiter took more than 0.5s after FORCEUNLOCK"
    assert_eq(b.call("HOLDCOUNT", n, 2), 1, "b holds it")


def test_forceunlock_publishes_0_on_lock_channel_only_when_it_deleted(env):
    n = env.name("force")
    sub = env.redis_client()
    assert_eq(sub.call("SUBSCRIBE", channel_for(n)), ["subscribe", channel_for(n), 1], "SUBSCRIBE")
    a = env.client()
    a.call("LOCK", n, 1)
    assert_eq(a.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK")
    assert_eq(sub.read_reply(1.0), ["message", channel_for(n), "0"], "unlock message")
    assert_eq(a.call("FORCEUNLOCK", n), 0, "second FORCEUNLOCK")
    sub.expect_no_reply(0.2, "(no message when nothing was deleted)")


def test_unlock_after_forceunlock_is_locklost(env):
    n = env.name("force")
    a, b = env.client(), env.client()
    a.call("LOCK", n, 1)
    assert_eq(b.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK")
    assert_error(a.call("UNLOCK", n, 1), "LOCKLOST", what="owner's UNLOCK after FORCEUNLOCK")


def test_script_flush_in_redis_then_lock_commands_still_work(env):
    n = env.name("flush")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK before SCRIPT FLUSH")
    assert_eq(env.redis("SCRIPT", "FLUSH"), "OK", "SCRIPT FLUSH")
    # renewals must reload their script: the lock outlives two TTLs
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.3:
        assert env.redis("PTTL", n) > 0, "lock expired %.2fs after SCRIPT FLUSH (renewal NOSCRIPT?)" % (
            time.monotonic() - t0)
        time.sleep(0.05)
    env.redis("SCRIPT", "FLUSH")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK after SCRIPT FLUSH")
    env.redis("SCRIPT", "FLUSH")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK after SCRIPT FLUSH")
    env.redis("SCRIPT", "FLUSH")
    assert_eq(b.call("TRYLOCK", n, 2), 0, "TRYLOCK by another owner after SCRIPT FLUSH")
    env.redis("SCRIPT", "FLUSH")
    assert_eq(b.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK after SCRIPT FLUSH")
    env.redis("SCRIPT", "FLUSH")
    assert_eq(b.call("TRYLOCK", n, 2), 1, "TRYLOCK after FORCEUNLOCK")

