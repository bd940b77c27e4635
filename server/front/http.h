/*
 * http.h - the operators' HTTP endpoint: GET /metrics, /healthz, /readyz.
 *
 * Owns [server] http_listen's socket and its connections, served on the
 * daemon's own loop. An observer, like INFO: it reads the figures every
 * layer fills (base/stats.h) and the readiness INFO reports, and calls
 * into no layer.
 */
#ifndef RLOCKD_HTTP_H
#define RLOCKD_HTTP_H

#include <stddef.h>

#include <uv.h>

#include "base/config.h"

/* Whether cfg's http_listen can be served (a numeric address): 0, or -1
 * with why. An empty one (off) is fine. */
int http_check(const struct config *cfg, char *why, size_t size);
/* Starts serving http_listen, if set: 0, or a negative errno (logged). */
int http_start(uv_loop_t *loop, const struct config *cfg);
/* Closes the socket and every connection. */
void http_close(void);

#endif
