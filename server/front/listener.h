/*
 * listener.h - the listening sockets: TCP and an optional Unix socket, or
 * those passed by systemd's socket activation.
 *
 * Owns the listening handles and accepting. Accepted connections become
 * clients (client.c); max_clients is enforced here, by answering the
 * connection one over with an error and closing it.
 */
#ifndef RLOCKD_LISTENER_H
#define RLOCKD_LISTENER_H

#include <stdbool.h>

#include <uv.h>

#include "base/config.h"

int listener_start(uv_loop_t *loop, const struct config *cfg);
void listener_close(void);
/* Listening on sockets systemd passed, not on the configured ones. */
bool listener_activated(void);

#endif
