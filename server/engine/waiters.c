/*
 * waiters.c - where waiters wake up.
 *
 * A refused acquire queues on its lock (FIFO) and listens on the kind's
 * channel. It sleeps until a message, a release through this daemon,
 * its deadline, or the TTL the head may have to wait out. Readers yield
 * to writers that asked before them. An UNLOCK that frees a lock hands
 * it to the head in the same write (the hand-off).
 *
 * Never: send a request itself. It wakes a call, and acquire.c asks.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"

struct lock_call *waiters_head(struct lock *lock)
{
    struct list_node *node = waiter_queue_head(lock_waiters(lock));
    return node ? list_entry(node, struct lock_call, queue_link) : NULL;
}

/* The hand-off's start: a release through this daemon frees the lock
 * while waiters are queued (kept until one is granted). */
static void note_freed(struct lock *lock)
{
    if (lock->waiting != NULL && lock->waiting->freed_us == 0)
        lock->waiting->freed_us = timers_now_us();
}

/*
 * Whether a hold of this daemon keeps the lock taken in Redis now (a lock
 * one owner at a time holds): a message that it was freed then tells of
 * an older release, most often the one that handed it to that hold, and
 * a waiter woken by it would only be refused. (Were the hold lost behind
 * this daemon's back, the head still looks when the TTL runs out.)
 */
bool waiters_held_here(const struct lock *lock)
{
    const struct hold *h, *next;

    if (!kind_one_owner_at_a_time(lock_kind_of(lock)))
        return false;
    lock_for_each_hold (h, next, lock) {
        if (!h->lost && h->count > h->releasing)
            return true;
    }
    return false;
}

static void on_lock_message(struct backend_listener *listener,
                            const char *payload, size_t len)
{
    struct lock *lock =
        list_entry(listener, struct lock_waiting, listener)->lock;

    /* No payload: just subscribed, and a message sent before that was
     * missed, so the head looks again, unless a hold here keeps it. */
    if (!waiters_held_here(lock))
        waiters_wake(
            lock, payload ? lock_kind_of(lock)->on_message(payload, len) : 1);
}

/* A message on a waiter's own channel (a fair lock's head): it asks. */
static void on_waiter_message(struct backend_listener *listener,
                              const char *payload, size_t len)
{
    struct lock_call *call = list_entry(listener, struct lock_call, listener);

    (void)payload;
    (void)len;
    if (call_queued(call) && !engine.shutting_down)
        waiters_wake_one(call);
}

/* A waiter of a kind that signals waiters one by one listens on
 * "<channel>:<its field>", as Redisson's fair lock's do. */
static int listen_as_waiter(struct lock_call *call)
{
    struct lock *lock = call->lock;
    size_t len = lock_channel_len(lock);
    char channel[len + 1 + call->field_len];

    lock_channel(lock, channel);
    channel[len] = ':';
    memcpy(channel + len + 1, call->field, call->field_len);
    call->listener.on_message = on_waiter_message;
    return engine.backend->listen(&call->listener, channel, sizeof(channel));
}

/* Why call may not wait, or NULL when it may. */
const char *waiters_refusal(const struct lock_call *call)
{
    if (stats.waiting_clients >= (uint64_t)engine.cfg->max_waiters)
        return "too many waiting clients (max_waiters)";
    if (call->session->waiting_count >=
        (size_t)engine.cfg->max_waiters_per_client)
        return "too many waiting calls of this client-id "
               "(max_waiters_per_client)";
    return NULL;
}

int waiters_enqueue(struct lock_call *call)
{
    struct lock *lock = call->lock;
    char channel[lock_channel_len(lock)];
    struct lock_waiting *w;

    if (lock->waiting == NULL && lock_waiting_start(lock) != 0)
        return -ENOMEM;
    w = lock->waiting;
    waiter_queue_push_tail(&w->waiters, &call->queue_link);
    call->queued_us = timers_now_us();
    call_set_state(call, CALL_QUEUED);
    call->session->waiting_count++;
    list_push_tail(&call->session->waiting, &call->owner_link);
    stats.waiting_clients++;
    if (lock_kind_of(lock)->channel_per_waiter) {
        if (listen_as_waiter(call) != 0)
            log_warn("cannot listen for unlocks (out of memory); polling by "
                     "TTL");
        if (w->waiters.length == 1)
            list_push_tail(&engine.waiting_locks, &w->waiting_link);
        return 0;
    }
    if (w->waiters.length > 1)
        return 0;
    list_push_tail(&engine.waiting_locks, &w->waiting_link);
    w->listener.on_message = on_lock_message;
    if (engine.backend->listen(&w->listener, channel,
                               lock_channel(lock, channel)) != 0)
        log_warn("cannot listen for unlocks (out of memory); polling by TTL");
    return 0;
}

/* Sleeps until the deadline or, for the head, until the lock's TTL may
 * have run out (pttl < 0: no TTL known, only a message wakes it). */
int waiters_sleep(struct lock_call *call, int64_t pttl)
{
    uint64_t now = timers_now(), wake_ms = call->deadline_ms;

    if (pttl >= 0 &&
        waiter_queue_is_head(lock_waiters(call->lock), &call->queue_link) &&
        now + (uint64_t)pttl < wake_ms)
        wake_ms = now + (uint64_t)pttl;
    if (wake_ms == NO_DEADLINE) {
        timer_stop(&call->timer);
        return 0;
    }
    return timer_start(&call->timer, wake_ms);
}

/* The head waiter of lock left: the waiters of kinds that yield to it
 * (readers behind writers) look again, and those that arrived before
 * every writer still waiting ask Redis. */
static void wake_yielding(struct lock *lock)
{
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++) {
        struct lock *other;

        if (lock_kinds[k]->yields_to == lock_kind_of(lock) &&
            (other = lock_find(lock_kinds[k], lock->name, lock->name_len)))
            waiters_wake(other, LOCK_KIND_WAKE_ALL);
    }
}

/* Leaves the queue; granted says whether the lock was just taken. */
void waiters_dequeue(struct lock_call *call, bool granted)
{
    struct lock *lock = call->lock;
    struct lock_waiting *w = lock->waiting;
    bool was_head = waiter_queue_is_head(&w->waiters, &call->queue_link);
    struct lock_call *head;

    waiter_queue_remove(&w->waiters, &call->queue_link);
    histogram_observe(&latency.wait_seconds, timers_now_us() - call->queued_us);
    call->session->waiting_count--;
    list_remove(&call->owner_link);
    stats.waiting_clients--;
    if (lock_kind_of(lock)->channel_per_waiter)
        engine.backend->unlisten(&call->listener);
    head = waiters_head(lock);
    if (was_head) /* the waiters that yielded to it may go on */
        wake_yielding(lock);
    if (head == NULL) { /* nobody left to hand it to */
        list_remove(&w->waiting_link);
        if (!lock_kind_of(lock)->channel_per_waiter)
            engine.backend->unlisten(&w->listener);
        lock_waiting_end(lock);
        return;
    }
    if (!was_head || head->state != CALL_QUEUED)
        return;
    /* The new head: if the lock was just granted it stays taken for at
     * most the TTL we set (unless holds are shared: then it may share it
     * now); otherwise the old head may have been woken for a free lock it
     * no longer wants, so the new head looks now. */
    if (!granted || lock_kind_of(lock)->shared)
        waiters_wake(lock, 1);
    else if (waiters_sleep(head, lock->last_grant_ttl_ms) != 0)
        log_error("out of memory: waiter on '%.*s' wakes only on a message",
                  (int)lock->name_len, lock->name);
}

/*
 * Whether an acquire queues behind this daemon's waiters of the kind its
 * own yields to, without asking Redis: a reader behind a writer that
 * asked before it. Not if the owner holds either lock already: a reader
 * re-entering, or a writer downgrading, would wait on a writer that waits
 * for it.
 */
bool waiters_yields(const struct lock_call *call)
{
    const struct lock_kind *to = lock_kind_of(call->lock)->yields_to;
    struct lock *other;
    struct lock_call *first;

    if (to == NULL)
        return false;
    other = lock_find(to, call->lock->name, call->lock->name_len);
    first = other != NULL ? waiters_head(other) : NULL;
    return first != NULL && first->arrival < call->arrival &&
           !call_owner_holds(call, call->lock) &&
           !call_owner_holds(call, other);
}

void waiters_wake_one(struct lock_call *call)
{
    if (call->state == CALL_QUEUED_ASKING) {
        call->woken = true;
    } else {
        timer_stop(&call->timer);
        acquire_attempt(call);
    }
}

/*
 * Lets up to count waiters, from the head, ask Redis again. Waking one
 * can finish it and so change the queue (and wake another): the next
 * call is held by a reference across, and the walk stops if it left.
 */
void waiters_wake(struct lock *lock, size_t count)
{
    struct lock_call *call = waiters_head(lock), *next;

    if (engine.shutting_down)
        return;
    for (; call != NULL && count > 0; call = next, count--) {
        struct list_node *node = call->queue_link.next;

        next = count > 1 && node != &lock_waiters(lock)->head
                   ? list_entry(node, struct lock_call, queue_link)
                   : NULL;
        if (next != NULL)
            next->refs++;
        waiters_wake_one(call);
        if (next != NULL) {
            bool still_queued = call_queued(next);

            call_unref(next);
            if (!still_queued)
                break;
        }
    }
}

/* A release through this daemon freed lock: its next waiter asks now,
 * and the hand-off's latency runs from here. */
void waiters_freed(struct lock *lock)
{
    note_freed(lock);
    waiters_wake(lock, 1);
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
void waiters_hand_off(struct lock_call *release, const struct hold *hold)
{
    struct lock *lock = release->lock;
    struct lock_call *head = waiters_head(lock);

    if (!kind_one_owner_at_a_time(lock_kind_of(lock)) || hold == NULL ||
        hold->lost || release->count != release->amount ||
        release->state != CALL_ASKING)
        return;
    if (head == NULL || head->state != CALL_QUEUED ||
        lock->handoffs >= (unsigned)engine.cfg->max_handoffs_in_a_row) {
        lock->handoffs = 0;
        return;
    }
    lock->handoffs++;
    stats.lock_handoffs++;
    note_freed(lock);
    waiters_wake_one(head);
}
