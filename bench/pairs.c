/*
 * pairs.c - the lock+unlock pair: the closed loop every client of a
 * pairs scenario runs, and the many-clients markdown rows.
 *
 * Owns: sending a pair's halves, timing them, counting what falls in the
 * window, and the direct-beside-rlockd tables of the markdown. A grant
 * on a contended name is recorded by contended.c; this loop never
 * interprets one.
 */
#include <stdio.h>

#include "bench.h"

bool in_window(const struct scenario *sc, int64_t t)
{
    return t >= sc->window_start && t < sc->window_end;
}

static void on_acquired(redisAsyncContext *ac, void *reply, void *privdata);
static void on_released(redisAsyncContext *ac, void *reply, void *privdata);

/* Sends the acquire (or the release) of the client's pair. */
static void client_send_pair_half(struct bench_client *cl, bool release)
{
    const struct script_call *call =
        release ? cl->kind->release : cl->kind->acquire;
    struct bench_request *cmd = release ? &cl->release : &cl->acquire;

    if (cl->sc->target == TARGET_DIRECT && call->clock)
        direct_format(cl, call, cmd);
    client_send(cl, cmd, release ? on_released : on_acquired);
}

void start_pair(struct bench_client *cl)
{
    cl->pair_started = now_ns();
    client_send_pair_half(cl, false);
}

static void on_acquired(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct bench_client *cl = privdata;
    int64_t now = now_ns();

    (void)ac;
    expect_granted(cl, reply);
    if (in_window(cl->sc, now))
        samples_push(&cl->sc->acquire_ns, now - cl->pair_started);
    if (cl->sc->mode == HANDOFF)
        contended_granted(cl, now);
    else if (cl->sc->mode == READERS_WRITER)
        readers_writer_granted(cl, now);
    client_send_pair_half(cl, true);
}

static void on_released(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct bench_client *cl = privdata;
    struct scenario *sc = cl->sc;
    int64_t now = now_ns();

    (void)ac;
    expect_released(cl, reply);
    /* A client stops only after its release, so every grant's pair ends
     * in the run: with HANDOFF, this counts the grants too. */
    sc->completed++;
    if (sc->mode == HANDOFF) {
        size_t r = sc->permits == 1 ? cl->generation : sc->releases;

        sc->releases++;
        sc->release_reply_at.v[r] = now;
        sc->released_by.v[r] = cl->index;
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

/* The first markdown table's cells of a scenario, after its label; an
 * rlockd row also weighs its Redis CPU per pair against its direct
 * twin's (`direct`, NULL on a direct row). */
void print_markdown_row(const struct scenario *sc, const char *what,
                        const struct scenario *direct)
{
    struct redis_per_pair r = redis_per_pair(sc);
    char cpu_us[16], commands[16], cpu_ratio[16] = "";

    if (direct != NULL)
        format_ratio(ratio(r.cpu_us, redis_per_pair(direct).cpu_us), cpu_ratio,
                     sizeof(cpu_ratio));
    printf("| %s | %d | %.0f | %.0f µs | %.0f µs | %s | %s | %s |\n", what,
           sc->nclients, per_second(sc), p50_us(&sc->pair_ns),
           p99_us(&sc->pair_ns),
           format_figure(r.cpu_us, cpu_us, sizeof(cpu_us)),
           format_figure(r.commands, commands, sizeof(commands)), cpu_ratio);
}

/* The scenario of `kind` with this target and mode that ran, NULL if
 * none; an uncontended one is the many-clients case. */
const struct scenario *find_scenario(const struct scenario *scs, int count,
                                     const struct bench_kind *kind,
                                     enum target target, enum contention mode)
{
    for (int i = 0; i < count; i++) {
        const struct scenario *sc = &scs[i];

        if (sc->ran && sc->kind == kind && sc->target == target &&
            sc->mode == mode &&
            (mode != UNCONTENDED || sc->nclients == bench_opt.clients))
            return sc;
    }
    return NULL;
}

/* Every kind's many-clients pairs, direct beside rlockd. */
void print_markdown_kinds(const struct scenario *scs, int count)
{
    printf("\n| Lock+unlock pairs (SEMAPHORE: ACQUIRE+RELEASE, 1 permit), "
           "%d clients on names of their own | "
           "Redis direct (Redisson scripts) | through rlockd | "
           "rlockd / direct | p50 direct / rlockd | p99 direct / rlockd | "
           "Redis CPU µs/pair direct / rlockd | "
           "Redis CPU/pair rlockd / direct | "
           "Redis commands/pair direct / rlockd |\n",
           bench_opt.clients);
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < KIND_COUNT; k++) {
        const struct scenario *d = find_scenario(scs, count, &bench_kinds[k],
                                                 TARGET_DIRECT, UNCONTENDED);
        const struct scenario *r = find_scenario(scs, count, &bench_kinds[k],
                                                 TARGET_RLOCKD, UNCONTENDED);
        struct redis_per_pair rd, rr;
        char cpu_d[16], cpu_r[16], cpu_ratio[16], cmd_d[16], cmd_r[16];

        if (d == NULL || r == NULL)
            continue;
        rd = redis_per_pair(d);
        rr = redis_per_pair(r);
        printf("| %s | %.0f/s | %.0f/s | %.2fx | %.0f / %.0f µs | "
               "%.0f / %.0f µs | %s / %s | %s | %s / %s |\n",
               bench_kinds[k].label, per_second(d), per_second(r),
               per_second(r) / per_second(d), p50_us(&d->pair_ns),
               p50_us(&r->pair_ns), p99_us(&d->pair_ns), p99_us(&r->pair_ns),
               format_figure(rd.cpu_us, cpu_d, sizeof(cpu_d)),
               format_figure(rr.cpu_us, cpu_r, sizeof(cpu_r)),
               format_ratio(ratio(rr.cpu_us, rd.cpu_us), cpu_ratio,
                            sizeof(cpu_ratio)),
               format_figure(rd.commands, cmd_d, sizeof(cmd_d)),
               format_figure(rr.commands, cmd_r, sizeof(cmd_r)));
    }
}
