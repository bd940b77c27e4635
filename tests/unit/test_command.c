/*
 * test_command.c - the command table and argument decoding: lookup,
 * arity of every command, each syntax, option errors and thread-id range.
 * (Client-ids: test_client_id.c.)
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "suites.h"

#define MAX_WORDS 10
#define TEST_MAX_NAME_LEN 16

/* A request as the parser hands it over, from a NULL-ended word list. */
struct words {
    size_t argc;
    char *argv[MAX_WORDS];
    size_t argv_len[MAX_WORDS];
    char text[256]; /* the words joined, for failure messages */
};

static void words_init(struct words *w, const char *const *list)
{
    memset(w, 0, sizeof *w);
    for (; list[w->argc] != NULL; w->argc++) {
        ck_assert_uint_lt(w->argc, MAX_WORDS);
        w->argv[w->argc] = (char *)list[w->argc];
        w->argv_len[w->argc] = strlen(list[w->argc]);
        size_t used = strlen(w->text);
        snprintf(w->text + used, sizeof w->text - used, "%s'%s'",
                 w->argc > 0 ? " " : "", list[w->argc]);
    }
}

static int parse_words(const struct words *w, struct command_args *out,
                       char *err, size_t err_size)
{
    const struct command *cmd = command_lookup(w->argv[0], w->argv_len[0]);
    ck_assert_msg(cmd != NULL, "unknown command in %s", w->text);
    return command_parse_args(cmd, w->argc, w->argv, w->argv_len,
                              TEST_MAX_NAME_LEN, out, err, err_size);
}

static struct command_args expect_ok(const char *const *list)
{
    struct words w;
    words_init(&w, list);
    struct command_args out;
    char err[128] = "";
    int rc = parse_words(&w, &out, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: expected success, got %d '%s'", w.text, rc,
                  err);
    return out;
}

static void expect_error(const char *const *list, const char *error)
{
    struct words w;
    words_init(&w, list);
    struct command_args out;
    char err[128] = "";
    int rc = parse_words(&w, &out, err, sizeof err);
    ck_assert_msg(rc == -EINVAL, "%s: expected -EINVAL, got %d", w.text, rc);
    ck_assert_msg(strcmp(err, error) == 0, "%s: expected '%s', got '%s'",
                  w.text, error, err);
}

START_TEST(lookup_every_command_any_case)
{
    for (int id = 0; id < COMMAND_COUNT; id++) {
        const struct command *cmd = command_by_id((enum command_id)id);
        ck_assert_int_eq(cmd->id, id);
        char upper[32], mixed[32];
        size_t len = strlen(cmd->name);
        ck_assert_uint_lt(len, sizeof upper);
        for (size_t i = 0; i <= len; i++) {
            upper[i] = (char)(cmd->name[i] >= 'a' ? cmd->name[i] - 32 : 0);
            mixed[i] = i % 2 ? upper[i] : cmd->name[i];
        }
        ck_assert_ptr_eq(command_lookup(cmd->name, len), cmd);
        ck_assert_ptr_eq(command_lookup(upper, len), cmd);
        ck_assert_ptr_eq(command_lookup(mixed, len), cmd);
    }
}
END_TEST

START_TEST(lookup_table_contents)
{
    const struct command *lock = command_lookup("LOCK", 4);
    ck_assert_ptr_nonnull(lock);
    ck_assert_int_eq(lock->id, CMD_LOCK);
    ck_assert_str_eq(lock->name, "lock");
    ck_assert_int_eq(lock->syntax, SYNTAX_LOCK);
    ck_assert_uint_eq(lock->flags & CMD_ALONE, CMD_ALONE);
    const struct command *ping = command_lookup("Ping", 4);
    ck_assert_ptr_nonnull(ping);
    ck_assert_uint_eq(ping->flags & CMD_ALONE, 0);
}
END_TEST

START_TEST(lookup_rejects_near_misses)
{
    ck_assert_ptr_null(command_lookup("", 0));
    ck_assert_ptr_null(command_lookup("loc", 3));
    ck_assert_ptr_null(command_lookup("lockx", 5));
    ck_assert_ptr_null(command_lookup("lock ", 5));
    ck_assert_ptr_null(command_lookup("lock\0", 5));
    ck_assert_ptr_null(command_lookup("lo\0k", 4));
    ck_assert_ptr_null(command_lookup("get", 3));
    /* only the first len bytes count */
    ck_assert_ptr_eq(command_lookup("pingpong", 4), command_by_id(CMD_PING));
}
END_TEST

/* argc below min or above max gets the arity error, and only then. */
START_TEST(arity_of_every_command)
{
    /* valid for every syntax at each position that takes a value */
    static const char *const fill[] = {"name", "7", "LEASE", "100",
                                       "WAIT", "5", "extra", "extra"};
    for (int id = 0; id < COMMAND_COUNT; id++) {
        const struct command *cmd = command_by_id((enum command_id)id);
        char *argv[MAX_WORDS];
        size_t argv_len[MAX_WORDS];
        argv[0] = (char *)cmd->name;
        argv_len[0] = strlen(cmd->name);
        for (size_t i = 1; i < MAX_WORDS; i++) {
            argv[i] = (char *)fill[(i - 1) % 8];
            argv_len[i] = strlen(argv[i]);
        }
        char expected[80];
        snprintf(expected, sizeof expected,
                 "wrong number of arguments for '%s' command", cmd->name);
        size_t top = cmd->max_argc == COMMAND_ARGC_ANY
                         ? MAX_WORDS
                         : (size_t)cmd->max_argc + 2;
        for (size_t argc = 0; argc <= top && argc <= MAX_WORDS; argc++) {
            struct command_args out;
            char err[128] = "";
            int rc =
                command_parse_args(cmd, argc, argv, argv_len, TEST_MAX_NAME_LEN,
                                   &out, err, sizeof err);
            bool outside = argc < (size_t)cmd->min_argc ||
                           (cmd->max_argc != COMMAND_ARGC_ANY &&
                            argc > (size_t)cmd->max_argc);
            ck_assert_msg(outside == (strcmp(err, expected) == 0),
                          "%s argc %zu: '%s'", cmd->name, argc, err);
            if (outside)
                ck_assert_int_eq(rc, -EINVAL);
        }
    }
}
END_TEST

START_TEST(arity_message_uses_table_name)
{
    expect_error((const char *[]){"LOCK", NULL},
                 "wrong number of arguments for 'lock' command");
    expect_error((const char *[]){"QUIT", "now", NULL},
                 "wrong number of arguments for 'quit' command");
    expect_error((const char *[]){"FORCEUNLOCK", "a", "READ", "b", NULL},
                 "wrong number of arguments for 'forceunlock' command");
    expect_error((const char *[]){"TOKEN", "a", "FENCED", NULL},
                 "wrong number of arguments for 'token' command");
    expect_error((const char *[]){"ping", "a", "b", NULL},
                 "wrong number of arguments for 'ping' command");
    expect_error((const char *[]){"TRYLOCK", "a", "1", "WAIT", "1", "LEASE",
                                  "1", "FAIR", "x", NULL},
                 "wrong number of arguments for 'trylock' command");
}
END_TEST

START_TEST(syntax_none)
{
    expect_ok((const char *[]){"quit", NULL});
}
END_TEST

START_TEST(syntax_optional_text)
{
    struct command_args a = expect_ok((const char *[]){"PING", NULL});
    ck_assert_ptr_null(a.name);
    ck_assert_uint_eq(a.name_len, 0);

    static const char *const with_text[] = {"INFO", "server", NULL};
    a = expect_ok(with_text);
    ck_assert_ptr_eq(a.name, with_text[1]); /* points into the request */
    ck_assert_uint_eq(a.name_len, 6);

    /* present but empty is told apart from absent */
    a = expect_ok((const char *[]){"PING", "", NULL});
    ck_assert_ptr_nonnull(a.name);
    ck_assert_uint_eq(a.name_len, 0);

    /* optional text is not a lock name: no length limit */
    a = expect_ok(
        (const char *[]){"PING", "a message longer than sixteen", NULL});
    ck_assert_uint_eq(a.name_len, 29);
}
END_TEST

START_TEST(syntax_auth_password_or_username_and_password)
{
    static const char *const token[] = {"AUTH", "s3cret", NULL};
    static const char *const pair[] = {"auth", "alice", "pw", NULL};
    struct command_args a = expect_ok(token);

    ck_assert_ptr_null(a.name);
    ck_assert_ptr_eq(a.password, token[1]);
    ck_assert_uint_eq(a.password_len, 6);
    a = expect_ok(pair);
    ck_assert_ptr_eq(a.name, pair[1]);
    ck_assert_uint_eq(a.name_len, 5);
    ck_assert_ptr_eq(a.password, pair[2]);
    ck_assert_uint_eq(a.password_len, 2);
    /* a password is not a lock name: no length limit, may be empty */
    a = expect_ok((const char *[]){"AUTH", "u", "", NULL});
    ck_assert_uint_eq(a.password_len, 0);
    a = expect_ok(
        (const char *[]){"AUTH", "a password longer than sixteen", NULL});
    ck_assert_uint_eq(a.password_len, 30);
    expect_error((const char *[]){"AUTH", "u", "p", "x", NULL},
                 "wrong number of arguments for 'auth' command");
}
END_TEST

START_TEST(lock_name_commands_are_those_with_a_name_argument)
{
    for (int id = 0; id < COMMAND_COUNT; id++) {
        const struct command *cmd = command_by_id((enum command_id)id);
        bool want =
            id == CMD_LOCK || id == CMD_TRYLOCK || id == CMD_UNLOCK ||
            id == CMD_FORCEUNLOCK || id == CMD_ISLOCKED || id == CMD_ISHELD ||
            id == CMD_HOLDCOUNT || id == CMD_PTTL || id == CMD_OWNERS ||
            id == CMD_TOKEN || id == CMD_SETPERMITS || id == CMD_ADDPERMITS ||
            id == CMD_PERMITS || id == CMD_ACQUIRE || id == CMD_RELEASE ||
            id == CMD_LATCHSET || id == CMD_COUNTDOWN || id == CMD_LATCHCOUNT ||
            id == CMD_AWAIT || id == CMD_MLOCK || id == CMD_MUNLOCK;

        ck_assert_msg(command_has_lock_name(cmd) == want, "%s", cmd->name);
    }
}
END_TEST

/* MLOCK's options come after its names; a name list whose last-but-one
 * word is WAIT or LEASE ends with that option, else every word is a
 * name. */
START_TEST(syntax_mlock_and_munlock)
{
    struct command_args a = expect_ok(
        (const char *[]){"MLOCK", "7", "b", "a", "LEASE", "50", NULL});

    ck_assert_uint_eq(a.thread_id, 7);
    ck_assert_uint_eq(a.list_count, 2);
    ck_assert_uint_eq(a.name_len, 1); /* the first, for the ACL gate */
    ck_assert_int_eq(a.wait_ms, COMMAND_WAIT_FOREVER);
    ck_assert_int_eq(a.lease_ms, 50);
    a = expect_ok(
        (const char *[]){"mlock", "1", "a", "wait", "5", "LEASE", "9", NULL});
    ck_assert_uint_eq(a.list_count, 1);
    ck_assert_int_eq(a.wait_ms, 5);
    ck_assert_int_eq(a.lease_ms, 9);
    a = expect_ok((const char *[]){"MLOCK", "1", "wait", "5", NULL});
    ck_assert_uint_eq(a.list_count, 2); /* no name would be left */
    a = expect_ok((const char *[]){"MUNLOCK", "1", "a", "WAIT", "5", NULL});
    ck_assert_uint_eq(a.list_count, 3); /* MUNLOCK takes no option */
    expect_error((const char *[]){"MLOCK", "1", "a", "WAIT", "-2", NULL},
                 "WAIT must be -1 or a non-negative number of milliseconds");
    expect_error(
        (const char *[]){"MLOCK", "1", "a", "WAIT", "1", "WAIT", "2", NULL},
        "syntax error");
    expect_error((const char *[]){"MLOCK", "x", "a", NULL},
                 "thread-id must be an unsigned 64-bit decimal integer");
    expect_error((const char *[]){"MLOCK", "1", "a", "", NULL},
                 "lock name must not be empty");
    expect_error((const char *[]){"MLOCK", "1", NULL},
                 "wrong number of arguments for 'mlock' command");
}
END_TEST

START_TEST(syntax_clientid)
{
    static const char *const with_secret[] = {"CLIENTID", "app-1", "secret",
                                              "0123456789abcdef", NULL};
    struct command_args a = expect_ok((const char *[]){"CLIENTID", NULL});

    ck_assert_ptr_null(a.name);
    ck_assert_ptr_null(a.secret);
    a = expect_ok((const char *[]){"CLIENTID", "", NULL});
    ck_assert_ptr_nonnull(a.name); /* the handler refuses the empty id */
    ck_assert_uint_eq(a.name_len, 0);
    ck_assert_ptr_null(a.secret);
    a = expect_ok(with_secret);
    ck_assert_ptr_eq(a.name, with_secret[1]);
    ck_assert_ptr_eq(a.secret, with_secret[3]);
    ck_assert_uint_eq(a.secret_len, 16);

    expect_error((const char *[]){"CLIENTID", "app-1", "SECRET", NULL},
                 "syntax error");
    expect_error((const char *[]){"CLIENTID", "app-1", "PASSWORD",
                                  "0123456789abcdef", NULL},
                 "syntax error");
    expect_error((const char *[]){"CLIENTID", "app-1", "SECRET",
                                  "0123456789abcde", NULL},
                 "SECRET must be 16 to 256 bytes");
    ck_assert(!a.resume);
    a = expect_ok((const char *[]){"CLIENTID", "app-1", "SECRET",
                                   "0123456789abcdef", "resume", NULL});
    ck_assert(a.resume);
    expect_error((const char *[]){"CLIENTID", "app-1", "SECRET",
                                  "0123456789abcdef", "NOW", NULL},
                 "syntax error");
    expect_error((const char *[]){"CLIENTID", "app-1", "RESUME", NULL},
                 "syntax error");
}
END_TEST

START_TEST(syntax_client_heartbeat)
{
    static const char bad_ms[] =
        "HEARTBEAT must be 0 (off) or 100 to 86400000 milliseconds";
    static const char arity[] =
        "wrong number of arguments for 'client|heartbeat' command";

    ck_assert_int_eq(
        expect_ok((const char *[]){"CLIENT", "heartbeat", "10000", NULL})
            .heartbeat_ms,
        10000);
    ck_assert_int_eq(
        expect_ok((const char *[]){"client", "HEARTBEAT", "0", NULL})
            .heartbeat_ms,
        0);
    ck_assert_int_eq(
        expect_ok((const char *[]){"CLIENT", "HEARTBEAT", "86400000", NULL})
            .heartbeat_ms,
        86400000);
    expect_error((const char *[]){"CLIENT", "HEARTBEAT", "99", NULL}, bad_ms);
    expect_error((const char *[]){"CLIENT", "HEARTBEAT", "86400001", NULL},
                 bad_ms);
    expect_error((const char *[]){"CLIENT", "HEARTBEAT", "-1", NULL}, bad_ms);
    expect_error((const char *[]){"CLIENT", "HEARTBEAT", "1e4", NULL}, bad_ms);
    expect_error((const char *[]){"CLIENT", "HEARTBEAT", NULL}, arity);
    expect_error((const char *[]){"CLIENT", "SETNAME", "x", "y", NULL},
                 "wrong number of arguments for 'client|setname' command");
    expect_error((const char *[]){"CLIENT", "KILL", "x", NULL},
                 "unknown subcommand 'KILL'. Try CLIENT HELP.");
    /* an echoed word's line breaks do not break the error's one line
     * (found by make fuzz) */
    expect_error((const char *[]){"CLIENT", "HEART\r\nBE", "x", NULL},
                 "unknown subcommand 'HEART  BE'. Try CLIENT HELP.");
}
END_TEST

/* CLIENT's other subcommands, with Redis's rule for names. */
START_TEST(syntax_client_subcommands)
{
    static const char spaces[] = "Client names cannot contain spaces, "
                                 "newlines or special characters.";
    struct command_args a =
        expect_ok((const char *[]){"client", "SetName", "w-1", NULL});

    ck_assert_int_eq(a.sub, SUB_CLIENT_SETNAME);
    ck_assert_mem_eq(a.value, "w-1", 3);
    ck_assert_str_eq(command_sub_name(a.sub), "client|setname");
    a = expect_ok((const char *[]){"CLIENT", "SETNAME", "", NULL});
    ck_assert_uint_eq(a.value_len, 0);
    expect_error((const char *[]){"CLIENT", "SETNAME", "a b", NULL}, spaces);
    expect_error((const char *[]){"CLIENT", "SETNAME", "a\n", NULL}, spaces);
    a = expect_ok(
        (const char *[]){"CLIENT", "SETINFO", "lib-ver", "1.0", NULL});
    ck_assert_int_eq(a.sub, SUB_CLIENT_SETINFO_LIB_VER);
    ck_assert_str_eq(command_sub_name(a.sub), "client|setinfo");
    a = expect_ok(
        (const char *[]){"CLIENT", "SETINFO", "LIB-NAME", "redis-py", NULL});
    ck_assert_int_eq(a.sub, SUB_CLIENT_SETINFO_LIB_NAME);
    expect_error((const char *[]){"CLIENT", "SETINFO", "x", "y", NULL},
                 "Unrecognized option 'x'");
    expect_error((const char *[]){"CLIENT", "SETINFO", "lib-ver", "1 0", NULL},
                 "lib-ver cannot contain spaces, newlines or special "
                 "characters.");
    ck_assert_int_eq(expect_ok((const char *[]){"CLIENT", "ID", NULL}).sub,
                     SUB_CLIENT_ID);
    ck_assert_int_eq(expect_ok((const char *[]){"CLIENT", "list", NULL}).sub,
                     SUB_CLIENT_LIST);
    ck_assert_int_eq(expect_ok((const char *[]){"CLIENT", "INFO", NULL}).sub,
                     SUB_CLIENT_INFO);
    ck_assert_int_eq(expect_ok((const char *[]){"CLIENT", "GETNAME", NULL}).sub,
                     SUB_CLIENT_GETNAME);
}
END_TEST

/* HELLO [protover [AUTH user pass] [SETNAME name]], as Redis 7 parses. */
START_TEST(syntax_hello)
{
    struct command_args a = expect_ok((const char *[]){"HELLO", NULL});

    ck_assert_int_eq(a.protocol, 0);
    a = expect_ok((const char *[]){"hello", "3", NULL});
    ck_assert_int_eq(a.protocol, 3);
    a = expect_ok(
        (const char *[]){"HELLO", "2", "setname", "n", "AUTH", "u", "p", NULL});
    ck_assert_int_eq(a.protocol, 2);
    ck_assert_mem_eq(a.name, "u", 1);
    ck_assert_mem_eq(a.password, "p", 1);
    ck_assert_mem_eq(a.value, "n", 1);
    expect_error((const char *[]){"HELLO", "two", NULL},
                 "Protocol version is not an integer or out of range");
    /* another version is -NOPROTO before any option is looked at */
    a = expect_ok((const char *[]){"HELLO", "0", NULL});
    ck_assert_int_eq(a.protocol, COMMAND_PROTOCOL_UNSUPPORTED);
    a = expect_ok((const char *[]){"HELLO", "4", "nonsense", NULL});
    ck_assert_int_eq(a.protocol, COMMAND_PROTOCOL_UNSUPPORTED);
    expect_error((const char *[]){"HELLO", "2", "AUTH", "u", NULL},
                 "Syntax error in HELLO option 'AUTH'");
    expect_error((const char *[]){"HELLO", "2", "SETNAME", "a b", NULL},
                 "Client names cannot contain spaces, newlines or special "
                 "characters.");
}
END_TEST

START_TEST(syntax_select_and_command)
{
    struct command_args a;

    expect_ok((const char *[]){"SELECT", "0", NULL});
    expect_ok((const char *[]){"SELECT", "-0", NULL});
    expect_error((const char *[]){"SELECT", "1", NULL},
                 "DB index is out of range");
    expect_error((const char *[]){"SELECT", "x", NULL},
                 "value is not an integer or out of range");
    ck_assert_int_eq(expect_ok((const char *[]){"COMMAND", NULL}).sub,
                     SUB_NONE);
    ck_assert_int_eq(expect_ok((const char *[]){"command", "count", NULL}).sub,
                     SUB_COMMAND_COUNT);
    a = expect_ok((const char *[]){"COMMAND", "DOCS", "lock", "ping", NULL});
    ck_assert_int_eq(a.sub, SUB_COMMAND_DOCS);
    ck_assert_uint_eq(a.list_count, 2);
    expect_error((const char *[]){"COMMAND", "COUNT", "x", NULL},
                 "wrong number of arguments for 'command|count' command");
    expect_error((const char *[]){"COMMAND", "GETKEYS", "x", NULL},
                 "unknown subcommand 'GETKEYS'. Try COMMAND HELP.");
}
END_TEST

/* SUBSCRIBE and its kin take any number of channels; which ones may be
 * subscribed to is the server's rule. */
START_TEST(syntax_channels)
{
    struct command_args a =
        expect_ok((const char *[]){"SUBSCRIBE", "a", "b", "c", NULL});

    ck_assert_uint_eq(a.list_count, 3);
    ck_assert_uint_eq(
        expect_ok((const char *[]){"UNSUBSCRIBE", NULL}).list_count, 0);
    expect_error((const char *[]){"SUBSCRIBE", NULL},
                 "wrong number of arguments for 'subscribe' command");
}
END_TEST

START_TEST(syntax_name)
{
    struct command_args a = expect_ok((const char *[]){"pttl", "lk", NULL});
    ck_assert_uint_eq(a.name_len, 2);
    ck_assert_mem_eq(a.name, "lk", 2);
    expect_error((const char *[]){"ISLOCKED", "", NULL},
                 "lock name must not be empty");
    /* TEST_MAX_NAME_LEN is 16 */
    a = expect_ok((const char *[]){"ISLOCKED", "0123456789abcdef", NULL});
    ck_assert_uint_eq(a.name_len, 16);
    expect_error((const char *[]){"FORCEUNLOCK", "0123456789abcdefg", NULL},
                 "lock name longer than 16 bytes");
    /* any bytes: spaces, braces, UTF-8 */
    expect_ok((const char *[]){"PTTL", "a b{c}\xc3\xa9\t", NULL});
}
END_TEST

/* The kind word: after the fixed arguments, anywhere among the options,
 * any case, at most once, and only where the grammar has one. */
START_TEST(kind_word)
{
    struct command_args a = expect_ok((const char *[]){"LOCK", "n", "1", NULL});
    ck_assert_int_eq(a.kind, COMMAND_KIND_PLAIN);
    a = expect_ok((const char *[]){"LOCK", "n", "1", "fair", NULL});
    ck_assert_int_eq(a.kind, COMMAND_KIND_FAIR);
    a = expect_ok(
        (const char *[]){"LOCK", "n", "1", "READ", "LEASE", "5", NULL});
    ck_assert_int_eq(a.kind, COMMAND_KIND_READ);
    ck_assert_int_eq(a.lease_ms, 5);
    a = expect_ok((const char *[]){"TRYLOCK", "n", "1", "WAIT", "7", "Write",
                                   "LEASE", "5", NULL});
    ck_assert_int_eq(a.kind, COMMAND_KIND_WRITE);
    ck_assert_int_eq(a.wait_ms, 7);
    ck_assert_int_eq(a.lease_ms, 5);
    a = expect_ok((const char *[]){"UNLOCK", "n", "1", "FENCED", NULL});
    ck_assert_int_eq(a.kind, COMMAND_KIND_FENCED);
    a = expect_ok((const char *[]){"ISLOCKED", "n", "read", NULL});
    ck_assert_int_eq(a.kind, COMMAND_KIND_READ);
    ck_assert_uint_eq(a.name_len, 1);
    expect_error((const char *[]){"LOCK", "n", "1", "READ", "WRITE", NULL},
                 "syntax error: one lock kind at most");
    expect_error((const char *[]){"ISLOCKED", "n", "SHARED", NULL},
                 "syntax error");
    expect_error((const char *[]){"UNLOCK", "n", "1", "LEASE", NULL},
                 "syntax error");
    expect_error((const char *[]){"LOCK", "n", "1", "LEASE", "FAIR", NULL},
                 "LEASE must be -1 or a positive number of milliseconds");
}
END_TEST

START_TEST(name_may_hold_nul_bytes)
{
    char name[] = "a\0b";
    char *argv[] = {"isheld", name, "1"};
    size_t argv_len[] = {6, 3, 1};
    struct command_args out;
    char err[64];
    ck_assert_int_eq(command_parse_args(command_by_id(CMD_ISHELD), 3, argv,
                                        argv_len, 16, &out, err, sizeof err),
                     0);
    ck_assert_uint_eq(out.name_len, 3);
    ck_assert_mem_eq(out.name, "a\0b", 3);
}
END_TEST

START_TEST(syntax_name_thread)
{
    struct command_args a =
        expect_ok((const char *[]){"UNLOCK", "lk", "42", NULL});
    ck_assert_mem_eq(a.name, "lk", 2);
    ck_assert_uint_eq(a.thread_id, 42);
    a = expect_ok((const char *[]){"holdcount", "lk", "0", NULL});
    ck_assert_uint_eq(a.thread_id, 0);
    expect_error((const char *[]){"ISHELD", "", "1", NULL},
                 "lock name must not be empty");
}
END_TEST

START_TEST(thread_id_range)
{
    struct command_args a = expect_ok(
        (const char *[]){"UNLOCK", "lk", "18446744073709551615", NULL});
    ck_assert_uint_eq(a.thread_id, UINT64_MAX);
    a = expect_ok((const char *[]){"UNLOCK", "lk", "007", NULL});
    ck_assert_uint_eq(a.thread_id, 7);
    a = expect_ok(
        (const char *[]){"UNLOCK", "lk", "0018446744073709551615", NULL});
    ck_assert_uint_eq(a.thread_id, UINT64_MAX);

    static const char *const bad[] = {
        "18446744073709551616",
        "18446744073709551620",
        "99999999999999999999",
        "184467440737095516150",
        "-1",
        "+1",
        "-0",
        " 1",
        "1 ",
        "",
        "1a",
        "0x10",
        "1.0",
        "1e3",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_error((const char *[]){"UNLOCK", "lk", bad[i], NULL},
                     "thread-id must be an unsigned 64-bit decimal integer");
}
END_TEST

START_TEST(lock_defaults_and_lease)
{
    struct command_args a =
        expect_ok((const char *[]){"LOCK", "lk", "1", NULL});
    ck_assert_int_eq(a.wait_ms, COMMAND_WAIT_FOREVER);
    ck_assert_int_eq(a.lease_ms, COMMAND_LEASE_WATCHDOG);
    a = expect_ok((const char *[]){"lock", "lk", "1", "LEASE", "100", NULL});
    ck_assert_int_eq(a.lease_ms, 100);
    ck_assert_int_eq(a.wait_ms, COMMAND_WAIT_FOREVER);
    a = expect_ok((const char *[]){"lock", "lk", "1", "lease", "-1", NULL});
    ck_assert_int_eq(a.lease_ms, COMMAND_LEASE_WATCHDOG);
    a = expect_ok((const char *[]){"lock", "lk", "1", "LeAsE", "1", NULL});
    ck_assert_int_eq(a.lease_ms, 1);
    a = expect_ok(
        (const char *[]){"lock", "lk", "1", "LEASE", "1000000000000", NULL});
    ck_assert_int_eq(a.lease_ms, COMMAND_MAX_MS);
}
END_TEST

START_TEST(lock_takes_no_wait)
{
    expect_error((const char *[]){"LOCK", "lk", "1", "WAIT", "5", NULL},
                 "syntax error");
    expect_error((const char *[]){"LOCK", "lk", "1", "LEASE", NULL},
                 "syntax error");
    expect_error((const char *[]){"LOCK", "lk", "1", "FOO", "5", NULL},
                 "syntax error");
    expect_error((const char *[]){"LOCK", "lk", "1", "LEASES", "5", NULL},
                 "syntax error");
    expect_error((const char *[]){"LOCK", "lk", "1", "5", "LEASE", NULL},
                 "syntax error");
}
END_TEST

START_TEST(lease_values)
{
    static const char *const bad[] = {
        "0",
        "-2",
        "-0",
        "--1",
        "-",
        "+5",
        "abc",
        "1.5",
        " 1",
        "1 ",
        "",
        "1000000000001",
        "99999999999999999999999",
        "18446744073709551616",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        expect_error((const char *[]){"LOCK", "lk", "1", "LEASE", bad[i], NULL},
                     "LEASE must be -1 or a positive number of milliseconds");
        expect_error(
            (const char *[]){"TRYLOCK", "lk", "1", "LEASE", bad[i], NULL},
            "LEASE must be -1 or a positive number of milliseconds");
    }
}
END_TEST

START_TEST(trylock_defaults_and_options)
{
    struct command_args a =
        expect_ok((const char *[]){"TRYLOCK", "lk", "9", NULL});
    ck_assert_int_eq(a.wait_ms, 0);
    ck_assert_int_eq(a.lease_ms, COMMAND_LEASE_WATCHDOG);
    ck_assert_uint_eq(a.thread_id, 9);
    a = expect_ok((const char *[]){"trylock", "lk", "9", "WAIT", "500", NULL});
    ck_assert_int_eq(a.wait_ms, 500);
    ck_assert_int_eq(a.lease_ms, COMMAND_LEASE_WATCHDOG);
    a = expect_ok((const char *[]){"trylock", "lk", "9", "wait", "-1", NULL});
    ck_assert_int_eq(a.wait_ms, COMMAND_WAIT_FOREVER);
    a = expect_ok((const char *[]){"trylock", "lk", "9", "Wait", "0", NULL});
    ck_assert_int_eq(a.wait_ms, 0);
    a = expect_ok((const char *[]){"trylock", "lk", "9", "LEASE", "30", NULL});
    ck_assert_int_eq(a.wait_ms, 0);
    ck_assert_int_eq(a.lease_ms, 30);
    a = expect_ok((const char *[]){"trylock", "lk", "9", "WAIT", "10", "LEASE",
                                   "20", NULL});
    ck_assert_int_eq(a.wait_ms, 10);
    ck_assert_int_eq(a.lease_ms, 20);
    a = expect_ok((const char *[]){"trylock", "lk", "9", "lease", "20", "wait",
                                   "1000000000000", NULL});
    ck_assert_int_eq(a.wait_ms, COMMAND_MAX_MS);
    ck_assert_int_eq(a.lease_ms, 20);
}
END_TEST

START_TEST(trylock_option_errors)
{
    static const char *const syntax[][5] = {
        {"WAIT", "1", "WAIT", "2"},   {"LEASE", "1", "LEASE", "2"},
        {"wait", "1", "Wait", "2"},   {"WAIT", NULL},
        {"WAIT", "1", "LEASE", NULL}, {"TIMEOUT", "1", NULL},
        {"1", "WAIT", NULL},          {"WAIT", "1", "X", "1"},
    };
    for (size_t i = 0; i < sizeof syntax / sizeof *syntax; i++) {
        const char *list[MAX_WORDS] = {"TRYLOCK", "lk", "1"};
        memcpy(list + 3, syntax[i], sizeof syntax[i]);
        list[7] = NULL;
        expect_error(list, "syntax error");
    }

    static const char *const bad_wait[] = {
        "-2", "-0", "+1", "x", "", "1000000000001", "18446744073709551616",
    };
    for (size_t i = 0; i < sizeof bad_wait / sizeof *bad_wait; i++)
        expect_error(
            (const char *[]){"TRYLOCK", "lk", "1", "WAIT", bad_wait[i], NULL},
            "WAIT must be -1 or a non-negative number of milliseconds");
    /* the first bad value is reported, in argument order */
    expect_error((const char *[]){"TRYLOCK", "lk", "1", "LEASE", "0", "WAIT",
                                  "-5", NULL},
                 "LEASE must be -1 or a positive number of milliseconds");
}
END_TEST

START_TEST(name_checked_before_thread_and_options)
{
    expect_error((const char *[]){"TRYLOCK", "", "x", "FOO", NULL},
                 "lock name must not be empty");
    expect_error((const char *[]){"TRYLOCK", "lk", "x", "FOO", NULL},
                 "thread-id must be an unsigned 64-bit decimal integer");
}
END_TEST

START_TEST(error_text_truncated_to_buffer)
{
    static const char *const list[] = {"LOCK", NULL};
    struct words w;
    words_init(&w, list);
    struct command_args out;
    char err[12];
    memset(err, 'X', sizeof err);
    ck_assert_int_eq(parse_words(&w, &out, err, sizeof err), -EINVAL);
    ck_assert_str_eq(err, "wrong numbe");
}
END_TEST

Suite *command_suite(void)
{
    Suite *s = suite_create("command");
    TCase *table = tcase_create("table");
    tcase_add_test(table, lookup_every_command_any_case);
    tcase_add_test(table, lookup_table_contents);
    tcase_add_test(table, lookup_rejects_near_misses);
    tcase_add_test(table, arity_of_every_command);
    tcase_add_test(table, arity_message_uses_table_name);
    suite_add_tcase(s, table);

    TCase *args = tcase_create("arguments");
    tcase_add_test(args, syntax_none);
    tcase_add_test(args, syntax_optional_text);
    tcase_add_test(args, syntax_auth_password_or_username_and_password);
    tcase_add_test(args, lock_name_commands_are_those_with_a_name_argument);
    tcase_add_test(args, syntax_clientid);
    tcase_add_test(args, syntax_client_heartbeat);
    tcase_add_test(args, syntax_name);
    tcase_add_test(args, name_may_hold_nul_bytes);
    tcase_add_test(args, kind_word);
    tcase_add_test(args, syntax_name_thread);
    tcase_add_test(args, thread_id_range);
    tcase_add_test(args, lock_defaults_and_lease);
    tcase_add_test(args, lock_takes_no_wait);
    tcase_add_test(args, lease_values);
    tcase_add_test(args, trylock_defaults_and_options);
    tcase_add_test(args, trylock_option_errors);
    tcase_add_test(args, name_checked_before_thread_and_options);
    tcase_add_test(args, error_text_truncated_to_buffer);
    tcase_add_test(args, syntax_client_subcommands);
    tcase_add_test(args, syntax_hello);
    tcase_add_test(args, syntax_select_and_command);
    tcase_add_test(args, syntax_channels);
    tcase_add_test(args, syntax_mlock_and_munlock);
    suite_add_tcase(s, args);
    return s;
}
