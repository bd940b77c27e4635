/*
 * session_join.c - sessions joining, resuming and leaving.
 *
 * A join of a client-id with a secret reads its record first. Each hold
 * the record names is asked for in Redis and given back with its count,
 * or marked lost. When a session's last connection goes, its holds are
 * released, left to expire, or kept for a later rlockd, as configured.
 *
 * Never: give a session back to a client that cannot prove its secret.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "engine/engine_int.h"
#include "engine/record_keys.h"
#include "engine/session_store.h"

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
            release_drop_hold(list_entry(pos, struct hold, session_link));
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
static void resume_hold(struct lock_join *j, struct engine_request *r,
                        int64_t count)
{
    struct session *s = j->session;
    struct hold *hold;

    if (count == 0 && r->record_pending) { /* the acquire never ran */
        record_forget(s, r->lock, r->thread_id);
        return;
    }
    hold = hold_create(r->lock, s, r->thread_id, r->field, r->field_len);
    if (hold == NULL) {
        j->err = -ENOMEM;
        return;
    }
    hold->count = count;
    hold->watchdog = r->lease_ms < 0;
    hold->lease_ms =
        hold->watchdog ? engine.cfg->watchdog_timeout_ms : r->lease_ms;
    if (count > 0 && !r->record_pending) {
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
        ride_settle_later(r->lock, r->field, r->field_len);
        ride_settle_ready();
    }
}

static void on_resume_count(void *arg, const struct backend_value *reply)
{
    struct engine_request *r = arg;
    struct lock_join *j = r->ctx;
    int64_t count = 0;

    if (call_read(r->lock, LOCK_OP_HOLD_COUNT, reply, &count) != OUTCOME_VALUE)
        j->err = -EAGAIN;
    else if (j->err == 0)
        resume_hold(j, r, count);
    engine_request_free(r);
    if (--j->waiting == 0)
        join_end(j, j->err);
}

/* Asks Redis for the count of the hold one record field names. */
static void resume_ask(struct lock_join *j, const struct session_entry *e)
{
    struct lock *lock = lock_ref(e->kind, e->key, e->key_len);
    char field[OWNER_FIELD_SIZE];
    struct engine_request *r = NULL;

    if (lock != NULL) {
        size_t len = owner_field(field, lock_kind_of(lock), j->session->id,
                                 j->session->id_len, e->thread_id);

        r = engine_request_new(lock, LOCK_OP_HOLD_COUNT, field, len);
        lock_unref(lock); /* the request holds its own reference */
    }
    if (r == NULL) {
        j->err = -ENOMEM;
        return;
    }
    r->ctx = j;
    r->thread_id = e->thread_id;
    r->lease_ms = e->lease_ms;
    r->record_pending = e->pending;
    if (engine_request_send(r, 0, on_resume_count) == 0)
        j->waiting++;
    else
        j->err = -EAGAIN;
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
    const struct backend_value *fields = NULL;
    struct lock_join *j = arg;
    struct session_entry e;
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
    if (fields->elements > 0 && !session_store_proved(j->session, fields)) {
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

    if (record_stale_blocks(id, len)) { /* Redis cannot be told yet */
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
            char buf[OWNER_FIELD_SIZE];
            size_t len;
            const char *field = hold_field(h, buf, &len);

            stats.locks_released_on_disconnect++;
            release_in_background(h->lock, LOCK_OP_RELEASE_OWNER, field, len,
                                  0);
        }
        release_drop_hold(h);
    }
    if (release && s->has_record)
        record_delete(s);
    timer_stop(&s->record_timer);
    session_free(s);
}
