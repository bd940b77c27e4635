/*
 * test_slab.c - the allocator of the lock table's records: sizes per
 * class, zeroed memory, a freed slot handed out again, emptied blocks
 * given back to the system but one spare, objects past the largest class,
 * and many objects allocated and freed in random order never overlapping
 * nor losing their contents.
 *
 * Under AddressSanitizer slab_alloc is calloc (SLAB_USES_BLOCKS 0): the
 * checks of blocks and slot reuse are then left out, the others hold.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/slab.h"
#include "suites.h"

#define SLAB_TEST_BLOCK ((uintptr_t)64 * 1024)

START_TEST(sizes_round_up_to_their_class)
{
    char *a, *b;

    ck_assert_uint_eq(slab_size(1), 8);
    ck_assert_uint_eq(slab_size(8), 8);
    ck_assert_uint_eq(slab_size(9), 16);
    ck_assert_uint_eq(slab_size(100), 104);
    ck_assert_uint_eq(slab_size(120), 120);
    ck_assert_uint_eq(slab_size(SLAB_MAX_SIZE), SLAB_MAX_SIZE);
    /* past the classes, what glibc's malloc takes: 8 B header, 16 B steps */
    ck_assert_uint_eq(slab_size(SLAB_MAX_SIZE + 1), 272);
    a = slab_alloc(100);
    b = slab_alloc(100);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq((uintptr_t)a % 8, 0);
    ck_assert_uint_eq((uintptr_t)b % 8, 0);
    /* two objects of one class in one block sit a whole class apart */
    if (SLAB_USES_BLOCKS && ((uintptr_t)a ^ (uintptr_t)b) < SLAB_TEST_BLOCK)
        ck_assert_uint_eq((uintptr_t)(a > b ? a - b : b - a) % 104, 0);
    slab_free(a, 100);
    slab_free(b, 100);
}
END_TEST

START_TEST(memory_is_zeroed_and_a_freed_slot_is_reused)
{
    unsigned char *p = slab_alloc(200), *q;

    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < 200; i++)
        ck_assert_uint_eq(p[i], 0);
    memset(p, 0xff, 200);
    slab_free(p, 200);
    q = slab_alloc(200);
    ck_assert_ptr_nonnull(q);
    if (SLAB_USES_BLOCKS)
        ck_assert_ptr_eq(q, p);
    for (size_t i = 0; i < 200; i++)
        ck_assert_uint_eq(q[i], 0);
    slab_free(q, 200);
}
END_TEST

/* Many objects in one class take many blocks, which all go back once the
 * objects are freed, but one spare; and an object taken and freed in a
 * loop then maps nothing. */
START_TEST(emptied_blocks_go_back_but_one_spare)
{
    enum { COUNT = 200000, SIZE = 64 };
    void **objects = calloc(COUNT, sizeof(*objects));
    size_t before = slab_blocks(), maps;

    ck_assert_ptr_nonnull(objects);
    for (size_t i = 0; i < COUNT; i++) {
        objects[i] = slab_alloc(SIZE);
        ck_assert_ptr_nonnull(objects[i]);
    }
    if (SLAB_USES_BLOCKS)
        ck_assert_uint_ge(slab_blocks() - before,
                          COUNT * SIZE / SLAB_TEST_BLOCK);
    for (size_t i = 0; i < COUNT; i++)
        slab_free(objects[i], SIZE);
    ck_assert_uint_le(slab_blocks(), before + 1);
    maps = slab_maps();
    for (int i = 0; i < 1000; i++)
        slab_free(slab_alloc(SIZE), SIZE);
    ck_assert_uint_eq(slab_maps(), maps);
    free(objects);
}
END_TEST

START_TEST(objects_past_the_largest_class_come_from_malloc)
{
    size_t before = slab_blocks();
    unsigned char *p = slab_alloc(SLAB_MAX_SIZE + 1000);

    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < SLAB_MAX_SIZE + 1000; i++)
        ck_assert_uint_eq(p[i], 0);
    memset(p, 0xab, SLAB_MAX_SIZE + 1000);
    ck_assert_uint_eq(slab_blocks(), before);
    slab_free(p, SLAB_MAX_SIZE + 1000);
}
END_TEST

/* xorshift64: the same sequence on every run. */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

struct live_object {
    unsigned char *p;
    size_t size;
    unsigned char fill;
};

static int by_address(const void *a, const void *b)
{
    const struct live_object *x = a, *y = b;

    return (x->p > y->p) - (x->p < y->p);
}

/* No two live objects share a byte: sorted by address, each ends before
 * the next begins. */
static void check_no_overlap(const struct live_object *objects, size_t count)
{
    struct live_object *sorted = calloc(count, sizeof(*sorted));
    size_t n = 0;

    ck_assert_ptr_nonnull(sorted);
    for (size_t i = 0; i < count; i++)
        if (objects[i].p != NULL)
            sorted[n++] = objects[i];
    qsort(sorted, n, sizeof(*sorted), by_address);
    for (size_t i = 1; i < n; i++)
        ck_assert_uint_le((uintptr_t)(sorted[i - 1].p + sorted[i - 1].size),
                          (uintptr_t)sorted[i].p);
    free(sorted);
}

/* Every byte of o still holds what was written in it. */
static void check_contents(const struct live_object *o)
{
    size_t i = 0;

    while (i < o->size && o->p[i] == o->fill)
        i++;
    ck_assert_uint_eq(i, o->size);
}

/* Objects of every class and past them, allocated and freed in random
 * order: each comes zeroed, keeps what was written in it until freed,
 * and never overlaps another. */
START_TEST(random_order_keeps_objects_apart_and_intact)
{
    enum { SLOTS = 20000, STEPS = 400000 };
    struct live_object *objects = calloc(SLOTS, sizeof(*objects));
    uint64_t state = 0x9e3779b97f4a7c15u;
    size_t before = slab_blocks();

    ck_assert_ptr_nonnull(objects);
    for (unsigned step = 1; step <= STEPS; step++) {
        struct live_object *o = &objects[next_random(&state) % SLOTS];

        if (o->p != NULL) {
            check_contents(o);
            slab_free(o->p, o->size);
            o->p = NULL;
        } else {
            o->size = 1 + next_random(&state) % (SLAB_MAX_SIZE + 64);
            o->p = slab_alloc(o->size);
            ck_assert_ptr_nonnull(o->p);
            o->fill = 0;
            check_contents(o);
            o->fill = (unsigned char)(1 + step % 255);
            memset(o->p, o->fill, o->size);
        }
        if (step % 100000 == 0)
            check_no_overlap(objects, SLOTS);
    }
    for (size_t i = 0; i < SLOTS; i++) {
        if (objects[i].p != NULL) {
            check_contents(&objects[i]);
            slab_free(objects[i].p, objects[i].size);
        }
    }
    /* all back, but a spare per class */
    ck_assert_uint_le(slab_blocks(), before + SLAB_MAX_SIZE / 8);
    free(objects);
}
END_TEST

Suite *slab_suite(void)
{
    Suite *s = suite_create("slab");
    TCase *tc = tcase_create("slab");

    tcase_add_test(tc, sizes_round_up_to_their_class);
    tcase_add_test(tc, memory_is_zeroed_and_a_freed_slot_is_reused);
    tcase_add_test(tc, emptied_blocks_go_back_but_one_spare);
    tcase_add_test(tc, objects_past_the_largest_class_come_from_malloc);
    tcase_add_test(tc, random_order_keeps_objects_apart_and_intact);
    suite_add_tcase(s, tc);
    return s;
}
