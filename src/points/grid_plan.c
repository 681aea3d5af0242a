/* grid_plan.c: the planner (grid_plan.h). Each decision below reads the
 * built grid (its keys, coordinates, metric, points per occupied cell) and
 * the sink, and nothing else; the traversals carry out a plan without
 * deciding again. */
#include "points/grid_plan.h"

#include "points/grid_private.h"

_Static_assert(GRID_TRAVERSALS <= GRID_WORK_TRAVERSALS, "grid_work.ran counts every traversal");

/* Points per occupied cell up to which the sweep beats the search run by
 * run, whose gathered candidates serve every point of a run: measured with
 * `build/bench_grid_limits` (SWEEP_RUN), figures in docs/design.md, "The
 * point sweep". */
#define SWEEP_MAX_POINTS_PER_RUN_2D 3.5
#define SWEEP_MAX_POINTS_PER_RUN_3D 1.75

/* Full lists come from each point's full row (GRID_ROWS) where cells hold
 * several points. Where most occupied cells hold one or two, the cost is
 * the cell lookups, not the distance tests, and few pairs are found: there
 * the half stencil's pairs (GRID_SWEEP or GRID_STRIPS), each then written
 * into both rows (pairs.c), look up half as many cells. W2 at k = 1 (1.17
 * points a run) gains, k = 5 (2.0) breaks even, k = 10 (3.3) loses to the
 * scatter of its entries (`build/bench_grid_limits` with HALF_PAIRS_RUN;
 * docs/design.md, "Full lists from the half stencil's pairs"). */
#define HALF_PAIRS_MAX_POINTS_PER_CELL 2.25

bool prox_grid_sweeps(const prox_grid *g)
{
    const prox_fixed_metric *m = &g->fixed_metric;
    double most = g->sweep_limit > 0 ? g->sweep_limit
                  : g->dim == 2     ? SWEEP_MAX_POINTS_PER_RUN_2D
                                    : SWEEP_MAX_POINTS_PER_RUN_3D;
    return g->keys == PROX_KEYS_LINEAR && g->fixed_on && !m->periodic &&
           m->unit_scale && (double)g->n <= most * (double)g->nruns;
}

static bool lists_from_half_pairs(const prox_grid *g)
{
    double most = g->half_pairs_limit > 0 ? g->half_pairs_limit : HALF_PAIRS_MAX_POINTS_PER_CELL;
    return (double)g->n <= most * (double)g->nruns;
}

/* Rows written in place (grid_fill.c): asked for, with linear keys, and
 * for an output whose rows would otherwise be staged (every sorted or
 * list output but the unsorted buffer). */
static bool rows_in_place(const prox_grid *g, prox_sink sink)
{
    return g->desc.rows == PROX_ROWS_IN_PLACE && g->keys == PROX_KEYS_LINEAR &&
           (sink.kind == PROX_SINK_LISTS || (sink.kind == PROX_SINK_BUFFER && !sink.unsorted));
}

/* A plan of `traversal` over this grid's candidates: strips with linear
 * keys; rel16 coordinates (kernel_fixed.h) where `rel16_wanted`, with
 * linear keys' strips, and a grid whose bounds allow them (grid.c,
 * prox_grid_rel16_metric). */
static grid_plan plan_of(const prox_grid *g, grid_traversal traversal, bool rel16_wanted)
{
    grid_plan p = {.traversal = traversal, .strips = g->keys == PROX_KEYS_LINEAR};
    p.rel16 = rel16_wanted && p.strips && prox_grid_rel16_metric(g, &p.rel16_metric);
    /* sorted rows gather doubles too; the half stencil and the fill gather
     * fixed-point coordinates only */
    p.gather = p.strips && (traversal == GRID_ROWS || g->fixed_on);
    return p;
}

grid_plan prox_grid_rows_plan(const prox_grid *g)
{
    return plan_of(g, GRID_ROWS, true);
}

/* Sorted output (every buffer but the unsorted one, and lists where cells
 * hold several points) goes by rows, written in place when asked; the
 * rest takes the pairs as the half stencil finds them: point by point
 * where cells hold about one, run by run over strips with linear keys, or
 * over the stencil's cells with Morton and hash keys. */
grid_plan prox_grid_plan_pairs(const prox_grid *g, prox_sink sink)
{
    if (rows_in_place(g, sink))
        return plan_of(g, GRID_FILL, false);
    if ((sink.kind == PROX_SINK_LISTS && !lists_from_half_pairs(g)) ||
        (sink.kind == PROX_SINK_BUFFER && !sink.unsorted))
        return prox_grid_rows_plan(g);
    if (g->keys != PROX_KEYS_LINEAR)
        return plan_of(g, GRID_CELLS, false);
    if (prox_grid_sweeps(g))
        return plan_of(g, GRID_SWEEP, false);
    return plan_of(g, GRID_STRIPS, true);
}

grid_plan prox_grid_plan_query(const prox_grid *g)
{
    return plan_of(g, g->keys == PROX_KEYS_LINEAR ? GRID_QUERY_STRIPS : GRID_QUERY_CELLS, false);
}

const char *prox_grid_method(const prox_grid *g, grid_plan plan)
{
    static const char *const names[GRID_TRAVERSALS][3] = {
        [GRID_ROWS] = {"grid.rows.double", "grid.rows.fixed", "grid.rows.rel16"},
        [GRID_FILL] = {"grid.fill.double", "grid.fill.fixed", "grid.fill.rel16"},
        [GRID_SWEEP] = {"grid.sweep.double", "grid.sweep.fixed", "grid.sweep.rel16"},
        [GRID_STRIPS] = {"grid.strips.double", "grid.strips.fixed", "grid.strips.rel16"},
        [GRID_CELLS] = {"grid.cells.double", "grid.cells.fixed", "grid.cells.rel16"},
        [GRID_QUERY_STRIPS] = {"grid.query.strips.double", "grid.query.strips.fixed",
                               "grid.query.strips.rel16"},
        [GRID_QUERY_CELLS] = {"grid.query.cells.double", "grid.query.cells.fixed",
                              "grid.query.cells.rel16"},
    };
    return names[plan.traversal][plan.rel16 ? 2 : g->fixed_on ? 1 : 0];
}
