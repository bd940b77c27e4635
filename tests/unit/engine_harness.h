/*
 * engine_harness.h - the world a lock-engine unit test runs in: the real
 * engine over the fake backend and the fake clock, with the real config
 * defaults, fresh stats, and a record of every call and session.
 *
 * engine_setup() and engine_teardown() are the checked fixture, which
 * engine_suite_add puts on a test case. The teardown abandons the calls
 * still open, ends the sessions still joined, answers what is left
 * pending with NULL, and then checks that nothing outlived the test
 * (holds, waiters, locks, sessions, listeners) and that every call was
 * answered exactly once unless abandoned; so each test also proves it
 * leaks nothing, and runs clean with CK_FORK=no.
 *
 * Helpers fail the test (ck_assert) when what they expect is not so.
 */
#ifndef RLOCKD_TEST_ENGINE_HARNESS_H
#define RLOCKD_TEST_ENGINE_HARNESS_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "base/stats.h"
#include "engine/lock_engine.h"
#include "fake_backend.h"
#include "fake_clock.h"

/* The clock when each test starts. */
#define T0 1000000
/* The lease of a call that names one, and the watchdog's timeout. */
#define LEASE_MS 10000
#define WATCHDOG_MS 30000
#define RENEW_EVERY_MS (WATCHDOG_MS / 3)
#define WAIT_FOREVER (-1)
#define WATCHDOG_MODE (-1)

/* The scripts the RLock kind sends. */
#define ACQUIRE "rlock_acquire"
#define RELEASE "rlock_release"
#define FORCE_RELEASE "rlock_force_release"
#define RELEASE_OWNER "rlock_release_owner"
#define SETTLE "rlock_settle"
#define INSPECT "rlock_inspect"
#define OWNERS "rlock_owners"
#define RENEW "rlock_renew_many"
#define CHANNEL_OF_L "redisson_lock__channel:{L}"

/* One call the test started, and what it was told. */
struct test_call {
    struct lock_call *call; /* until answered or abandoned */
    unsigned done_count;
    bool abandoned;
    struct lock_result result; /* message and owners not kept */
    char first_owner[64];      /* RESULT_OWNERS: the first owner's field */
    int64_t first_count;       /* and its count */
    char text[64];             /* RESULT_TEXT's text */
    char error[1100];          /* RESULT_ERROR's text (cut) */
};

/* The config the engine runs with; a test may change it after setup. */
extern struct config engine_cfg;

void engine_setup(void);
void engine_teardown(void);
/* Adds tc to s, with engine_setup and engine_teardown as its fixture. */
void engine_suite_add(Suite *s, TCase *tc);

/* ---- sessions and calls -------------------------------------------------- */

/* A session of its own (no secret, no record in Redis). */
struct session *join(const char *id);
/* One more connection of s, as a join with its secret makes (the join
 * itself is the sessions tests'), without the record a secret brings. */
struct session *join_again(struct session *s);
void leave(struct session *s);

/* A CLIENTID join, which may wait for its record to be read. */
struct test_join {
    struct lock_join *join;
    bool done;
    struct session *session;
    int err;
};
/* Starts the join (resume: CLIENTID ... RESUME) and lets the engine ask
 * for the record. */
void join_start(struct test_join *j, const char *id, const char *secret,
                bool resume);
/* Expects it answered; a session it got is left at the teardown. */
void join_end(struct test_join *j);
/* A join whose record, if read, is empty: 0 with *out, or the error. */
int join_with(const char *id, const char *secret, struct session **out);

struct test_call *start(struct session *s, enum lock_request_op op,
                        const char *name, uint64_t thread_id, int64_t wait_ms,
                        int64_t lease_ms);
/* start for a lock of kind (start is the plain lock's, RLock). */
struct test_call *start_kind(struct session *s, const struct lock_kind *kind,
                             enum lock_request_op op, const char *name,
                             uint64_t thread_id, int64_t wait_ms,
                             int64_t lease_ms);
/* start of a request of any shape (a semaphore's amount, a permit id). */
struct test_call *start_request(struct session *s,
                                const struct lock_request *req);
struct test_call *acquire(struct session *s, const char *name,
                          uint64_t thread_id, int64_t wait_ms,
                          int64_t lease_ms);
/* UNLOCK, FORCEUNLOCK and the queries. */
struct test_call *request(struct session *s, enum lock_request_op op,
                          const char *name, uint64_t thread_id);
void abandon(struct test_call *c);

/* Acquires with no wait and grants it (the script answers nil). */
struct test_call *take(struct session *s, const char *name, uint64_t thread_id,
                       int64_t lease_ms);
/* UNLOCK, which Redis answers with reply. */
struct test_call *unlock_answered(struct session *s, const char *name,
                                  uint64_t thread_id,
                                  const struct backend_value *reply);
/* Acquires and has Redis refuse it with pttl: the call is left queued. */
struct test_call *queue(struct session *s, const char *name, uint64_t thread_id,
                        int64_t wait_ms, long long pttl);
/* Acquires a lock another owner holds through the engine: the call is
 * queued without asking Redis. */
struct test_call *queue_unasked(struct session *s, const char *name,
                                uint64_t thread_id, int64_t wait_ms);

void expect_open(const struct test_call *c);
void expect_result(const struct test_call *c, enum lock_result_type type);
void expect_error(const struct test_call *c, enum reply_error error);
void expect_integer(const struct test_call *c, int64_t value);

/* ---- Redis --------------------------------------------------------------- */

extern const struct backend_value nil_reply, one_reply;

/* The oldest pending eval of name for key (either NULL: any). */
struct fake_eval *expect_eval(const char *name, const char *key);
/* The pending acquire of lock name by owner field. */
struct fake_eval *expect_acquire_by(const char *name, const char *field);
/* The oldest pending eval of script (or command) name for key with arg
 * among its arguments: an owner's field, whatever its position in the
 * kind's call. */
struct fake_eval *expect_eval_with(const char *name, const char *key,
                                   const char *arg);
void expect_args(const struct fake_eval *e, int argc, ...);
void expect_nothing_pending(void);

void answer(const char *name, const char *key,
            const struct backend_value *reply);
void answer_nil(const char *name, const char *key);
void answer_integer(const char *name, const char *key, long long value);
/* A session record's read (session_store_read): its PTTL and its n
 * fields and values, flat. */
void answer_record_of(const char *key, long long pttl,
                      const struct backend_value *flat, size_t n);
/* A renewal's reply: one result (1 renewed, 0 gone) per hold. */
void answer_renewal(struct fake_eval *e, size_t count,
                    const long long *results);

/* ---- time ---------------------------------------------------------------- */

/* Moves the clock ms on, firing the engine's timer at each due time on the
 * way, as the daemon's loop would. */
void advance(uint64_t ms);

#endif
