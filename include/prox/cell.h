/* cell.h: neighbours in a periodic cell of any shape and size, with the
 * pair geometry (i, j, d, D, S) of ASE's neighbor_list.
 *
 * The cell is three vectors, the rows of a 3x3 matrix (ASE's and LAMMPS'
 * convention; LAMMPS' restricted lower-triangular form is one case of it),
 * with a periodic flag per axis; 2D points take a 2x2 cell in the upper
 * left corner (the third row and column zero, pbc[2] false). Positions may
 * lie anywhere: they are not required to be wrapped into the cell.
 *
 * Pairs are images: (i, j, S) for an integer shift S (zero along open
 * axes) is a pair when the vector
 *     D[k] = (x_j[k] - x_i[k]) + ((S[0]*cell[0][k] + S[1]*cell[1][k]) + S[2]*cell[2][k])
 * evaluated in double, left to right as written, from the caller's
 * positions (widened to double), has D[0]*D[0] + D[1]*D[1] + D[2]*D[2]
 * <= cutoff*cutoff (the closed ball, the boundary rule of grid.h). Every
 * image within the cutoff is a pair, however many there are: cutoffs beyond
 * the cell's heights give several images of a pair, and self-images
 * (i, i, S != 0). S is relative to the caller's positions, as ASE returns
 * it: for unwrapped positions it includes the wrap.
 *
 * Orientation. A full list holds (i, j, S) and (j, i, -S) both; a half
 * list holds each once: i < j, or i == j with S lexicographically
 * positive. self_interaction adds (i, i, 0) once per point. The output is
 * sorted by (i, j, S[0], S[1], S[2]), the same for every thread count and
 * SIMD level.
 */
#ifndef PROX_CELL_H
#define PROX_CELL_H

#include "prox/core.h"
#include "prox/knn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most images one point's search may visit (stencil bins times
 * images): a cutoff beyond that many cells is refused (PROX_ERR_RANGE)
 * before anything is allocated. */
#define PROX_CELL_MAX_STENCIL (1 << 22)

typedef struct prox_cell_desc {
    double cutoff;          /* required, > 0, within [PROX_RADIUS_MIN, PROX_RADIUS_MAX] */
    double cell[3][3];      /* rows: the cell vectors a, b, c; a zero row on an open axis is
                               allowed (any direction outside the others' plane is used) */
    bool pbc[3];            /* periodic axes; default none */
    bool full;              /* both directions of every pair; default false (half) */
    bool self_interaction;  /* also (i, i, 0); default false */
    int threads;            /* 0 = OpenMP default, 1 = no threads, n = n threads */
    prox_allocator allocator;
} prox_cell_desc;

PROX_API prox_cell_desc prox_default_cell_desc(void);

/* Parallel arrays, one entry per pair; D and S hold `dim` entries per pair
 * (pair p's vector is D[p*dim .. p*dim+dim)). Which arrays are filled is
 * chosen at init: a NULL array in the result means not asked for. */
typedef struct prox_geometry {
    int64_t count;
    int dim;
    prox_index *i, *j;
    double *d;          /* sqrt of the squared distance of the rule */
    double *D;          /* the vector of the rule */
    int32_t *S;         /* the integer shift */
    unsigned fields;    /* PROX_GEOMETRY_* bits asked for */
    prox_allocator allocator;
} prox_geometry;

enum {
    PROX_GEOMETRY_I = 1,
    PROX_GEOMETRY_J = 2,
    PROX_GEOMETRY_DISTANCE = 4,
    PROX_GEOMETRY_VECTOR = 8,
    PROX_GEOMETRY_SHIFT = 16,
    PROX_GEOMETRY_ALL = 31,
};

/* fields: PROX_GEOMETRY_* bits (0 = all); allocator may be NULL. */
PROX_API void prox_geometry_init(prox_geometry *geometry, unsigned fields,
                                 const prox_allocator *allocator);
PROX_API void prox_geometry_free(prox_geometry *geometry);

/* Every pair of `points` in the cell: the arrays of `out` are replaced by
 * the result (out NULL: count only, in stats->pairs). Refused: a singular
 * cell or one with a NaN or infinite entry (PROX_ERR_INVALID), a
 * non-finite position (PROX_ERR_DATA), a cutoff needing more than
 * PROX_CELL_MAX_STENCIL images per point or positions more than 2^30 cells
 * away (PROX_ERR_RANGE), a 2D point set with a third cell row or column or
 * pbc[2] (PROX_ERR_INVALID). stats->method names the search:
 * "cell.direct" (at most 256 points whose images near the cell number at
 * most 2^20: every point's row one pass over those images), "cell.halo"
 * (at least 2,048 points, the cutoff at most a quarter of every periodic
 * height, at most an eighth of the points outside the cell: the uniform
 * grid over the points and their images near the faces) or "cell.bins"
 * (the rest); all give the same output to the bit. */
PROX_API prox_status prox_cell_pairs(const prox_points *points, const prox_cell_desc *desc,
                                     prox_geometry *out, prox_stats *stats);

/* ---- k nearest images ------------------------------------------------------
 *
 * For every query, the k nearest images (j, S) of the points in the cell,
 * by the vector rule above (D = (x_j - x_q) + S.cell in double, the
 * squared distance D.D): images, as the pairs are, so a small cell gives
 * several images of the same j and self-images (i, i, S != 0) of a self
 * query, and a cell larger than twice the k-th distance gives each j once
 * (its nearest image). Sorted by (squared distance, j, S lexicographic),
 * the same on every thread count and SIMD level. A self query leaves out
 * (i, i, 0) unless include_self; with max_radius > 0 only images with
 * D.D <= max_radius^2 count. Rows short of k are padded as prox_knn pads
 * them (index n, distance +inf) with S = 0. */
typedef struct prox_cell_knn_desc {
    int k;                 /* images per query, >= 1 (default 1) */
    double max_radius;     /* > 0: only images within it (closed ball); 0 = no limit */
    double cell[3][3];     /* rows: the cell vectors, as prox_cell_desc's */
    bool pbc[3];           /* periodic axes; default none */
    bool include_self;     /* self queries: (i, i, 0) is a neighbour (distance 0) */
    int threads;           /* 0 = OpenMP default, 1 = no threads, n = n threads */
    prox_allocator allocator;
} prox_cell_knn_desc;

PROX_API prox_cell_knn_desc prox_default_cell_knn_desc(void);

/* queries NULL: the points query each other. out (initialised by
 * prox_knn_result_init) receives rows x k indices, distances and shifts
 * (its `shifts` array, dim entries per neighbour). Refused as
 * prox_cell_pairs refuses a cell or a point; a k whose images would
 * number more than 32 a point (at least 2^20, at most
 * PROX_CELL_KNN_MAX_IMAGES) is refused (PROX_ERR_RANGE).
 * stats->method is "cell.knn"; stats->candidates counts the images
 * measured by the rule. */
#define PROX_CELL_KNN_MAX_IMAGES (INT64_C(1) << 26)

PROX_API prox_status prox_cell_knn(const prox_points *points, const prox_points *queries,
                                   const prox_cell_knn_desc *desc, prox_knn_result *out,
                                   prox_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
