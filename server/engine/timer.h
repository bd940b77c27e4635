/*
 * timer.h - the lock engine's clock and its timers.
 *
 * Owns every deadline the engine waits for (a waiter's WAIT, the TTL of
 * a lock a waiter looks at again, the watchdog's next renewal) in one
 * min-heap, and reads time only through an injected struct engine_clock.
 * The daemon's clock is the libuv loop with a single uv_timer armed at
 * the earliest deadline; the unit tests' clock is a number they advance.
 * So the engine never includes libuv, and a test can run an hour of
 * leases in a millisecond.
 */
#ifndef RLOCKD_TIMER_H
#define RLOCKD_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIMER_NEVER UINT64_MAX

struct engine_clock {
    uint64_t (*now_ms)(void *ctx);
    /* The same clock in microseconds, for latencies: finer than the
     * loop's millisecond, which deadlines need no more than. */
    uint64_t (*now_us)(void *ctx);
    /* The earliest deadline is now due_ms (TIMER_NEVER: none): call
     * timers_run_due() at or after it. */
    void (*arm)(void *ctx, uint64_t due_ms);
    void *ctx;
};

struct timer {
    uint64_t due_ms;
    size_t heap_slot; /* 0: not armed; else index + 1 */
    void (*fire)(struct timer *timer);
};

void timers_init(const struct engine_clock *clock);
void timers_free(void);
uint64_t timers_now(void);
uint64_t timers_now_us(void);

void timer_init(struct timer *t, void (*fire)(struct timer *timer));
/* Arms (or re-arms) t for due_ms. 0 or -ENOMEM. */
int timer_start(struct timer *t, uint64_t due_ms);
void timer_stop(struct timer *t);
bool timer_armed(const struct timer *t);

/* Fires every timer due by now, earliest first. */
void timers_run_due(void);

#endif
