#!/usr/bin/env python3
"""
failover.py - the failover scenario of `make bench`: a real Sentinel setup (master,
one replica, three sentinels; tests/integration/topology.py) and one rlockd in
sentinel mode, 20 clients in a LOCK / HOLDCOUNT / UNLOCK loop over 4 names, and the
master killed with SIGKILL.

Reports: the time from the kill to the sentinels' +switch-master, from there to the
first LOCK granted through rlockd, the longest time no client was granted anything,
every error reply a client saw (by code), holds lost (-LOCKLOST) and holds counted
twice (HOLDCOUNT above 1 right after a LOCK). Stops what it started by pid and
removes its directory.

    bench/failover.py BUILD_DIR
"""

import collections
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.dont_write_bytecode = True

import harness  # noqa: E402
from topology import SentinelSetup  # noqa: E402

CLIENTS = 20
AFTER_SWITCH_S = 3.0


def run(workdir):
    setup = SentinelSetup(workdir).start()
    daemon = None
    try:
        # The default watchdog timeout: the test harness's 600 ms would let every held
        # lock expire while the sentinels take their seconds to fail over.
        daemon = harness.Rlockd(workdir, setup.master_port(), setup.rlockd_config(
            {"log": {"level": "warn"}, "lock": {"watchdog_timeout_ms": 30000}}))
        daemon.start()
        return measure(setup, daemon)
    finally:
        if daemon is not None:
            daemon.stop()
        setup.close()


def measure(setup, daemon):
    stop = threading.Event()
    lock = threading.Lock()
    grants = []                       # monotonic times of granted LOCKs
    errors = collections.Counter()
    twice = [0]

    def client(i):
        c = harness.RespClient(daemon.port, timeout=30.0, label="bench-%d" % i)
        try:
            c.call("CLIENTID", "bench-%d" % i)
            name = "failover-%d" % (i % 4)
            while not stop.is_set():
                r = c.call("LOCK", name, 1)
                if harness.is_error(r):
                    with lock:
                        errors[r.code] += 1
                    continue
                now = time.monotonic()
                count = c.call("HOLDCOUNT", name, 1)
                r = c.call("UNLOCK", name, 1)
                with lock:
                    grants.append(now)
                    if isinstance(count, int) and count > 1:
                        twice[0] += 1
                    if harness.is_error(r):
                        errors[r.code] += 1
        finally:
            c.close()

    listener = setup.switch_listener()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        setup.kill_master()
        t_kill = time.monotonic()
        listener.read_reply(30.0)
        t_switch = time.monotonic()
        time.sleep(AFTER_SWITCH_S)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        listener.close()
    after = [g for g in grants if g >= t_switch]
    during = sorted(g for g in grants if g >= t_kill - 1.0)
    gap = max((b - a for a, b in zip(during, during[1:])), default=0.0)
    return {
        "kill to +switch-master": "%.2f s" % (t_switch - t_kill),
        "+switch-master to the first LOCK granted": (
            "%.0f ms" % ((after[0] - t_switch) * 1000) if after else "none"),
        "longest time without a grant": "%.2f s" % gap,
        "LOCKs granted": "%d" % len(grants),
        "client-visible errors": ", ".join("%s %d" % kv for kv in sorted(errors.items())) or "none",
        "holds lost (-LOCKLOST)": "%d" % errors.get("LOCKLOST", 0),
        "holds counted twice": "%d" % twice[0],
    }


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: bench/failover.py BUILD_DIR")
    os.environ.setdefault("RLOCKD_BIN", os.path.join(argv[1], "rlockd"))
    with harness.TempDir() as workdir:
        try:
            figures = run(workdir)
        except harness.Skip as e:
            print("failover scenario: SKIP (%s)" % e)
            return 0
    left = harness.leftovers()
    print("\nFailover: %d clients in a LOCK/HOLDCOUNT/UNLOCK loop, master SIGKILLed" % CLIENTS)
    for k, v in figures.items():
        print("  %-42s %s" % (k, v))
    if left:
        print("left behind: %s" % "; ".join(left))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
