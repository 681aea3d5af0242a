/* knn_result.c: a kNN result's rows (prox/knn.h): init, free, and the
 * room the search fills (knn_result.h). */
#include "core/alloc.h"
#include "core/error.h"
#include "points/knn_result.h"

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
