/*
 * backend.h - what the lock engine may ask of Redis, and nothing more.
 *
 * Owns the seam between the lock engine and the Redis layer: run a script
 * (or one plain command) for a key, listen on a channel and get each
 * message with its payload, ask whether a key can be served now, and
 * which keys may share one script call. The engine holds a
 * `const struct backend *` and calls through it; it never sees a
 * connection, a node, a shard or hiredis, so which connection serves a
 * key (a pool in Standalone, a master in Sentinel, a slot's node in
 * Cluster) is this layer's business alone. redis_backend() is the real
 * one; the engine's unit tests pass a fake.
 *
 * Replies reach the engine as struct backend_value, a copy of Redis's
 * reply types that the engine can build in a test without hiredis.
 */
#ifndef RLOCKD_BACKEND_H
#define RLOCKD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "base/list.h"

enum backend_value_type {
    VALUE_NIL,
    VALUE_INTEGER,
    VALUE_STRING,
    VALUE_STATUS,
    VALUE_ERROR,
    VALUE_ARRAY,
};

struct backend_value {
    enum backend_value_type type;
    long long integer;
    const char *str; /* STRING, STATUS, ERROR: NUL-terminated */
    size_t len;
    size_t elements; /* ARRAY */
    const struct backend_value *element;
};

/* A Lua script. The engine's lock kinds define them; the backend loads
 * every registered one on each connection and fills in its SHA1. */
struct backend_script {
    const char *name;
    const char *source;
    char sha[41];
};

/*
 * One request: a script (KEYS first in argv) or, with script NULL, a
 * plain command whose name is argv[0]. key is the key that routes it
 * (KEYS[1], or the command's key); every key of one call must be in the
 * same key_group. The backend copies what it needs before returning.
 */
struct backend_call {
    struct backend_script *script;
    const char *key;
    size_t key_len;
    int nkeys;
    int argc;
    const char *const *argv;
    const size_t *argv_len;
};

/* reply is NULL when Redis could not answer: the connection was lost or
 * timed out first. It points into memory valid only during the call. */
typedef void backend_reply_fn(void *arg, const struct backend_value *reply);

/*
 * A listener on a channel, embedded by the engine in whatever listens.
 * on_message gets each message's payload; payload NULL means "now
 * subscribed (again): messages sent before may have been missed, look".
 * The other fields are the backend's.
 */
struct backend_listener {
    void (*on_message)(struct backend_listener *listener, const char *payload,
                       size_t len);
    struct list_node link;
    void *subscription;
    struct backend_listener *twin; /* a second channel it listens on */
};

struct backend {
    /* Makes the script known; loaded on every connection from now on. */
    void (*add_script)(struct backend_script *script);
    /* 0, or a negative errno (-ENOTCONN when the key cannot be served
     * now), in which case fn is never called. Otherwise fn is called
     * exactly once, never before eval returns. */
    int (*eval)(const struct backend_call *call, backend_reply_fn *fn,
                void *arg);
    /* 0 or -ENOMEM. A listener listens on one channel at a time. */
    int (*listen)(struct backend_listener *listener, const char *channel,
                  size_t len);
    void (*unlisten)(struct backend_listener *listener);
    /* Whether eval for this key would be sent now. */
    bool (*key_ready)(const char *key, size_t len);
    /* Keys with equal groups may be passed to one script call, and that
     * call stays ordered with every other call for those keys (it goes
     * the same way: one connection, one Cluster slot). */
    unsigned (*key_group)(const char *key, size_t len);
    /* Asks that what was sent for key reach the replicas ([lock]
     * sync_replicas, sync_timeout_ms): as eval, and fn gets how many
     * acknowledged; -ENOENT when there is no replica to wait for. */
    int (*sync)(const char *key, size_t len, backend_reply_fn *fn, void *arg);
    /* How the scripts that free a lock tell its waiters: "publish",
     * "spublish" (Redis 7 sharded pub/sub, in a cluster) or "both", the
     * last argument of each such script, as Redisson passes its own. */
    const char *(*publish)(void);
};

#endif
