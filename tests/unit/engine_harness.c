/*
 * engine_harness.c - per-test engine over the fakes, and the record of
 * calls and sessions that the teardown checks.
 */
#include "engine_harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/session.h"

#include "base/log.h"

#define MAX_CALLS 512
#define MAX_SESSIONS 16
#define MAX_RENEWAL_HOLDS 16
/* Answers the teardown gives before it calls the engine stuck. */
#define MAX_DRAIN 10000

struct config engine_cfg;

static struct {
    struct test_call calls[MAX_CALLS];
    size_t call_count;
    struct session *sessions[MAX_SESSIONS]; /* one entry per join */
    size_t session_count;
} world;

const struct backend_value nil_reply = {.type = VALUE_NIL};
const struct backend_value one_reply = {.type = VALUE_INTEGER, .integer = 1};

static struct backend_value integer_reply(long long value)
{
    return (struct backend_value){.type = VALUE_INTEGER, .integer = value};
}

void engine_setup(void)
{
    memset(&stats, 0, sizeof(stats));
    memset(&world, 0, sizeof(world));
    config_set_defaults(&engine_cfg);
    engine_cfg.watchdog_timeout_ms = WATCHDOG_MS;
    /* The tests provoke lost locks and failed releases on purpose. */
    log_set_level(LOG_LEVEL_ERROR);
    fake_backend_init();
    fake_clock_init(T0);
    ck_assert_int_eq(
        lock_engine_init(&engine_cfg, &fake_backend_ops, &fake_engine_clock),
        0);
}

static void expect_nothing_left(void)
{
    ck_assert_uint_eq(stats.held_locks, 0);
    ck_assert_uint_eq(stats.watchdog_locks, 0);
    ck_assert_uint_eq(stats.waiting_clients, 0);
    ck_assert_uint_eq(stats.lock_entries, 0);
    ck_assert_uint_eq(stats.lock_bytes, 0);
    ck_assert_uint_eq(stats.lock_string_bytes, 0);
    ck_assert_uint_eq(stats.lock_wait_bytes, 0);
    ck_assert_uint_eq(stats.hold_bytes, 0);
    ck_assert_uint_eq(stats.hold_string_bytes, 0);
    ck_assert_uint_eq(stats.client_sessions, 0);
    ck_assert_uint_eq(fake_backend_listeners(NULL), 0);
    ck_assert_uint_eq(fake_backend.misuse, 0);
}

/* The calls Redis's return sends for what the teardown left unanswered:
 * each kind's settle, and a fair waiter's leave of the queue in Redis. */
static struct fake_eval *find_catch_up_call(void)
{
    static const char *const names[] = {
        SETTLE,       "fair_settle",      "rw_read_set",      "rw_write_set",
        "fair_leave", "semaphore_settle", "expirable_settle", "DEL",
    };
    struct fake_eval *e = NULL;

    for (size_t i = 0; e == NULL && i < sizeof(names) / sizeof(*names); i++)
        e = fake_backend_find(names[i], NULL);
    return e;
}

void engine_teardown(void)
{
    struct fake_eval *e;
    int answered = 0;

    for (size_t i = 0; i < world.call_count; i++)
        if (world.calls[i].call != NULL)
            abandon(&world.calls[i]);
    while (world.session_count > 0)
        lock_engine_leave(world.sessions[--world.session_count]);
    while ((e = fake_backend_find(NULL, NULL)) != NULL) {
        ck_assert_int_lt(answered++, MAX_DRAIN);
        fake_eval_answer(e, NULL);
    }
    /* Redis answers again: acquires whose replies were lost are settled
     * (and found already gone), fair waiters leave the queue. */
    fake_backend.ready = true;
    lock_engine_backend_ready();
    while ((e = find_catch_up_call()) != NULL) {
        ck_assert_int_lt(answered++, MAX_DRAIN);
        fake_eval_answer(e, &(struct backend_value){.type = VALUE_INTEGER});
    }
    expect_nothing_pending();
    for (size_t i = 0; i < world.call_count; i++)
        ck_assert_uint_eq(world.calls[i].done_count,
                          world.calls[i].abandoned ? 0 : 1);
    expect_nothing_left();
    lock_engine_free();
    fake_backend_free();
    log_set_level(LOG_LEVEL_INFO);
}

void engine_suite_add(Suite *s, TCase *tc)
{
    tcase_add_checked_fixture(tc, engine_setup, engine_teardown);
    suite_add_tcase(s, tc);
}

/* ---- sessions and calls -------------------------------------------------- */

static void remember(struct session *s)
{
    ck_assert_uint_lt(world.session_count, MAX_SESSIONS);
    world.sessions[world.session_count++] = s;
}

struct session *join(const char *id)
{
    struct session *s;

    ck_assert_int_eq(lock_engine_join_new(id, strlen(id), &s), 0);
    remember(s);
    return s;
}

struct session *join_again(struct session *s)
{
    s->connections++;
    remember(s);
    return s;
}

static void on_joined(void *ctx, struct session *s, int err)
{
    struct test_join *j = ctx;

    ck_assert_msg(!j->done, "a join answered twice");
    j->done = true;
    j->session = s;
    j->err = err;
}

void join_start(struct test_join *j, const char *id, const char *secret,
                bool resume)
{
    memset(j, 0, sizeof(*j));
    j->join =
        lock_engine_join(id, strlen(id), secret, secret ? strlen(secret) : 0,
                         resume, on_joined, j);
    advance(0); /* the record is read from the engine's timer */
}

void join_end(struct test_join *j)
{
    ck_assert_msg(j->done, "the join is not answered");
    if (j->session != NULL)
        remember(j->session);
}

int join_with(const char *id, const char *secret, struct session **out)
{
    struct test_join j;
    char key[128];

    join_start(&j, id, secret, false);
    if (!j.done) {
        snprintf(key, sizeof(key), "rlockd_session:{%s}", id);
        answer_record_of(key, -2, NULL, 0);
    }
    join_end(&j);
    *out = j.session;
    return j.err;
}

void leave(struct session *s)
{
    for (size_t i = world.session_count; i-- > 0;) {
        if (world.sessions[i] == s) {
            world.sessions[i] = world.sessions[--world.session_count];
            lock_engine_leave(s);
            return;
        }
    }
    ck_abort_msg("leave: the session was not joined");
}

static void on_done(void *ctx, const struct lock_result *result)
{
    struct test_call *c = ctx;

    ck_assert_msg(!c->abandoned, "done called for an abandoned call");
    ck_assert_msg(c->done_count == 0, "done called twice for one call");
    c->done_count++;
    c->result = *result;
    c->result.message = NULL; /* valid during this call only */
    c->result.owners = NULL;
    if (result->type == RESULT_OWNERS && result->owner_count > 0) {
        snprintf(c->first_owner, sizeof(c->first_owner), "%.*s",
                 (int)result->owners[0].field_len, result->owners[0].field);
        c->first_count = result->owners[0].count;
    }
    if (result->type == RESULT_TEXT)
        snprintf(c->text, sizeof(c->text), "%s", result->message);
    if (result->type == RESULT_ERROR)
        snprintf(c->error, sizeof(c->error), "%s", result->message);
    c->call = NULL;
}

struct test_call *start(struct session *s, enum lock_request_op op,
                        const char *name, uint64_t thread_id, int64_t wait_ms,
                        int64_t lease_ms)
{
    return start_kind(s, &lock_kind_rlock, op, name, thread_id, wait_ms,
                      lease_ms);
}

struct test_call *start_kind(struct session *s, const struct lock_kind *kind,
                             enum lock_request_op op, const char *name,
                             uint64_t thread_id, int64_t wait_ms,
                             int64_t lease_ms)
{
    return start_request(s, &(struct lock_request){.kind = kind,
                                                   .op = op,
                                                   .name = name,
                                                   .name_len = strlen(name),
                                                   .thread_id = thread_id,
                                                   .wait_ms = wait_ms,
                                                   .lease_ms = lease_ms});
}

struct test_call *start_request(struct session *s,
                                const struct lock_request *req)
{
    struct test_call *c;
    struct lock_call *call;

    ck_assert_uint_lt(world.call_count, MAX_CALLS);
    c = &world.calls[world.call_count++];
    call = lock_engine_start(s, req, on_done, c);
    /* NULL exactly when done was called before start returned */
    ck_assert_int_eq(call == NULL, c->done_count == 1);
    if (c->done_count == 0)
        c->call = call;
    return c;
}

struct test_call *acquire(struct session *s, const char *name,
                          uint64_t thread_id, int64_t wait_ms, int64_t lease_ms)
{
    return start(s, LOCK_REQUEST_ACQUIRE, name, thread_id, wait_ms, lease_ms);
}

struct test_call *request(struct session *s, enum lock_request_op op,
                          const char *name, uint64_t thread_id)
{
    return start(s, op, name, thread_id, 0, 0);
}

void abandon(struct test_call *c)
{
    ck_assert_ptr_nonnull(c->call);
    c->abandoned = true;
    lock_engine_abandon(c->call);
    c->call = NULL;
}

struct test_call *take(struct session *s, const char *name, uint64_t thread_id,
                       int64_t lease_ms)
{
    struct test_call *c = acquire(s, name, thread_id, 0, lease_ms);

    answer_nil(ACQUIRE, name);
    expect_result(c, RESULT_GRANTED);
    return c;
}

struct test_call *unlock_answered(struct session *s, const char *name,
                                  uint64_t thread_id,
                                  const struct backend_value *reply)
{
    struct test_call *c = request(s, LOCK_REQUEST_RELEASE, name, thread_id);

    answer(RELEASE, name, reply);
    return c;
}

struct test_call *queue(struct session *s, const char *name, uint64_t thread_id,
                        int64_t wait_ms, long long pttl)
{
    struct test_call *c = acquire(s, name, thread_id, wait_ms, LEASE_MS);

    answer_integer(ACQUIRE, name, pttl);
    expect_open(c);
    return c;
}

struct test_call *queue_unasked(struct session *s, const char *name,
                                uint64_t thread_id, int64_t wait_ms)
{
    uint64_t unasked = stats.acquires_queued_unasked;
    size_t pending = fake_backend_pending();
    struct test_call *c = acquire(s, name, thread_id, wait_ms, LEASE_MS);

    expect_open(c);
    ck_assert_uint_eq(stats.acquires_queued_unasked, unasked + 1);
    ck_assert_uint_eq(fake_backend_pending(), pending);
    return c;
}

void expect_open(const struct test_call *c)
{
    ck_assert_uint_eq(c->done_count, 0);
    ck_assert_ptr_nonnull(c->call);
}

void expect_result(const struct test_call *c, enum lock_result_type type)
{
    ck_assert_uint_eq(c->done_count, 1);
    ck_assert_int_eq(c->result.type, type);
}

void expect_error(const struct test_call *c, enum reply_error error)
{
    expect_result(c, RESULT_ERROR);
    ck_assert_int_eq(c->result.error, error);
}

void expect_integer(const struct test_call *c, int64_t value)
{
    expect_result(c, RESULT_INTEGER);
    ck_assert_int_eq(c->result.integer, value);
}

/* ---- Redis --------------------------------------------------------------- */

struct fake_eval *expect_eval(const char *name, const char *key)
{
    struct fake_eval *e = fake_backend_find(name, key);

    ck_assert_msg(e != NULL, "no pending %s for %s", name ? name : "eval",
                  key ? key : "any key");
    return e;
}

struct fake_eval *expect_acquire_by(const char *name, const char *field)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &fake_backend.evals) {
        struct fake_eval *e = list_entry(pos, struct fake_eval, link);

        if (strcmp(e->name, ACQUIRE) == 0 && strcmp(e->key, name) == 0 &&
            e->argc == 4 && strcmp(e->argv[2], field) == 0)
            return e;
    }
    ck_abort_msg("no pending acquire of %s by %s", name, field);
    return NULL;
}

struct fake_eval *expect_eval_with(const char *name, const char *key,
                                   const char *arg)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &fake_backend.evals) {
        struct fake_eval *e = list_entry(pos, struct fake_eval, link);

        if (strcmp(e->name, name) != 0 || strcmp(e->key, key) != 0)
            continue;
        for (int i = 0; i < e->argc; i++)
            if (strcmp(e->argv[i], arg) == 0)
                return e;
    }
    ck_abort_msg("no pending %s of %s with %s", name, key, arg);
    return NULL;
}

void expect_args(const struct fake_eval *e, int argc, ...)
{
    va_list ap;

    ck_assert_int_eq(e->argc, argc);
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        ck_assert_str_eq(e->argv[i], va_arg(ap, const char *));
    va_end(ap);
}

void expect_nothing_pending(void)
{
    ck_assert_uint_eq(fake_backend_pending(), 0);
}

void answer(const char *name, const char *key,
            const struct backend_value *reply)
{
    fake_eval_answer(expect_eval(name, key), reply);
}

void answer_nil(const char *name, const char *key)
{
    answer(name, key, &nil_reply);
}

void answer_integer(const char *name, const char *key, long long value)
{
    struct backend_value reply = integer_reply(value);

    answer(name, key, &reply);
}

void answer_record_of(const char *key, long long pttl,
                      const struct backend_value *flat, size_t n)
{
    struct backend_value pair[2] = {
        {.type = VALUE_INTEGER, .integer = pttl},
        {.type = VALUE_ARRAY, .elements = n, .element = flat}};

    answer("rlockd_session_read", key,
           &(struct backend_value){
               .type = VALUE_ARRAY, .elements = 2, .element = pair});
}

void answer_renewal(struct fake_eval *e, size_t count, const long long *results)
{
    struct backend_value elements[MAX_RENEWAL_HOLDS];
    struct backend_value reply = {
        .type = VALUE_ARRAY, .elements = count, .element = elements};

    ck_assert_uint_le(count, MAX_RENEWAL_HOLDS);
    for (size_t i = 0; i < count; i++)
        elements[i] = integer_reply(results[i]);
    fake_eval_answer(e, &reply);
}

/* ---- time ---------------------------------------------------------------- */

void advance(uint64_t ms)
{
    uint64_t target = fake_clock.now_ms + ms;

    for (int fired = 0; fake_clock.due_ms <= target; fired++) {
        ck_assert_msg(fired < MAX_DRAIN, "the engine's timer never settles");
        if (fake_clock.due_ms > fake_clock.now_ms)
            fake_clock.now_ms = fake_clock.due_ms;
        fake_clock.due_ms = TIMER_NEVER; /* a one-shot timer, now spent */
        lock_engine_run_timers();
    }
    fake_clock.now_ms = target;
}
