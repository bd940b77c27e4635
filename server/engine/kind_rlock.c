/*
 * kind_rlock.c - Redisson's RLock, the first row of the lock-kind table.
 *
 * The format (../shared/reference/redisson-rlock.md): a hash at the
 * lock's name, one field "<client-id>:<thread-id>" holding the hold
 * count, PEXPIRE for the lease, and the message "0" on
 * redisson_lock__channel:{name} when the lock is freed, which wakes one
 * waiter. The acquire, release and force-release scripts are Redisson's
 * (3.x) own, so a Java service using Redisson and rlockd exclude and wake
 * each other. Two are rlockd's: freeing an owner whatever its count (its
 * session ended), and renewing many locks in one call.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/lock_kind.h"

static struct backend_script acquire_script = {
    "rlock_acquire",
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);",
    ""};

static struct backend_script release_script = {
    "rlock_release",
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil; "
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;",
    ""};

static struct backend_script force_release_script = {
    "rlock_force_release",
    "if (redis.call('del', KEYS[1]) == 1) then "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1 "
    "else "
    "return 0 "
    "end",
    ""};

static struct backend_script release_owner_script = {
    "rlock_release_owner",
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then "
    "return 0; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1;",
    ""};

/* KEYS name1..nameN, ARGV field1, ms1, ..., fieldN, msN: N results 1/0. */
static struct backend_script renew_script = {
    "rlock_renew_many",
    "local result = {}; "
    "for i = 1, #KEYS do "
    "if (redis.call('hexists', KEYS[i], ARGV[2 * i - 1]) == 1) then "
    "redis.call('pexpire', KEYS[i], ARGV[2 * i]); "
    "result[i] = 1; "
    "else "
    "result[i] = 0; "
    "end; "
    "end; "
    "return result;",
    ""};

static struct backend_script *const rlock_scripts[] = {
    &acquire_script,       &release_script, &force_release_script,
    &release_owner_script, &renew_script,   NULL};

/* The message Redisson's LockPubSub reads as "one waiter may go". */
#define UNLOCK_MESSAGE "0"

/* ---- building calls --------------------------------------------------- */

static void arg(struct lock_kind_call *call, const char *s, size_t len)
{
    call->argv[call->argc] = s;
    call->argv_len[call->argc++] = len;
}

static void arg_number(struct lock_kind_call *call, int slot, int64_t v)
{
    arg(call, call->number[slot], format_int64(call->number[slot], v));
}

static void script(struct lock_kind_call *call, struct backend_script *s,
                   int nkeys)
{
    call->script = s;
    call->nkeys = nkeys;
    call->argc = 0;
}

static void build_acquire(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    script(call, &acquire_script, 1);
    arg(call, a->name, a->name_len);
    arg_number(call, 0, a->lease_ms);
    arg(call, a->field, a->field_len);
}

static void build_release(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    script(call, &release_script, 2);
    arg(call, a->name, a->name_len);
    arg(call, a->channel, a->channel_len);
    arg(call, UNLOCK_MESSAGE, 1);
    arg_number(call, 0, a->lease_ms);
    arg(call, a->field, a->field_len);
}

static void build_force_release(const struct lock_call_args *a,
                                struct lock_kind_call *call)
{
    script(call, &force_release_script, 2);
    arg(call, a->name, a->name_len);
    arg(call, a->channel, a->channel_len);
    arg(call, UNLOCK_MESSAGE, 1);
}

static void build_release_owner(const struct lock_call_args *a,
                                struct lock_kind_call *call)
{
    script(call, &release_owner_script, 2);
    arg(call, a->name, a->name_len);
    arg(call, a->channel, a->channel_len);
    arg(call, UNLOCK_MESSAGE, 1);
    arg(call, a->field, a->field_len);
}

/* A plain command on the lock's key, with the owner's field or not. */
static void command(struct lock_kind_call *call, const char *name,
                    const struct lock_call_args *a, int with_field)
{
    script(call, NULL, 0);
    arg(call, name, strlen(name));
    arg(call, a->name, a->name_len);
    if (with_field)
        arg(call, a->field, a->field_len);
}

static void build_is_locked(const struct lock_call_args *a,
                            struct lock_kind_call *call)
{
    command(call, "EXISTS", a, 0);
}

static void build_is_held(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    command(call, "HEXISTS", a, 1);
}

static void build_hold_count(const struct lock_call_args *a,
                             struct lock_kind_call *call)
{
    command(call, "HGET", a, 1);
}

static void build_pttl(const struct lock_call_args *a,
                       struct lock_kind_call *call)
{
    command(call, "PTTL", a, 0);
}

/* ---- reading replies -------------------------------------------------- */

static enum lock_outcome read_acquire(const struct backend_value *r,
                                      int64_t *value)
{
    if (r->type == VALUE_NIL)
        return OUTCOME_GRANTED;
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return OUTCOME_REFUSED;
}

static enum lock_outcome read_release(const struct backend_value *r,
                                      int64_t *value)
{
    (void)value;
    if (r->type == VALUE_NIL)
        return OUTCOME_NOT_OWNER;
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    return r->integer == 1 ? OUTCOME_RELEASED : OUTCOME_DECREMENTED;
}

/* 1: freed; 0: nothing to free (force) or not the owner's (owner). */
static enum lock_outcome read_freed(const struct backend_value *r,
                                    int64_t *value)
{
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return r->integer == 1 ? OUTCOME_RELEASED : OUTCOME_VALUE;
}

static enum lock_outcome read_integer(const struct backend_value *r,
                                      int64_t *value)
{
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return OUTCOME_VALUE;
}

/* HGET: the count, or nil when this owner has no field. */
static enum lock_outcome read_count(const struct backend_value *r,
                                    int64_t *value)
{
    if (r->type == VALUE_NIL)
        *value = 0;
    else if (r->type == VALUE_STRING)
        *value = strtoll(r->str, NULL, 10);
    else
        return OUTCOME_BAD_REPLY;
    return OUTCOME_VALUE;
}

/* ---- channel, messages, renewal -------------------------------------- */

/* Redisson: prefix + ":{" + name + "}", but a name that already holds a
 * '{' keeps its own hash tag: prefix + ":" + name. */
static size_t channel(char *out, const char *name, size_t len,
                      const char *field, size_t field_len)
{
    static const char prefix[] = "redisson_lock__channel:";
    int tagged = memchr(name, '{', len) != NULL;
    char *p = out;

    (void)field;
    (void)field_len;
    memcpy(p, prefix, sizeof(prefix) - 1);
    p += sizeof(prefix) - 1;
    if (!tagged)
        *p++ = '{';
    memcpy(p, name, len);
    p += len;
    if (!tagged)
        *p++ = '}';
    return (size_t)(p - out);
}

static size_t on_message(const char *payload, size_t len)
{
    (void)payload;
    (void)len;
    return 1;
}

static void renew_add(const struct lock_call_args *a, const char **keys,
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

static int renewed(const struct backend_value *element)
{
    return element->type == VALUE_INTEGER && element->integer == 1;
}

const struct lock_kind lock_kind_rlock = {
    .name = "rlock",
    .channel = channel,
    .on_message = on_message,
    .ops =
        {
            [LOCK_OP_ACQUIRE] = {build_acquire, read_acquire},
            [LOCK_OP_RELEASE] = {build_release, read_release},
            [LOCK_OP_FORCE_RELEASE] = {build_force_release, read_freed},
            [LOCK_OP_RELEASE_OWNER] = {build_release_owner, read_freed},
            [LOCK_OP_IS_LOCKED] = {build_is_locked, read_integer},
            [LOCK_OP_IS_HELD] = {build_is_held, read_integer},
            [LOCK_OP_HOLD_COUNT] = {build_hold_count, read_count},
            [LOCK_OP_PTTL] = {build_pttl, read_integer},
        },
    .renewal = {&renew_script, 1, 2, renew_add, renewed},
    .scripts = rlock_scripts,
};
