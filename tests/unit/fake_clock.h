/*
 * fake_clock.h - the lock engine's clock in the unit tests: a number the
 * test moves.
 *
 * Owns the time the engine reads and the one deadline it last asked to
 * be woken at, as the daemon's one-shot loop timer would keep it. It
 * never runs the engine's timers itself: the test advances the time and
 * calls lock_engine_run_timers(), as the loop does when its timer fires.
 */
#ifndef RLOCKD_TEST_FAKE_CLOCK_H
#define RLOCKD_TEST_FAKE_CLOCK_H

#include <stdint.h>

#include "engine/timer.h"

struct fake_clock {
    uint64_t now_ms;
    uint64_t due_ms; /* the last arm's due time; TIMER_NEVER: none */
    unsigned arms;   /* how many times arm was called */
};

/* The fake's state, which tests read and set directly. */
extern struct fake_clock fake_clock;
/* The clock to pass to lock_engine_init. */
extern const struct engine_clock fake_engine_clock;

void fake_clock_init(uint64_t now_ms);

#endif
