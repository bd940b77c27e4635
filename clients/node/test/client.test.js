"use strict";
/*
 * The Node package against a real rlockd and redis-server (helper.js):
 * mutual exclusion under many async tasks, the lost event, abort of a
 * wait, each lock kind, errors.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const { Env, sleep, until } = require("./helper");
const rlockd = require("..");

let env;
let client;
const lostEvents = [];

test.before(async () => {
  env = await new Env().start();
  client = await rlockd.connect(env.address);
  client.on("lost", (event) => lostEvents.push(event));
});

test.after(async () => {
  if (client) await client.close();
  if (env) await env.stop();
});

function lostOf(name) {
  return lostEvents.filter((e) => e.name === name);
}

test("withLock: 50 concurrent async tasks never overlap", async () => {
  const name = env.name("mutex");
  let inside = 0;
  let maxInside = 0;
  let runs = 0;
  const owners = new Set();
  const task = async () => {
    for (let i = 0; i < 4; i++) {
      await client.withLock(name, async (lock) => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        owners.add(lock.owner);
        await sleep(Math.random() * 2);
        inside--;
        runs++;
      });
    }
  };
  // meanwhile, commands on the command connection are not held up by
  // the waiting LOCKs
  const probe = (async () => {
    await sleep(50);
    const t0 = Date.now();
    await client.isLocked(name);
    return Date.now() - t0;
  })();
  await Promise.all(Array.from({ length: 50 }, task));
  assert.equal(maxInside, 1, "two holders at once");
  assert.equal(runs, 200);
  assert.equal(owners.size, 200, "each lock() its own thread-id");
  assert.ok((await probe) < 500, "a query waited behind the LOCKs");
  assert.equal(await client.isLocked(name), false);
});

test("withLock returns fn's result and rethrows its error, releasing either way", async () => {
  const name = env.name("with");
  assert.equal(await client.withLock(name, async () => 42), 42);
  await assert.rejects(client.withLock(name, { waitMs: 1000 }, async () => {
    throw new Error("boom");
  }), /boom/);
  assert.equal(await client.isLocked(name), false);
});

test("a lease that runs out: lost event within a second, unlock rejects LockLost", async () => {
  const name = env.name("lease");
  const lock = await client.lock(name, { leaseMs: 200 });
  const t0 = Date.now();
  await until(() => lostOf(name).length === 1, 1000, "the lost event");
  assert.ok(Date.now() - t0 < 1000);
  const [event] = lostOf(name);
  assert.equal(event.owner, lock.owner);
  assert.equal(event.threadId, lock.threadId);
  assert.equal(event.kind, "");
  assert.equal(event.lock, lock);
  assert.equal(lock.lost, true);
  assert.ok(lock.signal.aborted);
  assert.ok(lock.signal.reason instanceof rlockd.LockLost);
  await assert.rejects(lock.unlock(), rlockd.LockLost);
});

test("FORCEUNLOCK by another client: lost event within a second, unlock rejects LockLost", async () => {
  const name = env.name("force");
  const lock = await client.lock(name, { kind: "fair" });
  const other = await env.client();
  assert.equal(await other.call("FORCEUNLOCK", name, "FAIR"), 1);
  await until(() => lostOf(name).length === 1, 1000, "the lost event");
  assert.equal(lostOf(name)[0].kind, "FAIR");
  assert.equal(lostOf(name)[0].reason, "FORCEUNLOCK");
  await assert.rejects(lock.unlock(), rlockd.LockLost);
  assert.equal(lostOf(name).length, 1, "told once");
});

test("an aborted wait gives up at once and leaves no lock behind", async () => {
  const name = env.name("abort");
  const other = await env.client();
  assert.equal(await other.call("LOCK", name, 1), "OK");
  const controller = new AbortController();
  const waiting = client.lock(name, { signal: controller.signal });
  await sleep(200);
  const t0 = Date.now();
  controller.abort();
  await assert.rejects(waiting, { name: "AbortError" });
  assert.ok(Date.now() - t0 < 200);
  // rlockd dropped the waiter: the release goes to nobody
  assert.equal(await other.call("UNLOCK", name, 1), 1);
  await sleep(150);
  assert.equal(await client.isLocked(name), false, "an abandoned wait was granted");
  // an already aborted signal rejects before asking
  await assert.rejects(client.lock(name, { signal: AbortSignal.abort() }), { name: "AbortError" });
  // the client goes on working
  const lock = await client.lock(name, { waitMs: 1000 });
  assert.equal(await lock.unlock(), true);
});

test("an abort racing the grant: the lock is released", async () => {
  const name = env.name("abort-race");
  const controller = new AbortController();
  const waiting = client.lock(name, { signal: controller.signal }); // free: granted at once
  controller.abort(new Error("changed my mind"));
  await assert.rejects(waiting, /changed my mind/);
  await until(async () => !(await client.isLocked(name)), 1000, "the abandoned grant released");
});

test("waitMs: tryLock resolves null, lock rejects NotAcquired", async () => {
  const name = env.name("wait");
  const held = await client.lock(name);
  assert.equal(await client.tryLock(name), null);
  const t0 = Date.now();
  assert.equal(await client.tryLock(name, { waitMs: 150 }), null);
  assert.ok(Date.now() - t0 >= 140);
  await assert.rejects(client.lock(name, { waitMs: 100 }), rlockd.NotAcquired);
  await held.unlock();
  const again = await client.tryLock(name);
  assert.ok(again);
  await again.unlock();
});

test("kinds: fair, read/write, fenced tokens", async () => {
  const fair = env.name("fair");
  const first = await client.lock(fair, { kind: "fair" });
  const second = client.lock(fair, { kind: "fair" });
  await sleep(50);
  await first.unlock();
  await (await second).unlock();

  const rw = env.name("rw");
  const r1 = await client.lock(rw, { kind: "read" });
  const r2 = await client.lock(rw, { kind: "read", waitMs: 500 }); // readers share
  assert.equal(await client.tryLock(rw, { kind: "write" }), null);
  await r1.unlock();
  await r2.unlock();
  const w = await client.lock(rw, { kind: "write", waitMs: 500 });
  assert.equal(await client.tryLock(rw, { kind: "read" }), null);
  await w.unlock();

  const fenced = env.name("fenced");
  const f1 = await client.lock(fenced, { kind: "fenced" });
  assert.equal(typeof f1.token, "number");
  await f1.unlock();
  const f2 = await client.lock(fenced, { kind: "FENCED", leaseMs: 5000 });
  assert.ok(f2.token > f1.token, `${f2.token} > ${f1.token}`);
  assert.equal(await client.token(fenced), f2.token);
  await f2.unlock();
  const plain = await client.lock(env.name("plain"));
  assert.equal(plain.token, undefined);
  await plain.unlock();
  await assert.rejects(client.lock("x", { kind: "bogus" }), TypeError);
});

test("not reentrant: each lock() is another owner", async () => {
  const name = env.name("reentrant");
  const lock = await client.lock(name);
  assert.equal(await client.tryLock(name), null, "a second lock() of the same name must wait");
  assert.equal(await lock.unlock(), true);
  await assert.rejects(lock.unlock(), rlockd.NotOwner);
});

test("errors are rlockd's codes", async () => {
  // a name whose key is not a lock: rlockd answers WRONGTYPE
  const name = env.name("wrongtype");
  const r = require("ioredis");
  const direct = new r({ host: "127.0.0.1", port: env.redisPort, lazyConnect: true, retryStrategy: () => null });
  direct.on("error", () => {});
  await direct.connect();
  await direct.set(name, "not a lock");
  direct.disconnect();
  const err = await client.lock(name, { waitMs: 0 }).catch((e) => e);
  assert.ok(err instanceof rlockd.WrongType, String(err));
  assert.equal(err.code, "WRONGTYPE");
  assert.ok(err instanceof rlockd.RlockError);
});

test("Symbol.asyncDispose (await using) releases a held lock once, and leaves a released one", async () => {
  const name = env.name("dispose");
  const lock = await client.lock(name, { kind: "write" });
  assert.equal(typeof lock[Symbol.asyncDispose], "function");
  await lock[Symbol.asyncDispose]();
  assert.equal(lock.released, true);
  assert.equal(await client.isLocked(name), false);
  await lock[Symbol.asyncDispose](); // released already: nothing sent, no NotOwner
});

test("owners() reports the lock whatever its kind, with its kind; semaphores and the latch", async () => {
  const name = env.name("owners");
  assert.deepEqual(await client.owners(name), { pttlMs: -2, kind: "none", owners: [] });
  const lock = await client.lock(name, { kind: "read" });
  const seen = await client.owners(name);
  assert.equal(seen.kind, "read");
  assert.deepEqual(seen.owners, [{ owner: lock.owner, holds: 1 }]);
  await lock.unlock();
  const sem = client.semaphore(env.name("sem"));
  assert.equal(await sem.trySetPermits(1), true);
  assert.equal(await sem.tryAcquire(), true);
  assert.equal(await sem.tryAcquire(1, { waitMs: 100 }), false);
  await sem.release();
  assert.equal(await sem.availablePermits(), 1);
  const latch = client.latch(env.name("latch"));
  assert.equal(await latch.trySetCount(1), true);
  assert.equal(await latch.await({ waitMs: 50 }), false);
  assert.equal(await latch.countDown(), 0);
  assert.equal(await latch.await({ waitMs: 1000 }), true);
});

test("connections are named <host>/<program>/<pid>, shown by CLIENT LIST and OWNERS WITHNAMES", async () => {
  const want = `${require("os").hostname()}/${require("path").basename(process.argv[1])}/${process.pid}`;
  const name = env.name("named");
  const lock = await client.lock(name);
  try {
    const admin = await env.client();
    assert.ok((await admin.call("CLIENT", "LIST")).includes(`name=${want} `), "CLIENT LIST");
    const owners = await admin.call("OWNERS", name, "WITHNAMES");
    assert.deepEqual(owners[3].filter((_, i) => i % 2 === 1), [want]);
  } finally {
    await lock.unlock();
  }
  const named = await rlockd.connect(env.address, { clientName: "jobs-7", heartbeatMs: 0, lostEvents: false });
  try {
    await named.isLocked(name);
    assert.ok((await (await env.client()).call("CLIENT", "LIST")).includes("name=jobs-7 "));
  } finally {
    await named.close();
  }
});

test("login errors name what to set", async () => {
  const crypto = require("crypto");
  const users = new Env({ server: { auth_token: "admin-token" },
    "user worker": { password_sha256: crypto.createHash("sha256").update("worker-pw").digest("hex"),
      commands: "+@lock", names: "orders-*" } });
  await users.start();
  try {
    const options = { heartbeatMs: 0, lostEvents: false };
    for (const login of [{}, { username: "worker", password: "wrong" }]) {
      const err = await rlockd.connect(users.address, { ...options, ...login })
        .then((c) => c.isLocked("orders-1").finally(() => c.close())).catch((e) => e);
      assert.ok(err instanceof rlockd.NoAuth, `${JSON.stringify(login)}: ${err}`);
      assert.ok(err.message.endsWith(": log in with the username and password options (a [user NAME] of rlockd), " +
        "or password alone (its auth_token)"), err.message);
    }
    const worker = await rlockd.connect(users.address, { ...options, username: "worker", password: "worker-pw" });
    try {
      assert.equal(await worker.isLocked("orders-1"), false);
      const err = await worker.isLocked("payroll").catch((e) => e);
      assert.ok(err instanceof rlockd.NoPermission, String(err));
      assert.ok(err.message.endsWith(": the user lacks the command or the name: see its commands and names " +
        "in rlockd's [user NAME]"), err.message);
    } finally {
      await worker.close();
    }
  } finally {
    await users.stop();
  }
});
