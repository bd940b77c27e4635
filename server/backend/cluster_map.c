/*
 * cluster_map.c - CLUSTER NODES, one line per node:
 *
 *   <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent>
 *   <pong-recv> <config-epoch> <link-state> <slot> <slot> ...
 *
 * where a slot is "42", "0-5460", or "[42->-<id>]" / "[42-<-<id>]" for a
 * slot migrating or importing (skipped: the owner is the one that says
 * "42"). Every field is read within its bounds; a line that does not
 * parse is skipped whole, so a half-read line never maps a slot.
 */
#include "backend/cluster_map.h"

#include <stdio.h>
#include <string.h>

/* Decimal digits only, the whole of [s, s + len), at most max. */
static bool parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t n = 0;

    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || n > (UINT64_MAX - 9) / 10)
            return false;
        n = n * 10 + (uint64_t)(s[i] - '0');
    }
    if (n > max)
        return false;
    *out = n;
    return true;
}

/* A host name or address: printable, no blank (no NUL either). */
static bool host_ok(const char *host, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (host[i] <= ' ' || host[i] > '~')
            return false;
    return true;
}

/* "host:port", "host:port@cport" or "host:port@cport,hostname"; an empty
 * host is self_host. */
static bool parse_addr(const char *field, size_t len, const char *self_host,
                       struct redis_addr *addr)
{
    const char *at = memchr(field, '@', len);
    const char *colon;
    size_t host_len;
    uint64_t port;

    if (at == NULL)
        at = field + len;
    colon = at;
    while (colon > field && colon[-1] != ':')
        colon--;
    if (colon == field)
        return false;
    host_len = (size_t)(colon - 1 - field);
    if (!parse_uint(colon, (size_t)(at - colon), 65535, &port) || port == 0 ||
        host_len >= sizeof(addr->host) || !host_ok(field, host_len) ||
        (host_len == 0 && strlen(self_host) >= sizeof(addr->host)))
        return false;
    memset(addr, 0, sizeof(*addr));
    if (host_len == 0)
        memcpy(addr->host, self_host, strlen(self_host));
    else
        memcpy(addr->host, field, host_len);
    addr->port = (int)port;
    return true;
}

/* "42" or "0-5460" -> [first, last]; false for anything else. */
static bool parse_range(const char *field, size_t len, unsigned *first,
                        unsigned *last)
{
    const char *dash = memchr(field, '-', len);
    size_t head = dash ? (size_t)(dash - field) : len;
    uint64_t a, b;

    if (!parse_uint(field, head, KEYSLOT_COUNT - 1, &a))
        return false;
    b = a;
    if (dash != NULL &&
        !parse_uint(dash + 1, len - head - 1, KEYSLOT_COUNT - 1, &b))
        return false;
    if (b < a)
        return false;
    *first = (unsigned)a;
    *last = (unsigned)b;
    return true;
}

static bool has_flag(const char *flags, size_t len, const char *flag)
{
    size_t n = strlen(flag);
    const char *p = flags, *end = flags + len;

    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t word = comma ? (size_t)(comma - p) : (size_t)(end - p);

        if (word == n && memcmp(p, flag, n) == 0)
            return true;
        p += word + 1;
    }
    return false;
}

/* The next space-separated field of [*p, end): false at the end. */
static bool next_field(const char **p, const char *end, const char **field,
                       size_t *len)
{
    const char *sp;

    if (*p >= end)
        return false;
    sp = memchr(*p, ' ', (size_t)(end - *p));
    *field = *p;
    *len = sp ? (size_t)(sp - *p) : (size_t)(end - *p);
    *p += *len + 1;
    return true;
}

/* The slot fields of a line, from p: checked all (write false), then
 * given to node n (write true). */
static bool parse_slots(struct cluster_map *map, const char *p, const char *end,
                        uint16_t n, bool write)
{
    const char *field;
    size_t len;
    unsigned first, last;

    while (next_field(&p, end, &field, &len)) {
        if (len == 0 || field[0] == '[')
            continue;
        if (!parse_range(field, len, &first, &last))
            return false;
        for (unsigned s = first; write && s <= last; s++)
            map->owner[s] = n;
    }
    return true;
}

static bool parse_line(struct cluster_map *map, const char *line, size_t len,
                       const char *self_host)
{
    struct cluster_node *node = &map->nodes[map->count];
    const char *field[8], *p = line, *end = line + len;
    size_t flen[8];

    for (int i = 0; i < 8; i++)
        if (!next_field(&p, end, &field[i], &flen[i]))
            return false;
    if (flen[0] == 0 || flen[0] >= sizeof(node->id) ||
        flen[3] >= sizeof(node->master_id))
        return false;
    memset(node, 0, sizeof(*node));
    memcpy(node->id, field[0], flen[0]);
    memcpy(node->master_id, field[3], flen[3]);
    if (!parse_addr(field[1], flen[1], self_host, &node->addr) ||
        !parse_uint(field[6], flen[6], UINT64_MAX, &node->epoch))
        return false;
    node->master = has_flag(field[2], flen[2], "master");
    node->failed = has_flag(field[2], flen[2], "fail") ||
                   has_flag(field[2], flen[2], "noaddr") ||
                   has_flag(field[2], flen[2], "handshake");
    node->connected = flen[7] == 9 && memcmp(field[7], "connected", 9) == 0 &&
                      !has_flag(field[2], flen[2], "fail?");
    if (p < end && (!node->master || !parse_slots(map, p, end, 0, false)))
        return false;
    parse_slots(map, p, end, (uint16_t)map->count, true);
    map->count++;
    return true;
}

void cluster_map_parse(struct cluster_map *map, const char *text, size_t len,
                       const char *self_host)
{
    map->count = map->bad_lines = 0;
    for (size_t i = 0; i < KEYSLOT_COUNT; i++)
        map->owner[i] = CLUSTER_NO_NODE;
    while (len > 0) {
        const char *nl = memchr(text, '\n', len);
        size_t line = nl ? (size_t)(nl - text) : len;

        if (line > 0 && map->count < map->max && map->count < CLUSTER_NO_NODE &&
            !parse_line(map, text, line, self_host))
            map->bad_lines++;
        text += line + (nl != NULL);
        len -= line + (nl != NULL);
    }
    for (size_t n = 0; n < map->count; n++)
        map->nodes[n].slots = 0;
    for (size_t s = 0; s < KEYSLOT_COUNT; s++)
        if (map->owner[s] != CLUSTER_NO_NODE)
            map->nodes[map->owner[s]].slots++;
}

bool cluster_redirect_parse(const char *error, size_t len, unsigned *slot,
                            struct redis_addr *addr)
{
    const char *p = error, *end = error + len, *field;
    size_t flen;
    uint64_t n;

    if (!next_field(&p, end, &field, &flen) ||
        !next_field(&p, end, &field, &flen) ||
        !parse_uint(field, flen, KEYSLOT_COUNT - 1, &n) ||
        !next_field(&p, end, &field, &flen) || p < end ||
        !parse_addr(field, flen, "", addr) || addr->host[0] == '\0')
        return false;
    *slot = (unsigned)n;
    return true;
}
