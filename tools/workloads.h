/* workloads.h: the standard workloads of docs/workloads.md (the project's
 * workload spec), generated bit for bit as specified, so that `prox gen`,
 * `prox bench`, the tests and the benchmarks all see the same data.
 *
 * Every generator writes packed doubles into a caller-provided array and
 * draws its numbers from a fresh SplitMix64 stream seeded with `seed`, in the
 * order the spec gives: item by item, coordinate by coordinate.
 */
#ifndef PROX_TOOLS_WORKLOADS_H
#define PROX_TOOLS_WORKLOADS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROX_WL_DEFAULT_SEED 1u

/* SplitMix64: the one random stream all workloads use. */
typedef struct prox_wl_rng {
    uint64_t state;
} prox_wl_rng;

prox_wl_rng prox_wl_rng_seed(uint64_t seed);
uint64_t prox_wl_next(prox_wl_rng *rng);
/* (next() >> 11) * 2^-53: uniform in [0, 1). */
double prox_wl_unit(prox_wl_rng *rng);
/* a + (b - a) * unit(), evaluated exactly in that order. */
double prox_wl_uniform(prox_wl_rng *rng, double a, double b);

/* W1 sph3d: n points uniform in the unit cube; xyz holds 3 * n doubles. */
void prox_wl_sph3d(int64_t n, uint64_t seed, double *xyz);
/* cbrt(30 / (n * 4/3 * pi)): about 30 neighbours per interior point. */
double prox_wl_sph3d_radius(int64_t n);

/* W2 nns2d: n points uniform in [0, 2^20)^2; xy holds 2 * n doubles. */
void prox_wl_nns2d(int64_t n, uint64_t seed, double *xy);
/* 2^20 * sqrt(k / (pi * n)): about k neighbours per point. */
double prox_wl_nns2d_radius(int64_t n, double k);

/* W3 spheres3d: centres of n unit spheres uniform in [0, L)^3 for volume
 * fraction d; xyz holds 3 * n doubles. Spheres overlap when their centres
 * are at most 2 apart. */
void prox_wl_spheres3d(int64_t n, double d, uint64_t seed, double *xyz);
/* The cube side L = cbrt(n * 4/3 * pi / d). */
double prox_wl_spheres3d_side(int64_t n, double d);

/* The n points of xyz (dim = 2 or 3 doubles each) reordered along the
 * Z-order curve (`prox gen --order z`): each coordinate taken to a cell of
 * a grid of 2^(64 / dim) steps (2^21 in 3D, 2^32 in 2D) over the points'
 * box, the cells' bits interleaved x first, the points in increasing code,
 * equal codes in their given order. False, xyz unchanged, when out of
 * memory. */
bool prox_wl_order_z(double *xyz, int64_t n, int dim);

/* W4 mixed2d: n_boxes boxes in [0, 8192)^2 as (minx, miny, maxx, maxy),
 * then n_segments segments as (x0, y0, x1, y1) where (x0, y0) is the drawn
 * start and (x1, y1) = (x0 + len * cos(angle), y0 + len * sin(angle)).
 * boxes holds 4 * n_boxes doubles and segments 4 * n_segments (segments
 * may be NULL when n_segments is 0). */
void prox_wl_mixed2d(int64_t n_boxes, int64_t n_segments, uint64_t seed,
                     double *boxes, double *segments);
#define PROX_WL_MIXED2D_SIDE 8192.0

/* W5 fluid3d (Pouchol et al. 2009, Figure 6): in the box [0, 4)^3, 2,000 static spheres
 * as (centre x, y, z, diameter U(2^-4, 2^-2)), spheres holds 4 * 2000
 * doubles; then n_particles fluid particles (diameter 2^-6) at
 * (U(0,4), U(0,4), U(2,4)), particles holds 3 * n_particles doubles. */
#define PROX_WL_FLUID3D_SIDE 4.0
#define PROX_WL_FLUID3D_SPHERES 2000
#define PROX_WL_FLUID3D_DIAMETER 0x1p-6
void prox_wl_fluid3d(int64_t n_particles, uint64_t seed, double *spheres, double *particles);

#ifdef __cplusplus
}
#endif
#endif
