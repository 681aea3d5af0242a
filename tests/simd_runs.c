/* simd_runs: exit 0 when the SIMD level PROX_SIMD names runs here, 77
 * (CTest's "skipped") when this CPU or build lacks it. The suite's runs
 * at each level (tests/CMakeLists.txt) start with it. */
#include <stdio.h>

#include "prox/core.h"

int main(void)
{
    if (prox_simd_check() == PROX_OK)
        return 0;
    fprintf(stderr, "skipped: %s\n", prox_last_error());
    return 77;
}
