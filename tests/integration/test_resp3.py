"""RESP3 (issue 31): HELLO 3 switches a connection to RESP3, whose replies
are Redis 7's (maps, sets, verbatim strings, the null _), and whose
pub/sub messages are pushes, so that the connection holding the locks
hears of their loss itself, before the reply to any later command that
could observe it. HELLO 2 and RESET go back to RESP2, which is unchanged."""

from harness import (Push, RespSet, Verbatim, assert_eq, assert_error, redis_cli, wait_info)
from test_compat import _identity, _join, _run, flood_a_slow_subscriber

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}


def _wire(c, *args):
    """The exact bytes of one reply (c must be idle: nothing else buffered)."""
    assert not c.buf, "bytes left over: %r" % bytes(c.buf)
    c.send(*args)
    assert c.reply_ready(2.0), "%s: no reply" % (args,)
    data = bytes(c.buf)
    c.buf.clear()
    return data


def _hello3(c):
    hello = c.hello3()
    assert_eq(list(hello), ["server", "version", "proto", "id", "mode", "role", "modules"], "HELLO 3's keys")
    assert_eq((hello["server"], hello["proto"], hello["mode"], hello["role"], hello["modules"]),
              ("rlockd", 3, "standalone", "master", []), "HELLO 3's values")
    return hello


def test_hello_3_answers_a_map_and_hello_2_and_reset_go_back_to_resp2(env):
    c = env.client()
    assert_eq(_wire(c, "CLIENT", "GETNAME"), b"$-1\r\n", "RESP2's null at first")
    hello = _hello3(c)
    assert_eq(hello["id"], c.call("CLIENT", "ID"), "HELLO's id is CLIENT ID")
    assert_eq(_wire(c, "CLIENT", "GETNAME"), b"_\r\n", "RESP3's null")
    assert_eq(_wire(c, "HELLO"), _wire(c, "HELLO", 3), "HELLO without a version keeps RESP3")
    assert_eq(c.call("HELLO", 3, "SETNAME", "w3", "AUTH", "default", "x")["proto"], 3, "HELLO 3 with options")
    assert_eq(c.call("CLIENT", "GETNAME"), "w3", "the name HELLO 3 set")
    assert_error(c.call("HELLO", 3, "AUTH", "default"), "ERR", "Syntax error in HELLO option 'AUTH'",
                 "HELLO 3 AUTH without a password")
    assert_error(c.call("HELLO", 3, "SETNAME", "a b"), "ERR", "Client names cannot contain spaces",
                 "HELLO 3 SETNAME with a space")
    assert_error(c.call("HELLO", 4), "NOPROTO", "unsupported protocol version", "HELLO 4")
    assert_eq(_wire(c, "CLIENT", "GETNAME")[:1], b"$", "refused HELLOs left RESP3 as it was")
    c.resp3 = False
    hello2 = c.call("HELLO", 2)
    assert_eq(hello2[4:6], ["proto", 2], "HELLO 2: RESP2's flat array")
    c.call("CLIENT", "SETNAME", "")
    assert_eq(_wire(c, "CLIENT", "GETNAME"), b"$-1\r\n", "RESP2 again after HELLO 2")
    _hello3(c)
    assert_eq(c.call("RESET"), "RESET", "RESET")
    c.resp3 = False
    assert_eq(_wire(c, "CLIENT", "GETNAME"), b"$-1\r\n", "RESP2 again after RESET")


def test_replies_in_resp3_are_redis_7s(env):
    c = env.client()
    _hello3(c)
    cid, secret = _identity()
    _join(c, cid, secret)
    n = env.name("owners")
    assert_eq(c.call("LOCK", n, 1), "OK", "LOCK: a simple string as ever")
    assert_eq(c.call("LOCK", n, 1), "OK", "LOCK again (reentrant)")
    pttl, owners, kind = c.call("OWNERS", n)
    assert isinstance(pttl, int) and pttl > 0, "OWNERS' pttl: %r" % pttl
    assert_eq((owners, kind), ({cid + ":1": 2}, "lock"), "OWNERS' owners: a map of owner to count; the kind")
    assert_eq(_wire(c, "OWNERS", env.name("free")), b"*3\r\n:-2\r\n%0\r\n$4\r\nnone\r\n", "OWNERS of a free lock")
    assert_eq(c.call("OWNERS", n, "WITHNAMES")[1:], [{cid + ":1": 2}, "lock", {cid + ":1": None}],
              "OWNERS WITHNAMES: the names a map, after the kind")
    assert_error(c.call("UNLOCK", n, 7), "NOTOWNER", None, "UNLOCK by another owner")
    info = c.call("INFO", "server")
    assert isinstance(info, Verbatim) and info.format == "txt", "INFO: a verbatim string: %r" % (info,)
    assert info.startswith("# Server\r\n"), "INFO's text: %r" % info[:40]
    client = c.call("CLIENT", "INFO")
    assert isinstance(client, Verbatim) and " resp=3 " in client, "CLIENT INFO: verbatim, resp=3: %r" % client
    info_cmd = c.call("COMMAND", "INFO", "lock", "nosuch")
    assert_eq(info_cmd[1], None, "COMMAND INFO of an unknown command: null")
    assert isinstance(info_cmd[0][2], RespSet) and "blocking" in info_cmd[0][2], "flags: a set %r" % info_cmd[0]
    assert isinstance(info_cmd[0][6], RespSet), "ACL categories: a set: %r" % info_cmd[0]
    docs = c.call("COMMAND", "DOCS", "lock")
    assert_eq(docs["lock"]["group"], "generic", "COMMAND DOCS: a map of maps")
    assert_eq(c.call("ISLOCKED", n), 1, "integers as ever")
    assert_eq(_wire(c, "PING"), b"+PONG\r\n", "PING")


def test_locks_and_their_lost_events_on_one_connection(env):
    """The issue's scenario: the connection that holds the locks subscribes
    to their lost events and goes on locking; a loss is pushed to it, and
    read before the -LOCKLOST of the UNLOCK sent after it."""
    c = env.client(label="holder")
    _hello3(c)
    cid, secret = _identity()
    _join(c, cid, secret)
    a, b = env.name("a"), env.name("b")
    ch = "rlockd:lost:" + cid
    assert_eq(c.call("LOCK", a, 1), "OK", "LOCK a")
    confirmation = c.call("SUBSCRIBE", ch)
    assert_eq((type(confirmation), confirmation), (Push, ["subscribe", ch, 1]), "SUBSCRIBE: a push")
    assert_eq(c.call("LOCK", b, 1), "OK", "LOCK b while subscribed")
    assert_eq(c.call("PING"), "PONG", "PING while subscribed: +PONG")
    assert_error(c.call("CLIENTID", "someone-else"), "ERR", "a subscribed connection keeps its client-id",
                 "CLIENTID while subscribed")
    assert_eq(c.call("CLIENTID"), cid, "the client-id kept")
    assert_eq(env.client().call("FORCEUNLOCK", a), 1, "FORCEUNLOCK a from another connection")
    c.send("UNLOCK", a, 1)
    push = c.read_reply()
    assert isinstance(push, Push) and push[:2] == ["message", ch], "the lost event first: %r" % (push,)
    assert '"reason": "FORCEUNLOCK"' in push[2], "its payload: %r" % push[2]
    assert_error(c.read_reply(), "LOCKLOST", None, "then UNLOCK a")
    assert_eq(c.call("UNLOCK", b, 1), 1, "UNLOCK b")
    assert_eq(c.call("UNSUBSCRIBE"), Push(["unsubscribe", ch, 0]), "UNSUBSCRIBE: a push")
    assert_eq(_wire(c, "UNSUBSCRIBE"), b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n", "UNSUBSCRIBE again: null channel")


def test_a_loss_found_by_unlock_is_pushed_before_its_locklost(env):
    """The UNLOCK itself finds the hold gone (the key deleted in Redis,
    no watchdog or lease timer here to find it first): the push for the
    loss is still written before the UNLOCK's reply."""
    c = env.client(label="holder")
    _hello3(c)
    cid, secret = _identity()
    _join(c, cid, secret)
    n = env.name("deleted")
    assert_eq(c.call("LOCK", n, 1, "LEASE", 600000), "OK", "LOCK with a long lease")
    c.call("SUBSCRIBE", "rlockd:lost:" + cid)
    assert_eq(env.redis("DEL", n), 1, "the lock's key deleted behind rlockd's back")
    c.send("UNLOCK", n, 1)
    push = c.read_reply()
    assert isinstance(push, Push) and '"reason": "UNLOCK found it gone"' in push[2], \
        "the lost event first: %r" % (push,)
    assert_error(c.read_reply(), "LOCKLOST", None, "then the UNLOCK's -LOCKLOST")


def test_a_loss_is_pushed_while_a_lock_waits_on_the_same_connection(env):
    c = env.client(label="holder")
    _hello3(c)
    cid, secret = _identity()
    _join(c, cid, secret)
    other = env.client(label="other")
    held, busy = env.name("held"), env.name("busy")
    assert_eq(other.call("LOCK", busy, 1), "OK", "another client holds busy")
    assert_eq(c.call("LOCK", held, 1), "OK", "LOCK held")
    c.call("SUBSCRIBE", "rlockd:lost:" + cid)
    c.send("LOCK", busy, 1)
    env.wait_waiting(1, what="the holder's LOCK waits")
    assert_eq(other.call("FORCEUNLOCK", held), 1, "FORCEUNLOCK held")
    push = c.read_reply(3.0)
    assert isinstance(push, Push) and '"reason": "FORCEUNLOCK"' in push[2], \
        "the loss while the LOCK waits: %r" % (push,)
    assert_eq(other.call("UNLOCK", busy, 1), 1, "busy released")
    assert_eq(c.read_reply(3.0), "OK", "then the waiting LOCK's grant")


def test_resp2_subscribers_are_unchanged_beside_resp3_ones(env):
    cid, secret = _identity()
    old, new = env.client(label="resp2"), env.client(label="resp3")
    _hello3(new)
    for s in (old, new):
        _join(s, cid, secret)
        s.call("SUBSCRIBE", "rlockd:lost:" + cid)
    wait_info(env, "pubsub_clients", 2, what="both subscribed")
    assert_error(old.call("LOCK", env.name(), 1), "ERR", "only (P|S)SUBSCRIBE", "RESP2: subscribed mode")
    n = env.name("both")
    assert_eq(new.call("LOCK", n, 1, "LEASE", 200), "OK", "LOCK on the RESP3 subscriber")
    m2, m3 = old.read_reply(3.0), new.read_reply(3.0)
    assert_eq((type(m2), type(m3)), (list, Push), "an array for RESP2, a push for RESP3")
    assert_eq(m2, list(m3), "the same message")


def test_a_slow_resp3_subscriber_is_dropped_and_harms_nobody():
    flood_a_slow_subscriber(resp3=True)


def test_redis_cli_3_shows_maps_and_nulls(env):
    cli = redis_cli()
    cid, secret = _identity()
    n = env.name("cli3")
    out = _run([cli, "-3", "--no-raw", "-p", str(env.port)], "redis-cli -3",
               input="CLIENTID %s SECRET %s\nHELLO\nLOCK %s 1\nOWNERS %s\nCLIENT GETNAME\n" % (cid, secret, n, n))
    assert '1# "server" => "rlockd"' in out and '3# "proto" => (integer) 3' in out, "HELLO's map: %r" % out
    assert '1# "%s:1" => (integer) 1' % cid in out, "OWNERS' map: %r" % out
    assert out.rstrip().endswith("(nil)"), "CLIENT GETNAME's null: %r" % out
