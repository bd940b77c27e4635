/*
 * lock_kind.c - the kind table: the one place a new lock kind is listed.
 */
#include "engine/lock_kind.h"

const struct lock_kind *const lock_kinds[LOCK_KIND_COUNT] = {
    [LOCK_KIND_RLOCK] = &lock_kind_rlock,
};
