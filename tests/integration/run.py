#!/usr/bin/env python3
"""
run.py - runs rlockd's integration tests (tests/integration/test_*.py).

    RLOCKD_BIN=build/rlockd python3 tests/integration/run.py [PATTERN...]

A PATTERN selects tests whose "module.test" name contains it (or matches
it as a glob when it has * ? or [). --list prints the names only.

Each module runs in a process of its own, and independent modules run at
the same time: RLOCKD_TEST_JOBS of them (default: twice the cores, since
most of a test is waiting on a daemon). A module whose SERIAL is true runs
alone, after the others. A module's output is printed whole when it ends,
never interleaved with another's. RLOCKD_TEST_ORDER=random[:SEED] runs the
modules in a random order (make test-stress); otherwise the slowest of the
last run (RLOCKD_TEST_TIMES, default build/integration-times.json) go
first, so the long ones do not start last. A module still running after
RLOCKD_TEST_MODULE_TIMEOUT seconds (default 900) is stopped and fails.

A test function taking a parameter `env` shares its module's redis-server
+ rlockd (configured by the module's CONFIG dict); after each such test its
clients are closed and the runner waits until rlockd reports no waiting
client, so waiter counts in INFO start from 0. A test taking no parameter
starts whatever it needs itself. Each test names the behaviour it proves.
The ten slowest tests are listed at the end, then the failed ones again.
The last line printed is exactly "N passed, N failed" plus ", N skipped"
when something was skipped; the exit status is 1 if anything failed.
"""

import fnmatch
import importlib
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True   # no __pycache__ in the source tree

import harness  # noqa: E402


def module_names():
    return sorted(fn[:-3] for fn in os.listdir(HERE) if fn.startswith("test_") and fn.endswith(".py"))


def tests_of(mod):
    tests = [(n, f) for n, f in vars(mod).items()
             if n.startswith("test_") and inspect.isfunction(f) and f.__module__ == mod.__name__]
    tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
    return tests


def selected(fullname, patterns):
    if not patterns:
        return True
    for p in patterns:
        if any(ch in p for ch in "*?["):
            if fnmatch.fnmatch(fullname, p) or fnmatch.fnmatch(fullname.split(".", 1)[1], p):
                return True
        elif p in fullname:
            return True
    return False


def short_traceback(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if os.path.basename(f.filename) != "run.py"]
    lines = ["    at %s:%d in %s" % (os.path.basename(f.filename), f.lineno, f.name) for f in frames[-3:]]
    return "\n".join(lines)


def indent(text):
    return "\n".join("      " + line for line in text.splitlines())


# ------------------------------------------------------------ one module (a worker process)


class Outcomes:
    """What one module's run counted; written as JSON for the parent."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.durations = []   # (test, seconds)

    def record(self, full, outcome, dt, detail=""):
        self.durations.append((full, round(dt, 2)))
        if outcome == "PASS":
            self.passed += 1
            print("PASS %s (%.2fs)" % (full, dt))
        elif outcome == "SKIP":
            self.skipped += 1
            print("SKIP %s  <<<<<<<<<< SKIPPED: %s" % (full, detail))
        else:
            self.failed += 1
            self.failures.append(full)
            print("FAIL %s (%.2fs)\n    %s" % (full, dt, detail.strip().replace("\n", "\n    ")))
        sys.stdout.flush()


def run_test(mod, name, fn, env, config):
    """Runs one test; returns (outcome, detail, env): env is the module's shared
    rlockd, started on the first test that wants it, None again once it died."""
    wants_env = "env" in inspect.signature(fn).parameters
    outcome, detail = "PASS", ""
    try:
        if wants_env and env is None:
            env = harness.Env(config, label=mod.__name__)
            env.start()
        fn(env) if wants_env else fn()
    except harness.Skip as e:
        outcome, detail = "SKIP", str(e)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # AssertionError and anything unexpected
        outcome = "FAIL"
        kind = "" if isinstance(e, AssertionError) else type(e).__name__ + ": "
        detail = kind + str(e) + "\n" + short_traceback(e)
    if env is not None:
        env.close_clients()
        if not env.alive():
            if outcome != "FAIL":
                outcome = "FAIL"
                detail = "rlockd died during this test"
            status = env.rlockd.proc.returncode if env.rlockd and env.rlockd.proc else None
            detail += "\n    rlockd exit status: %s\n    rlockd log:\n%s" % (status, indent(env.log_tail()))
            env.close()
            env = None
        else:
            if outcome == "FAIL":
                detail += "\n    rlockd log (tail):\n" + indent(env.log_tail(12))
            env.settle()   # the closed clients' waiters gone: the next test counts from 0
    problems = harness.warnings()   # e.g. rlockd did not stop cleanly on SIGTERM
    if problems:
        if outcome != "FAIL":
            outcome, detail = "FAIL", ""
        detail += "\n" + "\n".join(problems)
    return outcome, detail, env


def run_module(name, patterns):
    """Runs the selected tests of one module, in this process, in file order."""
    out = Outcomes()
    mod = importlib.import_module(name)
    config = getattr(mod, "CONFIG", None)
    env = None
    try:
        try:
            for test, fn in tests_of(mod):
                full = "%s.%s" % (name, test)
                if not selected(full, patterns):
                    continue
                t0 = time.monotonic()
                outcome, detail, env = run_test(mod, test, fn, env, config)
                out.record(full, outcome, time.monotonic() - t0, detail)
        finally:
            if env is not None:
                env.close()
                problems = harness.warnings()
                if problems:
                    out.record("%s.teardown" % name, "FAIL", 0.0,
                               "shared rlockd did not stop cleanly\n" + "\n".join(problems))
    except KeyboardInterrupt:
        print("interrupted")
        out.failed += 1
        out.failures.append("%s (interrupted)" % name)
    finally:
        left = harness.leftovers()  # before the last-resort sweep, so leaks show
        harness.kill_everything()
    if left:
        out.record("%s.nothing_left_behind" % name, "FAIL", 0.0, "\n".join(left))
    return out


def worker_main(name, patterns, result_path):
    def on_signal(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    out = run_module(name, patterns)
    with open(result_path, "w") as f:
        json.dump(vars(out), f)
    return 0


# ------------------------------------------------------------ the whole run (the parent)


def times_path():
    return os.environ.get("RLOCKD_TEST_TIMES") or os.path.join(
        os.environ.get("RLOCKD_BUILD") or os.path.join(ROOT, "build"), "integration-times.json")


def load_times():
    try:
        with open(times_path()) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_times(times):
    try:
        os.makedirs(os.path.dirname(times_path()), exist_ok=True)
        with open(times_path(), "w") as f:
            json.dump(times, f, indent=0, sort_keys=True)
    except OSError:
        pass   # only an ordering hint for the next run


def jobs():
    value = os.environ.get("RLOCKD_TEST_JOBS")
    if value:
        return max(1, int(value))
    return 2 * (os.cpu_count() or 1)


def ordered(names, serial):
    """The modules in the order they start: parallel ones first, slowest
    last time first (or shuffled), then the serial ones."""
    order = os.environ.get("RLOCKD_TEST_ORDER", "")
    if order.startswith("random"):
        seed = order.partition(":")[2] or str(random.randrange(1 << 30))
        print("module order: random, seed %s (RLOCKD_TEST_ORDER=random:%s repeats it)" % (seed, seed))
        names = list(names)
        random.Random(seed).shuffle(names)
    else:
        last = load_times()
        names = sorted(names, key=lambda n: -last.get(n, 1e9))   # unknown ones first
    return [n for n in names if n not in serial] + [n for n in names if n in serial]


class Worker:
    """One module running in a child process, its output in a temp file."""

    def __init__(self, name, patterns, tmpdir):
        self.name = name
        self.output = open(os.path.join(tmpdir, name + ".out"), "w+")
        self.result_path = os.path.join(tmpdir, name + ".json")
        argv = [sys.executable, os.path.abspath(__file__), "--module=" + name,
                "--result=" + self.result_path] + patterns
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.output,
                                     stderr=subprocess.STDOUT)

    def overdue(self, limit):
        return time.monotonic() - self.started > limit

    def finish(self):
        """The module's outcomes; its output printed whole."""
        self.output.seek(0)
        sys.stdout.write(self.output.read())
        self.output.close()
        try:
            with open(self.result_path) as f:
                r = json.load(f)
        except (OSError, ValueError):
            r = {"passed": 0, "failed": 1, "skipped": 0, "durations": [],
                 "failures": ["%s (its process exited %s with no result)" % (self.name, self.proc.returncode)]}
            print("FAIL %s: its process exited %s before it reported" % (self.name, self.proc.returncode))
        sys.stdout.flush()
        return r

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)   # its handler stops what it started
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_all(names, serial, patterns):
    total = {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "durations": []}
    times = load_times()
    limit = float(os.environ.get("RLOCKD_TEST_MODULE_TIMEOUT", "900"))
    pending = ordered(names, serial)
    width = jobs()
    print("%d modules, up to %d at a time (RLOCKD_TEST_JOBS)" % (len(pending), width))
    sys.stdout.flush()
    running = []
    with tempfile.TemporaryDirectory(prefix="rlockd-run-") as tmpdir:
        try:
            while pending or running:
                # a serial module starts alone; nothing starts beside it
                while pending and len(running) < width and not any(w.name in serial for w in running):
                    if pending[0] in serial and running:
                        break
                    running.append(Worker(pending.pop(0), patterns, tmpdir))
                time.sleep(0.05)
                for w in list(running):
                    if w.proc.poll() is None and w.overdue(limit):
                        print("FAIL %s: still running after %.0fs (RLOCKD_TEST_MODULE_TIMEOUT), stopped"
                              % (w.name, limit))
                        w.stop()
                        total["failed"] += 1
                        total["failures"].append("%s (timed out)" % w.name)
                    if w.proc.poll() is not None:
                        running.remove(w)
                        times[w.name] = round(time.monotonic() - w.started, 1)
                        r = w.finish()
                        for key in ("passed", "failed", "skipped", "failures", "durations"):
                            total[key] += r[key]
        except KeyboardInterrupt:
            print("interrupted")
            total["failed"] += 1
            for w in running:
                w.stop()
                w.finish()
    if not patterns:
        save_times(times)
    return total


def restore_signal_defaults():
    """Undo what a caller's ignored signals would pass down. A shell starts a
    background job with SIGINT ignored (nohup ignores SIGHUP), an ignored
    signal stays ignored across exec, and a program that reads its signals
    from a signalfd never sees one that is ignored: the tests that send
    rlock SIGINT or SIGHUP hung. Each test starts from the defaults, as
    from a terminal."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)


def main(argv):
    restore_signal_defaults()
    opts = dict(a[2:].partition("=")[::2] for a in argv[1:] if a.startswith("--"))
    patterns = [a for a in argv[1:] if not a.startswith("--")]
    if "module" in opts:
        return worker_main(opts["module"], patterns, opts["result"])

    chosen, serial = [], set()
    for name in module_names():
        mod = importlib.import_module(name)
        fulls = ["%s.%s" % (name, t) for t, _ in tests_of(mod) if selected("%s.%s" % (name, t), patterns)]
        if "list" in opts:
            for full in fulls:
                print(full)
        elif fulls:
            chosen.append(name)
            if getattr(mod, "SERIAL", False):
                serial.add(name)
    if "list" in opts:
        return 0

    def on_signal(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)

    print("rlockd integration tests: RLOCKD_BIN=%s" % harness.rlockd_bin())
    t_start = time.monotonic()
    total = run_all(chosen, serial, patterns)
    slowest = sorted(total["durations"], key=lambda d: -d[1])[:10]
    if slowest:
        print("slowest tests:\n" + "\n".join("  %6.2fs %s" % (dt, full) for full, dt in slowest))
    if total["failures"]:
        print("failed: " + ", ".join(total["failures"]))
    print("wall time %.1fs" % (time.monotonic() - t_start))
    line = "%d passed, %d failed" % (total["passed"], total["failed"])
    if total["skipped"]:
        line += ", %d skipped" % total["skipped"]
    print(line)
    return 1 if total["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
