/* test_radix_sort.c: the shared sorts of src/radix_sort.c against a plain
 * stable reference (insertion of each index after the equal keys before
 * it), on sizes below and above the parallel threshold (65536), with 1, 2
 * and 3 threads: results must be identical to the reference, so stability
 * and thread independence are both checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "oracle.h"
#include "core/radix_sort.h"
#include "rng.h"

static const int64_t SIZES[] = {0, 1, 2, 17, 1000, 70001};
static const int THREADS[] = {1, 2, 3};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Stable order of the indices by key: a counting pass over keys < buckets. */
static void reference_order(const uint32_t *keys, int64_t n, int64_t buckets, uint32_t *order,
                            uint32_t *starts)
{
    memset(starts, 0, (size_t)(buckets + 1) * sizeof *starts);
    for (int64_t i = 0; i < n; i++)
        starts[keys[i] + 1]++;
    for (int64_t b = 0; b < buckets; b++)
        starts[b + 1] += starts[b];
    uint32_t *next = malloc((size_t)(buckets + 1) * sizeof *next);
    assert_non_null(next);
    memcpy(next, starts, (size_t)(buckets + 1) * sizeof *next);
    for (int64_t i = 0; i < n; i++)
        order[next[keys[i]]++] = (uint32_t)i;
    free(next);
}

/* Keys < buckets, many repeated (stability matters), some buckets empty. */
static void random_keys(uint32_t *keys, int64_t n, int64_t buckets, uint64_t seed)
{
    rng r = rng_seeded(seed);
    for (int64_t i = 0; i < n; i++)
        keys[i] = (uint32_t)(rng_next(&r) % (uint64_t)buckets) & ~1u; /* odd buckets empty */
}

static void counting_sort_is_stable_and_thread_independent(void **state)
{
    (void)state;
    static const int64_t BUCKETS[] = {2, 7, 4096};
    for (int s = 0; s < COUNT(SIZES); s++)
        for (int b = 0; b < COUNT(BUCKETS); b++) {
            int64_t n = SIZES[s], buckets = BUCKETS[b];
            uint32_t *keys = malloc((size_t)(n + 1) * sizeof *keys);
            uint32_t *want = malloc((size_t)(n + 1) * sizeof *want);
            uint32_t *got = malloc((size_t)(n + 1) * sizeof *got);
            uint32_t *want_starts = malloc((size_t)(buckets + 1) * sizeof *want_starts);
            uint32_t *starts = malloc((size_t)(buckets + 1) * sizeof *starts);
            uint32_t *hist = malloc((size_t)(2 * buckets) * sizeof *hist);
            assert_true(keys && want && got && want_starts && starts && hist);
            random_keys(keys, n, buckets, (uint64_t)(n * 31 + buckets));
            reference_order(keys, n, buckets, want, want_starts);
            for (int t = 0; t < COUNT(THREADS); t++) {
                memset(got, 0xff, (size_t)(n + 1) * sizeof *got);
                prox_counting_sort_u32(keys, n, buckets, starts, got, hist, THREADS[t]);
                if (n > 0)
                    assert_memory_equal(got, want, (size_t)n * sizeof *got);
                assert_memory_equal(starts, want_starts, (size_t)(buckets + 1) * sizeof *starts);
            }
            free(keys), free(want), free(got), free(want_starts), free(starts), free(hist);
        }
}

/* Keys in a few slices of 65,536 only (the others empty), some in the
 * last, partial slice. */
static void clustered_keys(uint32_t *keys, int64_t n, int64_t buckets, uint64_t seed)
{
    rng r = rng_seeded(seed);
    for (int64_t i = 0; i < n; i++) {
        int64_t key = rng_below(&r, 3) * 2 * 65536 + rng_below(&r, 1000); /* slices 0, 2, 4 */
        keys[i] = (uint32_t)(i % 5 == 0 ? buckets - 1 - rng_below(&r, 3) : key);
    }
}

/* The sliced counting sort gives the same indices and table as the
 * reference for tables of many slices, on 1, 2 and 3 threads. */
static void sliced_counting_sort_matches_the_reference(void **state)
{
    (void)state;
    static const int64_t BUCKETS[] = {300000, (1 << 20) + 17};
    for (int b = 0; b < COUNT(BUCKETS); b++)
        for (int clustered = 0; clustered < 2; clustered++) {
            int64_t n = 70001, buckets = BUCKETS[b];
            uint32_t *keys = malloc((size_t)n * sizeof *keys);
            uint32_t *want = malloc((size_t)n * sizeof *want);
            uint32_t *got = malloc((size_t)n * sizeof *got);
            uint32_t *want_starts = malloc((size_t)(buckets + 1) * sizeof *want_starts);
            uint32_t *starts = malloc((size_t)(buckets + 1) * sizeof *starts);
            uint64_t *scratch =
                malloc((size_t)prox_counting_sort_sliced_words(n, buckets) * sizeof *scratch);
            assert_true(keys && want && got && want_starts && starts && scratch);
            if (clustered)
                clustered_keys(keys, n, buckets, (uint64_t)buckets);
            else
                random_keys(keys, n, buckets, (uint64_t)buckets);
            reference_order(keys, n, buckets, want, want_starts);
            for (int t = 0; t < COUNT(THREADS); t++) {
                memset(got, 0xff, (size_t)n * sizeof *got);
                memset(starts, 0xff, (size_t)(buckets + 1) * sizeof *starts);
                prox_counting_sort_u32_sliced(keys, n, buckets, starts, got, scratch,
                                              THREADS[t]);
                assert_memory_equal(got, want, (size_t)n * sizeof *got);
                assert_memory_equal(starts, want_starts, (size_t)(buckets + 1) * sizeof *starts);
            }
            free(keys), free(want), free(got), free(want_starts), free(starts), free(scratch);
        }
}

/* The reference's table as the sparse sort gives it: a bit per occupied
 * bucket, the occupied buckets before each word, and their starts. */
static void expect_sparse_table(const uint32_t *starts, int64_t buckets, const uint64_t *occupied,
                                const uint32_t *rank, const uint32_t *run_start, int64_t runs)
{
    int64_t run = 0;
    for (int64_t b = 0; b < buckets; b++) {
        if (b % 64 == 0)
            assert_int_equal(rank[b / 64], run);
        bool full = starts[b + 1] > starts[b];
        assert_int_equal((occupied[b / 64] >> (b % 64)) & 1, full);
        if (full)
            assert_int_equal(run_start[run++], starts[b]);
    }
    assert_int_equal(run, runs);
    assert_int_equal(run_start[runs], starts[buckets]);
    if (buckets % 64 == 0) /* the word past the last bucket: empty */
        assert_true(occupied[buckets / 64] == 0 && rank[buckets / 64] == runs);
}

/* The sparse sort (occupancy bits, ranks and run starts instead of a
 * table) gives the reference's indices and its table's occupied starts,
 * on 1, 2 and 3 threads; sizes include 0 and 1, and a bucket count that
 * ends a slice and a word exactly. */
static void sparse_counting_sort_matches_the_reference(void **state)
{
    (void)state;
    static const int64_t BUCKETS[] = {1000, 3 << 16, (1 << 20) + 17};
    static const int64_t N[] = {0, 1, 70001};
    for (int b = 0; b < COUNT(BUCKETS); b++)
        for (int z = 0; z < COUNT(N); z++)
            for (int clustered = 0; clustered < 2; clustered++) {
                int64_t n = N[z], buckets = BUCKETS[b], words = buckets / 64 + 1;
                uint32_t *keys = malloc((size_t)(n + 1) * sizeof *keys);
                uint32_t *want = malloc((size_t)(n + 1) * sizeof *want);
                uint32_t *got = malloc((size_t)(n + 1) * sizeof *got);
                uint32_t *starts = malloc((size_t)(buckets + 1) * sizeof *starts);
                uint32_t *run_start = malloc((size_t)(n + 2) * sizeof *run_start);
                uint64_t *occupied = malloc((size_t)words * sizeof *occupied);
                uint32_t *rank = malloc((size_t)words * sizeof *rank);
                uint32_t *counts = malloc((size_t)prox_sparse_sort_counters(3) * sizeof *counts);
                uint64_t *scratch =
                    malloc((size_t)prox_sparse_sort_words(n, buckets) * sizeof *scratch);
                assert_true(keys && want && got && starts && run_start && occupied && rank &&
                            counts && scratch);
                if (clustered && buckets > 5 * 65536)
                    clustered_keys(keys, n, buckets, (uint64_t)buckets);
                else
                    random_keys(keys, n, buckets, (uint64_t)buckets + (uint64_t)n);
                reference_order(keys, n, buckets, want, starts);
                for (int t = 0; t < COUNT(THREADS); t++) {
                    memset(got, 0xff, (size_t)(n + 1) * sizeof *got);
                    memset(occupied, 0xff, (size_t)words * sizeof *occupied);
                    memset(rank, 0xff, (size_t)words * sizeof *rank);
                    prox_sparse_sort s = {keys, n, buckets, scratch, occupied, rank, THREADS[t]};
                    int64_t runs = prox_sparse_sort_occupancy(&s);
                    prox_sparse_sort_place(&s, run_start, got, counts);
                    if (n > 0)
                        assert_memory_equal(got, want, (size_t)n * sizeof *got);
                    expect_sparse_table(starts, buckets, occupied, rank, run_start, runs);
                }
                free(keys), free(want), free(got), free(starts), free(run_start);
                free(occupied), free(rank), free(counts), free(scratch);
            }
}

static int by_key_then_value(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* {key, value} */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Values are the input positions, so a stable sort is the (key, value)
 * order. Narrow keys mix a low varying part with constant and varying high
 * bytes (passes skipped and not: least significant digit first). Wide keys
 * (most significant digit first, down to buckets sorted by insertion) are
 * 300 values spread over all 64 bits, each repeated, or layered: a few
 * values in each of six bit ranges 12 bits apart (six digits), so that
 * buckets stay large through five levels, with 31,500 distinct keys. */
enum key_kind { KEYS_NARROW, KEYS_SPREAD, KEYS_LAYERED, KEY_KINDS };

static uint64_t test_key(uint64_t x, enum key_kind kind)
{
    switch (kind) {
    case KEYS_NARROW: return (x % 300) | ((x >> 40) % 3) << 56 | 0x0000ff0000000000ull;
    case KEYS_SPREAD: {
        rng spread = rng_seeded(x % 300);
        return rng_next(&spread);
    }
    default:
        return (x % 3) << 60 | ((x >> 8) % 5) << 48 | ((x >> 16) % 7) << 36 |
               ((x >> 24) % 6) << 24 | ((x >> 32) % 5) << 12 | (x >> 40) % 10;
    }
}

static void check_stable_sort(int64_t n, enum key_kind kind)
{
    size_t m = (size_t)(n + 1);
    uint64_t *keys0 = malloc(m * 8), *keys = malloc(m * 8), *tmp = malloc(m * 8);
    uint64_t *pairs = malloc(2 * m * 8);
    uint32_t *values = malloc(m * 4), *tmp_values = malloc(m * 4);
    assert_true(keys0 && keys && tmp && pairs && values && tmp_values);
    rng r = rng_seeded((uint64_t)n + 5);
    for (int64_t i = 0; i < n; i++) {
        keys0[i] = test_key(rng_next(&r), kind);
        pairs[2 * i] = keys0[i];
        pairs[2 * i + 1] = (uint64_t)i;
    }
    if (n > 0)
        qsort(pairs, (size_t)n, 16, by_key_then_value);
    for (int t = 0; t < COUNT(THREADS); t++) {
        memcpy(keys, keys0, m * 8);
        for (int64_t i = 0; i < n; i++)
            values[i] = (uint32_t)i;
        prox_radix_sort64(keys, values, tmp, tmp_values, n, THREADS[t]);
        for (int64_t i = 0; i < n; i++) {
            assert_int_equal(keys[i], pairs[2 * i]);
            assert_int_equal(values[i], pairs[2 * i + 1]);
        }
        /* the variant that may leave the result in the scratch */
        memcpy(keys, keys0, m * 8);
        for (int64_t i = 0; i < n; i++)
            values[i] = (uint32_t)i;
        bool moved = prox_radix_sort64_either(keys, values, tmp, tmp_values, n, THREADS[t]);
        const uint64_t *got_keys = moved ? tmp : keys;
        const uint32_t *got_values = moved ? tmp_values : values;
        for (int64_t i = 0; i < n; i++) {
            assert_int_equal(got_keys[i], pairs[2 * i]);
            assert_int_equal(got_values[i], pairs[2 * i + 1]);
        }
    }
    free(keys0), free(keys), free(tmp), free(pairs), free(values), free(tmp_values);
}

static void radix_sort_is_stable_and_thread_independent(void **state)
{
    (void)state;
    for (int s = 0; s < COUNT(SIZES); s++)
        for (int kind = 0; kind < KEY_KINDS; kind++)
            check_stable_sort(SIZES[s], (enum key_kind)kind);
}

static int by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Rows of every length up to 200 (the vector networks cover 16 and 32). */
static void small_sort_matches_qsort(void **state)
{
    (void)state;
    rng r = rng_seeded(77);
    uint32_t a[200], b[200];
    for (int n = 0; n <= 200; n++)
        for (int rep = 0; rep < 4; rep++) {
            for (int i = 0; i < n; i++)
                a[i] = b[i] = rep == 3 ? (uint32_t)(n - i) : (uint32_t)(rng_next(&r) % (rep ? 1000000 : 5));
            prox_sort_u32(a, n);
            qsort(b, (size_t)n, sizeof *b, by_u32);
            if (n > 0)
                assert_memory_equal(a, b, (size_t)n * sizeof *a);
        }
}

/* Rows of mixed lengths laid end to end, sorted together: each row as qsort
 * sorts it, and the slack past the last (PROX_SORT_ROWS_SLACK words and
 * more) as it was. The lengths cycle through every class (short, one
 * register, two, 33 to 64, longer) in runs long and short, so that partly
 * filled groups of rows are sorted too. */
static void rows_sorted_together_match_qsort(void **state)
{
    (void)state;
    enum { ROWS = 1400, MAX_LEN = 70, GUARD = PROX_SORT_ROWS_SLACK + 4 };
    const uint32_t mark = 0xdeadbeefu;
    rng r = rng_seeded(78);
    uint32_t *len = malloc(ROWS * sizeof *len);
    uint32_t *rows = malloc((ROWS * MAX_LEN + GUARD) * sizeof *rows);
    uint32_t *expect = malloc(ROWS * MAX_LEN * sizeof *expect);
    assert_non_null(len);
    assert_non_null(rows);
    assert_non_null(expect);
    for (int take = 1; take <= ROWS; take = take < 40 ? take + 1 : take * 2) {
        int64_t total = 0;
        for (int k = 0; k < take; k++) {
            int cls = (int)(rng_next(&r) % 8);
            len[k] = cls < 3   ? (uint32_t)(rng_next(&r) % 17)      /* up to 16 */
                     : cls < 6 ? 17 + (uint32_t)(rng_next(&r) % 16) /* 17 to 32 */
                     : cls < 7 ? 33 + (uint32_t)(rng_next(&r) % 32) /* 33 to 64 */
                               : (uint32_t)(rng_next(&r) % MAX_LEN);
            for (uint32_t t = 0; t < len[k]; t++)
                rows[total + t] = expect[total + t] =
                    k % 3 == 0   ? (uint32_t)(rng_next(&r) % 7u) /* some with ties */
                    : k % 3 == 1 ? (uint32_t)(rng_next(&r) % 1000000u)
                                 : (uint32_t)rng_next(&r); /* above 2^31 too */
            if (k % 3 != 0 && k % 4 == 1 && len[k] >= 2) /* one tie among distinct entries */
                rows[total + len[k] - 1] = expect[total + len[k] - 1] = rows[total + len[k] / 2];
            qsort(expect + total, len[k], sizeof *expect, by_u32);
            total += len[k];
        }
        for (int t = 0; t < GUARD; t++)
            rows[total + t] = mark;
        prox_sort_u32_rows(rows, len, take);
        if (total > 0)
            assert_memory_equal(rows, expect, (size_t)total * sizeof *rows);
        for (int t = 0; t < GUARD; t++)
            assert_int_equal(rows[total + t], mark);
    }
    free(len);
    free(rows);
    free(expect);
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* values = NULL: the keys alone, as qsort orders them, for every thread
 * count; 40-bit keys (the sparse pair delivery's) and full 64-bit ones. */
static void radix_sort_of_keys_alone_matches_qsort(void **state)
{
    (void)state;
    for (int s = 0; s < COUNT(SIZES); s++)
        for (int t = 0; t < COUNT(THREADS); t++)
            for (int wide = 0; wide < 2; wide++) {
                int64_t n = SIZES[s];
                uint64_t *keys = malloc((size_t)(n + 1) * sizeof *keys);
                uint64_t *want = malloc((size_t)(n + 1) * sizeof *want);
                uint64_t *tmp = malloc((size_t)(n + 1) * sizeof *tmp);
                assert_true(keys && want && tmp);
                rng r = rng_seeded(500 + (uint64_t)s);
                for (int64_t i = 0; i < n; i++)
                    keys[i] = wide ? rng_next(&r) : rng_next(&r) & ((UINT64_C(1) << 40) - 1);
                memcpy(want, keys, (size_t)n * sizeof *keys);
                qsort(want, (size_t)n, sizeof *want, by_u64);
                prox_radix_sort64(keys, NULL, tmp, NULL, n, THREADS[t]);
                if (n > 0)
                    assert_memory_equal(keys, want, (size_t)n * sizeof *keys);
                free(keys);
                free(want);
                free(tmp);
            }
}

/* Pairs sorted as 8-byte words (radix_sort.c swaps the halves on a
 * little-endian machine so that i leads) equal qsort by (i, j): ids of 20
 * bits (W3's), of 32 bits, and many repeated i. */
static void radix_sort_of_pairs_matches_qsort(void **state)
{
    (void)state;
    for (int s = 0; s < COUNT(SIZES); s++)
        for (int t = 0; t < COUNT(THREADS); t++)
            for (int kind = 0; kind < 3; kind++) {
                int64_t n = SIZES[s];
                prox_pair *pairs = malloc((size_t)(n + 1) * sizeof *pairs);
                prox_pair *want = malloc((size_t)(n + 1) * sizeof *want);
                prox_pair *tmp = malloc((size_t)(n + 1) * sizeof *tmp);
                assert_true(pairs && want && tmp);
                rng r = rng_seeded(700 + (uint64_t)s);
                for (int64_t k = 0; k < n; k++) {
                    uint64_t a = rng_next(&r), b = rng_next(&r);
                    pairs[k] = kind == 0   ? (prox_pair){(uint32_t)(a & 0xfffff), (uint32_t)(b & 0xfffff)}
                               : kind == 1 ? (prox_pair){(uint32_t)a, (uint32_t)b}
                                           : (prox_pair){(uint32_t)(a & 7), (uint32_t)b};
                }
                memcpy(want, pairs, (size_t)n * sizeof *pairs);
                qsort(want, (size_t)n, sizeof *want, compare_pairs);
                const prox_pair *got = prox_radix_sort_pairs(pairs, tmp, n, THREADS[t]);
                if (n > 0)
                    assert_memory_equal(got, want, (size_t)n * sizeof *want);
                free(pairs);
                free(want);
                free(tmp);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counting_sort_is_stable_and_thread_independent),
        cmocka_unit_test(sliced_counting_sort_matches_the_reference),
        cmocka_unit_test(sparse_counting_sort_matches_the_reference),
        cmocka_unit_test(radix_sort_is_stable_and_thread_independent),
        cmocka_unit_test(small_sort_matches_qsort),
        cmocka_unit_test(rows_sorted_together_match_qsort),
        cmocka_unit_test(radix_sort_of_keys_alone_matches_qsort),
        cmocka_unit_test(radix_sort_of_pairs_matches_qsort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
