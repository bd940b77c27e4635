/*
 * session.h - clients as owners: a session is one client-id and the
 * number of connections that use it.
 *
 * Owns the client-id -> session map. Each session lists its holds,
 * which the lock table links and unlinks.
 * Several connections that set the same client-id share one session, as
 * the threads of one program share a Redisson client. What happens to a
 * session's locks when its last connection goes is the lock engine's
 * (lock_engine_leave); this file only keeps the records.
 */
#ifndef RLOCKD_SESSION_H
#define RLOCKD_SESSION_H

#include <stddef.h>

#include "base/list.h"
#include "client_id.h"

struct session {
    char id[CLIENT_ID_MAX_LEN + 1];
    size_t id_len;
    unsigned connections;
    struct list_node holds; /* struct hold.session_link */
    size_t hold_count;
    size_t waiting_count; /* calls queued for a lock */
};

void session_table_init(void);
void session_table_free(void);
/* Finds or creates the session for id and counts one more connection;
 * NULL when out of memory. */
struct session *session_join(const char *id, size_t len);
/* Forgets a session whose last connection left and that holds nothing. */
void session_free(struct session *s);

#endif
