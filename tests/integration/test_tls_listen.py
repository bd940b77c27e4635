"""TLS on the client listener ([server] tls_listen): redis-cli --tls, a
plaintext client and a stalled handshake on the TLS port, client
certificates (tls_client_certs, [user] tls_subject), certificate rotation
by SIGHUP, rlockd -t on the certificate files, and rlock over TLS.
Certificates come from certs.py."""

import os
import shutil
import signal
import socket
import ssl
import subprocess

import certs
from harness import (Env, HOST, RespClient, TempDir, assert_eq, assert_error, daemon_ms, free_port,
                     redis_cli, rlock_bin, rlockd_bin, wait_info)


class TlsEnv(Env):
    """An Env whose rlockd also listens with TLS, on tls_port, with the
    certificates of c (a certs.make set)."""

    def __init__(self, c, server=None, users=None, **kw):
        self.certs = c
        self.tls_port = free_port()
        config = {"server": dict({"tls_listen": "%s:%d" % (HOST, self.tls_port),
                                  "tls_cert_file": c.server_cert,
                                  "tls_key_file": c.server_key},
                                 **(server or {}))}
        config.update(users or {})
        super().__init__(config, **kw)

    def tls_client(self, cert=None, key=None, label="tls-client", timeout=2.0):
        """A RespClient over TLS, trusting certs.ca, with a client certificate if given."""
        ctx = ssl.create_default_context(cafile=self.certs.ca)
        if cert:
            ctx.load_cert_chain(cert, key)
        c = RespClient(self.tls_port, timeout=timeout, label=label)
        try:
            c.sock = ctx.wrap_socket(c.sock, server_hostname=HOST)
        except BaseException:
            c.close()
            raise
        self.clients.append(c)
        return c

    def served_cert(self):
        """The certificate the TLS port serves now, as python's ssl module decodes it."""
        ctx = ssl.create_default_context(cafile=self.certs.ca)
        with socket.create_connection((HOST, self.tls_port), timeout=2.0) as s:
            with ctx.wrap_socket(s, server_hostname=HOST) as t:
                return t.getpeercert()


def common_name(cert):
    return dict(x[0] for x in cert["subject"])["commonName"]


def tls_info(env):
    return {k: int(v) for k, v in env.info().items() if k.startswith("tls_")
            and v.lstrip("-").isdigit()}


def redis_cli_tls(env, c, *args):
    exe = redis_cli()
    argv = [exe, "-h", HOST, "-p", str(env.tls_port), "--tls", "--cacert", c.ca, "--no-raw"]
    r = subprocess.run(argv + [str(a) for a in args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, "redis-cli --tls %r failed (%d): %s" % (args, r.returncode, r.stderr)
    return r.stdout.strip()


# ---------------------------------------------------------------- serving TLS


def test_redis_cli_tls_ping_and_lock():
    with TempDir() as d:
        c = certs.make(d)
        with TlsEnv(c) as env:
            assert_eq(redis_cli_tls(env, c, "PING"), "PONG", "PING over TLS")
            name = env.name()
            t = env.tls_client()
            assert_eq(t.call("LOCK", name, 1), "OK", "LOCK over TLS")
            assert_eq(redis_cli_tls(env, c, "ISLOCKED", name), "(integer) 1",
                      "redis-cli --tls ISLOCKED")
            assert_eq(redis_cli_tls(env, c, "TRYLOCK", name, 1), "(integer) 0",
                      "redis-cli --tls TRYLOCK of a held lock")
            info = tls_info(env)
            assert info["tls_handshakes"] >= 2, info
            assert_eq(info["tls_handshake_failures"], 0, "no handshake failed")
            # the certificate's notAfter, as the metrics gauge and INFO give it
            served = env.served_cert()
            want = int(ssl.cert_time_to_seconds(served["notAfter"]))
            assert_eq(info["tls_cert_not_after"], want, "tls_cert_not_after")
            assert abs(info["tls_cert_expires_in_s"] - (want - int(__import__("time").time()))) < 60
            # the plain port still serves plain clients
            assert_eq(env.client().call("PING"), "PONG", "plain PING")


def test_plaintext_client_on_tls_port_is_closed_and_harms_nobody():
    with TempDir() as d:
        c = certs.make(d)
        with TlsEnv(c) as env:
            good = env.tls_client()
            assert_eq(good.call("PING"), "PONG", "TLS client before")
            plain = RespClient(env.tls_port, label="plaintext-on-tls")
            env.clients.append(plain)
            plain.send("PING")
            assert plain.wait_closed(), "the plaintext client is closed"
            wait_info(env, "tls_handshake_failures", 1)
            assert_eq(good.call("PING"), "PONG", "TLS client after")
            assert_eq(env.tls_client().call("PING"), "PONG", "a new TLS client after")
            assert_eq(env.client().call("PING"), "PONG", "plain client after")


def test_stalled_handshake_is_closed_by_request_timeout():
    with TempDir() as d:
        c = certs.make(d)
        # short, yet long enough for the handshake of the client that checks others are unaffected
        timeout_ms = daemon_ms(300)
        with TlsEnv(c, server={"request_timeout_ms": timeout_ms}) as env:
            stalled = RespClient(env.tls_port, label="stalled", timeout=5.0)
            env.clients.append(stalled)
            stalled.send_raw(b"\x16\x03\x01")  # the start of a ClientHello, no more
            assert stalled.wait_closed(timeout=timeout_ms / 1000.0 + 5.0), "the stalled handshake is closed"
            info = tls_info(env)
            assert_eq(info["tls_handshake_timeouts"], 1, "tls_handshake_timeouts")
            assert_eq(env.info_int("request_timeouts"), 0, "not counted as a request timeout")
            assert_eq(env.tls_client().call("PING"), "PONG", "others unaffected")


# ---------------------------------------------------------------- client certificates


def test_required_client_certificate():
    with TempDir() as d:
        c = certs.make(d)
        server = {"tls_ca_file": c.ca, "tls_client_certs": "required"}
        with TlsEnv(c, server=server) as env:
            try:
                t = env.tls_client(label="no-cert")
                # TLS 1.3: the server's refusal comes after the client's Finished
                t.send("PING")
                t.wait_closed()
            except (ssl.SSLError, ConnectionError):
                pass
            wait_info(env, "tls_client_cert_refusals", 1)
            ok = env.tls_client(c.client_cert, c.client_key, label="with-cert")
            assert_eq(ok.call("PING"), "PONG", "PING with a client certificate")
            # a certificate from a CA the listener does not trust
            try:
                t = env.tls_client(c.other_cert, c.other_key, label="other-ca")
                t.send("PING")
                t.wait_closed()
            except (ssl.SSLError, ConnectionError):
                pass
            wait_info(env, "tls_client_cert_refusals", 2)
            assert_eq(ok.call("PING"), "PONG", "the good client still served")


def test_tls_subject_maps_to_a_restricted_user():
    with TempDir() as d:
        c = certs.make(d)
        server = {"tls_ca_file": c.ca, "tls_client_certs": "optional",
                  "auth_token": "t0ken"}
        users = {"user worker": {"tls_subject": "rlockd-test-client", "commands": "+@lock",
                                 "names": "orders:*"}}
        with TlsEnv(c, server=server, users=users) as env:
            w = env.tls_client(c.client_cert, c.client_key, label="worker-by-cert")
            assert_eq(w.call("LOCK", "orders:1", 1), "OK", "LOCK orders:1 without AUTH")
            assert_error(w.call("LOCK", "billing:1", 1), "NOPERM",
                         "no permissions to access the 'billing:1' lock", what="LOCK billing:1")
            assert_error(w.call("INFO"), "NOPERM", what="INFO as worker")
            # a certificate whose CN no user has: AUTH as usual
            other = env.tls_client(c.client2_cert, c.client2_key, label="other-cn")
            assert_error(other.call("LOCK", "orders:2", 1), "NOAUTH", what="unmapped CN")
            assert_eq(other.call("AUTH", "t0ken"), "OK", "AUTH on an unmapped CN")
            # no certificate at all (optional): AUTH as usual
            anon = env.tls_client(label="no-cert")
            assert_error(anon.call("LOCK", "orders:3", 1), "NOAUTH", what="no certificate")
            # AUTH cannot log in as a user that has only a tls_subject
            assert_error(anon.call("AUTH", "worker", ""), "ERR", what="AUTH worker")


# ---------------------------------------------------------------- rotation


def test_sighup_rotates_the_certificate_and_keeps_connections():
    with TempDir() as d:
        c = certs.make(d)
        live_cert, live_key = os.path.join(d, "live.crt"), os.path.join(d, "live.key")
        shutil.copy(c.server_cert, live_cert)
        shutil.copy(c.server_key, live_key)
        with TlsEnv(c, server={"tls_cert_file": live_cert, "tls_key_file": live_key}) as env:
            before = env.served_cert()
            kept = env.tls_client(label="kept")
            name = env.name()
            assert_eq(kept.call("LOCK", name, 1), "OK", "LOCK before rotation")
            # a new certificate for the same names, signed by the same CA
            new = certs.Certs(os.path.join(d, "new"))
            os.mkdir(new.folder)
            shutil.copy(c.path("ca.crt"), new.path("ca.crt"))
            shutil.copy(c.path("ca.key"), new.path("ca.key"))
            certs._signed(new, "server", "ca", "rlockd-test-rotated", certs.LOOPBACK)
            shutil.copy(new.path("server.crt"), live_cert)
            shutil.copy(new.path("server.key"), live_key)
            env.rlockd.signal(signal.SIGHUP)
            wait_info(env, "config_reloads", 1)
            after = env.served_cert()
            assert_eq(common_name(after), "rlockd-test-rotated", "CN served after SIGHUP")
            assert before["serialNumber"] != after["serialNumber"], "a new serial"
            assert_eq(kept.call("ISHELD", name, 1), 1, "the connection from before holds its lock")
            # a bad new file keeps the rotated certificate and says why
            with open(live_key, "w") as f:
                f.write("not a key\n")
            env.rlockd.signal(signal.SIGHUP)
            wait_info(env, "config_reload_failures", 1)
            env.rlockd.wait_log(r"reload failed, keeping the running configuration: .*tls_key_file")
            assert_eq(common_name(env.served_cert()), "rlockd-test-rotated", "kept after a bad file")
            assert_eq(kept.call("PING"), "PONG", "the old connection after a bad reload")


# ---------------------------------------------------------------- rlockd -t


def test_check_mode_loads_the_certificate_files():
    with TempDir() as d:
        c = certs.make(d)
        port = free_port()

        def check(**server):
            conf = os.path.join(d, "t.ini")
            with open(conf, "w") as f:
                f.write("[server]\nlisten = %s:%d\ntls_listen = %s:%d\n" % (HOST, free_port(), HOST, port))
                for k, v in server.items():
                    f.write("%s = %s\n" % (k, v))
            return subprocess.run([rlockd_bin(), "-t", "-c", conf], capture_output=True, text=True)

        r = check(tls_cert_file=c.server_cert, tls_key_file=c.server_key)
        assert_eq(r.returncode, 0, "rlockd -t with good files: " + r.stderr)
        r = check(tls_cert_file=c.server_cert, tls_key_file=c.client_key)
        assert r.returncode == 1 and "tls_key_file" in r.stderr, r.stderr
        r = check(tls_cert_file=os.path.join(d, "missing.crt"), tls_key_file=c.server_key)
        assert r.returncode == 1 and "tls_cert_file" in r.stderr, r.stderr
        r = check(tls_cert_file=c.server_cert)
        assert r.returncode == 1 and "needs tls_cert_file and tls_key_file" in r.stderr, r.stderr
        r = check(tls_cert_file=c.server_cert, tls_key_file=c.server_key, tls_client_certs="required")
        assert r.returncode == 1 and "needs tls_ca_file" in r.stderr, r.stderr


# ---------------------------------------------------------------- rlock and librlock


def run_rlock(env, *args, extra_env=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("RLOCK_"):
            del e[k]
    e.update(extra_env or {})
    argv = [rlock_bin(), "-S", "%s:%d" % (HOST, env.tls_port)] + [str(a) for a in args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20, env=e)


def test_rlock_over_tls_verifies_the_server_and_sends_a_client_certificate():
    with TempDir() as d:
        c = certs.make(d)
        server = {"tls_ca_file": c.ca, "tls_client_certs": "required"}
        with TlsEnv(c, server=server) as env:
            mine = ["--cert", c.client_cert, "--key", c.client_key]
            name = env.name()
            r = run_rlock(env, "--tls", "--cacert", c.ca, *mine, name, "--", "sh", "-c",
                          "echo held:$RLOCK_NAME")
            assert_eq((r.returncode, r.stdout.strip()), (0, "held:" + name), "rlock --tls: " + r.stderr)
            # the same from the RLOCK_TLS* variables, the name checked given by SNI
            r = run_rlock(env, "status", name, extra_env={
                "RLOCK_TLS": "1", "RLOCK_TLS_CACERT": c.ca, "RLOCK_TLS_CERT": c.client_cert,
                "RLOCK_TLS_KEY": c.client_key, "RLOCK_TLS_SNI": "localhost"})
            assert_eq((r.returncode, r.stdout.strip()), (0, "unlocked"), "RLOCK_TLS*: " + r.stderr)
            # refused: a CA that did not sign rlockd's certificate, a name it
            # does not have, no client certificate
            for args in (["--cacert", c.other_ca] + mine,
                         ["--cacert", c.ca, "--sni", "elsewhere.invalid"] + mine,
                         ["--cacert", c.ca]):
                r = run_rlock(env, "--tls", *args, "status", name)
                assert r.returncode == 70 and "TLS handshake with rlockd failed" in r.stderr, \
                    (args, r.returncode, r.stderr)
            r = run_rlock(env, "--cacert", c.ca, "status", name)
            assert r.returncode == 64 and "go with --tls" in r.stderr, r.stderr


# ---------------------------------------------------------------- the Python and Node packages

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

PYTHON_SCRIPT = r"""
import sys
import rlockd
port, ca, cert, key = sys.argv[1:5]
with rlockd.Client("127.0.0.1:" + port, tls=True, tls_ca_file=ca, tls_cert_file=cert,
                   tls_key_file=key) as c:
    with c.lock("orders:py"):
        print("held", c.is_locked("orders:py"))
    try:
        c.lock("billing:py").acquire()
    except rlockd.RlockError as e:
        print("refused", type(e).__name__)
"""

NODE_SCRIPT = r"""
const fs = require("fs");
// node -e: process.argv[1] is the first argument
const { Client } = require(process.argv[1]);
const [port, ca, cert, key] = process.argv.slice(2);
(async () => {
  const c = await Client.connect("127.0.0.1:" + port, {
    tls: { ca: fs.readFileSync(ca), cert: fs.readFileSync(cert), key: fs.readFileSync(key) } });
  const lock = await c.lock("orders:node");
  console.log("held", await c.isLocked("orders:node"));
  await lock.unlock();
  try { await c.lock("billing:node"); } catch (e) { console.log("refused", e.name); }
  await c.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def mapped_user_env(c):
    """A TLS rlockd that requires client certificates; certs.client's CN is
    the user worker, who may lock orders:* only (the harness AUTHs with
    the token)."""
    server = {"tls_ca_file": c.ca, "tls_client_certs": "required", "auth_token": "t0ken"}
    users = {"user worker": {"tls_subject": "rlockd-test-client", "commands": "+@lock",
                             "names": "orders:*"}}
    return TlsEnv(c, server=server, users=users)


def test_python_package_over_tls_as_the_certificate_user():
    from harness import system_python
    python = system_python(("redis", "python3-redis"))
    with TempDir() as d:
        c = certs.make(d)
        with mapped_user_env(c) as env:
            r = subprocess.run([python, "-c", PYTHON_SCRIPT, str(env.tls_port), c.ca,
                                c.client_cert, c.client_key],
                               env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python")),
                               capture_output=True, text=True, timeout=30)
            assert_eq((r.returncode, r.stdout.split("\n")[:2]), (0, ["held True", "refused NoPermission"]),
                      "python over TLS: " + r.stderr[-1500:])


def test_node_package_over_tls_as_the_certificate_user():
    from harness import node_with
    node, node_env = node_with("ioredis")
    with TempDir() as d:
        c = certs.make(d)
        with mapped_user_env(c) as env:
            r = subprocess.run([node, "-e", NODE_SCRIPT, os.path.join(ROOT, "clients", "node"),
                                str(env.tls_port), c.ca, c.client_cert, c.client_key],
                               env=node_env, capture_output=True, text=True, timeout=30)
            assert_eq((r.returncode, r.stdout.split("\n")[:2]), (0, ["held true", "refused NoPermission"]),
                      "node over TLS: " + r.stderr[-1500:])


def test_handshake_flood_stays_under_the_per_peer_limit_and_is_counted_in_buffers():
    with TempDir() as d:
        c = certs.make(d)
        # the harness's admin connection is one of 127.0.0.1's four
        with TlsEnv(c, server={"max_clients_per_peer": 4}) as env:
            before = env.info_int("client_buffers_bytes")
            pending = [RespClient(env.tls_port, label="no-handshake-%d" % i) for i in range(3)]
            env.clients.extend(pending)
            wait_info(env, "connected_clients", 4)
            held = env.info_int("client_buffers_bytes") - before
            assert held >= 3 * 40960, "3 pending handshakes hold %d bytes in INFO" % held
            extra = RespClient(env.tls_port, label="over-the-limit")
            env.clients.append(extra)
            assert extra.wait_closed(), "a 4th connection from the peer is closed"
            assert_eq(env.info_int("rejected_connections"), 1, "rejected_connections")
            for p in pending:
                p.close()
            wait_info(env, "connected_clients", 1)
            assert_eq(env.tls_client().call("PING"), "PONG", "TLS served after the flood")
