/*
 * cluster_map.h - what Redis Cluster says about itself, read: the text of
 * CLUSTER NODES, and the MOVED and ASK redirections.
 *
 * Owns the parsing only, as pure functions over bytes (no I/O, no
 * state), so that the unit tests and the fuzzer reach them directly;
 * cluster_view.c decides what the map means for its connections.
 */
#ifndef RLOCKD_CLUSTER_MAP_H
#define RLOCKD_CLUSTER_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/keyslot.h"
#include "backend/redis_addr.h"

/* cluster_map.owner of a slot no node serves. */
#define CLUSTER_NO_NODE 0xffff

struct cluster_node {
    char id[41];
    char master_id[41]; /* a replica's master; "-" for a master */
    struct redis_addr addr;
    bool master;
    bool failed;    /* fail, or not reachable yet (noaddr, handshake) */
    bool connected; /* its bus link is up, and no node suspects it */
    uint64_t epoch; /* its config epoch */
    unsigned slots; /* how many slots it serves */
};

struct cluster_map {
    struct cluster_node *nodes; /* max of them, the caller's */
    size_t max;
    size_t count;
    size_t bad_lines;              /* lines not understood, skipped */
    uint16_t owner[KEYSLOT_COUNT]; /* index in nodes, or CLUSTER_NO_NODE */
};

/* Reads a CLUSTER NODES reply into map (nodes past max are skipped). A
 * node that does not know its own address yet says ":port"; it is the
 * one asked, at self_host. */
void cluster_map_parse(struct cluster_map *map, const char *text, size_t len,
                       const char *self_host);
/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": the slot and the address. */
bool cluster_redirect_parse(const char *error, size_t len, unsigned *slot,
                            struct redis_addr *addr);

#endif
