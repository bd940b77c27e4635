/*
 * locks_view.c - LOCKS, GET /locks and GET /events: the engine's view of
 * who holds what and who waits for whom (lock_engine_view), written once
 * for both RESP and JSON through one small writer, so that the command
 * and the endpoint cannot drift apart.
 *
 * Each owner's peer and client name are its session's connections':
 * one walk over the connections per call maps each session to one of
 * them (a named one if any), so a page costs its locks plus the
 * connections, not their product.
 */
#include "front/locks_view.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/event_ring.h"
#include "base/glob.h"
#include "base/hashmap.h"
#include "base/json.h"
#include "engine/lock_engine.h"
#include "front/client_int.h"
#include "front/peer.h"

#define LOCKS_DEFAULT_COUNT 100
#define WRITER_DEPTH 8

static const struct config *view_cfg;

void locks_view_init(const struct config *cfg)
{
    view_cfg = cfg;
}

int locks_view_count(int64_t asked, size_t *count, char *err, size_t size)
{
    if (asked > view_cfg->locks_max_count) {
        snprintf(err, size,
                 "COUNT %lld is over [server] locks_max_count (%lld): ask "
                 "for pages with OFFSET",
                 (long long)asked, (long long)view_cfg->locks_max_count);
        return -ERANGE;
    }
    *count = asked > 0 ? (size_t)asked
             : LOCKS_DEFAULT_COUNT < view_cfg->locks_max_count
                 ? LOCKS_DEFAULT_COUNT
                 : (size_t)view_cfg->locks_max_count;
    return 0;
}

/* ---- one writer, RESP2, RESP3 or JSON -------------------------------- */

struct writer {
    struct buffer *b;
    bool json;
    enum reply_protocol proto;
    int depth;
    bool first[WRITER_DEPTH];
    bool in_map[WRITER_DEPTH];
    int err;
};

/* JSON's comma before every element of an array but the first. */
static void w_element(struct writer *w)
{
    if (!w->json || w->depth == 0 || w->in_map[w->depth])
        return;
    if (!w->first[w->depth])
        w->err |= buffer_append(w->b, ", ", 2);
    w->first[w->depth] = false;
}

static void w_open(struct writer *w, bool map, size_t n)
{
    w_element(w);
    if (w->json)
        w->err |= buffer_append(w->b, map ? "{" : "[", 1);
    else if (map)
        w->err |= reply_map_header(w->b, w->proto, n);
    else
        w->err |= reply_array_header(w->b, n);
    w->depth++;
    w->first[w->depth] = true;
    w->in_map[w->depth] = map;
}

static void w_close(struct writer *w)
{
    if (w->json)
        w->err |= buffer_append(w->b, w->in_map[w->depth] ? "}" : "]", 1);
    w->depth--;
}

static void w_key(struct writer *w, const char *key)
{
    if (w->json) {
        if (!w->first[w->depth])
            w->err |= buffer_append(w->b, ", ", 2);
        w->first[w->depth] = false;
        w->err |= json_string(w->b, key, strlen(key));
        w->err |= buffer_append(w->b, ": ", 2);
    } else {
        w->err |= reply_bulk(w->b, key, strlen(key));
    }
}

static void w_str(struct writer *w, const char *s, size_t len)
{
    w_element(w);
    if (s == NULL)
        w->err |= w->json ? buffer_append(w->b, "null", 4)
                          : reply_null(w->b, w->proto);
    else
        w->err |=
            w->json ? json_string(w->b, s, len) : reply_bulk(w->b, s, len);
}

static void w_cstr(struct writer *w, const char *s)
{
    w_str(w, s, s ? strlen(s) : 0);
}

static void w_int(struct writer *w, int64_t v)
{
    char text[FORMAT_INT_MAX];

    w_element(w);
    if (w->json)
        w->err |= buffer_append(w->b, text, format_int64(text, v));
    else
        w->err |= reply_integer(w->b, v);
}

/* ---- the locks ----------------------------------------------------------- */

struct view_ctx {
    const struct locks_query *q;
    struct writer *w;
    struct hashmap clients; /* &client.session -> a client of it */
    size_t shown;
};

/* The name as clients name it: the key without [lock] name_prefix. */
static void client_name(const char **name, size_t *len)
{
    size_t plen = strlen(view_cfg->name_prefix);

    if (*len >= plen && memcmp(*name, view_cfg->name_prefix, plen) == 0) {
        *name += plen;
        *len -= plen;
    }
}

static bool view_filter(const char *name, size_t len, void *arg)
{
    const struct view_ctx *v = arg;

    client_name(&name, &len);
    if (v->q->match != NULL &&
        !glob_match(v->q->match, v->q->match_len, name, len))
        return false;
    return v->q->user == NULL || glob_list_match(v->q->user->names, name, len);
}

/* One connection of each session, a named one where there is. */
static int map_clients(struct hashmap *map)
{
    struct list_node *pos, *tmp;

    list_for_each_safe (pos, tmp, &clients.all) {
        struct client *c = list_entry(pos, struct client, link);
        const struct client *had;

        if (c->session == NULL)
            continue;
        had = hashmap_get(map, &c->session, sizeof(c->session));
        if (had != NULL && (had->name != NULL || c->name == NULL))
            continue;
        if (had != NULL)
            hashmap_remove(map, &c->session, sizeof(c->session));
        if (hashmap_put(map, &c->session, sizeof(c->session), c) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* owner, client-id, peer and client-name: the fields holders and waiters
 * share. */
static void write_who(struct view_ctx *v, const struct lock_view_owner *o)
{
    struct writer *w = v->w;
    const struct client *c =
        o->session ? hashmap_get(&v->clients, &o->session, sizeof(o->session))
                   : NULL;

    w_key(w, "owner");
    w_str(w, o->owner, o->owner_len);
    w_key(w, "client-id");
    if (o->session != NULL)
        w_str(w, lock_engine_session_id(o->session),
              lock_engine_session_id_len(o->session));
    else
        w_str(w, NULL, 0);
    w_key(w, "peer");
    w_cstr(w, c != NULL && c->peer != NULL ? c->peer->name : NULL);
    w_key(w, "client-name");
    w_cstr(w, c != NULL ? c->name : NULL);
}

static int write_lock(const struct lock_view *l, void *arg)
{
    struct view_ctx *v = arg;
    struct writer *w = v->w;
    const char *name = l->name;
    size_t len = l->name_len;

    client_name(&name, &len);
    w_open(w, true, 5);
    w_key(w, "name");
    w_str(w, name, len);
    w_key(w, "kind");
    w_cstr(w, l->kind);
    w_key(w, "ttl");
    w_int(w, l->ttl_ms);
    w_key(w, "holders");
    w_open(w, false, l->holder_count);
    for (size_t i = 0; i < l->holder_count; i++) {
        w_open(w, true, 6);
        write_who(v, &l->holders[i]);
        w_key(w, "count");
        w_int(w, l->holders[i].count);
        w_key(w, "held-ms");
        w_int(w, (int64_t)l->holders[i].ms);
        w_close(w);
    }
    w_close(w);
    w_key(w, "waiters");
    w_open(w, false, l->waiter_count);
    for (size_t i = 0; i < l->waiter_count; i++) {
        w_open(w, true, 6);
        write_who(v, &l->waiters[i]);
        w_key(w, "waiting-ms");
        w_int(w, (int64_t)l->waiters[i].ms);
        w_key(w, "asked");
        w_cstr(w, l->waiters[i].asked);
        w_close(w);
    }
    w_close(w);
    w_close(w);
    v->shown++;
    return w->err ? -ENOMEM : 0;
}

/* Writes the page's locks into body (the array's elements, without its
 * header); returns the total that matched, or -ENOMEM. */
static int64_t write_page(struct buffer *body, bool json,
                          enum reply_protocol proto,
                          const struct locks_query *q, size_t *shown)
{
    struct writer w = {.b = body, .json = json, .proto = proto, .depth = 1};
    struct view_ctx v = {.q = q, .w = &w};
    int64_t total;

    w.first[1] = true; /* inside the array the caller opens */
    hashmap_init(&v.clients);
    total = map_clients(&v.clients) != 0
                ? -ENOMEM
                : lock_engine_view(view_filter, q->offset, q->count, write_lock,
                                   &v);
    hashmap_free(&v.clients);
    *shown = v.shown;
    return total;
}

int locks_view_resp(struct buffer *out, enum reply_protocol proto,
                    const struct locks_query *q)
{
    struct buffer body;
    size_t shown;
    int err;

    buffer_init(&body);
    err = write_page(&body, false, proto, q, &shown) < 0 ? -ENOMEM : 0;
    if (err == 0)
        err = reply_array_header(out, shown);
    if (err == 0 && body.len > 0)
        err = buffer_append(out, body.data, body.len);
    buffer_free(&body);
    return err;
}

/* {"total": n, "offset": n, "count": n, "<what>": [<body>]}: a page of
 * a view; body is freed. -ENOMEM when total is an error. */
static int write_envelope(struct buffer *out, const char *what, int64_t total,
                          size_t offset, size_t shown, struct buffer *body)
{
    char head[160];
    int err;

    snprintf(head, sizeof(head),
             "{\"total\": %lld, \"offset\": %zu, \"count\": %zu, "
             "\"%s\": [",
             (long long)total, offset, shown, what);
    err = total < 0 ? -ENOMEM : buffer_append(out, head, strlen(head));
    if (err == 0 && body->len > 0)
        err = buffer_append(out, body->data, body->len);
    if (err == 0)
        err = buffer_append(out, "]}\n", 3);
    buffer_free(body);
    return err;
}

int locks_view_json(struct buffer *out, const struct locks_query *q)
{
    struct buffer body;
    size_t shown;
    int64_t total;

    buffer_init(&body);
    total = write_page(&body, true, REPLY_RESP3, q, &shown);
    return write_envelope(out, "locks", total, q->offset, shown, &body);
}

/* ---- sessions ------------------------------------------------------------ */

struct sessions_ctx {
    struct writer *w;
    struct client **conns; /* every connection with a session, by it */
    size_t conn_count;
    uint64_t now_ms;
    size_t shown;
};

static int by_session(const void *pa, const void *pb)
{
    const struct client *a = *(struct client *const *)pa;
    const struct client *b = *(struct client *const *)pb;

    return a->session < b->session ? -1 : a->session > b->session;
}

/* The first of the sorted connections of session s (conn_count: none). */
static size_t first_conn(const struct sessions_ctx *v, const struct session *s)
{
    size_t lo = 0, hi = v->conn_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if ((const void *)v->conns[mid]->session < (const void *)s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int write_session(const struct session_view *s, void *arg)
{
    struct sessions_ctx *v = arg;
    struct writer *w = v->w;
    size_t first = first_conn(v, s->session), end = first;

    while (end < v->conn_count && v->conns[end]->session == s->session)
        end++;
    w_open(w, true, 6);
    w_key(w, "client-id");
    w_str(w, s->id, s->id_len);
    w_key(w, "connections");
    w_int(w, s->connections);
    w_key(w, "holds");
    w_int(w, (int64_t)s->holds);
    w_key(w, "waiters");
    w_int(w, (int64_t)s->waiters);
    w_key(w, "resumable");
    w->err |= buffer_append(w->b, s->resumable ? "true" : "false",
                            s->resumable ? 4 : 5);
    w_key(w, "clients");
    w_open(w, false, end - first);
    for (size_t i = first; i < end; i++) {
        const struct client *c = v->conns[i];

        w_open(w, true, 5);
        w_key(w, "id");
        w_int(w, (int64_t)c->id);
        w_key(w, "peer");
        w_cstr(w, c->peer != NULL ? c->peer->name : NULL);
        w_key(w, "client-name");
        w_cstr(w, c->name);
        w_key(w, "heartbeat-ms");
        w_int(w, c->heartbeat_ms);
        w_key(w, "heard-ms-ago");
        w_int(w,
              v->now_ms > c->heard_ms ? (int64_t)(v->now_ms - c->heard_ms) : 0);
        w_close(w);
    }
    w_close(w);
    w_close(w);
    v->shown++;
    return w->err ? -ENOMEM : 0;
}

int locks_view_sessions_json(struct buffer *out, size_t offset, size_t count)
{
    struct buffer body;
    struct writer w = {.b = &body, .json = true, .depth = 1};
    struct sessions_ctx v = {.w = &w, .now_ms = uv_now(clients.loop)};
    struct list_node *pos, *tmp;
    int64_t total = -ENOMEM;

    w.first[1] = true;
    buffer_init(&body);
    list_for_each_safe (pos, tmp, &clients.all)
        v.conn_count++;
    v.conns = calloc(v.conn_count + 1, sizeof(*v.conns));
    if (v.conns != NULL) {
        v.conn_count = 0;
        list_for_each_safe (pos, tmp, &clients.all) {
            struct client *c = list_entry(pos, struct client, link);

            if (c->session != NULL)
                v.conns[v.conn_count++] = c;
        }
        qsort(v.conns, v.conn_count, sizeof(*v.conns), by_session);
        total = lock_engine_sessions_view(offset, count, write_session, &v);
    }
    free(v.conns);
    return write_envelope(out, "sessions", total, offset, v.shown, &body);
}

void locks_view_note_loss(const struct lock_loss *loss)
{
    const char *name = loss->name;
    size_t len = loss->name_len;

    client_name(&name, &len);
    event_ring_push(EVENT_LOST, "%.*s (%s) held by %.*s lost: %s", (int)len,
                    name, loss->kind->name, (int)loss->owner_len, loss->owner,
                    loss->reason);
}

int locks_view_events_json(struct buffer *out)
{
    struct writer w = {.b = out, .json = true};

    w_open(&w, true, 1);
    w_key(&w, "events");
    w_open(&w, false, event_ring_count());
    for (size_t i = 0; i < event_ring_count(); i++) {
        const struct event *e = event_ring_newest(i);

        w_open(&w, true, 4);
        w_key(&w, "seq");
        w_int(&w, (int64_t)e->seq);
        w_key(&w, "time_ms");
        w_int(&w, (int64_t)e->time_ms);
        w_key(&w, "kind");
        w_cstr(&w, event_kind_name(e->kind));
        w_key(&w, "text");
        w_cstr(&w, e->text);
        w_close(&w);
    }
    w_close(&w);
    w_close(&w);
    w.err |= buffer_append(out, "\n", 1);
    return w.err ? -ENOMEM : 0;
}
