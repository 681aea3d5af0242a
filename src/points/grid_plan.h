/* grid_plan.h: how a grid answers a query. One function per kind of call
 * decides the traversal and the coordinates its kernels read, from the
 * grid's data and the sink; every density threshold behind a decision is
 * in grid_plan.c beside its reason, and stats.method names the plan that
 * ran (prox_grid_method). docs/design.md, "The planner", has the table of
 * which plan serves which query. */
#ifndef PROX_GRID_PLAN_H
#define PROX_GRID_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "prox/grid.h"
#include "simd/kernel_fixed.h"


/* The ways a grid answers a query: each is named in stats.method as
 * "grid.<traversal>.<coordinates>", the coordinates being those the
 * distance kernel read (double, fixed, or rel16). */
typedef enum grid_traversal {
    GRID_ROWS,         /* each point's full row of candidates, rows sorted */
    GRID_FILL,         /* rows counted, then written in place (grid_fill.c) */
    GRID_SWEEP,        /* self pairs point by point (grid_sweep.c) */
    GRID_STRIPS,       /* self pairs run by run over the half stencil's strips */
    GRID_CELLS,        /* self pairs run by run over stencil cells (Morton, hash keys) */
    GRID_QUERY_STRIPS, /* ball queries over the stencil's strips */
    GRID_QUERY_CELLS,  /* ball queries over stencil cells */
    GRID_TRAVERSALS
} grid_traversal;

typedef struct grid_plan {
    grid_traversal traversal;
    /* candidates as ranges of the stencil's strips (linear keys), else
     * looked up cell by cell (Morton and hash keys) */
    bool strips;
    /* rows and strips: runs' candidates gathered as rel16 coordinates
     * (kernel_fixed.h) where the gather pays (prox_gather_pays), with the
     * bounds in rel16_metric */
    bool rel16;
    prox_rel16_metric rel16_metric;
    /* rows, strips and fill: a run's candidates gathered into one block
     * where the run pays (grid_plan_gathers), else read in place */
    bool gather;
} grid_plan;

/* Self pairs of the built points into `sink`. GRID_FILL may still decline
 * at run time when its rows would pass its limits (grid_fill.c); the rows
 * (prox_grid_rows_plan) then serve. */
grid_plan prox_grid_plan_pairs(const prox_grid *g, prox_sink sink);
/* Sorted rows of self pairs: GRID_ROWS, over rel16 coordinates where the
 * grid allows them. */
grid_plan prox_grid_rows_plan(const prox_grid *g);
/* Ball queries of a second set. */
grid_plan prox_grid_plan_query(const prox_grid *g);
/* Whether self pairs go point by point (grid_sweep.c): fixed point, open
 * axes of one scale, and about one point a cell. */
bool prox_grid_sweeps(const prox_grid *g);
const char *prox_grid_method(const prox_grid *g, grid_plan plan);

/* Whether to gather the candidates of a run of `points` points into one
 * block (fixed point, and doubles for sorted rows) rather than read the
 * grid's strips in place: it pays on W1 (sorted buffer and count), and
 * would lose on W2 at k = 1 (3 to 5 candidates a run) for the copies'
 * calls (docs/design.md). */
static inline bool prox_gather_pays(int64_t points, int64_t candidates)
{
    return points >= 2 && candidates >= 16;
}

/* The plan's gather rule, which a traversal applies run by run (so
 * inline): the planner's choice, then the run's sizes. */
static inline bool grid_plan_gathers(const grid_plan *p, int64_t points, int64_t candidates)
{
    return p->gather && prox_gather_pays(points, candidates);
}

#endif
