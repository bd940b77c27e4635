/*
 * main.c - start-up, signals, reload and orderly shutdown.
 *
 * Owns the event loop, the live configuration, the order in which
 * subsystems start and stop, and the wiring of the three layers: the
 * front end runs commands through the lock engine, the engine talks to
 * the Redis backend through struct backend and to time through the
 * clock below (the loop's time and one uv_timer), and the backend's
 * "can serve more now" reaches the engine and the service manager here.
 * Shutdown (SIGTERM, SIGINT): stop accepting, answer waiters with
 * -SHUTDOWN, close clients once their replies are written (their
 * sessions end, so locks are released or left to expire per
 * on_disconnect), give those releases up to SHUTDOWN_GRACE_MS to reach
 * Redis, then close every handle and let the loop end.
 * Reload (SIGHUP): read the config file again; if it is valid, apply the
 * keys that can change live (config_apply_reload) and the users (each
 * connection's next command runs with its user's new permissions; a
 * removed user's connections are closed, as in Redis 7); if not, keep
 * running on the old one. Either way the outcome is logged.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>

#include <uv.h>

#include "backend/redis_backend.h"
#include "base/config.h"
#include "base/event_ring.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/service.h"
#include "base/stats.h"
#include "base/tls.h"
#include "base/tls_server.h"
#include "base/version.h"
#include "engine/lock_engine.h"
#include "front/client.h"
#include "front/commands.h"
#include "front/http.h"
#include "front/info.h"
#include "front/listener.h"
#include "front/locks_view.h"
#include "front/pubsub.h"

#define SHUTDOWN_GRACE_MS 3000
#define SHUTDOWN_POLL_MS 10

static struct {
    uv_loop_t loop;
    struct config cfg;
    const char *config_path; /* NULL: built-in defaults */
    uv_signal_t sigint, sigterm, sighup;
    uv_timer_t shutdown_timer;
    uint64_t shutdown_deadline;
    uv_timer_t engine_timer; /* the lock engine's clock */
    bool shutting_down;
} rlockd;

static void usage(FILE *out)
{
    fprintf(out, "usage: rlockd [-c FILE] [-t] [-h] [-V]\n"
                 "  -c, --config FILE  configuration file (default: built-in "
                 "defaults)\n"
                 "  -t, --test         check the configuration and exit\n"
                 "  -h, --help         this help\n"
                 "  -V, --version      print the version and exit\n");
}

static void close_everything(void)
{
    uv_timer_stop(&rlockd.shutdown_timer);
    uv_close((uv_handle_t *)&rlockd.shutdown_timer, NULL);
    uv_close((uv_handle_t *)&rlockd.sigint, NULL);
    uv_close((uv_handle_t *)&rlockd.sigterm, NULL);
    uv_close((uv_handle_t *)&rlockd.sighup, NULL);
    uv_timer_stop(&rlockd.engine_timer);
    uv_close((uv_handle_t *)&rlockd.engine_timer, NULL);
    service_close();
    http_close();
    client_close_handles();
    redis_backend_close();
}

/* Waits for clients to go and releases to be answered, within the grace. */
static void shutdown_poll(uv_timer_t *timer)
{
    bool done = stats.connected_clients == 0 && redis_backend_inflight() == 0;

    (void)timer;
    if (!done && uv_now(&rlockd.loop) < rlockd.shutdown_deadline)
        return;
    if (!done)
        log_warn("shutdown: gave up waiting for %" PRIu64
                 " client(s) and %u Redis replies",
                 stats.connected_clients, redis_backend_inflight());
    close_everything();
}

static void on_signal(uv_signal_t *handle, int signum)
{
    (void)handle;
    if (rlockd.shutting_down)
        return;
    rlockd.shutting_down = true;
    log_info("received %s, shutting down", strsignal(signum));
    service_stopping();
    listener_close();
    client_stop_all();
    lock_engine_shutdown();
    client_quit_all();
    rlockd.shutdown_deadline = uv_now(&rlockd.loop) + SHUTDOWN_GRACE_MS;
    uv_timer_start(&rlockd.shutdown_timer, shutdown_poll, 0, SHUTDOWN_POLL_MS);
}

/* Certificate rotation: the TLS files are read again at every reload,
 * changed or not; a bad one fails the reload (fresh is then freed). */
static int tls_reload(struct config *fresh, char *err, size_t size)
{
    char why[400];

    if (!tls_server_configured(fresh) ||
        tls_server_load(fresh, why, sizeof(why)) == 0)
        return 0;
    snprintf(err, size, "%s: %s", rlockd.config_path, why);
    config_free(fresh);
    return -1;
}

static void on_sighup(uv_signal_t *handle, int signum)
{
    struct config fresh;
    char err[512];
    int changed;

    (void)handle;
    (void)signum;
    if (rlockd.shutting_down)
        return;
    if (rlockd.config_path == NULL) {
        log_warn("reload: started without -c, nothing to reload");
        return;
    }
    service_reloading();
    if (config_load(&fresh, rlockd.config_path, err, sizeof(err)) != 0 ||
        tls_reload(&fresh, err, sizeof(err)) != 0) {
        stats.config_reload_failures++;
        log_error("reload failed, keeping the running configuration: %s", err);
        service_reloaded(false);
        return;
    }
    changed = config_apply_reload(&rlockd.cfg, &fresh);
    client_users_reloaded(rlockd.cfg.acl); /* before fresh's old users go */
    commands_reloaded();
    config_free(&fresh);
    log_set_level((enum log_level)rlockd.cfg.log_level);
    log_set_format((enum log_format)rlockd.cfg.log_format);
    stats.config_reloads++;
    log_info("reload: %s read, %d setting(s) changed", rlockd.config_path,
             changed);
    service_reloaded(true);
}

/* ---- the lock engine's clock ------------------------------------------ */

static uint64_t loop_now_ms(void)
{
    return uv_now(&rlockd.loop);
}

static uint64_t clock_now_ms(void *ctx)
{
    (void)ctx;
    return loop_now_ms();
}

static uint64_t clock_now_us(void *ctx)
{
    (void)ctx;
    return uv_hrtime() / 1000;
}

static void on_engine_timer(uv_timer_t *timer)
{
    (void)timer;
    lock_engine_run_timers();
}

static void clock_arm(void *ctx, uint64_t due_ms)
{
    uint64_t now = uv_now(&rlockd.loop);

    (void)ctx;
    if (due_ms == TIMER_NEVER)
        uv_timer_stop(&rlockd.engine_timer);
    else
        uv_timer_start(&rlockd.engine_timer, on_engine_timer,
                       due_ms > now ? due_ms - now : 0, 0);
}

static const struct engine_clock loop_clock = {clock_now_ms, clock_now_us,
                                               clock_arm, NULL};

/* A Redis connection came or went. READY=1 waits for the whole pool, so
 * that a client let in by systemd finds every lock name's connection up. */
static void on_backend_change(void)
{
    lock_engine_backend_ready();
    if (redis_backend_ready())
        service_ready();
}

static const struct redis_backend_events backend_events = {on_backend_change,
                                                           lock_engine_recheck};

/* Descriptors besides clients: stdio, the loop's own, signals, log, the
 * listeners (at most 8), a few spare. */
#define FDS_RESERVED 32

/*
 * Raises the soft open-files limit as far as the hard one allows, and
 * tells the client side how many connections fit under it: max_clients
 * is lowered (with a warning) rather than letting accept() fail, so the
 * Redis connections always find a descriptor and a refused client gets
 * -LIMIT, not a silent close. As Redis's adjustOpenFilesLimit.
 */
static void fit_open_files_limit(void)
{
    uint64_t reserved = FDS_RESERVED + redis_backend_connections();
    uint64_t want = (uint64_t)rlockd.cfg.max_clients + reserved;
    struct rlimit rl;
    uint64_t fit;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want
                          ? want
                          : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 ||
            getrlimit(RLIMIT_NOFILE, &rl) != 0)
            return;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return;
    fit = rl.rlim_cur > reserved + 1 ? rl.rlim_cur - reserved : 1;
    log_warn("open files limit %llu is too low for max_clients %lld; "
             "accepting at most %llu clients (raise LimitNOFILE or ulimit -n)",
             (unsigned long long)rl.rlim_cur, (long long)rlockd.cfg.max_clients,
             (unsigned long long)fit);
    client_set_fd_limit(fit);
}

/* A hold lost: kept among the recent events (GET /events), and told to
 * its client's lock-lost subscribers. */
static void on_lock_lost(const struct lock_loss *loss)
{
    locks_view_note_loss(loss);
    pubsub_on_loss(loss);
}

static int start(void)
{
    uint8_t seed[16];
    char why[400];
    int err;

    if (getrandom(seed, sizeof(seed), 0) == (ssize_t)sizeof(seed))
        hashmap_seed(seed);
    signal(SIGPIPE, SIG_IGN);
    if ((err = uv_loop_init(&rlockd.loop)) != 0 ||
        (err = uv_timer_init(&rlockd.loop, &rlockd.engine_timer)) != 0 ||
        (err = client_init(&rlockd.loop, &rlockd.cfg, commands_execute)) != 0 ||
        (err = service_init(&rlockd.loop)) != 0 ||
        (err = redis_backend_init(&rlockd.loop, &rlockd.cfg,
                                  &backend_events)) != 0 ||
        (err = lock_engine_init(&rlockd.cfg, redis_backend(), &loop_clock)) !=
            0 ||
        (err = uv_timer_init(&rlockd.loop, &rlockd.shutdown_timer)) != 0 ||
        (err = uv_signal_init(&rlockd.loop, &rlockd.sigint)) != 0 ||
        (err = uv_signal_init(&rlockd.loop, &rlockd.sigterm)) != 0 ||
        (err = uv_signal_init(&rlockd.loop, &rlockd.sighup)) != 0 ||
        (err = uv_signal_start(&rlockd.sigint, on_signal, SIGINT)) != 0 ||
        (err = uv_signal_start(&rlockd.sigterm, on_signal, SIGTERM)) != 0 ||
        (err = uv_signal_start(&rlockd.sighup, on_sighup, SIGHUP)) != 0)
        return err;
    fit_open_files_limit();
    commands_init(&rlockd.cfg);
    if ((err = event_ring_init((size_t)rlockd.cfg.events_kept)) != 0)
        return UV_ENOMEM;
    lock_engine_on_loss(on_lock_lost); /* lock-lost events */
    info_init(&rlockd.cfg, rlockd.config_path, loop_now_ms);
    if (tls_server_configured(&rlockd.cfg) &&
        tls_server_load(&rlockd.cfg, why, sizeof(why)) != 0) {
        log_error("%s", why);
        return UV_EINVAL;
    }
    if ((err = listener_start(&rlockd.loop, &rlockd.cfg)) != 0 ||
        (err = http_start(&rlockd.loop, &rlockd.cfg)) != 0)
        return err;
    return redis_backend_start();
}

/*
 * glibc serves blocks of M_MMAP_THRESHOLD bytes or more with mmap, and
 * gives them back at free; but each such block freed raises the
 * threshold to its size (up to 32 MB), after which a burst's buffers
 * (a renewal round, a pipeline of a thousand acquires) come from the
 * heap instead, and once freed stay there as holes under whatever was
 * allocated after them, for good. A fixed threshold (glibc's default,
 * 128 KB) keeps them in mmap (mallopt(3)).
 */
static void malloc_keep_bursts_out_of_heap(void)
{
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

int main(int argc, char **argv)
{
    static const struct option long_options[] = {
        {"config", required_argument, NULL, 'c'},
        {"test", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    bool check_only = false;
    char err_text[512];
    int opt, err;

    malloc_keep_bursts_out_of_heap();
    while ((opt = getopt_long(argc, argv, "c:thV", long_options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            rlockd.config_path = optarg;
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
    config_set_defaults(&rlockd.cfg);
    if (config_load(&rlockd.cfg, rlockd.config_path, err_text,
                    sizeof(err_text)) != 0) {
        fprintf(stderr, "rlockd: %s\n", err_text);
        return 1;
    }
    if (check_only &&
        (listener_check(&rlockd.cfg, err_text, sizeof(err_text)) != 0 ||
         http_check(&rlockd.cfg, err_text, sizeof(err_text)) != 0 ||
         tls_client_check(&rlockd.cfg, err_text, sizeof(err_text)) != 0 ||
         (tls_server_configured(&rlockd.cfg) &&
          tls_server_check(&rlockd.cfg, err_text, sizeof(err_text)) != 0))) {
        fprintf(stderr, "rlockd: %s: %s\n",
                rlockd.config_path ? rlockd.config_path : "(defaults)",
                err_text);
        config_free(&rlockd.cfg);
        return 1;
    }
    if (check_only) {
        config_print_env(&rlockd.cfg, stdout);
        printf("rlockd: configuration %s is valid\n",
               rlockd.config_path ? rlockd.config_path : "(defaults)");
        config_free(&rlockd.cfg);
        return 0;
    }
    log_init();
    log_set_level((enum log_level)rlockd.cfg.log_level);
    log_set_format((enum log_format)rlockd.cfg.log_format);
    if (rlockd.cfg.redis_mode == REDIS_MODE_SENTINEL)
        log_info("rlockd %s starting (redis master '%s' of sentinels %s, "
                 "pool %lld)",
                 RLOCKD_VERSION, rlockd.cfg.master_name, rlockd.cfg.sentinels,
                 (long long)rlockd.cfg.pool_size);
    else if (rlockd.cfg.redis_mode == REDIS_MODE_CLUSTER)
        log_info("rlockd %s starting (redis cluster of nodes %s, pool %lld "
                 "per master)",
                 RLOCKD_VERSION, rlockd.cfg.cluster_nodes,
                 (long long)rlockd.cfg.pool_size);
    else
        log_info("rlockd %s starting (redis %s:%lld, pool %lld)",
                 RLOCKD_VERSION, rlockd.cfg.redis_host,
                 (long long)rlockd.cfg.redis_port,
                 (long long)rlockd.cfg.pool_size);
    err = start();
    if (err != 0) {
        log_error("start-up failed: %s", uv_strerror(err));
        return 1;
    }
    uv_run(&rlockd.loop, UV_RUN_DEFAULT);
    lock_engine_free();
    event_ring_free();
    redis_backend_free();
    commands_free();
    tls_server_free();
    config_free(&rlockd.cfg);
    err = uv_loop_close(&rlockd.loop);
    if (err != 0)
        log_warn("loop closed with handles still open: %s", uv_strerror(err));
    log_info("rlockd stopped");
    return 0;
}
