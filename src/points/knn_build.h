/* knn_build.h: the cells of a kNN index (knn_build.c builds them,
 * knn_search.c searches them through the cell helpers here, knn.c is the
 * public front).
 *
 * Points sorted by a row-major cell key (x fastest) into flat arrays:
 * coordinates per axis in cell order (doubles, wrapped on periodic axes)
 * and their input indices. A cell's points are found through a table of
 * every cell (dense: when there are no more cells than points) or a hash
 * of the occupied cells (sparse: clustered data whose small cells would
 * leave most of the box empty). Cells along an axis are contiguous keys,
 * so the points of a strip of cells along x are one range. */
#ifndef PROX_KNN_BUILD_H
#define PROX_KNN_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "prox/knn.h"

/* Cells along an axis at most: 3 * 21 bits of key in 3D, 2 * 31 in 2D. */
#define KNN_MAX_CELLS_3D ((int64_t)1 << 21)
#define KNN_MAX_CELLS_2D ((int64_t)1 << 31)

struct prox_knn_index {
    prox_allocator allocator;
    int dim;
    int64_t n;
    double period[3];   /* 0 = open axis */
    bool periodic[3];

    /* geometry: cell c along axis k covers the values v whose
     * (v - origin[k]) * inv_cell[k], clamped to [0, ncell[k] - 1] and
     * truncated, is c (knn_cell_unit) */
    double origin[3], cell[3], inv_cell[3];
    int64_t ncell[3];
    int levels_tried;   /* cell sizes the planner measured (1 = the first fitted) */
    int k_built;        /* the k the cells were sized for */

    /* points in cell order */
    double *pos[3];     /* pos[k][s]: axis k of sorted point s (pos[2] NULL in 2D) */
    prox_index *id;     /* input index of sorted point s */

    /* runs: occupied cells in key order, points [run_start[r], run_start[r + 1]);
     * their keys in run_key32 when every key fits 32 bits, else run_key64
     * (the other NULL): knn_run_key */
    int64_t nruns;
    uint32_t *run_start;
    uint32_t *run_key32;
    uint64_t *run_key64;

    /* the cell table */
    bool dense;
    uint32_t *cell_start;  /* dense: first sorted point of each cell, cells + 1 */
    uint32_t *hash_run;    /* sparse: open addressing by run key, run + 1 (0 = empty) */
    uint64_t hash_slots;
    int64_t bytes;         /* what the index holds */
};

/* The cell unit of value v along axis k (no clamp): cells are
 * [c, c + 1) in these units. Every cell decision and bound goes through
 * it, so that a point's cell and the bounds agree bit for bit. */
static inline double knn_cell_unit(const prox_knn_index *x, int k, double v)
{
    return (v - x->origin[k]) * x->inv_cell[k];
}

static inline int64_t knn_cell_of_unit(const prox_knn_index *x, int k, double u)
{
    double last = (double)(x->ncell[k] - 1);
    u = u >= 0.0 ? u : 0.0;
    u = u > last ? last : u;
    return (int64_t)u;
}

static inline uint64_t knn_key(const prox_knn_index *x, const int64_t c[3])
{
    return ((uint64_t)c[2] * (uint64_t)x->ncell[1] + (uint64_t)c[1]) * (uint64_t)x->ncell[0] +
           (uint64_t)c[0];
}

/* The key of run r. */
static inline uint64_t knn_run_key(const prox_knn_index *x, int64_t r)
{
    return x->run_key32 ? x->run_key32[r] : x->run_key64[r];
}

/* The sorted points of cells [x0, x1] of the row (y, z): [*b, *e). */
void knn_strip(const prox_knn_index *x, int64_t x0, int64_t x1, int64_t y, int64_t z, int64_t *b,
               int64_t *e);

/* Build from checked, finite points; desc checked. */
prox_status knn_build(const prox_points *points, const prox_knn_desc *desc, prox_knn_index **out);

/* The name stats.method gives the search of x ("knn.cells.dense", ...). */
const char *knn_method(const prox_knn_index *x);

#endif
