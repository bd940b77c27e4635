/*
 * cluster_view.c - reading the slot map, and applying it.
 *
 * The map is read with CLUSTER NODES (parsed by cluster_map.c) rather
 * than CLUSTER SLOTS for one field: each master's config epoch. Just
 * after a failover a node that has not heard of it yet still names the
 * old master; a slot's owner is replaced only by one with an epoch at
 * least as new, which is the rule the cluster itself settles such
 * conflicts by, so a stale answer never moves a shard back and forth.
 *
 * The map is read at start, on every redirection, when a connection to
 * a master is lost, when a server says READONLY, and every
 * cluster_refresh_ms; every DOUBT_REFRESH_MS while a slot has no ready
 * master. One link reads it, moved from node to node: the seeds first,
 * then every node the last map named.
 *
 * Never: send a lock's call. It decides which shard serves each slot;
 * cluster.c routes the calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cluster_int.h"
#include "base/log.h"
#include "base/stats.h"

/* Nodes of one CLUSTER NODES answer it reads. */
#define MAX_VIEW_NODES 1024
/* While a slot has no ready master, the map is read this often. */
#define DOUBT_REFRESH_MS 250

static void known_add(const struct redis_addr *addr)
{
    struct redis_addr *known;

    for (size_t i = 0; i < cluster.known_count; i++)
        if (redis_addr_equal(&cluster.known[i], addr))
            return;
    if (cluster.known_count == MAX_VIEW_NODES)
        return;
    known = realloc(cluster.known, (cluster.known_count + 1) * sizeof(*known));
    if (known == NULL)
        return; /* a node fewer to ask */
    cluster.known = known;
    cluster.known[cluster.known_count++] = *addr;
}

/* The seeds, then the nodes of the map just read. */
static int known_reset(const struct cluster_node *nodes, size_t count)
{
    const char *list = cluster.cfg->cluster_nodes;
    struct redis_addr addr = {0};

    cluster.known_count = 0;
    while (config_next_addr(&list, addr.host, sizeof(addr.host), &addr.port) ==
           1)
        known_add(&addr);
    for (size_t i = 0; i < count; i++)
        known_add(&nodes[i].addr);
    if (cluster.known_count == 0)
        return -ENOMEM;
    if (cluster.next_known >= cluster.known_count)
        cluster.next_known = 0;
    return 0;
}

/* ---- applying a map --------------------------------------------------------- */

static bool shard_moved_key(const char *key, size_t len)
{
    struct shard *s = cluster_shard_of_slot(keyslot(key, len));

    return s != NULL && s->moved;
}

/* Whether the map just read names addr a master serving slots. */
static bool view_has_master(const struct redis_addr *addr, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (cluster.view.nodes[i].master && !cluster.view.nodes[i].failed &&
            cluster.view.nodes[i].slots > 0 &&
            redis_addr_equal(&cluster.view.nodes[i].addr, addr))
            return true;
    return false;
}

/*
 * The shard that will serve view node n, a live master with slots: the
 * one already there; or, when n now serves slots of a shard whose master
 * the map no longer names a live master, that shard, moved here (a
 * failover: flagged for the re-check); or a new one. NULL for a stale
 * answer (the slots' owner has a newer epoch) or when out of shards.
 */
static struct shard *shard_for(size_t n, size_t count, char *why,
                               size_t why_size)
{
    const struct cluster_node *node = &cluster.view.nodes[n];
    struct shard *s = cluster_shard_at(&node->addr);
    char from[320], to[320];
    size_t used;

    if (s != NULL)
        return s;
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++) {
        struct shard *old = cluster_shard_of_slot(slot);

        if (cluster.view.owner[slot] != n || old == NULL || old->moved ||
            view_has_master(redis_pool_addr(old->pool), count))
            continue;
        if (old->epoch > node->epoch)
            return NULL;
        redis_addr_text(redis_pool_addr(old->pool), from, sizeof(from));
        redis_addr_text(&node->addr, to, sizeof(to));
        used = strlen(why);
        snprintf(why + used, why_size - used, "%s%s -> %s",
                 used ? ", " : "redis cluster master ", from, to);
        log_warn("redis cluster: master %s failed over to %s", from, to);
        stats.redis_master_changes++;
        cluster_shard_move(old, &node->addr);
        old->moved = true;
        old->epoch = node->epoch;
        return old;
    }
    return cluster_shard_open(&node->addr);
}

/*
 * Makes the map just read (count nodes) the one in use. A master flagged
 * failed keeps its slots, unserved in effect (its connections are down),
 * until the map names the replica that replaced it: that is how the
 * replacement is recognised. A slot whose owner has a newer epoch than
 * the answer says keeps it.
 */
static void apply_view(size_t count)
{
    static struct shard *of_node[MAX_VIEW_NODES];
    char why[1024] = "";
    bool moved = false;

    for (size_t n = 0; n < count; n++) {
        const struct cluster_node *node = &cluster.view.nodes[n];

        of_node[n] = NULL;
        if (node->slots > 0 && node->failed)
            of_node[n] = cluster_shard_at(&node->addr);
        else if (node->slots > 0)
            of_node[n] = shard_for(n, count, why, sizeof(why));
    }
    for (unsigned i = 0; i < cluster.shard_count; i++)
        cluster.shards[i].slots = cluster.shards[i].replicas = 0;
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++) {
        uint16_t n = cluster.view.owner[slot];
        struct shard *now = n == CLUSTER_NO_NODE ? NULL : of_node[n];
        struct shard *was = cluster_shard_of_slot(slot);

        if (n != CLUSTER_NO_NODE && was != NULL && was != now && was->active &&
            was->epoch > cluster.view.nodes[n].epoch)
            now = was; /* a stale answer */
        cluster.slot_shard[slot] =
            now == NULL ? CLUSTER_NO_SHARD : (uint16_t)(now - cluster.shards);
        if (now != NULL)
            now->slots++;
    }
    for (size_t n = 0; n < count; n++) {
        struct shard *s = of_node[n];

        if (s == NULL)
            continue;
        if (s->epoch < cluster.view.nodes[n].epoch)
            s->epoch = cluster.view.nodes[n].epoch;
        for (size_t m = 0; m < count; m++)
            s->replicas += !cluster.view.nodes[m].master &&
                           !cluster.view.nodes[m].failed &&
                           cluster.view.nodes[m].connected &&
                           strcmp(cluster.view.nodes[m].master_id,
                                  cluster.view.nodes[n].id) == 0;
    }
    for (unsigned i = 0; i < cluster.shard_count; i++) {
        struct shard *s = &cluster.shards[i];

        moved |= s->moved;
        if (s->active && s->slots == 0)
            cluster_shard_close(s);
    }
    cluster_pubsub_regroup();
    cluster_pubsub_place_global();
    if (moved) {
        cluster.events.on_recheck(why, shard_moved_key);
        for (unsigned i = 0; i < cluster.shard_count; i++)
            cluster.shards[i].moved = false;
    }
    cluster.events.on_change();
}

static void on_nodes_reply(struct redis_request *req, redisReply *reply)
{
    (void)req;
    cluster.reading = false;
    if (reply == NULL)
        return; /* the refresh timer asks again, elsewhere if need be */
    if (reply->type != REDIS_REPLY_STRING) {
        log_warn("redis cluster %s: CLUSTER NODES: %s", cluster.reader.label,
                 reply->type == REDIS_REPLY_ERROR ? reply->str
                                                  : "unexpected reply");
        redis_link_reset(&cluster.reader, "not a cluster node");
        return;
    }
    stats.cluster_refreshes++;
    cluster_map_parse(&cluster.view, reply->str, reply->len,
                      cluster.reader.addr.host);
    if (cluster.view.bad_lines > 0)
        log_warn("redis cluster: %zu line(s) of CLUSTER NODES not "
                 "understood, skipped",
                 cluster.view.bad_lines);
    apply_view(cluster.view.count);
    known_reset(cluster.view.nodes, cluster.view.count);
}

void cluster_view_refresh(const char *why)
{
    static const char *const argv[] = {"CLUSTER", "NODES"};
    static const size_t len[] = {7, 5};

    if (cluster.reading || !redis_link_ready(&cluster.reader))
        return; /* asked already, or the timer asks once connected */
    log_debug("redis cluster: reading the map (%s)", why);
    cluster.reader_request.on_reply = on_nodes_reply;
    if (redis_link_send(&cluster.reader, &cluster.reader_request, 2,
                        (const char **)argv, len) == 0)
        cluster.reading = true;
}

static bool in_doubt(void)
{
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++) {
        struct shard *s = cluster_shard_of_slot(slot);

        if (s == NULL || redis_pool_ready(s->pool) < redis_pool_size(s->pool))
            return true;
    }
    return false;
}

/* Reads the map every cluster_refresh_ms, or every DOUBT_REFRESH_MS
 * while a slot has no ready master; a reader that cannot connect moves
 * to the next known node. */
static void refresh_timer_fired(uv_timer_t *timer)
{
    bool doubt = in_doubt();
    uint64_t now = uv_now(cluster.loop);

    uv_timer_start(timer, refresh_timer_fired,
                   doubt ? DOUBT_REFRESH_MS
                         : (uint64_t)cluster.cfg->cluster_refresh_ms,
                   0);
    if (redis_link_ready(&cluster.reader)) {
        cluster_view_refresh(doubt ? "a slot without a ready master"
                                   : "periodic");
    } else if (cluster.reader.state == LINK_DOWN ||
               now - cluster.reader_moved_ms >=
                   (uint64_t)cluster.cfg->connect_timeout_ms) {
        cluster.reading = false;
        cluster.reader_moved_ms = now;
        redis_link_move(&cluster.reader, &cluster.known[cluster.next_known]);
        cluster.next_known = (cluster.next_known + 1) % cluster.known_count;
    }
}

static void on_reader_connected(struct redis_link *link)
{
    redis_link_set_ready(link); /* a refused AUTH drops it again */
}

static void on_reader_readiness(struct redis_link *link)
{
    if (!redis_link_ready(link))
        return;
    cluster_pubsub_ask(); /* answered before the map, on the same connection */
    cluster_view_refresh("connected");
}

int cluster_view_init(void)
{
    int err;

    cluster.view.max = MAX_VIEW_NODES;
    cluster.view.nodes = calloc(MAX_VIEW_NODES, sizeof(*cluster.view.nodes));
    if (cluster.view.nodes == NULL || known_reset(NULL, 0) != 0)
        return -ENOMEM;
    if ((err = redis_link_init(&cluster.reader, cluster.loop, cluster.cfg,
                               "cluster")) != 0 ||
        (err = uv_timer_init(cluster.loop, &cluster.refresh_timer)) != 0)
        return err;
    cluster.reader.on_connected = on_reader_connected;
    cluster.reader.on_readiness = on_reader_readiness;
    return 0;
}

int cluster_start(void)
{
    cluster.reader_moved_ms = uv_now(cluster.loop);
    redis_link_move(&cluster.reader, &cluster.known[0]);
    cluster.next_known = 1 % cluster.known_count;
    uv_timer_start(&cluster.refresh_timer, refresh_timer_fired,
                   DOUBT_REFRESH_MS, 0);
    return 0;
}

bool cluster_ready(void)
{
    return !in_doubt();
}
