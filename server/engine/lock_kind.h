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
 * The rows are written with Redisson's whole family in mind
 * (../shared/reference/redisson-family.md): a fair lock names a channel
 * per waiter and wakes only the head (channel takes the owner's field); a
 * read-write lock keeps two modes on one key and a write unlock wakes
 * every waiter (on_message returns LOCK_KIND_WAKE_ALL); a semaphore has no
 * owner field (build ignores it) and its message carries a permit count
 * (on_message returns it). Each is one more row and its scripts, in a
 * kind_*.c file of its own, plus its entry in lock_kinds[].
 */
#ifndef RLOCKD_LOCK_KIND_H
#define RLOCKD_LOCK_KIND_H

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
    LOCK_OP_COUNT
};

/* What an operation's reply means to the engine. */
enum lock_outcome {
    OUTCOME_GRANTED,     /* acquired (also reentrantly) */
    OUTCOME_REFUSED,     /* held by another; value: its PTTL, < 0 unknown */
    OUTCOME_NOT_OWNER,   /* release by an owner Redis does not know, or a
                            reentrant acquire whose hold is gone */
    OUTCOME_DECREMENTED, /* release of a reentrant hold: still held */
    OUTCOME_RELEASED,    /* freed (and the channel told) */
    OUTCOME_VALUE,       /* a query's answer, or 1/0; in value */
    OUTCOME_WRONG_TYPE,  /* the key holds something that is not this lock */
    OUTCOME_BAD_REPLY,   /* not a reply this operation can give */
};

/* What the row needs to build a call. */
struct lock_call_args {
    const char *name;
    size_t name_len;
    const char *channel;
    size_t channel_len;
    const char *field; /* "<client-id>:<thread-id>" */
    size_t field_len;
    int64_t lease_ms;
    /* acquire, release: the count this daemon knows the owner holds (0: a
     * new hold; none known); settle: the count to set */
    int64_t count;
    /* struct backend's publish: the last argument of a script that
     * publishes */
    const char *publish;
};

/* A call under construction, with room for its arguments and numbers. */
#define LOCK_KIND_MAX_ARGS 8
struct lock_kind_call {
    struct backend_script *script; /* NULL: a plain command */
    int nkeys;
    int argc;
    const char *argv[LOCK_KIND_MAX_ARGS];
    size_t argv_len[LOCK_KIND_MAX_ARGS];
    char number[2][FORMAT_INT_MAX];
};

struct lock_kind_op {
    void (*build)(const struct lock_call_args *a, struct lock_kind_call *call);
    enum lock_outcome (*read)(const struct backend_value *reply,
                              int64_t *value);
};

/* Most bytes a channel name adds to the lock name and owner field. */
#define LOCK_KIND_CHANNEL_EXTRA 64

/* Waiters a message may wake: all of them. */
#define LOCK_KIND_WAKE_ALL ((size_t)-1)

/*
 * Renewal of many holds in one call. Holds whose keys share a key group
 * are renewed together: add appends one hold's keys and arguments (a
 * call is KEYS of every hold, then ARGV of every hold, in order), and
 * renewed reads that hold's element of the reply array.
 */
struct lock_kind_renewal {
    struct backend_script *script;
    int keys_per_hold;
    int args_per_hold;
    /* Writes the hold's keys to keys[], its arguments to args[]; numbers
     * it formats go to number (FORMAT_INT_MAX bytes, the hold's own). */
    void (*add)(const struct lock_call_args *a, const char **keys,
                size_t *key_len, const char **args, size_t *arg_len,
                char *number);
    /* 1 renewed, 0 the hold is gone. */
    int (*renewed)(const struct backend_value *element);
};

struct lock_kind {
    const char *name;
    /* The channel a waiter listens on; writes it to out, which has room
     * for name_len + field_len + LOCK_KIND_CHANNEL_EXTRA bytes, and
     * returns its length. field is the waiter's owner field, for kinds
     * that signal one waiter at a time (else field_len is 0). */
    size_t (*channel)(char *out, const char *name, size_t name_len,
                      const char *field, size_t field_len);
    /* How many waiters, from the head, a message's payload wakes. */
    size_t (*on_message)(const char *payload, size_t len);
    struct lock_kind_op ops[LOCK_OP_COUNT];
    struct lock_kind_renewal renewal;
    /* Every script above, NULL-terminated, for the backend to load. */
    struct backend_script *const *scripts;
};

/* LOCK_OP_OWNERS's read, the same for every kind: value is the PTTL; the
 * pairs that follow it are well-formed when this says OUTCOME_VALUE. */
enum lock_outcome lock_kind_read_owners(const struct backend_value *reply,
                                        int64_t *value);

/* The kind table (lock_kind.c): one entry per kind. */
enum lock_kind_id { LOCK_KIND_RLOCK, LOCK_KIND_COUNT };

extern const struct lock_kind lock_kind_rlock;
extern const struct lock_kind *const lock_kinds[LOCK_KIND_COUNT];

#endif
