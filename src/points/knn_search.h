/* knn_search.h: the exact kNN search over a kNN index's cells
 * (knn_search.c, part of the engine: compiled once per SIMD level and
 * reached through simd/engine.h's table). */
#ifndef PROX_KNN_SEARCH_H
#define PROX_KNN_SEARCH_H

#include "points/knn_build.h"

/* Where the search's results go: rows of a result, or a callback. */
typedef struct knn_out {
    prox_knn_result *result; /* rows in input order, or NULL */
    prox_knn_fn fn;          /* else: called per query, one thread */
    void *user;
} knn_out;

/* The search. queries NULL: the index's own points (self excluded unless
 * desc->include_self). */
prox_status prox_knn_search(const prox_knn_index *x, const prox_points *queries,
                            const prox_knn_desc *desc, knn_out out, prox_stats *stats);

#endif
