/*
 * fence_memory.c - a least-recently-granted map of lock names to the
 * highest fencing token handed out for each (fence_memory.h). Each entry
 * is one allocation, its name inline (the map's key lives in the value);
 * the list's head is the most recent grant, its tail the next to go.
 */
#include "engine/fence_memory.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/list.h"
#include "base/log.h"

struct fence_entry {
    struct list_node link; /* fences.recent, most recent first */
    int64_t token;
    size_t len;
    char name[];
};

static struct {
    struct hashmap names; /* name -> struct fence_entry */
    struct list_node recent;
    size_t size;
} fences;

void fence_memory_init(void)
{
    hashmap_init(&fences.names);
    list_init(&fences.recent);
    fences.size = 0;
}

static void forget(struct fence_entry *e)
{
    hashmap_remove(&fences.names, e->name, e->len);
    list_remove(&e->link);
    fences.size--;
    free(e);
}

void fence_memory_free(void)
{
    struct list_node *node;

    while ((node = list_first(&fences.recent)) != NULL)
        forget(list_entry(node, struct fence_entry, link));
    hashmap_free(&fences.names);
}

int64_t fence_memory_floor(const char *name, size_t len)
{
    struct fence_entry *e = hashmap_get(&fences.names, name, len);

    return e != NULL ? e->token : 0;
}

void fence_memory_note(const char *name, size_t len, int64_t token,
                       size_t max_names)
{
    struct fence_entry *e = hashmap_get(&fences.names, name, len);

    if (e != NULL) {
        list_remove(&e->link);
    } else {
        e = malloc(sizeof(*e) + len);
        if (e == NULL || hashmap_put(&fences.names, memcpy(e->name, name, len),
                                     len, e) != 0) {
            free(e);
            log_error("out of memory: the fencing token of '%.*s' is not "
                      "remembered",
                      (int)len, name);
            return;
        }
        e->len = len;
        e->token = token;
        fences.size++;
    }
    if (token > e->token)
        e->token = token;
    list_insert_before(fences.recent.next, &e->link);
    while (fences.size > max_names)
        forget(list_entry(list_last(&fences.recent), struct fence_entry, link));
}

size_t fence_memory_size(void)
{
    return fences.size;
}
