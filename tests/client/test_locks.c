/*
 * test_locks.c - what librlock promises about locks, against a real rlockd
 * and Redis: mutual exclusion between the threads of one process,
 * reentrancy per thread, TRYLOCK's wait, leases, the query functions,
 * client-ids, Unix socket addresses, the per-thread connections.
 */
#include <check.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "client_suites.h"
#include "harness.h"
#include "in_thread.h"

/* ---- mutual exclusion ------------------------------------------------ */

#define EXCLUSION_THREADS 4
#define EXCLUSION_ROUNDS 100

struct exclusion {
    rlock_client *client;
    volatile long counter; /* plain read-modify-write, under the lock only */
    int inside;            /* set while a thread is in the critical section */
    int overlaps;          /* times a thread found it set */
    int errors;
};

static void *exclusion_worker(void *arg)
{
    struct exclusion *x = arg;
    const struct timespec pause = {0, 100000};

    for (int i = 0; i < EXCLUSION_ROUNDS; i++) {
        if (rlock_lock(x->client, "exclusion", RLOCK_WATCHDOG) != RLOCK_OK) {
            __atomic_add_fetch(&x->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (__atomic_exchange_n(&x->inside, 1, __ATOMIC_SEQ_CST))
            __atomic_add_fetch(&x->overlaps, 1, __ATOMIC_SEQ_CST);
        long seen = x->counter;
        /* give the others every chance to get in, were the lock broken */
        sched_yield();
        nanosleep(&pause, NULL);
        x->counter = seen + 1;
        __atomic_store_n(&x->inside, 0, __ATOMIC_SEQ_CST);
        if (rlock_unlock(x->client, "exclusion") != 1)
            __atomic_add_fetch(&x->errors, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

START_TEST(threads_of_one_client_exclude_each_other)
{
    struct exclusion x = {.client = connect_or_fail(harness_addr(), NULL)};
    pthread_t threads[EXCLUSION_THREADS];

    for (int i = 0; i < EXCLUSION_THREADS; i++)
        ck_assert_int_eq(
            pthread_create(&threads[i], NULL, exclusion_worker, &x), 0);
    for (int i = 0; i < EXCLUSION_THREADS; i++)
        pthread_join(threads[i], NULL);
    ck_assert_int_eq(x.errors, 0);
    ck_assert_int_eq(x.overlaps, 0);
    ck_assert_int_eq(x.counter, EXCLUSION_THREADS * EXCLUSION_ROUNDS);
    ck_assert_int_eq(rlock_is_locked(x.client, "exclusion"), 0);
    rlock_close(x.client);
}
END_TEST

/* ---- reentrancy and waiting ------------------------------------------ */

START_TEST(holds_are_reentrant_within_a_thread_only)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);

    ck_assert_int_eq(rlock_lock(c, "reentrant", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_lock(c, "reentrant", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_trylock(c, "reentrant", 0, RLOCK_WATCHDOG), 1);
    ck_assert_int_eq(rlock_hold_count(c, "reentrant"), 3);
    /* another thread of the same client is another owner */
    ck_assert_int_eq(in_new_thread(c, OP_TRYLOCK, "reentrant", 0, -1), 0);
    ck_assert_int_eq(rlock_unlock(c, "reentrant"), 0);
    ck_assert_int_eq(rlock_unlock(c, "reentrant"), 0);
    ck_assert_int_eq(rlock_is_held(c, "reentrant"), 1);
    ck_assert_int_eq(rlock_hold_count(c, "reentrant"), 1);
    ck_assert_int_eq(rlock_unlock(c, "reentrant"), 1);
    ck_assert_int_eq(rlock_is_locked(c, "reentrant"), 0);
    ck_assert_int_eq(rlock_hold_count(c, "reentrant"), 0);
    rlock_close(c);
}
END_TEST

START_TEST(trylock_gives_up_when_the_wait_runs_out)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    struct thread_call once = {.client = c,
                               .op = OP_TRYLOCK,
                               .name = "contended",
                               .wait_ms = 0,
                               .lease_ms = -1};
    struct thread_call waits = {.client = c,
                                .op = OP_TRYLOCK,
                                .name = "contended",
                                .wait_ms = 200,
                                .lease_ms = -1};

    ck_assert_int_eq(rlock_lock(c, "contended", RLOCK_WATCHDOG), RLOCK_OK);
    thread_call_start(&once);
    ck_assert_int_eq(thread_call_join(&once), 0);
    ck_assert_int_lt(once.elapsed_ms, 150);
    thread_call_start(&waits);
    ck_assert_int_eq(thread_call_join(&waits), 0);
    ck_assert_int_ge(waits.elapsed_ms, 190);
    ck_assert_int_lt(waits.elapsed_ms, 2000);
    ck_assert_int_eq(rlock_unlock(c, "contended"), 1);
    rlock_close(c);
}
END_TEST

START_TEST(trylock_gets_a_lock_released_during_the_wait)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    struct thread_call waits = {.client = c,
                                .op = OP_TRYLOCK,
                                .name = "handover",
                                .wait_ms = 5000,
                                .lease_ms = -1};

    ck_assert_int_eq(rlock_lock(c, "handover", RLOCK_WATCHDOG), RLOCK_OK);
    thread_call_start(&waits);
    ck_assert(harness_wait_info("blocked_clients", 1));
    harness_sleep_ms(100);
    ck_assert_int_eq(rlock_unlock(c, "handover"), 1);
    ck_assert_int_eq(thread_call_join(&waits), 1);
    ck_assert_int_ge(waits.elapsed_ms, 100);
    ck_assert_int_lt(waits.elapsed_ms, 3000);
    /* held by the (exited) waiting thread, not by this one */
    ck_assert_int_eq(rlock_is_locked(c, "handover"), 1);
    ck_assert_int_eq(rlock_is_held(c, "handover"), 0);
    ck_assert_int_eq(rlock_force_unlock(c, "handover"), 1);
    rlock_close(c);
}
END_TEST

START_TEST(blocked_lock_does_not_delay_other_threads)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    struct thread_call blocked = {.client = c,
                                  .op = OP_LOCK,
                                  .name = "busy",
                                  .wait_ms = 0,
                                  .lease_ms = -1};
    struct thread_call query = {.client = c,
                                .op = OP_IS_LOCKED,
                                .name = "busy",
                                .wait_ms = 0,
                                .lease_ms = -1};
    long long start;

    ck_assert_int_eq(rlock_lock(c, "busy", RLOCK_WATCHDOG), RLOCK_OK);
    thread_call_start(&blocked);
    ck_assert(harness_wait_info("blocked_clients", 1));
    start = harness_now_ms();
    ck_assert_int_eq(rlock_is_locked(c, "busy"), 1);
    ck_assert_int_lt(harness_now_ms() - start, 500);
    /* a thread new to the client opens its connection meanwhile */
    thread_call_start(&query);
    ck_assert_int_eq(thread_call_join(&query), 1);
    ck_assert_int_lt(query.elapsed_ms, 500);
    ck_assert_int_eq(harness_info("blocked_clients"), 1);
    ck_assert_int_eq(rlock_unlock(c, "busy"), 1);
    ck_assert_int_eq(thread_call_join(&blocked), RLOCK_OK);
    ck_assert_int_eq(rlock_force_unlock(c, "busy"), 1);
    rlock_close(c);
}
END_TEST

/* The reply timeout is for answering, not for waiting: a LOCK waits as
 * long as it takes, and a TRYLOCK its WAIT and the command timeout. */
START_TEST(waiting_calls_outlast_the_command_timeout)
{
    const rlock_options opts = {.command_timeout_ms = 200};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    struct thread_call trylock = {.client = c,
                                  .op = OP_TRYLOCK,
                                  .name = "slow",
                                  .wait_ms = 700,
                                  .lease_ms = -1};
    struct thread_call lock = {
        .client = c, .op = OP_LOCK, .name = "slow", .lease_ms = -1};

    ck_assert_int_eq(rlock_lock(c, "slow", RLOCK_WATCHDOG), RLOCK_OK);
    thread_call_start(&trylock);
    ck_assert_int_eq(thread_call_join(&trylock), 0);
    ck_assert_int_ge(trylock.elapsed_ms, 690);
    thread_call_start(&lock);
    harness_sleep_ms(700);
    ck_assert_int_eq(rlock_unlock(c, "slow"), 1);
    ck_assert_int_eq(thread_call_join(&lock), RLOCK_OK);
    ck_assert_int_ge(lock.elapsed_ms, 650);
    ck_assert_int_eq(rlock_force_unlock(c, "slow"), 1);
    rlock_close(c);
}
END_TEST

/* ---- leases and queries ---------------------------------------------- */

START_TEST(lease_expiry_makes_unlock_report_lock_lost)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    long long ttl = 0;

    ck_assert_int_eq(rlock_lock(c, "leased", 300), RLOCK_OK);
    ck_assert_int_eq(rlock_pttl(c, "leased", &ttl), RLOCK_OK);
    ck_assert_int_gt(ttl, 0);
    ck_assert_int_le(ttl, 300);
    harness_sleep_ms(450);
    ck_assert_int_eq(rlock_is_locked(c, "leased"), 0);
    ck_assert_int_eq(rlock_unlock(c, "leased"), RLOCK_ELOCKLOST);
    /* reported once: the hold is gone now */
    ck_assert_int_eq(rlock_unlock(c, "leased"), RLOCK_ENOTOWNER);
    rlock_close(c);
}
END_TEST

/* rlock_multilock: every lock or none, each a plain lock of the calling
 * thread (another thread's multilock of an overlapping set times out
 * with none of its own held); rlock_multiunlock gives each back. */
START_TEST(multilock_takes_every_lock_or_none)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    const char *const mine[] = {"multi-b", "multi-a", "multi-b"};
    const char *const theirs[] = {"multi-c", "multi-a"};

    ck_assert_int_eq(rlock_multilock(c, mine, 3, 0, RLOCK_WATCHDOG), 1);
    ck_assert_int_eq(rlock_hold_count(c, "multi-a"), 1);
    ck_assert_int_eq(rlock_hold_count(c, "multi-b"), 1); /* taken once */
    ck_assert_int_eq(in_new_thread(c, OP_IS_HELD, "multi-a", 0, -1), 0);
    ck_assert_int_eq(in_new_thread(c, OP_TRYLOCK, "multi-c", 0, -1), 1);
    ck_assert_int_eq(rlock_multilock(c, theirs, 2, 100, RLOCK_WATCHDOG), 0);
    ck_assert_int_eq(rlock_is_held(c, "multi-c"), 0);
    ck_assert_int_eq(rlock_multiunlock(c, mine, 2), RLOCK_OK);
    ck_assert_int_eq(rlock_is_locked(c, "multi-a"), 0);
    ck_assert_int_eq(rlock_is_locked(c, "multi-b"), 0);
    ck_assert_int_eq(rlock_multiunlock(c, mine, 2), RLOCK_ENOTOWNER);
    ck_assert_int_eq(rlock_multilock(c, mine, 0, 0, RLOCK_WATCHDOG),
                     RLOCK_EINVAL);
    ck_assert_int_eq(rlock_multilock(c, (const char *const[]){"x", ""}, 2, 0,
                                     RLOCK_WATCHDOG),
                     RLOCK_EINVAL);
    rlock_close(c);
}
END_TEST

START_TEST(queries_report_the_state_of_a_lock)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    redisReply *r;
    long long ttl = 0;

    ck_assert_int_eq(rlock_pttl(c, "queried", &ttl), RLOCK_OK);
    ck_assert_int_eq(ttl, -2);
    ck_assert_int_eq(rlock_is_locked(c, "queried"), 0);
    ck_assert_int_eq(rlock_is_held(c, "queried"), 0);
    ck_assert_int_eq(rlock_hold_count(c, "queried"), 0);

    ck_assert_int_eq(rlock_lock(c, "queried", 5000), RLOCK_OK);
    ck_assert_int_eq(rlock_pttl(c, "queried", &ttl), RLOCK_OK);
    ck_assert_int_gt(ttl, 4000);
    ck_assert_int_le(ttl, 5000);
    ck_assert_int_eq(rlock_is_locked(c, "queried"), 1);
    ck_assert_int_eq(rlock_is_held(c, "queried"), 1);
    ck_assert_int_eq(rlock_hold_count(c, "queried"), 1);
    ck_assert_int_eq(in_new_thread(c, OP_IS_HELD, "queried", 0, -1), 0);
    ck_assert_int_eq(in_new_thread(c, OP_IS_LOCKED, "queried", 0, -1), 1);
    ck_assert_int_eq(rlock_unlock(c, "queried"), 1);

    ck_assert_int_eq(rlock_lock(c, "watched", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_pttl(c, "watched", &ttl), RLOCK_OK);
    ck_assert_int_gt(ttl, 0);
    ck_assert_int_le(ttl, HARNESS_WATCHDOG_MS);
    ck_assert_int_eq(rlock_unlock(c, "watched"), 1);

    /* a hash without a TTL, written behind rlockd's back, is not a lock */
    r = redisCommand(redis, "HSET no-ttl someone:1 1");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    ck_assert_int_eq(rlock_pttl(c, "no-ttl", &ttl), RLOCK_OK);
    ck_assert_int_eq(ttl, -2);
    ck_assert_int_eq(rlock_is_locked(c, "no-ttl"), 0);
    ck_assert_int_eq(rlock_lock(c, "no-ttl", RLOCK_WATCHDOG), RLOCK_EWRONGTYPE);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

/* ---- client-ids ------------------------------------------------------ */

START_TEST(custom_client_id_is_the_owner_in_redis)
{
    const rlock_options opts = {.client_id = "test-client.42"};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    redisContext *redis = harness_redis();
    char owner[96];
    redisReply *r;

    ck_assert_str_eq(rlock_client_id(c), "test-client.42");
    ck_assert_int_eq(rlock_lock(c, "owned", RLOCK_WATCHDOG), RLOCK_OK);
    snprintf(owner, sizeof owner, "test-client.42:%ld", syscall(SYS_gettid));
    r = redisCommand(redis, "HGETALL owned");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(r->element[0]->str, owner);
    ck_assert_str_eq(r->element[1]->str, "1");
    freeReplyObject(r);
    ck_assert_int_eq(rlock_unlock(c, "owned"), 1);
    redisFree(redis);
    rlock_close(c);
}
END_TEST

static bool is_uuid_v4(const char *id)
{
    if (strlen(id) != 36 || id[14] != '4' || !strchr("89ab", id[19]))
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? id[i] != '-' : !strchr("0123456789abcdef", id[i]))
            return false;
    }
    return true;
}

START_TEST(default_client_id_is_a_random_uuid_v4)
{
    rlock_client *a = connect_or_fail(harness_addr(), NULL);
    rlock_client *b = connect_or_fail(harness_addr(), NULL);

    ck_assert_msg(is_uuid_v4(rlock_client_id(a)), "not a UUID v4: %s",
                  rlock_client_id(a));
    ck_assert_msg(is_uuid_v4(rlock_client_id(b)), "not a UUID v4: %s",
                  rlock_client_id(b));
    ck_assert_str_ne(rlock_client_id(a), rlock_client_id(b));
    /* two clients: the lock of one is not the other's */
    ck_assert_int_eq(rlock_lock(a, "uuid", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_trylock(b, "uuid", 0, RLOCK_WATCHDOG), 0);
    ck_assert_int_eq(rlock_unlock(b, "uuid"), RLOCK_ENOTOWNER);
    ck_assert_int_eq(rlock_unlock(a, "uuid"), 1);
    rlock_close(a);
    rlock_close(b);
}
END_TEST

/* ---- connections ----------------------------------------------------- */

START_TEST(exited_threads_connections_close_when_a_new_thread_comes)
{
    const rlock_options no_heartbeat = {.heartbeat_ms = RLOCK_NO_HEARTBEAT};
    rlock_client *c = connect_or_fail(harness_addr(), &no_heartbeat);

    /* harness_info() counts its own connection */
    ck_assert_int_eq(harness_info("connected_clients"), 2);
    ck_assert_int_eq(in_new_thread(c, OP_IS_LOCKED, "x", 0, -1), 0);
    ck_assert_int_eq(harness_info("connected_clients"), 3);
    ck_assert_int_eq(in_new_thread(c, OP_IS_LOCKED, "x", 0, -1), 0);
    ck_assert_msg(harness_wait_info("connected_clients", 3),
                  "the exited thread's connection is still open: %lld",
                  harness_info("connected_clients"));
    rlock_close(c);
    ck_assert(harness_wait_info("connected_clients", 1));
}
END_TEST

START_TEST(unix_socket_address_works)
{
    rlock_client *local = connect_or_fail(harness_unix_addr(), NULL);
    rlock_client *tcp = connect_or_fail(harness_addr(), NULL);

    ck_assert_int_eq(rlock_lock(local, "by-unix", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_is_held(local, "by-unix"), 1);
    ck_assert_int_eq(rlock_is_locked(tcp, "by-unix"), 1);
    ck_assert_int_eq(in_new_thread(local, OP_IS_HELD, "by-unix", 0, -1), 0);
    ck_assert_int_eq(rlock_unlock(local, "by-unix"), 1);
    ck_assert_int_eq(rlock_is_locked(tcp, "by-unix"), 0);
    rlock_close(local);
    rlock_close(tcp);
}
END_TEST

Suite *locks_suite(void)
{
    Suite *s = suite_create("locks");
    TCase *tc = tcase_create("default daemon");
    TCase *unix_tc = tcase_create("unix socket");

    tcase_add_checked_fixture(tc, harness_start_default, harness_stop);
    tcase_set_timeout(tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(tc, threads_of_one_client_exclude_each_other);
    tcase_add_test(tc, holds_are_reentrant_within_a_thread_only);
    tcase_add_test(tc, trylock_gives_up_when_the_wait_runs_out);
    tcase_add_test(tc, trylock_gets_a_lock_released_during_the_wait);
    tcase_add_test(tc, blocked_lock_does_not_delay_other_threads);
    tcase_add_test(tc, waiting_calls_outlast_the_command_timeout);
    tcase_add_test(tc, lease_expiry_makes_unlock_report_lock_lost);
    tcase_add_test(tc, queries_report_the_state_of_a_lock);
    tcase_add_test(tc, multilock_takes_every_lock_or_none);
    tcase_add_test(tc, custom_client_id_is_the_owner_in_redis);
    tcase_add_test(tc, default_client_id_is_a_random_uuid_v4);
    tcase_add_test(tc,
                   exited_threads_connections_close_when_a_new_thread_comes);
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(unix_tc, harness_start_unix_socket, harness_stop);
    tcase_set_timeout(unix_tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(unix_tc, unix_socket_address_works);
    suite_add_tcase(s, unix_tc);
    return s;
}
