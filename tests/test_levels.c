/* test_levels: every grid configuration, every sink, on every adversarial
 * input class of the suite, against the oracle: small inputs, so that the
 * whole runs in seconds, at each SIMD level (PROX_SIMD, tests/at_level.sh)
 * and under an emulator for the AArch64 levels (tools/cross-aarch64.sh).
 * The kernels over each level's vectors (simd/vec.h, kernel.h) are what it
 * checks; the other unit tests go deeper into each structure. A second
 * test runs each of the grid planner's methods (src/points/grid_plan.c) on
 * purpose, asserts the method stats names and that its traversal is the
 * one that ran, and checks its output. A third
 * checks every entry of the AVX2 compress's lane tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "points/grid_private.h" /* prox_grid_set_density_limits */
#include "simd/lane_order.h"

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


/* ---- every method of the grid planner, asserted ---------------------------- */

typedef enum sink_kind { SINK_SORTED, SINK_UNSORTED, SINK_COUNT, SINK_LISTS, SINK_QUERY } sink_kind;

/* A grid set up to take one method: its options, the density limits that
 * decide between traversals (0 keeps the planner's own; prox_grid_set_
 * density_limits), the sink, and the method stats must name. */
typedef struct method_case {
    const char *method;
    prox_keys keys;
    prox_coords coords;
    prox_rows rows;
    int cell_divisions;
    double sweep_limit, half_pairs_limit;
    sink_kind sink;
    bool open_only; /* the method serves open grids alone */
} method_case;

#define ALWAYS 1e300 /* a density limit that any grid is under */
#define NEVER 1e-300 /* one that no grid is under */

static const method_case METHOD_CASES[] = {
    {"grid.rows.rel16", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, 0, 0, SINK_SORTED, false},
    {"grid.rows.rel16", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, 0, NEVER, SINK_LISTS, false},
    {"grid.rows.fixed", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 2, 0, 0, SINK_SORTED, false},
    {"grid.rows.double", PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE, PROX_ROWS_STAGED, 1, 0, NEVER, SINK_LISTS, false},
    {"grid.rows.double", PROX_KEYS_MORTON, PROX_COORDS_AUTO, PROX_ROWS_STAGED, 1, 0, 0, SINK_SORTED, false},
    {"grid.fill.fixed", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_IN_PLACE, 1, 0, 0, SINK_SORTED, false},
    {"grid.fill.double", PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE, PROX_ROWS_IN_PLACE, 1, 0, 0, SINK_LISTS, false},
    {"grid.sweep.fixed", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, ALWAYS, 0, SINK_COUNT, true},
    {"grid.sweep.fixed", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, ALWAYS, ALWAYS, SINK_LISTS, true},
    {"grid.strips.rel16", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, NEVER, 0, SINK_COUNT, false},
    {"grid.strips.rel16", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, NEVER, 0, SINK_UNSORTED, false},
    {"grid.strips.rel16", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, NEVER, ALWAYS, SINK_LISTS, false},
    {"grid.strips.fixed", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 2, NEVER, 0, SINK_UNSORTED, false},
    {"grid.strips.double", PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE, PROX_ROWS_STAGED, 1, 0, 0, SINK_COUNT, false},
    {"grid.cells.double", PROX_KEYS_MORTON, PROX_COORDS_AUTO, PROX_ROWS_STAGED, 1, 0, 0, SINK_COUNT, false},
    {"grid.cells.double", PROX_KEYS_HASH, PROX_COORDS_AUTO, PROX_ROWS_STAGED, 1, 0, ALWAYS, SINK_LISTS, false},
    {"grid.query.strips.fixed", PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_STAGED, 1, 0, 0, SINK_QUERY, false},
    {"grid.query.strips.double", PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE, PROX_ROWS_STAGED, 1, 0, 0, SINK_QUERY, false},
    {"grid.query.cells.double", PROX_KEYS_HASH, PROX_COORDS_AUTO, PROX_ROWS_STAGED, 1, 0, 0, SINK_QUERY, false},
};

/* The traversal whose methods start with each prefix (grid_plan.h). */
static const char *const TRAVERSAL_PREFIX[GRID_TRAVERSALS] = {
    [GRID_ROWS] = "grid.rows.",         [GRID_FILL] = "grid.fill.",
    [GRID_SWEEP] = "grid.sweep.",       [GRID_STRIPS] = "grid.strips.",
    [GRID_CELLS] = "grid.cells.",       [GRID_QUERY_STRIPS] = "grid.query.strips.",
    [GRID_QUERY_CELLS] = "grid.query.cells.",
};

/* The method stats names is the traversal that ran: its own record
 * (grid_work.ran) counts it, and no other traversal's does. */
static void method_is_what_ran(const prox_grid *g, const char *method, const char *context)
{
    int named = -1;
    for (int t = 0; t < GRID_TRAVERSALS; t++)
        if (strncmp(method, TRAVERSAL_PREFIX[t], strlen(TRAVERSAL_PREFIX[t])) == 0)
            named = t;
    CHECK(named >= 0, context, "method %s names no traversal", method);
    for (int t = 0; t < GRID_TRAVERSALS; t++)
        CHECK((g->work.ran[t] > 0) == (t == named), context,
              "method %s, but traversal %s ran %lld times", method, TRAVERSAL_PREFIX[t],
              (long long)g->work.ran[t]);
}

/* The output of method case mc on grid g, against the oracle's. */
static void method_output_matches(prox_grid *g, const method_case *mc, const test_case *tc,
                                  const expectation *e, const char *context)
{
    subject s = {context, mc->sink == SINK_QUERY ? &tc->queries : &tc->points, &tc->points,
                 tc->radius, tc->period};
    prox_stats stats;
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    prox_points queries = test_case_queries(tc);
    memset(g->work.ran, 0, sizeof g->work.ran);
    switch (mc->sink) {
    case SINK_SORTED:
    case SINK_UNSORTED:
        CHECK_STATUS(prox_grid_pairs(g, mc->sink == SINK_SORTED
                                            ? prox_sink_buffer(&buffer)
                                            : prox_sink_unsorted(prox_sink_buffer(&buffer)),
                                     &stats),
                     PROX_OK, context);
        if (mc->sink == SINK_UNSORTED)
            qsort(buffer.pairs, (size_t)buffer.count, sizeof *buffer.pairs, compare_pairs);
        expect_same_pairs(&s, &e->pairs, buffer.pairs, buffer.count);
        break;
    case SINK_COUNT:
        CHECK_STATUS(prox_grid_pairs(g, prox_sink_count(), &stats), PROX_OK, context);
        CHECK(stats.pairs == e->pairs.count, context, "count %lld, expected %lld",
              (long long)stats.pairs, (long long)e->pairs.count);
        break;
    case SINK_LISTS:
        CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&lists), &stats), PROX_OK, context);
        expect_same_lists(&s, &e->lists, &lists);
        break;
    case SINK_QUERY:
        CHECK_STATUS(prox_grid_query(g, &queries, prox_sink_buffer(&buffer), &stats), PROX_OK,
                     context);
        expect_same_pairs(&s, &e->query_pairs, buffer.pairs, buffer.count);
        break;
    }
    CHECK(stats.method && strcmp(stats.method, mc->method) == 0, context,
          "method %s ran, expected %s", stats.method ? stats.method : "(none)", mc->method);
    method_is_what_ran(g, stats.method, context);
    prox_pair_buffer_free(&buffer);
    prox_lists_free(&lists);
}

/* Each method on uniform points (about 8 a cell at r = 1), open and
 * periodic (all but the sweep), in 2D and 3D, at this level: the planner
 * takes the method the case names, and its output is the oracle's. */
static void each_grid_method_runs_when_planned_and_matches_the_oracle(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int p = 0; p < 2; p++) {
            test_case tc;
            test_case_make_large_uniform(&tc, dim, dim == 3 ? 4000 : 1200, 300, 8.0, 1.0,
                                         p ? PERIODIC_ALL : PERIODIC_NONE);
            expectation e;
            expectation_compute(&e, &tc);
            prox_points points = test_case_points(&tc);
            for (size_t c = 0; c < sizeof METHOD_CASES / sizeof METHOD_CASES[0]; c++) {
                const method_case *mc = &METHOD_CASES[c];
                if (mc->open_only && p)
                    continue;
                char context[256];
                snprintf(context, sizeof context, "case %zu (%s), dim=%d %s simd=%s", c,
                         mc->method, dim, p ? "periodic" : "open", prox_simd_level());
                prox_grid_desc desc = prox_default_grid_desc();
                desc.radius = tc.radius;
                desc.keys = mc->keys;
                desc.coords = mc->coords;
                desc.rows = mc->rows;
                desc.cell_divisions = mc->cell_divisions;
                for (int k = 0; k < 3; k++)
                    desc.period[k] = tc.period[k];
                desc.threads = 1;
                prox_grid *g = NULL;
                CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, context);
                prox_grid_set_density_limits(g, 0, mc->sweep_limit, mc->half_pairs_limit);
                CHECK_STATUS(prox_grid_build(g, &points), PROX_OK, context);
                method_output_matches(g, mc, &tc, &e, context);
                prox_grid_destroy(g);
            }
            expectation_free(&e);
            test_case_free(&tc);
        }
}

/* Entry m of a lane table: m's set bits' indices, lowest first, a byte
 * each, zero bytes after them. */
static uint64_t lane_order_of(unsigned m, int lanes)
{
    uint64_t order = 0;
    int kept = 0;
    for (int k = 0; k < lanes; k++)
        if (m >> k & 1)
            order |= (uint64_t)k << (8 * kept++);
    return order;
}

static void every_lane_table_entry_lists_the_kept_lanes(void **state)
{
    (void)state;
    for (unsigned m = 0; m < 256; m++)
        assert_int_equal(prox_lane_order8[m], lane_order_of(m, 8));
    for (unsigned m = 0; m < 16; m++) /* the 4-lane view (vec_f64.h at AVX2) */
        assert_int_equal((uint32_t)prox_lane_order8[m], lane_order_of(m, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_level_matches_the_oracle),
        cmocka_unit_test(each_grid_method_runs_when_planned_and_matches_the_oracle),
        cmocka_unit_test(every_lane_table_entry_lists_the_kept_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
