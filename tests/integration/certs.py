"""
certs.py - test certificates, made by the `openssl` command in a test's
temporary folder (tests/integration/harness.py TempDir), never shipped.

    with harness.TempDir() as folder:
        c = certs.make(folder)
        ... c.ca, c.server_cert, c.server_key, c.client_cert, c.client_key ...

What a TLS test needs to tell right from wrong:
- ca: the test CA; server_cert/server_key: signed by it, for 127.0.0.1,
  ::1 and localhost (subjectAltName), CN "rlockd-test-server";
- client_cert/client_key: signed by ca, CN "rlockd-test-client" (the name
  a [user] tls_subject matches); client2: CN "rlockd-test-other";
- other_ca, other_cert/other_key: a second CA and a server certificate
  for 127.0.0.1 signed by it (unknown to a peer that trusts only ca);
- expired_cert/expired_key: signed by ca, for 127.0.0.1, valid only in
  2020;
- wrong_name_cert/wrong_name_key: signed by ca, for "elsewhere.invalid"
  only (a name mismatch when 127.0.0.1 is dialled).

Keys are EC P-256: fast to make, so a module can make its own set.
"""

import os
import ssl
import subprocess

import harness


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, "openssl %s failed: %s" % (" ".join(args), r.stderr)


class Certs:
    def __init__(self, folder):
        self.folder = folder

    def path(self, name):
        return os.path.join(self.folder, name)


def _key(c, name):
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", name + ".key", cwd=c.folder)


def _ca(c, name, cn):
    _key(c, name)
    _openssl("req", "-x509", "-new", "-key", name + ".key", "-subj", "/CN=" + cn,
             "-days", "3650", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-out", name + ".crt", cwd=c.folder)


def _signed(c, name, ca, cn, sans=None, usage="serverAuth", dates=None):
    """A certificate for cn signed by ca; dates = (start, end) as
    YYYYMMDDHHMMSSZ for one outside today (openssl ca sets them)."""
    _key(c, name)
    _openssl("req", "-new", "-key", name + ".key", "-subj", "/CN=" + cn,
             "-out", name + ".csr", cwd=c.folder)
    ext = ["basicConstraints=CA:FALSE", "extendedKeyUsage=" + usage]
    if sans:
        ext.append("subjectAltName=" + ",".join(sans))
    with open(c.path(name + ".ext"), "w") as f:
        f.write("\n".join(ext) + "\n")
    if dates is None:
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt",
                 "-CAkey", ca + ".key", "-CAcreateserial", "-days", "3650",
                 "-extfile", name + ".ext", "-out", name + ".crt", cwd=c.folder)
        return
    # x509 -req takes no start date in OpenSSL 3.0: `openssl ca` does.
    db = c.path(name + ".db")
    open(db, "w").close()
    with open(c.path(name + ".cnf"), "w") as f:
        f.write("[ca]\ndefault_ca=d\n[d]\ndatabase=%s\nnew_certs_dir=%s\n"
                "serial=%s\ndefault_md=sha256\npolicy=p\nunique_subject=no\n"
                "[p]\ncommonName=supplied\n" % (db, c.folder, c.path(name + ".serial")))
    with open(c.path(name + ".serial"), "w") as f:
        f.write("01\n")
    _openssl("ca", "-batch", "-config", name + ".cnf", "-cert", ca + ".crt",
             "-keyfile", ca + ".key", "-in", name + ".csr", "-startdate", dates[0],
             "-enddate", dates[1], "-extfile", name + ".ext", "-notext",
             "-out", name + ".crt", cwd=c.folder)


LOOPBACK = ["IP:127.0.0.1", "IP:::1", "DNS:localhost"]


def make(folder):
    """Makes every certificate above in folder; returns a Certs whose
    attributes are their paths. SKIPs loudly without the openssl command."""
    if harness.which("openssl") is None:
        raise harness.Skip("the openssl command is not installed (apt-get install openssl)")
    c = Certs(folder)
    _ca(c, "ca", "rlockd-test-ca")
    _ca(c, "other_ca", "rlockd-test-other-ca")
    _signed(c, "server", "ca", "rlockd-test-server", LOOPBACK)
    _signed(c, "client", "ca", "rlockd-test-client", usage="clientAuth")
    _signed(c, "client2", "ca", "rlockd-test-other", usage="clientAuth")
    _signed(c, "other", "other_ca", "rlockd-test-server", LOOPBACK)
    _signed(c, "expired", "ca", "rlockd-test-server", LOOPBACK,
            dates=("20200101000000Z", "20200102000000Z"))
    _signed(c, "wrong_name", "ca", "elsewhere.invalid", ["DNS:elsewhere.invalid"])
    c.ca, c.other_ca = c.path("ca.crt"), c.path("other_ca.crt")
    for name in ("server", "client", "client2", "other", "expired", "wrong_name"):
        setattr(c, name + "_cert", c.path(name + ".crt"))
        setattr(c, name + "_key", c.path(name + ".key"))
    return c


class RedisTls:
    """How a test's Redis nodes speak TLS with the certificates of c: the
    redis-server arguments (or sentinel.conf lines), and what the harness's own
    connections use (an ssl context with the client certificate, redis-cli's options)."""

    def __init__(self, c, auth_clients="no", server="server"):
        """server: which of c's certificates the nodes present ("expired", ...); the
        harness's own connections check it only when it is the good one."""
        self.certs = c
        self.auth_clients = auth_clients
        self.server = server
        self.context = ssl.create_default_context(cafile=c.ca)
        self.context.load_cert_chain(c.client_cert, c.client_key)
        if server != "server":
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE

    def server_args(self):
        c = self.certs
        return ["--tls-cert-file", getattr(c, self.server + "_cert"),
                "--tls-key-file", getattr(c, self.server + "_key"),
                "--tls-ca-cert-file", c.ca, "--tls-auth-clients", self.auth_clients,
                # What a node shows when it dials another (the cluster bus always asks).
                "--tls-client-cert-file", c.client_cert, "--tls-client-key-file", c.client_key,
                "--tls-replication", "yes", "--tls-cluster", "yes"]

    def conf_lines(self):
        a = self.server_args()
        return "".join("%s %s\n" % (a[i][2:], a[i + 1]) for i in range(0, len(a), 2))

    def cli_args(self):
        c = self.certs
        return ["--tls", "--cacert", c.ca, "--cert", c.client_cert, "--key", c.client_key]
