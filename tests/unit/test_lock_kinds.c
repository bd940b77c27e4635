/*
 * test_lock_kinds.c - the rules that differ between lock kinds (FENCED,
 * FAIR, READ, WRITE), over the fake backend and fake clock: which script
 * each kind sends and with what, how its replies are read, who of this
 * daemon's waiters asks Redis and when, and what the kind word means to a
 * lock's identity and its renewals.
 *
 * The plain lock (RLock) has test_acquire.c, whose idiom this file
 * follows; the harness (engine_harness.h) checks after every test that
 * nothing leaked and that each call was answered exactly once.
 */
#include <stdio.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

/* The scripts each kind sends (kind_rlock.c, kind_rwlock.c). */
#define FENCED_ACQUIRE "fenced_acquire"
#define FENCED_TOKEN "fenced_token"
#define FAIR_ACQUIRE "fair_acquire"
#define FAIR_LEAVE "fair_leave"
#define FAIR_RELEASE "fair_release"
#define READ_ACQUIRE "rw_read_acquire"
#define WRITE_ACQUIRE "rw_write_acquire"
#define READ_SET "rw_read_set"
#define WRITE_SET "rw_write_set"
#define RW_INSPECT "rw_inspect"
#define RW_RENEW "rw_renew_many"

/* The keys and channels of lock "L" (redisson-family.md's names). */
#define TOKEN_OF_L "redisson_lock_token:{L}"
#define QUEUE_OF_L "redisson_lock_queue:{L}"
#define TIMEOUT_OF_L "redisson_lock_timeout:{L}"
#define RW_CHANNEL_OF_L "redisson_rwlock:{L}"
/* A fair waiter's own channel: the lock's, ":" and its owner field. */
#define FAIR_CHANNEL_OF_L_BY(field) CHANNEL_OF_L ":" field

/* ---- helpers ------------------------------------------------------------ */

static struct test_call *acquire_as(const struct lock_kind *kind,
                                    struct session *s, const char *name,
                                    uint64_t thread_id, int64_t wait_ms)
{
    return start_kind(s, kind, LOCK_REQUEST_ACQUIRE, name, thread_id, wait_ms,
                      LEASE_MS);
}

static struct test_call *request_as(const struct lock_kind *kind,
                                    struct session *s, enum lock_request_op op,
                                    const char *name, uint64_t thread_id)
{
    return start_kind(s, kind, op, name, thread_id, 0, 0);
}

/* The fenced acquire's refusal {0, pttl}. */
static void answer_pair(struct fake_eval *e, long long first, long long second)
{
    const struct backend_value element[2] = {
        {.type = VALUE_INTEGER, .integer = first},
        {.type = VALUE_INTEGER, .integer = second}};

    fake_eval_answer(e, &(struct backend_value){.type = VALUE_ARRAY,
                                                .elements = 2,
                                                .element = element});
}

/* The fenced acquire's grant {1, token, was}: was -1, the counter was
 * not behind this daemon's floor; else what it held before the script
 * raised it. */
static void answer_grant(struct fake_eval *e, long long token, long long was)
{
    const struct backend_value element[3] = {
        {.type = VALUE_INTEGER, .integer = 1},
        {.type = VALUE_INTEGER, .integer = token},
        {.type = VALUE_INTEGER, .integer = was}};

    fake_eval_answer(e, &(struct backend_value){.type = VALUE_ARRAY,
                                                .elements = 3,
                                                .element = element});
}

/* The pending acquire of L by field under the kind's acquire script. */
static struct fake_eval *acquire_of_l_by(const char *script, const char *field)
{
    return expect_eval_with(script, "L", field);
}

/* The script each kind acquires with. */
static const char *acquire_script_of(const struct lock_kind *kind)
{
    static const struct {
        const struct lock_kind *kind;
        const char *acquire;
    } scripts[] = {{&lock_kind_rlock, ACQUIRE},
                   {&lock_kind_fenced, FENCED_ACQUIRE},
                   {&lock_kind_fair, FAIR_ACQUIRE},
                   {&lock_kind_read, READ_ACQUIRE},
                   {&lock_kind_write, WRITE_ACQUIRE}};

    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
        if (scripts[i].kind == kind)
            return scripts[i].acquire;
    ck_abort_msg("no acquire script known for kind %s", kind->name);
    return NULL;
}

/* Redis refuses e, an acquire, with the lock's pttl (every kind's
 * refusal but FENCED's). */
static void refuse(struct fake_eval *e, long long pttl)
{
    fake_eval_answer(
        e, &(struct backend_value){.type = VALUE_INTEGER, .integer = pttl});
}

/* Acquires name as kind with no wait and lease (or WATCHDOG_MODE), and
 * has Redis grant it in that kind's reply shape (a fenced grant's token
 * is 1). */
static void take_as(const struct lock_kind *kind, struct session *s,
                    const char *name, uint64_t thread_id, int64_t lease_ms)
{
    struct test_call *c =
        start_kind(s, kind, LOCK_REQUEST_ACQUIRE, name, thread_id, 0, lease_ms);
    struct fake_eval *e = expect_eval(acquire_script_of(kind), name);

    if (kind == &lock_kind_fenced) {
        answer_grant(e, 1, -1);
        expect_integer(c, 1);
    } else {
        fake_eval_answer(e, &nil_reply);
        expect_result(c, RESULT_GRANTED);
    }
}

/* Queues an acquire of L as kind by a new session id, thread 1 (owner
 * field field), refused by Redis with a 5 s PTTL. */
static struct test_call *queue_as(const struct lock_kind *kind, const char *id,
                                  const char *field)
{
    struct test_call *c = acquire_as(kind, join(id), "L", 1, WAIT_FOREVER);

    refuse(acquire_of_l_by(acquire_script_of(kind), field), 5000);
    expect_open(c);
    return c;
}

/* ---- FENCED ------------------------------------------------------------- */

/* A grant answers the token (RESULT_INTEGER, not GRANTED), reentrant
 * ones too; the call carries the token key, and the highest token handed
 * out for the name (0: none yet) as the floor of the next. */
START_TEST(fenced_grant_answers_its_token_as_an_integer)
{
    struct session *a = join("a");
    struct test_call *c = acquire_as(&lock_kind_fenced, a, "L", 1, 0);
    struct fake_eval *e = expect_eval(FENCED_ACQUIRE, "L");

    ck_assert_int_eq(e->nkeys, 2);
    expect_args(e, 6, "L", TOKEN_OF_L, "10000", "a:1", "0", "0");
    answer_grant(e, 7, -1);
    expect_integer(c, 7);
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.fenced_locks_acquired, 1);

    c = acquire_as(&lock_kind_fenced, a, "L", 1, 0);
    e = expect_eval(FENCED_ACQUIRE, "L");
    expect_args(e, 6, "L", TOKEN_OF_L, "10000", "a:1", "1", "7");
    answer_grant(e, 8, -1);
    expect_integer(c, 8);
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.fenced_locks_acquired, 2);
}
END_TEST

/* {0, pttl}: TRYLOCK is not granted (the front end's :0); a waiter
 * queues, its wake-up set by the pttl of the reply's second element. */
START_TEST(fenced_refusal_reads_the_pttl_from_the_pair)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *c = acquire_as(&lock_kind_fenced, a, "L", 1, 0);

    answer_pair(expect_eval(FENCED_ACQUIRE, "L"), 0, 4000);
    expect_result(c, RESULT_NOT_GRANTED);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    expect_nothing_pending();

    c = acquire_as(&lock_kind_fenced, b, "L", 1, WAIT_FOREVER);
    answer_pair(expect_eval(FENCED_ACQUIRE, "L"), 0, 4000);
    expect_open(c);
    ck_assert_uint_eq(fake_backend_listeners(CHANNEL_OF_L), 1);
    ck_assert_uint_eq(fake_clock.due_ms, T0 + 4000);
    advance(3999);
    expect_nothing_pending();
    advance(1);
    answer_grant(expect_eval(FENCED_ACQUIRE, "L"), 3, -1);
    expect_integer(c, 3);
    ck_assert_uint_eq(stats.fenced_locks_acquired, 1);
}
END_TEST

/* RLock's replies (nil, a bare PTTL) and broken pairs are not a fenced
 * acquire's: an error, and nothing held or queued. */
START_TEST(fenced_acquire_reply_of_another_shape_is_an_error)
{
    struct session *a = join("a");
    const struct backend_value one_element = {.type = VALUE_INTEGER,
                                              .integer = 1};
    const struct backend_value short_pair = {
        .type = VALUE_ARRAY, .elements = 1, .element = &one_element};
    const struct backend_value granted_pair[2] = {one_element, one_element};
    const struct backend_value grant_without_was = {
        .type = VALUE_ARRAY, .elements = 2, .element = granted_pair};
    const struct backend_value pttl = {.type = VALUE_INTEGER, .integer = 4000};
    const struct backend_value *bad[] = {&nil_reply, &pttl, &short_pair,
                                         &grant_without_was};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct test_call *c =
            acquire_as(&lock_kind_fenced, a, "L", 1, WAIT_FOREVER);

        answer(FENCED_ACQUIRE, "L", bad[i]);
        expect_error(c, REPLY_ERR);
    }
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.waiting_clients, 0);
}
END_TEST

/* Acquires name FENCED as a:1 (reentrantly once held), expects the
 * floor the call carries, and grants it token. */
static void fenced_grant_over(struct session *a, const char *name,
                              const char *floor, long long token)
{
    struct test_call *c = acquire_as(&lock_kind_fenced, a, name, 1, 0);
    struct fake_eval *e = expect_eval(FENCED_ACQUIRE, name);

    ck_assert_str_eq(fake_eval_arg(e, 5), floor);
    answer_grant(e, token, -1);
    expect_integer(c, token);
}

/* A grant whose script found Redis's counter behind the floor (it lost
 * data) answers the token it raised it to, and counts it. */
START_TEST(fenced_grant_over_a_counter_behind_is_counted)
{
    struct session *a = join("a");
    struct test_call *c;
    struct fake_eval *e;

    fenced_grant_over(a, "L", "0", 41);
    c = acquire_as(&lock_kind_fenced, a, "L", 1, 0);
    e = expect_eval(FENCED_ACQUIRE, "L");
    ck_assert_str_eq(fake_eval_arg(e, 5), "41");
    answer_grant(e, 42, 0); /* the counter was gone */
    expect_integer(c, 42);
    ck_assert_uint_eq(stats.fence_tokens_raised, 1);
    fenced_grant_over(a, "L", "42", 43);
    ck_assert_uint_eq(stats.fence_tokens_raised, 1);
}
END_TEST

/* At most fence_memory_names names are remembered: the least recently
 * granted one is forgotten (its floor is 0 again), a grant counts as a
 * use, and a remembered floor only rises. */
START_TEST(fenced_floors_are_remembered_for_the_most_recent_names)
{
    struct session *a = join("a");

    engine_cfg.fence_memory_names = 2;
    fenced_grant_over(a, "A", "0", 5);
    fenced_grant_over(a, "B", "0", 6);
    fenced_grant_over(a, "A", "5", 7);  /* A is the most recent now */
    fenced_grant_over(a, "C", "0", 9);  /* B goes */
    fenced_grant_over(a, "B", "0", 10); /* A goes */
    fenced_grant_over(a, "C", "9", 11);
    fenced_grant_over(a, "A", "0", 12);
    fenced_grant_over(a, "A", "12", 3); /* a lower token: the floor stays */
    fenced_grant_over(a, "A", "12", 13);
}
END_TEST

START_TEST(fenced_token_asks_the_token_script_and_answers_its_integer)
{
    struct session *a = join("a");
    struct test_call *c =
        request_as(&lock_kind_fenced, a, LOCK_REQUEST_TOKEN, "L", 0);
    struct fake_eval *e = expect_eval(FENCED_TOKEN, "L");

    ck_assert_int_eq(e->nkeys, 2);
    expect_args(e, 2, "L", TOKEN_OF_L);
    answer_integer(FENCED_TOKEN, "L", 42);
    expect_integer(c, 42);

    c = request_as(&lock_kind_fenced, a, LOCK_REQUEST_TOKEN, "L", 0);
    answer_nil(FENCED_TOKEN, "L");
    expect_error(c, REPLY_ERR);
}
END_TEST

/* ---- FAIR --------------------------------------------------------------- */

/* The acquire names the queue keys, the place's wait (WAIT, else
 * fair_wait_timeout_ms), whether a refusal queues (never without WAIT)
 * and how long a new place lives unrenewed (watchdog_timeout_ms). */
START_TEST(fair_acquire_sends_its_queue_keys_wait_and_enqueue_flag)
{
    struct session *a = join("a");
    struct test_call *c;
    struct fake_eval *e;

    c = acquire_as(&lock_kind_fair, a, "L", 1, WAIT_FOREVER);
    e = expect_eval(FAIR_ACQUIRE, "L");
    ck_assert_int_eq(e->nkeys, 3);
    expect_args(e, 9, "L", QUEUE_OF_L, TIMEOUT_OF_L, "10000", "a:1", "0",
                "300000", "1", "30000");
    fake_eval_answer(e, &nil_reply);
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.fair_locks_acquired, 1);
    expect_nothing_pending(); /* a grant leaves no queue place to give up */

    c = acquire_as(&lock_kind_fair, a, "M", 1, 5000);
    expect_args(expect_eval(FAIR_ACQUIRE, "M"), 9, "M",
                "redisson_lock_queue:{M}", "redisson_lock_timeout:{M}", "10000",
                "a:1", "0", "5000", "1", "30000");
    answer_nil(FAIR_ACQUIRE, "M");

    c = acquire_as(&lock_kind_fair, a, "N", 1, 0);
    expect_args(expect_eval(FAIR_ACQUIRE, "N"), 9, "N",
                "redisson_lock_queue:{N}", "redisson_lock_timeout:{N}", "10000",
                "a:1", "0", "300000", "0", "30000");
    answer_integer(FAIR_ACQUIRE, "N", 5000);
    expect_result(c, RESULT_NOT_GRANTED);
    expect_nothing_pending(); /* never queued in Redis: nothing to leave */

    c = request_as(&lock_kind_fair, a, LOCK_REQUEST_RELEASE, "L", 1);
    expect_args(expect_eval(FAIR_RELEASE, "L"), 9, "L", CHANNEL_OF_L,
                QUEUE_OF_L, TIMEOUT_OF_L, "0", "10000", "a:1", "1", "publish");
    answer(FAIR_RELEASE, "L", &one_reply);
    expect_integer(c, 1);
}
END_TEST

/* Each waiter listens on the lock's channel followed by its own field,
 * and nobody on the lock's channel itself. */
START_TEST(fair_waiters_each_listen_on_a_channel_of_their_own)
{
    queue_as(&lock_kind_fair, "b", "b:1");
    queue_as(&lock_kind_fair, "c", "c:1");
    ck_assert_uint_eq(fake_backend_listeners(FAIR_CHANNEL_OF_L_BY("b:1")), 1);
    ck_assert_uint_eq(fake_backend_listeners(FAIR_CHANNEL_OF_L_BY("c:1")), 1);
    ck_assert_uint_eq(fake_backend_listeners(CHANNEL_OF_L), 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 2);
    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_L, "0"), 0);
    expect_nothing_pending();
}
END_TEST

/* A message on a waiter's channel wakes that waiter, even one behind
 * the local head: Redis's queue, not ours, says whose turn it is. */
START_TEST(fair_message_on_a_waiters_channel_wakes_that_waiter)
{
    struct test_call *b = queue_as(&lock_kind_fair, "b", "b:1");
    struct test_call *c = queue_as(&lock_kind_fair, "c", "c:1");

    ck_assert_uint_eq(fake_backend_publish(FAIR_CHANNEL_OF_L_BY("c:1"), "0"),
                      1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer_nil(FAIR_ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
    expect_open(b);
    ck_assert_uint_eq(fake_backend_listeners(FAIR_CHANNEL_OF_L_BY("c:1")), 0);
    expect_nothing_pending();

    fake_backend_publish(FAIR_CHANNEL_OF_L_BY("b:1"), "0");
    answer_nil(FAIR_ACQUIRE, "L");
    expect_result(b, RESULT_GRANTED);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
}
END_TEST

/* While the head waits, the waiter behind it sends nothing: not when the
 * head's TTL wake-up comes, not when a release here wakes the lock, not
 * when the head is granted; it asks only on its own message. */
START_TEST(fair_only_the_local_head_runs_the_acquire_script)
{
    struct session *a = join("a");
    struct test_call *b, *c, *unlock;

    take_as(&lock_kind_fair, a, "L", 1, LEASE_MS);
    b = queue_as(&lock_kind_fair, "b", "b:1");
    c = queue_as(&lock_kind_fair, "c", "c:1");
    expect_nothing_pending();

    advance(5000); /* the head's wake-up at the lock's PTTL */
    ck_assert_uint_eq(fake_backend_pending(), 1);
    refuse(acquire_of_l_by(FAIR_ACQUIRE, "b:1"), 5000);
    expect_nothing_pending();

    unlock = request_as(&lock_kind_fair, a, LOCK_REQUEST_RELEASE, "L", 1);
    answer(FAIR_RELEASE, "L", &one_reply);
    expect_integer(unlock, 1);
    ck_assert_uint_eq(fake_backend_pending(), 1); /* the head, at once */
    fake_eval_answer(acquire_of_l_by(FAIR_ACQUIRE, "b:1"), &nil_reply);
    expect_result(b, RESULT_GRANTED);
    expect_nothing_pending(); /* c waits for its message, or b's lease */
    expect_open(c);

    fake_backend_publish(FAIR_CHANNEL_OF_L_BY("c:1"), "0");
    fake_eval_answer(acquire_of_l_by(FAIR_ACQUIRE, "c:1"), &nil_reply);
    expect_result(c, RESULT_GRANTED);
    expect_nothing_pending();
}
END_TEST

/* Expects the one pending leave-queue call of L, by field; and answers
 * it (1: it left). */
static void expect_left_queue(const char *field)
{
    struct fake_eval *e = expect_eval(FAIR_LEAVE, "L");

    ck_assert_uint_eq(fake_backend_count(FAIR_LEAVE, NULL), 1);
    ck_assert_int_eq(e->nkeys, 3);
    expect_args(e, 4, "L", QUEUE_OF_L, TIMEOUT_OF_L, field);
    fake_eval_answer(e, &one_reply);
}

/* A waiter whose WAIT runs out leaves the queue in Redis at once, not
 * when its place there runs out. */
START_TEST(fair_waiter_whose_wait_runs_out_leaves_the_redis_queue)
{
    struct test_call *b = acquire_as(&lock_kind_fair, join("b"), "L", 1, 3000);

    answer_integer(FAIR_ACQUIRE, "L", 10000);
    expect_open(b);
    advance(2999);
    expect_nothing_pending();
    advance(1);
    expect_result(b, RESULT_NOT_GRANTED);
    expect_left_queue("b:1");
    expect_nothing_pending();
}
END_TEST

/* A waiter that cancels (its connection closes: the front end abandons
 * its call, then its session ends) leaves the queue; the one behind,
 * now the local head, looks at once. */
START_TEST(fair_waiter_that_cancels_or_disconnects_leaves_the_redis_queue)
{
    struct session *b = join("b");
    struct test_call *wb = acquire_as(&lock_kind_fair, b, "L", 1, WAIT_FOREVER);
    struct test_call *wc;

    answer_integer(FAIR_ACQUIRE, "L", 5000);
    wc = queue_as(&lock_kind_fair, "c", "c:1");
    abandon(wb);
    leave(b);
    expect_left_queue("b:1");
    fake_eval_answer(acquire_of_l_by(FAIR_ACQUIRE, "c:1"), &nil_reply);
    expect_result(wc, RESULT_GRANTED);
    expect_nothing_pending();
}
END_TEST

/* A leave that gets no reply (Redis went away) is sent again once Redis
 * answers: a place left in the queue would hold up everyone behind it
 * until it ran out. */
START_TEST(fair_leave_without_a_reply_is_sent_again_when_redis_answers)
{
    struct session *b = join("b");
    struct test_call *wb = acquire_as(&lock_kind_fair, b, "L", 1, WAIT_FOREVER);

    answer_integer(FAIR_ACQUIRE, "L", 5000);
    expect_open(wb);
    abandon(wb);
    fake_eval_answer(expect_eval(FAIR_LEAVE, "L"), NULL);
    expect_nothing_pending();
    fake_backend.ready = true;
    lock_engine_backend_ready();
    expect_left_queue("b:1");
    expect_nothing_pending();
}
END_TEST

/* An attempt still in flight when its caller went may queue it in Redis
 * after all: it leaves at once (behind the attempt, on the same
 * connection), and whatever leave the late refusal adds is the same
 * owner's. */
START_TEST(fair_attempt_abandoned_in_flight_leaves_the_redis_queue)
{
    struct test_call *b =
        acquire_as(&lock_kind_fair, join("b"), "L", 1, WAIT_FOREVER);
    struct fake_eval *leave_call;

    abandon(b);
    ck_assert_uint_eq(fake_backend_count(FAIR_LEAVE, "L"), 1);
    answer_integer(FAIR_ACQUIRE, "L", 5000); /* it did queue */
    while ((leave_call = fake_backend_find(FAIR_LEAVE, "L")) != NULL) {
        expect_args(leave_call, 4, "L", QUEUE_OF_L, TIMEOUT_OF_L, "b:1");
        fake_eval_answer(leave_call, &one_reply);
    }
    expect_nothing_pending();
}
END_TEST

START_TEST(fair_waiter_answered_at_shutdown_leaves_the_redis_queue)
{
    struct test_call *b = queue_as(&lock_kind_fair, "b", "b:1");

    lock_engine_shutdown();
    expect_error(b, REPLY_SHUTDOWN);
    expect_left_queue("b:1");
}
END_TEST

/* The script that moves this daemon's waiters' places forward. */
#define FAIR_RENEW_PLACES "fair_renew_places"
/* A PTTL no test here waits out: a refused waiter sleeps until a message
 * or a renewal's news wakes it. */
#define LONG_PTTL 3600000

/* Queues the acquire of name by a new session id, thread 1 (owner field
 * "<id>:1"), refused with LONG_PTTL: it has a place in Redis's queue. */
static struct test_call *queue_fair(const char *id, const char *name)
{
    struct test_call *c =
        acquire_as(&lock_kind_fair, join(id), name, 1, WAIT_FOREVER);
    char field[16];

    snprintf(field, sizeof(field), "%s:1", id);
    refuse(expect_eval_with(FAIR_ACQUIRE, name, field), LONG_PTTL);
    expect_open(c);
    return c;
}

/* Every waiter's place is renewed a third into watchdog_timeout_ms, all
 * in one call per round (places of several locks, of one key group,
 * together), with watchdog_timeout_ms and its wait (fair_wait_timeout_ms
 * or WAIT); and again each round. */
START_TEST(fair_places_are_renewed_together_each_third_of_the_watchdog_timeout)
{
    struct fake_eval *e;

    queue_fair("b", "L");
    queue_fair("c", "L");
    queue_fair("d", "M");
    advance(RENEW_EVERY_MS - 1);
    expect_nothing_pending();
    advance(1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    e = expect_eval(FAIR_RENEW_PLACES, QUEUE_OF_L);
    ck_assert_int_eq(e->nkeys, 6);
    expect_args(e, 15, QUEUE_OF_L, TIMEOUT_OF_L, QUEUE_OF_L, TIMEOUT_OF_L,
                "redisson_lock_queue:{M}", "redisson_lock_timeout:{M}", "b:1",
                "30000", "300000", "c:1", "30000", "300000", "d:1", "30000",
                "300000");
    ck_assert_uint_eq(stats.watchdog_batches, 1);
    ck_assert_uint_eq(stats.fair_place_renewals, 3);
    ck_assert_uint_eq(stats.watchdog_renewals, 0);
    answer_renewal(e, 3, (const long long[]){1, 1, 1});
    expect_nothing_pending(); /* renewed: nobody asks */
    advance(RENEW_EVERY_MS);
    answer_renewal(expect_eval(FAIR_RENEW_PLACES, QUEUE_OF_L), 3,
                   (const long long[]){1, 1, 1});
    ck_assert_uint_eq(stats.watchdog_batches, 2);

    engine_cfg.renew_batch_size = 2;
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_count(FAIR_RENEW_PLACES, NULL), 2);
}
END_TEST

/* A waiter whose place the renewal found gone (a script dropped it) asks
 * again at once, which takes a new place; the others sleep on. */
START_TEST(fair_waiter_whose_place_is_found_gone_asks_again)
{
    struct test_call *b = queue_fair("b", "L");
    struct test_call *c = queue_fair("c", "L");

    advance(RENEW_EVERY_MS);
    answer_renewal(expect_eval(FAIR_RENEW_PLACES, QUEUE_OF_L), 2,
                   (const long long[]){1, 0});
    ck_assert_uint_eq(fake_backend_pending(), 1);
    refuse(expect_eval_with(FAIR_ACQUIRE, "L", "c:1"), LONG_PTTL);
    expect_open(b);
    expect_open(c);
    expect_nothing_pending();
}
END_TEST

/* A waiter granted, or gone, is renewed no more; a round in flight when
 * it left is not acted on (a place found gone then asks nothing). */
START_TEST(fair_places_of_waiters_that_left_are_not_renewed)
{
    struct test_call *b = queue_fair("b", "L");
    struct fake_eval *e;

    queue_fair("c", "L");
    advance(RENEW_EVERY_MS);
    e = expect_eval(FAIR_RENEW_PLACES, QUEUE_OF_L);
    fake_backend_publish(FAIR_CHANNEL_OF_L_BY("b:1"), "0");
    answer_nil(FAIR_ACQUIRE, "L");
    expect_result(b, RESULT_GRANTED);
    answer_renewal(e, 2, (const long long[]){0, 1});
    expect_nothing_pending();
    advance(RENEW_EVERY_MS); /* c, the head now, looks at b's lease's end */
    refuse(expect_eval_with(FAIR_ACQUIRE, "L", "c:1"), LONG_PTTL);
    e = expect_eval(FAIR_RENEW_PLACES, QUEUE_OF_L);
    ck_assert_int_eq(e->nkeys, 2);
    expect_args(e, 5, QUEUE_OF_L, TIMEOUT_OF_L, "c:1", "30000", "300000");
    fake_eval_answer(e, NULL); /* unanswered: the next round renews it */
    expect_nothing_pending();
    advance(RENEW_EVERY_MS);
    answer_renewal(expect_eval(FAIR_RENEW_PLACES, QUEUE_OF_L), 1,
                   (const long long[]){1});
}
END_TEST

/* ---- READ and WRITE ----------------------------------------------------- */

/* A reader's field is its owner's, a writer's has ":write"; releases go
 * through each mode's set script, a write unlock's message "1". */
START_TEST(read_and_write_send_their_own_scripts_and_fields)
{
    struct session *a = join("a");
    struct test_call *c = acquire_as(&lock_kind_read, a, "L", 1, 0);
    struct fake_eval *e = expect_eval(READ_ACQUIRE, "L");

    ck_assert_int_eq(e->nkeys, 1);
    expect_args(e, 4, "L", "10000", "a:1", "0");
    fake_eval_answer(e, &nil_reply);
    expect_result(c, RESULT_GRANTED);
    c = acquire_as(&lock_kind_write, a, "M", 1, 0);
    expect_args(expect_eval(WRITE_ACQUIRE, "M"), 4, "M", "10000", "a:1:write",
                "0");
    answer_nil(WRITE_ACQUIRE, "M");
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.read_locks_acquired, 1);
    ck_assert_uint_eq(stats.write_locks_acquired, 1);

    c = request_as(&lock_kind_read, a, LOCK_REQUEST_RELEASE, "L", 1);
    expect_args(expect_eval(READ_SET, "L"), 7, "L", RW_CHANNEL_OF_L, "0",
                "10000", "a:1", "0", "publish");
    answer(READ_SET, "L", &one_reply);
    expect_integer(c, 1);
    c = request_as(&lock_kind_write, a, LOCK_REQUEST_RELEASE, "M", 1);
    expect_args(expect_eval(WRITE_SET, "M"), 7, "M", "redisson_rwlock:{M}", "1",
                "10000", "a:1:write", "0", "publish");
    answer(WRITE_SET, "M", &one_reply);
    expect_integer(c, 1);
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

/* Read holds are shared: once the head reader is granted, the next asks
 * at once, without waiting for a message that a grant never sends. */
START_TEST(after_a_read_grant_the_next_local_reader_asks_at_once)
{
    struct test_call *w[3];
    static const char *const fields[] = {"b:1", "c:1", "d:1"};

    w[0] = queue_as(&lock_kind_read, "b", "b:1");
    w[1] = queue_as(&lock_kind_read, "c", "c:1");
    w[2] = queue_as(&lock_kind_read, "d", "d:1");
    ck_assert_uint_eq(fake_backend_listeners(RW_CHANNEL_OF_L), 1);
    fake_backend_publish(RW_CHANNEL_OF_L, "0");
    for (size_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(fake_backend_pending(), 1);
        fake_eval_answer(acquire_of_l_by(READ_ACQUIRE, fields[i]), &nil_reply);
        expect_result(w[i], RESULT_GRANTED);
    }
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 3);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
}
END_TEST

/* A write hold is not shared: the next writer waits for a message. */
START_TEST(after_a_write_grant_the_next_local_writer_waits)
{
    struct test_call *b = queue_as(&lock_kind_write, "b", "b:1:write");
    struct test_call *c = queue_as(&lock_kind_write, "c", "c:1:write");

    fake_backend_publish(RW_CHANNEL_OF_L, "0");
    fake_eval_answer(acquire_of_l_by(WRITE_ACQUIRE, "b:1:write"), &nil_reply);
    expect_result(b, RESULT_GRANTED);
    expect_nothing_pending();
    expect_open(c);
}
END_TEST

/* On redisson_rwlock:{name}, "1" (a write unlock) wakes every waiter,
 * "0" (a read unlock) only the head. */
START_TEST(rwlock_message_1_wakes_every_waiter_and_0_only_the_head)
{
    queue_as(&lock_kind_read, "b", "b:1");
    queue_as(&lock_kind_read, "c", "c:1");
    fake_backend_publish(RW_CHANNEL_OF_L, "1");
    ck_assert_uint_eq(fake_backend_count(READ_ACQUIRE, "L"), 2);
    answer_integer(READ_ACQUIRE, "L", 5000);
    answer_integer(READ_ACQUIRE, "L", 5000);
    expect_nothing_pending();
    fake_backend_publish(RW_CHANNEL_OF_L, "0");
    ck_assert_uint_eq(fake_backend_pending(), 1);
    acquire_of_l_by(READ_ACQUIRE, "b:1");
}
END_TEST

/* A READ asked while this daemon has a WRITE waiter of the name queues
 * behind it without asking Redis (no writer starvation by local
 * readers), also when a message wakes it; it asks once the writer is
 * gone from the queue. */
START_TEST(a_reader_does_not_overtake_a_writer_queued_before_it)
{
    struct test_call *w = queue_as(&lock_kind_write, "b", "b:1:write");
    struct test_call *r =
        acquire_as(&lock_kind_read, join("c"), "L", 1, WAIT_FOREVER);

    expect_open(r);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.lock_attempts, 1);
    ck_assert_uint_eq(stats.waiting_clients, 2);

    /* both locks' listeners hear it; only the writer asks */
    ck_assert_uint_eq(fake_backend_publish(RW_CHANNEL_OF_L, "1"), 2);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    fake_eval_answer(acquire_of_l_by(WRITE_ACQUIRE, "b:1:write"), &nil_reply);
    expect_result(w, RESULT_GRANTED);

    /* the writer left the queue: the reader asks now */
    ck_assert_uint_eq(fake_backend_pending(), 1);
    fake_eval_answer(
        acquire_of_l_by(READ_ACQUIRE, "c:1"),
        &(struct backend_value){.type = VALUE_INTEGER, .integer = LEASE_MS});
    expect_open(r);
}
END_TEST

/* Refuses d's WRITE acquire on L if one is pending (whether a waiter
 * behind the queue's head asks depends on when it was woken). */
static void refuse_pending_write_of_d(void)
{
    if (fake_backend_count(WRITE_ACQUIRE, "L") > 0)
        refuse(acquire_of_l_by(WRITE_ACQUIRE, "d:1:write"), 5000);
}

/* A reader yields only to writers that asked before it: once those are
 * gone it asks, though a writer that came after it still waits (a stream
 * of writers does not starve the readers). */
START_TEST(a_reader_does_not_yield_to_a_writer_that_came_after_it)
{
    struct test_call *w = queue_as(&lock_kind_write, "b", "b:1:write");
    struct test_call *r =
        acquire_as(&lock_kind_read, join("c"), "L", 1, WAIT_FOREVER);
    struct test_call *later =
        acquire_as(&lock_kind_write, join("d"), "L", 1, WAIT_FOREVER);

    refuse_pending_write_of_d();
    expect_nothing_pending();
    ck_assert_uint_eq(fake_backend_publish(RW_CHANNEL_OF_L, "1"), 2);
    fake_eval_answer(acquire_of_l_by(WRITE_ACQUIRE, "b:1:write"), &nil_reply);
    expect_result(w, RESULT_GRANTED);
    refuse_pending_write_of_d();
    ck_assert_uint_eq(fake_backend_count(READ_ACQUIRE, "L"), 1);
    refuse(acquire_of_l_by(READ_ACQUIRE, "c:1"), 5000);
    expect_open(r);
    expect_open(later);
}
END_TEST

/* An owner that holds a read hold re-enters at once, writer waiting or
 * not (it would otherwise wait for a writer that waits for it). */
START_TEST(a_reader_already_holding_reenters_past_a_queued_writer)
{
    struct session *a = join("a");
    struct test_call *c;

    take_as(&lock_kind_read, a, "L", 1, LEASE_MS);
    queue_as(&lock_kind_write, "b", "b:1:write");
    c = acquire_as(&lock_kind_read, a, "L", 1, WAIT_FOREVER);
    expect_args(acquire_of_l_by(READ_ACQUIRE, "a:1"), 4, "L", "10000", "a:1",
                "1");
    answer_nil(READ_ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);

    c = acquire_as(&lock_kind_read, a, "L", 2, WAIT_FOREVER); /* a new hold */
    expect_open(c);
    expect_nothing_pending();
}
END_TEST

/* A read holder's WRITE would wait for itself: refused at once, nothing
 * sent; another thread of the session is another owner and asks; after
 * the read hold is released, the same owner may write. */
START_TEST(a_read_holder_asking_write_is_refused_without_asking_redis)
{
    struct session *a = join("a");
    struct test_call *c;

    take_as(&lock_kind_read, a, "L", 1, LEASE_MS);
    expect_error(acquire_as(&lock_kind_write, a, "L", 1, WAIT_FOREVER),
                 REPLY_ERR);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.lock_attempts, 1);
    ck_assert_uint_eq(stats.waiting_clients, 0);

    c = acquire_as(&lock_kind_write, a, "L", 2, 0);
    answer_integer(WRITE_ACQUIRE, "L", 5000);
    expect_result(c, RESULT_NOT_GRANTED);

    c = request_as(&lock_kind_read, a, LOCK_REQUEST_RELEASE, "L", 1);
    answer(READ_SET, "L", &one_reply);
    expect_integer(c, 1);
    c = acquire_as(&lock_kind_write, a, "L", 1, 0);
    expect_args(expect_eval(WRITE_ACQUIRE, "L"), 4, "L", "10000", "a:1:write",
                "0");
    answer_nil(WRITE_ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
}
END_TEST

/* The writer may read too (a downgrade); its write unlock then leaves
 * its read hold, which it still holds. */
START_TEST(a_writer_may_downgrade_to_read)
{
    struct session *a = join("a");
    struct test_call *c;
    const struct backend_value held[3] = {
        {.type = VALUE_INTEGER, .integer = 1},
        {.type = VALUE_INTEGER, .integer = 1},
        {.type = VALUE_INTEGER, .integer = 9000}};

    take_as(&lock_kind_write, a, "L", 1, LEASE_MS);
    c = acquire_as(&lock_kind_read, a, "L", 1, 0);
    expect_args(expect_eval(READ_ACQUIRE, "L"), 4, "L", "10000", "a:1", "0");
    answer_nil(READ_ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.held_locks, 2);

    c = request_as(&lock_kind_write, a, LOCK_REQUEST_RELEASE, "L", 1);
    answer(WRITE_SET, "L", &one_reply);
    expect_integer(c, 1);
    ck_assert_uint_eq(stats.held_locks, 1);

    c = request_as(&lock_kind_read, a, LOCK_REQUEST_IS_HELD, "L", 1);
    expect_args(expect_eval(RW_INSPECT, "L"), 3, "L", "a:1", "read");
    answer(RW_INSPECT, "L",
           &(struct backend_value){
               .type = VALUE_ARRAY, .elements = 3, .element = held});
    expect_integer(c, 1);
}
END_TEST

/*
 * The write holder's downgrade (READ by the owner of the write hold) does
 * not queue behind a local writer that waits for that very write hold:
 * Redis grants it at once (rw_read_acquire: "written by the owner
 * itself"), where yielding would make each wait for the other for ever.
 */
START_TEST(a_writer_downgrading_does_not_wait_for_a_writer_waiting_for_it)
{
    struct session *a = join("a");
    struct test_call *downgrade;

    take_as(&lock_kind_write, a, "L", 1, WATCHDOG_MODE);
    /* queued unasked: a holds the lock here */
    expect_open(acquire_as(&lock_kind_write, join("b"), "L", 1, WAIT_FOREVER));
    ck_assert_uint_eq(stats.acquires_queued_unasked, 1);
    downgrade = acquire_as(&lock_kind_read, a, "L", 1, WAIT_FOREVER);
    ck_assert_msg(fake_backend_count(READ_ACQUIRE, "L") == 1,
                  "the write holder's READ queued behind the writer "
                  "waiting for it, and asked Redis nothing");
    answer_nil(READ_ACQUIRE, "L");
    expect_result(downgrade, RESULT_GRANTED);
}
END_TEST

/* ---- the kind word is part of a lock's identity --------------------------- */

/* A FAIR hold is not the plain lock of the same name: an UNLOCK or LOCK
 * of another kind stored in the same hash is refused unsent; the FAIR
 * hold stays until UNLOCK FAIR releases it. ISHELD without a kind word
 * reports the hold whatever its kind, so it asks Redis; of an owner that
 * holds the name under no kind, it answers 0 unasked. */
START_TEST(unlock_with_another_kind_word_does_not_release_the_hold)
{
    struct session *a = join("a");
    struct test_call *c;
    const struct backend_value held[3] = {
        {.type = VALUE_INTEGER, .integer = 1},
        {.type = VALUE_INTEGER, .integer = 1},
        {.type = VALUE_INTEGER, .integer = LEASE_MS}};

    take_as(&lock_kind_fair, a, "L", 1, LEASE_MS);
    expect_integer(
        request_as(&lock_kind_rlock, a, LOCK_REQUEST_IS_HELD, "L", 2), 0);
    expect_nothing_pending();
    c = request_as(&lock_kind_rlock, a, LOCK_REQUEST_IS_HELD, "L", 1);
    expect_args(expect_eval(INSPECT, "L"), 2, "L", "a:1");
    answer(INSPECT, "L",
           &(struct backend_value){
               .type = VALUE_ARRAY, .elements = 3, .element = held});
    expect_integer(c, 1);

    /* One field in Redis: a plain UNLOCK or LOCK would change the FAIR
     * hold behind its back, so neither is sent. */
    c = request_as(&lock_kind_rlock, a, LOCK_REQUEST_RELEASE, "L", 1);
    expect_error(c, REPLY_ERR);
    c = request_as(&lock_kind_fenced, a, LOCK_REQUEST_ACQUIRE, "L", 1);
    expect_error(c, REPLY_ERR);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.locks_lost, 0);

    c = request_as(&lock_kind_fair, a, LOCK_REQUEST_RELEASE, "L", 1);
    expect_args(expect_eval(FAIR_RELEASE, "L"), 9, "L", CHANNEL_OF_L,
                QUEUE_OF_L, TIMEOUT_OF_L, "0", "10000", "a:1", "1", "publish");
    answer(FAIR_RELEASE, "L", &one_reply);
    expect_integer(c, 1);
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

/* Waiters of two kinds of one name are two queues: a FAIR acquire asks
 * Redis although a plain waiter is queued, and the plain channel's
 * message wakes only the plain waiter. */
START_TEST(waiters_of_two_kinds_of_one_name_are_two_queues)
{
    struct test_call *plain = queue(join("b"), "L", 1, WAIT_FOREVER, 5000);
    struct test_call *fair;

    fair = acquire_as(&lock_kind_fair, join("c"), "L", 1, WAIT_FOREVER);
    ck_assert_uint_eq(fake_backend_count(FAIR_ACQUIRE, "L"), 1);
    answer_integer(FAIR_ACQUIRE, "L", 5000);
    expect_open(fair);
    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_L, "0"), 1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    expect_acquire_by("L", "b:1");
    answer_nil(ACQUIRE, "L");
    expect_result(plain, RESULT_GRANTED);
    expect_open(fair);
    expect_nothing_pending();
}
END_TEST

/* ---- the watchdog ------------------------------------------------------- */

/* Holds of each kind, in watchdog mode, are renewed each by its kind's
 * renew script, in a batch per kind: RLock's for the hash kinds, the
 * read-write lock's (which renews a read hold's timeout keys too) for
 * READ and WRITE, each with the owner's field of its kind. */
START_TEST(the_watchdog_renews_each_kind_with_its_own_script)
{
    static const struct {
        const struct lock_kind *kind;
        const char *name, *script, *field;
    } holds[] = {{&lock_kind_rlock, "Q", RENEW, "a:1"},
                 {&lock_kind_fenced, "M", RENEW, "a:1"},
                 {&lock_kind_fair, "L", RENEW, "a:1"},
                 {&lock_kind_read, "N", RW_RENEW, "a:1"},
                 {&lock_kind_write, "P", RW_RENEW, "a:1:write"}};
    static const long long renewed[] = {1}, gone[] = {0};
    const size_t count = sizeof(holds) / sizeof(holds[0]);
    struct session *a = join("a");

    for (size_t i = 0; i < count; i++)
        take_as(holds[i].kind, a, holds[i].name, 1, WATCHDOG_MODE);
    ck_assert_uint_eq(stats.watchdog_locks, count);
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_pending(), count);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 3);
    ck_assert_uint_eq(fake_backend_count(RW_RENEW, NULL), 2);
    for (size_t i = 0; i < count; i++) {
        struct fake_eval *e = expect_eval(holds[i].script, holds[i].name);

        ck_assert_int_eq(e->nkeys, 1);
        expect_args(e, 3, holds[i].name, holds[i].field, "30000");
        if (holds[i].kind == &lock_kind_read)
            ck_assert_ptr_nonnull(strstr(e->script->source, "rwlock_timeout"));
        answer_renewal(e, 1, holds[i].kind == &lock_kind_read ? gone : renewed);
    }
    ck_assert_uint_eq(stats.locks_lost, 1); /* READ's, answered 0 */
    ck_assert_uint_eq(stats.watchdog_locks, count - 1);
    ck_assert_uint_eq(stats.held_locks, count);
}
END_TEST

/* A leased read hold taken again in watchdog mode is renewed at once: its
 * first acquire's own timeout key keeps only its lease otherwise, and a
 * release by another reader after it ran out would delete the lock while
 * its holder believes the watchdog keeps it (found by the simulation). */
START_TEST(a_leased_hold_taken_again_in_watchdog_mode_is_renewed_at_once)
{
    struct session *a = join("a");

    take_as(&lock_kind_read, a, "N", 1, LEASE_MS);
    take_as(&lock_kind_read, a, "N", 1, WATCHDOG_MODE);
    advance(0);
    expect_args(expect_eval(RW_RENEW, "N"), 3, "N", "a:1", "30000");
    answer_renewal(expect_eval(RW_RENEW, "N"), 1, (const long long[]){1});
    ck_assert_uint_eq(stats.watchdog_locks, 1);
}
END_TEST

/* ---- the kind table ------------------------------------------------------ */

/*
 * Every kind x op: an op the engine sends on its own (lock_kind.h,
 * lock_kind_op_required) has its build and read; an optional one has
 * both or neither; and what the engine calls for every kind, or for
 * every kind that holds something, is there.
 */
START_TEST(every_kinds_row_has_each_op_the_engine_can_reach)
{
    for (int k = 0; k < LOCK_KIND_COUNT; k++) {
        const struct lock_kind *kind = lock_kinds[k];

        ck_assert_ptr_nonnull(kind);
        for (int op = 0; op < LOCK_OP_COUNT; op++) {
            const struct lock_kind_op *o = &kind->ops[op];

            ck_assert_ptr_nonnull(lock_op_names[op]);
            ck_assert_msg(!lock_kind_op_required(kind, op) || o->build != NULL,
                          "the %s kind has no %s build", kind->name,
                          lock_op_names[op]);
            ck_assert_msg((o->build == NULL) == (o->read == NULL),
                          "the %s kind's %s has a build or a read alone",
                          kind->name, lock_op_names[op]);
        }
        ck_assert_ptr_nonnull(kind->channel.affix);
        ck_assert_ptr_nonnull(kind->on_message);
        ck_assert_ptr_nonnull(kind->scripts);
        if (kind->holds == HOLDS_NOTHING)
            continue;
        ck_assert_msg(kind->renewal.script != NULL &&
                          kind->renewal.add != NULL &&
                          kind->renewal.renewed != NULL,
                      "the %s kind's holds cannot be renewed", kind->name);
    }
}
END_TEST

/* The definition itself: what a latch's wait may leave out, and what a
 * lock may not. */
START_TEST(a_kind_that_holds_nothing_needs_no_release_or_settle)
{
    static const enum lock_op held_ops[] = {
        LOCK_OP_RELEASE, LOCK_OP_RELEASE_OWNER, LOCK_OP_SETTLE};

    for (size_t i = 0; i < sizeof(held_ops) / sizeof(held_ops[0]); i++) {
        ck_assert(!lock_kind_op_required(&lock_kind_latch, held_ops[i]));
        ck_assert(lock_kind_op_required(&lock_kind_expirable, held_ops[i]));
        ck_assert(lock_kind_op_required(&lock_kind_rlock, held_ops[i]));
    }
    ck_assert(lock_kind_op_required(&lock_kind_latch, LOCK_OP_ACQUIRE));
    ck_assert(lock_kind_op_required(&lock_kind_semaphore, LOCK_OP_HOLD_COUNT));
    ck_assert(!lock_kind_op_required(&lock_kind_expirable, LOCK_OP_HOLD_COUNT));
    ck_assert(!lock_kind_op_required(&lock_kind_rlock, LOCK_OP_TOKEN));
}
END_TEST

Suite *lock_kinds_suite(void)
{
    Suite *s = suite_create("lock_kinds");
    TCase *fenced = tcase_create("fenced");
    TCase *fair = tcase_create("fair");
    TCase *rwlock = tcase_create("read_write");
    TCase *identity = tcase_create("identity_and_watchdog");
    TCase *table = tcase_create("kind_table");

    tcase_add_test(fenced, fenced_grant_answers_its_token_as_an_integer);
    tcase_add_test(fenced, fenced_refusal_reads_the_pttl_from_the_pair);
    tcase_add_test(fenced, fenced_acquire_reply_of_another_shape_is_an_error);
    tcase_add_test(fenced, fenced_grant_over_a_counter_behind_is_counted);
    tcase_add_test(fenced,
                   fenced_floors_are_remembered_for_the_most_recent_names);
    tcase_add_test(fenced,
                   fenced_token_asks_the_token_script_and_answers_its_integer);

    tcase_add_test(fair,
                   fair_acquire_sends_its_queue_keys_wait_and_enqueue_flag);
    tcase_add_test(fair, fair_waiters_each_listen_on_a_channel_of_their_own);
    tcase_add_test(fair, fair_message_on_a_waiters_channel_wakes_that_waiter);
    tcase_add_test(fair, fair_only_the_local_head_runs_the_acquire_script);
    tcase_add_test(fair,
                   fair_waiter_whose_wait_runs_out_leaves_the_redis_queue);
    tcase_add_test(
        fair, fair_waiter_that_cancels_or_disconnects_leaves_the_redis_queue);
    tcase_add_test(fair,
                   fair_leave_without_a_reply_is_sent_again_when_redis_answers);
    tcase_add_test(fair,
                   fair_attempt_abandoned_in_flight_leaves_the_redis_queue);
    tcase_add_test(fair,
                   fair_waiter_answered_at_shutdown_leaves_the_redis_queue);
    tcase_add_test(
        fair,
        fair_places_are_renewed_together_each_third_of_the_watchdog_timeout);
    tcase_add_test(fair, fair_waiter_whose_place_is_found_gone_asks_again);
    tcase_add_test(fair, fair_places_of_waiters_that_left_are_not_renewed);

    tcase_add_test(rwlock, read_and_write_send_their_own_scripts_and_fields);
    tcase_add_test(rwlock,
                   after_a_read_grant_the_next_local_reader_asks_at_once);
    tcase_add_test(rwlock, after_a_write_grant_the_next_local_writer_waits);
    tcase_add_test(rwlock,
                   rwlock_message_1_wakes_every_waiter_and_0_only_the_head);
    tcase_add_test(rwlock,
                   a_reader_does_not_overtake_a_writer_queued_before_it);
    tcase_add_test(rwlock,
                   a_reader_does_not_yield_to_a_writer_that_came_after_it);
    tcase_add_test(rwlock,
                   a_reader_already_holding_reenters_past_a_queued_writer);
    tcase_add_test(rwlock,
                   a_read_holder_asking_write_is_refused_without_asking_redis);
    tcase_add_test(rwlock, a_writer_may_downgrade_to_read);
    tcase_add_test(
        rwlock, a_writer_downgrading_does_not_wait_for_a_writer_waiting_for_it);

    tcase_add_test(identity,
                   unlock_with_another_kind_word_does_not_release_the_hold);
    tcase_add_test(identity, waiters_of_two_kinds_of_one_name_are_two_queues);
    tcase_add_test(identity, the_watchdog_renews_each_kind_with_its_own_script);
    tcase_add_test(
        identity,
        a_leased_hold_taken_again_in_watchdog_mode_is_renewed_at_once);

    engine_suite_add(s, fenced);
    engine_suite_add(s, fair);
    engine_suite_add(s, rwlock);
    engine_suite_add(s, identity);
    tcase_add_test(table, every_kinds_row_has_each_op_the_engine_can_reach);
    tcase_add_test(table, a_kind_that_holds_nothing_needs_no_release_or_settle);
    suite_add_tcase(s, table);
    return s;
}
