/*
 * options.c - rlockd-bench's command line.
 *
 * Owns: the options and their defaults (bench_opt), their parsing and
 * the usage text. Nothing else writes bench_opt.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"

#define MAX_CLIENTS 10000

/* The defaults; bench_parse_options() alone changes them. */
struct bench_options bench_opt = {
    .redis_port = 6379,
    .rlockd_port = 7379,
    .duration_s = 3.0,
    .warmup_s = 0.5,
    .clients = 64,
    .contended_clients = 20,
    .permits = 3,
    .held = 100000,
    .held_window_s = 5.0,
    .held_clients = 8,
    .kinds = (1u << KIND_COUNT) - 1,
};

static void bench_usage(FILE *out)
{
    fprintf(
        out,
        "usage: rlockd-bench [options]\n"
        "  -r, --redis HOST:PORT  Redis (default 127.0.0.1:6379)\n"
        "  -l, --rlockd HOST:PORT rlockd (default 127.0.0.1:7379)\n"
        "      --rlockd-unix PATH the rlockd scenarios' clients connect to\n"
        "                         this Unix socket of that rlockd instead\n"
        "  -d, --duration SEC     measured time per scenario (3)\n"
        "  -w, --warmup SEC       unmeasured time before each (0.5)\n"
        "  -c, --clients N        clients of the many-clients case (64)\n"
        "  -C, --contended N      clients on the contended lock (20)\n"
        "  -P, --permits N        permits of the contended semaphore (3)\n"
        "  -k, --kinds LIST       the other lock kinds' scenarios to run:\n"
        "                         comma-separated fair, read, write,\n"
        "                         fenced, semaphore; all (default) or\n"
        "                         none. READ and WRITE together add 1\n"
        "                         writer among readers\n"
        "      --redis-pid PID    report this Redis's CPU use, in all and "
        "per pair\n"
        "      --rlockd-pid PID   report this rlockd's CPU use\n"
        "      --direct-only      Redis direct scenarios only\n"
        "      --rlockd-only      rlockd scenarios only\n"
        "      --results          also print each figure on a line of "
        "its own:\n"
        "                         result, scenario, metric, higher|lower "
        "(the\n"
        "                         better), value; tab-separated\n"
        "      --skip-unsupported skip (\"skipped\" line) an rlockd scenario\n"
        "                         whose requests the rlockd refuses\n"
        "                         with -ERR (an older build), not fail\n"
        "      --held N           watchdog-mode locks to hold (100000; "
        "0: skip)\n"
        "      --held-window SEC  measured time holding them (5)\n"
        "      --held-clients N   connections taking them (8)\n"
        "      --held-only        the held-locks scenario alone\n"
        "      --held-rlockd HOST:PORT\n"
        "                         rlockd for the held locks (--rlockd's)\n"
        "      --held-rlockd-pid PID\n"
        "                         its pid, for VmRSS and CPU "
        "(--rlockd-pid's)\n"
        "  -h, --help\n");
}

static void bench_parse_address(const char *arg, char **host, int *port)
{
    const char *colon = strrchr(arg, ':');
    char *end;
    long p;

    if (colon == NULL || colon == arg)
        fatal("bad address '%s': expected HOST:PORT", arg);
    p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
        fatal("bad port in '%s'", arg);
    free(*host);
    *host = strndup(arg, (size_t)(colon - arg));
    *port = (int)p;
}

static double bench_parse_seconds(const char *arg, const char *what, double min)
{
    char *end;
    double v = strtod(arg, &end);

    if (*end != '\0' || !(v >= min && v <= 3600))
        fatal("bad %s '%s': expected seconds in [%g, 3600]", what, arg, min);
    return v;
}

static long bench_parse_integer(const char *arg, const char *what, long min,
                                long max)
{
    char *end;
    long v = strtol(arg, &end, 10);

    if (*end != '\0' || end == arg || v < min || v > max)
        fatal("bad %s '%s': expected an integer in [%ld, %ld]", what, arg, min,
              max);
    return v;
}

enum {
    OPT_REDIS_PID = 256,
    OPT_RLOCKD_PID,
    OPT_DIRECT_ONLY,
    OPT_RLOCKD_ONLY,
    OPT_RESULTS,
    OPT_SKIP_UNSUPPORTED,
    OPT_HELD,
    OPT_HELD_WINDOW,
    OPT_HELD_CLIENTS,
    OPT_HELD_ONLY,
    OPT_HELD_RLOCKD,
    OPT_HELD_RLOCKD_PID,
    OPT_RLOCKD_UNIX,
};

static const struct option long_options[] = {
    {"redis", required_argument, NULL, 'r'},
    {"rlockd", required_argument, NULL, 'l'},
    {"duration", required_argument, NULL, 'd'},
    {"warmup", required_argument, NULL, 'w'},
    {"clients", required_argument, NULL, 'c'},
    {"contended", required_argument, NULL, 'C'},
    {"permits", required_argument, NULL, 'P'},
    {"kinds", required_argument, NULL, 'k'},
    {"redis-pid", required_argument, NULL, OPT_REDIS_PID},
    {"rlockd-pid", required_argument, NULL, OPT_RLOCKD_PID},
    {"direct-only", no_argument, NULL, OPT_DIRECT_ONLY},
    {"rlockd-only", no_argument, NULL, OPT_RLOCKD_ONLY},
    {"results", no_argument, NULL, OPT_RESULTS},
    {"skip-unsupported", no_argument, NULL, OPT_SKIP_UNSUPPORTED},
    {"held", required_argument, NULL, OPT_HELD},
    {"held-window", required_argument, NULL, OPT_HELD_WINDOW},
    {"held-clients", required_argument, NULL, OPT_HELD_CLIENTS},
    {"held-only", no_argument, NULL, OPT_HELD_ONLY},
    {"held-rlockd", required_argument, NULL, OPT_HELD_RLOCKD},
    {"held-rlockd-pid", required_argument, NULL, OPT_HELD_RLOCKD_PID},
    {"rlockd-unix", required_argument, NULL, OPT_RLOCKD_UNIX},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* --kinds: a bit per kind_id. RLock's scenarios always run. */
static unsigned bench_parse_kinds(const char *arg)
{
    char *list = strdup(arg), *save = NULL;
    unsigned bits = 0;

    if (list == NULL)
        fatal("out of memory");
    for (char *w = strtok_r(list, ",", &save); w != NULL;
         w = strtok_r(NULL, ",", &save)) {
        int k = KIND_RLOCK + 1;

        if (strcasecmp(w, "all") == 0) {
            bits |= (1u << KIND_COUNT) - 1;
            continue;
        }
        if (strcasecmp(w, "none") == 0)
            continue;
        while (k < KIND_COUNT && strcasecmp(w, bench_kinds[k].word) != 0)
            k++;
        if (k == KIND_COUNT)
            fatal("bad kind '%s' in --kinds: expected fair, read, write, "
                  "fenced, semaphore, all or none",
                  w);
        bits |= 1u << k;
    }
    free(list);
    return bits | 1u << KIND_RLOCK;
}

static void bench_parse_option(int c, const char *arg)
{
    switch (c) {
    case 'r':
        bench_parse_address(arg, &bench_opt.redis_host, &bench_opt.redis_port);
        break;
    case 'l':
        bench_parse_address(arg, &bench_opt.rlockd_host,
                            &bench_opt.rlockd_port);
        break;
    case 'd':
        bench_opt.duration_s = bench_parse_seconds(arg, "duration", 0.1);
        break;
    case 'w':
        bench_opt.warmup_s = bench_parse_seconds(arg, "warm-up", 0);
        break;
    case 'c':
        bench_opt.clients =
            (int)bench_parse_integer(arg, "clients", 1, MAX_CLIENTS);
        break;
    case 'C':
        bench_opt.contended_clients =
            (int)bench_parse_integer(arg, "contended", 2, MAX_CLIENTS);
        break;
    case 'P':
        bench_opt.permits =
            (int)bench_parse_integer(arg, "permits", 1, MAX_CLIENTS);
        break;
    case 'k':
        bench_opt.kinds = bench_parse_kinds(arg);
        break;
    case OPT_REDIS_PID:
        bench_opt.pids[PROC_REDIS] =
            (pid_t)bench_parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case OPT_RLOCKD_PID:
        bench_opt.pids[PROC_RLOCKD] =
            (pid_t)bench_parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case OPT_DIRECT_ONLY:
        bench_opt.direct_only = true;
        break;
    case OPT_RLOCKD_ONLY:
        bench_opt.rlockd_only = true;
        break;
    case OPT_RESULTS:
        bench_opt.results = true;
        break;
    case OPT_SKIP_UNSUPPORTED:
        bench_opt.skip_unsupported = true;
        break;
    case OPT_HELD_ONLY:
        bench_opt.held_only = true;
        break;
    case OPT_RLOCKD_UNIX:
        free(bench_opt.rlockd_unix);
        bench_opt.rlockd_unix = strdup(arg);
        if (bench_opt.rlockd_unix == NULL)
            fatal("out of memory");
        break;
    case OPT_HELD:
        bench_opt.held = bench_parse_integer(arg, "held", 0, 10000000);
        break;
    case OPT_HELD_WINDOW:
        bench_opt.held_window_s = bench_parse_seconds(arg, "held window", 0.1);
        break;
    case OPT_HELD_CLIENTS:
        bench_opt.held_clients =
            (int)bench_parse_integer(arg, "held clients", 1, MAX_CLIENTS);
        break;
    case OPT_HELD_RLOCKD:
        bench_parse_address(arg, &bench_opt.held_rlockd_host,
                            &bench_opt.held_rlockd_port);
        break;
    case OPT_HELD_RLOCKD_PID:
        bench_opt.held_rlockd_pid =
            (pid_t)bench_parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case 'h':
        bench_usage(stdout);
        exit(0);
    default:
        bench_usage(stderr);
        exit(2);
    }
}

void bench_parse_options(int argc, char **argv)
{
    int c;

    bench_opt.redis_host = strdup("127.0.0.1");
    bench_opt.rlockd_host = strdup("127.0.0.1");
    if (bench_opt.redis_host == NULL || bench_opt.rlockd_host == NULL)
        fatal("out of memory");
    while ((c = getopt_long(argc, argv, "r:l:d:w:c:C:P:k:h", long_options,
                            NULL)) != -1)
        bench_parse_option(c, optarg);
    if (optind != argc) {
        bench_usage(stderr);
        exit(2);
    }
    if (bench_opt.direct_only && bench_opt.rlockd_only)
        fatal("--direct-only and --rlockd-only leave no scenario to run");
    if (bench_opt.held_only && (bench_opt.direct_only || bench_opt.held == 0))
        fatal("--held-only with --direct-only or --held 0 leaves no scenario "
              "to run");
    if (bench_opt.permits >= bench_opt.contended_clients)
        fatal("--permits %d with --contended %d: no client would wait",
              bench_opt.permits, bench_opt.contended_clients);
    bench_opt.pids[PROC_BENCH] = getpid();
    if (bench_opt.held_rlockd_host == NULL) {
        bench_opt.held_rlockd_host = strdup(bench_opt.rlockd_host);
        if (bench_opt.held_rlockd_host == NULL)
            fatal("out of memory");
        bench_opt.held_rlockd_port = bench_opt.rlockd_port;
        if (bench_opt.held_rlockd_pid == 0)
            bench_opt.held_rlockd_pid = bench_opt.pids[PROC_RLOCKD];
    }
}
