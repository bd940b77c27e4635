/*
 * listener.h - the listening sockets: TCP and an optional Unix socket, or
 * those passed by systemd's socket activation.
 *
 * Owns the listening handles and accepting. Accepted connections become
 * clients (client.c, which enforces max_clients). Under socket
 * activation the configured addresses are not used, and INFO says so
 * (socket_activated).
 */
#ifndef RLOCKD_LISTENER_H
#define RLOCKD_LISTENER_H

#include <stddef.h>
#include <sys/socket.h>

#include <uv.h>

#include "base/config.h"

/* A numeric "host:port" (IPv6 as [::1]:port) as a socket address: 0, or
 * UV_EINVAL. The listening addresses (the HTTP endpoint's too) take no
 * host names: what they resolve to could change under a running daemon. */
int listener_address(const char *addr, struct sockaddr_storage *sa);
/* What listener_start would refuse in cfg's addresses when no socket is
 * passed to it, checked without making one (rlockd -t): 0, or -1 with
 * why. */
int listener_check(const struct config *cfg, char *why, size_t size);
int listener_start(uv_loop_t *loop, const struct config *cfg);
void listener_close(void);

#endif
