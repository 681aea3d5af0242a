/* points_common.c: what every points-family structure shares with the
 * front (search.c): the options' defaults and checks, the one-shot
 * searches' argument check, and the metric. It calls no structure. */
#include "points/points_common.h"

#include <math.h>

#include "core/error.h"
#include "core/pair_sink.h"
#include "core/threads.h"
#include "core/views.h"

prox_grid_desc prox_default_grid_desc(void)
{
    return (prox_grid_desc){
        .radius = 0.0,
        .keys = PROX_KEYS_LINEAR,
        .cell_divisions = 1,
        .table_size = 0,
        .period = {0.0, 0.0, 0.0},
        .threads = 0,
        .coords = PROX_COORDS_AUTO,
        .rows = PROX_ROWS_AUTO,
    };
}

static prox_status check_period(const prox_grid_desc *desc, int dim, int k)
{
    static const char axis_name[] = "xyz";
    double L = desc->period[k];
    if (!isfinite(L) || L < 0)
        return prox_fail(PROX_ERR_INVALID, "period along %c is %g; use 0 (open) or a positive length",
                         axis_name[k], L);
    if (L > 0 && k >= dim)
        return prox_fail(PROX_ERR_INVALID, "period along %c set for %dD points", axis_name[k], dim);
    if (L > 0 && !(desc->radius < 0.5 * L))
        return prox_fail(PROX_ERR_INVALID,
                         "radius %g must be below half the period along %c (%g) for minimum images",
                         desc->radius, axis_name[k], L);
    return PROX_OK;
}

prox_status prox_grid_desc_check(const prox_grid_desc *desc, int dim)
{
    prox_status simd = prox_simd_check(); /* PROX_SIMD names a level this CPU runs */
    if (simd)
        return simd;
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "options are NULL; start from prox_default_grid_desc()");
    if (!isfinite(desc->radius) || !(desc->radius > 0))
        return prox_fail(PROX_ERR_INVALID, "radius is %g; it must be positive and finite",
                         desc->radius);
    if (!(desc->radius >= PROX_RADIUS_MIN && desc->radius <= PROX_RADIUS_MAX))
        return prox_fail(PROX_ERR_RANGE,
                         "radius %g is outside [%g, %g]: the exact test squares it, and its "
                         "square must be a normal double (scale the coordinates)",
                         desc->radius, PROX_RADIUS_MIN, PROX_RADIUS_MAX);
    if (desc->keys != PROX_KEYS_MORTON && desc->keys != PROX_KEYS_HASH &&
        desc->keys != PROX_KEYS_LINEAR)
        return prox_fail(PROX_ERR_INVALID, "unknown cell-key scheme %d", (int)desc->keys);
    if (desc->cell_divisions < 1 || desc->cell_divisions > 8)
        return prox_fail(PROX_ERR_INVALID, "cell_divisions is %d; use 1 to 8",
                         desc->cell_divisions);
    if (desc->coords != PROX_COORDS_AUTO && desc->coords != PROX_COORDS_DOUBLE &&
        desc->coords != PROX_COORDS_FIXED)
        return prox_fail(PROX_ERR_INVALID, "coords is %d; use PROX_COORDS_AUTO, DOUBLE or FIXED",
                         (int)desc->coords);
    if (desc->rows != PROX_ROWS_AUTO && desc->rows != PROX_ROWS_STAGED &&
        desc->rows != PROX_ROWS_IN_PLACE && desc->rows != PROX_ROWS_IN_OUTPUT)
        return prox_fail(PROX_ERR_INVALID,
                         "rows is %d; use PROX_ROWS_AUTO, STAGED, IN_PLACE or IN_OUTPUT",
                         (int)desc->rows);
    int64_t t = desc->table_size;
    if (t < 0 || (t & (t - 1)) != 0 || t > ((int64_t)1 << 40))
        return prox_fail(PROX_ERR_INVALID,
                         "table_size is %lld; use 0 (automatic) or a power of two up to 2^40",
                         (long long)t);
    if (desc->threads < 0)
        return prox_fail(PROX_ERR_INVALID, "threads is %d; use 0 (default) or more",
                         desc->threads);
    for (int k = 0; k < 3; k++) {
        prox_status st = check_period(desc, dim, k);
        if (st)
            return st;
    }
    return PROX_OK;
}

prox_status prox_search_check(const prox_points *points, const prox_points *queries,
                              const prox_grid_desc *desc, prox_sink sink, bool points_finite)
{
    prox_status st = prox_grid_desc_check(desc, points ? points->dim : 3);
    if (!st)
        st = prox_points_check(points, "points");
    if (!st && queries)
        st = prox_points_check(queries, "queries");
    if (!st && queries && queries->dim != points->dim)
        st = prox_fail(PROX_ERR_INVALID, "queries are %dD but points are %dD", queries->dim,
                       points->dim);
    if (!st)
        st = prox_sink_check(sink);
    int threads = st ? 1 : prox_threads_resolve(desc->threads);
    if (!st && points_finite)
        st = prox_points_check_finite(points, "points", threads);
    if (!st && queries)
        st = prox_points_check_finite(queries, "queries", threads);
    return st;
}

prox_metric prox_metric_of(const prox_grid_desc *desc, int dim)
{
    prox_metric m = {{0, 0, 0}, desc->radius * desc->radius, false};
    for (int k = 0; k < dim; k++) {
        m.period[k] = desc->period[k];
        m.periodic |= desc->period[k] > 0;
    }
    return m;
}
