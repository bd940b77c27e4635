/*
 * redis_backend.h - the Redis layer behind the lock engine's seam.
 *
 * Owns the Redis topology: today one Redis (Standalone), served by the
 * pool for commands and the subscriber for pub/sub. It implements struct
 * backend for the engine and tells its owner when what it can serve
 * changes. Sentinel and Cluster are more topologies behind the same
 * struct backend; nothing above this layer changes for them.
 */
#ifndef RLOCKD_REDIS_BACKEND_H
#define RLOCKD_REDIS_BACKEND_H

#include <stdbool.h>

#include <uv.h>

#include "backend/backend.h"
#include "base/config.h"

/* on_change: a connection became ready or was lost; keys that could not
 * be served may be servable now. */
int redis_backend_init(uv_loop_t *loop, const struct config *cfg,
                       void (*on_change)(void));
const struct backend *redis_backend(void);
/* Starts connecting; 0 or -ENOMEM. Scripts are added before this. */
int redis_backend_start(void);
/* Every command connection is ready (the service's readiness). */
bool redis_backend_ready(void);
/* Requests sent and not yet answered (shutdown waits for them). */
unsigned redis_backend_inflight(void);
void redis_backend_close(void);
/* After the loop has run the close callbacks. */
void redis_backend_free(void);

#endif
