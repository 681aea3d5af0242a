/* test_levels: every grid configuration, every sink, on every adversarial
 * input class of the suite, against the oracle: small inputs, so that the
 * whole runs in seconds, at each SIMD level (PROX_SIMD, tests/at_level.sh)
 * and under an emulator for the AArch64 levels (tools/cross-aarch64.sh).
 * The kernels of each level (simd/vec.h, the AVX-512 ones) are what it
 * checks; the other unit tests go deeper into each structure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void pairs_and_lists_match(const test_case *tc, const expectation *e,
                                  const algo_config *config)
{
    char context[256];
    test_case_describe(tc, context, sizeof context);
    size_t used = strlen(context);
    snprintf(context + used, sizeof context - used, " algo=%s simd=%s", config->name,
             prox_simd_level());
    prox_points points = test_case_points(tc);
    prox_grid_desc desc = config_desc(config, tc->radius, tc->period, 1);
    subject s = {context, &tc->points, &tc->points, tc->radius, tc->period};

    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    CHECK_STATUS(prox_pairs(&points, &desc, config->algo, prox_sink_buffer(&buffer), NULL),
                 PROX_OK, context);
    expect_same_pairs(&s, &e->pairs, buffer.pairs, buffer.count);

    prox_stats stats;
    CHECK_STATUS(prox_pairs(&points, &desc, config->algo, prox_sink_count(), &stats), PROX_OK,
                 context);
    CHECK(stats.pairs == e->pairs.count, context, "count %lld, expected %lld",
          (long long)stats.pairs, (long long)e->pairs.count);

    /* unsorted: the same pairs once sorted */
    CHECK_STATUS(prox_pairs(&points, &desc, config->algo,
                            prox_sink_unsorted(prox_sink_buffer(&buffer)), NULL),
                 PROX_OK, context);
    qsort(buffer.pairs, (size_t)buffer.count, sizeof *buffer.pairs, compare_pairs);
    expect_same_pairs(&s, &e->pairs, buffer.pairs, buffer.count);
    prox_pair_buffer_free(&buffer);

    prox_lists lists;
    prox_lists_init(&lists, NULL);
    CHECK_STATUS(prox_pairs(&points, &desc, config->algo, prox_sink_lists(&lists), NULL),
                 PROX_OK, context);
    expect_same_lists(&s, &e->lists, &lists);
    prox_lists_free(&lists);
}

static void every_level_matches_the_oracle(void **state)
{
    (void)state;
    for (int cls = 0; cls < INPUT_CLASS_COUNT; cls++)
        for (int dim = 2; dim <= 3; dim++)
            for (int p = 0; p < PERIODICITY_COUNT; p++) {
                test_case tc;
                test_case_make(&tc, (input_class)cls, dim, cls % 2 ? PROX_F32 : PROX_F64,
                               (periodicity)p);
                if (tc.valid) {
                    expectation e;
                    expectation_compute(&e, &tc);
                    for (int c = 0; c < GRID_CONFIG_COUNT; c++)
                        pairs_and_lists_match(&tc, &e, GRID_CONFIGS[c]);
                    expectation_free(&e);
                }
                test_case_free(&tc);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_level_matches_the_oracle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
