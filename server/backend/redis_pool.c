/*
 * redis_pool.c - which link serves a key, script loading, EVALSHA with
 * the NOSCRIPT fallback, and Redis replies as backend values.
 */
#include "backend/redis_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis_link.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/stats.h"

/* One call in flight: the caller's arguments are kept so that a NOSCRIPT
 * reply can be answered by resending them as EVAL. */
struct pool_call {
    struct redis_request req;
    struct backend_script *script;
    backend_reply_fn *fn;
    void *arg;
    int nkeys;
    int argc;
    size_t *argv_len;
    char **argv;
    /* argv pointers, lengths and bytes follow */
};

struct script_load {
    struct redis_request req;
    struct backend_script *script;
};

struct pool_link {
    struct redis_link link;
    struct script_load *loads; /* one per script */
    size_t loads_pending;
};

static struct {
    struct pool_link *links;
    unsigned size;
    struct backend_script **scripts;
    size_t script_count;
    void (*on_change)(void);
    void (*on_readonly)(void);
} pool;

/* ---- Redis replies as backend values ----------------------------------- */

static const enum backend_value_type value_types[] = {
    [REDIS_REPLY_STRING] = VALUE_STRING,   [REDIS_REPLY_ARRAY] = VALUE_ARRAY,
    [REDIS_REPLY_INTEGER] = VALUE_INTEGER, [REDIS_REPLY_NIL] = VALUE_NIL,
    [REDIS_REPLY_STATUS] = VALUE_STATUS,   [REDIS_REPLY_ERROR] = VALUE_ERROR,
};

static void value_free(struct backend_value *v)
{
    struct backend_value *element = (struct backend_value *)v->element;

    for (size_t i = 0; i < v->elements; i++)
        value_free(&element[i]);
    free(element);
}

/* 0 or -ENOMEM; an array's elements are allocated (value_free). */
static int value_from_reply(const redisReply *r, struct backend_value *v)
{
    struct backend_value *element;

    *v = (struct backend_value){.type = value_types[r->type],
                                .integer = r->integer,
                                .str = r->str,
                                .len = r->len};
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return 0;
    element = calloc(r->elements, sizeof(*element));
    if (element == NULL)
        return -ENOMEM;
    v->element = element;
    v->elements = r->elements;
    for (size_t i = 0; i < r->elements; i++)
        if (value_from_reply(r->element[i], &element[i]) != 0)
            return -ENOMEM;
    return 0;
}

static void answer(struct pool_call *call, const redisReply *reply)
{
    struct backend_value value;

    if (reply == NULL) {
        call->fn(call->arg, NULL);
    } else if (value_from_reply(reply, &value) != 0) {
        log_error("out of memory reading a Redis reply");
        call->fn(call->arg, NULL);
        value_free(&value);
    } else {
        call->fn(call->arg, &value);
        value_free(&value);
    }
}

/* ---- connections ------------------------------------------------------ */

static void on_script_loaded(struct redis_request *req, redisReply *reply)
{
    struct script_load *load = (struct script_load *)req;
    struct pool_link *pl = (struct pool_link *)req->link;

    if (reply == NULL)
        return; /* the link is gone; it reloads on reconnect */
    if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
        log_error("redis %s: SCRIPT LOAD %s: %s", pl->link.label,
                  load->script->name,
                  reply->type == REDIS_REPLY_ERROR ? reply->str : "bad reply");
        redis_link_reset(&pl->link, "cannot load scripts");
        return;
    }
    memcpy(load->script->sha, reply->str, 40);
    load->script->sha[40] = '\0';
    if (--pl->loads_pending == 0)
        redis_link_set_ready(&pl->link);
}

static void on_link_connected(struct redis_link *link)
{
    struct pool_link *pl = (struct pool_link *)link;

    pl->loads_pending = pool.script_count;
    for (size_t i = 0; i < pool.script_count; i++) {
        const char *argv[] = {"SCRIPT", "LOAD", pool.scripts[i]->source};
        size_t len[] = {6, 4, strlen(pool.scripts[i]->source)};

        pl->loads[i].script = pool.scripts[i];
        pl->loads[i].req.on_reply = on_script_loaded;
        if (redis_link_send(link, &pl->loads[i].req, 3, argv, len) != 0) {
            redis_link_reset(link, "cannot send SCRIPT LOAD");
            return;
        }
    }
}

/* Counted afresh: a link can stall and come back, be lost while stalled,
 * or become ready, and only the links themselves know which. */
static void on_link_readiness(struct redis_link *link)
{
    unsigned ready = 0;

    (void)link;
    for (unsigned i = 0; i < pool.size; i++)
        ready += redis_link_ready(&pool.links[i].link);
    stats.redis_pool_ready = ready;
    pool.on_change();
}

int redis_pool_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_change)(void), void (*on_readonly)(void))
{
    pool.size = (unsigned)cfg->pool_size;
    pool.on_change = on_change;
    pool.on_readonly = on_readonly;
    pool.links = calloc(pool.size, sizeof(*pool.links));
    if (pool.links == NULL)
        return -ENOMEM;
    stats.redis_pool_size = pool.size;
    for (unsigned i = 0; i < pool.size; i++) {
        char label[32];
        int err;

        snprintf(label, sizeof(label), "pool[%u]", i);
        err = redis_link_init(&pool.links[i].link, loop, cfg, label);
        if (err != 0)
            return err;
        pool.links[i].link.on_connected = on_link_connected;
        pool.links[i].link.on_readiness = on_link_readiness;
    }
    return 0;
}

int redis_pool_add_script(struct backend_script *script)
{
    size_t n = pool.script_count + 1;
    struct backend_script **scripts =
        realloc(pool.scripts, n * sizeof(*scripts));

    if (scripts == NULL)
        return -ENOMEM;
    pool.scripts = scripts;
    pool.scripts[pool.script_count++] = script;
    return 0;
}

int redis_pool_start(void)
{
    for (unsigned i = 0; i < pool.size; i++) {
        pool.links[i].loads =
            calloc(pool.script_count, sizeof(*pool.links[i].loads));
        if (pool.links[i].loads == NULL)
            return -ENOMEM;
    }
    return 0;
}

void redis_pool_move(const struct redis_addr *addr)
{
    for (unsigned i = 0; i < pool.size; i++)
        redis_link_move(&pool.links[i].link, addr);
}

void redis_pool_close(void)
{
    for (unsigned i = 0; i < pool.size; i++)
        redis_link_close(&pool.links[i].link);
}

void redis_pool_free(void)
{
    for (unsigned i = 0; i < pool.size; i++)
        free(pool.links[i].loads);
    free(pool.links);
    free(pool.scripts);
}

unsigned redis_pool_key_group(const char *key, size_t len)
{
    return (unsigned)(hashmap_hash(key, len) % pool.size);
}

static struct redis_link *link_for(const char *key, size_t len)
{
    return &pool.links[redis_pool_key_group(key, len)].link;
}

bool redis_pool_key_ready(const char *key, size_t len)
{
    return redis_link_ready(link_for(key, len));
}

bool redis_pool_all_ready(void)
{
    return stats.redis_pool_ready == pool.size;
}

unsigned redis_pool_inflight(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < pool.size; i++)
        n += redis_link_requests(&pool.links[i].link);
    return n;
}

/* ---- calls ------------------------------------------------------------- */

static int call_send(struct pool_call *call, struct redis_link *link,
                     bool as_eval);

static void on_call_reply(struct redis_request *req, redisReply *reply)
{
    struct pool_call *call = (struct pool_call *)req;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
        strncmp(reply->str, "READONLY", 8) == 0) {
        /* Not run; whoever asked tries again on the master, once known. */
        redis_link_reset(req->link, "the server is a replica now (READONLY)");
        pool.on_readonly();
        reply = NULL;
    }
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
        call->script != NULL && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        stats.script_reloads++;
        log_info("redis %s: script %s was flushed; sending it again",
                 req->link->label, call->script->name);
        if (call_send(call, req->link, true) == 0)
            return;
        reply = NULL;
    }
    answer(call, reply);
    free(call);
}

/* EVALSHA sha nkeys args..., or EVAL source nkeys args..., or args...;
 * the three words before the arguments are the call's own. */
static int call_send(struct pool_call *call, struct redis_link *link,
                     bool as_eval)
{
    const char **argv = (const char **)call->argv - 3;
    size_t *len = call->argv_len - 3;
    char nkeys[FORMAT_INT_MAX];

    call->req.on_reply = on_call_reply;
    if (call->script == NULL)
        return redis_link_send(link, &call->req, call->argc, argv + 3, len + 3);
    argv[0] = as_eval ? "EVAL" : "EVALSHA";
    len[0] = as_eval ? 4 : 7;
    argv[1] = as_eval ? call->script->source : call->script->sha;
    len[1] = strlen(argv[1]);
    len[2] = format_int64(nkeys, call->nkeys);
    argv[2] = nkeys;
    return redis_link_send(link, &call->req, call->argc + 3, argv, len);
}

/*
 * WAIT blocks its connection until the replicas acknowledge or the
 * timeout passes, so that connection may be silent that much longer
 * before it counts as stalled.
 */
int redis_pool_wait(const char *key, size_t len, unsigned replicas,
                    int64_t timeout_ms, backend_reply_fn *fn, void *arg)
{
    char n[FORMAT_INT_MAX], ms[FORMAT_INT_MAX];
    const char *argv[] = {"WAIT", n, ms};
    size_t argv_len[] = {4, format_int64(n, replicas),
                         format_int64(ms, timeout_ms)};
    struct redis_link *link = link_for(key, len);

    link->patience_ms = timeout_ms;
    return redis_pool_eval(&(struct backend_call){NULL, key, len, 0, 3, argv,
                                                  argv_len},
                           fn, arg);
}

int redis_pool_eval(const struct backend_call *c, backend_reply_fn *fn,
                    void *arg)
{
    struct redis_link *link = link_for(c->key, c->key_len);
    size_t n = (size_t)c->argc + 3, bytes = 0;
    struct pool_call *call;
    char *data;
    int err;

    if (!redis_link_ready(link))
        return -ENOTCONN;
    for (int i = 0; i < c->argc; i++)
        bytes += c->argv_len[i];
    call =
        malloc(sizeof(*call) + n * (sizeof(char *) + sizeof(size_t)) + bytes);
    if (call == NULL)
        return -ENOMEM;
    *call = (struct pool_call){.script = c->script,
                               .fn = fn,
                               .arg = arg,
                               .nkeys = c->nkeys,
                               .argc = c->argc};
    call->argv = (char **)(call + 1) + 3;
    call->argv_len = (size_t *)(call->argv + c->argc) + 3;
    data = (char *)(call->argv_len + c->argc);
    for (int i = 0; i < c->argc; i++) {
        memcpy(data, c->argv[i], c->argv_len[i]);
        call->argv[i] = data;
        call->argv_len[i] = c->argv_len[i];
        data += c->argv_len[i];
    }
    err = call_send(call, link, false);
    if (err != 0)
        free(call);
    return err;
}
