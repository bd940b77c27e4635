/*
 * info.h - the INFO command's text: the figures of base/stats.h by
 * section, plus what the daemon is and how it is configured.
 *
 * An observer: it reads the stats every layer fills and the live
 * configuration, and calls into no layer.
 */
#ifndef RLOCKD_INFO_H
#define RLOCKD_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "buffer.h"

void info_init(const struct config *cfg, const char *config_path,
               uint64_t (*now_ms)(void));
/* Appends the sections named by section (NULL or "all": every one). */
int info_write(struct buffer *out, const char *section, size_t len);
/* Whether lock commands can be served now (every Redis connection ready);
 * if not, why, for HEALTH (what a load balancer or a readiness probe
 * asks; the Redis address is left out, as it may be asked before AUTH). */
bool info_ready(char *why, size_t size);
/* How long Redis has been unreachable, in ms; 0 while it is reachable,
 * and before it was ever reached. */
uint64_t info_outage_ms(void);

#endif
