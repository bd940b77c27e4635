/*
 * histogram.c - the buckets and the counting of histogram.h.
 */
#include "base/histogram.h"

const uint64_t histogram_bounds_us[HISTOGRAM_BUCKETS] = {
    100,     250,     500,     1000,     2500,     5000,
    10000,   25000,   50000,   100000,   250000,   500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

void histogram_observe(struct histogram *h, uint64_t us)
{
    int i = 0;

    while (i < HISTOGRAM_BUCKETS && us > histogram_bounds_us[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum_us += us;
}
