/*
 * fence_memory.h - the highest fencing token this daemon handed out, per
 * lock name, so that it never hands out a lower or equal one, even after
 * Redis lost its counter (a restart without persistence, a failover to a
 * replica that missed the last INCRs, a FLUSHALL).
 *
 * Owns a bounded map, name -> token, in least-recently-granted order: at
 * most [lock] fence_memory_names names (a name granted longer ago than
 * that many others is forgotten). It is memory only: a restarted daemon
 * remembers nothing. It never talks to Redis; the fenced acquire script
 * does, with the floor this gives it.
 */
#ifndef RLOCKD_FENCE_MEMORY_H
#define RLOCKD_FENCE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

void fence_memory_init(void);
void fence_memory_free(void);
/* The highest token handed out for name, 0 if none is remembered. */
int64_t fence_memory_floor(const char *name, size_t len);
/* Remembers token as handed out for name (if higher than the one
 * remembered), as its most recent grant; forgets the least recently
 * granted names beyond max_names. */
void fence_memory_note(const char *name, size_t len, int64_t token,
                       size_t max_names);
/* Names remembered. */
size_t fence_memory_size(void);

#endif
