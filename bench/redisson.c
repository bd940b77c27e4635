/*
 * redisson.c - the direct side: locks taken straight on Redis with
 * Redisson's own scripts.
 *
 * Owns: the scripts, the calls made of them (which KEYS and ARGV), each
 * argument's value for one client, and what a script answers when it
 * did what was asked. It never borrows rlockd's scripts: the direct side
 * must be what a Redisson client does.
 */
#include <stdio.h>
#include <time.h>

#include "bench.h"

/* The TTL both sides write: rlockd's watchdog_timeout_ms default, and the
 * lease Redisson passes in watchdog mode. */
#define LEASE_MS "30000"
/* Redisson's fairLockWaitTimeout, the `wait` lock() passes the fair
 * acquire: how long past its turn a queued waiter keeps its place. */
#define FAIR_WAIT_MS "300000"

char owner_uuid[40]; /* the direct clients' Redisson-style UUID */

/*
 * The direct side's scripts: Redisson's own, written from Redisson's
 * redisson/src/main/java/org/redisson/RedissonLock.java, RedissonFairLock.java,
 * RedissonReadLock.java, RedissonWriteLock.java, RedissonSemaphore.java and
 * RedissonFencedLock.java, never from rlockd's. Every release is the form
 * without the unlock latch (Redisson 3.24.1 added a GET and a SET of a per-call
 * key to each, and a DEL after it, so that a retried unlock answers what the
 * first one did): rlockd has no latch either, and the figures should compare
 * the lock's own work. The acquires are Redisson's byte for byte (their SHA1s
 * are the reference's); the releases are, but for the latch lines.
 */

/* RLock (RedissonLock.tryLockInnerAsync and unlockInnerAsync). */
static const char ACQUIRE_SCRIPT[] =
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);";

static const char RELEASE_SCRIPT[] =
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
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
    "return nil;";

/* RFairLock. Every fair script first drops queue heads whose deadline,
 * on the client's clock (ARGV[4] in both scripts below), has passed. */
#define FAIR_DROP_STALE_HEADS                                                  \
    "while true do "                                                           \
    "local firstThreadId2 = redis.call('lindex', KEYS[2], 0);"                 \
    "if firstThreadId2 == false then "                                         \
    "break;"                                                                   \
    "end;"                                                                     \
    "local timeout = redis.call('zscore', KEYS[3], firstThreadId2);"           \
    "if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then "     \
    "redis.call('zrem', KEYS[3], firstThreadId2);"                             \
    "redis.call('lpop', KEYS[2]);"                                             \
    "else "                                                                    \
    "break;"                                                                   \
    "end;"                                                                     \
    "end;"

/* Acquire with queueing (lock()): KEYS name, queue, timeout; ARGV lease,
 * field, wait, now. */
static const char FAIR_ACQUIRE_SCRIPT[] = FAIR_DROP_STALE_HEADS
    "if (redis.call('exists', KEYS[1]) == 0) "
    "and ((redis.call('exists', KEYS[2]) == 0) "
    "or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then "
    "redis.call('lpop', KEYS[2]);"
    "redis.call('zrem', KEYS[3], ARGV[2]);"
    "local keys = redis.call('zrange', KEYS[3], 0, -1);"
    "for i = 1, #keys, 1 do "
    "redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);"
    "end;"
    "redis.call('hset', KEYS[1], ARGV[2], 1);"
    "redis.call('pexpire', KEYS[1], ARGV[1]);"
    "return nil;"
    "end;"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
    "redis.call('hincrby', KEYS[1], ARGV[2],1);"
    "redis.call('pexpire', KEYS[1], ARGV[1]);"
    "return nil;"
    "end;"
    "local timeout = redis.call('zscore', KEYS[3], ARGV[2]);"
    "if timeout ~= false then "
    "local ttl = redis.call('pttl', KEYS[1]);"
    "return math.max(0, ttl); "
    "end;"
    "local lastThreadId = redis.call('lindex', KEYS[2], -1);"
    "local ttl;"
    "if lastThreadId ~= false and lastThreadId ~= ARGV[2] and "
    "redis.call('zscore', KEYS[3], lastThreadId) ~= false then "
    "ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - "
    "tonumber(ARGV[4]);"
    "else "
    "ttl = redis.call('pttl', KEYS[1]);"
    "end;"
    "local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);"
    "if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then "
    "redis.call('rpush', KEYS[2], ARGV[2]);"
    "end;"
    "return ttl;";

/* Unlock: KEYS name, queue, timeout, channel prefix; ARGV "0", lease,
 * field, now, PUBLISH. Only the queue's head is told, on its own
 * channel. */
static const char FAIR_RELEASE_SCRIPT[] = FAIR_DROP_STALE_HEADS
    "if (redis.call('exists', KEYS[1]) == 0) then "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
    "redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "return 1; "
    "end;"
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "local nextThreadId = redis.call('lindex', KEYS[2], 0); "
    "if nextThreadId ~= false then "
    "redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); "
    "end; "
    "return 1; ";

/* RReadWriteLock's read lock: KEYS name, the hold's timeout-key prefix;
 * ARGV lease, field, the field's write form. */
static const char READ_ACQUIRE_SCRIPT[] =
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call('hset', KEYS[1], 'mode', 'read'); "
    "redis.call('hset', KEYS[1], ARGV[2], 1); "
    "redis.call('set', KEYS[2] .. ':1', 1); "
    "redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "if (mode == 'read') or (mode == 'write' and "
    "redis.call('hexists', KEYS[1], ARGV[3]) == 1) then "
    "local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "local key = KEYS[2] .. ':' .. ind;"
    "redis.call('set', key, 1); "
    "redis.call('pexpire', key, ARGV[1]); "
    "local remainTime = redis.call('pttl', KEYS[1]); "
    "redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); "
    "return nil; "
    "end;"
    "return redis.call('pttl', KEYS[1]);";

/* Unlock: KEYS name, channel, the hold's timeout-key prefix, {name};
 * ARGV "0", field, PUBLISH. The hash then lives as long as the longest
 * remaining read hold. */
static const char READ_RELEASE_SCRIPT[] =
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call(ARGV[3], KEYS[2], ARGV[1]); "
    "return nil; "
    "end; "
    "local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); "
    "if (lockExists == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); "
    "if (counter == 0) then "
    "redis.call('hdel', KEYS[1], ARGV[2]); "
    "end;"
    "redis.call('del', KEYS[3] .. ':' .. (counter+1)); "
    "if (redis.call('hlen', KEYS[1]) > 1) then "
    "local maxRemainTime = -3; "
    "local keys = redis.call('hkeys', KEYS[1]); "
    "for n, key in ipairs(keys) do "
    "counter = tonumber(redis.call('hget', KEYS[1], key)); "
    "if type(counter) == 'number' then "
    "for i=counter, 1, -1 do "
    "local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. "
    "':rwlock_timeout:' .. i); "
    "maxRemainTime = math.max(remainTime, maxRemainTime);"
    "end; "
    "end; "
    "end; "
    "if maxRemainTime > 0 then "
    "redis.call('pexpire', KEYS[1], maxRemainTime); "
    "return 0; "
    "end;"
    "if mode == 'write' then "
    "return 0;"
    "end; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[3], KEYS[2], ARGV[1]); "
    "return 1; ";

/* The write lock: KEYS name; ARGV lease, the field's write form. */
static const char WRITE_ACQUIRE_SCRIPT[] =
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call('hset', KEYS[1], 'mode', 'write'); "
    "redis.call('hset', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "if (mode == 'write') then "
    "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "local currentExpire = redis.call('pttl', KEYS[1]); "
    "redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); "
    "return nil; "
    "end; "
    "end;"
    "return redis.call('pttl', KEYS[1]);";

/* Unlock: KEYS name, channel; ARGV "1" (wakes every waiter), lease, the
 * field's write form, PUBLISH. */
static const char WRITE_RELEASE_SCRIPT[] =
    "local mode = redis.call('hget', KEYS[1], 'mode'); "
    "if (mode == false) then "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "return nil; "
    "end;"
    "if (mode == 'write') then "
    "local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); "
    "if (lockExists == 0) then "
    "return nil;"
    "else "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('hdel', KEYS[1], ARGV[3]); "
    "if (redis.call('hlen', KEYS[1]) == 1) then "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "else "
    "redis.call('hset', KEYS[1], 'mode', 'read'); "
    "end; "
    "return 1; "
    "end; "
    "end; "
    "end; "
    "return nil;";

/* RFencedLock's token-returning acquire (lockAndGetToken), as rlockd's
 * LOCK ... FENCED answers the token: KEYS name, token counter; ARGV lease,
 * field; {-1, token} when acquired. Its unlock is RLock's. */
static const char FENCED_ACQUIRE_SCRIPT[] =
    "if (redis.call('exists', KEYS[1]) == 0 "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "local token = redis.call('incr', KEYS[2]);"
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return {-1, token}; "
    "end; "
    "return {redis.call('pttl', KEYS[1]), -1};";

/* RSemaphore (section 4.2): tryAcquire(permits), KEYS name, ARGV
 * permits, answering 1 or 0; release(permits), KEYS name, channel, ARGV
 * permits, PUBLISH, which answers nothing (nil) and publishes the new
 * count; trySetPermits(permits), same KEYS and ARGV, 1 when it set the
 * count. The counter has no owners, so a release never checks one. */
static const char SEMAPHORE_ACQUIRE_SCRIPT[] =
    "local value = redis.call('get', KEYS[1]); "
    "if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then "
    "local val = redis.call('decrby', KEYS[1], ARGV[1]); "
    "return 1; "
    "end; "
    "return 0;";

static const char SEMAPHORE_RELEASE_SCRIPT[] =
    "local value = redis.call('incrby', KEYS[1], ARGV[1]); "
    "redis.call(ARGV[2], KEYS[2], value); ";

static const char SEMAPHORE_SET_SCRIPT[] =
    "local value = redis.call('get', KEYS[1]); "
    "if (value == false) then "
    "redis.call('set', KEYS[1], ARGV[1]); "
    "redis.call(ARGV[2], KEYS[2], ARGV[1]); "
    "return 1;"
    "end;"
    "return 0;";

/* The calls, as the kind table (kinds.c) names them. */
struct script_call redisson_rlock_acquire = {.script = ACQUIRE_SCRIPT,
                                             .keys = {ARG_NAME},
                                             .argv = {ARG_LEASE, ARG_FIELD}};
struct script_call redisson_rlock_release = {
    .script = RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_LOCK_CHANNEL},
    .argv = {ARG_ZERO, ARG_LEASE, ARG_FIELD}};
struct script_call redisson_fair_acquire = {
    .script = FAIR_ACQUIRE_SCRIPT,
    .keys = {ARG_NAME, ARG_QUEUE, ARG_TIMEOUT},
    .argv = {ARG_LEASE, ARG_FIELD, ARG_FAIR_WAIT, ARG_NOW}};
struct script_call redisson_fair_release = {
    .script = FAIR_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_QUEUE, ARG_TIMEOUT, ARG_LOCK_CHANNEL},
    .argv = {ARG_ZERO, ARG_LEASE, ARG_FIELD, ARG_NOW, ARG_PUBLISH}};
struct script_call redisson_read_acquire = {
    .script = READ_ACQUIRE_SCRIPT,
    .keys = {ARG_NAME, ARG_READ_PREFIX},
    .argv = {ARG_LEASE, ARG_FIELD, ARG_WRITE_FIELD}};
struct script_call redisson_read_release = {
    .script = READ_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_RW_CHANNEL, ARG_READ_PREFIX, ARG_TAG},
    .argv = {ARG_ZERO, ARG_FIELD, ARG_PUBLISH}};
struct script_call redisson_write_acquire = {
    .script = WRITE_ACQUIRE_SCRIPT,
    .keys = {ARG_NAME},
    .argv = {ARG_LEASE, ARG_WRITE_FIELD}};
struct script_call redisson_write_release = {
    .script = WRITE_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_RW_CHANNEL},
    .argv = {ARG_ONE, ARG_LEASE, ARG_WRITE_FIELD, ARG_PUBLISH}};
struct script_call redisson_fenced_acquire = {.script = FENCED_ACQUIRE_SCRIPT,
                                              .keys = {ARG_NAME, ARG_TOKEN},
                                              .argv = {ARG_LEASE, ARG_FIELD}};
struct script_call redisson_semaphore_acquire = {.script =
                                                     SEMAPHORE_ACQUIRE_SCRIPT,
                                                 .keys = {ARG_NAME},
                                                 .argv = {ARG_PERMITS}};
struct script_call redisson_semaphore_release = {
    .script = SEMAPHORE_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_SC_CHANNEL},
    .argv = {ARG_PERMITS, ARG_PUBLISH}};
struct script_call redisson_semaphore_set = {.script = SEMAPHORE_SET_SCRIPT,
                                             .keys = {ARG_NAME, ARG_SC_CHANNEL},
                                             .argv = {ARG_SIZE, ARG_PUBLISH}};

/* A direct script's reply of the form `form`. */
void expect_direct(const struct bench_client *cl, const char *what,
                   enum direct_reply form, const redisReply *r)
{
    switch (form) {
    case REPLY_NIL:
        expect_nil(cl, what, r);
        return;
    case REPLY_ONE:
        expect_integer(cl, what, r, 1);
        return;
    case REPLY_TOKEN_PAIR:
        if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_INTEGER ||
            r->element[0]->integer != -1 || !is_token(r->element[1]))
            unexpected_reply(cl, what, r, "{-1, token} (acquired)");
        return;
    }
}

/* The arguments that are a key or channel named "<prefix>{name}": their
 * prefix. */
static const char *const braced_name_prefix[] = {
    [ARG_LOCK_CHANNEL] = "redisson_lock__channel:",
    [ARG_RW_CHANNEL] = "redisson_rwlock:",
    [ARG_QUEUE] = "redisson_lock_queue:",
    [ARG_TIMEOUT] = "redisson_lock_timeout:",
    [ARG_TOKEN] = "redisson_lock_token:",
    [ARG_TAG] = "",
    [ARG_SC_CHANNEL] = "redisson_sc:",
    [ARG_OWNERS] = "rlockd_permits:",
    [ARG_DEADLINES] = "rlockd_permits_deadline:",
};

/* One client's value of a script argument, in buf unless constant. The
 * bench's names never contain '{', so "{name}" is always the hash tag. */
const char *call_arg_value(const struct bench_client *cl, enum call_arg arg,
                           char *buf, size_t size)
{
    struct timespec ts;

    switch (arg) {
    case ARG_NAME:
        return cl->name;
    case ARG_LOCK_CHANNEL:
    case ARG_RW_CHANNEL:
    case ARG_QUEUE:
    case ARG_TIMEOUT:
    case ARG_TOKEN:
    case ARG_TAG:
    case ARG_SC_CHANNEL:
    case ARG_OWNERS:
    case ARG_DEADLINES:
        snprintf(buf, size, "%s{%s}", braced_name_prefix[arg], cl->name);
        return buf;
    case ARG_FIELD:
        snprintf(buf, size, "%s:%d", owner_uuid, cl->index + 1);
        return buf;
    case ARG_WRITE_FIELD:
        snprintf(buf, size, "%s:%d:write", owner_uuid, cl->index + 1);
        return buf;
    case ARG_READ_PREFIX:
        snprintf(buf, size, "{%s}:%s:%d:rwlock_timeout", cl->name, owner_uuid,
                 cl->index + 1);
        return buf;
    case ARG_LEASE:
        return LEASE_MS;
    case ARG_FAIR_WAIT:
        return FAIR_WAIT_MS;
    case ARG_NOW:
        /* Redisson's System.currentTimeMillis(): the wall clock. */
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(buf, size, "%lld",
                 (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        return buf;
    case ARG_ZERO:
        return "0";
    case ARG_ONE:
        return "1";
    case ARG_PUBLISH:
        return "PUBLISH";
    case ARG_PERMITS:
        return "1";
    case ARG_SIZE:
        snprintf(buf, size, "%d", cl->sc->permits);
        return buf;
    case ARG_END:
        break;
    }
    fatal("no value for script argument %d", (int)arg);
}

int call_arg_count(const enum call_arg *list)
{
    int n = 0;

    while (n < MAX_CALL_ARGS && list[n] != ARG_END)
        n++;
    return n;
}

/* EVALSHA of `call` with this client's keys and arguments. */
void direct_format(const struct bench_client *cl,
                   const struct script_call *call, struct bench_request *cmd)
{
    char values[2 * MAX_CALL_ARGS][256], numkeys[8];
    const char *argv[3 + 2 * MAX_CALL_ARGS];
    int nkeys = call_arg_count(call->keys);
    int nargs = call_arg_count(call->argv);
    int argc = 0;

    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    argv[argc++] = "EVALSHA";
    argv[argc++] = call->sha;
    argv[argc++] = numkeys;
    for (int i = 0; i < nkeys; i++, argc++)
        argv[argc] = call_arg_value(cl, call->keys[i], values[argc - 3],
                                    sizeof(values[0]));
    for (int i = 0; i < nargs; i++, argc++)
        argv[argc] = call_arg_value(cl, call->argv[i], values[argc - 3],
                                    sizeof(values[0]));
    format_argv(cmd, argc, argv);
}
