/*
 * lock_engine.h - the lock engine: owners, holds, waiters and leases, as
 * pure logic over an injected backend and clock.
 *
 * Owns struct lock_call, one owner's lock operation in progress, and the
 * waiting protocol: a refused acquire queues the call on its lock (FIFO)
 * and listens on the kind's channel; only woken waiters ask Redis again:
 * on a message (the kind says how many it wakes), when a release through
 * this daemon frees the lock (without waiting for the pub/sub round
 * trip), or when the lock's TTL runs out, since an expiry sends no
 * message. This is where waiters wake up.
 *
 * It also decides what happens to a session's holds when its last
 * connection goes (on_disconnect) and when rlockd stops (on_shutdown),
 * keeps the record that lets a later rlockd give a session back and gives
 * it back (session_store.h), and answers every waiter at shutdown.
 *
 * The engine knows nothing of connections or RESP. A call's outcome is
 * handed once to the caller's done function as a struct lock_result, and
 * done must only record it: the front end writes the reply and resumes
 * the client from its own loop, so a completion never runs another
 * command in this stack.
 */
#ifndef RLOCKD_LOCK_ENGINE_H
#define RLOCKD_LOCK_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/config.h"
#include "engine/lock_kind.h"
#include "engine/timer.h"
#include "reply.h"

struct lock_call;
struct session;

/* What the caller asks. */
enum lock_request_op {
    LOCK_REQUEST_ACQUIRE, /* LOCK, TRYLOCK */
    LOCK_REQUEST_RELEASE, /* UNLOCK */
    LOCK_REQUEST_FORCE_RELEASE,
    LOCK_REQUEST_IS_LOCKED,
    LOCK_REQUEST_IS_HELD,
    LOCK_REQUEST_HOLD_COUNT,
    LOCK_REQUEST_PTTL,
    LOCK_REQUEST_OWNERS,
    LOCK_REQUEST_TOKEN, /* a fenced lock's latest token */
    /* a semaphore's or latch's count: set it if unset, add to it (count
     * down, for a latch), read it */
    LOCK_REQUEST_TRY_SET,
    LOCK_REQUEST_ADD,
    LOCK_REQUEST_AVAILABLE,
};

struct lock_request {
    const struct lock_kind *kind;
    enum lock_request_op op;
    const char *name;
    size_t name_len;
    uint64_t thread_id;
    int64_t wait_ms;  /* acquire: < 0 waits for ever, 0 does not wait */
    int64_t lease_ms; /* acquire: > 0, or < 0 for watchdog mode */
    /* acquire, release: a semaphore's permits (0 or 1 for a lock); try
     * set, add: the value */
    int64_t amount;
    /* a HOLDS_PERMIT_IDS kind's acquire and release: the permit's id (the
     * front end makes a new one for each acquire), LOCK_PERMIT_ID_LEN hex
     * digits */
    const char *permit_id;
};

/* An expirable permit's id: 16 random bytes in hex, as Redisson shows
 * them (its zset holds the bytes). */
#define LOCK_PERMIT_ID_LEN 32

enum lock_result_type {
    RESULT_GRANTED,     /* acquired */
    RESULT_NOT_GRANTED, /* the wait ended without the lock */
    RESULT_INTEGER,
    RESULT_ERROR,
    RESULT_OWNERS, /* integer: the lock's PTTL (-2: no lock), and owners */
    RESULT_TEXT,   /* text: an expirable permit's id, as its grant */
};

/* One owner of a lock, as OWNERS answers. */
struct lock_owner {
    const char *field; /* "<client-id>:<thread-id>" */
    size_t field_len;
    int64_t count;
};

struct lock_result {
    enum lock_result_type type;
    int64_t integer;
    enum reply_error error;
    /* RESULT_ERROR's message, RESULT_TEXT's text; valid during the done
     * call only */
    const char *message;
    /* RESULT_OWNERS; valid during the done call only: the kind the lock
     * is held as ("lock", "read", "write", "none") and its owners */
    const char *kind;
    size_t kind_len;
    const struct lock_owner *owners;
    size_t owner_count;
};

/* Called exactly once per started call, unless it was abandoned first. */
typedef void lock_done_fn(void *ctx, const struct lock_result *result);

/* A hold its owner lost (its lease ran out, FORCEUNLOCK, gone from Redis
 * at a renewal, an UNLOCK or after a failover), for the lock-lost events.
 * Valid during the call only. */
struct lock_loss {
    const char *client_id;
    size_t client_id_len;
    const struct lock_kind *kind;
    const char *name;
    size_t name_len;
    /* the owner's field, "<client-id>:<thread-id>" ("<client-id>:0" for a
     * semaphore's permits; an expirable permit's id) */
    const char *owner;
    size_t owner_len;
    uint64_t thread_id; /* 0 for permits */
    const char *reason;
};
typedef void lock_loss_fn(const struct lock_loss *loss);

int lock_engine_init(const struct config *cfg, const struct backend *backend,
                     const struct engine_clock *clock);
/* fn (NULL: nobody) is told of every hold lost from now on, as done is
 * of a result: it only records, and calls no engine function. */
void lock_engine_on_loss(lock_loss_fn *fn);
void lock_engine_free(void);

/*
 * Starts an operation for session. done may be called before this
 * returns (then it returns NULL), or later; until then it returns the
 * call, which the caller passes to lock_engine_abandon if it goes first.
 */
struct lock_call *lock_engine_start(struct session *session,
                                    const struct lock_request *req,
                                    lock_done_fn *done, void *ctx);
/* The caller went: stop waiting, forget done, and undo an acquire that
 * Redis grants later. */
void lock_engine_abandon(struct lock_call *call);
/* The caller can wait no more (it half-closed its connection): an
 * acquire that waits now, or is refused later, ends with -ERR why (a
 * static string); one granted is answered as ever. done may be called
 * before this returns. */
void lock_engine_stop_waiting(struct lock_call *call, const char *why);

/* A connection joins its own new session under a client-id nobody else
 * can know (made at random): 0 or -ENOMEM. */
int lock_engine_join_new(const char *id, size_t len, struct session **out);

/* How a join ended: the session, or NULL and -EPERM (no proof), -EAGAIN
 * (Redis could not be read, or the session is being resumed), -ENOENT (no
 * session to resume), -EBADMSG (the record's key holds what rlockd did
 * not write: session_store_check), -ENOMEM. */
typedef void lock_join_fn(void *ctx, struct session *session, int err);
struct lock_join;
/*
 * A connection joins the session of client-id id with the proof a live
 * one needs (session_join). Without a live session, the id's record in
 * Redis is read first (session_store.h): a session that an rlockd before
 * this one (or this one, after on_disconnect = expire) left there is
 * given back with its holds and counts, to the one proving its secret,
 * and to nobody else while the record lives. done may run before this
 * returns (then it returns NULL); otherwise the returned join is passed
 * to lock_engine_join_abandon if the caller goes first. resume: the
 * caller held locks in a session it means to get back, and must hear
 * (-ENOENT) when there is none, since a new session would hide that
 * every lock it held is lost.
 */
struct lock_join *lock_engine_join(const char *id, size_t len,
                                   const char *secret, size_t secret_len,
                                   bool resume, lock_join_fn *done, void *ctx);
/* The caller went: its session, once resumed, is left as by it. */
void lock_engine_join_abandon(struct lock_join *join);
/* A connection leaves; after the last one the session's holds are
 * released (on_disconnect = release) or left to expire, and while
 * shutting down (on_shutdown = keep) left for a later rlockd. */
void lock_engine_leave(struct session *session);
/* What the front end may read of a session, which is opaque to it: its
 * client-id (NUL-terminated) and length, and how many holds it has. */
const char *lock_engine_session_id(const struct session *session);
size_t lock_engine_session_id_len(const struct session *session);
size_t lock_engine_session_hold_count(const struct session *session);
/* Whether the session's holds would go with its one connection left: it
 * has one connection, and holds locks. */
bool lock_engine_session_last_with_holds(const struct session *session);
/* Keeps the session as one more connection would (for work that must
 * outlive its connection); lock_engine_leave gives it back. */
void lock_engine_session_keep(struct session *session);

/*
 * LOCKS and GET /locks: the locks this daemon holds or waits on, as the
 * engine sees them (lock_view.c). An owner is a holder or a waiter:
 * its session (its client-id, lock_engine_session_id), its field in
 * Redis, and ms since its first grant or since its call began.
 */
struct lock_view_owner {
    const struct session *session;
    const char *owner; /* "<client-id>:<thread-id>", a permit's id... */
    size_t owner_len;
    int64_t count;     /* a holder's count (permits); a waiter's amount */
    uint64_t ms;       /* held for; waiting for */
    const char *asked; /* a waiter's request: "TRYLOCK WAIT 5000 FAIR" */
};
struct lock_view {
    const char *name; /* the Redis key: [lock] name_prefix and the name */
    size_t name_len;
    const char *kind; /* "lock", "fair", "fenced", "read", "write",
                         "semaphore", "expirable", "latch" */
    int64_t ttl_ms;   /* the lease its holds are kept at; -1: none held */
    size_t holder_count;
    const struct lock_view_owner *holders;
    size_t waiter_count; /* in queue order */
    const struct lock_view_owner *waiters;
};
/* Which locks a view shows (a name as Redis has it). */
typedef bool lock_view_filter_fn(const char *name, size_t len, void *arg);
/* One lock of a view; 0, or an error that ends the view. */
typedef int lock_view_fn(const struct lock_view *view, void *arg);
/*
 * Shows the locks filter accepts that are held or waited for here, the
 * longest wait first (then the longest held, then by name): fn is called
 * for those from offset, count at most. Returns how many were accepted
 * in all (for paging), or fn's error, or -ENOMEM.
 */
int64_t lock_engine_view(lock_view_filter_fn *filter, size_t offset,
                         size_t count, lock_view_fn *fn, void *arg);

/* GET /sessions: one session (client-id) as the engine sees it. */
struct session_view {
    const struct session *session;
    const char *id;
    size_t id_len;
    unsigned connections; /* open here (and kept by work in flight) */
    size_t holds;
    size_t waiters; /* calls queued for a lock */
    /* It set a SECRET: a restarted rlockd resumes its holds from its
     * record in Redis (CLIENTID ... RESUME). */
    bool resumable;
};
typedef int session_view_fn(const struct session_view *view, void *arg);
/* As lock_engine_view, for every live session, by client-id. */
int64_t lock_engine_sessions_view(size_t offset, size_t count,
                                  session_view_fn *fn, void *arg);

/* The engine's timer is due (the clock's arm said when). */
void lock_engine_run_timers(void);
/* The backend can serve more keys: calls and waiters it could not serve
 * go on. */
void lock_engine_backend_ready(void);
/* Another server serves keys now (a failover): every hold whose key
 * affected() says yes (NULL: every one) is looked for there, and one not
 * found is lost (see ride_through.c). why names the change for the log. */
void lock_engine_recheck(const char *why,
                         bool (*affected)(const char *key, size_t len));
/* Answers every waiter with -SHUTDOWN. */
void lock_engine_shutdown(void);

#endif
