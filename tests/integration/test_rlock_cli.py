"""The rlock command (flock(1) for rlockd locks), run as a shell would run it.

Each test names the exit status or behaviour it proves; the statuses are
the ones `rlock -h` documents.
"""

import fcntl
import hashlib
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import termios
import time

from harness import (HOST, Env, Skip, TempDir, _spawn, assert_eq, daemon_ms, free_port, holds_for, rlock_bin,
                     wait_info, wait_until)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# A short watchdog TTL: "kept alive" and "lost" show within a second or two.
# rlock then checks the lock every third of it (333 ms).
CONFIG = {"lock": {"watchdog_timeout_ms": 1000}}

EXIT_NOT_ACQUIRED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_SOFTWARE, EXIT_LOCK_LOST = 1, 64, 69, 70, 75
EXIT_NO_PERMISSION, EXIT_NO_LOGIN = 77, 78
OWNER_RE = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:%d$"

# COMMANDs. Each writes its pid (= its process group) to ./pid first, so a
# failed test can still stop it, then ./ready.
WAIT_FOR_GO = 'echo $$ > pid; touch ready; while [ ! -e go ]; do sleep 0.02; done'
TRAP_TERM = ('trap "echo TERM > trapped; exit 42" TERM; echo $$ > pid; touch ready; '
             'while :; do sleep 0.05; done')
IGNORE_TERM = 'trap "" TERM; echo $$ > pid; touch ready; while :; do sleep 0.05; done'


def _addr(env):
    return "%s:%d" % (HOST, env.port)


def _bin():
    exe = rlock_bin()
    assert os.access(exe, os.X_OK), "rlock binary not found or not executable: %s (set RLOCK_BIN)" % exe
    return exe


def run_rlock(args, cwd=None, env=None, timeout=10.0):
    """rlock ARGS to the end: CompletedProcess with text stdout and stderr."""
    return subprocess.run([_bin()] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


class Background:
    """rlock ARGS started in dir (its output in dir/rlock.log), stopped by pid on exit."""

    def __init__(self, dir, args):
        self.dir = dir
        self.logpath = os.path.join(dir, "rlock.log")
        self.proc = _spawn([_bin()] + args, self.logpath, dir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        pidfile = os.path.join(self.dir, "pid")
        if os.path.exists(pidfile):
            try:
                os.killpg(int(open(pidfile).read()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        return False

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_ready(self, timeout=3.0):
        wait_until(lambda: os.path.exists(self.path("ready")) or self.proc.poll() is not None,
                   timeout, what="COMMAND started under rlock")
        assert self.proc.poll() is None, "rlock exited with %s before COMMAND was ready:\n%s" % (
            self.proc.returncode, self.output())

    def go(self):
        open(self.path("go"), "w").close()

    def wait(self, timeout):
        """rlock's exit status, failing if it still runs after timeout seconds."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("rlock still running after %.1fs:\n%s" % (timeout, self.output()))

    def output(self):
        with open(self.logpath) as f:
            return f.read()


def _gone(env, name):
    return lambda: env.redis("EXISTS", name) == 0


# ---------------------------------------------------------------- command line


def test_help_exits_0_and_documents_options_statuses_and_env():
    r = run_rlock(["-h"])
    assert_eq(r.returncode, 0, "rlock -h exit status")
    for word in ["-S, --server ADDR", "-w, --wait", "SECS", "-n, --nonblock", "-E, --conflict-exit-code N",
                 "-c, --command STRING", "-l, --lease MS", "-k, --kill-grace SECS", "-b, --heartbeat MS",
                 "-h, --help", "-V, --version", "-s, --shared", "-x, --exclusive", "hold NAME", "status NAME",
                 "force-unlock NAME", "RLOCK_ADDR", "RLOCK_NAME", "RLOCK_OWNER", "127.0.0.1:7379",
                 "SIGINT, SIGTERM and SIGHUP", "guardian", "Exit status:"]:
        assert word in r.stdout, "rlock -h does not mention %r:\n%s" % (word, r.stdout)
    statuses = r.stdout.split("Exit status:")[1]
    for status in ["N", "128+S", "1", "64", "69", "70", "75", "126/127"]:
        assert re.search(r"^\s+%s\s" % re.escape(status), statuses, re.M), \
            "rlock -h does not list exit status %s:\n%s" % (status, statuses)


def test_usage_errors_exit_64_with_a_message():
    cases = [
        [],
        ["name"],
        ["name", "true"],                      # no "--"
        ["name", "--"],                        # no COMMAND
        ["-w", "abc", "n", "--", "true"],
        ["-w", "-1", "n", "--", "true"],
        ["-w", " 5", "n", "--", "true"],
        ["-w", "5ms", "n", "--", "true"],
        ["-w", "1000000000.001", "n", "--", "true"],
        ["-w", "1000000001", "n", "--", "true"],
        ["-w", "1.2.3", "n", "--", "true"],
        ["-w", ".", "n", "--", "true"],
        ["-w", "1e3", "n", "--", "true"],
        ["-w", "99999999999999999999", "n", "--", "true"],
        ["-l", "0", "n", "--", "true"],
        ["-l", "+5", "n", "--", "true"],
        ["-k", "86401", "n", "--", "true"],
        ["-k"],
        ["-S", "", "n", "--", "true"],
        ["-q", "n", "--", "true"],
        ["--nonsense", "n", "--", "true"],
        ["-E", "256", "n", "--", "true"],
        ["-E", "-1", "n", "--", "true"],
        ["--conflict-exit-code"],
        ["-c", "true", "n", "--", "true"],     # -c and -- COMMAND
        ["-c", "true"],                        # -c without NAME
        ["n", "-c"],                           # NAME -c without STRING
        ["n", "-c", "a", "b"],                 # NAME -c takes one STRING
        ["-k", "1", "hold", "n"],              # -k goes with a COMMAND only
        ["-c", "true", "hold", "n"],
        ["-w", "1", "status", "n"],
        ["--lease", "100", "force-unlock", "n"],
        ["hold"],
        ["--fair", "hold", "a", "b"],          # several NAMEs are plain locks
        ["a", "", "--", "true"],               # an empty one of several NAMEs
        ["", "--", "true"],                    # empty NAME
        ["status"],
        ["status", "a", "b"],
        ["-n", "status", "n"],                 # -n makes no sense for status
        ["force-unlock"],
    ]
    for args in cases:
        r = run_rlock(["-S", "127.0.0.1:1"] + args)
        assert_eq(r.returncode, EXIT_USAGE, "exit status of rlock %r" % (args,))
        assert r.stderr.startswith("rlock: ") and "rlock -h" in r.stderr, \
            "rlock %r: expected a message and a hint on stderr, got %r" % (args, r.stderr)
        assert_eq(r.stdout, "", "stdout of rlock %r" % (args,))


def test_unreachable_rlockd_exits_69_and_does_not_run_command():
    with TempDir() as d:
        port = free_port()   # nothing listens there
        for args in (["-S", "%s:%d" % (HOST, port), "n", "--", "touch", "ran"],
                     ["-S", "unix:" + os.path.join(d, "no.sock"), "n", "--", "touch", "ran"],
                     ["-S", "%s:%d" % (HOST, port), "status", "n"]):
            t0 = time.monotonic()
            r = run_rlock(args, cwd=d)
            assert_eq(r.returncode, EXIT_UNAVAILABLE, "exit status of rlock %r" % (args,))
            assert args[1] in r.stderr, "message should name the address: %r" % r.stderr
            dt = time.monotonic() - t0
            assert dt < 3.0, "rlock took %.1fs to give up on a refused connection" % dt
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"


def test_address_comes_from_capital_s_else_rlock_addr(env):
    n = env.name("addr")
    env.redis("HSET", n, "someone:1", "1")
    env.redis("PEXPIRE", n, 60000)
    good = dict(os.environ, RLOCK_ADDR=_addr(env))
    bad = dict(os.environ, RLOCK_ADDR="%s:%d" % (HOST, free_port()))
    r = run_rlock(["status", n], env=good)
    assert_eq(r.returncode, 0, "status via $RLOCK_ADDR")
    assert re.fullmatch(r"locked pttl_ms=\d+\nkind=lock\nowner=someone:1 holds=1\n", r.stdout), \
        "status via $RLOCK_ADDR: %r" % r.stdout
    for option in ("-S", "--server"):
        r = run_rlock([option, _addr(env), "status", n], env=bad)
        assert_eq(r.returncode, 0, "%s wins over $RLOCK_ADDR" % option)
    r = run_rlock(["status", n], env=bad)
    assert_eq(r.returncode, EXIT_UNAVAILABLE, "status via a $RLOCK_ADDR where nothing listens")
    # (the built-in default, 127.0.0.1:7379, is only checked in -h: something
    # not started by the tests may listen there)


def test_auth_token_comes_from_rlock_auth():
    with Env({"server": {"auth_token": "tok-1"}}) as env, TempDir() as d:
        args = ["-S", _addr(env), env.name("auth"), "--", "touch", "ran"]
        r = run_rlock(args, cwd=d, env={k: v for k, v in os.environ.items() if k != "RLOCK_AUTH"})
        assert_eq(r.returncode, EXIT_NO_LOGIN, "exit status without RLOCK_AUTH")
        assert "auth" in r.stderr.lower(), "message should say it is about auth: %r" % r.stderr
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"
        r = run_rlock(args, cwd=d, env=dict(os.environ, RLOCK_AUTH="tok-1"))
        assert_eq((r.returncode, r.stderr), (0, ""), "rlock with the right RLOCK_AUTH")
        assert os.path.exists(os.path.join(d, "ran")), "COMMAND did not run"


WORKER_PW = "worker-pw"
USERS = {"server": {"auth_token": "admin-token"},   # the harness's own login (INFO)
         "user worker": {"password_sha256": hashlib.sha256(WORKER_PW.encode()).hexdigest(),
                         "commands": "+@lock", "names": "orders-*"}}
NO_LOGIN_HINT = ("rlock: log in with RLOCK_USER and RLOCK_PASSWORD (or --user and --password-file) "
                 "as a [user NAME] of rlockd, or with RLOCK_AUTH as its auth_token\n")


def _without_login():
    return {k: v for k, v in os.environ.items() if k not in ("RLOCK_AUTH", "RLOCK_USER", "RLOCK_PASSWORD")}


def test_user_logs_in_from_rlock_user_and_rlock_password_or_user_and_password_file():
    with Env(USERS) as env, TempDir() as d:
        n = env.name("orders")
        r = run_rlock(["-S", _addr(env), n, "--", "touch", "ran"], cwd=d,
                      env=dict(_without_login(), RLOCK_USER="worker", RLOCK_PASSWORD=WORKER_PW))
        assert_eq((r.returncode, r.stderr), (0, ""), "rlock as worker from the environment")
        assert os.path.exists(os.path.join(d, "ran")), "COMMAND did not run"
        with open(os.path.join(d, "pw"), "w") as f:
            f.write(WORKER_PW + "\n")
        r = run_rlock(["-S", _addr(env), "--user", "worker", "--password-file", os.path.join(d, "pw"),
                       "status", n], env=_without_login())
        assert_eq((r.returncode, r.stdout, r.stderr), (0, "unlocked\n", ""), "status as worker from the options")


def test_no_login_or_a_wrong_one_exits_78_naming_what_to_set():
    with Env(USERS) as env, TempDir() as d:
        n = env.name("orders")
        for extra in ({}, {"RLOCK_USER": "worker", "RLOCK_PASSWORD": "wrong"}):
            r = run_rlock(["-S", _addr(env), n, "--", "touch", "ran"], cwd=d, env=dict(_without_login(), **extra))
            assert_eq(r.returncode, EXIT_NO_LOGIN, "exit status with %r" % extra)
            assert r.stderr.endswith(NO_LOGIN_HINT), "stderr with %r: %r" % (extra, r.stderr)
            assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"


def test_a_name_the_user_may_not_lock_exits_77_naming_the_user_rules():
    with Env(USERS) as env, TempDir() as d:
        r = run_rlock(["-S", _addr(env), env.name("payroll"), "--", "touch", "ran"], cwd=d,
                      env=dict(_without_login(), RLOCK_USER="worker", RLOCK_PASSWORD=WORKER_PW))
        assert_eq(r.returncode, EXIT_NO_PERMISSION, "exit status (stderr %r)" % r.stderr)
        assert r.stderr.endswith(
            "rlock: the user logged in as (RLOCK_USER or --user) lacks the command or the name: "
            "see its commands and names in rlockd's [user NAME]\n"), r.stderr
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"


def test_a_user_without_a_password_is_a_usage_error():
    r = run_rlock(["--user", "worker", "x", "--", "true"], env=_without_login())
    assert_eq(r.returncode, EXIT_USAGE, "exit status (stderr %r)" % r.stderr)
    assert "--user (or RLOCK_USER) needs a password: --password-file FILE or RLOCK_PASSWORD" in r.stderr, r.stderr


# ---------------------------------------------------------------- status, force-unlock


def test_status_prints_locked_with_pttl_then_each_owner_or_unlocked_and_exits_0(env):
    n = env.name("status")
    a, b = env.client(), env.client()
    r = run_rlock(["-S", _addr(env), "status", n])
    assert_eq((r.returncode, r.stdout), (0, "unlocked\n"), "status of a free lock")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by another client")
    assert_eq(a.call("LOCK", n, 1), "OK", "reentrant LOCK by another client")
    r = run_rlock(["-S", _addr(env), "status", n])
    # the first line as before there were owners: scripts parse it
    m = re.match(r"^locked pttl_ms=(\d+)\nkind=lock\nowner=(\S+) holds=(\d+)\n$", r.stdout)
    assert r.returncode == 0 and m, "status of a held lock: %d %r %r" % (r.returncode, r.stdout, r.stderr)
    assert 0 < int(m.group(1)) <= env.watchdog_ms, "pttl_ms %s not within the watchdog TTL" % m.group(1)
    assert_eq((m.group(2), m.group(3)), ("%s:1" % a.call("CLIENTID"), "2"), "the owner and its hold count")
    assert_eq(a.call("HOLDCOUNT", n, 1), 2, "status must not touch the lock")
    # a read-write lock read by two owners: both listed
    rw = env.name("status-rw")
    assert_eq(a.call("LOCK", rw, 7, "READ"), "OK", "LOCK ... READ by a")
    assert_eq(b.call("LOCK", rw, 8, "READ"), "OK", "LOCK ... READ by b")
    r = run_rlock(["-S", _addr(env), "--shared", "status", rw])
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and re.fullmatch(r"locked pttl_ms=\d+", lines[0]), "status -s: %r" % r.stdout
    assert_eq(lines[1], "kind=read", "status -s: the kind")
    assert_eq(sorted(lines[2:]), sorted(["owner=%s:7 holds=1" % a.call("CLIENTID"),
                                         "owner=%s:8 holds=1" % b.call("CLIENTID")]),
              "owners of the read lock")


def test_status_needs_rlock_auth_as_the_other_forms_do():
    with Env({"server": {"auth_token": "tok-2"}}) as env:
        n = env.name("status-auth")
        bare = {k: v for k, v in os.environ.items() if k != "RLOCK_AUTH"}
        for environment, want in ((bare, EXIT_NO_LOGIN), (dict(bare, RLOCK_AUTH="wrong"), EXIT_NO_LOGIN),
                                  (dict(bare, RLOCK_AUTH="tok-2"), 0)):
            r = run_rlock(["-S", _addr(env), "status", n], env=environment)
            assert_eq(r.returncode, want, "status with RLOCK_AUTH=%r (stderr %r)"
                      % (environment.get("RLOCK_AUTH"), r.stderr))
        assert_eq(r.stdout, "unlocked\n", "status with the right token")


def test_force_unlock_deletes_anyones_lock_and_says_whether_it_existed(env):
    n = env.name("force")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by another client")
    r = run_rlock(["-S", _addr(env), "force-unlock", n])
    assert_eq((r.returncode, r.stdout), (0, "force-unlocked\n"), "force-unlock of a held lock")
    assert_eq(env.redis("EXISTS", n), 0, "key after force-unlock")
    r = run_rlock(["-S", _addr(env), "force-unlock", n])
    assert_eq((r.returncode, r.stdout), (0, "not locked\n"), "force-unlock of a free lock")


# ---------------------------------------------------------------- running COMMAND


def test_command_runs_under_watchdog_lock_kept_past_its_ttl_then_released(env):
    n = env.name("run")
    with TempDir() as d, Background(d, ["-S", _addr(env), n, "--", "sh", "-c", WAIT_FOR_GO]) as rl:
        rl.wait_ready()
        h = env.redis_hash(n)
        assert_eq(len(h), 1, "owners in the Redis hash while COMMAND runs")
        owner = list(h)[0]
        # the owner is rlock's client-id and its main thread, whose tid is rlock's pid
        assert re.match(OWNER_RE % rl.proc.pid, owner), "owner field %r is not <uuid>:<rlock pid %d>" % (
            owner, rl.proc.pid)
        assert_eq(h[owner], "1", "hold count")
        assert 0 < env.redis("PTTL", n) <= env.watchdog_ms, "PTTL should be the watchdog's TTL"
        # longer than the TTL: only the watchdog's renewals keep it
        holds_for(lambda: env.redis_hash(n) == {owner: "1"}, env.watchdog_ms / 1000.0 * 1.6,
                  what="lock held while COMMAND runs")
        rl.go()
        assert_eq(rl.wait(3.0), 0, "rlock's exit status after COMMAND exited 0")
        assert_eq(env.redis("EXISTS", n), 0, "lock key once rlock has exited")
        assert_eq(rl.output(), "", "rlock's output")


def test_exit_status_of_command_passes_through(env):
    n = env.name("status")
    with TempDir() as d:
        open(os.path.join(d, "not-executable"), "w").close()
        cases = [
            (["true"], 0),
            (["sh", "-c", "exit 7"], 7),
            (["sh", "-c", "exit 255"], 255),
            (["sh", "-c", "kill -KILL $$"], 128 + signal.SIGKILL),
            (["sh", "-c", "kill -USR1 $$"], 128 + signal.SIGUSR1),
            (["no-such-command-rlock-test"], 127),
            ([os.path.join(d, "not-executable")], 126),
        ]
        for command, want in cases:
            r = run_rlock(["-S", _addr(env), n, "--"] + command, cwd=d)
            assert_eq(r.returncode, want, "rlock's exit status for COMMAND %r (stderr %r)" % (command, r.stderr))
            assert_eq(env.redis("EXISTS", n), 0, "lock key after COMMAND %r" % (command,))
        r = run_rlock(["-S", _addr(env), n, "--", "no-such-command-rlock-test"], cwd=d)
        assert "no-such-command-rlock-test" in r.stderr, "no message for a missing COMMAND: %r" % r.stderr


def test_command_gets_arguments_stdin_and_no_rlock_file_descriptors(env):
    n = env.name("fds")
    script = ("import os, sys\n"
              "print(sys.argv[1:])\n"
              "print(sys.stdin.read())\n"
              "for fd in sorted(int(f) for f in os.listdir('/proc/self/fd')):\n"
              "    try:\n"
              "        print(fd, os.readlink('/proc/self/fd/%d' % fd))\n"
              "    except OSError:\n"
              "        pass\n")
    r = subprocess.run([_bin(), "-S", _addr(env), n, "--", sys.executable, "-c", script, "-n", "--", "a b"],
                       input="from stdin", capture_output=True, text=True, timeout=10)
    assert_eq(r.returncode, 0, "exit status (stderr %r)" % r.stderr)
    lines = r.stdout.splitlines()
    assert_eq(lines[0], "['-n', '--', 'a b']", "COMMAND's arguments")
    assert_eq(lines[1], "from stdin", "COMMAND's stdin")
    inherited = [l for l in lines[2:] if "socket:" in l or "anon_inode:" in l]
    # (a socket here is librlock's connection to rlockd: hiredis does not set
    # FD_CLOEXEC, so librlock must; a COMMAND holding it keeps the session open)
    assert_eq(inherited, [], "rlock's sockets or signalfd/eventfd leaked into COMMAND")


def test_concurrent_runs_never_overlap(env):
    n, runs = env.name("mx"), 5
    step = 'echo start $1 $(date +%s%N) >> log; sleep 0.3; echo end $1 $(date +%s%N) >> log'
    with TempDir() as d:
        procs = [subprocess.Popen([_bin(), "-S", _addr(env), n, "--", "sh", "-c", step, "sh", str(i)],
                                  cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT) for i in range(runs)]
        try:
            outs = [p.communicate(timeout=10)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        assert_eq([p.returncode for p in procs], [0] * runs, "exit statuses (output %r)" % outs)
        spans = {}
        for line in open(os.path.join(d, "log")):
            what, who, ns = line.split()
            spans.setdefault(who, {})[what] = int(ns)
    assert_eq(sorted(spans), [str(i) for i in range(runs)], "runs that wrote both lines")
    ordered = sorted((s["start"], s["end"], who) for who, s in spans.items())
    for (s1, e1, w1), (s2, e2, w2) in zip(ordered, ordered[1:]):
        assert e1 < s2, "run %s [%d, %d] overlaps run %s [%d, %d]" % (w1, s1, e1, w2, s2, e2)
    assert_eq(env.redis("EXISTS", n), 0, "lock key after all runs")


def test_no_wait_fails_at_once_with_1_while_another_client_holds(env):
    n = env.name("nowait")
    a = env.client()
    a_id = a.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by another client")
    with TempDir() as d:
        t0 = time.monotonic()
        r = run_rlock(["-S", _addr(env), "-n", n, "--", "touch", "ran"], cwd=d)
        dt = time.monotonic() - t0
        assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "exit status of rlock -n")
        assert dt < 0.5, "rlock -n took %.3fs (want at once)" % dt
        assert n in r.stderr and "held" in r.stderr, "rlock -n message: %r" % r.stderr
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"
    assert_eq(env.redis_hash(n), {"%s:1" % a_id: "1"}, "holder's lock untouched")


def test_wait_gives_up_after_wait_ms_or_runs_once_released(env):
    n = env.name("wait")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by another client")
    with TempDir() as d:
        t0 = time.monotonic()
        r = run_rlock(["-S", _addr(env), "-w", "0.3", n, "--", "touch", "ran"], cwd=d)
        dt = time.monotonic() - t0
        assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "exit status of rlock -w 300")
        assert 0.28 <= dt <= 1.0, "rlock -w 0.3 gave up after %.3fs (want about 0.3s)" % dt
        assert "0.3 s" in r.stderr, "rlock -w message: %r" % r.stderr
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"

        with Background(d, ["-S", _addr(env), "-w", "3", n, "--", "touch", "ran"]) as rl:
            env.wait_waiting(1, what="rlock -w 0.30 queued behind the holder")
            assert rl.proc.poll() is None and not os.path.exists(rl.path("ran")), "rlock -w 0.30 did not wait"
            assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by the other client")
            assert_eq(rl.wait(2.0), 0, "rlock -w 0.30 after the lock was released")
            assert os.path.exists(rl.path("ran")), "COMMAND did not run"


def test_int_term_hup_are_passed_to_command_which_decides_the_status(env):
    n = env.name("sig")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        command = ('trap "echo %s > trapped; exit 42" %s; echo $$ > pid; touch ready; '
                   'while :; do sleep 0.05; done') % (sig.name, sig.name[3:])
        with TempDir() as d, Background(d, ["-S", _addr(env), n, "--", "sh", "-c", command]) as rl:
            rl.wait_ready()
            assert_eq(env.redis("EXISTS", n), 1, "lock while COMMAND runs")
            t0 = time.monotonic()
            rl.proc.send_signal(sig)
            assert_eq(rl.wait(3.0), 42, "rlock's exit status after %s (COMMAND's trap exits 42)" % sig.name)
            assert time.monotonic() - t0 < 1.0, "%s took too long to reach COMMAND" % sig.name
            assert_eq(open(rl.path("trapped")).read().strip(), sig.name, "what COMMAND's trap saw")
            assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock exited")


def test_command_killed_by_forwarded_signal_gives_128_plus_n(env):
    n = env.name("sig")
    with TempDir() as d, Background(d, ["-S", _addr(env), n, "--", "sh", "-c", WAIT_FOR_GO]) as rl:
        rl.wait_ready()
        rl.proc.send_signal(signal.SIGTERM)
        assert_eq(rl.wait(3.0), 128 + signal.SIGTERM, "rlock's exit status, COMMAND killed by SIGTERM")
        assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock exited")


class Terminal:
    """ARGV run as the session leader of a new pseudo-terminal, which is its
    controlling terminal and its stdin, stdout and stderr, as a login shell
    runs; stopped by pid."""

    def __init__(self, argv, cwd=None, env=None):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.pids = []   # more processes to stop at the end
        self.seen = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for pid in [self.proc.pid] + self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(5)
        os.close(self.master)
        return False

    def type(self, data):
        os.write(self.master, data)

    def drain(self):
        """What the terminal showed so far (it must be read, or writers block)."""
        while select.select([self.master], [], [], 0)[0]:
            try:
                self.seen += os.read(self.master, 4096)
            except OSError:   # EIO: no process has the terminal open any more
                break
        return self.seen.decode(errors="replace")


def _stat(pid):
    """state, pgrp, tpgid (the terminal's foreground group) of pid, or None once gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in "ZX" else (fields[0], int(fields[2]), int(fields[5]))


def _reading_settled(pid):
    """pid sleeps (in a read) as the terminal's foreground group with no signal
    pending: a Ctrl-Z or SIGCONT sent before has been acted on."""
    if _stat(pid) != ("S", pid, pid):
        return False
    status = _read("/proc/%d/status" % pid)
    pending = re.findall(r"^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$", status, re.M)
    return len(pending) == 2 and all(int(mask, 16) == 0 for mask in pending)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


# A script that runs rlock as a shell script would, and then records whether
# the terminal is back in the script's own group.
TERMINAL_SCRIPT = (
    '"$RLOCK" -S "$ADDR" "$NAME" -- sh -c \'"$PYTHON" -c "$IS_FOREGROUND" > foreground; echo $$ > pid; '
    'read line; echo "got:$line" > out\'\n'
    'echo $? > status\n'
    '"$PYTHON" -c "$IS_FOREGROUND" > back\n')
IS_FOREGROUND = "import os; print(os.tcgetpgrp(0) == os.getpgrp())"


def test_command_reading_the_terminal_gets_its_foreground_and_rlock_takes_it_back(env):
    n = env.name("tty")
    with TempDir() as d:
        with open(os.path.join(d, "script"), "w") as f:
            f.write(TERMINAL_SCRIPT)
        script_env = dict(os.environ, RLOCK=_bin(), ADDR=_addr(env), NAME=n, PYTHON=sys.executable,
                          IS_FOREGROUND=IS_FOREGROUND)
        with Terminal(["sh", "script"], cwd=d, env=script_env) as term:
            path = lambda name: os.path.join(d, name)   # noqa: E731
            wait_until(lambda: os.path.exists(path("pid")) and os.path.getsize(path("pid")) > 0, 3.0,
                       what="COMMAND started under rlock on a terminal (%r)" % term.drain())
            pid = int(open(path("pid")).read())
            term.pids.append(pid)
            # COMMAND's group is the terminal's foreground from its start, before it reads
            assert_eq(open(path("foreground")).read(), "True\n", "COMMAND in the terminal's foreground")
            # COMMAND waits on the terminal as its foreground group, not stopped by SIGTTIN
            wait_until(lambda: _stat(pid) == ("S", pid, pid), 2.0,
                       what="COMMAND reading as the terminal's foreground (state, pgrp, tpgid: %r)"
                       % (_stat(pid),))
            assert_eq(env.redis("EXISTS", n), 1, "lock while COMMAND reads the terminal")
            # Ctrl-Z stops COMMAND; no shell could continue this rlock (its group is orphaned),
            # so rlock lets COMMAND go on, as the kernel would have for the group
            term.type(b"\x1a")
            # the terminal echoes ^Z once it has sent SIGTSTP to the group
            wait_until(lambda: "^Z" in term.drain(), 10.0, what="the terminal's ^Z (%r)" % term.drain())
            wait_until(lambda: _reading_settled(pid), 10.0,
                       what="COMMAND reading again after Ctrl-Z (%r)" % (_stat(pid),))
            term.type(b"hello\n")
            wait_until(lambda: os.path.exists(path("back")) and os.path.getsize(path("back")) > 0, 3.0,
                       what="the script ran on after rlock (%r)" % term.drain())
            assert_eq(open(path("out")).read(), "got:hello\n", "what COMMAND read from the terminal")
            assert_eq(open(path("status")).read(), "0\n", "rlock's exit status")
            assert_eq(open(path("back")).read(), "True\n", "terminal's foreground back with rlock's group")
            assert_eq(env.redis("EXISTS", n), 0, "lock after COMMAND ended")


def test_ctrl_z_in_an_interactive_shell_stops_the_job_and_fg_gives_command_the_terminal_again(env):
    n = env.name("ctrl-z")
    with TempDir() as d:
        path = lambda name: os.path.join(d, name)   # noqa: E731
        shell_env = dict(os.environ, PS1="prompt$ ")
        with Terminal(["bash", "--norc", "--noprofile", "-i"], cwd=d, env=shell_env) as term:
            wait_until(lambda: "prompt$" in term.drain(), 5.0, what="bash's prompt")
            term.type(("%s -S %s %s -- sh -c 'echo $$ > pid; read x; echo \"got:$x\" > out'\n"
                       % (_bin(), _addr(env), n)).encode())
            wait_until(lambda: os.path.exists(path("pid")) and os.path.getsize(path("pid")) > 0, 3.0,
                       what="COMMAND started (%r)" % term.drain())
            pid = int(open(path("pid")).read())
            term.pids.append(pid)
            wait_until(lambda: _stat(pid) == ("S", pid, pid), 2.0, what="COMMAND reading as the foreground")
            rlock_pid = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
            term.pids.append(rlock_pid)
            term.type(b"\x1a")
            wait_until(lambda: "Stopped" in term.drain(), 10.0, what="bash reporting the job stopped")
            wait_until(lambda: [(_stat(p) or "?")[0] for p in (rlock_pid, pid)] == ["T", "T"], 10.0,
                       what="rlock and COMMAND stopped (%r)" % ([_stat(p) for p in (rlock_pid, pid)],))
            # the scenario: stopped past the lock's TTL (1 s); rlockd's watchdog keeps
            # it, and rlock, continued, asks rlockd before it judges its own deadline
            time.sleep(1.5)
            assert_eq(env.redis("EXISTS", n), 1, "lock while the job is stopped")
            term.type(b"fg\n")
            wait_until(lambda: _reading_settled(pid), 10.0,
                       what="COMMAND reading as the foreground after fg (%r, %r)" % (_stat(pid), term.drain()))
            term.type(b"hello\n")
            # the shell creates out before it writes to it: wait for the line
            wait_until(lambda: _read(path("out")).endswith("\n"), 10.0,
                       what="COMMAND's output (%r)" % term.drain())
            assert_eq(_read(path("out")), "got:hello\n", "what COMMAND read after fg")
            term.type(b"echo status=$?\n")
            wait_until(lambda: "status=0" in term.drain(), 10.0, what="rlock's exit status 0 (%r)" % term.drain())
            assert "lost" not in term.drain(), "rlock's output: %r" % term.drain()
            assert_eq(env.redis("EXISTS", n), 0, "lock after COMMAND ended")


def test_ctrl_c_on_the_terminal_reaches_command_and_rlock_reports_it(env):
    # COMMAND is the terminal's foreground: Ctrl-C's SIGINT goes to it
    # directly, as under flock(1); rlock exits with COMMAND's 128+2.
    n = env.name("ctrl-c")
    for command in (["sleep", "30"], ["cat"]):
        with Terminal([_bin(), "-S", _addr(env), n, "--"] + command) as term:
            kids = wait_until(lambda: _children(term.proc.pid), 2.0, what="COMMAND started")
            term.pids.extend(kids)
            wait_until(lambda: (_stat(kids[0]) or "?")[0] == "S", 2.0, what="%s waiting" % command[0])
            assert_eq(env.redis("EXISTS", n), 1, "lock while %s runs" % command[0])
            term.type(b"\x03")
            assert_eq(term.proc.wait(3), 128 + signal.SIGINT, "rlock's exit status after Ctrl-C, COMMAND %s"
                      % command[0])
            assert_eq(env.redis("EXISTS", n), 0, "lock after Ctrl-C")


def test_rlock_killed_stops_command_and_lock_is_released(env):
    n = env.name("pdeath")
    with TempDir() as d, Background(d, ["-S", _addr(env), n, "--", "sh", "-c", TRAP_TERM]) as rl:
        rl.wait_ready()
        rl.proc.kill()
        rl.proc.wait(2)
        wait_until(lambda: os.path.exists(rl.path("trapped")), 2.0, what="COMMAND got SIGTERM after rlock died")
        wait_until(_gone(env, n), 2.0, what="lock released after rlock died")


def test_rlock_killed_by_sigkill_takes_the_whole_group_of_command_with_it(env):
    # The grandchild of `sh -c` ignores SIGTERM: only the guardian's
    # SIGKILL after the grace (-k 2) ends it. The lock goes at once: the
    # guardian holds none of rlock's connections to rlockd.
    n = env.name("guardian")
    command = 'trap "" TERM; sleep 60 & echo $! > grandchild; echo $$ > pid; touch ready; wait'
    with TempDir() as d, Background(d, ["-S", _addr(env), "-k", "2", n, "--", "sh", "-c", command]) as rl:
        rl.wait_ready()
        pids = [int(open(rl.path("pid")).read()), int(open(rl.path("grandchild")).read())]
        assert_eq([(_stat(p) or "???")[1] for p in pids], [pids[0]] * 2, "process groups of sh and its child")
        rl.proc.kill()
        rl.proc.wait(2)
        t0 = time.monotonic()
        wait_until(_gone(env, n), 1.0, what="lock released after rlock was killed")
        assert all(_stat(p) is not None for p in pids), "COMMAND's group ended before the grace"
        wait_until(lambda: all(_stat(p) is None for p in pids), 4.0,
                   what="every process of COMMAND's group gone (%r)" % [_stat(p) for p in pids])
        dt = time.monotonic() - t0
        assert 1.5 <= dt <= 3.5, "the group ended %.2fs after rlock died (want the 2 s grace)" % dt
        out = rl.output()
        assert "died holding lock '%s'" % n in out and "SIGKILL after 2 s" in out, "guardian's message: %r" % out


# ---------------------------------------------------------------- losing the lock


def test_force_unlock_while_running_stops_command_and_exits_75(env):
    n = env.name("lost")
    with TempDir() as d, Background(d, ["-S", _addr(env), n, "--", "sh", "-c", TRAP_TERM]) as rl:
        rl.wait_ready()
        t0 = time.monotonic()
        assert_eq(env.client().call("FORCEUNLOCK", n), 1, "FORCEUNLOCK by another client")
        assert_eq(rl.wait(3.0), EXIT_LOCK_LOST, "rlock's exit status once the lock was lost")
        dt = time.monotonic() - t0
        assert dt < 1.0, "rlock noticed the lost lock after %.3fs (checks every 333 ms)" % dt
        assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"
        out = rl.output()
        assert "lost" in out and n in out and "SIGTERM" in out, "rlock's warning: %r" % out
        assert "SIGKILL after 5 s" in out, "default grace not announced: %r" % out


def test_command_ignoring_sigterm_is_killed_after_the_grace(env):
    n = env.name("lost")
    with TempDir() as d, Background(d, ["-S", _addr(env), "-k", "1", n, "--", "sh", "-c", IGNORE_TERM]) as rl:
        rl.wait_ready()
        t0 = time.monotonic()
        assert_eq(env.client().call("FORCEUNLOCK", n), 1, "FORCEUNLOCK by another client")
        assert_eq(rl.wait(4.0), EXIT_LOCK_LOST, "rlock's exit status once the lock was lost")
        dt = time.monotonic() - t0
        assert 1.0 <= dt <= 2.0, "COMMAND ignoring SIGTERM ended %.3fs after the force-unlock " \
            "(want the 1 s grace after a check, < 2s)" % dt
        assert "SIGKILL" in rl.output(), "no word of the SIGKILL: %r" % rl.output()


def test_lease_running_out_while_command_runs_counts_as_lost(env):
    n = env.name("lease")
    with TempDir() as d, Background(d, ["-S", _addr(env), "-l", "600", n, "--", "sh", "-c", TRAP_TERM]) as rl:
        rl.wait_ready()
        pttl = env.redis("PTTL", n)
        assert 0 < pttl <= 600, "PTTL %d should be the -l lease" % pttl
        t0 = time.monotonic()
        assert_eq(rl.wait(3.0), EXIT_LOCK_LOST, "rlock's exit status once the lease ran out")
        dt = time.monotonic() - t0 + (600 - pttl) / 1000.0
        assert 0.45 <= dt <= 1.0, "lost %.3fs after the lock was taken (want the 0.6 s lease)" % dt
        assert "lease" in rl.output(), "rlock's warning should name the lease: %r" % rl.output()


def test_rlockd_unreachable_past_the_lock_ttl_counts_as_lost():
    with Env(CONFIG, label="rlock-crash") as env, TempDir() as d:
        n = env.name("crash")
        with Background(d, ["-S", _addr(env), n, "--", "sh", "-c", TRAP_TERM]) as rl:
            rl.wait_ready()
            env.rlockd.proc.kill()   # a crash: nobody releases the lock, it stays to its TTL
            env.rlockd.proc.wait(2)
            t0 = time.monotonic()
            assert_eq(len(env.redis_hash(n)), 1, "lock still in Redis after rlockd died")
            assert_eq(rl.wait(env.watchdog_ms / 1000.0 + 2.0), EXIT_LOCK_LOST, "rlock's exit status")
            dt = time.monotonic() - t0
            # the TTL left at the last confirmation: at least 2/3 of it minus a check interval
            assert 0.25 <= dt <= env.watchdog_ms / 1000.0 + 0.3, \
                "rlock gave up %.3fs after rlockd died (want within the 1 s TTL)" % dt
            assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"
            out = rl.output()
            assert "lost" in out and "rlockd has not confirmed it" in out, \
                "rlock's warning should say rlockd could not confirm the lock: %r" % out
            wait_until(_gone(env, n), 1.0, what="the lock's TTL running out in Redis")


def test_rlockd_stopped_in_order_with_release_counts_as_lost_once_it_is_back_not_at_the_ttl():
    # A long TTL: only the restarted rlockd's "no session to resume" can end this in time.
    config = {"lock": {"watchdog_timeout_ms": 20000, "on_disconnect": "release",
                       "on_shutdown": "release"}}
    with Env(config, label="rlock-stop") as env, TempDir() as d:
        n = env.name("stop")
        with Background(d, ["-S", _addr(env), n, "--", "sh", "-c", TRAP_TERM]) as rl:
            rl.wait_ready()
            env.rlockd.signal(signal.SIGTERM)   # an orderly stop releases the lock in Redis
            assert_eq(env.rlockd.wait_exit(5.0), 0, "rlockd's exit status")
            assert_eq(env.redis("EXISTS", n), 0, "lock released by the stopping rlockd")
            env.rlockd.start()
            t0 = time.monotonic()
            assert_eq(rl.wait(5.0), EXIT_LOCK_LOST, "rlock's exit status")
            dt = time.monotonic() - t0
            assert dt < 3.0, "rlock ran COMMAND %.1fs after rlockd was back (TTL 20 s)" % dt
            assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"


def _ride_through(gap_s, crash):
    """rlock runs COMMAND under a 30 s watchdog lock while rlockd is stopped
    (SIGTERM, on_shutdown = keep) or killed, and started again gap_s later."""
    with Env({"lock": {"watchdog_timeout_ms": 30000}}, label="rlock-ride") as env, TempDir() as d:
        n = env.name("ride")
        with Background(d, ["-S", _addr(env), n, "--", "sh", "-c", WAIT_FOR_GO]) as rl:
            rl.wait_ready()
            owner = list(env.redis_hash(n))[0]
            if crash:
                env.rlockd.proc.kill()
            else:
                env.rlockd.signal(signal.SIGTERM)
            env.rlockd.proc.wait(5)
            # the gap is the scenario: rlock keeps COMMAND running through it
            holds_for(lambda: rl.proc.poll() is None and len(env.redis_hash(n)) == 1, gap_s,
                      what="rlock and its lock while rlockd is away")
            env.rlockd.start()   # same port
            wait_info(env.rlockd, "sessions_resumed", 1, timeout=5.0, what="rlock's session resumed")
            wait_until(lambda: env.redis_hash(n) == {owner: "2"}, 5.0,
                       what="rlock's lock renewed through the new rlockd")
            assert rl.proc.poll() is None, "rlock exited: %r" % rl.output()
            rl.go()
            assert_eq(rl.wait(5.0), 0, "rlock's exit status")
            assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock released it")
            assert "lost" not in rl.output(), "rlock's output: %r" % rl.output()


def test_rlockd_restart_with_a_2s_gap_leaves_command_running_and_the_lock_held():
    _ride_through(2.0, crash=False)


def test_rlockd_crash_with_a_10s_gap_leaves_command_running_and_the_lock_held():
    _ride_through(10.0, crash=True)


def test_rlockd_away_past_the_lock_ttl_stops_command_with_75_at_the_ttl_not_before():
    # renewed every 2 s, confirmed every 1 s: at the stop the lock has 4 s or more left
    with Env({"lock": {"watchdog_timeout_ms": 6000}}, label="rlock-ttl") as env, TempDir() as d:
        n = env.name("ttl")
        with Background(d, ["-S", _addr(env), n, "--", "sh", "-c", TRAP_TERM]) as rl:
            rl.wait_ready()
            env.rlockd.signal(signal.SIGTERM)
            env.rlockd.proc.wait(5)
            pttl = env.redis("PTTL", n)
            t0 = time.monotonic()
            assert pttl > 3500, "PTTL %d at the stop" % pttl
            assert_eq(rl.wait(8.0), EXIT_LOCK_LOST, "rlock's exit status")
            dt = time.monotonic() - t0
            # no later than the TTL left at the stop, no earlier than a check interval before it
            assert pttl / 1000.0 - 1.1 <= dt <= pttl / 1000.0 + 0.3, \
                "rlock gave up %.3fs after rlockd stopped, PTTL was %d ms" % (dt, pttl)
            assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"
            assert "rlockd has not confirmed it" in rl.output(), rl.output()


def test_rlockd_crash_and_restart_lock_retaken_and_renewed_by_the_new_rlockd():
    # the restart must end within the lock's TTL, however slow the daemon
    config = {"lock": {"watchdog_timeout_ms": daemon_ms(1500)}}
    with Env(config, label="rlock-restart") as env, TempDir() as d:
        n = env.name("restart")
        with Background(d, ["-S", _addr(env), n, "--", "sh", "-c", WAIT_FOR_GO]) as rl:
            rl.wait_ready()
            owner = list(env.redis_hash(n))[0]
            env.rlockd.proc.kill()
            env.rlockd.proc.wait(2)
            t0 = time.monotonic()
            env.rlockd.start()   # same port
            # rlock finds the lock it still holds and takes it a second time through the new rlockd
            # (past the TTL the crashed rlockd left, the count could never become 2)
            wait_until(lambda: env.redis_hash(n) == {owner: "2"}, env.watchdog_ms / 1000.0,
                       what="hold count 2 after the restart")
            # past the TTL the crashed rlockd left: only the new rlockd's renewals keep it
            while time.monotonic() - t0 < 1.5 * env.watchdog_ms / 1000.0:
                assert_eq(env.redis_hash(n), {owner: "2"}, "lock after the restart")
                time.sleep(0.05)
            assert rl.proc.poll() is None, "rlock exited: %r" % rl.output()
            rl.go()
            assert_eq(rl.wait(3.0), 0, "rlock's exit status")
            assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock released both holds")
            assert "lost" not in rl.output(), "rlock's output: %r" % rl.output()


def test_a_stopped_rlock_loses_its_lock_after_its_heartbeat_and_says_so():
    with Env({"lock": {"watchdog_timeout_ms": 30000}}, label="rlock-stopped") as env, TempDir() as d:
        n = env.name("stopped")
        with Background(d, ["-S", _addr(env), "-b", "300", n, "--", "sh", "-c", TRAP_TERM]) as rl:
            rl.wait_ready()
            other = env.client(timeout=10.0)
            assert_eq(other.call("TRYLOCK", n, 1), 0, "held while rlock runs")
            rl.proc.send_signal(signal.SIGSTOP)
            try:
                assert_eq(other.call("TRYLOCK", n, 1, "WAIT", 5000), 1,
                          "the lock of a stopped rlock, freed by its missed heartbeat")
            finally:
                rl.proc.send_signal(signal.SIGCONT)
            assert_eq(rl.wait(10.0), EXIT_LOCK_LOST, "rlock's exit status once it runs again")
            assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"


# ---------------------------------------------------------------- lock kinds

KIND_OPTIONS = {"--read": "read", "--shared": "read", "-s": "read", "--write": "write", "--exclusive": "write",
                "-x": "write", "--fair": "fair", "--fenced": "fenced"}


def test_help_documents_the_kind_options_and_rlock_token():
    r = run_rlock(["-h"])
    assert_eq(r.returncode, 0, "rlock -h exit status")
    for word in list(KIND_OPTIONS) + ["KIND", "RLOCK_TOKEN"]:
        assert word in r.stdout, "rlock -h does not mention %r:\n%s" % (word, r.stdout)


def test_two_kinds_are_a_usage_error_naming_both_options():
    with TempDir() as d:
        for first, second in (("--read", "--write"), ("--shared", "--exclusive"), ("--fair", "--fenced"),
                              ("--read", "--fenced"), ("--write", "--fair"), ("-s", "-x"), ("-x", "--fair")):
            for args in ([first, second, "n", "--", "touch", "ran"], [first, second, "status", "n"],
                         [first, second, "force-unlock", "n"]):
                r = run_rlock(["-S", "127.0.0.1:1"] + args, cwd=d)
                assert_eq(r.returncode, EXIT_USAGE, "exit status of rlock %r" % (args,))
                assert first in r.stderr and second in r.stderr and "rlock -h" in r.stderr, \
                    "rlock %r: the message should name both options: %r" % (args, r.stderr)
        for args in (["--f", "n", "--", "touch", "ran"],        # --fair or --fenced
                     ["--read=1", "n", "--", "touch", "ran"],   # takes no value
                     ["--readers", "n", "--", "touch", "ran"]):
            r = run_rlock(["-S", "127.0.0.1:1"] + args, cwd=d)
            assert_eq(r.returncode, EXIT_USAGE, "exit status of rlock %r" % (args,))
            assert args[0] in r.stderr, "rlock %r: the message should name the option: %r" % (args, r.stderr)
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran after a usage error"
    # an alias of the same kind is no conflict (127.0.0.1:1 refuses: 69, not 64)
    r = run_rlock(["-S", "127.0.0.1:1", "--read", "--shared", "n", "--", "true"])
    assert_eq(r.returncode, EXIT_UNAVAILABLE, "exit status of rlock --read --shared (stderr %r)" % r.stderr)


def test_each_kind_option_takes_and_releases_a_lock_of_that_kind(env):
    for option, kind in sorted(KIND_OPTIONS.items()):
        n = env.name(kind)
        counter = "%s_locks_acquired" % kind
        before = env.info_int(counter)
        r = run_rlock(["-S", _addr(env), option, n, "--", "true"])
        assert_eq((r.returncode, r.stderr), (0, ""), "rlock %s" % option)
        # rlockd counts acquisitions per kind: this one was of the option's
        assert_eq(env.info_int(counter) - before, 1, "INFO %s after rlock %s" % (counter, option))
        assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock %s exited" % option)


def test_fenced_passes_each_acquisitions_token_to_command_in_rlock_token(env):
    n = env.name("fenced")
    outer = dict(os.environ, RLOCK_TOKEN="from-outside")
    tokens = []
    for _ in range(3):
        r = run_rlock(["-S", _addr(env), "--fenced", n, "--", "sh", "-c", 'echo "$RLOCK_TOKEN"'], env=outer)
        assert_eq((r.returncode, r.stderr), (0, ""), "rlock --fenced")
        assert re.fullmatch(r"[1-9]\d*\n", r.stdout), "RLOCK_TOKEN as COMMAND saw it: %r" % r.stdout
        tokens.append(int(r.stdout))
    assert tokens == sorted(set(tokens)), "tokens not strictly increasing: %r" % tokens
    assert_eq(env.client().call("TOKEN", n), tokens[-1], "TOKEN after the last run")
    assert_eq(env.redis("GET", "redisson_lock_token:{%s}" % n), str(tokens[-1]), "the token counter in Redis")
    assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock --fenced exited")
    # without --fenced, COMMAND's environment is rlock's own
    bare = {k: v for k, v in os.environ.items() if k != "RLOCK_TOKEN"}
    r = run_rlock(["-S", _addr(env), n, "--", "sh", "-c", 'echo "${RLOCK_TOKEN-unset}"'], env=bare)
    assert_eq((r.returncode, r.stdout), (0, "unset\n"), "RLOCK_TOKEN of a plain lock's COMMAND")


def test_two_read_runs_hold_the_lock_at_once_and_keep_a_writer_out():
    # A 3 s TTL of its own: two holds renewed apart and a reader's unlock
    # that deletes the hash when no other reader's timeout key lives make
    # this the test a watchdog late by 2/3 of a 1 s TTL fails, as it did
    # once beside busy processes (Redisson's read unlock, kind_rwlock.c).
    with Env({"lock": {"watchdog_timeout_ms": 3000}}, label="rlock-read") as env:
        _two_read_runs(env)


def _two_read_runs(env):
    n = env.name("read")
    with TempDir() as d1, TempDir() as d2, \
            Background(d1, ["-S", _addr(env), "--read", n, "--", "sh", "-c", WAIT_FOR_GO]) as r1, \
            Background(d2, ["-S", _addr(env), "--shared", n, "--", "sh", "-c", WAIT_FOR_GO]) as r2:
        r1.wait_ready()
        r2.wait_ready()   # both COMMANDs run at once
        h = env.redis_hash(n)
        assert_eq(h.get("mode"), "read", "mode of the read-write lock")
        assert_eq(len(h), 3, "mode and two readers in %r" % h)
        # kept alive past the watchdog's TTL, both of them
        holds_for(lambda: len(env.redis_hash(n)) == 3, env.watchdog_ms / 1000.0 * 1.6,
                  what="both read holds kept while the COMMANDs run")
        r = run_rlock(["-S", _addr(env), "--write", "-n", n, "--", "touch", "ran"], cwd=d1)
        assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "rlock --write -n while two read (stderr %r)" % r.stderr)
        assert not os.path.exists(os.path.join(d1, "ran")), "the writer's COMMAND ran"
        r1.go()
        assert_eq(r1.wait(3.0), 0, "the first reader's exit status")
        assert_eq(len(env.redis_hash(n)), 2, "one reader left")
        r2.go()
        assert_eq(r2.wait(3.0), 0, "the second reader's exit status")
        assert_eq(r1.output() + r2.output(), "", "the readers' output")
    wait_until(_gone(env, n), 1.0, what="the read-write lock gone after both readers")


def test_write_run_keeps_readers_out_until_it_ends(env):
    n = env.name("write")
    with TempDir() as d, Background(d, ["-S", _addr(env), "--exclusive", n, "--", "sh", "-c", WAIT_FOR_GO]) as w:
        w.wait_ready()
        r = run_rlock(["-S", _addr(env), "--read", "-n", n, "--", "touch", "ran"], cwd=d)
        assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "rlock --read -n while written (stderr %r)" % r.stderr)
        with Background(d, ["-S", _addr(env), "--read", "-w", "5", n, "--", "touch", "ran"]) as reader:
            env.wait_waiting(1, what="the reader queued behind the writer")
            assert not os.path.exists(os.path.join(d, "ran")), "the reader's COMMAND ran beside the writer"
            w.go()
            assert_eq(w.wait(3.0), 0, "the writer's exit status")
            assert_eq(reader.wait(3.0), 0, "the reader's exit status once the writer ended")
        assert os.path.exists(os.path.join(d, "ran")), "the reader's COMMAND did not run"
    assert_eq(env.redis("EXISTS", n), 0, "lock key after both")


def test_kind_applies_to_status_and_force_unlock(env):
    n = env.name("rwstatus")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "READ"), "OK", "LOCK ... READ by another client")
    r = run_rlock(["-S", _addr(env), "--read", "status", n])
    assert r.returncode == 0 and re.fullmatch(r"locked pttl_ms=\d+\nkind=read\nowner=\S+:1 holds=1\n", r.stdout), \
        "rlock --read status of a read lock: %d %r %r" % (r.returncode, r.stdout, r.stderr)
    # without a kind option, status reports the lock whatever its kind
    r = run_rlock(["-S", _addr(env), "status", n])
    assert r.returncode == 0 and re.fullmatch(r"locked pttl_ms=\d+\nkind=read\nowner=\S+:1 holds=1\n", r.stdout), \
        "rlock status (no kind) of a read lock: %d %r %r" % (r.returncode, r.stdout, r.stderr)
    r = run_rlock(["-S", _addr(env), "--write", "force-unlock", n])
    assert_eq((r.returncode, r.stdout), (0, "not locked\n"), "rlock --write force-unlock of a read lock")
    assert_eq(env.redis("HGET", n, "mode"), "read", "the read lock after --write force-unlock")
    r = run_rlock(["-S", _addr(env), "--shared", "force-unlock", n])
    assert_eq((r.returncode, r.stdout), (0, "force-unlocked\n"), "rlock --shared force-unlock of a read lock")
    assert_eq(env.redis("EXISTS", n), 0, "key after force-unlock")


def test_a_kind_clash_exits_1_naming_the_holders_kind(env):
    n = env.name("clash")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1, "WRITE"), "OK", "LOCK ... WRITE by another client")
    for args in (["-n"], ["-w", "0.2"]):
        r = run_rlock(["-S", _addr(env)] + args + [n, "--", "true"])
        assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "plain rlock %s over a write lock (stderr %r)" % (args, r.stderr))
        assert "held as a read-write lock (write)" in r.stderr and "-s or -x" in r.stderr, \
            "the hint names the holder's kind: %r" % r.stderr
    assert_eq(a.call("UNLOCK", n, 1, "WRITE"), 1, "UNLOCK ... WRITE")
    assert_eq(a.call("LOCK", n, 2), "OK", "plain LOCK by another client")
    r = run_rlock(["-S", _addr(env), "-x", "-n", n, "--", "true"])
    assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "rlock -x over a plain lock (stderr %r)" % r.stderr)
    assert "held as a plain lock" in r.stderr and "without -s/-x" in r.stderr, "the hint: %r" % r.stderr
    env.redis("DEL", n)
    env.redis("SET", n, "application data")
    r = run_rlock(["-S", _addr(env), "-x", "-n", n, "--", "true"])
    assert_eq(r.returncode, EXIT_SOFTWARE, "rlock -x over application data (stderr %r)" % r.stderr)


# ---------------------------------------------------------------- as flock(1) and etcdctl lock


def test_version_and_long_help():
    r = run_rlock(["--version"])
    assert_eq(r.returncode, 0, "rlock --version exit status")
    assert re.fullmatch(r"rlock \d+\.\d+\.\d+ \(librlock \d+\.\d+\.\d+\)\n", r.stdout), \
        "rlock --version: its own version and librlock's: %r" % r.stdout
    assert_eq(run_rlock(["-V"]).stdout, r.stdout, "rlock -V")
    assert_eq(run_rlock(["--help"]).stdout, run_rlock(["-h"]).stdout, "rlock --help")


def test_old_s_address_is_a_usage_error_that_points_at_capital_s():
    # -s is --shared now: a command line of the old kind has one word too
    # many, so it never takes a lock named after the address.
    with TempDir() as d:
        for args in (["-s", "127.0.0.1:1", "n", "--", "touch", "ran"], ["-s", "unix:/x.sock", "status", "n"],
                     ["-s", "[::1]:7379", "n", "-c", "touch ran"]):
            r = run_rlock(args, cwd=d)
            assert_eq(r.returncode, EXIT_USAGE, "exit status of rlock %r" % (args,))
            assert "-S ADDR" in r.stderr and "CHANGELOG" in r.stderr, "rlock %r: %r" % (args, r.stderr)
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran"


def test_long_options_run_a_command(env):
    n = env.name("long")
    r = run_rlock(["--server", _addr(env), "--wait", "1", "--lease", "5000", "--kill-grace", "1",
                   "--heartbeat", "1000", "--exclusive", n, "--", "sh", "-c", "exit 5"])
    assert_eq((r.returncode, r.stderr), (5, ""), "rlock with long options")
    for args in (["--lease", "0"], ["--heartbeat", "50"], ["--kill-grace", "x"], ["--wait", "-1"],
                 ["--server", ""], ["--wait"]):
        r = run_rlock(args + [n, "--", "true"])
        assert_eq(r.returncode, EXIT_USAGE, "exit status of rlock %r" % (args,))
        assert args[0] in r.stderr, "the message should name %s: %r" % (args[0], r.stderr)


def test_wait_seconds_with_a_fraction_and_conflict_exit_code(env):
    n = env.name("conflict")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by another client")
    with TempDir() as d:
        for args, want, least, most in ((["-n", "-E", "42"], 42, 0, 0.5),
                                        (["--nonblock", "--conflict-exit-code", "0"], 0, 0, 0.5),
                                        (["--nb"], EXIT_NOT_ACQUIRED, 0, 0.5),
                                        (["-w", ".2", "-E", "9"], 9, 0.18, 1.0),
                                        (["--timeout", "0.25"], EXIT_NOT_ACQUIRED, 0.23, 1.0)):
            t0 = time.monotonic()
            r = run_rlock(["-S", _addr(env)] + args + [n, "--", "touch", "ran"], cwd=d)
            dt = time.monotonic() - t0
            assert_eq(r.returncode, want, "exit status of rlock %r (stderr %r)" % (args, r.stderr))
            assert least <= dt <= most, "rlock %r gave up after %.3fs" % (args, dt)
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without the lock"
    # -E is for a lock not acquired only: COMMAND's own status passes through
    r = run_rlock(["-S", _addr(env), "-n", "-E", "42", env.name("free"), "--", "sh", "-c", "exit 1"])
    assert_eq(r.returncode, 1, "COMMAND's exit 1 under -E 42")


def test_c_runs_a_string_through_sh_before_or_after_name_as_flock_does(env):
    n = env.name("dash-c")
    string = 'echo "x $RLOCK_NAME" | sed s/x/y/; exit 3'
    for args in (["-c", string, n], [n, "-c", string], [n, "--command", string], ["--command", string, n]):
        r = run_rlock(["-S", _addr(env)] + args)
        assert_eq((r.returncode, r.stdout, r.stderr), (3, "y %s\n" % n, ""), "rlock %r" % (args,))
        assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock %r" % (args,))


def test_command_gets_rlock_name_owner_and_token_in_place_of_inherited_ones(env):
    n = env.name("env")
    outer = dict(os.environ, RLOCK_NAME="outer", RLOCK_OWNER="outer:1", RLOCK_TOKEN="9")
    show = 'echo "$RLOCK_NAME|$RLOCK_OWNER|${RLOCK_TOKEN-unset}"'
    for option in ([], ["--fenced"]):
        p = subprocess.Popen([_bin(), "-S", _addr(env)] + option + [n, "--", "sh", "-c", show], env=outer,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=10)
        assert_eq((p.returncode, err), (0, ""), "rlock %r" % option)
        name, owner, token = out.strip().split("|")
        assert_eq(name, n, "RLOCK_NAME")
        assert re.match(OWNER_RE % p.pid, owner), "RLOCK_OWNER %r is not <uuid>:<rlock pid %d>" % (owner, p.pid)
        if option:
            assert_eq(token, str(env.client().call("TOKEN", n)), "RLOCK_TOKEN of --fenced")
        else:
            assert_eq(token, "unset", "RLOCK_TOKEN of a plain lock (an outer one's removed)")


class Hold:
    """rlock ... hold NAME, its stdin a pipe; stopped by pid on exit."""

    def __init__(self, env, args):
        self.proc = subprocess.Popen([_bin(), "-S", _addr(env)] + args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        return False

    def first_line(self, timeout=3.0):
        ready = select.select([self.proc.stdout], [], [], timeout)[0]
        assert ready, "rlock hold printed nothing within %.1fs" % timeout
        return self.proc.stdout.readline()

    def end(self, timeout=3.0):
        """rlock's exit status and stderr."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("rlock hold still running after %.1fs" % timeout)
        return self.proc.returncode, self.proc.stderr.read()


def test_hold_prints_the_owner_and_holds_until_stdin_ends(env):
    n = env.name("hold")
    with Hold(env, ["hold", n]) as h:
        owner = h.first_line().strip()
        assert re.match(OWNER_RE % h.proc.pid, owner), "rlock hold printed %r, not <uuid>:<its pid>" % owner
        assert_eq(env.redis_hash(n), {owner: "1"}, "the lock in Redis")
        h.proc.stdin.write("input is read and dropped\n")
        h.proc.stdin.flush()
        # past the watchdog's TTL: renewed while rlock holds it
        holds_for(lambda: env.redis_hash(n) == {owner: "1"}, env.watchdog_ms / 1000.0 * 1.6,
                  what="lock held while stdin is open")
        assert_eq(env.client().call("TRYLOCK", n, 1), 0, "TRYLOCK by another client during the hold")
        h.proc.stdin.close()
        assert_eq(h.end(), (0, ""), "rlock hold's exit status and stderr once stdin ended")
    assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock hold")


def test_hold_ends_on_a_signal_and_fenced_prints_the_token(env):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        n = env.name("hold-sig")
        with Hold(env, ["--fenced", "hold", n]) as h:
            owner, token = h.first_line().split()
            assert_eq(int(token), env.client().call("TOKEN", n), "the token rlock hold --fenced printed")
            assert_eq(env.redis_hash(n), {owner: "1"}, "the lock in Redis")
            h.proc.send_signal(sig)
            assert_eq(h.end(), (0, ""), "rlock hold's exit status and stderr after %s" % sig.name)
        assert_eq(env.redis("EXISTS", n), 0, "lock key after rlock hold got %s" % sig.name)


def test_hold_not_acquired_or_lost(env):
    n = env.name("hold-lost")
    a = env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by another client")
    r = run_rlock(["-S", _addr(env), "-n", "-E", "3", "hold", n])
    assert_eq((r.returncode, r.stdout), (3, ""), "rlock -n -E 3 hold of a held lock")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by the other client")
    with Hold(env, ["hold", n]) as h:
        h.first_line()
        t0 = time.monotonic()
        assert_eq(env.client().call("FORCEUNLOCK", n), 1, "FORCEUNLOCK by another client")
        status, err = h.end()
        assert_eq(status, EXIT_LOCK_LOST, "rlock hold's exit status once the lock was lost")
        assert time.monotonic() - t0 < 1.0, "rlock hold noticed the loss late (checks every 333 ms)"
        assert "lost" in err and n in err, "rlock hold's warning: %r" % err


BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def test_bash_completion_offers_options_subcommands_and_commands_after_dashdash():
    if not os.path.exists(BASH_COMPLETION):
        raise Skip("bash-completion not installed (apt-get install bash-completion)")
    script = ('source %s; source "$1"\n'
              'comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE};\n'
              '         COMPREPLY=(); _rlock 2>/dev/null; echo "${COMPREPLY[*]}"; }\n'
              'comp rlock --conf; comp rlock -S x --fe; comp rlock -x st; comp rlock -w 1 -n h;\n'
              'comp rlock --fair name -- true; comp rlock -E 3 name "";\n'
              'comp rlock --perm; comp rlock --permits 2 ""; comp rlock --permits 2 -n st;\n' % BASH_COMPLETION)
    r = subprocess.run(["bash", "-c", script, "bash", os.path.join(ROOT, "cli", "rlock.bash-completion")],
                       capture_output=True, text=True, timeout=10)
    assert_eq(r.returncode, 0, "bash (stderr %r)" % r.stderr)
    lines = r.stdout.split("\n")
    assert_eq(lines[:4], ["--conflict-exit-code", "--fenced", "status", "hold"], "completions")
    assert "true" in lines[4].split(), "a COMMAND after --: %r" % lines[4]
    assert_eq(lines[5], "", "after NAME")
    assert_eq(lines[6:9], ["--permits", "hold", ""], "completions with --permits (a permit has hold only)")


# ---------------------------------------------------------------- --permits N: a semaphore's slot


def _permit_holders(env, n):
    return env.redis_hash("rlockd_permits:{%s}" % n)


def test_help_documents_permits():
    r = run_rlock(["-h"])
    for word in ["--permits N", "semaphore NAME", "consul lock -n N", "CLIENT-ID:0"]:
        assert word in r.stdout, "rlock -h does not mention %r:\n%s" % (word, r.stdout)


def test_permits_usage_errors_exit_64():
    for args, why in [(["--permits", "0", "s", "--", "true"], "from 1 to 2147483647"),
                      (["--permits", "2147483648", "s", "--", "true"], "from 1 to 2147483647"),
                      (["--permits", "2", "--fair", "s", "--", "true"], "a semaphore has no kind"),
                      (["-x", "--permits", "2", "s", "--", "true"], "a semaphore has no kind"),
                      (["--permits", "2", "-l", "100", "s", "--", "true"], "a permit has no lease"),
                      (["--permits", "2", "status", "s"], "with a COMMAND or hold only"),
                      (["--permits", "2", "force-unlock", "s"], "with a COMMAND or hold only")]:
        r = run_rlock(args)
        assert_eq(r.returncode, EXIT_USAGE, "exit status of rlock %s (stderr %r)" % (" ".join(args), r.stderr))
        assert why in r.stderr, "rlock %s: message %r should say %r" % (" ".join(args), r.stderr, why)


def test_permits_2_with_6_concurrent_commands_never_runs_more_than_2_at_once(env):
    n, runs = env.name("sem"), 6
    step = 'echo start $1 $(date +%s%N) >> log; sleep 0.3; echo end $1 $(date +%s%N) >> log'
    assert_eq(env.redis("EXISTS", n), 0, "the semaphore before the first rlock")
    with TempDir() as d:
        procs = [subprocess.Popen([_bin(), "-S", _addr(env), "--permits", "2", n, "--", "sh", "-c", step, "sh",
                                   str(i)], cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT) for i in range(runs)]
        try:
            outs = [p.communicate(timeout=15)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        assert_eq([p.returncode for p in procs], [0] * runs, "exit statuses (output %r)" % outs)
        events = []
        for line in open(os.path.join(d, "log")):
            what, who, ns = line.split()
            events.append((int(ns), 0 if what == "end" else 1, who))
    assert_eq(sorted(who for _, start, who in events if start), [str(i) for i in range(runs)], "runs that started")
    assert_eq(len(events), 2 * runs, "start and end lines")
    running = most = 0
    for _, start, _ in sorted(events):   # an end before a start at the same instant
        running += 1 if start else -1
        most = max(most, running)
    assert_eq(most, 2, "most COMMANDs running at once under --permits 2")
    assert_eq(env.redis("GET", n), "2", "the semaphore, created with 2 permits, all back")
    assert_eq(_permit_holders(env, n), {}, "rlockd's record of permit holders after all runs")


def test_permits_creates_the_semaphore_and_command_gets_name_and_owner(env):
    n = env.name("sem")
    command = 'echo "$RLOCK_NAME" > name; echo "$RLOCK_OWNER" > owner; ' + WAIT_FOR_GO
    with TempDir() as d, Background(d, ["-S", _addr(env), "--permits", "3", n, "--", "sh", "-c", command]) as rl:
        rl.wait_ready()
        owner = open(rl.path("owner")).read().strip()
        assert re.match(OWNER_RE % 0, owner), "RLOCK_OWNER %r" % owner
        assert_eq(open(rl.path("name")).read().strip(), n, "RLOCK_NAME")
        assert_eq(env.redis("GET", n), "2", "permits available while COMMAND runs (3, one taken)")
        assert_eq(_permit_holders(env, n), {owner: "1"}, "rlockd's record: RLOCK_OWNER holds one permit")
        rl.go()
        assert_eq(rl.wait(3.0), 0, "rlock's exit status")
        assert_eq(rl.output(), "", "rlock's output")
    assert_eq(env.redis("GET", n), "3", "permits after rlock gave its one back")
    assert_eq(_permit_holders(env, n), {}, "rlockd's record after the run")


def test_permits_of_an_existing_semaphore_keep_its_number_and_more_is_a_warning(env):
    n = env.name("sem")
    assert_eq(env.client().call("SETPERMITS", n, 5), 1, "SETPERMITS by another client")
    with TempDir() as d:
        r = run_rlock(["-S", _addr(env), "--permits", "2", n, "--", "sh", "-c", "touch ran"], cwd=d)
        assert_eq(r.returncode, 0, "rlock's exit status (stderr %r)" % r.stderr)
        assert os.path.exists(os.path.join(d, "ran")), "COMMAND did not run"
    assert "warning" in r.stderr and "5 permits available" in r.stderr and "--permits 2" in r.stderr, \
        "rlock's warning: %r" % r.stderr
    assert_eq(env.redis("GET", n), "5", "the semaphore's own number of permits")


def test_permits_no_wait_and_wait_give_up_with_the_conflict_status(env):
    n = env.name("sem")
    a = env.client()
    assert_eq(a.call("SETPERMITS", n, 1), 1, "SETPERMITS")
    assert_eq(a.call("ACQUIRE", n), "OK", "ACQUIRE of the one permit by another client")
    with TempDir() as d:
        t0 = time.monotonic()
        r = run_rlock(["-S", _addr(env), "--permits", "1", "-n", n, "--", "touch", "ran"], cwd=d)
        assert_eq(r.returncode, EXIT_NOT_ACQUIRED, "exit status of rlock --permits 1 -n")
        assert time.monotonic() - t0 < 0.5, "rlock -n did not give up at once"
        assert "semaphore '%s' is held elsewhere" % n in r.stderr, "rlock -n message: %r" % r.stderr
        r = run_rlock(["-S", _addr(env), "--permits", "1", "-E", "9", "-w", "0.3", n, "--", "touch", "ran"], cwd=d)
        assert_eq(r.returncode, 9, "exit status of rlock --permits 1 -E 9 -w 0.3")
        assert "not acquired within 0.3 s" in r.stderr, "rlock -w message: %r" % r.stderr
        assert not os.path.exists(os.path.join(d, "ran")), "COMMAND ran without a permit"
        with Background(d, ["-S", _addr(env), "--permits", "1", "-w", "3", n, "--", "touch", "ran"]) as rl:
            env.wait_waiting(1, what="rlock --permits 1 -w 3 queued for the permit")
            assert_eq(a.call("RELEASE", n), 1, "RELEASE by the other client")
            assert_eq(rl.wait(2.0), 0, "rlock's exit status once the permit came back")
            assert os.path.exists(rl.path("ran")), "COMMAND did not run"
    assert_eq(env.redis("GET", n), "1", "the permit after the run")


def test_permits_killed_rlock_gives_its_permit_back(env):
    n = env.name("sem")
    with TempDir() as d, Background(d, ["-S", _addr(env), "--permits", "1", n, "--", "sh", "-c", TRAP_TERM]) as rl:
        rl.wait_ready()
        assert_eq(env.redis("GET", n), "0", "permits available while COMMAND runs")
        rl.proc.kill()
        rl.proc.wait(2)
        wait_until(lambda: os.path.exists(rl.path("trapped")), 2.0, what="COMMAND got SIGTERM after rlock died")
        wait_until(lambda: env.redis("GET", n) == "1", 2.0, what="the permit back after rlock died")
        assert_eq(_permit_holders(env, n), {}, "rlockd's record after rlock died")
        assert "died holding semaphore '%s'" % n in rl.output(), "guardian's message: %r" % rl.output()


def test_permits_lost_while_command_runs_stops_it_and_exits_75(env):
    # The permit comes back behind rlockd's back, as a Redis that lost
    # rlockd's record and a reclaim would leave it: rlockd's watchdog
    # finds it gone at its next renewal, rlock at its next check.
    n = env.name("sem")
    with TempDir() as d, Background(d, ["-S", _addr(env), "--permits", "1", n, "--", "sh", "-c", TRAP_TERM]) as rl:
        rl.wait_ready()
        time.sleep(1.2)   # confirmed more than once: held until then
        assert rl.proc.poll() is None, "rlock exited: %r" % rl.output()
        t0 = time.monotonic()
        assert_eq(env.redis("DEL", "rlockd_permits:{%s}" % n, "rlockd_permits_deadline:{%s}" % n), 2,
                  "rlockd's record of the permit deleted")
        assert_eq(env.redis("SET", n, "1"), "OK", "the permit given back to the count")
        assert_eq(rl.wait(4.0), EXIT_LOCK_LOST, "rlock's exit status once the permit was lost")
        dt = time.monotonic() - t0
        assert dt < env.watchdog_ms / 1000.0 / 3 + 1.5, "rlock noticed the lost permit after %.2fs" % dt
        assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"
        out = rl.output()
        assert "semaphore '%s' lost" % n in out and "SIGTERM" in out, "rlock's warning: %r" % out


def test_permits_hold_prints_the_owner_and_gives_the_permit_back_at_the_end(env):
    n = env.name("sem")
    with Hold(env, ["--permits", "1", "hold", n]) as h:
        owner = h.first_line().strip()
        assert re.match(OWNER_RE % 0, owner), "hold's line %r" % owner
        assert_eq(_permit_holders(env, n), {owner: "1"}, "rlockd's record while held")
        h.proc.stdin.close()
        assert_eq(h.end(), (0, ""), "rlock hold's exit status and stderr once stdin ended")
    assert_eq(env.redis("GET", n), "1", "the permit after the hold")


# ---------------------------------------------------------------- named owners


def test_rlock_names_its_connections_host_program_pid_which_owners_withnames_and_client_list_show(env):
    n = env.name("named")
    with TempDir() as d, Background(d, ["-S", _addr(env), n, "--", "sh", "-c", WAIT_FOR_GO]) as rl:
        rl.wait_ready()
        want = "%s/rlock/%d" % (socket.gethostname(), rl.proc.pid)
        c = env.client()
        pttl, counts, kind = c.call("OWNERS", n)      # the reply without the option, as before
        owner = list(counts)[0]
        assert_eq(c.call("OWNERS", n, "WITHNAMES")[1:], [counts, kind, [owner, want]],
                  "OWNERS WITHNAMES: the names after the kind")
        assert ("name=%s " % want) in env.admin().call("CLIENT", "LIST"), "CLIENT LIST names rlock's connections"
        r = run_rlock(["-S", _addr(env), "status", n])
        assert_eq(r.stdout.splitlines()[1:], ["kind=lock", "owner=%s holds=1 name=%s" % (owner, want)],
                  "rlock status")
        rl.go()
        assert_eq(rl.wait(5.0), 0, "rlock's exit status")
    c.call("LOCK", n, 7)
    assert_eq(c.call("OWNERS", n, "WITHNAMES")[3], ["%s:7" % c.call("CLIENTID"), None],
              "an owner whose connections have no name")


def test_force_unlock_is_logged_with_who_issued_it(env):
    n = env.name("forced")
    c = env.client()
    c.call("LOCK", n, 1)
    r = run_rlock(["-S", _addr(env), "force-unlock", n])
    assert_eq((r.returncode, r.stdout), (0, "force-unlocked\n"), "rlock force-unlock")
    env.rlockd.wait_log(r"INFO FORCEUNLOCK '%s' by client \d+ '%s/rlock/\d+' \(tcp 127\.0\.0\.1\), "
                        r"user default, client-id [0-9a-f-]{36}\n" % (re.escape(n), re.escape(socket.gethostname())))


def test_permits_rlockd_away_counts_as_lost_after_the_grace_as_its_ttl_is_unknown():
    # rlockd renews a permit with its own watchdog: rlock cannot know when it would
    # expire, so rlockd away is a loss after the 1 s grace, however long the watchdog
    with Env({"lock": {"watchdog_timeout_ms": 30000}}, label="rlock-permit-away") as env, TempDir() as d:
        n = env.name("permit-away")
        with Background(d, ["-S", _addr(env), "--permits", "1", n, "--", "sh", "-c", TRAP_TERM]) as rl:
            rl.wait_ready()
            env.rlockd.proc.kill()
            env.rlockd.proc.wait(5)
            assert_eq(rl.wait(5.0), EXIT_LOCK_LOST, "rlock's exit status")
            assert os.path.exists(rl.path("trapped")), "COMMAND did not get SIGTERM"
            assert "rlockd has not confirmed it" in rl.output(), rl.output()
