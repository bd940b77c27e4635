/*
 * ride_through.c - riding through Redis not answering.
 *
 * A call that needs a key whose connection is down waits here (parked),
 * up to retry_timeout_ms. An acquire or UNLOCK that got no reply may have
 * run: its owner's count is set right once the key can be served again
 * (settling). After a failover every hold is looked for on the new
 * master (the recheck).
 *
 * Never: let a call for a key go to Redis ahead of that key's settle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"

static struct {
    struct list_node unsettled; /* struct unsettled.link */
    struct {                    /* holds looked for on a new master */
        char why[700];
        size_t due;       /* marked, not sent yet */
        size_t in_flight; /* sent, not answered */
        size_t kept, lost;
        bool (*affected)(const char *key, size_t len);
    } recheck;
} ride;

/* Moves the nodes of list whose lock's key can be served now to batch,
 * in order. Acting on one may put nodes back on list (a call parked
 * again, a settle that cannot be sent): taking the ready ones off first
 * lets the walk end. */
static void take_ready(struct list_node *list, struct list_node *batch,
                       struct lock *(*lock_of)(struct list_node *node))
{
    struct list_node *pos, *tmp;

    list_init(batch);
    list_for_each_safe (pos, tmp, list) {
        struct lock *lock = lock_of(pos);

        if (engine.backend->key_ready(lock->name, lock->name_len)) {
            list_remove(pos);
            list_push_tail(batch, pos);
        }
    }
}

/* ---- riding through: calls waiting for Redis --------------------------- */

/*
 * A call that needs Redis while its key's connection is down, or whose
 * request got no reply, waits for the connection (start-up, a restart, a
 * failover) instead of failing: it is parked, and resumed where it was
 * when the backend can serve its key again; after retry_timeout_ms
 * without, counted from the first request it could not get answered, it
 * gets -UNAVAILABLE. A queued waiter is not parked: it waits in its
 * queue as long as it asked to, and polls.
 */
void ride_park(struct lock_call *call, void (*resume)(struct lock_call *call))
{
    uint64_t now = timers_now();

    if (engine.shutting_down) {
        call_finish_shutdown(call);
        return;
    }
    if (call->unavailable_since_ms == 0)
        call->unavailable_since_ms = now;
    if (now - call->unavailable_since_ms >=
        (uint64_t)engine.cfg->retry_timeout_ms) {
        call_finish_unavailable(call);
        return;
    }
    call->resume = resume;
    if (call->state == CALL_PARKED)
        return;
    if (timer_start(&call->timer, call->unavailable_since_ms +
                                      (uint64_t)engine.cfg->retry_timeout_ms) !=
        0) {
        call_finish_error(call, REPLY_ERR, "out of memory");
        return;
    }
    call_set_state(call, CALL_PARKED);
}

static struct lock *parked_lock(struct list_node *node)
{
    return list_entry(node, struct lock_call, park_link)->lock;
}

/* Resumes every parked call whose key can be served now. The batch's
 * calls stay PARKED until resumed: call_set_state unlinks them from it. */
void ride_resume_parked(void)
{
    struct list_node *pos;
    struct list_node batch;

    take_ready(&engine.parked, &batch, parked_lock);
    while ((pos = list_first(&batch)) != NULL) {
        struct lock_call *call = list_entry(pos, struct lock_call, park_link);

        call_set_state(call, CALL_NEW);
        timer_stop(&call->timer);
        call->resume(call);
    }
}

/* ---- settling: calls whose reply was lost ---------------------------- */

/*
 * An acquire or UNLOCK that got no reply (a timeout, a lost connection)
 * may have run in Redis, or may still run when Redis resumes; so may a
 * background release that could not be sent at all. The owner is
 * remembered until the lock's key can be served again, and then its count
 * in Redis is set to the one this daemon knows (0 frees the lock and
 * wakes its waiters), before any later call for the key is sent: so no
 * lock is left that nobody here accounts for, no count moves behind a
 * client's back, and a waiter is not kept waiting for a TTL. A fair
 * queue's leave that got no reply is remembered and sent again alike.
 */
struct unsettled {
    struct list_node link;
    struct lock *lock;
    enum lock_op op; /* LOCK_OP_SETTLE or LOCK_OP_LEAVE_QUEUE */
    size_t field_len;
    char field[OWNER_FIELD_SIZE];
};

static void unsettled_add(struct lock *lock, enum lock_op op, const char *field,
                          size_t field_len)
{
    struct unsettled *u = malloc(sizeof(*u));

    if (u == NULL) {
        log_error("out of memory: '%.*s' is left to its TTL",
                  (int)lock->name_len, lock->name);
        return;
    }
    u->lock = lock;
    lock->refs++;
    u->op = op;
    memcpy(u->field, field, field_len);
    u->field_len = field_len;
    list_push_tail(&ride.unsettled, &u->link);
}

/* A kind that holds nothing (a latch's wait) leaves nothing to settle. */
void ride_settle_later(struct lock *lock, const char *field, size_t field_len)
{
    if (!lock_kind_op_required(lock_kind_of(lock), LOCK_OP_SETTLE))
        return;
    unsettled_add(lock, LOCK_OP_SETTLE, field, field_len);
}

void ride_leave_later(struct lock *lock, const char *field, size_t field_len)
{
    unsettled_add(lock, LOCK_OP_LEAVE_QUEUE, field, field_len);
}

static void on_settle_reply(void *arg, const struct backend_value *reply)
{
    struct engine_request *r = arg;

    if (reply == NULL) { /* still no answer: again when it can be served */
        ride_settle_later(r->lock, r->field, r->field_len);
        engine_request_free(r);
        return;
    }
    stats.acquires_settled++;
    release_on_background_reply(arg, reply);
}

static void settle_send(struct unsettled *u)
{
    struct hold *hold = hold_find_by_field(u->lock, u->field, u->field_len);
    struct engine_request *r;

    if (u->op == LOCK_OP_LEAVE_QUEUE) {
        release_leave_send(u->lock, u->field, u->field_len);
        return;
    }
    r = engine_request_new(u->lock, LOCK_OP_SETTLE, u->field, u->field_len);
    if (r == NULL) {
        log_error("out of memory: '%.*s' is settled by its TTL",
                  (int)u->lock->name_len, u->lock->name);
        return;
    }
    r->count = hold != NULL && !hold->lost ? hold->count : 0;
    if (engine_request_send(r, 0, on_settle_reply) != 0)
        ride_settle_later(u->lock, u->field, u->field_len);
}

static struct lock *unsettled_lock(struct list_node *node)
{
    return list_entry(node, struct unsettled, link)->lock;
}

/* Settles every remembered acquire whose key can be served now. */
void ride_settle_ready(void)
{
    struct list_node *pos;
    struct list_node batch;

    take_ready(&ride.unsettled, &batch, unsettled_lock);
    while ((pos = list_first(&batch)) != NULL) {
        struct unsettled *u = list_entry(pos, struct unsettled, link);

        list_remove(&u->link);
        settle_send(u);
        lock_unref(u->lock);
        free(u);
    }
}

/* ---- re-checking holds after a failover ------------------------------- */

/*
 * After a failover the new master has only what reached it before the
 * switch: a hold granted just before may be gone, or have a smaller
 * count. Every hold is looked for there at once (not at its next
 * renewal, or never, for a leased one): found, its count is set to the
 * one known here and a watchdog hold is renewed now; gone, it is lost,
 * and its owner told at its next LOCK or UNLOCK. One line sums it up.
 */
static void on_recheck_reply(void *arg, const struct backend_value *reply)
{
    struct engine_request *r = arg;
    struct hold *hold = hold_find_by_field(r->lock, r->field, r->field_len);
    int64_t value = 0;
    enum lock_outcome outcome =
        call_read(r->lock, LOCK_OP_SETTLE, reply, &value);

    ride.recheck.in_flight--;
    /* A hold released or lost meanwhile needs no check. */
    if (hold != NULL && !hold->lost && reply == NULL) {
        hold->recheck = true; /* when Redis answers again */
        ride.recheck.due++;
    } else if (hold != NULL && !hold->lost && outcome == OUTCOME_VALUE &&
               value == 0) {
        ride.recheck.lost++;
        stats.failover_locks_lost++;
        release_lose_hold(hold, "not on the new master after a failover");
    } else if (hold != NULL && !hold->lost) {
        ride.recheck.kept++;
        stats.failover_locks_kept++;
        if (hold->watchdog)
            watchdog_start_now(hold);
    }
    if (ride.recheck.due == 0 && ride.recheck.in_flight == 0)
        log_warn("%s: %zu lock(s) kept, %zu lost", ride.recheck.why,
                 ride.recheck.kept, ride.recheck.lost);
    engine_request_free(r);
}

static void recheck_send(struct hold *hold)
{
    char buf[OWNER_FIELD_SIZE];
    size_t len;
    const char *field = hold_field(hold, buf, &len);
    struct engine_request *r =
        engine_request_new(hold->lock, LOCK_OP_SETTLE, field, len);

    if (r == NULL) {
        log_error("out of memory: '%.*s' is checked at its next renewal",
                  (int)hold->lock->name_len, hold->lock->name);
        return;
    }
    r->count = hold->count;
    if (engine_request_send(r, 0, on_recheck_reply) == 0) {
        ride.recheck.in_flight++;
    } else {
        hold->recheck = true;
        ride.recheck.due++;
    }
}

/* Sends the checks whose keys can be served now (mark: first marks every
 * hold). */
static void recheck_session(struct session *s, void *arg)
{
    bool mark = arg != NULL;
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &s->holds) {
        struct hold *h = list_entry(pos, struct hold, session_link);

        if (h->lost || (!mark && !h->recheck) ||
            (mark && ride.recheck.affected != NULL &&
             !ride.recheck.affected(h->lock->name, h->lock->name_len)))
            continue;
        if (mark && !h->recheck) {
            h->recheck = true;
            ride.recheck.due++;
        }
        if (engine.backend->key_ready(h->lock->name, h->lock->name_len)) {
            h->recheck = false;
            ride.recheck.due--;
            recheck_send(h);
        }
    }
}

void ride_recheck_ready(void)
{
    if (ride.recheck.due > 0)
        session_table_foreach(recheck_session, NULL);
}

void lock_engine_recheck(const char *why,
                         bool (*affected)(const char *key, size_t len))
{
    snprintf(ride.recheck.why, sizeof(ride.recheck.why), "%s", why);
    ride.recheck.kept = ride.recheck.lost = 0;
    ride.recheck.affected = affected;
    session_table_foreach(recheck_session, &ride.recheck);
    ride.recheck.affected = NULL;
    if (ride.recheck.due == 0 && ride.recheck.in_flight == 0)
        log_warn("%s: no locks held here", why);
}

/* ---- the state as a whole --------------------------------------------- */

void ride_init(void)
{
    list_init(&ride.unsettled);
    memset(&ride.recheck, 0, sizeof(ride.recheck));
}

void ride_free(void)
{
    struct list_node *node;

    while ((node = list_first(&ride.unsettled)) != NULL) {
        struct unsettled *u = list_entry(node, struct unsettled, link);

        list_remove(&u->link);
        lock_unref(u->lock);
        free(u);
    }
}
