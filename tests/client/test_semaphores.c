/*
 * test_semaphores.c - what librlock promises about semaphores and the
 * count-down latch, against a real rlockd and Redis: the calls reach
 * rlockd as its commands and leave Redisson's data, permits belong to the
 * client and not to a thread, a waiter is served when permits come back,
 * closing a client gives its permits back, permits lost while held are
 * reported as RLOCK_ELOCKLOST once, expirable permits are named by their
 * ids, latch waiters all go at zero, and bad arguments cost no trip.
 *
 * What rlockd did is read from Redis: the semaphore's count at its name,
 * rlockd's record of who holds permits (rlockd_permits:{name}), the
 * expirable permits' zset ({name}:timeout), the latch's count.
 */
#include <check.h>
#include <ctype.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_suites.h"
#include "harness.h"
#include "in_thread.h"

/* ---- helpers --------------------------------------------------------- */

/* A Redis command's reply as a number: an integer, a string holding one
 * (GET's), or -1 for nil. */
static long long redis_number(redisContext *redis, const char *format,
                              const char *key, const char *field)
{
    redisReply *r = redisCommand(redis, format, key, field);
    long long value;

    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->type == REDIS_REPLY_INTEGER ||
                      r->type == REDIS_REPLY_STRING ||
                      r->type == REDIS_REPLY_NIL,
                  "%s %s: reply type %d", format, key, r->type);
    value = r->type == REDIS_REPLY_INTEGER ? r->integer
            : r->type == REDIS_REPLY_NIL   ? -1
                                           : strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return value;
}

/* The permits rlockd's record says the client holds of semaphore name
 * (its owner is "<client-id>:0": permits have no thread), -1 for none. */
static long long recorded_permits(redisContext *redis, rlock_client *c,
                                  const char *name)
{
    char key[128], owner[128];

    snprintf(key, sizeof key, "rlockd_permits:{%s}", name);
    snprintf(owner, sizeof owner, "%s:0", rlock_client_id(c));
    return redis_number(redis, "HGET %s %s", key, owner);
}

/* Deletes rlockd's record of who holds the semaphore's permits, as a
 * Redis that lost them would: the holders' permits are lost. */
static void forget_permit_holders(redisContext *redis, const char *name)
{
    redisReply *r = redisCommand(redis,
                                 "DEL rlockd_permits:{%s} "
                                 "rlockd_permits_deadline:{%s}",
                                 name, name);

    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    ck_assert_int_eq(r->integer, 2);
    freeReplyObject(r);
}

/* Calls rlock_semaphore_held() until it stops answering 1, for up to
 * twice the watchdog timeout (rlockd finds lost permits at a renewal,
 * every third of it); its last answer. */
static int held_until_lost(rlock_client *c, const char *name)
{
    long long deadline = harness_now_ms() + 2 * HARNESS_WATCHDOG_MS;
    int held;

    while ((held = rlock_semaphore_held(c, name)) == 1 &&
           harness_now_ms() < deadline)
        harness_sleep_ms(50);
    return held;
}

static bool is_permit_id(const char *id)
{
    if (strlen(id) != RLOCK_PERMIT_ID_SIZE - 1)
        return false;
    for (const char *p = id; *p != '\0'; p++)
        if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
            return false;
    return true;
}

/* ---- plain semaphores ------------------------------------------------ */

START_TEST(set_add_available_acquire_and_release_leave_redissons_count)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    long long n = -1;

    ck_assert_int_eq(rlock_semaphore_available(c, "sem", &n), RLOCK_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(rlock_semaphore_set(c, "sem", 3), 1);
    ck_assert_int_eq(rlock_semaphore_set(c, "sem", 5), 0); /* set before */
    ck_assert_int_eq(redis_number(redis, "GET %s", "sem", NULL), 3);

    ck_assert_int_eq(rlock_semaphore_held(c, "sem"), 0);
    ck_assert_int_eq(rlock_acquire(c, "sem", 2), RLOCK_OK);
    ck_assert_int_eq(redis_number(redis, "GET %s", "sem", NULL), 1);
    ck_assert_int_eq(recorded_permits(redis, c, "sem"), 2);
    ck_assert_int_eq(rlock_semaphore_held(c, "sem"), 1);
    ck_assert_int_eq(rlock_try_acquire(c, "sem", 2, 0), 0);
    ck_assert_int_eq(rlock_try_acquire(c, "sem", 1, 0), 1);
    ck_assert_int_eq(rlock_semaphore_available(c, "sem", &n), RLOCK_OK);
    ck_assert_int_eq(n, 0);
    /* the probe gave nothing back */
    ck_assert_int_eq(rlock_semaphore_held(c, "sem"), 1);
    ck_assert_int_eq(recorded_permits(redis, c, "sem"), 3);

    /* more than it holds: refused, and the permits are still its own */
    ck_assert_int_eq(rlock_release(c, "sem", 4), RLOCK_ENOTOWNER);
    ck_assert_int_eq(rlock_release(c, "sem", 2), 0);
    ck_assert_int_eq(recorded_permits(redis, c, "sem"), 1);
    ck_assert_int_eq(rlock_release(c, "sem", 1), 1);
    ck_assert_int_eq(recorded_permits(redis, c, "sem"), -1);
    ck_assert_int_eq(rlock_semaphore_held(c, "sem"), 0);
    ck_assert_int_eq(rlock_release(c, "sem", 1), RLOCK_ENOTOWNER);

    /* below 0 available (or above 2147483647): refused, nothing changed */
    ck_assert_int_eq(rlock_semaphore_add(c, "sem", -5, &n), RLOCK_EINVAL);
    ck_assert_int_eq(redis_number(redis, "GET %s", "sem", NULL), 3);
    ck_assert_int_eq(rlock_semaphore_add(c, "sem", 2147483647LL, NULL),
                     RLOCK_EINVAL);
    ck_assert_int_eq(rlock_semaphore_add(c, "sem", -3, &n), RLOCK_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(rlock_try_acquire(c, "sem", 1, 0), 0);
    ck_assert_int_eq(rlock_semaphore_add(c, "sem", 2, NULL), RLOCK_OK);
    ck_assert_int_eq(redis_number(redis, "GET %s", "sem", NULL), 2);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

/* A lock is its thread's; permits are the client's: another thread
 * releases them. */
START_TEST(permits_belong_to_the_client_not_to_a_thread)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    struct thread_call takes = {
        .client = c, .op = OP_ACQUIRE, .name = "shared", .permits = 2};

    ck_assert_int_eq(rlock_semaphore_set(c, "shared", 2), 1);
    thread_call_start(&takes);
    ck_assert_int_eq(thread_call_join(&takes), 1);
    ck_assert_int_eq(rlock_semaphore_held(c, "shared"), 1);
    ck_assert_int_eq(rlock_release(c, "shared", 1), 0);
    ck_assert_int_eq(rlock_release(c, "shared", 1), 1);
    rlock_close(c);
}
END_TEST

START_TEST(a_waiting_acquire_is_served_when_another_client_releases)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    struct thread_call b_waits = {.client = b,
                                  .op = OP_ACQUIRE,
                                  .name = "one",
                                  .permits = 1,
                                  .wait_ms = RLOCK_WAIT_FOREVER};
    long long released;

    ck_assert_int_eq(rlock_semaphore_set(a, "one", 1), 1);
    ck_assert_int_eq(rlock_acquire(a, "one", 1), RLOCK_OK);
    thread_call_start(&b_waits);
    harness_sleep_ms(300);
    ck_assert_int_eq(rlock_semaphore_held(b, "one"), 0); /* still waits */
    released = harness_now_ms();
    ck_assert_int_eq(rlock_release(a, "one", 1), 1);
    ck_assert_int_eq(thread_call_join(&b_waits), 1);
    ck_assert_int_ge(b_waits.elapsed_ms, 250); /* it waited */
    ck_assert_int_lt(harness_now_ms() - released, 500);
    ck_assert_int_eq(rlock_semaphore_held(b, "one"), 1);
    ck_assert_int_eq(rlock_release(b, "one", 1), 1);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

START_TEST(closing_the_client_gives_its_permits_back)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);

    ck_assert_int_eq(rlock_semaphore_set(a, "closed", 2), 1);
    ck_assert_int_eq(rlock_acquire(a, "closed", 2), RLOCK_OK);
    ck_assert_int_eq(rlock_try_acquire(b, "closed", 1, 0), 0);
    rlock_close(a);
    ck_assert_int_eq(rlock_try_acquire(b, "closed", 2, 2000), 1);
    rlock_close(b);
}
END_TEST

/* rlockd's watchdog finds the record of the client's permits gone (as
 * after a Redis that lost data): rlock_semaphore_held() says so once,
 * and the record forgets them. */
START_TEST(permits_lost_while_held_are_reported_once_by_held)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();

    ck_assert_int_eq(rlock_semaphore_set(c, "lost", 1), 1);
    ck_assert_int_eq(rlock_acquire(c, "lost", 1), RLOCK_OK);
    ck_assert_int_eq(rlock_semaphore_held(c, "lost"), 1);
    forget_permit_holders(redis, "lost");
    ck_assert_int_eq(held_until_lost(c, "lost"), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_semaphore_held(c, "lost"), 0);
    /* rlockd's own hold learns it at the RELEASE (a query changes no
     * hold): it says so, and then it has none */
    ck_assert_int_eq(rlock_release(c, "lost", 1), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_release(c, "lost", 1), RLOCK_ENOTOWNER);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

/* The same loss found by the RELEASE that would have given them back. */
START_TEST(permits_lost_while_held_make_their_release_report_lost)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();

    ck_assert_int_eq(rlock_semaphore_set(c, "lost", 2), 1);
    ck_assert_int_eq(rlock_acquire(c, "lost", 2), RLOCK_OK);
    forget_permit_holders(redis, "lost");
    /* past two renewals: rlockd has found them gone */
    harness_sleep_ms(HARNESS_WATCHDOG_MS);
    ck_assert_int_eq(rlock_release(c, "lost", 1), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_release(c, "lost", 1), RLOCK_ENOTOWNER);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

/* rlockd restarted on a Redis that lost its data: there is no session to
 * resume, and the permits the client took are lost, whichever thread
 * took them; each semaphore says so once. */
START_TEST(no_session_to_resume_makes_the_permits_lost)
{
    const rlock_options opts = {.heartbeat_ms = RLOCK_NO_HEARTBEAT};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    redisContext *redis = harness_redis();
    struct thread_call takes = {
        .client = c, .op = OP_ACQUIRE, .name = "gone", .permits = 1};
    redisReply *reply;

    ck_assert_int_eq(rlock_semaphore_set(c, "gone", 1), 1);
    ck_assert_int_eq(rlock_semaphore_set(c, "gone2", 1), 1);
    thread_call_start(&takes);
    ck_assert_int_eq(thread_call_join(&takes), 1);
    ck_assert_int_eq(rlock_acquire(c, "gone2", 1), RLOCK_OK);
    harness_sleep_ms(100);
    harness_rlockd_stop();
    reply = redisCommand(redis, "FLUSHDB");
    ck_assert_ptr_nonnull(reply);
    freeReplyObject(reply);
    harness_rlockd_start();
    ck_assert_int_eq(rlock_semaphore_held(c, "gone"), RLOCK_ECONNLOST);
    /* told before anything is sent, once */
    ck_assert_int_eq(rlock_try_acquire(c, "gone2", 1, 0), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_semaphore_set(c, "gone2", 1), 1);
    ck_assert_int_eq(rlock_try_acquire(c, "gone2", 1, 0), 1);
    ck_assert_int_eq(rlock_release(c, "gone2", 1), 1);
    ck_assert_int_eq(rlock_release(c, "gone", 1), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_semaphore_held(c, "gone"), 0);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

/* ---- expirable permits ----------------------------------------------- */

START_TEST(expirable_permits_are_named_by_their_ids)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    char id[RLOCK_PERMIT_ID_SIZE], upper[RLOCK_PERMIT_ID_SIZE];

    ck_assert_int_eq(rlock_semaphore_set(a, "exp", 1), 1);
    ck_assert_int_eq(rlock_acquire_expirable(a, "exp", 0, RLOCK_WATCHDOG, id),
                     1);
    ck_assert_msg(is_permit_id(id), "permit id '%s'", id);
    ck_assert_int_eq(redis_number(redis, "ZCARD {%s}:timeout", "exp", NULL), 1);
    ck_assert_int_eq(redis_number(redis, "GET %s", "exp", NULL), 0);
    strcpy(upper, id);
    /* none left: the wait runs out, and id is cleared */
    ck_assert_int_eq(rlock_acquire_expirable(b, "exp", 100, 5000, id), 0);
    ck_assert_str_eq(id, "");
    strcpy(id, upper);
    /* any client may give it back, in either case of hex digits */
    for (int i = 0; i < RLOCK_PERMIT_ID_SIZE; i++)
        upper[i] = (char)toupper((unsigned char)id[i]);
    ck_assert_int_eq(rlock_release_expirable(b, "exp", upper), RLOCK_OK);
    ck_assert_int_eq(redis_number(redis, "ZCARD {%s}:timeout", "exp", NULL), 0);
    ck_assert_int_eq(redis_number(redis, "GET %s", "exp", NULL), 1);
    ck_assert_int_eq(rlock_release_expirable(b, "exp", id), RLOCK_ENOTOWNER);
    /* a's record of it goes at a's own release, which finds it gone */
    ck_assert_int_eq(rlock_release_expirable(a, "exp", id), RLOCK_ELOCKLOST);
    redisFree(redis);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

/* An expirable permit is not in rlockd's session record: a restarted
 * rlockd gives the client no session back, and the permit, in Redis to
 * the end of its lease, is still the client's to give back. */
START_TEST(an_expirable_permit_outlives_an_rlockd_restart_within_its_lease)
{
    const rlock_options opts = {.heartbeat_ms = RLOCK_NO_HEARTBEAT};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    redisContext *redis = harness_redis();
    char id[RLOCK_PERMIT_ID_SIZE];
    long long n;

    ck_assert_int_eq(rlock_semaphore_set(c, "restart", 1), 1);
    ck_assert_int_eq(rlock_acquire_expirable(c, "restart", 0, 20000, id), 1);
    harness_rlockd_stop();
    harness_rlockd_start();
    ck_assert_int_eq(rlock_semaphore_available(c, "restart", &n),
                     RLOCK_ECONNLOST);
    ck_assert_int_eq(rlock_release_expirable(c, "restart", id), RLOCK_OK);
    ck_assert_int_eq(redis_number(redis, "GET %s", "restart", NULL), 1);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

START_TEST(an_expirable_permit_whose_lease_ran_out_is_lost)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    char id[RLOCK_PERMIT_ID_SIZE];

    ck_assert_int_eq(rlock_semaphore_set(c, "leased", 1), 1);
    ck_assert_int_eq(rlock_acquire_expirable(c, "leased", 0, 300, id), 1);
    harness_sleep_ms(600);
    ck_assert_int_eq(rlock_release_expirable(c, "leased", id), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_release_expirable(c, "leased", id), RLOCK_ENOTOWNER);
    rlock_close(c);
}
END_TEST

/* ---- the latch ------------------------------------------------------- */

START_TEST(latch_waiters_all_go_when_the_count_reaches_zero)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);
    struct thread_call waits[2] = {
        {.client = a,
         .op = OP_AWAIT,
         .name = "latch",
         .wait_ms = RLOCK_WAIT_FOREVER},
        {.client = b, .op = OP_AWAIT, .name = "latch", .wait_ms = 10000},
    };
    long long n = -1, start;

    ck_assert_int_eq(rlock_await(a, "latch", 0), 1); /* never set: open */
    ck_assert_int_eq(rlock_latch_set(a, "latch", 2), 1);
    ck_assert_int_eq(rlock_latch_set(b, "latch", 5), 0);
    ck_assert_int_eq(rlock_latch_count(b, "latch", &n), RLOCK_OK);
    ck_assert_int_eq(n, 2);
    start = harness_now_ms();
    ck_assert_int_eq(rlock_await(a, "latch", 200), 0);
    ck_assert_int_ge(harness_now_ms() - start, 200);
    for (int i = 0; i < 2; i++)
        thread_call_start(&waits[i]);
    ck_assert_int_eq(rlock_count_down(b, "latch", &n), RLOCK_OK);
    ck_assert_int_eq(n, 1);
    harness_sleep_ms(300);
    start = harness_now_ms();
    ck_assert_int_eq(rlock_count_down(b, "latch", NULL), RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(thread_call_join(&waits[i]), 1);
        ck_assert_int_ge(waits[i].elapsed_ms, 250);
    }
    ck_assert_int_lt(harness_now_ms() - start, 500);
    ck_assert_int_eq(rlock_latch_count(a, "latch", &n), RLOCK_OK);
    ck_assert_int_eq(n, 0);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

/* ---- arguments ------------------------------------------------------- */

START_TEST(bad_counts_and_ids_are_einval_without_a_round_trip)
{
    const rlock_options opts = {.command_timeout_ms = 2000};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    char id[RLOCK_PERMIT_ID_SIZE];
    long long start, n;

    /* a stopped rlockd: any call that went out would hang for 2 s */
    harness_rlockd_signal(SIGSTOP);
    start = harness_now_ms();
    ck_assert_int_eq(rlock_semaphore_set(c, "s", -1), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_semaphore_set(c, "s", 2147483648LL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_semaphore_set(c, "", 1), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_semaphore_add(c, "s", -2147483648LL, NULL),
                     RLOCK_EINVAL);
    ck_assert_int_eq(rlock_semaphore_available(c, "s", NULL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_acquire(c, "s", 0), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_acquire(NULL, "s", 1), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_try_acquire(c, "s", 1, -2), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_release(c, "s", 2147483648LL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_semaphore_held(c, NULL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_acquire_expirable(c, "s", 0, 0, id), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_acquire_expirable(c, "s", 0, RLOCK_WATCHDOG, NULL),
                     RLOCK_EINVAL);
    ck_assert_int_eq(rlock_release_expirable(c, "s", "0123"), RLOCK_EINVAL);
    ck_assert_int_eq(
        rlock_release_expirable(c, "s", "0123456789abcdef0123456789abcdeg"),
        RLOCK_EINVAL);
    ck_assert_int_eq(rlock_latch_set(c, "l", -1), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_latch_count(c, "l", NULL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_await(c, "l", -3), RLOCK_EINVAL);
    /* not taken through this client: nothing to ask */
    ck_assert_int_eq(rlock_semaphore_held(c, "s"), 0);
    ck_assert_int_lt(harness_now_ms() - start, 500);
    harness_rlockd_signal(SIGCONT);
    /* nothing went out: the connection is still in step */
    ck_assert_int_eq(rlock_semaphore_available(c, "s", &n), RLOCK_OK);
    ck_assert_int_eq(n, 0);
    rlock_close(c);
}
END_TEST

Suite *semaphores_suite(void)
{
    Suite *s = suite_create("semaphores");
    TCase *tc = tcase_create("semaphores");

    tcase_add_checked_fixture(tc, harness_start_default, harness_stop);
    tcase_set_timeout(tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(tc,
                   set_add_available_acquire_and_release_leave_redissons_count);
    tcase_add_test(tc, permits_belong_to_the_client_not_to_a_thread);
    tcase_add_test(tc,
                   a_waiting_acquire_is_served_when_another_client_releases);
    tcase_add_test(tc, closing_the_client_gives_its_permits_back);
    tcase_add_test(tc, permits_lost_while_held_are_reported_once_by_held);
    tcase_add_test(tc, permits_lost_while_held_make_their_release_report_lost);
    tcase_add_test(tc, no_session_to_resume_makes_the_permits_lost);
    tcase_add_test(tc, expirable_permits_are_named_by_their_ids);
    tcase_add_test(
        tc, an_expirable_permit_outlives_an_rlockd_restart_within_its_lease);
    tcase_add_test(tc, an_expirable_permit_whose_lease_ran_out_is_lost);
    tcase_add_test(tc, latch_waiters_all_go_when_the_count_reaches_zero);
    tcase_add_test(tc, bad_counts_and_ids_are_einval_without_a_round_trip);
    suite_add_tcase(s, tc);
    return s;
}
