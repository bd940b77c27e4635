/*
 * contended.c - the contended scenarios: many clients on one name.
 *
 * Owns: the grant and release logs of a hand-off (one lock, or a
 * semaphore of a few permits), the hand-off times computed from them
 * after the run, one writer among readers, and their printouts. It never
 * pairs a grant with a release while the run is going: both are in
 * flight together, so that is done afterwards.
 */
#include <stdio.h>

#include "bench.h"

/*
 * Records one grant of the contended name. The handoff is the time from
 * the release that freed what was granted to this grant, but this grant
 * can be processed before that release's reply (both are in flight
 * together), so a single "last release" variable would pair it with the
 * wrong one. Each hold gets a generation number instead, each release a
 * number of its own, and handoffs are computed after the run from
 * grant_at[g] - release_reply_at[g - permits]: with P permits, grant g
 * needs g - P + 1 releases before it (a lock: P = 1, and rlockd grants
 * the next hold only after the previous UNLOCK, so release g - 1 is the
 * one of hold g - 1 and is numbered by its generation). With several
 * permits the releases are numbered in the order their replies arrive,
 * the bench's best view of the order rlockd ran them in. A grant is a
 * hand-off only if it went to a client that was waiting when the release
 * was answered: not to the releaser itself, and not to one that asked
 * after (as a semaphore, like Redisson's, lets a new ACQUIRE take a
 * free permit before the waiters do).
 */
void contended_granted(struct bench_client *cl, int64_t now)
{
    struct scenario *sc = cl->sc;

    cl->generation = sc->grant_at.n;
    samples_push(&sc->grant_at, now);
    samples_push(&sc->granted_to, cl->index);
    samples_push(&sc->asked_at, cl->pair_started);
    /* a slot for the release of a hold no later than this one */
    samples_push(&sc->release_reply_at, 0);
    samples_push(&sc->released_by, -1);
    if (in_window(sc, now)) {
        sc->ops++;
        cl->acquisitions++;
    }
}

/* Readers overlap, so there is no chain of hand-offs to follow: what
 * matters is how long the writer waits among them, and how many grants
 * each side gets. */
void readers_writer_granted(struct bench_client *cl, int64_t now)
{
    struct scenario *sc = cl->sc;

    if (!in_window(sc, now))
        return;
    cl->acquisitions++;
    if (cl->index == WRITER_INDEX)
        samples_push(&sc->writer_wait_ns, now - cl->pair_started);
}

/* Handoffs to another client, from the grant and release logs. */
void contended_summarize(struct scenario *sc)
{
    size_t permits = (size_t)sc->permits;

    for (size_t g = permits; g < sc->grant_at.n; g++) {
        size_t r = g - permits;

        if (!in_window(sc, sc->grant_at.v[g]))
            continue;
        if (sc->granted_to.v[g] == sc->released_by.v[r]) {
            sc->regrants++;
            continue;
        }
        if (sc->asked_at.v[g] > sc->release_reply_at.v[r]) {
            sc->unwaited++;
            continue;
        }
        samples_push(&sc->handoff_ns,
                     sc->grant_at.v[g] - sc->release_reply_at.v[r]);
    }
    samples_sort(&sc->handoff_ns);
}

/* Fewest and most acquisitions of clients [first, nclients). */
static void acquisitions_range(const struct scenario *sc, int first,
                               uint64_t *min, uint64_t *max)
{
    *min = UINT64_MAX;
    *max = 0;
    for (int i = first; i < sc->nclients; i++) {
        uint64_t a = sc->clients[i].acquisitions;

        *min = a < *min ? a : *min;
        *max = a > *max ? a : *max;
    }
}

void print_contended(const struct scenario *sc)
{
    uint64_t min, max;
    const struct samples *h = &sc->handoff_ns;

    acquisitions_range(sc, 0, &min, &max);
    if (sc->kind->set_up != NULL)
        printf("\ncontended: %d clients on one %s of %d permits through "
               "rlockd\n",
               sc->nclients, kind_word(sc->kind), sc->permits);
    else
        printf("\ncontended: %d clients on one %s%slock through rlockd\n",
               sc->nclients, kind_word(sc->kind), kind_space(sc->kind));
    printf("  acquisitions/s            %.0f\n", per_second(sc));
    print_redis_per_pair(sc, "acquisition");
    printf("  handoff, %s reply to the next waiting client's +OK:\n"
           "                            p50 %.1f us, p99 %.1f us "
           "(min %.1f, max %.1f; %zu handoffs)\n",
           release_verb(sc->kind), p50_us(h), p99_us(h),
           samples_percentile_us(h, 0), samples_percentile_us(h, 100), h->n);
    printf("  re-acquired at once by the client that had released: %llu\n",
           (unsigned long long)sc->regrants);
    if (sc->permits > 1)
        printf("  granted to a client that asked after the release, ahead "
               "of the\n  waiting ones (not a hand-off): %llu\n",
               (unsigned long long)sc->unwaited);
    printf("  acquisitions per client   min %llu, max %llu\n",
           (unsigned long long)min, (unsigned long long)max);
}

struct readers_writer_figures readers_writer_figures(const struct scenario *sc)
{
    struct readers_writer_figures f = {0, 0};

    for (int i = 0; i < sc->nclients; i++) {
        double a = (double)sc->clients[i].acquisitions / bench_opt.duration_s;

        if (i == WRITER_INDEX)
            f.writer_per_s += a;
        else
            f.readers_per_s += a;
    }
    return f;
}

void print_readers_writer(const struct scenario *sc)
{
    struct readers_writer_figures f = readers_writer_figures(sc);
    const struct samples *w = &sc->writer_wait_ns;
    uint64_t min, max;

    acquisitions_range(sc, WRITER_INDEX + 1, &min, &max);
    printf("\ncontended: 1 WRITE client among %d READ clients on one name "
           "through rlockd\n",
           sc->nclients - 1);
    printf("  writer acquisitions/s     %.0f\n", f.writer_per_s);
    printf("  writer's wait, LOCK sent to +OK:\n"
           "                            p50 %.1f us, p99 %.1f us "
           "(min %.1f, max %.1f; %zu grants)\n",
           p50_us(w), p99_us(w), samples_percentile_us(w, 0),
           samples_percentile_us(w, 100), w->n);
    printf("  reader acquisitions/s     %.0f (all readers; per reader min "
           "%llu, max %llu in the window)\n",
           f.readers_per_s, (unsigned long long)min, (unsigned long long)max);
    print_redis_per_pair(sc, "acquisition");
}

/* A contended row's last cells: what each acquisition cost Redis. */
static void print_markdown_redis_cells(const struct scenario *sc)
{
    struct redis_per_pair r = redis_per_pair(sc);
    char cpu_us[16], commands[16];

    printf("| %s | %s |\n", format_figure(r.cpu_us, cpu_us, sizeof(cpu_us)),
           format_figure(r.commands, commands, sizeof(commands)));
}

/* The contended scenarios, one row each. */
void print_markdown_contended(const struct scenario *scs, int count)
{
    const struct scenario *rw = find_scenario(
        scs, count, &bench_kinds[KIND_READ], TARGET_RLOCKD, READERS_WRITER);

    printf("\n| Contended, through rlockd, %d clients on one name | "
           "Acquisitions/s | p50 | p99 | Redis CPU µs/acquisition | "
           "Redis commands/acquisition |\n",
           bench_opt.contended_clients);
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < KIND_COUNT; k++) {
        const struct scenario *sc =
            find_scenario(scs, count, &bench_kinds[k], TARGET_RLOCKD, HANDOFF);

        if (sc == NULL)
            continue;
        if (sc->permits > 1)
            printf("| %s, %d permits: hand-off, %s reply to the next waiting "
                   "client's grant | %.0f | %.0f µs | %.0f µs ",
                   bench_kinds[k].label, sc->permits, release_verb(sc->kind),
                   per_second(sc), p50_us(&sc->handoff_ns),
                   p99_us(&sc->handoff_ns));
        else
            printf("| %s: hand-off, UNLOCK reply to the next client's grant "
                   "| %.0f | %.0f µs | %.0f µs ",
                   bench_kinds[k].label, per_second(sc),
                   p50_us(&sc->handoff_ns), p99_us(&sc->handoff_ns));
        print_markdown_redis_cells(sc);
    }
    if (rw != NULL) {
        struct readers_writer_figures f = readers_writer_figures(rw);

        printf("| 1 WRITE among %d READ: the writer's wait, LOCK sent to "
               "`+OK` | writer %.0f; readers %.0f | %.0f µs | %.0f µs ",
               rw->nclients - 1, f.writer_per_s, f.readers_per_s,
               p50_us(&rw->writer_wait_ns), p99_us(&rw->writer_wait_ns));
        print_markdown_redis_cells(rw);
    }
}
