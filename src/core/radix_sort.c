#include "core/radix_sort.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#include "simd/simd.h"
#include "simd/kernel.h"
#include "simd/vec.h"
#include "simd/vec_u64.h"

#define NARROW_BITS 8
#define WIDE_BITS 10
/* Histograms live on the stack, threads x buckets counters (64 KiB): wide
 * digits (fewer passes) for up to 8 threads, narrow ones for up to 32.
 * Digits of 11 and 12 bits measured slower than 10 (on Zen 4). */
#define COUNTERS 8192
#define MAX_THREADS (COUNTERS >> NARROW_BITS)
#define PARALLEL_MIN 65536

/* Keys are 8-byte words read and written through memcpy, so that the same
 * passes sort uint64_t keys and prox_pair records (pairs.c) alike. */
static inline uint64_t load_word(const void *words, int64_t i)
{
    uint64_t w;
    memcpy(&w, (const char *)words + 8 * i, sizeof w);
    return w;
}

static inline void store_word(void *words, int64_t i, uint64_t w)
{
    memcpy((char *)words + 8 * i, &w, sizeof w);
}

/* A digit: `bits` bits, from bit `shift` up, of the word rotated left by
 * `rotate` (0, or 32: the halves swapped). */
typedef struct digit {
    int shift, bits, rotate;
} digit;

/* No branch in the passes' inner loops: rotate 0 gives w | w. */
static inline uint64_t rotated(uint64_t w, int rotate)
{
    return w << rotate | w >> ((64 - rotate) & 63);
}

static inline unsigned digit_of(uint64_t word, digit d)
{
    return (unsigned)(rotated(word, d.rotate) >> d.shift) & ((1u << d.bits) - 1);
}

/* The bits that differ between keys (of the words rotated by `rotate`). */
static uint64_t varying_bits(const void *keys, int64_t n, int rotate, int threads)
{
    uint64_t all_or = 0, all_and = ~0ULL;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static) \
    reduction(| : all_or) reduction(& : all_and)
    for (int64_t i = 0; i < n; i++) {
        uint64_t w = rotated(load_word(keys, i), rotate);
        all_or |= w;
        all_and &= w;
    }
    return all_or ^ all_and;
}

/* The passes: only bits that differ between keys are sorted on (a bit every
 * key shares leaves the order as it is), each digit starting at the lowest
 * varying bit above the previous digit. Returns the number of digits. */
static int plan_digits(uint64_t varying, int bits, int rotate, digit *out)
{
    int count = 0;
    while (varying) {
        int shift = __builtin_ctzll(varying);
        out[count++] = (digit){shift, bits, rotate};
        varying = shift + bits >= 64 ? 0 : varying >> (shift + bits) << (shift + bits);
    }
    return count;
}

static void histogram(const void *keys, int64_t begin, int64_t end, digit d, int64_t *count)
{
    memset(count, 0, ((size_t)1 << d.bits) * sizeof *count);
    for (int64_t i = begin; i < end; i++)
        count[digit_of(load_word(keys, i), d)]++;
}

/* Turn per-thread counts (thread t's at count + t * buckets) into
 * per-thread write positions: digit-major, then thread order, which keeps
 * the sort stable. */
static void offsets_from_counts(int64_t *count, int64_t buckets, int threads)
{
    int64_t sum = 0;
    for (int64_t d = 0; d < buckets; d++)
        for (int t = 0; t < threads; t++) {
            int64_t c = count[t * buckets + d];
            count[t * buckets + d] = sum;
            sum += c;
        }
}

static void scatter(const void *keys, const uint32_t *values, void *out_keys,
                    uint32_t *out_values, int64_t begin, int64_t end, digit d, int64_t *at)
{
    if (!values) { /* keys alone */
        for (int64_t i = begin; i < end; i++) {
            uint64_t w = load_word(keys, i);
            store_word(out_keys, at[digit_of(w, d)]++, w);
        }
        return;
    }
    for (int64_t i = begin; i < end; i++) {
        uint64_t w = load_word(keys, i);
        int64_t to = at[digit_of(w, d)]++;
        store_word(out_keys, to, w);
        out_values[to] = values[i];
    }
}

/* One pass over n records on `threads`: each thread counts its block's
 * digits, the counts become write positions (digit-major, then thread
 * order, which keeps the sort stable), each thread scatters its block.
 * starts, when given, receives where each digit's records begin (and n). */
static void digit_pass(const void *keys, const uint32_t *values, void *out_keys,
                       uint32_t *out_values, int64_t n, digit d, int threads, int64_t *starts)
{
    int64_t buckets = (int64_t)1 << d.bits;
    int64_t count[COUNTERS];
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t begin = n * t / nt, end = n * (t + 1) / nt;
        histogram(keys, begin, end, d, count + t * buckets);
#pragma omp barrier
#pragma omp single
        {
            offsets_from_counts(count, buckets, nt);
            if (starts) { /* thread 0's positions are the digits' starts */
                memcpy(starts, count, (size_t)buckets * sizeof *starts);
                starts[buckets] = n;
            }
        }
        scatter(keys, values, out_keys, out_values, begin, end, d, count + t * buckets);
    }
}

/* ---- most significant digit first, for wide keys ---------------------------
 *
 * With many varying bits (the kd-tree's records: 51 bits, six LSD passes
 * over 6.0M records at W3 1M), the later LSD passes only reorder what the
 * top two digits have already separated: after them a bucket holds a few
 * records (up to MSD_MAX_RECORDS). There the sort goes from the top digit
 * down instead: one parallel pass over everything, then each bucket on its
 * own (in cache after the first level), digits as wide as the bucket
 * needs, down to small buckets (msd_small) sorted by rank or by
 * insertion (sort_small). Each scatter keeps input order within a digit
 * and both small sorts are stable, so the result is the stable sort's, for
 * every thread count. On the kd-tree's records of W3 1M this sort beats the
 * LSD passes (docs/design.md). */
#define MSD_MIN_DIGITS 5
#define MSD_SMALL_INSERTION 16
#if PQ_RANK_SORT /* records (key, value) sorted by rank */
#define MSD_SMALL_RANK 64
#else
#define MSD_SMALL_RANK MSD_SMALL_INSERTION
#endif
/* Two levels of 10-bit digits leave small buckets up to here; past it, a
 * third level of small buckets costs more than the LSD passes save.
 * By insertion (buckets of 16) the limit is 2^24: past it, on the
 * kd-tree's 31M records of W3 5M, the LSD passes win. By rank (buckets of
 * 64) two levels reach 2^26, and there the two sorts are even
 * (docs/design.md). */
#define MSD_MAX_RECORDS(small) ((int64_t)(small) << 2 * WIDE_BITS)

/* The largest bucket sorted whole: rank sorts take records, keys alone go
 * by insertion. */
static inline int64_t msd_small(const uint32_t *values)
{
    return values ? MSD_SMALL_RANK : MSD_SMALL_INSERTION;
}

static void insertion_by_key(uint64_t *k, uint32_t *v, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        uint64_t key = k[i];
        uint32_t value = v ? v[i] : 0;
        int64_t j = i;
        for (; j > 0 && k[j - 1] > key; j--) {
            k[j] = k[j - 1];
            if (v)
                v[j] = v[j - 1];
        }
        k[j] = key;
        if (v)
            v[j] = value;
    }
}

static void copy_records(uint64_t *to_k, uint32_t *to_v, const uint64_t *k, const uint32_t *v,
                         int64_t n)
{
    memcpy(to_k, k, (size_t)n * sizeof *k);
    if (v)
        memcpy(to_v, v, (size_t)n * sizeof *v);
}

#if PQ_RANK_SORT
/* Records [0, n <= 64) of (k, v) into (to_k, to_v) sorted stably, without
 * a branch on the data: each record goes to its rank, the records before
 * it with keys <= its own plus those after it with smaller keys, counted
 * PQ_W keys to a compare. Insertion sort's exits are mispredicted; the
 * kd-tree's 6.0M records of W3 1M end in buckets of 6 on average, and its
 * build is a few percent faster this way. */
static void rank_sort(const uint64_t *k, const uint32_t *v, uint64_t *to_k, uint32_t *to_v,
                      int64_t n)
{
    enum { MAX_BLOCKS = MSD_SMALL_RANK / PQ_W };
    int blocks = (int)((n + PQ_W - 1) / PQ_W);
    pq_u64 key[MAX_BLOCKS];
    pq_mask live[MAX_BLOCKS];
    for (int b = 0; b < blocks; b++) {
        live[b] = pq_live(n - PQ_W * b);
        key[b] = pq_load_n(k + PQ_W * b, n - PQ_W * b);
    }
    for (int i = 0; i < n; i++) {
        pq_u64 x = pq_set1(k[i]);
        int rank = 0;
        for (int b = 0; b < blocks; b++) {
            int before_lanes = i - PQ_W * b; /* lanes of block b before record i */
            pq_mask before = before_lanes <= 0 ? 0 : pq_live(before_lanes);
            pq_mask less = pq_bits(pq_lt_u64(key[b], x)) & live[b];
            pq_mask less_eq = pq_bits(pq_le_u64(key[b], x)) & live[b];
            rank += prox_lanes_popcount((less_eq & before) | (less & ~before));
        }
        to_k[rank] = k[i];
        to_v[rank] = v[i];
    }
}
#endif

/* Records [0, n <= msd_small(v)) of (k, v) sorted (when `varying`: their keys
 * differ somewhere); the result ends in (k, v) when `here`, else in
 * (tk, tv). */
static void sort_small(uint64_t *k, uint32_t *v, uint64_t *tk, uint32_t *tv, int64_t n,
                       bool varying, bool here)
{
#if PQ_RANK_SORT
    if (varying && v && n <= MSD_SMALL_RANK) {
        rank_sort(k, v, tk, tv, n);
        if (here)
            copy_records(k, v, tk, tv, n);
        return;
    }
#endif
    if (varying)
        insertion_by_key(k, v, n);
    if (!here)
        copy_records(tk, tv, k, v, n);
}

/* The digit below the top varying bit: as many bits as a bucket of n
 * needs (up to WIDE_BITS), so that small buckets clear few counters. */
static digit top_digit(uint64_t varying, int64_t n)
{
    int top = 63 - __builtin_clzll(varying), bits = 1;
    while (bits < WIDE_BITS && ((int64_t)1 << bits) < n)
        bits++;
    int shift = top + 1 - bits < 0 ? 0 : top + 1 - bits;
    return (digit){shift, top + 1 - shift, 0};
}

/* Records [0, n) of (k, v) sorted on the varying bits; the result ends in
 * (k, v) when `here`, else in the scratch (tk, tv). */
static void msd_sort(uint64_t *k, uint32_t *v, uint64_t *tk, uint32_t *tv, int64_t n,
                     uint64_t varying, bool here)
{
    if (n <= msd_small(v) || !varying) {
        sort_small(k, v, tk, tv, n, varying != 0, here);
        return;
    }
    digit d = top_digit(varying, n);
    int64_t count[((int64_t)1 << WIDE_BITS) + 1];
    int64_t buckets = (int64_t)1 << d.bits;
    histogram(k, 0, n, d, count);
    int64_t start[((int64_t)1 << WIDE_BITS) + 1];
    offsets_from_counts(count, buckets, 1);
    memcpy(start, count, (size_t)buckets * sizeof *start);
    start[buckets] = n;
    scatter(k, v, tk, tv, 0, n, d, count);
    uint64_t rest = varying & (((uint64_t)1 << d.shift) - 1);
    for (int64_t b = 0; b < buckets; b++) {
        int64_t s = start[b], m = start[b + 1] - s;
        if (m > 0)
            msd_sort(tk + s, tv ? tv + s : NULL, k + s, v ? v + s : NULL, m, rest, !here);
    }
}

/* The first digit over all records in parallel (as an LSD pass), then the
 * buckets in parallel; the result ends in (keys, values), or in the
 * scratch when `in_scratch`. Ending in the scratch, the leaves of two
 * levels sort from the keys into it, with no copy back. */
static void msd_sort_all(uint64_t *keys, uint32_t *values, uint64_t *tmp_keys,
                         uint32_t *tmp_values, int64_t n, uint64_t varying, int threads,
                         bool in_scratch)
{
    digit d = top_digit(varying, n);
    int64_t buckets = (int64_t)1 << d.bits, start[((int64_t)1 << WIDE_BITS) + 1];
    digit_pass(keys, values, tmp_keys, tmp_values, n, d, threads, start);
    uint64_t rest = varying & (((uint64_t)1 << d.shift) - 1);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 1)
    for (int64_t b = 0; b < buckets; b++) {
        int64_t s = start[b], m = start[b + 1] - s;
        if (m > 0)
            msd_sort(tmp_keys + s, values ? tmp_values + s : NULL, keys + s,
                     values ? values + s : NULL, m, rest, in_scratch);
    }
}

/* The passes of the sorts below; returns true when the result ended in
 * the scratch arrays (an odd number of LSD passes ran, or the MSD sort
 * ended there, which it may when `scratch_ok`). */
static bool sort_passes(void *keys, uint32_t *values, void *tmp_keys, uint32_t *tmp_values,
                        int64_t n, int threads, int rotate, bool scratch_ok)
{
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (n < PARALLEL_MIN || threads < 1)
        threads = 1;
    int bits = (threads << WIDE_BITS) <= COUNTERS ? WIDE_BITS : NARROW_BITS;
    digit digits[64];
    uint64_t varying = varying_bits(keys, n, rotate, threads);
    int passes = plan_digits(varying, bits, rotate, digits);
    if (rotate == 0 && bits == WIDE_BITS && passes >= MSD_MIN_DIGITS &&
        n <= MSD_MAX_RECORDS(msd_small(values))) {
        msd_sort_all(keys, values, tmp_keys, tmp_values, n, varying, threads, scratch_ok);
        return scratch_ok;
    }
    void *src_k = keys, *dst_k = tmp_keys;
    uint32_t *src_v = values, *dst_v = tmp_values;
    for (int pass = 0; pass < passes; pass++) {
        digit_pass(src_k, src_v, dst_k, dst_v, n, digits[pass], threads, NULL);
        void *sk = src_k; src_k = dst_k; dst_k = sk;
        uint32_t *sv = src_v; src_v = dst_v; dst_v = sv;
    }
    return src_k != keys;
}

void prox_radix_sort64(uint64_t *keys, uint32_t *values, uint64_t *tmp_keys,
                       uint32_t *tmp_values, int64_t n, int threads)
{
    if (n < 2)
        return;
    if (sort_passes(keys, values, tmp_keys, tmp_values, n, threads, 0, false)) {
        memcpy(keys, tmp_keys, (size_t)n * sizeof *keys);
        if (values)
            memcpy(values, tmp_values, (size_t)n * sizeof *values);
    }
}

bool prox_radix_sort64_either(uint64_t *keys, uint32_t *values, uint64_t *tmp_keys,
                              uint32_t *tmp_values, int64_t n, int threads)
{
    return n >= 2 && sort_passes(keys, values, tmp_keys, tmp_values, n, threads, 0, true);
}


/* Rows of one size class gathered to be sorted together, a row a lane
 * (prox_sort_u32_rows: the column networks). */
#define ROW_GROUP_MAX 16

typedef struct row_group {
    uint32_t *row[ROW_GROUP_MAX];
    int64_t n[ROW_GROUP_MAX];
    int count;
} row_group;

#if PV_TRANSPOSE /* the levels that sort rows in groups */
/* Row `row` of n entries into group g, which `sort` sorts once it holds a
 * row a lane. */
static inline void group_add(row_group *g, uint32_t *row, int64_t n, void (*sort)(row_group *))
{
    g->row[g->count] = row;
    g->n[g->count] = n;
    if (++g->count == PV_W)
        sort(g);
}
#endif

#if PV_ROW_NETWORK
/* The networks' steps are unrolled and inlined, so that each step's
 * shuffle is known at compile time (pv_exchange). */
#define PROX_SORT_INLINE static inline __attribute__((always_inline))
_Static_assert(PV_W == 16, "the networks below are written for 16 lanes");
/* Bitonic sorting networks over 16-lane registers (generated): each step
 * pairs lane i with lane i ^ j; the lane takes the max when (i & j) != 0
 * differs from the direction of its block of size k ((i & k) != 0:
 * descending). */
static const uint16_t net16_mask[10] = {0x6666, 0x3c3c, 0x5a5a, 0x0ff0, 0x33cc, 0x55aa, 0xff00, 0xf0f0, 0xcccc, 0xaaaa};
static const uint8_t net16_xor[10] = {1, 2, 1, 4, 2, 1, 8, 4, 2, 1};
static const uint16_t net32_mask_lo[15] = {0x6666, 0x3c3c, 0x5a5a, 0x0ff0, 0x33cc, 0x55aa, 0xff00, 0xf0f0, 0xcccc, 0xaaaa, 0x0000, 0xff00, 0xf0f0, 0xcccc, 0xaaaa};
static const uint16_t net32_mask_hi[15] = {0x6666, 0x3c3c, 0x5a5a, 0x0ff0, 0x33cc, 0x55aa, 0x00ff, 0x0f0f, 0x3333, 0x5555, 0x0000, 0xff00, 0xf0f0, 0xcccc, 0xaaaa};
static const uint8_t net32_xor[15] = {1, 2, 1, 4, 2, 1, 8, 4, 2, 1, 16, 8, 4, 2, 1};

/* The 16-lane network over one register. */
PROX_SORT_INLINE pv_i32 network16(pv_i32 v)
{
#pragma GCC unroll 10
    for (int s = 0; s < 10; s++)
        v = pv_exchange(v, net16_xor[s], net16_mask[s]);
    return v;
}

/* Registers lo and hi in ascending order lane by lane: a step of distance
 * 16 (a whole register). */
PROX_SORT_INLINE void exchange_registers(pv_i32 *lo, pv_i32 *hi)
{
    pv_i32 mn = pv_min_u32(*lo, *hi);
    *hi = pv_max_u32(*lo, *hi);
    *lo = mn;
}

/* Step s of the 32-lane network over two registers (lo: lanes 0-15). */
PROX_SORT_INLINE void network32_step(pv_i32 *lo, pv_i32 *hi, int s)
{
    if (net32_xor[s] == 16) {
        exchange_registers(lo, hi);
    } else {
        *lo = pv_exchange(*lo, net32_xor[s], net32_mask_lo[s]);
        *hi = pv_exchange(*hi, net32_xor[s], net32_mask_hi[s]);
    }
}

/* The 32-lane network over two registers. */
PROX_SORT_INLINE void network32(pv_i32 *lo, pv_i32 *hi)
{
#pragma GCC unroll 15
    for (int s = 0; s < 15; s++)
        network32_step(lo, hi, s);
}

/* a[0 .. n) padded with UINT32_MAX, which no index reaches, so that the
 * padding sorts last. */
static inline pv_i32 load_padded(const uint32_t *a, int64_t n)
{
    return pv_load_pad_n(a, n, UINT32_MAX);
}

/* n <= 16 */
static void sort_upto16(uint32_t *a, int64_t n)
{
    pv_store_n(a, network16(load_padded(a, n)), n);
}

/* 16 < n <= 32 */
static void sort_upto32(uint32_t *a, int64_t n)
{
    pv_i32 lo = pv_load_n(a, PV_W), hi = load_padded(a + 16, n - 16);
    network32(&lo, &hi);
    pv_store(a, lo);
    pv_store_n(a + 16, hi, n - 16);
}

static const uint8_t net64_k[21] = {2, 4, 4, 8, 8, 8, 16, 16, 16, 16, 32, 32, 32, 32, 32, 64, 64, 64, 64, 64, 64};
static const uint8_t net64_xor[21] = {1, 2, 1, 4, 2, 1, 8, 4, 2, 1, 16, 8, 4, 2, 1, 32, 16, 8, 4, 2, 1};
static const uint16_t net64_mask[21][4] = {
    {0x6666, 0x6666, 0x6666, 0x6666},
    {0x3c3c, 0x3c3c, 0x3c3c, 0x3c3c},
    {0x5a5a, 0x5a5a, 0x5a5a, 0x5a5a},
    {0x0ff0, 0x0ff0, 0x0ff0, 0x0ff0},
    {0x33cc, 0x33cc, 0x33cc, 0x33cc},
    {0x55aa, 0x55aa, 0x55aa, 0x55aa},
    {0xff00, 0x00ff, 0xff00, 0x00ff},
    {0xf0f0, 0x0f0f, 0xf0f0, 0x0f0f},
    {0xcccc, 0x3333, 0xcccc, 0x3333},
    {0xaaaa, 0x5555, 0xaaaa, 0x5555},
    {0x0000, 0x0000, 0x0000, 0x0000},
    {0xff00, 0xff00, 0x00ff, 0x00ff},
    {0xf0f0, 0xf0f0, 0x0f0f, 0x0f0f},
    {0xcccc, 0xcccc, 0x3333, 0x3333},
    {0xaaaa, 0xaaaa, 0x5555, 0x5555},
    {0x0000, 0x0000, 0x0000, 0x0000},
    {0x0000, 0x0000, 0x0000, 0x0000},
    {0xff00, 0xff00, 0xff00, 0xff00},
    {0xf0f0, 0xf0f0, 0xf0f0, 0xf0f0},
    {0xcccc, 0xcccc, 0xcccc, 0xcccc},
    {0xaaaa, 0xaaaa, 0xaaaa, 0xaaaa}};


/* 32 < n <= 64: four registers; distances of 16 and 32 lanes exchange whole
 * registers, whose block direction depends only on the register. */
static void sort_upto64(uint32_t *a, int64_t n)
{
    pv_i32 v[4];
    int64_t live[4]; /* entries in each register */
    for (int r = 0; r < 4; r++) {
        live[r] = n - 16 * r < 0 ? 0 : n - 16 * r;
        v[r] = load_padded(a + 16 * r, live[r]);
    }
#pragma GCC unroll 21 /* unrolled, v[] stays in registers: a loop kept it on the stack */
    for (int s = 0; s < 21; s++) {
        int j = net64_xor[s], k = net64_k[s];
        if (j < 16) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                v[r] = pv_exchange(v[r], j, net64_mask[s][r]);
            continue;
        }
        int jr = j / 16;
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            if (r & jr)
                continue;
            int q = r | jr;
            bool descending = k < 64 && ((16 * r) & k) != 0;
            if (descending)
                exchange_registers(&v[q], &v[r]);
            else
                exchange_registers(&v[r], &v[q]);
        }
    }
    for (int r = 0; r < 4; r++)
        pv_store_n(a + 16 * r, v[r], live[r]);
}
#endif

#if !PV_ROW_NETWORK && PV_W >= 4
/* Rows of 5 to RANK_ROW_MAX entries by rank: each entry's place is the
 * number of entries below it, plus those equal to it and before it
 * (stable), counted for PV_W entries at once against each entry of the
 * row in turn (a broadcast, a compare, an add: no branch on the data, no
 * horizontal sum). The keys are biased by 2^31 so that a signed compare
 * orders them as unsigned; the last vector's dead lanes rank garbage that
 * nothing reads. */
#define RANK_ROW_MAX 64

/* The ranks of a row of distinct keys: each entry's place is the number
 * of entries below it, all of the row's NV vectors counted against one
 * broadcast entry at a time (NV a constant once inlined: the vectors and
 * their counts stay in registers), half the work of the stable form below
 * per entry and vector. Equal keys would share a rank; the caller sees it. */
static PROX_ALWAYS_INLINE void distinct_ranks(const int32_t *key, int64_t n, int32_t *rank, int nv)
{
    pv_i32 x[RANK_ROW_MAX / PV_W], r[RANK_ROW_MAX / PV_W];
    for (int v = 0; v < nv; v++) {
        x[v] = pv_load_n(key + v * PV_W, PV_W);
        r[v] = pv_set1_i32(0);
    }
    for (int64_t j = 0; j < n; j++) {
        pv_i32 b = pv_set1_i32(key[j]);
        for (int v = 0; v < nv; v++)
            r[v] = pv_sub_i32(r[v], pv_gt_i32(x[v], b));
    }
    for (int v = 0; v < nv; v++)
        pv_store(rank + v * PV_W, r[v]);
}

/* distinct_ranks for a row of n <= RANK_ROW_MAX entries, its vector
 * count made a constant. */
static void ranks_of_distinct(const int32_t *key, int64_t n, int32_t *rank)
{
    assert(n <= RANK_ROW_MAX);
    switch ((n + PV_W - 1) / PV_W) {
#define RANKS_CASE(nv)                                                                   \
    case nv:                                                                             \
        distinct_ranks(key, n, rank, nv);                                                \
        return;
        RANKS_CASE(1)
        RANKS_CASE(2)
        RANKS_CASE(3)
        RANKS_CASE(4)
        RANKS_CASE(5)
        RANKS_CASE(6)
        RANKS_CASE(7)
        RANKS_CASE(8)
#if PV_W < 8
        RANKS_CASE(9)
        RANKS_CASE(10)
        RANKS_CASE(11)
        RANKS_CASE(12)
        RANKS_CASE(13)
        RANKS_CASE(14)
        RANKS_CASE(15)
        RANKS_CASE(16)
#endif
#undef RANKS_CASE
    default:
        break;
    }
}

/* The stable ranks, ties by position (rows with equal entries). */
static void stable_ranks(const int32_t *key, int64_t n, int32_t *rank)
{
    for (int64_t i0 = 0; i0 < n; i0 += PV_W) {
        int64_t end = i0 + PV_W < n ? i0 + PV_W : n;
        pv_i32 x = pv_load_n(key + i0, PV_W), lane = pv_iota(i0);
        pv_i32 r = pv_set1_i32((int32_t)i0); /* the entries before: all, less those above */
        for (int64_t j = 0; j < i0; j++)
            r = pv_add_i32(r, pv_gt_i32(pv_set1_i32(key[j]), x));
        for (int64_t j = i0; j < end; j++) { /* the vector's own: ties by position */
            pv_i32 b = pv_set1_i32(key[j]), before = pv_gt_i32(lane, pv_set1_i32((int32_t)j));
            r = pv_sub_i32(r, pv_or(pv_gt_i32(x, b), pv_and(pv_eqv(x, b), before)));
        }
        for (int64_t j = end; j < n; j++) /* the entries after: those below */
            r = pv_sub_i32(r, pv_gt_i32(x, pv_set1_i32(key[j])));
        pv_store(rank + i0, r);
    }
}

static void rank_sort_row(uint32_t *a, int64_t n)
{
    int32_t key[RANK_ROW_MAX + PV_W], rank[RANK_ROW_MAX + PV_W];
    uint32_t out[RANK_ROW_MAX];
    for (int64_t j = 0; j < n; j++)
        key[j] = (int32_t)(a[j] ^ 0x80000000u);
    for (int64_t j = n; j < n + PV_W; j++)
        key[j] = INT32_MAX;
    ranks_of_distinct(key, n, rank);
    uint64_t placed = 0; /* every place taken once: the entries were distinct */
    for (int64_t i = 0; i < n; i++)
        placed |= 1ull << rank[i];
    if (placed != (n == 64 ? ~0ull : (1ull << n) - 1))
        stable_ranks(key, n, rank);
    for (int64_t i = 0; i < n; i++)
        out[rank[i]] = a[i];
    memcpy(a, out, (size_t)n * sizeof *a);
}
#endif

#if PV_TRANSPOSE
/* Rows of 3 to 32 entries, PV_W rows at once, one row a lane: the rows'
 * entries turned into columns a PV_W x PV_W block at a time
 * (pv_transpose), pads of UINT32_MAX past each row's end (they sort last,
 * and ties with real entries of that value change nothing), then
 * Batcher's odd-even merge sort on the columns (every comparator puts the
 * min in the lower column), each comparator a lane-wise min and max of two
 * columns, and the blocks turned back into rows. Rows are grouped by
 * length in steps of four (COLUMN_BUCKETS); a group of rows of at most m
 * entries holds nothing but pads in the columns from m up, and there a
 * comparator changes nothing, so the network keeps only those below m
 * (20 entries: 103 comparators of the 32-column network's 191). The
 * network is fully unrolled over constant indices, so that the columns
 * stay in registers as far as there are registers. */
_Static_assert(PV_W <= ROW_GROUP_MAX, "a row group holds a row per lane");
_Static_assert(PV_W <= PROX_SORT_ROWS_SLACK, "a whole vector read at a row's last entry stays in the slack");

/* Comparator (i, l), i < l as the tables give it: the min to column i. */
static PROX_ALWAYS_INLINE void columns_compare(pv_i32 *e, int i, int l, int m)
{
    if (l >= m) /* nothing but pads from m up */
        return;
    pv_i32 a = e[i], b = e[l];
    e[i] = pv_min_u32(a, b);
    e[l] = pv_max_u32(a, b);
}

/* Batcher's odd-even merge sort (Batcher 1968) on 8, 16 and 32 columns,
 * as (lower, upper) pairs in the order they run, depth first: each half
 * sorted, then the two merged (the even-indexed and odd-indexed columns
 * merged, then the neighbours compared). So the comparators of columns 0-7
 * come first (19), then those of 8-15 (19), the merge of 0-15 (25), and so
 * on up: columns_sort loads a block of PV_W columns just before the first
 * comparator that reads it, and fewer columns are live at once than in the
 * network's level order (which left more of them on the stack at AVX2's 16
 * registers: rejected.md). Written out, so that every index is a constant
 * once the loop over a table unrolls: the recursion written as loops,
 * nested four deep, does not unroll fully, and the columns then leave the
 * registers. */
static const uint8_t merge_network8[19][2] = {
    {0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}, {4, 5}, {6, 7}, {4, 6}, {5, 7}, {5, 6}, {0, 4}, {2, 6}, {2, 4}, {1, 5}, {3, 7}, {3, 5}, {1, 2}, {3, 4}, {5, 6}};
static const uint8_t merge_network16[63][2] = {
    {0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}, {4, 5}, {6, 7}, {4, 6}, {5, 7}, {5, 6}, {0, 4}, {2, 6}, {2, 4}, {1, 5}, {3, 7}, {3, 5}, {1, 2}, {3, 4}, {5, 6}, {8, 9}, {10, 11}, {8, 10}, {9, 11}, {9, 10}, {12, 13}, {14, 15}, {12, 14}, {13, 15}, {13, 14}, {8, 12}, {10, 14}, {10, 12}, {9, 13}, {11, 15}, {11, 13}, {9, 10}, {11, 12}, {13, 14}, {0, 8}, {4, 12}, {4, 8}, {2, 10}, {6, 14}, {6, 10}, {2, 4}, {6, 8}, {10, 12}, {1, 9}, {5, 13}, {5, 9}, {3, 11}, {7, 15}, {7, 11}, {3, 5}, {7, 9}, {11, 13}, {1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}, {13, 14}};
static const uint8_t merge_network32[191][2] = {
    {0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}, {4, 5}, {6, 7}, {4, 6}, {5, 7}, {5, 6}, {0, 4}, {2, 6}, {2, 4}, {1, 5}, {3, 7}, {3, 5}, {1, 2}, {3, 4}, {5, 6}, {8, 9}, {10, 11}, {8, 10}, {9, 11}, {9, 10}, {12, 13}, {14, 15}, {12, 14}, {13, 15}, {13, 14}, {8, 12}, {10, 14}, {10, 12}, {9, 13}, {11, 15}, {11, 13}, {9, 10}, {11, 12}, {13, 14}, {0, 8}, {4, 12}, {4, 8}, {2, 10}, {6, 14}, {6, 10}, {2, 4}, {6, 8}, {10, 12}, {1, 9}, {5, 13}, {5, 9}, {3, 11}, {7, 15}, {7, 11}, {3, 5}, {7, 9}, {11, 13}, {1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}, {13, 14}, {16, 17}, {18, 19}, {16, 18}, {17, 19}, {17, 18}, {20, 21}, {22, 23}, {20, 22}, {21, 23}, {21, 22}, {16, 20}, {18, 22}, {18, 20}, {17, 21}, {19, 23}, {19, 21}, {17, 18}, {19, 20}, {21, 22}, {24, 25}, {26, 27}, {24, 26}, {25, 27}, {25, 26}, {28, 29}, {30, 31}, {28, 30}, {29, 31}, {29, 30}, {24, 28}, {26, 30}, {26, 28}, {25, 29}, {27, 31}, {27, 29}, {25, 26}, {27, 28}, {29, 30}, {16, 24}, {20, 28}, {20, 24}, {18, 26}, {22, 30}, {22, 26}, {18, 20}, {22, 24}, {26, 28}, {17, 25}, {21, 29}, {21, 25}, {19, 27}, {23, 31}, {23, 27}, {19, 21}, {23, 25}, {27, 29}, {17, 18}, {19, 20}, {21, 22}, {23, 24}, {25, 26}, {27, 28}, {29, 30}, {0, 16}, {8, 24}, {8, 16}, {4, 20}, {12, 28}, {12, 20}, {4, 8}, {12, 16}, {20, 24}, {2, 18}, {10, 26}, {10, 18}, {6, 22}, {14, 30}, {14, 22}, {6, 10}, {14, 18}, {22, 26}, {2, 4}, {6, 8}, {10, 12}, {14, 16}, {18, 20}, {22, 24}, {26, 28}, {1, 17}, {9, 25}, {9, 17}, {5, 21}, {13, 29}, {13, 21}, {5, 9}, {13, 17}, {21, 25}, {3, 19}, {11, 27}, {11, 19}, {7, 23}, {15, 31}, {15, 23}, {7, 11}, {15, 19}, {23, 27}, {3, 5}, {7, 9}, {11, 13}, {15, 17}, {19, 21}, {23, 25}, {27, 29}, {1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}, {13, 14}, {15, 16}, {17, 18}, {19, 20}, {21, 22}, {23, 24}, {25, 26}, {27, 28}, {29, 30}};

/* Comparators [from, to) of a network's table on columns e[], of which m live. */
static PROX_ALWAYS_INLINE void columns_run(pv_i32 *e, const uint8_t (*table)[2], int from, int to,
                                           int m)
{
#pragma GCC unroll 200
    for (int c = from; c < to; c++)
        columns_compare(e, table[c][0], table[c][1], m);
}

/* Words [at, at + PV_W) of each of the group's rows, read whole: past a
 * row's end they belong to the rows after it or to the slack past the
 * last (PROX_SORT_ROWS_SLACK), and columns_store_last writes them back as
 * read. */
static PROX_ALWAYS_INLINE void rows_read(const row_group *c, int at, pv_i32 *raw)
{
    for (int r = 0; r < PV_W; r++)
        raw[r] = r < c->count ? pv_load(c->row[r] + at) : pv_set1_i32(0);
}

/* Columns [at, at + PV_W) of the group's rows into e[at ..], padded with
 * UINT32_MAX past each row's end; the words read go to raw[]. */
static PROX_ALWAYS_INLINE void rows_to_columns(const row_group *c, int at, pv_i32 *e, pv_i32 *raw)
{
    rows_read(c, at, raw);
    pv_i32 v[PV_W];
    for (int r = 0; r < PV_W; r++) {
        int64_t len = r < c->count ? c->n[r] : 0;
        v[r] = pv_or(raw[r], pv_gt_i32(pv_iota(at), pv_set1_i32((int32_t)len - 1)));
    }
    pv_transpose(v);
    for (int j = 0; j < PV_W; j++)
        e[at + j] = v[j];
}

/* The blocks of PV_W columns that start in [from, to), those below m,
 * into e[] (at 16 lanes, columns 8-15 came with 0-7); the words of block
 * `last` stay in raw[]. */
static PROX_ALWAYS_INLINE void columns_load(const row_group *c, int from, int to, int m, int last,
                                            pv_i32 *e, pv_i32 *raw)
{
    pv_i32 unused[PV_W];
#pragma GCC unroll 8
    for (int at = (from + PV_W - 1) / PV_W * PV_W; at < to && at < m; at += PV_W)
        rows_to_columns(c, at, e, at == last ? raw : unused);
}

/* Columns [at, at + PV_W) back into rows, each row's words whole: a block
 * that every row of the group fills. */
static PROX_ALWAYS_INLINE void columns_store(const pv_i32 *e, int at, row_group *c)
{
    pv_i32 v[PV_W];
    for (int j = 0; j < PV_W; j++)
        v[j] = e[at + j];
    pv_transpose(v);
    for (int r = 0; r < c->count; r++)
        pv_store(c->row[r] + at, v[r]);
}

/* The block the rows end in, a whole vector a row: the row's sorted words
 * to its end, then the words past it as rows_read found them. Rows go in
 * the order they lie in memory, and before any of the earlier blocks
 * (columns_sort): the words a row writes back past its end are the start
 * of a later row of the group, or of a row no sort is writing. A masked
 * store would write less but costs more on Zen 4 (rejected.md). */
static PROX_ALWAYS_INLINE void columns_store_last(const pv_i32 *e, int at, const pv_i32 *raw,
                                                  row_group *c)
{
    pv_i32 v[PV_W];
    for (int j = 0; j < PV_W; j++)
        v[j] = e[at + j];
    pv_transpose(v);
    for (int r = 0; r < c->count; r++)
        pv_store(c->row[r] + at, pv_blend_n(v[r], raw[r], (int32_t)(c->n[r] - at)));
}

/* The group's rows, each of m - 3 to m entries; n: m rounded up to a
 * power of two. Every row ends in block `last`, the one that holds entry
 * m - 1 (the buckets are four entries wide and start past a multiple of
 * four), and fills the blocks below it. The split points are those of the
 * depth-first tables: 19 comparators sort columns 0-7, 63 sort 0-15, 82
 * add 16-23. */
static PROX_ALWAYS_INLINE void columns_sort(row_group *c, int n, int m)
{
    pv_i32 e[32], raw[PV_W];
    int last = (m - 1) / PV_W * PV_W;
    columns_load(c, 0, 8, m, last, e, raw);
    if (n == 8) {
        columns_run(e, merge_network8, 0, 19, m);
    } else if (n == 16) {
        columns_run(e, merge_network16, 0, 19, m);
        columns_load(c, 8, 16, m, last, e, raw);
        columns_run(e, merge_network16, 19, 63, m);
    } else {
        columns_run(e, merge_network32, 0, 19, m);
        columns_load(c, 8, 16, m, last, e, raw);
        columns_run(e, merge_network32, 19, 63, m);
        columns_load(c, 16, 24, m, last, e, raw);
        columns_run(e, merge_network32, 63, 82, m);
        columns_load(c, 24, 32, m, last, e, raw);
        columns_run(e, merge_network32, 82, 191, m);
    }
    columns_store_last(e, last, raw, c);
#pragma GCC unroll 8
    for (int at = last - PV_W; at >= 0; at -= PV_W)
        columns_store(e, at, c);
    c->count = 0;
}

/* Row lengths 3 to 32 in buckets of four: bucket q holds lengths
 * 4q + 1 .. 4q + 4 (q = 0 .. 7; bucket 0 from 3). Rows of 2 take one
 * compare-exchange, which needs no vectors. */
#define COLUMN_BUCKETS 8
static void columns_sort4(row_group *c) { columns_sort(c, 8, 4); }
static void columns_sort8(row_group *c) { columns_sort(c, 8, 8); }
static void columns_sort12(row_group *c) { columns_sort(c, 16, 12); }
static void columns_sort16(row_group *c) { columns_sort(c, 16, 16); }
static void columns_sort20(row_group *c) { columns_sort(c, 32, 20); }
static void columns_sort24(row_group *c) { columns_sort(c, 32, 24); }
static void columns_sort28(row_group *c) { columns_sort(c, 32, 28); }
static void columns_sort32(row_group *c) { columns_sort(c, 32, 32); }
static void (*const columns_sort_of[COLUMN_BUCKETS])(row_group *) = {
    columns_sort4, columns_sort8, columns_sort12, columns_sort16,
    columns_sort20, columns_sort24, columns_sort28, columns_sort32};
#endif

static inline void sort_one_row(uint32_t *a, int64_t n)
{
#if !PV_ROW_NETWORK && PV_W >= 4
    if (n > 4 && n <= RANK_ROW_MAX) {
        rank_sort_row(a, n);
        return;
    }
#endif
    prox_sort_u32(a, n);
}

/* Each level's sorts of rows by length: where vectors transpose
 * (AVX-512, AVX2, NEON), rows of 3 to 32 entries in column networks, a
 * row a lane, grouped by length in steps of four; other rows one at a
 * time. */
void prox_sort_u32_rows(uint32_t *a, const uint32_t *len, int64_t rows)
{
#if PV_TRANSPOSE
    row_group g[COLUMN_BUCKETS];
    for (int q = 0; q < COLUMN_BUCKETS; q++)
        g[q].count = 0;
    for (int64_t k = 0; k < rows; a += len[k], k++) {
        int64_t n = len[k];
        if (n > 2 && n <= 32) {
            int q = (int)(n - 1) / 4;
            group_add(&g[q], a, n, columns_sort_of[q]);
        } else {
            sort_one_row(a, n);
        }
    }
    for (int q = 0; q < COLUMN_BUCKETS; q++)
        if (g[q].count)
            columns_sort_of[q](&g[q]);
#else
    for (int64_t k = 0; k < rows; a += len[k], k++)
        sort_one_row(a, len[k]);
#endif
}


static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void prox_sort_u32_long(uint32_t *a, int64_t n)
{
#if PV_ROW_NETWORK
    /* up to 4: the insertion sort below (a network's loads, masks and
     * permutes cost more; sparse data's lists are mostly such rows) */
    if (n > 4 && n <= 16) {
        sort_upto16(a, n);
        return;
    }
    if (n > 16 && n <= 32) {
        sort_upto32(a, n);
        return;
    }
    if (n > 32 && n <= 64) {
        sort_upto64(a, n);
        return;
    }
#endif
    if (n > 48) {
        qsort(a, (size_t)n, sizeof *a, compare_u32);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        uint32_t v = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

prox_pair *prox_radix_sort_pairs(prox_pair *pairs, prox_pair *tmp, int64_t n, int threads)
{
    _Static_assert(sizeof(prox_pair) == sizeof(uint64_t), "a pair is one 8-byte word");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int rotate = 0; /* the word reads i : j already */
#else
    int rotate = 32; /* the word reads j : i; swapped, i leads */
#endif
    if (n < 2)
        return pairs;
    return sort_passes(pairs, NULL, tmp, NULL, n, threads, rotate, true) ? tmp : pairs;
}
