/*
 * test_hashmap.c - the map behind the lock table, sessions and
 * subscriptions: binary keys, growth, removal, and a known SipHash value.
 */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "base/hashmap.h"
#include "suites.h"

START_TEST(siphash13_reference_value)
{
    /* SipHash-1-3 of the empty input with key 00 01 .. 0f. */
    uint8_t key[16];

    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    hashmap_seed(key);
    ck_assert_uint_eq(hashmap_hash("", 0), 0xabac0158050fc4dcULL);
}
END_TEST

START_TEST(put_get_remove)
{
    struct hashmap m;
    int a = 1, b = 2;

    hashmap_init(&m);
    ck_assert_ptr_null(hashmap_get(&m, "a", 1));
    ck_assert_ptr_null(hashmap_remove(&m, "a", 1));
    ck_assert_int_eq(hashmap_put(&m, "a", 1, &a), 0);
    ck_assert_int_eq(hashmap_put(&m, "ab", 2, &b), 0);
    ck_assert_ptr_eq(hashmap_get(&m, "a", 1), &a);
    ck_assert_ptr_eq(hashmap_get(&m, "ab", 2), &b);
    ck_assert_ptr_null(hashmap_get(&m, "b", 1));
    ck_assert_ptr_eq(hashmap_remove(&m, "a", 1), &a);
    ck_assert_ptr_null(hashmap_get(&m, "a", 1));
    ck_assert_uint_eq(m.size, 1);
    hashmap_free(&m);
}
END_TEST

START_TEST(binary_keys_with_nul_bytes)
{
    struct hashmap m;
    int a = 1, b = 2;

    hashmap_init(&m);
    ck_assert_int_eq(hashmap_put(&m, "x\0y", 3, &a), 0);
    ck_assert_int_eq(hashmap_put(&m, "x\0z", 3, &b), 0);
    ck_assert_ptr_eq(hashmap_get(&m, "x\0y", 3), &a);
    ck_assert_ptr_eq(hashmap_get(&m, "x\0z", 3), &b);
    ck_assert_ptr_null(hashmap_get(&m, "x", 1));
    hashmap_free(&m);
}
END_TEST

static void count_value(void *value, void *arg)
{
    (void)value;
    (*(size_t *)arg)++;
}

START_TEST(grows_and_keeps_every_entry)
{
    enum { N = 20000 };
    static char keys[N][24];
    static int values[N];
    struct hashmap m;
    size_t visited = 0;

    hashmap_init(&m);
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "lock:%d", i);
        values[i] = i;
        ck_assert_int_eq(hashmap_put(&m, keys[i], strlen(keys[i]), &values[i]),
                         0);
    }
    ck_assert_uint_eq(m.size, N);
    ck_assert_uint_ge(m.bucket_count, N);
    for (int i = 0; i < N; i++)
        ck_assert_ptr_eq(hashmap_get(&m, keys[i], strlen(keys[i])), &values[i]);
    hashmap_foreach(&m, count_value, &visited);
    ck_assert_uint_eq(visited, N);
    for (int i = 0; i < N; i += 2)
        ck_assert_ptr_eq(hashmap_remove(&m, keys[i], strlen(keys[i])),
                         &values[i]);
    for (int i = 0; i < N; i++)
        ck_assert_ptr_eq(hashmap_get(&m, keys[i], strlen(keys[i])),
                         i % 2 ? &values[i] : NULL);
    hashmap_free(&m);
}
END_TEST

START_TEST(bytes_count_slots_and_entries)
{
    enum { N = 100 };
    static char keys[N][16];
    struct hashmap m;
    size_t with_entries;

    hashmap_init(&m);
    ck_assert_uint_eq(m.bytes, 0);
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        ck_assert_int_eq(hashmap_put(&m, keys[i], strlen(keys[i]), keys[i]), 0);
    }
    with_entries = m.bytes;
    ck_assert_uint_ge(with_entries,
                      malloc_usable_size(m.buckets) + N * 4 * sizeof(void *));
    for (int i = 0; i < N; i++)
        hashmap_remove(&m, keys[i], strlen(keys[i]));
    ck_assert_uint_eq(m.bytes, malloc_usable_size(m.buckets));
    hashmap_free(&m);
    ck_assert_uint_eq(m.bytes, 0);
}
END_TEST

struct item {
    struct hashmap_node node;
    char key[16];
};

static const void *item_key(const struct hashmap_node *node, size_t *len)
{
    const struct item *it = (const struct item *)node;

    *len = strlen(it->key);
    return it->key;
}

static void count_node(struct hashmap_node *node, void *arg)
{
    (void)node;
    (*(size_t *)arg)++;
}

/* Nodes embedded in the caller's values: linked, found, unlinked from the
 * middle of a chain, and never freed by the map. */
START_TEST(intrusive_nodes_are_the_callers)
{
    enum { N = 1000 };
    static struct item items[N];
    struct hashmap m;
    size_t visited = 0;

    hashmap_init_intrusive(&m, item_key);
    for (int i = 0; i < N; i++) {
        snprintf(items[i].key, sizeof(items[i].key), "i%d", i);
        ck_assert_int_eq(hashmap_link(&m, &items[i].node, items[i].key,
                                      strlen(items[i].key)),
                         0);
    }
    ck_assert_uint_eq(m.bytes, malloc_usable_size(m.buckets));
    for (int i = 0; i < N; i++)
        ck_assert_ptr_eq(hashmap_find(&m, items[i].key, strlen(items[i].key)),
                         &items[i].node);
    for (int i = 0; i < N; i += 3)
        hashmap_unlink(&m, &items[i].node);
    for (int i = 0; i < N; i++)
        ck_assert_ptr_eq(hashmap_find(&m, items[i].key, strlen(items[i].key)),
                         i % 3 ? &items[i].node : NULL);
    hashmap_visit(&m, count_node, &visited);
    ck_assert_uint_eq(visited, m.size);
    ck_assert_uint_eq(m.size, N - (N + 2) / 3);
    hashmap_free(&m); /* the static items: a free of one would crash */
    ck_assert_ptr_eq(m.key_of, item_key);
}
END_TEST

Suite *hashmap_suite(void)
{
    Suite *s = suite_create("hashmap");
    TCase *tc = tcase_create("hashmap");

    tcase_add_test(tc, siphash13_reference_value);
    tcase_add_test(tc, put_get_remove);
    tcase_add_test(tc, binary_keys_with_nul_bytes);
    tcase_add_test(tc, grows_and_keeps_every_entry);
    tcase_add_test(tc, bytes_count_slots_and_entries);
    tcase_add_test(tc, intrusive_nodes_are_the_callers);
    suite_add_tcase(s, tc);
    return s;
}
