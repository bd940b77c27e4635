/*
 * client_id.c - the client-id rule and random UUID v4 ids, for rlockd and
 * librlock alike.
 *
 * Never: keeps state, or falls back to a weaker source of randomness (an
 * id another client could guess or repeat would let it unlock locks it
 * does not hold).
 */
#include "client_id.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#define UUID_BYTES 16
/* 32 hex digits and 4 dashes, and the NUL; a valid id itself */
_Static_assert(UUID_BYTES * 2 + 4 + 1 == CLIENT_ID_RANDOM_SIZE,
               "CLIENT_ID_RANDOM_SIZE is the size of a UUID's text");
_Static_assert(CLIENT_ID_RANDOM_SIZE - 1 <= CLIENT_ID_MAX_LEN,
               "a random id is within the client-id rule");

bool client_id_valid(const char *id, size_t len)
{
    if (len == 0 || len > CLIENT_ID_MAX_LEN)
        return false;
    for (size_t i = 0; i < len; i++) {
        /* memchr, not strchr: a NUL is not one of the allowed bytes */
        if (memchr(CLIENT_ID_CHARS, id[i], sizeof CLIENT_ID_CHARS - 1) == NULL)
            return false;
    }
    return true;
}

/* Up to 256 bytes come whole once the pool is ready; the loop is for a
 * signal that interrupts the wait for it at boot. */
static int random_bytes(unsigned char *b, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = getrandom(b + got, len - got, 0);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n > 0)
            got += (size_t)n;
    }
    return 0;
}

int client_id_random(char out[CLIENT_ID_RANDOM_SIZE])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[UUID_BYTES];
    int err = random_bytes(b, sizeof b);

    if (err != 0) {
        out[0] = '\0';
        return err;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    for (int i = 0; i < UUID_BYTES; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *out++ = '-';
        *out++ = hex[b[i] >> 4];
        *out++ = hex[b[i] & 15];
    }
    *out = '\0';
    return 0;
}
