/*
 * client.c - reading requests, running them in order, writing replies.
 *
 * A command that needs Redis gets a slot on its connection's pending
 * list. The engine's done callback only writes the reply into the slot
 * and puts the connection on the ready list; a check handle, which runs
 * once per loop turn after I/O, moves answered slots' replies to the
 * output in request order, resumes reading requests and writes. This is
 * Redis's unblocked-clients list: one client's completion never runs
 * another client's commands inside its stack.
 *
 * The same pass gives each client a share of the turn (a client whose
 * requests made TURN_OUTPUT_SHARE of replies goes on in the next turn),
 * and closes the clients holding the most memory while all client
 * buffers are over max_client_buffers_bytes, so that closing one never
 * happens inside another's stack either.
 *
 * A half-closed client (EOF read) is read no more, and closes once what
 * it sent has run and been answered. An acquire it sent does not wait for
 * a lock meanwhile: nobody would act on the grant, and a grant to one
 * connection of a session that others keep open would stay held. The
 * engine is told it may not wait (lock_engine_stop_waiting): one that
 * would wait is answered -ERR, one granted at once as ever.
 *
 * The penalty box holds penalized connections in one FIFO per delay:
 * every connection in a FIFO waits the same delay, so each FIFO is in
 * due order, and one timer armed at the earliest head serves them all
 * (no heap, no timer per connection, nothing armed while the box is
 * empty). Requests left unfinished (request_timeout_ms) are kept the same
 * way: one list in the order they started, one timer at the head's
 * deadline. Heartbeats too: one list by the time each is next looked
 * at, one timer; a connection that was heard from meanwhile goes back in
 * order, so that a byte read costs a store, not a timer update.
 */
#include "front/client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/acl.h"
#include "base/log.h"
#include "base/stats.h"
#include "client_id.h"
#include "engine/session.h"
#include "front/client_tls.h"
#include "front/multilock.h"
#include "front/peer.h"
#include "reply.h"

#define READ_CHUNK 16384
/* Unsent replies past which a connection's requests wait for it to read:
 * a few socket buffers' worth, far below max_output_buffer_bytes, so that
 * pipelined requests cannot turn a little input into much output. */
#define OUTPUT_PAUSE 65536
/* Reply bytes one client's requests may make in one call before the
 * others' turn: a lock client's whole pipeline, about 5 INFO replies. The
 * kernel takes megabytes of a non-reader's replies before the pause
 * applies; without a share, making them would hold the loop (and every
 * other client, and the renewals) as long. */
#define TURN_OUTPUT_SHARE 16384
/* An emptied output buffer larger than this is given back: a client that
 * once had a large reply does not keep its size while idle. */
#define IDLE_OUTPUT_KEEP 4096

/* The delay after the n-th refusal: 100 ms, doubling up to 3.2 s. A
 * legitimate client that mistyped loses little; a guesser gets a few
 * guesses a second per connection, then is closed. */
#define PENALTY_FIRST_MS 100
#define PENALTY_LEVELS 6
/* At most one log line about refusals this often, so that a flood of
 * guesses cannot flood the log; the next line counts those not logged. */
#define PENALTY_LOG_INTERVAL_MS 1000
/* How often a half-closed client's acquire is looked at (above). */

/* One command in flight, or answered while one before it is not. */
struct client_slot {
    struct list_node link; /* in client.pending */
    struct client *client;
    struct lock_call *call; /* while in flight, if the engine kept it */
    struct lock_join *join; /* a CLIENTID's, likewise */
    /* an MLOCK's or MUNLOCK's, likewise */
    struct multilock *multi;
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

struct client_write {
    uv_write_t req;
    struct client *client;
    struct buffer data;
};

static struct {
    uv_loop_t *loop;
    const struct config *cfg;
    client_execute_fn *execute;
    struct list_node all;
    struct list_node ready; /* struct client.ready_link */
    uv_check_t ready_check;
    uv_idle_t ready_kick; /* keeps the loop from sleeping while ready */
    uv_timer_t penalty_timer;
    struct list_node penalty_box[PENALTY_LEVELS]; /* one FIFO per delay */
    uint64_t penalty_log_next_ms; /* no refusal logged before then */
    uint64_t penalty_unlogged;    /* refusals not logged since the last */
    uint64_t next_id;
    uint64_t fd_max_clients;      /* what the open files limit allows */
    struct list_node partial;     /* struct client.partial_link, oldest first */
    uv_timer_t partial_timer;     /* at the oldest's request_timeout_ms */
    struct list_node heartbeats;  /* struct client.heartbeat_link, by due */
    uv_timer_t heartbeat_timer;   /* at the first one's due time */
    struct list_node subscribers; /* struct client.subscriber_link */
    bool stopped;                 /* shutting down: no new commands */
} clients;

static void client_flush(struct client *c);

/* ---- reply slots ------------------------------------------------------- */

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

/* Moves the replies of answered slots at the head to the output. */
static void slots_drain(struct client *c)
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

static void on_ready_check(uv_check_t *check);
static void on_ready_kick(uv_idle_t *idle);
static void on_penalty_timer(uv_timer_t *timer);

/* The kick too: a call answered from a timer (before the loop polls)
 * must not wait for the poll's next event to be written. */
static void mark_ready(struct client *c)
{
    if (list_linked(&c->ready_link))
        return;
    list_push_tail(&clients.ready, &c->ready_link);
    uv_check_start(&clients.ready_check, on_ready_check);
    uv_idle_start(&clients.ready_kick, on_ready_kick);
}

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

/* The engine answered: record the reply; the ready list does the rest. */
static void slot_answer(struct client_slot *slot,
                        const struct lock_result *result)
{
    struct client *c = slot->client;

    slot->answered = true;
    slot->call = NULL;
    slot->join = NULL;
    slot->multi = NULL;
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
    mark_ready(c);
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

void client_start_multilock(struct client *c, const struct command *cmd,
                            const struct command_args *a,
                            const struct multilock_request *req)
{
    bool alone = cmd->flags & CMD_ALONE;
    size_t packed = 0;
    struct client_slot *slot;
    struct multilock *m;

    for (size_t i = 0; alone && i < a->list_count; i++)
        packed += sizeof(size_t) + a->list_len[i];
    if ((slot = slot_start(c, alone, true, packed)) == NULL)
        return;
    slot->command = cmd;
    for (size_t i = 0; alone && i < a->list_count; i++) {
        memcpy(slot->name + slot->name_len, &a->list_len[i], sizeof(size_t));
        memcpy(slot->name + slot->name_len + sizeof(size_t), a->list[i],
               a->list_len[i]);
        slot->name_len += sizeof(size_t) + a->list_len[i];
    }
    m = multilock_start(c->session, req, on_call_done, slot);
    if (!slot->answered)
        slot->multi = m;
}

/* Lets go of a slot's call in flight, whichever kind it is. */
static void slot_abandon_call(struct client_slot *slot)
{
    if (slot->join != NULL)
        lock_engine_join_abandon(slot->join);
    else if (slot->multi != NULL)
        multilock_abandon(slot->multi);
    else
        lock_engine_abandon(slot->call);
}

/* ---- connection life ---------------------------------------------------- */

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

static bool penalized(const struct client *c)
{
    return list_linked(&c->penalty_link);
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

/* Abandons the calls still in flight and frees every slot. */
static void slots_abandon(struct client *c)
{
    struct list_node *node;

    while ((node = list_first(&c->pending)) != NULL) {
        struct client_slot *slot = list_entry(node, struct client_slot, link);

        if (!slot->answered) {
            stats.commands_in_flight--;
            if (slot->alone)
                stats.blocked_clients--;
            slot_abandon_call(slot);
        }
        slot_free(slot);
    }
    c->in_flight = 0;
}

void client_close(struct client *c, const char *why)
{
    char label[CLIENT_LABEL_MAX];

    if (c->closing)
        return;
    c->closing = true;
    log_debug("%s closed: %s", client_label(c, label, sizeof(label)), why);
    if (penalized(c))
        list_remove(&c->penalty_link);
    if (list_linked(&c->partial_link))
        list_remove(&c->partial_link);
    if (list_linked(&c->heartbeat_link))
        list_remove(&c->heartbeat_link);
    client_set_subscribed(c, false);
    if (c->peer != NULL)
        peer_detach(c->peer);
    c->peer = NULL;
    stats.client_buffers_bytes -= c->accounted;
    c->accounted = 0;
    slots_abandon(c);
    if (c->session != NULL)
        lock_engine_leave(c->session);
    c->session = NULL;
    list_remove(&c->link);
    if (list_linked(&c->ready_link))
        list_remove(&c->ready_link);
    stats.connected_clients--;
    uv_close(&c->io.handle, on_closed);
}

static void client_account(struct client *c);

/* Replies not yet read by the client: buffered, being written, or
 * waiting in a slot for an earlier one. */
static size_t unsent(const struct client *c)
{
    return c->out.len + c->writing + c->slot_bytes;
}

static size_t output_pause(void)
{
    size_t hard = (size_t)clients.cfg->max_output_buffer_bytes;

    return hard / 2 < OUTPUT_PAUSE ? hard / 2 : OUTPUT_PAUSE;
}

static void client_process(struct client *c);

static void on_alloc(uv_handle_t *handle, size_t hint, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* Back-pressure: a connection with too much unsent output is not read
 * (the kernel's buffers then slow the client down), as it runs nothing
 * (can_run) until the client has read; nor is one that used its share of
 * the turn, until its next. */
static void client_update_reading(struct client *c)
{
    bool over = unsent(c) >= output_pause() || c->yielded;

    if (over == c->read_paused || c->quitting || c->closing || c->half_closed)
        return;
    c->read_paused = over;
    if (over)
        uv_read_stop(&c->io.stream);
    else
        uv_read_start(&c->io.stream, on_alloc, on_read);
}

static void on_written(uv_write_t *req, int status)
{
    struct client_write *w = (struct client_write *)req;
    struct client *c = w->client;

    c->writing -= w->data.len;
    buffer_free(&w->data);
    free(w);
    if (status < 0) {
        client_close(c, uv_strerror(status));
        return;
    }
    client_flush(c);
    if ((c->read_paused || c->half_closed) && unsent(c) < output_pause())
        client_process(c); /* runs what waited, and reads again */
    else
        client_account(c);
}

static bool done_quitting(const struct client *c)
{
    return c->quitting && list_empty(&c->pending) && c->out.len == 0 &&
           c->writing == 0;
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
    char label[CLIENT_LABEL_MAX];
    struct client_write *w;
    uv_buf_t buf;
    int err;

    if (c->closing || penalized(c))
        return;
    if (c->tls != NULL && (err = client_tls_seal(c)) != 0) {
        client_close(c, err == -ENOMEM ? "out of memory" : "TLS write failed");
        return;
    }
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
    if (done_quitting(c)) {
        client_close(c, "quit");
        return;
    }
    if (c->out.len == 0) {
        if (c->out.cap > IDLE_OUTPUT_KEEP)
            buffer_free(&c->out);
        return;
    }
    if (c->writing + c->out.len >
        (size_t)clients.cfg->max_output_buffer_bytes) {
        log_warn("%s: over max_output_buffer_bytes (not reading its "
                 "replies); closing it",
                 client_label(c, label, sizeof(label)));
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

/* Whether the next request may run now. */
static bool can_run(const struct client *c)
{
    return !c->alone && !c->quitting && !c->closing && !clients.stopped &&
           !penalized(c) && unsent(c) < output_pause() &&
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

/* ---- deadline timers ------------------------------------------------------ */

/* No deadline: the list the timer serves is empty. */
#define NO_DEADLINE UINT64_MAX

/* Each kept list (unfinished requests, heartbeats, the penalty box) has
 * one timer, armed at its earliest deadline (in loop time; a past one
 * fires at once), or stopped when there is none. */
static void deadline_timer_arm(uv_timer_t *timer, uv_timer_cb cb, uint64_t due)
{
    uint64_t now = uv_now(clients.loop);

    if (due == NO_DEADLINE)
        uv_timer_stop(timer);
    else
        uv_timer_start(timer, cb, due > now ? due - now : 0, 0);
}

/* ---- requests left unfinished (request_timeout_ms) ----------------------- */

static void on_partial_timer(uv_timer_t *timer);

static void partial_arm(void)
{
    struct list_node *node = list_first(&clients.partial);
    uint64_t due = NO_DEADLINE;

    if (node != NULL)
        due = list_entry(node, struct client, partial_link)->partial_since_ms +
              (uint64_t)clients.cfg->request_timeout_ms;
    deadline_timer_arm(&clients.partial_timer, on_partial_timer, due);
}

/* Closes the connections whose request has been unfinished too long, the
 * oldest first ("slowloris": a byte now and then holds a slot for ever). */
static void on_partial_timer(uv_timer_t *timer)
{
    uint64_t now = uv_now(clients.loop);
    struct list_node *node;
    char label[CLIENT_LABEL_MAX];

    (void)timer;
    while ((node = list_first(&clients.partial)) != NULL) {
        struct client *c = list_entry(node, struct client, partial_link);

        if (c->partial_since_ms + (uint64_t)clients.cfg->request_timeout_ms >
            now)
            break;
        if (c->tls != NULL && !client_tls_established(c)) {
            stats.tls_handshake_failures++;
            stats.tls_handshake_timeouts++;
            log_debug("%s: TLS handshake unfinished for request_timeout_ms",
                      client_label(c, label, sizeof(label)));
            client_close(c, "TLS handshake timeout");
            continue;
        }
        stats.request_timeouts++;
        log_warn("%s: a request unfinished for request_timeout_ms; closing it",
                 client_label(c, label, sizeof(label)));
        client_close(c, "request timeout");
    }
    partial_arm();
}

/* ---- heartbeats (CLIENT HEARTBEAT) --------------------------------------- */

static void on_heartbeat_timer(uv_timer_t *timer);

static void heartbeat_arm(void)
{
    struct list_node *node = list_first(&clients.heartbeats);
    uint64_t due = NO_DEADLINE;

    if (node != NULL)
        due = list_entry(node, struct client, heartbeat_link)->heartbeat_due_ms;
    deadline_timer_arm(&clients.heartbeat_timer, on_heartbeat_timer, due);
}

/* Inserts by due time, scanning from the tail: clients mostly share one
 * interval, so a new due time is nearly always the latest. */
static void heartbeat_schedule(struct client *c, uint64_t due)
{
    struct list_node *pos = clients.heartbeats.prev;

    c->heartbeat_due_ms = due;
    while (pos != &clients.heartbeats &&
           list_entry(pos, struct client, heartbeat_link)->heartbeat_due_ms >
               due)
        pos = pos->prev;
    list_insert_before(pos->next, &c->heartbeat_link);
}

void client_set_heartbeat(struct client *c, int64_t ms)
{
    uint64_t now = uv_now(clients.loop);

    if (list_linked(&c->heartbeat_link))
        list_remove(&c->heartbeat_link);
    c->heartbeat_ms = ms;
    c->heard_ms = now;
    if (ms > 0)
        heartbeat_schedule(c, now + (uint64_t)ms);
    heartbeat_arm();
}

/* The client went silent: it is gone, with every connection of its
 * session, as if it had closed them (on_disconnect then applies). */
static void heartbeat_missed(struct client *c)
{
    struct session *session = c->session;
    struct list_node *pos, *tmp;
    char label[CLIENT_LABEL_MAX];

    stats.heartbeat_timeouts++;
    log_warn("%s: nothing heard for its heartbeat of %lld ms; ending client "
             "%s",
             client_label(c, label, sizeof(label)), (long long)c->heartbeat_ms,
             session->id);
    list_for_each_safe (pos, tmp, &clients.all) {
        struct client *other = list_entry(pos, struct client, link);

        if (other->session == session)
            client_close(other, "heartbeat missed");
    }
}

/* Looks at each client due: one heard from since (or still being served)
 * is due again a heartbeat after that; the others have missed it. */
static void on_heartbeat_timer(uv_timer_t *timer)
{
    uint64_t now = uv_now(clients.loop), due;
    struct list_node *node;

    (void)timer;
    while ((node = list_first(&clients.heartbeats)) != NULL) {
        struct client *c = list_entry(node, struct client, heartbeat_link);

        if (c->heartbeat_due_ms > now)
            break;
        list_remove(&c->heartbeat_link);
        due =
            (c->in_flight > 0 ? now : c->heard_ms) + (uint64_t)c->heartbeat_ms;
        if (due > now)
            heartbeat_schedule(c, due);
        else
            heartbeat_missed(c);
    }
    heartbeat_arm();
}

/* Whether the client has sent part of a request and not the rest. */
static void client_note_partial(struct client *c, bool partial)
{
    if (partial == list_linked(&c->partial_link))
        return;
    if (!partial) {
        list_remove(&c->partial_link);
    } else {
        c->partial_since_ms = uv_now(clients.loop);
        list_push_tail(&clients.partial, &c->partial_link);
    }
    partial_arm();
}

/* ---- memory in client buffers (max_client_buffers_bytes) ----------------- */

static bool over_buffers_cap(void)
{
    return stats.client_buffers_bytes >
           (uint64_t)clients.cfg->max_client_buffers_bytes;
}

/* Over the cap: closes the clients holding the most memory, largest
 * first, until under it, as Redis's maxmemory-clients does (for a client
 * that does not read, that is its unread replies; idle ones hold almost
 * nothing). One scan per client closed, which only a flood pays for. */
static void enforce_buffers_cap(void)
{
    char label[CLIENT_LABEL_MAX];

    while (over_buffers_cap()) {
        struct list_node *pos, *tmp;
        struct client *largest = NULL;

        list_for_each_safe (pos, tmp, &clients.all) {
            struct client *c = list_entry(pos, struct client, link);

            if (largest == NULL || c->accounted > largest->accounted)
                largest = c;
        }
        if (largest == NULL || largest->accounted == 0)
            return;
        stats.buffer_cap_disconnects++;
        log_warn("%s: holds %zu bytes (%zu of unread replies), the most while "
                 "client buffers are over max_client_buffers_bytes; closing it",
                 client_label(largest, label, sizeof(label)),
                 largest->accounted, unsent(largest));
        client_close(largest, "client buffers cap");
    }
}

/* Updates the client's share of client_buffers_bytes (what its buffers
 * hold in memory); over the cap, the ready pass closes the largest. */
static void client_account(struct client *c)
{
    size_t held;

    if (c->closing)
        return;
    held = c->in.cap + c->out.cap + c->writing + c->slot_bytes +
           c->parser.arena.cap + c->tls_bytes;
    stats.client_buffers_bytes += held - c->accounted;
    c->accounted = held;
    if (over_buffers_cap())
        uv_check_start(&clients.ready_check, on_ready_check);
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
    size_t pos = 0, start = unsent(c);
    bool incomplete = false;

    c->yielded = false;
    while (can_run(c) && run_parked(c) && can_run(c) && pos < c->in.len) {
        if (unsent(c) - start >= TURN_OUTPUT_SHARE) {
            c->yielded = true;
            mark_ready(c);
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
        if (list_last(&c->pending) != NULL)
            slot_count(
                list_entry(list_last(&c->pending), struct client_slot, link));
        slots_drain(c);
    }
    if (!c->closing) {
        buffer_consume(&c->in, pos);
        slots_drain(c);
        client_trim_input(c);
    }
    return incomplete;
}

/* ---- half-closed clients ------------------------------------------------- */

/* The acquire in flight (it runs alone), if any; NULL for a CLIENTID's
 * join, which never waits for a lock. */
static struct client_slot *acquire_in_flight(struct client *c)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &c->pending) {
        struct client_slot *slot = list_entry(pos, struct client_slot, link);

        if (slot->alone && !slot->answered &&
            (slot->call != NULL || slot->multi != NULL))
            return slot;
    }
    return NULL;
}

/*
 * After a half-closed client's turn: once nothing it sent can still run
 * (no reply awaited, no complete request left; a request cut by the EOF
 * never completes), it quits, and closes when its replies are written.
 * Until then, an acquire in flight may not wait (see the top).
 */
#define HALF_CLOSED_WHY                                                        \
    "cancelled: the client closed its sending side while waiting for the "     \
    "lock"

static void half_closed_progress(struct client *c, bool incomplete)
{
    struct client_slot *slot;

    if (c->closing || c->quitting)
        return;
    if (list_empty(&c->pending) && !c->parked && !c->yielded && !penalized(c) &&
        (c->in.len == 0 || incomplete)) {
        client_quit(c);
        client_flush(c);
        return;
    }
    if ((slot = acquire_in_flight(c)) == NULL)
        return;
    if (slot->multi != NULL)
        multilock_stop_waiting(slot->multi, HALF_CLOSED_WHY);
    else
        lock_engine_stop_waiting(slot->call, HALF_CLOSED_WHY);
}

/* ---- pushed messages (pub/sub) -------------------------------------------- */

void client_set_subscribed(struct client *c, bool subscribed)
{
    if (subscribed == list_linked(&c->subscriber_link))
        return;
    if (subscribed) {
        list_push_tail(&clients.subscribers, &c->subscriber_link);
        stats.pubsub_clients++;
    } else {
        list_remove(&c->subscriber_link);
        stats.pubsub_clients--;
    }
}

bool client_subscribed(const struct client *c)
{
    return list_linked(&c->subscriber_link);
}

void client_foreach_subscriber(void (*fn)(struct client *c, void *arg),
                               void *arg)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &clients.subscribers)
        fn(list_entry(pos, struct client, subscriber_link), arg);
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

void client_push(struct client *c, const char *data, size_t len)
{
    char label[CLIENT_LABEL_MAX];

    if (c->closing || c->doomed != NULL)
        return;
    if (unsent(c) + len > (size_t)clients.cfg->max_output_buffer_bytes) {
        log_warn("%s: a subscriber over max_output_buffer_bytes (not reading "
                 "its messages); closing it",
                 client_label(c, label, sizeof(label)));
        c->doomed = "output limit";
    } else if (buffer_append(&c->out, data, len) != 0) {
        c->doomed = "out of memory";
    }
    mark_ready(c);
}

/*
 * Runs what the client sent and sends the replies, again while sending
 * made room under the output pause and requests are left; then updates
 * what the limits watch: a request left unfinished, reading paused or
 * not, the memory held.
 */
static void client_process(struct client *c)
{
    bool incomplete;

    do {
        incomplete = run_requests(c);
        if (!c->closing)
            client_flush(c);
        if (c->closing)
            return;
        /* a parked request waits for the calls in flight: the ready list
         * comes back once one is answered */
    } while (!incomplete && !c->yielded && !c->parked && c->in.len > 0 &&
             can_run(c));
    client_note_partial(
        c, incomplete && (request_parser_started(&c->parser) || c->in.len > 0));
    client_update_reading(c);
    client_account(c);
    if (c->half_closed)
        half_closed_progress(c, incomplete);
}

/* Once per loop turn: clients whose calls were answered go on. */
static void on_ready_kick(uv_idle_t *idle)
{
    (void)idle;
}

/*
 * Once per loop turn: closes clients while their buffers are over
 * max_client_buffers_bytes (here, never inside another client's stack),
 * then runs the clients whose calls were answered and those that used
 * their share of the last turn. Each gets one call per turn: one made
 * ready again meanwhile waits for the next, and an active idle handle
 * keeps the loop from sleeping until then.
 */
static void on_ready_check(uv_check_t *check)
{
    struct list_node batch, *node;

    list_init(&batch);
    while ((node = list_first(&clients.ready)) != NULL) {
        list_remove(node);
        list_push_tail(&batch, node);
    }
    enforce_buffers_cap();
    while ((node = list_first(&batch)) != NULL) {
        struct client *c = list_entry(node, struct client, ready_link);

        list_remove(node);
        if (c->doomed != NULL)
            client_close(c, c->doomed);
        else
            client_process(c);
    }
    enforce_buffers_cap();
    if (!list_empty(&clients.ready)) {
        uv_idle_start(&clients.ready_kick, on_ready_kick);
        return;
    }
    uv_idle_stop(&clients.ready_kick);
    uv_check_stop(check);
}

/* ---- the penalty box ------------------------------------------------------ */

/* Arms the timer at the earliest due connection, or stops it. */
static void penalty_arm(void)
{
    uint64_t due = NO_DEADLINE;

    for (size_t i = 0; i < PENALTY_LEVELS; i++) {
        struct list_node *node = list_first(&clients.penalty_box[i]);

        if (node != NULL) {
            struct client *c = list_entry(node, struct client, penalty_link);
            if (c->penalty_due_ms < due)
                due = c->penalty_due_ms;
        }
    }
    deadline_timer_arm(&clients.penalty_timer, on_penalty_timer, due);
}

/* Lets out every connection whose delay is over: its replies go, its
 * next requests run (and may put it back in). */
static void on_penalty_timer(uv_timer_t *timer)
{
    uint64_t now = uv_now(clients.loop);

    (void)timer;
    for (size_t i = 0; i < PENALTY_LEVELS; i++) {
        struct list_node *node;

        while ((node = list_first(&clients.penalty_box[i])) != NULL) {
            struct client *c = list_entry(node, struct client, penalty_link);

            if (c->penalty_due_ms > now)
                break;
            list_remove(node);
            client_process(c);
        }
    }
    penalty_arm();
}

/* One warning per PENALTY_LOG_INTERVAL_MS at most, counting the rest. */
static void log_refusal(const struct client *c, const char *what, bool closing,
                        uint64_t now)
{
    char label[CLIENT_LABEL_MAX], unlogged[96] = "";

    if (now < clients.penalty_log_next_ms) {
        clients.penalty_unlogged++;
        return;
    }
    if (clients.penalty_unlogged > 0)
        snprintf(unlogged, sizeof(unlogged),
                 " (%llu more refusals since the last such line)",
                 (unsigned long long)clients.penalty_unlogged);
    log_warn("%s: %s refused, %u of max_auth_failures %lld%s%s",
             client_label(c, label, sizeof(label)), what, c->penalties,
             (long long)clients.cfg->max_auth_failures,
             closing ? ", closing it" : "", unlogged);
    clients.penalty_unlogged = 0;
    clients.penalty_log_next_ms = now + PENALTY_LOG_INTERVAL_MS;
}

void client_penalize(struct client *c, const char *what)
{
    uint64_t now = uv_now(clients.loop);
    unsigned level;
    bool last;

    c->penalties++;
    last = c->penalties >= (uint64_t)clients.cfg->max_auth_failures;
    log_refusal(c, what, last, now);
    if (last) {
        stats.penalty_disconnects++;
        client_quit(c); /* once the delay is over and the reply written */
    }
    level =
        c->penalties < PENALTY_LEVELS ? c->penalties - 1 : PENALTY_LEVELS - 1;
    c->penalty_due_ms = now + ((uint64_t)PENALTY_FIRST_MS << level);
    list_push_tail(&clients.penalty_box[level], &c->penalty_link);
    penalty_arm();
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

/* The client sent its last byte: what it sent runs, then it closes. */
static void client_read_eof(struct client *c)
{
    c->half_closed = true;
    uv_read_stop(&c->io.stream);
    client_process(c);
}

/* Runs what came (c->in grew), and enforces max_input_buffer_bytes. */
static void client_received(struct client *c)
{
    struct buffer *out;

    c->heard_ms = uv_now(clients.loop);
    client_process(c);
    if (c->closing || c->quitting ||
        c->in.len <= (size_t)clients.cfg->max_input_buffer_bytes)
        return;
    out = client_reply_buffer(c);
    if (out != NULL)
        reply_error(out, REPLY_LIMIT,
                    "unprocessed input over max_input_buffer_bytes");
    client_quit(c);
    client_flush(c);
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
        client_flush(c);
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
    client_flush(c);
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

static uint64_t max_clients(void)
{
    uint64_t configured = (uint64_t)clients.cfg->max_clients;

    return configured < clients.fd_max_clients ? configured
                                               : clients.fd_max_clients;
}

void client_set_fd_limit(uint64_t max)
{
    clients.fd_max_clients = max;
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
    client_flush(c);
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
    c->id = ++clients.next_id;
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
        client_note_partial(c, true);
        client_account(c);
    }
    uv_read_start(&c->io.stream, on_alloc, on_read);
}

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

    if (slot->multi != NULL) { /* answered once what it took is released */
        multilock_refuse(slot->multi, &result);
        return;
    }
    lock_engine_abandon(slot->call);
    slot_answer(slot, &result);
}

int client_init(uv_loop_t *loop, const struct config *cfg,
                client_execute_fn *execute)
{
    int err;

    clients.loop = loop;
    clients.cfg = cfg;
    clients.execute = execute;
    list_init(&clients.all);
    list_init(&clients.ready);
    list_init(&clients.partial);
    list_init(&clients.heartbeats);
    list_init(&clients.subscribers);
    clients.fd_max_clients = UINT64_MAX;
    stats.max_clients_effective = max_clients();
    for (size_t i = 0; i < PENALTY_LEVELS; i++)
        list_init(&clients.penalty_box[i]);
    peer_table_init();
    if ((err = uv_check_init(loop, &clients.ready_check)) != 0 ||
        (err = uv_idle_init(loop, &clients.ready_kick)) != 0 ||
        (err = uv_timer_init(loop, &clients.partial_timer)) != 0 ||
        (err = uv_timer_init(loop, &clients.heartbeat_timer)) != 0)
        return err;
    return uv_timer_init(loop, &clients.penalty_timer);
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
        if (penalized(c))
            list_remove(&c->penalty_link);
        client_quit(c);
        client_flush(c);
    }
}

void client_close_handles(void)
{
    uv_check_stop(&clients.ready_check);
    uv_close((uv_handle_t *)&clients.ready_check, NULL);
    uv_idle_stop(&clients.ready_kick);
    uv_close((uv_handle_t *)&clients.ready_kick, NULL);
    uv_timer_stop(&clients.penalty_timer);
    uv_close((uv_handle_t *)&clients.penalty_timer, NULL);
    uv_timer_stop(&clients.partial_timer);
    uv_close((uv_handle_t *)&clients.partial_timer, NULL);
    uv_timer_stop(&clients.heartbeat_timer);
    uv_close((uv_handle_t *)&clients.heartbeat_timer, NULL);
    peer_table_free();
}
