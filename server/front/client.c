/*
 * client.c - reading requests, running them in order, writing replies.
 */
#include "front/client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "front/commands.h"
#include "engine/lock_table.h"
#include "engine/locking.h"
#include "base/log.h"
#include "reply.h"
#include "engine/session.h"
#include "base/stats.h"

#define READ_CHUNK 16384

struct client_write {
    uv_write_t req;
    struct client *client;
    struct buffer data;
};

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    struct list_node all;
    size_t count;
    uint64_t next_id;
    bool stopped; /* shutting down: no new commands */
} C;

void client_init(uv_loop_t *loop, const struct config *cfg)
{
    C.loop = loop;
    C.cfg = cfg;
    list_init(&C.all);
}

size_t client_count(void)
{
    return C.count;
}

static void on_closed(uv_handle_t *handle)
{
    struct client *c = handle->data;

    request_parser_free(&c->parser);
    buffer_free(&c->in);
    buffer_free(&c->out);
    free(c);
}

void client_close(struct client *c, const char *why)
{
    if (c->closing)
        return;
    c->closing = true;
    log_debug("client %llu closed: %s", (unsigned long long)c->id, why);
    if (c->call != NULL) {
        locking_client_gone(c->call);
        c->call = NULL;
    }
    if (c->session != NULL)
        session_leave(c->session);
    c->session = NULL;
    list_remove(&c->link);
    C.count--;
    uv_close(&c->io.handle, on_closed);
}

static void on_written(uv_write_t *req, int status)
{
    struct client_write *w = (struct client_write *)req;
    struct client *c = w->client;

    c->writing -= w->data.len;
    buffer_free(&w->data);
    free(w);
    if (status < 0)
        client_close(c, uv_strerror(status));
    else if (c->quitting && c->writing == 0)
        client_close(c, "quit");
}

/*
 * Sends buffered replies. Usually the socket takes them at once
 * (uv_try_write): no write request, no callback, and the buffer is kept
 * for the next reply. Whatever does not fit is handed to libuv with
 * uv_write, which keeps order behind any earlier queued write; the
 * buffer is swapped into the request, not copied.
 */
static void client_flush(struct client *c)
{
    struct client_write *w;
    uv_buf_t buf;
    int err;

    if (c->closing)
        return;
    if (c->out.len > 0 && c->writing == 0) {
        buf = uv_buf_init(c->out.data, (unsigned)c->out.len);
        err = uv_try_write(&c->io.stream, &buf, 1);
        if (err < 0 && err != UV_EAGAIN) {
            client_close(c, uv_strerror(err));
            return;
        }
        if (err > 0)
            buffer_consume(&c->out, (size_t)err);
    }
    if (c->out.len == 0) {
        if (c->quitting && c->writing == 0)
            client_close(c, "quit");
        return;
    }
    if (c->writing + c->out.len > (size_t)C.cfg->max_output_buffer_bytes) {
        log_warn("client %llu: over max_output_buffer_bytes (not reading "
                 "its replies); closing it",
                 (unsigned long long)c->id);
        client_close(c, "output limit");
        return;
    }
    w = malloc(sizeof(*w));
    if (w == NULL) {
        client_close(c, "out of memory");
        return;
    }
    w->client = c;
    w->data = c->out;
    buffer_init(&c->out);
    buf = uv_buf_init(w->data.data, (unsigned)w->data.len);
    c->writing += w->data.len;
    err = uv_write(&w->req, &c->io.stream, &buf, 1, on_written);
    if (err != 0) {
        c->writing -= w->data.len;
        buffer_free(&w->data);
        free(w);
        client_close(c, uv_strerror(err));
    }
}

void client_quit(struct client *c)
{
    c->quitting = true;
    uv_read_stop(&c->io.stream);
}

/* Runs buffered requests until one blocks or the input runs out. */
static void client_process(struct client *c)
{
    size_t pos = 0;

    while (c->call == NULL && !c->quitting && !c->closing && !C.stopped &&
           pos < c->in.len) {
        size_t consumed = 0;
        enum request_status st = request_parser_feed(
            &c->parser, c->in.data + pos, c->in.len - pos, &consumed);

        pos += consumed;
        if (st == REQUEST_INCOMPLETE)
            break;
        if (st == REQUEST_ERROR) {
            stats.protocol_errors++;
            reply_error(&c->out, REPLY_ERR, "%s", c->parser.error);
            client_quit(c);
            break;
        }
        stats.total_commands_processed++;
        c->call = commands_execute(c, c->parser.argc, c->parser.argv,
                                   c->parser.argv_len);
    }
    if (!c->closing)
        buffer_consume(&c->in, pos);
    client_flush(c);
}

void client_command_done(struct client *c)
{
    c->call = NULL;
    client_process(c);
}

static void on_alloc(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
    struct client *c = handle->data;

    (void)hint;
    if (buffer_reserve(&c->in, READ_CHUNK) != 0) {
        *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
        return;
    }
    *buf =
        uv_buf_init(c->in.data + c->in.len, (unsigned)(c->in.cap - c->in.len));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct client *c = stream->data;

    (void)buf;
    if (nread < 0) {
        client_close(c,
                     nread == UV_EOF ? "peer closed" : uv_strerror((int)nread));
        return;
    }
    c->in.len += (size_t)nread;
    client_process(c);
    if (!c->closing && !c->quitting &&
        c->in.len > (size_t)C.cfg->max_input_buffer_bytes) {
        reply_error(&c->out, REPLY_LIMIT,
                    "unprocessed input over max_input_buffer_bytes");
        client_quit(c);
        client_flush(c);
    }
}

static void client_refuse(struct client *c)
{
    stats.rejected_connections++;
    if (C.stopped)
        reply_error(&c->out, REPLY_SHUTDOWN, "rlockd is shutting down");
    else
        reply_error(&c->out, REPLY_LIMIT, "max number of clients reached");
    client_quit(c);
    client_flush(c);
}

void client_accept(uv_stream_t *server)
{
    struct client *c = calloc(1, sizeof(*c));
    struct request_limits limits;
    char id[37];
    int err;

    if (c == NULL) {
        log_error("accept: out of memory");
        return;
    }
    if (server->type == UV_TCP)
        err = uv_tcp_init(C.loop, &c->io.tcp);
    else
        err = uv_pipe_init(C.loop, &c->io.pipe, 0);
    if (err != 0) {
        log_error("accept: %s", uv_strerror(err));
        free(c);
        return;
    }
    c->io.handle.data = c;
    c->id = ++C.next_id;
    limits.max_request_bytes = (size_t)C.cfg->max_request_bytes;
    limits.max_args = (size_t)C.cfg->max_request_args;
    request_parser_init(&c->parser, &limits);
    buffer_init(&c->in);
    buffer_init(&c->out);
    list_push_tail(&C.all, &c->link);
    C.count++;
    err = uv_accept(server, &c->io.stream);
    if (err != 0) {
        log_warn("accept: %s", uv_strerror(err));
        client_close(c, "accept failed");
        return;
    }
    stats.total_connections_received++;
    if (C.count > (size_t)C.cfg->max_clients || C.stopped) {
        client_refuse(c);
        return;
    }
    session_random_id(id);
    c->session = session_join(id, strlen(id));
    if (c->session == NULL) {
        client_close(c, "out of memory");
        return;
    }
    if (server->type == UV_TCP)
        uv_tcp_nodelay(&c->io.tcp, 1);
    uv_read_start(&c->io.stream, on_alloc, on_read);
}

int client_set_id(struct client *c, const char *id, size_t len)
{
    struct session *old = c->session, *next;

    if (old->id_len == len && memcmp(old->id, id, len) == 0)
        return 0;
    if (old->connections == 1 && old->hold_count > 0) {
        reply_error(&c->out, REPLY_ERR,
                    "cannot change client-id while holding locks as the "
                    "last connection of this client");
        return -1;
    }
    next = session_join(id, len);
    if (next == NULL) {
        reply_error(&c->out, REPLY_ERR, "out of memory");
        return -1;
    }
    c->session = next;
    session_leave(old);
    return 0;
}

void client_stop_all(void)
{
    C.stopped = true;
}

void client_quit_all(void)
{
    struct list_node *pos, *tmp;

    list_for_each_safe(pos, tmp, &C.all)
    {
        struct client *c = list_entry(pos, struct client, link);
        client_quit(c);
        client_flush(c);
    }
}
