/* test_stream_huge.c: more than 2^31 pairs through prox_pairs_stream within
 * a fixed memory: 70,000 identical points (every pair within any radius:
 * 2,449,965,000 pairs, about 20 GB as a buffer), delivered in traversal
 * order in blocks of 65,536 pairs. Each block is checked as it comes (i < j,
 * indices in range) and the pairs are checked as a whole by their number and
 * by the sums of their i and of their j, whose closed forms are known: the
 * pairs of n points are each (i, j), i < j, once, exactly when
 *   count = n(n-1)/2,  sum i = sum_i i (n-1-i),  sum j = sum_j j * j.
 * Sanitizer builds (several times slower; tests/CMakeLists.txt defines
 * PROX_TEST_SANITIZED) run 20,000 points: the same path, under 2^31 pairs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "prox/prox.h"

#if defined(PROX_TEST_SANITIZED) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#endif
#ifdef SANITIZED
#define POINTS 20000
#else
#define POINTS 70000
#endif

typedef struct tally {
    int64_t pairs, blocks, largest_block;
    uint64_t sum_i, sum_j; /* about n^3 / 3: far within 64 bits */
    bool bad;
} tally;

static int on_block(const prox_pair *pairs, int64_t count, void *user)
{
    tally *t = user;
    uint64_t si = 0, sj = 0;
    for (int64_t k = 0; k < count; k++) {
        t->bad |= pairs[k].i >= pairs[k].j || pairs[k].j >= POINTS;
        si += pairs[k].i;
        sj += pairs[k].j;
    }
    t->sum_i += si;
    t->sum_j += sj;
    t->pairs += count;
    t->blocks++;
    t->largest_block = count > t->largest_block ? count : t->largest_block;
    return 0;
}

static void identical_points_stream_every_pair(void **state)
{
    (void)state;
    double *xyz = calloc(3 * (size_t)POINTS, sizeof *xyz);
    assert_non_null(xyz);
    prox_points p = prox_points_f64(xyz, POINTS, 3);
    prox_grid_desc d = prox_default_grid_desc();
    d.radius = 1.0;
    tally t = {0};
    prox_stats stats;
    assert_int_equal(prox_pairs_stream(&p, &d, PROX_ALGO_GRID, false, 0, on_block, &t, &stats),
                     PROX_OK);
    int64_t n = POINTS;
    uint64_t want_i = 0, want_j = 0;
    for (int64_t i = 0; i < n; i++) {
        want_i += (uint64_t)i * (uint64_t)(n - 1 - i);
        want_j += (uint64_t)i * (uint64_t)i;
    }
    assert_false(t.bad);
    assert_int_equal(t.pairs, n * (n - 1) / 2);
    assert_int_equal(stats.pairs, n * (n - 1) / 2);
    assert_true(t.sum_i == want_i);
    assert_true(t.sum_j == want_j);
    assert_true(t.largest_block <= 65536);
#ifndef SANITIZED
    assert_true(t.pairs > INT32_MAX);
#endif
    print_message("%lld pairs in %lld blocks\n", (long long)t.pairs, (long long)t.blocks);
    free(xyz);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_points_stream_every_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
