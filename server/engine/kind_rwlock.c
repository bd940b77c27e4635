/*
 * kind_rwlock.c - Redisson's RReadWriteLock, as two rows of the lock-kind
 * table: READ (shared holds) and WRITE (one holder), on one hash.
 *
 * The format (Redisson's
 * redisson/src/main/java/org/redisson/RedissonReadLock.java and
 * RedissonWriteLock.java): a hash at the lock's name with "mode" = "read" or
 * "write", a field per reader "<client-id>:<thread-id>" and the writer's
 * "<client-id>:<thread-id>:write", each holding its hold count; for each read
 * hold n of an owner the key "{name}:<field>:rwlock_timeout:<n>" with that
 * hold's lease, from which a release sets the hash's TTL (the longest of the
 * remaining holds'). Waiters listen on redisson_rwlock:{name}: "0" wakes one
 * waiter, "1" (a write unlock) wakes all. A writer may take its own lock for
 * reading (a downgrade); a reader is never upgraded (the engine refuses it:
 * not_while_holding).
 *
 * rlockd's changes, as for RLock: a guard that tells the lock from any
 * other key; the acquire sets the count this daemon knows plus one (a
 * call sent again after its reply was lost counts once); every release,
 * the session's end and the settling after a lost reply are one script
 * per mode that sets the owner's count (rw_read_set, rw_write_set); a
 * write unlock that leaves its owner's read holds (a downgrade) also
 * sends "1", which Redisson does not, so readers waiting go at once.
 */
#include <string.h>

#include "engine/kind_script.h"

/*
 * shape() answers 'none' (no key), 'other', or the mode with the lock's
 * PTTL. A read-write lock is a hash whose "mode" is read or write, whose
 * other fields are owners "<anything>:<anything>" holding a count of at
 * least 1, with at least one of them, and a TTL. Only then is anything
 * written: an RLock of the same name is 'other', as is every application
 * key. timeout_key(name, field, n) names a read hold's key, in the lock's slot.
 */
#define RW_GUARD                                                               \
    KIND_LUA_RW_SHAPE("shape")                                                 \
    KIND_LUA_RLOCK_SHAPE("rlock_shape")                                        \
    "local function timeout_key(name, field, n) "                              \
    "local p = name; "                                                         \
    "if not string.find(p, '{', 1, true) then p = '{' .. p .. '}'; end; "      \
    "return p .. ':' .. field .. ':rwlock_timeout:' .. n; "                    \
    "end; "
/* An acquire's answer to a key that is not a read-write lock: a clash
 * when it is a plain lock, WRONGTYPE when it is anything else. */
#define RW_NOT_MINE                                                            \
    "if mode == 'other' then "                                                 \
    "if rlock_shape(KEYS[1]) == 'lock' then "                                  \
    "return " KIND_LUA_CLASH("a plain lock") "; end; "                         \
                                             "return " KIND_LUA_WRONG_TYPE     \
                                             "; end; "
/* As Redisson's read unlock: the hash lives as long as its longest read
 * hold; none left (or only the writer's) says so (false). */
#define RW_REMAINING                                                           \
    "local function longest_read() "                                           \
    "local longest = -3; "                                                     \
    "local f = redis.call('hgetall', KEYS[1]); "                               \
    "for i = 1, #f, 2 do "                                                     \
    "if f[i] ~= 'mode' then "                                                  \
    "for c = tonumber(f[i + 1]), 1, -1 do "                                    \
    "longest = math.max(longest, redis.call('pttl', timeout_key(KEYS[1], "     \
    "f[i], c))); "                                                             \
    "end; "                                                                    \
    "end; "                                                                    \
    "end; "                                                                    \
    "return longest; "                                                         \
    "end; "

/* Redisson's read acquire: KEYS name; ARGV lease, field, count. Granted
 * when the lock is free, read, or written by the owner itself. */
static struct backend_script read_acquire_script = {
    "rw_read_acquire",
    RW_GUARD
    "local mode, ttl = shape(KEYS[1]); " RW_NOT_MINE
    "local held = mode ~= 'none' and "
    "redis.call('hget', KEYS[1], ARGV[2]); "
    "if ARGV[3] ~= '0' and not held then "
    "return " KIND_LUA_LOCKLOST "; end; "
    "if mode == 'write' and "
    "redis.call('hexists', KEYS[1], ARGV[2] .. ':write') == 0 then "
    "return ttl; end; "
    "if mode == 'none' then redis.call('hset', KEYS[1], 'mode', "
    "'read'); end; "
    "local c = tonumber(ARGV[3]) + 1; "
    "redis.call('hset', KEYS[1], ARGV[2], c); "
    "redis.call('set', timeout_key(KEYS[1], ARGV[2], c), 1, 'px', ARGV[1]); "
    "local left = redis.call('pttl', KEYS[1]); "
    "redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1]))); "
    "return nil;",
    ""};

/* Redisson's write acquire: KEYS name; ARGV lease, field (":write"),
 * count. Granted when the lock is free or written by the owner; a
 * reentrant one sets the lease (Redisson adds it to the PTTL, which only
 * grows). */
static struct backend_script write_acquire_script = {
    "rw_write_acquire",
    RW_GUARD "local mode, ttl = shape(KEYS[1]); " RW_NOT_MINE
             "local held = mode == 'write' and "
             "redis.call('hget', KEYS[1], ARGV[2]); "
             "if ARGV[3] ~= '0' and not held then "
             "return " KIND_LUA_LOCKLOST "; end; "
             "if mode ~= 'none' and not held then return ttl; end; "
             "redis.call('hset', KEYS[1], 'mode', 'write'); "
             "redis.call('hset', KEYS[1], ARGV[2], tonumber(ARGV[3]) + 1); "
             "redis.call('pexpire', KEYS[1], ARGV[1]); "
             "return nil;",
    ""};

/*
 * Sets a reader's count: KEYS name, channel; ARGV message, lease, field,
 * count (-1: the field's less one), publish. nil: the owner holds no read
 * hold; 0: it still does; 1: it no longer does. Its hold's timeout key
 * goes with it; one missing for a hold kept (a settle after a failover
 * that lost it) is made again, to live the lease or, with lease 0 (a
 * settle, which must not extend a hold), as long as the hash. The hash
 * lives as long as its longest remaining read hold, or while a writer
 * holds it, and is deleted (and "0" sent) when none is left.
 */
static struct backend_script read_set_script = {
    "rw_read_set",
    RW_GUARD RW_REMAINING KIND_LUA_PUBLISH
    "local mode = shape(KEYS[1]); "
    "if mode == 'other' then return " KIND_LUA_WRONG_TYPE "; end; "
    "local cur = mode ~= 'none' and redis.call('hget', KEYS[1], ARGV[3]); "
    "if not cur then return nil; end; "
    "local c = tonumber(ARGV[4]); "
    "if c < 0 then c = tonumber(cur) - 1; end; "
    "for n = tonumber(cur), c + 1, -1 do "
    "redis.call('del', timeout_key(KEYS[1], ARGV[3], n)); end; "
    "if c > 0 then "
    "redis.call('hset', KEYS[1], ARGV[3], c); "
    "local px = tonumber(ARGV[2]); "
    "if px == 0 then px = redis.call('pttl', KEYS[1]); end; "
    "for n = 1, px > 0 and c or 0 do "
    "redis.call('set', timeout_key(KEYS[1], ARGV[3], n), 1, 'px', px, "
    "'nx'); end; "
    "else redis.call('hdel', KEYS[1], ARGV[3]); end; "
    "if redis.call('hlen', KEYS[1]) > 1 then "
    "local left = longest_read(); "
    "if left > 0 then redis.call('pexpire', KEYS[1], left); end; "
    "if left > 0 or mode == 'write' then return c > 0 and 0 or 1; end; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "publish(KEYS[2], ARGV[1]); "
    "return 1;",
    ""};

/*
 * Sets the writer's count: KEYS name, channel; ARGV message, lease, field
 * (":write"), count (-1: the field's less one), publish. nil: the owner
 * does not hold the write lock; 0: it still does (the lease set, unless
 * it is 0: a settle leaves the time to live alone); 1: it
 * no longer does: the lock is deleted, or read if the owner holds read
 * holds too (a downgrade), and "1" wakes every waiter.
 */
static struct backend_script write_set_script = {
    "rw_write_set",
    RW_GUARD KIND_LUA_PUBLISH
    "local mode = shape(KEYS[1]); "
    "if mode == 'other' then return " KIND_LUA_WRONG_TYPE "; end; "
    "local cur = mode == 'write' and redis.call('hget', KEYS[1], ARGV[3]); "
    "if not cur then return nil; end; "
    "local c = tonumber(ARGV[4]); "
    "if c < 0 then c = tonumber(cur) - 1; end; "
    "if c > 0 then "
    "redis.call('hset', KEYS[1], ARGV[3], c); "
    "if ARGV[2] ~= '0' then redis.call('pexpire', KEYS[1], ARGV[2]); end; "
    "return 0; end; "
    "redis.call('hdel', KEYS[1], ARGV[3]); "
    "if redis.call('hlen', KEYS[1]) == 1 then redis.call('del', KEYS[1]); "
    "else redis.call('hset', KEYS[1], 'mode', 'read'); end; "
    "publish(KEYS[2], ARGV[1]); "
    "return 1;",
    ""};

/* Redisson's forceUnlock of either mode: the lock is deleted only when it
 * is in that mode (ARGV[1] "0": read, "1": write); ARGV message, publish. */
static struct backend_script force_release_script = {
    "rw_force_release",
    RW_GUARD KIND_LUA_PUBLISH
    "local mode = shape(KEYS[1]); "
    "if mode == 'other' then return " KIND_LUA_WRONG_TYPE "; end; "
    "if mode ~= (ARGV[1] == '1' and 'write' or 'read') then return 0; end; "
    "redis.call('del', KEYS[1]); "
    "publish(KEYS[2], ARGV[1]); "
    "return 1;",
    ""};

/*
 * Renews many holds: KEYS name1..nameN, ARGV field1, ms1, ...: N results
 * 1/0. A read hold renews each of its timeout keys (ReadLockTask), and
 * the hash to at least ms; a write hold the hash (LockTask), if it is
 * still the writer.
 */
static struct backend_script renew_script = {
    "rw_renew_many",
    RW_GUARD "local result = {}; "
             "for i = 1, #KEYS do "
             "local f, ms = ARGV[2 * i - 1], ARGV[2 * i]; "
             "local mode = shape(KEYS[i]); "
             "local c = (mode == 'read' or mode == 'write') and "
             "redis.call('hget', KEYS[i], f); "
             "result[i] = 0; "
             "if c and string.sub(f, -6) == ':write' then "
             "if mode == 'write' then "
             "redis.call('pexpire', KEYS[i], ms); result[i] = 1; end; "
             "elseif c then "
             "for n = tonumber(c), 1, -1 do "
             "redis.call('pexpire', timeout_key(KEYS[i], f, n), ms); end; "
             "local left = redis.call('pttl', KEYS[i]); "
             "redis.call('pexpire', KEYS[i], math.max(left, tonumber(ms))); "
             "result[i] = 1; "
             "end; "
             "end; "
             "return result;",
    ""};

/* Every query: {locked, the owner's count, PTTL}; ARGV field, mode.
 * Locked, as Redisson's: READ, the mode is read or a writer also holds
 * read holds; WRITE, the mode is write. Anything else reads as no lock. */
static struct backend_script inspect_script = {
    "rw_inspect",
    RW_GUARD
    "local mode, ttl = shape(KEYS[1]); "
    "if mode == 'none' or mode == 'other' then return {0, 0, -2}; end; "
    "local locked = 0; "
    "if ARGV[2] == 'write' then locked = mode == 'write' and 1 or 0; "
    "elseif mode == 'read' or redis.call('hlen', KEYS[1]) > 2 then "
    "locked = 1; end; "
    "local c = redis.call('hget', KEYS[1], ARGV[1]); "
    "return {locked, c and tonumber(c) or 0, ttl};",
    ""};

/* Every owner of either mode: {pttl, mode, field, count...}, {-2, "none"}
 * for none. */
static struct backend_script owners_script = {
    "rw_owners",
    RW_GUARD KIND_LUA_RW_OWNERS
    "local mode, ttl = shape(KEYS[1]); "
    "if mode == 'none' or mode == 'other' then return {-2, 'none'}; end; "
    "return rw_owners(KEYS[1], mode, ttl);",
    ""};

static struct backend_script *const read_scripts[] = {&read_acquire_script,
                                                      &read_set_script,
                                                      &force_release_script,
                                                      &renew_script,
                                                      &inspect_script,
                                                      &owners_script,
                                                      NULL};
static struct backend_script *const write_scripts[] = {&write_acquire_script,
                                                       &write_set_script, NULL};

/* The message of each mode: "0" wakes one waiter, "1" all of them. */
#define READ_MESSAGE "0"
#define WRITE_MESSAGE "1"

/* ---- building calls --------------------------------------------------- */

static void acquire_call(struct backend_script *s,
                         const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    kind_script(call, s, 1, a);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, a->count);
}

static void build_read_acquire(const struct lock_call_args *a,
                               struct lock_kind_call *call)
{
    acquire_call(&read_acquire_script, a, call);
}

static void build_write_acquire(const struct lock_call_args *a,
                                struct lock_kind_call *call)
{
    acquire_call(&write_acquire_script, a, call);
}

/* A set script of one mode: its keys, message, lease, field and count. */
static void set_call(struct backend_script *s, const char *message,
                     const struct lock_call_args *a, int64_t count,
                     struct lock_kind_call *call)
{
    kind_script(call, s, 2, a);
    kind_arg(call, a->channel, a->channel_len);
    kind_arg(call, message, 1);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, count);
    kind_arg_publish(call, a);
}

/* The count a release sets: the one known less one, or the field's less
 * one when none is known (-1). */
static int64_t released_count(const struct lock_call_args *a)
{
    return a->count > 0 ? a->count - 1 : -1;
}

/* Each mode's release, session end and settle, by the set script. */
#define SET_BUILDERS(mode, script, message)                                    \
    static void build_##mode##_release(const struct lock_call_args *a,         \
                                       struct lock_kind_call *call)            \
    {                                                                          \
        set_call(&(script), message, a, released_count(a), call);              \
    }                                                                          \
    static void build_##mode##_release_owner(const struct lock_call_args *a,   \
                                             struct lock_kind_call *call)      \
    {                                                                          \
        set_call(&(script), message, a, 0, call);                              \
    }                                                                          \
    static void build_##mode##_settle(const struct lock_call_args *a,          \
                                      struct lock_kind_call *call)             \
    {                                                                          \
        set_call(&(script), message, a, a->count, call);                       \
    }                                                                          \
    static void build_##mode##_force_release(const struct lock_call_args *a,   \
                                             struct lock_kind_call *call)      \
    {                                                                          \
        kind_script(call, &force_release_script, 2, a);                        \
        kind_arg(call, a->channel, a->channel_len);                            \
        kind_arg(call, message, 1);                                            \
        kind_arg_publish(call, a);                                             \
    }                                                                          \
    static void build_##mode##_inspect(const struct lock_call_args *a,         \
                                       struct lock_kind_call *call)            \
    {                                                                          \
        kind_script(call, &inspect_script, 1, a);                              \
        kind_arg(call, a->field, a->field_len);                                \
        kind_arg(call, #mode, strlen(#mode));                                  \
    }
SET_BUILDERS(read, read_set_script, READ_MESSAGE)
SET_BUILDERS(write, write_set_script, WRITE_MESSAGE)

static void build_owners(const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    kind_script(call, &owners_script, 1, a);
}

/* ---- reading replies -------------------------------------------------- */

/* The set script as the session's end and settling read it: 1 freed (the
 * owner's hold), anything else left as it was. */
static enum lock_outcome read_set(const struct backend_value *r, int64_t *value)
{
    if (r->type == VALUE_NIL) {
        *value = 0;
        return OUTCOME_VALUE;
    }
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer == 1 ? 1 : 2;
    return r->integer == 1 ? OUTCOME_RELEASED : OUTCOME_VALUE;
}

/* ---- messages and renewal -------------------------------------------- */

static size_t on_message(const char *payload, size_t len)
{
    return len == 1 && payload[0] == '1' ? LOCK_KIND_WAKE_ALL : 1;
}

#define RW_OPS(mode)                                                           \
    [LOCK_OP_ACQUIRE] = {build_##mode##_acquire, lock_kind_read_acquire},      \
    [LOCK_OP_RELEASE] = {build_##mode##_release, lock_kind_read_release},      \
    [LOCK_OP_FORCE_RELEASE] = {build_##mode##_force_release,                   \
                               lock_kind_read_freed},                          \
    [LOCK_OP_RELEASE_OWNER] = {build_##mode##_release_owner, read_set},        \
    [LOCK_OP_SETTLE] = {build_##mode##_settle, read_set},                      \
    [LOCK_OP_IS_LOCKED] = {build_##mode##_inspect, lock_kind_read_locked},     \
    [LOCK_OP_IS_HELD] = {build_##mode##_inspect, lock_kind_read_held},         \
    [LOCK_OP_HOLD_COUNT] = {build_##mode##_inspect, lock_kind_read_count},     \
    [LOCK_OP_PTTL] = {build_##mode##_inspect, lock_kind_read_pttl},            \
    [LOCK_OP_OWNERS] = {build_owners, lock_kind_read_owners}

const struct lock_kind lock_kind_read = {
    .name = "read",
    .word = "READ",
    .acquired = &stats.read_locks_acquired,
    .channel = {"redisson_rwlock"},
    .field_suffix = "",
    .shared = true,
    .yields_to = &lock_kind_write,
    .on_message = on_message,
    .ops = {RW_OPS(read)},
    .renewal = {&renew_script, 1, 2, lock_kind_renew_add, lock_kind_renewed},
    .scripts = read_scripts,
};

const struct lock_kind lock_kind_write = {
    .name = "write",
    .word = "WRITE",
    .acquired = &stats.write_locks_acquired,
    .channel = {"redisson_rwlock"},
    .field_suffix = ":write",
    .not_while_holding = &lock_kind_read,
    .on_message = on_message,
    .ops = {RW_OPS(write)},
    .renewal = {&renew_script, 1, 2, lock_kind_renew_add, lock_kind_renewed},
    .scripts = write_scripts,
};
