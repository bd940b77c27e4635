"""
topology.py - real Redis topologies for tests and benchmarks, each node on free
loopback ports in a directory of its own:
- SentinelSetup: a master, one replica and three sentinels (redis-server --sentinel),
  quorum 2, down-after-milliseconds 1000;
- ClusterSetup: a Redis Cluster of three masters and three replicas
  (--cluster-enabled yes, joined by redis-cli --cluster create), node timeout 1000 ms,
  replicas synced and pinged every second; slots moved by hand (MIGRATING/IMPORTING).

Owns those processes: started by the caller's start(), stopped by close() by pid.
It never talks to a Redis or sentinel it did not start. Python 3 standard library.
"""

import os
import signal
import socket
import subprocess

from harness import (HOST, RedisServer, RespClient, Skip, _spawn, _stop, assert_eq, free_port,
                     wait_until, which)

MASTER_NAME = "rlockd-test"


class SentinelSetup:
    """A master, one replica and three sentinels, each in a directory of its own."""

    def __init__(self, workdir, password=None, tls=None):
        """password: the sentinels' requirepass (and what they give each other);
        tls: a certs.RedisTls every node and sentinel speaks, and only it."""
        self.workdir = workdir
        self.password = password
        self.tls = tls
        self.servers = []
        self.sentinels = []   # (port, process)

    def _dir(self, name):
        d = os.path.join(self.workdir, name)
        os.makedirs(d, exist_ok=True)
        return d

    def start(self):
        if not which("redis-server"):
            raise Skip("redis-server not found (install redis-server)")
        master = RedisServer(self._dir("master"), tls=self.tls)
        master.start()
        self.servers.append(master)
        replica = RedisServer(self._dir("replica"), args=("--replicaof", HOST, str(master.port)),
                              tls=self.tls)
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
                        % (0 if self.tls else port, HOST, HOST, d, MASTER_NAME, HOST, master.port,
                           MASTER_NAME, MASTER_NAME))
                if self.tls:
                    f.write("tls-port %d\n%s" % (port, self.tls.conf_lines()))
                if self.password:
                    f.write("requirepass %s\nsentinel sentinel-pass %s\n" % (self.password, self.password))
            proc = _spawn([which("redis-server"), conf, "--sentinel"], os.path.join(d, "sentinel.log"), d)
            self.sentinels.append((port, proc))
        self.wait_settled(master.port)
        return self

    def sentinel(self, i=0, timeout=2.0):
        c = RespClient(self.sentinels[i][0], timeout=timeout, label="sentinel%d" % i,
                       tls=self.tls.context if self.tls else None)
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
    """A free port whose cluster bus port (+10000) is free too, both checked by binding."""
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


CLUSTER_SLOTS = 16384


class ClusterSetup:
    """Three masters and three replicas, each in a directory of its own.

    A slot map is a list of (start, end, master_port, [replica_ports]) as CLUSTER
    SLOTS gives it."""

    def __init__(self, workdir, tls=None):
        """tls: a certs.RedisTls every node speaks, and only it (tls-cluster yes)."""
        self.workdir = workdir
        self.tls = tls
        self.nodes = {}     # port -> RedisServer, in start order
        self.killed = {}    # port of a SIGKILLed master -> [(start, end)] it served

    def _dir(self, name):
        d = os.path.join(self.workdir, name)
        os.makedirs(d, exist_ok=True)
        return d

    def start(self):
        """Six nodes joined by redis-cli --cluster create; returns self once every node
        says cluster_state:ok and names the same three masters, each with a replica,
        over all 16384 slots. Stops what it started if it fails."""
        for tool in ("redis-server", "redis-cli"):
            if not which(tool):
                raise Skip("%s not found (install redis-server and redis-tools)" % tool)
        try:
            for i in range(6):
                # CLUSTER SLOTS lists a replica only once its replication offset is not 0:
                # the first full sync must not wait 5 s for more replicas, and an idle
                # master must PING its replicas (moving the offset) every 1 s, not 10 s.
                node = RedisServer(self._dir("node%d" % i), port=free_cluster_port(),
                                   args=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                         "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0",
                                         "--repl-ping-replica-period", "1"), tls=self.tls)
                self.nodes[node.port] = node   # before start(): close() stops it even if start() fails
                node.start()
            out = subprocess.run([which("redis-cli")] + (self.tls.cli_args() if self.tls else [])
                                 + ["--cluster", "create"]
                                 + ["%s:%d" % (HOST, p) for p in self.nodes]
                                 + ["--cluster-replicas", "1", "--cluster-yes"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=60)
            if out.returncode != 0:
                raise AssertionError("redis-cli --cluster create failed (exit %d):\n%s"
                                     % (out.returncode, out.stdout.decode(errors="replace")))
            wait_until(self._settled, 30.0, interval=0.05,
                       what="every cluster node to agree on 3 masters with a replica each over all slots")
        except BaseException:
            self.close()
            raise
        return self

    def _settled(self):
        maps = set()
        for port in self.live():
            try:
                if "cluster_state:ok" not in self.ask_node(port, "CLUSTER", "INFO"):
                    return False
                rows = self._rows(self.ask_node(port, "CLUSTER", "SLOTS"))
            except (OSError, AssertionError, TypeError, IndexError):
                return False
            if any(not r for (_, _, _, r) in rows):
                return False   # a replica not synced or not known yet
            maps.add(tuple(sorted((a, b, m) for (a, b, m, _) in rows)))
        if len(maps) != 1:
            return False
        rows = next(iter(maps))
        return len({m for (_, _, m) in rows}) == 3 and sum(b - a + 1 for (a, b, _) in rows) == CLUSTER_SLOTS

    @staticmethod
    def _rows(reply):
        """CLUSTER SLOTS reply -> [(start, end, master_port, [replica_ports])]."""
        if not isinstance(reply, list):
            raise AssertionError("CLUSTER SLOTS: %r" % (reply,))
        return [(r[0], r[1], r[2][1], [x[1] for x in r[3:]]) for r in reply]

    def live(self):
        """The ports of the nodes still running."""
        return [p for p, n in self.nodes.items() if n.alive()]

    def client(self, port, timeout=5.0):
        """A RespClient to the node on port."""
        return RespClient(port, timeout=timeout, label="node%d" % port,
                          tls=self.tls.context if self.tls else None)

    def ask_node(self, port, *args):
        c = self.client(port)
        try:
            return c.call(*args)
        finally:
            c.close()

    def ask(self, *args):
        """One command to the first live node."""
        return self.ask_node(self.live()[0], *args)

    def _live_masters(self):
        return [p for p in self.live() if self.ask_node(p, "ROLE")[0] == "master"]

    def slots(self):
        """The slot map as a live master sees it."""
        return self._rows(self.ask_node(self._live_masters()[0], "CLUSTER", "SLOTS"))

    def masters(self):
        """The master ports, by their first slot."""
        seen = []
        for _, _, m, _ in sorted(self.slots()):
            if m not in seen:
                seen.append(m)
        return seen

    def replica_of(self, master):
        """A replica of master, as the slot map names it."""
        for (_, _, m, r) in self.slots():
            if m == master and r:
                return r[0]
        raise AssertionError("the slot map names no replica of %d" % master)

    def keyslot(self, name):
        """CLUSTER KEYSLOT name."""
        return self.ask("CLUSTER", "KEYSLOT", name)

    def _owner(self, slot, rows=None):
        for (a, b, m, _) in rows or self.slots():
            if a <= slot <= b:
                return m
        raise AssertionError("no master serves slot %d" % slot)

    def master_for(self, name):
        """The port of the master that serves name's slot."""
        return self._owner(self.keyslot(name))

    def names_on_each_master(self, prefix, count=1):
        """master port -> count distinct names (prefix + a number) whose slots it serves."""
        rows = self.slots()
        names = {m: [] for (_, _, m, _) in rows}
        c = self.client(self.live()[0])
        try:
            i = 0
            while any(len(v) < count for v in names.values()):
                name = "%s%d" % (prefix, i)
                m = self._owner(c.call("CLUSTER", "KEYSLOT", name), rows)
                if len(names[m]) < count:
                    names[m].append(name)
                i += 1
        finally:
            c.close()
        return names

    def stop_node(self, port):
        """SIGTERM of one node (the process stays known to close())."""
        self.nodes[port].stop()

    def kill_master(self, port):
        """SIGKILL of a master; returns its replica's port."""
        rows = self.slots()
        ranges = [(a, b) for (a, b, m, _) in rows if m == port]
        if not ranges:
            raise AssertionError("%d serves no slots: not a master" % port)
        replica = self.replica_of(port)
        self.killed[port] = ranges
        self.nodes[port].signal(signal.SIGKILL)
        self.nodes[port].proc.wait(5)
        return replica

    def wait_failover(self, old_port, timeout=20.0):
        """Waits until no live node names old_port a master and every live node says
        cluster_state:ok; returns the port that took over old_port's slots."""
        ranges = self.killed.get(old_port) or [(a, b) for (a, b, m, _) in self.slots() if m == old_port]
        if not ranges:
            raise AssertionError("%d served no slots: kill_master it first" % old_port)

        def replaced():
            try:
                views = [self._rows(self.ask_node(p, "CLUSTER", "SLOTS")) for p in self.live()]
                if any(m == old_port for rows in views for (_, _, m, _) in rows):
                    return None
                if any("cluster_state:ok" not in self.ask_node(p, "CLUSTER", "INFO") for p in self.live()):
                    return None
                new = {self._owner(a, rows) for rows in views for (a, _) in ranges}
                if len(new) != 1:
                    return None
                new = new.pop()
                if self.ask_node(new, "ROLE")[0] != "master":
                    return None
                return new
            except (OSError, AssertionError, TypeError, IndexError):
                return None
        return wait_until(replaced, timeout, interval=0.05, what="a replica to replace master %d" % old_port)

    def _id(self, port):
        return self.ask_node(port, "CLUSTER", "MYID")

    def move_slot_begin(self, slot, dst_port):
        """IMPORTING on dst_port, then MIGRATING on the owner: from here on the owner
        answers ASK for the slot's keys it no longer has. Returns the owner's port."""
        src = self._owner(slot)
        if src == dst_port:
            raise AssertionError("slot %d is already on %d" % (slot, dst_port))
        assert_eq(self.ask_node(dst_port, "CLUSTER", "SETSLOT", slot, "IMPORTING", self._id(src)), "OK",
                  "SETSLOT %d IMPORTING on %d" % (slot, dst_port))
        assert_eq(self.ask_node(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", self._id(dst_port)), "OK",
                  "SETSLOT %d MIGRATING on %d" % (slot, src))
        return src

    def move_slot_finish(self, slot, dst_port):
        """MIGRATEs the slot's keys from its owner to dst_port, then SETSLOT NODE on
        dst_port, the owner and every other master."""
        src = self._owner(slot)   # still the owner while the slot is half-migrated
        if src == dst_port:
            raise AssertionError("slot %d is already on %d" % (slot, dst_port))
        c = self.client(src)
        try:
            while True:
                keys = c.call("CLUSTER", "GETKEYSINSLOT", slot, 100)
                if not isinstance(keys, list):
                    raise AssertionError("GETKEYSINSLOT %d on %d: %r" % (slot, src, keys))
                if not keys:
                    break
                r = c.call("MIGRATE", HOST, dst_port, "", 0, 5000, "KEYS", *keys)
                if r not in ("OK", "NOKEY"):
                    raise AssertionError("MIGRATE slot %d %d -> %d: %r" % (slot, src, dst_port, r))
        finally:
            c.close()
        dst_id = self._id(dst_port)
        others = [m for m in self.masters() if m not in (dst_port, src)]
        for p in [dst_port, src] + others:
            assert_eq(self.ask_node(p, "CLUSTER", "SETSLOT", slot, "NODE", dst_id), "OK",
                      "SETSLOT %d NODE on %d" % (slot, p))

    def move_slot(self, slot, dst_port):
        """Moves one slot, with its keys, to master dst_port (move_slot_begin + _finish)."""
        self.move_slot_begin(slot, dst_port)
        self.move_slot_finish(slot, dst_port)

    def rlockd_config(self, extra=None):
        sections = {"redis": {"mode": "cluster",
                              "nodes": ", ".join("%s:%d" % (HOST, p) for p in self.nodes)}}
        for sec, kv in (extra or {}).items():
            sections.setdefault(sec, {}).update(kv)
        return sections

    def close(self):
        """Stops every node by pid, SIGKILLed ones too; raises the first failure at the end."""
        first = None
        for node in self.nodes.values():
            try:
                node.stop()
            except Exception as e:   # stop the others all the same
                first = first or e
        if first is not None:
            raise first
