/*
 * redis_link.c - connect, handshake, watch and reconnect one Redis
 * connection.
 *
 * Watching is what notices a stopped Redis (SIGSTOP, a VM paused, a
 * partition without RST) without waiting for traffic: a link that has
 * been silent for ping_interval_ms with nothing in flight sends a probe;
 * a link silent for ping_interval_ms with something in flight (the probe
 * or any request) stalls: it no longer counts as ready, so new commands
 * for its keys get -UNAVAILABLE at once instead of queueing behind a
 * Redis that does not answer, and it is ready again with the next reply,
 * without a reconnect. Silent for command_timeout_ms, it is dropped and
 * redialled as before. While commands flow the replies keep it from ever
 * being silent that long, so no probe is sent.
 *
 * The link owns its socket rather than going through hiredis 0.14's
 * async context, which cannot carry TLS and whose pub/sub callbacks know
 * only SUBSCRIBE's messages: libuv connects, reads and writes, OpenSSL
 * (when [redis] tls is on) encrypts through memory BIOs, and hiredis's
 * redisReader only parses replies.
 */
#include "backend/redis_link.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/tls.h"

#define BACKOFF_START_MS 50

/* ---- the socket ----------------------------------------------------------- */

/*
 * One connection: its libuv handle, hiredis's reply parser, and with TLS
 * OpenSSL's session over two memory BIOs (libuv moves the bytes, OpenSSL
 * only transforms them, so both paths share the same reads and writes).
 * It outlives its link's interest in it: the link lets go (conn->link =
 * NULL) and the handle's close callback frees it.
 *
 * Writes are not polled for. A command is appended to out and the
 * connection joins the flush list; a prepare handle, which runs once per
 * loop turn just before libuv blocks, writes every listed connection: all
 * commands queued during one turn leave in one write(2), with no wait.
 * Only what the socket does not take at once goes through uv_write.
 */
struct link_conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    uv_connect_t connect;
    uv_write_t write;
    struct redis_link *link; /* NULL once the link has let go */
    redisReader *reader;
    SSL *ssl;             /* NULL: plain */
    BIO *tls_out;         /* what OpenSSL wrote, for the socket */
    bool secured;         /* the TLS handshake is done */
    bool writing;         /* wire is being written */
    struct buffer out;    /* commands not yet written */
    struct buffer sealed; /* with TLS: out encrypted, not yet written */
    struct buffer wire;   /* what uv_write holds */
    struct list_node flush_link;
};

static struct {
    uv_prepare_t prepare;
    struct list_node flush;
    SSL_CTX *tls; /* NULL: [redis] tls = no */
    /* One read's bytes, as hiredis reads them (16 KB): its parser drops
     * what it has consumed by moving the rest to the front once per
     * reply past the first 1 KB, so a larger read costs more moving. */
    char read[16384];
} link_io;

static void conn_flush(struct link_conn *conn);
static void conn_read(struct link_conn *conn, const char *data, size_t len);
static void link_drop(struct redis_link *link, const char *what,
                      const char *why);

static void flush_pending(uv_prepare_t *prepare)
{
    struct list_node *node;

    while ((node = list_first(&link_io.flush)) != NULL) {
        list_remove(node);
        conn_flush(list_entry(node, struct link_conn, flush_link));
    }
    uv_prepare_stop(prepare);
}

static void flush_later(struct link_conn *conn)
{
    if (list_linked(&conn->flush_link))
        return;
    list_push_tail(&link_io.flush, &conn->flush_link);
    uv_prepare_start(&link_io.prepare, flush_pending);
}

static void conn_closed(uv_handle_t *handle)
{
    struct link_conn *conn = handle->data;

    buffer_free(&conn->out);
    buffer_free(&conn->sealed);
    buffer_free(&conn->wire);
    if (conn->reader != NULL)
        redisReaderFree(conn->reader);
    SSL_free(conn->ssl); /* and its BIOs */
    free(conn);
}

/* The link lets go: the socket closes, and with it any connect or write
 * in progress (their callbacks see conn->link NULL). */
static void conn_close(struct link_conn *conn)
{
    conn->link = NULL;
    if (list_linked(&conn->flush_link))
        list_remove(&conn->flush_link);
    uv_close(&conn->h.handle, conn_closed);
}

static void on_written(uv_write_t *req, int status)
{
    struct link_conn *conn = req->data;

    conn->writing = false;
    buffer_reset(&conn->wire);
    if (conn->link == NULL)
        return;
    if (status < 0) {
        link_drop(conn->link, "connection lost", uv_strerror(status));
        return;
    }
    conn_flush(conn);
}

/* With TLS, out is encrypted into sealed, with whatever else OpenSSL has
 * to send (its handshake); 0, or -1 when OpenSSL refuses. */
static int conn_seal(struct link_conn *conn)
{
    size_t pending;

    if (conn->out.len > 0) {
        ERR_clear_error();
        if (SSL_write(conn->ssl, conn->out.data, (int)conn->out.len) <= 0)
            return -1;
        buffer_reset(&conn->out);
    }
    pending = BIO_ctrl_pending(conn->tls_out);
    if (pending == 0)
        return 0;
    if (buffer_reserve(&conn->sealed, pending) != 0)
        return -1;
    conn->sealed.len += (size_t)BIO_read(
        conn->tls_out, conn->sealed.data + conn->sealed.len, (int)pending);
    return 0;
}

/* Writes what is ready: at once as far as the socket takes it, the rest
 * through uv_write (on_written comes back for anything queued since). */
static void conn_flush(struct link_conn *conn)
{
    struct buffer *src = conn->ssl ? &conn->sealed : &conn->out;
    struct buffer spare;
    int n;

    if (conn->writing || conn->link == NULL)
        return;
    if (conn->ssl != NULL && conn_seal(conn) != 0) {
        link_drop(conn->link, "connection lost", "TLS: cannot encrypt");
        return;
    }
    if (src->len == 0)
        return;
    n = uv_try_write(&conn->h.stream, &(uv_buf_t){src->data, src->len}, 1);
    if (n == (int)src->len) {
        buffer_reset(src);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        link_drop(conn->link, "connection lost", uv_strerror(n));
        return;
    }
    if (n > 0)
        buffer_consume(src, (size_t)n);
    spare = conn->wire; /* empty: nothing is being written */
    conn->wire = *src;
    *src = spare;
    conn->writing = true;
    conn->write.data = conn;
    n = uv_write(&conn->write, &conn->h.stream,
                 &(uv_buf_t){conn->wire.data, conn->wire.len}, 1, on_written);
    if (n != 0) {
        conn->writing = false;
        link_drop(conn->link, "connection lost", uv_strerror(n));
    }
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    (void)handle;
    (void)suggested;
    *buf = uv_buf_init(link_io.read, sizeof(link_io.read));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct link_conn *conn = stream->data;

    if (conn->link == NULL || nread == 0)
        return;
    if (nread < 0) {
        link_drop(conn->link, "connection lost",
                  nread == UV_EOF ? "closed" : uv_strerror((int)nread));
        return;
    }
    conn_read(conn, buf->base, (size_t)nread);
}

int redis_links_init(uv_loop_t *loop, const struct config *cfg)
{
    char why[512];

    list_init(&link_io.flush);
    if (cfg->redis_tls) {
        link_io.tls = tls_client_context_new(cfg, why, sizeof(why));
        if (link_io.tls == NULL) {
            log_error("redis tls: %s", why);
            return -EINVAL;
        }
        if ((cfg->redis_tls_cert_file[0] != '\0' &&
             tls_cert_watch(STATS_REDIS, "redis_cert", cfg->redis_tls_cert_file,
                            why, sizeof(why)) != 0) ||
            (cfg->redis_tls_ca_file[0] != '\0' &&
             tls_cert_watch(STATS_REDIS, "redis_ca", cfg->redis_tls_ca_file,
                            why, sizeof(why)) != 0)) {
            log_error("redis tls: %s", why);
            return -EINVAL;
        }
        if (!cfg->redis_tls_verify)
            log_warn("redis tls: tls_verify = no: Redis's certificate and "
                     "name are not checked");
    }
    return uv_prepare_init(loop, &link_io.prepare);
}

void redis_links_close(void)
{
    uv_close((uv_handle_t *)&link_io.prepare, NULL);
    SSL_CTX_free(link_io.tls);
    link_io.tls = NULL;
    tls_cert_forget();
}

/* ---- connection life -------------------------------------------------- */

static void link_connect(struct redis_link *link);
static void link_watch(struct redis_link *link);

static void timer_fired(uv_timer_t *timer)
{
    struct redis_link *link = timer->data;

    switch (link->state) {
    case LINK_DOWN:
        link_connect(link);
        break;
    case LINK_CONNECTING:
    case LINK_HANDSHAKE:
        redis_link_reset(link, "connect timed out");
        break;
    case LINK_READY:
        link_watch(link);
        break;
    case LINK_CLOSED:
        break;
    }
}

/* The probe's reply needs nothing more than what on_reply has done:
 * count it answered and note the progress. */
static void on_probe_reply(struct redis_request *req, redisReply *reply)
{
    (void)reply;
    req->link->probe_inflight = false;
}

/* PING; a connection in pub/sub mode answers it ["pong", ""], which the
 * probe expects (see push_answers). */
static void probe_send(struct redis_link *link)
{
    const char *argv[] = {"PING"};
    size_t len[] = {4};

    link->probe.on_reply = on_probe_reply;
    link->probe.expect = "pong";
    if (redis_link_send(link, &link->probe, 1, argv, len) == 0) {
        link->probe_inflight = true;
        stats.redis_pings++;
    }
}

static void link_stall(struct redis_link *link)
{
    if (link->stalled)
        return;
    link->stalled = true;
    stats.redis_stalls++;
    log_warn("redis %s: no reply for %lld ms; not ready until Redis answers",
             link->label, (long long)link->cfg->ping_interval_ms);
    link->on_readiness(link);
}

/*
 * The liveness watch of a ready link, run by its timer. The timer is not
 * re-armed on each reply (a heap update per reply while commands flow);
 * it fires at the next deadline as last_progress_ms stood then and, if
 * replies have moved it, is armed again for the rest: a busy link costs
 * one wake-up per ping interval. It never sleeps longer than the shorter
 * of the two settings, so a request sent meanwhile (whose deadlines are
 * that far away at least) is never watched late, and a SIGHUP'd value
 * applies within one old interval.
 */
static void link_watch(struct redis_link *link)
{
    uint64_t interval =
        (uint64_t)(link->cfg->ping_interval_ms + link->patience_ms);
    uint64_t timeout = (uint64_t)link->cfg->command_timeout_ms;
    uint64_t cap = interval < timeout ? interval : timeout;
    uint64_t silent = uv_now(link->loop) - link->last_progress_ms;
    uint64_t due = timeout;

    if (link->inflight == 0) {
        if (silent >= interval) {
            probe_send(link);
            silent = 0;
        }
        due = interval;
    } else if (silent >= timeout) {
        redis_link_reset(link, "no reply within command_timeout_ms");
        return;
    } else if (silent < interval && interval < timeout) {
        due = interval;
    }
    uv_timer_start(&link->timer, timer_fired,
                   due - silent < cap ? due - silent : cap, 0);
    /* Last: the owner's on_readiness may run the engine. */
    if (link->inflight > 0 && silent >= interval)
        link_stall(link);
}

static void schedule_reconnect(struct redis_link *link)
{
    link->state = LINK_DOWN;
    uv_timer_start(&link->timer, timer_fired, (uint64_t)link->backoff_ms, 0);
    link->backoff_ms *= 2;
    if (link->backoff_ms > link->cfg->reconnect_max_ms)
        link->backoff_ms = link->cfg->reconnect_max_ms;
}

/* Logs a failure once while it repeats: a Redis that stays away, or a
 * password that stays wrong, is reported by the backend's outage summary
 * (redis_backend.c), not on every retry. */
static void link_failed(struct redis_link *link, enum log_level level,
                        const char *what, const char *why)
{
    char text[sizeof(link->last_error)];

    snprintf(text, sizeof(text), "%s: %s", what, why);
    if (strcmp(text, link->last_error) == 0) {
        log_debug("redis %s: %s", link->label, text);
        return;
    }
    memcpy(link->last_error, text, sizeof(text));
    log_write(level, "redis %s: %s", link->label, text);
}

/* What is in flight is answered with NULL when the connection goes. */
static void push_drain(struct redis_link *link)
{
    struct list_node *node;

    while ((node = list_first(&link->pending)) != NULL) {
        struct redis_request *req =
            list_entry(node, struct redis_request, pending);

        list_remove(node);
        req->on_reply(req, NULL);
    }
}

/* The connection is gone or going; forget it and maybe reconnect. A
 * ready link "drops" a connection it let go itself, and "loses" one Redis
 * closed. */
static void link_lost(struct redis_link *link, const char *what,
                      const char *why)
{
    bool was_ready = link->state == LINK_READY;
    bool tls = link->tls_failed, refused = link->refused || tls;

    link->conn = NULL;
    link->inflight = 0;
    link->probe_inflight = false;
    link->stalled = false;
    link->refused = false;
    link->tls_failed = false;
    push_drain(link);
    if (link->state == LINK_CLOSED)
        return;
    if (was_ready)
        stats.redis_reconnects++;
    else
        stats.redis_connect_failures++;
    link_failed(link,
                refused     ? LOG_LEVEL_ERROR
                : was_ready ? LOG_LEVEL_WARN
                            : LOG_LEVEL_INFO,
                tls         ? "tls"
                : refused   ? "refused"
                : was_ready ? what
                            : "connect failed",
                why);
    schedule_reconnect(link);
    if (was_ready)
        link->on_readiness(link);
}

/* Forgets the connection first, so the NULL replies push_drain delivers
 * already see the link as not ready, then closes its socket. */
static void link_drop(struct redis_link *link, const char *what,
                      const char *why)
{
    struct link_conn *conn = link->conn;

    if (conn == NULL)
        return;
    link_lost(link, what, why);
    conn_close(conn);
}

static void on_handshake_reply(struct redis_request *req, redisReply *reply)
{
    struct redis_link *link = req->link;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
        link->conn != NULL) {
        link->refused = true; /* logged once, at error level */
        redis_link_reset(link, reply->str);
    }
}

static void send_handshake(struct redis_link *link)
{
    const struct redis_login *login = &link->login;
    char db[24];

    link->handshake.on_reply = on_handshake_reply;
    link->select.on_reply = on_handshake_reply;
    if (login->password[0] != '\0') {
        /* AUTH [username] password */
        const char *argv[] = {"AUTH", login->username, login->password};
        size_t len[] = {4, strlen(login->username), strlen(login->password)};
        int skip = login->username[0] == '\0';

        argv[skip] = "AUTH";
        len[skip] = 4;
        redis_link_send(link, &link->handshake, 3 - skip, argv + skip,
                        len + skip);
    }
    if (login->db != 0) {
        const char *argv[] = {"SELECT", db};
        size_t len[] = {
            6, (size_t)snprintf(db, sizeof(db), "%lld", (long long)login->db)};
        redis_link_send(link, &link->select, 2, argv, len);
    }
}

/* The connection carries commands now (TLS, when on, is established):
 * log in, and let the owner prepare it. */
static void link_connected(struct redis_link *link)
{
    link->state = LINK_HANDSHAKE;
    link->last_progress_ms = uv_now(link->loop);
    send_handshake(link);
    link->on_connected(link);
}

/* TLS refused or broke: one line per link while the reason stays the
 * same (link_failed), the reason for HEALTH, and the backoff of a
 * refused connection. */
static void link_tls_failed(struct redis_link *link, struct link_conn *conn)
{
    char buf[160];
    const char *why = tls_client_failure(conn->ssl, buf, sizeof(buf));

    snprintf(redis_status.tls_error, sizeof(redis_status.tls_error), "%s", why);
    link->tls_failed = true;
    link_drop(link, "tls", why);
}

/* Moves the TLS handshake on; true once it is done and the link has been
 * told (and still holds conn). */
static bool tls_handshake(struct link_conn *conn)
{
    struct redis_link *link = conn->link;
    int r, e;

    ERR_clear_error(); /* SSL_get_error reads the thread's whole queue */
    r = SSL_do_handshake(conn->ssl);
    e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(conn->ssl, r);

    if (e != SSL_ERROR_NONE && e != SSL_ERROR_WANT_READ) {
        link_tls_failed(link, conn);
        return false;
    }
    conn_flush(conn);
    if (e != SSL_ERROR_NONE || link->conn != conn)
        return false;
    conn->secured = true;
    stats.redis_tls_handshakes++;
    link_connected(link);
    return link->conn == conn;
}

/* Decrypts what OpenSSL can from data into the reply parser, and sends
 * whatever OpenSSL has to answer; false when the connection went (Redis's
 * close_notify is a close like any other). */
static bool tls_read(struct link_conn *conn, const char *data, size_t len)
{
    BIO *in = SSL_get_rbio(conn->ssl);
    int n;

    if (BIO_write(in, data, (int)len) != (int)len) {
        link_drop(conn->link, "connection lost", "TLS: out of memory");
        return false;
    }
    if (!conn->secured && !tls_handshake(conn))
        return false;
    ERR_clear_error();
    while ((n = SSL_read(conn->ssl, link_io.read, sizeof(link_io.read))) > 0)
        redisReaderFeed(conn->reader, link_io.read, (size_t)n);
    n = SSL_get_error(conn->ssl, n);
    if (n == SSL_ERROR_ZERO_RETURN) {
        link_drop(conn->link, "connection lost", "closed");
        return false;
    }
    if (n != SSL_ERROR_WANT_READ) {
        link_tls_failed(conn->link, conn);
        return false;
    }
    if (BIO_ctrl_pending(conn->tls_out) > 0)
        flush_later(conn);
    return true;
}

static void on_connect(uv_connect_t *req, int status)
{
    struct link_conn *conn = req->data;
    struct redis_link *link = conn->link;
    int err = status;

    if (link == NULL)
        return;
    if (err == 0 && link->addr.unix_socket[0] == '\0') {
        /* Keepalive notices a vanished host, as hiredis's did (15 s). */
        uv_tcp_nodelay(&conn->h.tcp, 1);
        uv_tcp_keepalive(&conn->h.tcp, 1, 15);
    }
    if (err == 0)
        err = uv_read_start(&conn->h.stream, on_alloc, on_read);
    if (err != 0) {
        link_drop(link, "connect failed", uv_strerror(err));
        return;
    }
    if (conn->ssl == NULL) {
        link_connected(link);
        return;
    }
    tls_handshake(conn);
}

/* "host"'s first address, as hiredis found it (blocking for a name). */
static int resolve(const struct redis_addr *addr, struct sockaddr_storage *out)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *found;
    char port[8];
    int err;

    snprintf(port, sizeof(port), "%d", addr->port);
    err = getaddrinfo(addr->host, port, &hints, &found);
    if (err != 0)
        return err == EAI_MEMORY ? UV_ENOMEM : UV_EAI_NONAME;
    memcpy(out, found->ai_addr, found->ai_addrlen);
    freeaddrinfo(found);
    return 0;
}

/* A new connection to link's address, its handle and parser ready, TLS
 * armed for a TCP one when [redis] tls is on (a Unix socket is local,
 * and Redis serves none with TLS). */
static int conn_open(struct redis_link *link, struct link_conn **out)
{
    const struct redis_addr *addr = &link->addr;
    struct link_conn *conn = calloc(1, sizeof(*conn));
    struct sockaddr_storage sa;
    int err;

    if (conn == NULL)
        return UV_ENOMEM;
    if (addr->unix_socket[0] == '\0' && (err = resolve(addr, &sa)) != 0) {
        free(conn);
        return err;
    }
    err = addr->unix_socket[0] != '\0'
              ? uv_pipe_init(link->loop, &conn->h.pipe, 0)
              : uv_tcp_init(link->loop, &conn->h.tcp);
    if (err != 0) {
        free(conn);
        return err;
    }
    conn->h.handle.data = conn;
    conn->connect.data = conn;
    conn->link = link;
    list_init(&conn->flush_link);
    conn->reader = redisReaderCreate();
    if (conn->reader == NULL)
        goto nomem;
    if (link_io.tls != NULL && addr->unix_socket[0] == '\0') {
        BIO *in = BIO_new(BIO_s_mem()), *out_bio = BIO_new(BIO_s_mem());

        conn->ssl = tls_client_new(link_io.tls, link->cfg, addr->host);
        if (conn->ssl == NULL || in == NULL || out_bio == NULL) {
            BIO_free(in);
            BIO_free(out_bio);
            goto nomem;
        }
        SSL_set_bio(conn->ssl, in, out_bio);
        conn->tls_out = out_bio;
    }
    if (addr->unix_socket[0] != '\0')
        uv_pipe_connect(&conn->connect, &conn->h.pipe, addr->unix_socket,
                        on_connect);
    else if ((err = uv_tcp_connect(&conn->connect, &conn->h.tcp,
                                   (const struct sockaddr *)&sa, on_connect)) !=
             0)
        goto fail;
    *out = conn;
    return 0;
nomem:
    err = UV_ENOMEM;
fail:
    conn_close(conn);
    return err;
}

static void link_connect(struct redis_link *link)
{
    struct link_conn *conn;
    int err = conn_open(link, &conn);

    if (err != 0) {
        stats.redis_connect_failures++;
        link_failed(link, LOG_LEVEL_INFO, "connect failed", uv_strerror(err));
        schedule_reconnect(link);
        return;
    }
    link->conn = conn;
    link->state = LINK_CONNECTING;
    uv_timer_start(&link->timer, timer_fired,
                   (uint64_t)link->cfg->connect_timeout_ms, 0);
}

int redis_link_init(struct redis_link *link, uv_loop_t *loop,
                    const struct config *cfg, const char *label)
{
    memset(link, 0, sizeof(*link));
    snprintf(link->label, sizeof(link->label), "%s", label);
    link->loop = loop;
    link->cfg = cfg;
    link->state = LINK_DOWN;
    link->backoff_ms = BACKOFF_START_MS;
    link->timer.data = link;
    list_init(&link->pending);
    snprintf(link->addr.host, sizeof(link->addr.host), "%s", cfg->redis_host);
    link->addr.port = (int)cfg->redis_port;
    snprintf(link->addr.unix_socket, sizeof(link->addr.unix_socket), "%s",
             cfg->redis_unix_socket);
    link->login = (struct redis_login){cfg->redis_username, cfg->redis_password,
                                       cfg->redis_db};
    return uv_timer_init(loop, &link->timer);
}

void redis_link_move(struct redis_link *link, const struct redis_addr *addr)
{
    if (link->state == LINK_CLOSED)
        return;
    link->addr = *addr;
    link->last_error[0] = '\0';
    if (link->conn != NULL)
        redis_link_reset(link, "moving to another server");
    link->backoff_ms = BACKOFF_START_MS;
    uv_timer_start(&link->timer, timer_fired, 0, 0);
}

const char *redis_addr_text(const struct redis_addr *addr, char *buf,
                            size_t size)
{
    if (addr->unix_socket[0] != '\0')
        snprintf(buf, size, "%s", addr->unix_socket);
    else if (addr->port == 0)
        snprintf(buf, size, "%s", "");
    else
        snprintf(buf, size, "%s:%d", addr->host, addr->port);
    return buf;
}

bool redis_addr_equal(const struct redis_addr *a, const struct redis_addr *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0 &&
           strcmp(a->unix_socket, b->unix_socket) == 0;
}

void redis_link_start(struct redis_link *link)
{
    link_connect(link);
}

void redis_link_set_ready(struct redis_link *link)
{
    if (link->state != LINK_HANDSHAKE)
        return;
    link->state = LINK_READY;
    link->backoff_ms = BACKOFF_START_MS;
    link->last_error[0] = '\0';
    redis_status.tls_error[0] = '\0';
    log_info("redis %s: ready", link->label);
    link_watch(link);
    link->on_readiness(link);
}

bool redis_link_ready(const struct redis_link *link)
{
    return link->state == LINK_READY && !link->stalled;
}

unsigned redis_link_requests(const struct redis_link *link)
{
    return link->inflight - link->probe_inflight;
}

/* Any reply, a pub/sub message included, shows Redis is answering: a
 * stalled link is ready again, on the connection it has. */
static void note_progress(struct redis_link *link, bool answered)
{
    if (answered && link->inflight > 0)
        link->inflight--;
    link->last_progress_ms = uv_now(link->loop);
    if (link->stalled) {
        link->stalled = false;
        log_info("redis %s: answering again", link->label);
        link->on_readiness(link);
    }
}

/* Whether reply, a pub/sub array, is the one req expects. */
static bool push_answers(const struct redis_request *req,
                         const redisReply *reply)
{
    const redisReply *kind = reply->element[0];
    const redisReply *channel = reply->elements > 1 ? reply->element[1] : NULL;

    if (req->expect == NULL || strcmp(kind->str, req->expect) != 0)
        return false;
    return req->expect_channel == NULL ||
           (channel != NULL && channel->type == REDIS_REPLY_STRING &&
            channel->len == req->expect_channel_len &&
            memcmp(channel->str, req->expect_channel, channel->len) == 0);
}

/* One reply: the oldest request's answer, or on a link in pub/sub mode a
 * push. A reply nothing asked for on any other link means the stream is
 * out of step, and the connection cannot be trusted. */
static void link_dispatch(struct redis_link *link, redisReply *reply)
{
    struct list_node *head = list_first(&link->pending);
    struct redis_request *req =
        head ? list_entry(head, struct redis_request, pending) : NULL;

    if (link->on_push != NULL &&
        (req == NULL ||
         (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
          reply->element[0]->type == REDIS_REPLY_STRING &&
          !push_answers(req, reply)))) {
        note_progress(link, false);
        link->on_push(link, reply);
        return;
    }
    if (req == NULL) {
        redis_link_reset(link, "a reply nothing asked for");
        return;
    }
    list_remove(head);
    histogram_observe(&latency.redis_rtt_seconds,
                      (uv_hrtime() - req->sent_ns) / 1000);
    note_progress(link, true);
    req->on_reply(req, reply);
}

/* Bytes from the socket: through TLS when on, then every whole reply
 * handed out; a protocol error drops the connection. */
static void conn_read(struct link_conn *conn, const char *data, size_t len)
{
    struct redis_link *link = conn->link;
    void *reply = NULL;

    if (conn->ssl != NULL) {
        if (!tls_read(conn, data, len))
            return;
    } else if (redisReaderFeed(conn->reader, data, len) != REDIS_OK) {
        redis_link_reset(link, "out of memory");
        return;
    }
    while (link->conn == conn) {
        if (redisReaderGetReply(conn->reader, &reply) != REDIS_OK) {
            redis_link_reset(link, conn->reader->errstr);
            return;
        }
        if (reply == NULL)
            return;
        link_dispatch(link, reply);
        freeReplyObject(reply);
    }
}

/* Appends a command to out as a RESP array of bulk strings. hiredis's
 * own redisFormatCommandArgv builds it with sdscatfmt, which was the
 * largest single cost of a lock command in rlockd's profile. */
static int format_command(struct buffer *out, int argc, const char **argv,
                          const size_t *argv_len)
{
    size_t need = FORMAT_INT_MAX + 4;
    int err;

    for (int i = 0; i < argc; i++)
        need += FORMAT_INT_MAX + 6 + argv_len[i];
    err = buffer_reserve(out, need);
    if (err != 0)
        return err;
    buffer_append_resp_line(out, '*', argc);
    for (int i = 0; i < argc; i++) {
        buffer_append_resp_line(out, '$', (int64_t)argv_len[i]);
        buffer_append(out, argv[i], argv_len[i]);
        buffer_append(out, "\r\n", 2);
    }
    return 0;
}

int redis_link_send(struct redis_link *link, struct redis_request *req,
                    int argc, const char **argv, const size_t *argv_len)
{
    int err;

    if (link->conn == NULL ||
        (link->state != LINK_READY && link->state != LINK_HANDSHAKE))
        return -ENOTCONN;
    err = format_command(&link->conn->out, argc, argv, argv_len);
    if (err != 0)
        return err;
    req->link = link;
    req->sent_ns = uv_hrtime();
    list_push_tail(&link->pending, &req->pending);
    flush_later(link->conn);
    if (link->inflight++ == 0)
        link->last_progress_ms = uv_now(link->loop);
    return 0;
}

void redis_link_reset(struct redis_link *link, const char *why)
{
    link_drop(link, "dropping connection", why);
}

void redis_link_stop(struct redis_link *link, const char *why)
{
    if (link->state == LINK_CLOSED)
        return;
    redis_link_reset(link, why);
    link->state = LINK_DOWN;
    uv_timer_stop(&link->timer);
}

/* A pub/sub owner closing frees its requests with itself (the
 * subscriber's subscriptions): they are forgotten, not answered. */
void redis_link_close(struct redis_link *link)
{
    link->state = LINK_CLOSED;
    if (link->on_push != NULL)
        list_init(&link->pending);
    link_drop(link, "closing", "closing");
    uv_timer_stop(&link->timer);
    uv_close((uv_handle_t *)&link->timer, NULL);
}
