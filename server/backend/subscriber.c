/*
 * subscriber.c - SUBSCRIBE/UNSUBSCRIBE bookkeeping and message fan-out.
 *
 * Each channel moves IDLE -> SUBSCRIBING -> ACTIVE -> UNSUBSCRIBING ->
 * IDLE, and never has a SUBSCRIBE and an UNSUBSCRIBE in flight at once:
 * a lock that starts listening while the channel is being unsubscribed
 * waits for the unsubscribe reply, then subscribes again. hiredis keeps
 * one callback per channel and replaces or deletes it as replies arrive,
 * so overlapping the two could silently drop the callback of the newer
 * subscription. A subscription is freed only once hiredis no longer
 * holds a pointer to it (after the unsubscribe reply, or the NULL reply
 * hiredis delivers to every channel when the connection goes).
 */
#include "backend/subscriber.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/list.h"
#include "engine/lock_table.h"
#include "base/log.h"
#include "backend/redis_link.h"
#include "base/stats.h"

enum sub_state { SUB_IDLE, SUB_SUBSCRIBING, SUB_ACTIVE, SUB_UNSUBSCRIBING };

struct subscription {
    char *channel; /* the map's key */
    size_t channel_len;
    struct list_node listeners; /* struct lock.listen_link */
    enum sub_state state;
};

static struct {
    struct redis_link link;
    struct hashmap channels;
    void (*on_notify)(struct lock *lock);
} S;

static void on_pubsub_reply(redisAsyncContext *ac, void *r, void *privdata);

static void send_pubsub(struct subscription *sub, const char *verb,
                        enum sub_state next)
{
    const char *argv[] = {verb, sub->channel};
    size_t len[] = {strlen(verb), sub->channel_len};

    if (S.link.ac == NULL || !redis_link_ready(&S.link) ||
        redisAsyncCommandArgv(S.link.ac, on_pubsub_reply, sub, 2, argv, len) !=
            REDIS_OK) {
        /* Not connected: the reconnect resubscribes whoever listens. */
        sub->state = SUB_IDLE;
        return;
    }
    sub->state = next;
}

static void sub_free_if_unused(struct subscription *sub)
{
    if (sub->state != SUB_IDLE || !list_empty(&sub->listeners))
        return;
    hashmap_remove(&S.channels, sub->channel, sub->channel_len);
    free(sub);
}

static void notify_listeners(struct subscription *sub)
{
    struct list_node *pos, *tmp;

    list_for_each_safe(pos, tmp, &sub->listeners)
        S.on_notify(list_entry(pos, struct lock, listen_link));
}

/* Brings the channel's state in line with whether anyone listens. */
static void sub_settle(struct subscription *sub)
{
    bool wanted = !list_empty(&sub->listeners);

    if (wanted && sub->state == SUB_IDLE)
        send_pubsub(sub, "SUBSCRIBE", SUB_SUBSCRIBING);
    else if (!wanted && sub->state == SUB_ACTIVE)
        send_pubsub(sub, "UNSUBSCRIBE", SUB_UNSUBSCRIBING);
    sub_free_if_unused(sub);
}

static void on_pubsub_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    struct subscription *sub = privdata;
    redisReply *reply = r;
    const char *kind;

    (void)ac;
    if (reply == NULL) { /* connection gone */
        sub->state = SUB_IDLE;
        sub_free_if_unused(sub);
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING)
        return;
    kind = reply->element[0]->str;
    if (strcmp(kind, "message") == 0) {
        stats.unlock_messages++;
        notify_listeners(sub);
    } else if (strcmp(kind, "subscribe") == 0) {
        sub->state = SUB_ACTIVE;
        /* Messages sent before this point were missed: look again. A lock
         * that stops listening meanwhile settles the channel itself. */
        if (list_empty(&sub->listeners))
            sub_settle(sub);
        else
            notify_listeners(sub);
    } else if (strcmp(kind, "unsubscribe") == 0) {
        sub->state = SUB_IDLE;
        sub_settle(sub);
    }
}

static void resubscribe(void *value, void *arg)
{
    (void)arg;
    sub_settle(value);
}

static void on_connected(struct redis_link *link)
{
    redis_link_set_ready(link);
    hashmap_foreach(&S.channels, resubscribe, NULL);
}

int subscriber_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_notify)(struct lock *lock))
{
    int err = redis_link_init(&S.link, loop, cfg, "subscriber");

    hashmap_init(&S.channels);
    S.on_notify = on_notify;
    S.link.on_connected = on_connected;
    return err;
}

void subscriber_start(void)
{
    redis_link_start(&S.link);
}

void subscriber_close(void)
{
    redis_link_close(&S.link);
}

int subscriber_listen(struct lock *lock)
{
    struct subscription *sub =
        hashmap_get(&S.channels, lock->channel, lock->channel_len);

    if (sub == NULL) {
        sub = calloc(1, sizeof(*sub) + lock->channel_len + 1);
        if (sub == NULL)
            return -1;
        sub->channel = (char *)(sub + 1);
        memcpy(sub->channel, lock->channel, lock->channel_len);
        sub->channel_len = lock->channel_len;
        list_init(&sub->listeners);
        if (hashmap_put(&S.channels, sub->channel, sub->channel_len, sub) !=
            0) {
            free(sub);
            return -1;
        }
    }
    list_push_tail(&sub->listeners, &lock->listen_link);
    lock->subscription = sub;
    sub_settle(sub);
    return 0;
}

void subscriber_unlisten(struct lock *lock)
{
    struct subscription *sub = lock->subscription;

    if (sub == NULL)
        return;
    list_remove(&lock->listen_link);
    lock->subscription = NULL;
    sub_settle(sub);
}

bool subscriber_ready(void)
{
    return redis_link_ready(&S.link);
}

size_t subscriber_channel_count(void)
{
    return S.channels.size;
}
