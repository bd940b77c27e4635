"""
client.py - the threaded client: one connection per thread (a LOCK blocks
its connection, and a redis-py connection is not safe to share), all of
one client-id and secret, so that they are one rlockd session; a
heartbeat thread; a thread listening on the lock-lost channel.

Never: retries a command by itself (after a broken connection its
outcome is unknown: the caller decides, as with librlock); sends a lock
command on a connection that has not said CLIENTID.
"""

import functools
import itertools
import logging
import threading
import time
import weakref

import redis

from . import core
from .core import HoldBook, Identity, Request
from .errors import ConnectionLost, NotAcquired, RlockError, from_redis
from .sync import CountDownLatch, Semaphore

log = logging.getLogger("rlockd")

DEFAULT_HEARTBEAT_MS = 10000  # librlock's: a hung process loses its locks in 10 s
REDIAL_S = 0.1                # a lost heartbeat or listener connection is dialled again this often


class _Identified:
    """A redis-py connection that says CLIENTID (after AUTH) before any
    other command, each time it (re)connects."""

    def __init__(self, *args, rlockd_client, **kwargs):
        super().__init__(*args, **kwargs)
        # weak: a connection must not keep a forgotten client alive
        self._rlockd_client = weakref.ref(rlockd_client)

    def on_connect(self):
        super().on_connect()
        client = self._rlockd_client()
        try:
            if client is None:
                raise ConnectionLost("the client was closed")
            core.drive(core.identify_steps(client.identity, client.book),
                       lambda rq: exchange(self, rq, client.command_timeout))
        except BaseException:
            self.disconnect()
            raise


class _TcpConnection(_Identified, redis.Connection):
    pass


class _UnixConnection(_Identified, redis.UnixDomainSocketConnection):
    pass


class _TlsConnection(_Identified, redis.SSLConnection):
    pass


CONNECTION_CLASSES = {"tcp": _TcpConnection, "unix": _UnixConnection, "tls": _TlsConnection}


def exchange(conn, request, command_timeout):
    """Sends one request on conn and reads its reply, waiting as long as
    the request may wait for its lock plus the reply time."""
    try:
        conn.send_command(*request.args, check_health=False)
        # after sending: a reconnect inside send_command sets its own
        conn._sock.settimeout(core.reply_timeout(request, command_timeout))
        return conn.read_response()
    except redis.RedisError as e:
        raise from_redis(e) from None


def _drop_if_dead(conn):
    """Closes a connection rlockd has closed (it restarted), or that has
    bytes nobody asked for, so that its next command reconnects (resuming
    the session) instead of failing on it. True when conn is closed."""
    if conn._sock is None:
        return True
    try:
        stale = conn.can_read(timeout=0)
    except redis.RedisError:
        stale = True
    if stale:
        conn.disconnect()
    return stale


class _ThreadState:
    def __init__(self, thread_id, conn):
        self.thread_id = thread_id
        self.conn = conn


class Lock(core.LockBase):
    """A lock of a Client. `with lock:` acquires (raising NotAcquired when
    wait_ms ran out) and releases; acquire() and release() do it by hand.
    Reentrant: the thread that holds it may acquire it again, and must
    release it as often."""

    def acquire(self):
        """True when held; False when wait_ms ran out first."""
        return self._took(self._client._acquire(self.name, self.kind, self.wait_ms,
                                                  self.lease_ms))

    def release(self):
        """True when released, False when this thread still holds it
        (reentrant). LockLost: it was lost while held."""
        return self._client._release(self.name, self.kind)

    def is_held(self):
        """Whether this thread holds it (asks rlockd)."""
        return self._client._query("ISHELD", self.name, self.kind, with_thread=True) == 1

    def hold_count(self):
        return self._client._query("HOLDCOUNT", self.name, self.kind, with_thread=True)

    def __enter__(self):
        if not self.acquire():
            raise NotAcquired("%r not acquired within %s ms" % (self.name, self.wait_ms))
        return self

    def __exit__(self, *exc):
        self.release()
        return False


class Client:
    """A client of rlockd, safe to share between threads: each thread
    gets its own connection and thread-id, all under one client-id.

    heartbeat_ms: CLIENT HEARTBEAT interval (None or 0: none); rlockd ends
    the session of a process that is hung that long. on_lost: called with
    a LostEvent for every hold lost while held (from another thread).
    lost_events=False: no lock-lost channel listener. username and
    password: a [user NAME] of rlockd (password alone: its auth_token).
    client_name: what CLIENT LIST, OWNERS ... WITHNAMES and rlockd's log
    call this client's connections (None: "<host>/<program>/<pid>"; "":
    no name). tls=True: TLS to rlockd's [server] tls_listen, its
    certificate verified for the address's host against tls_ca_file
    (None: the system's trust store); tls_cert_file and tls_key_file: a
    client certificate."""

    def __init__(self, address=None, *, client_id=None, username=None,
                 password=None, heartbeat_ms=DEFAULT_HEARTBEAT_MS, on_lost=None,
                 lost_events=True, connect_timeout=2.0, command_timeout=10.0, client_name=None,
                 tls=False, tls_ca_file=None, tls_cert_file=None, tls_key_file=None):
        self.identity = Identity.new(client_id)
        self.command_timeout = command_timeout
        self.heartbeat_ms = heartbeat_ms or 0
        self.book = HoldBook(self.identity, threading.Event, self._tell_lost)
        self._callbacks = [on_lost] if on_lost else []
        kwargs, transport = core.connection_kwargs(
            address, username, password, connect_timeout, command_timeout, client_name,
            core.tls_settings(tls, tls_ca_file, tls_cert_file, tls_key_file))
        cls = CONNECTION_CLASSES[transport]
        self._new_conn = lambda: cls(rlockd_client=self, **kwargs)
        self._local = threading.local()
        self._thread_ids = itertools.count(1)
        self._conns = weakref.WeakSet()  # every open connection, for close()
        self._closing = threading.Event()
        self._threads = []
        self.lost_channel_ready = threading.Event()
        self.lost_channel_error = None
        try:
            # the caller's connection, and the first beat, now: a wrong
            # address or interval fails here, not at the first lock
            self._send(Request(("PING",)))
            if self.heartbeat_ms:
                conn = self._open()
                exchange(conn, self._beat_request(), command_timeout)
                self._start(self._heartbeat_main, conn)
            if lost_events:
                pool = redis.ConnectionPool(connection_class=cls, rlockd_client=self, **kwargs)
                self._start(self._listen_main, pool)
        except BaseException:
            self.close()
            raise

    @property
    def client_id(self):
        return self.identity.client_id

    def add_lost_callback(self, callback):
        self._callbacks.append(callback)

    # -- the API

    def lock(self, name, *, kind=None, timeout=None, lease=None, lease_ms=None, wait_ms=None):
        """A Lock; `with client.lock(name):` holds it for the block.
        lease (seconds) or lease_ms, None: kept alive by rlockd's watchdog
        while this client lives; else it expires after that. timeout
        (seconds) or wait_ms, None: wait as long as it takes; else at most
        that long (0: one attempt)."""
        return Lock(self, name, kind, core.ms_of(lease, lease_ms, "lease"),
                    core.ms_of(timeout, wait_ms, "timeout"))

    def try_lock(self, name, *, kind=None, timeout=None, lease=None, lease_ms=None, wait_ms=None):
        """The acquired Lock, or None when the timeout (default 0: one
        attempt) ran out."""
        wait_ms = core.ms_of(timeout, wait_ms, "timeout")
        lock = Lock(self, name, kind, core.ms_of(lease, lease_ms, "lease"),
                    0 if wait_ms is None else wait_ms)
        return lock if lock.acquire() else None

    def locked(self, name, **options):
        """A decorator: the function runs holding the lock (lock()'s
        options), released when it returns or raises; NotAcquired when the
        timeout ran out first."""
        def decorate(fn):
            @functools.wraps(fn)
            def run(*args, **kwargs):
                with self.lock(name, **options):
                    return fn(*args, **kwargs)
            return run
        return decorate

    def owners(self, name, kind=None):
        """Who holds the lock, an Owners; without kind, the lock whatever
        its kind."""
        return core.parse_owners(self._query("OWNERS", name, kind))

    def semaphore(self, name):
        """Redisson's RSemaphore of that name (rlockd.sync.Semaphore)."""
        return Semaphore(self, name)

    def latch(self, name):
        """Redisson's RCountDownLatch of that name."""
        return CountDownLatch(self, name)

    def force_unlock(self, name, kind=None):
        """Deletes the lock whoever holds it; True if there was one."""
        return self._query("FORCEUNLOCK", name, kind) == 1

    def is_locked(self, name, kind=None):
        return self._query("ISLOCKED", name, kind) == 1

    def pttl(self, name, kind=None):
        """Milliseconds the lock has left, -2 when there is no lock."""
        return self._query("PTTL", name, kind)

    def token(self, name):
        """The latest fencing token of FENCED lock name (0: none)."""
        return self._query("TOKEN", name, None)

    def close(self):
        """Stops the threads and closes every connection: rlockd ends the
        session, which releases (or lets expire) the locks still held."""
        self._closing.set()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
        for conn in list(self._conns):
            conn.disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- the calling thread's connection

    def _open(self):
        conn = self._new_conn()
        self._conns.add(conn)
        return conn

    def _state(self):
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = _ThreadState(next(self._thread_ids), self._open())
        return state

    def _send(self, request):
        if self._closing.is_set():
            raise RlockError("the client is closed")
        state = self._state()
        _drop_if_dead(state.conn)
        try:
            return exchange(state.conn, request, self.command_timeout)
        except ConnectionLost:
            state.conn.disconnect()
            self.book.mark_suspect(state.thread_id)
            raise

    def _key(self, name, kind):
        return (self._state().thread_id, name, kind)

    def _acquire(self, name, kind, wait_ms, lease_ms):
        return core.drive(core.acquire_steps(self.book, self._key(name, kind), wait_ms, lease_ms),
                          self._send)

    def _release(self, name, kind):
        return core.drive(core.release_steps(self.book, self._key(name, kind)), self._send)

    def _query(self, command, name, kind, with_thread=False):
        kind = core.kind_word(kind)
        args = (command, name) + ((self._state().thread_id,) if with_thread else ())
        return self._send(Request(args + ((kind,) if kind else ())))

    # -- the background threads

    def _start(self, main, arg):
        t = threading.Thread(target=main, args=(arg,), name="rlockd-" + main.__name__.strip("_"),
                             daemon=True)
        self._threads.append(t)
        t.start()

    def _beat_request(self):
        return Request(("CLIENT", "HEARTBEAT", self.heartbeat_ms))

    def _heartbeat_main(self, conn):
        """Beats every third of the interval. A connection rlockd closed
        is dialled again at once, and every REDIAL_S until it answers:
        after an rlockd restart that resumes the session within REDIAL_S
        of its start, before the program's next call."""
        due = time.monotonic() + self.heartbeat_ms / 3000
        while not self._closing.wait(REDIAL_S):
            if not _drop_if_dead(conn) and time.monotonic() < due:
                continue
            try:
                exchange(conn, self._beat_request(), self.command_timeout)
                due = time.monotonic() + self.heartbeat_ms / 3000
            except RlockError as e:
                conn.disconnect()
                log.debug("rlockd heartbeat: %s", e)
        conn.disconnect()

    def _listen_main(self, pool):
        """Subscribes to the lock-lost channel on a connection of its own
        and feeds its messages to the record of holds, subscribing again
        after a lost connection. A refused SUBSCRIBE (an rlockd without
        the channel) ends it, saying so in lost_channel_error."""
        channel = core.lost_channel(self.client_id)
        while not self._closing.is_set():
            pubsub = redis.Redis(connection_pool=pool).pubsub()
            try:
                pubsub.subscribe(channel)
                while not self._closing.is_set():
                    core.on_pubsub_message(pubsub.get_message(timeout=0.2), self.book,
                                            self.lost_channel_ready)
            except redis.ResponseError as e:
                self.lost_channel_error = "SUBSCRIBE %s refused: %s" % (channel, e)
                log.warning("rlockd: no lock-lost events: %s", self.lost_channel_error)
                return
            except (redis.RedisError, RlockError) as e:
                self.lost_channel_ready.clear()
                log.debug("rlockd lock-lost listener: %s", e)
                self._closing.wait(REDIAL_S)
            finally:
                pubsub.close()
                pool.disconnect()

    def _tell_lost(self, event):
        core.notify(self._callbacks, event)
