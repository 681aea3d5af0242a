/* test_cell_sized.c: prox_sized_cell_pairs, particles of different sizes
 * in periodic cells of any shape, against the suite's image oracle
 * (cell_oracle.c) at the largest threshold, filtered here by the rules of
 * sizes.h: random triclinic cells small and large (the bins and the halo),
 * 2D and 3D, radii over 1:1000, zero radii, touching spheres, smoothing
 * lengths, types with a zero cutoff, half and full lists,
 * self_interaction; equal radii against prox_cell_pairs; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_cases.h"
#include "check.h"
#include "points/cell_halo.h"
#include "rng.h"

typedef struct sized_case {
    double cell[3][3];
    bool pbc[3];
    int dim;
    int64_t n;
    double *x;
    double *radius;
    int32_t *type;
    int types;
    double cutoff[9];
    prox_size_rule rule;
    bool full, self_interaction;
} sized_case;

/* The threshold of sizes.h for the pair, in double as sizes.h computes it. */
static double threshold(const sized_case *c, prox_index i, prox_index j)
{
    switch (c->rule) {
    case PROX_RULE_CONTACT: return c->radius[i] + c->radius[j];
    case PROX_RULE_GATHER_SCATTER: return c->radius[i] > c->radius[j] ? c->radius[i] : c->radius[j];
    default: return c->cutoff[c->type[i] * c->types + c->type[j]];
    }
}

static double largest(const sized_case *c)
{
    double t = 0;
    for (int64_t i = 0; i < c->n; i++)
        for (int64_t j = 0; j < c->n; j++)
            t = fmax(t, threshold(c, (prox_index)i, (prox_index)j));
    return t;
}

/* The oracle's images at the largest threshold, those within their own. */
static void expected(const sized_case *c, oracle_images *o)
{
    double big = largest(c);
    oracle_cell_pairs(c->x, c->n, c->dim, (double(*)[3])c->cell, c->pbc,
                      big > 0 ? big : PROX_RADIUS_MIN, c->full, c->self_interaction, o);
    int64_t kept = 0;
    for (int64_t p = 0; p < o->count; p++) {
        oracle_image v = o->items[p];
        bool self = v.i == v.j && !v.S[0] && !v.S[1] && !v.S[2];
        double t = threshold(c, v.i, v.j);
        double d2 = v.D[0] * v.D[0] + v.D[1] * v.D[1] + v.D[2] * v.D[2];
        if ((self && c->self_interaction) || (d2 <= t * t && t > 0))
            o->items[kept++] = v;
    }
    o->count = kept;
}

static prox_sizes sizes_of(const sized_case *c)
{
    return c->rule == PROX_RULE_TYPES ? prox_sizes_types(c->type, c->types, c->cutoff)
                                      : prox_sizes_radii(c->radius, c->rule);
}

static prox_cell_desc desc_of(const sized_case *c)
{
    prox_cell_desc d = prox_default_cell_desc();
    memcpy(d.cell, c->cell, sizeof d.cell);
    memcpy(d.pbc, c->pbc, sizeof d.pbc);
    d.full = c->full;
    d.self_interaction = c->self_interaction;
    d.cutoff = 123; /* not read */
    return d;
}

/* Returns the stats.method of the last run (it must be `method` unless
 * NULL). */
static const char *run_case(const sized_case *c, const char *method, const char *context)
{
    const char *ran = NULL;
    oracle_images o;
    expected(c, &o);
    prox_points view = prox_points_f64(c->x, c->n, c->dim);
    prox_sizes s = sizes_of(c);
    prox_cell_desc d = desc_of(c);
    for (int threads = 1; threads <= 3; threads += 2) {
        d.threads = threads;
        prox_geometry g;
        prox_geometry_init(&g, 0, NULL);
        prox_stats st;
        CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, &st), PROX_OK, context);
        CHECK(!method || strcmp(st.method, method) == 0, context, "method %s, expected %s",
              st.method, method);
        ran = st.method;
        CHECK(g.count == o.count && st.pairs == o.count, context, "%lld pairs, the oracle %lld",
              (long long)g.count, (long long)o.count);
        for (int64_t p = 0; p < o.count && p < g.count; p++) {
            const oracle_image *v = &o.items[p];
            bool same = g.i[p] == v->i && g.j[p] == v->j && g.d[p] == v->d;
            for (int k = 0; k < c->dim; k++)
                same = same && g.S[p * c->dim + k] == v->S[k] && g.D[p * c->dim + k] == v->D[k];
            CHECK(same, context, "pair %lld: (%u, %u), the oracle (%u, %u)", (long long)p,
                  (unsigned)g.i[p], (unsigned)g.j[p], (unsigned)v->i, (unsigned)v->j);
        }
        prox_geometry_free(&g);
        prox_geometry_init(&g, PROX_GEOMETRY_I | PROX_GEOMETRY_J, NULL);
        CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, NULL), PROX_OK, context);
        CHECK(g.count == o.count && !g.D && !g.S && !g.d, context, "i, j only: %lld pairs",
              (long long)g.count);
        prox_geometry_free(&g);
    }
    oracle_images_free(&o);
    return ran;
}

/* Fractions in [0, 1), some on faces; radii log-uniform over 1:1000 of
 * `r`, an eighth zero; types 0-2 with one zero cutoff. */
static void fill(rng *r, sized_case *c, double rad)
{
    c->x = malloc((size_t)(c->n * c->dim + 1) * sizeof *c->x);
    c->radius = malloc((size_t)(c->n + 1) * sizeof *c->radius);
    c->type = malloc((size_t)(c->n + 1) * sizeof *c->type);
    for (int64_t i = 0; i < c->n; i++) {
        double f[3] = {0, 0, 0};
        for (int k = 0; k < c->dim; k++) {
            int64_t kind = rng_below(r, 12);
            f[k] = kind == 0 ? 0.0 : kind == 1 ? 1.0 : rng_uniform(r);
        }
        for (int k = 0; k < c->dim; k++)
            c->x[i * c->dim + k] = (f[0] * c->cell[0][k] + f[1] * c->cell[1][k]) + f[2] * c->cell[2][k];
        c->radius[i] = rng_below(r, 8) == 0 ? 0.0 : rad * pow(10, -3 * rng_uniform(r));
        c->type[i] = (int32_t)rng_below(r, 3);
    }
    c->types = 3;
    double cut[9] = {rad, 0.5 * rad, 0, 0.5 * rad, 2 * rad, 0.7 * rad, 0, 0.7 * rad, 1.5 * rad};
    memcpy(c->cutoff, cut, sizeof cut);
}

static void random_sized_cells(int dim)
{
    rng r = rng_seeded(4500 + (uint64_t)dim);
    int halo = 0;
    for (int t = 0; t < 24; t++) {
        sized_case c;
        memset(&c, 0, sizeof c);
        c.dim = dim;
        bool large = t % 2;
        prox_cell_halo_set_min_points(large ? 100 : 0);
        cell_random(&r, dim, large ? 20 : 1, c.cell);
        for (int k = 0; k < dim; k++)
            c.pbc[k] = t % 3 == 0 || rng_below(&r, 4) != 0;
        c.n = large ? 600 + (int64_t)rng_below(&r, 300) : 1 + (int64_t)rng_below(&r, 30);
        c.rule = (prox_size_rule)(t % 3);
        c.full = (t / 2) % 2;
        c.self_interaction = t % 5 == 2;
        fill(&r, &c, large ? 1.0 : 0.6);
        char context[160];
        snprintf(context, sizeof context, "%dD case %d: %s cell, n %lld, rule %d, full %d, self %d",
                 dim, t, large ? "large" : "small", (long long)c.n, (int)c.rule, c.full,
                 c.self_interaction);
        /* a large cell may still be thin along one axis (the bins then) */
        const char *ran = run_case(&c, large ? NULL : "sized.cell.bins", context);
        halo += ran && strcmp(ran, "sized.cell.halo") == 0;
        free(c.x);
        free(c.radius);
        free(c.type);
    }
    prox_cell_halo_set_min_points(0);
    CHECK(halo >= 8, "sized cells", "%d of the 12 large cells ran the halo", halo);
}

static void triclinic_3d_matches_oracle(void **state)
{
    (void)state;
    random_sized_cells(3);
}

static void cell_2d_matches_oracle(void **state)
{
    (void)state;
    random_sized_cells(2);
}

/* Touching spheres of radius 1/4 on an fcc lattice of constant 1 (the
 * neighbours at sqrt(1/2) apart, above 1/2: none touch) and of radius
 * sqrt(1/8) (the sum's square 0.5000000000000001: all 12 touch), and
 * equal radii r against prox_cell_pairs at 2r. */
static void touching_and_equal_radii(void **state)
{
    (void)state;
    sized_case c;
    memset(&c, 0, sizeof c);
    c.dim = 3;
    const int L = 3;
    c.pbc[0] = c.pbc[1] = c.pbc[2] = true;
    c.n = L * L * L;
    c.x = malloc((size_t)c.n * 3 * sizeof *c.x);
    c.radius = malloc((size_t)c.n * sizeof *c.radius);
    cell_fcc_crystal(L, 1.0, c.cell, c.x);
    c.rule = PROX_RULE_CONTACT;
    static const double radii[] = {0.25, 0.35355339059327379};
    for (int t = 0; t < 2; t++) {
        for (int64_t i = 0; i < c.n; i++)
            c.radius[i] = radii[t];
        run_case(&c, "sized.cell.bins", t ? "touching fcc spheres" : "fcc spheres apart");
        prox_points view = prox_points_f64(c.x, c.n, 3);
        prox_sizes s = sizes_of(&c);
        prox_cell_desc d = desc_of(&c);
        prox_geometry a, b;
        prox_geometry_init(&a, 0, NULL);
        prox_geometry_init(&b, 0, NULL);
        CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &a, NULL), PROX_OK, "equal radii");
        d.cutoff = 2 * radii[t];
        CHECK_STATUS(prox_cell_pairs(&view, &d, &b, NULL), PROX_OK, "one cutoff");
        CHECK(a.count == b.count && memcmp(a.j, b.j, (size_t)a.count * sizeof *a.j) == 0 &&
                  memcmp(a.D, b.D, (size_t)a.count * 3 * sizeof *a.D) == 0,
              "equal radii", "%lld pairs, one cutoff %lld", (long long)a.count,
              (long long)b.count);
        CHECK(t == 0 ? a.count == 0 : a.count == 12 * c.n / 2, "equal radii", "%lld pairs",
              (long long)a.count);
        prox_geometry_free(&a);
        prox_geometry_free(&b);
    }
    free(c.x);
    free(c.radius);
}

static void bad_input_is_refused(void **state)
{
    (void)state;
    double x[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    double radius[2] = {0.1, -1}, nan_radius[2] = {0.1, NAN};
    int32_t type[2] = {0, 5};
    double cut[4] = {0.1, 0.2, 0.2, 0.1}, skew[4] = {0.1, 0.2, 0.3, 0.1};
    prox_points view = prox_points_f64(x, 2, 3);
    prox_cell_desc d = prox_default_cell_desc();
    d.cell[0][0] = d.cell[1][1] = d.cell[2][2] = 1;
    d.pbc[0] = d.pbc[1] = d.pbc[2] = true;
    prox_geometry g;
    prox_geometry_init(&g, 0, NULL);
    prox_sizes s = prox_sizes_radii(radius, PROX_RULE_CONTACT);
    CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, NULL), PROX_ERR_DATA, "negative radius");
    CHECK(g.count == 0 && !g.i, "negative radius", "%s", "output left behind");
    s = prox_sizes_radii(nan_radius, PROX_RULE_CONTACT);
    CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, NULL), PROX_ERR_DATA, "NaN radius");
    s = prox_sizes_types(type, 2, cut);
    CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, NULL), PROX_ERR_DATA, "type 5 of 2");
    type[1] = 1;
    s = prox_sizes_types(type, 2, skew);
    CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, NULL), PROX_ERR_INVALID,
                 "matrix not symmetric");
    CHECK_STATUS(prox_sized_cell_pairs(&view, NULL, &d, &g, NULL), PROX_ERR_INVALID, "NULL sizes");
    CHECK_STATUS(prox_sized_cell_pairs(NULL, &s, &d, &g, NULL), PROX_ERR_INVALID, "NULL points");
    double flat[3][3] = {{1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
    memcpy(d.cell, flat, sizeof flat);
    double ok_radius[2] = {0.1, 0.2};
    s = prox_sizes_radii(ok_radius, PROX_RULE_CONTACT);
    CHECK_STATUS(prox_sized_cell_pairs(&view, &s, &d, &g, NULL), PROX_ERR_INVALID, "singular cell");
    prox_geometry_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(triclinic_3d_matches_oracle),
        cmocka_unit_test(cell_2d_matches_oracle),
        cmocka_unit_test(touching_and_equal_radii),
        cmocka_unit_test(bad_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
