/*
 * watchdog.c - the renewal schedule, batched renewals; and a second timer
 * for waiters' places in a queue in Redis.
 *
 * A hold is due one third of its lease after its last renewal. When the
 * timer fires, every hold due within the next coalescing window is taken
 * too: renewing a little early is harmless, and it turns many timers
 * that would fire milliseconds apart into one Redis call.
 *
 * The schedule is one list per delay (as Node.js keeps its timers, one
 * list per duration: lib/internal/timers.js): a hold scheduled delay
 * from now goes at the tail of that delay's list, which is so always in
 * due order, since now only grows. There are few delays (0 for a hold
 * taken over, a third of each lease in use and its retry), so the first
 * hold due is found among a few lists' heads: scheduling and taking the
 * next hold cost O(1) however many holds there are, where one list in
 * due order had a retry walk past every hold due later.
 *
 * A batch in flight holds a reference on each of its holds (hold_unref
 * frees): a hold dropped or lost meanwhile is not judged by its result
 * (a lost hold is never held again: its owner is told, and a new
 * acquire makes a new hold).
 *
 * A renewal that cannot be sent because its key cannot be served (Redis
 * down, its connection not back yet) is parked, not retried on a timer:
 * with a million holds, a retry every RENEW_RETRY_MS walked them all
 * twice a second for as long as Redis was away. The backend says when
 * keys can be served again (watchdog_backend_ready), and the parked
 * holds are renewed then; if Redis let them lapse meanwhile, that
 * renewal finds them gone and their owners are told.
 *
 * At most renew_calls_in_flight calls of one key group (a whole
 * Standalone Redis, one Cluster slot) are sent and unanswered; the rest
 * of a round waits in order (struct group_calls) and goes as replies
 * come. A round of a million holds is some ten thousand calls of 100 B
 * per hold: sent at once, they sat in the link's buffer and in Redis's,
 * 10 to 20 MB, until Redis had run them all; a few dozen calls keep Redis
 * as busy. The bound is the group's, not the daemon's, so that a Cluster
 * master that hangs holds back only its own slots' renewals, not every
 * other master's until its link is dropped. A batch that waited is sent
 * without the entries that no longer need it (a hold dropped or lost
 * meanwhile, a place dropped).
 */
#include "engine/watchdog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/log.h"
#include "base/stats.h"
#include "engine/lock_table.h"
#include "engine/timer.h"

/* Retry a renewal that could not be sent or answered this soon, or
 * within a tenth of the lease when that is sooner: a retry must come well
 * before the lock's TTL runs out, whatever watchdog_timeout_ms is. */
#define RENEW_RETRY_MS 500
/* Holds due within interval / COALESCE_DIVISOR of the first go with it. */
#define COALESCE_DIVISOR 8
/* The most delays the schedule keeps a list for. A watchdog hold's lease
 * is the watchdog_timeout_ms of its acquire, so a few lists are in use,
 * unless watchdog_timeout_ms is reloaded many times while holds live;
 * a list whose holds are all gone is taken for the next new delay. */
#define SCHEDULE_LISTS 32

/* The holds scheduled delay_ms after a moment: in due order. */
struct due_list {
    uint64_t delay_ms;
    struct list_node holds; /* struct hold.watchdog_link, by renew_due_ms */
};

/* A batch renews holds, or waiters' places (row is a kind's
 * place_renewal), of one kind and key group. */
struct renew_batch {
    const struct lock_kind_renewal *row;
    bool places;
    /* Its kind's index, places, its key group: its round's map key;
     * key[2] also finds its group_calls once it is sent. */
    unsigned key[3];
    struct renew_batch *next; /* once full, until sent; while waiting */
    size_t count;
    union renew_entry {
        struct hold *hold;
        struct watchdog_place *place;
    } entries[];
};

struct watchdog_place {
    struct list_node link; /* watchdog.places, until dropped */
    struct lock *lock;     /* a reference */
    void (*gone)(void *owner);
    void *owner;     /* NULL once dropped */
    unsigned refs;   /* its owner's, and one per renewal in flight */
    int64_t wait_ms; /* the wait its acquire counts a place ahead for */
    size_t field_len;
    char field[];
};

static struct {
    const struct config *cfg;
    const struct backend *backend;
    struct timer timer; /* at the first due time of all the lists */
    struct due_list lists[SCHEDULE_LISTS];
    size_t list_count; /* lists[] taken so far */
    struct timer places_timer;
    struct list_node places; /* struct watchdog_place.link */
    struct list_node parked; /* struct hold.watchdog_link: key not servable */
    struct hashmap groups;   /* key group -> struct group_calls, while any */
} watchdog;

/* One key group's renewal calls: those sent and not answered, and the
 * batches behind them, in order (renew_batch.next). Freed when it has
 * neither. */
struct group_calls {
    unsigned group;
    int64_t in_flight;
    struct renew_batch *waiting, **waiting_tail;
};

static struct hold *first_hold(const struct due_list *list)
{
    return list_entry(list->holds.next, struct hold, watchdog_link);
}

/* When a scheduled hold is due, from the low 32 bits it keeps: a due
 * time is at most watchdog_timeout_ms / 3 (config.c bounds it to a day)
 * ahead of now, or behind it by the loop's lateness, so the 2^32 ms
 * around now tell them apart, up to 24 days either way. */
static uint64_t due_of(const struct hold *h, uint64_t now)
{
    uint32_t ahead = h->renew_due_ms - (uint32_t)now;

    return ahead < UINT32_C(1) << 31 ? now + ahead
                                     : now - (uint32_t)(UINT32_C(0) - ahead);
}

/* The list whose first hold is due soonest (the first such list on a
 * tie), or NULL when none has a hold. */
static struct due_list *earliest_list(uint64_t now)
{
    struct due_list *best = NULL;

    for (size_t i = 0; i < watchdog.list_count; i++) {
        struct due_list *list = &watchdog.lists[i];

        if (!list_empty(&list->holds) &&
            (best == NULL ||
             due_of(first_hold(list), now) < due_of(first_hold(best), now)))
            best = list;
    }
    return best;
}

static void arm_timer(void)
{
    uint64_t now = timers_now();
    struct due_list *first = earliest_list(now);

    if (first == NULL) {
        timer_stop(&watchdog.timer);
        return;
    }
    if (timer_start(&watchdog.timer, due_of(first_hold(first), now)) != 0)
        log_error("watchdog: out of memory arming its timer");
}

/* The list for holds scheduled delay from now: its own, or one with no
 * holds taken for it. When all SCHEDULE_LISTS have holds of other
 * delays, the list of the nearest shorter delay (else the first), where
 * schedule() walks past the few holds of longer delays. */
static struct due_list *list_for(uint64_t delay)
{
    struct due_list *spare = NULL, *shorter = NULL;

    for (size_t i = 0; i < watchdog.list_count; i++) {
        struct due_list *list = &watchdog.lists[i];

        if (list->delay_ms == delay)
            return list;
        if (spare == NULL && list_empty(&list->holds))
            spare = list;
        if (list->delay_ms < delay &&
            (shorter == NULL || list->delay_ms > shorter->delay_ms))
            shorter = list;
    }
    if (spare == NULL && watchdog.list_count < SCHEDULE_LISTS) {
        spare = &watchdog.lists[watchdog.list_count++];
        list_init(&spare->holds);
    }
    if (spare != NULL) {
        spare->delay_ms = delay;
        return spare;
    }
    return shorter != NULL ? shorter : &watchdog.lists[0];
}

/* Schedules h delay from now at the tail of its delay's list; the walk
 * back from the tail passes holds due later only in a list shared by
 * several delays (list_for says when). */
static void schedule(struct hold *h, uint64_t delay)
{
    struct due_list *list = list_for(delay);
    struct list_node *pos = list->holds.prev;
    uint64_t now = timers_now(), due = now + delay;

    h->renew_due_ms = (uint32_t)due;
    while (pos != &list->holds &&
           due_of(list_entry(pos, struct hold, watchdog_link), now) > due)
        pos = pos->prev;
    list_insert_before(pos->next, &h->watchdog_link);
    stats.watchdog_locks++;
    if (list->holds.next == &h->watchdog_link)
        arm_timer();
}

static uint64_t interval_of(const struct hold *h)
{
    return (uint64_t)(h->lease_ms / 3 > 0 ? h->lease_ms / 3 : 1);
}

static uint64_t retry_of(const struct hold *h)
{
    uint64_t tenth = (uint64_t)(h->lease_ms / 10 > 0 ? h->lease_ms / 10 : 1);

    return tenth < RENEW_RETRY_MS ? tenth : RENEW_RETRY_MS;
}

void watchdog_start(struct hold *h)
{
    if (!list_linked(&h->watchdog_link))
        schedule(h, interval_of(h));
}

void watchdog_start_now(struct hold *h)
{
    watchdog_stop(h);
    schedule(h, 0);
}

void watchdog_stop(struct hold *h)
{
    if (!list_linked(&h->watchdog_link))
        return;
    list_remove(&h->watchdog_link);
    stats.watchdog_locks--;
}

static void place_unref(struct watchdog_place *p)
{
    if (--p->refs > 0)
        return;
    lock_unref(p->lock);
    free(p);
}

/* A place's renewal result: one found gone is its owner's to act on (it
 * asks again); one not answered is renewed at the next round, well
 * before it runs out. */
static void place_done(struct renew_batch *batch,
                       const struct backend_value *reply, size_t i)
{
    struct watchdog_place *p = batch->entries[i].place;

    if (reply != NULL && p->owner != NULL &&
        !batch->row->renewed(&reply->element[i]))
        p->gone(p->owner);
    place_unref(p);
}

/* A hold taken off the schedule for a batch is still the batch's to
 * renew and judge: not dropped, lost, no longer renewed, or lost and
 * acquired again (then already back on the schedule). */
static bool still_batched(const struct hold *h)
{
    return h->lock != NULL && !h->lost && h->watchdog &&
           !list_linked(&h->watchdog_link);
}

static void hold_done(struct renew_batch *batch,
                      const struct backend_value *reply, size_t i)
{
    struct hold *h = batch->entries[i].hold;

    if (still_batched(h)) {
        if (reply == NULL)
            schedule(h, retry_of(h));
        else if (batch->row->renewed(&reply->element[i]))
            schedule(h, interval_of(h));
        else
            hold_mark_lost(h, "watchdog found the lock gone");
    }
    hold_unref(h);
}

static void send_waiting(struct group_calls *g);

static void batch_done(void *arg, const struct backend_value *reply)
{
    struct renew_batch *batch = arg;
    /* Its group lives while the batch is in flight: it is counted out
     * once the results are acted on. */
    struct group_calls *g =
        hashmap_get(&watchdog.groups, &batch->key[2], sizeof(batch->key[2]));
    bool valid = reply != NULL && reply->type == VALUE_ARRAY &&
                 reply->elements == batch->count;

    if (!valid)
        log_warn("watchdog: renewal of %zu %s failed: %s; retrying",
                 batch->count, batch->places ? "queue place(s)" : "lock(s)",
                 reply == NULL                ? "Redis unavailable"
                 : reply->type == VALUE_ERROR ? reply->str
                                              : "unexpected reply");
    for (size_t i = 0; i < batch->count; i++)
        (batch->places ? place_done : hold_done)(batch, valid ? reply : NULL,
                                                 i);
    free(batch);
    g->in_flight--;
    send_waiting(g);
}

/* What the renewal row needs of entry i: its lock, its owner's field,
 * and how far ahead it is renewed (a hold's lease; a place's
 * watchdog_timeout_ms and wait). */
static struct lock_call_args entry_args(const struct renew_batch *batch,
                                        size_t i,
                                        const char *keys[LOCK_KIND_MAX_KEYS],
                                        size_t key_len[LOCK_KIND_MAX_KEYS],
                                        char field[OWNER_FIELD_SIZE])
{
    const struct hold *h = batch->places ? NULL : batch->entries[i].hold;
    const struct watchdog_place *p =
        batch->places ? batch->entries[i].place : NULL;
    const struct lock *lock = h != NULL ? h->lock : p->lock;
    size_t field_len = p != NULL ? p->field_len : 0;
    const char *owner = h != NULL ? hold_field(h, field, &field_len) : p->field;

    lock_keys(lock, keys, key_len);
    return (struct lock_call_args){.name = lock->name,
                                   .name_len = lock->name_len,
                                   .keys = keys,
                                   .key_len = key_len,
                                   .field = owner,
                                   .field_len = field_len,
                                   .lease_ms = h != NULL ? h->lease_ms : 0,
                                   .place_ms =
                                       watchdog.cfg->watchdog_timeout_ms,
                                   .queue_wait_ms = p != NULL ? p->wait_ms : 0};
}

/* A batch that could not be sent (err): its places are renewed at the
 * next round; its holds wait for their key to be servable (-ENOTCONN)
 * when the backend says it is not, else are retried soon. */
static void batch_unsent(struct renew_batch *batch, int err)
{
    for (size_t i = 0; i < batch->count; i++) {
        struct hold *h = batch->entries[i].hold;

        if (batch->places) {
            place_unref(batch->entries[i].place);
            continue;
        }
        if (err == -ENOTCONN &&
            !watchdog.backend->key_ready(h->lock->name, h->lock->name_len)) {
            list_push_tail(&watchdog.parked, &h->watchdog_link);
            stats.watchdog_locks++;
        } else {
            schedule(h, retry_of(h));
        }
        hold_unref(h);
    }
    free(batch);
}

/* Takes out of a batch that waited the entries that no longer need it;
 * returns how many are left. */
static size_t batch_compact(struct renew_batch *batch)
{
    size_t kept = 0;

    for (size_t i = 0; i < batch->count; i++) {
        union renew_entry e = batch->entries[i];

        if (batch->places ? e.place->owner != NULL : still_batched(e.hold))
            batch->entries[kept++] = e;
        else if (batch->places)
            place_unref(e.place);
        else
            hold_unref(e.hold);
    }
    batch->count = kept;
    return kept;
}

/* Sends one batch now (true); if it cannot be, its holds go back on the
 * schedule or wait for their keys (batch_unsent). */
static bool send_now(struct renew_batch *batch)
{
    const struct lock_kind_renewal *r = batch->row;
    size_t n = batch->count, nkeys = n * (size_t)r->keys_per_hold,
           argc = nkeys + n * (size_t)r->args_per_hold;
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *len = malloc(argc * sizeof(*len));
    char(*numbers)[LOCK_KIND_RENEW_NUMBERS] = malloc(n * sizeof(*numbers));
    char(*fields)[OWNER_FIELD_SIZE] = malloc(n * sizeof(*fields));
    int err = -ENOMEM;

    if (argv != NULL && len != NULL && numbers != NULL && fields != NULL) {
        for (size_t i = 0; i < n; i++) {
            const char *keys[LOCK_KIND_MAX_KEYS];
            size_t key_len[LOCK_KIND_MAX_KEYS];
            struct lock_call_args a =
                entry_args(batch, i, keys, key_len, fields[i]);
            size_t k = i * (size_t)r->keys_per_hold,
                   g = nkeys + i * (size_t)r->args_per_hold;

            r->add(&a, argv + k, len + k, argv + g, len + g, numbers[i]);
        }
        err = watchdog.backend->eval(
            &(struct backend_call){r->script, argv[0], len[0], (int)nkeys,
                                   (int)argc, argv, len},
            batch_done, batch);
    }
    free(argv);
    free(len);
    free(numbers);
    free(fields);
    if (err == 0) {
        stats.watchdog_batches++;
        *(batch->places ? &stats.fair_place_renewals
                        : &stats.watchdog_renewals) += n;
        return true;
    }
    batch_unsent(batch, err);
    return false;
}

/* Sends the group's waiting batches while fewer than
 * renew_calls_in_flight of its calls are unanswered; frees the group
 * once it has neither. */
static void send_waiting(struct group_calls *g)
{
    struct renew_batch *batch;

    while (g->in_flight < watchdog.cfg->renew_calls_in_flight &&
           (batch = g->waiting) != NULL) {
        g->waiting = batch->next;
        if (g->waiting == NULL)
            g->waiting_tail = &g->waiting;
        if (batch_compact(batch) == 0)
            free(batch);
        else if (send_now(batch))
            g->in_flight++;
    }
    if (g->in_flight == 0 && g->waiting == NULL) {
        hashmap_remove(&watchdog.groups, &g->group, sizeof(g->group));
        free(g);
    }
}

/* The calls of batch's key group, made when it has none; NULL when out
 * of memory. */
static struct group_calls *group_of(const struct renew_batch *batch)
{
    struct group_calls *g =
        hashmap_get(&watchdog.groups, &batch->key[2], sizeof(batch->key[2]));

    if (g != NULL)
        return g;
    g = malloc(sizeof(*g));
    if (g == NULL)
        return NULL;
    *g = (struct group_calls){.group = batch->key[2], .waiting = NULL};
    g->waiting_tail = &g->waiting;
    if (hashmap_put(&watchdog.groups, &g->group, sizeof(g->group), g) != 0) {
        free(g);
        return NULL;
    }
    return g;
}

/* Queues a batch behind its group's waiting ones, and sends what may
 * go; out of memory, its holds are retried soon. */
static void send_batch(struct renew_batch *batch)
{
    struct group_calls *g = group_of(batch);

    if (g == NULL) {
        log_error("watchdog: out of memory; renewing later");
        batch_unsent(batch, -ENOMEM);
        return;
    }
    batch->next = NULL;
    *g->waiting_tail = batch;
    g->waiting_tail = &batch->next;
    send_waiting(g);
}

/* The batches one round (a fire of either timer) fills: those still open
 * by kind and key group, and those filled, in order. None is sent until
 * the round has taken all it takes: a batch that cannot be sent puts its
 * holds back on the schedule, due within the round's coalescing window,
 * and the round would take them again, and again, while Redis is
 * unavailable. */
struct round {
    struct hashmap open;
    struct renew_batch *full, **full_tail;
};

static void round_init(struct round *round)
{
    hashmap_init(&round->open);
    round->full = NULL;
    round->full_tail = &round->full;
}

/* The open batch for a hold's, or a place's (places), lock's kind and
 * key group, created when needed. The map's key is the kind's index,
 * places and the group: unlike the kind's address, the same in every
 * run, so that batches go out in the same order (the simulation replays
 * a seed). */
static struct renew_batch *batch_for(struct round *round,
                                     const struct lock *lock, bool places)
{
    size_t max = (size_t)watchdog.cfg->renew_batch_size;
    const struct lock_kind *kind = lock_kind_of(lock);
    const struct lock_kind_renewal *row =
        places ? &kind->place_renewal : &kind->renewal;
    unsigned key[3] = {lock_kind_index(kind), places,
                       watchdog.backend->key_group(lock->name, lock->name_len)};
    struct renew_batch *batch;

    batch = hashmap_get(&round->open, key, sizeof(key));
    if (batch != NULL && batch->count < max)
        return batch;
    if (batch != NULL) { /* full: sent with the round, another starts */
        hashmap_remove(&round->open, key, sizeof(key));
        batch->next = NULL;
        *round->full_tail = batch;
        round->full_tail = &batch->next;
    }
    batch = malloc(sizeof(*batch) + max * sizeof(batch->entries[0]));
    if (batch == NULL)
        return NULL;
    batch->row = row;
    batch->places = places;
    batch->count = 0;
    memcpy(batch->key, key, sizeof(key));
    if (hashmap_put(&round->open, batch->key, sizeof(key), batch) != 0) {
        free(batch);
        return NULL;
    }
    return batch;
}

static void send_open_batch(void *value, void *arg)
{
    (void)arg;
    send_batch(value);
}

/* Sends the round's batches, the full ones first. */
static void round_send(struct round *round)
{
    while (round->full != NULL) {
        struct renew_batch *batch = round->full;

        round->full = batch->next;
        send_batch(batch);
    }
    hashmap_foreach(&round->open, send_open_batch, NULL);
    hashmap_free(&round->open);
}

/* Takes the holds due by now and those due within their coalescing
 * window, earliest first over all the lists, into batches and sends
 * them. */
static void watchdog_fire(struct timer *timer)
{
    uint64_t now = timers_now();
    struct round round;
    struct due_list *list;

    (void)timer;
    round_init(&round);
    while ((list = earliest_list(now)) != NULL) {
        struct hold *h = first_hold(list);
        struct renew_batch *batch;

        if (due_of(h, now) > now + interval_of(h) / COALESCE_DIVISOR)
            break;
        batch = batch_for(&round, h->lock, false);
        if (batch == NULL) {
            log_error("watchdog: out of memory; renewing later");
            break;
        }
        watchdog_stop(h);
        h->refs++;
        batch->entries[batch->count++].hold = h;
    }
    round_send(&round);
    /* After an out-of-memory stop the first hold is still due: not a
     * busy loop, try again a little later. */
    if (list != NULL && due_of(first_hold(list), now) <= now)
        timer_start(&watchdog.timer, now + RENEW_RETRY_MS);
    else
        arm_timer();
}

/* Every place is renewed each third of watchdog_timeout_ms, all in one
 * round: a place runs out place_ms after its last renewal, and a round
 * costs Redis one call per kind, key group and renew_batch_size places. */
static void places_arm(void)
{
    uint64_t every = (uint64_t)watchdog.cfg->watchdog_timeout_ms / 3;

    if (timer_start(&watchdog.places_timer,
                    timers_now() + (every > 0 ? every : 1)) != 0)
        log_error("watchdog: out of memory arming its timer");
}

static void places_fire(struct timer *timer)
{
    struct round round;
    struct list_node *pos, *tmp;

    (void)timer;
    round_init(&round);
    list_for_each_safe (pos, tmp, &watchdog.places) {
        struct watchdog_place *p = list_entry(pos, struct watchdog_place, link);
        struct renew_batch *batch = batch_for(&round, p->lock, true);

        if (batch == NULL) {
            log_error("watchdog: out of memory; renewing places later");
            break;
        }
        p->refs++;
        batch->entries[batch->count++].place = p;
    }
    round_send(&round);
    if (!list_empty(&watchdog.places))
        places_arm();
}

struct watchdog_place *watchdog_place_add(struct lock *lock, const char *field,
                                          size_t field_len, int64_t wait_ms,
                                          void (*gone)(void *owner),
                                          void *owner)
{
    struct watchdog_place *p = malloc(sizeof(*p) + field_len);

    if (p == NULL) {
        log_error("watchdog: out of memory; the queue place of %.*s in "
                  "'%.*s' is not renewed",
                  (int)field_len, field, (int)lock->name_len, lock->name);
        return NULL;
    }
    p->lock = lock;
    lock->refs++;
    p->gone = gone;
    p->owner = owner;
    p->refs = 1;
    p->wait_ms = wait_ms;
    p->field_len = field_len;
    memcpy(p->field, field, field_len);
    if (list_empty(&watchdog.places))
        places_arm();
    list_push_tail(&watchdog.places, &p->link);
    return p;
}

void watchdog_place_drop(struct watchdog_place *p)
{
    list_remove(&p->link);
    if (list_empty(&watchdog.places))
        timer_stop(&watchdog.places_timer);
    p->owner = NULL;
    place_unref(p);
}

void watchdog_backend_ready(void)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &watchdog.parked) {
        struct hold *h = list_entry(pos, struct hold, watchdog_link);

        if (watchdog.backend->key_ready(h->lock->name, h->lock->name_len))
            watchdog_start_now(h);
    }
}

void watchdog_init(const struct config *cfg, const struct backend *backend)
{
    watchdog.cfg = cfg;
    watchdog.backend = backend;
    watchdog.list_count = 0;
    timer_init(&watchdog.timer, watchdog_fire);
    list_init(&watchdog.places);
    list_init(&watchdog.parked);
    hashmap_init(&watchdog.groups);
    timer_init(&watchdog.places_timer, places_fire);
}

/* No group is left: the backend closes first and answers every call in
 * flight, and each answer sends, or puts back, the next. */
void watchdog_close(void)
{
    timer_stop(&watchdog.timer);
    timer_stop(&watchdog.places_timer);
    hashmap_free(&watchdog.groups);
}
