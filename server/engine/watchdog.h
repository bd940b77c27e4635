/*
 * watchdog.h - keeps watchdog-mode holds alive while their owners live.
 *
 * Owns the renewal schedule: holds wait in one list ordered by due time
 * under a single engine timer. Renewals due together are sent together,
 * up to renew_batch_size holds per call, grouped by kind and by the
 * backend's key group (the keys one script call may touch: a whole
 * Standalone Redis, one Cluster slot), so 100,000 held locks cost Redis
 * a few dozen calls a second. A renewal that finds the lock gone marks
 * its hold lost.
 */
#ifndef RLOCKD_WATCHDOG_H
#define RLOCKD_WATCHDOG_H

#include "backend/backend.h"
#include "base/config.h"

struct hold;

void watchdog_init(const struct config *cfg, const struct backend *backend);
void watchdog_close(void);
/* Schedules the hold's first renewal one third of its lease from now. */
void watchdog_start(struct hold *hold);
/* Schedules the hold's renewal now, whenever it was due: a hold taken
 * over from an rlockd before this one, or found on a new master, whose
 * lock has an unknown part of its lease left. */
void watchdog_start_now(struct hold *hold);
void watchdog_stop(struct hold *hold);

#endif
