#!/usr/bin/env python3
"""
stress.py - hunts flaky integration tests (make test-stress).

    RLOCKD_BIN=build/rlockd STRESS_RUNS=3 python3 tests/integration/stress.py [PATTERN...]

Runs the integration suite (run.py, with the PATTERNs given) STRESS_RUNS
times (default 3), each time with the modules in a new random order and a
competing busy process on every core, as a loaded build machine has. The
busy processes are started here and stopped by pid. Each run's output is
kept in STRESS_LOGS (default build/stress/run-N.log); the failed tests of a
run are printed as it ends. At the end: every test that failed in any run,
with how many times, and the module order seeds to repeat a run. The exit
status is 1 if any test failed in any run.
"""

import collections
import os
import random
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUSY = "while True: pass"


def start_busy():
    return [subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL)
            for _ in range(os.cpu_count() or 1)]


def stop_busy(procs):
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait()


def one_run(i, patterns, logdir):
    """Runs the suite once; (failed test names, seed, closing line, seconds)."""
    seed = random.randrange(1 << 30)
    env = dict(os.environ, RLOCKD_TEST_ORDER="random:%d" % seed)
    log = os.path.join(logdir, "run-%d.log" % i)
    t0 = time.monotonic()
    with open(log, "w") as f:
        r = subprocess.run([sys.executable, os.path.join(HERE, "run.py")] + patterns, env=env,
                           stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    dt = time.monotonic() - t0
    with open(log) as f:
        text = f.read()
    failed = re.findall(r"^FAIL (\S+?):? ", text, re.M)
    lines = text.strip().splitlines()
    last = lines[-1] if lines else "(no output)"
    if r.returncode != 0 and not failed:
        failed = ["(run %d exited %d: see %s)" % (i, r.returncode, log)]
    return failed, seed, last, dt


def main(argv):
    runs = int(os.environ.get("STRESS_RUNS", "3"))
    logdir = os.environ.get("STRESS_LOGS") or os.path.join(
        os.environ.get("RLOCKD_BUILD") or os.path.join(ROOT, "build"), "stress")
    os.makedirs(logdir, exist_ok=True)
    counts = collections.Counter()
    seeds = []

    def on_signal(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    busy = start_busy()
    print("test-stress: %d runs, %d busy processes (pids %s), logs in %s"
          % (runs, len(busy), " ".join(str(p.pid) for p in busy), logdir))
    sys.stdout.flush()
    try:
        for i in range(1, runs + 1):
            failed, seed, last, dt = one_run(i, argv[1:], logdir)
            seeds.append(seed)
            counts.update(set(failed))
            print("run %d (RLOCKD_TEST_ORDER=random:%d): %s in %.0fs%s"
                  % (i, seed, last, dt, "".join("\n    FAIL " + f for f in failed)))
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("test-stress: interrupted")
        return 1
    finally:
        stop_busy(busy)
    if not counts:
        print("test-stress: clean, no test failed in %d runs" % runs)
        return 0
    print("test-stress: tests that failed (times failed of %d runs):" % runs)
    for name, k in sorted(counts.items(), key=lambda c: (-c[1], c[0])):
        print("  %d  %s" % (k, name))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
