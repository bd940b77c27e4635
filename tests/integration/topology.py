"""
topology.py - real Redis topologies for tests and benchmarks, each node on free
loopback ports in a directory of its own:
- SentinelSetup: a master, one replica and three sentinels (redis-server --sentinel),
  quorum 2, down-after-milliseconds 1000;
- ClusterSetup: a Redis Cluster of three masters and three replicas
  (--cluster-enabled yes, joined by redis-cli --cluster create), node timeout 1000 ms.

Owns those processes: started by the caller's start(), stopped by close() by pid.
It never talks to a Redis or sentinel it did not start. Python 3 standard library.
"""

import os
import socket
import subprocess

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


def free_cluster_port():
    """A free port whose cluster bus port (+10000) is free too."""
    for _ in range(100):
        port = free_port()
        if port + 10000 > 65535:
            continue
        s = socket.socket()
        try:
            s.bind((HOST, port + 10000))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise AssertionError("no free port pair for a cluster node")


class ClusterSetup:
    """Three masters and three replicas, each in a directory of its own."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.nodes = {}   # port -> RedisServer

    def start(self):
        for tool in ("redis-server", "redis-cli"):
            if not which(tool):
                raise Skip("%s not found (install redis-server and redis-tools)" % tool)
        for i in range(6):
            d = os.path.join(self.workdir, "node%d" % i)
            os.makedirs(d)
            node = RedisServer(d, port=free_cluster_port(),
                               args=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                     "--cluster-node-timeout", "1000"))
            node.start()
            self.nodes[node.port] = node
        ports = list(self.nodes)
        out = subprocess.run([which("redis-cli"), "--cluster", "create"]
                             + ["%s:%d" % (HOST, p) for p in ports]
                             + ["--cluster-replicas", "1", "--cluster-yes"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if out.returncode != 0:
            raise AssertionError("redis-cli --cluster create failed:\n%s" % out.stdout.decode(errors="replace"))
        wait_until(self._settled, 30.0, interval=0.1, what="every cluster node to agree on 3 masters")
        return self

    def _settled(self):
        maps = set()
        for port in self.live():
            c = self.client(port)
            try:
                if "cluster_state:ok" not in c.call("CLUSTER", "INFO"):
                    return False
                maps.add(tuple(sorted((r[0], r[1], r[2][1]) for r in c.call("CLUSTER", "SLOTS"))))
                if len([r for r in c.call("CLUSTER", "SLOTS") if len(r) > 3]) < 3:
                    return False   # a replica not known yet
            finally:
                c.close()
        return len(maps) == 1 and len({m for (_, _, m) in next(iter(maps))}) == 3

    def live(self):
        return [p for p, n in self.nodes.items() if n.alive()]

    def client(self, port, timeout=5.0):
        return RespClient(port, timeout=timeout, label="node%d" % port)

    def ask(self, *args):
        c = self.client(self.live()[0])
        try:
            return c.call(*args)
        finally:
            c.close()

    def ask_node(self, port, *args):
        c = self.client(port)
        try:
            return c.call(*args)
        finally:
            c.close()

    def slots(self):
        """[(start, end, master_port, [replica_ports])] as a live master sees it."""
        masters = [p for p in self.live() if "master" in self.ask_node(p, "ROLE")[0]]
        rows = self.ask_node(masters[0], "CLUSTER", "SLOTS")
        return [(r[0], r[1], r[2][1], [x[1] for x in r[3:]]) for r in rows]

    def masters(self):
        """The master ports, by their first slot."""
        seen = []
        for _, _, m, _ in sorted(self.slots()):
            if m not in seen:
                seen.append(m)
        return seen

    def replica_of(self, master):
        return next(r[0] for (_, _, m, r) in self.slots() if m == master and r)

    def keyslot(self, name):
        return self.ask("CLUSTER", "KEYSLOT", name)

    def master_for(self, name):
        slot = self.keyslot(name)
        return next(m for (a, b, m, _) in self.slots() if a <= slot <= b)

    def names_on_each_master(self, prefix, count=1):
        """master port -> count distinct names whose slots it serves."""
        rows = self.slots()
        names = {m: [] for (_, _, m, _) in rows}
        i = 0
        while any(len(v) < count for v in names.values()):
            name = "%s%d" % (prefix, i)
            slot = self.keyslot(name)
            m = next(m for (a, b, m, _) in rows if a <= slot <= b)
            if len(names[m]) < count:
                names[m].append(name)
            i += 1
        return names

    def stop_node(self, port):
        self.nodes[port].stop()

    def kill_master(self, port):
        """SIGKILL of a master; returns its replica's port."""
        replica = self.replica_of(port)
        self.nodes[port].signal(9)
        self.nodes[port].proc.wait(5)
        return replica

    def wait_failover(self, old, timeout=20.0):
        """Once the live nodes agree old is no master: the port that took its slots."""
        ranges = [(a, b) for (a, b, m, _) in self.slots() if m == old]

        def replaced():
            try:
                rows = [self.ask_node(p, "CLUSTER", "SLOTS") for p in self.live()]
                if any(r[2][1] == old for rs in rows for r in rs):
                    return None
                if any("cluster_state:ok" not in self.ask_node(p, "CLUSTER", "INFO") for p in self.live()):
                    return None
            except (OSError, AssertionError):
                return None
            a, _ = ranges[0]
            return next(r[2][1] for r in rows[0] if r[0] <= a <= r[1])
        return wait_until(replaced, timeout, interval=0.05, what="a replica to replace master %d" % old)

    def _id(self, port):
        return self.ask_node(port, "CLUSTER", "MYID")

    def _owner(self, slot):
        return next(m for (a, b, m, _) in self.slots() if a <= slot <= b)

    def move_slot_begin(self, slot, dst):
        """IMPORTING on dst, MIGRATING on the owner: the owner answers ASK for keys it
        no longer has from here on."""
        src = self._owner(slot)
        assert_eq(self.ask_node(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", self._id(src)), "OK",
                  "SETSLOT IMPORTING")
        assert_eq(self.ask_node(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", self._id(dst)), "OK",
                  "SETSLOT MIGRATING")
        return src

    def move_slot_finish(self, slot, dst):
        """Migrates the slot's keys, then gives the slot to dst on every master."""
        src = next(p for p in self.live()
                   if "master" in self.ask_node(p, "ROLE")[0] and p != dst
                   and any(a <= slot <= b and m == p for (a, b, m, _) in self.slots()))
        c = self.client(src)
        try:
            while True:
                keys = c.call("CLUSTER", "GETKEYSINSLOT", slot, 100)
                if not keys:
                    break
                r = c.call("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *keys)
                if r != "OK" and r != "NOKEY":
                    raise AssertionError("MIGRATE slot %d: %r" % (slot, r))
        finally:
            c.close()
        dst_id = self._id(dst)
        for p in [dst, src] + [m for m in self.masters() if m not in (dst, src)]:
            assert_eq(self.ask_node(p, "CLUSTER", "SETSLOT", slot, "NODE", dst_id), "OK",
                      "SETSLOT NODE on %d" % p)

    def move_slot(self, slot, dst):
        self.move_slot_begin(slot, dst)
        self.move_slot_finish(slot, dst)

    def rlockd_config(self, extra=None):
        sections = {"redis": {"mode": "cluster",
                              "nodes": ", ".join("%s:%d" % (HOST, p) for p in self.nodes)}}
        for sec, kv in (extra or {}).items():
            sections.setdefault(sec, {}).update(kv)
        return sections

    def close(self):
        for node in self.nodes.values():
            node.stop()
