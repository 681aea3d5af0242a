/* sizes.h: neighbour search of particles of different sizes.
 *
 * Every particle carries a size beside its coordinates: a radius, a
 * smoothing length or an integer type. A rule turns the sizes of a pair
 * into the pair's threshold t, and the pair is a neighbour when the squared
 * distance computed in double (with minimum images along periodic axes, as
 * in grid.h) is <= t*t and t > 0:
 *   PROX_RULE_CONTACT         t = r_i + r_j       (DEM contacts; ASE's
 *                                                  per-atom cutoffs)
 *   PROX_RULE_GATHER_SCATTER  t = max(h_i, h_j)   (SPH with adaptive h)
 *   PROX_RULE_TYPES           t = cutoff[t_i][t_j] (one cutoff per pair of
 *                                                  types, a symmetric matrix)
 * Each t is computed in double from the sizes widened to double (the sum
 * and the maximum of two doubles, or the matrix entry), then squared in
 * double, the same operations as the single-radius rule's radius*radius.
 * So equal radii r give, bit for bit, the pairs of prox_pairs at radius
 * 2r (r + r == 2r exactly), equal h those at radius h, one cutoff c those
 * at radius c. A threshold of 0 is no interaction: a type pair with cutoff
 * 0 never pairs, nor do two particles of radius 0 (a zero radius beside a
 * positive one pairs at that one's radius).
 *
 * The planner reads the sizes once: all thresholds equal (and positive):
 * the single-radius grid at that radius (stats.method "sized.uniform");
 * sizes within a factor of 32: one grid ("sized.grid"); wider: one grid
 * per size class (five powers of two of the particle's reach each), each
 * pair of classes searched once, the points of one class queried against
 * the other's grid over the classes' largest interaction ("sized.classes";
 * docs/design.md, "Sizes"). */
#ifndef PROX_SIZES_H
#define PROX_SIZES_H

#include "prox/cell.h"
#include "prox/core.h"
#include "prox/grid.h"
#include "prox/pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum prox_size_rule {
    PROX_RULE_CONTACT = 0,
    PROX_RULE_GATHER_SCATTER = 1,
    PROX_RULE_TYPES = 2,
} prox_size_rule;

/* The most types a matrix may have (its types*types doubles). */
#define PROX_MAX_TYPES 4096

/* The sizes of a point set, read like the coordinates (strided, never
 * kept): for CONTACT and GATHER_SCATTER the radius (or h) of point i is the
 * prox_scalar at (const char *)radius + i * radius_stride, 0 or within
 * [PROX_RADIUS_MIN, PROX_RADIUS_MAX]; for TYPES its type is the int32_t at
 * (const char *)type + i * type_stride, in [0, types), and cutoff holds
 * types*types entries, row-major, cutoff[a*types + b] == cutoff[b*types + a],
 * each 0 or within [PROX_RADIUS_MIN, PROX_RADIUS_MAX]. */
typedef struct prox_sizes {
    prox_size_rule rule;
    const void *radius;
    ptrdiff_t radius_stride; /* bytes from one radius to the next */
    prox_scalar radius_scalar;
    const int32_t *type;
    ptrdiff_t type_stride; /* bytes from one type to the next */
    int types;
    const double *cutoff;
} prox_sizes;

/* Packed radii (or h) in double, one per point. */
PROX_API prox_sizes prox_sizes_radii(const double *radius, prox_size_rule rule);
/* Radii anywhere: first = point 0's radius, stride in bytes. */
PROX_API prox_sizes prox_sizes_radii_strided(const void *first, prox_scalar scalar,
                                             ptrdiff_t stride, prox_size_rule rule);
/* Packed int32 types and the symmetric types x types cutoff matrix. */
PROX_API prox_sizes prox_sizes_types(const int32_t *type, int types, const double *cutoff);

/* Every pair of `points` within its threshold (sinks as in pairs.h). desc
 * gives the periods, threads and allocator (and the grid's options for the
 * uniform case); desc.radius is not read. On a periodic axis twice the
 * largest radius (GATHER_SCATTER: the largest h; TYPES: the largest cutoff
 * among the types present) must be below half the period. algo:
 * PROX_ALGO_GRID (the planner) or PROX_ALGO_BRUTE (every pair tested).
 * Errors: PROX_ERR_DATA for a negative, NaN or infinite radius or a type
 * out of range (the message names the point), PROX_ERR_RANGE for a radius
 * outside [PROX_RADIUS_MIN, PROX_RADIUS_MAX], PROX_ERR_INVALID for a
 * matrix that is not symmetric (naming the entries), a bad rule or
 * option. */
PROX_API prox_status prox_sized_pairs(const prox_points *points, const prox_sizes *sizes,
                                      const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                                      prox_stats *stats);

/* Ball queries of particles: for each query q (with its own radius, h or
 * type, under the rule of `sizes`; the matrix is that of `sizes`), the
 * points j within the threshold of the pair (q, j): pairs (q, j), lists
 * with one row per query. */
PROX_API prox_status prox_sized_query(const prox_points *points, const prox_sizes *sizes,
                                      const prox_points *queries, const prox_sizes *query_sizes,
                                      const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                                      prox_stats *stats);

/* Skin (Verlet) lists of moving particles with sizes, as prox_skin_list
 * (grid.h) for one radius: a rebuild keeps every pair within its threshold
 * + skin; each call returns the pairs of prox_sized_pairs at the current
 * positions and sizes, filtered from those candidates. The list is rebuilt
 * (stats.rebuilt) at the first call, when the count, dimension, rule or
 * any radius, type or cutoff differs from the last rebuild's, and when some
 * point moved more than skin / 2 since then. desc as for prox_sized_pairs
 * (radius not read); on a periodic axis the largest interaction + skin (plus
 * 2^-40 relative, a rounding guard) must stay below half the period, checked
 * at each rebuild. Errors as prox_sized_pairs; PROX_ERR_INVALID for a
 * negative or non-finite skin. */
typedef struct prox_sized_skin_list prox_sized_skin_list;

PROX_API prox_status prox_sized_skin_list_create(const prox_grid_desc *desc, double skin,
                                                 prox_sized_skin_list **out);
PROX_API void prox_sized_skin_list_destroy(prox_sized_skin_list *list);
PROX_API prox_status prox_sized_skin_list_pairs(prox_sized_skin_list *list,
                                                const prox_points *points,
                                                const prox_sizes *sizes, prox_sink sink,
                                                prox_stats *stats);

/* Particles with sizes kept between calls, as prox_grid keeps points:
 * build with the points and their sizes (read and checked once, kept);
 * update with new positions (the same count and dimension; the sizes stay
 * the build's: build again to change them); pairs returns the pairs of
 * prox_sized_pairs at the kept positions, to the bit, through any sink
 * (stats->method the planner's choice). The structure keeps its own copy
 * of the coordinates, so the caller's may change between calls. Each pairs
 * call plans the size classes over the kept positions again
 * (stats->rebuilt of update is always true): a kept grid per class at the
 * class's largest interaction, relocated as prox_grid_update relocates,
 * cost more than the planner's fitted query boxes (docs/design.md,
 * "Sizes"). For particles that move a little each step, the sized skin
 * list above saves the work between steps. desc as for prox_sized_pairs
 * (radius not read); errors as prox_sized_pairs', at build and update. */
typedef struct prox_sized_grid prox_sized_grid;

/* On failure *out is set to NULL. destroy(NULL) does nothing. */
PROX_API prox_status prox_sized_grid_create(const prox_grid_desc *desc, prox_sized_grid **out);
PROX_API void prox_sized_grid_destroy(prox_sized_grid *grid);
PROX_API prox_status prox_sized_grid_build(prox_sized_grid *grid, const prox_points *points,
                                           const prox_sizes *sizes);
PROX_API prox_status prox_sized_grid_update(prox_sized_grid *grid, const prox_points *points,
                                            prox_stats *stats);
PROX_API prox_status prox_sized_grid_pairs(prox_sized_grid *grid, prox_sink sink,
                                           prox_stats *stats);

/* Every image pair (i, j, S) of `points` in a periodic cell of any shape
 * (cell.h: the cell, pbc, full or half lists, self_interaction, the
 * geometry arrays and their order) kept when the squared distance of
 * cell.h's rule is within the pair's threshold under the rule of `sizes`
 * (d2 <= t*t, t > 0); self_interaction's (i, i, 0) are kept whatever the
 * sizes. desc->cutoff is not read: the search runs at the largest
 * threshold of any pair, so a wide spread of sizes costs what that one
 * costs. stats->method: "sized.cell.halo" or "sized.cell.bins" (the cell
 * search that ran). Errors as prox_sized_pairs and prox_cell_pairs; on
 * failure `out` is left empty. */
PROX_API prox_status prox_sized_cell_pairs(const prox_points *points, const prox_sizes *sizes,
                                           const prox_cell_desc *desc, prox_geometry *out,
                                           prox_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
