/*
 * harness.c - starts and stops the redis-server and rlockd a librlock test
 * runs against (see harness.h).
 *
 * Owns the processes it spawns and the temp dirs it makes; stops only
 * those, by pid, and never touches a Redis or rlockd it did not start.
 * Processes are spawned into the test's own process group, so that Check,
 * which kills a timed-out test child's group, takes them down too.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOOPBACK "127.0.0.1"
#define START_ATTEMPTS 5 /* a free port can be taken before it is bound */
#define READY_TIMEOUT_MS 10000
#define STOP_GRACE_MS 3000

extern char **environ;

/* The one world of this process; owner 0 when there is none. */
static struct {
    pid_t owner;
    char dir[80];
    struct harness_options opts;
    char auth_token[128];
    pid_t redis_pid, rlockd_pid;
    int redis_port, rlockd_port;
    char addr[64];
    char unix_addr[108];
} world;

static char base_dir[64];
static pid_t base_owner;

long long harness_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void harness_sleep_ms(long long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000};

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int harness_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
    ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                      getsockname(fd, (struct sockaddr *)&a, &len) == 0,
                  "bind to a free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- files ----------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void world_path(char *out, size_t size, const char *file)
{
    int n = snprintf(out, size, "%s/%s", world.dir, file);

    ck_assert_msg(n > 0 && (size_t)n < size, "path too long: %s", file);
}

/* The end of a log, for a failure message. */
static const char *log_tail(const char *file)
{
    static char tail[1024];
    char path[PATH_MAX];
    FILE *f;
    size_t n;

    world_path(path, sizeof path, file);
    f = fopen(path, "r");
    if (f == NULL)
        return "(no log)";
    fseek(f, 0, SEEK_END);
    if (ftell(f) > (long)sizeof tail - 1)
        fseek(f, -(long)(sizeof tail - 1), SEEK_END);
    else
        fseek(f, 0, SEEK_SET);
    n = fread(tail, 1, sizeof tail - 1, f);
    tail[n] = '\0';
    fclose(f);
    return tail;
}

/* ---- processes ------------------------------------------------------- */

/* Starts argv[0] (looked up in PATH) with its output in <dir>/<log>. */
static pid_t spawn(char *const argv[], const char *log)
{
    posix_spawn_file_actions_t actions;
    char path[PATH_MAX];
    pid_t pid;
    int err;

    world_path(path, sizeof path, log);
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, path,
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    err = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ck_assert_msg(err == 0, "cannot start %s: %s", argv[0], strerror(err));
    return pid;
}

/* True (and *pid cleared) if the process has exited. */
static bool reaped(pid_t *pid)
{
    if (*pid <= 0 || waitpid(*pid, NULL, WNOHANG) != *pid)
        return false;
    *pid = 0;
    return true;
}

/* SIGTERM (and SIGCONT, in case a test left it stopped), then SIGKILL if
 * it has not exited after STOP_GRACE_MS. True if it exited by itself with
 * status 0 (or had been reaped already). */
static bool stop_process(pid_t *pid)
{
    long long deadline = harness_now_ms() + STOP_GRACE_MS;
    int status;

    if (*pid <= 0)
        return true;
    kill(*pid, SIGTERM);
    kill(*pid, SIGCONT);
    while (waitpid(*pid, &status, WNOHANG) != *pid) {
        if (harness_now_ms() >= deadline) {
            fprintf(stderr, "harness: pid %d ignored SIGTERM; killing it\n",
                    (int)*pid);
            kill(*pid, SIGKILL);
            waitpid(*pid, NULL, 0);
            *pid = 0;
            return false;
        }
        harness_sleep_ms(10);
    }
    *pid = 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- redis-server ---------------------------------------------------- */

static bool redis_answers(void)
{
    struct timeval tv = {1, 0};
    redisContext *ctx = redisConnectWithTimeout(LOOPBACK, world.redis_port, tv);
    redisReply *r = NULL;
    bool ok;

    if (ctx != NULL && ctx->err == 0)
        r = redisCommand(ctx, "PING");
    ok = r != NULL && r->type == REDIS_REPLY_STATUS &&
         strcmp(r->str, "PONG") == 0;
    if (r != NULL)
        freeReplyObject(r);
    if (ctx != NULL)
        redisFree(ctx);
    return ok;
}

/* False if redis-server exited (its port was taken, most likely). */
static bool redis_start(void)
{
    char port[16];
    char *argv[] = {"redis-server", "--port", port,      "--bind",
                    LOOPBACK,       "--save", "",        "--appendonly",
                    "no",           "--dir",  world.dir, NULL};
    long long deadline = harness_now_ms() + READY_TIMEOUT_MS;

    world.redis_port = harness_free_port();
    snprintf(port, sizeof port, "%d", world.redis_port);
    world.redis_pid = spawn(argv, "redis.log");
    while (!redis_answers()) {
        if (reaped(&world.redis_pid))
            return false;
        ck_assert_msg(harness_now_ms() < deadline,
                      "redis-server did not answer PING:\n%s",
                      log_tail("redis.log"));
        harness_sleep_ms(10);
    }
    return true;
}

redisContext *harness_redis(void)
{
    struct timeval tv = {2, 0};
    redisContext *ctx = redisConnectWithTimeout(LOOPBACK, world.redis_port, tv);

    ck_assert_msg(ctx != NULL && ctx->err == 0, "cannot connect to redis");
    return ctx;
}

/* ---- rlockd ---------------------------------------------------------- */

static void rlockd_write_config(const char *path)
{
    FILE *f = fopen(path, "w");

    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fprintf(f, "[server]\nlisten = %s:%d\n", LOOPBACK, world.rlockd_port);
    if (world.opts.unix_socket)
        fprintf(f, "unix_socket = %s/rlockd.sock\n", world.dir);
    if (world.opts.auth_token != NULL)
        fprintf(f, "auth_token = %s\n", world.opts.auth_token);
    if (world.opts.min_heartbeat_ms != 0)
        fprintf(f, "min_heartbeat_ms = %d\n", world.opts.min_heartbeat_ms);
    fprintf(f,
            "\n[redis]\nhost = %s\nport = %d\nconnect_timeout_ms = 500\n"
            "\n[lock]\nwatchdog_timeout_ms = %d\non_disconnect = release\n"
            "\n[log]\nlevel = info\n",
            LOOPBACK, world.redis_port, HARNESS_WATCHDOG_MS);
    fclose(f);
}

/* A connection to rlockd that may send any command (AUTH done). */
static redisContext *rlockd_probe(void)
{
    struct timeval tv = {1, 0};
    redisContext *ctx =
        redisConnectWithTimeout(LOOPBACK, world.rlockd_port, tv);
    redisReply *r;

    if (ctx == NULL || ctx->err != 0 || world.opts.auth_token == NULL)
        return ctx;
    redisSetTimeout(ctx, tv);
    r = redisCommand(ctx, "AUTH %s", world.opts.auth_token);
    if (r != NULL)
        freeReplyObject(r);
    return ctx;
}

/* The INFO field, or -1 if rlockd does not answer or lacks it. */
long long harness_info(const char *field)
{
    struct timeval tv = {1, 0};
    redisContext *ctx = rlockd_probe();
    redisReply *r = NULL;
    long long value = -1;
    char key[64];

    snprintf(key, sizeof key, "\n%s:", field);

    if (ctx != NULL && ctx->err == 0 && redisSetTimeout(ctx, tv) == REDIS_OK)
        r = redisCommand(ctx, "INFO");
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        /* every field follows a line end: INFO opens with "# Server" */
        const char *at = strstr(r->str, key);
        if (at != NULL)
            value = strtoll(at + strlen(key), NULL, 10);
    }
    if (r != NULL)
        freeReplyObject(r);
    if (ctx != NULL)
        redisFree(ctx);
    return value;
}

bool harness_wait_info(const char *field, long long value)
{
    long long deadline = harness_now_ms() + 5000;

    while (harness_info(field) != value) {
        if (harness_now_ms() >= deadline)
            return false;
        harness_sleep_ms(10);
    }
    return true;
}

/* False if rlockd exited during start-up (its port was taken, most
 * likely); a daemon that runs but never gets ready fails the test. */
static bool rlockd_spawn(void)
{
    const char *bin = getenv("RLOCKD_BIN");
    char conf[PATH_MAX];
    char *argv[] = {NULL, "-c", conf, NULL};
    long long deadline = harness_now_ms() + READY_TIMEOUT_MS;

    argv[0] = (char *)(bin != NULL ? bin : "build/rlockd");
    ck_assert_msg(access(argv[0], X_OK) == 0,
                  "rlockd binary %s not found (set RLOCKD_BIN)", argv[0]);
    world_path(conf, sizeof conf, "rlockd.ini");
    rlockd_write_config(conf);
    world.rlockd_pid = spawn(argv, "rlockd.log");
    while (harness_info("redis_connected") != 1) {
        if (reaped(&world.rlockd_pid))
            return false;
        ck_assert_msg(harness_now_ms() < deadline,
                      "rlockd not ready (PING, INFO redis_connected:1):\n%s",
                      log_tail("rlockd.log"));
        harness_sleep_ms(10);
    }
    return true;
}

void harness_rlockd_start(void)
{
    ck_assert_msg(rlockd_spawn(), "rlockd exited during start-up:\n%s",
                  log_tail("rlockd.log"));
}

void harness_rlockd_stop(void)
{
    ck_assert_msg(stop_process(&world.rlockd_pid),
                  "rlockd did not exit cleanly on SIGTERM:\n%s",
                  log_tail("rlockd.log"));
}

void harness_rlockd_signal(int sig)
{
    ck_assert_int_gt(world.rlockd_pid, 0);
    kill(world.rlockd_pid, sig);
}

/* ---- the world ------------------------------------------------------- */

static void at_exit(void)
{
    if (world.owner == getpid())
        harness_stop();
    if (base_owner == getpid())
        remove_tree(base_dir);
}

void harness_init(void)
{
    const char *tmp = getenv("TMPDIR");

    int n = snprintf(base_dir, sizeof base_dir, "%s/rlock-client-tests.XXXXXX",
                     tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");

    /* short enough for <dir>/w.XXXXXX/rlockd.sock to be a socket path */
    if (n < 0 || (size_t)n >= sizeof base_dir) {
        fprintf(stderr, "harness: TMPDIR too long\n");
        exit(EXIT_FAILURE);
    }
    if (mkdtemp(base_dir) == NULL) {
        perror("harness: mkdtemp");
        exit(EXIT_FAILURE);
    }
    base_owner = getpid();
    atexit(at_exit);
}

void harness_start(const struct harness_options *opts)
{
    int attempt, n;

    harness_stop();
    world.owner = getpid();
    n = snprintf(world.dir, sizeof world.dir, "%s/w.XXXXXX", base_dir);
    ck_assert(n > 0 && (size_t)n < sizeof world.dir);
    ck_assert_msg(mkdtemp(world.dir) != NULL, "mkdtemp: %s", strerror(errno));
    if (opts != NULL)
        world.opts = *opts;
    if (opts != NULL && opts->auth_token != NULL) {
        snprintf(world.auth_token, sizeof world.auth_token, "%s",
                 opts->auth_token);
        world.opts.auth_token = world.auth_token;
    }
    for (attempt = 0; attempt < START_ATTEMPTS && !redis_start(); attempt++)
        ;
    ck_assert_msg(attempt < START_ATTEMPTS, "redis-server exits at once:\n%s",
                  log_tail("redis.log"));
    for (attempt = 0; attempt < START_ATTEMPTS; attempt++) {
        world.rlockd_port = harness_free_port();
        if (rlockd_spawn())
            break;
    }
    ck_assert_msg(attempt < START_ATTEMPTS, "rlockd exits at once:\n%s",
                  log_tail("rlockd.log"));
    snprintf(world.addr, sizeof world.addr, "%s:%d", LOOPBACK,
             world.rlockd_port);
    n = snprintf(world.unix_addr, sizeof world.unix_addr, "unix:%s/rlockd.sock",
                 world.dir);
    ck_assert(n > 0 && (size_t)n < sizeof world.unix_addr);
}

void harness_start_default(void)
{
    harness_start(NULL);
}

void harness_start_unix_socket(void)
{
    const struct harness_options opts = {.unix_socket = true};

    harness_start(&opts);
}

/* Runs as teardown and at exit, so it reports a daemon that did not stop
 * cleanly (a sanitizer's report, for one) rather than failing. */
void harness_stop(void)
{
    if (world.owner != getpid())
        return;
    if (!stop_process(&world.rlockd_pid))
        fprintf(stderr, "harness: rlockd did not exit cleanly:\n%s\n",
                log_tail("rlockd.log"));
    stop_process(&world.redis_pid);
    remove_tree(world.dir);
    memset(&world, 0, sizeof world);
}

const char *harness_addr(void)
{
    return world.addr;
}

const char *harness_unix_addr(void)
{
    return world.unix_addr;
}
