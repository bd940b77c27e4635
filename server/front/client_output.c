/*
 * client_output.c - sending a connection's replies, and back-pressure.
 *
 * Owns the output buffer and the writes in flight: replies go out with
 * uv_try_write when the socket takes them, and through uv_write, in
 * order, when it does not. Unsent replies (buffered, being written, or
 * waiting in a slot) past a pause stop the connection's reading and its
 * requests until the client reads; past max_output_buffer_bytes they
 * close it. Also the subscribers list and the messages pushed to them,
 * under the same limits.
 *
 * It never parses or runs a request: once the output drains under the
 * pause, the pipeline takes the client back.
 */
#include "front/client_int.h"

#include <stdlib.h>

#include "base/log.h"
#include "base/stats.h"
#include "front/client_tls.h"

/* Unsent replies past which a connection's requests wait for it to read:
 * a few socket buffers' worth, far below max_output_buffer_bytes, so that
 * pipelined requests cannot turn a little input into much output. */
#define OUTPUT_PAUSE 65536
/* An emptied output buffer larger than this is given back: a client that
 * once had a large reply does not keep its size while idle. */
#define IDLE_OUTPUT_KEEP 4096

struct client_write {
    uv_write_t req;
    struct client *client;
    struct buffer data;
};

static struct {
    struct list_node subscribers; /* struct client.subscriber_link */
} output;

/* Replies not yet read by the client: buffered, being written, or
 * waiting in a slot for an earlier one. */
size_t client_output_unsent(const struct client *c)
{
    return c->out.len + c->writing + c->slot_bytes;
}

static size_t output_pause(void)
{
    size_t hard = (size_t)clients.cfg->max_output_buffer_bytes;

    return hard / 2 < OUTPUT_PAUSE ? hard / 2 : OUTPUT_PAUSE;
}

bool client_output_paused(const struct client *c)
{
    return client_output_unsent(c) >= output_pause();
}

/* Back-pressure: a connection with too much unsent output is not read
 * (the kernel's buffers then slow the client down), as it runs nothing
 * (can_run) until the client has read; nor is one that used its share of
 * the turn, until its next. */
void client_output_update_reading(struct client *c)
{
    bool over = client_output_paused(c) || c->yielded;

    if (over == c->read_paused || c->quitting || c->closing || c->half_closed)
        return;
    c->read_paused = over;
    if (over)
        uv_read_stop(&c->io.stream);
    else
        client_read_start(c);
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
    client_output_flush(c);
    if ((c->read_paused || c->half_closed) && !client_output_paused(c))
        client_pipeline_process(c); /* runs what waited, and reads again */
    else
        client_limits_account(c);
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
void client_output_flush(struct client *c)
{
    char label[CLIENT_LABEL_MAX];
    struct client_write *w;
    uv_buf_t buf;
    int err;

    if (c->closing || client_limits_penalized(c))
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
        buffer_drain(&c->out, IDLE_OUTPUT_KEEP);
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

/* ---- subscribers and pushed messages (pub/sub) --------------------------- */

void client_set_subscribed(struct client *c, bool subscribed)
{
    if (subscribed == list_linked(&c->subscriber_link))
        return;
    if (subscribed) {
        list_push_tail(&output.subscribers, &c->subscriber_link);
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

    list_for_each_safe (pos, tmp, &output.subscribers)
        fn(list_entry(pos, struct client, subscriber_link), arg);
}

void client_push(struct client *c, const char *data, size_t len)
{
    char label[CLIENT_LABEL_MAX];

    if (c->closing || c->doomed != NULL)
        return;
    if (client_output_unsent(c) + len >
        (size_t)clients.cfg->max_output_buffer_bytes) {
        log_warn("%s: a subscriber over max_output_buffer_bytes (not reading "
                 "its messages); closing it",
                 client_label(c, label, sizeof(label)));
        c->doomed = "output limit";
    } else if (buffer_append(&c->out, data, len) != 0) {
        c->doomed = "out of memory";
    }
    client_ready_mark(c);
}

void client_output_init(void)
{
    list_init(&output.subscribers);
}
