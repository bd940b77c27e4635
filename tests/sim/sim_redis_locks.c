/*
 * sim_redis_locks.c - the model of the lock scripts: RLock's hash, which
 * the fenced lock adds a token counter to and the fair lock a queue (a
 * list and a zset of deadlines, Redisson's RedissonFairLock); and the
 * read-write lock's hash of modes, with a key of its own per read hold
 * (Redisson's RedissonReadLock).
 */
#include "sim_redis_keys.h"

/* ---- RLock, the fenced and the fair lock ------------------------------- */

/* The fair lock's queue (KEYS q list, z zset): heads whose place ran out
 * leave it. */
static void fair_purge(struct sim_redis *r, const char *q, const char *z,
                       uint64_t now)
{
    const char *head;
    long long at;

    while ((head = lindex(r, q, 0)) != NULL) {
        char h[SIM_STR];

        if (lookup(r, z, SIM_ZSET, head, &at) && at > (long long)now)
            return;
        snprintf(h, sizeof(h), "%s", head);
        remove_field(r, z, h);
        remove_field(r, q, h);
    }
}

/* How many places of the fair queue q (with z) run out later than
 * place_ms from now, those ahead of a new place of this daemon's at its
 * tail: Java places, each of which puts the new place one wait later
 * (kind_rlock.c's FAIR_QUEUE says why). */
static long long fair_places_beyond(const struct sim_redis *r, const char *q,
                                    const char *z, uint64_t now,
                                    long long place_ms)
{
    const struct sim_key *list = find_typed(r, q, SIM_LIST);
    long long beyond = 0, at;

    for (size_t i = 0; list != NULL && i < list->fields; i++)
        if (lookup(r, z, SIM_ZSET, list->field[i], &at) &&
            at > (long long)now + place_ms)
            beyond++;
    return beyond;
}

/* A free lock tells its channel; the fair lock only its queue's head, on
 * "<channel>:<head>". */
static void notify_freed(struct sim_redis *r, const struct sim_call *c,
                         bool fair, uint64_t now)
{
    char channel[SIM_STR * 2];
    const char *head;

    if (!fair) {
        r->publish(KEY(1), "0", r->ctx);
        return;
    }
    fair_purge(r, KEY(2), KEY(3), now);
    head = lindex(r, KEY(2), 0);
    if (head == NULL)
        return;
    snprintf(channel, sizeof(channel), "%s:%s", KEY(1), head);
    r->publish(channel, "0", r->ctx);
}

/* Takes the lock at the count known plus one, for the lease. */
static void take(struct sim_redis *r, const struct sim_call *c, uint64_t now)
{
    struct sim_key *h = make(r, KEY(0), SIM_HASH);

    set_number(h, ARG(1), atoll(ARG(2)) + 1);
    pexpire(h, now, atoll(ARG(0)));
}

/* The fair acquire: ARGV lease, field, count, wait, enqueue, place. A
 * grant leaves the places behind where they are; a new place runs out
 * place ms from now, one wait later for each place beyond that. */
static void fair_acquire(struct sim_redis *r, const struct sim_call *c,
                         uint64_t now, const struct sim_key *h,
                         struct sim_reply *out)
{
    const char *field = ARG(1), *head;
    long long wait = atoll(ARG(3)), place = atoll(ARG(5)), ttl = pttl(h, now),
              at;

    fair_purge(r, KEY(1), KEY(2), now);
    head = lindex(r, KEY(1), 0);
    if (h == NULL && (head == NULL || strcmp(head, field) == 0)) {
        remove_field(r, KEY(1), field);
        remove_field(r, KEY(2), field);
        take(r, c, now);
        reply_nil(out);
        return;
    }
    if (strcmp(ARG(4), "1") == 0 && !lookup(r, KEY(2), SIM_ZSET, field, &at)) {
        remove_field(r, KEY(1), field);
        at = (long long)now + place +
             wait * fair_places_beyond(r, KEY(1), KEY(2), now, place);
        put_number(r, KEY(2), SIM_ZSET, field, at);
        hset(make(r, KEY(1), SIM_LIST), field, "");
    }
    if (h != NULL) {
        reply_int(out, ttl);
        return;
    }
    head = lindex(r, KEY(1), 0);
    at = 0;
    lookup(r, KEY(2), SIM_ZSET, head, &at);
    reply_int(out, at - (long long)now > 1 ? at - (long long)now : 1);
}

/* The fenced grant's token, above floor (ARGV[3], the highest this
 * daemon handed out): a counter behind it is first set to it. The reply
 * {1, token, was}: was what the counter held (0: none) when it was
 * behind, else -1. */
static void fenced_token(struct sim_redis *r, const struct sim_call *c,
                         struct sim_reply *out)
{
    long long floor = atoll(ARG(3)), held = 0, was = -1;

    sim_redis_integer(r, KEY(1), &held);
    if (held < floor) {
        was = held;
        sim_redis_set_integer(r, KEY(1), floor);
    }
    reply_ints(out, 1, incrby(r, KEY(1), 1), was, 3);
}

/* An acquire of RLock's hash: ARGV lease, field, count (fair: wait,
 * enqueue, place; fenced: floor). */
static void rlock_acquire(struct sim_redis *r, const struct sim_call *c,
                          uint64_t now, const struct sim_key *h, bool fenced,
                          bool fair, struct sim_reply *out)
{
    bool mine = h != NULL && strcmp(h->field[0], ARG(1)) == 0;
    long long refused = pttl(h, now);

    if (strcmp(ARG(2), "0") != 0 && !mine) {
        reply_error(out, "LOCKLOST the hold is gone");
    } else if (fair && !mine) {
        fair_acquire(r, c, now, h, out);
    } else if (h == NULL || mine) {
        take(r, c, now);
        if (fenced)
            fenced_token(r, c, out);
        else
            reply_nil(out);
    } else if (fenced) {
        reply_ints(out, 0, refused, 0, 2);
    } else {
        reply_int(out, refused);
    }
}

/* Release: ARGV msg, lease, field, known count (0: none). */
static void rlock_release(struct sim_redis *r, const struct sim_call *c,
                          uint64_t now, struct sim_key *h, bool fair,
                          struct sim_reply *out)
{
    long long left = strcmp(ARG(3), "0") != 0 ? atoll(ARG(3)) - 1
                     : h != NULL              ? atoll(h->value[0]) - 1
                                              : 0;

    if (h == NULL || strcmp(h->field[0], ARG(2)) != 0) {
        reply_nil(out);
    } else if (left > 0) {
        set_number(h, ARG(2), left);
        pexpire(h, now, atoll(ARG(1)));
        reply_int(out, 0);
    } else {
        del(r, h);
        notify_freed(r, c, fair, now);
        reply_int(out, 1);
    }
}

/* What frees whatever the count: force (msg), an owner's (msg, field) and
 * a settle (msg, field, count). */
static void rlock_free(struct sim_redis *r, const struct sim_call *c,
                       uint64_t now, struct sim_key *h, const char *what,
                       bool fair, struct sim_reply *out)
{
    bool force = strcmp(what, "force_release") == 0;
    bool mine = h != NULL && (force || strcmp(h->field[0], ARG(1)) == 0);

    if (mine && strcmp(what, "settle") == 0 && strcmp(ARG(2), "0") != 0) {
        hset(h, ARG(1), ARG(2));
        reply_int(out, 2);
        return;
    }
    reply_int(out, mine);
    if (mine) {
        del(r, h);
        notify_freed(r, c, fair, now);
    }
}

static void rlock_renew_many(struct sim_redis *r, const struct sim_call *c,
                             uint64_t now, struct sim_reply *out)
{
    for (int i = 0; i < c->nkeys; i++) {
        struct sim_key *k = find(r, KEY(i));
        bool mine = is_lock(k) && strcmp(k->field[0], ARG(2 * i)) == 0;

        if (mine)
            pexpire(k, now, atoll(ARG(2 * i + 1)));
        element_int(out, (size_t)i, mine);
    }
    reply_array(out, (size_t)c->nkeys);
}

/* The last entry of fair_renew_places (ARGV field, ms, wait each) that
 * names the place of field in queue q, or -1: the one the script heeds. */
static int fair_entry(const struct sim_call *c, const char *q,
                      const char *field)
{
    int last = -1;

    for (int k = 0; k < c->nkeys; k += 2)
        if (strcmp(KEY(k), q) == 0 && strcmp(ARG(3 * (k / 2)), field) == 0)
            last = k / 2;
    return last;
}

/* Renews this daemon's places in the fair queue KEY(i) (list), with
 * KEY(i + 1) (zset): walking it from its head, a place of the call's is
 * set place ms from now plus a wait for each other place ahead that runs
 * out later than the queue's last entry's ms from now, and every other
 * place behind it moves as far (a Java place chained on it). renewed[e]
 * says entry e's place was there. */
static void fair_renew_queue(struct sim_redis *r, const struct sim_call *c,
                             int i, uint64_t now, bool *renewed)
{
    const struct sim_key *list = find_typed(r, KEY(i), SIM_LIST);
    const struct sim_key *z = find(r, KEY(i + 1));
    long long shift = 0, others = 0, ms = 0, at;

    if ((z != NULL && z->type != SIM_ZSET) ||
        (find(r, KEY(i)) != NULL && list == NULL))
        return; /* not a queue: nothing renewed */
    for (int k = i; k < c->nkeys; k += 2)
        if (strcmp(KEY(k), KEY(i)) == 0)
            ms = atoll(ARG(3 * (k / 2) + 1));
    for (size_t w = 0; list != NULL && w < list->fields; w++) {
        int e = fair_entry(c, KEY(i), list->field[w]);

        if (!lookup(r, KEY(i + 1), SIM_ZSET, list->field[w], &at))
            continue;
        if (e >= 0) {
            renewed[e] = true;
            shift = (long long)now + atoll(ARG(3 * e + 1)) +
                    atoll(ARG(3 * e + 2)) * others - at;
        } else if (at + shift > (long long)now + ms) {
            others++;
        }
        put_number(r, KEY(i + 1), SIM_ZSET, list->field[w], at + shift);
    }
}

/* fair_renew_places: KEYS queue, timeout per entry; ARGV field, ms, wait
 * per entry; 1 (renewed) or 0 (gone) for each, each queue walked once. */
static void fair_renew_places(struct sim_redis *r, const struct sim_call *c,
                              uint64_t now, struct sim_reply *out)
{
    bool renewed[40] = {false};
    int n = c->nkeys / 2;

    for (int i = 0; i < c->nkeys; i += 2) {
        bool first = true;

        for (int k = 0; k < i; k += 2)
            first = first && strcmp(KEY(k), KEY(i)) != 0;
        if (first)
            fair_renew_queue(r, c, i, now, renewed);
    }
    for (int k = 0; k < n; k++)
        element_int(out, (size_t)k,
                    renewed[fair_entry(c, KEY(2 * k), ARG(3 * k))]);
    reply_array(out, (size_t)n);
}

/* The scripts of the kinds on RLock's hash: "rlock_", "fenced_" and
 * "fair_" families. */
bool sim_redis_run_rlock(struct sim_redis *r, uint64_t now,
                         const struct sim_call *c, struct sim_reply *out)
{
    const char *s = c->script;
    bool fair = strncmp(s, "fair_", 5) == 0;
    const char *what = strchr(s, '_') + 1;
    struct sim_key *h = find(r, KEY(0));

    if (strcmp(s, "rlock_renew_many") == 0) {
        rlock_renew_many(r, c, now, out);
        return true;
    }
    if (strcmp(s, "fair_renew_places") == 0) {
        fair_renew_places(r, c, now, out);
        return true;
    }
    if (strcmp(s, "fair_leave") == 0) { /* field: the places behind stay */
        const struct sim_key *q = find_typed(r, KEY(1), SIM_LIST);

        reply_int(out, q != NULL && field_index(q, ARG(0)) >= 0);
        remove_field(r, KEY(2), ARG(0));
        remove_field(r, KEY(1), ARG(0));
        return true;
    }
    if (h != NULL && !is_lock(h)) {
        /* another program's data: writes refused, queries see nothing */
        if (strcmp(what, "inspect") == 0)
            reply_ints(out, 0, 0, -2, 3);
        else
            reply_error(out, "WRONGTYPE not a lock");
        return true;
    }
    if (strcmp(what, "acquire") == 0)
        rlock_acquire(r, c, now, h, strncmp(s, "fenced_", 7) == 0, fair, out);
    else if (strcmp(what, "release") == 0)
        rlock_release(r, c, now, h, fair, out);
    else if (strcmp(what, "force_release") == 0 ||
             strcmp(what, "release_owner") == 0 || strcmp(what, "settle") == 0)
        rlock_free(r, c, now, h, what, fair, out);
    else if (strcmp(s, "rlock_inspect") == 0) { /* field */
        bool mine = h != NULL && strcmp(h->field[0], ARG(0)) == 0;

        reply_ints(out, h != NULL, mine ? atoll(h->value[0]) : 0, pttl(h, now),
                   3);
    } else {
        return false;
    }
    return true;
}

/* ---- the read-write lock ------------------------------------------------ */

/* The lock's mode ("read", "write"), "none" or "other": a hash with a
 * mode, owners of counts of at least 1, and a TTL. */
static const char *rw_shape(const struct sim_key *h)
{
    const char *mode = "other";

    if (h == NULL)
        return "none";
    if (h->type != SIM_HASH || h->fields < 2 || h->expire_at == 0)
        return "other";
    for (size_t i = 0; i < h->fields; i++)
        if (strcmp(h->field[i], "mode") == 0)
            mode = h->value[i];
        else if (!owner_like(h->field[i]) || h->value[i][0] < '1' ||
                 h->value[i][0] > '9')
            return "other";
    return strcmp(mode, "read") == 0 || strcmp(mode, "write") == 0 ? mode
                                                                   : "other";
}

/* The longest PTTL of the lock's read holds' keys (-3: none). */
static long long rw_longest_read(const struct sim_redis *r, const char *name,
                                 uint64_t now)
{
    const struct sim_key *h = find(r, name);
    long long longest = -3, left;
    char key[SIM_STR];

    for (size_t i = 0; h != NULL && i < h->fields; i++) {
        if (strcmp(h->field[i], "mode") == 0)
            continue;
        for (long long n = atoll(h->value[i]); n >= 1; n--) {
            rw_timeout_key(key, name, h->field[i], n);
            left = pttl(find(r, key), now);
            longest = left > longest ? left : longest;
        }
    }
    return longest;
}

static void rw_timeout_set(struct sim_redis *r, const char *name,
                           const char *field, long long n, long long px,
                           uint64_t now, bool only_new)
{
    char key[SIM_STR];

    rw_timeout_key(key, name, field, n);
    if (only_new && find(r, key) != NULL)
        return;
    drop(r, key);
    set_number(create(r, key, SIM_STRING), "", 1);
    pexpire(find(r, key), now, px);
}

/* ARGV lease, field, count. */
static void rw_read_acquire(struct sim_redis *r, const struct sim_call *c,
                            uint64_t now, struct sim_key *h, const char *mode,
                            struct sim_reply *out)
{
    char writer[SIM_STR * 2];
    long long n = atoll(ARG(2)) + 1, lease = atoll(ARG(0)), left;

    snprintf(writer, sizeof(writer), "%s:write", ARG(1));
    if (strcmp(ARG(2), "0") != 0 && (h == NULL || field_index(h, ARG(1)) < 0)) {
        reply_error(out, "LOCKLOST the hold is gone");
        return;
    }
    if (strcmp(mode, "write") == 0 && field_index(h, writer) < 0) {
        reply_int(out, pttl(h, now));
        return;
    }
    h = make(r, KEY(0), SIM_HASH);
    if (strcmp(mode, "none") == 0)
        hset(h, "mode", "read");
    set_number(h, ARG(1), n);
    left = pttl(h, now);
    pexpire(h, now, left > lease ? left : lease);
    rw_timeout_set(r, KEY(0), ARG(1), n, lease, now, false);
    reply_nil(out);
}

/* ARGV lease, field (":write"), count. */
static void rw_write_acquire(struct sim_redis *r, const struct sim_call *c,
                             uint64_t now, struct sim_key *h, const char *mode,
                             struct sim_reply *out)
{
    bool held = strcmp(mode, "write") == 0 && field_index(h, ARG(1)) >= 0;

    if (strcmp(ARG(2), "0") != 0 && !held) {
        reply_error(out, "LOCKLOST the hold is gone");
    } else if (strcmp(mode, "none") != 0 && !held) {
        reply_int(out, pttl(h, now));
    } else {
        h = make(r, KEY(0), SIM_HASH);
        hset(h, "mode", "write");
        set_number(h, ARG(1), atoll(ARG(2)) + 1);
        pexpire(h, now, atoll(ARG(0)));
        reply_nil(out);
    }
}

/* The lock is gone: deleted, and its channel told. */
static void rw_freed(struct sim_redis *r, const struct sim_call *c,
                     struct sim_reply *out)
{
    drop(r, KEY(0));
    r->publish(KEY(1), ARG(0), r->ctx);
    reply_int(out, 1);
}

/* Sets a reader's count: ARGV msg, lease, field, count (-1: one less). */
static void rw_read_set(struct sim_redis *r, const struct sim_call *c,
                        uint64_t now, struct sim_key *h, const char *mode,
                        struct sim_reply *out)
{
    int i = h != NULL ? field_index(h, ARG(2)) : -1;
    long long cur = i >= 0 ? atoll(h->value[i]) : 0, n = atoll(ARG(3));
    long long px = atoll(ARG(1)), left;
    char key[SIM_STR];

    if (i < 0) {
        reply_nil(out);
        return;
    }
    n = n < 0 ? cur - 1 : n;
    for (long long k = cur; k > n; k--) {
        rw_timeout_key(key, KEY(0), ARG(2), k);
        drop(r, key);
    }
    h = find(r, KEY(0));
    if (n > 0) {
        set_number(h, ARG(2), n);
        px = px == 0 ? pttl(h, now) : px;
        for (long long k = 1; px > 0 && k <= n; k++)
            rw_timeout_set(r, KEY(0), ARG(2), k, px, now, true);
    } else {
        remove_field(r, KEY(0), ARG(2));
    }
    h = find(r, KEY(0));
    if (h != NULL && h->fields > 1) {
        left = rw_longest_read(r, KEY(0), now);
        if (left > 0)
            pexpire(h, now, left);
        if (left > 0 || strcmp(mode, "write") == 0) {
            reply_int(out, n > 0 ? 0 : 1);
            return;
        }
    }
    rw_freed(r, c, out);
}

/* Sets the writer's count: ARGV msg, lease, field, count (-1: one less). */
static void rw_write_set(struct sim_redis *r, const struct sim_call *c,
                         uint64_t now, struct sim_key *h, const char *mode,
                         struct sim_reply *out)
{
    int i = strcmp(mode, "write") == 0 ? field_index(h, ARG(2)) : -1;
    long long n = atoll(ARG(3));

    if (i < 0) {
        reply_nil(out);
        return;
    }
    n = n < 0 ? atoll(h->value[i]) - 1 : n;
    if (n > 0) {
        set_number(h, ARG(2), n);
        if (strcmp(ARG(1), "0") != 0)
            pexpire(h, now, atoll(ARG(1)));
        reply_int(out, 0);
        return;
    }
    remove_field(r, KEY(0), ARG(2));
    h = find(r, KEY(0));
    if (h != NULL && h->fields > 1) { /* its read holds: a downgrade */
        hset(h, "mode", "read");
        r->publish(KEY(1), ARG(0), r->ctx);
        reply_int(out, 1);
    } else {
        rw_freed(r, c, out);
    }
}

static void rw_renew_many(struct sim_redis *r, const struct sim_call *c,
                          uint64_t now, struct sim_reply *out)
{
    char key[SIM_STR];

    for (int i = 0; i < c->nkeys; i++) {
        struct sim_key *h = find(r, KEY(i));
        const char *mode = rw_shape(h), *f = ARG(2 * i);
        long long ms = atoll(ARG(2 * i + 1)), held = 0, left;
        size_t len = strlen(f);
        bool writer = len >= 6 && strcmp(f + len - 6, ":write") == 0;

        element_int(out, (size_t)i, 0);
        if (strcmp(mode, "read") == 0 || strcmp(mode, "write") == 0)
            held = hget_number(r, KEY(i), f);
        if (held > 0 && writer && strcmp(mode, "write") == 0) {
            pexpire(h, now, ms);
            element_int(out, (size_t)i, 1);
        } else if (held > 0 && !writer) {
            for (long long n = held; n >= 1; n--) {
                rw_timeout_key(key, KEY(i), f, n);
                if (find(r, key) != NULL)
                    pexpire(find(r, key), now, ms);
            }
            h = find(r, KEY(i));
            left = pttl(h, now);
            pexpire(h, now, left > ms ? left : ms);
            element_int(out, (size_t)i, 1);
        }
    }
    reply_array(out, (size_t)c->nkeys);
}

/* The "rw_" scripts. */
bool sim_redis_run_rw(struct sim_redis *r, uint64_t now,
                      const struct sim_call *c, struct sim_reply *out)
{
    const char *s = c->script + 3;
    struct sim_key *h = find(r, KEY(0));
    const char *mode = rw_shape(h);

    if (strcmp(s, "renew_many") == 0) {
        rw_renew_many(r, c, now, out);
        return true;
    }
    if (strcmp(mode, "other") == 0) {
        if (strcmp(s, "inspect") == 0)
            reply_ints(out, 0, 0, -2, 3);
        else
            reply_error(out, "WRONGTYPE not a lock");
        return true;
    }
    if (strcmp(s, "read_acquire") == 0) {
        rw_read_acquire(r, c, now, h, mode, out);
    } else if (strcmp(s, "write_acquire") == 0) {
        rw_write_acquire(r, c, now, h, mode, out);
    } else if (strcmp(s, "read_set") == 0) {
        rw_read_set(r, c, now, h, mode, out);
    } else if (strcmp(s, "write_set") == 0) {
        rw_write_set(r, c, now, h, mode, out);
    } else if (strcmp(s, "force_release") == 0) { /* msg */
        if (strcmp(mode, strcmp(ARG(0), "1") == 0 ? "write" : "read") == 0)
            rw_freed(r, c, out);
        else
            reply_int(out, 0);
    } else if (strcmp(s, "inspect") == 0) { /* field, mode */
        bool locked =
            strcmp(ARG(1), "write") == 0
                ? strcmp(mode, "write") == 0
                : strcmp(mode, "read") == 0 || (h != NULL && h->fields > 2);

        if (strcmp(mode, "none") == 0)
            reply_ints(out, 0, 0, -2, 3);
        else
            reply_ints(out, locked, hget_number(r, KEY(0), ARG(0)),
                       pttl(h, now), 3);
    } else {
        return false;
    }
    return true;
}
