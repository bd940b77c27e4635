/*
 * test_acl.c - users from [user NAME] sections: good and bad configs
 * (file:line errors), the categories, passwords, the permission check,
 * and what a reload swaps.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/acl.h"
#include "base/config.h"
#include "base/log.h"
#include "config_text.h"
#include "suites.h"

static char hash_hex[2 * DIGEST_SIZE + 1];

/* The hex SHA-256 of a password, as sha256sum prints it. */
static const char *sha256_hex(const char *password)
{
    unsigned char d[DIGEST_SIZE];

    digest_sha256(password, strlen(password), d);
    for (size_t i = 0; i < DIGEST_SIZE; i++)
        snprintf(hash_hex + 2 * i, 3, "%02x", d[i]);
    return hash_hex;
}

/* A config with a worker (wpw: @lock on orders:* jobs:*) and an ops user
 * (opw: everything), and the token "tok". */
static void load_users(struct config *cfg)
{
    char text[1024], worker[2 * DIGEST_SIZE + 1], err[256] = "";

    snprintf(worker, sizeof(worker), "%s", sha256_hex("wpw"));
    snprintf(text, sizeof(text),
             "[server]\nauth_token = tok\n"
             "[user worker]\npassword_sha256 = %s\ncommands = +@lock\n"
             "names = orders:* jobs:*\n"
             "[user ops]\npassword_sha256 = %s\ncommands = +@all\n"
             "names = *\n",
             worker, sha256_hex("opw"));
    ck_assert_msg(load_text(text, cfg, err, sizeof(err)) == 0, "%s", err);
}

START_TEST(users_load_and_authenticate)
{
    struct config cfg;
    const struct acl_user *u;

    load_users(&cfg);
    ck_assert_ptr_nonnull(cfg.acl);
    ck_assert_uint_eq(cfg.acl->count, 2);
    u = acl_authenticate(cfg.acl, cfg.auth_token, "worker", 6, "wpw", 3);
    ck_assert_ptr_nonnull(u);
    ck_assert_str_eq(u->name, "worker");
    ck_assert_ptr_eq(
        acl_authenticate(cfg.acl, cfg.auth_token, "ops", 3, "opw", 3),
        acl_find(cfg.acl, "ops", 3));
    /* wrong password, another user's password, unknown user, prefix */
    ck_assert_ptr_null(
        acl_authenticate(cfg.acl, cfg.auth_token, "worker", 6, "wp", 2));
    ck_assert_ptr_null(
        acl_authenticate(cfg.acl, cfg.auth_token, "worker", 6, "opw", 3));
    ck_assert_ptr_null(
        acl_authenticate(cfg.acl, cfg.auth_token, "nobody", 6, "wpw", 3));
    ck_assert_ptr_null(
        acl_authenticate(cfg.acl, cfg.auth_token, "work", 4, "wpw", 3));
    /* AUTH <token> and AUTH default <token> */
    ck_assert_ptr_eq(
        acl_authenticate(cfg.acl, cfg.auth_token, NULL, 0, "tok", 3),
        &acl_default_user);
    ck_assert_ptr_eq(
        acl_authenticate(cfg.acl, cfg.auth_token, "default", 7, "tok", 3),
        &acl_default_user);
    ck_assert_ptr_null(
        acl_authenticate(cfg.acl, cfg.auth_token, NULL, 0, "tok\0", 4));
    config_free(&cfg);
    ck_assert_ptr_null(cfg.acl);
}
END_TEST

START_TEST(default_user_needs_a_token)
{
    struct config cfg;

    config_set_defaults(&cfg);
    ck_assert_ptr_null(acl_authenticate(NULL, "", NULL, 0, "", 0));
    ck_assert_ptr_null(acl_authenticate(NULL, "", "default", 7, "", 0));
}
END_TEST

START_TEST(permissions_by_command_and_name)
{
    struct config cfg;
    const struct acl_user *w, *ops;

    load_users(&cfg);
    w = acl_find(cfg.acl, "worker", 6);
    ops = acl_find(cfg.acl, "ops", 3);
    ck_assert_int_eq(acl_allows(w, CMD_LOCK, "orders:1", 8), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(w, CMD_UNLOCK, "jobs:x", 6), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(w, CMD_LOCK, "billing:1", 9), ACL_DENIED_NAME);
    ck_assert_int_eq(acl_allows(w, CMD_PTTL, "jobs", 4), ACL_DENIED_NAME);
    ck_assert_int_eq(acl_allows(w, CMD_FORCEUNLOCK, "orders:1", 8),
                     ACL_DENIED_COMMAND);
    ck_assert_int_eq(acl_allows(w, CMD_INFO, NULL, 0), ACL_DENIED_COMMAND);
    /* CLIENTID's argument is a client-id, not a lock name */
    ck_assert_int_eq(acl_allows(w, CMD_CLIENTID, "billing", 7), ACL_ALLOWED);
    for (int id = 0; id < COMMAND_COUNT; id++) {
        ck_assert_int_eq(acl_allows(ops, id, "any\0thing", 9), ACL_ALLOWED);
        ck_assert_int_eq(acl_allows(&acl_default_user, id, "x", 1),
                         ACL_ALLOWED);
    }
    /* before AUTH (NULL user) and for every user: PING, AUTH, QUIT */
    ck_assert_int_eq(acl_allows(NULL, CMD_PING, NULL, 0), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(NULL, CMD_AUTH, "u", 1), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(w, CMD_QUIT, NULL, 0), ACL_ALLOWED);
    config_free(&cfg);
}
END_TEST

/* Loads "[user u]\npassword_sha256 = <hash of p>\n" + rules and returns
 * u's command bits. */
static uint64_t commands_of(const char *rules)
{
    struct config cfg;
    char text[512], err[256] = "";
    uint64_t bits;

    snprintf(text, sizeof(text), "[user u]\npassword_sha256 = %s\n%s",
             sha256_hex("p"), rules);
    ck_assert_msg(load_text(text, &cfg, err, sizeof(err)) == 0, "%s: %s", rules,
                  err);
    bits = acl_find(cfg.acl, "u", 1)->commands;
    config_free(&cfg);
    return bits;
}

#define BIT(id) (UINT64_C(1) << CMD_##id)

START_TEST(command_rules_apply_left_to_right)
{
    uint64_t lock =
        BIT(LOCK) | BIT(TRYLOCK) | BIT(UNLOCK) | BIT(ISLOCKED) | BIT(ISHELD) |
        BIT(HOLDCOUNT) | BIT(PTTL) | BIT(OWNERS) | BIT(TOKEN) | BIT(CLIENTID) |
        BIT(CLIENT) | BIT(SUBSCRIBE) | BIT(UNSUBSCRIBE) | BIT(PSUBSCRIBE) |
        BIT(PUNSUBSCRIBE) | BIT(SSUBSCRIBE) | BIT(SUNSUBSCRIBE) |
        BIT(SETPERMITS) | BIT(ADDPERMITS) | BIT(PERMITS) | BIT(ACQUIRE) |
        BIT(RELEASE) | BIT(LATCHSET) | BIT(COUNTDOWN) | BIT(LATCHCOUNT) |
        BIT(AWAIT) | BIT(MLOCK) | BIT(MUNLOCK) | BIT(LOCKS);

    ck_assert_uint_eq(commands_of(""), 0);
    ck_assert_uint_eq(commands_of("commands = +@lock\n"), lock);
    ck_assert_uint_eq(commands_of("commands = +@admin\n"),
                      BIT(FORCEUNLOCK) | BIT(INFO));
    ck_assert_uint_eq(commands_of("commands = +@connection\n"),
                      BIT(CLIENT) | BIT(SELECT) | BIT(ECHO) | BIT(COMMAND) |
                          BIT(TIME));
    ck_assert_uint_eq(commands_of("commands = +@all -forceunlock\n") &
                          (lock | BIT(FORCEUNLOCK) | BIT(INFO)),
                      lock | BIT(INFO));
    ck_assert_uint_eq(commands_of("commands = -@all +LOCK +unlock\n"),
                      BIT(LOCK) | BIT(UNLOCK));
    ck_assert_uint_eq(commands_of("commands = +lock -lock\n"), 0);
    /* rules go on over several lines, in order */
    ck_assert_uint_eq(commands_of("commands = +@lock\ncommands = -clientid\n"),
                      lock & ~BIT(CLIENTID));
    ck_assert_uint_eq(commands_of("commands = +@lock\n  -trylock\n"),
                      lock & ~BIT(TRYLOCK));
}
END_TEST

/* Every command but the always-allowed ones is in @lock, @admin or
 * @connection, and none in both @lock and @admin, so a new command cannot
 * be left out; the always-allowed ones are in none. */
START_TEST(categories_cover_every_command_once)
{
    uint64_t lock = commands_of("commands = +@lock\n");
    uint64_t admin = commands_of("commands = +@admin\n");
    uint64_t connection = commands_of("commands = +@connection\n");
    uint64_t all = commands_of("commands = +@all\n");

    for (int id = 0; id < COMMAND_COUNT; id++) {
        const struct command *cmd = command_by_id((enum command_id)id);
        uint64_t bit = UINT64_C(1) << id;
        bool in_lock = lock & bit, in_admin = admin & bit;

        ck_assert_msg(all & bit, "%s not in @all", cmd->name);
        if (cmd->flags & CMD_BEFORE_AUTH)
            ck_assert_msg(!in_lock && !in_admin && !(connection & bit), "%s",
                          cmd->name);
        else
            ck_assert_msg(!(in_lock && in_admin) &&
                              (in_lock || in_admin || (connection & bit)),
                          "%s in %s", cmd->name,
                          in_lock ? "both @lock and @admin" : "none");
    }
}
END_TEST

/* COMMAND INFO's categories come from the same table. */
START_TEST(categories_of_a_command)
{
    const char *names[4];

    ck_assert_uint_eq(acl_command_categories(CMD_CLIENT, names, 4), 2);
    ck_assert_str_eq(names[0], "lock");
    ck_assert_str_eq(names[1], "connection");
    ck_assert_uint_eq(acl_command_categories(CMD_INFO, names, 4), 1);
    ck_assert_str_eq(names[0], "admin");
    ck_assert_uint_eq(acl_command_categories(CMD_PING, names, 4), 0);
}
END_TEST

START_TEST(names_lines_add_up)
{
    struct config cfg;
    char text[512], err[256] = "";
    const struct acl_user *u;

    snprintf(text, sizeof(text),
             "[user u]\npassword_sha256 = %s\ncommands = +@lock\n"
             "names = a:*\nnames = b:? my\\ lock\n  c:[0-9]\n",
             sha256_hex("p"));
    ck_assert_msg(load_text(text, &cfg, err, sizeof(err)) == 0, "%s", err);
    u = acl_find(cfg.acl, "u", 1);
    ck_assert_int_eq(acl_allows(u, CMD_LOCK, "a:1", 3), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(u, CMD_LOCK, "b:1", 3), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(u, CMD_LOCK, "my lock", 7), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(u, CMD_LOCK, "c:5", 3), ACL_ALLOWED);
    ck_assert_int_eq(acl_allows(u, CMD_LOCK, "c:x", 3), ACL_DENIED_NAME);
    ck_assert_int_eq(acl_allows(u, CMD_LOCK, "b:12", 4), ACL_DENIED_NAME);
    config_free(&cfg);
}
END_TEST

/* Each bad file must fail naming its line and the reason. "H" stands for
 * a good password_sha256 line. */
static const struct {
    const char *text;
    const char *expect;
} bad_users[] = {
    {"[user a]\ncommands = +@lock\n",
     ":2: [user a] has no password_sha256 or tls_subject"},
    {"[user a]\ntls_subject = svc\ntls_subject = svc\n",
     ":3: tls_subject given twice"},
    {"[user a]\ntls_subject =\n", ":2: tls_subject: empty"},
    {"[user a]\ntls_subject = svc\n[user b]\nH\ntls_subject = svc\n",
     ":4: [user b] has the tls_subject of [user a]"},
    {"[user a]\npassword_sha256 = 12ab\n",
     ":2: password_sha256: not 64 hex digits"},
    {"[user a]\npassword_sha256 = "
     "zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
     ":2: password_sha256: not 64 hex digits"},
    {"[user a]\nH\nH\n", ":3: password_sha256 given twice"},
    {"[user a]\nH\n[server]\nmax_clients = 5\n\n[user a]\nnames = *\n",
     ":7: duplicate section [user a] (first at line 2)"},
    {"[user a]\nH\ncommands = lock\n",
     ":3: commands: 'lock' must start with + or -"},
    {"[user a]\nH\ncommands = +@lock +nosuch\n",
     ":3: commands: unknown command or category 'nosuch'"},
    {"[user a]\nH\ncommands = +@everything\n",
     ":3: commands: unknown command or category '@everything'"},
    {"[user a]\nH\ncommands = -quit\n",
     ":3: commands: 'quit' is always allowed"},
    {"[user a]\nH\nnames = ok:* bad[\n", ":3: names: bad pattern 'bad['"},
    {"[user a]\nH\nnames = bad\\\n", ":3: names: bad pattern 'bad\\'"},
    {"[user a]\nH\npassword = x\n", ":3: unknown key 'password' in section "
                                    "[user a]"},
    {"[user default]\nH\n", ":2: [user default] is [server] auth_token"},
    {"[user aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\nH\n",
     ":2: section name longer than 48 characters"},
    {"[user a\x01]\nH\n", ":2: [user a\x01]: a user name is printable"},
    {"[users]\nH\n", ":2: unknown section [users] (did you mean [user NAME]?)"},
    {"[server]\nmax_auth_failures = 0\n",
     ":2: max_auth_failures: 0 is out of range [1, 100]"},
};

/* A tls_subject user needs no password, is found by its CN, and cannot
 * be logged in as with AUTH. */
START_TEST(tls_subject_user)
{
    struct config cfg;
    char err[256] = "";

    ck_assert_msg(load_text("[user svc]\ntls_subject = orders-service\n"
                            "commands = +@lock\nnames = orders:*\n",
                            &cfg, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_ptr_eq(acl_find_tls_subject(cfg.acl, "orders-service"),
                     acl_find(cfg.acl, "svc", 3));
    ck_assert_ptr_null(acl_find_tls_subject(cfg.acl, "orders"));
    ck_assert_ptr_null(acl_find_tls_subject(cfg.acl, "svc"));
    ck_assert_ptr_null(acl_authenticate(cfg.acl, "", "svc", 3, "", 0));
    config_free(&cfg);
}
END_TEST

START_TEST(bad_users_name_line_and_reason)
{
    struct config cfg;
    char text[512], err[512], line[128];
    const char *src = bad_users[_i].text;

    /* expand each "H" line */
    snprintf(line, sizeof(line), "password_sha256 = %s", sha256_hex("p"));
    text[0] = '\0';
    while (*src != '\0') {
        const char *nl = strchr(src, '\n');
        size_t len = (size_t)(nl - src);

        if (len == 1 && src[0] == 'H')
            strcat(text, line);
        else
            strncat(text, src, len);
        strcat(text, "\n");
        src = nl + 1;
    }
    ck_assert_int_eq(load_text(text, &cfg, err, sizeof(err)), -1);
    ck_assert_ptr_null(cfg.acl);
    ck_assert_msg(strstr(err, bad_users[_i].expect) != NULL,
                  "got '%s', want '%s'", err, bad_users[_i].expect);
}
END_TEST

START_TEST(reload_swaps_users_when_they_change)
{
    struct config live, fresh;
    const struct acl_user *before;
    char err[256];

    log_set_level(LOG_LEVEL_ERROR);
    load_users(&live);
    before = acl_find(live.acl, "worker", 6);
    load_users(&fresh);
    ck_assert_int_eq(config_apply_reload(&live, &fresh), 0);
    ck_assert_ptr_eq(acl_find(live.acl, "worker", 6), before);
    config_free(&fresh);

    ck_assert_int_eq(load_text("[user ops]\npassword_sha256 = "
                               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b"
                               "934ca495991b7852b855\ncommands = +@admin\n"
                               "[user new]\npassword_sha256 = "
                               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b"
                               "934ca495991b7852b855\n",
                               &fresh, err, sizeof(err)),
                     0);
    /* worker removed, ops changed, new added; the token is a key */
    ck_assert_int_eq(config_apply_reload(&live, &fresh), 4);
    ck_assert_ptr_null(acl_find(live.acl, "worker", 6));
    ck_assert_ptr_nonnull(acl_find(live.acl, "new", 3));
    /* fresh now holds the old table, still readable */
    ck_assert_ptr_eq(acl_find(fresh.acl, "worker", 6), before);
    config_free(&fresh);
    config_free(&live);
}
END_TEST

Suite *acl_suite(void)
{
    Suite *s = suite_create("acl");
    TCase *tc = tcase_create("acl");

    tcase_add_test(tc, users_load_and_authenticate);
    tcase_add_test(tc, default_user_needs_a_token);
    tcase_add_test(tc, permissions_by_command_and_name);
    tcase_add_test(tc, command_rules_apply_left_to_right);
    tcase_add_test(tc, categories_cover_every_command_once);
    tcase_add_test(tc, categories_of_a_command);
    tcase_add_test(tc, names_lines_add_up);
    tcase_add_test(tc, tls_subject_user);
    tcase_add_loop_test(tc, bad_users_name_line_and_reason, 0,
                        (int)(sizeof(bad_users) / sizeof(bad_users[0])));
    tcase_add_test(tc, reload_swaps_users_when_they_change);
    suite_add_tcase(s, tc);
    return s;
}
