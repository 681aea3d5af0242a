/* boxes.h: broad-phase collision detection over axis-aligned boxes.
 *
 * One API for every structure: a set of boxes (2D or 3D, float or double,
 * strided views, box i identified by its index) is built into the structure
 * named by prox_broad_algo; then
 *   - self pairs: every pair of overlapping boxes, each once, i < j;
 *   - queries of a second set: boxes, segments (a moving particle's path,
 *     Pouchol et al. 2009, section 3.2) and swept boxes (a box moving over a step);
 *   - updates: boxes moved, added or removed (or a rebuild when cheaper).
 * Results go to the same sinks as the points family (pairs.h): sorted
 * buffers, CSR lists (one row per box, or per query), a callback, or
 * count only.
 *
 * Overlap rule: intervals are closed, so boxes that touch overlap:
 * a.min[k] <= b.max[k] && b.min[k] <= a.max[k] on every axis, compared in
 * double. A box with min == max on an axis (zero extent) is valid; a box with
 * min > max, or a NaN or infinite bound, is rejected (PROX_ERR_DATA, naming
 * the box). Every structure returns exactly the pairs brute force returns:
 * candidates a structure considers internally are always checked with the
 * exact test before they reach a sink; prox_stats.candidates counts them.
 */
#ifndef PROX_BOXES_H
#define PROX_BOXES_H

#include "prox/core.h"
#include "prox/pairs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A read-only view of the caller's boxes: bound k of box i is the
 * prox_scalar at (const char *)min[k] + i * stride (and max[k] likewise). */
typedef struct prox_boxes {
    const void *min[3];
    const void *max[3];
    ptrdiff_t stride;
    int64_t count;
    int dim;
    prox_scalar scalar;
} prox_boxes;

/* Packed boxes: min x, min y[, min z], max x, max y[, max z] per box (the
 * `prox collide` file format). */
PROX_API prox_boxes prox_boxes_f64(const double *bounds, int64_t count, int dim);
PROX_API prox_boxes prox_boxes_f32(const float *bounds, int64_t count, int dim);
/* Boxes inside structs: min_first / max_first = addresses of box 0's min x
 * and max x (the other axes follow contiguously); stride in bytes. */
PROX_API prox_boxes prox_boxes_strided(const void *min_first, const void *max_first, int64_t count,
                              int dim, prox_scalar scalar, ptrdiff_t stride);

static inline double prox_boxes_min(const prox_boxes *b, int64_t i, int axis)
{
    const char *at = (const char *)b->min[axis] + i * b->stride;
    return b->scalar == PROX_F64 ? *(const double *)(const void *)at
                                 : (double)*(const float *)(const void *)at;
}

static inline double prox_boxes_max(const prox_boxes *b, int64_t i, int axis)
{
    const char *at = (const char *)b->max[axis] + i * b->stride;
    return b->scalar == PROX_F64 ? *(const double *)(const void *)at
                                 : (double)*(const float *)(const void *)at;
}

/* The structures. Names are the same everywhere: this enum, `--algo` of
 * the CLI, the docs and the benchmark tables. */
typedef enum prox_broad_algo {
    PROX_BROAD_BRUTE = 0,        /* "brute": every pair tested */
    PROX_BROAD_GRID = 1,         /* "grid": uniform hashing, one cell size (Pouchol et al. 2009, 2.1) */
    PROX_BROAD_MULTILEVEL = 2,   /* "multilevel": Eitz and Lixu 2007 (Pouchol et al. 2009, 2.2) */
    PROX_BROAD_HIERARCHICAL = 3, /* "hierarchical": Pouchol et al. 2009, section 3 */
    PROX_BROAD_KDTREE = 4,       /* "kdtree": linear kd-tree (Poirrier 2009) */
    PROX_BROAD_SAP = 5,          /* "sap": sweep and prune */
    PROX_BROAD_AUTO = 6,         /* "auto" (the default): chosen at each build from the
                                    boxes: "grid" when they are of similar sizes, else
                                    "hierarchical"; stats.method names the one that ran */
} prox_broad_algo;

/* "brute", "grid", ... ; NULL for an unknown value. */
PROX_API const char *prox_broad_algo_name(prox_broad_algo algo);
/* The enum value of a name; PROX_ERR_INVALID (listing the names) if unknown. */
PROX_API prox_status prox_broad_algo_parse(const char *name, prox_broad_algo *out);

typedef struct prox_broad_desc {
    prox_broad_algo algo;    /* default PROX_BROAD_AUTO */
    int threads;             /* 0 = OpenMP default, 1 = no threads; output identical for all */
    prox_allocator allocator;

    /* Zero-copy: when the boxes are 3D doubles packed as min x, y, z, max
     * x, y, z per box (prox_boxes_f64(bounds, n, 3), or structs whose six
     * bounds are the first 48 bytes of a 48-byte struct), read them in place
     * instead of copying them (48 bytes per box saved, and the copy's time).
     * The caller then keeps the array alive and unchanged until the next
     * build, update or destroy; an update rebuilds. Other views are copied
     * as usual. Default false. */
    bool borrow_boxes;
    /* grid: cell edge; 0 = fit the data (the median longest box edge) */
    double cell_size;
    /* multilevel, hierarchical: hash table slots, rounded up to a power of
     * two; 0 = automatic. The paper's rule of thumb for fixed tables is
     * ~100 x the number of objects. For the growable table it is the initial
     * length, and a grown table keeps its length across builds. */
    int64_t table_size;
    /* hierarchical: false = fixed-length open-addressing table (Pouchol et al. 2009
     * section 4.3), true = growable table */
    bool growable_table;
    /* multilevel, hierarchical: the size classes 2^c for c in
     * [min_class, max_class]; both 0 = fit the data at build (Eq. 2), so
     * the single class [0, 0] (edge 1) cannot be forced. A box above
     * max_class is split over the cells of max_class it covers. Fitted
     * classes stop below the largest boxes' class when splitting them
     * keeps the boxes' cells within twice what Eq. 2 alone gives (on W4
     * the large boxes' class 11 becomes 8): small queries among large
     * boxes then test fewer candidates (docs/design.md). */
    int min_class, max_class;

    /* kdtree (Poirrier 2009): 2 = kd-tree-2, each candidate pair once (default);
     * 1 = kd-tree-1, whose sweep may report a candidate pair more than once
     * (stats.candidates shows it; the exact pairs reported are the same) */
    int kdtree_variant;
    /* kdtree: split elements over the cutting planes of their enclosing
     * cell (Poirrier 2009, section 4); default true */
    bool kdtree_split;
    /* kdtree: what a record costs element splitting, in units of the root
     * cell's volume per box. A split is kept when its pieces' cells, plus
     * this cost per piece, come to less than the cell it avoids plus the
     * cost of one record. 0 = Figure 7's rule as the paper has it (every
     * split that shrinks the cells' volume); default 1, which on W3
     * (d = 0.1) makes about half the records of the paper's rule, a
     * faster build and fewer candidate pairs (docs/design.md).
     * Finite and >= 0. */
    double kdtree_split_cost;
    /* kdtree: the root cell; root_lo == root_hi (the default, all zero) =
     * the cube (square in 2D) at the built boxes' lower corner with their
     * largest extent as side (cells of equal edges: measured better than
     * the bounding box on elongated data, docs/design.md). Boxes outside a
     * given root are found all the same (clamped into its border cells). */
    double root_lo[3], root_hi[3];
} prox_broad_desc;

PROX_API prox_broad_desc prox_default_broad_desc(void);

typedef struct prox_broad prox_broad;

/* On failure *out is set to NULL. destroy(NULL) does nothing. */
PROX_API prox_status prox_broad_create(const prox_broad_desc *desc, prox_broad **out);
PROX_API void prox_broad_destroy(prox_broad *broad);

/* Build from scratch over `boxes` (the structure keeps its own copy, or
 * with desc.borrow_boxes reads packed doubles in place). */
PROX_API prox_status prox_broad_build(prox_broad *broad, const prox_boxes *boxes);

/* Every pair of built boxes that overlap: i < j; buffer sorted by (i, j);
 * lists with both directions. */
PROX_API prox_status prox_broad_pairs(prox_broad *broad, prox_sink sink, prox_stats *stats);

/* For each query box q, the built boxes j it overlaps: pairs (q, j). */
PROX_API prox_status prox_broad_query_boxes(prox_broad *broad, const prox_boxes *queries,
                                   prox_sink sink, prox_stats *stats);

/* Segments from starts[q] to ends[q] (a particle's path over a step).
 * exact = true: the built boxes the segment really crosses (a closed box,
 * a segment of length 0 crossing a box it lies in); exact = false: the boxes
 * overlapping the segment's bounding box (the broad phase alone). */
PROX_API prox_status prox_broad_query_segments(prox_broad *broad, const prox_points *starts,
                                      const prox_points *ends, bool exact, prox_sink sink,
                                      prox_stats *stats);

/* Boxes moving from `from` to `to` over a step: the built boxes each swept
 * box (the bounding box of its two positions) overlaps. */
PROX_API prox_status prox_broad_query_swept(prox_broad *broad, const prox_boxes *from,
                                   const prox_boxes *to, prox_sink sink, prox_stats *stats);

/* The built boxes changed: `boxes` is the new set. Boxes 0 .. kept-1 keep
 * their identity (moved or resized: relocated where their cells changed);
 * boxes beyond the old count are added; a smaller count removes the tail.
 * The structure rebuilds instead when that is cheaper (stats->rebuilt).
 * An update rejected for a bad box (PROX_ERR_DATA, naming it) leaves the
 * structure as it was, still usable. */
PROX_API prox_status prox_broad_update(prox_broad *broad, const prox_boxes *boxes, prox_stats *stats);

/* Queries keep the memory they grew (chunks of pairs, sorting scratch:
 * stats.kept_bytes) for the next query; this releases it, the built
 * structure stays. Queries on one object must not run at the same time
 * (each is parallel inside). */
PROX_API void prox_broad_trim(prox_broad *broad);

/* Diagnostics of a built kdtree (Poirrier 2009, Table 1). Codes have 57 levels in
 * 3D (19 bits per axis), 58 in 2D (29 bits per axis); a box too small for
 * any deeper cell stays at the deepest. Volumes are in the units of the
 * boxes (areas in 2D). */
typedef struct prox_kdtree_info {
    int64_t elements;     /* boxes built */
    int64_t sub_elements; /* records after splitting: elements .. 2^dim x elements */
    int64_t sweep_pairs;  /* candidate pairs of the sweep, repeats included (kd-tree-1) */
    int64_t cells;        /* distinct cells holding records */
    double cell_volume;   /* sum over records of their cell's volume (Table 1's Vn) */
    double root_lo[3], root_hi[3]; /* the root cell used */
    int depth_limit;      /* longest code: 57 (3D) or 58 (2D) */
    int deepest;          /* longest code of this build */
    double records_s;     /* wall seconds of the last build making the records */
    double sort_s;        /* ... and sorting them */
} prox_kdtree_info;

/* PROX_ERR_INVALID unless broad is a built kdtree. O(records). */
PROX_API prox_status prox_broad_kdtree_info(const prox_broad *broad, prox_kdtree_info *info);

#ifdef __cplusplus
}
#endif
#endif
