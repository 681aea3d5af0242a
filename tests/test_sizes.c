/* test_sizes.c: particles of different sizes (include/prox/sizes.h)
 * against this file's own brute force, written from the rules alone:
 * contact (r_i + r_j)^2, gather-scatter max(h_i, h_j)^2, type cutoffs
 * rc[t_i][t_j]^2, squared distance in double <= that and the threshold
 * positive; minimum images on periodic axes as tests/oracle.h says.
 * Radii spanning 1:1000, a few huge among many tiny, equal radii (the
 * pairs of prox_pairs at radius 2r, bit for bit), touching spheres, zero
 * radii, zero cutoffs, W7 in small with exact contacts, clusters far
 * apart (hashed cells), periodic axes, 2D and 3D, f64 and f32, every sink,
 * 1 to 3 threads, grid and brute force; bad input refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "oracle.h"
#include "prox/prox.h"
#include "rng.h"

typedef struct scene {
    const char *name;
    int dim;
    int64_t n;
    double *xyz;   /* dim per point */
    float *xyz32;  /* the same, rounded to float, when scalar is F32 */
    double *size;  /* radius or h */
    int32_t *type;
    prox_size_rule rule;
    int types;
    double *cutoff;
    double period[3];
    prox_scalar scalar;
} scene;

static scene scene_new(const char *name, int dim, int64_t n, prox_size_rule rule)
{
    scene s = {.name = name, .dim = dim, .n = n, .rule = rule, .scalar = PROX_F64};
    s.xyz = calloc((size_t)(3 * n + 1), sizeof *s.xyz);
    s.size = calloc((size_t)(n + 1), sizeof *s.size);
    s.type = calloc((size_t)(n + 1), sizeof *s.type);
    return s;
}

static void scene_free(scene *s)
{
    free(s->xyz);
    free(s->xyz32);
    free(s->size);
    free(s->type);
    free(s->cutoff);
}

/* The float copy the library reads (and the oracle widens back). */
static void scene_f32(scene *s)
{
    s->scalar = PROX_F32;
    s->xyz32 = calloc((size_t)(3 * s->n + 1), sizeof *s->xyz32);
    for (int64_t k = 0; k < s->dim * s->n; k++) {
        s->xyz32[k] = (float)s->xyz[k];
        s->xyz[k] = s->xyz32[k];
    }
}

static prox_points scene_points(const scene *s)
{
    return s->scalar == PROX_F32 ? prox_points_f32(s->xyz32, s->n, s->dim)
                                 : prox_points_f64(s->xyz, s->n, s->dim);
}

static prox_sizes scene_sizes(const scene *s)
{
    return s->rule == PROX_RULE_TYPES ? prox_sizes_types(s->type, s->types, s->cutoff)
                                      : prox_sizes_radii(s->size, s->rule);
}

/* ---- the oracle ---- */

static double oracle_delta(double a, double b, double L)
{
    if (L > 0) {
        a = oracle_wrap(a, L);
        b = oracle_wrap(b, L);
    }
    double d = a - b;
    if (L > 0 && d > L / 2)
        d -= L;
    else if (L > 0 && d < -L / 2)
        d += L;
    return d;
}

static bool oracle_pair(const scene *a, int64_t i, const scene *b, int64_t j)
{
    double d2 = 0;
    for (int k = 0; k < a->dim; k++) {
        double d = oracle_delta(a->xyz[a->dim * i + k], b->xyz[b->dim * j + k], a->period[k]);
        d2 += d * d;
    }
    double t;
    if (a->rule == PROX_RULE_CONTACT)
        t = a->size[i] + b->size[j];
    else if (a->rule == PROX_RULE_GATHER_SCATTER)
        t = fmax(a->size[i], b->size[j]);
    else
        t = a->cutoff[a->type[i] * a->types + b->type[j]];
    return t > 0 && d2 <= t * t;
}

/* Self pairs (queries NULL) or (q, j) pairs, sorted. */
static void oracle(const scene *points, const scene *queries, pair_list *out)
{
    pair_list_init(out);
    const scene *rows = queries ? queries : points;
    for (int64_t i = 0; i < rows->n; i++)
        for (int64_t j = queries ? 0 : i + 1; j < points->n; j++)
            if (oracle_pair(rows, i, points, j))
                pair_list_push(out, (prox_index)i, (prox_index)j);
}

/* ---- comparisons ---- */

static void expect_pairs(const char *what, const scene *s, const pair_list *want,
                         const prox_pair *got, int64_t count)
{
    if (count != want->count)
        fail_msg("%s (%s): %lld pairs, want %lld", what, s->name, (long long)count,
                 (long long)want->count);
    for (int64_t k = 0; k < count; k++)
        if (got[k].i != want->items[k].i || got[k].j != want->items[k].j)
            fail_msg("%s (%s): pair %lld is (%u, %u), want (%u, %u)", what, s->name,
                     (long long)k, got[k].i, got[k].j, want->items[k].i, want->items[k].j);
}

/* Lists of `rows` rows from the pairs (both directions when self). */
static void expect_lists(const char *what, const scene *s, const pair_list *want, int64_t rows,
                         bool self, const prox_lists *got)
{
    assert_int_equal(got->rows, rows);
    int64_t *fill = calloc((size_t)rows + 1, sizeof *fill);
    for (int64_t k = 0; k < want->count; k++) {
        fill[want->items[k].i]++;
        if (self)
            fill[want->items[k].j]++;
    }
    for (int64_t r = 0; r < rows; r++)
        if (got->offsets[r + 1] - got->offsets[r] != fill[r])
            fail_msg("%s (%s): row %lld holds %lld, want %lld", what, s->name, (long long)r,
                     (long long)(got->offsets[r + 1] - got->offsets[r]), (long long)fill[r]);
    pair_list all;
    pair_list_init(&all);
    for (int64_t k = 0; k < want->count; k++) {
        pair_list_push(&all, want->items[k].i, want->items[k].j);
        if (self)
            pair_list_push(&all, want->items[k].j, want->items[k].i);
    }
    pair_list_sort(&all);
    for (int64_t k = 0; k < all.count; k++)
        if (got->indices[k] != all.items[k].j)
            fail_msg("%s (%s): list entry %lld is %u, want %u", what, s->name, (long long)k,
                     got->indices[k], all.items[k].j);
    pair_list_free(&all);
    free(fill);
}

static int collect(prox_index i, prox_index j, void *user)
{
    pair_list_push(user, i, j);
    return 0;
}

static prox_status run(const scene *s, const scene *q, prox_algo algo, int threads,
                       prox_sink sink, prox_stats *stats)
{
    prox_grid_desc d = prox_default_grid_desc();
    memcpy(d.period, s->period, sizeof d.period);
    d.threads = threads;
    prox_points p = scene_points(s);
    prox_sizes z = scene_sizes(s);
    if (!q)
        return prox_sized_pairs(&p, &z, &d, algo, sink, stats);
    prox_points qp = scene_points(q);
    prox_sizes qz = scene_sizes(q);
    return prox_sized_query(&p, &z, &qp, &qz, &d, algo, sink, stats);
}

static bool points_small(const scene *s, const scene *q)
{
    return s->n * (q ? q->n : s->n) <= 2000 * 2000;
}

/* The kept sized grid's pairs (sorted buffer, lists, count) against the
 * oracle at the scene's positions. */
static void expect_sized_grid(const char *what, const scene *s, prox_sized_grid *g)
{
    pair_list want;
    oracle(s, NULL, &want);
    prox_pair_buffer b;
    prox_pair_buffer_init(&b, NULL);
    prox_stats st;
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_buffer(&b), &st), PROX_OK);
    expect_pairs(what, s, &want, b.pairs, b.count);
    assert_int_equal(st.pairs, want.count);
    assert_true(strncmp(st.method, "sized.", 6) == 0);
    prox_lists l;
    prox_lists_init(&l, NULL);
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_lists(&l), NULL), PROX_OK);
    expect_lists(what, s, &want, s->n, true, &l);
    prox_lists_free(&l);
    prox_pair_buffer_free(&b);
    pair_list_free(&want);
}

/* The scene through a kept sized grid: built, then moved three times (a
 * few points by a size, some by a tenth, the rest still; then a quarter
 * far), each against the oracle, on a copy of the scene's positions. */
static void check_sized_grid(const scene *s)
{
    scene m = *s;
    m.xyz = malloc((size_t)(3 * s->n + 1) * sizeof *m.xyz);
    memcpy(m.xyz, s->xyz, (size_t)(3 * s->n + 1) * sizeof *m.xyz);
    m.xyz32 = NULL;
    if (s->scalar == PROX_F32) {
        m.xyz32 = malloc((size_t)(3 * s->n + 1) * sizeof *m.xyz32);
        memcpy(m.xyz32, s->xyz32, (size_t)(3 * s->n + 1) * sizeof *m.xyz32);
    }
    double top = 0;
    for (int64_t i = 0; i < s->n; i++)
        top = s->size[i] > top ? s->size[i] : top;
    top = top > 0 ? top : 1;
    prox_grid_desc d = prox_default_grid_desc();
    memcpy(d.period, s->period, sizeof d.period);
    d.threads = 1 + (int)(s->n % 3);
    prox_sized_grid *g;
    assert_int_equal(prox_sized_grid_create(&d, &g), PROX_OK);
    prox_points p = scene_points(&m);
    prox_sizes z = scene_sizes(&m);
    prox_status built = prox_sized_grid_build(g, &p, &z);
    assert_int_equal(built, PROX_OK);
    expect_sized_grid("sized grid, built", &m, g);
    rng r = rng_seeded(4545 + (uint64_t)s->n);
    for (int step = 0; step < 3; step++) {
        for (int64_t i = 0; i < m.n; i++) {
            int64_t kind = rng_below(&r, 8);
            double by = step == 2 && kind < 2 ? 50 * top : kind == 0 ? top : kind < 3 ? top / 10 : 0;
            for (int k = 0; k < m.dim; k++) {
                double v = m.xyz[m.dim * i + k] + rng_range(&r, -by, by);
                if (m.scalar == PROX_F32) {
                    m.xyz32[m.dim * i + k] = (float)v;
                    v = m.xyz32[m.dim * i + k];
                }
                m.xyz[m.dim * i + k] = v;
            }
        }
        prox_stats st;
        assert_int_equal(prox_sized_grid_update(g, &p, &st), PROX_OK);
        assert_true(st.rebuilt);
        expect_sized_grid("sized grid, updated", &m, g);
    }
    prox_sized_grid_destroy(g);
    free(m.xyz);
    free(m.xyz32);
}

/* Every sink, both algorithms, 1 to 3 threads, against the oracle; the
 * unsorted buffer the same for every thread count. */
static void check_scene(const scene *s, const scene *q)
{
    pair_list want;
    oracle(s, q, &want);
    int64_t rows = q ? q->n : s->n;
    /* brute force on the small scenes only: the grid is the subject */
    for (int a = 0; a < (points_small(s, q) ? 2 : 1); a++) {
        prox_algo algo = a ? PROX_ALGO_BRUTE : PROX_ALGO_GRID;
        prox_pair_buffer first;
        prox_pair_buffer_init(&first, NULL);
        for (int threads = 1; threads <= 3; threads++) {
            prox_stats st;
            prox_pair_buffer b;
            prox_pair_buffer_init(&b, NULL);
            assert_int_equal(run(s, q, algo, threads, prox_sink_buffer(&b), &st), PROX_OK);
            expect_pairs("buffer", s, &want, b.pairs, b.count);
            assert_int_equal(st.pairs, want.count);
            assert_non_null(st.method);

            prox_pair_buffer u;
            prox_pair_buffer_init(&u, NULL);
            assert_int_equal(run(s, q, algo, threads, prox_sink_unsorted(prox_sink_buffer(&u)),
                                 NULL),
                             PROX_OK);
            if (threads == 1) {
                prox_pair_buffer_reserve(&first, u.count);
                if (u.count > 0) /* an empty buffer may hold no array */
                    memcpy(first.pairs, u.pairs, (size_t)u.count * sizeof *u.pairs);
                first.count = u.count;
            } else if (u.count != first.count ||
                       (u.count > 0 &&
                        memcmp(u.pairs, first.pairs, (size_t)u.count * sizeof *u.pairs) != 0)) {
                fail_msg("unsorted (%s): %d threads differ from 1", s->name, threads);
            }
            if (u.count > 0)
                qsort(u.pairs, (size_t)u.count, sizeof *u.pairs, compare_pairs);
            expect_pairs("unsorted", s, &want, u.pairs, u.count);

            prox_lists l;
            prox_lists_init(&l, NULL);
            assert_int_equal(run(s, q, algo, threads, prox_sink_lists(&l), NULL), PROX_OK);
            expect_lists("lists", s, &want, rows, q == NULL, &l);

            prox_stats cs;
            assert_int_equal(run(s, q, algo, threads, prox_sink_count(), &cs), PROX_OK);
            assert_int_equal(cs.pairs, want.count);

            pair_list got;
            pair_list_init(&got);
            assert_int_equal(run(s, q, algo, threads, prox_sink_callback(collect, &got), NULL),
                             PROX_OK);
            pair_list_sort(&got);
            expect_pairs("callback", s, &want, got.items, got.count);
            pair_list_free(&got);
            prox_lists_free(&l);
            prox_pair_buffer_free(&u);
            prox_pair_buffer_free(&b);
        }
        prox_pair_buffer_free(&first);
    }
    pair_list_free(&want);
    if (!q)
        check_sized_grid(s);
}

/* ---- scenes ---- */

/* Uniform in a cube of `side`, radii log-uniform over [lo, hi]. */
static scene polydisperse(const char *name, int dim, int64_t n, double side, double lo, double hi,
                          prox_size_rule rule, uint64_t seed)
{
    scene s = scene_new(name, dim, n, rule);
    rng r = rng_seeded(seed);
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < dim; k++)
            s.xyz[dim * i + k] = rng_range(&r, 0, side);
        s.size[i] = lo * exp(log(hi / lo) * rng_uniform(&r));
    }
    return s;
}

static void scene_periodic(scene *s, double L)
{
    for (int k = 0; k < s->dim; k++)
        s->period[k] = L;
}

static void radii_spanning_1_to_1000(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        scene s = polydisperse("1:1000", dim, 1500, dim == 3 ? 400.0 : 2000.0, 0.05, 50.0,
                               PROX_RULE_CONTACT, 11 + (uint64_t)dim);
        check_scene(&s, NULL);
        s.rule = PROX_RULE_GATHER_SCATTER;
        s.name = "1:1000 gather-scatter";
        check_scene(&s, NULL);
        scene_f32(&s);
        s.name = "1:1000 gather-scatter f32";
        check_scene(&s, NULL);
        scene_free(&s);
    }
}

/* A few huge spheres among many tiny ones; more than 4096 points, so that
 * several threads split the work into chunks. */
static void few_huge_among_many_tiny(void **state)
{
    (void)state;
    scene s = polydisperse("huge among tiny", 3, 5000, 100.0, 0.3, 0.6, PROX_RULE_CONTACT, 5);
    for (int64_t i = 0; i < 5; i++)
        s.size[i * 997] = 15.0 + (double)i;
    check_scene(&s, NULL);
    scene_periodic(&s, 100.0);
    s.name = "huge among tiny, periodic";
    check_scene(&s, NULL);
    scene_free(&s);
}

/* Equal radii: exactly the pairs of prox_pairs at radius 2r (and h), at
 * every sink order, on a scene with pairs at distance exactly 2r. */
static void equal_radii_give_the_single_radius_answer(void **state)
{
    (void)state;
    for (int rule = 0; rule < 2; rule++) {
        scene s = scene_new("equal radii", 3, 1200, (prox_size_rule)rule);
        rng r = rng_seeded(3);
        double radius = 0.375; /* 2r = 0.75: lattice neighbours at exactly 2r */
        for (int64_t i = 0; i < s.n; i++) {
            for (int k = 0; k < 3; k++)
                s.xyz[3 * i + k] = 0.75 * (double)rng_below(&r, 12);
            s.size[i] = rule == PROX_RULE_CONTACT ? radius : 2 * radius;
        }
        check_scene(&s, NULL);
        prox_points p = scene_points(&s);
        prox_grid_desc d = prox_default_grid_desc();
        d.radius = 2 * radius;
        prox_pair_buffer want, got;
        prox_pair_buffer_init(&want, NULL);
        prox_pair_buffer_init(&got, NULL);
        assert_int_equal(prox_pairs(&p, &d, PROX_ALGO_GRID,
                                    prox_sink_unsorted(prox_sink_buffer(&want)), NULL),
                         PROX_OK);
        prox_sizes z = scene_sizes(&s);
        prox_stats st;
        assert_int_equal(prox_sized_pairs(&p, &z, &d, PROX_ALGO_GRID,
                                          prox_sink_unsorted(prox_sink_buffer(&got)), &st),
                         PROX_OK);
        assert_string_equal(st.method, "sized.uniform");
        assert_int_equal(got.count, want.count);
        assert_memory_equal(got.pairs, want.pairs, (size_t)got.count * sizeof *got.pairs);
        assert_true(got.count > 1000);
        prox_pair_buffer_free(&want);
        prox_pair_buffer_free(&got);
        scene_free(&s);
    }
}

/* Pairs at distance exactly r_i + r_j (integer triangles, dyadic radii)
 * touch; a hair further (the next radius down) do not. */
static void touching_spheres(void **state)
{
    (void)state;
    scene s = scene_new("touching", 3, 400, PROX_RULE_CONTACT);
    rng r = rng_seeded(17);
    for (int64_t i = 0; i < s.n; i += 2) {
        double base[3] = {40.0 * (double)(i % 20), 40.0 * (double)(i / 20), 3.0};
        /* (3, 4, 0) or (0, 0, 5) or (2, 3, 6): distance 5, 5, 7 */
        static const double offset[3][3] = {{3, 4, 0}, {0, 0, 5}, {2, 3, 6}};
        static const double length[3] = {5, 5, 7};
        int o = (int)rng_below(&r, 3);
        double ri = 0.25 * (double)(1 + rng_below(&r, 4 * (int64_t)length[o] - 2));
        for (int k = 0; k < 3; k++) {
            s.xyz[3 * i + k] = base[k];
            s.xyz[3 * (i + 1) + k] = base[k] + offset[o][k];
        }
        s.size[i] = ri;
        s.size[i + 1] = length[o] - ri;
        if (rng_below(&r, 2))
            s.size[i + 1] = nextafter(s.size[i + 1], 0);
    }
    pair_list want;
    oracle(&s, NULL, &want);
    assert_true(want.count > 50 && want.count < 200);
    pair_list_free(&want);
    check_scene(&s, NULL);
    scene_free(&s);
}

/* Two spheres touching at exactly the largest interaction of their
 * classes, each the other class's extreme point, along every axis, on a
 * (3, 4) diagonal and across a periodic face: the query boxes must reach
 * exactly that far (and a hair less does not touch). */
static void touching_at_class_extremes(void **state)
{
    (void)state;
    /* 1.25 and 40 fall in two classes (five powers of two a class) */
    static const double radii[3][2] = {{1.25, 40.0}, {40.0, 40.0}, {1.25, 1.25}};
    for (int rr = 0; rr < 3; rr++)
        for (int dir = 0; dir < 5; dir++)
            for (int hair = 0; hair < 2; hair++) {
                scene s = scene_new("touching extremes", 3, 4, PROX_RULE_CONTACT);
                double t = radii[rr][0] + radii[rr][1];
                double off[3] = {0, 0, 0};
                if (dir < 3)
                    off[dir] = t;
                else
                    off[0] = 3 * (t / 5), off[1] = 4 * (t / 5); /* t / 5: 8.25, 16, 0.5 */
                s.size[0] = radii[rr][0];
                s.size[1] = radii[rr][1];
                if (hair)
                    s.size[1] = nextafter(s.size[1], 0);
                s.size[2] = 1.25; /* far away, so that both sizes exist in both scenes */
                s.size[3] = 40.0;
                for (int k = 0; k < 3; k++) {
                    s.xyz[k] = 10.0;
                    s.xyz[3 + k] = 10.0 + off[k];
                    s.xyz[6 + k] = 200.0;
                    s.xyz[9 + k] = 300.0;
                }
                if (dir == 4) { /* across the face x = 0 of a period of 500 */
                    s.period[0] = 500.0;
                    s.xyz[0] = 0.25;
                    s.xyz[3] = 500.0 - (t - 0.25);
                    s.xyz[4] = 10.0;
                }
                pair_list want;
                oracle(&s, NULL, &want);
                if (!hair) /* with a hair less the sum may still round to t */
                    assert_int_equal(want.count, 1);
                pair_list_free(&want);
                check_scene(&s, NULL);
                scene_free(&s);
            }
}

/* Radius 0 beside a positive one pairs at that radius; two zeros never,
 * coincident or not. */
static void zero_radii(void **state)
{
    (void)state;
    scene s = polydisperse("zero radii", 3, 900, 20.0, 0.5, 2.0, PROX_RULE_CONTACT, 23);
    for (int64_t i = 0; i < s.n; i += 3)
        s.size[i] = 0;
    for (int k = 0; k < 3; k++)
        s.xyz[3 * 3 + k] = s.xyz[k]; /* points 0 and 3 coincide, both of radius 0 */
    check_scene(&s, NULL);
    for (int64_t i = 0; i < s.n; i++)
        s.size[i] = 0;
    s.name = "all radii zero";
    check_scene(&s, NULL);
    scene_free(&s);
}

/* W7 in small (radii log-uniform over [1, 100], volume fraction 0.3),
 * with pairs touching at exactly r_i + r_j across the two classes and
 * within each (a (3, 4) diagonal from an integer point, radii 1.25 and
 * 1.25 (1 + 3j) - 1.25 so that every step is exact), half of them a hair
 * apart; open and periodic, 3D and 2D (areas at the same fraction). */
static void w7_in_small(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        int64_t n = 2400;
        double mean = dim == 3 ? 4.0 / 3.0 * 3.14159265358979 * (1e6 - 1) / (3 * log(100.0))
                               : 3.14159265358979 * (1e4 - 1) / (2 * log(100.0));
        double side = pow((double)n * mean / 0.3, 1.0 / dim);
        scene s = polydisperse("W7 small", dim, n, side, 1.0, 100.0, PROX_RULE_CONTACT, 61);
        rng r = rng_seeded(67);
        for (int64_t i = 0; i + 1 < 160; i += 2) {
            int64_t j = 1 + rng_below(&r, 26);
            s.size[i] = i % 4 ? 1.25 * (double)(1 + 3 * j) - 40.0 : 1.25;
            if (!(s.size[i] > 0))
                s.size[i] = 1.25;
            double t = 1.25 * (double)(1 + 3 * j);
            s.size[i + 1] = t - s.size[i];
            for (int k = 0; k < dim; k++)
                s.xyz[dim * i + k] = floor(s.xyz[dim * i + k] * 0.9);
            s.xyz[dim * (i + 1)] = s.xyz[dim * i] + 3 * (t / 5);
            s.xyz[dim * (i + 1) + 1] = s.xyz[dim * i + 1] + 4 * (t / 5);
            if (dim == 3)
                s.xyz[dim * (i + 1) + 2] = s.xyz[dim * i + 2];
            if (i % 8 == 6)
                s.size[i + 1] = nextafter(s.size[i + 1], 0);
        }
        pair_list want;
        oracle(&s, NULL, &want);
        assert_true(want.count > 100);
        pair_list_free(&want);
        check_scene(&s, NULL);
        scene_periodic(&s, side);
        s.name = "W7 small, periodic";
        check_scene(&s, NULL);
        scene_free(&s);
    }
}

/* Clusters far apart in a wide box: classes whose dense cells would be
 * too coarse take hashed cells; open and periodic. */
static void clustered_classes(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        scene s = polydisperse("clusters", dim, 1800, 30.0, 0.05, 8.0, PROX_RULE_CONTACT, 71);
        for (int64_t i = 0; i < s.n; i++)
            for (int k = 0; k < dim; k++)
                s.xyz[dim * i + k] += (double)(i % 3) * 4.0e4 + (k == 1 ? (double)(i % 2) * 1e3 : 0);
        check_scene(&s, NULL);
        s.rule = PROX_RULE_GATHER_SCATTER;
        s.name = "clusters gather-scatter";
        check_scene(&s, NULL);
        scene_periodic(&s, 1.0e5);
        s.rule = PROX_RULE_CONTACT;
        s.name = "clusters, periodic";
        check_scene(&s, NULL);
        scene_free(&s);
    }
}

/* Members near both ends of the doubles (a box whose span overflows)
 * beside an ordinary cluster. */
static void extreme_coordinates(void **state)
{
    (void)state;
    scene s = polydisperse("extremes", 3, 600, 20.0, 0.1, 5.0, PROX_RULE_CONTACT, 73);
    for (int64_t i = 0; i < 12; i++)
        for (int k = 0; k < 3; k++)
            s.xyz[3 * i + k] = (i % 2 ? 1.0 : -1.0) * 0x1.8p1023 - (double)(i / 2) * 0x1p980;
    check_scene(&s, NULL);
    scene_free(&s);
}

/* Types: cutoffs over 1:20, one type pair switched off (0), one type
 * that reaches nothing; periodic too. */
static scene typed(const char *name, int dim, int64_t n, double side, uint64_t seed)
{
    scene s = scene_new(name, dim, n, PROX_RULE_TYPES);
    s.types = 4;
    s.cutoff = calloc(16, sizeof *s.cutoff);
    static const double c[4][4] = {{0.5, 1.0, 0.0, 0}, {1.0, 10.0, 2.5, 0}, {0.0, 2.5, 0.0, 0},
                                   {0, 0, 0, 0}};
    memcpy(s.cutoff, c, sizeof c);
    rng r = rng_seeded(seed);
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < dim; k++)
            s.xyz[dim * i + k] = rng_range(&r, -side / 4, side); /* some outside [0, L) */
        s.type[i] = (int32_t)rng_below(&r, 4);
    }
    return s;
}

static void types_with_zero_cutoffs(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        scene s = typed("types", dim, 1500, dim == 3 ? 60.0 : 250.0, 29);
        check_scene(&s, NULL);
        scene_periodic(&s, dim == 3 ? 60.0 : 250.0);
        s.name = "types, periodic";
        check_scene(&s, NULL);
        scene_free(&s);
    }
}

/* Periodic with one axis open, radii over 1:100, points on the faces. */
static void periodic_polydisperse(void **state)
{
    (void)state;
    scene s = polydisperse("periodic 1:100", 3, 1500, 64.0, 0.1, 10.0, PROX_RULE_CONTACT, 31);
    s.period[0] = 64.0;
    s.period[2] = 64.0;
    for (int64_t i = 0; i < 60; i++)
        s.xyz[3 * i] = (i % 3) * 64.0 - (i % 2) * 0.5; /* 0, 64 (wraps to 0), ... */
    check_scene(&s, NULL);
    s.rule = PROX_RULE_GATHER_SCATTER;
    s.name = "periodic 1:100 gather-scatter";
    check_scene(&s, NULL);
    scene_free(&s);
}

/* Ball queries of particles against particles: every rule. */
static void queries_with_sizes(void **state)
{
    (void)state;
    scene s = polydisperse("query points", 3, 1200, 50.0, 0.1, 5.0, PROX_RULE_CONTACT, 37);
    scene q = polydisperse("queries", 3, 700, 50.0, 0.0 + 0.01, 8.0, PROX_RULE_CONTACT, 41);
    check_scene(&s, &q);
    s.rule = q.rule = PROX_RULE_GATHER_SCATTER;
    check_scene(&s, &q);
    scene_periodic(&s, 50.0);
    scene_periodic(&q, 50.0);
    check_scene(&s, &q);
    scene_free(&s);
    scene_free(&q);
    scene t = typed("typed points", 3, 1000, 40.0, 43);
    scene tq = typed("typed queries", 3, 600, 40.0, 47);
    check_scene(&t, &tq);
    scene_free(&t);
    scene_free(&tq);
}

/* A narrow spread takes one grid, a wide one the classes. */
static void planner_names_its_choice(void **state)
{
    (void)state;
    scene narrow = polydisperse("narrow", 3, 500, 30.0, 1.0, 1.9, PROX_RULE_CONTACT, 53);
    scene wide = polydisperse("wide", 3, 500, 30.0, 0.1, 5.0, PROX_RULE_CONTACT, 59);
    prox_stats st;
    assert_int_equal(run(&narrow, NULL, PROX_ALGO_GRID, 1, prox_sink_count(), &st), PROX_OK);
    assert_string_equal(st.method, "sized.grid");
    assert_int_equal(run(&wide, NULL, PROX_ALGO_GRID, 1, prox_sink_count(), &st), PROX_OK);
    assert_string_equal(st.method, "sized.classes");
    assert_int_equal(run(&wide, NULL, PROX_ALGO_BRUTE, 1, prox_sink_count(), &st), PROX_OK);
    assert_string_equal(st.method, "sized.brute");
    scene_free(&narrow);
    scene_free(&wide);
}

static void empty_and_single(void **state)
{
    (void)state;
    for (int64_t n = 0; n <= 1; n++) {
        scene s = polydisperse("tiny", 3, n, 1.0, 0.5, 5.0, PROX_RULE_CONTACT, 61);
        check_scene(&s, NULL);
        check_scene(&s, &s);
        scene_free(&s);
    }
}

/* ---- bad input ---- */

static prox_status sized_status(const scene *s)
{
    return run(s, NULL, PROX_ALGO_GRID, 1, prox_sink_count(), NULL);
}

static void bad_sizes_are_refused(void **state)
{
    (void)state;
    scene s = polydisperse("bad", 3, 10, 10.0, 0.5, 1.0, PROX_RULE_CONTACT, 67);
    s.size[4] = -1;
    assert_int_equal(sized_status(&s), PROX_ERR_DATA);
    assert_non_null(strstr(prox_last_error(), "radius 4 is -1"));
    s.size[4] = NAN;
    assert_int_equal(sized_status(&s), PROX_ERR_DATA);
    s.size[4] = INFINITY;
    assert_int_equal(sized_status(&s), PROX_ERR_DATA);
    s.size[4] = 1e-200;
    assert_int_equal(sized_status(&s), PROX_ERR_RANGE);
    s.size[4] = 1.0;
    s.period[0] = 3.0; /* twice the largest radius, 2, is not below 1.5 */
    assert_int_equal(sized_status(&s), PROX_ERR_INVALID);
    assert_non_null(strstr(prox_last_error(), "half the period"));
    s.period[0] = 0;
    s.xyz[7] = NAN; /* a bad coordinate, on the class path and the uniform one */
    assert_int_equal(sized_status(&s), PROX_ERR_DATA);
    for (int64_t i = 0; i < s.n; i++)
        s.size[i] = 1.0;
    assert_int_equal(sized_status(&s), PROX_ERR_DATA);
    assert_int_equal(run(&s, NULL, PROX_ALGO_BRUTE, 1, prox_sink_count(), NULL), PROX_ERR_DATA);
    s.xyz[7] = 1.0;
    s.rule = (prox_size_rule)7;
    assert_int_equal(sized_status(&s), PROX_ERR_INVALID);
    scene_free(&s);

    scene t = typed("bad types", 3, 10, 10.0, 71);
    t.type[6] = 4;
    assert_int_equal(sized_status(&t), PROX_ERR_DATA);
    assert_non_null(strstr(prox_last_error(), "point 6 is 4"));
    t.type[6] = -1;
    assert_int_equal(sized_status(&t), PROX_ERR_DATA);
    t.type[6] = 0;
    t.cutoff[1 * 4 + 2] = 2.0; /* cutoff[2][1] stays 2.5 */
    assert_int_equal(sized_status(&t), PROX_ERR_INVALID);
    assert_non_null(strstr(prox_last_error(), "not symmetric"));
    t.cutoff[1 * 4 + 2] = 2.5;
    t.cutoff[0] = NAN;
    assert_int_equal(sized_status(&t), PROX_ERR_INVALID);
    t.cutoff[0] = 0.5;
    t.types = 0;
    assert_int_equal(sized_status(&t), PROX_ERR_INVALID);
    t.types = 4;
    assert_int_equal(sized_status(&t), PROX_OK);
    prox_points p = scene_points(&t);
    prox_grid_desc d = prox_default_grid_desc();
    assert_int_equal(prox_sized_pairs(&p, NULL, &d, PROX_ALGO_GRID, prox_sink_count(), NULL),
                     PROX_ERR_INVALID);
    prox_sizes z = scene_sizes(&t);
    assert_int_equal(prox_sized_pairs(&p, &z, &d, PROX_ALGO_HIERARCHICAL, prox_sink_count(), NULL),
                     PROX_ERR_INVALID);
    prox_sizes radii = prox_sizes_radii(t.size, PROX_RULE_CONTACT);
    assert_int_equal(prox_sized_query(&p, &z, &p, &radii, &d, PROX_ALGO_GRID, prox_sink_count(),
                                      NULL),
                     PROX_ERR_INVALID); /* the queries' rule differs */
    scene_free(&t);
}

/* ---- moving particles: sized skin lists ---- */

/* Every point moved by up to `step` along each axis. */
static void scene_move(scene *s, rng *r, double step)
{
    for (int64_t k = 0; k < s->dim * s->n; k++)
        s->xyz[k] += rng_range(r, -step, 2 * step);
}

/* One step of a skin list against the oracle (buffer and lists); returns
 * stats.rebuilt. */
static bool skin_step(prox_sized_skin_list *l, const scene *s)
{
    pair_list want;
    oracle(s, NULL, &want);
    prox_points p = scene_points(s);
    prox_sizes z = scene_sizes(s);
    prox_pair_buffer b;
    prox_pair_buffer_init(&b, NULL);
    prox_stats st;
    assert_int_equal(prox_sized_skin_list_pairs(l, &p, &z, prox_sink_buffer(&b), &st), PROX_OK);
    expect_pairs("skin list", s, &want, b.pairs, b.count);
    assert_int_equal(st.pairs, want.count);
    assert_true(st.candidates >= st.pairs);
    bool rebuilt = st.rebuilt;
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    assert_int_equal(prox_sized_skin_list_pairs(l, &p, &z, prox_sink_lists(&lists), &st),
                     PROX_OK);
    assert_false(st.rebuilt); /* nothing moved since */
    expect_lists("skin list lists", s, &want, s->n, true, &lists);
    prox_lists_free(&lists);
    prox_pair_buffer_free(&b);
    pair_list_free(&want);
    return rebuilt;
}

/* Steps of random motion: exact at every step, rebuilt at the first, and
 * rebuilt at some later steps but not at all (skin / 2 reached). */
static void skin_run(scene *s, double skin, double step, int threads)
{
    prox_grid_desc d = prox_default_grid_desc();
    memcpy(d.period, s->period, sizeof d.period);
    d.threads = threads;
    prox_sized_skin_list *l = NULL;
    assert_int_equal(prox_sized_skin_list_create(&d, skin, &l), PROX_OK);
    rng r = rng_seeded(77);
    int rebuilds = 0;
    for (int t = 0; t < 14; t++) {
        bool rebuilt = skin_step(l, s);
        if (t == 0)
            assert_true(rebuilt);
        rebuilds += rebuilt;
        scene_move(s, &r, step);
    }
    if (!(rebuilds > 1 && rebuilds < 14))
        fail_msg("skin list (%s): %d rebuilds in 14 steps", s->name, rebuilds);
    prox_sized_skin_list_destroy(l);
}

static void skin_lists_of_moving_particles(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        scene s = polydisperse("skin 1:100", dim, 900, dim == 3 ? 60.0 : 300.0, 0.1, 10.0,
                               PROX_RULE_CONTACT, 41 + (uint64_t)dim);
        skin_run(&s, 1.0, 0.12, 1);
        s.rule = PROX_RULE_GATHER_SCATTER;
        s.name = "skin 1:100 gather-scatter, periodic";
        scene_periodic(&s, dim == 3 ? 60.0 : 300.0);
        skin_run(&s, 1.0, 0.12, 3);
        scene_free(&s);
        scene t = typed("skin types, periodic", dim, 900, dim == 3 ? 60.0 : 250.0, 43);
        scene_periodic(&t, dim == 3 ? 60.0 : 250.0);
        skin_run(&t, 0.8, 0.1, 2);
        scene_free(&t);
    }
}

/* A changed size rebuilds (a grown one must find its new pairs); a point
 * moved just beyond skin / 2 rebuilds, just within does not. */
static void skin_lists_rebuild_when_sizes_change(void **state)
{
    (void)state;
    scene s = polydisperse("skin sizes", 3, 600, 50.0, 0.1, 10.0, PROX_RULE_CONTACT, 47);
    prox_grid_desc d = prox_default_grid_desc();
    prox_sized_skin_list *l = NULL;
    assert_int_equal(prox_sized_skin_list_create(&d, 0.5, &l), PROX_OK);
    assert_true(skin_step(l, &s));
    assert_false(skin_step(l, &s));
    s.size[7] *= 3.0; /* grows far beyond the skin */
    assert_true(skin_step(l, &s));
    s.size[7] /= 3.0;
    s.size[8] = 0; /* zero radius */
    assert_true(skin_step(l, &s));
    assert_false(skin_step(l, &s));
    s.xyz[3 * 5] += 0.249;
    assert_false(skin_step(l, &s));
    s.xyz[3 * 5] += 0.002; /* 0.251 from the rebuild's position */
    assert_true(skin_step(l, &s));
    s.rule = PROX_RULE_GATHER_SCATTER; /* another rule */
    assert_true(skin_step(l, &s));
    s.n = 300; /* another count */
    assert_true(skin_step(l, &s));
    s.n = 0; /* no points, then one */
    assert_true(skin_step(l, &s));
    s.n = 1;
    assert_true(skin_step(l, &s));
    assert_false(skin_step(l, &s));
    s.n = 600;
    assert_true(skin_step(l, &s));
    prox_points p = scene_points(&s);
    double kept = s.size[3];
    s.size[3] = -1;
    prox_sizes z = scene_sizes(&s);
    assert_int_equal(prox_sized_skin_list_pairs(l, &p, &z, prox_sink_count(), NULL),
                     PROX_ERR_DATA);
    s.size[3] = kept;
    assert_false(skin_step(l, &s)); /* the refused call left the list as it was */
    prox_sized_skin_list_destroy(l);
    assert_int_equal(prox_sized_skin_list_create(&d, -1, &l), PROX_ERR_INVALID);
    assert_null(l);
    s.rule = PROX_RULE_CONTACT;
    d.period[0] = 20.0; /* 2 * 10 + skin is beyond half the period */
    assert_int_equal(prox_sized_skin_list_create(&d, 0.5, &l), PROX_OK);
    p = scene_points(&s);
    z = scene_sizes(&s);
    assert_int_equal(prox_sized_skin_list_pairs(l, &p, &z, prox_sink_count(), NULL),
                     PROX_ERR_INVALID);
    prox_sized_skin_list_destroy(l);
    scene_free(&s);
}

/* The kept sized grid: bad calls refused; the kept copy, not the
 * caller's array, answers. */
static void sized_grid_updates_and_refusals(void **state)
{
    (void)state;
    prox_grid_desc d = prox_default_grid_desc();
    prox_sized_grid *g = NULL;
    assert_int_equal(prox_sized_grid_create(NULL, &g), PROX_ERR_INVALID);
    assert_null(g);
    assert_int_equal(prox_sized_grid_create(&d, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_sized_grid_create(&d, &g), PROX_OK);
    double x[6] = {0, 0, 0, 1, 0, 0}, r[2] = {0.6, 0.6}, bad[2] = {0.6, -1};
    prox_points p = prox_points_f64(x, 2, 3), one = prox_points_f64(x, 1, 3);
    prox_sizes z = prox_sizes_radii(r, PROX_RULE_CONTACT);
    prox_sizes zb = prox_sizes_radii(bad, PROX_RULE_CONTACT);
    assert_int_equal(prox_sized_grid_update(g, &p, NULL), PROX_ERR_INVALID); /* not built */
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_count(), NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_sized_grid_build(g, &p, &zb), PROX_ERR_DATA);
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_count(), NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_sized_grid_build(g, &p, &z), PROX_OK);
    prox_stats st;
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_count(), &st), PROX_OK);
    assert_int_equal(st.pairs, 1);
    assert_int_equal(prox_sized_grid_update(g, &one, NULL), PROX_ERR_INVALID); /* count */
    x[3] = 5.0; /* the caller's array changed, not the kept copy */
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_count(), &st), PROX_OK);
    assert_int_equal(st.pairs, 1);
    x[3] = 1.3;
    assert_int_equal(prox_sized_grid_update(g, &p, &st), PROX_OK);
    assert_int_equal(prox_sized_grid_pairs(g, prox_sink_count(), &st), PROX_OK);
    assert_int_equal(st.pairs, 0);
    x[3] = NAN;
    assert_int_equal(prox_sized_grid_update(g, &p, NULL), PROX_ERR_DATA);
    prox_sized_grid_destroy(g);
    prox_sized_grid_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(radii_spanning_1_to_1000),
        cmocka_unit_test(few_huge_among_many_tiny),
        cmocka_unit_test(equal_radii_give_the_single_radius_answer),
        cmocka_unit_test(touching_spheres),
        cmocka_unit_test(touching_at_class_extremes),
        cmocka_unit_test(zero_radii),
        cmocka_unit_test(w7_in_small),
        cmocka_unit_test(clustered_classes),
        cmocka_unit_test(extreme_coordinates),
        cmocka_unit_test(types_with_zero_cutoffs),
        cmocka_unit_test(periodic_polydisperse),
        cmocka_unit_test(queries_with_sizes),
        cmocka_unit_test(planner_names_its_choice),
        cmocka_unit_test(empty_and_single),
        cmocka_unit_test(bad_sizes_are_refused),
        cmocka_unit_test(skin_lists_of_moving_particles),
        cmocka_unit_test(skin_lists_rebuild_when_sizes_change),
        cmocka_unit_test(sized_grid_updates_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
