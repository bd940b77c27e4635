/*
 * engine_int.h - what only the lock engine's own files may see.
 *
 * Why this header exists: the engine was one file, lock_engine.c, which
 * grew past 2,400 lines with a dozen concerns calling each other in both
 * directions. It was split by concept (call.c, waiters.c, acquire.c,
 * release.c, ride_through.c, session_record.c, session_join.c,
 * engine_request.c and lock_engine.c), and what they share was factored
 * out here, as SQLite's vdbeInt.h did for vdbe.c. The front end and the
 * backend never include it: they see lock_engine.h only. A function
 * declared here carries its file's prefix (call_, waiters_, acquire_,
 * release_, ride_, record_, engine_request_), so that its name says where
 * it lives, as libuv's uv__ names do.
 */
#ifndef RLOCKD_ENGINE_INT_H
#define RLOCKD_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/list.h"
#include "engine/lock_engine.h"
#include "engine/lock_table.h"
#include "engine/session.h"
#include "engine/watchdog.h"

/* A waiter whose attempt found Redis unreachable tries again this soon;
 * so does a join that cannot read its record yet. */
#define UNAVAILABLE_RETRY_MS 100
#define NO_DEADLINE TIMER_NEVER

/*
 * Where a call is. Only call_set_state() changes it, and it aborts on a
 * move the table in call.c does not list. Each state says which list the
 * call is on, as pgbouncer's SocketState does:
 *
 *   NEW -> ASKING | PARKED | QUEUED | FINISHED
 *   ASKING -> ASKING | PARKED | QUEUED | FINISHED
 *   PARKED -> NEW | FINISHED
 *   QUEUED -> QUEUED_ASKING | FINISHED
 *   QUEUED_ASKING -> QUEUED | FINISHED
 *
 * A FINISHED call goes nowhere: its caller has had its answer.
 */
enum call_state {
    CALL_NEW,           /* started or resumed, nothing asked; no list */
    CALL_ASKING,        /* its request is in flight; no list */
    CALL_PARKED,        /* waiting for Redis to serve its key: engine.parked */
    CALL_QUEUED,        /* asleep until woken: its lock's waiters */
    CALL_QUEUED_ASKING, /* its lock's waiters, its acquire in flight */
    CALL_FINISHED,      /* answered or abandoned; a reply may still come */
    CALL_STATE_COUNT
};

struct lock_call {
    struct lock *lock;
    struct session *session; /* NULL once finished */
    enum lock_op op;
    enum call_state state;
    bool woken;    /* woken while asking: ask again if refused */
    bool recorded; /* named "pending" in its session's record */
    /* Its last acquire or UNLOCK got no reply, so it may have run: it is
     * sent again (the scripts count a repeat once), and a call that ends
     * before a reply settles the owner's count instead. */
    bool resolving;
    bool resend;        /* its query or UNLOCK is being sent again */
    bool releasing;     /* an UNLOCK's amount counted in its hold's releasing */
    unsigned syncs_out; /* WAITs sent behind its acquires, unanswered */
    bool granted_unsynced; /* granted; the WAIT has not answered */
    unsigned sync_attempts;
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
    int64_t wait_ms;  /* as asked; < 0: for ever (LOCKS shows it) */
    uint64_t deadline_ms;
    char field[OWNER_FIELD_SIZE];
    size_t field_len;
    struct list_node queue_link;
    /* Its session's waiting calls (struct session.waiting), while queued:
     * how deadlock.c finds what an owner waits for. */
    struct list_node owner_link;
    /* deadlock.c's walk: the walk that last reached it, the call whose
     * wait led to its owner, whether that wait was an order's (behind it
     * in a queue) rather than a hold's, and the next call to look at. */
    uint64_t walk;
    struct lock_call *walk_from;
    bool walk_behind;
    struct lock_call *walk_next;
    /* A kind whose waiters each listen on a channel of their own (fair):
     * this waiter's, while queued. */
    struct backend_listener listener;
    struct timer timer;
    /* CALL_PARKED (engine.parked): resume runs once its key can be
     * served, the timer ends the wait at retry_timeout_ms. */
    struct list_node park_link;
    void (*resume)(struct lock_call *call);
    uint64_t unavailable_since_ms; /* 0: Redis answered its last request */
};

/*
 * A request the engine sends for itself, which no caller waits for: a
 * release in the background (a session gone), a leave of a fair queue,
 * a settle, a failover's recheck, a resume's count. Not a lock_call: it
 * has no state, no caller and no timer. Its reply function owns it and
 * frees it (engine_request_free).
 */
struct engine_request {
    struct lock *lock;   /* a reference, dropped when freed */
    enum lock_op op;     /* what it sends */
    int64_t count;       /* a settle or recheck: the count to set */
    void *ctx;           /* a resume's count: its join */
    uint64_t thread_id;  /* a resume's count: the hold's thread */
    int64_t lease_ms;    /* a resume's count: the lease recorded */
    bool record_pending; /* a resume's count: the record said pending */
    size_t field_len;
    char field[OWNER_FIELD_SIZE]; /* the owner it is for */
};

/* The engine's state: one per process. */
struct engine {
    const struct config *cfg;
    const struct backend *backend;
    struct list_node waiting_locks; /* struct lock.waiting_link */
    struct list_node parked;        /* struct lock_call.park_link */
    uint64_t arrivals;              /* struct lock_call.arrival's counter */
    /* An expirable permit's hold is a thread-id of its own: this counts
     * them, from the top of the range (no client's thread-id is there). */
    uint64_t permit_holds;
    bool shutting_down;
};

extern struct engine engine;

/* A kind one owner holds at a time (RLock, FAIR, WRITE, FENCED): not a
 * shared READ, not a semaphore's permits. */
static inline bool kind_one_owner_at_a_time(const struct lock_kind *kind)
{
    return !kind->shared && kind->holds == HOLDS_REENTRANT;
}

/* A kind whose waiters take a place in a queue in Redis by asking (the
 * fair lock), which they leave when they give up. */
static inline bool kind_queues_in_redis(const struct lock_kind *kind)
{
    return kind->ops[LOCK_OP_LEAVE_QUEUE].build != NULL;
}

/* A kind whose grants hand out fencing tokens (FENCED). */
static inline bool kind_has_tokens(const struct lock_kind *kind)
{
    return kind->ops[LOCK_OP_TOKEN].build != NULL;
}

/* call.c: a call's life, from new to finished. */
struct lock_call *call_new(struct lock *lock, enum lock_op op);
void call_unref(struct lock_call *call);
void call_set_state(struct lock_call *call, enum call_state to);
bool call_queued(const struct lock_call *call);
int64_t call_effective_lease(const struct lock_call *call);
int call_send(struct lock_call *call, enum lock_op op, int64_t lease_ms,
              backend_reply_fn *on_reply);
int call_eval(struct lock *lock, enum lock_op op, struct lock_call_args *args,
              backend_reply_fn *on_reply, void *arg);
enum lock_outcome call_read(const struct lock *lock, enum lock_op op,
                            const struct backend_value *reply, int64_t *value);
bool call_owner_holds(const struct lock_call *call, struct lock *lock);
void call_proceed(struct lock_call *call);
void call_end(struct lock_call *call, bool granted);
void call_finish(struct lock_call *call, bool granted,
                 const struct lock_result *result);
void call_finish_integer(struct lock_call *call, int64_t value);
void call_finish_error(struct lock_call *call, enum reply_error error,
                       const char *message);
void call_finish_unavailable(struct lock_call *call);
void call_finish_shutdown(struct lock_call *call);
void call_finish_bad_reply(struct lock_call *call,
                           const struct backend_value *reply);
void call_finish_wrong_type(struct lock_call *call,
                            const struct backend_value *reply);
void call_finish_not_granted(struct lock_call *call);

/* engine_request.c: the requests nobody waits for. */
struct engine_request *engine_request_new(struct lock *lock, enum lock_op op,
                                          const char *field, size_t field_len);
int engine_request_send(struct engine_request *r, int64_t lease_ms,
                        backend_reply_fn *on_reply);
void engine_request_free(struct engine_request *r);

/* waiters.c: the queue, sleeping, waking, yielding, the hand-off. */
struct lock_call *waiters_head(struct lock *lock);
bool waiters_held_here(const struct lock *lock);
const char *waiters_refusal(const struct lock_call *call);
/* 0, or -ENOMEM: it could not queue. */
int waiters_enqueue(struct lock_call *call);
int waiters_sleep(struct lock_call *call, int64_t pttl);
void waiters_dequeue(struct lock_call *call, bool granted);
bool waiters_yields(const struct lock_call *call);
void waiters_wake_one(struct lock_call *call);
void waiters_wake(struct lock *lock, size_t count);
void waiters_freed(struct lock *lock);
void waiters_hand_off(struct lock_call *release, const struct hold *hold);

/* deadlock.c: cycles in the wait-for graph of this daemon's owners. */
bool deadlock_refuses(struct lock_call *call);
void deadlock_after_grant(const struct lock_kind *kind, struct session *session,
                          uint64_t thread_id);

/* acquire.c: asking Redis for a lock, and what its answer means. */
void acquire_attempt(struct lock_call *call);
void acquire_finish_lost(struct lock_call *call, struct hold *hold);

/* release.c: UNLOCK, FORCEUNLOCK and queries; releases nobody waits for. */
void release_send(struct lock_call *call);
void release_on_background_reply(void *arg, const struct backend_value *reply);
void release_in_background(struct lock *lock, enum lock_op op,
                           const char *field, size_t field_len,
                           int64_t lease_ms);
void release_leave_send(struct lock *lock, const char *field, size_t field_len);
void release_leave_queue(struct lock_call *call);
void release_lose_hold(struct hold *hold, const char *why);
void release_drop_hold(struct hold *hold);

/* ride_through.c: Redis not answering: parked calls, settling, rechecks. */
void ride_init(void);
void ride_free(void);
void ride_park(struct lock_call *call, void (*resume)(struct lock_call *call));
void ride_resume_parked(void);
void ride_settle_later(struct lock *lock, const char *field, size_t field_len);
void ride_settle_ready(void);
void ride_leave_later(struct lock *lock, const char *field, size_t field_len);
void ride_recheck_ready(void);

/* session_record.c: what a session's record in Redis says, and when. */
void record_init(void);
void record_free(void);
bool record_enabled(const struct session *s, const struct lock_kind *kind);
void record_timer_fired(struct timer *timer);
void record_hold(struct hold *h, int64_t ttl_ms);
void record_forget(struct session *s, struct lock *lock, uint64_t thread_id);
void record_delete(const struct session *s);
void record_stale_resend(void);
bool record_stale_blocks(const char *id, size_t len);
bool record_needed(const struct lock_call *call);
int record_pending(struct lock_call *call, backend_reply_fn *fn);
void record_then_attempt(struct lock_call *call);

#endif
