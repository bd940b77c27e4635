#!/usr/bin/env python3
"""
cluster.py - the Redis Cluster scenarios of `make bench`: a real cluster of three
masters and three replicas (tests/integration/topology.py) and one rlockd in cluster
mode.

1. Throughput: CLIENTS threads, each taking and releasing locks of its own names, for
   DURATION_S through rlockd, and the same load sent straight to the cluster by a
   slot-aware client in the same generator (Redisson's acquire and release scripts,
   EVALSHA, on the master of each name's slot). Pairs/s, p50 and p99 of a pair, and
   the rlockd/direct ratios. Both sides run in this one Python process, so the
   absolute figures are the generator's; the ratio is the figure.
2. Resharding: 20 clients in a LOCK/UNLOCK loop while 4 slots holding their names
   move to another master: client-visible errors, the longest time without a grant,
   MOVED and ASK followed.
3. Failover: the same loop on names of one master, which is SIGKILLed: the time the
   cluster takes to promote its replica, the longest time no client was granted
   anything, errors, holds kept and lost.

Stops what it started by pid and removes its directory.

    bench/cluster.py BUILD_DIR
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
from topology import ClusterSetup  # noqa: E402

CLIENTS = 16
DURATION_S = 5.0
LOOP_CLIENTS = 20
LEASE_MS = 30000


def crc16(data):
    """CRC16/XMODEM, as Redis Cluster hashes keys."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def keyslot(name):
    key = name.encode()
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % 16384


class Direct:
    """A slot-aware client of one thread: a connection per master, Redisson's scripts."""

    def __init__(self, cluster, shas):
        self.shas = shas
        rows = cluster.slots()
        self.owner = [None] * 16384
        self.conns = {}
        for a, b, m, _ in rows:
            self.conns.setdefault(m, harness.RespClient(m, timeout=10.0, label="direct"))
            for s in range(a, b + 1):
                self.owner[s] = self.conns[m]

    def pair(self, name, owner):
        c = self.owner[keyslot(name)]
        r = c.call("EVALSHA", self.shas[0], 1, name, LEASE_MS, owner)
        if r is not None:
            raise AssertionError("direct acquire of %s: %r" % (name, r))
        r = c.call("EVALSHA", self.shas[1], 2, name, harness.channel_for(name), 0, LEASE_MS, owner)
        if r != 1:
            raise AssertionError("direct release of %s: %r" % (name, r))

    def close(self):
        for c in self.conns.values():
            c.close()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else 0.0


def throughput(target):
    """target(i) -> (pair(name), close()); CLIENTS threads for DURATION_S."""
    lat = [[] for _ in range(CLIENTS)]
    failures = []
    start = threading.Barrier(CLIENTS + 1)
    stop = threading.Event()

    def worker(i):
        pair, close = target(i)
        try:
            start.wait()
            k = 0
            while not stop.is_set():
                t0 = time.perf_counter()
                pair("tput-%d-%d" % (i, k % 64))
                lat[i].append(time.perf_counter() - t0)
                k += 1
        except Exception as e:  # reported below
            failures.append(repr(e))
        finally:
            close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    time.sleep(DURATION_S)
    stop.set()
    for t in threads:
        t.join(30)
    elapsed = time.monotonic() - t0
    if failures:
        raise AssertionError("throughput: %s" % failures[0])
    every = [x for li in lat for x in li]
    return len(every) / elapsed, percentile(every, 0.5), percentile(every, 0.99)


def rlockd_target(daemon):
    def target(i):
        c = harness.RespClient(daemon.port, timeout=10.0, label="tput-%d" % i)
        c.call("CLIENTID", "tput-%d" % i)

        def pair(name):
            r = c.call("LOCK", name, 1)
            if r != "OK":
                raise AssertionError("LOCK %s: %r" % (name, r))
            r = c.call("UNLOCK", name, 1)
            if r != 1:
                raise AssertionError("UNLOCK %s: %r" % (name, r))
        return pair, c.close
    return target


def direct_target(cluster):
    shas = []
    for script in (harness.ACQUIRE_SCRIPT, harness.RELEASE_SCRIPT):
        sha = None
        for m in cluster.masters():
            sha = cluster.ask_node(m, "SCRIPT", "LOAD", script)
        shas.append(sha)

    def target(i):
        d = Direct(cluster, shas)
        return (lambda name: d.pair(name, "direct-uuid:%d" % i)), d.close
    return target


class Loop:
    """LOOP_CLIENTS in a LOCK/UNLOCK loop over names; grants and errors recorded."""

    def __init__(self, daemon, names):
        self.daemon, self.names = daemon, names
        self.stop = threading.Event()
        self.guard = threading.Lock()
        self.grants = []
        self.errors = collections.Counter()
        self.threads = [threading.Thread(target=self.worker, args=(i,)) for i in range(LOOP_CLIENTS)]
        for t in self.threads:
            t.start()

    def worker(self, i):
        c = harness.RespClient(self.daemon.port, timeout=30.0, label="loop-%d" % i)
        try:
            c.call("CLIENTID", "loop-%d" % i)
            k = 0
            while not self.stop.is_set():
                name = self.names[(i + k) % len(self.names)]
                k += 1
                r = c.call("LOCK", name, 1)
                now = time.monotonic()
                with self.guard:
                    if harness.is_error(r):
                        self.errors[r.code] += 1
                        continue
                    self.grants.append(now)
                r = c.call("UNLOCK", name, 1)
                if r != 1:
                    with self.guard:
                        self.errors[r.code if harness.is_error(r) else "UNLOCK %r" % r] += 1
        except Exception as e:  # noqa: BLE001 - counted as an error
            with self.guard:
                self.errors[type(e).__name__] += 1
        finally:
            c.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def gap_after(self, t):
        g = sorted(x for x in self.grants if x >= t - 1.0)
        return max((b - a for a, b in zip(g, g[1:])), default=0.0)

    def errors_text(self):
        return ", ".join("%s %d" % kv for kv in sorted(self.errors.items())) or "none"


def resharding(cluster, daemon):
    src, dst = cluster.masters()[0], cluster.masters()[1]
    names = cluster.names_on_each_master("reshard", count=4)[src]
    slots = sorted({keyslot(n) for n in names})
    before = daemon.info()
    loop = Loop(daemon, names)
    try:
        time.sleep(1.0)
        t0 = time.monotonic()
        for slot in slots:
            cluster.move_slot(slot, dst)
        moved_in = time.monotonic() - t0
        time.sleep(1.0)
    finally:
        loop.finish()
    after = daemon.info()
    return {
        "slots moved (4 names' slots)": "%d in %.2f s" % (len(slots), moved_in),
        "longest time without a grant": "%.0f ms" % (loop.gap_after(t0) * 1000),
        "client-visible errors": loop.errors_text(),
        "MOVED / ASK followed": "%d / %d" % (
            int(after["cluster_moved"]) - int(before["cluster_moved"]),
            int(after["cluster_asks"]) - int(before["cluster_asks"])),
        "calls held back (TRYAGAIN...)": str(int(after["cluster_retries"]) - int(before["cluster_retries"])),
    }


def failover(cluster, daemon):
    victim = cluster.masters()[2]
    names = cluster.names_on_each_master("failover", count=4)[victim]
    loop = Loop(daemon, names)
    try:
        time.sleep(1.0)
        t_kill = time.monotonic()
        cluster.kill_master(victim)
        cluster.wait_failover(victim, timeout=30.0)
        t_promoted = time.monotonic()
        time.sleep(2.0)
    finally:
        loop.finish()
    after = [g for g in loop.grants if g >= t_promoted]
    info = daemon.info()
    return {
        "kill to the replica promoted (cluster)": "%.2f s" % (t_promoted - t_kill),
        "longest time without a grant": "%.2f s" % loop.gap_after(t_kill),
        "promoted to the first grant after it": (
            "%.0f ms" % ((after[0] - t_promoted) * 1000) if after else "none"),
        "client-visible errors": loop.errors_text(),
        "holds re-checked: kept / lost": "%s / %s" % (info["failover_locks_kept"], info["failover_locks_lost"]),
        "holds lost (-LOCKLOST)": str(loop.errors.get("LOCKLOST", 0)),
    }


def run(workdir):
    cluster = ClusterSetup(workdir).start()
    daemon = None
    try:
        # Replicas not waited for on either side: Redisson's default WAIT would be
        # the same cost on both, and the ratio is about the broker.
        daemon = harness.Rlockd(workdir, cluster.masters()[0], cluster.rlockd_config(
            {"log": {"level": "warn"}, "lock": {"watchdog_timeout_ms": 30000, "sync_replicas": 0}}))
        daemon.start()
        direct = throughput(direct_target(cluster))
        through = throughput(rlockd_target(daemon))
        return direct, through, resharding(cluster, daemon), failover(cluster, daemon)
    finally:
        if daemon is not None:
            daemon.stop()
        cluster.close()


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: bench/cluster.py BUILD_DIR")
    os.environ.setdefault("RLOCKD_BIN", os.path.join(argv[1], "rlockd"))
    with harness.TempDir() as workdir:
        try:
            direct, through, reshard, fo = run(workdir)
        except harness.Skip as e:
            print("cluster scenarios: SKIP (%s)" % e)
            return 0
    left = harness.leftovers()
    print("\nCluster (3 masters + 3 replicas): %d clients, own names, %.0f s each, one Python "
          "generator" % (CLIENTS, DURATION_S))
    print("  %-34s %10s %10s %10s" % ("", "pairs/s", "p50 ms", "p99 ms"))
    for label, (tput, p50, p99) in (("Redis direct (slot-aware, EVALSHA)", direct), ("through rlockd", through)):
        print("  %-34s %10.0f %10.2f %10.2f" % (label, tput, p50 * 1000, p99 * 1000))
    print("  rlockd/direct: pairs/s %.2fx, p50 %.2fx, p99 %.2fx"
          % (through[0] / direct[0], through[1] / direct[1], through[2] / direct[2]))
    print("\nCluster resharding: %d clients in a LOCK/UNLOCK loop on 4 names" % LOOP_CLIENTS)
    for k, v in reshard.items():
        print("  %-42s %s" % (k, v))
    print("\nCluster failover: %d clients in a LOCK/UNLOCK loop on 4 names of one master, "
          "which is SIGKILLed" % LOOP_CLIENTS)
    for k, v in fo.items():
        print("  %-42s %s" % (k, v))
    if left:
        print("left behind: %s" % "; ".join(left))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
