/*
 * stats.c - the figures and their INFO lines, generated from STATS_LIST.
 */
#include "base/stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

struct stats stats;
struct redis_status redis_status = {.topology = "discovering",
                                    .pubsub = "global"};

int stats_append_section(struct buffer *out, enum stats_section section)
{
    char line[96];
    int n, err = 0;

#define STATS_LINE(sec, type, name, help)                                      \
    if (section == STATS_##sec) {                                              \
        n = snprintf(line, sizeof(line), #name ":%" PRIu64 "\r\n",             \
                     stats.name);                                              \
        err |= buffer_append(out, line, (size_t)n);                            \
    }
    STATS_LIST(STATS_LINE)
#undef STATS_LINE
    return err ? -ENOMEM : 0;
}
