"use strict";
/*
 * rlockd - a client for rlockd, the lock broker that speaks RESP, on
 * ioredis. See README.md in this directory, and index.d.ts for the API.
 */
const { Client, Lock, LostEvent, Semaphore, CountDownLatch } = require("./lib/client");
const errors = require("./lib/errors");

module.exports = {
  Client,
  Lock,
  LostEvent,
  Semaphore,
  CountDownLatch,
  connect: Client.connect,
  ...errors,
};
