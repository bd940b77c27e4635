/*
 * reply.h - the reply writer: every byte rlockd sends to a client is
 * encoded here, as RESP2.
 *
 * Error replies use a small fixed vocabulary of codes, mapped to their
 * wire prefix in one table (reply_error_code_name, and
 * reply_error_code_parse for librlock, which reads them). Handlers never
 * spell "-ERR" themselves.
 */
#ifndef RLOCKD_REPLY_H
#define RLOCKD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "buffer.h"

enum reply_error {
    REPLY_ERR,         /* bad request: syntax, arity, value */
    REPLY_NOTOWNER,    /* UNLOCK by an owner that does not hold the lock */
    REPLY_LOCKLOST,    /* the owner held it through rlockd, Redis lost it */
    REPLY_UNAVAILABLE, /* Redis cannot be reached right now */
    REPLY_LIMIT,       /* a configured limit refuses the request */
    REPLY_SHUTDOWN,    /* the daemon is stopping */
    REPLY_NOAUTH,      /* AUTH is required and the connection sent none */
    REPLY_NOPERM,      /* the connection's user may not run this command, or
                          not on this lock name */
    REPLY_WRONGTYPE,   /* the key holds something that is not this lock */
    REPLY_NOREPLICAS,  /* no replica acknowledged the acquire (sync_replicas);
                          it was undone */
};

const char *reply_error_code_name(enum reply_error code);
/*
 * The other way, for a client reading an error reply: text[0..len) is the
 * reply's text after the '-', and its code is the first word (up to a
 * space or the end), matched exactly. 0 and *out set, or -EINVAL for a
 * code that is not in the table.
 */
int reply_error_code_parse(const char *text, size_t len, enum reply_error *out);

/*
 * Each returns 0 or -ENOMEM (reply_error also -EINVAL when fmt cannot be
 * formatted); on failure the buffer is left as it was. CR and LF in the
 * text of a simple string or an error are sent as spaces.
 */
int reply_simple(struct buffer *out, const char *text);
int reply_error(struct buffer *out, enum reply_error code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int reply_integer(struct buffer *out, int64_t value);
int reply_bulk(struct buffer *out, const char *data, size_t len);
int reply_null(struct buffer *out);
/* Redis's refusal of HELLO 3, which clients know by its code (they fall
 * back to RESP2): outside enum reply_error, since no rlockd command fails
 * with it, so that the codes a client of rlockd must handle stay those. */
int reply_noproto(struct buffer *out);
int reply_array_header(struct buffer *out, size_t count);

#endif
