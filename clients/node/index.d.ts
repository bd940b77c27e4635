// Type definitions for the rlockd Node client (hand-written; no build step).
/// <reference types="node" />

import { EventEmitter } from "events";

/** A lock kind; none (or "lock"/"plain"): Redisson's RLock. Any case. */
export type LockKind = "fair" | "read" | "write" | "fenced" | "FAIR" | "READ" | "WRITE" | "FENCED" | "lock" | "plain" | "";

export interface ClientOptions {
  /** "host:port" or "unix:/path" when the options are the only argument. */
  address?: string;
  /** This client's client-id (default: a random UUID). */
  clientId?: string;
  username?: string;
  password?: string;
  /** CLIENT SETNAME of its connections (default "<host>/<program>/<pid>"; "": none). */
  clientName?: string;
  /** CLIENT HEARTBEAT interval; 0: none. Default 10000. */
  heartbeatMs?: number;
  /** Subscribe to rlockd:lost:<client-id> for the `lost` event. Default true. */
  lostEvents?: boolean;
  /** Idle wait connections kept open. Default 4. */
  poolSize?: number;
  /** Wait connections (one per LOCK waiting) at most; further waits queue. Default 32. */
  maxConnections?: number;
  connectTimeoutMs?: number;
  /** Reply timeout of the non-blocking commands. Default 10000. */
  commandTimeoutMs?: number;
  /** TLS to rlockd's [server] tls_listen: tls.connect() options (ca, cert, key,
   *  servername, ...), passed to ioredis as its `tls`. */
  tls?: import("tls").ConnectionOptions;
}

export interface LockOptions {
  kind?: LockKind;
  /** The lock expires leaseMs after it is granted; none: kept alive by rlockd's watchdog. */
  leaseMs?: number;
  /** Wait at most this long (0: one attempt); none or -1: as long as it takes. */
  waitMs?: number;
  /** Aborting gives up the wait (rejects with signal.reason); a grant that raced it is released. */
  signal?: AbortSignal;
}

/** A held lock. Not reentrant: each lock() is an owner of its own. */
export class Lock {
  readonly name: string;
  /** rlockd's word: "" (plain), "FAIR", "READ", "WRITE", "FENCED". */
  readonly kind: string;
  readonly threadId: number;
  /** "<client-id>:<thread-id>", the field rlockd writes in Redis. */
  readonly owner: string;
  /** A FENCED lock's fencing token; undefined for the other kinds. */
  readonly token: number | undefined;
  /** True once the lock is known lost while held. */
  readonly lost: boolean;
  /** True once unlock() resolved true (or rejected LockLost). */
  readonly released: boolean;
  /** Aborted (reason: a LockLost) when the lock is lost while held. */
  readonly signal: AbortSignal;
  /** true: released. Rejects LockLost (lost while held), NotOwner (released already),
   *  ConnectionLost (outcome unknown; still recorded as held). */
  unlock(): Promise<boolean>;
  /** `await using`: unlock() at the block's end, unless released or lost. */
  [Symbol.asyncDispose](): Promise<void>;
}

export class LostEvent {
  readonly name: string;
  readonly kind: string;
  readonly owner: string;
  readonly threadId: number;
  /** rlockd's reason (for people), or "session not resumed". */
  readonly reason: string;
  /** The handle, when this client still held it. */
  lock: Lock | null;
}

export class Client extends EventEmitter {
  constructor(address?: string, options?: ClientOptions);
  constructor(options: ClientOptions);
  static connect(address?: string, options?: ClientOptions): Promise<Client>;
  readonly clientId: string;
  /** Why there are no `lost` events (the SUBSCRIBE was refused), else null. */
  readonly lostChannelError: string | null;
  connect(): Promise<this>;
  close(): Promise<void>;
  /** A held Lock; rejects NotAcquired when waitMs ran out. */
  lock(name: string, options?: LockOptions): Promise<Lock>;
  /** A held Lock, or null when waitMs (default 0) ran out. */
  tryLock(name: string, options?: LockOptions): Promise<Lock | null>;
  /** fn's result, run holding the lock; released whatever fn does. */
  withLock<T>(name: string, fn: (lock: Lock) => T | Promise<T>): Promise<T>;
  withLock<T>(name: string, options: LockOptions, fn: (lock: Lock) => T | Promise<T>): Promise<T>;
  forceUnlock(name: string, kind?: LockKind): Promise<boolean>;
  isLocked(name: string, kind?: LockKind): Promise<boolean>;
  pttl(name: string, kind?: LockKind): Promise<number>;
  token(name: string): Promise<number>;
  /** Who holds the lock; without kind, the lock whatever its kind. */
  owners(name: string, kind?: LockKind): Promise<Owners>;
  semaphore(name: string): Semaphore;
  latch(name: string): CountDownLatch;
  /** `await using`: close() at the block's end. */
  [Symbol.asyncDispose](): Promise<void>;
  /** Any rlockd command that does not block, on the command connection. */
  command(...args: (string | number | Buffer)[]): Promise<unknown>;

  on(event: "lost", listener: (event: LostEvent) => void): this;
  on(event: "warning", listener: (error: RlockError) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: "lost", listener: (event: LostEvent) => void): this;
  once(event: "warning", listener: (error: RlockError) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

export function connect(address?: string, options?: ClientOptions): Promise<Client>;

export interface Owners {
  /** The lock's time to live in ms; -2: no lock. */
  pttlMs: number;
  /** "lock" (plain, fair or fenced), "read", "write" or "none". */
  kind: string;
  owners: { owner: string; holds: number }[];
}

export interface WaitOptions {
  /** At most this long; none: as long as it takes. */
  waitMs?: number;
  signal?: AbortSignal;
}

/** Redisson's RSemaphore; permits belong to the client's session. */
export class Semaphore {
  readonly name: string;
  trySetPermits(permits: number): Promise<boolean>;
  addPermits(delta: number): Promise<number>;
  availablePermits(): Promise<number>;
  acquire(permits?: number, options?: { signal?: AbortSignal }): Promise<void>;
  /** waitMs default 0: one attempt. */
  tryAcquire(permits?: number, options?: WaitOptions): Promise<boolean>;
  release(permits?: number): Promise<void>;
}

/** Redisson's RCountDownLatch. */
export class CountDownLatch {
  readonly name: string;
  trySetCount(count: number): Promise<boolean>;
  countDown(): Promise<number>;
  getCount(): Promise<number>;
  await(options?: WaitOptions): Promise<boolean>;
}

export class RlockError extends Error {
  /** rlockd's error code, or null for the client's own errors. */
  readonly code: string | null;
  static readonly code: string | null;
}
export class InvalidRequest extends RlockError {}
export class NotOwner extends RlockError {}
export class LockLost extends RlockError {}
export class Unavailable extends RlockError {}
export class LimitExceeded extends RlockError {}
export class ShuttingDown extends RlockError {}
export class WrongType extends RlockError {}
export class NoReplicas extends RlockError {}
export class NoAuth extends RlockError {}
export class NoPermission extends RlockError {}
export class ConnectionLost extends RlockError {}
export class NotAcquired extends RlockError {}
export function fromReply(text: string): RlockError;
export function fromRedis(error: unknown): RlockError;
