/*
 * supervisor.c - the watch and the supervisor thread (supervisor.h).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#include "rlock.h"
#include "supervisor.h"

/* rlockd up but silent (a timeout) for this long: the lock counts as
 * lost, however long its TTL. An rlockd that answers nothing may be alive
 * behind a broken path and have ended rlock's session, releasing its lock
 * with the default on_disconnect = release; someone else may hold it now.
 * An rlockd that is not there at all (refused, or the connection closed)
 * is being restarted: with on_shutdown = keep (the default) and after a
 * crash its locks stay in Redis until their TTL, and the session comes
 * back with RESUME, so rlock rides through until that TTL. */
#define UNREACHABLE_GRACE_MS 1000

int64_t watch_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The signals the supervisor reads: the ones passed on to COMMAND (or
 * that end a hold), COMMAND's end or stop, and rlock's own continuation
 * after a stop (fg, bg). */
static void supervised_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGCONT);
}

int watch_open(struct watch *w, int64_t asked, long long pttl,
               sigset_t *old_mask)
{
    pthread_condattr_t attr;
    sigset_t signals, blocked;

    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->ended_cond, &attr);
    pthread_condattr_destroy(&attr);
    w->confirmed_at = asked;
    w->expires_at = pttl < 0 ? INT64_MAX : asked + pttl;
    w->last_error = RLOCK_OK;

    /* From here on these signals wait in the signalfd for the supervisor;
     * until now they ended rlock as they end any program (and rlockd
     * released the lock when rlock's connection closed). */
    supervised_signals(&signals);
    blocked = signals;
    child_blocked_signals(&blocked);
    sigprocmask(SIG_BLOCK, &blocked, old_mask);
    w->signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
    w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->signal_fd < 0 || w->wake_fd < 0)
        return fail_sys("signalfd/eventfd");
    return 0;
}

void watch_close(struct watch *w)
{
    close(w->signal_fd);
    close(w->wake_fd);
    pthread_cond_destroy(&w->ended_cond);
    pthread_mutex_destroy(&w->mu);
}

/* The eventfd cannot fail short of a bug: its counter never comes near
 * its maximum, and only the supervisor reads it, when poll() says so. */
static void watch_wake(struct watch *w)
{
    uint64_t one = 1;

    if (write(w->wake_fd, &one, sizeof(one)) != sizeof(one))
        abort();
}

static void watch_woken(struct watch *w)
{
    uint64_t count;

    if (read(w->wake_fd, &count, sizeof(count)) != sizeof(count))
        abort();
}

/* Redis read the TTL after `asked`, so asked + pttl is no later than the
 * key's real expiry. */
void watch_confirmed(struct watch *w, int64_t asked, long long pttl)
{
    pthread_mutex_lock(&w->mu);
    w->confirmed_at = asked;
    w->expires_at = pttl < 0 ? INT64_MAX : asked + pttl;
    w->last_error = RLOCK_OK;
    w->recheck &= asked < w->recheck_from;
    pthread_mutex_unlock(&w->mu);
    watch_wake(w);
}

/* Only an rlockd that is there but silent shortens the deadline
 * (UNREACHABLE_GRACE_MS); one that is away (being restarted) or has Redis
 * down (RLOCK_EREDIS) leaves the lock its TTL: nobody else can take it
 * before then. A permit has no TTL rlock can know (rlockd renews it with
 * its own watchdog): rlockd away, it gets the grace too. */
void watch_failed(struct watch *w, int err, int64_t asked)
{
    bool away = err == RLOCK_ECONNLOST || err == RLOCK_EDAEMON;

    pthread_mutex_lock(&w->mu);
    w->last_error = err;
    w->recheck &= asked < w->recheck_from;
    if ((err == RLOCK_ETIMEOUT || (away && w->expires_at == INT64_MAX)) &&
        w->expires_at > asked + UNREACHABLE_GRACE_MS)
        w->expires_at = asked + UNREACHABLE_GRACE_MS;
    pthread_mutex_unlock(&w->mu);
    watch_wake(w);
}

/* Called with mu held. The supervisor then stops COMMAND, or ends the
 * hold. */
static void watch_lose(struct watch *w, const char *reason)
{
    if (w->lost)
        return;
    w->lost = true;
    if (w->child != NULL)
        fprintf(stderr,
                "rlock: %s lost: %s; sending SIGTERM to COMMAND "
                "(SIGKILL after %d s)\n",
                w->name, reason, w->kill_grace_ms / 1000);
    else
        fprintf(stderr, "rlock: %s lost: %s\n", w->name, reason);
}

void watch_lost(struct watch *w, const char *reason)
{
    pthread_mutex_lock(&w->mu);
    w->recheck = false;
    watch_lose(w, reason);
    pthread_mutex_unlock(&w->mu);
    watch_wake(w);
}

bool watch_is_lost(struct watch *w)
{
    bool lost;

    pthread_mutex_lock(&w->mu);
    lost = w->lost;
    pthread_mutex_unlock(&w->mu);
    return lost;
}

bool watch_wait_ended(struct watch *w, int64_t timeout_ms)
{
    int64_t until = watch_now_ms() + timeout_ms;
    struct timespec ts = {.tv_sec = until / 1000,
                          .tv_nsec = (until % 1000) * 1000000};
    bool ended;

    pthread_mutex_lock(&w->mu);
    while (!w->ended && !w->recheck) {
        if (timeout_ms < 0)
            pthread_cond_wait(&w->ended_cond, &w->mu);
        else if (pthread_cond_timedwait(&w->ended_cond, &w->mu, &ts) ==
                 ETIMEDOUT)
            break;
    }
    ended = w->ended;
    pthread_mutex_unlock(&w->mu);
    return ended;
}

/* Called with mu held. */
static void watch_end(struct watch *w, int wait_status)
{
    w->ended = true;
    w->wait_status = wait_status;
    pthread_cond_signal(&w->ended_cond);
}

/* ---------------------------------------------------- the supervisor */

struct supervisor {
    struct watch *w;
    enum { STOP_NONE, STOP_TERM_SENT, STOP_KILL_SENT } stop;
    int64_t kill_at; /* once SIGTERM was sent */
    bool resume;     /* continue COMMAND once the recheck confirmed */
};

/* True while a SIGCONT waits in the signalfd: rlock was stopped, maybe
 * right after it read its signals, and a deadline that passed meanwhile
 * waits for the recheck that SIGCONT asks for (the next turn reads it). */
static bool continued_unread(void)
{
    sigset_t pending;

    return sigpending(&pending) == 0 && sigismember(&pending, SIGCONT);
}

/* Under mu: declares the lock lost once it has outlived its last
 * confirmation; once it is lost, ends a hold, or sends COMMAND SIGTERM,
 * then SIGKILL after the grace. Returns how long poll() may sleep before
 * this must run again. */
static int supervise_deadlines(struct supervisor *s)
{
    struct watch *w = s->w;
    int64_t now = watch_now_ms(), next;
    char reason[256];

    if (w->recheck && now >= w->recheck_until) {
        w->recheck = false;
        watch_lose(w, "rlock was stopped, and rlockd has not confirmed it "
                      "since it was continued");
    }
    if (w->recheck)
        return (int)(w->recheck_until - now);
    if (s->resume && !w->lost)
        child_continued(w->child);
    s->resume = false;
    if (!w->lost && now >= w->expires_at && !continued_unread()) {
        if (w->lease_ms != RLOCK_WATCHDOG)
            snprintf(reason, sizeof(reason), "its lease (-l %lld) ran out",
                     w->lease_ms);
        else
            snprintf(reason, sizeof(reason),
                     "rlockd has not confirmed it for %lld ms (%s), and "
                     "it may have expired or been released since",
                     (long long)(now - w->confirmed_at),
                     w->last_error == RLOCK_OK ? "no answer yet"
                                               : rlock_strerror(w->last_error));
        watch_lose(w, reason);
    }
    if (w->lost && w->child == NULL) {
        watch_end(w, 0);
        return -1;
    }
    if (w->lost && s->stop == STOP_NONE) {
        child_signal(w->child, SIGTERM);
        s->stop = STOP_TERM_SENT;
        s->kill_at = now + w->kill_grace_ms;
    }
    if (s->stop == STOP_TERM_SENT && now >= s->kill_at) {
        fprintf(stderr,
                "rlock: COMMAND still runs %d s after SIGTERM; "
                "sending SIGKILL\n",
                w->kill_grace_ms / 1000);
        kill(-w->child->pid, SIGKILL);
        s->stop = STOP_KILL_SENT;
    }
    if (s->stop == STOP_TERM_SENT)
        next = s->kill_at;
    else if (s->stop == STOP_NONE)
        next = w->expires_at;
    else
        return -1;
    if (next == INT64_MAX)
        return -1;
    return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

static void supervise_end(struct watch *w, int wait_status)
{
    pthread_mutex_lock(&w->mu);
    watch_end(w, wait_status);
    pthread_mutex_unlock(&w->mu);
}

/* rlock runs again after a stop (SIGCONT): the main thread confirms the
 * lock before anything else, and COMMAND is continued once it did
 * (supervise_deadlines). */
static void supervise_continued(struct supervisor *s)
{
    struct watch *w = s->w;

    pthread_mutex_lock(&w->mu);
    w->recheck = true;
    w->recheck_from = watch_now_ms();
    w->recheck_until = w->recheck_from + UNREACHABLE_GRACE_MS;
    pthread_cond_signal(&w->ended_cond);
    pthread_mutex_unlock(&w->mu);
    s->resume = w->child != NULL;
}

/* SIGCHLD: reaps COMMAND once it has ended; a stop by the terminal stops
 * rlock too (child_stopped). True once reaped. */
static bool supervise_child(struct supervisor *s)
{
    struct watch *w = s->w;
    int status;

    if (waitpid(w->child->pid, &status, WNOHANG | WUNTRACED) != w->child->pid)
        return false; /* the guardian's, or nothing new */
    if (WIFSTOPPED(status)) {
        if (WSTOPSIG(status) == SIGTSTP || WSTOPSIG(status) == SIGTTIN ||
            WSTOPSIG(status) == SIGTTOU)
            child_stopped(w->child);
        return false;
    }
    supervise_end(w, status);
    return true;
}

/* Reads the pending signals. With COMMAND: passes INT, TERM and HUP on
 * to its group, follows its stops and its end; for a hold, INT, TERM and
 * HUP end it. True once the end came. */
static bool supervise_signals(struct supervisor *s)
{
    struct watch *w = s->w;
    struct signalfd_siginfo si;

    while (read(w->signal_fd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCONT) {
            supervise_continued(s);
        } else if (si.ssi_signo == SIGCHLD) {
            if (w->child != NULL && supervise_child(s))
                return true;
        } else if (w->child != NULL) {
            child_signal(w->child, (int)si.ssi_signo);
        } else {
            supervise_end(w, 0);
            return true;
        }
    }
    return false;
}

/* rlock hold: what comes on the input is read and dropped; its end (or
 * an error) ends the hold. True once it ended. */
static bool supervise_input(struct watch *w)
{
    char buf[4096];
    ssize_t n = read(w->input_fd, buf, sizeof buf);

    if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)))
        return false;
    supervise_end(w, 0);
    return true;
}

/* Signals are read first in each turn, before the deadlines are judged:
 * after a stop, SIGCONT (queued before any thread ran again) must set the
 * recheck before a deadline that passed meanwhile is taken for a loss. */
static void *supervise(void *arg)
{
    struct supervisor s = {.w = arg};
    struct pollfd fds[3] = {{.fd = s.w->signal_fd, .events = POLLIN},
                            {.fd = s.w->wake_fd, .events = POLLIN},
                            {.fd = s.w->input_fd, .events = POLLIN}};
    int timeout;

    for (;;) {
        if (supervise_signals(&s))
            return NULL;
        pthread_mutex_lock(&s.w->mu);
        timeout = supervise_deadlines(&s);
        if (s.w->ended) {
            pthread_mutex_unlock(&s.w->mu);
            return NULL;
        }
        pthread_mutex_unlock(&s.w->mu);
        /* EINTR (a stop and continue) needs nothing but another turn. */
        if (poll(fds, 3, timeout) <= 0)
            continue;
        if (fds[1].revents & POLLIN)
            watch_woken(s.w);
        if (fds[2].revents != 0 && supervise_input(s.w))
            return NULL;
    }
}

int watch_start(struct watch *w, pthread_t *thread)
{
    int err = pthread_create(thread, NULL, supervise, w);

    if (err == 0)
        return 0;
    errno = err;
    err = fail_sys("pthread_create");
    if (w->child != NULL) { /* COMMAND must not run unwatched */
        child_signal(w->child, SIGKILL);
        waitpid(w->child->pid, NULL, 0);
    }
    return err;
}
