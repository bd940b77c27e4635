"""A Redis that stops answering (SIGSTOP) is noticed without traffic, by the links' probes.

Idle links are probed every ping_interval_ms; a link with a request unanswered for
ping_interval_ms stops counting as ready (new lock commands get -UNAVAILABLE at once) and is
ready again, on the same connection, when Redis answers; command_timeout_ms still drops it.
Each test has its own Redis and rlockd; RedisServer.paused() always sends SIGCONT.
"""

import time

from harness import (Env, assert_eq, assert_error, channel_for, holds_for, wait_info, wait_until)

PING_INTERVAL_MS = 500
# Far above anything here, so that "answered at once" and "answered at command_timeout_ms"
# cannot be confused.
COMMAND_TIMEOUT_MS = 20000
CONFIG_STALL = {"redis": {"ping_interval_ms": PING_INTERVAL_MS, "command_timeout_ms": COMMAND_TIMEOUT_MS}}


def _links(env):
    return env.info_int("redis_pool_size") + 1   # the pool and the subscriber


def _redis_calls(env, command):
    """Calls of one command in Redis's INFO commandstats (0 before the first)."""
    for line in env.redis("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_%s:" % command):
            return int(dict(f.split("=") for f in line.split(":", 1)[1].split(","))["calls"])
    return 0


def _lock_and_unlock(env, client, count=8):
    """LOCK and UNLOCK of names spread over the pool's connections."""
    cid = client.call("CLIENTID")
    for _ in range(count):
        n = env.name("live")
        assert_eq(client.call("LOCK", n, 1), "OK", "LOCK %s" % n)
        assert_eq(env.redis_hash(n), {"%s:1" % cid: "1"}, "the lock hash of %s in Redis" % n)
        assert_eq(client.call("UNLOCK", n, 1), 1, "UNLOCK %s" % n)


def test_stopped_redis_without_traffic_shows_unready_and_comes_back_without_a_reconnect():
    with Env(CONFIG_STALL) as env:
        a = env.client(timeout=5.0)
        links = _links(env)
        reconnects = env.info_int("redis_reconnects")
        stalls = env.info_int("redis_stalls")
        with env.redis_server.paused():
            t0 = time.monotonic()
            wait_info(env, "redis_connected", 0, timeout=2.0, what="INFO redis_connected:0 with Redis stopped")
            dt = time.monotonic() - t0
            wait_info(env, "redis_pool_ready", 0, timeout=2.0, what="every idle pool link unready")
            wait_info(env, "redis_subscriber_ready", 0, timeout=2.0, what="the idle subscriber unready")
            print("  SIGSTOP -> redis_connected:0 after %.2fs (ping_interval_ms %d)" % (dt, PING_INTERVAL_MS))
            env.rlockd.wait_log(r"redis subscriber: no reply for %d ms" % PING_INTERVAL_MS)
            assert_eq(env.info_int("redis_stalls"), stalls + links, "INFO redis_stalls: every link stalled once")
        wait_info(env, "redis_connected", 1, timeout=5.0, what="all links ready again after SIGCONT")
        assert_eq(env.info_int("redis_pool_ready"), env.info_int("redis_pool_size"), "INFO redis_pool_ready")
        assert_eq(env.info_int("redis_reconnects"), reconnects,
                  "INFO redis_reconnects after a stall shorter than command_timeout_ms")
        env.rlockd.wait_log(r"redis subscriber: answering again")
        _lock_and_unlock(env, a)


def test_lock_during_a_stall_gets_unavailable_at_once_not_after_command_timeout():
    with Env(CONFIG_STALL) as env:
        a = env.client(timeout=5.0)
        n = env.name("stalled")
        with env.redis_server.paused():
            wait_info(env, "redis_pool_ready", 0, timeout=2.0, what="every idle pool link unready")
            unavailable = env.info_int("unavailable_replies")
            t0 = time.monotonic()
            r = a.call("LOCK", n, 1, timeout=COMMAND_TIMEOUT_MS / 1000.0 + 5)
            dt = time.monotonic() - t0
            print("  LOCK during the stall answered in %.3fs (command_timeout_ms %d)" % (dt, COMMAND_TIMEOUT_MS))
            assert_error(r, "UNAVAILABLE", what="LOCK while Redis is stopped and its link stalled")
            # A LOCK queued behind the stalled link would be answered when command_timeout_ms
            # drops it: counted from the probe that went unanswered, at most a few ping
            # intervals before the LOCK, so after well over half of it.
            assert dt < COMMAND_TIMEOUT_MS / 2000.0, \
                "LOCK during a stall took %.2fs: it waited for command_timeout_ms" % dt
            assert_eq(env.info_int("unavailable_replies"), unavailable + 1, "INFO unavailable_replies")
        wait_info(env, "redis_connected", 1, timeout=5.0, what="all links ready again after SIGCONT")
        assert_eq(env.redis("EXISTS", n), 0, "the key of the refused LOCK")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK after Redis answers again")
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK after Redis answers again")


def test_stall_longer_than_command_timeout_drops_and_redials_every_link():
    timeout_ms = 1500
    with Env({"redis": {"ping_interval_ms": 300, "command_timeout_ms": timeout_ms,
                        "retry_timeout_ms": 300}}) as env:
        a = env.client(timeout=5.0)
        links = _links(env)
        reconnects = env.info_int("redis_reconnects")
        with env.redis_server.paused():
            wait_info(env, "redis_connected", 0, timeout=2.0, what="INFO redis_connected:0 with Redis stopped")
            env.rlockd.wait_log(r"redis subscriber: dropping connection: no reply within command_timeout_ms",
                                timeout=5.0)
            env.rlockd.wait_log(r"redis pool\[\d+\]: dropping connection: no reply within command_timeout_ms",
                                timeout=5.0)
            wait_until(lambda: env.info_int("redis_reconnects") >= reconnects + links, 5.0,
                       what="INFO redis_reconnects +%d (every stalled link dropped)" % links)
            assert_error(a.call("LOCK", env.name("down"), 1), "UNAVAILABLE", what="LOCK while links redial")
        wait_info(env, "redis_connected", 1, timeout=10.0, what="all links ready again after SIGCONT")
        _lock_and_unlock(env, a)


def test_idle_links_are_probed_and_stay_ready_while_a_waiter_is_subscribed():
    """Probes are answered on every link, the subscriber's in pub/sub mode included.

    On a subscribed connection Redis answers PING with ["pong", ""], which hiredis 0.14
    never hands to the PING's callback; the subscriber reads its own replies (and the
    sentinels' event links probe with SUBSCRIBE), or its probe would stall (and the link
    be redialled) with Redis alive."""
    with Env({"redis": {"ping_interval_ms": 300}}) as env:
        n = env.name("held-outside")
        assert_eq(env.redis("HSET", n, "outside-owner:1", 1), 1, "HSET of a lock held outside rlockd")
        assert_eq(env.redis("PEXPIRE", n, 60000), 1, "PEXPIRE of the outside lock")
        w = env.client(timeout=5.0, label="waiter")
        w.send("LOCK", n, 1)
        env.wait_waiting(1, what="the LOCK queued behind the outside lock")
        wait_until(lambda: int(env.redis("PUBSUB", "NUMSUB", channel_for(n))[1]) == 1, 5.0,
                   what="rlockd subscribed to the lock's channel")
        pings = env.info_int("redis_pings")
        pool_pings = _redis_calls(env, "ping")
        links = _links(env)
        holds_for(lambda: env.info()["redis_connected"] == "1" and env.info_int("redis_stalls") == 0, 2.0,
                  what="every link ready, none stalled, while idle and probed")
        assert env.info_int("redis_pings") >= pings + 2 * links, \
            "INFO redis_pings grew %d in 2 s of idleness (want >= %d: every link probed)" \
            % (env.info_int("redis_pings") - pings, 2 * links)
        assert _redis_calls(env, "ping") > pool_pings, "Redis counted no PING from the idle pool"
        assert_eq(env.info_int("redis_reconnects"), 0, "INFO redis_reconnects")
        assert_eq(env.redis("DEL", n), 1, "DEL of the outside lock")
        assert_eq(env.redis("PUBLISH", channel_for(n), "0"), 1, "subscribers that got the unlock message")
        assert_eq(w.read_reply(5.0), "OK", "the waiter woken by the unlock message (the TTL was 60 s)")


def test_no_probes_while_commands_flow():
    window = 3.0
    with Env({"redis": {"ping_interval_ms": 300, "pool_size": 2}}) as env:
        a = env.client(timeout=5.0)
        names = [env.name("busy") for _ in range(32)]   # every pool link carries some

        def traffic(seconds):
            end = time.monotonic() + seconds
            rounds = 0
            while time.monotonic() < end:
                for n in names:
                    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK %s" % n)
                    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK %s" % n)
                rounds += 1
            return rounds

        wait_until(lambda: _redis_calls(env, "ping") >= 2 * 2, 5.0, what="Redis counting the idle pool's PINGs")
        traffic(0.5)   # a probe sent before the traffic is answered meanwhile
        before = _redis_calls(env, "ping")
        rounds = traffic(window)
        during = _redis_calls(env, "ping") - before
        print("  %d LOCK/UNLOCK rounds of %d names in %.1fs: %d PINGs in Redis (idle: ~%d)"
              % (rounds, len(names), window, during, 2 * window * 1000 / 300))
        # The subscriber, idle (no waiters), probes with PING every interval;
        # the two pool links would add as many each if they probed while busy.
        # One more is allowed for a test process descheduled for an interval.
        subscriber = int(window * 1000 / 300) + 1
        assert during <= subscriber + 1, \
            "Redis got %d PINGs while commands flowed on every pool link (the idle subscriber " \
            "sends about %d)" % (during, subscriber)
