/* cell_oracle.h: the suite's own image search in a periodic cell of any
 * shape, O(N^2 * images), written from include/prox/cell.h's rule alone:
 * for every ordered (i, j) and every integer shift S in a box of shifts
 * wide enough for the cutoff (from the cell's heights), the vector
 * D[k] = (x_j[k] - x_i[k]) + ((S0*a[k] + S1*b[k]) + S2*c[k]) in double and
 * the test D.D <= r*r; then the orientation (full: every (i, j, S) but
 * (i, i, 0) unless self_interaction; half: i < j, or i == j with S
 * lexicographically positive, or (i, i, 0) with self_interaction). */
#ifndef PROX_TESTS_CELL_ORACLE_H
#define PROX_TESTS_CELL_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "prox/prox.h"

typedef struct oracle_image {
    prox_index i, j;
    int32_t S[3];
    double D[3];
    double d;
} oracle_image;

typedef struct oracle_images {
    oracle_image *items;
    int64_t count, capacity;
} oracle_images;

/* x: count points of `dim` doubles each, packed. Sorted by (i, j, S). */
void oracle_cell_pairs(const double *x, int64_t count, int dim, double cell[3][3],
                       const bool pbc[3], double cutoff, bool full, bool self_interaction,
                       oracle_images *out);
void oracle_images_free(oracle_images *list);

/* The k nearest images of each query by the same vector rule
 * (include/prox/cell.h, "k nearest images"): for each query, every image
 * (j, S) within a radius R that doubles until k of them lie within it (or
 * R passes max_radius; with no periodic axis, every point once), sorted
 * by (D.D, j, S), the first k kept. q NULL: the points query each other,
 * (i, i, 0) left out unless include_self. Rows: k entries each, `counts`
 * of them real, padding j = count, d = +inf, S = 0. */
typedef struct oracle_knn_images {
    int64_t rows;
    int k, dim;
    prox_index *j;   /* rows * k */
    double *d;       /* rows * k */
    int32_t *S;      /* rows * k * dim */
    int32_t *counts; /* rows */
} oracle_knn_images;

void oracle_cell_knn(const double *x, int64_t count, const double *q, int64_t queries, int dim,
                     double cell[3][3], const bool pbc[3], int k, double max_radius,
                     bool include_self, oracle_knn_images *out);
void oracle_knn_images_free(oracle_knn_images *r);

#endif
