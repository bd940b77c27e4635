/*
 * log.c - formats log lines for a terminal or for the systemd journal.
 *
 * On a terminal or in a file: "2026-11-22T01:02:03.456Z rlockd[pid] LEVEL
 * msg". When stderr is the journal's stream (systemd sets JOURNAL_STREAM
 * to its device:inode), the journal adds time and pid itself and reads a
 * "<N>" syslog priority prefix instead: "<4>msg". With [log] format =
 * json, wherever it goes, one JSON object a line (log.h), the message's
 * quotes, backslashes and control bytes escaped; other bytes are passed
 * as they are.
 *
 * The whole line is built in one stack buffer and written with a single
 * write(2), so lines from a dying process are never interleaved.
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static enum log_format current_format = LOG_FORMAT_TEXT;
static bool to_journal;
static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const char *const json_level_names[] = {"error", "warn", "info",
                                               "debug"};
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

void log_set_format(enum log_format format)
{
    current_format = format;
}

int log_enabled(enum log_level level)
{
    return level <= current_level;
}

static int format_prefix(char *line, size_t size, enum log_level level)
{
    bool json = current_format == LOG_FORMAT_JSON;
    char stamp[64];
    struct timeval tv;
    struct tm tm;

    if (to_journal && !json)
        return snprintf(line, size, "<%d>", level_priorities[level]);
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000));
    if (json)
        return snprintf(line, size,
                        "{\"time\":\"%s\",\"level\":\"%s\",\"pid\":%d,"
                        "\"msg\":\"",
                        stamp, json_level_names[level], (int)getpid());
    return snprintf(line, size, "%s rlockd[%d] %s ", stamp, (int)getpid(),
                    level_names[level]);
}

/* Appends msg to line[n..size) as the inside of a JSON string; the new
 * length, cut (at a whole escape) where it would not fit. */
static size_t append_json_escaped(char *line, size_t n, size_t size,
                                  const char *msg)
{
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
        char esc[8];
        size_t len;

        if (*c == '"' || *c == '\\')
            len = (size_t)snprintf(esc, sizeof(esc), "\\%c", *c);
        else if (*c < 0x20)
            len = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", *c);
        else
            esc[0] = (char)*c, len = 1;
        if (n + len > size)
            break;
        memcpy(line + n, esc, len);
        n += len;
    }
    return n;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char line[2048], msg[1024];
    va_list ap;
    size_t n;
    int prefix;

    if (!log_enabled(level))
        return;
    prefix = format_prefix(line, sizeof(line), level);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    n = prefix < 0 ? 0 : (size_t)prefix;
    if (current_format == LOG_FORMAT_JSON) {
        n = append_json_escaped(line, n, sizeof(line) - 3, msg);
        line[n++] = '"';
        line[n++] = '}';
    } else {
        n += (size_t)snprintf(line + n, sizeof(line) - 1 - n, "%s", msg);
    }
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
        /* nowhere left to report a failing stderr */
    }
}
