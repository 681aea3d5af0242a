/* toy2d_world.c: the physics of the hash-multimap article's 2D particle toy (toy2d.h). */
#include "toy2d.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

/* Not in strict C11's math.h. */
static const double pi = 3.14159265358979323846;

toy2d_params toy2d_default_params(void)
{
    toy2d_params p;
    memset(&p, 0, sizeof p);
    p.particles = 1000;
    p.neighbours = 5.0;
    p.distance = 1.0;
    p.stiffness = 1.0;
    p.dt = 0.05;
    p.speed = 0.5;
    p.seed = 1;
    p.algo = PROX_ALGO_GRID;
    p.threads = 0;
    return p;
}

static int thread_count(int threads)
{
    return threads > 0 ? threads : omp_get_max_threads();
}

void toy2d_world_free(toy2d_world *w)
{
    free(w->pos);
    free(w->vel);
    prox_lists_free(&w->lists);
    memset(w, 0, sizeof *w);
}

static bool params_ok(const toy2d_params *p)
{
    return p->particles >= 0 && p->particles <= PROX_MAX_POINTS && p->neighbours > 0 &&
           p->distance > 0 && isfinite(p->distance) && p->stiffness >= 0 && p->dt > 0 &&
           p->speed >= 0 && (p->algo == PROX_ALGO_GRID || p->algo == PROX_ALGO_BRUTE);
}

prox_status toy2d_world_init(toy2d_world *w, const toy2d_params *params)
{
    memset(w, 0, sizeof *w);
    prox_lists_init(&w->lists, NULL);
    if (!params_ok(params))
        return PROX_ERR_INVALID;
    w->params = *params;
    w->n = params->particles;
    /* Fixed density: c = N pi d^2 / side^2 particles within d of one. */
    w->side = params->distance * sqrt(pi * (double)(w->n > 0 ? w->n : 1) / params->neighbours);
    size_t n = (size_t)(w->n > 0 ? w->n : 1);
    w->pos = malloc(2 * n * sizeof(double));
    w->vel = malloc(2 * n * sizeof(double));
    if (!w->pos || !w->vel) {
        toy2d_world_free(w);
        return PROX_ERR_NO_MEMORY;
    }
    prox_wl_rng rng = prox_wl_rng_seed(params->seed);
    for (int64_t i = 0; i < 2 * w->n; i++)
        w->pos[i] = prox_wl_uniform(&rng, 0.0, w->side);
    for (int64_t i = 0; i < 2 * w->n; i++)
        w->vel[i] = prox_wl_uniform(&rng, -params->speed, params->speed);
    return PROX_OK;
}

prox_status toy2d_world_neighbours(toy2d_world *w, int64_t *pairs)
{
    prox_points points = prox_points_f64(w->pos, w->n, 2);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = w->params.distance;
    desc.threads = w->params.threads;
    prox_stats stats = {0};
    prox_status st = prox_pairs(&points, &desc, w->params.algo, prox_sink_lists(&w->lists),
                                &stats);
    if (pairs)
        *pairs = stats.pairs;
    return st;
}

/* Mirror a coordinate that left [0, side] back in, reversing its velocity. */
static void reflect(double *x, double *v, double side)
{
    if (*x < 0) {
        *x = -*x;
        *v = -*v;
    } else if (*x > side) {
        *x = 2 * side - *x;
        *v = -*v;
    }
    /* A particle faster than a box per step: keep it inside all the same. */
    *x = *x < 0 ? 0 : *x > side ? side : *x;
}

void toy2d_world_integrate(toy2d_world *w)
{
    const double d = w->params.distance, k = w->params.stiffness, dt = w->params.dt;
    const double side = w->side;
    double *pos = w->pos, *vel = w->vel;
    const int64_t *offsets = w->lists.offsets;
    const prox_index *indices = w->lists.indices;
    /* Forces from the positions before the move: all velocities first. */
#pragma omp parallel for num_threads(thread_count(w->params.threads)) schedule(static)
    for (int64_t i = 0; i < w->n; i++) {
        double f[2] = {0.0, 0.0};
        for (int64_t e = offsets[i]; e < offsets[i + 1]; e++) {
            int64_t j = indices[e];
            double dx = pos[2 * i] - pos[2 * j], dy = pos[2 * i + 1] - pos[2 * j + 1];
            double r = sqrt(dx * dx + dy * dy);
            if (r > 0 && r < d) {
                double s = k * (1.0 - r / d) / r;
                f[0] += s * dx;
                f[1] += s * dy;
            }
        }
        vel[2 * i] += f[0] * dt;
        vel[2 * i + 1] += f[1] * dt;
    }
#pragma omp parallel for num_threads(thread_count(w->params.threads)) schedule(static)
    for (int64_t i = 0; i < w->n; i++)
        for (int a = 0; a < 2; a++) {
            pos[2 * i + a] += vel[2 * i + a] * dt;
            reflect(&pos[2 * i + a], &vel[2 * i + a], side);
        }
    w->step++;
}

prox_status toy2d_world_step(toy2d_world *w, int64_t *pairs)
{
    prox_status st = toy2d_world_neighbours(w, pairs);
    if (st == PROX_OK)
        toy2d_world_integrate(w);
    return st;
}

typedef struct potential_sum {
    const toy2d_world *w;
    double sum;
} potential_sum;

static int add_potential(prox_index i, prox_index j, void *user)
{
    potential_sum *p = user;
    const double *a = &p->w->pos[2 * (int64_t)i], *b = &p->w->pos[2 * (int64_t)j];
    double d = p->w->params.distance;
    double r = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]));
    double x = 1.0 - r / d;
    p->sum += 0.5 * p->w->params.stiffness * d * x * x;
    return 0;
}

prox_status toy2d_energy(const toy2d_world *w, double *energy)
{
    potential_sum p = {w, 0.0};
    prox_points points = prox_points_f64(w->pos, w->n, 2);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = w->params.distance;
    desc.threads = 1;
    prox_status st = prox_pairs(&points, &desc, PROX_ALGO_BRUTE,
                                prox_sink_callback(add_potential, &p), NULL);
    double kinetic = 0.0;
    for (int64_t i = 0; i < 2 * w->n; i++)
        kinetic += 0.5 * w->vel[i] * w->vel[i];
    *energy = kinetic + p.sum;
    return st;
}

void toy2d_momentum(const toy2d_world *w, double out[2])
{
    out[0] = out[1] = 0.0;
    for (int64_t i = 0; i < w->n; i++) {
        out[0] += w->vel[2 * i];
        out[1] += w->vel[2 * i + 1];
    }
}
