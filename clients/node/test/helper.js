"use strict";
/*
 * helper.js - a real redis-server and rlockd ($RLOCKD_BIN, default
 * build/rlockd of this tree) on free loopback ports, with a config file in
 * a temp dir, as tests/integration/harness.py starts them; stopped by pid,
 * and the temp dir removed, by stop() (and at exit, whatever happened).
 */

const { spawn } = require("child_process");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const Redis = require("ioredis");

const ROOT = path.resolve(__dirname, "..", "..", "..");
const HOST = "127.0.0.1";

function rlockdBin() {
  return path.resolve(process.env.RLOCKD_BIN || path.join(ROOT, "build", "rlockd"));
}

/* A duration rlockd must do some work within (a restart within a lease):
 * ms, or 5 times ms under valgrind (make valgrind), as harness.daemon_ms. */
function daemonMs(ms) {
  return path.basename(rlockdBin()) === "valgrind-rlockd.sh" ? ms * 5 : ms;
}

/* The watchdog of every Env: the restart tests outlive it. */
const WATCHDOG_MS = daemonMs(2000);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const live = new Set(); // every child process started, for the exit hook
process.on("exit", () => {
  for (const child of live) {
    try {
      process.kill(child.pid, "SIGKILL");
    } catch (e) { /* gone */ }
  }
});

function start(argv, logPath, cwd) {
  const log = fs.openSync(logPath, "a");
  const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  child.exited = new Promise((resolve) => child.once("exit", (code, sig) => resolve(code === null ? sig : code)));
  live.add(child);
  child.exited.then(() => live.delete(child));
  return child;
}

async function stopChild(child, graceMs = 3000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(child.pid, "SIGTERM");
  } catch (e) {
    return;
  }
  const timeout = sleep(graceMs).then(() => "timeout");
  if ((await Promise.race([child.exited, timeout])) === "timeout") {
    try {
      process.kill(child.pid, "SIGKILL");
    } catch (e) { /* gone */ }
    await child.exited;
  }
}

function writeConfig(file, sections) {
  let text = "";
  for (const [section, values] of Object.entries(sections)) {
    text += `[${section}]\n`;
    for (const [k, v] of Object.entries(values)) text += `${k} = ${v}\n`;
    text += "\n";
  }
  fs.writeFileSync(file, text);
}

function tail(file, lines = 20) {
  try {
    return fs.readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch (e) {
    return "";
  }
}

async function until(pred, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      if (await pred()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeoutMs} ms${last ? `: ${last.message}` : ""}`);
    await sleep(20);
  }
}

/** A raw ioredis connection to port (no reconnects), for the tests' own
 *  commands: another client of rlockd, or Redis itself. */
/** A plain connection; password: AUTH with it (an rlockd with auth_token). */
function raw(port, password) {
  const r = new Redis({ host: HOST, port, password, enableReadyCheck: false, disableClientInfo: true,
    retryStrategy: () => null, maxRetriesPerRequest: 0, lazyConnect: true });
  r.on("error", () => {});
  return r;
}

class Env {
  constructor(config = {}) {
    this.config = config;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlockd-node-"));
    this.redis = null;
    this.rlockd = null;
    this.raws = [];
    this.counter = 0;
  }

  get address() {
    return `${HOST}:${this.port}`;
  }

  name(prefix = "node") {
    return `${prefix}:${process.pid}:${++this.counter}`;
  }

  async start() {
    if (!fs.existsSync(rlockdBin())) throw new Error(`rlockd not found: ${rlockdBin()} (set RLOCKD_BIN)`);
    this.redisPort = await freePort();
    this.redis = start(["redis-server", "--port", String(this.redisPort), "--bind", HOST, "--save", "",
      "--appendonly", "no", "--dir", this.dir, "--daemonize", "no"], path.join(this.dir, "redis.log"), this.dir);
    await until(async () => {
      const r = raw(this.redisPort);
      try {
        await r.connect();
        return (await r.call("PING")) === "PONG";
      } finally {
        r.disconnect();
      }
    }, 5000, "redis-server answering PING");
    this.port = await freePort();
    await this.startRlockd();
    return this;
  }

  async startRlockd() {
    const sections = {
      server: { listen: `${HOST}:${this.port}` },
      redis: { host: HOST, port: this.redisPort, connect_timeout_ms: 500, retry_timeout_ms: 500 },
      lock: { watchdog_timeout_ms: WATCHDOG_MS, on_disconnect: "release" },
      log: { level: "info" },
    };
    for (const [section, values] of Object.entries(this.config)) {
      sections[section] = { ...(sections[section] || {}), ...values };
    }
    this.confPath = path.join(this.dir, "rlockd.ini");
    this.logPath = path.join(this.dir, "rlockd.log");
    writeConfig(this.confPath, sections);
    this.rlockd = start([rlockdBin(), "-c", this.confPath], this.logPath, this.dir);
    try {
      await until(async () => {
        if (this.rlockd.exitCode !== null) throw new Error(`rlockd exited:\n${tail(this.logPath)}`);
        const r = raw(this.port, (this.config.server || {}).auth_token);
        try {
          await r.connect();
          return /redis_connected:1/.test(await r.call("INFO"));
        } finally {
          r.disconnect();
        }
      }, 10000, "rlockd ready (INFO redis_connected:1)");
    } catch (e) {
      throw new Error(`${e.message}\n${tail(this.logPath)}`);
    }
  }

  async stopRlockd() {
    await stopChild(this.rlockd);
  }

  /** Another client of rlockd: a plain connection, closed by stop(). */
  async client() {
    const r = raw(this.port, (this.config.server || {}).auth_token);
    await r.connect();
    this.raws.push(r);
    return r;
  }

  async stop() {
    for (const r of this.raws) r.disconnect();
    await stopChild(this.rlockd);
    await stopChild(this.redis);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { Env, HOST, WATCHDOG_MS, sleep, until, rlockdBin };
