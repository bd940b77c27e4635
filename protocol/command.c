/*
 * command.c - the command table built from COMMAND_LIST, and the decoding
 * of command arguments into a struct command_args.
 *
 * Every rule a well-formed argument follows (name length, thread-id
 * range, which options a command takes, WAIT and LEASE ranges) is checked
 * here and nowhere else, so handlers never see a bad value. Nothing here
 * knows about clients or Redis.
 */
#include "command.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "reply.h"

static const struct command command_table[COMMAND_COUNT] = {
#define COMMAND_ENTRY(id, name, handler, min, max, syntax, flags)              \
    [CMD_##id] = {CMD_##id, name, min, max, syntax, flags},
    COMMAND_LIST(COMMAND_ENTRY)
#undef COMMAND_ENTRY
};

/* Case-insensitive match of a client's word against a table name. */
static bool word_is(const char *table_name, const char *word, size_t len)
{
    /* a NUL inside word differs from the table name's byte there */
    return strlen(table_name) == len && strncasecmp(table_name, word, len) == 0;
}

const struct command *command_lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        if (word_is(command_table[i].name, name, len))
            return &command_table[i];
    }
    return NULL;
}

const struct command *command_by_id(enum command_id id)
{
    return &command_table[id];
}

bool command_has_lock_name(const struct command *cmd)
{
    switch (cmd->syntax) {
    case SYNTAX_NONE:
    case SYNTAX_OPTIONAL_TEXT:
    case SYNTAX_CLIENTID:
    case SYNTAX_AUTH:
    case SYNTAX_CLIENT:
    case SYNTAX_HELLO:
    case SYNTAX_SELECT:
    case SYNTAX_COMMAND:
    case SYNTAX_CHANNELS:
    case SYNTAX_LOCKS:
        return false;
    case SYNTAX_NAME:
    case SYNTAX_NAME_KIND:
    case SYNTAX_NAME_THREAD:
    case SYNTAX_LOCK:
    case SYNTAX_TRYLOCK:
    case SYNTAX_NAME_COUNT:
    case SYNTAX_NAME_DELTA:
    case SYNTAX_ACQUIRE:
    case SYNTAX_RELEASE:
    case SYNTAX_AWAIT:
    case SYNTAX_PERMITS:
    case SYNTAX_NAMES:
        return true;
    }
    return false;
}

/* Options after a command's fixed arguments, as bits of the set a syntax
 * allows. A kind word and EXPIRABLE are words alone; the others take a
 * value. */
enum command_option {
    OPTION_WAIT = 0x1,
    OPTION_LEASE = 0x2,
    OPTION_KIND = 0x4,
    OPTION_PERMITS = 0x8,
    OPTION_EXPIRABLE = 0x10,
    OPTION_ID = 0x20,
    OPTION_HELD = 0x40,
    OPTION_WITHNAMES = 0x80,
};

/* What an option's value is. */
enum option_value { VALUE_MS, VALUE_COUNT, VALUE_ID, VALUE_NONE };

static const struct option_spec {
    const char *name;
    enum command_option option;
    enum option_value value;
    int64_t min; /* VALUE_MS: the smallest besides -1; VALUE_COUNT's */
    const char *error;
} option_specs[] = {
    {"wait", OPTION_WAIT, VALUE_MS, 0,
     "WAIT must be -1 or a non-negative number of milliseconds"},
    {"lease", OPTION_LEASE, VALUE_MS, 1,
     "LEASE must be -1 or a positive number of milliseconds"},
    {"permits", OPTION_PERMITS, VALUE_COUNT, 1,
     "PERMITS must be a number from 1 to 2147483647"},
    {"id", OPTION_ID, VALUE_ID, 0, "ID must be a permit id, 32 hex digits"},
    {"expirable", OPTION_EXPIRABLE, VALUE_NONE, 0, NULL},
    {"held", OPTION_HELD, VALUE_NONE, 0, NULL},
    {"withnames", OPTION_WITHNAMES, VALUE_NONE, 0, NULL},
};

static int parse_error(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message is one line whatever a word echoed from the request holds,
 * as the error reply it becomes (reply_one_line). */
static int parse_error(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    reply_one_line(err, strlen(err));
    return -EINVAL;
}

/* Plain decimal digits only: no sign, no space, no overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *value)
{
    if (len == 0)
        return -EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned digit = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return -ERANGE;
        v = v * 10 + digit;
    }
    *value = v;
    return 0;
}

/* A WAIT or LEASE value: -1, or 0..COMMAND_MAX_MS. */
static int parse_ms(const char *s, size_t len, int64_t *value)
{
    if (len == 2 && s[0] == '-' && s[1] == '1') {
        *value = -1;
        return 0;
    }
    uint64_t v;
    int err = parse_u64(s, len, &v);
    if (err != 0)
        return err;
    if (v > (uint64_t)COMMAND_MAX_MS)
        return -ERANGE;
    *value = (int64_t)v;
    return 0;
}

static int parse_name(const char *name, size_t len, size_t max_name_len,
                      struct command_args *out, char *err, size_t err_size)
{
    if (len == 0)
        return parse_error(err, err_size, "lock name must not be empty");
    if (len > max_name_len)
        return parse_error(err, err_size, "lock name longer than %zu bytes",
                           max_name_len);
    out->name = name;
    out->name_len = len;
    return 0;
}

static int parse_thread_id(const char *s, size_t len, struct command_args *out,
                           char *err, size_t err_size)
{
    if (parse_u64(s, len, &out->thread_id) != 0)
        return parse_error(
            err, err_size,
            "thread-id must be an unsigned 64-bit decimal integer");
    return 0;
}

/* The kind words, by enum command_kind (the plain lock has none). */
static const char *const kind_words[] = {
    [COMMAND_KIND_FAIR] = "fair",
    [COMMAND_KIND_READ] = "read",
    [COMMAND_KIND_WRITE] = "write",
    [COMMAND_KIND_FENCED] = "fenced",
};

static enum command_kind find_kind(const char *word, size_t len)
{
    for (size_t i = COMMAND_KIND_FAIR;
         i < sizeof kind_words / sizeof *kind_words; i++) {
        if (word_is(kind_words[i], word, len))
            return (enum command_kind)i;
    }
    return COMMAND_KIND_PLAIN;
}

static const struct option_spec *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof option_specs / sizeof *option_specs; i++) {
        if (word_is(option_specs[i].name, name, len))
            return &option_specs[i];
    }
    return NULL;
}

/* A count: plain digits, from min to COMMAND_MAX_COUNT; with a '-' in
 * front when negative allows it. */
static int parse_count(const char *s, size_t len, int64_t min, bool negative,
                       int64_t *value)
{
    bool minus = negative && len > 1 && s[0] == '-';
    uint64_t v;

    if (parse_u64(s + minus, len - minus, &v) != 0 ||
        v > (uint64_t)COMMAND_MAX_COUNT)
        return -EINVAL;
    *value = minus ? -(int64_t)v : (int64_t)v;
    return *value < min ? -EINVAL : 0;
}

static bool is_permit_id(const char *s, size_t len)
{
    if (len != COMMAND_PERMIT_ID_LEN)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
              (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return true;
}

/* Stores an option's value; 0 or -EINVAL. */
static int option_value(const struct option_spec *spec, const char *s,
                        size_t len, struct command_args *out)
{
    int64_t v;

    switch (spec->value) {
    case VALUE_MS:
        if (parse_ms(s, len, &v) != 0 || (v != -1 && v < spec->min))
            return -EINVAL;
        if (spec->option == OPTION_WAIT)
            out->wait_ms = v;
        else
            out->lease_ms = v;
        return 0;
    case VALUE_COUNT:
        if (parse_count(s, len, spec->min, false, &out->amount) != 0)
            return -EINVAL;
        return 0;
    case VALUE_ID:
        if (!is_permit_id(s, len))
            return -EINVAL;
        out->permit_id = s;
        return 0;
    case VALUE_NONE:
        out->expirable |= spec->option == OPTION_EXPIRABLE;
        out->held |= spec->option == OPTION_HELD;
        out->with_names |= spec->option == OPTION_WITHNAMES;
        return 0;
    }
    return -EINVAL;
}

/* Decodes what follows the fixed arguments from argv[first]: words (a
 * kind, EXPIRABLE) and "OPTION value" pairs, in any order, each at most
 * once; *seen gets the options given. */
static int parse_options(size_t first, size_t argc, char *const *argv,
                         const size_t *argv_len, unsigned allowed,
                         unsigned *seen, struct command_args *out, char *err,
                         size_t err_size)
{
    *seen = 0;
    for (size_t i = first; i < argc; i++) {
        enum command_kind kind = find_kind(argv[i], argv_len[i]);
        if (kind != COMMAND_KIND_PLAIN && (allowed & OPTION_KIND)) {
            if (out->kind != COMMAND_KIND_PLAIN)
                return parse_error(err, err_size,
                                   "syntax error: one lock kind at most");
            out->kind = kind;
            continue;
        }
        const struct option_spec *spec = find_option(argv[i], argv_len[i]);
        bool pair = spec != NULL && spec->value != VALUE_NONE;
        if (spec == NULL || !(allowed & spec->option) ||
            (*seen & spec->option) || (pair && i + 1 == argc))
            return parse_error(err, err_size, "syntax error");
        *seen |= spec->option;
        if (pair && option_value(spec, argv[i + 1], argv_len[i + 1], out) != 0)
            return parse_error(err, err_size, "%s", spec->error);
        if (!pair)
            option_value(spec, NULL, 0, out);
        i += pair;
    }
    return 0;
}

/* The semaphores' and latch's commands after <name>; ACQUIRE's options
 * go together as Redisson's do: a lease is an expirable permit's, and an
 * expirable permit is one at a time (its id names it). */
static int parse_counting(const struct command *cmd, size_t argc,
                          char *const *argv, const size_t *argv_len,
                          struct command_args *out, char *err, size_t err_size)
{
    static const unsigned allowed[] = {
        [SYNTAX_ACQUIRE] =
            OPTION_PERMITS | OPTION_WAIT | OPTION_EXPIRABLE | OPTION_LEASE,
        [SYNTAX_RELEASE] = OPTION_PERMITS | OPTION_ID,
        [SYNTAX_AWAIT] = OPTION_WAIT,
        [SYNTAX_PERMITS] = OPTION_HELD,
    };
    unsigned seen;

    if (cmd->syntax == SYNTAX_NAME_COUNT || cmd->syntax == SYNTAX_NAME_DELTA) {
        if (parse_count(argv[2], argv_len[2],
                        cmd->syntax == SYNTAX_NAME_COUNT ? 0
                                                         : -COMMAND_MAX_COUNT,
                        cmd->syntax == SYNTAX_NAME_DELTA, &out->amount) != 0)
            return parse_error(err, err_size,
                               cmd->syntax == SYNTAX_NAME_COUNT
                                   ? "the count must be a number from 0 to "
                                     "2147483647"
                                   : "the permits must be a number from "
                                     "-2147483647 to 2147483647");
        return 0;
    }
    if (cmd->syntax == SYNTAX_ACQUIRE || cmd->syntax == SYNTAX_AWAIT)
        out->wait_ms = COMMAND_WAIT_FOREVER; /* they block, as LOCK */
    int rc = parse_options(2, argc, argv, argv_len, allowed[cmd->syntax], &seen,
                           out, err, err_size);
    if (rc != 0)
        return rc;
    if ((seen & OPTION_LEASE) && !(seen & OPTION_EXPIRABLE))
        return parse_error(err, err_size,
                           "syntax error: LEASE is an EXPIRABLE permit's");
    if ((seen & OPTION_PERMITS) && (seen & (OPTION_EXPIRABLE | OPTION_ID)))
        return parse_error(err, err_size,
                           "syntax error: an expirable permit is one at a "
                           "time (each has its id)");
    return 0;
}

/* CLIENTID [<id> [SECRET <secret> [RESUME]]]: the id is checked by its
 * handler. */
static int parse_clientid(size_t argc, char *const *argv,
                          const size_t *argv_len, struct command_args *out,
                          char *err, size_t err_size)
{
    if (argc >= 2) {
        out->name = argv[1];
        out->name_len = argv_len[1];
    }
    if (argc == 2 || argc == 1)
        return 0;
    if (argc < 4 || !word_is("secret", argv[2], argv_len[2]) ||
        (argc == 5 && !word_is("resume", argv[4], argv_len[4])))
        return parse_error(err, err_size, "syntax error");
    out->resume = argc == 5;
    if (argv_len[3] < COMMAND_SECRET_MIN || argv_len[3] > COMMAND_SECRET_MAX)
        return parse_error(err, err_size, "SECRET must be %d to %d bytes",
                           COMMAND_SECRET_MIN, COMMAND_SECRET_MAX);
    out->secret = argv[3];
    out->secret_len = argv_len[3];
    return 0;
}

/* A signed decimal, as Redis reads an integer argument. */
static int parse_i64(const char *s, size_t len, int64_t *value)
{
    bool negative = len > 0 && s[0] == '-';
    uint64_t v;

    if (parse_u64(s + negative, len - negative, &v) != 0 ||
        v > (uint64_t)INT64_MAX)
        return -ERANGE;
    *value = negative ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* The subcommands, with their arity counting the command and its
 * subcommand, and the name Redis gives them ("client|setname"). */
static const struct subcommand_spec {
    enum command_id parent;
    const char *word;
    enum command_sub sub;
    int min_argc, max_argc;
    const char *full_name;
} subcommand_specs[] = {
    {CMD_CLIENT, "heartbeat", SUB_CLIENT_HEARTBEAT, 3, 3, "client|heartbeat"},
    {CMD_CLIENT, "setname", SUB_CLIENT_SETNAME, 3, 3, "client|setname"},
    {CMD_CLIENT, "getname", SUB_CLIENT_GETNAME, 2, 2, "client|getname"},
    {CMD_CLIENT, "id", SUB_CLIENT_ID, 2, 2, "client|id"},
    {CMD_CLIENT, "setinfo", SUB_CLIENT_SETINFO_LIB_NAME, 4, 4,
     "client|setinfo"},
    {CMD_CLIENT, "info", SUB_CLIENT_INFO, 2, 2, "client|info"},
    {CMD_CLIENT, "list", SUB_CLIENT_LIST, 2, 2, "client|list"},
    {CMD_COMMAND, "count", SUB_COMMAND_COUNT, 2, 2, "command|count"},
    {CMD_COMMAND, "list", SUB_COMMAND_LIST, 2, 2, "command|list"},
    {CMD_COMMAND, "info", SUB_COMMAND_INFO, 2, COMMAND_ARGC_ANY,
     "command|info"},
    {CMD_COMMAND, "docs", SUB_COMMAND_DOCS, 2, COMMAND_ARGC_ANY,
     "command|docs"},
};

#define SUBCOMMAND_COUNT (sizeof subcommand_specs / sizeof *subcommand_specs)

const char *command_sub_name(enum command_sub sub)
{
    if (sub == SUB_CLIENT_SETINFO_LIB_VER)
        sub = SUB_CLIENT_SETINFO_LIB_NAME;
    for (size_t i = 0; i < SUBCOMMAND_COUNT; i++)
        if (subcommand_specs[i].sub == sub)
            return subcommand_specs[i].full_name;
    return NULL;
}

/* Whether argc is within min..max (max COMMAND_ARGC_ANY: no bound). */
static bool arity_ok(size_t argc, int min_argc, int max_argc)
{
    return argc >= (size_t)min_argc &&
           (max_argc == COMMAND_ARGC_ANY || argc <= (size_t)max_argc);
}

/* argv[1] among cmd's subcommands, with its arity, in Redis's words. */
static int parse_subcommand(const struct command *cmd, size_t argc,
                            char *const *argv, const size_t *argv_len,
                            struct command_args *out, char *err,
                            size_t err_size)
{
    for (size_t i = 0; i < SUBCOMMAND_COUNT; i++) {
        const struct subcommand_spec *spec = &subcommand_specs[i];

        if (spec->parent != cmd->id ||
            !word_is(spec->word, argv[1], argv_len[1]))
            continue;
        if (!arity_ok(argc, spec->min_argc, spec->max_argc))
            return parse_error(err, err_size,
                               "wrong number of arguments for '%s' command",
                               spec->full_name);
        out->sub = spec->sub;
        return 0;
    }
    return parse_error(err, err_size, "unknown subcommand '%.*s'. Try %s HELP.",
                       (int)(argv_len[1] < 32 ? argv_len[1] : 32), argv[1],
                       cmd->id == CMD_CLIENT ? "CLIENT" : "COMMAND");
}

/* Redis's rule for a client's name and library: printable ASCII, no
 * space, so that CLIENT LIST stays one line of words. what: the error's
 * subject. */
static int parse_client_attr(const char *s, size_t len, const char *what,
                             struct command_args *out, char *err,
                             size_t err_size)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < '!' || s[i] > '~')
            return parse_error(err, err_size,
                               "%s cannot contain spaces, newlines or special "
                               "characters.",
                               what);
    out->value = s;
    out->value_len = len;
    return 0;
}

/* CLIENT HEARTBEAT <ms> | SETNAME <name> | GETNAME | ID | SETINFO
 * <LIB-NAME|LIB-VER> <value> | INFO | LIST. */
static int parse_client(const struct command *cmd, size_t argc,
                        char *const *argv, const size_t *argv_len,
                        struct command_args *out, char *err, size_t err_size)
{
    uint64_t ms;
    int rc = parse_subcommand(cmd, argc, argv, argv_len, out, err, err_size);

    if (rc != 0)
        return rc;
    if (out->sub == SUB_CLIENT_SETNAME)
        return parse_client_attr(argv[2], argv_len[2], "Client names", out, err,
                                 err_size);
    if (out->sub == SUB_CLIENT_SETINFO_LIB_NAME) {
        if (word_is("lib-ver", argv[2], argv_len[2]))
            out->sub = SUB_CLIENT_SETINFO_LIB_VER;
        else if (!word_is("lib-name", argv[2], argv_len[2]))
            return parse_error(err, err_size, "Unrecognized option '%.*s'",
                               (int)(argv_len[2] < 32 ? argv_len[2] : 32),
                               argv[2]);
        return parse_client_attr(
            argv[3], argv_len[3],
            out->sub == SUB_CLIENT_SETINFO_LIB_VER ? "lib-ver" : "lib-name",
            out, err, err_size);
    }
    if (out->sub != SUB_CLIENT_HEARTBEAT)
        return 0;
    if (parse_u64(argv[2], argv_len[2], &ms) != 0 ||
        (ms != 0 &&
         (ms < COMMAND_HEARTBEAT_MIN_MS || ms > COMMAND_HEARTBEAT_MAX_MS)))
        return parse_error(err, err_size,
                           "HEARTBEAT must be 0 (off) or %d to %d "
                           "milliseconds",
                           COMMAND_HEARTBEAT_MIN_MS, COMMAND_HEARTBEAT_MAX_MS);
    out->heartbeat_ms = (int64_t)ms;
    return 0;
}

/* HELLO [protover [AUTH <user> <pass>] [SETNAME <name>]], options in any
 * order, as Redis 7 parses it (src/networking.c, helloCommand): a version
 * other than 2 or 3 is refused (-NOPROTO, by the handler) before the
 * options are looked at. */
static int parse_hello(size_t argc, char *const *argv, const size_t *argv_len,
                       struct command_args *out, char *err, size_t err_size)
{
    if (argc == 1)
        return 0;
    if (parse_i64(argv[1], argv_len[1], &out->protocol) != 0)
        return parse_error(err, err_size,
                           "Protocol version is not an integer or out of "
                           "range");
    if (out->protocol != 2 && out->protocol != 3) {
        out->protocol = COMMAND_PROTOCOL_UNSUPPORTED;
        return 0;
    }
    for (size_t i = 2; i < argc; i++) {
        size_t more = argc - 1 - i;
        int rc = 0;

        if (word_is("auth", argv[i], argv_len[i]) && more >= 2) {
            out->name = argv[i + 1];
            out->name_len = argv_len[i + 1];
            out->password = argv[i + 2];
            out->password_len = argv_len[i + 2];
            i += 2;
        } else if (word_is("setname", argv[i], argv_len[i]) && more >= 1) {
            rc = parse_client_attr(argv[i + 1], argv_len[i + 1], "Client names",
                                   out, err, err_size);
            i++;
        } else {
            return parse_error(
                err, err_size, "Syntax error in HELLO option '%.*s'",
                (int)(argv_len[i] < 32 ? argv_len[i] : 32), argv[i]);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* SELECT <index>: rlockd has one database, 0, as Redis Cluster. */
static int parse_select(char *const *argv, const size_t *argv_len, char *err,
                        size_t err_size)
{
    int64_t index;

    if (parse_i64(argv[1], argv_len[1], &index) != 0)
        return parse_error(err, err_size,
                           "value is not an integer or out of range");
    if (index != 0)
        return parse_error(err, err_size, "DB index is out of range");
    return 0;
}

/* The words after the command (or its subcommand): channels, names. */
static void take_list(size_t first, size_t argc, char *const *argv,
                      const size_t *argv_len, struct command_args *out)
{
    out->list = argv + first;
    out->list_len = argv_len + first;
    out->list_count = argc - first;
}

/*
 * MLOCK and MUNLOCK: <tid> <name> [<name> ...], MLOCK's WAIT and LEASE
 * pairs after the names (a name list whose last-but-one word is WAIT or
 * LEASE ends with that option). MLOCK waits for ever by default, as LOCK.
 */
static int parse_names(const struct command *cmd, size_t argc,
                       char *const *argv, const size_t *argv_len,
                       size_t max_name_len, struct command_args *out, char *err,
                       size_t err_size)
{
    size_t end = argc;
    unsigned seen;
    int rc = parse_thread_id(argv[1], argv_len[1], out, err, err_size);

    if (rc != 0)
        return rc;
    if (cmd->id == CMD_MLOCK) {
        out->wait_ms = COMMAND_WAIT_FOREVER;
        for (int pairs = 0; pairs < 2 && end >= 5; pairs++) {
            const struct option_spec *spec =
                find_option(argv[end - 2], argv_len[end - 2]);
            if (spec == NULL || spec->value != VALUE_MS)
                break;
            end -= 2;
        }
        rc =
            parse_options(end, argc, argv, argv_len, OPTION_WAIT | OPTION_LEASE,
                          &seen, out, err, err_size);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 2; i < end; i++)
        if ((rc = parse_name(argv[i], argv_len[i], max_name_len, out, err,
                             err_size)) != 0)
            return rc;
    take_list(2, end, argv, argv_len, out);
    out->name = argv[2];
    out->name_len = argv_len[2];
    return 0;
}

/* LOCKS [MATCH <glob>] [COUNT <n>] [OFFSET <n>], in any order, each once;
 * COUNT from 1 (its bound is the server's), OFFSET from 0. */
static int parse_locks(size_t argc, char *const *argv, const size_t *argv_len,
                       struct command_args *out, char *err, size_t err_size)
{
    bool seen[3] = {false, false, false};

    for (size_t i = 1; i < argc; i += 2) {
        size_t which = word_is("match", argv[i], argv_len[i])    ? 0
                       : word_is("count", argv[i], argv_len[i])  ? 1
                       : word_is("offset", argv[i], argv_len[i]) ? 2
                                                                 : 3;
        if (which == 3 || seen[which] || i + 1 == argc)
            return parse_error(err, err_size, "syntax error");
        seen[which] = true;
        if (which == 0) {
            out->value = argv[i + 1];
            out->value_len = argv_len[i + 1];
        } else if (parse_i64(argv[i + 1], argv_len[i + 1],
                             which == 1 ? &out->count : &out->offset) != 0 ||
                   (which == 1 ? out->count < 1 : out->offset < 0)) {
            return parse_error(err, err_size,
                               which == 1 ? "COUNT must be a positive number"
                                          : "OFFSET must be a number from 0");
        }
    }
    return 0;
}

int command_parse_args(const struct command *cmd, size_t argc,
                       char *const *argv, const size_t *argv_len,
                       size_t max_name_len, struct command_args *out, char *err,
                       size_t err_size)
{
    if (!arity_ok(argc, cmd->min_argc, cmd->max_argc))
        return parse_error(err, err_size,
                           "wrong number of arguments for '%s' command",
                           cmd->name);
    *out = (struct command_args){
        .wait_ms = cmd->syntax == SYNTAX_LOCK ? COMMAND_WAIT_FOREVER : 0,
        .lease_ms = COMMAND_LEASE_WATCHDOG,
    };
    if (cmd->syntax == SYNTAX_NONE)
        return 0;
    if (cmd->syntax == SYNTAX_CLIENTID)
        return parse_clientid(argc, argv, argv_len, out, err, err_size);
    if (cmd->syntax == SYNTAX_CLIENT)
        return parse_client(cmd, argc, argv, argv_len, out, err, err_size);
    if (cmd->syntax == SYNTAX_HELLO)
        return parse_hello(argc, argv, argv_len, out, err, err_size);
    if (cmd->syntax == SYNTAX_SELECT)
        return parse_select(argv, argv_len, err, err_size);
    if (cmd->syntax == SYNTAX_CHANNELS) {
        take_list(1, argc, argv, argv_len, out);
        return 0;
    }
    if (cmd->syntax == SYNTAX_LOCKS)
        return parse_locks(argc, argv, argv_len, out, err, err_size);
    if (cmd->syntax == SYNTAX_NAMES)
        return parse_names(cmd, argc, argv, argv_len, max_name_len, out, err,
                           err_size);
    if (cmd->syntax == SYNTAX_COMMAND) {
        int rc = argc == 1 ? 0
                           : parse_subcommand(cmd, argc, argv, argv_len, out,
                                              err, err_size);
        if (rc == 0 && argc > 1)
            take_list(2, argc, argv, argv_len, out);
        return rc;
    }
    if (cmd->syntax == SYNTAX_OPTIONAL_TEXT) {
        if (argc == 2) {
            out->name = argv[1];
            out->name_len = argv_len[1];
        }
        return 0;
    }
    if (cmd->syntax == SYNTAX_AUTH) {
        if (argc == 3) {
            out->name = argv[1];
            out->name_len = argv_len[1];
        }
        out->password = argv[argc - 1];
        out->password_len = argv_len[argc - 1];
        return 0;
    }

    unsigned seen;
    int rc = parse_name(argv[1], argv_len[1], max_name_len, out, err, err_size);
    if (rc != 0 || cmd->syntax == SYNTAX_NAME)
        return rc;
    if (cmd->syntax == SYNTAX_NAME_COUNT || cmd->syntax == SYNTAX_NAME_DELTA ||
        cmd->syntax == SYNTAX_ACQUIRE || cmd->syntax == SYNTAX_RELEASE ||
        cmd->syntax == SYNTAX_AWAIT || cmd->syntax == SYNTAX_PERMITS)
        return parse_counting(cmd, argc, argv, argv_len, out, err, err_size);
    if (cmd->syntax == SYNTAX_NAME_KIND)
        return parse_options(2, argc, argv, argv_len,
                             OPTION_KIND |
                                 (cmd->id == CMD_OWNERS ? OPTION_WITHNAMES : 0),
                             &seen, out, err, err_size);
    rc = parse_thread_id(argv[2], argv_len[2], out, err, err_size);
    if (rc != 0)
        return rc;
    unsigned allowed = cmd->syntax == SYNTAX_TRYLOCK
                           ? OPTION_WAIT | OPTION_LEASE
                       : cmd->syntax == SYNTAX_LOCK ? OPTION_LEASE
                                                    : 0;
    return parse_options(3, argc, argv, argv_len, allowed | OPTION_KIND, &seen,
                         out, err, err_size);
}
