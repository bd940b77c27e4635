/*
 * config_load.c - where settings come from: the ini file, then the
 * environment, then the check that they agree.
 *
 * inih walks the file; each line goes to its row's setter, or to acl_set
 * for a [user NAME] section, which may come any number of times. A key
 * set twice and a section no row has are refused, naming the line.
 *
 * The environment overrides the file, row by row: RLOCKD_<SECTION>_<KEY>
 * in capitals (RLOCKD_REDIS_HOST), as a container is configured.
 *
 * Never: apply a setting. It fills a struct config, or refuses it whole.
 */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/acl.h"
#include "base/config_int.h"

/* inih keeps the first 49 bytes of a section name and drops the rest
 * silently; a name that long may have been cut. */
#define SECTION_NAME_MAX 48

struct load_state {
    struct config *cfg;
    FILE *file;
    int line;         /* the line inih is parsing */
    char section[64]; /* the previous row's, to see a section start */
    int set_on_line[CONFIG_ROW_MAX]; /* 0: not set by the file yet */
    char reason[256];                /* first error; inih reports its line */
};

/* inih's reader: fgets, counting lines, so that rows know theirs. */
static char *read_line(char *buf, int size, void *stream)
{
    struct load_state *st = stream;

    st->line++;
    return fgets(buf, size, st->file);
}

/* "user NAME" -> NAME; NULL for any other section. */
static const char *user_section(const char *section)
{
    if (strncmp(section, "user", 4) != 0 ||
        (section[4] != ' ' && section[4] != '\t'))
        return NULL;
    return section + 4 + strspn(section + 4, " \t");
}

/* Levenshtein's edit distance between two short names, for the closest
 * known section. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t lb = strlen(b), row[SECTION_NAME_MAX + 2];

    if (lb > SECTION_NAME_MAX)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; a[i - 1] != '\0'; i++) {
        size_t diagonal = row[0];

        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);

            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

/* Whether a row has that section; else the known section nearest to it
 * in *nearest ("user NAME" sections are known by their first word). */
static bool section_known(const char *section, const char **nearest)
{
    size_t best = SIZE_MAX;

    char first_word[SECTION_NAME_MAX + 1];

    snprintf(first_word, sizeof first_word, "%.*s",
             (int)strcspn(section, " \t"), section);
    *nearest = "user NAME";
    best = edit_distance(first_word, "user");
    for (size_t i = 0; i < config_row_count; i++) {
        size_t d;

        if (strcmp(config_rows[i].section, section) == 0)
            return true;
        d = edit_distance(section, config_rows[i].section);
        if (d < best) {
            best = d;
            *nearest = config_rows[i].section;
        }
    }
    if (best > 2)
        *nearest = NULL;
    return false;
}

/* A key set twice in a file is refused: which of the two was meant cannot
 * be told, and a later copy overriding an earlier one hides edits. Also
 * names a section no row has, with the closest known one. */
static int config_file_set(struct load_state *st, const char *section,
                           const char *key, const char *value, char *err,
                           size_t err_size)
{
    size_t i = config_row_find(section, key);
    const char *nearest;

    if (i == config_row_count && !section_known(section, &nearest)) {
        if (nearest != NULL)
            snprintf(err, err_size, "unknown section [%s] (did you mean [%s]?)",
                     section, nearest);
        else
            snprintf(err, err_size, "unknown section [%s]", section);
        return -1;
    }
    if (i < config_row_count && st->set_on_line[i] != 0) {
        snprintf(err, err_size,
                 "duplicate key '%s' in section [%s] (first "
                 "set on line %d)",
                 key, section, st->set_on_line[i]);
        return -1;
    }
    if (i < config_row_count)
        st->set_on_line[i] = st->line;
    return config_set(st->cfg, section, key, value, err, err_size);
}

static int config_ini_line(void *user, const char *section, const char *key,
                           const char *value)
{
    struct load_state *st = user;
    const char *name = user_section(section);
    bool starts = strcmp(section, st->section) != 0;
    char err[256];
    int rc;

    snprintf(st->section, sizeof(st->section), "%s", section);
    if (strlen(section) > SECTION_NAME_MAX) {
        snprintf(err, sizeof(err),
                 "section name longer than %d characters: [%s...]",
                 SECTION_NAME_MAX, section);
        rc = -EINVAL;
    } else if (name != NULL)
        rc = acl_set(&st->cfg->acl, name, key, value, st->line, starts, err,
                     sizeof(err));
    else
        rc = config_file_set(st, section, key, value, err, sizeof(err));
    if (rc == 0)
        return 1;
    if (st->reason[0] == '\0')
        snprintf(st->reason, sizeof(st->reason), "%s", err);
    return 0;
}

/* Settings that are valid alone but not together: true, with why. */
static bool config_conflict(const struct config *cfg, char *why, size_t size)
{
    if (cfg->min_heartbeat_ms > cfg->max_heartbeat_ms)
        snprintf(why, size,
                 "min_heartbeat_ms %lld is above max_heartbeat_ms "
                 "%lld",
                 (long long)cfg->min_heartbeat_ms,
                 (long long)cfg->max_heartbeat_ms);
    else if (cfg->tls_listen[0] != '\0' &&
             (cfg->tls_cert_file[0] == '\0' || cfg->tls_key_file[0] == '\0'))
        snprintf(why, size,
                 "[server] tls_listen needs tls_cert_file and "
                 "tls_key_file");
    else if (cfg->tls_client_certs != TLS_CLIENT_CERTS_NO &&
             cfg->tls_ca_file[0] == '\0')
        snprintf(why, size,
                 "[server] tls_client_certs = %s needs tls_ca_file "
                 "(the CA that signs client certificates)",
                 cfg->tls_client_certs == TLS_CLIENT_CERTS_REQUIRED
                     ? "required"
                     : "optional");
    else if (cfg->redis_mode == REDIS_MODE_SENTINEL &&
             (cfg->sentinels[0] == '\0' || cfg->master_name[0] == '\0'))
        snprintf(why, size,
                 "[redis] mode = sentinel needs sentinels and "
                 "master_name");
    else if (cfg->redis_mode == REDIS_MODE_CLUSTER &&
             cfg->cluster_nodes[0] == '\0')
        snprintf(why, size, "[redis] mode = cluster needs nodes");
    else if (cfg->redis_mode != REDIS_MODE_CLUSTER &&
             (cfg->pubsub == PUBSUB_SHARDED || cfg->pubsub == PUBSUB_BOTH))
        snprintf(why, size,
                 "[redis] pubsub = %s needs mode = cluster "
                 "(Redisson uses sharded pub/sub only there)",
                 cfg->pubsub == PUBSUB_SHARDED ? "sharded" : "both");
    else if (cfg->redis_mode == REDIS_MODE_CLUSTER && cfg->redis_db != 0)
        snprintf(why, size,
                 "[redis] db must be 0 in cluster mode (a cluster "
                 "has one database)");
    /* WAIT, sent when there may be replicas to wait for, holds its
     * connection for up to sync_timeout_ms. */
    else if ((cfg->sync_replicas > 0 ||
              (cfg->sync_replicas == SYNC_REPLICAS_AUTO &&
               cfg->redis_mode != REDIS_MODE_STANDALONE)) &&
             cfg->sync_timeout_ms >= cfg->command_timeout_ms)
        snprintf(why, size,
                 "[lock] sync_timeout_ms %lld must be below [redis] "
                 "command_timeout_ms %lld",
                 (long long)cfg->sync_timeout_ms,
                 (long long)cfg->command_timeout_ms);
    else
        return false;
    return true;
}

/* A row's variable, RLOCKD_<SECTION>_<KEY> in capitals, in buf. */
static void env_name(const struct config_row *row, char *buf, size_t size)
{
    snprintf(buf, size, "RLOCKD_%s_%s", row->section, row->key);
    for (char *c = buf; *c != '\0'; c++)
        *c = (char)toupper((unsigned char)*c);
}

/* The row whose variable var (len bytes, up to its '=') is; NULL for
 * none. *in_section says whether var begins with a section's prefix. */
static const struct config_row *env_row(const char *var, size_t len,
                                        bool *in_section)
{
    char name[128];

    *in_section = false;
    for (size_t i = 0; i < config_row_count; i++) {
        size_t prefix = strlen("RLOCKD__") + strlen(config_rows[i].section);

        env_name(&config_rows[i], name, sizeof(name));
        if (len > prefix && strncmp(var, name, prefix) == 0)
            *in_section = true;
        if (strlen(name) == len && strncmp(var, name, len) == 0)
            return &config_rows[i];
    }
    return NULL;
}

/*
 * Sets every key the environment names, over the file's value; 0, or -1
 * with the variable and why in err. A variable of a section's prefix but
 * no key (RLOCKD_SERVER_LISTN) is refused, as the file's unknown keys
 * are: a misspelt override would otherwise be ignored silently. Other
 * RLOCKD_ variables are not settings and are left alone.
 */
static int config_apply_env(struct config *cfg, char *err, size_t err_size)
{
    extern char **environ;
    char reason[256];

    for (char **e = environ; *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        const struct config_row *row;
        bool in_section;

        if (eq == NULL || strncmp(*e, "RLOCKD_", 7) != 0)
            continue;
        row = env_row(*e, (size_t)(eq - *e), &in_section);
        if (row == NULL && !in_section)
            continue;
        if (row == NULL)
            snprintf(reason, sizeof(reason), "no such key");
        else if (config_set(cfg, row->section, row->key, eq + 1, reason,
                            sizeof(reason)) == 0)
            continue;
        snprintf(err, err_size, "environment %.*s: %s", (int)(eq - *e), *e,
                 reason);
        return -1;
    }
    return 0;
}

void config_print_env(const struct config *cfg, FILE *out)
{
    char name[128], buf[32];

    for (size_t i = 0; i < config_row_count; i++) {
        const struct config_row *row = &config_rows[i];

        env_name(row, name, sizeof(name));
        if (getenv(name) != NULL)
            fprintf(out, "rlockd: %s sets [%s] %s = %s\n", name, row->section,
                    row->key, config_value_text(row, cfg, buf, sizeof(buf)));
    }
}

int config_load(struct config *cfg, const char *path, char *err,
                size_t err_size)
{
    struct load_state st = {.cfg = cfg};
    int line;

    config_set_defaults(cfg);
    if (path == NULL) /* the defaults and the environment; no users */
        return config_apply_env(cfg, err, err_size) == 0 &&
                       !config_conflict(cfg, err, err_size)
                   ? 0
                   : -1;
    st.file = fopen(path, "r");
    if (st.file == NULL) {
        snprintf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    line = ini_parse_stream(read_line, &st, config_ini_line, &st);
    fclose(st.file);
    if (line == 0 && config_apply_env(cfg, err, err_size) != 0) {
        config_free(cfg);
        return -1;
    }
    if (line == 0 && config_conflict(cfg, st.reason, sizeof(st.reason)))
        snprintf(err, err_size, "%s: %s", path, st.reason);
    else if (line == 0 &&
             acl_validate(cfg->acl, &line, st.reason, sizeof(st.reason)) == 0)
        return 0;
    else if (line == -2)
        snprintf(err, err_size, "%s: out of memory", path);
    else
        snprintf(err, err_size, "%s:%d: %s", path, line,
                 st.reason[0] ? st.reason : "syntax error");
    config_free(cfg);
    return -1;
}

void config_free(struct config *cfg)
{
    acl_free(cfg->acl);
    cfg->acl = NULL;
}
