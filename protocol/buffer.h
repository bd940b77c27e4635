/*
 * buffer.h - a growable byte buffer.
 *
 * Owns: one heap block holding bytes [0, len). Used for each client's
 * reply stream and by the request parser's argument arena. It never
 * frees or moves memory behind the caller's back except in the calls
 * documented to grow it.
 */
#ifndef RLOCKD_BUFFER_H
#define RLOCKD_BUFFER_H

#include <stddef.h>

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

#endif
