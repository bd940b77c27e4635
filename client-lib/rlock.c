/*
 * rlock.c - librlock's client: rlock_connect() makes one, rlock_close()
 * frees it, and rlock_strerror() names its errors. The calls live by
 * concept: locks.c, semaphores.c; the path they share is request.c's.
 *
 * Never talks to rlockd itself. The first connection is threads.c's, the
 * heartbeat's heartbeat.c's.
 */
#include "rlock_int.h"

#include <stdlib.h>

static const char *const error_texts[] = {
    [-RLOCK_OK] = "success",
    [-RLOCK_ENOTOWNER] =
        "lock not held by this thread, or permits not by this client",
    [-RLOCK_ELOCKLOST] = "lock or permit was lost while held",
    [-RLOCK_EDAEMON] = "cannot connect to rlockd",
    [-RLOCK_EREDIS] = "rlockd cannot reach Redis",
    [-RLOCK_ETIMEOUT] = "no reply from rlockd in time",
    [-RLOCK_ECONNLOST] = "connection to rlockd lost",
    [-RLOCK_EINVAL] = "invalid argument, or refused by rlockd (-ERR: a "
                      "reserved name, a count out of range)",
    [-RLOCK_ELIMIT] = "a limit of rlockd was reached",
    [-RLOCK_ESHUTDOWN] = "rlockd is shutting down",
    [-RLOCK_EAUTH] = "rlockd wants a login, or refused the one given",
    [-RLOCK_ESYSTEM] = "out of memory or system error",
    [-RLOCK_EPROTOCOL] = "unexpected reply from rlockd",
    [-RLOCK_EWRONGTYPE] = "the name's key holds something that is not a lock",
    [-RLOCK_ENOREPLICAS] = "no Redis replica acknowledged the lock in time",
    [-RLOCK_ENOPERM] = "the user logged in as may not do this",
    [-RLOCK_ETLS] = "TLS handshake with rlockd failed",
    [-RLOCK_EDEADLOCK] = "the wait would deadlock with other waiting threads",
};

rlock_client *rlock_connect(const char *addr, const rlock_options *opts,
                            int *err)
{
    return rlock_connect_tls(addr, opts, NULL, err);
}

rlock_client *rlock_connect_tls(const char *addr, const rlock_options *opts,
                                const rlock_tls_options *tls, int *err)
{
    rlock_client *c = calloc(1, sizeof *c);
    struct thread_state *t;
    int e = RLOCK_ESYSTEM;

    if (c != NULL) {
        pthread_mutex_init(&c->mutex, NULL);
        e = rlock_target_init(&c->target, addr, opts, tls);
    }
    if (e == RLOCK_OK)
        e = threads_get(c, &t);
    if (e == RLOCK_OK) /* after the session exists: it joins it */
        e = heartbeat_start(
            &c->heartbeat, &c->target,
            &(struct heartbeat_client){holds_any, holds_session_lost, c});
    if (err != NULL)
        *err = e;
    if (e == RLOCK_OK)
        return c;
    rlock_close(c);
    return NULL;
}

void rlock_close(rlock_client *c)
{
    if (c == NULL)
        return;
    heartbeat_stop(&c->heartbeat);
    threads_free(c->threads);
    for (int list = 0; list < LIST_COUNT; list++)
        holds_free(c->holds[list]);
    pthread_mutex_destroy(&c->mutex);
    rlock_target_free(&c->target);
    free(c);
}

const char *rlock_client_id(const rlock_client *c)
{
    return c != NULL ? c->target.client_id : NULL;
}

const char *rlock_strerror(int err)
{
    if (err > 0 || -err >= (int)(sizeof error_texts / sizeof *error_texts))
        return "unknown error";
    return error_texts[-err];
}
