/* test_grid.c: PROX_ALGO_GRID (linear keys over double and fixed-point
 * coordinates, Morton keys, hash keys, cells of r/2, a hash table of 8
 * slots) against the oracle on every input class, dimension, scalar and
 * periodicity, through every sink; the object API; large inputs; pairs
 * within rounding of the radius; thread independence. */
#include "class_tests.h"
#include "closed_forms.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

DEFINE_CLASS_TESTS(grid, GRID_CONFIGS, GRID_CONFIG_COUNT)

static void grid_matches_closed_form_counts(void **state)
{
    (void)state;
    for (int c = 0; c < GRID_CONFIG_COUNT; c++)
        check_closed_forms(GRID_CONFIGS[c]);
}

static void grid_results_do_not_depend_on_thread_count(void **state)
{
    (void)state;
    for (int c = 0; c < GRID_CONFIG_COUNT; c++)
        check_thread_independence_on_samples(GRID_CONFIGS[c]);
}

/* ---- large inputs ------------------------------------------------------ */

static void expect_every_config_finds(const cloud *c, double radius, const double period[3],
                                      const char *what)
{
    pair_list want;
    oracle_pairs(c, radius, period, &want);
    for (int n = 0; n < GRID_CONFIG_COUNT; n++) {
        char context[256];
        snprintf(context, sizeof context, "%s: N=%" PRId64 " dim=%d r=%g algo=%s", what,
                 c->count, c->dim, radius, GRID_CONFIGS[n]->name);
        prox_grid_desc desc = config_desc(GRID_CONFIGS[n], radius, period, 2);
        prox_points view = prox_points_f64(c->xyz, c->count, c->dim);
        prox_pair_buffer buffer;
        prox_pair_buffer_init(&buffer, NULL);
        CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), NULL),
                     PROX_OK, context);
        subject s = {context, c, c, radius, period};
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        prox_pair_buffer_free(&buffer);
    }
    pair_list_free(&want);
}

static void grid_large_uniform_periodic_3d_matches_oracle(void **state)
{
    (void)state;
    rng r = rng_seeded(2024);
    cloud c;
    cloud_uniform(&c, 3, 20000, -16.0, 48.0, &r); /* periods 16: most points wrap */
    static const double period[3] = {16, 16, 16};
    expect_every_config_finds(&c, 0.8, period, "large uniform, periodic");
    cloud_free(&c);
}

static void grid_large_clustered_2d_matches_oracle(void **state)
{
    (void)state;
    enum { BLOBS = 20, COUNT = 20000 };
    rng r = rng_seeded(99);
    cloud centres, c;
    cloud_uniform(&centres, 2, BLOBS, 0.0, 64.0, &r);
    cloud_alloc(&c, 2, COUNT);
    for (int64_t i = 0; i < COUNT; i++) {
        const double *centre = cloud_point(&centres, rng_below(&r, BLOBS));
        double spread = (i % 7 == 0) ? 8.0 : 0.5;
        for (int k = 0; k < 2; k++)
            cloud_point(&c, i)[k] = centre[k] + spread * (rng_uniform(&r) - 0.5);
    }
    expect_every_config_finds(&c, 0.05, NULL, "large clustered, open");
    cloud_free(&centres);
    cloud_free(&c);
}

/* ---- fixed-point coordinates (kernel_fixed.h) ----------------------------- */

/* Pair k of the cloud: points 2k and 2k + 1 at distance r (1 + delta) along
 * a random direction, delta cycling through values from 0 to 2^-13 of
 * either sign: far below what the fixed-point distance resolves, near its
 * float rounding (2^-24 .. 2^-19), and beyond it. */
static void near_radius_pairs(cloud *c, int dim, int pairs, double offset, double box, rng *r)
{
    static const double deltas[] = {0,        0x1p-45,  -0x1p-45, 0x1p-30, -0x1p-30, 0x1p-24,
                                    -0x1p-24, 0x1p-23,  -0x1p-23, 0x1p-22, -0x1p-22, 0x1p-21,
                                    -0x1p-21, 0x1p-20,  -0x1p-20, 0x1p-19, -0x1p-19, 0x1p-17,
                                    -0x1p-17, 0x1p-13,  -0x1p-13};
    enum { DELTAS = sizeof deltas / sizeof deltas[0] };
    cloud_alloc(c, dim, 2 * (int64_t)pairs);
    for (int k = 0; k < pairs; k++) {
        double *a = cloud_point(c, 2 * k), *b = cloud_point(c, 2 * k + 1), dir[3], norm = 0;
        for (int d = 0; d < dim; d++) {
            dir[d] = rng_uniform(r) - 0.5;
            norm += dir[d] * dir[d];
        }
        double step = (1.0 + deltas[k % DELTAS]) / sqrt(norm > 0 ? norm : 1.0);
        for (int d = 0; d < dim; d++) {
            a[d] = offset + box * rng_uniform(r);
            b[d] = a[d] + step * dir[d];
        }
    }
}

/* The pairs, the count, the unsorted buffer (its pairs sorted here) and the
 * queries of the cloud against itself, each against the oracle. */
static void expect_fixed_point_exact(const cloud *c, const double *period, const char *what)
{
    pair_list want, want_queries;
    oracle_pairs(c, 1.0, period, &want);
    oracle_query_pairs(c, c, 1.0, period, &want_queries);
    const algo_config *configs[] = {&CONFIG_LINEAR, &CONFIG_LINEAR_DIVISIONS_2};
    for (int n = 0; n < 2; n++) {
        char context[256];
        snprintf(context, sizeof context, "%s: dim=%d algo=%s", what, c->dim, configs[n]->name);
        prox_grid_desc desc = config_desc(configs[n], 1.0, period, 2);
        desc.coords = PROX_COORDS_FIXED; /* AUTO keeps doubles at the scalar level */
        prox_points view = prox_points_f64(c->xyz, c->count, c->dim);
        prox_pair_buffer buffer;
        prox_pair_buffer_init(&buffer, NULL);
        prox_stats stats;
        subject s = {context, c, c, 1.0, period};
        CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), &stats),
                     PROX_OK, context);
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        CHECK(stats.coords == PROX_COORDS_FIXED && stats.rechecked > 0, context,
              "coords %d, %" PRId64 " candidates rechecked: the band was not used", stats.coords,
              stats.rechecked);
        CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID,
                                prox_sink_unsorted(prox_sink_buffer(&buffer)), NULL),
                     PROX_OK, context);
        qsort(buffer.pairs, (size_t)buffer.count, sizeof *buffer.pairs, compare_pairs);
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_count(), &stats),
                     PROX_OK, context);
        CHECK(stats.pairs == want.count, context, "count %" PRId64 ", expected %" PRId64,
              stats.pairs, want.count);
        CHECK_STATUS(prox_query(&view, &view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer),
                                NULL),
                     PROX_OK, context);
        expect_same_pairs(&s, &want_queries, buffer.pairs, buffer.count);
        prox_pair_buffer_free(&buffer);
    }
    pair_list_free(&want);
    pair_list_free(&want_queries);
}

/* Fixed point settles only what lies clearly inside or outside the radius;
 * pairs within rounding of it must be decided in double (stats.rechecked)
 * and come out as the oracle's: open and periodic, near 0 and near 1e6. */
static void grid_fixed_point_decides_pairs_near_the_radius_exactly(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        rng r = rng_seeded(40 + (uint64_t)dim);
        const double offsets[] = {-3.0, 1e6};
        for (int o = 0; o < 2; o++) {
            cloud c;
            near_radius_pairs(&c, dim, 4000, offsets[o], 40.0, &r);
            const double period[3] = {12.0, 12.0, dim == 3 ? 12.0 : 0.0};
            expect_fixed_point_exact(&c, NULL, o == 0 ? "near-radius pairs, open"
                                                      : "near-radius pairs near 1e6, open");
            expect_fixed_point_exact(&c, period, o == 0 ? "near-radius pairs, periodic"
                                                        : "near-radius pairs near 1e6, periodic");
            cloud_free(&c);
        }
    }
}

/* Beyond 2^17 cells along an axis the grid keeps doubles, and says so. */
static void grid_fixed_point_falls_back_to_doubles_over_long_axes(void **state)
{
    (void)state;
    rng r = rng_seeded(5);
    cloud c;
    cloud_alloc(&c, 2, 3000);
    for (int64_t i = 0; i < c.count; i++) {
        cloud_point(&c, i)[0] = 400000.0 * rng_uniform(&r);
        cloud_point(&c, i)[1] = 2.0 * rng_uniform(&r);
    }
    for (int64_t i = 1; i < c.count; i += 2) /* partners within reach */
        cloud_point(&c, i)[0] = cloud_point(&c, i - 1)[0] + 0.5;
    pair_list want;
    oracle_pairs(&c, 1.0, NULL, &want);
    prox_grid_desc desc = config_desc(&CONFIG_LINEAR_DIVISIONS_2, 1.0, NULL, 2);
    prox_points view = prox_points_f64(c.xyz, c.count, 2);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_stats stats;
    const char *context = "fixed point asked for over 800,000 cells along x";
    CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), &stats),
                 PROX_OK, context);
    CHECK(stats.keys == PROX_KEYS_LINEAR && stats.coords == PROX_COORDS_DOUBLE, context,
          "keys %d, coords %d: linear keys over doubles expected", stats.keys, stats.coords);
    subject s = {context, &c, &c, 1.0, NULL};
    expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
    prox_pair_buffer_free(&buffer);
    pair_list_free(&want);
    cloud_free(&c);
}

/* An extent of ~1e14 cells per axis (points near 0 and near 1e12, r = 0.01)
 * may exceed what the grid represents: the documented answer is then
 * PROX_ERR_RANGE with a message; otherwise the exact pairs. Never a crash,
 * never wrong pairs. */
static void grid_extreme_extent_is_exact_or_a_range_error(void **state)
{
    (void)state;
    static const double far[] = {1e12, -1e15, 1e300};
    for (size_t f = 0; f < sizeof far / sizeof far[0]; f++) {
        rng r = rng_seeded(404);
        cloud c;
        cloud_uniform(&c, 3, 300, 0.0, 0.2, &r);
        for (int k = 0; k < 3; k++) {
            cloud_point(&c, 298)[k] = far[f];
            cloud_point(&c, 299)[k] = far[f];
        }
        pair_list want;
        oracle_pairs(&c, 0.01, NULL, &want);
        prox_points view = prox_points_f64(c.xyz, c.count, 3);
        for (int n = 0; n < GRID_CONFIG_COUNT; n++) {
            char context[160];
            snprintf(context, sizeof context, "two points at %g among 298 in [0, 0.2)^3, r = 0.01, "
                     "algo=%s", far[f], GRID_CONFIGS[n]->name);
            prox_grid_desc desc = config_desc(GRID_CONFIGS[n], 0.01, NULL, 2);
            prox_pair_buffer buffer;
            prox_pair_buffer_init(&buffer, NULL);
            prox_status status =
                prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), NULL);
            CHECK(status == PROX_OK || status == PROX_ERR_RANGE, context, "status %s (%s)",
                  prox_status_string(status), prox_last_error());
            if (status == PROX_OK) {
                subject s = {context, &c, &c, 0.01, NULL};
                expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
            } else {
                CHECK(prox_last_error()[0] != '\0', context, "PROX_ERR_RANGE without a message");
            }
            prox_pair_buffer_free(&buffer);
        }
        pair_list_free(&want);
        cloud_free(&c);
    }
}

/* Large inputs are checked on SAMPLED rows spread over the points. */
enum { SAMPLED = 300 };

static void sample_rows(const test_case *tc, int64_t rows[SAMPLED], csr *want)
{
    for (int64_t n = 0; n < SAMPLED; n++)
        rows[n] = (n * 7919 + 13) % tc->points.count;
    oracle_selected_rows(&tc->points, rows, SAMPLED, tc->radius, tc->period, want);
}

/* The grid's lists (config, threads) against the oracle's on the sampled
 * rows; returns the query's stats. */
static prox_stats expect_sampled_lists(const test_case *tc, const algo_config *config,
                                       int threads, const int64_t rows[SAMPLED],
                                       const csr *want, const char *label)
{
    char context[200];
    snprintf(context, sizeof context, "%s, algo=%s threads=%d, lists (%d sampled rows)", label,
             config->name, threads, SAMPLED);
    prox_points view = test_case_points(tc);
    prox_grid_desc desc = config_desc(config, tc->radius, tc->period, threads);
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    prox_stats stats = {0};
    CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_lists(&lists), &stats),
                 PROX_OK, context);
    subject s = {context, &tc->points, &tc->points, tc->radius, tc->period};
    expect_sampled_rows(&s, want, rows, &lists);
    prox_lists_free(&lists);
    return stats;
}

/* 70000 points and 5000 queries: beyond the sizes from which the library
 * splits queries into chunks (4096) and builds in parallel (65536). Sampled
 * rows against the oracle, then byte identity across thread counts. */
static void grid_parallel_paths_match_oracle_and_each_other(void **state)
{
    (void)state;
    test_case tc;
    test_case_make_large_uniform(&tc, 3, 70000, 5000, 32.0, 0.9, PERIODIC_ALL);
    int64_t rows[SAMPLED];
    csr want;
    sample_rows(&tc, rows, &want);
    for (int c = 0; c < GRID_CONFIG_COUNT; c++)
        expect_sampled_lists(&tc, GRID_CONFIGS[c], 2, rows, &want,
                             "70000 uniform points, 3D periodic, r = 0.9");
    check_thread_independence(&tc, &CONFIG_MORTON);
    check_thread_independence(&tc, &CONFIG_HASH);
    check_thread_independence(&tc, &CONFIG_LINEAR); /* parallel counting sort */
    csr_free(&want);
    test_case_free(&tc);
}

/* W2-like sparse 2D points (0.3 a cell): 100,000 points over 580 x 580
 * cells of linear keys, a table large enough (336,000 cells) to be
 * counted a slice at a time (grid.c, SLICED_COUNT_MIN_CELLS). Sampled
 * rows against the oracle, then byte identity across thread counts. */
static void grid_sparse_2d_sliced_table_matches_oracle(void **state)
{
    (void)state;
    test_case tc;
    test_case_make_large_uniform(&tc, 2, 100000, 1000, 560.0, 1.0, PERIODIC_NONE);
    int64_t rows[SAMPLED];
    csr want;
    sample_rows(&tc, rows, &want);
    for (int threads = 1; threads <= 2; threads++) {
        prox_stats stats = expect_sampled_lists(&tc, &CONFIG_LINEAR, threads, rows, &want,
                                                "100000 sparse points, 2D open, r = 1");
        CHECK(stats.keys == PROX_KEYS_LINEAR, "sparse 2D points", "keys %d", (int)stats.keys);
    }
    check_thread_independence(&tc, &CONFIG_LINEAR);
    csr_free(&want);
    test_case_free(&tc);
}

/* The build's box pass over packed doubles (grid.c, packed_box_pass)
 * reads blocks of 8 points and the rest apart: a non-finite coordinate and
 * an extreme one must be seen wherever they are (first point, a block,
 * the rest, the last point), on every axis. The extreme point and a
 * partner beside it make a pair the grid finds only if its box holds it. */
static void grid_box_pass_sees_every_point(void **state)
{
    (void)state;
    static const int64_t counts[] = {5, 8, 13, 45};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (int dim = 2; dim <= 3; dim++)
            for (int k = 0; k < dim; k++) {
                int64_t n = counts[c], at[] = {0, n / 2, n - 1};
                for (int w = 0; w < 3; w++) {
                    char context[160];
                    snprintf(context, sizeof context, "%lld packed points, dim=%d, point %lld, "
                             "axis %d", (long long)n, dim, (long long)at[w], k);
                    rng r = rng_seeded(31 * (uint64_t)n + (uint64_t)w);
                    cloud cl;
                    cloud_uniform(&cl, dim, n, 0.0, 1.0, &r);
                    int64_t bad = at[w], partner = bad == 0 ? 1 : bad - 1;
                    prox_points view = prox_points_f64(cl.xyz, n, dim);
                    prox_grid_desc desc = prox_default_grid_desc();
                    desc.radius = 0.3;
                    prox_grid *grid;
                    CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, context);
                    cloud_point(&cl, bad)[k] = -INFINITY;
                    CHECK_STATUS(prox_grid_build(grid, &view), PROX_ERR_DATA, context);
                    cloud_point(&cl, bad)[k] = 1000.0; /* far out, with a partner beside it */
                    for (int a = 0; a < dim; a++)
                        cloud_point(&cl, partner)[a] = cloud_point(&cl, bad)[a] + 0.01;
                    pair_list want;
                    oracle_pairs(&cl, 0.3, NULL, &want);
                    prox_pair_buffer got;
                    prox_pair_buffer_init(&got, NULL);
                    CHECK_STATUS(prox_grid_build(grid, &view), PROX_OK, context);
                    CHECK_STATUS(prox_grid_pairs(grid, prox_sink_buffer(&got), NULL), PROX_OK,
                                 context);
                    subject sj = {context, &cl, &cl, 0.3, NULL};
                    expect_same_pairs(&sj, &want, got.pairs, got.count);
                    prox_pair_buffer_free(&got);
                    pair_list_free(&want);
                    prox_grid_destroy(grid);
                    cloud_free(&cl);
                }
            }
}

/* A radius whose square underflows (1e-170: r*r == 1e-340 rounds to 0) or
 * which is itself subnormal (1e-310: 1/r overflows): only exact duplicates
 * are neighbours; a cell grid may refuse with PROX_ERR_RANGE. */
static void grid_radius_near_underflow_is_exact_or_a_range_error(void **state)
{
    (void)state;
    static const double radii[] = {1e-170, 1e-310};
    test_case tc;
    test_case_make(&tc, INPUT_DUPLICATES, 3, PROX_F64, PERIODIC_NONE);
    prox_points view = test_case_points(&tc);
    for (size_t n = 0; n < sizeof radii / sizeof radii[0]; n++) {
        pair_list want;
        oracle_pairs(&tc.points, radii[n], NULL, &want);
        CHECK(want.count > 0, "underflow", "no duplicates in the sample");
        for (int c = 0; c < GRID_CONFIG_COUNT; c++) {
            char context[160];
            snprintf(context, sizeof context, "600 points on 40 sites, r = %g, algo=%s", radii[n],
                     GRID_CONFIGS[c]->name);
            prox_grid_desc desc = config_desc(GRID_CONFIGS[c], radii[n], NULL, 2);
            prox_pair_buffer buffer;
            prox_pair_buffer_init(&buffer, NULL);
            prox_status status =
                prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), NULL);
            CHECK(status == PROX_OK || status == PROX_ERR_RANGE, context, "status %s (%s)",
                  prox_status_string(status), prox_last_error());
            if (status == PROX_OK) {
                subject s = {context, &tc.points, &tc.points, radii[n], NULL};
                expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
            }
            prox_pair_buffer_free(&buffer);
        }
        pair_list_free(&want);
    }
    test_case_free(&tc);
}

/* No queries at all: an empty buffer, lists of zero rows. */
static void grid_query_of_no_points_is_empty(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_UNIFORM, 3, PROX_F64, PERIODIC_ALL);
    prox_points view = test_case_points(&tc);
    prox_points none = prox_points_f64(tc.queries.xyz, 0, 3);
    const algo_config *configs[] = {&CONFIG_MORTON, &CONFIG_HASH, &CONFIG_BRUTE};
    for (int c = 0; c < 3; c++) {
        const char *context = configs[c]->name;
        prox_grid_desc desc = config_desc(configs[c], tc.radius, tc.period, 2);
        prox_pair_buffer buffer;
        prox_lists lists;
        prox_pair_buffer_init(&buffer, NULL);
        prox_lists_init(&lists, NULL);
        CHECK_STATUS(prox_query(&view, &none, &desc, configs[c]->algo, prox_sink_buffer(&buffer),
                                NULL),
                     PROX_OK, context);
        CHECK(buffer.count == 0, context, "%lld pairs for no queries", (long long)buffer.count);
        CHECK_STATUS(prox_query(&view, &none, &desc, configs[c]->algo, prox_sink_lists(&lists),
                                NULL),
                     PROX_OK, context);
        CHECK(lists.rows == 0, context, "%lld rows for no queries", (long long)lists.rows);
        CHECK(lists.offsets != NULL && lists.offsets[0] == 0, context,
              "lists of zero rows need offsets[0] == 0");
        prox_pair_buffer_free(&buffer);
        prox_lists_free(&lists);
    }
    test_case_free(&tc);
}

/* ---- unusual configurations against the oracle -------------------------- */

/* Configs a (2 threads) and b (1 thread) on each class, in dimensions
 * dim_lo .. 3, every periodicity, f64. */
static void check_pair_of_configs(const input_class *classes, size_t class_count, int dim_lo,
                                  const algo_config *a, const algo_config *b)
{
    for (size_t n = 0; n < class_count; n++)
        for (int dim = dim_lo; dim <= 3; dim++)
            for (int p = 0; p < PERIODICITY_COUNT; p++) {
                test_case tc;
                test_case_make(&tc, classes[n], dim, PROX_F64, (periodicity)p);
                expectation e;
                expectation_compute(&e, &tc);
                check_case(&tc, &e, a, 2);
                check_case(&tc, &e, b, 1);
                expectation_free(&e);
                test_case_free(&tc);
            }
}

/* Hash tables far too small: collisions everywhere. */
static void grid_hash_table_of_one_or_two_slots_is_exact(void **state)
{
    (void)state;
    static const algo_config one_slot = {"grid-hash-table1", PROX_ALGO_GRID, PROX_KEYS_HASH, 1,
                                         1, PROX_COORDS_AUTO, PROX_ROWS_AUTO};
    static const algo_config two_slots = {"grid-hash-table2-div2", PROX_ALGO_GRID,
                                          PROX_KEYS_HASH, 2, 2, PROX_COORDS_AUTO, PROX_ROWS_AUTO};
    static const input_class classes[] = {INPUT_UNIFORM, INPUT_LATTICE, INPUT_OUTLIER,
                                          INPUT_NARROW_PERIOD};
    check_pair_of_configs(classes, sizeof classes / sizeof classes[0], 3, &one_slot, &two_slots);
}

/* Linear keys with cells of r/3 and r/4: strips of 7 and 9 cells, the
 * stencil's far corners dropped so rows reach different distances along x;
 * narrow periods wrap the strips. */
static void grid_linear_wide_strips_are_exact(void **state)
{
    (void)state;
    static const algo_config div3 = {"grid-linear-div3", PROX_ALGO_GRID, PROX_KEYS_LINEAR, 3, 0,
                                     PROX_COORDS_AUTO, PROX_ROWS_AUTO};
    static const algo_config div4 = {"grid-linear-div4", PROX_ALGO_GRID, PROX_KEYS_LINEAR, 4, 0,
                                     PROX_COORDS_FIXED, PROX_ROWS_AUTO}; /* and fixed point over wide strips */
    static const input_class classes[] = {INPUT_UNIFORM, INPUT_LATTICE, INPUT_CLUSTERED,
                                          INPUT_NARROW_PERIOD};
    check_pair_of_configs(classes, sizeof classes / sizeof classes[0], 2, &div3, &div4);
}

/* ---- the object API ---------------------------------------------------- */

static void grid_object_api_matches_oracle(void **state)
{
    (void)state;
    static const struct {
        input_class cls;
        int dim;
        prox_scalar scalar;
        periodicity periodic;
    } cases[] = {
        {INPUT_UNIFORM, 3, PROX_F64, PERIODIC_ALL},   {INPUT_UNIFORM, 2, PROX_F32, PERIODIC_NONE},
        {INPUT_CLUSTERED, 3, PROX_F32, PERIODIC_X_ONLY}, {INPUT_LATTICE, 3, PROX_F64, PERIODIC_ALL},
        {INPUT_HALF_LATTICE, 2, PROX_F64, PERIODIC_NONE}, {INPUT_HUGE_OFFSET, 3, PROX_F64, PERIODIC_NONE},
        {INPUT_EMPTY, 3, PROX_F64, PERIODIC_NONE},    {INPUT_SINGLE, 2, PROX_F64, PERIODIC_ALL},
        {INPUT_OUTLIER, 3, PROX_F64, PERIODIC_NONE},  {INPUT_NARROW_PERIOD, 3, PROX_F64, PERIODIC_ALL},
        {INPUT_HUGE_RADIUS, 3, PROX_F64, PERIODIC_ALL},
    };
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        test_case tc;
        test_case_make(&tc, cases[n].cls, cases[n].dim, cases[n].scalar, cases[n].periodic);
        expectation e;
        expectation_compute(&e, &tc);
        for (int c = 0; c < GRID_CONFIG_COUNT; c++)
            check_case_on_grid(&tc, &e, GRID_CONFIGS[c], 2);
        expectation_free(&e);
        test_case_free(&tc);
    }
}

/* One grid, built from three different point sets in turn (different counts
 * and extents), each time giving that set's pairs. */
static void grid_can_be_rebuilt_with_other_points(void **state)
{
    (void)state;
    for (int p = 0; p < 2; p++) {
        periodicity periodic = p ? PERIODIC_ALL : PERIODIC_NONE;
        test_case sets[3];
        expectation e[3];
        test_case_make(&sets[0], INPUT_UNIFORM, 3, PROX_F64, periodic);
        test_case_make(&sets[1], INPUT_NEGATIVE, 3, PROX_F64, periodic);
        test_case_make(&sets[2], INPUT_SINGLE, 3, PROX_F64, periodic);
        for (int s = 0; s < 3; s++)
            expectation_compute(&e[s], &sets[s]);
        for (int c = 0; c < GRID_CONFIG_COUNT; c++) {
            prox_grid_desc desc = config_desc(GRID_CONFIGS[c], sets[0].radius, sets[0].period, 2);
            prox_grid *grid = NULL;
            CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, GRID_CONFIGS[c]->name);
            static const int order[5] = {0, 1, 2, 0, 1};
            for (int step = 0; step < 5; step++) {
                const test_case *tc = &sets[order[step]];
                prox_points view = test_case_points(tc);
                char label[64];
                snprintf(label, sizeof label, "build number %d", step + 1);
                CHECK_STATUS(prox_grid_build(grid, &view), PROX_OK, label);
                check_grid_against(grid, tc, &e[order[step]], GRID_CONFIGS[c], label);
            }
            prox_grid_destroy(grid);
        }
        for (int s = 0; s < 3; s++) {
            expectation_free(&e[s]);
            test_case_free(&sets[s]);
        }
    }
}

/* After build the caller's array may change or go away. */
static void grid_keeps_its_own_copy_of_the_points(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_CLUSTERED, 3, PROX_F64, PERIODIC_NONE);
    expectation e;
    expectation_compute(&e, &tc);
    for (int c = 0; c < GRID_CONFIG_COUNT; c++) {
        cloud scratch;
        cloud_copy(&scratch, &tc.points);
        prox_points view = prox_points_f64(scratch.xyz, scratch.count, 3);
        prox_grid_desc desc = config_desc(GRID_CONFIGS[c], tc.radius, tc.period, 2);
        prox_grid *grid = NULL;
        CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, GRID_CONFIGS[c]->name);
        CHECK_STATUS(prox_grid_build(grid, &view), PROX_OK, GRID_CONFIGS[c]->name);
        for (int64_t i = 0; i < scratch.count * 3; i++)
            scratch.xyz[i] = NAN;
        cloud_free(&scratch);
        check_grid_against(grid, &tc, &e, GRID_CONFIGS[c], "after the caller's array was freed");
        prox_grid_destroy(grid);
    }
    expectation_free(&e);
    test_case_free(&tc);
}

/* ---- sinks ------------------------------------------------------------- */

/* A buffer or lists that already hold a result are replaced, not appended. */
static void grid_sinks_replace_previous_results(void **state)
{
    (void)state;
    test_case big, small;
    test_case_make(&big, INPUT_UNIFORM, 3, PROX_F64, PERIODIC_NONE);
    test_case_make(&small, INPUT_LATTICE, 3, PROX_F64, PERIODIC_NONE);
    expectation e;
    expectation_compute(&e, &small);
    prox_grid_desc desc = config_desc(&CONFIG_MORTON, 1.0, NULL, 2);
    prox_points big_view = test_case_points(&big), small_view = test_case_points(&small);
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair_buffer_init(&buffer, NULL);
    prox_lists_init(&lists, NULL);
    const char *context = "second call into the same buffer / lists";
    CHECK_STATUS(prox_pairs(&big_view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), NULL),
                 PROX_OK, context);
    CHECK_STATUS(prox_pairs(&big_view, &desc, PROX_ALGO_GRID, prox_sink_lists(&lists), NULL),
                 PROX_OK, context);
    CHECK_STATUS(prox_pairs(&small_view, &desc, PROX_ALGO_GRID, prox_sink_buffer(&buffer), NULL),
                 PROX_OK, context);
    CHECK_STATUS(prox_pairs(&small_view, &desc, PROX_ALGO_GRID, prox_sink_lists(&lists), NULL),
                 PROX_OK, context);
    subject s = {context, &small.points, &small.points, small.radius, NULL};
    expect_same_pairs(&s, &e.pairs, buffer.pairs, buffer.count);
    expect_same_lists(&s, &e.lists, &lists);
    prox_pair_buffer_free(&buffer);
    prox_lists_free(&lists);
    expectation_free(&e);
    test_case_free(&big);
    test_case_free(&small);
}

/* PROX_ROWS_IN_OUTPUT (a sorted buffer's rows staged in the buffer, lists
 * counted first and written in place) gives the bytes of staged rows, for
 * both key schemes that take rows, both coordinates, 2D and 3D, open and
 * periodic, 1 to 3 threads (several chunks), into an empty buffer, one
 * too small and one too large, and keeps nothing for the next query. */
static void grid_rows_in_output_match_staged(void **state)
{
    (void)state;
    rng r = rng_seeded(46);
    for (int dim = 2; dim <= 3; dim++) {
        cloud c;
        cloud_uniform(&c, dim, 12000, 0.0, 10.0, &r);
        prox_points points = prox_points_f64(c.xyz, c.count, dim);
        for (int form = 0; form < 8; form++) {
            prox_grid_desc desc = prox_default_grid_desc();
            desc.radius = dim == 2 ? 0.12 : 0.4;
            desc.keys = form & 1 ? PROX_KEYS_MORTON : PROX_KEYS_LINEAR;
            desc.coords = form & 2 ? PROX_COORDS_DOUBLE : PROX_COORDS_FIXED;
            for (int k = 0; k < dim && (form & 4); k++)
                desc.period[k] = 10.0;
            for (int threads = 1; threads <= 3; threads++) {
                char context[120];
                snprintf(context, sizeof context, "in-output rows: %dD, form %d, %d threads", dim,
                         form, threads);
                desc.threads = threads;
                desc.rows = PROX_ROWS_STAGED;
                prox_pair_buffer want, got;
                prox_lists want_lists, got_lists;
                prox_pair_buffer_init(&want, NULL);
                prox_pair_buffer_init(&got, NULL);
                prox_lists_init(&want_lists, NULL);
                prox_lists_init(&got_lists, NULL);
                CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_buffer(&want),
                                        NULL), PROX_OK, context);
                CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID,
                                        prox_sink_lists(&want_lists), NULL), PROX_OK, context);
                desc.rows = PROX_ROWS_IN_OUTPUT;
                prox_grid *g;
                CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, context);
                CHECK_STATUS(prox_grid_build(g, &points), PROX_OK, context);
                int64_t capacity[] = {0, 3, want.count / 2, 2 * want.count + 7};
                for (int b = 0; b < 4; b++) {
                    CHECK_STATUS(prox_pair_buffer_reserve(&got, capacity[b]), PROX_OK, context);
                    got.count = got.capacity > 0 ? 1 : 0; /* content to be replaced */
                    prox_stats st;
                    CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&got), &st), PROX_OK, context);
                    CHECK(same_pair_buffers(&want, &got), context,
                          "buffer of capacity %lld: %lld pairs, staged %lld",
                          (long long)capacity[b], (long long)got.count, (long long)want.count);
                    CHECK(st.kept_bytes == 0 && st.pairs == want.count, context,
                          "kept %lld bytes, %lld pairs", (long long)st.kept_bytes,
                          (long long)st.pairs);
                    CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&got_lists), &st), PROX_OK,
                                 context);
                    CHECK(same_lists(&want_lists, &got_lists), context, "lists differ");
                    CHECK(st.kept_bytes == 0, context, "lists kept %lld bytes",
                          (long long)st.kept_bytes);
                    prox_pair_buffer_free(&got);
                    prox_pair_buffer_init(&got, NULL);
                }
                prox_grid_destroy(g);
                prox_pair_buffer_free(&want);
                prox_lists_free(&want_lists);
                prox_lists_free(&got_lists);
            }
        }
        cloud_free(&c);
    }
}

/* stats.fresh_bytes: what the allocator layer handed out, the caller's
 * allocator included (one thread, nothing else running: the count is the
 * allocator's own); for a one-shot call all of it, at least the output;
 * for a grid query all since the last query, so a repeated query into the
 * same buffer reports little. stats.huge_pages follows PROX_HUGE_PAGES. */
static void grid_stats_count_fresh_bytes(void **state)
{
    (void)state;
    rng r = rng_seeded(4646);
    cloud c;
    cloud_uniform(&c, 3, 20000, 0.0, 20.0, &r);
    prox_points points = prox_points_f64(c.xyz, c.count, 3);
    const char *env = getenv("PROX_HUGE_PAGES");
    int huge = env && strcmp(env, "1") == 0;
    int64_t allocated = 0;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 1.0;
    desc.threads = 1;
    desc.allocator = counting_allocator(&allocated);
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair_buffer_init(&buffer, &desc.allocator);
    prox_lists_init(&lists, &desc.allocator);
    prox_stats st;
    for (int task = 0; task < 3; task++) {
        const char *context = task == 0 ? "one-shot buffer" : task == 1 ? "one-shot lists"
                                                                        : "one-shot count";
        prox_sink sink = task == 0   ? prox_sink_buffer(&buffer)
                         : task == 1 ? prox_sink_lists(&lists)
                                     : prox_sink_count();
        int64_t before = allocated;
        CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, sink, &st), PROX_OK, context);
        int64_t output = task == 0   ? buffer.count * (int64_t)sizeof(prox_pair)
                         : task == 1 ? lists.offsets[lists.rows] * (int64_t)sizeof(prox_index)
                                     : 0;
        CHECK(st.fresh_bytes == allocated - before && st.fresh_bytes > output && st.pairs > 0,
              context, "fresh %lld bytes, the allocator saw %lld, output %lld bytes",
              (long long)st.fresh_bytes, (long long)(allocated - before), (long long)output);
        CHECK(st.huge_pages == huge, context, "huge_pages %d, PROX_HUGE_PAGES %s", st.huge_pages,
              env ? env : "unset");
    }
    CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_BRUTE, prox_sink_count(), &st), PROX_OK,
                 "brute force");
    CHECK(st.fresh_bytes >= 0, "brute force", "fresh %lld bytes", (long long)st.fresh_bytes);
    desc.rows = PROX_ROWS_STAGED;
    int64_t before = allocated;
    prox_grid *g;
    CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, "grid");
    CHECK_STATUS(prox_grid_build(g, &points), PROX_OK, "grid");
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&buffer), &st), PROX_OK, "grid");
    int64_t first = st.fresh_bytes;
    CHECK(first == allocated - before && first > st.bytes, "grid's first query",
          "fresh %lld bytes, the allocator saw %lld since the creation, grid %lld",
          (long long)first, (long long)(allocated - before), (long long)st.bytes);
    before = allocated;
    CHECK_STATUS(prox_grid_build(g, &points), PROX_OK, "grid");
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&buffer), &st), PROX_OK, "grid");
    CHECK(st.fresh_bytes == allocated - before && 8 * st.fresh_bytes < first, "grid's next query",
          "fresh %lld bytes, the allocator saw %lld, the first query %lld",
          (long long)st.fresh_bytes, (long long)(allocated - before), (long long)first);
    prox_grid_destroy(g);
    prox_pair_buffer_free(&buffer);
    prox_lists_free(&lists);
    cloud_free(&c);
}

static prox_status grid_pairs(void *grid, prox_sink sink, prox_stats *stats)
{
    return prox_grid_pairs(grid, sink, stats);
}

/* A grid keeps what its queries grew (pair_sink.h, grid_search.c's row
 * chunks): a repeated query allocates next to nothing and gives what the
 * first gave, whatever sinks came between, for every key scheme and 1 or 2
 * threads; the first equals brute force; trim releases the memory and
 * queries go on working. Each chunk's small gather buffers (Morton and
 * hash keys, a few KB) are still allocated per call: hence 1/8, not 0. */
static void grid_repeated_queries_reuse_their_memory(void **state)
{
    (void)state;
    rng r = rng_seeded(5);
    cloud c;
    cloud_uniform(&c, 3, 30000, -10, 30, &r);
    prox_points points = prox_points_f64(c.xyz, c.count, 3);
    prox_grid_desc plain = prox_default_grid_desc();
    plain.radius = 1.0;
    prox_pair_buffer want, first, again;
    prox_lists lists, lists_again;
    prox_pair_buffer_init(&want, NULL);
    prox_pair_buffer_init(&first, NULL);
    prox_pair_buffer_init(&again, NULL);
    prox_lists_init(&lists, NULL);
    prox_lists_init(&lists_again, NULL);
    CHECK_STATUS(prox_pairs(&points, &plain, PROX_ALGO_BRUTE, prox_sink_buffer(&want), NULL),
                 PROX_OK, "brute force");
    prox_keys keys[] = {PROX_KEYS_LINEAR, PROX_KEYS_MORTON, PROX_KEYS_HASH};
    for (int k = 0; k < 3; k++)
        for (int threads = 1; threads <= 2; threads++) {
            char context[80];
            snprintf(context, sizeof context, "repeated grid queries, keys %d, %d threads",
                     (int)keys[k], threads);
            int64_t allocated = 0;
            prox_grid_desc desc = plain;
            desc.keys = keys[k];
            desc.threads = threads;
            desc.allocator = counting_allocator(&allocated);
            prox_grid *g;
            CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, context);
            CHECK_STATUS(prox_grid_build(g, &points), PROX_OK, context);
            int64_t before = allocated;
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&first), NULL), PROX_OK, context);
            int64_t sorted_bytes = allocated - before;
            CHECK(same_pair_buffers(&want, &first), context, "%lld pairs, brute force %lld",
                  (long long)first.count, (long long)want.count);
            before = allocated;
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&lists), NULL), PROX_OK, context);
            int64_t lists_bytes = allocated - before;
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_unsorted(prox_sink_buffer(&again)), NULL),
                         PROX_OK, context);
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_unsorted(prox_sink_lists(&lists_again)),
                                         NULL),
                         PROX_OK, context);
            check_repeated_sorted_pairs(grid_pairs, g, &first, &again, &allocated, sorted_bytes,
                                        context);
            before = allocated;
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&lists_again), NULL), PROX_OK, context);
            CHECK(same_lists(&lists, &lists_again), context, "repeated lists differ");
            check_repeat_allocates_little(allocated - before, lists_bytes, context, "lists query");
            prox_stats st;
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_count(), &st), PROX_OK, context);
            int64_t kept = st.kept_bytes;
            prox_grid_trim(g);
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_count(), &st), PROX_OK, context);
            CHECK(st.kept_bytes < kept && st.pairs == want.count, context,
                  "after trim %lld bytes kept (%lld before), %lld pairs",
                  (long long)st.kept_bytes, (long long)kept, (long long)st.pairs);
            CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&again), NULL), PROX_OK, context);
            CHECK(same_pair_buffers(&first, &again), context, "the query after trim differs");
            prox_grid_destroy(g);
        }
    prox_pair_buffer_free(&want);
    prox_pair_buffer_free(&first);
    prox_pair_buffer_free(&again);
    prox_lists_free(&lists);
    prox_lists_free(&lists_again);
    cloud_free(&c);
}

static void pair_buffer_reserve_keeps_content(void **state)
{
    (void)state;
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    assert_int_equal(buffer.count, 0);
    assert_int_equal(prox_pair_buffer_reserve(&buffer, 3), PROX_OK);
    assert_true(buffer.capacity >= 3);
    for (prox_index n = 0; n < 3; n++) {
        buffer.pairs[n].i = n;
        buffer.pairs[n].j = 10 * n + 7;
    }
    buffer.count = 3;
    assert_int_equal(prox_pair_buffer_reserve(&buffer, 100000), PROX_OK);
    assert_true(buffer.capacity >= 100000);
    assert_int_equal(buffer.count, 3);
    for (prox_index n = 0; n < 3; n++) {
        assert_int_equal(buffer.pairs[n].i, n);
        assert_int_equal(buffer.pairs[n].j, 10 * n + 7);
    }
    buffer.pairs[99999].i = 1; /* the whole reservation is writable */
    prox_pair_buffer_free(&buffer);
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    prox_lists_free(&lists);
}

static void grid_stats_report_keys_and_cells(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_UNIFORM, 3, PROX_F64, PERIODIC_NONE);
    prox_points view = test_case_points(&tc);
    for (int c = 0; c < GRID_CONFIG_COUNT; c++) {
        const algo_config *config = GRID_CONFIGS[c];
        prox_grid_desc desc = config_desc(config, tc.radius, NULL, 2);
        prox_stats stats;
        CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_GRID, prox_sink_count(), &stats),
                     PROX_OK, config->name);
        /* linear keys fall back to Morton keys only where the box holds more
         * than 256 cells per point (and more than 2^24 cells) */
        bool fell_back = config->keys == PROX_KEYS_LINEAR && stats.keys == PROX_KEYS_MORTON &&
                         config->cell_divisions > 1;
        CHECK(stats.keys == (int)config->keys || fell_back, config->name,
              "stats.keys = %d, expected %d", stats.keys, (int)config->keys);
        CHECK(stats.cells >= 1 && stats.cells <= tc.points.count, config->name,
              "stats.cells = %" PRId64 " for %" PRId64 " points", stats.cells,
              tc.points.count);
        CHECK(stats.cells_visited >= stats.cells, config->name,
              "stats.cells_visited = %" PRId64 " < occupied cells %" PRId64,
              stats.cells_visited, stats.cells);
    }
    test_case_free(&tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CLASS_TEST_ENTRIES(grid),
        cmocka_unit_test(grid_matches_closed_form_counts),
        cmocka_unit_test(grid_results_do_not_depend_on_thread_count),
        cmocka_unit_test(grid_large_uniform_periodic_3d_matches_oracle),
        cmocka_unit_test(grid_large_clustered_2d_matches_oracle),
        cmocka_unit_test(grid_parallel_paths_match_oracle_and_each_other),
        cmocka_unit_test(grid_sparse_2d_sliced_table_matches_oracle),
        cmocka_unit_test(grid_box_pass_sees_every_point),
        cmocka_unit_test(grid_fixed_point_decides_pairs_near_the_radius_exactly),
        cmocka_unit_test(grid_fixed_point_falls_back_to_doubles_over_long_axes),
        cmocka_unit_test(grid_extreme_extent_is_exact_or_a_range_error),
        cmocka_unit_test(grid_radius_near_underflow_is_exact_or_a_range_error),
        cmocka_unit_test(grid_query_of_no_points_is_empty),
        cmocka_unit_test(grid_hash_table_of_one_or_two_slots_is_exact),
        cmocka_unit_test(grid_linear_wide_strips_are_exact),
        cmocka_unit_test(grid_object_api_matches_oracle),
        cmocka_unit_test(grid_can_be_rebuilt_with_other_points),
        cmocka_unit_test(grid_keeps_its_own_copy_of_the_points),
        cmocka_unit_test(grid_sinks_replace_previous_results),
        cmocka_unit_test(grid_repeated_queries_reuse_their_memory),
        cmocka_unit_test(grid_rows_in_output_match_staged),
        cmocka_unit_test(grid_stats_count_fresh_bytes),
        cmocka_unit_test(pair_buffer_reserve_keeps_content),
        cmocka_unit_test(grid_stats_report_keys_and_cells),
    };
    return cmocka_run_group_tests_name("grid", tests, NULL, NULL);
}
