/*
 * lock_table.c - locks by kind and name, and hold records.
 */
#include "engine/lock_table.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/log.h"
#include "base/slab.h"
#include "base/stats.h"
#include "engine/session.h"

static struct hashmap lock_map;

/* The most numerous records, one of each per held lock: a million locks
 * pay every byte a million times, so growing either is a decision made
 * here, not a side effect (x86_64 sizes). */
_Static_assert(sizeof(void *) != 8 || sizeof(struct lock) <= 40,
               "struct lock grew past 40 bytes");
/* The slab's classes are 8 B apart: 8 B off a hold are 8 B off each
 * held lock. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct hold) <= 104,
               "struct hold grew past 104 bytes");

/*
 * Lease mode: fires when the lease set by a hold's last acquire has run
 * out in Redis, and marks it lost then, not at its next UNLOCK. Found by
 * the hold's address in a map of its own, not through a field of every
 * hold: the watchdog's holds, the most numerous, have none.
 */
struct hold_lease {
    struct hashmap_node map_node;
    struct hold *hold;
    struct timer timer;
};

static struct hashmap lease_map;

static const void *lease_key(const struct hashmap_node *node, size_t *len)
{
    *len = sizeof(struct hold *);
    return &list_entry(node, struct hold_lease, map_node)->hold;
}

/* The table's key: the name and the kind's index after it. */
static const void *lock_key(const struct hashmap_node *node, size_t *len)
{
    const struct lock *lock = list_entry(node, struct lock, map_node);

    *len = lock->name_len + 1;
    return lock->name;
}

void lock_table_init(void)
{
    hashmap_init_intrusive(&lock_map, lock_key);
    hashmap_init_intrusive(&lease_map, lease_key);
}

void lock_table_free(void)
{
    hashmap_free(&lock_map);
    hashmap_free(&lease_map);
}

/* How many keys of its own a kind has. */
static size_t kind_keys(const struct lock_kind *kind)
{
    size_t n = 0;

    while (n < LOCK_KIND_MAX_KEYS && kind->keys[n].affix != NULL)
        n++;
    return n;
}

/* A lock's size: the struct, the table key (name + kind byte) and the
 * kind's keys, as lock_create lays them out. */
static size_t lock_size(const struct lock_kind *kind, const char *name,
                        size_t len)
{
    size_t size = sizeof(struct lock) + len + 1;

    for (size_t i = 0; i < kind_keys(kind); i++)
        size += lock_kind_name_len(&kind->keys[i], name, len);
    return size;
}

/* The size lock was allocated with. */
static size_t lock_size_of(const struct lock *lock)
{
    return lock_size(lock_kind_of(lock), lock->name, lock->name_len);
}

/* Adds (sign 1) or takes off (-1) a lock's memory in INFO's figures;
 * size is the one it was allocated with. */
static void lock_count_bytes(size_t size, int sign)
{
    size = slab_size(size);

    stats.lock_bytes += (uint64_t)sign * size;
    stats.lock_string_bytes += (uint64_t)sign * (size - sizeof(struct lock));
    stats.lock_map_bytes = lock_map.bytes;
}

/* One block: the struct, the table key (name + kind byte) and the kind's
 * keys (a plain lock, the most numerous, has none), sized to their
 * lengths: a million locks would otherwise carry the unused part of a
 * bound each. */
static struct lock *lock_create(const struct lock_kind *kind, const char *name,
                                size_t len)
{
    size_t size = lock_size(kind, name, len);
    struct lock *lock = slab_alloc(size);
    char *p;

    if (lock == NULL)
        return NULL;
    memcpy(lock->name, name, len);
    lock->name[len] = (char)lock_kind_index(kind);
    lock->name_len = (uint32_t)len;
    p = lock->name + len + 1;
    for (size_t i = 0; i < kind_keys(kind); i++)
        p += lock_kind_name_of(p, &kind->keys[i], name, len);
    if (hashmap_link(&lock_map, &lock->map_node, lock->name, len + 1) != 0) {
        slab_free(lock, size);
        return NULL;
    }
    stats.lock_entries++;
    lock_count_bytes(size, 1);
    return lock;
}

int lock_waiting_start(struct lock *lock)
{
    struct lock_waiting *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return -ENOMEM;
    w->lock = lock;
    waiter_queue_init(&w->waiters);
    list_init(&w->waiting_link);
    list_init(&w->listener.link);
    lock->waiting = w;
    stats.lock_wait_bytes += malloc_usable_size(w);
    return 0;
}

void lock_waiting_end(struct lock *lock)
{
    stats.lock_wait_bytes -= malloc_usable_size(lock->waiting);
    free(lock->waiting);
    lock->waiting = NULL;
}

const struct waiter_queue *lock_waiters(const struct lock *lock)
{
    static struct waiter_queue none = {{&none.head, &none.head}, 0};

    return lock->waiting != NULL ? &lock->waiting->waiters : &none;
}

size_t lock_keys(const struct lock *lock, const char *keys[LOCK_KIND_MAX_KEYS],
                 size_t key_len[LOCK_KIND_MAX_KEYS])
{
    const struct lock_kind *kind = lock_kind_of(lock);
    const char *p = lock->name + lock->name_len + 1;
    size_t n = kind_keys(kind);

    for (size_t i = 0; i < n; i++) {
        keys[i] = p;
        key_len[i] =
            lock_kind_name_len(&kind->keys[i], lock->name, lock->name_len);
        p += key_len[i];
    }
    return n;
}

size_t lock_channel_len(const struct lock *lock)
{
    return lock_kind_name_len(&lock_kind_of(lock)->channel, lock->name,
                              lock->name_len);
}

size_t lock_channel(const struct lock *lock, char *out)
{
    return lock_kind_name_of(out, &lock_kind_of(lock)->channel, lock->name,
                             lock->name_len);
}

void lock_note_grant(struct lock *lock, int64_t ttl_ms)
{
    lock->last_grant_ttl_ms =
        ttl_ms < LOCK_GRANT_TTL_MAX_MS ? ttl_ms : LOCK_GRANT_TTL_MAX_MS;
}

struct foreach_ctx {
    void (*fn)(struct lock *lock, void *arg);
    void *arg;
};

static void foreach_one(struct hashmap_node *node, void *arg)
{
    struct foreach_ctx *ctx = arg;

    ctx->fn(list_entry(node, struct lock, map_node), ctx->arg);
}

void lock_table_foreach(void (*fn)(struct lock *lock, void *arg), void *arg)
{
    hashmap_visit(&lock_map, foreach_one, &(struct foreach_ctx){fn, arg});
}

struct lock *lock_find(const struct lock_kind *kind, const char *name,
                       size_t len)
{
    char key[len + 1];
    struct hashmap_node *node;

    memcpy(key, name, len);
    key[len] = (char)lock_kind_index(kind);
    node = hashmap_find(&lock_map, key, len + 1);
    return node != NULL ? list_entry(node, struct lock, map_node) : NULL;
}

struct lock *lock_ref(const struct lock_kind *kind, const char *name,
                      size_t len)
{
    struct lock *lock = lock_find(kind, name, len);

    if (lock == NULL)
        lock = lock_create(kind, name, len);
    if (lock != NULL)
        lock->refs++;
    return lock;
}

void lock_unref(struct lock *lock)
{
    size_t size;

    if (--lock->refs > 0)
        return;
    size = lock_size_of(lock);
    hashmap_unlink(&lock_map, &lock->map_node);
    stats.lock_entries--;
    lock_count_bytes(size, -1);
    slab_free(lock, size);
}

size_t owner_field(char *out, const struct lock_kind *kind,
                   const char *client_id, size_t id_len, uint64_t thread_id)
{
    size_t len = id_len + 1, suffix = strlen(kind->field_suffix);

    memcpy(out, client_id, id_len);
    out[id_len] = ':';
    len += format_uint64(out + len, thread_id);
    memcpy(out + len, kind->field_suffix, suffix);
    return len + suffix;
}

struct hold *hold_find(struct lock *lock, const struct session *session,
                       uint64_t thread_id)
{
    struct hold *h, *next;

    lock_for_each_hold (h, next, lock) {
        if (h->session == session && h->thread_id == thread_id)
            return h;
    }
    return NULL;
}

const char *hold_field(const struct hold *h, char buf[OWNER_FIELD_SIZE],
                       size_t *len)
{
    if (h->field_stored) {
        *len = strlen(h->field);
        return h->field;
    }
    *len = owner_field(buf, lock_kind_of(h->lock), h->session->id,
                       h->session->id_len, h->thread_id);
    return buf;
}

struct hold *hold_find_by_field(struct lock *lock, const char *field,
                                size_t len)
{
    struct hold *h, *next;

    lock_for_each_hold (h, next, lock) {
        char buf[OWNER_FIELD_SIZE];
        size_t hlen;
        const char *f = hold_field(h, buf, &hlen);

        if (hlen == len && memcmp(f, field, len) == 0)
            return h;
    }
    return NULL;
}

static hold_loss_fn *loss_listener;

void lock_table_on_loss(hold_loss_fn *fn)
{
    loss_listener = fn;
}

/* h's lease part, or NULL. */
static struct hold_lease *lease_of(const struct hold *h)
{
    struct hashmap_node *node =
        h->leased ? hashmap_find(&lease_map, &h, sizeof(h)) : NULL;

    return node != NULL ? list_entry(node, struct hold_lease, map_node) : NULL;
}

static void lease_ran_out(struct timer *t)
{
    hold_mark_lost(list_entry(t, struct hold_lease, timer)->hold,
                   "its lease ran out");
}

/* A hold's size: the struct and its field when stored (a permit id,
 * hex: no NUL before its end). */
static size_t hold_size(bool stored, size_t field_len)
{
    return sizeof(struct hold) + (stored ? field_len + 1 : 0);
}

/* The size h was allocated with. */
static size_t hold_size_of(const struct hold *h)
{
    return hold_size(h->field_stored, h->field_stored ? strlen(h->field) : 0);
}

/* Adds (sign 1) or takes off (-1) a hold's memory in INFO's figures;
 * size is the one it was allocated with. */
static void hold_count_bytes(size_t size, int sign)
{
    size = slab_size(size);

    stats.hold_bytes += (uint64_t)sign * size;
    stats.hold_string_bytes += (uint64_t)sign * (size - sizeof(struct hold));
}

struct hold *hold_create(struct lock *lock, struct session *session,
                         uint64_t thread_id, const char *field,
                         size_t field_len)
{
    char owner[OWNER_FIELD_SIZE];
    bool stored = owner_field(owner, lock_kind_of(lock), session->id,
                              session->id_len, thread_id) != field_len ||
                  memcmp(owner, field, field_len) != 0;
    size_t size = hold_size(stored, field_len);
    struct hold *h = slab_alloc(size);
    struct hold **tail = &lock->holds;

    if (h == NULL)
        return NULL;
    h->lock = lock;
    h->session = session;
    h->thread_id = thread_id;
    h->field_stored = stored;
    if (stored)
        memcpy(h->field, field, field_len);
    h->refs = 1;
    h->since_ms = timers_now();
    list_init(&h->watchdog_link);
    /* Last, as ever: LOCKS lists a lock's holders oldest first. The walk
     * is as long as a hold_find's, which every call on the lock makes. */
    while (*tail != NULL)
        tail = &(*tail)->lock_next;
    *tail = h;
    list_push_tail(&session->holds, &h->session_link);
    hold_count_bytes(size, 1);
    session->hold_count++;
    lock->refs++;
    stats.held_locks++;
    return h;
}

/* Takes h off its lock's chain: a walk as long as one hold_find's, and a
 * lock has one hold but for shared and permit kinds. */
static void hold_unchain(struct hold *h)
{
    struct hold **pos = &h->lock->holds;

    while (*pos != h)
        pos = &(*pos)->lock_next;
    *pos = h->lock_next;
}

void hold_drop(struct hold *h)
{
    hold_lease_stop(h);
    hold_unchain(h);
    list_remove(&h->session_link);
    h->session->hold_count--;
    lock_unref(h->lock);
    h->lock = NULL;
    h->session = NULL;
    stats.held_locks--;
    hold_unref(h);
}

void hold_unref(struct hold *h)
{
    size_t size;

    if (--h->refs > 0)
        return;
    size = hold_size_of(h);
    hold_count_bytes(size, -1);
    slab_free(h, size);
}

void hold_mark_lost(struct hold *h, const char *why)
{
    char buf[OWNER_FIELD_SIZE];
    const char *field;
    size_t len;

    if (h->lost)
        return;
    h->lost = true;
    hold_lease_stop(h);
    stats.locks_lost++;
    field = hold_field(h, buf, &len);
    log_warn("lock '%.*s' held by %.*s lost: %s", (int)h->lock->name_len,
             h->lock->name, (int)len, field, why);
    if (loss_listener != NULL)
        loss_listener(h, why);
}

/* Gives h, which has none, its lease part; NULL when out of memory. */
static struct hold_lease *hold_lease_make(struct hold *h)
{
    struct hold_lease *lease = slab_alloc(sizeof(*lease));

    if (lease == NULL)
        return NULL;
    lease->hold = h;
    if (hashmap_link(&lease_map, &lease->map_node, &lease->hold,
                     sizeof(lease->hold)) != 0) {
        slab_free(lease, sizeof(*lease));
        return NULL;
    }
    timer_init(&lease->timer, lease_ran_out);
    h->leased = true;
    stats.hold_bytes += slab_size(sizeof(*lease));
    return lease;
}

void hold_lease_start(struct hold *h, int64_t lease_ms)
{
    uint64_t due = timers_now() + (uint64_t)lease_ms;

    /* A shared hold's key (a read-write lock's hash) lives as long as its
     * longest lease: a shorter one does not bring its end closer. */
    struct hold_lease *lease = lease_of(h);

    if (lock_kind_of(h->lock)->shared && lease != NULL &&
        timer_armed(&lease->timer) && lease->timer.due_ms > due)
        return;
    if (lease == NULL)
        lease = hold_lease_make(h);
    if (lease == NULL || timer_start(&lease->timer, due) != 0)
        log_warn("out of memory: '%.*s' is found lost at its next UNLOCK, "
                 "not when its lease runs out",
                 (int)h->lock->name_len, h->lock->name);
}

void hold_lease_stop(struct hold *h)
{
    struct hold_lease *lease = lease_of(h);

    if (lease == NULL)
        return;
    timer_stop(&lease->timer);
    hashmap_unlink(&lease_map, &lease->map_node);
    h->leased = false;
    stats.hold_bytes -= slab_size(sizeof(*lease));
    slab_free(lease, sizeof(*lease));
}
