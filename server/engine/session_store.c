/*
 * session_store.c - session records in Redis: their key, fields and
 * scripts.
 */
#include "engine/session_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/log.h"
#include "buffer.h"
#include "engine/lock_kind.h"
#include "engine/session.h"

#define SECRET_FIELD "secret"
#define PENDING "pending"
#define WATCHDOG "watchdog"

/* "<kind>:<thread-id>:<key>": a kind name, 20 digits, two colons */
#define FIELD_EXTRA 48

/* Writes the secret and one field (none for a touch), and makes the
 * record live at least ARGV[1] ms: a TTL only ever grows here, so that
 * the record outlives every lock it names. */
static struct backend_script put_script = {
    "rlockd_session_put",
    "if ARGV[3] then "
    "redis.call('hset', KEYS[1], '" SECRET_FIELD "', ARGV[2], ARGV[3], "
    "ARGV[4]); "
    "end; "
    "local ttl = redis.call('pttl', KEYS[1]); "
    "if ttl == -1 or (ttl >= 0 and ttl < tonumber(ARGV[1])) then "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "end; "
    "return 1;",
    ""};

/* Removes a field, and the record once only the secret is left. */
static struct backend_script forget_script = {
    "rlockd_session_forget",
    "redis.call('hdel', KEYS[1], ARGV[1]); "
    "if redis.call('hlen', KEYS[1]) <= 1 then "
    "redis.call('del', KEYS[1]); "
    "end; "
    "return 1;",
    ""};

/* The record for session_store_check: {PTTL, {field, value...}}, {-2,
 * {}} when there is none, WRONGTYPE when the key is no hash. */
static struct backend_script read_script = {
    "rlockd_session_read",
    "local t = redis.call('type', KEYS[1]).ok; "
    "if t == 'none' then return {-2, {}}; end; "
    "if t ~= 'hash' then "
    "return redis.error_reply('WRONGTYPE a ' .. t .. ', not a hash'); "
    "end; "
    "return {redis.call('pttl', KEYS[1]), redis.call('hgetall', KEYS[1])};",
    ""};

static struct {
    const struct config *cfg;
    const struct backend *backend;
} store;

void session_store_init(const struct config *cfg, const struct backend *backend)
{
    store.cfg = cfg;
    store.backend = backend;
    backend->add_script(&put_script);
    backend->add_script(&forget_script);
    backend->add_script(&read_script);
}

static size_t key_of_id(char *out, const char *id, size_t len)
{
    size_t prefix_len = strlen(store.cfg->name_prefix);
    char *p = out;

    memcpy(p, store.cfg->name_prefix, prefix_len);
    p += prefix_len;
    memcpy(p, SESSION_STORE_KEY_TAG, sizeof(SESSION_STORE_KEY_TAG) - 1);
    p += sizeof(SESSION_STORE_KEY_TAG) - 1;
    memcpy(p, id, len);
    p += len;
    *p++ = '}';
    return (size_t)(p - out);
}

static size_t record_key(char *out, const struct session *s)
{
    return key_of_id(out, s->id, s->id_len);
}

bool session_store_ready(const struct session *s)
{
    char key[SESSION_STORE_KEY_SIZE];
    size_t len = record_key(key, s);

    return store.backend->key_ready(key, len);
}

bool session_store_with_lock(const struct session *s, const char *key,
                             size_t key_len)
{
    char record[SESSION_STORE_KEY_SIZE];
    size_t len = record_key(record, s);

    return store.backend->key_group(record, len) ==
           store.backend->key_group(key, key_len);
}

/* A reply nobody waits for: only a failure is worth a line. */
static void on_logged_reply(void *arg, const struct backend_value *reply)
{
    (void)arg;
    if (reply == NULL || reply->type == VALUE_ERROR)
        log_warn("session record: %s",
                 reply ? reply->str : "no reply (Redis unavailable)");
}

/* Sends a call on the record of client-id id; its key goes first in
 * argv (after a plain command's name). */
static int send_to(const char *id, size_t id_len, struct backend_script *script,
                   const char *command, int argc, const char **argv,
                   size_t *argv_len, backend_reply_fn *fn, void *arg)
{
    char key[SESSION_STORE_KEY_SIZE];
    size_t len = key_of_id(key, id, id_len);
    int first = script ? 0 : 1; /* a command's name comes before its key */

    argv[first] = key;
    argv_len[first] = len;
    if (command != NULL) {
        argv[0] = command;
        argv_len[0] = strlen(command);
    }
    return store.backend->eval(&(struct backend_call){script, key, len,
                                                      script ? 1 : 0, argc,
                                                      argv, argv_len},
                               fn ? fn : on_logged_reply, arg);
}

static int send(const struct session *s, struct backend_script *script,
                const char *command, int argc, const char **argv,
                size_t *argv_len, backend_reply_fn *fn, void *arg)
{
    return send_to(s->id, s->id_len, script, command, argc, argv, argv_len, fn,
                   arg);
}

/* A hold's field in the session record: "<kind>:<thread-id>:<key>" (not
 * the hold's owner field in the lock, lock_table.c's hold_field). */
static size_t record_field(char *out, const struct lock_kind *kind,
                           const char *key, size_t key_len, uint64_t thread_id)
{
    int n = snprintf(out, FIELD_EXTRA, "%s:%llu:", kind->name,
                     (unsigned long long)thread_id);

    memcpy(out + n, key, key_len);
    return (size_t)n + key_len;
}

int session_store_put(const struct session *s, const struct lock_kind *kind,
                      const char *key, size_t key_len, uint64_t thread_id,
                      bool pending, int64_t lease_ms, int64_t ttl_ms,
                      backend_reply_fn *fn, void *arg)
{
    char field[FIELD_EXTRA + key_len], ttl[FORMAT_INT_MAX],
        lease[FORMAT_INT_MAX], secret[2 * DIGEST_SIZE + 1];
    const char *argv[5];
    size_t argv_len[5];

    for (size_t i = 0; i < DIGEST_SIZE; i++)
        snprintf(secret + 2 * i, 3, "%02x", s->secret[i]);
    argv[1] = ttl;
    argv_len[1] = format_int64(ttl, ttl_ms);
    argv[2] = secret;
    argv_len[2] = 2 * DIGEST_SIZE;
    argv[3] = field;
    argv_len[3] = record_field(field, kind, key, key_len, thread_id);
    if (pending) {
        argv[4] = PENDING;
        argv_len[4] = sizeof(PENDING) - 1;
    } else if (lease_ms < 0) {
        argv[4] = WATCHDOG;
        argv_len[4] = sizeof(WATCHDOG) - 1;
    } else {
        argv[4] = lease;
        argv_len[4] = format_int64(lease, lease_ms);
    }
    return send(s, &put_script, NULL, 5, argv, argv_len, fn, arg);
}

void session_store_forget(const struct session *s, const struct lock_kind *kind,
                          const char *key, size_t key_len, uint64_t thread_id)
{
    char field[FIELD_EXTRA + key_len];
    const char *argv[2];
    size_t argv_len[2];

    argv[1] = field;
    argv_len[1] = record_field(field, kind, key, key_len, thread_id);
    if (send(s, &forget_script, NULL, 2, argv, argv_len, NULL, NULL) != 0)
        log_warn("session record of %s: cannot forget a hold now (Redis "
                 "unavailable); it goes with the record's TTL",
                 s->id);
}

void session_store_touch(const struct session *s, int64_t ttl_ms)
{
    char ttl[FORMAT_INT_MAX];
    const char *argv[2];
    size_t argv_len[2];

    argv[1] = ttl;
    argv_len[1] = format_int64(ttl, ttl_ms);
    if (send(s, &put_script, NULL, 2, argv, argv_len, NULL, NULL) != 0)
        log_warn("session record of %s: cannot renew it now (Redis "
                 "unavailable)",
                 s->id);
}

int session_store_delete(const char *id, size_t len, backend_reply_fn *fn,
                         void *arg)
{
    const char *argv[2];
    size_t argv_len[2];

    return send_to(id, len, NULL, "DEL", 2, argv, argv_len, fn, arg);
}

int session_store_read(const struct session *s, backend_reply_fn *fn, void *arg)
{
    const char *argv[1];
    size_t argv_len[1];

    return send(s, &read_script, NULL, 1, argv, argv_len, fn, arg);
}

static bool secret_matches(const struct session *s, const char *hex, size_t len)
{
    unsigned char digest[DIGEST_SIZE];

    return len == 2 * DIGEST_SIZE && s->has_secret &&
           digest_parse_hex(hex, digest) == 0 &&
           digest_equal(digest, s->secret);
}

bool session_store_proved(const struct session *s,
                          const struct backend_value *fields)
{
    static const char secret[] = SECRET_FIELD;
    bool proved = false;

    for (size_t i = 0; i < fields->elements; i += 2)
        if (fields->element[i].len == sizeof(secret) - 1 &&
            memcmp(fields->element[i].str, secret, sizeof(secret) - 1) == 0)
            proved = secret_matches(s, fields->element[i + 1].str,
                                    fields->element[i + 1].len);
    return proved;
}

/* A decimal number of at most 18 digits, nothing else: 0 or -EINVAL. */
static int parse_number(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;

    if (len == 0 || len > 18)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int session_store_entry(const char *field, size_t field_len, const char *value,
                        size_t value_len, struct session_entry *out)
{
    const char *end = field + field_len, *colon, *thread;
    uint64_t lease;

    colon = memchr(field, ':', field_len);
    if (colon == NULL)
        return -EINVAL;
    out->kind = NULL;
    for (size_t k = 0; k < LOCK_KIND_COUNT; k++)
        if (strlen(lock_kinds[k]->name) == (size_t)(colon - field) &&
            memcmp(lock_kinds[k]->name, field, (size_t)(colon - field)) == 0)
            out->kind = lock_kinds[k];
    thread = colon + 1;
    colon = memchr(thread, ':', (size_t)(end - thread));
    if (out->kind == NULL || colon == NULL || colon + 1 == end ||
        parse_number(thread, (size_t)(colon - thread), &out->thread_id) != 0)
        return -EINVAL;
    out->key = colon + 1;
    out->key_len = (size_t)(end - out->key);
    out->pending = value_len == sizeof(PENDING) - 1 &&
                   memcmp(value, PENDING, value_len) == 0;
    out->lease_ms = -1;
    if (out->pending || (value_len == sizeof(WATCHDOG) - 1 &&
                         memcmp(value, WATCHDOG, value_len) == 0))
        return 0;
    if (parse_number(value, value_len, &lease) != 0 || lease == 0)
        return -EINVAL;
    out->lease_ms = (int64_t)lease;
    return 0;
}

/* What is wrong with a hash's fields as a record's (NULL: nothing): a
 * secret of 64 hex digits, and every other field a hold's. */
static const char *fields_wrong(const struct backend_value *fields)
{
    static const char secret[] = SECRET_FIELD;
    unsigned char digest[DIGEST_SIZE];
    struct session_entry e;
    bool has_secret = false;

    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const struct backend_value *f = &fields->element[i], *v = f + 1;

        if (f->type != VALUE_STRING || v->type != VALUE_STRING)
            return "a field that is not a string";
        if (f->len == sizeof(secret) - 1 &&
            memcmp(f->str, secret, f->len) == 0) {
            if (v->len != 2 * DIGEST_SIZE ||
                digest_parse_hex(v->str, digest) != 0)
                return "a secret that is not 64 hex digits";
            has_secret = true;
        } else if (session_store_entry(f->str, f->len, v->str, v->len, &e) !=
                   0) {
            return "a field that names no hold";
        }
    }
    return has_secret ? NULL : "no secret";
}

int session_store_check(const struct session *s,
                        const struct backend_value *reply,
                        const struct backend_value **fields, char *why,
                        size_t why_size)
{
    static const char wrong_type[] = "WRONGTYPE ";
    char key[SESSION_STORE_KEY_SIZE];
    size_t len = record_key(key, s);
    const char *wrong = NULL;

    if (reply->type == VALUE_ERROR &&
        strncmp(reply->str, wrong_type, sizeof(wrong_type) - 1) == 0)
        wrong = reply->str + sizeof(wrong_type) - 1;
    else if (reply->type != VALUE_ARRAY || reply->elements != 2 ||
             reply->element[0].type != VALUE_INTEGER ||
             reply->element[1].type != VALUE_ARRAY ||
             reply->element[1].elements % 2 != 0)
        return -EAGAIN;
    else if (reply->element[1].elements == 0)
        wrong = NULL;
    else if (reply->element[0].integer == -1)
        wrong = "a hash with no TTL";
    else
        wrong = fields_wrong(&reply->element[1]);
    if (wrong != NULL) {
        snprintf(why, why_size, "%.*s, the session record of %s: %s", (int)len,
                 key, s->id, wrong);
        return -EBADMSG;
    }
    *fields = &reply->element[1];
    return 0;
}
