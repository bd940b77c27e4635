/*
 * test_digest.c - SHA-256 against the FIPS 180-2 vectors, constant-time
 * comparison, and the strict hex parser used for password_sha256.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "base/digest.h"
#include "suites.h"

static const struct {
    const char *text;
    const char *hex;
} vectors[] = {
    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
};

START_TEST(sha256_known_vectors)
{
    unsigned char got[DIGEST_SIZE], want[DIGEST_SIZE];

    digest_sha256(vectors[_i].text, strlen(vectors[_i].text), got);
    ck_assert_int_eq(digest_parse_hex(vectors[_i].hex, want), 0);
    ck_assert(digest_equal(got, want));
}
END_TEST

START_TEST(sha256_of_bytes_with_nul)
{
    unsigned char a[DIGEST_SIZE], b[DIGEST_SIZE];

    digest_sha256("a\0b", 3, a);
    digest_sha256("a", 1, b);
    ck_assert(!digest_equal(a, b));
}
END_TEST

START_TEST(equal_compares_every_byte)
{
    unsigned char a[DIGEST_SIZE], b[DIGEST_SIZE];

    digest_sha256("x", 1, a);
    for (size_t i = 0; i < DIGEST_SIZE; i++) {
        memcpy(b, a, DIGEST_SIZE);
        ck_assert(digest_equal(a, b));
        b[i] ^= 0x80;
        ck_assert_msg(!digest_equal(a, b), "byte %zu ignored", i);
    }
}
END_TEST

START_TEST(parse_hex_accepts_either_case)
{
    unsigned char lower[DIGEST_SIZE], upper[DIGEST_SIZE];

    ck_assert_int_eq(digest_parse_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A3"
                                      "96177A9CB410FF61F20015AD",
                                      upper),
                     0);
    ck_assert_int_eq(digest_parse_hex(vectors[1].hex, lower), 0);
    ck_assert(digest_equal(lower, upper));
    ck_assert_int_eq(lower[0], 0xba);
    ck_assert_int_eq(lower[DIGEST_SIZE - 1], 0xad);
}
END_TEST

static const char *const bad_hex[] = {
    "",
    "ba7816bf",
    /* 63 digits, 65 digits, a non-digit, a space, a 0x prefix */
    "a7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad0",
    "ga7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    "ba7816bf8f01cfea414140de5dae2223 00361a396177a9cb410ff61f20015ad",
    "0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015",
};

START_TEST(parse_hex_refuses_anything_else)
{
    unsigned char out[DIGEST_SIZE], before[DIGEST_SIZE];

    memset(out, 0x5a, sizeof(out));
    memcpy(before, out, sizeof(out));
    ck_assert_int_eq(digest_parse_hex(bad_hex[_i], out), -EINVAL);
    ck_assert(memcmp(out, before, sizeof(out)) == 0);
}
END_TEST

Suite *digest_suite(void)
{
    Suite *s = suite_create("digest");
    TCase *tc = tcase_create("digest");

    tcase_add_loop_test(tc, sha256_known_vectors, 0,
                        (int)(sizeof(vectors) / sizeof(vectors[0])));
    tcase_add_test(tc, sha256_of_bytes_with_nul);
    tcase_add_test(tc, equal_compares_every_byte);
    tcase_add_test(tc, parse_hex_accepts_either_case);
    tcase_add_loop_test(tc, parse_hex_refuses_anything_else, 0,
                        (int)(sizeof(bad_hex) / sizeof(bad_hex[0])));
    suite_add_tcase(s, tc);
    return s;
}
