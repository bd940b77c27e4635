/*
 * hashmap.h - a map from byte-string keys to pointers, used for the lock
 * table (name -> lock), sessions (client-id -> session) and subscriptions
 * (channel -> subscription).
 *
 * Keys are not copied: each key must stay valid while its entry exists,
 * which is natural when the key lives inside the value. Hashing is
 * SipHash-1-3 with a per-process random key, because every key here is
 * chosen by clients and a predictable hash would let one client make
 * every lookup linear.
 */
#ifndef RLOCKD_HASHMAP_H
#define RLOCKD_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hashmap_entry;

struct hashmap {
    struct hashmap_entry **buckets;
    size_t bucket_count; /* a power of two, or 0 before the first put */
    size_t size;
    size_t bytes; /* its slots and entries, as malloc_usable_size counts */
};

/* Seeds the hash function; call once at start-up (tests may skip it). */
void hashmap_seed(const uint8_t key[16]);
uint64_t hashmap_hash(const void *data, size_t len);

void hashmap_init(struct hashmap *map);
/* Frees the map's own memory, not the keys or values. */
void hashmap_free(struct hashmap *map);
void *hashmap_get(const struct hashmap *map, const void *key, size_t len);
/* Adds a key that is not present; 0 or -ENOMEM. */
int hashmap_put(struct hashmap *map, const void *key, size_t len, void *value);
/* Removes and returns the value, or NULL if absent. */
void *hashmap_remove(struct hashmap *map, const void *key, size_t len);

/* Visits every value; fn must not change the map. */
void hashmap_foreach(const struct hashmap *map,
                     void (*fn)(void *value, void *arg), void *arg);

#endif
