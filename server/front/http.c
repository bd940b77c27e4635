/*
 * http.c - the operators' HTTP endpoint, served by libmicrohttpd on the
 * daemon's loop.
 *
 * Why libmicrohttpd: it is Debian's maintained embeddable HTTP server
 * (HTTP/1.1 parsing, connection limits and timeouts done by people who
 * do only that), and it can run without a thread of its own: with
 * MHD_USE_EPOLL it keeps its sockets in one epoll set and hands out that
 * set's descriptor, which the loop polls like any socket (uv_poll); a
 * uv_timer runs it when it asks to be run. So the handlers read the
 * figures the other layers write on this same thread, with no lock and
 * no copy.
 *
 * Slow clients are this file's, not MHD's: MHD's connection timeout is
 * an idle one, which a byte now and then resets, so a few connections
 * dripping bytes would keep every probe out. Here each connection has
 * http_request_timeout_ms, from its start or its last answer, to send a
 * whole request and be answered, however slowly it drips; and MHD takes
 * one connection more than http_max_connections, the oldest waiting one
 * being closed when that slot is used, so that a probe gets through a
 * full table. MHD has no call to close a connection from outside: its
 * socket is shut down, and MHD, reading the end at its next run, closes
 * it as if the client had.
 *
 *   GET /metrics  every figure of base/stats.h, Prometheus text 0.0.4
 *   GET /healthz  200: the process is alive and its loop turns
 *   GET /readyz   200 when lock commands can be served, else 503 and why
 *                 (HEALTH's answer, info_ready), but 200 for the first
 *                 readyz_grace_ms of a Redis outage
 *
 * With [server] http_token set, every path but /healthz, /readyz and
 * / needs "Authorization: Bearer <token>" (RFC 6750), the header
 * Prometheus sends from a scrape config's `authorization` (or
 * `bearer_token`); else 401 with WWW-Authenticate. The probes stay open:
 * orchestrators probe without credentials, and they tell nothing but up
 * or down. So does / (the page's HTML and script, no data): a browser
 * cannot send the header when it opens a URL, so the page's script sends
 * it with each request, from the URL's fragment (/#token=...), which the
 * browser never sends. The token is compared as a digest, in constant
 * time.
 */
#include "front/http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/digest.h"
#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"
#include "front/info.h"
#include "front/listener.h"
#include "front/locks_view.h"
#include "front/status_page.h"

/* As the RESP port's: a burst of connections outpaces MHD's accepts (10
 * a run), and at 64 a full queue dropped a probe's SYN, which TCP sends
 * again only a second later (2 to 4 in 300 quick connections). */
#define HTTP_BACKLOG 511
/* MHD runs one call of http_run may make (see there): a flood of new
 * connections, each closing an older one, waits for the next loop turn
 * rather than holding this one. */
#define HTTP_RUNS_MAX 4

/* A connection MHD serves, from its start to its close (MHD's socket
 * context: freed when MHD closes the connection). */
struct http_connection {
    struct list_node link; /* in http.waiting until shut down */
    struct MHD_Connection *mhd;
    uint64_t since_ms; /* its start, or its last answer's end */
};

static struct {
    struct MHD_Daemon *daemon;
    uv_loop_t *loop;
    const struct config *cfg;
    uv_poll_t poll;
    uv_timer_t timer;
    struct list_node waiting; /* struct http_connection, oldest first */
    uint64_t ends;            /* connections ended or closed so far */
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
    MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
    /* The page, the one answer that runs script: its policy. */
    if (body == status_page_html)
        MHD_add_response_header(response,
                                MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY,
                                status_page_policy());
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"rlockd\"");
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

/* Ready, or, with [server] readyz_grace_ms, still ready during the first
 * ms of an outage that rlockd rides through (its calls wait for Redis up
 * to [redis] retry_timeout_ms): a blip does not take every application
 * behind it out of service. */
static enum MHD_Result respond_ready(struct MHD_Connection *conn)
{
    char why[160], text[200];
    uint64_t outage;

    if (info_ready(why, sizeof(why)))
        return respond_text(conn, MHD_HTTP_OK, "ready\n");
    outage = info_outage_ms();
    if (outage > 0 && outage < (uint64_t)http.cfg->readyz_grace_ms) {
        snprintf(text, sizeof(text), "ready, riding through: %s\n", why);
        return respond_text(conn, MHD_HTTP_OK, text);
    }
    snprintf(text, sizeof(text), "%s\n", why);
    return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

/* A query parameter that is a number from 0 to max: 0 and *value set,
 * absent (*value untouched), or -EINVAL. */
static int query_number(struct MHD_Connection *conn, const char *key,
                        int64_t max, int64_t *value)
{
    const char *text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
    char *end;
    long long v;

    if (text == NULL)
        return 0;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 0 || v > max)
        return -EINVAL;
    *value = v;
    return 0;
}

/* Answers a JSON body, or 500 when it could not be made. */
static enum MHD_Result respond_json(struct MHD_Connection *conn,
                                    struct buffer *body, int err)
{
    enum MHD_Result rc =
        err != 0 ? respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                "out of memory\n")
                 : respond(conn, MHD_HTTP_OK, "application/json", body->data,
                           body->len);

    buffer_free(body);
    return rc;
}

/* A page's count and offset (query parameters, as LOCKS' COUNT and
 * OFFSET); 0, or -EINVAL with the reason in err. */
static int query_page(struct MHD_Connection *conn, size_t *offset,
                      size_t *count, char *err, size_t size)
{
    int64_t asked = 0, from = 0;

    if (query_number(conn, "count", INT64_MAX, &asked) != 0 ||
        query_number(conn, "offset", INT64_MAX, &from) != 0) {
        snprintf(err, size, "count and offset must be numbers from 0\n");
        return -EINVAL;
    }
    if (locks_view_count(asked, count, err, size - 1) != 0) {
        strcat(err, "\n");
        return -EINVAL;
    }
    *offset = (size_t)from;
    return 0;
}

/* GET /locks?match=<glob>&count=<n>&offset=<n>: LOCKS' content in JSON,
 * a page at a time, with the total that matched (the status page's
 * pager); every name, as an admin's INFO. */
static enum MHD_Result respond_locks(struct MHD_Connection *conn)
{
    struct locks_query q = {0};
    struct buffer body;
    char err[200];

    q.match = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "match");
    q.match_len = q.match != NULL ? strlen(q.match) : 0;
    if (query_page(conn, &q.offset, &q.count, err, sizeof(err)) != 0)
        return respond_text(conn, MHD_HTTP_BAD_REQUEST, err);
    buffer_init(&body);
    return respond_json(conn, &body, locks_view_json(&body, &q));
}

/* GET /sessions?count=<n>&offset=<n>: the client-ids, a page at a time. */
static enum MHD_Result respond_sessions(struct MHD_Connection *conn)
{
    size_t offset, count;
    struct buffer body;
    char err[200];

    if (query_page(conn, &offset, &count, err, sizeof(err)) != 0)
        return respond_text(conn, MHD_HTTP_BAD_REQUEST, err);
    buffer_init(&body);
    return respond_json(conn, &body,
                        locks_view_sessions_json(&body, offset, count));
}

/* GET /info?section=<name>: INFO's text (the status page shows its
 * redis section: the topology and the master). */
static enum MHD_Result respond_info(struct MHD_Connection *conn)
{
    const char *section =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "section");
    struct buffer body;
    enum MHD_Result rc;

    buffer_init(&body);
    if (info_write(&body, section, section ? strlen(section) : 0) != 0)
        rc = respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "out of memory\n");
    else
        rc = respond(conn, MHD_HTTP_OK, "text/plain; charset=utf-8",
                     body.data ? body.data : "", body.len);
    buffer_free(&body);
    return rc;
}

static enum MHD_Result respond_events(struct MHD_Connection *conn)
{
    struct buffer body;

    buffer_init(&body);
    return respond_json(conn, &body, locks_view_events_json(&body));
}

/* Whether the request may see url: a probe, no http_token set, or its
 * Authorization header is "Bearer <http_token>" (the scheme in any case,
 * as RFC 7235 has it). */
static bool authorized(struct MHD_Connection *conn, const char *url)
{
    static const char scheme[] = "bearer ";
    const char *token = http.cfg->http_token;
    const char *header;
    unsigned char want[DIGEST_SIZE], got[DIGEST_SIZE];

    if (token[0] == '\0' || strcmp(url, "/healthz") == 0 ||
        strcmp(url, "/readyz") == 0 || strcmp(url, "/") == 0)
        return true;
    header = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                         MHD_HTTP_HEADER_AUTHORIZATION);
    if (header == NULL || strncasecmp(header, scheme, sizeof(scheme) - 1) != 0)
        return false;
    header += sizeof(scheme) - 1;
    digest_sha256(token, strlen(token), want);
    digest_sha256(header, strlen(header), got);
    return digest_equal(want, got);
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
    if (!authorized(conn, url))
        return respond_text(conn, MHD_HTTP_UNAUTHORIZED,
                            "unauthorized: [server] http_token is set; send "
                            "Authorization: Bearer <token>\n");
    if (strcmp(url, "/metrics") == 0)
        return respond_metrics(conn);
    if (strcmp(url, "/healthz") == 0)
        return respond_text(conn, MHD_HTTP_OK, "ok\n");
    if (strcmp(url, "/readyz") == 0)
        return respond_ready(conn);
    if (strcmp(url, "/") == 0)
        return respond(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
                       status_page_html, status_page_html_len);
    if (strcmp(url, "/locks") == 0)
        return respond_locks(conn);
    if (strcmp(url, "/sessions") == 0)
        return respond_sessions(conn);
    if (strcmp(url, "/info") == 0)
        return respond_info(conn);
    if (strcmp(url, "/events") == 0)
        return respond_events(conn);
    return respond_text(conn, MHD_HTTP_NOT_FOUND,
                        "not found: /, /metrics, /healthz, /readyz, /locks, "
                        "/sessions, /events or /info\n");
}

/* ---- deadlines ----------------------------------------------------------- */

/* Shuts a connection's socket down (not closed, so that its descriptor
 * is not reused while MHD still has it): MHD closes it at its next run. */
static void connection_shut(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

    if (info != NULL && shutdown(info->connect_fd, SHUT_RDWR) != 0)
        log_warn("http: shutdown: %s", strerror(errno));
}

/* Ends a connection, which no longer counts for deadlines or room. */
static void connection_end(struct http_connection *hc)
{
    http.ends++;
    list_remove(&hc->link);
    connection_shut(hc->mhd);
}

/* Starts a connection's deadline again, at the tail of the list. */
static void connection_wait(struct http_connection *hc)
{
    hc->since_ms = uv_now(http.loop);
    list_push_tail(&http.waiting, &hc->link);
}

/* MHD's connection notifier: tracks each connection from its start; the
 * one that takes the slot kept past http_max_connections closes the
 * oldest waiting one. */
static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_connection *hc = *socket_context;
    struct list_node *oldest;

    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (hc != NULL && list_linked(&hc->link))
            list_remove(&hc->link);
        free(hc);
        http.ends++;
        stats.http_connections--;
        return;
    }
    stats.http_connections++;
    if (stats.http_connections > (uint64_t)http.cfg->http_max_connections &&
        (oldest = list_first(&http.waiting)) != NULL) {
        stats.http_evictions++;
        connection_end(list_entry(oldest, struct http_connection, link));
    }
    hc = calloc(1, sizeof(*hc));
    *socket_context = hc;
    if (hc == NULL) {
        log_error("http: out of memory: connection refused");
        connection_shut(conn);
        return;
    }
    hc->mhd = conn;
    list_init(&hc->link);
    connection_wait(hc);
}

/* MHD's completion notifier: a request was answered (or given up), and
 * the connection's deadline starts again for its next one. */
static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **request_context,
                         enum MHD_RequestTerminationCode code)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct http_connection *hc = info != NULL ? info->socket_context : NULL;

    (void)cls;
    (void)request_context;
    (void)code;
    if (hc == NULL || !list_linked(&hc->link))
        return; /* being ended */
    list_remove(&hc->link);
    connection_wait(hc);
}

/* Ends the connections past their deadline; when the next one is due
 * (ms from now), or UINT64_MAX for none. */
static uint64_t deadlines_sweep(void)
{
    uint64_t now = uv_now(http.loop);
    uint64_t timeout = (uint64_t)http.cfg->http_request_timeout_ms;
    struct list_node *node;

    while ((node = list_first(&http.waiting)) != NULL) {
        struct http_connection *hc =
            list_entry(node, struct http_connection, link);

        if (hc->since_ms + timeout > now)
            return hc->since_ms + timeout - now;
        stats.http_request_timeouts++;
        connection_end(hc);
    }
    return UINT64_MAX;
}

/* ---- the loop's side -------------------------------------------------- */

static void on_timer(uv_timer_t *timer);

/* Ends the connections past their deadline, lets MHD do what is ready,
 * then arms the timer for the next deadline, MHD's or a connection's.
 * MHD runs again while a run ends or closes a connection: a connection
 * shut down during a run is closed by the next, and at its connection
 * limit MHD takes its listening socket out of its epoll set and puts it
 * back only at the start of a run, so the run that closed a connection
 * must be followed by one that listens again (else a connection waiting
 * in the backlog would wait for an event that never comes). Past
 * HTTP_RUNS_MAX, the timer runs it again at the next turn. */
static void http_run(void)
{
    MHD_UNSIGNED_LONG_LONG mhd_ms;
    uint64_t due_ms;
    int runs;

    deadlines_sweep();
    for (runs = 0; runs < HTTP_RUNS_MAX; runs++) {
        uint64_t ends = http.ends;

        MHD_run(http.daemon);
        if (http.ends == ends)
            break;
    }
    due_ms = runs == HTTP_RUNS_MAX ? 0 : deadlines_sweep();
    if (MHD_get_timeout(http.daemon, &mhd_ms) == MHD_YES && mhd_ms < due_ms)
        due_ms = mhd_ms;
    if (due_ms == UINT64_MAX)
        uv_timer_stop(&http.timer);
    else
        uv_timer_start(&http.timer, on_timer, due_ms, 0);
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
    http.loop = loop;
    http.cfg = cfg;
    list_init(&http.waiting);
    /* The logger first: MHD reports on stderr what comes before it. MHD
     * owns fd from here, and closes it when stopped. One connection more
     * than http_max_connections: the slot kept for a probe. No timeout of
     * MHD's: the deadlines above are stricter. */
    http.daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET,
        fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)cfg->http_max_connections + 1, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
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
    log_info(
        "http: serving /metrics, /healthz, /readyz, /locks and /events on %s",
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
