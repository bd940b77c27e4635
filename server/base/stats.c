/*
 * stats.c - the counters and their INFO lines.
 */
#include "base/stats.h"

#include <inttypes.h>
#include <stdio.h>

struct stats stats;

int stats_append_counters(struct buffer *out)
{
    char line[96];
    int n, err = 0;

#define STATS_LINE(name)                                                       \
    n = snprintf(line, sizeof(line), #name ":%" PRIu64 "\r\n", stats.name);    \
    err |= buffer_append(out, line, (size_t)n);
    STATS_COUNTERS(STATS_LINE)
#undef STATS_LINE
    return err ? -1 : 0;
}
