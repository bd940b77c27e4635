/*
 * service.c - sd_notify and sd_listen_fds.
 *
 * STATUS= is a one-line summary (clients, locks, waiters, Redis) that
 * `systemctl status rlockd` shows; it is sent at each state change and
 * refreshed every STATUS_INTERVAL_MS while something changed.
 */
#include "base/service.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "base/log.h"
#include "base/stats.h"

#define STATUS_INTERVAL_MS 5000

static struct {
    bool enabled; /* NOTIFY_SOCKET is set */
    bool ready;
    bool stopping;
    bool reload_failed; /* the last SIGHUP kept the old config */
    uv_timer_t status_timer;
    char last_status[160];
} service;

static void describe(char *buf, size_t size)
{
    uint64_t up = stats.redis_pool_ready, all = stats.redis_pool_size;

    snprintf(buf, size,
             "%s%s; %" PRIu64 " clients, %" PRIu64 " locks held, %" PRIu64
             " waiting; Redis %s (%" PRIu64 "/%" PRIu64 " connections)",
             service.stopping ? "Stopping"
             : service.ready  ? "Ready"
                              : "Starting",
             service.reload_failed ? " (last reload failed, see the log)" : "",
             stats.connected_clients, stats.held_locks, stats.waiting_clients,
             up == all ? "up"
             : up == 0 ? "unreachable"
                       : "partly up",
             up, all);
}

/* Sends the given state lines plus STATUS=, if the status changed or a
 * state line is given. */
static void notify(const char *state)
{
    char status[sizeof(service.last_status)], msg[256];
    int err;

    if (!service.enabled)
        return;
    describe(status, sizeof(status));
    if (state == NULL && strcmp(status, service.last_status) == 0)
        return;
    memcpy(service.last_status, status, sizeof(status));
    snprintf(msg, sizeof(msg), "%s%sSTATUS=%s", state ? state : "",
             state ? "\n" : "", status);
    err = sd_notify(0, msg);
    if (err < 0)
        log_warn("sd_notify: %s", strerror(-err));
}

static void on_status_timer(uv_timer_t *timer)
{
    (void)timer;
    notify(NULL);
}

int service_init(uv_loop_t *loop)
{
    int err;

    service.enabled = getenv("NOTIFY_SOCKET") != NULL;
    err = uv_timer_init(loop, &service.status_timer);
    if (err != 0 || !service.enabled)
        return err;
    uv_unref((uv_handle_t *)&service.status_timer);
    return uv_timer_start(&service.status_timer, on_status_timer,
                          STATUS_INTERVAL_MS, STATUS_INTERVAL_MS);
}

void service_close(void)
{
    uv_timer_stop(&service.status_timer);
    uv_close((uv_handle_t *)&service.status_timer, NULL);
}

int service_passed_sockets(int *first, char ***names)
{
    *first = SD_LISTEN_FDS_START;
    *names = NULL;
    return sd_listen_fds_with_names(1, names);
}

void service_free_names(char **names)
{
    for (size_t i = 0; names != NULL && names[i] != NULL; i++)
        free(names[i]);
    free(names);
}

int service_socket_kind(int fd)
{
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) > 0)
        return 1;
    if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) > 0)
        return 0;
    return -1;
}

void service_ready(void)
{
    if (service.ready || service.stopping)
        return;
    service.ready = true;
    notify("READY=1");
}

void service_reloading(void)
{
    notify("RELOADING=1");
}

void service_reloaded(bool ok)
{
    service.reload_failed = !ok;
    /* Still starting: READY=1 comes with service_ready(). */
    notify(service.ready ? "READY=1" : NULL);
}

void service_stopping(void)
{
    service.stopping = true;
    notify("STOPPING=1");
}
