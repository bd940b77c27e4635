"""FAIR, READ/WRITE and FENCED locks: what rlockd writes to Redis for each, and
each against a "Java" Redisson client played by this test with Redisson's own
scripts (Redisson's redisson/src/main/java/org/redisson/RedissonFairLock.java,
RedissonReadLock.java, RedissonWriteLock.java and RedissonFencedLock.java), sent
with EVAL. The scripts below are Redisson's, not rlockd's."""

import re
import signal
import time
import uuid

from harness import Env, RespClient, assert_eq, assert_error, holds_for, wait_until

CONFIG = {"lock": {"watchdog_timeout_ms": 3000}}

# ---- Redisson's scripts (the reference, verbatim) ----------------------------

FAIR_ACQUIRE = (  # RedissonFairLock.java:155; KEYS name, queue, timeout; ARGV lease, field, wait, now
    "while true do "
    "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);"
    "if firstThreadId2 == false then "
    "break;"
    "end;"
    "local timeout = redis.call('zscore', KEYS[3], firstThreadId2);"
    "if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then "
    "redis.call('zrem', KEYS[3], firstThreadId2);"
    "redis.call('lpop', KEYS[2]);"
    "else "
    "break;"
    "end;"
    "end;"
    "if (redis.call('exists', KEYS[1]) == 0) "
    "and ((redis.call('exists', KEYS[2]) == 0) "
    "or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then "
    "redis.call('lpop', KEYS[2]);"
    "redis.call('zrem', KEYS[3], ARGV[2]);"
    "local keys = redis.call('zrange', KEYS[3], 0, -1);"
    "for i = 1, #keys, 1 do "
    "redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);"
    "end;"
    "redis.call('hset', KEYS[1], ARGV[2], 1);"
    "redis.call('pexpire', KEYS[1], ARGV[1]);"
    "return nil;"
    "end;"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
    "redis.call('hincrby', KEYS[1], ARGV[2],1);"
    "redis.call('pexpire', KEYS[1], ARGV[1]);"
    "return nil;"
    "end;"
    "local timeout = redis.call('zscore', KEYS[3], ARGV[2]);"
    "if timeout ~= false then "
    "local ttl = redis.call('pttl', KEYS[1]);"
    "return math.max(0, ttl); "
    "end;"
    "local lastThreadId = redis.call('lindex', KEYS[2], -1);"
    "local ttl;"
    "if lastThreadId ~= false and lastThreadId ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then "
    "ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);"
    "else "
    "ttl = redis.call('pttl', KEYS[1]);"
    "end;"
    "local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);"
    "if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then "
    "redis.call('rpush', KEYS[2], ARGV[2]);"
    "end;"
    "return ttl;")

FAIR_UNLOCK = (  # RedissonFairLock.java:237; KEYS name, queue, timeout, channel, latch;
    # ARGV "0", lease, field, now, <pub>, latchTtl
    "local val = redis.call('get', KEYS[5]); "
    "if val ~= false then "
    "return tonumber(val);"
    "end; "
    "while true do "
    "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);"
    "if firstThreadId2 == false then "
    "break;"
    "end; "
    "local timeout = redis.call('zscore', KEYS[3], firstThreadId2);"
    "if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then "
    "redis.call('zrem', KEYS[3], firstThreadId2); "
    "redis.call('lpop', KEYS[2]); "
    "else "
    "break;"
    "end; "
    "end;"
    "if (redis.call('exists', KEYS[1]) == 0) then "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
    "redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "redis.call('set', KEYS[5], 1, 'px', ARGV[6]); "
    "return 1; "
    "end;"
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "redis.call('set', KEYS[5], 0, 'px', ARGV[6]); "
    "return 0; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "redis.call('set', KEYS[5], 1, 'px', ARGV[6]); "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
    "redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "return 1; ")

READ_ACQUIRE = (  # RedissonReadLock.java:58; KEYS name, "{name}:<field>:rwlock_timeout"; ARGV lease, field, writefield
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call('hset', KEYS[1], 'mode', 'read'); "
    "redis.call('hset', KEYS[1], ARGV[2], 1); "
    "redis.call('set', KEYS[2] .. ':1', 1); "
    "redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then "
    "local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "local key = KEYS[2] .. ':' .. ind;"
    "redis.call('set', key, 1); "
    "redis.call('pexpire', key, ARGV[1]); "
    "local remainTime = redis.call('pttl', KEYS[1]); "
    "redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); "
    "return nil; "
    "end;"
    "return redis.call('pttl', KEYS[1]);")

WRITE_ACQUIRE = (  # RedissonWriteLock.java:56; KEYS name; ARGV lease, "<field>:write"
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call('hset', KEYS[1], 'mode', 'write'); "
    "redis.call('hset', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "if (mode == 'write') then "
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "local currentExpire = redis.call('pttl', KEYS[1]); "
    "redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); "
    "return nil; "
    "end; "
    "end;"
    "return redis.call('pttl', KEYS[1]);")

WRITE_UNLOCK = (  # RedissonWriteLock.java:79; KEYS name, channel, latch; ARGV "1", lease, field, <pub>, latchTtl
    "local val = redis.call('get', KEYS[3]); "
    "if val ~= false then "
    "return tonumber(val);"
    "end; "
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); "
    "return nil; "
    "end;"
    "if (mode == 'write') then "
    "local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); "
    "if (lockExists == 0) then "
    "return nil;"
    "else "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
    "return 0; "
    "else "
    "redis.call('hdel', KEYS[1], ARGV[3]); "
    "if (redis.call('hlen', KEYS[1]) == 1) then "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "else "
    "redis.call('hset', KEYS[1], 'mode', 'read'); "
    "end; "
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); "
    "return 1; "
    "end; "
    "end; "
    "end; "
    "return nil;")

FENCED_ACQUIRE = (  # RedissonFencedLock.java:108; KEYS name, token; ARGV lease, field
    "if (redis.call('exists', KEYS[1]) == 0 "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "local token = redis.call('incr', KEYS[2]);"
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return {-1, token}; "
    "end; "
    "return {redis.call('pttl', KEYS[1]), -1};")

JAVA_LEASE_MS = 30000


def tagged(prefix, name):
    """Redisson's prefixName: prefix:{name}, or prefix:name when name has a tag."""
    return "%s:%s" % (prefix, name) if "{" in name else "%s:{%s}" % (prefix, name)


def java_field():
    return "%s:1" % uuid.uuid4()


def now_ms():
    return int(time.time() * 1000)


# ---- FENCED -----------------------------------------------------------------


def test_fenced_tokens_keep_rising_after_redis_loses_its_counter():
    """Issue 27, item 7: after Redis lost its data, FENCED tokens started again at 1,
    silently. The rlockd that handed them out raises the counter above its highest
    before it answers, and says so."""
    with Env(CONFIG) as env:  # its own Redis: FLUSHALL is the data loss
        n = env.name("fenced")
        a = env.client()
        handed_out = []
        for _ in range(3):
            handed_out.append(a.call("LOCK", n, 1, "FENCED"))
            assert_eq(a.call("UNLOCK", n, 1, "FENCED"), 1, "UNLOCK")
        assert_eq(handed_out, [1, 2, 3], "tokens before the loss")
        env.redis("FLUSHALL")
        token = a.call("LOCK", n, 1, "FENCED")
        assert isinstance(token, int) and token > max(handed_out), \
            "token after the loss %r, handed out before %r" % (token, handed_out)
        env.rlockd.wait_log(r"WARN.*fencing token of '%s': Redis's counter was 0, behind 3 " % re.escape(n))
        assert_eq(env.info_int("fence_tokens_raised"), 1, "INFO fence_tokens_raised")
        assert_eq(int(env.redis("GET", tagged("redisson_lock_token", n))), token, "the counter in Redis")
        assert_eq(a.call("UNLOCK", n, 1, "FENCED"), 1, "UNLOCK")
        assert_eq(a.call("LOCK", n, 1, "FENCED"), token + 1, "the next token, the counter not behind")
        assert_eq(env.info_int("fence_tokens_raised"), 1, "counted once")


def test_fenced_tokens_rise_across_daemons_and_java(env):
    n = env.name("fenced")
    other = env.client_of(env.second_rlockd())
    a = env.client()
    cid = a.call("CLIENTID")
    assert_eq(a.call("TOKEN", n), 0, "TOKEN of a lock never taken")
    t1 = a.call("LOCK", n, 1, "FENCED")
    assert_eq(t1, 1, "first FENCED LOCK answers token 1")
    assert_eq(env.redis_hash(n), {"%s:1" % cid: "1"}, "the lock hash is RLock's")
    assert_eq(env.redis("GET", tagged("redisson_lock_token", n)), "1", "the token counter")
    assert_eq(env.redis("PTTL", tagged("redisson_lock_token", n)), -1, "the token has no TTL (as Redisson)")
    t2 = a.call("LOCK", n, 1, "FENCED")
    assert_eq(t2, 2, "a reentrant acquire takes a new token (as Redisson)")
    assert_eq(other.call("TRYLOCK", n, 7, "FENCED"), 0, "TRYLOCK FENCED of a held lock on the other daemon")
    assert_eq(a.call("UNLOCK", n, 1, "FENCED"), 0, "UNLOCK leaving one hold")
    assert_eq(a.call("UNLOCK", n, 1, "FENCED"), 1, "last UNLOCK")
    assert_eq(env.redis("EXISTS", n), 0, "lock key after the last UNLOCK")
    jf = java_field()
    assert_eq(env.redis("EVAL", FENCED_ACQUIRE, 2, n, tagged("redisson_lock_token", n), JAVA_LEASE_MS, jf),
              [-1, 3], "Java lockAndGetToken after rlockd's")
    w = env.client_of(env.extra[0])
    w.send("TRYLOCK", n, 8, "WAIT", 5000, "FENCED")
    env.wait_waiting(1, daemon=env.extra[0], what="the TRYLOCK FENCED queued on the second rlockd")
    channel = tagged("redisson_lock__channel", n)
    wait_until(lambda: env.redis("PUBSUB", "NUMSUB", channel)[1] >= 1, 5.0, what="a listener on %s" % channel)
    # the Java holder frees with RLock's unlock: "0" on RLock's channel wakes rlockd
    assert_eq(env.redis("EVAL", "redis.call('del', KEYS[1]); return redis.call('publish', KEYS[2], '0')", 2, n,
                        tagged("redisson_lock__channel", n)) >= 1, True, "a waiter listens on RLock's channel")
    assert_eq(w.read_reply(2.0), 4, "the waiting TRYLOCK FENCED on the second rlockd: token 4")
    assert_eq(a.call("TOKEN", n), 4, "TOKEN answers the latest token")
    assert_eq(env.info_int("fenced_locks_acquired"), 2, "INFO fenced_locks_acquired of the first rlockd")


def test_fenced_and_plain_lock_exclude_each_other(env):
    n = env.name("fenced")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "plain LOCK")
    assert_eq(b.call("TRYLOCK", n, 1, "FENCED"), 0, "TRYLOCK FENCED of a plain lock held by another")
    assert_eq(a.call("UNLOCK", n, 1), 1, "plain UNLOCK")
    assert_eq(b.call("TRYLOCK", n, 1, "FENCED"), 1, "TRYLOCK FENCED once free: token 1")


def test_an_owner_names_the_kind_it_holds_a_name_as(env):
    n = env.name("mixed")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "FAIR"), "OK", "FAIR LOCK")
    assert_error(a.call("UNLOCK", n, 1), "ERR", "name that kind", what="plain UNLOCK of a FAIR hold")
    assert_error(a.call("TRYLOCK", n, 1, "FENCED"), "ERR", "name that kind", what="FENCED TRYLOCK of a FAIR hold")
    assert_eq(env.redis("HGETALL", n), [a.call("CLIENTID") + ":1", "1"], "the FAIR hold untouched in Redis")
    assert_eq(a.call("UNLOCK", n, 1, "FAIR"), 1, "UNLOCK FAIR")
    assert_eq(a.call("LOCK", n, 1), "OK", "a plain LOCK once the FAIR hold is gone")


def test_token_of_an_application_key_reveals_nothing(env):
    n = env.name("fenced")
    env.redis("SET", tagged("redisson_lock_token", n), "not a number")
    a = env.client()
    assert_eq(a.call("TOKEN", n), 0, "TOKEN over a key that is not a token")
    assert_error(a.call("LOCK", n, 1, "FENCED"), "WRONGTYPE", what="FENCED LOCK over a foreign token key")
    assert_eq(env.redis("GET", tagged("redisson_lock_token", n)), "not a number", "the key was left alone")
    assert_eq(env.redis("EXISTS", n), 0, "no lock was taken")


# ---- READ / WRITE -----------------------------------------------------------


def test_readers_share_and_a_writer_excludes_them(env):
    n = env.name("rw")
    a, b, w = env.client(), env.client(), env.client()
    ca, cb = a.call("CLIENTID"), b.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1, "READ"), "OK", "first READ")
    assert_eq(b.call("TRYLOCK", n, 2, "READ", "LEASE", 20000), 1, "second READ (shared), with a lease")
    assert_eq(a.call("LOCK", n, 1, "READ"), "OK", "reentrant READ")
    assert_eq(env.redis_hash(n), {"mode": "read", "%s:1" % ca: "2", "%s:2" % cb: "1"}, "HGETALL of the rwlock")
    for field, count in (("%s:1" % ca, 2), ("%s:2" % cb, 1)):
        for i in range(1, count + 1):
            key = "%s:%s:rwlock_timeout:%d" % ("{%s}" % n, field, i)
            assert env.redis("PTTL", key) > 0, "read hold timeout key %s has no TTL" % key
    assert env.redis("PTTL", n) > 10000, "the hash lives as long as its longest read hold"
    assert_eq(w.call("TRYLOCK", n, 9, "WRITE"), 0, "TRYLOCK WRITE while read")
    assert_eq(a.call("ISLOCKED", n, "READ"), 1, "ISLOCKED READ")
    assert_eq(a.call("ISLOCKED", n, "WRITE"), 0, "ISLOCKED WRITE while read")
    assert_eq(a.call("HOLDCOUNT", n, 1, "READ"), 2, "HOLDCOUNT READ")
    assert_eq(a.call("UNLOCK", n, 1, "READ"), 0, "UNLOCK READ leaving one")
    assert_eq(env.redis("EXISTS", "{%s}:%s:1:rwlock_timeout:2" % (n, ca)), 0, "timeout key of the hold released")
    assert_eq(a.call("UNLOCK", n, 1, "READ"), 1, "last READ of a")
    assert_eq(env.redis_hash(n), {"mode": "read", "%s:2" % cb: "1"}, "b still reads")
    w.send("LOCK", n, 9, "WRITE")
    w.expect_no_reply(0.3, "WRITE while b reads")
    assert_eq(b.call("UNLOCK", n, 2, "READ"), 1, "b's UNLOCK READ")
    assert_eq(w.read_reply(2.0), "OK", "the WRITE waiter once the readers left")
    cw = w.call("CLIENTID")
    assert_eq(env.redis_hash(n), {"mode": "write", "%s:9:write" % cw: "1"}, "HGETALL while written")
    assert_eq(a.call("TRYLOCK", n, 1, "READ"), 0, "READ while written by another")
    assert_eq(w.call("UNLOCK", n, 9, "WRITE"), 1, "UNLOCK WRITE")
    assert_eq(env.redis("EXISTS", n), 0, "the rwlock after its last hold")


def test_write_downgrades_to_read_and_read_is_never_upgraded(env):
    n = env.name("rw")
    a, b = env.client(), env.client()
    ca = a.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1, "WRITE"), "OK", "WRITE")
    assert_eq(a.call("LOCK", n, 1, "READ"), "OK", "READ by the writer (downgrade)")
    assert_eq(b.call("TRYLOCK", n, 2, "READ"), 0, "another's READ while written")
    assert_eq(a.call("UNLOCK", n, 1, "WRITE"), 1, "UNLOCK WRITE")
    assert_eq(env.redis_hash(n), {"mode": "read", "%s:1" % ca: "1"}, "downgraded to read")
    assert_eq(b.call("TRYLOCK", n, 2, "READ"), 1, "another's READ after the downgrade")
    r = a.call("LOCK", n, 1, "WRITE")
    assert_error(r, "ERR", "never upgraded", what="WRITE by a reader")
    assert_eq(a.call("HOLDCOUNT", n, 1, "READ"), 1, "the read hold is untouched")


def test_plain_lock_over_an_rwlock_is_a_clash_naming_the_holders_kind(env):
    n = env.name("rw")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "READ"), "OK", "READ")
    assert_error(env.client().call("TRYLOCK", n, 2, "WAIT", 100), "WRONGTYPE", "held as a read-write lock",
                 what="plain TRYLOCK over a read-write lock")
    env.redis("DEL", n)
    env.redis("HSET", n, "x:1", "1")
    env.redis("PEXPIRE", n, 5000)
    assert_error(a.call("TRYLOCK", n, 3, "WRITE"), "WRONGTYPE", "held as a plain lock",
                 what="WRITE over an RLock (Redisson treats it free)")
    assert_eq(env.redis_hash(n), {"x:1": "1"}, "the RLock was left alone")
    env.redis("DEL", n)
    env.redis("SET", n, "application data")
    assert_error(a.call("TRYLOCK", n, 4, "WRITE"), "WRONGTYPE", "not a lock", what="WRITE over a string")
    assert_error(a.call("TRYLOCK", n, 4), "WRONGTYPE", "not a lock", what="LOCK over a string")


def test_queries_without_a_kind_word_report_any_kind_with_its_kind(env):
    n = env.name("anykind")
    a, b = env.client(), env.client()
    cid = a.call("CLIENTID")
    assert_eq(b.call("OWNERS", n), [-2, [], "none"], "OWNERS of a free name")
    assert_eq(a.call("LOCK", n, 1, "WRITE"), "OK", "WRITE")
    assert_eq(b.call("ISLOCKED", n), 1, "ISLOCKED without a kind word of a write lock")
    pttl = b.call("PTTL", n)
    assert 0 < pttl <= env.watchdog_ms, "PTTL without a kind word of a write lock: %r" % pttl
    assert_eq(a.call("HOLDCOUNT", n, 1, "WRITE"), 1, "HOLDCOUNT ... WRITE")
    assert_eq((a.call("HOLDCOUNT", n, 1), a.call("ISHELD", n, 1)), (1, 1),
              "HOLDCOUNT and ISHELD without a kind word of the writer's own hold")
    assert_eq(b.call("HOLDCOUNT", n, 1), 0, "HOLDCOUNT of another client's hold")
    r = b.call("OWNERS", n)
    assert_eq((r[1], r[2]), (["%s:1:write" % cid, 1], "write"), "OWNERS without a kind word: owner, kind")
    assert 0 < r[0] <= env.watchdog_ms, "OWNERS' PTTL of a write lock: %r" % r
    assert_eq(b.call("OWNERS", n, "READ")[2], "write", "OWNERS ... READ names the mode too")
    assert_eq(a.call("UNLOCK", n, 1, "WRITE"), 1, "UNLOCK ... WRITE")
    assert_eq(a.call("LOCK", n, 2, "READ"), "OK", "READ")
    assert_eq(b.call("OWNERS", n)[1:], [["%s:2" % cid, 1], "read"], "OWNERS of a read lock")
    assert_eq(a.call("UNLOCK", n, 2, "READ"), 1, "UNLOCK ... READ")
    assert_eq(a.call("LOCK", n, 3), "OK", "plain LOCK")
    assert_eq(b.call("OWNERS", n)[1:], [["%s:3" % cid, 1], "lock"], "OWNERS of a plain lock")
    assert_eq(b.call("OWNERS", n, "WRITE"), [-2, [], "none"], "OWNERS ... WRITE of a plain lock")
    assert_eq(a.call("UNLOCK", n, 3), 1, "UNLOCK")
    # another program's data is still no lock
    env.redis("HSET", n, "mode", "read", "f", "x")
    assert_eq((b.call("ISLOCKED", n), b.call("PTTL", n), b.call("OWNERS", n)), (0, -2, [-2, [], "none"]),
              "queries of a hash that is not a lock")


def test_java_write_unlock_wakes_every_rlockd_reader(env):
    n = env.name("rw")
    jf = java_field() + ":write"
    assert_eq(env.redis("EVAL", WRITE_ACQUIRE, 1, n, JAVA_LEASE_MS, jf), None, "Java write lock")
    readers = [env.client() for _ in range(3)]
    for i, r in enumerate(readers):
        r.send("LOCK", n, i + 1, "READ")
    env.wait_waiting(3, what="three READs waiting behind the Java writer")
    t0 = time.monotonic()
    assert_eq(env.redis("EVAL", WRITE_UNLOCK, 3, n, tagged("redisson_rwlock", n), "latch:" + n, "1", JAVA_LEASE_MS,
                        jf, "publish", 1000), 1, "Java write unlock (publishes 1)")
    for i, r in enumerate(readers):
        assert_eq(r.read_reply(2.0), "OK", "reader %d woken by the Java writer's 1" % i)
    assert time.monotonic() - t0 < 1.5, "readers were not woken by the message"
    # and a Java reader shares the lock with them
    jr = java_field()
    assert_eq(env.redis("EVAL", READ_ACQUIRE, 2, n, "{%s}:%s:rwlock_timeout" % (n, jr), JAVA_LEASE_MS, jr,
                        jr + ":write"), None, "Java read lock alongside rlockd's readers")


def test_rlockd_write_unlock_sends_1_to_java_waiters(env):
    n = env.name("rw")
    sub = env.redis_client()
    ch = tagged("redisson_rwlock", n)
    assert_eq(sub.call("SUBSCRIBE", ch), ["subscribe", ch, 1], "SUBSCRIBE")
    a = env.client()
    a.call("LOCK", n, 1, "WRITE")
    assert_eq(a.call("UNLOCK", n, 1, "WRITE"), 1, "UNLOCK WRITE")
    assert_eq(sub.read_reply(1.0), ["message", ch, "1"], "a write unlock sends 1")
    a.call("LOCK", n, 1, "READ")
    assert_eq(a.call("UNLOCK", n, 1, "READ"), 1, "UNLOCK READ")
    assert_eq(sub.read_reply(1.0), ["message", ch, "0"], "the last read unlock sends 0")


def test_a_waiting_writer_is_not_overtaken_by_later_readers(env):
    n = env.name("rw")
    r1, w, r2 = env.client(), env.client(), env.client()
    assert_eq(r1.call("LOCK", n, 1, "READ"), "OK", "first reader")
    w.send("LOCK", n, 2, "WRITE")
    env.wait_waiting(1, what="the writer waiting")
    r2.send("LOCK", n, 3, "READ")
    env.wait_waiting(2, what="the later reader waiting behind the writer")
    r2.expect_no_reply(0.3, "a READ that came after a waiting WRITE")
    assert_eq(r1.call("UNLOCK", n, 1, "READ"), 1, "first reader leaves")
    assert_eq(w.read_reply(2.0), "OK", "the writer goes first")
    r2.expect_no_reply(0.3, "the later reader while the writer holds")
    assert_eq(w.call("UNLOCK", n, 2, "WRITE"), 1, "the writer leaves")
    assert_eq(r2.read_reply(2.0), "OK", "then the later reader")


def test_read_holds_are_renewed_by_the_watchdog(env):
    n = env.name("rw")
    a = env.client()
    cid = a.call("CLIENTID")
    a.call("LOCK", n, 1, "READ")
    a.call("LOCK", n, 1, "READ")
    time.sleep(env.watchdog_ms * 2 / 1000.0)
    for i in (1, 2):
        key = "{%s}:%s:1:rwlock_timeout:%d" % (n, cid, i)
        assert env.redis("PTTL", key) > 0, "read hold %d's timeout key expired under the watchdog" % i
    assert_eq(a.call("HOLDCOUNT", n, 1, "READ"), 2, "still held after two watchdog timeouts")


def test_a_read_hold_is_released_when_its_client_goes(env):
    n = env.name("rw")
    a, w = env.client(), env.client()
    a.call("LOCK", n, 1, "READ")
    w.send("LOCK", n, 2, "WRITE")
    env.wait_waiting(1, what="the writer waiting")
    a.close()
    assert_eq(w.read_reply(2.0), "OK", "the writer once the reader's connection closed")


# ---- FAIR -------------------------------------------------------------------


def queue(env, n):
    return env.redis("LRANGE", tagged("redisson_lock_queue", n), 0, -1)


def test_fair_waiters_are_queued_in_redis_and_served_in_order(env):
    n = env.name("fair")
    other = env.second_rlockd()
    holder = env.client()
    assert_eq(holder.call("LOCK", n, 1, "FAIR"), "OK", "FAIR LOCK")
    order = []
    waiters = []
    for i in range(10):
        c = env.client() if i % 2 == 0 else env.client_of(other)
        cid = c.call("CLIENTID")
        c.send("LOCK", n, 100 + i, "FAIR")
        field = "%s:%d" % (cid, 100 + i)
        wait_until(lambda: field in queue(env, n), 3.0, what="waiter %d in the queue" % i)
        waiters.append(c)
        order.append(field)
        if i == 4:  # a Java waiter in the middle
            jf = java_field()
            ttl = env.redis("EVAL", FAIR_ACQUIRE, 3, n, tagged("redisson_lock_queue", n),
                            tagged("redisson_lock_timeout", n), JAVA_LEASE_MS, jf, 300000, now_ms())
            assert isinstance(ttl, int) and ttl > 0, "Java fair acquire while held: %r" % (ttl,)
            order.append(jf)
    assert_eq(queue(env, n), order, "the queue in Redis, in arrival order")
    timeouts = tagged("redisson_lock_timeout", n)
    assert_eq(sorted(env.redis("ZRANGE", timeouts, 0, -1)), sorted(order), "every waiter has a deadline")
    limit = int(env.redis("TIME")[0]) * 1000 + env.watchdog_ms + 1000
    for i, field in enumerate(order):  # rlockd's run out within watchdog_timeout_ms unless renewed (issue 27),
        if field != jf:  # plus a wait for each place ahead that runs out later (the Java one, and those behind it)
            allowed = limit + 300000 * max(0, i - order.index(jf))
            assert int(env.redis("ZSCORE", timeouts, field)) <= allowed, "rlockd's place %s" % field
    assert int(env.redis("ZSCORE", timeouts, jf)) >= int(env.redis("ZSCORE", timeouts, order[4])) + 300000, \
        "the Java place chained on the one before it, as Redisson does"
    jsub = env.redis_client()
    jch = tagged("redisson_lock__channel", n) + ":" + jf
    jsub.call("SUBSCRIBE", jch)
    assert_eq(holder.call("UNLOCK", n, 1, "FAIR"), 1, "holder's UNLOCK")
    served = []
    pending = list(range(10))
    while len(served) < 11:
        if len(served) == 5:   # the Java waiter's turn: it is told on its own channel
            assert_eq(jsub.read_reply(3.0), ["message", jch, "0"], "the Java waiter signalled on its channel")
            assert_eq(env.redis("EVAL", FAIR_ACQUIRE, 3, n, tagged("redisson_lock_queue", n),
                                tagged("redisson_lock_timeout", n), JAVA_LEASE_MS, jf, 300000, now_ms()),
                      None, "Java fair acquire at its turn")
            for i in pending:
                assert not waiters[i].reply_ready(0.05), "waiter %d served while the Java waiter holds" % i
            assert_eq(env.redis("EVAL", FAIR_UNLOCK, 5, n, tagged("redisson_lock_queue", n),
                                tagged("redisson_lock_timeout", n), tagged("redisson_lock__channel", n),
                                "latch:" + n, 0, JAVA_LEASE_MS, jf, now_ms(), "publish", 1000),
                      1, "Java fair unlock")
            served.append(jf)
            continue
        i = pending.pop(0)
        assert_eq(waiters[i].read_reply(3.0), "OK", "waiter %d (position %d)" % (i, len(served)))
        for j in pending:
            assert not waiters[j].reply_ready(0.02), "waiter %d served before waiter %d" % (j, i)
        served.append(i)
        assert_eq(waiters[i].call("UNLOCK", n, 100 + i, "FAIR"), 1, "waiter %d's UNLOCK" % i)
    assert_eq(queue(env, n), [], "the queue once everyone was served")
    assert_eq(env.redis("EXISTS", tagged("redisson_lock_timeout", n)), 0, "the deadlines once everyone was served")


def test_a_fair_waiter_that_leaves_leaves_no_queue_entry(env):
    n = env.name("fair")
    holder, gone, timed = env.client(), env.client(), env.client()
    holder.call("LOCK", n, 1, "FAIR")
    gone.send("LOCK", n, 2, "FAIR")
    timed.send("TRYLOCK", n, 3, "FAIR", "WAIT", 300)
    wait_until(lambda: len(queue(env, n)) == 2, 3.0, what="two waiters queued in Redis")
    gone.close()
    assert_eq(timed.read_reply(2.0), 0, "TRYLOCK FAIR WAIT 300 ran out")
    wait_until(lambda: queue(env, n) == [], 2.0, what="both waiters out of the queue")
    assert_eq(env.redis("EXISTS", tagged("redisson_lock_timeout", n)), 0, "no deadline left behind")
    assert_eq(holder.call("UNLOCK", n, 1, "FAIR"), 1, "UNLOCK")
    assert_eq(env.client().call("TRYLOCK", n, 4, "FAIR"), 1, "the lock is free for the next comer at once")


def test_trylock_fair_without_wait_does_not_queue(env):
    n = env.name("fair")
    a, b = env.client(), env.client()
    a.call("LOCK", n, 1, "FAIR")
    assert_eq(b.call("TRYLOCK", n, 2, "FAIR"), 0, "TRYLOCK FAIR of a held lock")
    assert_eq(queue(env, n), [], "a TRYLOCK that does not wait takes no place in the queue")


def test_fair_lock_respects_a_java_waiter_ahead(env):
    n = env.name("fair")
    jh, jw = java_field(), java_field()
    args = (3, n, tagged("redisson_lock_queue", n), tagged("redisson_lock_timeout", n), JAVA_LEASE_MS)
    assert_eq(env.redis("EVAL", FAIR_ACQUIRE, *args, jh, 300000, now_ms()), None, "Java holder")
    assert env.redis("EVAL", FAIR_ACQUIRE, *args, jw, 300000, now_ms()) > 0, "Java waiter queued"
    env.redis("DEL", n)  # the holder's lease ran out: free, but the Java waiter is next
    c = env.client()
    assert_eq(c.call("TRYLOCK", n, 1, "FAIR", "WAIT", 300), 0, "rlockd may not pass the Java waiter ahead")
    assert_eq(env.redis("EVAL", FAIR_ACQUIRE, *args, jw, 300000, now_ms()), None, "the Java waiter's turn")
    assert_eq(c.call("TRYLOCK", n, 1, "FAIR"), 0, "held by the Java waiter")


def test_fair_places_of_a_killed_rlockd_run_out_within_the_watchdog_timeout(env):
    """Issue 27, item 3: 3 FAIR waiters of an rlockd SIGKILLed held the lock up for
    3 x fair_wait_timeout_ms (here 300,000 ms each); their places now run out within
    watchdog_timeout_ms of the kill, as their holds would."""
    n = env.name("fair")
    holder = env.client()
    assert_eq(holder.call("LOCK", n, 1, "FAIR"), "OK", "FAIR LOCK")
    doomed = env.second_rlockd()
    for i in range(3):
        env.client_of(doomed).send("LOCK", n, 10 + i, "FAIR")
        wait_until(lambda: len(queue(env, n)) == i + 1, 3.0, what="waiter %d in the queue" % i)
    doomed.signal(signal.SIGKILL)
    doomed.wait_exit(5.0)
    env.extra.remove(doomed)  # dead on purpose
    assert_eq(holder.call("UNLOCK", n, 1, "FAIR"), 1, "the holder's UNLOCK: free, 3 dead places queued")
    newcomer = env.client()
    # generous (4 x watchdog_timeout_ms), and far below 3 x fair_wait_timeout_ms
    wait_until(lambda: newcomer.call("TRYLOCK", n, 99, "FAIR") == 1, 4 * env.watchdog_ms / 1000.0,
               interval=0.1, what="a FAIR TRYLOCK past the killed rlockd's places")
    assert_eq(queue(env, n), [], "the dead places are gone")
    assert_eq(newcomer.call("UNLOCK", n, 99, "FAIR"), 1, "UNLOCK")


def test_a_java_waiter_behind_rlockd_waiters_keeps_its_turn(env):
    """rlockd's places are moved forward while they wait; a Java place chained on them
    (Redisson: the last place's deadline plus the Java waiter's threadWaitTime) moves
    with them, so it has not run out when its turn comes, long after its first deadline."""
    n = env.name("fair")
    keys = (3, n, tagged("redisson_lock_queue", n), tagged("redisson_lock_timeout", n))
    holder, r1, r2 = env.client(), env.client(), env.client()
    assert_eq(holder.call("LOCK", n, 1, "FAIR"), "OK", "FAIR LOCK")
    for i, c in enumerate((r1, r2)):
        c.send("LOCK", n, 10 + i, "FAIR")
        wait_until(lambda: len(queue(env, n)) == i + 1, 3.0, what="rlockd waiter %d in the queue" % i)
    jf, java_wait = java_field(), 2000
    assert env.redis("EVAL", FAIR_ACQUIRE, *keys, JAVA_LEASE_MS, jf, java_wait, now_ms()) > 0, "Java waiter queued"
    first_deadline = int(env.redis("ZSCORE", tagged("redisson_lock_timeout", n), jf))
    jsub = env.redis_client()
    jch = tagged("redisson_lock__channel", n) + ":" + jf
    jsub.call("SUBSCRIBE", jch)
    wait_until(lambda: int(env.redis("TIME")[0]) * 1000 > first_deadline + 1000,
               (env.watchdog_ms + java_wait) / 1000.0 + 5.0,
               interval=0.1, what="the Java place's first deadline to pass")
    assert int(env.redis("ZSCORE", tagged("redisson_lock_timeout", n), jf)) > first_deadline, \
        "the Java place moved with the rlockd places ahead of it"
    assert_eq(holder.call("UNLOCK", n, 1, "FAIR"), 1, "the holder's UNLOCK")
    for i, c in enumerate((r1, r2)):
        assert_eq(c.read_reply(3.0), "OK", "rlockd waiter %d's turn" % i)
        assert_eq(c.call("UNLOCK", n, 10 + i, "FAIR"), 1, "rlockd waiter %d's UNLOCK" % i)
    assert_eq(jsub.read_reply(3.0), ["message", jch, "0"], "the Java waiter told it is its turn")
    assert_eq(env.redis("EVAL", FAIR_ACQUIRE, *keys, JAVA_LEASE_MS, jf, java_wait, now_ms()), None,
              "the Java waiter takes the lock at its turn")
    assert_eq(env.redis("DEL", n), 1, "the Java holder done")


def test_a_java_grant_ahead_leaves_rlockd_waiters_their_places(env):
    """A Java grant moves every place one threadWaitTime nearer (Redisson's rule); an
    rlockd place behind a Java one is kept that much further ahead, so the grant does not
    put it in the past, where the Java waiter's unlock would drop it."""
    n = env.name("fair")
    keys = (3, n, tagged("redisson_lock_queue", n), tagged("redisson_lock_timeout", n))
    jh, jw = java_field(), java_field()
    assert_eq(env.redis("EVAL", FAIR_ACQUIRE, *keys, JAVA_LEASE_MS, jh, 300000, now_ms()), None, "Java holder")
    assert env.redis("EVAL", FAIR_ACQUIRE, *keys, JAVA_LEASE_MS, jw, 300000, now_ms()) > 0, "Java waiter queued"
    r1, r2 = env.client(), env.client()
    fields = ["%s:%d" % (c.call("CLIENTID"), 10 + i) for i, c in enumerate((r1, r2))]
    for i, c in enumerate((r1, r2)):
        c.send("LOCK", n, 10 + i, "FAIR")
        wait_until(lambda: len(queue(env, n)) == i + 2, 3.0, what="rlockd waiter %d queued" % i)
    renewed = env.info_int("fair_place_renewals")
    wait_until(lambda: env.info_int("fair_place_renewals") >= renewed + 2, 3.0 * env.watchdog_ms / 1000.0,
               what="a renewal of both places")
    def fair_unlock(field):  # each unlock its own request id, as Redisson's
        return env.redis("EVAL", FAIR_UNLOCK, 5, n, tagged("redisson_lock_queue", n),
                         tagged("redisson_lock_timeout", n), tagged("redisson_lock__channel", n),
                         "latch:" + field, 0, JAVA_LEASE_MS, field, now_ms(), "publish", 1000)
    assert_eq(fair_unlock(jh), 1, "Java holder's unlock")
    assert_eq(env.redis("EVAL", FAIR_ACQUIRE, *keys, JAVA_LEASE_MS, jw, 300000, now_ms()), None,
              "the Java waiter's grant")
    now = int(env.redis("TIME")[0]) * 1000
    for i, field in enumerate(fields):
        place = env.redis("ZSCORE", tagged("redisson_lock_timeout", n), field)
        assert place is not None and int(place) > now, "rlockd waiter %d's place %r, now %d" % (i, place, now)
    assert_eq(fair_unlock(jw), 1, "Java waiter's unlock")
    for i, c in enumerate((r1, r2)):
        assert_eq(c.read_reply(3.0), "OK", "rlockd waiter %d's turn" % i)
        assert_eq(c.call("UNLOCK", n, 10 + i, "FAIR"), 1, "rlockd waiter %d's UNLOCK" % i)
    assert_eq(queue(env, n), [], "the queue once everyone was served")


def test_fair_queue_of_another_type_is_refused(env):
    n = env.name("fair")
    env.redis("SET", tagged("redisson_lock_queue", n), "app data")
    assert_error(env.client().call("LOCK", n, 1, "FAIR"), "WRONGTYPE", what="FAIR LOCK over a foreign queue key")
    assert_eq(env.redis("GET", tagged("redisson_lock_queue", n)), "app data", "left alone")
    assert_eq(env.redis("EXISTS", n), 0, "no lock taken")
