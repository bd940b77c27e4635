/*
 * watchdog.c - one timer, one due-ordered list, batched renewals.
 *
 * A hold is due one third of its lease after its last renewal. When the
 * timer fires, every hold due within the next coalescing window is taken
 * too: renewing a little early is harmless, and it turns many timers
 * that would fire milliseconds apart into one Redis call.
 */
#include "engine/watchdog.h"

#include <stdlib.h>
#include <string.h>

#include "engine/lock_table.h"
#include "base/log.h"
#include "backend/redis_link.h"
#include "backend/redis_pool.h"
#include "base/stats.h"

/* Retry a renewal that could not be sent or answered this soon. */
#define RENEW_RETRY_MS 500

struct renew_batch {
    size_t count;
    struct renew_entry {
        struct hold *hold;
        uint32_t epoch; /* the hold's epoch when sent */
    } entries[];
};

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    uv_timer_t timer;
    struct list_node due; /* struct hold.watchdog_link, by renew_due_ms */
    size_t count;
} wd;

static void watchdog_fire(uv_timer_t *timer);

static void arm_timer(void)
{
    struct list_node *first = list_first(&wd.due);
    uint64_t now = now_ms(wd.loop), due;

    if (first == NULL) {
        uv_timer_stop(&wd.timer);
        return;
    }
    due = list_entry(first, struct hold, watchdog_link)->renew_due_ms;
    uv_timer_start(&wd.timer, watchdog_fire, due > now ? due - now : 0, 0);
}

/* Inserts by due time, scanning from the tail: renewals are almost always
 * scheduled "interval from now", which is the tail. */
static void schedule(struct hold *h, uint64_t due)
{
    struct list_node *pos = wd.due.prev;

    h->renew_due_ms = due;
    while (pos != &wd.due &&
           list_entry(pos, struct hold, watchdog_link)->renew_due_ms > due)
        pos = pos->prev;
    list_insert_before(pos->next, &h->watchdog_link);
    if (wd.due.next == &h->watchdog_link)
        arm_timer();
}

int watchdog_init(uv_loop_t *loop, const struct config *cfg)
{
    wd.loop = loop;
    wd.cfg = cfg;
    list_init(&wd.due);
    return uv_timer_init(loop, &wd.timer);
}

void watchdog_close(void)
{
    uv_timer_stop(&wd.timer);
    uv_close((uv_handle_t *)&wd.timer, NULL);
}

static uint64_t interval_of(const struct hold *h)
{
    return (uint64_t)(h->lease_ms / 3 > 0 ? h->lease_ms / 3 : 1);
}

void watchdog_start(struct hold *h)
{
    if (list_linked(&h->watchdog_link))
        return;
    wd.count++;
    schedule(h, now_ms(wd.loop) + interval_of(h));
}

void watchdog_stop(struct hold *h)
{
    if (!list_linked(&h->watchdog_link))
        return;
    list_remove(&h->watchdog_link);
    wd.count--;
}

size_t watchdog_count(void)
{
    return wd.count;
}

/* Puts a hold taken out for a batch back on the schedule. */
static void reschedule(struct hold *h, uint64_t delay)
{
    wd.count++;
    schedule(h, now_ms(wd.loop) + delay);
}

static void batch_done(redisReply *reply, void *arg)
{
    struct renew_batch *batch = arg;
    bool valid = reply != NULL && reply->type == REDIS_REPLY_ARRAY &&
                 reply->elements == batch->count;

    if (!valid)
        log_warn("watchdog: renewal of %zu lock(s) failed: %s; retrying",
                 batch->count,
                 reply == NULL                      ? "Redis unavailable"
                 : reply->type == REDIS_REPLY_ERROR ? reply->str
                                                    : "unexpected reply");
    for (size_t i = 0; i < batch->count; i++) {
        struct hold *h = batch->entries[i].hold;

        h->renewals_inflight--;
        if (h->lock == NULL) { /* dropped while we were away */
            if (h->renewals_inflight == 0)
                free(h);
            continue;
        }
        /* Lost meanwhile, or lost and acquired again (then already back
         * on the schedule, and this result is about the old hold). */
        if (h->lost || !h->watchdog || h->epoch != batch->entries[i].epoch ||
            list_linked(&h->watchdog_link))
            continue;
        if (!valid)
            reschedule(h, RENEW_RETRY_MS);
        else if (reply->element[i]->type == REDIS_REPLY_INTEGER &&
                 reply->element[i]->integer == 1)
            reschedule(h, interval_of(h));
        else
            hold_mark_lost(h, "watchdog found the lock gone");
    }
    free(batch);
}

/* Builds the renewal script's arguments for n holds: KEYS name1..nameN,
 * ARGV field1, ms1, ..., fieldN, msN. One block, freed by the caller. */
struct renew_args {
    const char **argv;
    size_t *len;
    char (*ms)[24];
};

static int renew_args_build(struct renew_args *a, struct hold **holds, size_t n)
{
    void *block = calloc(1, 3 * n * (sizeof(*a->argv) + sizeof(*a->len)) +
                                n * sizeof(*a->ms));

    if (block == NULL)
        return -1;
    a->argv = block;
    a->len = (size_t *)(a->argv + 3 * n);
    a->ms = (char(*)[24])(a->len + 3 * n);
    for (size_t i = 0; i < n; i++) {
        struct hold *h = holds[i];
        a->argv[i] = h->lock->name;
        a->len[i] = h->lock->name_len;
        a->argv[n + 2 * i] = h->field;
        a->len[n + 2 * i] = h->field_len;
        a->argv[n + 2 * i + 1] = a->ms[i];
        a->len[n + 2 * i + 1] = format_int64(a->ms[i], h->lease_ms);
    }
    return 0;
}

/* Sends n due holds of one shard in one call; those it cannot send go
 * back on the schedule. */
static void send_batch(struct hold **holds, size_t n, unsigned shard)
{
    struct renew_batch *batch =
        malloc(sizeof(*batch) + n * sizeof(batch->entries[0]));
    struct renew_args args = {0};
    int err = -1;

    if (batch != NULL && renew_args_build(&args, holds, n) == 0) {
        batch->count = n;
        for (size_t i = 0; i < n; i++)
            batch->entries[i] = (struct renew_entry){holds[i], holds[i]->epoch};
        err = redis_pool_call(shard, SCRIPT_RENEW_MANY, (int)n, (int)(3 * n),
                              args.argv, args.len, batch_done, batch);
        free(args.argv);
    }
    if (err == 0) {
        for (size_t i = 0; i < n; i++)
            holds[i]->renewals_inflight++;
        stats.watchdog_batches++;
        stats.watchdog_renewals += n;
        return;
    }
    free(batch);
    for (size_t i = 0; i < n; i++)
        reschedule(holds[i], RENEW_RETRY_MS);
}

static void watchdog_fire(uv_timer_t *timer)
{
    unsigned shards = redis_pool_size();
    size_t max = (size_t)wd.cfg->renew_batch_size;
    uint64_t now = now_ms(wd.loop);
    struct hold **pending[shards];
    size_t filled[shards];
    struct list_node *pos;
    bool out_of_memory = false;

    (void)timer;
    memset(filled, 0, sizeof(filled));
    for (unsigned i = 0; i < shards; i++)
        pending[i] = NULL;
    while ((pos = list_first(&wd.due)) != NULL) {
        struct hold *h = list_entry(pos, struct hold, watchdog_link);
        uint64_t window = interval_of(h) / 8;
        unsigned shard = h->lock->shard;

        if (h->renew_due_ms > now + window)
            break;
        if (pending[shard] == NULL) {
            pending[shard] = malloc(max * sizeof(struct hold *));
            if (pending[shard] == NULL) {
                out_of_memory = true;
                break;
            }
        }
        watchdog_stop(h);
        pending[shard][filled[shard]++] = h;
        if (filled[shard] == max) {
            send_batch(pending[shard], max, shard);
            filled[shard] = 0;
        }
    }
    for (unsigned i = 0; i < shards; i++) {
        if (filled[i] > 0)
            send_batch(pending[i], filled[i], i);
        free(pending[i]);
    }
    if (out_of_memory) /* not a busy loop: try again a little later */
        uv_timer_start(&wd.timer, watchdog_fire, RENEW_RETRY_MS, 0);
    else
        arm_timer();
}
