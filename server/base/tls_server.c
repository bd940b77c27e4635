/*
 * tls_server.c - the client listener's SSL_CTX: built from [server]
 * tls_cert_file, tls_key_file, tls_ca_file, tls_client_certs and
 * tls_min_version; swapped whole at a reload, never changed in place.
 */
#include "base/tls_server.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "base/stats.h"

/* Sessions resumed must have been made by this context's policy. */
#define SESSION_ID_CONTEXT "rlockd"

static SSL_CTX *current;

bool tls_server_configured(const struct config *cfg)
{
    return cfg->tls_cert_file[0] != '\0';
}

/* why := "<what>: <OpenSSL's reason>"; -1. */
static int tls_error(char *why, size_t size, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char reason[256] = "unknown error";

    if (e != 0)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    snprintf(why, size, "%s: %s", what, reason);
    return -1;
}

static int verify_mode(const struct config *cfg)
{
    switch ((enum tls_client_certs)cfg->tls_client_certs) {
    case TLS_CLIENT_CERTS_OPTIONAL:
        return SSL_VERIFY_PEER;
    case TLS_CLIENT_CERTS_REQUIRED:
        return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    case TLS_CLIENT_CERTS_NO:
        break;
    }
    return SSL_VERIFY_NONE;
}

/* The CA file: trusted for client certificates, and named to clients as
 * the CAs whose certificates are asked for. */
static int load_ca(SSL_CTX *ctx, const char *file, char *why, size_t size)
{
    STACK_OF(X509_NAME) * names;
    char what[1100];

    snprintf(what, sizeof(what), "tls_ca_file %s", file);
    if (SSL_CTX_load_verify_locations(ctx, file, NULL) != 1)
        return tls_error(why, size, what);
    names = SSL_load_client_CA_file(file);
    if (names == NULL)
        return tls_error(why, size, what);
    SSL_CTX_set_client_CA_list(ctx, names);
    return 0;
}

static int load_files(SSL_CTX *ctx, const struct config *cfg, char *why,
                      size_t size)
{
    char what[1100];

    snprintf(what, sizeof(what), "tls_cert_file %s", cfg->tls_cert_file);
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert_file) != 1)
        return tls_error(why, size, what);
    snprintf(what, sizeof(what), "tls_key_file %s", cfg->tls_key_file);
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) !=
        1)
        return tls_error(why, size, what);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return tls_error(why, size,
                         "tls_key_file does not match tls_cert_file");
    if (cfg->tls_ca_file[0] != '\0')
        return load_ca(ctx, cfg->tls_ca_file, why, size);
    return 0;
}

/* A context from cfg, or NULL with why. Renegotiation is off: a client
 * could make the server redo handshakes at will. */
static SSL_CTX *build(const struct config *cfg, char *why, size_t size)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (ctx == NULL) {
        tls_error(why, size, "TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, cfg->tls_min_version == TLS_MIN_1_3
                                           ? TLS1_3_VERSION
                                           : TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    /* an idle connection keeps no record buffers */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_id_context(ctx,
                                   (const unsigned char *)SESSION_ID_CONTEXT,
                                   sizeof(SESSION_ID_CONTEXT) - 1);
    SSL_CTX_set_verify(ctx, verify_mode(cfg), NULL);
    if (load_files(ctx, cfg, why, size) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* The certificate's notAfter in Unix seconds (0 if unreadable). */
static uint64_t not_after(SSL_CTX *ctx)
{
    X509 *cert = SSL_CTX_get0_certificate(ctx);
    struct tm tm;

    if (cert == NULL || ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1)
        return 0;
    return (uint64_t)timegm(&tm);
}

int tls_server_load(const struct config *cfg, char *why, size_t size)
{
    SSL_CTX *ctx = build(cfg, why, size);

    if (ctx == NULL)
        return -1;
    SSL_CTX_free(current);
    current = ctx;
    stats.tls_cert_not_after = not_after(ctx);
    return 0;
}

int tls_server_check(const struct config *cfg, char *why, size_t size)
{
    SSL_CTX *ctx = build(cfg, why, size);

    SSL_CTX_free(ctx);
    return ctx != NULL ? 0 : -1;
}

SSL *tls_server_new_ssl(void)
{
    return current != NULL ? SSL_new(current) : NULL;
}

bool tls_server_peer_cn(SSL *ssl, char *cn, size_t size)
{
    X509 *cert = SSL_get0_peer_certificate(ssl);
    int len;

    if (cert == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
        return false;
    len = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName,
                                    cn, (int)size);
    /* a CN with a NUL inside would match a shorter tls_subject */
    return len > 0 && (size_t)len < size && strlen(cn) == (size_t)len;
}

void tls_server_free(void)
{
    SSL_CTX_free(current);
    current = NULL;
}
