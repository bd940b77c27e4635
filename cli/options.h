/*
 * options.h - rlock's command line: what it asks for, checked and in
 * rlock's units. Only options.c reads argv; nothing in it talks to
 * rlockd or starts a process.
 */
#ifndef RLOCK_CLI_OPTIONS_H
#define RLOCK_CLI_OPTIONS_H

#include <stdbool.h>

#include "rlock.h"

enum mode { MODE_RUN, MODE_HOLD, MODE_STATUS, MODE_FORCE_UNLOCK, MODE_LIST };

struct options {
    enum mode mode;
    const char *addr;
    const char *name; /* the first NAME when there are several; list's
                         PATTERN (NULL: every name) */
    bool json;        /* list --json: rlockd's view as JSON */
    /* NAME1 NAME2 ... -- COMMAND, or hold NAME1 NAME2 ...: the plain
     * locks taken together (rlock_multilock), in the order given;
     * name_count 1 for one NAME */
    char **names;
    int name_count;
    enum rlock_kind kind;
    /* --permits N: hold one of N permits of the semaphore NAME rather
     * than a lock; 0: a lock */
    long long permits;
    char **command;       /* NULL-terminated, MODE_RUN only */
    char *shell_argv[4];  /* -c STRING: command points here */
    long long wait_ms;    /* RLOCK_WAIT_FOREVER, or 0 for -n */
    const char *wait_arg; /* -w as given, for messages */
    int conflict_status;  /* -E: when the lock was not acquired */
    long long lease_ms;
    int kill_grace_ms;
    int heartbeat_ms; /* as rlock_options wants it */
    /* --tls, or RLOCK_TLS; its files and name, --cacert ... or the
     * RLOCK_TLS_* variables */
    bool tls;
    rlock_tls_options tls_options;
    /* --user or RLOCK_USER, and --password-file's first line or
     * RLOCK_PASSWORD (NULL: none), as rlock_options wants them */
    const char *user;
    const char *password;
};

/* Fills o from the command line; 0, or the exit status to leave with
 * (usage errors are reported here). -h and --version print and exit 0. */
int options_parse(int argc, char **argv, struct options *o);

#endif
