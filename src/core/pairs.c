/* pairs.c: pair buffers, CSR lists, sinks, and the delivery of gathered
 * pairs into sorted buffers and lists (written once for every structure). */
#include "core/pair_sink.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/radix_sort.h"
#include "core/threads.h"

/* ---- public containers ------------------------------------------------- */

void prox_pair_buffer_init(prox_pair_buffer *b, const prox_allocator *allocator)
{
    if (!b)
        return;
    *b = (prox_pair_buffer){0};
    b->allocator = prox_allocator_resolve(allocator);
}

void prox_pair_buffer_free(prox_pair_buffer *b)
{
    if (!b)
        return;
    prox_free(&b->allocator, b->pairs);
    prox_allocator a = b->allocator;
    *b = (prox_pair_buffer){0};
    b->allocator = a;
}

prox_status prox_pair_buffer_reserve(prox_pair_buffer *b, int64_t capacity)
{
    return prox_pair_buffer_reserve_threads(b, capacity, 1);
}

prox_status prox_pair_buffer_reserve_threads(prox_pair_buffer *b, int64_t capacity, int threads)
{
    if (!b)
        return prox_fail(PROX_ERR_INVALID, "prox_pair_buffer_reserve: buffer is NULL");
    if (capacity < 0)
        return prox_fail(PROX_ERR_INVALID, "prox_pair_buffer_reserve: capacity is %lld",
                         (long long)capacity);
    void *p = b->pairs;
    if (!prox_grow_threads(&b->allocator, &p, &b->capacity, capacity, b->count,
                           sizeof(prox_pair), threads))
        return prox_fail(PROX_ERR_NO_MEMORY, "pair buffer: cannot hold %lld pairs",
                         (long long)capacity);
    b->pairs = p;
    return PROX_OK;
}

void prox_lists_init(prox_lists *l, const prox_allocator *allocator)
{
    if (!l)
        return;
    *l = (prox_lists){0};
    l->allocator = prox_allocator_resolve(allocator);
}

void prox_lists_free(prox_lists *l)
{
    if (!l)
        return;
    prox_free(&l->allocator, l->offsets);
    prox_free(&l->allocator, l->indices);
    prox_allocator a = l->allocator;
    *l = (prox_lists){0};
    l->allocator = a;
}

prox_sink prox_sink_count(void)
{
    return (prox_sink){.kind = PROX_SINK_COUNT};
}

prox_sink prox_sink_buffer(prox_pair_buffer *buffer)
{
    return (prox_sink){.kind = PROX_SINK_BUFFER, .buffer = buffer};
}

prox_sink prox_sink_lists(prox_lists *lists)
{
    return (prox_sink){.kind = PROX_SINK_LISTS, .lists = lists};
}

prox_sink prox_sink_callback(prox_pair_fn fn, void *user)
{
    return (prox_sink){.kind = PROX_SINK_CALLBACK, .fn = fn, .user = user};
}

prox_sink prox_sink_unsorted(prox_sink sink)
{
    sink.unsorted = true;
    return sink;
}

/* ---- emitters and chunks ----------------------------------------------- */

bool prox_emitter_grow(prox_emitter *e, int64_t more)
{
    void *p = e->pairs;
    if (!prox_grow(e->allocator, &p, &e->capacity, e->count + more, e->count, sizeof(prox_pair))) {
        e->failed = e->stop = true;
        return false;
    }
    e->pairs = p;
    return true;
}

void prox_workspace_init(prox_workspace *w, const prox_allocator *allocator)
{
    *w = (prox_workspace){.allocator = prox_allocator_resolve(allocator), .threads = 1};
}

void prox_workspace_free(prox_workspace *w)
{
    for (int k = 0; k < w->emitters; k++)
        prox_free(&w->allocator, w->emitter[k].pairs);
    prox_free(&w->allocator, w->emitter);
    for (int k = 0; k < PROX_SCRATCH_SLOTS; k++)
        prox_free(&w->allocator, w->scratch[k]);
    *w = (prox_workspace){.allocator = w->allocator, .threads = w->threads};
}

int64_t prox_workspace_bytes(const prox_workspace *w)
{
    int64_t bytes = (int64_t)w->emitters * (int64_t)sizeof(prox_emitter);
    for (int k = 0; k < w->emitters; k++)
        bytes += w->emitter[k].capacity * (int64_t)sizeof(prox_pair);
    for (int k = 0; k < PROX_SCRATCH_SLOTS; k++)
        bytes += w->scratch_bytes[k];
    return bytes;
}

void *prox_workspace_scratch(prox_workspace *w, int slot, int64_t bytes)
{
    return prox_reserve_threads(&w->allocator, &w->scratch[slot], &w->scratch_bytes[slot],
                                bytes > 0 ? bytes : 1, 1, w->threads)
               ? w->scratch[slot]
               : NULL;
}

void prox_workspace_release(prox_workspace *w, int slot)
{
    prox_free_pages(&w->allocator, w->scratch[slot], w->scratch_bytes[slot]);
    w->scratch[slot] = NULL;
    w->scratch_bytes[slot] = 0;
}

/* At least `count` emitters in the workspace; the old ones keep their arrays. */
static bool workspace_emitters(prox_workspace *w, int count)
{
    if (count <= w->emitters)
        return true;
    prox_emitter *grown = prox_alloc_array(&w->allocator, count, sizeof *grown);
    if (!grown)
        return false;
    for (int k = 0; k < count; k++)
        grown[k] = k < w->emitters ? w->emitter[k] : (prox_emitter){0};
    prox_free(&w->allocator, w->emitter);
    w->emitter = grown;
    w->emitters = count;
    return true;
}

prox_status prox_chunks_init(prox_chunks *c, int count, prox_sink sink, prox_workspace *w)
{
    *c = (prox_chunks){.count = count, .threads = 1, .workspace = w};
    if (!workspace_emitters(w, count))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %d result chunks", count);
    c->emitter = w->emitter;
    for (int k = 0; k < count; k++)
        c->emitter[k] = (prox_emitter){.kind = sink.kind, .allocator = &w->allocator,
                                       .fn = sink.fn, .user = sink.user,
                                       .pairs = c->emitter[k].pairs,
                                       .capacity = c->emitter[k].capacity};
    if (count == 1 && sink.kind == PROX_SINK_BUFFER) {
        /* one chunk stores straight into the caller's buffer (its storage
         * and allocator): in traversal order that is the result itself, and
         * sorted it is sorted where it lies (no copy, no second array) */
        prox_pair_buffer *b = sink.buffer;
        b->count = 0; /* replaced: nothing to keep */
        if (b->capacity < w->last_pairs) /* a new buffer: one allocation, not doublings */
            (void)prox_pair_buffer_reserve(b, w->last_pairs + w->last_pairs / 8);
        c->adopted = b;
        c->own_pairs = c->emitter[0].pairs;
        c->own_capacity = c->emitter[0].capacity;
        c->emitter[0].pairs = b->pairs;
        c->emitter[0].capacity = b->capacity;
        c->emitter[0].allocator = &b->allocator;
    }
    return PROX_OK;
}

void prox_chunks_free(prox_chunks *c)
{
    if (!c->emitter)
        return;
    if (c->adopted) { /* the storage goes back to the buffer (count set on delivery) */
        c->adopted->pairs = c->emitter[0].pairs;
        c->adopted->capacity = c->emitter[0].capacity;
        c->emitter[0].pairs = c->own_pairs;
        c->emitter[0].capacity = c->own_capacity;
        c->emitter[0].allocator = &c->workspace->allocator;
        c->adopted = NULL;
    }
    c->emitter = NULL;
}

/* ---- delivery ----------------------------------------------------------- */

typedef struct pair_source {
    const prox_pair *const *arrays;
    const int64_t *counts;
    int arrays_count;
    int threads;
    bool unsorted; /* keep arrival order (prox_sink_unsorted) */
    prox_workspace *workspace;
} pair_source;

static int64_t source_total(const pair_source *s)
{
    int64_t total = 0;
    for (int a = 0; a < s->arrays_count; a++)
        total += s->counts[a];
    return total;
}

#define PREFIX_BLOCKS 64

void prox_prefix_sums(int64_t *at, int64_t rows, int threads)
{
    int blocks = threads > 1 && rows > 65536 ? PREFIX_BLOCKS : 1;
    int64_t block_sum[PREFIX_BLOCKS + 1] = {0};
#pragma omp parallel num_threads(threads) if (blocks > 1)
    {
#pragma omp for schedule(static)
        for (int k = 0; k < blocks; k++) {
            int64_t sum = 0;
            for (int64_t r = rows * k / blocks; r < rows * (k + 1) / blocks; r++)
                sum += at[r + 1];
            block_sum[k + 1] = sum;
        }
#pragma omp single
        for (int k = 0; k < blocks; k++)
            block_sum[k + 1] += block_sum[k];
#pragma omp for schedule(static)
        for (int k = 0; k < blocks; k++) {
            int64_t sum = block_sum[k];
            for (int64_t r = rows * k / blocks; r < rows * (k + 1) / blocks; r++) {
                sum += at[r + 1];
                at[r + 1] = sum;
            }
        }
    }
}

/* ---- delivery: rows through buckets of consecutive rows ------------------
 *
 * Pairs arrive in arrays (one per chunk) in any order. Each entry of a row
 * (the other end of a pair) first goes to its bucket of 2^shift
 * consecutive rows, packed with its row's place in the bucket into one
 * word. That is a count and a copy into a few hundred sequential streams,
 * where placing each entry in its row at once is a random write into the
 * whole output. A bucket's rows are consecutive, so its output is one
 * contiguous range, starting where its entries start; each bucket (a few
 * hundred KB, in the L2 cache) is then sorted into its rows, its rows
 * sorted, and written straight to that range. The result does not depend
 * on the order the pairs arrived in. Buckets are sorted in parallel. */

#define BUCKET_SHIFT_MAX 12 /* 4,096 rows: W1 1M gives 57,000 pairs a bucket */
#define BUCKET_SHIFT_MIN 6  /* below this, entries go wide (8 bytes) */

typedef struct bucketing {
    int shift;      /* rows per bucket: 2^shift */
    int other_bits; /* narrow entries: (row in bucket) << other_bits | other */
    bool wide;      /* 8-byte entries: (row in bucket) << 32 | other */
    bool both_ends; /* a pair (i, j) is an entry of row i and one of row j */
    int64_t rows, buckets;
    int64_t *start;    /* buckets + 1: where each bucket's entries start */
    int64_t *cursor;   /* arrays x buckets: where array a writes bucket b */
    void *entries;
} bucketing;

static int bits_for(int64_t limit) /* bits that hold every value below limit */
{
    int bits = 1;
    while (bits < 63 && ((int64_t)1 << bits) < limit)
        bits++;
    return bits;
}

/* One more than the largest other end (query pairs: the points' ids). */
static int64_t other_limit(const pair_source *s)
{
    prox_index top = 0;
    for (int a = 0; a < s->arrays_count; a++)
        for (int64_t k = 0; k < s->counts[a]; k++)
            top = s->arrays[a][k].j > top ? s->arrays[a][k].j : top;
    return (int64_t)top + 1;
}

static bucketing plan_buckets(const pair_source *s, int64_t rows, bool symmetric, bool both_ends)
{
    bucketing k = {.rows = rows, .both_ends = both_ends};
    k.other_bits = bits_for(symmetric ? rows : other_limit(s));
    k.shift = 32 - k.other_bits < BUCKET_SHIFT_MAX ? 32 - k.other_bits : BUCKET_SHIFT_MAX;
    if (k.shift < BUCKET_SHIFT_MIN) {
        k.wide = true;
        k.shift = BUCKET_SHIFT_MAX;
    }
    k.buckets = (rows + ((int64_t)1 << k.shift) - 1) >> k.shift;
    return k;
}

/* cursor[a * buckets + b] = entries of bucket b in array a. */
static void count_buckets(const pair_source *s, const bucketing *k)
{
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1) schedule(dynamic, 1)
    for (int a = 0; a < s->arrays_count; a++) {
        int64_t *count = k->cursor + a * k->buckets;
        memset(count, 0, (size_t)k->buckets * sizeof *count);
        const prox_pair *p = s->arrays[a];
        for (int64_t t = 0; t < s->counts[a]; t++) {
            count[p[t].i >> k->shift]++;
            if (k->both_ends)
                count[p[t].j >> k->shift]++;
        }
    }
}

/* Counts to starts: bucket by bucket, array by array within a bucket. */
static void bucket_starts(const pair_source *s, const bucketing *k)
{
    int64_t at = 0;
    for (int64_t b = 0; b < k->buckets; b++) {
        k->start[b] = at;
        for (int a = 0; a < s->arrays_count; a++) {
            int64_t n = k->cursor[a * k->buckets + b];
            k->cursor[a * k->buckets + b] = at;
            at += n;
        }
    }
    k->start[k->buckets] = at;
}

static inline void put_entry(const bucketing *k, int64_t *cursor, prox_index row, prox_index other)
{
    uint64_t low = row & (((uint64_t)1 << k->shift) - 1);
    int64_t at = cursor[row >> k->shift]++;
    if (k->wide)
        ((uint64_t *)k->entries)[at] = low << 32 | other;
    else
        ((uint32_t *)k->entries)[at] = (uint32_t)(low << k->other_bits | other);
}

/* Staging each bucket's entries in a line of its own, written out with
 * streaming stores when full, measured no faster (W1 1M; docs/rejected.md). */
static void fill_buckets(const pair_source *s, const bucketing *k)
{
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1) schedule(dynamic, 1)
    for (int a = 0; a < s->arrays_count; a++) {
        int64_t *cursor = k->cursor + a * k->buckets;
        const prox_pair *p = s->arrays[a];
        for (int64_t t = 0; t < s->counts[a]; t++) {
            put_entry(k, cursor, p[t].i, p[t].j);
            if (k->both_ends)
                put_entry(k, cursor, p[t].j, p[t].i);
        }
    }
}

static inline uint64_t entry_at(const void *entries, bool wide, int64_t t)
{
    return wide ? ((const uint64_t *)entries)[t] : ((const uint32_t *)entries)[t];
}

/* A bucket's m entries into its rows: out[at[r] ..] gets the other ends
 * of the bucket's row r, in arrival order; at has rows + 1 slots. wide is
 * a constant at each call: one pair of loops per entry width. */
static inline void entries_into_rows(const bucketing *k, bool wide, const void *entries,
                                     int64_t m, int64_t rows, int64_t *at, prox_index *out)
{
    int row_shift = wide ? 32 : k->other_bits;
    uint64_t other_mask = wide ? 0xffffffffu : ((uint64_t)1 << k->other_bits) - 1;
    memset(at, 0, (size_t)(rows + 1) * sizeof *at);
    for (int64_t t = 0; t < m; t++)
        at[(entry_at(entries, wide, t) >> row_shift) + 1]++;
    for (int64_t r = 0; r < rows; r++)
        at[r + 1] += at[r];
    for (int64_t t = 0; t < m; t++) { /* at[r] ends as row r + 1's start */
        uint64_t e = entry_at(entries, wide, t);
        out[at[e >> row_shift]++] = (prox_index)(e & other_mask);
    }
    memmove(at + 1, at, (size_t)rows * sizeof *at); /* back to row starts */
    at[0] = 0;
}

/* Bucket b's entries (read from `entries`) sorted into rows at out, each
 * row sorted unless unsorted; returns the bucket's row count. */
static int64_t rows_of_bucket(const bucketing *k, int64_t b, const void *entries, int64_t *at,
                              prox_index *out, bool unsorted)
{
    int64_t first = b << k->shift, rows = (int64_t)1 << k->shift;
    int64_t m = k->start[b + 1] - k->start[b];
    rows = k->rows - first < rows ? k->rows - first : rows;
    if (k->wide)
        entries_into_rows(k, true, entries, m, rows, at, out);
    else
        entries_into_rows(k, false, entries, m, rows, at, out);
    if (!unsorted)
        for (int64_t r = 0; r < rows; r++)
            prox_sort_u32(out + at[r], at[r + 1] - at[r]);
    return rows;
}

static const void *bucket_entries_at(const bucketing *k, int64_t b)
{
    return (const char *)k->entries + k->start[b] * (k->wide ? 8 : 4);
}

/* Buckets planned, counted and filled, into `into` when given (room for
 * every entry), else into scratch; false when out of memory. */
static bool bucket_entries(const pair_source *s, bucketing *k, void *into)
{
    int64_t total = source_total(s) * (k->both_ends ? 2 : 1);
    int64_t words = (k->buckets + 1) + (int64_t)s->arrays_count * k->buckets;
    k->start = prox_workspace_scratch(s->workspace, PROX_SCRATCH_OFFSETS,
                                      words * (int64_t)sizeof(int64_t));
    k->entries = into ? into
                      : prox_workspace_scratch(s->workspace, PROX_SCRATCH_ENTRIES,
                                               total * (k->wide ? 8 : 4));
    if (!k->start || !k->entries)
        return false;
    k->cursor = k->start + k->buckets + 1;
    count_buckets(s, k);
    bucket_starts(s, k);
    fill_buckets(s, k);
    return true;
}

/* The sorted buffer, bucket by bucket. A bucket's rows are first sorted
 * into the upper half of its own range of the buffer (4 of its 8 bytes a
 * pair), then spread forwards into pairs: pair t is written over bytes
 * [8t, 8t + 8), always below entry t + 1, at byte 4m + 4t + 4. */
static void buffer_from_buckets(const bucketing *k, prox_pair_buffer *buf, int threads)
{
#pragma omp parallel for num_threads(threads) if (threads > 1 && k->buckets > 1) \
    schedule(dynamic, 1)
    for (int64_t b = 0; b < k->buckets; b++) {
        int64_t at[((int64_t)1 << BUCKET_SHIFT_MAX) + 1];
        prox_pair *out = buf->pairs + k->start[b];
        prox_index *others = (prox_index *)out + (k->start[b + 1] - k->start[b]);
        int64_t rows = rows_of_bucket(k, b, bucket_entries_at(k, b), at, others, false);
        prox_index first = (prox_index)(b << k->shift);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t t = at[r]; t < at[r + 1]; t++)
                out[t] = (prox_pair){first + (prox_index)r, others[t]};
    }
}

static int64_t largest_bucket(const bucketing *k)
{
    int64_t largest = 0;
    for (int64_t b = 0; b < k->buckets; b++)
        largest = k->start[b + 1] - k->start[b] > largest ? k->start[b + 1] - k->start[b] : largest;
    return largest;
}

/* CSR lists, bucket by bucket. Narrow entries were filled into the
 * indices themselves (a bucket's entries occupy exactly its output range);
 * each bucket is then copied aside to a thread's scratch and sorted back
 * into rows. Wide entries (8 bytes) come from scratch. */
static bool lists_from_buckets(const bucketing *k, prox_lists *l, bool unsorted, int threads,
                               prox_workspace *w)
{
    int64_t largest = k->wide ? 0 : largest_bucket(k);
    /* not the entries' slot: wide entries live there (lists never take the
     * sparse sort, whose slot this is) */
    uint32_t *aside = prox_workspace_scratch(w, PROX_SCRATCH_SORT,
                                             threads * largest * (int64_t)sizeof *aside);
    if (!aside) /* scratch is never NULL but out of memory, even for 0 bytes */
        return false;
#pragma omp parallel num_threads(threads) if (threads > 1 && k->buckets > 1)
    {
        uint32_t *mine = aside + omp_get_thread_num() * largest;
#pragma omp for schedule(dynamic, 1)
        for (int64_t b = 0; b < k->buckets; b++) {
            int64_t at[((int64_t)1 << BUCKET_SHIFT_MAX) + 1];
            prox_index *out = l->indices + k->start[b];
            const void *entries = bucket_entries_at(k, b);
            if (!k->wide) {
                memcpy(mine, out, (size_t)(k->start[b + 1] - k->start[b]) * sizeof *mine);
                entries = mine;
            }
            int64_t rows = rows_of_bucket(k, b, entries, at, out, unsorted);
            for (int64_t r = 0; r < rows; r++)
                l->offsets[(b << k->shift) + r] = k->start[b] + at[r];
        }
    }
    l->offsets[k->rows] = k->start[k->buckets];
    return true;
}

/* Unsorted: the arrays one after the other, copied in parallel. */
static void concatenate(const pair_source *s, prox_pair *out, int64_t total)
{
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && total > 65536) \
    schedule(dynamic, 1)
    for (int a = 0; a < s->arrays_count; a++) {
        int64_t at = 0; /* arrays are few (a few per thread) */
        for (int b = 0; b < a; b++)
            at += s->counts[b];
        if (s->counts[a] > 0 && s->arrays[a] != out + at) /* not already in place */
            memcpy(out + at, s->arrays[a], (size_t)s->counts[a] * sizeof *out);
    }
}

/* Past this many pairs (16 MiB) the sparse sort works in parts, so that
 * its scratch is a part's size, not the pairs' (W3 at 5M: 29 MiB of pairs). */
#define SORT_IN_PARTS_MIN ((int64_t)1 << 21)
#define SORT_PART_LEVELS 3 /* 8 parts */

/* Moves the pairs with i < mid to the front, in place (not stable: the
 * parts are sorted next, and no two pairs are equal); returns how many.
 * Branchless (Lomuto's scheme: every element swapped, the front grown by
 * the comparison): whether a pair lies below is a coin toss. */
static int64_t partition_below(prox_pair *a, int64_t n, prox_index mid)
{
    int64_t front = 0;
    for (int64_t k = 0; k < n; k++) {
        prox_pair v = a[k];
        a[k] = a[front];
        a[front] = v;
        front += v.i < mid;
    }
    return front;
}

/* Cuts the pairs into 2^SORT_PART_LEVELS parts by halving the range of i
 * (all i < rows) level by level; part k starts at start[k]. */
static void cut_parts(prox_pair *pairs, int64_t total, int64_t rows, int64_t *start)
{
    int parts = 1 << SORT_PART_LEVELS;
    start[0] = 0;
    start[parts] = total;
    for (int step = parts; step > 1; step /= 2)
        for (int k = 0; k < parts; k += step) {
            int64_t lo = start[k], hi = start[k + step];
            int64_t mid = rows * (k + step / 2) / parts; /* i below it go first */
            start[k + step / 2] = lo + partition_below(pairs + lo, hi - lo, (prox_index)mid);
        }
}

/* Fewer pairs than rows (W3's boxes: 0.76 pairs per box): the pairs,
 * gathered into the buffer, are radix-sorted there as 8-byte words (one
 * array of scratch), which beats placing them by row, since that walks and
 * allocates per row. Only the bits that vary are sorted on: W3 at 1M, ids
 * of 20 bits, takes 4 passes. Many pairs are first cut in place into parts
 * by i (cut_parts), each sorted with scratch of the largest part's size. */
static prox_status sort_sparse_pairs(const pair_source *s, prox_pair_buffer *b, int64_t total,
                                     int64_t rows)
{
    concatenate(s, b->pairs, total);
    int64_t start[(1 << SORT_PART_LEVELS) + 1] = {0, total};
    int parts = 1;
    if (total >= SORT_IN_PARTS_MIN) {
        parts = 1 << SORT_PART_LEVELS;
        cut_parts(b->pairs, total, rows, start);
    }
    int64_t largest = 0;
    for (int k = 0; k < parts; k++)
        largest = start[k + 1] - start[k] > largest ? start[k + 1] - start[k] : largest;
    prox_pair *tmp = prox_workspace_scratch(s->workspace, PROX_SCRATCH_SORT,
                                            largest * (int64_t)sizeof(prox_pair));
    if (!tmp)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory sorting %lld pairs",
                         (long long)total);
    for (int k = 0; k < parts; k++) {
        prox_pair *part = b->pairs + start[k];
        int64_t count = start[k + 1] - start[k];
        const prox_pair *sorted = prox_radix_sort_pairs(part, tmp, count, s->threads);
        if (sorted != part)
            memcpy(part, sorted, (size_t)count * sizeof *sorted);
    }
    b->count = total;
    return PROX_OK;
}

static prox_status deliver_buffer(const pair_source *s, prox_pair_buffer *b, int64_t rows,
                                  bool symmetric)
{
    int64_t total = source_total(s);
    b->count = 0;
    prox_status st = prox_pair_buffer_reserve_threads(b, total, s->threads);
    if (st)
        return st;
    if (s->unsorted) {
        concatenate(s, b->pairs, total);
        b->count = total;
        return PROX_OK;
    }
    if (total <= rows)
        return sort_sparse_pairs(s, b, total, rows);
    bucketing k = plan_buckets(s, rows, symmetric, false);
    if (!bucket_entries(s, &k, NULL))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory sorting %lld pairs",
                         (long long)total);
    buffer_from_buckets(&k, b, s->threads);
    b->count = total;
    return PROX_OK;
}

prox_status prox_lists_reserve(prox_lists *l, int64_t entries, int64_t rows, int threads)
{
    l->rows = 0;
    void *off = l->offsets, *idx = l->indices;
    bool ok = prox_reserve_threads(&l->allocator, &idx, &l->indices_capacity, entries,
                                   sizeof(prox_index), threads);
    l->indices = idx;
    ok = ok && prox_reserve_threads(&l->allocator, &off, &l->offsets_capacity, rows + 1,
                                    sizeof(int64_t), threads);
    l->offsets = off;
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for lists of %lld entries",
                          (long long)entries);
}

static prox_status deliver_lists(const pair_source *s, prox_lists *l, int64_t rows,
                                 bool symmetric)
{
    int64_t total = source_total(s) * (symmetric ? 2 : 1);
    prox_status st = prox_lists_reserve(l, total, rows, s->threads);
    if (st)
        return st;
    bucketing k = plan_buckets(s, rows, symmetric, symmetric);
    if (!bucket_entries(s, &k, k.wide ? NULL : l->indices) ||
        !lists_from_buckets(&k, l, s->unsorted, s->threads, s->workspace))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for lists of %lld entries",
                         (long long)total);
    l->rows = rows;
    return PROX_OK;
}

static prox_status deliver_source(const pair_source *s, prox_sink sink, int64_t rows,
                                  bool symmetric)
{
    if (sink.kind == PROX_SINK_BUFFER)
        return deliver_buffer(s, sink.buffer, rows, symmetric);
    if (sink.kind == PROX_SINK_LISTS)
        return deliver_lists(s, sink.lists, rows, symmetric);
    return PROX_OK;
}

prox_status prox_chunks_deliver(prox_chunks *c, prox_sink sink, int64_t rows, bool symmetric,
                                int64_t *pairs)
{
    int64_t total = 0;
    bool failed = false, stopped = false;
    for (int k = 0; k < c->count; k++) {
        total += c->emitter[k].count;
        failed |= c->emitter[k].failed;
        stopped |= c->emitter[k].stop;
    }
    *pairs = total;
    c->workspace->last_pairs = total;
    if (failed)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory storing pairs");
    if (stopped)
        return PROX_STOPPED;
    if (sink.kind != PROX_SINK_BUFFER && sink.kind != PROX_SINK_LISTS)
        return PROX_OK;
    if (c->adopted) { /* the one chunk stored into the buffer itself */
        prox_pair_buffer *b = c->adopted;
        b->pairs = c->emitter[0].pairs; /* growth may have moved them */
        b->capacity = c->emitter[0].capacity;
        b->count = total;
        if (sink.unsorted)
            return PROX_OK;
        const prox_pair *own = b->pairs;
        pair_source s = {&own, &total, 1, c->threads > 0 ? c->threads : 1, false, c->workspace};
        prox_status st = deliver_buffer(&s, b, rows, symmetric);
        c->emitter[0].pairs = b->pairs; /* prox_chunks_free gives these back to b: */
        c->emitter[0].capacity = b->capacity; /* the delivery may have allocated them */
        return st;
    }

    const prox_allocator *al = &c->workspace->allocator;
    const prox_pair **arrays = prox_alloc_array(al, c->count, sizeof *arrays);
    int64_t *counts = prox_alloc_array(al, c->count, sizeof *counts);
    prox_status st = PROX_OK;
    if (!arrays || !counts) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "out of memory gathering pairs");
    } else {
        for (int k = 0; k < c->count; k++) {
            arrays[k] = c->emitter[k].pairs;
            counts[k] = c->emitter[k].count;
        }
        pair_source s = {arrays, counts, c->count, c->threads > 0 ? c->threads : 1, sink.unsorted,
                         c->workspace};
        st = deliver_source(&s, sink, rows, symmetric);
    }
    prox_free(al, arrays);
    prox_free(al, counts);
    return st;
}

prox_status prox_pairs_deliver(const prox_pair *pairs, int64_t count, prox_sink sink,
                               int64_t rows, bool symmetric, prox_workspace *w)
{
    if (sink.kind == PROX_SINK_CALLBACK) {
        for (int64_t k = 0; k < count; k++)
            if (sink.fn(pairs[k].i, pairs[k].j, sink.user))
                return PROX_STOPPED;
        return PROX_OK;
    }
    pair_source s = {&pairs, &count, 1, 1, sink.unsorted, w};
    return deliver_source(&s, sink, rows, symmetric);
}

prox_status prox_sink_check(prox_sink sink)
{
    switch (sink.kind) {
    case PROX_SINK_COUNT: return PROX_OK;
    case PROX_SINK_BUFFER:
        return sink.buffer ? PROX_OK : prox_fail(PROX_ERR_INVALID, "buffer sink without a buffer");
    case PROX_SINK_LISTS:
        return sink.lists ? PROX_OK : prox_fail(PROX_ERR_INVALID, "lists sink without lists");
    case PROX_SINK_CALLBACK:
        return sink.fn ? PROX_OK : prox_fail(PROX_ERR_INVALID, "callback sink without a function");
    }
    return prox_fail(PROX_ERR_INVALID, "unknown sink kind %d", (int)sink.kind);
}
