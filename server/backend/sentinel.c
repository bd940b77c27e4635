/*
 * sentinel.c - the sentinels' links, the ask round and the +switch-master
 * subscription.
 *
 * An ask goes to one sentinel at a time, in turn: one that does not
 * answer, or does not know the master, passes the question to the next,
 * and a round ends when every reachable one has been asked once (so a
 * master no sentinel knows is not asked for in a tight loop). Rounds
 * start every sentinel_poll_ms, in case an event was missed, and at once
 * when the backend doubts its master. A sentinel whose event connection
 * comes back is asked too: a switch may have happened while it was away.
 */
#include "backend/sentinel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define SWITCH_CHANNEL "+switch-master"

struct sentinel_node {
    struct redis_link query;  /* SENTINEL get-master-addr-by-name */
    struct redis_link events; /* subscribed to +switch-master */
    struct redis_request ask;
    struct redis_request subscribe;
    bool asking;
};

static struct {
    const struct config *cfg;
    struct sentinel_node *nodes;
    unsigned count;
    unsigned next;       /* the one asked next */
    unsigned round_left; /* sentinels still to ask in this round */
    bool ask_wanted;     /* none could be asked: ask the first that can */
    uv_timer_t poll;
    sentinel_master_fn *on_master;
} sentinel;

static void ask_next(void);

static void node_label(const struct sentinel_node *node, char *buf, size_t size)
{
    redis_addr_text(&node->query.addr, buf, size);
}

/* "host", "port" -> addr; 0 or -1. */
static int addr_from(const char *host, size_t host_len, const char *port,
                     struct redis_addr *addr)
{
    char *end;
    long p = strtol(port, &end, 10);

    if (host_len == 0 || host_len >= sizeof(addr->host) || *end != '\0' ||
        end == port || p < 1 || p > 65535)
        return -1;
    memset(addr, 0, sizeof(*addr));
    memcpy(addr->host, host, host_len);
    addr->port = (int)p;
    return 0;
}

/* ---- asking ----------------------------------------------------------- */

static void on_ask_reply(struct redis_request *req, redisReply *reply)
{
    struct sentinel_node *node =
        (struct sentinel_node *)((char *)req -
                                 offsetof(struct sentinel_node, ask));
    struct redis_addr addr;
    char label[300], source[340];

    node->asking = false;
    node_label(node, label, sizeof(label));
    if (reply != NULL && reply->type == REDIS_REPLY_ARRAY &&
        reply->elements == 2 && reply->element[0]->type == REDIS_REPLY_STRING &&
        reply->element[1]->type == REDIS_REPLY_STRING &&
        addr_from(reply->element[0]->str, reply->element[0]->len,
                  reply->element[1]->str, &addr) == 0) {
        sentinel.round_left = 0;
        snprintf(source, sizeof(source), "sentinel %s", label);
        sentinel.on_master(&addr, source, false);
        return;
    }
    if (reply != NULL)
        log_warn("sentinel %s: no master named '%s'%s%s", label,
                 sentinel.cfg->master_name,
                 reply->type == REDIS_REPLY_ERROR ? ": " : "",
                 reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    ask_next();
}

/* Asks the next sentinel of the round that can be asked now. */
static void ask_next(void)
{
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name",
                          sentinel.cfg->master_name};
    size_t len[] = {8, 23, strlen(sentinel.cfg->master_name)};

    while (sentinel.round_left > 0) {
        struct sentinel_node *node = &sentinel.nodes[sentinel.next];

        sentinel.next = (sentinel.next + 1) % sentinel.count;
        sentinel.round_left--;
        if (node->asking || !redis_link_ready(&node->query))
            continue;
        node->ask.on_reply = on_ask_reply;
        if (redis_link_send(&node->query, &node->ask, 3, argv, len) == 0) {
            node->asking = true;
            return;
        }
    }
}

void sentinel_ask(void)
{
    for (unsigned i = 0; i < sentinel.count; i++)
        if (sentinel.nodes[i].asking)
            return; /* its answer, or the next one's, is coming */
    sentinel.round_left = sentinel.count;
    sentinel.ask_wanted = sentinel_reachable() == 0;
    ask_next();
}

/* One-shot, re-armed with the current sentinel_poll_ms (a SIGHUP may
 * have changed it). */
static void poll_fired(uv_timer_t *timer)
{
    uv_timer_start(timer, poll_fired, (uint64_t)sentinel.cfg->sentinel_poll_ms,
                   0);
    sentinel_ask();
}

/* ---- the links --------------------------------------------------------- */

static void on_query_connected(struct redis_link *link)
{
    redis_link_set_ready(link); /* a refused AUTH drops it again */
}

static void on_query_readiness(struct redis_link *link)
{
    if (redis_link_ready(link) && sentinel.ask_wanted)
        sentinel_ask();
}

/* "<name> <old-ip> <old-port> <new-ip> <new-port>" */
static void on_switch_message(struct sentinel_node *node, const char *text)
{
    char name[256], old_ip[256], old_port[8], ip[256], port[8];
    char label[300], source[340];
    struct redis_addr addr;

    if (sscanf(text, "%255s %255s %7s %255s %7s", name, old_ip, old_port, ip,
               port) != 5 ||
        strcmp(name, sentinel.cfg->master_name) != 0 ||
        addr_from(ip, strlen(ip), port, &addr) != 0)
        return;
    node_label(node, label, sizeof(label));
    snprintf(source, sizeof(source), "+switch-master from sentinel %s", label);
    sentinel.on_master(&addr, source, true);
}

static void on_subscribe_reply(struct redis_request *req, redisReply *reply)
{
    struct sentinel_node *node =
        (struct sentinel_node *)((char *)req -
                                 offsetof(struct sentinel_node, subscribe));

    if (reply != NULL && reply->type == REDIS_REPLY_ARRAY &&
        node->events.state == LINK_HANDSHAKE) {
        redis_link_set_ready(&node->events);
        sentinel_ask(); /* a switch may have been missed meanwhile */
    }
}

/* A message on the event link (the only channel it subscribes to). */
static void on_events_push(struct redis_link *link, redisReply *reply)
{
    struct sentinel_node *node =
        (struct sentinel_node *)((char *)link -
                                 offsetof(struct sentinel_node, events));

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(reply->element[0]->str, "message") == 0 &&
        reply->element[2]->type == REDIS_REPLY_STRING)
        on_switch_message(node, reply->element[2]->str);
}

static void on_events_connected(struct redis_link *link)
{
    struct sentinel_node *node =
        (struct sentinel_node *)((char *)link -
                                 offsetof(struct sentinel_node, events));
    const char *argv[] = {"SUBSCRIBE", SWITCH_CHANNEL};
    size_t len[] = {9, sizeof(SWITCH_CHANNEL) - 1};

    node->subscribe.on_reply = on_subscribe_reply;
    node->subscribe.expect = "subscribe";
    node->subscribe.expect_channel = SWITCH_CHANNEL;
    node->subscribe.expect_channel_len = len[1];
    if (redis_link_send(link, &node->subscribe, 2, argv, len) != 0)
        redis_link_reset(link, "cannot send SUBSCRIBE");
}

/* Nothing waits on an event link: a switch it missed while down is
 * found by the ask its return starts (on_subscribe_reply). */
static void on_events_readiness(struct redis_link *link)
{
    (void)link;
}

/* ---- life --------------------------------------------------------------- */

static int node_init(struct sentinel_node *node, uv_loop_t *loop,
                     const struct config *cfg, const char *host, int port,
                     unsigned i)
{
    struct redis_link *links[] = {&node->query, &node->events};
    char label[32];

    for (int k = 0; k < 2; k++) {
        struct redis_link *link = links[k];
        int err;

        snprintf(label, sizeof(label), "sentinel[%u]%s", i,
                 k == 0 ? "" : ".events");
        if ((err = redis_link_init(link, loop, cfg, label)) != 0)
            return err;
        memset(&link->addr, 0, sizeof(link->addr));
        snprintf(link->addr.host, sizeof(link->addr.host), "%s", host);
        link->addr.port = port;
        link->login = (struct redis_login){cfg->sentinel_username,
                                           cfg->sentinel_password, 0};
    }
    node->query.on_connected = on_query_connected;
    node->query.on_readiness = on_query_readiness;
    node->events.on_connected = on_events_connected;
    node->events.on_readiness = on_events_readiness;
    node->events.on_push = on_events_push;
    return 0;
}

int sentinel_init(uv_loop_t *loop, const struct config *cfg,
                  sentinel_master_fn *on_master)
{
    const char *list = cfg->sentinels;
    char host[256];
    unsigned n = 0;
    int port, err;

    sentinel.cfg = cfg;
    sentinel.on_master = on_master;
    while (config_next_addr(&list, host, sizeof(host), &port) > 0)
        n++;
    if (n == 0)
        return -EINVAL;
    sentinel.nodes = calloc(n, sizeof(*sentinel.nodes));
    if (sentinel.nodes == NULL)
        return -ENOMEM;
    list = cfg->sentinels;
    for (unsigned i = 0; i < n; i++) {
        config_next_addr(&list, host, sizeof(host), &port);
        if ((err = node_init(&sentinel.nodes[i], loop, cfg, host, port, i)) !=
            0)
            return err;
        sentinel.count++;
    }
    return uv_timer_init(loop, &sentinel.poll);
}

void sentinel_start(void)
{
    sentinel.ask_wanted = true;
    for (unsigned i = 0; i < sentinel.count; i++) {
        redis_link_start(&sentinel.nodes[i].query);
        redis_link_start(&sentinel.nodes[i].events);
    }
    uv_timer_start(&sentinel.poll, poll_fired,
                   (uint64_t)sentinel.cfg->sentinel_poll_ms, 0);
}

unsigned sentinel_count(void)
{
    return sentinel.count;
}

unsigned sentinel_reachable(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < sentinel.count; i++)
        n += redis_link_ready(&sentinel.nodes[i].query);
    return n;
}

void sentinel_close(void)
{
    for (unsigned i = 0; i < sentinel.count; i++) {
        redis_link_close(&sentinel.nodes[i].query);
        redis_link_close(&sentinel.nodes[i].events);
    }
    uv_close((uv_handle_t *)&sentinel.poll, NULL);
}

void sentinel_free(void)
{
    free(sentinel.nodes);
    sentinel.nodes = NULL;
    sentinel.count = 0;
}
