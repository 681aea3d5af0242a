/* test_brute.c: PROX_ALGO_BRUTE against the suite's own oracle, on every
 * input class, dimension, scalar and periodicity, through every sink. */
#include "class_tests.h"
#include "closed_forms.h"

static const algo_config *const BRUTE_ONLY[1] = {&CONFIG_BRUTE};

DEFINE_CLASS_TESTS(brute, BRUTE_ONLY, 1)

static void brute_matches_closed_form_counts(void **state)
{
    (void)state;
    check_closed_forms(&CONFIG_BRUTE);
}

/* r = 1e6 on unit data: the buffer is exactly (0,1), (0,2), ..., (N-2,N-1). */
static void brute_huge_radius_enumerates_every_pair_in_order(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_HUGE_RADIUS, 3, PROX_F64, PERIODIC_NONE);
    prox_points view = test_case_points(&tc);
    prox_grid_desc desc = config_desc(&CONFIG_BRUTE, tc.radius, NULL, 2);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    const char *context = "brute, 300 unit points, r = 1e6";
    CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_BRUTE, prox_sink_buffer(&buffer), NULL),
                 PROX_OK, context);
    int64_t n = tc.points.count, at = 0;
    CHECK(buffer.count == n * (n - 1) / 2, context, "%lld pairs", (long long)buffer.count);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++, at++)
            CHECK(buffer.pairs[at].i == i && buffer.pairs[at].j == j, context,
                  "pair %lld is (%u, %u), expected (%lld, %lld)", (long long)at,
                  (unsigned)buffer.pairs[at].i, (unsigned)buffer.pairs[at].j, (long long)i,
                  (long long)j);
    prox_pair_buffer_free(&buffer);
    test_case_free(&tc);
}

static void brute_results_do_not_depend_on_thread_count(void **state)
{
    (void)state;
    check_thread_independence_on_samples(&CONFIG_BRUTE);
}

/* 5000 points and 4500 queries: enough for the brute force to split its
 * work into chunks across threads. */
static void brute_parallel_chunks_match_oracle_and_each_other(void **state)
{
    (void)state;
    test_case tc;
    test_case_make_large_uniform(&tc, 3, 5000, 4500, 16.0, 1.0, PERIODIC_X_ONLY);
    expectation e;
    expectation_compute(&e, &tc);
    check_case(&tc, &e, &CONFIG_BRUTE, 2);
    check_thread_independence(&tc, &CONFIG_BRUTE);
    expectation_free(&e);
    test_case_free(&tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CLASS_TEST_ENTRIES(brute),
        cmocka_unit_test(brute_matches_closed_form_counts),
        cmocka_unit_test(brute_huge_radius_enumerates_every_pair_in_order),
        cmocka_unit_test(brute_results_do_not_depend_on_thread_count),
        cmocka_unit_test(brute_parallel_chunks_match_oracle_and_each_other),
    };
    return cmocka_run_group_tests_name("brute", tests, NULL, NULL);
}
