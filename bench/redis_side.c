/*
 * redis_side.c - the bench's synchronous connection to Redis.
 *
 * Owns: loading the direct side's scripts, the checks after a run (no
 * lock key left, a semaphore's count back), Redis's command counts and
 * what a run cost it, and the --skip-unsupported probe of an rlockd. It
 * never sends timed load: that goes through the driver's async clients.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bench.h"

redisContext *redis_sync;

/* Ends the run unless a synchronous command got a reply that is not an
 * error; returns that reply. `what` ("redis", "rlockd"), host and port
 * name the other end in the message. */
redisReply *sync_reply_checked(redisContext *ctx, const char *what,
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

redisReply *redis_sync_command(const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(redis_sync, fmt, ap);
    va_end(ap);
    return sync_reply_checked(redis_sync, "redis", bench_opt.redis_host,
                              bench_opt.redis_port, r);
}

static void load_script(const char *script, char *sha, size_t size)
{
    redisReply *r = redis_sync_command("SCRIPT LOAD %s", script);

    if (r->type != REDIS_REPLY_STRING)
        fatal("SCRIPT LOAD: unexpected reply type %d", r->type);
    snprintf(sha, size, "%s", r->str);
    freeReplyObject(r);
}

void redis_setup(void)
{
    unsigned char b[16];

    redis_sync = redisConnect(bench_opt.redis_host, bench_opt.redis_port);
    if (redis_sync == NULL || redis_sync->err)
        fatal("connect to redis %s:%d: %s", bench_opt.redis_host,
              bench_opt.redis_port,
              redis_sync ? redis_sync->errstr : "out of memory");
    for (int k = 0; k < KIND_COUNT; k++) {
        struct script_call *calls[] = {bench_kinds[k].acquire,
                                       bench_kinds[k].release,
                                       bench_kinds[k].set_up};

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
int count_leftover_locks(const struct scenario *sc)
{
    const enum call_arg *keys = sc->kind->released_keys;
    const char *kept;
    int leftover = 0;
    char key[256];

    for (int i = 0; i < scenario_names(sc); i++) {
        const struct bench_client *cl = &sc->clients[i];

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
void redis_command_calls(struct command_calls *c)
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
long long command_calls_total(const struct command_calls *c)
{
    return c->evalsha + c->eval + c->other;
}

static long long command_calls_scripts(const struct command_calls *c)
{
    return c->evalsha + c->eval;
}

/* ---- what a run cost Redis ----------------------------------------------- */

/* What Redis did between two readings of its CPU time and its command
 * calls. */
void redis_cost_between(const struct cpu_snapshot *cpu_before,
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

/* ---- --skip-unsupported -------------------------------------------------- */

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
bool rlockd_refuses(struct scenario *sc, int scenario_no)
{
    struct bench_client probe = {.sc = sc};
    struct bench_request set_up = {NULL, 0};
    const struct bench_request *cmds[3];
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
    ctx = redisConnect(bench_opt.rlockd_host, bench_opt.rlockd_port);
    if (ctx == NULL || ctx->err)
        fatal("connect to rlockd %s:%d: %s", bench_opt.rlockd_host,
              bench_opt.rlockd_port, ctx ? ctx->errstr : "out of memory");
    for (int i = 0; i < n && sc->skipped[0] == '\0'; i++) {
        redisReply *r = NULL;

        if (redisAppendFormattedCommand(ctx, cmds[i]->text,
                                        (size_t)cmds[i]->len) != REDIS_OK ||
            redisGetReply(ctx, (void **)&r) != REDIS_OK)
            fatal("rlockd %s:%d: %s", bench_opt.rlockd_host,
                  bench_opt.rlockd_port, ctx->errstr);
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
