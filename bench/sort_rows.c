/* sort_rows.c: the row sort alone (docs/design.md, "The row sort"), in
 * cache: passes of ROWS rows of random indices, sorted one at a time
 * (prox_sort_u32) and together (prox_sort_u32_rows), 1,000 passes, best of
 * 7; prints ns per row.
 *
 * Row lengths: TRIES tries at p = 0.49 (30: about 14.7 entries, as W1's
 * sorted buffer holds on average; 60: about 29.4, like its full lists,
 * a fifth past 32). With `above`, each row's p is 0.49 times a uniform
 * draw, as a buffer's row keeps the neighbours above its point: lengths
 * spread from 0 to the full row's, as they do in the grid (TRIES 60
 * above: about 14.7 entries, a sixth of rows up to 4). With `exact`,
 * every row holds TRIES entries.
 *
 * Each pass sorts a fresh copy of rows (the copy is timed too, the same
 * for both) taken from pools of 64 passes' lengths and 2^20 entries at an
 * offset that moves each pass: rows a pass repeated would let the branch
 * predictor learn them, which flatters the insertion sort. With `repeat`,
 * every pass sorts the same rows (how the figures of docs/rejected.md
 * that name it were taken; fair between branch-free networks only).
 *
 *   build/bench_sort_rows [ROWS [TRIES [above|exact|repeat]]]   (defaults 1000 and 30) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/radix_sort.h"

enum { LENGTH_SETS = 64, POOL = 1 << 20 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct rows_pool {
    const uint32_t *len;     /* LENGTH_SETS sets of `rows` lengths */
    const int64_t *total;    /* each set's entries */
    const uint32_t *entries; /* POOL random indices, and room past */
    int64_t rows;
    int repeat; /* every pass the first set's rows */
} rows_pool;

/* Best ns per row over 7 rounds of 1,000 passes, each over a fresh copy
 * of one set's rows. */
static double time_rows(uint32_t *a, const rows_pool *p, int together)
{
    double best = 1e30;
    for (int round = 0; round < 7; round++) {
        int64_t from = 0;
        double t0 = now();
        for (int pass = 0; pass < 1000; pass++) {
            int set = p->repeat ? 0 : pass % LENGTH_SETS;
            const uint32_t *len = p->len + set * p->rows;
            int64_t total = p->total[set];
            if (!p->repeat)
                from = from + total + 1 <= POOL - total ? from + total + 1 : 0;
            memcpy(a, p->entries + from, (size_t)total * sizeof *a);
            if (together) {
                prox_sort_u32_rows(a, len, p->rows);
                continue;
            }
            uint32_t *row = a;
            for (int64_t k = 0; k < p->rows; row += len[k], k++)
                prox_sort_u32(row, len[k]);
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best * 1e9 / (1000.0 * (double)p->rows);
}

int main(int argc, char **argv)
{
    int64_t rows = argc > 1 ? atoll(argv[1]) : 1000;
    int tries = argc > 2 ? atoi(argv[2]) : 30;
    int above = argc > 3 && strcmp(argv[3], "above") == 0;
    int exact = argc > 3 && strcmp(argv[3], "exact") == 0;
    int repeat = argc > 3 && strcmp(argv[3], "repeat") == 0;
    if (rows < 1 || tries < 1 || tries > 1000 || (argc > 3 && !above && !exact && !repeat) ||
        argc > 4 || rows * tries > POOL / 2) {
        fprintf(stderr, "usage: bench_sort_rows [ROWS >= 1 [TRIES 1..1000 [above|exact|repeat]]]"
                        " (ROWS x TRIES up to %d)\n", POOL / 2);
        return 2;
    }
    uint64_t seed = 1;
    uint32_t *len = malloc((size_t)(rows * LENGTH_SETS) * sizeof *len);
    int64_t total[LENGTH_SETS], sum = 0;
    uint32_t *entries = malloc((size_t)(POOL + PROX_SORT_ROWS_SLACK) * sizeof *entries);
    uint32_t *a = malloc((size_t)(POOL + PROX_SORT_ROWS_SLACK) * sizeof *a);
    if (!len || !entries || !a) {
        fprintf(stderr, "bench_sort_rows: out of memory\n");
        return 3;
    }
    for (int set = 0; set < LENGTH_SETS; set++) {
        total[set] = 0;
        for (int64_t k = 0; k < rows; k++) {
            uint64_t p = above ? 49 * (next(&seed) % 1001) : 49 * 1000; /* in 1/100000 */
            uint32_t l = exact ? (uint32_t)tries : 0;
            for (int t = 0; t < tries && !exact; t++)
                l += next(&seed) % 100000 < p;
            len[set * rows + k] = l;
            total[set] += l;
        }
        sum += total[set];
    }
    for (int64_t i = 0; i < POOL + PROX_SORT_ROWS_SLACK; i++)
        entries[i] = (uint32_t)(next(&seed) % 1000000);
    rows_pool pool = {len, total, entries, rows, repeat};
    printf("rows=%lld entries=%.1f one_at_a_time_ns=%.2f together_ns=%.2f\n", (long long)rows,
           (double)sum / LENGTH_SETS, time_rows(a, &pool, 0), time_rows(a, &pool, 1));
    free(len);
    free(entries);
    free(a);
    return 0;
}
