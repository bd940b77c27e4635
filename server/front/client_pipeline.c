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
#include "front/client_int.h"

#include "base/stats.h"
#include "reply.h"

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
    if (c->closing || c->quitting)
        return;
    if (list_empty(&c->pending) && !c->parked && !c->yielded &&
        !client_limits_penalized(c) && (c->in.len == 0 || incomplete)) {
        client_quit(c);
        client_output_flush(c);
        return;
    }
    client_slots_stop_waiting(c, "cancelled: the client closed its sending "
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
