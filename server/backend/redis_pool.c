/*
 * redis_pool.c - shards, script loading, EVALSHA with NOSCRIPT fallback.
 */
#include "backend/redis_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/log.h"
#include "backend/redis_link.h"

#define MAX_CALL_ARGS 3100 /* renew_batch_size (<= 1000) keys, 2 args each */

/* One call in flight: the caller's arguments are kept so that a NOSCRIPT
 * reply can be answered by resending them as EVAL. */
struct pool_call {
    struct redis_request req;
    enum script_id script;
    redis_pool_fn *fn;
    void *arg;
    int nkeys;
    int argc;
    size_t *argv_len;
    char **argv;
    /* argv pointers, lengths and bytes follow */
};

struct script_load {
    struct redis_request req;
    enum script_id script;
};

struct pool_link {
    struct redis_link link;
    unsigned shard;
    struct script_load loads[SCRIPT_COUNT];
    unsigned loads_pending;
};

static struct {
    struct pool_link *links;
    unsigned size;
    void (*on_shard_ready)(unsigned shard);
    unsigned long long script_reloads;
} pool;

static void on_script_loaded(struct redis_request *req, redisReply *reply)
{
    struct script_load *load = (struct script_load *)req;
    struct pool_link *pl = (struct pool_link *)req->link;

    if (reply == NULL)
        return; /* the link is gone; it reloads on reconnect */
    if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
        log_error("redis %s: SCRIPT LOAD %s: %s", pl->link.label,
                  scripts[load->script].name,
                  reply->type == REDIS_REPLY_ERROR ? reply->str : "bad reply");
        redis_link_reset(&pl->link, "cannot load scripts");
        return;
    }
    memcpy(scripts[load->script].sha, reply->str, 40);
    scripts[load->script].sha[40] = '\0';
    if (--pl->loads_pending == 0) {
        redis_link_set_ready(&pl->link);
        pool.on_shard_ready(pl->shard);
    }
}

static void on_link_connected(struct redis_link *link)
{
    struct pool_link *pl = (struct pool_link *)link;

    pl->loads_pending = SCRIPT_COUNT;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const char *argv[] = {"SCRIPT", "LOAD", scripts[i].source};
        size_t len[] = {6, 4, strlen(scripts[i].source)};

        pl->loads[i].script = (enum script_id)i;
        pl->loads[i].req.on_reply = on_script_loaded;
        if (redis_link_send(link, &pl->loads[i].req, 3, argv, len) != 0) {
            redis_link_reset(link, "cannot send SCRIPT LOAD");
            return;
        }
    }
}

int redis_pool_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_shard_ready)(unsigned shard))
{
    pool.size = (unsigned)cfg->pool_size;
    pool.on_shard_ready = on_shard_ready;
    pool.links = calloc(pool.size, sizeof(*pool.links));
    if (pool.links == NULL)
        return -ENOMEM;
    for (unsigned i = 0; i < pool.size; i++) {
        char label[32];
        int err;

        snprintf(label, sizeof(label), "pool[%u]", i);
        err = redis_link_init(&pool.links[i].link, loop, cfg, label);
        if (err != 0)
            return err;
        pool.links[i].shard = i;
        pool.links[i].link.on_connected = on_link_connected;
    }
    return 0;
}

void redis_pool_start(void)
{
    for (unsigned i = 0; i < pool.size; i++)
        redis_link_start(&pool.links[i].link);
}

void redis_pool_close(void)
{
    for (unsigned i = 0; i < pool.size; i++)
        redis_link_close(&pool.links[i].link);
}

unsigned redis_pool_size(void)
{
    return pool.size;
}

unsigned redis_pool_shard(const char *name, size_t len)
{
    return (unsigned)(hashmap_hash(name, len) % pool.size);
}

bool redis_pool_ready(unsigned shard)
{
    return redis_link_ready(&pool.links[shard].link);
}

unsigned redis_pool_ready_count(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < pool.size; i++)
        n += redis_pool_ready(i);
    return n;
}

unsigned long long redis_pool_reconnects(void)
{
    unsigned long long n = 0;

    for (unsigned i = 0; i < pool.size; i++)
        n += pool.links[i].link.reconnects;
    return n;
}

unsigned redis_pool_inflight(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < pool.size; i++)
        n += pool.links[i].link.inflight;
    return n;
}

unsigned long long redis_pool_script_reloads(void)
{
    return pool.script_reloads;
}

static int call_send(struct pool_call *call, struct redis_link *link,
                     bool as_eval);

static void on_call_reply(struct redis_request *req, redisReply *reply)
{
    struct pool_call *call = (struct pool_call *)req;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
        call->script != SCRIPT_COUNT &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        pool.script_reloads++;
        log_info("redis %s: script %s was flushed; sending it again",
                 req->link->label, scripts[call->script].name);
        if (call_send(call, req->link, true) == 0)
            return;
        reply = NULL;
    }
    call->fn(reply, call->arg);
    free(call);
}

/* EVALSHA sha nkeys args..., or EVAL source nkeys args..., or args... */
static int call_send(struct pool_call *call, struct redis_link *link,
                     bool as_eval)
{
    const char *argv[MAX_CALL_ARGS + 3];
    size_t len[MAX_CALL_ARGS + 3];
    char nkeys[FORMAT_INT_MAX];
    int n = 0;

    if (call->script != SCRIPT_COUNT) {
        const struct script *s = &scripts[call->script];
        argv[n] = as_eval ? "EVAL" : "EVALSHA";
        len[n] = strlen(argv[n]);
        n++;
        argv[n] = as_eval ? s->source : s->sha;
        len[n] = strlen(argv[n]);
        n++;
        len[n] = format_int64(nkeys, call->nkeys);
        argv[n++] = nkeys;
    }
    for (int i = 0; i < call->argc; i++, n++) {
        argv[n] = call->argv[i];
        len[n] = call->argv_len[i];
    }
    call->req.on_reply = on_call_reply;
    return redis_link_send(link, &call->req, n, argv, len);
}

int redis_pool_call(unsigned shard, enum script_id script, int nkeys, int argc,
                    const char **argv, const size_t *argv_len,
                    redis_pool_fn *fn, void *arg)
{
    struct redis_link *link = &pool.links[shard].link;
    struct pool_call *call;
    size_t bytes = 0;
    char *data;
    int err;

    if (!redis_link_ready(link))
        return -ENOTCONN;
    if (argc > MAX_CALL_ARGS)
        return -E2BIG;
    for (int i = 0; i < argc; i++)
        bytes += argv_len[i];
    call = malloc(sizeof(*call) +
                  (size_t)argc * (sizeof(char *) + sizeof(size_t)) + bytes);
    if (call == NULL)
        return -ENOMEM;
    *call = (struct pool_call){
        .script = script, .fn = fn, .arg = arg, .nkeys = nkeys, .argc = argc};
    call->argv = (char **)(call + 1);
    call->argv_len = (size_t *)(call->argv + argc);
    data = (char *)(call->argv_len + argc);
    for (int i = 0; i < argc; i++) {
        memcpy(data, argv[i], argv_len[i]);
        call->argv[i] = data;
        call->argv_len[i] = argv_len[i];
        data += argv_len[i];
    }
    err = call_send(call, link, false);
    if (err != 0)
        free(call);
    return err;
}
