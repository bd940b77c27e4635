"""Semaphores (plain and expirable) and the count-down latch: what rlockd writes to Redis
for each, each against a "Java" Redisson client played by this test with Redisson's own
scripts (Redisson's redisson/src/main/java/org/redisson/RedissonSemaphore.java,
RedissonPermitExpirableSemaphore.java and RedissonCountDownLatch.java), sent with
EVAL; at most N holders; permits that come back when their holder's connection, or its rlockd,
dies; expirable permits renewed while their holder lives; no waiter stranded by a lost
message. The scripts below are Redisson's, not rlockd's."""

import os
import signal
import threading
import time
import uuid

from harness import RespClient, assert_eq, assert_error, is_error, wait_until

CONFIG = {"lock": {"watchdog_timeout_ms": 1500}}

# ---- Redisson's scripts (the reference, verbatim) ----------------------------

SEM_TRY_ACQUIRE = (  # RedissonSemaphore.java:267; KEYS name; ARGV permits
    "local value = redis.call('get', KEYS[1]); "
    "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then "
    "local val = redis.call('decrby', KEYS[1], ARGV[1]); "
    "return 1; "
    "end; "
    "return 0;")

SEM_RELEASE = (  # RedissonSemaphore.java:459; KEYS name, channel; ARGV permits, <pub>
    "local value = redis.call('incrby', KEYS[1], ARGV[1]); "
    "redis.call(ARGV[2], KEYS[2], value); ")

EXP_ACQUIRE = (  # RedissonPermitExpirableSemaphore.java:383; KEYS name, timeout, channel;
    # ARGV permitCount, timeoutDate, now, 922337203685477, <pub>, id1...
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); "
    "if #expiredIds > 0 then "
    "redis.call('zrem', KEYS[2], unpack(expiredIds)); "
    "local value = redis.call('incrby', KEYS[1], #expiredIds); "
    "if tonumber(value) > 0 then "
    "redis.call(ARGV[5], KEYS[3], value); "
    "end;"
    "end; "
    "local value = redis.call('get', KEYS[1]); "
    "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then "
    "redis.call('decrby', KEYS[1], ARGV[1]); "
    "for i = 6, #ARGV, 1 do "
    "redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); "
    "end; "
    "local ttl = redis.call('pttl', KEYS[1]); "
    "if ttl > 0 then "
    "redis.call('pexpire', KEYS[2], ttl); "
    "end; "
    "return 'OK'; "
    "end; "
    "local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); "
    "if v[1] ~= nil and v[2] ~= ARGV[4] then "
    "return ':' .. tostring(v[2]); "
    "end "
    "return nil;")

EXP_RELEASE = (  # RedissonPermitExpirableSemaphore.java:619; KEYS name, channel, timeout;
    # ARGV id, 1, now, <pub>
    "local expire = redis.call('zscore', KEYS[3], ARGV[1]);"
    "local removed = redis.call('zrem', KEYS[3], ARGV[1]);"
    "if tonumber(removed) ~= 1 then "
    "return 0;"
    "end;"
    "local value = redis.call('incrby', KEYS[1], ARGV[2]); "
    "redis.call(ARGV[4], KEYS[2], value); "
    "if tonumber(expire) <= tonumber(ARGV[3]) then "
    "return 0;"
    "end;"
    "return 1;")

LATCH_COUNT_DOWN = (  # RedissonCountDownLatch.java:255; KEYS name, channel; ARGV "0", <pub>
    "local v = redis.call('decr', KEYS[1]);"
    "if v <= 0 then redis.call('del', KEYS[1]) end;"
    "if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;")


def sc_channel(n):
    return "redisson_sc:{%s}" % n


def timeout_key(n):
    return "{%s}:timeout" % n


def latch_channel(n):
    return "redisson_countdownlatch__channel__{%s}" % n


def now_ms():
    return int(time.time() * 1000)


def raw(text):
    """A reply's bytes (the harness decodes bulk strings with surrogateescape)."""
    return text.encode("utf-8", "surrogateescape")


def member_scores(env, n):
    flat = env.redis("ZRANGE", timeout_key(n), 0, -1, "WITHSCORES")
    return {raw(m): float(s) for m, s in zip(flat[0::2], flat[1::2])}


def subscriber(env, channel):
    s = env.redis_client()
    assert_eq(s.call("SUBSCRIBE", channel)[0], "subscribe", "SUBSCRIBE %s" % channel)
    return s


# ---- plain semaphores ----------------------------------------------------------


def test_permits_are_redissons_counter_and_rlockd_records_who_holds_them(env):
    n = env.name("sem")
    a = env.client()
    cid = a.call("CLIENTID")
    sub = subscriber(env, sc_channel(n))
    assert_eq(a.call("SETPERMITS", n, 3), 1, "SETPERMITS of a new semaphore")
    assert_eq(sub.read_reply(2.0), ["message", sc_channel(n), "3"], "trySetPermits publishes the count")
    assert_eq(a.call("SETPERMITS", n, 9), 0, "SETPERMITS of one already set")
    assert_eq(env.redis("GET", n), "3", "the counter, a string as Redisson's")
    assert_eq(a.call("ACQUIRE", n, "PERMITS", 2), "OK", "ACQUIRE 2 (blocking form)")
    assert_eq(env.redis("GET", n), "1", "the counter after ACQUIRE 2")
    assert_eq(env.redis_hash("rlockd_permits:{%s}" % n), {"%s:0" % cid: "2"}, "rlockd's record of the owner")
    deadline = float(env.redis("ZSCORE", "rlockd_permits_deadline:{%s}" % n, "%s:0" % cid))
    assert 0 < deadline - now_ms() <= 1600, "the owner's deadline is a watchdog timeout away: %r" % deadline
    assert_eq(a.call("PERMITS", n), 1, "PERMITS")
    assert_eq(a.call("PERMITS", n, "HELD"), 2, "PERMITS HELD: the session's")
    assert_eq(env.client().call("PERMITS", n, "HELD"), 0, "another client-id's PERMITS HELD")
    assert_eq(a.call("RELEASE", n), 0, "RELEASE of one of two: still holds one")
    assert_eq(sub.read_reply(2.0), ["message", sc_channel(n), "2"], "a release publishes the new count")
    assert_error(a.call("RELEASE", n, "PERMITS", 2), "NOTOWNER", "holds 1", what="RELEASE of more than held")
    assert_eq(a.call("RELEASE", n), 1, "RELEASE of the last one")
    assert_eq(sub.read_reply(2.0), ["message", sc_channel(n), "3"], "the count after it")
    assert_eq(env.redis("EXISTS", "rlockd_permits:{%s}" % n, "rlockd_permits_deadline:{%s}" % n), 0,
              "no record left once it holds none")
    assert_eq(a.call("ADDPERMITS", n, -3), 0, "ADDPERMITS -3: the new count")
    assert_eq(a.call("ADDPERMITS", n, 4), 4, "ADDPERMITS 4")
    assert_eq(sub.read_reply(2.0), ["message", sc_channel(n), "4"],
              "addPermits publishes the new count, when there is one to take")


def test_acquire_with_wait_answers_1_or_0_and_a_blocked_one_is_woken_by_a_release(env):
    n = env.name("sem")
    a, b = env.client(), env.client()
    a.call("SETPERMITS", n, 1)
    assert_eq(a.call("ACQUIRE", n, "WAIT", 0), 1, "ACQUIRE WAIT 0 with a permit free")
    assert_eq(b.call("ACQUIRE", n, "WAIT", 100), 0, "ACQUIRE WAIT 100 with none free")
    b.send("ACQUIRE", n)
    env.wait_waiting(1, what="b's ACQUIRE queued")
    b.expect_no_reply(0.2, "ACQUIRE while none is free")
    assert_eq(a.call("RELEASE", n), 1, "a's RELEASE")
    assert_eq(b.read_reply(2.0), "OK", "b woken by the release")


def test_a_java_release_wakes_rlockd_waiters_and_an_rlockd_release_a_java_one(env):
    n = env.name("sem")
    a = env.client()
    env.redis("SET", n, 0)
    a.send("ACQUIRE", n, "PERMITS", 2)
    env.wait_waiting(1, what="ACQUIRE 2 queued")
    t0 = time.monotonic()
    env.redis("EVAL", SEM_RELEASE, 2, n, sc_channel(n), 2, "publish")
    assert_eq(a.read_reply(3.0), "OK", "rlockd's waiter after Java's release")
    assert time.monotonic() - t0 < 0.8, "woken by the message, not by the second's look"
    sub = subscriber(env, sc_channel(n))   # a Java waiter's subscription
    assert_eq(env.redis("EVAL", SEM_TRY_ACQUIRE, 1, n, 1), 0, "Java's tryAcquire with none free")
    assert_eq(a.call("RELEASE", n, "PERMITS", 2), 1, "rlockd's RELEASE")
    assert_eq(sub.read_reply(2.0), ["message", sc_channel(n), "2"], "Java's waiter told the count")
    assert_eq(env.redis("EVAL", SEM_TRY_ACQUIRE, 1, n, 2), 1, "Java's tryAcquire(2) then")


def test_at_most_n_of_20_clients_hold_one_of_3_permits(env):
    n = env.name("sem")
    env.client().call("SETPERMITS", n, 3)
    inside, most, errors = [0], [0], []
    lock = threading.Lock()

    def worker(i):
        c = RespClient(env.port, timeout=10.0, label="sem-worker-%d" % i)
        try:
            for _ in range(5):
                if c.call("ACQUIRE", n) != "OK":
                    errors.append("ACQUIRE")
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.005)
                with lock:
                    inside[0] -= 1
                if c.call("RELEASE", n) != 1:
                    errors.append("RELEASE")
        except Exception as e:  # recorded, the test asserts below
            errors.append(repr(e))
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert_eq(errors, [], "every ACQUIRE and RELEASE answered")
    assert 1 <= most[0] <= 3, "%d holders at once of 3 permits" % most[0]
    assert_eq(env.redis("GET", n), "3", "every permit back")


def test_permits_come_back_when_the_holders_connection_is_killed(env):
    n = env.name("sem")
    holder, waiter = env.client(), env.client()
    holder.call("SETPERMITS", n, 2)
    assert_eq(holder.call("ACQUIRE", n, "PERMITS", 2), "OK", "ACQUIRE 2")
    waiter.send("ACQUIRE", n, "PERMITS", 2)
    env.wait_waiting(1, what="the waiter queued")
    holder.sock.shutdown(2)   # the client vanishes
    holder.close()
    assert_eq(waiter.read_reply(3.0), "OK", "the waiter gets the permits its holder's death gave back")


def test_permits_of_a_dead_rlockd_come_back_after_the_watchdog_timeout(env):
    """rlockd killed with SIGKILL: its sessions cannot give their permits back, and
    nothing renews their deadline; a script run after it (here another rlockd's
    ACQUIRE) returns them. The first rlockd's holder, if it comes back, finds them lost."""
    n = env.name("sem")
    other = env.second_rlockd()
    holder, waiter = env.client(), env.client_of(other)
    holder.call("SETPERMITS", n, 1)
    assert_eq(holder.call("ACQUIRE", n), "OK", "ACQUIRE through the first rlockd")
    env.rlockd.signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        assert_eq(waiter.call("ACQUIRE", n, "WAIT", 4000, timeout=6.0), 1,
                  "another rlockd's ACQUIRE once the deadline passed")
        waited = time.monotonic() - t0
        assert 1.0 <= waited <= 3.5, "got it after %.2f s (watchdog timeout 1.5 s)" % waited
    finally:
        env.rlockd.signal(signal.SIGCONT)
    assert_eq(holder.call("PERMITS", n, "HELD", timeout=3.0), 0, "PERMITS HELD: they came back")
    assert_error(holder.call("RELEASE", n, timeout=3.0), "LOCKLOST", what="the stopped holder's RELEASE")


def test_no_waiter_is_stranded_when_the_message_is_lost(env):
    """A release that publishes nothing (Redis's INCRBY alone): the waiter looks again
    within a second all the same."""
    n = env.name("sem")
    w = env.client()
    env.redis("SET", n, 0)
    w.send("ACQUIRE", n)
    env.wait_waiting(1, what="the waiter queued")
    time.sleep(0.2)
    t0 = time.monotonic()
    env.redis("INCRBY", n, 1)
    assert_eq(w.read_reply(3.0), "OK", "the waiter without a message")
    assert time.monotonic() - t0 < 1.5, "found after %.2f s" % (time.monotonic() - t0)


def test_a_waiter_that_gives_up_or_disconnects_leaves_nothing_behind(env):
    n = env.name("sem")
    a, b = env.client(), env.client()
    env.redis("SET", n, 0)
    assert_eq(a.call("ACQUIRE", n, "WAIT", 200), 0, "WAIT ran out")
    b.send("ACQUIRE", n)
    env.wait_waiting(1, what="b queued")
    b.close()
    wait_until(lambda: env.info_int("waiting_clients") == 0, 2.0, what="b's wait gone with it")
    env.redis("SET", n, 1)
    assert_eq(a.call("ACQUIRE", n, "WAIT", 1000), 1, "the permit is a's: nobody took it in b's name")
    assert_eq(env.redis("GET", n), "0", "one permit taken, not two")


def test_a_semaphore_command_never_touches_an_application_key(env):
    n = env.name("app")
    env.redis("HSET", n, "field", "value")
    a = env.client()
    for cmd in (("ACQUIRE", n, "WAIT", 0), ("PERMITS", n), ("ADDPERMITS", n, 1), ("SETPERMITS", n, 1),
                ("ACQUIRE", n, "EXPIRABLE", "WAIT", 0), ("LATCHCOUNT", n), ("COUNTDOWN", n)):
        r = a.call(*cmd)
        assert r == 0 or is_error(r, "WRONGTYPE"), "%s on an application hash: %r" % (cmd[0], r)
    env.redis("SET", n + "s", "not a number")
    assert_error(a.call("ACQUIRE", n + "s", "WAIT", 0), "WRONGTYPE", what="ACQUIRE on a text string")
    assert_eq(env.redis_hash(n), {"field": "value"}, "the hash untouched")
    assert_eq(env.redis("GET", n + "s"), "not a number", "the string untouched")


def test_syntax_errors_are_clear(env):
    a = env.client()
    for args, text in ((("ACQUIRE", "s", "PERMITS", 0), "PERMITS must be"),
                       (("ACQUIRE", "s", "LEASE", 100), "LEASE is an EXPIRABLE"),
                       (("ACQUIRE", "s", "EXPIRABLE", "PERMITS", 2), "one at a time"),
                       (("RELEASE", "s", "ID", "xyz"), "32 hex"),
                       (("SETPERMITS", "s", -1), "from 0"),
                       (("ADDPERMITS", "s", "2147483648"), "2147483647"),
                       (("ACQUIRE", "s", "FAIR"), "syntax error")):
        assert_error(a.call(*args), "ERR", text, what=" ".join(map(str, args)))


# ---- expirable semaphores ------------------------------------------------------


def test_an_expirable_permit_is_a_raw_16_byte_member_renewed_while_its_holder_lives(env):
    n = env.name("xsem")
    a = env.client()
    a.call("SETPERMITS", n, 2)
    pid = a.call("ACQUIRE", n, "EXPIRABLE")
    assert isinstance(pid, str) and len(pid) == 32 and int(pid, 16) >= 0, "a permit id: %r" % (pid,)
    scores = member_scores(env, n)
    assert_eq(list(scores), [bytes.fromhex(pid)], "the zset's member: the id's 16 raw bytes")
    assert 0 < scores[bytes.fromhex(pid)] - now_ms() <= 1600, "its lease: the watchdog timeout"
    time.sleep(4.0)   # more than two leases: only renewals keep it
    assert_eq(list(member_scores(env, n)), [bytes.fromhex(pid)], "still held after 4 s of 1.5 s leases")
    assert_eq(a.call("PERMITS", n), 1, "one permit taken")
    assert_eq(a.call("RELEASE", n, "ID", pid.upper()), 1, "RELEASE ID (in either case)")
    assert_eq(member_scores(env, n), {}, "the member gone")
    assert_eq(a.call("PERMITS", n), 2, "the permit back")
    assert_error(a.call("RELEASE", n, "ID", pid), "NOTOWNER", what="RELEASE of it again")


def test_a_leased_expirable_permit_runs_out_and_its_holder_is_told(env):
    n = env.name("xsem")
    a = env.client()
    a.call("SETPERMITS", n, 1)
    pid = a.call("ACQUIRE", n, "EXPIRABLE", "LEASE", 300)
    assert 0 < member_scores(env, n)[bytes.fromhex(pid)] - now_ms() <= 300, "LEASE 300"
    wait_until(lambda: a.call("PERMITS", n) == 1, 5.0, what="the expired permit back in the pool")
    assert_error(a.call("RELEASE", n, "ID", pid), "LOCKLOST", what="RELEASE of a permit whose lease ran out")


def test_expirable_permits_interoperate_with_javas(env):
    n = env.name("xsem")
    a = env.client()
    a.call("SETPERMITS", n, 1)
    jid = uuid.uuid4().bytes
    args = (3, n, timeout_key(n), sc_channel(n))
    assert_eq(env.redis("EVAL", EXP_ACQUIRE, *args, 1, now_ms() + 60000, now_ms(), 922337203685477,
                        "publish", jid), "OK", "Java's acquire")
    a.send("ACQUIRE", n, "EXPIRABLE")
    env.wait_waiting(1, what="rlockd's expirable ACQUIRE queued")
    t0 = time.monotonic()
    assert_eq(env.redis("EVAL", EXP_RELEASE, 3, n, sc_channel(n), timeout_key(n), jid, 1, now_ms(),
                        "publish"), 1, "Java's release")
    pid = a.read_reply(3.0)
    assert time.monotonic() - t0 < 0.8, "woken by Java's message"
    sub = subscriber(env, sc_channel(n))
    jid2 = uuid.uuid4().bytes
    r = env.redis("EVAL", EXP_ACQUIRE, *args, 1, now_ms() + 60000, now_ms(), 922337203685477, "publish", jid2)
    assert isinstance(r, str) and r.startswith(":"), "Java refused, told the earliest expiry: %r" % (r,)
    assert_eq(a.call("RELEASE", n, "ID", pid), 1, "rlockd's RELEASE ID")
    assert_eq(sub.read_reply(2.0), ["message", sc_channel(n), "1"], "Java's waiter told")
    assert_eq(env.redis("EVAL", EXP_RELEASE, 3, n, sc_channel(n), timeout_key(n), bytes.fromhex(pid), 1,
                        now_ms(), "publish"), 0, "Java sees rlockd's permit gone")


def test_expirable_permits_come_back_when_their_holder_goes(env):
    n = env.name("xsem")
    a, b = env.client(), env.client()
    a.call("SETPERMITS", n, 1)
    a.call("ACQUIRE", n, "EXPIRABLE")
    b.send("ACQUIRE", n, "EXPIRABLE")
    env.wait_waiting(1, what="b queued")
    a.close()
    pid = b.read_reply(3.0)
    assert isinstance(pid, str) and len(pid) == 32, "b's permit: %r" % (pid,)


# ---- the count-down latch ------------------------------------------------------


def test_latch_waiters_go_together_when_the_count_reaches_zero(env):
    n = env.name("latch")
    setter = env.client()
    sub = subscriber(env, latch_channel(n))
    assert_eq(setter.call("LATCHSET", n, 2), 1, "LATCHSET 2")
    assert_eq(sub.read_reply(2.0), ["message", latch_channel(n), "1"], "trySetCount publishes 1")
    assert_eq(setter.call("LATCHSET", n, 5), 0, "LATCHSET of a set latch")
    assert_eq(env.redis("GET", n), "2", "the count, a string as Redisson's")
    waiters = [env.client() for _ in range(5)]
    for w in waiters:
        w.send("AWAIT", n)
    env.wait_waiting(5, what="five AWAITs queued")
    assert_eq(setter.call("AWAIT", n, "WAIT", 100), 0, "AWAIT WAIT 100 of a closed latch")
    assert_eq(setter.call("COUNTDOWN", n), 1, "COUNTDOWN: 1 left")
    for w in waiters:
        w.expect_no_reply(0.05, "AWAIT with 1 left")
    assert_eq(setter.call("LATCHCOUNT", n), 1, "LATCHCOUNT")
    env.redis("EVAL", LATCH_COUNT_DOWN, 2, n, latch_channel(n), "0", "publish")  # Java's countDown
    for w in waiters:
        assert_eq(w.read_reply(2.0), 1, "AWAIT once the latch is open")
    assert_eq(sub.read_reply(2.0), ["message", latch_channel(n), "0"], "zero announced")
    assert_eq(env.redis("EXISTS", n), 0, "the count deleted at zero, as Redisson's")
    assert_eq(setter.call("AWAIT", n), 1, "AWAIT of an open latch")
    assert_eq(setter.call("COUNTDOWN", n), 0, "COUNTDOWN of an open latch")


def test_an_rlockd_countdown_opens_a_java_await(env):
    n = env.name("latch")
    a = env.client()
    a.call("LATCHSET", n, 1)
    sub = subscriber(env, latch_channel(n))
    assert_eq(a.call("COUNTDOWN", n), 0, "COUNTDOWN to zero")
    assert_eq(sub.read_reply(2.0), ["message", latch_channel(n), "0"], "Java's await told")


def test_a_latch_waiter_is_not_stranded_by_a_lost_message(env):
    n = env.name("latch")
    w = env.client()
    env.redis("SET", n, 1)
    w.send("AWAIT", n)
    env.wait_waiting(1, what="AWAIT queued")
    env.redis("DEL", n)   # opened without a message
    assert_eq(w.read_reply(2.5), 1, "AWAIT found the latch open within a second")
