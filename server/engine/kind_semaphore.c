/*
 * kind_semaphore.c - Redisson's semaphores and count-down latch, three
 * rows of the lock-kind table: RSemaphore's permits, held by a session;
 * RPermitExpirableSemaphore's, each its own hold named by its id; and
 * RCountDownLatch, which a wait (AWAIT) ends without holding anything.
 *
 * The format (Redisson's
 * redisson/src/main/java/org/redisson/RedissonSemaphore.java,
 * RedissonPermitExpirableSemaphore.java and RedissonCountDownLatch.java): a
 * semaphore is a string at its name, the permits available; redisson_sc:{name}
 * carries the new number of permits after every release, add or set, and a
 * waiter woken by it tries again (a message n wakes at most n of this daemon's
 * waiters). The expirable semaphore's permits are the members of the zset
 * {name}:timeout, 16 raw bytes each (their ids, 32 hex digits where they are
 * shown), scored by the time their lease runs out; expired ones come back when
 * a script next runs. A latch is a string count at its name; the channel
 * redisson_countdownlatch__channel__{name} carries "0" when it reaches zero
 * (every waiter goes) and "1" when it is set.
 *
 * What rlockd adds where Redisson loses permits (its users' first
 * complaint, section 12): the plain semaphore's permits taken through
 * rlockd are recorded in rlockd's own keys in the name's slot,
 * rlockd_permits:{name} (owner -> permits) and rlockd_permits_deadline:
 * {name} (owner -> when its permits come back), renewed by the watchdog
 * while the session lives: a crashed client's come back when its session
 * ends, a crashed rlockd's within the watchdog timeout. The record also
 * makes an acquire or release sent again after a lost reply count once,
 * and lets a restarted rlockd give a session its permits back. Java
 * clients ignore both keys. An expirable permit taken through rlockd is
 * renewed the same way, by moving its score. Every script that reads the
 * count first returns the permits whose time ran out, of both kinds, and
 * every clock is Redis's (TIME): one clock for every rlockd.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/kind_script.h"

/* A count's most permits, Redisson's Integer.MAX_VALUE. */
#define SEMAPHORE_MAX_PERMITS "2147483647"

/* clang-format off */
/* raw(): an expirable permit's id, 32 hex digits, as the 16 bytes its
 * zset member is. */
#define RAW_ID_LUA                                                             \
    "local function raw(hex) "                                                 \
        "return (string.gsub(hex, '..', function(c) "                          \
            "return string.char(tonumber(c, 16)); end)); "                     \
    "end; "

/*
 * What every semaphore script shares; KEYS name, channel, owners,
 * deadlines, timeout. permits() is the count, or nil when the name holds
 * anything else (an application's key is never changed); reclaim()
 * returns the permits whose time ran out and tells the channel; next_look
 * is how long a refused waiter sleeps at most: until the soonest a
 * holder's time runs out, and a second at the latest, so that a missed
 * message never strands it.
 */
#define SEMAPHORE_LUA                                                          \
    KIND_LUA_PUBLISH KIND_LUA_NOW RAW_ID_LUA                                   \
    "local function permits() "                                                \
        "local v = redis.pcall('get', KEYS[1]); "                              \
        "if v == false then return 0; end; "                                   \
        "if type(v) ~= 'string' or not string.find(v, '^%-?%d+$') then "       \
            "return nil; end; "                                                \
        "return tonumber(v); "                                                 \
    "end; "                                                                    \
    "local function foreign(k, why) "                                          \
        "return redis.error_reply('WRONGTYPE " LOCK_KIND_FOREIGN ": ' .. "     \
            "k .. ' is ' .. why); "                                            \
    "end; "                                                                    \
    "local function record_wrong(k, t, ttl) "                                  \
        "local x = redis.call('type', k).ok; "                                 \
        "if x ~= 'none' and x ~= t then return foreign(k, 'a ' .. x); end; "   \
        "if x ~= 'none' and not ttl and redis.call('pttl', k) ~= -1 then "     \
            "return foreign(k, 'a ' .. x .. ' with a TTL'); end; "             \
    "end; "                                                                    \
    "local function held_of(f) "                                               \
        "local v = redis.call('hget', KEYS[3], f); "                           \
        "if v == false then return 0; end; "                                   \
        "if string.find(v, '^[1-9]%d*$') then return tonumber(v); end; "       \
    "end; "                                                                    \
    "local function reclaim(now) "                                             \
        "local n = 0; "                                                        \
        "for _, f in ipairs(redis.call('zrangebyscore', KEYS[4], '-inf', "     \
                                      "now)) do "                              \
            "n = n + (tonumber(redis.call('hget', KEYS[3], f)) or 0); "        \
            "redis.call('hdel', KEYS[3], f); "                                 \
            "redis.call('zrem', KEYS[4], f); "                                 \
        "end; "                                                                \
        "for _, id in ipairs(redis.call('zrangebyscore', KEYS[5], 0, now)) "   \
        "do "                                                                  \
            "redis.call('zrem', KEYS[5], id); "                                \
            "n = n + 1; "                                                      \
        "end; "                                                                \
        "if n > 0 then "                                                       \
            "local v = redis.call('incrby', KEYS[1], n); "                     \
            "if v > 0 then publish(KEYS[2], v); end; "                         \
        "end; "                                                                \
    "end; "                                                                    \
    "local function next_look(now) "                                           \
        "local soon = 1000; "                                                  \
        "for _, z in ipairs({KEYS[4], KEYS[5]}) do "                           \
            "local e = redis.call('zrange', z, 0, 0, 'WITHSCORES'); "          \
            "if e[2] then "                                                    \
                "soon = math.min(soon, math.max(1, tonumber(e[2]) - now)); "   \
            "end; "                                                            \
        "end; "                                                                \
        "return soon; "                                                        \
    "end; "                                                                    \
    "if permits() == nil then return " KIND_LUA_WRONG_TYPE "; end; "           \
    "local wrong = record_wrong(KEYS[3], 'hash') or "                          \
        "record_wrong(KEYS[4], 'zset') or "                                    \
        "record_wrong(KEYS[5], 'zset', true); "                                \
    "if wrong then return wrong; end; "                                        \
    "local now = now_ms(); "

/* held: the permits the owner field holds, as its record says. */
#define HELD_LUA(field)                                                        \
    "local held = held_of(" field "); "                                        \
    "if not held then "                                                        \
        "return foreign(KEYS[3], 'a hash whose field ' .. " field " .. "       \
            "' is no count'); end; "

/*
 * The plain semaphore's acquire, RSemaphore's tryAcquire with the owner
 * recorded; ARGV lease, field, count (the permits this daemon knows the
 * owner holds), permits, publish. Sent again after a lost reply, it finds
 * them taken and counts once; an owner that finds fewer than it knows had
 * them returned (its time ran out): LOCKLOST; a new owner that finds some
 * (an earlier incarnation of the client-id's) gives them back first.
 */
static struct backend_script acquire_script = {
    "semaphore_acquire",
    SEMAPHORE_LUA
    "reclaim(now); "
    HELD_LUA("ARGV[2]")
    "local known, n = tonumber(ARGV[3]), tonumber(ARGV[4]); "
    "if held == known + n then "
        "redis.call('zadd', KEYS[4], now + tonumber(ARGV[1]), ARGV[2]); "
        "return nil; "
    "end; "
    "if held ~= known then "
        "if known > 0 then return " KIND_LUA_LOCKLOST "; end; "
        "redis.call('incrby', KEYS[1], held); "
        "redis.call('hdel', KEYS[3], ARGV[2]); "
        "redis.call('zrem', KEYS[4], ARGV[2]); "
    "end; "
    "if permits() >= n then "
        "redis.call('decrby', KEYS[1], n); "
        "redis.call('hset', KEYS[3], ARGV[2], known + n); "
        "redis.call('zadd', KEYS[4], now + tonumber(ARGV[1]), ARGV[2]); "
        "return nil; "
    "end; "
    "return next_look(now);",
    ""};

/*
 * RSemaphore's release, of permits the owner holds; ARGV lease, field,
 * count, permits, publish. 1: it holds none now, 0: it still holds some,
 * nil: it does not hold what this daemon knows (they were returned: lost).
 * Sent again after a lost reply, it finds them given back already.
 */
static struct backend_script release_script = {
    "semaphore_release",
    SEMAPHORE_LUA
    "reclaim(now); "
    HELD_LUA("ARGV[2]")
    "local known, n = tonumber(ARGV[3]), tonumber(ARGV[4]); "
    "if held > 0 and held == known - n then return 0; end; "
    "if held ~= known or held < n then return nil; end; "
    "if held > n then "
        "redis.call('hset', KEYS[3], ARGV[2], held - n); "
        "redis.call('zadd', KEYS[4], now + tonumber(ARGV[1]), ARGV[2]); "
    "else "
        "redis.call('hdel', KEYS[3], ARGV[2]); "
        "redis.call('zrem', KEYS[4], ARGV[2]); "
    "end; "
    "local v = redis.call('incrby', KEYS[1], n); "
    "if v > 0 then publish(KEYS[2], v); end; "
    "return held > n and 0 or 1;",
    ""};

/*
 * rlockd's: sets the permits the owner holds to ARGV[2] (0: it has
 * left), giving back any above that (after an acquire whose reply was
 * lost, or on a new master); ARGV field, count, publish. 1: it holds none
 * now, 2: it holds that many, 0: it holds fewer than that (lost).
 */
static struct backend_script settle_script = {
    "semaphore_settle",
    SEMAPHORE_LUA
    "reclaim(now); "
    HELD_LUA("ARGV[1]")
    "local c = tonumber(ARGV[2]); "
    "if held < c or held == 0 then return 0; end; "
    "if held > c then "
        "local v = redis.call('incrby', KEYS[1], held - c); "
        "if v > 0 then publish(KEYS[2], v); end; "
    "end; "
    "if c > 0 then redis.call('hset', KEYS[3], ARGV[1], c); return 2; end; "
    "redis.call('hdel', KEYS[3], ARGV[1]); "
    "redis.call('zrem', KEYS[4], ARGV[1]); "
    "return 1;",
    ""};

/*
 * The expirable semaphore's acquire, RPermitExpirableSemaphore's with one
 * id; ARGV lease, id (hex), publish. Sent again after a lost reply it
 * finds its id and renews it. As Redisson's, the zset lives no longer
 * than the count when the count has a TTL.
 */
static struct backend_script expirable_acquire_script = {
    "expirable_acquire",
    SEMAPHORE_LUA
    "reclaim(now); "
    "local id = raw(ARGV[2]); "
    "if redis.call('zscore', KEYS[5], id) then "
        "redis.call('zadd', KEYS[5], now + tonumber(ARGV[1]), id); "
        "return nil; "
    "end; "
    "if permits() >= 1 then "
        "redis.call('decrby', KEYS[1], 1); "
        "redis.call('zadd', KEYS[5], now + tonumber(ARGV[1]), id); "
        "local ttl = redis.call('pttl', KEYS[1]); "
        "if ttl > 0 then redis.call('pexpire', KEYS[5], ttl); end; "
        "return nil; "
    "end; "
    "return next_look(now);",
    ""};

/*
 * RPermitExpirableSemaphore's tryRelease(id); ARGV id, publish. 1: given
 * back; 2: given back, but its lease had run out (Redisson's 0): its
 * holder lost it; 0: no such permit.
 */
static struct backend_script expirable_release_script = {
    "expirable_release",
    SEMAPHORE_LUA
    "local id = raw(ARGV[1]); "
    "local at = redis.call('zscore', KEYS[5], id); "
    "if not at then return 0; end; "
    "redis.call('zrem', KEYS[5], id); "
    "local v = redis.call('incrby', KEYS[1], 1); "
    "publish(KEYS[2], v); "
    "return tonumber(at) > now and 1 or 2;",
    ""};

/* rlockd's: keeps the permit (ARGV count 1) if it is still there, or
 * gives it back (0); ARGV id, count, publish. 1 given back, 2 kept, 0
 * not there. */
static struct backend_script expirable_settle_script = {
    "expirable_settle",
    SEMAPHORE_LUA
    "reclaim(now); "
    "local id = raw(ARGV[1]); "
    "if not redis.call('zscore', KEYS[5], id) then return 0; end; "
    "if ARGV[2] ~= '0' then return 2; end; "
    "redis.call('zrem', KEYS[5], id); "
    "local v = redis.call('incrby', KEYS[1], 1); "
    "publish(KEYS[2], v); "
    "return 1;",
    ""};

/* The owner's permits, as every query reads them: {held > 0, held, -1};
 * KEYS name, owners; ARGV field. */
static struct backend_script inspect_script = {
    "semaphore_inspect",
    "local held = redis.call('type', KEYS[2]).ok == 'hash' and "
        "tonumber(redis.call('hget', KEYS[2], ARGV[1])) or 0; "
    "return {held > 0 and 1 or 0, held, -1};",
    ""};

/*
 * Renews many holders' time: KEYS one zset per holder (the deadlines, or
 * the expirable permits), ARGV member, ms per holder: 1 renewed, 0 its
 * time ran out (its permits are back in the pool, or will be at the next
 * script: the hold is lost). member is the Lua that makes the member
 * from ARGV (raw(): an expirable permit's id).
 */
#define RENEW_MANY(member)                                                     \
    KIND_LUA_NOW RAW_ID_LUA                                                    \
    "local now = now_ms(); "                                                   \
    "local out = {}; "                                                         \
    "for i = 1, #KEYS do "                                                     \
        "local m, ms = " member ", tonumber(ARGV[2 * i]); "                    \
        "local at = redis.call('type', KEYS[i]).ok == 'zset' and "             \
            "redis.call('zscore', KEYS[i], m); "                               \
        "out[i] = 0; "                                                         \
        "if at and tonumber(at) > now then "                                   \
            "redis.call('zadd', KEYS[i], now + ms, m); "                       \
            "out[i] = 1; "                                                     \
        "end; "                                                                \
    "end; "                                                                    \
    "return out;"

static struct backend_script renew_script = {
    "semaphore_renew_many", RENEW_MANY("ARGV[2 * i - 1]"), ""};
static struct backend_script expirable_renew_script = {
    "expirable_renew_many",
    RENEW_MANY("raw(ARGV[2 * i - 1])"),
    ""};

/* trySetPermits (RSemaphore's and RPermitExpirableSemaphore's alike);
 * KEYS name, channel; ARGV permits, publish: 1 set, 0 there already. */
static struct backend_script try_set_script = {
    "semaphore_try_set",
    KIND_LUA_PUBLISH
    "local v = redis.pcall('get', KEYS[1]); "
    "if type(v) == 'table' then return " KIND_LUA_WRONG_TYPE "; end; "
    "if v ~= false then return 0; end; "
    "redis.call('set', KEYS[1], ARGV[1]); "
    "publish(KEYS[2], ARGV[1]); "
    "return 1;",
    ""};

/*
 * addPermits, after the permits whose time ran out came back; ARGV
 * permits (may be negative), publish: the new count, told to the channel
 * when waiters could take some. A count is Redisson's int, 0 to
 * 2147483647, and stays so whatever comes back later: an add that would
 * leave the count below 0, or the count and the permits held (that rlockd
 * records, and the expirable ones) above 2147483647, is refused with
 * {the count it would make, those held}, and nothing changes (Redisson's
 * addPermits checks nothing, and its int would wrap).
 */
static struct backend_script add_script = {
    "semaphore_add",
    SEMAPHORE_LUA
    "reclaim(now); "
    "local v = permits() + tonumber(ARGV[1]); "
    "local held = redis.call('zcard', KEYS[5]); "
    "for _, c in ipairs(redis.call('hvals', KEYS[3])) do "
        "held = held + (tonumber(c) or 0); "
    "end; "
    "if v < 0 or v + held > " SEMAPHORE_MAX_PERMITS " then "
        "return {v, held}; end; "
    "redis.call('set', KEYS[1], v); "
    "if v > 0 then publish(KEYS[2], v); end; "
    "return v;",
    ""};

/* availablePermits, after the permits whose time ran out came back. */
static struct backend_script available_script = {
    "semaphore_available",
    SEMAPHORE_LUA
    "reclaim(now); "
    "return permits();",
    ""};

/* A latch's count, or nil when the name holds anything else. */
#define LATCH_LUA                                                              \
    KIND_LUA_PUBLISH                                                           \
    "local v = redis.pcall('get', KEYS[1]); "                                  \
    "if type(v) == 'table' or (v and not string.find(v, '^%-?%d+$')) then "    \
        "return " KIND_LUA_WRONG_TYPE "; end; "                                \
    "local count = v and tonumber(v) or 0; "

/* AWAIT: over (nil) once the count is zero; else look again in a second
 * at the latest (RCountDownLatch's await() waits for the message only). */
static struct backend_script await_script = {
    "latch_await",
    LATCH_LUA
    "if count <= 0 then return nil; end; "
    "return 1000;",
    ""};

/* trySetCount; KEYS name, channel; ARGV count, publish: 1 set ("1" told:
 * a new count), 0 there already. */
static struct backend_script latch_set_script = {
    "latch_try_set",
    LATCH_LUA
    "if v then return 0; end; "
    "redis.call('set', KEYS[1], ARGV[1]); "
    "publish(KEYS[2], '1'); "
    "return 1;",
    ""};

/* countDown; ARGV amount (-1), publish: the count left (0 once the latch
 * is open), "0" told when it reaches zero, and the key deleted then. */
static struct backend_script count_down_script = {
    "latch_count_down",
    LATCH_LUA
    "local left = redis.call('decr', KEYS[1]); "
    "if left <= 0 then redis.call('del', KEYS[1]); end; "
    "if left == 0 then publish(KEYS[2], '0'); end; "
    "return math.max(left, 0);",
    ""};

/* getCount. */
static struct backend_script latch_count_script = {
    "latch_count",
    LATCH_LUA
    "return math.max(count, 0);",
    ""};
/* clang-format on */

static struct backend_script *const semaphore_scripts[] = {
    &acquire_script, &release_script,   &settle_script,
    &inspect_script, &renew_script,     &try_set_script,
    &add_script,     &available_script, NULL};
static struct backend_script *const expirable_scripts[] = {
    &expirable_acquire_script, &expirable_release_script,
    &expirable_settle_script, &expirable_renew_script, NULL};
static struct backend_script *const latch_scripts[] = {
    &await_script, &latch_set_script, &count_down_script, &latch_count_script,
    NULL};

/* ---- building calls --------------------------------------------------- */

/* A script of the semaphore's five keys. */
static void semaphore_call(struct backend_script *s,
                           const struct lock_call_args *a,
                           struct lock_kind_call *call)
{
    kind_script(call, s, 5, a);
    kind_arg(call, a->channel, a->channel_len);
    for (int i = 0; i < 3; i++)
        kind_arg_key(call, a, i);
}

/* Acquire and release: lease, owner, count known, permits, publish. */
static void build_permits(struct backend_script *s,
                          const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    semaphore_call(s, a, call);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, a->count);
    kind_arg_number(call, 2, a->amount);
    kind_arg_publish(call, a);
}

static void build_acquire(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    build_permits(&acquire_script, a, call);
}

static void build_release(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    build_permits(&release_script, a, call);
}

/* Settle, and the session's end (settled to none): owner, count. */
static void build_settle_to(struct backend_script *s, int64_t count,
                            const struct lock_call_args *a,
                            struct lock_kind_call *call)
{
    semaphore_call(s, a, call);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 0, count);
    kind_arg_publish(call, a);
}

static void build_settle(const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    build_settle_to(&settle_script, a->count, a, call);
}

static void build_release_owner(const struct lock_call_args *a,
                                struct lock_kind_call *call)
{
    build_settle_to(&settle_script, 0, a, call);
}

static void build_expirable_acquire(const struct lock_call_args *a,
                                    struct lock_kind_call *call)
{
    semaphore_call(&expirable_acquire_script, a, call);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_publish(call, a);
}

static void build_expirable_release(const struct lock_call_args *a,
                                    struct lock_kind_call *call)
{
    semaphore_call(&expirable_release_script, a, call);
    kind_arg(call, a->field, a->field_len);
    kind_arg_publish(call, a);
}

static void build_expirable_settle(const struct lock_call_args *a,
                                   struct lock_kind_call *call)
{
    build_settle_to(&expirable_settle_script, a->count, a, call);
}

static void build_expirable_release_owner(const struct lock_call_args *a,
                                          struct lock_kind_call *call)
{
    build_settle_to(&expirable_settle_script, 0, a, call);
}

static void build_inspect(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    kind_script(call, &inspect_script, 2, a);
    kind_arg_key(call, a, 0);
    kind_arg(call, a->field, a->field_len);
}

/* A count's script of name and channel: the value, publish. */
static void build_count(struct backend_script *s,
                        const struct lock_call_args *a,
                        struct lock_kind_call *call)
{
    kind_script(call, s, 2, a);
    kind_arg(call, a->channel, a->channel_len);
    kind_arg_number(call, 0, a->amount);
    kind_arg_publish(call, a);
}

static void build_try_set(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    build_count(&try_set_script, a, call);
}

static void build_add(const struct lock_call_args *a,
                      struct lock_kind_call *call)
{
    semaphore_call(&add_script, a, call);
    kind_arg_number(call, 0, a->amount);
    kind_arg_publish(call, a);
}

static void build_available(const struct lock_call_args *a,
                            struct lock_kind_call *call)
{
    semaphore_call(&available_script, a, call);
    kind_arg_publish(call, a);
}

static void build_await(const struct lock_call_args *a,
                        struct lock_kind_call *call)
{
    kind_script(call, &await_script, 2, a);
    kind_arg(call, a->channel, a->channel_len);
    kind_arg_publish(call, a);
}

static void build_latch_set(const struct lock_call_args *a,
                            struct lock_kind_call *call)
{
    build_count(&latch_set_script, a, call);
}

static void build_count_down(const struct lock_call_args *a,
                             struct lock_kind_call *call)
{
    build_count(&count_down_script, a, call);
}

static void build_latch_count(const struct lock_call_args *a,
                              struct lock_kind_call *call)
{
    build_count(&latch_count_script, a, call);
}

/* The renewal of a holder's time: its zset (the deadlines, or the
 * expirable permits) and its member, with the lease. */
static void renew_add(int key, const struct lock_call_args *a,
                      const char **keys, size_t *key_len, const char **args,
                      size_t *arg_len, char *number)
{
    keys[0] = a->keys[key];
    key_len[0] = a->key_len[key];
    args[0] = a->field;
    arg_len[0] = a->field_len;
    args[1] = number;
    arg_len[1] = format_int64(number, a->lease_ms);
}

static void renew_add_owner(const struct lock_call_args *a, const char **keys,
                            size_t *key_len, const char **args, size_t *arg_len,
                            char *number)
{
    renew_add(1, a, keys, key_len, args, arg_len, number);
}

static void renew_add_permit(const struct lock_call_args *a, const char **keys,
                             size_t *key_len, const char **args,
                             size_t *arg_len, char *number)
{
    renew_add(2, a, keys, key_len, args, arg_len, number);
}

/* ---- reading replies and messages ------------------------------------ */

static enum lock_outcome read_integer(const struct backend_value *r,
                                      int64_t *value)
{
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return OUTCOME_VALUE;
}

/* An add: the new count, or {the count it would make, the permits held}
 * when that leaves the range (value: the count, or count and held above
 * the top). */
static enum lock_outcome read_added(const struct backend_value *r,
                                    int64_t *value)
{
    if (r->type != VALUE_ARRAY)
        return read_integer(r, value);
    if (r->elements != 2 || r->element[0].type != VALUE_INTEGER ||
        r->element[1].type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->element[0].integer < 0
                 ? r->element[0].integer
                 : r->element[0].integer + r->element[1].integer;
    return OUTCOME_RANGE;
}

/* An expirable permit's release: 1 given back; 0 (no such permit) and 2
 * (its lease had run out) tell its holder it was lost. */
static enum lock_outcome read_expirable_release(const struct backend_value *r,
                                                int64_t *value)
{
    (void)value;
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    return r->integer == 1 ? OUTCOME_RELEASED : OUTCOME_NOT_OWNER;
}

/* A semaphore's message is the number of permits available now: that
 * many waiters may take one (a negative or foreign one wakes none). */
static size_t on_permits_message(const char *payload, size_t len)
{
    char text[24];
    long long n;

    if (len == 0 || len >= sizeof(text))
        return 0;
    memcpy(text, payload, len);
    text[len] = '\0';
    n = strtoll(text, NULL, 10);
    return n > 0 ? (size_t)n : 0;
}

/* "0": the latch is open, every waiter goes; "1" (set again): none. */
static size_t on_latch_message(const char *payload, size_t len)
{
    return len == 1 && payload[0] == '0' ? LOCK_KIND_WAKE_ALL : 0;
}

/* Every one of them rlockd's record of the semaphore's holders (the
 * expirable permits' zset is Redisson's, and rlockd's holders are in it). */
#define SEMAPHORE_KEYS                                                         \
    {                                                                          \
        {"rlockd_permits", NAMED_PREFIX, "the permit holders of semaphore"},   \
            {"rlockd_permits_deadline", NAMED_PREFIX,                          \
             "the permit holders' deadlines of semaphore"},                    \
        {                                                                      \
            "timeout", NAMED_SUFFIX, "the expirable permits of semaphore"      \
        }                                                                      \
    }

/* The ops a semaphore's count has, whichever way its permits are held. */
#define COUNT_OPS                                                              \
    [LOCK_OP_TRY_SET] = {build_try_set, read_integer},                         \
    [LOCK_OP_ADD] = {build_add, read_added},                                   \
    [LOCK_OP_AVAILABLE] = {build_available, read_integer}

const struct lock_kind lock_kind_semaphore = {
    .name = "semaphore",
    .word = "SEMAPHORE",
    .channel = {"redisson_sc"},
    .keys = SEMAPHORE_KEYS,
    .field_suffix = "",
    .shared = true,
    .holds = HOLDS_PERMITS,
    .on_message = on_permits_message,
    .acquired = &stats.permits_acquired,
    .ops = {[LOCK_OP_ACQUIRE] = {build_acquire, lock_kind_read_acquire},
            [LOCK_OP_RELEASE] = {build_release, lock_kind_read_release},
            [LOCK_OP_RELEASE_OWNER] = {build_release_owner,
                                       lock_kind_read_freed},
            [LOCK_OP_SETTLE] = {build_settle, lock_kind_read_freed},
            [LOCK_OP_IS_HELD] = {build_inspect, lock_kind_read_held},
            [LOCK_OP_HOLD_COUNT] = {build_inspect, lock_kind_read_count},
            COUNT_OPS},
    .renewal = {&renew_script, 1, 2, renew_add_owner, lock_kind_renewed},
    .scripts = semaphore_scripts,
};

const struct lock_kind lock_kind_expirable = {
    .name = "expirable",
    .word = "EXPIRABLE",
    .channel = {"redisson_sc"},
    .keys = SEMAPHORE_KEYS,
    .field_suffix = "",
    .shared = true,
    .holds = HOLDS_PERMIT_IDS,
    .on_message = on_permits_message,
    .acquired = &stats.expirable_permits_acquired,
    .ops = {[LOCK_OP_ACQUIRE] = {build_expirable_acquire,
                                 lock_kind_read_acquire},
            [LOCK_OP_RELEASE] = {build_expirable_release,
                                 read_expirable_release},
            [LOCK_OP_RELEASE_OWNER] = {build_expirable_release_owner,
                                       lock_kind_read_freed},
            [LOCK_OP_SETTLE] = {build_expirable_settle, lock_kind_read_freed},
            COUNT_OPS},
    .renewal = {&expirable_renew_script, 1, 2, renew_add_permit,
                lock_kind_renewed},
    .scripts = expirable_scripts,
};

const struct lock_kind lock_kind_latch = {
    .name = "latch",
    .word = "LATCH",
    .channel = {"redisson_countdownlatch__channel__", NAMED_BRACED},
    .field_suffix = "",
    .shared = true,
    .holds = HOLDS_NOTHING,
    .on_message = on_latch_message,
    .acquired = &stats.latch_waits_ended,
    .ops = {[LOCK_OP_ACQUIRE] = {build_await, lock_kind_read_acquire},
            [LOCK_OP_TRY_SET] = {build_latch_set, read_integer},
            [LOCK_OP_ADD] = {build_count_down, read_integer},
            [LOCK_OP_AVAILABLE] = {build_latch_count, read_integer}},
    .scripts = latch_scripts,
};
