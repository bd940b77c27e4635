"""
harness.py - the black-box test harness for rlockd's integration tests.

Owns: the processes a test run starts (redis-server, rlockd), their temp
directories, and the sockets tests open. Everything it starts it stops by
pid and removes again, also when a test fails; leftovers() reports anything
that survived. It never talks to a Redis or rlockd it did not start.

Python 3 standard library only.
"""

import atexit
import contextlib
import itertools
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

HOST = "127.0.0.1"

# ---------------------------------------------------------------- outcomes


class Skip(Exception):
    """Raised by a test that cannot run here (a missing tool)."""


class ConnectionClosed(AssertionError):
    """The peer closed the connection while a reply was expected."""


class ReplyTimeout(AssertionError):
    """No complete reply arrived before the deadline."""


# ---------------------------------------------------------------- RESP values


class Status(str):
    """A +simple string reply (a plain str is a bulk string)."""

    def __repr__(self):
        return "+" + str.__str__(self)


class RespError:
    """A -ERROR reply. Returned as a value, not raised."""

    def __init__(self, line):
        self.line = line
        self.code, _, self.message = line.partition(" ")

    def __repr__(self):
        return "-" + self.line

    def __eq__(self, other):
        return isinstance(other, RespError) and other.line == self.line

    def __hash__(self):
        return hash(self.line)


class Push(list):
    """A RESP3 >push: an out-of-band message (pub/sub), not a reply."""

    def __repr__(self):
        return ">" + list.__repr__(self)


class Verbatim(str):
    """A RESP3 =verbatim string; .format is its three-letter format."""

    def __new__(cls, text, fmt):
        v = str.__new__(cls, text)
        v.format = fmt
        return v


class RespSet(list):
    """A RESP3 ~set, in the order it came."""


_NEED_MORE = object()


def _decode(b):
    return bytes(b).decode("utf-8", errors="surrogateescape")


def _parse_items(buf, p, n, resp3):
    """n values from buf[p:]: (list, newpos) or _NEED_MORE."""
    items = []
    for _ in range(n):
        r = _parse(buf, p, resp3)
        if r is _NEED_MORE:
            return _NEED_MORE
        item, p = r
        items.append(item)
    return items, p


def _parse_resp3(buf, kind, line, nxt):
    """The types RESP3 adds: _ null, % map (a dict), ~ set, > push, =
    verbatim, , double, # boolean, ( big number."""
    if kind == b"_":
        return None, nxt
    if kind == b",":
        return float(line), nxt
    if kind == b"#":
        return {"t": True, "f": False}[line], nxt
    if kind == b"(":
        return int(line), nxt
    if kind == b"=":
        n = int(line)
        if len(buf) < nxt + n + 2:
            return _NEED_MORE
        text = _decode(buf[nxt:nxt + n])
        assert text[3:4] == ":", "verbatim string without its format: %r" % text
        return Verbatim(text[4:], text[:3]), nxt + n + 2
    if kind in (b"%", b"~", b">"):
        n = int(line)
        r = _parse_items(buf, nxt, 2 * n if kind == b"%" else n, True)
        if r is _NEED_MORE:
            return _NEED_MORE
        items, p = r
        if kind == b"%":
            return dict(zip(items[0::2], items[1::2])), p
        return (RespSet if kind == b"~" else Push)(items), p
    raise AssertionError("not a RESP3 reply: %r" % bytes(buf[nxt - len(line) - 3:nxt + 80]))


def _parse(buf, pos, resp3=False):
    """Parses one RESP2 value from buf[pos:], or RESP3 when resp3 (a RESP2
    connection that gets a RESP3 type fails); (value, newpos) or
    _NEED_MORE."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return _NEED_MORE
    kind = buf[pos:pos + 1]
    line = _decode(buf[pos + 1:nl])
    nxt = nl + 2
    if kind == b"+":
        return Status(line), nxt
    if kind == b"-":
        return RespError(line), nxt
    if kind == b":":
        return int(line), nxt
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, nxt
        if len(buf) < nxt + n + 2:
            return _NEED_MORE
        if buf[nxt + n:nxt + n + 2] != b"\r\n":
            raise AssertionError("bad bulk terminator in reply: %r" % bytes(buf[pos:nxt + n + 2]))
        return _decode(buf[nxt:nxt + n]), nxt + n + 2
    if kind == b"*":
        n = int(line)
        if n < 0:
            return None, nxt
        return _parse_items(buf, nxt, n, resp3)
    if resp3:
        return _parse_resp3(buf, kind, line, nxt)
    raise AssertionError("not a RESP reply: %r" % bytes(buf[pos:pos + 80]))


def encode_command(*args):
    """RESP array of bulk strings; str/int/bytes arguments."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, bytes):
            b = a
        else:
            b = str(a).encode("utf-8", errors="surrogateescape")
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


# ---------------------------------------------------------------- client


class RespClient:
    """A tiny blocking RESP client over a real TCP socket."""

    def __init__(self, port, host=HOST, timeout=2.0, label="", unix_path=None, rcvbuf=None, tls=None):
        """rcvbuf: SO_RCVBUF in bytes, set before connecting (a client that reads slowly);
        tls: an ssl.SSLContext to speak TLS with (certs.py RedisTls.context)."""
        self.port = port
        self.label = label or "client:%s" % (unix_path or port)
        self.timeout = timeout
        if unix_path:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if rcvbuf is not None:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(timeout)
            if unix_path:
                self.sock.connect(unix_path)
            else:
                self.sock.connect((host, port))
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if tls is not None:
                    self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        except BaseException:
            self.sock.close()
            raise
        self.buf = bytearray()
        self.eof = False
        self.closed = False
        self.resp3 = False  # set by hello3: the RESP3 types are read

    # -- sending

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        """Sends one command as a RESP array; does not wait for the reply."""
        self.sock.sendall(encode_command(*args))

    def send_inline(self, line, eol=b"\r\n"):
        if isinstance(line, str):
            line = line.encode("utf-8", errors="surrogateescape")
        self.sock.sendall(line + eol)

    def call(self, *args, timeout=None):
        self.send(*args)
        return self.read_reply(timeout)

    def hello3(self, *options):
        """HELLO 3 [options]: the connection speaks RESP3 from its reply on."""
        self.resp3 = True
        return self.call("HELLO", 3, *options)

    def inline(self, line, eol=b"\r\n", timeout=None):
        self.send_inline(line, eol)
        return self.read_reply(timeout)

    # -- receiving

    def _take(self):
        if not self.buf:
            return _NEED_MORE
        r = _parse(self.buf, 0, self.resp3)
        if r is _NEED_MORE:
            return _NEED_MORE
        value, used = r
        del self.buf[:used]
        return value

    def _fill(self, deadline):
        """Reads what arrives before deadline. False on timeout; sets eof."""
        if self.eof:
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([self.sock], [], [], left)
        if not ready:
            return False
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def read_reply(self, timeout=None):
        """The next reply: Status, str (bulk), int, None, list or RespError."""
        t = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + t
        while True:
            v = self._take()
            if v is not _NEED_MORE:
                return v
            if not self._fill(deadline):
                if self.eof:
                    raise ConnectionClosed("%s: connection closed while waiting for a reply (buffered %r)"
                                           % (self.label, bytes(self.buf[:200])))
                if time.monotonic() >= deadline:
                    raise ReplyTimeout("%s: no reply within %.2fs (buffered %r)"
                                       % (self.label, t, bytes(self.buf[:200])))

    def reply_ready(self, timeout):
        """True if a complete reply arrives within timeout (it stays buffered)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.buf and _parse(self.buf, 0, self.resp3) is not _NEED_MORE:
                return True
            if not self._fill(deadline):
                if self.eof or time.monotonic() >= deadline:
                    return False

    def expect_no_reply(self, duration, what="command"):
        """Asserts the connection stays silent (and open) for duration s."""
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            self._fill(deadline)
            if self.buf:
                v = _parse(self.buf, 0)
                got = v[0] if v is not _NEED_MORE else bytes(self.buf)
                raise AssertionError("%s: %s should still be blocked, but got %r"
                                     % (self.label, what, got))
            if self.eof:
                raise AssertionError("%s: %s should still be blocked, but the connection was closed"
                                     % (self.label, what))

    def wait_closed(self, timeout=2.0):
        """True if the peer closes within timeout. Data read meanwhile stays in buf."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self._fill(deadline)
        return self.eof

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass


# ---------------------------------------------------------------- assertions


def is_error(reply, code=None):
    return isinstance(reply, RespError) and (code is None or reply.code == code)


def assert_error(reply, code, contains=None, what="reply"):
    assert isinstance(reply, RespError), "%s: expected -%s error, got %r" % (what, code, reply)
    assert reply.code == code, "%s: expected error code %s, got %r" % (what, code, reply)
    if contains is not None:
        assert contains.lower() in reply.message.lower(), \
            "%s: expected error text containing %r, got %r" % (what, contains, reply)


def assert_eq(got, want, what="value"):
    assert got == want, "%s: expected %r, got %r" % (what, want, got)


def wait_until(pred, timeout, interval=0.02, what="condition"):
    """Polls pred() until truthy; returns its value or fails after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.2fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def holds_for(pred, duration, interval=0.03, what="condition"):
    """Asserts pred() stays truthy during duration seconds."""
    deadline = time.monotonic() + duration
    while True:
        v = pred()
        if not v:
            raise AssertionError("%s stopped holding (value %r)" % (what, v))
        if time.monotonic() >= deadline:
            return v
        time.sleep(interval)


# ---------------------------------------------------------------- processes

_PROCS = []     # every Popen this run started
_TMPDIRS = []   # every temp dir this run made
_WARNINGS = []


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def which(tool):
    return shutil.which(tool)


# Debian's python3: only it sees Debian's python3-* modules (a pyenv
# `python3` on PATH does not).
SYSTEM_PYTHON = "/usr/bin/python3"


def system_python(*modules):
    """SYSTEM_PYTHON once it imports each (module, Debian package) given; Skip
    naming what to install otherwise."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        raise Skip("%s not found (apt-get install python3)" % SYSTEM_PYTHON)
    for module, package in modules:
        if subprocess.run([SYSTEM_PYTHON, "-c", "import " + module], capture_output=True).returncode != 0:
            raise Skip("%s not importable by %s (apt-get install %s, or scripts/install-deps.sh)"
                       % (module, SYSTEM_PYTHON, package))
    return SYSTEM_PYTHON


def redis_cli():
    """The redis-cli command's path; Skip naming its package otherwise."""
    exe = which("redis-cli")
    if not exe:
        raise Skip("redis-cli not found (apt-get install redis-tools)")
    return exe


def ruby_redis():
    """ruby, once it can require Debian's ruby-redis; Skip otherwise."""
    ruby = which("ruby")
    if not ruby:
        raise Skip("ruby not found (apt-get install ruby ruby-redis, or scripts/install-deps.sh)")
    if subprocess.run([ruby, "-e", 'require "redis"'], capture_output=True).returncode != 0:
        raise Skip("ruby-redis not installed (apt-get install ruby-redis, or scripts/install-deps.sh)")
    return ruby


def node_with(package):
    """node and an environment whose NODE_PATH (default: build/npm, where
    scripts/install-npm-deps.sh puts the test modules) has package; Skip otherwise."""
    node = which("node")
    if not node:
        raise Skip("node not found (apt-get install nodejs npm, then scripts/install-npm-deps.sh)")
    modules = os.environ.get("NODE_PATH") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "npm", "node_modules")
    env = dict(os.environ, NODE_PATH=os.path.abspath(modules))
    if subprocess.run([node, "-e", "require(%r)" % package], env=env, capture_output=True).returncode != 0:
        raise Skip("%s not found in %s (scripts/install-npm-deps.sh installs it; it needs npm and the "
                   "network)" % (package, env["NODE_PATH"]))
    return node, env


def _spawn(argv, logpath, cwd, env=None, pass_fds=(), preexec_fn=None):
    """Starts a process in its own session, output to logpath; registered for cleanup."""
    log = open(logpath, "ab")
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             cwd=cwd, start_new_session=True, env=env, pass_fds=pass_fds,
                             preexec_fn=preexec_fn)
    finally:
        log.close()
    _PROCS.append(p)
    return p


def _stop(proc, sig=signal.SIGTERM, grace=3.0):
    """Stops one process by pid; returns (exit status, needed_kill)."""
    if proc.poll() is not None:
        return proc.returncode, False
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(grace)
        return proc.returncode, False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        return proc.returncode, True


def _tail(path, lines=25):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    return "\n".join(_decode(data).splitlines()[-lines:])


class RedisServer:
    """A private redis-server on a loopback port, no persistence.

    args: extra redis-server arguments, e.g. ("--requirepass", "pw") or
    ("--unixsocket", "{tmpdir}/redis.sock"); "{tmpdir}" stands for workdir.
    With --requirepass the harness's own connections (client()) send AUTH.
    tls: a certs.RedisTls: port is then the TLS port and the only one.
    """

    def __init__(self, workdir, port=None, args=(), tls=None):
        self.workdir = workdir
        self.tls = tls
        self.port = port or free_port()
        self.proc = None
        self.logpath = os.path.join(workdir, "redis.log")
        self.args = [str(a).replace("{tmpdir}", workdir) for a in args]
        if tls is not None:
            self.args += ["--port", "0", "--tls-port", str(self.port)] + tls.server_args()
        self.password = self._arg("--requirepass")
        self.unix_socket = self._arg("--unixsocket")

    def _arg(self, name):
        for i, a in enumerate(self.args[:-1]):
            if a == name:
                return self.args[i + 1]
        return None

    def client(self, timeout=2.0, db=None, label="redis"):
        """A direct RESP connection to this Redis: AUTH when it has a password, SELECT db when given."""
        c = RespClient(self.port, timeout=timeout, label=label,
                       tls=self.tls.context if self.tls else None)
        try:
            if self.password is not None:
                assert_eq(c.call("AUTH", self.password), "OK", "%s: AUTH" % label)
            if db is not None:
                assert_eq(c.call("SELECT", db), "OK", "%s: SELECT %s" % (label, db))
        except BaseException:
            c.close()
            raise
        return c

    def start(self, timeout=5.0):
        exe = which("redis-server")
        if not exe:
            raise Skip("redis-server not found (install redis-server)")
        self.proc = _spawn([exe, "--port", str(self.port), "--bind", HOST, "--save", "",
                            "--appendonly", "no", "--dir", self.workdir, "--daemonize", "no"]
                           + self.args, self.logpath, self.workdir)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("redis-server exited with %s:\n%s"
                                     % (self.proc.returncode, _tail(self.logpath)))
            try:
                c = self.client(timeout=0.5)
                try:
                    if c.call("PING") == "PONG":
                        return
                finally:
                    c.close()
            except (OSError, AssertionError):
                pass
            if time.monotonic() >= deadline:
                raise AssertionError("redis-server on port %d did not answer PING in %.1fs"
                                     % (self.port, timeout))
            time.sleep(0.02)

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    @contextlib.contextmanager
    def paused(self):
        """SIGSTOP for the block: Redis keeps its sockets but answers nothing. Always SIGCONTed."""
        self.signal(signal.SIGSTOP)
        try:
            yield self
        finally:
            self.signal(signal.SIGCONT)

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.kill(self.proc.pid, signal.SIGCONT)   # a stopped Redis could not act on SIGTERM
                except ProcessLookupError:
                    pass
            _stop(self.proc)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


# What an ASan/UBSan/LSan build writes to stderr (rlockd's log) on an error:
# any test whose daemon wrote one fails at teardown (make asan).
SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:")

DEFAULT_CONFIG = {
    "server": {},
    "redis": {"connect_timeout_ms": "500"},
    "lock": {"watchdog_timeout_ms": "600", "on_disconnect": "release"},
    "log": {"level": "info"},
}


def _built(env_var, name):
    """A program under test: $env_var, else build/name in this tree."""
    b = os.environ.get(env_var)
    if not b:
        b = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", name)
    return os.path.abspath(b)


def rlockd_bin():
    return _built("RLOCKD_BIN", "rlockd")


def under_valgrind():
    """True under make valgrind: rlockd runs in memcheck (scripts/valgrind-rlockd.sh), several
    times slower than natively."""
    return os.path.basename(rlockd_bin()) == "valgrind-rlockd.sh"


def daemon_ms(ms):
    """A duration rlockd must do some work within (a connect or request timeout, a restart
    within a lease): ms, or 5 times ms under valgrind. A wait for a condition needs none of
    this, only a timeout long enough for a slow daemon."""
    return ms * 5 if under_valgrind() else ms


def rlock_bin():
    """The rlock command (cli/rlock_cli.c)."""
    return _built("RLOCK_BIN", "rlock")


def write_config(path, sections):
    with open(path, "w") as f:
        for sec, kv in sections.items():
            f.write("[%s]\n" % sec)
            for k, v in kv.items():
                f.write("%s = %s\n" % (k, v))
            f.write("\n")


class Rlockd:
    """The real daemon under test, with its config file in workdir."""

    def __init__(self, workdir, redis_port, config=None, instance="rlockd", env=None, preexec_fn=None):
        self.workdir = workdir
        self.preexec_fn = preexec_fn
        self.env = None if env is None else dict(os.environ, **env)
        self.port = free_port()
        self.redis_port = redis_port
        self.conf_path = os.path.join(workdir, instance + ".ini")
        self.logpath = os.path.join(workdir, instance + ".log")
        self.proc = None
        self.exit_status = None
        self.instance = instance
        self._admin = None
        self.sections = {s: dict(kv) for s, kv in DEFAULT_CONFIG.items()}
        self.sections["server"]["listen"] = "%s:%d" % (HOST, self.port)
        self.sections["redis"]["host"] = HOST
        self.sections["redis"]["port"] = str(redis_port)
        for sec, kv in (config or {}).items():
            # "{tmpdir}" in a value stands for this instance's temp dir
            self.sections.setdefault(sec, {}).update(
                {k: str(v).replace("{tmpdir}", workdir) for k, v in kv.items()})
        self.watchdog_ms = int(self.sections["lock"].get("watchdog_timeout_ms", 30000))

    def start(self, timeout=10.0, wait_ready=True, wait_redis=True):
        """Starts the daemon; with wait_ready, returns once it answers PING and (with
        wait_redis) INFO says redis_connected:1."""
        exe = rlockd_bin()
        if not os.access(exe, os.X_OK):
            raise AssertionError("rlockd binary not found or not executable: %s (set RLOCKD_BIN)" % exe)
        self.close_admin()
        write_config(self.conf_path, self.sections)
        self.proc = _spawn([exe, "-c", self.conf_path], self.logpath, self.workdir, env=self.env,
                           preexec_fn=self.preexec_fn)
        if not wait_ready:
            return
        token = self.sections["server"].get("auth_token")
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("rlockd exited with %s during start-up:\n%s"
                                     % (self.proc.returncode, _tail(self.logpath)))
            try:
                c = RespClient(self.port, timeout=1.0, label="rlockd-startup")
                try:
                    if token:
                        c.call("AUTH", token)
                    if c.call("PING") == "PONG":
                        if not wait_redis:
                            return
                        info = parse_info(c.call("INFO"))
                        last = "INFO redis_connected=%r" % info.get("redis_connected")
                        if info.get("redis_connected") == "1":
                            return
                finally:
                    c.close()
            except (OSError, AssertionError) as e:
                last = str(e)
            if time.monotonic() >= deadline:
                raise AssertionError("rlockd not ready (PING + INFO redis_connected:1) within %.1fs: %s\n%s"
                                     % (timeout, last, _tail(self.logpath)))
            time.sleep(0.03)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def admin(self):
        """The harness's own connection to this daemon (AUTHed when auth_token is set)."""
        if self._admin is None or self._admin.eof:
            self.close_admin()
            self._admin = RespClient(self.port, timeout=2.0, label="%s-admin" % self.instance)
            token = self.sections["server"].get("auth_token")
            if token:
                assert_eq(self._admin.call("AUTH", token), "OK", "admin AUTH")
        return self._admin

    def close_admin(self):
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def info(self):
        """INFO as a dict, over the admin connection."""
        return parse_info(self.admin().call("INFO"))

    def stop(self):
        self.close_admin()
        if self.proc is None:
            return
        crashed_before = self.proc.poll()
        status, killed = _stop(self.proc)
        self.exit_status = status
        if killed:
            _WARNINGS.append("rlockd (pid %d) did not exit within 3s of SIGTERM; killed" % self.proc.pid)
        elif crashed_before is None and status not in (0, -signal.SIGTERM):
            _WARNINGS.append("rlockd (pid %d) exited with status %s after SIGTERM:\n%s"
                             % (self.proc.pid, status, _tail(self.logpath, 15)))
        report = SANITIZER_REPORT.search(_tail(self.logpath, 400))
        if report:
            _WARNINGS.append("rlockd (pid %d) log has a sanitizer report (%s):\n%s"
                             % (self.proc.pid, report.group(0), _tail(self.logpath, 40)))

    def log_tail(self, lines=25):
        return _tail(self.logpath, lines)

    def log_text(self):
        with open(self.logpath, "rb") as f:
            return _decode(f.read())

    def wait_log(self, pattern, timeout=3.0):
        """Waits until the log matches the regex; returns the match."""
        try:
            return wait_until(lambda: re.search(pattern, self.log_text()), timeout,
                              what="rlockd's log to match %r" % pattern)
        except AssertionError as e:
            raise AssertionError("%s; its log:\n%s" % (e, self.log_tail())) from None

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout):
        """Waits for the daemon to exit by itself; returns its exit status."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("rlockd still running %.1fs after being told to stop:\n%s"
                                 % (timeout, self.log_tail()))
        self.exit_status = self.proc.returncode
        return self.exit_status

    def rewrite_config(self, config):
        """Writes the config file again with these sections merged in (for SIGHUP)."""
        for sec, kv in config.items():
            self.sections.setdefault(sec, {}).update({k: str(v) for k, v in kv.items()})
        write_config(self.conf_path, self.sections)


def parse_info(text):
    assert isinstance(text, str), "INFO should reply a bulk string, got %r" % (text,)
    fields = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        k, sep, v = line.partition(":")
        if sep:
            fields[k] = v
    return fields


def wait_info(daemon, field, value, timeout=5.0, what=None):
    """Polls INFO of daemon (an Env or an Rlockd) until field equals value; returns that INFO.

    For ordering: "the waiter is queued" is INFO waiting_clients reaching its
    count, not a pause. Fails at once if INFO has no such field."""
    want = str(value)
    last = [None]

    def reached():
        info = daemon.info()
        if field not in info:
            raise AssertionError("INFO has no field %r (fields: %s)" % (field, sorted(info)))
        last[0] = info[field]
        return info if info[field] == want else None
    try:
        return wait_until(reached, timeout, interval=0.01, what=what or "INFO %s:%s" % (field, want))
    except AssertionError as e:
        if last[0] is None:
            raise
        raise AssertionError("%s (last INFO %s:%s)" % (e, field, last[0])) from None


UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def channel_for(name):
    """Redisson's unlock channel for lock name."""
    if "{" in name:
        return "redisson_lock__channel:" + name
    return "redisson_lock__channel:{" + name + "}"


# Redisson's scripts, as a Java client sends them (RedissonLock).
ACQUIRE_SCRIPT = (
    "if (redis.call('exists', KEYS[1]) == 0) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);")

RELEASE_SCRIPT = (
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;")


class Env:
    """One redis-server + one rlockd in a temp dir. Use as a context manager."""

    _names = itertools.count(1)

    def __init__(self, config=None, label="env", env=None, redis_args=(), wait_redis=True, preexec_fn=None,
                 redis_tls=None):
        """config: rlockd's sections ({"redis": {"db": 3}}; "{tmpdir}" in a value is the
        temp dir); env: extra environment of rlockd; redis_args: extra redis-server
        arguments (see RedisServer); wait_redis=False: start() returns once rlockd
        answers, even if it never connects to Redis (a wrong password); preexec_fn: run in
        rlockd's process before it starts (resource limits); redis_tls: a certs.RedisTls
        the Redis speaks, and only it."""
        self.config = config or {}
        self.redis_tls = redis_tls
        self.preexec_fn = preexec_fn
        self.label = label
        self.process_env = env
        self.redis_args = tuple(redis_args)
        self.wait_redis = wait_redis
        self.tmpdir = None
        self.redis_server = None
        self.rlockd = None
        self.clients = []
        self.extra = []
        self._redis_admin = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        problems = warnings()
        if problems and exc_type is None:
            raise AssertionError("teardown: " + "; ".join(problems))
        _WARNINGS.extend(problems)
        return False

    def start(self):
        self.tmpdir = tempfile.mkdtemp(prefix="rlockd-it-")
        _TMPDIRS.append(self.tmpdir)
        try:
            self.redis_server = RedisServer(self.tmpdir, args=self.redis_args, tls=self.redis_tls)
            self.redis_server.start()
            self.rlockd = Rlockd(self.tmpdir, self.redis_server.port, self.config, env=self.process_env,
                                 preexec_fn=self.preexec_fn)
            self.rlockd.start(wait_redis=self.wait_redis)
        except BaseException:
            self.close()
            raise

    def second_rlockd(self, config=None):
        """Another rlockd on the same Redis (another host's sidecar); stopped by close()."""
        d = Rlockd(self.tmpdir, self.redis_port, config if config is not None else self.config,
                   instance="rlockd%d" % (len(self.extra) + 2))
        self.extra.append(d)
        d.start()
        return d

    def client_of(self, daemon, timeout=2.0, label=None):
        c = RespClient(daemon.port, timeout=timeout, label=label or "client-of-%d" % daemon.port)
        self.clients.append(c)
        return c

    @property
    def port(self):
        return self.rlockd.port

    @property
    def redis_port(self):
        return self.redis_server.port

    @property
    def watchdog_ms(self):
        return self.rlockd.watchdog_ms

    def name(self, base="lock"):
        """A lock name no other test uses."""
        return "%s-%d-%s" % (base, next(self._names), uuid.uuid4().hex[:6])

    # -- connections

    def client(self, timeout=2.0, label=None, rcvbuf=None):
        c = RespClient(self.port, timeout=timeout, label=label or "rlockd-client-%d" % (len(self.clients) + 1),
                       rcvbuf=rcvbuf)
        self.clients.append(c)
        return c

    def redis_client(self, timeout=2.0, db=None):
        """A direct connection to Redis (AUTHed if it has a password; SELECT db when given)."""
        c = self.redis_server.client(timeout=timeout, db=db, label="redis-direct")
        self.clients.append(c)
        return c

    def redis(self, *args):
        """One command straight to Redis (db 0) over a raw RESP connection."""
        if self._redis_admin is None or self._redis_admin.eof:
            self._redis_admin = self.redis_server.client(timeout=2.0, label="redis-admin")
        return self._redis_admin.call(*args)

    def redis_hash(self, key):
        flat = self.redis("HGETALL", key)
        return dict(zip(flat[0::2], flat[1::2]))

    def redis_cli(self, *args, stdin=None, port=None, raw=False, timeout=10.0):
        """Runs redis-cli (Skip when it is not installed); returns stdout stripped."""
        exe = redis_cli()
        argv = [exe, "-h", HOST, "-p", str(port or self.redis_port)]
        if port is None and self.redis_server.password is not None:
            argv += ["-a", self.redis_server.password, "--no-auth-warning"]
        if not raw:
            argv.append("--no-raw")
        argv += [str(a) for a in args]
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, "redis-cli %r failed (%d): %s" % (args, r.returncode, r.stderr)
        return r.stdout.strip()

    def admin(self):
        return self.rlockd.admin()

    def info(self):
        return self.rlockd.info()

    def info_int(self, key):
        info = self.info()
        assert key in info, "INFO has no field %r (fields: %s)" % (key, sorted(info))
        return int(info[key])

    def wait_waiting(self, count, daemon=None, timeout=5.0, what=None):
        """Waits until INFO waiting_clients of daemon (default: this Env's rlockd) is count.

        The ordering barrier for waiters: after it, the LOCKs sent so far are queued."""
        return wait_info(daemon or self, "waiting_clients", count, timeout,
                         what or "INFO waiting_clients:%d" % count)

    def settle(self, timeout=2.0):
        """Best effort, never fails: waits until rlockd has no waiting client left,
        so that the next test's waiter counts start from 0. True if it did."""
        try:
            wait_info(self, "waiting_clients", 0, timeout)
            return True
        except (AssertionError, OSError):
            return False

    def close_clients(self):
        for c in self.clients:
            c.close()
        self.clients = []

    def alive(self):
        return self.rlockd is not None and self.rlockd.alive() and all(d.alive() for d in self.extra)

    def log_tail(self, lines=25):
        return self.rlockd.log_tail(lines) if self.rlockd else ""

    def close(self):
        self.close_clients()
        if self._redis_admin is not None:
            self._redis_admin.close()
        self._redis_admin = None
        try:
            for d in self.extra:
                d.stop()
            self.extra = []
            if self.rlockd is not None:
                self.rlockd.stop()
        finally:
            if self.redis_server is not None:
                self.redis_server.stop()
            if self.tmpdir and os.path.isdir(self.tmpdir):
                shutil.rmtree(self.tmpdir, ignore_errors=True)


class TempDir:
    """A temp dir registered for the leftovers check, removed on exit."""

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="rlockd-it-")
        _TMPDIRS.append(self.path)
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
        return False


def leftovers():
    """Descriptions of processes still running and temp dirs still present."""
    left = []
    for p in _PROCS:
        if p.poll() is None:
            left.append("process %d (%s) still running" % (p.pid, " ".join(p.args[:3])))
    for d in _TMPDIRS:
        if os.path.exists(d):
            left.append("temp dir %s still exists" % d)
    return left


def warnings():
    w = list(_WARNINGS)
    del _WARNINGS[:]
    return w


def kill_everything():
    """Last resort (atexit, signals): stop every process this run started."""
    for p in _PROCS:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
    for d in _TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(kill_everything)
