/*
 * test_log.c - the JSON log line ([log] format = json): one object a
 * line whose message keeps quotes, backslashes and control bytes escaped,
 * so that a lock name or a Redis error with any bytes cannot break it.
 * stderr is a pipe for the test's duration.
 */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "suites.h"

/* What log_info(fmt, arg) writes in format, read back from a pipe. */
static void logged(enum log_format format, const char *arg, char *out,
                   size_t size)
{
    int fds[2], saved = dup(STDERR_FILENO);
    ssize_t n;

    ck_assert_int_eq(pipe(fds), 0);
    dup2(fds[1], STDERR_FILENO);
    log_set_format(format);
    log_info("name %s", arg);
    log_set_format(LOG_FORMAT_TEXT);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[1]);
    n = read(fds[0], out, size - 1);
    close(fds[0]);
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
}

START_TEST(json_line_escapes_the_message)
{
    char line[512];
    const char *msg;

    logged(LOG_FORMAT_JSON, "a\"b\\c\nd\001", line, sizeof(line));
    ck_assert_msg(strncmp(line, "{\"time\":\"", 9) == 0, "%s", line);
    ck_assert_ptr_nonnull(strstr(line, "\"level\":\"info\",\"pid\":"));
    msg = strstr(line, "\"msg\":\"");
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg, "\"msg\":\"name a\\\"b\\\\c\\u000ad\\u0001\"}\n");
}
END_TEST

START_TEST(text_line_is_unchanged)
{
    char line[512];

    logged(LOG_FORMAT_TEXT, "x", line, sizeof(line));
    ck_assert_msg(strstr(line, " INFO name x\n") != NULL, "%s", line);
    ck_assert_msg(line[0] != '{', "%s", line);
}
END_TEST

Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("format");

    tcase_add_test(tc, json_line_escapes_the_message);
    tcase_add_test(tc, text_line_is_unchanged);
    suite_add_tcase(s, tc);
    return s;
}
