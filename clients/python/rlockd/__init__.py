"""
rlockd - Python client of rlockd, the lock broker: Redisson's reentrant
distributed locks (plain, fair, read/write, fenced) for Python threads
(Client) and asyncio tasks (AsyncClient), built on redis-py.

    client = rlockd.Client()  # $RLOCK_ADDR, else 127.0.0.1:7379; $RLOCK_AUTH
    with client.lock("orders:42", timeout=5):
        ...  # the work, while no other holder anywhere has orders:42
"""

from .client import Client, Lock
from .core import LostEvent, Owners, parse_lost_message
from .sync import CountDownLatch, Semaphore
from .errors import (ConnectionLost, InvalidRequest, LimitExceeded, LockLost, NoAuth,
                     NoPermission, NoReplicas, NotAcquired, NotOwner, RlockError, ShuttingDown,
                     Unavailable, WrongType)

__all__ = [
    "Client", "Lock", "AsyncClient", "AsyncLock", "LostEvent", "Owners", "Semaphore",
    "CountDownLatch", "parse_lost_message",
    "RlockError", "InvalidRequest", "NotOwner", "LockLost", "Unavailable", "LimitExceeded",
    "ShuttingDown", "WrongType", "NoReplicas", "NoAuth", "NoPermission", "ConnectionLost",
    "NotAcquired",
]


def __getattr__(name):
    # the asyncio client is imported only when asked for: a threaded
    # program does not load redis.asyncio
    if name in ("AsyncClient", "AsyncLock"):
        from . import aio
        return getattr(aio, name)
    raise AttributeError("module 'rlockd' has no attribute %r" % name)
