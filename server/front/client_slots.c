/*
 * client_slots.c - replies in request order, and the engine's answers.
 *
 * Owns struct client_slot: one per command in flight on a connection,
 * or answered while one before it is not, on the connection's pending
 * list in request order. A reply that comes early waits in its slot for
 * the ones before it. Also what is written into a slot: the engine's
 * result as RESP, CLIENTID's join, and an MLOCK's or MUNLOCK's
 * (multilock.h); and the acquire in flight, which runs alone and is kept
 * with its command and lock name(s).
 *
 * The engine's callbacks here must never run a request or write to the
 * socket: they only record the reply and put the client on the ready
 * list, so one client's completion never runs inside another's stack.
 */
#include "front/client_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "front/multilock.h"
#include "reply.h"

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

void client_slots_abandon(struct client *c)
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
            lock_engine_session_id_len(c->session) == id_len &&
            memcmp(lock_engine_session_id(c->session), field, id_len) == 0)
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

/* ---- the acquire in flight ----------------------------------------------- */

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

void client_slots_stop_waiting(struct client *c, const char *why)
{
    struct client_slot *slot = acquire_in_flight(c);

    if (slot == NULL)
        return;
    if (slot->multi != NULL)
        multilock_stop_waiting(slot->multi, why);
    else
        lock_engine_stop_waiting(slot->call, why);
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
    bool same = lock_engine_session_id_len(old) == len &&
                memcmp(lock_engine_session_id(old), id, len) == 0;
    struct client_slot *slot;
    struct lock_join *join;
    struct buffer *out;
    int err;

    if (same || lock_engine_session_last_with_holds(old)) {
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
