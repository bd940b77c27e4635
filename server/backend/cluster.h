/*
 * cluster.h - Redis Cluster: the slot map, one pool per master, routing
 * each call to its slot's master and following redirections.
 *
 * Owns the map of 16384 slots to masters, read with CLUSTER NODES from
 * any node it knows (the [redis] nodes seeds first), at start, on every
 * redirection, when a connection to a master is lost, when a server says
 * READONLY, and every cluster_refresh_ms; a pool of pool_size
 * connections per master; and the calls it is holding back: those that
 * met TRYAGAIN, CLUSTERDOWN, LOADING or MASTERDOWN, or a master not
 * ready yet after a redirection, retried until retry_timeout_ms. A
 * master replaced by its promoted replica keeps its pool, which moves
 * to the new address, and the holds in its slots are checked again
 * (on_recheck). It knows nothing of locks: keys, slots and calls only.
 *
 * It also routes pub/sub ([redis] pubsub): sharded, each channel is
 * subscribed on its slot's master (a sharded subscriber per shard,
 * channels handed over when their slot moves); global, on the one plain
 * subscriber it is given, kept on a live master; both, a listener listens
 * both ways (a twin on the plain subscriber). auto asks the cluster
 * (PUBSUB SHARDNUMSUB) before its first map; until then listeners wait in
 * a subscriber that never connects.
 */
#ifndef RLOCKD_CLUSTER_H
#define RLOCKD_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "backend/backend.h"
#include "backend/redis_link.h"
#include "backend/subscriber.h"
#include "base/config.h"

struct cluster_events {
    /* A master connection became ready or was lost, or the map changed. */
    void (*on_change)(void);
    /* A master was replaced by its replica (a failover): holds whose key
     * affected() says yes must be checked there. */
    void (*on_recheck)(const char *why,
                       bool (*affected)(const char *key, size_t len));
};

/* global: the plain subscriber, not yet connected; cluster_pubsub.c
 * moves it. */
int cluster_init(uv_loop_t *loop, const struct config *cfg,
                 const struct cluster_events *events,
                 struct subscriber *global);
/* Asks the seeds for the map; 0 or -ENOMEM. */
int cluster_start(void);
void cluster_close(void);
/* After the loop has run the close callbacks. */
void cluster_free(void);

/* As struct backend's. */
int cluster_eval(const struct backend_call *call, backend_reply_fn *fn,
                 void *arg);
bool cluster_key_ready(const char *key, size_t len);
/* The key's slot. */
unsigned cluster_key_group(const char *key, size_t len);
int cluster_listen(struct backend_listener *listener, const char *channel,
                   size_t len);
void cluster_unlisten(struct backend_listener *listener);
const char *cluster_publish(void);
/* WAIT on the key's master for replicas (auto: as many as CLUSTER NODES
 * lists for it); -ENOENT when there are none to wait for. */
int cluster_wait(const char *key, size_t len, int64_t replicas,
                 backend_reply_fn *fn, void *arg);

/* Every slot has a master, and every master connection is ready. */
bool cluster_ready(void);
/* Connections ready, and in all, over every master's pool. */
void cluster_pool_counts(unsigned *ready, unsigned *size);
unsigned cluster_inflight(void);
/* Connections it may hold open: a pool per master it may know. */
unsigned cluster_connections(void);
/* Every subscriber in use is ready. */
bool cluster_subscribers_ready(void);
/* "host:port slots=N,..." for INFO. */
void cluster_describe(char *out, size_t size);

#endif
