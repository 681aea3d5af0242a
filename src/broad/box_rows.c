/* box_rows.c: self pairs of boxes of similar sizes (W3's equal spheres, DEM
 * grains) by a grid of rows, each row swept along the remaining axis.
 *
 * Cells: the data's widest axis is the sweep axis; along the other one or
 * two axes the boxes' min corners fall into cells a little larger than the
 * longest extent E_k along that axis. Two boxes overlapping along axis k
 * have |lo_a - lo_b| <= E_k, so their cells differ by at most one: a box
 * meets only its own row and the eight rows around it (two in 2D), and the
 * half stencil visits each pair of rows once (the hash-multimap article's every-pair-once
 * rule applied to rows). Rows are infinitely long cells: along the sweep
 * axis the sort does the work a cell key would, with no empty cells to
 * visit (W3 at d = 0.1 has 0.19 boxes per cell of side 2: most cells
 * are empty).
 *
 * Storage, 20 bytes per box: every box once, rows in order (an MSD radix
 * sort on the row index), each row sorted by its min along the sweep axis
 * (keys that round the min down a little, ties by id). Along the sweep
 * axis a box keeps its key and its max as floats relative to the data's
 * minimum corner, rounded outwards; along the row axes its bounds in
 * 16-bit quanta of its cell (below); and its id. The sweep takes each box
 * p against the boxes after it in its row whose key is <= max_p, and
 * against the boxes of each neighbour row (half stencil) whose key lies in
 * [key_p - reach, max_p]: every pair overlapping along the sweep axis is
 * met once.
 *
 * Quanta: along row axis j a box in cell c stores lo and hi as
 * R(x) = (x - origin) / cell_size - c, in units of 1/QUANTA, plus 2:
 * lo rounded down and one unit further, hi rounded up and one further
 * (the unit absorbs the doubles' rounding, some 2^-25 of a cell at most).
 * A box's R(lo) lies in [0, 1) cells and R(hi) below 2 (its extent is less
 * than a cell), so both fit 16 bits. A box of the neighbour cell c + 1 has
 * the same bounds plus QUANTA in box p's frame: the test adds the row's
 * shift (sweeper.shift).
 *
 * Exactness: every stored bound lies outside the true one, so a pair of
 * boxes that overlap passes the test. A pair that passes it with a margin
 * (Q_SURE quanta along the row axes, `sure` along the sweep axis: four
 * float ulps of the widest offset and the keys' truncation) overlaps for
 * certain; the rare pair within the margin gets the exact test on the
 * doubles. */
#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "broad/box_rows.h"
#include "core/error.h"
#include "core/radix_sort.h"

#include "simd/vec_u64.h"

/* Rows at most max(n, MIN_ROWS): the cells grow (never shrink) to keep it. */
#define MIN_ROWS 1024
/* Cells a little larger than E_k: the rounding of the cell index (relative
 * 2^-52 of at most 2^26 cells) never puts an overlapping pair two apart,
 * and a box's extent is below a cell by far more than a quantum. */
#define CELL_MARGIN (1.0 + 0x1p-16)
#define MAX_CELLS_PER_AXIS 0x1p26
/* Quanta per cell along the row axes: bounds up to 2 QUANTA + 3 < 2^16. */
#define QUANTA 32000
/* Stored bounds are at most two quanta outside the true ones (see Quanta
 * above): a test passing by five holds for the doubles. */
#define Q_SURE 5
/* Offsets must fit a float with room to spare. */
#define MAX_EXTENT 0x1p100
/* Rows up to this length are sorted by a sorting network on 32-bit keys. */
#define SHORT_ROW 256
#define SHORT_ROW_BITS 8

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
 * wrong way. Arithmetic, not a branch: the direction is a coin toss.
 * t + 0.0 turns -0 (a bound of -0 less an origin of +0) into +0: the keys
 * are sorted by their bits, where -0 would follow every positive float. */
static inline float round_down(double t)
{
    float f = (float)(t + 0.0);
    return bits_float(float_bits(f) - (uint32_t)((double)f > t));
}

static inline float round_up(double t)
{
    float f = (float)(t + 0.0);
    return bits_float(float_bits(f) + (uint32_t)((double)f < t));
}

/* Where a box's min lies along row axis j, in cells (t >= 0), and its cell. */
static inline double cells_from_origin(const box_rows *r, int j, const prox_aabb *b)
{
    int k = r->row[j];
    return (b->lo[k] - r->origin[k]) * r->inverse[j];
}

static inline int64_t cell_at(const box_rows *r, int j, double t)
{
    int64_t c = (int64_t)t;
    return c < r->cells[j] ? c : r->cells[j] - 1;
}

/* The box's cell along row axis j (0 along the missing axis of 2D). */
static inline int64_t cell_of(const box_rows *r, int j, const prox_aabb *b)
{
    return r->row[j] < 0 ? 0 : cell_at(r, j, cells_from_origin(r, j, b));
}

static inline int64_t row_of(const box_rows *r, const prox_aabb *b)
{
    return cell_of(r, 0, b) + r->cells[0] * cell_of(r, 1, b);
}

/* Along row axis j: the box's cell (as cell_of), and its bounds in quanta
 * of that cell (see Quanta above). In 2D the missing axis gets [0, 2^16):
 * every pair overlaps there by more than Q_SURE. */
static inline int64_t quantize(const box_rows *r, int j, const prox_aabb *b, uint16_t *lo,
                               uint16_t *hi)
{
    int k = r->row[j];
    if (k < 0) {
        *lo = 0;
        *hi = UINT16_MAX;
        return 0;
    }
    double t = cells_from_origin(r, j, b);
    int64_t c = cell_at(r, j, t);
    double u = (t - (double)c) * QUANTA;
    double v = ((b->hi[k] - r->origin[k]) * r->inverse[j] - (double)c) * QUANTA;
    assert(u >= 0 && u < QUANTA + 1 && v < 2.0 * QUANTA);
    double top = ceil(v) + 3;
    *lo = (uint16_t)(floor(u) + 1);
    *hi = (uint16_t)(top < UINT16_MAX ? top : UINT16_MAX); /* fmin: a call */
    return c;
}

/* The box's record, sweep key and row. */
static inline row_box row_box_of(const box_rows *r, const prox_aabb *b, uint32_t id, float *key,
                                 int64_t *row)
{
    int a = r->axis;
    row_box x = {.hi = round_up(b->hi[a] - r->origin[a]), .id = id};
    int64_t c0 = quantize(r, 0, b, &x.q[0], &x.q[2]);
    int64_t c1 = quantize(r, 1, b, &x.q[1], &x.q[3]);
    *key = round_down(b->lo[a] - r->origin[a]);
    *row = c0 + r->cells[0] * c1;
    return x;
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

    /* A box meeting box p along the sweep axis has min >= min_p - reach:
     * its extent, the roundings of both mins, and the truncation of the
     * sweep's keys (sort_short_row: up to 2^-15 of the widest offset),
     * with room. */
    double widest = fmax(extent[0], fmax(extent[1], extent[2]));
    int e;
    frexp(widest, &e);
    r->exponent = e;
    r->reach = round_up(in->longest[r->axis]) + (float)ldexp(1.0, e - 20) +
               (float)ldexp(1.0, e - 14);
}

/* The float test's margin once the keys are truncated by up to `bits` bits
 * (sort_short_row): four ulps of the widest offset, at least four of the
 * smallest subnormal (see Exactness above), plus the truncation. */
static float sure_margin(const box_rows *r, int bits)
{
    int e = r->exponent;
    return (float)(fmax(ldexp(1.0, e - 22), 0x1p-147) + ldexp(1.0, e - 23 + bits));
}

/* A row's arrays, for prox_heap_sort. */
typedef struct row_items {
    float *key;
    row_box *box;
} row_items;

/* Whether the box at a comes before the one at b in a row: by key, then id. */
static bool row_before(const void *ctx, int64_t a, int64_t b)
{
    const row_items *r = ctx;
    return r->key[a] < r->key[b] || (r->key[a] == r->key[b] && r->box[a].id < r->box[b].id);
}

static void row_swap(void *ctx, int64_t a, int64_t b)
{
    row_items *r = ctx;
    float k = r->key[a];
    r->key[a] = r->key[b];
    r->key[b] = k;
    row_box x = r->box[a];
    r->box[a] = r->box[b];
    r->box[b] = x;
}

/* A short row by its sweep keys: 32-bit words, a key's float bits (the
 * offsets are >= 0, so they order like the floats) with the low `bits`
 * cleared for the box's index in the row (ids ascend with it), sorted by
 * the project's small-array sort (a sorting network with AVX-512). The
 * cleared bits round each key down by less than 2^(bits - 23) of itself:
 * the keys stay sorted and never above the mins, which is all the sweep's
 * windows need; reach and the float test's margin cover the difference.
 * Returns `bits`. */
static int sort_short_row(float *key, row_box *box, int64_t count)
{
    if (count < 2)
        return 0;
    int bits = 32 - __builtin_clz((uint32_t)(count - 1));
    uint32_t mask = ((uint32_t)1 << bits) - 1;
    uint32_t word[SHORT_ROW];
    row_box sorted[SHORT_ROW];
    for (int64_t j = 0; j < count; j++)
        word[j] = (float_bits(key[j]) & ~mask) | (uint32_t)j;
    prox_sort_u32(word, count);
    for (int64_t j = 0; j < count; j++) {
        sorted[j] = box[word[j] & mask];
        key[j] = bits_float(word[j] & ~mask);
    }
    memcpy(box, sorted, (size_t)count * sizeof *box);
    return bits;
}

/* The row of `count` boxes from position `first`; returns the bits its
 * keys were truncated by. */
static int sort_row(box_rows *r, int64_t first, int64_t count)
{
    if (count <= SHORT_ROW)
        return sort_short_row(r->key + first, r->box + first, count);
    /* a long row (uneven data): in place, the keys exact */
    row_items items = {r->key + first, r->box + first};
    prox_heap_sort(&items, count, row_before, row_swap);
    return 0;
}

static bool reserve(box_rows *r, const broad_input *in)
{
    const prox_allocator *al = in->allocator;
    int64_t n = in->n;
    return prox_reserve(al, (void **)&r->box, &r->box_capacity, n, sizeof *r->box) &&
           prox_reserve(al, (void **)&r->key, &r->key_capacity, n, sizeof *r->key) &&
           prox_reserve(al, (void **)&r->start, &r->start_capacity, r->rows + 1,
                        sizeof *r->start);
}

/* Rows placed in two passes (an MSD radix sort on the row) when every group
 * holds at most 1/GROUP_SHARE of the boxes: first into GROUPS groups of
 * consecutive rows, then each group (in cache) into its rows. One pass of
 * writes to random rows would miss the cache on nearly every box once the
 * boxes outgrow it (W3 at 1M and 5M: docs/rejected.md, "The rows of boxes
 * placed in one pass"). The first pass
 * notes each box's row within its group in 16 bits (build scratch): groups
 * of more rows (over 2^23 rows) take the one pass. 128 groups: the first
 * pass writes three streams per group (records, keys, rows), which must
 * stay in L1 (256 and 1,024 groups build slower: docs/design.md, "The
 * broad phase"). */
#define GROUPS 128
#define GROUP_SHARE 8
#define MAX_GROUP_SHIFT 16

/* A group's boxes as the first pass left them: records, keys, and rows
 * within the group. */
typedef struct group_part {
    row_box *box;
    float *key;
    uint16_t *row;
} group_part;

/* The `count` boxes of group rows [row0, row0 + nrows), in id order in
 * `from`, which start at position `first`: their rows' starts counted here
 * (start[row0 ..]), then each box written to its row and the rows sorted.
 * Returns the most bits a row's keys were truncated by; adds the rows
 * holding a box to *occupied. */
static int place_group(box_rows *r, group_part from, int64_t count, int64_t first, int64_t row0,
                       int64_t nrows, uint32_t *cursor, int64_t *occupied)
{
    uint32_t *start = r->start + row0;
    memset(cursor, 0, (size_t)nrows * sizeof *cursor);
    for (int64_t k = 0; k < count; k++)
        cursor[from.row[k]]++;
    int64_t at = first;
    for (int64_t j = 0; j < nrows; j++) {
        uint32_t c = cursor[j];
        *occupied += c > 0;
        start[j] = cursor[j] = (uint32_t)at;
        at += c;
    }
    for (int64_t k = 0; k < count; k++) {
        uint32_t to = cursor[from.row[k]]++;
        r->box[to] = from.box[k];
        r->key[to] = from.key[k];
    }
    /* the cursors now stand at the rows' ends (the next group's starts may
     * not be written yet) */
    int bits = 0;
    for (int64_t j = 0; j < nrows; j++) {
        int b = sort_row(r, start[j], cursor[j] - start[j]);
        bits = b > bits ? b : bits;
    }
    return bits;
}

/* One pass: each box, read in input order, straight to its row (the rows
 * counted first), then every row sorted. For uneven data, where a group
 * would hold most boxes. Returns the keys' truncation (sort_row). */
static int place_directly(box_rows *r, const broad_input *in, int threads)
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
        float key;
        int64_t row;
        row_box x = row_box_of(r, &in->box[i], (uint32_t)i, &key, &row);
        uint32_t to = start[row]++;
        r->box[to] = x;
        r->key[to] = key;
    }
    memmove(start + 1, start, (size_t)r->rows * sizeof *start);
    start[0] = 0;
    int bits = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 256) \
    reduction(max : bits)
    for (int64_t row = 0; row < r->rows; row++) {
        int b = sort_row(r, start[row], start[row + 1] - start[row]);
        bits = b > bits ? b : bits;
    }
    return bits;
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

/* First pass: each box, read in input order, to its group, with its row
 * within the group in rows[]. The input is cut into `threads` blocks, and
 * each group's part of a block is written after the earlier blocks' parts,
 * so every thread count places the boxes alike. at: the counts of
 * count_groups (the same blocks), turned here into write positions. */
static void place_in_groups(box_rows *r, const broad_input *in, int threads, int shift,
                            int64_t groups, const int64_t *group_start, int64_t (*at)[GROUPS],
                            uint16_t *rows)
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
    int64_t within = ((int64_t)1 << shift) - 1;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        int64_t *mine = at[t];
        for (int64_t i = n * t / threads; i < n * (t + 1) / threads; i++) {
            float key;
            int64_t row;
            row_box x = row_box_of(r, &in->box[i], (uint32_t)i, &key, &row);
            int64_t to = mine[row >> shift]++;
            r->box[to] = x;
            r->key[to] = key;
            rows[to] = (uint16_t)(row & within);
        }
    }
}

/* Bytes of group scratch per thread: `largest` boxes' records, keys and
 * rows, rounded up so that every thread's records stay aligned. */
static int64_t group_scratch_bytes(int64_t largest)
{
    int64_t bytes = largest * (int64_t)(sizeof(row_box) + sizeof(float) + sizeof(uint16_t));
    return (bytes + 63) & ~(int64_t)63;
}

/* The group scratch of thread t. */
static group_part group_scratch(void *block, int64_t largest, int t)
{
    char *at = (char *)block + t * group_scratch_bytes(largest);
    return (group_part){(row_box *)at, (float *)(at + largest * (int64_t)sizeof(row_box)),
                        (uint16_t *)(at + largest * (int64_t)(sizeof(row_box) + sizeof(float)))};
}

/* Second pass: each group, copied aside (it fits the cache), into its rows,
 * sorted while they are hot. Returns the keys' truncation (sort_row). */
static int place_groups_in_rows(box_rows *r, int threads, int shift, int64_t groups,
                                const int64_t *group_start, int64_t largest, void *scratch,
                                const uint16_t *rows, uint32_t *cursors)
{
    int64_t span = (int64_t)1 << shift, occupied = 0;
    int bits = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1) \
    reduction(+ : occupied) reduction(max : bits)
    for (int64_t g = 0; g < groups; g++) {
        int t = omp_get_thread_num();
        int64_t first = group_start[g], count = group_start[g + 1] - first, row0 = g << shift;
        group_part from = group_scratch(scratch, largest, t);
        memcpy(from.box, r->box + first, (size_t)count * sizeof *from.box);
        memcpy(from.key, r->key + first, (size_t)count * sizeof *from.key);
        memcpy(from.row, rows + first, (size_t)count * sizeof *from.row);
        int b = place_group(r, from, count, first, row0, r->rows - row0 < span ? r->rows - row0 : span,
                            cursors + t * span, &occupied);
        bits = b > bits ? b : bits;
    }
    r->start[r->rows] = (uint32_t)r->count;
    r->occupied = occupied;
    return bits;
}

/* Places the boxes and sets the float test's margin. */
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
    if (groups == 1 || largest > n / GROUP_SHARE || shift > MAX_GROUP_SHIFT) {
        prox_free(in->allocator, at);
        r->sure = sure_margin(r, place_directly(r, in, threads));
        return PROX_OK;
    }
    void *scratch = prox_alloc_array(in->allocator, threads, (size_t)group_scratch_bytes(largest));
    uint16_t *rows_within = prox_alloc_array(in->allocator, n, sizeof *rows_within);
    uint32_t *cursors = prox_alloc_array(in->allocator, threads * span, sizeof *cursors);
    bool ok = scratch && rows_within && cursors;
    if (ok) {
        place_in_groups(r, in, threads, shift, groups, group_start, at, rows_within);
        int bits = place_groups_in_rows(r, threads, shift, groups, group_start, largest, scratch,
                                        rows_within, cursors);
        r->sure = sure_margin(r, bits);
    }
    prox_free(in->allocator, scratch);
    prox_free(in->allocator, rows_within);
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

/* Candidate pairs (positions p, q in the rows, packed p << 32 | q, and the
 * row q comes from) are gathered, then tested a batch at a time: appending
 * a window is one store, and the test loop keeps its hits without a branch
 * on each outcome (about half the candidates of W3 overlap: a branch would
 * guess wrong half the time). */
#define BATCH 512
#define LANES 8                          /* candidates one store appends */
#define BATCH_ROOM (BATCH + 5 * LANES)   /* a box adds at most 5 such stores */
static const uint64_t LANE_INDEX[LANES] = {0, 1, 2, 3, 4, 5, 6, 7};

/* Where a candidate's row lies from box p's: its own row, then the half
 * stencil's neighbours (+1, 0), (-1, +1), (0, +1), (+1, +1) in cells along
 * the row axes (neighbour_rows). */
enum { OWN_ROW, NEIGHBOUR_ROWS = 4 };
static const int32_t ROW_SHIFT[1 + NEIGHBOUR_ROWS][2] = {
    {0, 0}, {QUANTA, 0}, {-QUANTA, QUANTA}, {0, QUANTA}, {QUANTA, QUANTA}};

typedef struct sweeper {
    const box_rows *r;
    const prox_aabb *box; /* the caller's boxes as doubles, by id */
    prox_emitter *e;
    int64_t tested, visited;
    int count;
    uint64_t pq[BATCH_ROOM + LANES];    /* a store may write LANES past count */
    uint8_t from[BATCH_ROOM + LANES];   /* the ROW_SHIFT of each candidate */
    prox_pair hit[BATCH_ROOM];
} sweeper;

/* Whether boxes p and q overlap (maybe), and do so by the margins that make
 * the doubles' overlap certain (sure); q's row lies `shift` quanta from
 * p's. */
static inline void row_overlap(const box_rows *r, uint32_t p, uint32_t q, const int32_t *shift,
                               bool *maybe, bool *sure)
{
    const row_box *a = &r->box[p], *b = &r->box[q];
    float ka = r->key[p], kb = r->key[q], s = r->sure;
    bool sweep_maybe = (ka <= b->hi) & (kb <= a->hi);
    bool sweep_sure = (ka + s <= b->hi) & (kb + s <= a->hi);
    int32_t d0 = b->q[2] + shift[0] - a->q[0], d1 = b->q[3] + shift[1] - a->q[1];
    int32_t d2 = a->q[2] - (b->q[0] + shift[0]), d3 = a->q[3] - (b->q[1] + shift[1]);
    int32_t least = d0 < d1 ? d0 : d1;
    least = least < d2 ? least : d2;
    least = least < d3 ? least : d3;
    *maybe = sweep_maybe & (least >= 0);
    *sure = sweep_sure & (least >= Q_SURE);
}

static void test_batch(sweeper *w)
{
    const box_rows *r = w->r;
    int hits = 0;
    for (int c = 0; c < w->count; c++) {
        uint32_t p = (uint32_t)(w->pq[c] >> 32), q = (uint32_t)w->pq[c];
        bool maybe, sure;
        row_overlap(r, p, q, ROW_SHIFT[w->from[c]], &maybe, &sure);
        uint32_t a = r->box[p].id, b = r->box[q].id;
        uint32_t i = a < b ? a : b, j = a ^ b ^ i;
        /* sure implies maybe: they differ only within the margins, where
         * the doubles decide (one branch, rarely taken) */
        if (__builtin_expect(maybe != sure, 0))
            sure = prox_aabb_overlap(&w->box[i], &w->box[j]);
        w->hit[hits] = (prox_pair){i, j};
        hits += sure;
    }
    for (int h = 0; h < hits; h++)
        prox_emit(w->e, w->hit[h].i, w->hit[h].j);
    w->tested += w->count;
    w->count = 0;
}

/* Candidates (p, q) for q in [at, at + count) of the row at `from`;
 * returns the new fill. */
static inline int add_candidates(sweeper *w, int filled, uint32_t p, int64_t at, int64_t count,
                                 int from)
{
    /* A short window in vector stores (LANES written, count kept); at one
     * lane, the loop below stores only what it keeps. */
    if (PQ_W > 1 && count <= LANES && filled + LANES <= BATCH_ROOM) {
        pq_u64 first = pq_set1((uint64_t)p << 32 | (uint64_t)at);
        for (int k = 0; k < LANES; k += PQ_W)
            pq_store(w->pq + filled + k, pq_add(first, pq_load_n(LANE_INDEX + k, PQ_W)));
        memset(w->from + filled, from, LANES);
        return filled + (int)count;
    }
    for (int64_t k = 0; k < count; k++) {
        if (filled == BATCH_ROOM) {
            w->count = filled;
            test_batch(w);
            filled = 0;
        }
        w->pq[filled] = (uint64_t)p << 32 | (uint64_t)(at + k);
        w->from[filled++] = (uint8_t)from;
    }
    return filled;
}

/* A neighbour row's boxes not yet behind the sweep: [at, end), and where
 * the row lies (ROW_SHIFT). */
typedef struct window {
    int64_t at, end;
    int from;
} window;

/* The half of a row's neighbours after it (ROW_SHIFT's order), the
 * non-empty ones. */
static int neighbour_rows(const box_rows *r, int64_t row, window out[NEIGHBOUR_ROWS])
{
    int64_t c0 = row % r->cells[0], c1 = row / r->cells[0];
    int64_t cell[NEIGHBOUR_ROWS][2] = {{c0 + 1, c1}, {c0 - 1, c1 + 1}, {c0, c1 + 1},
                                       {c0 + 1, c1 + 1}};
    int count = 0;
    for (int j = 0; j < (r->row[1] >= 0 ? NEIGHBOUR_ROWS : 1); j++) {
        if (cell[j][0] < 0 || cell[j][0] >= r->cells[0] || cell[j][1] >= r->cells[1])
            continue;
        int64_t other = cell[j][0] + r->cells[0] * cell[j][1];
        if (r->start[other] < r->start[other + 1])
            out[count++] = (window){r->start[other], r->start[other + 1], 1 + j};
    }
    return count;
}

/* The keys x[at .. end) of a row are sorted. Moves `at` past the keys
 * below `lower` and returns how many keys from there are <= hi (lower <=
 * hi). One vector of PV_W keys (it never reads past end) answers both
 * where the window is that short, as in W3 nearly always at 16 lanes: a
 * sorted run of compares is a prefix of the mask, and its popcount
 * replaces a loop whose exit the branch predictor cannot guess. */
static inline int64_t window_of(const float *x, int64_t *at, int64_t end, float lower, float hi)
{
    if (PV_W > 1) { /* one lane tells no more than the loop below */
        int64_t left = end - *at;
        pv_mask live = pv_live(left);
        pv_f32 keys = pv_load_f32_n(x + *at, left);
        int below = prox_lanes_popcount(pv_lt_f32(keys, pv_set1_f32(lower)) & live);
        int upto = prox_lanes_popcount(pv_le_f32(keys, pv_set1_f32(hi)) & live);
        if (upto < PV_W) {
            *at += below;
            return upto - below;
        }
    }
    int64_t q = *at;
    while (q < end && x[q] < lower)
        q++;
    *at = q;
    while (q < end && x[q] <= hi)
        q++;
    return q - *at;
}

/* Each box of the row against the boxes after it in the row, and against
 * the neighbour rows' boxes whose key lies in [key - reach, max]: every
 * pair of the row and every pair across is met once. */
static void sweep_from_row(sweeper *w, int64_t row)
{
    const box_rows *r = w->r;
    int64_t first = r->start[row], end = r->start[row + 1];
    window next[NEIGHBOUR_ROWS];
    int count = first < end ? neighbour_rows(r, row, next) : 0;
    w->visited += 1 + count;
    const float *key = r->key;
    int filled = w->count; /* in a register: the stores to w->pq may alias w->count */
    for (int64_t p = first; p < end; p++) {
        /* from the key: keys are sorted, so lower never falls */
        float hi = r->box[p].hi, lower = key[p] - r->reach;
        int64_t after = p + 1;
        filled = add_candidates(w, filled, (uint32_t)p, p + 1,
                                window_of(key, &after, end, key[p], hi), OWN_ROW);
        for (int j = 0; j < count; j++) {
            window *v = &next[j];
            int64_t n = window_of(key, &v->at, v->end, lower, hi);
            filled = add_candidates(w, filled, (uint32_t)p, v->at, n, v->from);
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
    prox_free(allocator, r->key);
    prox_free(allocator, r->start);
    *r = (box_rows){0};
}

int64_t prox_box_rows_bytes(const box_rows *r)
{
    return r->box_capacity * (int64_t)sizeof *r->box +
           r->key_capacity * (int64_t)sizeof *r->key +
           r->start_capacity * (int64_t)sizeof *r->start;
}
