/*
 * release.c - UNLOCK, FORCEUNLOCK and queries, and the releases nobody
 * waits for.
 *
 * A reply that frees a lock wakes its waiters here at once, without the
 * pub/sub round trip. A release whose reply is lost is sent again; the
 * script counts a repeat once. A background release (a session gone) and
 * a fair waiter's leave of Redis's queue are sent here too.
 *
 * Never: drop a hold Redis did not confirm released or gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"

void release_lose_hold(struct hold *hold, const char *why)
{
    watchdog_stop(hold);
    hold_mark_lost(hold, why);
}

void release_drop_hold(struct hold *hold)
{
    watchdog_stop(hold);
    hold_drop(hold);
}

/* Frees or decrements a lock with nobody waiting for the answer. */
void release_in_background(struct lock *lock, enum lock_op op,
                           const char *field, size_t field_len,
                           int64_t lease_ms)
{
    struct engine_request *r = engine_request_new(lock, op, field, field_len);

    if (r == NULL) {
        log_error("out of memory: '%.*s' expires by TTL", (int)lock->name_len,
                  lock->name);
        return;
    }
    if (engine_request_send(r, lease_ms, release_on_background_reply) != 0)
        ride_settle_later(lock, field, field_len); /* once Redis answers */
}

/* Takes the owner out of the lock's queue in Redis; a leave that cannot
 * be sent, or is not answered, is sent again once Redis answers (a place
 * left behind would hold up everyone behind it until it runs out). */
void release_leave_send(struct lock *lock, const char *field, size_t field_len)
{
    struct engine_request *leave =
        engine_request_new(lock, LOCK_OP_LEAVE_QUEUE, field, field_len);

    if (leave == NULL) {
        log_error("out of memory: a waiter stays queued for '%.*s' until its "
                  "place runs out",
                  (int)lock->name_len, lock->name);
        return;
    }
    if (engine_request_send(leave, 0, release_on_background_reply) != 0)
        ride_leave_later(lock, field, field_len);
}

/* A fair acquire that ends ungranted takes its owner out of the queue in
 * Redis, where it may have queued it; whether the owner is there or not,
 * the script leaves the queue as it should be. */
void release_leave_queue(struct lock_call *call)
{
    if (!call->in_redis_queue)
        return;
    call->in_redis_queue = false;
    release_leave_send(call->lock, call->field, call->field_len);
}

/* OWNERS: the kind and the pairs after the PTTL (lock_kind_read_owners
 * checked them). */
static void finish_owners(struct lock_call *call,
                          const struct backend_value *reply, int64_t pttl)
{
    size_t n = reply->elements / 2 - 1;
    struct lock_owner *owners = calloc(n ? n : 1, sizeof(*owners));

    if (owners == NULL) {
        call_finish_error(call, REPLY_ERR, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        owners[i] = (struct lock_owner){reply->element[2 + 2 * i].str,
                                        reply->element[2 + 2 * i].len,
                                        reply->element[3 + 2 * i].integer};
    call_finish(call, false,
                &(struct lock_result){.type = RESULT_OWNERS,
                                      .integer = pttl,
                                      .kind = reply->element[1].str,
                                      .kind_len = reply->element[1].len,
                                      .owners = owners,
                                      .owner_count = n});
    free(owners);
}

/* A count's add refused: value is the count (with the permits held) it
 * would have made. */
static void finish_out_of_range(struct lock_call *call, int64_t value)
{
    char message[128];

    snprintf(message, sizeof(message),
             "permits out of range: the count would be %lld, and must stay "
             "0 to 2147483647 with the permits held",
             (long long)value);
    call_finish_error(call, REPLY_ERR, message);
}

/* The reply to a release, leave or settle nobody waits for (an
 * engine_request): what it could not do is done again once Redis
 * answers, or logged. */
void release_on_background_reply(void *arg, const struct backend_value *reply)
{
    struct engine_request *r = arg;
    int64_t value = 0;
    enum lock_outcome outcome = call_read(r->lock, r->op, reply, &value);

    if (outcome == OUTCOME_RELEASED)
        waiters_freed(r->lock);
    else if (reply == NULL && r->op == LOCK_OP_LEAVE_QUEUE)
        ride_leave_later(r->lock, r->field, r->field_len);
    else if (reply == NULL) /* it may not have run */
        ride_settle_later(r->lock, r->field, r->field_len);
    else if (outcome == OUTCOME_BAD_REPLY)
        log_warn("release of '%.*s' for %.*s failed: %s; it expires by TTL",
                 (int)r->lock->name_len, r->lock->name, (int)r->field_len,
                 r->field,
                 reply->type == VALUE_ERROR ? reply->str : "unexpected reply");
    engine_request_free(r);
}

static void release_replied(struct lock_call *call, enum lock_outcome outcome,
                            const struct backend_value *reply)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);
    bool gone;

    /* Sent again after its reply was lost, a release of count 1 that
     * finds no lock of its owner is the first one having run. (It could
     * also be the lock expiring in the same instant: a release asked for
     * is not reported lost then.) */
    if (outcome == OUTCOME_NOT_OWNER && call->resend &&
        call->count == call->amount)
        outcome = OUTCOME_RELEASED;
    /* A hold whose key now holds something else was lost too. */
    gone = outcome == OUTCOME_NOT_OWNER || outcome == OUTCOME_WRONG_TYPE;

    if (outcome == OUTCOME_WRONG_TYPE && hold == NULL) {
        call_finish_wrong_type(call, reply);
    } else if (outcome == OUTCOME_NOT_OWNER && hold == NULL) {
        call_finish_error(call, REPLY_NOTOWNER,
                          "the lock is not held by this owner");
    } else if (gone) {
        release_lose_hold(hold, "UNLOCK found it gone");
        record_forget(call->session, call->lock, call->thread_id);
        hold_drop(hold);
        call_finish_error(call, REPLY_LOCKLOST,
                          "the lock expired or was deleted while held");
    } else if (outcome == OUTCOME_DECREMENTED) {
        if (hold != NULL && hold->count > call->amount)
            hold->count -= call->amount;
        call_finish_integer(call, 0);
    } else {
        if (hold != NULL) {
            record_forget(call->session, call->lock, call->thread_id);
            release_drop_hold(hold);
        }
        stats.locks_released++;
        call_finish_integer(call, 1);
    }
}

static void force_release_replied(struct lock_call *call,
                                  enum lock_outcome outcome, int64_t value)
{
    struct hold *h, *next;

    if (outcome == OUTCOME_RELEASED) {
        lock_for_each_hold (h, next, call->lock)
            release_lose_hold(h, "FORCEUNLOCK");
        stats.locks_force_released++;
    }
    call_finish_integer(call, value);
}

/* Whether the reply may let this daemon's waiters have what they wait
 * for: a lock freed, permits given back or added, a count set. */
static bool frees_waiters(const struct lock_call *call,
                          enum lock_outcome outcome)
{
    return outcome == OUTCOME_RELEASED ||
           (outcome == OUTCOME_DECREMENTED &&
            lock_kind_of(call->lock)->holds == HOLDS_PERMITS) ||
           (outcome == OUTCOME_VALUE &&
            (call->op == LOCK_OP_TRY_SET || call->op == LOCK_OP_ADD));
}

static void on_command_reply(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;
    struct lock *lock = call->lock;
    int64_t value = 0;
    enum lock_outcome outcome;

    if (call->state == CALL_FINISHED) { /* abandoned: only wake waiters */
        if (call_read(lock, call->op, reply, &value) == OUTCOME_RELEASED)
            waiters_freed(lock);
        call_unref(call);
        return;
    }
    if (reply == NULL) {
        /* Sent again once Redis answers: a query changes nothing, and an
         * UNLOCK sent twice releases once (see its script). Whether a
         * FORCEUNLOCK freed the lock cannot be told after the fact. */
        if (call->op == LOCK_OP_FORCE_RELEASE) {
            call_finish_unavailable(call);
        } else {
            call->resolving = call->op == LOCK_OP_RELEASE;
            call->resend = true;
            ride_park(call, release_send);
        }
        call_unref(call);
        return;
    }
    call->resolving = false;
    call->unavailable_since_ms = 0;
    outcome = call_read(call->lock, call->op, reply, &value);
    if (outcome == OUTCOME_BAD_REPLY)
        call_finish_bad_reply(call, reply);
    else if (call->op == LOCK_OP_RELEASE)
        release_replied(call, outcome, reply);
    else if (outcome == OUTCOME_WRONG_TYPE)
        call_finish_wrong_type(call, reply);
    else if (outcome == OUTCOME_RANGE)
        finish_out_of_range(call, value);
    else if (call->op == LOCK_OP_FORCE_RELEASE)
        force_release_replied(call, outcome, value);
    else if (call->op == LOCK_OP_OWNERS)
        finish_owners(call, reply, value);
    else
        call_finish_integer(call, value);
    if (frees_waiters(call, outcome))
        waiters_freed(lock);
    call_unref(call);
}

/* Sends a query or UNLOCK, the first time or again. */
void release_send(struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);

    call_set_state(call, CALL_ASKING);
    if (call_send(call, call->op,
                  hold ? hold->lease_ms : engine.cfg->watchdog_timeout_ms,
                  on_command_reply) != 0)
        ride_park(call, release_send);
}
