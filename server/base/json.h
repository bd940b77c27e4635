/*
 * json.h - the two pieces of JSON the daemon writes itself (lock-lost
 * messages, the HTTP views): strings and object keys, into a buffer.
 */
#ifndef RLOCKD_JSON_H
#define RLOCKD_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "buffer.h"

/* A JSON string: " and \ escaped, and every byte that is not printable
 * ASCII as \u00XX, so that any lock name makes valid JSON in ASCII.
 * 0 or -ENOMEM. */
int json_string(struct buffer *b, const char *s, size_t len);
/* `{"key": ` for an object's first key, else `, "key": `. */
int json_key(struct buffer *b, const char *key, bool first);

#endif
