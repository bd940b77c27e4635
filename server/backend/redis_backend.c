/*
 * redis_backend.c - Standalone Redis as struct backend: the pool runs
 * scripts and commands, the subscriber listens. A key group is a pool
 * connection: one Redis could run a script over any keys, but a renewal
 * must stay ordered with its keys' releases, which go the same way.
 */
#include "backend/redis_backend.h"

#include "backend/redis_link.h"
#include "backend/redis_pool.h"
#include "backend/subscriber.h"
#include "base/log.h"
#include "base/stats.h"

static struct {
    void (*on_change)(void);
} redis;

static void add_script(struct backend_script *script)
{
    if (redis_pool_add_script(script) != 0)
        log_error("out of memory registering script %s", script->name);
}

static const struct backend redis_standalone = {
    .add_script = add_script,
    .eval = redis_pool_eval,
    .listen = subscriber_listen,
    .unlisten = subscriber_unlisten,
    .key_ready = redis_pool_key_ready,
    .key_group = redis_pool_key_group,
};

static void on_link_change(void)
{
    stats.redis_connected = redis_pool_all_ready() && subscriber_ready();
    redis.on_change();
}

int redis_backend_init(uv_loop_t *loop, const struct config *cfg,
                       void (*on_change)(void))
{
    int err;

    redis.on_change = on_change;
    if ((err = redis_links_init(loop)) != 0 ||
        (err = redis_pool_init(loop, cfg, on_link_change)) != 0 ||
        (err = subscriber_init(loop, cfg, on_link_change)) != 0)
        return err;
    return 0;
}

const struct backend *redis_backend(void)
{
    return &redis_standalone;
}

int redis_backend_start(void)
{
    int err = redis_pool_start();

    if (err != 0)
        return err;
    subscriber_start();
    return 0;
}

bool redis_backend_ready(void)
{
    return redis_pool_all_ready();
}

unsigned redis_backend_inflight(void)
{
    return redis_pool_inflight();
}

void redis_backend_close(void)
{
    subscriber_close();
    redis_pool_close();
    redis_links_close();
}

void redis_backend_free(void)
{
    redis_pool_free();
}
