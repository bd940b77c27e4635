/*
 * log.h - the daemon's log: one line per event on stderr, with a level,
 * timestamped, or with a syslog priority prefix under the journal, or
 * as JSON.
 *
 * Owns the current level and the line format only. Never allocates, so it is safe to call on
 * any error path, including out-of-memory ones.
 */
#ifndef RLOCKD_LOG_H
#define RLOCKD_LOG_H

enum log_level {
    LOG_LEVEL_ERROR,
    LOG_LEVEL_WARN,
    LOG_LEVEL_INFO,
    LOG_LEVEL_DEBUG
};

/* [log] format: text lines, or one JSON object a line for a log
 * collector (Kubernetes, Loki, Elasticsearch):
 * {"time":"...Z","level":"info","pid":N,"msg":"..."}. */
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

/* Picks the line format for where stderr goes; call once at start-up. */
void log_init(void);
void log_set_level(enum log_level level);
void log_set_format(enum log_format format);
int log_enabled(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)                                                         \
    do {                                                                       \
        if (log_enabled(LOG_LEVEL_DEBUG))                                      \
            log_write(LOG_LEVEL_DEBUG, __VA_ARGS__);                           \
    } while (0)

#endif
