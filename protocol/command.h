/*
 * command.h - the command table: every command rlockd understands, its
 * arity and argument syntax, listed once.
 *
 * COMMAND_LIST is the single list. protocol/command.c turns it into the
 * lookup table; server/front/commands.c into the handler table. This
 * file also validates and decodes arguments (names, thread-ids, WAIT and
 * LEASE options) into a struct command_args, so that handlers receive
 * only well-formed values. Nothing here knows about clients or Redis.
 */
#ifndef RLOCKD_COMMAND_H
#define RLOCKD_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HELLO's version when it is neither 2 nor 3 (struct command_args). */
#define COMMAND_PROTOCOL_UNSUPPORTED (-1)

/* Arguments each command takes, after its name. */
enum command_syntax {
    SYNTAX_NONE,          /* QUIT */
    SYNTAX_OPTIONAL_TEXT, /* PING [msg], INFO [section] */
    SYNTAX_CLIENTID,      /* CLIENTID [<id> [SECRET <secret> [RESUME]]] */
    SYNTAX_AUTH,          /* AUTH [username] <password> */
    SYNTAX_NAME,          /* TOKEN: <name> */
    SYNTAX_NAME_KIND,   /* FORCEUNLOCK, ISLOCKED, PTTL, OWNERS: <name> [kind] */
    SYNTAX_NAME_THREAD, /* UNLOCK, ISHELD, HOLDCOUNT: <name> <thread-id> [kind] */
    SYNTAX_LOCK,        /* <name> <thread-id> [kind] [LEASE ms] */
    SYNTAX_TRYLOCK,     /* <name> <thread-id> [kind] [WAIT ms] [LEASE ms] */
    SYNTAX_CLIENT,      /* CLIENT <subcommand> [...] (enum command_sub) */
    SYNTAX_HELLO,       /* HELLO [ver [AUTH <user> <pass>] [SETNAME <name>]] */
    SYNTAX_SELECT,      /* SELECT <index>: 0, the one database */
    SYNTAX_COMMAND,     /* COMMAND [COUNT | LIST | INFO .. | DOCS ..] */
    SYNTAX_CHANNELS,    /* SUBSCRIBE and its kin: [<channel>...] */
    SYNTAX_NAME_COUNT, /* SETPERMITS, LATCHSET: <name> <n>, n >= 0 */
    SYNTAX_NAME_DELTA, /* ADDPERMITS: <name> <n>, n of either sign */
    /* ACQUIRE: <name> [PERMITS n] [WAIT ms] [EXPIRABLE [LEASE ms]] */
    SYNTAX_ACQUIRE,
    SYNTAX_RELEASE, /* RELEASE: <name> [PERMITS n | ID <permit-id>] */
    SYNTAX_AWAIT,   /* AWAIT: <name> [WAIT ms] */
    SYNTAX_PERMITS, /* PERMITS: <name> [HELD] */
    SYNTAX_NAMES,   /* MLOCK, MUNLOCK: <tid> <name>... [options] */
    SYNTAX_LOCKS,   /* LOCKS [MATCH <glob>] [COUNT n] [OFFSET n] */
};

/* The subcommands of CLIENT and COMMAND, as their parser decodes them. */
enum command_sub {
    SUB_NONE,
    SUB_CLIENT_HEARTBEAT,
    SUB_CLIENT_SETNAME,
    SUB_CLIENT_GETNAME,
    SUB_CLIENT_ID,
    SUB_CLIENT_SETINFO_LIB_NAME, /* CLIENT SETINFO LIB-NAME <value> */
    SUB_CLIENT_SETINFO_LIB_VER,  /* CLIENT SETINFO LIB-VER <value> */
    SUB_CLIENT_INFO,
    SUB_CLIENT_LIST,
    SUB_COMMAND_COUNT,
    SUB_COMMAND_LIST,
    SUB_COMMAND_INFO,
    SUB_COMMAND_DOCS,
};

/* command flags */
/* Waits until nothing else of its connection is in flight, and holds later
 * commands back until it is answered (it may wait for a lock). */
#define CMD_ALONE 0x1
/* Allowed before AUTH, and to every user whatever its permissions. */
#define CMD_BEFORE_AUTH 0x2
/* Allowed on a connection subscribed to its lock-lost channel (the
 * commands Redis allows in RESP2's subscribed mode). */
#define CMD_SUBSCRIBED 0x4

/* A max_argc: any number of arguments (SUBSCRIBE's channels). */
#define COMMAND_ARGC_ANY (-1)

/*
 * One row per command: its id, its name, its handler (the server's
 * command_<handler> function), its arity counting the name, its
 * argument syntax and flags.
 */
/* clang-format off */
#define COMMAND_LIST(X)                                                          \
    X(LOCK,        "lock",        request,     3, 6, SYNTAX_LOCK,          CMD_ALONE) \
    X(TRYLOCK,     "trylock",     request,     3, 8, SYNTAX_TRYLOCK,       CMD_ALONE) \
    X(UNLOCK,      "unlock",      request,     3, 4, SYNTAX_NAME_THREAD,   0)         \
    X(FORCEUNLOCK, "forceunlock", request,     2, 3, SYNTAX_NAME_KIND,     0)         \
    X(ISLOCKED,    "islocked",    request,     2, 3, SYNTAX_NAME_KIND,     0)         \
    X(ISHELD,      "isheld",      request,     3, 4, SYNTAX_NAME_THREAD,   0)         \
    X(HOLDCOUNT,   "holdcount",   request,     3, 4, SYNTAX_NAME_THREAD,   0)         \
    X(PTTL,        "pttl",        request,     2, 3, SYNTAX_NAME_KIND,     0)         \
    X(OWNERS,      "owners",      request,     2, 4, SYNTAX_NAME_KIND,     0)         \
    X(TOKEN,       "token",       request,     2, 2, SYNTAX_NAME,          0)         \
    X(SETPERMITS,  "setpermits",  request,     3, 3, SYNTAX_NAME_COUNT,    0)         \
    X(ADDPERMITS,  "addpermits",  request,     3, 3, SYNTAX_NAME_DELTA,    0)         \
    X(PERMITS,     "permits",     request,     2, 3, SYNTAX_PERMITS,       0)         \
    X(ACQUIRE,     "acquire",     request,     2, 8, SYNTAX_ACQUIRE,       CMD_ALONE) \
    X(RELEASE,     "release",     request,     2, 4, SYNTAX_RELEASE,       0)         \
    X(LATCHSET,    "latchset",    request,     3, 3, SYNTAX_NAME_COUNT,    0)         \
    X(COUNTDOWN,   "countdown",   request,     2, 2, SYNTAX_NAME,          0)         \
    X(LATCHCOUNT,  "latchcount",  request,     2, 2, SYNTAX_NAME,          0)         \
    X(AWAIT,       "await",       request,     2, 4, SYNTAX_AWAIT,         CMD_ALONE) \
    X(MLOCK,       "mlock",       multilock,   3, COMMAND_ARGC_ANY, SYNTAX_NAMES, CMD_ALONE) \
    X(MUNLOCK,     "munlock",     multilock,   3, COMMAND_ARGC_ANY, SYNTAX_NAMES, 0)         \
    X(LOCKS,       "locks",       locks,       1, 7, SYNTAX_LOCKS,         0)         \
    X(CLIENTID,    "clientid",    clientid,    1, 5, SYNTAX_CLIENTID,      CMD_ALONE) \
    X(CLIENT,      "client",      client,      2, 4, SYNTAX_CLIENT,        0)         \
    X(PING,        "ping",        ping,        1, 2, SYNTAX_OPTIONAL_TEXT, CMD_BEFORE_AUTH | CMD_SUBSCRIBED) \
    X(INFO,        "info",        info,        1, 2, SYNTAX_OPTIONAL_TEXT, 0)         \
    X(HEALTH,      "health",      health,      1, 1, SYNTAX_NONE,          CMD_BEFORE_AUTH) \
    X(AUTH,        "auth",        auth,        2, 3, SYNTAX_AUTH,          CMD_BEFORE_AUTH) \
    X(QUIT,        "quit",        quit,        1, 1, SYNTAX_NONE,          CMD_BEFORE_AUTH | CMD_SUBSCRIBED) \
    /* what Redis clients send besides commands: connection and pub/sub */ \
    X(HELLO,        "hello",        hello,       1, 7, SYNTAX_HELLO,         CMD_BEFORE_AUTH) \
    X(SELECT,       "select",       select,      2, 2, SYNTAX_SELECT,        0) \
    X(ECHO,         "echo",         echo,        2, 2, SYNTAX_OPTIONAL_TEXT, 0) \
    X(COMMAND,      "command",      command,     1, COMMAND_ARGC_ANY, SYNTAX_COMMAND, 0) \
    X(TIME,         "time",         time,        1, 1, SYNTAX_NONE,          0) \
    X(RESET,        "reset",        reset,       1, 1, SYNTAX_NONE,          CMD_BEFORE_AUTH | CMD_SUBSCRIBED | CMD_ALONE) \
    X(SUBSCRIBE,    "subscribe",    subscribe,   2, COMMAND_ARGC_ANY, SYNTAX_CHANNELS, CMD_SUBSCRIBED | CMD_ALONE) \
    X(UNSUBSCRIBE,  "unsubscribe",  unsubscribe, 1, COMMAND_ARGC_ANY, SYNTAX_CHANNELS, CMD_SUBSCRIBED) \
    X(PSUBSCRIBE,   "psubscribe",   subscribe,   2, COMMAND_ARGC_ANY, SYNTAX_CHANNELS, CMD_SUBSCRIBED) \
    X(PUNSUBSCRIBE, "punsubscribe", unsubscribe, 1, COMMAND_ARGC_ANY, SYNTAX_CHANNELS, CMD_SUBSCRIBED) \
    X(SSUBSCRIBE,   "ssubscribe",   subscribe,   2, COMMAND_ARGC_ANY, SYNTAX_CHANNELS, CMD_SUBSCRIBED) \
    X(SUNSUBSCRIBE, "sunsubscribe", unsubscribe, 1, COMMAND_ARGC_ANY, SYNTAX_CHANNELS, CMD_SUBSCRIBED)

/* (clang-format takes COMMAND_COUNT for a continuation of the macro) */
enum command_id {
#define COMMAND_ENUM(id, name, handler, min, max, syntax, flags) CMD_##id,
    COMMAND_LIST(COMMAND_ENUM)
#undef COMMAND_ENUM
    COMMAND_COUNT
};
/* clang-format on */

struct command {
    enum command_id id;
    const char *name; /* lower case */
    int min_argc;     /* counting the command name itself */
    int max_argc;     /* or COMMAND_ARGC_ANY */
    enum command_syntax syntax;
    unsigned flags;
};

/*
 * The lock kind a lock command names by a word after its fixed arguments
 * (docs/protocol.md): none is Redisson's RLock. READ and WRITE are the two
 * sides of one read-write lock.
 */
enum command_kind {
    COMMAND_KIND_PLAIN,
    COMMAND_KIND_FAIR,
    COMMAND_KIND_READ,
    COMMAND_KIND_WRITE,
    COMMAND_KIND_FENCED,
};

/* Values that mean "no limit" for WAIT and "watchdog mode" for LEASE. */
#define COMMAND_WAIT_FOREVER (-1)
#define COMMAND_LEASE_WATCHDOG (-1)
/* Largest WAIT or LEASE accepted: about 31 years, far from overflow. */
#define COMMAND_MAX_MS 1000000000000LL
/* A session's SECRET: long enough to be a random token, not a word. */
#define COMMAND_SECRET_MIN 16
#define COMMAND_SECRET_MAX 256
/* A semaphore's permits and a latch's count, as Redisson's int. */
#define COMMAND_MAX_COUNT 2147483647LL
/* An expirable permit's id: 16 bytes in hex. */
#define COMMAND_PERMIT_ID_LEN 32
/* CLIENT HEARTBEAT: 0 (off), or from a tenth of a second to a day. */
#define COMMAND_HEARTBEAT_MIN_MS 100
#define COMMAND_HEARTBEAT_MAX_MS 86400000

/*
 * What a command's arguments decode to. Pointers point into the request.
 * An absent optional text leaves name NULL and name_len 0, so that an
 * empty one (CLIENTID "") can be told apart from none. AUTH's username
 * is the name (NULL for AUTH <password>), its password the password;
 * HELLO's AUTH option the same.
 */
struct command_args {
    const char *name; /* lock name, or the optional text */
    size_t name_len;
    const char *password; /* AUTH only */
    size_t password_len;
    uint64_t thread_id;
    enum command_kind kind;
    int64_t wait_ms;    /* TRYLOCK default 0, LOCK: forever */
    int64_t lease_ms;   /* COMMAND_LEASE_WATCHDOG or > 0 */
    const char *secret; /* CLIENTID's SECRET, or NULL */
    size_t secret_len;
    bool resume;          /* CLIENTID ... RESUME */
    int64_t heartbeat_ms; /* CLIENT HEARTBEAT */
    enum command_sub sub; /* CLIENT's and COMMAND's subcommand */
    /* HELLO's protocol version: 2 or 3; 0: none given;
     * COMMAND_PROTOCOL_UNSUPPORTED: another number (-NOPROTO) */
    int64_t protocol;
    /* HELLO's SETNAME, CLIENT SETNAME's name, CLIENT SETINFO's value:
     * printable ASCII without spaces (Redis's rule); NULL: none */
    const char *value;
    size_t value_len;
    /* SUBSCRIBE's channels, COMMAND INFO's and DOCS's names, MLOCK's
     * and MUNLOCK's lock names (the first is name too) */
    char *const *list;
    const size_t *list_len;
    size_t list_count;
    /* ACQUIRE's and RELEASE's PERMITS (0: not given); SETPERMITS's,
     * ADDPERMITS's and LATCHSET's value */
    int64_t amount;
    bool expirable;        /* ACQUIRE ... EXPIRABLE */
    bool held;             /* PERMITS ... HELD: the session's, not the free */
    bool with_names;       /* OWNERS ... WITHNAMES: each owner's client name */
    const char *permit_id; /* RELEASE ... ID: COMMAND_PERMIT_ID_LEN hex */
    /* LOCKS: MATCH's glob (value, value_len; NULL: every name), COUNT
     * (0: not given) and OFFSET */
    int64_t count;
    int64_t offset;
};

/* Case-insensitive lookup; NULL when unknown. */
const struct command *command_lookup(const char *name, size_t len);
/* The table entry for an id. */
const struct command *command_by_id(enum command_id id);
/* Whether the command's first argument is a lock name (what a user's
 * permitted names are checked against). */
bool command_has_lock_name(const struct command *cmd);
/* What CLIENT LIST's cmd= shows for a subcommand ("client|list"); NULL
 * for SUB_NONE. */
const char *command_sub_name(enum command_sub sub);

/*
 * Checks arity and decodes argv[1..] per the command's syntax. Names must
 * be 1..max_name_len bytes. Returns 0, or -EINVAL with a one-line reason
 * (no error code prefix) written into err.
 */
int command_parse_args(const struct command *cmd, size_t argc,
                       char *const *argv, const size_t *argv_len,
                       size_t max_name_len, struct command_args *out, char *err,
                       size_t err_size);

#endif
