#include "base/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int json_string(struct buffer *b, const char *s, size_t len)
{
    char esc[8];
    int err = buffer_append(b, "\"", 1);

    for (size_t i = 0; i < len && err == 0; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            err = buffer_append(b, esc, 2);
        } else if (ch < 0x20 || ch >= 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", ch);
            err = buffer_append(b, esc, 6);
        } else {
            err = buffer_append(b, s + i, 1);
        }
    }
    return err ? err : buffer_append(b, "\"", 1);
}

int json_key(struct buffer *b, const char *key, bool first)
{
    int err = buffer_append(b, first ? "{" : ", ", first ? 1 : 2);

    err |= json_string(b, key, strlen(key));
    err |= buffer_append(b, ": ", 2);
    return err ? -ENOMEM : 0;
}
