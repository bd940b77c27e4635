/*
 * sim_main.c - deterministic simulation of the lock engine, in the manner
 * of FoundationDB's: the real engine, over a simulated Redis (sim_redis.h)
 * and network, under a seeded random schedule of client operations and
 * faults; every step is checked against the invariants below.
 *
 * The world: CLIENTS client-ids (half with a SECRET, so with a session
 * record), THREADS threads each, LOCKS names, all of one kind per seed
 * (enum sim_mode: seed n is mode n % MODE_COUNT): RLock, FAIR, FENCED,
 * READ/WRITE (a client's first thread writes, its second reads), the
 * semaphore and the expirable one (PERMITS permits each; the session
 * holds them, so only a client's first thread acts) and the latch. Each
 * thread has at most one call in flight: LOCK (watchdog or lease),
 * TRYLOCK, UNLOCK, HOLDCOUNT, and now and then FORCEUNLOCK (a
 * semaphore's ACQUIRE of 1 or 2 permits, with or without WAIT, RELEASE
 * of all it holds, HOLDCOUNT; an expirable permit's by its id); a latch's
 * AWAIT (with WAIT or not), COUNTDOWN and LATCHSET. Faults: reply delays,
 * dropped connections (each call in flight not run, run with its reply
 * lost, or run late, after the reconnection), Redis restarts that lose
 * every key,
 * failovers that lose the writes since the last snapshot, lost pub/sub
 * messages, rlockd restarts (the engine torn down and started again, its
 * in-flight calls still running in Redis), clients that disconnect and
 * come back, and clients that pause.
 *
 * Clients follow the rule for holders (protocol.md section 9): a client
 * that closed its connection itself, or one without a secret that lost
 * it, has stopped its critical sections; one with a secret that lost its
 * connection to a restarting rlockd resumes its session (CLIENTID ...
 * RESUME: -LOCKLOST tells it every lock is gone), asks HOLDCOUNT for each
 * lock it held, and goes on; a LOCK whose reply never came is followed
 * by HOLDCOUNT; -NOTOWNER for a lock held across a reconnection means
 * lost. A lease ends a section at the lease.
 *
 * Invariants:
 *  I1 exclusion: two holds of one lock (a thread believing it holds it,
 *     from its GRANTED to the UNLOCK it sent, or to when it stopped) by
 *     different owners overlap only if one of them was told it was lost
 *     (-LOCKLOST), checked when the run ends and every hold is closed;
 *  I2 no silent loss: an UNLOCK of a lock its thread believes held never
 *     answers -NOTOWNER (the first time it is sent);
 *  I3 no orphan: a lock field in Redis that no thread believes, and no
 *     call or resumable session may still account for, is gone within
 *     ORPHAN_FREED_MS (rlockd frees it: an acquire whose caller left or
 *     whose reply was lost), or ORPHAN_MAX_MS after a restart of rlockd or
 *     a Redis that lost writes (only its TTL can; nothing renews it);
 *  I4 counts: a thread that believes count n, with nothing in flight or
 *     in doubt, finds its field in Redis at n when the field is there
 *     (not after a failover that lost writes: standalone rlockd cannot
 *     see one; the Sentinel issue re-checks locks after a master change);
 *  I5 renewal: a watchdog lock leaves Redis while believed only in a
 *     fault (see check_held).
 * I3 to I5 hold for every kind that holds something, by its owners in
 * Redis (redis_owners); I1 lets READ holds overlap one another, and for
 * the semaphores is
 *  P1 permits: the permits of holds that overlap (none of them lost) are
 *     never more than the semaphore has;
 *  P2 none lost: once everyone has left and every holder's time ran out,
 *     nothing is held and the semaphore has all its permits (a Redis
 *     restart that loses them is followed by an operator's SETPERMITS);
 * and for the latch
 *  L1 no waiter stranded: an AWAIT is answered within LATCH_STRANDED_MS
 *     of the latch opening (or of its asking, or of the last fault);
 *  L2 an AWAIT is answered "open" only if the latch was open at some
 *     time since it was asked;
 * and for the fenced lock
 *  F1 each grant's token is above every earlier one of the name, unless
 *     Redis lost data since;
 * and for every lock kind
 *  D1 no deadlock outlives its detection: a cycle of threads, each with a
 *     LOCK or TRYLOCK in flight for a lock that the next holds (believes,
 *     and Redis has its field; a reader held up by a writer, a writer by
 *     anyone), that formed with no fault for ORPHAN_MAX_MS before, is
 *     broken (one of them answered -DEADLOCK) within DEADLOCK_MAX_MS: its
 *     acquire's round trip, after which its wait starts and is looked at.
 *     A thread that holds a lock takes another now and then, the clients
 *     of even index in the names' order and the odd ones in reverse, so
 *     cycles form;
 *  D2 no false deadlock: a thread answered -DEADLOCK was in such a cycle
 *     (RLock and FENCED, whose waits are all of that graph; away from
 *     faults).
 * An engine that crashes (SIGSEGV, SIGABRT) fails the seed as well.
 *
 * SIM_SEED=<n> runs one seed (and prints its trace), SIM_SEEDS=<count>
 * runs seeds SIM_FIRST (1)..count, SIM_STEPS=<n> steps each; SIM_KIND=
 * <mode> runs every seed as that mode (rlock, fair, fenced, rw,
 * semaphore, expirable, latch). A failing seed prints itself, the
 * invariant, and the last TRACE_LINES events.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/stats.h"
#include "engine/lock_engine.h"
#include "fake_clock.h"
#include "sim_redis.h"

#define CLIENTS 4
#define THREADS 2
#define LOCKS 3
#define WATCHDOG_MS 300
#define MAX_PENDING 512
#define MAX_LISTENERS 64
#define MAX_HOLDS 4096
#define TRACE_LINES 60
/* Longest life of a field nobody renews: a lease or the watchdog TTL,
 * plus the time a renewal sent just before may take. */
#define LEASE_MAX_MS 400
#define ORPHAN_MAX_MS (LEASE_MAX_MS + WATCHDOG_MS + 100)
/* ... and of one rlockd could free at once (an acquire whose caller left,
 * or whose reply was lost): an outage, then the settle's round trip. */
#define ORPHAN_FREED_MS 250
/* A client whose connection broke resumes within this, or stops. */
#define RESUME_GRACE_MS (WATCHDOG_MS / 2)
/* A semaphore's permits, set before the run (and again after a Redis
 * restart lost them, as an operator would). */
#define PERMITS 3
/* A latch waiter is answered this long after the latch opened at the
 * latest, with no fault since: the await script's look again in a
 * second, whatever message was lost, and the round trips. */
#define LATCH_STRANDED_MS 1100
/* A deadlock is refused this long after it formed at the latest: the
 * acquire that closes it is refused by Redis (a reply comes within 8 ms,
 * and calls run in order) and then its wait starts. */
#define DEADLOCK_MAX_MS 40

/* What a seed simulates: each kind, on every lock name (READ and WRITE
 * together: a client's first thread writes, its second reads). */
enum sim_mode {
    MODE_RLOCK,
    MODE_FAIR,
    MODE_FENCED,
    MODE_RW,
    MODE_SEMAPHORE,
    MODE_EXPIRABLE,
    MODE_LATCH,
    MODE_COUNT
};

static const char *const mode_names[MODE_COUNT] = {
    [MODE_RLOCK] = "rlock",         [MODE_FAIR] = "fair",
    [MODE_FENCED] = "fenced",       [MODE_RW] = "rw",
    [MODE_SEMAPHORE] = "semaphore", [MODE_EXPIRABLE] = "expirable",
    [MODE_LATCH] = "latch"};

static enum sim_mode mode;
/* SIM_KIND: every seed of that mode; else seed n is mode n % MODE_COUNT. */
static int only_mode = -1;
/* At a run's end nobody does anything (world_rest). */
static bool clients_quiet;

static void note_latches(void);

/* Kinds that hold permits: the session is the owner (thread-id 0), so only
 * a client's first thread acts. */
static bool permit_mode(void)
{
    return mode == MODE_SEMAPHORE || mode == MODE_EXPIRABLE;
}

/* ---- randomness, trace, failure --------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static bool chance(unsigned percent)
{
    return below(1000) < percent * 10;
}

static struct {
    char lines[TRACE_LINES][160];
    unsigned next;
    bool print; /* SIM_SEED: show it all */
} trace_log;

static uint64_t seed_now;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void trace(const char *fmt, ...)
{
    char *line = trace_log.lines[trace_log.next++ % TRACE_LINES];
    int n =
        snprintf(line, 160, "%6llu ", (unsigned long long)fake_clock.now_ms);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line + n, (size_t)(160 - n), fmt, ap);
    va_end(ap);
    if (trace_log.print)
        printf("%s\n", line);
}

/* The trace and how to replay the seed, after the failure's line. */
static void fail_report(void)
{
    printf("\nlast events:\n");
    for (unsigned i = 0; i < TRACE_LINES; i++) {
        const char *l = trace_log.lines[(trace_log.next + i) % TRACE_LINES];
        if (l[0])
            printf("  %s\n", l);
    }
    printf("replay: SIM_SEED=%llu%s%s\n", (unsigned long long)seed_now,
           only_mode >= 0 ? " SIM_KIND=" : "",
           only_mode >= 0 ? mode_names[only_mode] : "");
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
    va_list ap;

    printf(
        "sim: SEED %llu (%s) FAILED at t=%llu: ", (unsigned long long)seed_now,
        mode_names[mode], (unsigned long long)fake_clock.now_ms);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fail_report();
    exit(1);
}

/* The engine crashed: the seed and its trace are told all the same (stdio
 * in a handler, for a process that is dying anyway), then the signal. */
static void on_crash(int sig)
{
    printf("sim: SEED %llu (%s) CRASHED at t=%llu: %s",
           (unsigned long long)seed_now, mode_names[mode],
           (unsigned long long)fake_clock.now_ms, strsignal(sig));
    fail_report();
    fflush(stdout);
    raise(sig);
}

/* ---- the simulated network and Redis ------------------------------------ */

enum fate { FATE_REPLY, FATE_LOST_REPLY, FATE_LATE, FATE_NEVER };

struct pending {
    struct sim_call call;
    uint64_t at;
    enum fate fate;
    backend_reply_fn *fn; /* NULL: its rlockd is gone */
    void *arg;
};

struct message {
    char channel[SIM_STR];
    char payload[32];
    uint64_t at;
    bool subscribed; /* the "subscribed again" notice (payload NULL) */
};

static struct {
    struct sim_redis redis;
    struct pending pending[MAX_PENDING]; /* a ring, from first */
    size_t first, npending;
    struct message messages[MAX_PENDING];
    size_t nmessages;
    struct backend_listener *listeners[MAX_LISTENERS];
    char channels[MAX_LISTENERS][SIM_STR];
    size_t nlisteners;
    bool ready;
    uint64_t ready_at; /* a dropped connection is back then */
    uint64_t last_at;  /* calls run in the order sent */
    uint64_t next_snapshot;
    /* The last fault that may take a held lock: an outage, a lost write,
     * an rlockd restart, a FORCEUNLOCK. */
    uint64_t last_fault;
    /* The last event after which only a TTL may free a field: an rlockd
     * restart (its memory is gone), a Redis that lost writes. */
    uint64_t last_amnesia;
} net;

/* A message on channel, or the notice that it is subscribed (again). */
static void queue_message(const char *channel, const char *payload,
                          bool subscribed)
{
    struct message *m = &net.messages[net.nmessages];

    if (net.nmessages == MAX_PENDING)
        fail("too many messages");
    net.nmessages++;
    snprintf(m->channel, SIM_STR, "%s", channel);
    snprintf(m->payload, sizeof(m->payload), "%s", payload);
    m->at = fake_clock.now_ms + below(5);
    m->subscribed = subscribed;
}

static void on_publish(const char *channel, const char *message, void *ctx)
{
    (void)ctx;
    if (chance(5))
        trace("pubsub: message %s on %s lost", message, channel);
    else
        queue_message(channel, message, false);
}

static void add_script(struct backend_script *script)
{
    (void)script;
}

static int sim_eval(const struct backend_call *call, backend_reply_fn *fn,
                    void *arg)
{
    struct pending *p;

    if (!net.ready)
        return -ENOTCONN;
    if (net.npending == MAX_PENDING)
        fail("too many calls in flight");
    p = &net.pending[(net.first + net.npending++) % MAX_PENDING];
    memset(p, 0, sizeof(*p));
    p->call.script = call->script ? call->script->name : NULL;
    p->call.nkeys = call->nkeys;
    p->call.argc = call->argc;
    if (call->argc > 80)
        fail("a call of %d arguments", call->argc);
    for (int i = 0; i < call->argc; i++)
        snprintf(p->call.argv[i], SIM_STR, "%.*s", (int)call->argv_len[i],
                 call->argv[i]);
    p->at = fake_clock.now_ms + below(8);
    if (p->at < net.last_at)
        p->at = net.last_at;
    net.last_at = p->at;
    /* A reply is lost only with its connection (drop_connection): the
     * backend reports none otherwise. */
    p->fate = FATE_REPLY;
    p->fn = fn;
    p->arg = arg;
    return 0;
}

static int sim_listen(struct backend_listener *l, const char *channel,
                      size_t len)
{
    if (net.nlisteners == MAX_LISTENERS)
        fail("too many listeners");
    net.listeners[net.nlisteners] = l;
    snprintf(net.channels[net.nlisteners], SIM_STR, "%.*s", (int)len, channel);
    queue_message(net.channels[net.nlisteners++], "", true);
    return 0;
}

static void sim_unlisten(struct backend_listener *l)
{
    for (size_t i = 0; i < net.nlisteners; i++) {
        if (net.listeners[i] == l) {
            net.nlisteners--;
            net.listeners[i] = net.listeners[net.nlisteners];
            memcpy(net.channels[i], net.channels[net.nlisteners], SIM_STR);
            return;
        }
    }
}

static bool sim_key_ready(const char *key, size_t len)
{
    (void)key;
    (void)len;
    return net.ready;
}

static unsigned sim_key_group(const char *key, size_t len)
{
    (void)key;
    (void)len;
    return 0;
}

/* The simulated Redis has no replicas. */
static int sim_sync(const char *key, size_t len, backend_reply_fn *fn,
                    void *arg)
{
    (void)key;
    (void)len;
    (void)fn;
    (void)arg;
    return -ENOENT;
}

static const char *sim_publish(void)
{
    return "publish";
}

static const struct backend sim_backend = {
    .add_script = add_script,
    .eval = sim_eval,
    .listen = sim_listen,
    .unlisten = sim_unlisten,
    .key_ready = sim_key_ready,
    .key_group = sim_key_group,
    .sync = sim_sync,
    .publish = sim_publish,
};

static void deliver(struct backend_listener *l, const char *payload)
{
    for (size_t i = 0; i < net.nlisteners; i++)
        if (net.listeners[i] == l) {
            l->on_message(l, payload, payload ? strlen(payload) : 0);
            return;
        }
}

/* Hands a message to each listener of its channel (one may leave, or make
 * another leave, meanwhile). */
static void deliver_message(const struct message *m)
{
    struct backend_listener *to[MAX_LISTENERS];
    size_t n = 0;

    for (size_t i = 0; i < net.nlisteners; i++)
        if (strcmp(net.channels[i], m->channel) == 0)
            to[n++] = net.listeners[i];
    for (size_t i = 0; i < n; i++)
        deliver(to[i], m->subscribed ? NULL : m->payload);
}

/* Runs the call in the model, and answers it as its fate says. */
static void run_pending(struct pending *p)
{
    struct sim_reply reply;
    bool runs = p->fate != FATE_NEVER;

    if (runs && !sim_redis_run(&net.redis, fake_clock.now_ms, &p->call, &reply))
        fail("the model does not know %s",
             p->call.script ? p->call.script : p->call.argv[0]);
    note_latches(); /* open, if only until the next call */
    trace("redis: %s %s %s%s -> %s %lld",
          p->call.script ? p->call.script : p->call.argv[0],
          p->call.argv[p->call.script ? 0 : 1],
          p->call.argc > 2 ? p->call.argv[p->call.nkeys + 1] : "",
          !runs                   ? " (not run)"
          : p->fate == FATE_REPLY ? ""
                                  : " (reply lost)",
          !runs                             ? "-"
          : reply.value.type == VALUE_ARRAY ? "array"
          : reply.value.type == VALUE_NIL   ? "nil"
          : reply.value.type == VALUE_ERROR ? reply.value.str
                                            : "int",
          !runs                             ? 0
          : reply.value.type == VALUE_ARRAY ? (long long)reply.value.elements
                                            : reply.value.integer);
    if (p->fn != NULL)
        p->fn(p->arg, p->fate == FATE_REPLY ? &reply.value : NULL);
}

/* The i-th call in flight, the oldest first. */
static struct pending *pending_at(size_t i)
{
    return &net.pending[(net.first + i) % MAX_PENDING];
}

/* Takes the oldest call off the ring; its slot stays valid until the
 * ring has gone round, far beyond the calls one answer can make. */
static struct pending *pop_pending(void)
{
    struct pending *p = &net.pending[net.first];

    net.first = (net.first + 1) % MAX_PENDING;
    net.npending--;
    return p;
}

/* The connection breaks: each call in flight ran, runs late (after the
 * reconnection, before anything new) or never runs; none is answered. */
static void drop_connection(uint64_t outage_ms)
{
    static struct pending late[MAX_PENDING];
    size_t nlate = 0;

    trace("net: connection dropped for %llu ms", (unsigned long long)outage_ms);
    net.ready = false;
    net.ready_at = fake_clock.now_ms + outage_ms;
    net.last_fault = net.ready_at;
    while (net.npending > 0) {
        struct pending *p = pop_pending();
        unsigned roll = below(3);

        if (roll == 1) { /* runs late, answered to nobody */
            late[nlate] = *p;
            late[nlate].fn = NULL;
            late[nlate++].fate = FATE_LOST_REPLY;
        }
        p->fate = roll == 0 ? FATE_LOST_REPLY : FATE_NEVER;
        run_pending(p);
    }
    memcpy(net.pending, late, nlate * sizeof(late[0]));
    net.first = 0;
    net.npending = nlate;
    for (size_t i = 0; i < nlate; i++)
        net.pending[i].at = net.ready_at;
    net.last_at = net.ready_at;
}

/* ---- clients ------------------------------------------------------------- */

/* LOCK, TRYLOCK, UNLOCK, HOLDCOUNT and FORCEUNLOCK are a semaphore's
 * ACQUIRE (with WAIT), RELEASE and HOLDCOUNT too; AWAIT, COUNTDOWN and
 * LATCHSET are the latch's. */
enum op {
    OP_NONE,
    OP_LOCK,
    OP_TRYLOCK,
    OP_UNLOCK,
    OP_COUNT,
    OP_FORCE,
    OP_AWAIT,
    OP_COUNTDOWN,
    OP_LATCHSET
};

struct hold_log {
    int lock, client, thread;
    uint64_t start, end; /* end: UINT64_MAX while believed */
    bool told;
    bool fault_lost;   /* its field went in a fault (outage, flush, force) */
    bool shared;       /* a read hold, which overlaps other reads */
    long long permits; /* a semaphore's: how many it holds */
};

static struct {
    struct hold_log holds[MAX_HOLDS];
    size_t n;
} history;

struct client;

struct thread {
    struct client *client;
    int index;
    char field[40]; /* its owner field in Redis */
    enum op op;     /* in flight */
    int lock;
    struct lock_call *call;
    long long believed[LOCKS];
    int hold[LOCKS];             /* history index while believed */
    bool in_doubt[LOCKS];        /* a LOCK that got no answer */
    bool retried[LOCKS];         /* an UNLOCK sent again after no answer */
    uint64_t lease_end[LOCKS];   /* its lease ends then at the earliest */
    long long lease_ms[LOCKS];   /* asked by the call in flight */
    long long held_lease[LOCKS]; /* of the last acquire granted */
    uint64_t asked_at[LOCKS];    /* when it was sent */
    uint64_t unlock_sent[LOCKS];
    long long cleanup[LOCKS];  /* UNLOCKs owed for sections it stopped */
    bool seen[LOCKS];          /* its field was seen in Redis */
    bool count_unknown[LOCKS]; /* a failover may have undone a count */
    bool suspect[LOCKS];       /* held when its connection broke: -NOTOWNER of
                            it (a session not given back) means lost */
    bool watchdog[LOCKS];      /* renewed, not leased */
    bool cleaning;             /* the UNLOCK in flight is one of those */
    long long amount;          /* the permits of the call in flight */
    /* an expirable permit's id per lock: the one held, or asked for */
    char permit[LOCKS][LOCK_PERMIT_ID_LEN + 1];
    unsigned permits_asked;
};

struct client {
    int index;
    char id[16];
    bool has_secret;
    struct session *session;
    struct lock_join *join;
    bool connected;
    bool resuming;         /* its connection broke: it means to resume */
    uint64_t broken_at;    /* when */
    uint64_t reconnect_at; /* when it dials again */
    uint64_t paused_until;
    struct thread threads[THREADS];
};

static struct client clients[CLIENTS];
static const char *const lock_names[LOCKS] = {"L0", "L1", "L2"};
static const char secret[] = "sim-secret-0123456789";
static struct config cfg;

/* The kind a thread's calls are of. */
static const struct lock_kind *thread_kind(const struct thread *t)
{
    static const struct lock_kind *const of_mode[MODE_COUNT] = {
        [MODE_RLOCK] = &lock_kind_rlock,
        [MODE_FAIR] = &lock_kind_fair,
        [MODE_FENCED] = &lock_kind_fenced,
        [MODE_RW] = &lock_kind_write,
        [MODE_SEMAPHORE] = &lock_kind_semaphore,
        [MODE_EXPIRABLE] = &lock_kind_expirable,
        [MODE_LATCH] = &lock_kind_latch};

    return mode == MODE_RW && t->index == 1 ? &lock_kind_read : of_mode[mode];
}

/* Its owner field in Redis for lock: an expirable permit's is its id. */
static const char *field_of(const struct thread *t, int lock)
{
    return mode == MODE_EXPIRABLE ? t->permit[lock] : t->field;
}

/* The fenced lock's tokens: each grant's is above every earlier one of
 * the name's, unless Redis lost its data since (FENCED tokens then start
 * again: issue 27 asks rlockd to keep them rising, not yet done). */
static struct {
    long long last[LOCKS];
    uint64_t at[LOCKS];
} tokens;

static void check_token(int lock, long long token)
{
    if (tokens.at[lock] > net.last_amnesia && token <= tokens.last[lock])
        fail("F1: token %lld of %s after %lld", token, lock_names[lock],
             tokens.last[lock]);
    tokens.last[lock] = token;
    tokens.at[lock] = fake_clock.now_ms;
}

/* The last time each latch was seen open (its count 0, or no count). */
static struct {
    uint64_t last_open[LOCKS];
    uint64_t open_since[LOCKS]; /* 0: closed now */
} latches;

static bool latch_open(int lock)
{
    long long count;

    return !sim_redis_integer(&net.redis, lock_names[lock], &count) ||
           count <= 0;
}

static void note_latches(void)
{
    for (int l = 0; l < LOCKS && mode == MODE_LATCH; l++)
        if (latch_open(l)) {
            latches.last_open[l] = fake_clock.now_ms;
            if (latches.open_since[l] == 0)
                latches.open_since[l] = fake_clock.now_ms;
        } else {
            latches.open_since[l] = 0;
        }
}

/* A grant sets the lock's TTL to its lease from the asking at the
 * earliest: the thread's section ends then (it is told at its next call
 * that the lock is gone); once any acquire was in watchdog mode, the
 * watchdog renews the lock until it is released. */
static void granted_lease(struct thread *t, int lock, long long lease_ms)
{
    uint64_t lease = (uint64_t)lease_ms;

    t->held_lease[lock] = lease_ms;
    t->watchdog[lock] |= lease_ms < 0;
    if (t->watchdog[lock])
        t->lease_end[lock] = UINT64_MAX;
    else if (t->lease_end[lock] < t->asked_at[lock] + lease)
        t->lease_end[lock] = t->asked_at[lock] + lease;
}

/* An acquire got no answer: it may have run; HOLDCOUNT will tell. An
 * expirable permit's cannot be asked for: rlockd gives it back. */
static void acquire_in_doubt(struct thread *t, int lock)
{
    t->in_doubt[lock] = mode != MODE_EXPIRABLE;
}

/* A hold begins: of permits permits (1 for a lock). */
static void hold_begin(struct thread *t, int lock, long long permits)
{
    struct hold_log *h;

    if (history.n == MAX_HOLDS)
        fail("too many holds");
    h = &history.holds[history.n];
    *h = (struct hold_log){lock,       t->client->index,
                           t->index,   fake_clock.now_ms,
                           UINT64_MAX, false,
                           false,      thread_kind(t)->shared && !permit_mode(),
                           permits};
    t->hold[lock] = (int)history.n++;
    t->lease_end[lock] = 0;
    t->watchdog[lock] = false;
}

/* The thread stops believing it holds lock, its section over at end. */
static void hold_end(struct thread *t, int lock, uint64_t end, bool told)
{
    struct hold_log *h = &history.holds[t->hold[lock]];

    if (end > t->lease_end[lock]) /* it knew its lease ended then */
        end = t->lease_end[lock];
    if (t->unlock_sent[lock] != 0 && end > t->unlock_sent[lock])
        end = t->unlock_sent[lock]; /* its section ended at its UNLOCK */
    if (h->end == UINT64_MAX)
        h->end = end;
    h->told |= told;
    t->believed[lock] = 0;
    t->in_doubt[lock] = false;
    t->unlock_sent[lock] = 0;
    t->retried[lock] = false;
    t->seen[lock] = false;
    t->suspect[lock] = false;
}

/* A latch's calls: AWAIT ends only once the latch was open (L2). */
static void latch_result(struct thread *t, enum op op,
                         const struct lock_result *r)
{
    if (op == OP_AWAIT && r->type == RESULT_GRANTED &&
        latches.last_open[t->lock] < t->asked_at[t->lock])
        fail("L2: AWAIT %s by c%d.%d, asked at %llu, granted; the latch "
             "was last open at %llu",
             lock_names[t->lock], t->client->index, t->index,
             (unsigned long long)t->asked_at[t->lock],
             (unsigned long long)latches.last_open[t->lock]);
}

static const char *op_name(enum op op)
{
    static const char *const names[] = {
        [OP_NONE] = "-",           [OP_LOCK] = "LOCK",
        [OP_TRYLOCK] = "TRYLOCK",  [OP_UNLOCK] = "UNLOCK",
        [OP_COUNT] = "HOLDCOUNT",  [OP_FORCE] = "FORCEUNLOCK",
        [OP_AWAIT] = "AWAIT",      [OP_COUNTDOWN] = "COUNTDOWN",
        [OP_LATCHSET] = "LATCHSET"};

    return names[op];
}

static void check_refusal(const struct thread *t);

static void thread_result(struct thread *t, const struct lock_result *r)
{
    int lock = t->lock;
    enum op op = t->op;
    /* a grant: OK, a fenced lock's token, an expirable permit's id */
    bool granted = (op == OP_LOCK || op == OP_TRYLOCK) &&
                   (r->type == RESULT_GRANTED || r->type == RESULT_TEXT ||
                    (r->type == RESULT_INTEGER && r->integer > 0));

    if (r->type == RESULT_ERROR && r->error == REPLY_DEADLOCK)
        check_refusal(t);
    t->op = OP_NONE;
    t->call = NULL;
    if (t->cleaning) { /* owed for a section it stopped: any answer does */
        t->cleaning = false;
        /* a semaphore's session gives back one permit at a time until
         * it holds none (how many, its acquires in doubt do not say) */
        if (r->type == RESULT_INTEGER && r->integer == 0)
            t->cleanup[lock] = t->cleanup[lock] > 1 ? t->cleanup[lock] - 1
                               : permit_mode()      ? 1
                                                    : 0;
        else if (r->type == RESULT_INTEGER || r->error != REPLY_UNAVAILABLE)
            t->cleanup[lock] = 0;
        trace("c%d.%d: cleanup UNLOCK %s done", t->client->index, t->index,
              lock_names[lock]);
        return;
    }
    trace("c%d.%d: %s %s %lld -> %s %lld (believed %lld)", t->client->index,
          t->index, op_name(op), lock_names[lock], t->amount,
          r->type == RESULT_ERROR     ? reply_error_code_name(r->error)
          : r->type == RESULT_GRANTED ? "granted"
                                      : "ok",
          (long long)r->integer, t->believed[lock]);
    if (op == OP_AWAIT || op == OP_COUNTDOWN || op == OP_LATCHSET) {
        latch_result(t, op, r);
    } else if (granted) {
        if (mode == MODE_FENCED)
            check_token(lock, r->integer);
        if (t->believed[lock] == 0)
            hold_begin(t, lock, t->amount);
        t->believed[lock] += t->amount;
        granted_lease(t, lock, t->lease_ms[lock]);
        t->in_doubt[lock] = false;
    } else if (op == OP_UNLOCK) {
        if (r->type == RESULT_INTEGER && r->integer == 0 && permit_mode() &&
            t->believed[lock] <= t->amount) {
            /* it gave back every permit it knew of, and holds more (a
             * failover brought back its session's record, which it
             * resumed): its section ends, and HOLDCOUNT tells the rest */
            hold_end(t, lock, t->unlock_sent[lock], false);
            t->in_doubt[lock] = true;
        } else if (r->type == RESULT_INTEGER && r->integer == 0) {
            /* still held: at least once more (a failover may have left
             * Redis a count above what the thread took) */
            if (t->believed[lock] > t->amount)
                t->believed[lock] -= t->amount;
            /* ... and the decrement set the TTL to the lease again */
            t->asked_at[lock] = t->unlock_sent[lock];
            granted_lease(t, lock, t->held_lease[lock]);
            t->unlock_sent[lock] = 0; /* its section goes on */
            t->retried[lock] = false;
        } else if (r->type == RESULT_INTEGER) {
            hold_end(t, lock, t->unlock_sent[lock], false);
        } else if (r->error == REPLY_LOCKLOST) {
            hold_end(t, lock, t->unlock_sent[lock], true);
        } else if (r->error == REPLY_NOTOWNER) {
            /* after its lease the thread knows the lock has gone */
            if (!t->retried[lock] && !t->suspect[lock] &&
                fake_clock.now_ms < t->lease_end[lock])
                fail("I2: UNLOCK %s by c%d.%d, believed %lld, is NOTOWNER",
                     lock_names[lock], t->client->index, t->index,
                     t->believed[lock]);
            hold_end(t, lock, t->unlock_sent[lock], true);
        } else {
            t->retried[lock] = true; /* no answer: it asks again */
        }
    } else if (op == OP_COUNT && r->type == RESULT_INTEGER && r->integer == 0 &&
               t->believed[lock] > 0) { /* told: gone */
        hold_end(t, lock, fake_clock.now_ms, true);
    } else if (op == OP_COUNT && r->type == RESULT_INTEGER &&
               t->in_doubt[lock]) {
        /* the count is the truth: a LOCK without answer was granted
         * (more), an UNLOCK without answer ran (less) */
        if (r->integer > t->believed[lock]) {
            if (t->believed[lock] == 0)
                hold_begin(t, lock, r->integer);
            granted_lease(t, lock, t->lease_ms[lock]);
        } else if (r->integer < t->believed[lock]) {
            t->retried[lock] = false;
            t->unlock_sent[lock] = 0;
        }
        t->believed[lock] = r->integer;
        t->in_doubt[lock] = false;
    } else if ((op == OP_LOCK || op == OP_TRYLOCK) && r->type == RESULT_ERROR &&
               r->error == REPLY_UNAVAILABLE) {
        acquire_in_doubt(t, lock); /* it may have run */
    } else if ((op == OP_LOCK || op == OP_TRYLOCK) && r->type == RESULT_ERROR &&
               r->error == REPLY_LOCKLOST && t->believed[lock] > 0) {
        hold_end(t, lock, fake_clock.now_ms, true);
    }
}

static void on_done(void *ctx, const struct lock_result *r)
{
    thread_result(ctx, r);
}

/* What the call gives or takes: a semaphore's acquire 1 or 2 permits,
 * its release all it holds (or owes), a count-down 1, a latch's set a
 * count of 1 to 3; a lock 1. */
static long long amount_of(const struct thread *t, enum op op, int lock)
{
    if (op == OP_COUNTDOWN)
        return -1;
    if (op == OP_LATCHSET)
        return 1 + below(3);
    if (mode != MODE_SEMAPHORE)
        return 1;
    if (op == OP_UNLOCK)
        return t->cleaning ? 1 : t->believed[lock];
    return 1 + below(2);
}

static void start(struct thread *t, enum op op, int lock)
{
    static const enum lock_request_op request_of[] = {
        [OP_LOCK] = LOCK_REQUEST_ACQUIRE,
        [OP_TRYLOCK] = LOCK_REQUEST_ACQUIRE,
        [OP_UNLOCK] = LOCK_REQUEST_RELEASE,
        [OP_COUNT] = LOCK_REQUEST_HOLD_COUNT,
        [OP_FORCE] = LOCK_REQUEST_FORCE_RELEASE,
        [OP_AWAIT] = LOCK_REQUEST_ACQUIRE,
        [OP_COUNTDOWN] = LOCK_REQUEST_ADD,
        [OP_LATCHSET] = LOCK_REQUEST_TRY_SET};
    struct lock_request req = {.kind = thread_kind(t),
                               .op = request_of[op],
                               .name = lock_names[lock],
                               .name_len = 2,
                               .thread_id =
                                   permit_mode() ? 0 : (uint64_t)t->index + 1,
                               .wait_ms = -1,
                               .lease_ms = -1,
                               .permit_id = t->permit[lock]};
    struct lock_call *call;

    if (op == OP_TRYLOCK || (op == OP_AWAIT && chance(50)))
        req.wait_ms = below(3) * 50;
    if ((op == OP_LOCK || op == OP_TRYLOCK) && chance(40))
        req.lease_ms = 50 + below(LEASE_MAX_MS - 50);
    if (op == OP_FORCE)
        net.last_fault = fake_clock.now_ms;
    if ((op == OP_LOCK || op == OP_TRYLOCK) && mode == MODE_EXPIRABLE)
        snprintf(t->permit[lock], sizeof(t->permit[lock]), "%02d%02d%02d%026u",
                 t->client->index, t->index, lock, ++t->permits_asked);
    t->amount = amount_of(t, op, lock);
    req.amount = t->amount;
    if (op == OP_LOCK || op == OP_TRYLOCK || op == OP_AWAIT) {
        t->lease_ms[lock] = req.lease_ms;
        t->asked_at[lock] = fake_clock.now_ms;
    }
    if (op == OP_UNLOCK && t->unlock_sent[lock] == 0)
        t->unlock_sent[lock] = fake_clock.now_ms;
    t->op = op;
    t->lock = lock;
    call = lock_engine_start(t->client->session, &req, on_done, t);
    if (t->op != OP_NONE)
        t->call = call;
}

static void stop_sections(struct client *c, uint64_t at, bool clean_up);

static void on_joined(void *ctx, struct session *s, int err)
{
    struct client *c = ctx;

    c->join = NULL;
    trace("c%d: CLIENTID -> %s", c->index, s ? "OK" : strerror(-err));
    if (err == -ENOENT) { /* told: nothing to resume, every lock lost */
        for (int t = 0; t < THREADS; t++)
            for (int l = 0; l < LOCKS; l++) {
                struct thread *th = &c->threads[t];

                if (th->believed[l] > 0)
                    hold_end(th, l, fake_clock.now_ms, true);
                th->in_doubt[l] = false;
                th->retried[l] = false;
            }
        c->resuming = false;
    }
    if (s == NULL) {
        c->reconnect_at = fake_clock.now_ms + 20;
        return;
    }
    c->session = s;
    c->connected = true;
    if (c->resuming && fake_clock.now_ms - c->broken_at > RESUME_GRACE_MS) {
        /* too late: it stopped its sections at the grace, and gives back
         * whatever the session still holds */
        trace("c%d: resumed late", c->index);
        stop_sections(c, c->broken_at + RESUME_GRACE_MS, true);
    } else if (c->resuming) {
        /* resumed: each hold is asked for (a Redis that lost data may
         * have lost part of the record: 0 then says the lock is lost),
         * and each name it may hold (one it gave back may have come
         * back with the record, after a failover lost the release) */
        for (int t = 0; t < (permit_mode() ? 1 : THREADS); t++)
            for (int l = 0; l < LOCKS && mode != MODE_LATCH; l++)
                acquire_in_doubt(&c->threads[t], l);
    }
    c->resuming = false;
}

static void client_connect(struct client *c)
{
    struct lock_join *j;

    trace("c%d: connect", c->index);
    j = lock_engine_join(c->id, strlen(c->id), c->has_secret ? secret : NULL,
                         c->has_secret ? strlen(secret) : 0, c->resuming,
                         on_joined, c);
    if (c->session == NULL && !c->connected)
        c->join = j;
}

/* The client stops every section it is in, at at (an UNLOCK already sent
 * ended one earlier), untold; clean_up: it owes UNLOCKs for them. */
static void stop_sections(struct client *c, uint64_t at, bool clean_up)
{
    for (int i = 0; i < THREADS; i++) {
        struct thread *t = &c->threads[i];

        for (int l = 0; l < LOCKS; l++) {
            if (clean_up)
                t->cleanup[l] += t->believed[l] + (t->in_doubt[l] ? 1 : 0);
            if (t->believed[l] > 0)
                hold_end(t, l, t->unlock_sent[l] ? t->unlock_sent[l] : at,
                         false);
            t->in_doubt[l] = false;
        }
    }
}

/* Every call of the client in flight is given up: no answer will come. */
static void abandon_calls(struct client *c, bool in_doubt)
{
    for (int i = 0; i < THREADS; i++) {
        struct thread *t = &c->threads[i];

        if (t->op == OP_NONE)
            continue;
        if (t->call != NULL)
            lock_engine_abandon(t->call);
        if (in_doubt && (t->op == OP_LOCK || t->op == OP_TRYLOCK))
            acquire_in_doubt(t, t->lock);
        if (t->op == OP_UNLOCK && !t->cleaning)
            t->retried[t->lock] = true;
        t->cleaning = false;
        t->op = OP_NONE;
        t->call = NULL;
    }
    if (c->join != NULL) {
        lock_engine_join_abandon(c->join);
        c->join = NULL;
    }
}

/* The client closes its connection itself: its session ends. */
static void client_disconnect(struct client *c)
{
    trace("c%d: disconnects", c->index);
    abandon_calls(c, false);
    if (c->connected)
        lock_engine_leave(c->session);
    c->session = NULL;
    c->connected = false;
    c->resuming = false;
    stop_sections(c, fake_clock.now_ms, false);
    for (int i = 0; i < THREADS; i++)
        memset(c->threads[i].cleanup, 0, sizeof(c->threads[i].cleanup));
    c->reconnect_at = fake_clock.now_ms + 20 + below(100);
}

/* ---- rlockd restarts ------------------------------------------------------ */

static void engine_start(void)
{
    if (lock_engine_init(&cfg, &sim_backend, &fake_engine_clock) != 0)
        fail("lock_engine_init");
}

/* rlockd stops (SIGTERM: waiters answered first) or dies (SIGKILL), and
 * a new one starts: the calls it sent still run in Redis, unanswered. */
static void rlockd_restart(bool sigterm)
{
    trace("rlockd: %s, restart", sigterm ? "SIGTERM" : "SIGKILL");
    if (sigterm)
        lock_engine_shutdown();
    for (int i = 0; i < CLIENTS; i++)
        abandon_calls(&clients[i], true);
    lock_engine_shutdown(); /* on_shutdown = keep: nothing is released */
    for (int i = 0; i < CLIENTS; i++) {
        struct client *c = &clients[i];

        if (c->connected)
            lock_engine_leave(c->session);
        c->session = NULL;
        if (c->connected || c->resuming) {
            c->resuming = c->has_secret;
            if (!c->has_secret) /* it cannot resume: it stops */
                stop_sections(c, fake_clock.now_ms, false);
            else if (c->connected)
                c->broken_at = fake_clock.now_ms;
            for (int t = 0; t < THREADS; t++)
                for (int l = 0; l < LOCKS; l++)
                    c->threads[t].suspect[l] = c->threads[t].believed[l] > 0;
        }
        c->connected = false;
        c->reconnect_at = fake_clock.now_ms + 10 + below(60);
    }
    /* Its calls in flight: each still runs in Redis, answered to nobody. */
    net.ready = false;
    for (size_t i = 0; i < net.npending; i++) {
        struct pending *p = pending_at(i);
        backend_reply_fn *fn = p->fn;

        p->fn = NULL;
        if (fn != NULL)
            fn(p->arg, NULL);
    }
    lock_engine_free();
    net.nlisteners = 0;
    engine_start();
    net.last_amnesia = fake_clock.now_ms;
    net.ready_at = fake_clock.now_ms + 5 + below(30);
    net.last_fault = net.ready_at + RESUME_GRACE_MS;
}

/* ---- the invariants --------------------------------------------------------- */

static struct {
    /* since when a field of the thread's in Redis is one it does not
     * account for (0: none is) */
    uint64_t orphan_since[CLIENTS][THREADS][LOCKS];
    uint64_t cycle_since; /* D1: since when a cycle of waits is (0: none) */
} watch;

#define MAX_OWNERS 16

/* The owners Redis has of a lock, as its kind keeps them: RLock's one,
 * the read-write lock's readers and writer, a semaphore's holders whose
 * time has not run out (a latch has none). */
struct owners {
    size_t n;
    const char *field[MAX_OWNERS];
    long long count[MAX_OWNERS];
};

/* A semaphore's keys besides its count (kind_semaphore.c's naming). */
static const char *const permit_owners[LOCKS] = {
    "rlockd_permits:{L0}", "rlockd_permits:{L1}", "rlockd_permits:{L2}"};
static const char *const permit_deadlines[LOCKS] = {
    "rlockd_permits_deadline:{L0}", "rlockd_permits_deadline:{L1}",
    "rlockd_permits_deadline:{L2}"};
static const char *const permit_ids[LOCKS] = {"{L0}:timeout", "{L1}:timeout",
                                              "{L2}:timeout"};

static void redis_owners(int lock, struct owners *o)
{
    const char *name = lock_names[lock];

    o->n = 0;
    if (mode == MODE_RW) {
        o->n = sim_redis_rw_owners(&net.redis, name, o->field, o->count,
                                   MAX_OWNERS);
    } else if (permit_mode()) {
        o->n = sim_redis_permit_holders(&net.redis, permit_owners[lock],
                                        permit_deadlines[lock],
                                        permit_ids[lock], fake_clock.now_ms,
                                        o->field, o->count, MAX_OWNERS);
    } else if (mode != MODE_LATCH &&
               sim_redis_lock(&net.redis, name, &o->field[0], &o->count[0])) {
        o->n = 1;
    }
}

/* Whether the thread's field of lock is among its owners o. */
static bool owned_by(const struct owners *o, const struct thread *t, int lock)
{
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->field[i], field_of(t, lock)) == 0)
            return true;
    return false;
}

/* Whether the thread's field of lock is still in Redis although it holds
 * nothing: a read hold whose lease ran out stays in the hash while other
 * readers keep it, and a semaphore's record keeps an owner past its
 * deadline; a session record a failover brought back resumes either. */
static bool field_stays(const struct thread *t, int lock)
{
    const char *key = permit_mode() ? permit_owners[lock] : lock_names[lock];

    return mode != MODE_LATCH && mode != MODE_EXPIRABLE &&
           sim_redis_has_field(&net.redis, key, field_of(t, lock));
}

/* Whose field it is: an expirable permit's id names its client and
 * thread in its first digits (start). */
static struct thread *thread_of_field(const char *field)
{
    if (mode == MODE_EXPIRABLE) {
        int c = (field[0] - '0') * 10 + field[1] - '0';
        int t = (field[2] - '0') * 10 + field[3] - '0';

        return c >= 0 && c < CLIENTS && t >= 0 && t < THREADS
                   ? &clients[c].threads[t]
                   : NULL;
    }
    for (int i = 0; i < CLIENTS; i++)
        for (int t = 0; t < THREADS; t++)
            if (strcmp(clients[i].threads[t].field, field) == 0)
                return &clients[i].threads[t];
    return NULL;
}

/* Whether the thread may still account for its field: it believes it, a
 * call is in flight or in doubt, or its session may come back. An
 * expirable permit: the one it holds or asks for. */
static bool accounted(const struct thread *t, int lock, const char *field)
{
    const struct client *c = t->client;

    if (mode == MODE_EXPIRABLE && strcmp(field, t->permit[lock]) != 0)
        return t->op != OP_NONE && t->lock == lock;
    return t->believed[lock] > 0 || t->op != OP_NONE || t->in_doubt[lock] ||
           t->cleanup[lock] > 0 || c->resuming || c->join != NULL;
}

/*
 * I5: a hold its thread believes leaves Redis only in a fault, at the end
 * of its lease, or after a restart it had not yet come back from: a
 * renewal the engine should have made and did not is a bug. A hold lost
 * in a fault is marked so: I1 excuses its overlaps, which no lock service
 * built on TTLs can prevent (the holder is told at its UNLOCK, if it
 * comes to one).
 */
static void check_held(struct thread *t, int lock, const struct owners *o)
{
    if (owned_by(o, t, lock)) {
        t->seen[lock] = true;
        return;
    }
    if (!t->seen[lock]) { /* gone before it was ever seen here */
        if (fake_clock.now_ms <= net.last_fault + WATCHDOG_MS)
            history.holds[t->hold[lock]].fault_lost = true;
        return;
    }
    t->seen[lock] = false;
    if (t->unlock_sent[lock] != 0 || t->op == OP_FORCE) /* its own doing */
        return;
    if (fake_clock.now_ms <= net.last_fault + WATCHDOG_MS ||
        !t->watchdog[lock] || t->client->resuming || t->count_unknown[lock])
        history.holds[t->hold[lock]].fault_lost = true;
    else
        fail("I5: %s of %s expired, no fault since %llu", lock_names[lock],
             field_of(t, lock), (unsigned long long)net.last_fault);
}

/* I3 and I4 for one owner Redis has of lock; true if it is an orphan. */
static bool check_owner(int l, const char *field, long long count)
{
    struct thread *t = thread_of_field(field);
    uint64_t *since;

    if (t == NULL)
        fail("a lock field of nobody: %s", field);
    since = &watch.orphan_since[t->client->index][t->index][l];
    if (accounted(t, l, field)) {
        /* I4 */
        if (t->op == OP_NONE && !t->in_doubt[l] && !t->retried[l] &&
            !t->count_unknown[l] && t->believed[l] > 0 &&
            t->client->connected && count != t->believed[l])
            fail("I4: %s of %s is %lld in Redis, %lld believed", lock_names[l],
                 field, count, t->believed[l]);
        return false;
    }
    if (*since == 0)
        *since = fake_clock.now_ms;
    else if (fake_clock.now_ms - *since >
             (*since > net.last_amnesia + ORPHAN_MAX_MS ? ORPHAN_FREED_MS
                                                        : ORPHAN_MAX_MS))
        fail("I3: %s held by %s, which nobody accounts for, for %llu ms",
             lock_names[l], field,
             (unsigned long long)(fake_clock.now_ms - *since));
    return true;
}

/* L1: once a latch is open, every AWAIT of it is answered within
 * LATCH_STRANDED_MS, a fault aside. */
static void check_awaits(void)
{
    for (int i = 0; i < CLIENTS; i++)
        for (int k = 0; k < THREADS; k++) {
            const struct thread *t = &clients[i].threads[k];
            uint64_t since;

            if (t->op != OP_AWAIT || latches.open_since[t->lock] == 0)
                continue;
            since = latches.open_since[t->lock];
            since = since > t->asked_at[t->lock] ? since : t->asked_at[t->lock];
            since = since > net.last_fault ? since : net.last_fault;
            if (fake_clock.now_ms > since + LATCH_STRANDED_MS)
                fail("L1: AWAIT %s by c%d.%d stranded: open since %llu",
                     lock_names[t->lock], i, k,
                     (unsigned long long)latches.open_since[t->lock]);
        }
}

/* D1's edge: thread t's LOCK or TRYLOCK in flight waits for u, which
 * holds its lock (believes it, and Redis has its field) in a mode that
 * keeps t out (both READ: not). */
static bool waits_for(const struct thread *t, const struct thread *u,
                      const struct owners *o)
{
    int l = t->lock;

    return t != u && (t->op == OP_LOCK || t->op == OP_TRYLOCK) &&
           !t->cleaning && u->believed[l] > 0 && owned_by(&o[l], u, l) &&
           !(thread_kind(t)->shared && thread_kind(u)->shared);
}

/* Whether a cycle of waits goes through thread number n (of CLIENTS *
 * THREADS), reached by the walk in path (depth first: a handful of
 * threads). */
static bool cycle_through(int n, int at, bool *on_path, const struct owners *o)
{
    const struct thread *t = &clients[at / THREADS].threads[at % THREADS];

    on_path[at] = true;
    for (int v = 0; v < CLIENTS * THREADS; v++) {
        const struct thread *u = &clients[v / THREADS].threads[v % THREADS];

        if (waits_for(t, u, o) &&
            (v == n || (!on_path[v] && cycle_through(n, v, on_path, o))))
            return true;
    }
    on_path[at] = false;
    return false;
}

/* D1, once a step. */
static void check_deadlocks(const struct owners *o)
{
    bool cycle = false;

    if (permit_mode() || mode == MODE_LATCH)
        return;
    for (int n = 0; n < CLIENTS * THREADS && !cycle; n++) {
        bool on_path[CLIENTS * THREADS] = {false};

        cycle = cycle_through(n, n, on_path, o);
    }
    if (!cycle) {
        watch.cycle_since = 0;
        return;
    }
    if (watch.cycle_since == 0)
        watch.cycle_since = fake_clock.now_ms;
    if (watch.cycle_since > net.last_fault + ORPHAN_MAX_MS &&
        fake_clock.now_ms - watch.cycle_since > DEADLOCK_MAX_MS)
        fail("D1: a cycle of waits since %llu (%llu deadlocks refused)",
             (unsigned long long)watch.cycle_since,
             (unsigned long long)stats.deadlocks_detected);
}

/* D2, at a -DEADLOCK: the refused thread's wait closed a cycle. Checked
 * for the kinds whose waits are all in D1's graph (the FAIR queue's and
 * a reader's yielding are not), and away from faults, after which
 * rlockd may know a hold a little longer than Redis keeps it. */
static void check_refusal(const struct thread *t)
{
    bool on_path[CLIENTS * THREADS] = {false};
    struct owners o[LOCKS];
    int n = t->client->index * THREADS + t->index;

    if ((mode != MODE_RLOCK && mode != MODE_FENCED) ||
        fake_clock.now_ms <= net.last_fault + ORPHAN_MAX_MS)
        return;
    for (int l = 0; l < LOCKS; l++)
        redis_owners(l, &o[l]);
    if (!cycle_through(n, n, on_path, o))
        fail("D2: c%d.%d refused -DEADLOCK for %s, in no cycle of waits",
             t->client->index, t->index, lock_names[t->lock]);
}

static void check_step(void)
{
    bool orphan[CLIENTS][THREADS][LOCKS] = {{{false}}};
    struct owners o[LOCKS];

    for (int l = 0; l < LOCKS; l++)
        redis_owners(l, &o[l]);
    for (int i = 0; i < CLIENTS; i++)
        for (int t = 0; t < THREADS; t++)
            for (int l = 0; l < LOCKS; l++) {
                struct thread *th = &clients[i].threads[t];

                if (th->believed[l] > 0)
                    check_held(th, l, &o[l]);
            }
    for (int l = 0; l < LOCKS; l++) {
        for (size_t k = 0; k < o[l].n; k++)
            if (check_owner(l, o[l].field[k], o[l].count[k])) {
                const struct thread *t = thread_of_field(o[l].field[k]);

                orphan[t->client->index][t->index][l] = true;
            }
    }
    for (int i = 0; i < CLIENTS; i++)
        for (int t = 0; t < THREADS; t++)
            for (int l = 0; l < LOCKS; l++) {
                struct thread *th = &clients[i].threads[t];

                if (!orphan[i][t][l])
                    watch.orphan_since[i][t][l] = 0;
                /* a count a failover may have undone is known again once
                 * the field is gone: not at the hold's end, since the
                 * failover may have brought back a session record the
                 * client gave back, which its next CLIENTID resumes */
                if (!owned_by(&o[l], th, l) && !field_stays(th, l))
                    th->count_unknown[l] = false;
            }
    check_deadlocks(o);
    note_latches();
    check_awaits();
}

/* Whether two holds overlapping is allowed: both a read-write lock's
 * reads, or one of them lost (told, or in a fault). */
static bool may_overlap(const struct hold_log *x, const struct hold_log *y)
{
    return (x->shared && y->shared) || x->told || y->told || x->fault_lost ||
           y->fault_lost;
}

/* P1: the permits held at the start of hold x, its own with those of
 * every hold it overlaps, are no more than the semaphore has. */
static void check_permits_at(const struct hold_log *x)
{
    long long held = 0;

    if (x->told || x->fault_lost)
        return;
    for (size_t b = 0; b < history.n; b++) {
        const struct hold_log *y = &history.holds[b];

        if (y->lock == x->lock && y->start <= x->start && x->start < y->end &&
            !y->told && !y->fault_lost)
            held += y->permits;
    }
    if (held > PERMITS)
        fail("P1: %lld permits of %s held at %llu, of %d", held,
             lock_names[x->lock], (unsigned long long)x->start, PERMITS);
}

/* I1 (P1 for a semaphore), once every hold is closed. */
static void check_exclusion(void)
{
    for (size_t a = 0; a < history.n; a++) {
        if (permit_mode()) {
            check_permits_at(&history.holds[a]);
            continue;
        }
        for (size_t b = a + 1; b < history.n; b++) {
            const struct hold_log *x = &history.holds[a],
                                  *y = &history.holds[b];

            if (x->lock != y->lock ||
                (x->client == y->client && x->thread == y->thread))
                continue;
            if (x->start < y->end && y->start < x->end && !may_overlap(x, y))
                fail("I1: c%d.%d held %s over [%llu, %llu], c%d.%d over "
                     "[%llu, %llu], neither told",
                     x->client, x->thread, lock_names[x->lock],
                     (unsigned long long)x->start, (unsigned long long)x->end,
                     y->client, y->thread, (unsigned long long)y->start,
                     (unsigned long long)y->end);
        }
    }
}

/* P2, once everyone has left and every holder's time ran out: no permit
 * is held, and the semaphore has every one it had. */
static void check_permits_back(void)
{
    for (int l = 0; l < LOCKS && permit_mode(); l++) {
        struct owners o;
        long long total = sim_redis_permits_total(
            &net.redis, lock_names[l], permit_owners[l], permit_ids[l]);

        redis_owners(l, &o);
        if (o.n > 0 || total != PERMITS)
            fail("P2: %s has %lld permits of %d, %zu holder(s) left",
                 lock_names[l], total, PERMITS, o.n);
    }
}

/* ---- the schedule ---------------------------------------------------------- */

static void thread_act(struct thread *t)
{
    int lock = (int)below(LOCKS), held = -1;

    for (int l = 0; l < LOCKS; l++) {
        if (t->cleanup[l] > 0) {
            t->cleaning = true;
            start(t, OP_UNLOCK, l);
            return;
        }
        if (t->in_doubt[l]) {
            start(t, OP_COUNT, l);
            return;
        }
        if (t->retried[l]) {
            start(t, OP_UNLOCK, l);
            return;
        }
        if (t->believed[l] > 0)
            held = l;
    }
    /* a semaphore's holder gives back what it holds before it takes more */
    if (held >= 0 && (permit_mode() || chance(70))) {
        start(t, permit_mode() || chance(80) ? OP_UNLOCK : OP_LOCK, held);
        return;
    }
    if (held >= 0 && !permit_mode() && mode != MODE_LATCH && chance(50))
        start(t, OP_LOCK,
              (held + (t->client->index % 2 ? LOCKS - 1 : 1)) % LOCKS);
    else if (mode == MODE_LATCH)
        start(t,
              chance(15)  ? OP_COUNTDOWN
              : chance(8) ? OP_LATCHSET
                          : OP_AWAIT,
              lock);
    else if (chance(2) && !permit_mode())
        start(t, OP_FORCE, lock);
    else if (chance(10) && mode != MODE_EXPIRABLE)
        start(t, OP_COUNT, lock);
    else
        start(t, chance(60) ? OP_LOCK : OP_TRYLOCK, lock);
}

static bool waiting(const struct client *c)
{
    for (int i = 0; i < THREADS; i++)
        if (c->threads[i].op == OP_LOCK || c->threads[i].op == OP_TRYLOCK ||
            c->threads[i].op == OP_AWAIT)
            return true;
    return false;
}

static void client_tick(struct client *c)
{
    uint64_t now = fake_clock.now_ms;

    if (clients_quiet)
        return;
    if (!c->connected) {
        if (c->join == NULL && now >= c->reconnect_at)
            client_connect(c);
        return;
    }
    if (now < c->paused_until)
        return;
    /* now and then, and more often while it waits for a lock (a client
     * that gives up a wait by closing its connection) */
    if (below(waiting(c) ? 300 : 4000) == 0) {
        client_disconnect(c);
        return;
    }
    if (below(2000) == 0) {
        c->paused_until = now + below(LEASE_MAX_MS);
        trace("c%d: pauses", c->index);
        return;
    }
    for (int i = 0; i < (permit_mode() ? 1 : THREADS); i++)
        if (c->threads[i].op == OP_NONE && chance(6))
            thread_act(&c->threads[i]);
}

static bool faults_on = true;

/* The counts the run starts with: each semaphore's permits, each latch's
 * count (1 to 3); after a Redis restart the semaphores get theirs again,
 * as an operator would set them. */
static void counts_set(bool latches_too)
{
    for (int l = 0; l < LOCKS; l++)
        if (permit_mode())
            sim_redis_set_integer(&net.redis, lock_names[l], PERMITS);
        else if (mode == MODE_LATCH && latches_too)
            sim_redis_set_integer(&net.redis, lock_names[l], 1 + below(3));
}

static void fault_tick(void)
{
    unsigned roll;

    if (!faults_on || !net.ready)
        return;
    roll = below(20000);
    if (roll < 16) {
        drop_connection(below(100));
    } else if (roll < 19) {
        trace("redis: restart, every key lost");
        drop_connection(below(100));
        sim_redis_flush(&net.redis);
        counts_set(false);
        net.last_fault = fake_clock.now_ms;
        net.last_amnesia = fake_clock.now_ms;
    } else if (roll < 22) {
        trace("redis: failover, writes since the snapshot lost");
        drop_connection(below(100));
        sim_redis_restore(&net.redis);
        net.last_fault = fake_clock.now_ms;
        net.last_amnesia = fake_clock.now_ms;
        /* Standalone rlockd cannot tell; the Sentinel issue re-checks
         * every lock after a master change. */
        for (int i = 0; i < CLIENTS; i++)
            for (int t = 0; t < THREADS; t++)
                for (int l = 0; l < LOCKS; l++)
                    clients[i].threads[t].count_unknown[l] = true;
    } else if (roll < 25) {
        rlockd_restart(chance(50));
    }
}

/* One millisecond of the world. */
static void tick(void)
{
    fake_clock.now_ms++;
    sim_redis_expire(&net.redis, fake_clock.now_ms);
    if (fake_clock.now_ms >= net.next_snapshot) {
        sim_redis_snapshot(&net.redis);
        net.next_snapshot = fake_clock.now_ms + 25;
    }
    if (!net.ready && fake_clock.now_ms >= net.ready_at) {
        /* back: calls left from before run first, then the engine looks */
        while (net.npending > 0 && pending_at(0)->fn == NULL) {
            run_pending(pop_pending());
        }
        net.ready = true;
        trace("net: connected");
        for (size_t i = 0; i < net.nlisteners; i++)
            queue_message(net.channels[i], "", true);
        lock_engine_backend_ready();
    }
    while (net.npending > 0 && pending_at(0)->at <= fake_clock.now_ms) {
        run_pending(pop_pending());
    }
    for (size_t i = 0; i < net.nmessages;) {
        if (net.messages[i].at <= fake_clock.now_ms) {
            struct message m = net.messages[i];

            net.messages[i] = net.messages[--net.nmessages];
            deliver_message(&m);
        } else {
            i++;
        }
    }
    if (fake_clock.due_ms <= fake_clock.now_ms)
        lock_engine_run_timers();
    fault_tick();
    for (int i = 0; i < CLIENTS; i++)
        client_tick(&clients[i]);
    check_step();
}

static void world_init(uint64_t seed)
{
    rng_state = seed;
    seed_now = seed;
    mode = only_mode >= 0 ? (enum sim_mode)only_mode
                          : (enum sim_mode)(seed % MODE_COUNT);
    memset(&trace_log.lines, 0, sizeof(trace_log.lines));
    trace_log.next = 0;
    /* (not memset: the rings are megabytes, and need no clearing) */
    net.first = net.npending = net.nmessages = net.nlisteners = 0;
    net.ready_at = net.last_at = net.next_snapshot = net.last_fault = 0;
    net.last_amnesia = 0;
    memset(&history, 0, sizeof(history));
    memset(&watch, 0, sizeof(watch));
    memset(&tokens, 0, sizeof(tokens));
    memset(&latches, 0, sizeof(latches));
    memset(&stats, 0, sizeof(stats));
    sim_redis_init(&net.redis, on_publish, NULL);
    fake_clock_init(1000);
    net.ready = true;
    for (int i = 0; i < CLIENTS; i++) {
        struct client *c = &clients[i];

        memset(c, 0, sizeof(*c));
        c->index = i;
        snprintf(c->id, sizeof(c->id), "c%d", i);
        c->has_secret = i % 2 == 0;
        for (int t = 0; t < THREADS; t++) {
            c->threads[t].client = c;
            c->threads[t].index = t;
            /* a semaphore's owner is the session: its first thread (the
             * second one's field is never used) */
            if (permit_mode())
                snprintf(c->threads[t].field, sizeof(c->threads[t].field),
                         "c%d:%s", i, t == 0 ? "0" : "-");
            else
                snprintf(c->threads[t].field, sizeof(c->threads[t].field),
                         "c%d:%d%s", i, t + 1,
                         thread_kind(&c->threads[t])->field_suffix);
        }
    }
    counts_set(true);
    engine_start();
}

/* No more faults; every client gives back what it holds. */
static void world_drain(void)
{
    faults_on = false;
    for (int l = 0; l < LOCKS && mode == MODE_LATCH; l++) {
        char channel[SIM_STR];

        /* another program counts each latch down: every waiter goes */
        snprintf(channel, sizeof(channel),
                 "redisson_countdownlatch__channel__{%s}", lock_names[l]);
        if (!latch_open(l)) {
            sim_redis_set_integer(&net.redis, lock_names[l], 0);
            on_publish(channel, "0", NULL);
        }
    }
    for (int round = 0; round < 20000; round++) {
        bool busy = !net.ready || net.npending > 0;

        for (int i = 0; i < CLIENTS; i++) {
            struct client *c = &clients[i];

            c->paused_until = 0;
            for (int t = 0; t < THREADS; t++) {
                struct thread *th = &c->threads[t];

                for (int l = 0; l < LOCKS; l++)
                    busy |= th->believed[l] > 0 || th->in_doubt[l] ||
                            th->cleanup[l] > 0 || th->retried[l];
                busy |= th->op != OP_NONE;
            }
            busy |= !c->connected;
        }
        if (!busy)
            break;
        fake_clock.now_ms++;
        tick();
        for (int i = 0; i < CLIENTS; i++)
            for (int t = 0; t < THREADS; t++) {
                struct thread *th = &clients[i].threads[t];

                for (int l = 0; l < LOCKS && th->op == OP_NONE; l++)
                    if (th->believed[l] > 0 && clients[i].connected)
                        start(th, OP_UNLOCK, l);
            }
    }
    faults_on = true;
}

static void world_end(void)
{
    for (int i = 0; i < CLIENTS; i++) {
        abandon_calls(&clients[i], false);
        if (clients[i].connected)
            lock_engine_leave(clients[i].session);
    }
    lock_engine_shutdown();
    net.ready = false;
    for (size_t i = 0; i < net.npending; i++)
        if (pending_at(i)->fn != NULL)
            pending_at(i)->fn(pending_at(i)->arg, NULL);
    lock_engine_free();
}

/* Nobody does anything for ms: what nobody accounts for runs out. */
static void world_rest(uint64_t ms)
{
    faults_on = false;
    clients_quiet = true;
    for (uint64_t i = 0; i < ms; i++)
        tick();
    clients_quiet = false;
    faults_on = true;
}

/* -DEADLOCK refusals over every seed run, to show D1 was put to work. */
static uint64_t deadlocks_refused;

static void run_seed(uint64_t seed, unsigned steps)
{
    world_init(seed);
    for (unsigned i = 0; i < steps; i++)
        tick();
    world_drain();
    check_exclusion();
    if (permit_mode()) { /* everyone leaves */
        for (int i = 0; i < CLIENTS; i++)
            if (clients[i].connected)
                client_disconnect(&clients[i]);
        world_rest(ORPHAN_MAX_MS);
        check_permits_back();
    }
    deadlocks_refused += stats.deadlocks_detected;
    world_end();
}

static unsigned long env_number(const char *name, unsigned long fallback)
{
    const char *v = getenv(name);

    return v != NULL && *v ? strtoul(v, NULL, 10) : fallback;
}

int main(void)
{
    unsigned long seeds = env_number("SIM_SEEDS", 1000),
                  steps = env_number("SIM_STEPS", 3000),
                  one = env_number("SIM_SEED", 0),
                  first = env_number("SIM_FIRST", 1);

    const char *kind = getenv("SIM_KIND");
    /* once: the signal's default action is back for the raise */
    struct sigaction crash = {.sa_handler = on_crash, .sa_flags = SA_RESETHAND};

    sigaction(SIGSEGV, &crash, NULL);
    sigaction(SIGABRT, &crash, NULL);
    config_set_defaults(&cfg);
    cfg.watchdog_timeout_ms = WATCHDOG_MS;
    /* Renewals in calls of two, one call in flight: a round's calls wait
     * for one another, and holds are released, lost and failed over
     * while theirs waits (watchdog.c's batch_compact). */
    cfg.renew_batch_size = 2;
    cfg.renew_calls_in_flight = 1;
    log_set_level(LOG_LEVEL_ERROR);
    for (int m = 0; kind != NULL && *kind && m < MODE_COUNT; m++)
        if (strcmp(kind, mode_names[m]) == 0)
            only_mode = m;
    if (kind != NULL && *kind && only_mode < 0) {
        fprintf(stderr, "sim: SIM_KIND is one of rlock, fair, fenced, rw, "
                        "semaphore, expirable, latch\n");
        return 2;
    }
    if (one != 0) {
        trace_log.print = true;
        run_seed(one, (unsigned)steps);
        printf("sim: seed %lu passed\n", one);
        return 0;
    }
    for (unsigned long s = first; s <= seeds; s++)
        run_seed(s, (unsigned)steps);
    printf("sim: seeds %lu..%lu of %lu steps passed%s%s (%llu deadlocks "
           "refused)\n",
           first, seeds, steps, only_mode >= 0 ? ", all " : "",
           only_mode >= 0 ? mode_names[only_mode] : "",
           (unsigned long long)deadlocks_refused);
    return 0;
}
