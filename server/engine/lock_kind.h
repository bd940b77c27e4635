/*
 * lock_kind.h - what differs between lock kinds, as one row each.
 *
 * Owns the shape of a kind: for each operation the engine performs (take,
 * give back, force free, free an owner that left, the queries), the
 * script or command that does it, how its Redis call is built and what
 * its reply means; the kind's channel naming; what a message on that
 * channel means (how many waiters it wakes); and how its holds are
 * renewed. The engine's logic (owners, holds, waiters, leases) is the same
 * for every kind and reads only these rows.
 *
 * The rows are written with Redisson's whole family in mind (the classes under
 * redisson/src/main/java/org/redisson/): RLock, the fenced lock (RLock plus a
 * token counter) and the fair lock (RLock's hash plus a queue, a channel per
 * waiter, and only the queue's head signalled) share RLock's hash and are the
 * rows of kind_rlock.c; the read-write lock keeps two modes on one hash and is
 * two rows, READ and WRITE, in kind_rwlock.c (a write unlock wakes every
 * waiter: on_message returns LOCK_KIND_WAKE_ALL). The semaphores and the
 * count-down latch (kind_semaphore.c) hold permits, or nothing, rather than a
 * reentrant count (enum lock_kind_holds), and a message carries a permit count,
 * which is how many waiters it wakes. Each kind is one row and its scripts,
 * plus its entry in lock_kinds[].
 */
#ifndef RLOCKD_LOCK_KIND_H
#define RLOCKD_LOCK_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "buffer.h"

enum lock_op {
    LOCK_OP_ACQUIRE,
    LOCK_OP_RELEASE,
    LOCK_OP_FORCE_RELEASE,
    LOCK_OP_RELEASE_OWNER, /* free whatever the count: the owner left */
    LOCK_OP_SETTLE,        /* set the owner's count (0: free) after a lost
                              reply */
    LOCK_OP_IS_LOCKED,
    LOCK_OP_IS_HELD,
    LOCK_OP_HOLD_COUNT,
    LOCK_OP_PTTL,
    /* every owner: the reply is {pttl, field, count, field, count...},
     * {-2} for no lock, whatever the kind */
    LOCK_OP_OWNERS,
    /* a fair waiter that gives up leaves the queue in Redis; NULL build:
     * the kind has no queue there */
    LOCK_OP_LEAVE_QUEUE,
    LOCK_OP_TOKEN, /* the latest fencing token; NULL build: no tokens */
    /* a count's: set it if there is none (1, or 0: there is one), add
     * amount to it (the new value), read it; NULL build: none */
    LOCK_OP_TRY_SET,
    LOCK_OP_ADD,
    LOCK_OP_AVAILABLE,
    LOCK_OP_COUNT
};

/* What an operation's reply means to the engine. */
enum lock_outcome {
    OUTCOME_GRANTED,     /* acquired (also reentrantly); value: the fencing
                            token of a kind with tokens */
    OUTCOME_REFUSED,     /* held by another; value: its PTTL, < 0 unknown */
    OUTCOME_NOT_OWNER,   /* release by an owner Redis does not know, or a
                            reentrant acquire whose hold is gone */
    OUTCOME_DECREMENTED, /* release of a reentrant hold: still held */
    OUTCOME_RELEASED,    /* freed (and the channel told) */
    OUTCOME_VALUE,       /* a query's answer, or 1/0; in value */
    OUTCOME_WRONG_TYPE,  /* the key holds something that is not this lock */
    OUTCOME_RANGE,       /* a count's add refused: value, the permits it
                            would make, outside 0 to 2147483647 */
    OUTCOME_BAD_REPLY,   /* not a reply this operation can give */
};

/* Keys a kind keeps besides the lock's own (the fair lock's queue and
 * deadlines, the fenced lock's token, a semaphore's owners, their
 * deadlines and the expirable permits). */
#define LOCK_KIND_MAX_KEYS 3

/* How a kind names a channel or one of its keys from the lock's name, as
 * Redisson does, so that each stays in the name's hash slot (but the
 * latch's channel, as Redisson's). */
enum lock_kind_naming {
    /* "<affix>:{<name>}", or "<affix>:<name>" when the name has a '{' of
     * its own (Redisson's prefixName) */
    NAMED_PREFIX,
    /* "{<name>}:<affix>", or "<name>:<affix>" (suffixName) */
    NAMED_SUFFIX,
    /* "<affix>{<name>}", always (the count-down latch's channel) */
    NAMED_BRACED,
};

struct lock_kind_name {
    const char *affix; /* NULL: no such key */
    enum lock_kind_naming how;
    /* rlockd's own record (NULL: Redisson's key), as the log and a
     * refusal name it: no lock name may reach it (record_keys.h) */
    const char *record;
};

/* What the row needs to build a call. */
struct lock_call_args {
    const char *name;
    size_t name_len;
    const char *channel;
    size_t channel_len;
    const char *const *keys; /* the kind's key_prefix[] keys of the lock */
    const size_t *key_len;
    const char *field; /* "<client-id>:<thread-id>" */
    size_t field_len;
    /* acquire, release: the hold's lease; settle: 0, for a settle sets a
     * count and never extends a hold's time to live */
    int64_t lease_ms;
    /* acquire, release: the count this daemon knows the owner holds (0: a
     * new hold; none known); settle: the count to set */
    int64_t count;
    /* acquire, release: how much (1 for a lock; a semaphore's permits);
     * LOCK_OP_TRY_SET, LOCK_OP_ADD: the value */
    int64_t amount;
    /* struct backend's publish: the last argument of a script that
     * publishes */
    const char *publish;
    /* acquire of a kind with a queue in Redis: whether a refused owner is
     * queued there (it waits), and the wait its place is kept for */
    bool enqueue;
    int64_t queue_wait_ms;
    /* acquire and place renewal of a kind with a queue in Redis: how long
     * a place of this daemon's waiter is kept unless renewed (and the
     * renewal's queue_wait_ms is the place's wait) */
    int64_t place_ms;
    /* acquire of a kind with tokens: the highest this daemon handed out
     * for the name (0: none remembered); the token is above it */
    int64_t token_floor;
};

/* A call under construction, with room for its arguments and numbers. */
#define LOCK_KIND_MAX_ARGS 12
struct lock_kind_call {
    struct backend_script *script; /* NULL: a plain command */
    int nkeys;
    int argc;
    const char *argv[LOCK_KIND_MAX_ARGS];
    size_t argv_len[LOCK_KIND_MAX_ARGS];
    char number[4][FORMAT_INT_MAX];
};

struct lock_kind_op {
    void (*build)(const struct lock_call_args *a, struct lock_kind_call *call);
    enum lock_outcome (*read)(const struct backend_value *reply,
                              int64_t *value);
};

/* Most bytes a channel or key name adds to the lock name: its prefix, the
 * ":{...}" around the name (and a waiter's ":" before its field). */
#define LOCK_KIND_NAME_EXTRA 64

/* What a script's WRONGTYPE error says next when one of rlockd's own
 * records holds what rlockd did not write: "<words>: <key> is <what>". */
#define LOCK_KIND_FOREIGN "not an rlockd record"

/* Waiters a message may wake: all of them. */
#define LOCK_KIND_WAKE_ALL ((size_t)-1)

/*
 * Renewal of many holds in one call. Holds whose keys share a key group
 * are renewed together: add appends one hold's keys and arguments (a
 * call is KEYS of every hold, then ARGV of every hold, in order), and
 * renewed reads that hold's element of the reply array.
 */
/* Room for the numbers of one hold's renewal arguments: two. */
#define LOCK_KIND_RENEW_NUMBERS (2 * FORMAT_INT_MAX)

struct lock_kind_renewal {
    struct backend_script *script;
    int keys_per_hold;
    int args_per_hold;
    /* Writes the hold's keys to keys[], its arguments to args[]; numbers
     * it formats go to number (LOCK_KIND_RENEW_NUMBERS bytes, the hold's
     * own). */
    void (*add)(const struct lock_call_args *a, const char **keys,
                size_t *key_len, const char **args, size_t *arg_len,
                char *number);
    /* 1 renewed, 0 the hold is gone. */
    int (*renewed)(const struct backend_value *element);
};

/* What an owner holds of a kind. */
enum lock_kind_holds {
    /* a lock: each acquire adds one to the owner's count, each release
     * takes one; the owner is a session's thread */
    HOLDS_REENTRANT,
    /* a semaphore's permits: each acquire adds its amount, each release
     * takes its amount back; the owner is the session (thread-id 0) */
    HOLDS_PERMITS,
    /* an expirable semaphore's permits: each acquire is a hold of its
     * own, named by its permit id (the owner field), which releases it */
    HOLDS_PERMIT_IDS,
    /* nothing: a grant ends a wait (the count-down latch's AWAIT) */
    HOLDS_NOTHING,
};

struct lock_kind {
    const char *name; /* in the session record, and the log */
    const char *word; /* the protocol's kind word; "" for RLock */
    /* The channel waiters listen on, and the kind's other keys
     * (NULL-padded). */
    struct lock_kind_name channel;
    struct lock_kind_name keys[LOCK_KIND_MAX_KEYS];
    /* Each waiter listens on "<channel>:<its owner field>" (the fair
     * lock signals only its queue's head), not all on the channel. */
    bool channel_per_waiter;
    /* Added to "<client-id>:<thread-id>" to make the owner's field (a
     * write hold's ":write"). */
    const char *field_suffix;
    /* Holds are shared (readers): once one waiter is granted, the next
     * asks at once, rather than wait for a release. */
    bool shared;
    /* Waiting acquires of this kind queue behind this daemon's waiters of
     * the same name of that kind without asking Redis, unless the owner
     * holds the lock already (readers behind a waiting writer). */
    const struct lock_kind *yields_to;
    /* The owner may not acquire this kind while it holds that one of the
     * same name (a read hold is never upgraded to a write one). */
    const struct lock_kind *not_while_holding;
    /* Its holds are fields of a hash shaped as RLock's, as those of every
     * other kind so marked (the plain, fair and fenced locks): an owner
     * holds a name as one of them at a time, and names that one. */
    bool rlock_hash;
    enum lock_kind_holds holds;
    /* How many waiters, from the head, a message's payload wakes. */
    size_t (*on_message)(const char *payload, size_t len);
    /* Its count of acquisitions in INFO; NULL: only the total. */
    uint64_t *acquired;
    struct lock_kind_op ops[LOCK_OP_COUNT];
    struct lock_kind_renewal renewal;
    /* The renewal of this daemon's waiters' places in the kind's queue
     * in Redis (the fair lock's; the watchdog's, with lease_ms the place's
     * time to live); script NULL: the kind has no queue there. */
    struct lock_kind_renewal place_renewal;
    /* Every script above, NULL-terminated, for the backend to load. */
    struct backend_script *const *scripts;
};

/*
 * Which ops a kind's row must have, and which it may leave out, as one
 * definition the engine and tests/unit/test_lock_kinds.c share.
 *
 * Required are the ops the engine sends on its own, whatever a client
 * asks: every kind's ACQUIRE; and, for a kind whose grants hold something
 * in Redis (holds other than HOLDS_NOTHING), RELEASE, RELEASE_OWNER (the
 * session's end) and SETTLE (after a lost reply), and its renewal; and
 * HOLD_COUNT for a kind named in a session record (lock_kind_recorded),
 * which a resumed session asks. A kind that holds nothing is never
 * settled, released or renewed: a latch's AWAIT leaves nothing behind.
 *
 * Every other op is optional, and the engine looks before it uses one: a
 * request for an op the row lacks is refused unsent (lock_engine_start);
 * LOCK_OP_LEAVE_QUEUE and LOCK_OP_TOKEN are looked for, their presence
 * being the kind's queue in Redis and its tokens. A row has a build for
 * an op exactly when it has a read; and the engine's call_send refuses
 * an op with no build (a failed call, logged) rather than call NULL.
 */
bool lock_kind_op_required(const struct lock_kind *kind, enum lock_op op);
/* Whether the kind's holds are named in a session record, so that a later
 * rlockd can give them back: a lock's and a plain semaphore's (an
 * expirable permit expires within its lease; a latch's wait holds
 * nothing). */
bool lock_kind_recorded(const struct lock_kind *kind);
/* The kind's place in lock_kinds[]. */
unsigned lock_kind_index(const struct lock_kind *kind);
/* The op's name, for the log and the tests. */
extern const char *const lock_op_names[LOCK_OP_COUNT];

/* The replies every kind's scripts give alike (lock_kind.c): an acquire's
 * nil (granted) or PTTL (refused), ... */
enum lock_outcome lock_kind_read_acquire(const struct backend_value *reply,
                                         int64_t *value);
enum lock_outcome lock_kind_read_release(const struct backend_value *reply,
                                         int64_t *value);
enum lock_outcome lock_kind_read_freed(const struct backend_value *reply,
                                       int64_t *value);
enum lock_outcome lock_kind_read_locked(const struct backend_value *reply,
                                        int64_t *value);
enum lock_outcome lock_kind_read_held(const struct backend_value *reply,
                                      int64_t *value);
enum lock_outcome lock_kind_read_count(const struct backend_value *reply,
                                       int64_t *value);
enum lock_outcome lock_kind_read_pttl(const struct backend_value *reply,
                                      int64_t *value);
int lock_kind_renewed(const struct backend_value *element);
/* A renewal's add for a kind whose script takes KEYS name and ARGV field,
 * ms per hold. */
void lock_kind_renew_add(const struct lock_call_args *a, const char **keys,
                         size_t *key_len, const char **args, size_t *arg_len,
                         char *number);

/* What the token counter held before a grant of a kind with tokens
 * (LOCK_OP_ACQUIRE read OUTCOME_GRANTED) raised it to the daemon's floor
 * (0: nothing), or -1 when it was not behind. */
int64_t lock_kind_token_was(const struct backend_value *reply);

/* LOCK_OP_OWNERS's read, the same for every kind: {pttl, kind, field,
 * count...}; value is the PTTL; the kind and the pairs that follow it are
 * well-formed when this says OUTCOME_VALUE. */
enum lock_outcome lock_kind_read_owners(const struct backend_value *reply,
                                        int64_t *value);

/* Writes how's name of the lock name to out, which has room for len +
 * LOCK_KIND_NAME_EXTRA bytes; returns its length. */
/* The length lock_kind_name_of writes, without writing it: a lock's block
 * is sized to its names, not to the bound. */
size_t lock_kind_name_len(const struct lock_kind_name *how, const char *name,
                          size_t len);
size_t lock_kind_name_of(char *out, const struct lock_kind_name *how,
                         const char *name, size_t len);

/* The inverse of lock_kind_name_of: whether key is how's name of some
 * lock name, and if so which (*name, *len point into key). A name and
 * the same name in braces ("N", "{N}") have one key of a prefix or
 * suffix naming; the name without braces is the one given. */
bool lock_kind_name_owner(const struct lock_kind_name *how, const char *key,
                          size_t len, const char **name, size_t *name_len);

/* The kind table (lock_kind.c): one entry per kind. */
enum lock_kind_id {
    LOCK_KIND_RLOCK,
    LOCK_KIND_FAIR,
    LOCK_KIND_READ,
    LOCK_KIND_WRITE,
    LOCK_KIND_FENCED,
    LOCK_KIND_SEMAPHORE,
    LOCK_KIND_EXPIRABLE,
    LOCK_KIND_LATCH,
    LOCK_KIND_COUNT
};

extern const struct lock_kind lock_kind_rlock, lock_kind_fair, lock_kind_fenced,
    lock_kind_read, lock_kind_write, lock_kind_semaphore, lock_kind_expirable,
    lock_kind_latch;
extern const struct lock_kind *const lock_kinds[LOCK_KIND_COUNT];

#endif
