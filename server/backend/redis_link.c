/*
 * redis_link.c - connect, handshake, watch and reconnect one Redis
 * connection, and carry its requests.
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
 * Never: touch the socket or OpenSSL. redis_link_conn.c moves the bytes
 * and parses replies, redis_link_tls.c encrypts them; both report here.
 */
#include "backend/redis_link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis_link_int.h"
#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"

#define BACKOFF_START_MS 50

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

/* PING; a connection in pub/sub mode answers it ["pong", ""], which the
 * probe expects (see push_answers). */
static void probe_send(struct redis_link *link)
{
    const char *argv[] = {"PING"};
    size_t len[] = {4};

    link->probe.on_reply = on_probe_reply;
    link->probe.expect = "pong";
    if (redis_link_send(link, &link->probe, 1, argv, len) == 0) {
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

/* What is in flight is answered with NULL when the connection goes. */
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

/* The connection is gone or going; forget it and maybe reconnect. A
 * ready link "drops" a connection it let go itself, and "loses" one Redis
 * closed. */
static void link_lost(struct redis_link *link, const char *what,
                      const char *why)
{
    bool was_ready = link->state == LINK_READY;
    bool tls = link->tls_failed, refused = link->refused || tls;

    link->conn = NULL;
    link->inflight = 0;
    link->probe_inflight = false;
    link->stalled = false;
    link->refused = false;
    link->tls_failed = false;
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
                tls         ? "tls"
                : refused   ? "refused"
                : was_ready ? what
                            : "connect failed",
                why);
    schedule_reconnect(link);
    if (was_ready)
        link->on_readiness(link);
}

/* Forgets the connection first, so the NULL replies push_drain delivers
 * already see the link as not ready, then closes its socket. */
void link_drop(struct redis_link *link, const char *what, const char *why)
{
    struct link_conn *conn = link->conn;

    if (conn == NULL)
        return;
    link_lost(link, what, why);
    link_conn_close(conn);
}

static void on_handshake_reply(struct redis_request *req, redisReply *reply)
{
    struct redis_link *link = req->link;

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
        link->conn != NULL) {
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
        size_t len[] = {
            6, (size_t)snprintf(db, sizeof(db), "%lld", (long long)login->db)};
        redis_link_send(link, &link->select, 2, argv, len);
    }
}

/* The connection carries commands now (TLS, when on, is established):
 * log in, and let the owner prepare it. */
void link_connected(struct redis_link *link)
{
    link->state = LINK_HANDSHAKE;
    link->last_progress_ms = uv_now(link->loop);
    send_handshake(link);
    link->on_connected(link);
}

static void link_connect(struct redis_link *link)
{
    struct link_conn *conn;
    int err = link_conn_open(link, &conn);

    if (err != 0) {
        stats.redis_connect_failures++;
        link_failed(link, LOG_LEVEL_INFO, "connect failed", uv_strerror(err));
        schedule_reconnect(link);
        return;
    }
    link->conn = conn;
    link->state = LINK_CONNECTING;
    uv_timer_start(&link->timer, timer_fired,
                   (uint64_t)link->cfg->connect_timeout_ms, 0);
}

int redis_links_init(uv_loop_t *loop, const struct config *cfg)
{
    int err = link_tls_context_init(cfg);

    if (err != 0)
        return err;
    return link_conn_io_init(loop);
}

void redis_links_close(void)
{
    link_conn_io_close();
    link_tls_context_free();
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
    link->login = (struct redis_login){cfg->redis_username, cfg->redis_password,
                                       cfg->redis_db};
    return uv_timer_init(loop, &link->timer);
}

void redis_link_move(struct redis_link *link, const struct redis_addr *addr)
{
    if (link->state == LINK_CLOSED)
        return;
    link->addr = *addr;
    link->last_error[0] = '\0';
    if (link->conn != NULL)
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
    redis_status.tls_error[0] = '\0';
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
static void note_progress(struct redis_link *link, bool answered)
{
    if (answered && link->inflight > 0)
        link->inflight--;
    link->last_progress_ms = uv_now(link->loop);
    if (link->stalled) {
        link->stalled = false;
        log_info("redis %s: answering again", link->label);
        link->on_readiness(link);
    }
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

/* One reply: the oldest request's answer, or on a link in pub/sub mode a
 * push. A reply nothing asked for on any other link means the stream is
 * out of step, and the connection cannot be trusted. */
void link_dispatch(struct redis_link *link, redisReply *reply)
{
    struct list_node *head = list_first(&link->pending);
    struct redis_request *req =
        head ? list_entry(head, struct redis_request, pending) : NULL;

    if (link->on_push != NULL &&
        (req == NULL ||
         (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
          reply->element[0]->type == REDIS_REPLY_STRING &&
          !push_answers(req, reply)))) {
        note_progress(link, false);
        link->on_push(link, reply);
        return;
    }
    if (req == NULL) {
        redis_link_reset(link, "a reply nothing asked for");
        return;
    }
    list_remove(head);
    histogram_observe(&latency.redis_rtt_seconds,
                      (uv_hrtime() - req->sent_ns) / 1000);
    note_progress(link, true);
    req->on_reply(req, reply);
}

int redis_link_send(struct redis_link *link, struct redis_request *req,
                    int argc, const char **argv, const size_t *argv_len)
{
    int err;

    if (link->conn == NULL ||
        (link->state != LINK_READY && link->state != LINK_HANDSHAKE))
        return -ENOTCONN;
    err = link_conn_send(link->conn, argc, argv, argv_len);
    if (err != 0)
        return err;
    req->link = link;
    req->sent_ns = uv_hrtime();
    list_push_tail(&link->pending, &req->pending);
    if (link->inflight++ == 0)
        link->last_progress_ms = uv_now(link->loop);
    return 0;
}

void redis_link_reset(struct redis_link *link, const char *why)
{
    link_drop(link, "dropping connection", why);
}

void redis_link_stop(struct redis_link *link, const char *why)
{
    if (link->state == LINK_CLOSED)
        return;
    redis_link_reset(link, why);
    link->state = LINK_DOWN;
    uv_timer_stop(&link->timer);
}

/* A pub/sub owner closing frees its requests with itself (the
 * subscriber's subscriptions): they are forgotten, not answered. */
void redis_link_close(struct redis_link *link)
{
    link->state = LINK_CLOSED;
    if (link->on_push != NULL)
        list_init(&link->pending);
    link_drop(link, "closing", "closing");
    uv_timer_stop(&link->timer);
    uv_close((uv_handle_t *)&link->timer, NULL);
}
