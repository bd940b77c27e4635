/*
 * main.c - start-up, signals, reload and orderly shutdown.
 *
 * Owns the event loop, the live configuration and the order in which
 * subsystems start and stop.
 * Shutdown (SIGTERM, SIGINT): stop accepting, answer waiters with
 * -SHUTDOWN, close clients once their replies are written (their
 * sessions end, so locks are released or left to expire per
 * on_disconnect), give those releases up to SHUTDOWN_GRACE_MS to reach
 * Redis, then close every handle and let the loop end.
 * Reload (SIGHUP): read the config file again; if it is valid, apply the
 * keys that can change live (config_apply_reload); if not, keep running
 * on the old one. Either way the outcome is logged.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <uv.h>

#include "front/client.h"
#include "front/commands.h"
#include "base/config.h"
#include "base/hashmap.h"
#include "front/listener.h"
#include "engine/lock_table.h"
#include "engine/locking.h"
#include "base/log.h"
#include "backend/redis_link.h"
#include "backend/redis_pool.h"
#include "service.h"
#include "engine/session.h"
#include "base/stats.h"
#include "backend/subscriber.h"
#include "base/version.h"
#include "engine/watchdog.h"

#define SHUTDOWN_GRACE_MS 3000
#define SHUTDOWN_POLL_MS 10

static struct {
    uv_loop_t loop;
    struct config cfg;
    const char *config_path; /* NULL: built-in defaults */
    uv_signal_t sigint, sigterm, sighup;
    uv_timer_t shutdown_timer;
    uint64_t shutdown_deadline;
    bool shutting_down;
} D;

static void usage(FILE *out)
{
    fprintf(out, "usage: rlockd [-c FILE] [-t] [-h] [-V]\n"
                 "  -c FILE  configuration file (default: built-in defaults)\n"
                 "  -t       check the configuration and exit\n"
                 "  -h       this help\n"
                 "  -V       print the version and exit\n");
}

static void close_everything(void)
{
    uv_timer_stop(&D.shutdown_timer);
    uv_close((uv_handle_t *)&D.shutdown_timer, NULL);
    uv_close((uv_handle_t *)&D.sigint, NULL);
    uv_close((uv_handle_t *)&D.sigterm, NULL);
    uv_close((uv_handle_t *)&D.sighup, NULL);
    service_close();
    watchdog_close();
    subscriber_close();
    redis_pool_close();
    redis_links_close();
}

/* Waits for clients to go and releases to be answered, within the grace. */
static void shutdown_poll(uv_timer_t *timer)
{
    bool done = client_count() == 0 && redis_pool_inflight() == 0;

    (void)timer;
    if (!done && uv_now(&D.loop) < D.shutdown_deadline)
        return;
    if (!done)
        log_warn("shutdown: gave up waiting for %zu client(s) and %u Redis "
                 "replies",
                 client_count(), redis_pool_inflight());
    close_everything();
}

static void on_signal(uv_signal_t *handle, int signum)
{
    (void)handle;
    if (D.shutting_down)
        return;
    D.shutting_down = true;
    log_info("received %s, shutting down", strsignal(signum));
    service_stopping();
    listener_close();
    client_stop_all();
    locking_shutdown();
    client_quit_all();
    D.shutdown_deadline = uv_now(&D.loop) + SHUTDOWN_GRACE_MS;
    uv_timer_start(&D.shutdown_timer, shutdown_poll, 0, SHUTDOWN_POLL_MS);
}

static void on_sighup(uv_signal_t *handle, int signum)
{
    struct config fresh;
    char err[512];
    int changed;

    (void)handle;
    (void)signum;
    if (D.shutting_down)
        return;
    if (D.config_path == NULL) {
        log_warn("reload: started without -c, nothing to reload");
        return;
    }
    service_reloading();
    if (config_load(&fresh, D.config_path, err, sizeof(err)) != 0) {
        stats.config_reload_failures++;
        log_error("reload failed, keeping the running configuration: %s", err);
        service_reloaded(false);
        return;
    }
    changed = config_apply_reload(&D.cfg, &fresh);
    log_set_level((enum log_level)D.cfg.log_level);
    stats.config_reloads++;
    log_info("reload: %s read, %d setting(s) changed", D.config_path, changed);
    service_reloaded(true);
}

/* READY=1 waits for the whole pool, so that a client let in by systemd
 * finds every lock name's connection up. */
static void on_shard_ready(unsigned shard)
{
    locking_shard_ready(shard);
    if (redis_pool_ready_count() == redis_pool_size())
        service_ready();
}

static int start(void)
{
    uint8_t seed[16];
    int err;

    if (getrandom(seed, sizeof(seed), 0) == (ssize_t)sizeof(seed))
        hashmap_seed(seed);
    signal(SIGPIPE, SIG_IGN);
    err = uv_loop_init(&D.loop);
    if (err != 0)
        return err;
    lock_table_init();
    session_init(&D.cfg);
    client_init(&D.loop, &D.cfg);
    locking_init(&D.loop, &D.cfg);
    commands_init(&D.loop, &D.cfg, D.config_path);
    if ((err = service_init(&D.loop)) != 0 ||
        (err = redis_links_init(&D.loop)) != 0 ||
        (err = redis_pool_init(&D.loop, &D.cfg, on_shard_ready)) != 0 ||
        (err = subscriber_init(&D.loop, &D.cfg, locking_wake_head)) != 0 ||
        (err = watchdog_init(&D.loop, &D.cfg)) != 0 ||
        (err = uv_timer_init(&D.loop, &D.shutdown_timer)) != 0 ||
        (err = uv_signal_init(&D.loop, &D.sigint)) != 0 ||
        (err = uv_signal_init(&D.loop, &D.sigterm)) != 0 ||
        (err = uv_signal_init(&D.loop, &D.sighup)) != 0 ||
        (err = uv_signal_start(&D.sigint, on_signal, SIGINT)) != 0 ||
        (err = uv_signal_start(&D.sigterm, on_signal, SIGTERM)) != 0 ||
        (err = uv_signal_start(&D.sighup, on_sighup, SIGHUP)) != 0)
        return err;
    err = listener_start(&D.loop, &D.cfg);
    if (err != 0)
        return err;
    redis_pool_start();
    subscriber_start();
    return 0;
}

int main(int argc, char **argv)
{
    bool check_only = false;
    char err_text[512];
    int opt, err;

    while ((opt = getopt(argc, argv, "c:thV")) != -1) {
        switch (opt) {
        case 'c':
            D.config_path = optarg;
            break;
        case 't':
            check_only = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("rlockd %s\n", RLOCKD_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    config_set_defaults(&D.cfg);
    if (D.config_path != NULL &&
        config_load(&D.cfg, D.config_path, err_text, sizeof(err_text)) != 0) {
        fprintf(stderr, "rlockd: %s\n", err_text);
        return 1;
    }
    if (check_only) {
        printf("rlockd: configuration %s is valid\n",
               D.config_path ? D.config_path : "(defaults)");
        return 0;
    }
    log_init();
    log_set_level((enum log_level)D.cfg.log_level);
    log_info("rlockd %s starting (redis %s:%lld, pool %lld)", RLOCKD_VERSION,
             D.cfg.redis_host, (long long)D.cfg.redis_port,
             (long long)D.cfg.pool_size);
    err = start();
    if (err != 0) {
        log_error("start-up failed: %s", uv_strerror(err));
        return 1;
    }
    uv_run(&D.loop, UV_RUN_DEFAULT);
    session_free_all();
    lock_table_free();
    err = uv_loop_close(&D.loop);
    if (err != 0)
        log_warn("loop closed with handles still open: %s", uv_strerror(err));
    log_info("rlockd stopped");
    return 0;
}
