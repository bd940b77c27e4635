/*
 * session.h - clients as owners: a session is one client-id and the
 * connections that use it.
 *
 * Owns the client-id -> session map and each session's list of holds.
 * Several connections that set the same client-id share one session, as
 * the threads of one program share a Redisson client. When the last
 * connection goes the session ends, and its locks are released at once
 * (on_disconnect = release) or left to expire by TTL (expire).
 */
#ifndef RLOCKD_SESSION_H
#define RLOCKD_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "command.h"
#include "base/config.h"
#include "base/list.h"

struct hold;

struct session {
    char id[CLIENT_ID_MAX_LEN + 1];
    size_t id_len;
    unsigned connections;
    struct list_node holds; /* struct hold.session_link */
    size_t hold_count;
};

void session_init(const struct config *cfg);
void session_free_all(void);
/* Joins (creating if needed) the session for id; NULL when out of memory. */
struct session *session_join(const char *id, size_t len);
/* A connection leaves; the last one ends the session. */
void session_leave(struct session *s);
/* Makes a random UUID v4 client-id; out must hold 37 bytes. */
void session_random_id(char out[37]);
size_t session_count(void);

void session_add_hold(struct session *s, struct hold *h);
void session_remove_hold(struct session *s, struct hold *h);

#endif
