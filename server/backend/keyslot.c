/*
 * keyslot.c - CRC16/XMODEM (polynomial 0x1021, initial 0, no reflection),
 * as Redis's cluster.c specifies it, by a table built once from the
 * polynomial rather than 256 literals.
 */
#include "backend/keyslot.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static uint16_t crc16_table[256];

static void crc16_table_build(void)
{
    for (unsigned byte = 0; byte < 256; byte++) {
        uint16_t crc = (uint16_t)(byte << 8);

        for (int bit = 0; bit < 8; bit++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
        crc16_table[byte] = crc;
    }
}

static uint16_t crc16(const char *buf, size_t len)
{
    static bool built;
    uint16_t crc = 0;

    if (!built) {
        crc16_table_build();
        built = true;
    }
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^
                         crc16_table[((crc >> 8) ^ (uint8_t)buf[i]) & 0xff]);
    return crc;
}

unsigned keyslot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);

    if (open != NULL) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);

        if (close != NULL && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) % KEYSLOT_COUNT;
    }
    return crc16(key, len) % KEYSLOT_COUNT;
}
