/*
 * lock_table.h - what this rlockd knows about each lock name: its local
 * waiters, the owners that hold it through this daemon, and its pub/sub
 * channel.
 *
 * Owns struct lock (one per name in use, found by name) and struct hold
 * (one per owner holding a lock: a session plus a thread-id). Redis is
 * the truth about who holds a lock; a hold is this daemon's record that
 * one of its clients does, which it needs to renew the lock, to release
 * it when the client goes, and to tell "lost" from "never held".
 *
 * A lock lives while anything refers to it: a hold, a call in progress,
 * a release in flight. It never talks to Redis itself.
 */
#ifndef RLOCKD_LOCK_TABLE_H
#define RLOCKD_LOCK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "command.h"
#include "base/list.h"
#include "engine/waiter_queue.h"

/* "<client-id>:<thread-id>": 64 + 1 + 20 digits + NUL */
#define OWNER_FIELD_SIZE (CLIENT_ID_MAX_LEN + 22)

struct session;
struct subscription;

struct lock {
    char *name;
    size_t name_len;
    char *channel;
    size_t channel_len;
    unsigned shard; /* pool connection for this name */
    unsigned refs;
    struct waiter_queue waiters; /* struct lock_call, oldest first */
    struct list_node holds;      /* struct hold.lock_link */
    int64_t last_grant_ttl_ms;   /* TTL set by this daemon's last acquire */
    struct subscription *subscription;
    struct list_node listen_link; /* in subscription->listeners */
};

struct hold {
    struct lock *lock; /* NULL once dropped */
    struct session *session;
    uint64_t thread_id;
    char field[OWNER_FIELD_SIZE];
    size_t field_len;
    int64_t lease_ms; /* PEXPIRE used on reentrant release */
    bool watchdog;    /* renewed by the watchdog */
    bool lost;        /* Redis no longer has it */
    struct list_node lock_link;
    struct list_node session_link;
    struct list_node watchdog_link;
    uint64_t renew_due_ms;
    unsigned renewals_inflight; /* batches still pointing at it */
    /* Bumped when a lost hold is acquired again, so that a renewal sent
     * before that cannot judge the new hold by the old one's fate. */
    uint32_t epoch;
};

void lock_table_init(void);
void lock_table_free(void);
/* Finds or creates the lock and takes a reference; NULL when out of memory. */
struct lock *lock_acquire_ref(const char *name, size_t len);
void lock_release_ref(struct lock *lock);
size_t lock_table_size(void);
void lock_table_foreach(void (*fn)(struct lock *lock, void *arg), void *arg);

/* Formats an owner's Redis field; returns its length. */
size_t owner_field(char *out, const char *client_id, size_t id_len,
                   uint64_t thread_id);

struct hold *hold_find(struct lock *lock, const struct session *session,
                       uint64_t thread_id);
/* Records that session/thread holds lock; NULL when out of memory. */
struct hold *hold_create(struct lock *lock, struct session *session,
                         uint64_t thread_id);
/* Forgets a hold (unlocked, or its session ended). */
void hold_drop(struct hold *hold);
/* Marks a hold lost (Redis no longer has it); counts it once. */
void hold_mark_lost(struct hold *hold, const char *why);
size_t hold_count(void);

#endif
