"""Limits from section 11 of docs/protocol.md: output and input buffers, max_held_locks.

Each test has its own rlockd with a small limit; another client is served
normally meanwhile.
"""

import re

from harness import Env, assert_eq, assert_error, encode_command

CONFIG_BASE = {"lock": {"watchdog_timeout_ms": 600}}


def _config(**sections):
    config = {s: dict(kv) for s, kv in CONFIG_BASE.items()}
    for sec, kv in sections.items():
        config.setdefault(sec, {}).update(kv)
    return config


def _lock_unlock(env, c, what):
    n = env.name("bystander")
    assert_eq(c.call("LOCK", n, 1), "OK", "another client's LOCK %s" % what)
    assert_eq(c.call("UNLOCK", n, 1), 1, "another client's UNLOCK %s" % what)


# ---------------------------------------------------------------- max_output_buffer_bytes

MAX_OUTPUT = 65536


def test_client_that_never_reads_its_replies_is_closed_at_max_output_buffer_bytes():
    with Env(_config(server={"max_output_buffer_bytes": MAX_OUTPUT})) as env:
        other = env.client(label="bystander")
        hog = env.client(label="non-reader", rcvbuf=4096)
        batch = encode_command("INFO") * 1000   # 14 KB of requests, about 1 MB of replies
        over = re.compile(r"over max_output_buffer_bytes")
        for i in range(40):
            try:
                hog.send_raw(batch)
            except (BrokenPipeError, ConnectionResetError):
                break   # rlockd closed it already
            _lock_unlock(env, other, "while a client does not read its replies (batch %d)" % (i + 1))
            if over.search(env.rlockd.log_text()):
                break
        env.rlockd.wait_log(r"client \d+: over max_output_buffer_bytes")
        assert hog.wait_closed(10.0), "the client that does not read is still connected"
        _lock_unlock(env, other, "after the non-reading client was closed")
        assert_eq(other.call("PING"), "PONG", "PING from another client")


# ---------------------------------------------------------------- max_input_buffer_bytes

MAX_INPUT = 4096   # below max_request_bytes (65536): the input limit, not the request limit


def test_unterminated_request_over_max_input_buffer_bytes_gets_limit_and_is_closed():
    with Env(_config(server={"max_input_buffer_bytes": MAX_INPUT})) as env:
        other = env.client(label="bystander")
        c = env.client(label="flooder")
        # under the limit an unterminated request just waits for its end of line ...
        part = "p" * (MAX_INPUT - 1000)
        c.send_raw(b"PING " + part.encode())
        c.expect_no_reply(0.2, "an unterminated PING under max_input_buffer_bytes")
        c.send_raw(b"\r\n")
        assert_eq(c.read_reply(), part, "the PING once its line ended")
        # ... over it, the client gets -LIMIT and is closed, though the request is within max_request_bytes
        c.send_raw(b"PING " + b"x" * (4 * MAX_INPUT))
        assert_error(c.read_reply(5.0), "LIMIT", what="an unterminated request of %d bytes" % (4 * MAX_INPUT + 5))
        assert c.wait_closed(5.0), "connection still open after -LIMIT"
        _lock_unlock(env, other, "after a client was closed for its input")
        assert_eq(other.call("PING"), "PONG", "PING from another client")


# ---------------------------------------------------------------- max_held_locks


def test_max_held_locks_refuses_a_new_lock_not_a_reentry_and_unlock_frees_a_slot():
    with Env(_config(lock={"max_held_locks": 3})) as env:
        a, b = env.client(label="holder"), env.client(label="other")
        names = [env.name("held") for _ in range(4)]
        for n in names[:3]:
            assert_eq(a.call("LOCK", n, 1), "OK", "LOCK of %s (at most 3 held)" % n)
        assert_eq(env.info_int("held_locks"), 3, "INFO held_locks")
        assert_error(a.call("LOCK", names[3], 1), "LIMIT", what="a 4th LOCK with max_held_locks 3")
        assert_error(b.call("TRYLOCK", names[3], 2), "LIMIT", what="another client's TRYLOCK of a 4th lock")
        assert_eq(env.redis("EXISTS", names[3]), 0, "the refused lock's key in Redis")
        assert_eq(a.call("LOCK", names[0], 1), "OK", "a reentrant LOCK at the limit")
        assert_eq(a.call("HOLDCOUNT", names[0], 1), 2, "HOLDCOUNT after the reentrant LOCK")
        assert_eq(env.info_int("held_locks"), 3, "INFO held_locks after the reentrant LOCK")
        assert_eq(a.call("UNLOCK", names[1], 1), 1, "UNLOCK of one of the 3")
        assert_eq(b.call("LOCK", names[3], 2), "OK", "LOCK of a new name after an UNLOCK")
        assert_eq(b.call("HOLDCOUNT", names[3], 2), 1, "HOLDCOUNT of the new lock")
        assert_error(a.call("TRYLOCK", names[1], 1), "LIMIT", what="TRYLOCK of a 4th lock once full again")


# ---------------------------------------------------------------- per client-id


def test_per_client_limits_refuse_that_client_id_and_serve_others():
    config = _config(lock={"max_held_locks_per_client": 2, "max_waiters_per_client": 1})
    with Env(config) as env:
        a1, a2, b = env.client(label="a-1"), env.client(label="a-2"), env.client(label="b")
        a1.call("CLIENTID", "greedy", "SECRET", "greedy-secret-0123456789")
        names = [env.name("per-client") for _ in range(3)]
        assert_eq(a1.call("LOCK", names[0], 1), "OK", "greedy's first lock")
        assert_eq(a1.call("LOCK", names[1], 2), "OK", "greedy's second lock")
        assert_error(a1.call("TRYLOCK", names[2], 3), "LIMIT", "max_held_locks_per_client",
                     what="greedy's third lock")
        assert_eq(a1.call("LOCK", names[0], 1), "OK", "a reentrant LOCK at the limit")
        assert_eq(env.redis("EXISTS", names[2]), 0, "the refused lock's key in Redis")
        assert_eq(b.call("LOCK", names[2], 1), "OK", "another client-id is served")

        assert_eq(a1.call("UNLOCK", names[1], 2), 1, "greedy frees a slot")
        a1.send("LOCK", names[2], 4)        # waits for b's lock
        env.wait_waiting(1)
        a2.call("CLIENTID", "greedy", "SECRET", "greedy-secret-0123456789")  # its second connection
        assert_error(a2.call("TRYLOCK", names[2], 5, "WAIT", 5000), "LIMIT", "max_waiters_per_client",
                     what="greedy's second waiter")
        other = env.client(label="b-2")
        other.send("LOCK", names[2], 9)       # another client-id may still wait
        env.wait_waiting(2)
        assert_eq(b.call("UNLOCK", names[2], 1), 1, "b frees the lock")
        assert_eq(a1.read_reply(timeout=5), "OK", "greedy's waiter gets it first")
        _lock_unlock(env, b, "after the refusals")
