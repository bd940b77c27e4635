/*
 * session.c - sessions by client-id.
 */
#include "engine/session.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/stats.h"

static struct hashmap session_map;

void session_table_init(void)
{
    hashmap_init(&session_map);
}

void session_table_free(void)
{
    hashmap_free(&session_map);
}

struct session *session_join(const char *id, size_t len)
{
    struct session *s = hashmap_get(&session_map, id, len);

    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL)
            return NULL;
        memcpy(s->id, id, len);
        s->id_len = len;
        list_init(&s->holds);
        if (hashmap_put(&session_map, s->id, len, s) != 0) {
            free(s);
            return NULL;
        }
        stats.client_sessions++;
    }
    s->connections++;
    return s;
}

void session_free(struct session *s)
{
    hashmap_remove(&session_map, s->id, s->id_len);
    stats.client_sessions--;
    free(s);
}
