/*
 * commands.c - dispatch from the command table's handler column, and
 * the handlers of the lock commands, AUTH, CLIENTID, PING, INFO, HEALTH
 * and QUIT (connection.c and pubsub.c have the others).
 *
 * Every request passes four gates before its handler, in this order:
 * authentication (-NOAUTH), subscribed mode in RESP2 (only what Redis
 * allows there; a RESP3 connection runs everything), its arguments
 * (-ERR), and its user's permissions (-NOPERM, acl_allows).
 */
#include "front/commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "base/acl.h"
#include "base/glob.h"
#include "base/log.h"
#include "base/stats.h"
#include "client_id.h"
#include "command.h"
#include "engine/record_keys.h"
#include "front/connection.h"
#include "front/info.h"
#include "front/locks_view.h"
#include "front/multilock.h"
#include "front/pubsub.h"
#include "reply.h"

/* An unknown command's name is quoted in the error up to this length,
 * and its arguments up to about as much, as Redis does. */
#define QUOTED_NAME_MAX 128

static struct {
    const struct config *cfg;
    struct buffer key; /* the lock key being made (lock_key) */
} commands;

void commands_init(const struct config *cfg)
{
    commands.cfg = cfg;
    buffer_init(&commands.key);
    locks_view_init(cfg);
    connection_init(cfg);
    pubsub_init(cfg);
}

void commands_free(void)
{
    buffer_free(&commands.key);
    pubsub_free();
}

static const char *printable(const char *s, size_t len, char *out, size_t size);

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

/* -ERR reserved name: a name whose key would reach one of rlockd's own
 * records (record_keys.h), why made printable. */
static int refuse_reserved(struct client *c, const char *why)
{
    char text[QUOTED_NAME_MAX * 3];
    struct buffer *out = client_reply_buffer(c);

    return out ? reply_error(out, REPLY_ERR, "reserved name: %s",
                             printable(why, strlen(why), text, sizeof(text)))
               : -ENOMEM;
}

/* Who deleted a lock, whoever held it, is worth a line in the log: the
 * connection (its name and peer), its user and its client-id. */
static void log_force_unlock(const struct client *c,
                             const struct command_args *a)
{
    char label[CLIENT_LABEL_MAX], quoted[QUOTED_NAME_MAX + 1];

    log_info("FORCEUNLOCK '%s' by %s, user %s, client-id %s",
             printable(a->name, a->name_len, quoted, sizeof(quoted)),
             client_label(c, label, sizeof label),
             c->user != NULL ? c->user->name : ACL_DEFAULT_USER,
             lock_engine_session_id(c->session));
}

/* Every lock, semaphore and latch command: a request for the engine,
 * answered in order. A grant is +OK for LOCK and a waiting ACQUIRE, :1
 * for the others that may wait (their caller asked for an answer). */
static int command_request(struct client *c, const struct command *cmd,
                           const struct command_args *a)
{
    const struct lock_kind *kind = lock_kinds[kind_of_command(cmd, a)];
    struct lock_request req = {
        .kind = kind,
        .op = a->held ? LOCK_REQUEST_HOLD_COUNT : op_of_command[cmd->id],
        .thread_id = a->thread_id,
        .wait_ms = a->wait_ms,
        .lease_ms = a->lease_ms,
        .amount = cmd->id == CMD_COUNTDOWN ? -1 : a->amount};
    char id[LOCK_PERMIT_ID_LEN + 1];
    char why[QUOTED_NAME_MAX * 3];
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
    if (record_keys_reserved(commands.cfg->name_prefix, kind, req.name,
                             req.name_len, why, sizeof(why)))
        return refuse_reserved(c, why);
    if (cmd->id == CMD_FORCEUNLOCK)
        log_force_unlock(c, a);
    client_start_call(c, &req, cmd, a,
                      cmd->id == CMD_LOCK ||
                          (cmd->id == CMD_ACQUIRE && a->wait_ms < 0));
    return 0;
}

/* MLOCK and MUNLOCK: plain RLocks only, as RedissonMultiLock groups
 * them. Every name passes the checks a lock command's name passes before
 * anything is taken: the count limit here, the reserved names here, the
 * permissions in execute (refused_noperm_names). */
static int command_multilock(struct client *c, const struct command *cmd,
                             const struct command_args *a)
{
    struct multilock_request req = {
        .op = cmd->id == CMD_MLOCK ? MULTILOCK_ACQUIRE : MULTILOCK_RELEASE,
        .thread_id = a->thread_id,
        .wait_ms = a->wait_ms,
        .lease_ms = a->lease_ms,
        .prefix = commands.cfg->name_prefix,
        .count = a->list_count,
        .names = a->list,
        .name_lens = a->list_len};
    const char *key;
    size_t key_len;
    char why[QUOTED_NAME_MAX * 3];
    struct buffer *out;

    if (a->list_count > (size_t)commands.cfg->max_multilock_names) {
        out = client_reply_buffer(c);
        return out ? reply_error(out, REPLY_LIMIT,
                                 "%s of %zu names: [lock] "
                                 "max_multilock_names is %lld",
                                 cmd->id == CMD_MLOCK ? "MLOCK" : "MUNLOCK",
                                 a->list_count,
                                 (long long)commands.cfg->max_multilock_names)
                   : -ENOMEM;
    }
    for (size_t i = 0; i < a->list_count; i++) {
        if (lock_key(a->list[i], a->list_len[i], &key, &key_len) != 0) {
            out = client_reply_buffer(c);
            return out ? reply_error(out, REPLY_ERR, "out of memory") : -ENOMEM;
        }
        if (record_keys_reserved(commands.cfg->name_prefix,
                                 lock_kinds[LOCK_KIND_RLOCK], key, key_len, why,
                                 sizeof(why)))
            return refuse_reserved(c, why);
    }
    client_start_multilock(c, cmd, a, &req);
    return 0;
}

/* ---- commands answered here ----------------------------------------------- */

/* A subscribed connection (RESP3: RESP2's subscribed mode refuses it
 * earlier) keeps its client-id: its subscription is to that client-id's
 * channel, which a new client-id would not match. */
static int command_clientid(struct client *c, const struct command *cmd,
                            const struct command_args *a)
{
    struct buffer *out;

    (void)cmd;
    if (a->name != NULL && client_subscribed(c)) {
        out = client_reply_buffer(c);
        return out ? reply_error(out, REPLY_ERR,
                                 "a subscribed connection keeps its "
                                 "client-id: UNSUBSCRIBE first")
                   : -ENOMEM;
    }
    if (a->name != NULL && client_id_valid(a->name, a->name_len)) {
        client_set_id(c, a->name, a->name_len, a->secret, a->secret_len,
                      a->resume);
        return 0;
    }
    out = client_reply_buffer(c);
    if (out == NULL)
        return -ENOMEM;
    if (a->name == NULL)
        return reply_bulk(out, lock_engine_session_id(c->session),
                          lock_engine_session_id_len(c->session));
    return reply_error(out, REPLY_ERR,
                       "client-id must be 1-64 characters of A-Z a-z "
                       "0-9 . _ -");
}

/* Whether connections must AUTH: a token or a user is configured. */
static bool auth_configured(void)
{
    return commands.cfg->auth_token[0] != '\0' || commands.cfg->acl != NULL;
}

const struct acl_user *commands_user(const struct client *c)
{
    if (c->user != NULL)
        return c->user;
    return auth_configured() ? NULL : &acl_default_user;
}

/* Without AUTH configured, only HELLO asks, and the default user (who
 * needs no password then, as Redis's nopass default) is the one that
 * passes. A refusal costs the connection time (client_penalize), so that
 * guessing is slow. */
bool commands_login(struct client *c, struct buffer *out, const char *user,
                    size_t user_len, const char *password, size_t password_len,
                    int *err)
{
    const struct config *cfg = commands.cfg;
    const struct acl_user *found;

    if (auth_configured())
        found = acl_authenticate(cfg->acl, cfg->auth_token, user, user_len,
                                 password, password_len);
    else
        found = user_len == strlen(ACL_DEFAULT_USER) &&
                        memcmp(user, ACL_DEFAULT_USER, user_len) == 0
                    ? &acl_default_user
                    : NULL;
    if (found != NULL) {
        c->user = found;
        return true;
    }
    stats.auth_failures++;
    *err = reply_error(out, REPLY_ERR, "%s",
                       user != NULL ? "invalid username-password pair"
                                    : "invalid auth token");
    client_penalize(c, "AUTH");
    return false;
}

static int command_auth(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    int err;

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (!auth_configured())
        return reply_error(out, REPLY_ERR,
                           "AUTH called without any auth token or user "
                           "configured");
    if (!commands_login(c, out, a->name, a->name_len, a->password,
                        a->password_len, &err))
        return err;
    return reply_simple(out, "OK");
}

/* A subscribed RESP2 connection's PING is answered ["pong", msg or ""],
 * as Redis does, so that a client can tell it from a message; in RESP3
 * messages are pushes, and PING answers as ever. */
static int command_ping(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    int err;

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (client_subscribed(c) && c->protocol == REPLY_RESP2) {
        err = reply_array_header(out, 2);
        err |= reply_bulk(out, "pong", 4);
        err |= reply_bulk(out, a->name ? a->name : "", a->name_len);
        return err ? -ENOMEM : 0;
    }
    if (a->name == NULL)
        return reply_simple(out, "PONG");
    return reply_bulk(out, a->name, a->name_len);
}

/* INFO's text: a verbatim string in RESP3, as Redis 7 sends it. */
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
        err = reply_verbatim(out, c->protocol, text.data ? text.data : "",
                             text.len);
    else
        err = reply_error(out, REPLY_ERR, "out of memory");
    buffer_free(&text);
    return err;
}

/* LOCKS [MATCH <glob>] [COUNT <n>] [OFFSET <n>]: the locks this rlockd
 * holds or waits on whose names the user may see (locks_view.c). */
static int command_locks(struct client *c, const struct command *cmd,
                         const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    struct locks_query q = {a->value, a->value_len, commands_user(c),
                            (size_t)a->offset, 0};
    char err[160];

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (locks_view_count(a->count, &q.count, err, sizeof(err)) != 0)
        return reply_error(out, REPLY_ERR, "%s", err);
    if (locks_view_resp(out, c->protocol, &q) != 0)
        return reply_error(out, REPLY_ERR, "out of memory");
    return 0;
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

/*
 * Whether user is refused command cmd on the lock name (ignored for a
 * command that takes none): by its commands or names, or by [lock]
 * allowed_names. A refusal is counted, and its -NOPERM text written to
 * text, in Redis's words where Redis has them, quoting the command's or
 * the lock's name (printable).
 */
static bool refused_noperm(const struct acl_user *user,
                           const struct command *cmd, const char *name,
                           size_t len, char *text, size_t size)
{
    enum acl_verdict verdict = acl_allows(user, cmd->id, name, len);
    char quoted[QUOTED_NAME_MAX + 1];
    const char *why;

    if (verdict == ACL_DENIED_COMMAND) {
        why = "this user has no permissions to run the '%s' command";
        name = cmd->name;
        len = strlen(cmd->name);
    } else if (verdict == ACL_DENIED_NAME) {
        why = "this user has no permissions to access the '%s' lock";
    } else if (command_has_lock_name(cmd) &&
               !glob_list_match(commands.cfg->allowed_names, name, len)) {
        why = "the '%s' lock is outside [lock] allowed_names";
    } else {
        return false;
    }
    stats.noperm_replies++;
    snprintf(text, size, why, printable(name, len, quoted, sizeof(quoted)));
    return true;
}

static int execute(struct client *c, const struct command *cmd, size_t argc,
                   char *const *argv, const size_t *argv_len)
{
    const struct acl_user *user = commands_user(c);
    struct command_args args;
    char err[256];

    c->last_command = cmd->name;
    if (user == NULL && !(cmd->flags & CMD_BEFORE_AUTH))
        return refuse(c, REPLY_NOAUTH, "Authentication required.");
    if (client_subscribed(c) && c->protocol == REPLY_RESP2 &&
        !(cmd->flags & CMD_SUBSCRIBED)) {
        snprintf(err, sizeof(err),
                 "Can't execute '%s': only (P|S)SUBSCRIBE / "
                 "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
                 "context",
                 cmd->name);
        return refuse(c, REPLY_ERR, err);
    }
    if (command_parse_args(cmd, argc, argv, argv_len,
                           (size_t)commands.cfg->max_name_length, &args, err,
                           sizeof(err)) != 0)
        return refuse(c, REPLY_ERR, err);
    if (args.sub != SUB_NONE)
        c->last_command = command_sub_name(args.sub);
    if (refused_noperm(user, cmd, args.name, args.name_len, err, sizeof(err)))
        return refuse(c, REPLY_NOPERM, err);
    for (size_t i = 0; cmd->syntax == SYNTAX_NAMES && i < args.list_count; i++)
        if (refused_noperm(user, cmd, args.list[i], args.list_len[i], err,
                           sizeof(err)))
            return refuse(c, REPLY_NOPERM, err);
    return command_handlers[cmd->id](c, cmd, &args);
}

/* refused_noperm for each of an MLOCK's names in flight, packed as
 * client_acquire gives them. */
static bool refused_noperm_packed(const struct acl_user *user,
                                  const struct command *cmd, const char *packed,
                                  size_t len, char *text, size_t size)
{
    size_t name_len;

    for (size_t at = 0; at + sizeof(size_t) <= len;
         at += sizeof(size_t) + name_len) {
        memcpy(&name_len, packed + at, sizeof(size_t));
        if (refused_noperm(user, cmd, packed + at + sizeof(size_t), name_len,
                           text, size))
            return true;
    }
    return false;
}

/* An acquire in flight is checked again as a new one would be: it has
 * not been granted (it waits, or Redis's answer is still to come), and
 * must not be if its user may no longer make it. */
static void recheck_acquire(struct client *c, void *arg)
{
    const struct command *cmd;
    const char *name;
    size_t len;
    char text[256];

    (void)arg;
    if (!client_acquire(c, &cmd, &name, &len) ||
        !(cmd->id == CMD_MLOCK
              ? refused_noperm_packed(commands_user(c), cmd, name, len, text,
                                      sizeof(text))
              : refused_noperm(commands_user(c), cmd, name, len, text,
                               sizeof(text))))
        return;
    log_info("reload: client %llu's %s in flight refused: %s",
             (unsigned long long)c->id, cmd->name, text);
    client_refuse_acquire(c, text);
}

void commands_reloaded(void)
{
    client_foreach(recheck_acquire, NULL);
}

/* Redis's words: "unknown command 'x', with args beginning with: 'a' 'b' ",
 * the arguments quoted until about QUOTED_NAME_MAX bytes of them. */
static int refuse_unknown(struct client *c, size_t argc, char *const *argv,
                          const size_t *argv_len)
{
    char word[QUOTED_NAME_MAX + 1], text[4 * QUOTED_NAME_MAX + 64];
    size_t len, args;

    len = (size_t)snprintf(text, sizeof(text),
                           "unknown command '%s', with args beginning with: ",
                           printable(argv[0], argv_len[0], word, sizeof(word)));
    args = len;
    for (size_t i = 1; i < argc && len - args < QUOTED_NAME_MAX; i++)
        len += (size_t)snprintf(
            text + len, sizeof(text) - len, "'%s' ",
            printable(argv[i], argv_len[i], word, sizeof(word)));
    return refuse(c, REPLY_ERR, text);
}

enum client_run commands_execute(struct client *c, size_t argc,
                                 char *const *argv, const size_t *argv_len)
{
    const struct command *cmd = command_lookup(argv[0], argv_len[0]);
    int err;

    if (cmd != NULL && (cmd->flags & CMD_ALONE) && c->in_flight > 0)
        return CLIENT_RUN_LATER;
    if (cmd == NULL) {
        err = refuse_unknown(c, argc, argv, argv_len);
    } else {
        err = execute(c, cmd, argc, argv, argv_len);
    }
    if (err != 0)
        client_close(c, "out of memory writing a reply");
    return CLIENT_RAN;
}
