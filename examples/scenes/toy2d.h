/* toy2d.h: the hash-multimap article's 2D particle toy: particles in a box that repel each
 * other within the interaction distance d, neighbours found each frame by
 * brute force (PROX_ALGO_BRUTE) or the grid (the hash-multimap article's spatial hash; here
 * prox's uniform grid). The hash-multimap article went from ~300 particles to 7,000+ with
 * the hash; `prox demo toy2d` measures how many run at 60 frames per second
 * with each.
 *
 * The model (unit masses): a pair at distance r <= d repels with force
 * k (1 - r/d) along the line of centres, the force of the potential
 * U(r) = k d (1 - r/d)^2 / 2; semi-implicit Euler (v += f dt, x += v dt);
 * walls reflect a particle elastically (mirror position, reversed velocity).
 * The density is fixed: the box side is d sqrt(pi N / c), so a particle has
 * c = 5 others within d on average whatever N, and the frame time grows
 * as N (grid) or N^2 (brute force). Pair forces are equal and opposite, so
 * momentum changes only at the walls; the total energy (kinetic + U)
 * drifts only by the integration error, O(dt).
 *
 * Forces are summed per particle over its sorted neighbour row (CSR lists):
 * the same bits for every thread count.
 */
#ifndef PROX_SCENES_TOY2D_H
#define PROX_SCENES_TOY2D_H

#include <prox/prox.h>

typedef struct toy2d_params {
    int64_t particles;   /* N (default 1000) */
    double neighbours;   /* c: mean particles within d of a particle (default 5) */
    double distance;     /* d (default 1) */
    double stiffness;    /* k (default 1) */
    double dt;           /* time step (default 0.05) */
    double speed;        /* initial velocity components U(-speed, speed) (default 0.5) */
    uint64_t seed;       /* default 1 */
    prox_algo algo;      /* PROX_ALGO_GRID (default) or PROX_ALGO_BRUTE */
    int threads;         /* 0 = OpenMP default, 1 = none */
} toy2d_params;

toy2d_params toy2d_default_params(void);

typedef struct toy2d_world {
    toy2d_params params;
    int64_t n;
    double side;       /* the box is [0, side]^2 */
    double *pos;       /* 2n */
    double *vel;       /* 2n */
    prox_lists lists;  /* each particle's neighbours within d */
    int64_t step;
} toy2d_world;

/* Positions U(0, side) (x, y per particle), then velocities, from one
 * SplitMix64 stream. Returns PROX_ERR_INVALID for bad parameters,
 * PROX_ERR_NO_MEMORY; nothing stays allocated on failure. */
prox_status toy2d_world_init(toy2d_world *w, const toy2d_params *params);
void toy2d_world_free(toy2d_world *w);
/* The two phases of a frame: neighbours (prox_pairs into w->lists;
 * *pairs = unordered pairs found), then forces and integration. */
prox_status toy2d_world_neighbours(toy2d_world *w, int64_t *pairs);
void toy2d_world_integrate(toy2d_world *w);
prox_status toy2d_world_step(toy2d_world *w, int64_t *pairs);

/* Kinetic + potential energy (the potential by brute force over every
 * pair: for tests and small N). */
prox_status toy2d_energy(const toy2d_world *w, double *energy);
void toy2d_momentum(const toy2d_world *w, double out[2]);

/* `prox demo toy2d`. */
int prox_demo_toy2d(int argc, char **argv);

#endif
