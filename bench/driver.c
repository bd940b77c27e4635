/*
 * driver.c - the shared driver: what every scenario runs on.
 *
 * Owns: the one error idiom, time and samples, CPU and memory readings
 * of the processes under test, the epoll adapter that multiplexes every
 * hiredis async connection on one thread, the reply checks, and a
 * scenario's life (connect, set up, run, disconnect). It never decides
 * what a scenario measures or prints: that is its family's file.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define CONNECT_TIMEOUT_NS (5 * NS_PER_SEC)
/* How long after the window closes outstanding replies may take before
 * the daemon is declared hung. A contended drain needs one handoff per
 * waiting client, each well under a millisecond when all is well. */
#define DRAIN_TIMEOUT_NS (10 * NS_PER_SEC)
#define MAX_EVENTS 256

/* ---- errors, time, samples ----------------------------------------------- */

/* The one error idiom: anything unexpected ends the run, loudly. */
__attribute__((format(printf, 1, 2), noreturn)) void fatal(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fputs("rlockd-bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size);
    if (p == NULL)
        fatal("out of memory (%zu bytes)", size);
    return p;
}

int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* Sleeps until `deadline` (CLOCK_MONOTONIC, ns). */
void sleep_until(int64_t deadline)
{
    struct timespec ts = {.tv_sec = deadline / NS_PER_SEC,
                          .tv_nsec = deadline % NS_PER_SEC};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void samples_push(struct samples *s, int64_t x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = x;
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

void samples_sort(struct samples *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), compare_int64);
}

/* Nearest-rank percentile of sorted samples, in microseconds; NAN if
 * there are none. */
double samples_percentile_us(const struct samples *s, double pct)
{
    size_t rank;

    if (s->n == 0)
        return NAN;
    rank = (size_t)((pct / 100.0) * (double)s->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return (double)s->v[rank - 1] / 1000.0;
}

void samples_free(struct samples *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* ---- CPU and memory accounting ------------------------------------------- */

/* utime + stime of a process in seconds, from /proc/PID/stat; < 0 if
 * unknown. */
double process_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long utime, stime;
    const char *after_name;
    FILE *f;
    size_t n;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may contain spaces: skip past its ')'. */
    after_name = strrchr(buf, ')');
    if (after_name == NULL)
        return -1;
    if (sscanf(after_name + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
               &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

void cpu_snapshot_take(struct cpu_snapshot *snap, const pid_t *pids)
{
    snap->at = now_ns();
    for (int p = 0; p < PROC_COUNT; p++)
        snap->seconds[p] = process_cpu_seconds(pids[p]);
}

/* Percent of one core each process used between two snapshots. */
void cpu_percent(const struct cpu_snapshot *a, const struct cpu_snapshot *b,
                 double *pct)
{
    double wall = (double)(b->at - a->at) / NS_PER_SEC;

    for (int p = 0; p < PROC_COUNT; p++) {
        bool known = a->seconds[p] >= 0 && b->seconds[p] >= 0 && wall > 0;
        pct[p] = known ? 100.0 * (b->seconds[p] - a->seconds[p]) / wall : -1;
    }
}

/* Resident memory (VmRSS) of a process in KiB, from /proc/PID/status; -1
 * if unknown. */
long process_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* ---- the epoll adapter for hiredis async contexts ------------------------ */

/* Registers with epoll exactly the events hiredis currently wants. */
static void client_arm(struct bench_client *cl)
{
    uint32_t want =
        (cl->want_read ? EPOLLIN : 0) | (cl->want_write ? EPOLLOUT : 0);
    struct epoll_event ev = {.events = want, .data.ptr = cl};
    int op;

    if (want == cl->armed)
        return;
    op = cl->armed == 0 ? EPOLL_CTL_ADD
         : want == 0    ? EPOLL_CTL_DEL
                        : EPOLL_CTL_MOD;
    if (epoll_ctl(cl->sc->epfd, op, cl->ac->c.fd, &ev) != 0)
        fatal("epoll_ctl: %s", strerror(errno));
    cl->armed = want;
}

static void ev_add_read(void *privdata)
{
    struct bench_client *cl = privdata;

    cl->want_read = true;
    client_arm(cl);
}

static void ev_del_read(void *privdata)
{
    struct bench_client *cl = privdata;

    cl->want_read = false;
    client_arm(cl);
}

/* Write interest is only noted here: client_send writes at once, and the
 * loop arms EPOLLOUT only for what is still unwritten after that (a
 * connect in progress, a full socket buffer). Two epoll_ctl calls per
 * request would otherwise dominate the client's own CPU. */
static void ev_add_write(void *privdata)
{
    ((struct bench_client *)privdata)->want_write = true;
}

static void ev_del_write(void *privdata)
{
    ((struct bench_client *)privdata)->want_write = false;
}

/* hiredis is about to free the context: the fd leaves epoll first. */
static void ev_cleanup(void *privdata)
{
    struct bench_client *cl = privdata;

    cl->want_read = cl->want_write = false;
    client_arm(cl);
    cl->ac = NULL;
}

/* A connection's host, or its Unix socket's path (port 0 then). */
static const char *peer_host(const redisContext *c)
{
    return c->connection_type == REDIS_CONN_UNIX ? c->unix_sock.path
                                                 : c->tcp.host;
}

static void bench_on_connect(const redisAsyncContext *ac, int status)
{
    if (status != REDIS_OK)
        fatal("connect to %s:%d: %s", peer_host(&ac->c), ac->c.tcp.port,
              ac->errstr);
}

static void bench_on_disconnect(const redisAsyncContext *ac, int status)
{
    /* REDIS_OK only for our own redisAsyncDisconnect at the end. */
    if (status != REDIS_OK)
        fatal("connection to %s:%d lost: %s", peer_host(&ac->c), ac->c.tcp.port,
              ac->errstr);
}

static void client_connect(struct bench_client *cl, const char *host, int port)
{
    redisAsyncContext *ac =
        port == 0 ? redisAsyncConnectUnix(host) : redisAsyncConnect(host, port);

    if (ac == NULL)
        fatal("connect to %s:%d: out of memory", host, port);
    if (ac->err)
        fatal("connect to %s:%d: %s", host, port, ac->errstr);
    ac->ev.data = cl;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    redisAsyncSetConnectCallback(ac, bench_on_connect);
    redisAsyncSetDisconnectCallback(ac, bench_on_disconnect);
    cl->ac = ac;
}

void client_send(struct bench_client *cl, const struct bench_request *cmd,
                 redisCallbackFn *fn)
{
    if (redisAsyncFormattedCommand(cl->ac, fn, cl, cmd->text,
                                   (size_t)cmd->len) != REDIS_OK)
        fatal("%s: client %d: cannot queue a request: %s", cl->sc->title,
              cl->index, cl->ac->errstr);
    redisAsyncHandleWrite(cl->ac);
}

/* Finishes writes that could not complete at once and arms EPOLLOUT for
 * whatever is still pending. */
static void scenario_flush_writes(struct scenario *sc)
{
    for (int i = 0; i < sc->nclients; i++) {
        struct bench_client *cl = &sc->clients[i];

        if (cl->ac != NULL && cl->want_write)
            redisAsyncHandleWrite(cl->ac);
        if (cl->ac != NULL)
            client_arm(cl);
    }
}

static void dispatch_event(const struct epoll_event *ev)
{
    struct bench_client *cl = ev->data.ptr;

    if (cl->ac != NULL && (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        redisAsyncHandleRead(cl->ac);
    if (cl->ac != NULL && (ev->events & EPOLLOUT))
        redisAsyncHandleWrite(cl->ac);
}

static int clients_waiting(const struct scenario *sc)
{
    int waiting = 0;

    for (int i = 0; i < sc->nclients; i++) {
        const struct bench_client *cl = &sc->clients[i];

        waiting += cl->ac != NULL && cl->ac->replies.head != NULL;
    }
    return waiting;
}

/* Runs the event loop until done(sc); past `deadline` the run is
 * declared stuck. */
void scenario_loop(struct scenario *sc, bool (*done)(const struct scenario *),
                   int64_t deadline, const char *stuck_reason)
{
    struct epoll_event events[MAX_EVENTS];

    while (!done(sc)) {
        int n;

        if (now_ns() > deadline)
            fatal("%s: %s (%d of %d clients still waiting for a reply)",
                  sc->title, stuck_reason, clients_waiting(sc), sc->nclients);
        scenario_flush_writes(sc);
        n = epoll_wait(sc->epfd, events, MAX_EVENTS, 50);
        if (n < 0 && errno != EINTR)
            fatal("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++)
            dispatch_event(&events[i]);
    }
}

/* ---- reply checks -------------------------------------------------------- */

void describe_reply(const redisReply *r, char *buf, size_t size)
{
    if (r == NULL)
        snprintf(buf, size, "no reply (connection closed)");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(buf, size, "error reply -%s", r->str);
    else if (r->type == REDIS_REPLY_STATUS)
        snprintf(buf, size, "+%s", r->str);
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(buf, size, ":%lld", r->integer);
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(buf, size, "nil");
    else if (r->type == REDIS_REPLY_STRING)
        snprintf(buf, size, "bulk \"%.60s\"", r->str);
    else
        snprintf(buf, size, "array of %zu", r->elements);
}

void unexpected_reply(const struct bench_client *cl, const char *what,
                      const redisReply *r, const char *expected)
{
    char got[160];

    if (r == NULL && cl->ac != NULL && cl->ac->err)
        snprintf(got, sizeof(got), "no reply (%s)", cl->ac->errstr);
    else
        describe_reply(r, got, sizeof(got));
    fatal("%s: client %d: %s %s: got %s, expected %s", cl->sc->title, cl->index,
          what, cl->name, got, expected);
}

void expect_status(const struct bench_client *cl, const char *what,
                   const redisReply *r, const char *status)
{
    if (r == NULL || r->type != REDIS_REPLY_STATUS ||
        strcmp(r->str, status) != 0)
        unexpected_reply(cl, what, r, status);
}

void expect_integer(const struct bench_client *cl, const char *what,
                    const redisReply *r, long long value)
{
    char expected[32];

    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == value)
        return;
    snprintf(expected, sizeof(expected), ":%lld", value);
    unexpected_reply(cl, what, r, expected);
}

void expect_nil(const struct bench_client *cl, const char *what,
                const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_NIL)
        unexpected_reply(cl, what, r, "nil (acquired)");
}

bool is_token(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
}

/* ---- a scenario: its requests, names, set-up and run --------------------- */

void format_argv(struct bench_request *cmd, int argc, const char **argv)
{
    redisFreeCommand(cmd->text);
    cmd->len = redisFormatCommandArgv(&cmd->text, argc, argv, NULL);
    if (cmd->len < 0)
        fatal("cannot format a request: out of memory");
}

/* How many names a scenario's clients use: clients [0, n) each own
 * one. */
int scenario_names(const struct scenario *sc)
{
    return sc->mode != UNCONTENDED ? 1 : sc->nclients;
}

/* Clients of an uncontended scenario each have their own lock name; the
 * others share one. */
void client_name(struct bench_client *cl, int scenario_no)
{
    if (cl->sc->mode != UNCONTENDED)
        snprintf(cl->name, sizeof(cl->name), "rlockd-bench:%d:%d:shared",
                 (int)getpid(), scenario_no);
    else
        snprintf(cl->name, sizeof(cl->name), "rlockd-bench:%d:%d:%d",
                 (int)getpid(), scenario_no, cl->index);
}

static void on_ping(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct bench_client *cl = privdata;

    (void)ac;
    expect_status(cl, "PING", reply, "PONG");
    cl->sc->pinged++;
}

static bool all_pinged(const struct scenario *sc)
{
    return sc->pinged == sc->nclients;
}

static void on_set_up(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct bench_client *cl = privdata;

    (void)ac;
    expect_integer(cl,
                   cl->sc->target == TARGET_DIRECT ? "set-up script on"
                                                   : cl->kind->set_up_verb,
                   reply, 1);
    cl->sc->set_up_left--;
}

static bool all_set_up(const struct scenario *sc)
{
    return sc->set_up_left == 0;
}

/* Gives each name its permits (a kind with a set-up: the semaphore),
 * through the client that owns it, before anything is timed. */
static void scenario_set_up(struct scenario *sc)
{
    struct bench_request cmd = {NULL, 0};

    if (sc->kind->set_up == NULL || sc->held)
        return;
    sc->set_up_left = scenario_names(sc);
    for (int i = 0; i < scenario_names(sc); i++) {
        set_up_format(&sc->clients[i], &cmd);
        client_send(&sc->clients[i], &cmd, on_set_up);
    }
    redisFreeCommand(cmd.text);
    scenario_loop(sc, all_set_up, now_ns() + CONNECT_TIMEOUT_NS,
                  "the set-up was not answered within 5 s");
}

static bool all_finished(const struct scenario *sc)
{
    return sc->running == 0;
}

/* Where a scenario's clients connect: Redis, rlockd (port 0: host is
 * its Unix socket's path), or the rlockd that the held-locks scenario
 * uses (by default the same one). */
static void scenario_address(const struct scenario *sc, const char **host,
                             int *port)
{
    if (sc->target == TARGET_DIRECT) {
        *host = bench_opt.redis_host;
        *port = bench_opt.redis_port;
    } else if (sc->held) {
        *host = bench_opt.held_rlockd_host;
        *port = bench_opt.held_rlockd_port;
    } else if (bench_opt.rlockd_unix != NULL) {
        *host = bench_opt.rlockd_unix;
        *port = 0;
    } else {
        *host = bench_opt.rlockd_host;
        *port = bench_opt.rlockd_port;
    }
}

/* Opens every connection and waits for a PING through each, so that
 * connecting is not part of the measurement. Held-locks connections send
 * requests of their own (held_send), not a prepared pair. */
void scenario_connect(struct scenario *sc, int scenario_no)
{
    static const struct bench_request ping = {"*1\r\n$4\r\nPING\r\n", 14};
    const char *host;
    int port;

    scenario_address(sc, &host, &port);
    sc->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sc->epfd < 0)
        fatal("epoll_create1: %s", strerror(errno));
    sc->clients = xrealloc(NULL, (size_t)sc->nclients * sizeof(*sc->clients));
    memset(sc->clients, 0, (size_t)sc->nclients * sizeof(*sc->clients));
    for (int i = 0; i < sc->nclients; i++) {
        struct bench_client *cl = &sc->clients[i];

        cl->sc = sc;
        cl->index = i;
        if (!sc->held) {
            client_name(cl, scenario_no);
            client_prepare(cl);
        }
        client_connect(cl, host, port);
        client_send(cl, &ping, on_ping);
    }
    scenario_loop(sc, all_pinged, now_ns() + CONNECT_TIMEOUT_NS,
                  "connections did not answer PING within 5 s");
    scenario_set_up(sc);
}

void scenario_disconnect(struct scenario *sc)
{
    for (int i = 0; i < sc->nclients; i++) {
        struct bench_client *cl = &sc->clients[i];

        if (cl->ac != NULL)
            redisAsyncDisconnect(cl->ac); /* nothing pending: frees at once */
        redisFreeCommand(cl->acquire.text);
        redisFreeCommand(cl->release.text);
    }
    close(sc->epfd);
}

/* Runs the warm-up, the window and the drain. Redis's counters are read
 * around all three, not just the window: a pair that straddles the
 * window's edges costs Redis all the same, and the clients are idle
 * before the first request and after the last reply, so the whole run
 * counts every pair's work exactly once (sc->completed). Each INFO is
 * sent outside the CPU readings, so its own cost is left out. */
void scenario_run(struct scenario *sc, int scenario_no)
{
    struct cpu_snapshot before, after;
    struct command_calls calls_before, calls_after;
    int64_t duration_ns = (int64_t)(bench_opt.duration_s * NS_PER_SEC);

    scenario_connect(sc, scenario_no);
    redis_command_calls(&calls_before);
    cpu_snapshot_take(&before, bench_opt.pids);
    sc->window_start = before.at + (int64_t)(bench_opt.warmup_s * NS_PER_SEC);
    sc->window_end = sc->window_start + duration_ns;
    sc->running = sc->nclients;
    for (int i = 0; i < sc->nclients; i++)
        start_pair(&sc->clients[i]);
    scenario_loop(
        sc, all_finished, sc->window_end + DRAIN_TIMEOUT_NS,
        "requests still unanswered 10 s after the run ended (daemon hung?)");
    cpu_snapshot_take(&after, bench_opt.pids);
    redis_command_calls(&calls_after);
    cpu_percent(&before, &after, sc->cpu_pct);
    redis_cost_between(&before, &after, &calls_before, &calls_after,
                       &sc->redis);
    samples_sort(&sc->pair_ns);
    samples_sort(&sc->acquire_ns);
    samples_sort(&sc->writer_wait_ns);
    if (sc->mode == HANDOFF)
        contended_summarize(sc);
    scenario_disconnect(sc);
    sc->ran = true;
}
