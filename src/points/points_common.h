/* points_common.h (points_common.c): what the points-family structures
 * share: option checks, the metric, and the wrapped coordinates of a view.
 * The front (search.c) and every structure include it; it includes no
 * structure. */
#ifndef PROX_POINTS_COMMON_H
#define PROX_POINTS_COMMON_H

#include "core/exact.h"
#include "prox/grid.h"

/* Options valid for points of dimension `dim` (message names the field). */
prox_status prox_grid_desc_check(const prox_grid_desc *desc, int dim);

prox_metric prox_metric_of(const prox_grid_desc *desc, int dim);

/* The one-shot searches' arguments (queries NULL: pairs within `points`),
 * checked in one order by every structure, so that an input with several
 * faults is refused with the same status whichever structure runs it:
 * options, views, their dimensions, the sink, then whether every
 * coordinate is finite (the points' only when `points_finite`: the grid's
 * build finds a non-finite point itself, in the pass that takes the box).
 * A structure checks what only it refuses (too many cells) afterwards. */
prox_status prox_search_check(const prox_points *points, const prox_points *queries,
                              const prox_grid_desc *desc, prox_sink sink, bool points_finite);

/* Value v of coordinate `axis` wrapped into [0, period) on a periodic
 * axis (period 0: open). */
static inline double prox_wrap_axis(double v, int axis, const double *period)
{
    return period[axis] > 0 ? prox_wrap(v, period[axis]) : v;
}

/* Coordinate `axis` of point i, widened to double and wrapped into
 * [0, period) on a periodic axis. */
static inline double prox_coord(const prox_points *p, int64_t i, int axis, const double *period)
{
    return prox_wrap_axis(prox_points_get(p, i, axis), axis, period);
}

#endif
