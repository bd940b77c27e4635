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
#include "engine/session.h"
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

/*
 * client_slots.c - replies in request order, and the engine's answers.
 *
 * Owns struct client_slot: one per command in flight on a connection,
 * or answered while one before it is not, on the connection's pending
 * list in request order. A reply that comes early waits in its slot for
 * the ones before it. Also what is written into a slot: the engine's
 * result as RESP, and CLIENTID's join; and the acquire in flight, which
 * runs alone and is kept with its command and lock name.
 *
 * The engine's callbacks here must never run a request or write to the
 * socket: they only record the reply and put the client on the ready
 * list, so one client's completion never runs inside another's stack.
 */

/* One command in flight, or answered while one before it is not. */
struct client_slot {
    struct list_node link; /* in client.pending */
    struct client *client;
    struct lock_call *call; /* while in flight, if the engine kept it */
    struct lock_join *join; /* a CLIENTID's, likewise */
    bool answered;
    struct buffer reply;
    size_t counted;     /* of reply.len, in client.slot_bytes */
    bool granted_is_ok; /* LOCK answers +OK, TRYLOCK :1 */
    bool with_names;    /* OWNERS ... WITHNAMES */
    bool alone;
    /* the connection's when the command ran: a HELLO after it must not
     * change how its reply is written */
    enum reply_protocol protocol;
    /* An acquire's command and lock name, as its client sent them: what
     * it was allowed as, checked again after a reload (client_acquire). */
    const struct command *command;
    size_t name_len;
    char name[];
};

/* ---- reply slots --------------------------------------------------------- */

static void slot_free(struct client_slot *slot)
{
    slot->client->slot_bytes -= slot->counted;
    list_remove(&slot->link);
    buffer_free(&slot->reply);
    free(slot);
}

/* A slot with room for a lock name of name_len bytes. */
static struct client_slot *slot_add(struct client *c, size_t name_len)
{
    struct client_slot *slot = calloc(1, sizeof(*slot) + name_len);

    if (slot == NULL) {
        client_close(c, "out of memory");
        return NULL;
    }
    slot->client = c;
    buffer_init(&slot->reply);
    list_push_tail(&c->pending, &slot->link);
    return slot;
}

void client_slots_drain(struct client *c)
{
    struct list_node *node;

    while ((node = list_first(&c->pending)) != NULL) {
        struct client_slot *slot = list_entry(node, struct client_slot, link);

        if (!slot->answered)
            return;
        if (buffer_append(&c->out, slot->reply.data, slot->reply.len) != 0) {
            client_close(c, "out of memory");
            return;
        }
        slot_free(slot);
    }
}

/* Counts what was written into a slot's reply since it was last counted:
 * replies waiting in slots are unsent output too. */
static void slot_count(struct client_slot *slot)
{
    slot->client->slot_bytes += slot->reply.len - slot->counted;
    slot->counted = slot->reply.len;
}

/* Counts what the last command wrote into its slot, if it has one. */
void client_slots_count_last(struct client *c)
{
    if (list_last(&c->pending) != NULL)
        slot_count(
            list_entry(list_last(&c->pending), struct client_slot, link));
}

struct buffer *client_reply_buffer(struct client *c)
{
    struct client_slot *slot;

    if (list_empty(&c->pending))
        return &c->out;
    slot = slot_add(c, 0);
    if (slot == NULL)
        return NULL;
    slot->answered = true;
    return &slot->reply;
}

void client_slots_abandon(struct client *c)
{
    struct list_node *node;

    while ((node = list_first(&c->pending)) != NULL) {
        struct client_slot *slot = list_entry(node, struct client_slot, link);

        if (!slot->answered) {
            stats.commands_in_flight--;
            if (slot->alone)
                stats.blocked_clients--;
            if (slot->join != NULL)
                lock_engine_join_abandon(slot->join);
            else
                lock_engine_abandon(slot->call);
        }
        slot_free(slot);
    }
    c->in_flight = 0;
}

/* ---- the engine's result as RESP ----------------------------------------- */

/* The name (CLIENT SETNAME, HELLO SETNAME) of a connection of this
 * rlockd whose client-id begins the owner's field ("<client-id>:<thread
 * id>"; a client-id has no ':'); NULL for another rlockd's client, a
 * Redisson client, or one without a name. A scan of every connection:
 * OWNERS ... WITHNAMES is for people, not for hot paths. */
static const char *owner_client_name(const char *field, size_t len)
{
    const char *colon = memchr(field, ':', len);
    size_t id_len = colon != NULL ? (size_t)(colon - field) : len;
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &clients.all) {
        const struct client *c = list_entry(pos, struct client, link);

        if (c->name != NULL && c->session != NULL &&
            c->session->id_len == id_len &&
            memcmp(c->session->id, field, id_len) == 0)
            return c->name;
    }
    return NULL;
}

/* OWNERS: [pttl, {owner: count...}, kind], the map a flat array in
 * RESP2; with WITHNAMES a fourth element, {owner: client name or null...}:
 * the additions last, so that readers of the first elements still work. */
static int write_owners(struct buffer *out, enum reply_protocol proto,
                        const struct lock_result *r, bool with_names)
{
    int err = reply_array_header(out, with_names ? 4 : 3);

    err |= reply_integer(out, r->integer);
    err |= reply_map_header(out, proto, r->owner_count);
    for (size_t i = 0; i < r->owner_count; i++) {
        err |= reply_bulk(out, r->owners[i].field, r->owners[i].field_len);
        err |= reply_integer(out, r->owners[i].count);
    }
    err |= reply_bulk(out, r->kind, r->kind_len);
    if (!with_names)
        return err ? -ENOMEM : 0;
    err |= reply_map_header(out, proto, r->owner_count);
    for (size_t i = 0; i < r->owner_count; i++) {
        const char *name =
            owner_client_name(r->owners[i].field, r->owners[i].field_len);

        err |= reply_bulk(out, r->owners[i].field, r->owners[i].field_len);
        err |= name != NULL ? reply_bulk(out, name, strlen(name))
                            : reply_null(out, proto);
    }
    return err ? -ENOMEM : 0;
}

static int write_result(struct buffer *out, enum reply_protocol proto,
                        const struct lock_result *r, bool granted_is_ok,
                        bool with_names)
{
    switch (r->type) {
    case RESULT_GRANTED:
        return granted_is_ok ? reply_simple(out, "OK") : reply_integer(out, 1);
    case RESULT_NOT_GRANTED:
        return reply_integer(out, 0);
    case RESULT_INTEGER:
        return reply_integer(out, r->integer);
    case RESULT_ERROR:
        return reply_error(out, r->error, "%s", r->message);
    case RESULT_OWNERS:
        return write_owners(out, proto, r, with_names);
    case RESULT_TEXT:
        return reply_bulk(out, r->message, strlen(r->message));
    }
    return -EINVAL;
}

/* ---- commands the engine answers ----------------------------------------- */

/* The engine answered: record the reply; the ready list does the rest. */
static void slot_answer(struct client_slot *slot,
                        const struct lock_result *result)
{
    struct client *c = slot->client;

    slot->answered = true;
    slot->call = NULL;
    slot->join = NULL;
    if (--c->in_flight == 0) /* a heartbeat's clock starts again */
        c->heard_ms = uv_now(clients.loop);
    stats.commands_in_flight--;
    if (slot->alone) {
        c->alone = false;
        stats.blocked_clients--;
    }
    /* A lost reply would misalign every later one: the ready list closes
     * the connection instead (not here, inside the engine's call). */
    if (write_result(&slot->reply, slot->protocol, result, slot->granted_is_ok,
                     slot->with_names) != 0)
        c->doomed = "out of memory writing a reply";
    slot_count(slot);
    client_ready_mark(c);
}

static void on_call_done(void *ctx, const struct lock_result *result)
{
    slot_answer(ctx, result);
}

/* A slot for a command the engine answers, counted in flight before the
 * engine may answer it at once; NULL when out of memory (then closed). */
static struct client_slot *slot_start(struct client *c, bool alone,
                                      bool granted_is_ok, size_t name_len)
{
    struct client_slot *slot = slot_add(c, name_len);

    if (slot == NULL)
        return NULL;
    slot->granted_is_ok = granted_is_ok;
    slot->alone = alone;
    slot->protocol = c->protocol;
    c->in_flight++;
    stats.commands_in_flight++;
    if (alone) {
        c->alone = true;
        stats.blocked_clients++;
    }
    return slot;
}

void client_start_call(struct client *c, const struct lock_request *req,
                       const struct command *cmd, const struct command_args *a,
                       bool granted_is_ok)
{
    bool alone = cmd->flags & CMD_ALONE;
    struct client_slot *slot =
        slot_start(c, alone, granted_is_ok, alone ? a->name_len : 0);
    struct lock_call *call;

    if (slot == NULL)
        return;
    slot->with_names = a->with_names;
    if (alone) {
        slot->command = cmd;
        slot->name_len = a->name_len;
        memcpy(slot->name, a->name, a->name_len);
    }
    call = lock_engine_start(c->session, req, on_call_done, slot);
    if (!slot->answered)
        slot->call = call;
}

/* ---- the acquire in flight ----------------------------------------------- */

/* The acquire in flight (it runs alone), if any; NULL for a CLIENTID's
 * join, which never waits for a lock. */
static struct client_slot *acquire_in_flight(struct client *c)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &c->pending) {
        struct client_slot *slot = list_entry(pos, struct client_slot, link);

        if (slot->alone && !slot->answered && slot->call != NULL)
            return slot;
    }
    return NULL;
}

struct lock_call *client_slots_acquire_call(struct client *c)
{
    struct client_slot *slot = acquire_in_flight(c);

    return slot != NULL ? slot->call : NULL;
}

bool client_acquire(struct client *c, const struct command **cmd,
                    const char **name, size_t *name_len)
{
    struct client_slot *slot = acquire_in_flight(c);

    if (slot == NULL)
        return false;
    *cmd = slot->command;
    *name = slot->name;
    *name_len = slot->name_len;
    return true;
}

void client_refuse_acquire(struct client *c, const char *text)
{
    struct client_slot *slot = acquire_in_flight(c);
    struct lock_result result = {
        .type = RESULT_ERROR, .error = REPLY_NOPERM, .message = text};

    lock_engine_abandon(slot->call);
    slot_answer(slot, &result);
}

/* ---- CLIENTID: joining a session ----------------------------------------- */

/*
 * A refused join says the same whatever the reason (no secret given, a
 * wrong one, a session started without one), is counted, logged and
 * penalised as a failed AUTH is: guessing a session's secret must be as
 * slow as guessing a password.
 */
static void on_join_done(void *ctx, struct session *session, int err)
{
    struct client_slot *slot = ctx;
    struct client *c = slot->client;
    struct lock_result result = {
        .type = RESULT_ERROR, .error = REPLY_ERR, .message = "out of memory"};
    struct session *old = c->session;

    if (session != NULL) {
        c->session = session;
        lock_engine_leave(old); /* holds nothing: client_set_id saw to it */
        result.type = RESULT_GRANTED;
    } else if (err == -EPERM) {
        stats.clientid_refusals++;
        result.error = REPLY_NOPERM;
        result.message =
            "client-id in use: joining its session needs its SECRET";
    } else if (err == -ENOENT) {
        result.error = REPLY_LOCKLOST;
        result.message = "no session of this client-id to resume: every "
                         "lock it held is lost";
    } else if (err == -EBADMSG) {
        result.error = REPLY_WRONGTYPE;
        result.message = "not an rlockd record: the key of this client-id's "
                         "session record holds what rlockd did not write "
                         "(rlockd's log names it); delete it to use this "
                         "client-id";
    } else if (err == -EAGAIN) {
        result.error = REPLY_UNAVAILABLE;
        result.message = "the client-id's session cannot be read from Redis "
                         "now, or is being resumed: try again";
    }
    slot_answer(slot, &result);
    if (err == -EPERM)
        client_penalize(c, "CLIENTID");
}

void client_set_id(struct client *c, const char *id, size_t len,
                   const char *secret, size_t secret_len, bool resume)
{
    struct session *old = c->session;
    bool same = old->id_len == len && memcmp(old->id, id, len) == 0;
    struct client_slot *slot;
    struct lock_join *join;
    struct buffer *out;
    int err;

    if (same || (old->connections == 1 && old->hold_count > 0)) {
        out = client_reply_buffer(c);
        err = out == NULL ? -ENOMEM
              : same      ? reply_simple(out, "OK")
                          : reply_error(out, REPLY_ERR,
                                        "cannot change client-id while "
                                             "holding locks as the last "
                                             "connection of this client");
        if (err != 0)
            client_close(c, "out of memory writing a reply");
        return;
    }
    slot = slot_start(c, true, true, 0);
    if (slot == NULL)
        return;
    join = lock_engine_join(id, len, secret, secret_len, resume, on_join_done,
                            slot);
    if (!slot->answered)
        slot->join = join;
}

/*
 * client_pipeline.c - running a connection's requests, in order.
 *
 * Owns the parse-and-run loop: requests buffered in c->in are parsed and
 * handed to the executor one after another, while the connection may
 * run (nothing that runs alone in flight, not paused by its unsent
 * output or the penalty box, under max_commands_in_flight), and a
 * request that must run alone waits, parked in the parser, until
 * nothing is in flight. Each client gets a share of the turn: one whose
 * requests made TURN_OUTPUT_SHARE of replies goes on in the next turn,
 * from the ready list.
 *
 * A half-closed client (EOF read) is read no more, and closes once what
 * it sent has run and been answered. An acquire it sent does not wait for
 * a lock meanwhile: nobody would act on the grant, and a grant to one
 * connection of a session that others keep open would stay held. The
 * engine is told it may not wait (lock_engine_stop_waiting): one that
 * would wait is answered -ERR, one granted at once as ever.
 *
 * It must never run from inside the engine's callbacks: an answer
 * reaches it only through the ready list.
 */

/* Reply bytes one client's requests may make in one call before the
 * others' turn: a lock client's whole pipeline, about 5 INFO replies. The
 * kernel takes megabytes of a non-reader's replies before the pause
 * applies; without a share, making them would hold the loop (and every
 * other client, and the renewals) as long. */
#define TURN_OUTPUT_SHARE 16384

/* Whether the next request may run now. */
static bool can_run(const struct client *c)
{
    return !c->alone && !c->quitting && !c->closing && !clients.stopped &&
           !client_limits_penalized(c) && !client_output_paused(c) &&
           c->in_flight < (size_t)clients.cfg->max_commands_in_flight;
}

/* Runs the parked request, if any; false while it still has to wait. */
static bool run_parked(struct client *c)
{
    if (!c->parked)
        return true;
    if (c->in_flight > 0 ||
        clients.execute(c, c->parser.argc, c->parser.argv,
                        c->parser.argv_len) == CLIENT_RUN_LATER)
        return false;
    c->parked = false;
    return true;
}

/* Gives back what an idle connection does not need: its read buffer
 * (10,000 idle pooled connections would otherwise hold 160 MB), and an
 * argument arena that a large request grew. */
static void client_trim_input(struct client *c)
{
    if (c->in.len > 0)
        return;
    buffer_free(&c->in);
    if (!c->parked)
        request_parser_trim(&c->parser);
}

/* Runs buffered requests until one must wait, the input runs out, or
 * their replies have used the client's share of this turn (then it goes
 * on from the ready list); true when the input ends inside a request. */
static bool run_requests(struct client *c)
{
    size_t pos = 0, start = client_output_unsent(c);
    bool incomplete = false;

    c->yielded = false;
    while (can_run(c) && run_parked(c) && can_run(c) && pos < c->in.len) {
        if (client_output_unsent(c) - start >= TURN_OUTPUT_SHARE) {
            c->yielded = true;
            client_ready_mark(c);
            break;
        }
        size_t consumed = 0;
        enum request_status st = request_parser_feed(
            &c->parser, c->in.data + pos, c->in.len - pos, &consumed);

        pos += consumed;
        if (st == REQUEST_INCOMPLETE) {
            incomplete = true;
            break;
        }
        if (st == REQUEST_ERROR) {
            struct buffer *out = client_reply_buffer(c);

            stats.protocol_errors++;
            if (out != NULL)
                reply_error(out, REPLY_ERR, "%s", c->parser.error);
            client_quit(c);
            break;
        }
        stats.total_commands_processed++;
        c->parked = clients.execute(c, c->parser.argc, c->parser.argv,
                                    c->parser.argv_len) == CLIENT_RUN_LATER;
        client_slots_count_last(c);
        client_slots_drain(c);
    }
    if (!c->closing) {
        buffer_consume(&c->in, pos);
        client_slots_drain(c);
        client_trim_input(c);
    }
    return incomplete;
}

/*
 * After a half-closed client's turn: once nothing it sent can still run
 * (no reply awaited, no complete request left; a request cut by the EOF
 * never completes), it quits, and closes when its replies are written.
 * Until then, an acquire in flight may not wait (see the top).
 */
static void half_closed_progress(struct client *c, bool incomplete)
{
    struct lock_call *call;

    if (c->closing || c->quitting)
        return;
    if (list_empty(&c->pending) && !c->parked && !c->yielded &&
        !client_limits_penalized(c) && (c->in.len == 0 || incomplete)) {
        client_quit(c);
        client_output_flush(c);
        return;
    }
    if ((call = client_slots_acquire_call(c)) != NULL)
        lock_engine_stop_waiting(call,
                                 "cancelled: the client closed its sending "
                                 "side while waiting for the lock");
}

/*
 * Runs what the client sent and sends the replies, again while sending
 * made room under the output pause and requests are left; then updates
 * what the limits watch: a request left unfinished, reading paused or
 * not, the memory held.
 */
void client_pipeline_process(struct client *c)
{
    bool incomplete;

    do {
        incomplete = run_requests(c);
        if (!c->closing)
            client_output_flush(c);
        if (c->closing)
            return;
        /* a parked request waits for the calls in flight: the ready list
         * comes back once one is answered */
    } while (!incomplete && !c->yielded && !c->parked && c->in.len > 0 &&
             can_run(c));
    client_limits_note_partial(
        c, incomplete && (request_parser_started(&c->parser) || c->in.len > 0));
    client_output_update_reading(c);
    client_limits_account(c);
    if (c->half_closed)
        half_closed_progress(c, incomplete);
}
