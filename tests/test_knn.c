/* test_knn.c: k nearest neighbours (prox/knn.h) against the full-sort
 * oracle (knn_oracle.c) on every input class of inputs.c, in 2D and 3D,
 * float and double, open and periodic, self and second-set queries, with
 * and without max_radius, several k (k > n too), at 1, 2 and 3 threads:
 * identical indices, distances and counts; plus large clustered and wide
 * 2D inputs, the kept index, the callback, strided views and bad input.
 * The suite runs again at every SIMD level (tests/CMakeLists.txt). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "knn_oracle.h"

/* Query rows compared with the oracle per case (all of them when fewer). */
#define SAMPLED 24

typedef struct sample {
    int64_t rows[SAMPLED];
    int64_t count;
} sample;

/* Spread over the rows, first and last included. */
static sample sample_rows(int64_t rows)
{
    sample s = {.count = rows < SAMPLED ? rows : SAMPLED};
    for (int64_t t = 0; t < s.count; t++)
        s.rows[t] = s.count == 1 ? 0 : t * (rows - 1) / (s.count - 1);
    return s;
}

/* got's rows s.rows[] against want's rows 0.. (want->k >= got's k: the
 * first k of a sorted row are the k nearest). */
static void expect_rows(const char *context, const knn_rows *want, const sample *s,
                        const prox_knn_result *got, int k)
{
    for (int64_t t = 0; t < s->count; t++) {
        int64_t row = s->rows[t];
        int wc = want->counts[t] < k ? want->counts[t] : k;
        CHECK(got->counts[row] == wc, context, "row %lld: %d neighbours, expected %d",
              (long long)row, got->counts[row], wc);
        for (int c = 0; c < wc; c++) { /* the padding: expect_padding */
            prox_index wi = want->indices[t * want->k + c], gi = got->indices[row * k + c];
            double wd = want->distances[t * want->k + c], gd = got->distances[row * k + c];
            CHECK(gi == wi && gd == wd, context,
                  "row %lld entry %d: (%u, %.17g), expected (%u, %.17g)", (long long)row, c, gi,
                  gd, wi, wd);
        }
    }
}

static void expect_padding(const char *context, const prox_knn_result *got, int64_t n)
{
    for (int64_t r = 0; r < got->rows; r++)
        for (int c = got->counts[r]; c < got->k; c++)
            CHECK(got->indices[r * got->k + c] == (prox_index)n &&
                      got->distances[r * got->k + c] == INFINITY,
                  context, "row %lld entry %d is not padding (n = %lld)", (long long)r, c,
                  (long long)n);
}

static bool same_result(const prox_knn_result *a, const prox_knn_result *b)
{
    size_t entries = (size_t)(a->rows * a->k);
    return a->rows == b->rows && a->k == b->k &&
           !memcmp(a->indices, b->indices, entries * sizeof *a->indices) &&
           !memcmp(a->distances, b->distances, entries * sizeof *a->distances) &&
           !memcmp(a->counts, b->counts, (size_t)a->rows * sizeof *a->counts);
}

static prox_knn_desc knn_desc(int k, double max_radius, const double period[3], int threads)
{
    prox_knn_desc d = prox_default_knn_desc();
    d.k = k;
    d.max_radius = max_radius;
    d.threads = threads;
    for (int a = 0; a < 3; a++)
        d.period[a] = period ? period[a] : 0.0;
    return d;
}

/* One case, one query kind, one max_radius: each k of ks at one thread
 * and at threads[t] (2 or 3) against the oracle's rows, the threads byte
 * for byte. */
static void check_knn_case(const test_case *tc, bool second_set, double max_radius,
                           const int *ks, const int *threads, int nk)
{
    const cloud *q = second_set ? &tc->queries : NULL;
    int64_t rows = second_set ? tc->queries.count : tc->points.count;
    sample s = sample_rows(rows);
    int kmax = 0;
    for (int t = 0; t < nk; t++)
        kmax = ks[t] > kmax ? ks[t] : kmax;
    knn_rows want;
    oracle_knn_rows(&tc->points, q, s.rows, s.count, kmax, max_radius, tc->period, false, &want);
    prox_points points = test_case_points(tc), queries = test_case_queries(tc);
    char context[512], what[400];
    test_case_describe(tc, what, sizeof what);
    for (int t = 0; t < nk; t++) {
        prox_knn_result first;
        prox_knn_result_init(&first, NULL);
        for (int run = 0; run < 2; run++) {
            int th = run ? threads[t] : 1;
            snprintf(context, sizeof context, "%s %s k=%d max_radius=%g threads=%d", what,
                     second_set ? "queries" : "self", ks[t], max_radius, th);
            prox_knn_desc d = knn_desc(ks[t], max_radius, tc->period, th);
            prox_knn_result got;
            prox_knn_result_init(&got, NULL);
            prox_stats st;
            CHECK_STATUS(prox_knn(&points, second_set ? &queries : NULL, &d, &got, &st), PROX_OK,
                         context);
            CHECK(got.rows == rows && got.k == ks[t], context, "shape %lld x %d",
                  (long long)got.rows, got.k);
            CHECK(st.method != NULL, context, "no method named");
            expect_rows(context, &want, &s, &got, ks[t]);
            expect_padding(context, &got, tc->points.count);
            if (run == 0)
                first = got;
            else {
                CHECK(same_result(&first, &got), context, "differs from one thread");
                prox_knn_result_free(&got);
            }
        }
        prox_knn_result_free(&first);
    }
    knn_rows_free(&want);
}

/* k = 1, a few, more than a ring's worth, and beyond the sorted set's 48
 * (the heap; n + 2 > n on small inputs); each at 1 thread and at 2 or 3. */
static void check_knn_class(input_class cls)
{
    static const prox_scalar scalars[2] = {PROX_F64, PROX_F32};
    /* The search is the engine's, one copy per level (its distances in
     * vec_f64.h's lanes, its rank keys in vec.h's); floats reach it as
     * the same doubles, so the runs at each level (PROX_SIMD set) take
     * doubles only, to keep the suite's time. */
    int scalar_count = getenv("PROX_SIMD") ? 1 : 2;
    for (int dim = 2; dim <= 3; dim++)
        for (int sc = 0; sc < scalar_count; sc++)
            for (int p = 0; p < PERIODICITY_COUNT; p++) {
                test_case tc;
                test_case_make(&tc, cls, dim, scalars[sc], (periodicity)p);
                int n = (int)tc.points.count;
                int ks[4] = {1, 5, 17, n <= 200 ? n + 2 : 50};
                int threads[4] = {2, 3, 2, 3};
                for (int second = 0; second < 2; second++) {
                    check_knn_case(&tc, second, 0.0, ks, threads, 4);
                    check_knn_case(&tc, second, tc.radius, ks + 1, threads + 2, 2);
                }
                test_case_free(&tc);
            }
}

#define KNN_CLASS_TEST(name, cls)                                                          \
    static void knn_class_##name(void **state)                                             \
    {                                                                                      \
        (void)state;                                                                       \
        check_knn_class(cls);                                                              \
    }

KNN_CLASS_TEST(uniform, INPUT_UNIFORM)
KNN_CLASS_TEST(clustered, INPUT_CLUSTERED)
KNN_CLASS_TEST(duplicates, INPUT_DUPLICATES)
KNN_CLASS_TEST(lattice, INPUT_LATTICE)
KNN_CLASS_TEST(half_lattice, INPUT_HALF_LATTICE)
KNN_CLASS_TEST(decimal_lattice, INPUT_DECIMAL_LATTICE)
KNN_CLASS_TEST(negative, INPUT_NEGATIVE)
KNN_CLASS_TEST(mixed_sign, INPUT_MIXED_SIGN)
KNN_CLASS_TEST(huge_offset, INPUT_HUGE_OFFSET)
KNN_CLASS_TEST(empty, INPUT_EMPTY)
KNN_CLASS_TEST(single, INPUT_SINGLE)
KNN_CLASS_TEST(all_equal, INPUT_ALL_EQUAL)
KNN_CLASS_TEST(tiny_radius, INPUT_TINY_RADIUS)
KNN_CLASS_TEST(huge_radius, INPUT_HUGE_RADIUS)
KNN_CLASS_TEST(outlier, INPUT_OUTLIER)
KNN_CLASS_TEST(narrow_period, INPUT_NARROW_PERIOD)
KNN_CLASS_TEST(seam, INPUT_SEAM)

/* ---- larger inputs: clustered blobs, a wide 2D domain, lattices ---------- */

/* A large cloud's self query with k against the oracle on sampled rows;
 * returns the candidates per query the search examined. */
static double check_large(const cloud *c, int k, const double *period, const char *what)
{
    prox_points points = prox_points_f64(c->xyz, c->count, c->dim);
    prox_knn_desc d = knn_desc(k, 0.0, period, 2);
    prox_knn_result got;
    prox_knn_result_init(&got, NULL);
    prox_stats st;
    char context[256];
    snprintf(context, sizeof context, "%s N=%lld k=%d", what, (long long)c->count, k);
    CHECK_STATUS(prox_knn(&points, NULL, &d, &got, &st), PROX_OK, context);
    sample s = sample_rows(c->count);
    knn_rows want;
    oracle_knn_rows(c, NULL, s.rows, s.count, k, 0.0, period, false, &want);
    expect_rows(context, &want, &s, &got, k);
    knn_rows_free(&want);
    prox_knn_result_free(&got);
    return (double)st.candidates / (double)c->count;
}

/* 40 Gaussian blobs of sigma 0.004 in the unit cube. */
static void make_blobs(cloud *c, int dim, int64_t count, double sigma, uint64_t seed)
{
    rng r = rng_seeded(seed);
    double centre[40][3];
    for (int b = 0; b < 40; b++)
        for (int k = 0; k < 3; k++)
            centre[b][k] = rng_uniform(&r);
    cloud_alloc(c, dim, count);
    for (int64_t i = 0; i < count; i++) {
        int b = (int)rng_below(&r, 40);
        for (int k = 0; k < dim; k++) {
            double u1 = rng_uniform(&r) + 1e-300, u2 = rng_uniform(&r);
            cloud_point(c, i)[k] = centre[b][k] + sigma * sqrt(-2 * log(u1)) * cos(6.283185307 * u2);
        }
    }
}

static void knn_clustered_blobs(void **state)
{
    (void)state;
    cloud c;
    make_blobs(&c, 3, 40000, 0.004, 17);
    double per_query = check_large(&c, 16, NULL, "40 blobs 3D");
    /* never pathological: a cell sized from the mean density would hold
     * hundreds of points here and make each query examine thousands */
    CHECK(per_query < 40 * 16, "40 blobs 3D", "%g candidates a query", per_query);
    cloud_free(&c);
    make_blobs(&c, 2, 20000, 0.002, 18);
    check_large(&c, 8, NULL, "40 blobs 2D");
    cloud_free(&c);
}

/* Points on a sphere's surface in 3D: a 2D density in a 3D box. */
static void knn_surface(void **state)
{
    (void)state;
    cloud c;
    cloud_alloc(&c, 3, 20000);
    rng r = rng_seeded(5);
    for (int64_t i = 0; i < c.count; i++) {
        double z = 2 * rng_uniform(&r) - 1, t = 6.283185307 * rng_uniform(&r), s = sqrt(1 - z * z);
        double *p = cloud_point(&c, i);
        p[0] = s * cos(t);
        p[1] = s * sin(t);
        p[2] = z;
    }
    double per_query = check_large(&c, 10, NULL, "sphere surface");
    CHECK(per_query < 40 * 10, "sphere surface", "%g candidates a query", per_query);
    cloud_free(&c);
}

/* W2-like: 2D uniform over 2^20 x 2^20, and periodic. */
static void knn_wide_2d(void **state)
{
    (void)state;
    cloud c;
    rng r = rng_seeded(9);
    cloud_uniform(&c, 2, 30000, 0.0, 1048576.0, &r);
    check_large(&c, 8, NULL, "wide 2D");
    double period[3] = {1048576.0, 1048576.0, 0.0};
    check_large(&c, 8, period, "wide 2D periodic");
    cloud_free(&c);
}

/* Lattices: many equal distances (ties decide by index) and points on
 * cell faces for any cell size that divides the spacing. */
static void knn_lattices(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        int side = dim == 3 ? 14 : 48;
        cloud c;
        cloud_alloc(&c, dim, dim == 3 ? side * side * side : side * side);
        for (int64_t i = 0; i < c.count; i++) {
            int64_t rest = i;
            for (int k = 0; k < dim; k++) {
                cloud_point(&c, i)[k] = (double)(rest % side) * 0.25;
                rest /= side;
            }
        }
        double period[3] = {side * 0.25, side * 0.25, dim == 3 ? side * 0.25 : 0.0};
        for (int k = 1; k <= 33; k += 4) {
            check_large(&c, k, NULL, dim == 3 ? "lattice 3D" : "lattice 2D");
            check_large(&c, k, period, dim == 3 ? "lattice 3D periodic" : "lattice 2D periodic");
        }
        cloud_free(&c);
    }
}

/* k in the heap's range (above the sorted insertion's 48), and up to 1100. */
static void knn_large_k(void **state)
{
    (void)state;
    cloud c;
    rng r = rng_seeded(21);
    cloud_uniform(&c, 3, 3000, 0.0, 1.0, &r);
    check_large(&c, 49, NULL, "uniform 3D");
    check_large(&c, 1100, NULL, "uniform 3D");
    double period[3] = {1.0, 1.0, 1.0};
    check_large(&c, 300, period, "uniform 3D periodic");
    cloud_free(&c);
}

/* Every row of points' self query (queries NULL) or of the queries' against
 * the oracle's, at 1 and 2 threads, the two byte for byte. */
static void check_all_rows(const cloud *c, const cloud *queries, int k, const double *period,
                           const char *what)
{
    prox_points points = prox_points_f64(c->xyz, c->count, c->dim);
    prox_points qs = queries ? prox_points_f64(queries->xyz, queries->count, queries->dim)
                             : points;
    knn_rows want;
    oracle_knn(c, queries, k, 0.0, period, false, &want);
    prox_knn_result first;
    prox_knn_result_init(&first, NULL);
    for (int th = 1; th <= 2; th++) {
        char context[256];
        snprintf(context, sizeof context, "%s %dD k=%d %s%s threads=%d", what, c->dim, k,
                 queries ? "queries" : "self", period ? " periodic" : "", th);
        prox_knn_desc d = knn_desc(k, 0.0, period, th);
        prox_knn_result got;
        prox_knn_result_init(&got, NULL);
        CHECK_STATUS(prox_knn(&points, queries ? &qs : NULL, &d, &got, NULL), PROX_OK, context);
        sample s = {.count = 0};
        knn_rows part = want;
        for (int64_t r0 = 0; r0 < want.rows; r0 += SAMPLED) { /* every row, SAMPLED at a time */
            s.count = want.rows - r0 < SAMPLED ? want.rows - r0 : SAMPLED;
            for (int64_t t = 0; t < s.count; t++)
                s.rows[t] = r0 + t;
            part.indices = want.indices + r0 * want.k;
            part.distances = want.distances + r0 * want.k;
            part.counts = want.counts + r0;
            expect_rows(context, &part, &s, &got, k);
        }
        if (th == 1)
            first = got;
        else {
            CHECK(same_result(&first, &got), context, "differs from one thread");
            prox_knn_result_free(&got);
        }
    }
    prox_knn_result_free(&first);
    knn_rows_free(&want);
}

/* Squared distances equal, or equal in all but their last few bits: points
 * along the axes at radii 0.25 (1 + j 2^-44), j < 7, around a centre that
 * is itself a point (and the second set's query), among uniform ones. The
 * near block ranks its candidates by a key of 18 bits of the distance
 * (knn_search.c, rank_sort), so these collide there and must come out in
 * (distance, index) order all the same; exact ties go by index. */
static void knn_near_ties(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int periodic = 0; periodic < 2; periodic++) {
            cloud c, q;
            rng r = rng_seeded(31 + dim);
            cloud_uniform(&c, dim, 400, 0.0, 1.0, &r);
            for (int64_t i = 0; i < 300; i++) {
                double *p = cloud_point(&c, i);
                for (int k = 0; k < dim; k++)
                    p[k] = 0.5;
                if (i == 0)
                    continue; /* the centre */
                int axis = (int)(i % dim), sign = (int)(i / dim % 2) ? -1 : 1;
                p[axis] += sign * 0.25 * (1.0 + (double)(i % 7) * 0x1p-44);
            }
            cloud_alloc(&q, dim, 2);
            for (int k = 0; k < dim; k++) {
                cloud_point(&q, 0)[k] = 0.5;
                cloud_point(&q, 1)[k] = 0.5 + 0x1p-30;
            }
            double period[3] = {1.0, 1.0, dim == 3 ? 1.0 : 0.0};
            const double *pp = periodic ? period : NULL;
            int ks[3] = {5, 16, 40};
            for (int t = 0; t < 3; t++) {
                check_all_rows(&c, NULL, ks[t], pp, "near ties");
                check_all_rows(&c, &q, ks[t], pp, "near ties");
            }
            cloud_free(&q);
            cloud_free(&c);
        }
}

/* A cell of many duplicates: more candidates within any bound than the
 * near block ranks (64), so their queries take the best set's bounded
 * insertion; ties by index. k > n too. */
static void knn_many_duplicates(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        cloud c, q;
        rng r = rng_seeded(41 + dim);
        cloud_uniform(&c, dim, 500, 0.0, 1.0, &r);
        for (int64_t i = 100; i < 300; i++)
            for (int k = 0; k < dim; k++)
                cloud_point(&c, i)[k] = 0.3;
        cloud_alloc(&q, dim, 3);
        for (int k = 0; k < dim; k++) {
            cloud_point(&q, 0)[k] = 0.3;
            cloud_point(&q, 1)[k] = 0.3 + 1e-3;
            cloud_point(&q, 2)[k] = 0.9;
        }
        int ks[4] = {3, 16, 70, 510};
        for (int t = 0; t < 4; t++) {
            check_all_rows(&c, NULL, ks[t], NULL, "duplicates");
            check_all_rows(&c, &q, ks[t], NULL, "duplicates");
        }
        cloud_free(&q);
        cloud_free(&c);
    }
}

/* ---- faces of the API --------------------------------------------------- */

/* The kept index gives what the one-shot call gives, for any k. */
static void knn_index_matches_one_shot(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_CLUSTERED, 3, PROX_F64, PERIODIC_X_ONLY);
    prox_points points = test_case_points(&tc), queries = test_case_queries(&tc);
    prox_knn_desc d = knn_desc(8, 0.0, tc.period, 2);
    prox_knn_index *index = NULL;
    CHECK_STATUS(prox_knn_index_build(&points, &d, &index), PROX_OK, "build");
    assert_int_equal(prox_knn_index_count(index), tc.points.count);
    assert_int_equal(prox_knn_index_dim(index), 3);
    for (int k = 1; k <= 40; k += 13)
        for (int second = 0; second < 2; second++) {
            prox_knn_desc q = knn_desc(k, 0.0, NULL, 1);
            q.include_self = second == 0 && k == 14;
            prox_knn_result a, b;
            prox_knn_result_init(&a, NULL);
            prox_knn_result_init(&b, NULL);
            const prox_points *qs = second ? &queries : NULL;
            CHECK_STATUS(prox_knn_index_query(index, qs, &q, &a, NULL), PROX_OK, "index query");
            for (int t = 0; t < 3; t++)
                q.period[t] = tc.period[t];
            CHECK_STATUS(prox_knn(&points, qs, &q, &b, NULL), PROX_OK, "one shot");
            CHECK(same_result(&a, &b), "index", "k=%d second=%d differs", k, second);
            if (q.include_self)
                for (int64_t r = 0; r < a.rows; r++)
                    CHECK(a.distances[r * k] == 0.0, "include_self", "row %lld", (long long)r);
            prox_knn_result_free(&a);
            prox_knn_result_free(&b);
        }
    prox_knn_desc wrong = knn_desc(3, 0.0, NULL, 1);
    wrong.period[1] = 5.0;
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    CHECK_STATUS(prox_knn_index_query(index, NULL, &wrong, &r, NULL), PROX_ERR_INVALID,
                 "period mismatch");
    prox_knn_index_destroy(index);
    prox_knn_index_destroy(NULL);
    test_case_free(&tc);
}

typedef struct collected {
    prox_knn_result *want;
    int64_t calls, stop_after;
    bool same;
} collected;

static int collect(int64_t query, int count, const prox_index *indices, const double *distances,
                   void *user)
{
    collected *c = user;
    const prox_knn_result *w = c->want;
    c->same = c->same && count == w->counts[query] &&
              !memcmp(indices, w->indices + query * w->k, (size_t)count * sizeof *indices) &&
              !memcmp(distances, w->distances + query * w->k, (size_t)count * sizeof *distances);
    return ++c->calls == c->stop_after;
}

static void knn_callback(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_DUPLICATES, 2, PROX_F32, PERIODIC_ALL);
    prox_points points = test_case_points(&tc);
    prox_knn_desc d = knn_desc(7, tc.radius, tc.period, 3);
    prox_knn_result want;
    prox_knn_result_init(&want, NULL);
    CHECK_STATUS(prox_knn(&points, NULL, &d, &want, NULL), PROX_OK, "array");
    collected c = {.want = &want, .same = true};
    prox_stats st;
    CHECK_STATUS(prox_knn_each(&points, NULL, &d, collect, &c, &st), PROX_OK, "callback");
    assert_true(c.same);
    assert_int_equal(c.calls, tc.points.count);
    c = (collected){.want = &want, .same = true, .stop_after = 5};
    CHECK_STATUS(prox_knn_each(&points, NULL, &d, collect, &c, NULL), PROX_STOPPED, "stop");
    assert_int_equal(c.calls, 5);
    prox_knn_result_free(&want);
    test_case_free(&tc);
}

/* Structs with padding (AoS), separate arrays (SoA) and a negative
 * stride give the packed array's answer, float and double. */
typedef struct particle {
    double mass;
    double x, y, z;
    int tag;
} particle;

typedef struct particle32 {
    float x, y, z;
    char pad[20];
} particle32;

static void knn_strided_views(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_UNIFORM, 3, PROX_F64, PERIODIC_NONE);
    int64_t n = tc.points.count;
    particle *aos = calloc((size_t)n, sizeof *aos);
    particle32 *aos32 = calloc((size_t)n, sizeof *aos32);
    double *soa = malloc((size_t)(3 * n) * sizeof *soa), *reversed = malloc((size_t)(3 * n) * sizeof *reversed);
    float *packed32 = malloc((size_t)(3 * n) * sizeof *packed32);
    for (int64_t i = 0; i < n; i++) {
        const double *p = cloud_point(&tc.points, i);
        aos[i].x = p[0], aos[i].y = p[1], aos[i].z = p[2];
        for (int k = 0; k < 3; k++) {
            soa[k * n + i] = p[k];
            reversed[3 * (n - 1 - i) + k] = p[k];
            packed32[3 * i + k] = (float)p[k];
        }
        aos32[i].x = (float)p[0], aos32[i].y = (float)p[1], aos32[i].z = (float)p[2];
    }
    prox_knn_desc d = knn_desc(9, 0.0, NULL, 2);
    prox_points packed = test_case_points(&tc);
    prox_points views[3] = {
        prox_points_strided(&aos[0].x, n, 3, PROX_F64, sizeof *aos),
        prox_points_soa(soa, soa + n, soa + 2 * n, n, 3, PROX_F64),
        prox_points_strided(reversed + 3 * (n - 1), n, 3, PROX_F64, -3 * (ptrdiff_t)sizeof(double)),
    };
    prox_knn_result want, got;
    prox_knn_result_init(&want, NULL);
    prox_knn_result_init(&got, NULL);
    CHECK_STATUS(prox_knn(&packed, NULL, &d, &want, NULL), PROX_OK, "packed");
    for (int v = 0; v < 3; v++) {
        CHECK_STATUS(prox_knn(&views[v], NULL, &d, &got, NULL), PROX_OK, "view");
        CHECK(same_result(&want, &got), "views", "view %d differs", v);
    }
    prox_points f32 = prox_points_f32(packed32, n, 3);
    prox_points f32_aos = prox_points_strided(&aos32[0].x, n, 3, PROX_F32, sizeof *aos32);
    CHECK_STATUS(prox_knn(&f32, NULL, &d, &want, NULL), PROX_OK, "f32");
    CHECK_STATUS(prox_knn(&f32_aos, NULL, &d, &got, NULL), PROX_OK, "f32 aos");
    CHECK(same_result(&want, &got), "views", "f32 AoS differs");
    prox_knn_result_free(&want);
    prox_knn_result_free(&got);
    free(aos);
    free(aos32);
    free(soa);
    free(reversed);
    free(packed32);
    test_case_free(&tc);
}

static void knn_bad_input(void **state)
{
    (void)state;
    double xyz[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    prox_points p = prox_points_f64(xyz, 4, 3);
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    prox_knn_desc d = knn_desc(2, 0.0, NULL, 1);
    d.k = 0;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_INVALID, "k = 0");
    assert_non_null(strstr(prox_last_error(), "k is 0"));
    d.k = -3;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_INVALID, "k < 0");
    d.k = 2;
    d.max_radius = -1;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_INVALID, "max_radius < 0");
    d.max_radius = NAN;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_INVALID, "max_radius NaN");
    d.max_radius = 0;
    d.period[0] = -1;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_INVALID, "period < 0");
    d.period[0] = 0;
    CHECK_STATUS(prox_knn(&p, NULL, NULL, &r, NULL), PROX_ERR_INVALID, "NULL desc");
    CHECK_STATUS(prox_knn(&p, NULL, &d, NULL, NULL), PROX_ERR_INVALID, "NULL result");
    CHECK_STATUS(prox_knn(NULL, NULL, &d, &r, NULL), PROX_ERR_INVALID, "NULL points");
    CHECK_STATUS(prox_knn_each(&p, NULL, &d, NULL, NULL, NULL), PROX_ERR_INVALID, "NULL fn");
    prox_points p2 = prox_points_f64(xyz, 6, 2);
    CHECK_STATUS(prox_knn(&p, &p2, &d, &r, NULL), PROX_ERR_INVALID, "dims differ");
    d.period[2] = 1.0;
    CHECK_STATUS(prox_knn(&p2, NULL, &d, &r, NULL), PROX_ERR_INVALID, "z period in 2D");
    d.period[2] = 0.0;
    xyz[4] = NAN;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_DATA, "NaN point");
    assert_non_null(strstr(prox_last_error(), "point 1"));
    CHECK_STATUS(prox_knn(&p2, &p2, &d, &r, NULL), PROX_ERR_DATA, "NaN query");
    xyz[4] = INFINITY;
    CHECK_STATUS(prox_knn(&p, NULL, &d, &r, NULL), PROX_ERR_DATA, "inf point");
    xyz[4] = 0;
    double huge[6] = {-1e308, 0, 0, 1e308, 0, 0};
    prox_points h = prox_points_f64(huge, 2, 3);
    CHECK_STATUS(prox_knn(&h, NULL, &d, &r, NULL), PROX_ERR_RANGE, "extent overflows");
    prox_knn_index *x = NULL;
    d.k = 0;
    CHECK_STATUS(prox_knn_index_build(&p, &d, &x), PROX_ERR_INVALID, "index k = 0");
    assert_null(x);
    /* empty sets: empty results, or rows of padding */
    prox_points none = prox_points_f64(xyz, 0, 3);
    d.k = 3;
    CHECK_STATUS(prox_knn(&none, NULL, &d, &r, NULL), PROX_OK, "no points");
    assert_int_equal(r.rows, 0);
    CHECK_STATUS(prox_knn(&none, &p, &d, &r, NULL), PROX_OK, "no points, 4 queries");
    assert_int_equal(r.rows, 4);
    for (int64_t t = 0; t < 12; t++)
        assert_true(r.indices[t] == 0 && r.distances[t] == INFINITY);
    CHECK_STATUS(prox_knn(&p, &none, &d, &r, NULL), PROX_OK, "no queries");
    assert_int_equal(r.rows, 0);
    prox_points one = prox_points_f64(xyz, 1, 3);
    CHECK_STATUS(prox_knn(&one, NULL, &d, &r, NULL), PROX_OK, "one point");
    assert_int_equal(r.counts[0], 0);
    assert_int_equal(r.indices[0], 1);
    prox_knn_result_free(&r);
    prox_knn_result_free(NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1) /* a pattern of test names, for chasing one */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(knn_class_uniform),
        cmocka_unit_test(knn_class_clustered),
        cmocka_unit_test(knn_class_duplicates),
        cmocka_unit_test(knn_class_lattice),
        cmocka_unit_test(knn_class_half_lattice),
        cmocka_unit_test(knn_class_decimal_lattice),
        cmocka_unit_test(knn_class_negative),
        cmocka_unit_test(knn_class_mixed_sign),
        cmocka_unit_test(knn_class_huge_offset),
        cmocka_unit_test(knn_class_empty),
        cmocka_unit_test(knn_class_single),
        cmocka_unit_test(knn_class_all_equal),
        cmocka_unit_test(knn_class_tiny_radius),
        cmocka_unit_test(knn_class_huge_radius),
        cmocka_unit_test(knn_class_outlier),
        cmocka_unit_test(knn_class_narrow_period),
        cmocka_unit_test(knn_class_seam),
        cmocka_unit_test(knn_clustered_blobs),
        cmocka_unit_test(knn_surface),
        cmocka_unit_test(knn_wide_2d),
        cmocka_unit_test(knn_lattices),
        cmocka_unit_test(knn_large_k),
        cmocka_unit_test(knn_near_ties),
        cmocka_unit_test(knn_many_duplicates),
        cmocka_unit_test(knn_index_matches_one_shot),
        cmocka_unit_test(knn_callback),
        cmocka_unit_test(knn_strided_views),
        cmocka_unit_test(knn_bad_input),
    };
    return cmocka_run_group_tests_name("knn", tests, NULL, NULL);
}
