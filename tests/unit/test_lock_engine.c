/*
 * test_lock_engine.c - the lock engine's calls over a fake backend and a
 * fake clock: what it asks Redis and when, what each caller is told, and
 * what a session, an abandoned call or a shutdown leaves behind.
 *
 * The watchdog has test_watchdog.c. The harness (engine_harness.h) checks
 * after every test that nothing leaked and that each call was answered
 * exactly once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/digest.h"
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

/* ---- sessions ----------------------------------------------------------- */

/* A live session is joined only with the secret it was started with. */
START_TEST(a_live_session_is_joined_only_with_its_secret)
{
    static const char right[] = "0123456789abcdef";
    static const char wrong[] = "0123456789abcdeF";
    struct session *first, *second, *none;

    ck_assert_int_eq(join_with("s", right, &first), 0);
    ck_assert_int_eq(join_with("s", NULL, &second), -EPERM);
    ck_assert_int_eq(join_with("s", wrong, &second), -EPERM);
    ck_assert_int_eq(join_with("s", "0123456789abcde", &second), -EPERM);
    ck_assert_int_eq(join_with("s", right, &second), 0);
    ck_assert_ptr_eq(first, second);
    ck_assert_uint_eq(first->connections, 2);
    ck_assert_int_eq(join_with("n", NULL, &none), 0);
    ck_assert_int_eq(join_with("n", NULL, &second), -EPERM);
    ck_assert_int_eq(join_with("n", "", &second), -EPERM);
    leave(first);
    leave(first);
    leave(none);
    /* ended: the id is free, with a new secret */
    ck_assert_int_eq(join_with("s", wrong, &first), 0);
}
END_TEST

START_TEST(session_end_under_release_frees_every_hold)
{
    struct session *a = join("a"), *b = join("b");

    take(a, "L", 1, LEASE_MS);
    take(a, "M", 2, WATCHDOG_MODE);
    queue_unasked(b, "L", 1, WAIT_FOREVER);
    leave(a);
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    ck_assert_uint_eq(stats.client_sessions, 1);
    ck_assert_uint_eq(stats.locks_released_on_disconnect, 2);
    ck_assert_uint_eq(fake_backend_pending(), 2);
    expect_args(expect_eval(RELEASE_OWNER, "M"), 5, "M",
                "redisson_lock__channel:{M}", "0", "a:2", "publish");
    expect_args(expect_eval(RELEASE_OWNER, "L"), 5, "L", CHANNEL_OF_L, "0",
                "a:1", "publish");
    /* freeing L wakes its waiter without waiting for the message */
    answer_integer(RELEASE_OWNER, "L", 1);
    expect_acquire_by("L", "b:1");
    answer_integer(RELEASE_OWNER, "M", 1);
    advance(WATCHDOG_MS);
    ck_assert_uint_eq(fake_backend_count(RENEW, NULL), 0);
}
END_TEST

START_TEST(session_end_under_expire_sends_nothing)
{
    struct session *a = join("a");

    engine_cfg.on_disconnect = ON_DISCONNECT_EXPIRE;
    take(a, "L", 1, LEASE_MS);
    take(a, "M", 2, WATCHDOG_MODE);
    leave(a);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    ck_assert_uint_eq(stats.locks_released_on_disconnect, 0);
    advance(WATCHDOG_MS);
    expect_nothing_pending();
}
END_TEST

START_TEST(a_session_ends_with_its_last_connection)
{
    struct session *first = join("a"), *second = join_again(first);

    ck_assert_ptr_eq(first, second);
    take(first, "L", 1, LEASE_MS);
    leave(first);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 1);
    leave(second);
    ck_assert_uint_eq(stats.held_locks, 0);
    expect_eval(RELEASE_OWNER, "L");
}
END_TEST

START_TEST(a_lost_hold_is_not_released_at_session_end)
{
    struct session *a = join("a"), *b = join("b");
    struct test_call *force;

    take(a, "L", 1, LEASE_MS);
    force = request(b, LOCK_REQUEST_FORCE_RELEASE, "L", 1);
    expect_args(expect_eval(FORCE_RELEASE, "L"), 4, "L", CHANNEL_OF_L, "0",
                "publish");
    answer_integer(FORCE_RELEASE, "L", 1);
    expect_integer(force, 1);
    ck_assert_uint_eq(stats.locks_lost, 1);
    leave(a);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

/* ---- session records and resuming ---------------------------------------- */

#define SECRET "0123456789abcdef"
#define RECORD_OF_S "rlockd_session:{s}"
#define PUT "rlockd_session_put"
#define FORGET "rlockd_session_forget"

static struct backend_value string_value(const char *s)
{
    return (struct backend_value){
        .type = VALUE_STRING, .str = s, .len = strlen(s)};
}

/* The hex SHA-256 of SECRET, as a record stores it. */
static const char *secret_hex(void)
{
    static char hex[2 * DIGEST_SIZE + 1];
    unsigned char digest[DIGEST_SIZE];

    digest_sha256(SECRET, strlen(SECRET), digest);
    for (size_t i = 0; i < DIGEST_SIZE; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return hex;
}

/* Answers the read of s's record with fields and values (a TTL). */
static void answer_record(const char *const *flat, size_t n)
{
    struct backend_value element[16];

    ck_assert_uint_le(n, 16);
    for (size_t i = 0; i < n; i++)
        element[i] = string_value(flat[i]);
    answer_record_of(RECORD_OF_S, n > 0 ? 60000 : -2, element, n);
}

/* Answers the inspect of lock name by s:<thread> with count. */
static void answer_count(const char *name, const char *field, long long count)
{
    const struct backend_value element[3] = {
        {.type = VALUE_INTEGER, .integer = count > 0},
        {.type = VALUE_INTEGER, .integer = count},
        {.type = VALUE_INTEGER, .integer = count > 0 ? 20000 : -2}};
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &fake_backend.evals) {
        struct fake_eval *e = list_entry(pos, struct fake_eval, link);

        if (strcmp(e->name, INSPECT) == 0 && strcmp(e->key, name) == 0 &&
            strcmp(e->argv[1], field) == 0) {
            fake_eval_answer(e, &(struct backend_value){.type = VALUE_ARRAY,
                                                        .elements = 3,
                                                        .element = element});
            return;
        }
    }
    ck_abort_msg("no inspect of %s by %s", name, field);
}

/* A granted hold of a recording session, its record writes answered. */
static void take_recorded(struct session *s, const char *name)
{
    struct test_call *c = acquire(s, name, 1, 0, LEASE_MS);

    answer(PUT, RECORD_OF_S, &one_reply);
    answer_nil(ACQUIRE, name);
    answer(PUT, RECORD_OF_S, &one_reply);
    expect_result(c, RESULT_GRANTED);
}

START_TEST(a_new_hold_is_named_pending_before_its_acquire_then_its_lease)
{
    struct session *s;
    struct fake_eval *put;

    ck_assert_int_eq(join_with("s", SECRET, &s), 0);
    acquire(s, "L", 1, 0, LEASE_MS);
    put = expect_eval(PUT, RECORD_OF_S);
    expect_args(put, 5, RECORD_OF_S, "10000", secret_hex(), "rlock:1:L",
                "pending");
    ck_assert_ptr_eq(list_first(&fake_backend.evals), &put->link);
    answer(PUT, RECORD_OF_S, &one_reply);
    answer_nil(ACQUIRE, "L");
    expect_args(expect_eval(PUT, RECORD_OF_S), 5, RECORD_OF_S, "10000",
                secret_hex(), "rlock:1:L", "10000");
    answer(PUT, RECORD_OF_S, &one_reply);
    take(s, "L", 1, LEASE_MS); /* reentrant: the record is not touched */
    expect_nothing_pending();
    unlock_answered(s, "L", 1, &(struct backend_value){.type = VALUE_INTEGER});
    expect_nothing_pending();
    unlock_answered(s, "L", 1, &one_reply);
    expect_args(expect_eval(FORGET, RECORD_OF_S), 2, RECORD_OF_S, "rlock:1:L");
}
END_TEST

/* Record and lock on two connections: the acquire waits for the write. */
static unsigned two_groups(const char *key, size_t len)
{
    return len > 0 && key[0] == 'r';
}

START_TEST(an_acquire_waits_for_pending_on_another_connection)
{
    struct session *s;
    struct test_call *c;

    fake_backend.group = two_groups;
    ck_assert_int_eq(join_with("s", SECRET, &s), 0);
    c = acquire(s, "L", 1, 0, LEASE_MS);
    ck_assert_uint_eq(fake_backend_pending(), 1);
    answer(PUT, RECORD_OF_S, &one_reply);
    answer_nil(ACQUIRE, "L");
    expect_result(c, RESULT_GRANTED);
}
END_TEST

START_TEST(a_refused_new_hold_is_forgotten_by_the_record)
{
    struct session *s;

    ck_assert_int_eq(join_with("s", SECRET, &s), 0);
    acquire(s, "L", 1, 0, LEASE_MS);
    answer(PUT, RECORD_OF_S, &one_reply);
    answer_integer(ACQUIRE, "L", 5000);
    expect_args(expect_eval(FORGET, RECORD_OF_S), 2, RECORD_OF_S, "rlock:1:L");
}
END_TEST

START_TEST(a_resumed_session_gets_its_holds_back_and_the_lost_ones_lost)
{
    const char *record[] = {"secret",    secret_hex(), "rlock:1:L", "watchdog",
                            "rlock:2:M", "pending",    "rlock:3:N", "5000",
                            "rlock:4:P", "pending"};
    struct test_join j;
    struct test_call *unlock;

    join_start(&j, "s", SECRET, false);
    ck_assert(!j.done);
    answer_record(record, 10);
    answer_count("L", "s:1", 2);
    answer_count("M", "s:2", 1); /* taken in the instant before a crash */
    answer_count("N", "s:3", 0); /* gone meanwhile */
    answer_count("P", "s:4", 0); /* never ran */
    join_end(&j);
    ck_assert_int_eq(j.err, 0);
    ck_assert_uint_eq(stats.sessions_resumed, 1);
    ck_assert_uint_eq(stats.held_locks, 3);
    ck_assert_uint_eq(stats.locks_lost, 2);
    expect_args(expect_eval(SETTLE, "M"), 6, "M", "redisson_lock__channel:{M}",
                "0", "s:2", "0", "publish");
    expect_args(expect_eval(FORGET, RECORD_OF_S), 2, RECORD_OF_S, "rlock:4:P");
    advance(0); /* the watchdog renews L at once */
    expect_eval(RENEW, "L");
    /* the counts are Redis's: L is released by its second UNLOCK */
    acquire(j.session, "L", 1, 0, LEASE_MS);
    expect_args(expect_eval(ACQUIRE, "L"), 4, "L", "30000", "s:1", "2");
    unlock = request(j.session, LOCK_REQUEST_RELEASE, "N", 3);
    answer_nil(RELEASE, "N");
    expect_error(unlock, REPLY_LOCKLOST);
}
END_TEST

START_TEST(a_record_is_resumed_only_with_its_secret)
{
    const char *record[] = {"secret", secret_hex(), "rlock:1:L", "watchdog"};
    struct test_join j;

    join_start(&j, "s", "another-secret-0123", false);
    answer_record(record, 4);
    join_end(&j);
    ck_assert_int_eq(j.err, -EPERM);
    join_start(&j, "s", NULL, false);
    answer_record(record, 4);
    join_end(&j);
    ck_assert_int_eq(j.err, -EPERM);
    ck_assert_uint_eq(stats.client_sessions, 0);
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

/* A record rlockd did not write (a lock's hash, no TTL, a secret or a
 * field of the wrong form, a string) is -EBADMSG, never -EPERM, read
 * once and not again, and counted. */
START_TEST(a_record_rlockd_did_not_write_is_refused_as_foreign_not_noperm)
{
    const char *lock[] = {"other-client:1", "1"};
    const char *short_secret[] = {"secret", "abc", "rlock:1:L", "watchdog"};
    const char *bad_field[] = {"secret", secret_hex(), "rlock:x:L", "watchdog"};
    const char *good[] = {"secret", secret_hex(), "rlock:1:L", "watchdog"};
    const char *const *records[] = {lock, short_secret, bad_field, good};
    const size_t sizes[] = {2, 4, 4, 4};
    struct backend_value element[4];
    struct test_join j;

    for (size_t r = 0; r < 4; r++) {
        for (size_t i = 0; i < sizes[r]; i++)
            element[i] = string_value(records[r][i]);
        join_start(&j, "s", SECRET, false);
        /* the good record without a TTL is not rlockd's either */
        answer_record_of(RECORD_OF_S, r < 3 ? 60000 : -1, element, sizes[r]);
        join_end(&j);
        ck_assert_int_eq(j.err, -EBADMSG);
    }
    join_start(&j, "s", SECRET, false);
    answer("rlockd_session_read", RECORD_OF_S,
           &(struct backend_value){.type = VALUE_ERROR,
                                   .str = "WRONGTYPE a string, not a hash"});
    join_end(&j);
    ck_assert_int_eq(j.err, -EBADMSG);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.foreign_records, 5);
    ck_assert_uint_eq(stats.client_sessions, 0);
}
END_TEST

/* RESUME: no record is -ENOENT, and no session is started. */
START_TEST(a_resume_without_a_record_is_enoent)
{
    struct test_join j;

    join_start(&j, "s", SECRET, true);
    answer_record(NULL, 0);
    join_end(&j);
    ck_assert_int_eq(j.err, -ENOENT);
    ck_assert_uint_eq(stats.client_sessions, 0);
}
END_TEST

/* A join reads the record again while Redis is away, and gives up after
 * retry_timeout_ms; one that gets it in time goes on. */
START_TEST(a_join_while_redis_cannot_be_read_waits_up_to_retry_timeout)
{
    struct test_join j;

    fake_backend.ready = false;
    fake_backend.eval_error = -ENOTCONN;
    join_start(&j, "s", SECRET, false);
    advance((uint64_t)engine_cfg.retry_timeout_ms - 200);
    ck_assert(!j.done);
    advance(200);
    join_end(&j);
    ck_assert_int_eq(j.err, -EAGAIN);

    join_start(&j, "t", SECRET, false);
    advance(1000);
    fake_backend.eval_error = 0;
    fake_backend.ready = true;
    advance(100);
    answer_record_of("rlockd_session:{t}", -2, NULL, 0);
    join_end(&j);
    ck_assert_int_eq(j.err, 0);
}
END_TEST

START_TEST(shutdown_under_keep_leaves_every_lock_and_record)
{
    struct session *s;

    ck_assert_int_eq(join_with("s", SECRET, &s), 0);
    take_recorded(s, "L");
    lock_engine_shutdown();
    leave(s);
    expect_nothing_pending();
    ck_assert_uint_eq(stats.held_locks, 0);
}
END_TEST

START_TEST(shutdown_under_release_releases_and_deletes_the_record)
{
    struct session *s;

    engine_cfg.on_shutdown = ON_SHUTDOWN_RELEASE;
    ck_assert_int_eq(join_with("s", SECRET, &s), 0);
    take_recorded(s, "L");
    lock_engine_shutdown();
    leave(s);
    expect_eval(RELEASE_OWNER, "L");
    expect_eval("DEL", RECORD_OF_S);
}
END_TEST

/* ---- shutdown ----------------------------------------------------------- */

START_TEST(shutdown_answers_every_waiter_and_sends_no_acquire)
{
    struct session *b = join("b"), *c = join("c"), *d = join("d");
    struct test_call *w[3];

    w[0] = queue(b, "L", 1, WAIT_FOREVER, 5000);
    w[1] = queue(c, "L", 1, 60000, 5000);
    w[2] = queue(d, "M", 1, WAIT_FOREVER, 5000);
    fake_backend_publish("redisson_lock__channel:{M}", "0"); /* d asks */
    lock_engine_shutdown();
    for (int i = 0; i < 3; i++)
        expect_error(w[i], REPLY_SHUTDOWN);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
    /* d's acquire lands after it was answered: undone, nothing more */
    answer_nil(ACQUIRE, "M");
    ck_assert_uint_eq(fake_backend_count(ACQUIRE, NULL), 0);
    expect_eval(SETTLE, "M");
    advance(60000);
    ck_assert_uint_eq(fake_backend_count(ACQUIRE, NULL), 0);
}
END_TEST

/* A first attempt still in flight at shutdown is not a waiter yet; when
 * Redis refuses it, it must not start waiting. */
START_TEST(an_attempt_refused_after_shutdown_does_not_wait)
{
    struct session *b = join("b");
    struct test_call *c = acquire(b, "L", 1, WAIT_FOREVER, LEASE_MS);

    lock_engine_shutdown();
    answer_integer(ACQUIRE, "L", 5000);
    expect_error(c, REPLY_SHUTDOWN);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
    advance(5000);
    expect_nothing_pending();
}
END_TEST

Suite *lock_engine_suite(void)
{
    Suite *s = suite_create("lock_engine");
    TCase *acquiring = tcase_create("acquire");
    TCase *waiting = tcase_create("waiting");
    TCase *abandoning = tcase_create("abandon");
    TCase *limits = tcase_create("limits");
    TCase *sessions = tcase_create("sessions");
    TCase *shutdown = tcase_create("shutdown");

    tcase_add_test(acquiring, init_adds_every_script_of_the_kind);
    tcase_add_test(acquiring,
                   acquire_sends_name_lease_and_owner_and_nil_grants);
    tcase_add_test(acquiring,
                   watchdog_mode_acquire_asks_for_the_watchdog_timeout);
    tcase_add_test(acquiring,
                   reentrant_acquire_is_one_hold_released_count_by_count);
    tcase_add_test(acquiring, another_thread_of_the_session_is_another_owner);
    tcase_add_test(acquiring, unlock_of_a_lock_never_held_is_notowner);
    tcase_add_test(acquiring, no_reply_sends_acquire_unlock_and_query_again);
    tcase_add_test(acquiring,
                   no_reply_within_retry_timeout_is_unavailable_and_settled);
    tcase_add_test(acquiring,
                   a_key_not_ready_waits_for_redis_up_to_retry_timeout);
    tcase_add_test(acquiring, retry_timeout_0_is_unavailable_at_once);
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
    tcase_add_test(acquiring, owners_reads_every_owner_and_the_pttl);

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

    tcase_add_test(limits,
                   max_held_locks_refuses_a_new_hold_but_not_a_reentrant_one);
    tcase_add_test(limits, max_waiters_refuses_one_more_waiter);
    tcase_add_test(limits, per_client_limits_refuse_only_that_client_id);
    tcase_add_test(sessions, a_live_session_is_joined_only_with_its_secret);

    tcase_add_test(sessions, session_end_under_release_frees_every_hold);
    tcase_add_test(sessions, session_end_under_expire_sends_nothing);
    tcase_add_test(sessions, a_session_ends_with_its_last_connection);
    tcase_add_test(sessions, a_lost_hold_is_not_released_at_session_end);
    tcase_add_test(
        sessions,
        a_new_hold_is_named_pending_before_its_acquire_then_its_lease);
    tcase_add_test(sessions,
                   an_acquire_waits_for_pending_on_another_connection);
    tcase_add_test(sessions, a_refused_new_hold_is_forgotten_by_the_record);
    tcase_add_test(
        sessions, a_resumed_session_gets_its_holds_back_and_the_lost_ones_lost);
    tcase_add_test(sessions, a_record_is_resumed_only_with_its_secret);
    tcase_add_test(sessions, a_resume_without_a_record_is_enoent);
    tcase_add_test(
        sessions,
        a_record_rlockd_did_not_write_is_refused_as_foreign_not_noperm);
    tcase_add_test(sessions,
                   a_join_while_redis_cannot_be_read_waits_up_to_retry_timeout);
    tcase_add_test(shutdown, shutdown_under_keep_leaves_every_lock_and_record);
    tcase_add_test(shutdown,
                   shutdown_under_release_releases_and_deletes_the_record);

    tcase_add_test(shutdown,
                   shutdown_answers_every_waiter_and_sends_no_acquire);
    tcase_add_test(shutdown, an_attempt_refused_after_shutdown_does_not_wait);

    engine_suite_add(s, acquiring);
    engine_suite_add(s, waiting);
    engine_suite_add(s, abandoning);
    engine_suite_add(s, limits);
    engine_suite_add(s, sessions);
    engine_suite_add(s, shutdown);
    return s;
}
