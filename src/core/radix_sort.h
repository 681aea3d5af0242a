/* radix_sort.h: the project's sorts (the fluid-hash chapter: construction by radix sort). */
#ifndef PROX_RADIX_SORT_H
#define PROX_RADIX_SORT_H

#include <stdbool.h>
#include <stdint.h>

#include "prox/pairs.h"

/* Stable LSD radix sort of (keys[i], values[i]) by key, digits of 10 bits
 * (8 beyond 8 threads) laid over the bits that vary between keys: a bit
 * every key shares costs nothing. Keys varying over five digits or more
 * (with 10-bit digits), up to 2^24 of them, are sorted from the top digit
 * down instead (MSD, radix_sort.c), with the same result. tmp_keys and
 * tmp_values are scratch of n elements. The result is in keys/values.
 * values and tmp_values may both be NULL: the keys alone are sorted.
 * Parallel over `threads` (per-thread histograms, scatter in thread
 * order), so the result is identical for every thread count. */
void prox_radix_sort64(uint64_t *keys, uint32_t *values, uint64_t *tmp_keys,
                       uint32_t *tmp_values, int64_t n, int threads);

/* As prox_radix_sort64 without the final copy: returns true when the
 * result is in tmp_keys / tmp_values (then the caller swaps its arrays). */
bool prox_radix_sort64_either(uint64_t *keys, uint32_t *values, uint64_t *tmp_keys,
                              uint32_t *tmp_values, int64_t n, int threads);

/* Pairs sorted by (i, j), the passes reading each pair as one 8-byte word
 * (its halves swapped where the machine is little-endian): the buffer's
 * order without making keys. tmp: n pairs of scratch. The result is in
 * pairs or tmp, whichever is returned. */
prox_pair *prox_radix_sort_pairs(prox_pair *pairs, prox_pair *tmp, int64_t n, int threads);

/* Stable counting sort of the indices 0 .. n-1 by keys[i] < buckets (the
 * flat-array article: the grid's cellStart by counting). out[] receives the indices in key
 * order; starts[] (buckets + 1 entries) the first position of each bucket,
 * starts[buckets] = n. With threads > 1, hist holds (threads - 1) * buckets
 * counters of scratch (each thread counts its block of the input, blocks
 * are placed in thread order), so the result is identical for every thread
 * count. n < 2^32. */
void prox_counting_sort_u32(const uint32_t *keys, int64_t n, int64_t buckets, uint32_t *starts,
                            uint32_t *out, uint32_t *hist, int threads);

/* The same result as prox_counting_sort_u32 (threads = 1) for tables past
 * the L2 cache: the indices go first to slices of 65,536 keys, each then
 * counted and placed in cache, slices in parallel over `threads`. scratch
 * holds prox_counting_sort_sliced_words(n, buckets) words. */
void prox_counting_sort_u32_sliced(const uint32_t *keys, int64_t n, int64_t buckets,
                                   uint32_t *starts, uint32_t *out, uint64_t *scratch,
                                   int threads);
int64_t prox_counting_sort_sliced_words(int64_t n, int64_t buckets);

/* The same sort into a sparse table: instead of every bucket's start, a
 * bit per bucket (occupied[], 64 a word, buckets / 64 + 1 words), per word
 * the occupied buckets before it (rank[], as many), and the start of each
 * occupied bucket in order (run_start[], one more entry: n). In two steps,
 * so that the caller sizes run_start between them:
 *   runs = prox_sparse_sort_occupancy(&s);      the bits, and the count
 *   prox_sparse_sort_place(&s, run_start, out, counts);
 * out[] receives the indices in key order, as prox_counting_sort_u32
 * does; counts holds prox_sparse_sort_counters(threads) counters of
 * scratch, scratch prox_sparse_sort_words(n, buckets) words, kept between
 * the steps. The same result for every thread count. */
typedef struct prox_sparse_sort {
    const uint32_t *keys;
    int64_t n, buckets;
    uint64_t *scratch;
    uint64_t *occupied;
    uint32_t *rank;
    int threads;
} prox_sparse_sort;

int64_t prox_sparse_sort_words(int64_t n, int64_t buckets);
int64_t prox_sparse_sort_counters(int threads);
int64_t prox_sparse_sort_occupancy(const prox_sparse_sort *s);
void prox_sparse_sort_place(const prox_sparse_sort *s, uint32_t *run_start, uint32_t *out,
                            uint32_t *counts);

/* Ascending sort of a small array of indices (neighbour-list rows).
 * Rows of sparse data are mostly of 0, 1 or 2 (W2 at k = 1: a million
 * rows, three in four shorter than 2), which are decided here, inline,
 * without a call; longer ones go to prox_sort_u32_long. */
void prox_sort_u32_long(uint32_t *a, int64_t n);

static inline void prox_sort_u32(uint32_t *a, int64_t n)
{
    if (n > 2) {
        prox_sort_u32_long(a, n);
    } else if (n == 2) {
        uint32_t x = a[0], y = a[1];
        a[0] = x < y ? x : y;
        a[1] = x < y ? y : x;
    }
}

/* Rows laid end to end from a, row k of len[k] entries: each sorted
 * ascending in place; rows of 3 to 32 entries a row a lane in column
 * networks where vectors transpose (AVX-512, AVX2, NEON). The
 * PROX_SORT_ROWS_SLACK words past the last row must be readable and
 * writable: the column
 * networks read whole vectors and write the words past a row's end back
 * as they found them (whole stores; masked ones cost more on Zen 4).
 * Nothing else may write them meanwhile. */
void prox_sort_u32_rows(uint32_t *a, const uint32_t *len, int64_t rows);
#define PROX_SORT_ROWS_SLACK 16 /* the widest vector's words */
/* Rows a caller should hand prox_sort_u32_rows at once: enough to fill
 * its groups (eight classes of length, PV_W rows a group), few enough to
 * stay in cache (docs/design.md, "The row sort"). */
#define PROX_SORT_ROWS_BATCH 256

/* How prox_heap_sort reads and moves the caller's items: whether item a
 * comes before item b, and their exchange; ctx is the caller's. */
typedef bool (*prox_before_fn)(const void *ctx, int64_t a, int64_t b);
typedef void (*prox_swap_fn)(void *ctx, int64_t a, int64_t b);

/* In-place heapsort of items 0 .. n-1: O(n log n) whatever the data and no
 * scratch to size, for structures whose parallel arrays no key sort
 * carries (a cell or row that may hold every box). Inline, so that the
 * callers' constant callbacks are inlined too. */
static inline void prox_heap_sort(void *ctx, int64_t n, prox_before_fn before, prox_swap_fn swap)
{
    for (int64_t end = n, at = n / 2;;) {
        if (at > 0) {
            at--; /* building the heap */
        } else if (--end > 0) {
            swap(ctx, 0, end); /* the largest to the back */
        } else {
            return;
        }
        for (int64_t root = at;;) { /* sift down */
            int64_t child = 2 * root + 1;
            if (child >= end)
                break;
            child += child + 1 < end && before(ctx, child, child + 1);
            if (!before(ctx, root, child))
                break;
            swap(ctx, root, child);
            root = child;
        }
    }
}

#endif
