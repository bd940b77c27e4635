/*
 * digest.c - SHA-256 and constant-time comparison, from libcrypto, so
 * that no hash code of our own needs trusting.
 */
#include "base/digest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/*
 * EVP_Digest fails only when libcrypto cannot allocate its small
 * context. A digest we could not compute must never be compared as if it
 * were one (a fixed value could match), and callers have no way to go on
 * without it, so this is treated as the out-of-memory abort it is.
 */
void digest_sha256(const void *data, size_t len, unsigned char out[DIGEST_SIZE])
{
    unsigned int out_len = 0;

    if (EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) != 1 ||
        out_len != DIGEST_SIZE)
        abort();
}

bool digest_equal(const unsigned char *a, const unsigned char *b)
{
    return CRYPTO_memcmp(a, b, DIGEST_SIZE) == 0;
}

int digest_parse_hex(const char *hex, unsigned char out[DIGEST_SIZE])
{
    unsigned char bytes[DIGEST_SIZE];

    if (strlen(hex) != 2 * DIGEST_SIZE)
        return -EINVAL;
    for (size_t i = 0; i < DIGEST_SIZE; i++) {
        int hi = OPENSSL_hexchar2int((unsigned char)hex[2 * i]);
        int lo = OPENSSL_hexchar2int((unsigned char)hex[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return -EINVAL;
        bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    memcpy(out, bytes, DIGEST_SIZE);
    return 0;
}
