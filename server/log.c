/*
 * log.c - formats log lines: "2026-11-22T01:02:03.456Z rlockd[pid] LEVEL msg".
 *
 * The whole line is built in one stack buffer and written with a single
 * write(2), so lines from a dying process are never interleaved.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_INFO;
static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void log_set_level(enum log_level level)
{
    current_level = level;
}

int log_enabled(enum log_level level)
{
    return level <= current_level;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timeval tv;
    struct tm tm;
    va_list ap;
    int n;

    if (!log_enabled(level))
        return;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    n = snprintf(line, sizeof(line),
                 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ rlockd[%d] %s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000), (int)getpid(),
                 level_names[level]);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* nowhere left to report a failing stderr */
    }
}
