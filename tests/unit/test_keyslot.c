/*
 * test_keyslot.c - the cluster router's slot of a key against values
 * redis-server 7.0 itself gave for them (CLUSTER KEYSLOT): plain keys,
 * hash tags, empty and unclosed tags, and Redisson's "a}b{c}" trap.
 */
#include <check.h>
#include <string.h>

#include "backend/keyslot.h"
#include "suites.h"

static const struct {
    const char *key;
    unsigned slot;
} redis_says[] = {
    {"123456789", 12739}, /* CRC16/XMODEM's check value 0x31c3 */
    {"", 0},
    {"a", 15495},
    {"redisson_lock__channel:{a}", 15495},
    {"{user:1}:a", 10778},
    {"user:1", 10778},
    {"a}b{c}", 7365}, /* the tag is "c": the first '}' after the '{' */
    {"c", 7365},
    {"{}a", 10875}, /* an empty tag: the whole key */
    {"a{}", 6082},
    {"{}", 15257},
    {"foo{}{bar}", 8363},
    {"foo{{bar}}zap", 4015}, /* the tag is "{bar" */
    {"foo{bar}{zap}", 5061}, /* the first tag only */
};

START_TEST(slots_match_redis)
{
    for (size_t i = 0; i < sizeof(redis_says) / sizeof(redis_says[0]); i++)
        ck_assert_msg(keyslot(redis_says[i].key, strlen(redis_says[i].key)) ==
                          redis_says[i].slot,
                      "keyslot(\"%s\") is %u, Redis says %u", redis_says[i].key,
                      keyslot(redis_says[i].key, strlen(redis_says[i].key)),
                      redis_says[i].slot);
}
END_TEST

START_TEST(binary_keys_hash_every_byte)
{
    ck_assert_uint_ne(keyslot("a\0b", 3), keyslot("a", 1));
    ck_assert_uint_eq(keyslot("{x\0y}1", 6), keyslot("{x\0y}2", 6));
}
END_TEST

Suite *keyslot_suite(void)
{
    Suite *s = suite_create("keyslot");
    TCase *tc = tcase_create("keyslot");

    tcase_add_test(tc, slots_match_redis);
    tcase_add_test(tc, binary_keys_hash_every_byte);
    suite_add_tcase(s, tc);
    return s;
}
