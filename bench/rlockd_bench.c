/*
 * rlockd_bench.c - the load generator behind `make bench`.
 *
 * Owns: the benchmark scenarios, how they are measured, and the report.
 * It compares lock+unlock pairs through rlockd with the same pairs sent
 * straight to Redis as Redisson's own Lua scripts (EVALSHA), with 1 and
 * with many concurrent clients, and measures the contended case (many
 * clients, one lock name, through rlockd).
 *
 * How it drives load: every simulated client is its own hiredis async
 * connection running a closed loop (send, wait for the reply, send the
 * next request), and all of them are multiplexed by ONE thread through
 * the small epoll adapter below. One thread rather than one per client
 * because on a 2-core machine 64 blocked threads would cost a context
 * switch per reply and take the CPU that Redis and rlockd need, which
 * would measure the scheduler, not the daemon (redis-benchmark is built
 * the same way). The thread's own CPU use is reported next to the figures.
 *
 * How it measures: each scenario runs a warm-up, then a window of
 * --duration seconds. Throughput is the operations completed inside the
 * window divided by the window's length; latencies are every sample
 * completed inside the window, sorted, nearest-rank percentiles. All
 * timestamps come from CLOCK_MONOTONIC.
 *
 * It never fails on a timing: targets are printed as met or missed and
 * the exit status stays 0. It exits non-zero only when something is
 * wrong: an error reply (e.g. -UNAVAILABLE), an unexpected reply, a lost
 * connection, requests left unanswered long after the window closed, or
 * a lock key that rlockd reported released but Redis still holds.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <async.h>
#include <hiredis.h>

#define NS_PER_SEC 1000000000LL
#define CONNECT_TIMEOUT_NS (5 * NS_PER_SEC)
/* How long after the window closes outstanding replies may take before
 * the daemon is declared hung. A contended drain needs one handoff per
 * waiting client, each well under a millisecond when all is well. */
#define DRAIN_TIMEOUT_NS (10 * NS_PER_SEC)
#define MAX_CLIENTS 10000
#define MAX_EVENTS 256
/* The TTL both sides write: rlockd's watchdog_timeout_ms default, and the
 * lease Redisson passes in watchdog mode. */
#define LEASE_MS "30000"

/* Redisson's RLock scripts (RedissonLock.tryLockInnerAsync and
 * unlockInnerAsync), the reference rlockd is measured against. */
static const char ACQUIRE_SCRIPT[] =
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);";

static const char RELEASE_SCRIPT[] =
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;";

enum target { TARGET_DIRECT, TARGET_RLOCKD };

/* Processes whose CPU use is reported; pid <= 0 means unknown. */
enum proc { PROC_BENCH, PROC_REDIS, PROC_RLOCKD, PROC_COUNT };

struct options {
    char *redis_host;
    int redis_port;
    char *rlockd_host;
    int rlockd_port;
    double duration_s;
    double warmup_s;
    int clients;
    int contended_clients;
    bool direct_only;
    pid_t pids[PROC_COUNT];
};

/* A growable array of nanosecond values (or client indexes). */
struct samples {
    int64_t *v;
    size_t n;
    size_t cap;
};

/* A request formatted once and sent many times, so the client's own CPU
 * goes to sockets, not to printf-style formatting. */
struct command {
    char *text;
    int len;
};

struct scenario;

struct client {
    struct scenario *sc;
    redisAsyncContext *ac; /* NULL once hiredis has freed it */
    int index;
    uint32_t armed; /* epoll events registered for ac's fd */
    bool want_read;
    bool want_write;
    char name[128];
    struct command acquire;
    struct command release;
    int64_t pair_started;
    size_t generation;     /* contended: index of this client's hold */
    uint64_t acquisitions; /* contended: grants inside the window */
};

struct scenario {
    const char *title;
    enum target target;
    bool contended;
    int nclients;
    bool ran;
    /* run state */
    int epfd;
    struct client *clients;
    int pinged;
    int running;
    int64_t window_start;
    int64_t window_end;
    /* results */
    uint64_t ops;           /* pairs (contended: grants) in the window */
    struct samples pair_ns; /* LOCK sent -> UNLOCK reply */
    double cpu_pct[PROC_COUNT];
    /* contended: one entry per hold, indexed by generation (see
     * contended_granted for why not a single shared variable) */
    struct samples grant_at;
    struct samples granted_to;
    struct samples unlock_reply_at;
    struct samples handoff_ns;
    uint64_t regrants; /* next grant went to the client that unlocked */
};

static struct options opt = {
    .redis_port = 6379,
    .rlockd_port = 7379,
    .duration_s = 3.0,
    .warmup_s = 0.5,
    .clients = 64,
    .contended_clients = 20,
};
static char acquire_sha[64];
static char release_sha[64];
static char owner_uuid[40]; /* the direct clients' Redisson-style UUID */

/* ---- errors, time, samples --------------------------------------------- */

/* The one error idiom: anything unexpected ends the run, loudly. */
__attribute__((format(printf, 1, 2), noreturn)) static void
fatal(const char *fmt, ...)
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

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static void samples_push(struct samples *s, int64_t x)
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

static void samples_sort(struct samples *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), compare_int64);
}

/* Nearest-rank percentile of sorted samples, in microseconds; NAN if
 * there are none. */
static double samples_percentile_us(const struct samples *s, double pct)
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

static void samples_free(struct samples *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* ---- CPU accounting ----------------------------------------------------- */

/* utime + stime of a process in seconds, from /proc/PID/stat; < 0 if
 * unknown. */
static double process_cpu_seconds(pid_t pid)
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

struct cpu_snapshot {
    int64_t at;
    double seconds[PROC_COUNT];
};

static void cpu_snapshot_take(struct cpu_snapshot *snap)
{
    snap->at = now_ns();
    for (int p = 0; p < PROC_COUNT; p++)
        snap->seconds[p] = process_cpu_seconds(opt.pids[p]);
}

/* Percent of one core each process used between two snapshots. */
static void cpu_percent(const struct cpu_snapshot *a,
                        const struct cpu_snapshot *b, double *pct)
{
    double wall = (double)(b->at - a->at) / NS_PER_SEC;

    for (int p = 0; p < PROC_COUNT; p++) {
        bool known = a->seconds[p] >= 0 && b->seconds[p] >= 0 && wall > 0;
        pct[p] = known ? 100.0 * (b->seconds[p] - a->seconds[p]) / wall : -1;
    }
}

/* ---- the epoll adapter for hiredis async contexts ----------------------- */

/* Registers with epoll exactly the events hiredis currently wants. */
static void client_arm(struct client *cl)
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
    struct client *cl = privdata;

    cl->want_read = true;
    client_arm(cl);
}

static void ev_del_read(void *privdata)
{
    struct client *cl = privdata;

    cl->want_read = false;
    client_arm(cl);
}

/* Write interest is only noted here: client_send writes at once, and the
 * loop arms EPOLLOUT only for what is still unwritten after that (a
 * connect in progress, a full socket buffer). Two epoll_ctl calls per
 * request would otherwise dominate the client's own CPU. */
static void ev_add_write(void *privdata)
{
    ((struct client *)privdata)->want_write = true;
}

static void ev_del_write(void *privdata)
{
    ((struct client *)privdata)->want_write = false;
}

/* hiredis is about to free the context: the fd leaves epoll first. */
static void ev_cleanup(void *privdata)
{
    struct client *cl = privdata;

    cl->want_read = cl->want_write = false;
    client_arm(cl);
    cl->ac = NULL;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    if (status != REDIS_OK)
        fatal("connect to %s:%d: %s", ac->c.tcp.host, ac->c.tcp.port,
              ac->errstr);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    /* REDIS_OK only for our own redisAsyncDisconnect at the end. */
    if (status != REDIS_OK)
        fatal("connection to %s:%d lost: %s", ac->c.tcp.host, ac->c.tcp.port,
              ac->errstr);
}

static void client_connect(struct client *cl, const char *host, int port)
{
    redisAsyncContext *ac = redisAsyncConnect(host, port);

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
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    cl->ac = ac;
}

static void client_send(struct client *cl, const struct command *cmd,
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
        struct client *cl = &sc->clients[i];

        if (cl->ac != NULL && cl->want_write)
            redisAsyncHandleWrite(cl->ac);
        if (cl->ac != NULL)
            client_arm(cl);
    }
}

static void dispatch_event(const struct epoll_event *ev)
{
    struct client *cl = ev->data.ptr;

    if (cl->ac != NULL && (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        redisAsyncHandleRead(cl->ac);
    if (cl->ac != NULL && (ev->events & EPOLLOUT))
        redisAsyncHandleWrite(cl->ac);
}

static int clients_waiting(const struct scenario *sc)
{
    int waiting = 0;

    for (int i = 0; i < sc->nclients; i++) {
        const struct client *cl = &sc->clients[i];

        waiting += cl->ac != NULL && cl->ac->replies.head != NULL;
    }
    return waiting;
}

/* Runs the event loop until done(sc); past `deadline` the run is
 * declared stuck. */
static void scenario_loop(struct scenario *sc,
                          bool (*done)(const struct scenario *),
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

/* ---- reply checks ------------------------------------------------------- */

static void describe_reply(const redisReply *r, char *buf, size_t size)
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

static void unexpected_reply(const struct client *cl, const char *what,
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

static void expect_status(const struct client *cl, const char *what,
                          const redisReply *r, const char *status)
{
    if (r == NULL || r->type != REDIS_REPLY_STATUS ||
        strcmp(r->str, status) != 0)
        unexpected_reply(cl, what, r, status);
}

static void expect_integer(const struct client *cl, const char *what,
                           const redisReply *r, long long value)
{
    char expected[32];

    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == value)
        return;
    snprintf(expected, sizeof(expected), ":%lld", value);
    unexpected_reply(cl, what, r, expected);
}

static void expect_nil(const struct client *cl, const char *what,
                       const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_NIL)
        unexpected_reply(cl, what, r, "nil (acquired)");
}

/* ---- the lock+unlock loop ---------------------------------------------- */

static bool in_window(const struct scenario *sc, int64_t t)
{
    return t >= sc->window_start && t < sc->window_end;
}

static void on_acquired(redisAsyncContext *ac, void *reply, void *privdata);
static void on_released(redisAsyncContext *ac, void *reply, void *privdata);

static void start_pair(struct client *cl)
{
    cl->pair_started = now_ns();
    client_send(cl, &cl->acquire, on_acquired);
}

/*
 * Records one grant of the contended lock. The handoff is the time from
 * the previous holder's UNLOCK reply to this grant, but this grant can be
 * processed before that reply (both are in flight together), so a single
 * "last unlock" variable would pair it with the wrong unlock. Each hold
 * gets a generation number instead, and handoffs are computed after the
 * run from grant_at[g] - unlock_reply_at[g - 1]. Generations are ordered
 * because rlockd grants the next hold only after the previous UNLOCK.
 */
static void contended_granted(struct client *cl, int64_t now)
{
    struct scenario *sc = cl->sc;

    cl->generation = sc->grant_at.n;
    samples_push(&sc->grant_at, now);
    samples_push(&sc->granted_to, cl->index);
    samples_push(&sc->unlock_reply_at, 0);
    if (in_window(sc, now)) {
        sc->ops++;
        cl->acquisitions++;
    }
}

static void on_acquired(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;
    int64_t now = now_ns();

    (void)ac;
    if (cl->sc->target == TARGET_DIRECT)
        expect_nil(cl, "acquire script on", reply);
    else
        expect_status(cl, "LOCK", reply, "OK");
    if (cl->sc->contended)
        contended_granted(cl, now);
    client_send(cl, &cl->release, on_released);
}

static void on_released(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;
    struct scenario *sc = cl->sc;
    int64_t now = now_ns();

    (void)ac;
    expect_integer(cl,
                   sc->target == TARGET_DIRECT ? "release script on" : "UNLOCK",
                   reply, 1);
    if (sc->contended) {
        sc->unlock_reply_at.v[cl->generation] = now;
    } else if (in_window(sc, now)) {
        sc->ops++;
    }
    if (in_window(sc, now))
        samples_push(&sc->pair_ns, now - cl->pair_started);
    if (now >= sc->window_end) {
        sc->running--;
        return;
    }
    start_pair(cl);
}

/* ---- scenario set-up and run -------------------------------------------- */

static void format_command(struct command *cmd, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cmd->len = redisvFormatCommand(&cmd->text, fmt, ap);
    va_end(ap);
    if (cmd->len < 0)
        fatal("cannot format a request: out of memory");
}

/* Each client's two requests. Uncontended clients each have their own
 * lock name; contended ones share one. The thread id is the client's
 * index + 1; direct clients use one UUID, like the threads of one JVM. */
static void client_prepare(struct client *cl, int scenario_no)
{
    const struct scenario *sc = cl->sc;
    char tid[16], field[64], channel[192];

    if (sc->contended)
        snprintf(cl->name, sizeof(cl->name), "rlockd-bench:%d:%d:shared",
                 (int)getpid(), scenario_no);
    else
        snprintf(cl->name, sizeof(cl->name), "rlockd-bench:%d:%d:%d",
                 (int)getpid(), scenario_no, cl->index);
    snprintf(tid, sizeof(tid), "%d", cl->index + 1);
    if (sc->target == TARGET_RLOCKD) {
        format_command(&cl->acquire, "LOCK %s %s", cl->name, tid);
        format_command(&cl->release, "UNLOCK %s %s", cl->name, tid);
        return;
    }
    snprintf(field, sizeof(field), "%s:%s", owner_uuid, tid);
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", cl->name);
    format_command(&cl->acquire, "EVALSHA %s 1 %s %s %s", acquire_sha, cl->name,
                   LEASE_MS, field);
    format_command(&cl->release, "EVALSHA %s 2 %s %s 0 %s %s", release_sha,
                   cl->name, channel, LEASE_MS, field);
}

static void on_ping(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;

    (void)ac;
    expect_status(cl, "PING", reply, "PONG");
    cl->sc->pinged++;
}

static bool all_pinged(const struct scenario *sc)
{
    return sc->pinged == sc->nclients;
}

static bool all_finished(const struct scenario *sc)
{
    return sc->running == 0;
}

/* Opens every connection and waits for a PING through each, so that
 * connecting is not part of the measurement. */
static void scenario_connect(struct scenario *sc, int scenario_no)
{
    static const struct command ping = {"*1\r\n$4\r\nPING\r\n", 14};
    const char *host =
        sc->target == TARGET_DIRECT ? opt.redis_host : opt.rlockd_host;
    int port = sc->target == TARGET_DIRECT ? opt.redis_port : opt.rlockd_port;

    sc->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sc->epfd < 0)
        fatal("epoll_create1: %s", strerror(errno));
    sc->clients = xrealloc(NULL, (size_t)sc->nclients * sizeof(*sc->clients));
    memset(sc->clients, 0, (size_t)sc->nclients * sizeof(*sc->clients));
    for (int i = 0; i < sc->nclients; i++) {
        struct client *cl = &sc->clients[i];

        cl->sc = sc;
        cl->index = i;
        client_prepare(cl, scenario_no);
        client_connect(cl, host, port);
        client_send(cl, &ping, on_ping);
    }
    scenario_loop(sc, all_pinged, now_ns() + CONNECT_TIMEOUT_NS,
                  "connections did not answer PING within 5 s");
}

static void scenario_disconnect(struct scenario *sc)
{
    for (int i = 0; i < sc->nclients; i++) {
        struct client *cl = &sc->clients[i];

        if (cl->ac != NULL)
            redisAsyncDisconnect(cl->ac); /* nothing pending: frees at once */
        redisFreeCommand(cl->acquire.text);
        redisFreeCommand(cl->release.text);
    }
    close(sc->epfd);
}

/* Handoffs to another client, from the per-generation log. */
static void contended_summarize(struct scenario *sc)
{
    for (size_t g = 1; g < sc->grant_at.n; g++) {
        if (!in_window(sc, sc->grant_at.v[g]))
            continue;
        if (sc->granted_to.v[g] == sc->granted_to.v[g - 1]) {
            sc->regrants++;
            continue;
        }
        samples_push(&sc->handoff_ns,
                     sc->grant_at.v[g] - sc->unlock_reply_at.v[g - 1]);
    }
    samples_sort(&sc->handoff_ns);
}

static void scenario_run(struct scenario *sc, int scenario_no)
{
    struct cpu_snapshot before, after;
    int64_t duration_ns = (int64_t)(opt.duration_s * NS_PER_SEC);

    scenario_connect(sc, scenario_no);
    cpu_snapshot_take(&before);
    sc->window_start = before.at + (int64_t)(opt.warmup_s * NS_PER_SEC);
    sc->window_end = sc->window_start + duration_ns;
    sc->running = sc->nclients;
    for (int i = 0; i < sc->nclients; i++)
        start_pair(&sc->clients[i]);
    scenario_loop(
        sc, all_finished, sc->window_end + DRAIN_TIMEOUT_NS,
        "requests still unanswered 10 s after the run ended (daemon hung?)");
    cpu_snapshot_take(&after);
    cpu_percent(&before, &after, sc->cpu_pct);
    samples_sort(&sc->pair_ns);
    if (sc->contended)
        contended_summarize(sc);
    scenario_disconnect(sc);
    sc->ran = true;
}

/* ---- Redis-side set-up and checks (one synchronous connection) -------- */

static redisContext *redis_sync;

static redisReply *redis_sync_command(const char *fmt, ...)
{
    redisReply *r;
    va_list ap;
    char got[160];

    va_start(ap, fmt);
    r = redisvCommand(redis_sync, fmt, ap);
    va_end(ap);
    if (r == NULL)
        fatal("redis %s:%d: %s", opt.redis_host, opt.redis_port,
              redis_sync->errstr);
    if (r->type == REDIS_REPLY_ERROR) {
        describe_reply(r, got, sizeof(got));
        fatal("redis %s:%d: %s", opt.redis_host, opt.redis_port, got);
    }
    return r;
}

static void load_script(const char *script, char *sha, size_t size)
{
    redisReply *r = redis_sync_command("SCRIPT LOAD %s", script);

    if (r->type != REDIS_REPLY_STRING)
        fatal("SCRIPT LOAD: unexpected reply type %d", r->type);
    snprintf(sha, size, "%s", r->str);
    freeReplyObject(r);
}

static void redis_setup(void)
{
    unsigned char b[16];

    redis_sync = redisConnect(opt.redis_host, opt.redis_port);
    if (redis_sync == NULL || redis_sync->err)
        fatal("connect to redis %s:%d: %s", opt.redis_host, opt.redis_port,
              redis_sync ? redis_sync->errstr : "out of memory");
    load_script(ACQUIRE_SCRIPT, acquire_sha, sizeof(acquire_sha));
    load_script(RELEASE_SCRIPT, release_sha, sizeof(release_sha));
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        fatal("getrandom: %s", strerror(errno));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(
        owner_uuid, sizeof(owner_uuid),
        "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
        b[11], b[12], b[13], b[14], b[15]);
}

/* Every pair ended with a release that reported the key deleted, so no
 * lock key of a finished scenario may remain in Redis. Returns how many
 * do. */
static int count_leftover_locks(const struct scenario *sc)
{
    int leftover = 0;
    int names = sc->contended ? 1 : sc->nclients;

    for (int i = 0; i < names; i++) {
        redisReply *r = redis_sync_command("EXISTS %s", sc->clients[i].name);

        if (r->type == REDIS_REPLY_INTEGER && r->integer != 0) {
            fprintf(stderr,
                    "rlockd-bench: %s: %s still in Redis after "
                    "its release\n",
                    sc->title, sc->clients[i].name);
            leftover++;
        }
        freeReplyObject(r);
    }
    return leftover;
}

/* ---- report ------------------------------------------------------------- */

static double per_second(const struct scenario *sc)
{
    return (double)sc->ops / opt.duration_s;
}

static double p50_us(const struct samples *s)
{
    return samples_percentile_us(s, 50);
}

static double p99_us(const struct samples *s)
{
    return samples_percentile_us(s, 99);
}

static void format_cpu(const struct scenario *sc, char *buf, size_t size)
{
    size_t used = 0;

    for (int p = 0; p < PROC_COUNT && used < size; p++) {
        const char *sep = p ? "/" : "";

        if (sc->cpu_pct[p] < 0)
            used += (size_t)snprintf(buf + used, size - used, "%s-", sep);
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%.0f", sep,
                                     sc->cpu_pct[p]);
    }
}

static void print_table(const struct scenario *scs, int count)
{
    printf("\n%-32s %7s %10s %9s %9s  %s\n", "scenario", "clients", "ops/s",
           "p50 us", "p99 us", "CPU% bench/redis/rlockd");
    for (int i = 0; i < count; i++) {
        const struct scenario *sc = &scs[i];
        char cpu[48];

        if (!sc->ran)
            continue;
        format_cpu(sc, cpu, sizeof(cpu));
        printf("%-32s %7d %10.0f %9.1f %9.1f  %s\n", sc->title, sc->nclients,
               per_second(sc), p50_us(&sc->pair_ns), p99_us(&sc->pair_ns), cpu);
    }
    printf("ops: lock+unlock pairs (contended: acquisitions). Latency: LOCK\n"
           "sent to UNLOCK reply. CPU: %% of one core during the scenario.\n");
}

static void print_contended(const struct scenario *sc)
{
    uint64_t min = UINT64_MAX, max = 0;
    const struct samples *h = &sc->handoff_ns;

    for (int i = 0; i < sc->nclients; i++) {
        uint64_t a = sc->clients[i].acquisitions;

        min = a < min ? a : min;
        max = a > max ? a : max;
    }
    printf("\ncontended: %d clients on one lock through rlockd\n",
           sc->nclients);
    printf("  acquisitions/s            %.0f\n", per_second(sc));
    printf("  handoff, UNLOCK reply to the next client's +OK:\n"
           "                            p50 %.1f us, p99 %.1f us "
           "(min %.1f, max %.1f; %zu handoffs)\n",
           p50_us(h), p99_us(h), samples_percentile_us(h, 0),
           samples_percentile_us(h, 100), h->n);
    printf("  re-acquired at once by the client that had unlocked: %llu\n",
           (unsigned long long)sc->regrants);
    printf("  acquisitions per client   min %llu, max %llu\n",
           (unsigned long long)min, (unsigned long long)max);
}

/* The two targets of the spec, computed once for both printouts. */
struct comparison {
    double tput_ratio; /* many clients: rlockd / direct pairs/s */
    double p50_ratio;  /* 1 client: rlockd / direct p50 */
    bool tput_met;
    bool p50_met;
};

static struct comparison compare(const struct scenario *scs)
{
    struct comparison cmp;

    cmp.tput_ratio = per_second(&scs[3]) / per_second(&scs[2]);
    cmp.p50_ratio = p50_us(&scs[1].pair_ns) / p50_us(&scs[0].pair_ns);
    cmp.tput_met = cmp.tput_ratio >= 0.7;
    cmp.p50_met = cmp.p50_ratio <= 2.0;
    return cmp;
}

static void print_targets(const struct comparison *cmp)
{
    printf("\ntargets (reported, not enforced):\n");
    printf("  %d clients: rlockd/direct pairs/s = %.2fx "
           "(target >= 0.70x)  %s\n",
           opt.clients, cmp->tput_ratio, cmp->tput_met ? "MET" : "MISSED");
    printf("  1 client:   rlockd/direct p50     = %.2fx "
           "(target <= 2.00x)  %s\n",
           cmp->p50_ratio, cmp->p50_met ? "MET" : "MISSED");
}

static void print_markdown_row(const struct scenario *sc, const char *what)
{
    printf("| %s | %d | %.0f | %.0f µs | %.0f µs |\n", what, sc->nclients,
           per_second(sc), p50_us(&sc->pair_ns), p99_us(&sc->pair_ns));
}

/* scs: direct 1, rlockd 1, direct N, rlockd N, contended. */
static void print_markdown(const struct scenario *scs,
                           const struct comparison *cmp)
{
    static const char direct[] = "Redis direct (Redisson scripts, EVALSHA)";
    const struct scenario *con = &scs[4];

    printf("\n---- markdown ----\n");
    printf("Measured with `make bench`: %.0f s per scenario, %ld CPUs, "
           "Redis and rlockd on loopback, closed-loop clients.\n\n",
           opt.duration_s, sysconf(_SC_NPROCESSORS_ONLN));
    printf("| Lock+unlock pairs | Clients | Pairs/s | p50 | p99 |\n");
    printf("|---|---:|---:|---:|---:|\n");
    print_markdown_row(&scs[0], direct);
    print_markdown_row(&scs[1], "through rlockd");
    print_markdown_row(&scs[2], direct);
    print_markdown_row(&scs[3], "through rlockd");
    printf("\n- %d clients: rlockd sustains %.2fx the pairs/s of direct "
           "Redis (target >= 0.7x: %s).\n",
           opt.clients, cmp->tput_ratio, cmp->tput_met ? "met" : "missed");
    printf("- 1 client: rlockd's p50 is %.2fx direct (target <= 2x: %s).\n",
           cmp->p50_ratio, cmp->p50_met ? "met" : "missed");
    printf("- Contended, %d clients on one lock: %.0f acquisitions/s; "
           "handoff from an UNLOCK reply to the next client's grant: "
           "p50 %.0f µs, p99 %.0f µs.\n",
           con->nclients, per_second(con), p50_us(&con->handoff_ns),
           p99_us(&con->handoff_ns));
    printf("---- end ----\n");
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rlockd-bench [options]\n"
            "  -r, --redis HOST:PORT  Redis (default 127.0.0.1:6379)\n"
            "  -l, --rlockd HOST:PORT rlockd (default 127.0.0.1:7379)\n"
            "  -d, --duration SEC     measured time per scenario (3)\n"
            "  -w, --warmup SEC       unmeasured time before each (0.5)\n"
            "  -c, --clients N        clients of the many-clients case (64)\n"
            "  -C, --contended N      clients on the contended lock (20)\n"
            "      --redis-pid PID    report this Redis's CPU use\n"
            "      --rlockd-pid PID   report this rlockd's CPU use\n"
            "      --direct-only      Redis direct scenarios only\n"
            "  -h, --help\n");
}

static void parse_address(const char *arg, char **host, int *port)
{
    const char *colon = strrchr(arg, ':');
    char *end;
    long p;

    if (colon == NULL || colon == arg)
        fatal("bad address '%s': expected HOST:PORT", arg);
    p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
        fatal("bad port in '%s'", arg);
    free(*host);
    *host = strndup(arg, (size_t)(colon - arg));
    *port = (int)p;
}

static double parse_seconds(const char *arg, const char *what, double min)
{
    char *end;
    double v = strtod(arg, &end);

    if (*end != '\0' || !(v >= min && v <= 3600))
        fatal("bad %s '%s': expected seconds in [%g, 3600]", what, arg, min);
    return v;
}

static long parse_integer(const char *arg, const char *what, long min, long max)
{
    char *end;
    long v = strtol(arg, &end, 10);

    if (*end != '\0' || end == arg || v < min || v > max)
        fatal("bad %s '%s': expected an integer in [%ld, %ld]", what, arg, min,
              max);
    return v;
}

enum { OPT_REDIS_PID = 256, OPT_RLOCKD_PID, OPT_DIRECT_ONLY };

static const struct option long_options[] = {
    {"redis", required_argument, NULL, 'r'},
    {"rlockd", required_argument, NULL, 'l'},
    {"duration", required_argument, NULL, 'd'},
    {"warmup", required_argument, NULL, 'w'},
    {"clients", required_argument, NULL, 'c'},
    {"contended", required_argument, NULL, 'C'},
    {"redis-pid", required_argument, NULL, OPT_REDIS_PID},
    {"rlockd-pid", required_argument, NULL, OPT_RLOCKD_PID},
    {"direct-only", no_argument, NULL, OPT_DIRECT_ONLY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void parse_option(int c, const char *arg)
{
    switch (c) {
    case 'r':
        parse_address(arg, &opt.redis_host, &opt.redis_port);
        break;
    case 'l':
        parse_address(arg, &opt.rlockd_host, &opt.rlockd_port);
        break;
    case 'd':
        opt.duration_s = parse_seconds(arg, "duration", 0.1);
        break;
    case 'w':
        opt.warmup_s = parse_seconds(arg, "warm-up", 0);
        break;
    case 'c':
        opt.clients = (int)parse_integer(arg, "clients", 1, MAX_CLIENTS);
        break;
    case 'C':
        opt.contended_clients =
            (int)parse_integer(arg, "contended", 2, MAX_CLIENTS);
        break;
    case OPT_REDIS_PID:
        opt.pids[PROC_REDIS] = (pid_t)parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case OPT_RLOCKD_PID:
        opt.pids[PROC_RLOCKD] = (pid_t)parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case OPT_DIRECT_ONLY:
        opt.direct_only = true;
        break;
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        exit(2);
    }
}

static void parse_options(int argc, char **argv)
{
    int c;

    opt.redis_host = strdup("127.0.0.1");
    opt.rlockd_host = strdup("127.0.0.1");
    if (opt.redis_host == NULL || opt.rlockd_host == NULL)
        fatal("out of memory");
    while ((c = getopt_long(argc, argv, "r:l:d:w:c:C:h", long_options, NULL)) !=
           -1)
        parse_option(c, optarg);
    if (optind != argc) {
        usage(stderr);
        exit(2);
    }
    opt.pids[PROC_BENCH] = getpid();
}

/* ---- main --------------------------------------------------------------- */

/* Runs every scenario the options ask for; returns how many lock keys
 * were left behind in Redis. */
static int run_scenarios(struct scenario *scs, int count)
{
    int leftover = 0;

    printf("rlockd-bench: redis %s:%d, rlockd %s:%d; %.1f s measured per "
           "scenario after %.1f s warm-up; %ld CPUs\n",
           opt.redis_host, opt.redis_port, opt.rlockd_host, opt.rlockd_port,
           opt.duration_s, opt.warmup_s, sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
    for (int i = 0; i < count; i++) {
        struct scenario *sc = &scs[i];

        if (opt.direct_only && sc->target == TARGET_RLOCKD)
            continue;
        fprintf(stderr, "[%d/%d] %s, %d client%s ...\n", i + 1, count,
                sc->title, sc->nclients, sc->nclients == 1 ? "" : "s");
        scenario_run(sc, i);
        leftover += count_leftover_locks(sc);
    }
    return leftover;
}

static void scenario_free(struct scenario *sc)
{
    samples_free(&sc->pair_ns);
    samples_free(&sc->grant_at);
    samples_free(&sc->granted_to);
    samples_free(&sc->unlock_reply_at);
    samples_free(&sc->handoff_ns);
    free(sc->clients);
}

static struct scenario scenario_new(const char *title, enum target target,
                                    bool contended, int nclients)
{
    struct scenario sc = {.title = title,
                          .target = target,
                          .contended = contended,
                          .nclients = nclients};

    return sc;
}

int main(int argc, char **argv)
{
    struct scenario scs[5];
    int count = (int)(sizeof(scs) / sizeof(scs[0]));
    int leftover;

    parse_options(argc, argv);
    /* A closed socket must surface as a hiredis error, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    /* Each direct run is followed by its rlockd twin, so the pairs that
     * are compared are measured back to back. compare() and
     * print_markdown() rely on this order. */
    scs[0] = scenario_new("uncontended, Redis direct", TARGET_DIRECT, false, 1);
    scs[1] = scenario_new("uncontended, via rlockd", TARGET_RLOCKD, false, 1);
    scs[2] = scenario_new("uncontended, Redis direct", TARGET_DIRECT, false,
                          opt.clients);
    scs[3] = scenario_new("uncontended, via rlockd", TARGET_RLOCKD, false,
                          opt.clients);
    scs[4] = scenario_new("contended (one lock), via rlockd", TARGET_RLOCKD,
                          true, opt.contended_clients);
    redis_setup();
    leftover = run_scenarios(scs, count);
    print_table(scs, count);
    if (!opt.direct_only) {
        struct comparison cmp = compare(scs);

        print_contended(&scs[4]);
        print_targets(&cmp);
        print_markdown(scs, &cmp);
    }
    for (int i = 0; i < count; i++)
        scenario_free(&scs[i]);
    redisFree(redis_sync);
    return leftover ? 1 : 0;
}
