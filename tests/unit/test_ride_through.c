/*
 * test_ride_through.c - the lock engine while Redis does not answer:
 * calls sent again, settled lost replies, keys not ready, grants no
 * replica acknowledged and the failover re-check.
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

/* No reply: each is sent again once Redis answers (the scripts count a
 * repeat once), and the caller hears only the true outcome. */
START_TEST(no_reply_sends_acquire_unlock_and_query_again)
{
    struct session *a = join("a");
    struct test_call *c = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);
    struct test_call *pttl = request(a, LOCK_REQUEST_PTTL, "L", 1);
    struct test_call *unlock;

    answer(ACQUIRE, "L", NULL);
    answer(INSPECT, "L", NULL);
    expect_open(c);
    expect_open(pttl);
    expect_nothing_pending(); /* not before Redis can be reached again */
    lock_engine_backend_ready();
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "0");
    answer_nil(ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
    answer_integer(INSPECT, "L", 0); /* not an array: a bad reply */
    expect_error(pttl, REPLY_ERR);

    unlock = request(a, LOCK_REQUEST_RELEASE, "L", 1);
    answer(RELEASE, "L", NULL);
    lock_engine_backend_ready();
    /* it ran: the lock is gone, which is the release having run */
    answer(RELEASE, "L", &nil_reply);
    expect_integer(unlock, 1);
    ck_assert_uint_eq(stats.unavailable_replies, 0);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.locks_lost, 0);
    expect_nothing_pending();
}
END_TEST

/* A call that cannot get Redis for retry_timeout_ms gets -UNAVAILABLE;
 * an acquire that may have run is then settled. */
START_TEST(no_reply_within_retry_timeout_is_unavailable_and_settled)
{
    struct session *a = join("a");
    struct test_call *c = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);

    answer(ACQUIRE, "L", NULL);
    fake_backend.ready = false; /* the connection went */
    advance((uint64_t)engine_cfg.retry_timeout_ms - 1);
    expect_open(c);
    advance(1);
    expect_error(c, REPLY_UNAVAILABLE);
    ck_assert_uint_eq(stats.unavailable_replies, 1);
    expect_nothing_pending();
    fake_backend.ready = true;
    lock_engine_backend_ready();
    expect_args(expect_eval(SETTLE, "L"), 6, "L", CHANNEL_OF_L, "0", "a:1", "0",
                "publish");
    answer_integer(SETTLE, "L", 1);
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

/* Sent again after a lost reply, a reentrant acquire sends the same
 * known count, so Redis counts it once whether the first one ran or not. */
START_TEST(a_reentrant_acquire_without_reply_is_sent_again_with_its_count)
{
    struct session *a = join("a");
    struct test_call *c;

    take(a, "L", 1, LEASE_MS);
    c = acquire(a, "L", 1, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "1");
    answer(ACQUIRE, "L", NULL);
    lock_engine_backend_ready();
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "1");
    answer_nil(ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
    expect_nothing_pending();
}
END_TEST

/* A reentrant acquire abandoned after a lost reply settles its owner's
 * count back to the one known. */
START_TEST(a_reentrant_acquire_abandoned_without_reply_is_settled)
{
    struct session *a = join("a");
    struct test_call *c;

    take(a, "L", 1, LEASE_MS);
    c = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);
    answer(ACQUIRE, "L", NULL);
    abandon(c);
    lock_engine_backend_ready();
    expect_args(expect_eval(SETTLE, "L"), 6, "L", CHANNEL_OF_L, "0", "a:1", "1",
                "publish");
    answer_integer(SETTLE, "L", 2);
    ck_assert_uint_eq(stats.held_locks, 1);
}
END_TEST

/* The settle that frees the phantom wakes the head at once, and a settle
 * that gets no reply either is sent again next time. */
/* With replicas to wait for, an acquire is granted only once WAIT says a
 * replica has it; a grant none has is undone (settled back) and tried
 * again, and after 3 attempts the caller gets -NOREPLICAS. */
START_TEST(a_grant_no_replica_acknowledged_is_undone_and_retried)
{
    struct session *a = join("a");
    struct test_call *c;

    fake_backend.syncing = true;
    c = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);
    answer_nil(ACQUIRE, "L");
    expect_open(c); /* the WAIT decides */
    answer_integer("WAIT", "L", 1);
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.sync_waits, 1);

    c = acquire(a, "M", 1, WAIT_FOREVER, LEASE_MS);
    for (int attempt = 1; attempt <= 3; attempt++) {
        answer_nil(ACQUIRE, "M");
        answer_integer("WAIT", "M", 0);
        expect_args(expect_eval(SETTLE, "M"), 6, "M",
                    "redisson_lock__channel:{M}", "0", "a:1", "0", "publish");
        answer_integer(SETTLE, "M", 1);
        if (attempt < 3)
            expect_open(c);
    }
    expect_error(c, REPLY_NOREPLICAS);
    ck_assert_uint_eq(stats.sync_timeouts, 3);
    ck_assert_uint_eq(stats.sync_rollbacks, 3);
    ck_assert_uint_eq(stats.noreplicas_replies, 1);
    ck_assert_uint_eq(stats.held_locks, 1);
    expect_nothing_pending();
}
END_TEST

/* After a failover every hold is looked for on the new master: found, its
 * count is set; gone, it is lost and its holder told. */
START_TEST(a_recheck_keeps_the_holds_found_and_loses_the_others)
{
    struct session *a = join("a");

    take(a, "L", 1, LEASE_MS);
    take(a, "L", 1, LEASE_MS);
    take(a, "M", 1, LEASE_MS);
    lock_engine_recheck("test master A -> B", NULL);
    expect_args(expect_eval(SETTLE, "L"), 6, "L", CHANNEL_OF_L, "0", "a:1", "2",
                "publish");
    answer_integer(SETTLE, "L", 2);
    answer_integer(SETTLE, "M", 0);
    ck_assert_uint_eq(stats.failover_locks_kept, 1);
    ck_assert_uint_eq(stats.failover_locks_lost, 1);
    ck_assert_uint_eq(stats.locks_lost, 1);
    expect_error(acquire(a, "M", 1, 0, LEASE_MS), REPLY_LOCKLOST);
    acquire(a, "L", 1, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "2");
    answer_nil(ACQUIRE, "L");
}
END_TEST

static bool only_m(const char *key, size_t len)
{
    return len == 1 && key[0] == 'M';
}

/* In a cluster one master fails over: only the holds in its slots are
 * looked for again. */
START_TEST(a_recheck_of_some_keys_leaves_the_others_alone)
{
    struct session *a = join("a");

    take(a, "L", 1, LEASE_MS);
    take(a, "M", 1, LEASE_MS);
    lock_engine_recheck("test shard A -> B", only_m);
    expect_eval(SETTLE, "M");
    answer_integer(SETTLE, "M", 1);
    ck_assert_uint_eq(stats.failover_locks_kept, 1);
    ck_assert_uint_eq(stats.failover_locks_lost, 0);
    expect_nothing_pending();
}
END_TEST

START_TEST(a_settle_frees_the_waiter_and_is_retried_without_reply)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *waiter;

    waiter = queue(b, "L", 1, WAIT_FOREVER, 20000);
    abandon(acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS));
    answer(ACQUIRE, "L", NULL); /* a's, abandoned: a phantom maybe */
    lock_engine_backend_ready();
    answer(SETTLE, "L", NULL);
    lock_engine_backend_ready();
    answer_integer(SETTLE, "L", 1);
    expect_acquire_by("L", "b:1");
    answer_nil(ACQUIRE, "L");
    expect_result(waiter, RESULT_GRANTED);
}
END_TEST

/* With no connection for its key, a call waits up to retry_timeout_ms
 * for one and goes on when there is; past that it is -UNAVAILABLE. */
START_TEST(a_key_not_ready_waits_for_redis_up_to_retry_timeout)
{
    struct session *a = join("a");
    struct test_call *lock, *pttl, *late;

    fake_backend.ready = false;
    lock = acquire(a, "L", 1, 0, LEASE_MS);
    pttl = request(a, LOCK_REQUEST_PTTL, "L", 1);
    expect_nothing_pending();
    advance(1000);
    fake_backend.ready = true;
    lock_engine_backend_ready();
    answer_nil(ACQUIRE, "L");
    expect_result(lock, RESULT_GRANTED); /* TRYLOCK too: Redis was away */
    answer_integer(INSPECT, "L", 1);
    expect_error(pttl, REPLY_ERR);

    fake_backend.ready = false;
    late = request(a, LOCK_REQUEST_IS_LOCKED, "L", 1);
    advance((uint64_t)engine_cfg.retry_timeout_ms);
    expect_error(late, REPLY_UNAVAILABLE);
    fake_backend.ready = true;
    fake_backend.eval_error = -ENOTCONN; /* refused at the send: the same */
    late = request(a, LOCK_REQUEST_RELEASE, "L", 1);
    advance((uint64_t)engine_cfg.retry_timeout_ms);
    expect_error(late, REPLY_UNAVAILABLE);
    ck_assert_uint_eq(stats.unavailable_replies, 2);
    ck_assert_uint_eq(stats.lock_attempts, 1);
    expect_nothing_pending();
    fake_backend.eval_error = 0; /* the session's release at teardown */
}
END_TEST

START_TEST(retry_timeout_0_is_unavailable_at_once)
{
    struct session *a = join("a");

    engine_cfg.retry_timeout_ms = 0;
    fake_backend.ready = false;
    expect_error(acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS), REPLY_UNAVAILABLE);
    expect_error(request(a, LOCK_REQUEST_PTTL, "L", 1), REPLY_UNAVAILABLE);
    ck_assert_uint_eq(stats.unavailable_replies, 2);
    expect_nothing_pending();
}
END_TEST

Suite *ride_through_suite(void)
{
    Suite *s = suite_create("ride_through");
    TCase *acquiring = tcase_create("acquire");

    tcase_add_test(acquiring, no_reply_sends_acquire_unlock_and_query_again);
    tcase_add_test(acquiring,
                   no_reply_within_retry_timeout_is_unavailable_and_settled);
    tcase_add_test(acquiring,
                   a_key_not_ready_waits_for_redis_up_to_retry_timeout);
    tcase_add_test(acquiring, retry_timeout_0_is_unavailable_at_once);
    tcase_add_test(acquiring,
                   a_reentrant_acquire_abandoned_without_reply_is_settled);
    tcase_add_test(
        acquiring,
        a_reentrant_acquire_without_reply_is_sent_again_with_its_count);
    tcase_add_test(acquiring,
                   a_settle_frees_the_waiter_and_is_retried_without_reply);
    tcase_add_test(acquiring,
                   a_grant_no_replica_acknowledged_is_undone_and_retried);
    tcase_add_test(acquiring,
                   a_recheck_keeps_the_holds_found_and_loses_the_others);
    tcase_add_test(acquiring, a_recheck_of_some_keys_leaves_the_others_alone);

    engine_suite_add(s, acquiring);
    return s;
}
