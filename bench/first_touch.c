/* first_touch.c: what fresh memory costs on this machine, the floor under
 * every one-shot figure. A one-shot query (the CLI, prox_pairs into a new
 * buffer) writes its output, staging and scratch into pages the kernel
 * must first map and clear; a caller that keeps its buffers and grid
 * between steps pays that once. This maps MB mebibytes, has THREADS
 * threads fault them in as prox's allocator does (MADV_POPULATE_WRITE,
 * each thread its slice), and prints the seconds of each of RUNS rounds
 * and their median.
 *
 *   build/bench_first_touch 230 1 7     # W1's sorted pairs: peak_rss_mb
 *
 * Compare with `prox pairs --stats`' peak_rss_mb and its build_s +
 * query_s, and with the warm figures of bench_grid_points. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* One round: map, fault in by slices, unmap; the seconds to fault in, or
 * -1 where the kernel refuses. */
static double one_round(size_t bytes, int threads)
{
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    size_t slice = (bytes / (size_t)threads + 4095) & ~(size_t)4095;
    int failed = 0;
    double t0 = seconds();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : failed)
    for (int k = 0; k < threads; k++) {
        size_t from = (size_t)k * slice, to = from + slice < bytes ? from + slice : bytes;
        if (from < to)
            failed |= madvise(p + from, to - from, MADV_POPULATE_WRITE) != 0;
    }
    double t = seconds() - t0;
    munmap(p, bytes);
    return failed ? -1 : t;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MB THREADS RUNS\n", argv[0]);
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
        t[r] = one_round((size_t)mb << 20, threads);
        if (t[r] < 0) {
            fprintf(stderr, "%s: the kernel refused to map or fault in %ld MiB "
                    "(MADV_POPULATE_WRITE needs Linux 5.14)\n", argv[0], mb);
            return 1;
        }
        printf("%.4f ", t[r]);
    }
    qsort(t, (size_t)runs, sizeof t[0], by_value);
    printf("MB=%ld threads=%d median %.4f s (%.2f GB/s)\n", mb, threads, t[runs / 2],
           (double)mb * 1048576.0 / t[runs / 2] * 1e-9);
    return 0;
}
