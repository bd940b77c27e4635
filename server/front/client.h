/*
 * client.h - one client connection: its bytes in, its replies out, in
 * request order.
 *
 * Owns struct client: the socket handle, the input buffer and request
 * parser, the reply buffer and the writes in flight, the session the
 * connection belongs to, and its commands in flight. Commands that need
 * Redis may be in flight together on one connection, up to
 * max_commands_in_flight; each gets a slot in request order, and a reply
 * that comes early waits in its slot for the ones before it. A command
 * the executor says must run alone (one that may wait for a lock, or
 * changes the connection's owner) waits until nothing is in flight and
 * holds later requests back until it is answered, as BLPOP does in Redis.
 *
 * A finished lock call never runs this connection's next commands from
 * inside the call's stack: it records its reply and puts the client on
 * the ready list, which the loop drains once per turn.
 *
 * Every limit on what one client may cost (request size, arguments,
 * unprocessed input, unsent output, commands in flight, a request left
 * unfinished, connections per peer) is enforced here, and breaking one
 * closes that connection only. A connection whose replies pile up unread
 * runs no more requests and is not read until it reads (back-pressure);
 * the memory all connections hold in buffers is capped, and over the cap
 * the connections with the most unsent output are closed first, as
 * Redis's maxmemory-clients does.
 *
 * A client that shuts down its sending side (half-close) is read no more;
 * the requests it sent before are run and answered in order, except that
 * a lock acquisition does not wait for it (see client_pipeline.c), and the
 * connection closes once every reply is written: its session then ends
 * as on any close.
 *
 * A connection subscribed to its lock-lost channel is kept on a list of
 * subscribers, and takes pushed messages (client_push) between its
 * replies; the same output limits apply to them.
 *
 * A connection that sent wrong credentials is penalized: it is parked
 * in the penalty box (no request runs and no reply is sent) for a delay
 * that doubles with each refusal, and closed after max_auth_failures.
 * One timer serves the whole box, so this costs nothing while nobody is
 * in it, and a parked connection never holds up the event loop.
 */
#ifndef RLOCKD_CLIENT_H
#define RLOCKD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "base/config.h"
#include "base/list.h"
#include "buffer.h"
#include "command.h"
#include "engine/lock_engine.h"
#include "reply.h"
#include "request.h"

struct acl_user;
struct peer;
struct session;
struct ssl_st;

struct client {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } io;
    struct list_node link; /* all clients */
    struct ssl_st *tls;    /* NULL: plain (see client_tls.h) */
    size_t tls_bytes;      /* what the TLS state counts as holding */
    uint64_t id;
    struct session *session; /* NULL only while refused at accept */
    struct request_parser parser;
    struct buffer in;         /* read, not yet parsed */
    struct buffer out;        /* replies not yet handed to libuv */
    size_t writing;           /* bytes handed to libuv, not yet written */
    struct list_node pending; /* struct client_slot, in request order */
    size_t in_flight;         /* slots whose lock call is not answered */
    struct list_node ready_link;
    struct list_node penalty_link; /* in the penalty box while linked */
    uint64_t penalty_due_ms;       /* when it leaves the box */
    unsigned penalties;            /* refused credentials so far */
    const struct acl_user *user;   /* who AUTH said; NULL: nobody yet */
    enum reply_protocol protocol;  /* HELLO's; RESP2 at first and on RESET */
    struct peer *peer;             /* NULL only before accept */
    size_t slot_bytes;             /* answered replies waiting in slots */
    size_t accounted;              /* its part of client_buffers_bytes */
    struct list_node partial_link; /* sent part of a request, since: */
    uint64_t partial_since_ms;
    int64_t heartbeat_ms;            /* CLIENT HEARTBEAT; 0: none */
    uint64_t heard_ms;               /* bytes came, or a wait ended */
    uint64_t heartbeat_due_ms;       /* when it is looked at next */
    struct list_node heartbeat_link; /* while heartbeat_ms > 0 */
    bool read_paused;                /* not read: see client_update_reading */
    bool yielded;       /* used its share of the turn with requests left */
    bool alone;         /* a command that runs alone is in flight */
    bool parked;        /* the parser holds a request waiting for idle */
    bool closing;       /* uv_close called */
    bool quitting;      /* close once the replies are written */
    bool half_closed;   /* the client sent EOF: nothing more to read */
    const char *doomed; /* set: the ready list closes it, for this reason */
    struct list_node subscriber_link; /* while subscribed (client_push) */
    /* What CLIENT SETNAME and SETINFO set, owned here (freed at close);
     * NULL: none. */
    char *name;
    char *lib_name;
    char *lib_ver;
    const char *last_command; /* CLIENT LIST's cmd=: a static name */
    uint64_t created_ms;
};

/*
 * Runs one parsed request. Returns CLIENT_RUN_LATER, having done nothing,
 * when the request must run alone and something is in flight; the client
 * then calls it again with the same request once nothing is.
 */
enum client_run { CLIENT_RAN, CLIENT_RUN_LATER };
typedef enum client_run client_execute_fn(struct client *c, size_t argc,
                                          char *const *argv,
                                          const size_t *argv_len);

int client_init(uv_loop_t *loop, const struct config *cfg,
                client_execute_fn *execute);
/* Accepts one connection from a listening stream (TCP or pipe); tls: it
 * speaks TLS (a TLS listener's). */
void client_accept(uv_stream_t *server, bool tls);

/* Where the reply of a command answered now goes (behind any reply still
 * awaited); NULL when out of memory, and the client is then closing. */
struct buffer *client_reply_buffer(struct client *c);
/* Hands the lock request of command cmd, args a, to the engine; its
 * reply comes in order. One that runs alone (CMD_ALONE: an acquire) holds
 * later requests back, and is kept with its command and lock name. */
void client_start_call(struct client *c, const struct lock_request *req,
                       const struct command *cmd, const struct command_args *a,
                       bool granted_is_ok);
struct multilock_request;
/* Hands an MLOCK or MUNLOCK to a multilock (multilock.h), as
 * client_start_call hands a lock request to the engine. */
void client_start_multilock(struct client *c, const struct command *cmd,
                            const struct command_args *a,
                            const struct multilock_request *req);
/* The acquire in flight, waiting or with Redis's reply to come, as its
 * client sent it: its command and lock name (valid while it is in
 * flight); false for none. An MLOCK's "name" is its names one after the
 * other, each after its length as a size_t. */
bool client_acquire(struct client *c, const struct command **cmd,
                    const char **name, size_t *name_len);
/* Refuses the acquire in flight -NOPERM text (client_acquire said there
 * is one): the engine forgets it, and gives back a grant Redis makes
 * later, as when its client goes; an MLOCK is answered once what it took
 * is released. */
void client_refuse_acquire(struct client *c, const char *text);
/* Replies what is buffered, then closes (QUIT, protocol errors). */
void client_quit(struct client *c);
void client_close(struct client *c, const char *why);
/* CLIENTID: moves the connection to client-id id's session, joining a
 * live one with its secret (NULL: none given) or resuming one a restart
 * left in Redis (resume: only that); answered in order like a lock
 * command. */
void client_set_id(struct client *c, const char *id, size_t len,
                   const char *secret, size_t secret_len, bool resume);
/* RESET: the connection leaves its session (which ends if it was the
 * last connection, as on close) for a new one of its own, under a random
 * client-id, as a new connection gets. 0 or -ENOMEM (then unchanged). */
int client_new_session(struct client *c);
/*
 * Pub/sub: a subscribed connection is on the subscribers list, which
 * client_foreach_subscriber walks. Its messages are pushed with
 * client_push: appended to its output, sent from the ready list (never
 * from the caller's stack, so that the lock engine may push from its
 * loss callback), and past max_output_buffer_bytes unsent the connection
 * is closed there, as Redis's client-output-buffer-limit pubsub. A
 * subscribed RESP2 connection has no command in flight (only commands
 * answered at once run while subscribed), so a message never comes
 * between a request and its reply. A RESP3 one runs every command, and
 * its messages are pushes, which a client reads wherever they come: the
 * push goes to the output at once, ahead of the replies still awaited
 * in slots, so that it is written before the reply to any later command
 * that could observe the loss it tells (a -LOCKLOST, say).
 */
void client_set_subscribed(struct client *c, bool subscribed);
bool client_subscribed(const struct client *c);
void client_foreach_subscriber(void (*fn)(struct client *c, void *arg),
                               void *arg);
void client_push(struct client *c, const char *data, size_t len);
/* Every connection, for CLIENT LIST. */
void client_foreach(void (*fn)(struct client *c, void *arg), void *arg);
/* The loop's time in ms (connection age and idle time). */
uint64_t client_now_ms(void);
/* CLIENT HEARTBEAT: when nothing arrives on the connection for ms (0: no
 * heartbeat) while none of its commands is being served, its session ends
 * as if the client had gone: every connection of the client-id closes. */
void client_set_heartbeat(struct client *c, int64_t ms);
/*
 * The connection sent credentials that were refused (`what`: "AUTH",
 * say): logs it (rate-limited), holds back its replies (the refusal's
 * included) and its next requests for a delay that doubles with each
 * refusal, and closes it after that delay once it has had
 * max_auth_failures refusals. Call after writing the refusal.
 */
void client_penalize(struct client *c, const char *what);

/* How log lines name a connection, "client <id> '<name>' (<peer>)" (no
 * name: "client <id> (<peer>)"): the one place to say more about it.
 * Returns buf. */
#define CLIENT_LABEL_NAME_MAX 128
#define CLIENT_LABEL_MAX 256 /* the name's part, a peer's and the rest */
const char *client_label(const struct client *c, char *buf, size_t size);
/* After a reload replaced the user table: points each connection at its
 * user's new entry, and closes those whose user is gone. */
void client_users_reloaded(const struct acl *acl);

/* The most connections the open files limit leaves room for; below
 * max_clients, it is the effective limit. */
void client_set_fd_limit(uint64_t max_clients);

/* Stops running commands of every client (shutdown). */
void client_stop_all(void);
/* Closes every client once its replies are written (the penalized ones
 * too, without their delay). */
void client_quit_all(void);
/* Closes the handles the clients share (at shutdown, once they are
 * gone). */
void client_close_handles(void);

#endif
