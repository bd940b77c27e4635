"""
conftest.py - fixtures for the rlockd package's tests: a real redis-server
and rlockd started on free loopback ports by the project's own test
harness (tests/integration/harness.py, imported, not copied), stopped by
pid at the end.

RLOCKD_BIN names the daemon (default: build/rlockd of this tree);
RLOCKD_HARNESS_DIR the harness's directory. The package is imported from
this source tree unless RLOCKD_TEST_INSTALLED=1 (then the installed one).
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.environ.get("RLOCKD_HARNESS_DIR") or os.path.join(ROOT, "tests", "integration"))
if os.environ.get("RLOCKD_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(HERE, ".."))

import harness  # noqa: E402
import rlockd  # noqa: E402

# Small limits, so that the tests reach them; a watchdog short enough for
# the restart tests to outlive it, and long enough for a slow (valgrind)
# rlockd to restart within it.
CONFIG = {"lock": {"watchdog_timeout_ms": harness.daemon_ms(2000), "max_held_locks_per_client": 20},
          "redis": {"retry_timeout_ms": harness.daemon_ms(500)}}


def start_env(config=CONFIG):
    try:
        env = harness.Env(config, label="python-client")
        env.start()
    except harness.Skip as e:
        pytest.skip(str(e))
    return env


@pytest.fixture(scope="session")
def env():
    env = start_env()
    yield env
    env.close()


@pytest.fixture
def fresh_env():
    """An Env of the test's own, for tests that stop or restart a process."""
    env = start_env()
    yield env
    env.close()


def address(env):
    return "%s:%d" % (harness.HOST, env.port)


class LostLog:
    """What a client's on_lost callback received, in order."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    def wait(self, timeout, count=1):
        harness.wait_until(lambda: len(self.events) >= count, timeout,
                           what="%d lost-lock event(s)" % count)
        return self.events


@pytest.fixture
def lost():
    return LostLog()


@pytest.fixture
def client(env, lost):
    c = rlockd.Client(address(env), on_lost=lost)
    yield c
    c.close()


@pytest.fixture
def name(env):
    return env.name("py")


def lost_channel_or_skip(env):
    """Skips, loudly, when this rlockd has no lock-lost channel yet:
    its SUBSCRIBE is refused instead of confirmed."""
    c = env.client(label="lost-channel-probe")
    try:
        harness.assert_eq(c.call("CLIENTID", "probe-lost-channel"), "OK", "CLIENTID")
        reply = c.call("SUBSCRIBE", "rlockd:lost:probe-lost-channel")
    finally:
        c.close()
    if not isinstance(reply, list):
        pytest.skip("LOCK-LOST CHANNEL MISSING: this rlockd (%s) answers SUBSCRIBE "
                    "rlockd:lost:<client-id> with %r, so the lost-event test cannot run"
                    % (harness.rlockd_bin(), reply))
