/*
 * tls.c - OpenSSL contexts for rlockd's TLS connections, and the expiry
 * of the certificate files they use.
 *
 * Only the context and the words for a failure live here; the bytes of a
 * connection go through memory BIOs owned by whoever holds the socket
 * (backend/redis_link_tls.c), so nothing here touches a file descriptor.
 */
#include "base/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "base/stats.h"

#define CERTS_MAX 8

static struct tls_cert {
    int section;
    char which[32];
    char path[sizeof(((struct config *)0)->redis_tls_cert_file)];
    time_t not_after;
} certs[CERTS_MAX];
static unsigned certs_count;

/* OpenSSL's last queued error, or fallback when it queued none. */
static const char *openssl_why(const char *fallback, char *buf, size_t size)
{
    unsigned long e = ERR_get_error();

    ERR_clear_error();
    if (e == 0)
        return fallback;
    ERR_error_string_n(e, buf, size);
    return buf;
}

SSL_CTX *tls_client_context_new(const struct config *cfg, char *why,
                                size_t size)
{
    const char *ca_file =
        cfg->redis_tls_ca_file[0] ? cfg->redis_tls_ca_file : NULL;
    const char *ca_dir =
        cfg->redis_tls_ca_dir[0] ? cfg->redis_tls_ca_dir : NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char err[256];

    if (ctx == NULL) {
        snprintf(why, size, "TLS: %s",
                 openssl_why("out of memory", err, sizeof(err)));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(
        ctx, cfg->redis_tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (ca_file != NULL || ca_dir != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, ca_file, ca_dir) != 1) {
            snprintf(why, size, "[redis] tls_ca_file/tls_ca_dir %s: %s",
                     ca_file ? ca_file : ca_dir,
                     openssl_why("cannot load", err, sizeof(err)));
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(why, size, "the system's trust store: %s",
                 openssl_why("cannot load", err, sizeof(err)));
        goto fail;
    }
    if ((cfg->redis_tls_cert_file[0] == '\0') !=
        (cfg->redis_tls_key_file[0] == '\0')) {
        snprintf(why, size,
                 "[redis] tls_cert_file and tls_key_file go together");
        goto fail;
    }
    if (cfg->redis_tls_cert_file[0] != '\0' &&
        (SSL_CTX_use_certificate_chain_file(ctx, cfg->redis_tls_cert_file) !=
             1 ||
         SSL_CTX_use_PrivateKey_file(ctx, cfg->redis_tls_key_file,
                                     SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1)) {
        snprintf(why, size, "[redis] tls_cert_file %s, tls_key_file %s: %s",
                 cfg->redis_tls_cert_file, cfg->redis_tls_key_file,
                 openssl_why("cannot load", err, sizeof(err)));
        goto fail;
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

int tls_client_check(const struct config *cfg, char *why, size_t size)
{
    SSL_CTX *ctx;

    if (!cfg->redis_tls)
        return 0;
    ctx = tls_client_context_new(cfg, why, size);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(ctx);
    return 0;
}

SSL *tls_client_new(SSL_CTX *ctx, const struct config *cfg, const char *name)
{
    SSL *ssl = SSL_new(ctx);
    X509_VERIFY_PARAM *param;
    unsigned char ip[16];
    bool literal;

    if (ssl == NULL)
        return NULL;
    if (cfg->redis_tls_server_name[0] != '\0')
        name = cfg->redis_tls_server_name;
    literal =
        inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    param = SSL_get0_param(ssl);
    /* RFC 6066: SNI carries host names, never addresses. */
    if ((!literal && SSL_set_tlsext_host_name(ssl, name) != 1) ||
        (literal ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                 : X509_VERIFY_PARAM_set1_host(param, name, 0)) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

/* Which redis_tls_failures_* figure a verification result counts in. */
static void count_failure(long result)
{
    switch (result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        stats.redis_tls_failures_unknown_ca++;
        break;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        stats.redis_tls_failures_expired++;
        break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        stats.redis_tls_failures_name_mismatch++;
        break;
    default:
        stats.redis_tls_failures_other++;
    }
}

const char *tls_client_failure(SSL *ssl, char *buf, size_t size)
{
    long result = SSL_get_verify_result(ssl);

    if (result != X509_V_OK) {
        ERR_clear_error();
        count_failure(result);
        return X509_verify_cert_error_string(result);
    }
    stats.redis_tls_failures_other++;
    return openssl_why("connection closed during the handshake", buf, size);
}

/* ---- certificate expiry --------------------------------------------------- */

int tls_cert_watch(int section, const char *which, const char *path, char *why,
                   size_t size)
{
    FILE *f = fopen(path, "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    struct tls_cert *c = &certs[certs_count];
    struct tm tm;
    int err = 0;

    if (f != NULL)
        fclose(f);
    if (x == NULL || ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1) {
        snprintf(why, size, "%s: %s", path,
                 f ? "no certificate in it" : strerror(errno));
        err = -1;
    } else if (certs_count < CERTS_MAX) {
        c->section = section;
        snprintf(c->which, sizeof(c->which), "%s", which);
        snprintf(c->path, sizeof(c->path), "%s", path);
        c->not_after = timegm(&tm);
        certs_count++;
    }
    X509_free(x);
    ERR_clear_error();
    return err;
}

int tls_cert_append_info(struct buffer *out, int section)
{
    time_t now = time(NULL);
    char line[128];
    int err = 0;

    for (unsigned i = 0; i < certs_count; i++) {
        int n;

        if (certs[i].section != section)
            continue;
        n = snprintf(line, sizeof(line),
                     "tls_cert_expiry_seconds_%s:%" PRId64 "\r\n",
                     certs[i].which, (int64_t)(certs[i].not_after - now));
        err |= buffer_append(out, line, (size_t)n);
    }
    return err ? -ENOMEM : 0;
}

int tls_cert_append_prometheus(struct buffer *out)
{
    static const char head[] =
        "# HELP rlockd_tls_cert_expiry_seconds seconds until the "
        "certificate in the file expires (negative: expired)\n"
        "# TYPE rlockd_tls_cert_expiry_seconds gauge\n";
    time_t now = time(NULL);
    char line[1200];
    int err;

    if (certs_count == 0)
        return 0;
    err = buffer_append(out, head, sizeof(head) - 1);
    for (unsigned i = 0; i < certs_count; i++) {
        int n = snprintf(line, sizeof(line),
                         "rlockd_tls_cert_expiry_seconds{which=\"%s\","
                         "file=\"%s\"} %" PRId64 "\n",
                         certs[i].which, certs[i].path,
                         (int64_t)(certs[i].not_after - now));

        err |= buffer_append(out, line, (size_t)n);
    }
    return err ? -ENOMEM : 0;
}

void tls_cert_forget(void)
{
    certs_count = 0;
}
