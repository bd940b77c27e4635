/*
 * client_limits.c - the limits a connection is held to over time, and
 * the penalty box.
 *
 * Owns three deadline lists, each served by one timer armed at its
 * head: requests left unfinished (request_timeout_ms; a TLS handshake
 * counts as one), heartbeats (CLIENT HEARTBEAT), and the penalty box.
 * Also the cap on the memory all client buffers hold
 * (max_client_buffers_bytes), as Redis's maxmemory-clients.
 *
 * Unfinished requests are kept in the order they started. Heartbeats
 * are kept by the time each is next looked at; a connection that was
 * heard from meanwhile goes back in order, so that a byte read costs a
 * store, not a timer update. The penalty box holds penalized
 * connections in one FIFO per delay: every connection in a FIFO waits
 * the same delay, so each FIFO is in due order, and one timer armed at
 * the earliest head serves them all.
 *
 * It must never arm a timer per connection: no heap, nothing armed
 * while a list is empty.
 */
#include "front/client_int.h"

#include "base/log.h"
#include "base/stats.h"
#include "front/client_tls.h"

/* The delay after the n-th refusal: 100 ms, doubling up to 3.2 s. A
 * legitimate client that mistyped loses little; a guesser gets a few
 * guesses a second per connection, then is closed. */
#define PENALTY_FIRST_MS 100
#define PENALTY_LEVELS 6
/* At most one log line about refusals this often, so that a flood of
 * guesses cannot flood the log; the next line counts those not logged. */
#define PENALTY_LOG_INTERVAL_MS 1000

static struct {
    uv_timer_t penalty_timer;
    struct list_node penalty_box[PENALTY_LEVELS]; /* one FIFO per delay */
    uint64_t penalty_log_next_ms; /* no refusal logged before then */
    uint64_t penalty_unlogged;    /* refusals not logged since the last */
    struct list_node partial;     /* struct client.partial_link, oldest first */
    uv_timer_t partial_timer;     /* at the oldest's request_timeout_ms */
    struct list_node heartbeats;  /* struct client.heartbeat_link, by due */
    uv_timer_t heartbeat_timer;   /* at the first one's due time */
} limits;

static void on_penalty_timer(uv_timer_t *timer);

/* ---- deadline timers ----------------------------------------------------- */

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
    struct list_node *node = list_first(&limits.partial);
    uint64_t due = NO_DEADLINE;

    if (node != NULL)
        due = list_entry(node, struct client, partial_link)->partial_since_ms +
              (uint64_t)clients.cfg->request_timeout_ms;
    deadline_timer_arm(&limits.partial_timer, on_partial_timer, due);
}

/* Closes the connections whose request has been unfinished too long, the
 * oldest first ("slowloris": a byte now and then holds a slot for ever). */
static void on_partial_timer(uv_timer_t *timer)
{
    uint64_t now = uv_now(clients.loop);
    struct list_node *node;
    char label[CLIENT_LABEL_MAX];

    (void)timer;
    while ((node = list_first(&limits.partial)) != NULL) {
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
    struct list_node *node = list_first(&limits.heartbeats);
    uint64_t due = NO_DEADLINE;

    if (node != NULL)
        due = list_entry(node, struct client, heartbeat_link)->heartbeat_due_ms;
    deadline_timer_arm(&limits.heartbeat_timer, on_heartbeat_timer, due);
}

/* Inserts by due time, scanning from the tail: clients mostly share one
 * interval, so a new due time is nearly always the latest. */
static void heartbeat_schedule(struct client *c, uint64_t due)
{
    struct list_node *pos = limits.heartbeats.prev;

    c->heartbeat_due_ms = due;
    while (pos != &limits.heartbeats &&
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
             lock_engine_session_id(session));
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
    while ((node = list_first(&limits.heartbeats)) != NULL) {
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
void client_limits_note_partial(struct client *c, bool partial)
{
    if (partial == list_linked(&c->partial_link))
        return;
    if (!partial) {
        list_remove(&c->partial_link);
    } else {
        c->partial_since_ms = uv_now(clients.loop);
        list_push_tail(&limits.partial, &c->partial_link);
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
void client_limits_enforce_buffers_cap(void)
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
                 largest->accounted, client_output_unsent(largest));
        client_close(largest, "client buffers cap");
    }
}

/* Updates the client's share of client_buffers_bytes (what its buffers
 * hold in memory); over the cap, the ready pass closes the largest. */
void client_limits_account(struct client *c)
{
    size_t held;

    if (c->closing)
        return;
    held = c->in.cap + c->out.cap + c->writing + c->slot_bytes +
           c->parser.arena.cap + c->tls_bytes;
    stats.client_buffers_bytes += held - c->accounted;
    c->accounted = held;
    if (over_buffers_cap())
        client_ready_wake();
}

/* ---- the penalty box ----------------------------------------------------- */

/* Arms the timer at the earliest due connection, or stops it. */
static void penalty_arm(void)
{
    uint64_t due = NO_DEADLINE;

    for (size_t i = 0; i < PENALTY_LEVELS; i++) {
        struct list_node *node = list_first(&limits.penalty_box[i]);

        if (node != NULL) {
            struct client *c = list_entry(node, struct client, penalty_link);
            if (c->penalty_due_ms < due)
                due = c->penalty_due_ms;
        }
    }
    deadline_timer_arm(&limits.penalty_timer, on_penalty_timer, due);
}

/* Lets out every connection whose delay is over: its replies go, its
 * next requests run (and may put it back in). */
static void on_penalty_timer(uv_timer_t *timer)
{
    uint64_t now = uv_now(clients.loop);

    (void)timer;
    for (size_t i = 0; i < PENALTY_LEVELS; i++) {
        struct list_node *node;

        while ((node = list_first(&limits.penalty_box[i])) != NULL) {
            struct client *c = list_entry(node, struct client, penalty_link);

            if (c->penalty_due_ms > now)
                break;
            list_remove(node);
            client_pipeline_process(c);
        }
    }
    penalty_arm();
}

/* One warning per PENALTY_LOG_INTERVAL_MS at most, counting the rest. */
static void log_refusal(const struct client *c, const char *what, bool closing,
                        uint64_t now)
{
    char label[CLIENT_LABEL_MAX], unlogged[96] = "";

    if (now < limits.penalty_log_next_ms) {
        limits.penalty_unlogged++;
        return;
    }
    if (limits.penalty_unlogged > 0)
        snprintf(unlogged, sizeof(unlogged),
                 " (%llu more refusals since the last such line)",
                 (unsigned long long)limits.penalty_unlogged);
    log_warn("%s: %s refused, %u of max_auth_failures %lld%s%s",
             client_label(c, label, sizeof(label)), what, c->penalties,
             (long long)clients.cfg->max_auth_failures,
             closing ? ", closing it" : "", unlogged);
    limits.penalty_unlogged = 0;
    limits.penalty_log_next_ms = now + PENALTY_LOG_INTERVAL_MS;
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
    list_push_tail(&limits.penalty_box[level], &c->penalty_link);
    penalty_arm();
}

bool client_limits_penalized(const struct client *c)
{
    return list_linked(&c->penalty_link);
}

void client_limits_unpenalize(struct client *c)
{
    if (client_limits_penalized(c))
        list_remove(&c->penalty_link);
}

void client_limits_forget(struct client *c)
{
    client_limits_unpenalize(c);
    if (list_linked(&c->partial_link))
        list_remove(&c->partial_link);
    if (list_linked(&c->heartbeat_link))
        list_remove(&c->heartbeat_link);
}

int client_limits_init(uv_loop_t *loop)
{
    int err;

    list_init(&limits.partial);
    list_init(&limits.heartbeats);
    for (size_t i = 0; i < PENALTY_LEVELS; i++)
        list_init(&limits.penalty_box[i]);
    if ((err = uv_timer_init(loop, &limits.partial_timer)) != 0 ||
        (err = uv_timer_init(loop, &limits.heartbeat_timer)) != 0)
        return err;
    return uv_timer_init(loop, &limits.penalty_timer);
}

void client_limits_close_handles(void)
{
    uv_timer_stop(&limits.penalty_timer);
    uv_close((uv_handle_t *)&limits.penalty_timer, NULL);
    uv_timer_stop(&limits.partial_timer);
    uv_close((uv_handle_t *)&limits.partial_timer, NULL);
    uv_timer_stop(&limits.heartbeat_timer);
    uv_close((uv_handle_t *)&limits.heartbeat_timer, NULL);
}
