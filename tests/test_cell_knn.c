/* test_cell_knn.c: prox_cell_knn against the suite's own image oracle
 * (cell_oracle.c, oracle_cell_knn) on random triclinic cells (angles
 * 30-120 degrees, general orientations), cells smaller than the k-th
 * distance (many images of each point, self-images), mixed periodicity,
 * no periodicity, 2D, unwrapped positions, points on faces, lattices whose
 * shells tie (the order by j, then S, decides), duplicates, f32 points,
 * second query sets, max_radius and include_self, at thread counts 1 and
 * 3; then bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_cases.h"
#include "check.h"
#include "rng.h"

typedef struct knn_case {
    double cell[3][3];
    bool pbc[3];
    int dim, k;
    int64_t n, nq;     /* nq < 0: a self query */
    double *x, *q;     /* packed, dim per point */
    double max_radius;
    bool include_self;
} knn_case;

static void check_rows(const prox_knn_result *got, const oracle_knn_images *want, int dim,
                       const char *context)
{
    CHECK(got->rows == want->rows && got->k == want->k, context, "rows %lld k %d, oracle %lld k %d",
          (long long)got->rows, got->k, (long long)want->rows, want->k);
    CHECK(got->shifts != NULL, context, "no shifts");
    for (int64_t i = 0; i < want->rows; i++) {
        CHECK(got->counts[i] == want->counts[i], context, "query %lld: %d neighbours, oracle %d",
              (long long)i, got->counts[i], want->counts[i]);
        for (int t = 0; t < want->k; t++) {
            int64_t at = i * want->k + t;
            CHECK(got->indices[at] == want->j[at], context, "query %lld rank %d: j %u, oracle %u",
                  (long long)i, t, got->indices[at], want->j[at]);
            CHECK(memcmp(&got->distances[at], &want->d[at], sizeof(double)) == 0, context,
                  "query %lld rank %d: d %.17g, oracle %.17g", (long long)i, t,
                  got->distances[at], want->d[at]);
            for (int a = 0; a < dim; a++)
                CHECK(got->shifts[at * dim + a] == want->S[at * dim + a], context,
                      "query %lld rank %d: S[%d] %d, oracle %d", (long long)i, t, a,
                      got->shifts[at * dim + a], want->S[at * dim + a]);
        }
    }
}

static prox_cell_knn_desc desc_of(const knn_case *c, int threads)
{
    prox_cell_knn_desc d = prox_default_cell_knn_desc();
    d.k = c->k;
    d.max_radius = c->max_radius;
    memcpy(d.cell, c->cell, sizeof d.cell);
    memcpy(d.pbc, c->pbc, sizeof d.pbc);
    d.include_self = c->include_self;
    d.threads = threads;
    return d;
}

/* Rounded to float and back, so that the oracle sees the f32 points. */
static double *as_float_values(const double *x, int64_t count, float **xf)
{
    *xf = malloc((size_t)(count + 1) * sizeof **xf);
    double *xs = calloc((size_t)(count + 1), sizeof *xs);
    for (int64_t t = 0; t < count; t++) {
        (*xf)[t] = (float)x[t];
        xs[t] = (double)(*xf)[t];
    }
    return xs;
}

static void run_case(const knn_case *c, bool f32, const char *context)
{
    bool self = c->nq < 0;
    float *xf = NULL, *qf = NULL;
    const double *xs = c->x, *qs = c->q;
    if (f32) {
        xs = as_float_values(c->x, c->n * c->dim, &xf);
        if (!self)
            qs = as_float_values(c->q, c->nq * c->dim, &qf);
    }
    oracle_knn_images o;
    oracle_cell_knn(xs, c->n, self ? NULL : qs, self ? 0 : c->nq, c->dim, (double(*)[3])c->cell,
                    c->pbc, c->k, c->max_radius, c->include_self, &o);
    prox_points points = f32 ? prox_points_f32(xf, c->n, c->dim) : prox_points_f64(c->x, c->n, c->dim);
    prox_points queries = f32 && !self ? prox_points_f32(qf, c->nq, c->dim)
                                       : prox_points_f64(c->q, self ? 0 : c->nq, c->dim);
    for (int threads = 1; threads <= 3; threads += 2) {
        prox_cell_knn_desc d = desc_of(c, threads);
        prox_knn_result r;
        prox_knn_result_init(&r, NULL);
        prox_stats st;
        CHECK_STATUS(prox_cell_knn(&points, self ? NULL : &queries, &d, &r, &st), PROX_OK, context);
        check_rows(&r, &o, c->dim, context);
        CHECK(strcmp(st.method, "cell.knn") == 0, context, "method %s", st.method);
        prox_knn_result_free(&r);
    }
    oracle_knn_images_free(&o);
    if (f32) {
        free((void *)xs);
        free(xf);
        if (!self) {
            free((void *)qs);
            free(qf);
        }
    }
}

static void random_cells(int dim, int cases, uint64_t seed)
{
    rng r = rng_seeded(seed);
    static const int64_t sizes[] = {1, 2, 7, 30, 90};
    static const int ks[] = {1, 3, 8, 17, 40};
    for (int t = 0; t < cases; t++) {
        knn_case c;
        memset(&c, 0, sizeof c);
        c.dim = dim;
        cell_random(&r, dim, 1, c.cell);
        int flags = (int)rng_below(&r, 1 << dim);
        for (int a = 0; a < dim; a++)
            c.pbc[a] = t % 3 == 0 || ((flags >> a) & 1);
        c.n = sizes[t % 5];
        c.k = ks[(t / 5) % 5];
        c.nq = t % 4 == 1 ? 1 + (int64_t)rng_below(&r, 20) : -1;
        c.include_self = t % 6 == 3;
        c.max_radius = t % 7 == 2 ? 0.6 * cell_min_height(c.cell, dim) : 0;
        if (t % 9 == 8 && !c.pbc[dim - 1]) /* a zero row on an open axis, as ASE allows */
            memset(c.cell[dim - 1], 0, sizeof c.cell[dim - 1]);
        double shape[3][3];
        memcpy(shape, c.cell, sizeof shape);
        if (!c.pbc[dim - 1] && shape[dim - 1][dim - 1] == 0)
            shape[dim - 1][dim - 1] = 1;
        c.x = cell_random_points(&r, shape, dim, c.n);
        if (c.nq > 0)
            c.q = cell_random_points(&r, shape, dim, c.nq);
        char context[200];
        snprintf(context, sizeof context,
                 "%dD case %d: n %lld, k %d, queries %lld, pbc %d%d%d, max_radius %.3g, self %d",
                 dim, t, (long long)c.n, c.k, (long long)c.nq, c.pbc[0], c.pbc[1], c.pbc[2],
                 c.max_radius, c.include_self);
        run_case(&c, t % 4 == 3, context);
        free(c.x);
        free(c.q);
    }
}

static void triclinic_3d_matches_oracle(void **state)
{
    (void)state;
    random_cells(3, 120, 4400);
}

static void cell_2d_matches_oracle(void **state)
{
    (void)state;
    random_cells(2, 80, 4401);
}

/* Crystals: the primitive fcc cell with one atom (every neighbour an image
 * of it, shells of 12, 6, 24 at equal distances, so the order by S
 * decides), fcc supercells with duplicates, and lattice points on faces. */
static void lattices_tie_by_index_then_shift(void **state)
{
    (void)state;
    static const int ks[] = {1, 11, 12, 13, 18, 19, 42, 43, 200};
    for (int L = 1; L <= 2; L++) {
        double m[3][3], x[3 * 8 * 2];
        cell_fcc_crystal(L, 3.6, m, x);
        int64_t n = (int64_t)L * L * L;
        for (int dup = 0; dup <= 1; dup++) {
            if (dup) /* every site twice: duplicates at distance 0 */
                memcpy(x + 3 * n, x, (size_t)(3 * n) * sizeof *x);
            for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
                knn_case c;
                memset(&c, 0, sizeof c);
                c.dim = 3;
                memcpy(c.cell, m, sizeof m);
                c.pbc[0] = c.pbc[1] = c.pbc[2] = true;
                c.n = n * (1 + dup);
                c.k = ks[t];
                c.nq = -1;
                c.x = x;
                char context[120];
                snprintf(context, sizeof context, "fcc L %d, dup %d, k %d", L, dup, c.k);
                run_case(&c, false, context);
                c.include_self = true;
                run_case(&c, false, context);
            }
        }
    }
}

/* A cubic lattice of 4^3 sites at exact coordinates 0, 0.25, ..., in a cell
 * of side 1: distances tie exactly; queries on faces and corners. */
static void cubic_lattice_on_faces(void **state)
{
    (void)state;
    knn_case c;
    memset(&c, 0, sizeof c);
    c.dim = 3;
    for (int a = 0; a < 3; a++) {
        c.cell[a][a] = 1;
        c.pbc[a] = a != 2;
    }
    c.n = 64;
    c.x = malloc(64 * 3 * sizeof *c.x);
    for (int i = 0; i < 64; i++) {
        c.x[3 * i] = 0.25 * (i % 4);
        c.x[3 * i + 1] = 0.25 * ((i / 4) % 4) - 1; /* unwrapped by a cell */
        c.x[3 * i + 2] = 0.25 * (i / 16);
    }
    double q[] = {0, 0, 0, 1, 1, 1, 0.5, 0.125, 0.75, 2, -3, 0.25};
    for (int k = 1; k <= 30; k += 7) {
        c.k = k;
        c.nq = -1;
        c.q = NULL;
        run_case(&c, false, "cubic lattice, self");
        c.nq = 4;
        c.q = q;
        run_case(&c, false, "cubic lattice, queries on faces");
    }
    free(c.x);
}

/* More points than the oracle's comfort: 1,500 points in a skewed cell,
 * k = 16, queried by a second set of 60 points (the searches' larger
 * images, margins and rounds). */
static void larger_cells(void **state)
{
    (void)state;
    rng r = rng_seeded(4402);
    for (int t = 0; t < 4; t++) {
        knn_case c;
        memset(&c, 0, sizeof c);
        c.dim = 3;
        cell_random(&r, 3, 5, c.cell);
        for (int a = 0; a < 3; a++)
            c.pbc[a] = t != 2 || a != 1;
        c.n = 1500;
        c.k = t == 3 ? 100 : 16;
        c.nq = 60;
        c.x = cell_random_points(&r, c.cell, 3, c.n);
        c.q = cell_random_points(&r, c.cell, 3, c.nq);
        run_case(&c, t == 1, "1,500 points");
        free(c.x);
        free(c.q);
    }
}

/* Queries far from the points along the open axes of a slab (pbc on a
 * and b) and of a strip (2D, pbc on a), above, below and beside them: the
 * gap along the open rows proves their rows with a small margin. */
static void far_queries_along_open_axes(void **state)
{
    (void)state;
    rng r = rng_seeded(4403);
    for (int t = 0; t < 12; t++) {
        knn_case c;
        memset(&c, 0, sizeof c);
        c.dim = t < 8 ? 3 : 2;
        cell_random(&r, c.dim, 1, c.cell);
        c.pbc[0] = true;
        c.pbc[1] = c.dim == 3 && t % 2 == 0;
        c.n = t % 4 == 1 ? 3 : 5 + 10 * (t % 3); /* k = 40 of 3 points: many cells out */
        c.k = t % 4 == 1 ? 40 : 7;
        c.nq = 6;
        c.x = cell_random_points(&r, c.cell, c.dim, c.n);
        c.q = malloc((size_t)(c.nq * c.dim) * sizeof *c.q);
        static const double far[] = {30, -12, 4, 0.5, 9, -20};
        for (int64_t i = 0; i < c.nq; i++)
            for (int k = 0; k < c.dim; k++)
                c.q[i * c.dim + k] = k == c.dim - 1 ? far[i] : 0.3 * (double)(i + k);
        c.include_self = t % 3 == 2;
        c.max_radius = t % 4 == 3 ? 8 : 0; /* past the gap of some queries */
        char context[120];
        snprintf(context, sizeof context, "far queries %d: %dD pbc %d%d%d k %d max_radius %g", t,
                 c.dim, c.pbc[0], c.pbc[1], c.pbc[2], c.k, c.max_radius);
        run_case(&c, false, context);
        c.nq = -1;
        run_case(&c, false, context);
        free(c.x);
        free(c.q);
    }
}

/* N = 0 and 1, k beyond every image a max_radius allows, no periodic axis
 * with k > n, empty query sets. */
static void edge_sizes(void **state)
{
    (void)state;
    double x[] = {0.2, 0.3, 0.4, 0.9, 0.1, 0.5};
    knn_case c;
    memset(&c, 0, sizeof c);
    c.dim = 3;
    for (int a = 0; a < 3; a++)
        c.cell[a][a] = 1;
    c.x = x;
    for (int n = 0; n <= 2; n++)
        for (int periodic = 0; periodic <= 1; periodic++) {
            for (int a = 0; a < 3; a++)
                c.pbc[a] = periodic;
            c.n = n;
            c.k = 5;
            c.nq = -1;
            c.max_radius = 0;
            run_case(&c, false, "tiny sets");
            c.max_radius = 1.5;
            run_case(&c, false, "tiny sets, max_radius");
            c.nq = 2;
            c.q = x;
            run_case(&c, false, "tiny sets, queries");
            c.nq = 0;
            run_case(&c, false, "no queries");
        }
}

static void bad_input_is_refused(void **state)
{
    (void)state;
    double x[] = {0, 0, 0, 0.5, 0.5, 0.5}, bad[] = {0, NAN, 0};
    prox_points p = prox_points_f64(x, 2, 3), pb = prox_points_f64(bad, 1, 3);
    prox_points p2 = prox_points_f64(x, 3, 2);
    prox_cell_knn_desc d = prox_default_cell_knn_desc();
    for (int a = 0; a < 3; a++) {
        d.cell[a][a] = 1;
        d.pbc[a] = true;
    }
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    CHECK_STATUS(prox_cell_knn(&p, NULL, NULL, &r, NULL), PROX_ERR_INVALID, "NULL desc");
    CHECK_STATUS(prox_cell_knn(NULL, NULL, &d, &r, NULL), PROX_ERR_INVALID, "NULL points");
    CHECK_STATUS(prox_cell_knn(&p, NULL, &d, NULL, NULL), PROX_ERR_INVALID, "NULL result");
    CHECK_STATUS(prox_cell_knn(&pb, NULL, &d, &r, NULL), PROX_ERR_DATA, "NaN point");
    CHECK_STATUS(prox_cell_knn(&p, &pb, &d, &r, NULL), PROX_ERR_DATA, "NaN query");
    CHECK_STATUS(prox_cell_knn(&p, &p2, &d, &r, NULL), PROX_ERR_INVALID, "2D queries");
    prox_cell_knn_desc e = d;
    e.k = 0;
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_INVALID, "k = 0");
    e = d;
    e.max_radius = -1;
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_INVALID, "max_radius < 0");
    e = d;
    e.max_radius = 1e300;
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_RANGE, "max_radius^2 overflows");
    e = d;
    memset(e.cell[2], 0, sizeof e.cell[2]);
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_INVALID, "zero periodic row");
    e = d;
    e.cell[2][0] = 1, e.cell[2][1] = 0, e.cell[2][2] = 0;
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_INVALID, "singular cell");
    e = d;
    e.pbc[1] = false; /* an open row along a periodic one: singular, as prox_cell_pairs has it */
    e.cell[1][0] = 2, e.cell[1][1] = 0;
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_INVALID, "open row along a");
    e = d;
    e.k = (int)PROX_CELL_KNN_MAX_IMAGES + 1; /* more images than it may lay out */
    CHECK_STATUS(prox_cell_knn(&p, NULL, &e, &r, NULL), PROX_ERR_RANGE, "k beyond the images");
    double far[] = {0.5, 0.5, 1e300, 0.2, 0.2, 0};
    prox_points pf = prox_points_f64(far, 2, 3);
    e = d;
    e.pbc[2] = false;
    CHECK_STATUS(prox_cell_knn(&pf, NULL, &e, &r, NULL), PROX_ERR_RANGE,
                 "an open coordinate too large for the cell's rounding");
    CHECK(r.indices == NULL && r.shifts == NULL, "refusals", "the result holds arrays");
    prox_knn_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(triclinic_3d_matches_oracle),
        cmocka_unit_test(cell_2d_matches_oracle),
        cmocka_unit_test(lattices_tie_by_index_then_shift),
        cmocka_unit_test(cubic_lattice_on_faces),
        cmocka_unit_test(larger_cells),
        cmocka_unit_test(far_queries_along_open_axes),
        cmocka_unit_test(edge_sizes),
        cmocka_unit_test(bad_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
