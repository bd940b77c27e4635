/*
 * cluster_redirect.c - calls Redis redirected or refused: followed, or
 * held and retried.
 *
 * MOVED names the slot's new master: the slot is remapped at once, the
 * call sent there, and the map read again (other slots have probably
 * moved too). ASK sends the call once, after ASKING, to the node
 * importing the slot, leaving the map alone. TRYAGAIN, CLUSTERDOWN,
 * LOADING and MASTERDOWN hold the call and retry it from its slot's
 * master, as does a redirection to a master not connected yet, until
 * retry_timeout_ms from the first refusal, however refusals and
 * redirections alternate; then the last refusal is the reply. TRYAGAIN
 * is what every release meets while its slot migrates: a release names
 * the lock's channel among its KEYS (as Redisson's does), a key that
 * never exists, and Redis runs a multi-key call in a migrating slot only
 * when it has all its keys (an acquire, one key, follows ASK). A call
 * redirected more than MAX_HOPS times in a row is answered with an
 * error: a redirection loop ends, it does not spin.
 *
 * Never: change the map beyond the one slot a MOVED names. Reading the
 * whole map again is cluster_view.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cluster_int.h"
#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"

#define MAX_HOPS 5
/* Held calls are retried this often. */
#define HOLD_RETRY_MS 50

struct held_call {
    struct list_node link;
    struct redis_call *call;
    struct shard *ask; /* an ASK's target, or NULL: the slot's master */
    unsigned slot;
    uint64_t deadline;
    char error[128]; /* the last refusal */
};

static void hold_answer(struct held_call *h)
{
    redisReply error = {
        .type = REDIS_REPLY_ERROR, .str = h->error, .len = strlen(h->error)};

    list_remove(&h->link);
    redis_call_answer(h->call, &error);
    free(h);
}

static void hold_timer_fired(uv_timer_t *timer)
{
    uint64_t now = uv_now(cluster.loop);
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &cluster.held) {
        struct held_call *h = list_entry(pos, struct held_call, link);
        struct shard *to =
            h->ask != NULL ? h->ask : cluster_shard_of_slot(h->slot);

        if (now >= h->deadline) {
            hold_answer(h);
        } else if (to != NULL &&
                   redis_call_send(h->call, to->pool, h->ask != NULL) == 0) {
            list_remove(&h->link);
            free(h);
        }
    }
    if (!list_empty(&cluster.held))
        uv_timer_start(timer, hold_timer_fired, HOLD_RETRY_MS, 0);
}

static void hold(struct redis_call *call, struct shard *ask, unsigned slot,
                 const char *error)
{
    struct held_call *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        redis_call_answer(call, NULL);
        return;
    }
    h->call = call;
    h->ask = ask;
    h->slot = slot;
    h->deadline = redis_call_held_since(call, uv_now(cluster.loop)) +
                  (uint64_t)cluster.cfg->retry_timeout_ms;
    snprintf(h->error, sizeof(h->error), "%s", error);
    list_push_tail(&cluster.held, &h->link);
    if (!uv_is_active((uv_handle_t *)&cluster.hold_timer))
        uv_timer_start(&cluster.hold_timer, hold_timer_fired, HOLD_RETRY_MS, 0);
}

void cluster_redirect_retry_held(void)
{
    if (!list_empty(&cluster.held))
        uv_timer_start(&cluster.hold_timer, hold_timer_fired, 0, 0);
}

void cluster_redirect_answer_held(void)
{
    struct list_node *node;

    while ((node = list_first(&cluster.held)) != NULL)
        hold_answer(list_entry(node, struct held_call, link));
}

static bool starts_with(const char *s, const char *word)
{
    return strncmp(s, word, strlen(word)) == 0;
}

bool cluster_redirect_follow(struct redis_pool *pool, struct redis_call *call,
                             const redisReply *reply)
{
    const char *error = reply->str;
    bool moved = starts_with(error, "MOVED "), ask = starts_with(error, "ASK ");
    struct redis_addr addr;
    struct shard *to;
    unsigned slot;

    (void)pool;
    if (starts_with(error, "TRYAGAIN") || starts_with(error, "CLUSTERDOWN") ||
        starts_with(error, "LOADING") || starts_with(error, "MASTERDOWN")) {
        stats.cluster_retries++;
        if (starts_with(error, "CLUSTERDOWN"))
            cluster_view_refresh("CLUSTERDOWN");
        redis_call_clear_hops(call);
        hold(call, NULL, redis_call_route(call), error);
        return true;
    }
    if (!moved && !ask)
        return false; /* the script's own error */
    if (!cluster_redirect_parse(error, reply->len, &slot, &addr)) {
        log_warn("redis cluster: redirection not understood: %s", error);
        return false;
    }
    if (redis_call_count_hop(call) > MAX_HOPS) {
        char text[160];

        snprintf(text, sizeof(text), "ERR redis cluster redirection loop (%s)",
                 error);
        log_warn("redis cluster: a call redirected %d times; the last: %s",
                 MAX_HOPS, error);
        redis_call_answer(call, &(redisReply){.type = REDIS_REPLY_ERROR,
                                              .str = text,
                                              .len = strlen(text)});
        return true;
    }
    to = cluster_shard_at(&addr);
    if (to == NULL && (to = cluster_shard_open(&addr)) == NULL)
        return false;
    if (moved) {
        stats.cluster_moved++;
        cluster.slot_shard[slot] = (uint16_t)(to - cluster.shards);
        cluster_view_refresh("MOVED");
    } else {
        stats.cluster_asks++;
    }
    if (redis_call_send(call, to->pool, ask) != 0)
        hold(call, ask ? to : NULL, slot, error);
    return true;
}
