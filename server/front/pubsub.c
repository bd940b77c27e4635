/*
 * pubsub.c - the lock-lost channel: SUBSCRIBE and its kin, and the
 * message each lost hold becomes.
 *
 * There is one channel per client-id, rlockd:lost:<client-id>, and a
 * connection may subscribe only to its own client-id's: knowing another
 * client's id must not tell what it holds, just as it gives no access to
 * its locks (docs/protocol.md, section 5). The subscription belongs to
 * the connection, which stays one of its session's connections.
 *
 * Every Redis client's pub/sub API reads the message, since it is the
 * standard ["message", channel, payload], and the payload is one JSON
 * object. In RESP3 the message and the confirmations are pushes (>), and
 * the subscribed connection goes on running every command, so the
 * connection that holds the locks hears of their loss itself. The
 * message is made once per loss, in both protocols, here, inside the
 * engine's loss callback; client_push only appends it to each
 * subscriber's output and leaves the sending (and closing a subscriber
 * over its output limit) to the client's ready list, so the engine's
 * stack runs nothing else.
 */
#include "front/pubsub.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/stats.h"
#include "client_id.h"
#include "reply.h"

#define PREFIX_LEN (sizeof(PUBSUB_LOST_PREFIX) - 1)

static struct {
    const struct config *cfg;
    struct buffer payload;    /* the JSON of the loss being told */
    struct buffer message[2]; /* its message in RESP2, then in RESP3 */
} pubsub;

static struct buffer *message_in(enum reply_protocol proto)
{
    return &pubsub.message[proto == REPLY_RESP3];
}

void pubsub_init(const struct config *cfg)
{
    pubsub.cfg = cfg;
    buffer_init(&pubsub.payload);
    buffer_init(&pubsub.message[0]);
    buffer_init(&pubsub.message[1]);
}

void pubsub_free(void)
{
    buffer_free(&pubsub.payload);
    buffer_free(&pubsub.message[0]);
    buffer_free(&pubsub.message[1]);
}

/* ---- the message ---------------------------------------------------------- */

/* The lock's name as its client named it: the engine's is the Redis key,
 * [lock] name_prefix included. */
static void client_lock_name(const struct lock_loss *loss, const char **name,
                             size_t *len)
{
    size_t prefix = strlen(pubsub.cfg->name_prefix);

    *name = loss->name;
    *len = loss->name_len;
    if (prefix <= *len && memcmp(*name, pubsub.cfg->name_prefix, prefix) == 0) {
        *name += prefix;
        *len -= prefix;
    }
}

/* {"name", "kind", "owner", "thread_id", "reason"}, in that order. */
static int write_payload(struct buffer *b, const struct lock_loss *loss)
{
    char digits[24];
    const char *name;
    size_t name_len;
    int err;

    client_lock_name(loss, &name, &name_len);
    b->len = 0;
    err = json_key(b, "name", true);
    err |= json_string(b, name, name_len);
    err |= json_key(b, "kind", false);
    err |= json_string(b, loss->kind->word, strlen(loss->kind->word));
    err |= json_key(b, "owner", false);
    err |= json_string(b, loss->owner, loss->owner_len);
    err |= json_key(b, "thread_id", false);
    err |= buffer_append(b, digits, format_uint64(digits, loss->thread_id));
    err |= json_key(b, "reason", false);
    err |= json_string(b, loss->reason, strlen(loss->reason));
    err |= buffer_append(b, "}", 1);
    return err ? -ENOMEM : 0;
}

/* ["message", "rlockd:lost:<client-id>", payload] */
static int write_message(enum reply_protocol proto,
                         const struct lock_loss *loss,
                         const struct buffer *payload)
{
    struct buffer *b = message_in(proto);
    int err;

    b->len = 0;
    err = reply_push_header(b, proto, 3);
    err |= reply_bulk(b, "message", 7);
    err |= buffer_append_resp_line(b, '$',
                                   (int64_t)(PREFIX_LEN + loss->client_id_len));
    err |= buffer_append(b, PUBSUB_LOST_PREFIX, PREFIX_LEN);
    err |= buffer_append(b, loss->client_id, loss->client_id_len);
    err |= buffer_append(b, "\r\n", 2);
    err |= reply_bulk(b, payload->data, payload->len);
    return err ? -ENOMEM : 0;
}

static void push_if_its_own(struct client *c, void *arg)
{
    const struct lock_loss *loss = arg;
    const struct buffer *message = message_in(c->protocol);

    if (lock_engine_session_id_len(c->session) != loss->client_id_len ||
        memcmp(lock_engine_session_id(c->session), loss->client_id,
               loss->client_id_len) != 0)
        return;
    stats.lost_events_sent++;
    client_push(c, message->data, message->len);
}

void pubsub_on_loss(const struct lock_loss *loss)
{
    if (stats.pubsub_clients == 0)
        return;
    if (write_payload(&pubsub.payload, loss) != 0 ||
        write_message(REPLY_RESP2, loss, &pubsub.payload) != 0 ||
        write_message(REPLY_RESP3, loss, &pubsub.payload) != 0) {
        log_error("out of memory: the loss of '%.*s' is not told to its "
                  "subscribers",
                  (int)loss->name_len, loss->name);
        return;
    }
    client_foreach_subscriber(push_if_its_own, (void *)loss);
}

/* ---- SUBSCRIBE and its kin -------------------------------------------------- */

/* Whether channel is the connection's own lock-lost channel. */
static bool own_channel(const struct client *c, const char *channel, size_t len)
{
    const struct session *s = c->session;

    size_t id_len = lock_engine_session_id_len(s);

    return len == PREFIX_LEN + id_len &&
           memcmp(channel, PUBSUB_LOST_PREFIX, PREFIX_LEN) == 0 &&
           memcmp(channel + PREFIX_LEN, lock_engine_session_id(s), id_len) == 0;
}

/* One confirmation: [kind, channel (NULL: nil), subscriptions left], a
 * push in RESP3 as Redis sends it. */
static int write_confirmation(struct buffer *out, enum reply_protocol proto,
                              const char *kind, const char *channel, size_t len,
                              int64_t count)
{
    int err = reply_push_header(out, proto, 3);

    err |= reply_bulk(out, kind, strlen(kind));
    err |= channel ? reply_bulk(out, channel, len) : reply_null(out, proto);
    err |= reply_integer(out, count);
    return err ? -ENOMEM : 0;
}

/* SUBSCRIBE of the connection's own channel only; all or nothing.
 * PSUBSCRIBE and SSUBSCRIBE have nothing to match. */
int command_subscribe(struct client *c, const struct command *cmd,
                      const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    int err = 0;

    if (out == NULL)
        return -ENOMEM;
    if (cmd->id != CMD_SUBSCRIBE)
        return reply_error(
            out, REPLY_ERR,
            "%s not supported: SUBSCRIBE rlockd:lost:<client-id> "
            "is rlockd's one channel",
            cmd->id == CMD_PSUBSCRIBE ? "PSUBSCRIBE" : "SSUBSCRIBE");
    for (size_t i = 0; i < a->list_count; i++)
        if (!own_channel(c, a->list[i], a->list_len[i]))
            return reply_error(
                out, REPLY_ERR,
                "a connection subscribes only to the lock-lost channel of "
                "its own client-id, " PUBSUB_LOST_PREFIX "%s (set the "
                "client-id with CLIENTID on this connection first)",
                lock_engine_session_id(c->session));
    client_set_subscribed(c, true);
    for (size_t i = 0; i < a->list_count && err == 0; i++)
        err = write_confirmation(out, c->protocol, "subscribe", a->list[i],
                                 a->list_len[i], 1);
    return err;
}

/*
 * UNSUBSCRIBE [channel...]: as Redis, each named channel is confirmed
 * (subscribed or not), and none named ends every subscription
 * (confirmed with a nil channel when there was none). PUNSUBSCRIBE and
 * SUNSUBSCRIBE have no pattern or shard channel to end, and say so in
 * the same form.
 */
int command_unsubscribe(struct client *c, const struct command *cmd,
                        const struct command_args *a)
{
    struct buffer *out = client_reply_buffer(c);
    bool channels = cmd->id == CMD_UNSUBSCRIBE;
    char own[PREFIX_LEN + CLIENT_ID_MAX_LEN + 1];
    int err = 0;

    if (out == NULL)
        return -ENOMEM;
    if (channels && a->list_count == 0 && client_subscribed(c)) {
        snprintf(own, sizeof(own), PUBSUB_LOST_PREFIX "%s",
                 lock_engine_session_id(c->session));
        client_set_subscribed(c, false);
        return write_confirmation(out, c->protocol, cmd->name, own, strlen(own),
                                  0);
    }
    for (size_t i = 0; i < a->list_count && err == 0; i++) {
        if (channels && own_channel(c, a->list[i], a->list_len[i]))
            client_set_subscribed(c, false);
        err = write_confirmation(out, c->protocol, cmd->name, a->list[i],
                                 a->list_len[i], client_subscribed(c) ? 1 : 0);
    }
    if (a->list_count == 0)
        err = write_confirmation(out, c->protocol, cmd->name, NULL, 0,
                                 client_subscribed(c) ? 1 : 0);
    return err;
}
