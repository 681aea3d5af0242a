/* knn.h: exact k nearest neighbours of points.
 *
 * For every query point (the built points themselves, or a second set),
 * the k points nearest to it, sorted by (distance, index): two points at
 * the same distance come in ascending index order, so the output is the
 * same on every thread count and SIMD level. Distances follow the
 * boundary rule of grid.h: the squared distance dx*dx + dy*dy [+ dz*dz]
 * in double, minimum images on periodic axes; the distance reported is
 * sqrt() of it, the same bits brute force gives. With max_radius > 0 only
 * points within the closed ball (squared distance <= max_radius^2) count,
 * so a query may get fewer than k. A row with fewer than k neighbours is
 * padded, as scipy's cKDTree.query pads it: index = the point count n,
 * distance = +inf. A self query leaves each point itself out (unless
 * include_self), never a duplicate of it at another index.
 *
 * The search (docs/design.md, "k nearest neighbours"): points sorted into
 * cells of a size chosen from their density, queries in cell order, rings
 * of cells outward until the k-th distance is proven.
 */
#ifndef PROX_KNN_H
#define PROX_KNN_H

#include "prox/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prox_knn_desc {
    int k;              /* neighbours per query, >= 1 (default 1) */
    double max_radius;  /* > 0: only neighbours within it (closed ball); 0 = no limit */
    double period[3];   /* > 0: axis periodic over [0, period) (minimum image, coordinates
                           wrapped as x - L*floor(x/L)); 0 = open. period[2] = 0 in 2D */
    int threads;        /* 0 = OpenMP default, 1 = no threads, n = n threads */
    bool include_self;  /* self queries: a point is its own neighbour (distance 0) */
    prox_allocator allocator;
} prox_knn_desc;

PROX_API prox_knn_desc prox_default_knn_desc(void);

/* rows x k entries, row-major: row q holds query q's neighbours nearest
 * first; counts[q] of them are real, the rest padding (index n, +inf). */
typedef struct prox_knn_result {
    int64_t rows;        /* queries */
    int k;
    prox_index *indices; /* rows * k */
    double *distances;   /* rows * k */
    int32_t *counts;     /* rows */
    int32_t *shifts;     /* rows * k * dim: each neighbour's integer cell shift S, filled by
                            prox_cell_knn (prox/cell.h) only; NULL from prox_knn */
    prox_allocator allocator;
} prox_knn_result;

/* allocator may be NULL (malloc/free). */
PROX_API void prox_knn_result_init(prox_knn_result *result, const prox_allocator *allocator);
PROX_API void prox_knn_result_free(prox_knn_result *result);

/* queries NULL: every point of `points` queries the others. The result
 * replaces *out's content (out initialised by prox_knn_result_init). */
PROX_API prox_status prox_knn(const prox_points *points, const prox_points *queries,
                              const prox_knn_desc *desc, prox_knn_result *out,
                              prox_stats *stats);

/* Called once per query with its `count` neighbours (no padding), nearest
 * first; return nonzero to stop (the call then returns PROX_STOPPED). The
 * queries come in the search's order (cell order, the same on every run),
 * always on the calling thread: the search runs on one thread. */
typedef int (*prox_knn_fn)(int64_t query, int count, const prox_index *indices,
                           const double *distances, void *user);

PROX_API prox_status prox_knn_each(const prox_points *points, const prox_points *queries,
                                   const prox_knn_desc *desc, prox_knn_fn fn, void *user,
                                   prox_stats *stats);

/* Built once, queried many times: a copy of the points in cell order,
 * with cells sized for desc.k (any k may be asked later; it stays exact).
 * The index keeps desc's period and allocator; each query takes k,
 * max_radius, include_self and threads from its own desc. */
typedef struct prox_knn_index prox_knn_index;

/* On failure *out is NULL. destroy(NULL) does nothing. */
PROX_API prox_status prox_knn_index_build(const prox_points *points, const prox_knn_desc *desc,
                                          prox_knn_index **out);
PROX_API void prox_knn_index_destroy(prox_knn_index *index);
/* The built points' count and dimension. */
PROX_API int64_t prox_knn_index_count(const prox_knn_index *index);
PROX_API int prox_knn_index_dim(const prox_knn_index *index);
/* queries NULL: the built points query each other (a self query). desc's
 * period must be the build's (or all zero, meaning the build's). */
PROX_API prox_status prox_knn_index_query(const prox_knn_index *index, const prox_points *queries,
                                          const prox_knn_desc *desc, prox_knn_result *out,
                                          prox_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
