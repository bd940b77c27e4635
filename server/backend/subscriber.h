/*
 * subscriber.h - the one Redis connection in pub/sub mode, listening for
 * unlock messages on the channels of locks that have local waiters.
 *
 * Owns the channel -> subscription map. Subscriptions are
 * reference-counted per lock: one SUBSCRIBE per channel however many
 * waiters, UNSUBSCRIBE when the last listener leaves. Two lock names can
 * share a channel ("a" and "{a}" both use redisson_lock__channel:{a}),
 * so a subscription fans a message out to every lock listening on it.
 *
 * It never touches lock keys: it only tells the lock table that a lock
 * may have been freed (a message, or a fresh subscription after which
 * the caller must look again because messages may have been missed).
 */
#ifndef RLOCKD_SUBSCRIBER_H
#define RLOCKD_SUBSCRIBER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "base/config.h"

struct lock;

/* on_notify: the lock may be free now. */
int subscriber_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_notify)(struct lock *lock));
void subscriber_start(void);
void subscriber_close(void);

/* The lock starts/stops listening on its channel. 0 or -ENOMEM. */
int subscriber_listen(struct lock *lock);
void subscriber_unlisten(struct lock *lock);

bool subscriber_ready(void);
size_t subscriber_channel_count(void);

#endif
