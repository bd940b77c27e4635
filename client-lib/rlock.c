/*
 * rlock.c - librlock, the rlockd client behind rlock.h: the API, the
 * table of each client's per-thread connections, and the record of the
 * holds the client believes it has, which turns a lost connection into
 * RLOCK_ELOCKLOST later. Every call, whatever its lock kind, is one row
 * of the command table and one of the kind table, sent by execute(); the
 * semaphores' and the latch's calls too (they name no kind).
 *
 * Never: holds the client's mutex during I/O (a thread blocked in LOCK
 * must not delay another); lets two threads use one connection; retries
 * a command by itself (after a lost connection its outcome is unknown,
 * and the caller decides). Talking to rlockd is connection.c's.
 */
#include "rlock.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "command.h" /* COMMAND_MAX_MS, COMMAND_MAX_COUNT */
#include "connection.h"
#include "heartbeat.h"

/* A request's option or number when it is not sent: no value of any
 * (ADDPERMITS's may be negative). */
#define OPTION_ABSENT LLONG_MIN
#define MAX_ARGS 8 /* TRYLOCK name tid kind WAIT ms LEASE ms */

/*
 * A hold of this client, as far as the library knows: a lock a thread
 * holds (its name and its kind), the permits of a semaphore the client
 * holds (its name), or an expirable permit (its name and its id).
 */
struct hold {
    struct hold *next;
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
    struct rlock_conn conn; /* ctx NULL: closed, the next call reopens */
    struct hold *holds;     /* guarded by the client's mutex */
};

/* Where a command's hold is recorded: a lock is a thread's; permits
 * belong to the client-id's session, shared by all its connections, so
 * they are the client's, whichever thread took them. */
enum hold_list { LIST_THREAD, LIST_PERMITS, LIST_PERMIT_IDS, LIST_COUNT };

/* Whether rlockd's session record names the list's holds, so that they
 * come back with a resumed session (docs/protocol.md, section 12). An
 * expirable permit is not in it: a client that holds only those has no
 * session to resume, and one that had none to resume may still give
 * such a permit back while its lease lasts; its release tells. */
static const bool list_in_record[LIST_COUNT] = {
    [LIST_THREAD] = true, [LIST_PERMITS] = true, [LIST_PERMIT_IDS] = false};

struct rlock_client {
    pthread_mutex_t mutex; /* guards threads and every list of holds */
    struct thread_state *threads;
    /* the client's own lists (LIST_PERMITS, LIST_PERMIT_IDS) */
    struct hold *holds[LIST_COUNT];
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
static const struct client_command {
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
} client_commands[] = {
    [CLIENT_CMD_LOCK] = {"LOCK", .with_thread = true, .blocks = true,
                         .reply_type = REDIS_REPLY_STATUS,
                         .effect = HOLD_ACQUIRE},
    [CLIENT_CMD_TRYLOCK] = {"TRYLOCK", .with_thread = true,
                            .reply_type = REDIS_REPLY_INTEGER,
                            .effect = HOLD_ACQUIRE},
    [CLIENT_CMD_UNLOCK] = {"UNLOCK", .with_thread = true,
                           .reply_type = REDIS_REPLY_INTEGER,
                           .effect = HOLD_RELEASE},
    [CLIENT_CMD_FORCEUNLOCK] = {"FORCEUNLOCK",
                                .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_ISLOCKED] = {"ISLOCKED", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_ISHELD] = {"ISHELD", .with_thread = true,
                           .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_HOLDCOUNT] = {"HOLDCOUNT", .with_thread = true,
                              .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_PTTL] = {"PTTL", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_TOKEN] = {"TOKEN", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_OWNERS] = {"OWNERS", .reply_type = REDIS_REPLY_ARRAY},
    [CLIENT_CMD_OWNERS_NAMED] = {"OWNERS", "WITHNAMES",
                                 .reply_type = REDIS_REPLY_ARRAY},
    [CLIENT_CMD_SETPERMITS] = {"SETPERMITS", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_ADDPERMITS] = {"ADDPERMITS", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_PERMITS] = {"PERMITS", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_PERMITS_HELD] = {"PERMITS", "HELD",
                                 .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_ACQUIRE] = {"ACQUIRE", .blocks = true, .ok_without_limit = true,
                            .amount_option = "PERMITS",
                            .reply_type = REDIS_REPLY_INTEGER,
                            .effect = HOLD_ACQUIRE, .list = LIST_PERMITS},
    [CLIENT_CMD_RELEASE] = {"RELEASE", .amount_option = "PERMITS",
                            .reply_type = REDIS_REPLY_INTEGER,
                            .effect = HOLD_RELEASE, .list = LIST_PERMITS},
    [CLIENT_CMD_ACQUIRE_EXPIRABLE] = {"ACQUIRE", "EXPIRABLE", .blocks = true,
                                      .reply_type = REDIS_REPLY_STRING,
                                      .effect = HOLD_ACQUIRE,
                                      .list = LIST_PERMIT_IDS},
    [CLIENT_CMD_RELEASE_EXPIRABLE] = {"RELEASE",
                                      .reply_type = REDIS_REPLY_INTEGER,
                                      .effect = HOLD_RELEASE,
                                      .list = LIST_PERMIT_IDS},
    [CLIENT_CMD_LATCHSET] = {"LATCHSET", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_COUNTDOWN] = {"COUNTDOWN", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_LATCHCOUNT] = {"LATCHCOUNT", .reply_type = REDIS_REPLY_INTEGER},
    [CLIENT_CMD_AWAIT] = {"AWAIT", .blocks = true,
                          .reply_type = REDIS_REPLY_INTEGER},
};

/* The kinds, by enum rlock_kind: the word that names each after a
 * command's fixed arguments (none for the plain lock), and whether its
 * acquisitions answer with a fencing token (an integer, LOCK's too)
 * rather than +OK / :1. */
static const struct client_kind {
    const char *word;
    bool tokens;
} client_kinds[] = {
    [RLOCK_LOCK] = {NULL, false},      [RLOCK_FAIR] = {"FAIR", false},
    [RLOCK_READ] = {"READ", false},    [RLOCK_WRITE] = {"WRITE", false},
    [RLOCK_FENCED] = {"FENCED", true},
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

static const char *const error_texts[] = {
    [-RLOCK_OK] = "success",
    [-RLOCK_ENOTOWNER] =
        "lock not held by this thread, or permits not by this client",
    [-RLOCK_ELOCKLOST] = "lock or permit was lost while held",
    [-RLOCK_EDAEMON] = "cannot connect to rlockd",
    [-RLOCK_EREDIS] = "rlockd cannot reach Redis",
    [-RLOCK_ETIMEOUT] = "no reply from rlockd in time",
    [-RLOCK_ECONNLOST] = "connection to rlockd lost",
    [-RLOCK_EINVAL] = "invalid argument, or refused by rlockd (-ERR: a "
                      "reserved name, a count out of range)",
    [-RLOCK_ELIMIT] = "a limit of rlockd was reached",
    [-RLOCK_ESHUTDOWN] = "rlockd is shutting down",
    [-RLOCK_EAUTH] = "rlockd wants a login, or refused the one given",
    [-RLOCK_ESYSTEM] = "out of memory or system error",
    [-RLOCK_EPROTOCOL] = "unexpected reply from rlockd",
    [-RLOCK_EWRONGTYPE] = "the name's key holds something that is not a lock",
    [-RLOCK_ENOREPLICAS] = "no Redis replica acknowledged the lock in time",
    [-RLOCK_ENOPERM] = "the user logged in as may not do this",
    [-RLOCK_ETLS] = "TLS handshake with rlockd failed",
};

/* ---- the table of threads ------------------------------------------- */

static pid_t current_tid(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
    return gettid();
#else
    return (pid_t)syscall(SYS_gettid);
#endif
}

static void holds_free(struct hold *h)
{
    while (h != NULL) {
        struct hold *next = h->next;
        free(h);
        h = next;
    }
}

static void thread_states_free(struct thread_state *t)
{
    while (t != NULL) {
        struct thread_state *next = t->next;
        rlock_conn_close(&t->conn);
        holds_free(t->holds);
        free(t);
        t = next;
    }
}

static bool thread_exited(pid_t tid)
{
    return syscall(SYS_tgkill, getpid(), tid, 0) == -1 && errno == ESRCH;
}

/* Unlinks the states of threads that have exited and returns them, for
 * closing after the mutex is released. Caller holds the mutex. Their
 * holds go too: no thread can unlock them any more. */
static struct thread_state *unlink_exited_threads(rlock_client *c)
{
    struct thread_state *exited = NULL, **link = &c->threads;

    while (*link != NULL) {
        struct thread_state *t = *link;
        if (thread_exited(t->tid)) {
            *link = t->next;
            t->next = exited;
            exited = t;
        } else {
            link = &t->next;
        }
    }
    return exited;
}

static struct thread_state *thread_state_find(const rlock_client *c, pid_t tid)
{
    struct thread_state *t;

    for (t = c->threads; t != NULL && t->tid != tid; t = t->next)
        ;
    return t;
}

/*
 * The calling thread's state with an open connection. The mutex covers
 * only the table; connecting happens outside it. A thread new to the
 * table first sweeps out the states of exited threads, which keeps the
 * table as small as the set of live threads that used the client.
 */
/* Marks every hold of a list suspect, or lost. */
static void holds_mark(struct hold *h, bool lost)
{
    for (; h != NULL; h = h->next) {
        h->suspect = true;
        h->lost |= lost;
    }
}

/* Marks the client's own holds (its permits), and those of thread t, or
 * of every thread when t is NULL; lost: those of the session record.
 * Caller holds the mutex. */
static void client_holds_mark(rlock_client *c, const struct thread_state *t,
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
static bool client_holds_any(void *ctx)
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
static void client_session_lost(void *ctx)
{
    rlock_client *c = ctx;

    pthread_mutex_lock(&c->mutex);
    client_holds_mark(c, NULL, true);
    pthread_mutex_unlock(&c->mutex);
}

/* Opens a connection, resuming the client's session while it holds
 * locks (the rule for holders, protocol.md section 9). */
static int client_reopen(rlock_client *c, struct rlock_conn *conn)
{
    int err = rlock_conn_open(conn, &c->target, client_holds_any(c));

    if (err != RLOCK_ELOCKLOST)
        return err;
    client_session_lost(c);
    return rlock_conn_open(conn, &c->target, false);
}

static int thread_state_get(rlock_client *c, struct thread_state **out)
{
    pid_t tid = current_tid();
    struct thread_state *t, *exited = NULL;
    struct rlock_conn conn;
    bool is_new = false;
    int err;

    pthread_mutex_lock(&c->mutex);
    t = thread_state_find(c, tid);
    pthread_mutex_unlock(&c->mutex);
    if (t != NULL && t->conn.ctx != NULL) {
        *out = t;
        return RLOCK_OK;
    }
    err = client_reopen(c, &conn);
    if (err != RLOCK_OK)
        return err;
    if (t == NULL) {
        t = calloc(1, sizeof *t);
        if (t == NULL) {
            rlock_conn_close(&conn);
            return RLOCK_ESYSTEM;
        }
        t->tid = tid;
        snprintf(t->tid_text, sizeof t->tid_text, "%d", (int)tid);
        is_new = true;
    }
    pthread_mutex_lock(&c->mutex);
    t->conn = conn;
    if (is_new) {
        exited = unlink_exited_threads(c);
        t->next = c->threads;
        c->threads = t;
    }
    pthread_mutex_unlock(&c->mutex);
    thread_states_free(exited);
    *out = t;
    return RLOCK_OK;
}

/*
 * The thread's connection broke or timed out: close it, and mark the
 * holds that may have gone with it. If no other connection of the client
 * is open, rlockd saw the session end and may have released them all,
 * the client's permits too; otherwise the session goes on, and only this
 * thread's locks are in doubt (permits are the session's).
 */
static void thread_state_lost(rlock_client *c, struct thread_state *t)
{
    struct rlock_conn lost = t->conn;
    bool session_ended = true;

    pthread_mutex_lock(&c->mutex);
    t->conn.ctx = NULL;
    for (struct thread_state *other = c->threads; other != NULL;
         other = other->next)
        if (other->conn.ctx != NULL)
            session_ended = false;
    client_holds_mark(c, session_ended ? NULL : t, false);
    pthread_mutex_unlock(&c->mutex);
    rlock_conn_close(&lost);
}

/* ---- the record of holds --------------------------------------------- */

/* The id that names the request's hold in its list: an expirable
 * permit's (the one acquired is known only from the reply: spare's),
 * else "". */
static const char *hold_id(const struct request *rq, const struct hold *spare)
{
    if (spare != NULL)
        return spare->id;
    return rq->permit_id != NULL ? rq->permit_id : "";
}

static struct hold **hold_find(rlock_client *c, struct thread_state *t,
                               const struct request *rq, const char *id)
{
    struct hold **link = rq->command->list == LIST_THREAD
                             ? &t->holds
                             : &c->holds[rq->command->list];

    while (*link != NULL &&
           ((*link)->kind != rq->kind || strcmp((*link)->name, rq->name) != 0 ||
            strcmp((*link)->id, id) != 0))
        link = &(*link)->next;
    return link;
}

static void hold_unlink(struct hold **link)
{
    struct hold *h = *link;

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
static int permits_released(struct hold **link, long long n, int err,
                            long long value)
{
    struct hold *h = *link;

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
static int holds_update(rlock_client *c, struct thread_state *t,
                        const struct request *rq, int err, long long value,
                        struct hold **spare)
{
    struct hold **link, *h;

    pthread_mutex_lock(&c->mutex);
    link = hold_find(c, t, rq, hold_id(rq, *spare));
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
static bool hold_take_lost(rlock_client *c, struct thread_state *t,
                           const struct request *rq)
{
    struct hold **link;
    bool lost;

    pthread_mutex_lock(&c->mutex);
    link = hold_find(c, t, rq, hold_id(rq, NULL));
    lost = *link != NULL && (*link)->lost;
    if (lost)
        hold_unlink(link);
    pthread_mutex_unlock(&c->mutex);
    return lost;
}

/* ---- the one path every API call takes ------------------------------- */

static struct request request_new(enum client_command_id id,
                                  enum rlock_kind kind, const char *name)
{
    return (struct request){.command = &client_commands[id],
                            .kind = kind,
                            .name = name,
                            .wait_ms = OPTION_ABSENT,
                            .lease_ms = OPTION_ABSENT,
                            .amount = OPTION_ABSENT};
}

/* Whether the request may wait as long as it takes for its reply. */
static bool waits_without_limit(const struct request *rq)
{
    return rq->wait_ms == RLOCK_WAIT_FOREVER ||
           (rq->wait_ms == OPTION_ABSENT && rq->command->blocks);
}

static long long reply_timeout(const rlock_client *c, const struct request *rq)
{
    if (waits_without_limit(rq))
        return RLOCK_NO_TIMEOUT;
    if (rq->wait_ms > 0)
        return rq->wait_ms + c->target.command_timeout_ms;
    return c->target.command_timeout_ms;
}

struct argv_builder {
    const char *argv[MAX_ARGS];
    size_t lens[MAX_ARGS];
    int argc;
    char numbers[3][24]; /* the values of WAIT, LEASE and the amount */
    int numbers_used;
};

static void add_arg(struct argv_builder *b, const char *arg)
{
    b->argv[b->argc] = arg;
    b->lens[b->argc] = strlen(arg);
    b->argc++;
}

/* A number, after its option word unless that is NULL; nothing when it
 * is absent. */
static void add_option(struct argv_builder *b, const char *option,
                       long long value)
{
    char *text = b->numbers[b->numbers_used++];

    if (value == OPTION_ABSENT)
        return;
    snprintf(text, sizeof b->numbers[0], "%lld", value);
    if (option != NULL)
        add_arg(b, option);
    add_arg(b, text);
}

static bool valid_kind(enum rlock_kind kind)
{
    return (unsigned)kind < sizeof client_kinds / sizeof *client_kinds;
}

/* What rlockd answers the request with: an acquisition of a kind with
 * tokens answers its token, even LOCK, whose others answer +OK; an
 * ACQUIRE that waits with no limit answers +OK, with WAIT :1. */
static int reply_type(const struct request *rq)
{
    if (rq->command->effect == HOLD_ACQUIRE && client_kinds[rq->kind].tokens)
        return REDIS_REPLY_INTEGER;
    if (rq->command->ok_without_limit && waits_without_limit(rq))
        return REDIS_REPLY_STATUS;
    return rq->command->reply_type;
}

/* The words of the request, as rlockd's docs/protocol.md orders them. A
 * watchdog lease is sent as no LEASE, rlockd's default; the plain lock's
 * kind as no word, as before there were kinds. */
static void request_argv(struct argv_builder *b, const struct request *rq,
                         const struct thread_state *t)
{
    const struct client_command *cmd = rq->command;

    add_arg(b, cmd->name);
    add_arg(b, rq->name);
    if (cmd->with_thread)
        add_arg(b, t->tid_text);
    if (client_kinds[rq->kind].word != NULL)
        add_arg(b, client_kinds[rq->kind].word);
    if (cmd->word != NULL)
        add_arg(b, cmd->word);
    add_option(b, cmd->amount_option, rq->amount);
    if (rq->permit_id != NULL) {
        add_arg(b, "ID");
        add_arg(b, rq->permit_id);
    }
    add_option(b, "WAIT", rq->wait_ms);
    add_option(b, "LEASE",
               rq->lease_ms == RLOCK_WATCHDOG ? OPTION_ABSENT : rq->lease_ms);
}

/* A reply handed back whole: OWNERS' array, or an expirable permit's id
 * (*value 1) or :0 (the wait ran out). RLOCK_EPROTOCOL for another. */
static int whole_reply_value(const struct request *rq, const redisReply *r,
                             long long *value)
{
    *value = 0;
    if (rq->command->reply_type == REDIS_REPLY_ARRAY)
        return r->type == REDIS_REPLY_ARRAY ? RLOCK_OK : RLOCK_EPROTOCOL;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        return RLOCK_OK;
    if (r->type != REDIS_REPLY_STRING || r->len != RLOCK_PERMIT_ID_SIZE - 1)
        return RLOCK_EPROTOCOL;
    *value = 1;
    return RLOCK_OK;
}

/* Sends the request on the thread's connection: RLOCK_OK with *value,
 * and *whole for a command whose reply is handed back whole. */
static int request_send(rlock_client *c, struct thread_state *t,
                        const struct request *rq, long long *value,
                        redisReply **whole)
{
    struct argv_builder b = {.argc = 0};
    int err;

    request_argv(&b, rq, t);
    if (whole == NULL)
        return rlock_conn_exchange(&t->conn, b.argc, b.argv, b.lens,
                                   reply_timeout(c, rq), reply_type(rq), value);
    err = rlock_conn_command(&t->conn, b.argc, b.argv, b.lens,
                             reply_timeout(c, rq), whole);
    if (err == RLOCK_OK && (err = whole_reply_value(rq, *whole, value)) != 0)
        freeReplyObject(*whole);
    return err;
}

/* The record of an acquisition, allocated before it is sent: its permits
 * (the request's amount, for a semaphore) and its name. */
static struct hold *hold_new(const struct request *rq)
{
    struct hold *h = calloc(1, sizeof *h + strlen(rq->name) + 1);

    if (h == NULL)
        return NULL;
    h->kind = rq->kind;
    h->permits = rq->command->list == LIST_PERMITS ? rq->amount : 0;
    strcpy(h->name, rq->name);
    return h;
}

/*
 * Sends a request on the calling thread's connection and stores its
 * reply's value in *value. A broken connection is closed here, and the
 * record of holds follows the outcome. A kind not in the table costs no
 * trip. A reply of a command that hands it back whole goes to *whole
 * too (the caller frees it): OWNERS' array, or an expirable permit's id,
 * which names its record.
 */
static int execute(rlock_client *c, const struct request *rq, long long *value,
                   redisReply **whole)
{
    struct thread_state *t;
    struct hold *spare = NULL;
    long long reply = 0;
    int err;

    if (c == NULL || rq->name == NULL || rq->name[0] == '\0' ||
        !valid_kind(rq->kind))
        return RLOCK_EINVAL;
    if (rq->command->effect == HOLD_ACQUIRE && (spare = hold_new(rq)) == NULL)
        return RLOCK_ESYSTEM;
    err = thread_state_get(c, &t);
    if (err != RLOCK_OK)
        goto out;
    if (rq->command->effect != HOLD_NONE && hold_take_lost(c, t, rq)) {
        err = RLOCK_ELOCKLOST; /* told once; nothing sent */
        goto out;
    }
    err = request_send(c, t, rq, &reply, whole);
    if (err != RLOCK_OK && rlock_conn_broken(&t->conn))
        thread_state_lost(c, t);
    if (err == RLOCK_OK && spare != NULL && whole != NULL && reply == 1)
        memcpy(spare->id, (*whole)->str, RLOCK_PERMIT_ID_SIZE - 1);
    err = holds_update(c, t, rq, err, reply, &spare);
    if (err == RLOCK_OK)
        *value = reply;
out:
    free(spare);
    return err;
}

/* A command without options, answered with a count or a boolean: the
 * value or an error. */
static long long execute_query(rlock_client *c, enum client_command_id id,
                               enum rlock_kind kind, const char *name)
{
    struct request rq = request_new(id, kind, name);
    long long value;
    int err = execute(c, &rq, &value, NULL);

    return err != RLOCK_OK ? err : value;
}

/* WAIT and LEASE are checked against the protocol's COMMAND_MAX_MS here,
 * so that WAIT plus the command timeout cannot overflow, and a bad value
 * costs no trip. */
static bool valid_lease(long long lease_ms)
{
    return lease_ms == RLOCK_WATCHDOG ||
           (lease_ms > 0 && lease_ms <= COMMAND_MAX_MS);
}

static bool valid_wait(long long wait_ms)
{
    return wait_ms >= RLOCK_WAIT_FOREVER && wait_ms <= COMMAND_MAX_MS;
}

/* A count of permits, or a latch's, as rlockd takes it: from min to
 * Java's largest int. */
static bool valid_count(long long n, long long min)
{
    return n >= min && n <= COMMAND_MAX_COUNT;
}

/* An acquisition's reply is its fencing token for a kind with tokens;
 * token (NULL: not wanted) was set to 0 before, for every other case. */
static void store_token(enum rlock_kind kind, long long reply, long long *token)
{
    if (token != NULL && client_kinds[kind].tokens)
        *token = reply;
}

/* ---- the API --------------------------------------------------------- */

rlock_client *rlock_connect(const char *addr, const rlock_options *opts,
                            int *err)
{
    return rlock_connect_tls(addr, opts, NULL, err);
}

rlock_client *rlock_connect_tls(const char *addr, const rlock_options *opts,
                                const rlock_tls_options *tls, int *err)
{
    rlock_client *c = calloc(1, sizeof *c);
    struct thread_state *t;
    int e = RLOCK_ESYSTEM;

    if (c != NULL) {
        pthread_mutex_init(&c->mutex, NULL);
        e = rlock_target_init(&c->target, addr, opts, tls);
    }
    if (e == RLOCK_OK)
        e = thread_state_get(c, &t);
    if (e == RLOCK_OK) /* after the session exists: it joins it */
        e = heartbeat_start(&c->heartbeat, &c->target,
                            &(struct heartbeat_client){client_holds_any,
                                                       client_session_lost, c});
    if (err != NULL)
        *err = e;
    if (e == RLOCK_OK)
        return c;
    rlock_close(c);
    return NULL;
}

void rlock_close(rlock_client *c)
{
    if (c == NULL)
        return;
    heartbeat_stop(&c->heartbeat);
    thread_states_free(c->threads);
    for (int list = 0; list < LIST_COUNT; list++)
        holds_free(c->holds[list]);
    pthread_mutex_destroy(&c->mutex);
    rlock_target_free(&c->target);
    free(c);
}

const char *rlock_client_id(const rlock_client *c)
{
    return c != NULL ? c->target.client_id : NULL;
}

int rlock_lock_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                    long long lease_ms, long long *token)
{
    struct request rq = request_new(CLIENT_CMD_LOCK, kind, name);
    long long reply;
    int err;

    if (token != NULL)
        *token = 0;
    if (!valid_lease(lease_ms))
        return RLOCK_EINVAL;
    rq.lease_ms = lease_ms;
    err = execute(c, &rq, &reply, NULL);
    if (err == RLOCK_OK)
        store_token(kind, reply, token);
    return err;
}

int rlock_trylock_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                       long long wait_ms, long long lease_ms, long long *token)
{
    struct request rq = request_new(CLIENT_CMD_TRYLOCK, kind, name);
    long long reply;
    int err;

    if (token != NULL)
        *token = 0;
    if (!valid_wait(wait_ms) || !valid_lease(lease_ms))
        return RLOCK_EINVAL;
    rq.wait_ms = wait_ms;
    rq.lease_ms = lease_ms;
    err = execute(c, &rq, &reply, NULL);
    if (err != RLOCK_OK)
        return err;
    store_token(kind, reply, token);
    return reply != 0; /* :1, or a token */
}

int rlock_unlock_kind(rlock_client *c, const char *name, enum rlock_kind kind)
{
    return (int)execute_query(c, CLIENT_CMD_UNLOCK, kind, name);
}

int rlock_force_unlock_kind(rlock_client *c, const char *name,
                            enum rlock_kind kind)
{
    return (int)execute_query(c, CLIENT_CMD_FORCEUNLOCK, kind, name);
}

int rlock_is_locked_kind(rlock_client *c, const char *name,
                         enum rlock_kind kind)
{
    return (int)execute_query(c, CLIENT_CMD_ISLOCKED, kind, name);
}

int rlock_is_held_kind(rlock_client *c, const char *name, enum rlock_kind kind)
{
    return (int)execute_query(c, CLIENT_CMD_ISHELD, kind, name);
}

long long rlock_hold_count_kind(rlock_client *c, const char *name,
                                enum rlock_kind kind)
{
    return execute_query(c, CLIENT_CMD_HOLDCOUNT, kind, name);
}

int rlock_pttl_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                    long long *ttl_ms)
{
    struct request rq = request_new(CLIENT_CMD_PTTL, kind, name);

    if (ttl_ms == NULL)
        return RLOCK_EINVAL;
    /* -1 and -2 are answers here, not errors */
    return execute(c, &rq, ttl_ms, NULL);
}

int rlock_token(rlock_client *c, const char *name, long long *token)
{
    /* TOKEN names no kind: only the fenced lock has tokens */
    struct request rq = request_new(CLIENT_CMD_TOKEN, RLOCK_LOCK, name);

    if (token == NULL)
        return RLOCK_EINVAL;
    return execute(c, &rq, token, NULL);
}

/* OWNERS' reply, {pttl, {field, count, field, count...}[, kind]}, as
 * owners: one block, the strings after the array. RLOCK_OK,
 * RLOCK_EPROTOCOL for a reply of another shape, RLOCK_ESYSTEM. */
static int owners_of_reply(const redisReply *r, long long *pttl_ms,
                           struct rlock_owner **owners, size_t *count)
{
    const redisReply *pairs;
    struct rlock_owner *out;
    size_t n, bytes = 0;
    char *text;

    if (r->elements < 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_ARRAY ||
        r->element[1]->elements % 2 != 0)
        return RLOCK_EPROTOCOL;
    pairs = r->element[1];
    n = pairs->elements / 2;
    for (size_t i = 0; i < n; i++) {
        if (pairs->element[2 * i]->type != REDIS_REPLY_STRING ||
            pairs->element[2 * i + 1]->type != REDIS_REPLY_INTEGER)
            return RLOCK_EPROTOCOL;
        bytes += pairs->element[2 * i]->len + 1;
    }
    *pttl_ms = r->element[0]->integer;
    *count = n;
    *owners = NULL;
    if (n == 0)
        return RLOCK_OK;
    out = malloc(n * sizeof *out + bytes);
    if (out == NULL)
        return RLOCK_ESYSTEM;
    text = (char *)(out + n);
    for (size_t i = 0; i < n; i++) {
        const redisReply *field = pairs->element[2 * i];

        out[i].owner = memcpy(text, field->str, field->len);
        text[field->len] = '\0';
        text += field->len + 1;
        out[i].holds = pairs->element[2 * i + 1]->integer;
    }
    *owners = out;
    return RLOCK_OK;
}

/* OWNERS ... WITHNAMES' fourth element, {field, name or nil...} in the
 * owners' order, as names: one block, the strings after the pointers
 * (NULL for nil). RLOCK_OK, RLOCK_EPROTOCOL, RLOCK_ESYSTEM. */
static int names_of_reply(const redisReply *r, size_t count, char ***names)
{
    const redisReply *pairs;
    size_t bytes = 0;
    char **out, *text;

    *names = NULL;
    if (r->elements != 4 || r->element[3]->type != REDIS_REPLY_ARRAY ||
        r->element[3]->elements != 2 * count)
        return RLOCK_EPROTOCOL;
    pairs = r->element[3];
    for (size_t i = 0; i < count; i++) {
        const redisReply *value = pairs->element[2 * i + 1];

        if (value->type != REDIS_REPLY_STRING && value->type != REDIS_REPLY_NIL)
            return RLOCK_EPROTOCOL;
        bytes += value->type == REDIS_REPLY_STRING ? value->len + 1 : 0;
    }
    if (count == 0)
        return RLOCK_OK;
    if ((out = malloc(count * sizeof *out + bytes)) == NULL)
        return RLOCK_ESYSTEM;
    text = (char *)(out + count);
    for (size_t i = 0; i < count; i++) {
        const redisReply *value = pairs->element[2 * i + 1];

        out[i] = NULL;
        if (value->type != REDIS_REPLY_STRING)
            continue;
        out[i] = memcpy(text, value->str, value->len);
        text[value->len] = '\0';
        text += value->len + 1;
    }
    *names = out;
    return RLOCK_OK;
}

int rlock_owners_held_as(rlock_client *c, const char *name,
                         enum rlock_kind kind, long long *pttl_ms,
                         struct rlock_owner **owners, char ***names,
                         size_t *count, char *held_as, size_t size)
{
    struct request rq =
        request_new(names != NULL ? CLIENT_CMD_OWNERS_NAMED : CLIENT_CMD_OWNERS,
                    kind, name);
    redisReply *r;
    long long unused;
    int err;

    if (pttl_ms == NULL || owners == NULL || count == NULL ||
        (held_as == NULL && size > 0))
        return RLOCK_EINVAL;
    err = execute(c, &rq, &unused, &r);
    if (err != RLOCK_OK)
        return err;
    err = owners_of_reply(r, pttl_ms, owners, count);
    if (err == RLOCK_OK && size > 0) {
        const redisReply *k = r->elements > 2 ? r->element[2] : NULL;

        snprintf(held_as, size, "%.*s",
                 k && k->type == REDIS_REPLY_STRING ? (int)k->len : 0,
                 k && k->type == REDIS_REPLY_STRING ? k->str : "");
    }
    if (err == RLOCK_OK && names != NULL &&
        (err = names_of_reply(r, *count, names)) != RLOCK_OK) {
        rlock_owners_free(*owners);
        *owners = NULL;
    }
    freeReplyObject(r);
    return err;
}

int rlock_owners_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                      long long *pttl_ms, struct rlock_owner **owners,
                      size_t *count)
{
    return rlock_owners_held_as(c, name, kind, pttl_ms, owners, NULL, count,
                                NULL, 0);
}

int rlock_owners_named_kind(rlock_client *c, const char *name,
                            enum rlock_kind kind, long long *pttl_ms,
                            struct rlock_owner **owners, char ***names,
                            size_t *count)
{
    if (names == NULL)
        return RLOCK_EINVAL;
    return rlock_owners_held_as(c, name, kind, pttl_ms, owners, names, count,
                                NULL, 0);
}

void rlock_owners_free(struct rlock_owner *owners)
{
    free(owners);
}

/* ---- semaphores and the count-down latch ------------------------------ */

/* A semaphore's or latch's command with a number after its name (none
 * when amount is OPTION_ABSENT), answered with an integer in *value.
 * RLOCK_OK or an error. */
static int execute_count(rlock_client *c, enum client_command_id id,
                         const char *name, long long amount, long long *value)
{
    struct request rq = request_new(id, RLOCK_LOCK, name);

    rq.amount = amount;
    return execute(c, &rq, value, NULL);
}

/* trySetPermits and trySetCount: 1 set, 0 set before, or an error. */
static int execute_try_set(rlock_client *c, enum client_command_id id,
                           const char *name, long long count)
{
    long long set;
    int err;

    if (!valid_count(count, 0))
        return RLOCK_EINVAL;
    err = execute_count(c, id, name, count, &set);
    return err != RLOCK_OK ? err : (int)set;
}

int rlock_semaphore_set(rlock_client *c, const char *name, long long permits)
{
    return execute_try_set(c, CLIENT_CMD_SETPERMITS, name, permits);
}

int rlock_semaphore_add(rlock_client *c, const char *name, long long delta,
                        long long *available)
{
    long long unused;

    if (delta < -COMMAND_MAX_COUNT || delta > COMMAND_MAX_COUNT)
        return RLOCK_EINVAL;
    return execute_count(c, CLIENT_CMD_ADDPERMITS, name, delta,
                         available != NULL ? available : &unused);
}

int rlock_semaphore_available(rlock_client *c, const char *name,
                              long long *available)
{
    if (available == NULL)
        return RLOCK_EINVAL;
    return execute_count(c, CLIENT_CMD_PERMITS, name, OPTION_ABSENT, available);
}

/* ACQUIRE or RELEASE of permits, with a WAIT unless wait_ms is
 * OPTION_ABSENT: its reply (1 or 0) or an error. */
static int execute_permits(rlock_client *c, enum client_command_id id,
                           const char *name, long long permits,
                           long long wait_ms)
{
    struct request rq = request_new(id, RLOCK_LOCK, name);
    long long reply;
    int err;

    if (!valid_count(permits, 1))
        return RLOCK_EINVAL;
    rq.amount = permits;
    rq.wait_ms = wait_ms;
    err = execute(c, &rq, &reply, NULL);
    return err != RLOCK_OK ? err : reply != 0;
}

int rlock_acquire(rlock_client *c, const char *name, long long permits)
{
    int rc =
        execute_permits(c, CLIENT_CMD_ACQUIRE, name, permits, OPTION_ABSENT);

    return rc < 0 ? rc : RLOCK_OK; /* +OK */
}

int rlock_try_acquire(rlock_client *c, const char *name, long long permits,
                      long long wait_ms)
{
    if (!valid_wait(wait_ms))
        return RLOCK_EINVAL;
    return execute_permits(c, CLIENT_CMD_ACQUIRE, name, permits, wait_ms);
}

int rlock_release(rlock_client *c, const char *name, long long permits)
{
    return execute_permits(c, CLIENT_CMD_RELEASE, name, permits, OPTION_ABSENT);
}

/* Whether the record names permits of the semaphore the client took;
 * forget: drop them from it (they were lost, and are told once). */
static bool permits_recorded(rlock_client *c, const char *name, bool forget)
{
    struct request rq = request_new(CLIENT_CMD_RELEASE, RLOCK_LOCK, name);
    struct hold **link;
    bool recorded;

    pthread_mutex_lock(&c->mutex);
    link = hold_find(c, NULL, &rq, "");
    recorded = *link != NULL;
    if (recorded && forget)
        hold_unlink(link);
    pthread_mutex_unlock(&c->mutex);
    return recorded;
}

/*
 * PERMITS name HELD: the permits rlockd's record in Redis says the
 * session holds. None, where the client took some, is permits that came
 * back while it lived (its rlockd's watchdog stopped, its session was not
 * given back): lost.
 */
int rlock_semaphore_held(rlock_client *c, const char *name)
{
    long long held;

    if (c == NULL || name == NULL)
        return RLOCK_EINVAL;
    if (!permits_recorded(c, name, false))
        return 0;
    held = execute_query(c, CLIENT_CMD_PERMITS_HELD, RLOCK_LOCK, name);
    if (held < 0)
        return (int)held;
    if (held > 0)
        return 1;
    permits_recorded(c, name, true);
    return RLOCK_ELOCKLOST;
}

/* An expirable permit's id as rlockd names it, 32 hex digits in lower
 * case, into out; false if id is not one. */
static bool permit_id_copy(const char *id, char out[RLOCK_PERMIT_ID_SIZE])
{
    size_t i;

    for (i = 0; id[i] != '\0' && i < RLOCK_PERMIT_ID_SIZE - 1; i++) {
        if (!isxdigit((unsigned char)id[i]))
            return false;
        out[i] = (char)tolower((unsigned char)id[i]);
    }
    out[i] = '\0';
    return i == RLOCK_PERMIT_ID_SIZE - 1 && id[i] == '\0';
}

int rlock_acquire_expirable(rlock_client *c, const char *name,
                            long long wait_ms, long long lease_ms,
                            char id[RLOCK_PERMIT_ID_SIZE])
{
    struct request rq =
        request_new(CLIENT_CMD_ACQUIRE_EXPIRABLE, RLOCK_LOCK, name);
    redisReply *r;
    long long taken;
    int err;

    if (id == NULL || !valid_wait(wait_ms) || !valid_lease(lease_ms))
        return RLOCK_EINVAL;
    id[0] = '\0';
    rq.wait_ms = wait_ms;
    rq.lease_ms = lease_ms;
    err = execute(c, &rq, &taken, &r);
    if (err != RLOCK_OK)
        return err;
    if (taken)
        permit_id_copy(r->str, id); /* checked: 32 characters */
    freeReplyObject(r);
    return (int)taken;
}

int rlock_release_expirable(rlock_client *c, const char *name, const char *id)
{
    struct request rq =
        request_new(CLIENT_CMD_RELEASE_EXPIRABLE, RLOCK_LOCK, name);
    char permit_id[RLOCK_PERMIT_ID_SIZE];
    long long released;

    if (id == NULL || !permit_id_copy(id, permit_id))
        return RLOCK_EINVAL;
    rq.permit_id = permit_id;
    return execute(c, &rq, &released, NULL);
}

int rlock_latch_set(rlock_client *c, const char *name, long long count)
{
    return execute_try_set(c, CLIENT_CMD_LATCHSET, name, count);
}

int rlock_count_down(rlock_client *c, const char *name, long long *left)
{
    long long unused;

    return execute_count(c, CLIENT_CMD_COUNTDOWN, name, OPTION_ABSENT,
                         left != NULL ? left : &unused);
}

int rlock_latch_count(rlock_client *c, const char *name, long long *count)
{
    if (count == NULL)
        return RLOCK_EINVAL;
    return execute_count(c, CLIENT_CMD_LATCHCOUNT, name, OPTION_ABSENT, count);
}

int rlock_await(rlock_client *c, const char *name, long long wait_ms)
{
    struct request rq = request_new(CLIENT_CMD_AWAIT, RLOCK_LOCK, name);
    long long open;
    int err;

    if (!valid_wait(wait_ms))
        return RLOCK_EINVAL;
    rq.wait_ms = wait_ms;
    err = execute(c, &rq, &open, NULL);
    return err != RLOCK_OK ? err : open != 0;
}

/* The functions from before there were kinds: the plain lock's case. */

int rlock_lock(rlock_client *c, const char *name, long long lease_ms)
{
    return rlock_lock_kind(c, name, RLOCK_LOCK, lease_ms, NULL);
}

int rlock_trylock(rlock_client *c, const char *name, long long wait_ms,
                  long long lease_ms)
{
    return rlock_trylock_kind(c, name, RLOCK_LOCK, wait_ms, lease_ms, NULL);
}

int rlock_unlock(rlock_client *c, const char *name)
{
    return rlock_unlock_kind(c, name, RLOCK_LOCK);
}

int rlock_force_unlock(rlock_client *c, const char *name)
{
    return rlock_force_unlock_kind(c, name, RLOCK_LOCK);
}

int rlock_is_locked(rlock_client *c, const char *name)
{
    return rlock_is_locked_kind(c, name, RLOCK_LOCK);
}

int rlock_is_held(rlock_client *c, const char *name)
{
    return rlock_is_held_kind(c, name, RLOCK_LOCK);
}

long long rlock_hold_count(rlock_client *c, const char *name)
{
    return rlock_hold_count_kind(c, name, RLOCK_LOCK);
}

int rlock_pttl(rlock_client *c, const char *name, long long *ttl_ms)
{
    return rlock_pttl_kind(c, name, RLOCK_LOCK, ttl_ms);
}

/* ---- multi-locks: MLOCK and MUNLOCK ----------------------------------- */

/* The words of an MLOCK or MUNLOCK, in words (count + 6 of room): the
 * command, the thread-id, the names, then WAIT and LEASE unless absent
 * (a watchdog lease is sent as none). Returns argc. */
static int multilock_argv(const char *command, const struct thread_state *t,
                          const char *const *names, size_t count,
                          long long wait_ms, long long lease_ms,
                          const char **words, size_t *lens, char numbers[2][24])
{
    int argc = 0;

    words[argc++] = command;
    words[argc++] = t->tid_text;
    for (size_t i = 0; i < count; i++)
        words[argc++] = names[i];
    if (wait_ms != OPTION_ABSENT) {
        snprintf(numbers[0], sizeof numbers[0], "%lld", wait_ms);
        words[argc++] = "WAIT";
        words[argc++] = numbers[0];
    }
    if (lease_ms != OPTION_ABSENT && lease_ms != RLOCK_WATCHDOG) {
        snprintf(numbers[1], sizeof numbers[1], "%lld", lease_ms);
        words[argc++] = "LEASE";
        words[argc++] = numbers[1];
    }
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(words[i]);
    return argc;
}

/* Sends an MLOCK or MUNLOCK on the thread's connection: its reply, +OK
 * (1) or :0 (0), or an error. rq carries the WAIT the timeout needs. */
static int multilock_send(rlock_client *c, struct thread_state *t,
                          const struct request *rq, const char *command,
                          const char *const *names, size_t count,
                          long long lease_ms, long long *value)
{
    const char **words = calloc(count + 6, sizeof *words);
    size_t *lens = calloc(count + 6, sizeof *lens);
    char numbers[2][24];
    redisReply *r = NULL;
    int argc, err = RLOCK_ESYSTEM;

    if (words != NULL && lens != NULL) {
        argc = multilock_argv(command, t, names, count, rq->wait_ms, lease_ms,
                              words, lens, numbers);
        err = rlock_conn_command(&t->conn, argc, words, lens,
                                 reply_timeout(c, rq), &r);
    }
    if (err == RLOCK_OK) {
        if (r->type == REDIS_REPLY_STATUS)
            *value = 1;
        else if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
            *value = 0;
        else
            err = RLOCK_EPROTOCOL;
        freeReplyObject(r);
    }
    free(words);
    free(lens);
    if (err != RLOCK_OK && rlock_conn_broken(&t->conn))
        thread_state_lost(c, t);
    return err;
}

/* Whether every name is a name: at least one, none empty. */
static bool multilock_names_valid(const char *const *names, size_t count)
{
    if (names == NULL || count == 0)
        return false;
    for (size_t i = 0; i < count; i++)
        if (names[i] == NULL || names[i][0] == '\0')
            return false;
    return true;
}

/*
 * MLOCK: each lock is recorded as rlock_lock() records it (a record made
 * before the command goes out, so that a granted lock is never left
 * unrecorded). A name whose hold was lost with its session is told once
 * (RLOCK_ELOCKLOST), as rlock_lock() tells it, and nothing is sent.
 */
int rlock_multilock(rlock_client *c, const char *const *names, size_t count,
                    long long wait_ms, long long lease_ms)
{
    struct request rq = request_new(CLIENT_CMD_LOCK, RLOCK_LOCK, NULL);
    struct hold **spares = NULL;
    struct thread_state *t;
    long long held = 0;
    bool lost = false;
    int err;

    if (c == NULL || !multilock_names_valid(names, count) ||
        !valid_wait(wait_ms) || !valid_lease(lease_ms))
        return RLOCK_EINVAL;
    if ((spares = calloc(count, sizeof *spares)) == NULL)
        return RLOCK_ESYSTEM;
    err = thread_state_get(c, &t);
    for (size_t i = 0; err == RLOCK_OK && i < count; i++) {
        rq.name = names[i];
        if ((spares[i] = hold_new(&rq)) == NULL)
            err = RLOCK_ESYSTEM;
        else
            lost |= hold_take_lost(c, t, &rq);
    }
    if (err == RLOCK_OK && lost)
        err = RLOCK_ELOCKLOST; /* told once; nothing sent */
    rq.wait_ms = wait_ms;
    if (err == RLOCK_OK)
        err = multilock_send(c, t, &rq, "MLOCK", names, count, lease_ms, &held);
    for (size_t i = 0; err == RLOCK_OK && held == 1 && i < count; i++) {
        rq.name = names[i];
        holds_update(c, t, &rq, RLOCK_OK, 1, &spares[i]);
    }
    for (size_t i = 0; i < count; i++)
        free(spares[i]);
    free(spares);
    return err != RLOCK_OK ? err : (int)held;
}

/*
 * MUNLOCK: MUNLOCK's +OK does not say which holds ended and which only
 * went down by one, so each named lock stays recorded while
 * rlock_hold_count() says it is held (a query per name, after the one
 * round trip that released them).
 */
int rlock_multiunlock(rlock_client *c, const char *const *names, size_t count)
{
    struct request rq = request_new(CLIENT_CMD_UNLOCK, RLOCK_LOCK, NULL);
    struct hold *none = NULL;
    struct thread_state *t;
    long long done;
    int err;

    if (c == NULL || !multilock_names_valid(names, count))
        return RLOCK_EINVAL;
    if ((err = thread_state_get(c, &t)) != RLOCK_OK)
        return err;
    err = multilock_send(c, t, &rq, "MUNLOCK", names, count, OPTION_ABSENT,
                         &done);
    for (size_t i = 0; err != RLOCK_ECONNLOST && i < count; i++) {
        rq.name = names[i];
        if (execute_query(c, CLIENT_CMD_HOLDCOUNT, RLOCK_LOCK, names[i]) == 0)
            holds_update(c, t, &rq, RLOCK_OK, 1, &none);
    }
    return err;
}

const char *rlock_strerror(int err)
{
    if (err > 0 || -err >= (int)(sizeof error_texts / sizeof *error_texts))
        return "unknown error";
    return error_texts[-err];
}
