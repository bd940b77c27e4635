/*
 * fuzz_cluster_map.c - libFuzzer target for server/backend/cluster_map.c,
 * which reads what Redis Cluster nodes send (CLUSTER NODES, MOVED, ASK):
 * a node of a cluster rlockd does not own is input too.
 *
 * The input is handed whole to both parsers. Besides memory safety
 * (ASan, UBSan), it checks what cluster_view.c and cluster_redirect.c
 * rely on: no more nodes than room; every slot's owner is a parsed node
 * or none; each node's slot count is the number of slots it owns; ports
 * are 1-65535; a redirection names a slot below 16384 and an address
 * with a host. A broken property ends in abort(), which libFuzzer
 * reports with the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cluster_map.h"
#include "fuzz_check.h"

static struct cluster_node nodes[16];
static struct cluster_map map = {.nodes = nodes, .max = 16};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    unsigned owned[16] = {0};
    struct redis_addr addr;
    unsigned slot;

    cluster_map_parse(&map, text, size, "127.0.0.1");
    CHECK(map.count <= map.max);
    for (size_t s = 0; s < KEYSLOT_COUNT; s++) {
        CHECK(map.owner[s] == CLUSTER_NO_NODE || map.owner[s] < map.count);
        if (map.owner[s] != CLUSTER_NO_NODE)
            owned[map.owner[s]]++;
    }
    for (size_t n = 0; n < map.count; n++) {
        CHECK(nodes[n].slots == owned[n]);
        CHECK(owned[n] == 0 || nodes[n].master);
        CHECK(nodes[n].addr.port >= 1 && nodes[n].addr.port <= 65535);
        CHECK(nodes[n].addr.host[0] != '\0');
    }
    if (cluster_redirect_parse(text, size, &slot, &addr)) {
        CHECK(slot < KEYSLOT_COUNT);
        CHECK(addr.port >= 1 && addr.port <= 65535);
        CHECK(addr.host[0] != '\0');
    }
    return 0;
}
