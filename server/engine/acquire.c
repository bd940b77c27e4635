/*
 * acquire.c - asking Redis for a lock, and what its answer means.
 *
 * An attempt sends the kind's acquire script, and a WAIT behind it when
 * replicas must have the grant. A grant makes or renews the hold, starts
 * its lease or watchdog and names it in the record. A refusal queues the
 * call; no answer parks it or lets it sleep and poll. A grant no replica
 * acknowledged is undone and tried again.
 *
 * Never: tell a caller it holds a lock before Redis (and its replicas,
 * when asked) said so.
 */
#include <stdio.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"
#include "engine/fence_memory.h"

/* Acquires rolled back for want of a replica before -NOREPLICAS. */
#define SYNC_ATTEMPTS 3

/*
 * An acquire by an owner whose hold was lost: the owner still believes it
 * holds the lock (a reentrant acquire, or a LOCK that came back after the
 * loss), so the loss is told now, not papered over by taking the lock
 * anew; the hold is forgotten, and the next acquire is a new one.
 */
void acquire_finish_lost(struct lock_call *call, struct hold *hold)
{
    if (hold != NULL) {
        record_forget(call->session, call->lock, call->thread_id);
        hold_drop(hold);
    }
    call_finish_error(call, REPLY_LOCKLOST,
                      "the lock was lost while held (this acquire did nothing: "
                      "acquire again to take it anew)");
}

static void acquire_found_hold_gone(struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);

    if (hold != NULL) /* else dropped meanwhile: UNLOCK found it gone */
        release_lose_hold(hold, "a reentrant acquire found it gone");
    acquire_finish_lost(call, hold);
}

/* The latencies of a grant: the acquire's, and the hand-off's when a
 * release through this daemon freed the lock for its waiters. */
static void observe_grant(struct lock_call *call)
{
    uint64_t now = timers_now_us();
    struct lock_waiting *w = call->lock->waiting;

    histogram_observe(&latency.acquire_seconds, now - call->started_us);
    if (w != NULL && w->freed_us != 0) {
        histogram_observe(&latency.handoff_seconds, now - w->freed_us);
        w->freed_us = 0;
    }
}

/* Answers a grant: a fenced lock's token, an expirable permit's id, or
 * OK; and counts it. */
static void finish_granted(struct lock_call *call)
{
    const struct lock_kind *kind = lock_kind_of(call->lock);
    struct lock_result result = {.type = RESULT_GRANTED};

    observe_grant(call);
    if (kind->holds == HOLDS_REENTRANT)
        stats.locks_acquired++;
    if (kind->acquired != NULL)
        *kind->acquired += (uint64_t)call->amount;
    call->in_redis_queue = false; /* the grant took it out */
    if (kind->ops[LOCK_OP_TOKEN].build != NULL)
        result = (struct lock_result){.type = RESULT_INTEGER,
                                      .integer = call->token};
    else if (kind->holds == HOLDS_PERMIT_IDS)
        result =
            (struct lock_result){.type = RESULT_TEXT, .message = call->field};
    call_finish(call, true, &result);
}

static void acquire_granted(struct lock_call *call)
{
    struct lock *lock = call->lock;
    struct hold *hold = hold_find(lock, call->session, call->thread_id);
    bool was_watchdog;

    if (lock_kind_of(lock)->holds == HOLDS_NOTHING) { /* a wait that is over */
        finish_granted(call);
        return;
    }
    if (hold == NULL) /* named by its owner's field, or a permit's id */
        hold = hold_create(lock, call->session, call->thread_id, call->field,
                           call->field_len);
    if (hold == NULL) {
        release_in_background(lock, LOCK_OP_RELEASE, call->field,
                              call->field_len, call_effective_lease(call));
        call_finish_error(call, REPLY_ERR, "out of memory");
        return;
    }
    if (hold->lost) {
        /* Lost while this acquire was on its way, which took the lock
         * anew: what it took is freed, and its owner told. */
        ride_settle_later(lock, call->field, call->field_len);
        acquire_finish_lost(call, hold);
        ride_settle_ready();
        return;
    }
    hold->count = call->count + call->amount;
    was_watchdog = hold->watchdog;
    if (call->lease_ms < 0)
        hold->watchdog = true;
    hold->lease_ms =
        hold->watchdog ? engine.cfg->watchdog_timeout_ms : call->lease_ms;
    if (hold->watchdog) {
        hold_lease_stop(hold);
        /* A leased hold taken again in watchdog mode has its earlier
         * acquires' time renewed at once: a read hold's is a key of each
         * acquire's own (kind_rwlock.c), which this acquire left alone. */
        if (!was_watchdog && call->count > 0)
            watchdog_start_now(hold);
        else
            watchdog_start(hold);
    } else {
        hold_lease_start(hold, call->lease_ms);
    }
    if (record_enabled(call->session, lock_kind_of(lock)) &&
        (call->count == 0 || hold->watchdog != was_watchdog))
        record_hold(hold, call_effective_lease(call));
    lock_note_grant(lock, call_effective_lease(call));
    finish_granted(call); /* the owner's session lives on in its hold */
    deadlock_after_grant(lock_kind_of(lock), hold->session, hold->thread_id);
}

static void acquire_refused(struct lock_call *call, int64_t pttl)
{
    if (engine.shutting_down) { /* nothing would wake it any more */
        call_finish_shutdown(call);
        return;
    }
    if (call->no_wait != NULL) {
        call_finish_error(call, REPLY_ERR, call->no_wait);
        return;
    }
    if (call->woken) {
        acquire_attempt(call);
        return;
    }
    if (timers_now() >= call->deadline_ms) {
        call_finish_not_granted(call);
        return;
    }
    if (!call_queued(call)) {
        const char *refusal = waiters_refusal(call);

        if (refusal != NULL) {
            call_finish_error(call, REPLY_LIMIT, refusal);
            return;
        }
        if (waiters_enqueue(call) != 0) {
            call_finish_error(call, REPLY_ERR, "out of memory");
            return;
        }
        if (deadlock_refuses(call))
            return;
    }
    if (waiters_sleep(call, pttl) != 0)
        call_finish_error(call, REPLY_ERR, "out of memory");
}

static void acquire_unavailable(struct lock_call *call)
{
    if (engine.shutting_down)
        call_finish_shutdown(call);
    else if (!call_queued(call))
        ride_park(call, acquire_attempt);
    else if (timers_now() >= call->deadline_ms)
        call_finish_not_granted(call);
    else if (waiters_sleep(call, UNAVAILABLE_RETRY_MS) != 0)
        call_finish_error(call, REPLY_ERR, "out of memory");
}

/*
 * A token handed out: remembered, so that the next one for the name is
 * higher even if Redis loses its counter. The script found the counter
 * behind one handed out before when was >= 0, and raised it first: Redis
 * lost data, which the operator should know.
 */
static void fence_granted(struct lock *lock, const struct backend_value *reply,
                          int64_t token)
{
    int64_t was = lock_kind_token_was(reply);

    if (was >= 0) {
        stats.fence_tokens_raised++;
        log_warn("fencing token of '%.*s': Redis's counter was %lld, behind "
                 "%lld handed out by this rlockd (Redis lost data?); raised "
                 "it, token %lld",
                 (int)lock->name_len, lock->name, (long long)was,
                 (long long)token - 1, (long long)token);
    }
    fence_memory_note(lock->name, lock->name_len, token,
                      (size_t)engine.cfg->fence_memory_names);
}

static void on_acquire_reply(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;
    int64_t pttl = -1;
    enum lock_outcome outcome =
        call_read(call->lock, LOCK_OP_ACQUIRE, reply, &pttl);

    if (outcome == OUTCOME_GRANTED)
        call->token = pttl; /* what a grant's value is */
    if (outcome == OUTCOME_GRANTED && kind_has_tokens(lock_kind_of(call->lock)))
        fence_granted(call->lock, reply, call->token);

    /* No reply: it may have run, or run yet. Its caller's call sends it
     * again; an abandoned one is settled. */
    if (reply == NULL && call->state == CALL_FINISHED)
        ride_settle_later(call->lock, call->field, call->field_len);
    call->resolving = reply == NULL && call->state != CALL_FINISHED;
    if (reply != NULL)
        call->unavailable_since_ms = 0;
    /* A WAIT sent before this acquire was answered before it: one still
     * out was sent behind it. */
    if (call->state != CALL_FINISHED && outcome == OUTCOME_GRANTED &&
        call->syncs_out > 0) {
        call->granted_unsynced = true; /* the WAIT's reply decides */
        if (call->state == CALL_QUEUED_ASKING)
            call_set_state(call, CALL_QUEUED);
    } else if (call->state == CALL_FINISHED) {
        /* queued in Redis after its caller left (or maybe, unanswered) */
        call->in_redis_queue = outcome != OUTCOME_GRANTED &&
                               kind_queues_in_redis(lock_kind_of(call->lock));
        release_leave_queue(call);
        if (reply != NULL && outcome == OUTCOME_GRANTED) {
            /* Its caller left while we asked: undone by setting the count
             * this daemon knows, which a settle sent at its leaving (see
             * call_let_go) may have done already. */
            stats.orphan_acquires_undone++;
            ride_settle_later(call->lock, call->field, call->field_len);
            ride_settle_ready();
        }
    } else {
        if (call->state == CALL_QUEUED_ASKING)
            call_set_state(call, CALL_QUEUED);
        if (reply == NULL)
            acquire_unavailable(call);
        else if (outcome == OUTCOME_GRANTED)
            acquire_granted(call);
        else if (outcome == OUTCOME_REFUSED)
            acquire_refused(call, pttl);
        else if (outcome == OUTCOME_WRONG_TYPE)
            call_finish_wrong_type(call, reply);
        else if (outcome == OUTCOME_NOT_OWNER) /* a reentrant one's hold */
            acquire_found_hold_gone(call);
        else
            call_finish_bad_reply(call, reply);
    }
    call_unref(call);
}

static void acquire_rolled_back(struct lock_call *call)
{
    stats.sync_rollbacks++;
    ride_settle_later(call->lock, call->field, call->field_len);
    ride_settle_ready(); /* on the acquire's connection, before the next try */
    if (++call->sync_attempts < SYNC_ATTEMPTS) {
        acquire_attempt(call);
        return;
    }
    stats.noreplicas_replies++;
    call_finish_error(
        call, REPLY_NOREPLICAS,
        "no replica acknowledged the acquire within sync_timeout_ms "
        "(3 attempts); it was undone");
}

/*
 * WAIT's reply to an acquire's: how many replicas have what the
 * connection wrote. A grant none of them has would be lost with a
 * failover, so it is undone and tried again; one acknowledgement is
 * enough, as in Redisson.
 */
static void on_sync_reply(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;
    bool granted = call->granted_unsynced;

    call->syncs_out--;
    call->granted_unsynced = false;
    /* Not granted: the acquire's reply said what to do. (A call that
     * ended meanwhile was undone as it ended: call_let_go.) */
    if (granted && reply == NULL) {
        call->resolving = true; /* granted, replicated or not: again */
        acquire_unavailable(call);
    } else if (granted && reply->type == VALUE_INTEGER && reply->integer > 0) {
        acquire_granted(call);
    } else if (granted) {
        stats.sync_timeouts++;
        acquire_rolled_back(call);
    }
    call_unref(call);
}

/* The watchdog found a waiter's place in Redis's queue gone (a Java
 * grant moved it past its deadline before it was renewed, and a script
 * dropped it): a waiter asleep asks again now, and takes a new place,
 * rather than wait for a message only the queue's head gets. */
static void place_gone(void *owner)
{
    struct lock_call *call = owner;

    if (call->state == CALL_QUEUED)
        waiters_wake_one(call);
}

/*
 * Whether a new acquire that may wait joins the queue without asking
 * Redis: another owner holds the lock through this daemon, so Redis
 * would refuse it. The head is then woken by that hold's release (which
 * hands it the lock) or when the TTL this daemon set could have run out.
 * Not a TRYLOCK (it asks, and answers what Redis says), not a reentrant
 * acquire, and not a fair one, whose place in Redis's queue is taken by
 * asking.
 */
static bool queues_unasked(const struct lock_call *call)
{
    struct lock *lock = call->lock;

    return !call_queued(call) && call->may_wait &&
           timers_now() < call->deadline_ms &&
           !kind_queues_in_redis(lock_kind_of(lock)) &&
           waiters_held_here(lock) && !call_owner_holds(call, lock);
}

void acquire_attempt(struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);
    /* The TTL it sets: a reentrant LEASE never shortens a lock the
     * watchdog renews, or it could expire before the next renewal. */
    int64_t ttl = hold != NULL && !hold->lost && hold->watchdog
                      ? engine.cfg->watchdog_timeout_ms
                      : call_effective_lease(call);

    call->woken = false;
    if (waiters_yields(call)) {
        acquire_refused(call, -1); /* woken when those waiters are gone */
        return;
    }
    if (queues_unasked(call)) {
        stats.acquires_queued_unasked++;
        acquire_refused(call, call->lock->last_grant_ttl_ms);
        return;
    }
    call->count = hold != NULL && !hold->lost ? hold->count : 0;
    /* A long wait outlives the TTL "pending" was written with. */
    if (call->recorded &&
        timers_now() - call->recorded_ms >=
            (uint64_t)call_effective_lease(call) / 2 &&
        record_pending(call, NULL) != 0) {
        acquire_unavailable(call);
        return;
    }
    if (call_send(call, LOCK_OP_ACQUIRE, ttl, on_acquire_reply) != 0) {
        acquire_unavailable(call);
        return;
    }
    if (call->may_wait && kind_queues_in_redis(lock_kind_of(call->lock))) {
        call->in_redis_queue = true; /* until it is granted */
        if (call->place == NULL)
            call->place =
                watchdog_place_add(call->lock, call->field, call->field_len,
                                   call->queue_wait_ms, place_gone, call);
    }
    if (engine.backend->sync(call->lock->name, call->lock->name_len,
                             on_sync_reply, call) == 0) {
        call->syncs_out++;
        call->refs++;
        stats.sync_waits++;
    }
    stats.lock_attempts++;
    call_set_state(call, call_queued(call) ? CALL_QUEUED_ASKING : CALL_ASKING);
}
