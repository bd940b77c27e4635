"""rlockd restarting or stopping under a holder: the client gets its
session back, or is told its locks are lost; never silence."""

import threading
import time

import pytest

import harness
import rlockd
from conftest import address


@pytest.mark.parametrize("heartbeat_ms", [1000, 0])
def test_restart_within_the_lease_resumes(fresh_env, lost, heartbeat_ms):
    client = rlockd.Client(address(fresh_env), heartbeat_ms=heartbeat_ms, on_lost=lost)
    try:
        name = fresh_env.name("resume")
        with client.lock(name) as lock:
            fresh_env.rlockd.stop()
            fresh_env.rlockd.start()
            assert lock.is_held()     # resumed by the heartbeat, or by this call
            time.sleep(fresh_env.watchdog_ms / 1000 * 1.5)   # longer than the TTL: renewed again
            assert lock.is_held()
        assert not client.is_locked(name) and lost.events == []
    finally:
        client.close()


@pytest.mark.parametrize("heartbeat_ms", [1000, 0])
def test_restart_after_the_lease_is_lock_lost(fresh_env, lost, heartbeat_ms):
    client = rlockd.Client(address(fresh_env), heartbeat_ms=heartbeat_ms, on_lost=lost)
    try:
        name = fresh_env.name("gone")
        lock = client.lock(name)
        lock.acquire()
        fresh_env.rlockd.stop()
        harness.wait_until(lambda: not fresh_env.redis_hash(name), fresh_env.watchdog_ms / 1000 + 5,
                           what="the lock to expire")
        time.sleep(fresh_env.watchdog_ms / 1000)   # and the session record with it
        fresh_env.rlockd.start()
        with pytest.raises(rlockd.LockLost):
            lock.release()
        events = lost.wait(2)
        assert (events[0].name, events[0].reason) == (name, "session not resumed")
        assert lock.lost.is_set()
        with client.lock(name):      # a new session: usable again
            pass
    finally:
        client.close()


def test_rlockd_stopping_under_a_waiter_is_shutting_down(fresh_env):
    holder = rlockd.Client(address(fresh_env), heartbeat_ms=0)
    waiter = rlockd.Client(address(fresh_env), heartbeat_ms=0)
    got = []

    def wait_for_it():
        try:
            waiter.lock("busy").acquire()
        except rlockd.RlockError as e:
            got.append(e)
    try:
        holder.lock("busy").acquire()
        t = threading.Thread(target=wait_for_it)
        t.start()
        fresh_env.wait_waiting(1)
        fresh_env.rlockd.stop()
        t.join(5)
        assert len(got) == 1 and type(got[0]) is rlockd.ShuttingDown, got
    finally:
        holder.close()
        waiter.close()


def test_redis_down_is_unavailable(fresh_env):
    client = rlockd.Client(address(fresh_env), heartbeat_ms=0)
    try:
        fresh_env.redis_server.stop()
        with pytest.raises(rlockd.Unavailable):
            client.try_lock("anything")
    finally:
        client.close()
