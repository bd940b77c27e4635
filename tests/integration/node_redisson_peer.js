// node_redisson_peer.js - a node-redisson client (RLock over ioredis's Cluster
// client, as a Node service would use it) driven by test_cluster.py over stdin:
//   lock NAME      -> "locked NAME" once acquired (waiting as node-redisson does:
//                     SUBSCRIBE to the lock's channel, woken by its PUBLISH)
//   unlock NAME    -> "unlocked NAME"
//   quit           -> closes the connections and exits 0
// Any failure is printed as "error ..." and exits 1.
// usage: node node_redisson_peer.js HOST:PORT[,HOST:PORT...]
'use strict';

const readline = require('readline');
const { Redisson, TimeUnit } = require('node-redisson');

const nodes = process.argv[2].split(',').map((addr) => {
    const [host, port] = addr.split(':');
    return { host, port: Number(port) };
});
const redisson = new Redisson({ redis: { clusters: nodes } });
const locks = new Map();

function lockOf(name) {
    if (!locks.has(name))
        locks.set(name, redisson.getLock(name));
    return locks.get(name);
}

async function run(line) {
    const [verb, name] = line.trim().split(/\s+/);
    if (verb === 'lock') {
        // A 60 s lease: only the unlock message makes the wait short.
        await lockOf(name).lock(60000, TimeUnit.MILLISECONDS);
        console.log('locked ' + name);
    } else if (verb === 'unlock') {
        await lockOf(name).unlock();
        console.log('unlocked ' + name);
    } else if (verb === 'quit') {
        await redisson.quit();
        process.exit(0);
    }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
    run(line).catch((err) => {
        console.log('error ' + (err && err.message ? err.message : err));
        process.exit(1);
    });
});
