/*
 * session.h - clients as owners: a session is one client-id and the
 * number of connections that use it.
 *
 * Owns the client-id -> session map, and who may join a session. Each
 * session lists its holds, which the lock table links and unlinks.
 * Several connections that set the same client-id share one session, as
 * the threads of one program share a Redisson client; a live session is
 * joined only with the secret its first connection set (stored as its
 * SHA-256), so that knowing or guessing a client-id gives no access to
 * its locks. What happens to a session's locks when its last connection
 * goes is the lock engine's (lock_engine_leave); this file only keeps the
 * records.
 */
#ifndef RLOCKD_SESSION_H
#define RLOCKD_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/digest.h"
#include "base/list.h"
#include "client_id.h"
#include "engine/timer.h"

struct session {
    char id[CLIENT_ID_MAX_LEN + 1];
    size_t id_len;
    unsigned connections;
    struct list_node holds; /* struct hold.session_link */
    size_t hold_count;
    size_t waiting_count;     /* calls queued for a lock */
    struct list_node waiting; /* those calls (struct lock_call.owner_link) */
    bool has_secret;          /* false: no other connection may join; and
                             no record in Redis (session_store.h) */
    unsigned char secret[DIGEST_SIZE];
    bool resuming;             /* its record is being read */
    bool has_record;           /* may have a record in Redis */
    struct timer record_timer; /* renews the record with the watchdog */
};

void session_table_init(void);
void session_table_free(void);
/*
 * Counts one more connection in the session of client-id id, creating
 * it when none is live; a new session keeps secret (NULL: none) as the
 * proof its other connections must give. 0 with *out set; -EPERM when a
 * live session's secret was not given (whether it has none, another one,
 * or none was presented: the caller cannot tell); -ENOMEM. 1 when the
 * session is new.
 */
int session_join(const char *id, size_t len, const char *secret,
                 size_t secret_len, struct session **out);
/* Forgets a session whose last connection left and that holds nothing. */
void session_free(struct session *s);
/* Calls fn for every live session; fn must not free one. */
void session_table_foreach(void (*fn)(struct session *s, void *arg), void *arg);

#endif
