/* workloads.c: the standard workloads, exactly as docs/workloads.md defines them.
 * Any change here changes every published number: don't reorder draws. */
#include "workloads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Not in strict C11's math.h. */
static const double pi = 3.14159265358979323846;

prox_wl_rng prox_wl_rng_seed(uint64_t seed)
{
    prox_wl_rng rng = { seed };
    return rng;
}

uint64_t prox_wl_next(prox_wl_rng *rng)
{
    rng->state += 0x9E3779B97F4A7C15u;
    uint64_t z = rng->state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

double prox_wl_unit(prox_wl_rng *rng)
{
    return (double)(prox_wl_next(rng) >> 11) * 0x1p-53;
}

double prox_wl_uniform(prox_wl_rng *rng, double a, double b)
{
    return a + (b - a) * prox_wl_unit(rng);
}

/* n points whose `dim` coordinates are each U(0, side). */
static void uniform_points(int64_t n, int dim, double side, uint64_t seed, double *out)
{
    prox_wl_rng rng = prox_wl_rng_seed(seed);
    for (int64_t i = 0; i < n * dim; i++)
        out[i] = prox_wl_uniform(&rng, 0.0, side);
}

void prox_wl_sph3d(int64_t n, uint64_t seed, double *xyz)
{
    uniform_points(n, 3, 1.0, seed, xyz);
}

double prox_wl_sph3d_radius(int64_t n)
{
    /* Written as the spec writes it, evaluated left to right. */
    return cbrt(30.0 / ((double)n * 4.0 / 3.0 * pi));
}

void prox_wl_nns2d(int64_t n, uint64_t seed, double *xy)
{
    uniform_points(n, 2, 1048576.0, seed, xy);
}

double prox_wl_nns2d_radius(int64_t n, double k)
{
    return 1048576.0 * sqrt(k / (pi * (double)n));
}

void prox_wl_spheres3d(int64_t n, double d, uint64_t seed, double *xyz)
{
    uniform_points(n, 3, prox_wl_spheres3d_side(n, d), seed, xyz);
}

double prox_wl_spheres3d_side(int64_t n, double d)
{
    return cbrt((double)n * 4.0 / 3.0 * pi / d);
}

/* Box draws, in order: class, width, height, lower corner x, y. */
static void mixed2d_box(prox_wl_rng *rng, double *box)
{
    const double side = PROX_WL_MIXED2D_SIDE;
    double c = prox_wl_uniform(rng, 0.0, 1.0);
    double a = c < 0.10 ? 1024.0 : c < 0.35 ? 64.0 : 8.0;
    double w = prox_wl_uniform(rng, 0.5 * a, 1.5 * a);
    double h = prox_wl_uniform(rng, 0.5 * a, 1.5 * a);
    double x = prox_wl_uniform(rng, 0.0, side - w);
    double y = prox_wl_uniform(rng, 0.0, side - h);
    box[0] = x;
    box[1] = y;
    box[2] = x + w;
    box[3] = y + h;
}

/* Segment draws, in order: start x, y, angle, length. */
static void mixed2d_segment(prox_wl_rng *rng, double *seg)
{
    const double side = PROX_WL_MIXED2D_SIDE;
    double x = prox_wl_uniform(rng, 0.0, side);
    double y = prox_wl_uniform(rng, 0.0, side);
    double angle = prox_wl_uniform(rng, 0.0, 2.0 * pi);
    double len = prox_wl_uniform(rng, 0.0, 16.0);
    seg[0] = x;
    seg[1] = y;
    seg[2] = x + len * cos(angle);
    seg[3] = y + len * sin(angle);
}

void prox_wl_mixed2d(int64_t n_boxes, int64_t n_segments, uint64_t seed,
                     double *boxes, double *segments)
{
    prox_wl_rng rng = prox_wl_rng_seed(seed);
    for (int64_t i = 0; i < n_boxes; i++)
        mixed2d_box(&rng, boxes + 4 * i);
    for (int64_t i = 0; i < n_segments; i++)
        mixed2d_segment(&rng, segments + 4 * i);
}

/* W5 fluid3d: the spheres first (centre x, y, z, then diameter, sphere by
 * sphere), then the particles (x, y, z). */
void prox_wl_fluid3d(int64_t n_particles, uint64_t seed, double *spheres, double *particles)
{
    const double side = PROX_WL_FLUID3D_SIDE;
    prox_wl_rng rng = prox_wl_rng_seed(seed);
    for (int64_t i = 0; i < PROX_WL_FLUID3D_SPHERES; i++) {
        for (int k = 0; k < 3; k++)
            spheres[4 * i + k] = prox_wl_uniform(&rng, 0.0, side);
        spheres[4 * i + 3] = prox_wl_uniform(&rng, 0x1p-4, 0x1p-2);
    }
    for (int64_t i = 0; i < n_particles; i++) {
        particles[3 * i] = prox_wl_uniform(&rng, 0.0, side);
        particles[3 * i + 1] = prox_wl_uniform(&rng, 0.0, side);
        particles[3 * i + 2] = prox_wl_uniform(&rng, 0.5 * side, side);
    }
}

/* ---- Z-order (docs/workloads.md, "sph3d --order z") ------------------- */

/* The low `bits` bits of v spread to every dim-th bit (bit b to bit b * dim). */
static uint64_t spread_bits(uint64_t v, int bits, int dim)
{
    uint64_t out = 0;
    for (int b = 0; b < bits; b++)
        out |= ((v >> b) & 1u) << (b * dim);
    return out;
}

typedef struct z_key {
    uint64_t code;
    int64_t index;
} z_key;

static int compare_z_keys(const void *a, const void *b)
{
    const z_key *x = a, *y = b;
    if (x->code != y->code)
        return x->code < y->code ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The point's cell along axis k of a grid of `steps` cells over [lo, hi]. */
static uint64_t z_cell(double v, double lo, double hi, double steps)
{
    double c = hi > lo ? (v - lo) / (hi - lo) * steps : 0.0;
    return c >= steps - 1 ? (uint64_t)(steps - 1) : (uint64_t)c;
}

bool prox_wl_order_z(double *xyz, int64_t n, int dim)
{
    int bits = 64 / dim > 32 ? 32 : 64 / dim;
    double steps = ldexp(1.0, bits), lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int k = 0; k < dim && n > 0; k++) {
        lo[k] = hi[k] = xyz[k];
        for (int64_t i = 1; i < n; i++) {
            lo[k] = xyz[i * dim + k] < lo[k] ? xyz[i * dim + k] : lo[k];
            hi[k] = xyz[i * dim + k] > hi[k] ? xyz[i * dim + k] : hi[k];
        }
    }
    size_t bytes = (size_t)n * (size_t)dim * sizeof *xyz;
    z_key *key = malloc((size_t)n * sizeof *key + 1);
    double *sorted = malloc(bytes + 1);
    if (!key || !sorted) {
        free(key);
        free(sorted);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        key[i] = (z_key){0, i};
        for (int k = 0; k < dim; k++)
            key[i].code |= spread_bits(z_cell(xyz[i * dim + k], lo[k], hi[k], steps), bits, dim)
                           << k;
    }
    qsort(key, (size_t)n, sizeof *key, compare_z_keys);
    for (int64_t i = 0; i < n; i++)
        memcpy(sorted + i * dim, xyz + key[i].index * dim, (size_t)dim * sizeof *xyz);
    memcpy(xyz, sorted, bytes);
    free(sorted);
    free(key);
    return true;
}
