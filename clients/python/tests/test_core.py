"""The package's parts that need no server: the lock-lost message format
(the channel's spec), kinds, addresses, the error mapping, the record of
holds and the steps of each call, driven by a fake rlockd."""

import json
import threading

import pytest
import redis.exceptions

from rlockd import core, errors
from rlockd.core import Identity, LostEvent, Request


def lost_json(**over):
    fields = {"name": "orders:42", "kind": "", "owner": "app-1:7", "thread_id": 7,
              "reason": "lease expired"}
    fields.update(over)
    return json.dumps(fields)


def test_lost_message_parsed_as_specified():
    assert core.parse_lost_message(lost_json()) == LostEvent("orders:42", "", "app-1:7", 7,
                                                             "lease expired")
    for kind in ("", "FAIR", "READ", "WRITE", "FENCED"):
        assert core.parse_lost_message(lost_json(kind=kind).encode()).kind == kind


def test_lost_message_big_thread_id_and_extra_fields():
    event = core.parse_lost_message(lost_json(thread_id=18446744073709551615, extra=1))
    assert event.thread_id == 18446744073709551615


@pytest.mark.parametrize("payload", [
    "not json", "[1, 2]", lost_json(kind="SHARED"), lost_json(thread_id="7"),
    lost_json(thread_id=True), lost_json(name=None), json.dumps({"name": "x"}), b"\xff",
])
def test_lost_message_malformed_is_refused(payload):
    with pytest.raises(ValueError):
        core.parse_lost_message(payload)


def test_kind_words():
    assert [core.kind_word(k) for k in (None, "", "lock", "fair", "Read", "WRITE", "fenced")] == \
        ["", "", "", "FAIR", "READ", "WRITE", "FENCED"]
    with pytest.raises(ValueError):
        core.kind_word("shared")


def test_addresses():
    assert core.parse_address("127.0.0.1:7379") == ("tcp", "127.0.0.1", 7379)
    assert core.parse_address("[::1]:7379") == ("tcp", "::1", 7379)
    assert core.parse_address("unix:/run/rlockd.sock") == ("unix", "/run/rlockd.sock", None)
    for bad in ("localhost", ":7379", "host:0", "host:x", "unix:"):
        with pytest.raises(ValueError):
            core.parse_address(bad)


@pytest.mark.parametrize("reply, cls", [
    ("NOTOWNER the lock is not held by this owner", errors.NotOwner),
    ("LOCKLOST the lock expired", errors.LockLost),
    ("UNAVAILABLE Redis is unavailable", errors.Unavailable),
    ("LIMIT max_held_locks", errors.LimitExceeded),
    ("SHUTDOWN rlockd is shutting down", errors.ShuttingDown),
    ("WRONGTYPE not a lock", errors.WrongType),
    ("NOREPLICAS none", errors.NoReplicas),
])
def test_error_codes_mapped_through_redis_py(reply, cls):
    # what redis-py's parser makes of "-<reply>"
    exc = redis.connection.PythonParser(65536).parse_error(reply)
    mapped = errors.from_redis(exc)
    assert type(mapped) is cls and mapped.code == reply.split()[0]


def test_error_codes_redis_py_rewrites():
    parse = redis.connection.PythonParser(65536).parse_error
    assert type(errors.from_redis(parse("ERR LEASE must be -1"))) is errors.InvalidRequest
    assert type(errors.from_redis(parse("NOAUTH Authentication required."))) is errors.NoAuth
    assert type(errors.from_redis(parse("NOPERM client-id in use"))) is errors.NoPermission
    assert type(errors.from_redis(redis.exceptions.ConnectionError("x"))) is errors.ConnectionLost
    assert type(errors.from_redis(redis.exceptions.TimeoutError("x"))) is errors.ConnectionLost
    unknown = errors.from_reply("NEWCODE something")
    assert type(unknown) is errors.RlockError and unknown.code == "NEWCODE"


class FakeRlockd:
    """Answers requests from a script: a value, or an exception to raise."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent = []

    def __call__(self, request):
        self.sent.append(request.args)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def new_book():
    told = []
    return core.HoldBook(Identity("app-1", "s" * 32), threading.Event, told.append), told


def test_acquire_and_release_steps_keep_the_record():
    book, _ = new_book()
    key = (7, "n", "FENCED")
    rlockd = FakeRlockd(5, 6, 0, 1)
    hold = core.drive(core.acquire_steps(book, key, None, 500), rlockd)
    assert hold.token == 5 and hold.count == 1
    hold = core.drive(core.acquire_steps(book, key, 100, None), rlockd)
    assert hold.token == 6 and hold.count == 2
    assert core.drive(core.release_steps(book, key), rlockd) is False
    assert core.drive(core.release_steps(book, key), rlockd) is True
    assert not book.any_held()
    assert rlockd.sent == [("LOCK", "n", 7, "FENCED", "LEASE", 500),
                           ("TRYLOCK", "n", 7, "FENCED", "WAIT", 100),
                           ("UNLOCK", "n", 7, "FENCED"), ("UNLOCK", "n", 7, "FENCED")]


def test_trylock_not_acquired_records_nothing():
    book, _ = new_book()
    assert core.drive(core.acquire_steps(book, (1, "n", ""), 0, None), FakeRlockd(0)) is None
    assert not book.any_held()


def test_notowner_of_a_hold_whose_connection_broke_is_lockLost():
    book, _ = new_book()
    core.drive(core.acquire_steps(book, (1, "n", ""), None, None), FakeRlockd("OK"))
    book.mark_suspect(1)
    with pytest.raises(errors.LockLost):
        core.drive(core.release_steps(book, (1, "n", "")), FakeRlockd(errors.NotOwner("x")))
    assert not book.any_held()


def test_identify_resumes_while_holding_and_tells_a_lost_session():
    book, told = new_book()
    identity = book.identity
    rlockd = FakeRlockd("OK")
    core.drive(core.identify_steps(identity, book), rlockd)
    assert rlockd.sent == [("CLIENTID", "app-1", "SECRET", "s" * 32)]   # nothing held: no RESUME
    hold = core.drive(core.acquire_steps(book, (3, "n", "READ"), None, None), FakeRlockd("OK"))
    rlockd = FakeRlockd(errors.LockLost("no session"), "OK")
    core.drive(core.identify_steps(identity, book), rlockd)
    assert rlockd.sent == [("CLIENTID", "app-1", "SECRET", "s" * 32, "RESUME"),
                           ("CLIENTID", "app-1", "SECRET", "s" * 32)]
    assert hold.lost.is_set()
    assert told == [LostEvent("n", "READ", "app-1:3", 3, "session not resumed")]
    sent = FakeRlockd()
    with pytest.raises(errors.LockLost):   # told once, without asking rlockd
        core.drive(core.release_steps(book, (3, "n", "READ")), sent)
    assert sent.sent == []


def test_identify_asks_again_while_another_connection_resumes():
    book, _ = new_book()
    core.drive(core.acquire_steps(book, (3, "n", ""), None, None), FakeRlockd("OK"))
    busy = errors.Unavailable("the client-id's session ... is being resumed")
    rlockd = FakeRlockd(busy, busy, "OK")
    core.drive(core.identify_steps(book.identity, book), rlockd)
    assert rlockd.sent == [("CLIENTID", "app-1", "SECRET", "s" * 32, "RESUME")] * 3
    rlockd = FakeRlockd(*[busy] * core.RESUME_RETRIES)
    with pytest.raises(errors.Unavailable):   # not for ever
        core.drive(core.identify_steps(book.identity, book), rlockd)
    assert len(rlockd.sent) == core.RESUME_RETRIES


def test_channel_reports_told_once_per_hold():
    book, told = new_book()
    hold = core.drive(core.acquire_steps(book, (7, "orders:42", ""), None, None), FakeRlockd("OK"))
    event = core.parse_lost_message(lost_json())
    ready = threading.Event()
    core.on_pubsub_message({"type": "subscribe", "data": 1}, book, ready)
    core.on_pubsub_message({"type": "message", "data": lost_json()}, book, ready)
    core.on_pubsub_message({"type": "message", "data": lost_json()}, book, ready)
    core.on_pubsub_message({"type": "message", "data": "garbage"}, book, ready)
    assert ready.is_set() and hold.lost.is_set() and told == [event]
    book.report(LostEvent("other", "", "app-1:7", 7, "force-unlocked"))  # no longer recorded: told
    assert len(told) == 2


def test_failing_callback_does_not_stop_the_others():
    got = []

    def bad(event):
        raise RuntimeError("boom")
    core.notify([bad, got.append], "event")
    assert got == ["event"]


def test_reply_timeouts():
    assert core.reply_timeout(Request(("LOCK",), core.FOREVER), 10) is None
    assert core.reply_timeout(Request(("TRYLOCK",), 1500), 10) == 11.5
    assert core.reply_timeout(Request(("UNLOCK",)), 10) == 10


def test_notowner_after_the_session_was_found_gone_is_lock_lost():
    """The UNLOCK's own reconnection found the session gone: rlockd then
    answers the new session NOTOWNER, and the caller hears LockLost."""
    book, _ = new_book()
    key = (1, "n", "")
    core.drive(core.acquire_steps(book, key, None, None), FakeRlockd("OK"))

    def reconnect_then_notowner(request):
        book.session_lost()
        raise errors.NotOwner("x")
    with pytest.raises(errors.LockLost):
        core.drive(core.release_steps(book, key), reconnect_then_notowner)
