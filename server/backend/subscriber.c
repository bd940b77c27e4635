/*
 * subscriber.c - SUBSCRIBE/UNSUBSCRIBE bookkeeping and message fan-out.
 *
 * Each channel moves IDLE -> SUBSCRIBING -> ACTIVE -> UNSUBSCRIBING ->
 * IDLE, and never has a SUBSCRIBE and an UNSUBSCRIBE in flight at once:
 * a listener that arrives while the channel is being unsubscribed waits
 * for the unsubscribe reply, then subscribes again. hiredis keeps one
 * callback per channel and replaces or deletes it as replies arrive, so
 * overlapping the two could silently drop the callback of the newer
 * subscription. A subscription is freed only once hiredis no longer
 * holds a pointer to it (after the unsubscribe reply, or the NULL reply
 * hiredis delivers to every channel when the connection goes).
 */
#include "backend/subscriber.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis_link.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/stats.h"

/* What the link's liveness probe subscribes to (see redis_link.c's
 * probe_send): no lock kind's channel, so no subscription shares it, and
 * nothing publishes to it. */
#define PROBE_CHANNEL "rlockd:liveness"

enum sub_state { SUB_IDLE, SUB_SUBSCRIBING, SUB_ACTIVE, SUB_UNSUBSCRIBING };

struct subscription {
    struct redis_request req; /* SUBSCRIBE's, which hiredis answers */
    char *channel;            /* the map's key */
    size_t channel_len;
    struct list_node listeners; /* struct backend_listener.link */
    enum sub_state state;
};

static struct {
    struct redis_link link;
    struct redis_request ping; /* the connection's first request */
    struct hashmap channels;
    void (*on_change)(void);
} subscriber;

static void on_pubsub_reply(struct redis_request *req, redisReply *reply);

static void send_pubsub(struct subscription *sub, const char *verb,
                        enum sub_state next)
{
    const char *argv[] = {verb, sub->channel};
    size_t len[] = {strlen(verb), sub->channel_len};

    sub->req.on_reply = on_pubsub_reply;
    if (redis_link_send_pubsub(&subscriber.link, &sub->req, 2, argv, len) !=
        0) {
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
    hashmap_remove(&subscriber.channels, sub->channel, sub->channel_len);
    stats.subscribed_channels--;
    free(sub);
}

/* Hands a message (payload NULL: "look again") to every listener. A
 * listener may leave (and another join) while being told. */
static void notify_listeners(struct subscription *sub, const char *payload,
                             size_t len)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &sub->listeners) {
        struct backend_listener *l =
            list_entry(pos, struct backend_listener, link);
        l->on_message(l, payload, len);
    }
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

static bool is_kind(const redisReply *reply, const char *kind)
{
    return strcmp(reply->element[0]->str, kind) == 0;
}

static void on_pubsub_reply(struct redis_request *req, redisReply *reply)
{
    struct subscription *sub = (struct subscription *)req;

    if (reply == NULL) { /* connection gone */
        sub->state = SUB_IDLE;
        sub_free_if_unused(sub);
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (is_kind(reply, "message")) {
        stats.unlock_messages++;
        if (reply->element[2]->type == REDIS_REPLY_STRING)
            notify_listeners(sub, reply->element[2]->str,
                             reply->element[2]->len);
    } else if (is_kind(reply, "subscribe")) {
        sub->state = SUB_ACTIVE;
        /* Messages sent before this point were missed: look again. A
         * listener that left meanwhile settles the channel itself. */
        if (list_empty(&sub->listeners))
            sub_settle(sub);
        else
            notify_listeners(sub, NULL, 0);
    } else if (is_kind(reply, "unsubscribe")) {
        sub->state = SUB_IDLE;
        sub_settle(sub);
    }
}

static void resubscribe(void *value, void *arg)
{
    (void)arg;
    sub_settle(value);
}

/* Ready once a PING is answered: its reply comes after AUTH's and
 * SELECT's, and a refused AUTH drops the connection before it, so a
 * wrong password backs off instead of looking ready for a moment. */
static void on_ping_reply(struct redis_request *req, redisReply *reply)
{
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        return; /* lost, or already being dropped */
    redis_link_set_ready(req->link);
    hashmap_foreach(&subscriber.channels, resubscribe, NULL);
}

static void on_connected(struct redis_link *link)
{
    static const char *const argv[] = {"PING"};
    static const size_t len[] = {4};

    subscriber.ping.on_reply = on_ping_reply;
    if (redis_link_send(link, &subscriber.ping, 1, (const char **)argv, len) !=
        0)
        redis_link_reset(link, "cannot send PING");
}

static void on_readiness(struct redis_link *link)
{
    stats.redis_subscriber_ready = redis_link_ready(link);
    subscriber.on_change();
}

int subscriber_init(uv_loop_t *loop, const struct config *cfg,
                    void (*on_change)(void))
{
    int err = redis_link_init(&subscriber.link, loop, cfg, "subscriber");

    hashmap_init(&subscriber.channels);
    subscriber.on_change = on_change;
    subscriber.link.on_connected = on_connected;
    subscriber.link.on_readiness = on_readiness;
    subscriber.link.probe_channel = PROBE_CHANNEL;
    return err;
}

void subscriber_move(const struct redis_addr *addr)
{
    redis_link_move(&subscriber.link, addr);
}

void subscriber_close(void)
{
    redis_link_close(&subscriber.link);
    hashmap_free(&subscriber.channels);
}

int subscriber_listen(struct backend_listener *listener, const char *channel,
                      size_t len)
{
    struct subscription *sub = hashmap_get(&subscriber.channels, channel, len);

    if (sub == NULL) {
        sub = calloc(1, sizeof(*sub) + len + 1);
        if (sub == NULL)
            return -ENOMEM;
        sub->channel = (char *)(sub + 1);
        memcpy(sub->channel, channel, len);
        sub->channel_len = len;
        list_init(&sub->listeners);
        if (hashmap_put(&subscriber.channels, sub->channel, len, sub) != 0) {
            free(sub);
            return -ENOMEM;
        }
        stats.subscribed_channels++;
    }
    list_push_tail(&sub->listeners, &listener->link);
    listener->subscription = sub;
    sub_settle(sub);
    return 0;
}

void subscriber_unlisten(struct backend_listener *listener)
{
    struct subscription *sub = listener->subscription;

    if (sub == NULL)
        return;
    list_remove(&listener->link);
    listener->subscription = NULL;
    sub_settle(sub);
}

bool subscriber_ready(void)
{
    return redis_link_ready(&subscriber.link);
}
