/* engine.h: the entry points into the engine, the code compiled once per
 * SIMD level (simd/simd.h), and the table through which the rest of the
 * library reaches the level the process runs.
 *
 * PROX_ENGINE_ENTRIES is the one list of those entry points: the table's
 * members (below), each level's table (simd/engine.c) and the plain-named
 * forwarders that code outside the engine calls (simd/dispatch.c) are all
 * generated from it. An engine function called from outside the engine
 * and missing here fails the link (simd/leveled.h). */
#ifndef PROX_ENGINE_H
#define PROX_ENGINE_H

#include "broad/kd_split.h"
#include "broad/linear_kdtree.h"
#include "core/radix_sort.h"
#include "points/cell_geometry.h"
#include "points/grid_private.h"
#include "points/grid_split.h"
#include "points/knn_search.h"
#include "points/points_common.h"
#include "prox/boxes.h"
#include "prox/grid.h"

/* X(return, or nothing for a void function; return type; member; function;
 *   (parameters); (arguments)) */
#define PROX_ENGINE_ENTRIES(X)                                                                  \
    X(return, prox_status, grid_create, prox_grid_create,                                      \
      (const prox_grid_desc *desc, prox_grid **out), (desc, out))                               \
    X(, void, grid_destroy, prox_grid_destroy, (prox_grid * g), (g))                            \
    X(return, prox_status, grid_build, prox_grid_build, (prox_grid * g, const prox_points *p),  \
      (g, p))                                                                                   \
    X(return, prox_status, grid_update, prox_grid_update,                                       \
      (prox_grid * g, const prox_points *p, prox_stats *st), (g, p, st))                        \
    X(, void, grid_trim, prox_grid_trim, (prox_grid * g), (g))                                  \
    X(, void, grid_set_density_limits, prox_grid_set_density_limits,                            \
      (prox_grid * g, double table, double sweep, double half_pairs), (g, table, sweep, half_pairs)) \
    X(return, prox_status, grid_pairs, prox_grid_pairs, (prox_grid * g, prox_sink s, prox_stats * st), \
      (g, s, st))                                                                               \
    X(return, prox_status, grid_pairs_split, prox_grid_pairs_split,                               \
      (prox_grid * g, prox_grid_split *out, prox_stats *st), (g, out, st))                      \
    X(return, prox_status, grid_query, prox_grid_query,                                                 \
      (prox_grid * g, const prox_points *q, prox_sink s, prox_stats *st), (g, q, s, st))        \
    X(, void, grid_set_fill_limits, prox_grid_set_fill_limits,                                    \
      (prox_grid * g, uint32_t max_downs, int64_t max_entries), (g, max_downs, max_entries))    \
    X(return, bool, grid_sweeps, prox_grid_sweeps, (const prox_grid *g), (g))                           \
    X(return, prox_coords, grid_coords_for_held_points, prox_grid_coords_for_held_points, (void), ()) \
    X(, void, radix_sort64, prox_radix_sort64,                                                    \
      (uint64_t * k, uint32_t * v, uint64_t * tk, uint32_t * tv, int64_t n, int threads),       \
      (k, v, tk, tv, n, threads))                                                               \
    X(return, bool, radix_sort64_either, prox_radix_sort64_either,                                      \
      (uint64_t * k, uint32_t * v, uint64_t * tk, uint32_t * tv, int64_t n, int threads),       \
      (k, v, tk, tv, n, threads))                                                               \
    X(return, prox_pair *, radix_sort_pairs, prox_radix_sort_pairs,                                     \
      (prox_pair * pairs, prox_pair * tmp, int64_t n, int threads), (pairs, tmp, n, threads))   \
    X(, void, sort_u32_long, prox_sort_u32_long, (uint32_t * a, int64_t n), (a, n))              \
    X(, void, sort_u32_rows, prox_sort_u32_rows, (uint32_t * a, const uint32_t *len, int64_t rows), \
      (a, len, rows))                                                                           \
    X(return, prox_status, broad_create, prox_broad_create,                                             \
      (const prox_broad_desc *desc, prox_broad **out), (desc, out))                             \
    X(, void, broad_destroy, prox_broad_destroy, (prox_broad * b), (b))                           \
    X(, void, broad_trim, prox_broad_trim, (prox_broad * b), (b))                                 \
    X(return, prox_status, broad_build, prox_broad_build, (prox_broad * b, const prox_boxes *boxes),    \
      (b, boxes))                                                                               \
    X(return, prox_status, broad_update, prox_broad_update,                                             \
      (prox_broad * b, const prox_boxes *boxes, prox_stats *st), (b, boxes, st))                \
    X(return, prox_status, broad_pairs, prox_broad_pairs, (prox_broad * b, prox_sink s, prox_stats * st), \
      (b, s, st))                                                                               \
    X(return, prox_status, broad_query_boxes, prox_broad_query_boxes,                                   \
      (prox_broad * b, const prox_boxes *q, prox_sink s, prox_stats *st), (b, q, s, st))        \
    X(return, prox_status, broad_query_segments, prox_broad_query_segments,                             \
      (prox_broad * b, const prox_points *p0, const prox_points *p1, bool exact, prox_sink s,   \
       prox_stats *st),                                                                         \
      (b, p0, p1, exact, s, st))                                                                \
    X(return, prox_status, broad_query_swept, prox_broad_query_swept,                                   \
      (prox_broad * b, const prox_boxes *from, const prox_boxes *to, prox_sink s,               \
       prox_stats *st),                                                                         \
      (b, from, to, s, st))                                                                     \
    X(return, prox_status, broad_kdtree_info, prox_broad_kdtree_info,                                   \
      (const prox_broad *b, prox_kdtree_info *info), (b, info))                                 \
    X(return, int64_t, cell_screen, prox_cell_screen,                                            \
      (const double *x, const double *y, const double *z, int64_t lo, int64_t hi,               \
       const double q[3], double r2, uint32_t *hits),                                            \
      (x, y, z, lo, hi, q, r2, hits))                                                           \
    X(return, int64_t, cell_image_hits, prox_cell_image_hits,                                    \
      (const double *const x[3], const double *const v[3],                                      \
       const prox_cell_prescreen *screen, int64_t lo, int64_t hi, const double q[3], double r2, \
       uint32_t *hits),                                                                         \
      (x, v, screen, lo, hi, q, r2, hits))                                                      \
    X(return, prox_status, knn_search, prox_knn_search,                                         \
      (const prox_knn_index *x, const prox_points *qs, const prox_knn_desc *desc, knn_out out,  \
       prox_stats *st),                                                                         \
      (x, qs, desc, out, st))                                                                   \
    X(return, int64_t, kd_count_sweep_pairs, prox_kd_count_sweep_pairs,                                 \
      (const uint64_t *keys, int64_t n, int depth), (keys, n, depth))                           \
    X(return, int, kd_pieces_of, prox_kd_pieces_of,                                                     \
      (const prox_kd_geometry *g, const prox_aabb *box, bool split,                             \
       uint64_t key[PROX_KD_MAX_PIECES], uint32_t *qbox),                                       \
      (g, box, split, key, qbox))                                                               \
    X(return, int64_t, kd_records_of, prox_kd_records_of,                                               \
      (const prox_kd_geometry *g, const prox_aabb *box, int64_t begin, int64_t end, bool split, \
       uint64_t *key, uint32_t *id, uint32_t *qbox),                                            \
      (g, box, begin, end, split, key, id, qbox))

#define PROX_ENGINE_MEMBER(R, ret, member, fn, params, args) ret(*member) params;

/* One level's entry points. */
typedef struct prox_engine {
    const char *name; /* the level, as PROX_SIMD spells it */
    int level;        /* PROX_LEVEL_* */
    PROX_ENGINE_ENTRIES(PROX_ENGINE_MEMBER)
} prox_engine;

/* The level this process runs: chosen on first use from the CPU and
 * PROX_SIMD, then fixed. NULL when PROX_SIMD asks for a level this build
 * or this CPU lacks (prox_simd_check then says which). */
const prox_engine *prox_engine_get(void);

#endif
