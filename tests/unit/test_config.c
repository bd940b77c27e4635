/*
 * test_config.c - the settings table, the ini loader's errors, and that
 * conf/rlockd.ini documents every key with its real default.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "config_text.h"
#include "suites.h"

static const char *shipped_conf(void)
{
    const char *path = getenv("RLOCKD_CONF");
    return path ? path : "conf/rlockd.ini";
}

START_TEST(defaults_are_the_documented_ones)
{
    struct config cfg;

    config_set_defaults(&cfg);
    ck_assert_str_eq(cfg.listen, "127.0.0.1:7379");
    ck_assert_str_eq(cfg.unix_socket, "");
    ck_assert_int_eq(cfg.max_clients, 10000);
    ck_assert_int_eq(cfg.pool_size, 4);
    ck_assert_int_eq(cfg.redis_port, 6379);
    ck_assert_int_eq(cfg.watchdog_timeout_ms, 30000);
    ck_assert_int_eq(cfg.on_disconnect, ON_DISCONNECT_RELEASE);
    ck_assert_int_eq(cfg.renew_batch_size, 100);
    ck_assert_int_eq(cfg.renew_calls_in_flight, 32);
    ck_assert_int_eq(cfg.max_auth_failures, 3);
    ck_assert_int_eq(cfg.tcp_keepalive_s, 60);
    ck_assert_int_eq(cfg.min_heartbeat_ms, 100);
    ck_assert_int_eq(cfg.max_heartbeat_ms, 86400000);
    ck_assert_ptr_null(cfg.acl);
}
END_TEST

START_TEST(shipped_conf_equals_defaults)
{
    struct config loaded, defaults;
    char err[256] = "";

    ck_assert_msg(config_load(&loaded, shipped_conf(), err, sizeof(err)) == 0,
                  "%s", err);
    config_set_defaults(&defaults);
    ck_assert(memcmp(&loaded, &defaults, sizeof(loaded)) == 0);
}
END_TEST

START_TEST(shipped_conf_lists_every_key)
{
    FILE *f = fopen(shipped_conf(), "r");
    char line[512], section[64] = "", seen[4096] = "";

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char key[128];
        if (sscanf(line, "[%63[^]]]", section) == 1)
            continue;
        if (line[0] != ';' && sscanf(line, "%127[a-z_] =", key) == 1) {
            size_t used = strlen(seen);
            snprintf(seen + used, sizeof(seen) - used, "|%s.%s|", section, key);
        }
    }
    fclose(f);
    for (size_t i = 0; config_key_name(i) != NULL; i++) {
        char want[200];
        snprintf(want, sizeof(want), "|%s.%s|", config_key_section(i),
                 config_key_name(i));
        ck_assert_msg(strstr(seen, want) != NULL, "%s missing from %s", want,
                      shipped_conf());
    }
}
END_TEST

/* A key's comment says "(restart)" exactly when a reload cannot apply it.
 * Keys on consecutive lines share the comment above the first of them. */
START_TEST(shipped_conf_marks_restart_keys)
{
    FILE *f = fopen(shipped_conf(), "r");
    char line[512], section[64] = "";
    bool restart = false, after_key = false;
    int checked = 0;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char key[128];
        if (sscanf(line, "[%63[^]]]", section) == 1) {
            restart = after_key = false;
        } else if (line[0] == ';') {
            if (after_key)
                restart = after_key = false;
            restart |= strstr(line, "(restart)") != NULL;
        } else if (sscanf(line, "%127[a-z_] =", key) == 1) {
            after_key = true;
            for (size_t i = 0; config_key_name(i) != NULL; i++) {
                if (strcmp(config_key_section(i), section) != 0 ||
                    strcmp(config_key_name(i), key) != 0)
                    continue;
                ck_assert_msg(restart == !config_key_live(i),
                              "[%s] %s: comment %s \"(restart)\"", section, key,
                              restart ? "says" : "lacks");
                checked++;
            }
        }
    }
    fclose(f);
    ck_assert_int_gt(checked, 20);
}
END_TEST

START_TEST(reload_applies_live_keys_and_keeps_the_rest)
{
    struct config live, fresh;
    char err[256];

    log_set_level(
        LOG_LEVEL_ERROR); /* the reload's change log is not the test */
    config_set_defaults(&live);
    ck_assert_int_eq(load_text("[server]\nmax_clients = 5\nauth_token = s3\n"
                               "listen = 127.0.0.1:9999\n"
                               "[redis]\npool_size = 9\n"
                               "[lock]\nwatchdog_timeout_ms = 6000\n",
                               &fresh, err, sizeof(err)),
                     0);
    ck_assert_int_eq(config_apply_reload(&live, &fresh), 3);
    ck_assert_int_eq(live.max_clients, 5);
    ck_assert_str_eq(live.auth_token, "s3");
    ck_assert_int_eq(live.watchdog_timeout_ms, 6000);
    ck_assert_str_eq(live.listen, "127.0.0.1:7379");
    ck_assert_int_eq(live.pool_size, 4);
    ck_assert_int_eq(config_apply_reload(&live, &fresh), 0);
}
END_TEST

START_TEST(values_are_applied)
{
    struct config cfg;
    char err[256];

    ck_assert_int_eq(load_text("[redis]\nport = 6400\npool_size = 8\n"
                               "[lock]\non_disconnect = EXPIRE\n"
                               "[server]\nlisten = [::1]:7000\n"
                               "min_heartbeat_ms = 2000\n"
                               "max_heartbeat_ms = 2000\n",
                               &cfg, err, sizeof(err)),
                     0);
    ck_assert_int_eq(cfg.min_heartbeat_ms, 2000); /* a range of one value */
    ck_assert_int_eq(cfg.max_heartbeat_ms, 2000);
    ck_assert_int_eq(cfg.redis_port, 6400);
    ck_assert_int_eq(cfg.pool_size, 8);
    ck_assert_int_eq(cfg.on_disconnect, ON_DISCONNECT_EXPIRE);
    ck_assert_str_eq(cfg.listen, "[::1]:7000");
}
END_TEST

/* Each bad file must fail naming its line and the reason. */
static const struct {
    const char *text;
    const char *expect; /* substring of the message, after "FILE:" */
} bad_files[] = {
    {"[server]\nnope = 1\n", ":2: unknown key 'nope' in section [server]"},
    {"[nosuch]\nlisten = x\n", ":2: unknown section [nosuch]"},
    {"[sever]\nlisten = x\n",
     ":2: unknown section [sever] (did you mean [server]?)"},
    {"[lock]\nmax_waiters = 1\nmax_waiters = 2\n",
     ":3: duplicate key 'max_waiters' in section [lock] (first set on line 2)"},
    {"[redis]\n\nport = 0\n", ":3: port: 0 is out of range [1, 65535]"},
    {"[redis]\nport = 70000\n", ":2: port: 70000 is out of range"},
    {"[redis]\nport = 12ab\n", ":2: port: '12ab' is not an integer"},
    {"[redis]\nport =\n", ":2: port: '' is not an integer"},
    {"[lock]\non_disconnect = maybe\n",
     ":2: on_disconnect: 'maybe' is not one of release, expire"},
    {"[log]\nlevel = loud\n",
     ":2: level: 'loud' is not one of error, warn, info, debug"},
    {"[server]\nlisten = localhost\n",
     ":2: listen: 'localhost' is not host:port"},
    {"[server]\nlisten = 127.0.0.1:99999\n",
     ":2: listen: '127.0.0.1:99999' is not host:port"},
    {"this is not ini\n", ":1: syntax error"},
    {"[lock]\nwatchdog_timeout_ms = 10\n",
     ":2: watchdog_timeout_ms: 10 is out of range"},
    {"[server]\nmin_heartbeat_ms = 99\n",
     ":2: min_heartbeat_ms: 99 is out of range [100, 86400000]"},
    {"[server]\nmax_heartbeat_ms = 86400001\n",
     ":2: max_heartbeat_ms: 86400001 is out of range [100, 86400000]"},
    /* no line: the two keys together are wrong, wherever they are */
    {"[server]\nmax_heartbeat_ms = 1000\nmin_heartbeat_ms = 5000\n",
     ": min_heartbeat_ms 5000 is above max_heartbeat_ms 1000"},
};

START_TEST(bad_values_name_line_and_reason)
{
    struct config cfg;
    char err[256];

    ck_assert_int_eq(load_text(bad_files[_i].text, &cfg, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, bad_files[_i].expect) != NULL,
                  "got '%s', want '%s'", err, bad_files[_i].expect);
}
END_TEST

START_TEST(missing_file_is_an_error)
{
    struct config cfg;
    char err[256];

    ck_assert_int_eq(
        config_load(&cfg, "/nonexistent/rlockd.ini", err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot open"));
}
END_TEST

START_TEST(host_port_split)
{
    char host[64];
    int port;

    ck_assert_int_eq(
        config_split_host_port("127.0.0.1:7379", host, sizeof(host), &port), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_int_eq(port, 7379);
    ck_assert_int_eq(
        config_split_host_port("[::1]:1", host, sizeof(host), &port), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(port, 1);
    ck_assert_int_eq(config_split_host_port(":7379", host, sizeof(host), &port),
                     -1);
    ck_assert_int_eq(config_split_host_port("h:", host, sizeof(host), &port),
                     -1);
    ck_assert_int_eq(config_split_host_port("h:0", host, sizeof(host), &port),
                     -1);
    ck_assert_int_eq(
        config_split_host_port("[::1:7", host, sizeof(host), &port), -1);
    ck_assert_int_eq(
        config_split_host_port("[[]: 6", host, sizeof(host), &port), -1);
    ck_assert_int_eq(config_split_host_port("h: 6", host, sizeof(host), &port),
                     -1);
    ck_assert_int_eq(config_split_host_port("a b:6", host, sizeof(host), &port),
                     -1);
    ck_assert_int_eq(config_split_host_port("h:1x", host, sizeof(host), &port),
                     -1);
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");

    tcase_add_test(tc, defaults_are_the_documented_ones);
    tcase_add_test(tc, shipped_conf_equals_defaults);
    tcase_add_test(tc, shipped_conf_lists_every_key);
    tcase_add_test(tc, shipped_conf_marks_restart_keys);
    tcase_add_test(tc, reload_applies_live_keys_and_keeps_the_rest);
    tcase_add_test(tc, values_are_applied);
    tcase_add_loop_test(tc, bad_values_name_line_and_reason, 0,
                        (int)(sizeof(bad_files) / sizeof(bad_files[0])));
    tcase_add_test(tc, missing_file_is_an_error);
    tcase_add_test(tc, host_port_split);
    suite_add_tcase(s, tc);
    return s;
}
