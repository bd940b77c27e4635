/*
 * fuzz_check.h - the fuzz targets' one assertion: a property of the code
 * under test that the input broke ends in abort(), which libFuzzer
 * reports with the input that broke it.
 */
#ifndef RLOCKD_FUZZ_CHECK_H
#define RLOCKD_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Each target's entry: libFuzzer's (make fuzz), or replay.c's (make test). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__,          \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

#endif
