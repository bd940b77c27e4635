"""
topology.py - a real Redis Sentinel setup for tests and the failover benchmark: a
master, one replica and three sentinels (redis-server --sentinel), quorum 2,
down-after-milliseconds 1000, each on free loopback ports in a directory of its own.

Owns those processes: started by the caller's start(), stopped by close() by pid.
It never talks to a Redis or sentinel it did not start. Python 3 standard library.
"""

import os

from harness import (HOST, RedisServer, RespClient, Skip, _spawn, _stop, assert_eq, free_port,
                     wait_until, which)

MASTER_NAME = "rlockd-test"


class SentinelSetup:
    """A master, one replica and three sentinels, each in a directory of its own."""

    def __init__(self, workdir, password=None):
        """password: the sentinels' requirepass (and what they give each other)."""
        self.workdir = workdir
        self.password = password
        self.servers = []
        self.sentinels = []   # (port, process)

    def _dir(self, name):
        d = os.path.join(self.workdir, name)
        os.makedirs(d, exist_ok=True)
        return d

    def start(self):
        if not which("redis-server"):
            raise Skip("redis-server not found (install redis-server)")
        master = RedisServer(self._dir("master"))
        master.start()
        self.servers.append(master)
        replica = RedisServer(self._dir("replica"), args=("--replicaof", HOST, str(master.port)))
        replica.start()
        self.servers.append(replica)
        for i in range(3):
            port = free_port()
            d = self._dir("sentinel%d" % i)
            conf = os.path.join(d, "sentinel.conf")
            with open(conf, "w") as f:
                f.write("port %d\nbind %s\nsentinel announce-ip %s\ndir %s\n"
                        "sentinel monitor %s %s %d 2\n"
                        "sentinel down-after-milliseconds %s 1000\n"
                        "sentinel failover-timeout %s 4000\n"
                        % (port, HOST, HOST, d, MASTER_NAME, HOST, master.port, MASTER_NAME, MASTER_NAME))
                if self.password:
                    f.write("requirepass %s\nsentinel sentinel-pass %s\n" % (self.password, self.password))
            proc = _spawn([which("redis-server"), conf, "--sentinel"], os.path.join(d, "sentinel.log"), d)
            self.sentinels.append((port, proc))
        self.wait_settled(master.port)
        return self

    def sentinel(self, i=0, timeout=2.0):
        c = RespClient(self.sentinels[i][0], timeout=timeout, label="sentinel%d" % i)
        if self.password:
            assert_eq(c.call("AUTH", self.password), "OK", "AUTH to sentinel %d" % i)
        return c

    def ask(self, i, *args):
        c = self.sentinel(i)
        try:
            return c.call(*args)
        finally:
            c.close()

    def master_port(self, i=None):
        """The master as sentinel i (by default the first one running) names it."""
        if i is None:
            i = next(k for k, (_, p) in enumerate(self.sentinels) if p.poll() is None)
        return int(self.ask(i, "SENTINEL", "get-master-addr-by-name", MASTER_NAME)[1])

    def server_on(self, port):
        return next(s for s in self.servers if s.port == port)

    def wait_settled(self, master_port, timeout=20.0):
        """Every sentinel names master_port, knows a replica in sync and the other two."""
        def settled():
            for i in range(len(self.sentinels)):
                if self.sentinels[i][1].poll() is not None:
                    continue
                try:
                    if self.master_port(i) != master_port:
                        return False
                    replicas = self.ask(i, "SENTINEL", "replicas", MASTER_NAME)
                    good = [r for r in replicas
                            if dict(zip(r[0::2], r[1::2])).get("master-link-status") == "ok"
                            and "s_down" not in dict(zip(r[0::2], r[1::2])).get("flags", "")]
                    if not good or len(self.ask(i, "SENTINEL", "sentinels", MASTER_NAME)) < 2:
                        return False
                except (OSError, AssertionError, TypeError, ValueError):
                    return False
            return True
        wait_until(settled, timeout, interval=0.1, what="the sentinels to agree on master %d" % master_port)

    def failover(self):
        """SENTINEL FAILOVER; returns the new master's port once the sentinels name it."""
        old = self.master_port()
        assert_eq(self.ask(0, "SENTINEL", "FAILOVER", MASTER_NAME), "OK", "SENTINEL FAILOVER")
        wait_until(lambda: self.master_port() != old, 15.0, interval=0.05, what="the sentinels to switch")
        return self.master_port()

    def switch_listener(self, i=0):
        """A connection subscribed to +switch-master on sentinel i: read_reply on it
        returns the next switch (["message", "+switch-master", "<name> <old> <new>"])."""
        c = self.sentinel(i, timeout=20.0)
        assert_eq(c.call("SUBSCRIBE", "+switch-master")[0], "subscribe", "SUBSCRIBE +switch-master")
        return c

    def kill_master(self):
        """SIGKILL of the master the sentinels name; returns the server killed."""
        master = self.server_on(self.master_port())
        master.signal(9)
        master.proc.wait(5)
        return master

    def stop_sentinel(self, i):
        _stop(self.sentinels[i][1])

    def rlockd_config(self, extra=None):
        sections = {"redis": {"mode": "sentinel", "master_name": MASTER_NAME,
                              "sentinels": ", ".join("%s:%d" % (HOST, p) for p, _ in self.sentinels),
                              "sentinel_poll_ms": 500}}
        if self.password:
            sections["redis"]["sentinel_password"] = self.password
        for sec, kv in (extra or {}).items():
            sections.setdefault(sec, {}).update(kv)
        return sections

    def close(self):
        for _, proc in self.sentinels:
            _stop(proc)
        for s in self.servers:
            s.stop()
