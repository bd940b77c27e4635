"use strict";
/*
 * Reconnection never hides a lost lock: rlockd restarted (SIGTERM,
 * on_shutdown = keep) while a lock is held. Back within the lease, the
 * client resumes its session (CLIENTID ... RESUME) and still holds it;
 * back after the lease, the lock is reported lost (the lost event) and
 * its unlock rejects LockLost.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const { Env, WATCHDOG_MS, sleep, until } = require("./helper");
const rlockd = require("..");

let env;

test.before(async () => {
  env = await new Env().start(); // watchdog_timeout_ms WATCHDOG_MS
});

test.after(async () => {
  if (env) await env.stop();
});

test("rlockd restarted within the lease: the session is resumed, the lock still held", async () => {
  const client = await rlockd.connect(env.address);
  const lost = [];
  client.on("lost", (e) => lost.push(e));
  try {
    const name = env.name("resume");
    const lock = await client.lock(name);
    await env.stopRlockd();
    await env.startRlockd();
    // the client dials again by itself and resumes within the watchdog; past
    // the TTL it had when rlockd stopped, only the renewals keep the lock
    await sleep(WATCHDOG_MS * 1.25);
    const other = await env.client();
    assert.equal(await other.call("TRYLOCK", name, 1), 0, "another client got a resumed lock");
    assert.equal(await lock.unlock(), true);
    assert.deepEqual(lost, []);
    assert.equal(lock.lost, false);
  } finally {
    await client.close();
  }
});

test("rlockd back after the lease ran out: lost event, unlock rejects LockLost", async () => {
  const client = await rlockd.connect(env.address);
  const lost = [];
  client.on("lost", (e) => lost.push(e));
  try {
    const name = env.name("expired");
    const lock = await client.lock(name, { leaseMs: 300 });
    await env.stopRlockd();
    await sleep(400);
    await env.startRlockd();
    await until(() => lost.length === 1, 2000, "the lost event");
    assert.equal(lost[0].name, name);
    assert.equal(lost[0].lock, lock);
    assert.equal(lock.lost, true);
    await assert.rejects(lock.unlock(), rlockd.LockLost);
    // the client works again, in a new session
    const again = await client.lock(name, { waitMs: 1000 });
    assert.equal(await again.unlock(), true);
  } finally {
    await client.close();
  }
});
