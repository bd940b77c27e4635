/*
 * redis_backend.c - the topology: which server is the master, moving the
 * pool and the subscriber to it, and what INFO and the log say about it.
 *
 * Standalone: the master is the configured address, for ever. Sentinel:
 * the sentinels name candidates (sentinel.c); a candidate becomes the
 * master only once ROLE, asked of it directly, says "master", since a
 * sentinel can be stale or partitioned (a pool moved to a replica would
 * see every write refused, or worse, a demoted old master accept them).
 * The same connection then asks ROLE again every sentinel_poll_ms, which
 * notices a master demoted behind the sentinels' back and counts its
 * replicas for sync_replicas = auto. When the master changes, every
 * connection moves, and the engine is told to check every hold against
 * the new master (a write that had not reached the replica is gone).
 *
 * A key group is a pool connection: one Redis could run a script over
 * any keys, but a renewal must stay ordered with its keys' releases,
 * which go the same way. In a cluster it is a slot (cluster.c).
 *
 * Cluster: the map, the pools, redirections and where each channel is
 * listened on are the cluster backend's (cluster.c, cluster_view.c,
 * cluster_redirect.c, cluster_pubsub.c).
 */
#include "backend/redis_backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/cluster.h"
#include "backend/redis_link.h"
#include "backend/redis_pool.h"
#include "backend/sentinel.h"
#include "backend/subscriber.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/stats.h"

/* While Redis stays unreachable, the log says so this often. */
#define OUTAGE_SUMMARY_MS 60000

/* redis_status.topology */
static const char TOPOLOGY_OK[] = "ok";
static const char TOPOLOGY_DISCOVERING[] = "discovering";
static const char TOPOLOGY_UNREACHABLE[] = "unreachable";

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    struct redis_backend_events events;
    struct redis_pool *pool; /* standalone and sentinel */
    struct subscriber
        *subscriber;          /* plain pub/sub (cluster: cluster_pubsub.c's) */
    struct redis_addr master; /* in use; port 0: none yet */
    /* Sentinel mode: ROLE of a candidate, then of the master. */
    struct redis_link role;
    struct redis_request role_request;
    bool role_asked;
    bool confirming; /* role's address is a candidate, not the master */
    bool candidate_announced; /* by +switch-master */
    char candidate_source[340];
    uv_timer_t role_timer;
    unsigned replicas; /* as the master's ROLE listed them */
    /* Outage reporting. */
    bool reachable;
    bool ever_reachable;     /* the first connect is no recovery */
    bool never_reached_told; /* first_connect_warn_ms passed before it */
    uv_timer_t outage_timer;
    uint64_t failures_at_outage; /* stats.redis_connect_failures then */
} redis;

static bool sentinel_mode(void)
{
    return redis.cfg->redis_mode == REDIS_MODE_SENTINEL;
}

static bool cluster_mode(void)
{
    return redis.cfg->redis_mode == REDIS_MODE_CLUSTER;
}

static void set_topology(const char *state)
{
    if (redis_status.topology == state)
        return;
    redis_status.topology = state;
    redis_status.changed_ms = uv_now(redis.loop);
}

/* ---- struct backend ---------------------------------------------------- */

static void add_script(struct backend_script *script)
{
    if (redis_pool_add_script(script) != 0)
        log_error("out of memory registering script %s", script->name);
}

/* One server: a key's route is its pool connection. */
static unsigned single_key_group(const char *key, size_t len)
{
    return (unsigned)(hashmap_hash(key, len) % (uint64_t)redis.cfg->pool_size);
}

static int single_eval(const struct backend_call *call, backend_reply_fn *fn,
                       void *arg)
{
    return redis_pool_eval(redis.pool, call,
                           single_key_group(call->key, call->key_len), fn, arg);
}

static bool single_key_ready(const char *key, size_t len)
{
    return redis_pool_route_ready(redis.pool, single_key_group(key, len));
}

static int single_sync(const char *key, size_t len, backend_reply_fn *fn,
                       void *arg)
{
    int64_t n = redis.cfg->sync_replicas;

    if (n == SYNC_REPLICAS_AUTO)
        n = sentinel_mode() ? (int64_t)redis.replicas : 0;
    if (n == 0)
        return -ENOENT;
    return redis_pool_wait(redis.pool, single_key_group(key, len), (unsigned)n,
                           redis.cfg->sync_timeout_ms, fn, arg);
}

static int cluster_sync(const char *key, size_t len, backend_reply_fn *fn,
                        void *arg)
{
    return cluster_wait(key, len, redis.cfg->sync_replicas, fn, arg);
}

static int single_listen(struct backend_listener *listener, const char *channel,
                         size_t len)
{
    return subscriber_listen(redis.subscriber, listener, channel, len);
}

/* Redisson publishes globally outside a cluster. */
static const char *single_publish(void)
{
    return "publish";
}

static const struct backend single_ops = {
    .add_script = add_script,
    .eval = single_eval,
    .listen = single_listen,
    .unlisten = subscriber_unlisten,
    .key_ready = single_key_ready,
    .key_group = single_key_group,
    .sync = single_sync,
    .publish = single_publish,
};

static const struct backend cluster_ops = {
    .add_script = add_script,
    .eval = cluster_eval,
    .listen = cluster_listen,
    .unlisten = cluster_unlisten,
    .key_ready = cluster_key_ready,
    .key_group = cluster_key_group,
    .sync = cluster_sync,
    .publish = cluster_publish,
};

const struct backend *redis_backend(void)
{
    return cluster_mode() ? &cluster_ops : &single_ops;
}

/* ---- reachability ------------------------------------------------------ */

/*
 * Losing Redis is logged once when it happens, then summed up every
 * minute while it lasts, and once more when it ends: the links log only
 * a new kind of failure (redis_link.c), so a long outage is a handful of
 * lines, not one per retry.
 */
static void outage_summary(uv_timer_t *timer)
{
    uint64_t since = redis_status.unreachable_since_ms;

    (void)timer;
    if (!redis.ever_reachable && !redis.never_reached_told) {
        redis.never_reached_told = true;
        log_warn("redis: never reached in the %llu ms since start-up (master "
                 "%s; %llu failed connection attempts): check [redis] host "
                 "and port (or unix_socket, sentinels, nodes), and that "
                 "Redis runs there",
                 (unsigned long long)(uv_now(redis.loop) - since),
                 redis_status.master[0] ? redis_status.master : "not known yet",
                 (unsigned long long)stats.redis_connect_failures);
        return;
    }
    log_warn("redis: still unreachable after %llu s (master %s; %llu failed "
             "connection attempts)",
             (unsigned long long)(uv_now(redis.loop) - since) / 1000,
             redis_status.master[0] ? redis_status.master : "not known yet",
             (unsigned long long)(stats.redis_connect_failures -
                                  redis.failures_at_outage));
}

/* Every command connection is ready. */
static bool commands_ready(void)
{
    if (cluster_mode())
        return cluster_ready();
    return redis_pool_ready(redis.pool) == redis_pool_size(redis.pool);
}

static void note_reachability(void)
{
    bool reachable = commands_ready();
    uint64_t now = uv_now(redis.loop);

    if (reachable && !redis.reachable) {
        if (redis.ever_reachable)
            log_warn(
                "redis: reachable again after %llu ms (master %s)",
                (unsigned long long)(now - redis_status.unreachable_since_ms),
                redis_status.master);
        else if (redis.never_reached_told)
            log_info(
                "redis: reached at last, %llu ms after start-up "
                "(master %s)",
                (unsigned long long)(now - redis_status.unreachable_since_ms),
                redis_status.master);
        uv_timer_stop(&redis.outage_timer);
        redis.ever_reachable = true;
        redis_status.ever_reached = true;
        redis_status.unreachable_since_ms = 0;
        set_topology(TOPOLOGY_OK);
    } else if (!reachable && redis.reachable) {
        log_warn("redis: unreachable (master %s); commands wait up to "
                 "retry_timeout_ms for it",
                 redis_status.master);
        redis_status.unreachable_since_ms = now;
        redis.failures_at_outage = stats.redis_connect_failures;
        uv_timer_start(&redis.outage_timer, outage_summary, OUTAGE_SUMMARY_MS,
                       OUTAGE_SUMMARY_MS);
        if (!redis.confirming)
            set_topology(TOPOLOGY_UNREACHABLE);
        if (sentinel_mode())
            sentinel_ask(); /* has the master moved? */
    }
    redis.reachable = reachable;
}

static void on_link_change(void)
{
    if (cluster_mode()) {
        unsigned ready, size;

        cluster_describe(redis_status.master, sizeof(redis_status.master));
        cluster_pool_counts(&ready, &size);
        stats.redis_pool_ready = ready;
        stats.redis_pool_size = size;
        stats.redis_subscriber_ready = cluster_subscribers_ready();
    } else {
        stats.redis_pool_ready = redis_pool_ready(redis.pool);
        stats.redis_pool_size = redis_pool_size(redis.pool);
        stats.redis_subscriber_ready = subscriber_ready(redis.subscriber);
    }
    note_reachability();
    stats.redis_connected =
        commands_ready() && stats.redis_subscriber_ready != 0;
    redis.events.on_change();
}

static void on_subscriber_change(struct subscriber *sub)
{
    (void)sub;
    on_link_change();
}

/* A plain subscription refused (an ACL without the channel): it is asked
 * again on the next connection. */
static void on_subscriber_dropped(struct subscriber *sub)
{
    (void)sub;
}

static const struct subscriber_events subscriber_events = {
    on_subscriber_change, on_subscriber_dropped};

static void on_pool_change(struct redis_pool *pool)
{
    (void)pool;
    on_link_change();
}

static void on_readonly(struct redis_pool *pool)
{
    (void)pool;
    if (sentinel_mode())
        sentinel_ask();
}

static const struct redis_pool_events pool_events = {on_pool_change,
                                                     on_readonly, NULL};

/* ---- the master --------------------------------------------------------- */

static void switch_master(const struct redis_addr *addr, const char *source)
{
    char old[320], now[320];
    bool first = redis.master.port == 0 && redis.master.unix_socket[0] == '\0';

    redis_addr_text(&redis.master, old, sizeof(old));
    redis_addr_text(addr, now, sizeof(now));
    redis.master = *addr;
    snprintf(redis_status.master, sizeof(redis_status.master), "%s", now);
    redis_status.changed_ms = uv_now(redis.loop);
    if (first) {
        log_info("redis: master is %s (%s)", now, source);
    } else {
        stats.redis_master_changes++;
        log_warn("redis: master moved from %s to %s (%s)", old, now, source);
    }
    redis_pool_move(redis.pool, addr);
    subscriber_move(redis.subscriber, addr);
    if (!first) {
        char why[700];

        snprintf(why, sizeof(why), "redis master %s -> %s", old, now);
        redis.events.on_recheck(why, NULL);
    }
}

static void role_send(void);

/* ROLE: ["master", offset, [[ip, port, offset], ...]] on a master. */
static void on_role_reply(struct redis_request *req, redisReply *reply)
{
    char addr[320];
    bool master;

    (void)req;
    redis.role_asked = false;
    if (reply == NULL)
        return; /* the link redials the same address */
    master = reply->type == REDIS_REPLY_ARRAY && reply->elements >= 3 &&
             reply->element[0]->type == REDIS_REPLY_STRING &&
             strcmp(reply->element[0]->str, "master") == 0;
    redis_addr_text(&redis.role.addr, addr, sizeof(addr));
    if (master) {
        const redisReply *replicas = reply->element[2];
        /* The master named again (one +switch-master per sentinel, or a
         * poll after a doubt) is no switch: its holds were re-checked
         * once already. */
        bool moved = redis.confirming &&
                     !redis_addr_equal(&redis.role.addr, &redis.master);

        redis.replicas = replicas->type == REDIS_REPLY_ARRAY
                             ? (unsigned)replicas->elements
                             : 0;
        redis.confirming = false;
        if (moved)
            switch_master(&redis.role.addr, redis.candidate_source);
        else if (redis.reachable)
            set_topology(TOPOLOGY_OK); /* a doubt cleared: still the master */
        return;
    }
    if (redis.confirming)
        log_warn("redis: %s named %s as the master, but it is not one "
                 "(ROLE: %s); asking again",
                 redis.candidate_source, addr,
                 reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                         reply->element[0]->type == REDIS_REPLY_STRING
                     ? reply->element[0]->str
                     : "no answer");
    else
        log_warn("redis: master %s is not a master any more; asking the "
                 "sentinels",
                 addr);
    redis.confirming = false;
    set_topology(TOPOLOGY_DISCOVERING);
    sentinel_ask();
}

static void role_send(void)
{
    static const char *const argv[] = {"ROLE"};
    static const size_t len[] = {4};

    if (redis.role_asked || !redis_link_ready(&redis.role))
        return;
    redis.role_request.on_reply = on_role_reply;
    if (redis_link_send(&redis.role, &redis.role_request, 1,
                        (const char **)argv, len) == 0)
        redis.role_asked = true;
}

static void role_timer_fired(uv_timer_t *timer)
{
    uv_timer_start(timer, role_timer_fired,
                   (uint64_t)redis.cfg->sentinel_poll_ms, 0);
    role_send();
}

static void on_role_connected(struct redis_link *link)
{
    redis_link_set_ready(link); /* a refused AUTH drops it again */
}

static void on_role_readiness(struct redis_link *link)
{
    if (redis_link_ready(link))
        role_send();
}

/*
 * Whether a sentinel's poll may move the master: none yet, ROLE said it is
 * not one, or it is unreachable and ROLE cannot reach it either. After a
 * failover from A to B, a sentinel that has not heard of it yet still
 * names A, and A passes ROLE until the sentinels demote it, seconds later;
 * a poll cannot tell the old master from the new. So an unreachable pool
 * alone (reconnecting after the move, or a connection killed) is no doubt
 * while the master still answers ROLE: rlockd never leaves a working
 * master on a poll's word, only on +switch-master, which a sentinel sends
 * once the switch has its newer config epoch. Jedis's JedisSentinelPool
 * (redis/clients/jedis/JedisSentinelPool.java) likewise switches only on
 * +switch-master.
 */
static bool master_in_doubt(void)
{
    bool role_vouches = redis_addr_equal(&redis.role.addr, &redis.master) &&
                        redis_link_ready(&redis.role);

    return redis.master.port == 0 ||
           redis_status.topology == TOPOLOGY_DISCOVERING ||
           (!redis.reachable && !role_vouches);
}

/*
 * A sentinel named addr: confirm it unless it is the master already. A
 * poll's answer is heeded only while the master is in doubt (above). A
 * switch announced by +switch-master is always heeded.
 */
static void on_sentinel_master(const struct redis_addr *addr,
                               const char *source, bool event)
{
    bool doubt = master_in_doubt();

    if (redis_addr_equal(addr, &redis.role.addr) &&
        (redis.confirming || redis_addr_equal(addr, &redis.master)))
        return; /* being confirmed, or confirmed */
    if (!event && (!doubt || (redis.confirming && redis.candidate_announced)))
        return;
    redis.candidate_announced = event;
    snprintf(redis.candidate_source, sizeof(redis.candidate_source), "%s",
             source);
    redis.confirming = true;
    redis.role_asked = false;
    set_topology(TOPOLOGY_DISCOVERING);
    redis_link_move(&redis.role, addr);
}

/* ---- life ---------------------------------------------------------------- */

static void on_cluster_recheck(const char *why,
                               bool (*affected)(const char *key, size_t len))
{
    redis_status.changed_ms = uv_now(redis.loop);
    redis.events.on_recheck(why, affected);
}

static const struct cluster_events cluster_events = {on_link_change,
                                                     on_cluster_recheck};

int redis_backend_init(uv_loop_t *loop, const struct config *cfg,
                       const struct redis_backend_events *events)
{
    int err;

    redis.loop = loop;
    redis.cfg = cfg;
    redis.events = *events;
    redis_status.changed_ms = uv_now(loop);
    redis_status.unreachable_since_ms = uv_now(loop);
    if ((err = redis_links_init(loop, cfg)) != 0 ||
        (err = uv_timer_init(loop, &redis.outage_timer)) != 0)
        return err;
    redis.subscriber =
        subscriber_new(loop, cfg, "subscriber", false, &subscriber_events);
    if (redis.subscriber == NULL)
        return -ENOMEM;
    if (cluster_mode())
        return cluster_init(loop, cfg, &cluster_events, redis.subscriber);
    if (!sentinel_mode())
        return 0;
    if ((err = sentinel_init(loop, cfg, on_sentinel_master)) != 0 ||
        (err = redis_link_init(&redis.role, loop, cfg, "role")) != 0 ||
        (err = uv_timer_init(loop, &redis.role_timer)) != 0)
        return err;
    redis.role.on_connected = on_role_connected;
    redis.role.on_readiness = on_role_readiness;
    return 0;
}

/* The scripts are all known now: the pools made from here load them. */
int redis_backend_start(void)
{
    struct redis_addr addr = {0};

    /* Only a master counts as reachable; the first one starts the
     * outage clock from here. Not reached within first_connect_warn_ms,
     * it is worth a warning (outage_summary): a wrong address or a Redis
     * that is not running shows at once, not after a minute. */
    uv_timer_start(&redis.outage_timer, outage_summary,
                   (uint64_t)redis.cfg->first_connect_warn_ms,
                   OUTAGE_SUMMARY_MS);
    set_topology(sentinel_mode() || cluster_mode() ? TOPOLOGY_DISCOVERING
                                                   : TOPOLOGY_UNREACHABLE);
    if (cluster_mode())
        return cluster_start();
    redis.pool = redis_pool_new(redis.loop, redis.cfg, "pool", &pool_events);
    if (redis.pool == NULL)
        return -ENOMEM;
    stats.redis_pool_size = redis_pool_size(redis.pool);
    if (sentinel_mode()) {
        sentinel_start();
        uv_timer_start(&redis.role_timer, role_timer_fired,
                       (uint64_t)redis.cfg->sentinel_poll_ms, 0);
        return 0;
    }
    snprintf(addr.host, sizeof(addr.host), "%s", redis.cfg->redis_host);
    addr.port = (int)redis.cfg->redis_port;
    snprintf(addr.unix_socket, sizeof(addr.unix_socket), "%s",
             redis.cfg->redis_unix_socket);
    switch_master(&addr, "configured");
    return 0;
}

bool redis_backend_ready(void)
{
    return commands_ready();
}

/* The pool, the subscriber; in sentinel mode the ROLE link and two per
 * sentinel; in cluster mode what cluster.c may open. */
unsigned redis_backend_connections(void)
{
    unsigned n = (unsigned)redis.cfg->pool_size + 1;

    if (cluster_mode())
        return cluster_connections() + 1;
    return sentinel_mode() ? n + 1 + 2 * sentinel_count() : n;
}

unsigned redis_backend_inflight(void)
{
    if (cluster_mode())
        return cluster_inflight();
    return redis.pool != NULL ? redis_pool_inflight(redis.pool) : 0;
}

void redis_backend_close(void)
{
    if (sentinel_mode()) {
        sentinel_close();
        redis_link_close(&redis.role);
        uv_close((uv_handle_t *)&redis.role_timer, NULL);
    }
    if (cluster_mode())
        cluster_close();
    uv_close((uv_handle_t *)&redis.outage_timer, NULL);
    subscriber_close(redis.subscriber);
    if (redis.pool != NULL)
        redis_pool_close(redis.pool);
    redis_links_close();
}

void redis_backend_free(void)
{
    redis_pool_free(redis.pool);
    subscriber_free(redis.subscriber);
    redis_pool_free_scripts();
    if (sentinel_mode())
        sentinel_free();
    if (cluster_mode())
        cluster_free();
}
