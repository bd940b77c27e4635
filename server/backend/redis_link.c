/*
 * redis_link.c - connect, handshake, watch and reconnect one Redis
 * connection.
 *
 * Watching is what notices a stopped Redis (SIGSTOP, a VM paused, a
 * partition without RST) without waiting for traffic: a link that has
 * been silent for ping_interval_ms with nothing in flight sends a probe;
 * a link silent for ping_interval_ms with something in flight (the probe
 * or any request) stalls: it no longer counts as ready, so new commands
 * for its keys get -UNAVAILABLE at once instead of queueing behind a
 * Redis that does not answer, and it is ready again with the next reply,
 * without a reconnect. Silent for command_timeout_ms, it is dropped and
 * redialled as before. While commands flow the replies keep it from ever
 * being silent that long, so no probe is sent.
 *
 * The libuv glue is our own rather than hiredis 0.14's adapters/libuv.h:
 * that adapter drops poll events that come with an error status, so a
 * refused or reset connection never reaches hiredis and the context
 * hangs in "connecting" forever. Here an error status is handed to
 * hiredis as readable+writable, and hiredis finds the socket error itself.
 */
#include "backend/redis_link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"

#define BACKOFF_START_MS 50

/* ---- hiredis <-> libuv ------------------------------------------------ */

/*
 * Writes are not polled for. hiredis asks for write readiness each time
 * a command is queued; answering that with epoll costs two epoll_ctl
 * calls and a whole loop turn per command. Instead a connected context
 * that has output joins the flush list, and a prepare handle, which runs
 * once per loop turn just before libuv blocks, writes every listed
 * context: all commands queued during one turn leave in one write(2),
 * with no wait. Only when the socket is full, or while connecting
 * (hiredis 0.14 cannot tell a connect in progress from a finished one
 * unless the socket polled writable), is writability polled as usual.
 */
struct link_poll {
    uv_poll_t handle;
    redisAsyncContext *ac; /* NULL once hiredis has let go */
    int events;            /* what the poll handle watches */
    bool write_wanted;     /* hiredis has output */
    bool flushing;
    struct list_node flush_link;
};

static struct {
    uv_prepare_t prepare;
    struct list_node flush;
    struct buffer command; /* reused to format each command */
} link_io;

static void push_read(redisAsyncContext *ac);

static void poll_cb(uv_poll_t *handle, int status, int events)
{
    struct link_poll *p = handle->data;

    if (status < 0)
        events = p->events; /* let hiredis read the socket error */
    if (p->ac != NULL && (events & UV_READABLE)) {
        struct redis_link *link = p->ac->data;

        if (link->on_push != NULL && (p->ac->c.flags & REDIS_CONNECTED))
            push_read(p->ac);
        else
            redisAsyncHandleRead(p->ac);
    }
    if (p->ac != NULL && (events & UV_WRITABLE))
        redisAsyncHandleWrite(p->ac);
}

static void poll_update(struct link_poll *p, int add, int del)
{
    int events = (p->events | add) & ~del;

    if (events == p->events)
        return;
    p->events = events;
    if (events)
        uv_poll_start(&p->handle, events, poll_cb);
    else
        uv_poll_stop(&p->handle);
}

static void flush_pending(uv_prepare_t *prepare)
{
    struct list_node *node;

    while ((node = list_first(&link_io.flush)) != NULL) {
        struct link_poll *p = list_entry(node, struct link_poll, flush_link);

        list_remove(node);
        p->flushing = true;
        redisAsyncHandleWrite(p->ac);
        p->flushing = false;
        if (p->ac != NULL && p->write_wanted) /* socket full: poll */
            poll_update(p, UV_WRITABLE, 0);
    }
    uv_prepare_stop(prepare);
}

static void poll_add_read(void *d)
{
    poll_update(d, UV_READABLE, 0);
}
static void poll_del_read(void *d)
{
    poll_update(d, 0, UV_READABLE);
}

static void poll_add_write(void *d)
{
    struct link_poll *p = d;

    p->write_wanted = true;
    if (p->flushing || list_linked(&p->flush_link) || (p->events & UV_WRITABLE))
        return;
    if (!(p->ac->c.flags & REDIS_CONNECTED)) {
        poll_update(p, UV_WRITABLE, 0);
        return;
    }
    list_push_tail(&link_io.flush, &p->flush_link);
    uv_prepare_start(&link_io.prepare, flush_pending);
}

static void poll_del_write(void *d)
{
    struct link_poll *p = d;

    p->write_wanted = false;
    if (list_linked(&p->flush_link))
        list_remove(&p->flush_link);
    poll_update(p, 0, UV_WRITABLE);
}

static void poll_closed(uv_handle_t *handle)
{
    free(handle->data);
}

static void poll_cleanup(void *d)
{
    struct link_poll *p = d;

    p->ac = NULL;
    if (list_linked(&p->flush_link))
        list_remove(&p->flush_link);
    uv_close((uv_handle_t *)&p->handle, poll_closed);
}

static int poll_attach(redisAsyncContext *ac, uv_loop_t *loop)
{
    struct link_poll *p = calloc(1, sizeof(*p));
    int err;

    if (p == NULL)
        return -ENOMEM;
    err = uv_poll_init(loop, &p->handle, ac->c.fd);
    if (err != 0) {
        free(p);
        return err;
    }
    list_init(&p->flush_link);
    p->handle.data = p;
    p->ac = ac;
    ac->ev.data = p;
    ac->ev.addRead = poll_add_read;
    ac->ev.delRead = poll_del_read;
    ac->ev.addWrite = poll_add_write;
    ac->ev.delWrite = poll_del_write;
    ac->ev.cleanup = poll_cleanup;
    return 0;
}

int redis_links_init(uv_loop_t *loop)
{
    list_init(&link_io.flush);
    return uv_prepare_init(loop, &link_io.prepare);
}

void redis_links_close(void)
{
    uv_close((uv_handle_t *)&link_io.prepare, NULL);
    buffer_free(&link_io.command);
}

/* ---- connection life -------------------------------------------------- */

static void link_connect(struct redis_link *link);
static void link_watch(struct redis_link *link);

static void timer_fired(uv_timer_t *timer)
{
    struct redis_link *link = timer->data;

    switch (link->state) {
    case LINK_DOWN:
        link_connect(link);
        break;
    case LINK_CONNECTING:
    case LINK_HANDSHAKE:
        redis_link_reset(link, "connect timed out");
        break;
    case LINK_READY:
        link_watch(link);
        break;
    case LINK_CLOSED:
        break;
    }
}

/* The probe's reply needs nothing more than what on_reply has done:
 * count it answered and note the progress. */
static void on_probe_reply(struct redis_request *req, redisReply *reply)
{
    (void)reply;
    req->link->probe_inflight = false;
}

/*
 * PING, except on a connection whose owner set probe_channel (one in
 * pub/sub mode through hiredis's callbacks: the sentinels' event links).
 * RESP2 allows PING there and Redis answers it as a pub/sub array
 * ["pong", ""], but hiredis 0.14 never hands that to the PING's
 * callback: it queues the callback on sub.invalid, looks the "pong" up
 * as a pattern named "" (the leading 'p'), finds none, and drops the
 * reply (or hands it to the callback of the reply read just before). The
 * callback then waits, counted in flight, until the connection goes. A
 * SUBSCRIBE of a channel of our own is answered through hiredis's channel
 * table like any subscription, and subscribing again to a channel already
 * subscribed is answered again. A link that reads its own replies (on_push)
 * expects the "pong" array and needs no such channel.
 */
static void probe_send(struct redis_link *link)
{
    const char *argv[] = {"PING", NULL};
    size_t len[] = {4, 0};
    int err;

    link->probe.on_reply = on_probe_reply;
    link->probe.expect = "pong"; /* what a subscribed connection answers */
    if (link->probe_channel == NULL) {
        err = redis_link_send(link, &link->probe, 1, argv, len);
    } else {
        argv[0] = "SUBSCRIBE";
        len[0] = 9;
        argv[1] = link->probe_channel;
        len[1] = strlen(link->probe_channel);
        err = redis_link_send_pubsub(link, &link->probe, 2, argv, len);
    }
    if (err == 0) {
        link->probe_inflight = true;
        stats.redis_pings++;
    }
}

static void link_stall(struct redis_link *link)
{
    if (link->stalled)
        return;
    link->stalled = true;
    stats.redis_stalls++;
    log_warn("redis %s: no reply for %lld ms; not ready until Redis answers",
             link->label, (long long)link->cfg->ping_interval_ms);
    link->on_readiness(link);
}

/*
 * The liveness watch of a ready link, run by its timer. The timer is not
 * re-armed on each reply (a heap update per reply while commands flow);
 * it fires at the next deadline as last_progress_ms stood then and, if
 * replies have moved it, is armed again for the rest: a busy link costs
 * one wake-up per ping interval. It never sleeps longer than the shorter
 * of the two settings, so a request sent meanwhile (whose deadlines are
 * that far away at least) is never watched late, and a SIGHUP'd value
 * applies within one old interval.
 */
static void link_watch(struct redis_link *link)
{
    uint64_t interval =
        (uint64_t)(link->cfg->ping_interval_ms + link->patience_ms);
    uint64_t timeout = (uint64_t)link->cfg->command_timeout_ms;
    uint64_t cap = interval < timeout ? interval : timeout;
    uint64_t silent = uv_now(link->loop) - link->last_progress_ms;
    uint64_t due = timeout;

    if (link->inflight == 0) {
        if (silent >= interval) {
            probe_send(link);
            silent = 0;
        }
        due = interval;
    } else if (silent >= timeout) {
        redis_link_reset(link, "no reply within command_timeout_ms");
        return;
    } else if (silent < interval && interval < timeout) {
        due = interval;
    }
    uv_timer_start(&link->timer, timer_fired,
                   due - silent < cap ? due - silent : cap, 0);
    /* Last: the owner's on_readiness may run the engine. */
    if (link->inflight > 0 && silent >= interval)
        link_stall(link);
}

static void schedule_reconnect(struct redis_link *link)
{
    link->state = LINK_DOWN;
    uv_timer_start(&link->timer, timer_fired, (uint64_t)link->backoff_ms, 0);
    link->backoff_ms *= 2;
    if (link->backoff_ms > link->cfg->reconnect_max_ms)
        link->backoff_ms = link->cfg->reconnect_max_ms;
}

/* Logs a failure once while it repeats: a Redis that stays away, or a
 * password that stays wrong, is reported by the backend's outage summary
 * (redis_backend.c), not on every retry. */
static void link_failed(struct redis_link *link, enum log_level level,
                        const char *what, const char *why)
{
    char text[sizeof(link->last_error)];

    snprintf(text, sizeof(text), "%s: %s", what, why);
    if (strcmp(text, link->last_error) == 0) {
        log_debug("redis %s: %s", link->label, text);
        return;
    }
    memcpy(link->last_error, text, sizeof(text));
    log_write(level, "redis %s: %s", link->label, text);
}

/* A link that reads its own replies answers what is in flight with NULL
 * when the connection goes; hiredis holds no callback of theirs. */
static void push_drain(struct redis_link *link)
{
    struct list_node *node;

    while ((node = list_first(&link->pending)) != NULL) {
        struct redis_request *req =
            list_entry(node, struct redis_request, pending);

        list_remove(node);
        req->on_reply(req, NULL);
    }
}

/* The context is gone or going; forget it and maybe reconnect. A ready
 * link "drops" a connection it let go itself, and "loses" one Redis
 * closed. */
static void link_lost(struct redis_link *link, const char *what,
                      const char *why)
{
    bool was_ready = link->state == LINK_READY;
    bool refused = link->refused;

    link->ac = NULL;
    link->inflight = 0;
    link->probe_inflight = false;
    link->stalled = false;
    link->refused = false;
    push_drain(link);
    if (link->state == LINK_CLOSED)
        return;
    if (was_ready)
        stats.redis_reconnects++;
    else
        stats.redis_connect_failures++;
    link_failed(link,
                refused     ? LOG_LEVEL_ERROR
                : was_ready ? LOG_LEVEL_WARN
                            : LOG_LEVEL_INFO,
                refused ? "refused" : was_ready ? what : "connect failed", why);
    schedule_reconnect(link);
    if (was_ready)
        link->on_readiness(link);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct redis_link *link = ac->data;

    if (link->ac == ac)
        link_lost(link, "connection lost",
                  status == REDIS_OK ? "closed" : ac->errstr);
}

static void on_handshake_reply(struct redis_request *req, redisReply *reply)
{
    struct redis_link *link = req->link;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
        link->ac != NULL) {
        link->refused = true; /* logged once, at error level */
        redis_link_reset(link, reply->str);
    }
}

static void send_handshake(struct redis_link *link)
{
    const struct redis_login *login = &link->login;
    char db[24];

    link->handshake.on_reply = on_handshake_reply;
    link->select.on_reply = on_handshake_reply;
    if (login->password[0] != '\0') {
        /* AUTH [username] password */
        const char *argv[] = {"AUTH", login->username, login->password};
        size_t len[] = {4, strlen(login->username), strlen(login->password)};
        int skip = login->username[0] == '\0';

        argv[skip] = "AUTH";
        len[skip] = 4;
        redis_link_send(link, &link->handshake, 3 - skip, argv + skip,
                        len + skip);
    }
    if (login->db != 0) {
        const char *argv[] = {"SELECT", db};
        size_t len[] = {6, (size_t)snprintf(db, sizeof(db), "%lld",
                                            (long long)login->db)};
        redis_link_send(link, &link->select, 2, argv, len);
    }
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct redis_link *link = ac->data;

    if (link->ac != ac)
        return;
    if (status != REDIS_OK) { /* hiredis frees the context after this */
        link_lost(link, "connect failed", ac->errstr);
        return;
    }
    /* Keepalive notices a vanished host; a Unix socket has none, and
     * asking for it there fails and poisons the context (EOPNOTSUPP). */
    if (link->addr.unix_socket[0] == '\0')
        redisEnableKeepAlive((redisContext *)&ac->c);
    link->state = LINK_HANDSHAKE;
    link->last_progress_ms = uv_now(link->loop);
    send_handshake(link);
    link->on_connected(link);
}

static void link_connect(struct redis_link *link)
{
    const struct redis_addr *addr = &link->addr;
    redisAsyncContext *ac;

    if (addr->unix_socket[0] != '\0')
        ac = redisAsyncConnectUnix(addr->unix_socket);
    else
        ac = redisAsyncConnect(addr->host, addr->port);
    if (ac == NULL || ac->err != 0) {
        stats.redis_connect_failures++;
        link_failed(link, LOG_LEVEL_INFO, "connect failed",
                    ac ? ac->errstr : "out of memory");
        if (ac != NULL)
            redisAsyncFree(ac);
        schedule_reconnect(link);
        return;
    }
    if (poll_attach(ac, link->loop) != 0) {
        log_error("redis %s: cannot watch the socket", link->label);
        redisAsyncFree(ac);
        schedule_reconnect(link);
        return;
    }
    ac->data = link;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    link->ac = ac;
    link->state = LINK_CONNECTING;
    uv_timer_start(&link->timer, timer_fired,
                   (uint64_t)link->cfg->connect_timeout_ms, 0);
}

int redis_link_init(struct redis_link *link, uv_loop_t *loop,
                    const struct config *cfg, const char *label)
{
    memset(link, 0, sizeof(*link));
    snprintf(link->label, sizeof(link->label), "%s", label);
    link->loop = loop;
    link->cfg = cfg;
    link->state = LINK_DOWN;
    link->backoff_ms = BACKOFF_START_MS;
    link->timer.data = link;
    list_init(&link->pending);
    snprintf(link->addr.host, sizeof(link->addr.host), "%s", cfg->redis_host);
    link->addr.port = (int)cfg->redis_port;
    snprintf(link->addr.unix_socket, sizeof(link->addr.unix_socket), "%s",
             cfg->redis_unix_socket);
    link->login = (struct redis_login){cfg->redis_username,
                                       cfg->redis_password, cfg->redis_db};
    return uv_timer_init(loop, &link->timer);
}

void redis_link_move(struct redis_link *link, const struct redis_addr *addr)
{
    if (link->state == LINK_CLOSED)
        return;
    link->addr = *addr;
    link->last_error[0] = '\0';
    if (link->ac != NULL)
        redis_link_reset(link, "moving to another server");
    link->backoff_ms = BACKOFF_START_MS;
    uv_timer_start(&link->timer, timer_fired, 0, 0);
}

const char *redis_addr_text(const struct redis_addr *addr, char *buf,
                            size_t size)
{
    if (addr->unix_socket[0] != '\0')
        snprintf(buf, size, "%s", addr->unix_socket);
    else if (addr->port == 0)
        snprintf(buf, size, "%s", "");
    else
        snprintf(buf, size, "%s:%d", addr->host, addr->port);
    return buf;
}

bool redis_addr_equal(const struct redis_addr *a, const struct redis_addr *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0 &&
           strcmp(a->unix_socket, b->unix_socket) == 0;
}

void redis_link_start(struct redis_link *link)
{
    link_connect(link);
}

void redis_link_set_ready(struct redis_link *link)
{
    if (link->state != LINK_HANDSHAKE)
        return;
    link->state = LINK_READY;
    link->backoff_ms = BACKOFF_START_MS;
    link->last_error[0] = '\0';
    log_info("redis %s: ready", link->label);
    link_watch(link);
    link->on_readiness(link);
}

bool redis_link_ready(const struct redis_link *link)
{
    return link->state == LINK_READY && !link->stalled;
}

unsigned redis_link_requests(const struct redis_link *link)
{
    return link->inflight - link->probe_inflight;
}

/* Any reply, a pub/sub message included, shows Redis is answering: a
 * stalled link is ready again, on the connection it has. */
static void note_progress(struct redis_link *link, redisAsyncContext *ac,
                          bool answered)
{
    if (link->ac != ac)
        return;
    if (answered && link->inflight > 0)
        link->inflight--;
    link->last_progress_ms = uv_now(link->loop);
    if (link->stalled) {
        link->stalled = false;
        log_info("redis %s: answering again", link->label);
        link->on_readiness(link);
    }
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct redis_request *req = privdata;

    if (reply != NULL)
        histogram_observe(&latency.redis_rtt_seconds,
                          (uv_hrtime() - req->sent_ns) / 1000);
    note_progress(req->link, ac, true);
    req->on_reply(req, reply);
}

/* A pub/sub reply answers a request only when it confirms one; a message
 * is progress all the same. */
static void on_pubsub_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    struct redis_request *req = privdata;
    redisReply *reply = r;
    bool confirms = reply != NULL && reply->type == REDIS_REPLY_ARRAY &&
                    reply->elements == 3 &&
                    reply->element[0]->type == REDIS_REPLY_STRING &&
                    strcmp(reply->element[0]->str, "message") != 0;

    note_progress(req->link, ac, confirms);
    req->on_reply(req, reply);
}

/* Whether reply, a pub/sub array, is the one req expects. */
static bool push_answers(const struct redis_request *req,
                         const redisReply *reply)
{
    const redisReply *kind = reply->element[0];
    const redisReply *channel = reply->elements > 1 ? reply->element[1] : NULL;

    if (req->expect == NULL || strcmp(kind->str, req->expect) != 0)
        return false;
    return req->expect_channel == NULL ||
           (channel != NULL && channel->type == REDIS_REPLY_STRING &&
            channel->len == req->expect_channel_len &&
            memcmp(channel->str, req->expect_channel, channel->len) == 0);
}

/* One reply of a link that reads its own: the oldest request's answer,
 * or a push. */
static void push_dispatch(struct redis_link *link, redisAsyncContext *ac,
                          redisReply *reply)
{
    struct list_node *head = list_first(&link->pending);
    struct redis_request *req =
        head ? list_entry(head, struct redis_request, pending) : NULL;
    bool pubsub = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                  reply->element[0]->type == REDIS_REPLY_STRING;

    if (req == NULL || (pubsub && !push_answers(req, reply))) {
        note_progress(link, ac, false);
        link->on_push(link, reply);
        return;
    }
    list_remove(head);
    note_progress(link, ac, true);
    req->on_reply(req, reply);
}

/* Reads what the socket has and hands out every whole reply; a read or
 * protocol error drops the connection. */
static void push_read(redisAsyncContext *ac)
{
    struct redis_link *link = ac->data;
    void *reply = NULL;

    if (redisBufferRead(&ac->c) != REDIS_OK) {
        redis_link_reset(link, ac->c.errstr);
        return;
    }
    while (link->ac == ac) {
        if (redisGetReply(&ac->c, &reply) != REDIS_OK) {
            redis_link_reset(link, ac->c.errstr);
            return;
        }
        if (reply == NULL)
            return;
        push_dispatch(link, ac, reply);
        freeReplyObject(reply);
    }
}

/*
 * Encodes a command as a RESP array of bulk strings. hiredis's own
 * redisFormatCommandArgv builds it with sdscatfmt, which was the largest
 * single cost of a lock command in rlockd's profile. The text is
 * NUL-terminated (the NUL not counted), as hiredis's own is: hiredis
 * walks a SUBSCRIBE's channel names with strchr.
 */
static int format_command(struct buffer *out, int argc, const char **argv,
                          const size_t *argv_len)
{
    size_t need = FORMAT_INT_MAX + 4 + 1;
    int err;

    for (int i = 0; i < argc; i++)
        need += FORMAT_INT_MAX + 6 + argv_len[i];
    buffer_reset(out);
    err = buffer_reserve(out, need);
    if (err != 0)
        return err;
    buffer_append_resp_line(out, '*', argc);
    for (int i = 0; i < argc; i++) {
        buffer_append_resp_line(out, '$', (int64_t)argv_len[i]);
        buffer_append(out, argv[i], argv_len[i]);
        buffer_append(out, "\r\n", 2);
    }
    out->data[out->len] = '\0';
    return 0;
}

static int link_send(struct redis_link *link, struct redis_request *req,
                     redisCallbackFn *callback, int argc, const char **argv,
                     const size_t *argv_len)
{
    int err;

    if (link->ac == NULL ||
        (link->state != LINK_READY && link->state != LINK_HANDSHAKE))
        return -ENOTCONN;
    err = format_command(&link_io.command, argc, argv, argv_len);
    if (err != 0)
        return err;
    req->link = link;
    req->sent_ns = uv_hrtime();
    if (link->on_push != NULL) {
        /* Queued without a hiredis callback: push_read answers it. */
        if (redisAppendFormattedCommand(&link->ac->c, link_io.command.data,
                                        link_io.command.len) != REDIS_OK)
            return -ENOMEM;
        poll_add_write(link->ac->ev.data);
        list_push_tail(&link->pending, &req->pending);
    } else if (redisAsyncFormattedCommand(link->ac, callback, req,
                                          link_io.command.data,
                                          link_io.command.len) != REDIS_OK) {
        return -ENOTCONN;
    }
    if (link->inflight++ == 0)
        link->last_progress_ms = uv_now(link->loop);
    return 0;
}

int redis_link_send(struct redis_link *link, struct redis_request *req,
                    int argc, const char **argv, const size_t *argv_len)
{
    return link_send(link, req, on_reply, argc, argv, argv_len);
}

int redis_link_send_pubsub(struct redis_link *link, struct redis_request *req,
                           int argc, const char **argv, const size_t *argv_len)
{
    return link_send(link, req, on_pubsub_reply, argc, argv, argv_len);
}

void redis_link_reset(struct redis_link *link, const char *why)
{
    redisAsyncContext *ac = link->ac;

    if (ac == NULL)
        return;
    /* Forget the context first, so the NULL replies redisAsyncFree is
     * about to deliver already see the link as not ready. */
    link_lost(link, "dropping connection", why);
    redisAsyncFree(ac);
}

void redis_link_stop(struct redis_link *link, const char *why)
{
    if (link->state == LINK_CLOSED)
        return;
    redis_link_reset(link, why);
    link->state = LINK_DOWN;
    uv_timer_stop(&link->timer);
}

void redis_link_close(struct redis_link *link)
{
    redisAsyncContext *ac = link->ac;

    link->state = LINK_CLOSED;
    link->ac = NULL;
    if (ac != NULL)
        redisAsyncFree(ac);
    uv_timer_stop(&link->timer);
    uv_close((uv_handle_t *)&link->timer, NULL);
}
