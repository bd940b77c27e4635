"use strict";
/*
 * errors.js - one Error class per rlockd error code (docs/protocol.md,
 * section 4), named as the Python package names them, and the one place
 * where an ioredis error becomes one of them. Programs act on the class
 * (or `code`), never on the text after the code: it may change.
 */

class RlockError extends Error {
  constructor(message, code = null) {
    super(message);
    this.name = new.target.name;
    this.code = code === null ? new.target.code || null : code;
  }
}
RlockError.code = null;

function define(name, code) {
  const cls = { [name]: class extends RlockError {} }[name];
  cls.code = code;
  return cls;
}

/** -ERR: a bad argument, or a refused request. */
const InvalidRequest = define("InvalidRequest", "ERR");
/** -NOTOWNER: an unlock of a lock this client does not hold. */
const NotOwner = define("NotOwner", "NOTOWNER");
/** -LOCKLOST, or a session rlockd could not give back: the lock was lost
 *  while held, so the work done under it may not have been exclusive. */
const LockLost = define("LockLost", "LOCKLOST");
/** -UNAVAILABLE: rlockd cannot reach Redis; nothing was done. Retry. */
const Unavailable = define("Unavailable", "UNAVAILABLE");
/** -LIMIT: a configured limit refused the request. */
const LimitExceeded = define("LimitExceeded", "LIMIT");
/** -SHUTDOWN: rlockd stopped while the call waited. */
const ShuttingDown = define("ShuttingDown", "SHUTDOWN");
/** -WRONGTYPE: the name's key in Redis is not a lock; nothing changed. */
const WrongType = define("WrongType", "WRONGTYPE");
/** -NOREPLICAS: no Redis replica acknowledged the acquire; not held. */
const NoReplicas = define("NoReplicas", "NOREPLICAS");
/** -NOAUTH: rlockd wants a login and none was given, or refused the one
 *  given (a wrong user, password or token: rlockd's -ERR for it). */
const NoAuth = define("NoAuth", "NOAUTH");
NoAuth.hint = "log in with the username and password options (a [user NAME] of rlockd), " +
  "or password alone (its auth_token)";
/** -NOPERM: not allowed, or the client-id is another session's. */
const NoPermission = define("NoPermission", "NOPERM");
NoPermission.hint = "the user lacks the command or the name: see its commands and names in " +
  "rlockd's [user NAME]";
/** rlockd's -ERR texts for a refused AUTH: a login error, as -NOAUTH is. */
const REFUSED_LOGINS = ["ERR invalid username-password pair", "ERR invalid auth token"];
/** rlockd could not be reached, or the connection broke during the call:
 *  its outcome is unknown. */
const ConnectionLost = define("ConnectionLost", null);
/** lock()'s waitMs ran out before the lock was free. */
const NotAcquired = define("NotAcquired", null);

const BY_CODE = new Map(
  [InvalidRequest, NotOwner, LockLost, Unavailable, LimitExceeded, ShuttingDown,
    WrongType, NoReplicas, NoAuth, NoPermission].map((c) => [c.code, c]));

/** The error for an error reply's text, "CODE message". */
function fromReply(text) {
  const space = text.indexOf(" ");
  const code = space < 0 ? text : text.slice(0, space);
  if (REFUSED_LOGINS.includes(text)) return new NoAuth(`${text}: ${NoAuth.hint}`);
  const cls = BY_CODE.get(code);
  if (!cls) return new RlockError(text, code);
  // a client-id in use is a NOPERM too, but no user's rules: no hint
  if (cls.hint && !text.includes("client-id in use")) return new cls(`${text}: ${cls.hint}`);
  return new cls(text);
}

/** The error for anything ioredis rejected with. */
function fromRedis(err) {
  if (err instanceof RlockError) return err;
  if (err && err.name === "ReplyError") return fromReply(String(err.message));
  const e = new ConnectionLost((err && err.message) || String(err));
  e.cause = err;
  return e;
}

module.exports = {
  RlockError, InvalidRequest, NotOwner, LockLost, Unavailable, LimitExceeded,
  ShuttingDown, WrongType, NoReplicas, NoAuth, NoPermission, ConnectionLost,
  NotAcquired, fromReply, fromRedis,
};
