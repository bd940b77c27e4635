/*
 * test_watchdog.c - watchdog-mode holds over a fake backend and a fake
 * clock: when renewals are sent, what they carry, how they are batched,
 * and what their replies may and may not do to a hold, above all one
 * lost and acquired again while an old renewal was in flight (the
 * regression fixed by commit 00faacf); and the schedule's lists, one per
 * delay, taken in due order whatever the mix of leases and retries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/lock_table.h"
#include "engine/watchdog.h"
#include "engine_harness.h"
#include "suites.h"

static const long long renewed[] = {1, 1, 1, 1};
static const long long gone[] = {0, 0, 0, 0};

/* Takes L in watchdog mode and lets its first renewal go out. */
static struct fake_eval *take_and_send_renewal(struct session *s)
{
    take(s, "L", 1, WATCHDOG_MODE);
    advance(RENEW_EVERY_MS);
    return expect_eval(RENEW, "L");
}

/* "a" takes L in watchdog mode and its first renewal goes out; then
 * "b"'s FORCEUNLOCK loses the hold and "a" acquires L again. Returns the
 * first renewal, still unanswered. */
static struct fake_eval *renewal_of_a_hold_lost_and_taken_again(void)
{
    struct session *a = join("a"), *b = join("b");
    struct fake_eval *old = take_and_send_renewal(a);
    struct test_call *force = request(b, LOCK_REQUEST_FORCE_RELEASE, "L", 9);

    answer_integer(FORCE_RELEASE, "L", 1);
    expect_integer(force, 1);
    ck_assert_uint_eq(stats.locks_lost, 1);
    /* the owner is told of the loss first, then takes the lock anew */
    expect_error(acquire(a, "L", 1, 0, WATCHDOG_MODE), REPLY_LOCKLOST);
    take(a, "L", 1, WATCHDOG_MODE);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
    return old;
}

/* After the schedule settles: the next renewal of L is sent once, at the
 * regular interval and not before. */
static void expect_one_renewal_per_interval(void)
{
    ck_assert_uint_eq(stats.watchdog_locks, 1);
    advance(RENEW_EVERY_MS - 1);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 0);
    advance(1);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 1);
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
}

START_TEST(a_hold_is_renewed_a_third_into_its_lease)
{
    struct session *a = join("a");
    struct fake_eval *e;

    take(a, "L", 1, WATCHDOG_MODE);
    ck_assert_uint_eq(fake_clock.due_ms, T0 + RENEW_EVERY_MS);
    advance(RENEW_EVERY_MS - 1);
    expect_nothing_pending();
    advance(1);
    e = expect_eval(RENEW, "L");
    ck_assert_ptr_nonnull(e->script);
    ck_assert_int_eq(e->nkeys, 1);
    expect_args(e, 3, "L", "a:1", "30000");
    ck_assert_uint_eq(stats.watchdog_locks, 0); /* off the schedule */
    ck_assert_uint_eq(stats.watchdog_batches, 1);
    ck_assert_uint_eq(stats.watchdog_renewals, 1);
    answer_renewal(e, 1, renewed);
    ck_assert_uint_eq(fake_clock.due_ms, fake_clock.now_ms + RENEW_EVERY_MS);
    expect_one_renewal_per_interval();
    ck_assert_uint_eq(stats.locks_lost, 0);
}
END_TEST

/* A hold keeps the low 32 bits of its due time: one taken 49.7 days
 * into the clock, its renewal due after 2^32 ms, is renewed on time, and
 * so is the next. */
START_TEST(a_renewal_due_past_32_bits_of_ms_is_sent_on_time)
{
    struct session *a;

    fake_clock.now_ms = (UINT64_C(1) << 32) - RENEW_EVERY_MS / 2;
    a = join("a");
    take(a, "L", 1, WATCHDOG_MODE);
    ck_assert_uint_eq(fake_clock.due_ms, fake_clock.now_ms + RENEW_EVERY_MS);
    advance(RENEW_EVERY_MS - 1);
    expect_nothing_pending();
    advance(1);
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    expect_one_renewal_per_interval();
    ck_assert_uint_eq(stats.locks_lost, 0);
}
END_TEST

START_TEST(a_renewal_that_finds_the_lock_gone_loses_the_hold)
{
    struct session *a = join("a");

    answer_renewal(take_and_send_renewal(a), 1, gone);
    ck_assert_uint_eq(stats.locks_lost, 1);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    ck_assert_uint_eq(stats.held_locks, 1); /* until its owner hears */
    advance(WATCHDOG_MS);
    expect_nothing_pending();

    expect_error(unlock_answered(a, "L", 1, &nil_reply), REPLY_LOCKLOST);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.locks_lost, 1); /* counted once */
}
END_TEST

START_TEST(an_unanswered_renewal_is_retried_soon)
{
    struct session *a = join("a");

    fake_eval_answer(take_and_send_renewal(a), NULL);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
    ck_assert_uint_eq(stats.locks_lost, 0);
    advance(499);
    expect_nothing_pending();
    advance(1);
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
}
END_TEST

START_TEST(holds_due_together_are_renewed_in_one_call)
{
    struct session *a = join("a");
    struct fake_eval *e;

    take(a, "L", 1, WATCHDOG_MODE);
    advance(RENEW_EVERY_MS / 16); /* within the coalescing window */
    take(a, "M", 2, WATCHDOG_MODE);
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    e = expect_eval(RENEW, NULL);
    ck_assert_int_eq(e->nkeys, 2);
    expect_args(e, 6, "L", "M", "a:1", "30000", "a:2", "30000");
    answer_renewal(e, 2, (const long long[]){1, 0});
    ck_assert_uint_eq(stats.watchdog_batches, 1);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
    ck_assert_uint_eq(stats.locks_lost, 1);
    expect_error(unlock_answered(a, "M", 2, &nil_reply), REPLY_LOCKLOST);
}
END_TEST

static unsigned first_letter_group(const char *key, size_t len)
{
    return len > 0 ? (unsigned char)key[0] : 0;
}

START_TEST(key_groups_and_the_batch_size_split_renewals)
{
    struct session *a = join("a");

    fake_backend.group = first_letter_group;
    take(a, "L1", 1, WATCHDOG_MODE);
    take(a, "L2", 1, WATCHDOG_MODE);
    take(a, "M", 1, WATCHDOG_MODE);
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 2);
    ck_assert_int_eq(expect_eval(RENEW, "L1")->nkeys, 2);
    ck_assert_int_eq(expect_eval(RENEW, "M")->nkeys, 1);
    answer_renewal(expect_eval(RENEW, "L1"), 2, renewed);
    answer_renewal(expect_eval(RENEW, "M"), 1, renewed);

    engine_cfg.renew_batch_size = 1;
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 3);
    ck_assert_uint_eq(stats.watchdog_batches, 5);
}
END_TEST

START_TEST(a_hold_released_while_renewed_is_not_scheduled_again)
{
    struct session *a = join("a");
    struct fake_eval *e = take_and_send_renewal(a);

    expect_integer(unlock_answered(a, "L", 1, &one_reply), 1);
    answer_renewal(e, 1, gone);
    ck_assert_uint_eq(stats.locks_lost, 0);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    advance(WATCHDOG_MS);
    expect_nothing_pending();
}
END_TEST

START_TEST(a_reentrant_acquire_while_renewed_is_scheduled_once)
{
    struct session *a = join("a");
    struct fake_eval *old = take_and_send_renewal(a);

    take(a, "L", 1, WATCHDOG_MODE);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
    answer_renewal(old, 1, renewed);
    expect_one_renewal_per_interval();
}
END_TEST

/* ---- the regression of commit 00faacf ------------------------------------ */

/* Lost by FORCEUNLOCK and acquired again while the old renewal is in
 * flight; the old "gone" then comes back. */
START_TEST(an_old_renewal_result_does_not_lose_a_hold_acquired_again)
{
    struct fake_eval *old = renewal_of_a_hold_lost_and_taken_again();

    answer_renewal(old, 1, gone);
    ck_assert_uint_eq(stats.locks_lost, 1);
    ck_assert_uint_eq(stats.held_locks, 1);
    expect_one_renewal_per_interval();
}
END_TEST

/* The same, the old renewal unanswered: no retry beside the new schedule. */
START_TEST(an_old_unanswered_renewal_does_not_schedule_a_hold_twice)
{
    struct fake_eval *old = renewal_of_a_hold_lost_and_taken_again();

    fake_eval_answer(old, NULL);
    ck_assert_uint_eq(stats.locks_lost, 1);
    expect_one_renewal_per_interval();
}
END_TEST

/* The old result comes back while the new hold's own renewal is in
 * flight, so the hold is off the schedule: only the epoch tells them
 * apart. */
START_TEST(an_old_renewal_result_is_not_taken_for_the_new_one)
{
    struct fake_eval *old = renewal_of_a_hold_lost_and_taken_again();

    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_count(RENEW, "L"), 2);
    answer_renewal(old, 1, gone);
    ck_assert_uint_eq(stats.locks_lost, 1);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    expect_one_renewal_per_interval();
    ck_assert_uint_eq(stats.locks_lost, 1);
}
END_TEST

/* Lost through an UNLOCK that found it gone (the hold is dropped), then
 * acquired again: a new hold the old result must not touch. */
START_TEST(an_old_renewal_result_does_not_touch_a_hold_taken_after_unlock)
{
    struct session *a = join("a");
    struct fake_eval *old = take_and_send_renewal(a);

    expect_error(unlock_answered(a, "L", 1, &nil_reply), REPLY_LOCKLOST);
    ck_assert_uint_eq(stats.locks_lost, 1);
    take(a, "L", 1, WATCHDOG_MODE);
    answer_renewal(old, 1, gone);
    ck_assert_uint_eq(stats.locks_lost, 1);
    expect_one_renewal_per_interval();
}
END_TEST

/* Redis refuses every call: a round that fills more than one batch sends
 * them only once it has taken its holds, so that a hold put back for a
 * retry (due within the round's window) is not taken again by the same
 * round, which would then never end. */
START_TEST(a_round_whose_batches_redis_refuses_ends)
{
    struct session *a = join("a");

    engine_cfg.renew_batch_size = 1;
    take(a, "L", 1, WATCHDOG_MODE);
    take(a, "M", 1, WATCHDOG_MODE);
    fake_backend.eval_error = -ENOTCONN;
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(stats.watchdog_locks, 2); /* both back, for a retry */
    fake_backend.eval_error = 0;
    advance(499);
    expect_nothing_pending();
    advance(1);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 2);
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    answer_renewal(expect_eval(RENEW, "M"), 1, renewed);
    ck_assert_uint_eq(stats.watchdog_locks, 2);
}
END_TEST

/* Redis down (no key can be served): a renewal that cannot be sent
 * waits for the backend to say keys can be served, instead of being
 * tried again every RENEW_RETRY_MS for as long as Redis is away, which
 * walked every hold twice a second; then it goes at once. */
START_TEST(renewals_wait_for_redis_instead_of_retrying)
{
    static const long long both_renewed[] = {1, 1};
    struct session *a = join("a");

    take(a, "L", 1, WATCHDOG_MODE);
    take(a, "M", 1, WATCHDOG_MODE);
    fake_backend.ready = false;
    fake_backend.eval_error = -ENOTCONN;
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend.refused, 1); /* one batch of both */
    ck_assert_uint_eq(stats.watchdog_locks, 2); /* still watched */
    advance(10 * RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend.refused, 1);
    fake_backend.ready = true;
    fake_backend.eval_error = 0;
    lock_engine_backend_ready();
    advance(0); /* due at once: the engine timer's next turn */
    answer_renewal(expect_eval(RENEW, NULL), 2, both_renewed);
    ck_assert_uint_eq(stats.watchdog_locks, 2);
    advance(RENEW_EVERY_MS - 1);
    expect_nothing_pending();
    advance(1);
    answer_renewal(expect_eval(RENEW, NULL), 2, both_renewed);
}
END_TEST

/* A round's calls past renew_calls_in_flight wait for replies, in order;
 * one that waited goes without a hold released meanwhile, and not at all
 * when none is left. */
START_TEST(calls_past_the_in_flight_bound_wait_for_replies)
{
    struct session *a = join("a");

    engine_cfg.renew_batch_size = 1;
    engine_cfg.renew_calls_in_flight = 1;
    take(a, "K", 1, WATCHDOG_MODE);
    take(a, "L", 1, WATCHDOG_MODE);
    take(a, "M", 1, WATCHDOG_MODE);
    take(a, "N", 1, WATCHDOG_MODE);
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 1);
    expect_integer(unlock_answered(a, "M", 1, &one_reply), 1);
    answer_renewal(expect_eval(RENEW, "K"), 1, renewed);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 1);
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 1);
    answer_renewal(expect_eval(RENEW, "N"), 1, renewed);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.watchdog_locks, 3);
    ck_assert_uint_eq(stats.watchdog_renewals, 3);
}
END_TEST

/* The bound is a key group's: a group whose calls are not answered (a
 * Cluster master that hangs) does not hold back another group's. */
START_TEST(the_in_flight_bound_is_each_key_groups)
{
    struct session *a = join("a");

    fake_backend.group = first_letter_group;
    engine_cfg.renew_batch_size = 1;
    engine_cfg.renew_calls_in_flight = 1;
    take(a, "K1", 1, WATCHDOG_MODE);
    take(a, "K2", 1, WATCHDOG_MODE);
    take(a, "L", 1, WATCHDOG_MODE);
    advance(RENEW_EVERY_MS);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 2); /* K1 and L */
    answer_renewal(expect_eval(RENEW, "L"), 1, renewed);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 1); /* K2 waits */
    answer_renewal(expect_eval(RENEW, "K1"), 1, renewed);
    answer_renewal(expect_eval(RENEW, "K2"), 1, renewed);
    expect_nothing_pending();
}
END_TEST

/* ---- the schedule: one list per delay ----------------------------------- */

/* Takes name in watchdog mode with a lease of lease_ms (the
 * watchdog_timeout_ms of its acquire). */
static void take_with_lease(struct session *s, const char *name, int lease_ms)
{
    engine_cfg.watchdog_timeout_ms = lease_ms;
    take(s, name, 1, WATCHDOG_MODE);
}

/* Moves the clock to at ms after T0, and expects nothing sent before it
 * and then exactly one renewal, of nkeys holds, key's first. */
static struct fake_eval *expect_renewal_at(uint64_t at, const char *key,
                                           int nkeys)
{
    struct fake_eval *e;

    advance(T0 + at - 1 - fake_clock.now_ms);
    expect_nothing_pending();
    advance(1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    e = expect_eval(RENEW, key);
    ck_assert_int_eq(e->nkeys, nkeys);
    return e;
}

/* Leases of 3 s, 9 s, 30 s and 60 s: renewed every 1, 3, 10 and 20 s,
 * retried after 300 and 500 ms; six lists, each due at its own time. */
START_TEST(holds_of_several_leases_and_retries_are_renewed_in_due_order)
{
    struct session *a = join("a");

    take_with_lease(a, "M", 3000);
    take_with_lease(a, "P", 9000);
    take_with_lease(a, "L", 30000);
    take_with_lease(a, "N", 60000);
    fake_eval_answer(expect_renewal_at(1000, "M", 1), NULL);
    answer_renewal(expect_renewal_at(1300, "M", 1), 1, renewed);
    answer_renewal(expect_renewal_at(2300, "M", 1), 1, gone);
    fake_eval_answer(expect_renewal_at(3000, "P", 1), NULL);
    answer_renewal(expect_renewal_at(3500, "P", 1), 1, renewed);
    answer_renewal(expect_renewal_at(6500, "P", 1), 1, gone);
    fake_eval_answer(expect_renewal_at(10000, "L", 1), NULL);
    answer_renewal(expect_renewal_at(10500, "L", 1), 1, renewed);
    /* L, due at 20.5 s, is within its window of N's 20 s */
    answer_renewal(expect_renewal_at(20000, "N", 2), 2, renewed);
    ck_assert_uint_eq(stats.locks_lost, 2);
    ck_assert_uint_eq(stats.watchdog_locks, 2);
}
END_TEST

/* More leases than the schedule keeps lists for (32), longest first:
 * the shortest share a list of a longer delay, and are still renewed at
 * their own times, each alone while the windows do not meet. */
START_TEST(more_leases_than_lists_are_still_renewed_in_due_order)
{
    struct session *a = join("a");
    char name[16]; /* "K" and any int: -Wformat-truncation at -O1 */

    for (int i = 40; i >= 1; i--) {
        snprintf(name, sizeof(name), "K%d", i);
        take_with_lease(a, name, 3000 * i); /* renewed every i s */
    }
    for (int i = 1; i <= 6; i++) {
        snprintf(name, sizeof(name), "K%d", i);
        answer_renewal(expect_renewal_at(1000 * (uint64_t)i, name, 1), 1, gone);
    }
}
END_TEST

#define MANY_HOLDS 10000

/* n watchdog holds of s, of locks H0, H1, ..., scheduled as an acquire
 * schedules them, without the acquires (more than a test's calls). */
static struct hold **hold_many(struct session *s, size_t n)
{
    struct hold **holds = malloc(n * sizeof(*holds));

    ck_assert_ptr_nonnull(holds);
    for (size_t i = 0; i < n; i++) {
        char name[16], field[16];
        struct lock *lock;

        snprintf(name, sizeof(name), "H%zu", i);
        snprintf(field, sizeof(field), "a:%zu", i);
        lock = lock_ref(&lock_kind_rlock, name, strlen(name));
        ck_assert_ptr_nonnull(lock);
        holds[i] = hold_create(lock, s, 1, field, strlen(field));
        ck_assert_ptr_nonnull(holds[i]);
        lock_unref(lock); /* the hold's own reference keeps it */
        holds[i]->count = 1;
        holds[i]->watchdog = true;
        holds[i]->lease_ms = engine_cfg.watchdog_timeout_ms;
        watchdog_start(holds[i]);
    }
    return holds;
}

/* Forgets them as an UNLOCK would. */
static void drop_many(struct hold **holds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        watchdog_stop(holds[i]);
        hold_drop(holds[i]);
    }
    free(holds);
}

/* L's retry, due in 500 ms, is scheduled behind 10,000 holds due in
 * 10 s: it goes at its own time, they at theirs (L with them, within
 * its window). */
START_TEST(a_retry_among_many_later_holds_is_sent_at_its_own_time)
{
    struct session *a;
    struct fake_eval *old;
    struct hold **holds;

    engine_cfg.renew_calls_in_flight = MANY_HOLDS; /* the round at once */
    a = join("a");
    old = take_and_send_renewal(a);
    holds = hold_many(a, MANY_HOLDS);

    ck_assert_uint_eq(stats.watchdog_locks, MANY_HOLDS);
    fake_eval_answer(old, NULL);
    answer_renewal(expect_renewal_at(RENEW_EVERY_MS + 500, "L", 1), 1, renewed);
    advance(T0 + 2 * RENEW_EVERY_MS - 1 - fake_clock.now_ms);
    expect_nothing_pending();
    advance(1);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL),
                      (MANY_HOLDS + 1 + 99) / 100); /* renew_batch_size */
    ck_assert_uint_eq(stats.watchdog_renewals, 2 + MANY_HOLDS + 1);
    drop_many(holds, MANY_HOLDS);
}
END_TEST

/* M, in the middle of its list, is released and taken again: it leaves
 * its place, and is renewed from its new one, last. */
START_TEST(a_hold_stopped_in_the_middle_of_its_list_leaves_its_place)
{
    struct session *a = join("a");

    take(a, "L", 1, WATCHDOG_MODE);
    advance(2000);
    take(a, "M", 1, WATCHDOG_MODE);
    advance(2000);
    take(a, "N", 1, WATCHDOG_MODE);
    ck_assert_uint_eq(stats.watchdog_locks, 3);
    expect_integer(unlock_answered(a, "M", 1, &one_reply), 1);
    ck_assert_uint_eq(stats.watchdog_locks, 2);
    advance(2000);
    take(a, "M", 1, WATCHDOG_MODE);
    answer_renewal(expect_renewal_at(RENEW_EVERY_MS, "L", 1), 1, renewed);
    answer_renewal(expect_renewal_at(RENEW_EVERY_MS + 4000, "N", 1), 1,
                   renewed);
    answer_renewal(expect_renewal_at(RENEW_EVERY_MS + 6000, "M", 1), 1,
                   renewed);
    ck_assert_uint_eq(stats.watchdog_locks, 3);
}
END_TEST

Suite *watchdog_suite(void)
{
    Suite *s = suite_create("watchdog");
    TCase *renewal = tcase_create("renewal");
    TCase *regression = tcase_create("reacquired");
    TCase *schedule = tcase_create("schedule");

    tcase_add_test(renewal, a_hold_is_renewed_a_third_into_its_lease);
    tcase_add_test(renewal, a_renewal_due_past_32_bits_of_ms_is_sent_on_time);
    tcase_add_test(renewal, a_renewal_that_finds_the_lock_gone_loses_the_hold);
    tcase_add_test(renewal, an_unanswered_renewal_is_retried_soon);
    tcase_add_test(renewal, holds_due_together_are_renewed_in_one_call);
    tcase_add_test(renewal, key_groups_and_the_batch_size_split_renewals);
    tcase_add_test(renewal,
                   a_hold_released_while_renewed_is_not_scheduled_again);
    tcase_add_test(renewal,
                   a_reentrant_acquire_while_renewed_is_scheduled_once);
    tcase_add_test(renewal, a_round_whose_batches_redis_refuses_ends);
    tcase_add_test(renewal, renewals_wait_for_redis_instead_of_retrying);
    tcase_add_test(renewal, calls_past_the_in_flight_bound_wait_for_replies);
    tcase_add_test(renewal, the_in_flight_bound_is_each_key_groups);
    tcase_add_test(regression,
                   an_old_renewal_result_does_not_lose_a_hold_acquired_again);
    tcase_add_test(regression,
                   an_old_unanswered_renewal_does_not_schedule_a_hold_twice);
    tcase_add_test(regression,
                   an_old_renewal_result_is_not_taken_for_the_new_one);
    tcase_add_test(
        regression,
        an_old_renewal_result_does_not_touch_a_hold_taken_after_unlock);
    tcase_add_test(
        schedule, holds_of_several_leases_and_retries_are_renewed_in_due_order);
    tcase_add_test(schedule,
                   more_leases_than_lists_are_still_renewed_in_due_order);
    tcase_add_test(schedule,
                   a_retry_among_many_later_holds_is_sent_at_its_own_time);
    tcase_add_test(schedule,
                   a_hold_stopped_in_the_middle_of_its_list_leaves_its_place);
    engine_suite_add(s, renewal);
    engine_suite_add(s, regression);
    engine_suite_add(s, schedule);
    return s;
}
