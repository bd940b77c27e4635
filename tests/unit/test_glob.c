/*
 * test_glob.c - glob patterns as Redis reads them, over binary names;
 * the star backtracking checked exhaustively against a plain recursive
 * matcher on small inputs, and kept linear on a pathological pattern;
 * pattern lists as the config holds them.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/glob.h"
#include "suites.h"

static bool match(const char *pattern, const char *s)
{
    return glob_match(pattern, strlen(pattern), s, strlen(s));
}

static const struct {
    const char *pattern, *s;
    bool want;
} cases[] = {
    {"", "", true},
    {"", "a", false},
    {"*", "", true},
    {"*", "anything", true},
    {"**", "x", true},
    {"abc", "abc", true},
    {"abc", "abd", false},
    {"abc", "ab", false},
    {"ab", "abc", false},
    {"a?c", "abc", true},
    {"a?c", "ac", false},
    {"orders:*", "orders:17", true},
    {"orders:*", "orders:", true},
    {"orders:*", "order:17", false},
    {"*:17", "orders:17", true},
    {"*:17", "orders:171", false},
    {"a*b*c", "axxbyyc", true},
    {"a*b*c", "axxbyy", false},
    {"a*b", "abab", true},
    {"h[ae]llo", "hello", true},
    {"h[ae]llo", "hallo", true},
    {"h[ae]llo", "hillo", false},
    {"h[^e]llo", "hallo", true},
    {"h[^e]llo", "hello", false},
    {"h[a-b]llo", "hbllo", true},
    {"h[a-b]llo", "hcllo", false},
    {"h[b-a]llo", "hallo", true}, /* reversed range, as in Redis */
    {"[a-]", "-", true},
    {"[a-]", "b", false},
    {"[\\]]", "]", true},
    {"[\\-a]", "-", true},
    {"\\*", "*", true},
    {"\\*", "a", false},
    {"\\?", "?", true},
    {"\\?", "x", false},
    {"a\\[b", "a[b", true},
    {"a\\", "a\\", true}, /* a trailing backslash is itself */
    {"[ab", "a", true},   /* an unterminated set runs to the end */
    {"Lock", "lock", false},
};

START_TEST(cases_as_redis_reads_them)
{
    ck_assert_msg(match(cases[_i].pattern, cases[_i].s) == cases[_i].want,
                  "'%s' vs '%s': want %d", cases[_i].pattern, cases[_i].s,
                  cases[_i].want);
}
END_TEST

START_TEST(names_with_nul_bytes)
{
    ck_assert(glob_match("a?c", 3, "a\0c", 3));
    ck_assert(glob_match("a*", 2, "a\0\0", 3));
    ck_assert(glob_match("a\0*", 3, "a\0zz", 4));
    ck_assert(!glob_match("a\0*", 3, "a\1zz", 4));
    ck_assert(!glob_match("abc", 3, "ab\0c", 4));
    ck_assert(glob_match("[^a]", 4, "\0", 1));
}
END_TEST

/*
 * The reference: a pattern over {a, b, ?, *, \*} decoded to tokens and
 * matched by plain recursion, which is obviously right and exponential.
 */
enum ref_token { REF_STAR = 256, REF_ANY = 257 };

static size_t ref_decode(const char *p, int *tokens)
{
    size_t n = 0;

    for (size_t i = 0; p[i] != '\0'; i++) {
        if (p[i] == '\\')
            tokens[n++] = (unsigned char)p[++i];
        else
            tokens[n++] = p[i] == '*' ? REF_STAR : p[i] == '?' ? REF_ANY : p[i];
    }
    return n;
}

static bool ref_match(const int *t, size_t n, const char *s, size_t len)
{
    if (n == 0)
        return len == 0;
    if (t[0] == REF_STAR) {
        for (size_t k = 0; k <= len; k++) {
            if (ref_match(t + 1, n - 1, s + k, len - k))
                return true;
        }
        return false;
    }
    if (len == 0 || (t[0] != REF_ANY && t[0] != (unsigned char)s[0]))
        return false;
    return ref_match(t + 1, n - 1, s + 1, len - 1);
}

/* Spells the n-th word of `digits` symbols over the alphabet. */
static void spell(size_t n, size_t digits, const char *const *alphabet,
                  size_t size, char *out)
{
    out[0] = '\0';
    for (size_t d = 0; d < digits; d++, n /= size)
        strcat(out, alphabet[n % size]);
}

START_TEST(star_backtracking_agrees_with_recursion)
{
    static const char *const pattern_tokens[] = {"a", "b", "?", "*", "\\*"};
    static const char *const letters[] = {"a", "b", "*"};
    char pattern[32], s[16];
    int tokens[16];
    size_t checked = 0;

    for (size_t plen = 0; plen <= 4; plen++) {
        size_t patterns = 1;
        for (size_t k = 0; k < plen; k++)
            patterns *= 5;
        for (size_t pn = 0; pn < patterns; pn++) {
            spell(pn, plen, pattern_tokens, 5, pattern);
            size_t ntok = ref_decode(pattern, tokens);
            for (size_t slen = 0; slen <= 5; slen++) {
                size_t strings = 1;
                for (size_t k = 0; k < slen; k++)
                    strings *= 3;
                for (size_t sn = 0; sn < strings; sn++, checked++) {
                    spell(sn, slen, letters, 3, s);
                    ck_assert_msg(match(pattern, s) ==
                                      ref_match(tokens, ntok, s, slen),
                                  "'%s' vs '%s'", pattern, s);
                }
            }
        }
    }
    ck_assert_uint_gt(checked, 100000);
}
END_TEST

/* A recursive matcher needs about C(n, 9) steps here; the two-pointer one
 * at most 19 * n. Check's per-test timeout is the judge. */
START_TEST(pathological_pattern_stays_linear)
{
    static const char pattern[] = "*a*a*a*a*a*a*a*a*a*b";
    size_t len = 1 << 20;
    char *s = malloc(len);

    ck_assert_ptr_nonnull(s);
    memset(s, 'a', len);
    for (int i = 0; i < 20; i++)
        ck_assert(!glob_match(pattern, strlen(pattern), s, len));
    s[len - 1] = 'b';
    ck_assert(glob_match(pattern, strlen(pattern), s, len));
    free(s);
}
END_TEST

START_TEST(validate_refuses_unterminated_set_and_trailing_backslash)
{
    static const char *const good[] = {
        "", "*", "a[bc]", "[^a]", "\\[", "[\\]]", "a\\\\", "[a-z]*", "x]y"};
    static const char *const bad[] = {"[", "a[bc", "[^", "a\\", "[\\]"};

    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
        ck_assert_msg(glob_validate(good[i], strlen(good[i])) == 0, "'%s'",
                      good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        ck_assert_msg(glob_validate(bad[i], strlen(bad[i])) == -EINVAL, "'%s'",
                      bad[i]);
}
END_TEST

START_TEST(list_splits_on_blanks_and_keeps_escaped_spaces)
{
    const char *list = "  orders:*\tjobs:? my\\ lock  ", *p;
    static const char *const want[] = {"orders:*", "jobs:?", "my\\ lock"};
    size_t pos = 0, len, n = 0;

    while (glob_list_next(list, &pos, &p, &len)) {
        ck_assert_uint_lt(n, 3);
        ck_assert_uint_eq(len, strlen(want[n]));
        ck_assert(memcmp(p, want[n], len) == 0);
        n++;
    }
    ck_assert_uint_eq(n, 3);
    ck_assert(glob_list_match(list, "orders:1", 8));
    ck_assert(glob_list_match(list, "jobs:7", 6));
    ck_assert(glob_list_match(list, "my lock", 7));
    ck_assert(!glob_list_match(list, "jobs:17", 7));
    ck_assert(!glob_list_match(list, "my", 2));
    ck_assert(!glob_list_match("", "", 0));
    ck_assert(!glob_list_match("   ", "x", 1));
    ck_assert(glob_list_match("a *", "", 0));
}
END_TEST

Suite *glob_suite(void)
{
    Suite *s = suite_create("glob");
    TCase *tc = tcase_create("glob");

    tcase_add_loop_test(tc, cases_as_redis_reads_them, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, names_with_nul_bytes);
    tcase_add_test(tc, star_backtracking_agrees_with_recursion);
    tcase_add_test(tc, pathological_pattern_stays_linear);
    tcase_add_test(tc,
                   validate_refuses_unterminated_set_and_trailing_backslash);
    tcase_add_test(tc, list_splits_on_blanks_and_keeps_escaped_spaces);
    suite_add_tcase(s, tc);
    return s;
}
