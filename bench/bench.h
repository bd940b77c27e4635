/*
 * bench.h - the private header of rlockd-bench, the load generator
 * behind `make bench` (main.c says what it measures and how).
 *
 * Only the files of bench/ include it. It holds what more than one of
 * them shares: the scenario and client structs, the kind table's row,
 * the options, and the functions one file calls in another. A file's
 * own helpers stay static in it. Its names never reuse the daemon's or
 * librlock's for other things (struct bench_client, not struct client).
 */
#ifndef RLOCKD_BENCH_H
#define RLOCKD_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <async.h>
#include <hiredis.h>

#define NS_PER_SEC 1000000000LL
#define MAX_CALL_ARGS 6

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

/* One script as the direct side calls it: EVALSHA sha #keys keys argv. */
struct script_call {
    const char *script;
    enum call_arg keys[MAX_CALL_ARGS]; /* ARG_END-terminated */
    enum call_arg argv[MAX_CALL_ARGS];
    char sha[48]; /* filled by redis_setup */
    bool clock;   /* takes ARG_NOW: formatted anew for every call */
};

/* What a direct script answers when it did what was asked: nil (the
 * locks' acquire: no TTL to wait for), 1, or {-1, token} (FENCED). */
enum direct_reply { REPLY_NIL, REPLY_ONE, REPLY_TOKEN_PAIR };

/* What differs between lock kinds, on both sides: one row each. */
struct bench_kind {
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

enum target { TARGET_DIRECT, TARGET_RLOCKD };

/* How a scenario's clients meet: each on a name of its own; all on one
 * name, as many holders at a time as it has permits (a lock has one;
 * hand-offs measured); or all on one name, client WRITER_INDEX taking
 * WRITE and the rest READ. */
enum contention { UNCONTENDED, HANDOFF, READERS_WRITER };
#define WRITER_INDEX 0

/* Processes whose CPU use is reported; pid <= 0 means unknown. */
enum proc { PROC_BENCH, PROC_REDIS, PROC_RLOCKD, PROC_COUNT };

struct bench_options {
    char *redis_host;
    int redis_port;
    char *rlockd_host;
    int rlockd_port;
    /* --rlockd-unix: the rlockd scenarios' clients connect to this Unix
     * socket of the same rlockd, as a sidecar's clients can (NULL: TCP) */
    char *rlockd_unix;
    double duration_s;
    double warmup_s;
    int clients;
    int contended_clients;
    int permits; /* of the contended semaphore */
    bool direct_only;
    bool rlockd_only;
    bool held_only;        /* the held-locks scenario alone */
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
struct bench_request {
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

struct bench_client {
    struct scenario *sc;
    const struct bench_kind *kind;
    redisAsyncContext *ac; /* NULL once hiredis has freed it */
    int index;
    uint32_t armed; /* epoll events registered for ac's fd */
    bool want_read;
    bool want_write;
    char name[128];
    struct bench_request acquire;
    struct bench_request release;
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
    const struct bench_kind *kind; /* READERS_WRITER: the readers' */
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
    struct bench_client *clients;
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

struct cpu_snapshot {
    int64_t at;
    double seconds[PROC_COUNT];
};

/* rlockd's INFO figures for the memory of its locks, in the order the
 * held-locks printout gives them per lock (held.c's held_breakdown). */
enum held_part {
    HELD_LOCK_BYTES,
    HELD_LOCK_STRING_BYTES,
    HELD_LOCK_WAIT_BYTES,
    HELD_LOCK_MAP_BYTES,
    HELD_HOLD_BYTES,
    HELD_HOLD_STRING_BYTES,
    HELD_PART_COUNT
};

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
    long rss_before_kb;  /* before the first LOCK */
    long rss_holding_kb; /* at the end of the window */
    /* Redis's VmRSS, beside its used_memory: what each process took from
     * the kernel, allocator keep and slack included (-1: no --redis-pid) */
    long redis_rss_before_kb, redis_rss_holding_kb;
    long rss_released_kb; /* after the release */
    long long redis_mem_before;
    long long redis_mem_holding;
    /* rlockd's own count of them, INFO at the two ends; < 0 unknown (a
     * build before these figures) */
    long long parts_before[HELD_PART_COUNT];
    long long parts_holding[HELD_PART_COUNT];
    /* checks */
    long long lost;        /* rlockd locks_lost, first LOCK to release */
    long existing_holding; /* lock keys in Redis at the end of the window */
    long existing_after;   /* lock keys in Redis after the release */
    long long held_after;  /* rlockd held_locks after the release */
    double settle_s;       /* last UNLOCK reply to held_locks:0 */
};

/* What a pair (HANDOFF: a grant) cost Redis, over the whole run, so that
 * the direct and rlockd sides are weighed by the same work: the window's
 * rate says how fast, this says how much of the shared server each pair
 * takes. NAN where unknown. */
struct redis_per_pair {
    double cpu_us;
    double commands;
    double script_calls;
};

/* The READERS_WRITER figures both printouts use. */
struct readers_writer_figures {
    double writer_per_s;
    double readers_per_s; /* all readers together */
};

/* options.c: the command line */
extern struct bench_options bench_opt;
void bench_parse_options(int argc, char **argv);

/* driver.c: the shared driver. Errors, time, samples, CPU and memory,
 * connections and the event loop, reply checks, a scenario's life. */
__attribute__((format(printf, 1, 2), noreturn)) void fatal(const char *fmt,
                                                           ...);
int64_t now_ns(void);
void samples_push(struct samples *s, int64_t x);
void samples_sort(struct samples *s);
double samples_percentile_us(const struct samples *s, double pct);
void samples_free(struct samples *s);
double process_cpu_seconds(pid_t pid);
void cpu_snapshot_take(struct cpu_snapshot *snap, const pid_t *pids);
void cpu_percent(const struct cpu_snapshot *a, const struct cpu_snapshot *b,
                 double *pct);
long process_rss_kb(pid_t pid);
void client_send(struct bench_client *cl, const struct bench_request *cmd,
                 redisCallbackFn *fn);
void scenario_loop(struct scenario *sc, bool (*done)(const struct scenario *),
                   int64_t deadline, const char *stuck_reason);
void describe_reply(const redisReply *r, char *buf, size_t size);
void unexpected_reply(const struct bench_client *cl, const char *what,
                      const redisReply *r, const char *expected);
void expect_status(const struct bench_client *cl, const char *what,
                   const redisReply *r, const char *status);
void expect_integer(const struct bench_client *cl, const char *what,
                    const redisReply *r, long long value);
void expect_nil(const struct bench_client *cl, const char *what,
                const redisReply *r);
bool is_token(const redisReply *r);
void format_argv(struct bench_request *cmd, int argc, const char **argv);
int scenario_names(const struct scenario *sc);
void client_name(struct bench_client *cl, int scenario_no);
void scenario_connect(struct scenario *sc, int scenario_no);
void scenario_disconnect(struct scenario *sc);
void scenario_run(struct scenario *sc, int scenario_no);
void sleep_until(int64_t deadline);

/* redis_side.c: the synchronous connection to Redis. Set-up, checks,
 * command counts, the --skip-unsupported probe. */
extern redisContext *redis_sync; /* for the set-up and the checks */
redisReply *sync_reply_checked(redisContext *ctx, const char *what,
                               const char *host, int port, redisReply *r);
redisReply *redis_sync_command(const char *fmt, ...);
void redis_setup(void);
int count_leftover_locks(const struct scenario *sc);
void redis_command_calls(struct command_calls *c);
long long command_calls_total(const struct command_calls *c);
void redis_cost_between(const struct cpu_snapshot *cpu_before,
                        const struct cpu_snapshot *cpu_after,
                        const struct command_calls *calls_before,
                        const struct command_calls *calls_after,
                        struct redis_cost *cost);
bool rlockd_refuses(struct scenario *sc, int scenario_no);

/* redisson.c: the direct side: Redisson's scripts and their arguments */
extern char owner_uuid[40]; /* the direct clients' Redisson-style UUID */
extern struct script_call redisson_rlock_acquire, redisson_rlock_release;
extern struct script_call redisson_fair_acquire, redisson_fair_release;
extern struct script_call redisson_read_acquire, redisson_read_release;
extern struct script_call redisson_write_acquire, redisson_write_release;
extern struct script_call redisson_fenced_acquire;
extern struct script_call redisson_semaphore_acquire,
    redisson_semaphore_release;
extern struct script_call redisson_semaphore_set;
void expect_direct(const struct bench_client *cl, const char *what,
                   enum direct_reply form, const redisReply *r);
const char *call_arg_value(const struct bench_client *cl, enum call_arg arg,
                           char *buf, size_t size);
int call_arg_count(const enum call_arg *list);
void direct_format(const struct bench_client *cl,
                   const struct script_call *call, struct bench_request *cmd);

/* kinds.c: the kind table and the rlockd requests made from it */
extern const struct bench_kind bench_kinds[KIND_COUNT];
const char *release_verb(const struct bench_kind *k);
void expect_granted(const struct bench_client *cl, const redisReply *r);
void expect_released(const struct bench_client *cl, const redisReply *r);
void set_up_format(const struct bench_client *cl, struct bench_request *cmd);
void client_prepare(struct bench_client *cl);
const char *kind_word(const struct bench_kind *k);
const char *kind_space(const struct bench_kind *k);

/* pairs.c: the lock+unlock loop and the many-clients markdown */
bool in_window(const struct scenario *sc, int64_t t);
void start_pair(struct bench_client *cl);
void print_markdown_row(const struct scenario *sc, const char *what,
                        const struct scenario *direct);
const struct scenario *find_scenario(const struct scenario *scs, int count,
                                     const struct bench_kind *kind,
                                     enum target target, enum contention mode);
void print_markdown_kinds(const struct scenario *scs, int count);

/* contended.c: the contended scenarios */
void contended_granted(struct bench_client *cl, int64_t now);
void readers_writer_granted(struct bench_client *cl, int64_t now);
void contended_summarize(struct scenario *sc);
void print_contended(const struct scenario *sc);
struct readers_writer_figures readers_writer_figures(const struct scenario *sc);
void print_readers_writer(const struct scenario *sc);
void print_markdown_contended(const struct scenario *scs, int count);

/* held.c: the held-locks scenario */
int held_run(struct scenario *sc, struct held_result *res);
void print_held(const struct held_result *h);
void print_markdown_held(const struct held_result *h);
void print_held_results(const struct held_result *h);

/* report.c: the report */
double per_second(const struct scenario *sc);
double p50_us(const struct samples *s);
double p99_us(const struct samples *s);
void format_cpu(const double *pct, char *buf, size_t size);
const char *format_figure(double v, char *buf, size_t size);
double ratio(double a, double b);
struct redis_per_pair redis_per_pair(const struct scenario *sc);
void print_table(const struct scenario *scs, int count);
void print_redis_per_pair(const struct scenario *sc, const char *per);
const char *format_ratio(double r, char *buf, size_t size);
void print_targets_and_markdown(const struct scenario *scs, int count,
                                const struct held_result *held);
void print_result(const char *scenario, const char *metric, const char *better,
                  double value);
void print_results(const struct scenario *scs, int count,
                   const struct held_result *h);

#endif
