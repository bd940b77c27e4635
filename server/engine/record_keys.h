/*
 * record_keys.h - rlockd's own records as Redis keys: which lock keys
 * would reach one, and what a reader does with a record rlockd did not
 * write.
 *
 * rlockd keeps records in the key space of the locks: a session's
 * (session_store.h) and a semaphore's holders (the kind rows' keys that
 * name a record, kind_semaphore.c). A lock name whose key, or one of its
 * kind's keys, were one of them would let a client write rlockd's records
 * with lock commands, so every name-taking command asks
 * record_keys_reserved first. Never talks to Redis.
 */
#ifndef RLOCKD_RECORD_KEYS_H
#define RLOCKD_RECORD_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/lock_kind.h"

/*
 * Whether the lock key key (name_prefix, then the name) of a request of
 * kind would reach one of rlockd's records: the key itself is, or could
 * be, one, or one of kind's keys of it is another name's. If so, why (of
 * why_size bytes) says which, quoting the key (not yet made printable).
 */
bool record_keys_reserved(const char *prefix, const struct lock_kind *kind,
                          const char *key, size_t len, char *why,
                          size_t why_size);

/* A record a reader refuses because rlockd did not write it (what: its
 * key and what is wrong): counted in INFO, and logged as "not an rlockd
 * record" once, not again while the same record is refused in a row. */
void record_keys_foreign(const char *what);

#endif
