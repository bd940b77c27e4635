/*
 * call.c - a lock call's life: born, checked, sent, read, finished.
 *
 * A call holds one reference for its caller, dropped when it finishes
 * (answered or abandoned), and one for each Redis request in flight; the
 * last one frees it. So a reply from Redis always finds its call alive,
 * even after its caller has gone: that is how an acquire that lands
 * after its client left is undone. call_proceed decides what a started
 * call does first: refuse it, park it, or ask Redis.
 *
 * Never: answer a call twice. call_finish is the only way out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"
#include "engine/fence_memory.h"
#include "engine/record_keys.h"

static void call_timer_fired(struct timer *timer);

struct lock_call *call_new(struct lock *lock, enum lock_op op)
{
    struct lock_call *call = calloc(1, sizeof(*call));

    if (call == NULL)
        return NULL;
    call->lock = lock;
    call->op = op;
    call->refs = 1;
    call->arrival = ++engine.arrivals;
    call->deadline_ms = NO_DEADLINE;
    list_init(&call->queue_link);
    list_init(&call->owner_link);
    list_init(&call->park_link);
    list_init(&call->listener.link);
    timer_init(&call->timer, call_timer_fired);
    lock->refs++;
    return call;
}

void call_unref(struct lock_call *call)
{
    if (--call->refs > 0)
        return;
    lock_unref(call->lock);
    free(call);
}

/* Which moves are legal: a bit for each state a state may go to. */
#define TO(state) (1u << (state))
static const unsigned legal_moves[CALL_STATE_COUNT] = {
    [CALL_NEW] =
        TO(CALL_ASKING) | TO(CALL_PARKED) | TO(CALL_QUEUED) | TO(CALL_FINISHED),
    [CALL_ASKING] =
        TO(CALL_ASKING) | TO(CALL_PARKED) | TO(CALL_QUEUED) | TO(CALL_FINISHED),
    [CALL_PARKED] = TO(CALL_NEW) | TO(CALL_FINISHED),
    [CALL_QUEUED] = TO(CALL_QUEUED_ASKING) | TO(CALL_FINISHED),
    [CALL_QUEUED_ASKING] = TO(CALL_QUEUED) | TO(CALL_FINISHED),
    [CALL_FINISHED] = 0,
};
#undef TO

static const char *const state_names[CALL_STATE_COUNT] = {
    "NEW", "ASKING", "PARKED", "QUEUED", "QUEUED_ASKING", "FINISHED"};

static bool queued_state(enum call_state state)
{
    return state == CALL_QUEUED || state == CALL_QUEUED_ASKING;
}

/*
 * The one writer of call->state. It keeps the state and the lists in
 * step: it puts a call on engine.parked and takes it off, and it checks
 * that a call is in its lock's queue exactly while queued (waiters.c
 * links it before, and unlinks it after). A move the table does not
 * list is a bug that would lose or answer twice a caller: it aborts.
 */
void call_set_state(struct lock_call *call, enum call_state to)
{
    enum call_state from = call->state;
    bool legal = legal_moves[from] & (1u << to);

    if (!legal || queued_state(to) != list_linked(&call->queue_link)) {
        log_error("lock call on '%.*s': %s from %s to %s",
                  (int)call->lock->name_len, call->lock->name,
                  legal ? "its queue is out of step with the move" : "no move",
                  state_names[from], state_names[to]);
        abort();
    }
    if (from == CALL_PARKED)
        list_remove(&call->park_link);
    if (to == CALL_PARKED)
        list_push_tail(&engine.parked, &call->park_link);
    call->state = to;
}

bool call_queued(const struct lock_call *call)
{
    return queued_state(call->state);
}

int64_t call_effective_lease(const struct lock_call *call)
{
    return call->lease_ms > 0 ? call->lease_ms
                              : engine.cfg->watchdog_timeout_ms;
}

/* Builds op's call through the lock's kind and sends it, arg for
 * on_reply: args holds the sender's part (field, counts, lease), the
 * lock's is filled in here. An op the row has no build for is refused,
 * logged, as a call that failed (lock_kind.h says which ops a row may
 * lack, and a unit test holds every row to it). */
int call_eval(struct lock *lock, enum lock_op op, struct lock_call_args *args,
              backend_reply_fn *on_reply, void *arg)
{
    const struct lock_kind *kind = lock_kind_of(lock);
    struct lock_kind_call kc;
    const char *keys[LOCK_KIND_MAX_KEYS];
    size_t key_len[LOCK_KIND_MAX_KEYS];
    char channel[lock_channel_len(lock)];

    args->name = lock->name;
    args->name_len = lock->name_len;
    args->channel = channel;
    args->channel_len = lock_channel(lock, channel);
    lock_keys(lock, keys, key_len);
    args->keys = keys;
    args->key_len = key_len;
    args->publish = engine.backend->publish();
    args->place_ms = engine.cfg->watchdog_timeout_ms;
    if (kind->ops[op].build == NULL) {
        log_error("no %s call for a %s ('%.*s'): not sent", lock_op_names[op],
                  kind->name, (int)lock->name_len, lock->name);
        return -ENOSYS;
    }
    if (op == LOCK_OP_ACQUIRE && kind_has_tokens(kind))
        args->token_floor = fence_memory_floor(lock->name, lock->name_len);
    kind->ops[op].build(args, &kc);
    return engine.backend->eval(
        &(struct backend_call){kc.script, lock->name, lock->name_len, kc.nkeys,
                               kc.argc, kc.argv, kc.argv_len},
        on_reply, arg);
}

/* Sends op for call; a request in flight holds a reference to it. */
int call_send(struct lock_call *call, enum lock_op op, int64_t lease_ms,
              backend_reply_fn *on_reply)
{
    struct lock_call_args args = {.field = call->field,
                                  .field_len = call->field_len,
                                  .lease_ms = lease_ms,
                                  .count = call->count,
                                  .amount = call->amount,
                                  .enqueue = call->may_wait,
                                  .queue_wait_ms = call->queue_wait_ms};
    int err = call_eval(call->lock, op, &args, on_reply, call);

    if (err == 0)
        call->refs++;
    return err;
}

/* The words after "WRONGTYPE " of a script's reply saying one of
 * rlockd's records is not rlockd's, or NULL. */
static const char *foreign_record(const struct backend_value *reply)
{
    static const char words[] = "WRONGTYPE " LOCK_KIND_FOREIGN;

    return reply != NULL && reply->type == VALUE_ERROR &&
                   strncmp(reply->str, words, sizeof(words) - 1) == 0
               ? reply->str + sizeof("WRONGTYPE ") - 1
               : NULL;
}

/*
 * What op's reply means. Redis's own WRONGTYPE (a guard in every script
 * sends it, and Redis itself when a command meets another type) reads the
 * same for every kind; NULL (Redis did not answer) is a bad reply here,
 * and callers that care test it first.
 */
enum lock_outcome call_read(const struct lock *lock, enum lock_op op,
                            const struct backend_value *reply, int64_t *value)
{
    static const char wrong_type[] = "WRONGTYPE", lost[] = "LOCKLOST";

    if (reply == NULL)
        return OUTCOME_BAD_REPLY;
    if (foreign_record(reply) != NULL) /* the text after the words */
        record_keys_foreign(foreign_record(reply) +
                            sizeof(LOCK_KIND_FOREIGN ":"));
    if (reply->type == VALUE_ERROR &&
        strncmp(reply->str, wrong_type, sizeof(wrong_type) - 1) == 0)
        return OUTCOME_WRONG_TYPE;
    if (reply->type == VALUE_ERROR &&
        strncmp(reply->str, lost, sizeof(lost) - 1) == 0)
        return OUTCOME_NOT_OWNER;
    return lock_kind_of(lock)->ops[op].read(reply, value);
}

/* Whether the owner of call holds lock (not lost). */
bool call_owner_holds(const struct lock_call *call, struct lock *lock)
{
    struct hold *hold =
        lock != NULL ? hold_find(lock, call->session, call->thread_id) : NULL;

    return hold != NULL && !hold->lost;
}

/* ---- finishing ------------------------------------------------------- */

/* What a call leaves in Redis when it ends unanswered by Redis: an
 * acquire or UNLOCK that may have run is settled, and one granted while
 * its WAIT was out is undone (its caller is not told it has the lock). */
static void call_let_go(struct lock_call *call)
{
    struct hold *hold;

    if (call->releasing &&
        (hold = hold_find(call->lock, call->session, call->thread_id)) != NULL)
        hold->releasing -= call->amount;
    call->releasing = false;
    if (call->granted_unsynced)
        stats.orphan_acquires_undone++;
    if (call->resolving || call->granted_unsynced) {
        ride_settle_later(call->lock, call->field, call->field_len);
        ride_settle_ready();
    }
    call->resolving = false;
    call->granted_unsynced = false;
    if (call->place != NULL)
        watchdog_place_drop(call->place);
    call->place = NULL;
    release_leave_queue(call);
}

/* Ends a call, answered or abandoned: out of its queue, what it leaves
 * in Redis let go; granted says whether the lock was just taken. */
void call_end(struct lock_call *call, bool granted)
{
    if (call_queued(call))
        waiters_dequeue(call, granted);
    call_let_go(call);
    timer_stop(&call->timer);
    call_set_state(call, CALL_FINISHED);
    call->session = NULL;
}

/* Answers the caller once; granted says whether the lock was just taken. */
void call_finish(struct lock_call *call, bool granted,
                 const struct lock_result *result)
{
    if (call->recorded && !granted &&
        hold_find(call->lock, call->session, call->thread_id) == NULL)
        record_forget(call->session, call->lock, call->thread_id);
    call_end(call, granted);
    call->done(call->ctx, result);
    call->done = NULL;
    call_unref(call);
}

void call_finish_integer(struct lock_call *call, int64_t value)
{
    call_finish(
        call, false,
        &(struct lock_result){.type = RESULT_INTEGER, .integer = value});
}

void call_finish_error(struct lock_call *call, enum reply_error error,
                       const char *message)
{
    call_finish(call, false,
                &(struct lock_result){
                    .type = RESULT_ERROR, .error = error, .message = message});
}

void call_finish_unavailable(struct lock_call *call)
{
    stats.unavailable_replies++;
    call_finish_error(call, REPLY_UNAVAILABLE, "Redis is unavailable");
}

void call_finish_shutdown(struct lock_call *call)
{
    call_finish_error(call, REPLY_SHUTDOWN, "rlockd is shutting down");
}

void call_finish_bad_reply(struct lock_call *call,
                           const struct backend_value *reply)
{
    char message[256];

    snprintf(message, sizeof(message), "redis: %s",
             reply->type == VALUE_ERROR ? reply->str : "unexpected reply");
    call_finish_error(call, REPLY_ERR, message);
}

/* The script's own words when it sent them: a kind clash names the
 * kind that holds the name (KIND_LUA_CLASH), a record rlockd did not
 * write its key (foreign_record). */
void call_finish_wrong_type(struct lock_call *call,
                            const struct backend_value *reply)
{
    static const char prefix[] = "WRONGTYPE ";

    stats.wrong_type_refusals++;
    if (reply != NULL && reply->type == VALUE_ERROR &&
        reply->len > sizeof(prefix) - 1 &&
        strncmp(reply->str, prefix, sizeof(prefix) - 1) == 0)
        call_finish_error(call, REPLY_WRONGTYPE,
                          reply->str + sizeof(prefix) - 1);
    else
        call_finish_error(call, REPLY_WRONGTYPE,
                          "the key holds a value that is not a lock");
}

void call_finish_not_granted(struct lock_call *call)
{
    stats.wait_timeouts++;
    call_finish(call, false, &(struct lock_result){.type = RESULT_NOT_GRANTED});
}

static void call_timer_fired(struct timer *timer)
{
    struct lock_call *call = list_entry(timer, struct lock_call, timer);

    if (call->state == CALL_PARKED)
        call_finish_unavailable(call); /* retry_timeout_ms without Redis */
    else if (timers_now() >= call->deadline_ms)
        call_finish_not_granted(call);
    else
        acquire_attempt(call);
}

/* ---- proceeding: refused, parked, or sent --------------------------- */

/* Why LOCK/TRYLOCK may not take a new hold, or NULL when it may (a
 * reentrant acquire takes no new one). */
static const char *hold_refusal(const struct lock_call *call)
{
    if (hold_find(call->lock, call->session, call->thread_id) != NULL)
        return NULL;
    if (stats.held_locks >= (uint64_t)engine.cfg->max_held_locks)
        return "too many held locks (max_held_locks)";
    if (call->session->hold_count >=
        (size_t)engine.cfg->max_held_locks_per_client)
        return "too many held locks of this client-id "
               "(max_held_locks_per_client)";
    return NULL;
}

/*
 * Why the owner's acquire or UNLOCK of this kind is refused, or NULL. A
 * read hold asking to write would wait for itself for ever. And the
 * kinds stored in RLock's hash are one field in Redis: the owner of a
 * FAIR hold whose plain UNLOCK went through would free it there behind
 * the FAIR hold's back (its waiters not told, its watchdog finding it
 * gone), so the kind it holds the name as must be named.
 */
static const char *kind_refusal(const struct lock_call *call)
{
    static char why[160];
    const struct lock_kind *kind = lock_kind_of(call->lock);
    const char *name = call->lock->name;
    size_t len = call->lock->name_len;

    if (call->op == LOCK_OP_ACQUIRE && kind->not_while_holding != NULL &&
        call_owner_holds(call, lock_find(kind->not_while_holding, name, len)))
        return "this owner holds the lock for READ, and a read hold is "
               "never upgraded to WRITE (it would wait for itself): UNLOCK "
               "it first";
    for (size_t k = 0; kind->rlock_hash && k < LOCK_KIND_COUNT; k++) {
        const struct lock_kind *other = lock_kinds[k];

        if (other != kind && other->rlock_hash &&
            call_owner_holds(call, lock_find(other, name, len))) {
            snprintf(why, sizeof(why),
                     "this owner holds the lock as %s%s: name that kind to "
                     "%s it",
                     other->word[0] ? other->word : "a plain lock",
                     other->word[0] ? " lock" : "",
                     call->op == LOCK_OP_ACQUIRE ? "take it again" : "UNLOCK");
            return why;
        }
    }
    return NULL;
}

/* Why a RELEASE of permits is refused, or NULL: a session gives back
 * only permits it holds (to add permits, ADDPERMITS), so that what it
 * holds, and gives back when it ends, stays what it took. */
static const char *permits_refusal(const struct lock_call *call,
                                   const struct hold *hold)
{
    static char why[160];
    int64_t held = hold != NULL ? hold->count - hold->releasing : 0;

    if (lock_kind_of(call->lock)->holds != HOLDS_PERMITS ||
        (hold != NULL && hold->lost) || call->amount <= held)
        return NULL;
    snprintf(why, sizeof(why),
             "this client-id holds %lld permit(s) of the semaphore, not %lld",
             (long long)(held > 0 ? held : 0), (long long)call->amount);
    return why;
}

/* Whether a query of the session's own hold (ISHELD, HOLDCOUNT) has one
 * to ask Redis about: under the call's kind, or, without a kind word
 * (RLock's row), under any lock kind (the kind table's rows up to
 * FENCED), a read-write lock's too. */
static bool hold_to_query(const struct lock_call *call, const struct hold *hold)
{
    if (hold != NULL && !hold->lost)
        return true;
    for (int k = 0;
         lock_kind_of(call->lock) == &lock_kind_rlock && k <= LOCK_KIND_FENCED;
         k++) {
        struct lock *other =
            lock_find(lock_kinds[k], call->lock->name, call->lock->name_len);

        hold = other ? hold_find(other, call->session, call->thread_id) : NULL;
        if (hold != NULL && !hold->lost)
            return true;
    }
    return false;
}

/* Runs a started call (again, when it had to wait for Redis first). */
void call_proceed(struct lock_call *call)
{
    const char *refusal;
    struct hold *hold;

    hold = hold_find(call->lock, call->session, call->thread_id);
    if ((call->op == LOCK_OP_IS_HELD || call->op == LOCK_OP_HOLD_COUNT) &&
        !hold_to_query(call, hold)) {
        /* No hold of this session, whatever field Redis may still have
         * under its owner's name from before: none it will re-enter. */
        call_finish_integer(call, 0);
    } else if (call->op == LOCK_OP_ACQUIRE && hold != NULL && hold->lost) {
        acquire_finish_lost(call, hold);
    } else if (!engine.backend->key_ready(call->lock->name,
                                          call->lock->name_len)) {
        ride_park(call, call_proceed);
    } else if ((call->op == LOCK_OP_ACQUIRE || call->op == LOCK_OP_RELEASE) &&
               (refusal = kind_refusal(call)) != NULL) {
        call_finish_error(call, REPLY_ERR, refusal);
    } else if (call->op == LOCK_OP_RELEASE &&
               (refusal = permits_refusal(call, hold)) != NULL) {
        call_finish_error(call, REPLY_NOTOWNER, refusal);
    } else if (call->op == LOCK_OP_ACQUIRE) {
        refusal = hold_refusal(call);
        if (refusal != NULL)
            call_finish_error(call, REPLY_LIMIT, refusal);
        else if (record_needed(call))
            record_then_attempt(call);
        else
            acquire_attempt(call);
    } else {
        hold = hold_find(call->lock, call->session, call->thread_id);
        /* What UNLOCK's script sets the count from (0: none known): the
         * hold's, less the UNLOCKs pipelined ahead of this one. */
        call->count = 0;
        if (call->op == LOCK_OP_RELEASE && hold != NULL && !hold->lost) {
            call->count = hold->count > hold->releasing
                              ? hold->count - hold->releasing
                              : 0; /* more UNLOCKs than LOCKs */
            call->releasing = true;
            hold->releasing += call->amount;
        }
        release_send(call);
        if (call->op == LOCK_OP_RELEASE)
            waiters_hand_off(call, hold);
    }
}
