/* knn_result.c: a kNN result's rows (prox/knn.h): init, free, the room
 * the search fills, and the checks of k and max_radius (knn_result.h). */
#include <math.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/knn_result.h"
#include "prox/grid.h"

void prox_knn_result_init(prox_knn_result *r, const prox_allocator *allocator)
{
    if (!r)
        return;
    *r = (prox_knn_result){0};
    r->allocator = prox_allocator_resolve(allocator);
}

void prox_knn_result_free(prox_knn_result *r)
{
    if (!r)
        return;
    prox_free(&r->allocator, r->indices);
    prox_free(&r->allocator, r->distances);
    prox_free(&r->allocator, r->counts);
    prox_free(&r->allocator, r->shifts);
    prox_allocator a = r->allocator;
    *r = (prox_knn_result){0};
    r->allocator = a;
}

prox_status knn_result_room(prox_knn_result *r, int64_t rows, int k)
{
    prox_knn_result_free(r);
    r->rows = rows;
    r->k = k;
    r->indices = prox_alloc_array(&r->allocator, rows * k, sizeof *r->indices);
    r->distances = prox_alloc_array(&r->allocator, rows * k, sizeof *r->distances);
    r->counts = prox_alloc_array(&r->allocator, rows, sizeof *r->counts);
    if (r->indices && r->distances && r->counts)
        return PROX_OK;
    prox_knn_result_free(r);
    return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for %lld x %d neighbours",
                     (long long)rows, k);
}

prox_status knn_check_k_radius(int k, double max_radius)
{
    if (k <= 0)
        return prox_fail(PROX_ERR_INVALID, "k is %d; it must be at least 1", k);
    if (!isfinite(max_radius) || max_radius < 0)
        return prox_fail(PROX_ERR_INVALID,
                         "max_radius is %g; use 0 (no limit) or a positive finite radius",
                         max_radius);
    if (max_radius > 0 && !(max_radius >= PROX_RADIUS_MIN && max_radius <= PROX_RADIUS_MAX))
        return prox_fail(PROX_ERR_RANGE,
                         "max_radius %g is outside [%g, %g]: its square must be a normal "
                         "double (scale the coordinates)",
                         max_radius, PROX_RADIUS_MIN, PROX_RADIUS_MAX);
    return PROX_OK;
}
