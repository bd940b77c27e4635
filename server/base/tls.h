/*
 * tls.h - OpenSSL contexts and what the daemon reports about them.
 *
 * tls_client_*: rlockd as a TLS client (its links to Redis): the context
 * built from [redis]'s tls_* keys, the name a connection checks, and the
 * reason a handshake failed, in words and as a counter.
 *
 * tls_cert_*: the certificate files in use, so that INFO and /metrics
 * show how long each has before it expires.
 */
#ifndef RLOCKD_TLS_H
#define RLOCKD_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "base/config.h"
#include "buffer.h"

/* The context [redis] asks for, its files loaded and checked; NULL with
 * why filled when one cannot be read or does not fit. */
SSL_CTX *tls_client_context_new(const struct config *cfg, char *why,
                                size_t size);
/* `rlockd -t`: builds the context and drops it; 0 or -1 with why. */
int tls_client_check(const struct config *cfg, char *why, size_t size);
/* A connection of ctx to the server named name (an IP literal or a host
 * name; [redis] tls_server_name overrides it): sends it as SNI (a host
 * name only) and makes verification check it. NULL when out of memory. */
SSL *tls_client_new(SSL_CTX *ctx, const struct config *cfg, const char *name);
/* Why a failed handshake or read of ssl failed, in words; counts it in
 * the redis_tls_failures_* figure of its kind. */
const char *tls_client_failure(SSL *ssl, char *buf, size_t size);

/* Remembers a certificate file's expiry for INFO (section, as
 * stats_append_section) and /metrics: which names it ("redis_cert"). */
int tls_cert_watch(int section, const char *which, const char *path, char *why,
                   size_t size);
/* "tls_cert_expiry_seconds_<which>:<s>\r\n" for each of section. */
int tls_cert_append_info(struct buffer *out, int section);
/* rlockd_tls_cert_expiry_seconds{which="...",file="..."} for each. */
int tls_cert_append_prometheus(struct buffer *out);
void tls_cert_forget(void);

#endif
