"""Lock commands touch only lock data: every other key survives them unchanged, and
the queries reveal nothing about it; name_prefix and allowed_names fence rlockd in."""

import signal
import time

from harness import Env, assert_eq, assert_error, channel_for, wait_until

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}

# Application data in the shared database, each written by a list of commands
# (the key is appended as the first argument). The hashes have owner-shaped
# fields: "alice:1" is what rlockd's owner field would be for client-id alice,
# thread 1.
FOREIGN = {
    "string": [("SET", "500")],
    "list": [("RPUSH", "a", "b")],
    "set": [("SADD", "a", "b")],
    "zset": [("ZADD", "1", "a")],
    "hash of an app": [("HSET", "alice:1", "500", "other", "x")],
    "hash, one owner field, no TTL": [("HSET", "alice:1", "500")],
    "hash, one owner field, not a count": [("HSET", "alice:1", "five"), ("PEXPIRE", "60000")],
    "hash, one field, not an owner": [("HSET", "balance", "7"), ("PEXPIRE", "60000")],
}

READERS = {"string": ("GET",), "list": ("LRANGE", 0, -1), "set": ("SMEMBERS",),
           "zset": ("ZRANGE", 0, -1, "WITHSCORES"), "hash": ("HGETALL",)}


def snapshot(env, key):
    kind = env.redis("TYPE", key)
    value = env.redis(READERS[kind][0], key, *READERS[kind][1:])
    if kind in ("set", "hash"):
        value = sorted(value)
    ttl = env.redis("PTTL", key)
    # a TTL only runs down: keep whether it has one, and its bound
    return kind, value, ttl < 0, ttl


def assert_unchanged(env, key, before, what):
    kind, value, persistent, ttl = snapshot(env, key)
    assert_eq((kind, value, persistent), before[:3], "%s: type, value and TTL kind" % what)
    assert ttl <= before[3], "%s: TTL grew from %d to %d ms (renewed?)" % (what, before[3], ttl)


def foreign_keys(env):
    keys = {}
    for label, writes in FOREIGN.items():
        key = env.name("app")
        for cmd in writes:
            env.redis(cmd[0], key, *cmd[1:])
        keys[label] = (key, snapshot(env, key))
    return keys


def test_lock_writes_on_application_keys_are_wrongtype_and_change_nothing(env):
    c = env.client()
    assert_eq(c.call("CLIENTID", "alice"), "OK", "CLIENTID alice")
    before = env.info_int("wrong_type_refusals")
    keys = foreign_keys(env)
    for label, (key, snap) in keys.items():
        for cmd in (("LOCK", key, 1), ("LOCK", key, 1, "LEASE", 100000), ("TRYLOCK", key, 1),
                    ("TRYLOCK", key, 1, "WAIT", 200), ("UNLOCK", key, 1), ("FORCEUNLOCK", key)):
            assert_error(c.call(*cmd), "WRONGTYPE", what="%s on %s" % (cmd[0], label))
            assert_unchanged(env, key, snap, "%s after %s" % (label, " ".join(map(str, cmd[:1] + cmd[2:]))))
    assert_eq(env.info_int("wrong_type_refusals") - before, 6 * len(keys), "INFO wrong_type_refusals")
    assert_eq(env.info_int("held_locks"), 0, "holds after the refusals")
    assert_eq(env.info_int("waiting_clients"), 0, "waiters after the refusals")


def test_queries_on_application_keys_read_as_no_lock(env):
    c = env.client()
    c.call("CLIENTID", "alice")
    for label, (key, snap) in foreign_keys(env).items():
        assert_eq(c.call("ISLOCKED", key), 0, "ISLOCKED of %s" % label)
        assert_eq(c.call("ISHELD", key, 1), 0, "ISHELD of %s" % label)
        assert_eq(c.call("HOLDCOUNT", key, 1), 0, "HOLDCOUNT of %s (field alice:1 may exist)" % label)
        assert_eq(c.call("PTTL", key), -2, "PTTL of %s (as for no key)" % label)
        assert_unchanged(env, key, snap, "%s after the queries" % label)


def test_a_lock_replaced_by_application_data_is_lost_not_renewed(env):
    n = env.name("replaced")
    c = env.client()
    lost = env.info_int("locks_lost")
    assert_eq(c.call("LOCK", n, 1), "OK", "LOCK")
    env.redis("DEL", n)
    env.redis("HSET", n, "%s:1" % c.call("CLIENTID"), "1", "balance", "7")
    wait_until(lambda: env.info_int("locks_lost") > lost, 2.0, what="the watchdog finding the lock gone")
    time.sleep(0.5)  # more renewal rounds (every 200 ms): none may touch the hash
    assert_eq(env.redis("PTTL", n), -1, "the application hash still has no TTL")
    assert_eq(env.redis_hash(n).get("balance"), "7", "the application's field")
    assert_error(c.call("UNLOCK", n, 1), "LOCKLOST", what="the holder's UNLOCK is told the lock was lost")
    assert_eq(env.redis("HLEN", n), 2, "the application hash's fields after the UNLOCK")


def test_locks_still_work_and_redisson_shaped_locks_are_locks(env):
    n = env.name("shape")
    a, b = env.client(), env.client()
    # a lock written by a Redisson client: its field and count, with a TTL;
    # then one written by node-redisson, whose owners are "<uuid>:<uuid>"
    for field in ("6f1b2c3d-0000-4000-8000-000000000000:42",
                  "6f1b2c3d-0000-4000-8000-000000000000:0e4cb5f2-9d4c-4b8e-a0d1-1c2b3a4d5e6f"):
        env.redis("HSET", n, field, "2")
        env.redis("PEXPIRE", n, 60000)
        assert_eq(a.call("ISLOCKED", n), 1, "a lock written as %s is locked" % field)
        assert_eq(a.call("TRYLOCK", n, 1), 0, "and is not free")
        assert_eq(a.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK frees it")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK")
    assert_eq(a.call("LOCK", n, 1), "OK", "reentrant LOCK")
    assert_eq(a.call("HOLDCOUNT", n, 1), 2, "HOLDCOUNT")
    assert 0 < a.call("PTTL", n) <= env.watchdog_ms, "PTTL of a held lock"
    assert_eq(b.call("TRYLOCK", n, 1), 0, "another client is refused")
    assert_eq(a.call("UNLOCK", n, 1), 0, "first UNLOCK")
    assert_eq(a.call("UNLOCK", n, 1), 1, "second UNLOCK frees it")
    assert_error(a.call("UNLOCK", n, 1), "NOTOWNER", what="UNLOCK of a free lock is still NOTOWNER")


def test_name_prefix_keeps_locks_apart_from_application_keys():
    with Env({"lock": {"name_prefix": "rlockd:"}}) as env:
        n = env.name("fenced")
        env.redis("SET", n, "application data")
        a, b = env.client(), env.client()
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK of a name the application uses as a key")
        assert_eq(env.redis("TYPE", "rlockd:" + n), "hash", "the lock is at the prefixed key")
        assert_eq(env.redis("GET", n), "application data", "the application's key")
        assert_eq(a.call("ISLOCKED", n), 1, "ISLOCKED reads the prefixed key")
        assert_eq(a.call("HOLDCOUNT", n, 1), 1, "HOLDCOUNT reads the prefixed key")
        sub = env.redis_client()
        channel = channel_for("rlockd:" + n)
        assert_eq(sub.call("SUBSCRIBE", channel)[0], "subscribe", "SUBSCRIBE to the prefixed lock's channel")
        assert_eq(b.call("TRYLOCK", n, 1), 0, "another client is refused")
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
        assert_eq(sub.read_reply(timeout=2), ["message", channel, "0"], "the unlock message on the prefixed channel")
        assert_eq(env.redis("EXISTS", "rlockd:" + n), 0, "the lock's key after UNLOCK")
        assert_eq(env.redis("GET", n), "application data", "the application's key after UNLOCK")


def test_allowed_names_fence_every_lock_command_and_reload_live():
    with Env({"lock": {"allowed_names": "orders:* jobs:?"}}) as env:
        c = env.client()
        assert_eq(c.call("LOCK", "orders:42", 1), "OK", "a name inside the patterns")
        assert_eq(c.call("TRYLOCK", "jobs:7", 1), 1, "a name matching jobs:?")
        before = env.info_int("noperm_replies")
        for cmd in (("LOCK", "app:config", 1), ("TRYLOCK", "jobs:77", 1), ("UNLOCK", "app:config", 1),
                    ("FORCEUNLOCK", "app:config"), ("ISLOCKED", "app:config"), ("ISHELD", "app:config", 1),
                    ("HOLDCOUNT", "app:config", 1), ("PTTL", "app:config")):
            assert_error(c.call(*cmd), "NOPERM", "allowed_names", what="%s outside the patterns" % cmd[0])
        assert_eq(env.info_int("noperm_replies") - before, 8, "INFO noperm_replies")
        assert_eq(env.redis("EXISTS", "app:config", "jobs:77"), 0, "no key written for a refused name")
        assert_eq(c.call("UNLOCK", "orders:42", 1), 1, "UNLOCK inside the patterns")
        env.rlockd.rewrite_config({"lock": {"allowed_names": "app:*"}})
        env.rlockd.signal(signal.SIGHUP)
        env.rlockd.wait_log("allowed_names")
        assert_eq(c.call("TRYLOCK", "app:config", 1), 1, "a name the reloaded patterns allow")
        assert_error(c.call("TRYLOCK", "orders:43", 1), "NOPERM", what="a name they no longer allow")
        assert_eq(c.call("UNLOCK", "app:config", 1), 1, "UNLOCK")
