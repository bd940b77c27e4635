/*
 * test_sessions.c - sessions over the fake backend: join, end, the
 * session record (pending, resume, secret, foreign records) and what a
 * shutdown answers and leaves behind.
 *
 * The harness (engine_harness.h) checks after every test that nothing
 * leaked and that each call was answered exactly once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/digest.h"
#include "engine/session.h"
#include "engine_harness.h"
#include "suites.h"

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

Suite *sessions_suite(void)
{
    Suite *s = suite_create("sessions");
    TCase *sessions = tcase_create("sessions");
    TCase *shutdown = tcase_create("shutdown");

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

    engine_suite_add(s, sessions);
    engine_suite_add(s, shutdown);
    return s;
}
