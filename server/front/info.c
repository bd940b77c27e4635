/*
 * info.c - INFO: for each section, its figures from STATS_LIST, then the
 * section's settings and facts from info_settings, a table as well.
 */
#include "front/info.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/stats.h"
#include "base/version.h"

static struct {
    const struct config *cfg;
    const char *config_path;
    uint64_t (*now_ms)(void);
    uint64_t started_ms;
} info;

static const char *const section_titles[] = {
    [STATS_SERVER] = "Server", [STATS_CLIENTS] = "Clients",
    [STATS_LOCKS] = "Locks",   [STATS_COUNTS] = "Stats",
    [STATS_REDIS] = "Redis",
};

/* ---- settings and facts: each writes its value ------------------------ */

static int print_version(char *out, size_t size)
{
    return snprintf(out, size, "%s", RLOCKD_VERSION);
}

static int print_pid(char *out, size_t size)
{
    return snprintf(out, size, "%d", (int)getpid());
}

static int print_uptime(char *out, size_t size)
{
    return snprintf(out, size, "%" PRIu64,
                    (info.now_ms() - info.started_ms) / 1000);
}

/* Under socket activation the configured addresses are unused. */
static int print_listen(char *out, size_t size)
{
    return snprintf(out, size, "%s",
                    stats.socket_activated ? "" : info.cfg->listen);
}

static int print_unix_socket(char *out, size_t size)
{
    return snprintf(out, size, "%s",
                    stats.socket_activated ? "" : info.cfg->unix_socket);
}

static int print_tls_listen(char *out, size_t size)
{
    return snprintf(out, size, "%s",
                    stats.socket_activated ? "" : info.cfg->tls_listen);
}

/* Negative once expired; empty without a certificate. */
static int print_tls_expires(char *out, size_t size)
{
    if (stats.tls_cert_not_after == 0)
        return snprintf(out, size, "%s", "");
    return snprintf(out, size, "%lld",
                    (long long)stats.tls_cert_not_after -
                        (long long)time(NULL));
}

static int print_config_file(char *out, size_t size)
{
    return snprintf(out, size, "%s", info.config_path ? info.config_path : "");
}

static int print_max_clients(char *out, size_t size)
{
    return snprintf(out, size, "%lld", (long long)info.cfg->max_clients);
}

static int print_max_client_buffers(char *out, size_t size)
{
    return snprintf(out, size, "%lld",
                    (long long)info.cfg->max_client_buffers_bytes);
}

static int print_watchdog_timeout(char *out, size_t size)
{
    return snprintf(out, size, "%lld",
                    (long long)info.cfg->watchdog_timeout_ms);
}

static int print_on_disconnect(char *out, size_t size)
{
    return snprintf(out, size, "%s",
                    info.cfg->on_disconnect == ON_DISCONNECT_RELEASE
                        ? "release"
                        : "expire");
}

static int print_redis_address(char *out, size_t size)
{
    const struct config *cfg = info.cfg;

    if (cfg->redis_mode == REDIS_MODE_SENTINEL)
        return snprintf(out, size, "%s", cfg->sentinels);
    if (cfg->redis_mode == REDIS_MODE_CLUSTER)
        return snprintf(out, size, "%s", cfg->cluster_nodes);
    if (cfg->redis_unix_socket[0] != '\0')
        return snprintf(out, size, "%s:0", cfg->redis_unix_socket);
    return snprintf(out, size, "%s:%lld", cfg->redis_host,
                    (long long)cfg->redis_port);
}

static int print_redis_mode(char *out, size_t size)
{
    static const char *const names[] = {[REDIS_MODE_STANDALONE] = "standalone",
                                        [REDIS_MODE_SENTINEL] = "sentinel",
                                        [REDIS_MODE_CLUSTER] = "cluster"};

    return snprintf(out, size, "%s", names[info.cfg->redis_mode]);
}

static int print_redis_master(char *out, size_t size)
{
    return snprintf(out, size, "%s", redis_status.master);
}

static int print_redis_topology(char *out, size_t size)
{
    return snprintf(out, size, "%s", redis_status.topology);
}

static int print_redis_changed(char *out, size_t size)
{
    return snprintf(out, size, "%" PRIu64,
                    (info.now_ms() - redis_status.changed_ms) / 1000);
}

static int print_redis_pubsub(char *out, size_t size)
{
    return snprintf(out, size, "%s", redis_status.pubsub);
}

static int print_redis_unreachable(char *out, size_t size)
{
    uint64_t since = redis_status.unreachable_since_ms;

    return snprintf(out, size, "%" PRIu64,
                    since == 0 ? 0 : info.now_ms() - since);
}

static const struct info_setting {
    enum stats_section section;
    const char *name;
    int (*print)(char *out, size_t size);
} info_settings[] = {
    {STATS_SERVER, "rlockd_version", print_version},
    {STATS_SERVER, "process_id", print_pid},
    {STATS_SERVER, "uptime_in_seconds", print_uptime},
    {STATS_SERVER, "listen", print_listen},
    {STATS_SERVER, "unix_socket", print_unix_socket},
    {STATS_SERVER, "tls_listen", print_tls_listen},
    {STATS_SERVER, "tls_cert_expires_in_s", print_tls_expires},
    {STATS_SERVER, "config_file", print_config_file},
    {STATS_CLIENTS, "max_clients", print_max_clients},
    {STATS_CLIENTS, "max_client_buffers_bytes", print_max_client_buffers},
    {STATS_LOCKS, "watchdog_timeout_ms", print_watchdog_timeout},
    {STATS_LOCKS, "on_disconnect", print_on_disconnect},
    {STATS_REDIS, "redis_address", print_redis_address},
    {STATS_REDIS, "redis_mode", print_redis_mode},
    {STATS_REDIS, "redis_master", print_redis_master},
    {STATS_REDIS, "redis_topology", print_redis_topology},
    {STATS_REDIS, "redis_topology_changed_s_ago", print_redis_changed},
    {STATS_REDIS, "redis_unreachable_ms", print_redis_unreachable},
    {STATS_REDIS, "redis_pubsub", print_redis_pubsub},
};

uint64_t info_outage_ms(void)
{
    uint64_t since = redis_status.unreachable_since_ms;

    return stats.redis_connected || since == 0 ? 0 : info.now_ms() - since;
}

bool info_ready(char *why, size_t size)
{
    uint64_t since = redis_status.unreachable_since_ms;

    if (stats.redis_connected)
        return true;
    if (redis_status.tls_error[0] != '\0')
        snprintf(why, size, "redis tls: %s", redis_status.tls_error);
    else if (!redis_status.ever_reached)
        snprintf(why, size,
                 "redis never reached since start-up %" PRIu64
                 " ms ago (topology %s)",
                 info.now_ms() - since, redis_status.topology);
    else if (since != 0)
        snprintf(why, size,
                 "redis unreachable for %" PRIu64 " ms (topology %s)",
                 info.now_ms() - since, redis_status.topology);
    else if (!stats.redis_subscriber_ready)
        snprintf(why, size, "redis pub/sub connection not ready");
    else
        snprintf(why, size, "redis connections not ready (topology %s)",
                 redis_status.topology);
    return false;
}

/* ---- the text ------------------------------------------------------------ */

static int append_settings(struct buffer *out, enum stats_section section)
{
    char line[512];
    int err = 0;

    for (size_t i = 0; i < sizeof(info_settings) / sizeof(*info_settings);
         i++) {
        const struct info_setting *s = &info_settings[i];
        size_t n;

        if (s->section != section)
            continue;
        n = (size_t)snprintf(line, sizeof(line), "%s:", s->name);
        n += (size_t)s->print(line + n, sizeof(line) - n - 2);
        if (n > sizeof(line) - 3)
            n = sizeof(line) - 3;
        memcpy(line + n, "\r\n", 2);
        err |= buffer_append(out, line, n + 2);
    }
    return err ? -ENOMEM : 0;
}

static bool wanted(const char *title, const char *section, size_t len)
{
    return section == NULL ||
           (len == 3 && strncasecmp(section, "all", 3) == 0) ||
           (strlen(title) == len && strncasecmp(title, section, len) == 0);
}

int info_write(struct buffer *out, const char *section, size_t len)
{
    int err = 0;

    for (size_t s = 0; s < sizeof(section_titles) / sizeof(*section_titles);
         s++) {
        const char *title = section_titles[s];

        if (!wanted(title, section, len))
            continue;
        if (out->len > 0)
            err |= buffer_append(out, "\r\n", 2);
        err |= buffer_append(out, "# ", 2);
        err |= buffer_append(out, title, strlen(title));
        err |= buffer_append(out, "\r\n", 2);
        err |= stats_append_section(out, (enum stats_section)s);
        err |= append_settings(out, (enum stats_section)s);
    }
    return err ? -ENOMEM : 0;
}

void info_init(const struct config *cfg, const char *config_path,
               uint64_t (*now_ms)(void))
{
    info.cfg = cfg;
    info.config_path = config_path;
    info.now_ms = now_ms;
    info.started_ms = now_ms();
}
