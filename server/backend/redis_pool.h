/*
 * redis_pool.h - the pool of Redis connections that carries every lock
 * command.
 *
 * Owns pool_size links and the scripts' SHA1s. Commands are pipelined:
 * nothing waits for one reply before sending the next. All commands for
 * one lock name go through the same connection (its shard), so Redis
 * sees them in the order rlockd sent them. Scripts are loaded on every
 * (re)connect and called with EVALSHA; a NOSCRIPT reply (a flushed or
 * failed-over Redis) is answered by sending the same call as EVAL, which
 * caches the script again, and the caller sees only the final reply.
 */
#ifndef RLOCKD_REDIS_POOL_H
#define RLOCKD_REDIS_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis.h>
#include <uv.h>

#include "base/config.h"
#include "engine/scripts.h"

/* reply is NULL when the connection was lost before the reply came. */
typedef void redis_pool_fn(redisReply *reply, void *arg);

int redis_pool_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_shard_ready)(unsigned shard));
void redis_pool_start(void);
void redis_pool_close(void);

unsigned redis_pool_size(void);
unsigned redis_pool_shard(const char *name, size_t len);
bool redis_pool_ready(unsigned shard);
unsigned redis_pool_ready_count(void);
unsigned long long redis_pool_reconnects(void);
unsigned long long redis_pool_script_reloads(void);
/* Requests sent on all connections and not yet answered. */
unsigned redis_pool_inflight(void);

/*
 * Runs a script (keys first in argv) or, with script == SCRIPT_COUNT, a
 * plain command. Returns 0, or -ENOTCONN / -ENOMEM, in which case fn is
 * not called. fn is called exactly once otherwise.
 */
int redis_pool_call(unsigned shard, enum script_id script, int nkeys, int argc,
                    const char **argv, const size_t *argv_len,
                    redis_pool_fn *fn, void *arg);

#endif
