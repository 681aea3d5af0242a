/* broad.c: the prox_broad object: checks, the built copy of the boxes and
 * its measures (the choice of structure for PROX_BROAD_AUTO), and one
 * query driver for every structure and every query kind.
 *
 * Each query (a box of the built set for self pairs, a query box, a
 * segment's bounding box, a swept box) asks the structure for candidates:
 * ids, or runs of the structure's cell-ordered copies of the boxes
 * (box_store.c), which are tested 8 at a time. The driver runs the exact
 * test of box_exact.h, drops a box found twice by one query (a per-thread
 * stamp per built box) and emits through the chunked emitters of
 * pair_sink.h, which produce the same sorted output for every thread
 * count. Large query sets run in space order (space_order below). */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "broad/broad.h"
#include "core/error.h"
#include "core/morton.h"
#include "core/pair_sink.h"
#include "core/radix_sort.h"
#include "core/threads.h"
#include "core/views.h"
#include "simd/vec_f64.h"

struct prox_broad {
    prox_broad_desc desc;
    prox_allocator allocator;
    int threads;
    const broad_ops *ops;
    void *impl;
    bool built;
    int dim;
    int64_t n;
    const prox_aabb *box; /* the built boxes: `copy`, or the caller's (borrowed) */
    bool borrowed;
    prox_aabb *copy; /* the boxes as doubles (z = 0 in 2D) */
    int64_t copy_capacity;
    prox_aabb *previous; /* update: the boxes before it */
    int64_t previous_capacity;
    double lo[3], hi[3]; /* bounding box of the built boxes */
    double longest[3];   /* the longest extent along each axis */
    /* kept from one query to the next (pair_sink.h): pair arrays, scratch,
     * and each chunk's candidate arrays */
    prox_workspace work;
    broad_scratch *kept_scratch;
    int kept_scratch_count;
};

enum { /* the workspace slots of the query driver */
    SLOT_STAMPS = PROX_SCRATCH_OWNER,
    SLOT_SPACE_KEYS,
    SLOT_SPACE_ORDER,
    SLOT_SHAPES
};

/* ---- the structures ---------------------------------------------------- */

static const broad_ops *ops_of(prox_broad_algo algo)
{
    switch (algo) {
    case PROX_BROAD_BRUTE: return &prox_broad_brute_ops;
    case PROX_BROAD_GRID: return &prox_broad_grid_ops;
    case PROX_BROAD_MULTILEVEL: return &prox_broad_multilevel_ops;
    case PROX_BROAD_HIERARCHICAL: return &prox_broad_hierarchical_ops;
    case PROX_BROAD_KDTREE: return &prox_broad_kdtree_ops;
    case PROX_BROAD_SAP: return &prox_broad_sap_ops;
    case PROX_BROAD_AUTO: return &prox_broad_hierarchical_ops; /* until a build chooses */
    default: return NULL;
    }
}

prox_status prox_broad_create(const prox_broad_desc *desc, prox_broad **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "out is NULL");
    *out = NULL;
    prox_status st = prox_broad_desc_check(desc);
    if (st)
        return st;
    const broad_ops *ops = ops_of(desc->algo);
    if (!ops)
        return prox_fail(PROX_ERR_INVALID, "algorithm '%s' is not available yet",
                         prox_broad_algo_name(desc->algo));
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    prox_broad *b = prox_alloc_array(&al, 1, sizeof *b);
    if (!b)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for the broad-phase object");
    *b = (prox_broad){.desc = *desc, .allocator = al, .ops = ops,
                      .threads = prox_threads_resolve(desc->threads)};
    b->desc.allocator = al;
    prox_workspace_init(&b->work, &al);
    *out = b;
    return PROX_OK;
}

static void free_kept_scratch(prox_broad *b)
{
    for (int k = 0; k < b->kept_scratch_count; k++) {
        prox_free(&b->allocator, b->kept_scratch[k].ids);
        prox_free(&b->allocator, b->kept_scratch[k].runs);
        prox_free(&b->allocator, b->kept_scratch[k].stack);
    }
    prox_free(&b->allocator, b->kept_scratch);
    b->kept_scratch = NULL;
    b->kept_scratch_count = 0;
}

static int64_t kept_bytes(const prox_broad *b)
{
    int64_t bytes = prox_workspace_bytes(&b->work) +
                    b->kept_scratch_count * (int64_t)sizeof *b->kept_scratch;
    for (int k = 0; k < b->kept_scratch_count; k++) {
        const broad_scratch *s = &b->kept_scratch[k];
        bytes += s->capacity * 4 + s->runs_capacity * (int64_t)sizeof(broad_run);
    } /* the structures' traversal stacks (a few KB) are not counted */
    return bytes;
}

void prox_broad_trim(prox_broad *b)
{
    if (!b)
        return;
    prox_workspace_free(&b->work);
    free_kept_scratch(b);
}

const void *prox_broad_impl(const prox_broad *b, const broad_ops *ops)
{
    return b && b->built && b->ops == ops ? b->impl : NULL;
}

void prox_broad_destroy(prox_broad *b)
{
    if (!b)
        return;
    if (b->impl)
        b->ops->destroy(b->impl, &b->allocator);
    prox_free(&b->allocator, b->copy);
    prox_free(&b->allocator, b->previous);
    prox_broad_trim(b);
    prox_allocator al = b->allocator;
    prox_free(&al, b);
}

/* ---- build ------------------------------------------------------------- */

/* The view is 3D double boxes laid out as prox_aabb (min x, y, z, max x,
 * y, z; 48-byte stride, aligned): the structures can read them in place. */
static bool packed_doubles(const prox_boxes *v)
{
    const char *base = v->min[0];
    bool packed = v->scalar == PROX_F64 && v->dim == 3 && v->stride == sizeof(prox_aabb) &&
                  (uintptr_t)base % _Alignof(prox_aabb) == 0;
    for (int k = 0; packed && k < 3; k++)
        packed = (const char *)v->min[k] == base + offsetof(prox_aabb, lo) + k * sizeof(double) &&
                 (const char *)v->max[k] == base + offsetof(prox_aabb, hi) + k * sizeof(double);
    return packed;
}

/* What copy_boxes learns about the boxes (one per thread, then merged). */
typedef struct box_measure {
    double lo[3], hi[3], longest[3];
    int64_t first_bad;
} box_measure;

static inline void measure_box(box_measure *m, const prox_aabb *a, int64_t i)
{
    bool ok = true;
    for (int k = 0; k < 3; k++) {
        ok &= isfinite(a->lo[k]) & isfinite(a->hi[k]) & (a->lo[k] <= a->hi[k]);
        m->lo[k] = a->lo[k] < m->lo[k] ? a->lo[k] : m->lo[k];
        m->hi[k] = a->hi[k] > m->hi[k] ? a->hi[k] : m->hi[k];
        m->longest[k] = a->hi[k] - a->lo[k] > m->longest[k] ? a->hi[k] - a->lo[k] : m->longest[k];
    }
    m->first_bad = !ok && i < m->first_bad ? i : m->first_bad;
}

static box_measure empty_measure(void)
{
    return (box_measure){{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY},
                         {0, 0, 0}, INT64_MAX};
}

/* Copies the boxes into `out` as doubles (unless out is NULL) and measures
 * them (bounding box, longest extents) in the same pass, checking them too
 * (m->first_bad: the lowest box that is not finite with min <= max, or
 * INT64_MAX). Packed 3D doubles are read as prox_aabb directly, not
 * through the view's per-value accessors. */
static void copy_boxes(const prox_broad *b, const prox_boxes *boxes, prox_aabb *out,
                       box_measure *m)
{
    int64_t n = boxes->count;
    const prox_aabb *packed = packed_doubles(boxes) ? (const prox_aabb *)boxes->min[0] : NULL;
    box_measure all = empty_measure();
#pragma omp parallel num_threads(b->threads) if (b->threads > 1 && n > 65536)
    {
        box_measure mine = empty_measure();
        if (packed) {
#pragma omp for schedule(static) nowait
            for (int64_t i = 0; i < n; i++) {
                if (out)
                    out[i] = packed[i];
                measure_box(&mine, &packed[i], i);
            }
        } else {
#pragma omp for schedule(static) nowait
            for (int64_t i = 0; i < n; i++) {
                prox_aabb a = prox_boxes_aabb(boxes, i);
                if (out)
                    out[i] = a;
                measure_box(&mine, &a, i);
            }
        }
#pragma omp critical(prox_broad_measure)
        {
            all.first_bad = mine.first_bad < all.first_bad ? mine.first_bad : all.first_bad;
            for (int k = 0; k < 3; k++) {
                all.lo[k] = mine.lo[k] < all.lo[k] ? mine.lo[k] : all.lo[k];
                all.hi[k] = mine.hi[k] > all.hi[k] ? mine.hi[k] : all.hi[k];
                all.longest[k] = mine.longest[k] > all.longest[k] ? mine.longest[k] : all.longest[k];
            }
        }
    }
    *m = all;
}

/* The measures of good boxes become the built set's. */
static void keep_measure(prox_broad *b, const box_measure *m, int64_t n)
{
    for (int k = 0; k < 3; k++) { /* no boxes: all zero */
        b->lo[k] = n ? m->lo[k] : 0.0;
        b->hi[k] = n ? m->hi[k] : 0.0;
        b->longest[k] = m->longest[k];
    }
}

static broad_input input_of(const prox_broad *b)
{
    broad_input in = {b->box, b->n, b->dim, b->threads, &b->desc, &b->allocator,
                      {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    memcpy(in.lo, b->lo, sizeof in.lo);
    memcpy(in.hi, b->hi, sizeof in.hi);
    memcpy(in.longest, b->longest, sizeof in.longest);
    return in;
}

/* Boxes sampled for the median longest edge. */
#define SAMPLE 4096
/* Rows serve self pairs when the longest extent along each axis is at most
 * this many median longest edges: beyond, a few big boxes would make every
 * cell large. */
#define ROWS_MAX_EXTENT_IN_EDGES 4.0

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median longest edge (of at most SAMPLE evenly spaced boxes). */
double prox_median_longest_edge(const broad_input *in)
{
    double sample[SAMPLE];
    int64_t step = in->n > SAMPLE ? in->n / SAMPLE : 1;
    int count = 0;
    for (int64_t i = 0; i < in->n && count < SAMPLE; i += step)
        sample[count++] = prox_longest_edge(&in->box[i], in->dim);
    if (count == 0)
        return 0.0;
    qsort(sample, (size_t)count, sizeof sample[0], compare_double);
    return sample[count / 2];
}

/* Whether the boxes are of similar sizes (rows serve their self pairs,
 * and PROX_BROAD_AUTO picks this structure): no box much longer along an
 * axis than the median box's longest edge. */
bool prox_boxes_similar_sizes(const broad_input *in)
{
    double limit = ROWS_MAX_EXTENT_IN_EDGES * prox_median_longest_edge(in);
    for (int k = 0; k < in->dim; k++)
        if (!(in->longest[k] <= limit))
            return false;
    return true;
}

/* The hash structures measure cells from the data's minimum corner: the
 * extent must be a finite double. */
static prox_status check_extent(const prox_broad *b, const broad_input *in)
{
    static const char axis_name[] = "xyz";
    for (int k = 0; b->ops->gather && k < in->dim; k++)
        if (!isfinite(in->hi[k] - in->lo[k]))
            return prox_fail(PROX_ERR_RANGE,
                             "the boxes span %g .. %g along %c: the extent overflows a double "
                             "(%s needs it; brute force does not)",
                             in->lo[k], in->hi[k], axis_name[k], b->ops->name);
    return PROX_OK;
}

/* PROX_BROAD_AUTO: the structure for these boxes. Boxes of similar sizes
 * (equal spheres, particles) go to the uniform grid, whose rows find their
 * pairs fastest; a wide spread of sizes (W4's three classes, a scene's
 * obstacles) to the hierarchical hash, whose levels keep big boxes from
 * making every cell big. A change of structure frees the old one's. */
static void choose_structure(prox_broad *b, const broad_input *in)
{
    const broad_ops *want = prox_boxes_similar_sizes(in) ? &prox_broad_grid_ops
                                                         : &prox_broad_hierarchical_ops;
    if (want == b->ops)
        return;
    if (b->impl)
        b->ops->destroy(b->impl, &b->allocator);
    b->impl = NULL;
    b->ops = want;
}

prox_status prox_broad_build(prox_broad *b, const prox_boxes *boxes)
{
    if (!b)
        return prox_fail(PROX_ERR_INVALID, "the broad-phase object is NULL");
    b->built = false;
    prox_status st = prox_boxes_check(boxes, "boxes");
    if (st)
        return st;
    b->borrowed = b->desc.borrow_boxes && packed_doubles(boxes);
    if (!b->borrowed) {
        void *p = b->copy;
        bool ok = prox_reserve(&b->allocator, &p, &b->copy_capacity, boxes->count,
                               sizeof(prox_aabb));
        b->copy = p;
        b->box = b->copy;
        if (!ok)
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory copying %lld boxes",
                             (long long)boxes->count);
    }
    box_measure m;
    copy_boxes(b, boxes, b->borrowed ? NULL : b->copy, &m);
    if (m.first_bad != INT64_MAX) /* the check names the lowest bad box */
        return prox_fail_recheck(prox_boxes_check_values(boxes, "boxes", b->threads), "boxes");
    keep_measure(b, &m, boxes->count);
    b->box = b->borrowed ? (const prox_aabb *)boxes->min[0] : b->copy;
    b->n = boxes->count;
    b->dim = boxes->dim;
    broad_input in = input_of(b);
    st = check_extent(b, &in);
    if (!st && b->desc.algo == PROX_BROAD_AUTO)
        choose_structure(b, &in);
    if (!st)
        st = b->ops->build(&b->impl, &in);
    b->built = st == PROX_OK;
    return st;
}

/* Memory the structure holds with the boxes' copies (stats.bytes). */
static int64_t held_bytes(const prox_broad *b)
{
    return b->ops->bytes(b->impl) +
           (b->copy_capacity + b->previous_capacity) * (int64_t)sizeof(prox_aabb);
}

static void update_stats(const prox_broad *b, prox_status st, int64_t relocated, bool rebuilt,
                         prox_stats *stats)
{
    if (!stats)
        return;
    *stats = (prox_stats){0};
    stats->rebuilt = rebuilt;
    stats->relocated = relocated;
    if (st == PROX_OK) {
        stats->bytes = held_bytes(b);
        stats->kept_bytes = kept_bytes(b);
        stats->cells = b->ops->cells(b->impl);
    }
}

/* The new boxes are copied into the spare buffer and checked there; only
 * good boxes become b->box, the old ones then staying in b->previous. A
 * rejected update leaves the built set as it was. */
static prox_status swap_in(prox_broad *b, const prox_boxes *boxes)
{
    assert(!b->borrowed);
    void *p = b->previous;
    bool ok = prox_reserve(&b->allocator, &p, &b->previous_capacity, boxes->count,
                           sizeof(prox_aabb));
    b->previous = p;
    if (!ok)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory copying %lld boxes",
                         (long long)boxes->count);
    box_measure m;
    copy_boxes(b, boxes, b->previous, &m);
    if (m.first_bad != INT64_MAX) /* the check names the lowest bad box */
        return prox_fail_recheck(prox_boxes_check_values(boxes, "boxes", b->threads), "boxes");
    keep_measure(b, &m, boxes->count);
    prox_aabb *old = b->copy;
    int64_t old_capacity = b->copy_capacity;
    b->copy = b->previous;
    b->copy_capacity = b->previous_capacity;
    b->box = b->copy;
    b->previous = old;
    b->previous_capacity = old_capacity;
    return PROX_OK;
}

prox_status prox_broad_update(prox_broad *b, const prox_boxes *boxes, prox_stats *stats)
{
    if (!b || !b->built || !b->ops->update || !boxes || boxes->dim != b->dim || b->borrowed) {
        /* nothing to relocate (or the old boxes were the caller's, changed
         * since): a build. It overwrites the copy as it checks, so a built
         * structure is checked first (a read-only pass) to stay usable when
         * the update is rejected. */
        if (b && b->built && boxes && !prox_boxes_check(boxes, "boxes")) {
            box_measure m;
            copy_boxes(b, boxes, NULL, &m);
            if (m.first_bad != INT64_MAX) {
                prox_status st = prox_fail_recheck(
                    prox_boxes_check_values(boxes, "boxes", b->threads), "boxes");
                update_stats(b, st, 0, false, stats);
                return st;
            }
        }
        prox_status st = prox_broad_build(b, boxes);
        if (b)
            update_stats(b, st, 0, true, stats);
        return st;
    }
    prox_status st = prox_boxes_check(boxes, "boxes");
    if (!st)
        st = swap_in(b, boxes);
    if (st) { /* nothing moved: the built set stays as it was, and usable */
        update_stats(b, st, 0, false, stats);
        return st;
    }
    int64_t old_n = b->n, relocated = 0;
    bool rebuilt = false;
    b->n = boxes->count;
    broad_input in = input_of(b);
    st = check_extent(b, &in);
    if (!st)
        st = b->ops->update(&b->impl, &in, b->previous, old_n, &relocated, &rebuilt);
    b->built = st == PROX_OK;
    update_stats(b, st, relocated, rebuilt, stats);
    return st;
}

/* ---- queries ----------------------------------------------------------- */

typedef enum query_kind { QUERY_SELF, QUERY_BOXES, QUERY_SEGMENTS, QUERY_SWEPT } query_kind;

typedef struct query_set {
    query_kind kind;
    const prox_boxes *boxes, *to; /* QUERY_BOXES; QUERY_SWEPT: from, to */
    const prox_points *starts, *ends;
    bool exact; /* QUERY_SEGMENTS: the segment test, not only its bounding box */
    int64_t count;
} query_set;

typedef struct query_shape {
    prox_aabb box;      /* what the structure is asked about */
    double p0[3], p1[3]; /* the segment, when the exact segment test decides */
    bool segment;
} query_shape;

/* Query q's shape into *s. Only what the kind uses is written (p0 and p1
 * for segments): the shapes of a block are read from all over the input
 * and used at once, and zeroing 100 bytes a query cost more than reading
 * the query. */
static inline void read_shape(const prox_broad *b, const query_set *qs, int64_t q,
                              query_shape *s)
{
    s->segment = false;
    switch (qs->kind) {
    default: /* QUERY_SELF */
        s->box = b->box[q];
        break;
    case QUERY_BOXES: s->box = prox_boxes_aabb(qs->boxes, q); break;
    case QUERY_SWEPT: {
        prox_aabb from = prox_boxes_aabb(qs->boxes, q), to = prox_boxes_aabb(qs->to, q);
        s->box = prox_aabb_union(&from, &to);
        break;
    }
    case QUERY_SEGMENTS:
        for (int k = 0; k < 3; k++) {
            s->p0[k] = k < b->dim ? prox_points_get(qs->starts, q, k) : 0.0;
            s->p1[k] = k < b->dim ? prox_points_get(qs->ends, q, k) : 0.0;
        }
        s->box = prox_aabb_of_segment(s->p0, s->p1);
        s->segment = qs->exact;
        break;
    }
}

static inline bool shape_hits(const query_shape *s, const prox_aabb *box)
{
    return s->segment ? prox_segment_hits_aabb(s->p0, s->p1, box)
                      : prox_aabb_overlap(&s->box, box);
}

/* Brute force (the structure has no gather): every built box is tested. */
static void scan_all(const prox_broad *b, const query_shape *s, int64_t q, bool self,
                     prox_emitter *e, int64_t *candidates)
{
    int64_t first = self ? q + 1 : 0;
    *candidates += b->n - first;
    for (int64_t j = first; j < b->n && !e->stop; j++)
        if (shape_hits(s, &b->box[j]))
            prox_emit(e, (prox_index)q, (prox_index)j);
}

/* One candidate box j (its box: `box`) of query q: tested once per query
 * (stamp = query + 1), emitted if the exact test passes. */
static inline void test_one(const query_shape *s, int64_t q, bool self, uint32_t j,
                            const prox_aabb *box, uint32_t *stamp, uint32_t mark,
                            prox_emitter *e)
{
    if (stamp[j] == mark || (self && (int64_t)j <= q))
        return;
    stamp[j] = mark;
    if (shape_hits(s, box))
        prox_emit(e, (prox_index)q, (prox_index)j);
}

/* A box that passed the exact test: emitted unless already emitted for this
 * query (a box stored in several cells the query visits). */
static inline void emit_hit(int64_t q, bool self, uint32_t j, uint32_t *stamp, uint32_t mark,
                            prox_emitter *e)
{
    if (stamp[j] == mark || (self && (int64_t)j <= q))
        return;
    stamp[j] = mark;
    prox_emit(e, (prox_index)q, (prox_index)j);
}

/* PD_W copies of a run at a time (vec_f64.h): the query box against their
 * boxes (prox_aabb_overlap), then for segments the rest of
 * prox_segment_hits_aabb, lane by lane the same operations in the same
 * order (IEEE, no contraction), so the same decisions as the scalar test.
 * The scalar slab loop stops at the first axis where t_in > t_out; later
 * axes only raise t_in and lower t_out, so testing after the last axis
 * decides the same. */
typedef struct box_lanes {
    pd_f64 lo[3], hi[3];
} box_lanes;

/* Copies at .. at + PD_W - 1 (left of them exist) overlapping the query
 * box, as bits; their boxes to *v. */
static PROX_ALWAYS_INLINE uint32_t overlap_lanes(const broad_store *st, int64_t at, int64_t left,
                                                const query_shape *s, int dim, box_lanes *v)
{
    v->lo[0] = pd_load_n(st->lo[0] + at, left);
    v->hi[0] = pd_load_n(st->hi[0] + at, left);
    pd_cmp in = pd_and(pd_le(pd_set1(s->box.lo[0]), v->hi[0]), pd_le(v->lo[0], pd_set1(s->box.hi[0])));
    for (int k = 1; k < dim; k++) {
        v->lo[k] = pd_load_n(st->lo[k] + at, left);
        v->hi[k] = pd_load_n(st->hi[k] + at, left);
        in = pd_and(in, pd_and(pd_le(pd_set1(s->box.lo[k]), v->hi[k]),
                               pd_le(v->lo[k], pd_set1(s->box.hi[k]))));
    }
    return pd_bits(in) & pd_live(left);
}

static PROX_ALWAYS_INLINE uint32_t point_in_lanes(const box_lanes *v, const double p[3], int dim)
{
    pd_f64 x = pd_set1(p[0]);
    pd_cmp in = pd_and(pd_le(v->lo[0], x), pd_le(x, v->hi[0]));
    for (int k = 1; k < dim; k++) {
        x = pd_set1(p[k]);
        in = pd_and(in, pd_and(pd_le(v->lo[k], x), pd_le(x, v->hi[k])));
    }
    return pd_bits(in);
}

/* The lanes of m whose boxes the query segment meets. */
static PROX_ALWAYS_INLINE uint32_t segment_lanes(const box_lanes *v, uint32_t m,
                                                const query_shape *s, int dim)
{
    uint32_t hit = m & (point_in_lanes(v, s->p0, dim) | point_in_lanes(v, s->p1, dim));
    uint32_t rest = m & ~hit;
    if (!rest)
        return hit;
    pd_f64 t_in = pd_set1(0.0), t_out = pd_set1(1.0);
    for (int k = 0; k < dim; k++) {
        if (s->p0[k] == s->p1[k])
            continue;
        pd_f64 p0 = pd_set1(s->p0[k]), d = pd_set1(s->p1[k] - s->p0[k]);
        pd_f64 ta = pd_div(pd_sub(v->lo[k], p0), d);
        pd_f64 tb = pd_div(pd_sub(v->hi[k], p0), d);
        pd_cmp swap = pd_gt(ta, tb);
        pd_f64 first = pd_select(swap, tb, ta), second = pd_select(swap, ta, tb);
        t_in = pd_select(pd_gt(first, t_in), first, t_in);
        t_out = pd_select(pd_lt(second, t_out), second, t_out);
    }
    return hit | (rest & ~pd_bits(pd_gt(t_in, t_out)));
}

/* A hit of a unique run (broad_run): no stamp to read or write. */
static inline void emit_unique(int64_t q, bool self, uint32_t j, prox_emitter *e)
{
    if (!self || (int64_t)j > q)
        prox_emit(e, (prox_index)q, (prox_index)j);
}

/* The copies of run r, PD_W at a time, until one starts past the query;
 * returns how many were tested. dim is a constant in each call below, so
 * that the axis loops unroll and a block stays in registers. A unique run
 * (broad_run) emits without stamps, and into a count only counts. */
static PROX_ALWAYS_INLINE int64_t test_run_in(const broad_store *st, broad_run r,
                                             const query_shape *s, int64_t q, bool self,
                                             uint32_t *stamp, uint32_t mark, prox_emitter *e,
                                             int dim)
{
    bool count_only = r.unique && !self && e->kind == PROX_SINK_COUNT;
    int64_t at = r.begin;
    for (; at < r.end && !e->stop; at += PD_W) {
        if (st->lo[0][at] > s->box.hi[0])
            break; /* copies ascend by lo[0]: none from here on overlaps */
        box_lanes v;
        uint32_t m = overlap_lanes(st, at, r.end - at, s, dim, &v);
        if (m && r.level != PROX_ANY_LEVEL) /* copies stored for the run's level */
            m = pd_bytes_equal(st->level + at, m, (uint8_t)r.level);
        if (m && s->segment)
            m = segment_lanes(&v, m, s, dim);
        if (count_only) {
            e->count += prox_lanes_popcount(m);
            continue;
        }
        for (uint32_t bits = m; bits && !e->stop; bits &= bits - 1) {
            uint32_t j = st->id[at + __builtin_ctz(bits)];
            if (r.unique)
                emit_unique(q, self, j, e);
            else
                emit_hit(q, self, j, stamp, mark, e);
        }
    }
    return (at < r.end ? at : r.end) - r.begin;
}

/* Tests the copies of run r; returns how many it tested. */
static int64_t test_run(const prox_broad *b, const broad_store *st, broad_run r,
                        const query_shape *s, int64_t q, bool self, uint32_t *stamp,
                        uint32_t mark, prox_emitter *e)
{
    if (b->dim == 2)
        return test_run_in(st, r, s, q, self, stamp, mark, e, 2);
    return test_run_in(st, r, s, q, self, stamp, mark, e, 3);
}

/* The structure's candidates, each tested once (stamp = query + 1).
 * Candidates counts the ids the structure gathered and the copies of its
 * runs that were tested (a box met in several cells counts each time; a
 * run stopped early counts to its last block). */
static void test_candidates(const prox_broad *b, const query_shape *s, int64_t q, bool self,
                            broad_scratch *scratch, uint32_t *stamp, prox_emitter *e,
                            int64_t *candidates)
{
    uint32_t mark = (uint32_t)(q + 1);
    scratch->count = 0;
    scratch->nruns = 0;
    b->ops->gather(b->impl, &s->box, scratch);
    *candidates += scratch->count;
    for (int64_t c = 0; c < scratch->count && !e->stop; c++) {
        uint32_t j = scratch->ids[c];
        test_one(s, q, self, j, &b->box[j], stamp, mark, e);
    }
    for (int64_t r = 0; r < scratch->nruns && !e->stop; r++)
        *candidates += test_run(b, scratch->store, scratch->runs[r], s, q, self, stamp, mark, e);
}

typedef struct chunk_job {
    const prox_broad *broad;
    const query_set *queries;
    uint32_t *order;        /* queries in space order, or NULL: input order */
    query_shape *shapes;    /* SHAPE_BLOCK per chunk */
    prox_chunks chunks;
    broad_scratch *scratch; /* one per chunk */
    uint32_t *stamps;       /* n per thread */
    int64_t *candidates;    /* one per chunk */
} chunk_job;

/* Chunk boundaries: brute-force self pairs shrink row by row, so balance
 * the triangle by area; everything else by count. */
static int64_t chunk_begin(const chunk_job *job, int k)
{
    int chunks = job->chunks.count;
    int64_t n = job->queries->count;
    bool triangle = job->queries->kind == QUERY_SELF && !job->broad->ops->gather;
    if (!triangle || k == 0 || k == chunks)
        return n * k / chunks;
    double frac = (double)k / chunks;
    return (int64_t)((double)n * (1.0 - sqrt(1.0 - frac)));
}

/* Queries are read a block at a time (in space order, a gather from all
 * over the input: a loop of independent loads, so that the cache misses
 * overlap), then run. */
#define SHAPE_BLOCK 512
#define PREFETCH_AHEAD 16

/* Where the parts of query q start (segments: start and end point; boxes:
 * min and max corner; swept boxes: both of each), for prefetching; returns
 * how many. (The prefetches are issued by the caller: GCC finds a function
 * that only prefetches free of effects and deletes its calls.) */
static int query_parts(const query_set *qs, int64_t q, const char *part[4])
{
    switch (qs->kind) {
    case QUERY_SELF: return 0;
    case QUERY_SEGMENTS:
        part[0] = (const char *)qs->starts->axis[0] + q * qs->starts->stride;
        part[1] = (const char *)qs->ends->axis[0] + q * qs->ends->stride;
        return 2;
    case QUERY_SWEPT:
        part[2] = (const char *)qs->to->min[0] + q * qs->to->stride;
        part[3] = (const char *)qs->to->max[0] + q * qs->to->stride;
        /* fall through */
    case QUERY_BOXES:
        part[0] = (const char *)qs->boxes->min[0] + q * qs->boxes->stride;
        part[1] = (const char *)qs->boxes->max[0] + q * qs->boxes->stride;
        return qs->kind == QUERY_SWEPT ? 4 : 2;
    }
    return 0;
}

/* Chunk k's queries. The chunk's scratch and candidate count are worked on
 * in local copies and written back at the end: the arrays hold them side by
 * side, and chunks running on different threads would otherwise share
 * cache lines that every query writes (emitters are padded against the
 * same, pair_sink.h). */
static void run_chunk(chunk_job *job, int k)
{
    const prox_broad *b = job->broad;
    bool self = job->queries->kind == QUERY_SELF;
    prox_emitter *e = &job->chunks.emitter[k];
    broad_scratch scratch = job->scratch[k];
    int64_t candidates = job->candidates[k];
    uint32_t *stamp = b->ops->gather ? job->stamps + (int64_t)omp_get_thread_num() * b->n : NULL;
    query_shape *shapes = job->shapes + (int64_t)k * SHAPE_BLOCK;
    int64_t end = chunk_begin(job, k + 1);
    for (int64_t first = chunk_begin(job, k); first < end; first += SHAPE_BLOCK) {
        int64_t last = end - first < SHAPE_BLOCK ? end : first + SHAPE_BLOCK;
        for (int64_t at = first; at < last; at++) {
            if (job->order && at + PREFETCH_AHEAD < last) {
                const char *part[4];
                int parts = query_parts(job->queries, job->order[at + PREFETCH_AHEAD], part);
                for (int p = 0; p < parts; p++)
                    __builtin_prefetch(part[p]);
            }
            read_shape(b, job->queries, job->order ? job->order[at] : at, &shapes[at - first]);
        }
        for (int64_t at = first; at < last && !e->stop && !scratch.failed; at++) {
            int64_t q = job->order ? job->order[at] : at;
            const query_shape *s = &shapes[at - first];
            if (stamp)
                test_candidates(b, s, q, self, &scratch, stamp, e, &candidates);
            else
                scan_all(b, s, q, self, e, &candidates);
        }
        if (e->stop || scratch.failed)
            break;
    }
    job->scratch[k] = scratch;
    job->candidates[k] = candidates;
}

/* The chunks' candidate scratch, with the arrays they grew in earlier
 * queries (kept in b); false when out of memory. */
static bool take_scratch(prox_broad *b, broad_scratch *scratch, int count)
{
    if (count > b->kept_scratch_count) {
        broad_scratch *grown = prox_alloc_array(&b->allocator, count, sizeof *grown);
        if (!grown)
            return false;
        for (int k = 0; k < count; k++)
            grown[k] = k < b->kept_scratch_count ? b->kept_scratch[k]
                                                 : (broad_scratch){.allocator = &b->allocator};
        prox_free(&b->allocator, b->kept_scratch);
        b->kept_scratch = grown;
        b->kept_scratch_count = count;
    }
    for (int k = 0; k < count; k++) {
        const broad_scratch *kept = &b->kept_scratch[k];
        scratch[k] = (broad_scratch){.ids = kept->ids, .capacity = kept->capacity,
                                     .runs = kept->runs, .runs_capacity = kept->runs_capacity,
                                     .stack = kept->stack, .stack_capacity = kept->stack_capacity,
                                     .allocator = &b->allocator};
    }
    return true;
}

static prox_status job_init(chunk_job *job, prox_broad *b, const query_set *qs,
                            prox_sink sink)
{
    int64_t work = b->ops->gather ? qs->count : qs->count * (b->n > 64 ? 64 : b->n + 1);
    int count = prox_chunk_count(sink, b->threads, work);
    prox_status st = prox_chunks_init(&job->chunks, count, sink, &b->work);
    if (st)
        return st;
    int threads = count > 1 ? b->threads : 1;
    job->scratch = prox_alloc_array(&b->allocator, count, sizeof *job->scratch);
    if (job->scratch && !take_scratch(b, job->scratch, count)) {
        prox_free(&b->allocator, job->scratch);
        job->scratch = NULL;
    }
    job->candidates = prox_alloc_array(&b->allocator, count, sizeof *job->candidates);
    for (int k = 0; job->candidates && k < count; k++)
        job->candidates[k] = 0;
    int64_t stamps = b->ops->gather ? threads * b->n : 0;
    job->stamps = prox_workspace_scratch(&b->work, SLOT_STAMPS, stamps * 4);
    job->shapes = prox_workspace_scratch(&b->work, SLOT_SHAPES,
                                         (int64_t)count * SHAPE_BLOCK * (int64_t)sizeof(query_shape));
    if (!job->scratch || !job->candidates || !job->shapes || !job->stamps)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for query scratch");
    memset(job->stamps, 0, (size_t)stamps * sizeof(uint32_t));
    if (!b->ops->gather)
        job->stamps = NULL;
    return PROX_OK;
}

/* What the job grew goes back to b for the next query. */
static void job_free(chunk_job *job, prox_broad *b)
{
    if (job->scratch)
        for (int k = 0; k < job->chunks.count; k++) {
            broad_scratch *kept = &b->kept_scratch[k];
            kept->ids = job->scratch[k].ids;
            kept->capacity = job->scratch[k].capacity;
            kept->runs = job->scratch[k].runs;
            kept->runs_capacity = job->scratch[k].runs_capacity;
            kept->stack = job->scratch[k].stack;
            kept->stack_capacity = job->scratch[k].stack_capacity;
        }
    prox_free(&b->allocator, job->scratch);
    prox_free(&b->allocator, job->candidates);
    prox_chunks_free(&job->chunks);
}

/* ---- space order --------------------------------------------------------- */

/* Queries are run in the Morton order of their centres (SPACE_BITS per axis
 * over the built boxes' bounding box; centres outside count as on its
 * edge), so that consecutive queries meet the
 * same cells and boxes while they are in cache: on W4 (1M random segments)
 * that is the difference between a cache miss per cell lookup and a hit.
 * The output does not depend on it: stored pairs are delivered sorted, and
 * a callback still gets each query's pairs together (in this order).
 * A structure under SPACE_MIN_BYTES stays in cache anyway, and then the
 * sort and the scattered reads of the queries cost more than they save
 * (W4 at N = 1,000 boxes, 0.3 MB, loses to the sort; at 10,000, 2.5 MB,
 * gains: docs/design.md). Bytes alone misjudge small sets in big tables:
 * the fluid scene's 2,000 spheres take 1.1-1.8 MB in the hash structures,
 * and sorting its 100,000 particle paths cost more than it saved in every
 * structure: under SPACE_MIN_BOXES built boxes the queries stay in input
 * order too. */
#define SPACE_BITS 10
#define SPACE_MIN_QUERIES 4096
#define SPACE_MIN_BYTES (1 << 20)
#define SPACE_MIN_BOXES 8192

/* The views a query's centre is read from, copied into the key loop's
 * locals: through the query set's pointers, every key stored made the
 * compiler read the views' fields again. */
typedef struct centre_views {
    prox_points starts, ends;
    prox_boxes boxes;
} centre_views;

static centre_views centre_views_of(const query_set *qs)
{
    centre_views v = {0};
    if (qs->kind == QUERY_SEGMENTS) {
        v.starts = *qs->starts;
        v.ends = *qs->ends;
    } else if (qs->kind == QUERY_BOXES) {
        v.boxes = *qs->boxes;
    }
    return v;
}

/* Twice the centre of query q: the sum of a segment's two points or of a
 * box's corners, read straight from the views (through read_shape, the
 * keys of W4's million segments took about three times as long). */
static inline void twice_centre(const prox_broad *b, const query_set *qs,
                                const centre_views *v, int64_t q, double c[3])
{
    switch (qs->kind) {
    case QUERY_SEGMENTS:
        for (int k = 0; k < b->dim; k++)
            c[k] = prox_points_get(&v->starts, q, k) + prox_points_get(&v->ends, q, k);
        return;
    case QUERY_BOXES:
        for (int k = 0; k < b->dim; k++)
            c[k] = prox_boxes_min(&v->boxes, q, k) + prox_boxes_max(&v->boxes, q, k);
        return;
    default: {
        query_shape s;
        read_shape(b, qs, q, &s);
        for (int k = 0; k < b->dim; k++)
            c[k] = s.box.lo[k] + s.box.hi[k];
    }
    }
}

/* The Morton key of twice a centre, SPACE_BITS per axis: twice_lo and
 * half_scale map it as the centre over the built boxes' extent. */
static uint64_t space_key(const double c[3], const double twice_lo[3],
                          const double half_scale[3], int dim)
{
    const double top = (double)((1 << SPACE_BITS) - 1);
    uint32_t cell[3] = {0, 0, 0};
    for (int k = 0; k < dim; k++) {
        double u = (c[k] - twice_lo[k]) * half_scale[k];
        u = u > 0 ? u : 0;
        cell[k] = (uint32_t)(u < top ? u : top);
    }
    return dim == 3 ? prox_morton3(cell[0], cell[1], cell[2]) : prox_morton2(cell[0], cell[1]);
}

/* job->order: the queries sorted by space_key (stable: ties in input
 * order), the query indices carried as the sort's values: only the key's
 * 3 * SPACE_BITS bits are sorted on (an index packed below the key made
 * the sort pass over its bits too: W4's 1M keys in 4 passes instead of 2).
 * Left NULL when there are few queries or memory runs out. */
static void space_order(chunk_job *job, prox_broad *b, const query_set *qs)
{
    int64_t n = qs->count;
    if (!b->ops->gather || n < SPACE_MIN_QUERIES || n > (int64_t)UINT32_MAX ||
        b->n < SPACE_MIN_BOXES || b->ops->bytes(b->impl) < SPACE_MIN_BYTES)
        return;
    uint64_t *key = prox_workspace_scratch(&b->work, SLOT_SPACE_KEYS, 2 * n * 8);
    uint32_t *order = prox_workspace_scratch(&b->work, SLOT_SPACE_ORDER, 2 * n * 4);
    if (!key || !order)
        return;
    double twice_lo[3], half_scale[3];
    for (int k = 0; k < 3; k++) {
        double extent = b->hi[k] - b->lo[k];
        twice_lo[k] = 2.0 * b->lo[k];
        half_scale[k] =
            extent > 0 && isfinite(extent) ? 0.5 * (double)(1 << SPACE_BITS) / extent : 0.0;
    }
    centre_views views = centre_views_of(qs);
#pragma omp parallel for num_threads(b->threads) if (b->threads > 1) schedule(static) \
    firstprivate(views)
    for (int64_t q = 0; q < n; q++) {
        double c[3];
        twice_centre(b, qs, &views, q, c);
        key[q] = space_key(c, twice_lo, half_scale, b->dim);
        order[q] = (uint32_t)q;
    }
    bool in_tmp = prox_radix_sort64_either(key, order, key + n, order + n, n, b->threads);
    job->order = in_tmp ? order + n : order;
}

static void fill_stats(const prox_broad *b, const chunk_job *job, int64_t pairs,
                       prox_stats *stats)
{
    if (!stats)
        return;
    *stats = (prox_stats){0};
    stats->pairs = pairs;
    for (int k = 0; job->candidates && job->scratch && k < job->chunks.count; k++) {
        stats->candidates += job->candidates[k];
        stats->cells_visited += job->scratch[k].cells_visited;
    }
    stats->cells = b->ops->cells(b->impl);
    stats->bytes = held_bytes(b);
    stats->kept_bytes = kept_bytes(b);
    stats->method = b->ops->name;
}

/* The built boxes as a structure sees them. */
static prox_status run_queries(prox_broad *b, const query_set *qs, prox_sink sink,
                               prox_stats *stats)
{
    chunk_job job = {.broad = b, .queries = qs};
    prox_status st = PROX_OK;
    if (b->ops->prepare_queries) {
        broad_input in = input_of(b);
        if ((st = b->ops->prepare_queries(b->impl, &in))) {
            if (stats)
                *stats = (prox_stats){0};
            return st;
        }
    }
    st = job_init(&job, b, qs, sink);
    if (!st)
        space_order(&job, b, qs);
    int64_t pairs = 0;
    if (!st) {
        int threads = job.chunks.count > 1 ? b->threads : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1)
        for (int k = 0; k < job.chunks.count; k++)
            run_chunk(&job, k);
        bool failed = false;
        for (int k = 0; k < job.chunks.count; k++)
            failed |= job.scratch[k].failed;
        st = failed ? prox_fail(PROX_ERR_NO_MEMORY, "out of memory for candidates")
                    : prox_chunks_deliver(&job.chunks, sink, qs->kind == QUERY_SELF ? b->n
                                                                                    : qs->count,
                                          qs->kind == QUERY_SELF, &pairs);
    }
    fill_stats(b, &job, pairs, stats);
    job_free(&job, b);
    return st;
}

/* ---- entry points ------------------------------------------------------ */

static prox_status check_ready(const prox_broad *b, prox_sink sink, prox_stats *stats)
{
    if (stats)
        *stats = (prox_stats){0};
    if (!b)
        return prox_fail(PROX_ERR_INVALID, "the broad-phase object is NULL");
    if (!b->built)
        return prox_fail(PROX_ERR_INVALID, "the broad-phase structure is not built "
                                           "(call prox_broad_build first)");
    return prox_sink_check(sink);
}

static prox_status check_box_queries(const prox_broad *b, const prox_boxes *q, const char *what)
{
    prox_status st = prox_boxes_check(q, what);
    if (!st && q->dim != b->dim)
        st = prox_fail(PROX_ERR_INVALID, "%s are %dD but the built boxes are %dD", what, q->dim,
                       b->dim);
    if (!st)
        st = prox_boxes_check_values(q, what, b->threads);
    return st;
}

static prox_status check_points(const prox_broad *b, const prox_points *p, const char *what)
{
    prox_status st = prox_points_check(p, what);
    if (!st && p->dim != b->dim)
        st = prox_fail(PROX_ERR_INVALID, "%s are %dD but the built boxes are %dD", what, p->dim,
                       b->dim);
    if (!st)
        st = prox_points_check_finite(p, what, b->threads);
    return st;
}

/* Self pairs of a structure that finds them itself (broad_ops.self_pairs). */
static prox_status run_self_pairs(prox_broad *b, prox_sink sink, prox_stats *stats)
{
    prox_chunks chunks;
    int count = prox_chunk_count(sink, b->threads, b->n);
    prox_status st = prox_chunks_init(&chunks, count, sink, &b->work);
    prox_stats found = {0};
    int64_t pairs = 0;
    if (!st) {
        chunks.threads = b->threads;
        broad_input in = input_of(b);
        st = b->ops->self_pairs(b->impl, &in, &chunks, &found);
        for (int k = 0; !st && k < chunks.count; k++)
            if (chunks.emitter[k].failed)
                st = prox_fail(PROX_ERR_NO_MEMORY, "out of memory for pairs");
        if (!st)
            st = prox_chunks_deliver(&chunks, sink, b->n, true, &pairs);
        prox_chunks_free(&chunks);
    }
    if (stats) {
        *stats = found;
        stats->pairs = pairs;
        stats->cells = b->ops->cells(b->impl);
        stats->bytes = held_bytes(b);
        stats->kept_bytes = kept_bytes(b);
        stats->method = b->ops->name;
    }
    return st;
}

prox_status prox_broad_pairs(prox_broad *b, prox_sink sink, prox_stats *stats)
{
    prox_status st = check_ready(b, sink, stats);
    if (st)
        return st;
    if (b->ops->self_pairs && (!b->ops->has_self_pairs || b->ops->has_self_pairs(b->impl)))
        return run_self_pairs(b, sink, stats);
    query_set qs = {.kind = QUERY_SELF, .count = b->n};
    return run_queries(b, &qs, sink, stats);
}

prox_status prox_broad_query_boxes(prox_broad *b, const prox_boxes *queries, prox_sink sink,
                                   prox_stats *stats)
{
    prox_status st = check_ready(b, sink, stats);
    if (!st)
        st = check_box_queries(b, queries, "queries");
    if (st)
        return st;
    query_set qs = {.kind = QUERY_BOXES, .boxes = queries, .count = queries->count};
    return run_queries(b, &qs, sink, stats);
}

prox_status prox_broad_query_segments(prox_broad *b, const prox_points *starts,
                                      const prox_points *ends, bool exact, prox_sink sink,
                                      prox_stats *stats)
{
    prox_status st = check_ready(b, sink, stats);
    if (!st)
        st = check_points(b, starts, "segment starts");
    if (!st)
        st = check_points(b, ends, "segment ends");
    if (!st && starts->count != ends->count)
        st = prox_fail(PROX_ERR_INVALID, "%lld segment starts but %lld ends",
                       (long long)starts->count, (long long)ends->count);
    if (st)
        return st;
    query_set qs = {.kind = QUERY_SEGMENTS, .starts = starts, .ends = ends, .exact = exact,
                    .count = starts->count};
    return run_queries(b, &qs, sink, stats);
}

prox_status prox_broad_query_swept(prox_broad *b, const prox_boxes *from, const prox_boxes *to,
                                   prox_sink sink, prox_stats *stats)
{
    prox_status st = check_ready(b, sink, stats);
    if (!st)
        st = check_box_queries(b, from, "swept boxes (from)");
    if (!st)
        st = check_box_queries(b, to, "swept boxes (to)");
    if (!st && from->count != to->count)
        st = prox_fail(PROX_ERR_INVALID, "%lld swept boxes 'from' but %lld 'to'",
                       (long long)from->count, (long long)to->count);
    if (st)
        return st;
    query_set qs = {.kind = QUERY_SWEPT, .boxes = from, .to = to, .count = from->count};
    return run_queries(b, &qs, sink, stats);
}

/* ---- scratch ----------------------------------------------------------- */

bool prox_scratch_reserve(broad_scratch *s, int64_t more)
{
    void *p = s->ids;
    if (!prox_grow(s->allocator, &p, &s->capacity, s->count + more, s->count,
                   sizeof(uint32_t))) {
        s->failed = true;
        return false;
    }
    s->ids = p;
    return true;
}

bool prox_scratch_reserve_run(broad_scratch *s)
{
    void *p = s->runs;
    if (!prox_grow(s->allocator, &p, &s->runs_capacity, s->nruns + 1, s->nruns,
                   sizeof(broad_run))) {
        s->failed = true;
        return false;
    }
    s->runs = p;
    return true;
}
