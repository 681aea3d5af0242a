/* sized_grid.c: particles of different sizes kept between calls
 * (include/prox/sizes.h, prox_sized_grid; docs/design.md, "Sizes": moving
 * particles): the sizes read and checked once, a copy of the coordinates
 * the caller may then change freely, new positions taken by update, and
 * the pairs of prox_sized_pairs over the copy, the sizes not read again
 * (sized_pairs_loaded).
 *
 * Each pairs call plans the size classes again over the kept positions
 * (the planner of sized.c). A kept grid per class that relocates its
 * members, as prox_grid_update does for one radius, would search at the
 * class's largest interaction and filter, more candidates than the
 * planner's query boxes fitted to each particle's reach (docs/design.md,
 * "Sizes", moving particles). The skin list (sized_skin.c) is the
 * structure that saves work between steps. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/sized.h"

struct prox_sized_grid {
    prox_grid_desc desc;
    prox_allocator al;
    sized_rule rule;    /* the build's rule and sizes, checked */
    sized_set set;
    double *x;          /* the positions widened to double, dim a point */
    int64_t x_cap;
    int64_t n;
    int dim;
    bool built;
};

prox_status prox_sized_grid_create(const prox_grid_desc *desc, prox_sized_grid **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_sized_grid_create: out is NULL");
    *out = NULL;
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "sized grid: options are NULL; start from "
                                           "prox_default_grid_desc()");
    prox_status st = sized_check_options(desc);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    prox_sized_grid *g = prox_alloc_array(&al, 1, sizeof *g);
    if (!g)
        return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory");
    memset(g, 0, sizeof *g);
    g->desc = *desc;
    g->desc.allocator = al;
    g->al = al;
    *out = g;
    return PROX_OK;
}

void prox_sized_grid_destroy(prox_sized_grid *g)
{
    if (!g)
        return;
    sized_set_free(&g->set, &g->al);
    sized_rule_free(&g->rule, &g->al);
    prox_free(&g->al, g->x);
    prox_allocator al = g->al;
    prox_free(&al, g);
}

/* The caller's positions widened into the kept copy. */
static prox_status keep_points(prox_sized_grid *g, const prox_points *p)
{
    if (!prox_reserve(&g->al, (void **)&g->x, &g->x_cap, p->count * p->dim + 1, sizeof *g->x))
        return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory for the points");
    for (int64_t i = 0; i < p->count; i++)
        for (int k = 0; k < p->dim; k++)
            g->x[i * p->dim + k] = prox_points_get(p, i, k);
    g->n = p->count;
    g->dim = p->dim;
    return PROX_OK;
}

prox_status prox_sized_grid_build(prox_sized_grid *g, const prox_points *points,
                                  const prox_sizes *sizes)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "sized grid is NULL");
    g->built = false;
    sized_set_free(&g->set, &g->al);
    sized_rule_free(&g->rule, &g->al);
    prox_status st = sized_check_search(points, NULL, &g->desc, prox_sink_count(), true);
    if (!st)
        st = sized_check_rule(sizes, &g->rule, &g->al);
    if (!st)
        st = sized_load(sizes, &g->rule, points->count, "points", &g->al, &g->set);
    if (!st)
        st = keep_points(g, points);
    if (!st)
        st = sized_check_periods(&g->rule, &g->set, &g->set, g->desc.period, g->dim);
    g->built = st == PROX_OK;
    return st;
}

prox_status prox_sized_grid_update(prox_sized_grid *g, const prox_points *points,
                                   prox_stats *stats)
{
    if (!g || !g->built)
        return prox_fail(PROX_ERR_INVALID, "sized grid: update before a build");
    prox_status st = sized_check_search(points, NULL, &g->desc, prox_sink_count(), true);
    if (st)
        return st;
    if (points->count != g->n || points->dim != g->dim)
        return prox_fail(PROX_ERR_INVALID,
                         "sized grid: %lld points of dimension %d given, %lld of dimension %d "
                         "built (the sizes belong to those: build again)",
                         (long long)points->count, points->dim, (long long)g->n, g->dim);
    st = keep_points(g, points);
    if (st) {
        g->built = false;
        return st;
    }
    if (stats) {
        *stats = (prox_stats){0};
        stats->rebuilt = true; /* the classes are planned again at the next pairs */
        stats->method = "sized.grid.update";
    }
    return PROX_OK;
}

prox_status prox_sized_grid_pairs(prox_sized_grid *g, prox_sink sink, prox_stats *stats)
{
    if (!g || !g->built)
        return prox_fail(PROX_ERR_INVALID, "sized grid: pairs before a build");
    prox_points p = prox_points_f64(g->x, g->n, g->dim);
    return sized_pairs_loaded(&p, &g->rule, &g->set, &g->desc, sink, stats);
}
