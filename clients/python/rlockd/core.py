"""
core.py - what the threaded and the asyncio clients share, with no I/O:
addresses, the client's identity, the kinds, the record of holds (which
turns a lost connection or a lost session into LockLost), the lock-lost
channel's messages, and each call's conversation with rlockd written as
a generator of requests (so that both clients run the same steps, one
with blocking calls, the other with awaits).

Never: touches a socket, or decides how a request is sent.
"""

import asyncio
import dataclasses
import json
import logging
import os
import re
import secrets
import socket
import sys
import threading
import time
import uuid

from .errors import LockLost, NotOwner, RlockError, Unavailable

log = logging.getLogger("rlockd")

# The lock kinds by the words a caller may use (any case); the value is
# rlockd's word, "" for Redisson's plain RLock (no word sent).
KINDS = {"": "", "LOCK": "", "PLAIN": "", "FAIR": "FAIR", "READ": "READ",
         "WRITE": "WRITE", "FENCED": "FENCED"}

# Requests that may wait for a lock carry how long: FOREVER, or a WAIT.
FOREVER = -1
DEFAULT_ADDRESS = "127.0.0.1:7379"


def ms_of(seconds, ms, what):
    """A duration given in seconds (float) or in ms, as ms (None: none
    given); both at once is a mistake."""
    if seconds is not None and ms is not None:
        raise ValueError("give %s in seconds or %s_ms, not both" % (what, what))
    return ms if seconds is None else int(round(seconds * 1000))


@dataclasses.dataclass(frozen=True)
class Owners:
    """OWNERS' answer: the lock's PTTL in ms (-2: no lock), the kind it is
    held as ("lock": a plain, fair or fenced lock; "read", "write";
    "none"; None from an older rlockd) and (owner, holds) pairs."""

    pttl_ms: int
    kind: str
    owners: list


def parse_owners(reply):
    pairs = reply[1]
    if isinstance(pairs, dict):  # RESP3
        pairs = [x for kv in pairs.items() for x in kv]
    return Owners(reply[0], reply[2] if len(reply) > 2 else None,
                  [(pairs[i], int(pairs[i + 1])) for i in range(0, len(pairs), 2)])


def kind_word(kind):
    """rlockd's word for a kind given as None, "fair", "READ", ..."""
    try:
        return KINDS[(kind or "").upper()]
    except (KeyError, AttributeError):
        raise ValueError("unknown lock kind %r: one of %s" % (kind, ", ".join(sorted(KINDS)))) from None


def parse_address(address):
    """("tcp", host, port) for "host:port" or "[v6]:port", ("unix", path,
    None) for "unix:/path"."""
    if address.startswith("unix:"):
        if len(address) == 5:
            raise ValueError("no path in %r" % address)
        return "unix", address[5:], None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("rlockd address %r is not host:port or unix:/path" % address)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return "tcp", host, int(port)


def default_client_name():
    """"<host>/<program>/<pid>", the name rlockd's CLIENT LIST, OWNERS ...
    WITHNAMES and log show for this process's connections; a character a
    client name may not hold (space, control) becomes "_"."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    name = "%s/%s/%d" % (socket.gethostname(), program, os.getpid())
    return re.sub(r"[^\x21-\x7e]", "_", name)


def connection_kwargs(address, username, password, connect_timeout, command_timeout,
                      client_name=None, tls=None):
    """redis-py connection arguments for an rlockd address, and its
    transport ("tcp", "tls" or "unix": which connection class takes them).
    address None: $RLOCK_ADDR, else 127.0.0.1:7379; no username and no
    password: $RLOCK_USER and $RLOCK_PASSWORD (a login), else $RLOCK_AUTH
    (rlockd's auth_token), as the rlock command. client_name None:
    default_client_name(); "": none. tls: None, or (ca_file, cert_file,
    key_file) for rlockd's [server] tls_listen: its certificate verified,
    for the address's host, against ca_file (None: the system's trust
    store)."""
    address = address or os.environ.get("RLOCK_ADDR") or DEFAULT_ADDRESS
    if username is None and password is None:
        username = os.environ.get("RLOCK_USER") or None
        password = (os.environ.get("RLOCK_PASSWORD") if username
                    else os.environ.get("RLOCK_AUTH")) or None
    transport, where, port = parse_address(address)
    kwargs = dict(username=username, password=password, socket_timeout=command_timeout,
                  socket_connect_timeout=connect_timeout, decode_responses=True,
                  client_name=default_client_name() if client_name is None else client_name or None)
    if transport == "unix":
        if tls is not None:
            raise ValueError("TLS needs a host:port address, not %r" % address)
        return dict(kwargs, path=where), "unix"
    # keepalive: a LOCK waiting with no timeout notices a vanished host
    kwargs = dict(kwargs, host=where, port=port, socket_keepalive=True)
    if tls is None:
        return kwargs, "tcp"
    ca_file, cert_file, key_file = tls
    return dict(kwargs, ssl_ca_certs=ca_file, ssl_certfile=cert_file, ssl_keyfile=key_file,
                ssl_cert_reqs="required", ssl_check_hostname=True), "tls"


def tls_settings(tls, ca_file, cert_file, key_file):
    """connection_kwargs' tls from a client's arguments."""
    return (ca_file, cert_file, key_file) if tls else None


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who a client is to rlockd: its client-id, and the random secret
    that lets only this client's connections join (or resume) its
    session, so that knowing the id, which is visible in Redis, gives no
    access to its locks."""

    client_id: str
    secret: str

    @classmethod
    def new(cls, client_id=None):
        return cls(client_id or str(uuid.uuid4()), secrets.token_hex(24))

    def clientid_args(self, resume):
        return ("CLIENTID", self.client_id, "SECRET", self.secret) + (("RESUME",) if resume else ())


@dataclasses.dataclass(frozen=True)
class LostEvent:
    """One lost hold: the lock's name and kind ("" for the plain lock),
    its owner "<client-id>:<thread-id>", and why (rlockd's reason, or
    "session not resumed" when the client found its session gone)."""

    name: str
    kind: str
    owner: str
    thread_id: int
    reason: str


def lost_channel(client_id):
    return "rlockd:lost:" + client_id


def parse_lost_message(data):
    """The LostEvent in a lock-lost channel message's payload (JSON text
    or bytes); ValueError when it is not one."""
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    try:
        fields = json.loads(data)
    except json.JSONDecodeError as e:
        raise ValueError("lock-lost message is not JSON: %s" % e) from None
    if not isinstance(fields, dict):
        raise ValueError("lock-lost message is not a JSON object: %r" % (data,))
    want = {"name": str, "kind": str, "owner": str, "thread_id": int, "reason": str}
    for key, typ in want.items():
        value = fields.get(key)
        # bool is an int in Python, never a thread-id
        if not isinstance(value, typ) or isinstance(value, bool):
            raise ValueError("lock-lost message: %r is not a %s in %r" % (key, typ.__name__, data))
    if fields["kind"] not in KINDS.values():
        raise ValueError("lock-lost message: unknown kind %r" % fields["kind"])
    return LostEvent(**{k: fields[k] for k in want})


def on_pubsub_message(message, book, ready):
    """One message from the lock-lost channel's redis-py PubSub (None:
    nothing came): the subscription's confirmation sets ready; a lost hold
    goes to the book; a malformed one is logged and dropped."""
    if message is None:
        return
    if message["type"] == "subscribe":
        ready.set()
    elif message["type"] == "message":
        try:
            event = parse_lost_message(message["data"])
        except ValueError as e:
            log.warning("rlockd: %s", e)
            return
        book.report(event)


def notify(callbacks, event):
    """Calls each lost-lock callback; one that fails is logged, and the
    others are still called. A coroutine returned (an async callback of
    the asyncio client) is run as a task."""
    for callback in list(callbacks):
        try:
            result = callback(event)
            if asyncio.iscoroutine(result):
                asyncio.ensure_future(result)
        except Exception:
            log.exception("rlockd: lost-lock callback %r failed", callback)


class Hold:
    """A lock a thread-id of this client holds, as far as the client knows.
    `lost` is set once it is known lost."""

    def __init__(self, key, lost_flag):
        self.thread_id, self.name, self.kind = key
        self.count = 0
        self.token = None
        self.lost = lost_flag
        # Its thread's connection broke: a later -NOTOWNER means it was lost.
        self.suspect = False
        # rlockd had no session to give back: LockLost without asking.
        self.gone = False


class HoldBook:
    """Every hold of one client, by (thread-id, name, kind). new_flag makes
    a hold's `lost` flag (a threading.Event or an asyncio.Event);
    on_lost(event) is called for each hold found lost, outside the lock."""

    def __init__(self, identity, new_flag, on_lost):
        self.identity = identity
        self._new_flag = new_flag
        self._on_lost = on_lost
        self._mutex = threading.Lock()
        self._holds = {}

    def get(self, key):
        with self._mutex:
            return self._holds.get(key)

    def any_held(self):
        with self._mutex:
            return bool(self._holds)

    def acquired(self, key, token):
        with self._mutex:
            hold = self._holds.get(key)
            if hold is None:
                hold = self._holds[key] = Hold(key, self._new_flag())
            hold.count += 1
            hold.token = token
            return hold

    def released(self, key, fully):
        with self._mutex:
            hold = self._holds.get(key)
            if hold is not None:
                hold.count -= 1
                if fully or hold.count <= 0:
                    del self._holds[key]

    def forget(self, key):
        with self._mutex:
            self._holds.pop(key, None)

    def mark_suspect(self, thread_id):
        with self._mutex:
            for hold in self._holds.values():
                if hold.thread_id == thread_id:
                    hold.suspect = True

    def session_lost(self, reason="session not resumed"):
        """rlockd had no session to give back: every hold is gone."""
        with self._mutex:
            holds = list(self._holds.values())
            for hold in holds:
                hold.gone = True
        for hold in holds:
            self._tell(hold, LostEvent(hold.name, hold.kind, self._owner(hold.thread_id),
                                       hold.thread_id, reason))

    def report(self, event):
        """A message of the lock-lost channel. Told once per hold: a hold
        already known lost is not told again; one the client no longer
        records (its UNLOCK already answered LOCKLOST) is told."""
        hold = self.get((event.thread_id, event.name, event.kind))
        self._tell(hold, event)

    def _owner(self, thread_id):
        return "%s:%d" % (self.identity.client_id, thread_id)

    def _tell(self, hold, event):
        if hold is not None:
            if hold.lost.is_set():
                return
            hold.lost.set()
        self._on_lost(event)


@dataclasses.dataclass(frozen=True)
class Request:
    """One command for rlockd; wait_ms: how long it may wait for a lock
    beyond the usual reply time (FOREVER: no limit)."""

    args: tuple
    wait_ms: int = 0


@dataclasses.dataclass(frozen=True)
class Pause:
    """A step that sends nothing: the driver sleeps this long, then goes on."""

    seconds: float


def reply_timeout(request, command_timeout):
    """Seconds to wait for request's reply: as long as it may wait for its
    lock, plus the usual reply time; None: no limit."""
    if request.wait_ms == FOREVER:
        return None
    return command_timeout + request.wait_ms / 1000


def lock_args(command, name, thread_id, kind):
    return (command, name, thread_id) + ((kind,) if kind else ())


def acquire_steps(book, key, wait_ms, lease_ms):
    """LOCK (wait_ms None: as long as it takes) or TRYLOCK ... WAIT.
    Returns the Hold, or None when WAIT ran out."""
    thread_id, name, kind = key
    _take_gone(book, key)
    args = lock_args("LOCK" if wait_ms is None else "TRYLOCK", name, thread_id, kind)
    if wait_ms is not None:
        args += ("WAIT", int(wait_ms))
    if lease_ms is not None:
        args += ("LEASE", int(lease_ms))
    try:
        reply = yield Request(args, FOREVER if wait_ms is None or wait_ms < 0 else int(wait_ms))
    except LockLost:
        book.forget(key)  # rlockd told it once and forgot it; so do we
        raise
    if reply == 0:
        return None
    token = reply if kind == "FENCED" else None
    return book.acquired(key, token)


def release_steps(book, key):
    """UNLOCK; True when the lock was released, False when a reentrant
    hold remains."""
    thread_id, name, kind = key
    hold = _take_gone(book, key)
    try:
        reply = yield Request(lock_args("UNLOCK", name, thread_id, kind))
    except NotOwner:
        book.forget(key)
        # a hold that was ours: its connection broke, or its session was
        # found gone while this UNLOCK reconnected
        if hold is not None and (hold.suspect or hold.gone):
            raise LockLost("the lock was lost with a connection to rlockd") from None
        raise
    except LockLost:
        book.forget(key)
        raise
    book.released(key, reply == 1)
    return reply == 1


def identify_steps(identity, book):
    """CLIENTID with the secret, first on every connection, so that no
    command ever runs under a random client-id. RESUME while the client
    holds locks (docs/protocol.md section 9, the rule for holders): a
    restarted rlockd then gives the session back, or says it cannot, and
    the holds are lost instead of silently forgotten."""
    for attempt in range(RESUME_RETRIES):
        resume = book.any_held()
        try:
            yield Request(identity.clientid_args(resume))
            return
        except Unavailable:   # resumed by another connection meanwhile
            if attempt + 1 == RESUME_RETRIES:
                raise
            yield Pause(RESUME_RETRY_S)
        except LockLost:
            if not resume:
                raise
            book.session_lost()
            yield Request(identity.clientid_args(False))
            return


# A session another connection of the client is resuming (the heartbeat's,
# another thread's) answers -UNAVAILABLE for that moment: CLIENTID is
# asked again this often, this many times.
RESUME_RETRY_S = 0.05
RESUME_RETRIES = 40


def _take_gone(book, key):
    """The hold of key; raises LockLost (once) when its session was lost."""
    hold = book.get(key)
    if hold is not None and hold.gone:
        book.forget(key)
        raise LockLost("the session holding this lock was lost (rlockd could not resume it)")
    return hold


def drive(steps, send):
    """Runs a steps generator with a blocking send(request) -> reply; an
    RlockError send raises is the generator's to handle."""
    try:
        request = next(steps)
        while True:
            if isinstance(request, Pause):
                time.sleep(request.seconds)
                request = steps.send(None)
                continue
            try:
                reply = send(request)
            except RlockError as e:
                request = steps.throw(e)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value


async def drive_async(steps, send):
    """drive() with an async send."""
    try:
        request = next(steps)
        while True:
            if isinstance(request, Pause):
                await asyncio.sleep(request.seconds)
                request = steps.send(None)
                continue
            try:
                reply = await send(request)
            except RlockError as e:
                request = steps.throw(e)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value


class LockBase:
    """What a lock handle is, threaded or asyncio: a name, a kind and the
    options of its acquisitions, and what the last one got."""

    def __init__(self, client, name, kind, lease_ms, wait_ms):
        self._client = client
        self.name = name
        self.kind = kind_word(kind)
        self.lease_ms = lease_ms
        self.wait_ms = wait_ms
        self._hold = None
        # The fencing token of the last acquisition (FENCED), else None.
        self.token = None

    def _took(self, hold):
        """Records what an acquisition got; True when it got the lock."""
        if hold is None:
            return False
        self._hold = hold
        self.token = hold.token
        return True

    @property
    def lost(self):
        """Set when the hold taken by the last acquisition is lost; None
        before one."""
        return self._hold.lost if self._hold is not None else None

    def __repr__(self):
        return "<%s %r %s>" % (type(self).__name__, self.name, self.kind or "LOCK")
