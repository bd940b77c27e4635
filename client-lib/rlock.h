/*
 * rlock.h - librlock, the C client of rlockd: distributed, reentrant locks
 * in the manner of Redisson's RLock.
 *
 *     int err;
 *     rlock_client *c = rlock_connect("127.0.0.1:7379", NULL, &err);
 *     if (c == NULL)
 *         ... rlock_strerror(err) ...
 *     if (rlock_lock(c, "orders", RLOCK_WATCHDOG) == RLOCK_OK) {
 *         ... work under the lock ...
 *         rlock_unlock(c, "orders");
 *     }
 *     rlock_close(c);
 *
 * An rlock_client is one rlockd client: one client-id (by default a random
 * UUID, so each process is one client). A lock is owned by the client-id
 * plus the calling thread's kernel thread id (gettid), so ownership is per
 * thread exactly as in Redisson, and reentrancy is per thread too. A
 * semaphore's permits are owned by the client-id alone (below).
 *
 * Thread safety: every function may be called from any thread. Each thread
 * talks to rlockd over a connection of its own, opened on the thread's
 * first call, so a thread blocked in rlock_lock() never delays another.
 * rlock_close() must not race with calls in other threads. The connection
 * of a thread that exits stays open (and the session with it) until
 * another thread makes its first call on the client, which closes the
 * connections of exited threads, or until rlock_close().
 *
 * Signals: a write to a connection rlockd has closed would raise SIGPIPE;
 * the library blocks SIGPIPE in the calling thread around each command
 * and discards one it caused, so the program needs no handler for it.
 *
 * Errors: functions return a negative enum rlock_error; rlock_strerror()
 * gives its text. Functions that answer a yes/no question return 1 or 0.
 */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility: only what is marked
 * RLOCK_API is exported. */
#if defined(__GNUC__)
#define RLOCK_API __attribute__((visibility("default")))
#else
#define RLOCK_API
#endif

#define RLOCK_VERSION_MAJOR 0
#define RLOCK_VERSION_MINOR 5
#define RLOCK_VERSION_PATCH 0

/* lease_ms: keep the lock alive with rlockd's watchdog until unlocked. */
#define RLOCK_WATCHDOG (-1LL)
/* wait_ms: wait as long as it takes. */
#define RLOCK_WAIT_FOREVER (-1LL)

enum rlock_error {
    RLOCK_OK = 0,
    /* UNLOCK of a lock this thread does not hold, or a release of more
     * permits than the client holds (rlockd: -NOTOWNER). */
    RLOCK_ENOTOWNER = -1,
    /* This thread held the lock (the client the permits) but it is gone:
     * its lease expired, it was force-unlocked (the permits' record was
     * deleted), or rlockd (or the connection to it) went away while it
     * was held. Work done under it is suspect. */
    RLOCK_ELOCKLOST = -2,
    /* rlockd cannot be reached: connect refused or timed out. */
    RLOCK_EDAEMON = -3,
    /* rlockd is up but Redis is not (rlockd: -UNAVAILABLE). Retry later. */
    RLOCK_EREDIS = -4,
    /* No reply within the command timeout (plus the WAIT of a TRYLOCK);
     * the connection was dropped, as for RLOCK_ECONNLOST, and the outcome
     * of the command is unknown. */
    RLOCK_ETIMEOUT = -5,
    /* The connection to rlockd broke during the call; the outcome of the
     * command is unknown. The next call by this thread reconnects.
     * Holds that may have gone with the connection are marked: if it was
     * the client's last open connection, rlockd ended the session and
     * every hold of the client is marked; otherwise the session goes on
     * and only the calling thread's holds are. The same applies after
     * RLOCK_ETIMEOUT. A later rlock_unlock() of a marked hold that rlockd
     * no longer knows reports RLOCK_ELOCKLOST, not RLOCK_ENOTOWNER. */
    RLOCK_ECONNLOST = -6,
    /* A bad argument (NULL, empty or over-long name, out-of-range time),
     * or a request rlockd refused (-ERR): malformed, a name reserved for
     * rlockd's own records, a count that would leave its range. */
    RLOCK_EINVAL = -7,
    /* A limit of rlockd refused the request (-LIMIT). */
    RLOCK_ELIMIT = -8,
    /* rlockd is shutting down (-SHUTDOWN). */
    RLOCK_ESHUTDOWN = -9,
    /* rlockd wants a login and none was given (-NOAUTH), or refused the
     * one given (a wrong user, password or auth token): set
     * rlock_options.user and .password, or .auth_token. */
    RLOCK_EAUTH = -10,
    /* Out of memory, or a system call failed. */
    RLOCK_ESYSTEM = -11,
    /* rlockd sent a reply this library does not understand. */
    RLOCK_EPROTOCOL = -12,
    /* The name's key in Redis holds something that is not a lock
     * (-WRONGTYPE): another program's data; or a record rlockd keeps of
     * it (a semaphore's holders) holds what rlockd did not write. Nothing
     * was changed. */
    RLOCK_EWRONGTYPE = -13,
    /* No Redis replica acknowledged the acquire in time ([lock]
     * sync_replicas): it was undone; the lock is not held. */
    RLOCK_ENOREPLICAS = -14,
    /* The user logged in as may not run this command, or not on this
     * name (-NOPERM: its [user NAME] commands and names rules in rlockd's
     * configuration). */
    RLOCK_ENOPERM = -15,
    /* The TLS handshake with rlockd failed: its certificate did not
     * verify (unknown CA, expired, another name), or it refused ours. */
    RLOCK_ETLS = -16,
    /* rlockd refused the wait (-DEADLOCK): it would have closed a cycle
     * of its clients' threads waiting for each other. Nothing was taken;
     * give up a lock this thread holds and try again. */
    RLOCK_EDEADLOCK = -17,
};

typedef struct rlock_client rlock_client;

/* Options for rlock_connect(). Zero/NULL fields take the defaults, so
 * `rlock_options o = {0};` is a valid start. */
typedef struct rlock_options {
    const char *client_id;  /* NULL: a random UUID (1-64 of A-Za-z0-9._-) */
    const char *auth_token; /* NULL: none; sent with AUTH on each connect */
    int connect_timeout_ms; /* 0: 2000 */
    /* Longest wait for a reply, beyond a TRYLOCK's own WAIT; 0: 10000.
     * rlock_lock() and a TRYLOCK with RLOCK_WAIT_FOREVER have none. */
    int command_timeout_ms;
    /* CLIENT HEARTBEAT: a thread of the client pings rlockd on a
     * connection of its own every third of this, so that a hung process
     * (stopped, deadlocked as a whole) loses its locks after it, and a
     * restarted rlockd gets the session back at once. 0: 10000;
     * RLOCK_NO_HEARTBEAT: none; else 100 to 86400000, and within rlockd's
     * [server] min_heartbeat_ms..max_heartbeat_ms (by default the same),
     * or rlock_connect() fails with RLOCK_EINVAL. */
    int heartbeat_ms;
    /* A login as a configured user of rlockd ([user NAME]): AUTH user
     * password on each connect. NULL user: the password alone logs in as
     * the default user (as auth_token does); not both with auth_token. */
    const char *user;
    const char *password;
    /* CLIENT SETNAME on each connection, which rlockd's CLIENT LIST,
     * OWNERS ... NAMES and its log show. NULL: "<host>/<program>/<pid>";
     * "": none. At most 128 bytes, no spaces or newlines. */
    const char *client_name;
} rlock_options;

/* TLS to rlockd's [server] tls_listen, for rlock_connect_tls(). rlockd's
 * certificate is verified against ca_file (NULL: the system's trust
 * store) and for server_name (NULL: the host of the address), which is
 * also sent as SNI when it is not an IP address. cert_file and key_file
 * (PEM): a client certificate, for rlockd's tls_client_certs and a
 * [user] tls_subject; NULL: none. A struct of its own, not fields of
 * rlock_options, so that programs built against an older rlock.h keep
 * working with this library. */
typedef struct rlock_tls_options {
    const char *ca_file;
    const char *cert_file;
    const char *key_file;
    const char *server_name;
} rlock_tls_options;

#define RLOCK_NO_HEARTBEAT (-1)

/* Opens the calling thread's connection to rlockd at addr ("host:port",
 * "[ipv6]:port" or "unix:/path") and returns the client, or NULL with *err
 * (if err is not NULL) set to the reason: RLOCK_EINVAL (a bad address,
 * client_id or negative timeout, or a heartbeat_ms that rlockd refuses),
 * RLOCK_EDAEMON (nothing answers at addr), RLOCK_EAUTH, ... opts may be
 * NULL. */
RLOCK_API rlock_client *rlock_connect(const char *addr,
                                      const rlock_options *opts, int *err);
/* rlock_connect() over TLS (tls NULL: without, as rlock_connect()), for
 * a "host:port" addr only. Besides rlock_connect()'s errors:
 * RLOCK_EINVAL for a file that cannot be loaded or a unix: addr, and
 * RLOCK_ETLS when the handshake fails (rlockd's certificate not verified,
 * or ours refused). */
RLOCK_API rlock_client *rlock_connect_tls(const char *addr,
                                          const rlock_options *opts,
                                          const rlock_tls_options *tls,
                                          int *err);

/* Closes every connection of the client and frees it. The session ends in
 * rlockd: locks still held are released or expire per its on_disconnect. */
RLOCK_API void rlock_close(rlock_client *c);

/* The client-id this client uses (valid until rlock_close); NULL if c is
 * NULL. */
RLOCK_API const char *rlock_client_id(const rlock_client *c);

/*
 * The kinds of lock, Redisson's family (rlockd's docs/protocol.md, section
 * 6a). Each _kind function below names the lock by its name and its kind:
 * a hold taken with a kind is released, queried and force-unlocked with
 * the same kind. The functions without _kind are the RLOCK_LOCK case;
 * the queries of RLOCK_LOCK (no kind word) report the lock whatever its
 * kind, a read-write lock too. A plain lock and a read-write lock never
 * share a name at once: taking one where the other is held fails with
 * RLOCK_EWRONGTYPE (rlock_owners_held_as() names the holder's kind).
 */
enum rlock_kind {
    /* Redisson's RLock: one holder at a time, waiters served in no
     * particular order across clients. */
    RLOCK_LOCK = 0,
    /* RFairLock: one holder; waiters are served in the order they asked,
     * across every client of the name. */
    RLOCK_FAIR,
    /* RReadWriteLock's read side: any number of holders at once, while
     * nobody holds the write side. A READ holder never gets WRITE (its
     * attempt fails with RLOCK_EINVAL). */
    RLOCK_READ,
    /* RReadWriteLock's write side: one holder, and no READ holders but
     * its own. A name is either a read-write lock or another kind: the
     * other's acquisitions fail with RLOCK_EWRONGTYPE while one is held. */
    RLOCK_WRITE,
    /* RFencedLock: RLOCK_LOCK, and each acquisition (reentrant ones too)
     * gets a fencing token, larger than every earlier one of the name. */
    RLOCK_FENCED,
};

/* Acquires the lock for the calling thread, waiting as long as it takes.
 * lease_ms > 0: the lock expires lease_ms after acquisition; RLOCK_WATCHDOG:
 * rlockd keeps it alive until unlocked. Reentrant. RLOCK_OK or an error. */
RLOCK_API int rlock_lock(rlock_client *c, const char *name, long long lease_ms);

/* As rlock_lock, waiting at most wait_ms (0: one attempt; RLOCK_WAIT_FOREVER:
 * no limit). 1 held, 0 not held when the wait ran out, or an error. */
RLOCK_API int rlock_trylock(rlock_client *c, const char *name,
                            long long wait_ms, long long lease_ms);

/* Releases one hold of the calling thread. 1 released (count reached 0),
 * 0 still held (reentrant), or an error (RLOCK_ENOTOWNER,
 * RLOCK_ELOCKLOST, ...). */
RLOCK_API int rlock_unlock(rlock_client *c, const char *name);

/* Deletes the lock whoever holds it. 1 it existed, 0 it did not, or an
 * error. */
RLOCK_API int rlock_force_unlock(rlock_client *c, const char *name);

/* 1 if anyone holds the lock, 0 if not, or an error. */
RLOCK_API int rlock_is_locked(rlock_client *c, const char *name);

/* 1 if the calling thread holds the lock, 0 if not, or an error. */
RLOCK_API int rlock_is_held(rlock_client *c, const char *name);

/* The calling thread's hold count (0 if not held), or an error. */
RLOCK_API long long rlock_hold_count(rlock_client *c, const char *name);

/* Stores in *ttl_ms the lock's remaining time to live in ms, -2 if there
 * is no such lock (or its key holds something that is not a lock).
 * RLOCK_OK or an error. */
RLOCK_API int rlock_pttl(rlock_client *c, const char *name, long long *ttl_ms);

/* rlock_lock() of a lock of that kind. token may be NULL; otherwise it
 * receives the fencing token of an RLOCK_FENCED acquisition, and is set to
 * 0 in every other case (another kind, or an error). RLOCK_OK or an error;
 * RLOCK_EINVAL for a kind not in enum rlock_kind (nothing is sent). */
RLOCK_API int rlock_lock_kind(rlock_client *c, const char *name,
                              enum rlock_kind kind, long long lease_ms,
                              long long *token);

/* rlock_trylock() of a lock of that kind: 1 held, 0 not held when the
 * wait ran out, or an error. *token (token may be NULL) as for
 * rlock_lock_kind(): the fencing token when an RLOCK_FENCED lock was
 * acquired, else 0. */
RLOCK_API int rlock_trylock_kind(rlock_client *c, const char *name,
                                 enum rlock_kind kind, long long wait_ms,
                                 long long lease_ms, long long *token);

/* rlock_unlock() of a hold taken with that kind: 1 released, 0 still held
 * (reentrant), or an error. A writer that also took READ releases each
 * side with its own kind. */
RLOCK_API int rlock_unlock_kind(rlock_client *c, const char *name,
                                enum rlock_kind kind);

/*
 * Takes every named lock (plain RLocks, as rlock_lock() takes each) for
 * the calling thread, or none: rlockd's MLOCK, Redisson's MultiLock. They
 * are taken one at a time in one order (by key), whatever order names
 * gives, so that two multi-locks never deadlock each other; when one is
 * not granted within wait_ms (0: one try of each; RLOCK_WAIT_FOREVER: no
 * limit), those already taken are given back. A name given twice is
 * taken once. lease_ms as rlock_lock()'s (with a wait, every lease ends
 * at once, wait_ms + lease_ms after the call). 1 all held, 0 the wait ran
 * out (none held), or an error (none held): RLOCK_EINVAL (no name, an
 * empty one, a bad wait or lease; nothing sent), RLOCK_ELIMIT (more names
 * than rlockd's [lock] max_multilock_names), RLOCK_ENOPERM, RLOCK_EWRONGTYPE,
 * RLOCK_ELOCKLOST, ... Each is released with rlock_unlock() or, all
 * together, rlock_multiunlock().
 */
RLOCK_API int rlock_multilock(rlock_client *c, const char *const *names,
                              size_t count, long long wait_ms,
                              long long lease_ms);
/* Releases one hold of each named lock of the calling thread (MUNLOCK),
 * every one whatever the others answer: RLOCK_OK, or the first error in
 * key order (RLOCK_ENOTOWNER for a name not held, RLOCK_ELOCKLOST). */
RLOCK_API int rlock_multiunlock(rlock_client *c, const char *const *names,
                                size_t count);

/* rlock_force_unlock() of a lock of that kind (RLOCK_READ deletes the
 * read-write lock only while it is read-locked, RLOCK_WRITE only while it
 * is write-locked): 1 it existed, 0 it did not, or an error. */
RLOCK_API int rlock_force_unlock_kind(rlock_client *c, const char *name,
                                      enum rlock_kind kind);

/* 1 if anyone holds the lock of that kind (RLOCK_READ: read holds, a
 * writer's own among them; RLOCK_WRITE: the write hold), 0 if not, or an
 * error. */
RLOCK_API int rlock_is_locked_kind(rlock_client *c, const char *name,
                                   enum rlock_kind kind);

/* 1 if the calling thread holds the lock of that kind, 0 if not, or an
 * error. */
RLOCK_API int rlock_is_held_kind(rlock_client *c, const char *name,
                                 enum rlock_kind kind);

/* The calling thread's hold count of the lock of that kind (0 if not
 * held), or an error. */
RLOCK_API long long rlock_hold_count_kind(rlock_client *c, const char *name,
                                          enum rlock_kind kind);

/* rlock_pttl() of the lock of that kind (a read-write lock's key is not a
 * plain lock's: its time to live is asked with RLOCK_READ or RLOCK_WRITE).
 * RLOCK_OK or an error. */
RLOCK_API int rlock_pttl_kind(rlock_client *c, const char *name,
                              enum rlock_kind kind, long long *ttl_ms);

/* Stores in *token the latest fencing token of the RLOCK_FENCED lock name,
 * 0 if it was never taken. RLOCK_OK or an error. */
RLOCK_API int rlock_token(rlock_client *c, const char *name, long long *token);

/* One owner of a lock, as rlock_owners_kind() lists them. */
struct rlock_owner {
    /* Its field in Redis: "<client-id>:<thread-id>" for an rlockd client
     * (a Java client's "<uuid>:<thread>"; ":write" ends a writer's). */
    char *owner;
    long long holds; /* its hold count */
};

/* Who holds the lock of that kind (rlockd's OWNERS): *pttl_ms its time to
 * live (-1: none; -2: not locked, and then no owner), *owners an array of
 * *count owners (NULL when there are none), freed with
 * rlock_owners_free(). RLOCK_OK or an error. */
RLOCK_API int rlock_owners_kind(rlock_client *c, const char *name,
                                enum rlock_kind kind, long long *pttl_ms,
                                struct rlock_owner **owners, size_t *count);
RLOCK_API void rlock_owners_free(struct rlock_owner *owners);
/* As rlock_owners_kind() (and, when names is not NULL, as
 * rlock_owners_named_kind()), and the kind rlockd found the lock held as,
 * in held_as (size bytes; 6 hold every answer; size 0: not wanted):
 * "lock" (Redisson's RLock format: a plain, fair or fenced lock), "read"
 * or "write" (a read-write lock in that mode) or "none". Of kind
 * RLOCK_LOCK (no kind word), it reports the lock whatever its kind. An
 * older rlockd, whose OWNERS answers no kind: "". */
RLOCK_API int rlock_owners_held_as(rlock_client *c, const char *name,
                                   enum rlock_kind kind, long long *pttl_ms,
                                   struct rlock_owner **owners, char ***names,
                                   size_t *count, char *held_as, size_t size);

/* rlock_owners_kind(), and in *names (NULL when there is no owner) the
 * name of each owner's client, names[i] that of (*owners)[i], where this
 * rlockd knows one (a connection of that client is open on it with a
 * name, as rlock_options.client_name sets), else NULL (rlockd's OWNERS
 * ... WITHNAMES). *names is freed with free(). RLOCK_OK or an error. */
RLOCK_API int rlock_owners_named_kind(rlock_client *c, const char *name,
                                      enum rlock_kind kind, long long *pttl_ms,
                                      struct rlock_owner **owners,
                                      char ***names, size_t *count);

/* One owner of a lock in rlock_locks(): a holder or a waiter. */
struct rlock_lock_owner {
    char *owner;       /* its field: "<client-id>:<thread-id>"... */
    char *client_id;   /* NULL: none known */
    char *peer;        /* of one of its connections; NULL: none open */
    char *client_name; /* NULL: none */
    long long count;   /* a holder's count (permits); 0 for a waiter */
    long long ms;      /* held for, or waiting for */
    char *asked;       /* a waiter's command ("TRYLOCK WAIT 5000"); NULL */
};

/* One lock as rlockd's LOCKS shows it. */
struct rlock_lock_info {
    char *name;
    char *kind;       /* "lock", "fair", "read", "semaphore"... */
    long long ttl_ms; /* the lease rlockd keeps its holds at; -1 none */
    size_t holder_count;
    struct rlock_lock_owner *holders;
    size_t waiter_count; /* in queue order */
    struct rlock_lock_owner *waiters;
};

/* The locks rlockd holds or waits on for its clients, whose names match
 * the glob match (NULL: all) and the user's names, the longest wait
 * first (rlockd's LOCKS): from offset, count at most (0: rlockd's
 * default, 100; at most its [server] locks_max_count). *locks (NULL when
 * none) has *n, freed with rlock_locks_free(). RLOCK_OK or an error. */
RLOCK_API int rlock_locks(rlock_client *c, const char *match, size_t count,
                          size_t offset, struct rlock_lock_info **locks,
                          size_t *n);
RLOCK_API void rlock_locks_free(struct rlock_lock_info *locks, size_t n);

/*
 * Semaphores and the count-down latch: Redisson's RSemaphore,
 * RPermitExpirableSemaphore and RCountDownLatch, in their formats, so
 * that Java services share them (rlockd's docs/protocol.md, section 6b).
 *
 * A semaphore's permits belong to the client (its client-id's session),
 * not to a thread: any thread of the client may release permits another
 * took, and rlockd gives back those the client still holds when it
 * closes, or its process dies. As for locks, the library keeps a record
 * of the permits the client took: when a connection loss may have taken
 * them (rlockd ended the session), or rlockd says they came back while
 * held, the next release, or rlock_semaphore_held(), reports
 * RLOCK_ELOCKLOST. Permits and counts are 0 to 2147483647 (Java's int).
 */

/* Room for an expirable permit's id: 32 hex digits and a NUL. */
#define RLOCK_PERMIT_ID_SIZE 33

/* Gives the semaphore `permits` permits (0 to 2147483647) if it has no
 * count yet (trySetPermits): 1 set, 0 it had one (left as it is), or an
 * error. */
RLOCK_API int rlock_semaphore_set(rlock_client *c, const char *name,
                                  long long permits);

/* Adds delta (-2147483647 to 2147483647) to the permits available
 * (addPermits) and stores their number now in *available (may be NULL).
 * RLOCK_OK or an error: RLOCK_EINVAL, nothing changed, when fewer than 0
 * would be available, or more than 2147483647 available and held. */
RLOCK_API int rlock_semaphore_add(rlock_client *c, const char *name,
                                  long long delta, long long *available);

/* Stores the number of permits available now in *available (0 for a
 * semaphore that does not exist). RLOCK_OK or an error. */
RLOCK_API int rlock_semaphore_available(rlock_client *c, const char *name,
                                        long long *available);

/* Takes `permits` permits (1 to 2147483647) for the client, waiting as
 * long as it takes. RLOCK_OK or an error; RLOCK_ELOCKLOST (once) when
 * permits the client held of it were lost. */
RLOCK_API int rlock_acquire(rlock_client *c, const char *name,
                            long long permits);

/* As rlock_acquire, waiting at most wait_ms (0: one attempt;
 * RLOCK_WAIT_FOREVER: no limit). 1 taken, 0 not taken when the wait ran
 * out, or an error. */
RLOCK_API int rlock_try_acquire(rlock_client *c, const char *name,
                                long long permits, long long wait_ms);

/* Gives back `permits` permits the client holds (taken by any of its
 * threads). 1 it holds none of the semaphore now, 0 it holds some still,
 * or an error: RLOCK_ENOTOWNER when that is more than it holds (nothing
 * is given back); RLOCK_ELOCKLOST when the permits it took are gone. */
RLOCK_API int rlock_release(rlock_client *c, const char *name,
                            long long permits);

/* Whether the client still holds the permits it took of the semaphore:
 * 1 rlockd has them, 0 it took none through this client (or gave them
 * back: nothing is sent), RLOCK_ELOCKLOST they came back while held (and
 * the record forgets them), or an error. Nothing changes in rlockd. */
RLOCK_API int rlock_semaphore_held(rlock_client *c, const char *name);

/* Takes a permit of the expirable semaphore (RPermitExpirableSemaphore),
 * waiting at most wait_ms (0: one attempt; RLOCK_WAIT_FOREVER: no limit):
 * 1 with its id in id (32 lower-case hex digits, as Java shows them), 0
 * not taken when the wait ran out (id ""), or an error. lease_ms > 0:
 * the permit comes back lease_ms after it was taken; RLOCK_WATCHDOG:
 * rlockd renews it while the client lives. */
RLOCK_API int rlock_acquire_expirable(rlock_client *c, const char *name,
                                      long long wait_ms, long long lease_ms,
                                      char id[RLOCK_PERMIT_ID_SIZE]);

/* Gives back the expirable permit id (any client may, as in Redisson).
 * RLOCK_OK, or an error: RLOCK_ELOCKLOST when this client took it and it
 * is gone (its lease ran out, or it went with a session), RLOCK_ENOTOWNER
 * when there is no such permit. */
RLOCK_API int rlock_release_expirable(rlock_client *c, const char *name,
                                      const char *id);

/* Sets the latch's count (0 to 2147483647) if it has none (trySetCount):
 * 1 set, 0 it had one, or an error. */
RLOCK_API int rlock_latch_set(rlock_client *c, const char *name,
                              long long count);

/* Counts the latch down by one (countDown) and stores the count left in
 * *left (may be NULL); at 0 the latch opens. RLOCK_OK or an error. */
RLOCK_API int rlock_count_down(rlock_client *c, const char *name,
                               long long *left);

/* Stores the latch's count in *count (0: open, or never set). RLOCK_OK
 * or an error. */
RLOCK_API int rlock_latch_count(rlock_client *c, const char *name,
                                long long *count);

/* Waits until the latch's count is zero, at most wait_ms
 * (RLOCK_WAIT_FOREVER: no limit; 0: no wait): 1 open, 0 the wait ran
 * out, or an error. */
RLOCK_API int rlock_await(rlock_client *c, const char *name, long long wait_ms);

/* The text of an enum rlock_error. Never NULL. */
RLOCK_API const char *rlock_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
