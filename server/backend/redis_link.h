/*
 * redis_link.h - one Redis connection kept alive on the libuv loop.
 *
 * Owns the socket and everything about its life: connecting (TCP or
 * Unix socket) with a timeout, TLS when [redis] tls says so, AUTH and
 * SELECT, reconnecting with capped exponential backoff, and watching
 * that Redis answers: an idle link is probed every ping_interval_ms, a
 * link with a request unanswered for ping_interval_ms stops counting as
 * ready (it "stalls") until Redis answers again, and one unanswered for
 * command_timeout_ms is dropped. The pool, the subscriber, the sentinels
 * and the cluster map each build on links; none touches the socket.
 *
 * Every request sent with redis_link_send gets exactly one call of its
 * on_reply: with Redis's reply, or with NULL when the connection is lost
 * before the reply arrives. Replies answer requests in the order sent.
 * On a link whose owner sets on_push (one in pub/sub mode), a pub/sub
 * array ["kind", channel, ...] answers the oldest request only if that
 * request expects it (see struct redis_request); any other goes to
 * on_push: a message, sharded pub/sub's "smessage", or the
 * "sunsubscribe" Redis sends unasked when a slot moves.
 */
#ifndef RLOCKD_REDIS_LINK_H
#define RLOCKD_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>
#include <uv.h>

#include "backend/redis_addr.h"
#include "base/config.h"
#include "base/list.h"
#include "buffer.h"

/* What a link proves and selects once connected. */
struct redis_login {
    const char *username; /* "": AUTH with the password alone */
    const char *password; /* "": no AUTH */
    int64_t db;           /* 0: no SELECT */
};

struct redis_request;
typedef void redis_request_fn(struct redis_request *req, redisReply *reply);

/* Embedded by the caller in its own per-request struct. */
struct redis_request {
    redis_request_fn *on_reply;
    /* On a link with on_push: a pub/sub array ["kind", channel, ...]
     * answers this request only if its kind is expect (and its channel
     * expect_channel, when set); NULL expects no array. */
    const char *expect;
    const char *expect_channel;
    size_t expect_channel_len;
    struct redis_link *link;
    struct list_node pending; /* the link's requests in flight */
    uint64_t sent_ns;         /* for the round trip's latency */
};

enum redis_link_state {
    LINK_DOWN,       /* waiting to reconnect */
    LINK_CONNECTING, /* TCP/Unix connect, or the TLS handshake */
    LINK_HANDSHAKE,  /* connected; the owner is preparing it */
    LINK_READY,
    LINK_CLOSED, /* redis_link_close called */
};

struct redis_link {
    char label[32];
    uv_loop_t *loop;
    const struct config *cfg;
    struct redis_addr addr;
    struct redis_login login;
    /* The error last logged, so that a retry failing the same way (a
     * wrong password, a refused connect) is not logged again. */
    char last_error[128];
    bool refused;    /* the handshake was refused (AUTH, SELECT) */
    bool tls_failed; /* TLS refused or broke (a certificate, an alert) */
    /* A request may legitimately go unanswered this much longer than
     * ping_interval_ms before the link stalls (WAIT, see redis_pool.c). */
    int64_t patience_ms;
    struct link_conn *conn; /* the connection's socket; NULL: none */
    enum redis_link_state state;
    uv_timer_t timer; /* connect timeout, backoff, or liveness watch */
    int64_t backoff_ms;
    unsigned inflight; /* requests sent, replies not yet received */
    /* The last reply, or the send that put the first request in flight:
     * Redis has been silent since. */
    uint64_t last_progress_ms;
    bool stalled;        /* READY, but silent for ping_interval_ms */
    bool probe_inflight; /* the probe is one of inflight */
    struct redis_request probe;
    /* Set by an owner whose connection is in pub/sub mode (see above):
     * every reply no request expects. */
    void (*on_push)(struct redis_link *link, redisReply *reply);
    struct list_node pending; /* requests in flight, oldest first */
    /* Connected and authenticated: the owner sends what it needs, then
     * calls redis_link_set_ready. */
    void (*on_connected)(struct redis_link *link);
    /* redis_link_ready changed: the link became ready, stalled, answered
     * again after a stall, or was lost. */
    void (*on_readiness)(struct redis_link *link);
    void *owner;
    struct redis_request handshake; /* AUTH */
    struct redis_request select;
};

/* What all links share, once per loop: the write flushing, and the TLS
 * context when [redis] tls is on. 0, or an error logged. */
int redis_links_init(uv_loop_t *loop, const struct config *cfg);
void redis_links_close(void);

/* The link dials [redis] host/port/unix_socket with [redis]'s login
 * until its owner says otherwise (before starting it, or redis_link_move). */
int redis_link_init(struct redis_link *link, uv_loop_t *loop,
                    const struct config *cfg, const char *label);
/* Points the link at another server: a connection to the old one is
 * dropped (pending requests get NULL) and the new one dialled at once. */
void redis_link_move(struct redis_link *link, const struct redis_addr *addr);
/* "host:port", or the socket's path. */
const char *redis_addr_text(const struct redis_addr *addr, char *buf,
                            size_t size);
bool redis_addr_equal(const struct redis_addr *a, const struct redis_addr *b);
/* Starts connecting; failures are retried forever. */
void redis_link_start(struct redis_link *link);
void redis_link_set_ready(struct redis_link *link);
/* Ready and not stalled: a request sent now is expected to be answered. */
bool redis_link_ready(const struct redis_link *link);
/* Requests in flight, the link's own probe not counted. */
unsigned redis_link_requests(const struct redis_link *link);
/* Sends a command; 0, or -ENOTCONN when the link cannot take it now, or
 * -ENOMEM (in which cases on_reply is not called). */
int redis_link_send(struct redis_link *link, struct redis_request *req,
                    int argc, const char **argv, const size_t *argv_len);
/* Drops the connection (pending requests get NULL) and reconnects later. */
void redis_link_reset(struct redis_link *link, const char *why);
/* Drops the connection (pending requests get NULL) and dials nothing
 * until the next redis_link_move. */
void redis_link_stop(struct redis_link *link, const char *why);
/* Final: disconnects, stops the timer; the link may be freed after the
 * loop has run its close callbacks. */
void redis_link_close(struct redis_link *link);

#endif
