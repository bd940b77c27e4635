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

/* A map's link in what it maps. An intrusive map's values embed one
 * (the lock table: a million locks need no entry of their own beside
 * them); the others' are the map's own entries. It keeps no hash: the
 * map hashes a node's key again when it moves or unlinks it (key_of),
 * which costs a SipHash of a short name and saves 8 B on each of a
 * million locks. */
struct hashmap_node {
    struct hashmap_node *next;
};

/* Where an intrusive map finds the key of one of its nodes. */
typedef const void *hashmap_key_fn(const struct hashmap_node *node,
                                   size_t *len);

struct hashmap {
    struct hashmap_node **buckets;
    size_t bucket_count; /* a power of two, or 0 before the first put */
    size_t size;
    size_t bytes; /* its slots and own entries, as malloc_usable_size counts */
    hashmap_key_fn *key_of;
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

/* An intrusive map: the caller links nodes of its own, whose keys key_of
 * finds (they must stay valid while linked); hashmap_free then frees only
 * the slots. The calls above are for the other maps. */
void hashmap_init_intrusive(struct hashmap *map, hashmap_key_fn *key_of);
struct hashmap_node *hashmap_find(const struct hashmap *map, const void *key,
                                  size_t len);
/* Links a node whose key (key, len) is not present; 0 or -ENOMEM. */
int hashmap_link(struct hashmap *map, struct hashmap_node *node,
                 const void *key, size_t len);
void hashmap_unlink(struct hashmap *map, struct hashmap_node *node);
/* Visits every node; fn must not change the map. */
void hashmap_visit(const struct hashmap *map,
                   void (*fn)(struct hashmap_node *node, void *arg), void *arg);

#endif
