/*
 * list.c - `rlock list [PATTERN]`: the locks rlockd holds or waits on
 * for its clients (rlock_locks(), rlockd's LOCKS), the longest wait
 * first, one row each: NAME KIND HOLDER COUNT HELD WAITERS LONGEST_WAIT.
 *
 * On a terminal the columns are aligned and times read as durations
 * ("1m05s"); otherwise (a pipe, a file) the rows are tab-separated with
 * times in ms, for cut and awk; --json prints every field as one array.
 * It asks for pages of PAGE locks until a short one, never for all at
 * once (rlockd bounds a page by [server] locks_max_count).
 */
#include "list.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

#define PAGE 100
#define COLUMNS 7
#define CELL_MAX 256

static const char *const headings[COLUMNS] = {
    "NAME", "KIND", "HOLDER", "COUNT", "HELD", "WAITERS", "LONGEST_WAIT"};

struct table {
    char (*cells)[COLUMNS][CELL_MAX];
    size_t rows, size;
    size_t width[COLUMNS];
};

/* ms as people read it on a terminal, as ms for programs. */
static void duration(char *out, long long ms, bool human)
{
    if (!human)
        snprintf(out, CELL_MAX, "%lld", ms);
    else if (ms < 1000)
        snprintf(out, CELL_MAX, "%lldms", ms);
    else if (ms < 60000)
        snprintf(out, CELL_MAX, "%lld.%llds", ms / 1000, ms % 1000 / 100);
    else
        snprintf(out, CELL_MAX, "%lldm%02llds", ms / 60000, ms % 60000 / 1000);
}

/* The lock's row: its holders' owners and counts joined by ",", the
 * longest held, how many wait and the longest wait ("-": none). */
static void row_of(const struct rlock_lock_info *l, char (*cell)[CELL_MAX],
                   bool human)
{
    long long held = -1, wait = -1;
    size_t h = 0, n = 0;

    snprintf(cell[0], CELL_MAX, "%s", l->name);
    snprintf(cell[1], CELL_MAX, "%s", l->kind ? l->kind : "");
    cell[2][0] = cell[3][0] = '\0';
    for (size_t i = 0; i < l->holder_count; i++) {
        const struct rlock_lock_owner *o = &l->holders[i];

        h += (size_t)snprintf(cell[2] + h, h < CELL_MAX ? CELL_MAX - h : 0,
                              "%s%s", i ? "," : "", o->owner);
        n += (size_t)snprintf(cell[3] + n, n < CELL_MAX ? CELL_MAX - n : 0,
                              "%s%lld", i ? "," : "", o->count);
        if (o->ms > held)
            held = o->ms;
    }
    for (size_t i = 0; i < l->waiter_count; i++)
        if (l->waiters[i].ms > wait)
            wait = l->waiters[i].ms;
    if (l->holder_count == 0)
        strcpy(cell[2], "-");
    if (held < 0)
        strcpy(cell[4], "-");
    else
        duration(cell[4], held, human);
    snprintf(cell[5], CELL_MAX, "%zu", l->waiter_count);
    if (wait < 0)
        strcpy(cell[6], "-");
    else
        duration(cell[6], wait, human);
}

static void print_row(char (*cell)[CELL_MAX], const size_t *width)
{
    for (int i = 0; i < COLUMNS; i++) {
        if (width == NULL)
            printf("%s%s", cell[i], i + 1 < COLUMNS ? "\t" : "\n");
        else if (i + 1 < COLUMNS)
            printf("%-*s  ", (int)width[i], cell[i]);
        else
            printf("%s\n", cell[i]);
    }
}

/* A JSON string: " \ and control bytes escaped. */
static void json_text(const char *s)
{
    if (s == NULL) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void json_owners(const struct rlock_lock_owner *o, size_t n,
                        bool holders)
{
    putchar('[');
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", {\"owner\": " : "{\"owner\": ", stdout);
        json_text(o[i].owner);
        fputs(", \"client-id\": ", stdout);
        json_text(o[i].client_id);
        fputs(", \"peer\": ", stdout);
        json_text(o[i].peer);
        fputs(", \"client-name\": ", stdout);
        json_text(o[i].client_name);
        if (holders) {
            printf(", \"count\": %lld, \"held-ms\": %lld}", o[i].count,
                   o[i].ms);
        } else {
            printf(", \"waiting-ms\": %lld, \"asked\": ", o[i].ms);
            json_text(o[i].asked);
            putchar('}');
        }
    }
    putchar(']');
}

static void json_lock(const struct rlock_lock_info *l, bool first)
{
    fputs(first ? "\n{\"name\": " : ",\n{\"name\": ", stdout);
    json_text(l->name);
    fputs(", \"kind\": ", stdout);
    json_text(l->kind);
    printf(", \"ttl\": %lld, \"holders\": ", l->ttl_ms);
    json_owners(l->holders, l->holder_count, true);
    fputs(", \"waiters\": ", stdout);
    json_owners(l->waiters, l->waiter_count, false);
    putchar('}');
}

/* Keeps a row for the aligned table; false when out of memory. */
static bool keep_row(struct table *t, const struct rlock_lock_info *l)
{
    if (t->rows == t->size) {
        size_t size = t->size ? 2 * t->size : PAGE;
        void *grown = realloc(t->cells, size * sizeof(*t->cells));

        if (grown == NULL)
            return false;
        t->cells = grown;
        t->size = size;
    }
    row_of(l, t->cells[t->rows], true);
    for (int i = 0; i < COLUMNS; i++) {
        size_t w = strlen(t->cells[t->rows][i]);

        if (w > t->width[i])
            t->width[i] = w;
    }
    t->rows++;
    return true;
}

int list_locks(rlock_client *c, const struct options *o)
{
    bool tty = !o->json && isatty(STDOUT_FILENO);
    struct table t = {0};
    char cells[COLUMNS][CELL_MAX];
    size_t offset = 0, shown = 0, n;
    struct rlock_lock_info *locks;
    int rc, status = 0;

    for (int i = 0; i < COLUMNS; i++) {
        t.width[i] = strlen(headings[i]);
        snprintf(cells[i], CELL_MAX, "%s", headings[i]);
    }
    if (o->json)
        putchar('[');
    else if (!tty)
        print_row(cells, NULL);
    do {
        rc = rlock_locks(c, o->name, PAGE, offset, &locks, &n);
        if (rc != RLOCK_OK) {
            status = fail(rc, "list at %s", o->addr);
            break;
        }
        for (size_t i = 0; i < n; i++, shown++) {
            if (o->json) {
                json_lock(&locks[i], shown == 0);
            } else if (tty) {
                if (!keep_row(&t, &locks[i]))
                    status = fail_sys("realloc");
            } else {
                row_of(&locks[i], cells, false);
                print_row(cells, NULL);
            }
        }
        rlock_locks_free(locks, n);
        offset += n;
    } while (n == PAGE && status == 0);
    if (o->json)
        printf("%s]\n", shown ? "\n" : "");
    if (tty && status == 0) {
        for (int i = 0; i < COLUMNS; i++)
            snprintf(cells[i], CELL_MAX, "%s", headings[i]);
        print_row(cells, t.width);
        for (size_t i = 0; i < t.rows; i++)
            print_row(t.cells[i], t.width);
    }
    free(t.cells);
    return status;
}
