/*
 * lock_table.h - what this rlockd knows about each lock: its local
 * waiters, the owners that hold it through this daemon, its channel.
 *
 * Owns struct lock (one per kind and name in use, found by both) and
 * struct hold (one per owner holding a lock: a session plus a
 * thread-id). Redis is the truth about who holds a lock; a hold is this
 * daemon's record that one of its clients does, which it needs to renew
 * the lock, to release it when the client goes, and to tell "lost" from
 * "never held".
 *
 * Lifetimes are reference counts, each with one function that frees: a
 * lock lives while a hold, a call or a listener refers to it
 * (lock_unref); a hold lives while it is held and while a renewal that
 * names it is in flight (hold_unref). Nothing here talks to Redis.
 */
#ifndef RLOCKD_LOCK_TABLE_H
#define RLOCKD_LOCK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/hashmap.h"
#include "base/list.h"
#include "client_id.h"
#include "engine/lock_kind.h"
#include "engine/timer.h"
#include "engine/waiter_queue.h"

/* "<client-id>:<thread-id>" and the kind's suffix (":write"): 64 + 1 +
 * 20 digits + 6 + NUL */
#define OWNER_FIELD_SIZE (CLIENT_ID_MAX_LEN + 28)

struct session;

/* What a lock needs only while it has waiters (waiters.c): a part of its
 * own, so that a held lock nobody waits for does not carry it. */
struct lock_waiting {
    struct lock *lock;
    struct waiter_queue waiters;   /* struct lock_call, oldest first */
    struct list_node waiting_link; /* engine.waiting_locks */
    /* When a release through this daemon freed it with waiters queued,
     * until one is granted (0: not since): the hand-off's start. */
    uint64_t freed_us;
    struct backend_listener listener; /* the kind's channel */
};

/*
 * struct lock and struct hold are the most numerous records: one of each
 * per held lock, a million of each at max_held_locks. Their fields are as
 * narrow as what they hold allows; lock_table.c asserts their sizes.
 */
struct lock {
    struct hashmap_node map_node; /* in the lock table, keyed by name[] */
    struct lock_waiting *waiting; /* while it has waiters, else NULL */
    struct hold *holds; /* the first, oldest, chained by hold.lock_next */
    /* TTL set by this daemon's last acquire, a waiter's wake-up hint,
     * held up to LOCK_GRANT_TTL_MAX_MS (lock_note_grant). */
    int64_t last_grant_ttl_ms : 44;
    /* In a row, each sent with its release (waiters.c); at most
     * max_handoffs_in_a_row, whose bound (1000000) 20 bits hold. */
    uint64_t handoffs : 20;
    /* A name is at most max_name_length (65536) from a request, or a
     * Redis string's 512 MB from a session record. */
    uint32_t name_len;
    unsigned refs; /* its holds, calls, places and all else that refer to it */
    /* The name, then the kind's index (both the table's key), then the
     * kind's own keys (lock_keys); its kind is that index's row of
     * lock_kinds[] (lock_kind_of), and its channel is made when needed
     * (lock_channel): a million plain locks would otherwise carry them. */
    char name[];
};

/* 2^43 - 1 ms, some 278 years: a longer TTL is recorded as this. */
#define LOCK_GRANT_TTL_MAX_MS ((INT64_C(1) << 43) - 1)

/* The lock's kind, from the index stored after its name. */
static inline const struct lock_kind *lock_kind_of(const struct lock *lock)
{
    return lock_kinds[(unsigned char)lock->name[lock->name_len]];
}

struct hold {
    struct lock *lock;      /* NULL once dropped */
    struct hold *lock_next; /* the lock's next hold (lock.holds) */
    struct session *session;
    uint64_t thread_id;
    int64_t count;     /* as in Redis: acquires granted less releases */
    int64_t releasing; /* UNLOCKs sent and not answered (pipelined) */
    int64_t lease_ms;  /* the PEXPIRE of renewals and reentrant releases */
    /* Its first grant (LOCKS' held-ms), a monotonic clock's ms: 48 bits
     * last 8,900 years. */
    uint64_t since_ms : 48;
    /* Bits, beside since_ms in one word: a hold is the most numerous
     * record. */
    bool watchdog : 1; /* renewed by the watchdog */
    bool lost : 1;     /* Redis no longer has it */
    bool recheck : 1;  /* to be looked for on a new master */
    bool
        field_stored : 1; /* field[] is its field: not its owner's (a permit) */
    bool leased : 1;      /* has a lease part (struct hold_lease) */
    /* While on the watchdog's schedule, the low 32 bits of when it is due
     * (watchdog.c's due_of): a due time is never further than 2^31 ms,
     * 24 days, from now. */
    uint32_t renew_due_ms;
    unsigned refs; /* 1 while held, 1 per renewal in flight */
    struct list_node session_link;
    struct list_node watchdog_link; /* on the watchdog's schedule */
    /* Its field in Redis, NUL-terminated, when it is not its owner's
     * (owner_field of its session and thread-id), as an expirable permit's
     * id is; an owner's is made when needed (hold_field), for there may be
     * a million holds. */
    char field[];
};

/* Walks lock's holds, oldest first; the body may drop the current one. */
#define lock_for_each_hold(h, next, lock)                                      \
    for ((h) = (lock)->holds; (h) != NULL && ((next) = (h)->lock_next, true);  \
         (h) = (next))

void lock_table_init(void);
void lock_table_free(void);
/* The lock of that kind and name if this daemon has it, else NULL. */
struct lock *lock_find(const struct lock_kind *kind, const char *name,
                       size_t len);
/* Finds or creates the lock and takes a reference; NULL when out of memory. */
struct lock *lock_ref(const struct lock_kind *kind, const char *name,
                      size_t len);
void lock_unref(struct lock *lock);
/* Gives lock its waiting part (0), or -ENOMEM; and frees it when its
 * last waiter has gone and its listener is off. */
int lock_waiting_start(struct lock *lock);
void lock_waiting_end(struct lock *lock);
/* Its waiters (struct lock_call.queue_link), an empty queue while it has
 * none. */
const struct waiter_queue *lock_waiters(const struct lock *lock);
/* Points keys and key_len at the kind's own keys of lock; returns how
 * many (none for a plain lock). */
size_t lock_keys(const struct lock *lock, const char *keys[LOCK_KIND_MAX_KEYS],
                 size_t key_len[LOCK_KIND_MAX_KEYS]);
/* The length of lock's channel, and the channel written to out (that
 * many bytes). */
size_t lock_channel_len(const struct lock *lock);
size_t lock_channel(const struct lock *lock, char *out);
/* Records the TTL an acquire of lock set (last_grant_ttl_ms). */
void lock_note_grant(struct lock *lock, int64_t ttl_ms);
/* Calls fn for every lock (LOCKS' view); fn must not free one. */
void lock_table_foreach(void (*fn)(struct lock *lock, void *arg), void *arg);

/* Formats an owner's Redis field for a lock of kind (OWNER_FIELD_SIZE
 * bytes); returns its length. */
size_t owner_field(char *out, const struct lock_kind *kind,
                   const char *client_id, size_t id_len, uint64_t thread_id);

struct hold *hold_find(struct lock *lock, const struct session *session,
                       uint64_t thread_id);
/* The hold's field in Redis, its owner's (written to buf) or a permit's
 * id, with its length in *len. Only while it is held. */
const char *hold_field(const struct hold *hold, char buf[OWNER_FIELD_SIZE],
                       size_t *len);
/* The hold this daemon has for an owner field, whoever's call asks. */
struct hold *hold_find_by_field(struct lock *lock, const char *field,
                                size_t len);
/* Records that session/thread holds lock under field; NULL when out of
 * memory. */
struct hold *hold_create(struct lock *lock, struct session *session,
                         uint64_t thread_id, const char *field,
                         size_t field_len);
/* Forgets a hold (unlocked, or its session ended); the caller has taken
 * it off the watchdog's schedule. */
void hold_drop(struct hold *hold);
void hold_unref(struct hold *hold);
/* Marks a hold lost (Redis no longer has it): counted, logged and told to
 * the loss listener once; the caller has taken it off the watchdog's
 * schedule. */
void hold_mark_lost(struct hold *hold, const char *why);
/* Lease mode: the hold is lost lease_ms from now (its acquire's reply has
 * come, so its TTL in Redis ends before then; a shared hold's, at its
 * longest lease), unless acquired again or released first. */
void hold_lease_start(struct hold *hold, int64_t lease_ms);
void hold_lease_stop(struct hold *hold);

/* Who is told of each hold marked lost (the engine's lock-lost events);
 * fn only records. */
typedef void hold_loss_fn(const struct hold *hold, const char *why);
void lock_table_on_loss(hold_loss_fn *fn);

#endif
