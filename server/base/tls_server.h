/*
 * tls_server.h - the TLS server context of the client listener: the
 * certificate, key and CA files of [server] tls_* loaded into one
 * OpenSSL SSL_CTX, reloaded by SIGHUP.
 *
 * Owns the current SSL_CTX. A reload builds a new one and swaps it in
 * only when every file loaded and the key matches the certificate; else
 * the old one stays, and the reason is returned. Connections keep the
 * context they were accepted with (OpenSSL counts its references), so a
 * swap never touches them. Never does I/O on a connection
 * (front/client_tls.c does).
 */
#ifndef RLOCKD_TLS_SERVER_H
#define RLOCKD_TLS_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "base/config.h"

/* Whether cfg names a certificate: the listener then serves TLS on
 * tls_listen and on passed sockets named "tls". */
bool tls_server_configured(const struct config *cfg);
/* Loads cfg's files into a new context and makes it current (the old one
 * is released). 0, or -1 with why (the current context is kept). */
int tls_server_load(const struct config *cfg, char *why, size_t size);
/* Loads cfg's files and discards them (rlockd -t): 0, or -1 with why. */
int tls_server_check(const struct config *cfg, char *why, size_t size);
/* A new server-side SSL object on the current context; NULL when none is
 * loaded or out of memory. */
SSL *tls_server_new_ssl(void);
/* The verified client certificate's CN into cn; false when the client
 * sent none, it was not verified, or it has no CN that fits. */
bool tls_server_peer_cn(SSL *ssl, char *cn, size_t size);
/* Releases the current context (shutdown). */
void tls_server_free(void);

#endif
