/*
 * script_batch.c - the script calls of one loop turn, one script call per
 * key group (see script_batch.h for why).
 *
 * A call is copied into its group's batch when it is made; a uv_prepare
 * handle sends every batch just before the loop polls, and has the links
 * write them at once, so the calls made anywhere in a turn (client
 * commands, Redis replies, timers) leave together, in the same write
 * that would have carried them one by one. A
 * batch of one call is sent as that call. A larger one is one EVALSHA of
 * the batch script:
 *
 *   KEYS  every call's keys, call after call
 *   ARGV  for each call: its script's number, its key count, its
 *         argument count, then its arguments
 *
 * and its reply is an array, one element per call: the script's reply
 * (false for nil), or the error it raised, which Lua's pcall keeps from
 * failing the calls after it.
 */
#include "backend/script_batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis_link.h"
#include "base/hashmap.h"
#include "base/list.h"
#include "base/log.h"
#include "base/stats.h"

/* A call with more keys is a batch of its own (the watchdog's renewal of
 * many holds, which renew_batch_size sizes) and goes alone: batching it
 * again would only make one longer script, during which Redis serves
 * nobody else. */
#define BATCH_MAX_KEYS_PER_CALL 8

/* Runs the calls in ARGV's list through S, the registered scripts. */
static const char batch_runner[] =
    "local out, k, a, n = {}, 0, 1, #ARGV\n"
    "while a <= n do\n"
    "  local s, nk, na = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), "
    "tonumber(ARGV[a + 2])\n"
    "  local keys, args = {}, {}\n"
    "  for j = 1, nk do keys[j] = KEYS[k + j] end\n"
    "  for j = 1, na do args[j] = ARGV[a + 2 + j] end\n"
    "  k, a = k + nk, a + 3 + na\n"
    "  local ok, r = pcall(S[s], keys, args)\n"
    "  if not ok then\n"
    "    r = redis.error_reply(type(r) == 'table' and r.err or tostring(r))\n"
    "  end\n"
    "  if r == nil then r = false end\n"
    "  out[#out + 1] = r\n"
    "end\n"
    "return out\n";

/* One call kept in a batch: the caller's, with copies of its key and
 * arguments (argv_len, then the key's bytes and the arguments' follow). */
struct kept_call {
    struct list_node link;
    backend_reply_fn *fn;
    void *arg;
    struct backend_script *script;
    int nkeys;
    int argc;
    size_t key_len;
    const char *key;
    size_t argv_len[];
};

/* The calls kept for one key group in this turn. */
struct batch {
    unsigned group; /* the map's key */
    struct list_node link;
    struct list_node calls; /* struct kept_call.link, in order */
    struct list_node syncs; /* struct kept_call.link: WAITs behind it */
    size_t count;
    size_t nkeys; /* of all its calls */
    size_t argc;  /* of the batch script call they make */
};

/* A batch sent: who gets which element of its reply. */
struct batch_flight {
    size_t count;
    struct {
        backend_reply_fn *fn;
        void *arg;
    } to[];
};

static struct {
    const struct config *cfg;
    const struct backend *next;
    unsigned (*sync_replicas)(const char *key, size_t len);
    uv_prepare_t flush;
    struct hashmap by_group;
    struct list_node open; /* struct batch.link, in the order opened */
    /* Calls that could not be sent, answered as lost (NULL) at the next
     * flush: never from inside the eval of another call. */
    struct list_node failed;         /* struct kept_call.link */
    unsigned kept;                   /* calls in open batches and in failed */
    struct backend_script **scripts; /* the batch script's S, 1-based */
    size_t script_count;
    char *source;
    struct backend_script script; /* the batch script */
} batching;

static const struct backend_value bad_batch_reply = {
    .type = VALUE_ERROR,
    .str = "ERR unexpected reply to a batch of scripts",
    .len = sizeof("ERR unexpected reply to a batch of scripts") - 1,
};

/* ---- the batch script -------------------------------------------------- */

static void add_script(struct backend_script *script)
{
    struct backend_script **list =
        realloc(batching.scripts,
                (batching.script_count + 1) * sizeof(*batching.scripts));

    batching.next->add_script(script);
    if (list == NULL) { /* it is sent alone, unbatched */
        log_warn("out of memory: script %s is not batched", script->name);
        return;
    }
    batching.scripts = list;
    batching.scripts[batching.script_count++] = script;
    script->batch_slot = batching.script_count;
}

/* "local S = {}", each script as "S[i] = function(KEYS, ARGV) ... end"
 * (its KEYS and ARGV are then the call's own), and the runner. */
int script_batch_start(void)
{
    static const char head[] = "local S = {}\n";
    static const char script_fmt[] = "S[%zu] = function(KEYS, ARGV)\n%s\nend\n";
    size_t size = sizeof(head) + sizeof(batch_runner), used;

    if (batching.script_count < 1)
        return 0;
    for (size_t i = 0; i < batching.script_count; i++)
        size += sizeof(script_fmt) + FORMAT_INT_MAX +
                strlen(batching.scripts[i]->source);
    batching.source = malloc(size);
    if (batching.source == NULL)
        return -ENOMEM;
    used = (size_t)snprintf(batching.source, size, "%s", head);
    for (size_t i = 0; i < batching.script_count; i++)
        used +=
            (size_t)snprintf(batching.source + used, size - used, script_fmt,
                             i + 1, batching.scripts[i]->source);
    snprintf(batching.source + used, size - used, "%s", batch_runner);
    batching.script.name = "batch";
    batching.script.source = batching.source;
    batching.next->add_script(&batching.script);
    return 0;
}

/* ---- sending ------------------------------------------------------------ */

static void flight_reply(void *arg, const struct backend_value *reply)
{
    struct batch_flight *flight = arg;
    bool each = reply != NULL && reply->type == VALUE_ARRAY &&
                reply->elements == flight->count;

    if (reply != NULL && !each && reply->type != VALUE_ERROR)
        reply = &bad_batch_reply;
    for (size_t i = 0; i < flight->count; i++)
        flight->to[i].fn(flight->to[i].arg, each ? &reply->element[i] : reply);
    free(flight);
}

static const char *kept_bytes(const struct kept_call *c)
{
    return (const char *)(c->argv_len + c->argc);
}

/* Sends one kept call as the call it was. */
static int send_alone(struct kept_call *c)
{
    const char *argv[c->argc > 0 ? c->argc : 1];
    const char *p = kept_bytes(c) + c->key_len;

    for (int i = 0; i < c->argc; i++) {
        argv[i] = p;
        p += c->argv_len[i];
    }
    return batching.next->eval(
        &(struct backend_call){c->script, c->key, c->key_len, c->nkeys, c->argc,
                               argv, c->argv_len},
        c->fn, c->arg);
}

/* The batch script's KEYS and ARGV for b's calls, into argv and len
 * (b->argc entries each); the numbers are written into numbers. */
static void batch_args(const struct batch *b, const char **argv, size_t *len,
                       char (*numbers)[FORMAT_INT_MAX])
{
    size_t key_at = 0, arg_at = b->nkeys, n = 0;
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &b->calls) {
        struct kept_call *c = list_entry(pos, struct kept_call, link);
        const char *p = kept_bytes(c) + c->key_len;
        long long head[3] = {(long long)c->script->batch_slot, c->nkeys,
                             c->argc - c->nkeys};

        for (int h = 0; h < 3; h++, n++) {
            argv[arg_at] = numbers[n];
            len[arg_at++] = format_int64(numbers[n], head[h]);
        }
        for (int i = 0; i < c->argc; i++) {
            size_t *at = i < c->nkeys ? &key_at : &arg_at;

            argv[*at] = p;
            len[(*at)++] = c->argv_len[i];
            p += c->argv_len[i];
        }
    }
}

/* Sends b's calls as one batch script call; 0 or a negative errno. */
static int send_batch(struct batch *b)
{
    struct kept_call *first =
        list_entry(list_first(&b->calls), struct kept_call, link);
    struct batch_flight *flight =
        malloc(sizeof(*flight) + b->count * sizeof(flight->to[0]));
    const char **argv = malloc(b->argc * sizeof(*argv));
    size_t *len = malloc(b->argc * sizeof(*len)), i = 0;
    char(*numbers)[FORMAT_INT_MAX] = malloc(b->count * 3 * sizeof(*numbers));
    struct list_node *pos, *tmp;
    int err = -ENOMEM;

    if (flight == NULL || argv == NULL || len == NULL || numbers == NULL)
        goto out;
    flight->count = b->count;
    list_for_each_safe (pos, tmp, &b->calls) {
        struct kept_call *c = list_entry(pos, struct kept_call, link);

        flight->to[i].fn = c->fn;
        flight->to[i++].arg = c->arg;
    }
    batch_args(b, argv, len, numbers);
    err = batching.next->eval(
        &(struct backend_call){&batching.script, first->key, first->key_len,
                               (int)b->nkeys, (int)b->argc, argv, len},
        flight_reply, flight);
    if (err == 0) {
        flight = NULL;
        stats.script_batches++;
        stats.script_batched_calls += b->count;
    }
out:
    free(flight);
    free(argv);
    free(len);
    free(numbers);
    return err;
}

/* Sends the WAITs kept behind a batch that was sent. */
static void syncs_send(struct list_node *syncs)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, syncs) {
        struct kept_call *c = list_entry(pos, struct kept_call, link);

        list_remove(pos);
        if (batching.next->sync(c->key, c->key_len, c->fn, c->arg) != 0) {
            list_push_tail(&batching.failed, pos);
        } else {
            batching.kept--;
            free(c);
        }
    }
}

/* Moves every call of list to failed. */
static void calls_fail(struct list_node *list)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, list) {
        list_remove(pos);
        list_push_tail(&batching.failed, pos);
    }
}

/* Sends b and frees it; calls that could not be sent wait in failed. */
static void batch_flush(struct batch *b)
{
    struct list_node *pos, *tmp;
    struct kept_call *only = NULL;
    int err;

    hashmap_remove(&batching.by_group, &b->group, sizeof(b->group));
    list_remove(&b->link);
    if (b->count == 1)
        only = list_entry(list_first(&b->calls), struct kept_call, link);
    err = only != NULL ? send_alone(only) : send_batch(b);
    if (err != 0) {
        log_debug("redis: %zu script call(s) could not be sent: %s", b->count,
                  uv_strerror(err));
        calls_fail(&b->calls);
        calls_fail(&b->syncs);
        free(b);
        return;
    }
    list_for_each_safe (pos, tmp, &b->calls) {
        list_remove(pos);
        batching.kept--;
        free(list_entry(pos, struct kept_call, link));
    }
    syncs_send(&b->syncs);
    free(b);
}

/* Answers c as lost and frees it. */
static void kept_call_fail(struct kept_call *c)
{
    list_remove(&c->link);
    batching.kept--;
    c->fn(c->arg, NULL);
    free(c);
}

static void flush_group(unsigned group)
{
    struct batch *b = hashmap_get(&batching.by_group, &group, sizeof(group));

    if (b != NULL)
        batch_flush(b);
}

/* Before the loop polls: every batch opened since, and the calls that
 * could not be sent answered (whose callers may open batches again). */
static void on_flush(uv_prepare_t *handle)
{
    struct list_node *first;

    (void)handle;
    for (;;) {
        if ((first = list_first(&batching.open)) != NULL)
            batch_flush(list_entry(first, struct batch, link));
        else if ((first = list_first(&batching.failed)) != NULL)
            kept_call_fail(list_entry(first, struct kept_call, link));
        else
            break;
    }
    redis_links_flush(); /* a prepare handle too, which may have run */
}

/* ---- struct backend ------------------------------------------------------ */

static struct batch *batch_of_group(unsigned group)
{
    struct batch *b = hashmap_get(&batching.by_group, &group, sizeof(group));

    if (b != NULL)
        return b;
    b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->group = group;
    list_init(&b->calls);
    list_init(&b->syncs);
    if (hashmap_put(&batching.by_group, &b->group, sizeof(b->group), b) != 0) {
        free(b);
        return NULL;
    }
    list_push_tail(&batching.open, &b->link);
    return b;
}

static struct kept_call *kept_call_new(const struct backend_call *call,
                                       backend_reply_fn *fn, void *arg)
{
    size_t bytes = call->key_len;
    struct kept_call *c;
    char *p;

    for (int i = 0; i < call->argc; i++)
        bytes += call->argv_len[i];
    c = malloc(sizeof(*c) + (size_t)call->argc * sizeof(size_t) + bytes);
    if (c == NULL)
        return NULL;
    *c = (struct kept_call){.fn = fn,
                            .arg = arg,
                            .script = call->script,
                            .nkeys = call->nkeys,
                            .argc = call->argc,
                            .key_len = call->key_len};
    p = (char *)(c->argv_len + call->argc);
    memcpy(p, call->key, call->key_len);
    c->key = p;
    p += call->key_len;
    for (int i = 0; i < call->argc; i++) {
        c->argv_len[i] = call->argv_len[i];
        memcpy(p, call->argv[i], call->argv_len[i]);
        p += call->argv_len[i];
    }
    return c;
}

/* A script call joins its group's batch; anything else is sent now,
 * behind that batch. */
static int batch_eval(const struct backend_call *call, backend_reply_fn *fn,
                      void *arg)
{
    unsigned group = batching.next->key_group(call->key, call->key_len);
    size_t max = (size_t)batching.cfg->batch_max_calls;
    struct kept_call *c;
    struct batch *b;

    if (call->script == NULL || call->script->batch_slot == 0 ||
        batching.source == NULL || max < 2 ||
        call->nkeys > BATCH_MAX_KEYS_PER_CALL) {
        flush_group(group);
        return batching.next->eval(call, fn, arg);
    }
    if (!batching.next->key_ready(call->key, call->key_len))
        return -ENOTCONN;
    b = hashmap_get(&batching.by_group, &group, sizeof(group));
    if (b != NULL && b->count >= max)
        batch_flush(b); /* full: this call starts the next one */
    c = kept_call_new(call, fn, arg);
    b = c != NULL ? batch_of_group(group) : NULL;
    if (b == NULL) {
        free(c);
        return -ENOMEM;
    }
    list_push_tail(&b->calls, &c->link);
    b->count++;
    b->nkeys += (size_t)call->nkeys;
    b->argc += (size_t)call->argc + 3;
    batching.kept++;
    return 0;
}

/* A WAIT covers what its connection sent before it: for a group with a
 * batch open it waits with the batch, and is sent right behind it. */
static int batch_sync(const char *key, size_t len, backend_reply_fn *fn,
                      void *arg)
{
    unsigned group = batching.next->key_group(key, len);
    struct batch *b = hashmap_get(&batching.by_group, &group, sizeof(group));
    struct kept_call *c;

    if (b == NULL)
        return batching.next->sync(key, len, fn, arg);
    if (batching.sync_replicas(key, len) == 0)
        return -ENOENT;
    c = kept_call_new(&(struct backend_call){NULL, key, len, 0, 0, NULL, NULL},
                      fn, arg);
    if (c == NULL)
        return -ENOMEM;
    list_push_tail(&b->syncs, &c->link);
    batching.kept++;
    return 0;
}

static int batch_listen(struct backend_listener *listener, const char *channel,
                        size_t len)
{
    return batching.next->listen(listener, channel, len);
}

static void batch_unlisten(struct backend_listener *listener)
{
    batching.next->unlisten(listener);
}

static bool batch_key_ready(const char *key, size_t len)
{
    return batching.next->key_ready(key, len);
}

static unsigned batch_key_group(const char *key, size_t len)
{
    return batching.next->key_group(key, len);
}

static const char *batch_publish(void)
{
    return batching.next->publish();
}

static const struct backend batch_ops = {
    .add_script = add_script,
    .eval = batch_eval,
    .listen = batch_listen,
    .unlisten = batch_unlisten,
    .key_ready = batch_key_ready,
    .key_group = batch_key_group,
    .sync = batch_sync,
    .publish = batch_publish,
};

/* ---- life ---------------------------------------------------------------- */

int script_batch_init(uv_loop_t *loop, const struct config *cfg,
                      const struct backend *next,
                      unsigned (*sync_replicas)(const char *key, size_t len))
{
    int err;

    batching.cfg = cfg;
    batching.next = next;
    batching.sync_replicas = sync_replicas;
    hashmap_init(&batching.by_group);
    list_init(&batching.open);
    list_init(&batching.failed);
    if ((err = uv_prepare_init(loop, &batching.flush)) != 0 ||
        (err = uv_prepare_start(&batching.flush, on_flush)) != 0)
        return err;
    uv_unref((uv_handle_t *)&batching.flush);
    return 0;
}

const struct backend *script_batch_backend(void)
{
    return &batch_ops;
}

unsigned script_batch_pending(void)
{
    return batching.kept;
}

void script_batch_close(void)
{
    struct list_node *first;

    while ((first = list_first(&batching.open)) != NULL) {
        struct batch *b = list_entry(first, struct batch, link);

        hashmap_remove(&batching.by_group, &b->group, sizeof(b->group));
        list_remove(&b->link);
        calls_fail(&b->calls);
        calls_fail(&b->syncs);
        free(b);
    }
    while ((first = list_first(&batching.failed)) != NULL)
        kept_call_fail(list_entry(first, struct kept_call, link));
    uv_close((uv_handle_t *)&batching.flush, NULL);
}

void script_batch_free(void)
{
    hashmap_free(&batching.by_group);
    free(batching.scripts);
    free(batching.source);
    batching.scripts = NULL;
    batching.source = NULL;
    batching.script_count = 0;
    batching.script = (struct backend_script){0};
}
