/*
 * test_deadlock.c - deadlock detection (engine/deadlock.c) on the fake
 * backend: which waits close a cycle of owners and are refused
 * -DEADLOCK naming it, and which never do (reentrant acquires, chains,
 * threads of one client, holds this daemon does not know of).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define READ_ACQUIRE "rw_read_acquire"
#define WRITE_ACQUIRE "rw_write_acquire"
#define CHAIN 200

/* Takes name as kind (a READ or WRITE lock), granted by Redis. */
static void take_kind(struct session *s, const struct lock_kind *kind,
                      const char *script, const char *name)
{
    struct test_call *c =
        start_kind(s, kind, LOCK_REQUEST_ACQUIRE, name, 1, 0, LEASE_MS);

    answer_nil(script, name);
    expect_result(c, RESULT_GRANTED);
}

/* a:1 holds X and b:1 holds Y: where most cycles here start. */
static void hold_x_and_y(struct session *a, struct session *b)
{
    take(a, "X", 1, LEASE_MS);
    take(b, "Y", 1, LEASE_MS);
}

static void expect_deadlock(const struct test_call *c, const char *cycle)
{
    expect_error(c, REPLY_DEADLOCK);
    ck_assert_str_eq(c->error, cycle);
}

/* a waits for b, b for a: the wait that closes it is refused, once, and
 * a's goes on; when b gives up Y, a gets it. */
START_TEST(a_two_party_cycle_refuses_the_wait_that_closes_it)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *wa, *wb, *unlock;

    hold_x_and_y(a, b);
    wa = queue_unasked(a, "Y", 1, WAIT_FOREVER);
    wb = acquire(b, "X", 1, WAIT_FOREVER, LEASE_MS);
    expect_deadlock(wb, "b:1 waits for X held by a:1, a:1 waits for Y held "
                        "by b:1");
    ck_assert_uint_eq(stats.deadlocks_detected, 1);
    ck_assert_uint_eq(stats.waiting_clients, 1);
    expect_open(wa);
    expect_nothing_pending();
    unlock = request(b, LOCK_REQUEST_RELEASE, "Y", 1); /* hands Y to a */
    answer_integer(RELEASE, "Y", 1);
    expect_integer(unlock, 1);
    fake_eval_answer(expect_acquire_by("Y", "a:1"), &nil_reply);
    expect_result(wa, RESULT_GRANTED);
    ck_assert_uint_eq(stats.deadlocks_detected, 1);
}
END_TEST

START_TEST(a_three_party_cycle_is_refused_once)
{
    struct session *a = join("a"), *b = join("b"), *c = join("c");
    struct test_call *wa, *wb, *wc;

    hold_x_and_y(a, b);
    take(c, "Z", 1, LEASE_MS);
    wa = queue_unasked(a, "Y", 1, WAIT_FOREVER);
    wb = queue_unasked(b, "Z", 1, WAIT_FOREVER);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
    wc = acquire(c, "X", 1, WAIT_FOREVER, LEASE_MS);
    expect_deadlock(wc, "c:1 waits for X held by a:1, a:1 waits for Y held "
                        "by b:1, b:1 waits for Z held by c:1");
    ck_assert_uint_eq(stats.deadlocks_detected, 1);
    expect_open(wa);
    expect_open(wb);
}
END_TEST

/* An owner taking a lock it holds again never waits: no edge to itself,
 * even while others wait for it. */
START_TEST(a_reentrant_acquire_waits_for_nobody)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *wb, *again;

    hold_x_and_y(a, b);
    wb = queue_unasked(b, "X", 1, WAIT_FOREVER);
    again = acquire(a, "X", 1, WAIT_FOREVER, LEASE_MS);
    answer_nil(ACQUIRE, "X");
    expect_result(again, RESULT_GRANTED);
    expect_open(wb);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
}
END_TEST

/* Threads of one client are owners of their own: one waiting for the
 * other is a chain; both waiting for each other is a cycle. */
START_TEST(threads_of_one_client_deadlock_only_in_a_cycle)
{
    struct session *a = join("a");
    struct test_call *w1, *w2;

    take(a, "X", 1, LEASE_MS);
    take(a, "Y", 2, LEASE_MS);
    w1 = queue_unasked(a, "Y", 1, WAIT_FOREVER);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
    w2 = acquire(a, "X", 2, WAIT_FOREVER, LEASE_MS);
    expect_deadlock(w2, "a:2 waits for X held by a:1, a:1 waits for Y held "
                        "by a:2");
    expect_open(w1);
}
END_TEST

/* Thread i holds L<i> and waits for L<i+1>: CHAIN owners of one client in
 * a line, in no cycle; the last closing it back to the first is refused,
 * its cycle cut short in the text. */
START_TEST(a_long_chain_is_no_cycle_until_closed)
{
    struct session *a = join("a");
    struct test_call *waits[CHAIN], *last;
    char name[16];
    size_t len;

    for (int i = 0; i < CHAIN; i++) {
        snprintf(name, sizeof(name), "L%d", i);
        take(a, name, (uint64_t)i + 1, LEASE_MS);
    }
    for (int i = CHAIN - 2; i >= 0; i--) { /* from the end: the longest walks */
        snprintf(name, sizeof(name), "L%d", i + 1);
        waits[i] = queue_unasked(a, name, (uint64_t)i + 1, WAIT_FOREVER);
    }
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
    last = acquire(a, "L0", CHAIN, WAIT_FOREVER, LEASE_MS);
    expect_error(last, REPLY_DEADLOCK);
    ck_assert_uint_eq(stats.deadlocks_detected, 1);
    ck_assert(strncmp(last->error,
                      "a:200 waits for L0 held by a:1, a:1 waits "
                      "for L1 held by a:2, ",
                      60) == 0);
    len = strlen(last->error);
    ck_assert_str_eq(last->error + len - 3, "...");
    for (int i = 0; i < CHAIN - 1; i++)
        expect_open(waits[i]);
}
END_TEST

/* A writer waits for every reader: a reader of D waiting for a writer of
 * E, whose owner asks to write D. */
START_TEST(a_writer_waiting_for_a_reader_closes_a_cycle)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *wa, *wb;

    take_kind(a, &lock_kind_read, READ_ACQUIRE, "D");
    take_kind(b, &lock_kind_write, WRITE_ACQUIRE, "E");
    wa = start_kind(a, &lock_kind_write, LOCK_REQUEST_ACQUIRE, "E", 1,
                    WAIT_FOREVER, LEASE_MS);
    expect_open(wa); /* queued unasked: b writes E here */
    wb = start_kind(b, &lock_kind_write, LOCK_REQUEST_ACQUIRE, "D", 1,
                    WAIT_FOREVER, LEASE_MS);
    answer_integer(WRITE_ACQUIRE, "D", 5000);
    expect_deadlock(wb, "b:1 waits for D (WRITE) held by a:1, a:1 waits for "
                        "E (WRITE) held by b:1");
    expect_open(wa);
}
END_TEST

/* A reader waits for the writer that holds, and for a writer ahead of
 * it that waits (it yields to it): the edge that closes this cycle. */
START_TEST(a_reader_behind_a_waiting_writer_closes_a_cycle)
{
    struct session *a = join("a"), *b = join("b"), *c = join("c");
    struct test_call *wb, *wc, *wa;

    take_kind(a, &lock_kind_read, READ_ACQUIRE, "D");
    take(c, "X", 1, LEASE_MS);
    wb = start_kind(b, &lock_kind_write, LOCK_REQUEST_ACQUIRE, "D", 1,
                    WAIT_FOREVER, LEASE_MS);
    answer_integer(WRITE_ACQUIRE, "D", 5000);
    expect_open(wb);
    wc = start_kind(c, &lock_kind_read, LOCK_REQUEST_ACQUIRE, "D", 1,
                    WAIT_FOREVER, LEASE_MS);
    expect_open(wc); /* yields to b's write, unasked */
    expect_nothing_pending();
    wa = acquire(a, "X", 1, WAIT_FOREVER, LEASE_MS);
    expect_deadlock(wa, "a:1 waits for X held by c:1, c:1 waits for D (READ) "
                        "behind b:1, b:1 waits for D (WRITE) held by a:1");
    expect_open(wb);
    expect_open(wc);
}
END_TEST

/* A wait that ran out, or was abandoned, waits for nobody: the wait
 * that would have closed a cycle with it does not. */
START_TEST(a_waiter_that_gave_up_is_no_longer_in_a_cycle)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *wa, *wb;

    hold_x_and_y(a, b);
    wa = queue_unasked(a, "Y", 1, 100);
    advance(100);
    expect_result(wa, RESULT_NOT_GRANTED);
    wb = queue_unasked(b, "X", 1, WAIT_FOREVER);
    abandon(wb); /* its client went mid-wait */
    wa = queue_unasked(a, "Y", 1, WAIT_FOREVER);
    expect_open(wa);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
}
END_TEST

/* A lock this daemon holds no more (its lease ran out, so Redis expired
 * it, and someone outside took it) is not a wait for its old owner. */
START_TEST(a_hold_known_only_to_redis_is_not_in_the_graph)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *wa, *wb;

    take(a, "X", 1, LEASE_MS);
    advance(LEASE_MS + 1); /* lost: Redis expired it */
    take(b, "Y", 1, LEASE_MS);
    wb = queue(b, "X", 1, WAIT_FOREVER, 5000); /* a Java client has X */
    wa = queue_unasked(a, "Y", 1, WAIT_FOREVER);
    expect_open(wa);
    expect_open(wb);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
}
END_TEST

/* An owner that waits is granted another lock (a hand-off): those who
 * wait for that lock now wait for it, and its own wait closes the cycle. */
START_TEST(a_lock_handed_to_a_waiting_owner_closes_a_cycle)
{
    struct session *a = join("a"), *b = join("b"), *c = join("c");
    struct test_call *wa_l, *wb_l, *wa_m, *unlock;

    take(c, "L", 1, LEASE_MS);
    take(b, "M", 1, LEASE_MS);
    wa_l = queue_unasked(a, "L", 1, WAIT_FOREVER);
    wb_l = queue_unasked(b, "L", 1, WAIT_FOREVER);
    wa_m = queue_unasked(a, "M", 1, WAIT_FOREVER);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
    unlock = request(c, LOCK_REQUEST_RELEASE, "L", 1); /* hands L to a */
    answer_integer(RELEASE, "L", 1);
    expect_integer(unlock, 1);
    fake_eval_answer(expect_acquire_by("L", "a:1"), &nil_reply);
    expect_result(wa_l, RESULT_GRANTED);
    expect_deadlock(wa_m, "a:1 waits for M held by b:1, b:1 waits for L held "
                          "by a:1");
    expect_open(wb_l);
}
END_TEST

/* deadlock_detection off: the cycle waits, as it did before. */
START_TEST(detection_off_lets_the_cycle_wait)
{
    struct session *a = join("a"), *b = join("b");

    engine_cfg.deadlock_detection = 0;
    hold_x_and_y(a, b);
    queue_unasked(a, "Y", 1, WAIT_FOREVER);
    queue_unasked(b, "X", 1, WAIT_FOREVER);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
}
END_TEST

/* Semaphores are not in the graph: permits are the session's, and a
 * wait for them waits for no thread (here for b, whose thread 0 waits
 * for a's thread 0, whose session waits for b's permits). */
START_TEST(a_semaphore_wait_is_not_in_the_graph)
{
    struct session *a = join("a"), *b = join("b");
    struct lock_request permit = {.kind = &lock_kind_semaphore,
                                  .op = LOCK_REQUEST_ACQUIRE,
                                  .name = "S",
                                  .name_len = 1,
                                  .lease_ms = LEASE_MS,
                                  .amount = 1};
    struct test_call *wa, *wb, *held;

    held = start_request(b, &permit);
    answer_nil("semaphore_acquire", "S");
    expect_result(held, RESULT_GRANTED);
    take(a, "X", 0, LEASE_MS);
    wb = queue_unasked(b, "X", 0, WAIT_FOREVER);
    permit.wait_ms = WAIT_FOREVER;
    wa = start_request(a, &permit);
    answer_integer("semaphore_acquire", "S", 5000);
    expect_open(wa);
    expect_open(wb);
    ck_assert_uint_eq(stats.deadlocks_detected, 0);
}
END_TEST

Suite *deadlock_suite(void)
{
    Suite *s = suite_create("deadlock");
    TCase *cycles = tcase_create("cycles");
    TCase *none = tcase_create("no_false_positives");

    tcase_add_test(cycles, a_two_party_cycle_refuses_the_wait_that_closes_it);
    tcase_add_test(cycles, a_three_party_cycle_is_refused_once);
    tcase_add_test(cycles, threads_of_one_client_deadlock_only_in_a_cycle);
    tcase_add_test(cycles, a_long_chain_is_no_cycle_until_closed);
    tcase_add_test(cycles, a_writer_waiting_for_a_reader_closes_a_cycle);
    tcase_add_test(cycles, a_reader_behind_a_waiting_writer_closes_a_cycle);
    tcase_add_test(cycles, a_lock_handed_to_a_waiting_owner_closes_a_cycle);
    tcase_add_test(none, a_reentrant_acquire_waits_for_nobody);
    tcase_add_test(none, a_waiter_that_gave_up_is_no_longer_in_a_cycle);
    tcase_add_test(none, a_hold_known_only_to_redis_is_not_in_the_graph);
    tcase_add_test(none, detection_off_lets_the_cycle_wait);
    tcase_add_test(none, a_semaphore_wait_is_not_in_the_graph);
    engine_suite_add(s, cycles);
    engine_suite_add(s, none);
    return s;
}
