/*
 * rlock_cli.c - the `rlock` command: flock(1) for rlockd locks.
 *
 *     rlock [-s addr] [-w ms | -n] [-l ms] [-k s] [-b ms] [--read | --write |
 *           --fair | --fenced] NAME -- COMMAND ...
 *     rlock [-s addr] [--read | ...] status NAME
 *     rlock [-s addr] [--read | ...] force-unlock NAME
 *
 * Owns the command line, the child process that runs COMMAND (its process
 * group, the signals passed on to it, its exit status) and the watch over
 * the lock while COMMAND runs. It talks to rlockd only through librlock.
 *
 * Two threads. A lock belongs to the thread that took it, so the main
 * thread makes every librlock call: it takes the lock, asks rlockd now and
 * then whether it still holds it, and releases it. Those calls can block
 * for seconds when rlockd or Redis is slow, so everything that must happen
 * on time - passing signals on, reaping the child, noticing that the lock
 * has outlived its last confirmation, SIGTERM and SIGKILL - belongs to the
 * supervisor thread, which also is the only one to signal or reap the
 * child (no pid reuse race). struct watch is all they share.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command.h" /* COMMAND_MAX_MS, COMMAND_HEARTBEAT_*: rlockd's bounds */
#include "rlock.h"

#define DEFAULT_ADDR "127.0.0.1:7379"
#define DEFAULT_KILL_GRACE_S 5
#define MAX_KILL_GRACE_S 86400
/* How often rlockd is asked whether the lock is still held: a third of the
 * lease (or of the watchdog's TTL), at most this, at least MIN_CHECK_MS. */
#define MAX_CHECK_MS 1000
#define MIN_CHECK_MS 10
/* rlockd lost and not back within this: the lock counts as lost, however
 * long its TTL. An rlockd that ended rlock's session after a dropped
 * connection has released it already with the default on_disconnect =
 * release (and one that stopped with on_shutdown = release), and someone
 * else may hold it now; one that stopped with on_shutdown = keep gives the
 * session back when it is restarted within this. */
#define UNREACHABLE_GRACE_MS 1000

/* rlock's own exit statuses. They replace COMMAND's status, so they keep
 * out of the ranges commands use: sysexits(3) codes, as flock(1) does. */
enum {
    EXIT_NOT_ACQUIRED = 1, /* flock(1)'s status for -n and -w */
    EXIT_USAGE = 64,       /* EX_USAGE, flock(1)'s */
    EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: rlockd (or Redis) cannot serve */
    EXIT_ERROR = 70,       /* EX_SOFTWARE: any other failure */
    EXIT_LOCK_LOST = 75,   /* EX_TEMPFAIL: lost while COMMAND ran */
    EXIT_CANNOT_EXEC = 126,
    EXIT_NOT_FOUND = 127,
};

/* COMMAND's variable for a fenced lock's token (etcdctl lock's is
 * ETCD_LOCK_REV). */
#define TOKEN_VARIABLE "RLOCK_TOKEN"

static const char usage_text[] =
    "Usage: rlock [-s ADDR] [-w MS | -n] [-l MS] [-k SECS] [-b MS] [KIND] NAME "
    "--\n"
    "             COMMAND [ARG...]\n"
    "       rlock [-s ADDR] [KIND] status NAME\n"
    "       rlock [-s ADDR] [KIND] force-unlock NAME\n"
    "       rlock -h\n"
    "\n"
    "Runs COMMAND while holding the rlockd lock NAME, as flock(1) does with a\n"
    "file: waits for the lock, runs COMMAND in a process group of its own,\n"
    "releases the lock when COMMAND ends and exits with COMMAND's status.\n"
    "\n"
    "Options:\n"
    "  -s ADDR  rlockd's address, HOST:PORT or unix:PATH\n"
    "           (default: $RLOCK_ADDR, else " DEFAULT_ADDR ")\n"
    "  -w MS    wait at most MS milliseconds for the lock (default: forever)\n"
    "  -n       do not wait: give up at once if the lock is held (-w 0)\n"
    "  -l MS    lease: the lock expires MS ms after it is taken, even if\n"
    "           COMMAND still runs (default: rlockd's watchdog keeps it\n"
    "           alive until COMMAND ends)\n"
    "  -k SECS  after the lock is lost, SIGKILL COMMAND's process group SECS\n"
    "           seconds after its SIGTERM (default 5; 0: at once)\n"
    "  -b MS    heartbeat: if rlock itself stops (SIGSTOP, hung) for MS\n"
    "           milliseconds, rlockd releases the lock (default 10000;\n"
    "           0: never, the lock is held while rlock's connection lives)\n"
    "  -h       print this help and exit 0\n"
    "MS: 0 to 10^12 (-l: from 1; -b: 0 or 100 to 86400000); SECS: 0 to\n"
    "86400; digits only.\n"
    "\n"
    "KIND, the kind of lock NAME is (at most one; default: a plain lock,\n"
    "Redisson's RLock); status and force-unlock look at that kind too:\n"
    "  --read, --shared      the read side of the read-write lock NAME:\n"
    "                        shared with other readers, never with a writer\n"
    "  --write, --exclusive  its write side: no other writer, no reader\n"
    "  --fair                a fair lock: waiters get it in the order they\n"
    "                        asked, on every host\n"
    "  --fenced              a fenced lock: COMMAND gets the acquisition's\n"
    "                        fencing token in $" TOKEN_VARIABLE "\n"
    "\n"
    "  status NAME        print \"locked pttl_ms=MS\" (the lock's time left)\n"
    "                     or \"unlocked\"; exit 0 either way\n"
    "  force-unlock NAME  delete the lock, whoever holds it; print\n"
    "                     \"force-unlocked\" or \"not locked\"; exit 0\n"
    "\n"
    "While COMMAND runs:\n"
    "  - SIGINT, SIGTERM and SIGHUP sent to rlock go to COMMAND's process\n"
    "    group; rlock exits when COMMAND does, having released the lock.\n"
    "  - rlock asks rlockd every third of the lease (at most every second)\n"
    "    whether it still holds the lock. If rlockd says it does not (the\n"
    "    lease ran out, someone force-unlocked it, rlockd restarted and it\n"
    "    was released), or if the lock's TTL runs out before rlockd could\n"
    "    confirm it again (rlockd or Redis unreachable), rlock prints a\n"
    "    warning, sends SIGTERM to COMMAND's process group, SIGKILL after\n"
    "    -k seconds, and exits 75.\n"
    "  - If rlock's connection to rlockd breaks and the lock outlives it\n"
    "    (rlockd crashed and was restarted, or runs with on_disconnect =\n"
    "    expire), rlock takes it again once reconnected, so that rlockd's\n"
    "    watchdog renews it, and releases both holds at the end.\n"
    "  - If rlock itself is killed, COMMAND gets SIGTERM: rlockd releases\n"
    "    the lock when rlock's connection closes.\n"
    "  - COMMAND is not in the terminal's foreground process group: Ctrl-C\n"
    "    reaches it through rlock, but a COMMAND that reads the terminal\n"
    "    is stopped (SIGTTIN) until a signal ends it.\n"
    "\n"
    "Exit status:\n"
    "  N        COMMAND's own status, the lock held throughout;\n"
    "           128+S if COMMAND was killed by signal S\n"
    "  1        the lock was not acquired: held elsewhere (-n) or the -w\n"
    "           time ran out (as flock(1); COMMAND did not run)\n"
    "  64       usage error\n"
    "  69       rlockd cannot be reached, or cannot serve (Redis down,\n"
    "           shutting down, a limit reached)\n"
    "  70       any other error\n"
    "  75       the lock was lost while COMMAND ran: COMMAND's work may not\n"
    "           have been exclusive\n"
    "  126/127  COMMAND could not be executed / was not found\n"
    "\n"
    "Environment:\n"
    "  RLOCK_ADDR  rlockd's address when -s is not given\n"
    "  RLOCK_AUTH  the token sent with AUTH, for an rlockd with\n"
    "              [server] auth_token set (an environment variable, so\n"
    "              that it never shows in ps)\n"
    "  " TOKEN_VARIABLE "\n"
    "              set for COMMAND with --fenced: the fencing token of the\n"
    "              acquisition, larger than every earlier holder's of NAME\n";

enum mode { MODE_RUN, MODE_STATUS, MODE_FORCE_UNLOCK };

struct options {
    enum mode mode;
    const char *addr;
    const char *name;
    enum rlock_kind kind;
    char **command; /* NULL-terminated, MODE_RUN only */
    long long wait_ms;
    long long lease_ms;
    int kill_grace_ms;
    int heartbeat_ms; /* as rlock_options wants it */
};

/* What the main thread (the lock's owner) and the supervisor thread (the
 * child's owner) share. The fields above mu are set before the supervisor
 * starts and never change; mu guards the rest. */
struct watch {
    const char *name;
    long long lease_ms;
    int kill_grace_ms;
    pid_t child; /* COMMAND's pid, and its process group's id */
    int signal_fd;
    int wake_fd; /* eventfd: wakes the supervisor when the fields change */

    pthread_mutex_t mu;
    pthread_cond_t reaped_cond;
    bool reaped;
    int wait_status;
    int64_t confirmed_at; /* when rlockd last confirmed the lock */
    int64_t expires_at;   /* the latest the lock can last after that */
    int last_error;       /* of librlock since then; RLOCK_OK if none */
    bool lost;
};

/* The main thread's own state of the lock. */
struct keeper {
    rlock_client *client;
    const char *name;
    enum rlock_kind kind;
    long long lease_ms;
    long long token;        /* a fenced lock's, of the first acquisition */
    int holds;              /* successful acquisitions, each needs an UNLOCK */
    bool maybe_new_session; /* a call failed since the last confirmation */
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The one way rlock reports a failure: "rlock: <what>: <why>" on stderr,
 * and the exit status that goes with err, a librlock error. */
static int fail(int err, const char *fmt, ...)
{
    va_list ap;

    fputs("rlock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", rlock_strerror(err));
    switch (err) {
    case RLOCK_EDAEMON:
    case RLOCK_EREDIS:
    case RLOCK_ETIMEOUT:
    case RLOCK_ECONNLOST:
    case RLOCK_ELIMIT:
    case RLOCK_ESHUTDOWN:
        return EXIT_UNAVAILABLE;
    default:
        return EXIT_ERROR;
    }
}

/* As fail(), for a failed system call (errno). */
static int fail_sys(const char *what)
{
    fprintf(stderr, "rlock: %s: %s\n", what, strerror(errno));
    return EXIT_ERROR;
}

static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("rlock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'rlock -h' for more information.\n", stderr);
    return EXIT_USAGE;
}

/* Digits only (no sign, no spaces, nothing after), within [min, max]. */
static int parse_number(int opt, const char *text, long long min, long long max,
                        long long *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 ||
        v < min || v > max)
        return usage_error("-%c: '%s' is not a whole number from %lld to %lld",
                           opt, text, min, max);
    *out = v;
    return 0;
}

/* The long options name the lock's kind. Their values lie past every
 * short option's character: OPT_KIND plus the enum rlock_kind. */
enum { OPT_KIND = 256 };

static const struct option long_options[] = {
    {"read", no_argument, NULL, OPT_KIND + RLOCK_READ},
    {"shared", no_argument, NULL, OPT_KIND + RLOCK_READ},
    {"write", no_argument, NULL, OPT_KIND + RLOCK_WRITE},
    {"exclusive", no_argument, NULL, OPT_KIND + RLOCK_WRITE},
    {"fair", no_argument, NULL, OPT_KIND + RLOCK_FAIR},
    {"fenced", no_argument, NULL, OPT_KIND + RLOCK_FENCED},
    {NULL, 0, NULL, 0},
};

/* A kind option, the long_options[] entry `option`: a lock has one kind,
 * so a second option naming another is an error (an alias of the first,
 * --read --shared, is not). *given: the first one's entry, or NULL. */
static int choose_kind(struct options *o, const struct option *option,
                       const struct option **given)
{
    enum rlock_kind kind = (enum rlock_kind)(option->val - OPT_KIND);

    if (*given != NULL && kind != o->kind)
        return usage_error("--%s and --%s exclude each other: a lock has "
                           "one kind",
                           (*given)->name, option->name);
    o->kind = kind;
    *given = option;
    return 0;
}

/* getopt_long()'s '?' (with ':' first in the short options, it prints
 * nothing itself): an unknown short option; or a long option that is
 * unknown, ambiguous (--f) or given a value (--read=x), which it has
 * stepped over. */
static int unknown_option(char **argv)
{
    if (optopt > 0 && optopt < OPT_KIND)
        return usage_error("unknown option -%c", optopt);
    if (optopt >= OPT_KIND)
        return usage_error("%s: takes no value", argv[optind - 1]);
    return usage_error("unknown or ambiguous option %s", argv[optind - 1]);
}

/* Fills o from the command line; 0, or the exit status to leave with. */
static int parse_options(int argc, char **argv, struct options *o)
{
    long long grace_s = DEFAULT_KILL_GRACE_S, heartbeat_ms = 0;
    bool timing_given = false;
    const struct option *kind_given = NULL;
    const char *env_addr = getenv("RLOCK_ADDR");
    int opt, long_index, rest, err = 0;

    *o = (struct options){.addr =
                              env_addr && *env_addr ? env_addr : DEFAULT_ADDR,
                          .kind = RLOCK_LOCK,
                          .wait_ms = RLOCK_WAIT_FOREVER,
                          .lease_ms = RLOCK_WATCHDOG};
    /* '+': stop at NAME, so that COMMAND's options stay COMMAND's; ':':
     * report errors ourselves. */
    while (err == 0 && (opt = getopt_long(argc, argv, "+:s:w:nl:k:b:h",
                                          long_options, &long_index)) != -1) {
        if (opt >= OPT_KIND) {
            err = choose_kind(o, &long_options[long_index], &kind_given);
            continue;
        }
        switch (opt) {
        case 's':
            o->addr = optarg;
            if (*optarg == '\0')
                err = usage_error("-s: empty address");
            break;
        case 'w':
            err = parse_number(opt, optarg, 0, COMMAND_MAX_MS, &o->wait_ms);
            break;
        case 'n':
            o->wait_ms = 0;
            break;
        case 'l':
            err = parse_number(opt, optarg, 1, COMMAND_MAX_MS, &o->lease_ms);
            break;
        case 'k':
            err = parse_number(opt, optarg, 0, MAX_KILL_GRACE_S, &grace_s);
            break;
        case 'b':
            err = parse_number(opt, optarg, 0, COMMAND_HEARTBEAT_MAX_MS,
                               &heartbeat_ms);
            if (err == 0 && heartbeat_ms > 0 &&
                heartbeat_ms < COMMAND_HEARTBEAT_MIN_MS)
                err = usage_error("-b: 0, or %d to %d ms",
                                  COMMAND_HEARTBEAT_MIN_MS,
                                  COMMAND_HEARTBEAT_MAX_MS);
            o->heartbeat_ms = heartbeat_ms == 0 ? RLOCK_NO_HEARTBEAT
                                                : (int)heartbeat_ms;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        case ':':
            err = usage_error("-%c needs a value", optopt);
            break;
        default:
            err = unknown_option(argv);
        }
        timing_given |= opt == 'w' || opt == 'n' || opt == 'l' || opt == 'k' ||
                        opt == 'b';
    }
    if (err != 0)
        return err;
    o->kill_grace_ms = (int)(grace_s * 1000);

    rest = argc - optind;
    if (rest >= 2 && strcmp(argv[optind + 1], "--") == 0) {
        o->name = argv[optind];
        o->command = argv + optind + 2;
        if (o->command[0] == NULL)
            return usage_error("no COMMAND after --");
    } else if (rest == 2 && strcmp(argv[optind], "status") == 0) {
        o->mode = MODE_STATUS;
    } else if (rest == 2 && strcmp(argv[optind], "force-unlock") == 0) {
        o->mode = MODE_FORCE_UNLOCK;
    } else {
        return usage_error("expected NAME -- COMMAND, status NAME or "
                           "force-unlock NAME");
    }
    if (o->mode != MODE_RUN) {
        o->name = argv[optind + 1];
        if (timing_given)
            return usage_error("-w, -n, -l, -k and -b go with a COMMAND only");
    }
    if (o->name[0] == '\0')
        return usage_error("empty lock NAME");
    return 0;
}

static int print_status(rlock_client *c, const struct options *o)
{
    const char *name = o->name;
    long long pttl;
    int rc = rlock_pttl_kind(c, name, o->kind, &pttl);

    if (rc != RLOCK_OK)
        return fail(rc, "status of '%s'", name);
    if (pttl == -2)
        printf("unlocked\n");
    else
        printf("locked pttl_ms=%lld\n", pttl);
    return 0;
}

static int force_unlock(rlock_client *c, const struct options *o)
{
    const char *name = o->name;
    int rc = rlock_force_unlock_kind(c, name, o->kind);

    if (rc < 0)
        return fail(rc, "force-unlock '%s'", name);
    printf(rc == 1 ? "force-unlocked\n" : "not locked\n");
    return 0;
}

/* ---------------------------------------------------------- the watch */

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

/* rlockd confirmed at `asked` that we hold the lock, with pttl ms to live
 * (-1: no TTL). Redis read the TTL after `asked`, so asked + pttl is no
 * later than the key's real expiry. */
static void watch_confirmed(struct watch *w, int64_t asked, long long pttl)
{
    pthread_mutex_lock(&w->mu);
    w->confirmed_at = asked;
    w->expires_at = pttl < 0 ? INT64_MAX : asked + pttl;
    w->last_error = RLOCK_OK;
    pthread_mutex_unlock(&w->mu);
    watch_wake(w);
}

/* A check failed at `asked`. Only a failure of rlockd itself shortens the
 * deadline (UNREACHABLE_GRACE_MS); with Redis down (RLOCK_EREDIS) rlockd
 * still holds the session, and the lock lasts until its TTL. */
static void watch_failed(struct watch *w, int err, int64_t asked)
{
    bool session_gone =
        err == RLOCK_ECONNLOST || err == RLOCK_EDAEMON || err == RLOCK_ETIMEOUT;

    pthread_mutex_lock(&w->mu);
    w->last_error = err;
    if (session_gone && w->expires_at > asked + UNREACHABLE_GRACE_MS)
        w->expires_at = asked + UNREACHABLE_GRACE_MS;
    pthread_mutex_unlock(&w->mu);
    watch_wake(w);
}

/* Called with mu held. The supervisor then stops COMMAND. */
static void watch_lose(struct watch *w, const char *reason)
{
    if (w->lost)
        return;
    w->lost = true;
    fprintf(stderr,
            "rlock: lock '%s' lost: %s; sending SIGTERM to COMMAND "
            "(SIGKILL after %d s)\n",
            w->name, reason, w->kill_grace_ms / 1000);
}

static bool watch_is_lost(struct watch *w)
{
    bool lost;

    pthread_mutex_lock(&w->mu);
    lost = w->lost;
    pthread_mutex_unlock(&w->mu);
    return lost;
}

/* Waits up to timeout_ms (-1: no limit) for the child to be reaped. */
static bool watch_wait_reaped(struct watch *w, int64_t timeout_ms)
{
    int64_t until = now_ms() + timeout_ms;
    struct timespec ts = {.tv_sec = until / 1000,
                          .tv_nsec = (until % 1000) * 1000000};
    bool reaped;

    pthread_mutex_lock(&w->mu);
    while (!w->reaped) {
        if (timeout_ms < 0)
            pthread_cond_wait(&w->reaped_cond, &w->mu);
        else if (pthread_cond_timedwait(&w->reaped_cond, &w->mu, &ts) ==
                 ETIMEDOUT)
            break;
    }
    reaped = w->reaped;
    pthread_mutex_unlock(&w->mu);
    return reaped;
}

/* ---------------------------------------------------- the supervisor */

/* Signals COMMAND's process group, then continues it, as shells do, so
 * that a stopped COMMAND (one that read the terminal from outside the
 * foreground group) gets the signal too. */
static void signal_command(const struct watch *w, int sig)
{
    kill(-w->child, sig);
    kill(-w->child, SIGCONT);
}

struct supervisor {
    struct watch *w;
    enum { STOP_NONE, STOP_TERM_SENT, STOP_KILL_SENT } stop;
    int64_t kill_at; /* once SIGTERM was sent */
};

/* Under mu: declares the lock lost once it has outlived its last
 * confirmation; once it is lost, sends SIGTERM, then SIGKILL after the
 * grace. Returns how long poll() may sleep before this must run again. */
static int supervise_deadlines(struct supervisor *s)
{
    struct watch *w = s->w;
    int64_t now = now_ms(), next;
    char reason[256];

    if (!w->lost && now >= w->expires_at) {
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
    if (w->lost && s->stop == STOP_NONE) {
        signal_command(w, SIGTERM);
        s->stop = STOP_TERM_SENT;
        s->kill_at = now + w->kill_grace_ms;
    }
    if (s->stop == STOP_TERM_SENT && now >= s->kill_at) {
        fprintf(stderr,
                "rlock: COMMAND still runs %d s after SIGTERM; "
                "sending SIGKILL\n",
                w->kill_grace_ms / 1000);
        kill(-w->child, SIGKILL);
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

/* Reads the pending signals: passes INT, TERM and HUP on to COMMAND's
 * group, reaps it on SIGCHLD. True once it is reaped. */
static bool supervise_signals(struct watch *w)
{
    struct signalfd_siginfo si;
    int status;

    while (read(w->signal_fd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo != SIGCHLD) {
            signal_command(w, (int)si.ssi_signo);
            continue;
        }
        if (waitpid(w->child, &status, WNOHANG) != w->child)
            continue; /* it stopped or continued: not ended */
        pthread_mutex_lock(&w->mu);
        w->reaped = true;
        w->wait_status = status;
        pthread_cond_signal(&w->reaped_cond);
        pthread_mutex_unlock(&w->mu);
        return true;
    }
    return false;
}

static void *supervise(void *arg)
{
    struct supervisor s = {.w = arg};
    struct pollfd fds[2] = {{.fd = s.w->signal_fd, .events = POLLIN},
                            {.fd = s.w->wake_fd, .events = POLLIN}};
    int timeout;

    for (;;) {
        pthread_mutex_lock(&s.w->mu);
        timeout = supervise_deadlines(&s);
        pthread_mutex_unlock(&s.w->mu);
        /* EINTR (a stop and continue) needs nothing but another turn. */
        if (poll(fds, 2, timeout) <= 0)
            continue;
        if (fds[1].revents & POLLIN)
            watch_woken(s.w);
        if (fds[0].revents & POLLIN && supervise_signals(s.w))
            return NULL;
    }
}

/* ------------------------------------------------------ the lock itself */

/* Asks rlockd whether we hold the lock, and its TTL: 1 held (*pttl set),
 * 0 not held, or a librlock error. After a failed call the library may
 * have reconnected, possibly to a restarted rlockd that knows nothing of
 * the lock: in watchdog mode a lock that outlived that takes a second,
 * reentrant hold, so that this rlockd renews it. Harmless if it was the
 * same session after all: every hold is released at the end. (A fenced
 * lock's second hold gets a new token, which COMMAND does not see: its
 * own is still larger than every earlier holder's.) */
static int confirm_held(struct keeper *k, long long *pttl)
{
    int rc = rlock_is_held_kind(k->client, k->name, k->kind);

    if (rc == 1 && k->maybe_new_session && k->lease_ms == RLOCK_WATCHDOG) {
        rc = rlock_trylock_kind(k->client, k->name, k->kind, 0, RLOCK_WATCHDOG,
                                NULL);
        k->holds += rc == 1;
    }
    if (rc != 1)
        return rc;
    k->maybe_new_session = false;
    rc = rlock_pttl_kind(k->client, k->name, k->kind, pttl);
    if (rc != RLOCK_OK)
        return rc;
    return *pttl != -2;
}

/* One check. A connection found broken is opened again at once (librlock
 * reconnects on the next call), not a check interval later: the lock may
 * have outlived a crashed rlockd only until its TTL runs out. */
static void check_lock(struct keeper *k, struct watch *w)
{
    int64_t asked = now_ms();
    long long pttl;
    int rc = confirm_held(k, &pttl);

    if (rc == RLOCK_ECONNLOST) {
        k->maybe_new_session = true;
        asked = now_ms();
        rc = confirm_held(k, &pttl);
    }
    if (rc == 1) {
        watch_confirmed(w, asked, pttl);
    } else if (rc == 0) {
        pthread_mutex_lock(&w->mu);
        watch_lose(w, "rlockd says it is no longer held by this rlock");
        pthread_mutex_unlock(&w->mu);
        watch_wake(w);
    } else {
        k->maybe_new_session = true;
        watch_failed(w, rc, asked);
    }
}

/* Releases every hold; the last UNLOCK's result (1 once released). */
static int release_lock(struct keeper *k)
{
    int rc = 0;

    for (int i = 0; i < k->holds && rc == 0; i++)
        rc = rlock_unlock_kind(k->client, k->name, k->kind);
    return rc;
}

/* rlock's exit status once COMMAND has ended and the lock is released. */
static int final_status(struct keeper *k, const struct watch *w, int rc)
{
    if (w->lost)
        return EXIT_LOCK_LOST; /* said so already */
    if (rc == RLOCK_ELOCKLOST || rc == RLOCK_ENOTOWNER) {
        /* Lost after the last check: the end of COMMAND's work may not
         * have been exclusive. */
        fprintf(stderr, "rlock: lock '%s' lost before COMMAND ended: %s\n",
                k->name, rlock_strerror(rc));
        return EXIT_LOCK_LOST;
    }
    if (rc < 0)
        fprintf(stderr,
                "rlock: releasing lock '%s': %s (rlockd releases it when "
                "rlock disconnects, or it expires)\n",
                k->name, rlock_strerror(rc));
    if (WIFSIGNALED(w->wait_status))
        return 128 + WTERMSIG(w->wait_status);
    return WEXITSTATUS(w->wait_status);
}

/* --------------------------------------------------------- the child */

/* In the child: never returns. rlock is single-threaded at fork, so the
 * child may use stdio. env: COMMAND's environment; mask: the signal mask
 * rlock started with. */
static void exec_command(char **command, char **env, const sigset_t *mask,
                         pid_t parent)
{
    int err;

    setpgid(0, 0);
    /* rlock killed (SIGKILL, OOM): its connection closes and rlockd
     * releases the lock, so COMMAND must not go on as if it held it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(EXIT_LOCK_LOST);
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvpe(command[0], command, env);
    err = errno;
    fprintf(stderr, "rlock: %s: %s\n", command[0], strerror(err));
    _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

/* Forks COMMAND into a process group of its own, pid = pgid. */
static int spawn_command(char **command, char **env, const sigset_t *mask,
                         pid_t *child)
{
    pid_t parent = getpid();
    pid_t pid = fork();

    if (pid < 0)
        return fail_sys("fork");
    if (pid == 0)
        exec_command(command, env, mask, parent);
    /* The child does it too: whichever runs first, the group exists
     * before rlock can signal it. A failure here (EACCES: the child has
     * exec'd already) means the child's own call came first. */
    setpgid(pid, pid);
    *child = pid;
    return 0;
}

/* The signals the supervisor handles. */
static void supervised_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGCHLD);
}

extern char **environ;

/* COMMAND's environment: rlock's own, and for a fenced lock its token in
 * TOKEN_VARIABLE (in place of one rlock inherited, from an outer rlock).
 * Built before the fork, so that the child only execs; entry, of size
 * bytes, holds the variable. NULL when out of memory; what is not environ
 * is the caller's to free. */
static char **command_environment(const struct keeper *k, char *entry,
                                  size_t size)
{
    const size_t prefix = strlen(TOKEN_VARIABLE "=");
    size_t count = 0, kept = 0;
    char **env;

    if (k->kind != RLOCK_FENCED)
        return environ;
    while (environ[count] != NULL)
        count++;
    env = malloc((count + 2) * sizeof *env);
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < count; i++)
        if (strncmp(environ[i], TOKEN_VARIABLE "=", prefix) != 0)
            env[kept++] = environ[i];
    snprintf(entry, size, TOKEN_VARIABLE "=%lld", k->token);
    env[kept++] = entry;
    env[kept] = NULL;
    return env;
}

/* Runs COMMAND under the lock the keeper holds, confirmed at `asked` with
 * pttl ms to live; returns rlock's exit status. */
static int run_command(struct keeper *k, const struct options *o, int64_t asked,
                       long long pttl)
{
    struct watch w = {.name = o->name,
                      .lease_ms = o->lease_ms,
                      .kill_grace_ms = o->kill_grace_ms,
                      .mu = PTHREAD_MUTEX_INITIALIZER,
                      .confirmed_at = asked,
                      .expires_at = pttl < 0 ? INT64_MAX : asked + pttl};
    long long lease = o->lease_ms != RLOCK_WATCHDOG ? o->lease_ms : pttl;
    int64_t check_ms = lease > 0 ? lease / 3 : MAX_CHECK_MS;
    char token_entry[sizeof TOKEN_VARIABLE + 24], **env;
    pthread_condattr_t attr;
    pthread_t supervisor;
    sigset_t signals, mask;
    int status, err;

    check_ms = check_ms > MAX_CHECK_MS   ? MAX_CHECK_MS
               : check_ms < MIN_CHECK_MS ? MIN_CHECK_MS
                                         : check_ms;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w.reaped_cond, &attr);
    pthread_condattr_destroy(&attr);

    /* From here on these signals wait in the signalfd for the supervisor;
     * until now they ended rlock as they end any program (and rlockd
     * released the lock when rlock's connection closed). */
    supervised_signals(&signals);
    sigprocmask(SIG_BLOCK, &signals, &mask);
    w.signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
    w.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w.signal_fd < 0 || w.wake_fd < 0)
        return fail_sys("signalfd/eventfd");
    env = command_environment(k, token_entry, sizeof token_entry);
    if (env == NULL)
        return fail_sys("malloc");
    status = spawn_command(o->command, env, &mask, &w.child);
    if (env != environ)
        free(env);
    if (status != 0)
        return status;
    err = pthread_create(&supervisor, NULL, supervise, &w);
    if (err != 0) {
        errno = err;
        status = fail_sys("pthread_create");
        kill(-w.child, SIGKILL);
        waitpid(w.child, NULL, 0);
        return status;
    }

    while (!watch_wait_reaped(&w, watch_is_lost(&w) ? -1 : check_ms))
        check_lock(k, &w);
    pthread_join(supervisor, NULL);
    return final_status(k, &w, release_lock(k));
}

static int run_locked(rlock_client *c, const struct options *o)
{
    struct keeper k = {
        .client = c, .name = o->name, .kind = o->kind, .lease_ms = o->lease_ms};
    int64_t asked;
    long long pttl;
    int rc = rlock_trylock_kind(c, o->name, o->kind, o->wait_ms, o->lease_ms,
                                &k.token);

    if (rc < 0)
        return fail(rc, "lock '%s'", o->name);
    if (rc == 0) {
        if (o->wait_ms == 0)
            fprintf(stderr, "rlock: lock '%s' is held elsewhere\n", o->name);
        else
            fprintf(stderr, "rlock: lock '%s' not acquired within %lld ms\n",
                    o->name, o->wait_ms);
        return EXIT_NOT_ACQUIRED;
    }
    k.holds = 1;
    asked = now_ms();
    rc = confirm_held(&k, &pttl);
    if (rc < 0)
        return fail(rc, "lock '%s'", o->name);
    if (rc == 0) {
        fprintf(stderr, "rlock: lock '%s' lost before COMMAND started\n",
                o->name);
        return EXIT_LOCK_LOST;
    }
    return run_command(&k, o, asked, pttl);
}

int main(int argc, char **argv)
{
    struct options o;
    rlock_options connect_opts = {.auth_token = getenv("RLOCK_AUTH")};
    rlock_client *c;
    int err, status = parse_options(argc, argv, &o);

    if (status != 0)
        return status;
    connect_opts.heartbeat_ms = o.heartbeat_ms;
    c = rlock_connect(o.addr, &connect_opts, &err);
    if (c == NULL)
        return fail(err, "rlockd at %s", o.addr);
    switch (o.mode) {
    case MODE_STATUS:
        status = print_status(c, &o);
        break;
    case MODE_FORCE_UNLOCK:
        status = force_unlock(c, &o);
        break;
    case MODE_RUN:
        status = run_locked(c, &o);
        break;
    }
    rlock_close(c);
    return status;
}
