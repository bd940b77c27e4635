/*
 * locks_view.h - the engine's view of locks, sessions and recent
 * events, written for people and tools: LOCKS in RESP, GET /locks,
 * GET /sessions and GET /events in JSON (docs/protocol.md, LOCKS).
 */
#ifndef RLOCKD_LOCKS_VIEW_H
#define RLOCKD_LOCKS_VIEW_H

#include <stddef.h>

#include "base/acl.h"
#include "base/config.h"
#include "buffer.h"
#include "engine/lock_engine.h"
#include "reply.h"

/* Which locks, and which page of them. */
struct locks_query {
    const char *match; /* a glob on the name as clients name it; NULL: all */
    size_t match_len;
    const struct acl_user *user; /* its names rules filter; NULL: none */
    size_t offset;
    size_t count; /* at most [server] locks_max_count */
};

void locks_view_init(const struct config *cfg);
/* The query's count: COUNT as given (0: the default, 100), or -ERANGE
 * past locks_max_count, with the error's text in err. */
int locks_view_count(int64_t asked, size_t *count, char *err, size_t size);
/* LOCKS' reply: an array of maps (RESP2: of flat field/value arrays). */
int locks_view_resp(struct buffer *out, enum reply_protocol proto,
                    const struct locks_query *q);
/* GET /locks: {"total": n, "offset": n, "count": n, "locks": [...]} */
int locks_view_json(struct buffer *out, const struct locks_query *q);
/* GET /sessions: {"total", "offset", "count", "sessions": [{"client-id",
 * "connections", "holds", "waiters", "resumable", "clients": [{"id",
 * "peer", "client-name", "heartbeat-ms", "heard-ms-ago"}]}]}, by
 * client-id. */
int locks_view_sessions_json(struct buffer *out, size_t offset, size_t count);
/* Keeps a lost hold among the recent events. */
void locks_view_note_loss(const struct lock_loss *loss);
/* GET /events: {"events": [{"seq", "time_ms", "kind", "text"}...]},
 * the newest first. */
int locks_view_events_json(struct buffer *out);

#endif
