/*
 * glob.h - Redis-style glob patterns over byte strings: which lock names
 * a pattern (or a configured list of patterns) allows.
 *
 * Syntax, as Redis's KEYS and ACL key patterns: `*` any run of bytes,
 * `?` one byte, `[abc]` one of a set, `[a-z]` a range, `[^...]` not in
 * the set, and `\x` the byte x itself (also inside a set). Matching is
 * byte-wise and case-sensitive, and the string may hold any byte, NUL
 * included (lock names are binary-safe). It takes time proportional to
 * pattern length times string length at worst, never exponential, and
 * allocates nothing, so a client's name cannot make it costly.
 *
 * Owns no state. Patterns come from the operator (config); strings come
 * from clients.
 */
#ifndef RLOCKD_GLOB_H
#define RLOCKD_GLOB_H

#include <stdbool.h>
#include <stddef.h>

bool glob_match(const char *pattern, size_t pattern_len, const char *s,
                size_t len);

/* 0, or -EINVAL for a pattern with an unterminated `[` or a trailing `\`
 * (glob_match still gives such a pattern a meaning, but an operator
 * surely meant something else). */
int glob_validate(const char *pattern, size_t pattern_len);

/*
 * A list is a NUL-terminated string of patterns separated by spaces or
 * tabs; `\ ` keeps a space inside a pattern. glob_list_next sets the
 * pattern after *pos and advances *pos: false at the end of the list.
 */
bool glob_list_next(const char *list, size_t *pos, const char **pattern,
                    size_t *pattern_len);
/* Whether any pattern of the list matches s; an empty list matches
 * nothing. */
bool glob_list_match(const char *list, const char *s, size_t len);
/* 0, or -EINVAL with *bad and *bad_len naming the list's first pattern
 * that glob_validate refuses. */
int glob_list_validate(const char *list, const char **bad, size_t *bad_len);

#endif
