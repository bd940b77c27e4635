/*
 * session_record.c - when a session's record in Redis says what.
 *
 * Only a session with a secret has a record. A new hold is named
 * "pending" there before its acquire may run, and named held once
 * granted; a release forgets it. The record is renewed while the session
 * has a watchdog hold. A session that ends with on_disconnect = release
 * has its record deleted, and its client-id waits until the DEL is sent.
 * The record's format and keys are session_store.c's.
 *
 * Never: let an acquire run before "pending" is written or on its way.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "engine/engine_int.h"
#include "engine/session_store.h"

static struct list_node stale_records; /* struct stale_record.link */

/* Only a session with a secret has a record: nobody else could prove
 * to a later rlockd that it is the same client. Its holds of a lock or a
 * semaphore are named there; an expirable permit is not (its id is not
 * the client's to give back: it expires within its lease), and a latch's
 * wait holds nothing. */
bool record_enabled(const struct session *s, const struct lock_kind *kind)
{
    return s->has_secret && lock_kind_recorded(kind);
}

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

void record_timer_fired(struct timer *timer)
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
void record_hold(struct hold *h, int64_t ttl_ms)
{
    struct lock *lock = h->lock;

    if (session_store_put(h->session, lock_kind_of(lock), lock->name,
                          lock->name_len, h->thread_id, false,
                          h->watchdog ? -1 : h->lease_ms, ttl_ms, NULL,
                          NULL) != 0)
        log_warn("the record of %s does not name '%.*s' (Redis unavailable): "
                 "a later rlockd cannot give it back",
                 h->session->id, (int)lock->name_len, lock->name);
    if (h->watchdog)
        record_keep_alive(h->session);
}

void record_forget(struct session *s, struct lock *lock, uint64_t thread_id)
{
    if (record_enabled(s, lock_kind_of(lock)))
        session_store_forget(s, lock_kind_of(lock), lock->name, lock->name_len,
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

void record_delete(const struct session *s)
{
    struct stale_record *r = calloc(1, sizeof(*r));

    if (r == NULL) {
        log_error("out of memory: the record of %s goes with its TTL", s->id);
        return;
    }
    memcpy(r->id, s->id, s->id_len);
    r->len = s->id_len;
    list_push_tail(&stale_records, &r->link);
    stale_send(r);
}

/* Sends the DELs that could not be sent, or got no answer. */
void record_stale_resend(void)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &stale_records) {
        struct stale_record *r = list_entry(pos, struct stale_record, link);

        if (!r->sent)
            stale_send(r);
    }
}

/* Whether a session of id must wait: its old record's DEL cannot be
 * sent yet. */
bool record_stale_blocks(const char *id, size_t len)
{
    struct list_node *pos, *tmp;

    record_stale_resend();
    list_for_each_safe (pos, tmp, &stale_records) {
        struct stale_record *r = list_entry(pos, struct stale_record, link);

        if (r->len == len && memcmp(r->id, id, len) == 0 && !r->sent)
            return true;
    }
    return false;
}

/* A new hold of a recording session (none yet, or one lost) is named
 * "pending" in the record before its acquire may run. */
bool record_needed(const struct lock_call *call)
{
    struct hold *hold = hold_find(call->lock, call->session, call->thread_id);

    return record_enabled(call->session, lock_kind_of(call->lock)) &&
           (hold == NULL || hold->lost);
}

int record_pending(struct lock_call *call, backend_reply_fn *fn)
{
    struct lock *lock = call->lock;
    int err =
        session_store_put(call->session, lock_kind_of(lock), lock->name,
                          lock->name_len, call->thread_id, true, call->lease_ms,
                          call_effective_lease(call), fn, call);

    call->session->has_record = true;
    if (err == 0) {
        call->recorded = true;
        call->recorded_ms = timers_now();
    }
    return err;
}

static void on_pending_recorded(void *arg, const struct backend_value *reply)
{
    struct lock_call *call = arg;

    /* A caller that went leaves "pending" to its TTL or the next write. */
    if (call->state != CALL_FINISHED && reply == NULL)
        ride_park(call, call_proceed); /* written again, then asked */
    else if (call->state != CALL_FINISHED && reply->type == VALUE_ERROR)
        call_finish_unavailable(call);
    else if (call->state != CALL_FINISHED)
        acquire_attempt(call);
    call_unref(call);
}

/*
 * Writes "pending", then the first attempt: at once behind it when the
 * record and the lock share a connection (Redis runs them in order),
 * else once Redis has answered the write.
 */
void record_then_attempt(struct lock_call *call)
{
    bool ordered = session_store_with_lock(call->session, call->lock->name,
                                           call->lock->name_len);

    if (record_pending(call, ordered ? NULL : on_pending_recorded) != 0) {
        ride_park(call, call_proceed);
    } else if (ordered) {
        acquire_attempt(call);
    } else {
        call->refs++;
        call_set_state(call, CALL_ASKING);
    }
}

void record_init(void)
{
    list_init(&stale_records);
}

void record_free(void)
{
    struct list_node *node;

    while ((node = list_first(&stale_records)) != NULL) {
        list_remove(node);
        free(list_entry(node, struct stale_record, link));
    }
}
