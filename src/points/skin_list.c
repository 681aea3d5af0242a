/* skin_list.c: Verlet (skin) lists, as LAMMPS keeps them. Pairs within
 * radius + skin are gathered by the grid; every call filters them by the
 * true radius at the current positions, and the list is rebuilt only when
 * some point has moved more than skin / 2 since the last rebuild (then no
 * pair can have closed in from beyond radius + skin). */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/pair_sink.h"
#include "points/points_common.h"
#include "points/skin_motion.h"
#include "core/threads.h"
#include "core/views.h"

struct prox_skin_list {
    prox_grid_desc desc; /* the caller's: radius is the true radius */
    double skin;
    prox_allocator allocator;
    prox_grid *grid;     /* built with radius + skin */
    prox_pair_buffer candidates;
    prox_pair *kept;
    int64_t kept_cap;
    double *reference;   /* wrapped positions at the last rebuild, axis-major */
    int64_t reference_cap;
    prox_workspace work; /* the delivery's scratch, kept between calls */
    int64_t n;
    int dim;
    bool valid;
};

prox_status prox_skin_list_create(const prox_grid_desc *desc, double skin, prox_skin_list **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_skin_list_create: out is NULL");
    *out = NULL;
    prox_status st = prox_grid_desc_check(desc, 3);
    if (st)
        return st;
    if (!isfinite(skin) || skin < 0)
        return prox_fail(PROX_ERR_INVALID, "skin is %g; it must be zero or positive", skin);
    /* candidates reach a hair beyond radius + skin, so that rounding in the
     * displacement test can never lose a pair */
    prox_grid_desc wide = *desc;
    wide.radius = (desc->radius + skin) * (1.0 + 0x1p-40);
    /* the grid is queried only within the call that builds it, while the
     * caller's points are at hand: fixed point is safe (prox_coords) */
    if (wide.coords == PROX_COORDS_AUTO)
        wide.coords = prox_grid_coords_for_held_points();
    st = prox_grid_desc_check(&wide, 3);
    if (st == PROX_ERR_RANGE)
        return prox_fail(PROX_ERR_RANGE, "radius + skin (%g + %g) is above %g, the largest radius",
                         desc->radius, skin, PROX_RADIUS_MAX);
    if (st)
        return prox_fail(PROX_ERR_INVALID,
                         "radius + skin (%g + %g) must stay below half of every period",
                         desc->radius, skin);
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    prox_skin_list *l = prox_alloc_array(&al, 1, sizeof *l);
    if (!l)
        return prox_fail(PROX_ERR_NO_MEMORY, "skin list: out of memory");
    memset(l, 0, sizeof *l);
    l->desc = *desc;
    l->skin = skin;
    l->allocator = al;
    prox_pair_buffer_init(&l->candidates, &al);
    prox_workspace_init(&l->work, &al);
    st = prox_grid_create(&wide, &l->grid);
    if (st) {
        prox_free(&al, l);
        return st;
    }
    *out = l;
    return PROX_OK;
}

void prox_skin_list_destroy(prox_skin_list *l)
{
    if (!l)
        return;
    prox_grid_destroy(l->grid);
    prox_pair_buffer_free(&l->candidates);
    prox_free(&l->allocator, l->kept);
    prox_free(&l->allocator, l->reference);
    prox_workspace_free(&l->work);
    prox_free(&l->allocator, l);
}

/* The motion test of every skin list (skin_motion.h): true when some
 * point is more than skin / 2 (minimum image) from its recorded position. */
bool prox_skin_moved_far(const double *reference, int64_t n, const prox_grid_desc *desc,
                         double skin, const prox_points *p)
{
    prox_metric m = prox_metric_of(desc, p->dim);
    double limit = 0.25 * skin * skin; /* (skin / 2)^2 */
    int moved_far = 0;
    int dim = p->dim;
    int threads = prox_threads_resolve(desc->threads);
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) \
    reduction(| : moved_far) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double d[3] = {0, 0, 0};
        for (int k = 0; k < dim; k++)
            d[k] = prox_coord(p, i, k, desc->period) - reference[k * n + i];
        moved_far |= prox_metric_dist2(&m, d[0], d[1], d[2]) > limit;
    }
    return moved_far != 0;
}

/* Records the wrapped positions, axis-major, into *reference (grown). */
prox_status prox_skin_record(double **reference, int64_t *cap, const prox_points *p,
                             const double *period, const prox_allocator *al)
{
    if (!prox_reserve(al, (void **)reference, cap, 3 * p->count, sizeof **reference))
        return prox_fail(PROX_ERR_NO_MEMORY, "skin list: out of memory for positions");
    for (int k = 0; k < p->dim; k++)
        for (int64_t i = 0; i < p->count; i++)
            (*reference)[k * p->count + i] = prox_coord(p, i, k, period);
    return PROX_OK;
}

static bool needs_rebuild(const prox_skin_list *l, const prox_points *p)
{
    if (!l->valid || p->count != l->n || p->dim != l->dim)
        return true;
    return prox_skin_moved_far(l->reference, l->n, &l->desc, l->skin, p);
}

static prox_status rebuild(prox_skin_list *l, const prox_points *p)
{
    l->valid = false;
    prox_status st = prox_grid_build(l->grid, p);
    if (!st)
        st = prox_grid_pairs(l->grid, prox_sink_buffer(&l->candidates), NULL);
    if (!st)
        st = prox_skin_record(&l->reference, &l->reference_cap, p, l->desc.period,
                              &l->allocator);
    if (st)
        return st;
    l->n = p->count;
    l->dim = p->dim;
    l->valid = true;
    return PROX_OK;
}

/* Candidates still within the true radius, in the candidates' (sorted) order. */
static int64_t filter_candidates(prox_skin_list *l, const prox_points *p)
{
    prox_metric m = prox_metric_of(&l->desc, l->dim);
    int64_t kept = 0;
    for (int64_t c = 0; c < l->candidates.count; c++) {
        prox_pair pr = l->candidates.pairs[c];
        double d[3] = {0, 0, 0};
        for (int k = 0; k < l->dim; k++)
            d[k] = prox_coord(p, pr.i, k, l->desc.period) - prox_coord(p, pr.j, k, l->desc.period);
        if (prox_metric_within(&m, prox_metric_dist2(&m, d[0], d[1], d[2])))
            l->kept[kept++] = pr;
    }
    return kept;
}

prox_status prox_skin_list_pairs(prox_skin_list *l, const prox_points *p, prox_sink sink,
                                 prox_stats *stats)
{
    if (!l)
        return prox_fail(PROX_ERR_INVALID, "skin list is NULL");
    prox_status st = prox_search_check(p, NULL, &l->desc, sink, true);
    if (st)
        return st;
    bool rebuilt = needs_rebuild(l, p);
    if (rebuilt && (st = rebuild(l, p)))
        return st;
    if (!prox_reserve(&l->allocator, (void **)&l->kept, &l->kept_cap, l->candidates.count,
                      sizeof *l->kept))
        return prox_fail(PROX_ERR_NO_MEMORY, "skin list: out of memory");
    int64_t kept = filter_candidates(l, p);
    st = prox_pairs_deliver(l->kept, kept, sink, l->n, true, &l->work);
    if (stats) {
        *stats = (prox_stats){0};
        stats->pairs = kept;
        stats->candidates = l->candidates.count;
        stats->rebuilt = rebuilt;
    }
    return st;
}
