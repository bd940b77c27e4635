/*
 * scripts.h - the Lua scripts that read and write locks in Redis.
 *
 * These are the only code that changes lock keys, and they keep exactly
 * Redisson's RLock format: a hash at the lock's name, one field
 * "<client-id>:<thread-id>" holding the hold count, PEXPIRE for the TTL,
 * and the message "0" on the lock's channel when it is freed. A Java
 * service using Redisson and rlockd therefore exclude each other.
 */
#ifndef RLOCKD_SCRIPTS_H
#define RLOCKD_SCRIPTS_H

#include <stddef.h>

enum script_id {
    /* KEYS: name. ARGV: lease_ms, field. nil: acquired; else the PTTL. */
    SCRIPT_ACQUIRE,
    /* KEYS: name, channel. ARGV: "0", lease_ms, field.
     * nil: not the owner; 0: count decremented; 1: freed and published. */
    SCRIPT_RELEASE,
    /* KEYS: name, channel. ARGV: "0". 1: deleted and published; 0: none. */
    SCRIPT_FORCE_RELEASE,
    /* KEYS: name, channel. ARGV: "0", field. Frees the lock whatever the
     * hold count if field holds it (a session ended): 1 freed, 0 not. */
    SCRIPT_RELEASE_OWNER,
    /* KEYS: name1..nameN. ARGV: field1, ms1, ..., fieldN, msN.
     * PEXPIREs each key whose field exists; returns N integers 1/0. */
    SCRIPT_RENEW_MANY,
    SCRIPT_COUNT
};

struct script {
    const char *name;
    const char *source;
    char sha[41]; /* filled from SCRIPT LOAD */
};

extern struct script scripts[SCRIPT_COUNT];

/* The lock's pub/sub channel, as Redisson names it. The result is
 * malloc'ed and NUL-terminated; NULL when out of memory. */
char *script_channel_name(const char *name, size_t len, size_t *out_len);

#endif
