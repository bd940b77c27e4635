/*
 * commands.c - dispatch from the command table's handler column, and
 * every command's handler.
 *
 * Every request passes three gates before its handler, in this order:
 * authentication (-NOAUTH), its arguments (-ERR), and its user's
 * permissions (-NOPERM, acl_allows).
 */
#include "front/commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "base/acl.h"
#include "base/glob.h"
#include "base/stats.h"
#include "client_id.h"
#include "command.h"
#include "engine/session.h"
#include "front/info.h"
#include "reply.h"

/* An unknown command's name is quoted in the error up to this length. */
#define QUOTED_NAME_MAX 64

/* 0, or -ENOMEM when the reply could not be written. */
typedef int command_handler(struct client *c, const struct command *cmd,
                            const struct command_args *a);

static struct {
    const struct config *cfg;
    struct buffer key; /* the lock key being made (lock_key) */
} commands;

void commands_init(const struct config *cfg)
{
    commands.cfg = cfg;
    buffer_init(&commands.key);
}

void commands_free(void)
{
    buffer_free(&commands.key);
}

/* ---- lock commands: requests for the engine ---------------------------- */

/*
 * A lock name's Redis key: [lock] name_prefix, then the name, as
 * Redisson's NameMapper maps them. Made in one reused buffer, which the
 * engine copies from at once. 0 or -ENOMEM.
 */
static int lock_key(const char *name, size_t len, const char **key,
                    size_t *key_len)
{
    const char *prefix = commands.cfg->name_prefix;
    int err;

    if (prefix[0] == '\0') {
        *key = name;
        *key_len = len;
        return 0;
    }
    commands.key.len = 0;
    err = buffer_append(&commands.key, prefix, strlen(prefix));
    if (err == 0)
        err = buffer_append(&commands.key, name, len);
    *key = commands.key.data;
    *key_len = commands.key.len;
    return err;
}

/* What each lock command asks of the engine. */
static const enum lock_request_op op_of_command[COMMAND_COUNT] = {
    [CMD_LOCK] = LOCK_REQUEST_ACQUIRE,
    [CMD_TRYLOCK] = LOCK_REQUEST_ACQUIRE,
    [CMD_UNLOCK] = LOCK_REQUEST_RELEASE,
    [CMD_FORCEUNLOCK] = LOCK_REQUEST_FORCE_RELEASE,
    [CMD_ISLOCKED] = LOCK_REQUEST_IS_LOCKED,
    [CMD_ISHELD] = LOCK_REQUEST_IS_HELD,
    [CMD_HOLDCOUNT] = LOCK_REQUEST_HOLD_COUNT,
    [CMD_PTTL] = LOCK_REQUEST_PTTL,
    [CMD_OWNERS] = LOCK_REQUEST_OWNERS,
    [CMD_TOKEN] = LOCK_REQUEST_TOKEN,
    [CMD_SETPERMITS] = LOCK_REQUEST_TRY_SET,
    [CMD_ADDPERMITS] = LOCK_REQUEST_ADD,
    [CMD_PERMITS] = LOCK_REQUEST_AVAILABLE,
    [CMD_ACQUIRE] = LOCK_REQUEST_ACQUIRE,
    [CMD_RELEASE] = LOCK_REQUEST_RELEASE,
    [CMD_LATCHSET] = LOCK_REQUEST_TRY_SET,
    [CMD_COUNTDOWN] = LOCK_REQUEST_ADD,
    [CMD_LATCHCOUNT] = LOCK_REQUEST_AVAILABLE,
    [CMD_AWAIT] = LOCK_REQUEST_ACQUIRE,
};

/* The lock kind each kind word names; TOKEN is the fenced lock's. */
static const enum lock_kind_id kind_of_word[] = {
    [COMMAND_KIND_PLAIN] = LOCK_KIND_RLOCK,
    [COMMAND_KIND_FAIR] = LOCK_KIND_FAIR,
    [COMMAND_KIND_READ] = LOCK_KIND_READ,
    [COMMAND_KIND_WRITE] = LOCK_KIND_WRITE,
    [COMMAND_KIND_FENCED] = LOCK_KIND_FENCED,
};

/* The kind a command is for: the lock kind its word names, the fenced
 * lock's TOKEN, a semaphore's (expirable when its permit has an id) or
 * the latch's. */
static enum lock_kind_id kind_of_command(const struct command *cmd,
                                         const struct command_args *a)
{
    switch (cmd->id) {
    case CMD_TOKEN:
        return LOCK_KIND_FENCED;
    case CMD_SETPERMITS:
    case CMD_ADDPERMITS:
    case CMD_PERMITS:
        return LOCK_KIND_SEMAPHORE;
    case CMD_ACQUIRE:
    case CMD_RELEASE:
        return a->expirable || a->permit_id ? LOCK_KIND_EXPIRABLE
                                            : LOCK_KIND_SEMAPHORE;
    case CMD_LATCHSET:
    case CMD_COUNTDOWN:
    case CMD_LATCHCOUNT:
    case CMD_AWAIT:
        return LOCK_KIND_LATCH;
    default:
        return kind_of_word[a->kind];
    }
}

/* An expirable permit's id: a new random one (ACQUIRE), or the one the
 * client named (RELEASE ... ID), in lower case as Redisson shows them;
 * id has room for LOCK_PERMIT_ID_LEN + 1 bytes. 0 or a negative errno. */
static int permit_id_of(const struct command_args *a, char *id)
{
    char uuid[CLIENT_ID_RANDOM_SIZE];
    const char *from = a->permit_id;
    int err;

    if (from == NULL) {
        if ((err = client_id_random(uuid)) != 0)
            return err;
        from = uuid;
    }
    for (int n = 0; n < LOCK_PERMIT_ID_LEN; from++)
        if (*from != '-')
            id[n++] = (char)tolower((unsigned char)*from);
    id[LOCK_PERMIT_ID_LEN] = '\0';
    return 0;
}

/* Every lock, semaphore and latch command: a request for the engine,
 * answered in order. A grant is +OK for LOCK and a waiting ACQUIRE, :1
 * for the others that may wait (their caller asked for an answer). */
static int command_request(struct client *c, const struct command *cmd,
                           const struct command_args *a)
{
    const struct lock_kind *kind = lock_kinds[kind_of_command(cmd, a)];
    struct lock_request req = {.kind = kind,
                               .op = op_of_command[cmd->id],
                               .thread_id = a->thread_id,
                               .wait_ms = a->wait_ms,
                               .lease_ms = a->lease_ms,
                               .amount =
                                   cmd->id == CMD_COUNTDOWN ? -1 : a->amount};
    char id[LOCK_PERMIT_ID_LEN + 1];
    struct buffer *out;

    if (kind->holds == HOLDS_PERMIT_IDS && permit_id_of(a, id) != 0) {
        out = client_reply_buffer(c);
        return out ? reply_error(out, REPLY_ERR, "no randomness for an id")
                   : -ENOMEM;
    }
    req.permit_id = id;
    if (lock_key(a->name, a->name_len, &req.name, &req.name_len) != 0) {
        out = client_reply_buffer(c);
        return out ? reply_error(out, REPLY_ERR, "out of memory") : -ENOMEM;
    }
    client_start_call(c, &req, cmd->flags & CMD_ALONE,
                      cmd->id == CMD_LOCK ||
                          (cmd->id == CMD_ACQUIRE && a->wait_ms < 0));
    return 0;
}

/* ---- commands answered here ----------------------------------------------- */

static int command_clientid(struct client *c, const struct command *cmd,
                            const struct command_args *a)
{
    struct buffer *out;

    (void)cmd;
    if (a->name != NULL && client_id_valid(a->name, a->name_len)) {
        client_set_id(c, a->name, a->name_len, a->secret, a->secret_len,
                      a->resume);
        return 0;
    }
    out = client_reply_buffer(c);
    if (out == NULL)
        return -ENOMEM;
    if (a->name == NULL)
        return reply_bulk(out, c->session->id, c->session->id_len);
    return reply_error(out, REPLY_ERR,
                       "client-id must be 1-64 characters of A-Z a-z "
                       "0-9 . _ -");
}

/* CLIENT HEARTBEAT: the parser took any value the protocol allows; this
 * rlockd may allow less ([server] min_heartbeat_ms, max_heartbeat_ms). */
static int command_client(struct client *c, const struct command *cmd,
                          const struct command_args *a)
{
    const struct config *cfg = commands.cfg;
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (a->heartbeat_ms != 0 && (a->heartbeat_ms < cfg->min_heartbeat_ms ||
                                 a->heartbeat_ms > cfg->max_heartbeat_ms))
        return reply_error(out, REPLY_ERR,
                           "HEARTBEAT must be 0 (off) or %lld to %lld "
                           "milliseconds in this rlockd (min_heartbeat_ms, "
                           "max_heartbeat_ms)",
                           (long long)cfg->min_heartbeat_ms,
                           (long long)cfg->max_heartbeat_ms);
    client_set_heartbeat(c, a->heartbeat_ms);
    return reply_simple(out, "OK");
}

/* Whether connections must AUTH: a token or a user is configured. */
static bool auth_configured(void)
{
    return commands.cfg->auth_token[0] != '\0' || commands.cfg->acl != NULL;
}

/* A refusal costs the connection time (client_penalize), so that
 * guessing is slow. */
static int command_auth(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    const struct config *cfg = commands.cfg;
    struct buffer *out = client_reply_buffer(c);
    const struct acl_user *user;
    int err;

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (!auth_configured())
        return reply_error(out, REPLY_ERR,
                           "AUTH called without any auth token or user "
                           "configured");
    user = acl_authenticate(cfg->acl, cfg->auth_token, a->name, a->name_len,
                            a->password, a->password_len);
    if (user == NULL) {
        stats.auth_failures++;
        err = reply_error(out, REPLY_ERR, "%s",
                          a->name != NULL ? "invalid username-password pair"
                                          : "invalid auth token");
        client_penalize(c, "AUTH");
        return err;
    }
    c->user = user;
    return reply_simple(out, "OK");
}

static int command_ping(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (a->name == NULL)
        return reply_simple(out, "PONG");
    return reply_bulk(out, a->name, a->name_len);
}

static int command_info(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    struct buffer text;
    int err;

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    buffer_init(&text);
    err = info_write(&text, a->name, a->name_len);
    if (err == 0)
        err = reply_bulk(out, text.data ? text.data : "", text.len);
    else
        err = reply_error(out, REPLY_ERR, "out of memory");
    buffer_free(&text);
    return err;
}

/* +OK when lock commands can be served, else -UNAVAILABLE and why. */
static int command_health(struct client *c, const struct command *cmd,
                          const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    char why[160];

    (void)cmd;
    (void)a;
    if (out == NULL)
        return -ENOMEM;
    if (info_ready(why, sizeof(why)))
        return reply_simple(out, "OK");
    return reply_error(out, REPLY_UNAVAILABLE, "%s", why);
}

static int command_quit(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    (void)a;
    if (out == NULL)
        return -ENOMEM;
    client_quit(c);
    return reply_simple(out, "OK");
}

/* ---- dispatch ------------------------------------------------------------- */

static command_handler *const command_handlers[COMMAND_COUNT] = {
#define COMMAND_HANDLER(id, name, handler, min, max, syntax, flags)            \
    [CMD_##id] = command_##handler,
    COMMAND_LIST(COMMAND_HANDLER)
#undef COMMAND_HANDLER
};

/* A client's bytes, shortened and made printable to be quoted in a reply. */
static const char *printable(const char *s, size_t len, char *out, size_t size)
{
    size_t n = len < size - 1 ? len : size - 1;

    for (size_t i = 0; i < n; i++)
        out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    out[n] = '\0';
    return out;
}

/* Answers a request refused before its handler: unknown, no AUTH, bad
 * arguments. */
static int refuse(struct client *c, enum reply_error code, const char *text)
{
    struct buffer *out = client_reply_buffer(c);

    return out ? reply_error(out, code, "%s", text) : -ENOMEM;
}

/* Who the connection runs commands as: the user it authenticated as;
 * while it has not, the default user when no AUTH is needed, else NULL. */
static const struct acl_user *acting_user(const struct client *c)
{
    if (c->user != NULL)
        return c->user;
    return auth_configured() ? NULL : &acl_default_user;
}

/* The -NOPERM reply, in Redis's words where Redis has them. */
/* -NOPERM, counted; why says what the name (a command's or a lock's,
 * quoted printable) may not be used for. */
static int refuse_noperm(struct client *c, const char *name, size_t len,
                         const char *why)
{
    char quoted[QUOTED_NAME_MAX + 1], text[192];

    stats.noperm_replies++;
    snprintf(text, sizeof(text), why,
             printable(name, len, quoted, sizeof(quoted)));
    return refuse(c, REPLY_NOPERM, text);
}

static int execute(struct client *c, const struct command *cmd, size_t argc,
                   char *const *argv, const size_t *argv_len)
{
    const struct acl_user *user = acting_user(c);
    struct command_args args;
    enum acl_verdict verdict;
    char err[256];

    if (user == NULL && !(cmd->flags & CMD_BEFORE_AUTH))
        return refuse(c, REPLY_NOAUTH, "Authentication required.");
    if (command_parse_args(cmd, argc, argv, argv_len,
                           (size_t)commands.cfg->max_name_length, &args, err,
                           sizeof(err)) != 0)
        return refuse(c, REPLY_ERR, err);
    verdict = acl_allows(user, cmd->id, args.name, args.name_len);
    if (verdict == ACL_DENIED_COMMAND)
        return refuse_noperm(
            c, cmd->name, strlen(cmd->name),
            "this user has no permissions to run the '%s' command");
    if (verdict == ACL_DENIED_NAME)
        return refuse_noperm(
            c, args.name, args.name_len,
            "this user has no permissions to access the '%s' lock");
    if (command_has_lock_name(cmd) &&
        !glob_list_match(commands.cfg->allowed_names, args.name, args.name_len))
        return refuse_noperm(c, args.name, args.name_len,
                             "the '%s' lock is outside [lock] allowed_names");
    return command_handlers[cmd->id](c, cmd, &args);
}

enum client_run commands_execute(struct client *c, size_t argc,
                                 char *const *argv, const size_t *argv_len)
{
    const struct command *cmd = command_lookup(argv[0], argv_len[0]);
    char name[QUOTED_NAME_MAX + 1], text[128];
    int err;

    if (cmd != NULL && (cmd->flags & CMD_ALONE) && c->in_flight > 0)
        return CLIENT_RUN_LATER;
    if (cmd == NULL) {
        snprintf(text, sizeof(text), "unknown command '%s'",
                 printable(argv[0], argv_len[0], name, sizeof(name)));
        err = refuse(c, REPLY_ERR, text);
    } else {
        err = execute(c, cmd, argc, argv, argv_len);
    }
    if (err != 0)
        client_close(c, "out of memory writing a reply");
    return CLIENT_RAN;
}
