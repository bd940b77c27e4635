/*
 * kind_script.h - what the kind files (kind_*.c) share to write their
 * scripts and build their calls: the Lua every family needs, and the
 * helpers that fill a struct lock_kind_call. Only kind files include it.
 */
#ifndef RLOCKD_KIND_SCRIPT_H
#define RLOCKD_KIND_SCRIPT_H

#include <string.h>

#include "base/stats.h"
#include "engine/lock_kind.h"

/*
 * What the scripts that free a lock publish with: the last argument says
 * how, as Redisson passes its <pub> (redisson-family.md, 9.2): PUBLISH,
 * SPUBLISH (a Redis 7 cluster's sharded pub/sub, which a PUBLISH never
 * reaches), or both, for fleets where some Java clients listen one way
 * and some the other.
 */
#define KIND_LUA_PUBLISH                                                       \
    "local function publish(channel, message) "                                \
    "local how = ARGV[#ARGV]; "                                                \
    "if how ~= 'spublish' then redis.call('publish', channel, message); end; " \
    "if how ~= 'publish' then redis.call('spublish', channel, message); end; " \
    "end; "
/* now_ms(): Redis's clock (TIME), in ms: one clock for every rlockd, where
 * scripts keep deadlines (the fair lock's queue, a semaphore's holders). */
#define KIND_LUA_NOW                                                           \
    "local function now_ms() "                                                 \
    "local t = redis.call('time'); "                                           \
    "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000); "       \
    "end; "
#define KIND_LUA_WRONG_TYPE                                                    \
    "redis.error_reply('WRONGTYPE the key holds a value that is not a lock')"
/*
 * The two hash formats that share a lock's key, each as a Lua function
 * named fn(k): an RLock's (RLock, the fair and the fenced lock: 'none',
 * 'other', or 'lock' with its owner field, count and PTTL) and an
 * RReadWriteLock's ('none', 'other', or its mode, "read" or "write", with
 * its PTTL); kind_rlock.c and kind_rwlock.c say what each must be. A
 * kind's scripts call their own shape(), and the other format's to name
 * the kind that holds a name: a query without a kind word reports the
 * lock whatever its format, and an acquire of the other format is
 * refused with KIND_LUA_CLASH.
 */
#define KIND_LUA_RLOCK_SHAPE(fn)                                               \
    "local function " fn "(k) "                                                \
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
#define KIND_LUA_RW_SHAPE(fn)                                                  \
    "local function " fn "(k) "                                                \
    "local n = redis.pcall('hlen', k); "                                       \
    "if type(n) ~= 'number' then return 'other'; end; "                        \
    "if n == 0 then return 'none'; end; "                                      \
    "local ttl = redis.call('pttl', k); "                                      \
    "if n < 2 or ttl < 0 then return 'other'; end; "                           \
    "local f = redis.call('hgetall', k); "                                     \
    "local mode; "                                                             \
    "for i = 1, #f, 2 do "                                                     \
    "if f[i] == 'mode' then mode = f[i + 1]; "                                 \
    "elseif not (string.find(f[i], '^.+:.+$') and "                            \
    "string.find(f[i + 1], '^[1-9]%d*$')) then return 'other'; end; "          \
    "end; "                                                                    \
    "if mode ~= 'read' and mode ~= 'write' then return 'other'; end; "         \
    "return mode, ttl; "                                                       \
    "end; "
/* An acquire that finds the name held in the other format: a WRONGTYPE
 * that names the holder's kind ("a plain lock", "a read-write lock"). */
#define KIND_LUA_CLASH(holder)                                                 \
    "redis.error_reply('WRONGTYPE the name is held as " holder                 \
    ", which cannot share it with this kind')"
/* OWNERS' reply of a read-write lock in mode with ttl: {ttl, mode, field,
 * count...}, every owner of either mode. */
#define KIND_LUA_RW_OWNERS                                                     \
    "local function rw_owners(k, mode, ttl) "                                  \
    "local out = {ttl, mode}; "                                                \
    "local f = redis.call('hgetall', k); "                                     \
    "for i = 1, #f, 2 do "                                                     \
    "if f[i] ~= 'mode' then "                                                  \
    "out[#out + 1] = f[i]; out[#out + 1] = tonumber(f[i + 1]); end; "          \
    "end; "                                                                    \
    "return out; "                                                             \
    "end; "
/* A reentrant acquire whose owner Redis no longer knows. */
#define KIND_LUA_LOCKLOST "redis.error_reply('LOCKLOST the hold is gone')"

static inline void kind_arg(struct lock_kind_call *call, const char *s,
                            size_t len)
{
    call->argv[call->argc] = s;
    call->argv_len[call->argc++] = len;
}

static inline void kind_arg_number(struct lock_kind_call *call, int slot,
                                   int64_t v)
{
    kind_arg(call, call->number[slot], format_int64(call->number[slot], v));
}

static inline void kind_arg_publish(struct lock_kind_call *call,
                                    const struct lock_call_args *a)
{
    kind_arg(call, a->publish, strlen(a->publish));
}

/* Starts a call of script with nkeys keys, the lock's name the first. */
static inline void kind_script(struct lock_kind_call *call,
                               struct backend_script *s, int nkeys,
                               const struct lock_call_args *a)
{
    call->script = s;
    call->nkeys = nkeys;
    call->argc = 0;
    kind_arg(call, a->name, a->name_len);
}

/* The kind's i-th own key (keys[i]) as the next argument. */
static inline void kind_arg_key(struct lock_kind_call *call,
                                const struct lock_call_args *a, int i)
{
    kind_arg(call, a->keys[i], a->key_len[i]);
}

#endif
