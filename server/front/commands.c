/*
 * commands.c - dispatch from the command table, and the commands that
 * need no lock: AUTH, CLIENTID, PING, INFO, QUIT.
 */
#include "front/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "front/client.h"
#include "command.h"
#include "front/listener.h"
#include "engine/lock_table.h"
#include "engine/locking.h"
#include "backend/redis_pool.h"
#include "reply.h"
#include "engine/session.h"
#include "base/stats.h"
#include "backend/subscriber.h"
#include "base/version.h"
#include "engine/watchdog.h"

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    const char *config_path;
    uint64_t started_ms;
} K;

void commands_init(uv_loop_t *loop, const struct config *cfg,
                   const char *config_path)
{
    K.loop = loop;
    K.cfg = cfg;
    K.config_path = config_path;
    K.started_ms = uv_now(loop);
}

static void handle_clientid(struct client *c, const struct command_args *a)
{
    if (a->name == NULL) {
        reply_bulk(&c->out, c->session->id, c->session->id_len);
    } else if (!command_client_id_valid(a->name, a->name_len)) {
        reply_error(&c->out, REPLY_ERR,
                    "client-id must be 1-64 characters of A-Z a-z 0-9 . _ -");
    } else if (client_set_id(c, a->name, a->name_len) == 0) {
        reply_simple(&c->out, "OK");
    }
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

static void handle_auth(struct client *c, const struct command_args *a)
{
    const char *token = K.cfg->auth_token;

    if (token[0] == '\0') {
        reply_error(&c->out, REPLY_ERR,
                    "AUTH called without any auth token configured");
    } else if (token_equal(a->name, a->name_len, token, strlen(token))) {
        c->authenticated = true;
        reply_simple(&c->out, "OK");
    } else {
        stats.auth_failures++;
        reply_error(&c->out, REPLY_ERR, "invalid auth token");
    }
}

static void handle_ping(struct client *c, const struct command_args *a)
{
    if (a->name == NULL)
        reply_simple(&c->out, "PONG");
    else
        reply_bulk(&c->out, a->name, a->name_len);
}

/* ---- INFO ------------------------------------------------------------ */

struct info_writer {
    struct buffer text;
    const char *only; /* section filter, NULL for all */
    size_t only_len;
    int err;
};

static bool info_section(struct info_writer *w, const char *title)
{
    if (w->only != NULL && (strlen(title) != w->only_len ||
                            strncasecmp(title, w->only, w->only_len) != 0))
        return false;
    if (w->text.len > 0)
        w->err |= buffer_append(&w->text, "\r\n", 2);
    w->err |= buffer_append(&w->text, "# ", 2);
    w->err |= buffer_append(&w->text, title, strlen(title));
    w->err |= buffer_append(&w->text, "\r\n", 2);
    return true;
}

static void info_line(struct info_writer *w, const char *key, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));

static void info_line(struct info_writer *w, const char *key, const char *fmt,
                      ...)
{
    char line[512];
    va_list ap;
    int n = snprintf(line, sizeof(line), "%s:", key);

    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 2, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 3)
        n = (int)sizeof(line) - 3;
    w->err |= buffer_append(&w->text, line, (size_t)n);
    w->err |= buffer_append(&w->text, "\r\n", 2);
}

static void info_write(struct info_writer *w)
{
    const struct config *cfg = K.cfg;

    if (info_section(w, "Server")) {
        info_line(w, "rlockd_version", "%s", RLOCKD_VERSION);
        info_line(w, "process_id", "%d", (int)getpid());
        info_line(w, "uptime_in_seconds", "%" PRIu64,
                  (uv_now(K.loop) - K.started_ms) / 1000);
        /* Under socket activation the configured addresses are unused. */
        info_line(w, "socket_activated", "%d", listener_activated());
        info_line(w, "listen", "%s", listener_activated() ? "" : cfg->listen);
        info_line(w, "unix_socket", "%s",
                  listener_activated() ? "" : cfg->unix_socket);
        info_line(w, "config_file", "%s", K.config_path ? K.config_path : "");
    }
    if (info_section(w, "Clients")) {
        info_line(w, "connected_clients", "%zu", client_count());
        info_line(w, "blocked_clients", "%zu", locking_waiter_count());
        info_line(w, "client_sessions", "%zu", session_count());
        info_line(w, "max_clients", "%lld", (long long)cfg->max_clients);
    }
    if (info_section(w, "Locks")) {
        info_line(w, "held_locks", "%zu", hold_count());
        info_line(w, "watchdog_locks", "%zu", watchdog_count());
        info_line(w, "waiting_clients", "%zu", locking_waiter_count());
        info_line(w, "lock_entries", "%zu", lock_table_size());
        info_line(w, "subscribed_channels", "%zu", subscriber_channel_count());
        info_line(w, "watchdog_timeout_ms", "%lld",
                  (long long)cfg->watchdog_timeout_ms);
        info_line(w, "on_disconnect", "%s",
                  cfg->on_disconnect == ON_DISCONNECT_RELEASE ? "release"
                                                              : "expire");
    }
    if (info_section(w, "Stats"))
        w->err |= stats_append_counters(&w->text);
    if (info_section(w, "Redis")) {
        info_line(w, "redis_connected", "%d",
                  redis_pool_ready_count() == redis_pool_size() &&
                      subscriber_ready());
        info_line(w, "redis_address", "%s:%lld",
                  cfg->redis_unix_socket[0] ? cfg->redis_unix_socket
                                            : cfg->redis_host,
                  cfg->redis_unix_socket[0] ? 0LL : (long long)cfg->redis_port);
        info_line(w, "redis_pool_size", "%u", redis_pool_size());
        info_line(w, "redis_pool_ready", "%u", redis_pool_ready_count());
        info_line(w, "redis_subscriber_ready", "%d", subscriber_ready());
        info_line(w, "redis_reconnects", "%llu", redis_pool_reconnects());
        info_line(w, "script_reloads", "%llu", redis_pool_script_reloads());
    }
}

static void handle_info(struct client *c, const struct command_args *a)
{
    struct info_writer w = {.only = a->name, .only_len = a->name_len};

    if (w.only_len == 3 && strncasecmp(w.only, "all", 3) == 0)
        w.only = NULL;
    buffer_init(&w.text);
    info_write(&w);
    if (w.err)
        reply_error(&c->out, REPLY_ERR, "out of memory");
    else
        reply_bulk(&c->out, w.text.data ? w.text.data : "", w.text.len);
    buffer_free(&w.text);
}

/* ---- dispatch -------------------------------------------------------- */

/* A client's bytes, shortened and made printable to be quoted in a reply. */
static const char *printable(const char *s, size_t len, char *out, size_t size)
{
    size_t n = len < size - 1 ? len : size - 1;

    for (size_t i = 0; i < n; i++)
        out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    out[n] = '\0';
    return out;
}

struct lock_call *commands_execute(struct client *c, size_t argc,
                                   char *const *argv, const size_t *argv_len)
{
    const struct command *cmd = command_lookup(argv[0], argv_len[0]);
    struct command_args args;
    char err[256];

    if (cmd == NULL) {
        reply_error(&c->out, REPLY_ERR, "unknown command '%s'",
                    printable(argv[0], argv_len[0], err, 65));
        return NULL;
    }
    if (K.cfg->auth_token[0] != '\0' && !c->authenticated &&
        !(cmd->flags & CMD_BEFORE_AUTH)) {
        reply_error(&c->out, REPLY_NOAUTH, "Authentication required.");
        return NULL;
    }
    if (command_parse_args(cmd, argc, argv, argv_len,
                           (size_t)K.cfg->max_name_length, &args, err,
                           sizeof(err)) != 0) {
        reply_error(&c->out, REPLY_ERR, "%s", err);
        return NULL;
    }
    if ((cmd->flags & CMD_NEEDS_REDIS) &&
        !redis_pool_ready(redis_pool_shard(args.name, args.name_len))) {
        locking_reply_unavailable(&c->out);
        return NULL;
    }
    switch (cmd->id) {
    case CMD_LOCK:
    case CMD_TRYLOCK:
    case CMD_UNLOCK:
    case CMD_FORCEUNLOCK:
    case CMD_ISLOCKED:
    case CMD_ISHELD:
    case CMD_HOLDCOUNT:
    case CMD_PTTL:
        return locking_start(c, cmd->id, &args);
    case CMD_CLIENTID:
        handle_clientid(c, &args);
        break;
    case CMD_PING:
        handle_ping(c, &args);
        break;
    case CMD_INFO:
        handle_info(c, &args);
        break;
    case CMD_AUTH:
        handle_auth(c, &args);
        break;
    case CMD_QUIT:
        reply_simple(&c->out, "OK");
        client_quit(c);
        break;
    case COMMAND_COUNT:
        break;
    }
    return NULL;
}
