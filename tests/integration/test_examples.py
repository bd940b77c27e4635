"""The client examples in examples/, run against rlockd as the README shows them.

Each example takes a lock, prints "locked <owner>", holds it until a line
comes on its stdin, unlocks, prints "unlocked" and exits 0. The tests check
in Redis what the example says, and that it waits while another client
holds the lock. A missing interpreter or library is a SKIP naming what to
install, never a pass.
"""

import os
import re
import select
import subprocess
import time

from harness import HOST, Skip, assert_eq, which

CONFIG = {"lock": {"watchdog_timeout_ms": 1000}}

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = os.path.join(ROOT, "examples")
# redis-py from Debian's python3-redis: only the system interpreter sees it
# (a pyenv `python3` on PATH does not).
SYSTEM_PYTHON = "/usr/bin/python3"


def _python():
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        raise Skip("%s not found (apt-get install python3)" % SYSTEM_PYTHON)
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import redis"], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("redis-py not importable by %s (apt-get install python3-redis, "
                   "or scripts/install-deps.sh)" % SYSTEM_PYTHON)
    return [SYSTEM_PYTHON, os.path.join(EXAMPLES, "python_lock.py")], os.environ


def _node():
    node = which("node")
    if not node:
        raise Skip("node not found (apt-get install nodejs npm, then scripts/install-npm-deps.sh)")
    modules = os.environ.get("NODE_PATH") or os.path.join(ROOT, "build", "npm", "node_modules")
    env = dict(os.environ, NODE_PATH=os.path.abspath(modules))
    r = subprocess.run([node, "-e", "require('ioredis')"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("ioredis not found in %s (scripts/install-npm-deps.sh installs it; "
                   "it needs npm and the network)" % modules)
    return [node, os.path.join(EXAMPLES, "node_lock.js")], env


def _read_line(proc, timeout):
    """One line of proc's stdout, or None if none comes within timeout."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else None


def _example_holds_and_releases(env, argv, proc_env, addr_in_env, hold_s):
    """Runs the example while another client holds the lock, then releases
    it; the example then holds it for hold_s seconds, and unlocks."""
    n = env.name("example")
    addr = "%s:%d" % (HOST, env.port)
    if addr_in_env:
        proc_env = dict(proc_env, RLOCK_ADDR=addr)
        args = argv + [n]
    else:
        proc_env = {k: v for k, v in proc_env.items() if k != "RLOCK_ADDR"}
        args = argv + [n, addr]
    other = env.client()
    assert_eq(other.call("LOCK", n, 1), "OK", "LOCK by another client first")
    proc = subprocess.Popen(args, env=proc_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    try:
        env.wait_waiting(1, what="the example's LOCK queued behind the other client's lock")
        line = _read_line(proc, 0.3)
        assert line is None, "the example said %r while another client held the lock" % line
        assert_eq(other.call("UNLOCK", n, 1), 1, "UNLOCK by the other client")
        line = _read_line(proc, 5.0)
        assert line is not None, "the example printed nothing within 5s of the release (stderr: %s)" % (
            proc.stderr.read() if proc.poll() is not None else "still running")
        m = re.match(r"^locked (\S+:\d+)\n$", line)
        assert m, "the example's first line: %r" % line
        owner = m.group(1)
        assert_eq(env.redis_hash(n), {owner: "1"}, "Redis hash while the example holds the lock")
        assert_eq(other.call("TRYLOCK", n, 1), 0, "TRYLOCK by another client meanwhile")
        time.sleep(hold_s)
        assert_eq(env.redis_hash(n), {owner: "1"}, "Redis hash after %.1fs" % hold_s)
        out, err = proc.communicate("done\n", timeout=5)
        assert_eq((proc.returncode, out), (0, "unlocked\n"), "the example's exit status and last line "
                                                            "(stderr %r)" % err)
        assert_eq(env.redis("EXISTS", n), 0, "lock key after the example unlocked")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_python_example_locks_waits_for_holder_and_unlocks(env):
    argv, proc_env = _python()
    # past the watchdog's TTL: only its renewals keep the lock
    _example_holds_and_releases(env, argv, proc_env, False, env.watchdog_ms / 1000.0 * 1.3)
    _example_holds_and_releases(env, argv, proc_env, True, 0)


def test_node_example_locks_waits_for_holder_and_unlocks(env):
    argv, proc_env = _node()
    _example_holds_and_releases(env, argv, proc_env, False, env.watchdog_ms / 1000.0 * 1.3)
    _example_holds_and_releases(env, argv, proc_env, True, 0)


def test_fencing_example_rejects_the_paused_holders_write(env):
    """examples/fencing.sh, which the README shows: the later holder's token is
    accepted, the stalled one's refused."""
    if not which("redis-cli"):
        raise Skip("redis-cli not found (install redis-tools)")
    n = env.name("fencing")
    r = subprocess.run(["sh", os.path.join(EXAMPLES, "fencing.sh"), str(env.port), n],
                       capture_output=True, text=True, timeout=30)
    assert_eq(r.returncode, 0, "fencing.sh exit status (stderr: %s)" % r.stderr)
    lines = r.stdout.splitlines()
    assert len(lines) == 2, "fencing.sh output: %r" % r.stdout
    new = int(lines[0].split()[-1])
    assert_eq(lines[0], "accepted token %d" % new, "the second holder's write")
    assert_eq(lines[1], "rejected token %d < %d" % (new - 1, new), "the paused holder's write")
