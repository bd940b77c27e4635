/*
 * cluster_pubsub.c - where a cluster's listeners listen.
 *
 * [redis] pubsub says how. Sharded: each channel is subscribed on its
 * slot's master, a sharded subscriber per shard, and channels are handed
 * over when their slot moves. Global: on the one plain subscriber it is
 * given, kept on a live master. Both: a listener listens both ways, with
 * a twin on the plain subscriber. Auto asks the cluster (PUBSUB
 * SHARDNUMSUB) before its first map; until then listeners wait in a
 * subscriber that never connects (the limbo).
 *
 * Never: read the map. It follows the map cluster_view.c has applied,
 * and asks for a new one when a sharded channel is dropped.
 */
#include <errno.h>
#include <stdlib.h>

#include "backend/cluster_int.h"
#include "base/log.h"
#include "base/stats.h"

bool cluster_pubsub_sharded(void)
{
    return cluster.pubsub == PUBSUB_SHARDED || cluster.pubsub == PUBSUB_BOTH;
}

/* Where a sharded channel listens: its slot's master, or the limbo. */
static struct subscriber *sharded_home(const char *channel, size_t len)
{
    struct shard *s = cluster_shard_of_slot(keyslot(channel, len));

    return s != NULL && s->sub != NULL ? s->sub : cluster.limbo;
}

static bool channel_homed_at(const char *channel, size_t len, void *arg)
{
    return sharded_home(channel, len) == arg;
}

static bool any_channel(const char *channel, size_t len, void *arg)
{
    (void)channel;
    (void)len;
    (void)arg;
    return true;
}

/*
 * After the map changed: every sharded channel goes to its slot's
 * master's subscriber (or waits in the limbo), and what Redis dropped is
 * subscribed again where it belongs. A channel handed over is subscribed
 * on the new master, whose confirmation tells its waiters to look again.
 */
void cluster_pubsub_regroup(void)
{
    if (!cluster_pubsub_sharded())
        return;
    for (unsigned i = 0; i <= cluster.shard_count; i++) {
        struct subscriber *from =
            i < cluster.shard_count ? cluster.shards[i].sub : cluster.limbo;

        if (from == NULL)
            continue;
        for (unsigned j = 0; j <= cluster.shard_count; j++) {
            struct subscriber *to =
                j < cluster.shard_count ? cluster.shards[j].sub : cluster.limbo;

            if (to != NULL && to != from)
                subscriber_hand_over(from, to, channel_homed_at, to);
        }
    }
    for (unsigned i = 0; i < cluster.shard_count; i++)
        if (cluster.shards[i].active)
            subscriber_resubscribe(cluster.shards[i].sub);
}

/* The plain subscriber stays on a live master: any, global pub/sub
 * reaching every node of a cluster. */
void cluster_pubsub_place_global(void)
{
    struct shard *best = NULL;
    char text[320];

    if (cluster.pubsub != PUBSUB_GLOBAL && cluster.pubsub != PUBSUB_BOTH)
        return;
    for (unsigned i = 0; i < cluster.shard_count; i++) {
        struct shard *s = &cluster.shards[i];

        if (!s->active)
            continue;
        if (redis_addr_equal(redis_pool_addr(s->pool), &cluster.global_at))
            return; /* still a master */
        if (best == NULL ||
            redis_pool_ready(s->pool) > redis_pool_ready(best->pool))
            best = s;
    }
    if (best == NULL)
        return;
    cluster.global_at = *redis_pool_addr(best->pool);
    log_info("redis cluster: global pub/sub on %s",
             redis_addr_text(&cluster.global_at, text, sizeof(text)));
    subscriber_move(cluster.global, &cluster.global_at);
}

/* auto decided: the listeners waiting in the limbo go where they belong. */
static const char *const pubsub_names[] = {[PUBSUB_AUTO] = "auto",
                                           [PUBSUB_SHARDED] = "sharded",
                                           [PUBSUB_GLOBAL] = "global",
                                           [PUBSUB_BOTH] = "both"};

static void pubsub_decided(enum redis_pubsub how)
{
    cluster.pubsub = how;
    redis_status.pubsub = pubsub_names[how];
    log_info("redis cluster: %s pub/sub", how == PUBSUB_SHARDED
                                              ? "sharded (SPUBLISH, SSUBSCRIBE)"
                                              : "global (PUBLISH, SUBSCRIBE)");
    if (how == PUBSUB_GLOBAL) {
        subscriber_hand_over(cluster.limbo, cluster.global, any_channel, NULL);
        cluster_pubsub_place_global();
        return;
    }
    for (unsigned i = 0; i < cluster.shard_count; i++)
        if (cluster.shards[i].active)
            subscriber_move(cluster.shards[i].sub,
                            redis_pool_addr(cluster.shards[i].pool));
    cluster_pubsub_regroup();
}

/* PUBSUB SHARDNUMSUB, as Redisson's AUTO probes: an answer means the
 * cluster has sharded pub/sub (Redis 7), an error that it has not. */
static void on_pubsub_reply(struct redis_request *req, redisReply *reply)
{
    (void)req;
    if (reply == NULL) {
        cluster.pubsub_asked = false; /* asked again on the next link */
        return;
    }
    pubsub_decided(reply->type == REDIS_REPLY_ARRAY ? PUBSUB_SHARDED
                                                    : PUBSUB_GLOBAL);
}

void cluster_pubsub_ask(void)
{
    static const char *const argv[] = {"PUBSUB", "SHARDNUMSUB"};
    static const size_t len[] = {6, 11};

    if (cluster.pubsub != PUBSUB_AUTO || cluster.pubsub_asked)
        return;
    cluster.pubsub_request.on_reply = on_pubsub_reply;
    if (redis_link_send(&cluster.reader, &cluster.pubsub_request, 2,
                        (const char **)argv, len) == 0)
        cluster.pubsub_asked = true;
}

/* A listener on both kinds of channel has a twin on the plain one. */
struct twin {
    struct backend_listener listener;
    struct backend_listener *primary;
};

static void twin_message(struct backend_listener *listener, const char *payload,
                         size_t len)
{
    struct backend_listener *primary = ((struct twin *)listener)->primary;

    primary->on_message(primary, payload, len);
}

int cluster_listen(struct backend_listener *listener, const char *channel,
                   size_t len)
{
    struct twin *twin;
    int err;

    listener->twin = NULL;
    if (cluster.pubsub == PUBSUB_GLOBAL)
        return subscriber_listen(cluster.global, listener, channel, len);
    err = subscriber_listen(cluster.pubsub == PUBSUB_AUTO
                                ? cluster.limbo
                                : sharded_home(channel, len),
                            listener, channel, len);
    if (err != 0 || cluster.pubsub != PUBSUB_BOTH)
        return err;
    twin = calloc(1, sizeof(*twin));
    if (twin == NULL ||
        subscriber_listen(cluster.global, &twin->listener, channel, len) != 0) {
        free(twin);
        subscriber_unlisten(listener);
        return -ENOMEM;
    }
    twin->listener.on_message = twin_message;
    twin->primary = listener;
    listener->twin = &twin->listener;
    return 0;
}

void cluster_unlisten(struct backend_listener *listener)
{
    if (listener->twin != NULL) {
        subscriber_unlisten(listener->twin);
        free(listener->twin);
        listener->twin = NULL;
    }
    subscriber_unlisten(listener);
}

const char *cluster_publish(void)
{
    switch (cluster.pubsub) {
    case PUBSUB_SHARDED:
        return "spublish";
    case PUBSUB_BOTH:
        return "both";
    default:
        return "publish";
    }
}

bool cluster_subscribers_ready(void)
{
    if (cluster.pubsub == PUBSUB_AUTO)
        return false;
    if (cluster.pubsub != PUBSUB_SHARDED && !subscriber_ready(cluster.global))
        return false;
    for (unsigned i = 0; cluster_pubsub_sharded() && i < cluster.shard_count;
         i++)
        if (cluster.shards[i].active &&
            !subscriber_ready(cluster.shards[i].sub))
            return false;
    return true;
}

static void on_sub_change(struct subscriber *sub)
{
    (void)sub;
    cluster.events.on_change();
}

static void on_sub_dropped(struct subscriber *sub)
{
    (void)sub;
    cluster_view_refresh("a sharded channel dropped or refused");
}

const struct subscriber_events cluster_pubsub_events = {on_sub_change,
                                                        on_sub_dropped};

int cluster_pubsub_init(void)
{
    cluster.pubsub = (enum redis_pubsub)cluster.cfg->pubsub;
    redis_status.pubsub = pubsub_names[cluster.pubsub];
    cluster.limbo = subscriber_new(cluster.loop, cluster.cfg, "unplaced", true,
                                   &cluster_pubsub_events);
    return cluster.limbo == NULL ? -ENOMEM : 0;
}
