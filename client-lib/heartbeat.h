/*
 * heartbeat.h - librlock's heartbeat: one thread per client that keeps
 * its session alive, and only while the process runs.
 *
 * Owns a connection of its own in the client's session (the callers'
 * connections are their threads' alone) and the thread that sends
 * `CLIENT HEARTBEAT <ms>` on it every third of ms: rlockd ends the
 * session, releasing its locks, when a beat is missed, so a stopped or
 * wholly hung process loses its locks after ms. When rlockd goes away the
 * thread reconnects, which resumes the session on a restarted rlockd
 * within the lease, before any of the caller's threads needs it.
 */
#ifndef RLOCK_HEARTBEAT_H
#define RLOCK_HEARTBEAT_H

#include <pthread.h>
#include <stdbool.h>

#include "connection.h"

/* What the thread asks of the client when it reconnects: whether it
 * holds locks (then it resumes the session), and that there was no
 * session to resume (every lock lost). */
struct heartbeat_client {
    bool (*holds_any)(void *ctx);
    void (*session_lost)(void *ctx);
    void *ctx;
};

struct heartbeat {
    const struct rlock_target *target;
    struct heartbeat_client client;
    struct rlock_conn conn; /* the thread's, once heartbeat_start beat */
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t wake; /* heartbeat_stop */
    bool stopping;
    bool running;
};

/* When target->heartbeat_ms > 0, beats once and starts the thread:
 * RLOCK_OK, RLOCK_EINVAL when rlockd refuses the interval (outside its
 * min_heartbeat_ms..max_heartbeat_ms), or another connection error.
 * target must outlive heartbeat_stop. */
int heartbeat_start(struct heartbeat *hb, const struct rlock_target *target,
                    const struct heartbeat_client *client);
/* Stops and joins the thread, and closes its connection. */
void heartbeat_stop(struct heartbeat *hb);

#endif
