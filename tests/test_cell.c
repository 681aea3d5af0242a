/* test_cell.c: prox_cell_pairs against the suite's own image oracle
 * (cell_oracle.c) on random triclinic cells (angles 30-150 degrees), cells
 * smaller than the cutoff, mixed periodicity, 2D, unwrapped positions,
 * points on faces, f32 points and several thread counts; closed-form
 * lattice counts; the orthogonal case against prox_pairs; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_cases.h"
#include "check.h"
#include "points/cell_direct.h"
#include "rng.h"

typedef struct cell_case {
    double cell[3][3];
    bool pbc[3];
    int dim;
    int64_t n;
    double *x; /* packed, dim per point */
    double cutoff;
    bool full, self_interaction;
} cell_case;

static prox_cell_desc desc_of(const cell_case *c, int threads)
{
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = c->cutoff;
    memcpy(d.cell, c->cell, sizeof d.cell);
    memcpy(d.pbc, c->pbc, sizeof d.pbc);
    d.full = c->full;
    d.self_interaction = c->self_interaction;
    d.threads = threads;
    return d;
}

/* Cases served by the small-cell enumeration (cell_direct.c): the suite
 * fails unless some were. */
static int64_t direct_cases;

/* The case at thread counts 1 and 3, f64 (and f32 when asked), and the
 * count-only sink, by each search that can take it: the small-cell
 * enumeration where the planner allows it, then the bins alone. */
static void run_case_once(cell_case *c, bool f32, const char *context);

static void run_case(cell_case *c, bool f32, const char *context)
{
    char where[240];
    snprintf(where, sizeof where, "%s (planner's choice)", context);
    run_case_once(c, f32, where);
    prox_cell_direct_set_max_points(-1);
    snprintf(where, sizeof where, "%s (no enumeration)", context);
    run_case_once(c, f32, where);
    prox_cell_direct_set_max_points(0);
}

static void run_case_once(cell_case *c, bool f32, const char *context)
{
    oracle_images o;
    double *xs = c->x;
    float *xf = NULL;
    if (f32 && c->n >= 0) {
        xf = malloc((size_t)(c->n * c->dim + 1) * sizeof *xf);
        xs = malloc((size_t)(c->n * c->dim + 1) * sizeof *xs);
        for (int64_t t = 0; t < c->n * c->dim; t++) {
            xf[t] = (float)c->x[t];
            xs[t] = (double)xf[t];
        }
    }
    oracle_cell_pairs(xs, c->n, c->dim, c->cell, c->pbc, c->cutoff, c->full,
                      c->self_interaction, &o);
    prox_points view = f32 ? prox_points_f32(xf, c->n, c->dim) : prox_points_f64(c->x, c->n, c->dim);
    for (int threads = 1; threads <= 3; threads += 2) {
        prox_cell_desc d = desc_of(c, threads);
        prox_geometry g;
        prox_geometry_init(&g, 0, NULL);
        prox_stats st;
        CHECK_STATUS(prox_cell_pairs(&view, &d, &g, &st), PROX_OK, context);
        check_geometry(&g, &o, context);
        CHECK(st.pairs == o.count, context, "stats.pairs %lld", (long long)st.pairs);
        bool direct = strcmp(st.method, "cell.direct") == 0;
        CHECK(!direct || c->n <= PROX_CELL_DIRECT_MAX_POINTS, context, "%s for %lld points",
              st.method, (long long)c->n);
        direct_cases += direct && threads == 1;
        prox_geometry_free(&g);
        CHECK_STATUS(prox_cell_pairs(&view, &d, NULL, &st), PROX_OK, context);
        CHECK(st.pairs == o.count, context, "count only: %lld pairs, the oracle %lld",
              (long long)st.pairs, (long long)o.count);
    }
    oracle_images_free(&o);
    if (f32) {
        free(xf);
        free(xs);
    }
}

static void random_cells_match_oracle(int dim, int cases)
{
    rng r = rng_seeded(4300 + (uint64_t)dim);
    static const double reach[] = {0.2, 0.45, 0.7, 1.3, 2.6};
    static const int64_t sizes[] = {0, 1, 2, 9, 40};
    for (int t = 0; t < cases; t++) {
        cell_case c;
        memset(&c, 0, sizeof c);
        c.dim = dim;
        cell_random(&r, dim, 1, c.cell);
        int flags = (int)rng_below(&r, 1 << dim);
        for (int k = 0; k < dim; k++)
            c.pbc[k] = (flags >> k) & 1;
        if (t % 3 == 0)
            for (int k = 0; k < dim; k++)
                c.pbc[k] = true;
        c.n = sizes[t % 5];
        double rel = reach[(t / 5) % 5];
        c.cutoff = rel * cell_min_height(c.cell, dim);
        c.full = t % 2;
        c.self_interaction = (t / 2) % 3 == 0;
        /* a zero row on an open axis, as ASE allows */
        if (t % 7 == 6 && !c.pbc[dim - 1])
            memset(c.cell[dim - 1], 0, sizeof c.cell[dim - 1]);
        c.x = cell_random_points(&r, c.cell, dim, c.n);
        if (t % 7 == 6 && !c.pbc[dim - 1]) /* the open axis' coordinate set directly */
            for (int64_t i = 0; i < c.n; i++)
                c.x[i * dim + dim - 1] = rng_range(&r, -2, 4);
        char context[200];
        snprintf(context, sizeof context,
                 "%dD case %d: n %lld, cutoff %.3g x min height, pbc %d%d%d, full %d, self %d", dim,
                 t, (long long)c.n, rel, c.pbc[0], c.pbc[1], c.pbc[2], c.full, c.self_interaction);
        run_case(&c, t % 4 == 3, context);
        free(c.x);
    }
}

static void triclinic_3d_matches_oracle(void **state)
{
    (void)state;
    random_cells_match_oracle(3, 150);
}

static void cell_2d_matches_oracle(void **state)
{
    (void)state;
    random_cells_match_oracle(2, 100);
}

/* Lattice points exactly on faces and corners, and pairs at exactly the
 * cutoff: a cell of exact entries, points at fractions 0, 1/2, 1, -1. */
/* Small cells, many images of few points (the counting-sort placement of
 * cell.c): 1 to 64 points, cutoffs up to 2.6 cell heights, triclinic and
 * primitive fcc cells, pbc mixes, half and full lists, with and without
 * self-interaction, random points and lattice points (whose vectors hold
 * exact zeros, the sign of which the reverse of a pair keeps): the
 * oracle's arrays, D bit for bit (the sign of a zero included). */
static void small_cells_match_oracle(void **state)
{
    (void)state;
    rng r = rng_seeded(4343);
    static const int64_t sizes[] = {1, 2, 5, 17, 64};
    static const double reach[] = {0.8, 1.4, 2.6};
    for (int t = 0; t < 60; t++) {
        cell_case c;
        memset(&c, 0, sizeof c);
        c.dim = 3;
        bool lattice = t % 4 == 1;
        if (t % 3 == 0 || lattice) {
            double fcc[3][3] = {{0, 1.8, 1.8}, {1.8, 0, 1.8}, {1.8, 1.8, 0}};
            memcpy(c.cell, fcc, sizeof fcc);
        } else {
            cell_random(&r, 3, 1, c.cell);
        }
        for (int k = 0; k < 3; k++)
            c.pbc[k] = t % 5 == 4 ? k != 1 : true;
        c.n = sizes[t % 5];
        c.cutoff = reach[(t / 5) % 3] * cell_min_height(c.cell, 3);
        c.full = t % 2 == 0;
        c.self_interaction = t % 6 == 5;
        if (lattice) { /* sites a * (u, v, w) / 4 of the cube of side 4: D has exact zeros */
            c.x = malloc((size_t)(3 * c.n + 1) * sizeof *c.x);
            for (int64_t i = 0; i < c.n; i++) {
                int64_t u = i % 4, v = (i / 4) % 4, w = i / 16;
                c.x[3 * i] = 0.9 * (double)u;
                c.x[3 * i + 1] = 0.9 * (double)v;
                c.x[3 * i + 2] = 0.9 * (double)w;
            }
        } else {
            c.x = cell_random_points(&r, c.cell, 3, c.n);
        }
        char context[160];
        snprintf(context, sizeof context, "small cell %d: n %lld, cutoff %.2f heights, full %d",
                 t, (long long)c.n, reach[(t / 5) % 3], c.full);
        run_case(&c, false, context);
        oracle_images o;
        oracle_cell_pairs(c.x, c.n, 3, c.cell, c.pbc, c.cutoff, c.full, c.self_interaction, &o);
        prox_cell_desc d = desc_of(&c, 1);
        prox_points view = prox_points_f64(c.x, c.n, 3);
        prox_geometry g;
        prox_geometry_init(&g, 0, NULL);
        CHECK_STATUS(prox_cell_pairs(&view, &d, &g, NULL), PROX_OK, context);
        CHECK(g.count == o.count, context, "%lld pairs", (long long)g.count);
        for (int64_t p = 0; p < o.count && p < g.count; p++)
            CHECK(memcmp(&g.D[3 * p], o.items[p].D, sizeof o.items[p].D) == 0, context,
                  "pair %lld: D differs in its bits", (long long)p);
        prox_geometry_free(&g);
        oracle_images_free(&o);
        free(c.x);
    }
}

static void faces_and_exact_cutoff(void **state)
{
    (void)state;
    cell_case c;
    memset(&c, 0, sizeof c);
    c.dim = 3;
    double m[3][3] = {{2, 0, 0}, {1, 2, 0}, {0.5, 0.5, 2}};
    memcpy(c.cell, m, sizeof m);
    c.pbc[0] = c.pbc[1] = c.pbc[2] = true;
    static const double f[] = {0, 0.5, 1, -1};
    c.n = 64;
    c.x = malloc(64 * 3 * sizeof *c.x);
    for (int p = 0; p < 64; p++) {
        double g[3] = {f[p & 3], f[(p >> 2) & 3], f[p >> 4]};
        for (int k = 0; k < 3; k++)
            c.x[p * 3 + k] = (g[0] * m[0][k] + g[1] * m[1][k]) + g[2] * m[2][k];
    }
    static const double cutoffs[] = {1.0, 2.0, 2.5, 1.5};
    for (int t = 0; t < 4; t++) {
        c.cutoff = cutoffs[t];
        c.full = t & 1;
        char context[80];
        snprintf(context, sizeof context, "lattice points on faces, cutoff %g", c.cutoff);
        run_case(&c, false, context);
    }
    free(c.x);
}

/* The least cutoff c whose square, as the rule computes it, is at least
 * s: a pair of squared distance s is in, by no margin at all. */
static double boundary_cutoff(double s)
{
    double c = sqrt(s);
    while (c * c < s)
        c = nextafter(c, INFINITY);
    while (nextafter(c, 0) * nextafter(c, 0) >= s)
        c = nextafter(c, 0);
    return c;
}

/* The enumeration's float prescreen (cell_direct.c, prescreen_radius)
 * against pairs at exactly the cutoff: the points of a random cell
 * translated `far` cells along every row (unwrapped, so that their
 * coordinates, and the float rounding with them, are large against the
 * cutoff), the cutoff set to one pair's squared distance as the rule
 * computes it. A screen narrower than its bound drops some of those
 * pairs. The last cells lie beyond the screen's range (coordinates past
 * 2^60), where the rule alone decides. */
static void prescreen_keeps_boundary_pairs(void **state)
{
    (void)state;
    rng r = rng_seeded(4344);
    static const double far[] = {0, 1e3, 1e5, 3e6, 1048576};
    int64_t served = 0;
    for (int t = 0; t < 60; t++) {
        cell_case c;
        memset(&c, 0, sizeof c);
        c.dim = 3;
        bool huge = t % 5 == 4;
        cell_random(&r, 3, huge ? 0x1p50 : 1 + t % 3, c.cell);
        c.pbc[0] = c.pbc[1] = c.pbc[2] = true;
        c.pbc[t % 3] = t % 7 != 3;
        c.n = 8 + (t % 4) * 8;
        c.full = t % 2;
        c.x = malloc((size_t)(3 * c.n) * sizeof *c.x);
        double K = far[t % 5];
        for (int64_t i = 0; i < c.n; i++) {
            double f[3] = {rng_range(&r, 0, 1) + K, rng_range(&r, 0, 1) + K,
                           rng_range(&r, 0, 1) + K};
            for (int k = 0; k < 3; k++)
                c.x[3 * i + k] = (f[0] * c.cell[0][k] + f[1] * c.cell[1][k]) + f[2] * c.cell[2][k];
        }
        oracle_images o;
        double height = cell_min_height(c.cell, 3);
        oracle_cell_pairs(c.x, c.n, 3, c.cell, c.pbc, 0.9 * height, false, false, &o);
        if (o.count == 0) {
            oracle_images_free(&o);
            free(c.x);
            continue;
        }
        const double *D = o.items[rng_below(&r, o.count)].D;
        c.cutoff = boundary_cutoff(D[0] * D[0] + D[1] * D[1] + D[2] * D[2]);
        oracle_images_free(&o);
        char context[160];
        snprintf(context, sizeof context, "boundary pair %d: n %lld, %g cells away, full %d", t,
                 (long long)c.n, K, c.full);
        prox_cell_desc d = desc_of(&c, 1);
        prox_points view = prox_points_f64(c.x, c.n, 3);
        prox_stats st;
        CHECK_STATUS(prox_cell_pairs(&view, &d, NULL, &st), PROX_OK, context);
        served += strcmp(st.method, "cell.direct") == 0;
        run_case(&c, false, context);
        free(c.x);
    }
    CHECK(served >= 40, "boundary pairs", "%lld cases enumerated", (long long)served);
}

static int64_t count_pairs(const double *x, int64_t n, double m[3][3], double cutoff,
                           bool full)
{
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = cutoff;
    memcpy(d.cell, m, sizeof d.cell);
    d.pbc[0] = d.pbc[1] = d.pbc[2] = true;
    d.full = full;
    prox_points view = prox_points_f64(x, n, 3);
    prox_stats st;
    CHECK_STATUS(prox_cell_pairs(&view, &d, NULL, &st), PROX_OK, "lattice count");
    return st.pairs;
}

/* One atom per cell: simple cubic shells 6, 18, 26; fcc (primitive cell) 12, 18. */
static void lattice_closed_forms(void **state)
{
    (void)state;
    double origin[3] = {0.25, 0.25, 0.25};
    double cubic[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    double fcc[3][3] = {{0, 0.5, 0.5}, {0.5, 0, 0.5}, {0.5, 0.5, 0}};
    CHECK(count_pairs(origin, 1, cubic, 1.0, true) == 6, "sc 1.0", "%s", "");
    CHECK(count_pairs(origin, 1, cubic, 1.0, false) == 3, "sc 1.0 half", "%s", "");
    CHECK(count_pairs(origin, 1, cubic, 1.5, true) == 18, "sc 1.5", "%s", "");
    CHECK(count_pairs(origin, 1, cubic, 1.75, true) == 26, "sc 1.75", "%s", "");
    CHECK(count_pairs(origin, 1, fcc, 0.75, true) == 12, "fcc 0.75", "%s", "");
    CHECK(count_pairs(origin, 1, fcc, 1.05, true) == 18, "fcc 1.05", "%s", "");
    /* far beyond the cell: shells up to 5 lattice constants (the count of
     * integer vectors of length <= 5: 515) */
    CHECK(count_pairs(origin, 1, cubic, 5.0, true) == 514, "sc 5.0", "%lld",
          (long long)count_pairs(origin, 1, cubic, 5.0, true));
}

/* An orthogonal cell with the cutoff below half of it: the half list's
 * (i, j) are prox_pairs' periodic (minimum image) pairs. */
static void orthogonal_matches_grid(void **state)
{
    (void)state;
    rng r = rng_seeded(43);
    int64_t n = 5000; /* rows in bin order, reordered (CELL_BIN_ORDER_MIN) */
    double *x = malloc((size_t)n * 3 * sizeof *x);
    double L[3] = {3, 4, 5};
    for (int64_t i = 0; i < n * 3; i++)
        x[i] = rng_range(&r, -L[i % 3], 3 * L[i % 3]);
    prox_points view = prox_points_f64(x, n, 3);
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = 0.4;
    for (int k = 0; k < 3; k++) {
        d.cell[k][k] = L[k];
        d.pbc[k] = true;
    }
    prox_geometry g;
    prox_geometry_init(&g, PROX_GEOMETRY_I | PROX_GEOMETRY_J, NULL);
    CHECK_STATUS(prox_cell_pairs(&view, &d, &g, NULL), PROX_OK, "orthogonal cell");
    CHECK(g.d == NULL && g.D == NULL && g.S == NULL, "orthogonal cell", "unasked arrays filled");
    prox_grid_desc gd = prox_default_grid_desc();
    gd.radius = 0.4;
    memcpy(gd.period, L, sizeof L);
    prox_pair_buffer b;
    prox_pair_buffer_init(&b, NULL);
    CHECK_STATUS(prox_pairs(&view, &gd, PROX_ALGO_GRID, prox_sink_buffer(&b), NULL), PROX_OK,
                 "grid");
    CHECK(b.count == g.count, "orthogonal cell", "%lld pairs, the grid %lld", (long long)g.count,
          (long long)b.count);
    for (int64_t p = 0; p < b.count && p < g.count; p++)
        CHECK(b.pairs[p].i == g.i[p] && b.pairs[p].j == g.j[p], "orthogonal cell", "pair %lld",
              (long long)p);
    prox_pair_buffer_free(&b);
    prox_geometry_free(&g);
    free(x);
}

/* A larger triclinic set: every thread count gives the same arrays. */
static void threads_give_the_same_output(void **state)
{
    (void)state;
    rng r = rng_seeded(4343);
    double m[3][3];
    cell_random(&r, 3, 1, m);
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++)
            m[k][l] *= 8;
    int64_t n = 6000;
    double *x = cell_random_points(&r, m, 3, n);
    prox_points view = prox_points_f64(x, n, 3);
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = 0.6;
    memcpy(d.cell, m, sizeof m);
    d.pbc[0] = d.pbc[2] = true;
    prox_geometry one, many;
    prox_geometry_init(&one, 0, NULL);
    prox_geometry_init(&many, 0, NULL);
    d.threads = 1;
    CHECK_STATUS(prox_cell_pairs(&view, &d, &one, NULL), PROX_OK, "1 thread");
    for (int threads = 2; threads <= 5; threads += 3) {
        d.threads = threads;
        CHECK_STATUS(prox_cell_pairs(&view, &d, &many, NULL), PROX_OK, "threads");
        CHECK(many.count == one.count && one.count > 0, "threads", "%lld against %lld",
              (long long)many.count, (long long)one.count);
        CHECK(memcmp(one.i, many.i, (size_t)one.count * sizeof *one.i) == 0 &&
                  memcmp(one.j, many.j, (size_t)one.count * sizeof *one.j) == 0 &&
                  memcmp(one.D, many.D, (size_t)one.count * 3 * sizeof *one.D) == 0 &&
                  memcmp(one.S, many.S, (size_t)one.count * 3 * sizeof *one.S) == 0,
              "threads", "%d threads differ from one", threads);
    }
    prox_geometry_free(&one);
    prox_geometry_free(&many);
    free(x);
}

static prox_status try_cell(double m[3][3], const bool *pbc, double cutoff, const double *x,
                            int64_t n, int dim)
{
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = cutoff;
    memcpy(d.cell, m, sizeof d.cell);
    memcpy(d.pbc, pbc, sizeof d.pbc);
    prox_points view = prox_points_f64(x, n, dim);
    prox_geometry g;
    prox_geometry_init(&g, 0, NULL);
    prox_status st = prox_cell_pairs(&view, &d, &g, NULL);
    CHECK(st == PROX_OK || (g.count == 0 && g.i == NULL), "bad input", "output left behind");
    prox_geometry_free(&g);
    return st;
}

static void bad_input_is_refused(void **state)
{
    (void)state;
    double x[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    bool all[3] = {true, true, true}, none[3] = {false, false, false}, two[3] = {true, true, false};
    double unit[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    double flat[3][3] = {{1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
    double nan_cell[3][3] = {{1, 0, 0}, {0, NAN, 0}, {0, 0, 1}};
    double zero_row[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 0}};
    double planar[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 0}};
    double thick[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    CHECK_STATUS(try_cell(unit, all, 0.5, x, 2, 3), PROX_OK, "valid");
    CHECK_STATUS(try_cell(flat, all, 0.5, x, 2, 3), PROX_ERR_INVALID, "singular cell");
    CHECK_STATUS(try_cell(nan_cell, all, 0.5, x, 2, 3), PROX_ERR_INVALID, "NaN in the cell");
    CHECK_STATUS(try_cell(zero_row, all, 0.5, x, 2, 3), PROX_ERR_INVALID, "zero periodic row");
    CHECK_STATUS(try_cell(zero_row, two, 0.5, x, 2, 3), PROX_OK, "zero open row");
    CHECK_STATUS(try_cell(unit, all, -1, x, 2, 3), PROX_ERR_INVALID, "negative cutoff");
    CHECK_STATUS(try_cell(unit, all, NAN, x, 2, 3), PROX_ERR_INVALID, "NaN cutoff");
    CHECK_STATUS(try_cell(unit, all, 1e4, x, 2, 3), PROX_ERR_RANGE, "absurd images");
    CHECK_STATUS(try_cell(unit, none, 1e4, x, 2, 3), PROX_OK, "open cell, any cutoff");
    CHECK_STATUS(try_cell(planar, two, 0.5, x, 3, 2), PROX_OK, "2D");
    CHECK_STATUS(try_cell(thick, two, 0.5, x, 3, 2), PROX_ERR_INVALID, "2D with a 3x3 cell");
    CHECK_STATUS(try_cell(planar, all, 0.5, x, 3, 2), PROX_ERR_INVALID, "2D with pbc[2]");
    double bad_x[6] = {0.1, 0.2, NAN, 0.4, 0.5, 0.6};
    CHECK_STATUS(try_cell(unit, all, 0.5, bad_x, 2, 3), PROX_ERR_DATA, "NaN position");
    double far_x[3] = {1e12, 0, 0};
    CHECK_STATUS(try_cell(unit, all, 0.5, far_x, 1, 3), PROX_ERR_RANGE, "2^30 cells away");
    CHECK_STATUS(prox_cell_pairs(NULL, NULL, NULL, NULL), PROX_ERR_INVALID, "NULL");
}

/* The enumeration served the small cases (the second run of each held
 * the bins to the same oracle). */
static void small_sets_were_enumerated(void **state)
{
    (void)state;
    CHECK(direct_cases >= 100, "small sets", "%lld cases enumerated", (long long)direct_cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(triclinic_3d_matches_oracle),
        cmocka_unit_test(cell_2d_matches_oracle),
        cmocka_unit_test(small_cells_match_oracle),
        cmocka_unit_test(faces_and_exact_cutoff),
        cmocka_unit_test(prescreen_keeps_boundary_pairs),
        cmocka_unit_test(lattice_closed_forms),
        cmocka_unit_test(orthogonal_matches_grid),
        cmocka_unit_test(threads_give_the_same_output),
        cmocka_unit_test(bad_input_is_refused),
        cmocka_unit_test(small_sets_were_enumerated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
