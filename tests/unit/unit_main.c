/*
 * unit_main.c - the unit-test binary: runs every suite in suites.h and
 * exits non-zero when any test fails.
 *
 * Check's defaults apply: each test runs in a forked child (CK_FORK=no
 * turns that off, e.g. under valgrind or gdb).
 */
#include <check.h>
#include <stdlib.h>

#include "suites.h"

static Suite *(*const suite_constructors[])(void) = {
#define UNIT_SUITE_ENTRY(constructor) constructor,
    UNIT_SUITE_LIST(UNIT_SUITE_ENTRY)
#undef UNIT_SUITE_ENTRY
};

int main(void)
{
    SRunner *runner = srunner_create(NULL);
    size_t count = sizeof suite_constructors / sizeof *suite_constructors;
    for (size_t i = 0; i < count; i++)
        srunner_add_suite(runner, suite_constructors[i]());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
