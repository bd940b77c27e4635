/*
 * commands.c - dispatch from the command table's handler column, and
 * every command's handler.
 */
#include "front/commands.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

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

static int start(struct client *c, const struct command *cmd,
                 const struct command_args *a, enum lock_request_op op)
{
    struct lock_request req = {.kind = lock_kinds[LOCK_KIND_RLOCK],
                               .op = op,
                               .thread_id = a->thread_id,
                               .wait_ms = a->wait_ms,
                               .lease_ms = a->lease_ms};
    struct buffer *out;

    if (lock_key(a->name, a->name_len, &req.name, &req.name_len) != 0) {
        out = client_reply_buffer(c);
        return out ? reply_error(out, REPLY_ERR, "out of memory") : -ENOMEM;
    }
    client_start_call(c, &req, cmd->flags & CMD_ALONE, cmd->id == CMD_LOCK);
    return 0;
}

static int command_lock(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_ACQUIRE);
}

static int command_unlock(struct client *c, const struct command *cmd,
                          const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_RELEASE);
}

static int command_forceunlock(struct client *c, const struct command *cmd,
                               const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_FORCE_RELEASE);
}

static int command_islocked(struct client *c, const struct command *cmd,
                            const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_IS_LOCKED);
}

static int command_isheld(struct client *c, const struct command *cmd,
                          const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_IS_HELD);
}

static int command_holdcount(struct client *c, const struct command *cmd,
                             const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_HOLD_COUNT);
}

static int command_pttl(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    return start(c, cmd, a, LOCK_REQUEST_PTTL);
}

/* ---- commands answered here ----------------------------------------------- */

static int command_clientid(struct client *c, const struct command *cmd,
                            const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (a->name == NULL)
        return reply_bulk(out, c->session->id, c->session->id_len);
    if (!client_id_valid(a->name, a->name_len))
        return reply_error(out, REPLY_ERR,
                           "client-id must be 1-64 characters of A-Z a-z "
                           "0-9 . _ -");
    if (client_set_id(c, a->name, a->name_len, out) != 0)
        return 0; /* the refusal is written */
    return reply_simple(out, "OK");
}

/* Compares every byte whatever the first difference, so that the reply's
 * timing does not tell how much of a guessed token was right. The token
 * is never empty. */
static bool token_equal(const char *guess, size_t guess_len, const char *token,
                        size_t token_len)
{
    unsigned char diff = guess_len != token_len;

    for (size_t i = 0; i < guess_len; i++)
        diff |= (unsigned char)(guess[i] ^ token[i % token_len]);
    return diff == 0;
}

static int command_auth(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    const char *token = commands.cfg->auth_token;
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (token[0] == '\0')
        return reply_error(out, REPLY_ERR,
                           "AUTH called without any auth token configured");
    if (!token_equal(a->name, a->name_len, token, strlen(token))) {
        stats.auth_failures++;
        return reply_error(out, REPLY_ERR, "invalid auth token");
    }
    c->authenticated = true;
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

static int execute(struct client *c, const struct command *cmd, size_t argc,
                   char *const *argv, const size_t *argv_len)
{
    struct command_args args;
    char err[256];

    if (commands.cfg->auth_token[0] != '\0' && !c->authenticated &&
        !(cmd->flags & CMD_BEFORE_AUTH))
        return refuse(c, REPLY_NOAUTH, "Authentication required.");
    if (command_parse_args(cmd, argc, argv, argv_len,
                           (size_t)commands.cfg->max_name_length, &args, err,
                           sizeof(err)) != 0)
        return refuse(c, REPLY_ERR, err);
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
