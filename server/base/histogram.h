/*
 * histogram.h - latency histograms with fixed buckets, the shape a
 * Prometheus histogram has.
 *
 * Owns the bucket bounds, the same for every histogram (100 us to 60 s,
 * roughly three per decade: a lock's latencies run from a Redis round
 * trip to a long wait), and the counting. Recording is a few adds on the
 * loop's thread; readers (the metrics endpoint) sum the buckets up.
 */
#ifndef RLOCKD_HISTOGRAM_H
#define RLOCKD_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_BUCKETS 18

/* Each bucket's upper bound, in microseconds, ascending. */
extern const uint64_t histogram_bounds_us[HISTOGRAM_BUCKETS];

struct histogram {
    /* Observations per bucket, not cumulative; the last one past every
     * bound (+Inf). */
    uint64_t counts[HISTOGRAM_BUCKETS + 1];
    uint64_t count;
    uint64_t sum_us;
};

void histogram_observe(struct histogram *h, uint64_t us);

#endif
