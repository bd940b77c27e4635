/*
 * lock_kind.c - the kind table: the one place a new lock kind is listed,
 * and what every kind answers alike.
 */
#include "engine/lock_kind.h"

enum lock_outcome lock_kind_read_owners(const struct backend_value *r,
                                        int64_t *value)
{
    if (r->type != VALUE_ARRAY || r->elements % 2 != 1 ||
        r->element[0].type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    for (size_t i = 1; i < r->elements; i += 2)
        if (r->element[i].type != VALUE_STRING ||
            r->element[i + 1].type != VALUE_INTEGER)
            return OUTCOME_BAD_REPLY;
    *value = r->element[0].integer;
    return OUTCOME_VALUE;
}

const struct lock_kind *const lock_kinds[LOCK_KIND_COUNT] = {
    [LOCK_KIND_RLOCK] = &lock_kind_rlock,
};
