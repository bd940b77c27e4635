"""What rlockd writes to Redis: Redisson's hash, field, count, TTL, channel; leases and the watchdog."""

import time

from harness import UUID_RE, assert_eq, channel_for, encode_command

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}


def test_default_client_id_is_a_random_uuid(env):
    a, b = env.client(), env.client()
    ida, idb = a.call("CLIENTID"), b.call("CLIENTID")
    for cid in (ida, idb):
        assert isinstance(cid, str) and UUID_RE.match(cid), "default client-id %r is not a UUID" % (cid,)
        assert cid[14] == "4" and cid[19].lower() in "89ab", \
            "default client-id %r is not a random (version 4, RFC 4122 variant) UUID" % cid
    assert ida != idb, "two connections got the same default client-id %r" % ida
    assert_eq(a.call("CLIENTID"), ida, "CLIENTID asked twice")


def test_lock_field_is_default_uuid_and_thread_id(env):
    n = env.name("fmt")
    a = env.client()
    cid = a.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 42), "OK", "LOCK")
    assert_eq(env.redis("TYPE", n), "hash", "Redis type of the lock key")
    assert_eq(env.redis_hash(n), {"%s:42" % cid: "1"}, "HGETALL")


def test_clientid_set_is_reported_and_used_as_field(env):
    n = env.name("fmt")
    a = env.client()
    assert_eq(a.call("CLIENTID", "my.App-1_x"), "OK", "CLIENTID my.App-1_x")
    assert_eq(a.call("CLIENTID"), "my.App-1_x", "CLIENTID query")
    assert_eq(a.call("LOCK", n, 3), "OK", "LOCK")
    assert_eq(env.redis_hash(n), {"my.App-1_x:3": "1"}, "HGETALL")


def test_hold_count_in_redis_follows_lock_and_unlock(env):
    n = env.name("fmt")
    a = env.client()
    a.call("CLIENTID", "holdcount-client")
    field = "holdcount-client:9"
    for i in range(1, 4):
        assert_eq(a.call("LOCK", n, 9), "OK", "LOCK #%d" % i)
        assert_eq(env.redis("HGET", n, field), str(i), "hold count in Redis after %d LOCKs" % i)
        assert_eq(a.call("HOLDCOUNT", n, 9), i, "HOLDCOUNT after %d LOCKs" % i)
        pttl = env.redis("PTTL", n)
        assert 0 < pttl <= env.watchdog_ms, "PTTL %d after LOCK (want 0 < pttl <= %d)" % (pttl, env.watchdog_ms)
    assert_eq(env.redis("HLEN", n), 1, "fields in the lock hash")
    for i in (2, 1):
        assert_eq(a.call("UNLOCK", n, 9), 0, "UNLOCK leaving %d" % i)
        assert_eq(env.redis("HGET", n, field), str(i), "hold count in Redis")
        assert env.redis("PTTL", n) > 0, "lock key lost its TTL after a partial UNLOCK"
    assert_eq(a.call("UNLOCK", n, 9), 1, "last UNLOCK")
    assert_eq(env.redis("EXISTS", n), 0, "lock key after the last UNLOCK")


def test_thread_id_is_a_decimal_u64_normalised_in_the_field(env):
    n, m = env.name("fmt"), env.name("fmt")
    a = env.client()
    a.call("CLIENTID", "tid-client")
    assert_eq(a.call("LOCK", n, "18446744073709551615"), "OK", "LOCK with thread-id 2^64-1")
    assert_eq(env.redis_hash(n), {"tid-client:18446744073709551615": "1"}, "HGETALL")
    assert_eq(a.call("LOCK", m, "007"), "OK", "LOCK with thread-id 007")
    assert_eq(env.redis_hash(m), {"tid-client:7": "1"}, "HGETALL (leading zeros dropped)")
    assert_eq(a.call("HOLDCOUNT", m, 7), 1, "HOLDCOUNT with thread-id 7")
    assert_eq(a.call("UNLOCK", m, 7), 1, "UNLOCK with thread-id 7")
    assert_eq(a.call("TRYLOCK", m, 0), 1, "TRYLOCK with thread-id 0")
    assert_eq(env.redis_hash(m), {"tid-client:0": "1"}, "HGETALL for thread-id 0")


def test_query_commands_report_lock_state(env):
    n = env.name("q")
    a, b = env.client(), env.client()
    assert_eq(a.call("ISLOCKED", n), 0, "ISLOCKED of a free lock")
    assert_eq(a.call("ISHELD", n, 1), 0, "ISHELD of a free lock")
    assert_eq(a.call("HOLDCOUNT", n, 1), 0, "HOLDCOUNT of a free lock")
    assert_eq(a.call("PTTL", n), -2, "PTTL of a free lock")
    a.call("LOCK", n, 1)
    a.call("LOCK", n, 1)
    assert_eq(a.call("ISLOCKED", n), 1, "ISLOCKED")
    assert_eq(b.call("ISLOCKED", n), 1, "ISLOCKED from another client")
    assert_eq(a.call("ISHELD", n, 1), 1, "ISHELD by the owner")
    assert_eq(a.call("ISHELD", n, 2), 0, "ISHELD by another thread of the same client")
    assert_eq(b.call("ISHELD", n, 1), 0, "ISHELD by the same thread-id of another client")
    assert_eq(a.call("HOLDCOUNT", n, 1), 2, "HOLDCOUNT by the owner")
    assert_eq(a.call("HOLDCOUNT", n, 2), 0, "HOLDCOUNT by another thread")
    assert_eq(b.call("HOLDCOUNT", n, 1), 0, "HOLDCOUNT by another client")
    pttl = a.call("PTTL", n)
    assert isinstance(pttl, int) and 0 < pttl <= env.watchdog_ms, "PTTL %r (want 0 < ms <= %d)" % (pttl, env.watchdog_ms)
    m = env.name("q")
    a.call("LOCK", m, 1, "LEASE", 5000)
    pttl = a.call("PTTL", m)
    assert isinstance(pttl, int) and 4000 < pttl <= 5000, "PTTL %r of a LEASE 5000 lock" % (pttl,)


def _subscribe(env, *channels):
    sub = env.redis_client()
    for i, ch in enumerate(channels):
        r = sub.call("SUBSCRIBE", ch)
        assert_eq(r, ["subscribe", ch, i + 1], "SUBSCRIBE reply")
    return sub


def test_unlock_publishes_0_on_braced_channel(env):
    n = env.name("chan")
    ch = "redisson_lock__channel:{%s}" % n
    assert_eq(channel_for(n), ch, "harness channel name")
    sub = _subscribe(env, ch, "redisson_lock__channel:" + n)
    a = env.client()
    a.call("LOCK", n, 1)
    a.call("LOCK", n, 1)
    assert_eq(a.call("UNLOCK", n, 1), 0, "partial UNLOCK")
    sub.expect_no_reply(0.2, "(no message on a partial UNLOCK)")
    assert_eq(a.call("UNLOCK", n, 1), 1, "last UNLOCK")
    assert_eq(sub.read_reply(1.0), ["message", ch, "0"], "message on the lock's channel")
    sub.expect_no_reply(0.2, "(no second message, none on the unbraced channel)")


def test_unlock_publishes_on_name_channel_when_name_has_brace(env):
    n = "acct{%s}:x" % env.name("tag")
    ch = "redisson_lock__channel:" + n
    sub = _subscribe(env, ch, "redisson_lock__channel:{%s}" % n)
    a = env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK of a name with a hash tag")
    assert_eq(env.redis("HLEN", n), 1, "the lock key is the name itself")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
    assert_eq(sub.read_reply(1.0), ["message", ch, "0"], "message on redisson_lock__channel:<name>")
    sub.expect_no_reply(0.2, "(no message on the braced channel)")


def test_lease_sets_pttl_and_key_expires_without_renewal(env):
    n = env.name("lease")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1, "LEASE", 300), "OK", "LOCK LEASE 300")
    t0 = time.monotonic()
    pttl = env.redis("PTTL", n)
    assert 0 < pttl <= 300, "PTTL %d right after LOCK LEASE 300" % pttl
    assert_eq(b.call("TRYLOCK", n, 2), 0, "other owner's TRYLOCK during the lease")

    def gone():
        return env.redis("EXISTS", n) == 0
    while not gone():
        assert time.monotonic() - t0 < 1.2, "LEASE 300 lock still in Redis after 1.2s (renewed?)"
        time.sleep(0.01)
    dt = time.monotonic() - t0
    assert dt >= 0.2, "LEASE 300 lock vanished after only %.3fs" % dt
    assert_eq(b.call("TRYLOCK", n, 2), 1, "other owner's TRYLOCK after the lease ran out")


def test_trylock_lease_sets_pttl(env):
    n = env.name("lease")
    a = env.client()
    assert_eq(a.call("TRYLOCK", n, 1, "WAIT", 100, "LEASE", 2000), 1, "TRYLOCK WAIT 100 LEASE 2000")
    pttl = env.redis("PTTL", n)
    assert 1500 < pttl <= 2000, "PTTL %d after TRYLOCK LEASE 2000" % pttl
    m = env.name("lease")
    assert_eq(a.call("TRYLOCK", m, 1, "LEASE", 2000, "WAIT", 100), 1, "TRYLOCK LEASE 2000 WAIT 100 (options in any order)")
    assert 1500 < env.redis("PTTL", m) <= 2000, "PTTL after TRYLOCK LEASE ... WAIT ..."


def test_watchdog_renews_lock_past_several_ttls(env):
    n = env.name("wd")
    a = env.client()
    before = env.info_int("watchdog_renewals")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK (watchdog mode)")
    t0 = time.monotonic()
    samples = 0
    while time.monotonic() - t0 < 3.0:   # five TTLs of 600 ms
        pttl = env.redis("PTTL", n)
        assert 0 < pttl <= env.watchdog_ms, \
            "after %.2fs PTTL is %d (want 0 < pttl <= %d: key renewed, never gone)" % (
                time.monotonic() - t0, pttl, env.watchdog_ms)
        samples += 1
        time.sleep(0.05)
    assert_eq(a.call("HOLDCOUNT", n, 1), 1, "HOLDCOUNT after 3s")
    renewals = env.info_int("watchdog_renewals") - before
    assert renewals >= 5, "INFO watchdog_renewals grew by %d in 3s (want >= 5 at one per 200ms)" % renewals
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK after 3s")


def test_lease_minus_1_is_watchdog_mode(env):
    n = env.name("wd")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "LEASE", -1), "OK", "LOCK LEASE -1")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5:
        pttl = env.redis("PTTL", n)
        assert 0 < pttl <= env.watchdog_ms, "LEASE -1 lock: PTTL %d after %.2fs" % (pttl, time.monotonic() - t0)
        time.sleep(0.05)
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")


def test_watchdog_keeps_renewing_a_reentered_lock_after_partial_unlock(env):
    n = env.name("wd")
    a = env.client()
    a.call("LOCK", n, 1)
    a.call("LOCK", n, 1)
    assert_eq(a.call("UNLOCK", n, 1), 0, "partial UNLOCK")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5:
        assert env.redis("PTTL", n) > 0, "lock vanished %.2fs after a partial UNLOCK" % (time.monotonic() - t0)
        time.sleep(0.05)
    assert_eq(a.call("UNLOCK", n, 1), 1, "last UNLOCK")


def _pipeline(client, cmds):
    client.send_raw(b"".join(encode_command(*c) for c in cmds))
    return [client.read_reply(5.0) for _ in cmds]


def test_watchdog_renews_many_locks_in_few_batched_script_calls(env):
    count = 400
    names = [env.name("batch") for _ in range(count)]
    conns = [env.client() for _ in range(4)]
    for i, c in enumerate(conns):
        replies = _pipeline(c, [("LOCK", n, 1) for n in names[i::4]])
        assert replies == ["OK"] * len(replies), "pipelined LOCKs: %r" % replies[:5]
    r = env.redis_client()
    assert_eq(r.call("CONFIG", "RESETSTAT"), "OK", "CONFIG RESETSTAT")
    t0 = time.monotonic()
    time.sleep(1.0)   # five renewal rounds of 400 locks = 2000 renewals
    stats = r.call("INFO", "commandstats")
    dt = time.monotonic() - t0
    calls = 0
    for line in stats.splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:", "cmdstat_evalsha_ro:", "cmdstat_eval_ro:")):
            calls += int(line.split("calls=", 1)[1].split(",", 1)[0])
    renewals = count * dt * 3000.0 / env.watchdog_ms
    assert calls >= 1, "no script calls at all while %d watchdog locks were held" % count
    assert calls <= renewals / 10, \
        "%d script calls in %.2fs to renew %d locks every %dms (%.0f renewals): renewals are not batched" % (
            calls, dt, count, env.watchdog_ms // 3, renewals)
    pttls = _pipeline(r, [("PTTL", n) for n in names])
    bad = [(n, p) for n, p in zip(names, pttls) if not 0 < p <= env.watchdog_ms]
    assert not bad, "%d of %d locks not renewed properly, e.g. %r" % (len(bad), count, bad[:3])
