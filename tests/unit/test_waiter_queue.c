/*
 * test_waiter_queue.c - FIFO order, removal from any position, head
 * tracking: the order in which local waiters get a lock.
 */
#include <check.h>

#include "engine/waiter_queue.h"
#include "suites.h"

struct waiter {
    int id;
    struct list_node link;
};

static int head_id(const struct waiter_queue *q)
{
    struct list_node *n = waiter_queue_head(q);
    return n ? list_entry(n, struct waiter, link)->id : -1;
}

START_TEST(empty_queue)
{
    struct waiter_queue q;

    waiter_queue_init(&q);
    ck_assert(waiter_queue_empty(&q));
    ck_assert_ptr_null(waiter_queue_head(&q));
    ck_assert_ptr_null(waiter_queue_pop_head(&q));
    ck_assert_uint_eq(q.length, 0);
}
END_TEST

START_TEST(pops_in_arrival_order)
{
    struct waiter_queue q;
    struct waiter w[5];

    waiter_queue_init(&q);
    for (int i = 0; i < 5; i++) {
        w[i].id = i;
        waiter_queue_push_tail(&q, &w[i].link);
    }
    ck_assert_uint_eq(q.length, 5);
    for (int i = 0; i < 5; i++) {
        ck_assert(waiter_queue_is_head(&q, &w[i].link));
        struct list_node *n = waiter_queue_pop_head(&q);
        ck_assert_int_eq(list_entry(n, struct waiter, link)->id, i);
        ck_assert(!list_linked(n));
    }
    ck_assert(waiter_queue_empty(&q));
}
END_TEST

START_TEST(remove_from_middle_head_and_tail)
{
    struct waiter_queue q;
    struct waiter w[5];

    waiter_queue_init(&q);
    for (int i = 0; i < 5; i++) {
        w[i].id = i;
        waiter_queue_push_tail(&q, &w[i].link);
    }
    waiter_queue_remove(&q, &w[2].link); /* a waiter timed out */
    waiter_queue_remove(&q, &w[0].link); /* the head disconnected */
    ck_assert_int_eq(head_id(&q), 1);
    ck_assert(!waiter_queue_is_head(&q, &w[3].link));
    waiter_queue_remove(&q, &w[4].link);
    ck_assert_uint_eq(q.length, 2);
    ck_assert_int_eq(
        list_entry(waiter_queue_pop_head(&q), struct waiter, link)->id, 1);
    ck_assert_int_eq(
        list_entry(waiter_queue_pop_head(&q), struct waiter, link)->id, 3);
    ck_assert(waiter_queue_empty(&q));
}
END_TEST

START_TEST(requeue_goes_to_the_tail)
{
    struct waiter_queue q;
    struct waiter a = {.id = 1}, b = {.id = 2};

    waiter_queue_init(&q);
    waiter_queue_push_tail(&q, &a.link);
    waiter_queue_push_tail(&q, &b.link);
    waiter_queue_push_tail(&q, waiter_queue_pop_head(&q));
    ck_assert_int_eq(head_id(&q), 2);
    ck_assert_uint_eq(q.length, 2);
}
END_TEST

Suite *waiter_queue_suite(void)
{
    Suite *s = suite_create("waiter_queue");
    TCase *tc = tcase_create("fifo");

    tcase_add_test(tc, empty_queue);
    tcase_add_test(tc, pops_in_arrival_order);
    tcase_add_test(tc, remove_from_middle_head_and_tail);
    tcase_add_test(tc, requeue_goes_to_the_tail);
    suite_add_tcase(s, tc);
    return s;
}
