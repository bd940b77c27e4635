/*
 * sim_redis.c - the model Redis's keyspace: keys, TTLs, snapshots, what
 * the invariants read of it, rlockd's session records, and which family
 * runs a script (sim_redis_locks.c, sim_redis_counts.c). Keys are named,
 * not held by pointer, across a script's steps: deleting one moves
 * another.
 */
#include "sim_redis_keys.h"

void sim_redis_init(struct sim_redis *r,
                    void (*publish)(const char *, const char *, void *),
                    void *ctx)
{
    r->count = 0;
    r->snapshot_count = 0;
    r->publish = publish;
    r->ctx = ctx;
}

void sim_redis_expire(struct sim_redis *r, uint64_t now)
{
    for (size_t i = 0; i < r->count;) {
        if (r->keys[i].expire_at != 0 && r->keys[i].expire_at <= now)
            del(r, &r->keys[i]);
        else
            i++;
    }
}

bool sim_redis_integer(const struct sim_redis *r, const char *key,
                       long long *value)
{
    const struct sim_key *h = find_typed(r, key, SIM_STRING);

    if (h == NULL)
        return false;
    *value = atoll(h->value[0]);
    return true;
}

void sim_redis_set_integer(struct sim_redis *r, const char *key,
                           long long value)
{
    drop(r, key);
    set_number(create(r, key, SIM_STRING), "", value);
}

/* ---- what the invariants read ------------------------------------------ */

bool sim_redis_has_field(const struct sim_redis *r, const char *key,
                         const char *field)
{
    const struct sim_key *h = find_typed(r, key, SIM_HASH);

    return h != NULL && field_index(h, field) >= 0;
}

bool sim_redis_lock(const struct sim_redis *r, const char *key,
                    const char **owner, long long *count)
{
    const struct sim_key *h = find(r, key);

    if (!is_lock(h))
        return false;
    *owner = h->field[0];
    *count = atoll(h->value[0]);
    return true;
}

/* Whether owner i of the read-write lock at key still holds it: a writer
 * while the hash lives; a reader while one of its holds' keys does (a
 * read hold whose lease ran out leaves its field in the hash while other
 * readers keep the hash alive, as Redisson's format does). */
static bool rw_live(const struct sim_redis *r, const char *key,
                    const struct sim_key *h, size_t i)
{
    const char *f = h->field[i];
    size_t len = strlen(f);
    char timeout[SIM_STR];

    if (len >= 6 && strcmp(f + len - 6, ":write") == 0)
        return true;
    for (long long n = atoll(h->value[i]); n >= 1; n--) {
        rw_timeout_key(timeout, key, f, n);
        if (find(r, timeout) != NULL)
            return true;
    }
    return false;
}

size_t sim_redis_rw_owners(const struct sim_redis *r, const char *key,
                           const char **fields, long long *counts, size_t max)
{
    const struct sim_key *h = find_typed(r, key, SIM_HASH);
    size_t n = 0;

    for (size_t i = 0; h != NULL && i < h->fields && n < max; i++)
        if (strcmp(h->field[i], "mode") != 0 && rw_live(r, key, h, i)) {
            fields[n] = h->field[i];
            counts[n++] = atoll(h->value[i]);
        }
    return n;
}

size_t sim_redis_permit_holders(const struct sim_redis *r, const char *owners,
                                const char *deadlines, const char *timeout,
                                uint64_t now, const char **fields,
                                long long *counts, size_t max)
{
    const struct sim_key *o = find_typed(r, owners, SIM_HASH);
    const struct sim_key *x = find_typed(r, timeout, SIM_ZSET);
    size_t n = 0;
    long long at;

    for (size_t i = 0; o != NULL && i < o->fields && n < max; i++)
        if (lookup(r, deadlines, SIM_ZSET, o->field[i], &at) &&
            at > (long long)now) {
            fields[n] = o->field[i];
            counts[n++] = atoll(o->value[i]);
        }
    for (size_t i = 0; x != NULL && i < x->fields && n < max; i++)
        if (atoll(x->value[i]) > (long long)now) {
            fields[n] = x->field[i];
            counts[n++] = 1;
        }
    return n;
}

long long sim_redis_permits_total(const struct sim_redis *r, const char *name,
                                  const char *owners, const char *timeout)
{
    const struct sim_key *o = find_typed(r, owners, SIM_HASH);
    const struct sim_key *x = find_typed(r, timeout, SIM_ZSET);
    long long total = 0;

    sim_redis_integer(r, name, &total);
    for (size_t i = 0; o != NULL && i < o->fields; i++)
        total += atoll(o->value[i]);
    return total + (x != NULL ? (long long)x->fields : 0);
}

/* ---- rlockd's session records ------------------------------------------ */

static bool run_session(struct sim_redis *r, uint64_t now,
                        const struct sim_call *c, struct sim_reply *out)
{
    const char *s = c->script ? c->script : c->argv[0];
    const char *key = c->script ? KEY(0) : c->argv[1];
    struct sim_key *h = find(r, key);

    if (strcmp(s, "rlockd_session_put") == 0) {
        /* ttl [secret field value]: the TTL only grows */
        long long ttl = atoll(ARG(0)), left;

        if (c->argc - c->nkeys == 4) {
            h = make(r, key, SIM_HASH);
            hset(h, "secret", ARG(1));
            hset(h, ARG(2), ARG(3));
        }
        left = pttl(h, now);
        if (h != NULL && (left == -1 || left < ttl))
            pexpire(h, now, ttl);
        reply_int(out, 1);
    } else if (strcmp(s, "rlockd_session_forget") == 0) { /* field */
        if (h != NULL) {
            remove_field(r, key, ARG(0));
            h = find(r, key);
            if (h != NULL && h->fields <= 1)
                del(r, h);
        }
        reply_int(out, 1);
    } else if (strcmp(s, "rlockd_session_read") == 0) {
        /* {PTTL, {field, value...}}: the fields from element 2 on */
        size_t n = h != NULL ? h->fields : 0;

        for (size_t i = 0; i < n; i++) {
            element_str(out, 2 + 2 * i, h->field[i]);
            element_str(out, 3 + 2 * i, h->value[i]);
        }
        element_int(out, 0, h != NULL ? pttl(h, now) : -2);
        out->element[1] = (struct backend_value){.type = VALUE_ARRAY,
                                                 .elements = 2 * n,
                                                 .element = out->element + 2};
        reply_array(out, 2);
    } else if (strcmp(s, "DEL") == 0) {
        reply_int(out, h != NULL);
        if (h != NULL)
            del(r, h);
    } else {
        return false;
    }
    return true;
}

bool sim_redis_run(struct sim_redis *r, uint64_t now, const struct sim_call *c,
                   struct sim_reply *out)
{
    const char *s = c->script;

    sim_redis_expire(r, now);
    if (s == NULL || strncmp(s, "rlockd_", 7) == 0)
        return run_session(r, now, c, out);
    if (strncmp(s, "rlock_", 6) == 0 || strncmp(s, "fair_", 5) == 0 ||
        strncmp(s, "fenced_", 7) == 0)
        return sim_redis_run_rlock(r, now, c, out);
    if (strncmp(s, "rw_", 3) == 0)
        return sim_redis_run_rw(r, now, c, out);
    if (strncmp(s, "semaphore_", 10) == 0 || strncmp(s, "expirable_", 10) == 0)
        return sim_redis_run_semaphore(r, now, c, out);
    if (strncmp(s, "latch_", 6) == 0)
        return sim_redis_run_latch(r, c, out);
    return false;
}

void sim_redis_snapshot(struct sim_redis *r)
{
    memcpy(r->snapshot, r->keys, r->count * sizeof(r->keys[0]));
    r->snapshot_count = r->count;
}

void sim_redis_restore(struct sim_redis *r)
{
    memcpy(r->keys, r->snapshot, r->snapshot_count * sizeof(r->keys[0]));
    r->count = r->snapshot_count;
}

void sim_redis_flush(struct sim_redis *r)
{
    r->count = 0;
}
