/*
 * lock_engine.c - lock calls: the acquire/wait/retry loop, releases,
 * queries, and what a session leaves behind.
 *
 * A call moves ASKING -> (QUEUED <-> QUEUED_ASKING)* -> FINISHED. It holds
 * one reference for its caller, dropped when it finishes (answered or
 * abandoned), and one for each Redis request in flight; the last one
 * frees it. So a reply from Redis always finds its call alive, even after
 * the caller has gone, which is how an acquire that lands after its
 * client left is undone.
 *
 * The sections, in order: the waiter queue; finishing a call; holds and
 * background releases; settling (an acquire or release whose reply was
 * lost, or a background release that could not be sent, is set right
 * once Redis answers again); the session record (what a later rlockd
 * needs to give a session back); acquire; release and queries; starting
 * a call; sessions (joining, resuming, leaving); the engine as a whole.
 * The rule that runs through them: a hold this daemon lost is told to
 * its owner at its next LOCK or UNLOCK, and never taken anew behind its
 * back.
 */
#include "engine/lock_engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/fence_memory.h"
#include "engine/lock_table.h"
#include "engine/record_keys.h"
#include "engine/session.h"
#include "engine/session_store.h"
#include "engine/waiter_queue.h"
#include "engine/watchdog.h"

/* A waiter whose attempt found Redis unreachable tries again this soon;
 * so does a join that cannot read its record yet. */
#define UNAVAILABLE_RETRY_MS 100
/* Acquires rolled back for want of a replica before -NOREPLICAS. */
#define SYNC_ATTEMPTS 3
#define NO_DEADLINE TIMER_NEVER

enum call_state {
    CALL_ASKING,        /* its request is in flight; not queued */
    CALL_QUEUED,        /* in its lock's queue, asleep until woken */
    CALL_QUEUED_ASKING, /* in the queue, its acquire in flight */
    CALL_FINISHED,      /* answered or abandoned; a reply may still come */
};

struct lock_call {
    struct lock *lock;
    struct session *session; /* NULL once finished */
    enum lock_op op;
    enum call_state state;
    bool woken;      /* woken while asking: ask again if refused */
    bool background; /* a release nobody waits for: log its failure */
    bool recorded;   /* named "pending" in its session's record */
    /* Its last acquire or UNLOCK got no reply, so it may have run: it is
     * sent again (the scripts count a repeat once), and a call that ends
     * before a reply settles the owner's count instead. */
    bool resolving;
    bool resend;        /* its query or UNLOCK is being sent again */
    bool releasing;     /* an UNLOCK's amount counted in its hold's releasing */
    unsigned syncs_out; /* WAITs sent behind its acquires, unanswered */
    bool granted_unsynced; /* granted; the WAIT has not answered */
    unsigned sync_attempts;
    bool record_pending; /* a resume's count: the record said pending */
    /* An acquire of a kind with a queue in Redis (fair) that may have
     * left its owner there: it leaves at once when the call ends
     * ungranted, rather than block those behind until its place runs
     * out. */
    bool in_redis_queue;
    /* Its place there, renewed by the watchdog while it waits (NULL:
     * none yet, or out of memory: then it runs out unrenewed). */
    struct watchdog_place *place;
    bool may_wait;         /* its wait has not run out at its start */
    const char *no_wait;   /* its caller can wait no more: why (static) */
    int64_t queue_wait_ms; /* how long its place there is kept */
    int64_t token;         /* a fenced grant's fencing token */
    /* Its place in the order of every call this daemon started: a reader
     * yields only to writers that asked before it. */
    uint64_t arrival;
    uint64_t started_us;  /* an acquire's start, for its latency */
    uint64_t queued_us;   /* when it last joined its lock's queue */
    uint64_t recorded_ms; /* when "pending" was last written */
    unsigned refs;
    lock_done_fn *done;
    void *ctx;
    uint64_t thread_id;
    int64_t count; /* acquire: the hold's count when sent; settle: the
                         count to set */
    /* acquire, release: how much it takes or gives back (1 for a lock, a
     * semaphore's permits); try set, add: the value */
    int64_t amount;
    int64_t lease_ms; /* as asked; < 0: watchdog mode */
    uint64_t deadline_ms;
    char field[OWNER_FIELD_SIZE];
    size_t field_len;
    struct list_node queue_link;
    /* A kind whose waiters each listen on a channel of their own (fair):
     * this waiter's, while queued. */
    struct backend_listener listener;
    struct timer timer;
    /* Waiting for Redis (engine.parked): resume runs once its key can be
     * served, the timer ends the wait at retry_timeout_ms. */
    struct list_node park_link;
    void (*resume)(struct lock_call *call);
    uint64_t unavailable_since_ms; /* 0: Redis answered its last request */
};

static struct {
    const struct config *cfg;
    const struct backend *backend;
    struct list_node waiting_locks; /* struct lock.waiting_link */
    struct list_node unsettled;     /* struct unsettled.link */
    struct list_node stale_records; /* struct stale_record.link */
    struct list_node parked;        /* struct lock_call.park_link */
    struct {                        /* holds looked for on a new master */
        char why[700];
        size_t due;       /* marked, not sent yet */
        size_t in_flight; /* sent, not answered */
        size_t kept, lost;
        bool (*affected)(const char *key, size_t len);
    } recheck;
    uint64_t arrivals; /* struct lock_call.arrival's counter */
    /* An expirable permit's hold is a thread-id of its own: this counts
     * them, from the top of the range (no client's thread-id is there). */
    uint64_t permit_holds;
    bool shutting_down;
} engine;

static void call_attempt(struct lock_call *call);
static void place_gone(void *owner);
static void settle_ready(void);
static void settle_later(struct lock *lock, const char *field,
                         size_t field_len);
static void record_forget(struct session *s, struct lock *lock,
                          uint64_t thread_id);
static void wake(struct lock *lock, size_t count);
static void wake_one(struct lock_call *call);
static void wake_yielding(struct lock *lock);
static void leave_redis_queue(struct lock_call *call);

/* ---- call life ------------------------------------------------------- */

static void call_timer_fired(struct timer *timer);

static struct lock_call *call_new(struct lock *lock, enum lock_op op)
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
    list_init(&call->park_link);
    list_init(&call->listener.link);
    timer_init(&call->timer, call_timer_fired);
    lock->refs++;
    return call;
}

static void call_unref(struct lock_call *call)
{
    if (--call->refs > 0)
        return;
    lock_unref(call->lock);
    free(call);
}

static bool call_queued(const struct lock_call *call)
{
    return call->state == CALL_QUEUED || call->state == CALL_QUEUED_ASKING;
}

static int64_t effective_lease(const struct lock_call *call)
{
    return call->lease_ms > 0 ? call->lease_ms
                              : engine.cfg->watchdog_timeout_ms;
}

/* A kind whose grants hand out fencing tokens (FENCED). */
static bool has_tokens(const struct lock_kind *kind)
{
    return kind->ops[LOCK_OP_TOKEN].build != NULL;
}

/* Builds op's call through the lock's kind and sends it; an op the row
 * has no build for is refused, logged, as a call that failed (lock_kind.h
 * says which ops a row may lack, and a unit test holds every row to it). */
static int call_send(struct lock_call *call, enum lock_op op, int64_t lease_ms,
                     backend_reply_fn *on_reply)
{
    struct lock *lock = call->lock;
    struct lock_call_args args = {.name = lock->name,
                                  .name_len = lock->name_len,
                                  .channel = lock->channel,
                                  .channel_len = lock->channel_len,
                                  .keys = lock->keys,
                                  .key_len = lock->key_len,
                                  .field = call->field,
                                  .field_len = call->field_len,
                                  .lease_ms = lease_ms,
                                  .count = call->count,
                                  .amount = call->amount,
                                  .publish = engine.backend->publish(),
                                  .enqueue = call->may_wait,
                                  .queue_wait_ms = call->queue_wait_ms,
                                  .place_ms = engine.cfg->watchdog_timeout_ms};
    struct lock_kind_call kc;
    int err;

    if (lock->kind->ops[op].build == NULL) {
        log_error("no %s call for a %s ('%.*s'): not sent", lock_op_names[op],
                  lock->kind->name, (int)lock->name_len, lock->name);
        return -ENOSYS;
    }
    if (op == LOCK_OP_ACQUIRE && has_tokens(lock->kind))
        args.token_floor = fence_memory_floor(lock->name, lock->name_len);
    lock->kind->ops[op].build(&args, &kc);
    err = engine.backend->eval(
        &(struct backend_call){kc.script, lock->name, lock->name_len, kc.nkeys,
                               kc.argc, kc.argv, kc.argv_len},
        on_reply, call);
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
static enum lock_outcome call_read(const struct lock_call *call,
                                   enum lock_op op,
                                   const struct backend_value *reply,
                                   int64_t *value)
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
    return call->lock->kind->ops[op].read(reply, value);
}

/* ---- the waiter queue ------------------------------------------------ */

static struct lock_call *queue_head(struct lock *lock)
{
    struct list_node *node = waiter_queue_head(&lock->waiters);
    return node ? list_entry(node, struct lock_call, queue_link) : NULL;
}

/* A kind one owner holds at a time (RLock, FAIR, WRITE, FENCED): not a
 * shared READ, not a semaphore's permits. */
static bool one_owner_at_a_time(const struct lock_kind *kind)
{
    return !kind->shared && kind->holds == HOLDS_REENTRANT;
}

/* A kind whose waiters take a place in a queue in Redis by asking (the
 * fair lock), which they leave when they give up. */
static bool queues_in_redis(const struct lock_kind *kind)
{
    return kind->ops[LOCK_OP_LEAVE_QUEUE].build != NULL;
}

/* The hand-off's start: a release through this daemon frees the lock
 * while waiters are queued (kept until one is granted). */
static void note_freed(struct lock *lock)
{
    if (lock->waiters.length > 0 && lock->freed_us == 0)
        lock->freed_us = timers_now_us();
}

/*
 * Whether a hold of this daemon keeps the lock taken in Redis now (a lock
 * one owner at a time holds): a message that it was freed then tells of
 * an older release, most often the one that handed it to that hold, and
 * a waiter woken by it would only be refused. (Were the hold lost behind
 * this daemon's back, the head still looks when the TTL runs out.)
 */
static bool held_here(const struct lock *lock)
{
    struct list_node *pos, *tmp;

    if (!one_owner_at_a_time(lock->kind))
        return false;
    list_for_each_safe (pos, tmp, &lock->holds) {
        const struct hold *h = list_entry(pos, struct hold, lock_link);

        if (!h->lost && h->count > h->releasing)
            return true;
    }
    return false;
}

static void on_lock_message(struct backend_listener *listener,
                            const char *payload, size_t len)
{
    struct lock *lock = list_entry(listener, struct lock, listener);

    /* No payload: just subscribed, and a message sent before that was
     * missed, so the head looks again, unless a hold here keeps it. */
    if (!held_here(lock))
        wake(lock, payload ? lock->kind->on_message(payload, len) : 1);
}

/* A message on a waiter's own channel (a fair lock's head): it asks. */
static void on_waiter_message(struct backend_listener *listener,
                              const char *payload, size_t len)
{
    struct lock_call *call = list_entry(listener, struct lock_call, listener);

    (void)payload;
    (void)len;
    if (call_queued(call) && !engine.shutting_down)
        wake_one(call);
}

/* A waiter of a kind that signals waiters one by one listens on
 * "<channel>:<its field>", as Redisson's fair lock's do. */
static int listen_as_waiter(struct lock_call *call)
{
    struct lock *lock = call->lock;
    char channel[lock->channel_len + 1 + call->field_len];

    memcpy(channel, lock->channel, lock->channel_len);
    channel[lock->channel_len] = ':';
    memcpy(channel + lock->channel_len + 1, call->field, call->field_len);
    call->listener.on_message = on_waiter_message;
    return engine.backend->listen(&call->listener, channel, sizeof(channel));
}

/* Why call may not wait, or NULL when it may. */
static const char *waiting_refusal(const struct lock_call *call)
{
    if (stats.waiting_clients >= (uint64_t)engine.cfg->max_waiters)
        return "too many waiting clients (max_waiters)";
    if (call->session->waiting_count >=
        (size_t)engine.cfg->max_waiters_per_client)
        return "too many waiting calls of this client-id "
               "(max_waiters_per_client)";
    return NULL;
}

static void call_enqueue(struct lock_call *call)
{
    struct lock *lock = call->lock;

    waiter_queue_push_tail(&lock->waiters, &call->queue_link);
    call->queued_us = timers_now_us();
    call->state = CALL_QUEUED;
    call->session->waiting_count++;
    stats.waiting_clients++;
    if (lock->kind->channel_per_waiter) {
        if (listen_as_waiter(call) != 0)
            log_warn("cannot listen for unlocks (out of memory); polling by "
                     "TTL");
        if (lock->waiters.length == 1)
            list_push_tail(&engine.waiting_locks, &lock->waiting_link);
        return;
    }
    if (lock->waiters.length > 1)
        return;
    list_push_tail(&engine.waiting_locks, &lock->waiting_link);
    lock->listener.on_message = on_lock_message;
    if (engine.backend->listen(&lock->listener, lock->channel,
                               lock->channel_len) != 0)
        log_warn("cannot listen for unlocks (out of memory); polling by TTL");
}

/* Sleeps until the deadline or, for the head, until the lock's TTL may
 * have run out (pttl < 0: no TTL known, only a message wakes it). */
static int call_sleep(struct lock_call *call, int64_t pttl)
{
    uint64_t now = timers_now(), wake_ms = call->deadline_ms;

    if (pttl >= 0 &&
        waiter_queue_is_head(&call->lock->waiters, &call->queue_link) &&
        now + (uint64_t)pttl < wake_ms)
        wake_ms = now + (uint64_t)pttl;
    if (wake_ms == NO_DEADLINE) {
        timer_stop(&call->timer);
        return 0;
    }
    return timer_start(&call->timer, wake_ms);
}

/* Leaves the queue; granted says whether the lock was just taken. */
static void call_dequeue(struct lock_call *call, bool granted)
{
    struct lock *lock = call->lock;
    bool was_head = waiter_queue_is_head(&lock->waiters, &call->queue_link);
    struct lock_call *head;

    waiter_queue_remove(&lock->waiters, &call->queue_link);
    histogram_observe(&latency.wait_seconds, timers_now_us() - call->queued_us);
    call->session->waiting_count--;
    stats.waiting_clients--;
    if (lock->kind->channel_per_waiter)
        engine.backend->unlisten(&call->listener);
    head = queue_head(lock);
    if (was_head) /* the waiters that yielded to it may go on */
        wake_yielding(lock);
    if (head == NULL) {
        lock->freed_us = 0; /* nobody left to hand it to */
        list_remove(&lock->waiting_link);
        if (!lock->kind->channel_per_waiter)
            engine.backend->unlisten(&lock->listener);
        return;
    }
    if (!was_head || head->state != CALL_QUEUED)
        return;
    /* The new head: if the lock was just granted it stays taken for at
     * most the TTL we set (unless holds are shared: then it may share it
     * now); otherwise the old head may have been woken for a free lock it
     * no longer wants, so the new head looks now. */
    if (!granted || lock->kind->shared)
        wake(lock, 1);
    else if (call_sleep(head, lock->last_grant_ttl_ms) != 0)
        log_error("out of memory: waiter on '%.*s' wakes only on a message",
                  (int)lock->name_len, lock->name);
}

/* The head waiter of lock left: the waiters of kinds that yield to it
 * (readers behind writers) look again, and those that arrived before
 * every writer still waiting ask Redis. */
static void wake_yielding(struct lock *lock)
{
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++) {
        struct lock *other;

        if (lock_kinds[k]->yields_to == lock->kind &&
            (other = lock_find(lock_kinds[k], lock->name, lock->name_len)))
            wake(other, LOCK_KIND_WAKE_ALL);
    }
}

/* Whether the owner of call holds lock (not lost). */
static bool owner_holds(const struct lock_call *call, struct lock *lock)
{
    struct hold *hold =
        lock != NULL ? hold_find(lock, call->session, call->thread_id) : NULL;

    return hold != NULL && !hold->lost;
}

/*
 * Whether an acquire queues behind this daemon's waiters of the kind its
 * own yields to, without asking Redis: a reader behind a writer that
 * asked before it. Not if the owner holds either lock already: a reader
 * re-entering, or a writer downgrading, would wait on a writer that waits
 * for it.
 */
static bool call_yields(const struct lock_call *call)
{
    const struct lock_kind *to = call->lock->kind->yields_to;
    struct lock *other;
    struct lock_call *first;

    if (to == NULL)
        return false;
    other = lock_find(to, call->lock->name, call->lock->name_len);
    first = other != NULL ? queue_head(other) : NULL;
    return first != NULL && first->arrival < call->arrival &&
           !owner_holds(call, call->lock) && !owner_holds(call, other);
}

static void wake_one(struct lock_call *call)
{
    if (call->state == CALL_QUEUED_ASKING) {
        call->woken = true;
    } else {
        timer_stop(&call->timer);
        call_attempt(call);
    }
}

/*
 * Lets up to count waiters, from the head, ask Redis again. Waking one
 * can finish it and so change the queue (and wake another): the next
 * call is held by a reference across, and the walk stops if it left.
 */
static void wake(struct lock *lock, size_t count)
{
    struct lock_call *call = queue_head(lock), *next;

    if (engine.shutting_down)
        return;
    for (; call != NULL && count > 0; call = next, count--) {
        struct list_node *node = call->queue_link.next;

        next = count > 1 && node != &lock->waiters.head
                   ? list_entry(node, struct lock_call, queue_link)
                   : NULL;
        if (next != NULL)
            next->refs++;
        wake_one(call);
        if (next != NULL) {
            bool still_queued = call_queued(next);

            call_unref(next);
            if (!still_queued)
                break;
        }
    }
}

/* ---- finishing ------------------------------------------------------- */

/* What a call leaves in Redis when it ends unanswered by Redis: an
 * acquire or UNLOCK that may have run is settled, and one granted while
 * its WAIT was out is undone (its caller is not told it has the lock). */
static void call_let_go(struct lock_call *call)
{
    struct hold *hold;

    if (list_linked(&call->park_link))
        list_remove(&call->park_link);
    if (call->releasing &&
        (hold = hold_find(call->lock, call->session, call->thread_id)) != NULL)
        hold->releasing -= call->amount;
    call->releasing = false;
    if (call->granted_unsynced)
        stats.orphan_acquires_undone++;
    if (call->resolving || call->granted_unsynced) {
        settle_later(call->lock, call->field, call->field_len);
        settle_ready();
    }
    call->resolving = false;
    call->granted_unsynced = false;
    if (call->place != NULL)
        watchdog_place_drop(call->place);
    call->place = NULL;
    leave_redis_queue(call);
}

/* Answers the caller once; granted says whether the lock was just taken. */
static void call_finish(struct lock_call *call, bool granted,
                        const struct lock_result *result)
{
    if (call->recorded && !granted &&
        hold_find(call->lock, call->session, call->thread_id) == NULL)
        record_forget(call->session, call->lock, call->thread_id);
    if (call_queued(call))
        call_dequeue(call, granted);
    call_let_go(call);
    timer_stop(&call->timer);
    call->state = CALL_FINISHED;
    call->session = NULL;
    call->done(call->ctx, result);
    call->done = NULL;
    call_unref(call);
}

static void finish_integer(struct lock_call *call, int64_t value)
{
    call_finish(
        call, false,
        &(struct lock_result){.type = RESULT_INTEGER, .integer = value});
}

static void finish_error(struct lock_call *call, enum reply_error error,
                         const char *message)
{
    call_finish(call, false,
                &(struct lock_result){
                    .type = RESULT_ERROR, .error = error, .message = message});
}

/* OWNERS: the kind and the pairs after the PTTL (lock_kind_read_owners
 * checked them). */
static void finish_owners(struct lock_call *call,
                          const struct backend_value *reply, int64_t pttl)
{
    size_t n = reply->elements / 2 - 1;
    struct lock_owner *owners = calloc(n ? n : 1, sizeof(*owners));

    if (owners == NULL) {
        finish_error(call, REPLY_ERR, "out of memory");
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

static void finish_unavailable(struct lock_call *call)
{
    stats.unavailable_replies++;
    finish_error(call, REPLY_UNAVAILABLE, "Redis is unavailable");
}

static void finish_shutdown(struct lock_call *call)
{
    finish_error(call, REPLY_SHUTDOWN, "rlockd is shutting down");
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
static void call_park(struct lock_call *call,
                      void (*resume)(struct lock_call *call))
{
    uint64_t now = timers_now();

    if (engine.shutting_down) {
        finish_shutdown(call);
        return;
    }
    if (call->unavailable_since_ms == 0)
        call->unavailable_since_ms = now;
    if (now - call->unavailable_since_ms >=
        (uint64_t)engine.cfg->retry_timeout_ms) {
        finish_unavailable(call);
        return;
    }
    call->resume = resume;
    if (list_linked(&call->park_link))
        return;
    if (timer_start(&call->timer, call->unavailable_since_ms +
                                      (uint64_t)engine.cfg->retry_timeout_ms) !=
        0) {
        finish_error(call, REPLY_ERR, "out of memory");
        return;
    }
    list_push_tail(&engine.parked, &call->park_link);
}

/* Resumes every parked call whose key can be served now. */
static void resume_parked(void)
{
    struct list_node *pos, *tmp;
    struct list_node batch;

    /* A resumed call may park again: take the ready ones off first. */
    list_init(&batch);
    list_for_each_safe (pos, tmp, &engine.parked) {
        struct lock_call *call = list_entry(pos, struct lock_call, park_link);

        if (engine.backend->key_ready(call->lock->name, call->lock->name_len)) {
            list_remove(&call->park_link);
            list_push_tail(&batch, &call->park_link);
        }
    }
    while ((pos = list_first(&batch)) != NULL) {
        struct lock_call *call = list_entry(pos, struct lock_call, park_link);

        list_remove(&call->park_link);
        timer_stop(&call->timer);
        call->resume(call);
    }
}

static void finish_bad_reply(struct lock_call *call,
                             const struct backend_value *reply)
{
    char message[256];

    snprintf(message, sizeof(message), "redis: %s",
             reply->type == VALUE_ERROR ? reply->str : "unexpected reply");
    finish_error(call, REPLY_ERR, message);
}

/* The script's own words when it sent them: a kind clash names the
 * kind that holds the name (KIND_LUA_CLASH), a record rlockd did not
 * write its key (foreign_record). */
static void finish_wrong_type(struct lock_call *call,
                              const struct backend_value *reply)
{
    static const char prefix[] = "WRONGTYPE ";

    stats.wrong_type_refusals++;
    if (reply != NULL && reply->type == VALUE_ERROR &&
        reply->len > sizeof(prefix) - 1 &&
        strncmp(reply->str, prefix, sizeof(prefix) - 1) == 0)
        finish_error(call, REPLY_WRONGTYPE, reply->str + sizeof(prefix) - 1);
    else
        finish_error(call, REPLY_WRONGTYPE,
                     "the key holds a value that is not a lock");
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
    finish_error(call, REPLY_ERR, message);
}

static void finish_not_granted(struct lock_call *call)
{
    stats.wait_timeouts++;
    call_finish(call, false, &(struct lock_result){.type = RESULT_NOT_GRANTED});
}

/* ---- holds ----------------------------------------------------------- */

static void hold_lost(struct hold *hold, const char *why)
{
    watchdog_stop(hold);
    hold_mark_lost(hold, why);
}

static void hold_release(struct hold *hold)
{
    watchdog_stop(hold);
    hold_drop(hold);
}

static void on_background_reply(void *arg, const struct backend_value *reply);

/* Frees or decrements a lock with nobody waiting for the answer. */
static void release_in_background(struct lock *lock, enum lock_op op,
                                  const char *field, size_t field_len,
                                  int64_t lease_ms)
{
    struct lock_call *call = call_new(lock, op);

    if (call == NULL) {
        log_error("out of memory: '%.*s' expires by TTL", (int)lock->name_len,
                  lock->name);
        return;
    }
    call->state = CALL_FINISHED;
    call->background = true;
    memcpy(call->field, field, field_len);
    call->field_len = field_len;
    if (call_send(call, op, lease_ms, on_background_reply) != 0)
        settle_later(lock, field, field_len); /* once Redis answers */
    call_unref(call);
}

static void leave_later(struct lock *lock, const char *field,
                        size_t field_len);

/* Takes the owner out of the lock's queue in Redis; a leave that cannot
 * be sent, or is not answered, is sent again once Redis answers (a place
 * left behind would hold up everyone behind it until it runs out). */
static void leave_send(struct lock *lock, const char *field, size_t field_len)
{
    struct lock_call *leave = call_new(lock, LOCK_OP_LEAVE_QUEUE);

    if (leave == NULL) {
        log_error("out of memory: a waiter stays queued for '%.*s' until its "
                  "place runs out",
                  (int)lock->name_len, lock->name);
        return;
    }
    leave->state = CALL_FINISHED;
    leave->background = true;
    memcpy(leave->field, field, field_len);
    leave->field_len = field_len;
    if (call_send(leave, LOCK_OP_LEAVE_QUEUE, 0, on_background_reply) != 0)
        leave_later(lock, field, field_len);
    call_unref(leave);
}

/* A fair acquire that ends ungranted takes its owner out of the queue in
 * Redis, where it may have queued it; whether the owner is there or not,
 * the script leaves the queue as it should be. */
static void leave_redis_queue(struct lock_call *call)
{
    if (!call->in_redis_queue)
        return;
    call->in_redis_queue = false;
    leave_send(call->lock, call->field, call->field_len);
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
    enum lock_op op;       /* LOCK_OP_SETTLE or LOCK_OP_LEAVE_QUEUE */
    size_t field_len;
    char field[OWNER_FIELD_SIZE];
};

static void unsettled_add(struct lock *lock, enum lock_op op,
                          const char *field, size_t field_len)
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
    list_push_tail(&engine.unsettled, &u->link);
}

/* A kind that holds nothing (a latch's wait) leaves nothing to settle. */
static void settle_later(struct lock *lock, const char *field, size_t field_len)
{
    if (!lock_kind_op_required(lock->kind, LOCK_OP_SETTLE))
        return;
    unsettled_add(lock, LOCK_OP_SETTLE, field, field_len);
}

static void leave_later(struct lock *lock, const char *field,
                        size_t field_len)
{
    unsettled_add(lock, LOCK_OP_LEAVE_QUEUE, field, field_len);
}

/* The hold this daemon has for an owner field, whoever's call asks. */
static struct hold *hold_of_field(struct lock *lock, const char *field,
                                  size_t len)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &lock->holds) {
        struct hold *h = list_entry(pos, struct hold, lock_link);

        if (h->field_len == len && memcmp(h->field, field, len) == 0)
            return h;
    }
    return NULL;
}

static void on_settle_reply(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;

    if (reply == NULL) { /* still no answer: again when it can be served */
        settle_later(call->lock, call->field, call->field_len);
        call_unref(call);
        return;
    }
    stats.acquires_settled++;
    on_background_reply(arg, reply);
}

static void settle_send(struct unsettled *u)
{
    struct hold *hold = hold_of_field(u->lock, u->field, u->field_len);
    struct lock_call *call;

    if (u->op == LOCK_OP_LEAVE_QUEUE) {
        leave_send(u->lock, u->field, u->field_len);
        return;
    }
    call = call_new(u->lock, LOCK_OP_SETTLE);
    if (call == NULL) {
        log_error("out of memory: '%.*s' is settled by its TTL",
                  (int)u->lock->name_len, u->lock->name);
        return;
    }
    call->state = CALL_FINISHED;
    call->background = true;
    memcpy(call->field, u->field, u->field_len);
    call->field_len = u->field_len;
    call->count = hold != NULL && !hold->lost ? hold->count : 0;
    if (call_send(call, LOCK_OP_SETTLE, 0, on_settle_reply) != 0)
        settle_later(u->lock, u->field, u->field_len);
    call_unref(call);
}

/* Settles every remembered acquire whose key can be served now. */
static void settle_ready(void)
{
    struct list_node *pos, *tmp;
    struct list_node batch;

    /* A send that fails at once remembers its owner again, on the list's
     * tail: take the ready ones off first, so the walk ends. */
    list_init(&batch);
    list_for_each_safe (pos, tmp, &engine.unsettled) {
        struct unsettled *u = list_entry(pos, struct unsettled, link);

        if (engine.backend->key_ready(u->lock->name, u->lock->name_len)) {
            list_remove(&u->link);
            list_push_tail(&batch, &u->link);
        }
    }
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
    struct lock_call *call = arg;
    struct hold *hold = hold_of_field(call->lock, call->field, call->field_len);
    int64_t value = 0;
    enum lock_outcome outcome = call_read(call, LOCK_OP_SETTLE, reply, &value);

    engine.recheck.in_flight--;
    /* A hold released or lost meanwhile needs no check. */
    if (hold != NULL && !hold->lost && reply == NULL) {
        hold->recheck = true; /* when Redis answers again */
        engine.recheck.due++;
    } else if (hold != NULL && !hold->lost && outcome == OUTCOME_VALUE &&
               value == 0) {
        engine.recheck.lost++;
        stats.failover_locks_lost++;
        hold_lost(hold, "not on the new master after a failover");
    } else if (hold != NULL && !hold->lost) {
        engine.recheck.kept++;
        stats.failover_locks_kept++;
        if (hold->watchdog)
            watchdog_start_now(hold);
    }
    if (engine.recheck.due == 0 && engine.recheck.in_flight == 0)
        log_warn("%s: %zu lock(s) kept, %zu lost", engine.recheck.why,
                 engine.recheck.kept, engine.recheck.lost);
    call_unref(call);
}

static void recheck_send(struct hold *hold)
{
    struct lock_call *call = call_new(hold->lock, LOCK_OP_SETTLE);

    if (call == NULL) {
        log_error("out of memory: '%.*s' is checked at its next renewal",
                  (int)hold->lock->name_len, hold->lock->name);
        return;
    }
    call->state = CALL_FINISHED;
    memcpy(call->field, hold->field, hold->field_len);
    call->field_len = hold->field_len;
    call->count = hold->count;
    if (call_send(call, LOCK_OP_SETTLE, 0, on_recheck_reply) == 0) {
        engine.recheck.in_flight++;
    } else {
        hold->recheck = true;
        engine.recheck.due++;
    }
    call_unref(call);
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
            (mark && engine.recheck.affected != NULL &&
             !engine.recheck.affected(h->lock->name, h->lock->name_len)))
            continue;
        if (mark && !h->recheck) {
            h->recheck = true;
            engine.recheck.due++;
        }
        if (engine.backend->key_ready(h->lock->name, h->lock->name_len)) {
            h->recheck = false;
            engine.recheck.due--;
            recheck_send(h);
        }
    }
}

static void recheck_ready(void)
{
    if (engine.recheck.due > 0)
        session_table_foreach(recheck_session, NULL);
}

void lock_engine_recheck(const char *why,
                         bool (*affected)(const char *key, size_t len))
{
    snprintf(engine.recheck.why, sizeof(engine.recheck.why), "%s", why);
    engine.recheck.kept = engine.recheck.lost = 0;
    engine.recheck.affected = affected;
    session_table_foreach(recheck_session, &engine.recheck);
    engine.recheck.affected = NULL;
    if (engine.recheck.due == 0 && engine.recheck.in_flight == 0)
        log_warn("%s: no locks held here", why);
}

/* ---- the session record ---------------------------------------------- */

/* Only a session with a secret has a record: nobody else could prove
 * to a later rlockd that it is the same client. Its holds of a lock or a
 * semaphore are named there; an expirable permit is not (its id is not
 * the client's to give back: it expires within its lease), and a latch's
 * wait holds nothing. */
static bool recording(const struct session *s, const struct lock_kind *kind)
{
    return s->has_secret && lock_kind_recorded(kind);
}

static void record_timer_fired(struct timer *timer);

/* Renews the record every third of the watchdog timeout while the
 * session has a watchdog hold, as the watchdog renews the locks. */
static void record_keep_alive(struct session *s)
{
    if (timer_armed(&s->record_timer))
        return;
    timer_init(&s->record_timer, record_timer_fired);
    if (timer_start(&s->record_timer,
                    timers_now() +
                        (uint64_t)engine.cfg->watchdog_timeout_ms / 3) != 0)
        log_error("out of memory: the record of %s is not renewed", s->id);
}

static void record_timer_fired(struct timer *timer)
{
    struct session *s = list_entry(timer, struct session, record_timer);
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &s->holds) {
        struct hold *h = list_entry(pos, struct hold, session_link);

        if (h->watchdog && !h->lost) {
            session_store_touch(s, engine.cfg->watchdog_timeout_ms);
            record_keep_alive(s);
            return;
        }
    }
}

/* Names a granted hold and its lease in the record. */
static void record_hold(struct hold *h, int64_t ttl_ms)
{
    struct lock *lock = h->lock;

    if (session_store_put(h->session, lock->kind, lock->name, lock->name_len,
                          h->thread_id, false, h->watchdog ? -1 : h->lease_ms,
                          ttl_ms, NULL, NULL) != 0)
        log_warn("the record of %s does not name '%.*s' (Redis unavailable): "
                 "a later rlockd cannot give it back",
                 h->session->id, (int)lock->name_len, lock->name);
    if (h->watchdog)
        record_keep_alive(h->session);
}

static void record_forget(struct session *s, struct lock *lock,
                          uint64_t thread_id)
{
    if (recording(s, lock->kind))
        session_store_forget(s, lock->kind, lock->name, lock->name_len,
                             thread_id);
}

/*
 * A session that ends with on_disconnect = release has its record
 * deleted. Until Redis has answered the DEL its client-id is kept here,
 * and the DEL sent again whenever Redis can be reached; a session of that
 * id starts only once the DEL is on its way, since the record is read
 * after it on the same connection: a client that gave its session up must
 * never get it back.
 */
struct stale_record {
    struct list_node link;
    bool sent;
    size_t len;
    char id[CLIENT_ID_MAX_LEN + 1];
};

static void on_stale_deleted(void *arg, const struct backend_value *reply)
{
    struct stale_record *r = arg;

    r->sent = false;
    if (reply == NULL) /* again when Redis answers */
        return;
    list_remove(&r->link);
    free(r);
}

static void stale_send(struct stale_record *r)
{
    if (session_store_delete(r->id, r->len, on_stale_deleted, r) == 0)
        r->sent = true;
}

static void record_delete(const struct session *s)
{
    struct stale_record *r = calloc(1, sizeof(*r));

    if (r == NULL) {
        log_error("out of memory: the record of %s goes with its TTL", s->id);
        return;
    }
    memcpy(r->id, s->id, s->id_len);
    r->len = s->id_len;
    list_push_tail(&engine.stale_records, &r->link);
    stale_send(r);
}

/* Sends the DELs that could not be sent, or got no answer. */
static void stale_resend(void)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &engine.stale_records) {
        struct stale_record *r = list_entry(pos, struct stale_record, link);

        if (!r->sent)
            stale_send(r);
    }
}

/* Whether a session of id must wait: its old record's DEL cannot be
 * sent yet. */
static bool stale_record_blocks(const char *id, size_t len)
{
    struct list_node *pos, *tmp;

    stale_resend();
    list_for_each_safe (pos, tmp, &engine.stale_records) {
        struct stale_record *r = list_entry(pos, struct stale_record, link);

        if (r->len == len && memcmp(r->id, id, len) == 0 && !r->sent)
            return true;
    }
    return false;
}

/* A new hold of a recording session (none yet, or one lost) is named
 * "pending" in the record before its acquire may run. */
static bool needs_record(const struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);

    return recording(call->session, call->lock->kind) &&
           (hold == NULL || hold->lost);
}

static int record_pending(struct lock_call *call, backend_reply_fn *fn)
{
    struct lock *lock = call->lock;
    int err = session_store_put(
        call->session, lock->kind, lock->name, lock->name_len, call->thread_id,
        true, call->lease_ms, effective_lease(call), fn, call);

    call->session->has_record = true;
    if (err == 0) {
        call->recorded = true;
        call->recorded_ms = timers_now();
    }
    return err;
}

static void call_proceed(struct lock_call *call);

static void on_pending_recorded(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;

    /* A caller that went leaves "pending" to its TTL or the next write. */
    if (call->state != CALL_FINISHED && reply == NULL)
        call_park(call, call_proceed); /* written again, then asked */
    else if (call->state != CALL_FINISHED && reply->type == VALUE_ERROR)
        finish_unavailable(call);
    else if (call->state != CALL_FINISHED)
        call_attempt(call);
    call_unref(call);
}

/*
 * Writes "pending", then the first attempt: at once behind it when the
 * record and the lock share a connection (Redis runs them in order),
 * else once Redis has answered the write.
 */
static void record_then_attempt(struct lock_call *call)
{
    bool ordered = session_store_with_lock(call->session, call->lock->name,
                                           call->lock->name_len);

    if (record_pending(call, ordered ? NULL : on_pending_recorded) != 0) {
        call_park(call, call_proceed);
    } else if (ordered) {
        call_attempt(call);
    } else {
        call->refs++;
        call->state = CALL_ASKING;
    }
}

/* ---- acquire --------------------------------------------------------- */

/*
 * An acquire by an owner whose hold was lost: the owner still believes it
 * holds the lock (a reentrant acquire, or a LOCK that came back after the
 * loss), so the loss is told now, not papered over by taking the lock
 * anew; the hold is forgotten, and the next acquire is a new one.
 */
static void finish_acquire_of_lost(struct lock_call *call, struct hold *hold)
{
    if (hold != NULL) {
        record_forget(call->session, call->lock, call->thread_id);
        hold_drop(hold);
    }
    finish_error(call, REPLY_LOCKLOST,
                 "the lock was lost while held (this acquire did nothing: "
                 "acquire again to take it anew)");
}

static void acquire_found_hold_gone(struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);

    if (hold != NULL) /* else dropped meanwhile: UNLOCK found it gone */
        hold_lost(hold, "a reentrant acquire found it gone");
    finish_acquire_of_lost(call, hold);
}

/* The latencies of a grant: the acquire's, and the hand-off's when a
 * release through this daemon freed the lock for its waiters. */
static void observe_grant(struct lock_call *call)
{
    uint64_t now = timers_now_us();

    histogram_observe(&latency.acquire_seconds, now - call->started_us);
    if (call->lock->freed_us != 0) {
        histogram_observe(&latency.handoff_seconds, now - call->lock->freed_us);
        call->lock->freed_us = 0;
    }
}

/* Answers a grant: a fenced lock's token, an expirable permit's id, or
 * OK; and counts it. */
static void finish_granted(struct lock_call *call)
{
    const struct lock_kind *kind = call->lock->kind;
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

    if (lock->kind->holds == HOLDS_NOTHING) { /* a wait that is over */
        finish_granted(call);
        return;
    }
    if (hold == NULL) /* named by its owner's field, or a permit's id */
        hold = hold_create(lock, call->session, call->thread_id, call->field,
                           call->field_len);
    if (hold == NULL) {
        release_in_background(lock, LOCK_OP_RELEASE, call->field,
                              call->field_len, effective_lease(call));
        finish_error(call, REPLY_ERR, "out of memory");
        return;
    }
    if (hold->lost) {
        /* Lost while this acquire was on its way, which took the lock
         * anew: what it took is freed, and its owner told. */
        settle_later(lock, call->field, call->field_len);
        finish_acquire_of_lost(call, hold);
        settle_ready();
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
    if (recording(call->session, lock->kind) &&
        (call->count == 0 || hold->watchdog != was_watchdog))
        record_hold(hold, effective_lease(call));
    lock->last_grant_ttl_ms = effective_lease(call);
    finish_granted(call);
}

static void acquire_refused(struct lock_call *call, int64_t pttl)
{
    if (engine.shutting_down) { /* nothing would wake it any more */
        finish_shutdown(call);
        return;
    }
    if (call->no_wait != NULL) {
        finish_error(call, REPLY_ERR, call->no_wait);
        return;
    }
    if (call->woken) {
        call_attempt(call);
        return;
    }
    if (timers_now() >= call->deadline_ms) {
        finish_not_granted(call);
        return;
    }
    if (!call_queued(call)) {
        const char *refusal = waiting_refusal(call);

        if (refusal != NULL) {
            finish_error(call, REPLY_LIMIT, refusal);
            return;
        }
        call_enqueue(call);
    }
    if (call_sleep(call, pttl) != 0)
        finish_error(call, REPLY_ERR, "out of memory");
}

static void acquire_unavailable(struct lock_call *call)
{
    if (engine.shutting_down)
        finish_shutdown(call);
    else if (!call_queued(call))
        call_park(call, call_attempt);
    else if (timers_now() >= call->deadline_ms)
        finish_not_granted(call);
    else if (call_sleep(call, UNAVAILABLE_RETRY_MS) != 0)
        finish_error(call, REPLY_ERR, "out of memory");
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
    enum lock_outcome outcome = call_read(call, LOCK_OP_ACQUIRE, reply, &pttl);

    if (outcome == OUTCOME_GRANTED)
        call->token = pttl; /* what a grant's value is */
    if (outcome == OUTCOME_GRANTED && has_tokens(call->lock->kind))
        fence_granted(call->lock, reply, call->token);

    /* No reply: it may have run, or run yet. Its caller's call sends it
     * again; an abandoned one is settled. */
    if (reply == NULL && call->state == CALL_FINISHED)
        settle_later(call->lock, call->field, call->field_len);
    call->resolving = reply == NULL && call->state != CALL_FINISHED;
    if (reply != NULL)
        call->unavailable_since_ms = 0;
    /* A WAIT sent before this acquire was answered before it: one still
     * out was sent behind it. */
    if (call->state != CALL_FINISHED && outcome == OUTCOME_GRANTED &&
        call->syncs_out > 0) {
        call->granted_unsynced = true; /* the WAIT's reply decides */
        if (call->state == CALL_QUEUED_ASKING)
            call->state = CALL_QUEUED;
    } else if (call->state == CALL_FINISHED) {
        /* queued in Redis after its caller left (or maybe, unanswered) */
        call->in_redis_queue =
            outcome != OUTCOME_GRANTED && queues_in_redis(call->lock->kind);
        leave_redis_queue(call);
        if (reply != NULL && outcome == OUTCOME_GRANTED) {
            /* Its caller left while we asked: undone by setting the count
             * this daemon knows, which a settle sent at its leaving (see
             * call_let_go) may have done already. */
            stats.orphan_acquires_undone++;
            settle_later(call->lock, call->field, call->field_len);
            settle_ready();
        }
    } else {
        if (call->state == CALL_QUEUED_ASKING)
            call->state = CALL_QUEUED;
        if (reply == NULL)
            acquire_unavailable(call);
        else if (outcome == OUTCOME_GRANTED)
            acquire_granted(call);
        else if (outcome == OUTCOME_REFUSED)
            acquire_refused(call, pttl);
        else if (outcome == OUTCOME_WRONG_TYPE)
            finish_wrong_type(call, reply);
        else if (outcome == OUTCOME_NOT_OWNER) /* a reentrant one's hold */
            acquire_found_hold_gone(call);
        else
            finish_bad_reply(call, reply);
    }
    call_unref(call);
}

static void acquire_rolled_back(struct lock_call *call)
{
    stats.sync_rollbacks++;
    settle_later(call->lock, call->field, call->field_len);
    settle_ready(); /* on the acquire's connection, before the next try */
    if (++call->sync_attempts < SYNC_ATTEMPTS) {
        call_attempt(call);
        return;
    }
    stats.noreplicas_replies++;
    finish_error(call, REPLY_NOREPLICAS,
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
           timers_now() < call->deadline_ms && !queues_in_redis(lock->kind) &&
           held_here(lock) && !owner_holds(call, lock);
}

static void call_attempt(struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);
    /* The TTL it sets: a reentrant LEASE never shortens a lock the
     * watchdog renews, or it could expire before the next renewal. */
    int64_t ttl = hold != NULL && !hold->lost && hold->watchdog
                      ? engine.cfg->watchdog_timeout_ms
                      : effective_lease(call);

    call->woken = false;
    if (call_yields(call)) {
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
            (uint64_t)effective_lease(call) / 2 &&
        record_pending(call, NULL) != 0) {
        acquire_unavailable(call);
        return;
    }
    if (call_send(call, LOCK_OP_ACQUIRE, ttl, on_acquire_reply) != 0) {
        acquire_unavailable(call);
        return;
    }
    if (call->may_wait && queues_in_redis(call->lock->kind)) {
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
    call->state = call_queued(call) ? CALL_QUEUED_ASKING : CALL_ASKING;
}

/* The watchdog found a waiter's place in Redis's queue gone (a Java
 * grant moved it past its deadline before it was renewed, and a script
 * dropped it): a waiter asleep asks again now, and takes a new place,
 * rather than wait for a message only the queue's head gets. */
static void place_gone(void *owner)
{
    struct lock_call *call = owner;

    if (call->state == CALL_QUEUED)
        wake_one(call);
}

static void call_timer_fired(struct timer *timer)
{
    struct lock_call *call = list_entry(timer, struct lock_call, timer);

    if (list_linked(&call->park_link))
        finish_unavailable(call); /* retry_timeout_ms without Redis */
    else if (timers_now() >= call->deadline_ms)
        finish_not_granted(call);
    else
        call_attempt(call);
}

/* ---- release and queries --------------------------------------------- */

/* A release through this daemon freed lock: its next waiter asks now,
 * and the hand-off's latency runs from here. */
static void lock_freed(struct lock *lock)
{
    note_freed(lock);
    wake(lock, 1);
}

static void on_background_reply(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;
    int64_t value = 0;
    enum lock_outcome outcome = call_read(call, call->op, reply, &value);

    if (outcome == OUTCOME_RELEASED)
        lock_freed(call->lock);
    else if (reply == NULL && call->op == LOCK_OP_LEAVE_QUEUE)
        leave_later(call->lock, call->field, call->field_len);
    else if (reply == NULL && call->background) /* it may not have run */
        settle_later(call->lock, call->field, call->field_len);
    else if (outcome == OUTCOME_BAD_REPLY && call->background)
        log_warn("release of '%.*s' for %.*s failed: %s; it expires by TTL",
                 (int)call->lock->name_len, call->lock->name,
                 (int)call->field_len, call->field,
                 reply->type == VALUE_ERROR ? reply->str : "unexpected reply");
    call_unref(call);
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
        finish_wrong_type(call, reply);
    } else if (outcome == OUTCOME_NOT_OWNER && hold == NULL) {
        finish_error(call, REPLY_NOTOWNER,
                     "the lock is not held by this owner");
    } else if (gone) {
        hold_lost(hold, "UNLOCK found it gone");
        record_forget(call->session, call->lock, call->thread_id);
        hold_drop(hold);
        finish_error(call, REPLY_LOCKLOST,
                     "the lock expired or was deleted while held");
    } else if (outcome == OUTCOME_DECREMENTED) {
        if (hold != NULL && hold->count > call->amount)
            hold->count -= call->amount;
        finish_integer(call, 0);
    } else {
        if (hold != NULL) {
            record_forget(call->session, call->lock, call->thread_id);
            hold_release(hold);
        }
        stats.locks_released++;
        finish_integer(call, 1);
    }
}

static void force_release_replied(struct lock_call *call,
                                  enum lock_outcome outcome, int64_t value)
{
    struct list_node *pos, *tmp;

    if (outcome == OUTCOME_RELEASED) {
        list_for_each_safe (pos, tmp, &call->lock->holds) {
            hold_lost(list_entry(pos, struct hold, lock_link), "FORCEUNLOCK");
        }
        stats.locks_force_released++;
    }
    finish_integer(call, value);
}

static void call_resend(struct lock_call *call);

/* Whether the reply may let this daemon's waiters have what they wait
 * for: a lock freed, permits given back or added, a count set. */
static bool frees_waiters(const struct lock_call *call,
                          enum lock_outcome outcome)
{
    return outcome == OUTCOME_RELEASED ||
           (outcome == OUTCOME_DECREMENTED &&
            call->lock->kind->holds == HOLDS_PERMITS) ||
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
        on_background_reply(arg, reply);
        return;
    }
    if (reply == NULL) {
        /* Sent again once Redis answers: a query changes nothing, and an
         * UNLOCK sent twice releases once (see its script). Whether a
         * FORCEUNLOCK freed the lock cannot be told after the fact. */
        if (call->op == LOCK_OP_FORCE_RELEASE) {
            finish_unavailable(call);
        } else {
            call->resolving = call->op == LOCK_OP_RELEASE;
            call->resend = true;
            call_park(call, call_resend);
        }
        call_unref(call);
        return;
    }
    call->resolving = false;
    call->unavailable_since_ms = 0;
    outcome = call_read(call, call->op, reply, &value);
    if (outcome == OUTCOME_BAD_REPLY)
        finish_bad_reply(call, reply);
    else if (call->op == LOCK_OP_RELEASE)
        release_replied(call, outcome, reply);
    else if (outcome == OUTCOME_WRONG_TYPE)
        finish_wrong_type(call, reply);
    else if (outcome == OUTCOME_RANGE)
        finish_out_of_range(call, value);
    else if (call->op == LOCK_OP_FORCE_RELEASE)
        force_release_replied(call, outcome, value);
    else if (call->op == LOCK_OP_OWNERS)
        finish_owners(call, reply, value);
    else
        finish_integer(call, value);
    if (frees_waiters(call, outcome))
        lock_freed(lock);
    call_unref(call);
}

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
    const struct lock_kind *kind = call->lock->kind;
    const char *name = call->lock->name;
    size_t len = call->lock->name_len;

    if (call->op == LOCK_OP_ACQUIRE && kind->not_while_holding != NULL &&
        owner_holds(call, lock_find(kind->not_while_holding, name, len)))
        return "this owner holds the lock for READ, and a read hold is "
               "never upgraded to WRITE (it would wait for itself): UNLOCK "
               "it first";
    for (size_t k = 0; kind->rlock_hash && k < LOCK_KIND_COUNT; k++) {
        const struct lock_kind *other = lock_kinds[k];

        if (other != kind && other->rlock_hash &&
            owner_holds(call, lock_find(other, name, len))) {
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

    if (call->lock->kind->holds != HOLDS_PERMITS ||
        (hold != NULL && hold->lost) || call->amount <= held)
        return NULL;
    snprintf(why, sizeof(why),
             "this client-id holds %lld permit(s) of the semaphore, not %lld",
             (long long)(held > 0 ? held : 0), (long long)call->amount);
    return why;
}

/* Sends a query or UNLOCK, the first time or again. */
static void call_resend(struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);

    call->state = CALL_ASKING;
    if (call_send(call, call->op,
                  hold ? hold->lease_ms : engine.cfg->watchdog_timeout_ms,
                  on_command_reply) != 0)
        call_park(call, call_resend);
}

/*
 * An UNLOCK sent that frees the lock (its hold's last count, and holds
 * are one owner's at a time) while a waiter of this daemon heads the
 * lock's queue: the head asks now, right behind it, rather than when the
 * reply comes. Both go to Redis on one connection (the key's) in one
 * write, and Redis runs them back to back, before any client the release
 * woke can ask: the lock passes in one round trip instead of two, and the
 * holder's reply and the waiter's grant come back in one read and leave
 * in the same loop turn. If the release did not free it after all, the
 * acquire is refused and the head sleeps again. The release still
 * publishes, so waiters elsewhere (another rlockd, a Java client) wake
 * as ever; after max_handoffs_in_a_row hand-offs one release goes alone
 * and leaves the lock free for them to race for, as a non-fair lock
 * allows. A fair lock's script grants only Redis's queue head, so its
 * order holds whatever asks.
 */
static void hand_off(struct lock_call *release, const struct hold *hold)
{
    struct lock *lock = release->lock;
    struct lock_call *head = queue_head(lock);

    if (!one_owner_at_a_time(lock->kind) || hold == NULL || hold->lost ||
        release->count != release->amount || release->state != CALL_ASKING ||
        list_linked(&release->park_link))
        return;
    if (head == NULL || head->state != CALL_QUEUED ||
        lock->handoffs >= (unsigned)engine.cfg->max_handoffs_in_a_row) {
        lock->handoffs = 0;
        return;
    }
    lock->handoffs++;
    stats.lock_handoffs++;
    note_freed(lock);
    wake_one(head);
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
         call->lock->kind == &lock_kind_rlock && k <= LOCK_KIND_FENCED; k++) {
        struct lock *other =
            lock_find(lock_kinds[k], call->lock->name, call->lock->name_len);

        hold = other ? hold_find(other, call->session, call->thread_id) : NULL;
        if (hold != NULL && !hold->lost)
            return true;
    }
    return false;
}

/* Runs a started call (again, when it had to wait for Redis first). */
static void call_proceed(struct lock_call *call)
{
    const char *refusal;
    struct hold *hold;

    hold = hold_find(call->lock, call->session, call->thread_id);
    if ((call->op == LOCK_OP_IS_HELD || call->op == LOCK_OP_HOLD_COUNT) &&
        !hold_to_query(call, hold)) {
        /* No hold of this session, whatever field Redis may still have
         * under its owner's name from before: none it will re-enter. */
        finish_integer(call, 0);
    } else if (call->op == LOCK_OP_ACQUIRE && hold != NULL && hold->lost) {
        finish_acquire_of_lost(call, hold);
    } else if (!engine.backend->key_ready(call->lock->name,
                                          call->lock->name_len)) {
        call_park(call, call_proceed);
    } else if ((call->op == LOCK_OP_ACQUIRE || call->op == LOCK_OP_RELEASE) &&
               (refusal = kind_refusal(call)) != NULL) {
        finish_error(call, REPLY_ERR, refusal);
    } else if (call->op == LOCK_OP_RELEASE &&
               (refusal = permits_refusal(call, hold)) != NULL) {
        finish_error(call, REPLY_NOTOWNER, refusal);
    } else if (call->op == LOCK_OP_ACQUIRE) {
        refusal = hold_refusal(call);
        if (refusal != NULL)
            finish_error(call, REPLY_LIMIT, refusal);
        else if (needs_record(call))
            record_then_attempt(call);
        else
            call_attempt(call);
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
        call_resend(call);
        if (call->op == LOCK_OP_RELEASE)
            hand_off(call, hold);
    }
}

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

    if (call->lock->kind->holds != HOLDS_PERMIT_IDS || req->permit_id == NULL) {
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
    hold = hold_of_field(call->lock, call->field, call->field_len);
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
    call->started_us = timers_now_us();
    /* A lock's acquire and release take one; a count's value is as it is. */
    call->amount = (call->op == LOCK_OP_ACQUIRE || call->op == LOCK_OP_RELEASE)
                       ? (req->amount > 0 ? req->amount : 1)
                       : req->amount;
    call->refs++; /* ours, so that a call finished at once is still here */
    if (req->kind->ops[call->op].build == NULL) {
        finish_error(call, REPLY_ERR, "not a command for this kind");
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
        finish_error(call, REPLY_ERR, why);
}

void lock_engine_abandon(struct lock_call *call)
{
    if (call_queued(call))
        call_dequeue(call, false);
    call_let_go(call);
    timer_stop(&call->timer);
    call->state = CALL_FINISHED;
    call->session = NULL;
    call->done = NULL;
    call_unref(call);
}

/* ---- sessions --------------------------------------------------------- */

/* A join that reads the client-id's record before it answers. */
struct lock_join {
    struct session *session; /* new, resuming, one connection counted */
    lock_join_fn *done;      /* NULL: its caller went */
    void *ctx;
    unsigned waiting; /* Redis replies still to come */
    int err;          /* the first failure */
    unsigned resumed, lost;
    bool resume;         /* no record to resume: -ENOENT */
    struct timer start;  /* the record is read from the loop, not the join */
    uint64_t give_up_ms; /* Redis unreadable until then: -EAGAIN */
};

int lock_engine_join_new(const char *id, size_t len, struct session **out)
{
    int err = session_join(id, len, NULL, 0, out);

    return err < 0 ? err : 0;
}

/* Ends a join: gives the session to its caller, or to nobody. */
static void join_end(struct lock_join *j, int err)
{
    struct session *s = j->session;
    struct list_node *pos, *tmp;

    timer_stop(&j->start);
    s->resuming = false;
    if (err != 0 || j->done == NULL) {
        /* Not resumed after all: the record stays for the next try. */
        list_for_each_safe (pos, tmp, &s->holds) {
            hold_release(list_entry(pos, struct hold, session_link));
        }
        session_free(s);
        if (j->done != NULL)
            j->done(j->ctx, NULL, err);
        free(j);
        return;
    }
    if (s->hold_count > 0) {
        stats.sessions_resumed++;
        log_info("client %s resumed its session: %u lock(s) held, %u lost",
                 s->id, j->resumed, j->lost);
        record_timer_fired(&s->record_timer); /* renews it if it must */
    }
    j->done(j->ctx, s, 0);
    free(j);
}

/* A hold the record names, with the count Redis has for its owner. */
static void resume_hold(struct lock_join *j, struct lock_call *call,
                        int64_t count)
{
    struct session *s = j->session;
    struct hold *hold;

    if (count == 0 && call->record_pending) { /* the acquire never ran */
        record_forget(s, call->lock, call->thread_id);
        return;
    }
    hold = hold_create(call->lock, s, call->thread_id, call->field,
                       call->field_len);
    if (hold == NULL) {
        j->err = -ENOMEM;
        return;
    }
    hold->count = count;
    hold->watchdog = call->lease_ms < 0;
    hold->lease_ms =
        hold->watchdog ? engine.cfg->watchdog_timeout_ms : call->lease_ms;
    if (count > 0 && !call->record_pending) {
        j->resumed++;
        if (hold->watchdog)
            watchdog_start_now(hold);
        return;
    }
    /* Gone; or taken by an acquire whose client may never have been
     * told: either way lost, and told at its UNLOCK; one that is still
     * in Redis is freed. */
    j->lost++;
    hold_mark_lost(hold, count > 0 ? "its acquire was cut short by a restart"
                                   : "it was gone when its session resumed");
    if (count > 0) {
        settle_later(call->lock, call->field, call->field_len);
        settle_ready();
    }
}

static void on_resume_count(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;
    struct lock_join *j = call->ctx;
    int64_t count = 0;

    if (call_read(call, LOCK_OP_HOLD_COUNT, reply, &count) != OUTCOME_VALUE)
        j->err = -EAGAIN;
    else if (j->err == 0)
        resume_hold(j, call, count);
    call_unref(call);
    if (--j->waiting == 0)
        join_end(j, j->err);
}

/* Asks Redis for the count of the hold one record field names. */
static void resume_ask(struct lock_join *j, const struct session_entry *e)
{
    struct lock *lock = lock_ref(e->kind, e->key, e->key_len);
    struct lock_call *call = lock ? call_new(lock, LOCK_OP_HOLD_COUNT) : NULL;

    if (lock != NULL)
        lock_unref(lock);
    if (call == NULL) {
        j->err = -ENOMEM;
        return;
    }
    call->state = CALL_FINISHED;
    call->ctx = j;
    call->thread_id = e->thread_id;
    call->lease_ms = e->lease_ms;
    call->record_pending = e->pending;
    call->field_len = owner_field(call->field, call->lock->kind, j->session->id,
                                  j->session->id_len, e->thread_id);
    if (call_send(call, LOCK_OP_HOLD_COUNT, 0, on_resume_count) == 0)
        j->waiting++;
    else
        j->err = -EAGAIN;
    call_unref(call);
}

/* Reads the record again soon, while retry_timeout_ms has not passed
 * since the join began: true if it will. */
static bool join_read_later(struct lock_join *j)
{
    uint64_t at = timers_now() + UNAVAILABLE_RETRY_MS;

    return at < j->give_up_ms && timer_start(&j->start, at) == 0;
}

/* The record: refused when rlockd did not write it, else its fields
 * proved by the secret and each hold asked for. */
static void on_record(void *arg, const struct backend_value *reply)
{
    static const char secret[] = "secret";
    const struct backend_value *fields = NULL;
    struct lock_join *j = arg;
    struct session_entry e;
    bool proved = false;
    char why[SESSION_STORE_KEY_SIZE + 128];
    size_t i;
    int err;

    j->waiting--;
    if (reply == NULL && j->done != NULL && join_read_later(j))
        return;
    err = reply ? session_store_check(j->session, reply, &fields, why,
                                      sizeof(why))
                : -EAGAIN;
    if (err == -EBADMSG)
        record_keys_foreign(why);
    else if (err != 0 && reply != NULL)
        log_warn("the record of %s cannot be read: %s", j->session->id,
                 reply->type == VALUE_ERROR ? reply->str : "not a record");
    if (err != 0) {
        join_end(j, err);
        return;
    }
    for (i = 0; i < fields->elements; i += 2)
        if (fields->element[i].len == sizeof(secret) - 1 &&
            memcmp(fields->element[i].str, secret, sizeof(secret) - 1) == 0)
            proved = session_store_secret_matches(j->session,
                                                  fields->element[i + 1].str,
                                                  fields->element[i + 1].len);
    if (fields->elements > 0 && !proved) {
        join_end(j, -EPERM);
        return;
    }
    if (fields->elements == 0 && j->resume) {
        join_end(j, -ENOENT);
        return;
    }
    j->session->has_record = fields->elements > 0;
    j->waiting++; /* ours, while asking */
    for (i = 0; i < fields->elements && j->err == 0; i += 2) {
        const struct backend_value *f = &fields->element[i], *v = f + 1;

        if (session_store_entry(f->str, f->len, v->str, v->len, &e) == 0)
            resume_ask(j, &e);
    }
    if (--j->waiting == 0)
        join_end(j, j->err);
}

/* Reads the record; Redis unreachable: again, within retry_timeout_ms,
 * as for every command that needs it. */
static void join_start_fired(struct timer *timer)
{
    struct lock_join *j = list_entry(timer, struct lock_join, start);

    if (j->done == NULL)
        join_end(j, -ECANCELED);
    else if (session_store_read(j->session, on_record, j) == 0)
        j->waiting++;
    else if (!join_read_later(j))
        join_end(j, -EAGAIN);
}

struct lock_join *lock_engine_join(const char *id, size_t len,
                                   const char *secret, size_t secret_len,
                                   bool resume, lock_join_fn *done, void *ctx)
{
    struct session *s;
    int created;
    struct lock_join *j;

    if (stale_record_blocks(id, len)) { /* Redis cannot be told yet */
        done(ctx, NULL, -EAGAIN);
        return NULL;
    }
    created = session_join(id, len, secret, secret_len, &s);
    if (created < 0 || (created == 0 && s->resuming)) {
        if (created == 0)
            s->connections--; /* only its first connection waits */
        done(ctx, NULL, created < 0 ? created : -EAGAIN);
        return NULL;
    }
    if (created == 0) {
        done(ctx, s, 0);
        return NULL;
    }
    j = calloc(1, sizeof(*j));
    s->resuming = true;
    if (j != NULL) {
        j->session = s;
        j->done = done;
        j->ctx = ctx;
        j->resume = resume;
        j->give_up_ms = timers_now() + (uint64_t)engine.cfg->retry_timeout_ms;
        timer_init(&j->start, join_start_fired);
    }
    /* The read goes from the timer, so done never runs in here. */
    if (j == NULL || timer_start(&j->start, timers_now()) != 0) {
        free(j);
        session_free(s);
        done(ctx, NULL, -ENOMEM);
        return NULL;
    }
    return j;
}

void lock_engine_join_abandon(struct lock_join *j)
{
    j->done = NULL;
    if (j->waiting == 0) /* not read yet: nothing will come */
        join_end(j, -ECANCELED);
}

void lock_engine_leave(struct session *s)
{
    struct list_node *pos, *tmp;
    bool keep =
        engine.shutting_down && engine.cfg->on_shutdown == ON_SHUTDOWN_KEEP;
    bool release = !keep && engine.cfg->on_disconnect == ON_DISCONNECT_RELEASE;

    if (--s->connections > 0)
        return;
    if (s->hold_count > 0)
        log_info("client %s gone: %s its %zu lock(s)", s->id,
                 keep      ? "leaving to a later rlockd"
                 : release ? "releasing"
                           : "letting expire",
                 s->hold_count);
    list_for_each_safe (pos, tmp, &s->holds) {
        struct hold *h = list_entry(pos, struct hold, session_link);

        if (release && !h->lost) {
            stats.locks_released_on_disconnect++;
            release_in_background(h->lock, LOCK_OP_RELEASE_OWNER, h->field,
                                  h->field_len, 0);
        }
        hold_release(h);
    }
    if (release && s->has_record)
        record_delete(s);
    timer_stop(&s->record_timer);
    session_free(s);
}

/* ---- the engine as a whole -------------------------------------------- */

int lock_engine_init(const struct config *cfg, const struct backend *backend,
                     const struct engine_clock *clock)
{
    engine.cfg = cfg;
    engine.backend = backend;
    engine.shutting_down = false;
    list_init(&engine.waiting_locks);
    list_init(&engine.unsettled);
    list_init(&engine.stale_records);
    list_init(&engine.parked);
    memset(&engine.recheck, 0, sizeof(engine.recheck));
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
    if (h->session == NULL) /* released meanwhile: nobody to tell */
        return;
    loss_fn(&(struct lock_loss){
        h->session->id, h->session->id_len, h->lock->kind, h->lock->name,
        h->lock->name_len, h->field, h->field_len,
        h->lock->kind->holds == HOLDS_REENTRANT ? h->thread_id : 0, why});
}

void lock_engine_on_loss(lock_loss_fn *fn)
{
    loss_fn = fn;
    lock_table_on_loss(fn != NULL ? on_hold_lost : NULL);
}

void lock_engine_free(void)
{
    struct list_node *node;

    while ((node = list_first(&engine.unsettled)) != NULL) {
        struct unsettled *u = list_entry(node, struct unsettled, link);

        list_remove(&u->link);
        lock_unref(u->lock);
        free(u);
    }
    while ((node = list_first(&engine.stale_records)) != NULL) {
        list_remove(node);
        free(list_entry(node, struct stale_record, link));
    }
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

    settle_ready(); /* before any waiter's call for the same keys */
    recheck_ready();
    resume_parked();
    stale_resend();
    list_for_each_safe (pos, tmp, &engine.waiting_locks) {
        struct lock *lock = list_entry(pos, struct lock, waiting_link);

        if (engine.backend->key_ready(lock->name, lock->name_len))
            wake(lock, 1);
    }
}

void lock_engine_shutdown(void)
{
    struct list_node *pos, *tmp;
    struct lock_call *head;

    engine.shutting_down = true;
    while ((pos = list_first(&engine.parked)) != NULL)
        finish_shutdown(list_entry(pos, struct lock_call, park_link));
    list_for_each_safe (pos, tmp, &engine.waiting_locks) {
        struct lock *lock = list_entry(pos, struct lock, waiting_link);

        /* Finishing the last waiter may drop the last reference. */
        lock->refs++;
        while ((head = queue_head(lock)) != NULL)
            finish_shutdown(head);
        lock_unref(lock);
    }
}
