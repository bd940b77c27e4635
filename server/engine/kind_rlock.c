/*
 * kind_rlock.c - the kinds stored in Redisson's RLock hash: RLock itself,
 * the fenced lock and the fair lock, three rows of the lock-kind table.
 *
 * The format (Redisson's redisson/src/main/java/org/redisson/RedissonLock.java,
 * RedissonFairLock.java and RedissonFencedLock.java): a hash at the lock's
 * name, one field "<client-id>:<thread-id>" holding the hold count, PEXPIRE for
 * the lease. RLock and the fenced lock send "0" on
 * redisson_lock__channel:{name} when the lock is freed, which wakes one waiter;
 * the fenced lock also INCRs redisson_lock_token:{name} on every acquire,
 * reentrant ones included, and answers the new value, the fencing token. The
 * fair lock queues its waiters in redisson_lock_queue:{name} (a list) with a
 * deadline each in redisson_lock_timeout:{name} (a zset), and sends "0" only to
 * the queue's head, on redisson_lock__channel:{name}:<its field>.
 *
 * The scripts are written from the reference, so a Java service using
 * Redisson and rlockd exclude and wake each other, with rlockd's changes:
 * the acquire and the release set the count from the one rlockd knows, so
 * that a call sent again after its reply was lost counts once; every
 * script first makes sure its keys are what they should be (SHAPE_GUARD):
 * a write to any other key is refused with WRONGTYPE, a query of one
 * reads as "no lock"; and four scripts are rlockd's own: freeing an owner
 * whatever its count (its session ended), setting an owner's count (after
 * a lost reply, or on a new master), renewing many locks in one call, and
 * every query in one read. The fair lock's differ from Redisson's where
 * Redisson's leave a queue stuck (its users' first complaint, section
 * 12): a head with no deadline is dropped like one whose deadline passed,
 * the deadlines come from Redis's clock (TIME), not each client's, and a
 * waiter that gives up leaves the queue at once (LOCK_OP_LEAVE_QUEUE).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/kind_script.h"

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
#define SHAPE_GUARD KIND_LUA_RLOCK_SHAPE("shape") KIND_LUA_RW_SHAPE("rw_shape")

/* An acquire that finds a read-write lock holding the name. */
#define RW_CLASH KIND_LUA_CLASH("a read-write lock")

/* RLock and the fenced lock tell the lock's channel, KEYS[2]. */
#define RLOCK_NOTIFY                                                           \
    KIND_LUA_PUBLISH "local function notify(message) "                         \
                     "publish(KEYS[2], message); "                             \
                     "end; "

/*
 * The fair lock's queue, KEYS q (list) and z (zset): queue_ok() tells
 * them from other keys; purge() drops heads whose place ran out (or that
 * have none, which only a crash between two commands of another client
 * could leave), as every Redisson script but the one leaving the queue
 * does. now_ms() is Redis's clock: one clock for every rlockd.
 *
 * A place's deadline: Redisson chains them (RedissonFairLock.java's
 * tryLockInnerAsync: a new place's is the last place's plus the
 * waiter's threadWaitTime, and a grant moves every place one
 * threadWaitTime nearer), so each waiter that dies holds up those behind
 * it for one wait. This daemon's waiters' places are not chained:
 * place_deadline() is place_ms (watchdog_timeout_ms) from now, plus one
 * wait for each place ahead that is not this waiter's daemon's and runs
 * out later than place_ms from now (a Java place, which Redisson's
 * chaining puts there; its grant takes one threadWaitTime from every
 * place, which would otherwise put this one in the past); and the
 * watchdog sets it again while the waiter waits (fair_renew_places). So
 * a daemon that dies leaves places that run out within place_ms of its
 * death, or of the grant of the last Java place ahead. Nor do this
 * daemon's grants and leaves move the places behind a wait nearer, as
 * Redisson's do: its places do not count waits for one another, and a
 * Java place chained on one counts only its own wait past it (a wait
 * taken from it would cut it short, as it would take a place's cushion
 * for a Java place ahead that has not been granted yet).
 */
#define FAIR_QUEUE                                                             \
    KIND_LUA_NOW                                                               \
    "local function queue_ok(q, z) "                                           \
    "local tq, tz = redis.call('type', q).ok, redis.call('type', z).ok; "      \
    "return (tq == 'none' or tq == 'list') and (tz == 'none' or tz == "        \
    "'zset'); "                                                                \
    "end; "                                                                    \
    "local function purge(q, z, now) "                                         \
    "while true do "                                                           \
    "local h = redis.call('lindex', q, 0); "                                   \
    "if not h then return; end; "                                              \
    "local t = redis.call('zscore', z, h); "                                   \
    "if t and tonumber(t) > now then return; end; "                            \
    "redis.call('zrem', z, h); "                                               \
    "redis.call('lpop', q); "                                                  \
    "end; "                                                                    \
    "end; "                                                                    \
    "local function place_deadline(now, place, wait, ahead) "                  \
    "return now + place + wait * ahead; "                                      \
    "end; "

/* The fair lock tells only its queue's head (KEYS[3], KEYS[4]), on the
 * channel KEYS[2] followed by ":" and the head's field. */
#define FAIR_NOTIFY                                                            \
    KIND_LUA_PUBLISH FAIR_QUEUE                                                \
        "local function notify(message) "                                      \
        "if not queue_ok(KEYS[3], KEYS[4]) then return; end; "                 \
        "purge(KEYS[3], KEYS[4], now_ms()); "                                  \
        "local head = redis.call('lindex', KEYS[3], 0); "                      \
        "if head then publish(KEYS[2] .. ':' .. head, message); end; "         \
        "end; "

/*
 * The first checks of an acquire, after the guard: s, owner, count and
 * ttl are the lock's; tokens_ok says the kind's other keys are its own.
 * ARGV[2] is the owner's field and ARGV[3] the count this daemon knows it
 * holds (0: a new hold). A reentrant acquire that does not find its
 * owner's field is told the hold is gone (LOCKLOST), instead of taking
 * the lock anew as if nothing had happened; a new hold that finds it
 * (left by an earlier incarnation of the client-id, or by an acquire
 * whose reply was lost) takes it over at count 1, and one LOCK and one
 * UNLOCK always release.
 */
#define ACQUIRE_CHECKS(keys_ok)                                                \
    "local s, owner, _, ttl = shape(KEYS[1]); "                                \
    "if s == 'other' and rw_shape(KEYS[1]) ~= 'other' then "                   \
    "return " RW_CLASH "; end; "                                               \
    "if s == 'other' or not (" keys_ok ") then "                               \
    "return " KIND_LUA_WRONG_TYPE "; end; "                                    \
    "if ARGV[3] ~= '0' and owner ~= ARGV[2] then "                             \
    "return " KIND_LUA_LOCKLOST "; end; "
/* Takes the hold at the count known plus one: a call sent again after its
 * reply was lost counts once (redisson#7367 counts it twice). */
#define ACQUIRE_TAKE                                                           \
    "redis.call('hset', KEYS[1], ARGV[2], tonumber(ARGV[3]) + 1); "            \
    "redis.call('pexpire', KEYS[1], ARGV[1]); "

/* clang-format off */
/* Redisson's tryLockInnerAsync: KEYS name; ARGV lease, field, count. */
static struct backend_script acquire_script = {
    "rlock_acquire",
    SHAPE_GUARD
    ACQUIRE_CHECKS("true")
    "if s == 'none' or owner == ARGV[2] then "
        ACQUIRE_TAKE
        "return nil; "
    "end; "
    "return ttl;",
    ""};

/*
 * RedissonFencedLock's acquire: KEYS name, token; ARGV as RLock's, and
 * floor, the highest token this daemon handed out for the name. Every
 * grant INCRs the token, which is the reply: {1, token, was}, or {0,
 * pttl}. A counter behind the floor (Redis lost it) is first set to the
 * floor, and was is what it held (0: none); else was is -1. So the token
 * is always above every one this daemon handed out.
 */
static struct backend_script fenced_acquire_script = {
    "fenced_acquire",
    SHAPE_GUARD
    "local tok = redis.pcall('get', KEYS[2]); "
    ACQUIRE_CHECKS("tok == false or (type(tok) == 'string' and "
                   "string.find(tok, '^%d+$'))")
    "if s == 'none' or owner == ARGV[2] then "
        ACQUIRE_TAKE
        "local was = -1; "
        "if tonumber(tok or '0') < tonumber(ARGV[4]) then "
            "was = tonumber(tok or '0'); "
            "redis.call('set', KEYS[2], ARGV[4]); "
        "end; "
        "return {1, redis.call('incr', KEYS[2]), was}; "
    "end; "
    "return {0, ttl};",
    ""};
/* clang-format on */

/*
 * RedissonFairLock's acquire with queueing, KEYS name, queue, timeout;
 * ARGV lease, field, count, wait (a new place's, for each Java place
 * ahead), enqueue (1: a refused owner takes its place at the tail, as
 * Redisson's lock() and tryLock(wait); 0: it does not, as tryLock()),
 * place (a new place is kept this long unless renewed). The lock is
 * taken when it is free and the queue is empty or its head is the owner,
 * who then leaves the queue (the places behind stay: see FAIR_QUEUE).
 * Refused: the lock's PTTL, or, when the lock
 * is free and it is another's turn, how long until that head's place runs
 * out (its owner is expected first; a message comes if it takes the lock).
 */
/* clang-format off */
static struct backend_script fair_acquire_script = {
    "fair_acquire",
    SHAPE_GUARD FAIR_QUEUE
    ACQUIRE_CHECKS("queue_ok(KEYS[2], KEYS[3])")
    "if owner == ARGV[2] then "
        ACQUIRE_TAKE
        "return nil; "
    "end; "
    "local now = now_ms(); "
    "purge(KEYS[2], KEYS[3], now); "
    "local head = redis.call('lindex', KEYS[2], 0); "
    "if s == 'none' and (not head or head == ARGV[2]) then "
        "if head then redis.call('lpop', KEYS[2]); end; "
        "redis.call('zrem', KEYS[3], ARGV[2]); "
        ACQUIRE_TAKE
        "return nil; "
    "end; "
    "if ARGV[5] == '1' and not redis.call('zscore', KEYS[3], ARGV[2]) then "
        "redis.call('lrem', KEYS[2], 0, ARGV[2]); "
        "local others = 0; "
        "for _, w in ipairs(redis.call('lrange', KEYS[2], 0, -1)) do "
            "local t = redis.call('zscore', KEYS[3], w); "
            "if t and tonumber(t) > now + tonumber(ARGV[6]) then "
                "others = others + 1; "
            "end; "
        "end; "
        "redis.call('zadd', KEYS[3], place_deadline(now, tonumber(ARGV[6]), "
            "tonumber(ARGV[4]), others), ARGV[2]); "
        "redis.call('rpush', KEYS[2], ARGV[2]); "
    "end; "
    "if s == 'lock' then return ttl; end; "
    "head = redis.call('lindex', KEYS[2], 0); "
    "local t = redis.call('zscore', KEYS[3], head); "
    "return math.max(1, tonumber(t) - now);",
    ""};
/* clang-format on */

/* RedissonFairLock's acquireFailed: KEYS name, queue, timeout; ARGV
 * field. The owner leaves the queue (the places behind stay: see
 * FAIR_QUEUE). */
static struct backend_script fair_leave_script = {
    "fair_leave",
    FAIR_QUEUE "if not queue_ok(KEYS[2], KEYS[3]) then return 0; end; "
               "redis.call('zrem', KEYS[3], ARGV[1]); "
               "return redis.call('lrem', KEYS[2], 0, ARGV[1]);",
    ""};

/*
 * The scripts that free a lock, the same for RLock's channel and the fair
 * lock's head (the NOTIFY before them says which); KEYS name, channel and
 * (fair) queue, timeout.
 *
 * Release, Redisson's unlockInnerAsync (3.x, without the latch): ARGV
 * message, lease, field, count, publish; the count left is the count
 * this daemon knows less one (0: none known, the field's count is
 * decremented), so that a release sent again after its reply was lost
 * releases once: if the first one ran, the second sets the same count, or
 * finds the lock gone (which the engine reads as released).
 */
#define RELEASE_BODY                                                           \
    "local s, owner, count = shape(KEYS[1]); "                                 \
    "if s == 'other' then return " KIND_LUA_WRONG_TYPE "; end; "               \
    "if (s == 'none' or owner ~= ARGV[3]) then "                               \
    "return nil; "                                                             \
    "end; "                                                                    \
    "local counter = count - 1; "                                              \
    "if ARGV[4] ~= '0' then counter = tonumber(ARGV[4]) - 1; end; "            \
    "if (counter > 0) then "                                                   \
    "redis.call('hset', KEYS[1], ARGV[3], counter); "                          \
    "redis.call('pexpire', KEYS[1], ARGV[2]); "                                \
    "return 0; "                                                               \
    "end; "                                                                    \
    "redis.call('del', KEYS[1]); "                                             \
    "notify(ARGV[1]); "                                                        \
    "return 1;"
/* Redisson's forceUnlockAsync: ARGV message, publish. */
#define FORCE_RELEASE_BODY                                                     \
    "local s = shape(KEYS[1]); "                                               \
    "if s == 'other' then return " KIND_LUA_WRONG_TYPE "; end; "               \
    "if (s == 'lock') then "                                                   \
    "redis.call('del', KEYS[1]); "                                             \
    "notify(ARGV[1]); "                                                        \
    "return 1 "                                                                \
    "end; "                                                                    \
    "return 0"
/* rlockd's: frees an owner's lock whatever its count (its session ended);
 * a key that is no longer a lock is left alone. ARGV message, field,
 * publish. */
#define RELEASE_OWNER_BODY                                                     \
    "local s, owner = shape(KEYS[1]); "                                        \
    "if (s ~= 'lock' or owner ~= ARGV[2]) then "                               \
    "return 0; "                                                               \
    "end; "                                                                    \
    "redis.call('del', KEYS[1]); "                                             \
    "notify(ARGV[1]); "                                                        \
    "return 1;"
/*
 * rlockd's: sets an owner's count to what this daemon knows (ARGV[3]),
 * after an acquire whose reply was lost may have run in Redis, or on a
 * new master after a failover: 0 frees the lock (and tells the waiters)
 * and returns 1, anything else keeps it with that count and its TTL and
 * returns 2. A lock of another owner, or no lock, is left alone: 0. ARGV
 * message, field, count, publish.
 */
#define SETTLE_BODY                                                            \
    "local s, owner = shape(KEYS[1]); "                                        \
    "if (s ~= 'lock' or owner ~= ARGV[2]) then "                               \
    "return 0; "                                                               \
    "end; "                                                                    \
    "if ARGV[3] == '0' then "                                                  \
    "redis.call('del', KEYS[1]); "                                             \
    "notify(ARGV[1]); "                                                        \
    "return 1; "                                                               \
    "end; "                                                                    \
    "redis.call('hset', KEYS[1], ARGV[2], ARGV[3]); "                          \
    "return 2;"

/* The freeing scripts of one family, and how many of the kind's own keys
 * follow the channel in their KEYS. */
struct freeing {
    struct backend_script release, force_release, release_owner, settle;
    int queue_keys;
};

static struct freeing rlock_freeing = {
    {"rlock_release", SHAPE_GUARD RLOCK_NOTIFY RELEASE_BODY, ""},
    {"rlock_force_release", SHAPE_GUARD RLOCK_NOTIFY FORCE_RELEASE_BODY, ""},
    {"rlock_release_owner", SHAPE_GUARD RLOCK_NOTIFY RELEASE_OWNER_BODY, ""},
    {"rlock_settle", SHAPE_GUARD RLOCK_NOTIFY SETTLE_BODY, ""},
    0,
};

static struct freeing fair_freeing = {
    {"fair_release", SHAPE_GUARD FAIR_NOTIFY RELEASE_BODY, ""},
    {"fair_force_release", SHAPE_GUARD FAIR_NOTIFY FORCE_RELEASE_BODY, ""},
    {"fair_release_owner", SHAPE_GUARD FAIR_NOTIFY RELEASE_OWNER_BODY, ""},
    {"fair_settle", SHAPE_GUARD FAIR_NOTIFY SETTLE_BODY, ""},
    2,
};

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
 * rlockd's: renews its waiters' places, many in one call. KEYS queue1,
 * timeout1, ..., queueN, timeoutN; ARGV field1, ms1, wait1, ...: N
 * results, 1 (renewed) or 0 (the place is gone: it ran out, or was never
 * taken). Each queue is walked once from its head; a place of this call
 * is set to place_deadline() (FAIR_QUEUE), counting the places ahead
 * that are not its and run out after ms, and every place behind it that
 * is not this call's moves as far, so that a Java place chained on it keeps its
 * threadWaitTime behind it.
 */
static struct backend_script renew_places_script = {
    "fair_renew_places",
    FAIR_QUEUE "local now, queues, result = now_ms(), {}, {}; "
               "for i = 1, #KEYS, 2 do "
               "local a = 3 * (i + 1) / 2 - 2; "
               "local m = queues[KEYS[i]] or "
               "{z = KEYS[i + 1], mine = {}, found = {}}; "
               "m.mine[ARGV[a]] = {tonumber(ARGV[a + 1]), "
               "tonumber(ARGV[a + 2])}; "
               "m.ms = tonumber(ARGV[a + 1]); "
               "queues[KEYS[i]] = m; "
               "end; "
               "for q, m in pairs(queues) do "
               "if queue_ok(q, m.z) then "
               "local shift, others = 0, 0; "
               "for _, w in ipairs(redis.call('lrange', q, 0, -1)) do "
               "local s = tonumber(redis.call('zscore', m.z, w)); "
               "local p = m.mine[w]; "
               "local t = s; "
               "if s and p then "
               "m.found[w] = true; "
               "t = place_deadline(now, p[1], p[2], others); "
               "shift = t - s; "
               "elseif s then "
               "t = s + shift; "
               "if t > now + m.ms then others = others + 1; end; "
               "end; "
               "if t ~= s then redis.call('zadd', m.z, t, w); end; "
               "end; "
               "end; "
               "end; "
               "for i = 1, #KEYS, 2 do "
               "result[#result + 1] = "
               "queues[KEYS[i]].found[ARGV[3 * (i + 1) / 2 - 2]] and 1 or 0; "
               "end; "
               "return result;",
    ""};

/*
 * Every query in one read-only script: {locked 1/0, the owner's count,
 * PTTL}. A query without a kind word reports the lock whatever its
 * format: a read-write lock is locked, with the owner's count of either
 * mode. Anything that is not a lock reads as no lock at all, {0, 0, -2},
 * so that the queries reveal nothing about other keys.
 */
static struct backend_script inspect_script = {
    "rlock_inspect",
    SHAPE_GUARD "local s, owner, count, ttl = shape(KEYS[1]); "
                "local mode, rw_ttl = 'other'; "
                "if s == 'other' then mode, rw_ttl = rw_shape(KEYS[1]); end; "
                "if mode ~= 'other' then "
                "local c = redis.call('hget', KEYS[1], ARGV[1]) or "
                "redis.call('hget', KEYS[1], ARGV[1] .. ':write'); "
                "return {1, c and tonumber(c) or 0, rw_ttl}; "
                "end; "
                "if (s ~= 'lock') then "
                "return {0, 0, -2}; "
                "end; "
                "return {1, owner == ARGV[1] and count or 0, ttl};",
    ""};

/* Every owner, in the shape every kind's OWNERS answers: {pttl, kind,
 * field, count...}, the kind "lock" (RLock's format: a plain, fair or
 * fenced lock), or a read-write lock's mode; {-2, "none"} when there is
 * no lock (or the key is not one). */
static struct backend_script owners_script = {
    "rlock_owners",
    SHAPE_GUARD KIND_LUA_RW_OWNERS
    "local s, owner, count, ttl = shape(KEYS[1]); "
    "local mode, rw_ttl = 'other'; "
    "if s == 'other' then mode, rw_ttl = rw_shape(KEYS[1]); end; "
    "if mode ~= 'other' then "
    "return rw_owners(KEYS[1], mode, rw_ttl); "
    "end; "
    "if (s ~= 'lock') then "
    "return {-2, 'none'}; "
    "end; "
    "return {ttl, 'lock', owner, count};",
    ""};

/* The latest fencing token, KEYS name, token: 0 when there is none (or
 * the key holds anything but a token). */
static struct backend_script token_script = {
    "fenced_token",
    "local t = redis.pcall('get', KEYS[2]); "
    "if type(t) == 'string' and string.find(t, '^%d+$') then "
    "return tonumber(t); end; "
    "return 0;",
    ""};

#define FREEING_SCRIPTS(f)                                                     \
    &(f).release, &(f).force_release, &(f).release_owner, &(f).settle
#define QUERY_SCRIPTS &renew_script, &inspect_script, &owners_script

static struct backend_script *const rlock_scripts[] = {
    &acquire_script, FREEING_SCRIPTS(rlock_freeing), QUERY_SCRIPTS, NULL};
static struct backend_script *const fenced_scripts[] = {&fenced_acquire_script,
                                                        &token_script, NULL};
static struct backend_script *const fair_scripts[] = {
    &fair_acquire_script, &fair_leave_script, &renew_places_script,
    FREEING_SCRIPTS(fair_freeing), NULL};

/* The message Redisson's LockPubSub reads as "one waiter may go". */
#define UNLOCK_MESSAGE "0"

/* ---- building calls --------------------------------------------------- */

static void build_acquire(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    kind_script(call, &acquire_script, 1, a);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, a->count);
}

static void build_fenced_acquire(const struct lock_call_args *a,
                                 struct lock_kind_call *call)
{
    kind_script(call, &fenced_acquire_script, 2, a);
    kind_arg_key(call, a, 0);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, a->count);
    kind_arg_number(call, 2, a->token_floor);
}

static void build_fair_acquire(const struct lock_call_args *a,
                               struct lock_kind_call *call)
{
    kind_script(call, &fair_acquire_script, 3, a);
    kind_arg_key(call, a, 0);
    kind_arg_key(call, a, 1);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, a->count);
    kind_arg_number(call, 2, a->queue_wait_ms);
    kind_arg(call, a->enqueue ? "1" : "0", 1);
    kind_arg_number(call, 3, a->place_ms);
}

static void build_fair_leave(const struct lock_call_args *a,
                             struct lock_kind_call *call)
{
    kind_script(call, &fair_leave_script, 3, a);
    kind_arg_key(call, a, 0);
    kind_arg_key(call, a, 1);
    kind_arg(call, a->field, a->field_len);
}

static void build_token(const struct lock_call_args *a,
                        struct lock_kind_call *call)
{
    kind_script(call, &token_script, 2, a);
    kind_arg_key(call, a, 0);
}

/* A freeing script of family f: its keys, then the message. */
static void freeing_call(const struct freeing *f, struct backend_script *s,
                         const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    kind_script(call, s, 2 + f->queue_keys, a);
    kind_arg(call, a->channel, a->channel_len);
    for (int i = 0; i < f->queue_keys; i++)
        kind_arg_key(call, a, i);
    kind_arg(call, UNLOCK_MESSAGE, 1);
}

static void build_release_of(struct freeing *f, const struct lock_call_args *a,
                             struct lock_kind_call *call)
{
    freeing_call(f, &f->release, a, call);
    kind_arg_number(call, 0, a->lease_ms);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 1, a->count);
    kind_arg_publish(call, a);
}

static void build_force_release_of(struct freeing *f,
                                   const struct lock_call_args *a,
                                   struct lock_kind_call *call)
{
    freeing_call(f, &f->force_release, a, call);
    kind_arg_publish(call, a);
}

static void build_release_owner_of(struct freeing *f,
                                   const struct lock_call_args *a,
                                   struct lock_kind_call *call)
{
    freeing_call(f, &f->release_owner, a, call);
    kind_arg(call, a->field, a->field_len);
    kind_arg_publish(call, a);
}

static void build_settle_of(struct freeing *f, const struct lock_call_args *a,
                            struct lock_kind_call *call)
{
    freeing_call(f, &f->settle, a, call);
    kind_arg(call, a->field, a->field_len);
    kind_arg_number(call, 0, a->count);
    kind_arg_publish(call, a);
}

/* The builders of each family's freeing calls, as a row wants them. */
#define FREEING_BUILDERS(prefix, f)                                            \
    static void prefix##_release(const struct lock_call_args *a,               \
                                 struct lock_kind_call *call)                  \
    {                                                                          \
        build_release_of(&(f), a, call);                                       \
    }                                                                          \
    static void prefix##_force_release(const struct lock_call_args *a,         \
                                       struct lock_kind_call *call)            \
    {                                                                          \
        build_force_release_of(&(f), a, call);                                 \
    }                                                                          \
    static void prefix##_release_owner(const struct lock_call_args *a,         \
                                       struct lock_kind_call *call)            \
    {                                                                          \
        build_release_owner_of(&(f), a, call);                                 \
    }                                                                          \
    static void prefix##_settle(const struct lock_call_args *a,                \
                                struct lock_kind_call *call)                   \
    {                                                                          \
        build_settle_of(&(f), a, call);                                        \
    }
FREEING_BUILDERS(rlock, rlock_freeing)
FREEING_BUILDERS(fair, fair_freeing)

/* Every query: the lock's name and the caller's owner field. */
static void build_inspect(const struct lock_call_args *a,
                          struct lock_kind_call *call)
{
    kind_script(call, &inspect_script, 1, a);
    kind_arg(call, a->field, a->field_len);
}

static void build_owners(const struct lock_call_args *a,
                         struct lock_kind_call *call)
{
    kind_script(call, &owners_script, 1, a);
}

/* A waiter's place in a renewal of places: KEYS queue, timeout; ARGV
 * field, place_ms, wait. */
static void place_renew_add(const struct lock_call_args *a, const char **keys,
                            size_t *key_len, const char **args, size_t *arg_len,
                            char *number)
{
    size_t place_len = format_int64(number, a->place_ms);

    for (int i = 0; i < 2; i++) {
        keys[i] = a->keys[i];
        key_len[i] = a->key_len[i];
    }
    args[0] = a->field;
    arg_len[0] = a->field_len;
    args[1] = number;
    arg_len[1] = place_len;
    args[2] = number + FORMAT_INT_MAX;
    arg_len[2] = format_int64(number + FORMAT_INT_MAX, a->queue_wait_ms);
}

/* ---- reading replies -------------------------------------------------- */

/* ---- channel, messages, renewal -------------------------------------- */

static size_t on_message(const char *payload, size_t len)
{
    (void)payload;
    (void)len;
    return 1;
}

/* {1, token, was} granted, {0, pttl} refused. */
static enum lock_outcome read_fenced_acquire(const struct backend_value *r,
                                             int64_t *value)
{
    bool granted;

    if (r->type != VALUE_ARRAY || r->elements < 2 ||
        r->element[0].type != VALUE_INTEGER ||
        r->element[1].type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    granted = r->element[0].integer == 1;
    if (r->elements != (granted ? 3u : 2u) ||
        (granted && r->element[2].type != VALUE_INTEGER))
        return OUTCOME_BAD_REPLY;
    *value = r->element[1].integer;
    return granted ? OUTCOME_GRANTED : OUTCOME_REFUSED;
}

int64_t lock_kind_token_was(const struct backend_value *reply)
{
    return reply->element[2].integer;
}

/* The token, or how many places left the queue: an integer. */
static enum lock_outcome read_integer(const struct backend_value *r,
                                      int64_t *value)
{
    if (r->type != VALUE_INTEGER)
        return OUTCOME_BAD_REPLY;
    *value = r->integer;
    return OUTCOME_VALUE;
}

/* The ops every kind on RLock's hash has alike: the queries. */
#define QUERY_OPS                                                              \
    [LOCK_OP_IS_LOCKED] = {build_inspect, lock_kind_read_locked},              \
    [LOCK_OP_IS_HELD] = {build_inspect, lock_kind_read_held},                  \
    [LOCK_OP_HOLD_COUNT] = {build_inspect, lock_kind_read_count},              \
    [LOCK_OP_PTTL] = {build_inspect, lock_kind_read_pttl},                     \
    [LOCK_OP_OWNERS] = {build_owners, lock_kind_read_owners}
#define FREEING_OPS(prefix)                                                    \
    [LOCK_OP_RELEASE] = {prefix##_release, lock_kind_read_release},            \
    [LOCK_OP_FORCE_RELEASE] = {prefix##_force_release, lock_kind_read_freed},  \
    [LOCK_OP_RELEASE_OWNER] = {prefix##_release_owner, lock_kind_read_freed},  \
    [LOCK_OP_SETTLE] = {prefix##_settle, lock_kind_read_freed}

const struct lock_kind lock_kind_rlock = {
    .name = "rlock",
    .word = "",
    .rlock_hash = true,
    .channel = {"redisson_lock__channel"},
    .field_suffix = "",
    .on_message = on_message,
    .ops = {[LOCK_OP_ACQUIRE] = {build_acquire, lock_kind_read_acquire},
            FREEING_OPS(rlock),
            QUERY_OPS},
    .renewal = {&renew_script, 1, 2, lock_kind_renew_add, lock_kind_renewed},
    .scripts = rlock_scripts,
};

/* RLock's row, but for the acquire (which INCRs the token) and TOKEN. */
const struct lock_kind lock_kind_fenced = {
    .name = "fenced",
    .word = "FENCED",
    .rlock_hash = true,
    .acquired = &stats.fenced_locks_acquired,
    .channel = {"redisson_lock__channel"},
    .keys = {{"redisson_lock_token"}},
    .field_suffix = "",
    .on_message = on_message,
    .ops = {[LOCK_OP_ACQUIRE] = {build_fenced_acquire, read_fenced_acquire},
            FREEING_OPS(rlock),
            QUERY_OPS,
            [LOCK_OP_TOKEN] = {build_token, read_integer}},
    .renewal = {&renew_script, 1, 2, lock_kind_renew_add, lock_kind_renewed},
    .scripts = fenced_scripts,
};

/* RLock's hash and queries; its own queue, acquire and freeing scripts. */
const struct lock_kind lock_kind_fair = {
    .name = "fair",
    .word = "FAIR",
    .rlock_hash = true,
    .acquired = &stats.fair_locks_acquired,
    .channel = {"redisson_lock__channel"},
    .keys = {{"redisson_lock_queue"}, {"redisson_lock_timeout"}},
    .channel_per_waiter = true,
    .field_suffix = "",
    .on_message = on_message,
    .ops = {[LOCK_OP_ACQUIRE] = {build_fair_acquire, lock_kind_read_acquire},
            FREEING_OPS(fair),
            QUERY_OPS,
            [LOCK_OP_LEAVE_QUEUE] = {build_fair_leave, read_integer}},
    .renewal = {&renew_script, 1, 2, lock_kind_renew_add, lock_kind_renewed},
    .place_renewal = {&renew_places_script, 2, 3, place_renew_add,
                      lock_kind_renewed},
    .scripts = fair_scripts,
};
