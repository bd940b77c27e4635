/*
 * event_ring.h - the recent events an operator asks about after the
 * fact: locks lost and deadlocks refused, the newest [server]
 * events_kept of them, in memory (GET /events, the status page).
 *
 * Owns the ring and each event's text. A push never fails its caller:
 * out of memory, the event is only not kept (the log has it). The
 * oldest event is dropped when the ring is full.
 */
#ifndef RLOCKD_EVENT_RING_H
#define RLOCKD_EVENT_RING_H

#include <stddef.h>
#include <stdint.h>

enum event_kind {
    EVENT_LOST,     /* a hold Redis no longer has */
    EVENT_DEADLOCK, /* a wait refused -DEADLOCK */
};

struct event {
    uint64_t seq;     /* 1, 2, ...: how many were pushed before, plus one */
    uint64_t time_ms; /* the wall clock's, ms since the epoch */
    enum event_kind kind;
    char *text;
};

/* Keeps the newest capacity events (0: none); those kept are kept. */
int event_ring_init(size_t capacity);
void event_ring_free(void);
/* Records an event (printf-style text), e.g.
 * event_ring_push(EVENT_DEADLOCK, "%s", cycle). */
void event_ring_push(enum event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* How many are kept; the i-th newest (0: the newest), or NULL. */
size_t event_ring_count(void);
const struct event *event_ring_newest(size_t i);
/* "lost", "deadlock". */
const char *event_kind_name(enum event_kind kind);

#endif
