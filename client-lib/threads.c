/*
 * threads.c - each thread's connection to rlockd, all in the client's one
 * session. A thread opens its own connection on its first call, and again
 * after one is lost. A new thread sweeps out the states of exited ones.
 * A lost connection marks the holds that may have gone with it.
 *
 * Never lets two threads use one connection.
 */
#include "rlock_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t current_tid(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
    return gettid();
#else
    return (pid_t)syscall(SYS_gettid);
#endif
}

/* Closes and frees a list of thread states, with their holds. */
void threads_free(struct thread_state *t)
{
    while (t != NULL) {
        struct thread_state *next = t->next;
        rlock_conn_close(&t->conn);
        holds_free(t->holds);
        free(t);
        t = next;
    }
}

static bool thread_exited(pid_t tid)
{
    return syscall(SYS_tgkill, getpid(), tid, 0) == -1 && errno == ESRCH;
}

/* Unlinks the states of threads that have exited and returns them, for
 * closing after the mutex is released. Caller holds the mutex. Their
 * holds go too: no thread can unlock them any more. */
static struct thread_state *unlink_exited_threads(rlock_client *c)
{
    struct thread_state *exited = NULL, **link = &c->threads;

    while (*link != NULL) {
        struct thread_state *t = *link;
        if (thread_exited(t->tid)) {
            *link = t->next;
            t->next = exited;
            exited = t;
        } else {
            link = &t->next;
        }
    }
    return exited;
}

static struct thread_state *thread_state_find(const rlock_client *c, pid_t tid)
{
    struct thread_state *t;

    for (t = c->threads; t != NULL && t->tid != tid; t = t->next)
        ;
    return t;
}

/* Opens a connection, resuming the client's session while it holds
 * locks (the rule for holders, protocol.md section 9). */
static int client_reopen(rlock_client *c, struct rlock_conn *conn)
{
    int err = rlock_conn_open(conn, &c->target, holds_any(c));

    if (err != RLOCK_ELOCKLOST)
        return err;
    holds_session_lost(c);
    return rlock_conn_open(conn, &c->target, false);
}

/*
 * The calling thread's state with an open connection. The mutex covers
 * only the table; connecting happens outside it. A thread new to the
 * table first sweeps out the states of exited threads, which keeps the
 * table as small as the set of live threads that used the client.
 */
int threads_get(rlock_client *c, struct thread_state **out)
{
    pid_t tid = current_tid();
    struct thread_state *t, *exited = NULL;
    struct rlock_conn conn;
    bool is_new = false;
    int err;

    pthread_mutex_lock(&c->mutex);
    t = thread_state_find(c, tid);
    pthread_mutex_unlock(&c->mutex);
    if (t != NULL && t->conn.ctx != NULL) {
        *out = t;
        return RLOCK_OK;
    }
    err = client_reopen(c, &conn);
    if (err != RLOCK_OK)
        return err;
    if (t == NULL) {
        t = calloc(1, sizeof *t);
        if (t == NULL) {
            rlock_conn_close(&conn);
            return RLOCK_ESYSTEM;
        }
        t->tid = tid;
        snprintf(t->tid_text, sizeof t->tid_text, "%d", (int)tid);
        is_new = true;
    }
    pthread_mutex_lock(&c->mutex);
    t->conn = conn;
    if (is_new) {
        exited = unlink_exited_threads(c);
        t->next = c->threads;
        c->threads = t;
    }
    pthread_mutex_unlock(&c->mutex);
    threads_free(exited);
    *out = t;
    return RLOCK_OK;
}

/*
 * The thread's connection broke or timed out: close it, and mark the
 * holds that may have gone with it. If no other connection of the client
 * is open, rlockd saw the session end and may have released them all,
 * the client's permits too; otherwise the session goes on, and only this
 * thread's locks are in doubt (permits are the session's).
 */
void threads_lost(rlock_client *c, struct thread_state *t)
{
    struct rlock_conn lost = t->conn;
    bool session_ended = true;

    pthread_mutex_lock(&c->mutex);
    t->conn.ctx = NULL;
    for (struct thread_state *other = c->threads; other != NULL;
         other = other->next)
        if (other->conn.ctx != NULL)
            session_ended = false;
    holds_mark_suspect(c, session_ended ? NULL : t, false);
    pthread_mutex_unlock(&c->mutex);
    rlock_conn_close(&lost);
}
