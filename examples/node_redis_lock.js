#!/usr/bin/env node
/*
 * node_redis_lock.js - an rlockd lock from Node.js, with node-redis's
 * sendCommand(), the client left with its default options.
 *
 *     node examples/node_redis_lock.js NAME [HOST:PORT]
 *
 * Without HOST:PORT, $RLOCK_ADDR, else 127.0.0.1:7379. Prints
 * "locked <owner>" once it holds the lock NAME, keeps it until a line (or
 * end of file) comes on stdin, unlocks, prints "unlocked" and exits 0.
 * Needs node-redis 4 or 5 (npm install redis).
 */
"use strict";

const { createClient } = require("redis");
const readline = require("readline");

// JavaScript runs on one thread: the same thread-id for every lock.
const THREAD_ID = "1"; // sendCommand takes strings only

function nextLine() {
  const lines = readline.createInterface({ input: process.stdin });
  return new Promise((resolve) => {
    lines.once("line", () => lines.close());
    lines.once("close", resolve); // after a line, or at end of file
  });
}

// node-redis reconnects after a lost connection, but a lock belongs to its
// connection's client-id and went with the old one: give up instead.
function fail(err) {
  console.error(`node_redis_lock: ${err.message}`);
  process.exit(1);
}

async function main() {
  const [name, addr = process.env.RLOCK_ADDR || "127.0.0.1:7379"] =
    process.argv.slice(2);
  if (!name) {
    console.error("usage: node_redis_lock.js NAME [HOST:PORT]");
    process.exit(2);
  }
  const rlockd = createClient({ url: `redis://${addr}` }); // default options
  rlockd.on("error", fail); // the locks went with the connection: stop
  await rlockd.connect();

  await rlockd.sendCommand(["LOCK", name, THREAD_ID]); // waits while another owner holds it
  const clientId = await rlockd.sendCommand(["CLIENTID"]);
  console.log(`locked ${clientId}:${THREAD_ID}`);
  await nextLine(); // ... the work done under the lock ...
  const released = await rlockd.sendCommand(["UNLOCK", name, THREAD_ID]); // 1: released, 0: still held
  console.log(released === 1 ? "unlocked" : "still held");
  await rlockd.quit();
}

main().catch(fail);
