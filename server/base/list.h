/*
 * list.h - an intrusive doubly linked list, as in the Linux kernel and
 * libuv's queue.h: the node lives inside the object, so linking and
 * unlinking never allocate and an object can be removed in O(1) from any
 * list it is on.
 */
#ifndef RLOCKD_LIST_H
#define RLOCKD_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
    struct list_node *prev, *next;
};

#define list_entry(node, type, member)                                         \
    ((type *)((char *)(node)-offsetof(type, member)))

static inline void list_init(struct list_node *head)
{
    head->prev = head->next = head;
}

static inline bool list_empty(const struct list_node *head)
{
    return head->next == head;
}

/* An unlinked node points at itself, so list_linked is cheap and safe. */
static inline bool list_linked(const struct list_node *node)
{
    return node->next != node && node->next != NULL;
}

static inline void list_insert_before(struct list_node *pos,
                                      struct list_node *node)
{
    node->prev = pos->prev;
    node->next = pos;
    pos->prev->next = node;
    pos->prev = node;
}

static inline void list_push_tail(struct list_node *head,
                                  struct list_node *node)
{
    list_insert_before(head, node);
}

static inline void list_remove(struct list_node *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    list_init(node);
}

static inline struct list_node *list_first(const struct list_node *head)
{
    return list_empty(head) ? NULL : head->next;
}

/* Safe against removal of the current node. */
static inline struct list_node *list_last(const struct list_node *head)
{
    return list_empty(head) ? NULL : head->prev;
}

#define list_for_each_safe(pos, tmp, head)                                     \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);           \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
