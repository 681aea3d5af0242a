/* test_grid_sweep.c: self pairs point by point (src/grid_sweep.c) against
 * brute force, on inputs the class tests' small clouds do not make: about
 * one point a cell over thousands of cells (the sweep's condition), with a
 * crowded cluster whose candidates overflow a vector, a lattice with pairs
 * at exactly the radius on cell faces, and pairs a hair either side of the
 * radius, which the fixed point leaves to the double recheck. Every sink,
 * one and several threads, 2D and 3D. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"
#include "points/grid_private.h"
#include "inputs.h"

#define POINTS 12000

static const algo_config CONFIG_LINEAR_FIXED = {
    "grid-linear-fixed", PROX_ALGO_GRID, PROX_KEYS_LINEAR, 1, 0, PROX_COORDS_FIXED,
    PROX_ROWS_AUTO};

/* Uniform points at `per_cell` a cell of the radius (r = 1), then: four
 * clusters of 40 in boxes of r/2 at different phases to the cells (some
 * straddle a face: their points' candidates, all within the radius,
 * spread over several ranges), a lattice block of spacing r, and pairs
 * at r (1 +- 2^-40) from each other. */
static void sparse_case(test_case *tc, int dim, double per_cell, uint64_t seed)
{
    double box = pow((double)POINTS / per_cell, 1.0 / dim);
    test_case_make_large_uniform(tc, dim, POINTS, 200, box, 1.0, PERIODIC_NONE);
    rng r = rng_seeded(seed);
    int64_t i = 0;
    for (; i < 160; i++) /* the clusters */
        for (int k = 0; k < dim; k++)
            cloud_point(&tc->points, i)[k] = 5.0 + 5.25 * (double)(i / 40) + 0.5 * rng_uniform(&r);
    for (int64_t t = 0; t < 64; t++, i++) /* the lattice: 8 x 8 on z = 20 */
        for (int k = 0; k < dim; k++)
            cloud_point(&tc->points, i)[k] = k == 0 ? 20.0 + (double)(t % 8)
                                           : k == 1 ? 20.0 + (double)(t / 8)
                                                    : 20.0;
    for (int64_t t = 0; t < 60; t++, i += 2) { /* pairs near the radius, along random axes */
        double *a = cloud_point(&tc->points, i), *b = cloud_point(&tc->points, i + 1);
        double gap = 1.0 + (double)(t % 3 - 1) * 0x1.0p-40;
        int axis = (int)rng_below(&r, dim);
        for (int k = 0; k < dim; k++)
            b[k] = a[k] + (k == axis ? gap : 0.0);
    }
}

static prox_grid *fixed_grid(const test_case *tc, int threads, const char *context)
{
    prox_grid_desc desc = config_desc(&CONFIG_LINEAR_FIXED, tc->radius, tc->period, threads);
    prox_grid *g = NULL;
    CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, context);
    prox_points view = test_case_points(tc);
    CHECK_STATUS(prox_grid_build(g, &view), PROX_OK, context);
    return g;
}

/* The half stencil's sinks of grid g hold brute force's pairs: the count,
 * the unsorted buffer over several chunks (each writing its own window of
 * the caller's buffer), and lists when they come from the pairs. */
static void expect_half_stencil_sinks(prox_grid *g, const test_case *tc, const expectation *e,
                                      const char *context)
{
    subject who = {context, &tc->points, &tc->points, tc->radius, tc->period};
    prox_stats stats;
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_count(), &stats), PROX_OK, context);
    CHECK(stats.pairs == e->pairs.count, context, "count: %lld pairs, brute force %lld",
          (long long)stats.pairs, (long long)e->pairs.count);
    prox_pair_buffer got;
    prox_pair_buffer_init(&got, NULL);
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_unsorted(prox_sink_buffer(&got)), NULL), PROX_OK,
                 context);
    qsort(got.pairs, (size_t)got.count, sizeof *got.pairs, compare_pairs);
    expect_same_pairs(&who, &e->pairs, got.pairs, got.count);
    prox_pair_buffer_free(&got);
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&lists), NULL), PROX_OK, context);
    expect_same_lists(&who, &e->lists, &lists);
    prox_lists_free(&lists);
}

/* At 0.15 points a cell (80,000 cells) the grid keeps occupancy bits,
 * at 1.1 a table of every cell: the sweep reads cell starts from both
 * (grid.c, LINEAR_CELLS_PER_POINT). */
static void sweep_matches_brute_force(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int sparse = 0; sparse <= 1; sparse++) {
        test_case tc;
        sparse_case(&tc, dim, sparse ? 0.15 : 1.1, 90 + (uint64_t)dim);
        expectation e;
        expectation_compute(&e, &tc);
        char context[80];
        snprintf(context, sizeof context, "sweep: dim=%d %s table", dim, sparse ? "sparse" : "dense");
        CHECK(e.pairs.count > 200, context, "only %lld pairs: the scene lost its extras",
              (long long)e.pairs.count);
        for (int threads = 1; threads <= 2; threads++) {
            prox_grid *g = fixed_grid(&tc, threads, context);
            CHECK(prox_grid_sweeps(g), context, "the sweep is not taken (%lld points, %lld runs)",
                  (long long)g->n, (long long)g->nruns);
            CHECK(g->sparse == (sparse == 1), context, "the table is %s",
                  g->sparse ? "sparse" : "dense");
            expect_half_stencil_sinks(g, &tc, &e, context);
            prox_grid_destroy(g);
            check_case(&tc, &e, &CONFIG_LINEAR, threads); /* one-shot: fixed point */
            check_case_on_grid(&tc, &e, &CONFIG_LINEAR_FIXED, threads);
        }
        check_thread_independence(&tc, &CONFIG_LINEAR);
        expectation_free(&e);
        test_case_free(&tc);
    }
}

/* The sweep forced onto crowded cells (its limit raised: about 10 points a
 * cell, every point's candidates over several vectors), with lists from
 * its pairs: still brute force's pairs. (Crowded cells this few take the
 * table whatever the limit: LINEAR_MIN_CELLS; the clusters above overflow
 * the vector over the bits.) */
static void sweep_forced_onto_crowded_cells_matches_brute_force(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        test_case tc;
        sparse_case(&tc, dim, 0.15, 70 + (uint64_t)dim);
        tc.radius = dim == 2 ? 8.0 : 4.0; /* about 10 points a cell */
        expectation e;
        expectation_compute(&e, &tc);
        char context[80];
        snprintf(context, sizeof context, "forced sweep: dim=%d", dim);
        for (int threads = 1; threads <= 2; threads++) {
            prox_grid_desc desc = config_desc(&CONFIG_LINEAR_FIXED, tc.radius, tc.period, threads);
            prox_grid *g = NULL;
            CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, context);
            prox_grid_set_density_limits(g, 0.0, 1000.0, 1000.0);
            prox_points view = test_case_points(&tc);
            CHECK_STATUS(prox_grid_build(g, &view), PROX_OK, context);
            CHECK(prox_grid_sweeps(g) && (double)g->n > 4.0 * (double)g->nruns, context,
                  "not a forced sweep: %lld points, %lld runs", (long long)g->n,
                  (long long)g->nruns);
            expect_half_stencil_sinks(g, &tc, &e, context);
            prox_grid_destroy(g);
        }
        expectation_free(&e);
        test_case_free(&tc);
    }
}

/* The sweep's conditions: crowded cells, periodic axes and doubles go run
 * by run instead (with the same results: the class tests). */
static void sweep_only_where_it_applies(void **state)
{
    (void)state;
    test_case tc;
    sparse_case(&tc, 3, 0.15, 5);
    prox_grid *g = fixed_grid(&tc, 1, "sparse");
    CHECK(prox_grid_sweeps(g), "sparse", "no sweep on about one point a cell");
    prox_grid_destroy(g);
    tc.radius = 4.0; /* 64 times the points a cell */
    g = fixed_grid(&tc, 1, "crowded");
    CHECK(!prox_grid_sweeps(g), "crowded", "a sweep over %lld points in %lld runs",
          (long long)g->n, (long long)g->nruns);
    prox_grid_destroy(g);
    tc.radius = 1.0;
    for (int k = 0; k < 3; k++)
        tc.period[k] = 64.0; /* wraps the box of about 43 */
    g = fixed_grid(&tc, 1, "periodic");
    CHECK(!prox_grid_sweeps(g), "periodic", "a sweep on a periodic grid");
    prox_grid_destroy(g);
    test_case_free(&tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sweep_matches_brute_force),
        cmocka_unit_test(sweep_forced_onto_crowded_cells_matches_brute_force),
        cmocka_unit_test(sweep_only_where_it_applies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
