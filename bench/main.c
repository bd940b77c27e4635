/*
 * main.c - rlockd-bench, the load generator behind `make bench`: the
 * scenarios it plans and runs, in order, and what it prints after.
 *
 * The files of bench/, one concept each, behind the private bench.h:
 * driver.c (the shared driver: connections, timing, statistics),
 * redis_side.c (the synchronous connection to Redis and the checks),
 * redisson.c (the direct side's scripts), kinds.c (the kind table),
 * pairs.c, contended.c and held.c (the scenario families), report.c
 * (the report), options.c (the command line).
 *
 * It compares lock+unlock pairs through rlockd with the same pairs sent
 * straight to Redis as Redisson's own Lua scripts (EVALSHA), with 1 and
 * with many concurrent clients, and the same many-clients comparison for
 * every other lock kind (FAIR, READ, WRITE, FENCED, and RSemaphore's
 * acquire+release; the kind table, kinds.c); it measures the contended
 * cases through rlockd (many clients on one RLock, on one FAIR lock, on
 * one semaphore of a few permits, and one WRITE client among READ
 * clients on one name) and the held case (--held N watchdog-mode locks
 * taken, held for a window, then released; held.c says what it
 * measures).
 *
 * How it drives load: every simulated client is its own hiredis async
 * connection running a closed loop (send, wait for the reply, send the
 * next request), and all of them are multiplexed by ONE thread through
 * the small epoll adapter in driver.c. One thread rather than one per client
 * because on a 2-core machine 64 blocked threads would cost a context
 * switch per reply and take the CPU that Redis and rlockd need, which
 * would measure the scheduler, not the daemon (redis-benchmark is built
 * the same way). The thread's own CPU use is reported next to the figures.
 *
 * How it measures: each scenario runs a warm-up, then a window of
 * --duration seconds. Throughput is the operations completed inside the
 * window divided by the window's length; latencies are every sample
 * completed inside the window, sorted, nearest-rank percentiles. All
 * timestamps come from CLOCK_MONOTONIC. What the pairs cost Redis (its
 * CPU time, its commands from INFO commandstats, its script calls) is
 * read around the whole run, warm-up and drain included, and divided by
 * the pairs the run completed.
 *
 * It never fails on a timing: targets are printed as met or missed and
 * the exit status stays 0. It exits non-zero only when something is
 * wrong: an error reply (e.g. -UNAVAILABLE), an unexpected reply, a lost
 * connection, requests left unanswered long after the window closed, a
 * lock key that rlockd reported released but Redis still holds, a
 * semaphore whose count is not back to its permits after every release,
 * or a held lock that expired although its owner was connected. With
 * --skip-unsupported (bench/run.sh's baseline runs) an rlockd scenario
 * whose requests the daemon refuses with -ERR, as a build older than
 * the kind does, is skipped and reported as such instead.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"

/* Runs every scenario the options ask for, the held-locks one (if
 * `held_sc` is not NULL) last; returns how many lock keys were left
 * behind in Redis, or other problems the held-locks scenario found. */
static int run_scenarios(struct scenario *scs, int count,
                         struct scenario *held_sc, struct held_result *held)
{
    int total = count + (held_sc != NULL);
    int leftover = 0;

    printf("rlockd-bench: redis %s:%d, rlockd %s:%d; %.1f s measured per "
           "scenario after %.1f s warm-up; %ld CPUs\n",
           bench_opt.redis_host, bench_opt.redis_port, bench_opt.rlockd_host,
           bench_opt.rlockd_port, bench_opt.duration_s, bench_opt.warmup_s,
           sysconf(_SC_NPROCESSORS_ONLN));
    if (held_sc != NULL)
        printf("rlockd-bench: held locks: %ld through rlockd %s:%d, "
               "%.1f s measured while holding them\n",
               bench_opt.held, bench_opt.held_rlockd_host,
               bench_opt.held_rlockd_port, bench_opt.held_window_s);
    fflush(stdout);
    for (int i = 0; i < count; i++) {
        struct scenario *sc = &scs[i];

        if ((bench_opt.direct_only && sc->target == TARGET_RLOCKD) ||
            (bench_opt.rlockd_only && sc->target == TARGET_DIRECT))
            continue;
        fprintf(stderr, "[%d/%d] %s, %d client%s ...\n", i + 1, total,
                sc->title, sc->nclients, sc->nclients == 1 ? "" : "s");
        if (bench_opt.skip_unsupported && sc->target == TARGET_RLOCKD &&
            rlockd_refuses(sc, i)) {
            fprintf(stderr, "[%d/%d] SKIPPED: %s\n", i + 1, total, sc->skipped);
            continue;
        }
        scenario_run(sc, i);
        leftover += count_leftover_locks(sc);
    }
    if (held_sc != NULL) {
        fprintf(stderr, "[%d/%d] %s, %ld locks over %d connections ...\n",
                total, total, held_sc->title, bench_opt.held,
                held_sc->nclients);
        leftover += held_run(held_sc, held);
    }
    return leftover;
}

static void scenario_free(struct scenario *sc)
{
    samples_free(&sc->pair_ns);
    samples_free(&sc->acquire_ns);
    samples_free(&sc->grant_at);
    samples_free(&sc->granted_to);
    samples_free(&sc->asked_at);
    samples_free(&sc->release_reply_at);
    samples_free(&sc->released_by);
    samples_free(&sc->handoff_ns);
    samples_free(&sc->writer_wait_ns);
    free(sc->clients);
}

/* A scenario of `kind`, titled after what it measures. A semaphore's
 * name has 1 permit when uncontended (a pair is then like a lock's),
 * --permits when contended. */
static struct scenario scenario_new(const struct bench_kind *kind,
                                    enum target target, enum contention mode,
                                    int nclients)
{
    struct scenario sc = {.kind = kind,
                          .target = target,
                          .mode = mode,
                          .nclients = nclients,
                          .permits = 1};
    const char *where = target == TARGET_DIRECT ? "Redis direct" : "via rlockd";

    if (mode == HANDOFF && kind->set_up != NULL)
        sc.permits = bench_opt.permits;
    if (mode == UNCONTENDED)
        snprintf(sc.title, sizeof(sc.title), "uncontended%s%s, %s",
                 kind_space(kind), kind_word(kind), where);
    else if (mode == HANDOFF && kind->set_up != NULL)
        snprintf(sc.title, sizeof(sc.title), "contended %s (%d permits), %s",
                 kind_word(kind), sc.permits, where);
    else if (mode == HANDOFF)
        snprintf(sc.title, sizeof(sc.title), "contended%s%s (one lock), %s",
                 kind_space(kind), kind_word(kind), where);
    else
        snprintf(sc.title, sizeof(sc.title), "contended 1 WRITE + READs, %s",
                 where);
    return sc;
}

/* The plain lock's five scenarios, then, for each kind --kinds asks for,
 * its many-clients pair and, for FAIR and SEMAPHORE, the contended case;
 * with READ and WRITE, one writer among readers. Each direct run is
 * followed by its rlockd twin, so the pairs that are compared are
 * measured back to back. compare_targets() and print_markdown() (report.c)
 * rely on the first five's order. Returns how many there are. */
static int scenarios_plan(struct scenario *scs)
{
    const struct bench_kind *rlock = &bench_kinds[KIND_RLOCK];
    int n = 0;

    scs[n++] = scenario_new(rlock, TARGET_DIRECT, UNCONTENDED, 1);
    scs[n++] = scenario_new(rlock, TARGET_RLOCKD, UNCONTENDED, 1);
    scs[n++] =
        scenario_new(rlock, TARGET_DIRECT, UNCONTENDED, bench_opt.clients);
    scs[n++] =
        scenario_new(rlock, TARGET_RLOCKD, UNCONTENDED, bench_opt.clients);
    scs[n++] = scenario_new(rlock, TARGET_RLOCKD, HANDOFF,
                            bench_opt.contended_clients);
    for (int k = KIND_RLOCK + 1; k < KIND_COUNT; k++) {
        if (!(bench_opt.kinds & 1u << k))
            continue;
        scs[n++] = scenario_new(&bench_kinds[k], TARGET_DIRECT, UNCONTENDED,
                                bench_opt.clients);
        scs[n++] = scenario_new(&bench_kinds[k], TARGET_RLOCKD, UNCONTENDED,
                                bench_opt.clients);
    }
    if (bench_opt.kinds & 1u << KIND_FAIR)
        scs[n++] = scenario_new(&bench_kinds[KIND_FAIR], TARGET_RLOCKD, HANDOFF,
                                bench_opt.contended_clients);
    if (bench_opt.kinds & 1u << KIND_SEMAPHORE)
        scs[n++] = scenario_new(&bench_kinds[KIND_SEMAPHORE], TARGET_RLOCKD,
                                HANDOFF, bench_opt.contended_clients);
    if ((bench_opt.kinds & 1u << KIND_READ) &&
        (bench_opt.kinds & 1u << KIND_WRITE))
        scs[n++] = scenario_new(&bench_kinds[KIND_READ], TARGET_RLOCKD,
                                READERS_WRITER, bench_opt.contended_clients);
    return n;
}

/* The plain lock's five, two per other kind, FAIR's and SEMAPHORE's
 * contended ones and the readers and writer. */
#define MAX_SCENARIOS (5 + 2 * (KIND_COUNT - 1) + 3)

int main(int argc, char **argv)
{
    struct scenario scs[MAX_SCENARIOS], held_sc;
    struct held_result held = {.ran = false};
    bool run_held;
    int count;
    int leftover;

    bench_parse_options(argc, argv);
    run_held = bench_opt.held > 0 && !bench_opt.direct_only;
    /* A closed socket must surface as a hiredis error, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    count = bench_opt.held_only ? 0 : scenarios_plan(scs);
    held_sc = scenario_new(&bench_kinds[KIND_RLOCK], TARGET_RLOCKD, UNCONTENDED,
                           bench_opt.held_clients);
    snprintf(held_sc.title, sizeof(held_sc.title), "held locks, via rlockd");
    held_sc.held = true;
    redis_setup();
    leftover = run_scenarios(scs, count, run_held ? &held_sc : NULL, &held);
    if (!bench_opt.held_only)
        print_table(scs, count);
    if (!bench_opt.direct_only) {
        for (int i = 0; i < count; i++) {
            if (scs[i].ran && scs[i].mode == HANDOFF)
                print_contended(&scs[i]);
            else if (scs[i].ran && scs[i].mode == READERS_WRITER)
                print_readers_writer(&scs[i]);
        }
        if (held.ran)
            print_held(&held);
    }
    if (bench_opt.held_only && held.ran)
        print_markdown_held(&held);
    else if (!bench_opt.direct_only && !bench_opt.rlockd_only)
        print_targets_and_markdown(scs, count, &held);
    if (bench_opt.results)
        print_results(scs, count, &held);
    for (int i = 0; i < count; i++)
        scenario_free(&scs[i]);
    scenario_free(&held_sc);
    redisFree(redis_sync);
    return leftover ? 1 : 0;
}
