/*
 * redis_pool.h - the pool of Redis connections that carries every lock
 * command.
 *
 * Owns pool_size links and which of them serves a key. Commands are
 * pipelined: nothing waits for one reply before sending the next. All
 * commands for one key go through the same connection, so Redis sees
 * them in the order rlockd sent them. Registered scripts are loaded on
 * every (re)connect and called with EVALSHA; a NOSCRIPT reply (a flushed
 * or failed-over Redis) is answered by sending the same call as EVAL,
 * which caches the script again, and the caller sees only the final
 * reply, converted to a struct backend_value.
 */
#ifndef RLOCKD_REDIS_POOL_H
#define RLOCKD_REDIS_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "backend/backend.h"
#include "base/config.h"

#include "backend/redis_link.h"

/* on_change: a connection became ready or was lost. on_readonly: the
 * server answered READONLY, so it is a replica now (a failover demoted
 * it); the call is answered as lost (NULL) and its connection dropped. */
int redis_pool_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_change)(void), void (*on_readonly)(void));
/* 0 or -ENOMEM; the connections are made at the first move. */
int redis_pool_start(void);
/* Every connection goes to addr (the first time: starts connecting). */
void redis_pool_move(const struct redis_addr *addr);
void redis_pool_close(void);
/* After the loop has run the links' close callbacks. */
void redis_pool_free(void);

/* Loaded on every connection made from now on. 0 or -ENOMEM. */
int redis_pool_add_script(struct backend_script *script);
/* As struct backend's eval. */
int redis_pool_eval(const struct backend_call *call, backend_reply_fn *fn,
                    void *arg);
bool redis_pool_key_ready(const char *key, size_t len);
/* WAIT replicas timeout_ms on key's connection, behind what was sent for
 * it: fn gets the number of replicas that acknowledged. As eval. */
int redis_pool_wait(const char *key, size_t len, unsigned replicas,
                    int64_t timeout_ms, backend_reply_fn *fn, void *arg);
/* Keys served by one connection share a group. */
unsigned redis_pool_key_group(const char *key, size_t len);
bool redis_pool_all_ready(void);
/* Requests sent on all connections and not yet answered (the links' own
 * probes not counted). */
unsigned redis_pool_inflight(void);

#endif
