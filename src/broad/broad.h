/* broad.h: what the box-family structures share with the front (broad.c):
 * box checks, the built boxes, per-chunk scratch, and the table of
 * functions each structure provides.
 *
 * A structure only finds candidates: gather() appends the ids of built boxes
 * that may overlap a query box (duplicates allowed). The front removes
 * duplicates, runs the exact test (box_exact.h) and emits, so that every
 * structure returns exactly what brute force returns. */
#ifndef PROX_BROAD_H
#define PROX_BROAD_H

#include "broad/box_exact.h"
#include "core/pair_sink.h"
#include "prox/boxes.h"

/* ---- checks (boxes.c) ---------------------------------------------------- */

/* Shape: pointers, dim, scalar, count. `what` names the view. */
prox_status prox_boxes_check(const prox_boxes *b, const char *what);
/* Values: every bound finite and min <= max (reports the lowest bad box). */
prox_status prox_boxes_check_values(const prox_boxes *b, const char *what, int threads);
prox_status prox_broad_desc_check(const prox_broad_desc *desc);

/* Box i of a view as doubles (z = 0 in 2D). */
static inline prox_aabb prox_boxes_aabb(const prox_boxes *b, int64_t i)
{
    prox_aabb a = {{0, 0, 0}, {0, 0, 0}};
    for (int k = 0; k < b->dim; k++) {
        a.lo[k] = prox_boxes_min(b, i, k);
        a.hi[k] = prox_boxes_max(b, i, k);
    }
    return a;
}

/* ---- the built set ------------------------------------------------------- */

typedef struct broad_input {
    const prox_aabb *box; /* n boxes, z = 0 in 2D */
    int64_t n;
    int dim;
    int threads;
    const prox_broad_desc *desc;
    const prox_allocator *allocator;
    double lo[3], hi[3]; /* bounding box of every built box (0 when n == 0) */
    double longest[3];   /* the longest extent of a box along each axis */
} broad_input;

/* ---- per-chunk scratch -------------------------------------------------- */

/* Copies of the built boxes in a structure's cell order (structure of
 * arrays, see box_store.c): the candidates of a cell are then read
 * sequentially and tested in blocks. lo[2] and hi[2] are NULL in 2D. */
typedef struct broad_store {
    double *lo[3], *hi[3];
    uint32_t *id;   /* the built box each copy is of */
    uint8_t *level; /* per copy, the level (size class) of the cell it was stored for,
                       from the structure's finest; NULL when the structure keeps none */
    int64_t count, capacity;
} broad_store;

#define PROX_ANY_LEVEL 0xFFFFu

/* Copies store->[begin, end) of a cell, candidates of the current query;
 * they ascend by lo[0] (prox_store_sort_runs).
 *
 * level: the level of the cell the query visited; copies stored for
 * another level (hash collisions: another cell's boxes in the same slot)
 * are skipped, for the query finds them through their own cells.
 * PROX_ANY_LEVEL: every copy is a candidate.
 *
 * unique: no box of the run can come again in this query (the query
 * covers one cell of this level, so it meets each box of the level once;
 * the structure stores a box once per slot). Its hits are emitted without
 * the per-query stamps that otherwise drop repeats. */
typedef struct broad_run {
    uint32_t begin, end;
    uint16_t level;
    bool unique;
} broad_run;

typedef struct broad_scratch {
    uint32_t *ids; /* candidates of the current query (ids into the built boxes) */
    int64_t count, capacity;
    /* candidates as runs of a structure's store (gather sets store) */
    const broad_store *store;
    broad_run *runs;
    int64_t nruns, runs_capacity;
    void *stack; /* structure-private traversal stack */
    int64_t stack_capacity;
    int64_t cells_visited;
    bool failed; /* an allocation failed */
    const prox_allocator *allocator;
} broad_scratch;

/* Room for `more` ids; false (and failed set) if memory ran out. */
bool prox_scratch_reserve(broad_scratch *s, int64_t more);

static inline void prox_scratch_push(broad_scratch *s, uint32_t id)
{
    if (s->count < s->capacity || prox_scratch_reserve(s, 1))
        s->ids[s->count++] = id;
}

/* Room for one more run; false (and failed set) if memory ran out. */
bool prox_scratch_reserve_run(broad_scratch *s);

static inline void prox_scratch_push_run(broad_scratch *s, broad_run run)
{
    if (run.begin < run.end && (s->nruns < s->runs_capacity || prox_scratch_reserve_run(s)))
        s->runs[s->nruns++] = run;
}

/* ---- the store (box_store.c) --------------------------------------------- */

/* store[e] = a copy of box[id[e]] for e < count (dim 2 or 3); with
 * `levels`, room for the copies' levels (the caller sets them). */
bool prox_store_fill(broad_store *st, const prox_allocator *al, const prox_aabb *box,
                     const uint32_t *id, int64_t count, int dim, bool levels);
/* Orders the copies of each run start[r] .. start[r + 1] (r < runs) by
 * lo[0], ties by id: the order test_run (broad.c) relies on to stop a run
 * early. Every structure that pushes runs calls it after filling. */
void prox_store_sort_runs(broad_store *st, const uint32_t *start, int64_t runs, int dim,
                          int threads);
void prox_store_free(broad_store *st, const prox_allocator *al);
int64_t prox_store_bytes(const broad_store *st);

/* ---- the structures ----------------------------------------------------- */

typedef struct broad_ops {
    const char *name;
    /* Build from scratch into *impl (NULL the first time; reused after). */
    prox_status (*build)(void **impl, const broad_input *in);
    /* The boxes changed from old[0 .. old_n) to in->box (same dim): move
     * what changed, or rebuild (*rebuilt). NULL: the front rebuilds. */
    prox_status (*update)(void **impl, const broad_input *in, const prox_aabb *old,
                          int64_t old_n, int64_t *relocated, bool *rebuilt);
    void (*destroy)(void *impl, const prox_allocator *allocator);
    /* Append candidates for query box q to s: ids (s->ids), or runs of the
     * structure's store (s->runs, s->store set). Duplicates allowed. NULL:
     * test every box. */
    void (*gather)(const void *impl, const prox_aabb *q, broad_scratch *s);
    /* Self pairs found natively (the sort-and-sweep structures): emit every
     * overlapping pair (i, j), i < j, exactly once and only after the exact
     * test (prox_aabb_overlap), into chunks->emitter[0 .. chunks->count);
     * the front delivers the chunks sorted, so any split of the work over
     * the chunks gives the same output. A chunk's emitter may set stop
     * (callback or allocation failure): stop emitting into it. Add the
     * candidate pairs tested and cells visited to stats. NULL: the front
     * queries each built box through gather. */
    prox_status (*self_pairs)(const void *impl, const broad_input *in, prox_chunks *chunks,
                              prox_stats *stats);
    /* Whether self_pairs serves the current build (NULL: always, when
     * self_pairs is there): the uniform grid finds self pairs natively only
     * for boxes of similar sizes. */
    bool (*has_self_pairs)(const void *impl);
    /* Called before queries gather (NULL: nothing to do): a structure may
     * build what only queries need on first use (the uniform grid's
     * per-cell engine). */
    prox_status (*prepare_queries)(void *impl, const broad_input *in);
    int64_t (*bytes)(const void *impl);
    int64_t (*cells)(const void *impl);
} broad_ops;

extern const broad_ops prox_broad_brute_ops;
extern const broad_ops prox_broad_grid_ops;
extern const broad_ops prox_broad_multilevel_ops;
extern const broad_ops prox_broad_hierarchical_ops;
extern const broad_ops prox_broad_kdtree_ops;
extern const broad_ops prox_broad_sap_ops;

/* The structure behind a built object if it is `ops`' (diagnostics), else NULL. */
const void *prox_broad_impl(const prox_broad *broad, const broad_ops *ops);

/* Measures of the built set (broad.c), for the choice of structure and the
 * uniform grid's cell: whether the boxes are of similar sizes, and the
 * median longest edge of a sample of them. */
bool prox_boxes_similar_sizes(const broad_input *in);
double prox_median_longest_edge(const broad_input *in);

/* ---- shared helpers of the hash structures ------------------------------ */

/* Eq. 2 of Pouchol et al. 2009: the class c of a box whose longest edge is l, so that
 * 2^c >= l > 2^(c-1): c = ceil(log2(l)), exactly (frexp, no log). l <= 0
 * returns INT32_MIN (a point fits any class). */
int prox_size_class(double l);

static inline double prox_longest_edge(const prox_aabb *b, int dim)
{
    double l = 0.0;
    for (int k = 0; k < dim; k++)
        l = b->hi[k] - b->lo[k] > l ? b->hi[k] - b->lo[k] : l;
    return l;
}

/* The size classes [min, max] of a build: desc->min_class/max_class, or
 * (both 0) fitted to the boxes' longest edges by Eq. 2; the minimum is
 * raised so that the finest class has at most 2^40 cells along an axis of
 * the data (a box smaller than its class still fits it). */
void prox_fit_classes(const broad_input *in, int *min_class, int *max_class);

/* The uniform-hashing engine (multilevel_hash.c): nlevels levels with the
 * given cell sizes (ascending). classes: a box goes to the level of its
 * Eq. 2 class (sizes[0] = 2^min_class); otherwise every box to level 0. */
prox_status prox_levels_build(void **impl, const broad_input *in, const double *sizes,
                              int nlevels, int min_class, bool classes);
void prox_levels_gather(const void *impl, const prox_aabb *q, broad_scratch *s);
void prox_levels_destroy(void *impl, const prox_allocator *allocator);
int64_t prox_levels_bytes(const void *impl);
int64_t prox_levels_cells(const void *impl);

/* Entries (slot, id) sorted by slot and, within a slot, by id: repeats
 * (a box covering two cells that share a slot) dropped in place, so that a
 * slot holds each box once (what unique runs rely on, broad_run); returns
 * the new count. */
static inline int64_t prox_drop_repeated_entries(uint64_t *slot, uint32_t *id, int64_t n)
{
    int64_t kept = 0;
    for (int64_t e = 0; e < n; e++)
        if (kept == 0 || slot[e] != slot[kept - 1] || id[e] != id[kept - 1]) {
            slot[kept] = slot[e];
            id[kept++] = id[e];
        }
    return kept;
}

/* floor(v) as an integer, clamped to [-2^62, 2^62] (monotonic, never UB). */
static inline int64_t prox_cell_floor(double v)
{
    const double limit = 4611686018427387904.0; /* 2^62 */
    if (!(v > -limit))
        return -((int64_t)1 << 62);
    if (!(v < limit))
        return (int64_t)1 << 62;
    double f = (double)(int64_t)v;
    return (int64_t)(f > v ? f - 1 : f);
}

#endif
