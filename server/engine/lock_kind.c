/*
 * lock_kind.c - the kind table: the one place a new lock kind is listed,
 * and what every kind answers alike: the replies of release (nil: not
 * the owner, 1: freed, 0: still held), of the scripts that free whatever
 * the count (1: freed), of every query ({locked, count, pttl}) and of a
 * renewal (1 per hold renewed).
 */
#include "engine/lock_kind.h"

#include <stdbool.h>
#include <string.h>

enum lock_outcome lock_kind_read_owners(const struct backend_value *r,
                                        int64_t *value)
{
    if (r->type != VALUE_ARRAY || r->elements < 2 || r->elements % 2 != 0 ||
        r->element[0].type != VALUE_INTEGER ||
        r->element[1].type != VALUE_STRING)
        return OUTCOME_BAD_REPLY;
    for (size_t i = 2; i < r->elements; i += 2)
        if (r->element[i].type != VALUE_STRING ||
            r->element[i + 1].type != VALUE_INTEGER)
            return OUTCOME_BAD_REPLY;
    *value = r->element[0].integer;
    return OUTCOME_VALUE;
}

enum lock_outcome lock_kind_read_release(const struct backend_value *r,
                                         int64_t *value)
{
    (void)value;
    if (r->type == VALUE_NIL)
        return OUTCOME_NOT_OWNER;
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    return r->integer == 1 ? OUTCOME_RELEASED : OUTCOME_DECREMENTED;
}

enum lock_outcome lock_kind_read_freed(const struct backend_value *r,
                                       int64_t *value)
{
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return r->integer == 1 ? OUTCOME_RELEASED : OUTCOME_VALUE;
}

/* Element i of the inspect script's {locked, count, pttl}. */
static enum lock_outcome read_inspect(const struct backend_value *r, size_t i,
                                      int64_t *value)
{
    if (r->type != VALUE_ARRAY || r->elements != 3 ||
        r->element[i].type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->element[i].integer;
    return OUTCOME_VALUE;
}

enum lock_outcome lock_kind_read_locked(const struct backend_value *r,
                                        int64_t *value)
{
    return read_inspect(r, 0, value);
}

enum lock_outcome lock_kind_read_held(const struct backend_value *r,
                                      int64_t *value)
{
    enum lock_outcome outcome = read_inspect(r, 1, value);

    if (outcome == OUTCOME_VALUE)
        *value = *value > 0;
    return outcome;
}

enum lock_outcome lock_kind_read_count(const struct backend_value *r,
                                       int64_t *value)
{
    return read_inspect(r, 1, value);
}

enum lock_outcome lock_kind_read_pttl(const struct backend_value *r,
                                      int64_t *value)
{
    return read_inspect(r, 2, value);
}

int lock_kind_renewed(const struct backend_value *element)
{
    return element->type == VALUE_INTEGER && element->integer == 1;
}

enum lock_outcome lock_kind_read_acquire(const struct backend_value *r,
                                         int64_t *value)
{
    if (r->type == VALUE_NIL)
        return OUTCOME_GRANTED;
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return OUTCOME_REFUSED;
}

void lock_kind_renew_add(const struct lock_call_args *a, const char **keys,
                         size_t *key_len, const char **args, size_t *arg_len,
                         char *number)
{
    keys[0] = a->name;
    key_len[0] = a->name_len;
    args[0] = a->field;
    arg_len[0] = a->field_len;
    args[1] = number;
    arg_len[1] = format_int64(number, a->lease_ms);
}

unsigned lock_kind_index(const struct lock_kind *kind)
{
    unsigned i = 0;

    while (lock_kinds[i] != kind)
        i++;
    return i;
}

bool lock_kind_recorded(const struct lock_kind *kind)
{
    return kind->holds == HOLDS_REENTRANT || kind->holds == HOLDS_PERMITS;
}

bool lock_kind_op_required(const struct lock_kind *kind, enum lock_op op)
{
    switch (op) {
    case LOCK_OP_ACQUIRE:
        return true;
    case LOCK_OP_RELEASE:
    case LOCK_OP_RELEASE_OWNER:
    case LOCK_OP_SETTLE:
        return kind->holds != HOLDS_NOTHING;
    case LOCK_OP_HOLD_COUNT:
        return lock_kind_recorded(kind);
    default:
        return false;
    }
}

const char *const lock_op_names[LOCK_OP_COUNT] = {
    [LOCK_OP_ACQUIRE] = "acquire",
    [LOCK_OP_RELEASE] = "release",
    [LOCK_OP_FORCE_RELEASE] = "force release",
    [LOCK_OP_RELEASE_OWNER] = "release of an owner that left",
    [LOCK_OP_SETTLE] = "settle",
    [LOCK_OP_IS_LOCKED] = "is-locked",
    [LOCK_OP_IS_HELD] = "is-held",
    [LOCK_OP_HOLD_COUNT] = "hold count",
    [LOCK_OP_PTTL] = "pttl",
    [LOCK_OP_OWNERS] = "owners",
    [LOCK_OP_LEAVE_QUEUE] = "leave queue",
    [LOCK_OP_TOKEN] = "token",
    [LOCK_OP_TRY_SET] = "try-set",
    [LOCK_OP_ADD] = "add",
    [LOCK_OP_AVAILABLE] = "available",
};

const struct lock_kind *const lock_kinds[LOCK_KIND_COUNT] = {
    [LOCK_KIND_RLOCK] = &lock_kind_rlock,
    [LOCK_KIND_FAIR] = &lock_kind_fair,
    [LOCK_KIND_READ] = &lock_kind_read,
    [LOCK_KIND_WRITE] = &lock_kind_write,
    [LOCK_KIND_FENCED] = &lock_kind_fenced,
    [LOCK_KIND_SEMAPHORE] = &lock_kind_semaphore,
    [LOCK_KIND_EXPIRABLE] = &lock_kind_expirable,
    [LOCK_KIND_LATCH] = &lock_kind_latch,
};

static char *put(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

/* Whether how's name of name wraps it in braces (a hash tag): always for
 * NAMED_BRACED, else when the name has none of its own. */
static bool name_braced(const struct lock_kind_name *how, const char *name,
                        size_t len)
{
    return how->how == NAMED_BRACED || memchr(name, '{', len) == NULL;
}

size_t lock_kind_name_len(const struct lock_kind_name *how, const char *name,
                          size_t len)
{
    return strlen(how->affix) + (how->how == NAMED_BRACED ? 0 : 1) +
           (name_braced(how, name, len) ? 2 : 0) + len;
}

size_t lock_kind_name_of(char *out, const struct lock_kind_name *how,
                         const char *name, size_t len)
{
    bool braces = name_braced(how, name, len);
    size_t alen = strlen(how->affix);
    char *p = out;

    if (how->how != NAMED_SUFFIX)
        p = put(p, how->affix, alen);
    if (how->how == NAMED_PREFIX)
        *p++ = ':';
    if (braces)
        *p++ = '{';
    p = put(p, name, len);
    if (braces)
        *p++ = '}';
    if (how->how == NAMED_SUFFIX) {
        *p++ = ':';
        p = put(p, how->affix, alen);
    }
    return (size_t)(p - out);
}

/* The name inside a prefix or suffix naming's rest: "{N}" is N's, else
 * a rest with a '{' of its own is itself a name; any other rest is no
 * name's. */
static bool rest_owner(const char *rest, size_t len, const char **name,
                       size_t *name_len)
{
    if (len >= 2 && rest[0] == '{' && rest[len - 1] == '}' &&
        memchr(rest + 1, '{', len - 2) == NULL) {
        *name = rest + 1;
        *name_len = len - 2;
        return true;
    }
    *name = rest;
    *name_len = len;
    return memchr(rest, '{', len) != NULL;
}

bool lock_kind_name_owner(const struct lock_kind_name *how, const char *key,
                          size_t len, const char **name, size_t *name_len)
{
    size_t alen = strlen(how->affix);

    switch (how->how) {
    case NAMED_PREFIX:
        if (len <= alen + 1 || memcmp(key, how->affix, alen) != 0 ||
            key[alen] != ':')
            return false;
        return rest_owner(key + alen + 1, len - alen - 1, name, name_len);
    case NAMED_SUFFIX:
        if (len <= alen + 1 ||
            memcmp(key + len - alen, how->affix, alen) != 0 ||
            key[len - alen - 1] != ':')
            return false;
        return rest_owner(key, len - alen - 1, name, name_len);
    case NAMED_BRACED:
        if (len < alen + 2 || memcmp(key, how->affix, alen) != 0 ||
            key[alen] != '{' || key[len - 1] != '}')
            return false;
        *name = key + alen + 1;
        *name_len = len - alen - 2;
        return true;
    }
    return false;
}
