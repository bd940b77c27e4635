/*
 * redis_pool.h - a pool of Redis connections to one server, carrying the
 * lock commands sent to it.
 *
 * Owns pool_size links to one address and which of them serves a route
 * (a number the caller derives from the key: every call with one route
 * goes through one connection, so Redis sees them in the order rlockd
 * sent them). Commands are pipelined: nothing waits for one reply before
 * sending the next. Registered scripts are loaded on every (re)connect
 * and called with EVALSHA; a NOSCRIPT reply (a flushed or failed-over
 * Redis) is answered by sending the same call as EVAL, which caches the
 * script again, and the caller sees only the final reply, converted to a
 * struct backend_value.
 *
 * Standalone and Sentinel use one pool; Cluster one per master. A call
 * can then be redirected: a pool with an on_redirect hook hands it each
 * MOVED, ASK, TRYAGAIN... reply with the call, which the hook sends
 * again through another pool (redis_call_send) or answers.
 */
#ifndef RLOCKD_REDIS_POOL_H
#define RLOCKD_REDIS_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "backend/backend.h"
#include "backend/redis_link.h"
#include "base/config.h"

struct redis_pool;
/* One call in flight, owned by its pool until answered. */
struct redis_call;

struct redis_pool_events {
    /* A connection became ready or was lost. */
    void (*on_change)(struct redis_pool *pool);
    /* The server answered READONLY, so it is a replica now (a failover
     * demoted it); the call is answered as lost (NULL) and its
     * connection dropped. */
    void (*on_readonly)(struct redis_pool *pool);
    /* NULL, or Cluster's: an error reply that is not the script's own
     * (see cluster_redirect.c). True when it takes the call: it then sends it
     * again or answers it, once. */
    bool (*on_redirect)(struct redis_pool *pool, struct redis_call *call,
                        const redisReply *reply);
};

/* Registers a script on every pool, made and to be made: 0 or -ENOMEM.
 * Every script is added before the first pool is made. */
int redis_pool_add_script(struct backend_script *script);
void redis_pool_free_scripts(void);

/* NULL when out of memory. */
struct redis_pool *redis_pool_new(uv_loop_t *loop, const struct config *cfg,
                                  const char *label,
                                  const struct redis_pool_events *events);
/* Every connection goes to addr (the first time: starts connecting). */
void redis_pool_move(struct redis_pool *pool, const struct redis_addr *addr);
const struct redis_addr *redis_pool_addr(const struct redis_pool *pool);
/* Drops every connection (pending calls get NULL) until the next move. */
void redis_pool_stop(struct redis_pool *pool);
void redis_pool_close(struct redis_pool *pool);
/* After the loop has run the links' close callbacks. */
void redis_pool_free(struct redis_pool *pool);

/* As struct backend's eval, on route's connection. */
int redis_pool_eval(struct redis_pool *pool, const struct backend_call *call,
                    unsigned route, backend_reply_fn *fn, void *arg);
/* WAIT replicas timeout_ms on route's connection, behind what was sent
 * there: fn gets the number of replicas that acknowledged. As eval. */
int redis_pool_wait(struct redis_pool *pool, unsigned route, unsigned replicas,
                    int64_t timeout_ms, backend_reply_fn *fn, void *arg);
bool redis_pool_route_ready(const struct redis_pool *pool, unsigned route);
unsigned redis_pool_size(const struct redis_pool *pool);
/* Connections ready now. */
unsigned redis_pool_ready(const struct redis_pool *pool);
/* Requests sent on all connections and not yet answered (the links' own
 * probes not counted). */
unsigned redis_pool_inflight(const struct redis_pool *pool);

/* A redirected call: its route, sending it again through pool (after
 * ASKING on the same connection when asking), and answering it (NULL:
 * lost). Send returns 0 or a negative errno, in which case the call is
 * still the caller's to answer. */
unsigned redis_call_route(const struct redis_call *call);
/* Counts one more redirection of the call and returns the count; a call
 * held back to be retried later starts counting again. */
unsigned redis_call_count_hop(struct redis_call *call);
void redis_call_clear_hops(struct redis_call *call);
/* When the call was first held back: now, the first time this is asked
 * (so that retries, however they alternate with redirections, end one
 * retry_timeout_ms after the first). */
uint64_t redis_call_held_since(struct redis_call *call, uint64_t now);
int redis_call_send(struct redis_call *call, struct redis_pool *pool,
                    bool asking);
void redis_call_answer(struct redis_call *call, const redisReply *reply);

#endif
