/*
 * request.h - the request parser: bytes from a client in, one argument
 * vector out.
 *
 * Understands both forms Redis accepts: RESP arrays of bulk strings
 * ("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n") and inline commands (a line of
 * words ended by CRLF or a bare LF, with "double" and 'single' quoting as
 * redis-cli and telnet users type them). It is incremental: feed it
 * whatever arrived, it consumes what it can and keeps its place, so a
 * request split over many reads is never rescanned from the start.
 *
 * Every size is checked against the limits before memory is reserved for
 * it: a client announcing "*1000000000" or "$1000000000" gets an error,
 * not an allocation. The parser never touches sockets.
 */
#ifndef RLOCKD_REQUEST_H
#define RLOCKD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "buffer.h"

struct request_limits {
    size_t max_request_bytes; /* one request: inline line or sum of bulks */
    size_t max_args;          /* arguments in one request */
};

/* "*N\r\n" and "$N\r\n" are short; a header line this long without its
 * LF is garbage, refused before it can fill the caller's input buffer. */
#define REQUEST_HEADER_LINE_MAX 32

enum request_status {
    REQUEST_INCOMPLETE = 0, /* need more bytes */
    REQUEST_READY = 1,      /* argc/argv hold one request */
    REQUEST_ERROR = -1,     /* protocol error: reply, then close */
};

struct request_parser {
    /* the parsed request, valid after REQUEST_READY until the next feed */
    size_t argc;
    char **argv; /* each NUL-terminated (arguments may hold NULs) */
    size_t *argv_len;
    const char *error; /* after REQUEST_ERROR, valid until freed */

    /* private parsing state */
    struct request_limits limits;
    struct buffer arena; /* argument bytes */
    size_t *arg_offsets; /* start of each argument in the arena */
    size_t args_cap;
    int state;
    long long multibulk_left;
    long long bulk_len; /* -1: not inside a bulk */
    size_t bulk_read;
    size_t request_bytes;
    size_t scanned;      /* inline: bytes already searched for '\n' */
    char error_text[80]; /* an error that names a limit or a byte */
};

void request_parser_init(struct request_parser *p,
                         const struct request_limits *limits);
void request_parser_free(struct request_parser *p);
/*
 * Parses from data[0, len). *consumed is set to the bytes the caller may
 * drop from its input; the bytes not consumed must start the data of the
 * next call. Call again with the rest after REQUEST_READY: one call
 * yields at most one request. Empty inline lines and empty arrays are
 * skipped silently, as Redis does. After REQUEST_ERROR the parser only
 * repeats the error.
 */
enum request_status request_parser_feed(struct request_parser *p,
                                        const char *data, size_t len,
                                        size_t *consumed);
/* Whether the parser holds part of a request (after REQUEST_INCOMPLETE:
 * the client has started one and not finished it). */
bool request_parser_started(const struct request_parser *p);
/* Between requests, gives back an argument arena that a large request
 * grew past REQUEST_ARENA_KEEP, so that an idle connection does not keep
 * its largest request's size. argv is invalid afterwards. */
#define REQUEST_ARENA_KEEP 4096
void request_parser_trim(struct request_parser *p);

#endif
