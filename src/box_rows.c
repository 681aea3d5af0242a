/* box_rows.c: self pairs of boxes of similar sizes (W3's equal spheres, DEM
 * grains) by a grid of rows, each row swept along the remaining axis.
 *
 * Cells: the data's widest axis is the sweep axis; along the other one or
 * two axes the boxes' min corners fall into cells a little larger than the
 * longest extent E_k along that axis. Two boxes overlapping along axis k
 * have |lo_a - lo_b| <= E_k, so their cells differ by at most one: a box
 * meets only its own row and the eight rows around it (two in 2D), and the
 * half stencil visits each pair of rows once (seed 001's every-pair-once
 * rule applied to rows). Rows are infinitely long cells: along the sweep
 * axis the sort does the work a cell key would, with no empty cells to
 * visit (W3 at d = 0.1 has 0.19 boxes per cell of side 2: most cells
 * are empty).
 *
 * Storage: every box once, rows in order (an MSD radix sort on the row
 * index), each row sorted by its min along the sweep axis (keys x_lo that
 * round the min down a little, ties by id); a box is 32 bytes: its bounds
 * relative to the data's minimum corner rounded outwards to float (the
 * sweep axis first), and its id. The sweep takes each box p against the
 * boxes after it in its row whose key is <= max_p, and against the boxes
 * of each neighbour row (half stencil) whose key lies in
 * [key_p - reach, max_p]: every pair overlapping along the sweep axis is
 * met once.
 *
 * Exactness: the float bounds are rounded outwards, so a pair of boxes
 * that overlap passes the float test. A pair that passes it with a margin
 * of four float ulps of the largest offset on every side overlaps for
 * certain (the rounding moved no bound by more than one ulp, nor the
 * double offsets by more than 2^-53 of themselves); the rare pair within
 * the margin gets the exact test on the doubles. */
#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "box_rows.h"
#include "error.h"
#include "radix_sort.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define ROWS_AVX512 1
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Rows at most max(n, MIN_ROWS): the cells grow (never shrink) to keep it. */
#define MIN_ROWS 1024
/* Cells a little larger than E_k: the rounding of the cell index (relative
 * 2^-52 of at most 2^26 cells) never puts an overlapping pair two apart. */
#define CELL_MARGIN (1.0 + 0x1p-16)
#define MAX_CELLS_PER_AXIS 0x1p26
/* Offsets must fit a float with room to spare. */
#define MAX_EXTENT 0x1p100
/* Rows up to this length are sorted by insertion on the stack. */
#define SHORT_ROW 256
/* In 2D the third axis's bounds: every pair overlaps there, surely. */
#define FLAT_HI 0x1p110f

static inline uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* t >= 0 rounded to the float at or below it, and at or above it: the
 * nearest float, moved one step (its bits, as t >= 0) where it went the
 * wrong way. Arithmetic, not a branch: the direction is a coin toss. */
static inline float round_down(double t)
{
    float f = (float)t;
    return bits_float(float_bits(f) - (uint32_t)((double)f > t));
}

static inline float round_up(double t)
{
    float f = (float)t;
    return bits_float(float_bits(f) + (uint32_t)((double)f < t));
}

static inline int64_t cell_of(const box_rows *r, int j, const prox_aabb *b)
{
    int k = r->row[j];
    if (k < 0)
        return 0;
    int64_t c = (int64_t)((b->lo[k] - r->origin[k]) * r->inverse[j]);
    return c < r->cells[j] ? c : r->cells[j] - 1;
}

static inline int64_t row_of(const box_rows *r, const prox_aabb *b)
{
    return cell_of(r, 0, b) + r->cells[0] * cell_of(r, 1, b);
}

/* Slot 0 holds the sweep axis, slots 1 and 2 the row axes (in 2D slot 2
 * is FLAT: every pair overlaps there, surely). */
static inline row_box row_box_of(const box_rows *r, const prox_aabb *b, uint32_t id)
{
    const double *o = r->origin;
    int a = r->axis, u = r->row[0], v = r->row[1];
    bool flat = v < 0;
    v = flat ? a : v;
    return (row_box){
        .lo = {round_down(b->lo[a] - o[a]), round_down(b->lo[u] - o[u]),
               flat ? 0.0f : round_down(b->lo[v] - o[v])},
        .id = id,
        .hi = {round_up(b->hi[a] - o[a]), round_up(b->hi[u] - o[u]),
               flat ? FLAT_HI : round_up(b->hi[v] - o[v])},
        .row = 0,
    };
}

/* The sweep axis, the row axes and their cells (see the top comment). */
static void lay_out(box_rows *r, const broad_input *in)
{
    double extent[3] = {0, 0, 0};
    for (int k = 0; k < in->dim; k++)
        extent[k] = in->hi[k] - in->lo[k];
    r->dim = in->dim;
    r->axis = 0;
    for (int k = 1; k < in->dim; k++)
        r->axis = extent[k] > extent[r->axis] ? k : r->axis;
    r->row[0] = r->row[1] = -1;
    for (int k = 0, j = 0; k < in->dim; k++)
        if (k != r->axis)
            r->row[j++] = k;
    memcpy(r->origin, in->lo, sizeof r->origin);

    double cell[2] = {1, 1};
    for (int j = 0; j < 2; j++) {
        int k = r->row[j];
        if (k < 0)
            continue;
        cell[j] = fmax(in->longest[k] * CELL_MARGIN, extent[k] / MAX_CELLS_PER_AXIS);
        if (!(cell[j] > 0))
            cell[j] = 1.0; /* every box a point on this axis, all in one cell */
    }
    double max_rows = in->n > MIN_ROWS ? (double)in->n : MIN_ROWS;
    for (;;) {
        for (int j = 0; j < 2; j++) {
            r->inverse[j] = 1.0 / cell[j];
            r->cells[j] = r->row[j] < 0 ? 1 : (int64_t)(extent[r->row[j]] * r->inverse[j]) + 1;
        }
        if ((double)r->cells[0] * (double)r->cells[1] <= max_rows)
            break;
        cell[0] *= 2;
        cell[1] *= 2;
    }
    r->rows = r->cells[0] * r->cells[1];

    /* Four ulps of the largest offset (section "Exactness" above), and at
     * least four of the smallest subnormal. */
    double widest = fmax(extent[0], fmax(extent[1], extent[2]));
    int e;
    frexp(widest, &e);
    r->sure = (float)fmax(ldexp(1.0, e - 22), 0x1p-147);
    /* A box meeting box p along the sweep axis has min >= min_p - reach:
     * its extent, the roundings of both mins, and the truncation of the
     * sweep's keys (sort_short_row: up to 2^-15 of the widest offset),
     * with room. */
    r->reach = round_up(in->longest[r->axis]) + 4 * r->sure + (float)ldexp(1.0, e - 14);
}

static int compare_row_boxes(const void *a, const void *b)
{
    const row_box *x = a, *y = b;
    if (x->lo[0] != y->lo[0])
        return x->lo[0] < y->lo[0] ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* A short row by its sweep keys: 32-bit keys, a min's float bits (the
 * offsets are >= 0, so they order like the floats) with the low 8 cleared
 * for the box's index in the row (ids ascend with it), sorted by the
 * project's small-array sort (a sorting network with AVX-512). The cleared
 * bits round each key down by at most 2^-15 of itself: the keys (x_lo)
 * stay sorted and never above the mins, which is all the sweep's windows
 * need, and reach covers the difference (lay_out). */
static void sort_short_row(row_box *box, float *x_lo, int64_t count)
{
    uint32_t key[SHORT_ROW];
    row_box sorted[SHORT_ROW];
    for (int64_t j = 0; j < count; j++)
        key[j] = (float_bits(box[j].lo[0]) & ~(uint32_t)(SHORT_ROW - 1)) | (uint32_t)j;
    prox_sort_u32(key, count);
    for (int64_t j = 0; j < count; j++) {
        sorted[j] = box[key[j] & (SHORT_ROW - 1)];
        x_lo[j] = bits_float(key[j] & ~(uint32_t)(SHORT_ROW - 1));
    }
    memcpy(box, sorted, (size_t)count * sizeof *box);
}

/* The row of `count` boxes from position `first`. */
static void sort_row(box_rows *r, int64_t first, int64_t count)
{
    row_box *box = r->box + first;
    if (count <= SHORT_ROW) {
        sort_short_row(box, r->x_lo + first, count);
        return;
    }
    qsort(box, (size_t)count, sizeof *box, compare_row_boxes);
    for (int64_t j = 0; j < count; j++)
        r->x_lo[first + j] = box[j].lo[0];
}

static bool reserve(box_rows *r, const broad_input *in)
{
    const prox_allocator *al = in->allocator;
    int64_t n = in->n;
    return prox_reserve(al, (void **)&r->box, &r->box_capacity, n, sizeof *r->box) &&
           prox_reserve(al, (void **)&r->x_lo, &r->x_lo_capacity, n, sizeof *r->x_lo) &&
           prox_reserve(al, (void **)&r->start, &r->start_capacity, r->rows + 1,
                        sizeof *r->start);
}

/* Rows placed in two passes (an MSD radix sort on the row) when every group
 * holds at most 1/GROUP_SHARE of the boxes: first into GROUPS groups of
 * consecutive rows, then each group (in cache) into its rows. One pass of
 * writes to random rows would miss the cache on nearly every box once the
 * boxes outgrow it (W3 at 5M, 160 MB of rows: build 0.54 s in one pass,
 * 0.40 s in two; at 1M 0.087 s against 0.066 s). */
#define GROUPS 1024
#define GROUP_SHARE 8

/* The `count` boxes of group rows [row0, row0 + nrows), in id order in
 * `from` (slot `row` set), which start at position `first`: their rows'
 * starts counted here (start[row0 ..]), then each box written to its row
 * and the rows sorted. Returns how many of the rows hold a box. */
static int64_t place_group(box_rows *r, const row_box *from, int64_t count, int64_t first,
                           int64_t row0, int64_t nrows, uint32_t *cursor)
{
    uint32_t *start = r->start + row0;
    memset(cursor, 0, (size_t)nrows * sizeof *cursor);
    for (int64_t k = 0; k < count; k++)
        cursor[from[k].row - row0]++;
    int64_t at = first, occupied = 0;
    for (int64_t j = 0; j < nrows; j++) {
        uint32_t c = cursor[j];
        occupied += c > 0;
        start[j] = cursor[j] = (uint32_t)at;
        at += c;
    }
    for (int64_t k = 0; k < count; k++)
        r->box[cursor[from[k].row - row0]++] = from[k];
    /* the cursors now stand at the rows' ends (the next group's starts may
     * not be written yet) */
    for (int64_t j = 0; j < nrows; j++)
        sort_row(r, start[j], cursor[j] - start[j]);
    return occupied;
}

/* One pass: each box, read in input order, straight to its row (the rows
 * counted first), then every row sorted. For uneven data, where a group
 * would hold most boxes. */
static void place_directly(box_rows *r, const broad_input *in, int threads)
{
    uint32_t *start = r->start;
    int64_t n = in->n;
    memset(start, 0, (size_t)(r->rows + 1) * sizeof *start);
    for (int64_t i = 0; i < n; i++)
        start[row_of(r, &in->box[i]) + 1]++;
    r->occupied = 0;
    for (int64_t row = 0; row < r->rows; row++) {
        r->occupied += start[row + 1] > 0;
        start[row + 1] += start[row];
    }
    for (int64_t i = 0; i < n; i++) { /* start[row] as the row's cursor */
        row_box x = row_box_of(r, &in->box[i], (uint32_t)i);
        x.row = (uint32_t)row_of(r, &in->box[i]);
        r->box[start[x.row]++] = x;
    }
    memmove(start + 1, start, (size_t)r->rows * sizeof *start);
    start[0] = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 256)
    for (int64_t row = 0; row < r->rows; row++)
        sort_row(r, start[row], start[row + 1] - start[row]);
}

/* Each thread's count of its block of the input per group (at[t][g]), the
 * rows computed from the boxes (no array of them is kept). */
static void count_groups(const box_rows *r, const broad_input *in, int threads, int shift,
                         int64_t (*at)[GROUPS])
{
    int64_t n = in->n;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static, 1)
    for (int t = 0; t < threads; t++) { /* block t of the input, whoever runs it */
        int64_t *mine = at[t];
        memset(mine, 0, sizeof at[t]);
        for (int64_t i = n * t / threads; i < n * (t + 1) / threads; i++)
            mine[row_of(r, &in->box[i]) >> shift]++;
    }
}

/* First pass: each box, read in input order, to its group; slot `row`
 * carries its row to the second pass. The input is cut into `threads`
 * blocks, and each group's part of a block is written after the earlier
 * blocks' parts, so every thread count places the boxes alike. at: the
 * counts of count_groups (the same blocks), turned here into write
 * positions. */
static void place_in_groups(box_rows *r, const broad_input *in, int threads, int shift,
                            int64_t groups, const int64_t *group_start, int64_t (*at)[GROUPS])
{
    int64_t n = in->n;
    for (int64_t g = 0; g < groups; g++) {
        int64_t next = group_start[g];
        for (int u = 0; u < threads; u++) {
            int64_t c = at[u][g];
            at[u][g] = next;
            next += c;
        }
    }
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        int64_t *mine = at[t];
        for (int64_t i = n * t / threads; i < n * (t + 1) / threads; i++) {
            row_box x = row_box_of(r, &in->box[i], (uint32_t)i);
            x.row = (uint32_t)row_of(r, &in->box[i]);
            r->box[mine[x.row >> shift]++] = x;
        }
    }
}

static prox_status place_in_rows(box_rows *r, const broad_input *in, int threads)
{
    int64_t n = in->n, rows = r->rows;
    int shift = 0;
    while (((rows - 1) >> shift) >= GROUPS)
        shift++;
    int64_t groups = ((rows - 1) >> shift) + 1, largest = 0, span = (int64_t)1 << shift;
    int64_t(*at)[GROUPS] = prox_alloc_array(in->allocator, threads, sizeof *at);
    if (!at)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory placing %lld boxes in rows",
                         (long long)n);
    count_groups(r, in, threads, shift, at);
    int64_t group_start[GROUPS + 1];
    group_start[0] = 0;
    for (int64_t g = 0; g < groups; g++) {
        int64_t size = 0;
        for (int t = 0; t < threads; t++)
            size += at[t][g];
        group_start[g + 1] = group_start[g] + size;
        largest = size > largest ? size : largest;
    }
    if (groups == 1 || largest > n / GROUP_SHARE) {
        prox_free(in->allocator, at);
        place_directly(r, in, threads);
        return PROX_OK;
    }
    row_box *scratch = prox_alloc_array(in->allocator, threads * largest, sizeof *scratch);
    uint32_t *cursors = prox_alloc_array(in->allocator, threads * span, sizeof *cursors);
    bool ok = scratch && cursors;
    int64_t occupied = 0;
    if (ok) {
        place_in_groups(r, in, threads, shift, groups, group_start, at);
        /* Second pass: each group, copied aside (it fits the cache), into its
         * rows, sorted while they are hot. */
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1) \
    reduction(+ : occupied)
        for (int64_t g = 0; g < groups; g++) {
            int t = omp_get_thread_num();
            int64_t count = group_start[g + 1] - group_start[g], row0 = g << shift;
            row_box *from = scratch + t * largest;
            memcpy(from, r->box + group_start[g], (size_t)count * sizeof *from);
            occupied += place_group(r, from, count, group_start[g], row0,
                                    rows - row0 < span ? rows - row0 : span, cursors + t * span);
        }
        r->start[rows] = (uint32_t)n;
        r->occupied = occupied;
    }
    prox_free(in->allocator, scratch);
    prox_free(in->allocator, cursors);
    prox_free(in->allocator, at);
    return ok ? PROX_OK : prox_fail(PROX_ERR_NO_MEMORY, "out of memory placing %lld boxes in rows",
                                    (long long)n);
}

prox_status prox_box_rows_build(box_rows *r, const broad_input *in)
{
    assert(in->n < ((int64_t)1 << 32));
    for (int k = 0; k < in->dim; k++)
        if (!(in->hi[k] - in->lo[k] < MAX_EXTENT))
            return PROX_ERR_RANGE;
    lay_out(r, in);
    int64_t n = in->n;
    if (!reserve(r, in))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for the rows of %lld boxes",
                         (long long)n);
    r->count = n;
    int threads = in->threads > 1 && n > 65536 ? in->threads : 1;
    return place_in_rows(r, in, threads);
}

/* ---- the sweep ---------------------------------------------------------- */

/* Candidate pairs (positions p, q in the rows, packed p << 32 | q) are
 * gathered, then tested a batch at a time: appending a window is one
 * store, and the test loop keeps its hits without a branch on each
 * outcome (about half the candidates of W3 overlap: a branch would guess
 * wrong half the time). */
#define BATCH 512
#define LANES 8                          /* candidates one store appends */
#define BATCH_ROOM (BATCH + 5 * LANES)   /* a box adds at most 5 such stores */

typedef struct sweeper {
    const box_rows *r;
    const prox_aabb *box; /* the caller's boxes as doubles, by id */
    prox_emitter *e;
    int64_t tested, visited;
    int count;
    uint64_t pq[BATCH_ROOM + LANES]; /* a store may write LANES past count */
    prox_pair hit[BATCH_ROOM];
} sweeper;

/* Whether the float bounds of a and b overlap (maybe), and do so by the
 * margin that makes the doubles' overlap certain (sure). */
static inline void float_overlap(const row_box *a, const row_box *b, float s, bool *maybe,
                                 bool *sure)
{
#ifdef __SSE2__
    /* lanes 0-2: the axes (lane 3 holds the ids) */
    __m128 alo = _mm_loadu_ps(a->lo), ahi = _mm_loadu_ps(a->hi);
    __m128 blo = _mm_loadu_ps(b->lo), bhi = _mm_loadu_ps(b->hi);
    __m128 margin = _mm_set1_ps(s);
    int m = _mm_movemask_ps(_mm_and_ps(_mm_cmple_ps(alo, bhi), _mm_cmple_ps(blo, ahi)));
    int n = _mm_movemask_ps(_mm_and_ps(_mm_cmple_ps(_mm_add_ps(alo, margin), bhi),
                                       _mm_cmple_ps(_mm_add_ps(blo, margin), ahi)));
    *maybe = (m & 7) == 7;
    *sure = (n & 7) == 7;
#else
    *maybe = (a->lo[0] <= b->hi[0]) & (b->lo[0] <= a->hi[0]) & (a->lo[1] <= b->hi[1]) &
             (b->lo[1] <= a->hi[1]) & (a->lo[2] <= b->hi[2]) & (b->lo[2] <= a->hi[2]);
    *sure = (a->lo[0] + s <= b->hi[0]) & (b->lo[0] + s <= a->hi[0]) &
            (a->lo[1] + s <= b->hi[1]) & (b->lo[1] + s <= a->hi[1]) &
            (a->lo[2] + s <= b->hi[2]) & (b->lo[2] + s <= a->hi[2]);
#endif
}

static void test_batch(sweeper *w)
{
    const row_box *box = w->r->box;
    float s = w->r->sure;
    int hits = 0, ambiguous = 0;
    for (int c = 0; c < w->count; c++) {
        const row_box *a = &box[w->pq[c] >> 32], *b = &box[(uint32_t)w->pq[c]];
        bool maybe, sure;
        float_overlap(a, b, s, &maybe, &sure);
        uint32_t i = a->id < b->id ? a->id : b->id, j = a->id ^ b->id ^ i;
        w->hit[hits] = (prox_pair){i, j};
        hits += maybe & sure;
        ambiguous |= maybe & !sure;
    }
    if (ambiguous) { /* within float rounding: the doubles decide (rare); again in */
        hits = 0;    /* candidate order, so that batch boundaries never show */
        for (int c = 0; c < w->count; c++) {
            const row_box *a = &box[w->pq[c] >> 32], *b = &box[(uint32_t)w->pq[c]];
            bool maybe, sure;
            float_overlap(a, b, s, &maybe, &sure);
            uint32_t i = a->id < b->id ? a->id : b->id, j = a->id ^ b->id ^ i;
            if (maybe && (sure || prox_aabb_overlap(&w->box[i], &w->box[j])))
                w->hit[hits++] = (prox_pair){i, j};
        }
    }
    for (int h = 0; h < hits; h++)
        prox_emit(w->e, w->hit[h].i, w->hit[h].j);
    w->tested += w->count;
    w->count = 0;
}

/* Candidates (p, q) for q in [at, at + count); returns the new fill. */
static inline int add_candidates(sweeper *w, int filled, uint32_t p, int64_t at, int64_t count)
{
#ifdef ROWS_AVX512
    if (count <= LANES) {
        const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        __m512i first = _mm512_set1_epi64((int64_t)((uint64_t)p << 32 | (uint64_t)at));
        _mm512_storeu_si512(w->pq + filled, _mm512_add_epi64(first, lane));
        return filled + (int)count;
    }
#endif
    for (int64_t k = 0; k < count; k++) {
        if (filled == BATCH_ROOM) {
            w->count = filled;
            test_batch(w);
            filled = 0;
        }
        w->pq[filled++] = (uint64_t)p << 32 | (uint64_t)(at + k);
    }
    return filled;
}

/* A neighbour row's boxes not yet behind the sweep: [at, end). */
typedef struct window {
    int64_t at, end;
} window;

/* The half of a row's neighbours after it: (+1, 0), and in 3D (-1, +1),
 * (0, +1), (+1, +1); the non-empty ones. */
static int neighbour_rows(const box_rows *r, int64_t row, window out[4])
{
    int64_t c0 = row % r->cells[0], c1 = row / r->cells[0];
    int64_t cell[4][2] = {{c0 + 1, c1}, {c0 - 1, c1 + 1}, {c0, c1 + 1}, {c0 + 1, c1 + 1}};
    int count = 0;
    for (int j = 0; j < (r->row[1] >= 0 ? 4 : 1); j++) {
        if (cell[j][0] < 0 || cell[j][0] >= r->cells[0] || cell[j][1] >= r->cells[1])
            continue;
        int64_t other = cell[j][0] + r->cells[0] * cell[j][1];
        if (r->start[other] < r->start[other + 1])
            out[count++] = (window){r->start[other], r->start[other + 1]};
    }
    return count;
}

/* The keys x[at .. end) of a row are sorted. Moves `at` past the keys
 * below `lower` and returns how many keys from there are <= hi (lower <=
 * hi). With AVX-512 one masked load of 16 keys (it never reads past end)
 * answers both where the window is that short, as in W3 nearly always: a
 * sorted run of compares is a prefix of the mask, and its popcount
 * replaces a loop whose exit the branch predictor cannot guess. */
static inline int64_t window_of(const float *x, int64_t *at, int64_t end, float lower, float hi)
{
#ifdef ROWS_AVX512
    int64_t left = end - *at;
    __mmask16 valid = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    __m512 keys = _mm512_maskz_loadu_ps(valid, x + *at);
    int below = __builtin_popcount(
        _mm512_mask_cmp_ps_mask(valid, keys, _mm512_set1_ps(lower), _CMP_LT_OQ));
    int upto = __builtin_popcount(
        _mm512_mask_cmp_ps_mask(valid, keys, _mm512_set1_ps(hi), _CMP_LE_OQ));
    if (upto < 16) {
        *at += below;
        return upto - below;
    }
#endif
    int64_t q = *at;
    while (q < end && x[q] < lower)
        q++;
    *at = q;
    while (q < end && x[q] <= hi)
        q++;
    return q - *at;
}

/* Each box of the row against the boxes after it in the row, and against
 * the neighbour rows' boxes whose min lies in [min - reach, max]: every
 * pair of the row and every pair across is met once. */
static void sweep_from_row(sweeper *w, int64_t row)
{
    const box_rows *r = w->r;
    int64_t first = r->start[row], end = r->start[row + 1];
    window next[4];
    int count = first < end ? neighbour_rows(r, row, next) : 0;
    w->visited += 1 + count;
    const float *x_lo = r->x_lo;
    int filled = w->count; /* in a register: the stores to w->pq may alias w->count */
    for (int64_t p = first; p < end; p++) {
        const row_box *bp = &r->box[p];
        /* from the key, not the min: keys are sorted, so lower never falls */
        float hi = bp->hi[0], lower = x_lo[p] - r->reach;
        int64_t after = p + 1;
        filled = add_candidates(w, filled, (uint32_t)p, p + 1,
                                window_of(x_lo, &after, end, x_lo[p], hi));
        for (int j = 0; j < count; j++) {
            window *v = &next[j];
            int64_t n = window_of(x_lo, &v->at, v->end, lower, hi);
            filled = add_candidates(w, filled, (uint32_t)p, v->at, n);
        }
        if (filled >= BATCH) {
            w->count = filled;
            test_batch(w);
            filled = 0;
        }
    }
    w->count = filled;
}

/* The first row starting at or after box position `at`. */
static int64_t row_at(const box_rows *r, int64_t at)
{
    int64_t lo = 0, hi = r->rows;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r->start[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void prox_box_rows_pairs(const box_rows *r, const broad_input *in, prox_chunks *chunks,
                         prox_stats *stats)
{
    int count = chunks->count;
    int threads = count > 1 ? in->threads : 1;
    int64_t tested = 0, visited = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1) \
    reduction(+ : tested, visited)
    for (int k = 0; k < count; k++) {
        sweeper local, *w = &local; /* 10 KB: the stack */
        w->r = r;
        w->box = in->box;
        w->e = &chunks->emitter[k];
        w->tested = w->visited = 0;
        w->count = 0;
        int64_t first = row_at(r, r->count * k / count);
        int64_t end = k + 1 == count ? r->rows : row_at(r, r->count * (k + 1) / count);
        for (int64_t row = first; row < end && !w->e->stop; row++)
            sweep_from_row(w, row);
        test_batch(w);
        tested += w->tested;
        visited += w->visited;
    }
    stats->candidates += tested;
    stats->cells_visited += visited;
}

void prox_box_rows_free(box_rows *r, const prox_allocator *allocator)
{
    prox_free(allocator, r->box);
    prox_free(allocator, r->x_lo);
    prox_free(allocator, r->start);
    *r = (box_rows){0};
}

int64_t prox_box_rows_bytes(const box_rows *r)
{
    return r->box_capacity * (int64_t)sizeof *r->box +
           r->x_lo_capacity * (int64_t)sizeof *r->x_lo +
           r->start_capacity * (int64_t)sizeof *r->start;
}
