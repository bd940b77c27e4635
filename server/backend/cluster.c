/*
 * cluster.c - the shards of a Redis Cluster, and the cluster backend's
 * life.
 *
 * A shard is a master and its pool. When a master fails over, the map
 * names its promoted replica for the same slots: the shard (and so every
 * key's connection) moves there, as Sentinel mode moves its one pool,
 * and the holds in those slots are checked again. When slots move
 * between masters (resharding), only the map changes: MIGRATE carries
 * the keys, and nothing a hold needs is lost.
 *
 * A key's call goes to its slot's shard (cluster_eval, cluster_wait).
 * What the map says is cluster_view.c's; what Redis refuses or redirects
 * is cluster_redirect.c's; where listeners listen is cluster_pubsub.c's.
 *
 * Never: decide who serves a slot. The map read (cluster_view.c) and a
 * MOVED (cluster_redirect.c) do; this file only opens, moves and closes
 * the shards they name.
 */
#include "backend/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cluster_int.h"
#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"

struct cluster_state cluster;

static const struct redis_pool_events shard_events;

/* Its pool, and its subscriber when channels are sharded, go to addr. */
void cluster_shard_move(struct shard *s, const struct redis_addr *addr)
{
    redis_pool_move(s->pool, addr);
    if (cluster_pubsub_sharded())
        subscriber_move(s->sub, addr);
}

struct shard *cluster_shard_of_slot(unsigned slot)
{
    uint16_t i = cluster.slot_shard[slot];

    return i == CLUSTER_NO_SHARD ? NULL : &cluster.shards[i];
}

struct shard *cluster_shard_at(const struct redis_addr *addr)
{
    for (unsigned i = 0; i < cluster.shard_count; i++)
        if (cluster.shards[i].active &&
            redis_addr_equal(redis_pool_addr(cluster.shards[i].pool), addr))
            return &cluster.shards[i];
    return NULL;
}

/* A shard for a master at addr: a free one moved there, or a new one.
 * NULL when out of memory or shards. */
struct shard *cluster_shard_open(const struct redis_addr *addr)
{
    struct shard *s = NULL;
    char label[32];

    for (unsigned i = 0; i < cluster.shard_count && s == NULL; i++)
        if (!cluster.shards[i].active && cluster.shards[i].sub != NULL)
            s = &cluster.shards[i];
    if (s == NULL &&
        cluster.shard_count == (unsigned)cluster.cfg->cluster_max_masters) {
        log_error("redis cluster: more than cluster_max_masters (%u) "
                  "masters; the slots of the others are not served",
                  cluster.shard_count);
        return NULL;
    }
    if (s == NULL) {
        s = &cluster.shards[cluster.shard_count];
        snprintf(label, sizeof(label), "shard%u", cluster.shard_count);
        s->pool =
            redis_pool_new(cluster.loop, cluster.cfg, label, &shard_events);
        if (s->pool == NULL)
            return NULL;
        snprintf(label, sizeof(label), "shard%u-subscriber",
                 cluster.shard_count);
        s->sub = subscriber_new(cluster.loop, cluster.cfg, label, true,
                                &cluster_pubsub_events);
        cluster.shard_count++;
        if (s->sub == NULL) { /* the entry stays unused, its pool idle */
            log_error("out of memory making a subscriber");
            return NULL;
        }
    }
    s->active = true;
    s->slots = 0;
    s->replicas = 0;
    s->epoch = 0;
    cluster_shard_move(s, addr);
    return s;
}

void cluster_shard_close(struct shard *s)
{
    char addr[320];

    log_info("redis cluster: %s is not a master any more",
             redis_addr_text(redis_pool_addr(s->pool), addr, sizeof(addr)));
    s->active = false;
    redis_pool_stop(s->pool);
    subscriber_stop(s->sub);
}

/* ---- shard events ------------------------------------------------------------ */

static void on_shard_change(struct redis_pool *pool)
{
    cluster_redirect_retry_held();
    if (redis_pool_ready(pool) < redis_pool_size(pool))
        cluster_view_refresh("a master connection lost");
    cluster.events.on_change();
}

static void on_shard_readonly(struct redis_pool *pool)
{
    (void)pool;
    cluster_view_refresh("READONLY");
}

static const struct redis_pool_events shard_events = {
    on_shard_change, on_shard_readonly, cluster_redirect_follow};

/* ---- struct backend ------------------------------------------------------ */

int cluster_eval(const struct backend_call *call, backend_reply_fn *fn,
                 void *arg)
{
    unsigned slot = keyslot(call->key, call->key_len);
    struct shard *s = cluster_shard_of_slot(slot);

    if (s == NULL)
        return -ENOTCONN;
    return redis_pool_eval(s->pool, call, slot, fn, arg);
}

bool cluster_key_ready(const char *key, size_t len)
{
    unsigned slot = keyslot(key, len);
    struct shard *s = cluster_shard_of_slot(slot);

    return s != NULL && redis_pool_route_ready(s->pool, slot);
}

unsigned cluster_key_group(const char *key, size_t len)
{
    return keyslot(key, len);
}

int cluster_wait(const char *key, size_t len, int64_t replicas,
                 backend_reply_fn *fn, void *arg)
{
    unsigned slot = keyslot(key, len);
    struct shard *s = cluster_shard_of_slot(slot);

    if (s == NULL)
        return -ENOTCONN;
    if (replicas == SYNC_REPLICAS_AUTO)
        replicas = s->replicas;
    if (replicas == 0)
        return -ENOENT;
    return redis_pool_wait(s->pool, slot, (unsigned)replicas,
                           cluster.cfg->sync_timeout_ms, fn, arg);
}

/* ---- state ------------------------------------------------------------------- */

void cluster_pool_counts(unsigned *ready, unsigned *size)
{
    *ready = *size = 0;
    for (unsigned i = 0; i < cluster.shard_count; i++) {
        if (!cluster.shards[i].active)
            continue;
        *ready += redis_pool_ready(cluster.shards[i].pool);
        *size += redis_pool_size(cluster.shards[i].pool);
    }
}

unsigned cluster_inflight(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < cluster.shard_count; i++)
        n += redis_pool_inflight(cluster.shards[i].pool);
    return n;
}

unsigned cluster_connections(void)
{
    return (unsigned)(cluster.cfg->cluster_max_masters *
                      cluster.cfg->pool_size) +
           1;
}

void cluster_describe(char *out, size_t size)
{
    size_t used = 0;

    out[0] = '\0';
    for (unsigned i = 0; i < cluster.shard_count && used < size; i++) {
        const struct shard *s = &cluster.shards[i];
        char addr[320];

        if (!s->active)
            continue;
        used += (size_t)snprintf(
            out + used, size - used, "%s%s slots=%u", used ? "," : "",
            redis_addr_text(redis_pool_addr(s->pool), addr, sizeof(addr)),
            s->slots);
    }
}

/* ---- life ---------------------------------------------------------------------- */

int cluster_init(uv_loop_t *loop, const struct config *cfg,
                 const struct cluster_events *events, struct subscriber *global)
{
    int err;

    cluster.loop = loop;
    cluster.cfg = cfg;
    cluster.events = *events;
    cluster.global = global;
    if ((err = cluster_pubsub_init()) != 0)
        return err;
    list_init(&cluster.held);
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++)
        cluster.slot_shard[slot] = CLUSTER_NO_SHARD;
    cluster.shards =
        calloc((size_t)cfg->cluster_max_masters, sizeof(*cluster.shards));
    if (cluster.shards == NULL)
        return -ENOMEM;
    if ((err = cluster_view_init()) != 0 ||
        (err = uv_timer_init(loop, &cluster.hold_timer)) != 0)
        return err;
    return 0;
}

void cluster_close(void)
{
    cluster_redirect_answer_held();
    redis_link_close(&cluster.reader);
    uv_close((uv_handle_t *)&cluster.refresh_timer, NULL);
    uv_close((uv_handle_t *)&cluster.hold_timer, NULL);
    for (unsigned i = 0; i < cluster.shard_count; i++) {
        redis_pool_close(cluster.shards[i].pool);
        if (cluster.shards[i].sub != NULL)
            subscriber_close(cluster.shards[i].sub);
    }
    subscriber_close(cluster.limbo);
}

void cluster_free(void)
{
    for (unsigned i = 0; i < cluster.shard_count; i++) {
        redis_pool_free(cluster.shards[i].pool);
        subscriber_free(cluster.shards[i].sub);
    }
    subscriber_free(cluster.limbo);
    free(cluster.shards);
    free(cluster.known);
    free(cluster.view.nodes);
}
