/*
 * test_acquire.c - the lock engine's acquire, release and queries over a
 * fake backend and a fake clock: what it asks Redis, what each caller is
 * told, reentrancy, lost holds and the hold and waiter limits.
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

/* ---- acquire and release ----------------------------------------------- */

START_TEST(init_adds_every_script_of_the_kind)
{
    ck_assert(fake_backend_has_script(ACQUIRE));
    ck_assert(fake_backend_has_script(RELEASE));
    ck_assert(fake_backend_has_script(FORCE_RELEASE));
    ck_assert(fake_backend_has_script(RELEASE_OWNER));
    ck_assert(fake_backend_has_script(RENEW));
    expect_nothing_pending();
}
END_TEST

START_TEST(acquire_sends_name_lease_and_owner_and_nil_grants)
{
    struct session *a = join("client-a");
    struct test_call *c = acquire(a, "L", 7, 0, LEASE_MS);
    struct fake_eval *e = expect_eval(ACQUIRE, "L");

    expect_open(c);
    ck_assert_ptr_nonnull(e->script);
    ck_assert_int_eq(e->nkeys, 1);
    expect_args(e, 4, "L", "10000", "client-a:7", "0");
    ck_assert_uint_eq(stats.lock_attempts, 1);
    fake_eval_answer(e, &nil_reply);
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.locks_acquired, 1);
    ck_assert_uint_eq(stats.watchdog_locks, 0); /* a lease was given */
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
    expect_nothing_pending();
}
END_TEST

START_TEST(watchdog_mode_acquire_asks_for_the_watchdog_timeout)
{
    struct session *a = join("a");
    struct test_call *c = acquire(a, "L", 1, 0, WATCHDOG_MODE);

    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "30000", "a:1", "0");
    answer_nil(ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
    ck_assert_uint_eq(stats.watchdog_locks, 1);
}
END_TEST

START_TEST(reentrant_acquire_is_one_hold_released_count_by_count)
{
    struct session *a = join("a");
    struct test_call *unlock;

    take(a, "L", 1, LEASE_MS);
    take(a, "L", 1, LEASE_MS);
    ck_assert_uint_eq(stats.held_locks, 1);
    ck_assert_uint_eq(stats.locks_acquired, 2);

    unlock = request(a, LOCK_REQUEST_RELEASE, "L", 1);
    expect_args(expect_eval(RELEASE, "L"), 7, "L", CHANNEL_OF_L, "0", "10000",
                "a:1", "2", "publish");
    answer_integer(RELEASE, "L", 0); /* decremented: still held */
    expect_integer(unlock, 0);
    ck_assert_uint_eq(stats.held_locks, 1);

    expect_integer(unlock_answered(a, "L", 1, &one_reply), 1);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.locks_released, 1);
}
END_TEST

START_TEST(another_thread_of_the_session_is_another_owner)
{
    struct session *a = join("a");
    struct test_call *other;

    take(a, "L", 1, LEASE_MS);
    other = acquire(a, "L", 2, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:2", "0");
    answer_integer(ACQUIRE, "L", 9000);
    expect_result(other, RESULT_NOT_GRANTED);
    ck_assert_uint_eq(stats.held_locks, 1);
}
END_TEST

START_TEST(unlock_of_a_lock_never_held_is_notowner)
{
    struct session *a = join("a");

    expect_error(unlock_answered(a, "L", 1, &nil_reply), REPLY_NOTOWNER);
    ck_assert_uint_eq(stats.locks_lost, 0);
}
END_TEST

START_TEST(a_reentrant_acquire_sends_the_count_it_knows)
{
    struct session *a = join("a");

    take(a, "L", 1, LEASE_MS);
    take(a, "L", 1, LEASE_MS);
    acquire(a, "L", 1, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "2");
    answer_nil(ACQUIRE, "L");
    request(a, LOCK_REQUEST_RELEASE, "L", 1);
    answer_integer(RELEASE, "L", 0); /* 3 -> 2 */
    acquire(a, "L", 1, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "2");
    answer_nil(ACQUIRE, "L");
}
END_TEST

/* An acquire by an owner whose hold was lost tells it so, and sends
 * nothing; the next one is a new hold (a stale field is taken over). */
START_TEST(an_acquire_after_the_hold_was_lost_sends_a_new_hold)
{
    struct session *a = join("a");

    take(a, "L", 1, LEASE_MS);
    take(a, "L", 1, LEASE_MS);
    request(a, LOCK_REQUEST_FORCE_RELEASE, "L", 0);
    answer_integer(FORCE_RELEASE, "L", 1); /* the hold is lost, still known */
    ck_assert_uint_eq(stats.locks_lost, 1);
    expect_error(acquire(a, "L", 1, 0, LEASE_MS), REPLY_LOCKLOST);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 0);
    acquire(a, "L", 1, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "10000", "a:1", "0");
    answer_nil(ACQUIRE, "L");
}
END_TEST

/* What the loss listener was last told. */
static struct {
    unsigned count;
    char client_id[32], name[32], owner[48], reason[64];
} told;

static void record_loss(const struct lock_loss *loss)
{
    told.count++;
    snprintf(told.client_id, sizeof(told.client_id), "%.*s",
             (int)loss->client_id_len, loss->client_id);
    snprintf(told.name, sizeof(told.name), "%.*s", (int)loss->name_len,
             loss->name);
    snprintf(told.owner, sizeof(told.owner), "%.*s", (int)loss->owner_len,
             loss->owner);
    snprintf(told.reason, sizeof(told.reason), "%s", loss->reason);
}

/* A leased hold is lost when its lease runs out (Redis has expired it,
 * and sends no word of it): the listener is told then, with the owner
 * and why, and the owner's UNLOCK is -LOCKLOST without asking Redis. A
 * reentrant acquire starts the lease again. */
START_TEST(a_leased_hold_is_lost_when_its_lease_runs_out)
{
    struct session *a = join("a");

    memset(&told, 0, sizeof(told));
    lock_engine_on_loss(record_loss);
    take(a, "L", 1, LEASE_MS);
    advance(LEASE_MS / 2);
    take(a, "L", 1, LEASE_MS);
    advance(LEASE_MS - 1);
    ck_assert_uint_eq(stats.locks_lost, 0);
    advance(1);
    ck_assert_uint_eq(stats.locks_lost, 1);
    ck_assert_uint_eq(told.count, 1);
    ck_assert_str_eq(told.client_id, "a");
    ck_assert_str_eq(told.name, "L");
    ck_assert_str_eq(told.owner, "a:1");
    ck_assert_str_eq(told.reason, "its lease ran out");
    expect_error(unlock_answered(a, "L", 1, &nil_reply), REPLY_LOCKLOST);
    lock_engine_on_loss(NULL);
}
END_TEST

START_TEST(an_error_reply_is_an_error)
{
    struct session *a = join("a");
    struct test_call *c = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);
    struct backend_value err = {
        .type = VALUE_ERROR, .str = "ERR boom", .len = 8};

    answer(ACQUIRE, "L", &err);
    expect_error(c, REPLY_ERR);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.waiting_clients, 0);
}
END_TEST

START_TEST(trylock_without_wait_refused_is_not_granted_and_not_queued)
{
    struct session *a = join("a");
    struct test_call *c = acquire(a, "L", 1, 0, LEASE_MS);

    answer_integer(ACQUIRE, "L", 5000);
    expect_result(c, RESULT_NOT_GRANTED);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
}
END_TEST

/* Starts a query on L by thread 5, checks that it sends the inspect
 * script for L with the owner's field, and answers Redis's {locked,
 * count, pttl} as the number expected. */
static void expect_query(struct session *s, enum lock_request_op op,
                         int64_t locked, int64_t count, int64_t pttl,
                         int64_t expected)
{
    struct test_call *c = request(s, op, "L", 5);
    struct fake_eval *e = expect_eval(INSPECT, "L");
    const struct backend_value element[3] = {
        {.type = VALUE_INTEGER, .integer = locked},
        {.type = VALUE_INTEGER, .integer = count},
        {.type = VALUE_INTEGER, .integer = pttl}};
    const struct backend_value reply = {
        .type = VALUE_ARRAY, .elements = 3, .element = element};

    ck_assert_int_eq(e->nkeys, 1);
    expect_args(e, 2, "L", "a:5");
    fake_eval_answer(e, &reply);
    expect_integer(c, expected);
}

START_TEST(queries_read_their_element_of_the_inspect_reply)
{
    struct session *a = join("a");

    expect_query(a, LOCK_REQUEST_IS_LOCKED, 1, 0, 4200, 1);
    expect_query(a, LOCK_REQUEST_IS_LOCKED, 0, 0, -2, 0);
    expect_query(a, LOCK_REQUEST_PTTL, 1, 3, 4200, 4200);
    expect_query(a, LOCK_REQUEST_PTTL, 0, 0, -2, -2);
    take(a, "L", 5, LEASE_MS); /* its own hold is asked of Redis */
    expect_query(a, LOCK_REQUEST_IS_HELD, 1, 0, 4200, 0);
    expect_query(a, LOCK_REQUEST_IS_HELD, 1, 3, 4200, 1);
    expect_query(a, LOCK_REQUEST_HOLD_COUNT, 1, 3, 4200, 3);
    expect_query(a, LOCK_REQUEST_HOLD_COUNT, 0, 0, -2, 0);
}
END_TEST

/* OWNERS reads {pttl, kind, field, count...} whoever holds the lock, and
 * a malformed pair is a bad reply, not an owner. */
START_TEST(owners_reads_every_owner_and_the_pttl)
{
    struct session *a = join("a");
    struct test_call *c = request(a, LOCK_REQUEST_OWNERS, "L", 0);
    const struct backend_value held[4] = {
        {.type = VALUE_INTEGER, .integer = 4200},
        {.type = VALUE_STRING, .str = "lock", .len = 4},
        {.type = VALUE_STRING, .str = "java-uuid:7", .len = 11},
        {.type = VALUE_INTEGER, .integer = 2}};
    const struct backend_value bad[3] = {
        {.type = VALUE_INTEGER, .integer = 4200},
        {.type = VALUE_STRING, .str = "lock", .len = 4},
        {.type = VALUE_STRING, .str = "x:1", .len = 3}};
    const struct backend_value none[2] = {
        {.type = VALUE_INTEGER, .integer = -2},
        {.type = VALUE_STRING, .str = "none", .len = 4}};

    expect_args(expect_eval(OWNERS, "L"), 1, "L");
    answer(OWNERS, "L",
           &(struct backend_value){
               .type = VALUE_ARRAY, .elements = 4, .element = held});
    ck_assert_int_eq(c->result.type, RESULT_OWNERS);
    ck_assert_int_eq(c->result.integer, 4200);
    ck_assert_uint_eq(c->result.owner_count, 1);
    ck_assert_str_eq(c->first_owner, "java-uuid:7");
    ck_assert_int_eq(c->first_count, 2);
    c = request(a, LOCK_REQUEST_OWNERS, "L", 0);
    answer(OWNERS, "L",
           &(struct backend_value){
               .type = VALUE_ARRAY, .elements = 2, .element = none});
    ck_assert_int_eq(c->result.type, RESULT_OWNERS);
    ck_assert_int_eq(c->result.integer, -2);
    ck_assert_uint_eq(c->result.owner_count, 0);
    c = request(a, LOCK_REQUEST_OWNERS, "L", 0);
    answer(OWNERS, "L",
           &(struct backend_value){
               .type = VALUE_ARRAY, .elements = 3, .element = bad});
    ck_assert_int_eq(c->result.type, RESULT_ERROR);
}
END_TEST

/* A session without a hold holds nothing, whatever field Redis has left
 * under its owner's name: nothing to re-enter, nothing to ask. */
START_TEST(is_held_and_hold_count_of_no_hold_are_0_without_asking)
{
    struct session *a = join("a");

    expect_integer(request(a, LOCK_REQUEST_IS_HELD, "L", 1), 0);
    expect_integer(request(a, LOCK_REQUEST_HOLD_COUNT, "L", 1), 0);
    expect_nothing_pending();
}
END_TEST

/* A script's guard refuses a key that is not a lock: every write answers
 * WRONGTYPE, and nothing is held, queued or listened for. */
START_TEST(a_key_that_is_not_a_lock_is_wrongtype)
{
    struct session *a = join("a");
    struct backend_value err = {
        .type = VALUE_ERROR,
        .str = "WRONGTYPE the key holds a value that is not a lock",
        .len = 50};
    struct test_call *lock = acquire(a, "L", 1, WAIT_FOREVER, LEASE_MS);
    struct test_call *unlock = request(a, LOCK_REQUEST_RELEASE, "L", 1);
    struct test_call *force = request(a, LOCK_REQUEST_FORCE_RELEASE, "L", 1);

    answer(ACQUIRE, "L", &err);
    answer(RELEASE, "L", &err);
    answer(FORCE_RELEASE, "L", &err);
    expect_error(lock, REPLY_WRONGTYPE);
    expect_error(unlock, REPLY_WRONGTYPE);
    expect_error(force, REPLY_WRONGTYPE);
    ck_assert_uint_eq(stats.wrong_type_refusals, 3);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
    expect_nothing_pending();
}
END_TEST

/* ---- limits ------------------------------------------------------------- */

START_TEST(max_held_locks_refuses_a_new_hold_but_not_a_reentrant_one)
{
    struct session *a = join("a");

    engine_cfg.max_held_locks = 1;
    take(a, "L", 1, LEASE_MS);
    expect_error(acquire(a, "M", 1, WAIT_FOREVER, LEASE_MS), REPLY_LIMIT);
    expect_error(acquire(a, "L", 2, WAIT_FOREVER, LEASE_MS), REPLY_LIMIT);
    expect_nothing_pending();
    take(a, "L", 1, LEASE_MS);
    ck_assert_uint_eq(stats.held_locks, 1);
}
END_TEST

START_TEST(max_waiters_refuses_one_more_waiter)
{
    struct session *b = join("b"), *c = join("c");
    struct test_call *late;

    engine_cfg.max_waiters = 1;
    queue(b, "L", 1, WAIT_FOREVER, 5000);
    late = acquire(c, "M", 1, WAIT_FOREVER, LEASE_MS);
    answer_integer(ACQUIRE, "M", 5000);
    expect_error(late, REPLY_LIMIT);
    ck_assert_uint_eq(stats.waiting_clients, 1);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 1);
}
END_TEST

/* One client-id over its own limits is refused; another is still served. */
START_TEST(per_client_limits_refuse_only_that_client_id)
{
    struct session *a = join("a"), *a2 = join_again(a), *b = join("b");
    struct test_call *late;

    engine_cfg.max_held_locks_per_client = 1;
    engine_cfg.max_waiters_per_client = 1;
    take(a, "L", 1, LEASE_MS);
    expect_error(acquire(a2, "M", 1, WAIT_FOREVER, LEASE_MS), REPLY_LIMIT);
    take(a, "L", 1, LEASE_MS); /* reentrant: no new hold */
    take(b, "M", 1, LEASE_MS);
    ck_assert_uint_eq(stats.held_locks, 2);

    engine_cfg.max_held_locks_per_client = 10;
    queue_unasked(a, "M", 2, WAIT_FOREVER);
    late = acquire(a2, "M", 3, WAIT_FOREVER, LEASE_MS);
    expect_error(late, REPLY_LIMIT);
    queue_unasked(b, "L", 2, WAIT_FOREVER);
    ck_assert_uint_eq(stats.waiting_clients, 2);
    ck_assert_uint_eq(a->waiting_count, 1);
    ck_assert_uint_eq(b->waiting_count, 1);
}
END_TEST

Suite *acquire_suite(void)
{
    Suite *s = suite_create("acquire");
    TCase *acquiring = tcase_create("acquire");
    TCase *limits = tcase_create("limits");

    tcase_add_test(acquiring, init_adds_every_script_of_the_kind);
    tcase_add_test(acquiring,
                   acquire_sends_name_lease_and_owner_and_nil_grants);
    tcase_add_test(acquiring,
                   watchdog_mode_acquire_asks_for_the_watchdog_timeout);
    tcase_add_test(acquiring,
                   reentrant_acquire_is_one_hold_released_count_by_count);
    tcase_add_test(acquiring, another_thread_of_the_session_is_another_owner);
    tcase_add_test(acquiring, unlock_of_a_lock_never_held_is_notowner);
    tcase_add_test(acquiring, an_error_reply_is_an_error);
    tcase_add_test(acquiring,
                   trylock_without_wait_refused_is_not_granted_and_not_queued);
    tcase_add_test(acquiring, queries_read_their_element_of_the_inspect_reply);
    tcase_add_test(acquiring,
                   is_held_and_hold_count_of_no_hold_are_0_without_asking);
    tcase_add_test(acquiring, a_key_that_is_not_a_lock_is_wrongtype);
    tcase_add_test(acquiring, a_reentrant_acquire_sends_the_count_it_knows);
    tcase_add_test(acquiring,
                   an_acquire_after_the_hold_was_lost_sends_a_new_hold);
    tcase_add_test(acquiring, a_leased_hold_is_lost_when_its_lease_runs_out);
    tcase_add_test(acquiring, owners_reads_every_owner_and_the_pttl);

    tcase_add_test(limits,
                   max_held_locks_refuses_a_new_hold_but_not_a_reentrant_one);
    tcase_add_test(limits, max_waiters_refuses_one_more_waiter);
    tcase_add_test(limits, per_client_limits_refuse_only_that_client_id);

    engine_suite_add(s, acquiring);
    engine_suite_add(s, limits);
    return s;
}
