/*
 * subscriber.c - (S)SUBSCRIBE/(S)UNSUBSCRIBE bookkeeping and message
 * fan-out.
 *
 * Each channel moves IDLE -> SUBSCRIBING -> ACTIVE -> UNSUBSCRIBING ->
 * IDLE, and never has a subscribe and an unsubscribe in flight at once:
 * a listener that arrives while the channel is being unsubscribed waits
 * for the unsubscribe reply, then subscribes again, so each reply is
 * read against one state. The link reads its own replies (redis_link.h,
 * on_push): a request expects its confirmation by kind and channel, and
 * every message, or an unsubscription Redis sends unasked, comes to
 * on_push. A subscription is freed when nobody listens and nothing about
 * it is in flight.
 */
#include "backend/subscriber.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis_link.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/stats.h"

enum sub_state { SUB_IDLE, SUB_SUBSCRIBING, SUB_ACTIVE, SUB_UNSUBSCRIBING };

struct subscription {
    struct redis_request req; /* the (un)subscribe in flight */
    struct subscriber *subscriber;
    char *channel; /* the map's key */
    size_t channel_len;
    struct list_node listeners; /* struct backend_listener.link */
    enum sub_state state;
};

/* The words of each flavour, and the kinds of array Redis answers with. */
struct pubsub_words {
    const char *subscribe, *unsubscribe, *message;
    const char *subscribed, *unsubscribed;
};

static const struct pubsub_words global_words = {
    "SUBSCRIBE", "UNSUBSCRIBE", "message", "subscribe", "unsubscribe"};
static const struct pubsub_words sharded_words = {
    "SSUBSCRIBE", "SUNSUBSCRIBE", "smessage", "ssubscribe", "sunsubscribe"};

struct subscriber {
    struct redis_link link;
    struct redis_request ping; /* the connection's first request */
    struct hashmap channels;
    const struct pubsub_words *words;
    const struct subscriber_events *events;
};

static void on_pubsub_reply(struct redis_request *req, redisReply *reply);

static void send_pubsub(struct subscription *sub, bool subscribe)
{
    const struct pubsub_words *w = sub->subscriber->words;
    const char *verb = subscribe ? w->subscribe : w->unsubscribe;
    const char *argv[] = {verb, sub->channel};
    size_t len[] = {strlen(verb), sub->channel_len};

    sub->req.on_reply = on_pubsub_reply;
    sub->req.expect = subscribe ? w->subscribed : w->unsubscribed;
    sub->req.expect_channel = sub->channel;
    sub->req.expect_channel_len = sub->channel_len;
    if (redis_link_send(&sub->subscriber->link, &sub->req, 2, argv, len) != 0) {
        /* Not connected: the reconnect resubscribes whoever listens. */
        sub->state = SUB_IDLE;
        return;
    }
    sub->state = subscribe ? SUB_SUBSCRIBING : SUB_UNSUBSCRIBING;
}

static void sub_free_if_unused(struct subscription *sub)
{
    if (sub->state != SUB_IDLE || !list_empty(&sub->listeners))
        return;
    hashmap_remove(&sub->subscriber->channels, sub->channel, sub->channel_len);
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
        send_pubsub(sub, true);
    else if (!wanted && sub->state == SUB_ACTIVE)
        send_pubsub(sub, false);
    sub_free_if_unused(sub);
}

static bool is_kind(const redisReply *reply, const char *kind)
{
    return strcmp(reply->element[0]->str, kind) == 0;
}

static void on_pubsub_reply(struct redis_request *req, redisReply *reply)
{
    struct subscription *sub = (struct subscription *)req;
    struct subscriber *s = sub->subscriber;

    if (reply == NULL) { /* connection gone */
        sub->state = SUB_IDLE;
        sub_free_if_unused(sub);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        /* A sharded channel whose slot is not this master's (MOVED). */
        log_info("redis %s: %s %.*s: %s", s->link.label,
                 sub->state == SUB_SUBSCRIBING ? s->words->subscribe
                                               : s->words->unsubscribe,
                 (int)sub->channel_len, sub->channel, reply->str);
        sub->state = SUB_IDLE;
        sub_free_if_unused(sub);
        s->events->on_dropped(s);
        return;
    }
    if (is_kind(reply, s->words->subscribed)) {
        sub->state = SUB_ACTIVE;
        /* Messages sent before this point were missed: look again. A
         * listener that left meanwhile settles the channel itself. */
        if (list_empty(&sub->listeners))
            sub_settle(sub);
        else
            notify_listeners(sub, NULL, 0);
    } else {
        sub->state = SUB_IDLE;
        sub_settle(sub);
    }
}

/* A message, or a sharded channel Redis unsubscribed because its slot
 * moved. */
static void on_push(struct redis_link *link, redisReply *reply)
{
    struct subscriber *s = (struct subscriber *)link;
    struct subscription *sub;
    const redisReply *channel;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING)
        return;
    channel = reply->element[1];
    sub = hashmap_get(&s->channels, channel->str, channel->len);
    if (sub == NULL)
        return;
    if (is_kind(reply, s->words->message)) {
        stats.unlock_messages++;
        if (reply->element[2]->type == REDIS_REPLY_STRING)
            notify_listeners(sub, reply->element[2]->str,
                             reply->element[2]->len);
    } else if (is_kind(reply, s->words->unsubscribed) &&
               sub->state == SUB_ACTIVE) {
        log_info("redis %s: %.*s unsubscribed by Redis (its slot moved)",
                 link->label, (int)sub->channel_len, sub->channel);
        sub->state = SUB_IDLE;
        sub_free_if_unused(sub);
        s->events->on_dropped(s);
    }
}

static void resubscribe_one(void *value, void *arg)
{
    (void)arg;
    sub_settle(value);
}

void subscriber_resubscribe(struct subscriber *s)
{
    hashmap_foreach(&s->channels, resubscribe_one, NULL);
}

/* Ready once a PING is answered: its reply comes after AUTH's and
 * SELECT's, and a refused AUTH drops the connection before it, so a
 * wrong password backs off instead of looking ready for a moment. */
static void on_ping_reply(struct redis_request *req, redisReply *reply)
{
    struct subscriber *s = (struct subscriber *)req->link;

    if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        return; /* lost, or already being dropped */
    redis_link_set_ready(req->link);
    subscriber_resubscribe(s);
}

static void on_connected(struct redis_link *link)
{
    static const char *const argv[] = {"PING"};
    static const size_t len[] = {4};
    struct subscriber *s = (struct subscriber *)link;

    s->ping.on_reply = on_ping_reply;
    if (redis_link_send(link, &s->ping, 1, (const char **)argv, len) != 0)
        redis_link_reset(link, "cannot send PING");
}

static void on_readiness(struct redis_link *link)
{
    struct subscriber *s = (struct subscriber *)link;

    s->events->on_change(s);
}

struct subscriber *subscriber_new(uv_loop_t *loop, const struct config *cfg,
                                  const char *label, bool sharded,
                                  const struct subscriber_events *events)
{
    struct subscriber *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (redis_link_init(&s->link, loop, cfg, label) != 0) {
        free(s);
        return NULL;
    }
    hashmap_init(&s->channels);
    s->words = sharded ? &sharded_words : &global_words;
    s->events = events;
    s->link.on_connected = on_connected;
    s->link.on_readiness = on_readiness;
    s->link.on_push = on_push;
    return s;
}

void subscriber_move(struct subscriber *s, const struct redis_addr *addr)
{
    redis_link_move(&s->link, addr);
}

void subscriber_stop(struct subscriber *s)
{
    redis_link_stop(&s->link, "its server left the cluster");
}

void subscriber_close(struct subscriber *s)
{
    redis_link_close(&s->link);
}

static void free_subscription(void *value, void *arg)
{
    (void)arg;
    free(value);
}

void subscriber_free(struct subscriber *s)
{
    if (s == NULL)
        return;
    hashmap_foreach(&s->channels, free_subscription, NULL);
    hashmap_free(&s->channels);
    free(s);
}

int subscriber_listen(struct subscriber *s, struct backend_listener *listener,
                      const char *channel, size_t len)
{
    struct subscription *sub = hashmap_get(&s->channels, channel, len);

    if (sub == NULL) {
        sub = calloc(1, sizeof(*sub) + len + 1);
        if (sub == NULL)
            return -ENOMEM;
        sub->subscriber = s;
        sub->channel = (char *)(sub + 1);
        memcpy(sub->channel, channel, len);
        sub->channel_len = len;
        list_init(&sub->listeners);
        if (hashmap_put(&s->channels, sub->channel, len, sub) != 0) {
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

struct pick {
    bool (*which)(const char *channel, size_t len, void *arg);
    void *arg;
    struct subscription **found;
    size_t count;
    bool failed;
};

static void pick_one(void *value, void *arg)
{
    struct subscription *sub = value;
    struct pick *pick = arg;
    struct subscription **found;

    if (pick->failed || list_empty(&sub->listeners) ||
        !pick->which(sub->channel, sub->channel_len, pick->arg))
        return;
    found = realloc(pick->found, (pick->count + 1) * sizeof(*found));
    if (found == NULL) {
        pick->failed = true;
        return;
    }
    pick->found = found;
    pick->found[pick->count++] = sub;
}

/* The listeners of one channel leave `from` (which unsubscribes it) and
 * listen on `to` (which subscribes it, and tells them to look again). */
static void hand_over_one(struct subscription *sub, struct subscriber *to)
{
    struct list_node moving, *node;
    char *channel = malloc(sub->channel_len + 1);
    size_t len = sub->channel_len;

    if (channel == NULL) {
        log_error("out of memory moving the listeners of %.*s",
                  (int)sub->channel_len, sub->channel);
        return;
    }
    memcpy(channel, sub->channel, len);
    list_init(&moving);
    while ((node = list_first(&sub->listeners)) != NULL) {
        list_remove(node);
        list_push_tail(&moving, node);
        list_entry(node, struct backend_listener, link)->subscription = NULL;
    }
    sub_settle(sub);
    while ((node = list_first(&moving)) != NULL) {
        struct backend_listener *l =
            list_entry(node, struct backend_listener, link);

        list_remove(node);
        if (subscriber_listen(to, l, channel, len) != 0)
            log_error("out of memory: a waiter on %.*s is not told of "
                      "releases",
                      (int)len, channel);
    }
    free(channel);
}

void subscriber_hand_over(struct subscriber *from, struct subscriber *to,
                          bool (*which)(const char *channel, size_t len,
                                        void *arg),
                          void *arg)
{
    struct pick pick = {which, arg, NULL, 0, false};

    if (from == to)
        return;
    hashmap_foreach(&from->channels, pick_one, &pick);
    if (pick.failed)
        log_error("out of memory moving listeners between subscribers");
    for (size_t i = 0; i < pick.count; i++)
        hand_over_one(pick.found[i], to);
    free(pick.found);
}

bool subscriber_ready(const struct subscriber *s)
{
    return redis_link_ready(&s->link);
}
