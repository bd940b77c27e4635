/*
 * commands.h - runs one parsed request: looks the command up in the
 * command table, checks AUTH and its arguments, and calls the handler
 * its row names. Lock commands become lock requests for the engine; the
 * others (AUTH, CLIENTID, PING, INFO, QUIT) are answered here.
 */
#ifndef RLOCKD_COMMANDS_H
#define RLOCKD_COMMANDS_H

#include <stddef.h>

#include "base/config.h"
#include "front/client.h"

void commands_init(const struct config *cfg);
void commands_free(void);
/* The client's executor (client_execute_fn). */
enum client_run commands_execute(struct client *c, size_t argc,
                                 char *const *argv, const size_t *argv_len);

#endif
