/*
 * holds.c - the record of what the client holds, as far as it knows: a
 * thread's locks, the client's permits, its expirable permits. A lost
 * connection marks holds suspect. A session rlockd could not give back
 * marks them lost. The next acquisition or release of a lost hold answers
 * RLOCK_ELOCKLOST, and forgets it.
 *
 * Never does I/O. It holds the client's mutex, and a thread blocked in
 * LOCK must not delay another.
 */
#include "rlock_int.h"

#include <stdlib.h>
#include <string.h>

/* Whether rlockd's session record names the list's holds, so that they
 * come back with a resumed session (docs/protocol.md, section 12). An
 * expirable permit is not in it: a client that holds only those has no
 * session to resume, and one that had none to resume may still give
 * such a permit back while its lease lasts; its release tells. */
static const bool list_in_record[LIST_COUNT] = {
    [LIST_THREAD] = true, [LIST_PERMITS] = true, [LIST_PERMIT_IDS] = false};

void holds_free(struct rlock_hold *h)
{
    while (h != NULL) {
        struct rlock_hold *next = h->next;
        free(h);
        h = next;
    }
}

/* Marks every hold of a list suspect, or lost. */
static void holds_mark(struct rlock_hold *h, bool lost)
{
    for (; h != NULL; h = h->next) {
        h->suspect = true;
        h->lost |= lost;
    }
}

/* Marks the client's own holds (its permits), and those of thread t, or
 * of every thread when t is NULL; lost: those of the session record.
 * Caller holds the mutex. */
void holds_mark_suspect(rlock_client *c, const struct thread_state *t,
                        bool lost)
{
    for (struct thread_state *each = c->threads; each != NULL;
         each = each->next)
        if (t == NULL || each == t)
            holds_mark(each->holds, lost);
    if (t == NULL)
        for (int list = LIST_THREAD + 1; list < LIST_COUNT; list++)
            holds_mark(c->holds[list], lost && list_in_record[list]);
}

/* Whether the client holds anything its session must be resumed for (a
 * thread a lock, or the client permits), as far as it knows. */
bool holds_any(void *ctx)
{
    rlock_client *c = ctx;
    bool any = false;

    pthread_mutex_lock(&c->mutex);
    for (struct thread_state *t = c->threads; t != NULL && !any; t = t->next)
        any = t->holds != NULL;
    for (int list = LIST_THREAD + 1; list < LIST_COUNT && !any; list++)
        any = list_in_record[list] && c->holds[list] != NULL;
    pthread_mutex_unlock(&c->mutex);
    return any;
}

/* rlockd had no session of the client to give back: every lock and
 * permit of the record is lost (an expirable permit is suspect). */
void holds_session_lost(void *ctx)
{
    rlock_client *c = ctx;

    pthread_mutex_lock(&c->mutex);
    holds_mark_suspect(c, NULL, true);
    pthread_mutex_unlock(&c->mutex);
}

/* The id that names the request's hold in its list: an expirable
 * permit's (the one acquired is known only from the reply: spare's),
 * else "". */
static const char *hold_id(const struct request *rq,
                           const struct rlock_hold *spare)
{
    if (spare != NULL)
        return spare->id;
    return rq->permit_id != NULL ? rq->permit_id : "";
}

/* The link to the request's hold in its list (the thread's, or the
 * client's), or to the list's end when it has none. */
static struct rlock_hold **holds_link(rlock_client *c, struct thread_state *t,
                                      const struct request *rq, const char *id)
{
    struct rlock_hold **link = rq->command->list == LIST_THREAD
                                   ? &t->holds
                                   : &c->holds[rq->command->list];

    while (*link != NULL &&
           ((*link)->kind != rq->kind || strcmp((*link)->name, rq->name) != 0 ||
            strcmp((*link)->id, id) != 0))
        link = &(*link)->next;
    return link;
}

static void hold_unlink(struct rlock_hold **link)
{
    struct rlock_hold *h = *link;

    *link = h->next;
    free(h);
}

/*
 * A semaphore's permits, after rlockd's answer to a RELEASE of n of them
 * (the hold is recorded): 1, none held now; 0, some still (at least one,
 * even if the client took fewer than it gave back, as it may when an
 * ACQUIRE's reply was lost); -NOTOWNER of no more than the client took
 * means rlockd no longer has them: lost; of more, it asked too much, and
 * nothing changed.
 */
static int permits_released(struct rlock_hold **link, long long n, int err,
                            long long value)
{
    struct rlock_hold *h = *link;

    if (err == RLOCK_OK && value == 0) {
        h->permits = h->permits > n ? h->permits - n : 1;
        return err;
    }
    if (err == RLOCK_ENOTOWNER && n > h->permits)
        return err;
    if (err == RLOCK_ENOTOWNER)
        err = RLOCK_ELOCKLOST;
    if (err == RLOCK_ELOCKLOST || err == RLOCK_OK)
        hold_unlink(link);
    return err;
}

/*
 * Brings the record in line with what rlockd answered. An acquisition
 * (any value but 0: 1, a fencing token, or a permit's id) adds the hold
 * (spare: allocated before the command went out, so that a lock rlockd
 * granted is never left unrecorded), or adds to its permits; one told the
 * old hold is gone drops it. A release that released it, or that rlockd
 * refused, drops it (a semaphore's: permits_released). A release refused
 * with -NOTOWNER of a hold marked suspect was lost with a connection.
 */
int holds_update(rlock_client *c, struct thread_state *t,
                 const struct request *rq, int err, long long value,
                 struct rlock_hold **spare)
{
    struct rlock_hold **link, *h;

    pthread_mutex_lock(&c->mutex);
    link = holds_link(c, t, rq, hold_id(rq, *spare));
    h = *link;
    if (rq->command->effect == HOLD_ACQUIRE && err == RLOCK_OK && value != 0) {
        if (h == NULL) {
            *link = *spare;
            *spare = NULL;
        } else {
            h->permits += (*spare)->permits;
        }
    } else if (rq->command->effect == HOLD_ACQUIRE && h != NULL &&
               err == RLOCK_ELOCKLOST) {
        hold_unlink(link);
    } else if (rq->command->effect == HOLD_RELEASE && h != NULL &&
               rq->command->list == LIST_PERMITS) {
        err = permits_released(link, rq->amount, err, value);
    } else if (rq->command->effect == HOLD_RELEASE && h != NULL &&
               (err == RLOCK_ENOTOWNER || err == RLOCK_ELOCKLOST ||
                (err == RLOCK_OK && value == 1))) {
        if (err == RLOCK_ENOTOWNER && h->suspect)
            err = RLOCK_ELOCKLOST;
        hold_unlink(link);
    }
    pthread_mutex_unlock(&c->mutex);
    return err;
}

/* Forgets the hold the request names if its session was lost: true
 * then. */
bool holds_take_lost(rlock_client *c, struct thread_state *t,
                     const struct request *rq)
{
    struct rlock_hold **link;
    bool lost;

    pthread_mutex_lock(&c->mutex);
    link = holds_link(c, t, rq, hold_id(rq, NULL));
    lost = *link != NULL && (*link)->lost;
    if (lost)
        hold_unlink(link);
    pthread_mutex_unlock(&c->mutex);
    return lost;
}

/* The record of an acquisition, allocated before it is sent: its permits
 * (the request's amount, for a semaphore) and its name. */
struct rlock_hold *holds_new(const struct request *rq)
{
    struct rlock_hold *h = calloc(1, sizeof *h + strlen(rq->name) + 1);

    if (h == NULL)
        return NULL;
    h->kind = rq->kind;
    h->permits = rq->command->list == LIST_PERMITS ? rq->amount : 0;
    strcpy(h->name, rq->name);
    return h;
}

/* Whether the record names permits of the semaphore the client took;
 * forget: drop them from it (they were lost, and are told once). */
bool holds_permits_recorded(rlock_client *c, const char *name, bool forget)
{
    struct request rq = request_new(CLIENT_CMD_RELEASE, RLOCK_LOCK, name);
    struct rlock_hold **link;
    bool recorded;

    pthread_mutex_lock(&c->mutex);
    link = holds_link(c, NULL, &rq, "");
    recorded = *link != NULL;
    if (recorded && forget)
        hold_unlink(link);
    pthread_mutex_unlock(&c->mutex);
    return recorded;
}
