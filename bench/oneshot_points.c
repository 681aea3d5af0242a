/* oneshot_points.c: the one-shot prox_pairs call, RUNS times, each into a
 * fresh buffer (or lists) released after the run, as a caller of the
 * one-shot API (and the Python binding's prox.pairs / prox.lists) makes
 * it: the C side of bench/python_bench.py. Prints each run's seconds and
 * the median.
 *
 *   build/prox gen sph3d --n 1000000 -o /tmp/w1.f64
 *   build/bench_oneshot_points /tmp/w1.f64 3 buffer 5 0 RADIUS
 *
 * Arguments: FILE.f64 (raw little-endian doubles, packed points) DIM TASK
 * (count | buffer | lists) RUNS THREADS RADIUS. */
#include <string.h>

#include "ab_driver.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s FILE.f64 DIM TASK RUNS THREADS RADIUS\n", argv[0]);
        return 2;
    }
    int dim = atoi(argv[2]), runs = atoi(argv[4]);
    int64_t values = 0;
    double *xyz = ab_read_doubles(argv[1], &values);
    if (!xyz || (dim != 2 && dim != 3) || runs < 1 || runs > 1000) {
        fprintf(stderr, "%s: cannot read %s, or a bad DIM or RUNS\n", argv[0], argv[1]);
        return 2;
    }
    prox_points points = prox_points_f64(xyz, values / dim, dim);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = atof(argv[6]);
    desc.threads = atoi(argv[5]);
    (void)ab_time_runs; /* the shared driver's loop times one object's runs; here each run is fresh */
    double seconds[1000];
    int64_t pairs = 0;
    for (int r = 0; r < runs; r++) {
        prox_pair_buffer buffer;
        prox_lists lists;
        prox_pair_buffer_init(&buffer, NULL);
        prox_lists_init(&lists, NULL);
        prox_sink sink = !strcmp(argv[3], "buffer")  ? prox_sink_buffer(&buffer)
                         : !strcmp(argv[3], "lists") ? prox_sink_lists(&lists)
                                                     : prox_sink_count();
        prox_stats stats;
        double t0 = ab_now();
        prox_status st = prox_pairs(&points, &desc, PROX_ALGO_GRID, sink, &stats);
        seconds[r] = ab_now() - t0;
        prox_pair_buffer_free(&buffer);
        prox_lists_free(&lists);
        if (st) {
            fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
            return 1;
        }
        pairs = stats.pairs;
        printf("%.4f ", seconds[r]);
    }
    qsort(seconds, (size_t)runs, sizeof *seconds, by_value);
    printf("pairs=%lld median %.4f\n", (long long)pairs, seconds[runs / 2]);
    free(xyz);
    return 0;
}
