/*
 * script_batch.h - the script calls of one loop turn, sent to Redis as
 * one script call per key group.
 *
 * Owns the calls asked for since the loop last flushed, kept per key
 * group (a pool connection; a Cluster slot) in the order they came; the
 * batch script, which holds every registered script as a function and
 * runs a list of calls in order, each one's reply one element of its
 * own; and the fan-out of that reply to each caller. It wraps the
 * topology's struct backend, so the engine sees the same seam and each
 * caller gets exactly the reply a call of its own would have had: the
 * batch runs atomically in Redis, in the order the calls were made, and
 * a call that raises an error (WRONGTYPE inside a script) fails alone.
 *
 * Why: Redis spends a good part of a small script's time on the call
 * itself (the command, the script's lookup, its argument tables), and a
 * turn of a busy loop carries many small scripts for the same
 * connection. It also makes an UNLOCK and the acquire of the waiter it
 * frees one script: an atomic hand-off in one round trip.
 *
 * A plain command for a group with calls waiting flushes the group
 * first, so every call for a key stays in the order it was made; a WAIT
 * (sync) waits with the group and is sent right behind its batch, so it
 * covers every call before it (and those batched after it, which does
 * no harm).
 * A group flushes early at batch_max_calls calls; 1 turns batching off.
 */
#ifndef RLOCKD_SCRIPT_BATCH_H
#define RLOCKD_SCRIPT_BATCH_H

#include <uv.h>

#include "backend/backend.h"
#include "base/config.h"

/* next: the topology's backend, which sends what this one batches;
 * sync_replicas: how many replicas next's sync would wait for (0: it
 * answers -ENOENT). */
int script_batch_init(uv_loop_t *loop, const struct config *cfg,
                      const struct backend *next,
                      unsigned (*sync_replicas)(const char *key, size_t len));
const struct backend *script_batch_backend(void);
/* Builds the batch script from the scripts added so far and adds it:
 * after the last add_script, before the first connection. 0 or -ENOMEM. */
int script_batch_start(void);
/* Calls kept and not sent yet (shutdown waits for these too). */
unsigned script_batch_pending(void);
/* Calls still kept are answered as lost (NULL). */
void script_batch_close(void);
void script_batch_free(void);

#endif
