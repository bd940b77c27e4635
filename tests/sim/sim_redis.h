/*
 * sim_redis.h - a model of Redis for the lock engine's simulation: the
 * keyspace, TTLs in simulated time, and what each script rlockd sends
 * does to it.
 *
 * Owns the keys (hashes, strings, sorted sets and lists of short strings,
 * each with an expiry time; sim_redis.c) and the meaning of each call by
 * its script's name (sim_redis_locks.c, sim_redis_counts.c), written again from Redisson's documented formats (RLock, the fair
 * and fenced locks, RReadWriteLock, RSemaphore,
 * RPermitExpirableSemaphore, RCountDownLatch) and docs/protocol.md, not
 * from the kind files' Lua: the simulation checks the engine against an
 * independent model of the data. Every script the engine sends on its own
 * or for the simulation's clients is modelled; the counts' set, add and
 * read (LATCHSET aside), the owners and token queries are not (the
 * simulation sends none). An expirable permit's id is kept as its 32 hex
 * digits, not as the 16 raw bytes Redisson's zset member is. A call is
 * applied whole, at the instant the simulation says Redis runs it; its
 * reply is built into a struct backend_value, and each PUBLISH is handed
 * to a callback. Snapshots let a failover lose the writes made since the
 * last one.
 */
#ifndef RLOCKD_SIM_REDIS_H
#define RLOCKD_SIM_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#define SIM_MAX_KEYS 160
#define SIM_MAX_FIELDS 16
#define SIM_STR 96

enum sim_type { SIM_HASH, SIM_STRING, SIM_ZSET, SIM_LIST };

/* A key: a hash's fields and values, a string (value[0]), a sorted set's
 * members and scores (decimal), or a list's elements in order (field). */
struct sim_key {
    char key[SIM_STR];
    enum sim_type type;
    size_t fields;
    char field[SIM_MAX_FIELDS][SIM_STR];
    char value[SIM_MAX_FIELDS][SIM_STR];
    uint64_t expire_at; /* 0: no TTL */
};

struct sim_redis {
    struct sim_key keys[SIM_MAX_KEYS];
    size_t count;
    struct sim_key snapshot[SIM_MAX_KEYS];
    size_t snapshot_count;
    void (*publish)(const char *channel, const char *message, void *ctx);
    void *ctx;
};

/* One call: argv as the engine sent it (KEYS first for a script). */
struct sim_call {
    const char *script; /* its name; NULL: a plain command, argv[0] */
    int nkeys;
    int argc;
    char argv[80][SIM_STR];
};

/* The reply, and the storage it points into. */
struct sim_reply {
    struct backend_value value;
    struct backend_value element[40];
    char text[SIM_MAX_FIELDS * 2 + 2][SIM_STR];
};

void sim_redis_init(struct sim_redis *r,
                    void (*publish)(const char *, const char *, void *),
                    void *ctx);
/* Drops the keys whose TTL ran out by now. */
void sim_redis_expire(struct sim_redis *r, uint64_t now);
/* Runs the call at now; false for a call the model does not know. */
bool sim_redis_run(struct sim_redis *r, uint64_t now, const struct sim_call *c,
                   struct sim_reply *out);
void sim_redis_snapshot(struct sim_redis *r);
void sim_redis_restore(struct sim_redis *r);
void sim_redis_flush(struct sim_redis *r);

/* ---- what the invariants read ------------------------------------------ */

/* The lock at key, if the key is an RLock-shaped one: its owner and
 * count. */
bool sim_redis_lock(const struct sim_redis *r, const char *key,
                    const char **owner, long long *count);
/* The owners of the read-write lock at key (not "mode") that still hold
 * it, up to max: their fields and counts; how many there are. */
size_t sim_redis_rw_owners(const struct sim_redis *r, const char *key,
                           const char **fields, long long *counts, size_t max);
/* A semaphore's holders at now (their time not run out): the owners of
 * the record owners, with deadlines, or the expirable permits of timeout
 * (count 1 each); how many. */
size_t sim_redis_permit_holders(const struct sim_redis *r, const char *owners,
                                const char *deadlines, const char *timeout,
                                uint64_t now, const char **fields,
                                long long *counts, size_t max);
/* Every permit a semaphore accounts for, held or not, as its scripts keep
 * them: the count, the record's and the expirable permits. */
long long sim_redis_permits_total(const struct sim_redis *r, const char *name,
                                  const char *owners, const char *timeout);
/* Whether key is a hash with field, whatever its value or TTL. */
bool sim_redis_has_field(const struct sim_redis *r, const char *key,
                         const char *field);
/* A string key's integer (false: no such key). */
bool sim_redis_integer(const struct sim_redis *r, const char *key,
                       long long *value);
/* Sets a string key to value, with no TTL (an operator's SETPERMITS). */
void sim_redis_set_integer(struct sim_redis *r, const char *key,
                           long long value);

#endif
