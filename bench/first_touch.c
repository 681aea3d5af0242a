/* first_touch.c: what fresh memory costs on this machine, the floor under
 * every one-shot figure. A one-shot query (the CLI, prox_pairs into a new
 * buffer) writes its output, staging and scratch into pages the kernel
 * must first map and clear; a caller that keeps its buffers and grid
 * between steps pays that once. This maps MB mebibytes, has THREADS
 * threads fault them in as prox's allocator does (MADV_POPULATE_WRITE,
 * each thread its slice), and prints the seconds of each of RUNS rounds
 * and their median.
 *
 *   build/bench_first_touch 230 1 7        # W1's sorted pairs: peak_rss_mb
 *   build/bench_first_touch 230 1 7 huge   # its whole 2 MiB pages asked for
 *                                          # as huge pages first, as prox does
 *                                          # with PROX_HUGE_PAGES=1
 *
 * Compare with `prox pairs --stats`' peak_rss_mb and its build_s +
 * query_s, and with the warm figures of bench_grid_points. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define HUGE_PAGE ((size_t)2 << 20)

/* One round: map (with `huge`, on a 2 MiB boundary, asked for as huge
 * pages), fault in by slices, unmap; the seconds to ask and fault in, or
 * -1 where the kernel refuses. */
static double one_round(size_t bytes, int threads, int huge)
{
    size_t mapped = bytes + (huge ? HUGE_PAGE : 0);
    char *base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -1;
    char *p = huge ? (char *)(((uintptr_t)base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1))
                   : base;
    size_t slice = (bytes / (size_t)threads + 4095) & ~(size_t)4095;
    int failed = 0;
    double t0 = seconds();
    if (huge)
        failed |= madvise(p, bytes & ~(HUGE_PAGE - 1), MADV_HUGEPAGE) != 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : failed)
    for (int k = 0; k < threads; k++) {
        size_t from = (size_t)k * slice, to = from + slice < bytes ? from + slice : bytes;
        if (from < to)
            failed |= madvise(p + from, to - from, MADV_POPULATE_WRITE) != 0;
    }
    double t = seconds() - t0;
    munmap(base, mapped);
    return failed ? -1 : t;
}

int main(int argc, char **argv)
{
    int huge = argc == 5 && strcmp(argv[4], "huge") == 0;
    if (argc != 4 && !huge) {
        fprintf(stderr, "usage: %s MB THREADS RUNS [huge]\n", argv[0]);
        return 2;
    }
    long mb = atol(argv[1]);
    int threads = atoi(argv[2]), runs = atoi(argv[3]);
    if (mb < 1 || mb > (1L << 20) || threads < 1 || threads > 1024 || runs < 1 || runs > 1000) {
        fprintf(stderr, "%s: MB in 1..2^20, THREADS in 1..1024, RUNS in 1..1000\n", argv[0]);
        return 2;
    }
    double t[1000];
    for (int r = 0; r < runs; r++) {
        t[r] = one_round((size_t)mb << 20, threads, huge);
        if (t[r] < 0) {
            fprintf(stderr, "%s: the kernel refused to map or fault in %ld MiB "
                    "(MADV_POPULATE_WRITE needs Linux 5.14)\n", argv[0], mb);
            return 1;
        }
        printf("%.4f ", t[r]);
    }
    qsort(t, (size_t)runs, sizeof t[0], by_value);
    printf("MB=%ld threads=%d%s median %.4f s (%.2f GB/s)\n", mb, threads,
           huge ? " huge" : "", t[runs / 2],
           (double)mb * 1048576.0 / t[runs / 2] * 1e-9);
    return 0;
}
