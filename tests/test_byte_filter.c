/* test_byte_filter.c: the byte filter of sweep and prune (src/simd/vec_u8.h,
 * pb_overlap64) against the rule it implements, byte by byte. Compiled
 * once per SIMD level (tests/CMakeLists.txt), since the filter is a header
 * of the engine: each copy checks its own level's implementation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "simd/vec_u8.h"

static uint64_t by_the_rule(uint8_t a[4][64], pb_bounds b)
{
    uint64_t want = 0;
    for (int j = 0; j < 64; j++) {
        int ok = a[0][j] <= b.hi0 && a[1][j] >= b.lo0 && a[2][j] <= b.hi1 && a[3][j] >= b.lo1;
        want |= (uint64_t)ok << j;
    }
    return want;
}

/* Each of the four compares alone (the others always pass), every lane
 * value against every bound: the 256 x 256 cases of one unsigned byte
 * compare, spread over the 64 lanes. */
static void every_byte_against_every_bound(void **state)
{
    (void)state;
    uint8_t a[4][64];
    for (int t = 0; t < 4; t++)
        for (int v = 0; v < 256; v++) {
            for (int j = 0; j < 64; j++)
                for (int k = 0; k < 4; k++)
                    a[k][j] = k == t ? (uint8_t)((v + 37 * j) & 255) : (k % 2 ? 255 : 0);
            for (int bound = 0; bound < 256; bound++) {
                pb_bounds b = {0, 255, 0, 255};
                uint8_t *at[4] = {&b.hi0, &b.lo0, &b.hi1, &b.lo1};
                *at[t] = (uint8_t)bound;
                assert_int_equal(pb_overlap64(a[0], a[1], a[2], a[3], b), by_the_rule(a, b));
            }
        }
}

static void random_bytes_and_bounds(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    uint8_t a[4][64];
    for (int r = 0; r < 100000; r++) {
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 64; j++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                a[k][j] = (uint8_t)(x >> 56);
            }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        pb_bounds b = {(uint8_t)x, (uint8_t)(x >> 8), (uint8_t)(x >> 16), (uint8_t)(x >> 24)};
        assert_int_equal(pb_overlap64(a[0], a[1], a[2], a[3], b), by_the_rule(a, b));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_byte_against_every_bound),
        cmocka_unit_test(random_bytes_and_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
