"""The threaded client against a real rlockd and redis-server."""

import hashlib
import os
import socket
import threading
import time

import pytest

import harness
import rlockd
from conftest import address, lost_channel_or_skip, start_env


def other_client(env):
    return rlockd.Client(address(env), heartbeat_ms=0, lost_events=False)


def test_threads_sharing_one_client_never_overlap(client, name):
    """8 threads x 100 locks through one Client object: each thread its
    own connection and thread-id; entries and exits never interleave."""
    journal = []           # ("in"|"out", thread number), appended under the lock only
    errors = []

    def worker(n):
        try:
            for _ in range(100):
                with client.lock(name):
                    journal.append(("in", n))
                    time.sleep(0)          # let the others try to get in
                    journal.append(("out", n))
        except Exception as e:             # reported below, not lost in the thread
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(journal) == 1600
    for i in range(0, 1600, 2):
        assert journal[i][0] == "in" and journal[i + 1] == ("out", journal[i][1]), \
            "overlap at entry %d: %r" % (i, journal[i:i + 4])
    assert len({n for _, n in journal}) == 8


def test_each_thread_is_its_own_owner(client, name):
    held = client.lock(name)
    held.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(client.try_lock(name)))
    t.start()
    t.join()
    assert got == [None]
    assert held.release() is True


def test_reentrancy(client, name):
    with client.lock(name) as outer:
        with client.lock(name) as inner:
            assert inner.hold_count() == 2
        assert outer.hold_count() == 1 and outer.is_held()
    assert not client.is_locked(name)


def test_try_lock_gives_up_after_wait_ms(env, client, name):
    other = other_client(env)
    try:
        assert other.try_lock(name) is not None
        t0 = time.monotonic()
        assert client.try_lock(name, wait_ms=300) is None
        assert 0.25 <= time.monotonic() - t0 < 2.0
        with pytest.raises(rlockd.NotAcquired):
            with client.lock(name, wait_ms=100):
                pytest.fail("entered a lock held by another client")
    finally:
        other.close()


def test_wait_ends_when_the_holder_releases(env, client, name):
    other = other_client(env)
    holding = threading.Event()

    def hold_briefly():
        with other.lock(name):
            holding.set()
            time.sleep(0.2)
    t = threading.Thread(target=hold_briefly)
    try:
        t.start()
        assert holding.wait(2)
        lock = client.try_lock(name, wait_ms=3000)
        assert lock is not None
        lock.release()
    finally:
        t.join()
        other.close()


def test_lease(client, name):
    with client.lock(name, lease_ms=5000):
        assert 0 < client.pttl(name) <= 5000


def test_fair_lock(client, name):
    with client.lock(name, kind="fair") as lock:
        assert lock.is_held() and lock.kind == "FAIR"
    assert not client.is_locked(name, "fair")


def test_read_write_lock(client, name):
    readers_in = threading.Barrier(2, timeout=5)

    def reader():
        with client.lock(name, kind="read"):
            readers_in.wait()   # both readers hold it at once

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not readers_in.broken
    with client.lock(name, kind="write"):
        t = threading.Thread(target=lambda: got.append(client.try_lock(name, kind="read")))
        got = []
        t.start()
        t.join()
        assert got == [None]
    # a reader's upgrade to writer is refused, not waited for
    with client.lock(name, kind="read"):
        with pytest.raises(rlockd.InvalidRequest):
            client.try_lock(name, kind="write")


def test_fenced_lock_exposes_its_token(client, name):
    with client.lock(name, kind="fenced") as first:
        pass
    with client.lock(name, kind="FENCED") as second:
        with client.lock(name, kind="FENCED") as reentered:
            pass
    assert 0 < first.token < second.token < reentered.token == client.token(name)
    assert client.lock(name).token is None


def test_errors_mapped_to_exceptions(env, client, name):
    with pytest.raises(rlockd.NotOwner):
        client.lock(name).release()
    with pytest.raises(rlockd.InvalidRequest):
        client.lock(name, lease_ms=0).acquire()
    env.redis("SET", name + ":data", "not a lock")
    with pytest.raises(rlockd.WrongType):
        client.lock(name + ":data").acquire()
    with client.lock(name):
        with pytest.raises(rlockd.InvalidRequest):   # one owner, one kind
            client.lock(name, kind="fair").acquire()
    # the limit: max_held_locks_per_client 20
    held = [client.try_lock("%s:%d" % (name, i)) for i in range(20)]
    try:
        with pytest.raises(rlockd.LimitExceeded):
            client.try_lock(name + ":21")
    finally:
        for lock in held:
            lock.release()
    # a client-id in use: joining its session needs its secret
    with pytest.raises(rlockd.NoPermission):
        rlockd.Client(address(env), client_id=client.client_id)
    with pytest.raises(rlockd.ConnectionLost):
        rlockd.Client("127.0.0.1:%d" % harness.free_port())
    assert issubclass(rlockd.LockLost, rlockd.RlockError)


def test_lease_run_out_is_lock_lost_at_release(client, name):
    lock = client.lock(name, lease_ms=100)
    lock.acquire()
    harness.wait_until(lambda: not client.is_locked(name), 3, what="the lease to run out")
    with pytest.raises(rlockd.LockLost):
        lock.release()


def test_lost_lock_raises_the_event_within_a_second(env, client, lost, name):
    lost_channel_or_skip(env)
    assert client.lost_channel_ready.wait(2), client.lost_channel_error
    leased = client.lock(name, lease_ms=200)
    leased.acquire()
    assert leased.lost.wait(1.2), "no lost event within a second of the lease's end"
    forced = client.lock(name + ":forced", kind="fenced")
    forced.acquire()
    other = other_client(env)
    try:
        t0 = time.monotonic()
        assert other.force_unlock(name + ":forced", "fenced")
        assert forced.lost.wait(1.0), "no lost event within a second of FORCEUNLOCK"
        assert time.monotonic() - t0 < 1.0
    finally:
        other.close()
    events = lost.wait(1, count=2)
    assert [(e.name, e.kind) for e in events] == [(name, ""), (name + ":forced", "FENCED")]
    assert events[0].owner == "%s:%d" % (client.client_id, events[0].thread_id)
    for lock in (leased, forced):
        with pytest.raises(rlockd.LockLost):
            lock.release()


def test_connections_are_named_host_program_pid_for_client_list_and_owners(env, name):
    """The default name, "<host>/<program>/<pid>", on every connection;
    OWNERS ... WITHNAMES shows it for the lock's owner."""
    want = rlockd.core.default_client_name()
    assert want.startswith(socket.gethostname() + "/") and want.endswith("/%d" % os.getpid())
    c = rlockd.Client(address(env), heartbeat_ms=0, lost_events=False)
    try:
        with c.lock(name):
            assert ("name=%s " % want) in env.admin().call("CLIENT", "LIST")
            owners = env.admin().call("OWNERS", name, "WITHNAMES")
            assert owners[2] == "lock" and list(owners[3])[1::2] == [want]
    finally:
        c.close()
    c = rlockd.Client(address(env), heartbeat_ms=0, lost_events=False, client_name="jobs-7")
    try:
        c.is_locked(name)
        assert "name=jobs-7 " in env.admin().call("CLIENT", "LIST")
    finally:
        c.close()


USERS = {"server": {"auth_token": "admin-token"},
         "user worker": {"password_sha256": hashlib.sha256(b"worker-pw").hexdigest(),
                         "commands": "+@lock", "names": "orders-*"}}


def test_login_errors_name_what_to_set():
    env = start_env(USERS)
    try:
        for kwargs in ({}, {"username": "worker", "password": "wrong"}):
            with pytest.raises(rlockd.NoAuth) as e:
                rlockd.Client(address(env), heartbeat_ms=0, lost_events=False, **kwargs).is_locked("orders-1")
            assert str(e.value).endswith(": log in with username= and password= (a [user NAME] of rlockd), "
                                         "or password= alone (its auth_token)"), str(e.value)
        c = rlockd.Client(address(env), heartbeat_ms=0, lost_events=False, username="worker", password="worker-pw")
        try:
            assert c.is_locked("orders-1") is False
            with pytest.raises(rlockd.NoPermission) as e:
                c.is_locked("payroll")
            assert str(e.value).endswith(": the user lacks the command or the name: see its commands and "
                                         "names in rlockd's [user NAME]"), str(e.value)
        finally:
            c.close()
    finally:
        env.close()
