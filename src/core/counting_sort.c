/* counting_sort.c: the counting sorts of cell keys (a table of every cell,
 * or slices of it) and the sparse sort into occupancy bits. Plain integer
 * work, the same on every SIMD level: compiled once. */
#include "core/radix_sort.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#define PARALLEL_MIN 65536

/* Counting sort: each thread counts its block's keys, the counts turn into
 * the end of each (bucket, thread) part in bucket-major order, then each
 * thread walks its block backwards placing indices just below those ends,
 * which keeps equal keys in input order. Thread 0 counts in starts[]
 * itself, so afterwards starts[b] is where bucket b begins. One thread
 * runs the same three steps outside a parallel region: the small sorts of
 * a call over a few points (cell_direct.c's reverses, one per structure
 * of a dataset) then pay no team start. */
#define COUNTS_OF(t) ((t) == 0 ? starts : hist + (int64_t)((t) - 1) * buckets)

static void count_block(const uint32_t *keys, int64_t from, int64_t to, uint32_t *count,
                        int64_t buckets)
{
    memset(count, 0, (size_t)buckets * sizeof *count);
    for (int64_t i = from; i < to; i++)
        count[keys[i]]++;
}

static void ends_of(uint32_t *starts, uint32_t *hist, int64_t buckets, int nt)
{
    uint32_t end = 0;
    for (int64_t b = 0; b < buckets; b++)
        for (int u = 0; u < nt; u++) {
            end += COUNTS_OF(u)[b];
            COUNTS_OF(u)[b] = end;
        }
}

static void place_block(const uint32_t *keys, int64_t from, int64_t to, uint32_t *count,
                        uint32_t *out)
{
    for (int64_t i = to - 1; i >= from; i--)
        out[--count[keys[i]]] = (uint32_t)i;
}

void prox_counting_sort_u32(const uint32_t *keys, int64_t n, int64_t buckets, uint32_t *starts,
                            uint32_t *out, uint32_t *hist, int threads)
{
    if (n < PARALLEL_MIN || threads <= 1) {
        count_block(keys, 0, n, starts, buckets);
        ends_of(starts, hist, buckets, 1);
        place_block(keys, 0, n, starts, out);
        starts[buckets] = (uint32_t)n;
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        uint32_t *count = COUNTS_OF(t);
        count_block(keys, n * t / nt, n * (t + 1) / nt, count, buckets);
#pragma omp barrier
#pragma omp single
        ends_of(starts, hist, buckets, nt);
        place_block(keys, n * t / nt, n * (t + 1) / nt, count, out);
    }
    starts[buckets] = (uint32_t)n;
}
#undef COUNTS_OF

/* Tables past the L2 cache (the grid over W1 at 4M points: 0.72M cells,
 * 2.9 MB of counters) are counted a slice of keys at a time. The indices
 * first go to their slices, in order (a few dozen write streams); each
 * slice is then counted and placed with its counters in cache, where
 * counting into the whole table missed at random twice per index. Slices
 * are independent: they run in parallel, with no per-thread counters. The
 * sparse sort below shares the slices. */
#define SLICE_SHIFT 16

static int64_t slice_count(int64_t buckets)
{
    return (buckets + ((int64_t)1 << SLICE_SHIFT) - 1) >> SLICE_SHIFT;
}

/* The indices go to their slices as two arrays, the index (32 bits) and
 * the key's place in its slice (16 bits): 6 bytes a point, then the slices'
 * first entries. */
typedef struct slices {
    uint32_t *index;
    uint16_t *place;
    int64_t *at; /* count + 1: at[k] the first entry of slice k, at[count] = n */
    int64_t count;
} slices;

static int64_t index_words(int64_t n) /* 8-byte words the indices and places take */
{
    return (6 * n + 7) / 8;
}

int64_t prox_counting_sort_sliced_words(int64_t n, int64_t buckets)
{
    return index_words(n) + slice_count(buckets) + 1;
}

static slices slices_in(uint64_t *scratch, int64_t n, int64_t buckets)
{
    uint32_t *index = (uint32_t *)(void *)scratch;
    return (slices){index, (uint16_t *)(void *)(index + n),
                    (int64_t *)(void *)(scratch + index_words(n)), slice_count(buckets)};
}

/* The indices to their slices, in index order (so the sort stays stable). */
static void partition_slices(const uint32_t *keys, int64_t n, const slices *sl)
{
    int64_t *at = sl->at;
    memset(at, 0, (size_t)(sl->count + 1) * sizeof *at);
    for (int64_t i = 0; i < n; i++)
        at[(keys[i] >> SLICE_SHIFT) + 1]++;
    for (int64_t k = 0; k < sl->count; k++)
        at[k + 1] += at[k];
    for (int64_t i = 0; i < n; i++) {
        int64_t t = at[keys[i] >> SLICE_SHIFT]++;
        sl->index[t] = (uint32_t)i;
        sl->place[t] = (uint16_t)keys[i];
    }
    memmove(at + 1, at, (size_t)sl->count * sizeof *at); /* back to slice starts */
    at[0] = 0;
}

/* Slice k's counts of its `keys` buckets into count[], its entries' from
 * first. */
static void count_slice(const slices *sl, int64_t k, int64_t keys, uint32_t *count)
{
    memset(count, 0, (size_t)keys * sizeof *count);
    for (int64_t t = sl->at[k]; t < sl->at[k + 1]; t++)
        count[sl->place[t]]++;
}

/* Slice k's indices to out[], count[] holding each bucket's end: backwards,
 * so that the ends become starts and the order stays stable. */
static void place_slice(const slices *sl, int64_t k, uint32_t *count, uint32_t *out)
{
    for (int64_t t = sl->at[k + 1] - 1; t >= sl->at[k]; t--)
        out[--count[sl->place[t]]] = sl->index[t];
}

static int64_t buckets_of_slice(int64_t k, int64_t buckets)
{
    int64_t first = k << SLICE_SHIFT, last = first + ((int64_t)1 << SLICE_SHIFT);
    return (last < buckets ? last : buckets) - first;
}

void prox_counting_sort_u32_sliced(const uint32_t *keys, int64_t n, int64_t buckets,
                                   uint32_t *starts, uint32_t *out, uint64_t *scratch,
                                   int threads)
{
    slices sl = slices_in(scratch, n, buckets);
    partition_slices(keys, n, &sl);
#pragma omp parallel for num_threads(threads) if (threads > 1 && n >= PARALLEL_MIN) \
    schedule(dynamic, 1)
    for (int64_t k = 0; k < sl.count; k++) { /* counted in the slice's part of the table */
        int64_t keys_k = buckets_of_slice(k, buckets);
        uint32_t *count = starts + (k << SLICE_SHIFT), at = (uint32_t)sl.at[k];
        count_slice(&sl, k, keys_k, count);
        for (int64_t b = 0; b < keys_k; b++) { /* counts to ends */
            at += count[b];
            count[b] = at;
        }
        place_slice(&sl, k, count, out);
    }
    starts[buckets] = (uint32_t)n;
}

/* ---- the same sort into occupancy bits (a sparse table) ---- */

#define SLICE_WORDS ((int64_t)1 << (SLICE_SHIFT - 6)) /* occupancy words a slice */

int64_t prox_sparse_sort_words(int64_t n, int64_t buckets)
{
    return prox_counting_sort_sliced_words(n, buckets) + slice_count(buckets) + 1;
}

static int64_t occupancy_words(int64_t buckets)
{
    return buckets / 64 + 1;
}

/* After the slices (slices_in), the occupied buckets before each slice. */
static int64_t *sparse_before(const prox_sparse_sort *s)
{
    return slices_in(s->scratch, s->n, s->buckets).at + slice_count(s->buckets) + 1;
}

int64_t prox_sparse_sort_occupancy(const prox_sparse_sort *s)
{
    int64_t words = occupancy_words(s->buckets), *before = sparse_before(s);
    slices sl = slices_in(s->scratch, s->n, s->buckets);
    partition_slices(s->keys, s->n, &sl);
    memset(s->occupied, 0, (size_t)words * sizeof *s->occupied);
    before[0] = 0;
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && s->n >= PARALLEL_MIN) \
    schedule(dynamic, 1)
    for (int64_t k = 0; k < sl.count; k++) { /* a slice sets its own words only */
        uint64_t *occupied = s->occupied + k * SLICE_WORDS;
        for (int64_t t = sl.at[k]; t < sl.at[k + 1]; t++)
            occupied[sl.place[t] >> 6] |= 1ull << (sl.place[t] & 63);
        int64_t w1 = (k + 1) * SLICE_WORDS < words ? (k + 1) * SLICE_WORDS : words, count = 0;
        for (int64_t o = k * SLICE_WORDS; o < w1; o++)
            count += __builtin_popcountll(s->occupied[o]);
        before[k + 1] = count;
    }
    for (int64_t k = 0; k < sl.count; k++)
        before[k + 1] += before[k];
    return before[sl.count];
}

/* Slice k: its words' ranks, its occupied buckets' starts (from the run
 * the slices before it end at), its indices to out[]. count: a thread's
 * counters, one a bucket of the slice. */
static void place_sparse_slice(const prox_sparse_sort *s, const slices *sl, int64_t k,
                               uint32_t *run_start, uint32_t *out, uint32_t *count)
{
    count_slice(sl, k, buckets_of_slice(k, s->buckets), count);
    int64_t words = occupancy_words(s->buckets), run = sparse_before(s)[k];
    int64_t o1 = (k + 1) * SLICE_WORDS < words ? (k + 1) * SLICE_WORDS : words;
    int64_t first = k << SLICE_SHIFT;
    uint32_t at = (uint32_t)sl->at[k];
    for (int64_t o = k * SLICE_WORDS; o < o1; o++) {
        s->rank[o] = (uint32_t)run;
        for (uint64_t bits = s->occupied[o]; bits; bits &= bits - 1) {
            int64_t b = o * 64 + __builtin_ctzll(bits) - first;
            run_start[run++] = at;
            at += count[b];
            count[b] = at; /* its end */
        }
    }
    place_slice(sl, k, count, out);
}

void prox_sparse_sort_place(const prox_sparse_sort *s, uint32_t *run_start, uint32_t *out,
                            uint32_t *counts)
{
    slices sl = slices_in(s->scratch, s->n, s->buckets);
    int64_t words = occupancy_words(s->buckets);
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && s->n >= PARALLEL_MIN) \
    schedule(dynamic, 1)
    for (int64_t k = 0; k < sl.count; k++)
        place_sparse_slice(s, &sl, k, run_start, out,
                           counts + (int64_t)omp_get_thread_num() * ((int64_t)1 << SLICE_SHIFT));
    int64_t runs = sparse_before(s)[sl.count];
    for (int64_t o = sl.count * SLICE_WORDS; o < words; o++) /* past the last slice: empty */
        s->rank[o] = (uint32_t)runs;
    run_start[runs] = (uint32_t)s->n;
}

int64_t prox_sparse_sort_counters(int threads)
{
    return (int64_t)(threads > 1 ? threads : 1) << SLICE_SHIFT;
}

