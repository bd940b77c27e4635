/*
 * rlock_int.h - the inside of librlock, shared by its files and by
 * nothing else: the client, its threads, its record of holds, and one
 * request. rlock.h is the API.
 *
 * It exists because rlock.c held five concepts. Split by concept, the
 * files need the same structs and a few of each other's functions, as
 * SQLite's vdbe*.c share src/vdbeInt.h. A shared function keeps its
 * file's prefix: threads_, holds_, request_.
 *
 * Never included outside client-lib/, and never installed.
 */
#ifndef RLOCK_INT_H
#define RLOCK_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "connection.h"
#include "heartbeat.h"
#include "rlock.h"

/* A request's option or number when it is not sent: no value of any
 * (ADDPERMITS's may be negative). */
#define OPTION_ABSENT LLONG_MIN

/*
 * A hold of this client, as far as the library knows: a lock a thread
 * holds (its name and its kind), the permits of a semaphore the client
 * holds (its name), or an expirable permit (its name and its id).
 */
struct rlock_hold {
    struct rlock_hold *next;
    enum rlock_kind kind; /* RLOCK_LOCK for permits */
    /* A connection went while it was held: it may be gone. */
    bool suspect;
    /* rlockd had no session to give back: it is gone, and the next
     * acquisition or release of it says so. */
    bool lost;
    /* A semaphore's: how many permits the client took and has not given
     * back, as far as it knows. */
    long long permits;
    char id[RLOCK_PERMIT_ID_SIZE]; /* an expirable permit's; else "" */
    char name[];
};

/* One thread's state. Only thread tid uses conn; it sets conn.ctx under
 * the client's mutex, since a lost connection looks at the others. */
struct thread_state {
    struct thread_state *next;
    pid_t tid;
    char tid_text[24];
    struct rlock_conn conn;   /* ctx NULL: closed, the next call reopens */
    struct rlock_hold *holds; /* guarded by the client's mutex */
};

/* Where a command's hold is recorded: a lock is a thread's; permits
 * belong to the client-id's session, shared by all its connections, so
 * they are the client's, whichever thread took them. */
enum hold_list { LIST_THREAD, LIST_PERMITS, LIST_PERMIT_IDS, LIST_COUNT };

struct rlock_client {
    pthread_mutex_t mutex; /* guards threads and every list of holds */
    struct thread_state *threads;
    /* the client's own lists (LIST_PERMITS, LIST_PERMIT_IDS) */
    struct rlock_hold *holds[LIST_COUNT];
    struct rlock_target target;
    struct heartbeat heartbeat;
};

/* What a command does to the record of holds. */
enum hold_effect { HOLD_NONE, HOLD_ACQUIRE, HOLD_RELEASE };

enum client_command_id {
    CLIENT_CMD_LOCK,
    CLIENT_CMD_TRYLOCK,
    CLIENT_CMD_UNLOCK,
    CLIENT_CMD_FORCEUNLOCK,
    CLIENT_CMD_ISLOCKED,
    CLIENT_CMD_ISHELD,
    CLIENT_CMD_HOLDCOUNT,
    CLIENT_CMD_PTTL,
    CLIENT_CMD_TOKEN,
    CLIENT_CMD_OWNERS,
    CLIENT_CMD_OWNERS_NAMED,
    CLIENT_CMD_SETPERMITS,
    CLIENT_CMD_ADDPERMITS,
    CLIENT_CMD_PERMITS,
    CLIENT_CMD_PERMITS_HELD,
    CLIENT_CMD_ACQUIRE,
    CLIENT_CMD_RELEASE,
    CLIENT_CMD_ACQUIRE_EXPIRABLE,
    CLIENT_CMD_RELEASE_EXPIRABLE,
    CLIENT_CMD_LATCHSET,
    CLIENT_CMD_COUNTDOWN,
    CLIENT_CMD_LATCHCOUNT,
    CLIENT_CMD_AWAIT,
};

/* The commands the API sends, and how each is sent and answered. */
struct client_command {
    const char *name;
    const char *word; /* a word of its own after the name, or NULL */
    bool with_thread; /* the caller's thread-id follows the lock name */
    /* Without WAIT it waits as long as it takes: no reply timeout. */
    bool blocks;
    /* Its grant is +OK when it waits with no limit (ACQUIRE's), else
     * reply_type. */
    bool ok_without_limit;
    /* How its number is sent: after this option word ("PERMITS"), or
     * NULL: right after the name (SETPERMITS name n). */
    const char *amount_option;
    /* REDIS_REPLY_INTEGER, STATUS for +OK, or ARRAY (OWNERS) or STRING
     * (an expirable permit's id, or :0) handed back whole */
    int reply_type;
    enum hold_effect effect;
    enum hold_list list; /* where its hold is recorded (with an effect) */
};

/* One API call: a command, its lock (name and kind) and its options;
 * request_new() makes one with no options. */
struct request {
    const struct client_command *command;
    enum rlock_kind kind; /* RLOCK_LOCK, no word, for all but locks */
    const char *name;
    long long wait_ms;     /* WAIT, or OPTION_ABSENT */
    long long lease_ms;    /* LEASE, RLOCK_WATCHDOG or OPTION_ABSENT */
    long long amount;      /* permits, a count, or OPTION_ABSENT */
    const char *permit_id; /* ID, or NULL */
};

/* The files' shared functions, each said at its definition. */

/* ---- threads.c: each thread's connection ---------------------------- */

int threads_get(rlock_client *c, struct thread_state **out);
void threads_lost(rlock_client *c, struct thread_state *t);
void threads_free(struct thread_state *t);

/* ---- holds.c: the record of holds ------------------------------------ */

void holds_free(struct rlock_hold *h);
void holds_mark_suspect(rlock_client *c, const struct thread_state *t,
                        bool lost);
bool holds_any(void *ctx);
void holds_session_lost(void *ctx);
struct rlock_hold *holds_new(const struct request *rq);
bool holds_take_lost(rlock_client *c, struct thread_state *t,
                     const struct request *rq);
int holds_update(rlock_client *c, struct thread_state *t,
                 const struct request *rq, int err, long long value,
                 struct rlock_hold **spare);
bool holds_permits_recorded(rlock_client *c, const char *name, bool forget);

/* ---- request.c: the one path every call takes ------------------------ */

struct request request_new(enum client_command_id id, enum rlock_kind kind,
                           const char *name);
int request_execute(rlock_client *c, const struct request *rq, long long *value,
                    redisReply **whole);
long long request_reply_timeout(const rlock_client *c,
                                const struct request *rq);
long long request_query(rlock_client *c, enum client_command_id id,
                        enum rlock_kind kind, const char *name);
bool request_valid_lease(long long lease_ms);
bool request_valid_wait(long long wait_ms);
bool request_valid_count(long long n, long long min);
void request_store_token(enum rlock_kind kind, long long reply,
                         long long *token);

#endif
