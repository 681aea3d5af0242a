/* test_views.c: the same points through every kind of prox_points view
 * (packed, array of structs, separate arrays, f64 and f32, negative and zero
 * strides) give the same, exact results; and the wrap every view applies
 * on a periodic axis (prox_wrap) agrees with the oracle's. */
#include "check.h"
#include "core/exact.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct particle {
    int tag;
    double pos[3];
    float mass;
} particle;

typedef struct particle_f32 {
    float pos[3];
    int tag;
} particle_f32;

/* The same coordinates in three layouts. */
typedef struct layouts {
    particle *aos;
    particle_f32 *aos_f32;
    void *soa[3]; /* double or float arrays */
} layouts;

static void layouts_make(layouts *l, const cloud *c, prox_scalar scalar)
{
    size_t n = (size_t)c->count + 1;
    l->aos = calloc(n, sizeof(particle));
    l->aos_f32 = calloc(n, sizeof(particle_f32));
    for (int k = 0; k < 3; k++)
        l->soa[k] = calloc(n, sizeof(double));
    for (int64_t i = 0; i < c->count; i++) {
        l->aos[i].tag = (int)i;
        l->aos[i].mass = 1.0f;
        l->aos_f32[i].tag = -(int)i;
        for (int k = 0; k < c->dim; k++) {
            double x = cloud_point(c, i)[k];
            l->aos[i].pos[k] = x;
            l->aos_f32[i].pos[k] = (float)x;
            if (scalar == PROX_F64)
                ((double *)l->soa[k])[i] = x;
            else
                ((float *)l->soa[k])[i] = (float)x;
        }
        if (c->dim == 2) { /* unused z: must never be read */
            l->aos[i].pos[2] = NAN;
            l->aos_f32[i].pos[2] = NAN;
        }
    }
}

static void layouts_free(layouts *l)
{
    free(l->aos);
    free(l->aos_f32);
    for (int k = 0; k < 3; k++)
        free(l->soa[k]);
}

enum { VIEW_PACKED, VIEW_AOS, VIEW_SOA, VIEW_KINDS };
static const char *const VIEW_NAMES[VIEW_KINDS] = {"packed", "array of structs",
                                                   "separate arrays"};

static prox_points view_of(const test_case *tc, const layouts *l, int kind, bool queries)
{
    const cloud *c = queries ? &tc->queries : &tc->points;
    if (kind == VIEW_PACKED)
        return queries ? test_case_queries(tc) : test_case_points(tc);
    if (kind == VIEW_AOS && tc->scalar == PROX_F64)
        return prox_points_strided(&l->aos[0].pos[0], c->count, c->dim, PROX_F64,
                                   sizeof(particle));
    if (kind == VIEW_AOS)
        return prox_points_strided(&l->aos_f32[0].pos[0], c->count, c->dim, PROX_F32,
                                   sizeof(particle_f32));
    return prox_points_soa(l->soa[0], l->soa[1], c->dim == 3 ? l->soa[2] : NULL, c->count,
                           c->dim, tc->scalar);
}

static void expect_view_pairs(const test_case *tc, const expectation *e, const layouts *points,
                              const layouts *queries, int kind, const algo_config *config)
{
    char what[256], context[400];
    test_case_describe(tc, what, sizeof what);
    snprintf(context, sizeof context, "%s view=%s algo=%s", what, VIEW_NAMES[kind],
             config->name);
    prox_points p = view_of(tc, points, kind, false);
    prox_points q = view_of(tc, queries, (kind + 1) % VIEW_KINDS, true);
    prox_grid_desc desc = config_desc(config, tc->radius, tc->period, 2);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    CHECK_STATUS(prox_pairs(&p, &desc, config->algo, prox_sink_buffer(&buffer), NULL), PROX_OK,
                 context);
    subject s = {context, &tc->points, &tc->points, tc->radius, tc->period};
    expect_same_pairs(&s, &e->pairs, buffer.pairs, buffer.count);
    CHECK_STATUS(prox_query(&p, &q, &desc, config->algo, prox_sink_buffer(&buffer), NULL),
                 PROX_OK, context);
    subject sq = {context, &tc->queries, &tc->points, tc->radius, tc->period};
    expect_same_pairs(&sq, &e->query_pairs, buffer.pairs, buffer.count);
    prox_pair_buffer_free(&buffer);
}

static void check_every_layout(prox_scalar scalar)
{
    static const input_class classes[] = {INPUT_UNIFORM, INPUT_LATTICE, INPUT_DUPLICATES};
    const algo_config *configs[] = {&CONFIG_BRUTE, &CONFIG_MORTON, &CONFIG_HASH};
    for (size_t n = 0; n < sizeof classes / sizeof classes[0]; n++) {
        for (int dim = 2; dim <= 3; dim++) {
            for (int p = 0; p < PERIODICITY_COUNT; p++) {
                test_case tc;
                test_case_make(&tc, classes[n], dim, scalar, (periodicity)p);
                expectation e;
                expectation_compute(&e, &tc);
                layouts lp, lq;
                layouts_make(&lp, &tc.points, scalar);
                layouts_make(&lq, &tc.queries, scalar);
                for (int kind = 0; kind < VIEW_KINDS; kind++)
                    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
                        expect_view_pairs(&tc, &e, &lp, &lq, kind, configs[c]);
                layouts_free(&lp);
                layouts_free(&lq);
                expectation_free(&e);
                test_case_free(&tc);
            }
        }
    }
}

static void views_f64_packed_structs_and_arrays_agree_with_oracle(void **state)
{
    (void)state;
    check_every_layout(PROX_F64);
}

/* For f32 the oracle runs on the float values widened to double. */
static void views_f32_packed_structs_and_arrays_agree_with_oracle(void **state)
{
    (void)state;
    check_every_layout(PROX_F32);
}

static void views_constructors_describe_the_memory(void **state)
{
    (void)state;
    double packed[12];
    float packed_f32[12];
    for (int n = 0; n < 12; n++) {
        packed[n] = n + 0.5;
        packed_f32[n] = (float)n + 0.25f;
    }
    prox_points p = prox_points_f64(packed, 4, 3);
    assert_ptr_equal(p.axis[0], &packed[0]);
    assert_ptr_equal(p.axis[1], &packed[1]);
    assert_ptr_equal(p.axis[2], &packed[2]);
    assert_int_equal(p.stride, 3 * sizeof(double));
    assert_int_equal(p.count, 4);
    assert_int_equal(p.dim, 3);
    assert_int_equal(p.scalar, PROX_F64);
    assert_true(prox_points_get(&p, 3, 1) == 10.5);
    p = prox_points_f32(packed_f32, 6, 2);
    assert_ptr_equal(p.axis[0], &packed_f32[0]);
    assert_ptr_equal(p.axis[1], &packed_f32[1]);
    assert_int_equal(p.stride, 2 * sizeof(float));
    assert_int_equal(p.dim, 2);
    assert_int_equal(p.scalar, PROX_F32);
    assert_true(prox_points_get(&p, 5, 0) == 10.25);
    particle parts[2] = {{1, {1, 2, 3}, 0}, {2, {4, 5, 6}, 0}};
    p = prox_points_strided(&parts[0].pos[0], 2, 3, PROX_F64, sizeof(particle));
    assert_ptr_equal(p.axis[2], &parts[0].pos[2]);
    assert_int_equal(p.stride, sizeof(particle));
    assert_true(prox_points_get(&p, 1, 2) == 6.0);
    double x[2] = {1, 2}, y[2] = {3, 4}, z[2] = {5, 6};
    p = prox_points_soa(x, y, z, 2, 3, PROX_F64);
    assert_ptr_equal(p.axis[0], x);
    assert_ptr_equal(p.axis[1], y);
    assert_ptr_equal(p.axis[2], z);
    assert_int_equal(p.stride, sizeof(double));
    assert_true(prox_points_get(&p, 1, 2) == 6.0);
    float xf[2] = {1, 2}, yf[2] = {3, 4};
    p = prox_points_soa(xf, yf, NULL, 2, 2, PROX_F32);
    assert_int_equal(p.stride, sizeof(float));
    assert_true(prox_points_get(&p, 1, 1) == 4.0);
}

/* A stride of -sizeof(particle) from the last particle walks the array
 * backwards: view point i is particle n-1-i. */
static void views_negative_stride_reads_points_backwards(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_CLUSTERED, 3, PROX_F64, PERIODIC_NONE);
    int64_t n = tc.points.count;
    cloud reversed;
    cloud_alloc(&reversed, 3, n);
    for (int64_t i = 0; i < n; i++)
        memcpy(cloud_point(&reversed, i), cloud_point(&tc.points, n - 1 - i), 3 * sizeof(double));
    pair_list want;
    oracle_pairs(&reversed, tc.radius, NULL, &want);
    layouts l;
    layouts_make(&l, &tc.points, PROX_F64);
    prox_points view = prox_points_strided(&l.aos[n - 1].pos[0], n, 3, PROX_F64,
                                           -(ptrdiff_t)sizeof(particle));
    const algo_config *configs[] = {&CONFIG_BRUTE, &CONFIG_MORTON, &CONFIG_HASH};
    for (int c = 0; c < 3; c++) {
        char context[128];
        snprintf(context, sizeof context, "negative stride view, clustered 3D, algo=%s",
                 configs[c]->name);
        prox_grid_desc desc = config_desc(configs[c], tc.radius, NULL, 2);
        prox_pair_buffer buffer;
        prox_pair_buffer_init(&buffer, NULL);
        CHECK_STATUS(prox_pairs(&view, &desc, configs[c]->algo, prox_sink_buffer(&buffer), NULL),
                     PROX_OK, context);
        subject s = {context, &reversed, &reversed, tc.radius, NULL};
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        prox_pair_buffer_free(&buffer);
    }
    layouts_free(&l);
    pair_list_free(&want);
    cloud_free(&reversed);
    test_case_free(&tc);
}

/* Stride 0: n views of the same point, so every pair. */
static void views_zero_stride_repeats_one_point(void **state)
{
    (void)state;
    static const double one[3] = {0.5, -2.0, 7.25};
    prox_points view = prox_points_strided(one, 20, 3, PROX_F64, 0);
    const algo_config *configs[] = {&CONFIG_BRUTE, &CONFIG_MORTON, &CONFIG_HASH};
    for (int c = 0; c < 3; c++) {
        prox_grid_desc desc = config_desc(configs[c], 0.1, NULL, 2);
        prox_stats stats;
        CHECK_STATUS(prox_pairs(&view, &desc, configs[c]->algo, prox_sink_count(), &stats),
                     PROX_OK, configs[c]->name);
        CHECK(stats.pairs == 190, configs[c]->name, "%" PRId64 " pairs among 20 equal points",
              stats.pairs);
    }
}

/* Points in f64 and queries in f32 (and the reverse) in one call. */
static void views_points_and_queries_may_differ_in_scalar_type(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_CLUSTERED, 3, PROX_F64, PERIODIC_ALL);
    cloud queries_as_floats;
    cloud_copy(&queries_as_floats, &tc.queries);
    float *queries_f32 = cloud_round_to_float(&queries_as_floats);
    pair_list want;
    oracle_query_pairs(&tc.points, &queries_as_floats, tc.radius, tc.period, &want);
    prox_points points = test_case_points(&tc);
    prox_points queries = prox_points_f32(queries_f32, queries_as_floats.count, 3);
    const algo_config *configs[] = {&CONFIG_BRUTE, &CONFIG_MORTON, &CONFIG_HASH};
    for (int c = 0; c < 3; c++) {
        char context[128];
        snprintf(context, sizeof context, "f64 points, f32 queries, clustered 3D periodic, algo=%s",
                 configs[c]->name);
        prox_grid_desc desc = config_desc(configs[c], tc.radius, tc.period, 2);
        prox_pair_buffer buffer;
        prox_pair_buffer_init(&buffer, NULL);
        CHECK_STATUS(prox_query(&points, &queries, &desc, configs[c]->algo,
                                prox_sink_buffer(&buffer), NULL),
                     PROX_OK, context);
        subject s = {context, &queries_as_floats, &tc.points, tc.radius, tc.period};
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        prox_pair_buffer_free(&buffer);
    }
    pair_list_free(&want);
    free(queries_f32);
    cloud_free(&queries_as_floats);
    test_case_free(&tc);
}

/* A grid built and updated from an array of structs. */
static void views_grid_object_reads_structs(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_UNIFORM, 3, PROX_F64, PERIODIC_ALL);
    expectation e;
    expectation_compute(&e, &tc);
    layouts l;
    layouts_make(&l, &tc.points, PROX_F64);
    prox_points view = prox_points_strided(&l.aos[0].pos[0], tc.points.count, 3, PROX_F64,
                                           sizeof(particle));
    prox_grid_desc desc = config_desc(&CONFIG_MORTON, tc.radius, tc.period, 2);
    prox_grid *grid = NULL;
    const char *context = "prox_grid from an array of structs, uniform 3D periodic";
    CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, context);
    CHECK_STATUS(prox_grid_build(grid, &view), PROX_OK, context);
    check_grid_against(grid, &tc, &e, &CONFIG_MORTON, "after build");
    CHECK_STATUS(prox_grid_update(grid, &view, NULL), PROX_OK, context);
    check_grid_against(grid, &tc, &e, &CONFIG_MORTON, "after an update without motion");
    prox_grid_destroy(grid);
    layouts_free(&l);
    expectation_free(&e);
    test_case_free(&tc);
}

/* prox_wrap against the oracle's fmod-based wrap, bit for bit, on values
 * inside [0, L) (which prox_wrap returns without its division), at its
 * edges (0, -0.0, the double below L, L itself) and outside, for periods
 * of many scales. */
static void views_wrap_matches_the_oracle(void **state)
{
    (void)state;
    rng r = rng_seeded(91);
    for (int t = 0; t < 20000; t++) {
        double L = ldexp(1.0 + rng_uniform(&r), (int)(rng_next(&r) % 120) - 60);
        double u = rng_uniform(&r);
        const double x[] = {0.0, -0.0, L, nextafter(L, 0.0), nextafter(L, 2.0 * L), u * L,
                            -u * L, L + u * L, -ldexp(1.0, -1074), -1e-300};
        for (size_t k = 0; k < sizeof x / sizeof x[0]; k++) {
            double got = prox_wrap(x[k], L), want = oracle_wrap(x[k], L);
            if (want == 0.0)
                want = 0.0; /* +0.0, as prox_wrap gives */
            assert_memory_equal(&got, &want, sizeof got);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(views_constructors_describe_the_memory),
        cmocka_unit_test(views_f64_packed_structs_and_arrays_agree_with_oracle),
        cmocka_unit_test(views_f32_packed_structs_and_arrays_agree_with_oracle),
        cmocka_unit_test(views_negative_stride_reads_points_backwards),
        cmocka_unit_test(views_zero_stride_repeats_one_point),
        cmocka_unit_test(views_points_and_queries_may_differ_in_scalar_type),
        cmocka_unit_test(views_grid_object_reads_structs),
        cmocka_unit_test(views_wrap_matches_the_oracle),
    };
    return cmocka_run_group_tests_name("views", tests, NULL, NULL);
}
