/* test_cell_halo.c: prox_cell_pairs on large cells, which the halo
 * answers (src/points/cell_halo.c: the grid over the points plus the
 * images near the faces), against the suite's image oracle
 * (cell_oracle.c): random triclinic cells, 2D and 3D, mixed periodicity,
 * points on faces, some unwrapped (the moved search), f32, half and full
 * lists, self_interaction, thread counts 1 and 3, the count-only sink; an
 * fcc lattice with the cutoff at exactly the nearest-neighbour distance;
 * and the sets the halo leaves to the bins. stats.method says which ran,
 * so each case checks that the path it means to test is the one taken. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_cases.h"
#include "check.h"
#include "points/cell_direct.h"
#include "points/cell_halo.h"
#include "rng.h"

/* The halo serves sets from this size in these tests (the oracle is
 * O(N^2)); the_bins_serve_the_rest puts the default back. */
#define TEST_MIN_POINTS 200

typedef struct halo_case {
    double cell[3][3];
    bool pbc[3];
    int dim;
    int64_t n;
    double *x; /* packed, dim per point */
    double cutoff;
    bool full, self_interaction, f32;
    const char *method; /* the path expected to run */
} halo_case;

/* Fractions in [0, 1), a share exactly 0 or 1 (on faces), and `moved` of
 * every 64 points unwrapped by a whole number of cells (-2 to 2). */
static double *halo_points(rng *r, double m[3][3], int dim, int64_t n, int moved)
{
    double *x = malloc((size_t)(n * dim + 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++) {
        double f[3] = {0, 0, 0};
        bool unwrap = (int64_t)rng_below(r, 64) < moved;
        for (int k = 0; k < dim; k++) {
            int64_t kind = rng_below(r, 16);
            f[k] = kind == 0 ? 0.0 : kind == 1 ? 1.0 : rng_uniform(r);
            if (unwrap)
                f[k] += (double)((int64_t)rng_below(r, 5) - 2);
        }
        for (int k = 0; k < dim; k++)
            x[i * dim + k] = (f[0] * m[0][k] + f[1] * m[1][k]) + f[2] * m[2][k];
    }
    return x;
}

/* i and j alone (the rows copied as the grid gave them) against the
 * oracle's. */
static void compare_ij(const prox_geometry *g, const oracle_images *o, const char *context)
{
    CHECK(g->count == o->count && !g->d && !g->D && !g->S, context, "%lld pairs, the oracle %lld",
          (long long)g->count, (long long)o->count);
    for (int64_t p = 0; p < o->count; p++)
        CHECK(g->i[p] == o->items[p].i && g->j[p] == o->items[p].j, context, "pair %lld",
              (long long)p);
}

static void run_case(const halo_case *c, const char *context)
{
    double *xs = c->x;
    float *xf = NULL;
    if (c->f32) { /* the oracle sees the f32 coordinates widened, as the library does */
        xf = malloc((size_t)(c->n * c->dim) * sizeof *xf);
        xs = malloc((size_t)(c->n * c->dim) * sizeof *xs);
        for (int64_t t = 0; t < c->n * c->dim; t++)
            xs[t] = (double)(xf[t] = (float)c->x[t]);
    }
    oracle_images o;
    oracle_cell_pairs(xs, c->n, c->dim, (double(*)[3])c->cell, c->pbc, c->cutoff, c->full,
                      c->self_interaction, &o);
    prox_points view = c->f32 ? prox_points_f32(xf, c->n, c->dim)
                              : prox_points_f64(c->x, c->n, c->dim);
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = c->cutoff;
    memcpy(d.cell, c->cell, sizeof d.cell);
    memcpy(d.pbc, c->pbc, sizeof d.pbc);
    d.full = c->full;
    d.self_interaction = c->self_interaction;
    for (int threads = 1; threads <= 3; threads += 2) {
        d.threads = threads;
        prox_geometry g;
        prox_geometry_init(&g, 0, NULL);
        prox_stats st;
        CHECK_STATUS(prox_cell_pairs(&view, &d, &g, &st), PROX_OK, context);
        CHECK(st.method && strcmp(st.method, c->method) == 0, context, "method %s, expected %s",
              st.method ? st.method : "(none)", c->method);
        check_geometry(&g, &o, context);
        CHECK(st.pairs == o.count, context, "stats.pairs %lld", (long long)st.pairs);
        prox_geometry_free(&g);
        prox_geometry_init(&g, PROX_GEOMETRY_I | PROX_GEOMETRY_J, NULL);
        CHECK_STATUS(prox_cell_pairs(&view, &d, &g, NULL), PROX_OK, context);
        compare_ij(&g, &o, context);
        prox_geometry_free(&g);
        CHECK_STATUS(prox_cell_pairs(&view, &d, NULL, &st), PROX_OK, context);
        CHECK(st.pairs == o.count, context, "count only: %lld pairs, the oracle %lld",
              (long long)st.pairs, (long long)o.count);
    }
    oracle_images_free(&o);
    if (c->f32) {
        free(xf);
        free(xs);
    }
}

/* Cells of 200-900 points with cutoffs up to the quarter of a height the
 * halo serves. */
static void random_large_cells(int dim, int cases)
{
    rng r = rng_seeded(4700 + (uint64_t)dim);
    prox_cell_halo_set_min_points(TEST_MIN_POINTS);
    static const double reach[] = {0.04, 0.1, 0.17, 0.235};
    static const int moved[] = {0, 1, 7}; /* of 64: none, a few, just under an eighth */
    for (int t = 0; t < cases; t++) {
        halo_case c;
        memset(&c, 0, sizeof c);
        c.dim = dim;
        cell_random(&r, dim, 1, c.cell);
        int flags = t % 3 == 0 ? 7 : (int)rng_below(&r, 1 << dim);
        for (int k = 0; k < dim; k++)
            c.pbc[k] = (flags >> k) & 1;
        c.n = TEST_MIN_POINTS + (int64_t)rng_below(&r, 700);
        double h = INFINITY;
        for (int k = 0; k < dim; k++)
            h = fmin(h, cell_height(c.cell, dim, k));
        c.cutoff = reach[t % 4] * h;
        c.full = (t / 2) % 2;
        c.self_interaction = t % 5 == 1;
        c.f32 = t % 4 == 3;
        c.method = "cell.halo";
        bool zero_row = t % 7 == 6 && !c.pbc[dim - 1]; /* as ASE allows on an open axis */
        if (zero_row)
            memset(c.cell[dim - 1], 0, sizeof c.cell[dim - 1]);
        c.x = halo_points(&r, c.cell, dim, c.n, moved[t % 3]);
        for (int64_t i = 0; zero_row && i < c.n; i++)
            c.x[i * dim + dim - 1] = rng_range(&r, -2, 4);
        char context[200];
        snprintf(context, sizeof context,
                 "%dD case %d: n %lld, cutoff %.3g x min height, pbc %d%d%d, full %d, self %d, "
                 "f32 %d, moved %d/64",
                 dim, t, (long long)c.n, reach[t % 4], c.pbc[0], c.pbc[1], c.pbc[2], c.full,
                 c.self_interaction, c.f32, moved[t % 3]);
        run_case(&c, context);
        free(c.x);
    }
}

static void triclinic_3d_matches_oracle(void **state)
{
    (void)state;
    random_large_cells(3, 40);
}

static void cell_2d_matches_oracle(void **state)
{
    (void)state;
    random_large_cells(2, 40);
}

/* An fcc crystal of 7^3 primitive cells, one atom each, the cutoff at
 * the nearest-neighbour distance: 12 neighbours each, every one decided by
 * the last bits of the rule's arithmetic, atoms on faces. The lattice
 * constant 1 (exact coordinates) with the cutoff's square just above and
 * just below the neighbours' 0.5, and 1.1 (rounded coordinates: some
 * neighbours fall each side). */
static void fcc_cutoff_at_the_neighbours(void **state)
{
    (void)state;
    const int L = 7;
    prox_cell_halo_set_min_points(TEST_MIN_POINTS);
    static const double scale[] = {1, 1, 1.1, 1.1};
    for (int t = 0; t < 4; t++) {
        halo_case c;
        memset(&c, 0, sizeof c);
        c.dim = 3;
        c.pbc[0] = c.pbc[1] = c.pbc[2] = true;
        c.n = (int64_t)L * L * L;
        c.x = malloc((size_t)c.n * 3 * sizeof *c.x);
        cell_fcc_crystal(L, scale[t], c.cell, c.x);
        c.cutoff = scale[t] * sqrt(0.5);
        if (t == 1) /* 0.5 itself is then above the cutoff's square */
            c.cutoff = nextafter(c.cutoff, 0);
        c.full = t == 3;
        c.method = "cell.halo";
        char context[80];
        snprintf(context, sizeof context, "fcc at the neighbour distance, case %d", t);
        run_case(&c, context);
        free(c.x);
    }
}

static bool same_geometry(const prox_geometry *a, const prox_geometry *b)
{
    size_t n = (size_t)a->count, dim = (size_t)a->dim;
    return a->count == b->count && a->dim == b->dim &&
           memcmp(a->i, b->i, n * sizeof *a->i) == 0 && memcmp(a->j, b->j, n * sizeof *a->j) == 0 &&
           memcmp(a->d, b->d, n * sizeof *a->d) == 0 &&
           memcmp(a->D, b->D, n * dim * sizeof *a->D) == 0 &&
           memcmp(a->S, b->S, n * dim * sizeof *a->S) == 0;
}

/* The i and j arrays (fields: those asked for) of the halo against the bins'. */
static void check_index_arrays(const prox_points *view, const prox_cell_desc *d,
                               const prox_geometry *bins, unsigned fields, const char *context)
{
    prox_geometry g;
    prox_geometry_init(&g, fields, NULL);
    prox_stats st;
    CHECK_STATUS(prox_cell_pairs(view, d, &g, &st), PROX_OK, context);
    size_t n = (size_t)bins->count * sizeof *bins->i;
    bool i_ok = fields & PROX_GEOMETRY_I ? g.i && memcmp(g.i, bins->i, n) == 0 : !g.i;
    bool j_ok = fields & PROX_GEOMETRY_J ? g.j && memcmp(g.j, bins->j, n) == 0 : !g.j;
    CHECK(g.count == bins->count && i_ok && j_ok && !g.d && !g.D && !g.S, context,
          "%d threads, fields %u: %lld pairs, the bins %lld, or different arrays", d->threads,
          fields, (long long)g.count, (long long)bins->count);
    CHECK(strcmp(st.method, "cell.halo") == 0 && st.pairs == bins->count, context,
          "fields %u: method %s, %lld pairs", fields, st.method, (long long)st.pairs);
    prox_geometry_free(&g);
}

/* Sets too large for the oracle, whose output the halo writes in parts
 * over the threads: the same arrays as the bins (tested against the oracle
 * in test_cell), at 1, 2 and 3 threads, half and full, some points moved;
 * i and j alone (the main search's rows written into them where no point
 * moved and no self pair is asked for), and j alone. */
static void large_sets_match_the_bins(void **state)
{
    (void)state;
    rng r = rng_seeded(4790);
    for (int t = 0; t < 4; t++) {
        double m[3][3];
        cell_random(&r, 3, 1, m);
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 3; k++)
                m[a][k] *= 12;
        int64_t n = 70000; /* past the 65536 points from which the output is written in parts */
        double *x = halo_points(&r, m, 3, n, t % 2 ? 3 : 0);
        prox_points view = prox_points_f64(x, n, 3);
        prox_cell_desc d = prox_default_cell_desc();
        double h = fmin(cell_height(m, 3, 0), fmin(cell_height(m, 3, 1), cell_height(m, 3, 2)));
        d.cutoff = 0.04 * h;
        memcpy(d.cell, m, sizeof m);
        d.pbc[0] = d.pbc[1] = true;
        d.pbc[2] = t != 2;
        d.full = t >= 2;
        d.self_interaction = t == 3;
        char context[80];
        snprintf(context, sizeof context, "70000 points, case %d", t);
        prox_geometry bins, halo;
        prox_geometry_init(&bins, 0, NULL);
        prox_geometry_init(&halo, 0, NULL);
        prox_stats st;
        prox_cell_halo_set_min_points(INT64_MAX);
        CHECK_STATUS(prox_cell_pairs(&view, &d, &bins, &st), PROX_OK, context);
        CHECK(strcmp(st.method, "cell.bins") == 0, context, "method %s", st.method);
        prox_cell_halo_set_min_points(0);
        for (int threads = 1; threads <= 3; threads++) {
            d.threads = threads;
            CHECK_STATUS(prox_cell_pairs(&view, &d, &halo, &st), PROX_OK, context);
            CHECK(strcmp(st.method, "cell.halo") == 0, context, "method %s", st.method);
            CHECK(bins.count > 0 && same_geometry(&bins, &halo), context,
                  "%d threads: %lld pairs, the bins %lld, or different arrays", threads,
                  (long long)halo.count, (long long)bins.count);
            check_index_arrays(&view, &d, &bins, PROX_GEOMETRY_I | PROX_GEOMETRY_J, context);
            if (threads == 2)
                check_index_arrays(&view, &d, &bins, PROX_GEOMETRY_J, context);
        }
        prox_geometry_free(&bins);
        prox_geometry_free(&halo);
        free(x);
    }
}

/* What the halo leaves to the bins: few points, a cutoff beyond a quarter
 * of a height, most points outside the cell. */
static void the_bins_serve_the_rest(void **state)
{
    (void)state;
    rng r = rng_seeded(4747);
    for (int t = 0; t < 3; t++) {
        prox_cell_halo_set_min_points(t == 0 ? 0 : TEST_MIN_POINTS);
        halo_case c;
        memset(&c, 0, sizeof c);
        c.dim = 3;
        cell_random(&r, 3, 1, c.cell);
        c.pbc[0] = c.pbc[1] = c.pbc[2] = true;
        double h = fmin(cell_height(c.cell, 3, 0), fmin(cell_height(c.cell, 3, 1), cell_height(c.cell, 3, 2)));
        c.n = t == 0 ? PROX_CELL_HALO_MIN_POINTS - 1 : 600;
        c.cutoff = (t == 1 ? 0.27 : 0.1) * h;
        c.x = halo_points(&r, c.cell, 3, c.n, t == 2 ? 12 : 0);
        c.method = "cell.bins";
        static const char *what[] = {"below the least points", "cutoff 0.27 x height",
                                     "12/64 moved"};
        run_case(&c, what[t]);
        free(c.x);
    }
}

/* An allocator that fails its `fail_at`-th request, counting the blocks
 * still out. */
typedef struct failing {
    int64_t calls, fail_at, live;
} failing;

static void *failing_alloc(size_t size, void *user)
{
    failing *f = user;
    if (++f->calls == f->fail_at)
        return NULL;
    void *p = malloc(size);
    f->live += p != NULL;
    return p;
}

static void failing_free(void *ptr, void *user)
{
    failing *f = user;
    f->live -= ptr != NULL;
    free(ptr);
}

/* Each allocation of a halo call failing in turn, for the search's memory
 * and the output's alike: PROX_ERR_NO_MEMORY with an empty output, or
 * (a reservation the search can do without) the output itself; every
 * block given back either way. i and j alone (the rows written into the
 * output) and every array (the merge). */
static void out_of_memory_gives_everything_back(void **state)
{
    (void)state;
    rng r = rng_seeded(4810);
    double m[3][3];
    cell_random(&r, 3, 1, m);
    int64_t n = 3000;
    double *x = halo_points(&r, m, 3, n, 0);
    prox_points view = prox_points_f64(x, n, 3);
    prox_cell_halo_set_min_points(TEST_MIN_POINTS);
    prox_cell_desc d = prox_default_cell_desc();
    double h = fmin(cell_height(m, 3, 0), fmin(cell_height(m, 3, 1), cell_height(m, 3, 2)));
    d.cutoff = 0.1 * h;
    memcpy(d.cell, m, sizeof m);
    d.pbc[0] = d.pbc[1] = d.pbc[2] = true;
    for (int full = 0; full < 2; full++)
        for (int fields = 0; fields < 2; fields++) {
            unsigned asked = fields ? PROX_GEOMETRY_ALL : PROX_GEOMETRY_I | PROX_GEOMETRY_J;
            char context[80];
            snprintf(context, sizeof context, "full %d, fields %u", full, asked);
            d.full = full;
            d.allocator = (prox_allocator){0};
            prox_geometry want;
            prox_geometry_init(&want, PROX_GEOMETRY_ALL, NULL);
            CHECK_STATUS(prox_cell_pairs(&view, &d, &want, NULL), PROX_OK, context);
            bool reached = true;
            for (int64_t at = 1; reached; at++) {
                failing f = {.fail_at = at};
                prox_allocator al = {failing_alloc, failing_free, &f};
                d.threads = 1 + (int)(at % 2);
                d.allocator = al;
                prox_geometry g;
                prox_geometry_init(&g, asked, &al);
                prox_stats stats;
                prox_status st = prox_cell_pairs(&view, &d, &g, &stats);
                reached = f.calls >= at;
                CHECK(st == PROX_OK || (st == PROX_ERR_NO_MEMORY && reached), context,
                      "allocation %lld failing: status %d", (long long)at, (int)st);
                size_t bytes = (size_t)want.count * sizeof *want.i;
                if (st == PROX_OK)
                    CHECK(strcmp(stats.method, "cell.halo") == 0 && g.count == want.count &&
                              memcmp(g.i, want.i, bytes) == 0 && memcmp(g.j, want.j, bytes) == 0 &&
                              (!fields || memcmp(g.D, want.D, 3 * bytes * 2) == 0),
                          context, "allocation %lld failing: %s, another output", (long long)at,
                          stats.method);
                else
                    CHECK(g.count == 0 && !g.i && !g.j && !g.d && !g.D && !g.S, context,
                          "allocation %lld failing: an output left", (long long)at);
                prox_geometry_free(&g);
                CHECK(f.live == 0, context, "allocation %lld failing: %lld blocks not freed",
                      (long long)at, (long long)f.live);
                CHECK(at < 10000, context, "no end to the allocations");
            }
            prox_geometry_free(&want);
        }
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(triclinic_3d_matches_oracle),
        cmocka_unit_test(cell_2d_matches_oracle),
        cmocka_unit_test(fcc_cutoff_at_the_neighbours),
        cmocka_unit_test(large_sets_match_the_bins),
        cmocka_unit_test(the_bins_serve_the_rest),
        cmocka_unit_test(out_of_memory_gives_everything_back),
    };
    /* the small sets here are the halo's and the bins' (test_cell holds the
     * small-cell enumeration) */
    prox_cell_direct_set_max_points(-1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
