/*
 * config.c - the settings table, and what walks it whole.
 *
 * Each setting is one row: section, key, kind, where it lives in struct
 * config, its default as the ini file would spell it, and bounds. The
 * defaults are applied by feeding those strings through the same setter
 * the ini file uses, so a default can never bypass validation.
 *
 * A reload copies the rows marked LIVE and logs the others as waiting
 * for a restart.
 *
 * Never: parse a value or read a source here. config_value.c reads
 * values, config_load.c reads the file and the environment.
 */
#include "base/config.h"

#include <stddef.h>
#include <string.h>

#include "base/acl.h"
#include "base/config_int.h"
#include "base/log.h"
#include "command.h" /* COMMAND_HEARTBEAT_MIN_MS, _MAX_MS */

static const char *const on_disconnect_names[] = {"release", "expire", NULL};
static const char *const on_shutdown_names[] = {"keep", "release", NULL};
static const char *const redis_mode_names[] = {"standalone", "sentinel",
                                               "cluster", NULL};
static const char *const pubsub_names[] = {"auto", "sharded", "global", "both",
                                           NULL};
static const char *const no_yes_names[] = {"no", "yes", NULL};
static const char *const off_on_names[] = {"off", "on", NULL};
static const char *const tls_client_certs_names[] = {"no", "optional",
                                                     "required", NULL};
static const char *const tls_min_version_names[] = {"TLSv1.2", "TLSv1.3", NULL};
static const char *const log_level_names[] = {"error", "warn", "info", "debug",
                                              NULL};
static const char *const log_format_names[] = {"text", "json", NULL};

#define INT_ROW(sec, name, flags, field, def, lo, hi)                          \
    {                                                                          \
        sec, name, KIND_INT, flags, offsetof(struct config, field), 0, def,    \
            lo, hi, NULL                                                       \
    }
#define MODE_ROW(sec, name, flags, field, def)                                 \
    {                                                                          \
        sec, name, KIND_MODE, flags, offsetof(struct config, field), 0, def,   \
            0, 0777, NULL                                                      \
    }
#define STR_ROW(sec, name, flags, field, def, kind)                            \
    {                                                                          \
        sec, name, kind, flags, offsetof(struct config, field),                \
            sizeof(((struct config *)0)->field), def, 0, 0, NULL               \
    }
#define AUTO_INT_ROW(sec, name, flags, field, def, lo, hi)                     \
    {                                                                          \
        sec, name, KIND_AUTO_INT, flags, offsetof(struct config, field), 0,    \
            def, lo, hi, NULL                                                  \
    }
#define ENUM_ROW(sec, name, flags, field, def, list)                           \
    {                                                                          \
        sec, name, KIND_ENUM, flags, offsetof(struct config, field), 0, def,   \
            0, 0, list                                                         \
    }

/* Not LIVE: what sockets and Redis connections were made with. Changing
 * those under open connections would leave old and new side by side. */
const struct config_row config_rows[] = {
    STR_ROW("server", "listen", 0, listen, "127.0.0.1:7379", KIND_ADDR),
    STR_ROW("server", "unix_socket", 0, unix_socket, "", KIND_STRING),
    MODE_ROW("server", "unix_socket_mode", 0, unix_socket_mode, "0666"),
    /* The metrics and health endpoint (front/http.h); "" is off. */
    STR_ROW("server", "http_listen", 0, http_listen, "", KIND_ADDR),
    INT_ROW("server", "http_max_connections", 0, http_max_connections, "16", 1,
            1024),
    /* From a connection's start or last answer to its next answer: a
     * probe is one short request, sent at once. */
    INT_ROW("server", "http_request_timeout_ms", 0, http_request_timeout_ms,
            "2000", 100, 3600000),
    /* LOCKS and GET /locks answer at most this many locks a call (the
     * status page asks for pages of them). */
    INT_ROW("server", "locks_max_count", LIVE, locks_max_count, "1000", 1,
            100000),
    /* GET /events: the newest lost locks and deadlocks kept in memory. */
    INT_ROW("server", "events_kept", 0, events_kept, "100", 0, 100000),
    /* 0: /readyz fails as soon as Redis is unreachable. Above 0, it stays
     * ready through an outage that short, which rlockd rides through
     * (calls wait up to [redis] retry_timeout_ms). */
    INT_ROW("server", "readyz_grace_ms", LIVE, readyz_grace_ms, "0", 0, 600000),
    STR_ROW("server", "auth_token", LIVE | SECRET, auth_token, "", KIND_STRING),
    /* HTTP's bearer token: every path but /healthz and /readyz needs it */
    STR_ROW("server", "http_token", LIVE | SECRET, http_token, "", KIND_STRING),
    INT_ROW("server", "max_auth_failures", LIVE, max_auth_failures, "3", 1,
            100),
    INT_ROW("server", "max_clients", LIVE, max_clients, "10000", 1, 1000000),
    /* 0: no per-peer limit. On a sidecar every TCP client is 127.0.0.1, one
     * peer; the limit is for a Unix socket shared by several users. */
    INT_ROW("server", "max_clients_per_peer", LIVE, max_clients_per_peer, "0",
            0, 1000000),
    /* Applies to connections accepted from then on. */
    INT_ROW("server", "tcp_keepalive_s", LIVE, tcp_keepalive_s, "60", 0, 7200),
    /* The CLIENT HEARTBEAT a client may declare, within the protocol's
     * range: a floor keeps a client from asking to be ended by a scheduling
     * hiccup, a ceiling bounds how long a hung client's locks outlive it.
     * A new range applies to declarations made from then on. */
    INT_ROW("server", "min_heartbeat_ms", LIVE, min_heartbeat_ms, "100",
            COMMAND_HEARTBEAT_MIN_MS, COMMAND_HEARTBEAT_MAX_MS),
    INT_ROW("server", "max_heartbeat_ms", LIVE, max_heartbeat_ms, "86400000",
            COMMAND_HEARTBEAT_MIN_MS, COMMAND_HEARTBEAT_MAX_MS),
    INT_ROW("server", "request_timeout_ms", LIVE, request_timeout_ms, "10000",
            100, 3600000),
    INT_ROW("server", "max_client_buffers_bytes", LIVE,
            max_client_buffers_bytes, "134217728", 1 << 20, 1LL << 40),
    INT_ROW("server", "max_request_bytes", LIVE, max_request_bytes, "65536",
            256, 64 << 20),
    INT_ROW("server", "max_request_args", LIVE, max_request_args, "128", 8,
            4096),
    INT_ROW("server", "max_input_buffer_bytes", LIVE, max_input_buffer_bytes,
            "1048576", 1024, 1 << 30),
    INT_ROW("server", "max_output_buffer_bytes", LIVE, max_output_buffer_bytes,
            "8388608", 1024, 1 << 30),
    INT_ROW("server", "max_commands_in_flight", LIVE, max_commands_in_flight,
            "1024", 1, 1000000),
    INT_ROW("server", "max_name_length", LIVE, max_name_length, "1024", 1,
            65536),
    /* TLS on the client listener. The files and the policy are LIVE: a
     * reload reads them again (certificate rotation) for the connections
     * accepted from then on; a bad file keeps the old ones. */
    STR_ROW("server", "tls_listen", 0, tls_listen, "", KIND_ADDR),
    STR_ROW("server", "tls_cert_file", LIVE, tls_cert_file, "", KIND_STRING),
    STR_ROW("server", "tls_key_file", LIVE, tls_key_file, "", KIND_STRING),
    STR_ROW("server", "tls_ca_file", LIVE, tls_ca_file, "", KIND_STRING),
    ENUM_ROW("server", "tls_client_certs", LIVE, tls_client_certs, "no",
             tls_client_certs_names),
    ENUM_ROW("server", "tls_min_version", LIVE, tls_min_version, "TLSv1.2",
             tls_min_version_names),
    STR_ROW("redis", "host", 0, redis_host, "127.0.0.1", KIND_STRING),
    INT_ROW("redis", "port", 0, redis_port, "6379", 1, 65535),
    STR_ROW("redis", "unix_socket", 0, redis_unix_socket, "", KIND_STRING),
    STR_ROW("redis", "username", 0, redis_username, "", KIND_STRING),
    STR_ROW("redis", "password", SECRET, redis_password, "", KIND_STRING),
    INT_ROW("redis", "db", 0, redis_db, "0", 0, 1000000),
    /* In sentinel mode host, port and unix_socket are not used: the
     * master is whatever the sentinels name (and ROLE confirms). */
    ENUM_ROW("redis", "mode", 0, redis_mode, "standalone", redis_mode_names),
    STR_ROW("redis", "sentinels", 0, sentinels, "", KIND_ADDRS),
    STR_ROW("redis", "master_name", 0, master_name, "", KIND_STRING),
    STR_ROW("redis", "sentinel_username", 0, sentinel_username, "",
            KIND_STRING),
    STR_ROW("redis", "sentinel_password", SECRET, sentinel_password, "",
            KIND_STRING),
    INT_ROW("redis", "sentinel_poll_ms", LIVE, sentinel_poll_ms, "1000", 100,
            60000),
    /* In cluster mode the seeds replace host and port; the map they give
     * is read again this often (and on every redirection). */
    STR_ROW("redis", "nodes", 0, cluster_nodes, "", KIND_ADDRS),
    INT_ROW("redis", "cluster_refresh_ms", LIVE, cluster_refresh_ms, "5000",
            100, 600000),
    INT_ROW("redis", "cluster_max_masters", 0, cluster_max_masters, "16", 1,
            1024),
    ENUM_ROW("redis", "pubsub", 0, pubsub, "auto", pubsub_names),
    /* 0: a command finding no usable connection fails at once. */
    INT_ROW("redis", "retry_timeout_ms", LIVE, retry_timeout_ms, "4500", 0,
            600000),
    INT_ROW("redis", "pool_size", 0, pool_size, "4", 1, 64),
    INT_ROW("redis", "connect_timeout_ms", 0, connect_timeout_ms, "1000", 10,
            600000),
    INT_ROW("redis", "command_timeout_ms", LIVE, command_timeout_ms, "5000", 10,
            600000),
    INT_ROW("redis", "reconnect_max_ms", LIVE, reconnect_max_ms, "1000", 10,
            60000),
    INT_ROW("redis", "first_connect_warn_ms", 0, first_connect_warn_ms, "10000",
            100, 3600000),
    INT_ROW("redis", "ping_interval_ms", LIVE, ping_interval_ms, "1000", 100,
            60000),
    /* TLS on every Redis link: pool, subscriber, sentinels, cluster nodes. */
    ENUM_ROW("redis", "tls", 0, redis_tls, "no", no_yes_names),
    STR_ROW("redis", "tls_ca_file", 0, redis_tls_ca_file, "", KIND_STRING),
    STR_ROW("redis", "tls_ca_dir", 0, redis_tls_ca_dir, "", KIND_STRING),
    STR_ROW("redis", "tls_cert_file", 0, redis_tls_cert_file, "", KIND_STRING),
    STR_ROW("redis", "tls_key_file", 0, redis_tls_key_file, "", KIND_STRING),
    STR_ROW("redis", "tls_server_name", 0, redis_tls_server_name, "",
            KIND_STRING),
    ENUM_ROW("redis", "tls_verify", 0, redis_tls_verify, "yes", no_yes_names),
    /* Not LIVE: held locks stay under the keys they were taken with. */
    STR_ROW("lock", "name_prefix", 0, name_prefix, "", KIND_STRING),
    STR_ROW("lock", "allowed_names", LIVE, allowed_names, "*", KIND_GLOBS),
    /* At most a day: the watchdog keeps a renewal's due time in 32 bits
     * (watchdog.c's due_of). */
    INT_ROW("lock", "watchdog_timeout_ms", LIVE, watchdog_timeout_ms, "30000",
            30, 86400000),
    INT_ROW("lock", "fair_wait_timeout_ms", LIVE, fair_wait_timeout_ms,
            "300000", 1000, 86400000),
    ENUM_ROW("lock", "on_disconnect", LIVE, on_disconnect, "release",
             on_disconnect_names),
    ENUM_ROW("lock", "on_shutdown", LIVE, on_shutdown, "keep",
             on_shutdown_names),
    INT_ROW("lock", "max_waiters", LIVE, max_waiters, "100000", 1, 10000000),
    INT_ROW("lock", "max_held_locks", LIVE, max_held_locks, "1000000", 1,
            100000000),
    INT_ROW("lock", "max_waiters_per_client", LIVE, max_waiters_per_client,
            "10000", 1, 10000000),
    INT_ROW("lock", "max_held_locks_per_client", LIVE,
            max_held_locks_per_client, "100000", 1, 100000000),
    INT_ROW("lock", "max_multilock_names", LIVE, max_multilock_names, "64", 1,
            100000),
    /* on: a wait that closes a cycle of this daemon's owners is refused
     * -DEADLOCK (engine/deadlock.c). */
    ENUM_ROW("lock", "deadlock_detection", LIVE, deadlock_detection, "on",
             off_on_names),
    INT_ROW("lock", "renew_batch_size", LIVE, renew_batch_size, "100", 1, 1000),
    /* Per key group; the rest of a round's calls wait for one of these
     * to be answered (engine/watchdog.c). */
    INT_ROW("lock", "renew_calls_in_flight", LIVE, renew_calls_in_flight, "32",
            1, 100000),
    /* Names whose highest FENCED token is remembered (fence_memory.h). */
    INT_ROW("lock", "fence_memory_names", LIVE, fence_memory_names, "100000", 1,
            100000000),
    /* 0: every waiter asks once the release's reply is in. At most
     * 1000000: struct lock counts them in 20 bits. */
    INT_ROW("lock", "max_handoffs_in_a_row", LIVE, max_handoffs_in_a_row, "8",
            0, 1000000),
    /* auto: the replicas the master's ROLE lists in sentinel mode, those
     * CLUSTER NODES lists for the key's master in cluster mode, none in
     * standalone mode (one server). */
    AUTO_INT_ROW("lock", "sync_replicas", LIVE, sync_replicas, "auto", 0, 64),
    INT_ROW("lock", "sync_timeout_ms", LIVE, sync_timeout_ms, "1000", 1, 60000),
    ENUM_ROW("log", "level", LIVE, log_level, "info", log_level_names),
    /* Applies at the next line logged. */
    ENUM_ROW("log", "format", LIVE, log_format, "text", log_format_names),
};

const size_t config_row_count = sizeof(config_rows) / sizeof(config_rows[0]);
_Static_assert(sizeof(config_rows) / sizeof(config_rows[0]) <= CONFIG_ROW_MAX,
               "config_rows outgrew CONFIG_ROW_MAX (config_int.h)");

const char *config_key_section(size_t n)
{
    return n < config_row_count ? config_rows[n].section : NULL;
}

const char *config_key_name(size_t n)
{
    return n < config_row_count ? config_rows[n].key : NULL;
}

bool config_key_live(size_t n)
{
    return n < config_row_count && (config_rows[n].flags & LIVE);
}

size_t config_row_find(const char *section, const char *key)
{
    size_t i = 0;

    while (i < config_row_count && (strcmp(config_rows[i].section, section) ||
                                    strcmp(config_rows[i].key, key)))
        i++;
    return i;
}

void config_set_defaults(struct config *cfg)
{
    char err[256];

    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < config_row_count; i++) {
        const struct config_row *row = &config_rows[i];
        int rc = config_set(cfg, row->section, row->key, row->default_value,
                            err, sizeof(err));
        (void)rc; /* the table's own defaults are covered by unit tests */
    }
}

/* Swaps the user tables when a user was added, removed or changed. */
static int apply_users(struct config *live, struct config *fresh)
{
    int changed = acl_log_changes(live->acl, fresh->acl);
    struct acl *old = live->acl;

    if (changed > 0) {
        live->acl = fresh->acl;
        fresh->acl = old;
    }
    return changed;
}

int config_apply_reload(struct config *live, struct config *fresh)
{
    int applied = apply_users(live, fresh);

    for (size_t i = 0; i < config_row_count; i++) {
        const struct config_row *row = &config_rows[i];
        size_t size = row->size ? row->size : sizeof(int64_t);
        char old_buf[32], new_buf[32];

        if (config_value_equal(row, live, fresh))
            continue;
        if (!(row->flags & LIVE)) {
            log_warn("reload: [%s] %s changed to '%s': takes effect after a "
                     "restart; keeping '%s'",
                     row->section, row->key,
                     config_value_text(row, fresh, new_buf, sizeof(new_buf)),
                     config_value_text(row, live, old_buf, sizeof(old_buf)));
            continue;
        }
        log_info("reload: [%s] %s = %s (was %s)", row->section, row->key,
                 config_value_text(row, fresh, new_buf, sizeof(new_buf)),
                 config_value_text(row, live, old_buf, sizeof(old_buf)));
        memcpy((char *)live + row->offset, (const char *)fresh + row->offset,
               size);
        applied++;
    }
    return applied;
}
