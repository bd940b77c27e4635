"""The wire protocol: RESP arrays and inline commands, replies, INFO, bad input and limits."""

import os
import socket
import struct
import subprocess
import time

from harness import (Env, HOST, RespClient, RespError, Status, assert_eq, assert_error,
                     encode_command, parse_info, redis_cli, wait_until)

MAX_REQUEST_BYTES = 4096
MAX_REQUEST_ARGS = 16
MAX_NAME_LENGTH = 200

CONFIG = {
    "server": {"max_request_bytes": MAX_REQUEST_BYTES, "max_request_args": MAX_REQUEST_ARGS,
               "max_name_length": MAX_NAME_LENGTH},
    "lock": {"watchdog_timeout_ms": 600},
}


def _still_serves(env, what):
    c = RespClient(env.port, timeout=2.0, label="bystander")
    try:
        assert_eq(c.call("PING"), "PONG", "PING from another client after %s" % what)
        n = env.name("after")
        assert_eq(c.call("TRYLOCK", n, 1), 1, "TRYLOCK from another client after %s" % what)
        assert_eq(c.call("UNLOCK", n, 1), 1, "UNLOCK from another client after %s" % what)
    finally:
        c.close()


def _expect_error_then_close(c, what, contains=None):
    r = c.read_reply(2.0)
    assert isinstance(r, RespError) and r.code == "ERR", "%s: expected -ERR, got %r" % (what, r)
    if contains:
        assert contains.lower() in r.message.lower(), "%s: error %r lacks %r" % (what, r, contains)
    assert c.wait_closed(2.0), "%s: connection not closed after the error" % what


# ---------------------------------------------------------------- basics


def test_ping_replies_pong_status_and_echoes_message_as_bulk(env):
    c = env.client()
    r = c.call("PING")
    assert isinstance(r, Status) and r == "PONG", "PING: %r" % (r,)
    r = c.call("PING", "hello world")
    assert not isinstance(r, Status) and r == "hello world", "PING msg: %r (want bulk)" % (r,)
    c.send_raw(b"PING\r\n")
    assert_eq(c.read_reply(), "PONG", "inline PING")


def test_ping_with_empty_message_echoes_empty_bulk(env):
    c = env.client()
    r = c.call("PING", "")
    assert not isinstance(r, Status) and r == "", "PING '' (as Redis does): want empty bulk, got %r" % (r,)


def test_quit_replies_ok_then_closes(env):
    c = env.client()
    assert_eq(c.call("QUIT"), "OK", "QUIT")
    assert c.wait_closed(1.0), "connection still open after QUIT"
    _still_serves(env, "QUIT")


def test_command_names_are_case_insensitive(env):
    n = env.name("case")
    c = env.client()
    assert_eq(c.call("ping"), "PONG", "ping")
    assert_eq(c.call("PiNg"), "PONG", "PiNg")
    assert_eq(c.call("lock", n, 1), "OK", "lock")
    assert_eq(c.call("HoldCount", n, 1), 1, "HoldCount")
    assert_eq(c.call("trylock", n, 1, "wait", 10, "lease", 5000), 1, "trylock with lower-case options")
    assert_eq(c.call("unlock", n, 1), 0, "unlock")
    assert_eq(c.call("Unlock", n, 1), 1, "Unlock")


def test_info_has_all_sections_and_fields(env):
    c = env.client()
    text = c.call("INFO")
    assert isinstance(text, str), "INFO reply: %r" % (text,)
    headers = [line.strip() for line in text.splitlines()]
    for section in ("# Server", "# Clients", "# Locks", "# Stats", "# Redis"):
        assert section in headers, "INFO lacks section %r:\n%s" % (section, text)
    info = parse_info(text)
    for key in ("redis_connected", "connected_clients", "blocked_clients", "held_locks",
                "waiting_clients", "locks_lost", "watchdog_renewals", "watchdog_batches"):
        assert key in info, "INFO lacks field %r:\n%s" % (key, text)
        if key != "redis_connected":
            assert info[key].isdigit(), "INFO %s is not a number: %r" % (key, info[key])
    assert_eq(info["redis_connected"], "1", "redis_connected")
    assert int(info["connected_clients"]) >= 1, "connected_clients counts this connection"


def test_info_with_section_argument_answers_that_section(env):
    c = env.client()
    text = c.call("INFO", "locks")
    assert isinstance(text, str) and "held_locks:" in text, "INFO locks: %r" % (text,)
    text = c.call("info", "REDIS")
    assert isinstance(text, str) and "redis_connected:1" in text, "INFO REDIS: %r" % (text,)


def test_info_counts_clients_held_locks_and_blocked_clients(env):
    c = env.client()

    def quiet():
        info = parse_info(c.call("INFO"))
        return all(info.get(k) == "0" for k in ("held_locks", "blocked_clients", "waiting_clients"))
    wait_until(quiet, 2.0, what="no held locks or waiters left from earlier tests (their clients closed)")
    base = parse_info(c.call("INFO"))
    extra = [env.client() for _ in range(3)]
    for e in extra:
        e.call("PING")
    info = parse_info(c.call("INFO"))
    assert_eq(int(info["connected_clients"]), int(base["connected_clients"]) + 3, "connected_clients with 3 more")
    n1, n2 = env.name("info"), env.name("info")
    extra[0].call("LOCK", n1, 1)
    extra[0].call("LOCK", n1, 1)
    extra[1].call("LOCK", n2, 1)
    info = parse_info(c.call("INFO"))
    assert_eq(int(info["held_locks"]), int(base["held_locks"]) + 2, "held_locks with 2 locks held")
    extra[2].send("LOCK", n1, 9)
    env.wait_waiting(int(base["waiting_clients"]) + 1, what="the LOCK of a held lock queued")
    extra[2].expect_no_reply(0.2, "LOCK of a held lock")
    info = parse_info(c.call("INFO"))
    assert_eq(int(info["blocked_clients"]), int(base["blocked_clients"]) + 1, "blocked_clients")
    assert_eq(int(info["waiting_clients"]), int(base["waiting_clients"]) + 1, "waiting_clients")
    for e in extra:
        e.close()
    wait_until(lambda: parse_info(c.call("INFO"))["connected_clients"] == base["connected_clients"], 2.0,
               what="connected_clients back to %s after closing" % base["connected_clients"])
    info = parse_info(c.call("INFO"))
    assert_eq(info["held_locks"], base["held_locks"], "held_locks after the holders closed")
    assert_eq(info["blocked_clients"], base["blocked_clients"], "blocked_clients after the waiter closed")


# ---------------------------------------------------------------- bad arguments


def test_unknown_command_is_err_and_connection_stays_open(env):
    c = env.client()
    assert_error(c.call("FROBNICATE", "x"), "ERR", "unknown command", "unknown command")
    assert_error(c.call("GET", "x"), "ERR", "unknown command", "GET (a Redis command rlockd lacks)")
    assert_eq(c.call("PING"), "PONG", "PING on the same connection afterwards")


def test_wrong_arity_is_err_for_each_command(env):
    c = env.client()
    n = env.name("arity")
    bad = [
        ("LOCK",), ("LOCK", n), ("LOCK", n, 1, "FAIR", "LEASE", 100, "X"),
        ("TRYLOCK", n), ("TRYLOCK", n, 1, "FAIR", "WAIT", 1, "LEASE", 100, "X"),
        ("UNLOCK", n), ("UNLOCK", n, 1, "READ", 2), ("FORCEUNLOCK",), ("FORCEUNLOCK", n, "READ", 1),
        ("ISLOCKED",), ("ISLOCKED", n, "READ", 1), ("ISHELD", n), ("ISHELD", n, 1, "READ", 2),
        ("HOLDCOUNT", n), ("HOLDCOUNT", n, 1, "READ", 2), ("PTTL",), ("PTTL", n, "READ", 1),
        ("TOKEN",), ("TOKEN", n, "FENCED"),
        ("CLIENTID", "a", "SECRET", "s" * 16, "RESUME", "b"), ("PING", "a", "b"), ("QUIT", "now"),
    ]
    for args in bad:
        assert_error(c.call(*args), "ERR", "wrong number of arguments", " ".join(map(str, args)))
    # one word more than the fixed arguments is a kind word, or a syntax error
    for args in (("UNLOCK", n, 1, 2), ("FORCEUNLOCK", n, 1), ("ISLOCKED", n, "SHARED"),
                 ("LOCK", n, 1, "READ", "WRITE")):
        assert_error(c.call(*args), "ERR", "syntax error", " ".join(map(str, args)))
    assert_eq(c.call("ISLOCKED", n), 0, "nothing was locked by the bad commands")
    assert_eq(c.call("PING"), "PONG", "PING afterwards")


def test_bad_thread_id_is_err(env):
    c = env.client()
    n = env.name("tid")
    for tid in ("abc", "-1", "+1", "1.5", "", " 1", "0x10", "18446744073709551616", "99999999999999999999999"):
        for cmd in (("LOCK", n, tid), ("TRYLOCK", n, tid), ("UNLOCK", n, tid), ("HOLDCOUNT", n, tid),
                    ("ISHELD", n, tid)):
            assert_error(c.call(*cmd), "ERR", what="%s with thread-id %r" % (cmd[0], tid))
    assert_eq(c.call("ISLOCKED", n), 0, "nothing was locked by the bad commands")
    _still_serves(env, "bad thread-ids")


def test_bad_lease_and_wait_values_are_err(env):
    c = env.client()
    n = env.name("opt")
    bad = [
        ("LOCK", n, 1, "LEASE", 0), ("LOCK", n, 1, "LEASE", -2), ("LOCK", n, 1, "LEASE", "abc"),
        ("LOCK", n, 1, "LEASE", "1.5"), ("LOCK", n, 1, "LEASE", "10000000000000"),
        ("LOCK", n, 1, "WAIT", 100), ("LOCK", n, 1, "FOO", 1),
        ("TRYLOCK", n, 1, "LEASE", 0), ("TRYLOCK", n, 1, "WAIT", -2), ("TRYLOCK", n, 1, "WAIT", "x"),
        ("TRYLOCK", n, 1, "WAIT"), ("TRYLOCK", n, 1, "LEASE"), ("TRYLOCK", n, 1, "BOGUS", 5),
        ("TRYLOCK", n, 1, "WAIT", "10000000000000"),
    ]
    for args in bad:
        assert_error(c.call(*args), "ERR", what=" ".join(map(str, args)))
    assert_eq(c.call("ISLOCKED", n), 0, "nothing was locked by the bad commands")
    assert_eq(c.call("LOCK", n, 1, "LEASE", 1000), "OK", "a good LEASE afterwards")


def test_empty_name_is_err(env):
    c = env.client()
    for args in (("LOCK", "", 1), ("TRYLOCK", "", 1), ("UNLOCK", "", 1), ("FORCEUNLOCK", ""),
                 ("ISLOCKED", ""), ("ISHELD", "", 1), ("HOLDCOUNT", "", 1), ("PTTL", "")):
        assert_error(c.call(*args), "ERR", what="%s with an empty name" % args[0])
    assert_error(c.inline('LOCK "" 1'), "ERR", what="inline LOCK with an empty quoted name")
    assert_eq(env.redis("EXISTS", ""), 0, "no key named '' in Redis")
    _still_serves(env, "empty names")


def test_name_longer_than_max_name_length_is_err(env):
    c = env.client()
    ok = "n" * MAX_NAME_LENGTH
    assert_eq(c.call("TRYLOCK", ok, 1), 1, "TRYLOCK with a %d-byte name" % MAX_NAME_LENGTH)
    assert_eq(c.call("UNLOCK", ok, 1), 1, "UNLOCK with a %d-byte name" % MAX_NAME_LENGTH)
    long = "n" * (MAX_NAME_LENGTH + 1)
    assert_error(c.call("TRYLOCK", long, 1), "ERR", what="TRYLOCK with a %d-byte name" % len(long))
    assert_eq(env.redis("EXISTS", long), 0, "over-long name not written to Redis")
    assert_eq(c.call("PING"), "PONG", "PING afterwards")


def test_invalid_client_id_is_err_and_id_unchanged(env):
    c = env.client()
    before = c.call("CLIENTID")
    for bad in ("", "a:b", "a b", "a/b", "é", "x" * 65, "a\tb", "{x}"):
        assert_error(c.call("CLIENTID", bad), "ERR", what="CLIENTID %r" % bad)
    assert_eq(c.call("CLIENTID"), before, "client-id after refused CLIENTIDs")
    ok = "A-z_0.9" + "x" * 57
    assert_eq(c.call("CLIENTID", ok), "OK", "CLIENTID of 64 allowed characters")
    assert_eq(c.call("CLIENTID"), ok, "CLIENTID query")


def test_clientid_change_refused_while_last_connection_holds_locks(env):
    n = env.name("cid")
    c = env.client()
    c.call("CLIENTID", "holder-x")
    c.call("LOCK", n, 1)
    assert_error(c.call("CLIENTID", "holder-y"), "ERR", what="CLIENTID change while holding a lock")
    assert_eq(c.call("CLIENTID"), "holder-x", "client-id after the refused change")
    assert_eq(c.call("UNLOCK", n, 1), 1, "UNLOCK")
    assert_eq(c.call("CLIENTID", "holder-y"), "OK", "CLIENTID change after releasing")


# ---------------------------------------------------------------- garbage and limits


def test_garbage_bytes_get_error_and_other_clients_unaffected(env):
    n = env.name("garb")
    holder = env.client()
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by a bystander")
    g = env.client()
    g.send_raw(b"\x00\x01\x02\xff\xfe garbage \x7f\r\n")
    assert_error(g.read_reply(), "ERR", what="a line of binary garbage")
    assert_eq(g.call("PING"), "PONG", "PING on the same connection after an unknown-command line")
    g2 = env.client()
    g2.send_raw(b"*2\r\nthis is not a bulk\r\n")
    _expect_error_then_close(g2, "array element without '$'", "protocol error")
    g3 = env.client()
    g3.send_raw(b"*x\r\n")
    _expect_error_then_close(g3, "non-numeric multibulk length", "protocol error")
    g4 = env.client()
    g4.send_raw(b"*1\r\n$abc\r\n")
    _expect_error_then_close(g4, "non-numeric bulk length", "protocol error")
    assert_eq(holder.call("HOLDCOUNT", n, 1), 1, "bystander still holds its lock")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "bystander UNLOCK")
    _still_serves(env, "garbage")


def test_oversized_inline_line_gets_error_then_close(env):
    c = env.client()
    c.send_raw(b"PING " + b"a" * (MAX_REQUEST_BYTES + 100))   # no end of line yet
    _expect_error_then_close(c, "inline line over max_request_bytes", "protocol error")
    c2 = env.client()
    try:
        c2.send_raw(b"PING " + b"b" * (MAX_REQUEST_BYTES * 4) + b"\r\n")
    except OSError:
        pass   # the daemon may close before reading everything
    _expect_error_then_close(c2, "inline line over max_request_bytes, with CRLF", "protocol error")
    _still_serves(env, "an oversized inline line")


def test_oversized_bulk_header_gets_error_then_close(env):
    c = env.client()
    c.send_raw(b"*2\r\n$4\r\nPING\r\n$1000000000\r\n")
    _expect_error_then_close(c, "bulk header of 1e9 bytes", "protocol error")
    c2 = env.client()
    c2.send_raw(b"*2\r\n$4\r\nPING\r\n$%d\r\n" % (MAX_REQUEST_BYTES + 1))
    _expect_error_then_close(c2, "bulk header just over max_request_bytes", "protocol error")
    _still_serves(env, "an oversized bulk header")


def test_bulk_within_limit_is_accepted(env):
    c = env.client()
    msg = "m" * (MAX_REQUEST_BYTES // 2)
    assert_eq(c.call("PING", msg), msg, "PING with a %d-byte message" % len(msg))


def test_oversized_multibulk_count_gets_error_then_close(env):
    c = env.client()
    c.send_raw(b"*1000000000\r\n")
    _expect_error_then_close(c, "array header of 1e9 elements", "protocol error")
    _still_serves(env, "an oversized array header")


def test_too_many_arguments_gets_error_then_close(env):
    c = env.client()
    c.send_raw(encode_command("PING", *(["x"] * MAX_REQUEST_ARGS)))  # MAX_REQUEST_ARGS + 1 arguments
    _expect_error_then_close(c, "%d arguments" % (MAX_REQUEST_ARGS + 1), "protocol error")
    c2 = env.client()
    assert_error(c2.call(*(["PING"] + ["x"] * (MAX_REQUEST_ARGS - 1))), "ERR", "wrong number of arguments",
                 "PING with %d arguments (at the limit)" % MAX_REQUEST_ARGS)
    _still_serves(env, "too many arguments")


def test_max_clients_plus_one_is_refused_with_error():
    with Env({"server": {"max_clients": 4}, "lock": {"watchdog_timeout_ms": 600}}) as env:
        conns = []
        for i in range(4):
            c = env.client(label="slot%d" % (i + 1))
            if i == 0:   # rlockd has reaped the harness's start-up probe: this is its only client
                first = c
                wait_until(lambda: parse_info(first.call("INFO"))["connected_clients"] == "1", 5.0,
                           what="INFO connected_clients:1 on the first connection (start-up probe gone)")
            assert_eq(c.call("PING"), "PONG", "PING on connection %d of 4" % (i + 1))
            conns.append(c)
        extra = env.client(label="fifth")
        r = extra.read_reply(2.0)
        assert_error(r, "LIMIT", "max", "the 5th connection with max_clients=4")
        assert extra.wait_closed(1.0), "5th connection not closed after the error"
        for c in conns:
            assert_eq(c.call("PING"), "PONG", "the 4 admitted connections still serve")
        conns[0].close()

        def admitted():
            c = RespClient(env.port, timeout=1.0, label="after-close")
            try:
                return c.call("PING") == "PONG"
            except AssertionError:
                return False
            finally:
                c.close()
        wait_until(admitted, 2.0, interval=0.05, what="a new connection admitted after one closed")


# ---------------------------------------------------------------- framing


def test_pipelined_commands_are_answered_in_order(env):
    n = env.name("pipe")
    c = env.client()
    cmds = [("PING",), ("CLIENTID", "piper"), ("CLIENTID",), ("LOCK", n, 1), ("LOCK", n, 1),
            ("HOLDCOUNT", n, 1), ("NOPE",), ("UNLOCK", n, 1), ("ISLOCKED", n), ("UNLOCK", n, 1),
            ("ISLOCKED", n), ("PTTL", n), ("PING", "end")]
    c.send_raw(b"".join(encode_command(*x) for x in cmds) + b"PING inline\r\n")
    want = ["PONG", "OK", "piper", "OK", "OK", 2, None, 0, 1, 1, 0, -2, "end", "inline"]
    for cmd, w in zip(cmds + [("PING", "inline")], want):
        r = c.read_reply(2.0)
        if w is None:
            assert_error(r, "ERR", "unknown command", "pipelined %s" % cmd[0])
        else:
            assert_eq(r, w, "pipelined %s" % " ".join(map(str, cmd)))


def test_pipelined_command_behind_a_blocked_lock_waits_for_it(env):
    n = env.name("pipe")
    a, b = env.client(), env.client()
    a.call("LOCK", n, 1)
    b.send_raw(encode_command("LOCK", n, 2) + encode_command("PING", "after"))
    env.wait_waiting(1, what="b's LOCK queued behind a")
    b.expect_no_reply(0.3, "LOCK (and the PING pipelined behind it)")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
    assert_eq(b.read_reply(2.0), "OK", "b's LOCK")
    assert_eq(b.read_reply(2.0), "after", "the PING pipelined behind it")


def test_request_split_into_single_bytes_is_parsed(env):
    n = env.name("split")
    c = env.client()
    data = encode_command("TRYLOCK", n, 1, "WAIT", 10) + b"HOLDCOUNT %s 1\r\n" % n.encode()
    for i in range(len(data)):
        c.send_raw(data[i:i + 1])
        if i % 7 == 0:
            time.sleep(0.001)
    assert_eq(c.read_reply(), 1, "TRYLOCK sent one byte at a time")
    assert_eq(c.read_reply(), 1, "inline HOLDCOUNT sent one byte at a time")


def test_inline_commands_with_bare_lf_as_nc_sends(env):
    n = env.name("lf")
    c = env.client()
    c.send_raw(b"PING\nPING hi\nLOCK %s 5\nHOLDCOUNT %s 5\nUNLOCK %s 5\n" % (n.encode(), n.encode(), n.encode()))
    assert_eq(c.read_reply(), "PONG", "PING\\n")
    assert_eq(c.read_reply(), "hi", "PING hi\\n")
    assert_eq(c.read_reply(), "OK", "LOCK\\n")
    assert_eq(c.read_reply(), 1, "HOLDCOUNT\\n")
    assert_eq(c.read_reply(), 1, "UNLOCK\\n")
    c.send_raw(b"\n\r\n  \nPING\n")   # empty lines are skipped silently
    assert_eq(c.read_reply(), "PONG", "PING after empty lines")


def test_inline_quoted_arguments(env):
    c = env.client()
    assert_eq(c.inline('PING "hello world"'), "hello world", "double-quoted argument")
    assert_eq(c.inline("PING 'single quoted'"), "single quoted", "single-quoted argument")
    n = "spaced name %d" % time.monotonic_ns()
    assert_eq(c.inline('LOCK "%s" 1' % n), "OK", "LOCK with a quoted name containing spaces")
    assert_eq(env.redis("HLEN", n), 1, "the quoted name is the Redis key")
    assert_eq(c.inline('UNLOCK "%s" 1' % n), 1, "UNLOCK with a quoted name")


def test_redis_cli_talks_to_rlockd(env):
    exe = redis_cli()
    n = env.name("cli")
    out = env.redis_cli("PING", port=env.port, raw=True)
    assert_eq(out, "PONG", "redis-cli PING")
    out = env.redis_cli("PING", "via cli", port=env.port, raw=True)
    assert_eq(out, "via cli", "redis-cli PING msg")
    script = "CLIENTID cli-client\nLOCK %s 1\nLOCK %s 1\nHOLDCOUNT %s 1\nISHELD %s 1\nUNLOCK %s 1\nUNLOCK %s 1\n" \
             "ISLOCKED %s\nUNLOCK %s 1\n" % ((n,) * 8)
    out = env.redis_cli(stdin=script, port=env.port, raw=True)
    lines = out.splitlines()
    assert_eq(lines[:7], ["OK", "OK", "OK", "2", "1", "0", "1"], "redis-cli session output")
    assert len(lines) >= 9 and lines[7] == "0" and lines[8].startswith("NOTOWNER"), \
        "redis-cli session tail: %r" % lines[7:]
    r = subprocess.run([exe, "-h", HOST, "-p", str(env.port), "INFO"], capture_output=True, text=True, timeout=10)
    assert "redis_connected:1" in r.stdout, "redis-cli INFO output lacks redis_connected:1: %r" % r.stdout[:300]


def test_connection_reset_by_client_mid_request_does_not_disturb_others(env):
    for i in range(5):
        s = socket.create_connection((HOST, env.port), timeout=2.0)
        s.sendall(b"*3\r\n$4\r\nLOCK\r\n$3\r\nab")   # half a request
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()                                  # RST
    _still_serves(env, "clients reset mid-request")


def test_unix_socket_listener_serves_like_tcp():
    with Env({"server": {"unix_socket": "{tmpdir}/rlockd.sock"}, "lock": {"watchdog_timeout_ms": 600}}) as env:
        path = os.path.join(env.tmpdir, "rlockd.sock")
        assert os.path.exists(path), "unix socket %s not created" % path
        c = RespClient(None, unix_path=path, label="unix-client")
        env.clients.append(c)
        assert_eq(c.call("PING"), "PONG", "PING over the unix socket")
        assert_eq(c.call("CLIENTID", "unix-cl"), "OK", "CLIENTID over the unix socket")
        n = env.name("unix")
        assert_eq(c.call("LOCK", n, 1), "OK", "LOCK over the unix socket")
        assert_eq(env.redis_hash(n), {"unix-cl:1": "1"}, "hash of a lock taken over the unix socket")
        tcp = env.client()
        assert_eq(tcp.call("TRYLOCK", n, 2), 0, "TRYLOCK over TCP while a unix client holds it")
        c.close()
        wait_until(lambda: env.redis("EXISTS", n) == 0, 1.0, what="lock released when the unix client closed")
