/*
 * glob.c - the matcher behind glob.h.
 *
 * Every token but `*` matches exactly one byte, so the classic two-pointer
 * algorithm is complete: on a mismatch, go back to just after the most
 * recent `*` and let it swallow one more byte. An earlier `*` never needs
 * revisiting, because whatever it could have matched the later one can
 * match too. Hence no recursion and no blow-up on patterns such as
 * `*a*a*a*a*b`: at most pattern length times string length steps.
 */
#include "base/glob.h"

#include <errno.h>
#include <stdint.h>

#define NO_STAR SIZE_MAX

/*
 * The byte a literal stands for at pattern[*i] (`\x` is x), advancing *i
 * past it. A trailing `\` stands for itself.
 */
static unsigned char literal(const char *pattern, size_t len, size_t *i)
{
    if (pattern[*i] == '\\' && *i + 1 < len)
        (*i)++;
    return (unsigned char)pattern[(*i)++];
}

/*
 * Matches c against the set that starts after the `[` at pattern[*i];
 * leaves *i after its `]` (or at the end of an unterminated set, which
 * runs to the end of the pattern, as in Redis).
 */
static bool set_match(const char *pattern, size_t len, size_t *i,
                      unsigned char c)
{
    bool negate = *i < len && pattern[*i] == '^', found = false;

    if (negate)
        (*i)++;
    while (*i < len && pattern[*i] != ']') {
        unsigned char lo = literal(pattern, len, i), hi = lo;

        if (*i + 1 < len && pattern[*i] == '-' && pattern[*i + 1] != ']') {
            (*i)++;
            hi = literal(pattern, len, i);
            if (lo > hi) { /* [z-a] is [a-z], as in Redis */
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
        }
        found |= c >= lo && c <= hi;
    }
    if (*i < len)
        (*i)++; /* the ']' */
    return found != negate;
}

/* Whether the one-byte token at pattern[*i] (not a `*`) matches c;
 * advances *i past the token either way. */
static bool token_match(const char *pattern, size_t len, size_t *i,
                        unsigned char c)
{
    if (pattern[*i] == '?') {
        (*i)++;
        return true;
    }
    if (pattern[*i] == '[') {
        (*i)++;
        return set_match(pattern, len, i, c);
    }
    return literal(pattern, len, i) == c;
}

bool glob_match(const char *pattern, size_t pattern_len, const char *s,
                size_t len)
{
    size_t p = 0, i = 0, star_p = NO_STAR, star_i = 0;

    while (i < len) {
        size_t next = p;

        if (p < pattern_len && pattern[p] == '*') {
            star_p = ++p;
            star_i = i;
            continue;
        }
        if (p < pattern_len &&
            token_match(pattern, pattern_len, &next, (unsigned char)s[i])) {
            p = next;
            i++;
            continue;
        }
        if (star_p == NO_STAR)
            return false;
        p = star_p;
        i = ++star_i;
    }
    while (p < pattern_len && pattern[p] == '*')
        p++;
    return p == pattern_len;
}

int glob_validate(const char *pattern, size_t pattern_len)
{
    bool in_set = false;

    for (size_t i = 0; i < pattern_len; i++) {
        if (pattern[i] == '\\') {
            if (++i == pattern_len)
                return -EINVAL;
        } else if (pattern[i] == '[' && !in_set) {
            in_set = true;
            if (i + 1 < pattern_len && pattern[i + 1] == '^')
                i++;
        } else if (pattern[i] == ']') {
            in_set = false;
        }
    }
    return in_set ? -EINVAL : 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

bool glob_list_next(const char *list, size_t *pos, const char **pattern,
                    size_t *pattern_len)
{
    size_t i = *pos, start;

    while (is_blank(list[i]))
        i++;
    if (list[i] == '\0') {
        *pos = i;
        return false;
    }
    start = i;
    while (list[i] != '\0' && !is_blank(list[i]))
        i += list[i] == '\\' && list[i + 1] != '\0' ? 2 : 1;
    *pattern = list + start;
    *pattern_len = i - start;
    *pos = i;
    return true;
}

int glob_list_validate(const char *list, const char **bad, size_t *bad_len)
{
    size_t pos = 0;

    while (glob_list_next(list, &pos, bad, bad_len)) {
        if (glob_validate(*bad, *bad_len) != 0)
            return -EINVAL;
    }
    return 0;
}

bool glob_list_match(const char *list, const char *s, size_t len)
{
    const char *pattern;
    size_t pos = 0, pattern_len;

    while (glob_list_next(list, &pos, &pattern, &pattern_len)) {
        if (glob_match(pattern, pattern_len, s, len))
            return true;
    }
    return false;
}
