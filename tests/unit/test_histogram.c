/*
 * test_histogram.c - the latency histograms: an observation lands in the
 * first bucket whose bound it does not pass (a bound is inclusive, as
 * Prometheus's "le"), past every bound in the last one, and the count and
 * sum follow; the Prometheus text sums the buckets up.
 */
#include <check.h>
#include <string.h>

#include "base/histogram.h"
#include "base/stats.h"
#include "suites.h"

START_TEST(observations_land_in_the_first_bucket_they_do_not_pass)
{
    struct histogram h = {0};

    histogram_observe(&h, 0);
    histogram_observe(&h, 100); /* the first bound itself */
    histogram_observe(&h, 101);
    histogram_observe(&h, 60000000);
    histogram_observe(&h, 60000001); /* past every bound: +Inf */
    ck_assert_uint_eq(h.counts[0], 2);
    ck_assert_uint_eq(h.counts[1], 1);
    ck_assert_uint_eq(h.counts[HISTOGRAM_BUCKETS - 1], 1);
    ck_assert_uint_eq(h.counts[HISTOGRAM_BUCKETS], 1);
    ck_assert_uint_eq(h.count, 5);
    ck_assert_uint_eq(h.sum_us, 0 + 100 + 101 + 60000000 + 60000001ULL);
}
END_TEST

START_TEST(bounds_ascend)
{
    for (int i = 1; i < HISTOGRAM_BUCKETS; i++)
        ck_assert_uint_gt(histogram_bounds_us[i], histogram_bounds_us[i - 1]);
}
END_TEST

START_TEST(prometheus_text_has_cumulative_buckets_sum_and_count)
{
    struct buffer out;

    memset(&latency, 0, sizeof(latency));
    histogram_observe(&latency.handoff_seconds, 200);
    histogram_observe(&latency.handoff_seconds, 3000000);
    buffer_init(&out);
    ck_assert_int_eq(stats_append_prometheus(&out), 0);
    ck_assert_int_eq(buffer_append(&out, "", 1), 0);
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE rlockd_handoff_seconds "
                                           "histogram\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "rlockd_handoff_seconds_bucket{le=\"0.0001\"} 0\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "rlockd_handoff_seconds_bucket{le=\"0.00025\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "rlockd_handoff_seconds_bucket{le=\"2.5\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "rlockd_handoff_seconds_bucket{le=\"5\"} 2\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "rlockd_handoff_seconds_bucket{le=\"+Inf\"} 2\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "rlockd_handoff_seconds_sum 3.000200\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "rlockd_handoff_seconds_count 2\n"));
    ck_assert_ptr_nonnull(
        strstr(out.data, "# TYPE rlockd_locks_acquired_total counter\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "# TYPE rlockd_held_locks gauge\n"));
    buffer_free(&out);
    memset(&latency, 0, sizeof(latency));
}
END_TEST

Suite *histogram_suite(void)
{
    Suite *s = suite_create("histogram");
    TCase *tc = tcase_create("histogram");

    tcase_add_test(tc, observations_land_in_the_first_bucket_they_do_not_pass);
    tcase_add_test(tc, bounds_ascend);
    tcase_add_test(tc, prometheus_text_has_cumulative_buckets_sum_and_count);
    suite_add_tcase(s, tc);
    return s;
}
