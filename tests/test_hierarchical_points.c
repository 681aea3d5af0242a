/* test_hierarchical_points.c: PROX_ALGO_HIERARCHICAL (Pouchol et al. 2009, Listing 3:
 * neighbour search with the hierarchical hash) against the oracle on every
 * input class, dimension and scalar with open axes, through every sink of
 * prox_pairs and prox_query; a tiny initial table (growth, colliding keys);
 * periodic axes rejected with a clear error. */
#include "check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const algo_config CONFIG_HIERARCHICAL = {"hierarchical", PROX_ALGO_HIERARCHICAL,
                                                PROX_KEYS_MORTON, 1, 0, PROX_COORDS_AUTO, PROX_ROWS_AUTO};
/* A table of 2 slots that grows with every few cells. */
static const algo_config CONFIG_HIERARCHICAL_TINY = {"hierarchical table 2",
                                                     PROX_ALGO_HIERARCHICAL, PROX_KEYS_MORTON,
                                                     1, 2, PROX_COORDS_AUTO, PROX_ROWS_AUTO};

/* Every input class, 2D and 3D, f64 and f32, open axes. */
static void check_open_classes(const algo_config *config)
{
    static const prox_scalar scalars[2] = {PROX_F64, PROX_F32};
    for (int cls = 0; cls < INPUT_CLASS_COUNT; cls++)
        for (int dim = 2; dim <= 3; dim++)
            for (int s = 0; s < 2; s++) {
                test_case tc;
                test_case_make(&tc, (input_class)cls, dim, scalars[s], PERIODIC_NONE);
                expectation e;
                expectation_compute(&e, &tc);
                check_case(&tc, &e, config, 1);
                check_case(&tc, &e, config, 2); /* threads are ignored: same result */
                expectation_free(&e);
                test_case_free(&tc);
            }
}

static void hierarchical_matches_oracle_on_every_open_class(void **state)
{
    (void)state;
    check_open_classes(&CONFIG_HIERARCHICAL);
}

static void hierarchical_tiny_table_matches_oracle(void **state)
{
    (void)state;
    check_open_classes(&CONFIG_HIERARCHICAL_TINY);
}

static void hierarchical_large_uniform_matches_oracle(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        test_case tc;
        test_case_make_large_uniform(&tc, dim, 20000, 2000, 64.0, dim == 2 ? 0.3 : 1.2,
                                     PERIODIC_NONE);
        expectation e;
        expectation_compute(&e, &tc);
        check_case(&tc, &e, &CONFIG_HIERARCHICAL, 1);
        expectation_free(&e);
        test_case_free(&tc);
    }
}

static void hierarchical_rejects_periodic_axes(void **state)
{
    (void)state;
    double xyz[6] = {0, 0, 0, 1, 1, 1};
    prox_points p = prox_points_f64(xyz, 2, 3);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 0.5;
    desc.period[0] = 4.0;
    prox_status st = prox_pairs(&p, &desc, PROX_ALGO_HIERARCHICAL, prox_sink_count(), NULL);
    CHECK_STATUS(st, PROX_ERR_INVALID, "periodic axis");
    CHECK(strstr(prox_last_error(), "periodic") != NULL, "periodic axis",
          "message '%s' does not say why", prox_last_error());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hierarchical_matches_oracle_on_every_open_class),
        cmocka_unit_test(hierarchical_tiny_table_matches_oracle),
        cmocka_unit_test(hierarchical_large_uniform_matches_oracle),
        cmocka_unit_test(hierarchical_rejects_periodic_axes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
