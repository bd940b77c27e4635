/*
 * commands.h - runs one parsed request: looks the command up in the
 * command table, validates its arguments, and answers it or hands it to
 * the lock machinery. INFO is assembled here from every subsystem's
 * figures.
 */
#ifndef RLOCKD_COMMANDS_H
#define RLOCKD_COMMANDS_H

#include <stddef.h>

#include <uv.h>

#include "base/config.h"

struct client;
struct lock_call;

void commands_init(uv_loop_t *loop, const struct config *cfg,
                   const char *config_path);
/* Returns the call still in progress, or NULL when the reply is written. */
struct lock_call *commands_execute(struct client *c, size_t argc,
                                   char *const *argv, const size_t *argv_len);

#endif
