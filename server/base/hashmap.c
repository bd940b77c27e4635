/*
 * hashmap.c - separate chaining, doubling when the load passes 1.
 */
#include "base/hashmap.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

struct hashmap_entry {
    struct hashmap_entry *next;
    const void *key;
    size_t key_len;
    uint64_t hash;
    void *value;
};

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

void hashmap_init(struct hashmap *map)
{
    memset(map, 0, sizeof(*map));
}

void hashmap_free(struct hashmap *map)
{
    for (size_t i = 0; i < map->bucket_count; i++) {
        struct hashmap_entry *e = map->buckets[i], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            free(e);
        }
    }
    free(map->buckets);
    hashmap_init(map);
}

static struct hashmap_entry **
find_slot(const struct hashmap *map, const void *key, size_t len, uint64_t hash)
{
    struct hashmap_entry **slot = &map->buckets[hash & (map->bucket_count - 1)];

    for (; *slot != NULL; slot = &(*slot)->next) {
        struct hashmap_entry *e = *slot;
        if (e->hash == hash && e->key_len == len &&
            memcmp(e->key, key, len) == 0)
            break;
    }
    return slot;
}

void *hashmap_get(const struct hashmap *map, const void *key, size_t len)
{
    if (map->size == 0)
        return NULL;
    struct hashmap_entry *e = *find_slot(map, key, len, hashmap_hash(key, len));
    return e ? e->value : NULL;
}

static int grow(struct hashmap *map)
{
    size_t count = map->bucket_count ? map->bucket_count * 2 : 16;
    struct hashmap_entry **buckets = calloc(count, sizeof(*buckets));

    if (buckets == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < map->bucket_count; i++) {
        struct hashmap_entry *e = map->buckets[i], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            e->next = buckets[e->hash & (count - 1)];
            buckets[e->hash & (count - 1)] = e;
        }
    }
    map->bytes += malloc_usable_size(buckets);
    map->bytes -= malloc_usable_size(map->buckets);
    free(map->buckets);
    map->buckets = buckets;
    map->bucket_count = count;
    return 0;
}

int hashmap_put(struct hashmap *map, const void *key, size_t len, void *value)
{
    struct hashmap_entry *e;
    uint64_t hash = hashmap_hash(key, len);

    if (map->size >= map->bucket_count && grow(map) != 0)
        return -ENOMEM;
    e = malloc(sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    *e = (struct hashmap_entry){
        .key = key, .key_len = len, .hash = hash, .value = value};
    map->bytes += malloc_usable_size(e);
    e->next = map->buckets[hash & (map->bucket_count - 1)];
    map->buckets[hash & (map->bucket_count - 1)] = e;
    map->size++;
    return 0;
}

void *hashmap_remove(struct hashmap *map, const void *key, size_t len)
{
    struct hashmap_entry **slot, *e;
    void *value;

    if (map->size == 0)
        return NULL;
    slot = find_slot(map, key, len, hashmap_hash(key, len));
    e = *slot;
    if (e == NULL)
        return NULL;
    *slot = e->next;
    value = e->value;
    map->bytes -= malloc_usable_size(e);
    free(e);
    map->size--;
    return value;
}

void hashmap_foreach(const struct hashmap *map,
                     void (*fn)(void *value, void *arg), void *arg)
{
    for (size_t i = 0; i < map->bucket_count; i++)
        for (struct hashmap_entry *e = map->buckets[i]; e != NULL; e = e->next)
            fn(e->value, arg);
}
