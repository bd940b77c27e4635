/*
 * fake_clock.c - time as a variable, and a record of the last arm.
 */
#include "fake_clock.h"

struct fake_clock fake_clock;

static uint64_t fake_now_ms(void *ctx)
{
    (void)ctx;
    return fake_clock.now_ms;
}

static uint64_t fake_now_us(void *ctx)
{
    (void)ctx;
    return fake_clock.now_ms * 1000;
}

static void fake_arm(void *ctx, uint64_t due_ms)
{
    (void)ctx;
    fake_clock.due_ms = due_ms;
    fake_clock.arms++;
}

const struct engine_clock fake_engine_clock = {fake_now_ms, fake_now_us,
                                               fake_arm, NULL};

void fake_clock_init(uint64_t now_ms)
{
    fake_clock.now_ms = now_ms;
    fake_clock.due_ms = TIMER_NEVER;
    fake_clock.arms = 0;
}
