"""The operators' HTTP endpoint ([server] http_listen): /metrics read by Prometheus's own
text-format parser (Debian's python3-prometheus-client) with every INFO figure and the
latency histograms moving under load; /healthz; /readyz 503 with the reason while Redis
is stopped and 200 once it is back, as the HEALTH command says; bad methods and paths;
the connection limit, the request deadline and the slot kept for a probe. Also what rlockd logs while Redis is away or refuses its
password: bounded, whatever the outage's length."""

import http.client
import json
import re
import shutil
import socket
import subprocess
import time
import uuid

from harness import HOST, Env, Skip, assert_eq, free_port, is_error, parse_info, system_python, wait_until

# Debian's python3-prometheus-client: only the system interpreter sees it, so
# the parsing runs there.
PARSE = """
import json, sys
from prometheus_client.parser import text_string_to_metric_families
print(json.dumps([[f.name, f.type, [[s.name, s.labels, s.value] for s in f.samples]]
                  for f in text_string_to_metric_families(sys.stdin.read())]))
"""


class Family:
    def __init__(self, name, type_, samples):
        self.name, self.type, self.samples = name, type_, samples


def _parse(text):
    """Prometheus's own parser's families of text, by name."""
    python = system_python(("prometheus_client", "python3-prometheus-client"))
    r = subprocess.run([python, "-c", PARSE], input=text, capture_output=True, text=True)
    assert r.returncode == 0, "Prometheus's parser refused /metrics: %s" % r.stderr[-800:]
    return {name: Family(name, type_, samples) for name, type_, samples in json.loads(r.stdout)}

HISTOGRAMS = ("acquire_seconds", "wait_seconds", "handoff_seconds", "redis_rtt_seconds")


def _env(extra=None, **kwargs):
    config = {"server": {"http_listen": "%s:%d" % (HOST, free_port())},
              "redis": {"retry_timeout_ms": 300}}
    for section, values in (extra or {}).items():
        config.setdefault(section, {}).update(values)
    return Env(config, **kwargs)


def _get(env, path, method="GET"):
    host, port = env.config["server"]["http_listen"].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5.0)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        conn.close()


def _metrics(env):
    """{sample name (labels folded in): value}, and the families by name."""
    status, ctype, body = _get(env, "/metrics")
    assert_eq(status, 200, "GET /metrics status")
    assert ctype.startswith("text/plain; version=0.0.4"), "GET /metrics Content-Type: %r" % ctype
    families = _parse(body)
    samples = {}
    for f in families.values():
        for name, labels, value in f.samples:
            samples[name + "".join('{%s="%s"}' % kv for kv in sorted(labels.items()))] = value
    return families, samples


def test_metrics_parse_and_name_every_info_figure_and_histogram():
    with _env() as env:
        families, samples = _metrics(env)
        info = parse_info(env.client().call("INFO", "all"))
        figures = [k for k in info if ("rlockd_" + k) in families or
                   ("rlockd_" + re.sub(r"^total_", "", k) + "_total") in samples]
        for name in ("locks_acquired", "held_locks", "waiting_clients", "redis_connected",
                     "total_commands_processed", "locks_lost"):
            assert name in figures, "INFO's %s is not a metric" % name
        assert_eq(families["rlockd_locks_acquired"].type, "counter", "locks_acquired's type")
        assert_eq(families["rlockd_held_locks"].type, "gauge", "held_locks's type")
        assert_eq(samples["rlockd_redis_connected"], 1.0, "rlockd_redis_connected with Redis up")
        for h in HISTOGRAMS:
            f = families.get("rlockd_" + h)
            assert f is not None and f.type == "histogram", "histogram rlockd_%s missing" % h
            buckets = [s for s in f.samples if s[0].endswith("_bucket")]
            assert_eq(buckets[-1][1]["le"], "+Inf", "%s's last bucket" % h)
            counts = [s[2] for s in buckets]
            assert counts == sorted(counts), "%s's buckets are not cumulative: %r" % (h, counts)


PROCESS_METRICS = {"process_cpu_seconds_total": "counter", "process_resident_memory_bytes": "gauge",
                   "process_virtual_memory_bytes": "gauge", "process_open_fds": "gauge",
                   "process_max_fds": "gauge", "process_start_time_seconds": "gauge"}


def test_metrics_have_build_info_process_metrics_and_no_doubled_total():
    with _env() as env:
        families, samples = _metrics(env)
        version = parse_info(env.client().call("INFO", "server"))["rlockd_version"]
        assert_eq(samples.get('rlockd_build_info{version="%s"}' % version), 1.0, "rlockd_build_info")
        for name, type_ in PROCESS_METRICS.items():
            family = families.get(re.sub(r"_total$", "", name) if type_ == "counter" else name)
            assert family is not None and family.type == type_, "%s (%s) missing: %s" % (name, type_, sorted(families))
        assert_eq(samples["process_max_fds"] >= samples["process_open_fds"] > 3, True, "open and max fds")
        assert abs(samples["process_start_time_seconds"] - time.time()) < 3600, \
            "process_start_time_seconds %r is not about now" % samples["process_start_time_seconds"]
        assert samples["process_resident_memory_bytes"] > 1 << 20, "resident memory"
        doubled = [n for n in samples if "total_total" in n or re.search(r"_total_.*_total", n)]
        assert_eq(doubled, [], "metric names that say total twice")
        for name in ("rlockd_connections_received_total", "rlockd_commands_processed_total"):
            assert name in samples, "%s missing" % name


def test_promtool_check_metrics_is_clean():
    promtool = shutil.which("promtool")
    if promtool is None:
        raise Skip("promtool not installed (apt-get install prometheus); the parser test above still runs")
    with _env() as env:
        _metrics(env)
        status, _, body = _get(env, "/metrics")
        r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=30)
        assert_eq((r.returncode, r.stdout + r.stderr), (0, ""), "promtool check metrics")


def test_readyz_stays_ready_through_a_short_outage_with_readyz_grace_ms():
    with _env({"server": {"readyz_grace_ms": 3000}}) as env:
        assert_eq(_get(env, "/readyz")[::2], (200, "ready\n"), "/readyz with Redis up")
        env.redis_server.stop()
        wait_until(lambda: "riding through" in _get(env, "/readyz")[2], 5.0,
                   what="/readyz riding through the outage")
        status, _, body = _get(env, "/readyz")
        if status == 200:  # still within the grace (unless the machine paused past it)
            assert body.startswith("ready, riding through: redis unreachable for"), "/readyz: %r" % body
        wait_until(lambda: _get(env, "/readyz")[0] == 503, 10.0, what="/readyz 503 past the grace")
        body = _get(env, "/readyz")[2]
        m = re.match(r"redis unreachable for (\d+) ms", body)
        assert m and int(m.group(1)) >= 3000, "/readyz 503 before the grace ran out: %r" % body
        env.redis_server.start()
        wait_until(lambda: _get(env, "/readyz")[0] == 200, 10.0, what="/readyz 200 once Redis is back")


def test_metrics_move_under_load():
    with _env() as env:
        _, before = _metrics(env)
        a, b = env.client(), env.client()
        n = env.name("metrics")
        for _ in range(20):
            assert_eq(a.call("LOCK", n, 1), "OK", "LOCK")
            assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
        # one hand-off: b waits, a's release wakes it
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
        b.send("LOCK", n, 2)
        env.wait_waiting(1, what="b queued")
        time.sleep(0.05)
        assert_eq(a.call("UNLOCK", n, 1), 1, "a's UNLOCK")
        assert_eq(b.read_reply(3.0), "OK", "b's LOCK after the hand-off")
        _, after = _metrics(env)

        def grew(key):
            return after[key] - before.get(key, 0)

        assert_eq(grew("rlockd_locks_acquired_total"), 22, "locks_acquired_total's growth")
        assert_eq(grew("rlockd_acquire_seconds_count"), 22, "acquire_seconds observations")
        assert_eq(grew("rlockd_handoff_seconds_count"), 1, "handoff_seconds observations")
        assert_eq(grew("rlockd_wait_seconds_count"), 1, "wait_seconds observations")
        assert grew("rlockd_redis_rtt_seconds_count") >= 42, "a Redis round trip per LOCK and UNLOCK"
        assert grew("rlockd_wait_seconds_sum") >= 0.05, "b waited at least 50 ms"
        assert_eq(after["rlockd_held_locks"], 1.0, "held_locks gauge while b holds")
        # every observation falls under +Inf, and the sums are sane
        for h in HISTOGRAMS:
            assert_eq(after['rlockd_%s_bucket{le="+Inf"}' % h], after["rlockd_%s_count" % h],
                      "%s: +Inf bucket = count" % h)
        assert after["rlockd_acquire_seconds_sum"] < 60, "acquire_seconds_sum is in seconds"


def test_healthz_readyz_and_health_agree_through_a_redis_outage():
    with _env() as env:
        probe = env.client()
        assert_eq(_get(env, "/healthz")[::2], (200, "ok\n"), "/healthz")
        assert_eq(_get(env, "/readyz")[::2], (200, "ready\n"), "/readyz with Redis up")
        env.redis_server.stop()
        wait_until(lambda: _get(env, "/readyz")[0] == 503, 5.0, what="/readyz 503 with Redis stopped")
        status, _, body = _get(env, "/readyz")
        assert "redis unreachable for" in body, "/readyz's reason: %r" % body
        assert is_error(probe.call("HEALTH"), "UNAVAILABLE"), "HEALTH agrees with /readyz"
        assert_eq(_get(env, "/healthz")[0], 200, "/healthz: the process is still alive")
        _, samples = _metrics(env)
        assert_eq(samples["rlockd_redis_connected"], 0.0, "rlockd_redis_connected with Redis down")
        env.redis_server.start()
        wait_until(lambda: _get(env, "/readyz")[0] == 200, 10.0, what="/readyz 200 once Redis is back")
        assert_eq(probe.call("HEALTH"), "OK", "HEALTH agrees")


def test_bad_methods_and_paths_get_clear_answers():
    with _env() as env:
        status, _, body = _get(env, "/metrics", method="POST")
        assert_eq(status, 405, "POST /metrics")
        assert_eq(_get(env, "/nope")[0], 404, "GET /nope")
        assert "/metrics" in _get(env, "/nope")[2], "the 404 names the paths there are"
        assert_eq(_get(env, "/healthz", method="HEAD")[0], 200, "HEAD /healthz")


def _http_address(env):
    host, port = env.config["server"]["http_listen"].rsplit(":", 1)
    return host, int(port)


def _closed_by_peer(sock):
    """True once the other side has closed sock (EOF or reset); never blocks."""
    sock.setblocking(False)
    try:
        return sock.recv(64) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _probe(env, path="/healthz", timeout=1.0):
    """GET path on a new connection: (status, seconds to the answer)."""
    host, port = _http_address(env)
    start = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status, time.monotonic() - start
    finally:
        conn.close()


def test_past_http_max_connections_the_oldest_waiting_connection_makes_room():
    """A full table of connections that send nothing keeps no probe out: a new one is
    served, and the oldest waiting one is closed to make room; the RESP port serves as
    ever."""
    with _env({"server": {"http_max_connections": 2, "http_request_timeout_ms": 60000}}) as env:
        idle = [socket.create_connection(_http_address(env), timeout=2.0) for _ in range(2)]
        try:
            wait_until(lambda: env.rlockd.info().get("http_connections") == "2", 3.0,
                       what="both idle connections taken in")
            assert_eq(_probe(env)[0], 200, "/healthz past http_max_connections")
            wait_until(lambda: _closed_by_peer(idle[0]), 2.0, what="the oldest idle connection closed")
            assert not _closed_by_peer(idle[1]), "only the oldest makes room"
            assert_eq(env.info_int("http_evictions"), 1, "INFO http_evictions")
            assert_eq(env.client().call("PING"), "PONG", "the RESP port serves all the same")
        finally:
            for s in idle:
                s.close()


DRIP = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200


class Dripper:
    """A connection sending one byte of an endless request every time drip() is called."""

    def __init__(self, env):
        self.sock = socket.create_connection(_http_address(env), timeout=2.0)
        self.sent = 0
        self.closed_after = None
        self.start = time.monotonic()

    def drip(self):
        if self.closed_after is not None:
            return
        if _closed_by_peer(self.sock):
            self.closed_after = time.monotonic() - self.start
            return
        try:
            self.sock.send(DRIP[self.sent % len(DRIP):][:1])
            self.sent += 1
        except OSError:
            self.closed_after = time.monotonic() - self.start

    def close(self):
        self.sock.close()


def _drip_until_closed(drippers, deadline_s, each=None, interval=0.2):
    """Drips a byte on every dripper each interval (a byte every 0.2 s keeps an idle
    timeout away for ever) until all are closed, or twice the deadline and a second
    have passed; each() runs at every round."""
    for _ in range(int((2 * deadline_s + 1) / interval) + 1):
        for d in drippers:
            d.drip()
        if each is not None:
            each()
        if all(d.closed_after is not None for d in drippers):
            return
        time.sleep(interval)   # the drip's pace: this is the slow client


def test_a_request_dripping_a_byte_at_a_time_is_closed_at_its_deadline():
    """http_request_timeout_ms is a total deadline: a connection that sends a byte every
    200 ms (so never idle) but never a whole request is closed once it has passed."""
    deadline_s = 1.0
    with _env({"server": {"http_request_timeout_ms": int(deadline_s * 1000)}}) as env:
        drippers = [Dripper(env) for _ in range(3)]
        try:
            _drip_until_closed(drippers, deadline_s)
            for i, d in enumerate(drippers):
                assert d.closed_after is not None, \
                    "dripper %d still open after %d bytes (%.1f s)" % (i, d.sent, 2 * deadline_s + 1)
                assert d.closed_after >= deadline_s - 0.05, \
                    "dripper %d closed after %.2f s, before its deadline" % (i, d.closed_after)
            assert_eq(env.info_int("http_request_timeouts"), 3, "INFO http_request_timeouts")
            assert_eq(_probe(env)[0], 200, "/healthz afterwards")
        finally:
            for d in drippers:
                d.close()


def test_healthz_answers_while_more_than_http_max_connections_drip():
    """http_max_connections + 4 connections dripping one byte every 200 ms do not keep
    /healthz or /readyz from answering: every probe meanwhile answers, each within a
    second (an answer at all, not a speed), and every dripper is closed by its
    deadline (the default, 2 s) or to make room."""
    with _env() as env:
        limit = int(env.rlockd.sections["server"].get("http_max_connections", 16))
        drippers = [Dripper(env) for _ in range(limit + 4)]
        probes = []

        def probe():
            path = "/healthz" if len(probes) % 2 == 0 else "/readyz"
            status, took = _probe(env, path)
            probes.append((path, status, took))

        try:
            _drip_until_closed(drippers, 2.0, each=probe)
            assert all(d.closed_after is not None for d in drippers), \
                "drippers still open: %d of %d" % (sum(d.closed_after is None for d in drippers),
                                                   len(drippers))
            assert len(probes) >= 5, "probes made while they dripped: %d" % len(probes)
            for path, status, took in probes:
                assert_eq(status, 200, "%s while %d connections drip" % (path, len(drippers)))
            worst = max(took for _, _, took in probes)
            print("    %d probes while %d connections dripped: slowest answer %.1f ms"
                  % (len(probes), len(drippers), worst * 1000))
        finally:
            for d in drippers:
                d.close()


def _log_lines(env):
    return len(env.rlockd.log_text().splitlines())


# A long outage is one of many redials: with redials 100 ms apart at most,
# REDIALS of them per link take seconds, not the minutes it would by default.
REDIALS = 10
QUICK_REDIAL = {"redis": {"reconnect_max_ms": 100}}


def _wait_redials(env, links, before=0):
    wait_until(lambda: int(env.info()["redis_connect_failures"]) >= before + REDIALS * links, 60.0,
               what="%d failed redials of each of the %d links" % (REDIALS, links))


def test_a_long_redis_outage_is_logged_once_not_per_retry():
    with _env(QUICK_REDIAL) as env:
        links = int(env.info()["redis_pool_size"]) + 1
        before = int(env.info()["redis_connect_failures"])
        settled = _log_lines(env)
        env.redis_server.stop()
        _wait_redials(env, links, before)
        log = env.rlockd.log_text()
        assert_eq(len(re.findall(r"WARN redis: unreachable", log)), 1, "the outage's warning")
        # each link: one line when it is lost, one for its first failed redial
        added = _log_lines(env) - settled
        assert added <= 2 * links + 2, "%d lines logged in %d redials a link" % (added, REDIALS)


def test_a_refused_redis_password_is_not_logged_per_retry():
    right = "right-%s" % uuid.uuid4().hex
    config = dict(QUICK_REDIAL, redis=dict(QUICK_REDIAL["redis"], password="wrong-" + right))
    with _env(config, redis_args=("--requirepass", right), wait_redis=False) as env:
        links = int(env.info()["redis_pool_size"]) + 1
        _wait_redials(env, links)   # every link keeps retrying
        lines = _log_lines(env)
        assert lines <= 3 * links + 10, "%d lines logged in %d refused AUTHs a link" % (lines, REDIALS)
