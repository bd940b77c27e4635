/*
 * test_reply.c - the reply writer's exact bytes on the wire, and the
 * growable buffer underneath it.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "buffer.h"
#include "reply.h"
#include "suites.h"

/* The buffer holds exactly the bytes of a string literal (NULs too). */
#define ck_assert_buffer_is(b, literal)                                        \
    do {                                                                       \
        ck_assert_uint_eq((b)->len, sizeof(literal) - 1);                      \
        ck_assert_mem_eq((b)->data, literal, sizeof(literal) - 1);             \
    } while (0)

START_TEST(buffer_starts_empty_and_grows)
{
    struct buffer b;
    buffer_init(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(buffer_append(&b, "abc", 3), 0);
    ck_assert_uint_eq(b.len, 3000);
    ck_assert_uint_ge(b.cap, b.len);
    ck_assert_mem_eq(b.data + 2997, "abc", 3);
    buffer_free(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.cap, 0);
}
END_TEST

START_TEST(buffer_reserve_keeps_content_and_refuses_overflow)
{
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(buffer_append(&b, "xy", 2), 0);
    ck_assert_int_eq(buffer_reserve(&b, 10000), 0);
    ck_assert_uint_ge(b.cap - b.len, 10000);
    ck_assert_uint_eq(b.len, 2);
    ck_assert_mem_eq(b.data, "xy", 2);
    ck_assert_int_eq(buffer_reserve(&b, SIZE_MAX), -ENOMEM);
    ck_assert_int_eq(buffer_reserve(&b, SIZE_MAX - 1), -ENOMEM);
    ck_assert_uint_eq(b.len, 2);
    ck_assert_int_eq(buffer_append(&b, NULL, 0), 0);
    ck_assert_uint_eq(b.len, 2);
    buffer_free(&b);
}
END_TEST

START_TEST(buffer_consume_and_reset)
{
    struct buffer b;
    buffer_init(&b);
    buffer_append(&b, "hello world", 11);
    buffer_consume(&b, 0);
    ck_assert_buffer_is(&b, "hello world");
    buffer_consume(&b, 6);
    ck_assert_buffer_is(&b, "world");
    buffer_consume(&b, 5);
    ck_assert_uint_eq(b.len, 0);
    buffer_append(&b, "again", 5);
    size_t cap = b.cap;
    buffer_reset(&b);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.cap, cap); /* reset keeps the memory */
    buffer_free(&b);
}
END_TEST

START_TEST(buffer_drain_frees_only_a_grown_block)
{
    struct buffer b;
    buffer_init(&b);
    buffer_append(&b, "small", 5);
    size_t cap = b.cap;
    buffer_drain(&b, 4096);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.cap, cap); /* under keep: kept for the next write */
    ck_assert_ptr_nonnull(b.data);
    ck_assert_int_eq(buffer_reserve(&b, 8192), 0);
    buffer_drain(&b, 4096);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.cap, 0); /* a burst's block is given back */
    ck_assert_ptr_null(b.data);
    ck_assert_int_eq(buffer_append(&b, "again", 5), 0);
    ck_assert_buffer_is(&b, "again");
    buffer_free(&b);
}
END_TEST

START_TEST(error_code_names)
{
    ck_assert_str_eq(reply_error_code_name(REPLY_ERR), "ERR");
    ck_assert_str_eq(reply_error_code_name(REPLY_NOTOWNER), "NOTOWNER");
    ck_assert_str_eq(reply_error_code_name(REPLY_LOCKLOST), "LOCKLOST");
    ck_assert_str_eq(reply_error_code_name(REPLY_UNAVAILABLE), "UNAVAILABLE");
    ck_assert_str_eq(reply_error_code_name(REPLY_LIMIT), "LIMIT");
    ck_assert_str_eq(reply_error_code_name(REPLY_SHUTDOWN), "SHUTDOWN");
    ck_assert_str_eq(reply_error_code_name(REPLY_NOAUTH), "NOAUTH");
    ck_assert_str_eq(reply_error_code_name(REPLY_NOPERM), "NOPERM");
}
END_TEST

START_TEST(simple_string)
{
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(reply_simple(&b, "OK"), 0);
    ck_assert_buffer_is(&b, "+OK\r\n");
    buffer_reset(&b);
    ck_assert_int_eq(reply_simple(&b, ""), 0);
    ck_assert_buffer_is(&b, "+\r\n");
    buffer_reset(&b);
    ck_assert_int_eq(reply_simple(&b, "a\r\nb\nc\r"), 0);
    ck_assert_buffer_is(&b, "+a  b c \r\n");
    buffer_free(&b);
}
END_TEST

START_TEST(error_with_every_code)
{
    static const struct {
        enum reply_error code;
        const char *wire;
    } cases[] = {
        {REPLY_ERR, "-ERR boom 42\r\n"},
        {REPLY_NOTOWNER, "-NOTOWNER boom 42\r\n"},
        {REPLY_LOCKLOST, "-LOCKLOST boom 42\r\n"},
        {REPLY_UNAVAILABLE, "-UNAVAILABLE boom 42\r\n"},
        {REPLY_LIMIT, "-LIMIT boom 42\r\n"},
        {REPLY_SHUTDOWN, "-SHUTDOWN boom 42\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct buffer b;
        buffer_init(&b);
        ck_assert_int_eq(reply_error(&b, cases[i].code, "%s %d", "boom", 42),
                         0);
        ck_assert_uint_eq(b.len, strlen(cases[i].wire));
        ck_assert_mem_eq(b.data, cases[i].wire, b.len);
        buffer_free(&b);
    }
}
END_TEST

/* What a client reads back: the code of each error reply written. */
START_TEST(error_code_parse_reads_what_reply_error_writes)
{
    enum reply_error parsed;

    for (int code = REPLY_ERR; code <= REPLY_NOPERM; code++) {
        struct buffer b;
        buffer_init(&b);
        ck_assert_int_eq(reply_error(&b, (enum reply_error)code, "x y"), 0);
        /* the text between "-" and "\r\n", as hiredis hands it over */
        ck_assert_int_eq(reply_error_code_parse(b.data + 1, b.len - 3, &parsed),
                         0);
        ck_assert_int_eq(parsed, code);
        buffer_free(&b);
    }
    ck_assert_int_eq(reply_error_code_parse("NOAUTH", 6, &parsed), 0);
    ck_assert_int_eq(parsed, REPLY_NOAUTH);
    ck_assert_int_eq(reply_error_code_parse("NOPERM no", 9, &parsed), 0);
    ck_assert_int_eq(parsed, REPLY_NOPERM);
    /* only len bytes are looked at */
    ck_assert_int_eq(reply_error_code_parse("LIMITED", 5, &parsed), 0);
    ck_assert_int_eq(parsed, REPLY_LIMIT);

    static const struct {
        const char *text;
        size_t len;
    } unknown[] = {
        {"", 0},          {" ERR", 4},        {"err x", 5},   {"ERRX", 4},
        {"NOT OWNER", 9}, {"WRONG TYPE", 10}, {"LIMIT\0", 6}, /* NUL: no end */
    };
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        ck_assert_msg(reply_error_code_parse(unknown[i].text, unknown[i].len,
                                             &parsed) == -EINVAL,
                      "'%s' parsed", unknown[i].text);
}
END_TEST

START_TEST(error_text_cannot_break_framing)
{
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(
        reply_error(&b, REPLY_ERR, "unknown command '%s'", "x\r\n+OK\r\n"), 0);
    ck_assert_buffer_is(&b, "-ERR unknown command 'x  +OK  '\r\n");
    buffer_free(&b);
}
END_TEST

START_TEST(error_long_text_and_appending)
{
    char name[2000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(reply_simple(&b, "OK"), 0);
    ck_assert_int_eq(reply_error(&b, REPLY_LIMIT, "%s", name), 0);
    ck_assert_uint_eq(b.len, 5 + 7 + 1999 + 2);
    ck_assert_mem_eq(b.data, "+OK\r\n-LIMIT nnn", 15);
    ck_assert_mem_eq(b.data + b.len - 3, "n\r\n", 3);
    buffer_reset(&b);
    ck_assert_int_eq(reply_error(&b, REPLY_ERR, "%s", ""), 0);
    ck_assert_buffer_is(&b, "-ERR \r\n");
    buffer_free(&b);
}
END_TEST

START_TEST(integers)
{
    struct buffer b;
    buffer_init(&b);
    reply_integer(&b, 0);
    reply_integer(&b, 1);
    reply_integer(&b, -2);
    reply_integer(&b, INT64_MAX);
    reply_integer(&b, INT64_MIN);
    ck_assert_buffer_is(&b, ":0\r\n:1\r\n:-2\r\n:9223372036854775807\r\n"
                            ":-9223372036854775808\r\n");
    buffer_free(&b);
}
END_TEST

START_TEST(bulk_strings_are_binary_safe)
{
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(reply_bulk(&b, "hi", 2), 0);
    ck_assert_int_eq(reply_bulk(&b, "", 0), 0);
    ck_assert_int_eq(reply_bulk(&b, "a\0\r\nb", 5), 0);
    ck_assert_buffer_is(&b, "$2\r\nhi\r\n$0\r\n\r\n$5\r\na\0\r\nb\r\n");
    buffer_free(&b);
}
END_TEST

START_TEST(bulk_large)
{
    static char big[100000];
    memset(big, 'z', sizeof big);
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(reply_bulk(&b, big, sizeof big), 0);
    ck_assert_uint_eq(b.len, 9 + sizeof big + 2);
    ck_assert_mem_eq(b.data, "$100000\r\nzz", 11);
    ck_assert_mem_eq(b.data + b.len - 3, "z\r\n", 3);
    buffer_free(&b);
}
END_TEST

START_TEST(null_and_arrays)
{
    struct buffer b;
    buffer_init(&b);
    ck_assert_int_eq(reply_null(&b, REPLY_RESP2), 0);
    ck_assert_int_eq(reply_array_header(&b, 0), 0);
    ck_assert_int_eq(reply_array_header(&b, 2), 0);
    reply_integer(&b, 7);
    reply_bulk(&b, "x", 1);
    ck_assert_buffer_is(&b, "$-1\r\n*0\r\n*2\r\n:7\r\n$1\r\nx\r\n");
    buffer_free(&b);
}
END_TEST

/* One of each type whose encoding depends on the protocol. */
static void write_each_protocol_type(struct buffer *b,
                                     enum reply_protocol proto)
{
    b->len = 0;
    ck_assert_int_eq(reply_null(b, proto), 0);
    ck_assert_int_eq(reply_map_header(b, proto, 2), 0);
    ck_assert_int_eq(reply_set_header(b, proto, 1), 0);
    ck_assert_int_eq(reply_push_header(b, proto, 3), 0);
    ck_assert_int_eq(reply_verbatim(b, proto, "a\r\nb", 4), 0);
}

/* The RESP3 types, each with what a RESP2 connection gets in its place,
 * as Redis sends them (src/networking.c, addReplyMapLen and kin). */
START_TEST(resp3_types_and_their_resp2_fallbacks)
{
    struct buffer b;
    buffer_init(&b);
    write_each_protocol_type(&b, REPLY_RESP3);
    ck_assert_buffer_is(&b, "_\r\n%2\r\n~1\r\n>3\r\n=8\r\ntxt:a\r\nb\r\n");
    write_each_protocol_type(&b, REPLY_RESP2);
    ck_assert_buffer_is(&b, "$-1\r\n*4\r\n*1\r\n*3\r\n$4\r\na\r\nb\r\n");
    b.len = 0;
    ck_assert_int_eq(reply_map_header(&b, REPLY_RESP3, 0), 0);
    ck_assert_int_eq(reply_verbatim(&b, REPLY_RESP3, "", 0), 0);
    ck_assert_buffer_is(&b, "%0\r\n=4\r\ntxt:\r\n");
    buffer_free(&b);
}
END_TEST

/* A verbatim string is reserved whole before any byte is written: on
 * failure nothing of it is left (here, a length past any buffer). */
START_TEST(verbatim_is_all_or_nothing)
{
    struct buffer b;
    buffer_init(&b);
    reply_integer(&b, 1);
    ck_assert_int_eq(reply_verbatim(&b, REPLY_RESP3, "x", SIZE_MAX - 64),
                     -ENOMEM);
    ck_assert_buffer_is(&b, ":1\r\n");
    buffer_free(&b);
}
END_TEST

Suite *reply_suite(void)
{
    Suite *s = suite_create("reply");
    TCase *buffer = tcase_create("buffer");
    tcase_add_test(buffer, buffer_starts_empty_and_grows);
    tcase_add_test(buffer, buffer_reserve_keeps_content_and_refuses_overflow);
    tcase_add_test(buffer, buffer_consume_and_reset);
    tcase_add_test(buffer, buffer_drain_frees_only_a_grown_block);
    suite_add_tcase(s, buffer);

    TCase *encoding = tcase_create("encoding");
    tcase_add_test(encoding, error_code_names);
    tcase_add_test(encoding, simple_string);
    tcase_add_test(encoding, error_with_every_code);
    tcase_add_test(encoding, error_code_parse_reads_what_reply_error_writes);
    tcase_add_test(encoding, error_text_cannot_break_framing);
    tcase_add_test(encoding, error_long_text_and_appending);
    tcase_add_test(encoding, integers);
    tcase_add_test(encoding, bulk_strings_are_binary_safe);
    tcase_add_test(encoding, bulk_large);
    tcase_add_test(encoding, null_and_arrays);
    tcase_add_test(encoding, resp3_types_and_their_resp2_fallbacks);
    tcase_add_test(encoding, verbatim_is_all_or_nothing);
    suite_add_tcase(s, encoding);
    return s;
}
