/*
 * buffer.c - the growable byte buffer.
 *
 * Owns the growth policy: capacity doubles, so appending n bytes one at a
 * time costs O(n) copies in total. Only buffer_reserve allocates; a failed
 * reservation leaves the buffer exactly as it was.
 */
#include "buffer.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Small enough not to waste memory on idle clients, big enough that a
 * typical reply fits without a second allocation. */
#define BUFFER_MIN_CAP 64

void buffer_init(struct buffer *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buffer_free(struct buffer *b)
{
    free(b->data);
    buffer_init(b);
}

int buffer_reserve(struct buffer *b, size_t extra)
{
    if (extra <= b->cap - b->len)
        return 0;
    if (extra > SIZE_MAX - b->len)
        return -ENOMEM;
    size_t need = b->len + extra;
    size_t cap = b->cap < BUFFER_MIN_CAP ? BUFFER_MIN_CAP : b->cap;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *data = realloc(b->data, cap);
    if (data == NULL)
        return -ENOMEM;
    b->data = data;
    b->cap = cap;
    return 0;
}

int buffer_append(struct buffer *b, const void *data, size_t len)
{
    int err = buffer_reserve(b, len);
    if (err != 0)
        return err;
    /* memcpy from NULL is undefined even for 0 bytes */
    if (len > 0)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

void buffer_consume(struct buffer *b, size_t n)
{
    assert(n <= b->len);
    /* callers consume 0 bytes whenever a request is still incomplete:
     * that must not cost a move of everything buffered */
    if (n == 0)
        return;
    b->len -= n;
    memmove(b->data, b->data + n, b->len);
}

void buffer_reset(struct buffer *b)
{
    b->len = 0;
}

void buffer_drain(struct buffer *b, size_t keep)
{
    if (b->cap > keep)
        buffer_free(b);
    else
        buffer_reset(b);
}

size_t format_uint64(char *out, uint64_t v)
{
    char tmp[FORMAT_INT_MAX];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

size_t format_int64(char *out, int64_t v)
{
    if (v >= 0)
        return format_uint64(out, (uint64_t)v);
    out[0] = '-';
    /* -(v + 1) + 1 avoids overflowing on INT64_MIN */
    return 1 + format_uint64(out + 1, (uint64_t)(-(v + 1)) + 1);
}

int buffer_append_resp_line(struct buffer *b, char prefix, int64_t v)
{
    char line[FORMAT_INT_MAX + 4];
    size_t n = 0;

    line[n++] = prefix;
    n += format_int64(line + n, v);
    line[n++] = '\r';
    line[n++] = '\n';
    return buffer_append(b, line, n);
}
