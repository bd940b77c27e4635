/*
 * test_client_id.c - the client-id rule CLIENTID and librlock check, and
 * the random UUID v4 ids both make up.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "client_id.h"
#include "suites.h"

#define RANDOM_ROUNDS 1000

START_TEST(client_id_validation)
{
    char longest[CLIENT_ID_MAX_LEN + 2];
    memset(longest, 'a', sizeof longest);
    ck_assert(client_id_valid("a", 1));
    ck_assert(client_id_valid("Az09._-", 7));
    ck_assert(client_id_valid("9f1c2d3e-0000-4abc-8def-0123456789ab", 36));
    ck_assert(client_id_valid(longest, CLIENT_ID_MAX_LEN));
    ck_assert(!client_id_valid(longest, CLIENT_ID_MAX_LEN + 1));
    ck_assert(!client_id_valid("", 0));

    static const char *const bad[] = {
        "a b", "a:b", "a/b", "{a}", "a\t", "\xc3\xa9", "a+b", "a@b", "~",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!client_id_valid(bad[i], strlen(bad[i])), "'%s' accepted",
                      bad[i]);
    ck_assert(!client_id_valid("a\0b", 3));
    /* only len bytes are looked at */
    ck_assert(client_id_valid("ab:", 2));
}
END_TEST

/* 8-4-4-4-12 lower-case hex digits, version 4, variant 10xx, nothing more. */
static bool is_uuid_v4_text(const char *id)
{
    char p1[9], p2[5], p3[4], variant, p4[4], p5[13], extra;
    int fields = sscanf(id,
                        "%8[0-9a-f]-%4[0-9a-f]-4%3[0-9a-f]-%c%3[0-9a-f]-"
                        "%12[0-9a-f]%c",
                        p1, p2, p3, &variant, p4, p5, &extra);

    return fields == 6 && strlen(id) == CLIENT_ID_RANDOM_SIZE - 1 &&
           strchr("89ab", variant) != NULL;
}

START_TEST(random_ids_are_valid_distinct_uuid_v4)
{
    char id[CLIENT_ID_RANDOM_SIZE], previous[CLIENT_ID_RANDOM_SIZE] = "";

    for (int i = 0; i < RANDOM_ROUNDS; i++) {
        ck_assert_int_eq(client_id_random(id), 0);
        ck_assert_msg(is_uuid_v4_text(id), "not a UUID v4: %s", id);
        ck_assert(client_id_valid(id, strlen(id)));
        ck_assert_str_ne(id, previous);
        memcpy(previous, id, sizeof id);
    }
}
END_TEST

Suite *client_id_suite(void)
{
    Suite *s = suite_create("client_id");
    TCase *rule = tcase_create("rule");
    tcase_add_test(rule, client_id_validation);
    tcase_add_test(rule, random_ids_are_valid_distinct_uuid_v4);
    suite_add_tcase(s, rule);
    return s;
}
