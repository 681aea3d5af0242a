/* points_common.h: what the points-family structures share: option checks,
 * the metric, and the wrapped coordinates of a view. The front (search.c)
 * and every structure include it; it includes no structure. */
#ifndef PROX_POINTS_COMMON_H
#define PROX_POINTS_COMMON_H

#include "core/exact.h"
#include "prox/grid.h"

/* Options valid for points of dimension `dim` (message names the field). */
prox_status prox_grid_desc_check(const prox_grid_desc *desc, int dim);

prox_metric prox_metric_of(const prox_grid_desc *desc, int dim);

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
