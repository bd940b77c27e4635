/*
 * record_keys.c - which keys are rlockd's records, decided in one place
 * for every command that takes a name, whatever [lock] name_prefix and
 * the topology (keys are the same in each).
 *
 * A record is exactly a key some rlockd of this prefix writes: a session
 * record, "<prefix>rlockd_session:{<client-id>}", or a key of a kind row
 * that names a record, of a name that starts with the prefix (a
 * semaphore's holders are at "rlockd_permits:{<prefix><name>}", so under
 * a prefix "app:" a lock named "rlockd_permits:{x}" is at
 * "app:rlockd_permits:{x}" and reaches nothing). Channels are not keys,
 * and every lock's channel starts "redisson_" while rlockd's own Redis
 * channel (the Sentinel probe's) starts "rlockd:"; Redisson's own keys (a
 * fair lock's queue, a fenced lock's token) are shared with Java by
 * design and may be named, as Redisson allows.
 */
#include "engine/record_keys.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "client_id.h"
#include "engine/session_store.h"

/* A record a key is: what it keeps, of which name (or client-id), under
 * which naming (NULL: the session record). */
struct record {
    const char *what;
    const char *of;
    size_t of_len;
    const struct lock_kind_name *naming;
};

static bool session_record(const char *prefix, const char *key, size_t len,
                           struct record *r)
{
    size_t plen = strlen(prefix), tlen = sizeof(SESSION_STORE_KEY_TAG) - 1;

    if (len < plen + tlen + 1 || memcmp(key, prefix, plen) != 0 ||
        memcmp(key + plen, SESSION_STORE_KEY_TAG, tlen) != 0 ||
        key[len - 1] != '}')
        return false;
    r->what = "the session of client-id";
    r->of = key + plen + tlen;
    r->of_len = len - plen - tlen - 1;
    r->naming = NULL;
    return client_id_valid(r->of, r->of_len);
}

static bool same_naming(const struct lock_kind_name *a,
                        const struct lock_kind_name *b)
{
    return a != NULL && b != NULL && a->how == b->how &&
           strcmp(a->affix, b->affix) == 0;
}

/* Whether key is a record of some name of this prefix other than mine
 * (its own key of that naming, mine; NULL: none is mine). */
static bool other_record(const char *prefix, const char *key, size_t len,
                         const struct lock_kind_name *mine, const char *my_key,
                         size_t my_len, struct record *r)
{
    size_t plen = strlen(prefix);

    if (session_record(prefix, key, len, r))
        return true;
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++) {
        for (size_t i = 0; i < LOCK_KIND_MAX_KEYS; i++) {
            const struct lock_kind_name *n = &lock_kinds[k]->keys[i];

            if (n->record == NULL ||
                !lock_kind_name_owner(n, key, len, &r->of, &r->of_len) ||
                r->of_len <= plen || memcmp(r->of, prefix, plen) != 0)
                continue;
            if (same_naming(n, mine) && r->of_len == my_len &&
                memcmp(r->of, my_key, my_len) == 0)
                continue;
            r->what = n->record;
            r->naming = n;
            return true;
        }
    }
    return false;
}

static bool say(char *why, size_t size, const char *whose, const char *key,
                size_t len, const struct record *r)
{
    snprintf(why, size, "%s%.*s is rlockd's record of %s %.*s", whose, (int)len,
             key, r->what, (int)r->of_len, r->of);
    return true;
}

bool record_keys_reserved(const char *prefix, const struct lock_kind *kind,
                          const char *key, size_t len, char *why,
                          size_t why_size)
{
    char derived[len + LOCK_KIND_NAME_EXTRA];
    struct record r;

    if (other_record(prefix, key, len, NULL, NULL, 0, &r))
        return say(why, why_size, "", key, len, &r);
    for (size_t i = 0; i < LOCK_KIND_MAX_KEYS && kind->keys[i].affix; i++) {
        size_t dlen = lock_kind_name_of(derived, &kind->keys[i], key, len);

        if (other_record(prefix, derived, dlen, &kind->keys[i], key, len, &r))
            return say(why, why_size, "its key ", derived, dlen, &r);
    }
    return false;
}

void record_keys_foreign(const char *what)
{
    static char last[256];

    stats.foreign_records++;
    if (strncmp(last, what, sizeof(last) - 1) == 0)
        return;
    snprintf(last, sizeof(last), "%s", what);
    log_warn("not an rlockd record: %s; refused, and left as it is", what);
}
