/*
 * supervisor.h - the watch over a held lock, and the thread that acts on
 * time. A lock belongs to the thread that took it, so rlock's main thread
 * makes every librlock call (takes the lock, confirms it now and then,
 * releases it), and those calls can block for seconds when rlockd or
 * Redis is slow. Everything that must happen on time - passing signals
 * on, reaping COMMAND, noticing that the lock has outlived its last
 * confirmation, SIGTERM and SIGKILL, the end of `rlock hold` - belongs to
 * the supervisor thread, which also is the only one to signal or reap
 * COMMAND (no pid reuse race). struct watch is all the two share.
 */
#ifndef RLOCK_CLI_SUPERVISOR_H
#define RLOCK_CLI_SUPERVISOR_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "child.h"

/* The fields above mu are set before the supervisor starts and never
 * change (child: only the supervisor uses it until it is joined); mu
 * guards the rest. */
struct watch {
    const char *name; /* what is held, for messages: "lock 'NAME'" */
    long long lease_ms;
    int kill_grace_ms;
    struct child *child; /* NULL for rlock hold */
    int input_fd;        /* rlock hold: its end ends the hold; else -1 */
    int signal_fd;
    int wake_fd; /* eventfd: wakes the supervisor when the fields change */

    pthread_mutex_t mu;
    pthread_cond_t ended_cond;
    bool ended;           /* COMMAND reaped, or the hold over */
    int wait_status;      /* COMMAND's, as waitpid() gave it; 0 for hold */
    int64_t confirmed_at; /* when rlockd last confirmed the lock */
    int64_t expires_at;   /* the latest the lock can last after that */
    int last_error;       /* of librlock since then; RLOCK_OK if none */
    bool lost;
    /* rlock was stopped (and its deadlines may have passed meanwhile):
     * the main thread checks at once, and until it has an answer to a
     * question asked since recheck_from (one asked before the stop does
     * not count) the supervisor neither judges the deadline nor
     * continues COMMAND; none by recheck_until is a loss. */
    bool recheck;
    int64_t recheck_from;
    int64_t recheck_until;
};

/* CLOCK_MONOTONIC in ms: the clock of every deadline. */
int64_t watch_now_ms(void);

/* Sets w up for a lock confirmed at `asked` with pttl ms to live (-1: no
 * TTL) and blocks the signals the supervisor will read (and SIGTTOU) in
 * the calling thread, whose mask before goes to *old_mask. 0, or an exit
 * status. */
int watch_open(struct watch *w, int64_t asked, long long pttl,
               sigset_t *old_mask);
/* Starts the supervisor thread once w->child (if any) runs; if it
 * cannot, kills and reaps COMMAND. 0, or an exit status. */
int watch_start(struct watch *w, pthread_t *thread);
void watch_close(struct watch *w);

/* rlockd confirmed the lock at `asked`, with pttl ms to live. */
void watch_confirmed(struct watch *w, int64_t asked, long long pttl);
/* A check asked at `asked` failed with err, a librlock error. */
void watch_failed(struct watch *w, int err, int64_t asked);
/* rlockd says the lock is no longer held. */
void watch_lost(struct watch *w, const char *reason);
bool watch_is_lost(struct watch *w);
/* Waits up to timeout_ms (-1: no limit) for the end, or for a recheck
 * asked; true once ended. */
bool watch_wait_ended(struct watch *w, int64_t timeout_ms);

#endif
