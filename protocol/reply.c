/*
 * reply.c - RESP2 and RESP3 encoding of every reply, and the one table
 * that maps error codes to their wire prefix.
 *
 * Each writer reserves all the bytes it needs before writing any, so a
 * reply is either appended whole or not at all: a client never sees half
 * a reply after an allocation failure.
 */
#include "reply.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const reply_error_names[] = {
    [REPLY_ERR] = "ERR",
    [REPLY_NOTOWNER] = "NOTOWNER",
    [REPLY_LOCKLOST] = "LOCKLOST",
    [REPLY_UNAVAILABLE] = "UNAVAILABLE",
    [REPLY_LIMIT] = "LIMIT",
    [REPLY_SHUTDOWN] = "SHUTDOWN",
    [REPLY_NOAUTH] = "NOAUTH",
    [REPLY_NOPERM] = "NOPERM",
    [REPLY_WRONGTYPE] = "WRONGTYPE",
    [REPLY_NOREPLICAS] = "NOREPLICAS",
    [REPLY_DEADLOCK] = "DEADLOCK",
};

#define REPLY_ERROR_COUNT (sizeof reply_error_names / sizeof *reply_error_names)

const char *reply_error_code_name(enum reply_error code)
{
    assert((size_t)code < REPLY_ERROR_COUNT);
    return reply_error_names[code];
}

int reply_error_code_parse(const char *text, size_t len, enum reply_error *out)
{
    const char *space = memchr(text, ' ', len);
    size_t code_len = space != NULL ? (size_t)(space - text) : len;

    for (size_t i = 0; i < REPLY_ERROR_COUNT; i++) {
        if (strlen(reply_error_names[i]) == code_len &&
            memcmp(reply_error_names[i], text, code_len) == 0) {
            *out = (enum reply_error)i;
            return 0;
        }
    }
    return -EINVAL;
}

/*
 * Writes "<type><value>\r\n" and makes sure `payload` more bytes fit after
 * it, so the caller's appends that follow cannot fail.
 */
static int reply_line(struct buffer *out, char type, int64_t value,
                      size_t payload)
{
    int err = buffer_reserve(out, FORMAT_INT_MAX + 4 + payload);

    if (err != 0)
        return err;
    return buffer_append_resp_line(out, type, value);
}

void reply_one_line(char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\r' || text[i] == '\n')
            text[i] = ' ';
    }
}

int reply_simple(struct buffer *out, const char *text)
{
    size_t len = strlen(text);
    int err = buffer_reserve(out, 1 + len + 2);
    if (err != 0)
        return err;
    buffer_append(out, "+", 1);
    buffer_append(out, text, len);
    reply_one_line(out->data + out->len - len, len);
    return buffer_append(out, "\r\n", 2);
}

int reply_error(struct buffer *out, enum reply_error code, const char *fmt, ...)
{
    const char *name = reply_error_code_name(code);
    size_t name_len = strlen(name);
    va_list ap;

    va_start(ap, fmt);
    int text_len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (text_len < 0)
        return -EINVAL;
    /* "-" name " " text "\r\n", plus the NUL vsnprintf always writes */
    int err = buffer_reserve(out, 1 + name_len + 1 + (size_t)text_len + 3);
    if (err != 0)
        return err;

    char *start = out->data + out->len;
    start[0] = '-';
    memcpy(start + 1, name, name_len);
    start[1 + name_len] = ' ';
    char *text = start + 1 + name_len + 1;
    va_start(ap, fmt);
    vsnprintf(text, (size_t)text_len + 1, fmt, ap);
    va_end(ap);
    reply_one_line(text, (size_t)text_len);
    memcpy(text + text_len, "\r\n", 2);
    out->len += 1 + name_len + 1 + (size_t)text_len + 2;
    return 0;
}

int reply_integer(struct buffer *out, int64_t value)
{
    return reply_line(out, ':', value, 0);
}

int reply_bulk(struct buffer *out, const char *data, size_t len)
{
    int err = reply_line(out, '$', (int64_t)len, len + 2);
    if (err != 0)
        return err;
    buffer_append(out, data, len);
    return buffer_append(out, "\r\n", 2);
}

int reply_null(struct buffer *out, enum reply_protocol proto)
{
    return proto == REPLY_RESP3 ? buffer_append(out, "_\r\n", 3)
                                : buffer_append(out, "$-1\r\n", 5);
}

int reply_map_header(struct buffer *out, enum reply_protocol proto,
                     size_t pairs)
{
    return proto == REPLY_RESP3 ? reply_line(out, '%', (int64_t)pairs, 0)
                                : reply_line(out, '*', 2 * (int64_t)pairs, 0);
}

int reply_set_header(struct buffer *out, enum reply_protocol proto,
                     size_t count)
{
    return reply_line(out, proto == REPLY_RESP3 ? '~' : '*', (int64_t)count, 0);
}

int reply_push_header(struct buffer *out, enum reply_protocol proto,
                      size_t count)
{
    return reply_line(out, proto == REPLY_RESP3 ? '>' : '*', (int64_t)count, 0);
}

/* RESP3's "=<len>\r\ntxt:<text>\r\n", the length counting "txt:". */
int reply_verbatim(struct buffer *out, enum reply_protocol proto,
                   const char *text, size_t len)
{
    int err;

    if (proto != REPLY_RESP3)
        return reply_bulk(out, text, len);
    err = reply_line(out, '=', (int64_t)(4 + len), 4 + len + 2);
    if (err != 0)
        return err;
    buffer_append(out, "txt:", 4);
    buffer_append(out, text, len);
    return buffer_append(out, "\r\n", 2);
}

int reply_noproto(struct buffer *out)
{
    static const char text[] = "-NOPROTO unsupported protocol version\r\n";

    return buffer_append(out, text, sizeof(text) - 1);
}

int reply_array_header(struct buffer *out, size_t count)
{
    return reply_line(out, '*', (int64_t)count, 0);
}
