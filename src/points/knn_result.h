/* knn_result.h: a kNN result's rows (knn_result.c): what the search
 * fills and the caller frees (prox_knn_result_free, prox/knn.h). */
#ifndef PROX_KNN_RESULT_H
#define PROX_KNN_RESULT_H

#include "prox/knn.h"

/* The checks of k and max_radius that every kNN front makes (prox_knn,
 * prox_cell_knn): k >= 1, max_radius 0 or positive, finite, its square a
 * normal double. */
prox_status knn_check_k_radius(int k, double max_radius);

/* r emptied, then room for rows x k neighbours and the rows' counts. */
prox_status knn_result_room(prox_knn_result *r, int64_t rows, int k);

#endif
