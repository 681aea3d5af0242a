/* knn_oracle.h: the test suite's own k-nearest-neighbour search.
 *
 * Written from the specification alone (prox/knn.h), independent of the
 * library: for each query, the squared distance to every point by the
 * rule of oracle.h (coordinates wrapped on periodic axes, minimum image,
 * dx*dx + dy*dy [+ dz*dz] in double), a full sort of all of them by
 * (squared distance, index), the first k kept (those within max_radius
 * only, when it is > 0). Rows short of k are padded with index n and
 * distance +inf; distances are sqrt of the squared ones. */
#ifndef PROX_TESTS_KNN_ORACLE_H
#define PROX_TESTS_KNN_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "inputs.h"
#include "prox/prox.h"

typedef struct knn_rows {
    int64_t rows;
    int k;
    prox_index *indices; /* rows * k */
    double *distances;   /* rows * k */
    int32_t *counts;     /* rows */
} knn_rows;

/* queries NULL: each point queries the others (itself too with
 * include_self). period may be NULL (open). */
void oracle_knn(const cloud *points, const cloud *queries, int k, double max_radius,
                const double *period, bool include_self, knn_rows *out);
/* The same for the chosen query rows only: row t of out is query rows[t]. */
void oracle_knn_rows(const cloud *points, const cloud *queries, const int64_t *rows,
                     int64_t count, int k, double max_radius, const double *period,
                     bool include_self, knn_rows *out);
void knn_rows_free(knn_rows *r);

#endif
