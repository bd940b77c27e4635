/*
 * lock_list.c - rlockd's LOCKS, for `rlock list`: who holds what and who
 * waits for whom, its RESP2 reply (nested flat field/value arrays, as
 * Redis's XINFO) unpacked into structs.
 *
 * Sent on the calling thread's connection, as every call; touches no
 * record of holds (it asks about rlockd's, not the client's).
 */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of field key in a flat field/value array, or NULL. */
static const redisReply *field(const redisReply *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->elements; i += 2)
        if (map->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(map->element[i]->str, key) == 0)
            return map->element[i + 1];
    return NULL;
}

/* A string field, copied (NULL for a null or absent one); false when out
 * of memory. */
static bool copy_text(const redisReply *map, const char *key, char **out)
{
    const redisReply *v = field(map, key);

    *out = NULL;
    if (v == NULL || v->type != REDIS_REPLY_STRING)
        return true;
    return (*out = strdup(v->str)) != NULL;
}

static long long number(const redisReply *map, const char *key)
{
    const redisReply *v = field(map, key);

    return v != NULL && v->type == REDIS_REPLY_INTEGER ? v->integer : 0;
}

static void owners_free(struct rlock_lock_owner *o, size_t n)
{
    for (size_t i = 0; o != NULL && i < n; i++) {
        free(o[i].owner);
        free(o[i].client_id);
        free(o[i].peer);
        free(o[i].client_name);
        free(o[i].asked);
    }
    free(o);
}

/* The holders or waiters array under key; RLOCK_OK or an error. */
static int owners_of(const redisReply *map, const char *key, bool holders,
                     struct rlock_lock_owner **out, size_t *n)
{
    const redisReply *list = field(map, key);

    *out = NULL;
    *n = 0;
    if (list == NULL || list->type != REDIS_REPLY_ARRAY)
        return RLOCK_EPROTOCOL;
    if (list->elements == 0)
        return RLOCK_OK;
    if ((*out = calloc(list->elements, sizeof(**out))) == NULL)
        return RLOCK_ESYSTEM;
    for (size_t i = 0; i < list->elements; i++, (*n)++) {
        const redisReply *o = list->element[i];
        struct rlock_lock_owner *to = &(*out)[i];

        if (o->type != REDIS_REPLY_ARRAY)
            return RLOCK_EPROTOCOL;
        if (!copy_text(o, "owner", &to->owner) ||
            !copy_text(o, "client-id", &to->client_id) ||
            !copy_text(o, "peer", &to->peer) ||
            !copy_text(o, "client-name", &to->client_name) ||
            !copy_text(o, "asked", &to->asked))
            return RLOCK_ESYSTEM;
        to->count = holders ? number(o, "count") : 0;
        to->ms = number(o, holders ? "held-ms" : "waiting-ms");
    }
    return RLOCK_OK;
}

static int lock_of(const redisReply *map, struct rlock_lock_info *l)
{
    int err;

    if (map->type != REDIS_REPLY_ARRAY)
        return RLOCK_EPROTOCOL;
    if (!copy_text(map, "name", &l->name) || !copy_text(map, "kind", &l->kind))
        return RLOCK_ESYSTEM;
    if (l->name == NULL)
        return RLOCK_EPROTOCOL;
    l->ttl_ms = number(map, "ttl");
    err = owners_of(map, "holders", true, &l->holders, &l->holder_count);
    if (err == RLOCK_OK)
        err = owners_of(map, "waiters", false, &l->waiters, &l->waiter_count);
    return err;
}

int rlock_locks(rlock_client *c, const char *match, size_t count, size_t offset,
                struct rlock_lock_info **locks, size_t *n)
{
    char count_text[24], offset_text[24];
    const char *argv[7] = {"LOCKS"};
    size_t lens[7];
    int argc = 1, err;
    struct thread_state *t;
    redisReply *r;

    if (c == NULL || locks == NULL || n == NULL)
        return RLOCK_EINVAL;
    *locks = NULL;
    *n = 0;
    if (match != NULL) {
        argv[argc++] = "MATCH";
        argv[argc++] = match;
    }
    if (count > 0) {
        snprintf(count_text, sizeof(count_text), "%zu", count);
        argv[argc++] = "COUNT";
        argv[argc++] = count_text;
    }
    snprintf(offset_text, sizeof(offset_text), "%zu", offset);
    argv[argc++] = "OFFSET";
    argv[argc++] = offset_text;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if ((err = threads_get(c, &t)) != RLOCK_OK)
        return err;
    err = rlock_conn_command(&t->conn, argc, argv, lens,
                             c->target.command_timeout_ms, &r);
    if (err != RLOCK_OK) {
        if (rlock_conn_broken(&t->conn))
            threads_lost(c, t);
        return err;
    }
    if (r->type != REDIS_REPLY_ARRAY)
        err = RLOCK_EPROTOCOL;
    else if (r->elements > 0 &&
             (*locks = calloc(r->elements, sizeof(**locks))) == NULL)
        err = RLOCK_ESYSTEM;
    for (size_t i = 0; err == RLOCK_OK && i < r->elements; i++) {
        *n = i + 1;
        err = lock_of(r->element[i], &(*locks)[i]);
    }
    freeReplyObject(r);
    if (err != RLOCK_OK) {
        rlock_locks_free(*locks, *n);
        *locks = NULL;
        *n = 0;
    }
    return err;
}

void rlock_locks_free(struct rlock_lock_info *locks, size_t n)
{
    for (size_t i = 0; locks != NULL && i < n; i++) {
        free(locks[i].name);
        free(locks[i].kind);
        owners_free(locks[i].holders, locks[i].holder_count);
        owners_free(locks[i].waiters, locks[i].waiter_count);
    }
    free(locks);
}
