/*
 * keyslot.h - which of Redis Cluster's 16384 hash slots a key lives in.
 *
 * Owns Redis's own rule, nothing else: CRC16 (XMODEM) of the key modulo
 * 16384, where a key holding a non-empty "{tag}" (the first '{' and the
 * first '}' after it) hashes on the tag alone. That is what lets
 * Redisson's keys of one lock (redisson_lock__channel:{name}, the fair
 * lock's queue...) share the lock's slot, and what the cluster router
 * must agree with exactly: Redisson itself takes the first '}' anywhere,
 * so "a}b{c}" hashes on the whole key there but on "c" in Redis.
 */
#ifndef RLOCKD_KEYSLOT_H
#define RLOCKD_KEYSLOT_H

#include <stddef.h>

#define KEYSLOT_COUNT 16384

unsigned keyslot(const char *key, size_t len);

#endif
