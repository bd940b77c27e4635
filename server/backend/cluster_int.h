/*
 * cluster_int.h - what only the cluster backend's own files may see.
 *
 * The cluster backend is four files, one concern each. cluster.c holds
 * the shards (a master, its pool and its subscriber), routes a key's call
 * to its slot's shard, and runs the whole's life. cluster_view.c reads
 * the slot map and applies it. cluster_redirect.c follows MOVED and ASK
 * and holds the calls Redis refuses for now. cluster_pubsub.c places the
 * listeners. They share the one state below, and the functions declared
 * here, each named for its file (cluster_shard_ for cluster.c's shards).
 * Everyone else sees cluster.h only.
 */
#ifndef RLOCKD_CLUSTER_INT_H
#define RLOCKD_CLUSTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>
#include <uv.h>

#include "backend/cluster.h"
#include "backend/cluster_map.h"
#include "backend/keyslot.h"
#include "backend/redis_link.h"
#include "backend/redis_pool.h"
#include "backend/subscriber.h"
#include "base/list.h"

/* slot_shard[] of a slot no master serves. */
#define CLUSTER_NO_SHARD 0xffff

struct shard {
    struct redis_pool *pool; /* NULL: never used */
    struct subscriber *sub;  /* sharded pub/sub on this master */
    bool active;             /* a master in the map */
    bool moved;              /* moved to a promoted replica just now */
    unsigned slots;
    unsigned replicas;
    uint64_t epoch;
};

/* The cluster backend's one state. cluster.c keeps the shards; the map's
 * reader, the known nodes and the view are cluster_view.c's; hold_timer
 * and held, cluster_redirect.c's; the pub/sub fields, cluster_pubsub.c's. */
struct cluster_state {
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
};
extern struct cluster_state cluster;

/* cluster.c: the shards. */

/* The shard serving slot, or NULL. */
struct shard *cluster_shard_of_slot(unsigned slot);
/* The active shard whose master is at addr, or NULL. */
struct shard *cluster_shard_at(const struct redis_addr *addr);
struct shard *cluster_shard_open(const struct redis_addr *addr);
/* Not a master any more: its connections and subscriber stop. */
void cluster_shard_close(struct shard *s);
void cluster_shard_move(struct shard *s, const struct redis_addr *addr);

/* cluster_view.c: the map. */

/* The reader's link and timer, the map's room, the seeds; 0 or an
 * error. */
int cluster_view_init(void);
/* Reads the map again now, unless a read is under way or the reader is
 * not connected (its timer asks once it is); why is logged. */
void cluster_view_refresh(const char *why);

/* cluster_redirect.c: redirected and refused calls. */

/* struct redis_pool_events' on_redirect for every shard's pool. */
bool cluster_redirect_follow(struct redis_pool *pool, struct redis_call *call,
                             const redisReply *reply);
/* A shard changed: the held calls are tried again at once. */
void cluster_redirect_retry_held(void);
/* Closing: every held call gets its last refusal. */
void cluster_redirect_answer_held(void);

/* cluster_pubsub.c: where listeners listen. */

/* The pub/sub mode and the limbo; 0 or -ENOMEM. */
int cluster_pubsub_init(void);
/* Channels listen on their slot's master (sharded or both). */
bool cluster_pubsub_sharded(void);
/* After the map changed: sharded channels to their slots' masters. */
void cluster_pubsub_regroup(void);
/* The plain subscriber on a live master. */
void cluster_pubsub_place_global(void);
/* With pubsub = auto, asks the cluster once whether it shards pub/sub. */
void cluster_pubsub_ask(void);
/* A shard's subscriber's events. */
extern const struct subscriber_events cluster_pubsub_events;

#endif
