/*
 * config.c - the settings table and the inih handler that walks it.
 *
 * Each setting is one row: section, key, kind, where it lives in struct
 * config, its default as the ini file would spell it, and bounds. The
 * defaults are applied by feeding those strings through the same setter
 * the ini file uses, so a default can never bypass validation.
 *
 * [user NAME] sections are not rows: there may be any number of them,
 * so their rows go to acl_set, which builds the user table.
 *
 * The environment overrides the file, row by row: RLOCKD_<SECTION>_<KEY>
 * in capitals (RLOCKD_REDIS_HOST), as a container is configured.
 */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/acl.h"
#include "base/glob.h"
#include "base/log.h"
#include "command.h" /* COMMAND_HEARTBEAT_MIN_MS, _MAX_MS */

/* inih keeps the first 49 bytes of a section name and drops the rest
 * silently; a name that long may have been cut. */
#define SECTION_NAME_MAX 48

/* KIND_MODE: a file mode, an integer written in octal. */
enum config_kind {
    KIND_INT,
    KIND_MODE,
    KIND_STRING,
    KIND_ENUM,
    KIND_ADDR,
    KIND_GLOBS,    /* glob patterns (base/glob.h), space-separated */
    KIND_ADDRS,    /* host:port, comma-separated */
    KIND_AUTO_INT, /* "auto" (SYNC_REPLICAS_AUTO) or an integer */
};

/* Row flags. */
#define LIVE 0x1   /* a SIGHUP reload applies a new value at once */
#define SECRET 0x2 /* never logged */

struct config_row {
    const char *section;
    const char *key;
    enum config_kind kind;
    unsigned flags;
    size_t offset;
    size_t size; /* strings: capacity including the NUL */
    const char *default_value;
    int64_t min, max;         /* integers */
    const char *const *names; /* enums: value i is names[i] */
};

static const char *const on_disconnect_names[] = {"release", "expire", NULL};
static const char *const on_shutdown_names[] = {"keep", "release", NULL};
static const char *const redis_mode_names[] = {"standalone", "sentinel",
                                               "cluster", NULL};
static const char *const pubsub_names[] = {"auto", "sharded", "global", "both",
                                           NULL};
static const char *const no_yes_names[] = {"no", "yes", NULL};
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
static const struct config_row config_rows[] = {
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
    INT_ROW("lock", "renew_batch_size", LIVE, renew_batch_size, "100", 1, 1000),
    /* Names whose highest FENCED token is remembered (fence_memory.h). */
    INT_ROW("lock", "fence_memory_names", LIVE, fence_memory_names, "100000",
            1, 100000000),
    /* 0: every waiter asks once the release's reply is in. */
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

#define CONFIG_ROW_COUNT (sizeof(config_rows) / sizeof(config_rows[0]))

const char *config_key_section(size_t n)
{
    return n < CONFIG_ROW_COUNT ? config_rows[n].section : NULL;
}

const char *config_key_name(size_t n)
{
    return n < CONFIG_ROW_COUNT ? config_rows[n].key : NULL;
}

bool config_key_live(size_t n)
{
    return n < CONFIG_ROW_COUNT && (config_rows[n].flags & LIVE);
}

int config_split_host_port(const char *addr, char *host, size_t host_size,
                           int *port)
{
    const char *colon = strrchr(addr, ':');
    const char *start = addr;
    size_t len;
    char *end;
    long p;

    if (colon == NULL)
        return -1;
    len = (size_t)(colon - addr);
    if (addr[0] == '[') { /* [::1]:7379 */
        if (len < 2 || addr[len - 1] != ']')
            return -1;
        start = addr + 1;
        len -= 2;
    }
    /* No blank or bracket in a host name, and digits only in the port
     * (strtol would skip blanks and take a sign). */
    if (len == 0 || len >= host_size || memchr(start, '[', len) != NULL ||
        memchr(start, ']', len) != NULL || memchr(start, ' ', len) != NULL ||
        memchr(start, '\t', len) != NULL || colon[1] < '0' || colon[1] > '9')
        return -1;
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || p < 1 || p > 65535)
        return -1;
    memcpy(host, start, len);
    host[len] = '\0';
    *port = (int)p;
    return 0;
}

int config_next_addr(const char **list, char *host, size_t host_size, int *port)
{
    const char *s = *list + strspn(*list, " \t,");
    size_t len = strcspn(s, ",");
    char entry[320];

    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len == 0)
        return 0;
    if (len >= sizeof(entry))
        return -1;
    memcpy(entry, s, len);
    entry[len] = '\0';
    *list = s + strcspn(s, ",");
    return config_split_host_port(entry, host, host_size, port) == 0 ? 1 : -1;
}

static int set_int(const struct config_row *row, int64_t *dst,
                   const char *value, char *err, size_t err_size)
{
    if (row->kind == KIND_AUTO_INT && strcasecmp(value, "auto") == 0) {
        *dst = SYNC_REPLICAS_AUTO;
        return 0;
    }

    char *end;
    long long v;

    errno = 0;
    v = strtoll(value, &end, row->kind == KIND_MODE ? 8 : 10);
    if (errno != 0 || end == value || *end != '\0') {
        snprintf(err, err_size, "%s: '%s' is not %s", row->key, value,
                 row->kind == KIND_MODE       ? "an octal mode"
                 : row->kind == KIND_AUTO_INT ? "auto or an integer"
                                              : "an integer");
        return -1;
    }
    if (v < row->min || v > row->max) {
        snprintf(err, err_size,
                 row->kind == KIND_MODE
                     ? "%s: %llo is out of range [%llo, %llo]"
                     : "%s: %lld is out of range [%lld, %lld]",
                 row->key, v, (long long)row->min, (long long)row->max);
        return -1;
    }
    *dst = v;
    return 0;
}

static int set_enum(const struct config_row *row, int64_t *dst,
                    const char *value, char *err, size_t err_size)
{
    for (int64_t i = 0; row->names[i] != NULL; i++) {
        if (strcasecmp(row->names[i], value) == 0) {
            *dst = i;
            return 0;
        }
    }
    snprintf(err, err_size, "%s: '%s' is not one of", row->key, value);
    for (size_t i = 0; row->names[i] != NULL; i++) {
        size_t used = strlen(err);
        snprintf(err + used, err_size - used, "%s %s", i ? "," : "",
                 row->names[i]);
    }
    return -1;
}

static int set_string(const struct config_row *row, char *dst,
                      const char *value, char *err, size_t err_size)
{
    char host[128];
    const char *pattern;
    size_t len = strlen(value), pattern_len;
    int port;

    if (len >= row->size) {
        snprintf(err, err_size, "%s: longer than %zu bytes", row->key,
                 row->size - 1);
        return -1;
    }
    if (row->kind == KIND_ADDR && len > 0 &&
        config_split_host_port(value, host, sizeof(host), &port) != 0) {
        snprintf(err, err_size, "%s: '%s' is not host:port", row->key, value);
        return -1;
    }
    if (row->kind == KIND_ADDRS) {
        const char *list = value;
        int n;

        while ((n = config_next_addr(&list, host, sizeof(host), &port)) > 0)
            ;
        if (n < 0) {
            snprintf(err, err_size,
                     "%s: '%s' is not a comma-separated list of host:port",
                     row->key, value);
            return -1;
        }
    }
    if (row->kind == KIND_GLOBS &&
        glob_list_validate(value, &pattern, &pattern_len) != 0) {
        snprintf(err, err_size,
                 "%s: bad pattern '%.*s' (an unterminated [ or a trailing \\)",
                 row->key, (int)pattern_len, pattern);
        return -1;
    }
    memcpy(dst, value, len + 1);
    return 0;
}

/* The row of [section] key, or CONFIG_ROW_COUNT. */
static size_t config_row_find(const char *section, const char *key)
{
    size_t i = 0;

    while (i < CONFIG_ROW_COUNT && (strcmp(config_rows[i].section, section) ||
                                    strcmp(config_rows[i].key, key)))
        i++;
    return i;
}

int config_set(struct config *cfg, const char *section, const char *key,
               const char *value, char *err, size_t err_size)
{
    size_t i = config_row_find(section, key);

    if (i < CONFIG_ROW_COUNT) {
        const struct config_row *row = &config_rows[i];
        char *field = (char *)cfg + row->offset;

        switch (row->kind) {
        case KIND_INT:
        case KIND_MODE:
        case KIND_AUTO_INT:
            return set_int(row, (int64_t *)field, value, err, err_size);
        case KIND_ENUM:
            return set_enum(row, (int64_t *)field, value, err, err_size);
        case KIND_STRING:
        case KIND_ADDR:
        case KIND_GLOBS:
        case KIND_ADDRS:
            return set_string(row, field, value, err, err_size);
        }
    }
    snprintf(err, err_size, "unknown key '%s' in section [%s]", key, section);
    return -1;
}

void config_set_defaults(struct config *cfg)
{
    char err[256];

    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < CONFIG_ROW_COUNT; i++) {
        const struct config_row *row = &config_rows[i];
        int rc = config_set(cfg, row->section, row->key, row->default_value,
                            err, sizeof(err));
        (void)rc; /* the table's own defaults are covered by unit tests */
    }
}

static bool is_string(const struct config_row *row)
{
    return row->kind == KIND_STRING || row->kind == KIND_ADDR ||
           row->kind == KIND_GLOBS || row->kind == KIND_ADDRS;
}

/* The value as the ini file spells it; secrets are not shown. */
static const char *value_text(const struct config_row *row,
                              const struct config *cfg, char *buf, size_t size)
{
    const char *field = (const char *)cfg + row->offset;
    int64_t v;

    if (row->flags & SECRET)
        return "(secret)";
    if (is_string(row))
        return field;
    memcpy(&v, field, sizeof(v));
    if (row->kind == KIND_ENUM)
        return row->names[v];
    if (row->kind == KIND_AUTO_INT && v == SYNC_REPLICAS_AUTO)
        return "auto";
    snprintf(buf, size, row->kind == KIND_MODE ? "%04llo" : "%lld",
             (long long)v);
    return buf;
}

static bool value_equal(const struct config_row *row, const struct config *a,
                        const struct config *b)
{
    const char *fa = (const char *)a + row->offset;
    const char *fb = (const char *)b + row->offset;

    if (is_string(row))
        return strcmp(fa, fb) == 0;
    return memcmp(fa, fb, sizeof(int64_t)) == 0;
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

    for (size_t i = 0; i < CONFIG_ROW_COUNT; i++) {
        const struct config_row *row = &config_rows[i];
        size_t size = row->size ? row->size : sizeof(int64_t);
        char old_buf[32], new_buf[32];

        if (value_equal(row, live, fresh))
            continue;
        if (!(row->flags & LIVE)) {
            log_warn("reload: [%s] %s changed to '%s': takes effect after a "
                     "restart; keeping '%s'",
                     row->section, row->key,
                     value_text(row, fresh, new_buf, sizeof(new_buf)),
                     value_text(row, live, old_buf, sizeof(old_buf)));
            continue;
        }
        log_info("reload: [%s] %s = %s (was %s)", row->section, row->key,
                 value_text(row, fresh, new_buf, sizeof(new_buf)),
                 value_text(row, live, old_buf, sizeof(old_buf)));
        memcpy((char *)live + row->offset, (const char *)fresh + row->offset,
               size);
        applied++;
    }
    return applied;
}

struct load_state {
    struct config *cfg;
    FILE *file;
    int line;         /* the line inih is parsing */
    char section[64]; /* the previous row's, to see a section start */
    int set_on_line[CONFIG_ROW_COUNT]; /* 0: not set by the file yet */
    char reason[256];                  /* first error; inih reports its line */
};

/* inih's reader: fgets, counting lines, so that rows know theirs. */
static char *read_line(char *buf, int size, void *stream)
{
    struct load_state *st = stream;

    st->line++;
    return fgets(buf, size, st->file);
}

/* "user NAME" -> NAME; NULL for any other section. */
static const char *user_section(const char *section)
{
    if (strncmp(section, "user", 4) != 0 ||
        (section[4] != ' ' && section[4] != '\t'))
        return NULL;
    return section + 4 + strspn(section + 4, " \t");
}

/* Levenshtein's edit distance between two short names, for the closest
 * known section. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t lb = strlen(b), row[SECTION_NAME_MAX + 2];

    if (lb > SECTION_NAME_MAX)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; a[i - 1] != '\0'; i++) {
        size_t diagonal = row[0];

        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);

            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

/* Whether a row has that section; else the known section nearest to it
 * in *nearest ("user NAME" sections are known by their first word). */
static bool section_known(const char *section, const char **nearest)
{
    size_t best = SIZE_MAX;

    char first_word[SECTION_NAME_MAX + 1];

    snprintf(first_word, sizeof first_word, "%.*s",
             (int)strcspn(section, " \t"), section);
    *nearest = "user NAME";
    best = edit_distance(first_word, "user");
    for (size_t i = 0; i < CONFIG_ROW_COUNT; i++) {
        size_t d;

        if (strcmp(config_rows[i].section, section) == 0)
            return true;
        d = edit_distance(section, config_rows[i].section);
        if (d < best) {
            best = d;
            *nearest = config_rows[i].section;
        }
    }
    if (best > 2)
        *nearest = NULL;
    return false;
}

/* A key set twice in a file is refused: which of the two was meant cannot
 * be told, and a later copy overriding an earlier one hides edits. Also
 * names a section no row has, with the closest known one. */
static int config_file_set(struct load_state *st, const char *section,
                           const char *key, const char *value, char *err,
                           size_t err_size)
{
    size_t i = config_row_find(section, key);
    const char *nearest;

    if (i == CONFIG_ROW_COUNT && !section_known(section, &nearest)) {
        if (nearest != NULL)
            snprintf(err, err_size, "unknown section [%s] (did you mean [%s]?)",
                     section, nearest);
        else
            snprintf(err, err_size, "unknown section [%s]", section);
        return -1;
    }
    if (i < CONFIG_ROW_COUNT && st->set_on_line[i] != 0) {
        snprintf(err, err_size,
                 "duplicate key '%s' in section [%s] (first "
                 "set on line %d)",
                 key, section, st->set_on_line[i]);
        return -1;
    }
    if (i < CONFIG_ROW_COUNT)
        st->set_on_line[i] = st->line;
    return config_set(st->cfg, section, key, value, err, err_size);
}

static int config_ini_line(void *user, const char *section, const char *key,
                           const char *value)
{
    struct load_state *st = user;
    const char *name = user_section(section);
    bool starts = strcmp(section, st->section) != 0;
    char err[256];
    int rc;

    snprintf(st->section, sizeof(st->section), "%s", section);
    if (strlen(section) > SECTION_NAME_MAX) {
        snprintf(err, sizeof(err),
                 "section name longer than %d characters: [%s...]",
                 SECTION_NAME_MAX, section);
        rc = -EINVAL;
    } else if (name != NULL)
        rc = acl_set(&st->cfg->acl, name, key, value, st->line, starts, err,
                     sizeof(err));
    else
        rc = config_file_set(st, section, key, value, err, sizeof(err));
    if (rc == 0)
        return 1;
    if (st->reason[0] == '\0')
        snprintf(st->reason, sizeof(st->reason), "%s", err);
    return 0;
}

/* Settings that are valid alone but not together: true, with why. */
static bool config_conflict(const struct config *cfg, char *why, size_t size)
{
    if (cfg->min_heartbeat_ms > cfg->max_heartbeat_ms)
        snprintf(why, size,
                 "min_heartbeat_ms %lld is above max_heartbeat_ms "
                 "%lld",
                 (long long)cfg->min_heartbeat_ms,
                 (long long)cfg->max_heartbeat_ms);
    else if (cfg->tls_listen[0] != '\0' &&
             (cfg->tls_cert_file[0] == '\0' || cfg->tls_key_file[0] == '\0'))
        snprintf(why, size,
                 "[server] tls_listen needs tls_cert_file and "
                 "tls_key_file");
    else if (cfg->tls_client_certs != TLS_CLIENT_CERTS_NO &&
             cfg->tls_ca_file[0] == '\0')
        snprintf(why, size,
                 "[server] tls_client_certs = %s needs tls_ca_file "
                 "(the CA that signs client certificates)",
                 cfg->tls_client_certs == TLS_CLIENT_CERTS_REQUIRED
                     ? "required"
                     : "optional");
    else if (cfg->redis_mode == REDIS_MODE_SENTINEL &&
             (cfg->sentinels[0] == '\0' || cfg->master_name[0] == '\0'))
        snprintf(why, size,
                 "[redis] mode = sentinel needs sentinels and "
                 "master_name");
    else if (cfg->redis_mode == REDIS_MODE_CLUSTER &&
             cfg->cluster_nodes[0] == '\0')
        snprintf(why, size, "[redis] mode = cluster needs nodes");
    else if (cfg->redis_mode != REDIS_MODE_CLUSTER &&
             (cfg->pubsub == PUBSUB_SHARDED || cfg->pubsub == PUBSUB_BOTH))
        snprintf(why, size,
                 "[redis] pubsub = %s needs mode = cluster "
                 "(Redisson uses sharded pub/sub only there)",
                 cfg->pubsub == PUBSUB_SHARDED ? "sharded" : "both");
    else if (cfg->redis_mode == REDIS_MODE_CLUSTER && cfg->redis_db != 0)
        snprintf(why, size,
                 "[redis] db must be 0 in cluster mode (a cluster "
                 "has one database)");
    /* WAIT, sent when there may be replicas to wait for, holds its
     * connection for up to sync_timeout_ms. */
    else if ((cfg->sync_replicas > 0 ||
              (cfg->sync_replicas == SYNC_REPLICAS_AUTO &&
               cfg->redis_mode != REDIS_MODE_STANDALONE)) &&
             cfg->sync_timeout_ms >= cfg->command_timeout_ms)
        snprintf(why, size,
                 "[lock] sync_timeout_ms %lld must be below [redis] "
                 "command_timeout_ms %lld",
                 (long long)cfg->sync_timeout_ms,
                 (long long)cfg->command_timeout_ms);
    else
        return false;
    return true;
}

/* A row's variable, RLOCKD_<SECTION>_<KEY> in capitals, in buf. */
static void env_name(const struct config_row *row, char *buf, size_t size)
{
    snprintf(buf, size, "RLOCKD_%s_%s", row->section, row->key);
    for (char *c = buf; *c != '\0'; c++)
        *c = (char)toupper((unsigned char)*c);
}

/* The row whose variable var (len bytes, up to its '=') is; NULL for
 * none. *in_section says whether var begins with a section's prefix. */
static const struct config_row *env_row(const char *var, size_t len,
                                        bool *in_section)
{
    char name[128];

    *in_section = false;
    for (size_t i = 0; i < CONFIG_ROW_COUNT; i++) {
        size_t prefix = strlen("RLOCKD__") + strlen(config_rows[i].section);

        env_name(&config_rows[i], name, sizeof(name));
        if (len > prefix && strncmp(var, name, prefix) == 0)
            *in_section = true;
        if (strlen(name) == len && strncmp(var, name, len) == 0)
            return &config_rows[i];
    }
    return NULL;
}

/*
 * Sets every key the environment names, over the file's value; 0, or -1
 * with the variable and why in err. A variable of a section's prefix but
 * no key (RLOCKD_SERVER_LISTN) is refused, as the file's unknown keys
 * are: a misspelt override would otherwise be ignored silently. Other
 * RLOCKD_ variables are not settings and are left alone.
 */
static int config_apply_env(struct config *cfg, char *err, size_t err_size)
{
    extern char **environ;
    char reason[256];

    for (char **e = environ; *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        const struct config_row *row;
        bool in_section;

        if (eq == NULL || strncmp(*e, "RLOCKD_", 7) != 0)
            continue;
        row = env_row(*e, (size_t)(eq - *e), &in_section);
        if (row == NULL && !in_section)
            continue;
        if (row == NULL)
            snprintf(reason, sizeof(reason), "no such key");
        else if (config_set(cfg, row->section, row->key, eq + 1, reason,
                            sizeof(reason)) == 0)
            continue;
        snprintf(err, err_size, "environment %.*s: %s", (int)(eq - *e), *e,
                 reason);
        return -1;
    }
    return 0;
}

void config_print_env(const struct config *cfg, FILE *out)
{
    char name[128], buf[32];

    for (size_t i = 0; i < CONFIG_ROW_COUNT; i++) {
        const struct config_row *row = &config_rows[i];

        env_name(row, name, sizeof(name));
        if (getenv(name) != NULL)
            fprintf(out, "rlockd: %s sets [%s] %s = %s\n", name, row->section,
                    row->key, value_text(row, cfg, buf, sizeof(buf)));
    }
}

int config_load(struct config *cfg, const char *path, char *err,
                size_t err_size)
{
    struct load_state st = {.cfg = cfg};
    int line;

    config_set_defaults(cfg);
    if (path == NULL) /* the defaults and the environment; no users */
        return config_apply_env(cfg, err, err_size) == 0 &&
                       !config_conflict(cfg, err, err_size)
                   ? 0
                   : -1;
    st.file = fopen(path, "r");
    if (st.file == NULL) {
        snprintf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    line = ini_parse_stream(read_line, &st, config_ini_line, &st);
    fclose(st.file);
    if (line == 0 && config_apply_env(cfg, err, err_size) != 0) {
        config_free(cfg);
        return -1;
    }
    if (line == 0 && config_conflict(cfg, st.reason, sizeof(st.reason)))
        snprintf(err, err_size, "%s: %s", path, st.reason);
    else if (line == 0 &&
             acl_validate(cfg->acl, &line, st.reason, sizeof(st.reason)) == 0)
        return 0;
    else if (line == -2)
        snprintf(err, err_size, "%s: out of memory", path);
    else
        snprintf(err, err_size, "%s:%d: %s", path, line,
                 st.reason[0] ? st.reason : "syntax error");
    config_free(cfg);
    return -1;
}

void config_free(struct config *cfg)
{
    acl_free(cfg->acl);
    cfg->acl = NULL;
}
