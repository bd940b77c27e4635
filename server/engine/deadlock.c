/*
 * deadlock.c - cycles in the wait-for graph of this daemon's owners.
 *
 * An owner is a session's thread (client-id:thread-id). A waiting call
 * of a lock kind waits for every owner that holds, through this daemon,
 * a lock that keeps it out (a reader the writer, a writer every reader
 * and the writer, a plain, FAIR or FENCED lock any holder of the name's
 * hash), and for the owners ahead of it where order matters: a FAIR
 * lock's queue, and the writers a reader yields to. A reentrant acquire
 * never waits, and an owner never waits for itself. Semaphores and
 * latches (their permits are the session's) are not in the graph, nor
 * is a holder this daemon knows only from Redis (Java, another rlockd).
 *
 * The graph is never stored: it is read from the lock table, the queues
 * and each session's waiting calls when a wait begins
 * (deadlock_refuses) or a lock goes to an owner that is waiting
 * (deadlock_after_grant), the moments a cycle of this daemon's calls
 * forms; a new cycle goes through that wait. (A hold that a resumed
 * session brings back after a restart makes no check: a cycle it closes
 * waits, as without detection, until a WAIT or a lease ends it.) A
 * breadth-first walk from the wait marks each waiting call it reaches,
 * so it looks at each at most once, never more than max_waiters, and
 * costs the holds of their locks and their owners' waiting calls. It
 * runs only when a call is about to sleep, never on an uncontended
 * acquire.
 *
 * Owns only the walk's marks on calls. Never: wake, grant or requeue a
 * call, or ask Redis. The one call it acts on, the wait that closes a
 * cycle, it answers -DEADLOCK through call_finish_error, which ends its
 * wait as any refusal does; everything else stays as it was.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/event_ring.h"
#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"

/* The longest cycle named in a reply and the log; longer ends "...". */
#define CYCLE_TEXT_MAX 1024
#define CYCLE_CUT "..."
#define CYCLE_TEXT_LIMIT (CYCLE_TEXT_MAX - sizeof(CYCLE_CUT))

struct walk {
    struct lock_call *start;  /* the wait every new cycle goes through */
    uint64_t id;              /* its mark on the calls it reached */
    struct lock_call *tail;   /* the last of the calls to look at */
    struct lock_call *closer; /* the call whose wait reached start's owner */
    bool closer_behind;
};

static uint64_t walks;

/* The kinds whose owners are one client thread: not a semaphore's or a
 * latch's (their holds are the session's, or nothing). */
static bool kind_in_graph(const struct lock_kind *kind)
{
    return kind->holds == HOLDS_REENTRANT;
}

/* Whether a hold of kind by on a name keeps out a waiter of kind on the
 * same name (read from the kind table: RLock's hash is one lock whatever
 * row holds it; a reader yields to the writer, a writer may not share
 * with readers). */
static bool kept_out_by(const struct lock_kind *kind,
                        const struct lock_kind *by)
{
    return (by == kind && !kind->shared) ||
           (kind->rlock_hash && by->rlock_hash) || by == kind->yields_to ||
           by == kind->not_while_holding;
}

static bool same_owner(const struct lock_call *call, const struct session *s,
                       uint64_t thread_id)
{
    return call->session == s && call->thread_id == thread_id;
}

/* from's wait reaches owner (s, thread_id): start's owner closes a cycle;
 * any other owner's waiting calls not reached yet are looked at later. */
static bool reach(struct walk *w, struct lock_call *from, struct session *s,
                  uint64_t thread_id, bool behind)
{
    struct list_node *pos, *tmp;

    if (same_owner(w->start, s, thread_id)) {
        w->closer = from;
        w->closer_behind = behind;
        return true;
    }
    list_for_each_safe (pos, tmp, &s->waiting) {
        struct lock_call *c = list_entry(pos, struct lock_call, owner_link);

        if (c->thread_id != thread_id || c->walk == w->id ||
            !kind_in_graph(lock_kind_of(c->lock)))
            continue;
        c->walk = w->id;
        c->walk_from = from;
        c->walk_behind = behind;
        c->walk_next = NULL;
        w->tail->walk_next = c;
        w->tail = c;
    }
    return false;
}

/* The owners holding, through this daemon, a lock that keeps c out. */
static bool follow_holders(struct walk *w, struct lock_call *c)
{
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++) {
        struct lock *lock;
        struct hold *h, *next;

        if (!kept_out_by(lock_kind_of(c->lock), lock_kinds[k]) ||
            (lock = lock_find(lock_kinds[k], c->lock->name,
                              c->lock->name_len)) == NULL)
            continue;
        lock_for_each_hold (h, next, lock) {
            if (h->lost || h->count <= h->releasing ||
                same_owner(c, h->session, h->thread_id))
                continue;
            if (reach(w, c, h->session, h->thread_id, false))
                return true;
        }
    }
    return false;
}

/* The owners of lock's waiters ahead of c (before it in the queue, and
 * arrived before it). */
static bool follow_ahead(struct walk *w, struct lock_call *c, struct lock *lock)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &lock_waiters(lock)->head) {
        struct lock_call *q = list_entry(pos, struct lock_call, queue_link);

        if (q == c)
            break;
        if (q->arrival < c->arrival &&
            !same_owner(c, q->session, q->thread_id) &&
            reach(w, c, q->session, q->thread_id, true))
            return true;
    }
    return false;
}

/* Every owner c waits for; true when one is start's owner. */
static bool follow(struct walk *w, struct lock_call *c)
{
    const struct lock_kind *kind = lock_kind_of(c->lock);

    if (follow_holders(w, c))
        return true;
    if (kind_queues_in_redis(kind) && follow_ahead(w, c, c->lock))
        return true;
    return waiters_yields(c) &&
           follow_ahead(
               w, c,
               lock_find(kind->yields_to, c->lock->name, c->lock->name_len));
}

/* Breadth first from start: the shortest cycle through its wait. */
static bool walk_finds_cycle(struct walk *w)
{
    w->id = ++walks;
    w->start->walk = w->id;
    w->start->walk_from = NULL;
    w->start->walk_next = NULL;
    w->tail = w->start;
    for (struct lock_call *c = w->start; c != NULL; c = c->walk_next)
        if (follow(w, c))
            return true;
    return false;
}

/* Appends to text (CYCLE_TEXT_MAX bytes) while it fits in CYCLE_TEXT_LIMIT
 * characters, then ends it with CYCLE_CUT; *len past the limit: cut. */
static void append(char *text, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *text, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*len > CYCLE_TEXT_LIMIT)
        return;
    va_start(ap, fmt);
    n = vsnprintf(text + *len, CYCLE_TEXT_LIMIT + 1 - *len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n <= CYCLE_TEXT_LIMIT - *len) {
        *len += (size_t)n;
        return;
    }
    memcpy(text + CYCLE_TEXT_LIMIT, CYCLE_CUT, sizeof(CYCLE_CUT));
    *len = CYCLE_TEXT_MAX;
}

static void append_owner(char *text, size_t *len, const struct lock_call *c)
{
    append(text, len, "%.*s:%" PRIu64, (int)c->session->id_len, c->session->id,
           c->thread_id);
}

/*
 * "a:1 waits for orders:42 held by b:1, b:1 waits for stock:7 held by
 * a:1": the path from start to the closer, each call's wait and the
 * owner it leads to ("behind" for one ahead in a queue). The walk's
 * back links are turned round into walk_next, which it no longer needs.
 */
static void describe(struct walk *w, char *text)
{
    struct lock_call *prev = NULL, *c = w->closer, *next;
    size_t len = 0;

    text[0] = '\0';
    for (; c != NULL; prev = c, c = next) {
        next = c->walk_from;
        c->walk_next = prev;
    }
    for (c = w->start; c != NULL; c = c->walk_next) {
        const struct lock_call *to = c->walk_next ? c->walk_next : w->start;
        bool behind =
            c->walk_next ? c->walk_next->walk_behind : w->closer_behind;

        if (c != w->start)
            append(text, &len, ", ");
        append_owner(text, &len, c);
        append(text, &len, " waits for %.*s", (int)c->lock->name_len,
               c->lock->name);
        if (lock_kind_of(c->lock)->word[0] != '\0')
            append(text, &len, " (%s)", lock_kind_of(c->lock)->word);
        append(text, &len, behind ? " behind " : " held by ");
        append_owner(text, &len, to);
    }
}

/*
 * A deadlock found: counted, logged at WARN with its cycle. The one
 * place that tells of one: a list of recent events (the status page's)
 * is fed from here, in one line.
 */
static void deadlock_report(const char *cycle)
{
    stats.deadlocks_detected++;
    log_warn("deadlock refused: %s", cycle);
    event_ring_push(EVENT_DEADLOCK, "%s", cycle);
}

/*
 * call has just started waiting. If its wait closes a cycle, it is
 * answered -DEADLOCK with the cycle (its wait ends as any refusal's, out
 * of its queue); true then, and the call may be gone.
 */
bool deadlock_refuses(struct lock_call *call)
{
    static char cycle[CYCLE_TEXT_MAX];
    struct walk w = {.start = call};

    if (!engine.cfg->deadlock_detection ||
        !kind_in_graph(lock_kind_of(call->lock)) || !walk_finds_cycle(&w))
        return false;
    describe(&w, cycle);
    deadlock_report(cycle);
    call_finish_error(call, REPLY_DEADLOCK, cycle);
    return true;
}

/*
 * Owner (session, thread_id) was just granted a lock of kind: those who
 * wait for that lock now wait for it, and if it waits itself, a cycle
 * may have closed through its wait, which is refused. One at most: an
 * owner waits for one thing at a time, and a refusal can change the
 * session's waiting list.
 */
void deadlock_after_grant(const struct lock_kind *kind, struct session *session,
                          uint64_t thread_id)
{
    struct list_node *pos, *tmp;

    if (!engine.cfg->deadlock_detection || !kind_in_graph(kind))
        return;
    list_for_each_safe (pos, tmp, &session->waiting) {
        struct lock_call *c = list_entry(pos, struct lock_call, owner_link);

        if (c->thread_id == thread_id && deadlock_refuses(c))
            return;
    }
}
