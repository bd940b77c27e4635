/*
 * list.h - `rlock list [PATTERN]`: rlockd's LOCKS as a table or JSON.
 */
#ifndef RLOCK_CLI_LIST_H
#define RLOCK_CLI_LIST_H

#include "options.h"
#include "rlock.h"

/* Prints every lock rlockd holds or waits on whose name matches o->name
 * (NULL: all); the exit status. */
int list_locks(rlock_client *c, const struct options *o);

#endif
