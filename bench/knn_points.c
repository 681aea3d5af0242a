/* knn_points.c: prox_knn timed as bench/knn.sh times every kNN row: the
 * points of a raw .f64 file, each point's k nearest others (itself left
 * out), build and search together, RUNS times; prints the contract's
 * result line (bench/peers/README.md) with the median seconds and, as
 * `count`, a checksum of the neighbours' indices in rank order that every
 * peer's row of the same file must reproduce.
 *
 *   build/bench_knn_points FILE.f64 DIM K RUNS THREADS WORKLOAD [CELL]
 *
 * CELL: open (the default), box (the unit box periodic, prox_knn's
 * minimum images), cell-cube (the same box as a cell, prox_cell_knn) or
 * cell-tri (3D: the points mapped into the triclinic cell of W1's cell
 * rows, docs/workloads.md, volume 1, prox_cell_knn). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, getrusage under strict C11 */
#include <math.h>
#include <string.h>
#include <sys/resource.h>

#include "ab_driver.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sum over queries and ranks c of (c + 1) * index: order-sensitive. */
static unsigned long long checksum(const prox_knn_result *r)
{
    unsigned long long sum = 0;
    for (int64_t q = 0; q < r->rows; q++)
        for (int c = 0; c < r->k; c++)
            sum += (unsigned long long)(c + 1) * r->indices[q * r->k + c];
    return sum;
}

/* The cell of `mode` for prox_cell_knn (its rows), the points mapped
 * into it from the unit box: false for a mode that is not a cell's. */
static bool cell_of(const char *mode, double *xyz, int64_t n, int dim, prox_cell_knn_desc *d)
{
    bool tri = strcmp(mode, "cell-tri") == 0;
    if (!tri && strcmp(mode, "cell-cube") != 0)
        return false;
    double m[3][3] = {{1, 0, 0}, {0.3, 0.95, 0}, {0.2, 0.25, 0.9}}, scale = 1 / cbrt(0.95 * 0.9);
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++)
            d->cell[a][k] = a >= dim || k >= dim ? 0 : tri ? m[a][k] * scale : a == k;
    for (int a = 0; a < dim; a++)
        d->pbc[a] = true;
    for (int64_t i = 0; tri && i < n; i++) {
        double f[3] = {xyz[i * dim], xyz[i * dim + 1], dim == 3 ? xyz[i * dim + 2] : 0};
        for (int k = 0; k < dim; k++)
            xyz[i * dim + k] = (f[0] * d->cell[0][k] + f[1] * d->cell[1][k]) + f[2] * d->cell[2][k];
    }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s FILE.f64 DIM K RUNS THREADS WORKLOAD [CELL]\n", argv[0]);
        return 2;
    }
    const char *mode = argc == 8 ? argv[7] : "open";
    int dim = atoi(argv[2]), k = atoi(argv[3]), runs = atoi(argv[4]);
    int64_t values = 0;
    double *xyz = ab_read_doubles(argv[1], &values);
    if (!xyz || (dim != 2 && dim != 3) || k < 1 || runs < 1 || runs > 1000) {
        fprintf(stderr, "%s: cannot read %s, or a bad DIM, K or RUNS\n", argv[0], argv[1]);
        return 2;
    }
    prox_points points = prox_points_f64(xyz, values / dim, dim);
    prox_knn_desc desc = prox_default_knn_desc();
    desc.k = k;
    desc.threads = atoi(argv[5]);
    prox_cell_knn_desc cell = prox_default_cell_knn_desc();
    cell.k = k;
    cell.threads = desc.threads;
    bool in_cell = cell_of(mode, xyz, points.count, dim, &cell);
    if (strcmp(mode, "box") == 0)
        desc.period[0] = desc.period[1] = desc.period[2 * (dim == 3)] = 1;
    else if (!in_cell && strcmp(mode, "open") != 0) {
        fprintf(stderr, "%s: CELL is open, box, cell-cube or cell-tri, not %s\n", argv[0], mode);
        return 2;
    }
    double seconds[1000];
    unsigned long long sum = 0;
    prox_stats stats;
    for (int r = 0; r < runs; r++) {
        prox_knn_result result;
        prox_knn_result_init(&result, NULL);
        double t0 = ab_now();
        prox_status st = in_cell ? prox_cell_knn(&points, NULL, &cell, &result, &stats)
                                 : prox_knn(&points, NULL, &desc, &result, &stats);
        seconds[r] = ab_now() - t0;
        if (st) {
            fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
            return 1;
        }
        sum = checksum(&result);
        prox_knn_result_free(&result);
    }
    qsort(seconds, (size_t)runs, sizeof seconds[0], by_value);
    double median = seconds[runs / 2];
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    printf("library=prox workload=%s N=%lld build_s=0 query_s=%.6f total_s=%.6f count=%llu "
           "peak_rss_mb=%.1f method=%s candidates_per_query=%.1f index_bytes_per_point=%.1f "
           "threads=%s\n",
           argv[6], (long long)points.count, median, median, sum, (double)u.ru_maxrss / 1024.0,
           stats.method ? stats.method : "none",
           points.count ? (double)stats.candidates / (double)points.count : 0.0,
           points.count ? (double)stats.bytes / (double)points.count : 0.0, argv[5]);
    free(xyz);
    return 0;
}
