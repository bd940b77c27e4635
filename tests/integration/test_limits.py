"""Limits from section 11 of docs/protocol.md: output and input buffers, max_held_locks and
their per client-id twins, connections per peer, requests left unfinished (slowloris),
memory in client buffers, and the open files limit.

Each test has its own rlockd with a small limit; another client is served
normally meanwhile.
"""

import os
import resource
import socket
import time

from harness import HOST, Env, RespClient, Skip, assert_eq, assert_error, encode_command, wait_until

CONFIG_BASE = {"lock": {"watchdog_timeout_ms": 600}}


def _config(**sections):
    config = {s: dict(kv) for s, kv in CONFIG_BASE.items()}
    for sec, kv in sections.items():
        config.setdefault(sec, {}).update(kv)
    return config


def _lock_unlock(env, c, what):
    """LOCK and UNLOCK by a well-behaved client; the LOCK's time (reported, not asserted:
    the timeout only bounds a hang, generous for a daemon under valgrind)."""
    n = env.name("bystander")
    t0 = time.monotonic()
    assert_eq(c.call("LOCK", n, 1, timeout=60), "OK", "another client's LOCK %s" % what)
    took = time.monotonic() - t0
    assert_eq(c.call("UNLOCK", n, 1, timeout=60), 1, "another client's UNLOCK %s" % what)
    return took


# ---------------------------------------------------------------- max_output_buffer_bytes

MAX_OUTPUT = 65536


def test_client_that_never_reads_its_replies_runs_nothing_more_until_it_reads():
    """Back-pressure: pipelined INFO from a client that does not read stops
    running once its unsent replies pass the pause (64 KiB, or half of
    max_output_buffer_bytes); others are served; once it reads, it gets
    every reply, in order."""
    with Env(_config(server={"max_output_buffer_bytes": MAX_OUTPUT})) as env:
        other = env.client(label="bystander")
        hog = env.client(label="non-reader", rcvbuf=4096)
        batches, per_batch = 8, 1000   # about 24 MB of replies: more than socket buffers hold
        for _ in range(batches):
            hog.send_raw(encode_command("INFO") * per_batch)
        _lock_unlock(env, other, "while a client does not read its replies")
        # It runs a share per loop turn until its unread replies reach the
        # pause: wait until only the INFOs asking run, then watch 0.5 s more.
        runs = [env.info_int("total_commands_processed")]
        wait_until(lambda: runs.append(env.info_int("total_commands_processed")) or runs[-1] - runs[-2] == 1,
                   10.0, interval=0.1, what="the non-reader's requests to stop running")
        before = env.info_int("total_commands_processed")
        time.sleep(0.5)
        info = env.info()
        assert_eq(int(info["total_commands_processed"]) - before, 1,
                  "commands run in 0.5 s besides this INFO (the non-reader's must wait)")
        run = int(info["total_commands_processed"])
        assert run < batches * per_batch, "all %d INFOs ran for a client that reads nothing" % run
        assert int(info["client_buffers_bytes"]) < 1 << 20, \
            "client buffers hold %s bytes for one non-reader" % info["client_buffers_bytes"]
        for i in range(batches * per_batch):
            r = hog.read_reply(timeout=10)
            assert isinstance(r, str) and r.startswith("# Server"), "reply %d: %r" % (i, r[:40])
        _lock_unlock(env, other, "after the non-reader read everything")
        assert_eq(hog.call("PING"), "PONG", "the non-reader is served once it reads")


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


def _instrumented(pid):
    """Whether the daemon runs under ASan or valgrind, whose own memory is in its RSS."""
    with open("/proc/%d/maps" % pid) as f:
        if "libasan" in f.read():
            return True
    return os.path.basename(os.readlink("/proc/%d/exe" % pid)).startswith("memcheck")


def _rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


# ---------------------------------------------------------------- max_clients_per_peer


def test_max_clients_per_peer_refuses_that_peer_and_serves_others():
    config = _config(server={"max_clients_per_peer": 3, "unix_socket": "{tmpdir}/rlockd.sock"})
    with Env(config) as env:
        before = env.info_int("rejected_connections")   # the harness's own: 1 of 3
        tcp = [env.client(label="tcp-%d" % i) for i in range(2)]
        for c in tcp:
            assert_eq(c.call("PING"), "PONG", "a connection within the per-peer limit")
        extra = RespClient(env.port, label="tcp-over")
        env.clients.append(extra)
        assert_error(extra.read_reply(timeout=5), "LIMIT", "max_clients_per_peer",
                     what="the 4th connection from 127.0.0.1")
        assert extra.wait_closed(5.0), "the refused connection should be closed"
        assert_eq(env.info_int("rejected_connections") - before, 1, "INFO rejected_connections")
        # The Unix socket's peer is this test's uid: another peer.
        unix = RespClient(None, unix_path=os.path.join(env.tmpdir, "rlockd.sock"), label="unix")
        env.clients.append(unix)
        _lock_unlock(env, unix, "from another peer")
        tcp[0].close()
        wait_until(lambda: env.info_int("connected_clients") == 3, 2.0, what="the closed connection gone")
        again = env.client(label="tcp-again")
        assert_eq(again.call("PING"), "PONG", "a slot freed by a close is usable again")


# ---------------------------------------------------------------- request_timeout_ms


def test_request_left_unfinished_is_closed_at_request_timeout_idle_and_waiting_are_not():
    with Env(_config(server={"request_timeout_ms": 500})) as env:
        idle = env.client(label="idle")
        holder, waiter = env.client(label="holder"), env.client(label="waiter")
        n = env.name("held")
        assert_eq(holder.call("LOCK", n, 1), "OK", "the holder's LOCK")
        waiter.send("LOCK", n, 1)
        env.wait_waiting(1)
        drip = env.client(label="slow drip")
        request = encode_command("PING", "x" * 20)
        t0 = time.monotonic()
        closed = None
        for i in range(len(request)):        # one byte every 100 ms: 3 s in all
            try:
                drip.send_raw(request[i:i + 1])
            except OSError:
                closed = time.monotonic() - t0
                break
            if drip.wait_closed(0.1):
                closed = time.monotonic() - t0
                break
        assert closed is not None, "a request dripped over %.1fs was not closed" % (time.monotonic() - t0)
        print("    slow drip closed after %.2fs (request_timeout_ms 500)" % closed)
        assert closed >= 0.45, "closed after %.2fs, before request_timeout_ms" % closed
        assert_eq(env.info_int("request_timeouts"), 1, "INFO request_timeouts")
        env.rlockd.wait_log(r"WARN client \d+ \(tcp 127\.0\.0\.1\): a request unfinished")
        assert_eq(idle.call("PING"), "PONG", "an idle connection (nothing sent) is kept")
        assert_eq(holder.call("UNLOCK", n, 1), 1, "the holder's UNLOCK")
        assert_eq(waiter.read_reply(timeout=5), "OK", "the waiting LOCK (no partial request) is kept")
        # a request that arrives in two parts within the timeout is fine
        part = encode_command("PING", "split")
        idle.send_raw(part[:5])
        time.sleep(0.2)
        idle.send_raw(part[5:])
        assert_eq(idle.read_reply(timeout=5), "split", "a request split over 0.2 s")


# ---------------------------------------------------------------- memory in client buffers


# A flood slows a daemon under valgrind past the 600 ms watchdog of the other
# tests: the bystander's locks get the default lease.
FLOOD_LOCK = {"watchdog_timeout_ms": 30000}


def _flood_info(env, count, batch, each_round=None, seconds=3.0):
    """count connections that pipeline INFO and never read, for seconds or until
    each_round(), run between rounds of sending, returns True."""
    hogs = []
    payload = encode_command("INFO") * batch
    for i in range(count):
        h = RespClient(env.port, label="hog-%d" % i, rcvbuf=4096)
        env.clients.append(h)
        h.sock.setblocking(False)
        hogs.append(h)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:         # send until rlockd stops reading
        for h in hogs:
            try:
                h.sock.send(payload)
            except (BlockingIOError, OSError):
                pass
        if each_round is not None and each_round():
            break
        time.sleep(0.01)
    return hogs


def test_non_reading_info_pipeliners_cannot_grow_memory_and_a_lock_stays_fast():
    with Env(_config(lock=FLOOD_LOCK)) as env:
        other = env.client(label="bystander")
        base = _rss_bytes(env.rlockd.proc.pid)
        took = []

        def measure():
            took.append(_lock_unlock(env, other, "under 100 non-reading INFO pipeliners"))

        _flood_info(env, 100, 100, measure)
        took.sort()
        rss = _rss_bytes(env.rlockd.proc.pid)
        info = env.info()
        print("    100 non-readers: RSS %.1f MB (from %.1f MB), client buffers %.1f MB; "
              "LOCK during the flood: median %.1f ms, max %.1f ms (%d)"
              % (rss / 1e6, base / 1e6, int(info["client_buffers_bytes"]) / 1e6,
                 took[len(took) // 2] * 1e3, took[-1] * 1e3, len(took)))
        cap = int(env.rlockd.sections["server"].get("max_client_buffers_bytes", 128 << 20))
        assert int(info["client_buffers_bytes"]) <= cap, "client buffers over the cap: %s" % info
        if _instrumented(env.rlockd.proc.pid):
            raise Skip("the RSS bound: rlockd runs under ASan or valgrind, whose memory is in its RSS")
        assert rss < base + cap, "RSS grew from %d to %d bytes (cap %d)" % (base, rss, cap)


def test_over_max_client_buffers_bytes_the_largest_output_is_closed_first():
    # 1 MiB: 100 non-readers pass it within seconds even under valgrind,
    # which fills buffers far more slowly than the kernel takes them
    cap = 1 << 20
    with Env(_config(server={"max_client_buffers_bytes": cap}, lock=FLOOD_LOCK)) as env:
        other = env.client(label="bystander")
        # (until the first is closed: a daemon under a sanitizer fills buffers slowly)
        hogs = _flood_info(env, 100, 100, lambda: env.info_int("buffer_cap_disconnects") > 0, seconds=60)
        _lock_unlock(env, other, "while client buffers are over the cap")
        info = env.info()
        closed = int(info["buffer_cap_disconnects"])
        print("    cap 1 MiB: %d of 100 non-readers closed, client buffers %.1f MB"
              % (closed, int(info["client_buffers_bytes"]) / 1e6))
        assert closed > 0, "no connection closed though 100 non-readers exceed 1 MiB: %r" % info
        assert int(info["client_buffers_bytes"]) <= cap, "client buffers over the cap: %s" % info
        env.rlockd.wait_log(r"WARN client \d+ \(tcp 127\.0\.0\.1\): holds \d+ bytes \(\d+ of unread replies\)")
        # counted when rlockd decides; its close() may come a loop turn later
        wait_until(lambda: sum(1 for h in hogs if h.wait_closed(0.001)) >= closed, 10.0,
                   what="the %d closed ones closed" % closed)
        assert_eq(other.call("PING", timeout=60), "PONG", "the bystander was not closed")


# ---------------------------------------------------------------- open files limit


def _nofile_1024():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def test_low_open_files_limit_lowers_max_clients_and_every_refusal_is_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        raise Skip("this test needs 1100+ descriptors of its own (hard limit %d)" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 4096), hard))
    try:
        with Env(_config(), preexec_fn=_nofile_1024) as env:
            # (valgrind keeps a few descriptors for itself: the limit rlockd sees is lower)
            env.rlockd.wait_log(r"open files limit 10\d\d is too low for max_clients 10000; "
                                r"accepting at most (\d+) clients")
            effective = env.info_int("max_clients_effective")
            assert 900 < effective < 1024, "max_clients_effective %d" % effective
            env.redis("PING")   # the harness's connections use select(): low descriptors first
            served = refused = 0
            socks, serving = [], []
            for _ in range(1100):
                s = socket.create_connection((HOST, env.port), timeout=5)
                socks.append(s)
                s.sendall(encode_command("PING"))
            for s in socks:
                data = b""
                while not data.endswith(b"\r\n"):
                    chunk = s.recv(256)
                    assert chunk, "a connection was closed without a reply (%d served)" % served
                    data += chunk
                if data == b"+PONG\r\n":
                    served += 1
                    serving.append(s)
                else:
                    assert data.startswith(b"-LIMIT "), "unexpected reply %r" % data
                    refused += 1
            print("    ulimit -n 1024: %d served, %d refused with -LIMIT" % (served, refused))
            assert_eq(served + refused, 1100, "every connection answered")
            assert served >= effective - 2, "only %d of %d slots served" % (served, effective)
            assert refused > 0, "none refused with 1100 connections"
            # Redis's descriptors are kept: with every client slot taken, it reconnects.
            reconnects = env.info_int("redis_reconnects")
            env.redis("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
            wait_until(lambda: env.info_int("redis_reconnects") > reconnects and
                       env.info_int("redis_connected") == 1, 10.0, what="rlockd reconnected to Redis")
            n = env.name("after-reconnect")
            serving[0].sendall(encode_command("LOCK", n, 1) + encode_command("UNLOCK", n, 1))
            data = b""
            while data.count(b"\r\n") < 2:
                chunk = serving[0].recv(256)
                assert chunk, "closed while locking after the reconnect"
                data += chunk
            assert_eq(data, b"+OK\r\n:1\r\n", "LOCK and UNLOCK at max_clients after Redis reconnected")
            for s in socks:
                s.close()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
