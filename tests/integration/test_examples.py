"""The client examples in examples/, run against rlockd as the README shows them.

Each example takes a lock, prints "locked <owner>", holds it until a line
comes on its stdin, unlocks, prints "unlocked" and exits 0. The tests check
in Redis what the example says, and that it waits while another client
holds the lock. redis_cli_lock.sh and fencing.sh print their replies
instead. The README's snippets of these programs are checked to be their
lines. The Python and Node packages' snippets (their READMEs', and the
README's) run as pasted and exit; the Node ones in a project where the
tarball of `make npm-pack` is installed. A missing interpreter or library
is a SKIP naming what to install, never a pass.
"""

import os
import re
import select
import subprocess
import textwrap
import time

from harness import (HOST, Skip, TempDir, assert_eq, node_with, redis_cli, ruby_redis,
                     system_python, which)

CONFIG = {"lock": {"watchdog_timeout_ms": 1000}}

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = os.path.join(ROOT, "examples")


def _python():
    return [system_python(("redis", "python3-redis")),
            os.path.join(EXAMPLES, "python_lock.py")], os.environ


def _node(package="ioredis", example="node_lock.js"):
    node, env = node_with(package)
    return [node, os.path.join(EXAMPLES, example)], env


def _ruby():
    return [ruby_redis(), os.path.join(EXAMPLES, "ruby_lock.rb")], os.environ


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
    redis_cli()
    n = env.name("fencing")
    r = subprocess.run(["sh", os.path.join(EXAMPLES, "fencing.sh"), str(env.port), n],
                       capture_output=True, text=True, timeout=30)
    assert_eq(r.returncode, 0, "fencing.sh exit status (stderr: %s)" % r.stderr)
    lines = r.stdout.splitlines()
    assert len(lines) == 2, "fencing.sh output: %r" % r.stdout
    new = int(lines[0].split()[-1])
    assert_eq(lines[0], "accepted token %d" % new, "the second holder's write")
    assert_eq(lines[1], "rejected token %d < %d" % (new - 1, new), "the paused holder's write")


def test_node_redis_example_locks_waits_for_holder_and_unlocks(env):
    argv, proc_env = _node("redis", "node_redis_lock.js")
    _example_holds_and_releases(env, argv, proc_env, False, env.watchdog_ms / 1000.0 * 1.3)
    _example_holds_and_releases(env, argv, proc_env, True, 0)


def test_ruby_example_locks_waits_for_holder_and_unlocks(env):
    argv, proc_env = _ruby()
    _example_holds_and_releases(env, argv, proc_env, False, env.watchdog_ms / 1000.0 * 1.3)
    _example_holds_and_releases(env, argv, proc_env, True, 0)


def test_redis_cli_example_locks_with_a_lease_and_unlocks(env):
    """examples/redis_cli_lock.sh: its LOCK waits for another client's hold,
    then LOCK (with a lease), another owner's TRYLOCK and UNLOCK answer
    OK, 0 and 1 through one redis-cli."""
    redis_cli()
    script = os.path.join(EXAMPLES, "redis_cli_lock.sh")
    addr = "%s:%d" % (HOST, env.port)
    for args, proc_env in ((["sh", script, None, addr], {k: v for k, v in os.environ.items()
                                                         if k != "RLOCK_ADDR"}),
                           (["sh", script, None], dict(os.environ, RLOCK_ADDR=addr))):
        n = env.name("cli-example")
        args[2] = n
        other = env.client()
        assert_eq(other.call("LOCK", n, 1), "OK", "LOCK by another client first")
        proc = subprocess.Popen(args, env=proc_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            env.wait_waiting(1, what="the example's LOCK queued behind the other client's lock")
            assert proc.poll() is None, "the example ended while another client held the lock: %r" % (
                proc.communicate(),)
            owner = "%s:1" % other.call("CLIENTID")
            assert_eq(env.redis_hash(n), {owner: "1"}, "Redis hash while the other client holds the lock")
            assert_eq(other.call("UNLOCK", n, 1), 1, "UNLOCK by the other client")
            out, err = proc.communicate(timeout=10)
            assert_eq((proc.returncode, out.splitlines()), (0, ["OK", "0", "1"]),
                      "the example's exit status and replies to LOCK ... LEASE, TRYLOCK, UNLOCK "
                      "(stderr %r)" % err)
            assert_eq(env.redis("EXISTS", n), 0, "lock key after the example unlocked")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


# ---- the README shows the examples' own lines ----------------------------------

README_SECTION = "## Using from other languages"
README_EXAMPLES = {"python_lock.py", "node_lock.js", "node_redis_lock.js", "ruby_lock.rb",
                   "redis_cli_lock.sh"}


def _readme_snippets():
    """(example file, code block lines) for each code block of the README's
    README_SECTION that follows a link to an examples/ file."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("\n" + README_SECTION + "\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    snippets, pos = [], 0
    for m in re.finditer(r"^```[a-z]*\n(.*?)^```$", section, re.S | re.M):
        linked = re.findall(r"\(examples/([\w.]+)\)", section[pos:m.start()])
        pos = m.end()
        if linked:
            snippets.append((linked[-1], m.group(1).splitlines()))
    return snippets


def _appears_verbatim(block, lines):
    """block, dedented, is a run of lines with the same extra indentation."""
    block = textwrap.dedent("\n".join(block)).splitlines()
    for i in range(len(lines) - len(block) + 1):
        first = lines[i]
        indent = first[:len(first) - len(first.lstrip())]
        if all((want == got == "") or indent + want == got for want, got in zip(block, lines[i:])):
            return True
    return False


def test_readme_snippets_are_the_examples_lines():
    """Each README snippet under "Using from other languages" that follows
    a link to an example is that example's lines, verbatim: the README
    shows what the tests above run, and every example is shown."""
    snippets = _readme_snippets()
    assert_eq({f for f, _ in snippets}, README_EXAMPLES,
              "the examples the README section shows (each after a link to examples/FILE)")
    for name, block in snippets:
        with open(os.path.join(EXAMPLES, name)) as f:
            lines = f.read().splitlines()
        assert block and _appears_verbatim(block, lines), \
            "README's snippet after examples/%s is not that file's lines:\n%s" % (name, "\n".join(block))


# ---- the packages' snippets run as pasted -----------------------------------------

PACKAGE_READMES = {"python": ("clients/python/README.md", "README.md"),
                   "js": ("clients/node/README.md", "README.md")}


def _package_snippets(language):
    """(file, block) for each ```language block of the package's README, and
    the README's block that uses the package (require("rlockd"), import rlockd)."""
    uses = {"python": "import rlockd\n", "js": 'require("rlockd")'}[language]
    found = []
    for path in PACKAGE_READMES[language]:
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
        for m in re.finditer(r"^```%s\n(.*?)^```$" % language, text, re.S | re.M):
            if path != "README.md" or uses in m.group(1):
                found.append((path, m.group(1)))
    assert len(found) >= 3, "%s snippets found: %r" % (language, [p for p, _ in found])
    return found


def _run_snippets(env, snippets, argv, cwd, proc_env, suffix):
    addr = "%s:%d" % (HOST, env.port)
    proc_env = dict(proc_env, RLOCK_ADDR=addr)
    proc_env.pop("RLOCK_AUTH", None)
    for i, (path, code) in enumerate(snippets):
        script = os.path.join(cwd, "snippet%d%s" % (i, suffix))
        with open(script, "w") as f:
            f.write(code)
        try:
            r = subprocess.run(argv + [script], cwd=cwd, env=proc_env, capture_output=True, text=True,
                               timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s's snippet %d did not exit within 30 s (a connection left open?):\n%s"
                                 % (path, i, code))
        assert r.returncode == 0, "%s's snippet %d exited %d:\n%s\nstdout %s\nstderr %s" % (
            path, i, r.returncode, code, r.stdout[-1500:], r.stderr[-1500:])


def test_python_package_snippets_run_as_pasted_and_exit(env):
    python = system_python(("redis", "python3-redis"))
    with TempDir() as d:
        _run_snippets(env, _package_snippets("python"), [python], d,
                      dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python")), ".py")


def test_node_package_installs_from_npm_pack_and_its_snippets_run_as_pasted_and_exit(env):
    """make npm-pack's tarball, installed with npm into a fresh project (npm fetches ioredis from
    its registry), then each snippet run there as pasted: require("rlockd") is the tarball's."""
    npm, node = which("npm"), which("node")
    if not npm or not node:
        raise Skip("npm or node not found (apt-get install npm)")
    with TempDir() as d:
        build = os.path.join(d, "build")
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "NODE_PATH"}
        r = subprocess.run(["make", "-s", "-C", ROOT, "BUILD=" + build, "npm-pack"], capture_output=True,
                           text=True, timeout=120, env=clean)
        assert_eq(r.returncode, 0, "make npm-pack: %s%s" % (r.stdout, r.stderr))
        tarballs = [f for f in os.listdir(os.path.join(build, "npm-pack")) if f.endswith(".tgz")]
        assert_eq(len(tarballs), 1, "tarballs make npm-pack built")
        project = os.path.join(d, "project")
        os.makedirs(project)
        with open(os.path.join(project, "package.json"), "w") as f:
            f.write('{"name": "try-rlockd", "version": "1.0.0", "private": true}\n')
        r = subprocess.run([npm, "install", "--no-audit", "--no-fund",
                            os.path.join(build, "npm-pack", tarballs[0])],
                           cwd=project, capture_output=True, text=True, timeout=300, env=clean)
        if r.returncode != 0 and re.search(r"ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN", r.stderr):
            raise Skip("the npm registry is unreachable: %s" % r.stderr.strip()[-300:])
        assert_eq(r.returncode, 0, "npm install of the tarball: %s" % r.stderr[-2000:])
        _run_snippets(env, _package_snippets("js"), [node], project, clean, ".js")
