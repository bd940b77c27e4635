"""TLS to Redis ([redis] tls): a TLS-only Redis, Sentinel and Cluster over TLS, client
certificates, and the certificates rlockd must refuse.

Every Redis here listens with TLS only (--port 0 --tls-port P); the certificates are
made once per module by certs.py. A refusal must be logged once per link with its
reason, shown by HEALTH as "redis tls: <why>", counted by reason, and retried with the
backoff of a refused connection, never served.
"""

import contextlib
import re
import subprocess
import threading
import time

import certs
from harness import (HOST, Env, RedisServer, RespClient, Rlockd, TempDir, assert_eq, assert_error,
                     daemon_ms, is_error, rlockd_bin, wait_info, wait_until, write_config)
from test_cluster import Setup as ClusterTest
from test_cluster import _exclude_and_wake
from test_sentinel import Setup as SentinelTest
from topology import free_cluster_port

@contextlib.contextmanager
def _certs():
    """A test's certificates, in a folder of their own removed after it."""
    with TempDir() as folder:
        yield certs.make(folder)


def _config(c, **extra):
    """[redis] for TLS trusting the test CA; reconnects kept short for the refusal tests; a
    connect timeout that holds the TLS handshake of a slow daemon."""
    redis = {"tls": "yes", "tls_ca_file": c.ca, "reconnect_max_ms": 100,
             "connect_timeout_ms": daemon_ms(500)}
    redis.update(extra)
    return {"redis": redis}


def test_a_tls_only_redis_serves_locks_writes_the_redisson_hash_and_wakes_waiters():
    with _certs() as c, Env(_config(c), redis_tls=certs.RedisTls(c)) as env:
        a, b = env.client(), env.client()
        cid = a.call("CLIENTID")
        n = env.name("tls")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK through a TLS-only Redis")
        assert_eq(env.redis_hash(n), {"%s:1" % cid: "1"}, "the Redisson hash in Redis")
        b.send("LOCK", n, 2)
        wait_info(env.rlockd, "blocked_clients", "1", what="the waiter queued")
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
        assert_eq(b.read_reply(3.0), "OK", "the waiter woken by the unlock message over TLS")
        assert_eq(a.call("HEALTH"), "OK", "HEALTH")
        info = env.rlockd.info()
        assert int(info["redis_tls_handshakes"]) >= 5, "pool and subscriber handshakes: %r" % info
        assert int(info["tls_cert_expiry_seconds_redis_ca"]) > 3000 * 86400, \
            "the CA's expiry (3650 days): %r" % info.get("tls_cert_expiry_seconds_redis_ca")


def test_a_redis_requiring_client_certificates_refuses_rlockd_without_one_and_serves_it_with_one():
    with _certs() as c, Env(_config(c), redis_tls=certs.RedisTls(c, auth_clients="yes"),
                            wait_redis=False) as env:
        env.rlockd.wait_log(r"redis pool\[0\]: tls: .*certificate required", timeout=5.0)
        h = env.client()
        wait_until(lambda: "redis tls:" in str(h.call("HEALTH")), 5.0, what="HEALTH to say why")
        assert_error(h.call("HEALTH"), "UNAVAILABLE", contains="certificate required")
        assert int(env.rlockd.info()["redis_tls_failures_other"]) > 0, "counted as another failure"
        with_cert = env.second_rlockd(_config(c, tls_cert_file=c.client_cert,
                                              tls_key_file=c.client_key))
        a = env.client_of(with_cert)
        cid = a.call("CLIENTID")
        n = env.name("mtls")
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK through rlockd with a client certificate")
        assert_eq(env.redis_hash(n), {"%s:1" % cid: "1"}, "the Redisson hash")
        assert int(with_cert.info()["tls_cert_expiry_seconds_redis_cert"]) > 0, "client cert expiry"


def _refused(server, reason, counter):
    with _certs() as c, Env(_config(c, retry_timeout_ms=0), redis_tls=certs.RedisTls(c, server=server),
                            wait_redis=False) as env:
        env.rlockd.wait_log(r"redis pool\[0\]: tls: %s" % reason, timeout=5.0)
        h = env.client()
        wait_until(lambda: reason in str(h.call("HEALTH")), 5.0, what="HEALTH to say %s" % reason)
        assert_error(h.call("HEALTH"), "UNAVAILABLE", contains="redis tls: " + reason)
        assert_error(h.call("LOCK", env.name("never"), 1), "UNAVAILABLE", what="LOCK while refused")
        # Retried with backoff (100 ms at most here), logged once per link all the same.
        failures = env.info_int(counter)
        wait_until(lambda: env.info_int(counter) >= failures + 10, 10.0, what="more refusals")
        lines = re.findall(r"redis pool\[0\]: tls: ", env.rlockd.log_text())
        assert_eq(len(lines), 1, "pool[0]'s refusal lines in the log")
        assert_eq(env.redis("DBSIZE"), 0, "keys written to a Redis that did not verify")


def test_a_redis_certificate_from_an_unknown_ca_is_refused_logged_and_shown_in_health():
    _refused("other", "unable to get local issuer certificate", "redis_tls_failures_unknown_ca")


def test_an_expired_redis_certificate_is_refused_logged_and_shown_in_health():
    _refused("expired", "certificate has expired", "redis_tls_failures_expired")


def test_a_redis_certificate_for_another_name_is_refused_logged_and_shown_in_health():
    _refused("wrong_name", "IP address mismatch", "redis_tls_failures_name_mismatch")


def test_tls_server_name_is_the_name_checked_and_tls_verify_no_checks_nothing_but_warns():
    with _certs() as c:
        with Env(_config(c, tls_server_name="elsewhere.invalid"),
                 redis_tls=certs.RedisTls(c, server="wrong_name")) as env:
            assert_eq(env.client().call("LOCK", env.name("sni"), 1), "OK", "LOCK, the name as configured")
        with Env(_config(c, tls_verify="no"), redis_tls=certs.RedisTls(c, server="other")) as env:
            env.rlockd.wait_log(r"WARN redis tls: tls_verify = no")
            assert_eq(env.client().call("LOCK", env.name("noverify"), 1), "OK", "LOCK, verification off")


def test_clients_in_a_lock_loop_ride_through_a_redis_restart_over_tls():
    with _certs() as c, Env(_config(c, reconnect_max_ms=1000), redis_tls=certs.RedisTls(c)) as env:
        names = [env.name("loop") for _ in range(2)]
        stop = threading.Event()
        done, errors, failures = [0] * 6, [], []

        def worker(i):
            cl = RespClient(env.port, timeout=10.0, label="loop-%d" % i)
            try:
                while not stop.is_set():
                    for cmd in (("LOCK", names[i % 2], 1), ("UNLOCK", names[i % 2], 1)):
                        r = cl.call(*cmd)
                        if is_error(r) and r.code != "LOCKLOST":
                            errors.append(r)
                    done[i] += 1
            except BaseException as e:  # reported by the test thread
                failures.append(repr(e))
            finally:
                cl.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: min(done) > 0, 5.0, what="every client to loop")
            handshakes = env.info_int("redis_tls_handshakes")
            env.redis_server.stop()
            env.redis_server.start()
            before = list(done)
            wait_until(lambda: all(d > b for d, b in zip(done, before)), 10.0,
                       what="every client to make progress after the restart")
            assert env.info_int("redis_tls_handshakes") >= handshakes + 5, "handshakes again"
        finally:
            stop.set()
            for t in threads:
                t.join(15)
        assert not failures, failures
        assert not errors, "client-visible errors: %s" % errors


def test_sentinel_failover_over_tls_moves_rlockd_to_the_new_master():
    with _certs() as c, SentinelTest(_config(c), tls=certs.RedisTls(c)) as s:
        holder = s.client("holder")
        assert_eq(holder.call("LOCK", "before", 1), "OK", "LOCK before the failover")
        new = s.sentinels.failover()
        wait_info(s.rlockd, "redis_master", "%s:%d" % (HOST, new), timeout=10.0)
        fresh = s.client("fresh")
        assert_eq(fresh.call("LOCK", "after", 1), "OK", "LOCK after the failover")
        assert_eq(s.master().call("HGETALL", "after"), ["fresh:1", "1"], "the hash on the new master")
        assert_eq(s.info()["redis_connected"], "1", "every link (sentinels too) ready over TLS")


def test_a_cluster_with_tls_cluster_yes_routes_locks_and_wakes_with_sharded_pubsub():
    with _certs() as c, ClusterTest(dict(_config(c), lock={"watchdog_timeout_ms": 30000}),
                                    tls=certs.RedisTls(c)) as s:
        # With port 0, CLUSTER NODES gives each node's TLS port as its address.
        nodes = s.cluster.ask("CLUSTER", "NODES")
        ports = {int(re.match(r"[^:]+:(\d+)", line.split()[1]).group(1))
                 for line in nodes.splitlines() if line}
        assert_eq(ports, set(s.cluster.nodes), "the ports CLUSTER NODES names")
        other = s.second()
        assert_eq(other.info()["redis_pubsub"], "sharded", "pubsub = auto on Redis 7")
        _exclude_and_wake(s, other)


def test_rlockd_t_loads_the_tls_files_and_names_the_one_it_cannot_use():
    with _certs() as c:
        path = c.path("rlockd.ini")
        good = {"redis": {"tls": "yes", "tls_ca_file": c.ca, "tls_cert_file": c.client_cert,
                          "tls_key_file": c.client_key}}
        for redis, want in ((good["redis"], None),
                            (dict(good["redis"], tls_ca_file=c.path("missing.crt")), "missing.crt"),
                            (dict(good["redis"], tls_key_file=c.server_key), "tls_key_file"),
                            (dict(good["redis"], tls_key_file=""), "go together")):
            write_config(path, {"redis": redis})
            r = subprocess.run([rlockd_bin(), "-t", "-c", path], capture_output=True, text=True,
                               timeout=5.0, stdin=subprocess.DEVNULL)
            if want is None:
                assert r.returncode == 0, "rlockd -t with good files: %d %s" % (r.returncode, r.stderr)
            else:
                assert r.returncode != 0 and want in r.stderr, \
                    "rlockd -t should name %r: %d %r" % (want, r.returncode, r.stderr)


def test_a_cluster_node_with_a_plain_and_a_tls_port_is_mapped_by_its_tls_port():
    """With both ports and tls-cluster yes, Redis 7 names in CLUSTER NODES the port of
    the connection asking: rlockd, asking over TLS, must use the TLS port."""
    with _certs() as c, TempDir() as d:
        tls_port = free_cluster_port()
        node = RedisServer(d, port=free_cluster_port(),
                           args=["--tls-port", tls_port, "--cluster-enabled", "yes"]
                           + certs.RedisTls(c).server_args())
        node.start()
        daemon = None
        try:
            plain = node.client()
            assert_eq(plain.call("CLUSTER", "ADDSLOTSRANGE", 0, 16383), "OK", "every slot to the node")
            wait_until(lambda: "cluster_state:ok" in plain.call("CLUSTER", "INFO"), 10.0,
                       what="the one-node cluster to be ok")
            plain.close()
            daemon = Rlockd(d, tls_port, dict(_config(c), redis={"mode": "cluster", "tls": "yes",
                                                                  "tls_ca_file": c.ca,
                                                                  "nodes": "%s:%d" % (HOST, tls_port)}))
            daemon.start()
            assert_eq(daemon.info()["redis_master"], "%s:%d slots=16384" % (HOST, tls_port),
                      "the master rlockd mapped")
            cl = RespClient(daemon.port, label="mixed")
            try:
                assert_eq(cl.call("LOCK", "mixed", 1), "OK", "LOCK through the node's TLS port")
            finally:
                cl.close()
        finally:
            if daemon is not None:
                daemon.stop()
            node.stop()
