/*
 * redis_link_int.h - what only a Redis link's own files may see.
 *
 * A link is three files, one concern each. redis_link.c is its life:
 * connecting, logging in, watching, reconnecting, and its requests.
 * redis_link_conn.c is one connection's socket: bytes in and out, and
 * replies parsed. redis_link_tls.c is TLS over that socket. They share
 * struct link_conn and the functions declared here, each named for its
 * file: link_ for redis_link.c, link_conn_ and link_tls_ for the others.
 * The pool, the subscriber, the sentinels and the cluster see
 * redis_link.h only.
 */
#ifndef RLOCKD_REDIS_LINK_INT_H
#define RLOCKD_REDIS_LINK_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis.h>
#include <openssl/ssl.h>
#include <uv.h>

#include "backend/redis_link.h"
#include "base/config.h"
#include "base/list.h"
#include "buffer.h"

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
/* An emptied buffer of a connection's past this is freed: a renewal
 * round or a burst of acquires writes megabytes at once, and kept, four
 * pooled links would hold a round's size for good; a busy link's usual
 * loop turn writes a few KB. */
#define LINK_IDLE_KEEP 65536

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

/* redis_link.c: the link's life, as the socket and TLS report to it. */

/* Forgets the connection (pending requests get NULL), logs what and why,
 * and closes the socket; reconnects later unless the link is closed. */
void link_drop(struct redis_link *link, const char *what, const char *why);
/* The connection carries commands now: log in, tell the owner. */
void link_connected(struct redis_link *link);
/* One reply from the connection: a request's answer, or a push. */
void link_dispatch(struct redis_link *link, redisReply *reply);

/* redis_link_conn.c: the socket. */

/* The write flushing all links share; 0 or a libuv error. */
int link_conn_io_init(uv_loop_t *loop);
void link_conn_io_close(void);
/* Dials link's address; 0 or a libuv error (nothing to close then). */
int link_conn_open(struct redis_link *link, struct link_conn **out);
/* The link lets go; the connection frees itself once its handle closed. */
void link_conn_close(struct link_conn *conn);
/* Queues a command for this loop turn's write; 0 or -ENOMEM. */
int link_conn_send(struct link_conn *conn, int argc, const char **argv,
                   const size_t *argv_len);
void link_conn_flush(struct link_conn *conn);
void link_conn_flush_later(struct link_conn *conn);

/* redis_link_tls.c: TLS, when [redis] tls is on. */

/* The client context; 0, or -EINVAL with the reason logged. */
int link_tls_context_init(const struct config *cfg);
void link_tls_context_free(void);
/* Arms TLS on a new TCP connection when [redis] tls is on; 0, or -1 out
 * of memory. */
int link_tls_attach(struct link_conn *conn, const struct config *cfg,
                    const char *host);
int link_tls_seal(struct link_conn *conn);
bool link_tls_handshake(struct link_conn *conn);
bool link_tls_read(struct link_conn *conn, const char *data, size_t len);

#endif
