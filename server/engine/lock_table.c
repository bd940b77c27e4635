/*
 * lock_table.c - lock entries by name, and hold records.
 */
#include "engine/lock_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/log.h"
#include "backend/redis_pool.h"
#include "engine/scripts.h"
#include "engine/session.h"
#include "base/stats.h"
#include "engine/watchdog.h"

static struct hashmap locks;
static size_t holds_live;

void lock_table_init(void)
{
    hashmap_init(&locks);
}

void lock_table_free(void)
{
    hashmap_free(&locks);
}

size_t lock_table_size(void)
{
    return locks.size;
}

struct foreach_ctx {
    void (*fn)(struct lock *lock, void *arg);
    void *arg;
};

static void foreach_one(void *value, void *arg)
{
    struct foreach_ctx *ctx = arg;
    ctx->fn(value, ctx->arg);
}

void lock_table_foreach(void (*fn)(struct lock *lock, void *arg), void *arg)
{
    struct foreach_ctx ctx = {fn, arg};
    hashmap_foreach(&locks, foreach_one, &ctx);
}

static struct lock *lock_create(const char *name, size_t len)
{
    struct lock *lock = calloc(1, sizeof(*lock) + len + 1);

    if (lock == NULL)
        return NULL;
    lock->name = (char *)(lock + 1);
    memcpy(lock->name, name, len);
    lock->name_len = len;
    lock->channel = script_channel_name(name, len, &lock->channel_len);
    if (lock->channel == NULL) {
        free(lock);
        return NULL;
    }
    lock->shard = redis_pool_shard(name, len);
    waiter_queue_init(&lock->waiters);
    list_init(&lock->holds);
    list_init(&lock->listen_link);
    if (hashmap_put(&locks, lock->name, len, lock) != 0) {
        free(lock->channel);
        free(lock);
        return NULL;
    }
    return lock;
}

struct lock *lock_acquire_ref(const char *name, size_t len)
{
    struct lock *lock = hashmap_get(&locks, name, len);

    if (lock == NULL)
        lock = lock_create(name, len);
    if (lock != NULL)
        lock->refs++;
    return lock;
}

void lock_release_ref(struct lock *lock)
{
    if (--lock->refs > 0)
        return;
    hashmap_remove(&locks, lock->name, lock->name_len);
    free(lock->channel);
    free(lock);
}

size_t owner_field(char *out, const char *client_id, size_t id_len,
                   uint64_t thread_id)
{
    memcpy(out, client_id, id_len);
    out[id_len] = ':';
    return id_len + 1 + format_uint64(out + id_len + 1, thread_id);
}

struct hold *hold_find(struct lock *lock, const struct session *session,
                       uint64_t thread_id)
{
    struct list_node *pos, *tmp;

    list_for_each_safe(pos, tmp, &lock->holds)
    {
        struct hold *h = list_entry(pos, struct hold, lock_link);
        if (h->session == session && h->thread_id == thread_id)
            return h;
    }
    return NULL;
}

struct hold *hold_create(struct lock *lock, struct session *session,
                         uint64_t thread_id)
{
    struct hold *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return NULL;
    h->lock = lock;
    h->session = session;
    h->thread_id = thread_id;
    h->field_len =
        owner_field(h->field, session->id, session->id_len, thread_id);
    list_init(&h->watchdog_link);
    list_push_tail(&lock->holds, &h->lock_link);
    session_add_hold(session, h);
    lock->refs++;
    holds_live++;
    return h;
}

void hold_drop(struct hold *h)
{
    watchdog_stop(h);
    list_remove(&h->lock_link);
    session_remove_hold(h->session, h);
    lock_release_ref(h->lock);
    h->lock = NULL;
    h->session = NULL;
    holds_live--;
    /* A renewal batch still pointing at it frees it when it returns. */
    if (h->renewals_inflight == 0)
        free(h);
}

void hold_mark_lost(struct hold *h, const char *why)
{
    if (h->lost)
        return;
    h->lost = true;
    watchdog_stop(h);
    stats.locks_lost++;
    log_warn("lock '%.*s' held by %s lost: %s", (int)h->lock->name_len,
             h->lock->name, h->field, why);
}

size_t hold_count(void)
{
    return holds_live;
}
