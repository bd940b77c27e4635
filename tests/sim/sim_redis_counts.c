/*
 * sim_redis_counts.c - the model of the scripts of counts: RSemaphore's
 * permits with rlockd's record of who holds them (an owner hash and a
 * zset of deadlines), RPermitExpirableSemaphore's permits (a zset of ids),
 * and RCountDownLatch's count.
 */
#include "sim_redis_keys.h"

/* ---- the semaphores ----------------------------------------------------- */

/*
 * KEYS name, channel, owners (hash), deadlines (zset), timeout (the
 * expirable permits' zset). Their time run out, an owner's permits and
 * the expirable permits come back, and the channel is told the count.
 */
static void reclaim(struct sim_redis *r, const struct sim_call *c, uint64_t now)
{
    char gone[SIM_MAX_FIELDS][SIM_STR];
    size_t ngone = 0;
    long long n = 0, v;
    const struct sim_key *z = find_typed(r, KEY(3), SIM_ZSET);

    for (size_t i = 0; z != NULL && i < z->fields; i++)
        if (atoll(z->value[i]) <= (long long)now)
            memcpy(gone[ngone++], z->field[i], SIM_STR);
    for (size_t i = 0; i < ngone; i++) {
        n += hget_number(r, KEY(2), gone[i]);
        remove_field(r, KEY(2), gone[i]);
        remove_field(r, KEY(3), gone[i]);
    }
    ngone = 0;
    z = find_typed(r, KEY(4), SIM_ZSET);
    for (size_t i = 0; z != NULL && i < z->fields; i++)
        if (atoll(z->value[i]) <= (long long)now)
            memcpy(gone[ngone++], z->field[i], SIM_STR);
    for (size_t i = 0; i < ngone; i++)
        remove_field(r, KEY(4), gone[i]);
    n += (long long)ngone;
    if (n > 0 && (v = incrby(r, KEY(0), n)) > 0)
        publish_number(r, KEY(1), v);
}

/* How long a refused waiter sleeps at most: until the soonest holder's
 * time runs out, a second at the latest. */
static long long next_look(const struct sim_redis *r, const struct sim_call *c,
                           uint64_t now)
{
    long long soon = 1000, at;
    const char *m;

    for (int k = 3; k <= 4; k++)
        if (zfirst(r, KEY(k), &m, &at)) {
            long long left = at - (long long)now;

            left = left > 1 ? left : 1;
            soon = left < soon ? left : soon;
        }
    return soon;
}

static long long permits(const struct sim_redis *r, const struct sim_call *c)
{
    long long v = 0;

    sim_redis_integer(r, KEY(0), &v);
    return v;
}

/* The owner's permits given back (none now). */
static void owner_gone(struct sim_redis *r, const struct sim_call *c,
                       const char *field)
{
    remove_field(r, KEY(2), field);
    remove_field(r, KEY(3), field);
}

/* ARGV lease, field, count known, permits. */
static void semaphore_acquire(struct sim_redis *r, const struct sim_call *c,
                              uint64_t now, struct sim_reply *out)
{
    long long held = hget_number(r, KEY(2), ARG(1)), known = atoll(ARG(2));
    long long n = atoll(ARG(3)), until = (long long)now + atoll(ARG(0));

    if (held == known + n) {
        put_number(r, KEY(3), SIM_ZSET, ARG(1), until);
        reply_nil(out);
        return;
    }
    if (held != known) {
        if (known > 0) {
            reply_error(out, "LOCKLOST the hold is gone");
            return;
        }
        incrby(r, KEY(0), held);
        owner_gone(r, c, ARG(1));
    }
    if (permits(r, c) >= n) {
        incrby(r, KEY(0), -n);
        put_number(r, KEY(2), SIM_HASH, ARG(1), known + n);
        put_number(r, KEY(3), SIM_ZSET, ARG(1), until);
        reply_nil(out);
    } else {
        reply_int(out, next_look(r, c, now));
    }
}

/* ARGV lease, field, count known, permits: 1 none held now, 0 some, nil
 * not what is known. */
static void semaphore_release(struct sim_redis *r, const struct sim_call *c,
                              uint64_t now, struct sim_reply *out)
{
    long long held = hget_number(r, KEY(2), ARG(1)), known = atoll(ARG(2));
    long long n = atoll(ARG(3)), v;

    if (held > 0 && held == known - n) {
        reply_int(out, 0);
        return;
    }
    if (held != known || held < n) {
        reply_nil(out);
        return;
    }
    if (held > n) {
        put_number(r, KEY(2), SIM_HASH, ARG(1), held - n);
        put_number(r, KEY(3), SIM_ZSET, ARG(1), (long long)now + atoll(ARG(0)));
    } else {
        owner_gone(r, c, ARG(1));
    }
    if ((v = incrby(r, KEY(0), n)) > 0)
        publish_number(r, KEY(1), v);
    reply_int(out, held > n ? 0 : 1);
}

/* ARGV field, count: 1 none held now, 2 that many, 0 fewer (lost). */
static void semaphore_settle(struct sim_redis *r, const struct sim_call *c,
                             struct sim_reply *out)
{
    long long held = hget_number(r, KEY(2), ARG(0)), n = atoll(ARG(1)), v;

    if (held < n || held == 0) {
        reply_int(out, 0);
        return;
    }
    if (held > n && (v = incrby(r, KEY(0), held - n)) > 0)
        publish_number(r, KEY(1), v);
    if (n > 0) {
        put_number(r, KEY(2), SIM_HASH, ARG(0), n);
        reply_int(out, 2);
        return;
    }
    owner_gone(r, c, ARG(0));
    reply_int(out, 1);
}

/* ARGV lease, id. */
static void expirable_acquire(struct sim_redis *r, const struct sim_call *c,
                              uint64_t now, struct sim_reply *out)
{
    long long at, until = (long long)now + atoll(ARG(0));

    if (lookup(r, KEY(4), SIM_ZSET, ARG(1), &at)) {
        put_number(r, KEY(4), SIM_ZSET, ARG(1), until);
        reply_nil(out);
    } else if (permits(r, c) >= 1) {
        incrby(r, KEY(0), -1);
        put_number(r, KEY(4), SIM_ZSET, ARG(1), until);
        reply_nil(out);
    } else {
        reply_int(out, next_look(r, c, now));
    }
}

/* The permit id gives its permit back (count: "0") or keeps it (settle);
 * 1 given back, 2 kept; release: 1 given back in time, 2 late; 0: no
 * such permit. */
static void expirable_give_back(struct sim_redis *r, const struct sim_call *c,
                                uint64_t now, bool settle,
                                struct sim_reply *out)
{
    long long at;

    if (!lookup(r, KEY(4), SIM_ZSET, ARG(0), &at)) {
        reply_int(out, 0);
        return;
    }
    if (settle && strcmp(ARG(1), "0") != 0) {
        reply_int(out, 2);
        return;
    }
    remove_field(r, KEY(4), ARG(0));
    publish_number(r, KEY(1), incrby(r, KEY(0), 1));
    reply_int(out, settle || at > (long long)now ? 1 : 2);
}

/* KEYS one zset per holder, ARGV member, ms per holder. */
static void semaphore_renew_many(struct sim_redis *r, const struct sim_call *c,
                                 uint64_t now, struct sim_reply *out)
{
    long long at;

    for (int i = 0; i < c->nkeys; i++) {
        bool live =
            lookup(r, KEY(i), SIM_ZSET, ARG(2 * i), &at) && at > (long long)now;

        if (live)
            put_number(r, KEY(i), SIM_ZSET, ARG(2 * i),
                       (long long)now + atoll(ARG(2 * i + 1)));
        element_int(out, (size_t)i, live);
    }
    reply_array(out, (size_t)c->nkeys);
}

/* The "semaphore_" and "expirable_" scripts. */
bool sim_redis_run_semaphore(struct sim_redis *r, uint64_t now,
                             const struct sim_call *c, struct sim_reply *out)
{
    const char *s = c->script;

    if (strcmp(s, "semaphore_renew_many") == 0 ||
        strcmp(s, "expirable_renew_many") == 0) {
        semaphore_renew_many(r, c, now, out);
        return true;
    }
    if (strcmp(s, "semaphore_inspect") == 0) { /* KEYS name, owners; field */
        long long held = hget_number(r, KEY(1), ARG(0));

        reply_ints(out, held > 0, held, -1, 3);
        return true;
    }
    if (strcmp(s, "expirable_release") != 0)
        reclaim(r, c, now);
    if (strcmp(s, "semaphore_acquire") == 0)
        semaphore_acquire(r, c, now, out);
    else if (strcmp(s, "semaphore_release") == 0)
        semaphore_release(r, c, now, out);
    else if (strcmp(s, "semaphore_settle") == 0)
        semaphore_settle(r, c, out);
    else if (strcmp(s, "expirable_acquire") == 0)
        expirable_acquire(r, c, now, out);
    else if (strcmp(s, "expirable_release") == 0 ||
             strcmp(s, "expirable_settle") == 0)
        expirable_give_back(r, c, now, strcmp(s, "expirable_settle") == 0, out);
    else
        return false;
    return true;
}

/* ---- the count-down latch ---------------------------------------------- */

/* The "latch_" scripts; KEYS name, channel. */
bool sim_redis_run_latch(struct sim_redis *r, const struct sim_call *c,
                         struct sim_reply *out)
{
    const char *s = c->script;
    long long count = 0;
    bool set = sim_redis_integer(r, KEY(0), &count);

    if (strcmp(s, "latch_await") == 0) {
        if (count <= 0)
            reply_nil(out);
        else
            reply_int(out, 1000);
    } else if (strcmp(s, "latch_try_set") == 0) { /* count */
        reply_int(out, !set);
        if (!set) {
            sim_redis_set_integer(r, KEY(0), atoll(ARG(0)));
            r->publish(KEY(1), "1", r->ctx);
        }
    } else if (strcmp(s, "latch_count_down") == 0) {
        long long left = incrby(r, KEY(0), -1);

        if (left <= 0)
            drop(r, KEY(0));
        if (left == 0)
            r->publish(KEY(1), "0", r->ctx);
        reply_int(out, left > 0 ? left : 0);
    } else {
        return false;
    }
    return true;
}
