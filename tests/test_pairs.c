/* test_pairs.c: the delivery of gathered pairs (src/pairs.c) into sorted
 * buffers and CSR lists, driven directly through the chunks of
 * pair_sink.h and compared with a reference built by qsort. The cases
 * reach every entry layout of the bucketed delivery: narrow entries with
 * 4,096 and 512 rows a bucket, wide entries, row counts that are not a
 * multiple of a bucket, one array (lent the caller's buffer) and many,
 * on 1 to 3 threads, duplicates included. Unsorted lists must keep each
 * row's arrival order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "core/pair_sink.h"
#include "rng.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct delivery_case {
    const char *name;
    int64_t rows;
    int64_t other_limit; /* query pairs: other ends below this; 0 for self pairs */
    int64_t pairs;
} delivery_case;

static const delivery_case CASES[] = {
    {"self pairs, one bucket", 1000, 0, 9000},
    {"self pairs, 4,097 rows (the last id needs a 13th bit)", 4097, 0, 9000},
    {"self pairs, rows not a multiple of a bucket", 70001, 0, 300000},
    {"self pairs, fewer pairs than rows (sparse sort)", 50000, 0, 20000},
    {"query pairs, other ends up to 2^22 (23 bits, 512 rows a bucket)", 9000, (1 << 22) + 1, 60000},
    {"query pairs, other ends of 27 bits (wide entries)", 9000, 1 << 27, 60000},
    {"query pairs, other ends up to 2^32 - 1", 5000, 0xffffffffll, 40000},
};

/* Pairs for a case: self pairs i < j (a tenth of them repeated), query
 * pairs (q, j) with j anywhere below the limit, the largest included. */
static prox_pair *case_pairs(const delivery_case *c, uint64_t seed)
{
    prox_pair *p = malloc((size_t)(c->pairs + 1) * sizeof *p);
    assert_non_null(p);
    rng r = rng_seeded(seed);
    for (int64_t k = 0; k < c->pairs; k++) {
        if (k > 0 && rng_below(&r, 10) == 0) {
            p[k] = p[rng_below(&r, k)];
            continue;
        }
        if (c->other_limit) {
            prox_index j = k == 0 ? (prox_index)(c->other_limit - 1)
                                  : (prox_index)rng_below(&r, c->other_limit);
            p[k] = (prox_pair){(prox_index)rng_below(&r, c->rows), j};
        } else {
            prox_index a = (prox_index)rng_below(&r, c->rows);
            prox_index b = (prox_index)rng_below(&r, c->rows - 1);
            b += b >= a; /* b != a */
            p[k] = a < b ? (prox_pair){a, b} : (prox_pair){b, a};
        }
    }
    return p;
}

static int by_row_then_other(const void *a, const void *b)
{
    const prox_pair *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

/* Every entry as (row, other): pairs as they are, and for self pairs each
 * reversed as well (lists hold both directions); in arrival order. */
static prox_pair *entries_of(const prox_pair *p, int64_t n, bool both, int64_t *count)
{
    prox_pair *e = malloc((size_t)(2 * n + 1) * sizeof *e);
    assert_non_null(e);
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        e[m++] = p[k];
        if (both)
            e[m++] = (prox_pair){p[k].j, p[k].i};
    }
    *count = m;
    return e;
}

/* The entries grouped by row, arrival order kept within a row (a stable
 * counting pass), or each row sorted. */
static void reference_lists(const prox_pair *e, int64_t m, int64_t rows, bool sorted,
                            int64_t *offsets, prox_index *indices)
{
    memset(offsets, 0, (size_t)(rows + 1) * sizeof *offsets);
    for (int64_t k = 0; k < m; k++)
        offsets[e[k].i + 1]++;
    for (int64_t r = 0; r < rows; r++)
        offsets[r + 1] += offsets[r];
    int64_t *next = malloc((size_t)(rows + 1) * sizeof *next);
    assert_non_null(next);
    memcpy(next, offsets, (size_t)(rows + 1) * sizeof *next);
    for (int64_t k = 0; k < m; k++)
        indices[next[e[k].i]++] = e[k].j;
    free(next);
    if (sorted) {
        for (int64_t r = 0; r < rows; r++) {
            prox_index *row = indices + offsets[r];
            for (int64_t a = 1; a < offsets[r + 1] - offsets[r]; a++) /* rows are short */
                for (int64_t b = a; b > 0 && row[b - 1] > row[b]; b--) {
                    prox_index t = row[b];
                    row[b] = row[b - 1];
                    row[b - 1] = t;
                }
        }
    }
}

/* The pairs handed to `arrays` chunks in blocks of uneven length, then
 * delivered to the sink. */
static prox_status deliver(const prox_pair *p, int64_t n, int arrays, int threads, prox_sink sink,
                           int64_t rows, bool symmetric, prox_workspace *w)
{
    prox_chunks chunks;
    prox_status st = prox_chunks_init(&chunks, arrays, sink, w);
    if (st)
        return st;
    chunks.threads = threads;
    for (int64_t k = 0; k < n; k++) {
        int a = (int)((k / 997 + k / 131) % arrays);
        prox_emit(&chunks.emitter[a], p[k].i, p[k].j);
    }
    int64_t delivered = 0;
    st = prox_chunks_deliver(&chunks, sink, rows, symmetric, &delivered);
    prox_chunks_free(&chunks);
    return st;
}

/* Pairs in the order deliver() hands them to the chunks: array by array. */
static void arrival_order(const prox_pair *p, int64_t n, int arrays, prox_pair *out)
{
    int64_t at = 0;
    for (int a = 0; a < arrays; a++)
        for (int64_t k = 0; k < n; k++)
            if ((int)((k / 997 + k / 131) % arrays) == a)
                out[at++] = p[k];
}

static void check_buffer(const delivery_case *c, const prox_pair *p, int arrays, int threads,
                         prox_workspace *w, const char *context)
{
    prox_pair *want = malloc((size_t)(c->pairs + 1) * sizeof *want);
    assert_non_null(want);
    memcpy(want, p, (size_t)c->pairs * sizeof *want);
    qsort(want, (size_t)c->pairs, sizeof *want, by_row_then_other);
    prox_pair_buffer got;
    prox_pair_buffer_init(&got, NULL);
    CHECK_STATUS(deliver(p, c->pairs, arrays, threads, prox_sink_buffer(&got), c->rows,
                         c->other_limit == 0, w),
                 PROX_OK, context);
    CHECK(got.count == c->pairs, context, "%lld pairs delivered", (long long)got.count);
    int64_t bad = 0;
    while (bad < c->pairs && got.pairs[bad].i == want[bad].i && got.pairs[bad].j == want[bad].j)
        bad++;
    CHECK(bad == c->pairs, context, "pair %lld is (%u, %u), want (%u, %u)", (long long)bad,
          got.pairs[bad].i, got.pairs[bad].j, want[bad].i, want[bad].j);
    prox_pair_buffer_free(&got);
    free(want);
}

static void check_lists(const delivery_case *c, const prox_pair *p, int arrays, int threads,
                        bool sorted, prox_workspace *w, const char *context)
{
    bool symmetric = c->other_limit == 0;
    prox_pair *arrived = malloc((size_t)(c->pairs + 1) * sizeof *arrived);
    assert_non_null(arrived);
    arrival_order(p, c->pairs, arrays, arrived);
    int64_t m;
    prox_pair *e = entries_of(arrived, c->pairs, symmetric, &m);
    int64_t *offsets = malloc((size_t)(c->rows + 1) * sizeof *offsets);
    prox_index *indices = malloc((size_t)(m + 1) * sizeof *indices);
    assert_non_null(offsets);
    assert_non_null(indices);
    reference_lists(e, m, c->rows, sorted, offsets, indices);
    prox_lists got;
    prox_lists_init(&got, NULL);
    prox_sink sink = prox_sink_lists(&got);
    CHECK_STATUS(deliver(p, c->pairs, arrays, threads, sorted ? sink : prox_sink_unsorted(sink),
                         c->rows, symmetric, w),
                 PROX_OK, context);
    CHECK(got.rows == c->rows && got.offsets[c->rows] == m, context, "%lld rows, %lld entries",
          (long long)got.rows, (long long)got.offsets[got.rows]);
    CHECK(memcmp(got.offsets, offsets, (size_t)(c->rows + 1) * sizeof *offsets) == 0, context,
          "row offsets differ");
    CHECK(memcmp(got.indices, indices, (size_t)m * sizeof *indices) == 0, context,
          "row entries differ (%s)", sorted ? "sorted" : "in arrival order");
    prox_lists_free(&got);
    free(offsets);
    free(indices);
    free(e);
    free(arrived);
}

static void deliveries_match_the_reference(void **state)
{
    (void)state;
    static const int ARRAYS[] = {1, 3, 16};
    for (int ci = 0; ci < COUNT(CASES); ci++) {
        const delivery_case *c = &CASES[ci];
        prox_pair *p = case_pairs(c, 700 + (uint64_t)ci);
        prox_workspace w; /* one workspace for every delivery: scratch reused */
        prox_workspace_init(&w, NULL);
        for (int a = 0; a < COUNT(ARRAYS); a++)
            for (int threads = 1; threads <= 3; threads++) {
                char context[160];
                snprintf(context, sizeof context, "%s, %d arrays, %d threads", c->name,
                         ARRAYS[a], threads);
                check_buffer(c, p, ARRAYS[a], threads, &w, context);
                check_lists(c, p, ARRAYS[a], threads, true, &w, context);
                check_lists(c, p, ARRAYS[a], threads, false, &w, context);
            }
        prox_workspace_free(&w);
        free(p);
    }
}

static void nothing_delivers_empty_results(void **state)
{
    (void)state;
    prox_workspace w;
    prox_workspace_init(&w, NULL);
    for (int64_t rows = 0; rows <= 5000; rows += 5000) {
        prox_pair_buffer b;
        prox_pair_buffer_init(&b, NULL);
        prox_lists l;
        prox_lists_init(&l, NULL);
        CHECK_STATUS(deliver(NULL, 0, 3, 2, prox_sink_buffer(&b), rows, true, &w), PROX_OK,
                     "no pairs");
        CHECK_STATUS(deliver(NULL, 0, 3, 2, prox_sink_lists(&l), rows, true, &w), PROX_OK,
                     "no pairs");
        CHECK(b.count == 0 && l.rows == rows && l.offsets[rows] == 0, "no pairs",
              "%lld pairs, %lld rows", (long long)b.count, (long long)l.rows);
        for (int64_t r = 0; r <= rows; r++)
            CHECK(l.offsets[r] == 0, "no pairs", "offset %lld is %lld", (long long)r,
                  (long long)l.offsets[r]);
        prox_pair_buffer_free(&b);
        prox_lists_free(&l);
    }
    prox_workspace_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deliveries_match_the_reference),
        cmocka_unit_test(nothing_delivers_empty_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
