/* inputs.c: the input classes of the test matrix. */
#include "inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- clouds ------------------------------------------------------------ */

static void *checked_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "tests: out of memory (%zu bytes)\n", size);
        abort();
    }
    return p;
}

void cloud_alloc(cloud *c, int dim, int64_t count)
{
    c->dim = dim;
    c->count = count;
    c->xyz = checked_malloc((size_t)count * (size_t)dim * sizeof(double));
}

void cloud_free(cloud *c)
{
    free(c->xyz);
    c->xyz = NULL;
    c->count = 0;
}

void cloud_copy(cloud *dst, const cloud *src)
{
    cloud_alloc(dst, src->dim, src->count);
    memcpy(dst->xyz, src->xyz, (size_t)src->count * (size_t)src->dim * sizeof(double));
}

/* Rounded to a multiple of 2^-32: shifting such values by a few periods
 * (all periods here are small dyadic numbers) is exact, so wrapping them back
 * gives the same bits however the library does it. */
static double dyadic(double x)
{
    return nearbyint(x * 0x1.0p32) * 0x1.0p-32;
}

void cloud_uniform(cloud *c, int dim, int64_t count, double lo, double size, rng *r)
{
    cloud_alloc(c, dim, count);
    for (int64_t i = 0; i < count * dim; i++)
        c->xyz[i] = dyadic(rng_range(r, lo, size));
}

float *cloud_round_to_float(cloud *c)
{
    int64_t n = c->count * c->dim;
    float *as_float = checked_malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        as_float[i] = (float)c->xyz[i];
        c->xyz[i] = (double)as_float[i];
    }
    return as_float;
}

/* ---- generators -------------------------------------------------------- */

typedef void (*generator)(cloud *c, int dim, prox_scalar scalar, rng *r);

static void gen_uniform(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    cloud_uniform(c, dim, 1000, 0.0, 8.0, r);
}

static void gen_clustered(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    enum { BLOBS = 8, COUNT = 1000 };
    double centre[BLOBS][3];
    for (int b = 0; b < BLOBS; b++)
        for (int k = 0; k < 3; k++)
            centre[b][k] = rng_range(r, 0.0, 8.0);
    cloud_alloc(c, dim, COUNT);
    for (int64_t i = 0; i < COUNT; i++) {
        int b = (int)rng_below(r, BLOBS);
        for (int k = 0; k < dim; k++) {
            double bell = rng_uniform(r) + rng_uniform(r) + rng_uniform(r) + rng_uniform(r) - 2.0;
            cloud_point(c, i)[k] = dyadic(centre[b][k] + 0.4 * bell);
        }
    }
}

static void gen_duplicates(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    enum { SITES = 40, COUNT = 600 };
    cloud sites;
    cloud_uniform(&sites, dim, SITES, 0.0, 8.0, r);
    cloud_alloc(c, dim, COUNT);
    for (int64_t i = 0; i < COUNT; i++) {
        const double *site = cloud_point(&sites, rng_below(r, SITES));
        memcpy(cloud_point(c, i), site, (size_t)dim * sizeof(double));
    }
    cloud_free(&sites);
}

/* Every point of {first, ..., first + side - 1}^dim times spacing. */
static void fill_lattice(cloud *c, int dim, int side, int first, double spacing, int64_t start)
{
    int64_t cells = dim == 3 ? (int64_t)side * side * side : (int64_t)side * side;
    for (int64_t n = 0; n < cells; n++) {
        int64_t rest = n;
        double *p = cloud_point(c, start + n);
        for (int k = 0; k < dim; k++) {
            p[k] = (double)(first + (int)(rest % side)) * spacing;
            rest /= side;
        }
    }
}

static int64_t lattice_count(int dim, int side)
{
    return dim == 3 ? (int64_t)side * side * side : (int64_t)side * side;
}

static void gen_lattice(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    int side = dim == 3 ? 8 : 24;
    cloud_alloc(c, dim, lattice_count(dim, side));
    fill_lattice(c, dim, side, 0, 1.0, 0);
}

static void gen_half_lattice(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    int side = dim == 3 ? 10 : 24;
    cloud_alloc(c, dim, lattice_count(dim, side));
    fill_lattice(c, dim, side, 0, 0.5, 0);
}

static void gen_decimal_lattice(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    int side = dim == 3 ? 8 : 20;
    cloud_alloc(c, dim, lattice_count(dim, side));
    fill_lattice(c, dim, side, 0, 0.1, 0);
}

static void gen_negative(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    cloud_uniform(c, dim, 1000, -24.0, 8.0, r);
}

static void gen_mixed_sign(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    int side = dim == 3 ? 8 : 24;
    int64_t on_lattice = lattice_count(dim, side);
    enum { LOOSE = 200 };
    cloud_alloc(c, dim, on_lattice + LOOSE);
    fill_lattice(c, dim, side, -side / 2, 1.0, 0);
    for (int64_t i = on_lattice; i < on_lattice + LOOSE; i++)
        for (int k = 0; k < dim; k++)
            cloud_point(c, i)[k] = dyadic(rng_range(r, -side / 2.0, side));
}

static void gen_huge_offset(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    double offset = scalar == PROX_F64 ? 1e9 : 1e5;
    cloud_alloc(c, dim, 1000);
    for (int64_t i = 0; i < c->count * dim; i++)
        c->xyz[i] = offset + nearbyint(rng_range(r, 0.0, 8.0) * 0x1.0p20) * 0x1.0p-20;
}

static void gen_empty(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    cloud_alloc(c, dim, 0);
}

static void gen_single(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    static const double where[3] = {1.5, 2.5, 3.5};
    cloud_alloc(c, dim, 1);
    memcpy(c->xyz, where, (size_t)dim * sizeof(double));
}

static void gen_all_equal(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    static const double where[3] = {0.375, 0.625, 0.875};
    cloud_alloc(c, dim, 50);
    for (int64_t i = 0; i < 50; i++)
        memcpy(cloud_point(c, i), where, (size_t)dim * sizeof(double));
}

/* Unit data where only planted points are within 1e-9 of each other:
 * 20 exact copies, 20 moved by 5e-10 (pairs), 20 moved by 2e-9 (not). */
static void gen_tiny_radius(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    enum { BASE = 940, PLANTED = 20 };
    static const double shift[3] = {0.0, 5e-10, 2e-9};
    cloud_alloc(c, dim, BASE + 3 * PLANTED);
    for (int64_t i = 0; i < BASE * dim; i++)
        c->xyz[i] = rng_uniform(r);
    for (int group = 0; group < 3; group++) {
        for (int64_t n = 0; n < PLANTED; n++) {
            double *p = cloud_point(c, BASE + group * PLANTED + n);
            memcpy(p, cloud_point(c, rng_below(r, BASE)), (size_t)dim * sizeof(double));
            p[0] += shift[group];
        }
    }
}

static void gen_huge_radius(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    cloud_uniform(c, dim, 300, 0.0, 1.0, r);
}

static void gen_outlier(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    enum { SPREAD = 400, DENSE = 100 };
    cloud_alloc(c, dim, SPREAD + DENSE + 2);
    for (int64_t i = 0; i < SPREAD * dim; i++)
        c->xyz[i] = dyadic(rng_uniform(r));
    for (int64_t i = SPREAD * dim; i < (SPREAD + DENSE) * dim; i++)
        c->xyz[i] = dyadic(rng_range(r, 0.5, 0.02));
    for (int k = 0; k < dim; k++) {
        cloud_point(c, SPREAD + DENSE)[k] = 1e7 + 0.25;
        cloud_point(c, SPREAD + DENSE + 1)[k] = 1e7 + 0.25;
    }
    cloud_point(c, SPREAD + DENSE + 1)[0] += 0x1.0p-8;
}

static void gen_narrow_period(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    cloud_uniform(c, dim, 300, 0.0, 2.0625, r);
}

/* The lattice k / 10 for k = 1 .. 13 along each axis. Periodic, its period
 * is 13 / 10 = 1.3: the last slice lies exactly on the period, which wraps
 * to 0, r = 0.1 from the first slice. The distance across the seam then
 * ties with r only when that slice is taken as 0: from 1.3 itself it
 * rounds beyond r (1.3 - 0.1 - 1.3 squares to more than 0.1 * 0.1). */
static void gen_seam(cloud *c, int dim, prox_scalar scalar, rng *r)
{
    (void)scalar;
    (void)r;
    const int side = 13;
    cloud_alloc(c, dim, lattice_count(dim, side));
    fill_lattice(c, dim, side, 1, 1.0, 0);
    for (int64_t i = 0; i < c->count * dim; i++)
        c->xyz[i] /= 10.0; /* divided, not times 0.1: 13 * 0.1 is not 1.3 */
}

/* ---- the class table --------------------------------------------------- */

typedef struct class_spec {
    const char *name;
    generator generate;
    double box[2];    /* period when periodic, for dim 2 and dim 3 */
    double radius[2]; /* for dim 2 and dim 3 */
    bool shiftable;   /* may be moved by whole periods without rounding */
} class_spec;

static const class_spec CLASSES[INPUT_CLASS_COUNT] = {
    [INPUT_UNIFORM] = {"uniform", gen_uniform, {8, 8}, {0.4, 1.0}, true},
    [INPUT_CLUSTERED] = {"clustered", gen_clustered, {8, 8}, {0.1, 0.15}, true},
    [INPUT_DUPLICATES] = {"duplicates", gen_duplicates, {8, 8}, {0.5, 1.0}, true},
    [INPUT_LATTICE] = {"lattice", gen_lattice, {24, 8}, {1.0, 1.0}, true},
    [INPUT_HALF_LATTICE] = {"half_lattice", gen_half_lattice, {12, 5}, {1.0, 1.0}, true},
    [INPUT_DECIMAL_LATTICE] = {"decimal_lattice", gen_decimal_lattice, {20 * 0.1, 8 * 0.1},
                               {0.1, 0.1}, false},
    [INPUT_NEGATIVE] = {"negative", gen_negative, {8, 8}, {0.4, 1.0}, true},
    [INPUT_MIXED_SIGN] = {"mixed_sign", gen_mixed_sign, {24, 8}, {1.0, 1.0}, true},
    [INPUT_HUGE_OFFSET] = {"huge_offset", gen_huge_offset, {8, 8}, {0.4, 1.0}, false},
    [INPUT_EMPTY] = {"empty", gen_empty, {8, 8}, {1.0, 1.0}, true},
    [INPUT_SINGLE] = {"single", gen_single, {8, 8}, {1.0, 1.0}, true},
    [INPUT_ALL_EQUAL] = {"all_equal", gen_all_equal, {1, 1}, {0.01, 0.01}, true},
    [INPUT_TINY_RADIUS] = {"tiny_radius", gen_tiny_radius, {1, 1}, {1e-9, 1e-9}, false},
    [INPUT_HUGE_RADIUS] = {"huge_radius", gen_huge_radius, {1, 1}, {1e6, 1e6}, true},
    [INPUT_OUTLIER] = {"outlier", gen_outlier, {1, 1}, {0.01, 0.01}, false},
    [INPUT_NARROW_PERIOD] = {"narrow_period", gen_narrow_period, {2.0625, 2.0625},
                             {1.0, 1.0}, true},
    [INPUT_SEAM] = {"seam", gen_seam, {1.3, 1.3}, {0.1, 0.1}, false},
};

const char *input_class_name(input_class cls)
{
    return CLASSES[cls].name;
}

const char *periodicity_name(periodicity p)
{
    static const char *const names[PERIODICITY_COUNT] = {"open", "all", "x_only"};
    return names[p];
}

const char *scalar_name(prox_scalar s)
{
    return s == PROX_F64 ? "f64" : "f32";
}

/* ---- test cases -------------------------------------------------------- */

static uint64_t case_seed(input_class cls, int dim)
{
    return 0x70C0FFEEull + (uint64_t)cls * 131u + (uint64_t)dim;
}

static bool axis_is_periodic(periodicity p, int axis)
{
    return p == PERIODIC_ALL || (p == PERIODIC_X_ONLY && axis == 0);
}

/* Moves about a third of the coordinates of periodic axes by -2L .. 2L. */
static void shift_by_periods(cloud *c, const double period[3], rng *r)
{
    static const double multiple[6] = {-2, -1, 1, 2, 0, 0};
    for (int64_t i = 0; i < c->count; i++)
        for (int k = 0; k < c->dim; k++)
            if (period[k] > 0)
                cloud_point(c, i)[k] += multiple[rng_below(r, 6)] * period[k];
}

static void make_queries(test_case *tc, const class_spec *spec, rng *r)
{
    cloud all;
    spec->generate(&all, tc->dim, tc->scalar, r);
    if (all.count < 16) {
        cloud_free(&all);
        cloud_uniform(&all, tc->dim, 50, 0.0, spec->box[tc->dim - 2], r);
    }
    /* the last points: where the planted duplicates and outliers are */
    int64_t keep = all.count < 300 ? all.count : 300;
    cloud_alloc(&tc->queries, tc->dim, keep);
    memcpy(tc->queries.xyz, cloud_point(&all, all.count - keep),
           (size_t)(keep * tc->dim) * sizeof(double));
    cloud_free(&all);
}

void test_case_make(test_case *tc, input_class cls, int dim, prox_scalar scalar,
                    periodicity periodic)
{
    const class_spec *spec = &CLASSES[cls];
    memset(tc, 0, sizeof *tc);
    tc->cls = cls;
    tc->dim = dim;
    tc->scalar = scalar;
    tc->periodic = periodic;
    tc->radius = spec->radius[dim - 2];
    tc->valid = true;
    for (int k = 0; k < dim; k++) {
        if (axis_is_periodic(periodic, k)) {
            tc->period[k] = spec->box[dim - 2];
            if (!(tc->radius < tc->period[k] / 2))
                tc->valid = false;
        }
    }
    rng r = rng_seeded(case_seed(cls, dim));
    spec->generate(&tc->points, dim, scalar, &r);
    make_queries(tc, spec, &r);
    if (spec->shiftable) {
        rng shifts = rng_seeded(case_seed(cls, dim) ^ (0xABCDull + (uint64_t)periodic));
        shift_by_periods(&tc->points, tc->period, &shifts);
        shift_by_periods(&tc->queries, tc->period, &shifts);
    }
    if (scalar == PROX_F32) {
        tc->points_f32 = cloud_round_to_float(&tc->points);
        tc->queries_f32 = cloud_round_to_float(&tc->queries);
    }
}

void test_case_make_large_uniform(test_case *tc, int dim, int64_t count, int64_t queries,
                                  double box, double radius, periodicity periodic)
{
    memset(tc, 0, sizeof *tc);
    tc->cls = INPUT_UNIFORM;
    tc->dim = dim;
    tc->scalar = PROX_F64;
    tc->periodic = periodic;
    tc->radius = radius;
    tc->valid = true;
    for (int k = 0; k < dim; k++)
        if (axis_is_periodic(periodic, k))
            tc->period[k] = box;
    rng r = rng_seeded(0xB16B00B5ull + (uint64_t)count);
    cloud_uniform(&tc->points, dim, count, 0.0, box, &r);
    cloud_uniform(&tc->queries, dim, queries, -1.0, box + 2.0, &r);
    shift_by_periods(&tc->points, tc->period, &r);
}

void test_case_free(test_case *tc)
{
    cloud_free(&tc->points);
    cloud_free(&tc->queries);
    free(tc->points_f32);
    free(tc->queries_f32);
    tc->points_f32 = tc->queries_f32 = NULL;
}

static prox_points view_of(const cloud *c, const float *as_float, prox_scalar scalar)
{
    if (scalar == PROX_F32)
        return prox_points_f32(as_float, c->count, c->dim);
    return prox_points_f64(c->xyz, c->count, c->dim);
}

prox_points test_case_points(const test_case *tc)
{
    return view_of(&tc->points, tc->points_f32, tc->scalar);
}

prox_points test_case_queries(const test_case *tc)
{
    return view_of(&tc->queries, tc->queries_f32, tc->scalar);
}

void test_case_describe(const test_case *tc, char *out, size_t size)
{
    snprintf(out, size, "class=%s dim=%d scalar=%s periodic=%s (L=%g) N=%lld Q=%lld r=%.17g",
             input_class_name(tc->cls), tc->dim, scalar_name(tc->scalar),
             periodicity_name(tc->periodic), tc->period[0], (long long)tc->points.count,
             (long long)tc->queries.count, tc->radius);
}
