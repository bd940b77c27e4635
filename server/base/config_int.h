/*
 * config_int.h - what only the settings' own files may see.
 *
 * The settings are three files, one concern each. config.c is the
 * table and what walks it whole (the defaults, a reload). config_value.c
 * reads and writes one row's value. config_load.c reads the sources (the
 * ini file, the environment) and checks the keys together. They share the row type and the table,
 * declared here. Nothing outside server/base/config*.c includes it:
 * everyone else reads struct config (config.h).
 */
#ifndef RLOCKD_CONFIG_INT_H
#define RLOCKD_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

/* KIND_MODE: a file mode, an integer written in octal. */
enum config_kind {
    KIND_INT,
    KIND_MODE,
    KIND_STRING,
    KIND_ENUM,
    KIND_ADDR,
    KIND_GLOBS,    /* glob patterns (base/glob.h), space-separated */
    KIND_ADDRS,    /* host:port, comma-separated */
    KIND_AUTO_INT, /* "auto" (SYNC_REPLICAS_AUTO) or an integer */
};

/* Row flags. */
#define LIVE 0x1   /* a SIGHUP reload applies a new value at once */
#define SECRET 0x2 /* never logged */

struct config_row {
    const char *section;
    const char *key;
    enum config_kind kind;
    unsigned flags;
    size_t offset;
    size_t size; /* strings: capacity including the NUL */
    const char *default_value;
    int64_t min, max;         /* integers */
    const char *const *names; /* enums: value i is names[i] */
};

/* The table, in config.c: config_rows[0 .. config_row_count). */
extern const struct config_row config_rows[];
extern const size_t config_row_count;
/* Room for every row, for an array indexed by row (config.c asserts it). */
#define CONFIG_ROW_MAX 256

/* config.c: the row of [section] key, or config_row_count. */
size_t config_row_find(const char *section, const char *key);

/* config_value.c: the value as the ini file spells it ("(secret)" for a
 * secret), and whether two configs hold the same value for row. */
const char *config_value_text(const struct config_row *row,
                              const struct config *cfg, char *buf, size_t size);
bool config_value_equal(const struct config_row *row, const struct config *a,
                        const struct config *b);

#endif
