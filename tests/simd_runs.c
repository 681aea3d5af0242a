/* simd_runs: exit 0 when the SIMD level PROX_SIMD names runs here, 77
 * (CTest's "skipped") when this CPU or build lacks it. With --default, it
 * prints the level prox runs when PROX_SIMD is unset. The suite's runs at
 * each level (tests/at_level.sh) start with it. */
#include <stdio.h>
#include <string.h>

#include "prox/core.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--default") == 0) {
        puts(prox_simd_level());
        return 0;
    }
    if (prox_simd_check() == PROX_OK)
        return 0;
    fprintf(stderr, "skipped: %s\n", prox_last_error());
    return 77;
}
