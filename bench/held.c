/*
 * held.c - the held-locks scenario: what holding many locks costs.
 *
 * Owns: taking --held locks with pipelined LOCKs, holding them for a
 * window while rlockd's watchdog renews them, releasing them, the
 * readings around each phase (INFO of rlockd and Redis, VmRSS, CPU) and
 * the printouts. It never sends anything during the window: the watchdog
 * must be the only one talking to Redis then.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Held locks: rlockd's default watchdog_timeout_ms, to which the measured
 * renewal rate is scaled; LOCK and UNLOCK requests in flight per
 * connection (rlockd runs up to max_commands_in_flight of one
 * connection's requests at a time, 1024 by default, and closes a
 * connection whose unprocessed input passes max_input_buffer_bytes, 1 MiB
 * by default: 512 requests are ~30 KiB); the most keys one EXISTS names;
 * how long a phase (all LOCKs, all UNLOCKs) may take per
 * HELD_PHASE_LOCKS locks (and at least); and how long rlockd may take to
 * report held_locks:0 after the last UNLOCK reply. */
#define DEFAULT_WATCHDOG_MS 30000
#define HELD_PIPELINE 512
#define EXISTS_CHUNK 1000
#define HELD_PHASE_TIMEOUT_S 60
#define HELD_PHASE_LOCKS 100000
#define HELD_SETTLE_TIMEOUT_NS (5 * NS_PER_SEC)
/*
 * The held case measures what holding many locks costs, not how fast
 * pairs go. --held-clients connections (each its own client-id) take
 * --held N distinct watchdog-mode locks with pipelined LOCKs and hold
 * them for a window of --held-window seconds, in which the bench sends
 * nothing and rlockd's watchdog is the only thing talking to Redis; then
 * pipelined UNLOCKs release them all. Over the window it reads Redis's
 * EVALSHA count (INFO commandstats) and rlockd's watchdog_renewals and
 * watchdog_batches (INFO); before and during the hold, rlockd's VmRSS and
 * Redis's used_memory; after the release, rlockd's held_locks and every
 * lock key in Redis. The renewal rate scales with 1/watchdog_timeout_ms,
 * so run.sh gives this scenario an rlockd of its own with a short
 * watchdog, and the report scales the measured rate to the default,
 * saying which figure is measured and which derived. The rlockd must be
 * fresh for the memory figure too: its allocator keeps what the released
 * locks freed and reuses it, so a second run against the same process
 * shows next to nothing per lock.
 *
 * Redis 7 counts the commands a script runs in INFO commandstats as well
 * as the EVALSHA itself: those beside the EVALSHAs are the renewal
 * scripts' own (the shape check and PEXPIRE of each lock), reported per
 * renewal; nothing else talks to this Redis meanwhile.
 */

/* Counters read at each end of the window. */
struct held_counters {
    int64_t at;
    struct command_calls redis;
    long long renewals;
    long long batches;
    double rlockd_cpu_s;
    double redis_cpu_s;
};

static redisContext *held_sync; /* to the held-locks rlockd, for INFO */

static void held_name(char *buf, size_t size, long i)
{
    snprintf(buf, size, "rlockd-bench:%d:held:%ld", (int)getpid(), i);
}

/* The integer value of "key:value" in an INFO text; -1 if absent. */
static long long info_value(const char *text, const char *key)
{
    size_t len = strlen(key);

    for (const char *p = text; (p = strstr(p, key)) != NULL; p += len)
        if ((p == text || p[-1] == '\n') && p[len] == ':')
            return strtoll(p + len + 1, NULL, 10);
    return -1;
}

static redisReply *rlockd_info_fetch(void)
{
    redisReply *r = sync_reply_checked(
        held_sync, "rlockd", bench_opt.held_rlockd_host,
        bench_opt.held_rlockd_port, redisCommand(held_sync, "INFO"));

    if (r->type != REDIS_REPLY_STRING)
        fatal("rlockd INFO: unexpected reply type %d", r->type);
    return r;
}

static long long rlockd_info_field(const redisReply *info, const char *key)
{
    long long v = info_value(info->str, key);

    if (v < 0)
        fatal("rlockd INFO has no %s", key);
    return v;
}

static long long rlockd_info(const char *key)
{
    redisReply *info = rlockd_info_fetch();
    long long v = rlockd_info_field(info, key);

    freeReplyObject(info);
    return v;
}

/* INFO's names for enum held_part, and how the printout names each. */
static const struct {
    const char *info;
    const char *label;
    bool within; /* a part of the figure before */
} held_breakdown[HELD_PART_COUNT] = {
    [HELD_LOCK_BYTES] = {"lock_bytes", "lock"},
    [HELD_LOCK_STRING_BYTES] = {"lock_string_bytes", "name and keys", true},
    [HELD_LOCK_WAIT_BYTES] = {"lock_wait_bytes", "waiting state"},
    [HELD_LOCK_MAP_BYTES] = {"lock_map_bytes", "lock table"},
    [HELD_HOLD_BYTES] = {"hold_bytes", "hold"},
    [HELD_HOLD_STRING_BYTES] = {"hold_string_bytes", "fields inline", true},
};

/* rlockd's memory figures now; -1 for each an older build lacks. */
static void held_parts_take(long long parts[HELD_PART_COUNT])
{
    redisReply *info = rlockd_info_fetch();

    for (int i = 0; i < HELD_PART_COUNT; i++)
        parts[i] = info_value(info->str, held_breakdown[i].info);
    freeReplyObject(info);
}

static long long redis_used_memory(void)
{
    redisReply *r = redis_sync_command("INFO memory");
    long long v = info_value(r->str, "used_memory");

    freeReplyObject(r);
    if (v < 0)
        fatal("Redis INFO memory has no used_memory");
    return v;
}

static void held_counters_take(struct held_counters *c)
{
    redisReply *info;

    c->at = now_ns();
    redis_command_calls(&c->redis);
    info = rlockd_info_fetch();
    c->renewals = rlockd_info_field(info, "watchdog_renewals");
    c->batches = rlockd_info_field(info, "watchdog_batches");
    freeReplyObject(info);
    c->rlockd_cpu_s = process_cpu_seconds(bench_opt.held_rlockd_pid);
    c->redis_cpu_s = process_cpu_seconds(bench_opt.pids[PROC_REDIS]);
}

static double cpu_pct_between(double a, double b, double wall_s)
{
    return a >= 0 && b >= 0 && wall_s > 0 ? 100.0 * (b - a) / wall_s : -1;
}

/* How many of the n held-lock keys exist in Redis, EXISTS_CHUNK names to
 * a call: exact, not sampled. */
static long count_existing_held(long n)
{
    static char names[EXISTS_CHUNK][64];
    const char *argv[EXISTS_CHUNK + 1];
    size_t len[EXISTS_CHUNK + 1];
    long existing = 0;

    argv[0] = "EXISTS";
    len[0] = strlen(argv[0]);
    for (long first = 0; first < n; first += EXISTS_CHUNK) {
        int count = n - first < EXISTS_CHUNK ? (int)(n - first) : EXISTS_CHUNK;
        redisReply *r;

        for (int i = 0; i < count; i++) {
            held_name(names[i], sizeof(names[i]), first + i);
            argv[i + 1] = names[i];
            len[i + 1] = strlen(names[i]);
        }
        r = sync_reply_checked(
            redis_sync, "redis", bench_opt.redis_host, bench_opt.redis_port,
            redisCommandArgv(redis_sync, count + 1, argv, len));
        if (r->type != REDIS_REPLY_INTEGER)
            fatal("EXISTS: unexpected reply type %d", r->type);
        existing += (long)r->integer;
        freeReplyObject(r);
    }
    return existing;
}

static void held_send(struct bench_client *cl);

/* Replies come in request order, so this one is for lock held_done. */
static void on_held_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct bench_client *cl = privdata;
    struct scenario *sc = cl->sc;

    (void)ac;
    held_name(cl->name, sizeof(cl->name), cl->held_first + cl->held_done);
    if (sc->phase == HELD_LOCK)
        expect_status(cl, "LOCK", reply, "OK");
    else
        expect_integer(cl, "UNLOCK", reply, 1);
    cl->held_done++;
    sc->ops++;
    if (cl->held_first + cl->held_sent < cl->held_end)
        held_send(cl);
    else if (cl->held_done == cl->held_sent)
        sc->running--;
}

/* Queues this connection's next LOCK or UNLOCK; scenario_loop writes
 * whatever is queued once per turn, so a pipeline costs few syscalls. */
static void held_send(struct bench_client *cl)
{
    const char *verb = cl->sc->phase == HELD_LOCK ? "LOCK" : "UNLOCK";
    char name[64];

    held_name(name, sizeof(name), cl->held_first + cl->held_sent);
    if (redisAsyncCommand(cl->ac, on_held_reply, cl, "%s %s %d", verb, name,
                          cl->index + 1) != REDIS_OK)
        fatal("%s: client %d: cannot queue a request: %s", cl->sc->title,
              cl->index, cl->ac->errstr);
    cl->held_sent++;
}

static bool held_all_answered(const struct scenario *sc)
{
    return sc->running == 0;
}

/* Sends every connection's LOCKs (or UNLOCKs), HELD_PIPELINE in flight
 * per connection, until all are answered; returns the seconds that took
 * and leaves the CPU each process used meanwhile in cpu_pct. */
static double held_phase(struct scenario *sc, enum held_phase phase,
                         double *cpu_pct)
{
    const pid_t pids[PROC_COUNT] = {bench_opt.pids[PROC_BENCH],
                                    bench_opt.pids[PROC_REDIS],
                                    bench_opt.held_rlockd_pid};
    struct cpu_snapshot before, after;
    long timeout_s =
        HELD_PHASE_TIMEOUT_S *
        (bench_opt.held > HELD_PHASE_LOCKS
             ? (bench_opt.held + HELD_PHASE_LOCKS - 1) / HELD_PHASE_LOCKS
             : 1);
    char late[96];
    int64_t start;

    cpu_snapshot_take(&before, pids);
    start = before.at;

    sc->phase = phase;
    sc->running = 0;
    sc->ops = 0;
    for (int i = 0; i < sc->nclients; i++) {
        struct bench_client *cl = &sc->clients[i];

        cl->held_sent = cl->held_done = 0;
        if (cl->held_first == cl->held_end)
            continue;
        sc->running++;
        while (cl->held_first + cl->held_sent < cl->held_end &&
               cl->held_sent < HELD_PIPELINE)
            held_send(cl);
    }
    snprintf(late, sizeof(late), "%s still unanswered %ld s after the first",
             phase == HELD_LOCK ? "LOCKs" : "UNLOCKs", timeout_s);
    scenario_loop(sc, held_all_answered, start + timeout_s * NS_PER_SEC, late);
    cpu_snapshot_take(&after, pids);
    cpu_percent(&before, &after, cpu_pct);
    return (double)(after.at - start) / NS_PER_SEC;
}

/* Polls rlockd until it reports no held lock, for at most
 * HELD_SETTLE_TIMEOUT_NS; the UNLOCK replies have all come back, so
 * anything left is a hold rlockd forgot to drop. */
static void held_settle(struct held_result *res)
{
    int64_t start = now_ns();

    while ((res->held_after = rlockd_info("held_locks")) != 0 &&
           now_ns() - start < HELD_SETTLE_TIMEOUT_NS)
        sleep_until(now_ns() + NS_PER_SEC / 100);
    res->settle_s = (double)(now_ns() - start) / NS_PER_SEC;
}

static void held_connect(struct scenario *sc)
{
    held_sync =
        redisConnect(bench_opt.held_rlockd_host, bench_opt.held_rlockd_port);
    if (held_sync == NULL || held_sync->err)
        fatal("connect to rlockd %s:%d: %s", bench_opt.held_rlockd_host,
              bench_opt.held_rlockd_port,
              held_sync ? held_sync->errstr : "out of memory");
    if (rlockd_info("held_locks") != 0)
        fatal("%s: rlockd %s:%d already holds locks; its memory and "
              "renewal figures would not be this scenario's",
              sc->title, bench_opt.held_rlockd_host,
              bench_opt.held_rlockd_port);
    scenario_connect(sc, 0);
    /* Each connection its own contiguous share of the names. */
    for (int i = 0; i < sc->nclients; i++) {
        sc->clients[i].held_first = bench_opt.held * i / sc->nclients;
        sc->clients[i].held_end = bench_opt.held * (i + 1) / sc->nclients;
    }
}

/* Holds the locks for the window. Only held_locks is checked first:
 * watchdog_locks leaves out the holds whose renewal is in flight. */
static void held_hold_window(struct scenario *sc, struct held_result *res)
{
    struct held_counters a, b;
    long long held = rlockd_info("held_locks");

    if (held != bench_opt.held)
        fatal("%s: %ld LOCKs answered +OK, but rlockd reports "
              "held_locks:%lld",
              sc->title, bench_opt.held, held);
    held_counters_take(&a);
    sleep_until(a.at + (int64_t)(bench_opt.held_window_s * NS_PER_SEC));
    held_counters_take(&b);
    res->window_s = (double)(b.at - a.at) / NS_PER_SEC;
    res->evalsha_calls = b.redis.evalsha - a.redis.evalsha;
    res->inner_calls = command_calls_total(&b.redis) -
                       command_calls_total(&a.redis) - res->evalsha_calls;
    res->renewals = b.renewals - a.renewals;
    res->batches = b.batches - a.batches;
    res->rlockd_cpu_pct =
        cpu_pct_between(a.rlockd_cpu_s, b.rlockd_cpu_s, res->window_s);
    res->redis_cpu_pct =
        cpu_pct_between(a.redis_cpu_s, b.redis_cpu_s, res->window_s);
}

/* Runs the held-locks scenario; returns how many problems it found
 * (locks that expired while held, keys or holds left after the release),
 * each already described on stderr. */
int held_run(struct scenario *sc, struct held_result *res)
{
    long long lost_before;
    int problems = 0;

    held_connect(sc);
    res->watchdog_ms = rlockd_info("watchdog_timeout_ms");
    lost_before = rlockd_info("locks_lost");
    res->rss_before_kb = process_rss_kb(bench_opt.held_rlockd_pid);
    res->redis_rss_before_kb = process_rss_kb(bench_opt.pids[PROC_REDIS]);
    res->redis_mem_before = redis_used_memory();
    held_parts_take(res->parts_before);

    res->acquire_s = held_phase(sc, HELD_LOCK, res->acquire_cpu_pct);
    held_hold_window(sc, res);
    res->rss_holding_kb = process_rss_kb(bench_opt.held_rlockd_pid);
    res->redis_rss_holding_kb = process_rss_kb(bench_opt.pids[PROC_REDIS]);
    res->redis_mem_holding = redis_used_memory();
    held_parts_take(res->parts_holding);
    res->existing_holding = count_existing_held(bench_opt.held);

    res->release_s = held_phase(sc, HELD_UNLOCK, res->release_cpu_pct);
    held_settle(res);
    res->existing_after = count_existing_held(bench_opt.held);
    res->rss_released_kb = process_rss_kb(bench_opt.held_rlockd_pid);
    res->lost = rlockd_info("locks_lost") - lost_before;
    scenario_disconnect(sc);
    redisFree(held_sync);
    held_sync = NULL;
    res->ran = true;

    if (res->existing_holding != bench_opt.held || res->lost != 0) {
        fprintf(stderr,
                "rlockd-bench: %s: %ld of %ld lock keys were in Redis at "
                "the end of the window (owners connected); rlockd counted "
                "%lld lost\n",
                sc->title, res->existing_holding, bench_opt.held, res->lost);
        problems++;
    }
    if (res->held_after != 0) {
        fprintf(stderr,
                "rlockd-bench: %s: rlockd still reports held_locks:%lld "
                "%.1f s after the last UNLOCK reply\n",
                sc->title, res->held_after, res->settle_s);
        problems++;
    }
    if (res->existing_after != 0) {
        fprintf(stderr,
                "rlockd-bench: %s: %ld lock keys still in Redis after "
                "their release\n",
                sc->title, res->existing_after);
        problems++;
    }
    return problems;
}

/* The held-locks figures both printouts use; which are measured and which
 * derived is said where they are printed. */
struct held_figures {
    double interval_ms;         /* renewal period: a third of the watchdog */
    double calls_per_s;         /* measured: EVALSHA in Redis */
    double renewals_per_s;      /* measured: watchdog_renewals */
    double renewals_per_call;   /* measured */
    double scale;               /* measured watchdog / the default */
    double default_calls_per_s; /* derived */
    double rss_bytes_per_lock;  /* NAN if rlockd's pid is unknown */
    double redis_bytes_per_lock;
    double rss_per_redis_byte; /* rlockd's bytes per Redis's; NAN: unknown */
    double redis_rss_bytes_per_lock; /* NAN if Redis's pid is unknown */
    double rss_per_redis_rss;        /* VmRSS against VmRSS; NAN: unknown */
    double acquire_per_s;
    double release_per_s;
    bool clean; /* nothing held or left after the release */
};

static struct held_figures held_figures(const struct held_result *h)
{
    struct held_figures f;
    double n = (double)bench_opt.held;

    f.interval_ms = (double)h->watchdog_ms / 3.0;
    f.calls_per_s = (double)h->evalsha_calls / h->window_s;
    f.renewals_per_s = (double)h->renewals / h->window_s;
    f.renewals_per_call =
        h->batches > 0 ? (double)h->renewals / (double)h->batches : NAN;
    f.scale = (double)h->watchdog_ms / DEFAULT_WATCHDOG_MS;
    f.default_calls_per_s = f.calls_per_s * f.scale;
    f.rss_bytes_per_lock =
        h->rss_before_kb >= 0 && h->rss_holding_kb >= 0
            ? (double)(h->rss_holding_kb - h->rss_before_kb) * 1024.0 / n
            : NAN;
    f.redis_bytes_per_lock =
        (double)(h->redis_mem_holding - h->redis_mem_before) / n;
    f.rss_per_redis_byte = f.redis_bytes_per_lock > 0
                               ? f.rss_bytes_per_lock / f.redis_bytes_per_lock
                               : NAN;
    f.redis_rss_bytes_per_lock =
        h->redis_rss_before_kb >= 0 && h->redis_rss_holding_kb >= 0
            ? (double)(h->redis_rss_holding_kb - h->redis_rss_before_kb) *
                  1024.0 / n
            : NAN;
    f.rss_per_redis_rss =
        f.redis_rss_bytes_per_lock > 0
            ? f.rss_bytes_per_lock / f.redis_rss_bytes_per_lock
            : NAN;
    f.acquire_per_s = n / h->acquire_s;
    f.release_per_s = n / h->release_s;
    f.clean = h->held_after == 0 && h->existing_after == 0;
    return f;
}

static double mib(long kb)
{
    return (double)kb / 1024.0;
}

/* Where rlockd's bytes per lock go, by its own count (usable sizes of
 * what it allocated for locks and holds), and what VmRSS has beyond them:
 * the allocator's headers and slack, and everything else that grew. */
static void print_held_breakdown(const struct held_result *h,
                                 const struct held_figures *f)
{
    double n = (double)bench_opt.held, counted = 0;

    for (int i = 0; i < HELD_PART_COUNT; i++)
        if (h->parts_before[i] < 0 || h->parts_holding[i] < 0) {
            printf("  rlockd's allocations      unknown (no %s in its "
                   "INFO)\n",
                   held_breakdown[i].info);
            return;
        }
    printf("  rlockd's allocations      per lock:");
    for (int i = 0; i < HELD_PART_COUNT; i++) {
        double per_lock =
            (double)(h->parts_holding[i] - h->parts_before[i]) / n;
        bool sub = held_breakdown[i].within,
             next_sub = i + 1 < HELD_PART_COUNT && held_breakdown[i + 1].within;

        printf("%s%s %.0f B%s",
               sub ? (held_breakdown[i - 1].within ? ", " : " (")
                   : (i > 0 ? ", " : " "),
               held_breakdown[i].label, per_lock, sub && !next_sub ? ")" : "");
        if (!sub)
            counted += per_lock;
    }
    printf("\n                            = %.0f B; VmRSS has %.0f B more "
           "(allocator headers\n"
           "                            and slack, and all else that "
           "grew)\n",
           counted, f->rss_bytes_per_lock - counted);
}

static void print_held_memory(const struct held_result *h,
                              const struct held_figures *f)
{
    if (isnan(f->rss_bytes_per_lock))
        printf("  rlockd VmRSS              unknown (no --held-rlockd-pid)\n");
    else
        printf("  rlockd VmRSS              %.1f MiB before, %.1f MiB "
               "holding: %.0f bytes per held lock\n"
               "                            (%.1f MiB after the release)\n",
               mib(h->rss_before_kb), mib(h->rss_holding_kb),
               f->rss_bytes_per_lock, mib(h->rss_released_kb));
    printf("  Redis used_memory         %+.1f MiB holding: %.0f bytes per "
           "lock\n",
           (double)(h->redis_mem_holding - h->redis_mem_before) / 1048576.0,
           f->redis_bytes_per_lock);
    if (!isnan(f->rss_per_redis_byte))
        printf("  per lock, rlockd / Redis  %.2fx\n", f->rss_per_redis_byte);
    /* used_memory counts what Redis's allocator handed out; VmRSS against
     * VmRSS puts both allocators' keep and slack on the scale. */
    if (!isnan(f->redis_rss_bytes_per_lock))
        printf("  Redis VmRSS               %.0f bytes per lock; rlockd / "
               "Redis, VmRSS against VmRSS %.2fx\n",
               f->redis_rss_bytes_per_lock, f->rss_per_redis_rss);
    print_held_breakdown(h, f);
}

void print_held(const struct held_result *h)
{
    struct held_figures f = held_figures(h);
    double held_s = h->acquire_s + h->window_s;
    char acquire_cpu[48], release_cpu[48];

    format_cpu(h->acquire_cpu_pct, acquire_cpu, sizeof(acquire_cpu));
    format_cpu(h->release_cpu_pct, release_cpu, sizeof(release_cpu));
    printf("\nheld: %ld watchdog-mode locks through rlockd, %d connections, "
           "LOCK and UNLOCK pipelined %d deep\n",
           bench_opt.held, bench_opt.held_clients, HELD_PIPELINE);
    printf("  rlockd watchdog_timeout_ms %lld: a renewal every %.0f ms\n",
           h->watchdog_ms, f.interval_ms);
    printf("  acquire all               %.2f s, %.0f acquisitions/s "
           "(CPU%% bench/redis/rlockd %s)\n",
           h->acquire_s, f.acquire_per_s, acquire_cpu);
    printf("  window                    %.2f s holding them; the bench sends "
           "nothing meanwhile\n",
           h->window_s);
    printf("  Redis, over the window    %lld EVALSHA; inside them %lld "
           "commands, %.1f per renewal\n",
           h->evalsha_calls, h->inner_calls,
           h->renewals > 0 ? (double)h->inner_calls / (double)h->renewals
                           : 0.0);
    printf("  rlockd, over the window   watchdog_batches %lld, "
           "watchdog_renewals %lld\n",
           h->batches, h->renewals);
    printf("  MEASURED at %5lld ms      %.0f renewal calls/s (EVALSHA in "
           "Redis), %.0f renewals/s,\n"
           "                            %.1f renewals per call\n",
           h->watchdog_ms, f.calls_per_s, f.renewals_per_s,
           f.renewals_per_call);
    if (h->watchdog_ms != DEFAULT_WATCHDOG_MS)
        printf("  DERIVED for %5d ms      %.0f renewal calls/s, %.0f "
               "renewals/s (measured x %lld/%d:\n"
               "                            the rate scales with "
               "1/watchdog_timeout_ms)\n",
               DEFAULT_WATCHDOG_MS, f.default_calls_per_s,
               f.renewals_per_s * f.scale, h->watchdog_ms, DEFAULT_WATCHDOG_MS);
    printf("  CPU while holding         rlockd %.0f%%, Redis %.0f%% of one "
           "core (measured at %lld ms)\n",
           h->rlockd_cpu_pct, h->redis_cpu_pct, h->watchdog_ms);
    print_held_memory(h, &f);
    printf("  in Redis after the window %ld of %ld lock keys (held %.1f s, "
           "TTL %.1f s); rlockd locks_lost %+lld\n",
           h->existing_holding, bench_opt.held, held_s,
           (double)h->watchdog_ms / 1000.0, h->lost);
    printf("  release all               %.2f s, %.0f releases/s "
           "(CPU%% bench/redis/rlockd %s)\n",
           h->release_s, f.release_per_s, release_cpu);
    printf("  after the release         rlockd held_locks %lld (%.2f s after "
           "the last reply); %ld of %ld lock keys left in Redis\n",
           h->held_after, h->settle_s, h->existing_after, bench_opt.held);
    if (h->window_s * 1000.0 < 2 * f.interval_ms)
        printf("  note: the window is shorter than two renewal periods; "
               "the renewal rate is rough\n");
}

void print_markdown_held(const struct held_result *h)
{
    struct held_figures f = held_figures(h);

    printf("\n| Held locks: %ld in watchdog mode, %d connections | "
           "Figure |\n",
           bench_opt.held, bench_opt.held_clients);
    printf("|---|---:|\n");
    printf("| Acquire all, pipelined LOCK (measured) | %.1f s (%.0f/s) |\n",
           h->acquire_s, f.acquire_per_s);
    printf("| Renewal calls to Redis at watchdog %lld ms (measured) | "
           "%.0f/s |\n",
           h->watchdog_ms, f.calls_per_s);
    printf("| Renewals per call (measured) | %.1f |\n", f.renewals_per_call);
    if (h->watchdog_ms != DEFAULT_WATCHDOG_MS)
        printf("| Renewal calls to Redis at watchdog %d ms (derived: "
               "measured × %lld/%d) | %.0f/s |\n",
               DEFAULT_WATCHDOG_MS, h->watchdog_ms, DEFAULT_WATCHDOG_MS,
               f.default_calls_per_s);
    printf("| rlockd CPU while holding, watchdog %lld ms (measured) | "
           "%.0f%% of a core |\n",
           h->watchdog_ms, h->rlockd_cpu_pct);
    if (isnan(f.rss_bytes_per_lock))
        printf("| rlockd memory per held lock (VmRSS) | unknown (no pid) |\n");
    else
        printf("| rlockd memory per held lock (VmRSS) | %.0f B |\n",
               f.rss_bytes_per_lock);
    printf("| Redis memory per lock (used_memory, for reference) | %.0f B |\n",
           f.redis_bytes_per_lock);
    if (!isnan(f.rss_per_redis_byte))
        printf("| Memory per lock, rlockd / Redis | %.2fx |\n",
               f.rss_per_redis_byte);
    if (!isnan(f.redis_rss_bytes_per_lock))
        printf("| Redis VmRSS per lock; rlockd / Redis, VmRSS against VmRSS | "
               "%.0f B; %.2fx |\n",
               f.redis_rss_bytes_per_lock, f.rss_per_redis_rss);
    printf("| Release all, pipelined UNLOCK (measured) | %.1f s (%.0f/s)%s |\n",
           h->release_s, f.release_per_s,
           f.clean ? "; nothing left" : "; LEFTOVERS, see above");
}

/* The held-locks scenario's --results lines, after the other scenarios'. */
void print_held_results(const struct held_result *h)
{
    struct held_figures f = held_figures(h);
    char name[96];

    snprintf(name, sizeof(name), "held locks, via rlockd, %ld locks",
             bench_opt.held);
    print_result(name, "acquisitions/s", "higher", f.acquire_per_s);
    print_result(name, "releases/s", "higher", f.release_per_s);
    print_result(name, "renewal calls/s", "lower", f.calls_per_s);
    if (h->rlockd_cpu_pct >= 0)
        print_result(name, "rlockd CPU% holding", "lower", h->rlockd_cpu_pct);
    print_result(name, "rlockd B/held lock", "lower", f.rss_bytes_per_lock);
    print_result(name, "Redis B/lock", "lower", f.redis_bytes_per_lock);
}
