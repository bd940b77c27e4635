/*
 * test_event_ring.c - the ring of recent events: the newest first, the
 * oldest dropped when full, seq counting every push, and a ring of 0
 * keeping none.
 */
#include <check.h>
#include <string.h>

#include "base/event_ring.h"
#include "suites.h"

START_TEST(keeps_the_newest_first_and_drops_the_oldest)
{
    ck_assert_int_eq(event_ring_init(2), 0);
    event_ring_push(EVENT_LOST, "one %d", 1);
    event_ring_push(EVENT_DEADLOCK, "two");
    event_ring_push(EVENT_LOST, "three");
    ck_assert_uint_eq(event_ring_count(), 2);
    ck_assert_str_eq(event_ring_newest(0)->text, "three");
    ck_assert_uint_eq(event_ring_newest(0)->seq, 3);
    ck_assert_str_eq(event_ring_newest(1)->text, "two");
    ck_assert_int_eq(event_ring_newest(1)->kind, EVENT_DEADLOCK);
    ck_assert_str_eq(event_kind_name(EVENT_DEADLOCK), "deadlock");
    ck_assert_ptr_null(event_ring_newest(2));
    ck_assert_uint_gt(event_ring_newest(0)->time_ms, 0);
    event_ring_free();
}
END_TEST

START_TEST(a_ring_of_zero_keeps_nothing)
{
    ck_assert_int_eq(event_ring_init(0), 0);
    event_ring_push(EVENT_LOST, "gone");
    ck_assert_uint_eq(event_ring_count(), 0);
    ck_assert_ptr_null(event_ring_newest(0));
    event_ring_free();
}
END_TEST

Suite *event_ring_suite(void)
{
    Suite *s = suite_create("event_ring");
    TCase *tc = tcase_create("event_ring");

    tcase_add_test(tc, keeps_the_newest_first_and_drops_the_oldest);
    tcase_add_test(tc, a_ring_of_zero_keeps_nothing);
    suite_add_tcase(s, tc);
    return s;
}
