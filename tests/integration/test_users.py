"""Users and permissions ([user NAME] sections, AUTH <user> <password>, -NOPERM),
reloads of users, and AUTH throttling (delays, closing, rate-limited warnings)."""

import hashlib
import re
import signal
import time

from harness import (ConnectionClosed, Env, RespClient, assert_eq, assert_error, wait_info)

TOKEN = "t0ken-for-default"
WORKER_PW = "worker-pw"
OPS_PW = "ops-pw"
MAX_FAILURES = 3
FIRST_DELAY = 0.1   # the penalty after the first refusal; it doubles


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def users_config(token=TOKEN, **server):
    sections = {
        "server": dict({"max_auth_failures": MAX_FAILURES}, **server),
        "user worker": {"password_sha256": sha256(WORKER_PW), "commands": "+@lock",
                        "names": "orders:* jobs:?"},
        "user ops": {"password_sha256": sha256(OPS_PW), "commands": "+@all", "names": "*"},
    }
    if token:
        sections["server"]["auth_token"] = token
    return sections


def login(env, user, password):
    c = env.client(label=user)
    assert_eq(c.call("AUTH", user, password), "OK", "AUTH %s" % user)
    return c


# ---------------------------------------------------------------- permissions


def test_worker_runs_lock_commands_on_its_names_and_gets_noperm_elsewhere():
    with Env(users_config()) as env:
        w = login(env, "worker", WORKER_PW)
        assert_eq(w.call("LOCK", "orders:1", 1), "OK", "LOCK orders:1")
        assert_eq(w.call("ISHELD", "orders:1", 1), 1, "ISHELD orders:1")
        assert_eq(w.call("UNLOCK", "orders:1", 1), 1, "UNLOCK orders:1")
        assert_eq(w.call("TRYLOCK", "jobs:7", 1), 1, "TRYLOCK jobs:7")
        assert_eq(w.call("UNLOCK", "jobs:7", 1), 1, "UNLOCK jobs:7")
        for cmd in (("LOCK", "billing:1", 1), ("TRYLOCK", "jobs:77", 1), ("PTTL", "orders"),
                    ("ISLOCKED", "Orders:1")):
            assert_error(w.call(*cmd), "NOPERM", "no permissions to access the '%s' lock" % cmd[1],
                         what="%s %s as worker" % cmd[:2])
        assert_error(w.call("FORCEUNLOCK", "orders:1"), "NOPERM",
                     "this user has no permissions to run the 'forceunlock' command", what="FORCEUNLOCK")
        assert_error(w.call("INFO"), "NOPERM", "this user has no permissions to run the 'info' command",
                     what="INFO as worker")
        assert_eq(w.call("PING"), "PONG", "PING is always allowed")
        assert w.call("CLIENTID"), "CLIENTID is in @lock"
        assert_eq(env.info_int("noperm_replies"), 6, "INFO noperm_replies")
        assert_eq(w.call("QUIT"), "OK", "QUIT is always allowed")


def test_refused_forceunlock_leaves_the_lock_in_redis():
    with Env(users_config()) as env:
        holder = login(env, "ops", OPS_PW)
        assert_eq(holder.call("LOCK", "orders:9", 5), "OK", "LOCK by ops")
        before = env.redis_hash("orders:9")
        assert len(before) == 1, "the lock's hash in Redis: %r" % before
        w = login(env, "worker", WORKER_PW)
        assert_error(w.call("FORCEUNLOCK", "orders:9"), "NOPERM", "'forceunlock'", what="FORCEUNLOCK by worker")
        assert_eq(env.redis_hash("orders:9"), before, "the lock in Redis after the refused FORCEUNLOCK")
        assert_eq(env.info_int("locks_force_released"), 0, "locks_force_released")
        assert_eq(holder.call("ISHELD", "orders:9", 5), 1, "the holder still holds it")


def test_ops_user_and_the_token_may_do_everything():
    with Env(users_config()) as env:
        ops = login(env, "ops", OPS_PW)
        n = env.name("billing")
        assert_eq(ops.call("LOCK", n, 1), "OK", "LOCK as ops")
        assert "# Stats" in ops.call("INFO"), "INFO as ops"
        assert_eq(ops.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK as ops")
        assert_eq(env.redis("EXISTS", n), 0, "gone from Redis")
        for form in (("AUTH", TOKEN), ("AUTH", "default", TOKEN)):
            what = " ".join(form[:-1]) + " <token>"
            c = env.client(label=what)
            assert_eq(c.call(*form), "OK", what)
            assert_eq(c.call("LOCK", n, 2), "OK", "LOCK after " + what)
            assert_eq(c.call("FORCEUNLOCK", n), 1, "FORCEUNLOCK after " + what)


def test_wrong_password_or_unknown_user_is_refused_alike_and_changes_nothing():
    with Env(users_config(max_auth_failures=5)) as env:
        c = env.client()
        assert_error(c.call("AUTH", "worker", "nope"), "ERR", "invalid username-password pair",
                     what="wrong password")
        assert_error(c.call("LOCK", "orders:1", 1), "NOAUTH", what="LOCK after a refused AUTH")
        assert_error(c.call("AUTH", "nobody", WORKER_PW), "ERR", "invalid username-password pair",
                     what="unknown user")
        assert_eq(c.call("AUTH", "worker", WORKER_PW), "OK", "right password on the same connection")
        assert_error(c.call("AUTH", "worker", "nope"), "ERR", what="a later wrong AUTH")
        assert_eq(c.call("LOCK", "orders:1", 1), "OK", "still worker after the refused AUTH (as Redis)")
        assert_eq(env.info_int("auth_failures"), 3, "auth_failures")
        assert WORKER_PW not in env.rlockd.log_text() and "nope" not in env.rlockd.log_text(), \
            "a password was logged"


def test_users_without_a_token_require_auth_and_refuse_the_one_argument_form():
    with Env(users_config(token=None), wait_redis=False) as env:
        c = env.client()
        assert_eq(c.call("PING"), "PONG", "PING before AUTH")
        assert_error(c.call("ISLOCKED", "orders:1"), "NOAUTH", what="ISLOCKED before AUTH")
        assert_error(c.call("AUTH", "anything"), "ERR", "invalid auth token",
                     what="AUTH <password> with no auth_token")
        assert_error(c.call("AUTH", "default", ""), "ERR", "invalid username-password pair",
                     what="AUTH default '' with no auth_token")
        assert_eq(c.call("AUTH", "worker", WORKER_PW), "OK", "AUTH worker")
        assert_error(c.call("INFO"), "NOPERM", what="INFO as worker")


def test_reload_changes_permissions_of_open_connections_and_closes_removed_users():
    with Env(users_config()) as env:
        w = login(env, "worker", WORKER_PW)
        ops = login(env, "ops", OPS_PW)
        assert_error(w.call("LOCK", "billing:1", 1), "NOPERM", what="billing before the reload")
        d = env.rlockd
        d.sections["user worker"]["names"] = "billing:*"
        del d.sections["user ops"]
        d.rewrite_config({})
        d.signal(signal.SIGHUP)
        d.wait_log(r"reload: \S+ read, 2 setting\(s\) changed")
        assert re.search(r"reload: \[user ops\] removed", d.log_text()), d.log_tail()
        assert re.search(r"reload: \[user worker\] changed", d.log_text()), d.log_tail()
        assert_eq(w.call("LOCK", "billing:1", 1), "OK", "the same connection after the reload")
        assert_error(w.call("LOCK", "orders:1", 1), "NOPERM", what="orders:* no longer granted")
        assert ops.wait_closed(2.0), "the removed user's connection should be closed"
        c = env.client()
        assert_error(c.call("AUTH", "ops", OPS_PW), "ERR", what="AUTH as a removed user")


def _reload_worker_names(env, names):
    """SIGHUP with the worker's names set to names; returns once the reload is applied."""
    d = env.rlockd
    reloads = env.info_int("config_reloads")
    d.sections["user worker"]["names"] = names
    d.rewrite_config({})
    d.signal(signal.SIGHUP)
    wait_info(env, "config_reloads", reloads + 1, what="the reload applied")


def test_a_reload_narrowing_names_refuses_a_waiting_lock_which_never_holds():
    """A LOCK waiting when a reload takes its name from its user's names is refused
    -NOPERM at the reload, and never takes the lock: when the holder releases, the lock
    is free in Redis and the next allowed client gets it. A FAIR one leaves Redis's
    queue too, or the next FAIR caller would wait behind it."""
    with Env(users_config()) as env:
        holder = login(env, "ops", OPS_PW)
        w = login(env, "worker", WORKER_PW)
        nxt = login(env, "ops", OPS_PW)
        for kind in ((), ("FAIR",)):
            n = env.name("orders:")
            what = " ".join(kind + (n,))
            assert_eq(holder.call("LOCK", n, 1, *kind), "OK", "LOCK %s by ops" % what)
            w.send("LOCK", n, 2, *kind)
            env.wait_waiting(1, what="the worker's LOCK %s waits" % what)
            _reload_worker_names(env, "jobs:?")
            assert_error(w.read_reply(2.0), "NOPERM", "no permissions to access the '%s' lock" % n,
                         what="the waiting LOCK %s after the reload" % what)
            env.wait_waiting(0, what="the refused LOCK waits no more")
            assert_eq(holder.call("UNLOCK", n, 1, *kind), 1, "the holder's UNLOCK")
            assert_eq(env.redis("EXISTS", n), 0, "%s is free in Redis, not the worker's" % what)
            assert_eq(nxt.call("TRYLOCK", n, 3, *kind), 1, "the next allowed client gets %s at once" % what)
            assert_eq(list(env.redis_hash(n).values()), ["1"], "one hold, the next client's")
            assert_eq(nxt.call("UNLOCK", n, 3, *kind), 1, "the next client's UNLOCK")
            _reload_worker_names(env, "orders:* jobs:?")
        assert_eq(env.info_int("held_locks"), 0, "INFO held_locks: the worker holds nothing")
        assert_eq(w.call("LOCK", "jobs:1", 2), "OK", "the worker's connection serves its new names")


def test_a_reload_narrowing_names_refuses_a_lock_in_flight_and_gives_back_its_grant():
    """A LOCK whose script Redis has not answered yet (Redis stopped) when a reload takes
    its name away is refused -NOPERM at the reload; the grant Redis makes once it runs is
    given back (settled), so that the lock is free and the next allowed client gets it."""
    with Env(users_config()) as env:
        n = env.name("orders:")
        w = login(env, "worker", WORKER_PW)
        with env.redis_server.paused():
            w.send("LOCK", n, 2)
            wait_info(env, "commands_in_flight", 1, what="the LOCK sent to a stopped Redis")
            _reload_worker_names(env, "jobs:?")
            assert_error(w.read_reply(2.0), "NOPERM", "no permissions to access the '%s' lock" % n,
                         what="the LOCK in flight after the reload")
        wait_info(env, "acquires_settled", 1, what="Redis's late grant given back")
        assert_eq(env.redis("EXISTS", n), 0, "the lock is free in Redis, not the worker's")
        nxt = login(env, "ops", OPS_PW)
        assert_eq(nxt.call("TRYLOCK", n, 3), 1, "the next allowed client gets it at once")
        assert_eq(env.info_int("held_locks"), 1, "INFO held_locks: the worker holds nothing")


# ---------------------------------------------------------------- throttling


def test_pipelined_wrong_auths_are_answered_a_growing_delay_apart_then_closed():
    with Env(users_config()) as env:
        bystander = login(env, "worker", WORKER_PW)
        c = env.client(label="guesser")
        t0 = time.monotonic()
        c.send_raw(b"".join(b"*3\r\n$4\r\nAUTH\r\n$6\r\nworker\r\n$6\r\nguess%d\r\n" % i
                            for i in range(MAX_FAILURES + 5)) + b"*1\r\n$4\r\nPING\r\n")
        # The loop is not blocked meanwhile: another connection is served while
        # the guesser waits out its delays (0.7 s in all), so not every refusal
        # can have come yet (a daemon sleeping in place would have sent them all).
        assert_eq(bystander.call("ISLOCKED", "orders:1"), 0, "bystander during the penalty")
        early = 0
        while c.reply_ready(0.001):
            c.read_reply()
            early += 1
        assert early < MAX_FAILURES, "all %d refusals came before a bystander's reply" % early
        arrivals = [0.0] * early   # (their time is not measured: lower bounds only below)
        for i in range(early, MAX_FAILURES):
            assert_error(c.read_reply(5.0), "ERR", "invalid username-password pair", what="guess %d" % i)
            arrivals.append(time.monotonic() - t0)
        assert c.wait_closed(5.0), "the connection should be closed after %d refusals" % MAX_FAILURES
        assert_eq(bytes(c.buf), b"", "nothing after the last refusal (the queued guesses and PING never ran)")
        # Lower bounds only: each refusal waits its own delay, 0.1, 0.2, 0.4 s.
        expected = 0.0
        for i, at in enumerate(arrivals):
            expected += FIRST_DELAY * (2 ** i)
            assert i < early or at >= expected - 0.01, \
                "reply %d after %.3fs, before its delays (%.3fs) passed: %r" % (i, at, expected, arrivals)
        info = env.info()
        assert_eq(info["auth_failures"], str(MAX_FAILURES), "auth_failures")
        assert_eq(info["penalty_disconnects"], "1", "penalty_disconnects")


def test_guess_rate_with_throttling_on_one_connection_and_reconnecting():
    with Env(users_config()) as env:
        # One connection, pipelining a large burst.
        burst = 1000
        c = env.client(label="pipeliner", timeout=10.0)
        t0 = time.monotonic()
        c.send_raw(b"".join(b"*2\r\n$4\r\nAUTH\r\n$8\r\nguess%03d\r\n" % (i % 1000) for i in range(burst)))
        refused = 0
        while True:
            try:
                reply = c.read_reply(10.0)
            except ConnectionClosed:
                break
            assert_error(reply, "ERR", "invalid auth token", what="pipelined guess")
            refused += 1
        one_conn_s = time.monotonic() - t0
        assert_eq(refused, MAX_FAILURES, "guesses answered on one connection before it was closed")
        # A client that reconnects after each refusal, for a bounded time.
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 1.5:
            r = RespClient(env.port, timeout=5.0, label="reconnecter")
            try:
                assert_error(r.call("AUTH", "guess-%d" % n), "ERR", "invalid auth token", what="reconnecting guess")
            finally:
                r.close()
            n += 1
        reconnect_s = time.monotonic() - t0
        print("    AUTH guesses: one pipelined connection %d in %.2fs (%.1f/s, then closed);"
              " reconnecting %d in %.2fs (%.1f/s)"
              % (refused, one_conn_s, refused / one_conn_s, n, reconnect_s, n / reconnect_s))
        # Each reconnecting guess waited its first delay.
        assert reconnect_s >= n * FIRST_DELAY, "%d guesses in %.2fs: faster than one per %.1fs" \
            % (n, reconnect_s, FIRST_DELAY)
        wait_info(env, "auth_failures", MAX_FAILURES + n)


def test_refusals_are_logged_as_rate_limited_warnings_counting_the_rest():
    with Env(users_config()) as env:
        guessers = [env.client(label="guesser-%d" % i) for i in range(5)]
        for g in guessers:
            g.send("AUTH", "worker", "wrong")
        for g in guessers:
            assert_error(g.read_reply(5.0), "ERR", what="guess")
        time.sleep(1.1)   # past the one-line-per-second window: the next refusal is logged
        last = env.client(label="last")
        assert_error(last.call("AUTH", "ops", "wrong", timeout=5.0), "ERR", what="the last guess")
        lines = env.rlockd.wait_log(r"AUTH refused, 1 of max_auth_failures 3 \((\d+) more refusals")
        text = env.rlockd.log_text()
        logged = re.findall(r"WARN client \d+ \(tcp 127\.0\.0\.1\): AUTH refused, \d of max_auth_failures \d", text)
        counted = sum(int(k) for k in re.findall(r"\((\d+) more refusals since the last such line\)", text))
        assert int(lines.group(1)) >= 1, "the last line should count suppressed refusals: %r" % lines.group(0)
        assert_eq(len(logged) + counted, 6, "refusals logged plus those counted (%d lines)" % len(logged))
        assert "wrong" not in text, "a guessed password was logged"
