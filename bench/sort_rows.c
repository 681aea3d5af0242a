/* sort_rows.c: the row sort alone (docs/design.md, "The row sort"), in
 * cache: ROWS rows of random indices whose lengths follow W1's sorted
 * buffer (30 tries at p = 0.49: about 14.7 entries, 15 to 45% of rows past
 * 16), sorted one at a time (prox_sort_u32) and together
 * (prox_sort_u32_rows), 1,000 passes, best of 7; prints ns per row. Each
 * pass sorts a fresh copy of the shuffled rows (the copy is timed too, the
 * same for both: sorted input would flatter the insertion sort). TRIES 60
 * gives rows like W1's full lists (about 29.4 entries, a fifth past 32).
 *
 *   build/bench_sort_rows [ROWS [TRIES]]      (defaults 1000 and 30) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/radix_sort.h"

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

/* Best ns per row over 7 rounds of 1,000 passes, each over a fresh copy of
 * the shuffled rows `given`. */
static double time_rows(uint32_t *a, const uint32_t *given, const uint32_t *len, int64_t rows,
                        int64_t total, int together)
{
    double best = 1e30;
    for (int round = 0; round < 7; round++) {
        double t0 = now();
        for (int pass = 0; pass < 1000; pass++) {
            memcpy(a, given, (size_t)total * sizeof *a);
            if (together) {
                prox_sort_u32_rows(a, len, rows);
                continue;
            }
            uint32_t *p = a;
            for (int64_t k = 0; k < rows; p += len[k], k++)
                prox_sort_u32(p, len[k]);
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best * 1e9 / (1000.0 * (double)rows);
}

int main(int argc, char **argv)
{
    int64_t rows = argc > 1 ? atoll(argv[1]) : 1000;
    int tries = argc > 2 ? atoi(argv[2]) : 30;
    if (rows < 1 || tries < 1 || tries > 1000) {
        fprintf(stderr, "usage: bench_sort_rows [ROWS >= 1 [TRIES 1..1000]]\n");
        return 2;
    }
    uint64_t seed = 1;
    uint32_t *len = malloc((size_t)rows * sizeof *len);
    int64_t total = 0;
    for (int64_t k = 0; len && k < rows; k++) {
        uint32_t l = 0;
        for (int t = 0; t < tries; t++)
            l += next(&seed) % 100 < 49;
        len[k] = l;
        total += l;
    }
    uint32_t *given = malloc((size_t)total * sizeof *given + 64);
    uint32_t *a = malloc((size_t)total * sizeof *a + 64);
    if (!len || !given || !a) {
        fprintf(stderr, "bench_sort_rows: out of memory\n");
        return 3;
    }
    for (int64_t i = 0; i < total; i++)
        given[i] = (uint32_t)(next(&seed) % 1000000);
    printf("rows=%lld entries=%lld one_at_a_time_ns=%.2f together_ns=%.2f\n", (long long)rows,
           (long long)total, time_rows(a, given, len, rows, total, 0),
           time_rows(a, given, len, rows, total, 1));
    free(len);
    free(given);
    free(a);
    return 0;
}
