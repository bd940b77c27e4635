/*
 * hashmap.c - separate chaining, doubling when the load passes 1; the
 * value maps are intrusive maps of entries of their own.
 */
#include "base/hashmap.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "base/list.h"

/* A map's own entry, in the maps that are not intrusive. */
struct hashmap_entry {
    struct hashmap_node node;
    const void *key;
    size_t key_len;
    void *value;
};

#define entry_of(n) list_entry(n, struct hashmap_entry, node)

static uint64_t sip_k0 = 0x736f6d6570736575ULL, sip_k1 = 0x646f72616e646f6dULL;

void hashmap_seed(const uint8_t key[16])
{
    memcpy(&sip_k0, key, 8);
    memcpy(&sip_k1, key + 8, 8);
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                               \
    do {                                                                       \
        v0 += v1;                                                              \
        v1 = ROTL(v1, 13);                                                     \
        v1 ^= v0;                                                              \
        v0 = ROTL(v0, 32);                                                     \
        v2 += v3;                                                              \
        v3 = ROTL(v3, 16);                                                     \
        v3 ^= v2;                                                              \
        v0 += v3;                                                              \
        v3 = ROTL(v3, 21);                                                     \
        v3 ^= v0;                                                              \
        v2 += v1;                                                              \
        v1 = ROTL(v1, 17);                                                     \
        v1 ^= v2;                                                              \
        v2 = ROTL(v2, 32);                                                     \
    } while (0)

/* SipHash-1-3: one compression round, three finalisation rounds. */
uint64_t hashmap_hash(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t v0 = sip_k0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = sip_k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = sip_k0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = sip_k1 ^ 0x7465646279746573ULL;
    uint64_t m, last = (uint64_t)len << 56;
    size_t i, tail = len & 7;

    for (i = 0; i + 8 <= len; i += 8) {
        memcpy(&m, p + i, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t j = 0; j < tail; j++)
        last |= (uint64_t)p[i + j] << (8 * j);
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static const void *entry_key(const struct hashmap_node *node, size_t *len)
{
    const struct hashmap_entry *e = entry_of(node);

    *len = e->key_len;
    return e->key;
}

void hashmap_init(struct hashmap *map)
{
    hashmap_init_intrusive(map, entry_key);
}

void hashmap_init_intrusive(struct hashmap *map, hashmap_key_fn *key_of)
{
    memset(map, 0, sizeof(*map));
    map->key_of = key_of;
}

void hashmap_free(struct hashmap *map)
{
    for (size_t i = 0; map->key_of == entry_key && i < map->bucket_count; i++) {
        struct hashmap_node *n = map->buckets[i], *next;
        for (; n != NULL; n = next) {
            next = n->next;
            free(entry_of(n));
        }
    }
    free(map->buckets);
    hashmap_init_intrusive(map, map->key_of);
}

/* The bucket of a key, by its hash. */
static struct hashmap_node **bucket_of(const struct hashmap *map,
                                       const void *key, size_t len)
{
    return &map->buckets[hashmap_hash(key, len) & (map->bucket_count - 1)];
}

/* The bucket of a linked node, by its key's hash. */
static struct hashmap_node **node_bucket(const struct hashmap *map,
                                         const struct hashmap_node *node)
{
    size_t len;
    const void *key = map->key_of(node, &len);

    return bucket_of(map, key, len);
}

static struct hashmap_node **find_slot(const struct hashmap *map,
                                       const void *key, size_t len)
{
    struct hashmap_node **slot = bucket_of(map, key, len);

    for (; *slot != NULL; slot = &(*slot)->next) {
        size_t klen;
        const void *k = map->key_of(*slot, &klen);

        if (klen == len && memcmp(k, key, len) == 0)
            break;
    }
    return slot;
}

struct hashmap_node *hashmap_find(const struct hashmap *map, const void *key,
                                  size_t len)
{
    if (map->size == 0)
        return NULL;
    return *find_slot(map, key, len);
}

void *hashmap_get(const struct hashmap *map, const void *key, size_t len)
{
    struct hashmap_node *n = hashmap_find(map, key, len);

    return n ? entry_of(n)->value : NULL;
}

/* Doubles the buckets, hashing every key again (node_bucket). */
static int grow(struct hashmap *map)
{
    struct hashmap old = *map;
    struct hashmap_node *n, *next;

    map->bucket_count = old.bucket_count ? old.bucket_count * 2 : 16;
    map->buckets = calloc(map->bucket_count, sizeof(*map->buckets));
    if (map->buckets == NULL) {
        *map = old;
        return -ENOMEM;
    }
    for (size_t i = 0; i < old.bucket_count; i++) {
        for (n = old.buckets[i]; n != NULL; n = next) {
            struct hashmap_node **slot = node_bucket(map, n);

            next = n->next;
            n->next = *slot;
            *slot = n;
        }
    }
    map->bytes += malloc_usable_size(map->buckets);
    map->bytes -= malloc_usable_size(old.buckets);
    free(old.buckets);
    return 0;
}

int hashmap_link(struct hashmap *map, struct hashmap_node *node,
                 const void *key, size_t len)
{
    struct hashmap_node **slot;

    if (map->size >= map->bucket_count && grow(map) != 0)
        return -ENOMEM;
    slot = bucket_of(map, key, len);
    node->next = *slot;
    *slot = node;
    map->size++;
    return 0;
}

void hashmap_unlink(struct hashmap *map, struct hashmap_node *node)
{
    struct hashmap_node **slot = node_bucket(map, node);

    while (*slot != node)
        slot = &(*slot)->next;
    *slot = node->next;
    map->size--;
}

int hashmap_put(struct hashmap *map, const void *key, size_t len, void *value)
{
    struct hashmap_entry *e = malloc(sizeof(*e));

    if (e == NULL)
        return -ENOMEM;
    *e = (struct hashmap_entry){.key = key, .key_len = len, .value = value};
    if (hashmap_link(map, &e->node, key, len) != 0) {
        free(e);
        return -ENOMEM;
    }
    map->bytes += malloc_usable_size(e);
    return 0;
}

void *hashmap_remove(struct hashmap *map, const void *key, size_t len)
{
    struct hashmap_node *n = hashmap_find(map, key, len);
    void *value;

    if (n == NULL)
        return NULL;
    hashmap_unlink(map, n);
    value = entry_of(n)->value;
    map->bytes -= malloc_usable_size(entry_of(n));
    free(entry_of(n));
    return value;
}

void hashmap_visit(const struct hashmap *map,
                   void (*fn)(struct hashmap_node *node, void *arg), void *arg)
{
    for (size_t i = 0; i < map->bucket_count; i++)
        for (struct hashmap_node *n = map->buckets[i]; n != NULL; n = n->next)
            fn(n, arg);
}

struct foreach_ctx {
    void (*fn)(void *value, void *arg);
    void *arg;
};

static void foreach_value(struct hashmap_node *node, void *arg)
{
    struct foreach_ctx *ctx = arg;

    ctx->fn(entry_of(node)->value, ctx->arg);
}

void hashmap_foreach(const struct hashmap *map,
                     void (*fn)(void *value, void *arg), void *arg)
{
    hashmap_visit(map, foreach_value, &(struct foreach_ctx){fn, arg});
}
