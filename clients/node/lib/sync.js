"use strict";
/*
 * sync.js - Redisson's RSemaphore and RCountDownLatch through rlockd
 * (docs/protocol.md, section 6b), as handles of a Client: what may wait
 * (ACQUIRE, AWAIT) takes a wait connection of its own, the rest goes on
 * the command connection. Permits belong to the client's session: rlockd
 * gives them back when the client goes.
 */

/** Resolves a blocking command's reply; waitMs undefined or negative:
 *  as long as it takes. */
function waitArgs(waitMs) {
  return waitMs === undefined || waitMs === null || waitMs < 0 ? [] : ["WAIT", Math.trunc(waitMs)];
}

class Semaphore {
  constructor(client, name) {
    this._client = client;
    this.name = name;
  }

  /** Sets the permits when the semaphore has none set yet; true if set. */
  async trySetPermits(permits) {
    return (await this._client._command(["SETPERMITS", this.name, permits])) === 1;
  }

  /** Adds (or, negative, removes) permits; resolves the permits available. */
  async addPermits(delta) {
    return this._client._command(["ADDPERMITS", this.name, delta]);
  }

  async availablePermits() {
    return this._client._command(["PERMITS", this.name]);
  }

  /** Takes permits (default 1), waiting as long as it takes. */
  async acquire(permits = 1, options = {}) {
    await this._client._blocking(["ACQUIRE", this.name, "PERMITS", permits], options.signal);
  }

  /** Takes permits if they come within waitMs (default 0: one attempt);
   *  resolves whether they were taken. */
  async tryAcquire(permits = 1, options = {}) {
    const waitMs = options.waitMs === undefined ? 0 : options.waitMs;
    const args = ["ACQUIRE", this.name, "PERMITS", permits, "WAIT", Math.max(0, Math.trunc(waitMs))];
    const reply = waitMs === 0 ? await this._client._command(args) : await this._client._blocking(args, options.signal);
    return reply === 1;
  }

  /** Gives back permits this client holds (NotOwner beyond them). */
  async release(permits = 1) {
    await this._client._command(["RELEASE", this.name, "PERMITS", permits]);
  }
}

class CountDownLatch {
  constructor(client, name) {
    this._client = client;
    this.name = name;
  }

  /** Sets the count when the latch is not set; true if set. */
  async trySetCount(count) {
    return (await this._client._command(["LATCHSET", this.name, count])) === 1;
  }

  /** Counts down by one; resolves the count left. */
  async countDown() {
    return this._client._command(["COUNTDOWN", this.name]);
  }

  async getCount() {
    return this._client._command(["LATCHCOUNT", this.name]);
  }

  /** Waits until the count is zero, at most waitMs (none: as long as it
   *  takes); resolves true once it is zero, false when the wait ran out. */
  async await(options = {}) {
    return (await this._client._blocking(["AWAIT", this.name, ...waitArgs(options.waitMs)], options.signal)) === 1;
  }
}

module.exports = { Semaphore, CountDownLatch };
