"""Start-up configuration: -t, unknown keys and bad values are refused with file and line; the
environment's RLOCKD_<SECTION>_<KEY> over the file; JSON logs."""

import json
import os
import re
import subprocess

from harness import Env, TempDir, assert_eq, parse_info, rlockd_bin, write_config


def _run(args, timeout=5.0):
    return subprocess.run([rlockd_bin()] + args, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


GOOD = {
    "server": {"listen": "127.0.0.1:1"},
    "redis": {"host": "127.0.0.1", "port": "1"},
    "lock": {"watchdog_timeout_ms": "600", "on_disconnect": "expire"},
    "log": {"level": "warn"},
}


def test_config_check_flag_accepts_valid_file_and_exits_0():
    with TempDir() as d:
        path = os.path.join(d, "good.ini")
        write_config(path, GOOD)
        r = _run(["-t", "-c", path])
        assert r.returncode == 0, "rlockd -t on a valid file exited %d: %s%s" % (r.returncode, r.stdout, r.stderr)


def _expect_refused(d, fname, text, bad_line, what, start=False):
    path = os.path.join(d, fname)
    with open(path, "w") as f:
        f.write(text)
    r = _run((["-t"] if not start else []) + ["-c", path])
    assert r.returncode != 0, "%s: rlockd%s exited 0" % (what, "" if start else " -t")
    where = "%s:%d" % (fname, bad_line)
    assert where in r.stderr, "%s: stderr should name %s, got %r" % (what, where, r.stderr)


def test_unknown_config_key_stops_startup_with_file_and_line():
    text = "[server]\nlisten = 127.0.0.1:1\n\n[lock]\nwatchdog_timeout_ms = 600\nno_such_key = 1\n"
    with TempDir() as d:
        _expect_refused(d, "unknown.ini", text, 6, "unknown key (-t)")
        _expect_refused(d, "unknown.ini", text, 6, "unknown key (start-up)", start=True)


def test_bad_config_values_stop_startup_with_file_and_line():
    cases = [
        ("[lock]\non_disconnect = sometimes\n", 2, "on_disconnect = sometimes"),
        ("[log]\nlevel = info\n[lock]\nwatchdog_timeout_ms = soon\n", 4, "watchdog_timeout_ms = soon"),
        ("[redis]\npool_size = 0\n", 2, "pool_size = 0"),
        ("[server]\nmax_clients = -5\n", 2, "max_clients = -5"),
        ("[nosuchsection]\nx = 1\n", 2, "unknown section"),
    ]
    with TempDir() as d:
        for i, (text, line, what) in enumerate(cases):
            _expect_refused(d, "bad%d.ini" % i, text, line, what)


def test_check_flag_refuses_what_start_up_refuses():
    """rlockd -t applies start-up's checks of the addresses too: nothing to listen on,
    a listen or http_listen address that is not numeric; start-up refuses them alike."""
    cases = [
        ("[server]\nlisten =\n", "nothing to listen on"),
        ("[server]\nlisten = localhost:7379\n", "not a numeric"),
        ("[server]\nlisten = 127.0.0.1:1\nhttp_listen = localhost:9\n", "http_listen"),
    ]
    with TempDir() as d:
        for i, (text, why) in enumerate(cases):
            path = os.path.join(d, "addr%d.ini" % i)
            with open(path, "w") as f:
                f.write(text + "[redis]\nhost = 127.0.0.1\nport = 1\n")
            for args in (["-t", "-c", path], ["-c", path]):
                r = _run(args)
                assert r.returncode != 0, "rlockd %s with %r exited 0" % (" ".join(args[:-1]), text)
                assert why in r.stderr, "rlockd %s: stderr should say %r, got %r" % (
                    " ".join(args[:-1]), why, r.stderr)


def test_version_and_help_flags_exit_0_without_starting():
    for flag in ("-V", "-h"):
        r = _run([flag])
        assert r.returncode == 0, "rlockd %s exited %d: %s" % (flag, r.returncode, r.stderr)
        assert (r.stdout + r.stderr).strip(), "rlockd %s printed nothing" % flag
    r = _run(["-V"])
    assert "rlockd" in (r.stdout + r.stderr).lower(), "rlockd -V does not name itself: %r" % (r.stdout + r.stderr)


def _run_env(args, env):
    return subprocess.run([rlockd_bin()] + args, capture_output=True, text=True, timeout=5.0,
                          stdin=subprocess.DEVNULL, env=dict(os.environ, **env))


def test_environment_overrides_the_file_key_by_key_and_t_shows_it():
    with TempDir() as d:
        path = os.path.join(d, "good.ini")
        write_config(path, GOOD)
        r = _run_env(["-t", "-c", path], {"RLOCKD_LOCK_WATCHDOG_TIMEOUT_MS": "1700",
                                          "RLOCKD_REDIS_PASSWORD": "s3cret", "RLOCKD_LOG_FORMAT": "json"})
        assert_eq(r.returncode, 0, "rlockd -t with overrides (stderr %r)" % r.stderr)
        assert_eq(sorted(r.stdout.splitlines()[:-1]),
                  ["rlockd: RLOCKD_LOCK_WATCHDOG_TIMEOUT_MS sets [lock] watchdog_timeout_ms = 1700",
                   "rlockd: RLOCKD_LOG_FORMAT sets [log] format = json",
                   "rlockd: RLOCKD_REDIS_PASSWORD sets [redis] password = (secret)"],
                  "what rlockd -t says the environment sets")
        assert "s3cret" not in r.stdout + r.stderr, "rlockd -t printed a secret"
        # without -c: over the defaults
        r = _run_env(["-t"], {"RLOCKD_SERVER_LISTEN": "127.0.0.1:7"})
        assert_eq((r.returncode, r.stdout.splitlines()[0]),
                  (0, "rlockd: RLOCKD_SERVER_LISTEN sets [server] listen = 127.0.0.1:7"), "rlockd -t without -c")
        for env, why in (({"RLOCKD_REDIS_PORT": "abc"}, "environment RLOCKD_REDIS_PORT: port: 'abc' is not an integer"),
                         ({"RLOCKD_SERVER_LISTN": "x"}, "environment RLOCKD_SERVER_LISTN: no such key")):
            for args in (["-t", "-c", path], ["-c", path], ["-t"]):
                r = _run_env(args, env)
                assert_eq((r.returncode, r.stderr), (1, "rlockd: %s\n" % why), "rlockd %s with %s" % (args, env))
        # RLOCKD_ variables of no section are not settings (the tests' own RLOCKD_BIN among them)
        r = _run_env(["-t", "-c", path], {"RLOCKD_SOMETHING_ELSE": "1"})
        assert_eq(r.returncode, 0, "an RLOCKD_ variable of no section (stderr %r)" % r.stderr)


def test_a_running_rlockd_takes_its_settings_from_the_environment():
    with Env({"lock": {"watchdog_timeout_ms": 30000}}, env={"RLOCKD_LOCK_WATCHDOG_TIMEOUT_MS": "1700"}) as env:
        info = parse_info(env.client().call("INFO", "all"))
        assert_eq(info.get("watchdog_timeout_ms"), "1700", "INFO's watchdog_timeout_ms")
        c = env.client()
        n = env.name("envwd")
        assert_eq(c.call("LOCK", n, 1), "OK", "LOCK")
        assert 0 < env.redis("PTTL", n) <= 1700, "the lock's TTL follows the environment's watchdog"


def test_json_logs_are_one_object_a_line():
    with Env(env={"RLOCKD_LOG_FORMAT": "json"}) as env:
        env.client().call("PING")
        with open(env.rlockd.logpath) as f:
            lines = [line for line in f.read().splitlines() if line]
    assert lines, "rlockd logged nothing"
    for line in lines:
        entry = json.loads(line)
        assert_eq(sorted(entry), ["level", "msg", "pid", "time"], "keys of %r" % line)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"]), "time of %r" % line
        assert entry["level"] in ("error", "warn", "info", "debug"), "level of %r" % line
    assert any(e["msg"].startswith("rlockd ") and "starting" in e["msg"] for e in map(json.loads, lines)), \
        "the start-up line in JSON: %r" % lines[:3]
def test_long_help_and_version_are_accepted_as_the_short_ones():
    assert_eq_run = [(["--version"], ["-V"]), (["--help"], ["-h"])]
    for long_args, short_args in assert_eq_run:
        r, short = _run(long_args), _run(short_args)
        assert r.returncode == 0, "rlockd %s exited %d: %s" % (long_args[0], r.returncode, r.stderr)
        assert r.stdout == short.stdout, "rlockd %s printed %r, %s printed %r" % (
            long_args[0], r.stdout, short_args[0], short.stdout)
    assert "-h, --help" in _run(["--help"]).stdout and "-V, --version" in _run(["--help"]).stdout


def _check_text(d, fname, text):
    path = os.path.join(d, fname)
    with open(path, "w") as f:
        f.write(text)
    r = _run(["-t", "-c", path])
    assert r.returncode == 1, "rlockd -t on %r exited %d" % (text, r.returncode)
    return r.stderr.replace(path, fname).strip()


def test_check_flags_a_duplicate_key_with_both_lines():
    text = "[redis]\nport = 1\nhost = 127.0.0.1\nport = 2\n"
    with TempDir() as d:
        got = _check_text(d, "dup.ini", text)
    want = "rlockd: dup.ini:4: duplicate key 'port' in section [redis] (first set on line 2)"
    assert got == want, "got %r, want %r" % (got, want)


def test_check_names_a_misspelled_section_and_the_closest_known_one():
    cases = [("[rdis]\nport = 1\n", "rlockd: bad.ini:2: unknown section [rdis] (did you mean [redis]?)"),
             ("[lokc]\nx = 1\n", "rlockd: bad.ini:2: unknown section [lokc] (did you mean [lock]?)"),
             ("[usr alice]\npassword = x\n", "rlockd: bad.ini:2: unknown section [usr alice] (did you mean [user NAME]?)"),
             ("[nosuchsection]\nx = 1\n", "rlockd: bad.ini:2: unknown section [nosuchsection]")]
    with TempDir() as d:
        for text, want in cases:
            got = _check_text(d, "bad.ini", text)
            assert got == want, "got %r, want %r" % (got, want)
