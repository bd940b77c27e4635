"""
sync.py - Redisson's RSemaphore and RCountDownLatch through rlockd
(docs/protocol.md, section 6b) for the threaded Client. Permits belong to
the client's session: rlockd gives them back when the client goes.
Timeouts are in seconds (None: as long as it takes).
"""

from . import core
from .core import Request


def _wait(timeout):
    """ACQUIRE's and AWAIT's WAIT, and the Request's wait: seconds or None."""
    if timeout is None or timeout < 0:
        return (), core.FOREVER
    ms = int(round(timeout * 1000))
    return ("WAIT", ms), ms


class Semaphore:
    """`with client.semaphore(name):` holds one permit for the block."""

    def __init__(self, client, name):
        self._client = client
        self.name = name

    def try_set_permits(self, permits):
        """Sets the permits when none are set yet; True if set."""
        return self._client._send(Request(("SETPERMITS", self.name, permits))) == 1

    def add_permits(self, delta):
        """Adds (negative: removes) permits; the permits available now."""
        return self._client._send(Request(("ADDPERMITS", self.name, delta)))

    def available_permits(self):
        return self._client._send(Request(("PERMITS", self.name)))

    def acquire(self, permits=1, timeout=None):
        """Takes permits; True, or False when timeout (seconds) ran out."""
        wait, wait_ms = _wait(timeout)
        reply = self._client._send(Request(("ACQUIRE", self.name, "PERMITS", permits) + wait, wait_ms))
        return reply in (1, "OK")

    def try_acquire(self, permits=1, timeout=0):
        return self.acquire(permits, timeout)

    def release(self, permits=1):
        """Gives back permits this client holds (NotOwner beyond them)."""
        self._client._send(Request(("RELEASE", self.name, "PERMITS", permits)))

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False


class CountDownLatch:
    def __init__(self, client, name):
        self._client = client
        self.name = name

    def try_set_count(self, count):
        """Sets the count when the latch is not set; True if set."""
        return self._client._send(Request(("LATCHSET", self.name, count))) == 1

    def count_down(self):
        """Counts down by one; the count left."""
        return self._client._send(Request(("COUNTDOWN", self.name)))

    def get_count(self):
        return self._client._send(Request(("LATCHCOUNT", self.name)))

    def wait(self, timeout=None):
        """Waits until the count is zero; True then, False when timeout
        (seconds) ran out. (Redisson's await, a keyword in Python.)"""
        wait, wait_ms = _wait(timeout)
        return self._client._send(Request(("AWAIT", self.name) + wait, wait_ms)) == 1

