/*
 * redis_link_tls.c - TLS to Redis, when [redis] tls is on.
 *
 * OpenSSL runs over two memory BIOs: redis_link_conn.c moves the bytes,
 * and this file only transforms them, so plain and TLS connections share
 * the same reads and writes. A TLS failure (a certificate, an alert) is
 * logged once per link while its reason stays the same, and is the
 * reason HEALTH gives.
 *
 * Never: touch the socket. It seals what is to be written and opens what
 * was read; redis_link_conn.c writes and reads.
 */
#include <errno.h>
#include <stdio.h>

#include <openssl/err.h>

#include "backend/redis_link_int.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/tls.h"

static SSL_CTX *tls_context; /* NULL: [redis] tls = no */
/* What one SSL_read opens: as much as one socket read brings
 * (redis_link_conn.c). */
static char plain[16384];

int link_tls_context_init(const struct config *cfg)
{
    char why[512];

    if (!cfg->redis_tls)
        return 0;
    tls_context = tls_client_context_new(cfg, why, sizeof(why));
    if (tls_context == NULL) {
        log_error("redis tls: %s", why);
        return -EINVAL;
    }
    if ((cfg->redis_tls_cert_file[0] != '\0' &&
         tls_cert_watch(STATS_REDIS, "redis_cert", cfg->redis_tls_cert_file,
                        why, sizeof(why)) != 0) ||
        (cfg->redis_tls_ca_file[0] != '\0' &&
         tls_cert_watch(STATS_REDIS, "redis_ca", cfg->redis_tls_ca_file, why,
                        sizeof(why)) != 0)) {
        log_error("redis tls: %s", why);
        return -EINVAL;
    }
    if (!cfg->redis_tls_verify)
        log_warn("redis tls: tls_verify = no: Redis's certificate and "
                 "name are not checked");
    return 0;
}

void link_tls_context_free(void)
{
    SSL_CTX_free(tls_context);
    tls_context = NULL;
    tls_cert_forget();
}

int link_tls_attach(struct link_conn *conn, const struct config *cfg,
                    const char *host)
{
    BIO *in, *out;

    if (tls_context == NULL)
        return 0;
    in = BIO_new(BIO_s_mem());
    out = BIO_new(BIO_s_mem());
    conn->ssl = tls_client_new(tls_context, cfg, host);
    if (conn->ssl == NULL || in == NULL || out == NULL) {
        BIO_free(in);
        BIO_free(out);
        return -1; /* conn->ssl goes with the connection */
    }
    SSL_set_bio(conn->ssl, in, out);
    conn->tls_out = out;
    return 0;
}

/* With TLS, out is encrypted into sealed, with whatever else OpenSSL has
 * to send (its handshake); 0, or -1 when OpenSSL refuses. */
int link_tls_seal(struct link_conn *conn)
{
    size_t pending;

    if (conn->out.len > 0) {
        ERR_clear_error();
        if (SSL_write(conn->ssl, conn->out.data, (int)conn->out.len) <= 0)
            return -1;
        buffer_drain(&conn->out, LINK_IDLE_KEEP);
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

/* TLS refused or broke: one line per link while the reason stays the
 * same (link_failed), the reason for HEALTH, and the backoff of a
 * refused connection. */
static void tls_failed(struct redis_link *link, struct link_conn *conn)
{
    char buf[160];
    const char *why = tls_client_failure(conn->ssl, buf, sizeof(buf));

    snprintf(redis_status.tls_error, sizeof(redis_status.tls_error), "%s", why);
    link->tls_failed = true;
    link_drop(link, "tls", why);
}

/* Moves the TLS handshake on; true once it is done and the link has been
 * told (and still holds conn). */
bool link_tls_handshake(struct link_conn *conn)
{
    struct redis_link *link = conn->link;
    int r, e;

    ERR_clear_error(); /* SSL_get_error reads the thread's whole queue */
    r = SSL_do_handshake(conn->ssl);
    e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(conn->ssl, r);

    if (e != SSL_ERROR_NONE && e != SSL_ERROR_WANT_READ) {
        tls_failed(link, conn);
        return false;
    }
    link_conn_flush(conn);
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
bool link_tls_read(struct link_conn *conn, const char *data, size_t len)
{
    BIO *in = SSL_get_rbio(conn->ssl);
    int n;

    if (BIO_write(in, data, (int)len) != (int)len) {
        link_drop(conn->link, "connection lost", "TLS: out of memory");
        return false;
    }
    if (!conn->secured && !link_tls_handshake(conn))
        return false;
    ERR_clear_error();
    while ((n = SSL_read(conn->ssl, plain, sizeof(plain))) > 0)
        redisReaderFeed(conn->reader, plain, (size_t)n);
    n = SSL_get_error(conn->ssl, n);
    if (n == SSL_ERROR_ZERO_RETURN) {
        link_drop(conn->link, "connection lost", "closed");
        return false;
    }
    if (n != SSL_ERROR_WANT_READ) {
        tls_failed(conn->link, conn);
        return false;
    }
    if (BIO_ctrl_pending(conn->tls_out) > 0)
        link_conn_flush_later(conn);
    return true;
}
