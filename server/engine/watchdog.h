/*
 * watchdog.h - keeps watchdog-mode holds alive while their owners live.
 *
 * Owns the renewal schedule: holds wait in one due-ordered list per
 * delay, under a single engine timer. Renewals due together are sent
 * together, up to renew_batch_size holds per call, grouped by kind and by the
 * backend's key group (the keys one script call may touch: a whole
 * Standalone Redis, one Cluster slot), so 100,000 held locks cost Redis
 * a few dozen calls a second. A renewal that finds the lock gone marks
 * its hold lost.
 *
 * It also keeps this daemon's waiters' places in a queue in Redis (the
 * fair lock's) alive while they wait, with the same batching.
 */
#ifndef RLOCKD_WATCHDOG_H
#define RLOCKD_WATCHDOG_H

#include <stdint.h>

#include "backend/backend.h"
#include "base/config.h"

struct hold;
struct lock;

void watchdog_init(const struct config *cfg, const struct backend *backend);
void watchdog_close(void);
/* Schedules the hold's first renewal one third of its lease from now. */
void watchdog_start(struct hold *hold);
/* Schedules the hold's renewal now, whenever it was due: a hold taken
 * over from an rlockd before this one, or found on a new master, whose
 * lock has an unknown part of its lease left. */
void watchdog_start_now(struct hold *hold);
void watchdog_stop(struct hold *hold);
/* Keys that could not be served may be now: the holds whose renewal
 * waited for theirs are renewed. */
void watchdog_backend_ready(void);

/*
 * A waiter's place in its lock's queue in Redis (the fair lock's), kept
 * watchdog_timeout_ms ahead (and wait_ms more for each place ahead of it
 * that is not this daemon's, kind_rlock.c's FAIR_QUEUE says why) while it
 * waits: renewed with every other place each third of that, so that the
 * places of a daemon that died run out as soon as its holds do. A renewal that finds the place
 * gone calls gone(owner) (the waiter asks again), unless it was dropped.
 * NULL: out of memory (the place then runs out unrenewed).
 */
struct watchdog_place;
struct watchdog_place *watchdog_place_add(struct lock *lock, const char *field,
                                          size_t field_len, int64_t wait_ms,
                                          void (*gone)(void *owner),
                                          void *owner);
void watchdog_place_drop(struct watchdog_place *place);

#endif
