/* broad_spheres.c: W3's broad phase (unit spheres' boxes, centre +- 1) with
 * one structure, built and paired RUNS times on one object, printing each
 * run's seconds and the best; with PAIRS_ONLY set in the environment the
 * object is built once and only the pairs are timed. The driver behind the
 * kd-tree and sap A/B figures of docs/benchmarks.md marked "scratch driver"
 * from session 9 on:
 *
 *   build/prox gen spheres3d --n 1000000 -o /tmp/w3.f64
 *   cc -O2 -fopenmp -Iinclude bench/broad_spheres.c build/libprox.a -lm -o /tmp/bs
 *   /tmp/bs /tmp/w3.f64 kdtree 5 1
 *
 * Arguments: CENTRES.f64 (raw little-endian doubles, x y z per sphere)
 * ALGO (as --algo: kdtree, sap, grid, ...) RUNS THREADS. Pairs go sorted
 * into a buffer. */
#include <prox/prox.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s CENTRES.f64 ALGO RUNS THREADS\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    int64_t n = ftell(f) / 24;
    fseek(f, 0, SEEK_SET);
    double *centre = malloc((size_t)n * 24 + 8), *bounds = malloc((size_t)n * 48 + 8);
    if (!centre || !bounds || fread(centre, 24, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    fclose(f);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            bounds[6 * i + k] = centre[3 * i + k] - 1;
            bounds[6 * i + 3 + k] = centre[3 * i + k] + 1;
        }
    prox_boxes boxes = prox_boxes_f64(bounds, n, 3);
    prox_broad_desc desc = prox_default_broad_desc();
    desc.threads = atoi(argv[4]);
    prox_broad *broad;
    if (prox_broad_algo_parse(argv[2], &desc.algo) || prox_broad_create(&desc, &broad)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 2;
    }
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    bool pairs_only = getenv("PAIRS_ONLY") != NULL;
    if (pairs_only && prox_broad_build(broad, &boxes)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 1;
    }
    double best = 1e300;
    prox_stats stats = {0};
    for (int r = 0; r < atoi(argv[3]); r++) {
        double t0 = now();
        prox_status st = pairs_only ? PROX_OK : prox_broad_build(broad, &boxes);
        double t1 = now();
        if (!st)
            st = prox_broad_pairs(broad, prox_sink_buffer(&buffer), &stats);
        double t2 = now();
        if (st) {
            fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
            return 1;
        }
        printf("%.4f+%.4f=%.4f  ", t1 - t0, t2 - t1, t2 - t0);
        best = t2 - t0 < best ? t2 - t0 : best;
    }
    printf("pairs=%lld best %.4f\n", (long long)stats.pairs, best);
    prox_broad_destroy(broad);
    prox_pair_buffer_free(&buffer);
    free(centre);
    free(bounds);
    return 0;
}
