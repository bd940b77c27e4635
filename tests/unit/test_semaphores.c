/*
 * test_semaphores.c - the engine's rules for the kinds that hold permits
 * or nothing (lock_kind.h, enum lock_kind_holds), against the fake
 * backend: a session's permits are one hold counted by the permits it
 * took and gave back; a release of more than it holds is refused unsent;
 * permits given back wake this daemon's waiters; a message wakes as many
 * waiters as it has permits; an expirable permit is a hold of its own,
 * named and answered by its id; a latch's wait holds nothing.
 */
#include <check.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define ACQUIRE_S "semaphore_acquire"
#define RELEASE_S "semaphore_release"
#define X_ACQUIRE "expirable_acquire"
#define X_RELEASE "expirable_release"
#define AWAIT "latch_await"
#define CHANNEL_OF_S "redisson_sc:{S}"
#define PERMIT_ID "0123456789abcdef0123456789abcdef"

/* The session's ACQUIRE (or RELEASE) of n permits of S. */
static struct test_call *permits(struct session *s, enum lock_request_op op,
                                 int64_t n, int64_t wait_ms)
{
    return start_request(s, &(struct lock_request){.kind = &lock_kind_semaphore,
                                                   .op = op,
                                                   .name = "S",
                                                   .name_len = 1,
                                                   .wait_ms = wait_ms,
                                                   .lease_ms = WATCHDOG_MODE,
                                                   .amount = n});
}

/* Its call's arguments after the five keys: lease, field, count, permits. */
static void expect_permits_call(const char *script, const char *field,
                                const char *count, const char *n)
{
    struct fake_eval *e = expect_eval(script, "S");

    ck_assert_int_eq(e->nkeys, 5);
    ck_assert_str_eq(e->argv[5], "30000");
    ck_assert_str_eq(e->argv[6], field);
    ck_assert_str_eq(e->argv[7], count);
    ck_assert_str_eq(e->argv[8], n);
}

START_TEST(a_sessions_permits_are_one_hold_counted_by_permits)
{
    struct session *a = join("a");
    struct test_call *c = permits(a, LOCK_REQUEST_ACQUIRE, 2, WAIT_FOREVER);

    expect_permits_call(ACQUIRE_S, "a:0", "0", "2");
    answer_nil(ACQUIRE_S, "S");
    expect_result(c, RESULT_GRANTED);
    c = permits(a, LOCK_REQUEST_ACQUIRE, 3, WAIT_FOREVER);
    expect_permits_call(ACQUIRE_S, "a:0", "2", "3");
    answer_nil(ACQUIRE_S, "S");
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.permits_acquired, 5);
    ck_assert_uint_eq(stats.locks_acquired, 0);

    /* 4 of 5 back: it holds 1 (the count sent is what it holds) */
    c = permits(a, LOCK_REQUEST_RELEASE, 4, 0);
    expect_permits_call(RELEASE_S, "a:0", "5", "4");
    answer_integer(RELEASE_S, "S", 0);
    expect_integer(c, 0);
    /* more than it holds: refused, nothing sent */
    c = permits(a, LOCK_REQUEST_RELEASE, 2, 0);
    expect_error(c, REPLY_NOTOWNER);
    expect_nothing_pending();
    c = permits(a, LOCK_REQUEST_RELEASE, 1, 0);
    expect_permits_call(RELEASE_S, "a:0", "1", "1");
    answer_integer(RELEASE_S, "S", 1);
    expect_integer(c, 1);
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

START_TEST(a_session_that_holds_none_releases_none)
{
    expect_error(permits(join("a"), LOCK_REQUEST_RELEASE, 1, 0),
                 REPLY_NOTOWNER);
    expect_nothing_pending();
}
END_TEST

/* Waiters are woken by permits given back through this daemon, even by
 * a holder that keeps some, and a message of n permits wakes n. */
START_TEST(permits_given_back_or_announced_wake_as_many_waiters)
{
    struct session *a = join("a");
    struct test_call *b, *c, *d;

    permits(a, LOCK_REQUEST_ACQUIRE, 2, WAIT_FOREVER);
    answer_nil(ACQUIRE_S, "S");
    b = permits(join("b"), LOCK_REQUEST_ACQUIRE, 1, WAIT_FOREVER);
    answer_integer(ACQUIRE_S, "S", 1000);
    c = permits(join("c"), LOCK_REQUEST_ACQUIRE, 1, WAIT_FOREVER);
    answer_integer(ACQUIRE_S, "S", 1000);
    d = permits(join("d"), LOCK_REQUEST_ACQUIRE, 1, WAIT_FOREVER);
    answer_integer(ACQUIRE_S, "S", 1000);
    expect_nothing_pending();

    permits(a, LOCK_REQUEST_RELEASE, 1, 0);
    answer_integer(RELEASE_S, "S", 0); /* a still holds one */
    fake_eval_answer(expect_eval_with(ACQUIRE_S, "S", "b:0"), &nil_reply);
    expect_result(b, RESULT_GRANTED);
    /* a permit-holding kind's grant lets the next ask at once */
    fake_eval_answer(expect_eval_with(ACQUIRE_S, "S", "c:0"), &one_reply);
    expect_open(c);
    expect_nothing_pending();

    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_S, "2"), 1);
    ck_assert_uint_eq(fake_backend_count(ACQUIRE_S, "S"), 2);
    fake_eval_answer(expect_eval_with(ACQUIRE_S, "S", "c:0"), &nil_reply);
    fake_eval_answer(expect_eval_with(ACQUIRE_S, "S", "d:0"), &nil_reply);
    expect_result(c, RESULT_GRANTED);
    expect_result(d, RESULT_GRANTED);
}
END_TEST

/* A refused waiter sleeps as long as the script says (a second at most):
 * it looks again then, message or not. */
START_TEST(a_refused_waiter_looks_again_when_the_script_says)
{
    struct test_call *b =
        permits(join("b"), LOCK_REQUEST_ACQUIRE, 1, WAIT_FOREVER);

    answer_integer(ACQUIRE_S, "S", 1000);
    advance(999);
    expect_nothing_pending();
    advance(1);
    fake_eval_answer(expect_eval_with(ACQUIRE_S, "S", "b:0"), &nil_reply);
    expect_result(b, RESULT_GRANTED);
}
END_TEST

static struct test_call *permit(struct session *s, enum lock_request_op op)
{
    return start_request(s, &(struct lock_request){.kind = &lock_kind_expirable,
                                                   .op = op,
                                                   .name = "S",
                                                   .name_len = 1,
                                                   .lease_ms = WATCHDOG_MODE,
                                                   .permit_id = PERMIT_ID});
}

/* An expirable permit is named by its id in Redis, answered with it, and
 * released by it; releasing one Redis no longer has is a lost permit. */
START_TEST(an_expirable_permit_is_its_id)
{
    struct session *a = join("a");
    struct test_call *c = permit(a, LOCK_REQUEST_ACQUIRE);
    struct fake_eval *e = expect_eval(X_ACQUIRE, "S");

    ck_assert_str_eq(e->argv[6], PERMIT_ID);
    answer_nil(X_ACQUIRE, "S");
    expect_result(c, RESULT_TEXT);
    ck_assert_str_eq(c->text, PERMIT_ID);
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.expirable_permits_acquired, 1);

    c = permit(a, LOCK_REQUEST_RELEASE);
    e = expect_eval(X_RELEASE, "S");
    ck_assert_str_eq(e->argv[5], PERMIT_ID);
    answer_integer(X_RELEASE, "S", 2); /* its lease had run out */
    expect_error(c, REPLY_LOCKLOST);
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

/* A latch's AWAIT ends when the count is zero; nothing is held. */
START_TEST(a_latch_wait_holds_nothing)
{
    struct session *a = join("a");
    struct test_call *c = start_kind(a, &lock_kind_latch, LOCK_REQUEST_ACQUIRE,
                                     "L", 0, WAIT_FOREVER, WATCHDOG_MODE);

    answer_integer(AWAIT, "L", 1000);
    expect_open(c);
    ck_assert_uint_eq(
        fake_backend_publish("redisson_countdownlatch__channel__{L}", "1"), 1);
    expect_nothing_pending(); /* "1": set again, nobody goes */
    ck_assert_uint_eq(
        fake_backend_publish("redisson_countdownlatch__channel__{L}", "0"), 1);
    answer_nil(AWAIT, "L");
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.latch_waits_ended, 1);
}
END_TEST

/* A latch's AWAIT with a wait, its caller gone while Redis did not
 * answer: nothing was held, so nothing is settled once Redis answers
 * again (a settle has no call for a latch). */
START_TEST(a_latch_wait_left_unanswered_leaves_nothing_to_settle)
{
    struct test_call *c =
        start_kind(join("a"), &lock_kind_latch, LOCK_REQUEST_ACQUIRE, "L", 0,
                   5000, WATCHDOG_MODE);

    fake_backend.ready = false; /* Redis stalls past command_timeout_ms */
    abandon(c);                 /* and the caller leaves */
    answer(AWAIT, "L", NULL);
    fake_backend.ready = true;
    lock_engine_backend_ready();
    expect_nothing_pending();
}
END_TEST

/* The same with the caller still waiting when the reply is lost: its
 * wait, in doubt, is let go at the leaving without a settle. */
START_TEST(a_latch_wait_in_doubt_when_its_caller_leaves_settles_nothing)
{
    struct test_call *c =
        start_kind(join("a"), &lock_kind_latch, LOCK_REQUEST_ACQUIRE, "L", 0,
                   5000, WATCHDOG_MODE);

    fake_backend.ready = false;
    answer(AWAIT, "L", NULL);
    expect_open(c);
    abandon(c);
    fake_backend.ready = true;
    lock_engine_backend_ready();
    expect_nothing_pending();
}
END_TEST

Suite *semaphores_suite(void)
{
    Suite *s = suite_create("semaphores");
    TCase *tc = tcase_create("semaphores");

    tcase_add_test(tc, a_sessions_permits_are_one_hold_counted_by_permits);
    tcase_add_test(tc, a_session_that_holds_none_releases_none);
    tcase_add_test(tc, permits_given_back_or_announced_wake_as_many_waiters);
    tcase_add_test(tc, a_refused_waiter_looks_again_when_the_script_says);
    tcase_add_test(tc, an_expirable_permit_is_its_id);
    tcase_add_test(tc, a_latch_wait_holds_nothing);
    tcase_add_test(tc, a_latch_wait_left_unanswered_leaves_nothing_to_settle);
    tcase_add_test(
        tc, a_latch_wait_in_doubt_when_its_caller_leaves_settles_nothing);
    engine_suite_add(s, tc);
    return s;
}
