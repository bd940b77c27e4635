/*
 * sim_redis_keys.h - what the model Redis's files share (sim_redis.c, the
 * keyspace; sim_redis_locks.c and sim_redis_counts.c, the scripts): the
 * keys' primitives, as Redis's commands do them, and the replies. Only
 * those files include it.
 */
#ifndef RLOCKD_SIM_REDIS_KEYS_H
#define RLOCKD_SIM_REDIS_KEYS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_redis.h"

static inline struct sim_key *find(const struct sim_redis *r, const char *key)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->keys[i].key, key) == 0)
            return (struct sim_key *)&r->keys[i];
    return NULL;
}

/* The key if it has that type. */
static inline struct sim_key *find_typed(const struct sim_redis *r,
                                         const char *key, enum sim_type type)
{
    struct sim_key *h = find(r, key);

    return h != NULL && h->type == type ? h : NULL;
}

static inline void del(struct sim_redis *r, struct sim_key *h)
{
    *h = r->keys[--r->count];
}

static inline void drop(struct sim_redis *r, const char *key)
{
    struct sim_key *h = find(r, key);

    if (h != NULL)
        del(r, h);
}

static inline struct sim_key *create(struct sim_redis *r, const char *key,
                                     enum sim_type type)
{
    struct sim_key *h;

    if (r->count == SIM_MAX_KEYS) {
        fprintf(stderr, "sim_redis: out of keys\n");
        abort();
    }
    h = &r->keys[r->count++];
    memset(h, 0, sizeof(*h));
    snprintf(h->key, sizeof(h->key), "%s", key);
    h->type = type;
    return h;
}

/* The key of that type, made empty if there is none. */
static inline struct sim_key *make(struct sim_redis *r, const char *key,
                                   enum sim_type type)
{
    struct sim_key *h = find(r, key);

    return h != NULL ? h : create(r, key, type);
}

static inline int field_index(const struct sim_key *h, const char *field)
{
    for (size_t i = 0; i < h->fields; i++)
        if (strcmp(h->field[i], field) == 0)
            return (int)i;
    return -1;
}

static inline void hset(struct sim_key *h, const char *field, const char *value)
{
    int i = field_index(h, field);

    if (i < 0) {
        if (h->fields == SIM_MAX_FIELDS)
            abort();
        i = (int)h->fields++;
        snprintf(h->field[i], SIM_STR, "%s", field);
    }
    snprintf(h->value[i], SIM_STR, "%s", value);
}

/* Removes element i, keeping the order (a list's). */
static inline void remove_at(struct sim_key *h, size_t i)
{
    h->fields--;
    memmove(h->field[i], h->field[i + 1], (h->fields - i) * SIM_STR);
    memmove(h->value[i], h->value[i + 1], (h->fields - i) * SIM_STR);
}

/* Redis deletes an emptied hash, set or list. */
static inline void remove_field(struct sim_redis *r, const char *key,
                                const char *field)
{
    struct sim_key *h = find(r, key);
    int i = h != NULL ? field_index(h, field) : -1;

    if (i < 0)
        return;
    remove_at(h, (size_t)i);
    if (h->fields == 0)
        del(r, h);
}

static inline long long pttl(const struct sim_key *h, uint64_t now)
{
    if (h == NULL)
        return -2;
    return h->expire_at ? (long long)(h->expire_at - now) : -1;
}

static inline void pexpire(struct sim_key *h, uint64_t now, long long ms)
{
    h->expire_at = now + (uint64_t)(ms > 0 ? ms : 1);
}

static inline void set_number(struct sim_key *h, const char *field, long long n)
{
    char text[32];

    snprintf(text, sizeof(text), "%lld", n);
    hset(h, field, text);
}

/* INCRBY: the TTL stays. */
static inline long long incrby(struct sim_redis *r, const char *key,
                               long long n)
{
    struct sim_key *h = make(r, key, SIM_STRING);
    long long v = (h->fields ? atoll(h->value[0]) : 0) + n;

    set_number(h, "", v);
    return v;
}

/* A hash's count, or a sorted set's score: 0 / false when absent. */
static inline bool lookup(const struct sim_redis *r, const char *key,
                          enum sim_type type, const char *field,
                          long long *value)
{
    const struct sim_key *h = find_typed(r, key, type);
    int i = h != NULL ? field_index(h, field) : -1;

    if (i < 0)
        return false;
    *value = atoll(h->value[i]);
    return true;
}

static inline long long hget_number(const struct sim_redis *r, const char *key,
                                    const char *field)
{
    long long v = 0;

    lookup(r, key, SIM_HASH, field, &v);
    return v;
}

static inline void put_number(struct sim_redis *r, const char *key,
                              enum sim_type type, const char *field,
                              long long v)
{
    set_number(make(r, key, type), field, v);
}

/* The member of the lowest score, and that score. */
static inline bool zfirst(const struct sim_redis *r, const char *key,
                          const char **member, long long *score)
{
    const struct sim_key *h = find_typed(r, key, SIM_ZSET);
    bool found = false;

    for (size_t i = 0; h != NULL && i < h->fields; i++)
        if (!found || atoll(h->value[i]) < *score) {
            *member = h->field[i];
            *score = atoll(h->value[i]);
            found = true;
        }
    return found;
}

/* The list's element at its head (0) or tail (-1). */
static inline const char *lindex(const struct sim_redis *r, const char *key,
                                 int at)
{
    const struct sim_key *h = find_typed(r, key, SIM_LIST);

    if (h == NULL || h->fields == 0)
        return NULL;
    return at == 0 ? h->field[0] : h->field[h->fields - 1];
}

/* "<anything>:<anything>", as the scripts' '^.+:.+$': a colon with a
 * byte on each side. */
static inline bool owner_like(const char *s)
{
    size_t n = strlen(s);

    for (size_t k = 1; k + 1 < n; k++)
        if (s[k] == ':')
            return true;
    return false;
}

/* An RLock: one owner field, a count of at least 1, a TTL. */
static inline bool is_lock(const struct sim_key *h)
{
    /* a count of at least 1: digits, the first not 0 */
    return h != NULL && h->type == SIM_HASH && h->fields == 1 &&
           h->expire_at != 0 && h->value[0][0] >= '1' &&
           h->value[0][0] <= '9' && owner_like(h->field[0]);
}

/* ---- replies ---------------------------------------------------------- */

static inline void reply_nil(struct sim_reply *out)
{
    out->value = (struct backend_value){.type = VALUE_NIL};
}

static inline void reply_int(struct sim_reply *out, long long v)
{
    out->value = (struct backend_value){.type = VALUE_INTEGER, .integer = v};
}

static inline void reply_error(struct sim_reply *out, const char *text)
{
    snprintf(out->text[0], SIM_STR, "%s", text);
    out->value = (struct backend_value){
        .type = VALUE_ERROR, .str = out->text[0], .len = strlen(text)};
}

static inline void element_int(struct sim_reply *out, size_t i, long long v)
{
    out->element[i] =
        (struct backend_value){.type = VALUE_INTEGER, .integer = v};
}

static inline void element_str(struct sim_reply *out, size_t i, const char *s)
{
    snprintf(out->text[i], SIM_STR, "%s", s);
    out->element[i] = (struct backend_value){
        .type = VALUE_STRING, .str = out->text[i], .len = strlen(s)};
}

static inline void reply_array(struct sim_reply *out, size_t n)
{
    out->value = (struct backend_value){
        .type = VALUE_ARRAY, .elements = n, .element = out->element};
}

static inline void reply_ints(struct sim_reply *out, long long a, long long b,
                              long long c, size_t n)
{
    element_int(out, 0, a);
    element_int(out, 1, b);
    element_int(out, 2, c);
    reply_array(out, n);
}

static inline void publish_number(struct sim_redis *r, const char *channel,
                                  long long v)
{
    char text[32];

    snprintf(text, sizeof(text), "%lld", v);
    r->publish(channel, text, r->ctx);
}

#define ARG(i) (c->argv[c->nkeys + (i)])
#define KEY(i) (c->argv[(i)])

/* A read hold's key: "{name}:<field>:rwlock_timeout:<n>". */
static inline void rw_timeout_key(char *out, const char *name,
                                  const char *field, long long n)
{
    bool braced = strchr(name, '{') != NULL;

    if (snprintf(out, SIM_STR, "%s%s%s:%s:rwlock_timeout:%lld",
                 braced ? "" : "{", name, braced ? "" : "}", field,
                 n) >= SIM_STR)
        abort(); /* a name longer than the simulation's */
}

/* The script families (sim_redis_locks.c, sim_redis_counts.c): each runs
 * a call of its scripts, false for one it does not know. */
bool sim_redis_run_rlock(struct sim_redis *r, uint64_t now,
                         const struct sim_call *c, struct sim_reply *out);
bool sim_redis_run_rw(struct sim_redis *r, uint64_t now,
                      const struct sim_call *c, struct sim_reply *out);
bool sim_redis_run_semaphore(struct sim_redis *r, uint64_t now,
                             const struct sim_call *c, struct sim_reply *out);
bool sim_redis_run_latch(struct sim_redis *r, const struct sim_call *c,
                         struct sim_reply *out);

#endif
