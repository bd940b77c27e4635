/*
 * fuzz_request.c - libFuzzer target for everything a client's bytes reach
 * before a handler runs: the request parser, the command table and its
 * argument decoder, and the reply writer echoing client bytes back.
 *
 * Input layout: byte 0 picks the limits (bits 3-4) and how many read-size
 * bytes follow (bits 0-2); each of those gives the size of one read, 1 to
 * 256 bytes, used in turn; the rest is the client's byte stream. The
 * stream is parsed twice, as one read and in those reads, driven the way
 * server/front/client_pipeline.c drives the parser. Both runs must log
 * the same requests and the same error: where reads split a request must
 * never matter. HELLO and RESET switch the simulated connection's
 * protocol as the server's handlers do, and the replies that differ
 * between RESP2 and RESP3 are written in it (its changes are logged too).
 *
 * Every broken promise of the protocol/ headers ends in abort(), which
 * libFuzzer reports as a crash together with the input. Nothing here may
 * depend on anything but the input, and everything allocated is freed,
 * because LeakSanitizer runs after each input.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buffer.h"
#include "client_id.h"
#include "command.h"
#include "fuzz_check.h"
#include "reply.h"
#include "request.h"

/* The 4096/16 preset reaches its limits with -max_len above 4096; the
 * others (the smallest being below the daemon's configurable minimum)
 * reach theirs with any input. */
static const struct request_limits limit_presets[] = {
    {.max_request_bytes = 4096, .max_args = 16},
    {.max_request_bytes = 256, .max_args = 8},
    {.max_request_bytes = 16, .max_args = 3},
    {.max_request_bytes = 1, .max_args = 1},
};

#define FUZZ_MAX_NAME_LEN 64
#define READ_SIZES_MAX 7

struct read_plan {
    size_t sizes[READ_SIZES_MAX];
    size_t count; /* 0: the whole stream in one read */
};

/* One simulated connection: what struct client keeps per client. */
struct fuzz_session {
    const struct request_limits *limits;
    struct request_parser parser;
    struct buffer in;      /* received, not consumed yet */
    struct buffer log;     /* "len:bytes;" per argument, "\n" per request */
    struct buffer replies; /* the reply stream, reset after each request */
    enum request_status last;
    enum reply_protocol protocol; /* HELLO's, RESET's: connection.c's rule */
};

static void session_init(struct fuzz_session *s,
                         const struct request_limits *limits)
{
    s->limits = limits;
    request_parser_init(&s->parser, limits);
    buffer_init(&s->in);
    buffer_init(&s->log);
    buffer_init(&s->replies);
    s->last = REQUEST_INCOMPLETE;
    s->protocol = REPLY_RESP2;
}

static void session_free(struct fuzz_session *s)
{
    request_parser_free(&s->parser);
    buffer_free(&s->in);
    buffer_free(&s->log);
    buffer_free(&s->replies);
}

/* ---- the reply writer: what it appended since `start` ------------------ */

/* "-CODE text\r\n" or "+text\r\n": exactly one line, whatever the text. */
static void check_one_line(const struct buffer *out, size_t start, char type)
{
    const char *line = out->data + start;
    size_t len = out->len - start;
    CHECK(len >= 3 && line[0] == type);
    CHECK(line[len - 2] == '\r' && line[len - 1] == '\n');
    for (size_t i = 0; i < len - 2; i++)
        CHECK(line[i] != '\r' && line[i] != '\n');
}

static void append_bulk(struct buffer *out, const char *data, size_t len)
{
    size_t start = out->len;
    CHECK(reply_bulk(out, data, len) == 0);
    char header[32];
    int n = snprintf(header, sizeof header, "$%zu\r\n", len);
    CHECK(out->len - start == (size_t)n + len + 2);
    CHECK(memcmp(out->data + start, header, (size_t)n) == 0);
    CHECK(memcmp(out->data + start + n, data, len) == 0);
    CHECK(memcmp(out->data + start + n + len, "\r\n", 2) == 0);
}

static void append_integer(struct buffer *out, int64_t value)
{
    size_t start = out->len;
    CHECK(reply_integer(out, value) == 0);
    char expected[32];
    int n = snprintf(expected, sizeof expected, ":%" PRId64 "\r\n", value);
    CHECK(out->len - start == (size_t)n);
    CHECK(memcmp(out->data + start, expected, (size_t)n) == 0);
}

static void append_error_text(struct buffer *out, const char *text)
{
    size_t start = out->len;
    CHECK(reply_error(out, REPLY_ERR, "%s", text) == 0);
    check_one_line(out, start, '-');
    start = out->len;
    CHECK(reply_error(out, REPLY_LIMIT, "unknown command '%s'", text) == 0);
    check_one_line(out, start, '-');
}

/*
 * Client bytes in the types whose encoding depends on the protocol: a map
 * of one pair (the text, verbatim), then a push and a set of one null
 * each, compared with their exact bytes in each protocol.
 */
static void append_in_protocol(struct buffer *out, enum reply_protocol proto,
                               const char *text, size_t len)
{
    bool resp3 = proto == REPLY_RESP3;
    size_t start = out->len;
    char header[64];
    int n;

    CHECK(reply_map_header(out, proto, 1) == 0);
    append_bulk(out, "key", 3);
    CHECK(reply_verbatim(out, proto, text, len) == 0);
    n = snprintf(header, sizeof header,
                 resp3 ? "%%1\r\n$3\r\nkey\r\n=%zu\r\ntxt:"
                       : "*2\r\n$3\r\nkey\r\n$%zu\r\n",
                 len + (resp3 ? 4 : 0));
    CHECK(out->len - start == (size_t)n + len + 2);
    CHECK(memcmp(out->data + start, header, (size_t)n) == 0);
    CHECK(memcmp(out->data + start + n, text, len) == 0);
    start = out->len;
    CHECK(reply_push_header(out, proto, 1) == 0);
    CHECK(reply_null(out, proto) == 0);
    CHECK(reply_set_header(out, proto, 1) == 0);
    CHECK(reply_null(out, proto) == 0);
    const char *tail =
        resp3 ? ">1\r\n_\r\n~1\r\n_\r\n" : "*1\r\n$-1\r\n*1\r\n$-1\r\n";
    CHECK(out->len - start == strlen(tail) &&
          memcmp(out->data + start, tail, strlen(tail)) == 0);
}

static void append_simple(struct buffer *out, const char *text)
{
    size_t start = out->len;
    CHECK(reply_simple(out, text) == 0);
    check_one_line(out, start, '+');
}

/* ---- the command decoder ---------------------------------------------- */

/* A thread-id is the decimal digits it was written with. */
static void check_thread_id(const char *word, size_t len, uint64_t value)
{
    CHECK(len > 0);
    for (size_t i = 0; i < len; i++)
        CHECK(word[i] >= '0' && word[i] <= '9');
    while (len > 1 && word[0] == '0') {
        word++;
        len--;
    }
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, value);
    CHECK((size_t)n == len && memcmp(digits, word, len) == 0);
}

/* CLIENTID's rule: 1..64 of [A-Za-z0-9._-], so never a NUL. */
static void check_client_id(const char *id, size_t len)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyz"
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    bool expected =
        len >= 1 && len <= CLIENT_ID_MAX_LEN && strspn(id, allowed) == len;
    CHECK(client_id_valid(id, len) == expected);
}

static void check_name(const struct request_parser *p,
                       const struct command *cmd, const struct command_args *a)
{
    switch (cmd->syntax) {
    case SYNTAX_NONE:
        CHECK(a->name == NULL && a->name_len == 0);
        break;
    case SYNTAX_CLIENT: /* <subcommand> ...: no name */
    case SYNTAX_SELECT:
    case SYNTAX_COMMAND:
    case SYNTAX_CHANNELS:
    case SYNTAX_LOCKS: /* MATCH's glob is a value, not a lock's name */
        CHECK(a->name == NULL && a->name_len == 0);
        break;
    case SYNTAX_NAMES: /* <tid> <name>...: the first is name, each bounded */
        CHECK(a->name == p->argv[2] && a->name_len == p->argv_len[2]);
        CHECK(a->list == p->argv + 2 && a->list_count >= 1);
        for (size_t i = 0; i < a->list_count; i++)
            CHECK(a->list_len[i] >= 1 && a->list_len[i] <= FUZZ_MAX_NAME_LEN);
        break;
    case SYNTAX_HELLO: /* AUTH's username, when given */
        CHECK(a->name == NULL || (a->password != NULL && p->argc >= 5));
        break;
    case SYNTAX_OPTIONAL_TEXT:
    case SYNTAX_CLIENTID: /* [<id> [SECRET <secret> [RESUME]]] */
        if (p->argc == 1)
            CHECK(a->name == NULL && a->name_len == 0);
        else
            CHECK(a->name == p->argv[1] && a->name_len == p->argv_len[1]);
        break;
    case SYNTAX_AUTH: /* [username] <password>: the password is last */
        if (p->argc == 2)
            CHECK(a->name == NULL && a->name_len == 0);
        else
            CHECK(a->name == p->argv[1] && a->name_len == p->argv_len[1]);
        CHECK(a->password == p->argv[p->argc - 1] &&
              a->password_len == p->argv_len[p->argc - 1]);
        break;
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
        CHECK(a->name == p->argv[1] && a->name_len == p->argv_len[1]);
        CHECK(a->name_len >= 1 && a->name_len <= FUZZ_MAX_NAME_LEN);
        break;
    }
}

/* What the connection and pub/sub syntaxes promise: a subcommand only for
 * CLIENT and COMMAND, a client name or library of printable ASCII without
 * spaces, SELECT 0 only, a list within the request. */
static void check_connection_args(const struct request_parser *p,
                                  const struct command *cmd,
                                  const struct command_args *a)
{
    CHECK((a->sub != SUB_NONE) ==
          (cmd->syntax == SYNTAX_CLIENT ||
           (cmd->syntax == SYNTAX_COMMAND && p->argc > 1)));
    if (a->sub != SUB_NONE)
        CHECK(command_sub_name(a->sub) != NULL);
    if (cmd->syntax != SYNTAX_HELLO)
        CHECK(a->protocol == 0);
    /* HELLO: a version given is 2, 3 or refused, and a refused one's
     * options are not looked at (Redis 7 refuses it first) */
    CHECK((a->protocol == 0) == (cmd->syntax != SYNTAX_HELLO || p->argc == 1));
    CHECK(a->protocol == 0 || a->protocol == 2 || a->protocol == 3 ||
          a->protocol == COMMAND_PROTOCOL_UNSUPPORTED);
    if (a->protocol == COMMAND_PROTOCOL_UNSUPPORTED)
        CHECK(a->name == NULL && a->password == NULL && a->value == NULL);
    if (a->value != NULL && cmd->syntax == SYNTAX_LOCKS) /* MATCH <glob> */
        CHECK(a->value >= p->argv[2] && a->value <= p->argv[p->argc - 1]);
    else if (a->value != NULL) {
        CHECK(cmd->syntax == SYNTAX_HELLO || cmd->syntax == SYNTAX_CLIENT);
        for (size_t i = 0; i < a->value_len; i++)
            CHECK(a->value[i] >= '!' && a->value[i] <= '~');
    }
    /* A list runs to the request's end, but MLOCK's: its WAIT and LEASE
     * pairs come after its names. */
    if (a->list != NULL && cmd->syntax == SYNTAX_NAMES) {
        size_t after = p->argc - 2 - a->list_count;
        CHECK(after == 0 ||
              (cmd->id == CMD_MLOCK && (after == 2 || after == 4)));
    } else if (a->list != NULL) {
        CHECK(a->list >= p->argv + 1 &&
              a->list + a->list_count == p->argv + p->argc);
    } else {
        CHECK(a->list_count == 0);
    }
    /* LOCKS' COUNT from 1 (0: not given) and OFFSET from 0; no one else's */
    if (cmd->syntax == SYNTAX_LOCKS)
        CHECK(a->count >= 0 && a->offset >= 0);
    else
        CHECK(a->count == 0 && a->offset == 0);
    if (cmd->syntax == SYNTAX_SELECT)
        CHECK(p->argc == 2 && p->argv_len[1] >= 1);
}

/* The semaphores' and latch's values: a count in range, PERMITS from 1,
 * a lease only for an expirable permit, which is one at a time, an id of
 * 32 hex digits, and none of it on any other command. */
static void check_counting(const struct request_parser *p,
                           const struct command *cmd,
                           const struct command_args *a)
{
    switch (cmd->syntax) {
    case SYNTAX_NAME_COUNT:
        CHECK(a->amount >= 0 && a->amount <= COMMAND_MAX_COUNT);
        break;
    case SYNTAX_NAME_DELTA:
        CHECK(a->amount >= -COMMAND_MAX_COUNT &&
              a->amount <= COMMAND_MAX_COUNT);
        break;
    case SYNTAX_ACQUIRE:
    case SYNTAX_RELEASE:
        CHECK(a->amount == 0 ||
              (a->amount >= 1 && a->amount <= COMMAND_MAX_COUNT));
        CHECK(a->amount == 0 || (!a->expirable && a->permit_id == NULL));
        CHECK(a->lease_ms == COMMAND_LEASE_WATCHDOG || a->expirable);
        break;
    default:
        CHECK(a->amount == 0);
    }
    if (a->permit_id != NULL) {
        CHECK(cmd->syntax == SYNTAX_RELEASE);
        for (int i = 0; i < COMMAND_PERMIT_ID_LEN; i++)
            CHECK(isxdigit((unsigned char)a->permit_id[i]));
    }
    CHECK(!a->expirable || cmd->syntax == SYNTAX_ACQUIRE);
    CHECK(!a->held || (cmd->syntax == SYNTAX_PERMITS && p->argc == 3));
}

/* What command.h promises about a successful decode. */
static void check_args(const struct request_parser *p,
                       const struct command *cmd, const struct command_args *a)
{
    CHECK(p->argc >= (size_t)cmd->min_argc && p->argc <= (size_t)cmd->max_argc);
    CHECK(a->lease_ms == COMMAND_LEASE_WATCHDOG ||
          (a->lease_ms >= 1 && a->lease_ms <= COMMAND_MAX_MS));
    CHECK(a->wait_ms == COMMAND_WAIT_FOREVER ||
          (a->wait_ms >= 0 && a->wait_ms <= COMMAND_MAX_MS));
    check_name(p, cmd, a);
    if (cmd->syntax == SYNTAX_LOCK)
        CHECK(a->wait_ms == COMMAND_WAIT_FOREVER);
    if (cmd->syntax == SYNTAX_LOCK || cmd->syntax == SYNTAX_TRYLOCK ||
        cmd->syntax == SYNTAX_NAME_THREAD)
        check_thread_id(p->argv[2], p->argv_len[2], a->thread_id);
    if (cmd->syntax == SYNTAX_NAMES) /* MLOCK, MUNLOCK <tid> <name>... */
        check_thread_id(p->argv[1], p->argv_len[1], a->thread_id);
    check_counting(p, cmd, a);
    if (cmd->syntax != SYNTAX_LOCK && cmd->syntax != SYNTAX_TRYLOCK &&
        cmd->syntax != SYNTAX_ACQUIRE && cmd->syntax != SYNTAX_AWAIT &&
        cmd->id != CMD_MLOCK)
        CHECK(a->wait_ms == 0 && a->lease_ms == COMMAND_LEASE_WATCHDOG);
    if (cmd->syntax != SYNTAX_AUTH && cmd->syntax != SYNTAX_HELLO)
        CHECK(a->password == NULL && a->password_len == 0);
    check_connection_args(p, cmd, a);
    /* a kind word only where the grammar has one, and then one of them */
    CHECK(a->kind <= COMMAND_KIND_FENCED);
    if (cmd->syntax != SYNTAX_NAME_KIND && cmd->syntax != SYNTAX_NAME_THREAD &&
        cmd->syntax != SYNTAX_LOCK && cmd->syntax != SYNTAX_TRYLOCK)
        CHECK(a->kind == COMMAND_KIND_PLAIN);
    if (a->secret != NULL)
        CHECK(cmd->syntax == SYNTAX_CLIENTID &&
              (p->argc == 4 || p->argc == 5) && a->secret == p->argv[3] &&
              a->secret_len == p->argv_len[3] &&
              a->secret_len >= COMMAND_SECRET_MIN &&
              a->secret_len <= COMMAND_SECRET_MAX);
    else
        CHECK(a->secret_len == 0 &&
              (cmd->syntax != SYNTAX_CLIENTID || p->argc <= 2));
    CHECK(a->resume == (a->secret != NULL && p->argc == 5));
    if (cmd->syntax == SYNTAX_CLIENT)
        CHECK(a->heartbeat_ms == 0 ||
              (a->heartbeat_ms >= COMMAND_HEARTBEAT_MIN_MS &&
               a->heartbeat_ms <= COMMAND_HEARTBEAT_MAX_MS));
    else
        CHECK(a->heartbeat_ms == 0);
}

static void log_number(struct buffer *log, size_t n, char end)
{
    char text[32];
    int len = snprintf(text, sizeof text, "%zu%c", n, end);
    CHECK(buffer_append(log, text, (size_t)len) == 0);
}

/* What commands_execute does with a request, minus the handlers. */
static void run_command(struct fuzz_session *s)
{
    const struct request_parser *p = &s->parser;
    const struct command *cmd = command_lookup(p->argv[0], p->argv_len[0]);
    if (cmd == NULL) {
        append_error_text(&s->replies, p->argv[0]);
        return;
    }
    CHECK(command_by_id(cmd->id) == cmd);
    CHECK(strlen(cmd->name) == p->argv_len[0] &&
          strncasecmp(cmd->name, p->argv[0], p->argv_len[0]) == 0);

    struct command_args args;
    char err[128];
    int rc = command_parse_args(cmd, p->argc, p->argv, p->argv_len,
                                FUZZ_MAX_NAME_LEN, &args, err, sizeof err);
    if (rc != 0) {
        CHECK(rc == -EINVAL);
        CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
        CHECK(strpbrk(err, "\r\n") == NULL);
        append_error_text(&s->replies, err);
        return;
    }
    check_args(p, cmd, &args);
    if (args.protocol == 2 || args.protocol == 3)
        s->protocol = (enum reply_protocol)args.protocol;
    else if (cmd->id == CMD_RESET)
        s->protocol = REPLY_RESP2;
    log_number(&s->log, (size_t)s->protocol, 'p');
    if (args.name != NULL) {
        append_bulk(&s->replies, args.name, args.name_len);
        append_in_protocol(&s->replies, s->protocol, args.name, args.name_len);
        check_client_id(args.name, args.name_len);
    } else {
        CHECK(reply_null(&s->replies, s->protocol) == 0);
    }
    append_integer(&s->replies, (int64_t)args.thread_id);
    append_integer(&s->replies, args.wait_ms);
    append_integer(&s->replies, args.lease_ms);
}

/* ---- the request parser ----------------------------------------------- */

static void handle_request(struct fuzz_session *s)
{
    const struct request_parser *p = &s->parser;
    CHECK(p->argc >= 1 && p->argc <= s->limits->max_args);
    size_t start = s->replies.len;
    CHECK(reply_array_header(&s->replies, p->argc) == 0);
    char header[32];
    int n = snprintf(header, sizeof header, "*%zu\r\n", p->argc);
    CHECK(s->replies.len - start == (size_t)n &&
          memcmp(s->replies.data + start, header, (size_t)n) == 0);
    size_t total = 0;
    for (size_t i = 0; i < p->argc; i++) {
        CHECK(p->argv[i] != NULL && p->argv[i][p->argv_len[i]] == '\0');
        CHECK(p->argv_len[i] <= s->limits->max_request_bytes - total);
        total += p->argv_len[i];
        log_number(&s->log, p->argv_len[i], ':');
        CHECK(buffer_append(&s->log, p->argv[i], p->argv_len[i]) == 0);
        CHECK(buffer_append(&s->log, ";", 1) == 0);
        append_bulk(&s->replies, p->argv[i], p->argv_len[i]);
        append_simple(&s->replies, p->argv[i]);
    }
    CHECK(buffer_append(&s->log, "\n", 1) == 0);
    run_command(s);
    buffer_reset(&s->replies);
}

static void handle_error(struct fuzz_session *s)
{
    struct request_parser *p = &s->parser;
    const char *error = p->error;
    CHECK(error != NULL && error[0] != '\0');
    CHECK(buffer_append(&s->log, "error:", 6) == 0);
    CHECK(buffer_append(&s->log, error, strlen(error)) == 0);
    CHECK(buffer_append(&s->log, "\n", 1) == 0);
    append_error_text(&s->replies, error);
    buffer_reset(&s->replies);

    /* after an error the parser only repeats it */
    size_t consumed = SIZE_MAX;
    CHECK(request_parser_feed(p, s->in.data, s->in.len, &consumed) ==
          REQUEST_ERROR);
    CHECK(consumed == 0 && p->error == error);
}

/* Input waiting for more is at most one unfinished header line or inline
 * line: the limits bound what a client can make the server buffer. */
static size_t pending_bound(const struct request_limits *limits)
{
    size_t header = REQUEST_HEADER_LINE_MAX - 1;
    return limits->max_request_bytes > header ? limits->max_request_bytes
                                              : header;
}

/* One read from the socket: runs every request it completes, as
 * client_process does, until the parser wants more or fails. */
static void session_receive(struct fuzz_session *s, const uint8_t *data,
                            size_t len)
{
    if (s->last == REQUEST_ERROR)
        return; /* the server has closed the connection */
    CHECK(buffer_append(&s->in, data, len) == 0);
    for (;;) {
        size_t consumed = SIZE_MAX;
        s->last =
            request_parser_feed(&s->parser, s->in.data, s->in.len, &consumed);
        CHECK(consumed <= s->in.len);
        buffer_consume(&s->in, consumed);
        if (s->last == REQUEST_READY) {
            CHECK(consumed > 0);
            handle_request(s);
        } else if (s->last == REQUEST_ERROR) {
            handle_error(s);
            return;
        } else {
            CHECK(s->last == REQUEST_INCOMPLETE);
            CHECK(s->in.len <= pending_bound(s->limits));
            return;
        }
    }
}

static void session_run(struct fuzz_session *s, const uint8_t *data, size_t len,
                        const struct read_plan *plan)
{
    if (plan->count == 0) {
        session_receive(s, data, len);
        return;
    }
    for (size_t pos = 0, i = 0; pos < len; i = (i + 1) % plan->count) {
        size_t n = plan->sizes[i] < len - pos ? plan->sizes[i] : len - pos;
        session_receive(s, data + pos, n);
        pos += n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t presets = sizeof limit_presets / sizeof *limit_presets;
    const struct request_limits *limits =
        &limit_presets[(size_t)(data[0] >> 3) % presets];
    struct read_plan plan = {.count = data[0] & READ_SIZES_MAX};
    if (plan.count > size - 1)
        plan.count = size - 1;
    for (size_t i = 0; i < plan.count; i++)
        plan.sizes[i] = (size_t)data[1 + i] + 1;
    const uint8_t *stream = data + 1 + plan.count;
    size_t stream_len = size - 1 - plan.count;

    struct fuzz_session whole, split;
    session_init(&whole, limits);
    session_init(&split, limits);
    const struct read_plan one_read = {.count = 0};
    session_run(&whole, stream, stream_len, &one_read);
    session_run(&split, stream, stream_len, &plan);

    CHECK(whole.last == split.last);
    CHECK(whole.log.len == split.log.len);
    CHECK(whole.log.len == 0 ||
          memcmp(whole.log.data, split.log.data, whole.log.len) == 0);
    if (whole.last != REQUEST_ERROR)
        CHECK(whole.in.len == split.in.len);

    session_free(&whole);
    session_free(&split);
    return 0;
}
