/*
 * in_thread.h - runs one librlock call on a thread of its own, so that a
 * test can be several owners (thread-ids) of one client, or keep a call
 * blocked while it does something else.
 *
 * The thread never asserts (a failed check in another thread cannot end a
 * Check test cleanly): it stores the result and the time the call took,
 * and the test checks them after thread_call_join().
 */
#ifndef RLOCK_TEST_IN_THREAD_H
#define RLOCK_TEST_IN_THREAD_H

#include <pthread.h>

#include "rlock.h"

/* Each op is the _kind call of the thread_call's kind (RLOCK_LOCK, 0,
 * when not set: the call without _kind). */
enum thread_op {
    OP_LOCK,      /* rlock_lock(name, lease_ms) */
    OP_TRYLOCK,   /* rlock_trylock(name, wait_ms, lease_ms) */
    OP_UNLOCK,    /* rlock_unlock(name) */
    OP_IS_LOCKED, /* rlock_is_locked(name) */
    OP_IS_HELD,   /* rlock_is_held(name) */
    OP_ACQUIRE,   /* rlock_try_acquire(name, permits, wait_ms) */
    OP_AWAIT,     /* rlock_await(name, wait_ms) */
};

struct thread_call {
    rlock_client *client;
    enum thread_op op;
    const char *name;
    long long wait_ms;
    long long lease_ms;
    enum rlock_kind kind;
    long long permits; /* OP_ACQUIRE */
    /* set by the thread */
    long long result;
    long long token; /* OP_LOCK, OP_TRYLOCK: the fencing token, or 0 */
    long long elapsed_ms;
    pthread_t thread;
};

void thread_call_start(struct thread_call *call);
/* Waits for the call's thread; its result. */
long long thread_call_join(struct thread_call *call);
/* Starts and joins one call: its result. */
long long in_new_thread(rlock_client *c, enum thread_op op, const char *name,
                        long long wait_ms, long long lease_ms);

#endif
