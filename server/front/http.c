/*
 * http.c - the operators' HTTP endpoint, served by libmicrohttpd on the
 * daemon's loop.
 *
 * Why libmicrohttpd: it is Debian's maintained embeddable HTTP server
 * (HTTP/1.1 parsing, connection limits and timeouts done by people who
 * do only that), and it can run without a thread of its own: with
 * MHD_USE_EPOLL it keeps its sockets in one epoll set and hands out that
 * set's descriptor, which the loop polls like any socket (uv_poll); a
 * uv_timer runs it when it asks to be run (its connection timeouts). So
 * the handlers read the figures the other layers write on this same
 * thread, with no lock and no copy.
 *
 *   GET /metrics  every figure of base/stats.h, Prometheus text 0.0.4
 *   GET /healthz  200: the process is alive and its loop turns
 *   GET /readyz   200 when lock commands can be served, else 503 and why
 *                 (HEALTH's answer, info_ready)
 */
#include "front/http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/log.h"
#include "base/stats.h"
#include "front/info.h"
#include "front/listener.h"

/* A connection idle this long is closed (a probe is one short request). */
#define HTTP_CONNECTION_TIMEOUT_S 10
#define HTTP_BACKLOG 64

static struct {
    struct MHD_Daemon *daemon;
    uv_poll_t poll;
    uv_timer_t timer;
    bool open; /* poll and timer initialised: closed by http_close */
} http;

int http_check(const struct config *cfg, char *why, size_t size)
{
    struct sockaddr_storage sa;

    if (cfg->http_listen[0] == '\0' ||
        listener_address(cfg->http_listen, &sa) == 0)
        return 0;
    snprintf(why, size,
             "[server] http_listen %s: not a numeric IPv4 or IPv6 "
             "host:port",
             cfg->http_listen);
    return -1;
}

/* ---- answers ---------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status,
                               const char *type, const void *body, size_t len)
{
    struct MHD_Response *response = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    if (response == NULL)
        return MHD_NO; /* out of memory: MHD closes the connection */
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL,
                            "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    rc = MHD_queue_response(conn, status, response);
    MHD_destroy_response(response);
    return rc;
}

static enum MHD_Result respond_text(struct MHD_Connection *conn,
                                    unsigned status, const char *text)
{
    return respond(conn, status, "text/plain; charset=utf-8", text,
                   strlen(text));
}

static enum MHD_Result respond_metrics(struct MHD_Connection *conn)
{
    struct buffer body;
    enum MHD_Result rc;

    buffer_init(&body);
    if (stats_append_prometheus(&body) != 0)
        rc = respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "out of memory\n");
    else
        rc = respond(conn, MHD_HTTP_OK,
                     "text/plain; version=0.0.4; charset=utf-8", body.data,
                     body.len);
    buffer_free(&body);
    return rc;
}

static enum MHD_Result respond_ready(struct MHD_Connection *conn)
{
    char why[160], text[170];

    if (info_ready(why, sizeof(why)))
        return respond_text(conn, MHD_HTTP_OK, "ready\n");
    snprintf(text, sizeof(text), "%s\n", why);
    return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

/* MHD's handler: every request is answered at its first call (none has a
 * body worth reading; one that comes with a body is answered all the
 * same, and MHD discards the body). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
    (void)cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)state;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                            "only GET and HEAD\n");
    if (strcmp(url, "/metrics") == 0)
        return respond_metrics(conn);
    if (strcmp(url, "/healthz") == 0)
        return respond_text(conn, MHD_HTTP_OK, "ok\n");
    if (strcmp(url, "/readyz") == 0)
        return respond_ready(conn);
    return respond_text(conn, MHD_HTTP_NOT_FOUND,
                        "not found: /metrics, /healthz or /readyz\n");
}

/* ---- the loop's side -------------------------------------------------- */

static void on_timer(uv_timer_t *timer);

/* Lets MHD do what is ready, then arms the timer for its next deadline.
 * Twice: at http_max_connections MHD takes its listening socket out of
 * its epoll set, and puts it back only at the start of a run, so the run
 * that closed a connection must be followed by one that listens again
 * (else a connection waiting in the backlog would wait for an event that
 * never comes). */
static void http_run(void)
{
    MHD_UNSIGNED_LONG_LONG timeout_ms;

    MHD_run(http.daemon);
    MHD_run(http.daemon);
    if (MHD_get_timeout(http.daemon, &timeout_ms) == MHD_YES)
        uv_timer_start(&http.timer, on_timer, timeout_ms, 0);
    else
        uv_timer_stop(&http.timer);
}

static void on_timer(uv_timer_t *timer)
{
    (void)timer;
    http_run();
}

static void on_poll(uv_poll_t *poll, int status, int events)
{
    (void)poll;
    (void)events;
    if (status < 0)
        log_warn("http: poll: %s", uv_strerror(status));
    http_run();
}

static void on_mhd_log(void *cls, const char *format, va_list ap)
{
    char text[256];

    (void)cls;
    vsnprintf(text, sizeof(text), format, ap);
    text[strcspn(text, "\n")] = '\0';
    log_warn("http: %s", text);
}

/* The listening socket, made here rather than by MHD so that it has
 * SO_REUSEADDR as the RESP port has (a restart finds the port free though
 * connections of the last run linger in TIME_WAIT): a descriptor, or a
 * negative errno. */
static int listen_socket(const struct sockaddr_storage *sa)
{
    socklen_t len = sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in);
    int one = 1, err;
    int fd =
        socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
        bind(fd, (const struct sockaddr *)sa, len) == 0 &&
        listen(fd, HTTP_BACKLOG) == 0)
        return fd;
    err = -errno;
    close(fd);
    return err;
}

int http_start(uv_loop_t *loop, const struct config *cfg)
{
    struct sockaddr_storage sa;
    const union MHD_DaemonInfo *info;
    int fd, err;

    if (cfg->http_listen[0] == '\0')
        return 0;
    if ((err = listener_address(cfg->http_listen, &sa)) != 0) {
        log_error("http_listen %s: not a numeric IPv4 or IPv6 address",
                  cfg->http_listen);
        return err;
    }
    if ((fd = listen_socket(&sa)) < 0) {
        log_error("http_listen %s: %s", cfg->http_listen, strerror(-fd));
        return fd;
    }
    /* The logger first: MHD reports on stderr what comes before it. MHD
     * owns fd from here, and closes it when stopped. */
    http.daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET,
        fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->http_max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONNECTION_TIMEOUT_S,
        MHD_OPTION_END);
    if (http.daemon == NULL) {
        close(fd);
        log_error("http_listen %s: libmicrohttpd would not start",
                  cfg->http_listen);
        return UV_EINVAL;
    }
    info = MHD_get_daemon_info(http.daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (info == NULL ||
        (err = uv_poll_init(loop, &http.poll, info->epoll_fd)) != 0) {
        MHD_stop_daemon(http.daemon);
        http.daemon = NULL;
        return info == NULL ? UV_EINVAL : err;
    }
    uv_timer_init(loop, &http.timer);
    http.open = true;
    uv_poll_start(&http.poll, UV_READABLE, on_poll);
    log_info("http: serving /metrics, /healthz and /readyz on %s",
             cfg->http_listen);
    http_run();
    return 0;
}

void http_close(void)
{
    if (!http.open)
        return;
    http.open = false;
    uv_close((uv_handle_t *)&http.poll, NULL);
    uv_close((uv_handle_t *)&http.timer, NULL);
    MHD_stop_daemon(http.daemon);
    http.daemon = NULL;
}
