/*
 * buffer.h - a growable byte buffer.
 *
 * Owns: one heap block holding bytes [0, len). Used for each client's
 * reply stream and by the request parser's argument arena. It never
 * frees or moves memory behind the caller's back except in the calls
 * documented to grow it, and buffer_drain.
 */
#ifndef RLOCKD_BUFFER_H
#define RLOCKD_BUFFER_H

#include <stddef.h>
#include <stdint.h>

struct buffer {
    char *data;
    size_t len;
    size_t cap;
};

void buffer_init(struct buffer *b);
void buffer_free(struct buffer *b);
/* Makes room for at least `extra` more bytes; 0 or -ENOMEM. */
int buffer_reserve(struct buffer *b, size_t extra);
int buffer_append(struct buffer *b, const void *data, size_t len);
/* Drops the first n bytes, moving the rest to the front. */
void buffer_consume(struct buffer *b, size_t n);
void buffer_reset(struct buffer *b);
/* Empties b and frees its block when it has grown past keep bytes: a
 * connection's burst (a renewal round, a large reply) must not pin its
 * high-water mark for the rest of the connection's life. */
void buffer_drain(struct buffer *b, size_t keep);

/*
 * Decimal text of a number into out (room for FORMAT_INT_MAX bytes, no
 * NUL written); returns its length. These replace snprintf on the hot
 * paths, where its format parsing was a measurable part of each command.
 */
#define FORMAT_INT_MAX 20
size_t format_uint64(char *out, uint64_t v);
size_t format_int64(char *out, int64_t v);
/* Appends "<prefix><v>\r\n", the header line of RESP types. */
int buffer_append_resp_line(struct buffer *b, char prefix, int64_t v);

#endif
