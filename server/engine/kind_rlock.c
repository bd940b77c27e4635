/*
 * kind_rlock.c - Redisson's RLock, the first row of the lock-kind table.
 *
 * The format (../shared/reference/redisson-rlock.md): a hash at the
 * lock's name, one field "<client-id>:<thread-id>" holding the hold
 * count, PEXPIRE for the lease, and the message "0" on
 * redisson_lock__channel:{name} when the lock is freed, which wakes one
 * waiter. The acquire, release and force-release scripts are Redisson's
 * (3.x) own, so a Java service using Redisson and rlockd exclude and wake
 * each other, but for one argument of the acquire and the release: the
 * count rlockd knows, from which they set the new one, so that a call
 * sent again after its reply was lost counts once. Four are rlockd's:
 * freeing an owner whatever its count (its session ended), setting an
 * owner's count (after a lost reply, or on a new master), renewing many
 * locks in one call, and every query in one read. Each script first makes
 * sure its key is a lock (SHAPE_GUARD): a write to any other key is
 * refused with WRONGTYPE, a query of one reads as "no lock".
 */
#include <stdlib.h>
#include <string.h>

#include "engine/lock_kind.h"

/*
 * Every script begins with this guard, which tells a lock from any other
 * key before anything is read or written: the shared database also holds
 * the application's data, and a lock command must never change it or
 * reveal it. An RLock is a hash with exactly one field, an owner
 * "<client-id>:<thread-id>" whose value is a count of at least 1, and a
 * TTL (every writer sets one with the field). The owner is matched as
 * "<anything>:<anything>": node-redisson names its owners
 * "<uuid>:<uuid>", not "<uuid>:<thread-id>" as Java does. shape() answers 'none' (no
 * key), 'other', or 'lock' with the lock's owner field, count and PTTL,
 * which the scripts use instead of asking again. HLEN comes first: it
 * fails on a key of another type, is 0 only for no key (Redis deletes an
 * empty hash) and is O(1) even on a large application hash, so a free
 * name costs one call and a lock three.
 */
#define SHAPE_GUARD                                                            \
    "local function shape(k) "                                                 \
    "local n = redis.pcall('hlen', k); "                                       \
    "if type(n) ~= 'number' then return 'other'; end; "                        \
    "if n == 0 then return 'none'; end; "                                      \
    "if n ~= 1 then return 'other'; end; "                                     \
    "local ttl = redis.call('pttl', k); "                                      \
    "if ttl < 0 then return 'other'; end; "                                    \
    "local f = redis.call('hgetall', k); "                                     \
    "if string.find(f[1], '^.+:.+$') and string.find(f[2], '^[1-9]%d*$') "     \
    "then return 'lock', f[1], tonumber(f[2]), ttl; end; "                     \
    "return 'other'; "                                                         \
    "end; "
/*
 * What the scripts that free a lock publish with: the last argument says
 * how, as Redisson passes its <pub> (redisson-family.md, 9.2): PUBLISH,
 * SPUBLISH (a Redis 7 cluster's sharded pub/sub, which a PUBLISH never
 * reaches), or both, for fleets where some Java clients listen one way
 * and some the other.
 */
#define NOTIFY                                                                 \
    "local function notify(channel, message) "                                 \
    "local how = ARGV[#ARGV]; "                                                \
    "if how ~= 'spublish' then redis.call('publish', channel, message); end; " \
    "if how ~= 'publish' then redis.call('spublish', channel, message); end; " \
    "end; "
#define WRONG_TYPE_ERROR                                                       \
    "redis.error_reply('WRONGTYPE the key holds a value that is not a lock')"

/*
 * Redisson's tryLockInnerAsync, behind the guard (the owner's field is the
 * only one a lock has, so "it exists" is "it is the lock's owner"), with
 * one change: ARGV[3] is the count this daemon knows the owner holds, and
 * 0 means a new hold. The count set is that one plus one, not the field's
 * plus one, so the script may run twice (its first reply lost, then sent
 * again) and counts the hold once (redisson#7367 counts it twice). So a
 * new hold that finds its owner's field (left by an earlier incarnation
 * of the client-id, or by an acquire whose reply was lost) takes it over
 * at count 1, and one LOCK and one UNLOCK always release; a reentrant one
 * that does not find it is told the hold is gone (LOCKLOST), instead of
 * taking the lock anew as if nothing had happened.
 */
static struct backend_script acquire_script = {
    "rlock_acquire",
    SHAPE_GUARD "local s, owner, _, ttl = shape(KEYS[1]); "
                "if s == 'other' then return " WRONG_TYPE_ERROR "; end; "
                "if ARGV[3] ~= '0' and owner ~= ARGV[2] then "
                "return redis.error_reply('LOCKLOST the hold is gone'); "
                "end; "
                "if (s == 'none' or owner == ARGV[2]) then "
                "redis.call('hset', KEYS[1], ARGV[2], tonumber(ARGV[3]) + 1); "
                "redis.call('pexpire', KEYS[1], ARGV[1]); "
                "return nil; "
                "end; "
                "return ttl;",
    ""};

/*
 * Redisson's unlockInnerAsync (3.x, without the latch), behind the guard,
 * with one change: ARGV[4] is the count this daemon knows the owner holds
 * (0: none known, the field's count is decremented), and the count left
 * is that one less one, so that a release sent again after its reply was
 * lost releases once: if the first one ran, the second sets the same
 * count, or finds the lock gone (which the engine reads as released).
 */
static struct backend_script release_script = {
    "rlock_release",
    SHAPE_GUARD NOTIFY
    "local s, owner, count = shape(KEYS[1]); "
    "if s == 'other' then return " WRONG_TYPE_ERROR "; end; "
    "if (s == 'none' or owner ~= ARGV[3]) then "
    "return nil; "
    "end; "
    "local counter = count - 1; "
    "if ARGV[4] ~= '0' then counter = tonumber(ARGV[4]) - 1; end; "
    "if (counter > 0) then "
    "redis.call('hset', KEYS[1], ARGV[3], counter); "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "notify(KEYS[2], ARGV[1]); "
    "return 1; "
    "end; "
    "return nil;",
    ""};

/* Redisson's forceUnlockAsync, behind the guard. */
static struct backend_script force_release_script = {
    "rlock_force_release",
    SHAPE_GUARD NOTIFY "local s = shape(KEYS[1]); "
                       "if s == 'other' then return " WRONG_TYPE_ERROR "; end; "
                       "if (s == 'lock') then "
                       "redis.call('del', KEYS[1]); "
                       "notify(KEYS[2], ARGV[1]); "
                       "return 1 "
                       "end; "
                       "return 0",
    ""};

/* rlockd's: frees an owner's lock whatever its count (its session ended);
 * a key that is no longer a lock is left alone. */
static struct backend_script release_owner_script = {
    "rlock_release_owner",
    SHAPE_GUARD NOTIFY "local s, owner = shape(KEYS[1]); "
                       "if (s ~= 'lock' or owner ~= ARGV[2]) then "
                       "return 0; "
                       "end; "
                       "redis.call('del', KEYS[1]); "
                       "notify(KEYS[2], ARGV[1]); "
                       "return 1;",
    ""};

/*
 * rlockd's: sets an owner's count to what this daemon knows (ARGV[3]),
 * after an acquire whose reply was lost may have run in Redis, or on a
 * new master after a failover: 0 frees the lock (and tells the channel)
 * and returns 1, anything else keeps it with that count and its TTL and
 * returns 2. A lock of another owner, or no lock, is left alone: 0.
 */
static struct backend_script settle_script = {
    "rlock_settle",
    SHAPE_GUARD NOTIFY "local s, owner = shape(KEYS[1]); "
                       "if (s ~= 'lock' or owner ~= ARGV[2]) then "
                       "return 0; "
                       "end; "
                       "if ARGV[3] == '0' then "
                       "redis.call('del', KEYS[1]); "
                       "notify(KEYS[2], ARGV[1]); "
                       "return 1; "
                       "end; "
                       "redis.call('hset', KEYS[1], ARGV[2], ARGV[3]); "
                       "return 2;",
    ""};

/* KEYS name1..nameN, ARGV field1, ms1, ..., fieldN, msN: N results 1/0.
 * A key that is no longer a lock is not renewed: its hold is lost. */
static struct backend_script renew_script = {
    "rlock_renew_many",
    SHAPE_GUARD "local result = {}; "
                "for i = 1, #KEYS do "
                "local s, owner = shape(KEYS[i]); "
                "if (s == 'lock' and owner == ARGV[2 * i - 1]) then "
                "redis.call('pexpire', KEYS[i], ARGV[2 * i]); "
                "result[i] = 1; "
                "else "
                "result[i] = 0; "
                "end; "
                "end; "
                "return result;",
    ""};

/*
 * Every query in one read-only script: {locked 1/0, the owner's count,
 * PTTL}. Anything that is not a lock reads as no lock at all, {0, 0, -2},
 * so that the queries reveal nothing about other keys.
 */
static struct backend_script inspect_script = {
    "rlock_inspect",
    SHAPE_GUARD "local s, owner, count, ttl = shape(KEYS[1]); "
                "if (s ~= 'lock') then "
                "return {0, 0, -2}; "
                "end; "
                "return {1, owner == ARGV[1] and count or 0, ttl};",
    ""};

/* Every owner, in the shape every kind's OWNERS answers: {pttl, field,
 * count}, or {-2} when there is no lock (or the key is not one). */
static struct backend_script owners_script = {
    "rlock_owners",
    SHAPE_GUARD "local s, owner, count, ttl = shape(KEYS[1]); "
                "if (s ~= 'lock') then "
                "return {-2}; "
                "end; "
                "return {ttl, owner, count};",
    ""};

static struct backend_script *const rlock_scripts[] = {
    &acquire_script,       &release_script, &force_release_script,
    &release_owner_script, &settle_script,  &renew_script,
    &inspect_script,       &owners_script,  NULL};

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
    arg_number(call, 1, a->count);
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
    arg_number(call, 1, a->count);
    arg(call, a->publish, strlen(a->publish));
}

static void build_force_release(const struct lock_call_args *a,
                                struct lock_kind_call *call)
{
    script(call, &force_release_script, 2);
    arg(call, a->name, a->name_len);
    arg(call, a->channel, a->channel_len);
    arg(call, UNLOCK_MESSAGE, 1);
    arg(call, a->publish, strlen(a->publish));
}

/* The owner's lock: its name, channel, message and owner field. */
static void owner_args(struct lock_kind_call *call, struct backend_script *s,
                       const struct lock_call_args *a)
{
    script(call, s, 2);
    arg(call, a->name, a->name_len);
    arg(call, a->channel, a->channel_len);
    arg(call, UNLOCK_MESSAGE, 1);
    arg(call, a->field, a->field_len);
}

static void build_release_owner(const struct lock_call_args *a,
                                struct lock_kind_call *call)
{
    owner_args(call, &release_owner_script, a);
    arg(call, a->publish, strlen(a->publish));
}

static void build_settle(const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    owner_args(call, &settle_script, a);
    arg_number(call, 0, a->count);
    arg(call, a->publish, strlen(a->publish));
}

/* Every query: the lock's name and the caller's owner field. */
static void build_inspect(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    script(call, &inspect_script, 1);
    arg(call, a->name, a->name_len);
    arg(call, a->field, a->field_len);
}

static void build_owners(const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    script(call, &owners_script, 1);
    arg(call, a->name, a->name_len);
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

static enum lock_outcome read_locked(const struct backend_value *r,
                                     int64_t *value)
{
    return read_inspect(r, 0, value);
}

static enum lock_outcome read_held(const struct backend_value *r,
                                   int64_t *value)
{
    enum lock_outcome outcome = read_inspect(r, 1, value);

    if (outcome == OUTCOME_VALUE)
        *value = *value > 0;
    return outcome;
}

static enum lock_outcome read_count(const struct backend_value *r,
                                    int64_t *value)
{
    return read_inspect(r, 1, value);
}

static enum lock_outcome read_pttl(const struct backend_value *r,
                                   int64_t *value)
{
    return read_inspect(r, 2, value);
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
            [LOCK_OP_SETTLE] = {build_settle, read_freed},
            [LOCK_OP_IS_LOCKED] = {build_inspect, read_locked},
            [LOCK_OP_IS_HELD] = {build_inspect, read_held},
            [LOCK_OP_HOLD_COUNT] = {build_inspect, read_count},
            [LOCK_OP_PTTL] = {build_inspect, read_pttl},
            [LOCK_OP_OWNERS] = {build_owners, lock_kind_read_owners},
        },
    .renewal = {&renew_script, 1, 2, renew_add, renewed},
    .scripts = rlock_scripts,
};
