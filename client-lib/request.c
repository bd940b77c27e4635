/*
 * request.c - the one path every API call takes. A call is a row of the
 * command table and one of the kind table. request_execute() builds its
 * words, sends them on the calling thread's connection, checks the reply,
 * and brings the record of holds in line with it.
 *
 * Never retries a command by itself. After a lost connection its outcome
 * is unknown, and the caller decides.
 */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h" /* COMMAND_MAX_MS, COMMAND_MAX_COUNT */

#define MAX_ARGS 8 /* TRYLOCK name tid kind WAIT ms LEASE ms */

/* The commands the API sends, by enum client_command_id. */
static const struct client_command client_commands[] = {
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

struct request request_new(enum client_command_id id, enum rlock_kind kind,
                           const char *name)
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

/* How long the request's reply may take: no limit for one that waits
 * without one, its WAIT and the command timeout, or the timeout. */
long long request_reply_timeout(const rlock_client *c, const struct request *rq)
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
                                   request_reply_timeout(c, rq), reply_type(rq),
                                   value);
    err = rlock_conn_command(&t->conn, b.argc, b.argv, b.lens,
                             request_reply_timeout(c, rq), whole);
    if (err == RLOCK_OK && (err = whole_reply_value(rq, *whole, value)) != 0)
        freeReplyObject(*whole);
    return err;
}

/*
 * Sends a request on the calling thread's connection and stores its
 * reply's value in *value. A broken connection is closed here, and the
 * record of holds follows the outcome. A kind not in the table costs no
 * trip. A reply of a command that hands it back whole goes to *whole
 * too (the caller frees it): OWNERS' array, or an expirable permit's id,
 * which names its record.
 */
int request_execute(rlock_client *c, const struct request *rq, long long *value,
                    redisReply **whole)
{
    struct thread_state *t;
    struct rlock_hold *spare = NULL;
    long long reply = 0;
    int err;

    if (c == NULL || rq->name == NULL || rq->name[0] == '\0' ||
        !valid_kind(rq->kind))
        return RLOCK_EINVAL;
    if (rq->command->effect == HOLD_ACQUIRE && (spare = holds_new(rq)) == NULL)
        return RLOCK_ESYSTEM;
    err = threads_get(c, &t);
    if (err != RLOCK_OK)
        goto out;
    if (rq->command->effect != HOLD_NONE && holds_take_lost(c, t, rq)) {
        err = RLOCK_ELOCKLOST; /* told once; nothing sent */
        goto out;
    }
    err = request_send(c, t, rq, &reply, whole);
    if (err != RLOCK_OK && rlock_conn_broken(&t->conn))
        threads_lost(c, t);
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
long long request_query(rlock_client *c, enum client_command_id id,
                        enum rlock_kind kind, const char *name)
{
    struct request rq = request_new(id, kind, name);
    long long value;
    int err = request_execute(c, &rq, &value, NULL);

    return err != RLOCK_OK ? err : value;
}

/* WAIT and LEASE are checked against the protocol's COMMAND_MAX_MS here,
 * so that WAIT plus the command timeout cannot overflow, and a bad value
 * costs no trip. */
bool request_valid_lease(long long lease_ms)
{
    return lease_ms == RLOCK_WATCHDOG ||
           (lease_ms > 0 && lease_ms <= COMMAND_MAX_MS);
}

bool request_valid_wait(long long wait_ms)
{
    return wait_ms >= RLOCK_WAIT_FOREVER && wait_ms <= COMMAND_MAX_MS;
}

/* A count of permits, or a latch's, as rlockd takes it: from min to
 * Java's largest int. */
bool request_valid_count(long long n, long long min)
{
    return n >= min && n <= COMMAND_MAX_COUNT;
}

/* An acquisition's reply is its fencing token for a kind with tokens;
 * token (NULL: not wanted) was set to 0 before, for every other case. */
void request_store_token(enum rlock_kind kind, long long reply,
                         long long *token)
{
    if (token != NULL && client_kinds[kind].tokens)
        *token = reply;
}
