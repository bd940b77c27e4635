/*
 * sim_redis.c - the model Redis: keys, TTLs, and each script's effect.
 */
#include "sim_redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_redis_init(struct sim_redis *r, void (*publish)(const char *, void *),
                    void *ctx)
{
    r->count = 0;
    r->snapshot_count = 0;
    r->publish = publish;
    r->ctx = ctx;
}

static struct sim_hash *find(struct sim_redis *r, const char *key)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->keys[i].key, key) == 0)
            return &r->keys[i];
    return NULL;
}

static void del(struct sim_redis *r, struct sim_hash *h)
{
    *h = r->keys[--r->count];
}

static struct sim_hash *create(struct sim_redis *r, const char *key)
{
    struct sim_hash *h;

    if (r->count == SIM_MAX_KEYS) {
        fprintf(stderr, "sim_redis: out of keys\n");
        abort();
    }
    h = &r->keys[r->count++];
    memset(h, 0, sizeof(*h));
    snprintf(h->key, sizeof(h->key), "%s", key);
    return h;
}

static int field_index(const struct sim_hash *h, const char *field)
{
    for (size_t i = 0; i < h->fields; i++)
        if (strcmp(h->field[i], field) == 0)
            return (int)i;
    return -1;
}

static void hset(struct sim_hash *h, const char *field, const char *value)
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

static void hdel(struct sim_hash *h, const char *field)
{
    int i = field_index(h, field);

    if (i < 0)
        return;
    h->fields--;
    memcpy(h->field[i], h->field[h->fields], SIM_STR);
    memcpy(h->value[i], h->value[h->fields], SIM_STR);
}

static long long pttl(const struct sim_hash *h, uint64_t now)
{
    if (h == NULL)
        return -2;
    return h->expire_at ? (long long)(h->expire_at - now) : -1;
}

void sim_redis_expire(struct sim_redis *r, uint64_t now)
{
    for (size_t i = 0; i < r->count;) {
        if (r->keys[i].expire_at != 0 && r->keys[i].expire_at <= now)
            del(r, &r->keys[i]);
        else
            i++;
    }
}

/* "<anything>:<anything>", as the scripts' '^.+:.+$': a colon with a
 * byte on each side. */
static bool owner_like(const char *s)
{
    size_t n = strlen(s);

    for (size_t k = 1; k + 1 < n; k++)
        if (s[k] == ':')
            return true;
    return false;
}

/* A lock: one owner field, a count of at least 1, a TTL. */
static bool is_lock(const struct sim_hash *h)
{
    /* a count of at least 1: digits, the first not 0 */
    return h != NULL && h->fields == 1 && h->expire_at != 0 &&
           h->value[0][0] >= '1' && h->value[0][0] <= '9' &&
           owner_like(h->field[0]);
}

bool sim_redis_lock(const struct sim_redis *r, const char *key,
                    const char **owner, long long *count)
{
    const struct sim_hash *h = find((struct sim_redis *)r, key);

    if (!is_lock(h))
        return false;
    *owner = h->field[0];
    *count = atoll(h->value[0]);
    return true;
}

/* ---- replies ---------------------------------------------------------- */

static void reply_nil(struct sim_reply *out)
{
    out->value = (struct backend_value){.type = VALUE_NIL};
}

static void reply_int(struct sim_reply *out, long long v)
{
    out->value = (struct backend_value){.type = VALUE_INTEGER, .integer = v};
}

static void reply_error(struct sim_reply *out, const char *text)
{
    snprintf(out->text[0], SIM_STR, "%s", text);
    out->value = (struct backend_value){
        .type = VALUE_ERROR, .str = out->text[0], .len = strlen(text)};
}

static void element_int(struct sim_reply *out, size_t i, long long v)
{
    out->element[i] =
        (struct backend_value){.type = VALUE_INTEGER, .integer = v};
}

static void element_str(struct sim_reply *out, size_t i, const char *s)
{
    snprintf(out->text[i], SIM_STR, "%s", s);
    out->element[i] = (struct backend_value){
        .type = VALUE_STRING, .str = out->text[i], .len = strlen(s)};
}

static void reply_array(struct sim_reply *out, size_t n)
{
    out->value = (struct backend_value){
        .type = VALUE_ARRAY, .elements = n, .element = out->element};
}

/* ---- the scripts -------------------------------------------------------- */

static void set_count(struct sim_hash *h, const char *field, long long count)
{
    char text[32];

    snprintf(text, sizeof(text), "%lld", count);
    hset(h, field, text);
}

/* Frees a lock and tells its channel. */
static void free_lock(struct sim_redis *r, struct sim_hash *h,
                      const char *channel)
{
    del(r, h);
    r->publish(channel, r->ctx);
}

#define ARG(i) (c->argv[c->nkeys + (i)])

bool sim_redis_run(struct sim_redis *r, uint64_t now, const struct sim_call *c,
                   struct sim_reply *out)
{
    const char *s = c->script ? c->script : c->argv[0];
    const char *key = c->script ? c->argv[0] : c->argv[1];
    struct sim_hash *h;

    sim_redis_expire(r, now);
    h = find(r, key);
    if (strcmp(s, "rlock_renew_many") == 0) {
        for (int i = 0; i < c->nkeys; i++) {
            struct sim_hash *k = find(r, c->argv[i]);
            bool mine = is_lock(k) && strcmp(k->field[0], ARG(2 * i)) == 0;

            if (mine)
                k->expire_at = now + (uint64_t)atoll(ARG(2 * i + 1));
            element_int(out, (size_t)i, mine);
        }
        reply_array(out, (size_t)c->nkeys);
        return true;
    }
    if (h != NULL && strncmp(s, "rlock_", 6) == 0 && !is_lock(h)) {
        /* another program's data: writes refused, queries see nothing */
        if (strcmp(s, "rlock_inspect") == 0) {
            element_int(out, 0, 0);
            element_int(out, 1, 0);
            element_int(out, 2, -2);
            reply_array(out, 3);
        } else {
            reply_error(out, "WRONGTYPE not a lock");
        }
        return true;
    }
    if (strcmp(s, "rlock_acquire") == 0) { /* lease, field, known count */
        bool mine = h != NULL && strcmp(h->field[0], ARG(1)) == 0;

        if (strcmp(ARG(2), "0") != 0 && !mine) {
            reply_error(out, "LOCKLOST the hold is gone");
        } else if (h == NULL || mine) {
            if (h == NULL)
                h = create(r, key);
            set_count(h, ARG(1), atoll(ARG(2)) + 1); /* known + 1 */
            h->expire_at = now + (uint64_t)atoll(ARG(0));
            reply_nil(out);
        } else {
            reply_int(out, pttl(h, now));
        }
    } else if (strcmp(s, "rlock_release") == 0) { /* msg, lease, field,
                                                     known count (0: none) */
        long long left = strcmp(ARG(3), "0") != 0 ? atoll(ARG(3)) - 1
                         : h != NULL                ? atoll(h->value[0]) - 1
                                                    : 0;

        if (h == NULL || strcmp(h->field[0], ARG(2)) != 0) {
            reply_nil(out);
        } else if (left > 0) {
            set_count(h, ARG(2), left);
            h->expire_at = now + (uint64_t)atoll(ARG(1));
            reply_int(out, 0);
        } else {
            free_lock(r, h, c->argv[1]);
            reply_int(out, 1);
        }
    } else if (strcmp(s, "rlock_force_release") == 0) { /* msg */
        reply_int(out, h != NULL);
        if (h != NULL)
            free_lock(r, h, c->argv[1]);
    } else if (strcmp(s, "rlock_release_owner") == 0 ||
               strcmp(s, "rlock_settle") == 0) { /* msg, field[, count] */
        bool mine = h != NULL && strcmp(h->field[0], ARG(1)) == 0;
        bool settle = strcmp(s, "rlock_settle") == 0;

        if (mine && settle && strcmp(ARG(2), "0") != 0) {
            set_count(h, ARG(1), atoll(ARG(2)));
            reply_int(out, 2);
        } else {
            reply_int(out, mine);
            if (mine)
                free_lock(r, h, c->argv[1]);
        }
    } else if (strcmp(s, "rlock_inspect") == 0) { /* field */
        bool mine = h != NULL && strcmp(h->field[0], ARG(0)) == 0;

        element_int(out, 0, h != NULL);
        element_int(out, 1, mine ? atoll(h->value[0]) : 0);
        element_int(out, 2, pttl(h, now));
        reply_array(out, 3);
    } else if (strcmp(s, "rlockd_session_put") == 0) {
        /* ttl [secret field value]: the TTL only grows */
        long long ttl = atoll(ARG(0)), left;

        if (c->argc - c->nkeys == 4) {
            if (h == NULL)
                h = create(r, key);
            hset(h, "secret", ARG(1));
            hset(h, ARG(2), ARG(3));
        }
        left = pttl(h, now);
        if (h != NULL && (left == -1 || left < ttl))
            h->expire_at = now + (uint64_t)ttl;
        reply_int(out, 1);
    } else if (strcmp(s, "rlockd_session_forget") == 0) { /* field */
        if (h != NULL) {
            hdel(h, ARG(0));
            if (h->fields <= 1)
                del(r, h);
        }
        reply_int(out, 1);
    } else if (strcmp(s, "rlockd_session_read") == 0) {
        /* {PTTL, {field, value...}}: the fields from element 2 on */
        size_t n = h != NULL ? h->fields : 0;

        for (size_t i = 0; i < n; i++) {
            element_str(out, 2 + 2 * i, h->field[i]);
            element_str(out, 3 + 2 * i, h->value[i]);
        }
        element_int(out, 0, h != NULL ? pttl(h, now) : -2);
        out->element[1] = (struct backend_value){.type = VALUE_ARRAY,
                                                 .elements = 2 * n,
                                                 .element = out->element + 2};
        reply_array(out, 2);
    } else if (strcmp(s, "DEL") == 0) {
        reply_int(out, h != NULL);
        if (h != NULL)
            del(r, h);
    } else {
        return false;
    }
    return true;
}

void sim_redis_snapshot(struct sim_redis *r)
{
    memcpy(r->snapshot, r->keys, r->count * sizeof(r->keys[0]));
    r->snapshot_count = r->count;
}

void sim_redis_restore(struct sim_redis *r)
{
    memcpy(r->keys, r->snapshot, r->snapshot_count * sizeof(r->keys[0]));
    r->count = r->snapshot_count;
}

void sim_redis_flush(struct sim_redis *r)
{
    r->count = 0;
}
