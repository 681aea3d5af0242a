/* dem_world.c: the physics of the falling spheres (Poirrier 2009, section 6, W6);
 * dem.h explains the scheme. Only the public prox API and the W3 generator. */
#include "dem.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

dem_params dem_default_params(void)
{
    dem_params p;
    memset(&p, 0, sizeof p);
    p.spheres = 10000;
    p.fraction = 0.1;
    p.seed = PROX_WL_DEFAULT_SEED;
    p.gravity = 0.0;
    p.dt = 1.0;
    p.restitution = 0.5;
    p.algo = PROX_BROAD_GRID;
    p.rebuild = false;
    p.threads = 0;
    return p;
}

static int thread_count(int threads)
{
    return threads > 0 ? threads : omp_get_max_threads();
}

static double now_ms(void)
{
    return omp_get_wtime() * 1e3;
}

void dem_world_free(dem_world *w)
{
    prox_broad_destroy(w->broad);
    prox_pair_buffer_free(&w->pairs);
    free(w->pos);
    free(w->vel);
    free(w->bounds);
    memset(w, 0, sizeof *w);
}

prox_status dem_world_init(dem_world *w, const dem_params *params)
{
    memset(w, 0, sizeof *w);
    prox_pair_buffer_init(&w->pairs, NULL);
    if (params->spheres < 0 || params->spheres > PROX_MAX_POINTS || !(params->fraction > 0) ||
        !(params->dt > 0) || !(params->gravity >= 0) || !(params->restitution >= 0) ||
        !(params->restitution <= 1))
        return PROX_ERR_INVALID;
    w->params = *params;
    w->n = params->spheres;
    w->radius = 1.0;
    w->side = w->n > 0 ? prox_wl_spheres3d_side(w->n, params->fraction) : 1.0;
    w->lo = 0.0;
    w->hi = w->side;
    /* Default gravity: from rest, half the box height in 60 steps. */
    double t60 = 60.0 * params->dt;
    w->gravity = params->gravity > 0 ? params->gravity : w->side / (t60 * t60);
    size_t n = (size_t)(w->n > 0 ? w->n : 1);
    w->pos = malloc(3 * n * sizeof(double));
    w->vel = calloc(3 * n, sizeof(double));
    w->bounds = malloc(6 * n * sizeof(double));
    if (!w->pos || !w->vel || !w->bounds) {
        dem_world_free(w);
        return PROX_ERR_NO_MEMORY;
    }
    prox_wl_spheres3d(w->n, params->fraction, params->seed, w->pos);

    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = params->algo;
    desc.threads = params->threads;
    /* The grid's cell: one sphere diameter (all boxes are the same size). */
    desc.cell_size = 2.0 * w->radius;
    prox_status st = prox_broad_create(&desc, &w->broad);
    if (st) {
        dem_world_free(w);
        return st;
    }
    return PROX_OK;
}

/* Keep centre component x[k] in [lo, hi]; an outward velocity bounces with e. */
static void wall(double *x, double *v, double lo, double hi, double e)
{
    if (*x < lo) {
        *x = lo;
        if (*v < 0)
            *v = -e * *v;
    } else if (*x > hi) {
        *x = hi;
        if (*v > 0)
            *v = -e * *v;
    }
}

static void walls(dem_world *w, int64_t i)
{
    for (int k = 0; k < 3; k++)
        wall(&w->pos[3 * i + k], &w->vel[3 * i + k], w->lo, w->hi, w->params.restitution);
}

/* Step 1: constant acceleration integrated exactly, then the walls. */
static void integrate(dem_world *w)
{
    const double dt = w->params.dt, g = w->gravity;
    const double drop = 0.5 * g * dt * dt;
#pragma omp parallel for num_threads(thread_count(w->params.threads)) schedule(static)
    for (int64_t i = 0; i < w->n; i++) {
        double *x = &w->pos[3 * i], *v = &w->vel[3 * i];
        x[0] += v[0] * dt;
        x[1] += v[1] * dt;
        x[2] += v[2] * dt - drop;
        v[2] -= g * dt;
        walls(w, i);
    }
}

static void update_bounds(dem_world *w)
{
    const double r = w->radius;
#pragma omp parallel for num_threads(thread_count(w->params.threads)) schedule(static)
    for (int64_t i = 0; i < w->n; i++)
        for (int k = 0; k < 3; k++) {
            w->bounds[6 * i + k] = w->pos[3 * i + k] - r;
            w->bounds[6 * i + 3 + k] = w->pos[3 * i + k] + r;
        }
}

/* Step 2: the broad phase's overlapping AABB pairs, sorted by (i, j). */
static prox_status broad_phase(dem_world *w, dem_step_info *info)
{
    prox_boxes boxes = prox_boxes_f64(w->bounds, w->n, 3);
    prox_stats st_update = { 0 }, st_pairs = { 0 };
    prox_status st;
    if (!w->built || w->params.rebuild) {
        st = prox_broad_build(w->broad, &boxes);
        st_update.rebuilt = true;
        w->built = st == PROX_OK;
    } else {
        st = prox_broad_update(w->broad, &boxes, &st_update);
    }
    if (st == PROX_OK)
        st = prox_broad_pairs(w->broad, prox_sink_buffer(&w->pairs), &st_pairs);
    info->candidates = st_pairs.candidates;
    info->box_pairs = w->pairs.count;
    info->rebuilt = st_update.rebuilt;
    return st;
}

/* Step 3: each pair in turn, with the positions as the earlier pairs left
 * them (Poirrier 2009, section 6: pairwise, not globally). */
static int64_t resolve_pairs(dem_world *w)
{
    const double diameter = 2.0 * w->radius, e = w->params.restitution;
    int64_t contacts = 0;
    for (int64_t k = 0; k < w->pairs.count; k++) {
        double *xi = &w->pos[3 * (int64_t)w->pairs.pairs[k].i];
        double *xj = &w->pos[3 * (int64_t)w->pairs.pairs[k].j];
        double d[3] = { xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2] };
        double dist2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if (dist2 >= diameter * diameter)
            continue;
        contacts++;
        double dist = sqrt(dist2);
        double normal[3] = { 0.0, 0.0, 1.0 }; /* coincident centres: i goes up */
        if (dist > 0)
            for (int a = 0; a < 3; a++)
                normal[a] = d[a] / dist;
        double push = 0.5 * (diameter - dist);
        double *vi = &w->vel[3 * (int64_t)w->pairs.pairs[k].i];
        double *vj = &w->vel[3 * (int64_t)w->pairs.pairs[k].j];
        double vn = 0.0;
        for (int a = 0; a < 3; a++)
            vn += (vi[a] - vj[a]) * normal[a];
        /* Equal masses: each gets half the impulse (1 + e) vn. */
        double impulse = vn < 0 ? 0.5 * (1.0 + e) * vn : 0.0;
        for (int a = 0; a < 3; a++) {
            xi[a] += push * normal[a];
            xj[a] -= push * normal[a];
            vi[a] -= impulse * normal[a];
            vj[a] += impulse * normal[a];
        }
    }
    return contacts;
}

/* The walls after the pairs; returns the potential energy they added:
 * g times the lift of the centres that pairs had pushed below the floor
 * (position projection against a fixed wall cannot conserve energy; this is
 * the scheme's one source of energy, dem.h). Serial: the sum is
 * deterministic and the loop is cheap next to the pairs. */
static double walls_all(dem_world *w)
{
    double lift = 0.0;
    for (int64_t i = 0; i < w->n; i++) {
        double z = w->pos[3 * i + 2];
        if (z < w->lo)
            lift += w->lo - z;
        walls(w, i);
    }
    return w->gravity * lift;
}

void dem_world_integrate(dem_world *w)
{
    integrate(w);
    update_bounds(w);
}

prox_status dem_world_broad(dem_world *w, dem_step_info *info)
{
    return broad_phase(w, info);
}

void dem_world_narrow(dem_world *w, dem_step_info *info)
{
    info->contacts = resolve_pairs(w);
    info->wall_energy = walls_all(w);
    w->step++;
}

prox_status dem_world_step(dem_world *w, dem_step_info *info)
{
    dem_step_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    double t0 = now_ms();
    dem_world_integrate(w);
    double t1 = now_ms();
    prox_status st = dem_world_broad(w, info);
    if (st)
        return st;
    double t2 = now_ms();
    dem_world_narrow(w, info);
    double t3 = now_ms();
    info->integrate_ms = t1 - t0;
    info->broad_ms = t2 - t1;
    info->narrow_ms = t3 - t2;
    return PROX_OK;
}

double dem_energy(const dem_world *w)
{
    double e = 0.0;
    for (int64_t i = 0; i < w->n; i++) {
        const double *v = &w->vel[3 * i];
        e += 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) + w->gravity * w->pos[3 * i + 2];
    }
    return e;
}

void dem_momentum(const dem_world *w, double out[3])
{
    out[0] = out[1] = out[2] = 0.0;
    for (int64_t i = 0; i < w->n; i++)
        for (int k = 0; k < 3; k++)
            out[k] += w->vel[3 * i + k];
}
