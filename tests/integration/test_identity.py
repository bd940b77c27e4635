"""Identities cannot be taken over: a live session's client-id is joined only
with the SECRET its first connection set."""

from harness import assert_eq, assert_error, wait_until

MAX_FAILURES = 3
CONFIG = {"lock": {"watchdog_timeout_ms": 600}, "server": {"max_auth_failures": MAX_FAILURES}}

SECRET = "7f3a9c1e-5b2d-4e8f-a6c0-d91b3e7f2a45"


def _victim(env, cid):
    """A client that started session cid with SECRET and holds a lock twice."""
    n = env.name("victim")
    v = env.client(label="victim")
    assert_eq(v.call("CLIENTID", cid, "SECRET", SECRET), "OK", "the victim starts its session")
    assert_eq(v.call("LOCK", n, 1), "OK", "the victim's LOCK")
    assert_eq(v.call("LOCK", n, 1), "OK", "the victim's reentrant LOCK")
    return v, n


def _assert_victim_untouched(env, v, cid, n):
    assert_eq(env.redis_hash(n), {"%s:1" % cid: "2"}, "the victim's lock in Redis")
    assert_eq(v.call("HOLDCOUNT", n, 1), 2, "the victim's HOLDCOUNT")


def test_a_live_client_id_cannot_be_joined_without_its_secret(env):
    cid = env.name("billing-worker")
    v, n = _victim(env, cid)
    before = env.info_int("clientid_refusals")
    refusals = []
    for attempt in (("CLIENTID", cid), ("CLIENTID", cid, "SECRET", "x" * 36),
                    ("CLIENTID", cid, "SECRET", SECRET[:-1] + "0")):
        a = env.client(label="attacker")
        r = a.call(*attempt)
        assert_error(r, "NOPERM", what="%s by another connection" % " ".join(attempt[:1] + attempt[2:3]))
        refusals.append(r.message)
        assert a.call("CLIENTID") != cid, "the attacker's connection kept its own client-id"
        assert_error(a.call("UNLOCK", n, 1), "NOTOWNER", what="the attacker's UNLOCK under its own id")
        assert_eq(a.call("TRYLOCK", n, 1), 0, "the attacker's TRYLOCK")
        _assert_victim_untouched(env, v, cid, n)
    assert_eq(len(set(refusals)), 1, "every refusal says the same (no secret, a wrong one): %r" % refusals)
    assert_eq(env.info_int("clientid_refusals") - before, 3, "INFO clientid_refusals")
    assert_eq(v.call("UNLOCK", n, 1), 0, "the victim's first UNLOCK")
    assert_eq(v.call("UNLOCK", n, 1), 1, "the victim's second UNLOCK frees the lock")


def test_the_secret_joins_the_session_as_before(env):
    cid = env.name("pooled-app")
    v, n = _victim(env, cid)
    second = env.client(label="second connection")
    assert_eq(second.call("CLIENTID", cid, "SECRET", SECRET), "OK", "a second connection with the secret")
    assert_eq(second.call("CLIENTID"), cid, "its client-id")
    assert_eq(second.call("HOLDCOUNT", n, 1), 2, "it sees the session's holds")
    v.close()
    assert_eq(second.call("UNLOCK", n, 1), 0, "it unlocks what the first one locked")
    assert_eq(second.call("UNLOCK", n, 1), 1, "and frees it: the session outlived the first connection")
    third = env.client(label="third connection")
    assert_eq(third.call("CLIENTID", cid, "SECRET", SECRET), "OK", "another connection joins while one is open")


def test_a_session_started_without_a_secret_is_joined_by_nobody(env):
    cid = env.name("no-secret")
    first = env.client()
    assert_eq(first.call("CLIENTID", cid), "OK", "CLIENTID without SECRET")
    for attempt in (("CLIENTID", cid), ("CLIENTID", cid, "SECRET", SECRET)):
        assert_error(env.client().call(*attempt), "NOPERM", what=" ".join(attempt[:1] + attempt[2:3]))
    assert_eq(first.call("CLIENTID", cid), "OK", "the session's own connection may repeat its id")


def test_a_client_id_is_free_again_once_its_session_ended(env):
    cid = env.name("gone")
    v, n = _victim(env, cid)
    sessions = env.info_int("client_sessions")
    v.close()
    wait_until(lambda: env.info_int("client_sessions") == sessions - 1, 2.0, what="the session ended")
    c = env.client()
    assert_eq(c.call("CLIENTID", cid, "SECRET", "another-secret-0123456789"), "OK",
              "a new session under the ended session's id")
    assert_eq(env.redis("EXISTS", n), 0, "the ended session's lock was released (on_disconnect = release)")


def test_secret_syntax_errors(env):
    c = env.client()
    assert_error(c.call("CLIENTID", "x", "SECRET", "short"), "ERR", "16 to 256", what="a short SECRET")
    assert_error(c.call("CLIENTID", "x", "SECRET"), "ERR", what="SECRET without a value")
    assert_error(c.call("CLIENTID", "x", "TOKEN", SECRET), "ERR", "syntax", what="another word than SECRET")


def test_refused_joins_are_penalised_like_failed_auth_and_logged(env):
    cid = env.name("guessed")
    v, n = _victim(env, cid)
    max_failures = MAX_FAILURES
    guesser = env.client(label="guesser")
    guesser.send_raw(b"".join(b"*4\r\n$8\r\nCLIENTID\r\n$%d\r\n%s\r\n$6\r\nSECRET\r\n$20\r\nguess-%014d\r\n"
                              % (len(cid), cid.encode(), i) for i in range(max_failures + 3)))
    for i in range(max_failures):
        assert_error(guesser.read_reply(5.0), "NOPERM", what="guess %d" % i)
    assert guesser.wait_closed(5.0), "the guesser should be closed after %d refusals" % max_failures
    env.rlockd.wait_log(r"WARN client \d+ \(tcp 127\.0\.0\.1\): CLIENTID refused")  # rate-limited: maybe an earlier test's
    assert "guess-" not in env.rlockd.log_text(), "a guessed secret was logged"
    _assert_victim_untouched(env, v, cid, n)
