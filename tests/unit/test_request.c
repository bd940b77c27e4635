/*
 * test_request.c - the request parser: RESP multibulk, inline lines and
 * their quoting, requests split at every byte boundary, pipelining, and
 * every limit (a huge "*N" or "$N" is refused before any allocation).
 *
 * Most tests drive the parser the way a server does (struct session):
 * bytes arrive in reads, the parser eats from the front of the input
 * buffer, and every request or error it reports is written to a log as
 * "len:bytes;" per argument and "\n" per request, so that one comparison
 * checks argument count, lengths and binary content at once.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "buffer.h"
#include "request.h"
#include "suites.h"

static const struct request_limits test_limits = {
    .max_request_bytes = 64,
    .max_args = 8,
};

struct session {
    struct request_parser parser;
    struct buffer in;
    struct buffer log;
    enum request_status last;
    size_t max_pending; /* most input bytes ever left unconsumed */
};

static void session_init(struct session *s, const struct request_limits *limits)
{
    request_parser_init(&s->parser, limits);
    buffer_init(&s->in);
    buffer_init(&s->log);
    s->last = REQUEST_INCOMPLETE;
    s->max_pending = 0;
}

static void session_free(struct session *s)
{
    request_parser_free(&s->parser);
    buffer_free(&s->in);
    buffer_free(&s->log);
}

/*
 * The helpers below run millions of times in the long-line test: they
 * check with a plain if, because every ck_assert records its location
 * through the runner's pipe, which would make them take minutes.
 */
static void log_request(struct buffer *log, const struct request_parser *p)
{
    if (p->argc == 0)
        ck_abort_msg("REQUEST_READY without arguments");
    for (size_t i = 0; i < p->argc; i++) {
        /* arguments are NUL-terminated even when they hold NULs */
        if (p->argv[i][p->argv_len[i]] != '\0')
            ck_abort_msg("argument %zu is not NUL-terminated", i);
        char len[32];
        int n = snprintf(len, sizeof len, "%zu:", p->argv_len[i]);
        buffer_append(log, len, (size_t)n);
        buffer_append(log, p->argv[i], p->argv_len[i]);
        buffer_append(log, ";", 1);
    }
    buffer_append(log, "\n", 1);
}

/* One read from the socket: runs every request it completes. */
static void session_receive(struct session *s, const char *data, size_t len)
{
    buffer_append(&s->in, data, len);
    while (s->last != REQUEST_ERROR) {
        size_t consumed;
        s->last =
            request_parser_feed(&s->parser, s->in.data, s->in.len, &consumed);
        if (consumed > s->in.len)
            ck_abort_msg("consumed %zu of %zu bytes", consumed, s->in.len);
        buffer_consume(&s->in, consumed);
        if (s->last == REQUEST_READY) {
            log_request(&s->log, &s->parser);
        } else if (s->last == REQUEST_ERROR) {
            buffer_append(&s->log, "error:", 6);
            buffer_append(&s->log, s->parser.error, strlen(s->parser.error));
            buffer_append(&s->log, "\n", 1);
        } else {
            break;
        }
    }
    if (s->in.len > s->max_pending)
        s->max_pending = s->in.len;
}

/* data arrives as a first read of `first` bytes, then reads of `chunk`. */
static void session_receive_in_reads(struct session *s, const char *data,
                                     size_t len, size_t first, size_t chunk)
{
    size_t n = first < len ? first : len;
    session_receive(s, data, n);
    for (size_t pos = n; pos < len; pos += n) {
        n = chunk < len - pos ? chunk : len - pos;
        session_receive(s, data + pos, n);
    }
}

static void assert_log(const struct session *s, const char *expected,
                       size_t expected_len, const char *what)
{
    const char *log = s->log.len > 0 ? s->log.data : "";
    ck_assert_msg(s->log.len == expected_len &&
                      memcmp(log, expected, expected_len) == 0,
                  "%s: log is '%.*s', expected '%.*s'", what, (int)s->log.len,
                  log, (int)expected_len, expected);
}

/* Parses data in one read, then at every split point, then in reads of
 * 1..9 bytes: the log must be `expected` every time. */
static void check_all_splits(const struct request_limits *limits,
                             const char *data, size_t len, const char *expected,
                             size_t expected_len)
{
    for (size_t first = 1; first <= len; first++) {
        struct session s;
        session_init(&s, limits);
        session_receive_in_reads(&s, data, len, first, len);
        assert_log(&s, expected, expected_len, "split");
        session_free(&s);
    }
    for (size_t chunk = 1; chunk < 10; chunk++) {
        struct session s;
        session_init(&s, limits);
        session_receive_in_reads(&s, data, len, chunk, chunk);
        assert_log(&s, expected, expected_len, "chunked");
        session_free(&s);
    }
}

/* For string literals, which may hold NULs. */
#define CHECK_ALL_SPLITS(limits, data, expected)                               \
    check_all_splits(limits, data, sizeof(data) - 1, expected,                 \
                     sizeof(expected) - 1)

static void parse_once(struct session *s, const struct request_limits *limits,
                       const char *data, size_t len)
{
    session_init(s, limits);
    session_receive(s, data, len);
}

#define ASSERT_PARSES(limits, data, expected)                                  \
    do {                                                                       \
        struct session s_;                                                     \
        parse_once(&s_, limits, data, sizeof(data) - 1);                       \
        assert_log(&s_, expected, sizeof(expected) - 1, data);                 \
        if (s_.last != REQUEST_ERROR)                                          \
            ck_assert_uint_eq(s_.in.len, 0);                                   \
        session_free(&s_);                                                     \
    } while (0)

/* ---- multibulk ------------------------------------------------------ */

START_TEST(multibulk_simple)
{
    ASSERT_PARSES(&test_limits, "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n",
                  "4:PING;2:hi;\n");
    ASSERT_PARSES(&test_limits, "*1\r\n$4\r\nQUIT\r\n", "4:QUIT;\n");
}
END_TEST

START_TEST(multibulk_binary_and_empty_bulks)
{
    ASSERT_PARSES(&test_limits,
                  "*3\r\n$5\r\na\0\r\nb\r\n$0\r\n\r\n$1\r\n\0\r\n",
                  "5:a\0\r\nb;0:;1:\0;\n");
    /* header-like bytes inside a payload are payload */
    ASSERT_PARSES(&test_limits, "*1\r\n$8\r\n*1\r\n$1\r\n\r\n",
                  "8:*1\r\n$1\r\n;\n");
}
END_TEST

START_TEST(multibulk_empty_arrays_skipped)
{
    ASSERT_PARSES(&test_limits, "*0\r\n*-1\r\n*0\r\n*1\r\n$4\r\nPING\r\n",
                  "4:PING;\n");
    /* nothing but empty arrays: no request, all input consumed */
    ASSERT_PARSES(&test_limits, "*0\r\n*-1\r\n", "");
    /* leading zeros and "-0" are numbers like any other */
    ASSERT_PARSES(&test_limits, "*-0\r\n*01\r\n$002\r\nok\r\n", "2:ok;\n");
}
END_TEST

START_TEST(multibulk_at_limits)
{
    /* max_args arguments and max_request_bytes payload bytes exactly */
    ASSERT_PARSES(&test_limits,
                  "*8\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"
                  "$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n",
                  "1:a;1:b;1:c;1:d;1:e;1:f;1:g;1:h;\n");
    ASSERT_PARSES(&test_limits,
                  "*2\r\n$32\r\n0123456789abcdef0123456789abcdef\r\n"
                  "$32\r\n0123456789abcdef0123456789abcdef\r\n",
                  "32:0123456789abcdef0123456789abcdef;"
                  "32:0123456789abcdef0123456789abcdef;\n");
    /* the byte limit is per request, not per connection */
    ASSERT_PARSES(&test_limits,
                  "*1\r\n$60\r\n012345678901234567890123456789"
                  "012345678901234567890123456789\r\n"
                  "*1\r\n$60\r\n012345678901234567890123456789"
                  "012345678901234567890123456789\r\n",
                  "60:012345678901234567890123456789"
                  "012345678901234567890123456789;\n"
                  "60:012345678901234567890123456789"
                  "012345678901234567890123456789;\n");
}
END_TEST

START_TEST(feed_consumes_one_request_per_call)
{
    static const char two[] = "*1\r\n$4\r\nPING\r\nPING x\r\n";
    struct request_parser p;
    request_parser_init(&p, &test_limits);
    size_t consumed;
    ck_assert_int_eq(request_parser_feed(&p, two, sizeof two - 1, &consumed),
                     REQUEST_READY);
    ck_assert_uint_eq(consumed, 14);
    ck_assert_uint_eq(p.argc, 1);
    ck_assert_str_eq(p.argv[0], "PING");
    ck_assert_int_eq(request_parser_feed(&p, two + 14, 8, &consumed),
                     REQUEST_READY);
    ck_assert_uint_eq(consumed, 8);
    ck_assert_uint_eq(p.argc, 2);
    ck_assert_str_eq(p.argv[1], "x");
    ck_assert_int_eq(request_parser_feed(&p, two + 22, 0, &consumed),
                     REQUEST_INCOMPLETE);
    ck_assert_uint_eq(consumed, 0);
    request_parser_free(&p);
}
END_TEST

START_TEST(bulk_payload_consumed_as_it_arrives)
{
    struct request_parser p;
    request_parser_init(&p, &test_limits);
    size_t consumed;
    /* a header line is only taken whole */
    ck_assert_int_eq(request_parser_feed(&p, "*1\r\n$1", 6, &consumed),
                     REQUEST_INCOMPLETE);
    ck_assert_uint_eq(consumed, 4);
    ck_assert_int_eq(request_parser_feed(&p, "$10\r\nabc", 8, &consumed),
                     REQUEST_INCOMPLETE);
    ck_assert_uint_eq(consumed, 8);
    ck_assert_int_eq(request_parser_feed(&p, "defghij\r", 8, &consumed),
                     REQUEST_INCOMPLETE);
    ck_assert_uint_eq(consumed, 8);
    ck_assert_int_eq(request_parser_feed(&p, "\n*1", 3, &consumed),
                     REQUEST_READY);
    ck_assert_uint_eq(consumed, 1);
    ck_assert_uint_eq(p.argc, 1);
    ck_assert_uint_eq(p.argv_len[0], 10);
    ck_assert_str_eq(p.argv[0], "abcdefghij");
    request_parser_free(&p);
}
END_TEST

START_TEST(bulk_bytes_never_pile_up_in_input)
{
    static const char req[] =
        "*2\r\n$4\r\nPING\r\n$60\r\n"
        "012345678901234567890123456789012345678901234567890123456789\r\n";
    struct session s;
    session_init(&s, &test_limits);
    session_receive_in_reads(&s, req, sizeof req - 1, 1, 1);
    assert_log(&s,
               "4:PING;60:0123456789012345678901234567890123456789"
               "01234567890123456789;\n",
               sizeof "4:PING;60:0123456789012345678901234567890123456789"
                      "01234567890123456789;\n" -
                   1,
               "one byte per read");
    /* only an unfinished header line ("$60\r") is ever left behind */
    ck_assert_uint_le(s.max_pending, 4);
    session_free(&s);
}
END_TEST

/* ---- inline ---------------------------------------------------------- */

START_TEST(inline_words)
{
    ASSERT_PARSES(&test_limits, "PING\r\n", "4:PING;\n");
    ASSERT_PARSES(&test_limits, "PING\n", "4:PING;\n");
    ASSERT_PARSES(&test_limits, "  lock \t a\v\f  1  \r\n",
                  "4:lock;1:a;1:1;\n");
    ASSERT_PARSES(&test_limits, "PING\r\r\n", "4:PING;\n");
    /* a bare CR is a space, not a line end */
    ASSERT_PARSES(&test_limits, "PING\rx\n", "4:PING;1:x;\n");
    /* inline arguments are bytes too */
    ASSERT_PARSES(&test_limits, "a\0b c\n", "3:a\0b;1:c;\n");
    ASSERT_PARSES(&test_limits, "\\x41 \\n\n", "4:\\x41;2:\\n;\n");
}
END_TEST

START_TEST(inline_empty_lines_skipped)
{
    ASSERT_PARSES(&test_limits, "\r\n\n \t \r\nPING\n\n", "4:PING;\n");
    ASSERT_PARSES(&test_limits, "\n", "");
    ASSERT_PARSES(&test_limits, "\r\n", "");
}
END_TEST

START_TEST(inline_double_quotes)
{
    ASSERT_PARSES(&test_limits, "\"hello world\" x\n", "11:hello world;1:x;\n");
    ASSERT_PARSES(&test_limits, "\"\\x41\\x7a\\x4\" \"\\xfF\\x00\"\n",
                  "4:Azx4;2:\xff\0;\n");
    ASSERT_PARSES(&test_limits, "\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"\n",
                  "8:\n\r\t\b\a\\\"q;\n");
    ASSERT_PARSES(&test_limits, "\"a'b\" \"\"\n", "3:a'b;0:;\n");
    /* a closing quote may be followed by any space or the line end */
    ASSERT_PARSES(&test_limits, "\"a\"\tb\n", "1:a;1:b;\n");
    ASSERT_PARSES(&test_limits, "\"abc\"\r\n", "3:abc;\n");
    ASSERT_PARSES(&test_limits, "\"abc\"\n", "3:abc;\n");
    /* a quote inside a word opens a quoted part, as in sdssplitargs */
    ASSERT_PARSES(&test_limits, "a\"b c\" d\n", "4:ab c;1:d;\n");
    ASSERT_PARSES(&test_limits, "x \"\\\"\"\n", "1:x;1:\";\n");
}
END_TEST

START_TEST(inline_single_quotes)
{
    ASSERT_PARSES(&test_limits, "'hello world'\n", "11:hello world;\n");
    ASSERT_PARSES(&test_limits, "'a\\'b' 'c\\nd'\n", "3:a'b;4:c\\nd;\n");
    /* only \' is special: other backslashes are kept */
    ASSERT_PARSES(&test_limits, "'a\\\\b' 'a\"b' ''\n",
                  "4:a\\\\b;3:a\"b;0:;\n");
    ASSERT_PARSES(&test_limits, "'\\x41'\n", "4:\\x41;\n");
}
END_TEST

START_TEST(inline_at_limits)
{
    const struct request_limits ten = {.max_request_bytes = 10, .max_args = 3};
    ASSERT_PARSES(&ten, "0123456789\n", "10:0123456789;\n");
    ASSERT_PARSES(&ten, "012345678\r\n", "9:012345678;\n");
    ASSERT_PARSES(&ten, "a b c\n", "1:a;1:b;1:c;\n");
    ASSERT_PARSES(&ten, "   a b c\n", "1:a;1:b;1:c;\n");

    /* a line may wait for its LF up to the limit */
    struct session s;
    parse_once(&s, &ten, "0123456789", 10);
    ck_assert_int_eq(s.last, REQUEST_INCOMPLETE);
    ck_assert_uint_eq(s.in.len, 10);
    session_receive(&s, "\n", 1);
    assert_log(&s, "10:0123456789;\n", 15, "LF in its own read");
    session_free(&s);
}
END_TEST

/* A long line trickling in is searched for its LF once, not once per
 * read: rescanning would cost ~5e11 byte compares here and time out. */
START_TEST(inline_line_scanned_once)
{
    enum { LINE = 1 << 20 };
    const struct request_limits big = {.max_request_bytes = LINE,
                                       .max_args = 2};
    struct session s;
    session_init(&s, &big);
    for (size_t i = 0; i < LINE; i++)
        session_receive(&s, "x", 1);
    ck_assert_int_eq(s.last, REQUEST_INCOMPLETE);
    session_receive(&s, "\n", 1);
    ck_assert_int_eq(s.last, REQUEST_INCOMPLETE);
    ck_assert_uint_eq(s.log.len, sizeof "1048576:" - 1 + LINE + 2);
    session_free(&s);
}
END_TEST

START_TEST(line_starting_with_star_is_multibulk)
{
    ASSERT_PARSES(&test_limits, "*1\n",
                  "error:Protocol error: invalid multibulk length\n");
    /* but not after a space */
    ASSERT_PARSES(&test_limits, " *1\n", "2:*1;\n");
}
END_TEST

/* ---- pipelining and splits ------------------------------------------- */

static const char corpus[] = "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n"
                             "PING \"x y\"\r\n"
                             "\n"
                             "*0\r\n"
                             "*3\r\n$4\r\nLOCK\r\n$3\r\na\0b\r\n$2\r\n\r\n\r\n"
                             "*-1\r\n"
                             "  trylock 'l k' 1 WAIT -1\n"
                             "*1\r\n$0\r\n\r\n"
                             "\r\n"
                             "QUIT\n";

static const char corpus_log[] = "4:PING;2:hi;\n"
                                 "4:PING;3:x y;\n"
                                 "4:LOCK;3:a\0b;2:\r\n;\n"
                                 "7:trylock;3:l k;1:1;4:WAIT;2:-1;\n"
                                 "0:;\n"
                                 "4:QUIT;\n";

START_TEST(pipelined_requests_in_one_read)
{
    ASSERT_PARSES(&test_limits, corpus, corpus_log);
}
END_TEST

START_TEST(requests_split_at_every_byte)
{
    CHECK_ALL_SPLITS(&test_limits, corpus, corpus_log);
}
END_TEST

START_TEST(many_pipelined_requests)
{
    static const char one[] = "*3\r\n$4\r\nLOCK\r\n$1\r\nk\r\n$1\r\n1\r\n"
                              "UNLOCK k 1\r\n";
    struct buffer many;
    buffer_init(&many);
    for (int i = 0; i < 1000; i++)
        buffer_append(&many, one, sizeof one - 1);
    struct session s;
    parse_once(&s, &test_limits, many.data, many.len);
    ck_assert_uint_eq(s.log.len, 1000 * (sizeof "4:LOCK;1:k;1:1;\n" - 1 +
                                         sizeof "6:UNLOCK;1:k;1:1;\n" - 1));
    ck_assert_uint_eq(s.in.len, 0);
    /* the arena is reused, not grown per request */
    ck_assert_uint_le(s.parser.arena.cap, 256);
    session_free(&s);
    buffer_free(&many);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

static const struct {
    const char *input;
    size_t len; /* 0: strlen(input) */
    const char *error;
} error_cases[] = {
    {"*-2\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*x\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*-\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*1x\r\n", 0, "Protocol error: invalid multibulk length"},
    {"* 1\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*+1\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*1\n", 0, "Protocol error: invalid multibulk length"},
    {"*1\rX\n", 0, "Protocol error: invalid multibulk length"},
    {"*1234567890123456789\r\n", 0, "Protocol error: invalid multibulk length"},
    {"*12345678901234567890123456789012", 0,
     "Protocol error: invalid multibulk length"},
    {"*9\r\n", 0, "Protocol error: too many arguments (limit 8)"},
    {"*1000000000\r\n", 0, "Protocol error: too many arguments (limit 8)"},
    {"*1\r\n$-1\r\n", 0, "Protocol error: invalid bulk length"},
    {"*1\r\n$x\r\n", 0, "Protocol error: invalid bulk length"},
    {"*1\r\n$\r\n", 0, "Protocol error: invalid bulk length"},
    {"*1\r\n$1\n", 0, "Protocol error: invalid bulk length"},
    {"*1\r\n$1234567890123456789012345678901", 0,
     "Protocol error: invalid bulk length"},
    {"*1\r\n$65\r\n", 0, "Protocol error: request too large"},
    {"*1\r\n$1000000000000\r\n", 0, "Protocol error: request too large"},
    {"*2\r\n$40\r\n0123456789012345678901234567890123456789\r\n$25\r\n", 0,
     "Protocol error: request too large"},
    {"*1\r\n:1\r\n", 0, "Protocol error: expected '$', got ':'"},
    {"*2\r\n$1\r\na\r\nPING\r\n", 0, "Protocol error: expected '$', got 'P'"},
    {"*1\r\n\x01", 0, "Protocol error: expected '$', got '\\x01'"},
    {"*1\r\n\r\n", 0, "Protocol error: expected '$', got '\\x0d'"},
    {"*1\r\n\0", 5, "Protocol error: expected '$', got '\\x00'"},
    {"*1\r\n$2\r\nabc\r\n", 0, "Protocol error: expected CRLF after bulk data"},
    {"*1\r\n$2\r\nab\n", 0, "Protocol error: expected CRLF after bulk data"},
    {"*1\r\n$2\r\nab\r\r", 0, "Protocol error: expected CRLF after bulk data"},
    {"01234567890123456789012345678901234567890123456789012345678901234", 0,
     "Protocol error: request too large"},
    {"01234567890123456789012345678901234567890123456789012345678901234\n", 0,
     "Protocol error: request too large"},
    {"a b c d e f g h i\n", 0, "Protocol error: too many arguments (limit 8)"},
    {"\"abc\n", 0, "Protocol error: unbalanced quotes in request"},
    {"'abc\n", 0, "Protocol error: unbalanced quotes in request"},
    {"\"abc\"def\n", 0, "Protocol error: unbalanced quotes in request"},
    {"'abc'def\n", 0, "Protocol error: unbalanced quotes in request"},
    {"\"a\"\"b\"\n", 0, "Protocol error: unbalanced quotes in request"},
    {"\"abc\\\"\n", 0, "Protocol error: unbalanced quotes in request"},
    {"'abc\\'\n", 0, "Protocol error: unbalanced quotes in request"},
    {"\"\\\n", 0, "Protocol error: unbalanced quotes in request"},
    {"PING \"x\n", 0, "Protocol error: unbalanced quotes in request"},
    /* an error ends the connection: nothing after it is parsed */
    {"\"\n*1\r\n$4\r\nPING\r\n", 0,
     "Protocol error: unbalanced quotes in request"},
};

START_TEST(error_cases_at_every_split)
{
    const char *input = error_cases[_i].input;
    size_t len = error_cases[_i].len ? error_cases[_i].len : strlen(input);
    char expected[128];
    int n = snprintf(expected, sizeof expected, "error:%s\n",
                     error_cases[_i].error);
    check_all_splits(&test_limits, input, len, expected, (size_t)n);
}
END_TEST

START_TEST(requests_before_an_error_are_served)
{
    ASSERT_PARSES(&test_limits, "PING\n*1\r\n$4\r\nPING\r\n*1\r\nx",
                  "4:PING;\n4:PING;\n"
                  "error:Protocol error: expected '$', got 'x'\n");
}
END_TEST

START_TEST(huge_sizes_refused_without_allocation)
{
    struct session s;
    parse_once(&s, &test_limits, "*1000000000\r\n", 13);
    ck_assert_int_eq(s.last, REQUEST_ERROR);
    ck_assert_uint_eq(s.parser.args_cap, 0);
    ck_assert_uint_eq(s.parser.arena.cap, 0);
    session_free(&s);

    static const char huge_bulk[] = "*1\r\n$999999999999999999\r\n";
    parse_once(&s, &test_limits, huge_bulk, sizeof huge_bulk - 1);
    ck_assert_int_eq(s.last, REQUEST_ERROR);
    ck_assert_str_eq(s.parser.error, "Protocol error: request too large");
    ck_assert_uint_eq(s.parser.args_cap, 1);
    ck_assert_uint_eq(s.parser.arena.cap, 0);
    session_free(&s);
}
END_TEST

START_TEST(error_is_sticky)
{
    struct request_parser p;
    request_parser_init(&p, &test_limits);
    size_t consumed;
    ck_assert_int_eq(request_parser_feed(&p, "*x\r\n", 4, &consumed),
                     REQUEST_ERROR);
    const char *error = p.error;
    ck_assert_int_eq(request_parser_feed(&p, "PING\n", 5, &consumed),
                     REQUEST_ERROR);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_int_eq(request_parser_feed(&p, "", 0, &consumed), REQUEST_ERROR);
    ck_assert_ptr_eq(p.error, error);
    request_parser_free(&p);
}
END_TEST

START_TEST(too_many_args_names_configured_limit)
{
    const struct request_limits big = {.max_request_bytes = 1 << 20,
                                       .max_args = 1000};
    struct session s;
    parse_once(&s, &big, "*1001\r\n", 7);
    ck_assert_str_eq(s.parser.error,
                     "Protocol error: too many arguments (limit 1000)");
    session_free(&s);
}
END_TEST

Suite *request_suite(void)
{
    Suite *s = suite_create("request");
    TCase *multibulk = tcase_create("multibulk");
    tcase_add_test(multibulk, multibulk_simple);
    tcase_add_test(multibulk, multibulk_binary_and_empty_bulks);
    tcase_add_test(multibulk, multibulk_empty_arrays_skipped);
    tcase_add_test(multibulk, multibulk_at_limits);
    tcase_add_test(multibulk, feed_consumes_one_request_per_call);
    tcase_add_test(multibulk, bulk_payload_consumed_as_it_arrives);
    tcase_add_test(multibulk, bulk_bytes_never_pile_up_in_input);
    suite_add_tcase(s, multibulk);

    TCase *inl = tcase_create("inline");
    tcase_add_test(inl, inline_words);
    tcase_add_test(inl, inline_empty_lines_skipped);
    tcase_add_test(inl, inline_double_quotes);
    tcase_add_test(inl, inline_single_quotes);
    tcase_add_test(inl, inline_at_limits);
    tcase_add_test(inl, inline_line_scanned_once);
    tcase_add_test(inl, line_starting_with_star_is_multibulk);
    suite_add_tcase(s, inl);

    TCase *stream = tcase_create("stream");
    tcase_add_test(stream, pipelined_requests_in_one_read);
    tcase_add_test(stream, requests_split_at_every_byte);
    tcase_add_test(stream, many_pipelined_requests);
    suite_add_tcase(s, stream);

    TCase *errors = tcase_create("errors");
    tcase_add_loop_test(errors, error_cases_at_every_split, 0,
                        (int)(sizeof error_cases / sizeof *error_cases));
    tcase_add_test(errors, requests_before_an_error_are_served);
    tcase_add_test(errors, huge_sizes_refused_without_allocation);
    tcase_add_test(errors, error_is_sticky);
    tcase_add_test(errors, too_many_args_names_configured_limit);
    suite_add_tcase(s, errors);
    return s;
}
