/* oracle.h: the test suite's own naive O(N^2) neighbour search.
 *
 * Written from the specification alone, independent of the library's brute
 * force: closed ball dx*dx + dy*dy [+ dz*dz] <= r*r in double; on a periodic
 * axis of length L both coordinates are first wrapped into [0, L), then
 * dx = a - b, and dx -= L if dx > L/2, dx += L if dx < -L/2. */
#ifndef PROX_TESTS_ORACLE_H
#define PROX_TESTS_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "inputs.h"
#include "prox/prox.h"

typedef struct pair_list {
    prox_pair *items;
    int64_t count;
    int64_t capacity;
} pair_list;

void pair_list_init(pair_list *list);
void pair_list_free(pair_list *list);
void pair_list_push(pair_list *list, prox_index i, prox_index j);
/* Sorts by (i, j). */
/* qsort order of prox_pair: by i, then j. */
int compare_pairs(const void *a, const void *b);
void pair_list_sort(pair_list *list);

/* Compressed rows as the library's prox_lists, owned by the tests. */
typedef struct csr {
    int64_t rows;
    int64_t *offsets;    /* rows + 1 */
    prox_index *indices; /* offsets[rows] */
} csr;

void csr_free(csr *lists);

/* x wrapped into [0, L). */
double oracle_wrap(double x, double period);

/* Every pair i < j, sorted. period may be NULL (open). */
void oracle_pairs(const cloud *points, double radius, const double *period, pair_list *out);
/* Row i: every j != i within the radius, ascending. */
void oracle_lists(const cloud *points, double radius, const double *period, csr *out);
/* Pairs (q, j) of query q and point j, sorted. */
void oracle_query_pairs(const cloud *points, const cloud *queries, double radius,
                        const double *period, pair_list *out);
/* Row q: the points j within the radius of query q, ascending. */
void oracle_query_lists(const cloud *points, const cloud *queries, double radius,
                        const double *period, csr *out);

/* Row n: the points j != rows[n] within the radius of point rows[n]
 * (a sample of the full lists, for inputs too large for all of them). */
void oracle_selected_rows(const cloud *points, const int64_t *rows, int64_t count,
                          double radius, const double *period, csr *out);

#endif
