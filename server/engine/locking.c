/*
 * locking.c - lock calls: the acquire/wait/retry loop, releases, queries.
 *
 * A call holds one reference for its client (dropped when it replies or
 * the client goes) and one for each Redis request in flight; the last
 * reference closes its timer, and the close callback frees it. So a reply
 * from Redis always finds its call alive, even after the client is gone,
 * which is how an acquire that lands after its client left is undone.
 */
#include "engine/locking.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/client.h"
#include "engine/lock_table.h"
#include "base/log.h"
#include "backend/redis_link.h"
#include "backend/redis_pool.h"
#include "reply.h"
#include "engine/scripts.h"
#include "engine/session.h"
#include "base/stats.h"
#include "backend/subscriber.h"
#include "engine/watchdog.h"

/* A waiter whose attempt found Redis unreachable tries again this soon. */
#define UNAVAILABLE_RETRY_MS 100
#define NO_DEADLINE UINT64_MAX

struct lock_call {
    struct client *client; /* NULL once the client has gone */
    struct lock *lock;
    enum command_id cmd;
    uint64_t thread_id;
    int64_t lease_ms;     /* as asked; COMMAND_LEASE_WATCHDOG */
    uint64_t deadline_ms; /* NO_DEADLINE: wait forever */
    char field[OWNER_FIELD_SIZE];
    size_t field_len;
    struct list_node queue_link;
    bool queued;
    bool attempting; /* acquire script in flight */
    bool rewake;     /* woken while attempting: try again at once */
    bool starting;   /* inside locking_start */
    unsigned refs;
    uv_timer_t timer;
};

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    size_t waiters;
} L;

static void call_attempt(struct lock_call *call);

void locking_init(uv_loop_t *loop, const struct config *cfg)
{
    L.loop = loop;
    L.cfg = cfg;
}

size_t locking_waiter_count(void)
{
    return L.waiters;
}

void locking_reply_unavailable(struct buffer *out)
{
    stats.unavailable_replies++;
    reply_error(out, REPLY_UNAVAILABLE, "Redis is unavailable");
}

/* ---- call life ------------------------------------------------------- */

static void call_closed(uv_handle_t *handle)
{
    struct lock_call *call = handle->data;

    lock_release_ref(call->lock);
    free(call);
}

static void call_unref(struct lock_call *call)
{
    if (--call->refs == 0)
        uv_close((uv_handle_t *)&call->timer, call_closed);
}

static struct lock_call *call_new(struct lock *lock, struct client *client)
{
    struct lock_call *call = calloc(1, sizeof(*call));

    if (call == NULL)
        return NULL;
    call->client = client;
    call->lock = lock;
    call->refs = 1;
    call->deadline_ms = NO_DEADLINE;
    list_init(&call->queue_link);
    uv_timer_init(L.loop, &call->timer);
    call->timer.data = call;
    lock->refs++;
    return call;
}

static struct buffer *call_out(struct lock_call *call)
{
    return &call->client->out;
}

/* The reply is written: hand the client back its connection. */
static void call_finish(struct lock_call *call)
{
    struct client *client = call->client;

    uv_timer_stop(&call->timer);
    call->client = NULL;
    if (!call->starting)
        client_command_done(client);
    call_unref(call);
}

static int64_t effective_lease(const struct lock_call *call)
{
    return call->lease_ms > 0 ? call->lease_ms : L.cfg->watchdog_timeout_ms;
}

/* ---- the waiter queue ------------------------------------------------ */

static struct lock_call *queue_head(struct lock *lock)
{
    struct list_node *node = waiter_queue_head(&lock->waiters);
    return node ? list_entry(node, struct lock_call, queue_link) : NULL;
}

static void timer_fired(uv_timer_t *timer);

/* Sleeps until the deadline or, for the head, until the lock's TTL may
 * have run out (pttl < 0: no TTL known, only a message wakes it). */
static void call_sleep(struct lock_call *call, int64_t pttl)
{
    uint64_t now = now_ms(L.loop), wake = call->deadline_ms;

    if (pttl >= 0 &&
        waiter_queue_is_head(&call->lock->waiters, &call->queue_link) &&
        now + (uint64_t)pttl < wake)
        wake = now + (uint64_t)pttl;
    if (wake == NO_DEADLINE)
        uv_timer_stop(&call->timer);
    else
        uv_timer_start(&call->timer, timer_fired, wake > now ? wake - now : 0,
                       0);
}

static int call_enqueue(struct lock_call *call)
{
    struct lock *lock = call->lock;

    if (L.waiters >= (size_t)L.cfg->max_waiters)
        return -1;
    waiter_queue_push_tail(&lock->waiters, &call->queue_link);
    call->queued = true;
    L.waiters++;
    /* The subscription's confirmation wakes the head: that is the "try
     * once more after subscribing" that closes the race with an unlock
     * published before we listened. */
    if (lock->waiters.length == 1 && subscriber_listen(lock) != 0)
        log_warn("cannot listen for unlocks (out of memory); polling by TTL");
    return 0;
}

/* Leaves the queue; `granted` says whether the lock was just taken. */
static void call_dequeue(struct lock_call *call, bool granted)
{
    struct lock *lock = call->lock;
    bool was_head;
    struct lock_call *head;

    if (!call->queued)
        return;
    was_head = waiter_queue_is_head(&lock->waiters, &call->queue_link);
    waiter_queue_remove(&lock->waiters, &call->queue_link);
    call->queued = false;
    L.waiters--;
    head = queue_head(lock);
    if (head == NULL) {
        subscriber_unlisten(lock);
        return;
    }
    if (!was_head)
        return;
    /* The new head: if the lock was just granted it stays taken for at
     * most the TTL we set; otherwise the old head may have been woken for
     * a free lock it no longer wants, so the new head looks now. */
    if (granted)
        call_sleep(head, lock->last_grant_ttl_ms);
    else
        locking_wake_head(lock);
}

void locking_wake_head(struct lock *lock)
{
    struct lock_call *head = queue_head(lock);

    if (head == NULL)
        return;
    if (head->attempting) {
        head->rewake = true;
        return;
    }
    uv_timer_stop(&head->timer);
    call_attempt(head);
}

static void wake_if_shard(struct lock *lock, void *arg)
{
    if (lock->shard == *(unsigned *)arg)
        locking_wake_head(lock);
}

void locking_shard_ready(unsigned shard)
{
    lock_table_foreach(wake_if_shard, &shard);
}

/* ---- acquire --------------------------------------------------------- */

static void call_end_with(struct lock_call *call, bool granted)
{
    call_dequeue(call, granted);
    call_finish(call);
}

static void reply_not_acquired(struct lock_call *call)
{
    stats.wait_timeouts++;
    reply_integer(call_out(call), 0);
    call_end_with(call, false);
}

static void release_in_background(struct lock *lock, enum script_id script,
                                  const char *field, size_t field_len,
                                  int64_t lease_ms);

static void acquire_granted(struct lock_call *call)
{
    struct lock *lock = call->lock;
    struct session *session = call->client->session;
    struct hold *hold = hold_find(lock, session, call->thread_id);

    if (hold == NULL)
        hold = hold_create(lock, session, call->thread_id);
    if (hold == NULL) {
        release_in_background(lock, SCRIPT_RELEASE, call->field,
                              call->field_len, effective_lease(call));
        reply_error(call_out(call), REPLY_ERR, "out of memory");
        call_end_with(call, false);
        return;
    }
    if (hold->lost) {
        hold->lost = false;
        hold->epoch++;
    }
    if (call->lease_ms == COMMAND_LEASE_WATCHDOG)
        hold->watchdog = true;
    hold->lease_ms =
        hold->watchdog ? L.cfg->watchdog_timeout_ms : call->lease_ms;
    if (hold->watchdog)
        watchdog_start(hold);
    lock->last_grant_ttl_ms = effective_lease(call);
    stats.locks_acquired++;
    if (call->cmd == CMD_LOCK)
        reply_simple(call_out(call), "OK");
    else
        reply_integer(call_out(call), 1);
    call_end_with(call, true);
}

static void acquire_refused(struct lock_call *call, int64_t pttl)
{
    if (call->rewake) {
        call->rewake = false;
        call_attempt(call);
        return;
    }
    if (now_ms(L.loop) >= call->deadline_ms) {
        reply_not_acquired(call);
        return;
    }
    if (!call->queued && call_enqueue(call) != 0) {
        reply_error(call_out(call), REPLY_LIMIT,
                    "too many waiting clients (max_waiters)");
        call_finish(call);
        return;
    }
    call_sleep(call, pttl);
}

static void acquire_unavailable(struct lock_call *call)
{
    if (!call->queued) {
        locking_reply_unavailable(call_out(call));
        call_finish(call);
        return;
    }
    if (now_ms(L.loop) >= call->deadline_ms)
        reply_not_acquired(call);
    else
        call_sleep(call, UNAVAILABLE_RETRY_MS);
}

static void on_acquire_reply(redisReply *reply, void *arg)
{
    struct lock_call *call = arg;
    bool acquired = reply != NULL && reply->type == REDIS_REPLY_NIL;

    call->attempting = false;
    if (call->client == NULL) {
        if (acquired) { /* its client left while we asked: undo it */
            stats.orphan_acquires_undone++;
            release_in_background(call->lock, SCRIPT_RELEASE, call->field,
                                  call->field_len, effective_lease(call));
        }
    } else if (reply == NULL) {
        acquire_unavailable(call);
    } else if (acquired) {
        acquire_granted(call);
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        acquire_refused(call, reply->integer);
    } else {
        reply_error(call_out(call), REPLY_ERR, "redis: %s",
                    reply->type == REDIS_REPLY_ERROR ? reply->str
                                                     : "unexpected reply");
        call_end_with(call, false);
    }
    call_unref(call);
}

static void call_attempt(struct lock_call *call)
{
    struct lock *lock = call->lock;
    char lease[FORMAT_INT_MAX];
    const char *argv[] = {lock->name, lease, call->field};
    size_t len[] = {lock->name_len, format_int64(lease, effective_lease(call)),
                    call->field_len};

    call->rewake = false;
    if (redis_pool_call(lock->shard, SCRIPT_ACQUIRE, 1, 3, argv, len,
                        on_acquire_reply, call) != 0) {
        acquire_unavailable(call);
        return;
    }
    stats.lock_attempts++;
    call->attempting = true;
    call->refs++;
}

static void timer_fired(uv_timer_t *timer)
{
    struct lock_call *call = timer->data;

    if (now_ms(L.loop) >= call->deadline_ms)
        reply_not_acquired(call);
    else
        call_attempt(call);
}

/* ---- release and friends -------------------------------------------- */

static void on_background_release(redisReply *reply, void *arg)
{
    struct lock_call *call = arg;

    if (reply != NULL && reply->type == REDIS_REPLY_INTEGER &&
        reply->integer == 1)
        locking_wake_head(call->lock);
    else if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        log_warn("release of '%.*s' for %s failed: %s; it expires by TTL",
                 (int)call->lock->name_len, call->lock->name, call->field,
                 reply ? reply->str : "Redis unavailable");
    call_unref(call);
}

/* Frees or decrements a lock with nobody waiting for the answer. */
static void release_in_background(struct lock *lock, enum script_id script,
                                  const char *field, size_t field_len,
                                  int64_t lease_ms)
{
    struct lock_call *call = call_new(lock, NULL);
    char lease[FORMAT_INT_MAX];
    const char *argv[] = {lock->name, lock->channel, "0", field, lease};
    size_t len[] = {lock->name_len, lock->channel_len, 1, field_len,
                    format_int64(lease, lease_ms)};
    int err;

    if (call == NULL) {
        log_error("out of memory: '%.*s' expires by TTL", (int)lock->name_len,
                  lock->name);
        return;
    }
    if (script == SCRIPT_RELEASE) { /* ARGV: "0", lease, field */
        argv[3] = lease;
        len[3] = len[4];
        argv[4] = field;
        len[4] = field_len;
    }
    err = redis_pool_call(lock->shard, script, 2,
                          script == SCRIPT_RELEASE ? 5 : 4, argv, len,
                          on_background_release, call);
    if (err != 0)
        log_warn("cannot release '%.*s' for %.*s now (Redis unavailable); "
                 "it expires by TTL",
                 (int)lock->name_len, lock->name, (int)field_len, field);
    else
        call->refs++;
    call_unref(call);
}

void locking_release_owner(struct lock *lock, const char *field,
                           size_t field_len)
{
    stats.locks_released_on_disconnect++;
    release_in_background(lock, SCRIPT_RELEASE_OWNER, field, field_len, 0);
}

static void unlock_replied(struct lock_call *call, redisReply *reply)
{
    struct hold *hold =
        hold_find(call->lock, call->client->session, call->thread_id);

    if (reply->type == REDIS_REPLY_NIL && hold == NULL) {
        reply_error(call_out(call), REPLY_NOTOWNER,
                    "the lock is not held by this owner");
    } else if (reply->type == REDIS_REPLY_NIL) {
        hold_mark_lost(hold, "UNLOCK found it gone");
        hold_drop(hold);
        reply_error(call_out(call), REPLY_LOCKLOST,
                    "the lock expired or was deleted while held");
    } else if (reply->integer == 0) {
        reply_integer(call_out(call), 0);
    } else {
        if (hold != NULL)
            hold_drop(hold);
        stats.locks_released++;
        reply_integer(call_out(call), 1);
        locking_wake_head(call->lock);
    }
}

static void force_unlock_replied(struct lock_call *call, redisReply *reply)
{
    struct list_node *pos, *tmp;

    if (reply->integer == 1) {
        list_for_each_safe(pos, tmp, &call->lock->holds) hold_mark_lost(
            list_entry(pos, struct hold, lock_link), "FORCEUNLOCK");
        stats.locks_force_released++;
        locking_wake_head(call->lock);
    }
    reply_integer(call_out(call), reply->integer);
}

/* Which reply types each command expects from Redis. */
static bool reply_expected(enum command_id cmd, const redisReply *reply)
{
    switch (cmd) {
    case CMD_UNLOCK:
        return reply->type == REDIS_REPLY_NIL ||
               reply->type == REDIS_REPLY_INTEGER;
    case CMD_HOLDCOUNT:
        return reply->type == REDIS_REPLY_NIL ||
               reply->type == REDIS_REPLY_STRING;
    default:
        return reply->type == REDIS_REPLY_INTEGER;
    }
}

static void on_command_reply(redisReply *reply, void *arg)
{
    struct lock_call *call = arg;

    if (call->client == NULL) {
        if (reply != NULL && reply->type == REDIS_REPLY_INTEGER &&
            reply->integer == 1 &&
            (call->cmd == CMD_UNLOCK || call->cmd == CMD_FORCEUNLOCK))
            locking_wake_head(call->lock);
    } else if (reply == NULL) {
        locking_reply_unavailable(call_out(call));
        call_finish(call);
    } else if (!reply_expected(call->cmd, reply)) {
        reply_error(call_out(call), REPLY_ERR, "redis: %s",
                    reply->type == REDIS_REPLY_ERROR ? reply->str
                                                     : "unexpected reply");
        call_finish(call);
    } else {
        if (call->cmd == CMD_UNLOCK)
            unlock_replied(call, reply);
        else if (call->cmd == CMD_FORCEUNLOCK)
            force_unlock_replied(call, reply);
        else if (call->cmd == CMD_HOLDCOUNT)
            reply_integer(call_out(call), reply->type == REDIS_REPLY_NIL
                                              ? 0
                                              : strtoll(reply->str, NULL, 10));
        else
            reply_integer(call_out(call), reply->integer);
        call_finish(call);
    }
    call_unref(call);
}

/* Sends the one Redis request a non-acquire command needs. */
static int send_command(struct lock_call *call)
{
    struct lock *lock = call->lock;
    struct hold *hold;
    enum script_id script = SCRIPT_COUNT;
    char lease[FORMAT_INT_MAX];
    const char *argv[5];
    size_t len[5];
    int argc = 0, nkeys = 0;

#define ARG(s, n) (argv[argc] = (s), len[argc++] = (n))
    switch (call->cmd) {
    case CMD_UNLOCK:
        hold = hold_find(lock, call->client->session, call->thread_id);
        script = SCRIPT_RELEASE;
        nkeys = 2;
        ARG(lock->name, lock->name_len);
        ARG(lock->channel, lock->channel_len);
        ARG("0", 1);
        ARG(lease, format_int64(lease, hold ? hold->lease_ms
                                            : L.cfg->watchdog_timeout_ms));
        ARG(call->field, call->field_len);
        break;
    case CMD_FORCEUNLOCK:
        script = SCRIPT_FORCE_RELEASE;
        nkeys = 2;
        ARG(lock->name, lock->name_len);
        ARG(lock->channel, lock->channel_len);
        ARG("0", 1);
        break;
    case CMD_ISLOCKED:
        ARG("EXISTS", 6);
        ARG(lock->name, lock->name_len);
        break;
    case CMD_ISHELD:
    case CMD_HOLDCOUNT:
        ARG(call->cmd == CMD_ISHELD ? "HEXISTS" : "HGET",
            call->cmd == CMD_ISHELD ? 7 : 4);
        ARG(lock->name, lock->name_len);
        ARG(call->field, call->field_len);
        break;
    default: /* CMD_PTTL */
        ARG("PTTL", 4);
        ARG(lock->name, lock->name_len);
        break;
    }
#undef ARG
    return redis_pool_call(lock->shard, script, nkeys, argc, argv, len,
                           on_command_reply, call);
}

/* LOCK/TRYLOCK refuse a new hold beyond max_held_locks. */
static bool hold_limit_reached(struct lock_call *call)
{
    return hold_count() >= (size_t)L.cfg->max_held_locks &&
           hold_find(call->lock, call->client->session, call->thread_id) ==
               NULL;
}

static void call_start(struct lock_call *call)
{
    if (call->cmd != CMD_LOCK && call->cmd != CMD_TRYLOCK) {
        if (send_command(call) == 0) {
            call->refs++;
            return;
        }
        locking_reply_unavailable(call_out(call));
        call_finish(call);
    } else if (hold_limit_reached(call)) {
        reply_error(call_out(call), REPLY_LIMIT,
                    "too many held locks (max_held_locks)");
        call_finish(call);
    } else {
        call_attempt(call);
    }
}

struct lock_call *locking_start(struct client *client, enum command_id cmd,
                                const struct command_args *args)
{
    struct session *session = client->session;
    struct lock *lock = lock_acquire_ref(args->name, args->name_len);
    struct lock_call *call = lock ? call_new(lock, client) : NULL;
    struct lock_call *in_progress;

    if (lock != NULL)
        lock_release_ref(lock); /* the call holds its own reference */
    if (call == NULL) {
        reply_error(&client->out, REPLY_ERR, "out of memory");
        return NULL;
    }
    call->cmd = cmd;
    call->thread_id = args->thread_id;
    call->lease_ms = args->lease_ms;
    call->field_len =
        owner_field(call->field, session->id, session->id_len, args->thread_id);
    if (args->wait_ms >= 0)
        call->deadline_ms = now_ms(L.loop) + (uint64_t)args->wait_ms;
    call->starting = true;
    call->refs++;
    call_start(call);
    call->starting = false;
    in_progress = call->client != NULL ? call : NULL;
    call_unref(call);
    return in_progress;
}

void locking_client_gone(struct lock_call *call)
{
    call_dequeue(call, false);
    uv_timer_stop(&call->timer);
    call->client = NULL;
    call_unref(call);
}

static void shutdown_waiters(struct lock *lock, void *arg)
{
    struct lock_call *head;

    (void)arg;
    while ((head = queue_head(lock)) != NULL) {
        reply_error(call_out(head), REPLY_SHUTDOWN, "rlockd is shutting down");
        call_end_with(head, false);
    }
}

void locking_shutdown(void)
{
    lock_table_foreach(shutdown_waiters, NULL);
}
