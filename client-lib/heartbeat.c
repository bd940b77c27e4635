/*
 * heartbeat.c - the heartbeat thread: beat, sleep a third, beat again.
 */
#include "heartbeat.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>

/* A lost connection is dialled again after REDIAL_MIN_MS, then twice as
 * long after each failure up to REDIAL_MAX_MS: an rlockd being restarted
 * is found within a second of its return, and a long outage costs a dial
 * a second. */
#define REDIAL_MIN_MS 100
#define REDIAL_MAX_MS 1000

/* Sleeps until ms from now or heartbeat_stop; false when stopping. */
static bool nap(struct heartbeat *hb, long long ms)
{
    struct timespec until;
    bool go_on;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&hb->mutex);
    while (!hb->stopping &&
           pthread_cond_timedwait(&hb->wake, &hb->mutex, &until) == 0)
        ;
    go_on = !hb->stopping;
    pthread_mutex_unlock(&hb->mutex);
    return go_on;
}

/* Opens the connection, resuming the session when the client holds
 * locks; when rlockd has none to give back, the client hears it, and a
 * new session starts. */
static int reopen(struct heartbeat *hb, struct rlock_conn *conn)
{
    int err =
        rlock_conn_open(conn, hb->target, hb->client.holds_any(hb->client.ctx));

    if (err != RLOCK_ELOCKLOST)
        return err;
    hb->client.session_lost(hb->client.ctx);
    return rlock_conn_open(conn, hb->target, false);
}

/* One beat, on a connection opened first when it has none; the beat is
 * the declaration itself, which also restarts rlockd's clock. A broken
 * connection is closed, to be dialled again; a refusal (-ERR: a reload
 * of rlockd narrowed its range) leaves it open, to be asked again. */
static int beat(struct heartbeat *hb)
{
    struct rlock_conn *conn = &hb->conn;
    char ms[24];
    int err;

    if (conn->ctx == NULL && (err = reopen(hb, conn)) != RLOCK_OK)
        return err;
    snprintf(ms, sizeof(ms), "%d", hb->target->heartbeat_ms);
    err = rlock_conn_exchange_ok(conn, hb->target, 3,
                                 (const char *[]){"CLIENT", "HEARTBEAT", ms});
    if (err != RLOCK_OK && rlock_conn_broken(conn))
        rlock_conn_close(conn);
    return err;
}

/* heartbeat_start beat first; an open connection beats every third of
 * the interval, a lost one is dialled again with backoff. */
static void *heartbeat_main(void *arg)
{
    struct heartbeat *hb = arg;
    long long redial_ms = REDIAL_MIN_MS;

    while (nap(hb, hb->conn.ctx != NULL ? hb->target->heartbeat_ms / 3
                                        : redial_ms)) {
        beat(hb);
        if (hb->conn.ctx != NULL)
            redial_ms = REDIAL_MIN_MS;
        else if ((redial_ms *= 2) > REDIAL_MAX_MS)
            redial_ms = REDIAL_MAX_MS;
    }
    rlock_conn_close(&hb->conn);
    return NULL;
}

int heartbeat_start(struct heartbeat *hb, const struct rlock_target *target,
                    const struct heartbeat_client *client)
{
    pthread_condattr_t attr;
    sigset_t all, old;
    int err;

    hb->target = target;
    hb->client = *client;
    hb->conn = (struct rlock_conn){0};
    hb->stopping = false;
    hb->running = false;
    if (target->heartbeat_ms == 0)
        return RLOCK_OK;
    /* synchronously, so that a refused interval fails rlock_connect */
    err = beat(hb);
    if (err != RLOCK_OK) {
        rlock_conn_close(&hb->conn);
        return err;
    }
    pthread_mutex_init(&hb->mutex, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&hb->wake, &attr);
    pthread_condattr_destroy(&attr);
    /* No signal of the caller's may land on this thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&hb->thread, NULL, heartbeat_main, hb);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        pthread_cond_destroy(&hb->wake);
        pthread_mutex_destroy(&hb->mutex);
        rlock_conn_close(&hb->conn);
        return RLOCK_ESYSTEM;
    }
    hb->running = true;
    return RLOCK_OK;
}

void heartbeat_stop(struct heartbeat *hb)
{
    if (!hb->running)
        return;
    pthread_mutex_lock(&hb->mutex);
    hb->stopping = true;
    pthread_cond_signal(&hb->wake);
    pthread_mutex_unlock(&hb->mutex);
    pthread_join(hb->thread, NULL);
    pthread_cond_destroy(&hb->wake);
    pthread_mutex_destroy(&hb->mutex);
    hb->running = false;
}
