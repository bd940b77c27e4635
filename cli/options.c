/*
 * options.c - rlock's command line, read as flock(1) users expect it:
 * -w in seconds with fractions, -n, -E, -c, -s/-x, long options for
 * everything. The forms:
 *
 *     rlock [OPTION...] NAME -- COMMAND [ARG...]
 *     rlock [OPTION...] NAME -c STRING       (or -c STRING before NAME)
 *     rlock [OPTION...] hold NAME
 *     rlock [OPTION...] status NAME
 *     rlock [OPTION...] force-unlock NAME
 *     rlock [OPTION...] --permits N NAME -- COMMAND [ARG...]  (or hold)
 *
 * -s was rlockd's address in earlier versions; it is --shared now, as in
 * flock(1), and the address is -S (CHANGELOG.md says why). An old command line never
 * runs anything: it always has one word too many, and its usage error
 * says where the address went.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h" /* COMMAND_MAX_MS, COMMAND_HEARTBEAT_*: rlockd's bounds */
#include "options.h"
#include "report.h"
#include "version.h" /* RLOCKD_VERSION: the release */

#define DEFAULT_ADDR "127.0.0.1:7379"
#define DEFAULT_KILL_GRACE_S 5
#define MAX_KILL_GRACE_S 86400
#define SHELL "/bin/sh"

static const char usage_text[] =
    "Usage: rlock [OPTION...] [KIND] NAME -- COMMAND [ARG...]\n"
    "       rlock [OPTION...] [KIND] NAME -c STRING\n"
    "       rlock [OPTION...] [KIND] hold NAME\n"
    "       rlock [OPTION...] NAME NAME... -- COMMAND [ARG...]\n"
    "       rlock [OPTION...] hold NAME NAME...\n"
    "       rlock [-S ADDR] [KIND] status NAME\n"
    "       rlock [-S ADDR] [KIND] force-unlock NAME\n"
    "       rlock [-S ADDR] [--json] list [PATTERN]\n"
    "       rlock [OPTION...] --permits N NAME -- COMMAND [ARG...]\n"
    "                                 (or -c STRING, or hold NAME)\n"
    "\n"
    "Runs COMMAND while holding the rlockd lock NAME, as flock(1) does with a\n"
    "file: waits for the lock, runs COMMAND in a process group of its own,\n"
    "releases the lock when COMMAND ends and exits with COMMAND's status.\n"
    "With several NAMEs, the same holding every one of those plain locks,\n"
    "taken together or not at all, in one order, so that two such rlocks\n"
    "never deadlock each other (rlockd's MLOCK, Redisson's MultiLock).\n"
    "With --permits N, the same holding one of N permits of the semaphore\n"
    "NAME (Redisson's RSemaphore), as consul lock -n N does: at most N\n"
    "COMMANDs run at once.\n"
    "\n"
    "Options:\n"
    "  -S, --server ADDR   rlockd's address, HOST:PORT or unix:PATH\n"
    "                      (default: $RLOCK_ADDR, else " DEFAULT_ADDR ")\n"
    "  -w, --wait, --timeout SECS\n"
    "                      wait at most SECS seconds for the lock, fractions\n"
    "                      allowed (-w 0.5); default: forever\n"
    "  -n, --nonblock      do not wait: give up at once if the lock is held\n"
    "  -E, --conflict-exit-code N\n"
    "                      exit N (0 to 255) when the lock was not acquired\n"
    "                      (-n, -w); default 1\n"
    "  -c, --command STRING\n"
    "                      run STRING with " SHELL " -c, as COMMAND\n"
    "  -l, --lease MS      the lock expires MS ms after it is taken, even if\n"
    "                      COMMAND still runs (default: rlockd's watchdog\n"
    "                      keeps it alive until COMMAND ends)\n"
    "  -k, --kill-grace SECS\n"
    "                      after the lock is lost, SIGKILL COMMAND's process\n"
    "                      group SECS seconds after its SIGTERM (default 5;\n"
    "                      0: at once)\n"
    "  -b, --heartbeat MS  if rlock itself stops (SIGSTOP, hung) for MS ms,\n"
    "                      rlockd releases the lock (default 10000; 0: never,\n"
    "                      the lock is held while rlock's connection lives)\n"
    "  --permits N         hold one permit of the semaphore NAME, not a lock;\n"
    "                      a semaphore that does not exist is created with N\n"
    "                      permits (1 to 2147483647). One that exists keeps\n"
    "                      its own number: rlock warns when more than N are\n"
    "                      available (rlockd, as Redisson, keeps only the\n"
    "                      number available, not the limit). No KIND, no -l;\n"
    "                      not with status or force-unlock\n"
    "  --tls               TLS to rlockd's [server] tls_listen, its "
    "certificate\n"
    "                      verified for HOST (or --sni)\n"
    "  --cacert FILE       with --tls: the CA that signs rlockd's certificate\n"
    "                      (default: the system's trust store)\n"
    "  --cert FILE, --key FILE\n"
    "                      with --tls: a client certificate and its key\n"
    "  --sni NAME          with --tls: the name sent as SNI and verified\n"
    "  --user NAME         log in to rlockd as its [user NAME] (default:\n"
    "                      $RLOCK_USER), with the password on the first line\n"
    "                      of --password-file FILE (default: $RLOCK_PASSWORD)\n"
    "  -h, --help          print this help and exit 0\n"
    "  -V, --version       print rlock's version and exit 0\n"
    "SECS: -w 0 to 10^9, -k 0 to 86400; MS: -l 1 to 10^12, -b 0 or 100 to\n"
    "86400000; digits only (and one '.' in -w).\n"
    "\n"
    "KIND, the kind of lock NAME is (at most one; default: a plain lock,\n"
    "Redisson's RLock); hold, status and force-unlock use it too:\n"
    "  -s, --shared, --read      the read side of the read-write lock NAME:\n"
    "                            shared with other readers, never a writer\n"
    "  -x, --exclusive, --write  its write side: no other writer, no reader\n"
    "  --fair                    a fair lock: waiters get it in the order\n"
    "                            they asked, on every host\n"
    "  --fenced                  a fenced lock: each acquisition gets a\n"
    "                            fencing token, COMMAND sees it in\n"
    "                            $RLOCK_TOKEN\n"
    "\n"
    "  hold NAME          take the lock, print its owner (and its token with\n"
    "                     --fenced), hold it until standard input ends or\n"
    "                     SIGINT, SIGTERM or SIGHUP; release it, exit 0\n"
    "  status NAME        print \"locked pttl_ms=MS\" (the lock's time left),\n"
    "                     \"kind=KIND\" (lock, read or write: without KIND,\n"
    "                     a lock of any kind), then \"owner=OWNER holds=N\"\n"
    "                     for each holder (and \" name=CLIENT-NAME\" where\n"
    "                     rlockd knows it), or\n"
    "                     \"unlocked\"; exit 0 either way\n"
    "  force-unlock NAME  delete the lock, whoever holds it; print\n"
    "                     \"force-unlocked\" or \"not locked\"; exit 0\n"
    "  list [PATTERN]     the locks rlockd holds or waits on for its clients\n"
    "                     (rlockd's LOCKS), names matching the glob PATTERN,\n"
    "                     the longest wait first: NAME KIND HOLDER COUNT\n"
    "                     HELD_MS WAITERS LONGEST_WAIT_MS, aligned on a\n"
    "                     terminal, tab-separated otherwise; --json: every\n"
    "                     field, one JSON array\n"
    "\n"
    "While COMMAND runs:\n"
    "  - If rlock's standard input is the terminal and rlock runs in its\n"
    "    foreground, COMMAND gets the terminal's foreground: it can read\n"
    "    the terminal, and Ctrl-C and Ctrl-Z reach it. rlock takes the\n"
    "    terminal back when COMMAND ends or is stopped (then it stops too).\n"
    "  - SIGINT, SIGTERM and SIGHUP sent to rlock go to COMMAND's process\n"
    "    group; rlock exits when COMMAND does, having released the lock.\n"
    "  - rlock asks rlockd every third of the lease (at most every second;\n"
    "    every second for a permit) whether it still holds the lock. If rlockd "
    "says it does not (the\n"
    "    lease ran out, someone force-unlocked it, rlockd restarted and it\n"
    "    was released), or if the lock's TTL runs out before rlockd could\n"
    "    confirm it again (rlockd or Redis unreachable), rlock prints a\n"
    "    warning, sends SIGTERM to COMMAND's process group, SIGKILL after\n"
    "    -k seconds, and exits 75.\n"
    "  - If rlock's connection to rlockd breaks and the lock outlives it\n"
    "    (rlockd crashed and was restarted, or runs with on_disconnect =\n"
    "    expire), rlock takes it again once reconnected, so that rlockd's\n"
    "    watchdog renews it, and releases both holds at the end.\n"
    "  - If rlock itself dies, by any signal, SIGKILL too, a guardian\n"
    "    process sends SIGTERM to COMMAND's process group (its children\n"
    "    too), SIGKILL after -k seconds: rlockd releases the lock when\n"
    "    rlock's connection closes.\n"
    "\n"
    "Exit status:\n"
    "  N        COMMAND's own status, the lock held throughout;\n"
    "           128+S if COMMAND was killed by signal S\n"
    "  1        the lock was not acquired: held elsewhere (-n) or the -w\n"
    "           time ran out (as flock(1); COMMAND did not run); -E sets it\n"
    "  64       usage error\n"
    "  69       rlockd cannot be reached, or cannot serve (Redis down,\n"
    "           shutting down, a limit reached)\n"
    "  70       any other error\n"
    "  75       the lock was lost while COMMAND ran (or was held): COMMAND's\n"
    "           work may not have been exclusive\n"
    "  77       the user logged in as may not do this (rlockd's -NOPERM)\n"
    "  78       rlockd wants a login, or refused the one given (-NOAUTH)\n"
    "  126/127  COMMAND could not be executed / was not found\n"
    "\n"
    "Environment:\n"
    "  RLOCK_ADDR  rlockd's address when -S is not given\n"
    "  RLOCK_AUTH  the token sent with AUTH, for an rlockd with\n"
    "              [server] auth_token set (an environment variable, so\n"
    "              that it never shows in ps)\n"
    "  RLOCK_TLS (1: --tls), RLOCK_TLS_CACERT, RLOCK_TLS_CERT, RLOCK_TLS_KEY,\n"
    "  RLOCK_TLS_SNI  the TLS options' defaults\n"
    "  RLOCK_USER, RLOCK_PASSWORD\n"
    "              the [user NAME] to log in as, and its password\n"
    "COMMAND gets, in place of any it inherited:\n"
    "  RLOCK_NAME   NAME\n"
    "  RLOCK_OWNER  the lock's owner in rlockd: CLIENT-ID:THREAD-ID; with\n"
    "               --permits CLIENT-ID:0, the permit holder's field in\n"
    "               rlockd_permits:{NAME}\n"
    "  RLOCK_TOKEN  with --fenced: the fencing token of the acquisition,\n"
    "               larger than every earlier holder's of NAME\n";

/* The values of long options that have no short one lie past every
 * character; the kinds: OPT_KIND plus the enum rlock_kind. */
enum {
    OPT_VERSION = 256,
    OPT_PERMITS,
    OPT_TLS,
    OPT_JSON,
    OPT_CACERT,
    OPT_CERT,
    OPT_KEY,
    OPT_SNI,
    OPT_KIND
};
enum { OPT_USER = 512, OPT_PASSWORD_FILE };

static const struct option long_options[] = {
    {"server", required_argument, NULL, 'S'},
    {"wait", required_argument, NULL, 'w'},
    {"timeout", required_argument, NULL, 'w'}, /* flock(1)'s alias */
    {"nonblock", no_argument, NULL, 'n'},
    {"nb", no_argument, NULL, 'n'}, /* flock(1)'s alias */
    {"conflict-exit-code", required_argument, NULL, 'E'},
    {"command", required_argument, NULL, 'c'},
    {"lease", required_argument, NULL, 'l'},
    {"kill-grace", required_argument, NULL, 'k'},
    {"heartbeat", required_argument, NULL, 'b'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"shared", no_argument, NULL, 's'},
    {"read", no_argument, NULL, OPT_KIND + RLOCK_READ},
    {"exclusive", no_argument, NULL, 'x'},
    {"write", no_argument, NULL, OPT_KIND + RLOCK_WRITE},
    {"fair", no_argument, NULL, OPT_KIND + RLOCK_FAIR},
    {"fenced", no_argument, NULL, OPT_KIND + RLOCK_FENCED},
    {"permits", required_argument, NULL, OPT_PERMITS},
    {"tls", no_argument, NULL, OPT_TLS},
    {"json", no_argument, NULL, OPT_JSON},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"sni", required_argument, NULL, OPT_SNI},
    {"user", required_argument, NULL, OPT_USER},
    {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
    {NULL, 0, NULL, 0},
};
/* '+': stop at NAME, so that COMMAND's options stay COMMAND's; ':':
 * report errors ourselves. */
static const char short_options[] = "+:S:w:nE:c:l:k:b:hVsx";

/* Digits only (no sign, no spaces, nothing after), within [min, max]. */
static int parse_option_number(const char *option, const char *text,
                               long long min, long long max, long long *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 ||
        v < min || v > max)
        return usage_error("%s: '%s' is not a whole number from %lld to %lld",
                           option, text, min, max);
    *out = v;
    return 0;
}

/* Seconds as flock(1) takes them: digits, then at most one '.' and more
 * digits ("10", "0.5", ".25"), from 0 to COMMAND_MAX_MS / 1000. In whole
 * ms, rounded up, so that a wait asked for never becomes -n. */
static int parse_seconds(const char *option, const char *text, long long *ms)
{
    const long long max_s = COMMAND_MAX_MS / 1000;
    const char *p = text;
    long long whole = 0, fraction_ms = 0, scale = 100;
    bool digits = false, rest = false;

    for (; *p >= '0' && *p <= '9' && whole <= max_s; p++, digits = true)
        whole = whole * 10 + (*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, digits = true, scale /= 10) {
            fraction_ms += (*p - '0') * scale;
            rest |= scale == 0 && *p != '0';
        }
    if (!digits || *p != '\0' || whole > max_s ||
        (whole == max_s && (fraction_ms > 0 || rest)))
        return usage_error("%s: '%s' is not a number of seconds from 0 to "
                           "%lld",
                           option, text, max_s);
    *ms = whole * 1000 + fraction_ms + rest;
    return 0;
}

/* The option's name as the user wrote it, for messages: "-w" or "--wait".
 * long_index: getopt_long()'s, -1 for a short option. */
static void option_name(int opt, int long_index, char *buf, size_t size)
{
    if (long_index >= 0)
        snprintf(buf, size, "--%s", long_options[long_index].name);
    else
        snprintf(buf, size, "-%c", opt);
}

/* A kind option: a lock has one kind, so a second option naming another
 * is an error (an alias of the first, --read --shared, is not). given:
 * the first one's name, or "". */
static int choose_kind(struct options *o, int opt, const char *name,
                       char *given, size_t size)
{
    enum rlock_kind kind = opt == 's'   ? RLOCK_READ
                           : opt == 'x' ? RLOCK_WRITE
                                        : (enum rlock_kind)(opt - OPT_KIND);

    if (*given != '\0' && kind != o->kind)
        return usage_error("%s and %s exclude each other: a lock has one kind",
                           given, name);
    o->kind = kind;
    snprintf(given, size, "%s", name);
    return 0;
}

/* getopt_long()'s '?' (with ':' first in the short options, it prints
 * nothing itself): an unknown short option (optopt); a long option given
 * a value it does not take (--read=x, optopt its value); or an unknown or
 * ambiguous (--f) long option. The long ones it has stepped over. */
static int unknown_option(char **argv)
{
    const char *arg = argv[optind - 1];

    if (optopt != 0 && strncmp(arg, "--", 2) == 0 && strchr(arg, '='))
        return usage_error("%s: takes no value", arg);
    if (optopt != 0)
        return usage_error("unknown option -%c", optopt);
    return usage_error("unknown or ambiguous option %s", arg);
}

/* getopt_long()'s ':': the option before optind needs a value. */
static int missing_value(char **argv)
{
    const char *arg = argv[optind - 1];

    if (strncmp(arg, "--", 2) == 0)
        return usage_error("%s needs a value", arg);
    return usage_error("-%c needs a value", optopt);
}

/* rlock's release (rlockd's, whose source it ships with) and the
 * version of librlock's API it was built with. */
static void print_rlock_version(void)
{
    printf("rlock %s (librlock %d.%d.%d)\n", RLOCKD_VERSION,
           RLOCK_VERSION_MAJOR, RLOCK_VERSION_MINOR, RLOCK_VERSION_PATCH);
}

/* What the options seen so far ask for, beyond struct options: which were
 * given, for the checks that need the whole command line. */
struct given {
    char kind[32];      /* the first kind option's name, or "" */
    char lock_opt[32];  /* -w, -n, -E, -l or -b: how to take the lock */
    char run_opt[32];   /* -k or -c: how to run COMMAND */
    char lease_opt[32]; /* -l, which a permit has none of */
    bool short_s;       /* -s, which was the address in earlier versions */
};

/* Where --cacert, --cert, --key or --sni goes. */
static const char **tls_option(struct options *o, int opt)
{
    rlock_tls_options *t = &o->tls_options;

    return opt == OPT_CACERT ? &t->ca_file
           : opt == OPT_CERT ? &t->cert_file
           : opt == OPT_KEY  ? &t->key_file
                             : &t->server_name;
}

/* --password-file: its first line, without the newline, is the
 * password (a file, so that it never shows in ps). */
static int read_password_file(struct options *o, const char *path)
{
    static char password[1024];
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return fail_sys(path);
    if (fgets(password, sizeof password, f) == NULL)
        password[0] = '\0';
    fclose(f);
    password[strcspn(password, "\r\n")] = '\0';
    o->password = password;
    return 0;
}

/* One option; 0 or the exit status to leave with. */
static int parse_option(struct options *o, struct given *g, int opt,
                        const char *name)
{
    long long v;
    int err = 0;

    switch (opt) {
    case 'S':
        o->addr = optarg;
        if (*optarg == '\0')
            err = usage_error("%s: empty address", name);
        return err;
    case 'w':
        o->wait_arg = optarg;
        return parse_seconds(name, optarg, &o->wait_ms);
    case 'n':
        o->wait_ms = 0;
        return 0;
    case 'E':
        err = parse_option_number(name, optarg, 0, 255, &v);
        o->conflict_status = (int)v;
        return err;
    case 'c':
        o->shell_argv[2] = optarg;
        return 0;
    case 'l':
        return parse_option_number(name, optarg, 1, COMMAND_MAX_MS,
                                   &o->lease_ms);
    case 'k':
        err = parse_option_number(name, optarg, 0, MAX_KILL_GRACE_S, &v);
        o->kill_grace_ms = (int)(v * 1000);
        return err;
    case 'b':
        err =
            parse_option_number(name, optarg, 0, COMMAND_HEARTBEAT_MAX_MS, &v);
        if (err == 0 && v > 0 && v < COMMAND_HEARTBEAT_MIN_MS)
            err =
                usage_error("%s: 0, or %d to %d ms", name,
                            COMMAND_HEARTBEAT_MIN_MS, COMMAND_HEARTBEAT_MAX_MS);
        o->heartbeat_ms = v == 0 ? RLOCK_NO_HEARTBEAT : (int)v;
        return err;
    case 'h':
        fputs(usage_text, stdout);
        exit(0);
    case OPT_PERMITS:
        return parse_option_number(name, optarg, 1, COMMAND_MAX_COUNT,
                                   &o->permits);
    case OPT_TLS:
        o->tls = true;
        return 0;
    case OPT_JSON:
        o->json = true;
        return 0;
    case OPT_CACERT:
    case OPT_CERT:
    case OPT_KEY:
    case OPT_SNI:
        *tls_option(o, opt) = optarg;
        return 0;
    case OPT_USER:
        o->user = optarg;
        return 0;
    case OPT_PASSWORD_FILE:
        return read_password_file(o, optarg);
    case 'V':
    case OPT_VERSION:
        print_rlock_version();
        exit(0);
    default: /* a kind */
        g->short_s |= strcmp(name, "-s") == 0;
        return choose_kind(o, opt, name, g->kind, sizeof g->kind);
    }
}

/* The hint a usage error gives when -s was used: it was the address. */
#define S_IS_SHARED_NOW                                                        \
    "\n(-s is --shared now, as in flock(1); rlockd's address is -S ADDR: "     \
    "see CHANGELOG.md)"

/* The index of the first "--" in words, or rest when there is none. */
static int dash_dash(int rest, char **words)
{
    int i = 0;

    while (i < rest && strcmp(words[i], "--") != 0)
        i++;
    return i;
}

/* NAME NAME... -- COMMAND, or hold NAME NAME...: several plain locks,
 * taken together. A KIND or --permits goes with one NAME only. */
static int parse_names(struct options *o, const struct given *g, int count,
                       char **names)
{
    if (g->kind[0] != '\0' || o->permits > 0)
        return usage_error("several NAMEs are plain locks, taken together: "
                           "no %s with them%s",
                           g->kind[0] != '\0' ? g->kind : "--permits",
                           g->short_s ? S_IS_SHARED_NOW : "");
    if (o->shell_argv[2] != NULL)
        return usage_error("several NAMEs take -- COMMAND, not -c STRING");
    o->names = names;
    o->name_count = count;
    o->name = names[0];
    for (int i = 0; i < count; i++)
        if (names[i][0] == '\0')
            return usage_error("empty lock NAME");
    return 0;
}

/* Which form the words after the options are; sets mode, name(s),
 * command. */
static int parse_form(struct options *o, const struct given *g, int rest,
                      char **words)
{
    bool shell = o->shell_argv[2] != NULL;
    int names = dash_dash(rest, words);

    if (names >= 2 && names < rest) {
        if (words[names + 1] == NULL)
            return usage_error("no COMMAND after --");
        o->command = words + names + 1;
        return parse_names(o, g, names, words);
    }
    if (rest >= 3 && !strcmp(words[0], "hold") && names == rest) {
        o->mode = MODE_HOLD;
        return parse_names(o, g, rest - 1, words + 1);
    }
    if (rest == 3 && !shell &&
        (!strcmp(words[1], "-c") || !strcmp(words[1], "--command"))) {
        o->shell_argv[2] = words[2]; /* flock(1)'s NAME -c STRING */
        o->name = words[0];
    } else if (rest >= 2 && strcmp(words[1], "--") == 0) {
        if (shell)
            return usage_error("-c STRING and -- COMMAND exclude each other");
        if (words[2] == NULL)
            return usage_error("no COMMAND after --");
        o->name = words[0];
        o->command = words + 2;
        return 0;
    } else if (rest == 1 && shell) {
        o->name = words[0];
    } else if (rest == 2 && !strcmp(words[0], "hold")) {
        o->mode = MODE_HOLD;
    } else if (rest == 2 && !strcmp(words[0], "status")) {
        o->mode = MODE_STATUS;
    } else if (rest == 2 && !strcmp(words[0], "force-unlock")) {
        o->mode = MODE_FORCE_UNLOCK;
    } else if ((rest == 1 || rest == 2) && !strcmp(words[0], "list")) {
        o->mode = MODE_LIST;
        o->name = words[1]; /* NULL after the last word: every name */
        return 0;
    } else {
        return usage_error(
            "expected NAME... -- COMMAND, NAME -c STRING, hold NAME..., "
            "status NAME, force-unlock NAME or list [PATTERN]%s",
            g->short_s ? S_IS_SHARED_NOW : "");
    }
    if (o->mode == MODE_RUN) {
        o->command = o->shell_argv;
        return 0;
    }
    o->name = words[1];
    return 0;
}

/* The options that make no sense for the form given. */
static int check_form(const struct options *o, const struct given *g)
{
    if (o->json && o->mode != MODE_LIST)
        return usage_error("--json goes with list only");
    if (o->mode == MODE_RUN)
        return 0;
    if (g->run_opt[0] != '\0')
        return usage_error("%s goes with a COMMAND only", g->run_opt);
    if (o->mode != MODE_HOLD && g->lock_opt[0] != '\0')
        return usage_error("%s goes with a COMMAND or hold only", g->lock_opt);
    return 0;
}

/* A semaphore's permit has no kind and no lease (rlockd's watchdog keeps
 * it while rlock lives), and status and force-unlock are a lock's. */
static int check_permits(const struct options *o, const struct given *g)
{
    if (o->permits == 0)
        return 0;
    if (g->kind[0] != '\0')
        return usage_error(
            "--permits and %s exclude each other: a semaphore has no kind",
            g->kind);
    if (g->lease_opt[0] != '\0')
        return usage_error(
            "--permits and %s exclude each other: a permit has no lease",
            g->lease_opt);
    if (o->mode == MODE_STATUS || o->mode == MODE_FORCE_UNLOCK ||
        o->mode == MODE_LIST)
        return usage_error("--permits goes with a COMMAND or hold only");
    return 0;
}

/* An environment variable that is set and not empty, else NULL. */
static const char *env_value(const char *name)
{
    const char *value = getenv(name);

    return value != NULL && *value != '\0' ? value : NULL;
}

/* The RLOCK_TLS* variables: the TLS options' defaults. */
static void tls_from_env(struct options *o)
{
    const char *tls = env_value("RLOCK_TLS");

    o->tls = tls != NULL && strcmp(tls, "0") != 0;
    o->tls_options.ca_file = env_value("RLOCK_TLS_CACERT");
    o->tls_options.cert_file = env_value("RLOCK_TLS_CERT");
    o->tls_options.key_file = env_value("RLOCK_TLS_KEY");
    o->tls_options.server_name = env_value("RLOCK_TLS_SNI");
}

int options_parse(int argc, char **argv, struct options *o)
{
    const char *env_addr = getenv("RLOCK_ADDR");
    struct given g = {.kind = ""};
    char name[32];
    int opt, long_index = -1, err = 0;

    *o = (struct options){
        .addr = env_addr && *env_addr ? env_addr : DEFAULT_ADDR,
        .kind = RLOCK_LOCK,
        .shell_argv = {SHELL, "-c", NULL, NULL},
        .wait_ms = RLOCK_WAIT_FOREVER,
        .conflict_status = EXIT_NOT_ACQUIRED,
        .lease_ms = RLOCK_WATCHDOG,
        .kill_grace_ms = DEFAULT_KILL_GRACE_S * 1000,
        .name_count = 1,
        .user = env_value("RLOCK_USER"),
        .password = env_value("RLOCK_PASSWORD"),
    };
    tls_from_env(o);
    while (err == 0 && (opt = getopt_long(argc, argv, short_options,
                                          long_options, &long_index)) != -1) {
        if (opt == '?')
            return unknown_option(argv);
        if (opt == ':')
            return missing_value(argv);
        option_name(opt, long_index, name, sizeof name);
        long_index = -1;
        err = parse_option(o, &g, opt, name);
        if (opt < OPT_VERSION && strchr("wnElb", opt) != NULL)
            memcpy(g.lock_opt, name, sizeof name);
        else if (opt == 'k' || opt == 'c')
            memcpy(g.run_opt, name, sizeof name);
        if (opt == 'l')
            memcpy(g.lease_opt, name, sizeof name);
    }
    if (err == 0)
        err = parse_form(o, &g, argc - optind, argv + optind);
    if (err == 0)
        err = check_form(o, &g);
    if (err == 0)
        err = check_permits(o, &g);
    if (err == 0 && o->name != NULL && o->name[0] == '\0')
        err = usage_error("empty lock NAME");
    if (err == 0 && !o->tls &&
        (o->tls_options.ca_file || o->tls_options.cert_file ||
         o->tls_options.key_file || o->tls_options.server_name))
        err = usage_error("--cacert, --cert, --key and --sni go with --tls");
    if (err == 0 && o->user != NULL && o->password == NULL)
        err = usage_error("--user (or RLOCK_USER) needs a password: "
                          "--password-file FILE or RLOCK_PASSWORD");
    return err;
}
