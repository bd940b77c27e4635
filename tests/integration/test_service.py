"""rlockd as a service: SIGHUP reload, SIGTERM shutdown, sd_notify readiness, socket activation, journal log format, AUTH."""

import fcntl
import os
import re
import signal
import socket
import time

from harness import (HOST, Env, RedisServer, Rlockd, RespClient, TempDir, _spawn, assert_eq,
                     assert_error, rlockd_bin, wait_until, write_config)

# ------------------------------------------------------------------ SIGHUP


def test_sighup_applies_live_keys_and_keeps_restart_keys():
    with Env({"lock": {"watchdog_timeout_ms": 20000}}) as env:
        c = env.client()
        before = env.name("hup")
        assert_eq(c.call("LOCK", before, 1), "OK", "LOCK before reload")
        env.rlockd.rewrite_config({"lock": {"watchdog_timeout_ms": 4000, "max_waiters": 1},
                                   "redis": {"pool_size": 7},
                                   "log": {"level": "debug"}})
        env.rlockd.signal(signal.SIGHUP)
        env.rlockd.wait_log(r"reload: \S+ read, 3 setting\(s\) changed")
        log = env.rlockd.log_text()
        assert re.search(r"\[redis\] pool_size changed to '7': takes effect after a restart; keeping '4'", log), log
        assert_eq(env.info_int("config_reloads"), 1, "config_reloads")
        assert_eq(env.info_int("socket_activated"), 0, "socket_activated without LISTEN_FDS")
        assert_eq(env.info_int("redis_pool_size"), 4, "pool size kept until a restart")
        assert_eq(env.info_int("watchdog_timeout_ms"), 4000, "INFO watchdog_timeout_ms")
        # The new watchdog timeout applies to locks taken from now on ...
        after = env.name("hup")
        assert_eq(c.call("LOCK", after, 1), "OK", "LOCK after reload")
        ttl = env.redis("PTTL", after)
        assert 3000 < ttl <= 4000, "new lock's TTL %d should follow the reloaded 4000 ms" % ttl
        # ... not to one already held (renewed at its own 20 s).
        assert env.redis("PTTL", before) > 10000, "old lock's TTL should stay near 20 s"
        # A live limit: max_waiters = 1 lets one waiter in, refuses the next.
        w1, w2 = env.client(), env.client()
        w1.send("LOCK", after, 2)
        env.wait_waiting(1, what="the first waiter queued")
        w1.expect_no_reply(0.2, "first waiter")
        assert_error(w2.call("LOCK", after, 3), "LIMIT", what="second waiter past max_waiters 1")
        # Log level debug is live too: a closed client is logged at debug level.
        c.close()
        env.rlockd.wait_log(r"DEBUG client \d+ \(tcp 127\.0\.0\.1\) closed")


def test_sighup_with_bad_file_keeps_running_on_old_config():
    with Env({"lock": {"watchdog_timeout_ms": 20000}}) as env:
        with open(env.rlockd.conf_path, "a") as f:
            f.write("[lock]\nmax_waiters = soon\n")
        env.rlockd.signal(signal.SIGHUP)
        m = env.rlockd.wait_log(r"reload failed, keeping the running configuration: (.*)")
        assert re.search(r"rlockd\.ini:\d+: max_waiters: 'soon' is not an integer", m.group(1)), m.group(0)
        assert env.rlockd.alive(), "rlockd died on a bad reload"
        assert_eq(env.info_int("config_reload_failures"), 1, "config_reload_failures")
        assert_eq(env.info_int("config_reloads"), 0, "config_reloads")
        n = env.name("hup")
        assert_eq(env.client().call("LOCK", n, 1), "OK", "LOCK after the failed reload")
        assert env.redis("PTTL", n) > 15000, "the old watchdog timeout (20 s) still applies"


# ------------------------------------------------------------------ SIGTERM


def test_sigterm_answers_waiter_shutdown_releases_lock_and_exits_0():
    with Env({"lock": {"watchdog_timeout_ms": 20000, "on_disconnect": "release",
                       "on_shutdown": "release"}}) as env:
        n = env.name("term")
        holder, waiter = env.client(), env.client()
        assert_eq(holder.call("LOCK", n, 1), "OK", "holder LOCK")
        waiter.send("LOCK", n, 2)
        env.wait_waiting(1, what="the waiter queued behind the holder")
        waiter.expect_no_reply(0.2, "waiter's LOCK")
        t0 = time.monotonic()
        env.rlockd.signal(signal.SIGTERM)
        assert_error(waiter.read_reply(2.0), "SHUTDOWN", what="blocked waiter's reply")
        waiter.wait_closed(2.0)
        holder.wait_closed(2.0)
        assert_eq(env.rlockd.wait_exit(5.0), 0, "exit status after SIGTERM")
        assert time.monotonic() - t0 < 4.0, "shutdown took longer than its 3 s grace"
        assert_eq(env.redis("EXISTS", n), 0, "held lock released in Redis on shutdown")


def test_sigterm_with_on_disconnect_expire_leaves_lock_to_its_ttl():
    with Env({"lock": {"watchdog_timeout_ms": 20000, "on_disconnect": "expire",
                       "on_shutdown": "release"}}) as env:
        n = env.name("term")
        assert_eq(env.client().call("LOCK", n, 1), "OK", "LOCK")
        env.rlockd.signal(signal.SIGTERM)
        assert_eq(env.rlockd.wait_exit(5.0), 0, "exit status after SIGTERM")
        assert env.redis("PTTL", n) > 10000, "lock left to expire by its TTL"


# ------------------------------------------------------------------ sd_notify


class NotifySocket:
    """The service manager's side of sd_notify: a datagram socket collecting messages."""

    def __init__(self, tmpdir):
        self.path = os.path.join(tmpdir, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def wait_for(self, line, timeout):
        """Waits for a message with this line; returns the message, or None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            for msg in self.messages:
                if line in msg.split("\n"):
                    self.messages.remove(msg)
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                return None

    def close(self):
        self.sock.close()


def _status(msg):
    return [ln for ln in msg.split("\n") if ln.startswith("STATUS=")]


def test_ready_only_once_listening_and_redis_pool_is_up():
    with TempDir() as tmp:
        notify = NotifySocket(tmp)
        redis_server = RedisServer(tmp)      # its port is chosen, not started yet
        daemon = Rlockd(tmp, redis_server.port, env={"NOTIFY_SOCKET": notify.path})
        try:
            daemon.start(wait_ready=False)
            # It listens (and answers PING) while Redis is down, but is not READY.
            wait_until(lambda: _pings(daemon.port), 5.0, what="rlockd accepting while Redis is down")
            assert_eq(notify.wait_for("READY=1", 0.5), None, "READY=1 before Redis is up")
            redis_server.start()
            msg = notify.wait_for("READY=1", 5.0)
            assert msg is not None, "no READY=1 within 5 s of Redis starting"
            # The moment READY=1 arrives, the socket accepts and every pool connection is up.
            c = RespClient(daemon.port, label="after-ready")
            info = c.call("INFO", "redis")
            c.close()
            assert "redis_pool_ready:4" in info, info
            assert _status(msg) and "Ready" in _status(msg)[0], "READY=1 without a STATUS line: %r" % msg
            # SIGHUP: RELOADING=1, then READY=1 again.
            daemon.signal(signal.SIGHUP)
            assert notify.wait_for("RELOADING=1", 3.0) is not None, "no RELOADING=1 on SIGHUP"
            assert notify.wait_for("READY=1", 3.0) is not None, "no READY=1 after the reload"
            # SIGTERM: STOPPING=1, then exit 0.
            daemon.signal(signal.SIGTERM)
            assert notify.wait_for("STOPPING=1", 3.0) is not None, "no STOPPING=1 on SIGTERM"
            assert_eq(daemon.wait_exit(5.0), 0, "exit status")
        finally:
            daemon.stop()
            redis_server.stop()
            notify.close()


def _pings(port):
    try:
        c = RespClient(port, timeout=1.0, label="probe")
    except OSError:
        return False
    try:
        return c.call("PING") == "PONG"
    finally:
        c.close()


# ------------------------------------------------------------------ socket activation


def _high_dup(fd):
    """A copy of fd numbered well above 4, so that placing fds 3 and 4 clobbers nothing."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD, 64)


def test_socket_activation_listens_on_passed_sockets_only():
    with TempDir() as tmp:
        redis_server = RedisServer(tmp)
        redis_server.start()
        tcp = socket.socket()
        tcp.bind((HOST, 0))
        tcp.listen(16)
        unix_path = os.path.join(tmp, "activated.sock")
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(unix_path)
        unix.listen(16)
        tcp_fd, unix_fd = _high_dup(tcp.fileno()), _high_dup(unix.fileno())
        configured = Rlockd(tmp, redis_server.port)   # only for its config and its unused port
        write_config(configured.conf_path, configured.sections)

        def place_fds():                      # in the child, before exec
            os.dup2(tcp_fd, 3)
            os.dup2(unix_fd, 4)

        # LISTEN_PID must be the daemon's own pid: sh exports its $$, then execs.
        argv = ["/bin/sh", "-c", 'LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"',
                rlockd_bin(), "-c", configured.conf_path]
        proc = _spawn(argv, configured.logpath, tmp, env=dict(os.environ, LISTEN_FDS="2"),
                      pass_fds=(tcp_fd, unix_fd, 3, 4),  # 3, 4: spared by the fd clean-up after preexec
                      preexec_fn=place_fds)
        try:
            for fd in (tcp_fd, unix_fd):
                os.close(fd)
            tcp_port = tcp.getsockname()[1]
            tcp.close()
            unix.close()
            # The passed socket listens already: the PING waits in its backlog until rlockd runs.
            t = RespClient(tcp_port, timeout=10.0, label="passed-tcp")
            assert_eq(t.call("PING"), "PONG", "PING on the passed TCP socket")
            t.close()
            u = RespClient(0, unix_path=unix_path, label="passed-unix")
            assert_eq(u.call("PING"), "PONG", "PING on the passed Unix socket")
            info = u.call("INFO", "server")
            u.close()
            assert "socket_activated:1" in info and "listen:\r\n" in info, info
            try:
                RespClient(configured.port, timeout=0.5, label="configured").close()
                raise AssertionError("rlockd listened on the configured port under socket activation")
            except ConnectionRefusedError:
                pass
            os.kill(proc.pid, signal.SIGTERM)
            assert_eq(proc.wait(5.0), 0, "exit status")
            assert os.path.exists(unix_path), "rlockd removed a socket file that systemd owns"
            with open(configured.logpath) as f:
                assert "socket activation: 2 socket(s) passed" in f.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            redis_server.stop()


# ------------------------------------------------------------------ journal


def test_log_lines_carry_syslog_priority_under_the_journal():
    with TempDir() as tmp:
        redis_server = RedisServer(tmp)
        redis_server.start()
        probe = Rlockd(tmp, redis_server.port)
        open(probe.logpath, "ab").close()
        st = os.stat(probe.logpath)
        daemon = Rlockd(tmp, redis_server.port, env={"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)})
        daemon.logpath = probe.logpath
        try:
            daemon.start()
            daemon.stop()
            lines = [ln for ln in daemon.log_text().splitlines() if ln]
            assert lines and all(re.match(r"<[3467]>\S", ln) for ln in lines), lines[:5]
            assert any(ln.startswith("<6>listening on") for ln in lines), lines[:5]
        finally:
            daemon.stop()
            redis_server.stop()


def test_log_lines_keep_timestamps_when_stderr_is_not_the_journal_stream():
    # JOURNAL_STREAM inherited by a process whose stderr goes elsewhere.
    with Env(env={"JOURNAL_STREAM": "1:1"}) as env:
        first = env.rlockd.log_text().splitlines()[0]
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z rlockd\[\d+\] INFO ", first), first


# ------------------------------------------------------------------ AUTH

TOKEN = "s3cret-token"


def test_auth_token_required_before_commands():
    with Env({"server": {"auth_token": TOKEN}}) as env:
        c = env.client()
        assert_eq(c.call("PING"), "PONG", "PING before AUTH")
        n = env.name("auth")
        for cmd in (("LOCK", n, 1), ("INFO",), ("CLIENTID",), ("ISLOCKED", n)):
            assert_error(c.call(*cmd), "NOAUTH", what="%s before AUTH" % cmd[0])
        assert_error(c.call("AUTH", "wrong"), "ERR", "invalid auth token", what="wrong token")
        assert_error(c.call("LOCK", n, 1), "NOAUTH", what="LOCK after a wrong AUTH")
        assert_eq(c.call("AUTH", TOKEN), "OK", "right token")
        assert_eq(c.call("LOCK", n, 1), "OK", "LOCK after AUTH")
        assert_eq(env.info_int("auth_failures"), 1, "auth_failures")
        assert_eq(c.call("QUIT"), "OK", "QUIT")


def test_auth_token_change_on_reload_applies_to_new_connections():
    with Env({"server": {"auth_token": TOKEN}}) as env:
        old = env.client()
        assert_eq(old.call("AUTH", TOKEN), "OK", "AUTH")
        env.rlockd.rewrite_config({"server": {"auth_token": "rotated"}})
        env.rlockd.signal(signal.SIGHUP)
        env.rlockd.wait_log(r"reload: \[server\] auth_token = \(secret\) \(was \(secret\)\)")
        assert TOKEN not in env.rlockd.log_text() and "rotated" not in env.rlockd.log_text(), \
            "the token was logged"
        assert_eq(old.call("ISLOCKED", env.name("auth")), 0, "an authenticated connection stays so")
        new = env.client()
        assert_error(new.call("AUTH", TOKEN), "ERR", "invalid auth token", what="old token after reload")
        assert_eq(new.call("AUTH", "rotated"), "OK", "new token")


def test_auth_without_configured_token_is_an_error():
    with Env() as env:
        assert_error(env.client().call("AUTH", "x"), "ERR", "without any auth token", what="AUTH")


# ------------------------------------------------------------------ Unix socket mode


def test_unix_socket_gets_its_configured_mode_whatever_the_umask():
    old = os.umask(0o077)                   # what the systemd unit sets; inherited by rlockd
    try:
        with Env({"server": {"unix_socket": "{tmpdir}/default.sock"}}) as env:
            mode = os.stat(os.path.join(env.tmpdir, "default.sock")).st_mode & 0o777
            assert_eq(oct(mode), oct(0o666), "default unix_socket_mode")
        with Env({"server": {"unix_socket": "{tmpdir}/narrow.sock", "unix_socket_mode": "0660"}}) as env:
            mode = os.stat(os.path.join(env.tmpdir, "narrow.sock")).st_mode & 0o777
            assert_eq(oct(mode), oct(0o660), "unix_socket_mode = 0660")
    finally:
        os.umask(old)


# ------------------------------------------------------------------ start-up messages


def test_a_missing_unix_socket_directory_is_named_not_permission_denied():
    with TempDir() as tmp:
        missing = os.path.join(tmp, "no-such-dir")
        daemon = Rlockd(tmp, 1, {"server": {"unix_socket": os.path.join(missing, "rlockd.sock")}})
        try:
            daemon.start(wait_ready=False)
            assert daemon.wait_exit(5.0) != 0, "rlockd started without its socket's directory"
            log = daemon.log_text()
            want = "ERROR unix socket %s/rlockd.sock: directory %s does not exist" % (missing, missing)
            assert want in log, "want %r in the log:\n%s" % (want, log)
            assert "ERROR start-up failed: no such file or directory" in log, log
            assert "permission denied" not in log, log
        finally:
            daemon.stop()


def test_redis_never_reached_is_warned_once_in_the_log_and_said_by_health():
    with TempDir() as tmp:
        redis_server = RedisServer(tmp)      # its port is chosen, not started yet
        daemon = Rlockd(tmp, redis_server.port, {"redis": {"first_connect_warn_ms": 300}})
        try:
            daemon.start(wait_ready=False)
            wait_until(lambda: _pings(daemon.port), 5.0, what="rlockd accepting while Redis is down")
            daemon.wait_log(r"WARN redis: never reached in the 3\d\d ms since start-up \(master %s:%d; "
                            r"\d+ failed connection attempts\): check \[redis\] host and port \(or "
                            r"unix_socket, sentinels, nodes\), and that Redis runs there"
                            % (re.escape(HOST), redis_server.port))
            c = RespClient(daemon.port, label="health")
            assert_error(c.call("HEALTH"), "UNAVAILABLE", contains="redis never reached since start-up ",
                         what="HEALTH before Redis was ever reached")
            c.close()
            redis_server.start()
            daemon.wait_log(r"INFO redis: reached at last, \d+ ms after start-up", timeout=5.0)
            c = RespClient(daemon.port, label="health")
            wait_until(lambda: c.call("HEALTH") == "OK", 5.0, what="HEALTH +OK once Redis is up")
            c.close()
            assert_eq(daemon.log_text().count("never reached"), 1, "never-reached warnings")
        finally:
            daemon.stop()
            redis_server.stop()
