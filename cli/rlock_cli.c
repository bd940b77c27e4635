/*
 * rlock_cli.c - the `rlock` command: flock(1) for rlockd locks.
 *
 *     rlock [OPTION...] [KIND] NAME -- COMMAND [ARG...]   (or -c STRING)
 *     rlock [OPTION...] [KIND] hold NAME
 *     rlock [OPTION...] NAME NAME... -- COMMAND [ARG...]   (or hold NAME...)
 *     rlock [-S ADDR] [KIND] status NAME
 *     rlock [-S ADDR] [KIND] force-unlock NAME
 *     rlock [OPTION...] --permits N NAME -- COMMAND [ARG...]  (or hold)
 *
 * Owns the lock's side of rlock: taking it (or a semaphore's permit),
 * confirming it while COMMAND runs or the hold lasts, releasing it, and
 * the exit status; what differs between a lock and a permit is a struct
 * holding. It talks to rlockd only through librlock. The command
 * line is options.c's; COMMAND's process group child.c's; acting on time
 * the supervisor thread's (supervisor.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "list.h"
#include "options.h"
#include "report.h"
#include "rlock.h"
#include "supervisor.h"

/* How often rlockd is asked whether the lock is still held: a third of the
 * lease (or of the watchdog's TTL), at most this, at least MIN_CHECK_MS. */
#define MAX_CHECK_MS 1000
#define MIN_CHECK_MS 10

/* What COMMAND is told of its lock (etcdctl lock's ETCD_LOCK_KEY,
 * ETCD_LOCK_REV), in place of any it inherited from an outer rlock. */
static const char *const lock_variables[] = {"RLOCK_NAME", "RLOCK_OWNER",
                                             "RLOCK_TOKEN"};
enum { VAR_NAME, VAR_OWNER, VAR_TOKEN, VAR_COUNT };

struct keeper;

/* What differs between holding a lock and a permit of a semaphore. */
struct holding {
    /* Takes it, waiting o->wait_ms: 1 taken, 0 not within the wait, or a
     * librlock error; sets the keeper's owner. */
    int (*take)(struct keeper *k, const struct options *o);
    /* 1 still held (*pttl its time to live, -1 if it has none the client
     * can know), 0 not held, or a librlock error. */
    int (*confirm)(struct keeper *k, long long *pttl);
    /* Gives it back: 1 once released, or a librlock error. */
    int (*release)(struct keeper *k);
};

/* The main thread's own state of the lock. */
struct keeper {
    rlock_client *client;
    const struct holding *holding;
    const char *name;
    char **names; /* several plain locks (multi_holding): name_count */
    int name_count;
    const char *label; /* for messages: "lock 'NAME'", "semaphore 'NAME'" */
    enum rlock_kind kind;
    long long lease_ms;
    long long token;        /* a fenced lock's, of the first acquisition */
    int holds;              /* successful acquisitions, each needs an UNLOCK */
    bool maybe_new_session; /* a call failed since the last confirmation */
    char owner[128];        /* CLIENT-ID:THREAD-ID, as rlockd knows it */
};

/* ------------------------------------------------------- status, force */

/* "locked pttl_ms=MS" or "unlocked" first, as before there were owners
 * and kinds: scripts read that line. */
static int print_status(rlock_client *c, const struct options *o)
{
    struct rlock_owner *owners;
    char **names;
    long long pttl;
    size_t count;
    char held_as[16];
    int rc = rlock_owners_held_as(c, o->name, o->kind, &pttl, &owners, &names,
                                  &count, held_as, sizeof held_as);

    if (rc != RLOCK_OK)
        return fail(rc, "status of '%s' at %s", o->name, o->addr);
    if (pttl == -2)
        printf("unlocked\n");
    else
        printf("locked pttl_ms=%lld\nkind=%s\n", pttl, held_as);
    for (size_t i = 0; i < count; i++)
        printf("owner=%s holds=%lld%s%s\n", owners[i].owner, owners[i].holds,
               names[i] != NULL ? " name=" : "",
               names[i] != NULL ? names[i] : "");
    rlock_owners_free(owners);
    free(names);
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

/* ------------------------------------------------------ the lock itself */

/*
 * A refusal with WRONGTYPE that is a kind clash: NAME is held as a lock
 * of the other format (a plain lock's hash is not a read-write lock's,
 * and rlockd refuses to mix them on one name). Says who holds it and how
 * to ask for it, and returns true; false when the key holds something
 * that is not a lock at all.
 */
static bool kind_clash(rlock_client *c, const struct options *o,
                       const char *label)
{
    struct rlock_owner *owners;
    long long pttl;
    size_t count;
    char held_as[16] = "";

    if (rlock_owners_held_as(c, o->name, RLOCK_LOCK, &pttl, &owners, NULL,
                             &count, held_as, sizeof held_as) != RLOCK_OK)
        return false;
    rlock_owners_free(owners);
    if (!strcmp(held_as, "lock"))
        fprintf(stderr,
                "rlock: %s is held as a plain lock (plain, --fair or "
                "--fenced); a read-write lock cannot share its name: take "
                "it without -s/-x\n",
                label);
    else if (!strcmp(held_as, "read") || !strcmp(held_as, "write"))
        fprintf(stderr,
                "rlock: %s is held as a read-write lock (%s); a plain lock "
                "cannot share its name: take it with -s or -x\n",
                label, held_as);
    else
        return false;
    return true;
}

/* The main thread makes every call: the lock is its. */
static int take_lock(struct keeper *k, const struct options *o)
{
    int rc = rlock_trylock_kind(k->client, k->name, k->kind, o->wait_ms,
                                o->lease_ms, &k->token);

    snprintf(k->owner, sizeof k->owner, "%s:%d", rlock_client_id(k->client),
             (int)gettid());
    return rc;
}

/* Asks rlockd whether we hold the lock, and its TTL: 1 held (*pttl set),
 * 0 not held, or a librlock error. After a failed call the library may
 * have reconnected, possibly to a restarted rlockd that knows nothing of
 * the lock: in watchdog mode a lock that outlived that takes a second,
 * reentrant hold, so that this rlockd renews it. Harmless if it was the
 * same session after all: every hold is released at the end. (A fenced
 * lock's second hold gets a new token, which COMMAND does not see: its
 * own is still larger than every earlier holder's.) */
static int confirm_lock(struct keeper *k, long long *pttl)
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
    int64_t asked = watch_now_ms();
    long long pttl;
    int rc = k->holding->confirm(k, &pttl);

    if (rc == RLOCK_ECONNLOST) {
        k->maybe_new_session = true;
        asked = watch_now_ms();
        rc = k->holding->confirm(k, &pttl);
    }
    if (rc == 1) {
        watch_confirmed(w, asked, pttl);
    } else if (rc == 0) {
        watch_lost(w, "rlockd says it is no longer held by this rlock");
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

static const struct holding lock_holding = {take_lock, confirm_lock,
                                            release_lock};

/* ------------------------------------------------ several plain locks */

/* Every lock or none, in rlockd's one order (MLOCK): two rlocks of
 * overlapping names never deadlock each other. */
static int take_locks(struct keeper *k, const struct options *o)
{
    snprintf(k->owner, sizeof k->owner, "%s:%d", rlock_client_id(k->client),
             (int)gettid());
    return rlock_multilock(k->client, (const char *const *)k->names,
                           (size_t)k->name_count, o->wait_ms, o->lease_ms);
}

/* 1 while every lock is held (*pttl the shortest time to live), 0 when
 * one is not, or a librlock error. After a failed call, in watchdog mode,
 * one more hold of all of them, as confirm_lock() takes of one. */
static int confirm_locks(struct keeper *k, long long *pttl)
{
    long long ttl;
    int rc = 1;

    for (int i = 0; i < k->name_count && rc == 1; i++)
        rc = rlock_is_held(k->client, k->names[i]);
    if (rc == 1 && k->maybe_new_session && k->lease_ms == RLOCK_WATCHDOG) {
        rc = rlock_multilock(k->client, (const char *const *)k->names,
                             (size_t)k->name_count, 0, RLOCK_WATCHDOG);
        k->holds += rc == 1;
    }
    if (rc != 1)
        return rc;
    k->maybe_new_session = false;
    *pttl = -2;
    for (int i = 0; i < k->name_count; i++) {
        if ((rc = rlock_pttl(k->client, k->names[i], &ttl)) != RLOCK_OK)
            return rc;
        if (ttl == -2)
            return 0;
        *pttl = *pttl == -2 || ttl < *pttl ? ttl : *pttl;
    }
    return 1;
}

/* Releases every hold of every lock (MUNLOCK): 1 once released. */
static int release_locks(struct keeper *k)
{
    int rc = RLOCK_OK;

    for (int i = 0; i < k->holds && rc == RLOCK_OK; i++)
        rc = rlock_multiunlock(k->client, (const char *const *)k->names,
                               (size_t)k->name_count);
    return rc == RLOCK_OK ? 1 : rc;
}

static const struct holding multi_holding = {take_locks, confirm_locks,
                                             release_locks};

/* ------------------------------------------------- a semaphore's permit */

/* Creates the semaphore with o->permits permits, as consul lock -n does,
 * unless it exists: then its own number stands. rlockd keeps only the
 * number available (as Redisson does), so a larger limit shows only when
 * more than N are available; a smaller one cannot be told. */
static int create_semaphore(struct keeper *k, const struct options *o)
{
    long long available;
    int rc = rlock_semaphore_set(k->client, k->name, o->permits);

    if (rc != 0)
        return rc < 0 ? rc : RLOCK_OK;
    rc = rlock_semaphore_available(k->client, k->name, &available);
    if (rc == RLOCK_OK && available > o->permits)
        fprintf(stderr,
                "rlock: warning: %s exists with %lld permits available, "
                "more than --permits %lld: its own number applies\n",
                k->label, available, o->permits);
    return rc;
}

/* One permit, the client's (a semaphore's permits are its session's):
 * rlockd's record names its owner CLIENT-ID:0. */
static int take_permit(struct keeper *k, const struct options *o)
{
    int rc = create_semaphore(k, o);

    snprintf(k->owner, sizeof k->owner, "%s:0", rlock_client_id(k->client));
    if (rc != RLOCK_OK)
        return rc;
    return rlock_try_acquire(k->client, k->name, 1, o->wait_ms);
}

/* rlockd renews the permit while rlock's session lives (its watchdog), so
 * it has no time to live the client could know; rlockd says when it was
 * lost (its renewal found it gone, or a resumed session did), and so does
 * librlock when the session was (RLOCK_ELOCKLOST both). A session given
 * back by a restarted rlockd brings the permit with it: nothing to take
 * again, as a lock must be. */
static int confirm_permit(struct keeper *k, long long *pttl)
{
    int rc = rlock_semaphore_held(k->client, k->name);

    *pttl = -1;
    if (rc == RLOCK_ELOCKLOST)
        return 0;
    if (rc == 1)
        k->maybe_new_session = false;
    return rc;
}

static int release_permit(struct keeper *k)
{
    return rlock_release(k->client, k->name, 1);
}

static const struct holding permit_holding = {take_permit, confirm_permit,
                                              release_permit};

/* rlock's exit status once COMMAND (or the hold) has ended and the lock
 * is released. */
static int final_status(struct keeper *k, const struct watch *w, int rc)
{
    if (w->lost)
        return EXIT_LOCK_LOST; /* said so already */
    if (rc == RLOCK_ELOCKLOST || rc == RLOCK_ENOTOWNER) {
        /* Lost after the last check: the end of COMMAND's work may not
         * have been exclusive. */
        fprintf(stderr, "rlock: %s lost before the end: %s\n", k->label,
                rlock_strerror(rc));
        return EXIT_LOCK_LOST;
    }
    if (rc < 0)
        fprintf(stderr,
                "rlock: releasing %s: %s (rlockd releases it when "
                "rlock disconnects, or it expires)\n",
                k->label, rlock_strerror(rc));
    if (WIFSIGNALED(w->wait_status))
        return 128 + WTERMSIG(w->wait_status);
    return WEXITSTATUS(w->wait_status);
}

/* ---------------------------------------------------------- COMMAND */

extern char **environ;

/* COMMAND's environment: rlock's own without lock_variables[], then vars
 * (NULL-terminated "NAME=value" entries). NULL when out of memory; the
 * array is the caller's to free, not the entries. */
static char **command_environment(char *const *vars)
{
    size_t count = 0, kept = 0, added = 0;
    char **env;

    while (environ[count] != NULL)
        count++;
    while (vars[added] != NULL)
        added++;
    env = malloc((count + added + 1) * sizeof *env);
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        bool ours = false;

        for (int v = 0; v < VAR_COUNT; v++) {
            size_t len = strlen(lock_variables[v]);

            ours |= strncmp(environ[i], lock_variables[v], len) == 0 &&
                    environ[i][len] == '=';
        }
        if (!ours)
            env[kept++] = environ[i];
    }
    memcpy(env + kept, vars, (added + 1) * sizeof *env);
    return env;
}

/* Waits for the end, confirming the lock every check interval while it
 * lasts, then releases it; rlock's exit status. */
static int keep_until_end(struct keeper *k, struct watch *w, long long pttl)
{
    long long lease = k->lease_ms != RLOCK_WATCHDOG ? k->lease_ms : pttl;
    int64_t check_ms = lease > 0 ? lease / 3 : MAX_CHECK_MS;
    pthread_t supervisor;
    int status = watch_start(w, &supervisor);

    if (status != 0)
        return status;
    check_ms = check_ms > MAX_CHECK_MS   ? MAX_CHECK_MS
               : check_ms < MIN_CHECK_MS ? MIN_CHECK_MS
                                         : check_ms;
    while (!watch_wait_ended(w, watch_is_lost(w) ? -1 : check_ms))
        check_lock(k, w);
    pthread_join(supervisor, NULL);
    return final_status(k, w, k->holding->release(k));
}

/* RLOCK_NAME=NAME, or the names separated by spaces (cut at size). */
static void names_variable(char *out, size_t size, const struct keeper *k)
{
    size_t len =
        (size_t)snprintf(out, size, "%s=%s", lock_variables[VAR_NAME], k->name);

    for (int i = 1; i < k->name_count && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, " %s", k->names[i]);
}

/* Runs COMMAND under the lock the keeper holds, confirmed at `asked` with
 * pttl ms to live; returns rlock's exit status. */
static int run_command(struct keeper *k, const struct options *o, int64_t asked,
                       long long pttl)
{
    struct child child;
    struct watch w = {.name = k->label,
                      .lease_ms = o->lease_ms,
                      .kill_grace_ms = o->kill_grace_ms,
                      .child = &child,
                      .input_fd = -1};
    char name[8192], owner[160], token[40];
    char *vars[VAR_COUNT + 1] = {name, owner, NULL, NULL}, **env;
    sigset_t mask;
    int status = watch_open(&w, asked, pttl, &mask);

    names_variable(name, sizeof name, k);
    snprintf(owner, sizeof owner, "%s=%s", lock_variables[VAR_OWNER], k->owner);
    snprintf(token, sizeof token, "%s=%lld", lock_variables[VAR_TOKEN],
             k->token);
    vars[VAR_TOKEN] = k->kind == RLOCK_FENCED ? token : NULL;
    env = command_environment(vars);
    if (status == 0 && env == NULL)
        status = fail_sys("malloc");
    if (status == 0)
        status = child_spawn(&(struct child_spec){o->command, env, &mask,
                                                  o->kill_grace_ms, k->label},
                             &child);
    free(env);
    if (status == 0) {
        status = keep_until_end(k, &w, pttl);
        child_finish(&child);
    }
    watch_close(&w);
    return status;
}

/* rlock hold: prints the owner (and the token), then keeps the lock
 * until standard input ends or a signal comes. */
static int run_hold(struct keeper *k, const struct options *o, int64_t asked,
                    long long pttl)
{
    struct watch w = {
        .name = k->label, .lease_ms = o->lease_ms, .input_fd = STDIN_FILENO};
    sigset_t mask;
    int status = watch_open(&w, asked, pttl, &mask);

    if (status == 0) {
        if (k->kind == RLOCK_FENCED)
            printf("%s %lld\n", k->owner, k->token);
        else
            printf("%s\n", k->owner);
        fflush(stdout);
        status = keep_until_end(k, &w, pttl);
    }
    watch_close(&w);
    return status;
}

/* Takes the lock (or permit) and confirms it, then runs COMMAND or holds
 * it. */
static int take(rlock_client *c, const struct options *o, const char *label)
{
    struct keeper k = {.client = c,
                       .holding = o->permits > 0      ? &permit_holding
                                  : o->name_count > 1 ? &multi_holding
                                                      : &lock_holding,
                       .name = o->name,
                       .names = o->names,
                       .name_count = o->name_count,
                       .label = label,
                       .kind = o->kind,
                       .lease_ms = o->lease_ms};
    int64_t asked;
    long long pttl;
    int rc = k.holding->take(&k, o);

    if (rc == RLOCK_EWRONGTYPE && o->permits == 0 && o->name_count == 1 &&
        kind_clash(c, o, label))
        return o->conflict_status;
    if (rc < 0)
        return fail(rc, "%s", label);
    if (rc == 0) {
        if (o->wait_ms == 0)
            fprintf(stderr, "rlock: %s is held elsewhere\n", label);
        else
            fprintf(stderr, "rlock: %s not acquired within %s s\n", label,
                    o->wait_arg);
        return o->conflict_status;
    }
    k.holds = 1;
    asked = watch_now_ms();
    rc = k.holding->confirm(&k, &pttl);
    if (rc < 0)
        return fail(rc, "%s", label);
    if (rc == 0) {
        fprintf(stderr, "rlock: %s lost before it was used\n", label);
        return EXIT_LOCK_LOST;
    }
    if (o->mode == MODE_HOLD)
        return run_hold(&k, o, asked, pttl);
    return run_command(&k, o, asked, pttl);
}

/* How messages name what rlock holds: "lock 'NAME'", "locks 'A' 'B'" or
 * "semaphore 'NAME'". NULL when out of memory; the caller frees it. */
static char *label_of(const struct options *o)
{
    const char *what = o->permits > 0      ? "semaphore"
                       : o->name_count > 1 ? "locks"
                                           : "lock";
    size_t size = strlen(what) + 1, len;
    char *label;

    for (int i = 0; i < o->name_count; i++)
        size += strlen(o->name_count > 1 ? o->names[i] : o->name) + 3;
    if ((label = malloc(size)) == NULL)
        return NULL;
    len = (size_t)snprintf(label, size, "%s", what);
    for (int i = 0; i < o->name_count; i++)
        len += (size_t)snprintf(label + len, size - len, " '%s'",
                                o->name_count > 1 ? o->names[i] : o->name);
    return label;
}

int main(int argc, char **argv)
{
    struct options o;
    rlock_options connect_opts = {.auth_token = getenv("RLOCK_AUTH")};
    rlock_client *c;
    char *label = NULL;
    int err, status = options_parse(argc, argv, &o);

    if (status != 0)
        return status;
    connect_opts.heartbeat_ms = o.heartbeat_ms;
    connect_opts.user = o.user;
    connect_opts.password = o.password;
    if (o.password != NULL) /* the user's, or the default user's */
        connect_opts.auth_token = NULL;
    c = rlock_connect_tls(o.addr, &connect_opts, o.tls ? &o.tls_options : NULL,
                          &err);
    if (c == NULL)
        return fail(err, "rlockd at %s", o.addr);
    if (o.mode == MODE_STATUS)
        status = print_status(c, &o);
    else if (o.mode == MODE_FORCE_UNLOCK)
        status = force_unlock(c, &o);
    else if (o.mode == MODE_LIST)
        status = list_locks(c, &o);
    else if ((label = label_of(&o)) == NULL)
        status = fail_sys("malloc");
    else
        status = take(c, &o, label);
    free(label);
    rlock_close(c);
    return status;
}
