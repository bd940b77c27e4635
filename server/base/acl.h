/*
 * acl.h - users and what each may do: the table of [user NAME] sections,
 * checking a user's password, and the one permission check every
 * command passes through.
 *
 * Owns struct acl (the users configured, built by the config loader one
 * ini row at a time and freed with it) and struct acl_user. A user has a
 * SHA-256 of its password (never the password), the commands it may run
 * (a bit per command_id, from rules such as "+@lock -forceunlock"), and
 * the lock names it may touch (a glob list, see glob.h). The `default`
 * user is not in the table: it is who `AUTH <password>` authenticates
 * as, its password is [server] auth_token, and it may do everything, as
 * Redis's default user does. PING, AUTH, HELLO, HEALTH, QUIT and RESET
 * (CMD_BEFORE_AUTH) are allowed to every user.
 *
 * Never touches a connection: callers keep a pointer to the user a
 * connection authenticated as, and after a reload look it up again by
 * name in the new table (acl_find).
 */
#ifndef RLOCKD_ACL_H
#define RLOCKD_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "command.h"

#define ACL_DEFAULT_USER "default"

struct acl_user {
    char *name;
    unsigned char password[DIGEST_SIZE]; /* SHA-256 */
    bool has_password;
    uint64_t commands; /* bit (1 << enum command_id) per command allowed */
    char *names;       /* blank-separated glob patterns; "" allows none */
    /* The CN of a verified TLS client certificate that is this user
     * without AUTH (Redis 7.2's tls-auth-clients-user CN); NULL: none. */
    char *tls_subject;
    int line; /* its first key's line in the file, for errors */
};

struct acl {
    struct acl_user **users;
    size_t count;
};

/* Every command, every name: AUTH <password> with auth_token. */
extern const struct acl_user acl_default_user;

/*
 * Config side. acl_set applies one `key = value` row of section
 * [user NAME] (`user` is NAME), read at `line`; starts_section: the row
 * is the first of a section, so a NAME already in the table is a
 * duplicate. The table is created on the first row. 0, or -EINVAL with
 * the reason in err (no file or line: the caller adds them).
 */
int acl_set(struct acl **acl, const char *user, const char *key,
            const char *value, int line, bool starts_section, char *err,
            size_t err_size);
/* What acl_set cannot see row by row: every user has a password or a
 * tls_subject, and no two users the same tls_subject. 0, or -EINVAL with
 * *line and err naming the first user at fault. */
int acl_validate(const struct acl *acl, int *line, char *err, size_t err_size);
void acl_free(struct acl *acl);
/* Logs which users a reload adds, removes or changes; the number. */
int acl_log_changes(const struct acl *old, const struct acl *fresh);

/* Lookup by name (binary-safe); NULL for none, or for a NULL table. */
const struct acl_user *acl_find(const struct acl *acl, const char *name,
                                size_t len);

/* The user whose tls_subject is the verified certificate's CN cn, or
 * NULL. */
const struct acl_user *acl_find_tls_subject(const struct acl *acl,
                                            const char *cn);

/*
 * AUTH: the user that username (NULL: the default user) and password
 * name, or NULL. An unknown user and a wrong password give the same
 * NULL after the same work (one SHA-256 of the guess, one constant-time
 * comparison), so neither the reply nor its timing tells them apart.
 * The default user needs auth_token to be set.
 */
const struct acl_user *
acl_authenticate(const struct acl *acl, const char *auth_token,
                 const char *username, size_t username_len,
                 const char *password, size_t password_len);

enum acl_verdict {
    ACL_ALLOWED,
    ACL_DENIED_COMMAND, /* the user may not run this command */
    ACL_DENIED_NAME,    /* it may, but not on this lock name */
};

/* Whether user may run command id with these arguments. name is the
 * command's first argument; it is matched only when the command takes a
 * lock name (command_has_lock_name). user may be NULL (not
 * authenticated) for the commands allowed before AUTH. */
enum acl_verdict acl_allows(const struct acl_user *user, enum command_id id,
                            const char *name, size_t name_len);

/* The categories command id is in, without "all" (COMMAND INFO): up to
 * max names, without the '@'; how many. */
size_t acl_command_categories(enum command_id id, const char **names,
                              size_t max);

#endif
