/*
 * test_kinds.c - what librlock promises about lock kinds (enum rlock_kind),
 * against a real rlockd and Redis: each _kind call names its kind to
 * rlockd, READ holds are shared and WRITE holds are not, FAIR waiters are
 * served in order, FENCED acquisitions get ever larger tokens, and a kind
 * the library does not know is refused before anything is sent.
 *
 * Which kind rlockd took a command for is read from what it leaves behind:
 * its per-kind INFO counters, and the fields of the client's session
 * record in Redis (docs/protocol.md, section 12).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client_suites.h"
#include "harness.h"
#include "in_thread.h"

/* ---- helpers --------------------------------------------------------- */

/* Whether the client's session record in Redis names a hold by the
 * calling thread of a lock of that kind: "<kind>:<thread-id>:<name>". */
static bool session_names_hold(redisContext *redis, rlock_client *c,
                               const char *kind, const char *name)
{
    redisReply *r =
        redisCommand(redis, "HEXISTS rlockd_session:{%s} %s:%ld:%s",
                     rlock_client_id(c), kind, syscall(SYS_gettid), name);
    bool named;

    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    named = r->integer == 1;
    freeReplyObject(r);
    return named;
}

/* Waits up to 2 s for the session record to forget the hold. */
static bool session_forgets_hold(redisContext *redis, rlock_client *c,
                                 const char *kind, const char *name)
{
    long long deadline = harness_now_ms() + 2000;

    while (session_names_hold(redis, c, kind, name)) {
        if (harness_now_ms() >= deadline)
            return false;
        harness_sleep_ms(10);
    }
    return true;
}

/* A Redis command's integer reply (a string holding one, as GET's). */
static long long redis_integer(redisContext *redis, const char *command,
                               const char *key)
{
    redisReply *r = redisCommand(redis, "%s %s", command, key);
    long long value;

    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->type == REDIS_REPLY_INTEGER ||
                      r->type == REDIS_REPLY_STRING,
                  "%s %s: reply type %d", command, key, r->type);
    value =
        r->type == REDIS_REPLY_INTEGER ? r->integer : strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return value;
}

/* ---- each kind's word ------------------------------------------------ */

/* Each kind: its name in rlockd's session record and its INFO counter of
 * acquisitions (the plain lock has none of its own). */
static const struct kind_case {
    enum rlock_kind kind;
    const char *record;
    const char *counter;
} kind_cases[] = {
    {RLOCK_LOCK, "rlock", NULL},
    {RLOCK_FAIR, "fair", "fair_locks_acquired"},
    {RLOCK_READ, "read", "read_locks_acquired"},
    {RLOCK_WRITE, "write", "write_locks_acquired"},
    {RLOCK_FENCED, "fenced", "fenced_locks_acquired"},
};
#define KIND_CASES ((int)(sizeof kind_cases / sizeof *kind_cases))

struct acquisitions {
    long long total;
    long long of_kind[KIND_CASES];
};

static void acquisitions_read(struct acquisitions *a)
{
    a->total = harness_info("locks_acquired");
    for (int i = 0; i < KIND_CASES; i++)
        a->of_kind[i] = kind_cases[i].counter != NULL
                            ? harness_info(kind_cases[i].counter)
                            : 0;
}

/* rlockd counted `more` acquisitions since `before`, all of kind_cases[k]'s
 * kind: one counter moved, and no other kind's. */
static void assert_acquired(const struct acquisitions *before, int k,
                            long long more)
{
    struct acquisitions now;

    ck_assert(harness_wait_info("locks_acquired", before->total + more));
    acquisitions_read(&now);
    for (int i = 0; i < KIND_CASES; i++)
        ck_assert_msg(now.of_kind[i] ==
                          before->of_kind[i] + (i == k && i != 0 ? more : 0),
                      "%s: %lld, was %lld, after %lld %s acquisitions",
                      kind_cases[i].counter, now.of_kind[i], before->of_kind[i],
                      more, kind_cases[k].record);
}

/* A loop test over kind_cases: every _kind call of one kind, which must
 * reach rlockd as that kind. */
START_TEST(each_kind_call_sends_its_kind_word)
{
    const struct kind_case *k = &kind_cases[_i];
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    struct acquisitions before;
    long long token = -1, ttl = 0;
    char name[32];

    snprintf(name, sizeof name, "kind-%s", k->record);
    acquisitions_read(&before);
    ck_assert_int_eq(rlock_lock_kind(c, name, k->kind, RLOCK_WATCHDOG, &token),
                     RLOCK_OK);
    assert_acquired(&before, _i, 1);
    ck_assert_msg(session_names_hold(redis, c, k->record, name),
                  "rlockd's session record has no %s hold of %s", k->record,
                  name);
    if (k->kind == RLOCK_FENCED)
        ck_assert_int_ge(token, 1);
    else
        ck_assert_int_eq(token, 0);
    ck_assert_int_eq(rlock_is_held_kind(c, name, k->kind), 1);
    ck_assert_int_eq(rlock_hold_count_kind(c, name, k->kind), 1);
    ck_assert_int_eq(rlock_is_locked_kind(c, name, k->kind), 1);
    ck_assert_int_eq(rlock_pttl_kind(c, name, k->kind, &ttl), RLOCK_OK);
    ck_assert_int_gt(ttl, 0);
    ck_assert_int_le(ttl, HARNESS_WATCHDOG_MS);

    /* reentrant, by TRYLOCK; released one hold at a time */
    ck_assert_int_eq(
        rlock_trylock_kind(c, name, k->kind, 0, RLOCK_WATCHDOG, NULL), 1);
    assert_acquired(&before, _i, 2);
    ck_assert_int_eq(rlock_hold_count_kind(c, name, k->kind), 2);
    ck_assert_int_eq(rlock_unlock_kind(c, name, k->kind), 0);
    ck_assert_int_eq(rlock_unlock_kind(c, name, k->kind), 1);
    ck_assert_int_eq(rlock_is_locked_kind(c, name, k->kind), 0);
    ck_assert_int_eq(rlock_unlock_kind(c, name, k->kind), RLOCK_ENOTOWNER);
    ck_assert(session_forgets_hold(redis, c, k->record, name));

    /* a lease, and FORCEUNLOCK of the kind */
    ck_assert_int_eq(rlock_lock_kind(c, name, k->kind, 5000, NULL), RLOCK_OK);
    ck_assert_int_eq(rlock_pttl_kind(c, name, k->kind, &ttl), RLOCK_OK);
    ck_assert_int_gt(ttl, 4000);
    ck_assert_int_le(ttl, 5000);
    ck_assert_int_eq(rlock_force_unlock_kind(c, name, k->kind), 1);
    ck_assert_int_eq(rlock_is_locked_kind(c, name, k->kind), 0);
    ck_assert_int_eq(rlock_force_unlock_kind(c, name, k->kind), 0);
    ck_assert_int_eq(rlock_pttl_kind(c, name, k->kind, &ttl), RLOCK_OK);
    ck_assert_int_eq(ttl, -2);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

/* ---- read-write locks ------------------------------------------------ */

START_TEST(read_hold_is_shared_by_two_clients_threads)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    struct thread_call a_reads = {.client = a,
                                  .op = OP_LOCK,
                                  .name = "shared",
                                  .lease_ms = -1,
                                  .kind = RLOCK_READ};
    struct thread_call b_reads = {.client = b,
                                  .op = OP_TRYLOCK,
                                  .name = "shared",
                                  .wait_ms = 0,
                                  .lease_ms = -1,
                                  .kind = RLOCK_READ};
    redisReply *r;

    thread_call_start(&a_reads);
    ck_assert_int_eq(thread_call_join(&a_reads), RLOCK_OK);
    /* a single attempt, granted while a's thread holds it */
    thread_call_start(&b_reads);
    ck_assert_int_eq(thread_call_join(&b_reads), 1);
    /* both in the read-write lock's hash: "mode" and two readers */
    r = redisCommand(redis, "HGETALL shared");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 6);
    freeReplyObject(r);
    r = redisCommand(redis, "HGET shared mode");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->str, "read");
    freeReplyObject(r);
    ck_assert_int_eq(rlock_is_locked_kind(a, "shared", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_is_locked_kind(a, "shared", RLOCK_WRITE), 0);
    /* the calling threads are not the readers */
    ck_assert_int_eq(rlock_is_held_kind(a, "shared", RLOCK_READ), 0);
    ck_assert_int_eq(rlock_hold_count_kind(b, "shared", RLOCK_READ), 0);
    /* a writer is kept out while they read */
    ck_assert_int_eq(
        rlock_trylock_kind(a, "shared", RLOCK_WRITE, 0, RLOCK_WATCHDOG, NULL),
        0);
    /* a query without a kind reports the lock whatever its kind */
    ck_assert_int_eq(rlock_is_locked(a, "shared"), 1);
    ck_assert_int_eq(rlock_force_unlock_kind(a, "shared", RLOCK_WRITE), 0);
    ck_assert_int_eq(rlock_force_unlock_kind(a, "shared", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_is_locked_kind(b, "shared", RLOCK_READ), 0);
    redisFree(redis);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

START_TEST(write_hold_excludes_read_until_released)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    struct thread_call b_waits = {.client = b,
                                  .op = OP_TRYLOCK,
                                  .name = "rw",
                                  .wait_ms = 5000,
                                  .lease_ms = -1,
                                  .kind = RLOCK_READ};

    ck_assert_int_eq(
        rlock_lock_kind(a, "rw", RLOCK_WRITE, RLOCK_WATCHDOG, NULL), RLOCK_OK);
    ck_assert_int_eq(
        rlock_trylock_kind(b, "rw", RLOCK_READ, 0, RLOCK_WATCHDOG, NULL), 0);
    ck_assert_int_eq(rlock_is_locked_kind(b, "rw", RLOCK_WRITE), 1);
    ck_assert_int_eq(rlock_is_held_kind(a, "rw", RLOCK_WRITE), 1);
    thread_call_start(&b_waits);
    ck_assert(harness_wait_info("blocked_clients", 1));
    harness_sleep_ms(100);
    ck_assert_int_eq(rlock_unlock_kind(a, "rw", RLOCK_WRITE), 1);
    ck_assert_int_eq(thread_call_join(&b_waits), 1);
    ck_assert_int_ge(b_waits.elapsed_ms, 100);
    ck_assert_int_lt(b_waits.elapsed_ms, 3000);
    /* now read by b's thread: no writer gets in */
    ck_assert_int_eq(rlock_is_locked_kind(a, "rw", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_is_locked_kind(a, "rw", RLOCK_WRITE), 0);
    ck_assert_int_eq(
        rlock_trylock_kind(a, "rw", RLOCK_WRITE, 0, RLOCK_WATCHDOG, NULL), 0);
    ck_assert_int_eq(rlock_force_unlock_kind(a, "rw", RLOCK_READ), 1);

    /* the writer may read too, and releases each side with its kind */
    ck_assert_int_eq(
        rlock_lock_kind(a, "rw", RLOCK_WRITE, RLOCK_WATCHDOG, NULL), RLOCK_OK);
    ck_assert_int_eq(
        rlock_trylock_kind(a, "rw", RLOCK_READ, 0, RLOCK_WATCHDOG, NULL), 1);
    ck_assert_int_eq(rlock_hold_count_kind(a, "rw", RLOCK_WRITE), 1);
    ck_assert_int_eq(rlock_hold_count_kind(a, "rw", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_unlock_kind(a, "rw", RLOCK_WRITE), 1);
    ck_assert_int_eq(rlock_is_locked_kind(a, "rw", RLOCK_WRITE), 0);
    ck_assert_int_eq(rlock_is_held_kind(a, "rw", RLOCK_READ), 1);
    ck_assert_int_eq(
        rlock_trylock_kind(b, "rw", RLOCK_READ, 0, RLOCK_WATCHDOG, NULL), 1);
    ck_assert_int_eq(rlock_unlock_kind(a, "rw", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_is_locked_kind(a, "rw", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_unlock_kind(b, "rw", RLOCK_READ), 1);
    ck_assert_int_eq(rlock_is_locked_kind(a, "rw", RLOCK_READ), 0);

    /* a reader is never upgraded: rlockd refuses the request */
    ck_assert_int_eq(rlock_lock_kind(b, "rw", RLOCK_READ, RLOCK_WATCHDOG, NULL),
                     RLOCK_OK);
    ck_assert_int_eq(
        rlock_trylock_kind(b, "rw", RLOCK_WRITE, 0, RLOCK_WATCHDOG, NULL),
        RLOCK_EINVAL);
    ck_assert_int_eq(rlock_unlock_kind(b, "rw", RLOCK_READ), 1);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

/* ---- fair locks ------------------------------------------------------ */

START_TEST(fair_waiters_are_served_in_the_order_they_asked)
{
    rlock_client *holder = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    struct thread_call first = {.client = b,
                                .op = OP_TRYLOCK,
                                .name = "fair",
                                .wait_ms = 5000,
                                .lease_ms = -1,
                                .kind = RLOCK_FAIR};
    struct thread_call second = first;

    second.client = c;
    ck_assert_int_eq(
        rlock_lock_kind(holder, "fair", RLOCK_FAIR, RLOCK_WATCHDOG, NULL),
        RLOCK_OK);
    thread_call_start(&first);
    ck_assert(harness_wait_info("blocked_clients", 1));
    thread_call_start(&second);
    ck_assert(harness_wait_info("blocked_clients", 2));
    /* the waiters queue in Redis, for every client of the name */
    ck_assert_int_eq(redis_integer(redis, "LLEN", "redisson_lock_queue:{fair}"),
                     2);
    /* the head gets it; the other still waits (were the order wrong, the
     * first's wait would run out instead) */
    ck_assert_int_eq(rlock_unlock_kind(holder, "fair", RLOCK_FAIR), 1);
    ck_assert_int_eq(thread_call_join(&first), 1);
    ck_assert_int_eq(harness_info("blocked_clients"), 1);
    ck_assert_int_eq(rlock_force_unlock_kind(holder, "fair", RLOCK_FAIR), 1);
    ck_assert_int_eq(thread_call_join(&second), 1);
    ck_assert_int_eq(rlock_force_unlock_kind(holder, "fair", RLOCK_FAIR), 1);
    ck_assert_int_eq(
        redis_integer(redis, "EXISTS", "redisson_lock_queue:{fair}"), 0);
    redisFree(redis);
    rlock_close(holder);
    rlock_close(b);
    rlock_close(c);
}
END_TEST

/* ---- fenced locks ---------------------------------------------------- */

START_TEST(fenced_tokens_strictly_increase_and_token_answers_the_latest)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    long long first = 0, again = 0, refused = -1, latest = -1, next = 0;

    ck_assert_int_eq(rlock_token(a, "fenced", &latest), RLOCK_OK);
    ck_assert_int_eq(latest, 0); /* never taken */
    ck_assert_int_eq(
        rlock_lock_kind(a, "fenced", RLOCK_FENCED, RLOCK_WATCHDOG, &first),
        RLOCK_OK);
    ck_assert_int_ge(first, 1);
    ck_assert_int_eq(rlock_token(b, "fenced", &latest), RLOCK_OK);
    ck_assert_int_eq(latest, first);
    /* a reentrant acquisition gets a token of its own */
    ck_assert_int_eq(rlock_trylock_kind(a, "fenced", RLOCK_FENCED, 0,
                                        RLOCK_WATCHDOG, &again),
                     1);
    ck_assert_int_gt(again, first);
    /* refused: no token */
    ck_assert_int_eq(rlock_trylock_kind(b, "fenced", RLOCK_FENCED, 0,
                                        RLOCK_WATCHDOG, &refused),
                     0);
    ck_assert_int_eq(refused, 0);
    ck_assert_int_eq(rlock_token(b, "fenced", &latest), RLOCK_OK);
    ck_assert_int_eq(latest, again);
    ck_assert_int_eq(rlock_unlock_kind(a, "fenced", RLOCK_FENCED), 0);
    ck_assert_int_eq(rlock_unlock_kind(a, "fenced", RLOCK_FENCED), 1);

    /* every later holder, of either client, gets a larger one */
    for (int i = 0; i < 6; i++) {
        rlock_client *holder = i % 2 == 0 ? b : a;
        long long previous = i == 0 ? again : next;

        ck_assert_int_eq(rlock_lock_kind(holder, "fenced", RLOCK_FENCED,
                                         RLOCK_WATCHDOG, &next),
                         RLOCK_OK);
        ck_assert_int_gt(next, previous);
        ck_assert_int_eq(rlock_token(a, "fenced", &latest), RLOCK_OK);
        ck_assert_int_eq(latest, next);
        ck_assert_int_eq(rlock_unlock_kind(holder, "fenced", RLOCK_FENCED), 1);
    }
    /* the counter outlives the lock, in Redisson's key */
    ck_assert_int_eq(rlock_is_locked_kind(a, "fenced", RLOCK_FENCED), 0);
    ck_assert_int_eq(rlock_token(a, "fenced", &latest), RLOCK_OK);
    ck_assert_int_eq(latest, next);
    ck_assert_int_eq(
        redis_integer(redis, "GET", "redisson_lock_token:{fenced}"), next);

    /* another kind's acquisition sets the token to 0 */
    latest = 99;
    ck_assert_int_eq(
        rlock_lock_kind(a, "not-fenced", RLOCK_LOCK, RLOCK_WATCHDOG, &latest),
        RLOCK_OK);
    ck_assert_int_eq(latest, 0);
    ck_assert_int_eq(rlock_unlock(a, "not-fenced"), 1);
    redisFree(redis);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

/* ---- kinds the library does not know --------------------------------- */

/* rlockd is stopped (SIGSTOP) meanwhile: a call that sent anything would
 * end in RLOCK_ETIMEOUT after the command timeout, not at once. */
START_TEST(unknown_kind_is_invalid_without_a_round_trip)
{
    const rlock_options opts = {.command_timeout_ms = 500};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    const enum rlock_kind unknown[] = {(enum rlock_kind)(RLOCK_FENCED + 1),
                                       (enum rlock_kind)1000,
                                       (enum rlock_kind) - 1};
    long long token, ttl, start;

    harness_rlockd_signal(SIGSTOP);
    start = harness_now_ms();
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        enum rlock_kind kind = unknown[i];

        token = 99;
        ck_assert_int_eq(
            rlock_lock_kind(c, "unknown", kind, RLOCK_WATCHDOG, &token),
            RLOCK_EINVAL);
        ck_assert_int_eq(token, 0);
        token = 99;
        ck_assert_int_eq(
            rlock_trylock_kind(c, "unknown", kind, 0, RLOCK_WATCHDOG, &token),
            RLOCK_EINVAL);
        ck_assert_int_eq(token, 0);
        ck_assert_int_eq(rlock_unlock_kind(c, "unknown", kind), RLOCK_EINVAL);
        ck_assert_int_eq(rlock_force_unlock_kind(c, "unknown", kind),
                         RLOCK_EINVAL);
        ck_assert_int_eq(rlock_is_locked_kind(c, "unknown", kind),
                         RLOCK_EINVAL);
        ck_assert_int_eq(rlock_is_held_kind(c, "unknown", kind), RLOCK_EINVAL);
        ck_assert_int_eq(rlock_hold_count_kind(c, "unknown", kind),
                         RLOCK_EINVAL);
        ck_assert_int_eq(rlock_pttl_kind(c, "unknown", kind, &ttl),
                         RLOCK_EINVAL);
    }
    ck_assert_int_lt(harness_now_ms() - start, 250);
    harness_rlockd_signal(SIGCONT);
    /* nothing was sent: the connection is in step, and nothing is held */
    ck_assert_int_eq(rlock_is_locked(c, "unknown"), 0);
    ck_assert_int_eq(rlock_lock(c, "unknown", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_unlock(c, "unknown"), 1);
    rlock_close(c);
}
END_TEST

/* rlock_owners_kind(): every owner with its count and the lock's TTL;
 * none, and -2, for a lock nobody holds. */
START_TEST(owners_lists_every_holder_with_its_count)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    struct rlock_owner *owners;
    char want_a[128], want_b[128];
    long long pttl;
    size_t count;

    ck_assert_int_eq(rlock_lock_kind(a, "owned", RLOCK_READ, 5000, NULL),
                     RLOCK_OK);
    ck_assert_int_eq(rlock_lock_kind(a, "owned", RLOCK_READ, 5000, NULL),
                     RLOCK_OK);
    ck_assert_int_eq(rlock_lock_kind(b, "owned", RLOCK_READ, 5000, NULL),
                     RLOCK_OK);
    ck_assert_int_eq(
        rlock_owners_kind(a, "owned", RLOCK_READ, &pttl, &owners, &count),
        RLOCK_OK);
    ck_assert_int_gt(pttl, 4000);
    ck_assert_uint_eq(count, 2);
    snprintf(want_a, sizeof want_a, "%s:%ld", rlock_client_id(a),
             syscall(SYS_gettid));
    snprintf(want_b, sizeof want_b, "%s:%ld", rlock_client_id(b),
             syscall(SYS_gettid));
    for (size_t i = 0; i < count; i++) {
        bool is_a = strcmp(owners[i].owner, want_a) == 0;

        ck_assert_msg(is_a || strcmp(owners[i].owner, want_b) == 0,
                      "unexpected owner %s", owners[i].owner);
        ck_assert_int_eq(owners[i].holds, is_a ? 2 : 1);
    }
    rlock_owners_free(owners);
    ck_assert_int_eq(
        rlock_owners_kind(a, "nobody's", RLOCK_LOCK, &pttl, &owners, &count),
        RLOCK_OK);
    ck_assert_int_eq(pttl, -2);
    ck_assert_uint_eq(count, 0);
    ck_assert_ptr_null(owners);
    ck_assert_int_eq(
        rlock_owners_kind(a, "owned", RLOCK_READ, NULL, &owners, &count),
        RLOCK_EINVAL);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

/* rlock_owners_named_kind(): each owner's client name where rlockd knows
 * it: the default "<host>/<program>/<pid>", one the client chose, none. */
START_TEST(owners_named_gives_each_owners_client_name)
{
    const rlock_options named = {.client_name = "unit-7"};
    const rlock_options nameless = {.client_name = ""};
    rlock_client *c[3] = {connect_or_fail(harness_addr(), NULL),
                          connect_or_fail(harness_addr(), &named),
                          connect_or_fail(harness_addr(), &nameless)};
    char host[64] = "", want[3][160];
    struct rlock_owner *owners;
    char **names;
    long long pttl;
    size_t count;

    gethostname(host, sizeof host - 1);
    snprintf(want[0], sizeof want[0], "%s/%s/%d", host,
             program_invocation_short_name, (int)getpid());
    snprintf(want[1], sizeof want[1], "unit-7");
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rlock_lock_kind(c[i], "named", RLOCK_READ, 5000, NULL),
                         RLOCK_OK);
    ck_assert_int_eq(rlock_owners_named_kind(c[0], "named", RLOCK_READ, &pttl,
                                             &owners, &names, &count),
                     RLOCK_OK);
    ck_assert_uint_eq(count, 3);
    for (size_t i = 0; i < count; i++)
        for (int k = 0; k < 3; k++)
            if (strncmp(owners[i].owner, rlock_client_id(c[k]),
                        strlen(rlock_client_id(c[k]))) == 0) {
                if (k == 2)
                    ck_assert_ptr_null(names[i]);
                else
                    ck_assert_str_eq(names[i], want[k]);
            }
    rlock_owners_free(owners);
    free(names);
    ck_assert_int_eq(rlock_owners_named_kind(c[0], "nobody's", RLOCK_LOCK,
                                             &pttl, &owners, &names, &count),
                     RLOCK_OK);
    ck_assert_ptr_null(names);
    ck_assert_int_eq(rlock_owners_named_kind(c[0], "named", RLOCK_READ, &pttl,
                                             &owners, NULL, &count),
                     RLOCK_EINVAL);
    for (int i = 0; i < 3; i++)
        rlock_close(c[i]);
}
END_TEST

Suite *kinds_suite(void)
{
    Suite *s = suite_create("kinds");
    TCase *tc = tcase_create("default daemon");

    tcase_add_checked_fixture(tc, harness_start_default, harness_stop);
    tcase_set_timeout(tc, CLIENT_TEST_TIMEOUT);
    tcase_add_loop_test(tc, each_kind_call_sends_its_kind_word, 0, KIND_CASES);
    tcase_add_test(tc, read_hold_is_shared_by_two_clients_threads);
    tcase_add_test(tc, write_hold_excludes_read_until_released);
    tcase_add_test(tc, fair_waiters_are_served_in_the_order_they_asked);
    tcase_add_test(
        tc, fenced_tokens_strictly_increase_and_token_answers_the_latest);
    tcase_add_test(tc, unknown_kind_is_invalid_without_a_round_trip);
    tcase_add_test(tc, owners_lists_every_holder_with_its_count);
    tcase_add_test(tc, owners_named_gives_each_owners_client_name);
    suite_add_tcase(s, tc);
    return s;
}
