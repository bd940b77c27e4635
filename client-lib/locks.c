/*
 * locks.c - the lock API, for each kind of lock: take, try, release, the
 * questions about a lock, and OWNERS with its reply unpacked. The rlock_*
 * functions without _kind are the plain lock's case.
 *
 * Never sends a command or touches the record of holds itself:
 * request_execute() does both.
 */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rlock_lock_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                    long long lease_ms, long long *token)
{
    struct request rq = request_new(CLIENT_CMD_LOCK, kind, name);
    long long reply;
    int err;

    if (token != NULL)
        *token = 0;
    if (!request_valid_lease(lease_ms))
        return RLOCK_EINVAL;
    rq.lease_ms = lease_ms;
    err = request_execute(c, &rq, &reply, NULL);
    if (err == RLOCK_OK)
        request_store_token(kind, reply, token);
    return err;
}

int rlock_trylock_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                       long long wait_ms, long long lease_ms, long long *token)
{
    struct request rq = request_new(CLIENT_CMD_TRYLOCK, kind, name);
    long long reply;
    int err;

    if (token != NULL)
        *token = 0;
    if (!request_valid_wait(wait_ms) || !request_valid_lease(lease_ms))
        return RLOCK_EINVAL;
    rq.wait_ms = wait_ms;
    rq.lease_ms = lease_ms;
    err = request_execute(c, &rq, &reply, NULL);
    if (err != RLOCK_OK)
        return err;
    request_store_token(kind, reply, token);
    return reply != 0; /* :1, or a token */
}

int rlock_unlock_kind(rlock_client *c, const char *name, enum rlock_kind kind)
{
    return (int)request_query(c, CLIENT_CMD_UNLOCK, kind, name);
}

int rlock_force_unlock_kind(rlock_client *c, const char *name,
                            enum rlock_kind kind)
{
    return (int)request_query(c, CLIENT_CMD_FORCEUNLOCK, kind, name);
}

int rlock_is_locked_kind(rlock_client *c, const char *name,
                         enum rlock_kind kind)
{
    return (int)request_query(c, CLIENT_CMD_ISLOCKED, kind, name);
}

int rlock_is_held_kind(rlock_client *c, const char *name, enum rlock_kind kind)
{
    return (int)request_query(c, CLIENT_CMD_ISHELD, kind, name);
}

long long rlock_hold_count_kind(rlock_client *c, const char *name,
                                enum rlock_kind kind)
{
    return request_query(c, CLIENT_CMD_HOLDCOUNT, kind, name);
}

int rlock_pttl_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                    long long *ttl_ms)
{
    struct request rq = request_new(CLIENT_CMD_PTTL, kind, name);

    if (ttl_ms == NULL)
        return RLOCK_EINVAL;
    /* -1 and -2 are answers here, not errors */
    return request_execute(c, &rq, ttl_ms, NULL);
}

int rlock_token(rlock_client *c, const char *name, long long *token)
{
    /* TOKEN names no kind: only the fenced lock has tokens */
    struct request rq = request_new(CLIENT_CMD_TOKEN, RLOCK_LOCK, name);

    if (token == NULL)
        return RLOCK_EINVAL;
    return request_execute(c, &rq, token, NULL);
}

/* OWNERS' reply, {pttl, {field, count, field, count...}[, kind]}, as
 * owners: one block, the strings after the array. RLOCK_OK,
 * RLOCK_EPROTOCOL for a reply of another shape, RLOCK_ESYSTEM. */
static int owners_of_reply(const redisReply *r, long long *pttl_ms,
                           struct rlock_owner **owners, size_t *count)
{
    const redisReply *pairs;
    struct rlock_owner *out;
    size_t n, bytes = 0;
    char *text;

    if (r->elements < 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_ARRAY ||
        r->element[1]->elements % 2 != 0)
        return RLOCK_EPROTOCOL;
    pairs = r->element[1];
    n = pairs->elements / 2;
    for (size_t i = 0; i < n; i++) {
        if (pairs->element[2 * i]->type != REDIS_REPLY_STRING ||
            pairs->element[2 * i + 1]->type != REDIS_REPLY_INTEGER)
            return RLOCK_EPROTOCOL;
        bytes += pairs->element[2 * i]->len + 1;
    }
    *pttl_ms = r->element[0]->integer;
    *count = n;
    *owners = NULL;
    if (n == 0)
        return RLOCK_OK;
    out = malloc(n * sizeof *out + bytes);
    if (out == NULL)
        return RLOCK_ESYSTEM;
    text = (char *)(out + n);
    for (size_t i = 0; i < n; i++) {
        const redisReply *field = pairs->element[2 * i];

        out[i].owner = memcpy(text, field->str, field->len);
        text[field->len] = '\0';
        text += field->len + 1;
        out[i].holds = pairs->element[2 * i + 1]->integer;
    }
    *owners = out;
    return RLOCK_OK;
}

/* OWNERS ... WITHNAMES' fourth element, {field, name or nil...} in the
 * owners' order, as names: one block, the strings after the pointers
 * (NULL for nil). RLOCK_OK, RLOCK_EPROTOCOL, RLOCK_ESYSTEM. */
static int names_of_reply(const redisReply *r, size_t count, char ***names)
{
    const redisReply *pairs;
    size_t bytes = 0;
    char **out, *text;

    *names = NULL;
    if (r->elements != 4 || r->element[3]->type != REDIS_REPLY_ARRAY ||
        r->element[3]->elements != 2 * count)
        return RLOCK_EPROTOCOL;
    pairs = r->element[3];
    for (size_t i = 0; i < count; i++) {
        const redisReply *value = pairs->element[2 * i + 1];

        if (value->type != REDIS_REPLY_STRING && value->type != REDIS_REPLY_NIL)
            return RLOCK_EPROTOCOL;
        bytes += value->type == REDIS_REPLY_STRING ? value->len + 1 : 0;
    }
    if (count == 0)
        return RLOCK_OK;
    if ((out = malloc(count * sizeof *out + bytes)) == NULL)
        return RLOCK_ESYSTEM;
    text = (char *)(out + count);
    for (size_t i = 0; i < count; i++) {
        const redisReply *value = pairs->element[2 * i + 1];

        out[i] = NULL;
        if (value->type != REDIS_REPLY_STRING)
            continue;
        out[i] = memcpy(text, value->str, value->len);
        text[value->len] = '\0';
        text += value->len + 1;
    }
    *names = out;
    return RLOCK_OK;
}

int rlock_owners_held_as(rlock_client *c, const char *name,
                         enum rlock_kind kind, long long *pttl_ms,
                         struct rlock_owner **owners, char ***names,
                         size_t *count, char *held_as, size_t size)
{
    struct request rq =
        request_new(names != NULL ? CLIENT_CMD_OWNERS_NAMED : CLIENT_CMD_OWNERS,
                    kind, name);
    redisReply *r;
    long long unused;
    int err;

    if (pttl_ms == NULL || owners == NULL || count == NULL ||
        (held_as == NULL && size > 0))
        return RLOCK_EINVAL;
    err = request_execute(c, &rq, &unused, &r);
    if (err != RLOCK_OK)
        return err;
    err = owners_of_reply(r, pttl_ms, owners, count);
    if (err == RLOCK_OK && size > 0) {
        const redisReply *k = r->elements > 2 ? r->element[2] : NULL;

        snprintf(held_as, size, "%.*s",
                 k && k->type == REDIS_REPLY_STRING ? (int)k->len : 0,
                 k && k->type == REDIS_REPLY_STRING ? k->str : "");
    }
    if (err == RLOCK_OK && names != NULL &&
        (err = names_of_reply(r, *count, names)) != RLOCK_OK) {
        rlock_owners_free(*owners);
        *owners = NULL;
    }
    freeReplyObject(r);
    return err;
}

int rlock_owners_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                      long long *pttl_ms, struct rlock_owner **owners,
                      size_t *count)
{
    return rlock_owners_held_as(c, name, kind, pttl_ms, owners, NULL, count,
                                NULL, 0);
}

int rlock_owners_named_kind(rlock_client *c, const char *name,
                            enum rlock_kind kind, long long *pttl_ms,
                            struct rlock_owner **owners, char ***names,
                            size_t *count)
{
    if (names == NULL)
        return RLOCK_EINVAL;
    return rlock_owners_held_as(c, name, kind, pttl_ms, owners, names, count,
                                NULL, 0);
}

void rlock_owners_free(struct rlock_owner *owners)
{
    free(owners);
}

/* The functions from before there were kinds: the plain lock's case. */

int rlock_lock(rlock_client *c, const char *name, long long lease_ms)
{
    return rlock_lock_kind(c, name, RLOCK_LOCK, lease_ms, NULL);
}

int rlock_trylock(rlock_client *c, const char *name, long long wait_ms,
                  long long lease_ms)
{
    return rlock_trylock_kind(c, name, RLOCK_LOCK, wait_ms, lease_ms, NULL);
}

int rlock_unlock(rlock_client *c, const char *name)
{
    return rlock_unlock_kind(c, name, RLOCK_LOCK);
}

int rlock_force_unlock(rlock_client *c, const char *name)
{
    return rlock_force_unlock_kind(c, name, RLOCK_LOCK);
}

int rlock_is_locked(rlock_client *c, const char *name)
{
    return rlock_is_locked_kind(c, name, RLOCK_LOCK);
}

int rlock_is_held(rlock_client *c, const char *name)
{
    return rlock_is_held_kind(c, name, RLOCK_LOCK);
}

long long rlock_hold_count(rlock_client *c, const char *name)
{
    return rlock_hold_count_kind(c, name, RLOCK_LOCK);
}

int rlock_pttl(rlock_client *c, const char *name, long long *ttl_ms)
{
    return rlock_pttl_kind(c, name, RLOCK_LOCK, ttl_ms);
}
