"""
aio.py - the asyncio client: each task its own thread-id, the client's
connections lent to one command at a time (a waiting LOCK keeps its
connection until answered), all of one client-id and secret; a heartbeat
task and a lock-lost listener task. The steps of each call are core's,
as for the threaded client.

Never: returns to the pool a connection with a reply still due (redis-py
closes a connection whose command was cancelled); retries a command.
"""

import asyncio
import itertools
import logging
import weakref

import redis.asyncio

from . import core
from .client import DEFAULT_HEARTBEAT_MS, REDIAL_S
from .core import HoldBook, Identity, Request
from .errors import ConnectionLost, NotAcquired, RlockError, from_redis

log = logging.getLogger("rlockd")

# How long a cancelled LOCK's connection close gets to reach rlockd before
# the client asks what it was granted (docs/protocol.md section 9: the
# count is the truth).
SETTLE_DELAY_S = 0.05


class _Identified:
    """An asyncio redis-py connection that says CLIENTID (after AUTH)
    before any other command, each time it (re)connects."""

    def __init__(self, *args, rlockd_client, **kwargs):
        super().__init__(*args, **kwargs)
        self._rlockd_client = weakref.ref(rlockd_client)

    async def on_connect(self):
        await super().on_connect()
        client = self._rlockd_client()
        try:
            if client is None:
                raise ConnectionLost("the client was closed")
            await core.drive_async(core.identify_steps(client.identity, client.book),
                                   lambda rq: exchange(self, rq, client.command_timeout))
        except BaseException:
            await self.disconnect()
            raise


class _TcpConnection(_Identified, redis.asyncio.Connection):
    pass


class _UnixConnection(_Identified, redis.asyncio.UnixDomainSocketConnection):
    pass


class _TlsConnection(_Identified, redis.asyncio.SSLConnection):
    pass


CONNECTION_CLASSES = {"tcp": _TcpConnection, "unix": _UnixConnection, "tls": _TlsConnection}


async def exchange(conn, request, command_timeout):
    try:
        await conn.send_command(*request.args, check_health=False)
        # after sending: a reconnect inside send_command sets its own
        conn.socket_timeout = core.reply_timeout(request, command_timeout)
        return await conn.read_response()
    except redis.RedisError as e:
        raise from_redis(e) from None


async def _drop_if_dead(conn):
    """client._drop_if_dead's twin: True when conn is closed, after closing
    it if rlockd has (the loop has seen its end of stream)."""
    if not conn.is_connected:
        return True
    if conn._reader.at_eof():
        await conn.disconnect()
        return True
    return False


class AsyncLock(core.LockBase):
    """A lock of an AsyncClient: `async with lock:`, or acquire() and
    release(). Reentrant per task."""

    async def acquire(self):
        """True when held; False when wait_ms ran out first."""
        return self._took(await self._client._acquire(self.name, self.kind, self.wait_ms,
                                                  self.lease_ms))

    async def release(self):
        """True when released, False when this task still holds it."""
        return await self._client._release(self.name, self.kind)

    async def is_held(self):
        return await self._client._query("ISHELD", self.name, self.kind, with_thread=True) == 1

    async def hold_count(self):
        return await self._client._query("HOLDCOUNT", self.name, self.kind, with_thread=True)

    async def __aenter__(self):
        if not await self.acquire():
            raise NotAcquired("%r not acquired within %s ms" % (self.name, self.wait_ms))
        return self

    async def __aexit__(self, *exc):
        await self.release()
        return False


class AsyncClient:
    """The asyncio client; the arguments are Client's. Start it with
    `async with AsyncClient(...) as client:` or `await client.start()`."""

    def __init__(self, address=None, *, client_id=None, username=None,
                 password=None, heartbeat_ms=DEFAULT_HEARTBEAT_MS, on_lost=None,
                 lost_events=True, connect_timeout=2.0, command_timeout=10.0, client_name=None,
                 tls=False, tls_ca_file=None, tls_cert_file=None, tls_key_file=None):
        self.identity = Identity.new(client_id)
        self.command_timeout = command_timeout
        self.heartbeat_ms = heartbeat_ms or 0
        self.lost_events = lost_events
        self.book = HoldBook(self.identity, asyncio.Event, self._tell_lost)
        self._callbacks = [on_lost] if on_lost else []
        self._kwargs, transport = core.connection_kwargs(
            address, username, password, connect_timeout, command_timeout, client_name,
            core.tls_settings(tls, tls_ca_file, tls_cert_file, tls_key_file))
        self._cls = CONNECTION_CLASSES[transport]
        self._idle = []                              # connections free for a command
        self._all = weakref.WeakSet()
        self._task_ids = weakref.WeakKeyDictionary()  # task -> thread-id
        self._thread_ids = itertools.count(1)
        self._tasks = []
        self._closed = False
        self.lost_channel_ready = asyncio.Event()
        self.lost_channel_error = None

    @property
    def client_id(self):
        return self.identity.client_id

    def add_lost_callback(self, callback):
        self._callbacks.append(callback)

    async def start(self):
        """Connects, beats once, and starts the background tasks."""
        try:
            await self._send(Request(("PING",)))
            if self.heartbeat_ms:
                conn = self._open()
                await exchange(conn, self._beat_request(), self.command_timeout)
                self._tasks.append(asyncio.create_task(self._heartbeat_main(conn)))
            if self.lost_events:
                pool = redis.asyncio.ConnectionPool(connection_class=self._cls, rlockd_client=self,
                                                    **self._kwargs)
                self._tasks.append(asyncio.create_task(self._listen_main(pool)))
        except BaseException:
            await self.close()
            raise
        return self

    async def close(self):
        # The background tasks also stop on _closed at their next turn: a
        # cancel alone can be lost. async-timeout 4.0.2 (Debian 12's, under
        # redis-py 4.3's reads) turns a cancel that lands in the same loop
        # turn as its own timer into TimeoutError, which get_message(timeout=)
        # reads as "no message": the listener then polled forever (3 closes
        # in 15 under two busy loops; async-timeout 4.0.3 fixed it).
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for conn in list(self._all):
            await conn.disconnect()

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.close()
        return False

    # -- the API: Client's, awaited

    def lock(self, name, *, kind=None, timeout=None, lease=None, lease_ms=None, wait_ms=None):
        return AsyncLock(self, name, kind, core.ms_of(lease, lease_ms, "lease"),
                         core.ms_of(timeout, wait_ms, "timeout"))

    async def try_lock(self, name, *, kind=None, timeout=None, lease=None, lease_ms=None,
                       wait_ms=None):
        wait_ms = core.ms_of(timeout, wait_ms, "timeout")
        lock = AsyncLock(self, name, kind, core.ms_of(lease, lease_ms, "lease"),
                         0 if wait_ms is None else wait_ms)
        return lock if await lock.acquire() else None

    async def owners(self, name, kind=None):
        return core.parse_owners(await self._query("OWNERS", name, kind))

    async def force_unlock(self, name, kind=None):
        return await self._query("FORCEUNLOCK", name, kind) == 1

    async def is_locked(self, name, kind=None):
        return await self._query("ISLOCKED", name, kind) == 1

    async def pttl(self, name, kind=None):
        return await self._query("PTTL", name, kind)

    async def token(self, name):
        return await self._query("TOKEN", name, None)

    # -- connections and thread-ids

    def _open(self):
        conn = self._cls(rlockd_client=self, **self._kwargs)
        self._all.add(conn)
        return conn

    def _thread_id(self):
        task = asyncio.current_task()
        tid = self._task_ids.get(task)
        if tid is None:
            tid = self._task_ids[task] = next(self._thread_ids)
        return tid

    async def _send(self, request, thread_id=None):
        """request on an idle connection (a new one if none is idle)."""
        if self._closed:
            raise RlockError("the client is closed")
        conn = self._idle.pop() if self._idle else self._open()
        await _drop_if_dead(conn)
        try:
            return await exchange(conn, request, self.command_timeout)
        except ConnectionLost:
            if thread_id is not None:
                self.book.mark_suspect(thread_id)
            raise
        finally:
            # closed by redis-py if broken or cancelled: it reconnects when next used
            self._idle.append(conn)

    def _key(self, name, kind):
        return (self._thread_id(), name, kind)

    async def _acquire(self, name, kind, wait_ms, lease_ms):
        key = self._key(name, kind)
        try:
            return await core.drive_async(core.acquire_steps(self.book, key, wait_ms, lease_ms),
                                          lambda rq: self._send(rq, key[0]))
        except asyncio.CancelledError:
            # Its connection was closed, which cancels a waiting LOCK; one
            # granted just before is released.
            asyncio.create_task(self._settle(key))
            raise

    async def _settle(self, key):
        thread_id, name, kind = key
        try:
            await asyncio.sleep(SETTLE_DELAY_S)
            granted = await self._send(Request(core.lock_args("HOLDCOUNT", name, thread_id, kind)))
            hold = self.book.get(key)
            for _ in range(granted - (hold.count if hold else 0)):
                await self._send(Request(core.lock_args("UNLOCK", name, thread_id, kind)))
        except RlockError as e:
            log.warning("rlockd: could not settle cancelled acquire of %r: %s", name, e)

    async def _release(self, name, kind):
        key = self._key(name, kind)
        return await core.drive_async(core.release_steps(self.book, key),
                                      lambda rq: self._send(rq, key[0]))

    async def _query(self, command, name, kind, with_thread=False):
        kind = core.kind_word(kind)
        args = (command, name) + ((self._thread_id(),) if with_thread else ())
        return await self._send(Request(args + ((kind,) if kind else ())))

    # -- the background tasks

    def _beat_request(self):
        return Request(("CLIENT", "HEARTBEAT", self.heartbeat_ms))

    async def _heartbeat_main(self, conn):
        """As Client's: a beat every third of the interval, and at once
        on a connection rlockd closed."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self.heartbeat_ms / 3000
        while not self._closed:
            await asyncio.sleep(REDIAL_S)
            if not await _drop_if_dead(conn) and loop.time() < due:
                continue
            try:
                await exchange(conn, self._beat_request(), self.command_timeout)
                due = loop.time() + self.heartbeat_ms / 3000
            except RlockError as e:
                await conn.disconnect()
                log.debug("rlockd heartbeat: %s", e)

    async def _listen_main(self, pool):
        channel = core.lost_channel(self.client_id)
        while not self._closed:
            pubsub = redis.asyncio.Redis(connection_pool=pool).pubsub()
            try:
                await pubsub.subscribe(channel)
                while not self._closed:
                    core.on_pubsub_message(await pubsub.get_message(timeout=0.2), self.book,
                                            self.lost_channel_ready)
            except redis.ResponseError as e:
                self.lost_channel_error = "SUBSCRIBE %s refused: %s" % (channel, e)
                log.warning("rlockd: no lock-lost events: %s", self.lost_channel_error)
                return
            except (redis.RedisError, RlockError) as e:
                self.lost_channel_ready.clear()
                log.debug("rlockd lock-lost listener: %s", e)
                await asyncio.sleep(REDIAL_S)
            finally:
                await pubsub.reset()
                await pool.disconnect()

    def _tell_lost(self, event):
        core.notify(self._callbacks, event)
