"""Pipelining: a connection's commands that need Redis go to Redis side by side and are
answered in request order; a blocked LOCK still holds back what is pipelined behind it."""

from harness import Status, assert_eq, encode_command, parse_info, wait_info

# Redis is stopped for a moment in one test: long enough a timeout that no link is dropped.
CONFIG = {"redis": {"command_timeout_ms": 5000}, "lock": {"watchdog_timeout_ms": 600}}


def test_pipelined_commands_wait_for_redis_side_by_side_and_are_answered_in_request_order(env):
    """EXPECTED TO FAIL on rlockd up to commit c878838: it has no commands_in_flight gauge
    and runs a connection's commands one at a time (the gauge would show 1, not 5)."""
    names = [env.name("pipe") for _ in range(5)]
    held = [1, 0, 1, 1, 0]
    for n, h in zip(names, held):
        if h:
            assert_eq(env.redis("HSET", n, "outside-owner:1", 1), 1, "HSET of %s" % n)
            assert_eq(env.redis("PEXPIRE", n, 60000), 1, "PEXPIRE of %s" % n)
    watcher = env.client(label="watcher")
    clients = parse_info(watcher.call("INFO", "clients"))
    assert "commands_in_flight" in clients, \
        "INFO's Clients section has no commands_in_flight gauge: %r" % sorted(clients)
    assert_eq(clients["commands_in_flight"], "0", "INFO commands_in_flight before the pipeline")
    c = env.client(timeout=5.0, label="pipeliner")
    with env.redis_server.paused():
        c.send_raw(b"".join(encode_command("ISLOCKED", n) for n in names))
        wait_info(env, "commands_in_flight", len(names), timeout=3.0,
                  what="all %d pipelined ISLOCKED waiting for Redis at once" % len(names))
    replies = [c.read_reply(5.0) for _ in names]
    assert_eq(replies, held, "ISLOCKED replies (in request order)")
    wait_info(env, "commands_in_flight", 0, what="INFO commands_in_flight back to 0")


def test_a_waiting_lock_holds_back_the_commands_pipelined_behind_it(env):
    x = env.name("pipe")
    a, b = env.client(label="holder"), env.client(label="pipeliner")
    assert_eq(a.call("LOCK", x, 1), "OK", "LOCK by a")
    b.send_raw(encode_command("LOCK", x, 1) + encode_command("PING") + encode_command("HOLDCOUNT", x, 1))
    env.wait_waiting(1, what="b's LOCK queued behind a")
    b.expect_no_reply(0.3, "b's LOCK and the PING and HOLDCOUNT pipelined behind it, while a holds the lock")
    assert_eq(a.call("UNLOCK", x, 1), 1, "UNLOCK by a")
    r = b.read_reply(5.0)
    assert isinstance(r, Status) and r == "OK", "b's LOCK after a's UNLOCK: %r (want +OK)" % (r,)
    r = b.read_reply(5.0)
    assert isinstance(r, Status) and r == "PONG", "the PING pipelined behind the LOCK: %r (want +PONG)" % (r,)
    # run only after the LOCK was granted: executed earlier it would have found no hold
    assert_eq(b.read_reply(5.0), 1, "the HOLDCOUNT pipelined behind the LOCK")
