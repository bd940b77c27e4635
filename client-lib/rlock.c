/*
 * rlock.c - librlock, the rlockd client behind rlock.h: the API, the
 * table of each client's per-thread connections, and the record of the
 * holds the client believes it has, which turns a lost connection into
 * RLOCK_ELOCKLOST later. Every call, whatever its lock kind, is one row
 * of the command table and one of the kind table, sent by execute().
 *
 * Never: holds the client's mutex during I/O (a thread blocked in LOCK
 * must not delay another); lets two threads use one connection; retries
 * a command by itself (after a lost connection its outcome is unknown,
 * and the caller decides). Talking to rlockd is connection.c's.
 */
#include "rlock.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "command.h" /* COMMAND_MAX_MS */
#include "connection.h"
#include "heartbeat.h"

/* request.wait_ms / lease_ms when the option is not sent. */
#define OPTION_ABSENT (-2)
#define MAX_ARGS 8 /* TRYLOCK name tid kind WAIT ms LEASE ms */

/* A lock a thread of this client holds, as far as the library knows. */
struct hold {
    struct hold *next;
    enum rlock_kind kind; /* a lock is its name and its kind */
    /* A connection went while the lock was held: it may be gone. */
    bool suspect;
    /* rlockd had no session to give back: it is gone, and the next
     * LOCK or UNLOCK of it says so. */
    bool lost;
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

struct rlock_client {
    pthread_mutex_t mutex; /* guards threads and every thread's holds */
    struct thread_state *threads;
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
};

/* The commands the API sends, and how each is sent and answered. */
static const struct client_command {
    const char *name;
    bool with_thread; /* the caller's thread-id follows the lock name */
    bool blocks;      /* waits with no limit: no reply timeout */
    /* REDIS_REPLY_INTEGER, STATUS for +OK, or ARRAY: handed back whole */
    int reply_type;
    enum hold_effect effect;
} client_commands[] = {
    [CLIENT_CMD_LOCK] = {"LOCK", true, true, REDIS_REPLY_STATUS, HOLD_ACQUIRE},
    [CLIENT_CMD_TRYLOCK] = {"TRYLOCK", true, false, REDIS_REPLY_INTEGER,
                            HOLD_ACQUIRE},
    [CLIENT_CMD_UNLOCK] = {"UNLOCK", true, false, REDIS_REPLY_INTEGER,
                           HOLD_RELEASE},
    [CLIENT_CMD_FORCEUNLOCK] = {"FORCEUNLOCK", false, false,
                                REDIS_REPLY_INTEGER, HOLD_NONE},
    [CLIENT_CMD_ISLOCKED] = {"ISLOCKED", false, false, REDIS_REPLY_INTEGER,
                             HOLD_NONE},
    [CLIENT_CMD_ISHELD] = {"ISHELD", true, false, REDIS_REPLY_INTEGER,
                           HOLD_NONE},
    [CLIENT_CMD_HOLDCOUNT] = {"HOLDCOUNT", true, false, REDIS_REPLY_INTEGER,
                              HOLD_NONE},
    [CLIENT_CMD_PTTL] = {"PTTL", false, false, REDIS_REPLY_INTEGER, HOLD_NONE},
    [CLIENT_CMD_TOKEN] = {"TOKEN", false, false, REDIS_REPLY_INTEGER,
                          HOLD_NONE},
    [CLIENT_CMD_OWNERS] = {"OWNERS", false, false, REDIS_REPLY_ARRAY,
                           HOLD_NONE},
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

/* One API call: a command, its lock (name and kind) and its options. */
struct request {
    const struct client_command *command;
    enum rlock_kind kind;
    const char *name;
    long long wait_ms;  /* WAIT, or OPTION_ABSENT */
    long long lease_ms; /* LEASE, or OPTION_ABSENT */
};

static const char *const error_texts[] = {
    [-RLOCK_OK] = "success",
    [-RLOCK_ENOTOWNER] = "lock not held by this thread",
    [-RLOCK_ELOCKLOST] = "lock was lost while held",
    [-RLOCK_EDAEMON] = "cannot connect to rlockd",
    [-RLOCK_EREDIS] = "rlockd cannot reach Redis",
    [-RLOCK_ETIMEOUT] = "no reply from rlockd in time",
    [-RLOCK_ECONNLOST] = "connection to rlockd lost",
    [-RLOCK_EINVAL] = "invalid argument",
    [-RLOCK_ELIMIT] = "a limit of rlockd was reached",
    [-RLOCK_ESHUTDOWN] = "rlockd is shutting down",
    [-RLOCK_EAUTH] = "authentication with rlockd failed",
    [-RLOCK_ESYSTEM] = "out of memory or system error",
    [-RLOCK_EPROTOCOL] = "unexpected reply from rlockd",
    [-RLOCK_EWRONGTYPE] = "the name's key holds something that is not a lock",
    [-RLOCK_ENOREPLICAS] = "no Redis replica acknowledged the lock in time",
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
/* Whether any thread of the client holds a lock, as far as it knows. */
static bool client_holds_any(void *ctx)
{
    rlock_client *c = ctx;
    bool any = false;

    pthread_mutex_lock(&c->mutex);
    for (struct thread_state *t = c->threads; t != NULL && !any; t = t->next)
        any = t->holds != NULL;
    pthread_mutex_unlock(&c->mutex);
    return any;
}

/* rlockd had no session of the client to give back: every lock is lost. */
static void client_session_lost(void *ctx)
{
    rlock_client *c = ctx;

    pthread_mutex_lock(&c->mutex);
    for (struct thread_state *t = c->threads; t != NULL; t = t->next)
        for (struct hold *h = t->holds; h != NULL; h = h->next)
            h->lost = true;
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
 * is open, rlockd saw the session end and may have released them all;
 * otherwise the session goes on, and only this thread's are in doubt.
 */
static void thread_state_lost(rlock_client *c, struct thread_state *t)
{
    struct rlock_conn lost = t->conn;
    struct thread_state *other;
    bool session_ended = true;

    pthread_mutex_lock(&c->mutex);
    t->conn.ctx = NULL;
    for (other = c->threads; other != NULL; other = other->next)
        if (other->conn.ctx != NULL)
            session_ended = false;
    for (other = c->threads; other != NULL; other = other->next)
        if (session_ended || other == t)
            for (struct hold *h = other->holds; h != NULL; h = h->next)
                h->suspect = true;
    pthread_mutex_unlock(&c->mutex);
    rlock_conn_close(&lost);
}

/* ---- the record of holds --------------------------------------------- */

static struct hold **hold_find(struct thread_state *t, const char *name,
                               enum rlock_kind kind)
{
    struct hold **link = &t->holds;

    while (*link != NULL &&
           ((*link)->kind != kind || strcmp((*link)->name, name) != 0))
        link = &(*link)->next;
    return link;
}

/*
 * Brings the record in line with what rlockd answered. An acquisition
 * (any value but 0: 1, or a fencing token) adds the hold (spare:
 * allocated before the command went out, so that a lock rlockd granted is
 * never left unrecorded); an UNLOCK that released
 * it, or that rlockd refused, drops it. An UNLOCK refused with -NOTOWNER
 * of a hold marked suspect is a lock lost with a connection.
 */
static int holds_update(rlock_client *c, struct thread_state *t,
                        const struct request *rq, int err, long long value,
                        struct hold **spare)
{
    struct hold **link, *h;

    pthread_mutex_lock(&c->mutex);
    link = hold_find(t, rq->name, rq->kind);
    h = *link;
    if (rq->command->effect == HOLD_ACQUIRE && err == RLOCK_OK && value != 0 &&
        h == NULL) {
        *link = *spare;
        *spare = NULL;
    } else if (rq->command->effect == HOLD_ACQUIRE && h != NULL &&
               err == RLOCK_ELOCKLOST) { /* told the old hold is gone */
        *link = h->next;
        free(h);
    } else if (rq->command->effect == HOLD_RELEASE && h != NULL &&
               (err == RLOCK_ENOTOWNER || err == RLOCK_ELOCKLOST ||
                (err == RLOCK_OK && value == 1))) {
        if (err == RLOCK_ENOTOWNER && h->suspect)
            err = RLOCK_ELOCKLOST;
        *link = h->next;
        free(h);
    }
    pthread_mutex_unlock(&c->mutex);
    return err;
}

/* Forgets the thread's hold of the lock if its session was lost: true
 * then. */
static bool hold_take_lost(rlock_client *c, struct thread_state *t,
                           const struct request *rq)
{
    struct hold **link, *h;
    bool lost;

    pthread_mutex_lock(&c->mutex);
    link = hold_find(t, rq->name, rq->kind);
    h = *link;
    lost = h != NULL && h->lost;
    if (lost) {
        *link = h->next;
        free(h);
    }
    pthread_mutex_unlock(&c->mutex);
    return lost;
}

/* ---- the one path every API call takes ------------------------------- */

static long long reply_timeout(const rlock_client *c, const struct request *rq)
{
    if (rq->command->blocks || rq->wait_ms == RLOCK_WAIT_FOREVER)
        return RLOCK_NO_TIMEOUT;
    if (rq->wait_ms > 0)
        return rq->wait_ms + c->target.command_timeout_ms;
    return c->target.command_timeout_ms;
}

struct argv_builder {
    const char *argv[MAX_ARGS];
    size_t lens[MAX_ARGS];
    int argc;
    char numbers[2][24]; /* the values of WAIT and LEASE */
    int numbers_used;
};

static void add_arg(struct argv_builder *b, const char *arg)
{
    b->argv[b->argc] = arg;
    b->lens[b->argc] = strlen(arg);
    b->argc++;
}

static void add_option(struct argv_builder *b, const char *option, long long ms)
{
    char *text = b->numbers[b->numbers_used++];

    if (ms == OPTION_ABSENT)
        return;
    snprintf(text, sizeof b->numbers[0], "%lld", ms);
    add_arg(b, option);
    add_arg(b, text);
}

static bool valid_kind(enum rlock_kind kind)
{
    return (unsigned)kind < sizeof client_kinds / sizeof *client_kinds;
}

/* What rlockd answers the request with: an acquisition of a kind with
 * tokens answers its token, even LOCK, whose others answer +OK. */
static int reply_type(const struct request *rq)
{
    if (rq->command->effect == HOLD_ACQUIRE && client_kinds[rq->kind].tokens)
        return REDIS_REPLY_INTEGER;
    return rq->command->reply_type;
}

/*
 * Sends a command on the calling thread's connection and stores its
 * reply's value in *value. A broken connection is closed here, and the
 * record of holds follows the outcome. A watchdog lease is sent as no
 * LEASE, rlockd's default; the plain lock's kind as no word, as before
 * there were kinds. A kind not in the table costs no trip. An array reply
 * goes to *array instead (the caller frees it).
 */
static int execute(rlock_client *c, enum client_command_id id,
                   enum rlock_kind kind, const char *name, long long wait_ms,
                   long long lease_ms, long long *value, redisReply **array)
{
    const struct request rq = {&client_commands[id], kind, name, wait_ms,
                               lease_ms == RLOCK_WATCHDOG ? OPTION_ABSENT
                                                          : lease_ms};
    struct argv_builder b = {.argc = 0};
    struct thread_state *t;
    struct hold *spare = NULL;
    long long reply = 0;
    int err;

    if (c == NULL || name == NULL || name[0] == '\0' || !valid_kind(kind))
        return RLOCK_EINVAL;
    if (rq.command->effect == HOLD_ACQUIRE) {
        spare = calloc(1, sizeof *spare + strlen(name) + 1);
        if (spare == NULL)
            return RLOCK_ESYSTEM;
        spare->kind = kind;
        strcpy(spare->name, name);
    }
    err = thread_state_get(c, &t);
    if (err != RLOCK_OK)
        goto out;
    if (rq.command->effect != HOLD_NONE && hold_take_lost(c, t, &rq)) {
        err = RLOCK_ELOCKLOST; /* told once; nothing sent */
        goto out;
    }
    add_arg(&b, rq.command->name);
    add_arg(&b, name);
    if (rq.command->with_thread)
        add_arg(&b, t->tid_text);
    if (client_kinds[kind].word != NULL)
        add_arg(&b, client_kinds[kind].word);
    add_option(&b, "WAIT", rq.wait_ms);
    add_option(&b, "LEASE", rq.lease_ms);
    if (rq.command->reply_type == REDIS_REPLY_ARRAY) {
        err = rlock_conn_command(&t->conn, b.argc, b.argv, b.lens,
                                 reply_timeout(c, &rq), array);
        if (err == RLOCK_OK && (*array)->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(*array);
            err = RLOCK_EPROTOCOL;
        }
    } else {
        err =
            rlock_conn_exchange(&t->conn, b.argc, b.argv, b.lens,
                                reply_timeout(c, &rq), reply_type(&rq), &reply);
    }
    if (err != RLOCK_OK && rlock_conn_broken(&t->conn))
        thread_state_lost(c, t);
    err = holds_update(c, t, &rq, err, reply, &spare);
    if (err == RLOCK_OK)
        *value = reply;
out:
    free(spare);
    return err;
}

/* A command without WAIT or LEASE, answered with a count or a boolean:
 * the value or an error. */
static long long execute_query(rlock_client *c, enum client_command_id id,
                               enum rlock_kind kind, const char *name)
{
    long long value;
    int err =
        execute(c, id, kind, name, OPTION_ABSENT, OPTION_ABSENT, &value, NULL);

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
    rlock_client *c = calloc(1, sizeof *c);
    struct thread_state *t;
    int e = RLOCK_ESYSTEM;

    if (c != NULL) {
        pthread_mutex_init(&c->mutex, NULL);
        e = rlock_target_init(&c->target, addr, opts);
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
    long long reply;
    int err;

    if (token != NULL)
        *token = 0;
    if (!valid_lease(lease_ms))
        return RLOCK_EINVAL;
    err = execute(c, CLIENT_CMD_LOCK, kind, name, OPTION_ABSENT, lease_ms,
                  &reply, NULL);
    if (err == RLOCK_OK)
        store_token(kind, reply, token);
    return err;
}

int rlock_trylock_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                       long long wait_ms, long long lease_ms, long long *token)
{
    long long reply;
    int err;

    if (token != NULL)
        *token = 0;
    if (wait_ms < RLOCK_WAIT_FOREVER || wait_ms > COMMAND_MAX_MS ||
        !valid_lease(lease_ms))
        return RLOCK_EINVAL;
    err = execute(c, CLIENT_CMD_TRYLOCK, kind, name, wait_ms, lease_ms, &reply,
                  NULL);
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
    if (ttl_ms == NULL)
        return RLOCK_EINVAL;
    /* -1 and -2 are answers here, not errors */
    return execute(c, CLIENT_CMD_PTTL, kind, name, OPTION_ABSENT, OPTION_ABSENT,
                   ttl_ms, NULL);
}

int rlock_token(rlock_client *c, const char *name, long long *token)
{
    if (token == NULL)
        return RLOCK_EINVAL;
    /* TOKEN names no kind: only the fenced lock has tokens */
    return execute(c, CLIENT_CMD_TOKEN, RLOCK_LOCK, name, OPTION_ABSENT,
                   OPTION_ABSENT, token, NULL);
}

/* OWNERS' reply, {pttl, {field, count, field, count...}}, as owners: one
 * block, the strings after the array. RLOCK_OK, RLOCK_EPROTOCOL for a
 * reply of another shape, RLOCK_ESYSTEM. */
static int owners_of_reply(const redisReply *r, long long *pttl_ms,
                           struct rlock_owner **owners, size_t *count)
{
    const redisReply *pairs;
    struct rlock_owner *out;
    size_t n, bytes = 0;
    char *text;

    if (r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
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

int rlock_owners_kind(rlock_client *c, const char *name, enum rlock_kind kind,
                      long long *pttl_ms, struct rlock_owner **owners,
                      size_t *count)
{
    redisReply *r;
    long long unused;
    int err;

    if (pttl_ms == NULL || owners == NULL || count == NULL)
        return RLOCK_EINVAL;
    err = execute(c, CLIENT_CMD_OWNERS, kind, name, OPTION_ABSENT,
                  OPTION_ABSENT, &unused, &r);
    if (err != RLOCK_OK)
        return err;
    err = owners_of_reply(r, pttl_ms, owners, count);
    freeReplyObject(r);
    return err;
}

void rlock_owners_free(struct rlock_owner *owners)
{
    free(owners);
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

const char *rlock_strerror(int err)
{
    if (err > 0 || -err >= (int)(sizeof error_texts / sizeof *error_texts))
        return "unknown error";
    return error_texts[-err];
}
