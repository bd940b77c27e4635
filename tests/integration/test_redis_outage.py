"""Redis stopped and restarted under a running rlockd. Each test has its own Redis and rlockd."""

import time

from harness import Env, assert_eq, assert_error, is_error, parse_info, wait_until

# retry_timeout_ms short: a command finding Redis down fails after it (test_ride_through
# has the default, which rides through such an outage).
CONFIG_OUTAGE = {"redis": {"retry_timeout_ms": 300}, "lock": {"watchdog_timeout_ms": 600}}

LOCK_COMMANDS = [
    ("LOCK", "{n}", 1),
    ("TRYLOCK", "{n}", 1),
    ("TRYLOCK", "{n}", 1, "WAIT", 100),
    ("UNLOCK", "{n}", 1),
    ("FORCEUNLOCK", "{n}"),
    ("ISLOCKED", "{n}"),
    ("PTTL", "{n}"),
]
# ISHELD and HOLDCOUNT of an owner holding nothing through rlockd are answered 0
# without Redis.


def _stop_redis(env):
    env.redis_server.stop()
    assert not env.redis_server.alive(), "redis-server still running"


def _restart_redis(env):
    env.redis_server.start()
    return time.monotonic()


def test_redis_down_lock_commands_answer_unavailable_at_once_with_retry_timeout_0():
    with Env({"redis": {"retry_timeout_ms": 0}, "lock": {"watchdog_timeout_ms": 600}}) as env:
        n = env.name("down")
        a = env.client()
        _stop_redis(env)
        for cmd in LOCK_COMMANDS:
            args = [n if x == "{n}" else x for x in cmd]
            t0 = time.monotonic()
            r = a.call(*args, timeout=3.0)
            dt = time.monotonic() - t0
            assert_error(r, "UNAVAILABLE", what="%s while Redis is down" % " ".join(map(str, args)))
            assert dt < 0.5, "%s took %.3fs to fail while Redis is down (want at once)" % (args[0], dt)
        for cmd in ("ISHELD", "HOLDCOUNT"):
            assert_eq(a.call(cmd, n, 1), 0, "%s of a lock never held, while Redis is down" % cmd)


def test_redis_down_ping_info_and_clientid_still_answer():
    with Env(CONFIG_OUTAGE) as env:
        a = env.client()
        _stop_redis(env)
        assert_eq(a.call("PING"), "PONG", "PING while Redis is down")
        assert_eq(a.call("PING", "still-here"), "still-here", "PING msg while Redis is down")
        info = parse_info(a.call("INFO"))
        assert_eq(info.get("redis_connected"), "0", "INFO redis_connected while Redis is down")
        # A client-id's session record may be in Redis: not handed out blind.
        t0 = time.monotonic()
        assert_error(a.call("CLIENTID", "offline-client"), "UNAVAILABLE", what="CLIENTID while Redis is down")
        assert time.monotonic() - t0 < 1.5, "CLIENTID waited for Redis past retry_timeout_ms"
        b = env.client()
        assert_eq(b.call("PING"), "PONG", "a new connection while Redis is down")


def test_health_says_whether_lock_commands_can_be_served_and_why_not():
    """HEALTH is the readiness check PING is not: -UNAVAILABLE with the reason while Redis
    is away, +OK again once it is back; asked before AUTH too."""
    with Env(dict(CONFIG_OUTAGE, server={"auth_token": "health-test-token"})) as env:
        probe = env.client(label="health-probe")   # no AUTH
        assert_eq(probe.call("HEALTH"), "OK", "HEALTH before AUTH, Redis up")
        _stop_redis(env)
        r = None
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            r = probe.call("HEALTH")
            if is_error(r):
                break
            time.sleep(0.05)
        assert_error(r, "UNAVAILABLE", contains="redis unreachable for", what="HEALTH, Redis stopped")
        assert_eq(probe.call("PING"), "PONG", "PING all the same")
        _restart_redis(env)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and probe.call("HEALTH") != "OK":
            time.sleep(0.05)
        assert_eq(probe.call("HEALTH"), "OK", "HEALTH once Redis is back")
        assert_error(probe.call("INFO"), "NOAUTH", what="INFO before AUTH")


def test_blocked_trylock_wait_times_out_normally_while_redis_down():
    with Env(CONFIG_OUTAGE) as env:
        n = env.name("down")
        a, b = env.client(), env.client()
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
        t0 = time.monotonic()
        b.send("TRYLOCK", n, 2, "WAIT", 1500)
        env.wait_waiting(1, what="b's TRYLOCK WAIT 1500 queued behind a")
        b.expect_no_reply(0.3, "b's TRYLOCK WAIT 1500")
        _stop_redis(env)
        r = b.read_reply(4.0)
        dt = time.monotonic() - t0
        assert_eq(r, 0, "b's TRYLOCK WAIT 1500 with Redis down during the wait")
        assert 1.3 <= dt <= 2.5, "TRYLOCK WAIT 1500 answered after %.3fs (want when WAIT ran out)" % dt
        assert_eq(b.call("PING"), "PONG", "b's connection still serves")


def test_redis_restarted_on_same_port_serves_within_2s():
    with Env(CONFIG_OUTAGE) as env:
        n = env.name("restart")
        a = env.client()
        a.call("CLIENTID", "restart-client")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK before the outage")
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK before the outage")
        _stop_redis(env)
        assert_error(a.call("TRYLOCK", n, 1), "UNAVAILABLE", what="TRYLOCK while Redis is down")
        failures = env.info_int("redis_connect_failures")
        wait_until(lambda: env.info_int("redis_connect_failures") >= failures + 3, 10.0,
                   what="rlockd's reconnect attempts failing a few times")
        t_up = _restart_redis(env)
        while True:
            r = a.call("TRYLOCK", n, 1, timeout=3.0)
            if r == 1:
                break
            assert is_error(r, "UNAVAILABLE"), "TRYLOCK after Redis came back: %r" % (r,)
            assert time.monotonic() - t_up < 2.0, "rlockd still answers %r 2s after Redis came back" % (r,)
            time.sleep(0.05)
        # all of the pool comes back, not just the connection this name uses
        while env.info().get("redis_connected") != "1":
            assert time.monotonic() - t_up < 2.0, "INFO redis_connected not 1 within 2s of Redis restarting"
            time.sleep(0.05)
        # the new Redis has none of the scripts: LOCK/UNLOCK and renewals still work
        assert_eq(env.redis_hash(n), {"restart-client:1": "1"}, "hash after the restart")
        assert_eq(a.call("LOCK", n, 1), "OK", "reentrant LOCK after the restart")
        assert_eq(a.call("UNLOCK", n, 1), 0, "UNLOCK after the restart")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.3:
            assert env.redis("PTTL", n) > 0, "lock not renewed after the Redis restart"
            time.sleep(0.05)
        assert_eq(a.call("UNLOCK", n, 1), 1, "last UNLOCK after the restart")
        names = [env.name("after") for _ in range(8)]   # spread over the pool's connections
        for m in names:
            assert_eq(a.call("TRYLOCK", m, 1), 1, "TRYLOCK %s after the restart" % m)


def test_blocked_lock_acquires_after_redis_restart_and_old_holder_gets_locklost():
    with Env(CONFIG_OUTAGE) as env:
        n = env.name("restart")
        a, b = env.client(), env.client()
        bid = b.call("CLIENTID")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
        b.send("LOCK", n, 2)
        env.wait_waiting(1, what="b's LOCK queued behind a")
        b.expect_no_reply(0.3, "b's LOCK")
        _stop_redis(env)
        b.expect_no_reply(1.0, "b's LOCK while Redis is down (must keep waiting)")
        t_up = _restart_redis(env)   # the new Redis is empty: a's lock is gone
        assert_eq(b.read_reply(3.0), "OK", "b's LOCK after Redis came back")
        dt = time.monotonic() - t_up
        assert dt < 2.5, "b got the lock %.2fs after Redis came back" % dt
        assert_eq(env.redis_hash(n), {"%s:2" % bid: "1"}, "hash after b's grant")
        assert_error(a.call("UNLOCK", n, 1), "LOCKLOST", what="a's UNLOCK of the lock Redis lost")
        assert_eq(b.call("HOLDCOUNT", n, 2), 1, "b still holds the lock after a's UNLOCK")
