/*
 * config_value.c - one setting's value: read from text, written back.
 *
 * A value is checked as its row says before it is stored: an integer
 * within its bounds, an enum among its names, a string within its field,
 * an address or a list of them that parses, glob patterns that compile.
 * A value refused leaves the field as it was, and says why in err.
 *
 * Never: look further than one value. Whether keys agree with each
 * other is config_load.c's question.
 */
#include "base/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/config_int.h"
#include "base/glob.h"

int config_split_host_port(const char *addr, char *host, size_t host_size,
                           int *port)
{
    const char *colon = strrchr(addr, ':');
    const char *start = addr;
    size_t len;
    char *end;
    long p;

    if (colon == NULL)
        return -1;
    len = (size_t)(colon - addr);
    if (addr[0] == '[') { /* [::1]:7379 */
        if (len < 2 || addr[len - 1] != ']')
            return -1;
        start = addr + 1;
        len -= 2;
    }
    /* No blank or bracket in a host name, and digits only in the port
     * (strtol would skip blanks and take a sign). */
    if (len == 0 || len >= host_size || memchr(start, '[', len) != NULL ||
        memchr(start, ']', len) != NULL || memchr(start, ' ', len) != NULL ||
        memchr(start, '\t', len) != NULL || colon[1] < '0' || colon[1] > '9')
        return -1;
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || p < 1 || p > 65535)
        return -1;
    memcpy(host, start, len);
    host[len] = '\0';
    *port = (int)p;
    return 0;
}

int config_next_addr(const char **list, char *host, size_t host_size, int *port)
{
    const char *s = *list + strspn(*list, " \t,");
    size_t len = strcspn(s, ",");
    char entry[320];

    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len == 0)
        return 0;
    if (len >= sizeof(entry))
        return -1;
    memcpy(entry, s, len);
    entry[len] = '\0';
    *list = s + strcspn(s, ",");
    return config_split_host_port(entry, host, host_size, port) == 0 ? 1 : -1;
}

static int set_int(const struct config_row *row, int64_t *dst,
                   const char *value, char *err, size_t err_size)
{
    if (row->kind == KIND_AUTO_INT && strcasecmp(value, "auto") == 0) {
        *dst = SYNC_REPLICAS_AUTO;
        return 0;
    }

    char *end;
    long long v;

    errno = 0;
    v = strtoll(value, &end, row->kind == KIND_MODE ? 8 : 10);
    if (errno != 0 || end == value || *end != '\0') {
        snprintf(err, err_size, "%s: '%s' is not %s", row->key, value,
                 row->kind == KIND_MODE       ? "an octal mode"
                 : row->kind == KIND_AUTO_INT ? "auto or an integer"
                                              : "an integer");
        return -1;
    }
    if (v < row->min || v > row->max) {
        snprintf(err, err_size,
                 row->kind == KIND_MODE
                     ? "%s: %llo is out of range [%llo, %llo]"
                     : "%s: %lld is out of range [%lld, %lld]",
                 row->key, v, (long long)row->min, (long long)row->max);
        return -1;
    }
    *dst = v;
    return 0;
}

static int set_enum(const struct config_row *row, int64_t *dst,
                    const char *value, char *err, size_t err_size)
{
    for (int64_t i = 0; row->names[i] != NULL; i++) {
        if (strcasecmp(row->names[i], value) == 0) {
            *dst = i;
            return 0;
        }
    }
    snprintf(err, err_size, "%s: '%s' is not one of", row->key, value);
    for (size_t i = 0; row->names[i] != NULL; i++) {
        size_t used = strlen(err);
        snprintf(err + used, err_size - used, "%s %s", i ? "," : "",
                 row->names[i]);
    }
    return -1;
}

static int set_string(const struct config_row *row, char *dst,
                      const char *value, char *err, size_t err_size)
{
    char host[128];
    const char *pattern;
    size_t len = strlen(value), pattern_len;
    int port;

    if (len >= row->size) {
        snprintf(err, err_size, "%s: longer than %zu bytes", row->key,
                 row->size - 1);
        return -1;
    }
    if (row->kind == KIND_ADDR && len > 0 &&
        config_split_host_port(value, host, sizeof(host), &port) != 0) {
        snprintf(err, err_size, "%s: '%s' is not host:port", row->key, value);
        return -1;
    }
    if (row->kind == KIND_ADDRS) {
        const char *list = value;
        int n;

        while ((n = config_next_addr(&list, host, sizeof(host), &port)) > 0)
            ;
        if (n < 0) {
            snprintf(err, err_size,
                     "%s: '%s' is not a comma-separated list of host:port",
                     row->key, value);
            return -1;
        }
    }
    if (row->kind == KIND_GLOBS &&
        glob_list_validate(value, &pattern, &pattern_len) != 0) {
        snprintf(err, err_size,
                 "%s: bad pattern '%.*s' (an unterminated [ or a trailing \\)",
                 row->key, (int)pattern_len, pattern);
        return -1;
    }
    memcpy(dst, value, len + 1);
    return 0;
}

int config_set(struct config *cfg, const char *section, const char *key,
               const char *value, char *err, size_t err_size)
{
    size_t i = config_row_find(section, key);

    if (i < config_row_count) {
        const struct config_row *row = &config_rows[i];
        char *field = (char *)cfg + row->offset;

        switch (row->kind) {
        case KIND_INT:
        case KIND_MODE:
        case KIND_AUTO_INT:
            return set_int(row, (int64_t *)field, value, err, err_size);
        case KIND_ENUM:
            return set_enum(row, (int64_t *)field, value, err, err_size);
        case KIND_STRING:
        case KIND_ADDR:
        case KIND_GLOBS:
        case KIND_ADDRS:
            return set_string(row, field, value, err, err_size);
        }
    }
    snprintf(err, err_size, "unknown key '%s' in section [%s]", key, section);
    return -1;
}

static bool is_string(const struct config_row *row)
{
    return row->kind == KIND_STRING || row->kind == KIND_ADDR ||
           row->kind == KIND_GLOBS || row->kind == KIND_ADDRS;
}

const char *config_value_text(const struct config_row *row,
                              const struct config *cfg, char *buf, size_t size)
{
    const char *field = (const char *)cfg + row->offset;
    int64_t v;

    if (row->flags & SECRET)
        return "(secret)";
    if (is_string(row))
        return field;
    memcpy(&v, field, sizeof(v));
    if (row->kind == KIND_ENUM)
        return row->names[v];
    if (row->kind == KIND_AUTO_INT && v == SYNC_REPLICAS_AUTO)
        return "auto";
    snprintf(buf, size, row->kind == KIND_MODE ? "%04llo" : "%lld",
             (long long)v);
    return buf;
}

bool config_value_equal(const struct config_row *row, const struct config *a,
                        const struct config *b)
{
    const char *fa = (const char *)a + row->offset;
    const char *fb = (const char *)b + row->offset;

    if (is_string(row))
        return strcmp(fa, fb) == 0;
    return memcmp(fa, fb, sizeof(int64_t)) == 0;
}
