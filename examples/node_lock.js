#!/usr/bin/env node
/*
 * node_lock.js - an rlockd lock from Node.js, with ioredis's call().
 *
 *     node examples/node_lock.js NAME [HOST:PORT]
 *
 * Without HOST:PORT, $RLOCK_ADDR, else 127.0.0.1:7379. Prints
 * "locked <owner>" once it holds the lock NAME, keeps it until a line (or
 * end of file) comes on stdin, unlocks, prints "unlocked" and exits 0.
 * Needs ioredis 5 (npm install ioredis).
 */
"use strict";

const Redis = require("ioredis");
const readline = require("readline");

// JavaScript runs on one thread: the same thread-id for every lock.
const THREAD_ID = 1;

function connect(addr) {
  const colon = addr.lastIndexOf(":");
  return new Redis({
    host: addr.slice(0, colon),
    port: Number(addr.slice(colon + 1)),
    enableReadyCheck: false, // rlockd's INFO is not Redis's
    disableClientInfo: true, // no CLIENT SETINFO: not an rlockd command
    // A lock belongs to its connection's client-id and goes with it: a
    // new connection would be another owner, so never reconnect.
    retryStrategy: () => null,
  });
}

function nextLine() {
  const lines = readline.createInterface({ input: process.stdin });
  return new Promise((resolve) => {
    lines.once("line", () => lines.close());
    lines.once("close", resolve); // after a line, or at end of file
  });
}

async function main() {
  const [name, addr = process.env.RLOCK_ADDR || "127.0.0.1:7379"] =
    process.argv.slice(2);
  if (!name) {
    console.error("usage: node_lock.js NAME [HOST:PORT]");
    process.exit(2);
  }
  const rlockd = connect(addr);

  await rlockd.call("LOCK", name, THREAD_ID); // waits while another owner holds it
  const clientId = await rlockd.call("CLIENTID");
  console.log(`locked ${clientId}:${THREAD_ID}`);
  await nextLine(); // ... the work done under the lock ...
  const released = await rlockd.call("UNLOCK", name, THREAD_ID); // 1: released, 0: still held
  console.log(released === 1 ? "unlocked" : "still held");
  await rlockd.quit();
}

main().catch((err) => {
  console.error(`node_lock: ${err.message}`);
  process.exit(1);
});
