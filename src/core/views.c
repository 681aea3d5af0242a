#include "core/views.h"

#include <math.h>

#include "core/error.h"

prox_points prox_points_strided(const void *first, int64_t count, int dim, prox_scalar scalar,
                                ptrdiff_t stride)
{
    size_t size = scalar == PROX_F32 ? sizeof(float) : sizeof(double);
    const char *base = first;
    /* A NULL first (an empty set) gives NULL for every axis: offsetting NULL is undefined. */
    prox_points p = {{base, base ? base + size : NULL, dim == 3 && base ? base + 2 * size : NULL},
                     stride, count, dim, scalar};
    return p;
}

prox_points prox_points_f64(const double *xyz, int64_t count, int dim)
{
    return prox_points_strided(xyz, count, dim, PROX_F64, (ptrdiff_t)(dim * sizeof(double)));
}

prox_points prox_points_f32(const float *xyz, int64_t count, int dim)
{
    return prox_points_strided(xyz, count, dim, PROX_F32, (ptrdiff_t)(dim * sizeof(float)));
}

prox_points prox_points_soa(const void *x, const void *y, const void *z, int64_t count, int dim,
                            prox_scalar scalar)
{
    ptrdiff_t size = scalar == PROX_F32 ? (ptrdiff_t)sizeof(float) : (ptrdiff_t)sizeof(double);
    prox_points p = {{x, y, dim == 3 ? z : NULL}, size, count, dim, scalar};
    return p;
}

prox_status prox_points_check(const prox_points *p, const char *what)
{
    if (!p)
        return prox_fail(PROX_ERR_INVALID, "%s: the view is NULL", what);
    if (p->dim != 2 && p->dim != 3)
        return prox_fail(PROX_ERR_INVALID, "%s: dim is %d; prox handles 2 or 3", what, p->dim);
    if (p->scalar != PROX_F64 && p->scalar != PROX_F32)
        return prox_fail(PROX_ERR_INVALID, "%s: unknown scalar type %d", what, (int)p->scalar);
    if (p->count < 0)
        return prox_fail(PROX_ERR_INVALID, "%s: count is %lld", what, (long long)p->count);
    if (p->count > PROX_MAX_POINTS)
        return prox_fail(PROX_ERR_RANGE, "%s: count %lld outside 0..%lld", what,
                         (long long)p->count, (long long)PROX_MAX_POINTS);
    if (p->count > 0)
        for (int k = 0; k < p->dim; k++)
            if (!p->axis[k])
                return prox_fail(PROX_ERR_INVALID, "%s: axis %d pointer is NULL", what, k);
    return PROX_OK;
}

prox_status prox_points_check_finite(const prox_points *p, const char *what, int threads)
{
    int64_t first_bad = INT64_MAX;
    int64_t n = p->count;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) \
    reduction(min : first_bad) schedule(static)
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < p->dim; k++)
            if (!isfinite(prox_points_get(p, i, k)) && i < first_bad)
                first_bad = i;
    if (first_bad == INT64_MAX)
        return PROX_OK;
    static const char axis_name[] = "xyz";
    for (int k = 0; k < p->dim; k++) {
        double v = prox_points_get(p, first_bad, k);
        if (!isfinite(v))
            return prox_fail(PROX_ERR_DATA, "%s: point %lld has a non-finite %c coordinate (%g)",
                             what, (long long)first_bad, axis_name[k], v);
    }
    return PROX_ERR_DATA; /* unreachable */
}
