/*
 * client.h - one client connection: its bytes in, its replies out.
 *
 * Owns struct client: the socket handle, the input buffer and request
 * parser, the reply buffer and the writes in flight, the session the
 * connection belongs to, and the one command in progress. Commands run
 * one at a time per connection, in order; a blocked LOCK holds back only
 * this connection's later requests, as BLPOP does in Redis.
 *
 * Every limit on what one client may cost (request size, arguments,
 * unprocessed input, unsent output) is enforced here, and breaking one
 * closes that connection only.
 */
#ifndef RLOCKD_CLIENT_H
#define RLOCKD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "buffer.h"
#include "base/config.h"
#include "base/list.h"
#include "request.h"

struct lock_call;
struct session;

struct client {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } io;
    struct list_node link; /* all clients */
    uint64_t id;
    struct session *session; /* NULL only while refused at accept */
    struct request_parser parser;
    struct buffer in;       /* read, not yet parsed */
    struct buffer out;      /* replies not yet handed to libuv */
    size_t writing;         /* bytes handed to libuv, not yet written */
    struct lock_call *call; /* command in progress */
    bool closing;           /* uv_close called */
    bool quitting;          /* close once the replies are written */
    bool authenticated;     /* sent the right AUTH (or none is needed) */
};

void client_init(uv_loop_t *loop, const struct config *cfg);
/* Accepts one connection from a listening stream (TCP or pipe). */
void client_accept(uv_stream_t *server);
/* A command that completed later has written its reply. */
void client_command_done(struct client *c);
/* Replies what is buffered, then closes (QUIT, protocol errors). */
void client_quit(struct client *c);
void client_close(struct client *c, const char *why);
/* Changes the connection's client-id; 0 or -1 (reply already written). */
int client_set_id(struct client *c, const char *id, size_t len);

size_t client_count(void);
/* Stops reading from every client (shutdown). */
void client_stop_all(void);
/* Closes every client once its replies are written. */
void client_quit_all(void);

#endif
