/*
 * subscriber.h - the one Redis connection in pub/sub mode, listening on
 * the channels of locks that have local waiters.
 *
 * Owns the channel -> subscription map. Listeners (struct
 * backend_listener, embedded in whatever listens) are counted per
 * channel: one SUBSCRIBE per channel however many listen, UNSUBSCRIBE
 * when the last one leaves. Two lock names can share a channel ("a" and
 * "{a}" both use redisson_lock__channel:{a}), so a subscription hands
 * each message, with its payload, to every listener on it; and when a
 * subscription is (re)confirmed it tells them to look again, since
 * messages sent before may have been missed.
 *
 * Everything it sends goes through its redis_link, so command_timeout_ms
 * covers SUBSCRIBE and UNSUBSCRIBE like any command, and the link's
 * liveness probe (a SUBSCRIBE of a channel of its own, which no lock
 * uses) finds a stopped Redis while no channel changes.
 */
#ifndef RLOCKD_SUBSCRIBER_H
#define RLOCKD_SUBSCRIBER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "backend/backend.h"
#include "backend/redis_link.h"
#include "base/config.h"

/* on_change: the connection became ready or was lost. */
int subscriber_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_change)(void));
/* Listens on addr from now on (the first time: starts connecting). */
void subscriber_move(const struct redis_addr *addr);
void subscriber_close(void);

/* 0 or -ENOMEM. */
int subscriber_listen(struct backend_listener *listener, const char *channel,
                      size_t len);
void subscriber_unlisten(struct backend_listener *listener);

bool subscriber_ready(void);

#endif
