/*
 * sentinel.h - asking Redis Sentinel where the master is, and hearing at
 * once when it moves.
 *
 * Owns one pair of links per configured sentinel: one asks
 * SENTINEL get-master-addr-by-name, the other is subscribed to
 * +switch-master. A sentinel's answer is only a candidate: the Redis
 * backend confirms it with ROLE before using it (a sentinel can be
 * stale, or partitioned from the others), so this module never decides
 * anything; it reports every address it hears of, and is asked again
 * whenever the backend doubts the master it has.
 */
#ifndef RLOCKD_SENTINEL_H
#define RLOCKD_SENTINEL_H

#include <uv.h>

#include "backend/redis_link.h"
#include "base/config.h"

/* A sentinel named addr as the master; source says which and how. event:
 * it announced a switch (+switch-master), rather than answered a poll. */
typedef void sentinel_master_fn(const struct redis_addr *addr,
                                const char *source, bool event);

/* 0, -EINVAL (no sentinels), -ENOMEM. */
int sentinel_init(uv_loop_t *loop, const struct config *cfg,
                  sentinel_master_fn *on_master);
void sentinel_start(void);
/* Asks the sentinels in turn, now (a failed master, READONLY), and then
 * every sentinel_poll_ms as usual. */
void sentinel_ask(void);
/* Sentinels configured, and reachable now. */
unsigned sentinel_count(void);
unsigned sentinel_reachable(void);
void sentinel_close(void);
/* After the loop has run the links' close callbacks. */
void sentinel_free(void);

#endif
