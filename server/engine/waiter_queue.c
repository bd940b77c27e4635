/*
 * waiter_queue.c - see waiter_queue.h.
 */
#include "engine/waiter_queue.h"

void waiter_queue_init(struct waiter_queue *q)
{
    list_init(&q->head);
    q->length = 0;
}

bool waiter_queue_empty(const struct waiter_queue *q)
{
    return q->length == 0;
}

void waiter_queue_push_tail(struct waiter_queue *q, struct list_node *node)
{
    list_push_tail(&q->head, node);
    q->length++;
}

struct list_node *waiter_queue_head(const struct waiter_queue *q)
{
    return list_first(&q->head);
}

bool waiter_queue_is_head(const struct waiter_queue *q,
                          const struct list_node *node)
{
    return q->head.next == node;
}

void waiter_queue_remove(struct waiter_queue *q, struct list_node *node)
{
    list_remove(node);
    q->length--;
}

struct list_node *waiter_queue_pop_head(struct waiter_queue *q)
{
    struct list_node *node = waiter_queue_head(q);

    if (node != NULL)
        waiter_queue_remove(q, node);
    return node;
}
