/*
 * request.c - the incremental request parser.
 *
 * Owns the argument arena and the decision of what a well-formed request
 * is. Sizes announced by a client ("*N", "$N") are checked against the
 * limits before any memory is reserved for them. Bulk payloads are copied
 * into the arena as they arrive, so the caller can drop them at once; an
 * inline line stays in the caller's buffer until its LF arrives, and is
 * searched only once thanks to p->scanned. It never touches sockets.
 */
#include "request.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum parse_state {
    PARSE_REQUEST_START, /* at the first byte of a request */
    PARSE_INLINE,        /* inside an inline line without its LF yet */
    PARSE_BULK_HEADER,   /* expecting "$N\r\n" */
    PARSE_BULK_DATA,     /* inside a bulk payload or its CRLF */
    PARSE_FAILED,        /* a protocol error was reported */
};

/* Digits in a header number: more could overflow, and no limit needs
 * them. */
#define HEADER_NUMBER_DIGITS 18

static const char error_nomem[] = "out of memory";

void request_parser_init(struct request_parser *p,
                         const struct request_limits *limits)
{
    *p = (struct request_parser){
        .limits = *limits,
        .state = PARSE_REQUEST_START,
        .bulk_len = -1,
    };
    buffer_init(&p->arena);
}

void request_parser_free(struct request_parser *p)
{
    buffer_free(&p->arena);
    free(p->arg_offsets);
    free(p->argv);
    free(p->argv_len);
}

static enum request_status fail(struct request_parser *p, const char *error)
{
    p->error = error;
    p->state = PARSE_FAILED;
    return REQUEST_ERROR;
}

static enum request_status fail_too_many_args(struct request_parser *p)
{
    snprintf(p->error_text, sizeof p->error_text,
             "Protocol error: too many arguments (limit %zu)",
             p->limits.max_args);
    return fail(p, p->error_text);
}

static enum request_status fail_expected_dollar(struct request_parser *p,
                                                char got)
{
    /* the byte is echoed back: make sure it is readable and harmless */
    if (got >= 0x20 && got < 0x7f)
        snprintf(p->error_text, sizeof p->error_text,
                 "Protocol error: expected '$', got '%c'", got);
    else
        snprintf(p->error_text, sizeof p->error_text,
                 "Protocol error: expected '$', got '\\x%02x'",
                 (unsigned char)got);
    return fail(p, p->error_text);
}

/* Grows the three per-argument arrays to hold at least n arguments. */
static int reserve_arg_slots(struct request_parser *p, size_t n)
{
    if (n <= p->args_cap)
        return 0;
    /* n never exceeds max_args, so neither does cap */
    size_t cap = p->args_cap * 2 > n ? p->args_cap * 2 : n;
    if (cap > p->limits.max_args)
        cap = p->limits.max_args;

    /* keep whatever succeeded: the old size is still valid in each */
    size_t *offsets = realloc(p->arg_offsets, cap * sizeof *offsets);
    if (offsets != NULL)
        p->arg_offsets = offsets;
    size_t *lens = realloc(p->argv_len, cap * sizeof *lens);
    if (lens != NULL)
        p->argv_len = lens;
    char **argv = realloc(p->argv, cap * sizeof *argv);
    if (argv != NULL)
        p->argv = argv;
    if (offsets == NULL || lens == NULL || argv == NULL)
        return -ENOMEM;
    p->args_cap = cap;
    return 0;
}

/* The arena no longer grows: argv can point into it now. */
static enum request_status request_ready(struct request_parser *p)
{
    for (size_t i = 0; i < p->argc; i++)
        p->argv[i] = p->arena.data + p->arg_offsets[i];
    p->state = PARSE_REQUEST_START;
    return REQUEST_READY;
}

/* A signed decimal of at most HEADER_NUMBER_DIGITS digits. */
static int parse_header_number(const char *s, size_t len, long long *value)
{
    bool negative = len > 0 && s[0] == '-';
    size_t i = negative ? 1 : 0;
    if (len == i || len - i > HEADER_NUMBER_DIGITS)
        return -EINVAL;
    long long v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    *value = negative ? -v : v;
    return 0;
}

/*
 * Reads the number of the "*N\r\n" or "$N\r\n" line at data[0] and sets
 * *used to the line's length. -EAGAIN when the line is not complete yet,
 * -EINVAL when it is malformed or too long.
 */
static int read_header_line(const char *data, size_t len, long long *value,
                            size_t *used)
{
    size_t limit =
        len < REQUEST_HEADER_LINE_MAX ? len : REQUEST_HEADER_LINE_MAX;
    const char *lf = memchr(data, '\n', limit);
    if (lf == NULL)
        return len < REQUEST_HEADER_LINE_MAX ? -EAGAIN : -EINVAL;
    size_t line_len = (size_t)(lf - data);
    if (line_len < 2 || data[line_len - 1] != '\r')
        return -EINVAL;
    int err = parse_header_number(data + 1, line_len - 2, value);
    if (err != 0)
        return err;
    *used = line_len + 1;
    return 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
           c == '\f';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The byte "\c" stands for inside double quotes, as in sdssplitargs. */
static char unescape_char(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    case 'b':
        return '\b';
    case 'a':
        return '\a';
    default:
        return c;
    }
}

/*
 * Decodes the character at s[0] inside `quote` quotes (left bytes remain
 * on the line) into *c; returns how many bytes it took.
 */
static size_t quoted_char(char quote, const char *s, size_t left, char *c)
{
    *c = s[0];
    if (s[0] != '\\' || left < 2)
        return 1;
    if (quote == '\'') {
        if (s[1] != '\'')
            return 1;
        *c = '\'';
        return 2;
    }
    if (s[1] == 'x' && left >= 4 && hex_value(s[2]) >= 0 &&
        hex_value(s[3]) >= 0) {
        *c = (char)(hex_value(s[2]) * 16 + hex_value(s[3]));
        return 4;
    }
    *c = unescape_char(s[1]);
    return 2;
}

/*
 * Decodes the word at line[*pos] into out, which has room for at least
 * the word's raw length, as sdssplitargs does: a quote anywhere opens a
 * quoted part, and its closing quote must end the word. Advances *pos
 * past the word. -EINVAL on unbalanced quotes.
 */
static int read_word(const char *line, size_t len, size_t *pos, char *out,
                     size_t *out_len)
{
    size_t i = *pos, n = 0;
    char quote = 0;
    while (i < len) {
        char c = line[i];
        if (quote == 0) {
            if (is_space(c))
                break;
            if (c == '"' || c == '\'')
                quote = c;
            else
                out[n++] = c;
            i++;
        } else if (c == quote) {
            if (i + 1 < len && !is_space(line[i + 1]))
                return -EINVAL;
            quote = 0;
            i++;
            break;
        } else {
            i += quoted_char(quote, line + i, len - i, &out[n++]);
        }
    }
    if (quote != 0)
        return -EINVAL;
    *pos = i;
    *out_len = n;
    return 0;
}

/* Splits a complete inline line (without its LF) into the arguments. */
static enum request_status split_inline(struct request_parser *p,
                                        const char *line, size_t len)
{
    /* Decoding never lengthens a word, and words are separated by at
     * least one space, which pays for each word's NUL: len + 1 bytes
     * always suffice, so the arena is not touched again below. */
    if (buffer_reserve(&p->arena, len + 1) != 0)
        return fail(p, error_nomem);
    size_t pos = 0;
    for (;;) {
        while (pos < len && is_space(line[pos]))
            pos++;
        if (pos == len)
            break;
        if (p->argc == p->limits.max_args)
            return fail_too_many_args(p);
        if (reserve_arg_slots(p, p->argc + 1) != 0)
            return fail(p, error_nomem);
        char *out = p->arena.data + p->arena.len;
        size_t word_len;
        if (read_word(line, len, &pos, out, &word_len) != 0)
            return fail(p, "Protocol error: unbalanced quotes in request");
        out[word_len] = '\0';
        p->arg_offsets[p->argc] = p->arena.len;
        p->argv_len[p->argc] = word_len;
        p->arena.len += word_len + 1;
        p->argc++;
    }
    /* a blank line is no request: skip it, as Redis does */
    return p->argc > 0 ? request_ready(p) : REQUEST_INCOMPLETE;
}

static enum request_status parse_inline(struct request_parser *p,
                                        const char *data, size_t len,
                                        size_t *used)
{
    size_t max = p->limits.max_request_bytes;
    size_t limit = len <= max ? len : max + 1;
    assert(p->scanned <= limit);
    const char *lf = memchr(data + p->scanned, '\n', limit - p->scanned);
    if (lf == NULL) {
        if (len > max)
            return fail(p, "Protocol error: request too large");
        p->scanned = len;
        p->state = PARSE_INLINE;
        return REQUEST_INCOMPLETE;
    }
    size_t line_len = (size_t)(lf - data);
    *used = line_len + 1;
    p->scanned = 0;
    p->state = PARSE_REQUEST_START;
    return split_inline(p, data, line_len);
}

static enum request_status parse_request_start(struct request_parser *p,
                                               const char *data, size_t len,
                                               size_t *used)
{
    p->argc = 0;
    p->request_bytes = 0;
    p->scanned = 0;
    buffer_reset(&p->arena);
    if (data[0] != '*')
        return parse_inline(p, data, len, used);

    long long count;
    int err = read_header_line(data, len, &count, used);
    if (err == -EAGAIN)
        return REQUEST_INCOMPLETE;
    if (err != 0 || count < -1)
        return fail(p, "Protocol error: invalid multibulk length");
    /* *0 and *-1 carry no command: skip them, as Redis does */
    if (count <= 0)
        return REQUEST_INCOMPLETE;
    if ((unsigned long long)count > p->limits.max_args)
        return fail_too_many_args(p);
    if (reserve_arg_slots(p, (size_t)count) != 0)
        return fail(p, error_nomem);
    p->multibulk_left = count;
    p->state = PARSE_BULK_HEADER;
    return REQUEST_INCOMPLETE;
}

static enum request_status parse_bulk_header(struct request_parser *p,
                                             const char *data, size_t len,
                                             size_t *used)
{
    if (data[0] != '$')
        return fail_expected_dollar(p, data[0]);
    long long bulk_len;
    int err = read_header_line(data, len, &bulk_len, used);
    if (err == -EAGAIN)
        return REQUEST_INCOMPLETE;
    if (err != 0 || bulk_len < 0)
        return fail(p, "Protocol error: invalid bulk length");
    if ((unsigned long long)bulk_len >
        p->limits.max_request_bytes - p->request_bytes)
        return fail(p, "Protocol error: request too large");
    /* the payload and its NUL: bulk data below never reallocates */
    if (buffer_reserve(&p->arena, (size_t)bulk_len + 1) != 0)
        return fail(p, error_nomem);
    p->request_bytes += (size_t)bulk_len;
    p->arg_offsets[p->argc] = p->arena.len;
    p->bulk_len = bulk_len;
    p->bulk_read = 0;
    p->state = PARSE_BULK_DATA;
    return REQUEST_INCOMPLETE;
}

/* Copies payload bytes into the arena, then checks the CRLF after them. */
static enum request_status parse_bulk_data(struct request_parser *p,
                                           const char *data, size_t len,
                                           size_t *used)
{
    size_t bulk_len = (size_t)p->bulk_len;
    size_t i = 0;
    if (p->bulk_read < bulk_len) {
        i = bulk_len - p->bulk_read < len ? bulk_len - p->bulk_read : len;
        buffer_append(&p->arena, data, i);
        p->bulk_read += i;
    }
    for (; i < len && p->bulk_read < bulk_len + 2; i++, p->bulk_read++) {
        if (data[i] != "\r\n"[p->bulk_read - bulk_len])
            return fail(p, "Protocol error: expected CRLF after bulk data");
    }
    *used = i;
    if (p->bulk_read < bulk_len + 2)
        return REQUEST_INCOMPLETE;

    p->arena.data[p->arena.len++] = '\0';
    p->argv_len[p->argc++] = bulk_len;
    p->bulk_len = -1;
    if (--p->multibulk_left > 0) {
        p->state = PARSE_BULK_HEADER;
        return REQUEST_INCOMPLETE;
    }
    return request_ready(p);
}

/* One step from the current state; *used is left 0 when it needs more. */
static enum request_status
parse_step(struct request_parser *p, const char *data, size_t len, size_t *used)
{
    switch ((enum parse_state)p->state) {
    case PARSE_REQUEST_START:
        return parse_request_start(p, data, len, used);
    case PARSE_INLINE:
        return parse_inline(p, data, len, used);
    case PARSE_BULK_HEADER:
        return parse_bulk_header(p, data, len, used);
    case PARSE_BULK_DATA:
        return parse_bulk_data(p, data, len, used);
    case PARSE_FAILED:
        break;
    }
    return REQUEST_ERROR;
}

enum request_status request_parser_feed(struct request_parser *p,
                                        const char *data, size_t len,
                                        size_t *consumed)
{
    enum request_status status =
        p->state == PARSE_FAILED ? REQUEST_ERROR : REQUEST_INCOMPLETE;
    size_t pos = 0;
    while (status == REQUEST_INCOMPLETE && pos < len) {
        size_t used = 0;
        status = parse_step(p, data + pos, len - pos, &used);
        if (used == 0)
            break;
        pos += used;
    }
    *consumed = pos;
    return status;
}

bool request_parser_started(const struct request_parser *p)
{
    return p->state != PARSE_REQUEST_START;
}

void request_parser_trim(struct request_parser *p)
{
    if (p->state == PARSE_REQUEST_START && p->arena.cap > REQUEST_ARENA_KEEP)
        buffer_free(&p->arena);
}
