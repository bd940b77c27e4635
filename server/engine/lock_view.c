/*
 * lock_view.c - who holds what and who waits for whom, as this daemon
 * sees it: LOCKS and GET /locks (lock_engine_view).
 *
 * A view is read from the lock table when it is asked for, never kept:
 * the locks with a hold or a queued waiter here, each with its holds
 * (their counts, and how long since their first grant) and its queue in
 * order (how long each call has waited, and what it asked). Sorted by
 * the longest wait, so that a stuck job is on the first page, whatever
 * the table's size: the walk collects one small record per lock that
 * passes the filter and sorts those, O(n log n) in the locks shown, and
 * only the page asked for is described. Holders known only to Redis
 * (Java, another rlockd) are OWNERS', which asks Redis.
 *
 * Owns nothing past a call. Never changes a lock, a hold or a call.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

/* "TRYLOCK WAIT 1000000000000 EXPIRABLE LEASE 1000000000000" fits. */
#define ASKED_MAX 96
#define KIND_WORD_MAX 16

struct view_entry {
    struct lock *lock;
    uint64_t oldest_wait_us; /* the earliest start of a queued call */
    uint64_t oldest_hold_ms; /* the earliest first grant of a hold */
};

struct view_walk {
    lock_view_filter_fn *filter;
    void *arg;
    struct view_entry *entries;
    size_t count, size;
    int err;
};

/* Makes room for one more element of elem bytes in *array (count in use,
 * *size allocated), doubling it; 0 or -ENOMEM. */
static int room_for_one(void *array, size_t count, size_t *size, size_t elem)
{
    void **p = array;
    size_t more = *size ? 2 * *size : 64;
    void *grown;

    if (count < *size)
        return 0;
    grown = realloc(*p, more * elem);
    if (grown == NULL)
        return -ENOMEM;
    *p = grown;
    *size = more;
    return 0;
}

static void collect(struct lock *lock, void *arg)
{
    struct view_walk *w = arg;
    struct view_entry e = {lock, UINT64_MAX, UINT64_MAX};
    struct list_node *pos, *tmp;
    struct hold *h, *next;

    if (w->err != 0 || (lock->holds == NULL && lock->waiting == NULL) ||
        !w->filter(lock->name, lock->name_len, w->arg))
        return;
    list_for_each_safe (pos, tmp, &lock_waiters(lock)->head) {
        const struct lock_call *c =
            list_entry(pos, struct lock_call, queue_link);
        if (c->started_us < e.oldest_wait_us)
            e.oldest_wait_us = c->started_us;
    }
    lock_for_each_hold (h, next, lock) {
        if (h->since_ms < e.oldest_hold_ms)
            e.oldest_hold_ms = h->since_ms;
    }
    w->err = room_for_one(&w->entries, w->count, &w->size, sizeof(e));
    if (w->err == 0)
        w->entries[w->count++] = e;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* The longest wait first (the earliest start), then the longest held,
 * then the name and the kind, so that a page's order is stable. */
static int entry_order(const void *pa, const void *pb)
{
    const struct view_entry *a = pa, *b = pb;
    size_t n = a->lock->name_len < b->lock->name_len ? a->lock->name_len
                                                     : b->lock->name_len;
    int c = cmp_u64(a->oldest_wait_us, b->oldest_wait_us);

    if (c == 0)
        c = cmp_u64(a->oldest_hold_ms, b->oldest_hold_ms);
    if (c == 0)
        c = memcmp(a->lock->name, b->lock->name, n);
    if (c == 0)
        c = cmp_u64(a->lock->name_len, b->lock->name_len);
    return c != 0 ? c
                  : strcmp(lock_kind_of(a->lock)->name,
                           lock_kind_of(b->lock)->name);
}

/* The kind as a command names it, in lower case; RLock's is "lock", as
 * OWNERS answers for it. */
static const char *kind_word(const struct lock_kind *kind, char *out)
{
    size_t i = 0;

    if (kind->word[0] == '\0')
        return "lock";
    for (; kind->word[i] != '\0' && i < KIND_WORD_MAX - 1; i++)
        out[i] = (char)tolower((unsigned char)kind->word[i]);
    out[i] = '\0';
    return out;
}

/* What a waiting call asked, as its command would say it. */
static void describe_asked(const struct lock_call *c, char *out)
{
    const struct lock_kind *kind = lock_kind_of(c->lock);
    int n;

    if (kind->holds == HOLDS_REENTRANT) {
        n = c->wait_ms < 0
                ? snprintf(out, ASKED_MAX, "LOCK")
                : snprintf(out, ASKED_MAX, "TRYLOCK WAIT %" PRId64, c->wait_ms);
        if (kind->word[0] != '\0')
            n += snprintf(out + n, ASKED_MAX - (size_t)n, " %s", kind->word);
    } else {
        n = snprintf(out, ASKED_MAX, "%s",
                     kind->holds == HOLDS_NOTHING ? "AWAIT" : "ACQUIRE");
        if (c->amount > 1 && kind->holds != HOLDS_NOTHING)
            n += snprintf(out + n, ASKED_MAX - (size_t)n, " PERMITS %" PRId64,
                          c->amount);
        if (c->wait_ms >= 0)
            n += snprintf(out + n, ASKED_MAX - (size_t)n, " WAIT %" PRId64,
                          c->wait_ms);
        if (kind->holds == HOLDS_PERMIT_IDS)
            n += snprintf(out + n, ASKED_MAX - (size_t)n, " EXPIRABLE");
    }
    if (c->lease_ms > 0)
        snprintf(out + n, ASKED_MAX - (size_t)n, " LEASE %" PRId64,
                 c->lease_ms);
}

/* Describes one lock and hands it to fn; 0, fn's error or -ENOMEM. */
static int show(struct lock *lock, lock_view_fn *fn, void *arg)
{
    size_t nh = 0, nw = lock_waiters(lock)->length, i = 0;
    uint64_t now_ms = timers_now(), now_us = timers_now_us();
    struct lock_view_owner *owners;
    char(*asked)[ASKED_MAX];
    char(*fields)[OWNER_FIELD_SIZE]; /* holders' fields, made here */
    char word[KIND_WORD_MAX];
    struct list_node *pos, *tmp;
    const struct hold *h, *next;
    struct lock_view v = {lock->name, lock->name_len, NULL, -1,
                          0,          NULL,           0,    NULL};
    int err;

    lock_for_each_hold (h, next, lock)
        nh++;
    owners = calloc(nh + nw + 1, sizeof(*owners));
    asked = calloc(nw + 1, sizeof(*asked));
    fields = calloc(nh + 1, sizeof(*fields));
    if (owners == NULL || asked == NULL || fields == NULL) {
        free(owners);
        free(asked);
        free(fields);
        return -ENOMEM;
    }
    lock_for_each_hold (h, next, lock) {
        size_t len;
        const char *field = hold_field(h, fields[i], &len);

        owners[i++] = (struct lock_view_owner){
            h->session,
            field,
            len,
            h->count,
            now_ms > h->since_ms ? now_ms - h->since_ms : 0,
            NULL};
        if (h->lease_ms > v.ttl_ms)
            v.ttl_ms = h->lease_ms;
    }
    list_for_each_safe (pos, tmp, &lock_waiters(lock)->head) {
        const struct lock_call *c =
            list_entry(pos, struct lock_call, queue_link);

        describe_asked(c, asked[i - nh]);
        owners[i] = (struct lock_view_owner){
            c->session,
            c->field,
            c->field_len,
            c->amount,
            now_us > c->started_us ? (now_us - c->started_us) / 1000 : 0,
            asked[i - nh]};
        i++;
    }
    v.kind = kind_word(lock_kind_of(lock), word);
    v.holder_count = nh;
    v.holders = owners;
    v.waiter_count = i - nh;
    v.waiters = owners + nh;
    err = fn(&v, arg);
    free(owners);
    free(asked);
    free(fields);
    return err;
}

/* Moves heap[i] down to its place in a heap of n whose top is the last
 * in the view's order. */
static void sift_down(struct view_entry *heap, size_t n, size_t i)
{
    for (;;) {
        size_t worst = i, l = 2 * i + 1, r = l + 1;
        struct view_entry t;

        if (l < n && entry_order(&heap[l], &heap[worst]) > 0)
            worst = l;
        if (r < n && entry_order(&heap[r], &heap[worst]) > 0)
            worst = r;
        if (worst == i)
            return;
        t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

/*
 * Puts the first k entries of the view's order, sorted, at the front:
 * a heap of k keeps the best seen while the rest stream past, so that a
 * first page of 100 among 100,000 locks costs one comparison for most
 * (a full sort took 300 ms there); a deep page sorts all.
 */
static void order_first(struct view_entry *e, size_t n, size_t k)
{
    if (k < n / 2) {
        for (size_t i = k / 2; i-- > 0;)
            sift_down(e, k, i);
        for (size_t i = k; i < n && k > 0; i++) {
            if (entry_order(&e[i], &e[0]) < 0) {
                e[0] = e[i];
                sift_down(e, k, 0);
            }
        }
        n = k;
    }
    if (n > 0)
        qsort(e, n, sizeof(*e), entry_order);
}

int64_t lock_engine_view(lock_view_filter_fn *filter, size_t offset,
                         size_t count, lock_view_fn *fn, void *arg)
{
    struct view_walk w = {.filter = filter, .arg = arg};
    int err = 0;

    lock_table_foreach(collect, &w);
    if (w.err != 0) {
        free(w.entries);
        return w.err;
    }
    order_first(w.entries, w.count,
                offset < w.count && count < w.count - offset ? offset + count
                                                             : w.count);
    for (size_t i = offset; i < w.count && i - offset < count && err == 0; i++)
        err = show(w.entries[i].lock, fn, arg);
    free(w.entries);
    return err != 0 ? err : (int64_t)w.count;
}

/* ---- sessions ------------------------------------------------------------ */

struct session_walk {
    struct session **sessions;
    size_t count, size;
    int err;
};

static void collect_session(struct session *s, void *arg)
{
    struct session_walk *w = arg;

    if (w->err == 0)
        w->err = room_for_one(&w->sessions, w->count, &w->size, sizeof(s));
    if (w->err == 0)
        w->sessions[w->count++] = s;
}

/* By client-id, so that pages of sessions follow one another. */
static int session_order(const void *pa, const void *pb)
{
    const struct session *a = *(struct session *const *)pa;
    const struct session *b = *(struct session *const *)pb;

    return strcmp(a->id, b->id);
}

int64_t lock_engine_sessions_view(size_t offset, size_t count,
                                  session_view_fn *fn, void *arg)
{
    struct session_walk w = {0};
    int err = 0;

    session_table_foreach(collect_session, &w);
    if (w.err != 0) {
        free(w.sessions);
        return w.err;
    }
    if (w.count > 0)
        qsort(w.sessions, w.count, sizeof(*w.sessions), session_order);
    for (size_t i = offset; i < w.count && i - offset < count && err == 0;
         i++) {
        const struct session *s = w.sessions[i];

        err = fn(&(struct session_view){s, s->id, s->id_len, s->connections,
                                        s->hold_count, s->waiting_count,
                                        s->has_secret},
                 arg);
    }
    free(w.sessions);
    return err != 0 ? err : (int64_t)w.count;
}
