/*
 * peer.h - who is at the other end of a client connection, and how many
 * connections each such peer has open.
 *
 * Owns the peer table. A TCP peer is its remote address (without the
 * port: one host's many connections are one peer); a Unix-socket peer is
 * the connecting process's uid, read with SO_PEERCRED, since every local
 * connection has the same address. The table serves
 * [server] max_clients_per_peer, so that one local user or one host
 * cannot take every connection slot, and gives log lines a peer to name.
 */
#ifndef RLOCKD_PEER_H
#define RLOCKD_PEER_H

#include <uv.h>

/* "tcp 127.0.0.1", "tcp ::1", "unix uid 1000": the longest fits. */
#define PEER_NAME_MAX 64

struct peer {
    char name[PEER_NAME_MAX];
    size_t name_len;
    unsigned connections;
};

void peer_table_init(void);
void peer_table_free(void);
/* Counts one more connection of stream's peer: 0 and *out, or -errno
 * (the peer cannot be read, or out of memory). */
int peer_attach(uv_stream_t *stream, struct peer **out);
/* Counts one connection less; forgets the peer after its last. */
void peer_detach(struct peer *p);

#endif
