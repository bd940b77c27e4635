"""Every Redis client works with its default options (issue 13): the
connection commands (HELLO, CLIENT, SELECT, ECHO, COMMAND, TIME, RESET),
half-closed connections answered in full, and lock-lost events through
ordinary pub/sub, driven by redis-py (sync and asyncio), ioredis,
node-redis 5 (RESP2) and 6 (RESP3), ruby-redis, hiredis and redis-cli."""

import json
import os
import select
import socket
import subprocess
import time
import uuid

from harness import (Env, HOST, RespClient, Skip, TempDir, assert_eq, assert_error, node_with, redis_cli,
                     ruby_redis, system_python, wait_info, wait_until, which)

LEASE_MS = 200

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}


def _identity():
    """A client-id and its secret, fresh for each test."""
    return "compat-" + uuid.uuid4().hex[:10], uuid.uuid4().hex


def _join(c, cid, secret):
    assert_eq(c.call("CLIENTID", cid, "SECRET", secret), "OK", "CLIENTID %s" % cid)


def _subscriber(env, cid, secret):
    s = env.client(label="subscriber")
    _join(s, cid, secret)
    assert_eq(s.call("SUBSCRIBE", "rlockd:lost:" + cid), ["subscribe", "rlockd:lost:" + cid, 1],
              "SUBSCRIBE to its own lock-lost channel")
    return s


def _lost_event(s, cid, timeout=3.0):
    """The next message on s: checks its shape, returns its payload decoded."""
    m = s.read_reply(timeout)
    assert isinstance(m, list) and len(m) == 3 and m[:2] == ["message", "rlockd:lost:" + cid], \
        "expected a lock-lost message, got %r" % (m,)
    return json.loads(m[2])


# ---- connection commands -----------------------------------------------------

def test_hello_answers_resp2_as_redis_7(env):
    c = env.client()
    hello = c.call("HELLO")
    assert_eq(hello[0::2], ["server", "version", "proto", "id", "mode", "role", "modules"], "HELLO's keys")
    fields = dict(zip(hello[0::2], hello[1::2]))
    assert_eq((fields["server"], fields["proto"], fields["mode"], fields["role"], fields["modules"]),
              ("rlockd", 2, "standalone", "master", []), "HELLO's values")
    assert_eq(fields["id"], c.call("CLIENT", "ID"), "HELLO's id is CLIENT ID")
    assert_eq(c.call("HELLO", 2)[:2], ["server", "rlockd"], "HELLO 2")
    for version in (1, 4, 0):   # checked before the options, as Redis 7 does
        assert_error(c.call("HELLO", version, "FOO"), "NOPROTO", "unsupported protocol version",
                     "HELLO %d" % version)
    assert_error(c.call("HELLO", "x"), "ERR", "Protocol version is not an integer", "HELLO x")
    assert_error(c.call("HELLO", 2, "FOO"), "ERR", "Syntax error in HELLO option 'FOO'", "HELLO 2 FOO")
    assert_eq(c.call("HELLO", 2, "SETNAME", "worker-1")[0], "server", "HELLO 2 SETNAME")
    assert_eq(c.call("CLIENT", "GETNAME"), "worker-1", "the name HELLO set")
    # without AUTH configured the default user needs no password, as Redis's nopass default
    assert_eq(c.call("HELLO", 2, "AUTH", "default", "anything")[0], "server", "HELLO AUTH default")
    assert_error(c.call("HELLO", 2, "AUTH", "bob", "x"), "ERR", "invalid username-password pair",
                 "HELLO AUTH of an unknown user")


def test_hello_auth_logs_in_and_reset_logs_out():
    with Env({"server": {"auth_token": "s3cret-token"}}, label="compat-auth") as env:
        c = env.client()
        assert_error(c.call("HELLO", 2), "NOAUTH", "HELLO must be called with the client already "
                     "authenticated", "HELLO before AUTH")
        assert_error(c.call("ECHO", "x"), "NOAUTH", what="ECHO before AUTH")
        assert_eq(c.call("HELLO", 2, "AUTH", "default", "s3cret-token")[0], "server", "HELLO 2 AUTH")
        assert_eq(c.call("ECHO", "x"), "x", "ECHO once HELLO authenticated")
        assert_eq(c.call("RESET"), "RESET", "RESET")
        assert_error(c.call("ECHO", "x"), "NOAUTH", what="ECHO after RESET")


def test_client_subcommands_and_client_list_fields(env):
    cid, secret = _identity()
    c = env.client()
    _join(c, cid, secret)
    assert_eq(c.call("CLIENT", "GETNAME"), None, "no name yet")
    assert_eq(c.call("CLIENT", "SETNAME", "orders-worker"), "OK", "CLIENT SETNAME")
    assert_eq(c.call("CLIENT", "GETNAME"), "orders-worker", "CLIENT GETNAME")
    assert_error(c.call("CLIENT", "SETNAME", "two words"), "ERR", "Client names cannot contain spaces",
                 "a name with a space")
    assert_eq(c.call("CLIENT", "SETINFO", "LIB-NAME", "redis-py"), "OK", "SETINFO LIB-NAME")
    assert_eq(c.call("CLIENT", "SETINFO", "lib-ver", "4.3.4"), "OK", "SETINFO LIB-VER")
    assert_error(c.call("CLIENT", "SETINFO", "COLOR", "red"), "ERR", "Unrecognized option", "SETINFO COLOR")
    n = env.name("listed")
    assert_eq(c.call("LOCK", n, 1), "OK", "LOCK")
    info = c.call("CLIENT", "INFO")
    fields = dict(w.split("=", 1) for w in info.split())
    for key in ("id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "cmd"):
        assert key in fields, "CLIENT INFO lacks %s=: %r" % (key, info)
    assert_eq((fields["id"], fields["name"], fields["db"], fields["flags"], fields["cmd"]),
              (str(c.call("CLIENT", "ID")), "orders-worker", "0", "N", "client|info"), "CLIENT INFO")
    assert_eq((fields["client-id"], fields["locks"], fields["lib-name"], fields["lib-ver"]),
              (cid, "1", "redis-py", "4.3.4"), "rlockd's fields and the library")
    listing = c.call("CLIENT", "LIST").splitlines()
    mine = [line for line in listing if (" client-id=%s " % cid) in line]
    assert_eq(len(mine), 1, "CLIENT LIST has this connection once: %r" % listing)
    assert_eq(c.call("UNLOCK", n, 1), 1, "UNLOCK")
    assert_error(c.call("CLIENT", "FROB"), "ERR", "unknown subcommand 'FROB'. Try CLIENT HELP.", "CLIENT FROB")
    assert_error(c.call("CLIENT", "GETNAME", "x"), "ERR", "wrong number of arguments for 'client|getname'",
                 "CLIENT GETNAME x")


def test_select_echo_time_command_and_unknown_commands(env):
    c = env.client()
    assert_eq(c.call("SELECT", 0), "OK", "SELECT 0")
    assert_error(c.call("SELECT", 1), "ERR", "DB index is out of range", "SELECT 1")
    assert_error(c.call("SELECT", "one"), "ERR", "value is not an integer", "SELECT one")
    assert_eq(c.call("ECHO", "a b\r\n"), "a b\r\n", "ECHO")
    sec, usec = c.call("TIME")
    assert abs(int(sec) - time.time()) < 5 and 0 <= int(usec) < 1000000, "TIME %r" % ((sec, usec),)
    count = c.call("COMMAND", "COUNT")
    everything = c.call("COMMAND")
    assert_eq(len(everything), count, "COMMAND lists COMMAND COUNT commands")
    assert_eq(sorted(e[0] for e in everything), sorted(c.call("COMMAND", "LIST")), "COMMAND LIST")
    lock, missing = c.call("COMMAND", "INFO", "lock", "get")
    assert_eq((lock[0], lock[1], lock[3:6], missing), ("lock", -3, [1, 1, 1], None), "COMMAND INFO lock get")
    docs = c.call("COMMAND", "DOCS", "unlock")
    assert_eq(docs[0], "unlock", "COMMAND DOCS names the command")
    assert "summary" in docs[1], "COMMAND DOCS has a summary: %r" % docs
    assert_error(c.call("GET", "k"), "ERR", "unknown command 'GET', with args beginning with: 'k'", "GET k")
    assert_error(c.call("FLUSHALL"), "ERR", "unknown command 'FLUSHALL', with args beginning with:",
                 "FLUSHALL")


def test_reset_ends_the_subscription_and_starts_a_new_session(env):
    cid, secret = _identity()
    holder = env.client(label="holder")
    _join(holder, cid, secret)
    n = env.name("reset")
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK")
    s = _subscriber(env, cid, secret)
    assert_eq(s.call("RESET"), "RESET", "RESET while subscribed")
    assert cid != s.call("CLIENTID"), "RESET gave the connection a new client-id"
    assert_eq(s.call("PING"), "PONG", "no longer in subscribed mode")
    assert_eq(holder.call("HOLDCOUNT", n, 1), 1, "the session RESET left keeps its lock (another connection)")
    assert_eq(holder.call("RESET"), "RESET", "RESET of the session's last connection")
    wait_until(lambda: env.client().call("ISLOCKED", n) == 0, 3.0, what="its lock released as on close")


# ---- half-close ------------------------------------------------------------------

def _half_closed_replies(env, payload):
    """Sends payload on a raw socket, shuts down its sending side, and reads
    until rlockd closes: every byte it answered."""
    sock = socket.create_connection((HOST, env.port), timeout=5.0)
    try:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    finally:
        sock.close()


def test_half_close_answers_every_request_sent_before_eof(env):
    n = env.name("half")
    lines = ["ISLOCKED %s" % n, "TRYLOCK %s 1" % n, "ISHELD %s 1" % n, "LOCK %s 1" % n,
             "HOLDCOUNT %s 1" % n, "UNLOCK %s 1" % n, "UNLOCK %s 1" % n, "PING"]
    data = _half_closed_replies(env, ("\r\n".join(lines) + "\r\n").encode())
    assert_eq(data, b":0\r\n:1\r\n:1\r\n+OK\r\n:2\r\n:0\r\n:1\r\n+PONG\r\n", "the replies before the close")
    assert_eq(env.client().call("ISLOCKED", n), 0, "nothing left held")


def test_half_close_with_nc(env):
    nc = which("nc")
    if not nc:
        raise Skip("nc not found (apt-get install netcat-openbsd)")
    n = env.name("nc")
    r = subprocess.run([nc, "-q", "1", HOST, str(env.port)], input=b"ISLOCKED %s\n" % n.encode(),
                       capture_output=True, timeout=10)
    assert_eq(r.stdout, b":0\r\n", "echo ISLOCKED | nc -q 1")
    script = "LOCK {n} 1\nISHELD {n} 1\nOWNERS {n}\nUNLOCK {n} 1\n".format(n=n).encode()
    r = subprocess.run([nc, "-N", HOST, str(env.port)], input=script, capture_output=True, timeout=10)
    assert r.stdout.startswith(b"+OK\r\n:1\r\n*3\r\n") and r.stdout.endswith(b":1\r\n"), \
        "LOCK, ISHELD, OWNERS, UNLOCK through nc -N: %r" % r.stdout


def test_half_close_cancels_a_waiting_lock_and_grants_it_to_nobody(env):
    n = env.name("eofwait")
    holder = env.client(label="holder")
    assert_eq(holder.call("LOCK", n, 1), "OK", "the holder's LOCK")
    cid, secret = _identity()
    other = env.client(label="same client-id, stays open")
    _join(other, cid, secret)
    sock = socket.create_connection((HOST, env.port), timeout=5.0)
    try:
        sock.sendall(b"CLIENTID %s SECRET %s\r\nLOCK %s 7\r\n" % (cid.encode(), secret.encode(), n.encode()))
        wait_info(env, "waiting_clients", 1, what="the LOCK is queued")
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    assert data.startswith(b"+OK\r\n-ERR cancelled"), "CLIENTID's +OK, then the cancelled LOCK: %r" % data
    wait_info(env, "waiting_clients", 0, what="the waiter gone")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "the holder releases")
    time.sleep(0.2)
    assert_eq(other.call("HOLDCOUNT", n, 7), 0, "the lock was not granted to the half-closed client's session")
    assert_eq(env.client().call("ISLOCKED", n), 0, "nobody holds it")


# ---- lock-lost events --------------------------------------------------------------

def test_subscribe_rules_and_subscribed_mode(env):
    cid, secret = _identity()
    c = env.client()
    _join(c, cid, secret)
    assert_error(c.call("SUBSCRIBE", "rlockd:lost:someone-else"), "ERR", "its own client-id",
                 "another client-id's channel")
    assert_error(c.call("SUBSCRIBE", "news"), "ERR", "its own client-id", "any other channel")
    assert_error(c.call("PSUBSCRIBE", "rlockd:lost:*"), "ERR", "not supported", "PSUBSCRIBE")
    assert_error(c.call("SSUBSCRIBE", "rlockd:lost:" + cid), "ERR", "not supported", "SSUBSCRIBE")
    ch = "rlockd:lost:" + cid
    assert_eq(c.call("SUBSCRIBE", ch), ["subscribe", ch, 1], "SUBSCRIBE")
    assert_eq(c.call("PING"), ["pong", ""], "PING while subscribed")
    assert_eq(c.call("PING", "hi"), ["pong", "hi"], "PING hi while subscribed")
    assert_error(c.call("LOCK", env.name(), 1), "ERR", "only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT "
                 "/ RESET are allowed", "LOCK while subscribed")
    assert_eq(c.call("PUNSUBSCRIBE"), ["punsubscribe", None, 1], "PUNSUBSCRIBE: no patterns")
    assert_eq(c.call("UNSUBSCRIBE"), ["unsubscribe", ch, 0], "UNSUBSCRIBE")
    assert_eq(c.call("UNSUBSCRIBE"), ["unsubscribe", None, 0], "UNSUBSCRIBE again")
    assert_eq(c.call("ISLOCKED", env.name()), 0, "commands again")
    assert_eq(c.call("QUIT"), "OK", "QUIT")


def test_lost_events_carry_name_kind_owner_and_reason(env):
    cid, secret = _identity()
    holder = env.client(label="holder")
    _join(holder, cid, secret)
    s = _subscriber(env, cid, secret)
    n = env.name('odd "name"\\\x01\xe9')
    assert_eq(holder.call("LOCK", n, 7, "LEASE", LEASE_MS), "OK", "LOCK with a lease")
    event = _lost_event(s, cid)
    # each byte that is not printable ASCII is \u00XX: UTF-8's two bytes of e-acute are two
    assert_eq(event, {"name": n.encode().decode("latin-1"), "kind": "", "owner": cid + ":7", "thread_id": 7,
                      "reason": "its lease ran out"}, "the lease's loss")
    m = env.name("fair")
    assert_eq(holder.call("LOCK", m, 18446744073709551615, "FAIR"), "OK", "a FAIR lock")
    assert_eq(env.client().call("FORCEUNLOCK", m, "FAIR"), 1, "FORCEUNLOCK by another client")
    event = _lost_event(s, cid)
    assert_eq((event["name"], event["kind"], event["thread_id"], event["reason"]),
              (m, "FAIR", 18446744073709551615, "FORCEUNLOCK"), "the FORCEUNLOCK's loss")
    stranger = _subscriber(env, *_identity())
    stranger.expect_no_reply(0.3, "another client-id's subscriber")


def test_every_subscriber_of_the_client_id_gets_it_and_counts_as_a_connection(env):
    cid, secret = _identity()
    holder = env.client(label="holder")
    _join(holder, cid, secret)
    s1, s2 = _subscriber(env, cid, secret), _subscriber(env, cid, secret)
    n = env.name("two")
    assert_eq(holder.call("LOCK", n, 1, "LEASE", LEASE_MS), "OK", "LOCK")
    assert_eq(_lost_event(s1, cid)["name"], n, "the first subscriber's event")
    assert_eq(_lost_event(s2, cid)["name"], n, "the second subscriber's event")
    k = env.name("kept")
    assert_eq(holder.call("LOCK", k, 1), "OK", "a watchdog lock")
    connected = env.info_int("connected_clients")
    holder.close()
    wait_until(lambda: env.info_int("connected_clients") < connected, 5.0, what="rlockd seeing the holder gone")
    assert_eq(env.client().call("ISLOCKED", k), 1, "the subscribers keep the session alive")
    s1.close()
    s2.close()
    wait_until(lambda: env.client().call("ISLOCKED", k) == 0, 3.0, what="released with the last connection")


def flood_a_slow_subscriber(resp3):
    """A subscriber that never reads (in RESP3 when resp3: its messages are
    pushes) is closed at max_output_buffer_bytes, and nobody waits for it."""
    with Env({"server": {"max_output_buffer_bytes": 16384}, "lock": {"watchdog_timeout_ms": 600}},
             label="compat-slow") as env:
        cid, secret = _identity()
        holder = env.client(label="holder")
        _join(holder, cid, secret)
        slow = RespClient(env.port, timeout=2.0, label="slow subscriber", rcvbuf=4096)
        env.clients.append(slow)
        if resp3:
            slow.hello3()
        _join(slow, cid, secret)
        slow.send("SUBSCRIBE", "rlockd:lost:" + cid)   # and never reads again
        wait_info(env, "pubsub_clients", 1, what="subscribed")
        names = [env.name("flood-" + "x" * 200) for _ in range(3000)]
        # A lease (no renewals to load the test) that outlives the set-up on
        # any machine: every hold is still there for its FORCEUNLOCK.
        for batch in range(0, len(names), 500):
            for n in names[batch:batch + 500]:
                holder.send("LOCK", n, 1, "LEASE", 600000)
            for n in names[batch:batch + 500]:
                assert_eq(holder.read_reply(5.0), "OK", "LOCK with a lease")
        bystander = env.client(label="bystander")
        for n in names:
            holder.send("FORCEUNLOCK", n)
        for n in names:
            assert_eq(holder.read_reply(5.0), 1, "FORCEUNLOCK")
        wait_info(env, "pubsub_clients", 0, what="the slow subscriber dropped")
        assert "a subscriber over max_output_buffer_bytes" in env.rlockd.log_text(), "the drop is logged"
        start = time.time()
        assert_eq(bystander.call("PING"), "PONG", "another connection is served")
        assert time.time() - start < 0.5, "and at once"
        assert_eq(holder.call("CLIENTID"), cid, "the holder's session lives on")


def test_a_slow_subscriber_is_dropped_and_harms_nobody():
    flood_a_slow_subscriber(resp3=False)


# ---- each Redis client, with its default options --------------------------------------

def _run(argv, what, env=None, timeout=30, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kw)
    assert_eq(r.returncode, 0, "%s exit status (stdout: %s; stderr: %s)" % (what, r.stdout, r.stderr))
    return r.stdout


def _check_client_output(out, cid, what):
    """Each client program prints LOCK's and UNLOCK's replies, then the
    lost event's payload, one a line."""
    lines = out.strip().splitlines()
    assert len(lines) == 3, "%s printed %r" % (what, out)
    assert lines[0] in ("OK", "True", "b'OK'"), "%s: LOCK replied %r" % (what, lines[0])
    assert_eq(lines[1], "1", "%s: UNLOCK" % what)
    event = json.loads(lines[2])
    assert_eq((event["owner"], event["thread_id"], event["reason"]), (cid + ":2", 2, "its lease ran out"),
              "%s: the lost event" % what)


def _system_python():
    return system_python(("redis", "python3-redis"))


REDIS_PY = r'''
import json, sys, redis
port, cid, secret, name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

class RlockdConnection(redis.Connection):
    """Every pooled connection joins the client-id's session."""
    def on_connect(self):
        super().on_connect()
        self.send_command("CLIENTID", cid, "SECRET", secret)
        if self.read_response() != b"OK":
            raise redis.ConnectionError("CLIENTID refused")

r = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=RlockdConnection, port=port))
print(r.execute_command("LOCK", name, 1).decode())
print(r.execute_command("UNLOCK", name, 1))
p = r.pubsub(ignore_subscribe_messages=True)
p.subscribe("rlockd:lost:" + cid)
r.execute_command("LOCK", name, 2, "LEASE", 200)
m = p.get_message(timeout=5)
while m is None:
    m = p.get_message(timeout=5)
print(m["data"].decode())
'''

REDIS_PY_ASYNC = r'''
import asyncio, sys
import redis.asyncio as redis
port, cid, secret, name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

class RlockdConnection(redis.Connection):
    async def on_connect(self):
        await super().on_connect()
        await self.send_command("CLIENTID", cid, "SECRET", secret)
        if await self.read_response() != b"OK":
            raise redis.ConnectionError("CLIENTID refused")

async def main():
    r = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=RlockdConnection, port=port))
    print((await r.execute_command("LOCK", name, 1)).decode())
    print(await r.execute_command("UNLOCK", name, 1))
    p = r.pubsub(ignore_subscribe_messages=True)
    await p.subscribe("rlockd:lost:" + cid)
    await r.execute_command("LOCK", name, 2, "LEASE", 200)
    while True:
        m = await p.get_message(timeout=5)
        if m is not None:
            print(m["data"].decode())
            break
    await p.close()
    await r.close()

asyncio.run(main())
'''


def test_redis_py_sync_with_default_options(env):
    cid, secret = _identity()
    out = _run([_system_python(), "-c", REDIS_PY, str(env.port), cid, secret, env.name("redis-py")], "redis-py")
    _check_client_output(out, cid, "redis-py")


def test_redis_py_asyncio_with_default_options(env):
    cid, secret = _identity()
    out = _run([_system_python(), "-c", REDIS_PY_ASYNC, str(env.port), cid, secret, env.name("redis-py-async")],
               "redis-py asyncio")
    _check_client_output(out, cid, "redis-py asyncio")


IOREDIS = r'''
const Redis = require("ioredis");
const [port, cid, secret, name] = process.argv.slice(-4);
(async () => {
  const r = new Redis(Number(port));
  await r.call("CLIENTID", cid, "SECRET", secret);
  console.log(await r.call("LOCK", name, 1));
  console.log(await r.call("UNLOCK", name, 1));
  const sub = new Redis(Number(port));
  await sub.call("CLIENTID", cid, "SECRET", secret);
  const lost = new Promise((resolve) => sub.on("message", (ch, msg) => resolve(msg)));
  await sub.subscribe("rlockd:lost:" + cid);
  await r.call("LOCK", name, 2, "LEASE", 200);
  console.log(await lost);
  sub.disconnect();
  r.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
'''

NODE_REDIS = r'''
const { createClient } = require("redis");
const [port, cid, secret, name] = process.argv.slice(-4);
(async () => {
  const r = createClient({ url: "redis://127.0.0.1:" + port });
  r.on("error", (e) => { console.error(e); process.exit(1); });
  await r.connect();
  await r.sendCommand(["CLIENTID", cid, "SECRET", secret]);
  console.log(await r.sendCommand(["LOCK", name, "1"]));
  console.log(await r.sendCommand(["UNLOCK", name, "1"]));
  const sub = r.duplicate();
  await sub.connect();
  await sub.sendCommand(["CLIENTID", cid, "SECRET", secret]);
  const lost = new Promise((resolve) => sub.subscribe("rlockd:lost:" + cid, resolve));
  await new Promise((resolve) => setTimeout(resolve, 100));
  await r.sendCommand(["LOCK", name, "2", "LEASE", "200"]);
  console.log(await lost);
  await sub.quit();
  await r.quit();
})().catch((e) => { console.error(e); process.exit(1); });
'''


# node-redis 6 speaks RESP3 (HELLO 3) by default: one connection holds
# the lock and, subscribed, hears of its loss, its LOCK sent while
# subscribed. First line: the connection's protocol, from CLIENT INFO.
NODE_REDIS6 = r'''
const { createClient } = require("redis6");
const [port, cid, secret, name] = process.argv.slice(-4);
(async () => {
  const r = createClient({ url: "redis://127.0.0.1:" + port });
  r.on("error", (e) => { console.error(e); process.exit(1); });
  await r.connect();
  console.log(String(await r.sendCommand(["CLIENT", "INFO"])).match(/ resp=(\d) /)[1]);
  await r.sendCommand(["CLIENTID", cid, "SECRET", secret]);
  console.log(await r.sendCommand(["LOCK", name, "1"]));
  console.log(await r.sendCommand(["UNLOCK", name, "1"]));
  let onLost;
  const lost = new Promise((resolve) => { onLost = resolve; });
  await r.subscribe("rlockd:lost:" + cid, onLost);
  await r.sendCommand(["LOCK", name, "2", "LEASE", "200"]);
  console.log(await lost);
  await r.quit();
})().catch((e) => { console.error(e); process.exit(1); });
'''


def test_ioredis_with_default_options(env):
    node, proc_env = node_with("ioredis")
    cid, secret = _identity()
    out = _run([node, "-e", IOREDIS, "--", str(env.port), cid, secret, env.name("ioredis")], "ioredis",
               env=proc_env)
    _check_client_output(out, cid, "ioredis")


def test_node_redis_with_default_options(env):
    node, proc_env = node_with("redis")
    cid, secret = _identity()
    out = _run([node, "-e", NODE_REDIS, "--", str(env.port), cid, secret, env.name("node-redis")], "node-redis",
               env=proc_env)
    _check_client_output(out, cid, "node-redis")


def test_node_redis_6_with_default_options_on_one_resp3_connection(env):
    node, proc_env = node_with("redis6")
    cid, secret = _identity()
    out = _run([node, "-e", NODE_REDIS6, "--", str(env.port), cid, secret, env.name("node-redis-6")],
               "node-redis 6", env=proc_env)
    protocol, _, rest = out.partition("\n")
    assert_eq(protocol, "3", "node-redis 6's protocol")
    _check_client_output(rest, cid, "node-redis 6")


RUBY_REDIS = r'''
require "redis"
port, cid, secret, name = ARGV
r = Redis.new(port: port.to_i)
r.call("CLIENTID", cid, "SECRET", secret)
puts r.call("LOCK", name, 1)
puts r.call("UNLOCK", name, 1)
sub = Redis.new(port: port.to_i)
sub.call("CLIENTID", cid, "SECRET", secret)
sub.subscribe_with_timeout(5, "rlockd:lost:" + cid) do |on|
  on.subscribe { r.call("LOCK", name, 2, "LEASE", 200) }
  on.message { |_channel, message| puts message; sub.unsubscribe }
end
'''


def test_ruby_redis_with_default_options(env):
    ruby = ruby_redis()
    cid, secret = _identity()
    out = _run([ruby, "-e", RUBY_REDIS, str(env.port), cid, secret, env.name("ruby")], "ruby-redis")
    _check_client_output(out, cid, "ruby-redis")


HIREDIS = r'''
#include <stdio.h>
#include <stdlib.h>
#include <hiredis/hiredis.h>

static redisReply *call(redisContext *c, const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(c, fmt, a, b);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "%s: %s\n", fmt, r ? r->str : c->errstr);
        exit(1);
    }
    return r;
}

int main(int argc, char **argv)
{
    const char *cid = argv[2], *secret = argv[3], *name = argv[4];
    redisContext *c = redisConnect("127.0.0.1", atoi(argv[1]));
    redisContext *sub = redisConnect("127.0.0.1", atoi(argv[1]));
    redisReply *r;

    if (argc != 5 || c == NULL || c->err || sub == NULL || sub->err)
        return 1;
    freeReplyObject(call(c, "CLIENTID %s SECRET %s", cid, secret));
    r = call(c, "LOCK %s 1", name, NULL);
    printf("%s\n", r->str);
    freeReplyObject(r);
    r = call(c, "UNLOCK %s 1", name, NULL);
    printf("%lld\n", r->integer);
    freeReplyObject(r);
    freeReplyObject(call(sub, "CLIENTID %s SECRET %s", cid, secret));
    freeReplyObject(call(sub, "SUBSCRIBE rlockd:lost:%s", cid, NULL));
    freeReplyObject(call(c, "LOCK %s 2 LEASE 200", name, NULL));
    if (redisGetReply(sub, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return 1;
    printf("%s\n", r->element[2]->str);
    freeReplyObject(r);
    redisFree(sub);
    redisFree(c);
    return 0;
}
'''


def test_hiredis_with_default_options(env):
    cc = which("cc")
    if not cc:
        raise Skip("no C compiler (apt-get install build-essential)")
    with TempDir() as tmp:
        src, exe = os.path.join(tmp, "lost.c"), os.path.join(tmp, "lost")
        with open(src, "w") as f:
            f.write(HIREDIS)
        _run([cc, "-o", exe, src, "-lhiredis"], "compiling the hiredis program")
        cid, secret = _identity()
        out = _run([exe, str(env.port), cid, secret, env.name("hiredis")], "hiredis")
    _check_client_output(out, cid, "hiredis")


def test_redis_cli_with_default_options(env):
    cli = redis_cli()
    cid, secret = _identity()
    n = env.name("redis-cli")
    out = _run([cli, "-p", str(env.port)], "redis-cli",
               input="CLIENTID %s SECRET %s\nLOCK %s 1\nUNLOCK %s 1\n" % (cid, secret, n, n))
    assert_eq(out.split(), ["OK", "OK", "1"], "CLIENTID, LOCK, UNLOCK through redis-cli")
    # redis-cli's stdout is a pipe here: stdbuf makes it line-buffered, as on a terminal
    stdbuf = which("stdbuf")
    sub = subprocess.Popen(([stdbuf, "-oL"] if stdbuf else []) + [cli, "-p", str(env.port)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        sub.stdin.write(b"CLIENTID %s SECRET %s\nSUBSCRIBE rlockd:lost:%s\n" % (cid.encode(), secret.encode(),
                                                                            cid.encode()))
        sub.stdin.flush()
        wait_info(env, "pubsub_clients", 1, what="redis-cli subscribed")
        holder = env.client(label="holder")
        _join(holder, cid, secret)
        assert_eq(holder.call("LOCK", n, 2, "LEASE", LEASE_MS), "OK", "LOCK with a lease")
        out, deadline = b"", time.time() + 5
        while b"\n{" not in out or not out.rstrip(b"\n").endswith(b"}"):
            ready, _, _ = select.select([sub.stdout], [], [], max(0.0, deadline - time.time()))
            chunk = os.read(sub.stdout.fileno(), 4096) if ready else b""
            assert chunk, "redis-cli printed no lock-lost message within 5 s: %r" % out
            out += chunk
        lines = out.decode().splitlines()
        event = json.loads([line for line in lines if line.startswith("{")][0])
        assert_eq((event["owner"], event["reason"]), (cid + ":2", "its lease ran out"), "redis-cli's message")
    finally:
        sub.kill()
        sub.wait()
