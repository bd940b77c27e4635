/*
 * locking.h - the lock commands against Redis: acquire, wait, release.
 *
 * Owns struct lock_call, one client's LOCK/TRYLOCK/UNLOCK/FORCEUNLOCK or
 * query in progress, and the waiting protocol: a failed acquire queues
 * the call on its lock (FIFO) and listens on the lock's channel; only the
 * head of the queue asks Redis again, when an unlock message arrives,
 * when a release through this daemon frees the lock (without waiting for
 * the pub/sub round trip), or when the lock's TTL runs out, since an
 * expiry sends no message. This is where waiters wake up.
 */
#ifndef RLOCKD_LOCKING_H
#define RLOCKD_LOCKING_H

#include <stddef.h>

#include <uv.h>

#include "buffer.h"
#include "command.h"
#include "base/config.h"

struct client;
struct lock;
struct lock_call;

void locking_init(uv_loop_t *loop, const struct config *cfg);

/*
 * Starts a lock command for a client. The reply is written to the client
 * and client_command_done() called, now or later. Returns the call while
 * it is in progress (the client must pass it to locking_client_gone if it
 * closes first), or NULL when the command completed at once.
 */
struct lock_call *locking_start(struct client *client, enum command_id cmd,
                                const struct command_args *args);
/* The client closed: stop waiting; undo an acquire that lands later. */
void locking_client_gone(struct lock_call *call);

/* A session ended: free the lock if field holds it (fire and forget). */
void locking_release_owner(struct lock *lock, const char *field,
                           size_t field_len);

/* The lock may be free now: let its head waiter try. */
void locking_wake_head(struct lock *lock);
/* A pool connection (re)connected: waiters on its shard try again. */
void locking_shard_ready(unsigned shard);
/* Answers every waiter with -SHUTDOWN. */
void locking_shutdown(void);
size_t locking_waiter_count(void);
/* Answers a command that needs Redis while it cannot be reached. */
void locking_reply_unavailable(struct buffer *out);

#endif
