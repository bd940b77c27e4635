/*
 * watchdog.c - one timer, one due-ordered list, batched renewals.
 *
 * A hold is due one third of its lease after its last renewal. When the
 * timer fires, every hold due within the next coalescing window is taken
 * too: renewing a little early is harmless, and it turns many timers
 * that would fire milliseconds apart into one Redis call.
 *
 * A batch in flight holds a reference on each of its holds (hold_unref
 * frees): a hold dropped or lost meanwhile is not judged by its result
 * (a lost hold is never held again: its owner is told, and a new
 * acquire makes a new hold).
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

struct renew_batch {
    const struct lock_kind *kind;
    unsigned key[2]; /* while open */
    size_t count;
    struct renew_entry {
        struct hold *hold;
    } entries[];
};

static struct {
    const struct config *cfg;
    const struct backend *backend;
    struct timer timer;
    struct list_node due; /* struct hold.watchdog_link, by renew_due_ms */
} watchdog;

static void arm_timer(void)
{
    struct list_node *first = list_first(&watchdog.due);

    if (first == NULL) {
        timer_stop(&watchdog.timer);
        return;
    }
    if (timer_start(
            &watchdog.timer,
            list_entry(first, struct hold, watchdog_link)->renew_due_ms) != 0)
        log_error("watchdog: out of memory arming its timer");
}

/* Inserts by due time, scanning from the tail: renewals are almost always
 * scheduled "interval from now", which is the tail. */
static void schedule(struct hold *h, uint64_t due)
{
    struct list_node *pos = watchdog.due.prev;

    h->renew_due_ms = due;
    while (pos != &watchdog.due &&
           list_entry(pos, struct hold, watchdog_link)->renew_due_ms > due)
        pos = pos->prev;
    list_insert_before(pos->next, &h->watchdog_link);
    stats.watchdog_locks++;
    if (watchdog.due.next == &h->watchdog_link)
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
        schedule(h, timers_now() + interval_of(h));
}

void watchdog_start_now(struct hold *h)
{
    watchdog_stop(h);
    schedule(h, timers_now());
}

void watchdog_stop(struct hold *h)
{
    if (!list_linked(&h->watchdog_link))
        return;
    list_remove(&h->watchdog_link);
    stats.watchdog_locks--;
}

static void batch_done(void *arg, const struct backend_value *reply)
{
    struct renew_batch *batch = arg;
    bool valid = reply != NULL && reply->type == VALUE_ARRAY &&
                 reply->elements == batch->count;

    if (!valid)
        log_warn("watchdog: renewal of %zu lock(s) failed: %s; retrying",
                 batch->count,
                 reply == NULL                ? "Redis unavailable"
                 : reply->type == VALUE_ERROR ? reply->str
                                              : "unexpected reply");
    for (size_t i = 0; i < batch->count; i++) {
        struct hold *h = batch->entries[i].hold;

        /* Dropped, lost, no longer renewed, or lost and acquired again
         * (then already back on the schedule): not this result's to judge. */
        if (h->lock != NULL && !h->lost && h->watchdog &&
            !list_linked(&h->watchdog_link)) {
            if (!valid)
                schedule(h, timers_now() + retry_of(h));
            else if (batch->kind->renewal.renewed(&reply->element[i]))
                schedule(h, timers_now() + interval_of(h));
            else
                hold_mark_lost(h, "watchdog found the lock gone");
        }
        hold_unref(h);
    }
    free(batch);
}

/* Sends one batch; 0, or the holds go back on the schedule. */
static void send_batch(struct renew_batch *batch)
{
    const struct lock_kind_renewal *r = &batch->kind->renewal;
    size_t n = batch->count, nkeys = n * (size_t)r->keys_per_hold,
           argc = nkeys + n * (size_t)r->args_per_hold;
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *len = malloc(argc * sizeof(*len));
    char(*numbers)[FORMAT_INT_MAX] = malloc(n * sizeof(*numbers));
    int err = -ENOMEM;

    if (argv != NULL && len != NULL && numbers != NULL) {
        for (size_t i = 0; i < n; i++) {
            struct hold *h = batch->entries[i].hold;
            struct lock_call_args a = {.name = h->lock->name,
                                       .name_len = h->lock->name_len,
                                       .keys = h->lock->keys,
                                       .key_len = h->lock->key_len,
                                       .field = h->field,
                                       .field_len = h->field_len,
                                       .lease_ms = h->lease_ms};
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
    if (err == 0) {
        stats.watchdog_batches++;
        stats.watchdog_renewals += n;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        schedule(batch->entries[i].hold,
                 timers_now() + retry_of(batch->entries[i].hold));
        hold_unref(batch->entries[i].hold);
    }
    free(batch);
}

/* The open batch for a hold's kind and key group, created when needed.
 * The map's key is the kind's index and the group: unlike the kind's
 * address, the same in every run, so that batches go out in the same
 * order (the simulation replays a seed). */
static struct renew_batch *batch_for(struct hashmap *open, struct hold *h)
{
    size_t max = (size_t)watchdog.cfg->renew_batch_size;
    const struct lock_kind *kind = h->lock->kind;
    unsigned key[2] = {
        lock_kind_index(kind),
        watchdog.backend->key_group(h->lock->name, h->lock->name_len)};
    struct renew_batch *batch;

    batch = hashmap_get(open, key, sizeof(key));
    if (batch != NULL && batch->count < max)
        return batch;
    if (batch != NULL) { /* full: send it and start another */
        hashmap_remove(open, key, sizeof(key));
        send_batch(batch);
    }
    batch = malloc(sizeof(*batch) + max * sizeof(batch->entries[0]));
    if (batch == NULL)
        return NULL;
    batch->kind = kind;
    batch->count = 0;
    memcpy(batch->key, key, sizeof(key));
    if (hashmap_put(open, batch->key, sizeof(key), batch) != 0) {
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

static void watchdog_fire(struct timer *timer)
{
    uint64_t now = timers_now();
    struct hashmap open;
    struct list_node *pos;

    (void)timer;
    hashmap_init(&open);
    while ((pos = list_first(&watchdog.due)) != NULL) {
        struct hold *h = list_entry(pos, struct hold, watchdog_link);
        struct renew_batch *batch;

        if (h->renew_due_ms > now + interval_of(h) / COALESCE_DIVISOR)
            break;
        batch = batch_for(&open, h);
        if (batch == NULL) {
            log_error("watchdog: out of memory; renewing later");
            break;
        }
        watchdog_stop(h);
        h->refs++;
        batch->entries[batch->count++] = (struct renew_entry){h};
    }
    hashmap_foreach(&open, send_open_batch, NULL);
    hashmap_free(&open);
    /* After an out-of-memory stop the first hold is still due: not a
     * busy loop, try again a little later. */
    if (pos != NULL &&
        list_entry(pos, struct hold, watchdog_link)->renew_due_ms <= now)
        timer_start(&watchdog.timer, now + RENEW_RETRY_MS);
    else
        arm_timer();
}

void watchdog_init(const struct config *cfg, const struct backend *backend)
{
    watchdog.cfg = cfg;
    watchdog.backend = backend;
    list_init(&watchdog.due);
    timer_init(&watchdog.timer, watchdog_fire);
}

void watchdog_close(void)
{
    timer_stop(&watchdog.timer);
}
