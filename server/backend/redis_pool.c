/*
 * redis_pool.c - which link serves a route, script loading, EVALSHA with
 * the NOSCRIPT fallback, and Redis replies as backend values.
 */
#include "backend/redis_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis_link.h"
#include "base/log.h"
#include "base/stats.h"

/* One call in flight: the caller's arguments are kept so that a NOSCRIPT
 * reply can be answered by resending them as EVAL, and a redirection by
 * sending them elsewhere. */
struct redis_call {
    struct redis_request req;
    struct redis_request asking; /* ASKING before it, after an ASK */
    struct backend_script *script;
    backend_reply_fn *fn;
    void *arg;
    unsigned route;
    unsigned hops;       /* redirections in a row */
    uint64_t held_since; /* first held back; 0: never */
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
    struct redis_pool *pool;
    struct script_load *loads; /* one per script */
    size_t loads_pending;
};

struct redis_pool {
    struct pool_link *links;
    unsigned size;
    unsigned ready;
    struct redis_addr addr;
    const struct redis_pool_events *events;
};

/* Every pool loads every script. */
static struct {
    struct backend_script **list;
    size_t count;
} scripts;

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

void redis_call_answer(struct redis_call *call, const redisReply *reply)
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
    free(call);
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

    pl->loads_pending = scripts.count;
    for (size_t i = 0; i < scripts.count; i++) {
        const char *argv[] = {"SCRIPT", "LOAD", scripts.list[i]->source};
        size_t len[] = {6, 4, strlen(scripts.list[i]->source)};

        pl->loads[i].script = scripts.list[i];
        pl->loads[i].req.on_reply = on_script_loaded;
        if (redis_link_send(link, &pl->loads[i].req, 3, argv, len) != 0) {
            redis_link_reset(link, "cannot send SCRIPT LOAD");
            return;
        }
    }
    if (scripts.count == 0)
        redis_link_set_ready(link);
}

/* Counted afresh: a link can stall and come back, be lost while stalled,
 * or become ready, and only the links themselves know which. */
static void on_link_readiness(struct redis_link *link)
{
    struct redis_pool *pool = ((struct pool_link *)link)->pool;
    unsigned ready = 0;

    for (unsigned i = 0; i < pool->size; i++)
        ready += redis_link_ready(&pool->links[i].link);
    pool->ready = ready;
    pool->events->on_change(pool);
}

int redis_pool_add_script(struct backend_script *script)
{
    struct backend_script **list =
        realloc(scripts.list, (scripts.count + 1) * sizeof(*list));

    if (list == NULL)
        return -ENOMEM;
    scripts.list = list;
    scripts.list[scripts.count++] = script;
    return 0;
}

void redis_pool_free_scripts(void)
{
    free(scripts.list);
    scripts.list = NULL;
    scripts.count = 0;
}

struct redis_pool *redis_pool_new(uv_loop_t *loop, const struct config *cfg,
                                  const char *label,
                                  const struct redis_pool_events *events)
{
    struct redis_pool *pool = calloc(1, sizeof(*pool));

    if (pool == NULL)
        return NULL;
    pool->events = events;
    pool->links = calloc((size_t)cfg->pool_size, sizeof(*pool->links));
    if (pool->links == NULL) {
        free(pool);
        return NULL;
    }
    for (unsigned i = 0; i < (unsigned)cfg->pool_size; i++) {
        struct pool_link *pl = &pool->links[i];
        char name[sizeof(pl->link.label)];

        snprintf(name, sizeof(name), "%s[%u]", label, i);
        pl->pool = pool;
        pl->loads = calloc(scripts.count, sizeof(*pl->loads));
        if ((scripts.count > 0 && pl->loads == NULL) ||
            redis_link_init(&pl->link, loop, cfg, name) != 0) {
            free(pl->loads);
            break;
        }
        pl->link.on_connected = on_link_connected;
        pl->link.on_readiness = on_link_readiness;
        pool->size++;
    }
    if (pool->size < (unsigned)cfg->pool_size) {
        /* The links made so far have live timers: close, free later. */
        log_error("out of memory making the connections of %s", label);
        redis_pool_close(pool);
        return NULL;
    }
    return pool;
}

void redis_pool_move(struct redis_pool *pool, const struct redis_addr *addr)
{
    pool->addr = *addr;
    for (unsigned i = 0; i < pool->size; i++)
        redis_link_move(&pool->links[i].link, addr);
}

const struct redis_addr *redis_pool_addr(const struct redis_pool *pool)
{
    return &pool->addr;
}

void redis_pool_stop(struct redis_pool *pool)
{
    for (unsigned i = 0; i < pool->size; i++)
        redis_link_stop(&pool->links[i].link, "its server left the cluster");
}

void redis_pool_close(struct redis_pool *pool)
{
    for (unsigned i = 0; i < pool->size; i++)
        redis_link_close(&pool->links[i].link);
}

void redis_pool_free(struct redis_pool *pool)
{
    if (pool == NULL)
        return;
    for (unsigned i = 0; i < pool->size; i++)
        free(pool->links[i].loads);
    free(pool->links);
    free(pool);
}

static struct redis_link *link_for(const struct redis_pool *pool,
                                   unsigned route)
{
    return &pool->links[route % pool->size].link;
}

bool redis_pool_route_ready(const struct redis_pool *pool, unsigned route)
{
    return redis_link_ready(link_for(pool, route));
}

unsigned redis_pool_size(const struct redis_pool *pool)
{
    return pool->size;
}

unsigned redis_pool_ready(const struct redis_pool *pool)
{
    return pool->ready;
}

unsigned redis_pool_inflight(const struct redis_pool *pool)
{
    unsigned n = 0;

    for (unsigned i = 0; i < pool->size; i++)
        n += redis_link_requests(&pool->links[i].link);
    return n;
}

/* ---- calls ------------------------------------------------------------- */

static int call_send(struct redis_call *call, struct redis_link *link,
                     bool as_eval);

static void on_call_reply(struct redis_request *req, redisReply *reply)
{
    struct redis_call *call = (struct redis_call *)req;
    struct redis_pool *pool = ((struct pool_link *)req->link)->pool;
    bool error = reply != NULL && reply->type == REDIS_REPLY_ERROR;

    if (error && strncmp(reply->str, "READONLY", 8) == 0) {
        /* Not run; whoever asked tries again on the master, once known. */
        redis_link_reset(req->link, "the server is a replica now (READONLY)");
        pool->events->on_readonly(pool);
        reply = NULL;
    } else if (error && call->script != NULL &&
               strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        stats.script_reloads++;
        log_info("redis %s: script %s was flushed; sending it again",
                 req->link->label, call->script->name);
        if (call_send(call, req->link, true) == 0)
            return;
        reply = NULL;
    } else if (error && pool->events->on_redirect != NULL &&
               pool->events->on_redirect(pool, call, reply)) {
        return;
    }
    redis_call_answer(call, reply);
}

/* ASKING's +OK says nothing the command's own reply will not. */
static void on_asking_reply(struct redis_request *req, redisReply *reply)
{
    (void)req;
    (void)reply;
}

/* EVALSHA sha nkeys args..., or EVAL source nkeys args..., or args...;
 * the three words before the arguments are the call's own. */
static int call_send(struct redis_call *call, struct redis_link *link,
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

unsigned redis_call_route(const struct redis_call *call)
{
    return call->route;
}

unsigned redis_call_count_hop(struct redis_call *call)
{
    return ++call->hops;
}

void redis_call_clear_hops(struct redis_call *call)
{
    call->hops = 0;
}

uint64_t redis_call_held_since(struct redis_call *call, uint64_t now)
{
    if (call->held_since == 0)
        call->held_since = now;
    return call->held_since;
}

/* The target may not have loaded the scripts yet when it is not ready;
 * a redirected call goes only to a ready connection, as a new one does. */
int redis_call_send(struct redis_call *call, struct redis_pool *pool,
                    bool asking)
{
    static const char *const argv[] = {"ASKING"};
    static const size_t len[] = {6};
    struct redis_link *link = link_for(pool, call->route);
    int err;

    if (!redis_link_ready(link))
        return -ENOTCONN;
    if (asking) {
        call->asking.on_reply = on_asking_reply;
        err = redis_link_send(link, &call->asking, 1, (const char **)argv, len);
        if (err != 0)
            return err;
    }
    return call_send(call, link, false);
}

/*
 * WAIT blocks its connection until the replicas acknowledge or the
 * timeout passes, so that connection may be silent that much longer
 * before it counts as stalled.
 */
int redis_pool_wait(struct redis_pool *pool, unsigned route, unsigned replicas,
                    int64_t timeout_ms, backend_reply_fn *fn, void *arg)
{
    char n[FORMAT_INT_MAX], ms[FORMAT_INT_MAX];
    const char *argv[] = {"WAIT", n, ms};
    size_t argv_len[] = {4, format_int64(n, replicas),
                         format_int64(ms, timeout_ms)};

    link_for(pool, route)->patience_ms = timeout_ms;
    return redis_pool_eval(
        pool, &(struct backend_call){NULL, NULL, 0, 0, 3, argv, argv_len},
        route, fn, arg);
}

int redis_pool_eval(struct redis_pool *pool, const struct backend_call *c,
                    unsigned route, backend_reply_fn *fn, void *arg)
{
    struct redis_link *link = link_for(pool, route);
    size_t n = (size_t)c->argc + 3, bytes = 0;
    struct redis_call *call;
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
    *call = (struct redis_call){.script = c->script,
                                .fn = fn,
                                .arg = arg,
                                .route = route,
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
