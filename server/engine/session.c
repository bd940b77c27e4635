/*
 * session.c - sessions by client-id, and what happens when one ends.
 */
#include "engine/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/hashmap.h"
#include "engine/lock_table.h"
#include "engine/locking.h"
#include "base/log.h"

static struct hashmap sessions;
static const struct config *config;

void session_init(const struct config *cfg)
{
    config = cfg;
    hashmap_init(&sessions);
}

static void session_end(struct session *s)
{
    struct list_node *pos, *tmp;
    bool release = config->on_disconnect == ON_DISCONNECT_RELEASE;

    if (s->hold_count > 0)
        log_info("client %s gone: %s its %zu lock(s)", s->id,
                 release ? "releasing" : "letting expire", s->hold_count);
    list_for_each_safe(pos, tmp, &s->holds)
    {
        struct hold *h = list_entry(pos, struct hold, session_link);
        if (release && !h->lost)
            locking_release_owner(h->lock, h->field, h->field_len);
        hold_drop(h);
    }
    hashmap_remove(&sessions, s->id, s->id_len);
    free(s);
}

void session_free_all(void)
{
    hashmap_free(&sessions);
}

struct session *session_join(const char *id, size_t len)
{
    struct session *s = hashmap_get(&sessions, id, len);

    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL)
            return NULL;
        memcpy(s->id, id, len);
        s->id_len = len;
        list_init(&s->holds);
        if (hashmap_put(&sessions, s->id, len, s) != 0) {
            free(s);
            return NULL;
        }
    }
    s->connections++;
    return s;
}

void session_leave(struct session *s)
{
    if (--s->connections == 0)
        session_end(s);
}

void session_random_id(char out[37])
{
    unsigned char b[16];
    size_t got = 0;

    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
             b[11], b[12], b[13], b[14], b[15]);
}

size_t session_count(void)
{
    return sessions.size;
}

void session_add_hold(struct session *s, struct hold *h)
{
    list_push_tail(&s->holds, &h->session_link);
    s->hold_count++;
}

void session_remove_hold(struct session *s, struct hold *h)
{
    list_remove(&h->session_link);
    s->hold_count--;
}
