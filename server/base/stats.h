/*
 * stats.h - counters, each listed once: the X-macro makes the struct
 * field and its INFO line.
 */
#ifndef RLOCKD_STATS_H
#define RLOCKD_STATS_H

#include <stdint.h>

#include "buffer.h"

#define STATS_COUNTERS(X)                                                      \
    X(total_connections_received)                                              \
    X(rejected_connections)                                                    \
    X(total_commands_processed)                                                \
    X(protocol_errors)                                                         \
    X(locks_acquired)                                                          \
    X(locks_released)                                                          \
    X(locks_force_released)                                                    \
    X(locks_released_on_disconnect)                                            \
    X(orphan_acquires_undone)                                                  \
    X(locks_lost)                                                              \
    X(lock_attempts)                                                           \
    X(wait_timeouts)                                                           \
    X(unlock_messages)                                                         \
    X(watchdog_renewals)                                                       \
    X(watchdog_batches)                                                        \
    X(unavailable_replies)                                                     \
    X(auth_failures)                                                           \
    X(config_reloads)                                                          \
    X(config_reload_failures)

struct stats {
#define STATS_FIELD(name) uint64_t name;
    STATS_COUNTERS(STATS_FIELD)
#undef STATS_FIELD
};

extern struct stats stats;

/* Appends "name:value\r\n" for every counter. */
int stats_append_counters(struct buffer *out);

#endif
