/* knn.c: the front of k nearest neighbours (prox/knn.h): options, their
 * checks, the one-shot calls and the kept index. The cells are
 * knn_build.c's, the search knn_search.c's, the result's rows
 * knn_result.c's. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/views.h"
#include "prox/grid.h"
#include "points/knn_build.h"
#include "points/knn_result.h"
#include "points/knn_search.h"

prox_knn_desc prox_default_knn_desc(void)
{
    return (prox_knn_desc){.k = 1, .max_radius = 0.0, .period = {0.0, 0.0, 0.0}, .threads = 0};
}

/* The options for points of dimension dim (message names the field). */
static prox_status desc_check(const prox_knn_desc *desc, int dim)
{
    static const char axis_name[] = "xyz";
    prox_status simd = prox_simd_check();
    if (simd)
        return simd;
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "kNN options are NULL; start from "
                                           "prox_default_knn_desc()");
    prox_status st = knn_check_k_radius(desc->k, desc->max_radius);
    if (st)
        return st;
    for (int k = 0; k < 3; k++) {
        double L = desc->period[k];
        if (!isfinite(L) || L < 0)
            return prox_fail(PROX_ERR_INVALID,
                             "period along %c is %g; use 0 (open) or a positive length",
                             axis_name[k], L);
        if (L > 0 && k >= dim)
            return prox_fail(PROX_ERR_INVALID, "period along %c set for %dD points",
                             axis_name[k], dim);
    }
    return PROX_OK;
}

/* Options, views and finiteness, in that order (as prox_search_check). */
static prox_status args_check(const prox_points *points, const prox_points *queries,
                              const prox_knn_desc *desc)
{
    if (!points)
        return prox_fail(PROX_ERR_INVALID, "points are NULL");
    prox_status st = prox_points_check(points, "points");
    if (!st)
        st = desc_check(desc, points->dim);
    if (!st && queries)
        st = prox_points_check(queries, "queries");
    if (!st && queries && queries->dim != points->dim)
        st = prox_fail(PROX_ERR_INVALID, "queries are %dD but points are %dD", queries->dim,
                       points->dim);
    int threads = desc ? prox_threads_resolve(desc->threads) : 1;
    if (!st)
        st = prox_points_check_finite(points, "points", threads);
    if (!st && queries)
        st = prox_points_check_finite(queries, "queries", threads);
    if (!st && (int64_t)desc->k * (queries ? queries->count : points->count) > (INT64_MAX >> 4))
        st = prox_fail(PROX_ERR_RANGE, "k = %d neighbours of %lld queries cannot be held",
                       desc->k, (long long)(queries ? queries->count : points->count));
    return st;
}

static prox_status knn_once(const prox_points *points, const prox_points *queries,
                            const prox_knn_desc *desc, knn_out out, prox_stats *stats)
{
    prox_status st = args_check(points, queries, desc);
    if (st)
        return st;
    prox_knn_index *x = NULL;
    st = knn_build(points, desc, &x);
    if (!st)
        st = prox_knn_search(x, queries, desc, out, stats);
    prox_knn_index_destroy(x);
    return st;
}

prox_status prox_knn(const prox_points *points, const prox_points *queries,
                     const prox_knn_desc *desc, prox_knn_result *out, prox_stats *stats)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_knn: the result is NULL");
    return knn_once(points, queries, desc, (knn_out){.result = out}, stats);
}

prox_status prox_knn_each(const prox_points *points, const prox_points *queries,
                          const prox_knn_desc *desc, prox_knn_fn fn, void *user,
                          prox_stats *stats)
{
    if (!fn)
        return prox_fail(PROX_ERR_INVALID, "prox_knn_each: the callback is NULL");
    return knn_once(points, queries, desc, (knn_out){.fn = fn, .user = user}, stats);
}

prox_status prox_knn_index_build(const prox_points *points, const prox_knn_desc *desc,
                                 prox_knn_index **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_knn_index_build: out is NULL");
    *out = NULL;
    prox_status st = args_check(points, NULL, desc);
    return st ? st : knn_build(points, desc, out);
}

int64_t prox_knn_index_count(const prox_knn_index *x)
{
    return x ? x->n : 0;
}

int prox_knn_index_dim(const prox_knn_index *x)
{
    return x ? x->dim : 0;
}

prox_status prox_knn_index_query(const prox_knn_index *x, const prox_points *queries,
                                 const prox_knn_desc *desc, prox_knn_result *out,
                                 prox_stats *stats)
{
    if (!x || !out)
        return prox_fail(PROX_ERR_INVALID, "prox_knn_index_query: %s is NULL",
                         x ? "the result" : "the index");
    prox_status st = desc_check(desc, x->dim);
    if (st)
        return st;
    bool unset = desc->period[0] == 0 && desc->period[1] == 0 && desc->period[2] == 0;
    for (int k = 0; k < 3 && !unset; k++)
        if (desc->period[k] != x->period[k])
            return prox_fail(PROX_ERR_INVALID,
                             "the query's period (%g, %g, %g) differs from the index's "
                             "(%g, %g, %g); leave it 0 for the index's",
                             desc->period[0], desc->period[1], desc->period[2], x->period[0],
                             x->period[1], x->period[2]);
    if (queries) {
        st = prox_points_check(queries, "queries");
        if (!st && queries->dim != x->dim)
            st = prox_fail(PROX_ERR_INVALID, "queries are %dD but the index is %dD",
                           queries->dim, x->dim);
        if (!st)
            st = prox_points_check_finite(queries, "queries",
                                          prox_threads_resolve(desc->threads));
        if (st)
            return st;
    }
    return prox_knn_search(x, queries, desc, (knn_out){.result = out}, stats);
}
