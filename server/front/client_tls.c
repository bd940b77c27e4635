/*
 * client_tls.c - TLS over a client connection with memory BIOs: OpenSSL
 * never touches the socket, so the connection's reads, writes, limits
 * and timers stay client*.c's, the same for TLS and plain clients.
 *
 * The handshake counts as an unfinished request (client_limits.c closes one
 * that takes request_timeout_ms), and a connection's TLS state counts
 * in its share of max_client_buffers_bytes, so a flood of handshakes
 * stays under the limits every connection is under.
 */
#include "front/client_tls.h"

#include <errno.h>
#include <stdio.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "base/log.h"
#include "base/stats.h"
#include "base/tls_server.h"

/* What one connection's TLS state is counted as holding: its SSL object
 * and a record buffer each way while busy (SSL_MODE_RELEASE_BUFFERS
 * gives them back when idle). */
#define CLIENT_TLS_BYTES 40960
/* Decrypted input is read in pieces of this size at least. */
#define TLS_READ_CHUNK 16384

int client_tls_start(struct client *c)
{
    SSL *ssl = tls_server_new_ssl();
    BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());

    if (ssl == NULL || rbio == NULL || wbio == NULL) {
        SSL_free(ssl);
        BIO_free(rbio);
        BIO_free(wbio);
        return -ENOMEM;
    }
    /* an empty read BIO means "more to come", not end of file */
    BIO_set_mem_eof_return(rbio, -1);
    SSL_set_bio(ssl, rbio, wbio);
    SSL_set_accept_state(ssl);
    c->tls = ssl;
    c->tls_bytes = CLIENT_TLS_BYTES;
    return 0;
}

bool client_tls_established(const struct client *c)
{
    return SSL_is_init_finished(c->tls);
}

/* Why OpenSSL failed, for the log; counts a refused certificate. */
static const char *failure(SSL *ssl, int err)
{
    static char why[160];
    unsigned long e = ERR_peek_last_error();
    long verify = SSL_get_verify_result(ssl);
    int reason = ERR_GET_REASON(e);

    if (err == SSL_ERROR_SSL &&
        (reason == SSL_R_CERTIFICATE_VERIFY_FAILED ||
         reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE))
        stats.tls_client_cert_refusals++;
    if (err == SSL_ERROR_SSL && verify != X509_V_OK)
        snprintf(why, sizeof(why), "TLS: client certificate: %s",
                 X509_verify_cert_error_string(verify));
    else if (e != 0)
        snprintf(why, sizeof(why), "TLS: %s", ERR_reason_error_string(e));
    else
        snprintf(why, sizeof(why), "TLS: error %d", err);
    ERR_clear_error();
    return why;
}

/* The handshake just completed: a verified certificate's CN may name
 * the connection's user (else it stays unauthenticated, as any new
 * connection: AUTH as usual, or the default user without AUTH). */
static void established(struct client *c, const struct acl *acl)
{
    char cn[256];

    stats.tls_handshakes++;
    if (tls_server_peer_cn(c->tls, cn, sizeof(cn)))
        c->user = acl_find_tls_subject(acl, cn);
}

/* Decrypts whatever the read BIO holds into c->in. */
static enum client_tls_read decrypt(struct client *c, const char **why)
{
    for (;;) {
        int n, err;

        if (buffer_reserve(&c->in, TLS_READ_CHUNK) != 0) {
            *why = "out of memory";
            return CLIENT_TLS_FAILED;
        }
        n = SSL_read(c->tls, c->in.data + c->in.len,
                     (int)(c->in.cap - c->in.len));
        if (n > 0) {
            c->in.len += (size_t)n;
            continue;
        }
        err = SSL_get_error(c->tls, n);
        if (err == SSL_ERROR_WANT_READ)
            return CLIENT_TLS_DATA;
        if (err == SSL_ERROR_ZERO_RETURN)
            return CLIENT_TLS_EOF;
        *why = failure(c->tls, err);
        return CLIENT_TLS_FAILED;
    }
}

enum client_tls_read client_tls_read(struct client *c, size_t len,
                                     const struct acl *acl, const char **why)
{
    int n, err;

    if (BIO_write(SSL_get_rbio(c->tls), c->in.data + c->in.len, (int)len) !=
        (int)len) {
        *why = "out of memory";
        return CLIENT_TLS_FAILED;
    }
    if (!SSL_is_init_finished(c->tls)) {
        n = SSL_do_handshake(c->tls);
        if (n != 1) {
            err = SSL_get_error(c->tls, n);
            if (err == SSL_ERROR_WANT_READ)
                return CLIENT_TLS_HANDSHAKING;
            stats.tls_handshake_failures++;
            *why = failure(c->tls, err);
            return CLIENT_TLS_FAILED;
        }
        established(c, acl);
    }
    return decrypt(c, why);
}

int client_tls_seal(struct client *c)
{
    BIO *wbio = SSL_get_wbio(c->tls);
    size_t pending;

    if (c->out.len > 0) {
        /* nothing is answered before the handshake ends */
        if (!SSL_is_init_finished(c->tls) ||
            SSL_write(c->tls, c->out.data, (int)c->out.len) <= 0) {
            ERR_clear_error();
            return -EPROTO;
        }
        buffer_consume(&c->out, c->out.len);
    }
    pending = BIO_ctrl_pending(wbio);
    if (pending == 0)
        return 0;
    if (buffer_reserve(&c->out, pending) != 0)
        return -ENOMEM;
    if (BIO_read(wbio, c->out.data + c->out.len, (int)pending) != (int)pending)
        return -EPROTO;
    c->out.len += pending;
    return 0;
}

void client_tls_free(struct client *c)
{
    SSL_free(c->tls); /* and its BIOs */
    c->tls = NULL;
}
