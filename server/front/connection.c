/*
 * connection.c - HELLO, CLIENT, SELECT, ECHO, COMMAND, TIME and RESET.
 *
 * What a Redis client library sends at connect (HELLO, CLIENT SETINFO,
 * SELECT, COMMAND) must succeed, or the client never gets to send a lock
 * command: node-redis stops at an unknown HELLO, redis-cli builds its
 * hints from COMMAND. Each reply is Redis 7's, in the protocol HELLO
 * chose (RESP2 until then, and again after RESET): a map, a set or a
 * null in RESP3, what Redis makes of them in RESP2. rlockd has one
 * database, 0.
 */
#include "front/connection.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/acl.h"
#include "base/version.h"
#include "reply.h"

static struct {
    const struct config *cfg;
} connection;

void connection_init(const struct config *cfg)
{
    connection.cfg = cfg;
}

/* Replaces one of the client's texts (struct client owns them); an empty
 * value clears it, as CLIENT SETNAME "" does. 0 or -ENOMEM. */
static int set_text(char **field, const char *value, size_t len)
{
    char *copy = NULL;

    if (len > 0) {
        copy = malloc(len + 1);
        if (copy == NULL)
            return -ENOMEM;
        memcpy(copy, value, len);
        copy[len] = '\0';
    }
    free(*field);
    *field = copy;
    return 0;
}

static int append_format(struct buffer *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* printf into a buffer. 0 or -ENOMEM. */
static int append_format(struct buffer *out, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buffer_reserve(out, (size_t)n + 1) != 0)
        return -ENOMEM;
    va_start(ap, fmt);
    vsnprintf(out->data + out->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out->len += (size_t)n;
    return 0;
}

static int reply_text(struct buffer *out, const char *text)
{
    return reply_bulk(out, text, strlen(text));
}

/* ---- HELLO ----------------------------------------------------------------- */

/* Redis's HELLO map: server, version, proto, id, mode, role, modules. */
static int write_hello(struct buffer *out, const struct client *c)
{
    int err = reply_map_header(out, c->protocol, 7);

    err |= reply_text(out, "server");
    err |= reply_text(out, "rlockd");
    err |= reply_text(out, "version");
    err |= reply_text(out, RLOCKD_VERSION);
    err |= reply_text(out, "proto");
    err |= reply_integer(out, c->protocol);
    err |= reply_text(out, "id");
    err |= reply_integer(out, (int64_t)c->id);
    err |= reply_text(out, "mode");
    err |= reply_text(out, "standalone");
    err |= reply_text(out, "role");
    err |= reply_text(out, "master");
    err |= reply_text(out, "modules");
    err |= reply_array_header(out, 0);
    return err ? -ENOMEM : 0;
}

/* In Redis 7's order: the version, then AUTH, then "authenticated at
 * all", then SETNAME, then the switch to the version asked for, in
 * which the reply is written. */
int command_hello(struct client *c, const struct command *cmd,
                  const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    int err;

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    if (a->protocol == COMMAND_PROTOCOL_UNSUPPORTED)
        return reply_noproto(out);
    if (a->password != NULL &&
        !commands_login(c, out, a->name, a->name_len, a->password,
                        a->password_len, &err))
        return err;
    if (commands_user(c) == NULL)
        return reply_error(out, REPLY_NOAUTH,
                           "HELLO must be called with the client already "
                           "authenticated, otherwise the HELLO <proto> AUTH "
                           "<user> <pass> option can be used to authenticate "
                           "the client and select the RESP protocol version "
                           "at the same time");
    if (a->value != NULL && set_text(&c->name, a->value, a->value_len) != 0)
        return reply_error(out, REPLY_ERR, "out of memory");
    if (a->protocol != 0)
        c->protocol = (enum reply_protocol)a->protocol;
    return write_hello(out, c);
}

/* ---- CLIENT ---------------------------------------------------------------- */

/* "ip:port" ("[ip]:port" for IPv6, as Redis), or a Unix socket's path
 * with port 0. */
static void format_address(const struct sockaddr_storage *ss, char *out,
                           size_t size)
{
    char ip[64] = "?";

    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        uv_ip4_name(in, ip, sizeof(ip));
        snprintf(out, size, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(in6, ip, sizeof(ip));
        snprintf(out, size, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    } else {
        snprintf(out, size, "?:0");
    }
}

/* The connection's two ends, as CLIENT LIST's addr= and laddr=. */
static void connection_addresses(const struct client *c, char *addr,
                                 char *laddr, size_t size)
{
    struct sockaddr_storage ss;
    char path[256];
    size_t path_len = sizeof(path);
    int len;

    if (c->io.handle.type != UV_TCP) {
        if (uv_pipe_getsockname(&c->io.pipe, path, &path_len) != 0)
            path_len = 0;
        snprintf(addr, size, "%.*s:0", (int)path_len, path);
        snprintf(laddr, size, "%.*s:0", (int)path_len, path);
        return;
    }
    len = sizeof(ss);
    ss.ss_family = AF_UNSPEC;
    uv_tcp_getpeername(&c->io.tcp, (struct sockaddr *)&ss, &len);
    format_address(&ss, addr, size);
    len = sizeof(ss);
    ss.ss_family = AF_UNSPEC;
    uv_tcp_getsockname(&c->io.tcp, (struct sockaddr *)&ss, &len);
    format_address(&ss, laddr, size);
}

/* Redis's flags letters that apply: P subscribed, b blocked (a lock
 * command waits), U Unix socket; N for none. */
static const char *connection_flags(const struct client *c, char *flags)
{
    size_t n = 0;

    if (client_subscribed(c))
        flags[n++] = 'P';
    if (c->alone)
        flags[n++] = 'b';
    if (c->io.handle.type != UV_TCP)
        flags[n++] = 'U';
    if (n == 0)
        flags[n++] = 'N';
    flags[n] = '\0';
    return flags;
}

/*
 * One CLIENT LIST line: Redis 7's fields where rlockd has the thing
 * (db, psub, ssub, multi and resp are constant), then rlockd's own:
 * client-id and locks, the holds of its client-id (every connection of
 * a client-id shares them).
 */
static int describe_client(struct buffer *out, const struct client *c)
{
    char addr[300], laddr[300], flags[8];
    uint64_t now = client_now_ms();
    uv_os_fd_t fd = -1;

    connection_addresses(c, addr, laddr, sizeof(addr));
    uv_fileno(&c->io.handle, &fd);
    return append_format(
        out,
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s "
        "db=0 sub=%d psub=0 ssub=0 multi=-1 qbuf=%zu omem=%zu cmd=%s "
        "user=%s resp=%d lib-name=%s lib-ver=%s client-id=%s locks=%zu\n",
        (unsigned long long)c->id, addr, laddr, (int)fd, c->name ? c->name : "",
        (unsigned long long)(now - c->created_ms) / 1000,
        (unsigned long long)(now - c->heard_ms) / 1000,
        connection_flags(c, flags), client_subscribed(c) ? 1 : 0, c->in.len,
        c->out.len + c->writing, c->last_command ? c->last_command : "NULL",
        c->user ? c->user->name : ACL_DEFAULT_USER, (int)c->protocol,
        c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "",
        lock_engine_session_id(c->session),
        lock_engine_session_hold_count(c->session));
}

struct client_list {
    struct buffer *text;
    int err;
};

static void describe_each(struct client *c, void *arg)
{
    struct client_list *list = arg;

    if (!c->closing && c->session != NULL)
        list->err |= describe_client(list->text, c);
}

/* CLIENT INFO (this connection) or CLIENT LIST (every one): lines of
 * text, verbatim in RESP3 as Redis sends them. */
static int reply_clients(struct buffer *out, struct client *c, bool all)
{
    struct buffer text;
    struct client_list list = {&text, 0};
    int err;

    buffer_init(&text);
    if (all)
        client_foreach(describe_each, &list);
    else
        describe_each(c, &list);
    err = list.err == 0 ? reply_verbatim(out, c->protocol,
                                         text.data ? text.data : "", text.len)
                        : reply_error(out, REPLY_ERR, "out of memory");
    buffer_free(&text);
    return err;
}

/* CLIENT HEARTBEAT: the parser took any value the protocol allows; this
 * rlockd may allow less ([server] min_heartbeat_ms, max_heartbeat_ms). */
static int client_heartbeat(struct client *c, struct buffer *out, int64_t ms)
{
    const struct config *cfg = connection.cfg;

    if (ms != 0 && (ms < cfg->min_heartbeat_ms || ms > cfg->max_heartbeat_ms))
        return reply_error(out, REPLY_ERR,
                           "HEARTBEAT must be 0 (off) or %lld to %lld "
                           "milliseconds in this rlockd (min_heartbeat_ms, "
                           "max_heartbeat_ms)",
                           (long long)cfg->min_heartbeat_ms,
                           (long long)cfg->max_heartbeat_ms);
    client_set_heartbeat(c, ms);
    return reply_simple(out, "OK");
}

/* The text a SETNAME or SETINFO sets, then +OK. */
static int client_set(struct buffer *out, char **field,
                      const struct command_args *a)
{
    if (set_text(field, a->value, a->value_len) != 0)
        return reply_error(out, REPLY_ERR, "out of memory");
    return reply_simple(out, "OK");
}

/* CLIENT LIST shows every connection: for the users that may read INFO
 * (@admin), as Redis's CLIENT LIST is an @admin command. */
int command_client(struct client *c, const struct command *cmd,
                   const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    switch (a->sub) {
    case SUB_CLIENT_HEARTBEAT:
        return client_heartbeat(c, out, a->heartbeat_ms);
    case SUB_CLIENT_SETNAME:
        return client_set(out, &c->name, a);
    case SUB_CLIENT_SETINFO_LIB_NAME:
        return client_set(out, &c->lib_name, a);
    case SUB_CLIENT_SETINFO_LIB_VER:
        return client_set(out, &c->lib_ver, a);
    case SUB_CLIENT_GETNAME:
        return c->name ? reply_text(out, c->name)
                       : reply_null(out, c->protocol);
    case SUB_CLIENT_ID:
        return reply_integer(out, (int64_t)c->id);
    case SUB_CLIENT_INFO:
        return reply_clients(out, c, false);
    case SUB_CLIENT_LIST:
        if (acl_allows(commands_user(c), CMD_INFO, NULL, 0) != ACL_ALLOWED)
            return reply_error(out, REPLY_NOPERM,
                               "this user has no permissions to run the "
                               "'client|list' command");
        return reply_clients(out, c, true);
    default:
        return reply_error(out, REPLY_ERR, "unknown subcommand");
    }
}

/* ---- SELECT, ECHO, TIME ----------------------------------------------- */

/* The parser let only SELECT 0 through. */
int command_select(struct client *c, const struct command *cmd,
                   const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    (void)a;
    return out ? reply_simple(out, "OK") : -ENOMEM;
}

int command_echo(struct client *c, const struct command *cmd,
                 const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    return out ? reply_bulk(out, a->name, a->name_len) : -ENOMEM;
}

/* [seconds, microseconds] of the wall clock, as two bulk strings. */
int command_time(struct client *c, const struct command *cmd,
                 const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    char sec[24], usec[24];
    struct timespec ts;
    int err;

    (void)cmd;
    (void)a;
    if (out == NULL)
        return -ENOMEM;
    clock_gettime(CLOCK_REALTIME, &ts);
    err = reply_array_header(out, 2);
    err |= reply_bulk(out, sec, format_int64(sec, (int64_t)ts.tv_sec));
    err |= reply_bulk(out, usec, format_int64(usec, ts.tv_nsec / 1000));
    return err ? -ENOMEM : 0;
}

/* ---- COMMAND ------------------------------------------------------------ */

/* COMMAND DOCS' summary of each command; a command added without one
 * says nothing rather than something wrong. */
static const char *const command_summaries[COMMAND_COUNT] = {
    [CMD_LOCK] = "Acquires a lock, waiting as long as it takes",
    [CMD_TRYLOCK] = "Acquires a lock if it is free, or within WAIT ms",
    [CMD_UNLOCK] = "Releases one hold of a lock",
    [CMD_FORCEUNLOCK] = "Frees a lock whoever holds it",
    [CMD_ISLOCKED] = "Whether anyone holds a lock",
    [CMD_ISHELD] = "Whether this owner holds a lock",
    [CMD_HOLDCOUNT] = "How many times this owner holds a lock",
    [CMD_PTTL] = "A lock's remaining time to live in ms",
    [CMD_OWNERS] = "Who holds a lock, and how many times",
    [CMD_LOCKS] = "The locks held or waited for here, who holds and waits",
    [CMD_TOKEN] = "A fenced lock's latest fencing token",
    [CMD_CLIENTID] = "Gets or sets the connection's client-id",
    [CMD_CLIENT] = "Connection settings: HEARTBEAT, SETNAME, LIST, ...",
    [CMD_PING] = "Answers PONG",
    [CMD_INFO] = "rlockd's figures, in sections",
    [CMD_HEALTH] = "Whether lock commands can be served now",
    [CMD_AUTH] = "Authenticates the connection",
    [CMD_QUIT] = "Closes the connection",
    [CMD_HELLO] = "Handshakes, and switches to RESP2 or RESP3",
    [CMD_SELECT] = "Selects database 0, the one there is",
    [CMD_ECHO] = "Answers its argument",
    [CMD_COMMAND] = "Describes the commands",
    [CMD_TIME] = "The server's time",
    [CMD_RESET] = "Resets the connection as if it were new",
    [CMD_SUBSCRIBE] = "Subscribes to the client-id's lock-lost events",
    [CMD_UNSUBSCRIBE] = "Unsubscribes from lock-lost events",
    [CMD_PSUBSCRIBE] = "Not supported",
    [CMD_PUNSUBSCRIBE] = "Unsubscribes from patterns (there are none)",
    [CMD_SSUBSCRIBE] = "Not supported",
    [CMD_SUNSUBSCRIBE] = "Unsubscribes from shard channels (there are none)",
};

/* Redis's arity: the exact count, or minus the minimum when it varies. */
static int64_t redis_arity(const struct command *cmd)
{
    return cmd->min_argc == cmd->max_argc ? cmd->min_argc : -cmd->min_argc;
}

/* The flags Redis clients look at that apply: a set. */
static int write_command_flags(struct buffer *out, enum reply_protocol proto,
                               const struct command *cmd)
{
    const char *flags[4];
    size_t n = 0;
    int err;

    flags[n++] = "loading";
    flags[n++] = "stale";
    if (cmd->flags & CMD_BEFORE_AUTH)
        flags[n++] = "no_auth";
    if (cmd->syntax == SYNTAX_LOCK || cmd->syntax == SYNTAX_TRYLOCK)
        flags[n++] = "blocking";
    else if (cmd->syntax == SYNTAX_CHANNELS)
        flags[n++] = "pubsub";
    err = reply_set_header(out, proto, n);
    for (size_t i = 0; i < n; i++)
        err |= reply_text(out, flags[i]);
    return err;
}

/*
 * COMMAND INFO's ten fields: name, arity, flags, first key, last key,
 * step, ACL categories, tips, key specs, subcommands. A lock name counts
 * as the key (redis-cli's hints then say "key").
 */
static int write_command_info(struct buffer *out, enum reply_protocol proto,
                              const struct command *cmd)
{
    const char *categories[4];
    size_t n = acl_command_categories(cmd->id, categories, 4);
    int64_t key = command_has_lock_name(cmd) ? 1 : 0;
    bool names = cmd->syntax == SYNTAX_NAMES; /* MLOCK <tid> <name>... */
    char category[32];
    int err = reply_array_header(out, 10);

    err |= reply_text(out, cmd->name);
    err |= reply_integer(out, redis_arity(cmd));
    err |= write_command_flags(out, proto, cmd);
    err |= reply_integer(out, names ? 2 : key);
    err |= reply_integer(out, names ? -1 : key);
    err |= reply_integer(out, key);
    err |= reply_set_header(out, proto, n);
    for (size_t i = 0; i < n; i++) {
        snprintf(category, sizeof(category), "@%s", categories[i]);
        err |= reply_text(out, category);
    }
    for (int i = 0; i < 3; i++)
        err |= reply_array_header(out, 0); /* tips, key specs, subcommands */
    return err;
}

/* COMMAND DOCS' map for one command: summary and group. */
static int write_command_docs(struct buffer *out, enum reply_protocol proto,
                              const struct command *cmd)
{
    const char *summary = command_summaries[cmd->id];
    int err = reply_text(out, cmd->name);

    err |= reply_map_header(out, proto, 2);
    err |= reply_text(out, "summary");
    err |= reply_text(out, summary ? summary : "");
    err |= reply_text(out, "group");
    err |= reply_text(out, cmd->syntax == SYNTAX_CHANNELS ? "pubsub"
                           : command_has_lock_name(cmd)   ? "generic"
                                                          : "connection");
    return err;
}

/* COMMAND, COMMAND INFO: every command, or those named (nil for an
 * unknown one). */
static int write_infos(struct buffer *out, enum reply_protocol proto,
                       const struct command_args *a)
{
    int err;

    if (a->list_count == 0) {
        err = reply_array_header(out, COMMAND_COUNT);
        for (int id = 0; id < COMMAND_COUNT; id++)
            err |= write_command_info(out, proto, command_by_id(id));
        return err;
    }
    err = reply_array_header(out, a->list_count);
    for (size_t i = 0; i < a->list_count; i++) {
        const struct command *cmd = command_lookup(a->list[i], a->list_len[i]);
        err |=
            cmd ? write_command_info(out, proto, cmd) : reply_null(out, proto);
    }
    return err;
}

/* COMMAND DOCS: a map of name to docs; unknown names are left out, as
 * Redis does. */
static int write_docs(struct buffer *out, enum reply_protocol proto,
                      const struct command_args *a)
{
    const struct command *found[COMMAND_COUNT];
    size_t n = 0;
    int err;

    for (size_t i = 0; i < a->list_count && n < COMMAND_COUNT; i++) {
        const struct command *cmd = command_lookup(a->list[i], a->list_len[i]);
        if (cmd != NULL)
            found[n++] = cmd;
    }
    if (a->list_count == 0)
        for (int id = 0; id < COMMAND_COUNT; id++)
            found[n++] = command_by_id(id);
    err = reply_map_header(out, proto, n);
    for (size_t i = 0; i < n; i++)
        err |= write_command_docs(out, proto, found[i]);
    return err;
}

int command_command(struct client *c, const struct command *cmd,
                    const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    int err = 0;

    (void)cmd;
    if (out == NULL)
        return -ENOMEM;
    switch (a->sub) {
    case SUB_COMMAND_COUNT:
        return reply_integer(out, COMMAND_COUNT);
    case SUB_COMMAND_LIST:
        err = reply_array_header(out, COMMAND_COUNT);
        for (int id = 0; id < COMMAND_COUNT; id++)
            err |= reply_text(out, command_by_id(id)->name);
        break;
    case SUB_COMMAND_DOCS:
        err = write_docs(out, c->protocol, a);
        break;
    default: /* COMMAND, COMMAND INFO */
        err = write_infos(out, c->protocol, a);
        break;
    }
    return err ? -ENOMEM : 0;
}

/* ---- RESET -------------------------------------------------------------- */

/*
 * As Redis's RESET, "as if the client had disconnected and reconnected":
 * no subscription, no name, no heartbeat, not authenticated (when AUTH is
 * needed), RESP2, and a new session under a random client-id: the one it
 * leaves ends if this was its last connection, as on close. It runs
 * alone, so nothing of the connection is in flight.
 */
int command_reset(struct client *c, const struct command *cmd,
                  const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);

    (void)cmd;
    (void)a;
    if (out == NULL)
        return -ENOMEM;
    if (client_new_session(c) != 0)
        return reply_error(out, REPLY_ERR, "out of memory");
    client_set_subscribed(c, false);
    client_set_heartbeat(c, 0);
    set_text(&c->name, NULL, 0);
    c->user = NULL;
    c->protocol = REPLY_RESP2;
    return reply_simple(out, "RESET");
}
