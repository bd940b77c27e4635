/*
 * test_record_keys.c - which lock keys reach rlockd's own records
 * (record_keys_reserved): every record form is refused, under no prefix
 * and under one, and the names around them are not.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "engine/lock_kind.h"
#include "engine/record_keys.h"
#include "suites.h"

/* Whether name, under prefix, is refused for kind; why goes to out. */
static bool reserved_as(const char *prefix, const struct lock_kind *kind,
                        const char *name, char *why, size_t size)
{
    char key[512];

    snprintf(key, sizeof(key), "%s%s", prefix, name);
    return record_keys_reserved(prefix, kind, key, strlen(key), why, size);
}

static bool reserved(const char *prefix, const struct lock_kind *kind,
                     const char *name)
{
    char why[256];

    return reserved_as(prefix, kind, name, why, sizeof(why));
}

/* Whether name is refused for every kind (true) or none (false); a
 * name refused for some kinds only fails. */
static void ck_every_kind(const char *prefix, const char *name, bool want)
{
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++)
        ck_assert_msg(reserved(prefix, lock_kinds[k], name) == want,
                      "'%s%s' as a %s: want %s", prefix, name,
                      lock_kinds[k]->name, want ? "reserved" : "allowed");
}

START_TEST(a_session_record_is_reserved_for_every_kind)
{
    char why[256];

    ck_every_kind("", "rlockd_session:{victim}", true);
    ck_every_kind("app:", "rlockd_session:{victim}", true);
    ck_assert(reserved_as("", &lock_kind_rlock, "rlockd_session:{victim}", why,
                          sizeof(why)));
    ck_assert_str_eq(why, "rlockd_session:{victim} is rlockd's record of the "
                          "session of client-id victim");
    ck_assert(reserved_as("app:", &lock_kind_semaphore,
                          "rlockd_session:{a.b-C_9}", why, sizeof(why)));
    ck_assert_str_eq(why, "app:rlockd_session:{a.b-C_9} is rlockd's record "
                          "of the session of client-id a.b-C_9");
}
END_TEST

START_TEST(names_that_are_no_session_record_are_allowed)
{
    /* no client-id is empty, has a brace or a space, or is past 64 */
    ck_every_kind("", "rlockd_session:{}", false);
    ck_every_kind("", "rlockd_session:{a b}", false);
    ck_every_kind("", "rlockd_session:{a}x", false);
    ck_every_kind("", "rlockd_session:{{a}}", false);
    ck_every_kind("",
                  "rlockd_session:{"
                  "12345678901234567890123456789012345678901234567890"
                  "123456789012345}",
                  false);
    ck_every_kind("", "rlockd_session:victim", false);
    ck_every_kind("", "xrlockd_session:{victim}", false);
    ck_every_kind("", "orders:42", false);
    /* another prefix's record is not this prefix's */
    ck_every_kind("app:", "other:rlockd_session:{victim}", false);
}
END_TEST

START_TEST(a_semaphores_records_are_reserved_for_every_kind)
{
    char why[256];

    ck_every_kind("", "rlockd_permits:{sem}", true);
    ck_every_kind("", "rlockd_permits_deadline:{sem}", true);
    ck_every_kind("", "{sem}:timeout", true);
    /* a name with a hash tag of its own is named without braces */
    ck_every_kind("", "rlockd_permits:a{b}", true);
    ck_every_kind("", "rlockd_permits_deadline:{b}a", true);
    ck_every_kind("", "a{b}:timeout", true);
    ck_assert(reserved_as("", &lock_kind_rlock, "rlockd_permits:{sem}", why,
                          sizeof(why)));
    ck_assert_str_eq(why, "rlockd_permits:{sem} is rlockd's record of the "
                          "permit holders of semaphore sem");
    ck_assert(
        reserved_as("", &lock_kind_latch, "{sem}:timeout", why, sizeof(why)));
    ck_assert_str_eq(why, "{sem}:timeout is rlockd's record of the expirable "
                          "permits of semaphore sem");
}
END_TEST

START_TEST(names_that_are_no_semaphore_record_are_allowed)
{
    ck_every_kind("", "rlockd_permits:sem", false); /* no name's: no '{' */
    ck_every_kind("", "sem:timeout", false);
    ck_every_kind("", "rlockd_permits:", false);
    ck_every_kind("", "rlockd_permits", false);
    ck_every_kind("", "rlockd_permitsx:{sem}", false);
    ck_every_kind("", "{sem}:timeouts", false);
    ck_every_kind("", "redisson_lock_queue:{x}", false); /* Redisson's */
    ck_every_kind("", "redisson_lock_token:{x}", false);
}
END_TEST

START_TEST(under_a_prefix_only_that_prefixs_semaphores_records_are_reserved)
{
    /* records are "rlockd_permits:{app:sem}": app:-keys never reach them */
    ck_every_kind("app:", "rlockd_permits:{sem}", false);
    ck_every_kind("app:", "rlockd_permits_deadline:{sem}", false);
    ck_every_kind("app:", "sem:timeout", false);
    /* but "app:{sem}:timeout" is semaphore "{sem}"'s expirable permits */
    ck_every_kind("app:", "{sem}:timeout", true);
    ck_every_kind("app:", "x{sem}:timeout", true);
    ck_every_kind("app:", "{sem}x:timeout", true);
    /* a prefix that a record starts with reaches its own semaphores' */
    ck_every_kind("rlockd_", "permits:{rlockd_sem}", true);
    ck_every_kind("rlockd_", "permits:{other}", false);
}
END_TEST

START_TEST(a_braced_semaphore_name_is_reserved_it_has_the_plain_names_records)
{
    char why[256];

    ck_assert(reserved_as("", &lock_kind_semaphore, "{sem}", why, sizeof(why)));
    ck_assert_str_eq(why, "its key rlockd_permits:{sem} is rlockd's record of "
                          "the permit holders of semaphore sem");
    ck_assert(reserved("", &lock_kind_expirable, "{sem}"));
    ck_assert(!reserved("", &lock_kind_semaphore, "sem"));
    ck_assert(!reserved("", &lock_kind_semaphore, "{sem}x"));
    ck_assert(!reserved("", &lock_kind_semaphore, "x{sem}"));
    ck_assert(!reserved("", &lock_kind_semaphore, "{a}{b}"));
    /* the locks and the latch keep no records: "{sem}" is theirs to use */
    ck_assert(!reserved("", &lock_kind_rlock, "{sem}"));
    ck_assert(!reserved("", &lock_kind_fair, "{sem}"));
    ck_assert(!reserved("", &lock_kind_fenced, "{sem}"));
    ck_assert(!reserved("", &lock_kind_latch, "{sem}"));
    /* under a prefix, "app:{sem}" has a '{' and records of its own */
    ck_assert(!reserved("app:", &lock_kind_semaphore, "{sem}"));
}
END_TEST

START_TEST(the_owner_of_a_kind_key_inverts_its_naming)
{
    static const struct lock_kind_name prefix = {"p", NAMED_PREFIX, NULL},
                                       suffix = {"s", NAMED_SUFFIX, NULL},
                                       braced = {"b", NAMED_BRACED, NULL};
    static const char *const names[] = {"n",    "{n}", "a{n}",
                                        "{n}a", "a}b", "{a}b}"};
    const struct lock_kind_name *const namings[] = {&prefix, &suffix, &braced};
    char key[64];
    const char *owner;
    size_t len;

    for (size_t i = 0; i < 3; i++) {
        for (size_t n = 0; n < sizeof(names) / sizeof(*names); n++) {
            size_t klen =
                lock_kind_name_of(key, namings[i], names[n], strlen(names[n]));
            const char *back;

            /* a lock's block is sized by lock_kind_name_len */
            ck_assert_int_eq(klen, lock_kind_name_len(namings[i], names[n],
                                                      strlen(names[n])));
            ck_assert(
                lock_kind_name_owner(namings[i], key, klen, &owner, &len));
            /* "{n}" and "{a}b}" name the keys of "n" and "a}b" */
            back = i < 2 && n == 1 ? "n" : i < 2 && n == 5 ? "a}b" : names[n];
            ck_assert_int_eq(len, strlen(back));
            ck_assert(memcmp(owner, back, len) == 0);
        }
    }
    ck_assert(!lock_kind_name_owner(&prefix, "p:n", 3, &owner, &len));
    ck_assert(!lock_kind_name_owner(&prefix, "q:{n}", 5, &owner, &len));
    ck_assert(!lock_kind_name_owner(&suffix, "n:s", 3, &owner, &len));
    ck_assert(!lock_kind_name_owner(&braced, "b{n", 3, &owner, &len));
}
END_TEST

Suite *record_keys_suite(void)
{
    Suite *s = suite_create("record_keys");
    TCase *tc = tcase_create("reserved");

    tcase_add_test(tc, a_session_record_is_reserved_for_every_kind);
    tcase_add_test(tc, names_that_are_no_session_record_are_allowed);
    tcase_add_test(tc, a_semaphores_records_are_reserved_for_every_kind);
    tcase_add_test(tc, names_that_are_no_semaphore_record_are_allowed);
    tcase_add_test(
        tc, under_a_prefix_only_that_prefixs_semaphores_records_are_reserved);
    tcase_add_test(
        tc, a_braced_semaphore_name_is_reserved_it_has_the_plain_names_records);
    tcase_add_test(tc, the_owner_of_a_kind_key_inverts_its_naming);
    suite_add_tcase(s, tc);
    return s;
}
