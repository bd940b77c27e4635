/*
 * client_main.c - the librlock test binary: runs every suite in
 * client_suites.h against a real rlockd (RLOCKD_BIN, default build/rlockd)
 * and redis-server, and exits non-zero when any test fails.
 *
 * Check's defaults apply: each test runs in a forked child (CK_FORK=no
 * turns that off, e.g. under valgrind).
 */
#include <check.h>
#include <stdlib.h>

#include "client_suites.h"
#include "harness.h"

static Suite *(*const suite_constructors[])(void) = {
#define CLIENT_SUITE_ENTRY(constructor) constructor,
    CLIENT_SUITE_LIST(CLIENT_SUITE_ENTRY)
#undef CLIENT_SUITE_ENTRY
};

rlock_client *connect_or_fail(const char *addr, const rlock_options *opts)
{
    int err = 1;
    rlock_client *c = rlock_connect(addr, opts, &err);

    ck_assert_msg(c != NULL, "rlock_connect(%s): %s", addr,
                  rlock_strerror(err));
    ck_assert_int_eq(err, RLOCK_OK);
    return c;
}

int main(void)
{
    SRunner *runner = srunner_create(NULL);
    size_t count = sizeof suite_constructors / sizeof *suite_constructors;

    harness_init();
    for (size_t i = 0; i < count; i++)
        srunner_add_suite(runner, suite_constructors[i]());
    srunner_run_all(runner, CK_ENV); /* CK_VERBOSITY, default normal */
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
