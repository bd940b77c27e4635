/*
 * cluster.c - the slot map, its shards, redirections and held calls.
 *
 * A shard is a master and its pool. When a master fails over, the map
 * names its promoted replica for the same slots: the shard (and so every
 * key's connection) moves there, as Sentinel mode moves its one pool,
 * and the holds in those slots are checked again. When slots move
 * between masters (resharding), only the map changes: MIGRATE carries
 * the keys, and nothing a hold needs is lost.
 *
 * The map is read with CLUSTER NODES (parsed by cluster_map.c) rather
 * than CLUSTER SLOTS for one field: each master's config epoch. Just after a failover a node that
 * has not heard of it yet still names the old master; a slot's owner is
 * replaced only by one with an epoch at least as new, which is the rule
 * the cluster itself settles such conflicts by, so a stale answer never
 * moves a shard back and forth.
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
 */
#include "backend/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cluster_map.h"
#include "backend/keyslot.h"
#include "backend/redis_pool.h"
#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"

/* Nodes of one CLUSTER NODES answer it reads. */
#define MAX_VIEW_NODES 1024
#define NO_SHARD 0xffff
#define MAX_HOPS 5
/* Held calls are retried this often. */
#define HOLD_RETRY_MS 50
/* While a slot has no ready master, the map is read this often. */
#define DOUBT_REFRESH_MS 250

struct shard {
    struct redis_pool *pool; /* NULL: never used */
    struct subscriber *sub;  /* sharded pub/sub on this master */
    bool active;             /* a master in the map */
    bool moved;              /* moved to a promoted replica just now */
    unsigned slots;
    unsigned replicas;
    uint64_t epoch;
};

struct held_call {
    struct list_node link;
    struct redis_call *call;
    struct shard *ask; /* an ASK's target, or NULL: the slot's master */
    unsigned slot;
    uint64_t deadline;
    char error[128]; /* the last refusal */
};

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    struct cluster_events events;
    /* [redis] cluster_max_masters of them; more masters are logged, and
     * their slots not served. */
    struct shard *shards;
    unsigned shard_count; /* entries ever used */
    uint16_t slot_shard[KEYSLOT_COUNT];
    /* The map's reader: one link, moved from node to node. */
    struct redis_link reader;
    struct redis_request reader_request;
    bool reading;
    uint64_t reader_moved_ms;
    /* Where to read the map: the seeds, then every node last seen. */
    struct redis_addr *known;
    size_t known_count;
    size_t next_known;
    uv_timer_t refresh_timer;
    uv_timer_t hold_timer;
    struct list_node held;
    struct cluster_map view; /* the answer last read */
    /* Pub/sub: how ([redis] pubsub; auto until the cluster answers), the
     * plain subscriber, and where listeners wait for a home. */
    enum redis_pubsub pubsub;
    bool pubsub_asked;
    struct redis_request pubsub_request;
    struct subscriber *global;
    struct redis_addr global_at; /* port 0: not placed */
    struct subscriber *limbo;
} cluster;

static const struct redis_pool_events shard_events;
static const struct subscriber_events shard_sub_events;
static void regroup_listeners(void);
static void place_global(void);
static void pubsub_ask(void);

static bool listens_sharded(void)
{
    return cluster.pubsub == PUBSUB_SHARDED || cluster.pubsub == PUBSUB_BOTH;
}

/* Its pool, and its subscriber when channels are sharded, go to addr. */
static void shard_move(struct shard *s, const struct redis_addr *addr)
{
    redis_pool_move(s->pool, addr);
    if (listens_sharded())
        subscriber_move(s->sub, addr);
}

static struct shard *shard_of_slot(unsigned slot)
{
    uint16_t i = cluster.slot_shard[slot];

    return i == NO_SHARD ? NULL : &cluster.shards[i];
}

static struct shard *shard_at(const struct redis_addr *addr)
{
    for (unsigned i = 0; i < cluster.shard_count; i++)
        if (cluster.shards[i].active &&
            redis_addr_equal(redis_pool_addr(cluster.shards[i].pool), addr))
            return &cluster.shards[i];
    return NULL;
}

/* A shard for a master at addr: a free one moved there, or a new one.
 * NULL when out of memory or shards. */
static struct shard *shard_open(const struct redis_addr *addr)
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
                                &shard_sub_events);
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
    shard_move(s, addr);
    return s;
}

static void shard_close(struct shard *s)
{
    char addr[320];

    log_info("redis cluster: %s is not a master any more",
             redis_addr_text(redis_pool_addr(s->pool), addr, sizeof(addr)));
    s->active = false;
    redis_pool_stop(s->pool);
    subscriber_stop(s->sub);
}

/* ---- reading the map ----------------------------------------------------- */

static void refresh(const char *why);

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
    struct shard *s = shard_of_slot(keyslot(key, len));

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
    struct shard *s = shard_at(&node->addr);
    char from[320], to[320];
    size_t used;

    if (s != NULL)
        return s;
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++) {
        struct shard *old = shard_of_slot(slot);

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
        shard_move(old, &node->addr);
        old->moved = true;
        old->epoch = node->epoch;
        return old;
    }
    return shard_open(&node->addr);
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
            of_node[n] = shard_at(&node->addr);
        else if (node->slots > 0)
            of_node[n] = shard_for(n, count, why, sizeof(why));
    }
    for (unsigned i = 0; i < cluster.shard_count; i++)
        cluster.shards[i].slots = cluster.shards[i].replicas = 0;
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++) {
        uint16_t n = cluster.view.owner[slot];
        struct shard *now = n == CLUSTER_NO_NODE ? NULL : of_node[n];
        struct shard *was = shard_of_slot(slot);

        if (n != CLUSTER_NO_NODE && was != NULL && was != now && was->active &&
            was->epoch > cluster.view.nodes[n].epoch)
            now = was; /* a stale answer */
        cluster.slot_shard[slot] =
            now == NULL ? NO_SHARD : (uint16_t)(now - cluster.shards);
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
            shard_close(s);
    }
    regroup_listeners();
    place_global();
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

static void refresh(const char *why)
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
        struct shard *s = shard_of_slot(slot);

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
        refresh(doubt ? "a slot without a ready master" : "periodic");
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
    pubsub_ask(); /* answered before the map, on the same connection */
    refresh("connected");
}

/* ---- held calls -------------------------------------------------------------- */

static void hold_timer_fired(uv_timer_t *timer);

static void hold_answer(struct held_call *h)
{
    redisReply error = {
        .type = REDIS_REPLY_ERROR, .str = h->error, .len = strlen(h->error)};

    list_remove(&h->link);
    redis_call_answer(h->call, &error);
    free(h);
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

static void hold_timer_fired(uv_timer_t *timer)
{
    uint64_t now = uv_now(cluster.loop);
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &cluster.held) {
        struct held_call *h = list_entry(pos, struct held_call, link);
        struct shard *to = h->ask != NULL ? h->ask : shard_of_slot(h->slot);

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

/* ---- redirections ---------------------------------------------------------- */

static bool starts_with(const char *s, const char *word)
{
    return strncmp(s, word, strlen(word)) == 0;
}

static bool on_redirect(struct redis_pool *pool, struct redis_call *call,
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
            refresh("CLUSTERDOWN");
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
    to = shard_at(&addr);
    if (to == NULL && (to = shard_open(&addr)) == NULL)
        return false;
    if (moved) {
        stats.cluster_moved++;
        cluster.slot_shard[slot] = (uint16_t)(to - cluster.shards);
        refresh("MOVED");
    } else {
        stats.cluster_asks++;
    }
    if (redis_call_send(call, to->pool, ask) != 0)
        hold(call, ask ? to : NULL, slot, error);
    return true;
}

/* ---- shard events ------------------------------------------------------------ */

static void on_shard_change(struct redis_pool *pool)
{
    if (!list_empty(&cluster.held))
        uv_timer_start(&cluster.hold_timer, hold_timer_fired, 0, 0);
    if (redis_pool_ready(pool) < redis_pool_size(pool))
        refresh("a master connection lost");
    cluster.events.on_change();
}

static void on_shard_readonly(struct redis_pool *pool)
{
    (void)pool;
    refresh("READONLY");
}

static const struct redis_pool_events shard_events = {
    on_shard_change, on_shard_readonly, on_redirect};

/* ---- struct backend ------------------------------------------------------ */

int cluster_eval(const struct backend_call *call, backend_reply_fn *fn,
                 void *arg)
{
    unsigned slot = keyslot(call->key, call->key_len);
    struct shard *s = shard_of_slot(slot);

    if (s == NULL)
        return -ENOTCONN;
    return redis_pool_eval(s->pool, call, slot, fn, arg);
}

bool cluster_key_ready(const char *key, size_t len)
{
    unsigned slot = keyslot(key, len);
    struct shard *s = shard_of_slot(slot);

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
    struct shard *s = shard_of_slot(slot);

    if (s == NULL)
        return -ENOTCONN;
    if (replicas == SYNC_REPLICAS_AUTO)
        replicas = s->replicas;
    if (replicas == 0)
        return -ENOENT;
    return redis_pool_wait(s->pool, slot, (unsigned)replicas,
                           cluster.cfg->sync_timeout_ms, fn, arg);
}

/* ---- pub/sub ------------------------------------------------------------- */

/* Where a sharded channel listens: its slot's master, or the limbo. */
static struct subscriber *sharded_home(const char *channel, size_t len)
{
    struct shard *s = shard_of_slot(keyslot(channel, len));

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
static void regroup_listeners(void)
{
    if (!listens_sharded())
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
static void place_global(void)
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
        place_global();
        return;
    }
    for (unsigned i = 0; i < cluster.shard_count; i++)
        if (cluster.shards[i].active)
            subscriber_move(cluster.shards[i].sub,
                            redis_pool_addr(cluster.shards[i].pool));
    regroup_listeners();
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

static void pubsub_ask(void)
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
    for (unsigned i = 0; listens_sharded() && i < cluster.shard_count; i++)
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
    refresh("a sharded channel dropped or refused");
}

static const struct subscriber_events shard_sub_events = {on_sub_change,
                                                          on_sub_dropped};

/* ---- state ------------------------------------------------------------------- */

bool cluster_ready(void)
{
    return !in_doubt();
}

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
    cluster.pubsub = (enum redis_pubsub)cfg->pubsub;
    redis_status.pubsub = pubsub_names[cluster.pubsub];
    cluster.limbo =
        subscriber_new(loop, cfg, "unplaced", true, &shard_sub_events);
    if (cluster.limbo == NULL)
        return -ENOMEM;
    list_init(&cluster.held);
    for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++)
        cluster.slot_shard[slot] = NO_SHARD;
    cluster.view.max = MAX_VIEW_NODES;
    cluster.view.nodes = calloc(MAX_VIEW_NODES, sizeof(*cluster.view.nodes));
    cluster.shards =
        calloc((size_t)cfg->cluster_max_masters, sizeof(*cluster.shards));
    if (cluster.view.nodes == NULL || cluster.shards == NULL ||
        known_reset(NULL, 0) != 0)
        return -ENOMEM;
    if ((err = redis_link_init(&cluster.reader, loop, cfg, "cluster")) != 0 ||
        (err = uv_timer_init(loop, &cluster.refresh_timer)) != 0 ||
        (err = uv_timer_init(loop, &cluster.hold_timer)) != 0)
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

void cluster_close(void)
{
    struct list_node *node;

    while ((node = list_first(&cluster.held)) != NULL)
        hold_answer(list_entry(node, struct held_call, link));
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
