/*
 * waiter_queue.h - the FIFO of local clients waiting for one lock.
 *
 * Owns only the order. Waking, timers and Redis belong to the lock
 * engine (waiters.c), which lets only the woken waiters at the head
 * ask Redis for the lock: that is what makes local hand-off FIFO and
 * keeps a crowd of waiters from stampeding Redis.
 */
#ifndef RLOCKD_WAITER_QUEUE_H
#define RLOCKD_WAITER_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/list.h"

struct waiter_queue {
    struct list_node head;
    size_t length;
};

void waiter_queue_init(struct waiter_queue *q);
bool waiter_queue_empty(const struct waiter_queue *q);
void waiter_queue_push_tail(struct waiter_queue *q, struct list_node *node);
/* The oldest waiter, or NULL. */
struct list_node *waiter_queue_head(const struct waiter_queue *q);
bool waiter_queue_is_head(const struct waiter_queue *q,
                          const struct list_node *node);
/* Removes a waiter from anywhere in the queue (timeout, disconnect). */
void waiter_queue_remove(struct waiter_queue *q, struct list_node *node);
struct list_node *waiter_queue_pop_head(struct waiter_queue *q);

#endif
