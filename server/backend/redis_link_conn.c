/*
 * redis_link_conn.c - one Redis connection's socket: bytes out, bytes
 * in, replies parsed.
 *
 * The link owns its socket rather than going through hiredis 0.14's
 * async context, which cannot carry TLS and whose pub/sub callbacks know
 * only SUBSCRIBE's messages: libuv connects, reads and writes, OpenSSL
 * (when [redis] tls is on, redis_link_tls.c) encrypts through memory
 * BIOs, and hiredis's redisReader only parses replies.
 *
 * Never: decide what a failure means. It reports to redis_link.c
 * (link_drop, link_connected, link_dispatch), which logs, reconnects
 * and tells the owner.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backend/redis_link_int.h"
#include "base/list.h"

static struct {
    uv_prepare_t prepare;
    struct list_node flush;
    /* One read's bytes, as hiredis reads them (16 KB): its parser drops
     * what it has consumed by moving the rest to the front once per
     * reply past the first 1 KB, so a larger read costs more moving. */
    char read[16384];
} link_io;

static void write_failed(struct link_conn *conn, int err);

static void flush_pending(uv_prepare_t *prepare)
{
    struct list_node *node;

    while ((node = list_first(&link_io.flush)) != NULL) {
        list_remove(node);
        link_conn_flush(list_entry(node, struct link_conn, flush_link));
    }
    uv_prepare_stop(prepare);
}

void link_conn_flush_later(struct link_conn *conn)
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
void link_conn_close(struct link_conn *conn)
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
    buffer_drain(&conn->wire, LINK_IDLE_KEEP);
    if (conn->link == NULL)
        return;
    if (status < 0) {
        write_failed(conn, status);
        return;
    }
    link_conn_flush(conn);
}

/* Writes what is ready: at once as far as the socket takes it, the rest
 * through uv_write (on_written comes back for anything queued since). */
void link_conn_flush(struct link_conn *conn)
{
    struct buffer *src = conn->ssl ? &conn->sealed : &conn->out;
    struct buffer spare;
    int n;

    if (conn->writing || conn->link == NULL)
        return;
    if (conn->ssl != NULL && link_tls_seal(conn) != 0) {
        link_drop(conn->link, "connection lost", "TLS: cannot encrypt");
        return;
    }
    if (src->len == 0)
        return;
    n = uv_try_write(&conn->h.stream, &(uv_buf_t){src->data, src->len}, 1);
    if (n == (int)src->len) {
        buffer_drain(src, LINK_IDLE_KEEP);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        write_failed(conn, n);
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
        write_failed(conn, n);
    }
}

/* Bytes from the socket: through TLS when on, then every whole reply
 * handed out; a protocol error drops the connection. */
static void conn_read(struct link_conn *conn, const char *data, size_t len)
{
    struct redis_link *link = conn->link;
    void *reply = NULL;

    if (conn->ssl != NULL) {
        if (!link_tls_read(conn, data, len))
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

/* A write failed: Redis closed, or reset as our bytes came after its
 * close. What it sent before closing says why better than the reset
 * does (a TLS alert refusing our certificate, an error reply), so it is
 * read first; a slow rlockd often writes again before it reads. */
static void write_failed(struct link_conn *conn, int err)
{
    uv_os_fd_t fd;
    ssize_t n;

    if (uv_fileno(&conn->h.handle, &fd) == 0)
        while (conn->link != NULL &&
               (n = recv(fd, link_io.read, sizeof(link_io.read),
                         MSG_DONTWAIT)) > 0)
            conn_read(conn, link_io.read, (size_t)n);
    if (conn->link != NULL)
        link_drop(conn->link, "connection lost", uv_strerror(err));
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
    link_tls_handshake(conn);
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
int link_conn_open(struct redis_link *link, struct link_conn **out)
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
    if (addr->unix_socket[0] == '\0' &&
        link_tls_attach(conn, link->cfg, addr->host) != 0)
        goto nomem;
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
    link_conn_close(conn);
    return err;
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

int link_conn_send(struct link_conn *conn, int argc, const char **argv,
                   const size_t *argv_len)
{
    int err = format_command(&conn->out, argc, argv, argv_len);

    if (err != 0)
        return err;
    link_conn_flush_later(conn);
    return 0;
}

int link_conn_io_init(uv_loop_t *loop)
{
    list_init(&link_io.flush);
    return uv_prepare_init(loop, &link_io.prepare);
}

void link_conn_io_close(void)
{
    uv_close((uv_handle_t *)&link_io.prepare, NULL);
}
