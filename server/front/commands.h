/*
 * commands.h - runs one parsed request: looks the command up in the
 * command table, checks AUTH and its arguments, and calls the handler
 * its row names. Lock commands become lock requests for the engine; the
 * others (AUTH, CLIENTID, PING, INFO, QUIT) are answered here, the
 * connection commands in connection.c, pub/sub in pubsub.c.
 */
#ifndef RLOCKD_COMMANDS_H
#define RLOCKD_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"
#include "command.h"
#include "front/client.h"

/* A command's handler, named by its COMMAND_LIST row (command_<handler>):
 * 0, or -ENOMEM when the reply could not be written. */
typedef int command_handler(struct client *c, const struct command *cmd,
                            const struct command_args *a);

void commands_init(const struct config *cfg);
void commands_free(void);
/* Who the connection runs commands as: the user it authenticated as;
 * while it has not, the default user when no AUTH is needed, else NULL
 * (HELLO's check, and CLIENT LIST's permission). */
const struct acl_user *commands_user(const struct client *c);
/*
 * Checks credentials (AUTH, HELLO's AUTH option): true when the
 * connection now runs as that user; otherwise the refusal is written to
 * out (*err its result), counted, and the connection penalized.
 */
bool commands_login(struct client *c, struct buffer *out, const char *user,
                    size_t user_len, const char *password, size_t password_len,
                    int *err);
/* After a reload changed the users or [lock] allowed_names (and
 * client_users_reloaded repointed the connections): each acquire in
 * flight that its user may no longer make is refused -NOPERM, and what
 * Redis grants it later is given back. */
void commands_reloaded(void);
/* The client's executor (client_execute_fn). */
enum client_run commands_execute(struct client *c, size_t argc,
                                 char *const *argv, const size_t *argv_len);

#endif
