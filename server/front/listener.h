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

#include <uv.h>

#include "base/config.h"

int listener_start(uv_loop_t *loop, const struct config *cfg);
void listener_close(void);

#endif
