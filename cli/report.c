/*
 * report.c - rlock's messages on failure and the exit statuses they map
 * to (report.h). Nothing here decides what failed, only how it is said.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "rlock.h"

int fail(int err, const char *fmt, ...)
{
    va_list ap;

    fputs("rlock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", rlock_strerror(err));
    switch (err) {
    case RLOCK_EDAEMON:
    case RLOCK_EREDIS:
    case RLOCK_ETIMEOUT:
    case RLOCK_ECONNLOST:
    case RLOCK_ELIMIT:
    case RLOCK_ESHUTDOWN:
        return EXIT_UNAVAILABLE;
    case RLOCK_EAUTH:
        fputs("rlock: log in with RLOCK_USER and RLOCK_PASSWORD (or --user "
              "and --password-file) as a [user NAME] of rlockd, or with "
              "RLOCK_AUTH as its auth_token\n",
              stderr);
        return EXIT_NO_LOGIN;
    case RLOCK_ENOPERM:
        fputs("rlock: the user logged in as (RLOCK_USER or --user) lacks the "
              "command or the name: see its commands and names in rlockd's "
              "[user NAME]\n",
              stderr);
        return EXIT_NO_PERMISSION;
    default:
        return EXIT_ERROR;
    }
}

int fail_sys(const char *what)
{
    fprintf(stderr, "rlock: %s: %s\n", what, strerror(errno));
    return EXIT_ERROR;
}

int usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("rlock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'rlock -h' for more information.\n", stderr);
    return EXIT_USAGE;
}
