/*
 * sim_redis.h - a model of Redis for the lock engine's simulation: the
 * keyspace, TTLs in simulated time, and what each script rlockd sends
 * does to it.
 *
 * Owns the keys (every one a hash of short strings, with an expiry time)
 * and the meaning of each call by its script's name, written again from
 * ../shared/reference/redisson-rlock.md and docs/protocol.md section 12,
 * not from kind_rlock.c: the simulation checks the engine against an
 * independent model of the data. A call is applied whole, at the instant
 * the simulation says Redis runs it; its reply is built into a
 * struct backend_value, and each PUBLISH is handed to a callback.
 * Snapshots let a failover lose the writes made since the last one.
 */
#ifndef RLOCKD_SIM_REDIS_H
#define RLOCKD_SIM_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#define SIM_MAX_KEYS 64
#define SIM_MAX_FIELDS 16
#define SIM_STR 96

struct sim_hash {
    char key[SIM_STR];
    size_t fields;
    char field[SIM_MAX_FIELDS][SIM_STR];
    char value[SIM_MAX_FIELDS][SIM_STR];
    uint64_t expire_at; /* 0: no TTL */
};

struct sim_redis {
    struct sim_hash keys[SIM_MAX_KEYS];
    size_t count;
    struct sim_hash snapshot[SIM_MAX_KEYS];
    size_t snapshot_count;
    void (*publish)(const char *channel, void *ctx);
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

void sim_redis_init(struct sim_redis *r, void (*publish)(const char *, void *),
                    void *ctx);
/* Drops the keys whose TTL ran out by now. */
void sim_redis_expire(struct sim_redis *r, uint64_t now);
/* Runs the call at now; false for a call the model does not know. */
bool sim_redis_run(struct sim_redis *r, uint64_t now, const struct sim_call *c,
                   struct sim_reply *out);
void sim_redis_snapshot(struct sim_redis *r);
void sim_redis_restore(struct sim_redis *r);
void sim_redis_flush(struct sim_redis *r);
/* The lock at key, if the key is a lock: its owner and count. */
bool sim_redis_lock(const struct sim_redis *r, const char *key,
                    const char **owner, long long *count);

#endif
