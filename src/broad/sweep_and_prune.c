/* sweep_and_prune.c: sweep and prune (sort and sweep) over one axis, and its
 * incremental variant, which keeps the sorted list between frames and
 * repairs it with an insertion sort (temporal coherence, Poirrier 2009, section
 * 7.1).
 *
 * Axis: the one along which the box centres spread most (variance, over an
 * evenly strided sample of at most 65536 boxes; ties go to the lower axis).
 * The sweep visits, for each box, the boxes whose min lies in its interval
 * along that axis, so its cost is the number of pairs overlapping along the
 * axis alone: the axis of largest spread makes that number smallest for
 * boxes of similar sizes. Chosen at each build; updates keep it.
 *
 * List: boxes sorted by (min along the axis, id) with the project's radix
 * sort, on an order-preserving 64-bit image of the double min (key_of).
 * Stored in sweep order: the keys (ascending, followed by PAD sentinels
 * that end every sweep), the ids, the max along the axis, the bounds on
 * the other axes (a 32-byte record: the sweep reads memory near the box it
 * sweeps from, never the caller's order), and each of those four bounds
 * quantised to a byte by a monotonic map of the data's extent (quantize).
 *
 * Sweep from box p: the boxes after it whose key is <= the key of p's max
 * overlap p along the axis, exactly (min_q >= min_p by the order, min_q <=
 * max_p by the keys). They are taken BLOCK at a time: four vector compares
 * of the quantised bounds reject most of them (a monotonic map keeps
 * lo_q <= hi_p as byte(lo_q) <= byte(hi_p), so it never rejects an
 * overlapping pair), and the survivors get the comparisons of
 * prox_aabb_overlap on the other axes. Each unordered pair is met once:
 * from the earlier box in the order. Positions are split into chunks for
 * threads; the front delivers the chunks sorted, so the output is the
 * same for every thread count.
 *
 * Queries (gather): the boxes overlapping a query along the axis have
 * min <= q.hi (a prefix of the list) and min >= q.lo - E, E the largest
 * extent along the axis (a binary search, rounded outwards); that range is
 * filtered like the sweep and tested exactly.
 *
 * Update: new keys in the old order (removed ids dropped), an insertion
 * sort by (key, id) with a budget of UPDATE_SHIFTS_PER_BOX * n shifts, the
 * added boxes radix-sorted and merged in. The result is the order a fresh
 * build gives. It rebuilds instead when the budget runs out (the boxes
 * moved too far past each other), when more boxes are added than kept, or
 * when nothing was built. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "broad/broad.h"
#include "core/error.h"
#include "core/radix_sort.h"
#include "simd/vec_u8.h"

/* Boxes per filter step: 64 bytes, one vector. */
#define BLOCK 64
/* Sentinels after the last box (keys above every key): two blocks. */
#define PAD (2 * BLOCK)
#define AXIS_SAMPLE 65536
/* Boxes ahead whose reads are started early (arrange, the sweep). */
#define PREFETCH 16
#define GATHER_AHEAD 32
/* Update: insertion-sort shifts allowed per box before a rebuild is cheaper.
 * On W3 at 1M boxes (bench/sap_frames.c prints it) the update beats a
 * rebuild at 1 to 10 shifts per box and costs about as much at 30; past
 * the budget the re-keying and the shifts done (at most 16 per box) are
 * wasted. */
#define UPDATE_SHIFTS_PER_BOX 16

/* A box's bounds on the axes other than the sweep axis: lo, hi of
 * other[0], lo, hi of other[1] (0 for the absent axis of 2D). 32 bytes,
 * aligned: one cache line per exact test. */
typedef struct side {
    double lo0, hi0, lo1, hi1;
} side;

typedef struct sap {
    int dim, axis, other[2]; /* other[1] = -1 in 2D */
    int64_t n;
    uint64_t *keys, *tmp_keys; /* n + PAD: keys in sweep order; scratch */
    uint32_t *ids, *tmp_ids;   /* n: box ids in sweep order; scratch */
    double *hi;                /* n: the boxes' max along the axis, in sweep order */
    side *sides;               /* n: their bounds on the other axes, in sweep order */
    void *sides_block;         /* sides, before alignment to a cache line */
    /* n + PAD each: quantised lo, hi of other[0], lo, hi of other[1] */
    uint8_t *bytes[4];
    void *bytes_block[4];      /* bytes, before alignment */
    int64_t keys_capacity, tmp_keys_capacity, ids_capacity, tmp_ids_capacity;
    int64_t hi_capacity, sides_capacity, bytes_capacity[4];
    double origin[2], scale[2]; /* quantize() of other[0], other[1] */
    double max_extent;          /* largest hi - lo along the axis (rounded) */
} sap;

/* ---- keys and bytes ------------------------------------------------------ */

/* An integer image of a double that sorts as the double does (-0 and +0
 * equal): flip every bit of a negative, the sign bit of a positive. */
static inline uint64_t key_of(double x)
{
    x += 0.0; /* -0 becomes +0 */
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u >> 63 ? ~u : u | (1ULL << 63);
}

/* (key, id) order: the order of a stable sort by key of ids in order. */
static inline bool before(uint64_t ka, uint32_t ia, uint64_t kb, uint32_t ib)
{
    return ka < kb || (ka == kb && ia < ib);
}

/* A byte for x, monotonic in x (rounding and clamping keep the order), so
 * that a <= b implies quantize(a) <= quantize(b): a filter on bytes never
 * rejects a pair the exact test accepts. */
static inline uint8_t quantize(double x, double origin, double scale)
{
    if (scale == 0.0)
        return 0;
    double u = (x - origin) * scale;
    return u > 0.0 ? (u < 255.0 ? (uint8_t)u : 255) : 0;
}

static void set_quantization(sap *s, const broad_input *in)
{
    for (int c = 0; c < 2; c++) {
        int k = s->other[c];
        double extent = k < 0 ? 0.0 : in->hi[k] - in->lo[k];
        s->origin[c] = k < 0 ? 0.0 : in->lo[k];
        s->scale[c] = extent > 0.0 ? fmin(256.0 / extent, 1e300) : 0.0;
    }
}

/* out: lo, hi of other[0], lo, hi of other[1] (0 for an absent axis). */
static inline void quantize_box(const sap *s, const prox_aabb *b, uint8_t out[4])
{
    for (int c = 0; c < 2; c++) {
        int k = s->other[c];
        out[2 * c] = k < 0 ? 0 : quantize(b->lo[k], s->origin[c], s->scale[c]);
        out[2 * c + 1] = k < 0 ? 0 : quantize(b->hi[k], s->origin[c], s->scale[c]);
    }
}

static inline side side_of(const sap *s, const prox_aabb *b)
{
    int k0 = s->other[0], k1 = s->other[1];
    return (side){b->lo[k0], b->hi[k0], k1 < 0 ? 0.0 : b->lo[k1], k1 < 0 ? 0.0 : b->hi[k1]};
}

/* The exact test of prox_aabb_overlap on the other axes, the same
 * comparisons; along the axis the keys decide (exact images of the
 * doubles). */
static inline bool sides_overlap(const side *a, const side *b)
{
    return a->lo0 <= b->hi0 && b->lo0 <= a->hi0 && a->lo1 <= b->hi1 && b->lo1 <= a->hi1;
}

/* ---- the axis ------------------------------------------------------------ */

/* The axis of largest variance of the box centres, over a strided sample. */
static int widest_axis(const broad_input *in)
{
    int64_t stride = in->n > AXIS_SAMPLE ? in->n / AXIS_SAMPLE : 1;
    int64_t count = in->n > 0 ? (in->n - 1) / stride + 1 : 0;
    if (count == 0)
        return 0;
    double mean[3] = {0, 0, 0}, var[3] = {0, 0, 0}, inv = 1.0 / (double)count;
    for (int64_t i = 0; i < in->n; i += stride)
        for (int k = 0; k < in->dim; k++) /* halves first: no overflow */
            mean[k] += (0.5 * in->box[i].lo[k] + 0.5 * in->box[i].hi[k]) * inv;
    for (int64_t i = 0; i < in->n; i += stride)
        for (int k = 0; k < in->dim; k++) {
            double d = 0.5 * in->box[i].lo[k] + 0.5 * in->box[i].hi[k] - mean[k];
            var[k] += d * inv * d;
        }
    int best = 0;
    for (int k = 1; k < in->dim; k++)
        best = var[k] > var[best] ? k : best;
    return best;
}

/* ---- memory -------------------------------------------------------------- */

static bool reserve(const prox_allocator *al, void *ptr, int64_t *capacity, int64_t count,
                    size_t size)
{
    return prox_reserve(al, (void **)ptr, capacity, count, size);
}

/* count elements at a 64-byte boundary (aligned loads, no line split):
 * *block is what was allocated, *aligned where the elements start. */
static bool reserve_aligned(const prox_allocator *al, void **block, void *aligned,
                            int64_t *capacity, int64_t count, size_t size)
{
    int64_t extra = (int64_t)((64 + size - 1) / size);
    if (!prox_reserve(al, block, capacity, count + extra, size))
        return false;
    *(void **)aligned = (char *)*block + (-(uintptr_t)*block & 63);
    return true;
}

/* Room for n boxes; keys and ids keep their first `keep` entries. */
static prox_status allocate(sap *s, const broad_input *in, int64_t keep)
{
    const prox_allocator *al = in->allocator;
    int64_t n = in->n;
    bool ok = (keep ? prox_grow(al, (void **)&s->keys, &s->keys_capacity, n + PAD, keep,
                                sizeof(uint64_t)) &&
                          prox_grow(al, (void **)&s->ids, &s->ids_capacity, n, keep,
                                    sizeof(uint32_t))
                    : reserve(al, &s->keys, &s->keys_capacity, n + PAD, sizeof(uint64_t)) &&
                          reserve(al, &s->ids, &s->ids_capacity, n, sizeof(uint32_t))) &&
              reserve(al, &s->tmp_keys, &s->tmp_keys_capacity, n + PAD, sizeof(uint64_t)) &&
              reserve(al, &s->tmp_ids, &s->tmp_ids_capacity, n, sizeof(uint32_t)) &&
              reserve(al, &s->hi, &s->hi_capacity, n, sizeof(double)) &&
              reserve_aligned(al, &s->sides_block, &s->sides, &s->sides_capacity, n,
                              sizeof(side));
    for (int c = 0; c < 4; c++)
        ok = ok && reserve_aligned(al, &s->bytes_block[c], &s->bytes[c], &s->bytes_capacity[c],
                                   n + PAD, 1);
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for sweep and prune over %lld boxes",
                          (long long)n);
}

static void sap_destroy(void *impl, const prox_allocator *al)
{
    sap *s = impl;
    if (!s)
        return;
    prox_free(al, s->keys);
    prox_free(al, s->tmp_keys);
    prox_free(al, s->ids);
    prox_free(al, s->tmp_ids);
    prox_free(al, s->hi);
    prox_free(al, s->sides_block);
    for (int c = 0; c < 4; c++)
        prox_free(al, s->bytes_block[c]);
    prox_free(al, s);
}

/* ---- build --------------------------------------------------------------- */

/* The sorted list's companions: boxes and bytes in sweep order, the
 * sentinels, the largest extent along the axis. keys/ids are sorted. */
static void arrange(sap *s, const broad_input *in)
{
    int64_t n = in->n;
    s->n = n;
    s->dim = in->dim;
    set_quantization(s, in);
    double extent = 0.0;
    int axis = s->axis;
#pragma omp parallel for num_threads(in->threads) if (in->threads > 1 && n > 16384) \
    schedule(static) reduction(max : extent)
    for (int64_t p = 0; p < n; p++) {
        if (p + GATHER_AHEAD < n) { /* the reads are random: start them early */
            const char *ahead = (const char *)&in->box[s->ids[p + GATHER_AHEAD]];
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + sizeof(prox_aabb) - 1);
        }
        const prox_aabb *b = &in->box[s->ids[p]];
        s->hi[p] = b->hi[axis];
        s->sides[p] = side_of(s, b);
        uint8_t q[4];
        quantize_box(s, b, q);
        for (int c = 0; c < 4; c++)
            s->bytes[c][p] = q[c];
        double e = b->hi[axis] - b->lo[axis];
        extent = e > extent ? e : extent;
    }
    s->max_extent = extent;
    for (int64_t p = n; p < n + PAD; p++) {
        s->keys[p] = UINT64_MAX; /* above the key of any finite double */
        for (int c = 0; c < 4; c++)
            s->bytes[c][p] = 0;
    }
}

/* keys[first + i], ids[first + i] for boxes first .. end - 1, in id order. */
static void fill_keys(sap *s, const broad_input *in, int64_t first, int64_t end)
{
    int axis = s->axis;
#pragma omp parallel for num_threads(in->threads) \
    if (in->threads > 1 && end - first > 16384) schedule(static)
    for (int64_t i = first; i < end; i++) {
        s->keys[i] = key_of(in->box[i].lo[axis]);
        s->ids[i] = (uint32_t)i;
    }
}

static prox_status sap_build(void **impl, const broad_input *in)
{
    sap *s = *impl;
    if (!s) {
        s = prox_alloc_array(in->allocator, 1, sizeof *s);
        if (!s)
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for sweep and prune");
        *s = (sap){0};
        *impl = s;
    }
    s->n = 0;
    prox_status st = allocate(s, in, 0);
    if (st)
        return st;
    s->axis = widest_axis(in);
    for (int k = 0, c = 0; k < 3; k++)
        if (k != s->axis)
            s->other[c++] = k < in->dim ? k : -1;
    fill_keys(s, in, 0, in->n);
    prox_radix_sort64(s->keys, s->ids, s->tmp_keys, s->tmp_ids, in->n, in->threads);
    arrange(s, in);
    return PROX_OK;
}

/* ---- the filter ---------------------------------------------------------- */

/* The quantised bounds of the box or query that the sweep compares with:
 * lo, hi of other[0], lo, hi of other[1]. */
static inline pb_bounds filter_of(const uint8_t b[4])
{
    return (pb_bounds){b[0], b[1], b[2], b[3]};
}

/* Bit j set: box q + j may overlap f on the other axes (its lo <= f's hi
 * and its hi >= f's lo, in bytes). */
static inline uint64_t block_hits(const sap *s, int64_t q, const pb_bounds *f)
{
    return pb_overlap64(s->bytes[0] + q, s->bytes[1] + q, s->bytes[2] + q, s->bytes[3] + q, *f);
}

/* How many of keys[q .. q + BLOCK) are <= kmax: a prefix, keys ascend,
 * so a binary search of six probes and a last one, each a select rather
 * than a branch. */
static inline int prefix_length(const uint64_t *keys, int64_t q, uint64_t kmax)
{
    const uint64_t *k = keys + q;
    int c = 0;
    for (int step = BLOCK / 2; step > 0; step /= 2)
        c += k[c + step - 1] <= kmax ? step : 0;
    return c + (k[c] <= kmax);
}

/* The first `count` boxes of a block, as a mask. */
static inline uint64_t first_boxes(int count)
{
    return count == BLOCK ? ~0ULL : (1ULL << count) - 1;
}

static inline int next_hit(uint64_t *hits)
{
    int j = __builtin_ctzll(*hits);
    *hits &= *hits - 1;
    return j;
}

/* ---- self pairs ---------------------------------------------------------- */

/* Boxes that passed the filter wait here for the exact test: their sides
 * are prefetched when found and tested when the sweep ends (or the buffer
 * fills), so that the memory latency overlaps the filtering. */
#define PENDING 256

typedef struct sweeper {
    const sap *s;
    prox_emitter *e;
    int64_t tested, visited;
    int64_t pending[PENDING];
    int count;
} sweeper;

/* The exact test of the pending boxes against box p; false once the
 * emitter stops. */
static bool test_pending(sweeper *w, int64_t p)
{
    const sap *s = w->s;
    const side *a = &s->sides[p];
    uint32_t id = s->ids[p];
    w->tested += w->count;
    for (int c = 0; c < w->count; c++) {
        int64_t r = w->pending[c];
        if (sides_overlap(a, &s->sides[r])) {
            uint32_t other = s->ids[r];
            prox_emit(w->e, id < other ? id : other, id < other ? other : id);
            if (w->e->stop)
                return false;
        }
    }
    w->count = 0;
    return true;
}

static inline bool add_hits(sweeper *w, int64_t p, int64_t q, uint64_t hits)
{
    while (hits) {
        int64_t r = q + next_hit(&hits);
        __builtin_prefetch(&w->s->sides[r]);
        w->pending[w->count++] = r;
        if (w->count == PENDING && !test_pending(w, p))
            return false;
    }
    return true;
}

/* Every pair (p, q > p) of the list that overlaps, emitted once. Blocks
 * start at multiples of BLOCK (aligned loads; the first block masks the
 * boxes up to p); two per step while both lie in p's interval. */
static void sweep_from(sweeper *w, int64_t p)
{
    const sap *s = w->s;
    const uint64_t *keys = s->keys;
    uint64_t kmax = key_of(s->hi[p]);
    uint8_t bytes[4] = {s->bytes[0][p], s->bytes[1][p], s->bytes[2][p], s->bytes[3][p]};
    pb_bounds f = filter_of(bytes);
    int64_t q = (p + 1) & ~(int64_t)(BLOCK - 1);
    uint64_t first = ~0ULL << (p + 1 - q);
    for (; keys[q + 2 * BLOCK - 1] <= kmax; q += 2 * BLOCK, first = ~0ULL) {
        uint64_t h0 = block_hits(s, q, &f) & first, h1 = block_hits(s, q + BLOCK, &f);
        if ((h0 | h1) && !(add_hits(w, p, q, h0) && add_hits(w, p, q + BLOCK, h1)))
            return;
    }
    if (keys[q + BLOCK - 1] <= kmax) {
        if (!add_hits(w, p, q, block_hits(s, q, &f) & first))
            return;
        q += BLOCK;
        first = ~0ULL;
    }
    int length = prefix_length(keys, q, kmax);
    if (!add_hits(w, p, q, block_hits(s, q, &f) & first & first_boxes(length)) ||
        !test_pending(w, p))
        return;
    w->visited += q + length - (p + 1);
    /* the next sweeps' windows reach past here */
    __builtin_prefetch(&s->sides[q + length + PREFETCH]);
}

static prox_status sap_self_pairs(const void *impl, const broad_input *in, prox_chunks *chunks,
                                  prox_stats *stats)
{
    const sap *s = impl;
    int count = chunks->count;
    int threads = count > 1 ? in->threads : 1;
    int64_t n = s->n, tested = 0, visited = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1) \
    reduction(+ : tested, visited)
    for (int k = 0; k < count; k++) {
        sweeper w = {.s = s, .e = &chunks->emitter[k], .count = 0};
        int64_t end = n * (k + 1) / count;
        for (int64_t p = n * k / count; p < end && !w.e->stop; p++)
            sweep_from(&w, p);
        tested += w.tested;
        visited += w.visited;
    }
    stats->candidates += tested;
    stats->cells_visited += visited;
    return PROX_OK;
}

/* ---- queries ------------------------------------------------------------- */

/* The first position whose key is >= key. */
static int64_t lower_bound(const uint64_t *keys, int64_t n, uint64_t key)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void sap_gather(const void *impl, const prox_aabb *q, broad_scratch *sc)
{
    const sap *s = impl;
    int axis = s->axis;
    /* A box reaching q.lo starts at or after q.lo - E; both roundings go
     * outwards, so that no box is left out. */
    double reach = nextafter(s->max_extent, INFINITY);
    double from = nextafter(q->lo[axis] - reach, -INFINITY);
    uint64_t kmax = key_of(q->hi[axis]);
    uint8_t bytes[4];
    quantize_box(s, q, bytes);
    pb_bounds f = filter_of(bytes);
    side qs = side_of(s, q);
    for (int64_t p = lower_bound(s->keys, s->n, key_of(from)); p < s->n; p += BLOCK) {
        int length = prefix_length(s->keys, p, kmax);
        sc->cells_visited += length;
        uint64_t hits = block_hits(s, p, &f) & first_boxes(length);
        while (hits) { /* min <= q.hi by the keys; the rest of the exact test */
            int64_t r = p + next_hit(&hits);
            if (q->lo[axis] <= s->hi[r] && sides_overlap(&qs, &s->sides[r]))
                prox_scratch_push(sc, s->ids[r]);
        }
        if (length < BLOCK)
            return;
    }
}

/* ---- update -------------------------------------------------------------- */

/* Keys of the new boxes in the old order; ids >= n (removed) dropped. */
static int64_t rekey(sap *s, const broad_input *in, int64_t old_n)
{
    int axis = s->axis;
    int64_t n = in->n;
    if (n >= old_n) {
#pragma omp parallel for num_threads(in->threads) if (in->threads > 1 && old_n > 16384) \
    schedule(static)
        for (int64_t p = 0; p < old_n; p++) {
            if (p + GATHER_AHEAD < old_n)
                __builtin_prefetch(&in->box[s->ids[p + GATHER_AHEAD]].lo[axis]);
            s->keys[p] = key_of(in->box[s->ids[p]].lo[axis]);
        }
        return old_n;
    }
    int64_t m = 0;
    for (int64_t p = 0; p < old_n; p++) {
        uint32_t id = s->ids[p];
        if ((int64_t)id < n) {
            s->ids[m] = id;
            s->keys[m++] = key_of(in->box[id].lo[axis]);
        }
    }
    return m;
}

/* Insertion sort by (key, id). False when more than `budget` shifts were
 * needed (the list is then a permutation, not sorted). *moved: the
 * entries that moved towards the front. */
static bool insertion_sort(uint64_t *keys, uint32_t *ids, int64_t n, int64_t budget,
                           int64_t *moved)
{
    int64_t shifts = 0, count = 0;
    for (int64_t i = 1; i < n; i++) {
        uint64_t k = keys[i];
        uint32_t id = ids[i];
        if (!before(k, id, keys[i - 1], ids[i - 1]))
            continue;
        int64_t j = i;
        do {
            keys[j] = keys[j - 1];
            ids[j] = ids[j - 1];
            j--;
        } while (j > 0 && before(k, id, keys[j - 1], ids[j - 1]));
        keys[j] = k;
        ids[j] = id;
        count++;
        shifts += i - j;
        if (shifts > budget)
            return false;
    }
    *moved = count;
    return true;
}

/* Boxes kept .. n - 1 are new: sort them and merge them into the list. */
static void merge_added(sap *s, const broad_input *in, int64_t kept)
{
    int64_t n = in->n;
    fill_keys(s, in, kept, n);
    prox_radix_sort64(s->keys + kept, s->ids + kept, s->tmp_keys, s->tmp_ids, n - kept,
                      in->threads);
    int64_t a = 0, b = kept, out = 0;
    while (a < kept && b < n) {
        bool take_a = before(s->keys[a], s->ids[a], s->keys[b], s->ids[b]);
        int64_t from = take_a ? a++ : b++;
        s->tmp_keys[out] = s->keys[from];
        s->tmp_ids[out++] = s->ids[from];
    }
    for (; a < kept; a++, out++) {
        s->tmp_keys[out] = s->keys[a];
        s->tmp_ids[out] = s->ids[a];
    }
    for (; b < n; b++, out++) {
        s->tmp_keys[out] = s->keys[b];
        s->tmp_ids[out] = s->ids[b];
    }
    uint64_t *k = s->keys;
    s->keys = s->tmp_keys;
    s->tmp_keys = k;
    uint32_t *i = s->ids;
    s->ids = s->tmp_ids;
    s->tmp_ids = i;
    int64_t c = s->keys_capacity;
    s->keys_capacity = s->tmp_keys_capacity;
    s->tmp_keys_capacity = c;
    c = s->ids_capacity;
    s->ids_capacity = s->tmp_ids_capacity;
    s->tmp_ids_capacity = c;
}

static prox_status sap_rebuild(void **impl, const broad_input *in, bool *rebuilt)
{
    *rebuilt = true;
    return sap_build(impl, in);
}

static prox_status sap_update(void **impl, const broad_input *in, const prox_aabb *old,
                              int64_t old_n, int64_t *relocated, bool *rebuilt)
{
    (void)old; /* the list holds what it needs */
    sap *s = *impl;
    int64_t n = in->n, kept = old_n < n ? old_n : n;
    *relocated = 0;
    *rebuilt = false;
    if (!s || s->n != old_n || kept == 0 || n - kept > kept)
        return sap_rebuild(impl, in, rebuilt);
    prox_status st = allocate(s, in, old_n);
    if (st) {
        s->n = 0;
        return st;
    }
    int64_t m = rekey(s, in, old_n), moved = 0;
    if (!insertion_sort(s->keys, s->ids, m, UPDATE_SHIFTS_PER_BOX * n + 1024, &moved))
        return sap_rebuild(impl, in, rebuilt);
    if (n > kept)
        merge_added(s, in, kept);
    arrange(s, in);
    *relocated = moved;
    return PROX_OK;
}

/* ---- figures ------------------------------------------------------------- */

static int64_t sap_bytes(const void *impl)
{
    const sap *s = impl;
    if (!s)
        return 0;
    return (int64_t)sizeof *s + (s->keys_capacity + s->tmp_keys_capacity) * 8 +
           (s->ids_capacity + s->tmp_ids_capacity) * 4 +
           s->hi_capacity * 8 + s->sides_capacity * (int64_t)sizeof(side) + s->bytes_capacity[0] +
           s->bytes_capacity[1] + s->bytes_capacity[2] + s->bytes_capacity[3];
}

/* The entries of the sorted list. */
static int64_t sap_cells(const void *impl)
{
    const sap *s = impl;
    return s ? s->n : 0;
}

const broad_ops prox_broad_sap_ops = {
    .name = "sap",
    .build = sap_build,
    .update = sap_update,
    .destroy = sap_destroy,
    .gather = sap_gather,
    .self_pairs = sap_self_pairs,
    .bytes = sap_bytes,
    .cells = sap_cells,
};
