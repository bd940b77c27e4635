"use strict";
/*
 * client.js - the rlockd client for Node, on ioredis.
 *
 * One Client is one rlockd client-id with a random SECRET: every
 * connection it opens says `CLIENTID <id> SECRET <s>` first (with RESUME
 * while the client holds locks), so all of them are one session, and
 * any of them may unlock what another locked. Connections:
 *
 * - the command connection: UNLOCK, the queries, TRYLOCK without a wait,
 *   and the heartbeat (CLIENT HEARTBEAT, then a PING every third of it).
 *   Nothing that blocks is ever sent on it, so it is never stuck behind a
 *   waiting LOCK;
 * - the wait pool: a LOCK (or TRYLOCK ... WAIT) occupies a connection of
 *   its own until answered; up to `poolSize` idle ones are kept, at most
 *   `maxConnections` are open (further waits queue here);
 * - the lock-lost subscriber: SUBSCRIBE rlockd:lost:<client-id>.
 *
 * Each lock() gets a thread-id of its own (a counter), so concurrent
 * async tasks are different owners, and a handle is not reentrant.
 *
 * Never: lets ioredis reconnect by itself (retryStrategy null; a new
 * connection is dialled here, and identifies itself, resuming the
 * session while locks are held, or reporting them lost); retries a
 * command whose outcome is unknown.
 */

const { EventEmitter } = require("events");
const crypto = require("crypto");
const os = require("os");
const path = require("path");
const Redis = require("ioredis");
const { Semaphore, CountDownLatch } = require("./sync");
const errors = require("./errors");

const { RlockError, LockLost, NotOwner, Unavailable, ConnectionLost, NotAcquired, fromRedis } =
  errors;

const KINDS = { "": "", LOCK: "", PLAIN: "", FAIR: "FAIR", READ: "READ", WRITE: "WRITE",
  FENCED: "FENCED" };
const DEFAULT_HEARTBEAT_MS = 10000; // as librlock's and the Python package's
const REDIAL_MS = 100;              // a lost command or subscriber connection is dialled again this often
const RESUME_RETRIES = 40;          // -UNAVAILABLE while another connection resumes the session
const RESUME_RETRY_MS = 50;
const SETTLE_DELAY_MS = 50;         // an abandoned LOCK's close reaches rlockd before HOLDCOUNT

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function kindWord(kind) {
  const word = KINDS[String(kind || "").toUpperCase()];
  if (word === undefined) {
    throw new TypeError(`unknown lock kind ${JSON.stringify(kind)}: one of fair, read, write, fenced`);
  }
  return word;
}

function parseAddress(address) {
  if (address.startsWith("unix:")) {
    if (address.length === 5) throw new TypeError(`no path in ${JSON.stringify(address)}`);
    return { path: address.slice(5) };
  }
  const colon = address.lastIndexOf(":");
  let host = address.slice(0, colon);
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !/^\d+$/.test(address.slice(colon + 1)) || port <= 0 || port > 65535) {
    throw new TypeError(`rlockd address ${JSON.stringify(address)} is not host:port or unix:/path`);
  }
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return { host, port };
}

function lockArgs(command, name, threadId, kind) {
  return kind ? [command, name, threadId, kind] : [command, name, threadId];
}

/** One lost hold, as the lock-lost channel (or a session not given back)
 *  tells it. */
class LostEvent {
  constructor(name, kind, owner, threadId, reason, lock = null) {
    this.name = name;
    this.kind = kind;
    this.owner = owner;
    this.threadId = threadId;
    this.reason = reason;
    this.lock = lock;
  }
}

/** The LostEvent in a lock-lost message's payload; throws when it is not one. */
function parseLostMessage(payload) {
  const fields = JSON.parse(payload);
  const want = { name: "string", kind: "string", owner: "string", thread_id: "number",
    reason: "string" };
  for (const [key, type] of Object.entries(want)) {
    if (!fields || typeof fields[key] !== type) {
      throw new TypeError(`lock-lost message: ${key} is not a ${type} in ${payload}`);
    }
  }
  // Non-ASCII bytes come as \u00XX, one per byte: back to the name's UTF-8.
  const name = Buffer.from(fields.name, "latin1").toString("utf8");
  return new LostEvent(name, fields.kind, fields.owner, fields.thread_id, fields.reason);
}

/** A held lock. unlock() releases it; `token` is a FENCED lock's fencing
 *  token; `lost` turns true, and `signal` aborts (its reason a LockLost),
 *  when the lock is lost while held. */
class Lock {
  constructor(client, name, kind, threadId, token) {
    this._client = client;
    this.name = name;
    this.kind = kind;
    this.threadId = threadId;
    this.owner = `${client.clientId}:${threadId}`;
    this.token = token;
    this.lost = false;
    this.released = false;
    this._gone = false; // the session was not given back: LockLost without asking
    this._lostController = new AbortController();
  }

  get signal() {
    return this._lostController.signal;
  }

  /** Resolves true once released. Rejects LockLost when it was lost while
   *  held, NotOwner when it was released already, ConnectionLost when the
   *  outcome is unknown (the lock is then still recorded as held). */
  unlock() {
    return this._client._unlock(this);
  }

  /** `await using lock = await client.lock(...)` releases it at the
   *  block's end (explicit resource management; Node 24 and TypeScript 5.2
   *  have the syntax). A lock released or lost already is left alone. */
  async [Symbol.asyncDispose]() {
    if (!this.released && !this.lost) await this.unlock();
  }

  _markLost(reason) {
    if (this.lost) return false;
    this.lost = true;
    this._lostController.abort(new LockLost(`lock ${JSON.stringify(this.name)} lost: ${reason}`));
    return true;
  }
}

/** Turns an ioredis promise into this package's errors. */
async function call(redis, args) {
  try {
    return await redis.call(...args);
  } catch (e) {
    throw fromRedis(e);
  }
}

/** "<host>/<program>/<pid>": the script's name, else node's; a character a
 *  client name may not hold (space, control) becomes "_". */
function defaultClientName() {
  const program = process.argv[1] ? path.basename(process.argv[1]) : path.basename(process.argv[0]);
  return `${os.hostname()}/${program}/${process.pid}`.replace(/[^\x21-\x7e]/g, "_");
}

class Client extends EventEmitter {
  /**
   * address: "host:port" or "unix:/path" (default $RLOCK_ADDR, else
   * 127.0.0.1:7379).
   * options: clientId, username, password (default $RLOCK_USER and
   * $RLOCK_PASSWORD, else $RLOCK_AUTH, rlockd's auth_token), heartbeatMs
   * (0: none),
   * lostEvents (default true), poolSize (idle wait connections kept,
   * default 4), maxConnections (wait connections at once, default 32),
   * connectTimeoutMs (default 2000), commandTimeoutMs (default 10000),
   * tls (tls.connect() options for rlockd's [server] tls_listen: ca,
   * cert, key, servername; ioredis's `tls`).
   * clientName: what CLIENT LIST, OWNERS ... WITHNAMES and rlockd's log
   * call its connections (default "<host>/<program>/<pid>"; "": none).
   * Call connect() (or use Client.connect()) before anything else.
   */
  constructor(address, options = {}) {
    super();
    if (typeof address === "object" && address !== null) {
      options = address;
      address = options.address;
    }
    address = address || process.env.RLOCK_ADDR || "127.0.0.1:7379";
    this.clientId = options.clientId || crypto.randomUUID();
    this._secret = crypto.randomBytes(24).toString("hex");
    this.heartbeatMs = options.heartbeatMs === undefined ? DEFAULT_HEARTBEAT_MS : options.heartbeatMs || 0;
    this.lostEvents = options.lostEvents !== false;
    this.poolSize = options.poolSize === undefined ? 4 : options.poolSize;
    this.maxConnections = options.maxConnections || 32;
    this.commandTimeoutMs = options.commandTimeoutMs || 10000;
    this._redisOptions = {
      ...parseAddress(address),
      connectTimeout: options.connectTimeoutMs || 2000,
      lazyConnect: true,
      enableReadyCheck: false,       // rlockd's INFO is not Redis's
      disableClientInfo: true,       // no CLIENT SETINFO at connect
      retryStrategy: () => null,     // reconnecting is this client's job: it resumes the session
      reconnectOnError: () => false,
      enableOfflineQueue: false,     // a command on a closed connection fails at once
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      keepAlive: 10000,              // a waiting LOCK notices a vanished host
      // rlockd's [server] tls_listen: tls.connect() options, as ioredis takes them
      ...(options.tls ? { tls: options.tls } : {}),
    };
    // AUTH is sent by _dial, not by ioredis, whose refused AUTH closes
    // the connection without saying why
    // without username and password: $RLOCK_USER and $RLOCK_PASSWORD (a
    // login), else $RLOCK_AUTH (the auth_token), as the rlock command
    let { username, password } = options;
    if (username === undefined && password === undefined) {
      username = process.env.RLOCK_USER || undefined;
      password = (username ? process.env.RLOCK_PASSWORD : process.env.RLOCK_AUTH) || undefined;
    }
    this._login = password === undefined ? null
      : username === undefined ? ["AUTH", password]
        : ["AUTH", username, password];
    // HELLO 2 SETNAME after the login: every user may run HELLO
    this._naming = options.clientName === "" ? null
      : ["HELLO", "2", "SETNAME", options.clientName === undefined ? defaultClientName() : options.clientName];
    this._holds = new Map();         // key -> Lock held
    this._nextThreadId = 1;
    this._idle = [];                 // wait connections free
    this._open = new Set();          // every ioredis instance open
    this._waitConns = 0;             // wait connections open (idle or busy)
    this._queue = [];                // waits for a wait connection
    this._cmd = null;                // the command connection, when up
    this._cmdDialing = null;
    this._sub = null;
    this._timers = new Set();
    this._closed = false;
    this.lostChannelError = null;
  }

  static async connect(address, options) {
    return new Client(address, options).connect();
  }

  /** Opens the command connection (with its heartbeat) and the lock-lost
   *  subscription: a wrong address or password fails here. */
  async connect() {
    try {
      await this._command(["PING"]);
      if (this.lostEvents) await this._subscribe();
    } catch (e) {
      await this.close();
      throw e;
    }
    return this;
  }

  /** Closes every connection: rlockd ends the session, which releases (or
   *  lets expire, per its on_disconnect) the locks still held. */
  async close() {
    this._closed = true;
    for (const t of this._timers) clearTimeout(t);
    this._timers.clear();
    for (const waiter of this._queue.splice(0)) waiter.reject(new RlockError("the client is closed"));
    for (const redis of this._open) redis.disconnect();
    this._open.clear();
    this._idle = [];
  }

  // -- the API

  /** Resolves a held Lock. options: kind ("fair", "read", "write",
   *  "fenced"; none: the plain lock), leaseMs (none: watchdog), waitMs
   *  (none: as long as it takes; rejects NotAcquired when it ran out),
   *  signal (an AbortSignal: rejects with its reason, abandoning the
   *  wait). */
  async lock(name, options = {}) {
    const lock = await this._acquire(name, options);
    if (lock === null) {
      throw new NotAcquired(`${JSON.stringify(name)} not acquired within ${options.waitMs} ms`);
    }
    return lock;
  }

  /** lock(), but resolves null when waitMs (default 0) ran out. */
  async tryLock(name, options = {}) {
    return this._acquire(name, { waitMs: 0, ...options });
  }

  /** Runs fn(lock) holding the lock, and releases it whatever fn did.
   *  withLock(name, fn) or withLock(name, options, fn). Rejects with fn's
   *  error; else LockLost when the lock was lost meanwhile; else resolves
   *  with fn's result. */
  async withLock(name, options, fn) {
    if (typeof options === "function") [options, fn] = [fn || {}, options];
    const lock = await this.lock(name, options || {});
    let result;
    try {
      result = await fn(lock);
    } catch (e) {
      try {
        await lock.unlock();
      } catch (unlockError) {
        if (e && typeof e === "object" && !e.unlockError) e.unlockError = unlockError;
      }
      throw e;
    }
    await lock.unlock();
    return result;
  }

  /** Deletes the lock whoever holds it; true when there was one. */
  async forceUnlock(name, kind) {
    return (await this._query("FORCEUNLOCK", name, kind)) === 1;
  }

  async isLocked(name, kind) {
    return (await this._query("ISLOCKED", name, kind)) === 1;
  }

  /** Milliseconds the lock has left, -2 when there is no lock. */
  async pttl(name, kind) {
    return this._query("PTTL", name, kind);
  }

  /** Who holds the lock: { pttlMs (-2: no lock), kind ("lock": a plain,
   *  fair or fenced lock; "read", "write"; "none"), owners: [{ owner,
   *  holds }] }. Without kind, the lock whatever its kind. */
  async owners(name, kind) {
    const [pttlMs, pairs, held] = await this._query("OWNERS", name, kind);
    const owners = [];
    for (let i = 0; i < pairs.length; i += 2) owners.push({ owner: String(pairs[i]), holds: pairs[i + 1] });
    return { pttlMs, kind: held === undefined ? undefined : String(held), owners };
  }

  /** Redisson's RSemaphore of that name (lib/sync.js). */
  semaphore(name) {
    return new Semaphore(this, name);
  }

  /** Redisson's RCountDownLatch of that name (lib/sync.js). */
  latch(name) {
    return new CountDownLatch(this, name);
  }

  /** `await using client = await rlockd.connect()` closes it at the
   *  block's end. */
  async [Symbol.asyncDispose]() {
    await this.close();
  }

  /** The latest fencing token of FENCED lock name (0: none). */
  async token(name) {
    return this._command(["TOKEN", name]);
  }

  /** Any rlockd command, on the command connection (never one that
   *  blocks: LOCK, TRYLOCK ... WAIT, ACQUIRE, AWAIT would hold it up). */
  async command(...args) {
    return this._command(args);
  }

  // -- acquiring and releasing

  _key(threadId, name, kind) {
    return `${threadId}\0${kind}\0${name}`;
  }

  async _acquire(name, options) {
    const kind = kindWord(options.kind);
    const { leaseMs, waitMs, signal } = options;
    if (signal) signal.throwIfAborted();
    if (this._closed) throw new RlockError("the client is closed");
    const threadId = this._nextThreadId++;
    const lease = leaseMs === undefined || leaseMs === null ? [] : ["LEASE", Math.trunc(leaseMs)];
    let reply;
    if (waitMs === 0) {
      // one attempt: it does not block, so the command connection takes it
      reply = await this._command([...lockArgs("TRYLOCK", name, threadId, kind), "WAIT", 0, ...lease]);
    } else {
      reply = await this._wait(name, threadId, kind, lease, waitMs, signal);
    }
    if (reply === 0) return null;
    const lock = new Lock(this, name, kind, threadId, kind === "FENCED" ? reply : undefined);
    this._holds.set(this._key(threadId, name, kind), lock);
    return lock;
  }

  /** LOCK, or TRYLOCK ... WAIT, on a wait connection of its own. */
  async _wait(name, threadId, kind, lease, waitMs, signal) {
    const forever = waitMs === undefined || waitMs === null || waitMs < 0;
    const deadline = forever ? Infinity : Date.now() + waitMs;
    const redis = await this._takeWaitConn(signal);
    let args;
    if (forever) {
      args = [...lockArgs("LOCK", name, threadId, kind), ...lease];
    } else {
      const left = Math.max(0, deadline - Date.now());
      args = [...lockArgs("TRYLOCK", name, threadId, kind), "WAIT", left, ...lease];
    }
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      redis.disconnect(); // rlockd drops the waiter with its connection
    };
    if (signal) signal.addEventListener("abort", onAbort, { once: true });
    try {
      const reply = await call(redis, args);
      if (signal && signal.aborted) {
        // granted as the abort came: nobody wants it
        if (reply !== 0) this._settle(name, threadId, kind);
        throw signal.reason;
      }
      return reply;
    } catch (e) {
      if (aborted) {
        this._settle(name, threadId, kind);
        throw signal.reason;
      }
      if (e instanceof ConnectionLost) this._settle(name, threadId, kind);
      throw e;
    } finally {
      if (signal) signal.removeEventListener("abort", onAbort);
      this._giveWaitConn(redis);
    }
  }

  /** A command that may wait (ACQUIRE, AWAIT) on a wait connection of its
   *  own; an abort closes that connection, so rlockd drops the waiter. */
  async _blocking(args, signal) {
    const redis = await this._takeWaitConn(signal);
    const onAbort = () => redis.disconnect();
    if (signal) signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await call(redis, args);
    } catch (e) {
      if (signal && signal.aborted) throw signal.reason;
      throw e;
    } finally {
      if (signal) signal.removeEventListener("abort", onAbort);
      this._giveWaitConn(redis);
    }
  }

  /** A wait that was abandoned (aborted, or its connection broke) may have
   *  been granted all the same: rlockd's count for its thread-id, which no
   *  one else uses, is released. */
  _settle(name, threadId, kind) {
    this._later(SETTLE_DELAY_MS, async () => {
      try {
        const granted = await this._command(lockArgs("HOLDCOUNT", name, threadId, kind));
        for (let i = 0; i < granted; i++) await this._command(lockArgs("UNLOCK", name, threadId, kind));
      } catch (e) {
        this.emit("warning", new RlockError(`could not settle an abandoned wait for ${name}: ${e.message}`));
      }
    });
  }

  async _unlock(lock) {
    const key = this._key(lock.threadId, lock.name, lock.kind);
    if (lock.released) throw new NotOwner(`lock ${JSON.stringify(lock.name)} was released already`);
    if (lock._gone) {
      this._forget(lock, key);
      throw new LockLost("the session holding this lock was lost (rlockd could not resume it)");
    }
    let reply;
    try {
      reply = await this._command(lockArgs("UNLOCK", lock.name, lock.threadId, lock.kind));
    } catch (e) {
      if (e instanceof LockLost) {
        this._forget(lock, key);
        lock._markLost("UNLOCK answered LOCKLOST");
        throw e;
      }
      if (e instanceof NotOwner && this._holds.get(key) === lock) {
        // rlockd does not know a hold this client recorded: lost with a
        // session that ended
        this._forget(lock, key);
        lock._markLost("not held according to rlockd");
        throw new LockLost(`lock ${JSON.stringify(lock.name)} is no longer held: ${e.message}`);
      }
      throw e;
    }
    if (reply === 1) this._forget(lock, key);
    return reply === 1;
  }

  _forget(lock, key) {
    lock.released = true;
    if (this._holds.get(key) === lock) this._holds.delete(key);
  }

  async _query(command, name, kind) {
    const word = kindWord(kind);
    return this._command(word ? [command, name, word] : [command, name]);
  }

  // -- lost holds

  _report(event) {
    const lock = this._holds.get(this._key(event.threadId, event.name, event.kind));
    if (lock) {
      if (!lock._markLost(event.reason)) return; // told once
      event.lock = lock;
    }
    this.emit("lost", event);
  }

  _sessionLost(reason = "session not resumed") {
    for (const lock of this._holds.values()) {
      lock._gone = true;
      if (lock._markLost(reason)) {
        this.emit("lost", new LostEvent(lock.name, lock.kind, lock.owner, lock.threadId, reason, lock));
      }
    }
  }

  // -- connections

  /** A new ioredis connection of this client's session: CLIENTID with the
   *  secret before anything else; RESUME while locks are held, so that a
   *  session rlockd cannot give back is reported, never silently replaced. */
  async _dial() {
    if (this._closed) throw new RlockError("the client is closed");
    const redis = new Redis(this._redisOptions);
    redis.on("error", () => {}); // surfaced by the commands that fail
    this._open.add(redis);
    redis.once("end", () => this._open.delete(redis));
    try {
      await redis.connect();
      if (this._login) await call(redis, this._login);
      if (this._naming) await call(redis, this._naming);
      await this._identify(redis);
    } catch (e) {
      redis.disconnect();
      throw fromRedis(e);
    }
    if (this._closed) {
      redis.disconnect();
      throw new RlockError("the client is closed");
    }
    return redis;
  }

  async _identify(redis) {
    const args = (resume) => ["CLIENTID", this.clientId, "SECRET", this._secret, ...(resume ? ["RESUME"] : [])];
    for (let attempt = 1; ; attempt++) {
      const resume = this._holds.size > 0;
      try {
        await call(redis, args(resume));
        return;
      } catch (e) {
        if (e instanceof LockLost && resume) {
          this._sessionLost();
          await call(redis, args(false));
          return;
        }
        if (!(e instanceof Unavailable) || attempt >= RESUME_RETRIES) throw e;
        await sleep(RESUME_RETRY_MS); // another connection is resuming it
      }
    }
  }

  async _cmdConn() {
    if (this._closed) throw new RlockError("the client is closed");
    if (this._cmd && this._cmd.status === "ready") return this._cmd;
    if (!this._cmdDialing) {
      this._cmdDialing = this._dialCommand().finally(() => {
        this._cmdDialing = null;
      });
    }
    return this._cmdDialing;
  }

  async _dialCommand() {
    const redis = await this._dial();
    if (this.heartbeatMs) {
      try {
        await call(redis, ["CLIENT", "HEARTBEAT", this.heartbeatMs]);
      } catch (e) {
        redis.disconnect();
        throw e;
      }
    }
    this._cmd = redis;
    const beat = this.heartbeatMs
      ? setInterval(() => redis.call("PING").catch(() => {}), Math.max(50, Math.floor(this.heartbeatMs / 3)))
      : null;
    if (beat) beat.unref();
    redis.once("end", () => {
      if (beat) clearInterval(beat);
      if (this._cmd === redis) this._cmd = null;
      // rlockd restarted, or the network broke: dial again now, to resume
      // the session within its lease rather than at the next call
      this._redial(() => this._cmdConn());
    });
    return redis;
  }

  _redial(dial) {
    if (this._closed) return;
    this._later(REDIAL_MS, async () => {
      try {
        await dial();
      } catch (e) {
        this._redial(dial);
      }
    });
  }

  _later(ms, fn) {
    const t = setTimeout(() => {
      this._timers.delete(t);
      if (!this._closed) fn();
    }, ms);
    this._timers.add(t);
  }

  async _command(args) {
    const redis = await this._cmdConn();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        redis.disconnect(); // the reply would come on a later command's turn
        reject(new ConnectionLost(`no reply to ${args[0]} within ${this.commandTimeoutMs} ms`));
      }, this.commandTimeoutMs);
    });
    try {
      return await Promise.race([call(redis, args), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async _subscribe() {
    const channel = `rlockd:lost:${this.clientId}`;
    const redis = await this._dial();
    redis.on("message", (ch, payload) => {
      if (ch !== channel) return;
      let event;
      try {
        event = parseLostMessage(payload);
      } catch (e) {
        this.emit("warning", new RlockError(String(e.message)));
        return;
      }
      this._report(event);
    });
    try {
      await redis.subscribe(channel);
    } catch (e) {
      redis.disconnect();
      const err = fromRedis(e);
      if (err instanceof ConnectionLost) throw err;
      this.lostChannelError = `SUBSCRIBE ${channel} refused: ${err.message}`;
      this.emit("warning", new RlockError(`no lock-lost events: ${this.lostChannelError}`));
      return;
    }
    this._sub = redis;
    redis.once("end", () => {
      if (this._sub === redis) this._sub = null;
      this._redial(() => this._subscribe());
    });
  }

  async _takeWaitConn(signal) {
    while (this._idle.length) {
      const redis = this._idle.pop();
      if (redis.status === "ready") return redis;
      this._waitConns--;
      redis.disconnect();
    }
    if (this._waitConns < this.maxConnections) {
      this._waitConns++;
      try {
        return await this._dial();
      } catch (e) {
        this._waitConns--;
        this._wakeQueue();
        throw e;
      }
    }
    // every wait connection is busy: wait for one (abortable)
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject, signal };
      const onAbort = () => {
        const i = this._queue.indexOf(waiter);
        if (i >= 0) this._queue.splice(i, 1);
        reject(signal.reason);
      };
      waiter.cleanup = () => signal && signal.removeEventListener("abort", onAbort);
      if (signal) signal.addEventListener("abort", onAbort, { once: true });
      this._queue.push(waiter);
    });
  }

  _giveWaitConn(redis) {
    const usable = redis.status === "ready" && !this._closed;
    if (usable && this._queue.length) {
      const waiter = this._queue.shift();
      waiter.cleanup();
      waiter.resolve(redis);
      return;
    }
    if (usable && this._idle.length < this.poolSize) {
      this._idle.push(redis);
      return;
    }
    this._waitConns--;
    redis.disconnect();
    this._wakeQueue();
  }

  /** A wait connection was closed: a queued wait may open a new one. */
  _wakeQueue() {
    if (!this._queue.length || this._closed || this._waitConns >= this.maxConnections) return;
    const waiter = this._queue.shift();
    waiter.cleanup();
    this._waitConns++;
    this._dial().then(waiter.resolve, (e) => {
      this._waitConns--;
      waiter.reject(e);
      this._wakeQueue();
    });
  }
}

module.exports = { Client, Lock, LostEvent, Semaphore, CountDownLatch, defaultClientName, kindWord, parseAddress,
  parseLostMessage };
