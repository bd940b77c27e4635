/*
 * multilock.h - MLOCK and MUNLOCK: several plain RLocks taken as one, as
 * Redisson's RedissonMultiLock takes them
 * (redisson/src/main/java/org/redisson/RedissonMultiLock.java), built
 * only from the lock engine's public calls.
 *
 * Owns struct multilock: one MLOCK or MUNLOCK in progress. The keys are
 * sorted (bytewise) and duplicates dropped, so every MLOCK of this and of
 * every other rlockd takes its locks in one order, and two MLOCKs can
 * never wait for each other in a cycle. MLOCK takes them one at a time,
 * each with what is left of WAIT; when one is not granted, the ones
 * already taken are released before the answer, so that nothing is held
 * after :0 or an error. MUNLOCK releases every one, as RedissonMultiLock's
 * unlock() does, and answers the first failure in key order.
 *
 * It never writes a reply: like the engine, it hands one struct
 * lock_result to its caller's done function. It never starts an engine
 * call inside an engine's done callback either: each next step runs from
 * an engine timer armed for now.
 */
#ifndef RLOCKD_MULTILOCK_H
#define RLOCKD_MULTILOCK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/lock_engine.h"

struct multilock;
struct session;

enum multilock_op { MULTILOCK_ACQUIRE, MULTILOCK_RELEASE };

struct multilock_request {
    enum multilock_op op;
    uint64_t thread_id;
    int64_t wait_ms;    /* acquire: < 0 waits for ever, 0 does not wait */
    int64_t lease_ms;   /* acquire: > 0, or < 0 for watchdog mode */
    const char *prefix; /* each key is prefix + name */
    size_t count;
    char *const *names;
    const size_t *name_lens;
};

/*
 * Starts an MLOCK (MULTILOCK_ACQUIRE) or MUNLOCK for session. done is
 * called once, later: RESULT_GRANTED when every lock is held (MUNLOCK:
 * every one released), RESULT_NOT_GRANTED when WAIT ran out, or the
 * first RESULT_ERROR; only out of memory answers before this returns
 * (then it returns NULL).
 */
struct multilock *multilock_start(struct session *session,
                                  const struct multilock_request *req,
                                  lock_done_fn *done, void *ctx);
/* The caller went: done is forgotten, and whatever this MLOCK took is
 * released; the session is kept (counted as one more connection) until
 * that is done. */
void multilock_abandon(struct multilock *m);
/* Ends the MLOCK with result (an error: a reload refused one of its
 * names), once what it took is released: done is called then. */
void multilock_refuse(struct multilock *m, const struct lock_result *result);
/* As lock_engine_stop_waiting, for the acquire in flight and every later
 * one: an acquire that would wait ends the MLOCK with -ERR why. */
void multilock_stop_waiting(struct multilock *m, const char *why);

#endif
