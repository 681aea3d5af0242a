/* broad_grid.c: uniform hashing of boxes (seed 000 section 2.1), one cell
 * size for every box, in two forms:
 *
 * - Queries (boxes, segments, swept boxes) and self pairs of boxes of mixed
 *   sizes: each box stored in every cell it covers (the engine of
 *   multilevel_hash.c with a single level). The cell is desc.cell_size, or
 *   the median longest box edge. A box covering more than the engine's cap
 *   of cells (a big box among small ones, the weakness section 2.2
 *   addresses) is kept in an oversize list that every query takes.
 * - Self pairs of boxes of similar sizes (W3's equal spheres, particles,
 *   DEM grains): the boxes' centres in the points grid (grid.c). Two boxes
 *   overlap only if their centres differ by at most E_k along each axis k
 *   (E_k: the longest extent along k), so within sqrt(sum E_k^2) of each
 *   other: a ball search of that radius over the centres, each pair found
 *   once by the half stencil, is a superset, and the exact box test keeps
 *   the pairs that overlap. The per-cell engine is then built only when a
 *   query first needs it (prepare_queries). */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "alloc.h"
#include "broad.h"
#include "error.h"
#include "grid_private.h"

/* At most 2^40 cells along an axis of the data. */
#define MAX_SPAN_BITS 40
#define SAMPLE 4096
/* Centres are searched when their radius is at most this many median
 * longest edges: beyond, a few big boxes would make every ball large. */
#define CENTRES_MAX_RADIUS_IN_EDGES 4.0

typedef struct uniform_grid {
    void *levels;       /* the per-cell engine (prox_levels_*) */
    bool levels_ready;  /* built for the current boxes */
    prox_grid *centres; /* the points grid of the box centres, or NULL */
    double *centre;     /* dim doubles per box */
    int64_t centre_capacity;
} uniform_grid;

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median longest edge (of at most SAMPLE evenly spaced boxes). */
static double median_longest_edge(const broad_input *in)
{
    double sample[SAMPLE];
    int64_t step = in->n > SAMPLE ? in->n / SAMPLE : 1;
    int count = 0;
    for (int64_t i = 0; i < in->n && count < SAMPLE; i += step)
        sample[count++] = prox_longest_edge(&in->box[i], in->dim);
    if (count == 0)
        return 0.0;
    qsort(sample, (size_t)count, sizeof sample[0], compare_double);
    return sample[count / 2];
}

static prox_status build_levels(uniform_grid *u, const broad_input *in)
{
    double extent = 0.0;
    for (int k = 0; k < in->dim; k++)
        extent = in->hi[k] - in->lo[k] > extent ? in->hi[k] - in->lo[k] : extent;
    double cell = in->desc->cell_size > 0 ? in->desc->cell_size : median_longest_edge(in);
    if (!(cell > 0))
        cell = extent > 0 ? extent / 64 : 1.0;
    double finest = ldexp(extent, -MAX_SPAN_BITS);
    cell = cell < finest ? finest : cell;
    prox_status st = prox_levels_build(&u->levels, in, &cell, 1, 0, false);
    u->levels_ready = st == PROX_OK;
    return st;
}

/* The radius within which every overlapping pair's centres lie, or 0 when
 * the sizes are too mixed for a ball search. The margin covers the
 * rounding of the centres (a few ulps of the largest coordinate) and of
 * the grid's squared distances (relative). */
static double centres_radius(const broad_input *in)
{
    double longest[3] = {0, 0, 0}, largest = 0;
    for (int64_t i = 0; i < in->n; i++)
        for (int k = 0; k < in->dim; k++) {
            const prox_aabb *b = &in->box[i];
            double e = b->hi[k] - b->lo[k];
            longest[k] = e > longest[k] ? e : longest[k];
            double m = fabs(b->lo[k]) > fabs(b->hi[k]) ? fabs(b->lo[k]) : fabs(b->hi[k]);
            largest = m > largest ? m : largest;
        }
    double reach = sqrt(longest[0] * longest[0] + longest[1] * longest[1] +
                        longest[2] * longest[2]);
    if (!isfinite(reach) || reach > CENTRES_MAX_RADIUS_IN_EDGES * median_longest_edge(in))
        return 0.0;
    return reach * (1.0 + 0x1p-30) + 16.0 * DBL_EPSILON * largest + DBL_MIN;
}

static prox_status build_centres(uniform_grid *u, const broad_input *in, double radius)
{
    int dim = in->dim;
    if (!prox_reserve(in->allocator, (void **)&u->centre, &u->centre_capacity, dim * in->n,
                      sizeof *u->centre))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %lld box centres",
                         (long long)in->n);
#pragma omp parallel for num_threads(in->threads) if (in->threads > 1 && in->n > 65536) \
    schedule(static)
    for (int64_t i = 0; i < in->n; i++)
        for (int k = 0; k < dim; k++)
            u->centre[dim * i + k] = 0.5 * in->box[i].lo[k] + 0.5 * in->box[i].hi[k];
    prox_grid_destroy(u->centres); /* the radius is fixed at creation */
    u->centres = NULL;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = radius;
    desc.threads = in->threads;
    desc.allocator = *in->allocator;
    prox_points points = prox_points_f64(u->centre, in->n, dim);
    prox_status st = prox_grid_create(&desc, &u->centres);
    if (!st)
        st = prox_grid_build(u->centres, &points);
    if (st) {
        prox_grid_destroy(u->centres);
        u->centres = NULL;
    }
    return st;
}

static prox_status grid_build(void **impl, const broad_input *in)
{
    uniform_grid *u = *impl;
    if (!u) {
        u = prox_alloc_array(in->allocator, 1, sizeof *u);
        if (!u)
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for a uniform grid");
        *u = (uniform_grid){0};
        *impl = u;
    }
    u->levels_ready = false;
    prox_grid_destroy(u->centres);
    u->centres = NULL;
    double radius = centres_radius(in);
    if (radius > 0) {
        prox_status st = build_centres(u, in, radius);
        if (st != PROX_ERR_RANGE) /* too many cells for the points grid: the engine */
            return st;
    }
    return build_levels(u, in);
}

static bool grid_has_self_pairs(const void *impl)
{
    const uniform_grid *u = impl;
    return u->centres != NULL;
}

/* Centre pairs within the radius (unsorted: parallel, and the same for
 * every thread count), then the exact box test, the candidates split over
 * the chunks in order. */
static prox_status grid_self_pairs(const void *impl, const broad_input *in, prox_chunks *chunks,
                                   prox_stats *stats)
{
    const uniform_grid *u = impl;
    prox_pair_buffer near;
    prox_pair_buffer_init(&near, in->allocator);
    prox_stats found;
    prox_status st = prox_grid_pairs(u->centres, prox_sink_unsorted(prox_sink_buffer(&near)), &found);
    if (!st) {
        int count = chunks->count;
        int64_t total = near.count;
#pragma omp parallel for num_threads(in->threads) if (count > 1 && in->threads > 1) \
    schedule(dynamic, 1)
        for (int k = 0; k < count; k++) {
            prox_emitter *e = &chunks->emitter[k];
            int64_t end = total * (k + 1) / count;
            for (int64_t p = total * k / count; p < end && !e->stop; p++) {
                if (p + PREFETCH_AHEAD < end) { /* ids are random in the input order */
                    __builtin_prefetch(&in->box[near.pairs[p + PREFETCH_AHEAD].i]);
                    __builtin_prefetch(&in->box[near.pairs[p + PREFETCH_AHEAD].j]);
                }
                prox_pair c = near.pairs[p];
                if (prox_aabb_overlap(&in->box[c.i], &in->box[c.j]))
                    prox_emit(e, c.i, c.j);
            }
        }
        stats->candidates += total;
        stats->cells_visited += found.cells_visited;
    }
    prox_pair_buffer_free(&near);
    return st;
}

static prox_status grid_prepare_queries(void *impl, const broad_input *in)
{
    uniform_grid *u = impl;
    return u->levels_ready ? PROX_OK : build_levels(u, in);
}

static void grid_gather(const void *impl, const prox_aabb *q, broad_scratch *s)
{
    const uniform_grid *u = impl;
    assert(u->levels_ready);
    prox_levels_gather(u->levels, q, s);
}

static void grid_destroy(void *impl, const prox_allocator *allocator)
{
    uniform_grid *u = impl;
    if (!u)
        return;
    prox_levels_destroy(u->levels, allocator);
    prox_grid_destroy(u->centres);
    prox_free(allocator, u->centre);
    prox_free(allocator, u);
}

static int64_t grid_bytes(const void *impl)
{
    const uniform_grid *u = impl;
    return (int64_t)sizeof *u + u->centre_capacity * (int64_t)sizeof *u->centre +
           (u->centres ? prox_grid_bytes(u->centres) : 0) +
           (u->levels ? prox_levels_bytes(u->levels) : 0);
}

static int64_t grid_cells(const void *impl)
{
    const uniform_grid *u = impl;
    if (u->levels_ready)
        return prox_levels_cells(u->levels);
    return u->centres ? u->centres->nruns : 0;
}

const broad_ops prox_broad_grid_ops = {
    .name = "grid",
    .build = grid_build,
    .destroy = grid_destroy,
    .gather = grid_gather,
    .self_pairs = grid_self_pairs,
    .has_self_pairs = grid_has_self_pairs,
    .prepare_queries = grid_prepare_queries,
    .bytes = grid_bytes,
    .cells = grid_cells,
};
