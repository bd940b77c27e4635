/*
 * redis_backend.h - the Redis layer behind the lock engine's seam.
 *
 * Owns the Redis topology: one Redis (standalone), or the master that
 * Redis Sentinel names (sentinel), served by one pool for commands and
 * the subscriber for pub/sub; or a Redis Cluster (cluster.c: a pool per
 * master), with the subscriber on one of its masters. It implements
 * struct backend for the engine and tells its owner when what it can
 * serve changes, and when the data behind it may have changed (a
 * failover). Nothing above this layer knows which topology it is. It
 * keeps redis_status (base/stats.h) for INFO.
 */
#ifndef RLOCKD_REDIS_BACKEND_H
#define RLOCKD_REDIS_BACKEND_H

#include <stdbool.h>

#include <uv.h>

#include "backend/backend.h"
#include "base/config.h"

struct redis_backend_events {
    /* A connection became ready or was lost; keys that could not be
     * served may be servable now. */
    void (*on_change)(void);
    /* Another server now serves keys (a failover), and writes the old one
     * had not passed on are gone: every hold whose key affected() says
     * yes (NULL: every hold) must be checked. why names the change
     * ("old -> new"). */
    void (*on_recheck)(const char *why,
                       bool (*affected)(const char *key, size_t len));
};

int redis_backend_init(uv_loop_t *loop, const struct config *cfg,
                       const struct redis_backend_events *events);
const struct backend *redis_backend(void);
/* Starts connecting; 0 or -ENOMEM. Scripts are added before this. */
int redis_backend_start(void);
/* Every command connection is ready (the service's readiness). */
bool redis_backend_ready(void);
/* Redis connections it may hold open at once (descriptors to keep). */
unsigned redis_backend_connections(void);
/* Requests sent and not yet answered (shutdown waits for them). */
unsigned redis_backend_inflight(void);
void redis_backend_close(void);
/* After the loop has run the close callbacks. */
void redis_backend_free(void);

#endif
