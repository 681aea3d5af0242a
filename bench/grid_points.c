/* grid_points.c: one grid task, built and queried RUNS times on one object
 * (as a simulation's steps), printing each run's build + query seconds and
 * the best: the driver behind the A/B figures of docs/benchmarks.md marked
 * "scratch driver" from session 9 on. Build it against each library to
 * compare and run the two alternately, round by round:
 *
 *   build/prox gen nns2d --k 1 -o /tmp/k1.f64     (radius: the text form's header)
 *   cc -O2 -fopenmp -Iinclude bench/grid_points.c build/libprox.a -lm -o /tmp/gp
 *   /tmp/gp /tmp/k1.f64 2 lists 5 1 591.59565675817214
 *
 * Arguments: FILE.f64 (raw little-endian doubles, packed points) DIM
 * TASK (count | buffer | ubuffer | lists | ulists; u: unsorted) RUNS
 * THREADS RADIUS [COORDS: double (default) | fixed]. */
#include <prox/prox.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double *read_doubles(const char *path, int64_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    double *v = malloc((size_t)bytes + 8);
    *count = v ? (int64_t)(fread(v, 1, (size_t)bytes, f) / sizeof *v) : 0;
    fclose(f);
    return v;
}

static prox_sink sink_of(const char *task, prox_pair_buffer *buffer, prox_lists *lists)
{
    if (!strcmp(task, "buffer"))
        return prox_sink_buffer(buffer);
    if (!strcmp(task, "ubuffer"))
        return prox_sink_unsorted(prox_sink_buffer(buffer));
    if (!strcmp(task, "lists"))
        return prox_sink_lists(lists);
    if (!strcmp(task, "ulists"))
        return prox_sink_unsorted(prox_sink_lists(lists));
    return prox_sink_count();
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s FILE.f64 DIM TASK RUNS THREADS RADIUS [double|fixed]\n",
                argv[0]);
        return 2;
    }
    int dim = atoi(argv[2]), runs = atoi(argv[4]);
    int64_t values = 0;
    double *xyz = read_doubles(argv[1], &values);
    if (!xyz || (dim != 2 && dim != 3) || runs < 1) {
        fprintf(stderr, "%s: cannot read %s, or a bad DIM or RUNS\n", argv[0], argv[1]);
        return 2;
    }
    prox_points points = prox_points_f64(xyz, values / dim, dim);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = atof(argv[6]);
    desc.threads = atoi(argv[5]);
    bool fixed = argc > 7 && strcmp(argv[7], "fixed") == 0;
    desc.coords = fixed ? PROX_COORDS_FIXED : PROX_COORDS_DOUBLE;
    prox_grid *grid;
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair_buffer_init(&buffer, NULL);
    prox_lists_init(&lists, NULL);
    if (prox_grid_create(&desc, &grid)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 1;
    }
    double best = 1e300;
    prox_stats stats = {0};
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        prox_status st = prox_grid_build(grid, &points);
        double t1 = now();
        if (!st)
            st = prox_grid_pairs(grid, sink_of(argv[3], &buffer, &lists), &stats);
        double t2 = now();
        if (st) {
            fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
            return 1;
        }
        printf("%.4f+%.4f=%.4f  ", t1 - t0, t2 - t1, t2 - t0);
        best = t2 - t0 < best ? t2 - t0 : best;
    }
    printf("pairs=%lld rechecked=%lld %s bytes=%lld kept=%lld best %.4f\n",
           (long long)stats.pairs, (long long)stats.rechecked,
           stats.coords == PROX_COORDS_FIXED ? "fixed" : "double", (long long)stats.bytes,
           (long long)stats.kept_bytes, best);
    prox_grid_destroy(grid);
    prox_pair_buffer_free(&buffer);
    prox_lists_free(&lists);
    free(xyz);
    return 0;
}
