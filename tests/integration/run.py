#!/usr/bin/env python3
"""
run.py - runs rlockd's integration tests (tests/integration/test_*.py).

    RLOCKD_BIN=build/rlockd python3 tests/integration/run.py [PATTERN...]

A PATTERN selects tests whose "module.test" name contains it (or matches
it as a glob when it has * ? or [). --list prints the names only.

A test function taking a parameter `env` shares its module's redis-server
+ rlockd (configured by the module's CONFIG dict); after each such test its
clients are closed and the runner waits until rlockd reports no waiting
client, so waiter counts in INFO start from 0. A test taking no parameter
starts whatever it needs itself. Each test names the behaviour
it proves. The last line printed is exactly "N passed, N failed" plus
", N skipped" when something was skipped; the exit status is 1 if
anything failed.
"""

import fnmatch
import importlib
import inspect
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True   # no __pycache__ in the source tree

import harness  # noqa: E402


def discover():
    mods = []
    for fn in sorted(os.listdir(HERE)):
        if fn.startswith("test_") and fn.endswith(".py"):
            mod = importlib.import_module(fn[:-3])
            tests = [(n, f) for n, f in vars(mod).items()
                     if n.startswith("test_") and inspect.isfunction(f) and f.__module__ == mod.__name__]
            tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
            mods.append((mod, tests))
    return mods


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


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    listing = "--list" in argv
    mods = discover()

    if listing:
        for mod, tests in mods:
            for name, _ in tests:
                full = "%s.%s" % (mod.__name__, name)
                if selected(full, args):
                    print(full)
        return 0

    def on_signal(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)

    print("rlockd integration tests: RLOCKD_BIN=%s" % harness.rlockd_bin())
    passed = failed = skipped = 0
    failures = []
    t_start = time.monotonic()
    try:
        for mod, tests in mods:
            chosen = [(n, f) for n, f in tests if selected("%s.%s" % (mod.__name__, n), args)]
            if not chosen:
                continue
            config = getattr(mod, "CONFIG", None)
            env = None
            try:
                for name, fn in chosen:
                    full = "%s.%s" % (mod.__name__, name)
                    wants_env = "env" in inspect.signature(fn).parameters
                    t0 = time.monotonic()
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
                            detail += "\n    rlockd exit status: %s\n    rlockd log:\n%s" % (
                                status, indent(env.log_tail()))
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
                    dt = time.monotonic() - t0
                    if outcome == "PASS":
                        passed += 1
                        print("PASS %s (%.2fs)" % (full, dt))
                    elif outcome == "SKIP":
                        skipped += 1
                        print("SKIP %s  <<<<<<<<<< SKIPPED: %s" % (full, detail))
                    else:
                        failed += 1
                        failures.append(full)
                        print("FAIL %s (%.2fs)\n    %s" % (full, dt, detail.strip().replace("\n", "\n    ")))
                    sys.stdout.flush()
            finally:
                if env is not None:
                    env.close()
                    problems = harness.warnings()
                    if problems:
                        failed += 1
                        failures.append("%s.teardown" % mod.__name__)
                        print("FAIL %s.teardown (shared rlockd did not stop cleanly)\n    %s"
                              % (mod.__name__, "\n".join(problems).replace("\n", "\n    ")))
    except KeyboardInterrupt:
        print("interrupted")
        failed += 1
    finally:
        left = harness.leftovers()  # before the last-resort sweep, so leaks show
        harness.kill_everything()

    if left:
        failed += 1
        failures.append("harness.nothing_left_behind")
        print("FAIL harness.nothing_left_behind\n    " + "\n    ".join(left))
    if failures:
        print("failed: " + ", ".join(failures))
    print("wall time %.1fs" % (time.monotonic() - t_start))
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    return 1 if failed else 0


def indent(text):
    return "\n".join("      " + line for line in text.splitlines())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
