/*
 * multilock.c - MLOCK and MUNLOCK as a sequence of ordinary RLock
 * acquires and releases (see multilock.h).
 *
 * A multilock moves through one state machine, changed only by
 * set_state. The states that start engine calls (STEP, UNWIND) and the
 * one that answers (FINISH) run from an engine timer armed for now, so
 * an engine done callback only records what happened and moves the
 * state, as lock_engine.h asks. This file holds no lock state of its
 * own: the engine knows every hold, and a client's later UNLOCK,
 * OWNERS or ISHELD sees each lock as one a LOCK took.
 */
#include "front/multilock.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "engine/lock_engine.h"
#include "engine/timer.h"

/* An error's text, kept past the engine's done call; longer is cut. */
#define MULTILOCK_MESSAGE_MAX 256

enum multilock_state {
    MULTILOCK_STEP,      /* the next acquire is due */
    MULTILOCK_ACQUIRING, /* an acquire is in flight */
    MULTILOCK_UNWIND,    /* the locks taken are to be released */
    MULTILOCK_RELEASING, /* releases are in flight */
    MULTILOCK_FINISH,    /* the outcome is due */
};

struct multilock_key {
    struct multilock *owner;
    const char *key;
    size_t len;
};

struct multilock {
    struct timer due; /* armed for now in STEP, UNWIND and FINISH */
    enum multilock_state state;
    enum multilock_op op;
    struct session *session;
    lock_done_fn *done; /* NULL: abandoned */
    void *ctx;
    bool session_kept;      /* abandoned: one more connection of session */
    struct lock_call *call; /* ACQUIRING, while the engine keeps it */
    uint64_t thread_id;
    int64_t wait_ms, lease_ms;
    uint64_t deadline_ms; /* wait_ms > 0: when WAIT runs out */
    const char *no_wait;  /* multilock_stop_waiting's why */
    size_t count;         /* distinct keys, sorted */
    size_t held;          /* keys[0..held) are taken (MUNLOCK: all) */
    size_t releases;      /* in flight, plus one while starting them */
    size_t error_key;     /* MUNLOCK: the failure's key, count if none */
    struct lock_result outcome;
    char message[MULTILOCK_MESSAGE_MAX];
    struct multilock_key keys[];
};

/* The one place the state changes; the states that run from the timer
 * arm it. */
static void set_state(struct multilock *m, enum multilock_state state)
{
    m->state = state;
    if (state == MULTILOCK_STEP || state == MULTILOCK_UNWIND ||
        state == MULTILOCK_FINISH) {
        if (timer_start(&m->due, timers_now()) != 0)
            log_error("multilock: out of memory arming its timer");
    } else {
        timer_stop(&m->due);
    }
}

/* Keeps an engine result as the outcome: its message outlives the
 * engine's done call. */
static void keep_outcome(struct multilock *m, const struct lock_result *r)
{
    m->outcome = (struct lock_result){
        .type = r->type, .integer = r->integer, .error = r->error};
    if (r->type == RESULT_ERROR) {
        snprintf(m->message, sizeof(m->message), "%s", r->message);
        m->outcome.message = m->message;
    }
}

static void on_acquired(void *ctx, const struct lock_result *result)
{
    struct multilock *m = ctx;

    m->call = NULL;
    if (result->type == RESULT_GRANTED) {
        m->held++;
        set_state(m, MULTILOCK_STEP);
        return;
    }
    keep_outcome(m, result);
    set_state(m, MULTILOCK_UNWIND);
}

/* Takes the next lock with what is left of WAIT. With a LEASE and a
 * WAIT, each lease runs to the same instant, WAIT + LEASE after MLOCK
 * began (RedissonMultiLock takes each for twice the WAIT and sets every
 * lease again at the end; the engine sets a lease only at acquire), so
 * the first lock cannot expire while the last is awaited, and each is
 * held at least LEASE after +OK. */
static void step(struct multilock *m)
{
    struct lock_request req;
    struct lock_call *call;

    if (m->held == m->count) {
        m->outcome = (struct lock_result){.type = RESULT_GRANTED};
        set_state(m, MULTILOCK_FINISH);
        return;
    }
    req = (struct lock_request){.kind = lock_kinds[LOCK_KIND_RLOCK],
                                .op = LOCK_REQUEST_ACQUIRE,
                                .name = m->keys[m->held].key,
                                .name_len = m->keys[m->held].len,
                                .thread_id = m->thread_id,
                                .wait_ms = m->wait_ms,
                                .lease_ms = m->lease_ms,
                                .amount = 1};
    if (m->wait_ms > 0) {
        uint64_t now = timers_now();

        req.wait_ms =
            m->deadline_ms > now ? (int64_t)(m->deadline_ms - now) : 0;
        if (m->lease_ms > 0)
            req.lease_ms = m->lease_ms + req.wait_ms;
    }
    set_state(m, MULTILOCK_ACQUIRING);
    call = lock_engine_start(m->session, &req, on_acquired, m);
    if (call == NULL) /* answered already */
        return;
    m->call = call;
    if (m->no_wait != NULL)
        lock_engine_stop_waiting(call, m->no_wait);
}

static void release_done(struct multilock *m)
{
    if (--m->releases == 0)
        set_state(m, MULTILOCK_FINISH);
}

/* A release's answer. MLOCK's unwinding ignores failures, as
 * RedissonMultiLock's unlockInner does; MUNLOCK answers the first in key
 * order once every release has run, as its unlock() throws the first. */
static void on_released(void *ctx, const struct lock_result *result)
{
    struct multilock_key *k = ctx;
    struct multilock *m = k->owner;
    size_t index = (size_t)(k - m->keys);

    if (m->op == MULTILOCK_RELEASE && result->type == RESULT_ERROR &&
        index < m->error_key) {
        m->error_key = index;
        keep_outcome(m, result);
    }
    release_done(m);
}

/* Releases keys[0..held) side by side; the extra count keeps the
 * multilock until every one is started, whatever answers at once. */
static void unwind(struct multilock *m)
{
    size_t held = m->held;

    set_state(m, MULTILOCK_RELEASING);
    m->releases = held + 1;
    m->held = 0;
    for (size_t i = 0; i < held; i++) {
        struct lock_request req = {.kind = lock_kinds[LOCK_KIND_RLOCK],
                                   .op = LOCK_REQUEST_RELEASE,
                                   .name = m->keys[i].key,
                                   .name_len = m->keys[i].len,
                                   .thread_id = m->thread_id,
                                   .amount = 1};

        lock_engine_start(m->session, &req, on_released, &m->keys[i]);
    }
    release_done(m);
}

/* Answers (unless abandoned), gives back the session it kept, and frees
 * the multilock. */
static void finish(struct multilock *m)
{
    if (m->done != NULL)
        m->done(m->ctx, &m->outcome);
    if (m->session_kept)
        lock_engine_leave(m->session);
    free(m);
}

static void on_due(struct timer *t)
{
    struct multilock *m =
        (struct multilock *)((char *)t - offsetof(struct multilock, due));

    switch (m->state) {
    case MULTILOCK_STEP:
        step(m);
        return;
    case MULTILOCK_UNWIND:
        unwind(m);
        return;
    case MULTILOCK_FINISH:
        finish(m);
        return;
    case MULTILOCK_ACQUIRING:
    case MULTILOCK_RELEASING:
        break;
    }
    log_error("multilock: its timer fired in state %d", (int)m->state);
}

/* Bytewise order of keys, a shorter key before the longer one it begins:
 * the same in every rlockd, whatever the topology. */
static int key_order(const void *a, const void *b)
{
    const struct multilock_key *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

    if (c != 0)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* A multilock with each key (prefix + name) copied after its key
 * table, sorted, duplicates dropped; NULL when out of memory. */
static struct multilock *multilock_new(const struct multilock_request *req)
{
    size_t prefix_len = strlen(req->prefix), bytes = 0, kept = 0;
    struct multilock *m;
    char *at;

    for (size_t i = 0; i < req->count; i++)
        bytes += prefix_len + req->name_lens[i];
    m = calloc(1, sizeof(*m) + req->count * sizeof(m->keys[0]) + bytes);
    if (m == NULL)
        return NULL;
    at = (char *)&m->keys[req->count];
    for (size_t i = 0; i < req->count; i++) {
        memcpy(at, req->prefix, prefix_len);
        memcpy(at + prefix_len, req->names[i], req->name_lens[i]);
        m->keys[i] =
            (struct multilock_key){m, at, prefix_len + req->name_lens[i]};
        at += m->keys[i].len;
    }
    qsort(m->keys, req->count, sizeof(m->keys[0]), key_order);
    for (size_t i = 0; i < req->count; i++)
        if (kept == 0 || key_order(&m->keys[kept - 1], &m->keys[i]) != 0)
            m->keys[kept++] = m->keys[i];
    m->count = kept;
    return m;
}

struct multilock *multilock_start(struct session *session,
                                  const struct multilock_request *req,
                                  lock_done_fn *done, void *ctx)
{
    struct multilock *m = multilock_new(req);

    if (m == NULL) {
        done(ctx, &(struct lock_result){.type = RESULT_ERROR,
                                        .error = REPLY_ERR,
                                        .message = "out of memory"});
        return NULL;
    }
    timer_init(&m->due, on_due);
    m->op = req->op;
    m->session = session;
    m->done = done;
    m->ctx = ctx;
    m->thread_id = req->thread_id;
    m->wait_ms = req->wait_ms;
    m->lease_ms = req->lease_ms;
    m->deadline_ms =
        req->wait_ms > 0 ? timers_now() + (uint64_t)req->wait_ms : 0;
    m->error_key = m->count;
    m->outcome = (struct lock_result){.type = RESULT_GRANTED};
    if (req->op == MULTILOCK_RELEASE) {
        m->held = m->count;
        set_state(m, MULTILOCK_UNWIND);
    } else {
        set_state(m, MULTILOCK_STEP);
    }
    return m;
}

/* Stops taking locks: the acquire in flight is abandoned (the engine
 * gives back a grant Redis makes later), and whatever was taken is to
 * be released. False when nothing is left to do. */
static bool stop_acquiring(struct multilock *m)
{
    switch (m->state) {
    case MULTILOCK_ACQUIRING:
        lock_engine_abandon(m->call);
        m->call = NULL;
        set_state(m, MULTILOCK_UNWIND);
        return true;
    case MULTILOCK_STEP:
        set_state(m, MULTILOCK_UNWIND);
        return true;
    case MULTILOCK_FINISH:
        /* all granted, not answered yet: given back */
        if (m->op == MULTILOCK_ACQUIRE && m->held > 0) {
            set_state(m, MULTILOCK_UNWIND);
            return true;
        }
        return false;
    case MULTILOCK_UNWIND:
    case MULTILOCK_RELEASING:
        return true;
    }
    return true;
}

void multilock_abandon(struct multilock *m)
{
    m->done = NULL;
    if (!stop_acquiring(m)) {
        timer_stop(&m->due);
        free(m);
        return;
    }
    /* The session must outlive the releases still to run or answer. */
    lock_engine_session_keep(m->session);
    m->session_kept = true;
}

void multilock_refuse(struct multilock *m, const struct lock_result *result)
{
    keep_outcome(m, result);
    stop_acquiring(m);
}

void multilock_stop_waiting(struct multilock *m, const char *why)
{
    m->no_wait = why;
    if (m->state == MULTILOCK_ACQUIRING && m->call != NULL)
        lock_engine_stop_waiting(m->call, why);
}
