"""The asyncio client against a real rlockd and redis-server."""

import asyncio
import time

import pytest
import redis.asyncio.client

import rlockd
from conftest import address, lost_channel_or_skip


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def new_client(env, **kwargs):
    return rlockd.AsyncClient(address(env), **kwargs)


def test_async_with_under_concurrency_never_overlaps(env, name):
    """20 tasks x 20 locks: each task its own thread-id, entries and exits
    never interleave."""
    async def main():
        journal = []
        async with new_client(env) as client:
            async def worker(n):
                for _ in range(20):
                    async with client.lock(name):
                        journal.append(("in", n))
                        await asyncio.sleep(0)
                        journal.append(("out", n))
            await asyncio.gather(*(worker(n) for n in range(20)))
        return journal
    journal = run(main())
    assert len(journal) == 800
    for i in range(0, 800, 2):
        assert journal[i][0] == "in" and journal[i + 1] == ("out", journal[i][1]), journal[i:i + 4]


def test_reentrant_per_task_not_across_tasks(env, name):
    async def main():
        async with new_client(env) as client:
            async with client.lock(name) as outer:
                async with client.lock(name):
                    assert await outer.hold_count() == 2
                other_task = asyncio.create_task(client.try_lock(name))
                assert await other_task is None
            assert not await client.is_locked(name)
    run(main())


def test_try_lock_timeout_and_kinds(env, name):
    async def main():
        async with new_client(env) as client, new_client(env, heartbeat_ms=0) as other:
            held = await other.try_lock(name)
            t0 = time.monotonic()
            assert await client.try_lock(name, wait_ms=200) is None
            assert time.monotonic() - t0 >= 0.15
            with pytest.raises(rlockd.NotAcquired):
                async with client.lock(name, wait_ms=0):
                    pass
            await held.release()
            async with client.lock(name, kind="fenced") as a:
                pass
            async with client.lock(name, kind="FENCED") as b:
                assert b.token > a.token
            async with client.lock(name + "rw", kind="read"):
                assert await other.try_lock(name + "rw", kind="read") is not None
            async with client.lock(name + "f", kind="fair", lease_ms=3000):
                assert 0 < await client.pttl(name + "f", "fair") <= 3000
            with pytest.raises(rlockd.NotOwner):
                await client.lock(name).release()
    run(main())


def test_cancelled_wait_leaves_nothing_held(env, name):
    async def main():
        async with new_client(env) as client, new_client(env, heartbeat_ms=0) as other:
            held = await other.try_lock(name)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(client.lock(name).acquire(), 0.2)
            await held.release()
            await asyncio.sleep(0.3)       # the settle, had the LOCK been granted
            assert not await client.is_locked(name)
            async with client.lock(name):   # the client is still usable
                pass
    run(main())


def test_lost_lock_raises_the_event_within_a_second(env, name):
    lost_channel_or_skip(env)

    async def main():
        events = []
        async with new_client(env, on_lost=events.append) as client:
            await asyncio.wait_for(client.lost_channel_ready.wait(), 2)
            lock = client.lock(name, lease_ms=200)
            await lock.acquire()
            await asyncio.wait_for(lock.lost.wait(), 1.2)
            assert [e.name for e in events] == [name]
            # rlockd counts the lease from its request, Redis from the
            # script's run: on a loaded machine the event can come while the
            # key still lives, and an UNLOCK then rightly releases it.
            deadline = time.monotonic() + 5
            while env.redis("EXISTS", name) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert not env.redis("EXISTS", name), "the leased key outlived its lease"
            with pytest.raises(rlockd.LockLost):
                await lock.release()
    run(main())


def test_close_ends_a_listener_whose_cancel_was_lost(env, monkeypatch):
    """async-timeout 4.0.2 (under redis-py 4.3's reads) turns a cancel that
    meets its own timer in one loop turn into TimeoutError, which
    get_message(timeout=) reads as "no message". close() still returns."""
    lost_channel_or_skip(env)
    get_message = redis.asyncio.client.PubSub.get_message
    swallowed = []

    async def losing_one_cancel(self, *args, **kwargs):
        try:
            return await get_message(self, *args, **kwargs)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed.append(True)
            return None
    monkeypatch.setattr(redis.asyncio.client.PubSub, "get_message", losing_one_cancel)

    async def main():
        client = await new_client(env).start()
        await asyncio.wait_for(client.lost_channel_ready.wait(), 2)
        await asyncio.wait_for(client.close(), 5)
        assert swallowed == [True]
    run(main())


def test_async_restart_resumes(fresh_env, name):
    async def main():
        async with new_client(fresh_env) as client:
            lock = client.lock(name)
            await lock.acquire()
            # in a thread, so that the loop sees the connections close meanwhile
            await asyncio.to_thread(fresh_env.rlockd.stop)
            await asyncio.to_thread(fresh_env.rlockd.start)
            await asyncio.sleep(fresh_env.watchdog_ms / 1000 * 1.5)   # past the TTL: renewed again
            assert fresh_env.redis_hash(name), "the lock is gone from Redis"
            assert await lock.release() is True
    run(main())
