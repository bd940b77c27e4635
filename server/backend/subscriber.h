/*
 * subscriber.h - a Redis connection in pub/sub mode, listening on the
 * channels of locks that have local waiters.
 *
 * Owns one connection and its channel -> subscription map. Listeners
 * (struct backend_listener, embedded in whatever listens) are counted per
 * channel: one SUBSCRIBE per channel however many listen, UNSUBSCRIBE
 * when the last one leaves. Two lock names can share a channel ("a" and
 * "{a}" both use redisson_lock__channel:{a}), so a subscription hands
 * each message, with its payload, to every listener on it; and when a
 * subscription is (re)confirmed it tells them to look again, since
 * messages sent before may have been missed.
 *
 * A sharded subscriber speaks SSUBSCRIBE/SUNSUBSCRIBE (Redis 7 sharded
 * pub/sub, Redis Cluster) and belongs to one master: a channel is
 * subscribed on the master of its slot, and Redis drops it unasked
 * ("sunsubscribe") when the slot moves, which the owner hears through
 * on_dropped and answers by handing the channel to the slot's new
 * master's subscriber. Standalone and Sentinel have one plain subscriber;
 * Cluster one plain one, or one sharded one per master, or both.
 *
 * Everything it sends goes through its redis_link, so command_timeout_ms
 * covers every (un)subscription like any command, and the link's
 * liveness probe (PING) finds a stopped Redis while no channel changes.
 */
#ifndef RLOCKD_SUBSCRIBER_H
#define RLOCKD_SUBSCRIBER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "backend/backend.h"
#include "backend/redis_link.h"
#include "base/config.h"

struct subscriber;

struct subscriber_events {
    /* The connection became ready or was lost. */
    void (*on_change)(struct subscriber *sub);
    /* Redis unsubscribed a channel unasked, or refused a subscription
     * (sharded: its slot is not this master's): the channel waits for
     * subscriber_resubscribe or a hand-over. */
    void (*on_dropped)(struct subscriber *sub);
};

/* NULL when out of memory. */
struct subscriber *subscriber_new(uv_loop_t *loop, const struct config *cfg,
                                  const char *label, bool sharded,
                                  const struct subscriber_events *events);
/* Listens on addr from now on (the first time: starts connecting). */
void subscriber_move(struct subscriber *sub, const struct redis_addr *addr);
/* Drops the connection until the next move; listeners stay. */
void subscriber_stop(struct subscriber *sub);
void subscriber_close(struct subscriber *sub);
/* After the loop has run the close callbacks. */
void subscriber_free(struct subscriber *sub);

/* 0 or -ENOMEM. */
int subscriber_listen(struct subscriber *sub, struct backend_listener *listener,
                      const char *channel, size_t len);
void subscriber_unlisten(struct backend_listener *listener);
/* Moves to `to` the listeners of every channel which() picks. */
void subscriber_hand_over(struct subscriber *from, struct subscriber *to,
                          bool (*which)(const char *channel, size_t len,
                                        void *arg),
                          void *arg);
/* Subscribes again every channel with listeners that is not subscribed. */
void subscriber_resubscribe(struct subscriber *sub);

bool subscriber_ready(const struct subscriber *sub);

#endif
