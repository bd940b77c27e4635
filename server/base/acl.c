/*
 * acl.c - the user table: parsing a [user NAME] section's rows, checking
 * passwords, and the permission check.
 *
 * Command categories are a table here rather than a column of the
 * command table: they are an access-control notion, and the unit tests
 * check that every command but the always-allowed ones is in one of
 * @lock, @admin and @connection (and none in both @lock and @admin), so a
 * new command cannot be left out. CLIENT is in @lock (a lock client
 * declares its heartbeat with it) and in @connection, as in Redis.
 */
#include "base/acl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/glob.h"
#include "base/log.h"

_Static_assert(COMMAND_COUNT < 64, "struct acl_user.commands is 64 bits");

#define COMMAND_BIT(id) (UINT64_C(1) << CMD_##id)
#define ALL_COMMANDS ((UINT64_C(1) << COMMAND_COUNT) - 1)

static const struct acl_category {
    const char *name; /* after the '@' */
    uint64_t commands;
} acl_categories[] = {
    {"all", ALL_COMMANDS},
    {"lock",
     COMMAND_BIT(LOCK) | COMMAND_BIT(TRYLOCK) | COMMAND_BIT(UNLOCK) |
         COMMAND_BIT(ISLOCKED) | COMMAND_BIT(ISHELD) | COMMAND_BIT(HOLDCOUNT) |
         COMMAND_BIT(PTTL) | COMMAND_BIT(OWNERS) | COMMAND_BIT(TOKEN) |
         COMMAND_BIT(CLIENTID) | COMMAND_BIT(CLIENT) | COMMAND_BIT(SUBSCRIBE) |
         COMMAND_BIT(UNSUBSCRIBE) | COMMAND_BIT(PSUBSCRIBE) |
         COMMAND_BIT(PUNSUBSCRIBE) | COMMAND_BIT(SSUBSCRIBE) |
         COMMAND_BIT(SUNSUBSCRIBE) | COMMAND_BIT(SETPERMITS) |
         COMMAND_BIT(ADDPERMITS) | COMMAND_BIT(PERMITS) | COMMAND_BIT(ACQUIRE) |
         COMMAND_BIT(RELEASE) | COMMAND_BIT(LATCHSET) | COMMAND_BIT(COUNTDOWN) |
         COMMAND_BIT(LATCHCOUNT) | COMMAND_BIT(AWAIT) | COMMAND_BIT(MLOCK) |
         COMMAND_BIT(MUNLOCK) | COMMAND_BIT(LOCKS)},
    {"admin", COMMAND_BIT(FORCEUNLOCK) | COMMAND_BIT(INFO)},
    {"connection", COMMAND_BIT(CLIENT) | COMMAND_BIT(SELECT) |
                       COMMAND_BIT(ECHO) | COMMAND_BIT(COMMAND) |
                       COMMAND_BIT(TIME)},
};

const struct acl_user acl_default_user = {
    .name = ACL_DEFAULT_USER,
    .commands = ALL_COMMANDS,
    .names = "*",
};

/* ---- lookup --------------------------------------------------------- */

const struct acl_user *acl_find(const struct acl *acl, const char *name,
                                size_t len)
{
    if (acl == NULL)
        return NULL;
    for (size_t i = 0; i < acl->count; i++) {
        const struct acl_user *u = acl->users[i];

        if (strlen(u->name) == len && memcmp(u->name, name, len) == 0)
            return u;
    }
    return NULL;
}

const struct acl_user *acl_find_tls_subject(const struct acl *acl,
                                            const char *cn)
{
    for (size_t i = 0; acl != NULL && i < acl->count; i++) {
        const struct acl_user *u = acl->users[i];

        if (u->tls_subject != NULL && strcmp(u->tls_subject, cn) == 0)
            return u;
    }
    return NULL;
}

/* ---- parsing a section's rows ---------------------------------------- */

static int acl_error(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int acl_error(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* Printable ASCII without blanks, so that logs and errors can quote it. */
static bool user_name_valid(const char *name)
{
    size_t len = strlen(name);

    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (name[i] <= ' ' || name[i] > '~')
            return false;
    }
    return true;
}

static struct acl_user *user_add(struct acl **acl, const char *name, int line)
{
    struct acl_user **users, *u;

    if (*acl == NULL && (*acl = calloc(1, sizeof(**acl))) == NULL)
        return NULL;
    users = realloc((*acl)->users, ((*acl)->count + 1) * sizeof(*users));
    if (users == NULL)
        return NULL;
    (*acl)->users = users;
    u = calloc(1, sizeof(*u));
    if (u == NULL)
        return NULL;
    u->name = strdup(name);
    u->names = strdup("");
    if (u->name == NULL || u->names == NULL) {
        free(u->name);
        free(u->names);
        free(u);
        return NULL;
    }
    u->line = line;
    users[(*acl)->count++] = u;
    return u;
}

/* The commands a rule's word (after its sign) stands for; 0: none. */
static uint64_t rule_commands(const char *word, size_t len)
{
    const struct command *cmd;

    if (len > 0 && word[0] == '@') {
        for (size_t i = 0; i < sizeof(acl_categories) / sizeof(*acl_categories);
             i++) {
            const char *name = acl_categories[i].name;

            if (strlen(name) == len - 1 && memcmp(name, word + 1, len - 1) == 0)
                return acl_categories[i].commands;
        }
        return 0;
    }
    cmd = command_lookup(word, len);
    return cmd != NULL ? UINT64_C(1) << cmd->id : 0;
}

/* Applies "+x -y ..." left to right, as Redis ACL rules are. */
static int apply_command_rules(struct acl_user *u, const char *value, char *err,
                               size_t err_size)
{
    const char *rule;
    size_t pos = 0, len;

    while (glob_list_next(value, &pos, &rule, &len)) {
        const struct command *cmd = command_lookup(rule + 1, len - 1);
        uint64_t bits;

        if (rule[0] != '+' && rule[0] != '-')
            return acl_error(err, err_size,
                             "commands: '%.*s' must start with + or - (as in "
                             "+@lock -forceunlock)",
                             (int)len, rule);
        if (cmd != NULL && (cmd->flags & CMD_BEFORE_AUTH))
            return acl_error(err, err_size,
                             "commands: '%.*s' is always allowed and takes no "
                             "rule",
                             (int)len - 1, rule + 1);
        bits = rule_commands(rule + 1, len - 1);
        if (bits == 0)
            return acl_error(err, err_size,
                             "commands: unknown command or category '%.*s' "
                             "(categories: @all, @lock, @admin, @connection)",
                             (int)len - 1, rule + 1);
        if (rule[0] == '+')
            u->commands |= bits;
        else
            u->commands &= ~bits;
    }
    return 0;
}

/* Adds the value's patterns to the user's list (a long list may go on
 * over several `names` lines). */
static int add_names(struct acl_user *u, const char *value, char *err,
                     size_t err_size)
{
    const char *pattern;
    size_t len, old = strlen(u->names), add = strlen(value);
    char *names;

    if (glob_list_validate(value, &pattern, &len) != 0)
        return acl_error(err, err_size,
                         "names: bad pattern '%.*s' (an unterminated [ or "
                         "a trailing \\)",
                         (int)len, pattern);
    names = realloc(u->names, old + 1 + add + 1);
    if (names == NULL)
        return acl_error(err, err_size, "out of memory");
    names[old] = ' ';
    memcpy(names + old + 1, value, add + 1);
    u->names = names;
    return 0;
}

static int set_password(struct acl_user *u, const char *value, char *err,
                        size_t err_size)
{
    if (u->has_password)
        return acl_error(err, err_size, "password_sha256 given twice");
    if (digest_parse_hex(value, u->password) != 0)
        return acl_error(err, err_size,
                         "password_sha256: not 64 hex digits (make one with: "
                         "printf %%s 'PASSWORD' | sha256sum)");
    u->has_password = true;
    return 0;
}

static int set_tls_subject(struct acl_user *u, const char *value, char *err,
                           size_t err_size)
{
    if (u->tls_subject != NULL)
        return acl_error(err, err_size, "tls_subject given twice");
    if (value[0] == '\0')
        return acl_error(err, err_size, "tls_subject: empty");
    u->tls_subject = strdup(value);
    return u->tls_subject != NULL ? 0
                                  : acl_error(err, err_size, "out of memory");
}

int acl_set(struct acl **acl, const char *user, const char *key,
            const char *value, int line, bool starts_section, char *err,
            size_t err_size)
{
    struct acl_user *u = (struct acl_user *)acl_find(*acl, user, strlen(user));

    if (strcmp(user, ACL_DEFAULT_USER) == 0)
        return acl_error(err, err_size,
                         "[user default] is [server] auth_token and cannot "
                         "be configured as a section");
    if (!user_name_valid(user))
        return acl_error(err, err_size,
                         "[user %s]: a user name is printable characters "
                         "without blanks",
                         user);
    if (u != NULL && starts_section)
        return acl_error(err, err_size,
                         "duplicate section [user %s] (first at line %d)", user,
                         u->line);
    if (u == NULL && (u = user_add(acl, user, line)) == NULL)
        return acl_error(err, err_size, "out of memory");
    if (strcmp(key, "password_sha256") == 0)
        return set_password(u, value, err, err_size);
    if (strcmp(key, "commands") == 0)
        return apply_command_rules(u, value, err, err_size);
    if (strcmp(key, "names") == 0)
        return add_names(u, value, err, err_size);
    if (strcmp(key, "tls_subject") == 0)
        return set_tls_subject(u, value, err, err_size);
    return acl_error(err, err_size, "unknown key '%s' in section [user %s]",
                     key, user);
}

int acl_validate(const struct acl *acl, int *line, char *err, size_t err_size)
{
    for (size_t i = 0; acl != NULL && i < acl->count; i++) {
        const struct acl_user *u = acl->users[i], *same;

        *line = u->line;
        if (!u->has_password && u->tls_subject == NULL)
            return acl_error(err, err_size,
                             "[user %s] has no password_sha256 or tls_subject",
                             u->name);
        same = u->tls_subject ? acl_find_tls_subject(acl, u->tls_subject) : u;
        if (same != u)
            return acl_error(err, err_size,
                             "[user %s] has the tls_subject of [user %s]",
                             u->name, same->name);
    }
    return 0;
}

void acl_free(struct acl *acl)
{
    if (acl == NULL)
        return;
    for (size_t i = 0; i < acl->count; i++) {
        free(acl->users[i]->name);
        free(acl->users[i]->names);
        free(acl->users[i]->tls_subject);
        free(acl->users[i]);
    }
    free(acl->users);
    free(acl);
}

static bool user_same(const struct acl_user *a, const struct acl_user *b)
{
    return memcmp(a->password, b->password, DIGEST_SIZE) == 0 &&
           a->has_password == b->has_password && a->commands == b->commands &&
           strcmp(a->names, b->names) == 0 &&
           strcmp(a->tls_subject ? a->tls_subject : "",
                  b->tls_subject ? b->tls_subject : "") == 0;
}

static size_t acl_count(const struct acl *acl)
{
    return acl != NULL ? acl->count : 0;
}

int acl_log_changes(const struct acl *old, const struct acl *fresh)
{
    int changed = 0;

    for (size_t i = 0; i < acl_count(old); i++) {
        const char *name = old->users[i]->name;

        if (acl_find(fresh, name, strlen(name)) == NULL) {
            log_info("reload: [user %s] removed", name);
            changed++;
        }
    }
    for (size_t i = 0; i < acl_count(fresh); i++) {
        const struct acl_user *u = fresh->users[i];
        const struct acl_user *was = acl_find(old, u->name, strlen(u->name));

        if (was != NULL && user_same(was, u))
            continue;
        log_info("reload: [user %s] %s", u->name,
                 was == NULL ? "added" : "changed");
        changed++;
    }
    return changed;
}

/* ---- at run time ----------------------------------------------------- */

const struct acl_user *
acl_authenticate(const struct acl *acl, const char *auth_token,
                 const char *username, size_t username_len,
                 const char *password, size_t password_len)
{
    static const unsigned char nobody[DIGEST_SIZE];
    unsigned char guess[DIGEST_SIZE], token[DIGEST_SIZE];
    const struct acl_user *user;
    const unsigned char *want = nobody;

    digest_sha256(password, password_len, guess);
    if (username == NULL ||
        (username_len == strlen(ACL_DEFAULT_USER) &&
         memcmp(username, ACL_DEFAULT_USER, username_len) == 0)) {
        user = auth_token[0] != '\0' ? &acl_default_user : NULL;
        digest_sha256(auth_token, strlen(auth_token), token);
        want = token;
    } else {
        user = acl_find(acl, username, username_len);
        if (user != NULL && user->has_password) /* else: tls_subject only */
            want = user->password;
        else
            user = NULL;
    }
    return digest_equal(guess, want) && user != NULL ? user : NULL;
}

enum acl_verdict acl_allows(const struct acl_user *user, enum command_id id,
                            const char *name, size_t name_len)
{
    const struct command *cmd = command_by_id(id);

    if (cmd->flags & CMD_BEFORE_AUTH)
        return ACL_ALLOWED;
    if (!(user->commands & (UINT64_C(1) << id)))
        return ACL_DENIED_COMMAND;
    if (command_has_lock_name(cmd) &&
        !glob_list_match(user->names, name, name_len))
        return ACL_DENIED_NAME;
    return ACL_ALLOWED;
}

size_t acl_command_categories(enum command_id id, const char **names,
                              size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < sizeof(acl_categories) / sizeof(*acl_categories);
         i++)
        if ((acl_categories[i].commands & (UINT64_C(1) << id)) &&
            strcmp(acl_categories[i].name, "all") != 0 && n < max)
            names[n++] = acl_categories[i].name;
    return n;
}
