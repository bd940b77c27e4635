/*
 * client.c - a client connection's life: accepted, read, closed.
 *
 * Owns struct client's birth and end: accepting a connection (or
 * refusing it over max_clients, the open files limit or
 * max_clients_per_peer), its session at accept and on RESET, reading
 * its bytes (through TLS when it speaks TLS) and enforcing
 * max_input_buffer_bytes on them, closing it, and freeing it in its
 * close callback, as libuv requires. Also the list of every connection
 * and the state the other client*.c files read (client_int.h).
 *
 * It never parses or runs a request: bytes read go to the pipeline.
 */
#include "front/client_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/acl.h"
#include "base/log.h"
#include "base/stats.h"
#include "client_id.h"
#include "front/client_tls.h"
#include "front/peer.h"
#include "reply.h"

#define READ_CHUNK 16384

struct client_shared clients;

/* Admission: only this file reads or writes it. */
static struct {
    uint64_t next_id;
    uint64_t fd_max_clients; /* what the open files limit allows */
} accepting;

/* ---- connection life ----------------------------------------------------- */

const char *client_label(const struct client *c, char *buf, size_t size)
{
    if (c->name != NULL)
        snprintf(buf, size, "client %llu '%.*s' (%s)",
                 (unsigned long long)c->id, CLIENT_LABEL_NAME_MAX, c->name,
                 c->peer ? c->peer->name : "?");
    else
        snprintf(buf, size, "client %llu (%s)", (unsigned long long)c->id,
                 c->peer ? c->peer->name : "?");
    return buf;
}

static void on_closed(uv_handle_t *handle)
{
    struct client *c = handle->data;

    request_parser_free(&c->parser);
    client_tls_free(c);
    buffer_free(&c->in);
    buffer_free(&c->out);
    free(c->name);
    free(c->lib_name);
    free(c->lib_ver);
    free(c);
}

void client_close(struct client *c, const char *why)
{
    char label[CLIENT_LABEL_MAX];

    if (c->closing)
        return;
    c->closing = true;
    log_debug("%s closed: %s", client_label(c, label, sizeof(label)), why);
    client_limits_forget(c);
    client_set_subscribed(c, false);
    if (c->peer != NULL)
        peer_detach(c->peer);
    c->peer = NULL;
    stats.client_buffers_bytes -= c->accounted;
    c->accounted = 0;
    client_slots_abandon(c);
    if (c->session != NULL)
        lock_engine_leave(c->session);
    c->session = NULL;
    list_remove(&c->link);
    client_ready_forget(c);
    stats.connected_clients--;
    uv_close(&c->io.handle, on_closed);
}

void client_foreach(void (*fn)(struct client *c, void *arg), void *arg)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &clients.all)
        fn(list_entry(pos, struct client, link), arg);
}

uint64_t client_now_ms(void)
{
    return uv_now(clients.loop);
}

/* ---- reading ------------------------------------------------------------- */

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

/* The client sent its last byte: what it sent runs, then it closes. */
static void client_read_eof(struct client *c)
{
    c->half_closed = true;
    uv_read_stop(&c->io.stream);
    client_pipeline_process(c);
}

/* Runs what came (c->in grew), and enforces max_input_buffer_bytes. */
static void client_received(struct client *c)
{
    struct buffer *out;

    c->heard_ms = uv_now(clients.loop);
    client_pipeline_process(c);
    if (c->closing || c->quitting ||
        c->in.len <= (size_t)clients.cfg->max_input_buffer_bytes)
        return;
    out = client_reply_buffer(c);
    if (out != NULL)
        reply_error(out, REPLY_LIMIT,
                    "unprocessed input over max_input_buffer_bytes");
    client_quit(c);
    client_output_flush(c);
}

/* Bytes read on a TLS connection, at c->in's end: the handshake's go
 * on with it (its failure alert is sent before closing), the records'
 * plaintext is received. */
static void client_tls_received(struct client *c, size_t len)
{
    char label[CLIENT_LABEL_MAX];
    const char *why = NULL;

    switch (client_tls_read(c, len, clients.cfg->acl, &why)) {
    case CLIENT_TLS_HANDSHAKING:
        client_output_flush(c);
        return;
    case CLIENT_TLS_DATA:
        client_received(c);
        return;
    case CLIENT_TLS_EOF:
        client_read_eof(c);
        return;
    case CLIENT_TLS_FAILED:
        break;
    }
    log_debug("%s: %s", client_label(c, label, sizeof(label)), why);
    if (client_tls_established(c)) {
        client_close(c, why);
        return;
    }
    client_quit(c);
    client_output_flush(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct client *c = stream->data;

    (void)buf;
    if (nread == UV_EOF) {
        client_read_eof(c);
        return;
    }
    if (nread < 0) {
        client_close(c, uv_strerror((int)nread));
        return;
    }
    if (c->tls != NULL) {
        client_tls_received(c, (size_t)nread);
        return;
    }
    c->in.len += (size_t)nread;
    client_received(c);
}

int client_read_start(struct client *c)
{
    return uv_read_start(&c->io.stream, on_alloc, on_read);
}

/* ---- admission ----------------------------------------------------------- */

static uint64_t max_clients(void)
{
    uint64_t configured = (uint64_t)clients.cfg->max_clients;

    return configured < accepting.fd_max_clients ? configured
                                                 : accepting.fd_max_clients;
}

void client_set_fd_limit(uint64_t max)
{
    accepting.fd_max_clients = max;
    stats.max_clients_effective = max_clients();
}

/* Why a new connection is refused, or NULL. */
static const char *accept_refusal(const struct client *c)
{
    stats.max_clients_effective = max_clients();
    if (clients.stopped)
        return "rlockd is shutting down";
    if (stats.connected_clients > max_clients())
        return "max number of clients reached";
    if (clients.cfg->max_clients_per_peer > 0 &&
        c->peer->connections > (uint64_t)clients.cfg->max_clients_per_peer)
        return "max number of clients from this peer reached "
               "(max_clients_per_peer)";
    return NULL;
}

/* A TLS client could not read a plain refusal: it is only closed. */
static void client_refuse(struct client *c, const char *why, bool tls)
{
    stats.rejected_connections++;
    if (tls) {
        client_close(c, why);
        return;
    }
    reply_error(&c->out, clients.stopped ? REPLY_SHUTDOWN : REPLY_LIMIT, "%s",
                why);
    client_quit(c);
    client_output_flush(c);
}

static int client_new(struct client **out, uv_stream_t *server)
{
    struct client *c = calloc(1, sizeof(*c));
    struct request_limits limits;
    int err;

    if (c == NULL)
        return -ENOMEM;
    if (server->type == UV_TCP)
        err = uv_tcp_init(clients.loop, &c->io.tcp);
    else
        err = uv_pipe_init(clients.loop, &c->io.pipe, 0);
    if (err != 0) {
        free(c);
        return err;
    }
    c->io.handle.data = c;
    c->id = ++accepting.next_id;
    c->protocol = REPLY_RESP2;
    limits.max_request_bytes = (size_t)clients.cfg->max_request_bytes;
    limits.max_args = (size_t)clients.cfg->max_request_args;
    request_parser_init(&c->parser, &limits);
    buffer_init(&c->in);
    buffer_init(&c->out);
    list_init(&c->pending);
    list_init(&c->ready_link);
    list_init(&c->penalty_link);
    list_init(&c->partial_link);
    list_init(&c->heartbeat_link);
    list_init(&c->subscriber_link);
    c->created_ms = uv_now(clients.loop);
    c->heard_ms = c->created_ms;
    list_push_tail(&clients.all, &c->link);
    stats.connected_clients++;
    *out = c;
    return 0;
}

/* Replies go out at once (no Nagle delay), and a client whose host died,
 * or whose network went, is found by keepalive probes. Either failing
 * leaves a connection that still works: logged, not refused. */
static void client_tune_tcp(struct client *c)
{
    char label[CLIENT_LABEL_MAX];
    int err;

    err = uv_tcp_nodelay(&c->io.tcp, 1);
    if (err == 0 && clients.cfg->tcp_keepalive_s > 0)
        err = uv_tcp_keepalive(&c->io.tcp, 1,
                               (unsigned)clients.cfg->tcp_keepalive_s);
    if (err != 0)
        log_warn("%s: TCP_NODELAY or keepalive: %s",
                 client_label(c, label, sizeof(label)), uv_strerror(err));
}

int client_new_session(struct client *c)
{
    char id[CLIENT_ID_RANDOM_SIZE];
    struct session *fresh;

    if (client_id_random(id) != 0 ||
        lock_engine_join_new(id, strlen(id), &fresh) != 0)
        return -ENOMEM;
    if (c->session != NULL)
        lock_engine_leave(c->session);
    c->session = fresh;
    return 0;
}

void client_accept(uv_stream_t *server, bool tls)
{
    const char *refusal;
    struct client *c;
    int err = client_new(&c, server);

    if (err != 0) {
        log_error("accept: %s", uv_strerror(err));
        return;
    }
    err = uv_accept(server, &c->io.stream);
    if (err != 0) {
        log_warn("accept: %s", uv_strerror(err));
        client_close(c, "accept failed");
        return;
    }
    stats.total_connections_received++;
    err = peer_attach(&c->io.stream, &c->peer);
    if (err != 0) {
        log_warn("accept: cannot tell the peer: %s", uv_strerror(err));
        client_close(c, "unknown peer");
        return;
    }
    refusal = accept_refusal(c);
    if (refusal != NULL) {
        client_refuse(c, refusal, tls);
        return;
    }
    if (client_new_session(c) != 0) {
        client_close(c, "cannot make a session (out of memory or entropy)");
        return;
    }
    if (tls && client_tls_start(c) != 0) {
        client_close(c, "cannot start TLS (out of memory)");
        return;
    }
    if (server->type == UV_TCP)
        client_tune_tcp(c);
    if (tls) { /* the handshake has request_timeout_ms, as a request */
        client_limits_note_partial(c, true);
        client_limits_account(c);
    }
    client_read_start(c);
}

void client_users_reloaded(const struct acl *acl)
{
    struct list_node *pos, *tmp;
    char label[CLIENT_LABEL_MAX];

    list_for_each_safe (pos, tmp, &clients.all) {
        struct client *c = list_entry(pos, struct client, link);
        const char *name = c->user != NULL ? c->user->name : NULL;

        if (c->user == NULL || c->user == &acl_default_user)
            continue;
        c->user = acl_find(acl, name, strlen(name));
        if (c->user != NULL)
            continue;
        log_info("%s: user '%s' removed by a reload; closing it",
                 client_label(c, label, sizeof(label)), name);
        client_close(c, "user removed");
    }
}

/* ---- the whole front ----------------------------------------------------- */

int client_init(uv_loop_t *loop, const struct config *cfg,
                client_execute_fn *execute)
{
    int err;

    clients.loop = loop;
    clients.cfg = cfg;
    clients.execute = execute;
    list_init(&clients.all);
    client_output_init();
    accepting.fd_max_clients = UINT64_MAX;
    stats.max_clients_effective = max_clients();
    peer_table_init();
    if ((err = client_ready_init(loop)) != 0)
        return err;
    return client_limits_init(loop);
}

void client_stop_all(void)
{
    clients.stopped = true;
}

void client_quit_all(void)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &clients.all) {
        struct client *c = list_entry(pos, struct client, link);
        client_limits_unpenalize(c);
        client_quit(c);
        client_output_flush(c);
    }
}

void client_close_handles(void)
{
    client_ready_close_handles();
    client_limits_close_handles();
    peer_table_free();
}
