#include "base/event_ring.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct {
    struct event *slots;
    size_t capacity;
    size_t count;
    size_t next; /* where the next push goes */
    uint64_t pushed;
} ring;

int event_ring_init(size_t capacity)
{
    struct event *slots = calloc(capacity ? capacity : 1, sizeof(*slots));

    if (slots == NULL)
        return -ENOMEM;
    event_ring_free();
    ring.slots = slots;
    ring.capacity = capacity;
    return 0;
}

void event_ring_free(void)
{
    for (size_t i = 0; i < ring.capacity; i++)
        free(ring.slots[i].text);
    free(ring.slots);
    ring.slots = NULL;
    ring.capacity = ring.count = ring.next = 0;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void event_ring_push(enum event_kind kind, const char *fmt, ...)
{
    struct event *e;
    char *text;
    va_list ap;

    ring.pushed++;
    if (ring.capacity == 0)
        return;
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    if (text == NULL)
        return;
    e = &ring.slots[ring.next];
    free(e->text);
    *e = (struct event){ring.pushed, wall_ms(), kind, text};
    ring.next = (ring.next + 1) % ring.capacity;
    if (ring.count < ring.capacity)
        ring.count++;
}

size_t event_ring_count(void)
{
    return ring.count;
}

const struct event *event_ring_newest(size_t i)
{
    if (i >= ring.count)
        return NULL;
    return &ring.slots[(ring.next + ring.capacity - 1 - i) % ring.capacity];
}

const char *event_kind_name(enum event_kind kind)
{
    return kind == EVENT_DEADLOCK ? "deadlock" : "lost";
}
