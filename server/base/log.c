/*
 * log.c - formats log lines for a terminal or for the systemd journal.
 *
 * On a terminal or in a file: "2026-11-22T01:02:03.456Z rlockd[pid] LEVEL
 * msg". When stderr is the journal's stream (systemd sets JOURNAL_STREAM
 * to its device:inode), the journal adds time and pid itself and reads a
 * "<N>" syslog priority prefix instead: "<4>msg".
 *
 * The whole line is built in one stack buffer and written with a single
 * write(2), so lines from a dying process are never interleaved.
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static bool to_journal;
static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const int level_priorities[] = {LOG_ERR, LOG_WARNING, LOG_INFO,
                                       LOG_DEBUG};

/* True when JOURNAL_STREAM names the file stderr is: a redirected stderr
 * inherits the variable but not the stream. */
static bool stderr_is_journal(void)
{
    const char *env = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;

    if (env == NULL || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
        return false;
    if (fstat(STDERR_FILENO, &st) != 0)
        return false;
    return (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

void log_init(void)
{
    to_journal = stderr_is_journal();
}

void log_set_level(enum log_level level)
{
    current_level = level;
}

int log_enabled(enum log_level level)
{
    return level <= current_level;
}

static int format_prefix(char *line, size_t size, enum log_level level)
{
    struct timeval tv;
    struct tm tm;

    if (to_journal)
        return snprintf(line, size, "<%d>", level_priorities[level]);
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    return snprintf(line, size,
                    "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ rlockd[%d] %s ",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                    tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000),
                    (int)getpid(), level_names[level]);
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    if (!log_enabled(level))
        return;
    n = format_prefix(line, sizeof(line), level);
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
