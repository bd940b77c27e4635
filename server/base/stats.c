/*
 * stats.c - the figures, their INFO lines and their Prometheus text,
 * generated from STATS_LIST and LATENCY_LIST.
 */
#include "base/stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/process_metrics.h"
#include "base/version.h"

#include "base/tls.h"

struct stats stats;
struct latency latency;
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
    err |= tls_cert_append_info(out, (int)section);
    return err ? -ENOMEM : 0;
}

/* Appends printf's text to out; false when out of memory. */
static bool append_format(struct buffer *out, const char *format, ...)
{
    char line[256];
    va_list ap;
    int n;

    va_start(ap, format);
    n = vsnprintf(line, sizeof(line), format, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < sizeof(line) &&
           buffer_append(out, line, (size_t)n) == 0;
}

/* A histogram as Prometheus reads one: cumulative buckets by their upper
 * bound in seconds, then the sum and the count. */
static bool append_histogram(struct buffer *out, const char *name,
                             const char *help, const struct histogram *h)
{
    uint64_t below = 0;
    bool ok = append_format(out,
                            "# HELP rlockd_%s %s\n# TYPE rlockd_%s "
                            "histogram\n",
                            name, help, name);

    for (int i = 0; ok && i < HISTOGRAM_BUCKETS; i++) {
        below += h->counts[i];
        ok = append_format(out, "rlockd_%s_bucket{le=\"%g\"} %" PRIu64 "\n",
                           name, (double)histogram_bounds_us[i] / 1e6, below);
    }
    return ok &&
           append_format(out,
                         "rlockd_%s_bucket{le=\"+Inf\"} %" PRIu64 "\n"
                         "rlockd_%s_sum %.6f\nrlockd_%s_count %" PRIu64 "\n",
                         name, h->count, name, (double)h->sum_us / 1e6, name,
                         h->count);
}

/* A counter's name ends in _total, as Prometheus names them; INFO's
 * total_* names (Redis's) drop their own "total_" there, so that none
 * says it twice (rlockd_commands_processed_total). */
static bool append_metric(struct buffer *out, const char *name,
                          const char *help, enum stats_type type,
                          uint64_t value)
{
    static const char total[] = "total_";
    const char *suffix = type == STATS_COUNTER ? "_total" : "";

    if (type == STATS_COUNTER && strncmp(name, total, sizeof(total) - 1) == 0)
        name += sizeof(total) - 1;

    return append_format(out,
                         "# HELP rlockd_%s%s %s\n# TYPE rlockd_%s%s %s\n"
                         "rlockd_%s%s %" PRIu64 "\n",
                         name, suffix, help, name, suffix,
                         type == STATS_COUNTER ? "counter" : "gauge", name,
                         suffix, value);
}

int stats_append_prometheus(struct buffer *out)
{
    bool ok = append_format(out,
                            "# HELP rlockd_build_info rlockd's release\n"
                            "# TYPE rlockd_build_info gauge\n"
                            "rlockd_build_info{version=\"%s\"} 1\n",
                            RLOCKD_VERSION);

#define STATS_METRIC(sec, type, name, help)                                    \
    ok = ok && append_metric(out, #name, help, STATS_##type, stats.name);
    STATS_LIST(STATS_METRIC)
#undef STATS_METRIC
#define LATENCY_METRIC(name, help)                                             \
    ok = ok && append_histogram(out, #name, help, &latency.name);
    LATENCY_LIST(LATENCY_METRIC)
#undef LATENCY_METRIC
    ok = ok && tls_cert_append_prometheus(out) == 0;
    return ok ? process_metrics_append(out) : -ENOMEM;
}
