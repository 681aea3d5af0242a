/* linear_kdtree.c: the linear kd-tree of Poirrier 2009.
 *
 * Geometry (section 5.2): the root cell is the caller's (desc.root_lo/hi)
 * or the cube (square in 2D) at the boxes' lower corner whose side is their
 * largest extent: isotropic cells. Section 7.3 asks about per-axis scales:
 * on W3 stretched to 8 : 1 : 1/8 (200,000 spheres), the bounding box as the
 * root (per-axis scales, cells 64 : 8 : 1) made the sweep submit 58.5M
 * pairs, the cube 1.24M (docs/design.md). Each axis maps onto B bits,
 * q(a) = floor((a - a0) * 2^B / (a1 - a0)), clamped to [0, 2^B - 1].
 * B = 19 in 3D (57 levels), 29 in 2D (58 levels), so that a code and its
 * length fit one 64-bit key (linear_kdtree.h). The mapping is monotonic, so
 * boxes that overlap in doubles overlap in cells; boxes outside a given
 * root are clamped onto its border cells: correct, only less selective.
 * Cuts cycle through the axes from the highest (z, y, x in 3D), the order
 * of the bits of prox_morton3 (morton.h) read from the top.
 *
 * A box's cell (section 5.3) is the longest common prefix of the Morton
 * codes of its two quantized corners. At the depth limit a box covers one
 * integer cell and stays there: deeper cells do not exist, and nothing is
 * lost, since candidates are tested exactly.
 *
 * Splitting (section 4, kd_split.c): a box crossing the next cutting plane
 * of its cell is split there, once per axis at most (<= 8 sub-elements),
 * in the quantized integers so that the pieces partition the box's cells
 * exactly; a split is kept only if the pieces (after their own splits)
 * cost less than the cell it avoids, a record costing its cell's volume
 * plus desc.kdtree_split_cost times the root's volume per box (with cost 0,
 * Figure 7: the pieces' cells hold less volume). Pieces of one box lie in
 * disjoint cells.
 *
 * Records (key, box id) are made in slices in parallel (each where its
 * worst case would start, then moved down), sorted with
 * prox_radix_sort64, and swept (section 5.5): record j is a candidate of
 * record i < j while key j lies in the subtree of key i.
 *   kd-tree-1: every such pair is a candidate, repeats included (a pair of
 *     boxes split into pieces may meet in several cells); the exact test
 *     decides, and an overlapping pair is emitted once, at its reference
 *     point (below).
 *   kd-tree-2: the cheap filter first: the quantized boxes (kept per box)
 *     must overlap, and the pair must be at its reference point, so each
 *     pair of boxes becomes one candidate; then the exact test.
 * Reference point: p = the lower corner of the intersection of the two
 * quantized boxes. p lies in exactly one piece of each box, and the cells
 * of a box's pieces are disjoint, so exactly one record pair of the sweep
 * has p in the deeper cell (and so in both): that pair reports. No memory,
 * O(1) per pair.
 *
 * Queries of other boxes (gather) walk the implicit tree over the sorted
 * keys: binary searches split a subtree's range into its children's, and
 * only cells overlapping the query are visited. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/alloc.h"
#include "broad/broad.h"
#include "core/error.h"
#include "broad/kd_split.h"
#include "broad/linear_kdtree.h"
#include "core/radix_sort.h"
#include "simd/vec_u64.h"

#define BLOCK 4096      /* boxes per thread, at least, of the parallel record build */
#define SMALL_RANGE 8   /* a query takes a subtree this small whole */
#define PREFETCH 16     /* records ahead whose boxes the sweep prefetches */

/* Records (key, box id) with their arrays' capacities. */
typedef struct kd_records {
    uint64_t *key;
    uint32_t *id;
    int64_t key_capacity, id_capacity;
} kd_records;

typedef struct kdtree {
    prox_kd_geometry g;
    int variant;
    bool split;
    int64_t n, count, cells;
    int deepest;
    kd_records rec, tmp; /* the sorted records, and the sort's scratch */
    int64_t *part_count; /* records made by each thread's slice of the boxes */
    int64_t part_capacity;
    uint32_t *qbox; /* kd-tree-2: quantized lo[dim], hi[dim] per box */
    int64_t qbox_capacity;
    double records_s, sort_s; /* the last build's phases (prox_kdtree_info) */
} kdtree;

/* ---- geometry --------------------------------------------------------- */

static const char axis_name[] = "xyz";

/* Element splitting's cost of a record (kd_split.c), in deepest cells:
 * desc.kdtree_split_cost times the root cell's volume per box, at most
 * 2^58, so that the costs of a box's eight pieces add up in 64 bits. */
static uint64_t record_cost(const prox_kd_geometry *g, const broad_input *in)
{
    double cost = in->n > 0 ? in->desc->kdtree_split_cost * ldexp(1.0, g->depth) / (double)in->n
                            : 0.0;
    return cost < 0x1p58 ? (uint64_t)cost : (uint64_t)1 << 58;
}

static prox_status set_geometry(prox_kd_geometry *g, const broad_input *in)
{
    const prox_broad_desc *d = in->desc;
    g->dim = in->dim;
    g->bits = in->dim == 3 ? PROX_KD_BITS_3D : PROX_KD_BITS_2D;
    g->depth = g->dim * g->bits;
    g->max_q = ((uint32_t)1 << g->bits) - 1;
    g->max_qd = (double)g->max_q;
    bool given = false;
    double side = 0.0; /* the default root: a cube (square) over the boxes */
    for (int k = 0; k < g->dim; k++) {
        given = given || d->root_lo[k] != d->root_hi[k];
        side = in->hi[k] - in->lo[k] > side ? in->hi[k] - in->lo[k] : side;
    }
    for (int k = 0; k < 3; k++) {
        g->lo[k] = k < g->dim ? (given ? d->root_lo[k] : in->lo[k]) : 0.0;
        g->hi[k] = k < g->dim ? (given ? d->root_hi[k] : in->lo[k] + side) : 0.0;
        if (given && k < g->dim && !(g->lo[k] < g->hi[k] && isfinite(g->hi[k] - g->lo[k])))
            return prox_fail(PROX_ERR_INVALID,
                             "kdtree root cell along %c is %g .. %g: it needs root_lo < root_hi, "
                             "finite, with a finite extent (or root_lo == root_hi on every "
                             "axis for the boxes' bounding box)",
                             axis_name[k], g->lo[k], g->hi[k]);
        double extent = g->hi[k] - g->lo[k];
        g->scale[k] = extent > 0 ? ldexp(1.0, g->bits) / extent : 0.0;
    }
    g->record_cost = record_cost(g, in);
    return PROX_OK;
}

/* len % dim and len / dim with constant divisors (no division instruction). */
static inline int mod_dim(const prox_kd_geometry *g, int len)
{
    return g->dim == 3 ? len % 3 : len & 1;
}

static inline int div_dim(const prox_kd_geometry *g, int len)
{
    return g->dim == 3 ? len / 3 : len >> 1;
}

/* The axis cut below a cell of length len (z, y, x, z, ... in 3D). */
static inline int cut_axis(const prox_kd_geometry *g, int len)
{
    return g->dim - 1 - mod_dim(g, len);
}

/* Cuts along axis k among the first len. */
static inline int cuts_along(const prox_kd_geometry *g, int len, int k)
{
    return div_dim(g, len) + (mod_dim(g, len) > g->dim - 1 - k ? 1 : 0);
}

/* Is the quantized point p inside the cell of key? */
static inline bool point_in_cell(const prox_kd_geometry *g, const uint32_t p[3], uint64_t key)
{
    int free_bits = g->depth - prox_kd_key_length(key);
    return ((prox_kd_morton(g, p) ^ (key >> PROX_KD_LEN_BITS)) >> free_bits) == 0;
}

/* ---- build -------------------------------------------------------------- */

static bool reserve(const prox_allocator *al, void *ptr, int64_t *capacity, int64_t count,
                    size_t size)
{
    return prox_reserve(al, (void **)ptr, capacity, count, size);
}

/* Where slice p of `parts` of the n boxes begins: a multiple of 8, so
 * that prox_kd_records_of meets the same groups of boxes, and writes the
 * same records in the same order, for every thread count. */
static int64_t slice_begin(int64_t n, int p, int parts)
{
    return p == parts ? n : (n * p / parts) & ~(int64_t)7;
}

/* Where slice p writes its records: behind room for the worst case (2^dim
 * records a box) of the slices before, and their slack. */
static int64_t slice_records(const kdtree *t, int64_t n, int p, int parts)
{
    return (slice_begin(n, p, parts) << t->g.dim) + (int64_t)p * PROX_KD_RECORD_SLACK;
}

/* The records (key, box id) in box order. Each thread takes a slice of the
 * boxes and writes its records where the slice's worst case would start;
 * the slices then move down behind one another. On one thread nothing
 * moves. The order, and so the sort's result, is the same for every
 * thread count. kd-tree-2 also keeps the quantized boxes. */
static void make_records(kdtree *t, const broad_input *in, int parts)
{
    int64_t n = in->n;
    uint32_t *qbox = t->variant == 2 ? t->qbox : NULL;
#pragma omp parallel for num_threads(parts) if (parts > 1) schedule(static, 1)
    for (int p = 0; p < parts; p++) {
        int64_t at = slice_records(t, n, p, parts);
        t->part_count[p] = prox_kd_records_of(&t->g, in->box, slice_begin(n, p, parts),
                                              slice_begin(n, p + 1, parts), t->split,
                                              t->rec.key + at, t->rec.id + at, qbox);
    }
    t->count = 0;
    for (int p = 0; p < parts; p++) {
        int64_t from = slice_records(t, n, p, parts), count = t->part_count[p];
        if (from != t->count) { /* from > count: moving down, overlap allowed */
            memmove(t->rec.key + t->count, t->rec.key + from, (size_t)count * sizeof(uint64_t));
            memmove(t->rec.id + t->count, t->rec.id + from, (size_t)count * sizeof(uint32_t));
        }
        t->count += count;
    }
}

/* Distinct cells and the deepest code of the sorted records. */
static void summarise(kdtree *t, int threads)
{
    const uint64_t *key = t->rec.key;
    int64_t cells = 0;
    int deepest = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1 && t->count > 65536) \
    schedule(static) reduction(+ : cells) reduction(max : deepest)
    for (int64_t r = 0; r < t->count; r++) {
        cells += r == 0 || key[r] != key[r - 1];
        int len = prox_kd_key_length(key[r]);
        deepest = len > deepest ? len : deepest;
    }
    t->cells = cells;
    t->deepest = deepest;
}

/* The records and the sort's scratch trade places. */
static void swap_records(kdtree *t)
{
    kd_records sorted = t->tmp;
    t->tmp = t->rec;
    t->rec = sorted;
}

static prox_status allocate(kdtree *t, const broad_input *in, int parts)
{
    const prox_allocator *al = in->allocator;
    int64_t most = slice_records(t, in->n, parts, parts);
    if (t->rec.key_capacity < most && t->tmp.key_capacity >= most)
        swap_records(t); /* the last sort left the big arrays as scratch */
    bool ok = reserve(al, &t->part_count, &t->part_capacity, parts, sizeof(int64_t)) &&
              reserve(al, &t->rec.key, &t->rec.key_capacity, most, sizeof(uint64_t)) &&
              reserve(al, &t->rec.id, &t->rec.id_capacity, most, sizeof(uint32_t));
    if (ok && t->variant == 2)
        ok = reserve(al, &t->qbox, &t->qbox_capacity, 2 * t->g.dim * in->n, sizeof(uint32_t));
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for the kd-tree of %lld boxes",
                          (long long)in->n);
}

/* The sort's scratch, for the records there are. */
static prox_status allocate_scratch(kdtree *t, const broad_input *in)
{
    const prox_allocator *al = in->allocator;
    bool ok = reserve(al, &t->tmp.key, &t->tmp.key_capacity, t->count, sizeof(uint64_t)) &&
              reserve(al, &t->tmp.id, &t->tmp.id_capacity, t->count, sizeof(uint32_t));
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %lld kd-tree records",
                          (long long)t->count);
}

static prox_status kd_build(void **impl, const broad_input *in)
{
    kdtree *t = *impl;
    if (!t) {
        t = prox_alloc_array(in->allocator, 1, sizeof *t);
        if (!t)
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for a kd-tree");
        *t = (kdtree){0};
        *impl = t;
    }
    t->count = t->cells = t->n = 0;
    t->variant = in->desc->kdtree_variant;
    t->split = in->desc->kdtree_split;
    if (t->variant != 1 && t->variant != 2)
        return prox_fail(PROX_ERR_INVALID, "kdtree_variant is %d; use 1 or 2", t->variant);
    prox_status st = set_geometry(&t->g, in);
    int parts = in->threads > 1 && in->n >= 2 * BLOCK ? in->threads : 1;
    if (!st)
        st = allocate(t, in, parts);
    if (st)
        return st;
    double start = omp_get_wtime();
    make_records(t, in, parts);
    double made = omp_get_wtime();
    st = allocate_scratch(t, in);
    if (st) {
        t->count = 0;
        return st;
    }
    if (prox_radix_sort64_either(t->rec.key, t->rec.id, t->tmp.key, t->tmp.id, t->count,
                                 in->threads))
        swap_records(t);
    t->records_s = made - start;
    t->sort_s = omp_get_wtime() - made;
    summarise(t, in->threads);
    t->n = in->n;
    return PROX_OK;
}

static void kd_destroy(void *impl, const prox_allocator *al)
{
    kdtree *t = impl;
    if (!t)
        return;
    prox_free(al, t->rec.key);
    prox_free(al, t->tmp.key);
    prox_free(al, t->rec.id);
    prox_free(al, t->tmp.id);
    prox_free(al, t->part_count);
    prox_free(al, t->qbox);
    prox_free(al, t);
}

static int64_t kd_bytes(const void *impl)
{
    const kdtree *t = impl;
    if (!t)
        return 0;
    return (int64_t)sizeof *t + (t->rec.key_capacity + t->tmp.key_capacity) * 8 +
           (t->rec.id_capacity + t->tmp.id_capacity) * 4 + t->part_capacity * 8 +
           t->qbox_capacity * 4;
}

static int64_t kd_cells(const void *impl)
{
    const kdtree *t = impl;
    return t ? t->cells : 0;
}

/* ---- the sweep (section 5.5) -------------------------------------------- */

static inline void emit_ordered(prox_emitter *e, uint32_t a, uint32_t b)
{
    if (a < b)
        prox_emit(e, a, b);
    else
        prox_emit(e, b, a);
}

/* kd-tree-1: every record pair of the sweep is tested; an overlapping pair
 * reports at its reference point (recomputed: no per-box memory). */
static int64_t sweep_raw(const kdtree *t, const prox_aabb *box, int64_t begin, int64_t end,
                         prox_emitter *e)
{
    const prox_kd_geometry *g = &t->g;
    const uint64_t *key = t->rec.key;
    int64_t candidates = 0, count = t->count;
    for (int64_t i = begin; i < end && !e->stop; i++) {
        uint64_t last = prox_kd_subtree_last(key[i], g->depth);
        uint32_t a = t->rec.id[i];
        const prox_aabb *ba = &box[a];
        if (i + PREFETCH < count) /* boxes are in input order, records in space order */
            __builtin_prefetch(&box[t->rec.id[i + PREFETCH]]);
        for (int64_t j = i + 1; j < count && key[j] <= last; j++) {
            uint32_t b = t->rec.id[j];
            candidates++;
            if (!prox_aabb_overlap(ba, &box[b]) || a == b)
                continue;
            uint32_t p[3];
            for (int k = 0; k < 3; k++) {
                uint32_t qa = k < g->dim ? prox_kd_quantize(g, k, ba->lo[k]) : 0;
                uint32_t qb = k < g->dim ? prox_kd_quantize(g, k, box[b].lo[k]) : 0;
                p[k] = qa > qb ? qa : qb;
            }
            if (point_in_cell(g, p, key[j]))
                emit_ordered(e, a, b);
        }
    }
    return candidates;
}

/* The exact tests of kd-tree-2's candidates, a batch at a time: a
 * candidate's two boxes are prefetched when it is found and tested once the
 * batch is full, by when they have arrived. Prefetching every record's box
 * instead would fetch four times as many (W3: 6.0M records, 0.76M
 * candidates of two boxes each) and slow the sweep. A candidate whose
 * quantized boxes overlap by a whole quantum on every axis needs no test
 * (`sure`, below). Candidate order is kept, and a callback that stops is
 * called no more. */
#define EXACT_BATCH 32

typedef struct exact_batch {
    uint32_t a[EXACT_BATCH], b[EXACT_BATCH];
    bool sure[EXACT_BATCH];
    int count;
} exact_batch;

static void test_batch(const prox_aabb *box, exact_batch *x, prox_emitter *e)
{
    for (int k = 0; k < x->count && !e->stop; k++)
        if (x->sure[k] || prox_aabb_overlap(&box[x->a[k]], &box[x->b[k]]))
            emit_ordered(e, x->a[k], x->b[k]);
    x->count = 0;
}

static inline void add_candidate(const prox_aabb *box, exact_batch *x, uint32_t a, uint32_t b,
                                 bool sure, prox_emitter *e)
{
    if (!sure) {
        __builtin_prefetch(&box[a]);
        __builtin_prefetch(&box[b]);
    }
    x->a[x->count] = a;
    x->b[x->count] = b;
    x->sure[x->count++] = sure;
    if (x->count == EXACT_BATCH)
        test_batch(box, x, e);
}

/* Do two boxes surely overlap, from their quantized boxes alone? The
 * quantization is monotonic (a <= b gives q(a) <= q(b)), so qa.lo <
 * qb.hi gives a.lo < b.hi: strict on every axis, the closed boxes
 * overlap. W3 1M: all but a few of the 0.76M candidates, whose boxes then
 * stay unread. */
static inline bool surely_overlap(const uint32_t *qa, const uint32_t *qb, int dim)
{
    bool sure = true;
    for (int k = 0; k < dim; k++)
        sure &= (qa[k] < qb[dim + k]) & (qb[k] < qa[dim + k]);
    return sure;
}

/* kd-tree-2: the quantized boxes filter and pick the one record pair of
 * each pair of boxes; only those are tested exactly. dim is a constant at
 * each call (sweep_unique below): the axis loops unroll and the pair's
 * quantized bounds stay in registers. */
static inline int64_t sweep_unique_in(const kdtree *t, const prox_aabb *box, int64_t begin,
                                      int64_t end, prox_emitter *e, int dim)
{
    const prox_kd_geometry *g = &t->g;
    const uint64_t *key = t->rec.key;
    int64_t candidates = 0, count = t->count;
    exact_batch batch = {.count = 0};
    for (int64_t i = begin; i < end && !e->stop; i++) {
        uint64_t last = prox_kd_subtree_last(key[i], g->depth);
        uint32_t a = t->rec.id[i];
        const uint32_t *qa = t->qbox + 2 * dim * (int64_t)a;
        if (i + PREFETCH < count) /* boxes are in input order, records in space order */
            __builtin_prefetch(t->qbox + 2 * dim * (int64_t)t->rec.id[i + PREFETCH]);
        for (int64_t j = i + 1; j < count && key[j] <= last; j++) {
            uint32_t b = t->rec.id[j];
            const uint32_t *qb = t->qbox + 2 * dim * (int64_t)b;
            bool overlap = true;
            uint32_t p[3] = {0, 0, 0};
            for (int k = 0; k < dim; k++) {
                overlap = overlap && qa[k] <= qb[dim + k] && qb[k] <= qa[dim + k];
                p[k] = qa[k] > qb[k] ? qa[k] : qb[k];
            }
            if (!overlap || a == b || !point_in_cell(g, p, key[j]))
                continue;
            candidates++;
            add_candidate(box, &batch, a, b, surely_overlap(qa, qb, dim), e);
        }
    }
    test_batch(box, &batch, e);
    return candidates;
}

/* kd-tree-2's sweep in two passes with no branch on the data in either:
 * the first lists each record's pairs, finding its subtree PQ_W keys at a
 * time (one vector compare; the keys ascend, so the subtree is a prefix);
 * the second filters the listed pairs PV_W at a time and hands on the
 * candidates, in order. Same candidates in the same order as
 * sweep_unique_in. Indices are 32-bit lanes: records and quantized boxes
 * below 2^31 (sweep_unique checks). */
#define SWEEP_BLOCK 256     /* records whose boxes the first pass prefetches, at most, per filter */
#define SWEEP_PAIRS 2048    /* pairs listed, at most, per filter */

typedef struct sweep_pairs {
    int32_t i[SWEEP_PAIRS + PV_W], j[SWEEP_PAIRS + PV_W];
} sweep_pairs;

/* The first of a box's 2 dim quantized words, lane by lane: id * 2 dim. */
static inline pv_i32 qbox_at(pv_i32 id, int dim)
{
    pv_i32 two = pv_add_i32(id, id), four = pv_add_i32(two, two);
    return dim == 3 ? pv_add_i32(four, two) : four;
}

/* Which of the PQ_W lanes from half * PQ_W on have p in the cell of their
 * record j's key: point_in_cell, lane by lane, for the lanes of `lanes`. */
static inline pv_mask in_cell_v(const kdtree *t, const pv_i32 p[3], pv_i32 j, pv_mask lanes,
                                int half, int dim)
{
    pq_mask live = lanes >> (half * PQ_W) & pq_live(PQ_W);
    if (!live)
        return 0;
    pq_u64 code = pq_set1(0);
    for (int x = 0; x < dim; x++)
        code = pq_or(code, pq_shl(pq_morton_spread(dim, pq_widen(p[x], half)), x));
    pq_u64 key = pq_gather_u64(t->rec.key, j, half, live);
    pq_u64 free_bits = pq_sub(pq_set1((uint64_t)t->g.depth), pq_and(key, pq_set1(PROX_KD_LEN_MASK)));
    pq_u64 differ = pq_shrv(pq_xor(code, pq_shr(key, PROX_KD_LEN_BITS)), free_bits);
    return (pv_mask)(pq_bits(pq_eq(differ, pq_set1(0))) & live) << (half * PQ_W);
}

/* The second pass over the `count` listed pairs: sweep_unique_in's filter
 * evaluated whole, without its short circuits, PV_W pairs at a time
 * (their ids and quantized boxes gathered, the reference point's code
 * spread in vectors of PQ_W); the candidates are compressed out in order
 * and handed to the exact tests. One pair at a time this pass took about
 * half of the sweep (docs/design.md). */
static inline int64_t filter_pairs(const kdtree *t, const prox_aabb *box, const sweep_pairs *sp,
                                   int count, exact_batch *batch, prox_emitter *e, int dim)
{
    uint32_t ca[SWEEP_PAIRS + PV_W], cb[SWEEP_PAIRS + PV_W], sure[SWEEP_PAIRS + PV_W];
    int found = 0;
    for (int k = 0; k < count; k += PV_W) {
        pv_mask live = pv_live(count - k);
        pv_i32 i = pv_load_n(sp->i + k, count - k), j = pv_load_n(sp->j + k, count - k);
        pv_i32 a = pq_gather_u32(t->rec.id, i, live), b = pq_gather_u32(t->rec.id, j, live);
        pv_i32 qa = qbox_at(a, dim), qb = qbox_at(b, dim);
        pv_mask overlap = live & ~pv_eq_i32(a, b), surely = overlap;
        pv_i32 p[3];
        for (int x = 0; x < dim; x++) {
            pv_i32 lo = pv_set1_i32(x), hi = pv_set1_i32(dim + x);
            pv_i32 alo = pq_gather_u32(t->qbox, pv_add_i32(qa, lo), live);
            pv_i32 ahi = pq_gather_u32(t->qbox, pv_add_i32(qa, hi), live);
            pv_i32 blo = pq_gather_u32(t->qbox, pv_add_i32(qb, lo), live);
            pv_i32 bhi = pq_gather_u32(t->qbox, pv_add_i32(qb, hi), live);
            overlap &= pv_le_u32(alo, bhi) & pv_le_u32(blo, ahi);
            surely &= ~pv_le_u32(bhi, alo) & ~pv_le_u32(ahi, blo); /* alo < bhi, blo < ahi */
            p[x] = pv_max_u32(alo, blo);
        }
        pv_mask in = 0;
        for (int half = 0; half < PQ_HALVES; half++)
            in |= in_cell_v(t, p, j, overlap, half, dim);
        pv_compress(ca + found, a, in);
        pv_compress(cb + found, b, in);
        pv_compress(sure + found, pq_lanes_u32(surely), in);
        found += prox_lanes_popcount(in);
    }
    for (int k = 0; k < found && !e->stop; k++)
        add_candidate(box, batch, ca[k], cb[k], sure[k] != 0, e);
    return found;
}

static inline int64_t sweep_unique_blocks(const kdtree *t, const prox_aabb *box, int64_t begin,
                                          int64_t end, prox_emitter *e, int dim)
{
    const uint64_t *key = t->rec.key;
    int64_t candidates = 0, count = t->count;
    exact_batch batch = {.count = 0};
    sweep_pairs sp;
    int listed = 0;
    for (int64_t first = begin; first < end && !e->stop; first += SWEEP_BLOCK) {
        int64_t stop = first + SWEEP_BLOCK < end ? first + SWEEP_BLOCK : end;
        for (int64_t i = first; i < stop; i++) {
            if (i + 8 < count)
                __builtin_prefetch(t->qbox + 2 * dim * (int64_t)t->rec.id[i + 8]);
            pq_u64 last = pq_set1(prox_kd_subtree_last(key[i], t->g.depth));
            pv_i32 here = pv_set1_i32((int32_t)i);
            /* the subtree, PQ_W keys at a time */
            for (int64_t j = i + 1; j < count; j += PQ_W) {
                pq_mask live = pq_live(count - j);
                pq_mask in = pq_bits(pq_le_u64(pq_load_n(key + j, count - j), last)) & live;
                pq_store_first_u32(sp.i + listed, here);
                pq_store_iota_u32(sp.j + listed, j);
                listed += prox_lanes_popcount(in);
                if (listed > SWEEP_PAIRS - PQ_W) {
                    candidates += filter_pairs(t, box, &sp, listed, &batch, e, dim);
                    listed = 0;
                }
                if (in != pq_live(PQ_W))
                    break;
            }
        }
        candidates += filter_pairs(t, box, &sp, listed, &batch, e, dim);
        listed = 0;
    }
    test_batch(box, &batch, e);
    return candidates;
}

static int64_t sweep_unique(const kdtree *t, const prox_aabb *box, int64_t begin, int64_t end,
                            prox_emitter *e)
{
    if (PQ_SWEEP && t->count < INT32_MAX && 2 * t->g.dim * t->n < INT32_MAX)
        return t->g.dim == 3 ? sweep_unique_blocks(t, box, begin, end, e, 3)
                             : sweep_unique_blocks(t, box, begin, end, e, 2);
    return t->g.dim == 3 ? sweep_unique_in(t, box, begin, end, e, 3)
                         : sweep_unique_in(t, box, begin, end, e, 2);
}

static prox_status kd_self_pairs(const void *impl, const broad_input *in, prox_chunks *chunks,
                                 prox_stats *stats)
{
    const kdtree *t = impl;
    int count = chunks->count;
    int64_t *candidates = prox_alloc_array(in->allocator, count, sizeof *candidates);
    if (!candidates)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %d sweep chunks", count);
    int threads = count > 1 ? in->threads : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1)
    for (int k = 0; k < count; k++) {
        int64_t begin = t->count * k / count, end = t->count * (k + 1) / count;
        candidates[k] = t->variant == 2
                            ? sweep_unique(t, in->box, begin, end, &chunks->emitter[k])
                            : sweep_raw(t, in->box, begin, end, &chunks->emitter[k]);
    }
    for (int k = 0; k < count; k++)
        stats->candidates += candidates[k];
    stats->cells_visited += t->count;
    prox_free(in->allocator, candidates);
    return PROX_OK;
}

int64_t prox_kd_count_sweep_pairs(const uint64_t *keys, int64_t n, int depth)
{
    /* open cells, nested: each strictly deeper than the one below it */
    struct open_cell {
        uint64_t key, last;
        int64_t records;
    } stack[65];
    int top = 0;
    int64_t open = 0, pairs = 0;
    for (int64_t j = 0; j < n; j++) {
        while (top > 0 && keys[j] > stack[top - 1].last)
            open -= stack[--top].records;
        pairs += open;
        if (top > 0 && stack[top - 1].key == keys[j])
            stack[top - 1].records++;
        else
            stack[top++] = (struct open_cell){keys[j], prox_kd_subtree_last(keys[j], depth), 1};
        open++;
    }
    return pairs;
}

/* ---- queries of other boxes --------------------------------------------- */

typedef struct kd_query {
    const kdtree *t;
    uint32_t lo[3], hi[3];
    broad_scratch *s;
} kd_query;

/* First index in [begin, end) whose key is >= x. */
static int64_t lower_bound(const uint64_t *key, int64_t begin, int64_t end, uint64_t x)
{
    while (begin < end) {
        int64_t mid = begin + (end - begin) / 2;
        if (key[mid] < x)
            begin = mid + 1;
        else
            end = mid;
    }
    return begin;
}

static void push_ids(broad_scratch *s, const uint32_t *id, int64_t begin, int64_t end)
{
    if (begin >= end || !prox_scratch_reserve(s, end - begin))
        return;
    memcpy(s->ids + s->count, id + begin, (size_t)(end - begin) * sizeof(uint32_t));
    s->count += end - begin;
}

static bool cell_inside_query(const kd_query *q, const uint32_t c0[3], const uint32_t c1[3])
{
    for (int k = 0; k < 3; k++)
        if (c0[k] < q->lo[k] || c1[k] > q->hi[k])
            return false;
    return true;
}

/* Records [begin, end) are the subtree of the cell (path, len) spanning
 * c0 .. c1, which overlaps the query. */
static void visit(const kd_query *q, int64_t begin, int64_t end, uint64_t path, int len,
                  uint32_t c0[3], uint32_t c1[3])
{
    const kdtree *t = q->t;
    const prox_kd_geometry *g = &t->g;
    if (end - begin <= SMALL_RANGE || cell_inside_query(q, c0, c1)) {
        push_ids(q->s, t->rec.id, begin, end);
        return;
    }
    q->s->cells_visited++;
    uint64_t here = path << PROX_KD_LEN_BITS | (uint64_t)len;
    int64_t below = begin;
    while (below < end && t->rec.key[below] == here)
        below++;
    push_ids(q->s, t->rec.id, begin, below);
    if (below == end || len == g->depth)
        return;
    int a = cut_axis(g, len);
    uint32_t mid = c0[a] + ((uint32_t)1 << (g->bits - cuts_along(g, len, a) - 1));
    uint64_t upper = path | (uint64_t)1 << (g->depth - len - 1);
    int64_t split = lower_bound(t->rec.key, below, end, upper << PROX_KD_LEN_BITS);
    if (q->lo[a] < mid && below < split) {
        uint32_t keep = c1[a];
        c1[a] = mid - 1;
        visit(q, below, split, path, len + 1, c0, c1);
        c1[a] = keep;
    }
    if (q->hi[a] >= mid && split < end) {
        uint32_t keep = c0[a];
        c0[a] = mid;
        visit(q, split, end, upper, len + 1, c0, c1);
        c0[a] = keep;
    }
}

static void kd_gather(const void *impl, const prox_aabb *box, broad_scratch *s)
{
    const kdtree *t = impl;
    if (t->count == 0)
        return;
    kd_query q = {.t = t, .s = s};
    prox_kd_quantize_box(&t->g, box, q.lo, q.hi);
    uint32_t c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0};
    for (int k = 0; k < t->g.dim; k++)
        c1[k] = t->g.max_q;
    visit(&q, 0, t->count, 0, 0, c0, c1);
}

/* ---- diagnostics -------------------------------------------------------- */

prox_status prox_broad_kdtree_info(const prox_broad *broad, prox_kdtree_info *info)
{
    if (!info)
        return prox_fail(PROX_ERR_INVALID, "info is NULL");
    *info = (prox_kdtree_info){0};
    const kdtree *t = prox_broad_impl(broad, &prox_broad_kdtree_ops);
    if (!t)
        return prox_fail(PROX_ERR_INVALID, "not a built kdtree broad phase");
    info->elements = t->n;
    info->sub_elements = t->count;
    info->cells = t->cells;
    info->depth_limit = t->g.depth;
    info->deepest = t->deepest;
    info->records_s = t->records_s;
    info->sort_s = t->sort_s;
    double root = 1.0;
    for (int k = 0; k < 3; k++) {
        info->root_lo[k] = t->g.lo[k];
        info->root_hi[k] = t->g.hi[k];
        if (k < t->g.dim)
            root *= t->g.hi[k] - t->g.lo[k];
    }
    double volume = 0.0;
    for (int64_t r = 0; r < t->count; r++)
        volume += ldexp(root, -prox_kd_key_length(t->rec.key[r]));
    info->cell_volume = volume;
    info->sweep_pairs = prox_kd_count_sweep_pairs(t->rec.key, t->count, t->g.depth);
    return PROX_OK;
}

const broad_ops prox_broad_kdtree_ops = {
    .name = "kdtree",
    .build = kd_build,
    .destroy = kd_destroy,
    .gather = kd_gather,
    .self_pairs = kd_self_pairs,
    .bytes = kd_bytes,
    .cells = kd_cells,
};
