/*
 * test_waiters.c - where waiters wake up: the FIFO queue, the head's
 * asks, messages, deadlines, hand-offs, and calls whose caller left.
 *
 * The harness (engine_harness.h) checks after every test that nothing
 * leaked and that each call was answered exactly once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/session.h"
#include "engine_harness.h"
#include "suites.h"

/* ---- waiting and waking ------------------------------------------------- */

/* Clients "b", "c", "d" (as many as count) each queue a call by thread 1
 * on L, refused with a 5 s PTTL, in that order; w[i] is the i-th. */
static void waiters_on_l(struct test_call **w, size_t count)
{
    static const char *const ids[] = {"b", "c", "d"};

    ck_assert_uint_le(count, sizeof(ids) / sizeof(ids[0]));
    for (size_t i = 0; i < count; i++)
        w[i] = queue(join(ids[i]), "L", 1, WAIT_FOREVER, 5000);
}

START_TEST(waiters_ask_in_arrival_order_one_at_a_time)
{
    struct session *b = join("b");
    struct test_call *w[2];

    w[0] = queue(b, "L", 1, WAIT_FOREVER, 5000);
    w[1] = queue(join("c"), "L", 1, WAIT_FOREVER, 5000);
    ck_assert_uint_eq(stats.waiting_clients, 2);
    ck_assert_uint_eq(fake_backend_listeners(CHANNEL_OF_L), 1);
    expect_nothing_pending();

    /* a message lets only the head ask */
    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_L, "0"), 1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    expect_acquire_by("L", "b:1");
    answer_integer(ACQUIRE, "L", 4000); /* someone else was faster */
    expect_open(w[0]);
    expect_nothing_pending();

    fake_backend_publish(CHANNEL_OF_L, "0");
    ck_assert_uint_eq(fake_backend_pending(), 1);
    fake_eval_answer(expect_acquire_by("L", "b:1"), &nil_reply);
    expect_result(w[0], RESULT_GRANTED);
    /* the next is head now, and waits for the grant's lease to run out */
    expect_open(w[1]);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.waiting_clients, 1);
    ck_assert_uint_eq(fake_clock.due_ms, fake_clock.now_ms + LEASE_MS);

    /* b holds it through this daemon: a message is about an older
     * release, and wakes nobody */
    fake_backend_publish(CHANNEL_OF_L, "0");
    expect_nothing_pending();
    /* b's UNLOCK hands it to c */
    request(b, LOCK_REQUEST_RELEASE, "L", 1);
    answer_integer(RELEASE, "L", 1);
    fake_eval_answer(expect_acquire_by("L", "c:1"), &nil_reply);
    expect_result(w[1], RESULT_GRANTED);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
}
END_TEST

START_TEST(the_new_head_asks_when_the_granted_lease_runs_out)
{
    struct test_call *w[2];

    waiters_on_l(w, 2);
    fake_backend_publish(CHANNEL_OF_L, "0");
    answer_nil(ACQUIRE, "L");
    expect_result(w[0], RESULT_GRANTED);
    advance(LEASE_MS - 1);
    expect_nothing_pending();
    advance(1);
    expect_acquire_by("L", "c:1");
    ck_assert_uint_eq(fake_backend_pending(), 1);
}
END_TEST

START_TEST(the_subscription_confirmation_makes_the_head_look)
{
    struct test_call *w[2];

    waiters_on_l(w, 2);
    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_L, NULL), 1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    expect_acquire_by("L", "b:1");
}
END_TEST

START_TEST(a_message_while_the_head_asks_makes_it_ask_again)
{
    struct test_call *w;

    waiters_on_l(&w, 1);
    fake_backend_publish(CHANNEL_OF_L, "0");
    fake_backend_publish(CHANNEL_OF_L, "0"); /* while it asks */
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer_integer(ACQUIRE, "L", 3000); /* the first answer was stale */
    expect_open(w);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer_nil(ACQUIRE, "L");
    expect_result(w, RESULT_GRANTED);
    ck_assert_uint_eq(stats.lock_attempts, 3);
}
END_TEST

START_TEST(a_wait_ends_at_its_deadline_without_asking_redis)
{
    struct session *b = join("b");
    struct test_call *w = queue(b, "L", 1, 3000, 10000);

    ck_assert_uint_eq(fake_clock.due_ms, T0 + 3000);
    advance(2999);
    expect_open(w);
    advance(1);
    expect_result(w, RESULT_NOT_GRANTED);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.lock_attempts, 1);
    ck_assert_uint_eq(stats.wait_timeouts, 1);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
}
END_TEST

START_TEST(the_head_asks_again_when_the_lock_ttl_runs_out)
{
    struct session *b = join("b"), *c = join("c");
    struct test_call *w = queue(b, "L", 1, WAIT_FOREVER, 2000);

    queue(c, "L", 1, WAIT_FOREVER, 500); /* not the head: no TTL wake */
    ck_assert_uint_eq(fake_clock.due_ms, T0 + 2000);
    advance(1999);
    expect_nothing_pending();
    advance(1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer_nil(ACQUIRE, "L");
    expect_result(w, RESULT_GRANTED);
}
END_TEST

/* The hand-off: the head's acquire goes right behind the UNLOCK that
 * frees the lock, before its reply, and both answers come together. */
START_TEST(a_release_through_this_daemon_hands_the_lock_to_the_head)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *w, *unlock;

    take(a, "L", 1, LEASE_MS);
    w = queue_unasked(b, "L", 1, WAIT_FOREVER);
    unlock = request(a, LOCK_REQUEST_RELEASE, "L", 1);
    ck_assert_uint_eq(fake_backend_pending(), 2);
    ck_assert_uint_eq(stats.lock_handoffs, 1);
    answer_integer(RELEASE, "L", 1);
    expect_integer(unlock, 1);
    fake_eval_answer(expect_acquire_by("L", "b:1"), &nil_reply);
    expect_result(w, RESULT_GRANTED);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.lock_attempts, 2); /* a's and b's: one each */
}
END_TEST

/* Only a release of the last count hands off: a reentrant hold's first
 * UNLOCK leaves the lock held, and the waiter asleep. */
START_TEST(a_reentrant_release_hands_nothing_off)
{
    struct session *a = join("a"), *b = join("b");

    take(a, "L", 1, LEASE_MS);
    take(a, "L", 1, LEASE_MS);
    queue_unasked(b, "L", 1, WAIT_FOREVER);
    request(a, LOCK_REQUEST_RELEASE, "L", 1);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer_integer(RELEASE, "L", 0);
    expect_nothing_pending();
    request(a, LOCK_REQUEST_RELEASE, "L", 1);
    ck_assert_uint_eq(fake_backend_pending(), 2);
    ck_assert_uint_eq(stats.lock_handoffs, 1);
}
END_TEST

/* After max_handoffs_in_a_row hand-offs one release goes alone, and the
 * head asks once its reply is in, racing whoever else was woken. */
START_TEST(hand_offs_in_a_row_are_bounded)
{
    struct session *s[3] = {join("a"), join("b"), join("c")};
    struct test_call *w;

    engine_cfg.max_handoffs_in_a_row = 1;
    take(s[0], "L", 1, LEASE_MS);
    queue_unasked(s[1], "L", 1, WAIT_FOREVER);
    w = queue_unasked(s[2], "L", 1, WAIT_FOREVER);
    request(s[0], LOCK_REQUEST_RELEASE, "L", 1); /* the first: handed off */
    answer_integer(RELEASE, "L", 1);
    answer_nil(ACQUIRE, "L");
    request(s[1], LOCK_REQUEST_RELEASE, "L", 1); /* the second: alone */
    ck_assert_uint_eq(fake_backend_pending(), 1);
    ck_assert_uint_eq(stats.lock_handoffs, 1);
    answer_integer(RELEASE, "L", 1);
    fake_eval_answer(expect_acquire_by("L", "c:1"), &nil_reply);
    expect_result(w, RESULT_GRANTED);
}
END_TEST

/* A hand-off whose two replies are lost (the connection went): each call
 * is sent again once Redis answers, the release counted once, and the
 * waiter ends up holding, as if the replies had come. */
START_TEST(a_hand_off_whose_replies_are_lost_is_sent_again)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *w, *unlock;

    take(a, "L", 1, LEASE_MS);
    w = queue_unasked(b, "L", 1, WAIT_FOREVER);
    unlock = request(a, LOCK_REQUEST_RELEASE, "L", 1);
    answer(RELEASE, "L", NULL);
    answer(ACQUIRE, "L", NULL);
    expect_open(unlock);
    expect_open(w);
    expect_nothing_pending(); /* not before Redis can be reached again */
    lock_engine_backend_ready();
    /* both had run: the release finds the lock gone (its first run) */
    answer(RELEASE, "L", &nil_reply);
    expect_integer(unlock, 1);
    advance(100); /* a queued waiter without a reply tries again soon */
    fake_eval_answer(expect_acquire_by("L", "b:1"), &nil_reply);
    expect_result(w, RESULT_GRANTED);
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.locks_lost, 0);
    expect_nothing_pending();
}
END_TEST

/* The waiter handed the lock leaves before the grant comes back: what it
 * was granted is undone, as for any acquire whose caller left, and the
 * next waiter asks. */
START_TEST(a_waiter_that_leaves_during_its_hand_off_is_undone)
{
    struct session *a = join("a"), *b = join("b"), *c = join("c");
    struct test_call *w, *next;

    take(a, "L", 1, LEASE_MS);
    w = queue_unasked(b, "L", 1, WAIT_FOREVER);
    next = queue_unasked(c, "L", 1, WAIT_FOREVER);
    request(a, LOCK_REQUEST_RELEASE, "L", 1);
    abandon(w);
    answer_integer(RELEASE, "L", 1);
    fake_eval_answer(expect_acquire_by("L", "b:1"), &nil_reply);
    ck_assert_uint_eq(stats.orphan_acquires_undone, 1);
    expect_args(expect_eval(SETTLE, "L"), 6, "L", CHANNEL_OF_L, "0", "b:1", "0",
                "publish");
    answer_integer(SETTLE, "L", 1);
    fake_eval_answer(expect_acquire_by("L", "c:1"), &nil_reply);
    expect_result(next, RESULT_GRANTED);
    ck_assert_uint_eq(stats.held_locks, 1);
}
END_TEST

/* While a hold here keeps the lock, neither the subscription's
 * confirmation nor an unlock message (an older release's) makes the head
 * ask: Redis could only refuse it. Once the hold is released elsewhere
 * (its UNLOCK in flight), a message wakes it as ever. */
START_TEST(messages_wake_nobody_while_a_hold_here_keeps_the_lock)
{
    struct session *a = join("a"), *b = join("b");

    take(a, "L", 1, LEASE_MS);
    queue_unasked(b, "L", 1, WAIT_FOREVER);
    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_L, NULL), 1);
    ck_assert_uint_eq(fake_backend_publish(CHANNEL_OF_L, "0"), 1);
    expect_nothing_pending();
    engine_cfg.max_handoffs_in_a_row = 0;
    request(a, LOCK_REQUEST_RELEASE, "L", 1);
    fake_backend_publish(CHANNEL_OF_L, "0");
    ck_assert_uint_eq(fake_backend_count(ACQUIRE, "L"), 1);
}
END_TEST

/* A TRYLOCK of a lock held here still asks: it answers what Redis says. */
START_TEST(a_trylock_of_a_lock_held_here_asks_redis)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *t;

    take(a, "L", 1, LEASE_MS);
    t = acquire(b, "L", 1, 0, LEASE_MS);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer_integer(ACQUIRE, "L", 3000);
    expect_result(t, RESULT_NOT_GRANTED);
    ck_assert_uint_eq(stats.acquires_queued_unasked, 0);
}
END_TEST

/* The latencies: the waiter's acquire from its request, its wait from
 * its queueing, the hand-off from the release that freed the lock; the
 * holder's acquire too. In microseconds of the engine's clock. */
START_TEST(a_hand_off_observes_its_latencies)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *w;

    memset(&latency, 0, sizeof(latency));
    take(a, "L", 1, LEASE_MS);
    w = queue_unasked(b, "L", 1, WAIT_FOREVER);
    advance(40);
    request(a, LOCK_REQUEST_RELEASE, "L", 1); /* hands off from here */
    advance(3);
    answer(RELEASE, "L", &one_reply);
    fake_eval_answer(expect_acquire_by("L", "b:1"), &nil_reply);
    expect_result(w, RESULT_GRANTED);
    ck_assert_uint_eq(latency.handoff_seconds.count, 1);
    ck_assert_uint_eq(latency.handoff_seconds.sum_us, 3000);
    ck_assert_uint_eq(latency.wait_seconds.count, 1);
    ck_assert_uint_eq(latency.wait_seconds.sum_us, 43000);
    ck_assert_uint_eq(latency.acquire_seconds.count, 2);
    ck_assert_uint_eq(latency.acquire_seconds.sum_us, 43000);
}
END_TEST

START_TEST(the_next_waiter_looks_when_the_head_leaves)
{
    struct test_call *w[3];

    waiters_on_l(w, 3);
    abandon(w[1]); /* not the head: nobody looks */
    expect_nothing_pending();
    abandon(w[0]);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    expect_acquire_by("L", "d:1");
    ck_assert_uint_eq(stats.waiting_clients, 1);
}
END_TEST

START_TEST(a_queued_head_without_reply_tries_again_soon)
{
    struct test_call *w;

    waiters_on_l(&w, 1);
    fake_backend_publish(CHANNEL_OF_L, "0");
    answer(ACQUIRE, "L", NULL);
    expect_open(w); /* it waits on: Redis may come back */
    ck_assert_uint_eq(stats.unavailable_replies, 0);
    advance(99);
    expect_nothing_pending();
    advance(1);
    answer_nil(ACQUIRE, "L");
    expect_result(w, RESULT_GRANTED);
}
END_TEST

START_TEST(backend_ready_wakes_a_head_that_could_not_ask)
{
    struct test_call *w;

    waiters_on_l(&w, 1);
    fake_backend.eval_error = -ENOTCONN;
    fake_backend_publish(CHANNEL_OF_L, "0");
    fake_backend.eval_error = 0;
    expect_nothing_pending();
    lock_engine_backend_ready();
    expect_acquire_by("L", "b:1");
}
END_TEST

/* Whatever happens to its lock later, a call that was answered is not
 * answered again (the harness fails a second done at once). */
START_TEST(a_finished_call_is_never_answered_again)
{
    struct session *b = join("b"), *c = join("c");
    struct test_call *timed_out = queue(b, "L", 1, 3000, 10000);

    queue(c, "L", 1, WAIT_FOREVER, 10000);
    advance(3000);
    expect_result(timed_out, RESULT_NOT_GRANTED);
    fake_backend_publish(CHANNEL_OF_L, NULL);
    fake_backend_publish(CHANNEL_OF_L, "0");
    answer_integer(ACQUIRE, "L", 10000);
    lock_engine_backend_ready();
    answer_integer(ACQUIRE, "L", 10000);
    advance(60000);
    lock_engine_shutdown();
    ck_assert_uint_eq(timed_out->done_count, 1);
}
END_TEST

/* ---- abandoned calls ---------------------------------------------------- */

START_TEST(an_acquire_granted_after_its_caller_left_is_undone)
{
    struct session *a = join("a");
    struct test_call *c = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);

    abandon(c);
    answer_nil(ACQUIRE, "L");
    ck_assert_uint_eq(stats.orphan_acquires_undone, 1);
    ck_assert_uint_eq(stats.held_locks, 0);
    expect_args(expect_eval(SETTLE, "L"), 6, "L", CHANNEL_OF_L, "0", "a:1", "0",
                "publish");
    ck_assert_uint_eq(fake_backend_pending(), 1);
}
END_TEST

START_TEST(an_acquire_refused_after_its_caller_left_sends_nothing)
{
    struct session *a = join("a");

    abandon(acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS));
    answer_integer(ACQUIRE, "L", 5000);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(stats.orphan_acquires_undone, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
}
END_TEST

START_TEST(a_head_that_left_while_asking_is_undone_when_granted)
{
    struct test_call *w[2];

    waiters_on_l(w, 2);
    fake_backend_publish(CHANNEL_OF_L, "0");
    abandon(w[0]);
    /* the next head asks too: the old one may not want what it gets */
    ck_assert_uint_eq(fake_backend_pending(), 2);
    fake_eval_answer(expect_acquire_by("L", "b:1"), &nil_reply);
    ck_assert_uint_eq(stats.orphan_acquires_undone, 1);
    expect_args(expect_eval(SETTLE, "L"), 6, "L", CHANNEL_OF_L, "0", "b:1", "0",
                "publish");
}
END_TEST

Suite *waiters_suite(void)
{
    Suite *s = suite_create("waiters");
    TCase *waiting = tcase_create("waiting");
    TCase *abandoning = tcase_create("abandon");

    tcase_add_test(waiting, waiters_ask_in_arrival_order_one_at_a_time);
    tcase_add_test(waiting, the_new_head_asks_when_the_granted_lease_runs_out);
    tcase_add_test(waiting, the_subscription_confirmation_makes_the_head_look);
    tcase_add_test(waiting, a_message_while_the_head_asks_makes_it_ask_again);
    tcase_add_test(waiting, a_wait_ends_at_its_deadline_without_asking_redis);
    tcase_add_test(waiting, the_head_asks_again_when_the_lock_ttl_runs_out);
    tcase_add_test(waiting,
                   a_release_through_this_daemon_hands_the_lock_to_the_head);
    tcase_add_test(waiting, a_reentrant_release_hands_nothing_off);
    tcase_add_test(waiting, hand_offs_in_a_row_are_bounded);
    tcase_add_test(waiting, a_trylock_of_a_lock_held_here_asks_redis);
    tcase_add_test(waiting,
                   messages_wake_nobody_while_a_hold_here_keeps_the_lock);
    tcase_add_test(waiting, a_hand_off_whose_replies_are_lost_is_sent_again);
    tcase_add_test(waiting, a_waiter_that_leaves_during_its_hand_off_is_undone);
    tcase_add_test(waiting, a_hand_off_observes_its_latencies);
    tcase_add_test(waiting, the_next_waiter_looks_when_the_head_leaves);
    tcase_add_test(waiting, a_queued_head_without_reply_tries_again_soon);
    tcase_add_test(waiting, backend_ready_wakes_a_head_that_could_not_ask);
    tcase_add_test(waiting, a_finished_call_is_never_answered_again);

    tcase_add_test(abandoning,
                   an_acquire_granted_after_its_caller_left_is_undone);
    tcase_add_test(abandoning,
                   an_acquire_refused_after_its_caller_left_sends_nothing);
    tcase_add_test(abandoning,
                   a_head_that_left_while_asking_is_undone_when_granted);

    engine_suite_add(s, waiting);
    engine_suite_add(s, abandoning);
    return s;
}
