/*
 * watchdog.h - keeps watchdog-mode locks alive while their owners live.
 *
 * Owns every renewal timer, as one schedule: holds wait in a list ordered
 * by due time under a single libuv timer. Renewals due together are sent
 * together, grouped by pool connection, up to renew_batch_size locks in
 * one multi-key script call, so 100,000 held locks cost Redis a few
 * dozen calls a second. A renewal that finds the lock gone marks its
 * hold lost.
 */
#ifndef RLOCKD_WATCHDOG_H
#define RLOCKD_WATCHDOG_H

#include <stddef.h>

#include <uv.h>

#include "base/config.h"

struct hold;

int watchdog_init(uv_loop_t *loop, const struct config *cfg);
void watchdog_close(void);
/* Schedules the hold's first renewal one third of its lease from now. */
void watchdog_start(struct hold *hold);
void watchdog_stop(struct hold *hold);
size_t watchdog_count(void);

#endif
