"""Redis that hangs (SIGSTOP), Redis with a password and a database, Redis over a Unix socket.

Each test has its own Redis and rlockd. A stopped Redis is always continued
(RedisServer.paused() sends SIGCONT in a finally).
"""

import os
import re
import uuid

from harness import (Env, RespClient, assert_eq, assert_error, channel_for, holds_for, wait_info,
                     wait_until)

# Small enough that a hung Redis is noticed within a second.
COMMAND_TIMEOUT_MS = 500
# retry_timeout_ms: short, so that a command Redis left unanswered fails soon.
CONFIG_HANG = {"redis": {"command_timeout_ms": COMMAND_TIMEOUT_MS, "retry_timeout_ms": 300},
               "lock": {"watchdog_timeout_ms": 600}}

# An owner that is not rlockd's: a lock "held by a Java process".
OUTSIDE_OWNER = "outside-owner:1"


def _hold_outside(env, name, ttl_ms=60000):
    """Creates the lock as another program would, straight in Redis, with a long TTL."""
    assert_eq(env.redis("HSET", name, OUTSIDE_OWNER, 1), 1, "HSET of a lock held outside rlockd")
    assert_eq(env.redis("PEXPIRE", name, ttl_ms), 1, "PEXPIRE of a lock held outside rlockd")


def _numsub(env, name):
    return int(env.redis("PUBSUB", "NUMSUB", channel_for(name))[1])


def _hash(flat):
    return dict(zip(flat[0::2], flat[1::2]))


# ---------------------------------------------------------------- Redis stops answering


def test_redis_that_stops_answering_gets_unavailable_and_the_link_redialled_after_command_timeout():
    with Env(CONFIG_HANG) as env:
        n = env.name("hang")
        a = env.client(timeout=5.0)
        reconnects = env.info_int("redis_reconnects")
        with env.redis_server.paused():
            a.send("ISLOCKED", n)   # rlockd sends it on a ready link; Redis never answers
            assert_error(a.read_reply(5.0), "UNAVAILABLE",
                         what="ISLOCKED that Redis left unanswered for command_timeout_ms")
            env.rlockd.wait_log(r"redis pool\[\d+\]: dropping connection: no reply within command_timeout_ms")
            assert env.info_int("redis_reconnects") > reconnects, \
                "INFO redis_reconnects did not grow (was %d) after the hung link was dropped" % reconnects
            assert_eq(a.call("PING"), "PONG", "PING on the same connection while Redis is stopped")
        wait_info(env, "redis_connected", 1, timeout=10.0, what="all links ready again after SIGCONT")
        m = env.name("after")
        cid = a.call("CLIENTID")
        assert_eq(a.call("LOCK", m, 1), "OK", "LOCK after Redis answers again")
        assert_eq(env.redis_hash(m), {"%s:1" % cid: "1"}, "Redis hash of the LOCK after the outage")
        assert_eq(a.call("UNLOCK", m, 1), 1, "UNLOCK after Redis answers again")
        assert_eq(env.redis("EXISTS", m), 0, "key after the UNLOCK")


def test_hung_subscriber_link_is_dropped_after_command_timeout_and_wakeups_work_again():
    """The subscriber connection is held to command_timeout_ms like the pool's.

    EXPECTED TO FAIL on rlockd up to commit c878838: its subscriber sends
    SUBSCRIBE/UNSUBSCRIBE around redis_link_send, so the link never counts them
    in flight, and a subscriber that Redis stops answering is never dropped."""
    with Env(CONFIG_HANG) as env:
        n = env.name("subhang")
        _hold_outside(env, n)
        attempts = env.info_int("lock_attempts")
        w = env.client(timeout=5.0, label="trylock-waiter")
        w.send("TRYLOCK", n, 1, "WAIT", 800)
        env.wait_waiting(1, what="the TRYLOCK WAIT 800 queued")
        wait_info(env, "subscribed_channels", 1)
        # the attempt after the subscription (section 8) has been sent, and Redis confirmed
        # the SUBSCRIBE: from here on only the subscriber link will have a request for Redis
        wait_until(lambda: env.info_int("lock_attempts") >= attempts + 2, 5.0,
                   what="INFO lock_attempts +2 (first attempt, and the one after subscribing)")
        wait_until(lambda: _numsub(env, n) == 1, 5.0, what="rlockd's SUBSCRIBE active in Redis")
        with env.redis_server.paused():
            # The WAIT runs out in rlockd; the last waiter leaves, so rlockd sends UNSUBSCRIBE
            # on the subscriber connection, which Redis does not answer.
            assert_eq(w.read_reply(5.0), 0, "TRYLOCK WAIT 800 while Redis is stopped")
            env.rlockd.wait_log(r"redis subscriber: dropping connection: no reply within command_timeout_ms",
                                timeout=4.0)
        wait_info(env, "redis_subscriber_ready", 1, timeout=10.0, what="the subscriber ready again after SIGCONT")
        wait_info(env, "redis_connected", 1, timeout=10.0, what="all links ready again after SIGCONT")

        # Wake-ups work through the new subscriber connection: a waiter on a lock with a
        # 60 s TTL is woken by the unlock message, not by the TTL.
        m = env.name("subwake")
        _hold_outside(env, m)
        attempts = env.info_int("lock_attempts")
        messages = env.info_int("unlock_messages")
        x = env.client(timeout=5.0, label="lock-waiter")
        x.send("LOCK", m, 1)
        env.wait_waiting(1, what="the LOCK queued")
        wait_until(lambda: env.info_int("lock_attempts") >= attempts + 2, 5.0,
                   what="INFO lock_attempts +2 (first attempt, and the one after subscribing)")
        wait_until(lambda: _numsub(env, m) == 1, 5.0, what="rlockd subscribed to the new lock's channel")
        x.expect_no_reply(0.1, "LOCK of a lock held outside rlockd")
        assert_eq(env.redis("DEL", m), 1, "DEL of the outside lock")
        assert_eq(env.redis("PUBLISH", channel_for(m), "0"), 1, "subscribers that got the unlock message")
        assert_eq(x.read_reply(5.0), "OK", "the waiter woken by the unlock message (the TTL was 60 s)")
        wait_until(lambda: env.info_int("unlock_messages") > messages, 2.0,
                   what="INFO unlock_messages counting the message")
        assert_eq(x.call("HOLDCOUNT", m, 1), 1, "the woken waiter holds the lock")


def test_a_latch_wait_whose_caller_left_while_redis_hung_does_not_crash_rlockd():
    """AWAIT WAIT, Redis stopped past command_timeout_ms, the caller gone: when Redis answers
    again rlockd settles the acquires it lost, and a latch's wait, which holds nothing, has
    nothing to settle.

    EXPECTED TO FAIL on rlockd up to commit fc21e78: the latch's wait was remembered for
    settling, and the settle went through the latch row's missing build (SIGSEGV)."""
    with Env(CONFIG_HANG) as env:
        n = env.name("latch")
        a = env.client(timeout=5.0)
        assert_eq(a.call("LATCHSET", n, 1), 1, "LATCHSET of a new latch")
        clients = env.info_int("connected_clients")
        w = env.client(timeout=5.0, label="latch-waiter")
        wait_info(env, "connected_clients", clients + 1, what="the waiter connected")
        with env.redis_server.paused():
            w.send("AWAIT", n, "WAIT", 5000)  # its script is sent; Redis never answers
            env.rlockd.wait_log(r"redis pool\[\d+\]: dropping connection: no reply within command_timeout_ms")
            w.close()                         # the caller gives up
            wait_info(env, "connected_clients", clients, what="the waiter's disconnection seen")
        wait_info(env, "redis_connected", 1, timeout=10.0, what="all links ready again after SIGCONT")
        assert_eq(a.call("PING"), "PONG", "PING after Redis answers again")
        assert env.rlockd.alive(), "rlockd died after Redis answered again:\n%s" % env.log_tail()
        assert_eq(a.call("AWAIT", n, "WAIT", 50), 0, "AWAIT WAIT 50 of the latch still closed")
        assert_eq(a.call("COUNTDOWN", n), 0, "COUNTDOWN to zero")
        assert_eq(a.call("AWAIT", n), 1, "AWAIT of the open latch")
        assert_eq(env.info_int("waiting_clients"), 0, "INFO waiting_clients at the end")


# ---------------------------------------------------------------- AUTH and SELECT


def test_a_redis_6_acl_user_is_used_with_its_password():
    password = "pw-%s" % uuid.uuid4().hex
    acl = ("--user", "rlockd-acl", "on", ">" + password, "~*", "&*", "+@all")
    with Env({"redis": {"username": "rlockd-acl", "password": password}}, redis_args=acl) as env:
        a = env.client()
        assert_eq(a.call("LOCK", env.name("acl"), 1), "OK", "LOCK through the ACL user")
        users = [f.split("=", 1)[1] for line in env.redis("CLIENT", "LIST").splitlines()
                 for f in line.split() if f.startswith("user=")]
        assert users.count("rlockd-acl") >= 2, "rlockd's connections' users: %s" % users
        assert password not in env.rlockd.log_text(), "the password appears in rlockd's log"


def test_lock_goes_to_the_configured_db_of_a_redis_with_a_password():
    password = "pw-%s" % uuid.uuid4().hex
    db = 3
    config = {"redis": {"password": password, "db": db}, "lock": {"watchdog_timeout_ms": 600}}
    with Env(config, redis_args=("--requirepass", password)) as env:
        stranger = RespClient(env.redis_port, label="redis-without-auth")
        try:
            assert_error(stranger.call("PING"), "NOAUTH", what="PING to Redis without AUTH (requirepass is on)")
        finally:
            stranger.close()
        n = env.name("db")
        a = env.client()
        cid = a.call("CLIENTID")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK through a Redis with a password")
        in_db = env.redis_client(db=db)
        assert_eq(_hash(in_db.call("HGETALL", n)), {"%s:1" % cid: "1"}, "the lock hash in db %d" % db)
        pttl = in_db.call("PTTL", n)
        assert 0 < pttl <= env.watchdog_ms, "PTTL %r of the lock in db %d" % (pttl, db)
        assert_eq(env.redis("EXISTS", n), 0, "the lock key in db 0")
        assert_eq(a.call("HOLDCOUNT", n, 1), 1, "HOLDCOUNT (read from db %d)" % db)
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
        assert_eq(in_db.call("EXISTS", n), 0, "the lock key in db %d after UNLOCK" % db)
        # the subscriber connection authenticated too: a release made outside rlockd wakes a waiter
        m = env.name("dbwake")
        assert_eq(in_db.call("HSET", m, OUTSIDE_OWNER, 1), 1, "HSET of a lock held outside rlockd")
        assert_eq(in_db.call("PEXPIRE", m, 60000), 1, "PEXPIRE of the outside lock")
        a.send("LOCK", m, 1)
        env.wait_waiting(1, what="the LOCK queued behind the outside lock")
        wait_until(lambda: _numsub(env, m) == 1, 5.0, what="rlockd subscribed to the lock's channel")
        assert_eq(in_db.call("DEL", m), 1, "DEL of the outside lock")
        assert_eq(in_db.call("PUBLISH", channel_for(m), "0"), 1, "subscribers that got the unlock message")
        assert_eq(a.read_reply(5.0), "OK", "the waiter woken by the unlock message (the TTL was 60 s)")
        assert_eq(_hash(in_db.call("HGETALL", m)), {"%s:1" % cid: "1"}, "the woken waiter's lock in db %d" % db)
        assert password not in env.rlockd.log_text(), "the Redis password appears in rlockd's log"


def test_wrong_redis_password_leaves_rlockd_unready_and_logs_the_auth_error_not_the_password():
    right = "right-%s" % uuid.uuid4().hex
    wrong = "wrong-%s" % uuid.uuid4().hex
    with Env({"redis": {"password": wrong, "retry_timeout_ms": 300}}, redis_args=("--requirepass", right),
             wait_redis=False) as env:
        env.rlockd.wait_log(r"redis (pool\[\d+\]|subscriber): refused: (WRONGPASS|ERR invalid password)", timeout=5.0)
        holds_for(lambda: env.info()["redis_connected"] == "0", 1.0,
                  what="INFO redis_connected:0 with a wrong Redis password")
        n = env.name("noauth")
        a = env.client()
        assert_error(a.call("LOCK", n, 1), "UNAVAILABLE", what="LOCK while rlockd cannot authenticate to Redis")
        assert_eq(env.redis("EXISTS", n), 0, "the lock key after the refused LOCK")
        # Every link keeps retrying, with backoff, and logs the refusal once, not per retry.
        links = int(env.info()["redis_pool_size"]) + 1
        wait_until(lambda: env.info_int("redis_connect_failures") >= 3 * links, 5.0,
                   what="INFO redis_connect_failures: every link retried a few times")
        log = env.rlockd.log_text()
        refusals = len(re.findall(r"refused: (WRONGPASS|ERR invalid password)", log))
        assert refusals <= links, "the refusal logged %d times by %d links" % (refusals, links)
        assert wrong not in log, "the configured (wrong) Redis password appears in rlockd's log"
        assert right not in log, "Redis's password appears in rlockd's log"


# ---------------------------------------------------------------- Unix socket


def test_redis_over_a_unix_socket_serves_lock_and_unlock():
    with Env({"redis": {"unix_socket": "{tmpdir}/redis.sock"}, "lock": {"watchdog_timeout_ms": 600}},
             redis_args=("--unixsocket", "{tmpdir}/redis.sock", "--unixsocketperm", "700"),
             wait_redis=False) as env:
        path = env.redis_server.unix_socket
        assert_eq(os.path.dirname(path), env.tmpdir, "the Redis socket's directory")
        wait_info(env, "redis_connected", 1, timeout=5.0, what="rlockd connected to Redis over its Unix socket")
        links = env.info_int("redis_pool_size") + 1   # the pool and the subscriber
        me = env.redis("CLIENT", "ID")

        seen = []

        def all_on_the_socket():
            """rlockd's connections in Redis's CLIENT LIST: (on the Unix socket, over TCP)."""
            clients = [dict(f.split("=", 1) for f in line.split() if "=" in f)
                       for line in env.redis("CLIENT", "LIST").splitlines()]
            others = [c for c in clients if c.get("id") != str(me)]
            unix = [c for c in others if c.get("addr", "").startswith(path + ":")]
            seen[:] = [(len(unix), len(others) - len(unix))]
            return seen[0] == (links, 0)
        try:
            wait_until(all_on_the_socket, 5.0)
        except AssertionError:
            raise AssertionError("want all %d of rlockd's Redis connections on the Unix socket and none "
                                 "over TCP; CLIENT LIST shows (unix, tcp) = %r" % (links, seen[0])) from None
        n = env.name("unix")
        a = env.client()
        cid = a.call("CLIENTID")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK through Redis's Unix socket")
        assert_eq(env.redis_hash(n), {"%s:1" % cid: "1"}, "the lock hash in Redis")
        assert_eq(a.call("ISHELD", n, 1), 1, "ISHELD")
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK through Redis's Unix socket")
        assert_eq(env.redis("EXISTS", n), 0, "the lock key after UNLOCK")
