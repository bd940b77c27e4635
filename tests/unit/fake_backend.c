/*
 * fake_backend.c - the unit tests' backend: requests queued until
 * answered, listeners kept by channel.
 *
 * Out of memory aborts: this is test code, and a test that cannot record
 * what the engine sent has nothing left to check.
 */
#include "fake_backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fake_backend fake_backend;

static void *must_alloc(size_t size)
{
    void *p = calloc(1, size);

    if (p == NULL)
        abort();
    return p;
}

static char *copy(const char *s, size_t len)
{
    char *out = must_alloc(len + 1);

    memcpy(out, s, len);
    return out;
}

/* ---- the backend's functions ------------------------------------------ */

static void fake_add_script(struct backend_script *script)
{
    if (fake_backend.script_count < FAKE_BACKEND_MAX_SCRIPTS)
        fake_backend.scripts[fake_backend.script_count++] = script;
    else
        fake_backend.misuse++; /* has_script could not find it */
}

static int fake_eval(const struct backend_call *call, backend_reply_fn *fn,
                     void *arg)
{
    struct fake_eval *e;

    if (fake_backend.eval_error != 0) {
        fake_backend.refused++;
        return fake_backend.eval_error;
    }
    e = must_alloc(sizeof(*e));
    e->script = call->script;
    e->key = copy(call->key, call->key_len);
    e->nkeys = call->nkeys;
    e->argc = call->argc;
    e->argv = must_alloc((size_t)call->argc * sizeof(*e->argv));
    for (int i = 0; i < call->argc; i++)
        e->argv[i] = copy(call->argv[i], call->argv_len[i]);
    e->name = call->script ? call->script->name : e->argv[0];
    e->fn = fn;
    e->arg = arg;
    list_push_tail(&fake_backend.evals, &e->link);
    return 0;
}

static int fake_listen(struct backend_listener *listener, const char *channel,
                       size_t len)
{
    if (listener->subscription != NULL) {
        fake_backend.misuse++;
        return 0;
    }
    listener->subscription = copy(channel, len);
    list_push_tail(&fake_backend.listeners, &listener->link);
    return 0;
}

static void fake_unlisten(struct backend_listener *listener)
{
    if (listener->subscription == NULL)
        return;
    list_remove(&listener->link);
    free(listener->subscription);
    listener->subscription = NULL;
}

static bool fake_key_ready(const char *key, size_t len)
{
    (void)key;
    (void)len;
    return fake_backend.ready;
}

static unsigned fake_key_group(const char *key, size_t len)
{
    return fake_backend.group ? fake_backend.group(key, len) : 0;
}

static int fake_sync(const char *key, size_t len, backend_reply_fn *fn,
                     void *arg)
{
    static const char *const argv[] = {"WAIT"};
    static const size_t argv_len[] = {4};

    if (!fake_backend.syncing)
        return -ENOENT;
    return fake_backend_ops.eval(
        &(struct backend_call){NULL, key, len, 0, 1, argv, argv_len}, fn, arg);
}

static const char *fake_publish(void)
{
    return "publish";
}

const struct backend fake_backend_ops = {
    .add_script = fake_add_script,
    .eval = fake_eval,
    .listen = fake_listen,
    .unlisten = fake_unlisten,
    .key_ready = fake_key_ready,
    .key_group = fake_key_group,
    .sync = fake_sync,
    .publish = fake_publish,
};

/* ---- the test's side --------------------------------------------------- */

void fake_backend_init(void)
{
    memset(&fake_backend, 0, sizeof(fake_backend));
    list_init(&fake_backend.evals);
    list_init(&fake_backend.listeners);
    fake_backend.ready = true;
}

static void eval_free(struct fake_eval *e)
{
    list_remove(&e->link);
    for (int i = 0; i < e->argc; i++)
        free(e->argv[i]);
    free(e->argv);
    free(e->key);
    free(e);
}

void fake_backend_free(void)
{
    struct list_node *node;

    while ((node = list_first(&fake_backend.evals)) != NULL)
        eval_free(list_entry(node, struct fake_eval, link));
    while ((node = list_first(&fake_backend.listeners)) != NULL)
        fake_unlisten(list_entry(node, struct backend_listener, link));
}

size_t fake_backend_pending(void)
{
    return fake_backend_count(NULL, NULL);
}

static bool eval_matches(const struct fake_eval *e, const char *name,
                         const char *key)
{
    return (name == NULL || strcmp(e->name, name) == 0) &&
           (key == NULL || strcmp(e->key, key) == 0);
}

struct fake_eval *fake_backend_find(const char *name, const char *key)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &fake_backend.evals) {
        struct fake_eval *e = list_entry(pos, struct fake_eval, link);

        if (eval_matches(e, name, key))
            return e;
    }
    return NULL;
}

size_t fake_backend_count(const char *name, const char *key)
{
    struct list_node *pos, *tmp;
    size_t n = 0;

    list_for_each_safe (pos, tmp, &fake_backend.evals) {
        n += eval_matches(list_entry(pos, struct fake_eval, link), name, key);
    }
    return n;
}

/* Unlinked before the engine hears of it: the answer may send more. */
void fake_eval_answer(struct fake_eval *e, const struct backend_value *reply)
{
    backend_reply_fn *fn = e->fn;
    void *arg = e->arg;

    eval_free(e);
    fn(arg, reply);
}

const char *fake_eval_arg(const struct fake_eval *e, int i)
{
    return i >= 0 && i < e->argc ? e->argv[i] : NULL;
}

static bool listening_on(const struct backend_listener *l, const char *channel)
{
    return channel == NULL || strcmp(l->subscription, channel) == 0;
}

size_t fake_backend_listeners(const char *channel)
{
    struct list_node *pos, *tmp;
    size_t n = 0;

    list_for_each_safe (pos, tmp, &fake_backend.listeners) {
        n += listening_on(list_entry(pos, struct backend_listener, link),
                          channel);
    }
    return n;
}

static bool still_listening(const struct backend_listener *l,
                            const char *channel)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &fake_backend.listeners) {
        if (list_entry(pos, struct backend_listener, link) == l)
            return listening_on(l, channel);
    }
    return false;
}

/* The listeners are taken first: one may stop listening, or start, when
 * it hears the message, and only those listening now hear it. */
size_t fake_backend_publish(const char *channel, const char *payload)
{
    size_t count = fake_backend_listeners(channel), reached = 0, i = 0;
    struct backend_listener **to = must_alloc((count + 1) * sizeof(*to));
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &fake_backend.listeners) {
        struct backend_listener *l =
            list_entry(pos, struct backend_listener, link);

        if (listening_on(l, channel))
            to[i++] = l;
    }
    for (i = 0; i < count; i++) {
        if (!still_listening(to[i], channel))
            continue;
        to[i]->on_message(to[i], payload, payload ? strlen(payload) : 0);
        reached++;
    }
    free(to);
    return reached;
}

bool fake_backend_has_script(const char *name)
{
    for (size_t i = 0; i < fake_backend.script_count; i++)
        if (strcmp(fake_backend.scripts[i]->name, name) == 0)
            return true;
    return false;
}
