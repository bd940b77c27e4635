/*
 * session.c - sessions by client-id, and the proof that joins one.
 */
#include "engine/session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/stats.h"

static struct hashmap session_map;

void session_table_init(void)
{
    hashmap_init(&session_map);
}

void session_table_free(void)
{
    hashmap_free(&session_map);
}

static struct session *session_new(const char *id, size_t len)
{
    struct session *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    memcpy(s->id, id, len);
    s->id_len = len;
    list_init(&s->holds);
    list_init(&s->waiting);
    if (hashmap_put(&session_map, s->id, len, s) != 0) {
        free(s);
        return NULL;
    }
    stats.client_sessions++;
    return s;
}

/* The digest is taken even when the session has no secret, so that the
 * time a refusal takes tells nothing about the session. */
static bool secret_matches(const struct session *s, const char *secret,
                           size_t secret_len)
{
    unsigned char digest[DIGEST_SIZE];

    digest_sha256(secret ? secret : "", secret_len, digest);
    return digest_equal(digest, s->secret) && s->has_secret && secret != NULL;
}

int session_join(const char *id, size_t len, const char *secret,
                 size_t secret_len, struct session **out)
{
    struct session *s = hashmap_get(&session_map, id, len);
    int created = s == NULL;

    if (s != NULL && !secret_matches(s, secret, secret_len))
        return -EPERM;
    if (s == NULL) {
        s = session_new(id, len);
        if (s == NULL)
            return -ENOMEM;
        if (secret != NULL) {
            digest_sha256(secret, secret_len, s->secret);
            s->has_secret = true;
        }
    }
    s->connections++;
    *out = s;
    return created;
}

void session_free(struct session *s)
{
    hashmap_remove(&session_map, s->id, s->id_len);
    stats.client_sessions--;
    free(s);
}

struct session_visit {
    void (*fn)(struct session *s, void *arg);
    void *arg;
};

static void visit(void *value, void *arg)
{
    struct session_visit *v = arg;

    v->fn(value, v->arg);
}

void session_table_foreach(void (*fn)(struct session *s, void *arg), void *arg)
{
    struct session_visit v = {fn, arg};

    hashmap_foreach(&session_map, visit, &v);
}
