/*
 * suites.h - every Check suite of the unit-test binary, listed once.
 *
 * Adding a suite is one line here: UNIT_SUITE_LIST declares each
 * constructor and unit_main.c runs them all in this order.
 */
#ifndef RLOCKD_TEST_SUITES_H
#define RLOCKD_TEST_SUITES_H

#include <check.h>

#define UNIT_SUITE_LIST(X)                                                     \
    X(request_suite)                                                           \
    X(reply_suite)                                                             \
    X(command_suite)                                                           \
    X(client_id_suite)                                                         \
    X(config_suite)                                                            \
    X(digest_suite)                                                            \
    X(log_suite)                                                               \
    X(glob_suite)                                                              \
    X(acl_suite)                                                               \
    X(waiter_queue_suite)                                                      \
    X(hashmap_suite)                                                           \
    X(keyslot_suite)                                                           \
    X(histogram_suite)                                                         \
    X(cluster_map_suite)                                                       \
    X(acquire_suite)                                                           \
    X(ride_through_suite)                                                      \
    X(waiters_suite)                                                           \
    X(sessions_suite)                                                          \
    X(call_state_suite)                                                        \
    X(lock_kinds_suite)                                                        \
    X(semaphores_suite)                                                        \
    X(record_keys_suite)                                                       \
    X(watchdog_suite)                                                          \
    X(deadlock_suite)                                                          \
    X(event_ring_suite)                                                        \
    X(slab_suite)

#define UNIT_SUITE_DECLARE(constructor) Suite *constructor(void);
UNIT_SUITE_LIST(UNIT_SUITE_DECLARE)
#undef UNIT_SUITE_DECLARE

#endif
