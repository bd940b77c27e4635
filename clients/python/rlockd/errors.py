"""
errors.py - the exceptions, one per rlockd error code, and the one place
where an rlockd error reply (or a redis-py exception carrying one) becomes
one of them.

Programs act on the code, never on the text after it (docs/protocol.md,
section 3): the text may change between rlockd versions.
"""

import redis.exceptions


class RlockError(Exception):
    """Base of every error of this package. `code` is rlockd's error code
    (None for the client-side ones)."""

    code = None


class InvalidRequest(RlockError):
    """-ERR: a bad argument, or a refused request; retrying it unchanged
    fails the same way."""

    code = "ERR"


class NotOwner(RlockError):
    """-NOTOWNER: an unlock by a thread that does not hold the lock."""

    code = "NOTOWNER"


class LockLost(RlockError):
    """-LOCKLOST, or a lost session: the lock was lost while held, so the
    work done under it may not have been exclusive."""

    code = "LOCKLOST"


class Unavailable(RlockError):
    """-UNAVAILABLE: rlockd cannot reach Redis; nothing was done. Retry."""

    code = "UNAVAILABLE"


class LimitExceeded(RlockError):
    """-LIMIT: a configured limit of rlockd refused the request."""

    code = "LIMIT"


class ShuttingDown(RlockError):
    """-SHUTDOWN: rlockd stopped while the call waited."""

    code = "SHUTDOWN"


class WrongType(RlockError):
    """-WRONGTYPE: the name's key in Redis holds something that is not a
    lock; nothing was changed."""

    code = "WRONGTYPE"


class NoReplicas(RlockError):
    """-NOREPLICAS: no Redis replica acknowledged the acquire; not held."""

    code = "NOREPLICAS"


class NoAuth(RlockError):
    """-NOAUTH: rlockd wants a login and none was given, or it refused the
    one given (a wrong user, password or token)."""

    code = "NOAUTH"
    hint = ("log in with username= and password= (a [user NAME] of rlockd), or password= "
            "alone (its auth_token)")


class NoPermission(RlockError):
    """-NOPERM: the user may not do that, or the client-id is in use by a
    session whose secret this client does not have."""

    code = "NOPERM"
    hint = "the user lacks the command or the name: see its commands and names in rlockd's [user NAME]"


class ConnectionLost(RlockError):
    """rlockd could not be reached, or the connection broke during the
    call: its outcome is unknown (an acquire may have been granted)."""


class NotAcquired(RlockError):
    """A `with` block's lock was not acquired before its wait_ms ran out."""


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidRequest, NotOwner, LockLost, Unavailable, LimitExceeded,
                ShuttingDown, WrongType, NoReplicas, NoAuth, NoPermission)
}


# rlockd's -ERR texts for a refused AUTH (a wrong user, password or token):
# a login error, as -NOAUTH is.
_REFUSED_LOGINS = ("invalid username-password pair", "invalid auth token")


def _hinted(cls, text):
    """A login error, its text followed by what to set. A client-id in use
    is a NOPERM too, but no user's rules: it has no hint."""
    if "client-id in use" in text:
        return cls(text)
    return cls("%s: %s" % (text, cls.hint))


def from_reply(text):
    """The exception for an error reply's text, "CODE message"; a code
    this version does not know is a plain RlockError carrying it."""
    code, _, message = text.partition(" ")
    cls = _BY_CODE.get(code)
    if cls is None:
        err = RlockError(text)
        err.code = code
        return err
    if cls in (NoAuth, NoPermission):
        return _hinted(cls, message or text)
    return cls(message or text)


def from_redis(exc):
    """The exception for one redis-py raised. redis-py strips the code of
    a few replies and turns them into classes of its own (NOAUTH, NOPERM,
    and -ERR, whose "ERR " it drops); the others keep "CODE text"."""
    if isinstance(exc, redis.exceptions.NoPermissionError):
        return _hinted(NoPermission, str(exc))
    if isinstance(exc, redis.exceptions.AuthenticationError):
        return _hinted(NoAuth, str(exc))
    if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
        return ConnectionLost(str(exc) or type(exc).__name__)
    if isinstance(exc, redis.exceptions.ResponseError):
        text = str(exc)
        if text.partition("ERR ")[2] in _REFUSED_LOGINS or text in _REFUSED_LOGINS:
            return _hinted(NoAuth, text)
        if text.partition(" ")[0] in _BY_CODE:
            return from_reply(text)
        return InvalidRequest(text)
    return RlockError("%s: %s" % (type(exc).__name__, exc))
