/*
 * lock_engine.c - the engine's entry points: starting, stopping and
 * abandoning a call, and the engine as a whole (init, backend ready,
 * shutdown, free).
 *
 * A call's states and their moves are in engine_int.h, with the files
 * that move it. The rule that runs through them: a hold this daemon lost
 * is told to its owner at its next LOCK or UNLOCK, and never taken anew
 * behind its back.
 *
 * Never: know a lock kind's scripts or the record's format. It goes
 * through the kind table and session_store.c.
 */
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "engine/engine_int.h"
#include "engine/fence_memory.h"
#include "engine/session_store.h"

struct engine engine;

/* ---- starting -------------------------------------------------------- */

static const enum lock_op op_of_request[] = {
    [LOCK_REQUEST_ACQUIRE] = LOCK_OP_ACQUIRE,
    [LOCK_REQUEST_RELEASE] = LOCK_OP_RELEASE,
    [LOCK_REQUEST_FORCE_RELEASE] = LOCK_OP_FORCE_RELEASE,
    [LOCK_REQUEST_IS_LOCKED] = LOCK_OP_IS_LOCKED,
    [LOCK_REQUEST_IS_HELD] = LOCK_OP_IS_HELD,
    [LOCK_REQUEST_HOLD_COUNT] = LOCK_OP_HOLD_COUNT,
    [LOCK_REQUEST_PTTL] = LOCK_OP_PTTL,
    [LOCK_REQUEST_OWNERS] = LOCK_OP_OWNERS,
    [LOCK_REQUEST_TOKEN] = LOCK_OP_TOKEN,
    [LOCK_REQUEST_TRY_SET] = LOCK_OP_TRY_SET,
    [LOCK_REQUEST_ADD] = LOCK_OP_ADD,
    [LOCK_REQUEST_AVAILABLE] = LOCK_OP_AVAILABLE,
};

static void call_begin(struct lock_call *call, const struct lock_request *req)
{
    if (call->op == LOCK_OP_ACQUIRE && req->wait_ms >= 0)
        call->deadline_ms = timers_now() + (uint64_t)req->wait_ms;
    call->may_wait = req->wait_ms != 0;
    call->queue_wait_ms =
        req->wait_ms > 0 ? req->wait_ms : engine.cfg->fair_wait_timeout_ms;
    call_proceed(call);
}

/* The owner's field and thread-id: a session's thread's, or an expirable
 * permit's id and the thread-id of its hold (a new one for an acquire,
 * counted down from the top of the range, where no client's thread-id
 * is; 0, which no permit hold has, for a permit the session does not
 * hold). */
static void name_owner(struct lock_call *call, const struct lock_request *req)
{
    struct hold *hold;

    if (lock_kind_of(call->lock)->holds != HOLDS_PERMIT_IDS ||
        req->permit_id == NULL) {
        call->field_len = owner_field(call->field, req->kind, call->session->id,
                                      call->session->id_len, req->thread_id);
        return;
    }
    memcpy(call->field, req->permit_id, LOCK_PERMIT_ID_LEN);
    call->field[LOCK_PERMIT_ID_LEN] = '\0';
    call->field_len = LOCK_PERMIT_ID_LEN;
    if (call->op == LOCK_OP_ACQUIRE) {
        call->thread_id = UINT64_MAX - engine.permit_holds++;
        return;
    }
    hold = hold_find_by_field(call->lock, call->field, call->field_len);
    call->thread_id =
        hold != NULL && hold->session == call->session ? hold->thread_id : 0;
}

struct lock_call *lock_engine_start(struct session *session,
                                    const struct lock_request *req,
                                    lock_done_fn *done, void *ctx)
{
    struct lock *lock = lock_ref(req->kind, req->name, req->name_len);
    struct lock_call *call =
        lock ? call_new(lock, op_of_request[req->op]) : NULL;
    struct lock_call *in_progress;

    if (lock != NULL)
        lock_unref(lock); /* the call holds its own reference */
    if (call == NULL) {
        done(ctx, &(struct lock_result){.type = RESULT_ERROR,
                                        .error = REPLY_ERR,
                                        .message = "out of memory"});
        return NULL;
    }
    call->session = session;
    call->done = done;
    call->ctx = ctx;
    call->thread_id = req->thread_id;
    call->lease_ms = req->lease_ms;
    call->wait_ms = req->wait_ms;
    call->started_us = timers_now_us();
    /* A lock's acquire and release take one; a count's value is as it is. */
    call->amount = (call->op == LOCK_OP_ACQUIRE || call->op == LOCK_OP_RELEASE)
                       ? (req->amount > 0 ? req->amount : 1)
                       : req->amount;
    call->refs++; /* ours, so that a call finished at once is still here */
    if (req->kind->ops[call->op].build == NULL) {
        call_finish_error(call, REPLY_ERR, "not a command for this kind");
    } else {
        name_owner(call, req);
        call_begin(call, req);
    }
    in_progress = call->state == CALL_FINISHED ? NULL : call;
    call_unref(call);
    return in_progress;
}

void lock_engine_stop_waiting(struct lock_call *call, const char *why)
{
    call->no_wait = why;
    if (call_queued(call))
        call_finish_error(call, REPLY_ERR, why);
}

void lock_engine_abandon(struct lock_call *call)
{
    call_end(call, false);
    call->done = NULL;
    call_unref(call);
}

/* ---- sessions, as the front end sees them ------------------------------ */

const char *lock_engine_session_id(const struct session *session)
{
    return session->id;
}

size_t lock_engine_session_id_len(const struct session *session)
{
    return session->id_len;
}

size_t lock_engine_session_hold_count(const struct session *session)
{
    return session->hold_count;
}

bool lock_engine_session_last_with_holds(const struct session *session)
{
    return session->connections == 1 && session->hold_count > 0;
}

void lock_engine_session_keep(struct session *session)
{
    session->connections++;
}

/* ---- the engine as a whole -------------------------------------------- */

int lock_engine_init(const struct config *cfg, const struct backend *backend,
                     const struct engine_clock *clock)
{
    engine.cfg = cfg;
    engine.backend = backend;
    engine.shutting_down = false;
    list_init(&engine.waiting_locks);
    ride_init();
    record_init();
    list_init(&engine.parked);
    timers_init(clock);
    lock_table_init();
    session_table_init();
    watchdog_init(cfg, backend);
    fence_memory_init();
    session_store_init(cfg, backend);
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++)
        for (struct backend_script *const *s = lock_kinds[k]->scripts;
             *s != NULL; s++)
            backend->add_script(*s);
    return 0;
}

static lock_loss_fn *loss_fn;

static void on_hold_lost(const struct hold *h, const char *why)
{
    char buf[OWNER_FIELD_SIZE];
    const struct lock_kind *kind;
    const char *field;
    size_t len;

    if (h->session == NULL) /* released meanwhile: nobody to tell */
        return;
    kind = lock_kind_of(h->lock);
    field = hold_field(h, buf, &len);
    loss_fn(&(struct lock_loss){
        h->session->id, h->session->id_len, kind, h->lock->name,
        h->lock->name_len, field, len,
        kind->holds == HOLDS_REENTRANT ? h->thread_id : 0, why});
}

void lock_engine_on_loss(lock_loss_fn *fn)
{
    loss_fn = fn;
    lock_table_on_loss(fn != NULL ? on_hold_lost : NULL);
}

void lock_engine_free(void)
{
    ride_free();
    record_free();
    watchdog_close();
    fence_memory_free();
    session_table_free();
    lock_table_free();
    timers_free();
}

void lock_engine_run_timers(void)
{
    timers_run_due();
}

void lock_engine_backend_ready(void)
{
    struct list_node *pos, *tmp;

    ride_settle_ready(); /* before any waiter's call for the same keys */
    ride_recheck_ready();
    ride_resume_parked();
    record_stale_resend();
    watchdog_backend_ready();
    list_for_each_safe (pos, tmp, &engine.waiting_locks) {
        struct lock *lock =
            list_entry(pos, struct lock_waiting, waiting_link)->lock;

        if (engine.backend->key_ready(lock->name, lock->name_len))
            waiters_wake(lock, 1);
    }
}

void lock_engine_shutdown(void)
{
    struct list_node *pos, *tmp;
    struct lock_call *head;

    engine.shutting_down = true;
    while ((pos = list_first(&engine.parked)) != NULL)
        call_finish_shutdown(list_entry(pos, struct lock_call, park_link));
    list_for_each_safe (pos, tmp, &engine.waiting_locks) {
        struct lock *lock =
            list_entry(pos, struct lock_waiting, waiting_link)->lock;

        /* Finishing the last waiter may drop the last reference. */
        lock->refs++;
        while ((head = waiters_head(lock)) != NULL)
            call_finish_shutdown(head);
        lock_unref(lock);
    }
}
