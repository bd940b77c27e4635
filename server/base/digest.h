/*
 * digest.h - SHA-256 digests of secrets, and comparing them without
 * telling by timing how much of a guess was right.
 *
 * Owns nothing but these three functions over libcrypto (OpenSSL). Every
 * secret rlockd checks (user passwords, the auth token) is compared as a
 * digest, so the comparison never depends on a secret's length, and
 * passwords can be configured as digests only, as Redis ACL's
 * `#<hash>` does.
 */
#ifndef RLOCKD_DIGEST_H
#define RLOCKD_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#define DIGEST_SIZE 32 /* SHA-256 */

void digest_sha256(const void *data, size_t len,
                   unsigned char out[DIGEST_SIZE]);
/* Constant time over the DIGEST_SIZE bytes. */
bool digest_equal(const unsigned char *a, const unsigned char *b);
/* Exactly 2 * DIGEST_SIZE hex digits, either case, nothing else: 0, or
 * -EINVAL with out untouched. */
int digest_parse_hex(const char *hex, unsigned char out[DIGEST_SIZE]);

#endif
