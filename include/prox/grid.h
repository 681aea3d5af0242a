/* grid.h: fixed-radius neighbour search over points.
 *
 * The uniform grid (the spatial-hashing articles of docs/workloads.md, References;
 * Pouchol et al. 2009, section 2.1): cells of the
 * search radius, points sorted by cell key into flat arrays, every pair found
 * once through a half stencil. Three cell-key schemes:
 *   PROX_KEYS_LINEAR  exact cell coordinates in row-major order (x fastest)
 *                     over a table of every cell of the points' box (the
 *                     flat-array article's cellStart without hashing): the cells of a stencil
 *                     row are contiguous, so a search reads 9 (3D) or 3 (2D)
 *                     contiguous ranges per cell instead of 27 or 9 cells.
 *                     Up to 1 cell per point the table holds each cell's
 *                     first point; up to 256 (or 2^24 cells), a bit per
 *                     cell with ranks; sparser data falls back to Morton
 *                     keys (stats.keys tells). The default.
 *   PROX_KEYS_MORTON  exact integer cell coordinates interleaved into Morton
 *                     order (also reorders points for cache locality);
 *   PROX_KEYS_HASH    Teschner's XOR of big primes into a power-of-two table
 *                     (Pouchol et al. 2009, Eq. 1); colliding cells are told apart
 *                     exactly, so collisions cost time, never correctness.
 * Brute force (every pair tested) is the same interface with PROX_ALGO_BRUTE
 * and is the oracle of the test suite.
 *
 * Boundary rule: points p, q are neighbours when the squared distance
 * computed in double, dx*dx + dy*dy [+ dz*dz], is <= radius*radius: the
 * closed ball. With periodic axes, dx is the minimum image.
 */
#ifndef PROX_GRID_H
#define PROX_GRID_H

#include "prox/core.h"
#include "prox/pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum prox_algo {
    PROX_ALGO_GRID = 0,
    PROX_ALGO_BRUTE = 1,
    /* the hierarchical hash of Pouchol et al. 2009 (Listing 3: each particle finds its
     * neighbours among those inserted before it); one thread, open axes */
    PROX_ALGO_HIERARCHICAL = 2,
} prox_algo;

typedef enum prox_keys {
    PROX_KEYS_MORTON = 0,
    PROX_KEYS_HASH = 1,
    PROX_KEYS_LINEAR = 2,
} prox_keys;

/* How a grid keeps the coordinates of its points (in cell order). */
typedef enum prox_coords {
    /* PROX_COORDS_DOUBLE for prox_grid objects. For the one-shot
     * prox_pairs and prox_query and for skin lists, whose grids are
     * queried only while the caller's points are at hand,
     * PROX_COORDS_FIXED at every SIMD level but scalar, where doubles are
     * faster */
    PROX_COORDS_AUTO = 0,
    /* a copy in double: 8 bytes per axis and point; nothing of the
     * caller's is kept */
    PROX_COORDS_DOUBLE = 1,
    /* 32-bit fixed point within each cell: 4 bytes per axis and point,
     * and 4 more per point where the build converts packed doubles while
     * it computes the keys (tables of up to 2^18 cells; not with
     * PROX_ROWS_IN_PLACE).
     * Distances computed from them settle all candidates but those within
     * about 2^-15 of the radius, which are decided again in double from
     * the caller's points: the results are the same as with doubles, but
     * the points passed to build (and update) must stay alive and
     * unchanged until the next build or update, or destroy. Linear keys
     * only, and at most 2^17 cells along an axis; elsewhere the grid keeps
     * doubles (stats.coords tells). An update rebuilds. */
    PROX_COORDS_FIXED = 2,
} prox_coords;

/* How a grid writes the sorted pair buffers and full lists of its own
 * pairs (prox_pairs, prox_grid_pairs, a skin list's rebuilds), whose rows
 * come in input order while the grid finds them in cell order. Queries of
 * a second set are not affected. */
typedef enum prox_rows {
    /* PROX_ROWS_STAGED */
    PROX_ROWS_AUTO = 0,
    /* each point's row from the full stencil, staged in cell order, then
     * copied into place: the fastest; holds 4 bytes per entry of the
     * output (half the buffer's bytes, all of the lists') plus 12 bytes
     * per point until the query returns (stats.kept_bytes keeps it for
     * the next query) */
    PROX_ROWS_STAGED = 1,
    /* the rows counted first, then each written into place, sorted, from
     * the forward half of the stencil: 6 bytes and a bit per point beyond
     * the output (lists: 2 and a bit), at about 2 times the query time of
     * staged rows on W1 and 4 on W2 at k = 1 (docs/benchmarks.md).
     * Linear keys only (others stage); falls back to staged rows for
     * outputs of 2^31 entries or more, or a point with 65,535 neighbours
     * or more */
    PROX_ROWS_IN_PLACE = 2,
    /* staged as PROX_ROWS_STAGED, but a sorted buffer's rows (on one
     * thread all of them, on several the first chunk's) in the output
     * buffer itself, then widened there into pairs: no staging beyond the
     * output and nothing kept for the next query, at one more pass over
     * the output. For a grid queried once: prox_pairs and prox_query take
     * it for AUTO. Lists stage as PROX_ROWS_STAGED */
    PROX_ROWS_IN_OUTPUT = 3,
} prox_rows;

/* The radii every structure accepts. The test squares the radius and the
 * distances: within this range radius^2 is a normal double (no overflow to
 * infinity, no underflow to subnormals or zero), so every structure, brute
 * force included, decides each pair by the same exact comparison. A radius
 * outside it is refused with PROX_ERR_RANGE; scale the coordinates instead.
 * Coordinates need no bound of their own: a squared distance that overflows
 * is +inf, above every radius^2 in range, which is the right answer; a point
 * set spanning more than 2^31 cells along an axis is refused by the grid
 * (PROX_ERR_RANGE, see prox_grid_build). */
#define PROX_RADIUS_MIN 1e-150
#define PROX_RADIUS_MAX 1e150

typedef struct prox_grid_desc {
    double radius;        /* required, > 0 and finite, within
                             [PROX_RADIUS_MIN, PROX_RADIUS_MAX] */
    prox_keys keys;       /* default PROX_KEYS_LINEAR */
    int cell_divisions;   /* cells per radius (1 = cell size r, 27-cell stencil;
                             2 = cells of r/2 with a 5x5x5 stencil); default 1 */
    int64_t table_size;   /* PROX_KEYS_HASH: slots, a power of two; 0 = auto (2-4x points) */
    double period[3];     /* > 0: axis k is periodic over [0, period[k]) (minimum image;
                             radius must be < period/2; coordinates are wrapped as
                             x - L*floor(x/L)); 0 = open axis. Default all 0.
                             period[2] must stay 0 for 2D points. */
    int threads;          /* 0 = OpenMP default, 1 = no threads, n = n threads */
    prox_allocator allocator;
    prox_coords coords;   /* default PROX_COORDS_AUTO */
    prox_rows rows;       /* default PROX_ROWS_AUTO (staged) */
} prox_grid_desc;

PROX_API prox_grid_desc prox_default_grid_desc(void);

/* One-shot calls: build what `algo` needs, run, release. */
PROX_API prox_status prox_pairs(const prox_points *points, const prox_grid_desc *desc,
                       prox_algo algo, prox_sink sink, prox_stats *stats);
/* For each query point q, the points j of `points` within the radius:
 * pairs (q, j), lists with one row per query. */
PROX_API prox_status prox_query(const prox_points *points, const prox_points *queries,
                       const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                       prox_stats *stats);

/* A grid kept between calls: build once, query many times, update as points
 * move. The grid keeps its own copy of the coordinates in cell order (for
 * cache locality), never a pointer to the caller's points, unless asked for
 * fixed-point coordinates (desc.coords = PROX_COORDS_FIXED). */
typedef struct prox_grid prox_grid;

/* The coordinates that PROX_COORDS_AUTO gives the one-shot calls and skin
 * lists at the SIMD level in use (PROX_COORDS_FIXED, or DOUBLE at the
 * scalar level): for a grid whose caller keeps the points alive and
 * unchanged between build and queries, desc.coords =
 * prox_grid_coords_for_held_points() makes the same choice. */
PROX_API prox_coords prox_grid_coords_for_held_points(void);

/* On failure *out is set to NULL. destroy(NULL) does nothing. */
PROX_API prox_status prox_grid_create(const prox_grid_desc *desc, prox_grid **out);
PROX_API void prox_grid_destroy(prox_grid *grid);

/* Build from scratch (counting or radix sort of the points by cell key). Fails with
 * PROX_ERR_RANGE when more than 2^31 cells would lie along an axis (a tiny
 * radius over a huge extent; brute force has no such limit). */
PROX_API prox_status prox_grid_build(prox_grid *grid, const prox_points *points);
/* The points have moved: relocate only those whose cell changed (the fluid-hash chapter).
 * Rebuilds instead (stats->rebuilt tells) when that is cheaper (over a
 * quarter moved), when a point left the grid's cell range, or when the count
 * or dimension differs from the last build. */
PROX_API prox_status prox_grid_update(prox_grid *grid, const prox_points *points, prox_stats *stats);
/* Every pair of built points within the radius. */
PROX_API prox_status prox_grid_pairs(prox_grid *grid, prox_sink sink, prox_stats *stats);
/* Ball queries of a second point set (same dim) against the built points. */
PROX_API prox_status prox_grid_query(prox_grid *grid, const prox_points *queries, prox_sink sink,
                            prox_stats *stats);
/* A query keeps the memory it grew (its chunks of pairs, sorting scratch:
 * stats.kept_bytes) for the next one, which then writes warm memory instead
 * of fresh pages. This releases it; the built grid stays. Queries on one
 * grid must not run at the same time (each is parallel inside). */
PROX_API void prox_grid_trim(prox_grid *grid);

/* Skin (Verlet) lists, as LAMMPS does: pairs within radius + skin are kept;
 * each call returns the pairs within radius for the current positions and
 * rebuilds only after some point moved more than skin / 2 since the last
 * rebuild, or the count changed (stats->rebuilt tells the caller). On
 * periodic axes radius + skin (plus 2^-40 relative, a rounding guard) must
 * stay below half the period. */
typedef struct prox_skin_list prox_skin_list;

PROX_API prox_status prox_skin_list_create(const prox_grid_desc *desc, double skin, prox_skin_list **out);
PROX_API void prox_skin_list_destroy(prox_skin_list *list);
PROX_API prox_status prox_skin_list_pairs(prox_skin_list *list, const prox_points *points,
                                 prox_sink sink, prox_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
