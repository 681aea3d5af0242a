/* search.c: the front of the points family: the one-shot calls, which
 * pick a structure and call it. No structure includes it; what they share
 * with it (the checks, the metric) is in points_common.c. */
#include "core/alloc.h"
#include "core/error.h"
#include "points/brute.h"
#include "points/hierarchical_points.h"
#include "points/points_common.h"

/* The one-shot calls hold the caller's points for their whole run, so
 * AUTO may mean fixed-point coordinates there (prox_coords); and their
 * grid is queried once, so a sorted buffer's rows are staged in the
 * output itself (PROX_ROWS_IN_OUTPUT): nothing would be kept anyway.
 * Lists keep the grid's own choice: in the output they take a counting
 * pass more, which costs more time than the staging's memory. */
static prox_grid_desc once_desc(const prox_grid_desc *desc, prox_sink sink)
{
    prox_grid_desc d = *desc;
    if (d.coords == PROX_COORDS_AUTO)
        d.coords = prox_grid_coords_for_held_points();
    if (d.rows == PROX_ROWS_AUTO && sink.kind != PROX_SINK_LISTS)
        d.rows = PROX_ROWS_IN_OUTPUT;
    return d;
}

static prox_status grid_pairs_once(const prox_points *points, const prox_grid_desc *desc,
                                   prox_sink sink, prox_stats *stats)
{
    prox_grid *grid = NULL;
    prox_grid_desc d = once_desc(desc, sink);
    prox_status st = prox_search_check(points, NULL, &d, sink, false);
    if (!st)
        st = prox_grid_create(&d, &grid);
    if (!st)
        st = prox_grid_build(grid, points);
    if (!st)
        st = prox_grid_pairs(grid, sink, stats);
    prox_grid_destroy(grid);
    return st;
}

static prox_status grid_query_once(const prox_points *points, const prox_points *queries,
                                   const prox_grid_desc *desc, prox_sink sink, prox_stats *stats)
{
    prox_grid *grid = NULL;
    prox_grid_desc d = once_desc(desc, sink);
    prox_status st = prox_search_check(points, queries, &d, sink, false);
    if (!st)
        st = prox_grid_create(&d, &grid);
    if (!st)
        st = prox_grid_build(grid, points);
    if (!st)
        st = prox_grid_query(grid, queries, sink, stats);
    prox_grid_destroy(grid);
    return st;
}

/* A one-shot call's fresh bytes: all it allocated while it ran. */
static prox_status once_done(prox_status st, int64_t fresh, prox_stats *stats)
{
    if (stats && !st) {
        stats->fresh_bytes = prox_fresh_bytes() - fresh;
        stats->huge_pages = prox_huge_pages();
    }
    return st;
}

static prox_status pairs_by(const prox_points *points, const prox_grid_desc *desc,
                            prox_algo algo, prox_sink sink, prox_stats *stats)
{
    switch (algo) {
    case PROX_ALGO_GRID: return grid_pairs_once(points, desc, sink, stats);
    case PROX_ALGO_BRUTE: return prox_brute_pairs(points, desc, sink, stats);
    case PROX_ALGO_HIERARCHICAL: return prox_hierarchical_pairs(points, desc, sink, stats);
    }
    return prox_fail(PROX_ERR_INVALID, "unknown algorithm %d", (int)algo);
}

prox_status prox_pairs(const prox_points *points, const prox_grid_desc *desc, prox_algo algo,
                       prox_sink sink, prox_stats *stats)
{
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "prox_pairs: options are NULL; start from "
                                           "prox_default_grid_desc()");
    int64_t fresh = prox_fresh_bytes();
    return once_done(pairs_by(points, desc, algo, sink, stats), fresh, stats);
}

static prox_status query_by(const prox_points *points, const prox_points *queries,
                            const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                            prox_stats *stats)
{
    switch (algo) {
    case PROX_ALGO_GRID: return grid_query_once(points, queries, desc, sink, stats);
    case PROX_ALGO_BRUTE: return prox_brute_query(points, queries, desc, sink, stats);
    case PROX_ALGO_HIERARCHICAL:
        return prox_hierarchical_query(points, queries, desc, sink, stats);
    }
    return prox_fail(PROX_ERR_INVALID, "unknown algorithm %d", (int)algo);
}

prox_status prox_query(const prox_points *points, const prox_points *queries,
                       const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                       prox_stats *stats)
{
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "prox_query: options are NULL; start from "
                                           "prox_default_grid_desc()");
    int64_t fresh = prox_fresh_bytes();
    return once_done(query_by(points, queries, desc, algo, sink, stats), fresh, stats);
}
