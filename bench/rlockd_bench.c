/*
 * rlockd_bench.c - the load generator behind `make bench`.
 *
 * Owns: the benchmark scenarios, how they are measured, and the report.
 * It compares lock+unlock pairs through rlockd with the same pairs sent
 * straight to Redis as Redisson's own Lua scripts (EVALSHA), with 1 and
 * with many concurrent clients, and the same many-clients comparison for
 * every other lock kind (FAIR, READ, WRITE, FENCED, and RSemaphore's
 * acquire+release; the kind table below); it measures the contended
 * cases through rlockd (many clients on one RLock, on one FAIR lock, on
 * one semaphore of a few permits, and one WRITE client among READ
 * clients on one name) and the held case (--held N watchdog-mode locks taken, held for a
 * window, then released; see "held locks" below for what it measures).
 *
 * How it drives load: every simulated client is its own hiredis async
 * connection running a closed loop (send, wait for the reply, send the
 * next request), and all of them are multiplexed by ONE thread through
 * the small epoll adapter below. One thread rather than one per client
 * because on a 2-core machine 64 blocked threads would cost a context
 * switch per reply and take the CPU that Redis and rlockd need, which
 * would measure the scheduler, not the daemon (redis-benchmark is built
 * the same way). The thread's own CPU use is reported next to the figures.
 *
 * How it measures: each scenario runs a warm-up, then a window of
 * --duration seconds. Throughput is the operations completed inside the
 * window divided by the window's length; latencies are every sample
 * completed inside the window, sorted, nearest-rank percentiles. All
 * timestamps come from CLOCK_MONOTONIC. What the pairs cost Redis (its
 * CPU time, its commands from INFO commandstats, its script calls) is
 * read around the whole run, warm-up and drain included, and divided by
 * the pairs the run completed.
 *
 * It never fails on a timing: targets are printed as met or missed and
 * the exit status stays 0. It exits non-zero only when something is
 * wrong: an error reply (e.g. -UNAVAILABLE), an unexpected reply, a lost
 * connection, requests left unanswered long after the window closed, a
 * lock key that rlockd reported released but Redis still holds, a
 * semaphore whose count is not back to its permits after every release,
 * or a held lock that expired although its owner was connected. With
 * --skip-unsupported (bench/run.sh's baseline runs) an rlockd scenario
 * whose requests the daemon refuses with -ERR, as a build older than
 * the kind does, is skipped and reported as such instead.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <async.h>
#include <hiredis.h>

#define NS_PER_SEC 1000000000LL
#define CONNECT_TIMEOUT_NS (5 * NS_PER_SEC)
/* How long after the window closes outstanding replies may take before
 * the daemon is declared hung. A contended drain needs one handoff per
 * waiting client, each well under a millisecond when all is well. */
#define DRAIN_TIMEOUT_NS (10 * NS_PER_SEC)
#define MAX_CLIENTS 10000
#define MAX_EVENTS 256
/* The TTL both sides write: rlockd's watchdog_timeout_ms default, and the
 * lease Redisson passes in watchdog mode. */
#define LEASE_MS "30000"
/* Held locks: rlockd's default watchdog_timeout_ms, to which the measured
 * renewal rate is scaled; LOCK and UNLOCK requests in flight per
 * connection (rlockd runs one connection's requests one at a time and
 * closes a connection whose unprocessed input passes
 * max_input_buffer_bytes, 1 MiB by default: 512 requests are ~30 KiB);
 * the most keys one EXISTS names; how long a phase (all LOCKs, all
 * UNLOCKs) may take; and how long rlockd may take to report held_locks:0
 * after the last UNLOCK reply. */
#define DEFAULT_WATCHDOG_MS 30000
#define HELD_PIPELINE 512
#define EXISTS_CHUNK 1000
#define HELD_PHASE_TIMEOUT_NS (60 * NS_PER_SEC)
#define HELD_SETTLE_TIMEOUT_NS (5 * NS_PER_SEC)

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

/* What a script's KEYS and ARGV are made of, each named as in the
 * reference; call_arg_value gives one client's value. */
enum call_arg {
    ARG_END = 0,      /* ends a list */
    ARG_NAME,         /* the lock's key */
    ARG_FIELD,        /* <uuid>:<tid> */
    ARG_WRITE_FIELD,  /* <uuid>:<tid>:write */
    ARG_LOCK_CHANNEL, /* redisson_lock__channel:{name} */
    ARG_RW_CHANNEL,   /* redisson_rwlock:{name} */
    ARG_QUEUE,        /* redisson_lock_queue:{name} */
    ARG_TIMEOUT,      /* redisson_lock_timeout:{name} */
    ARG_TOKEN,        /* redisson_lock_token:{name} */
    ARG_TAG,          /* {name} */
    ARG_READ_PREFIX,  /* {name}:<uuid>:<tid>:rwlock_timeout */
    ARG_LEASE,        /* LEASE_MS */
    ARG_FAIR_WAIT,    /* FAIR_WAIT_MS */
    ARG_NOW,          /* the client's wall clock in ms, at the call */
    ARG_ZERO,         /* "0": the unlock message */
    ARG_ONE,          /* "1": the write unlock's message, waking all */
    ARG_PUBLISH,      /* "PUBLISH": the fair, read-write and semaphore
                         scripts take the command (Redisson: SPUBLISH on a
                         cluster) */
    ARG_SC_CHANNEL,   /* redisson_sc:{name} */
    ARG_PERMITS,      /* "1": the permits one acquire or release moves */
    ARG_SIZE,         /* the scenario's permits per semaphore */
    ARG_OWNERS,       /* rlockd_permits:{name}: rlockd's record of holders */
    ARG_DEADLINES,    /* rlockd_permits_deadline:{name} */
};

/* Redisson's fairLockWaitTimeout, the `wait` lock() passes the fair
 * acquire: how long past its turn a queued waiter keeps its place. */
#define FAIR_WAIT_MS "300000"
#define MAX_CALL_ARGS 6

/* One script as the direct side calls it: EVALSHA sha #keys keys argv. */
struct script_call {
    const char *script;
    enum call_arg keys[MAX_CALL_ARGS]; /* ARG_END-terminated */
    enum call_arg argv[MAX_CALL_ARGS];
    char sha[48]; /* filled by redis_setup */
    bool clock;   /* takes ARG_NOW: formatted anew for every call */
};

static struct script_call rlock_acquire = {.script = ACQUIRE_SCRIPT,
                                           .keys = {ARG_NAME},
                                           .argv = {ARG_LEASE, ARG_FIELD}};
static struct script_call rlock_release = {
    .script = RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_LOCK_CHANNEL},
    .argv = {ARG_ZERO, ARG_LEASE, ARG_FIELD}};
static struct script_call fair_acquire = {
    .script = FAIR_ACQUIRE_SCRIPT,
    .keys = {ARG_NAME, ARG_QUEUE, ARG_TIMEOUT},
    .argv = {ARG_LEASE, ARG_FIELD, ARG_FAIR_WAIT, ARG_NOW}};
static struct script_call fair_release = {
    .script = FAIR_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_QUEUE, ARG_TIMEOUT, ARG_LOCK_CHANNEL},
    .argv = {ARG_ZERO, ARG_LEASE, ARG_FIELD, ARG_NOW, ARG_PUBLISH}};
static struct script_call read_acquire = {
    .script = READ_ACQUIRE_SCRIPT,
    .keys = {ARG_NAME, ARG_READ_PREFIX},
    .argv = {ARG_LEASE, ARG_FIELD, ARG_WRITE_FIELD}};
static struct script_call read_release = {
    .script = READ_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_RW_CHANNEL, ARG_READ_PREFIX, ARG_TAG},
    .argv = {ARG_ZERO, ARG_FIELD, ARG_PUBLISH}};
static struct script_call write_acquire = {
    .script = WRITE_ACQUIRE_SCRIPT,
    .keys = {ARG_NAME},
    .argv = {ARG_LEASE, ARG_WRITE_FIELD}};
static struct script_call write_release = {
    .script = WRITE_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_RW_CHANNEL},
    .argv = {ARG_ONE, ARG_LEASE, ARG_WRITE_FIELD, ARG_PUBLISH}};
static struct script_call fenced_acquire = {.script = FENCED_ACQUIRE_SCRIPT,
                                            .keys = {ARG_NAME, ARG_TOKEN},
                                            .argv = {ARG_LEASE, ARG_FIELD}};
static struct script_call semaphore_acquire = {.script =
                                                   SEMAPHORE_ACQUIRE_SCRIPT,
                                               .keys = {ARG_NAME},
                                               .argv = {ARG_PERMITS}};
static struct script_call semaphore_release = {
    .script = SEMAPHORE_RELEASE_SCRIPT,
    .keys = {ARG_NAME, ARG_SC_CHANNEL},
    .argv = {ARG_PERMITS, ARG_PUBLISH}};
static struct script_call semaphore_set = {.script = SEMAPHORE_SET_SCRIPT,
                                           .keys = {ARG_NAME, ARG_SC_CHANNEL},
                                           .argv = {ARG_SIZE, ARG_PUBLISH}};

/* What a direct script answers when it did what was asked: nil (the
 * locks' acquire: no TTL to wait for), 1, or {-1, token} (FENCED). */
enum direct_reply { REPLY_NIL, REPLY_ONE, REPLY_TOKEN_PAIR };

/* What differs between lock kinds, on both sides: one row each. */
struct lock_kind {
    const char *word;  /* in titles and --kinds; NULL for RLock */
    const char *label; /* in reports */
    /* rlockd's requests: "VERB name tid [word]" for a lock, whose holder
     * is a thread; "VERB name" for a semaphore (by_session), whose
     * permits the session holds. NULL verbs: LOCK and UNLOCK. */
    const char *acquire_verb;
    const char *release_verb;
    bool by_session;
    /* sent once per name before the scenario, not timed (NULL: none):
     * rlockd's "VERB name size", Redisson's script for the direct side;
     * both answer :1 */
    const char *set_up_verb;
    struct script_call *set_up;
    bool token;                  /* an acquire answers a fencing token */
    struct script_call *acquire; /* Redisson's, for the direct side */
    struct script_call *release;
    enum direct_reply acquired, released; /* what those two answer */
    /* keys of a name that must be gone once every hold is released */
    enum call_arg released_keys[MAX_CALL_ARGS];
    enum call_arg kept_key; /* one that outlives the lock by design, deleted
                               after the check; ARG_END: none */
    /* kept_key is a counter that must be back at the scenario's permits */
    bool kept_is_count;
};

enum kind_id {
    KIND_RLOCK,
    KIND_FAIR,
    KIND_READ,
    KIND_WRITE,
    KIND_FENCED,
    KIND_SEMAPHORE,
    KIND_COUNT
};

static const struct lock_kind kinds[KIND_COUNT] = {
    [KIND_RLOCK] = {.label = "RLock",
                    .acquire = &rlock_acquire,
                    .release = &rlock_release,
                    .acquired = REPLY_NIL,
                    .released = REPLY_ONE,
                    .released_keys = {ARG_NAME}},
    [KIND_FAIR] = {.word = "FAIR",
                   .label = "FAIR",
                   .acquire = &fair_acquire,
                   .release = &fair_release,
                   .acquired = REPLY_NIL,
                   .released = REPLY_ONE,
                   .released_keys = {ARG_NAME, ARG_QUEUE, ARG_TIMEOUT}},
    [KIND_READ] = {.word = "READ",
                   .label = "READ",
                   .acquire = &read_acquire,
                   .release = &read_release,
                   .acquired = REPLY_NIL,
                   .released = REPLY_ONE,
                   .released_keys = {ARG_NAME}},
    [KIND_WRITE] = {.word = "WRITE",
                    .label = "WRITE",
                    .acquire = &write_acquire,
                    .release = &write_release,
                    .acquired = REPLY_NIL,
                    .released = REPLY_ONE,
                    .released_keys = {ARG_NAME}},
    [KIND_FENCED] = {.word = "FENCED",
                     .label = "FENCED",
                     .token = true,
                     .acquire = &fenced_acquire,
                     .release = &rlock_release,
                     .acquired = REPLY_TOKEN_PAIR,
                     .released = REPLY_ONE,
                     .released_keys = {ARG_NAME},
                     .kept_key = ARG_TOKEN},
    [KIND_SEMAPHORE] = {.word = "SEMAPHORE",
                        .label = "SEMAPHORE",
                        .acquire_verb = "ACQUIRE",
                        .release_verb = "RELEASE",
                        .by_session = true,
                        .set_up_verb = "SETPERMITS",
                        .set_up = &semaphore_set,
                        .acquire = &semaphore_acquire,
                        .release = &semaphore_release,
                        .acquired = REPLY_ONE,
                        .released = REPLY_NIL,
                        .released_keys = {ARG_OWNERS, ARG_DEADLINES},
                        .kept_key = ARG_NAME,
                        .kept_is_count = true},
};

enum target { TARGET_DIRECT, TARGET_RLOCKD };

/* How a scenario's clients meet: each on a name of its own; all on one
 * name, as many holders at a time as it has permits (a lock has one;
 * hand-offs measured); or all on one name, client WRITER_INDEX taking
 * WRITE and the rest READ. */
enum contention { UNCONTENDED, HANDOFF, READERS_WRITER };
#define WRITER_INDEX 0

/* Processes whose CPU use is reported; pid <= 0 means unknown. */
enum proc { PROC_BENCH, PROC_REDIS, PROC_RLOCKD, PROC_COUNT };

struct options {
    char *redis_host;
    int redis_port;
    char *rlockd_host;
    int rlockd_port;
    double duration_s;
    double warmup_s;
    int clients;
    int contended_clients;
    int permits; /* of the contended semaphore */
    bool direct_only;
    bool rlockd_only;
    bool results;          /* also print the figures as "result" lines */
    bool skip_unsupported; /* skip a kind the rlockd refuses, not fail */
    unsigned kinds;        /* bit per kind_id: which kinds' scenarios run */
    pid_t pids[PROC_COUNT];
    /* held locks; the rlockd defaults to --rlockd and --rlockd-pid */
    long held;
    double held_window_s;
    int held_clients;
    char *held_rlockd_host;
    int held_rlockd_port;
    pid_t held_rlockd_pid;
};

/* A growable array of nanosecond values (or client indexes). */
struct samples {
    int64_t *v;
    size_t n;
    size_t cap;
};

/* A request formatted once and sent many times, so the client's own CPU
 * goes to sockets, not to printf-style formatting. */
struct command {
    char *text;
    int len;
};

/* Redis's command calls by name, from INFO commandstats. Redis 7 counts
 * the commands a script runs there too, each under its own name, beside
 * the EVALSHA (or EVAL) that ran them. */
struct command_calls {
    long long evalsha;
    long long eval;
    long long other; /* every other command but INFO, which the bench
                        itself sends to read these */
};

/* What a scenario's run cost Redis, from its first request to the last
 * reply of the drain: what the lock work costs the one shared server
 * that every client and every rlockd lean on, whichever side sends it. */
struct redis_cost {
    double cpu_s;           /* < 0: unknown (no --redis-pid) */
    long long commands;     /* every command but INFO, scripts' included */
    long long script_calls; /* EVALSHA and EVAL */
};

struct scenario;

struct client {
    struct scenario *sc;
    const struct lock_kind *kind;
    redisAsyncContext *ac; /* NULL once hiredis has freed it */
    int index;
    uint32_t armed; /* epoll events registered for ac's fd */
    bool want_read;
    bool want_write;
    char name[128];
    struct command acquire;
    struct command release;
    int64_t pair_started;
    size_t generation;     /* HANDOFF: index of this client's hold */
    uint64_t acquisitions; /* contended: grants inside the window */
    /* held: this connection's locks are [held_first, held_end); requests
     * sent and replies received in the current phase */
    long held_first;
    long held_end;
    long held_sent;
    long held_done;
};

/* What a held-locks connection is sending. */
enum held_phase { HELD_LOCK, HELD_UNLOCK };

struct scenario {
    char title[48];
    const struct lock_kind *kind; /* READERS_WRITER: the readers' */
    enum target target;
    enum contention mode;
    int permits; /* a semaphore's (set up before the run); 1 for a lock */
    bool held;   /* connects to the held-locks rlockd; see held_run */
    enum held_phase phase;
    int nclients;
    bool ran;
    char skipped[128]; /* why it did not run (--skip-unsupported) */
    /* run state */
    int epfd;
    struct client *clients;
    int pinged;
    int set_up_left; /* set-up requests not answered yet */
    int running;
    int64_t window_start;
    int64_t window_end;
    /* results */
    uint64_t ops;              /* pairs (HANDOFF: grants) in the window */
    uint64_t completed;        /* pairs over the whole run, warm-up and
                                  drain included */
    struct samples pair_ns;    /* LOCK sent -> UNLOCK reply */
    struct samples acquire_ns; /* LOCK sent -> its reply */
    double cpu_pct[PROC_COUNT];
    struct redis_cost redis;       /* over the whole run, as `completed` */
    struct samples writer_wait_ns; /* READERS_WRITER: LOCK sent -> grant */
    /* HANDOFF: grants, one entry per hold, indexed by generation; and
     * releases, indexed by their number (see contended_granted for why
     * not a single shared variable) */
    struct samples grant_at;
    struct samples granted_to;
    struct samples asked_at; /* when the granted request was sent */
    struct samples release_reply_at;
    struct samples released_by;
    size_t releases;
    struct samples handoff_ns;
    uint64_t regrants; /* next grant went to the client that unlocked */
    uint64_t unwaited; /* went to a client that asked after the release:
                          it overtook the waiting ones */
};

static struct options opt = {
    .redis_port = 6379,
    .rlockd_port = 7379,
    .duration_s = 3.0,
    .warmup_s = 0.5,
    .clients = 64,
    .contended_clients = 20,
    .permits = 3,
    .held = 100000,
    .held_window_s = 5.0,
    .held_clients = 8,
    .kinds = (1u << KIND_COUNT) - 1,
};
static char owner_uuid[40]; /* the direct clients' Redisson-style UUID */

/* ---- errors, time, samples --------------------------------------------- */

/* The one error idiom: anything unexpected ends the run, loudly. */
__attribute__((format(printf, 1, 2), noreturn)) static void
fatal(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fputs("rlockd-bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size);
    if (p == NULL)
        fatal("out of memory (%zu bytes)", size);
    return p;
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static void samples_push(struct samples *s, int64_t x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = x;
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static void samples_sort(struct samples *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), compare_int64);
}

/* Nearest-rank percentile of sorted samples, in microseconds; NAN if
 * there are none. */
static double samples_percentile_us(const struct samples *s, double pct)
{
    size_t rank;

    if (s->n == 0)
        return NAN;
    rank = (size_t)((pct / 100.0) * (double)s->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return (double)s->v[rank - 1] / 1000.0;
}

static void samples_free(struct samples *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* ---- CPU and memory accounting ----------------------------------------- */

/* utime + stime of a process in seconds, from /proc/PID/stat; < 0 if
 * unknown. */
static double process_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long utime, stime;
    const char *after_name;
    FILE *f;
    size_t n;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may contain spaces: skip past its ')'. */
    after_name = strrchr(buf, ')');
    if (after_name == NULL)
        return -1;
    if (sscanf(after_name + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
               &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

struct cpu_snapshot {
    int64_t at;
    double seconds[PROC_COUNT];
};

static void cpu_snapshot_take(struct cpu_snapshot *snap, const pid_t *pids)
{
    snap->at = now_ns();
    for (int p = 0; p < PROC_COUNT; p++)
        snap->seconds[p] = process_cpu_seconds(pids[p]);
}

/* Percent of one core each process used between two snapshots. */
static void cpu_percent(const struct cpu_snapshot *a,
                        const struct cpu_snapshot *b, double *pct)
{
    double wall = (double)(b->at - a->at) / NS_PER_SEC;

    for (int p = 0; p < PROC_COUNT; p++) {
        bool known = a->seconds[p] >= 0 && b->seconds[p] >= 0 && wall > 0;
        pct[p] = known ? 100.0 * (b->seconds[p] - a->seconds[p]) / wall : -1;
    }
}

/* Resident memory (VmRSS) of a process in KiB, from /proc/PID/status; -1
 * if unknown. */
static long process_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* ---- the epoll adapter for hiredis async contexts ----------------------- */

/* Registers with epoll exactly the events hiredis currently wants. */
static void client_arm(struct client *cl)
{
    uint32_t want =
        (cl->want_read ? EPOLLIN : 0) | (cl->want_write ? EPOLLOUT : 0);
    struct epoll_event ev = {.events = want, .data.ptr = cl};
    int op;

    if (want == cl->armed)
        return;
    op = cl->armed == 0 ? EPOLL_CTL_ADD
         : want == 0    ? EPOLL_CTL_DEL
                        : EPOLL_CTL_MOD;
    if (epoll_ctl(cl->sc->epfd, op, cl->ac->c.fd, &ev) != 0)
        fatal("epoll_ctl: %s", strerror(errno));
    cl->armed = want;
}

static void ev_add_read(void *privdata)
{
    struct client *cl = privdata;

    cl->want_read = true;
    client_arm(cl);
}

static void ev_del_read(void *privdata)
{
    struct client *cl = privdata;

    cl->want_read = false;
    client_arm(cl);
}

/* Write interest is only noted here: client_send writes at once, and the
 * loop arms EPOLLOUT only for what is still unwritten after that (a
 * connect in progress, a full socket buffer). Two epoll_ctl calls per
 * request would otherwise dominate the client's own CPU. */
static void ev_add_write(void *privdata)
{
    ((struct client *)privdata)->want_write = true;
}

static void ev_del_write(void *privdata)
{
    ((struct client *)privdata)->want_write = false;
}

/* hiredis is about to free the context: the fd leaves epoll first. */
static void ev_cleanup(void *privdata)
{
    struct client *cl = privdata;

    cl->want_read = cl->want_write = false;
    client_arm(cl);
    cl->ac = NULL;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    if (status != REDIS_OK)
        fatal("connect to %s:%d: %s", ac->c.tcp.host, ac->c.tcp.port,
              ac->errstr);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    /* REDIS_OK only for our own redisAsyncDisconnect at the end. */
    if (status != REDIS_OK)
        fatal("connection to %s:%d lost: %s", ac->c.tcp.host, ac->c.tcp.port,
              ac->errstr);
}

static void client_connect(struct client *cl, const char *host, int port)
{
    redisAsyncContext *ac = redisAsyncConnect(host, port);

    if (ac == NULL)
        fatal("connect to %s:%d: out of memory", host, port);
    if (ac->err)
        fatal("connect to %s:%d: %s", host, port, ac->errstr);
    ac->ev.data = cl;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    cl->ac = ac;
}

static void client_send(struct client *cl, const struct command *cmd,
                        redisCallbackFn *fn)
{
    if (redisAsyncFormattedCommand(cl->ac, fn, cl, cmd->text,
                                   (size_t)cmd->len) != REDIS_OK)
        fatal("%s: client %d: cannot queue a request: %s", cl->sc->title,
              cl->index, cl->ac->errstr);
    redisAsyncHandleWrite(cl->ac);
}

/* Finishes writes that could not complete at once and arms EPOLLOUT for
 * whatever is still pending. */
static void scenario_flush_writes(struct scenario *sc)
{
    for (int i = 0; i < sc->nclients; i++) {
        struct client *cl = &sc->clients[i];

        if (cl->ac != NULL && cl->want_write)
            redisAsyncHandleWrite(cl->ac);
        if (cl->ac != NULL)
            client_arm(cl);
    }
}

static void dispatch_event(const struct epoll_event *ev)
{
    struct client *cl = ev->data.ptr;

    if (cl->ac != NULL && (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        redisAsyncHandleRead(cl->ac);
    if (cl->ac != NULL && (ev->events & EPOLLOUT))
        redisAsyncHandleWrite(cl->ac);
}

static int clients_waiting(const struct scenario *sc)
{
    int waiting = 0;

    for (int i = 0; i < sc->nclients; i++) {
        const struct client *cl = &sc->clients[i];

        waiting += cl->ac != NULL && cl->ac->replies.head != NULL;
    }
    return waiting;
}

/* Runs the event loop until done(sc); past `deadline` the run is
 * declared stuck. */
static void scenario_loop(struct scenario *sc,
                          bool (*done)(const struct scenario *),
                          int64_t deadline, const char *stuck_reason)
{
    struct epoll_event events[MAX_EVENTS];

    while (!done(sc)) {
        int n;

        if (now_ns() > deadline)
            fatal("%s: %s (%d of %d clients still waiting for a reply)",
                  sc->title, stuck_reason, clients_waiting(sc), sc->nclients);
        scenario_flush_writes(sc);
        n = epoll_wait(sc->epfd, events, MAX_EVENTS, 50);
        if (n < 0 && errno != EINTR)
            fatal("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++)
            dispatch_event(&events[i]);
    }
}

/* ---- reply checks ------------------------------------------------------- */

static void describe_reply(const redisReply *r, char *buf, size_t size)
{
    if (r == NULL)
        snprintf(buf, size, "no reply (connection closed)");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(buf, size, "error reply -%s", r->str);
    else if (r->type == REDIS_REPLY_STATUS)
        snprintf(buf, size, "+%s", r->str);
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(buf, size, ":%lld", r->integer);
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(buf, size, "nil");
    else if (r->type == REDIS_REPLY_STRING)
        snprintf(buf, size, "bulk \"%.60s\"", r->str);
    else
        snprintf(buf, size, "array of %zu", r->elements);
}

static void unexpected_reply(const struct client *cl, const char *what,
                             const redisReply *r, const char *expected)
{
    char got[160];

    if (r == NULL && cl->ac != NULL && cl->ac->err)
        snprintf(got, sizeof(got), "no reply (%s)", cl->ac->errstr);
    else
        describe_reply(r, got, sizeof(got));
    fatal("%s: client %d: %s %s: got %s, expected %s", cl->sc->title, cl->index,
          what, cl->name, got, expected);
}

static void expect_status(const struct client *cl, const char *what,
                          const redisReply *r, const char *status)
{
    if (r == NULL || r->type != REDIS_REPLY_STATUS ||
        strcmp(r->str, status) != 0)
        unexpected_reply(cl, what, r, status);
}

static void expect_integer(const struct client *cl, const char *what,
                           const redisReply *r, long long value)
{
    char expected[32];

    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == value)
        return;
    snprintf(expected, sizeof(expected), ":%lld", value);
    unexpected_reply(cl, what, r, expected);
}

static void expect_nil(const struct client *cl, const char *what,
                       const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_NIL)
        unexpected_reply(cl, what, r, "nil (acquired)");
}

static bool is_token(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
}

/* rlockd's request words; a lock's are LOCK and UNLOCK. */
static const char *acquire_verb(const struct lock_kind *k)
{
    return k->acquire_verb != NULL ? k->acquire_verb : "LOCK";
}

static const char *release_verb(const struct lock_kind *k)
{
    return k->release_verb != NULL ? k->release_verb : "UNLOCK";
}

/* A direct script's reply of the form `form`. */
static void expect_direct(const struct client *cl, const char *what,
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

/* A grant: rlockd's +OK, or its fencing token; the direct acquire's
 * reply of its kind. */
static void expect_granted(const struct client *cl, const redisReply *r)
{
    const char *verb = acquire_verb(cl->kind);

    if (cl->sc->target == TARGET_DIRECT)
        expect_direct(cl, "acquire script on", cl->kind->acquired, r);
    else if (!cl->kind->token)
        expect_status(cl, verb, r, "OK");
    else if (!is_token(r))
        unexpected_reply(cl, verb, r, "a fencing token, :1 or more");
}

/* A release: rlockd's :1 (nothing held now), the direct release's reply
 * of its kind. */
static void expect_released(const struct client *cl, const redisReply *r)
{
    if (cl->sc->target == TARGET_DIRECT)
        expect_direct(cl, "release script on", cl->kind->released, r);
    else
        expect_integer(cl, release_verb(cl->kind), r, 1);
}

/* ---- the requests -------------------------------------------------------- */

static void format_argv(struct command *cmd, int argc, const char **argv)
{
    redisFreeCommand(cmd->text);
    cmd->len = redisFormatCommandArgv(&cmd->text, argc, argv, NULL);
    if (cmd->len < 0)
        fatal("cannot format a request: out of memory");
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
static const char *call_arg_value(const struct client *cl, enum call_arg arg,
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

static int call_arg_count(const enum call_arg *list)
{
    int n = 0;

    while (n < MAX_CALL_ARGS && list[n] != ARG_END)
        n++;
    return n;
}

/* EVALSHA of `call` with this client's keys and arguments. */
static void direct_format(const struct client *cl,
                          const struct script_call *call, struct command *cmd)
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

/* A lock's "LOCK|UNLOCK name tid [kind]"; a semaphore's "ACQUIRE|RELEASE
 * name", whose permits the session holds. */
static void rlockd_format(const struct client *cl, const char *verb,
                          struct command *cmd)
{
    char tid[16];
    const char *argv[] = {verb, cl->name, tid, cl->kind->word};

    snprintf(tid, sizeof(tid), "%d", cl->index + 1);
    if (cl->kind->by_session)
        format_argv(cmd, 2, argv);
    else
        format_argv(cmd, cl->kind->word != NULL ? 4 : 3, argv);
}

/* The untimed set-up of the client's name (SETPERMITS name size, or
 * Redisson's trySetPermits), for a kind that has one. */
static void set_up_format(const struct client *cl, struct command *cmd)
{
    char size[16];
    const char *argv[] = {cl->kind->set_up_verb, cl->name, size};

    if (cl->sc->target == TARGET_DIRECT) {
        direct_format(cl, cl->kind->set_up, cmd);
        return;
    }
    snprintf(size, sizeof(size), "%d", cl->sc->permits);
    format_argv(cmd, 3, argv);
}

/* How many names a scenario's clients use: clients [0, n) each own
 * one. */
static int scenario_names(const struct scenario *sc)
{
    return sc->mode != UNCONTENDED ? 1 : sc->nclients;
}

/* Clients of an uncontended scenario each have their own lock name; the
 * others share one. */
static void client_name(struct client *cl, int scenario_no)
{
    if (cl->sc->mode != UNCONTENDED)
        snprintf(cl->name, sizeof(cl->name), "rlockd-bench:%d:%d:shared",
                 (int)getpid(), scenario_no);
    else
        snprintf(cl->name, sizeof(cl->name), "rlockd-bench:%d:%d:%d",
                 (int)getpid(), scenario_no, cl->index);
}

/* Each client's two requests on its name, formatted once and sent many
 * times; a script that takes the client's clock is formatted again
 * before each call (client_send_pair_half), as Redisson reads the clock
 * at each. The thread id is the client's index + 1; direct clients use
 * one UUID, like the threads of one JVM. */
static void client_prepare(struct client *cl)
{
    const struct scenario *sc = cl->sc;

    cl->kind = sc->mode == READERS_WRITER && cl->index == WRITER_INDEX
                   ? &kinds[KIND_WRITE]
                   : sc->kind;
    if (sc->target == TARGET_RLOCKD) {
        rlockd_format(cl, acquire_verb(cl->kind), &cl->acquire);
        rlockd_format(cl, release_verb(cl->kind), &cl->release);
    } else {
        direct_format(cl, cl->kind->acquire, &cl->acquire);
        direct_format(cl, cl->kind->release, &cl->release);
    }
}

/* ---- the lock+unlock loop ---------------------------------------------- */

static bool in_window(const struct scenario *sc, int64_t t)
{
    return t >= sc->window_start && t < sc->window_end;
}

static void on_acquired(redisAsyncContext *ac, void *reply, void *privdata);
static void on_released(redisAsyncContext *ac, void *reply, void *privdata);

/* Sends the acquire (or the release) of the client's pair. */
static void client_send_pair_half(struct client *cl, bool release)
{
    const struct script_call *call =
        release ? cl->kind->release : cl->kind->acquire;
    struct command *cmd = release ? &cl->release : &cl->acquire;

    if (cl->sc->target == TARGET_DIRECT && call->clock)
        direct_format(cl, call, cmd);
    client_send(cl, cmd, release ? on_released : on_acquired);
}

static void start_pair(struct client *cl)
{
    cl->pair_started = now_ns();
    client_send_pair_half(cl, false);
}

/*
 * Records one grant of the contended name. The handoff is the time from
 * the release that freed what was granted to this grant, but this grant
 * can be processed before that release's reply (both are in flight
 * together), so a single "last release" variable would pair it with the
 * wrong one. Each hold gets a generation number instead, each release a
 * number of its own, and handoffs are computed after the run from
 * grant_at[g] - release_reply_at[g - permits]: with P permits, grant g
 * needs g - P + 1 releases before it (a lock: P = 1, and rlockd grants
 * the next hold only after the previous UNLOCK, so release g - 1 is the
 * one of hold g - 1 and is numbered by its generation). With several
 * permits the releases are numbered in the order their replies arrive,
 * the bench's best view of the order rlockd ran them in. A grant is a
 * hand-off only if it went to a client that was waiting when the release
 * was answered: not to the releaser itself, and not to one that asked
 * after (as a semaphore, like Redisson's, lets a new ACQUIRE take a
 * free permit before the waiters do).
 */
static void contended_granted(struct client *cl, int64_t now)
{
    struct scenario *sc = cl->sc;

    cl->generation = sc->grant_at.n;
    samples_push(&sc->grant_at, now);
    samples_push(&sc->granted_to, cl->index);
    samples_push(&sc->asked_at, cl->pair_started);
    /* a slot for the release of a hold no later than this one */
    samples_push(&sc->release_reply_at, 0);
    samples_push(&sc->released_by, -1);
    if (in_window(sc, now)) {
        sc->ops++;
        cl->acquisitions++;
    }
}

/* Readers overlap, so there is no chain of hand-offs to follow: what
 * matters is how long the writer waits among them, and how many grants
 * each side gets. */
static void readers_writer_granted(struct client *cl, int64_t now)
{
    struct scenario *sc = cl->sc;

    if (!in_window(sc, now))
        return;
    cl->acquisitions++;
    if (cl->index == WRITER_INDEX)
        samples_push(&sc->writer_wait_ns, now - cl->pair_started);
}

static void on_acquired(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;
    int64_t now = now_ns();

    (void)ac;
    expect_granted(cl, reply);
    if (in_window(cl->sc, now))
        samples_push(&cl->sc->acquire_ns, now - cl->pair_started);
    if (cl->sc->mode == HANDOFF)
        contended_granted(cl, now);
    else if (cl->sc->mode == READERS_WRITER)
        readers_writer_granted(cl, now);
    client_send_pair_half(cl, true);
}

static void on_released(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;
    struct scenario *sc = cl->sc;
    int64_t now = now_ns();

    (void)ac;
    expect_released(cl, reply);
    /* A client stops only after its release, so every grant's pair ends
     * in the run: with HANDOFF, this counts the grants too. */
    sc->completed++;
    if (sc->mode == HANDOFF) {
        size_t r = sc->permits == 1 ? cl->generation : sc->releases;

        sc->releases++;
        sc->release_reply_at.v[r] = now;
        sc->released_by.v[r] = cl->index;
    } else if (in_window(sc, now)) {
        sc->ops++;
    }
    if (in_window(sc, now))
        samples_push(&sc->pair_ns, now - cl->pair_started);
    if (now >= sc->window_end) {
        sc->running--;
        return;
    }
    start_pair(cl);
}

/* ---- scenario set-up and run -------------------------------------------- */

static void on_ping(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;

    (void)ac;
    expect_status(cl, "PING", reply, "PONG");
    cl->sc->pinged++;
}

static bool all_pinged(const struct scenario *sc)
{
    return sc->pinged == sc->nclients;
}

static void on_set_up(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;

    (void)ac;
    expect_integer(cl,
                   cl->sc->target == TARGET_DIRECT ? "set-up script on"
                                                   : cl->kind->set_up_verb,
                   reply, 1);
    cl->sc->set_up_left--;
}

static bool all_set_up(const struct scenario *sc)
{
    return sc->set_up_left == 0;
}

/* Gives each name its permits (a kind with a set-up: the semaphore),
 * through the client that owns it, before anything is timed. */
static void scenario_set_up(struct scenario *sc)
{
    struct command cmd = {NULL, 0};

    if (sc->kind->set_up == NULL || sc->held)
        return;
    sc->set_up_left = scenario_names(sc);
    for (int i = 0; i < scenario_names(sc); i++) {
        set_up_format(&sc->clients[i], &cmd);
        client_send(&sc->clients[i], &cmd, on_set_up);
    }
    redisFreeCommand(cmd.text);
    scenario_loop(sc, all_set_up, now_ns() + CONNECT_TIMEOUT_NS,
                  "the set-up was not answered within 5 s");
}

static bool all_finished(const struct scenario *sc)
{
    return sc->running == 0;
}

/* Where a scenario's clients connect: Redis, rlockd, or the rlockd that
 * the held-locks scenario uses (by default the same one). */
static void scenario_address(const struct scenario *sc, const char **host,
                             int *port)
{
    if (sc->target == TARGET_DIRECT) {
        *host = opt.redis_host;
        *port = opt.redis_port;
    } else if (sc->held) {
        *host = opt.held_rlockd_host;
        *port = opt.held_rlockd_port;
    } else {
        *host = opt.rlockd_host;
        *port = opt.rlockd_port;
    }
}

/* Opens every connection and waits for a PING through each, so that
 * connecting is not part of the measurement. Held-locks connections send
 * requests of their own (held_send), not a prepared pair. */
static void scenario_connect(struct scenario *sc, int scenario_no)
{
    static const struct command ping = {"*1\r\n$4\r\nPING\r\n", 14};
    const char *host;
    int port;

    scenario_address(sc, &host, &port);
    sc->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sc->epfd < 0)
        fatal("epoll_create1: %s", strerror(errno));
    sc->clients = xrealloc(NULL, (size_t)sc->nclients * sizeof(*sc->clients));
    memset(sc->clients, 0, (size_t)sc->nclients * sizeof(*sc->clients));
    for (int i = 0; i < sc->nclients; i++) {
        struct client *cl = &sc->clients[i];

        cl->sc = sc;
        cl->index = i;
        if (!sc->held) {
            client_name(cl, scenario_no);
            client_prepare(cl);
        }
        client_connect(cl, host, port);
        client_send(cl, &ping, on_ping);
    }
    scenario_loop(sc, all_pinged, now_ns() + CONNECT_TIMEOUT_NS,
                  "connections did not answer PING within 5 s");
    scenario_set_up(sc);
}

static void scenario_disconnect(struct scenario *sc)
{
    for (int i = 0; i < sc->nclients; i++) {
        struct client *cl = &sc->clients[i];

        if (cl->ac != NULL)
            redisAsyncDisconnect(cl->ac); /* nothing pending: frees at once */
        redisFreeCommand(cl->acquire.text);
        redisFreeCommand(cl->release.text);
    }
    close(sc->epfd);
}

/* Handoffs to another client, from the grant and release logs. */
static void contended_summarize(struct scenario *sc)
{
    size_t permits = (size_t)sc->permits;

    for (size_t g = permits; g < sc->grant_at.n; g++) {
        size_t r = g - permits;

        if (!in_window(sc, sc->grant_at.v[g]))
            continue;
        if (sc->granted_to.v[g] == sc->released_by.v[r]) {
            sc->regrants++;
            continue;
        }
        if (sc->asked_at.v[g] > sc->release_reply_at.v[r]) {
            sc->unwaited++;
            continue;
        }
        samples_push(&sc->handoff_ns,
                     sc->grant_at.v[g] - sc->release_reply_at.v[r]);
    }
    samples_sort(&sc->handoff_ns);
}

/* ---- Redis-side set-up and checks (one synchronous connection) -------- */

static redisContext *redis_sync;

/* Ends the run unless a synchronous command got a reply that is not an
 * error; returns that reply. `what` ("redis", "rlockd"), host and port
 * name the other end in the message. */
static redisReply *sync_reply_checked(redisContext *ctx, const char *what,
                                      const char *host, int port, redisReply *r)
{
    char got[160];

    if (r == NULL)
        fatal("%s %s:%d: %s", what, host, port, ctx->errstr);
    if (r->type == REDIS_REPLY_ERROR) {
        describe_reply(r, got, sizeof(got));
        fatal("%s %s:%d: %s", what, host, port, got);
    }
    return r;
}

static redisReply *redis_sync_command(const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(redis_sync, fmt, ap);
    va_end(ap);
    return sync_reply_checked(redis_sync, "redis", opt.redis_host,
                              opt.redis_port, r);
}

static void load_script(const char *script, char *sha, size_t size)
{
    redisReply *r = redis_sync_command("SCRIPT LOAD %s", script);

    if (r->type != REDIS_REPLY_STRING)
        fatal("SCRIPT LOAD: unexpected reply type %d", r->type);
    snprintf(sha, size, "%s", r->str);
    freeReplyObject(r);
}

static void redis_setup(void)
{
    unsigned char b[16];

    redis_sync = redisConnect(opt.redis_host, opt.redis_port);
    if (redis_sync == NULL || redis_sync->err)
        fatal("connect to redis %s:%d: %s", opt.redis_host, opt.redis_port,
              redis_sync ? redis_sync->errstr : "out of memory");
    for (int k = 0; k < KIND_COUNT; k++) {
        struct script_call *calls[] = {kinds[k].acquire, kinds[k].release,
                                       kinds[k].set_up};

        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
            /* FENCED shares RLock's release: loaded once. */
            if (calls[i] == NULL || calls[i]->sha[0] != '\0')
                continue;
            load_script(calls[i]->script, calls[i]->sha, sizeof(calls[i]->sha));
            for (int a = 0; a < MAX_CALL_ARGS; a++)
                calls[i]->clock |= calls[i]->argv[a] == ARG_NOW;
        }
    }
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        fatal("getrandom: %s", strerror(errno));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(
        owner_uuid, sizeof(owner_uuid),
        "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
        b[11], b[12], b[13], b[14], b[15]);
}

/* Redis's integer reply to one command on one key. */
static long long redis_key_command(const char *verb, const char *key)
{
    redisReply *r = redis_sync_command("%s %s", verb, key);
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    if (n < 0)
        fatal("redis %s %s: not an integer reply", verb, key);
    return n;
}

/* A counter the kind keeps (the semaphore's) must hold the scenario's
 * permits again once every pair is done; returns 1 if it does not. */
static int check_kept_count(const struct scenario *sc, const char *key)
{
    redisReply *r = redis_sync_command("GET %s", key);
    long long v =
        r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;

    freeReplyObject(r);
    if (v == sc->permits)
        return 0;
    fprintf(stderr,
            "rlockd-bench: %s: %s holds %lld permits after every release, "
            "not %d\n",
            sc->title, key, v, sc->permits);
    return 1;
}

/* Every pair ended with a release that reported the lock released, so no
 * key of a finished scenario's names may remain in Redis but the one its
 * kind keeps by design (FENCED's token counter, the semaphore's count,
 * which are deleted here: the bench may run against a Redis that is not
 * its own). Returns how many do, and how many counts are wrong. */
static int count_leftover_locks(const struct scenario *sc)
{
    const enum call_arg *keys = sc->kind->released_keys;
    const char *kept;
    int leftover = 0;
    char key[256];

    for (int i = 0; i < scenario_names(sc); i++) {
        const struct client *cl = &sc->clients[i];

        for (int k = 0; k < call_arg_count(keys); k++) {
            const char *v = call_arg_value(cl, keys[k], key, sizeof(key));

            if (redis_key_command("EXISTS", v) != 0) {
                fprintf(stderr,
                        "rlockd-bench: %s: %s still in Redis after "
                        "its release\n",
                        sc->title, v);
                leftover++;
            }
        }
        if (sc->kind->kept_key == ARG_END)
            continue;
        kept = call_arg_value(cl, sc->kind->kept_key, key, sizeof(key));
        if (sc->kind->kept_is_count)
            leftover += check_kept_count(sc, kept);
        redis_key_command("DEL", kept);
    }
    return leftover;
}

static bool command_is(const char *name, size_t len, const char *which)
{
    return strlen(which) == len && strncmp(name, which, len) == 0;
}

/* From Redis INFO commandstats ("cmdstat_NAME:calls=N,..."): calls of
 * the two script commands, and of every other command but INFO (which the
 * bench itself sends). */
static void redis_command_calls(struct command_calls *c)
{
    redisReply *r = redis_sync_command("INFO commandstats");
    const char *p = r->str;

    memset(c, 0, sizeof(*c));
    while ((p = strstr(p, "cmdstat_")) != NULL) {
        const char *name = p + strlen("cmdstat_");
        const char *colon = strchr(name, ':');
        size_t len;
        long long calls;

        if (colon == NULL || strncmp(colon + 1, "calls=", 6) != 0)
            fatal("Redis INFO commandstats: cannot parse '%.40s'", p);
        len = (size_t)(colon - name);
        calls = strtoll(colon + 7, NULL, 10);
        if (command_is(name, len, "evalsha"))
            c->evalsha += calls;
        else if (command_is(name, len, "eval"))
            c->eval += calls;
        else if (!command_is(name, len, "info"))
            c->other += calls;
        p = colon;
    }
    freeReplyObject(r);
}

/* Every command but INFO, a script's own commands included. */
static long long command_calls_total(const struct command_calls *c)
{
    return c->evalsha + c->eval + c->other;
}

static long long command_calls_scripts(const struct command_calls *c)
{
    return c->evalsha + c->eval;
}

/* ---- a scenario's run, and what it cost Redis ---------------------- */

/* What Redis did between two readings of its CPU time and its command
 * calls. */
static void redis_cost_between(const struct cpu_snapshot *cpu_before,
                               const struct cpu_snapshot *cpu_after,
                               const struct command_calls *calls_before,
                               const struct command_calls *calls_after,
                               struct redis_cost *cost)
{
    double a = cpu_before->seconds[PROC_REDIS];
    double b = cpu_after->seconds[PROC_REDIS];

    cost->cpu_s = a >= 0 && b >= 0 ? b - a : -1;
    cost->commands =
        command_calls_total(calls_after) - command_calls_total(calls_before);
    cost->script_calls = command_calls_scripts(calls_after) -
                         command_calls_scripts(calls_before);
}

/* Runs the warm-up, the window and the drain. Redis's counters are read
 * around all three, not just the window: a pair that straddles the
 * window's edges costs Redis all the same, and the clients are idle
 * before the first request and after the last reply, so the whole run
 * counts every pair's work exactly once (sc->completed). Each INFO is
 * sent outside the CPU readings, so its own cost is left out. */
static void scenario_run(struct scenario *sc, int scenario_no)
{
    struct cpu_snapshot before, after;
    struct command_calls calls_before, calls_after;
    int64_t duration_ns = (int64_t)(opt.duration_s * NS_PER_SEC);

    scenario_connect(sc, scenario_no);
    redis_command_calls(&calls_before);
    cpu_snapshot_take(&before, opt.pids);
    sc->window_start = before.at + (int64_t)(opt.warmup_s * NS_PER_SEC);
    sc->window_end = sc->window_start + duration_ns;
    sc->running = sc->nclients;
    for (int i = 0; i < sc->nclients; i++)
        start_pair(&sc->clients[i]);
    scenario_loop(
        sc, all_finished, sc->window_end + DRAIN_TIMEOUT_NS,
        "requests still unanswered 10 s after the run ended (daemon hung?)");
    cpu_snapshot_take(&after, opt.pids);
    redis_command_calls(&calls_after);
    cpu_percent(&before, &after, sc->cpu_pct);
    redis_cost_between(&before, &after, &calls_before, &calls_after,
                       &sc->redis);
    samples_sort(&sc->pair_ns);
    samples_sort(&sc->acquire_ns);
    samples_sort(&sc->writer_wait_ns);
    if (sc->mode == HANDOFF)
        contended_summarize(sc);
    scenario_disconnect(sc);
    sc->ran = true;
}

/* ---- --skip-unsupported ------------------------------------------------ */

/* An -ERR reply: the request is wrong (docs/protocol.md), which is what
 * an rlockd answers a command or a kind word it does not know. */
static bool is_request_error(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ERR", 3) == 0 &&
           (r->str[3] == ' ' || r->str[3] == '\0');
}

/*
 * Whether the rlockd refuses this scenario's requests, as an rlockd
 * older than its kind does: one synchronous connection sends what a
 * client would (set-up, acquire, release) on a name of its own. An -ERR
 * reply leaves the reason in sc->skipped; any other reply is left for
 * the run itself to judge. The probe's keys are deleted after it.
 */
static bool rlockd_refuses(struct scenario *sc, int scenario_no)
{
    struct client probe = {.sc = sc};
    struct command set_up = {NULL, 0};
    const struct command *cmds[3];
    size_t len;
    int n = 0;
    redisContext *ctx;
    char key[256];

    client_name(&probe, scenario_no);
    len = strlen(probe.name);
    snprintf(probe.name + len, sizeof(probe.name) - len, ":probe");
    client_prepare(&probe);
    if (probe.kind->set_up != NULL) {
        set_up_format(&probe, &set_up);
        cmds[n++] = &set_up;
    }
    cmds[n++] = &probe.acquire;
    cmds[n++] = &probe.release;
    ctx = redisConnect(opt.rlockd_host, opt.rlockd_port);
    if (ctx == NULL || ctx->err)
        fatal("connect to rlockd %s:%d: %s", opt.rlockd_host, opt.rlockd_port,
              ctx ? ctx->errstr : "out of memory");
    for (int i = 0; i < n && sc->skipped[0] == '\0'; i++) {
        redisReply *r = NULL;

        if (redisAppendFormattedCommand(ctx, cmds[i]->text,
                                        (size_t)cmds[i]->len) != REDIS_OK ||
            redisGetReply(ctx, (void **)&r) != REDIS_OK)
            fatal("rlockd %s:%d: %s", opt.rlockd_host, opt.rlockd_port,
                  ctx->errstr);
        if (is_request_error(r))
            snprintf(sc->skipped, sizeof(sc->skipped), "rlockd answered -%s",
                     r->str);
        freeReplyObject(r);
    }
    redisFree(ctx);
    for (int k = 0; k < call_arg_count(probe.kind->released_keys); k++)
        redis_key_command("DEL",
                          call_arg_value(&probe, probe.kind->released_keys[k],
                                         key, sizeof(key)));
    if (probe.kind->kept_key != ARG_END)
        redis_key_command("DEL", call_arg_value(&probe, probe.kind->kept_key,
                                                key, sizeof(key)));
    redisFreeCommand(set_up.text);
    redisFreeCommand(probe.acquire.text);
    redisFreeCommand(probe.release.text);
    return sc->skipped[0] != '\0';
}

/* ---- held locks --------------------------------------------------------- */

/*
 * The held case measures what holding many locks costs, not how fast
 * pairs go. --held-clients connections (each its own client-id) take
 * --held N distinct watchdog-mode locks with pipelined LOCKs and hold
 * them for a window of --held-window seconds, in which the bench sends
 * nothing and rlockd's watchdog is the only thing talking to Redis; then
 * pipelined UNLOCKs release them all. Over the window it reads Redis's
 * EVALSHA count (INFO commandstats) and rlockd's watchdog_renewals and
 * watchdog_batches (INFO); before and during the hold, rlockd's VmRSS and
 * Redis's used_memory; after the release, rlockd's held_locks and every
 * lock key in Redis. The renewal rate scales with 1/watchdog_timeout_ms,
 * so run.sh gives this scenario an rlockd of its own with a short
 * watchdog, and the report scales the measured rate to the default,
 * saying which figure is measured and which derived. The rlockd must be
 * fresh for the memory figure too: its allocator keeps what the released
 * locks freed and reuses it, so a second run against the same process
 * shows next to nothing per lock.
 *
 * Redis 7 counts the commands a script runs in INFO commandstats as well
 * as the EVALSHA itself: those beside the EVALSHAs are the renewal
 * scripts' own (the shape check and PEXPIRE of each lock), reported per
 * renewal; nothing else talks to this Redis meanwhile.
 */

struct held_result {
    bool ran;
    long long watchdog_ms; /* the held-locks rlockd's watchdog_timeout_ms */
    double acquire_s;      /* first LOCK sent to the last +OK */
    double release_s;      /* first UNLOCK sent to the last :1 */
    double acquire_cpu_pct[PROC_COUNT]; /* bench, Redis, this rlockd */
    double release_cpu_pct[PROC_COUNT];
    double window_s;
    /* over the window */
    long long evalsha_calls; /* Redis */
    long long inner_calls;   /* Redis: all but EVALSHA and INFO */
    long long renewals;      /* rlockd watchdog_renewals */
    long long batches;       /* rlockd watchdog_batches */
    double rlockd_cpu_pct;   /* of one core; < 0 unknown */
    double redis_cpu_pct;
    /* memory; < 0 unknown */
    long rss_before_kb;   /* before the first LOCK */
    long rss_holding_kb;  /* at the end of the window */
    long rss_released_kb; /* after the release */
    long long redis_mem_before;
    long long redis_mem_holding;
    /* checks */
    long long lost;        /* rlockd locks_lost, first LOCK to release */
    long existing_holding; /* lock keys in Redis at the end of the window */
    long existing_after;   /* lock keys in Redis after the release */
    long long held_after;  /* rlockd held_locks after the release */
    double settle_s;       /* last UNLOCK reply to held_locks:0 */
};

/* Counters read at each end of the window. */
struct held_counters {
    int64_t at;
    struct command_calls redis;
    long long renewals;
    long long batches;
    double rlockd_cpu_s;
    double redis_cpu_s;
};

static redisContext *held_sync; /* to the held-locks rlockd, for INFO */

static void held_name(char *buf, size_t size, long i)
{
    snprintf(buf, size, "rlockd-bench:%d:held:%ld", (int)getpid(), i);
}

/* The integer value of "key:value" in an INFO text; -1 if absent. */
static long long info_value(const char *text, const char *key)
{
    size_t len = strlen(key);

    for (const char *p = text; (p = strstr(p, key)) != NULL; p += len)
        if ((p == text || p[-1] == '\n') && p[len] == ':')
            return strtoll(p + len + 1, NULL, 10);
    return -1;
}

static redisReply *rlockd_info_fetch(void)
{
    redisReply *r = sync_reply_checked(
        held_sync, "rlockd", opt.held_rlockd_host, opt.held_rlockd_port,
        redisCommand(held_sync, "INFO"));

    if (r->type != REDIS_REPLY_STRING)
        fatal("rlockd INFO: unexpected reply type %d", r->type);
    return r;
}

static long long rlockd_info_field(const redisReply *info, const char *key)
{
    long long v = info_value(info->str, key);

    if (v < 0)
        fatal("rlockd INFO has no %s", key);
    return v;
}

static long long rlockd_info(const char *key)
{
    redisReply *info = rlockd_info_fetch();
    long long v = rlockd_info_field(info, key);

    freeReplyObject(info);
    return v;
}

static long long redis_used_memory(void)
{
    redisReply *r = redis_sync_command("INFO memory");
    long long v = info_value(r->str, "used_memory");

    freeReplyObject(r);
    if (v < 0)
        fatal("Redis INFO memory has no used_memory");
    return v;
}

static void held_counters_take(struct held_counters *c)
{
    redisReply *info;

    c->at = now_ns();
    redis_command_calls(&c->redis);
    info = rlockd_info_fetch();
    c->renewals = rlockd_info_field(info, "watchdog_renewals");
    c->batches = rlockd_info_field(info, "watchdog_batches");
    freeReplyObject(info);
    c->rlockd_cpu_s = process_cpu_seconds(opt.held_rlockd_pid);
    c->redis_cpu_s = process_cpu_seconds(opt.pids[PROC_REDIS]);
}

static double cpu_pct_between(double a, double b, double wall_s)
{
    return a >= 0 && b >= 0 && wall_s > 0 ? 100.0 * (b - a) / wall_s : -1;
}

/* How many of the n held-lock keys exist in Redis, EXISTS_CHUNK names to
 * a call: exact, not sampled. */
static long count_existing_held(long n)
{
    static char names[EXISTS_CHUNK][64];
    const char *argv[EXISTS_CHUNK + 1];
    size_t len[EXISTS_CHUNK + 1];
    long existing = 0;

    argv[0] = "EXISTS";
    len[0] = strlen(argv[0]);
    for (long first = 0; first < n; first += EXISTS_CHUNK) {
        int count = n - first < EXISTS_CHUNK ? (int)(n - first) : EXISTS_CHUNK;
        redisReply *r;

        for (int i = 0; i < count; i++) {
            held_name(names[i], sizeof(names[i]), first + i);
            argv[i + 1] = names[i];
            len[i + 1] = strlen(names[i]);
        }
        r = sync_reply_checked(
            redis_sync, "redis", opt.redis_host, opt.redis_port,
            redisCommandArgv(redis_sync, count + 1, argv, len));
        if (r->type != REDIS_REPLY_INTEGER)
            fatal("EXISTS: unexpected reply type %d", r->type);
        existing += (long)r->integer;
        freeReplyObject(r);
    }
    return existing;
}

static void held_send(struct client *cl);

/* Replies come in request order, so this one is for lock held_done. */
static void on_held_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct client *cl = privdata;
    struct scenario *sc = cl->sc;

    (void)ac;
    held_name(cl->name, sizeof(cl->name), cl->held_first + cl->held_done);
    if (sc->phase == HELD_LOCK)
        expect_status(cl, "LOCK", reply, "OK");
    else
        expect_integer(cl, "UNLOCK", reply, 1);
    cl->held_done++;
    sc->ops++;
    if (cl->held_first + cl->held_sent < cl->held_end)
        held_send(cl);
    else if (cl->held_done == cl->held_sent)
        sc->running--;
}

/* Queues this connection's next LOCK or UNLOCK; scenario_loop writes
 * whatever is queued once per turn, so a pipeline costs few syscalls. */
static void held_send(struct client *cl)
{
    const char *verb = cl->sc->phase == HELD_LOCK ? "LOCK" : "UNLOCK";
    char name[64];

    held_name(name, sizeof(name), cl->held_first + cl->held_sent);
    if (redisAsyncCommand(cl->ac, on_held_reply, cl, "%s %s %d", verb, name,
                          cl->index + 1) != REDIS_OK)
        fatal("%s: client %d: cannot queue a request: %s", cl->sc->title,
              cl->index, cl->ac->errstr);
    cl->held_sent++;
}

static bool held_all_answered(const struct scenario *sc)
{
    return sc->running == 0;
}

/* Sends every connection's LOCKs (or UNLOCKs), HELD_PIPELINE in flight
 * per connection, until all are answered; returns the seconds that took
 * and leaves the CPU each process used meanwhile in cpu_pct. */
static double held_phase(struct scenario *sc, enum held_phase phase,
                         double *cpu_pct)
{
    const pid_t pids[PROC_COUNT] = {opt.pids[PROC_BENCH], opt.pids[PROC_REDIS],
                                    opt.held_rlockd_pid};
    struct cpu_snapshot before, after;
    int64_t start;

    cpu_snapshot_take(&before, pids);
    start = before.at;

    sc->phase = phase;
    sc->running = 0;
    sc->ops = 0;
    for (int i = 0; i < sc->nclients; i++) {
        struct client *cl = &sc->clients[i];

        cl->held_sent = cl->held_done = 0;
        if (cl->held_first == cl->held_end)
            continue;
        sc->running++;
        while (cl->held_first + cl->held_sent < cl->held_end &&
               cl->held_sent < HELD_PIPELINE)
            held_send(cl);
    }
    scenario_loop(sc, held_all_answered, start + HELD_PHASE_TIMEOUT_NS,
                  phase == HELD_LOCK
                      ? "LOCKs still unanswered 60 s after the first"
                      : "UNLOCKs still unanswered 60 s after the first");
    cpu_snapshot_take(&after, pids);
    cpu_percent(&before, &after, cpu_pct);
    return (double)(after.at - start) / NS_PER_SEC;
}

/* Sleeps until `deadline` (CLOCK_MONOTONIC, ns). */
static void sleep_until(int64_t deadline)
{
    struct timespec ts = {.tv_sec = deadline / NS_PER_SEC,
                          .tv_nsec = deadline % NS_PER_SEC};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Polls rlockd until it reports no held lock, for at most
 * HELD_SETTLE_TIMEOUT_NS; the UNLOCK replies have all come back, so
 * anything left is a hold rlockd forgot to drop. */
static void held_settle(struct held_result *res)
{
    int64_t start = now_ns();

    while ((res->held_after = rlockd_info("held_locks")) != 0 &&
           now_ns() - start < HELD_SETTLE_TIMEOUT_NS)
        sleep_until(now_ns() + NS_PER_SEC / 100);
    res->settle_s = (double)(now_ns() - start) / NS_PER_SEC;
}

static void held_connect(struct scenario *sc)
{
    held_sync = redisConnect(opt.held_rlockd_host, opt.held_rlockd_port);
    if (held_sync == NULL || held_sync->err)
        fatal("connect to rlockd %s:%d: %s", opt.held_rlockd_host,
              opt.held_rlockd_port,
              held_sync ? held_sync->errstr : "out of memory");
    if (rlockd_info("held_locks") != 0)
        fatal("%s: rlockd %s:%d already holds locks; its memory and "
              "renewal figures would not be this scenario's",
              sc->title, opt.held_rlockd_host, opt.held_rlockd_port);
    scenario_connect(sc, 0);
    /* Each connection its own contiguous share of the names. */
    for (int i = 0; i < sc->nclients; i++) {
        sc->clients[i].held_first = opt.held * i / sc->nclients;
        sc->clients[i].held_end = opt.held * (i + 1) / sc->nclients;
    }
}

/* Holds the locks for the window. Only held_locks is checked first:
 * watchdog_locks leaves out the holds whose renewal is in flight. */
static void held_hold_window(struct scenario *sc, struct held_result *res)
{
    struct held_counters a, b;
    long long held = rlockd_info("held_locks");

    if (held != opt.held)
        fatal("%s: %ld LOCKs answered +OK, but rlockd reports "
              "held_locks:%lld",
              sc->title, opt.held, held);
    held_counters_take(&a);
    sleep_until(a.at + (int64_t)(opt.held_window_s * NS_PER_SEC));
    held_counters_take(&b);
    res->window_s = (double)(b.at - a.at) / NS_PER_SEC;
    res->evalsha_calls = b.redis.evalsha - a.redis.evalsha;
    res->inner_calls = command_calls_total(&b.redis) -
                       command_calls_total(&a.redis) - res->evalsha_calls;
    res->renewals = b.renewals - a.renewals;
    res->batches = b.batches - a.batches;
    res->rlockd_cpu_pct =
        cpu_pct_between(a.rlockd_cpu_s, b.rlockd_cpu_s, res->window_s);
    res->redis_cpu_pct =
        cpu_pct_between(a.redis_cpu_s, b.redis_cpu_s, res->window_s);
}

/* Runs the held-locks scenario; returns how many problems it found
 * (locks that expired while held, keys or holds left after the release),
 * each already described on stderr. */
static int held_run(struct scenario *sc, struct held_result *res)
{
    long long lost_before;
    int problems = 0;

    held_connect(sc);
    res->watchdog_ms = rlockd_info("watchdog_timeout_ms");
    lost_before = rlockd_info("locks_lost");
    res->rss_before_kb = process_rss_kb(opt.held_rlockd_pid);
    res->redis_mem_before = redis_used_memory();

    res->acquire_s = held_phase(sc, HELD_LOCK, res->acquire_cpu_pct);
    held_hold_window(sc, res);
    res->rss_holding_kb = process_rss_kb(opt.held_rlockd_pid);
    res->redis_mem_holding = redis_used_memory();
    res->existing_holding = count_existing_held(opt.held);

    res->release_s = held_phase(sc, HELD_UNLOCK, res->release_cpu_pct);
    held_settle(res);
    res->existing_after = count_existing_held(opt.held);
    res->rss_released_kb = process_rss_kb(opt.held_rlockd_pid);
    res->lost = rlockd_info("locks_lost") - lost_before;
    scenario_disconnect(sc);
    redisFree(held_sync);
    held_sync = NULL;
    res->ran = true;

    if (res->existing_holding != opt.held || res->lost != 0) {
        fprintf(stderr,
                "rlockd-bench: %s: %ld of %ld lock keys were in Redis at "
                "the end of the window (owners connected); rlockd counted "
                "%lld lost\n",
                sc->title, res->existing_holding, opt.held, res->lost);
        problems++;
    }
    if (res->held_after != 0) {
        fprintf(stderr,
                "rlockd-bench: %s: rlockd still reports held_locks:%lld "
                "%.1f s after the last UNLOCK reply\n",
                sc->title, res->held_after, res->settle_s);
        problems++;
    }
    if (res->existing_after != 0) {
        fprintf(stderr,
                "rlockd-bench: %s: %ld lock keys still in Redis after "
                "their release\n",
                sc->title, res->existing_after);
        problems++;
    }
    return problems;
}

/* ---- report ------------------------------------------------------------- */

static double per_second(const struct scenario *sc)
{
    return (double)sc->ops / opt.duration_s;
}

static double p50_us(const struct samples *s)
{
    return samples_percentile_us(s, 50);
}

static double p99_us(const struct samples *s)
{
    return samples_percentile_us(s, 99);
}

/* "bench/redis/rlockd" CPU percentages, "-" where unknown. */
static void format_cpu(const double *pct, char *buf, size_t size)
{
    size_t used = 0;

    for (int p = 0; p < PROC_COUNT && used < size; p++) {
        const char *sep = p ? "/" : "";

        if (pct[p] < 0)
            used += (size_t)snprintf(buf + used, size - used, "%s-", sep);
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%.0f", sep,
                                     pct[p]);
    }
}

/* A figure as the printouts show it: whole above 100, one decimal below
 * (a few commands per pair differ in the tenths), "-" if unknown. */
static const char *format_figure(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, fabs(v) >= 100 ? "%.0f" : "%.1f", v);
    return buf;
}

/* a / b, NAN unless both are known and b is positive. */
static double ratio(double a, double b)
{
    return isnan(a) || isnan(b) || b <= 0 ? NAN : a / b;
}

/* What a pair (HANDOFF: a grant) cost Redis, over the whole run, so that
 * the direct and rlockd sides are weighed by the same work: the window's
 * rate says how fast, this says how much of the shared server each pair
 * takes. NAN where unknown. */
struct redis_per_pair {
    double cpu_us;
    double commands;
    double script_calls;
};

static struct redis_per_pair redis_per_pair(const struct scenario *sc)
{
    double pairs = sc->completed > 0 ? (double)sc->completed : NAN;
    struct redis_per_pair r;

    r.cpu_us = sc->redis.cpu_s >= 0 ? sc->redis.cpu_s * 1e6 / pairs : NAN;
    r.commands = (double)sc->redis.commands / pairs;
    r.script_calls = (double)sc->redis.script_calls / pairs;
    return r;
}

static void print_table(const struct scenario *scs, int count)
{
    printf("\n%-84s%s\n", "", "Redis per pair, whole run:");
    printf("%-43s %7s %10s %9s %9s  %8s %9s %9s  %s\n", "scenario", "clients",
           "ops/s", "p50 us", "p99 us", "CPU us", "commands", "scripts",
           "CPU% bench/redis/rlockd");
    for (int i = 0; i < count; i++) {
        const struct scenario *sc = &scs[i];
        struct redis_per_pair r;
        char cpu[48], cpu_us[16], commands[16], scripts[16];

        if (sc->skipped[0] != '\0')
            printf("%-43s %7d   skipped: %s\n", sc->title, sc->nclients,
                   sc->skipped);
        if (!sc->ran)
            continue;
        format_cpu(sc->cpu_pct, cpu, sizeof(cpu));
        r = redis_per_pair(sc);
        printf("%-43s %7d %10.0f %9.1f %9.1f  %8s %9s %9s  %s\n", sc->title,
               sc->nclients, per_second(sc), p50_us(&sc->pair_ns),
               p99_us(&sc->pair_ns),
               format_figure(r.cpu_us, cpu_us, sizeof(cpu_us)),
               format_figure(r.commands, commands, sizeof(commands)),
               format_figure(r.script_calls, scripts, sizeof(scripts)), cpu);
    }
    printf("ops: lock+unlock pairs, ACQUIRE+RELEASE for a semaphore (one\n"
           "name: acquisitions), in the window. Latency: LOCK sent to UNLOCK\n"
           "reply. Redis per pair: its CPU time, its commands (INFO excepted;\n"
           "Redis 7 counts a script's own commands beside the EVALSHA) and\n"
           "its script calls (EVALSHA, EVAL) over the whole run, warm-up and\n"
           "drain included, over the pairs (one name: acquisitions) it\n"
           "completed. CPU: %% of one core during the scenario.\n");
}

/* The Redis-per-pair line of a contended printout; `per` says what a
 * pair is there. */
static void print_redis_per_pair(const struct scenario *sc, const char *per)
{
    struct redis_per_pair r = redis_per_pair(sc);
    char label[32], cpu_us[16];

    snprintf(label, sizeof(label), "Redis per %s", per);
    printf("  %-25s CPU %s us, %.1f commands, %.1f script calls "
           "(whole run)\n",
           label, format_figure(r.cpu_us, cpu_us, sizeof(cpu_us)), r.commands,
           r.script_calls);
}

static const char *kind_word(const struct lock_kind *k)
{
    return k->word != NULL ? k->word : "";
}

/* The space after a kind word in a title, none without one. */
static const char *kind_space(const struct lock_kind *k)
{
    return k->word != NULL ? " " : "";
}

/* Fewest and most acquisitions of clients [first, nclients). */
static void acquisitions_range(const struct scenario *sc, int first,
                               uint64_t *min, uint64_t *max)
{
    *min = UINT64_MAX;
    *max = 0;
    for (int i = first; i < sc->nclients; i++) {
        uint64_t a = sc->clients[i].acquisitions;

        *min = a < *min ? a : *min;
        *max = a > *max ? a : *max;
    }
}

static void print_contended(const struct scenario *sc)
{
    uint64_t min, max;
    const struct samples *h = &sc->handoff_ns;

    acquisitions_range(sc, 0, &min, &max);
    if (sc->kind->set_up != NULL)
        printf("\ncontended: %d clients on one %s of %d permits through "
               "rlockd\n",
               sc->nclients, kind_word(sc->kind), sc->permits);
    else
        printf("\ncontended: %d clients on one %s%slock through rlockd\n",
               sc->nclients, kind_word(sc->kind), kind_space(sc->kind));
    printf("  acquisitions/s            %.0f\n", per_second(sc));
    print_redis_per_pair(sc, "acquisition");
    printf("  handoff, %s reply to the next waiting client's +OK:\n"
           "                            p50 %.1f us, p99 %.1f us "
           "(min %.1f, max %.1f; %zu handoffs)\n",
           release_verb(sc->kind), p50_us(h), p99_us(h),
           samples_percentile_us(h, 0), samples_percentile_us(h, 100), h->n);
    printf("  re-acquired at once by the client that had released: %llu\n",
           (unsigned long long)sc->regrants);
    if (sc->permits > 1)
        printf("  granted to a client that asked after the release, ahead "
               "of the\n  waiting ones (not a hand-off): %llu\n",
               (unsigned long long)sc->unwaited);
    printf("  acquisitions per client   min %llu, max %llu\n",
           (unsigned long long)min, (unsigned long long)max);
}

/* The READERS_WRITER figures both printouts use. */
struct readers_writer_figures {
    double writer_per_s;
    double readers_per_s; /* all readers together */
};

static struct readers_writer_figures
readers_writer_figures(const struct scenario *sc)
{
    struct readers_writer_figures f = {0, 0};

    for (int i = 0; i < sc->nclients; i++) {
        double a = (double)sc->clients[i].acquisitions / opt.duration_s;

        if (i == WRITER_INDEX)
            f.writer_per_s += a;
        else
            f.readers_per_s += a;
    }
    return f;
}

static void print_readers_writer(const struct scenario *sc)
{
    struct readers_writer_figures f = readers_writer_figures(sc);
    const struct samples *w = &sc->writer_wait_ns;
    uint64_t min, max;

    acquisitions_range(sc, WRITER_INDEX + 1, &min, &max);
    printf("\ncontended: 1 WRITE client among %d READ clients on one name "
           "through rlockd\n",
           sc->nclients - 1);
    printf("  writer acquisitions/s     %.0f\n", f.writer_per_s);
    printf("  writer's wait, LOCK sent to +OK:\n"
           "                            p50 %.1f us, p99 %.1f us "
           "(min %.1f, max %.1f; %zu grants)\n",
           p50_us(w), p99_us(w), samples_percentile_us(w, 0),
           samples_percentile_us(w, 100), w->n);
    printf("  reader acquisitions/s     %.0f (all readers; per reader min "
           "%llu, max %llu in the window)\n",
           f.readers_per_s, (unsigned long long)min, (unsigned long long)max);
    print_redis_per_pair(sc, "acquisition");
}

/* The held-locks figures both printouts use; which are measured and which
 * derived is said where they are printed. */
struct held_figures {
    double interval_ms;         /* renewal period: a third of the watchdog */
    double calls_per_s;         /* measured: EVALSHA in Redis */
    double renewals_per_s;      /* measured: watchdog_renewals */
    double renewals_per_call;   /* measured */
    double scale;               /* measured watchdog / the default */
    double default_calls_per_s; /* derived */
    double rss_bytes_per_lock;  /* NAN if rlockd's pid is unknown */
    double redis_bytes_per_lock;
    double acquire_per_s;
    double release_per_s;
    bool clean; /* nothing held or left after the release */
};

static struct held_figures held_figures(const struct held_result *h)
{
    struct held_figures f;
    double n = (double)opt.held;

    f.interval_ms = (double)h->watchdog_ms / 3.0;
    f.calls_per_s = (double)h->evalsha_calls / h->window_s;
    f.renewals_per_s = (double)h->renewals / h->window_s;
    f.renewals_per_call =
        h->batches > 0 ? (double)h->renewals / (double)h->batches : NAN;
    f.scale = (double)h->watchdog_ms / DEFAULT_WATCHDOG_MS;
    f.default_calls_per_s = f.calls_per_s * f.scale;
    f.rss_bytes_per_lock =
        h->rss_before_kb >= 0 && h->rss_holding_kb >= 0
            ? (double)(h->rss_holding_kb - h->rss_before_kb) * 1024.0 / n
            : NAN;
    f.redis_bytes_per_lock =
        (double)(h->redis_mem_holding - h->redis_mem_before) / n;
    f.acquire_per_s = n / h->acquire_s;
    f.release_per_s = n / h->release_s;
    f.clean = h->held_after == 0 && h->existing_after == 0;
    return f;
}

static double mib(long kb)
{
    return (double)kb / 1024.0;
}

static void print_held_memory(const struct held_result *h,
                              const struct held_figures *f)
{
    if (isnan(f->rss_bytes_per_lock))
        printf("  rlockd VmRSS              unknown (no --held-rlockd-pid)\n");
    else
        printf("  rlockd VmRSS              %.1f MiB before, %.1f MiB "
               "holding: %.0f bytes per held lock\n"
               "                            (%.1f MiB after the release)\n",
               mib(h->rss_before_kb), mib(h->rss_holding_kb),
               f->rss_bytes_per_lock, mib(h->rss_released_kb));
    printf("  Redis used_memory         %+.1f MiB holding: %.0f bytes per "
           "lock\n",
           (double)(h->redis_mem_holding - h->redis_mem_before) / 1048576.0,
           f->redis_bytes_per_lock);
}

static void print_held(const struct held_result *h)
{
    struct held_figures f = held_figures(h);
    double held_s = h->acquire_s + h->window_s;
    char acquire_cpu[48], release_cpu[48];

    format_cpu(h->acquire_cpu_pct, acquire_cpu, sizeof(acquire_cpu));
    format_cpu(h->release_cpu_pct, release_cpu, sizeof(release_cpu));
    printf("\nheld: %ld watchdog-mode locks through rlockd, %d connections, "
           "LOCK and UNLOCK pipelined %d deep\n",
           opt.held, opt.held_clients, HELD_PIPELINE);
    printf("  rlockd watchdog_timeout_ms %lld: a renewal every %.0f ms\n",
           h->watchdog_ms, f.interval_ms);
    printf("  acquire all               %.2f s, %.0f acquisitions/s "
           "(CPU%% bench/redis/rlockd %s)\n",
           h->acquire_s, f.acquire_per_s, acquire_cpu);
    printf("  window                    %.2f s holding them; the bench sends "
           "nothing meanwhile\n",
           h->window_s);
    printf("  Redis, over the window    %lld EVALSHA; inside them %lld "
           "commands, %.1f per renewal\n",
           h->evalsha_calls, h->inner_calls,
           h->renewals > 0 ? (double)h->inner_calls / (double)h->renewals
                           : 0.0);
    printf("  rlockd, over the window   watchdog_batches %lld, "
           "watchdog_renewals %lld\n",
           h->batches, h->renewals);
    printf("  MEASURED at %5lld ms      %.0f renewal calls/s (EVALSHA in "
           "Redis), %.0f renewals/s,\n"
           "                            %.1f renewals per call\n",
           h->watchdog_ms, f.calls_per_s, f.renewals_per_s,
           f.renewals_per_call);
    printf("  DERIVED for %5d ms      %.0f renewal calls/s, %.0f renewals/s "
           "(measured x %lld/%d:\n"
           "                            the rate scales with "
           "1/watchdog_timeout_ms)\n",
           DEFAULT_WATCHDOG_MS, f.default_calls_per_s,
           f.renewals_per_s * f.scale, h->watchdog_ms, DEFAULT_WATCHDOG_MS);
    printf("  CPU while holding         rlockd %.0f%%, Redis %.0f%% of one "
           "core (measured at %lld ms)\n",
           h->rlockd_cpu_pct, h->redis_cpu_pct, h->watchdog_ms);
    print_held_memory(h, &f);
    printf("  in Redis after the window %ld of %ld lock keys (held %.1f s, "
           "TTL %.1f s); rlockd locks_lost %+lld\n",
           h->existing_holding, opt.held, held_s,
           (double)h->watchdog_ms / 1000.0, h->lost);
    printf("  release all               %.2f s, %.0f releases/s "
           "(CPU%% bench/redis/rlockd %s)\n",
           h->release_s, f.release_per_s, release_cpu);
    printf("  after the release         rlockd held_locks %lld (%.2f s after "
           "the last reply); %ld of %ld lock keys left in Redis\n",
           h->held_after, h->settle_s, h->existing_after, opt.held);
    if (h->window_s * 1000.0 < 2 * f.interval_ms)
        printf("  note: the window is shorter than two renewal periods; "
               "the renewal rate is rough\n");
}

static void print_markdown_held(const struct held_result *h)
{
    struct held_figures f = held_figures(h);

    printf("\n| Held locks: %ld in watchdog mode, %d connections | "
           "Figure |\n",
           opt.held, opt.held_clients);
    printf("|---|---:|\n");
    printf("| Acquire all, pipelined LOCK (measured) | %.1f s (%.0f/s) |\n",
           h->acquire_s, f.acquire_per_s);
    printf("| Renewal calls to Redis at watchdog %lld ms (measured) | "
           "%.0f/s |\n",
           h->watchdog_ms, f.calls_per_s);
    printf("| Renewals per call (measured) | %.1f |\n", f.renewals_per_call);
    printf("| Renewal calls to Redis at watchdog %d ms (derived: measured "
           "× %lld/%d) | %.0f/s |\n",
           DEFAULT_WATCHDOG_MS, h->watchdog_ms, DEFAULT_WATCHDOG_MS,
           f.default_calls_per_s);
    printf("| rlockd CPU while holding, watchdog %lld ms (measured) | "
           "%.0f%% of a core |\n",
           h->watchdog_ms, h->rlockd_cpu_pct);
    if (isnan(f.rss_bytes_per_lock))
        printf("| rlockd memory per held lock (VmRSS) | unknown (no pid) |\n");
    else
        printf("| rlockd memory per held lock (VmRSS) | %.0f B |\n",
               f.rss_bytes_per_lock);
    printf("| Redis memory per lock (used_memory, for reference) | %.0f B |\n",
           f.redis_bytes_per_lock);
    printf("| Release all, pipelined UNLOCK (measured) | %.1f s (%.0f/s)%s |\n",
           h->release_s, f.release_per_s,
           f.clean ? "; nothing left" : "; LEFTOVERS, see above");
}

/* One of issue 15's targets: the ratio of two figures, and the bound it
 * should meet. Reported, never enforced: a shared 2-core machine's
 * timings are evidence, not a gate. */
struct goal {
    char what[80];      /* "64 clients: pairs/s, rlockd / direct" */
    double numerator;   /* NAN: unknown */
    double denominator; /* NAN: unknown */
    const char *unit;   /* of both, as the terminal writes it */
    double bound;
    bool at_least; /* the ratio should be >= bound; else <= */
};

enum goal_id {
    GOAL_PAIRS_RATE,     /* many clients uncontended */
    GOAL_REDIS_CPU,      /* many clients uncontended */
    GOAL_CONTENDED_RATE, /* one lock */
    GOAL_HANDOFF,        /* one lock */
    GOAL_ONE_CLIENT_P50,
    GOAL_COUNT
};

/* Issue 15's targets, computed once for both printouts. */
struct comparison {
    struct goal goal[GOAL_COUNT];
};

/*
 * scs: direct 1, rlockd 1, direct N, rlockd N, contended RLock (see
 * scenarios_plan). The contended lock is weighed against one client
 * alone straight on Redis: a broker that queues waiters and hands the lock
 * over itself should grant at least as often as one client can take and
 * drop it with Redisson's scripts, and hand it over in less than one
 * lock-script round trip (the 1-client direct acquire's p50), the least
 * a Redisson waiter pays to take a lock it was told is free.
 */
static struct comparison compare(const struct scenario *scs)
{
    const struct scenario *direct_1 = &scs[0], *rlockd_1 = &scs[1];
    const struct scenario *direct_n = &scs[2], *rlockd_n = &scs[3];
    const struct scenario *contended = &scs[4];
    struct comparison cmp = {
        .goal = {
            [GOAL_PAIRS_RATE] = {.numerator = per_second(rlockd_n),
                                 .denominator = per_second(direct_n),
                                 .unit = "pairs/s",
                                 .bound = 1.30,
                                 .at_least = true},
            [GOAL_REDIS_CPU] = {.numerator = redis_per_pair(rlockd_n).cpu_us,
                                .denominator = redis_per_pair(direct_n).cpu_us,
                                .unit = "us",
                                .bound = 0.25},
            [GOAL_CONTENDED_RATE] = {.numerator = per_second(contended),
                                     .denominator = per_second(direct_1),
                                     .unit = "/s",
                                     .bound = 1.00,
                                     .at_least = true},
            [GOAL_HANDOFF] = {.numerator = p50_us(&contended->handoff_ns),
                              .denominator = p50_us(&direct_1->acquire_ns),
                              .unit = "us",
                              .bound = 1.00},
            [GOAL_ONE_CLIENT_P50] = {.numerator = p50_us(&rlockd_1->pair_ns),
                                     .denominator = p50_us(&direct_1->pair_ns),
                                     .unit = "us",
                                     .bound = 2.00},
        }};
    struct goal *g = cmp.goal;

    snprintf(g[GOAL_PAIRS_RATE].what, sizeof(g->what),
             "%d clients: pairs/s, rlockd / direct", rlockd_n->nclients);
    snprintf(g[GOAL_REDIS_CPU].what, sizeof(g->what),
             "%d clients: Redis CPU per pair, rlockd / direct",
             rlockd_n->nclients);
    snprintf(g[GOAL_CONTENDED_RATE].what, sizeof(g->what),
             "%d clients on one lock: acquisitions/s / 1-client direct "
             "pairs/s",
             contended->nclients);
    snprintf(g[GOAL_HANDOFF].what, sizeof(g->what),
             "%d clients on one lock: hand-off p50 / lock-script RTT",
             contended->nclients);
    snprintf(g[GOAL_ONE_CLIENT_P50].what, sizeof(g->what),
             "1 client: p50, rlockd / direct");
    return cmp;
}

/* "0.93x", or "-" if unknown. */
static const char *format_ratio(double r, char *buf, size_t size)
{
    if (isnan(r))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.2fx", r);
    return buf;
}

static const char *goal_verdict(const struct goal *g)
{
    double r = ratio(g->numerator, g->denominator);

    if (isnan(r))
        return "UNKNOWN";
    return (g->at_least ? r >= g->bound : r <= g->bound) ? "MET" : "MISSED";
}

/* "0.93x (35012 / 37650 pairs/s; target >= 1.30x)", the figures in
 * `unit` (the markdown writes µs where the terminal writes us). */
static const char *format_goal(const struct goal *g, const char *unit,
                               char *buf, size_t size)
{
    char r[16], a[16], b[16];

    snprintf(buf, size, "%s (%s / %s %s; target %s %.2fx)",
             format_ratio(ratio(g->numerator, g->denominator), r, sizeof(r)),
             format_figure(g->numerator, a, sizeof(a)),
             format_figure(g->denominator, b, sizeof(b)), unit,
             g->at_least ? ">=" : "<=", g->bound);
    return buf;
}

static const char *markdown_unit(const char *unit)
{
    return strcmp(unit, "us") == 0 ? "µs" : unit;
}

static void print_targets(const struct comparison *cmp)
{
    char text[128];

    printf("\ntargets (issue 15; reported, not enforced):\n");
    for (int i = 0; i < GOAL_COUNT; i++) {
        const struct goal *g = &cmp->goal[i];

        printf("  %-64s %-48s %s\n", g->what,
               format_goal(g, g->unit, text, sizeof(text)), goal_verdict(g));
    }
    printf("lock-script RTT: one lock-script round trip, the p50 of the "
           "acquire\n(EVALSHA sent to its reply) of 1 client straight on "
           "Redis.\n");
}

/* The first markdown table's cells of a scenario, after its label; an
 * rlockd row also weighs its Redis CPU per pair against its direct
 * twin's (`direct`, NULL on a direct row). */
static void print_markdown_row(const struct scenario *sc, const char *what,
                               const struct scenario *direct)
{
    struct redis_per_pair r = redis_per_pair(sc);
    char cpu_us[16], commands[16], cpu_ratio[16] = "";

    if (direct != NULL)
        format_ratio(ratio(r.cpu_us, redis_per_pair(direct).cpu_us), cpu_ratio,
                     sizeof(cpu_ratio));
    printf("| %s | %d | %.0f | %.0f µs | %.0f µs | %s | %s | %s |\n", what,
           sc->nclients, per_second(sc), p50_us(&sc->pair_ns),
           p99_us(&sc->pair_ns),
           format_figure(r.cpu_us, cpu_us, sizeof(cpu_us)),
           format_figure(r.commands, commands, sizeof(commands)), cpu_ratio);
}

/* The scenario of `kind` with this target and mode that ran, NULL if
 * none; an uncontended one is the many-clients case. */
static const struct scenario *find_scenario(const struct scenario *scs,
                                            int count,
                                            const struct lock_kind *kind,
                                            enum target target,
                                            enum contention mode)
{
    for (int i = 0; i < count; i++) {
        const struct scenario *sc = &scs[i];

        if (sc->ran && sc->kind == kind && sc->target == target &&
            sc->mode == mode &&
            (mode != UNCONTENDED || sc->nclients == opt.clients))
            return sc;
    }
    return NULL;
}

/* Every kind's many-clients pairs, direct beside rlockd. */
static void print_markdown_kinds(const struct scenario *scs, int count)
{
    printf("\n| Lock+unlock pairs (SEMAPHORE: ACQUIRE+RELEASE, 1 permit), "
           "%d clients on names of their own | "
           "Redis direct (Redisson scripts) | through rlockd | "
           "rlockd / direct | p50 direct / rlockd | p99 direct / rlockd | "
           "Redis CPU µs/pair direct / rlockd | "
           "Redis CPU/pair rlockd / direct | "
           "Redis commands/pair direct / rlockd |\n",
           opt.clients);
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < KIND_COUNT; k++) {
        const struct scenario *d =
            find_scenario(scs, count, &kinds[k], TARGET_DIRECT, UNCONTENDED);
        const struct scenario *r =
            find_scenario(scs, count, &kinds[k], TARGET_RLOCKD, UNCONTENDED);
        struct redis_per_pair rd, rr;
        char cpu_d[16], cpu_r[16], cpu_ratio[16], cmd_d[16], cmd_r[16];

        if (d == NULL || r == NULL)
            continue;
        rd = redis_per_pair(d);
        rr = redis_per_pair(r);
        printf("| %s | %.0f/s | %.0f/s | %.2fx | %.0f / %.0f µs | "
               "%.0f / %.0f µs | %s / %s | %s | %s / %s |\n",
               kinds[k].label, per_second(d), per_second(r),
               per_second(r) / per_second(d), p50_us(&d->pair_ns),
               p50_us(&r->pair_ns), p99_us(&d->pair_ns), p99_us(&r->pair_ns),
               format_figure(rd.cpu_us, cpu_d, sizeof(cpu_d)),
               format_figure(rr.cpu_us, cpu_r, sizeof(cpu_r)),
               format_ratio(ratio(rr.cpu_us, rd.cpu_us), cpu_ratio,
                            sizeof(cpu_ratio)),
               format_figure(rd.commands, cmd_d, sizeof(cmd_d)),
               format_figure(rr.commands, cmd_r, sizeof(cmd_r)));
    }
}

/* A contended row's last cells: what each acquisition cost Redis. */
static void print_markdown_redis_cells(const struct scenario *sc)
{
    struct redis_per_pair r = redis_per_pair(sc);
    char cpu_us[16], commands[16];

    printf("| %s | %s |\n", format_figure(r.cpu_us, cpu_us, sizeof(cpu_us)),
           format_figure(r.commands, commands, sizeof(commands)));
}

/* The contended scenarios, one row each. */
static void print_markdown_contended(const struct scenario *scs, int count)
{
    const struct scenario *rw = find_scenario(scs, count, &kinds[KIND_READ],
                                              TARGET_RLOCKD, READERS_WRITER);

    printf("\n| Contended, through rlockd, %d clients on one name | "
           "Acquisitions/s | p50 | p99 | Redis CPU µs/acquisition | "
           "Redis commands/acquisition |\n",
           opt.contended_clients);
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < KIND_COUNT; k++) {
        const struct scenario *sc =
            find_scenario(scs, count, &kinds[k], TARGET_RLOCKD, HANDOFF);

        if (sc == NULL)
            continue;
        if (sc->permits > 1)
            printf("| %s, %d permits: hand-off, %s reply to the next waiting "
                   "client's grant | %.0f | %.0f µs | %.0f µs ",
                   kinds[k].label, sc->permits, release_verb(sc->kind),
                   per_second(sc), p50_us(&sc->handoff_ns),
                   p99_us(&sc->handoff_ns));
        else
            printf("| %s: hand-off, UNLOCK reply to the next client's grant "
                   "| %.0f | %.0f µs | %.0f µs ",
                   kinds[k].label, per_second(sc), p50_us(&sc->handoff_ns),
                   p99_us(&sc->handoff_ns));
        print_markdown_redis_cells(sc);
    }
    if (rw != NULL) {
        struct readers_writer_figures f = readers_writer_figures(rw);

        printf("| 1 WRITE among %d READ: the writer's wait, LOCK sent to "
               "`+OK` | writer %.0f; readers %.0f | %.0f µs | %.0f µs ",
               rw->nclients - 1, f.writer_per_s, f.readers_per_s,
               p50_us(&rw->writer_wait_ns), p99_us(&rw->writer_wait_ns));
        print_markdown_redis_cells(rw);
    }
}

/* scs: direct 1, rlockd 1, direct N, rlockd N, contended, then the other
 * kinds' scenarios. */
static void print_markdown(const struct scenario *scs, int count,
                           const struct comparison *cmp,
                           const struct held_result *held)
{
    static const char direct[] = "Redis direct (Redisson scripts, EVALSHA)";
    char text[128];

    printf("\n---- markdown ----\n");
    printf("Measured with `make bench`: %.0f s per scenario, %ld CPUs, "
           "Redis and rlockd on loopback, closed-loop clients.\n\n",
           opt.duration_s, sysconf(_SC_NPROCESSORS_ONLN));
    printf("| Lock+unlock pairs | Clients | Pairs/s | p50 | p99 | "
           "Redis CPU µs/pair | Redis commands/pair | "
           "Redis CPU/pair rlockd / direct |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    print_markdown_row(&scs[0], direct, NULL);
    print_markdown_row(&scs[1], "through rlockd", &scs[0]);
    print_markdown_row(&scs[2], direct, NULL);
    print_markdown_row(&scs[3], "through rlockd", &scs[2]);
    printf("\nRedis per pair: over each whole run, warm-up and drain "
           "included; commands count those a script runs as well as the "
           "EVALSHA. Targets of issue 15, reported, not enforced (lock-script "
           "RTT: the 1-client direct acquire's p50):\n\n");
    for (int i = 0; i < GOAL_COUNT; i++) {
        const struct goal *g = &cmp->goal[i];

        printf("- %s: %s: %s.\n", g->what,
               format_goal(g, markdown_unit(g->unit), text, sizeof(text)),
               goal_verdict(g));
    }
    print_markdown_kinds(scs, count);
    print_markdown_contended(scs, count);
    if (held->ran)
        print_markdown_held(held);
    printf("---- end ----\n");
}

/* One --results line; NAN values (unknown figures) are left out. */
static void print_result(const char *scenario, const char *metric,
                         const char *better, double value)
{
    if (!isnan(value))
        printf("result\t%s\t%s\t%s\t%.1f\n", scenario, metric, better, value);
}

/* One scenario's figures, named as in its own printout. */
static void print_scenario_results(const struct scenario *sc, const char *name)
{
    const struct samples *w = &sc->writer_wait_ns;
    struct redis_per_pair redis = redis_per_pair(sc);
    struct readers_writer_figures f;

    switch (sc->mode) {
    case UNCONTENDED:
        print_result(name, "pairs/s", "higher", per_second(sc));
        print_result(name, "p50 us", "lower", p50_us(&sc->pair_ns));
        print_result(name, "p99 us", "lower", p99_us(&sc->pair_ns));
        break;
    case HANDOFF:
        print_result(name, "acquisitions/s", "higher", per_second(sc));
        print_result(name, "handoff p50 us", "lower", p50_us(&sc->handoff_ns));
        print_result(name, "handoff p99 us", "lower", p99_us(&sc->handoff_ns));
        break;
    case READERS_WRITER:
        f = readers_writer_figures(sc);
        print_result(name, "writer acquisitions/s", "higher", f.writer_per_s);
        print_result(name, "writer wait p50 us", "lower", p50_us(w));
        print_result(name, "writer wait p99 us", "lower", p99_us(w));
        print_result(name, "reader acquisitions/s", "higher", f.readers_per_s);
        break;
    }
    if (sc->target == TARGET_RLOCKD && sc->cpu_pct[PROC_RLOCKD] >= 0)
        print_result(name, "rlockd CPU%", "lower", sc->cpu_pct[PROC_RLOCKD]);
    print_result(name, "redis cpu us/pair", "lower", redis.cpu_us);
    print_result(name, "redis commands/pair", "lower", redis.commands);
    print_result(name, "script calls/pair", "lower", redis.script_calls);
}

/* The figures of every scenario that ran, one --results line each, for
 * bench/run.sh to compare two rlockd builds. A scenario is named by its
 * title and size, a metric as in the report. */
static void print_results(const struct scenario *scs, int count,
                          const struct held_result *h)
{
    char name[96];

    printf("\n");
    for (int i = 0; i < count; i++) {
        const struct scenario *sc = &scs[i];

        if (!sc->ran && sc->skipped[0] == '\0')
            continue;
        /* The bound is the title's size; gcc cannot tell it ends there. */
        snprintf(name, sizeof(name), "%.*s, %d client%s",
                 (int)sizeof(sc->title), sc->title, sc->nclients,
                 sc->nclients == 1 ? "" : "s");
        if (sc->ran)
            print_scenario_results(sc, name);
        else
            printf("skipped\t%s\t%s\n", name, sc->skipped);
    }
    if (h->ran) {
        struct held_figures f = held_figures(h);

        snprintf(name, sizeof(name), "held locks, via rlockd, %ld locks",
                 opt.held);
        print_result(name, "acquisitions/s", "higher", f.acquire_per_s);
        print_result(name, "releases/s", "higher", f.release_per_s);
        print_result(name, "renewal calls/s", "lower", f.calls_per_s);
        if (h->rlockd_cpu_pct >= 0)
            print_result(name, "rlockd CPU% holding", "lower",
                         h->rlockd_cpu_pct);
        print_result(name, "rlockd B/held lock", "lower", f.rss_bytes_per_lock);
    }
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: rlockd-bench [options]\n"
        "  -r, --redis HOST:PORT  Redis (default 127.0.0.1:6379)\n"
        "  -l, --rlockd HOST:PORT rlockd (default 127.0.0.1:7379)\n"
        "  -d, --duration SEC     measured time per scenario (3)\n"
        "  -w, --warmup SEC       unmeasured time before each (0.5)\n"
        "  -c, --clients N        clients of the many-clients case (64)\n"
        "  -C, --contended N      clients on the contended lock (20)\n"
        "  -P, --permits N        permits of the contended semaphore (3)\n"
        "  -k, --kinds LIST       the other lock kinds' scenarios to run:\n"
        "                         comma-separated fair, read, write,\n"
        "                         fenced, semaphore; all (default) or\n"
        "                         none. READ and WRITE together add 1\n"
        "                         writer among readers\n"
        "      --redis-pid PID    report this Redis's CPU use, in all and "
        "per pair\n"
        "      --rlockd-pid PID   report this rlockd's CPU use\n"
        "      --direct-only      Redis direct scenarios only\n"
        "      --rlockd-only      rlockd scenarios only\n"
        "      --results          also print each figure on a line of "
        "its own:\n"
        "                         result, scenario, metric, higher|lower "
        "(the\n"
        "                         better), value; tab-separated\n"
        "      --skip-unsupported skip (\"skipped\" line) an rlockd scenario\n"
        "                         whose requests the rlockd refuses\n"
        "                         with -ERR (an older build), not fail\n"
        "      --held N           watchdog-mode locks to hold (100000; "
        "0: skip)\n"
        "      --held-window SEC  measured time holding them (5)\n"
        "      --held-clients N   connections taking them (8)\n"
        "      --held-rlockd HOST:PORT\n"
        "                         rlockd for the held locks (--rlockd's)\n"
        "      --held-rlockd-pid PID\n"
        "                         its pid, for VmRSS and CPU "
        "(--rlockd-pid's)\n"
        "  -h, --help\n");
}

static void parse_address(const char *arg, char **host, int *port)
{
    const char *colon = strrchr(arg, ':');
    char *end;
    long p;

    if (colon == NULL || colon == arg)
        fatal("bad address '%s': expected HOST:PORT", arg);
    p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
        fatal("bad port in '%s'", arg);
    free(*host);
    *host = strndup(arg, (size_t)(colon - arg));
    *port = (int)p;
}

static double parse_seconds(const char *arg, const char *what, double min)
{
    char *end;
    double v = strtod(arg, &end);

    if (*end != '\0' || !(v >= min && v <= 3600))
        fatal("bad %s '%s': expected seconds in [%g, 3600]", what, arg, min);
    return v;
}

static long parse_integer(const char *arg, const char *what, long min, long max)
{
    char *end;
    long v = strtol(arg, &end, 10);

    if (*end != '\0' || end == arg || v < min || v > max)
        fatal("bad %s '%s': expected an integer in [%ld, %ld]", what, arg, min,
              max);
    return v;
}

enum {
    OPT_REDIS_PID = 256,
    OPT_RLOCKD_PID,
    OPT_DIRECT_ONLY,
    OPT_RLOCKD_ONLY,
    OPT_RESULTS,
    OPT_SKIP_UNSUPPORTED,
    OPT_HELD,
    OPT_HELD_WINDOW,
    OPT_HELD_CLIENTS,
    OPT_HELD_RLOCKD,
    OPT_HELD_RLOCKD_PID,
};

static const struct option long_options[] = {
    {"redis", required_argument, NULL, 'r'},
    {"rlockd", required_argument, NULL, 'l'},
    {"duration", required_argument, NULL, 'd'},
    {"warmup", required_argument, NULL, 'w'},
    {"clients", required_argument, NULL, 'c'},
    {"contended", required_argument, NULL, 'C'},
    {"permits", required_argument, NULL, 'P'},
    {"kinds", required_argument, NULL, 'k'},
    {"redis-pid", required_argument, NULL, OPT_REDIS_PID},
    {"rlockd-pid", required_argument, NULL, OPT_RLOCKD_PID},
    {"direct-only", no_argument, NULL, OPT_DIRECT_ONLY},
    {"rlockd-only", no_argument, NULL, OPT_RLOCKD_ONLY},
    {"results", no_argument, NULL, OPT_RESULTS},
    {"skip-unsupported", no_argument, NULL, OPT_SKIP_UNSUPPORTED},
    {"held", required_argument, NULL, OPT_HELD},
    {"held-window", required_argument, NULL, OPT_HELD_WINDOW},
    {"held-clients", required_argument, NULL, OPT_HELD_CLIENTS},
    {"held-rlockd", required_argument, NULL, OPT_HELD_RLOCKD},
    {"held-rlockd-pid", required_argument, NULL, OPT_HELD_RLOCKD_PID},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* --kinds: a bit per kind_id. RLock's scenarios always run. */
static unsigned parse_kinds(const char *arg)
{
    char *list = strdup(arg), *save = NULL;
    unsigned bits = 0;

    if (list == NULL)
        fatal("out of memory");
    for (char *w = strtok_r(list, ",", &save); w != NULL;
         w = strtok_r(NULL, ",", &save)) {
        int k = KIND_RLOCK + 1;

        if (strcasecmp(w, "all") == 0) {
            bits |= (1u << KIND_COUNT) - 1;
            continue;
        }
        if (strcasecmp(w, "none") == 0)
            continue;
        while (k < KIND_COUNT && strcasecmp(w, kinds[k].word) != 0)
            k++;
        if (k == KIND_COUNT)
            fatal("bad kind '%s' in --kinds: expected fair, read, write, "
                  "fenced, semaphore, all or none",
                  w);
        bits |= 1u << k;
    }
    free(list);
    return bits | 1u << KIND_RLOCK;
}

static void parse_option(int c, const char *arg)
{
    switch (c) {
    case 'r':
        parse_address(arg, &opt.redis_host, &opt.redis_port);
        break;
    case 'l':
        parse_address(arg, &opt.rlockd_host, &opt.rlockd_port);
        break;
    case 'd':
        opt.duration_s = parse_seconds(arg, "duration", 0.1);
        break;
    case 'w':
        opt.warmup_s = parse_seconds(arg, "warm-up", 0);
        break;
    case 'c':
        opt.clients = (int)parse_integer(arg, "clients", 1, MAX_CLIENTS);
        break;
    case 'C':
        opt.contended_clients =
            (int)parse_integer(arg, "contended", 2, MAX_CLIENTS);
        break;
    case 'P':
        opt.permits = (int)parse_integer(arg, "permits", 1, MAX_CLIENTS);
        break;
    case 'k':
        opt.kinds = parse_kinds(arg);
        break;
    case OPT_REDIS_PID:
        opt.pids[PROC_REDIS] = (pid_t)parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case OPT_RLOCKD_PID:
        opt.pids[PROC_RLOCKD] = (pid_t)parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case OPT_DIRECT_ONLY:
        opt.direct_only = true;
        break;
    case OPT_RLOCKD_ONLY:
        opt.rlockd_only = true;
        break;
    case OPT_RESULTS:
        opt.results = true;
        break;
    case OPT_SKIP_UNSUPPORTED:
        opt.skip_unsupported = true;
        break;
    case OPT_HELD:
        opt.held = parse_integer(arg, "held", 0, 10000000);
        break;
    case OPT_HELD_WINDOW:
        opt.held_window_s = parse_seconds(arg, "held window", 0.1);
        break;
    case OPT_HELD_CLIENTS:
        opt.held_clients =
            (int)parse_integer(arg, "held clients", 1, MAX_CLIENTS);
        break;
    case OPT_HELD_RLOCKD:
        parse_address(arg, &opt.held_rlockd_host, &opt.held_rlockd_port);
        break;
    case OPT_HELD_RLOCKD_PID:
        opt.held_rlockd_pid = (pid_t)parse_integer(arg, "pid", 1, INT32_MAX);
        break;
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        exit(2);
    }
}

static void parse_options(int argc, char **argv)
{
    int c;

    opt.redis_host = strdup("127.0.0.1");
    opt.rlockd_host = strdup("127.0.0.1");
    if (opt.redis_host == NULL || opt.rlockd_host == NULL)
        fatal("out of memory");
    while ((c = getopt_long(argc, argv, "r:l:d:w:c:C:P:k:h", long_options,
                            NULL)) != -1)
        parse_option(c, optarg);
    if (optind != argc) {
        usage(stderr);
        exit(2);
    }
    if (opt.direct_only && opt.rlockd_only)
        fatal("--direct-only and --rlockd-only leave no scenario to run");
    if (opt.permits >= opt.contended_clients)
        fatal("--permits %d with --contended %d: no client would wait",
              opt.permits, opt.contended_clients);
    opt.pids[PROC_BENCH] = getpid();
    if (opt.held_rlockd_host == NULL) {
        opt.held_rlockd_host = strdup(opt.rlockd_host);
        if (opt.held_rlockd_host == NULL)
            fatal("out of memory");
        opt.held_rlockd_port = opt.rlockd_port;
        if (opt.held_rlockd_pid == 0)
            opt.held_rlockd_pid = opt.pids[PROC_RLOCKD];
    }
}

/* ---- main --------------------------------------------------------------- */

/* Runs every scenario the options ask for, the held-locks one (if
 * `held_sc` is not NULL) last; returns how many lock keys were left
 * behind in Redis, or other problems the held-locks scenario found. */
static int run_scenarios(struct scenario *scs, int count,
                         struct scenario *held_sc, struct held_result *held)
{
    int total = count + (held_sc != NULL);
    int leftover = 0;

    printf("rlockd-bench: redis %s:%d, rlockd %s:%d; %.1f s measured per "
           "scenario after %.1f s warm-up; %ld CPUs\n",
           opt.redis_host, opt.redis_port, opt.rlockd_host, opt.rlockd_port,
           opt.duration_s, opt.warmup_s, sysconf(_SC_NPROCESSORS_ONLN));
    if (held_sc != NULL)
        printf("rlockd-bench: held locks: %ld through rlockd %s:%d, "
               "%.1f s measured while holding them\n",
               opt.held, opt.held_rlockd_host, opt.held_rlockd_port,
               opt.held_window_s);
    fflush(stdout);
    for (int i = 0; i < count; i++) {
        struct scenario *sc = &scs[i];

        if ((opt.direct_only && sc->target == TARGET_RLOCKD) ||
            (opt.rlockd_only && sc->target == TARGET_DIRECT))
            continue;
        fprintf(stderr, "[%d/%d] %s, %d client%s ...\n", i + 1, total,
                sc->title, sc->nclients, sc->nclients == 1 ? "" : "s");
        if (opt.skip_unsupported && sc->target == TARGET_RLOCKD &&
            rlockd_refuses(sc, i)) {
            fprintf(stderr, "[%d/%d] SKIPPED: %s\n", i + 1, total, sc->skipped);
            continue;
        }
        scenario_run(sc, i);
        leftover += count_leftover_locks(sc);
    }
    if (held_sc != NULL) {
        fprintf(stderr, "[%d/%d] %s, %ld locks over %d connections ...\n",
                total, total, held_sc->title, opt.held, held_sc->nclients);
        leftover += held_run(held_sc, held);
    }
    return leftover;
}

static void scenario_free(struct scenario *sc)
{
    samples_free(&sc->pair_ns);
    samples_free(&sc->acquire_ns);
    samples_free(&sc->grant_at);
    samples_free(&sc->granted_to);
    samples_free(&sc->asked_at);
    samples_free(&sc->release_reply_at);
    samples_free(&sc->released_by);
    samples_free(&sc->handoff_ns);
    samples_free(&sc->writer_wait_ns);
    free(sc->clients);
}

/* A scenario of `kind`, titled after what it measures. A semaphore's
 * name has 1 permit when uncontended (a pair is then like a lock's),
 * --permits when contended. */
static struct scenario scenario_new(const struct lock_kind *kind,
                                    enum target target, enum contention mode,
                                    int nclients)
{
    struct scenario sc = {.kind = kind,
                          .target = target,
                          .mode = mode,
                          .nclients = nclients,
                          .permits = 1};
    const char *where = target == TARGET_DIRECT ? "Redis direct" : "via rlockd";

    if (mode == HANDOFF && kind->set_up != NULL)
        sc.permits = opt.permits;
    if (mode == UNCONTENDED)
        snprintf(sc.title, sizeof(sc.title), "uncontended%s%s, %s",
                 kind_space(kind), kind_word(kind), where);
    else if (mode == HANDOFF && kind->set_up != NULL)
        snprintf(sc.title, sizeof(sc.title), "contended %s (%d permits), %s",
                 kind_word(kind), sc.permits, where);
    else if (mode == HANDOFF)
        snprintf(sc.title, sizeof(sc.title), "contended%s%s (one lock), %s",
                 kind_space(kind), kind_word(kind), where);
    else
        snprintf(sc.title, sizeof(sc.title), "contended 1 WRITE + READs, %s",
                 where);
    return sc;
}

/* The plain lock's five scenarios, then, for each kind --kinds asks for,
 * its many-clients pair and, for FAIR and SEMAPHORE, the contended case;
 * with READ and WRITE, one writer among readers. Each direct run is followed by its
 * rlockd twin, so the pairs that are compared are measured back to back.
 * compare() and print_markdown() rely on the first five's order. Returns
 * how many there are. */
static int scenarios_plan(struct scenario *scs)
{
    const struct lock_kind *rlock = &kinds[KIND_RLOCK];
    int n = 0;

    scs[n++] = scenario_new(rlock, TARGET_DIRECT, UNCONTENDED, 1);
    scs[n++] = scenario_new(rlock, TARGET_RLOCKD, UNCONTENDED, 1);
    scs[n++] = scenario_new(rlock, TARGET_DIRECT, UNCONTENDED, opt.clients);
    scs[n++] = scenario_new(rlock, TARGET_RLOCKD, UNCONTENDED, opt.clients);
    scs[n++] =
        scenario_new(rlock, TARGET_RLOCKD, HANDOFF, opt.contended_clients);
    for (int k = KIND_RLOCK + 1; k < KIND_COUNT; k++) {
        if (!(opt.kinds & 1u << k))
            continue;
        scs[n++] =
            scenario_new(&kinds[k], TARGET_DIRECT, UNCONTENDED, opt.clients);
        scs[n++] =
            scenario_new(&kinds[k], TARGET_RLOCKD, UNCONTENDED, opt.clients);
    }
    if (opt.kinds & 1u << KIND_FAIR)
        scs[n++] = scenario_new(&kinds[KIND_FAIR], TARGET_RLOCKD, HANDOFF,
                                opt.contended_clients);
    if (opt.kinds & 1u << KIND_SEMAPHORE)
        scs[n++] = scenario_new(&kinds[KIND_SEMAPHORE], TARGET_RLOCKD, HANDOFF,
                                opt.contended_clients);
    if ((opt.kinds & 1u << KIND_READ) && (opt.kinds & 1u << KIND_WRITE))
        scs[n++] = scenario_new(&kinds[KIND_READ], TARGET_RLOCKD,
                                READERS_WRITER, opt.contended_clients);
    return n;
}

/* The plain lock's five, two per other kind, FAIR's and SEMAPHORE's
 * contended ones and the readers and writer. */
#define MAX_SCENARIOS (5 + 2 * (KIND_COUNT - 1) + 3)

int main(int argc, char **argv)
{
    struct scenario scs[MAX_SCENARIOS], held_sc;
    struct held_result held = {.ran = false};
    bool run_held;
    int count;
    int leftover;

    parse_options(argc, argv);
    run_held = opt.held > 0 && !opt.direct_only;
    /* A closed socket must surface as a hiredis error, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    count = scenarios_plan(scs);
    held_sc = scenario_new(&kinds[KIND_RLOCK], TARGET_RLOCKD, UNCONTENDED,
                           opt.held_clients);
    snprintf(held_sc.title, sizeof(held_sc.title), "held locks, via rlockd");
    held_sc.held = true;
    redis_setup();
    leftover = run_scenarios(scs, count, run_held ? &held_sc : NULL, &held);
    print_table(scs, count);
    if (!opt.direct_only) {
        for (int i = 0; i < count; i++) {
            if (scs[i].ran && scs[i].mode == HANDOFF)
                print_contended(&scs[i]);
            else if (scs[i].ran && scs[i].mode == READERS_WRITER)
                print_readers_writer(&scs[i]);
        }
        if (held.ran)
            print_held(&held);
    }
    if (!opt.direct_only && !opt.rlockd_only) {
        struct comparison cmp = compare(scs);

        print_targets(&cmp);
        print_markdown(scs, count, &cmp, &held);
    }
    if (opt.results)
        print_results(scs, count, &held);
    for (int i = 0; i < count; i++)
        scenario_free(&scs[i]);
    scenario_free(&held_sc);
    redisFree(redis_sync);
    return leftover ? 1 : 0;
}
