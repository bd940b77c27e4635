"""Liveness of clients: CLIENT HEARTBEAT and TCP keepalive.

A connection that declared a heartbeat and from which nothing arrives for
that long (while none of its commands is being served) ends its client's
session as a disconnection would: a hung (SIGSTOPped) holder loses its
locks after the interval. Client TCP connections have keepalive on.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

from harness import HOST, Env, Skip, assert_eq, assert_error, wait_until, which

# A holder in a process of its own: locks, says so, then pings every 100 ms.
HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, %r)
    from harness import RespClient
    c = RespClient(int(sys.argv[1]), timeout=5.0)
    assert c.call("CLIENT", "HEARTBEAT", sys.argv[3]) == "OK"
    assert c.call("LOCK", sys.argv[2], 1) == "OK"
    print("locked", flush=True)
    while True:
        time.sleep(0.1)
        assert c.call("PING") == "PONG"
""") % os.path.dirname(os.path.abspath(__file__))


def test_a_stopped_holder_with_a_heartbeat_loses_its_lock_after_the_interval():
    with Env({"lock": {"watchdog_timeout_ms": 30000}}) as env:
        n = env.name("hb")
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(env.port), n, "500"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert_eq(holder.stdout.readline().strip(), "locked", "the holder's LOCK")
            waiter = env.client(timeout=10.0)
            waiter.send("LOCK", n, 2)
            env.wait_waiting(1)
            waiter.expect_no_reply(1.0, "LOCK while the pinging holder lives")
            holder.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            assert_eq(waiter.read_reply(10.0), "OK", "the waiter gets the hung holder's lock")
            assert time.monotonic() - t0 < 10.0
            assert_eq(env.rlockd.info()["heartbeat_timeouts"], "1", "INFO heartbeat_timeouts")
        finally:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            holder.wait(5)
            holder.stdout.close()


def test_a_client_waiting_in_lock_is_not_ended_by_its_heartbeat():
    with Env() as env:
        n = env.name("hbwait")
        holder, waiter = env.client(), env.client(timeout=5.0)
        assert_eq(holder.call("LOCK", n, 1), "OK", "holder LOCK")
        assert_eq(waiter.call("CLIENT", "HEARTBEAT", 200), "OK", "CLIENT HEARTBEAT")
        waiter.send("LOCK", n, 2)
        env.wait_waiting(1)
        waiter.expect_no_reply(1.5, "LOCK waiting past its heartbeat")
        assert_eq(holder.call("UNLOCK", n, 1), 1, "holder UNLOCK")
        assert_eq(waiter.read_reply(2.0), "OK", "the waiter's LOCK, after waiting 7 heartbeats")
        # ... and, now silent, it is ended.
        waiter.wait_closed(3.0)
        assert_eq(holder.call("ISLOCKED", n), 0, "its lock released with its session")


def test_the_heartbeat_clock_starts_again_when_the_lock_reply_is_sent():
    """A client blocked reading its LOCK's reply cannot ping: it has a whole
    heartbeat from the reply, not from its last bytes (the LOCK itself)."""
    hb = 2.0
    with Env() as env:
        n = env.name("hbreply")
        holder, waiter = env.client(), env.client(timeout=10.0)
        assert_eq(holder.call("LOCK", n, 1), "OK", "holder LOCK")
        assert_eq(waiter.call("CLIENT", "HEARTBEAT", int(hb * 1000)), "OK", "CLIENT HEARTBEAT")
        declared = time.monotonic()
        waiter.send("LOCK", n, 2)
        env.wait_waiting(1)
        # rlockd looks at a connection a heartbeat after its declaration,
        # then every heartbeat while it is served: the reply comes half-way
        # between two looks, so that a clock left at the LOCK's arrival
        # would end the connection at the next look, half a heartbeat on.
        time.sleep(max(0.0, declared + 1.5 * hb - time.monotonic()))
        assert_eq(holder.call("UNLOCK", n, 1), 1, "holder UNLOCK")
        assert_eq(waiter.read_reply(5.0), "OK", "the waiter's LOCK")
        time.sleep(0.75 * hb)
        assert_eq(waiter.call("PING"), "PONG", "PING three quarters of a heartbeat after the reply")
        assert_eq(env.info_int("heartbeat_timeouts"), 0, "INFO heartbeat_timeouts")


def test_a_silent_connection_ends_every_connection_of_its_client():
    with Env() as env:
        n = env.name("hbsession")
        a, b = env.client(), env.client()
        assert_eq(a.call("CLIENTID", "hb-app", "SECRET", "0123456789abcdef0"), "OK", "CLIENTID a")
        assert_eq(b.call("CLIENTID", "hb-app", "SECRET", "0123456789abcdef0"), "OK", "CLIENTID b")
        assert_eq(b.call("LOCK", n, 1), "OK", "LOCK on b")
        assert_eq(a.call("CLIENT", "HEARTBEAT", 300), "OK", "heartbeat on a")
        a.wait_closed(3.0)
        b.wait_closed(3.0)
        assert_eq(env.client().call("ISLOCKED", n), 0, "the client's locks released")


def test_heartbeat_0_turns_it_off_and_bad_values_are_refused():
    with Env() as env:
        c = env.client()
        assert_eq(c.call("CLIENT", "HEARTBEAT", 200), "OK", "on")
        assert_eq(c.call("CLIENT", "HEARTBEAT", 0), "OK", "off")
        time.sleep(0.8)
        assert_eq(c.call("PING"), "PONG", "still open, silent past the old heartbeat")
        for args in (("HEARTBEAT", 99), ("HEARTBEAT", -1), ("HEARTBEAT", "soon")):
            assert_error(c.call("CLIENT", *args), "ERR", "HEARTBEAT must be 0 (off) or 100 to",
                         what="CLIENT %r" % (args,))
        assert_error(c.call("CLIENT", "HEARTBEAT"), "ERR", "wrong number of arguments",
                     what="CLIENT HEARTBEAT without ms")
        for args in (("KILL", "x"), ("PAUSE", 200)):
            assert_error(c.call("CLIENT", *args), "ERR", "unknown subcommand",
                         what="CLIENT %r" % (args,))
        assert_error(c.call("CLIENT", "HEARTBEAT", 200, 300), "ERR", "wrong number of arguments",
                     what="CLIENT HEARTBEAT 200 300")
        assert_eq(c.call("PING"), "PONG", "the connection survives the refusals")


def test_the_heartbeat_range_is_configured_and_a_reload_applies_to_new_declarations():
    with Env({"server": {"min_heartbeat_ms": 1000, "max_heartbeat_ms": 5000}}) as env:
        c = env.client()
        for ms in (999, 5001):
            assert_error(c.call("CLIENT", "HEARTBEAT", ms), "ERR", "0 (off) or 1000 to 5000",
                         what="CLIENT HEARTBEAT %d outside the configured range" % ms)
        for ms in (1000, 0, 5000):
            assert_eq(c.call("CLIENT", "HEARTBEAT", ms), "OK", "CLIENT HEARTBEAT %d" % ms)
        env.rlockd.rewrite_config({"server": {"min_heartbeat_ms": 200, "max_heartbeat_ms": 300}})
        env.rlockd.signal(signal.SIGHUP)
        env.rlockd.wait_log(r"reload: \[server\] max_heartbeat_ms = 300")
        fresh = env.client()
        assert_error(fresh.call("CLIENT", "HEARTBEAT", 1000), "ERR", "200 to 300",
                     what="a declaration after the reload")
        assert_eq(fresh.call("CLIENT", "HEARTBEAT", 200), "OK", "within the new range")
        # c's 5000 ms, declared before, stands: silent past the new ceiling, it lives.
        time.sleep(1.0)
        assert_eq(c.call("PING"), "PONG", "a heartbeat declared before the reload")


def _keepalive_timers(port):
    out = subprocess.run(["ss", "-tnoH", "state", "established", "( sport = :%d )" % port],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if HOST in line]


def test_client_tcp_connections_have_keepalive_as_configured():
    if not which("ss"):
        raise Skip("ss not found: cannot see the socket's keepalive timer (apt-get install iproute2, "
                   "or scripts/install-deps.sh)")
    with Env({"server": {"tcp_keepalive_s": 45}}) as env:
        c = env.client()
        c.call("PING")
        lines = wait_until(lambda: _keepalive_timers(env.port), 2.0, what="the connection in ss")
        assert all("timer:(keepalive" in line for line in lines), "no keepalive timer: %r" % lines
        assert any("keepalive,4" in line for line in lines), "not 45 s: %r" % lines
    with Env({"server": {"tcp_keepalive_s": 0}}) as env:
        c = env.client()
        c.call("PING")
        lines = wait_until(lambda: _keepalive_timers(env.port), 2.0, what="the connection in ss")
        assert not any("keepalive" in line for line in lines), "keepalive with 0: %r" % lines
