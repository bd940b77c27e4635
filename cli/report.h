/*
 * report.h - how rlock tells what went wrong: one line on stderr,
 * "rlock: <what>: <why>", and the exit status that goes with it. Every
 * file of cli/ reports through here, so that the statuses `rlock -h`
 * documents are chosen in one place.
 */
#ifndef RLOCK_CLI_REPORT_H
#define RLOCK_CLI_REPORT_H

/* rlock's own exit statuses. They replace COMMAND's status, so they keep
 * out of the ranges commands use: sysexits(3) codes, as flock(1) does. */
enum {
    EXIT_NOT_ACQUIRED = 1, /* flock(1)'s status for -n and -w; -E sets it */
    EXIT_USAGE = 64,       /* EX_USAGE, flock(1)'s */
    EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: rlockd (or Redis) cannot serve */
    EXIT_ERROR = 70,       /* EX_SOFTWARE: any other failure */
    EXIT_LOCK_LOST = 75,   /* EX_TEMPFAIL: lost while COMMAND ran */
    EXIT_NO_PERMISSION = 77, /* EX_NOPERM: the user may not (-NOPERM) */
    EXIT_NO_LOGIN = 78,      /* EX_CONFIG: no login, or a wrong one (-NOAUTH) */
    EXIT_CANNOT_EXEC = 126,
    EXIT_NOT_FOUND = 127,
};

/* "rlock: <fmt>: <rlock_strerror(err)>", and for a login error a line
 * naming what to set; the status for err, a librlock error
 * (EXIT_UNAVAILABLE, EXIT_NO_LOGIN, EXIT_NO_PERMISSION or EXIT_ERROR). */
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "rlock: <what>: <strerror(errno)>"; EXIT_ERROR. */
int fail_sys(const char *what);
/* "rlock: <fmt>" and a hint at -h; EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
