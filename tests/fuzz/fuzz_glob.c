/*
 * fuzz_glob.c - libFuzzer target for server/base/glob.c, which matches
 * clients' lock names (any bytes) against operator patterns.
 *
 * Input layout: byte 0 is the pattern's length (clamped to what
 * follows); the pattern follows, then the name. Besides memory safety
 * (ASan, UBSan), it checks properties any correct matcher has:
 *  - a pattern that escapes every byte of the name matches exactly it;
 *  - `*` before a pattern that matches a name also matches that name
 *    after any prefix (here: the pattern's own bytes);
 *  - a pattern list holding the pattern agrees with the pattern alone
 *    when the pattern has no blank (lists split on blanks).
 * A broken property ends in abort(), which libFuzzer reports with the
 * input.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/glob.h"
#include "fuzz_check.h"

static void check_escaped_name_matches_itself(const char *name, size_t len)
{
    char *escaped = malloc(2 * len + 1);

    CHECK(escaped != NULL);
    for (size_t i = 0; i < len; i++) {
        escaped[2 * i] = '\\';
        escaped[2 * i + 1] = name[i];
    }
    CHECK(glob_match(escaped, 2 * len, name, len));
    if (len > 0) {
        CHECK(!glob_match(escaped, 2 * len, name, len - 1));
        CHECK(!glob_match(escaped, 2 * len - 2, name, len));
    }
    free(escaped);
}

static void check_star_prefix(const char *pattern, size_t plen,
                              const char *name, size_t len, bool matched)
{
    char *starred = malloc(plen + 1), *prefixed = malloc(plen + len + 1);

    CHECK(starred != NULL && prefixed != NULL);
    starred[0] = '*';
    memcpy(starred + 1, pattern, plen);
    memcpy(prefixed, pattern, plen);
    memcpy(prefixed + plen, name, len);
    if (matched) {
        CHECK(glob_match(starred, plen + 1, name, len));
        CHECK(glob_match(starred, plen + 1, prefixed, plen + len));
    }
    free(starred);
    free(prefixed);
}

static void check_list(const char *pattern, size_t plen, const char *name,
                       size_t len, bool matched)
{
    char *list = malloc(plen + 1);

    CHECK(list != NULL);
    memcpy(list, pattern, plen);
    list[plen] = '\0';
    if (plen > 0 && strlen(list) == plen && !memchr(list, ' ', plen) &&
        !memchr(list, '\t', plen) && list[plen - 1] != '\\')
        CHECK(glob_list_match(list, name, len) == matched);
    else
        (void)glob_list_match(list, name, len);
    free(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *pattern, *name;
    size_t plen, len;
    bool matched;

    if (size == 0)
        return 0;
    plen = data[0] < size - 1 ? data[0] : size - 1;
    pattern = (const char *)data + 1;
    name = pattern + plen;
    len = size - 1 - plen;
    matched = glob_match(pattern, plen, name, len);
    (void)glob_validate(pattern, plen);
    check_escaped_name_matches_itself(name, len);
    check_star_prefix(pattern, plen, name, len, matched);
    check_list(pattern, plen, name, len, matched);
    return 0;
}
