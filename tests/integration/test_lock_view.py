"""Who holds what, who waits for whom: LOCKS (RESP2 and RESP3), GET /locks and
GET /events on a real rlockd: a reentrant holder with count 2 and a waiter with times
checked against the test's own clock, MATCH/COUNT/OFFSET, the COUNT bound, ACL names
filtering what a user sees, and a lost lock among the recent events."""

import base64
import hashlib
import html
import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import HOST, Env, Skip, assert_eq, assert_error, free_port, rlock_bin, wait_until

HTTP_PORT = free_port()
CONFIG = {"server": {"http_listen": "%s:%d" % (HOST, HTTP_PORT)},
          "lock": {"watchdog_timeout_ms": 900}}


def _fetch(port, path):
    """GET path: its status, its headers, its body."""
    conn = http.client.HTTPConnection(HOST, port, timeout=5.0)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()
    finally:
        conn.close()


def _get(port, path):
    status, _, body = _fetch(port, path)
    return status, body


def _get_json(path, port=HTTP_PORT):
    status, body = _get(port, path)
    assert_eq(status, 200, "GET %s (%s)" % (path, body[:200]))
    return json.loads(body)


def _maps(reply):
    """LOCKS in RESP2: flat field/value arrays, nested; as dicts."""
    if isinstance(reply, list) and reply and isinstance(reply[0], str) and len(reply) % 2 == 0 \
            and reply[0] in ("name", "owner"):
        return {k: _maps(v) for k, v in zip(reply[0::2], reply[1::2])}
    if isinstance(reply, list):
        return [_maps(x) for x in reply]
    return reply


def _owner(env, label):
    c = env.client(label=label)
    cid = env.name("view-" + label)
    assert_eq(c.call("CLIENTID", cid), "OK", "CLIENTID")
    assert_eq(c.call("CLIENT", "SETNAME", label), "OK", "SETNAME")
    return c, cid


def _check_view(lock, name, aid, bid, held_max, wait_max, what):
    """The lock as LOCKS shows it; returns (held-ms, waiting-ms)."""
    assert_eq(lock["name"], name, "%s: name" % what)
    assert_eq(lock["kind"], "lock", "%s: kind" % what)
    assert_eq(lock["ttl"], 900, "%s: ttl (the watchdog's lease)" % what)
    assert_eq(len(lock["holders"]), 1, "%s: holders" % what)
    h = lock["holders"][0]
    assert_eq((h["owner"], h["count"], h["client-id"], h["peer"], h["client-name"]),
              ("%s:1" % aid, 2, aid, "tcp 127.0.0.1", "holder"), "%s: the holder" % what)
    assert 0 <= h["held-ms"] <= held_max, "%s: held-ms %r, at most %r" % (what, h["held-ms"], held_max)
    assert_eq(len(lock["waiters"]), 1, "%s: waiters" % what)
    w = lock["waiters"][0]
    assert_eq((w["owner"], w["client-id"], w["client-name"], w["asked"]),
              ("%s:7" % bid, bid, "waiter", "TRYLOCK WAIT 60000"), "%s: the waiter" % what)
    assert 0 <= w["waiting-ms"] <= wait_max, "%s: waiting-ms %r, at most %r" % (what, w["waiting-ms"], wait_max)
    return h["held-ms"], w["waiting-ms"]


def _ms_since(t):
    """ms since monotonic time t, and a little: the most a time shown may be."""
    return (time.monotonic() - t) * 1000 + 5


def _scene(env, base):
    """The holder takes a new lock twice, then the waiter's TRYLOCK WAIT 60000 queues for it:
    (holder, its client-id, waiter, its client-id, the name, when held, when the wait began)."""
    (a, aid), (b, bid) = _owner(env, "holder"), _owner(env, "waiter")
    n = env.name(base)
    t_held = time.monotonic()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK again (reentrant)")
    t_wait = time.monotonic()
    b.send("TRYLOCK", n, 7, "WAIT", 60000)
    env.wait_waiting(1)
    return a, aid, b, bid, n, t_held, t_wait


def _end_scene(a, b, n):
    assert_eq(a.call("UNLOCK", n, 1), 0, "UNLOCK one of two")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK the last hold")
    assert_eq(b.read_reply(5.0), 1, "the waiter gets it")
    assert_eq(b.call("UNLOCK", n, 7), 1, "the waiter's UNLOCK")


def test_a_reentrant_holder_and_a_waiter_in_resp2_resp3_and_json(env):
    a, aid, b, bid, n, t_held, t_wait = _scene(env, "view")
    ms = _ms_since

    r2 = _maps(env.client().call("LOCKS", "MATCH", n))
    assert_eq(len(r2), 1, "RESP2: one lock matches")
    first = _check_view(r2[0], n, aid, bid, ms(t_held), ms(t_wait), "RESP2")

    c3 = env.client()
    c3.hello3()
    r3 = c3.call("LOCKS", "MATCH", n)
    assert isinstance(r3, list) and isinstance(r3[0], dict), "RESP3: an array of maps: %r" % (r3,)
    _check_view(r3[0], n, aid, bid, ms(t_held), ms(t_wait), "RESP3")

    page = _get_json("/locks?match=%s" % n)
    assert_eq((page["total"], page["offset"], page["count"]), (1, 0, 1), "GET /locks: the page")
    _check_view(page["locks"][0], n, aid, bid, ms(t_held), ms(t_wait), "GET /locks")

    def grown():
        held, waiting = _check_view(_get_json("/locks?match=%s" % n)["locks"][0], n, aid, bid,
                                    ms(t_held), ms(t_wait), "later")
        return held >= first[0] + 100 and waiting >= first[1] + 100
    wait_until(grown, 5.0, what="held-ms and waiting-ms growing")

    assert_eq(a.call("UNLOCK", n, 1), 0, "UNLOCK one of two")
    assert_eq(_maps(a.call("LOCKS", "MATCH", n))[0]["holders"][0]["count"], 1, "the count after")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK the last hold")
    assert_eq(b.read_reply(5.0), 1, "the waiter gets it")
    lock = _maps(a.call("LOCKS", "MATCH", n))[0]
    assert_eq(([h["owner"] for h in lock["holders"]], lock["waiters"]), (["%s:7" % bid], []),
              "after the hand-off")
    assert_eq(b.call("UNLOCK", n, 7), 1, "UNLOCK")
    assert_eq(a.call("LOCKS", "MATCH", n), [], "nothing held or waited for")


def test_holders_are_listed_oldest_first_and_one_gone_from_the_middle_leaves_the_rest(env):
    owners = [_owner(env, "reader-%d" % i) for i in range(4)]
    n = env.name("readers")
    for c, _ in owners[:3]:
        assert_eq(c.call("LOCK", n, 1, "READ"), "OK", "LOCK READ")

    def listed():
        return [h["owner"] for h in _maps(owners[0][0].call("LOCKS", "MATCH", n))[0]["holders"]]
    assert_eq(listed(), ["%s:1" % cid for _, cid in owners[:3]], "in the order they took it")
    assert_eq(owners[1][0].call("UNLOCK", n, 1, "READ"), 1, "the second one's UNLOCK")
    assert_eq(owners[3][0].call("LOCK", n, 1, "READ"), "OK", "a fourth LOCK READ")
    assert_eq(listed(), ["%s:1" % owners[i][1] for i in (0, 2, 3)], "the second gone, the fourth last")
    for i in (0, 2, 3):
        assert_eq(owners[i][0].call("UNLOCK", n, 1, "READ"), 1, "UNLOCK READ")
    assert_eq(owners[0][0].call("LOCKS", "MATCH", n), [], "nothing held")


def test_match_count_offset_the_longest_wait_first_and_the_bound(env):
    (a, aid), (b, _) = _owner(env, "holder"), _owner(env, "waiter")
    base = env.name("page")
    names = ["%s:%d" % (base, i) for i in range(8)]
    for n in names:
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK %s" % n)
    b.send("LOCK", names[3], 2)
    env.wait_waiting(1)
    pattern = base + ":*"
    all_ = _maps(a.call("LOCKS", "MATCH", pattern))
    assert_eq(len(all_), 8, "MATCH")
    assert_eq(all_[0]["name"], names[3], "the one waited for first")
    assert_eq(all_[0]["waiters"][0]["asked"], "LOCK", "what a LOCK asked")
    assert_eq([l["name"] for l in all_[1:]], names[:3] + names[4:], "then the longest held")
    assert_eq([l["name"] for l in _maps(a.call("LOCKS", "MATCH", pattern, "COUNT", 2))],
              [names[3], names[0]], "COUNT 2 (the first of a page: a heap, not a sort)")
    assert_eq([l["name"] for l in _maps(a.call("LOCKS", "MATCH", pattern, "COUNT", 3))],
              [names[3], names[0], names[1]], "COUNT 3")
    assert_eq([l["name"] for l in _maps(a.call("LOCKS", "COUNT", 2, "MATCH", pattern, "OFFSET", 2))],
              [names[1], names[2]], "OFFSET 2 COUNT 2")
    page = _get_json("/locks?match=%s&count=2&offset=7" % pattern)
    assert_eq((page["total"], page["count"], [l["name"] for l in page["locks"]]), (8, 1, [names[7]]),
              "GET /locks, the last page")
    assert_error(a.call("LOCKS", "COUNT", 1001), "ERR", "locks_max_count", what="COUNT over the bound")
    assert_error(a.call("LOCKS", "COUNT", 0), "ERR", what="COUNT 0")
    assert_error(a.call("LOCKS", "MATCH"), "ERR", what="MATCH without a glob")
    status, body = _get(HTTP_PORT, "/locks?count=1001")
    assert_eq(status, 400, "GET /locks?count=1001")
    assert "locks_max_count" in body, "the reason: %r" % body
    assert_eq(_get(HTTP_PORT, "/locks?offset=x")[0], 400, "a bad offset")
    for n in names:
        assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK %s" % n)
    assert_eq(b.read_reply(5.0), "OK", "the waiter gets its lock")
    assert_eq(b.call("UNLOCK", names[3], 2), 1, "UNLOCK")


def test_a_lost_lock_is_among_the_recent_events(env):
    c, cid = _owner(env, "loser")
    n = env.name("lost")
    lost = env.info_int("locks_lost")
    assert_eq(c.call("LOCK", n, 3), "OK", "LOCK")
    env.redis("DEL", n)
    wait_until(lambda: env.info_int("locks_lost") > lost, 5.0, what="the watchdog finding the lock gone")
    events = _get_json("/events")["events"]
    mine = [e for e in events if n in e["text"]]
    assert_eq(len(mine), 1, "the loss among the events: %r" % events)
    e = mine[0]
    assert_eq(e["kind"], "lost", "its kind")
    assert "%s:3" % cid in e["text"], "the owner named: %r" % e
    assert abs(e["time_ms"] / 1000.0 - time.time()) < 60, "its time: %r" % e
    assert_eq(events[0]["seq"], max(x["seq"] for x in events), "the newest first")


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_user_sees_only_the_names_its_rules_allow():
    port = free_port()
    users = {"server": {"http_listen": "%s:%d" % (HOST, port), "auth_token": "view-token-0123456789"},
             "user worker": {"password_sha256": sha256("worker-pw-0123456789"), "commands": "+@lock",
                             "names": "orders:*"},
             "user ops": {"password_sha256": sha256("ops-pw-0123456789"), "commands": "+@all", "names": "*"}}
    with Env(users) as env:
        w = env.client(label="worker")
        assert_eq(w.call("AUTH", "worker", "worker-pw-0123456789"), "OK", "AUTH worker")
        o = env.client(label="ops")
        assert_eq(o.call("AUTH", "ops", "ops-pw-0123456789"), "OK", "AUTH ops")
        assert_eq(w.call("LOCK", "orders:1", 1), "OK", "the worker's lock")
        assert_eq(o.call("LOCK", "billing:1", 1), "OK", "ops' lock")
        assert_eq([l["name"] for l in _maps(w.call("LOCKS"))], ["orders:1"], "what the worker sees")
        assert_eq(sorted(l["name"] for l in _maps(o.call("LOCKS"))), ["billing:1", "orders:1"],
                  "what ops sees")
        assert_eq(_maps(w.call("LOCKS", "MATCH", "billing:*")), [], "MATCH cannot widen the rules")


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise Skip("chromium not found: apt-get install chromium (or scripts/install-deps.sh)")
    return exe


def _dump_dom(url, home):
    """The page's DOM after its script ran, as headless Chromium sees it."""
    out = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--user-data-dir=" + home, "--virtual-time-budget=3000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, HOME=home))
    assert_eq(out.returncode, 0, "chromium's exit (%s)" % out.stderr[-500:])
    return html.unescape(out.stdout)


def test_the_status_page_in_headless_chromium_shows_the_lock_its_holder_and_its_waiter(env):
    _chromium()
    a, aid, b, bid, n, _, _ = _scene(env, "page")
    home = tempfile.mkdtemp(prefix="rlockd-chromium-")
    try:
        dom = _dump_dom("http://%s:%d/" % (HOST, HTTP_PORT), home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    rows = [r for r in dom.split("<tr") if n in r]
    assert_eq(len(rows), 1, "the lock's row in the page: %s" % dom[-2000:])
    row = rows[0]
    for want in ("%s:1 (holder)" % aid, "%s:7 (waiter)" % bid, "TRYLOCK WAIT 60000", ">2<"):
        assert want in row, "%r in the lock's row: %s" % (want, row)
    assert "1-" in dom and " of " in dom, "the pager: %s" % dom[-1500:]
    assert "redis_master:" in dom, "the Redis section (INFO redis): %s" % dom[-1500:]
    _end_scene(a, b, n)


def test_the_status_page_may_run_its_own_script_and_styles_and_nothing_else(env):
    status, headers, page = _fetch(HTTP_PORT, "/")
    assert_eq(status, 200, "GET /")

    def hash_source(open_tag, close_tag):
        text = page.split(open_tag, 1)[1].split(close_tag, 1)[0]
        return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    policy = headers.get("Content-Security-Policy", "")
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    for name, want in (("default-src", "'none'"), ("script-src", hash_source("<script>", "</script>")),
                       ("style-src", hash_source("<style>", "</style>")), ("connect-src", "'self'"),
                       ("form-action", "'none'"), ("frame-ancestors", "'none'")):
        assert_eq(directives.get(name), want, "%s in the page's policy %r" % (name, policy))
    assert re.search(r"<[^>]*\son[a-z]+=", page) is None, "an inline event handler, which the policy blocks"
    assert_eq(headers.get("X-Content-Type-Options"), "nosniff", "X-Content-Type-Options")
    assert "Content-Security-Policy" not in _fetch(HTTP_PORT, "/locks")[1], "a policy on data, not the page"


def test_sessions_lists_client_ids_with_connections_holds_waiters_and_heartbeat(env):
    b, bid = _owner(env, "waiter")
    a, a2 = env.client(label="holder"), env.client(label="holder-2")
    aid = env.name("view-holder")
    for c in (a, a2):
        assert_eq(c.call("CLIENTID", aid, "SECRET", "view-secret-0123456789"), "OK", "CLIENTID with a SECRET")
    assert_eq(a.call("CLIENT", "SETNAME", "holder"), "OK", "SETNAME")
    assert_eq(a.call("CLIENT", "HEARTBEAT", 60000), "OK", "HEARTBEAT")
    n = env.name("sessions")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK")
    b.send("LOCK", n, 2)
    env.wait_waiting(1)
    page = _get_json("/sessions?count=1000")
    by_id = {s["client-id"]: s for s in page["sessions"]}
    assert_eq(page["total"], len(page["sessions"]), "one page holds them all")
    assert_eq([s["client-id"] for s in page["sessions"]], sorted(by_id), "by client-id")
    sa, sb = by_id[aid], by_id[bid]
    assert_eq((sa["connections"], sa["holds"], sa["waiters"], sa["resumable"]), (2, 1, 0, True), "the holder")
    assert_eq(sorted(c["client-name"] or "" for c in sa["clients"]), ["", "holder"], "its connections")
    assert_eq(sorted(c["heartbeat-ms"] for c in sa["clients"]), [0, 60000], "their heartbeats")
    assert all(c["peer"] == "tcp 127.0.0.1" and 0 <= c["heard-ms-ago"] < 60000 for c in sa["clients"]), \
        "peers and heard-ms-ago: %r" % sa["clients"]
    assert_eq((sb["connections"], sb["holds"], sb["waiters"], sb["resumable"]), (1, 0, 1, False),
              "the waiter, without a SECRET")
    first = _get_json("/sessions?count=1&offset=0")
    assert_eq((first["count"], first["sessions"][0]["client-id"]), (1, page["sessions"][0]["client-id"]),
              "a page of one")
    assert_eq(_get(HTTP_PORT, "/sessions?count=1001")[0], 400, "count over locks_max_count")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK")
    assert_eq(b.read_reply(5.0), "OK", "the waiter gets it")
    assert_eq(b.call("UNLOCK", n, 2), 1, "UNLOCK")


def _rlock_list(env, *args, tty=False):
    """rlock -S ADDR ARGS: its stdout, a pipe or (tty) a terminal."""
    argv = [rlock_bin(), "-S", "%s:%d" % (HOST, env.port)] + list(args)
    if not tty:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        assert_eq(r.returncode, 0, "rlock %s (stderr %r)" % (" ".join(args), r.stderr))
        return r.stdout
    import pty
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's other side closed
                break
            if not chunk:
                break
            out += chunk
        assert_eq(p.wait(10), 0, "rlock %s on a terminal" % " ".join(args))
        return out.decode().replace("\r\n", "\n")
    finally:
        os.close(master)


def test_rlock_list_prints_the_holder_count_2_and_the_waiter_as_a_table_tsv_and_json(env):
    a, aid, b, bid, n, t_held, t_wait = _scene(env, "list")
    other = env.name("other")
    assert_eq(a.call("LOCK", other, 1), "OK", "LOCK another name")
    ms = _ms_since

    lines = _rlock_list(env, "list", n).splitlines()
    assert_eq(lines[0].split("\t"), ["NAME", "KIND", "HOLDER", "COUNT", "HELD", "WAITERS", "LONGEST_WAIT"],
              "the heading, tab-separated")
    assert_eq(len(lines), 2, "PATTERN selects one lock: %r" % lines)
    row = lines[1].split("\t")
    assert_eq(row[:4] + [row[5]], [n, "lock", "%s:1" % aid, "2", "1"], "the row")
    assert 0 <= int(row[4]) <= ms(t_held), "HELD %r ms" % row[4]
    assert 0 <= int(row[6]) <= ms(t_wait), "LONGEST_WAIT %r ms" % row[6]

    table = _rlock_list(env, "list", n, tty=True).splitlines()
    assert_eq(len(table), 2, "on a terminal: %r" % table)
    assert table[0].index("KIND") == table[1].index("lock"), "aligned columns: %r" % table
    assert table[1].split()[:4] == [n, "lock", "%s:1" % aid, "2"], "the row: %r" % table[1]

    js = json.loads(_rlock_list(env, "--json", "list", n))
    assert_eq(len(js), 1, "--json: one lock")
    _check_view(js[0], n, aid, bid, ms(t_held), ms(t_wait), "rlock list --json")
    names = [l["name"] for l in json.loads(_rlock_list(env, "--json", "list"))]
    assert n in names and other in names, "without PATTERN, every lock: %r" % names
    _end_scene(a, b, n)
    assert_eq(a.call("UNLOCK", other, 1), 1, "UNLOCK")


def test_a_refused_deadlock_is_among_the_recent_events(env):
    (a, aid), (b, bid) = _owner(env, "a"), _owner(env, "b")
    x, y = env.name("dx"), env.name("dy")
    assert_eq(a.call("LOCK", x, 1), "OK", "a takes x")
    assert_eq(b.call("LOCK", y, 1), "OK", "b takes y")
    a.send("LOCK", y, 1)
    env.wait_waiting(1)
    refusal = b.call("LOCK", x, 1)
    assert_error(refusal, "DEADLOCK", what="the wait closing the cycle")
    events = [e for e in _get_json("/events")["events"] if e["kind"] == "deadlock"]
    assert_eq([e["text"] for e in events if x in e["text"]], [refusal.message], "the cycle among the events")
    assert_eq(b.call("UNLOCK", y, 1), 1, "b gives y up")
    assert_eq(a.read_reply(5.0), "OK", "a gets y")
    assert_eq(a.call("UNLOCK", y, 1), 1, "UNLOCK y")
    assert_eq(a.call("UNLOCK", x, 1), 1, "UNLOCK x")


def test_with_http_token_the_data_need_it_and_the_page_does_not():
    token = "view-http-token-0123456789"
    port = free_port()
    with Env({"server": {"http_listen": "%s:%d" % (HOST, port), "http_token": token}}):
        for path in ("/locks", "/sessions", "/events", "/info"):
            assert_eq(_get(port, path)[0], 401, "GET %s without the token" % path)
        status, body = _get(port, "/")
        assert_eq(status, 200, "GET / (the page, no data) without the token")
        assert "Bearer" in body, "the page's script sends the token"
