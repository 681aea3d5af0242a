/* broad_grid.c: uniform hashing of boxes (Pouchol et al. 2009, section 2.1), one cell
 * size for every box, in two forms:
 *
 * - Queries (boxes, segments, swept boxes) and self pairs of boxes of mixed
 *   sizes: each box stored in every cell it covers (the engine of
 *   multilevel_hash.c with a single level). The cell is desc.cell_size, or
 *   the median longest box edge. A box covering more than the engine's cap
 *   of cells (a big box among small ones, the weakness section 2.2
 *   addresses) is kept in an oversize list that every query takes.
 * - Self pairs of boxes of similar sizes (W3's equal spheres, particles,
 *   DEM grains): each box once, in cells of the longest extent keyed by its
 *   min corner, the cells of a row merged and swept (box_rows.c). The
 *   per-cell engine is then built only when a query first needs it
 *   (prepare_queries). */
#include <assert.h>
#include <math.h>

#include "core/alloc.h"
#include "broad/box_rows.h"
#include "broad/broad.h"
#include "core/error.h"

/* At most 2^40 cells along an axis of the data. */
#define MAX_SPAN_BITS 40

typedef struct uniform_grid {
    void *levels;      /* the per-cell engine (prox_levels_*) */
    bool levels_ready; /* built for the current boxes */
    box_rows rows;
    bool rows_ready; /* self pairs by rows (boxes of similar sizes) */
} uniform_grid;

static prox_status build_levels(uniform_grid *u, const broad_input *in)
{
    double extent = 0.0;
    for (int k = 0; k < in->dim; k++)
        extent = in->hi[k] - in->lo[k] > extent ? in->hi[k] - in->lo[k] : extent;
    double cell = in->desc->cell_size > 0 ? in->desc->cell_size : prox_median_longest_edge(in);
    if (!(cell > 0))
        cell = extent > 0 ? extent / 64 : 1.0;
    double finest = ldexp(extent, -MAX_SPAN_BITS);
    cell = cell < finest ? finest : cell;
    prox_status st = prox_levels_build(&u->levels, in, &cell, 1, 0, false);
    u->levels_ready = st == PROX_OK;
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
    u->levels_ready = u->rows_ready = false;
    if (prox_boxes_similar_sizes(in)) {
        prox_status st = prox_box_rows_build(&u->rows, in);
        u->rows_ready = st == PROX_OK;
        if (st != PROX_ERR_RANGE) /* offsets too large for floats: the engine */
            return st;
    }
    return build_levels(u, in);
}

static bool grid_has_self_pairs(const void *impl)
{
    const uniform_grid *u = impl;
    return u->rows_ready;
}

static prox_status grid_self_pairs(const void *impl, const broad_input *in, prox_chunks *chunks,
                                   prox_stats *stats)
{
    const uniform_grid *u = impl;
    prox_box_rows_pairs(&u->rows, in, chunks, stats);
    return PROX_OK;
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
    prox_box_rows_free(&u->rows, allocator);
    prox_free(allocator, u);
}

static int64_t grid_bytes(const void *impl)
{
    const uniform_grid *u = impl;
    return (int64_t)sizeof *u + prox_box_rows_bytes(&u->rows) +
           (u->levels ? prox_levels_bytes(u->levels) : 0);
}

static int64_t grid_cells(const void *impl)
{
    const uniform_grid *u = impl;
    if (u->levels_ready)
        return prox_levels_cells(u->levels);
    return u->rows_ready ? u->rows.occupied : 0;
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
