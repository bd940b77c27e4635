/*
 * reply.h - the reply writer: every byte rlockd sends to a client is
 * encoded here, in the connection's protocol, RESP2 or RESP3.
 *
 * Most types are the same in both. Those RESP3 adds are written by the
 * calls that take an enum reply_protocol, each falling back to what
 * Redis sends a RESP2 client in their place: null (_ or $-1), a map
 * (%n, or a flat array of 2n), a set (~n or *n), a push (>n or *n) and
 * a verbatim string (=, or a bulk string).
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
    REPLY_DEADLOCK,    /* the wait would close a cycle of owners waiting for
                          each other; the text names the cycle */
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
 * Turns each CR and LF in text[0..len) into a space. A line break inside
 * a simple string or an error (a client's own bytes echoed back, say)
 * would end the reply early and desynchronise the stream; Redis turns
 * them into spaces too.
 */
void reply_one_line(char *text, size_t len);

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
int reply_array_header(struct buffer *out, size_t count);

/* HELLO's protocol version; a connection starts in RESP2. */
enum reply_protocol { REPLY_RESP2 = 2, REPLY_RESP3 = 3 };

int reply_null(struct buffer *out, enum reply_protocol proto);
/* A map of `pairs` keys and values, which follow: each key, then its
 * value. */
int reply_map_header(struct buffer *out, enum reply_protocol proto,
                     size_t pairs);
int reply_set_header(struct buffer *out, enum reply_protocol proto,
                     size_t count);
/* An out-of-band message (pub/sub), its `count` elements following. */
int reply_push_header(struct buffer *out, enum reply_protocol proto,
                      size_t count);
/* Text to show as it is (INFO, CLIENT LIST), format "txt". */
int reply_verbatim(struct buffer *out, enum reply_protocol proto,
                   const char *text, size_t len);
/* Redis's refusal of a HELLO version it does not speak: outside enum
 * reply_error, since no rlockd command fails with it, so that the codes
 * a client of rlockd must handle stay those. */
int reply_noproto(struct buffer *out);

#endif
