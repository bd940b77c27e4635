"""Sessions that survive an rlockd restart, and no lock held for ever.

A client that set CLIENTID with a SECRET and reconnects to a restarted
rlockd within the lease gets its session back: same holds, same counts,
renewals resume, UNLOCK works, and nobody else acquires in between. One
that does not come back loses its locks at the TTL. A session without a
secret cannot be resumed, and never inherits a stale hold: one LOCK and one
UNLOCK always release. An acquire whose reply was lost leaves no lock.
"""

import signal
import time

from harness import Env, assert_eq, assert_error, wait_until

WATCHDOG_MS = 3000
SECRET = "s3cret-0123456789abcdef"


def _holder(env, i, name, count):
    c = env.client(label="holder-%d" % i)
    assert_eq(c.call("CLIENTID", "holder-%d" % i, "SECRET", SECRET), "OK", "CLIENTID")
    for _ in range(count):
        assert_eq(c.call("LOCK", name, 1), "OK", "holder %d LOCK" % i)
    # Mid-section: a hold granted in the instant before a crash may come
    # back lost (and is reported so); one held a moment is in the record.
    wait_until(lambda: env.redis("HGET", "rlockd_session:{holder-%d}" % i, "rlock:1:" + name)
               not in (None, "pending"), 2.0, what="the hold in its session's record")
    return c


def _restart_keeps_sessions(sig):
    with Env({"lock": {"watchdog_timeout_ms": WATCHDOG_MS}}) as env:
        names = [env.name("cont") for _ in range(5)]
        holders = [_holder(env, i, names[i], 1 + i % 2) for i in range(5)]
        t_stop = time.monotonic()
        env.rlockd.signal(sig)
        env.rlockd.wait_exit(5.0)
        for c in holders:
            c.wait_closed(2.0)
        env.rlockd.start()
        # Nobody else gets any of them while their holders may come back.
        other = env.client(label="other")
        for n in names:
            assert_eq(other.call("TRYLOCK", n, 7, "WAIT", 0), 0, "TRYLOCK of a kept lock by another")
        # Holders 0-3 resume: same counts, renewals resume, UNLOCK releases.
        resumed = []
        for i in range(4):
            c = env.client(label="resumed-%d" % i)
            assert_eq(c.call("CLIENTID", "holder-%d" % i, "SECRET", SECRET), "OK", "resuming CLIENTID")
            assert_eq(c.call("HOLDCOUNT", names[i], 1), 1 + i % 2, "resumed hold count of %d" % i)
            resumed.append(c)
        # Past the lease measured from the stop, the resumed locks are
        # still held (renewed by the new rlockd); holder 4's is free.
        wait_until(lambda: other.call("TRYLOCK", names[4], 7, "WAIT", 0) == 1, WATCHDOG_MS / 1000.0 + 5,
                   what="the lock of the holder that did not come back to expire")
        assert time.monotonic() - t_stop >= WATCHDOG_MS / 1000.0 * 0.5, "freed long before its TTL"
        time.sleep(max(0.0, t_stop + WATCHDOG_MS / 1000.0 + 0.5 - time.monotonic()))
        for i, c in enumerate(resumed):
            assert_eq(c.call("ISHELD", names[i], 1), 1, "resumed lock %d still held past the lease" % i)
            for k in range(1 + i % 2):
                assert_eq(c.call("UNLOCK", names[i], 1), 1 if k == i % 2 else 0, "UNLOCK %d of %d" % (k, i))
            assert_eq(env.redis("EXISTS", names[i]), 0, "released in Redis")
        assert int(env.rlockd.info()["sessions_resumed"]) == 4, "INFO sessions_resumed"


def test_sigterm_keeps_every_lock_for_holders_that_resume():
    _restart_keeps_sessions(signal.SIGTERM)


def test_sigkill_then_restart_gives_sessions_back_the_same():
    _restart_keeps_sessions(signal.SIGKILL)


def test_on_shutdown_release_frees_the_locks_at_sigterm():
    with Env({"lock": {"on_shutdown": "release", "on_disconnect": "release"}}) as env:
        n = env.name("rel")
        _holder(env, 0, n, 1)
        env.rlockd.signal(signal.SIGTERM)
        env.rlockd.wait_exit(5.0)
        assert_eq(env.redis("EXISTS", n), 0, "released at shutdown")


def test_resume_needs_the_secret_while_the_record_lives():
    with Env({"lock": {"watchdog_timeout_ms": WATCHDOG_MS}}) as env:
        n = env.name("proof")
        _holder(env, 0, n, 1)
        env.rlockd.signal(signal.SIGKILL)
        env.rlockd.wait_exit(5.0)
        env.rlockd.start()
        thief = env.client(label="thief")
        assert_error(thief.call("CLIENTID", "holder-0", "SECRET", "not-the-secret-at-all"), "NOPERM",
                     what="a wrong secret")
        thief2 = env.client(label="thief2")
        assert_error(thief2.call("CLIENTID", "holder-0"), "NOPERM", what="no secret")
        assert_eq(env.redis("HEXISTS", n, "holder-0:1"), 1, "the lock is untouched")
        owner = env.client(label="owner")
        assert_eq(owner.call("CLIENTID", "holder-0", "SECRET", SECRET), "OK", "the owner resumes")
        assert_eq(owner.call("UNLOCK", n, 1), 1, "and releases")


def test_a_lock_gone_while_rlockd_was_away_is_reported_lost():
    with Env({"lock": {"watchdog_timeout_ms": WATCHDOG_MS}}) as env:
        n = env.name("gone")
        _holder(env, 0, n, 1)
        env.rlockd.signal(signal.SIGKILL)
        env.rlockd.wait_exit(5.0)
        env.redis("DEL", n)
        env.rlockd.start()
        c = env.client()
        assert_eq(c.call("CLIENTID", "holder-0", "SECRET", SECRET), "OK", "resume")
        assert_error(c.call("UNLOCK", n, 1), "LOCKLOST", what="UNLOCK of a lock lost while away")


def test_stable_client_id_without_secret_takes_its_stale_field_over_at_count_1():
    with Env({"lock": {"watchdog_timeout_ms": 20000}}) as env:
        n = env.name("stale")
        c = env.client(label="stable")
        assert_eq(c.call("CLIENTID", "stable-id"), "OK", "CLIENTID")
        assert_eq(c.call("LOCK", n, 1), "OK", "LOCK")
        assert_eq(c.call("LOCK", n, 1), "OK", "reentrant LOCK")
        env.rlockd.signal(signal.SIGKILL)
        env.rlockd.wait_exit(5.0)
        c.wait_closed(2.0)
        env.rlockd.start()
        waiter = env.client(label="waiter")
        waiter.send("LOCK", n, 9)
        env.wait_waiting(1, what="the waiter queued behind the stale lock")
        c = env.client(label="stable-again")
        assert_eq(c.call("CLIENTID", "stable-id"), "OK", "CLIENTID again")
        assert_eq(c.call("LOCK", n, 1), "OK", "LOCK over the stale field")
        assert_eq(c.call("HOLDCOUNT", n, 1), 1, "the stale count is discarded")
        t0 = time.monotonic()
        assert_eq(c.call("UNLOCK", n, 1), 1, "one UNLOCK releases")
        assert_eq(waiter.read_reply(2.0), "OK", "the waiter gets the lock at once")
        assert time.monotonic() - t0 < 2.0


def test_an_acquire_whose_reply_was_lost_leaves_no_lock():
    """Redis away past retry_timeout_ms: -UNAVAILABLE, and the acquire, which may run when
    Redis resumes, is settled then (within the window it is sent again: test_ride_through)."""
    with Env({"redis": {"command_timeout_ms": 500, "ping_interval_ms": 5000, "retry_timeout_ms": 1000},
              "lock": {"watchdog_timeout_ms": 20000}}) as env:
        n = env.name("phantom")
        c = env.client(timeout=5.0)
        c.call("PING")
        env.redis_server.signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            assert_error(c.call("LOCK", n, 1), "UNAVAILABLE", what="LOCK while Redis is stopped")
            assert time.monotonic() - t0 < 3.0
        finally:
            env.redis_server.signal(signal.SIGCONT)
        wait_until(lambda: env.rlockd.info()["acquires_settled"] == "1", 5.0,
                   what="the lost acquire to be settled")
        assert_eq(env.redis("EXISTS", n), 0, "no lock left behind")
        waiter = env.client(label="waiter")
        t0 = time.monotonic()
        assert_eq(waiter.call("LOCK", n, 2), "OK", "another client takes it")
        assert time.monotonic() - t0 < 2.0, "the waiter was delayed"


def test_resume_says_when_there_is_no_session_to_give_back():
    with Env({"lock": {"watchdog_timeout_ms": WATCHDOG_MS}}) as env:
        n = env.name("gone")
        _holder(env, 0, n, 1)
        env.rlockd.signal(signal.SIGKILL)
        env.rlockd.wait_exit(5.0)
        env.redis("FLUSHDB")  # a Redis that lost its data
        env.rlockd.start()
        c = env.client()
        assert_error(c.call("CLIENTID", "holder-0", "SECRET", SECRET, "RESUME"), "LOCKLOST",
                     what="RESUME with no session left")
        assert c.call("CLIENTID") != "holder-0", "no session was started by the refused RESUME"
        assert_eq(c.call("CLIENTID", "holder-0", "SECRET", SECRET), "OK", "a new session then")
        assert_eq(c.call("LOCK", n, 1), "OK", "which takes the lock anew")
        other = env.client()
        assert_eq(other.call("CLIENTID", "holder-0", "SECRET", SECRET, "RESUME"), "OK",
                  "RESUME of a live session joins it")
