/*
 * timer.c - a binary min-heap of deadlines over the injected clock.
 *
 * The clock is told only when the earliest deadline changes, so arming
 * a waiter behind an earlier one costs no system call.
 */
#include "engine/timer.h"

#include <errno.h>
#include <stdlib.h>

static struct {
    const struct engine_clock *clock;
    struct timer **heap;
    size_t count, cap;
    uint64_t armed_ms; /* what the clock was last told */
    bool running;      /* in timers_run_due: it tells the clock at the end */
} timers;

void timers_init(const struct engine_clock *clock)
{
    timers.clock = clock;
    timers.armed_ms = TIMER_NEVER;
}

void timers_free(void)
{
    free(timers.heap);
    timers.heap = NULL;
    timers.count = timers.cap = 0;
}

uint64_t timers_now(void)
{
    return timers.clock->now_ms(timers.clock->ctx);
}

uint64_t timers_now_us(void)
{
    return timers.clock->now_us(timers.clock->ctx);
}

void timer_init(struct timer *t, void (*fire)(struct timer *timer))
{
    t->due_ms = TIMER_NEVER;
    t->heap_slot = 0;
    t->fire = fire;
}

bool timer_armed(const struct timer *t)
{
    return t->heap_slot != 0;
}

static void place(struct timer *t, size_t i)
{
    timers.heap[i] = t;
    t->heap_slot = i + 1;
}

static void sift_up(size_t i)
{
    struct timer *t = timers.heap[i];

    while (i > 0 && timers.heap[(i - 1) / 2]->due_ms > t->due_ms) {
        place(timers.heap[(i - 1) / 2], i);
        i = (i - 1) / 2;
    }
    place(t, i);
}

static void sift_down(size_t i)
{
    struct timer *t = timers.heap[i];

    for (;;) {
        size_t child = 2 * i + 1;

        if (child >= timers.count)
            break;
        if (child + 1 < timers.count &&
            timers.heap[child + 1]->due_ms < timers.heap[child]->due_ms)
            child++;
        if (timers.heap[child]->due_ms >= t->due_ms)
            break;
        place(timers.heap[child], i);
        i = child;
    }
    place(t, i);
}

/* Tells the clock when the earliest deadline changed. */
static void rearm(void)
{
    uint64_t first = timers.count ? timers.heap[0]->due_ms : TIMER_NEVER;

    if (timers.running || first == timers.armed_ms)
        return;
    timers.armed_ms = first;
    timers.clock->arm(timers.clock->ctx, first);
}

static void heap_remove(struct timer *t)
{
    size_t i = t->heap_slot - 1;
    struct timer *last = timers.heap[--timers.count];

    t->heap_slot = 0;
    if (last == t)
        return;
    place(last, i);
    if (i > 0 && timers.heap[(i - 1) / 2]->due_ms > last->due_ms)
        sift_up(i);
    else
        sift_down(i);
}

int timer_start(struct timer *t, uint64_t due_ms)
{
    if (timer_armed(t))
        heap_remove(t);
    if (timers.count == timers.cap) {
        size_t cap = timers.cap ? 2 * timers.cap : 64;
        struct timer **heap = realloc(timers.heap, cap * sizeof(*heap));

        if (heap == NULL) {
            rearm();
            return -ENOMEM;
        }
        timers.heap = heap;
        timers.cap = cap;
    }
    t->due_ms = due_ms;
    timers.heap[timers.count] = t;
    sift_up(timers.count++);
    rearm();
    return 0;
}

void timer_stop(struct timer *t)
{
    if (!timer_armed(t))
        return;
    heap_remove(t);
    rearm();
}

void timers_run_due(void)
{
    uint64_t now = timers_now();

    /* The clock's timer has fired: whatever it was armed for is spent. */
    timers.armed_ms = TIMER_NEVER;
    timers.running = true;
    while (timers.count > 0 && timers.heap[0]->due_ms <= now) {
        struct timer *t = timers.heap[0];

        heap_remove(t);
        t->fire(t);
    }
    timers.running = false;
    rearm();
}
