/*
 * replay.c - runs a fuzz target once over each input file named on the
 * command line, without libFuzzer.
 *
 * make test builds every target with the normal compiler and warnings in
 * place of libFuzzer and replays its seed inputs: a target that no longer
 * compiles (a new enum value its switch lacks), or a seed that breaks one
 * of its properties, fails make test, not only make fuzz, which needs
 * clang and is not run by CI. A broken property aborts (fuzz_check.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_check.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        static uint8_t data[1 << 16];
        size_t n;

        if (f == NULL) {
            perror(argv[i]);
            return 1;
        }
        n = fread(data, 1, sizeof(data), f);
        CHECK(!ferror(f) && feof(f)); /* a seed is smaller than data */
        fclose(f);
        LLVMFuzzerTestOneInput(data, n);
    }
    printf("%s: %d inputs replayed\n", argv[0], argc - 1);
    return 0;
}
