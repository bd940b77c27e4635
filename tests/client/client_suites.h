/*
 * client_suites.h - every Check suite of the librlock test binary, listed
 * once, and what the suites share.
 */
#ifndef RLOCK_TEST_CLIENT_SUITES_H
#define RLOCK_TEST_CLIENT_SUITES_H

#include <check.h>

#include "rlock.h"

#define CLIENT_SUITE_LIST(X)                                                   \
    X(locks_suite)                                                             \
    X(kinds_suite)                                                             \
    X(failures_suite)                                                          \
    X(semaphores_suite)

#define CLIENT_SUITE_DECLARE(constructor) Suite *constructor(void);
CLIENT_SUITE_LIST(CLIENT_SUITE_DECLARE)
#undef CLIENT_SUITE_DECLARE

/* Seconds a test may take in fork mode before Check kills it. */
#define CLIENT_TEST_TIMEOUT 30

/* rlock_connect() that fails the test if it fails. */
rlock_client *connect_or_fail(const char *addr, const rlock_options *opts);

#endif
