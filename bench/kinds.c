/*
 * kinds.c - the bench's lock kinds: what differs between them, on both
 * sides.
 *
 * Owns: the kind table (rlockd's verbs and words, Redisson's calls, the
 * keys a release must leave gone), the rlockd requests made from it, and
 * the checks of a grant and a release. A new kind is a row here, never a
 * branch in a scenario.
 */
#include <stdio.h>

#include "bench.h"

const struct bench_kind bench_kinds[KIND_COUNT] = {
    [KIND_RLOCK] = {.label = "RLock",
                    .acquire = &redisson_rlock_acquire,
                    .release = &redisson_rlock_release,
                    .acquired = REPLY_NIL,
                    .released = REPLY_ONE,
                    .released_keys = {ARG_NAME}},
    [KIND_FAIR] = {.word = "FAIR",
                   .label = "FAIR",
                   .acquire = &redisson_fair_acquire,
                   .release = &redisson_fair_release,
                   .acquired = REPLY_NIL,
                   .released = REPLY_ONE,
                   .released_keys = {ARG_NAME, ARG_QUEUE, ARG_TIMEOUT}},
    [KIND_READ] = {.word = "READ",
                   .label = "READ",
                   .acquire = &redisson_read_acquire,
                   .release = &redisson_read_release,
                   .acquired = REPLY_NIL,
                   .released = REPLY_ONE,
                   .released_keys = {ARG_NAME}},
    [KIND_WRITE] = {.word = "WRITE",
                    .label = "WRITE",
                    .acquire = &redisson_write_acquire,
                    .release = &redisson_write_release,
                    .acquired = REPLY_NIL,
                    .released = REPLY_ONE,
                    .released_keys = {ARG_NAME}},
    [KIND_FENCED] = {.word = "FENCED",
                     .label = "FENCED",
                     .token = true,
                     .acquire = &redisson_fenced_acquire,
                     .release = &redisson_rlock_release,
                     .acquired = REPLY_TOKEN_PAIR,
                     .released = REPLY_ONE,
                     .released_keys = {ARG_NAME},
                     .kept_key = ARG_TOKEN},
    [KIND_SEMAPHORE] = {.word = "SEMAPHORE",
                        .label = "SEMAPHORE",
                        .acquire_verb = "ACQUIRE",
                        .release_verb = "RELEASE",
                        .by_session = true,
                        .set_up_verb = "SETPERMITS",
                        .set_up = &redisson_semaphore_set,
                        .acquire = &redisson_semaphore_acquire,
                        .release = &redisson_semaphore_release,
                        .acquired = REPLY_ONE,
                        .released = REPLY_NIL,
                        .released_keys = {ARG_OWNERS, ARG_DEADLINES},
                        .kept_key = ARG_NAME,
                        .kept_is_count = true},
};

/* rlockd's request words; a lock's are LOCK and UNLOCK. */
static const char *acquire_verb(const struct bench_kind *k)
{
    return k->acquire_verb != NULL ? k->acquire_verb : "LOCK";
}

const char *release_verb(const struct bench_kind *k)
{
    return k->release_verb != NULL ? k->release_verb : "UNLOCK";
}

/* A grant: rlockd's +OK, or its fencing token; the direct acquire's
 * reply of its kind. */
void expect_granted(const struct bench_client *cl, const redisReply *r)
{
    const char *verb = acquire_verb(cl->kind);

    if (cl->sc->target == TARGET_DIRECT)
        expect_direct(cl, "acquire script on", cl->kind->acquired, r);
    else if (!cl->kind->token)
        expect_status(cl, verb, r, "OK");
    else if (!is_token(r))
        unexpected_reply(cl, verb, r, "a fencing token, :1 or more");
}

/* A release: rlockd's :1 (nothing held now), the direct release's reply
 * of its kind. */
void expect_released(const struct bench_client *cl, const redisReply *r)
{
    if (cl->sc->target == TARGET_DIRECT)
        expect_direct(cl, "release script on", cl->kind->released, r);
    else
        expect_integer(cl, release_verb(cl->kind), r, 1);
}

/* A lock's "LOCK|UNLOCK name tid [kind]"; a semaphore's "ACQUIRE|RELEASE
 * name", whose permits the session holds. */
static void rlockd_format(const struct bench_client *cl, const char *verb,
                          struct bench_request *cmd)
{
    char tid[16];
    const char *argv[] = {verb, cl->name, tid, cl->kind->word};

    snprintf(tid, sizeof(tid), "%d", cl->index + 1);
    if (cl->kind->by_session)
        format_argv(cmd, 2, argv);
    else
        format_argv(cmd, cl->kind->word != NULL ? 4 : 3, argv);
}

/* The untimed set-up of the client's name (SETPERMITS name size, or
 * Redisson's trySetPermits), for a kind that has one. */
void set_up_format(const struct bench_client *cl, struct bench_request *cmd)
{
    char size[16];
    const char *argv[] = {cl->kind->set_up_verb, cl->name, size};

    if (cl->sc->target == TARGET_DIRECT) {
        direct_format(cl, cl->kind->set_up, cmd);
        return;
    }
    snprintf(size, sizeof(size), "%d", cl->sc->permits);
    format_argv(cmd, 3, argv);
}

/* Each client's two requests on its name, formatted once and sent many
 * times; a script that takes the client's clock is formatted again
 * before each call (client_send_pair_half), as Redisson reads the clock
 * at each. The thread id is the client's index + 1; direct clients use
 * one UUID, like the threads of one JVM. */
void client_prepare(struct bench_client *cl)
{
    const struct scenario *sc = cl->sc;

    cl->kind = sc->mode == READERS_WRITER && cl->index == WRITER_INDEX
                   ? &bench_kinds[KIND_WRITE]
                   : sc->kind;
    if (sc->target == TARGET_RLOCKD) {
        rlockd_format(cl, acquire_verb(cl->kind), &cl->acquire);
        rlockd_format(cl, release_verb(cl->kind), &cl->release);
    } else {
        direct_format(cl, cl->kind->acquire, &cl->acquire);
        direct_format(cl, cl->kind->release, &cl->release);
    }
}

const char *kind_word(const struct bench_kind *k)
{
    return k->word != NULL ? k->word : "";
}

/* The space after a kind word in a title, none without one. */
const char *kind_space(const struct bench_kind *k)
{
    return k->word != NULL ? " " : "";
}
