/*
 * client_tls.h - the TLS layer of a client connection accepted on a TLS
 * listener.
 *
 * Owns the connection's SSL object and its two memory BIOs. libuv still
 * does every read (client.c) and write (client_output.c): bytes read go
 * into the read BIO and come out as plaintext in the connection's input
 * buffer; replies in its output buffer are sealed into TLS records there
 * before they are written. A plain connection has no TLS layer (struct
 * client.tls is NULL) and pays one branch per read and per write for it.
 */
#ifndef RLOCKD_CLIENT_TLS_H
#define RLOCKD_CLIENT_TLS_H

#include "base/acl.h"
#include "front/client.h"

/* What a read came to. */
enum client_tls_read {
    CLIENT_TLS_HANDSHAKING, /* nothing for the parser: send the output */
    CLIENT_TLS_DATA,        /* c->in grew (maybe by 0 bytes) */
    CLIENT_TLS_EOF,         /* the client sent close_notify */
    CLIENT_TLS_FAILED,      /* the handshake or a record failed: close */
};

/* Starts the server side of a handshake on c: 0, or -ENOMEM (or no
 * context loaded). */
int client_tls_start(struct client *c);
bool client_tls_established(const struct client *c);
/*
 * Takes len bytes read from the socket into c->in's spare room (just
 * past c->in.len): drives the handshake, then decrypts what it can into
 * c->in. When the handshake completes with a verified certificate whose
 * CN is a user's tls_subject in acl, the connection is that user. On
 * CLIENT_TLS_FAILED, *why says why.
 */
enum client_tls_read client_tls_read(struct client *c, size_t len,
                                     const struct acl *acl, const char **why);
/* Seals the plaintext in c->out into TLS records, in place, behind what
 * the handshake has to send: c->out then holds bytes for the socket. 0,
 * or -ENOMEM or -EPROTO (then close). */
int client_tls_seal(struct client *c);
void client_tls_free(struct client *c);

#endif
