"""[server] http_token: every HTTP path but /healthz and /readyz needs
"Authorization: Bearer <token>" (401 and WWW-Authenticate without it); a real Prometheus
scrapes /metrics with its authorization credentials, and is refused without them."""

import http.client
import json
import os
import signal
import subprocess
import urllib.request

from harness import HOST, Env, Skip, TempDir, assert_eq, free_port, wait_until, which

TOKEN = "metrics-token-0123456789abcdef"


def _env():
    return Env({"server": {"http_listen": "%s:%d" % (HOST, free_port()), "http_token": TOKEN}})


def _get(env, path, authorization=None):
    host, port = env.config["server"]["http_listen"].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5.0)
    try:
        conn.request("GET", path, headers={"Authorization": authorization} if authorization else {})
        r = conn.getresponse()
        return r.status, r.getheader("WWW-Authenticate"), r.read().decode()
    finally:
        conn.close()


def test_with_http_token_every_path_but_the_probes_needs_the_bearer_token():
    with _env() as env:
        for path in ("/metrics", "/nothing-here"):
            for auth in (None, "Bearer wrong-token", "Basic " + TOKEN, TOKEN, "Bearer " + TOKEN + "x"):
                status, challenge, _ = _get(env, path, auth)
                assert_eq(status, 401, "GET %s with Authorization %r" % (path, auth))
                assert_eq(challenge, 'Bearer realm="rlockd"', "WWW-Authenticate")
        status, _, body = _get(env, "/metrics", "Bearer " + TOKEN)
        assert_eq(status, 200, "GET /metrics with the token")
        assert "rlockd_locks_acquired" in body, "the metrics: %r" % body[:200]
        assert_eq(_get(env, "/metrics", "bearer " + TOKEN)[0], 200, "the scheme in lower case")
        assert_eq(_get(env, "/nothing-here", "Bearer " + TOKEN)[0], 404, "an unknown path with the token")
        for path in ("/healthz", "/readyz"):
            assert_eq(_get(env, path)[0], 200, "GET %s without the token" % path)


def test_a_reload_sets_and_clears_http_token():
    with Env({"server": {"http_listen": "%s:%d" % (HOST, free_port())}}) as env:
        assert_eq(_get(env, "/metrics")[0], 200, "GET /metrics without a token configured")
        for token, want in ((TOKEN, 401), ("", 200)):
            env.rlockd.rewrite_config({"server": {"http_token": token}})
            env.rlockd.signal(signal.SIGHUP)
            wait_until(lambda: _get(env, "/metrics")[0] == want, 3.0,
                       what="GET /metrics answers %d after a reload to http_token %r" % (want, token))
        assert TOKEN not in env.rlockd.log_text(), "the token is logged"


def test_without_http_token_http_stays_open():
    with Env({"server": {"http_listen": "%s:%d" % (HOST, free_port())}}) as env:
        assert_eq(_get(env, "/metrics")[0], 200, "GET /metrics without a token configured")


PROMETHEUS_CONFIG = """
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: with_token
    authorization:
      credentials: %(token)s
    static_configs:
      - targets: ["%(target)s"]
  - job_name: without_token
    static_configs:
      - targets: ["%(target)s"]
"""


def test_prometheus_scrapes_metrics_with_its_authorization_credentials():
    prometheus = which("prometheus")
    if prometheus is None:
        raise Skip("prometheus is not installed (Debian package prometheus)")
    with _env() as env, TempDir() as tmp:
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write(PROMETHEUS_CONFIG % {"token": TOKEN, "target": env.config["server"]["http_listen"]})
        web = "%s:%d" % (HOST, free_port())
        with open(os.path.join(tmp, "prometheus.log"), "w") as log:
            proc = subprocess.Popen([prometheus, "--config.file=" + config,
                                     "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                                     "--web.listen-address=" + web],
                                    stdout=log, stderr=subprocess.STDOUT)
        try:
            def scraped():
                try:
                    with urllib.request.urlopen("http://%s/api/v1/targets" % web, timeout=2) as r:
                        targets = json.load(r)["data"]["activeTargets"]
                except OSError:
                    return None
                got = {t["labels"]["job"]: t for t in targets if t["health"] != "unknown"}
                return got if len(got) == 2 else None
            wait_until(scraped, 20.0, interval=0.2, what="Prometheus scraped both jobs")
            targets = scraped()
            assert_eq(targets["with_token"]["health"], "up", "the job with the token: %r" % targets["with_token"])
            assert_eq(targets["without_token"]["health"], "down", "the job without it")
            assert "401" in targets["without_token"]["lastError"], \
                "the refusal: %r" % targets["without_token"]["lastError"]
        finally:
            proc.terminate()
            proc.wait(10)
