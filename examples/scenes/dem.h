/* dem.h: the falling spheres of Poirrier 2009, section 6 (workload W6 `dem3d`).
 *
 * N spheres of radius 1 start as W3's spheres (volume fraction 0.1, centres
 * uniform in [0, L)^3), at rest, under a constant downward acceleration, in
 * a closed box whose floor stops them. Each step:
 *   1. integration: x += v dt - g dt^2/2 (z), v -= g dt (z): exact for a
 *      constant acceleration, so free fall follows z0 - g t^2/2; then the
 *      walls;
 *   2. broad phase: the spheres' AABBs go to a prox_broad (updated, or
 *      rebuilt with `rebuild`), whose pairs are the candidate interactions;
 *   3. narrow phase: the pairs are handled one after the other in the
 *      broad phase's sorted order, as the seed does ("handle them pairwise,
 *      possibly generating more unhandled interactions"): a pair whose
 *      spheres overlap at that moment is pushed apart along the line of
 *      centres by half the overlap each (position projection; the pair's
 *      centre of mass stays put, so potential energy is unchanged), and an
 *      approaching pair loses its normal relative velocity up to the
 *      restitution e (kinetic energy can only drop, by (1 - e^2) vn^2 / 4);
 *      then the walls again.
 * Walls are position projections too: a centre closer than the radius to a
 * wall is put back at the radius and its outward velocity reversed and
 * scaled by e.
 *
 * Energy (per unit mass, E = sum v^2/2 + g z): integration conserves it
 * exactly, the walls after integration never add any (a centre that starts
 * the step inside the box and is stopped by the floor has fallen at least as
 * far as it is lifted), pair handling never adds any (above). The one source
 * is the wall pass after the pairs: a sphere pushed into the floor by the
 * one above it is put back up, gaining g times the lift; a step reports it
 * (dem_step_info.wall_energy), so E(step) <= E(step - 1) + wall_energy
 * holds exactly up to rounding. In a resting pile this bounded gain and the
 * collisions' losses balance; the pile does not settle to zero velocity.
 *
 * Every structure returns the same sorted pairs, so the trajectory is the
 * same, bit for bit, for every structure and every thread count.
 */
#ifndef PROX_SCENES_DEM_H
#define PROX_SCENES_DEM_H

#include <prox/prox.h>

typedef struct dem_params {
    int64_t spheres;       /* N (default 10,000: Poirrier 2009, Figure 10) */
    double fraction;       /* volume fraction of the initial cloud (default 0.1, W6) */
    uint64_t seed;         /* W3's seed (default 1) */
    double gravity;        /* downward acceleration; 0 = L / 3600 per step^2: a sphere at
                              rest falls half the box height in 60 steps (the default) */
    double dt;             /* time step (default 1) */
    double restitution;    /* e in [0, 1] (default 0.5) */
    prox_broad_algo algo;  /* default PROX_BROAD_GRID */
    bool rebuild;          /* true: prox_broad_build each step; false: prox_broad_update */
    int threads;           /* 0 = OpenMP default, 1 = none */
} dem_params;

dem_params dem_default_params(void);

/* What one step did and how long its phases took (milliseconds). */
typedef struct dem_step_info {
    double broad_ms;      /* prox_broad_update/build + prox_broad_pairs */
    double narrow_ms;     /* exact sphere tests and overlap resolution */
    double integrate_ms;  /* gravity, positions, walls, AABBs */
    int64_t candidates;   /* the broad phase's exact box tests (prox_stats.candidates) */
    int64_t box_pairs;    /* overlapping AABB pairs */
    int64_t contacts;     /* pairs whose spheres overlapped when handled */
    bool rebuilt;         /* the structure rebuilt instead of updating */
    double wall_energy;   /* energy the last wall pass added (see above) */
} dem_step_info;

typedef struct dem_world {
    dem_params params;
    int64_t n;
    double radius;           /* 1 */
    double side;             /* L: the initial cloud spans [0, L)^3 */
    double lo, hi;           /* the centres stay in [lo, hi]^3 = [0, L]^3; the box is
                                [-radius, L + radius]^3 */
    double gravity;          /* resolved */
    double *pos;             /* 3n: x, y, z per sphere */
    double *vel;             /* 3n */
    double *bounds;          /* 6n: the AABBs, min xyz then max xyz per sphere */
    prox_broad *broad;
    prox_pair_buffer pairs;
    int64_t step;            /* steps done */
    bool built;
} dem_world;

/* Allocate and place the spheres (W3 with the given seed and fraction).
 * On failure returns the status (message in prox_last_error() when the
 * library failed) and leaves nothing allocated. */
prox_status dem_world_init(dem_world *w, const dem_params *params);
void dem_world_free(dem_world *w);
/* One step; info may be NULL (the phases' times are measured here). */
prox_status dem_world_step(dem_world *w, dem_step_info *info);
/* The same step in its three phases, for callers that time them
 * themselves: integrate, broad, narrow, in this order (info zeroed by the
 * caller; broad fills the pair counts, narrow the contacts). */
void dem_world_integrate(dem_world *w);
prox_status dem_world_broad(dem_world *w, dem_step_info *info);
void dem_world_narrow(dem_world *w, dem_step_info *info);

/* Mechanical energy per unit mass: sum of v^2/2 + g z. */
double dem_energy(const dem_world *w);
/* Total momentum per unit mass (3 components). */
void dem_momentum(const dem_world *w, double out[3]);

/* `prox demo dem` and `prox bench dem3d`. */
int prox_demo_dem(int argc, char **argv);
int prox_bench_dem3d(int argc, char **argv);

#endif
