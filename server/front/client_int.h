/*
 * client_int.h - what the files of one client connection share.
 *
 * client.h is the front's interface; this header is private to
 * server/front/client*.c, as SQLite's vdbeInt.h is to vdbe*.c. A
 * connection's code is split by concept:
 *
 *   client.c          a connection's life: accept, read, close
 *   client_pipeline.c running its requests in order
 *   client_slots.c    replies in request order; the engine's answers
 *   client_output.c   sending replies; back-pressure; pushed messages
 *   client_limits.c   deadlines, the buffers cap and the penalty box
 *   client_ready.c    the ready list, drained once per loop turn
 *
 * Each file keeps its own state; the others reach it only through the
 * functions below, which carry their file's prefix (client_ for
 * client.c), as libuv's uv__ names do.
 */
#ifndef RLOCKD_CLIENT_INT_H
#define RLOCKD_CLIENT_INT_H

#include "front/client.h"

/* What every file reads; written only by client.c. */
struct client_shared {
    uv_loop_t *loop;
    const struct config *cfg;
    client_execute_fn *execute;
    struct list_node all; /* struct client.link */
    bool stopped;         /* shutting down: no new commands */
};
extern struct client_shared clients;

/* client.c */
/* Starts (again) reading the connection into c->in; libuv's result. */
int client_read_start(struct client *c);

/* client_pipeline.c */
/* Runs what the client sent, sends the replies, then updates what the
 * limits watch (reading paused, a request unfinished, memory held). */
void client_pipeline_process(struct client *c);

/* client_slots.c */
/* Moves the replies of answered slots at the head to the output. */
void client_slots_drain(struct client *c);
/* Counts what the last command wrote into its slot, if it has one. */
void client_slots_count_last(struct client *c);
/* Abandons the calls still in flight and frees every slot. */
void client_slots_abandon(struct client *c);
/* The acquire in flight (it runs alone), if any, may wait no more: it
 * ends with -ERR why if it would (lock_engine_stop_waiting). */
void client_slots_stop_waiting(struct client *c, const char *why);

/* client_output.c */
/* Replies not yet read by the client: buffered, being written, or
 * waiting in a slot for an earlier one. */
size_t client_output_unsent(const struct client *c);
/* Whether unsent replies reached the pause: no request runs, and the
 * connection is not read, until the client reads. */
bool client_output_paused(const struct client *c);
/* Back-pressure: stops reading a connection over the pause or past its
 * share of the turn, and starts it again once under. */
void client_output_update_reading(struct client *c);
/* Sends buffered replies; closes a connection that quit once they are
 * written, and one past max_output_buffer_bytes. */
void client_output_flush(struct client *c);
void client_output_init(void);

/* client_limits.c */
/* Whether the connection sits in the penalty box. */
bool client_limits_penalized(const struct client *c);
/* Lets a connection out of the penalty box without its delay. */
void client_limits_unpenalize(struct client *c);
/* Takes a closing connection off every deadline list. */
void client_limits_forget(struct client *c);
/* Whether the client has sent part of a request and not the rest. */
void client_limits_note_partial(struct client *c, bool partial);
/* Updates the client's share of client_buffers_bytes (what its buffers
 * hold in memory); over the cap, the ready pass closes the largest. */
void client_limits_account(struct client *c);
/* Closes the clients holding the most memory until under the cap. */
void client_limits_enforce_buffers_cap(void);
int client_limits_init(uv_loop_t *loop);
void client_limits_close_handles(void);

/* client_ready.c */
/* Puts the client on the ready list, once, for the next pass. */
void client_ready_mark(struct client *c);
/* Takes a closing connection off the ready list. */
void client_ready_forget(struct client *c);
/* Has the ready pass run this turn, even with nobody ready (to enforce
 * the buffers cap outside any client's stack). */
void client_ready_wake(void);
int client_ready_init(uv_loop_t *loop);
void client_ready_close_handles(void);

#endif
