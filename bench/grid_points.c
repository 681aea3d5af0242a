/* grid_points.c: one grid task, built and queried RUNS times on one object
 * (as a simulation's steps), printing each run's build + query seconds and
 * the best: the driver behind the grid's A/B figures in docs/design.md
 * (make builds it as build/bench_grid_points). To compare two versions of
 * the library, build it against each and run the two alternately, round
 * by round:
 *
 *   build/prox gen nns2d --k 1 -o /tmp/k1.f64     (radius: the text form's header)
 *   cc -O2 -fopenmp -Iinclude bench/grid_points.c build/libprox.a -lm -o /tmp/gp
 *   /tmp/gp /tmp/k1.f64 2 lists 5 1 591.59565675817214
 *
 * Arguments: FILE.f64 (raw little-endian doubles, packed points) DIM
 * TASK (count | buffer | ubuffer | lists | ulists; u: unsorted) RUNS
 * THREADS RADIUS [COORDS: double (default) | fixed]. Environment: ROWS=
 * in-place for prox_grid_desc.rows; PERIOD=L for a periodic box of side L
 * along every axis (W1 as a periodic unit cube: PERIOD=1). The last line
 * names the method that ran.
 *
 * Built a second time as build/bench_grid_limits (PROX_BENCH_LIMITS, over
 * the private src/points/grid_private.h), the driver also takes the densities
 * where the grid changes mechanism from the environment, 0 or unset for
 * the library's defaults (prox_grid_set_density_limits): TABLE_CELLS (the
 * most cells a point for a table of every cell), SWEEP_RUN (the most points
 * a run for the point sweep; 0.001 turns it off) and HALF_PAIRS_RUN (the
 * most points a run for lists from the half stencil's pairs; 0.001 off).
 * docs/design.md's measurements of those limits come from it. */
#include <stdbool.h>
#include <string.h>

#include "ab_driver.h"
#ifdef PROX_BENCH_LIMITS
#include "points/grid_private.h"

static double limit_of(const char *name)
{
    const char *v = getenv(name);
    return v ? atof(v) : 0.0;
}
#endif

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

/* One round's work on the object. */
typedef struct grid_run {
    prox_grid *grid;
    const prox_points *points;
    prox_sink sink;
    prox_stats stats;
} grid_run;

static prox_status build(void *ctx)
{
    grid_run *g = ctx;
    return prox_grid_build(g->grid, g->points);
}

static prox_status query(void *ctx)
{
    grid_run *g = ctx;
    return prox_grid_pairs(g->grid, g->sink, &g->stats);
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
    double *xyz = ab_read_doubles(argv[1], &values);
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
    const char *rows = getenv("ROWS"); /* ROWS=in-place: prox_grid_desc.rows */
    desc.rows = rows && strcmp(rows, "in-place") == 0 ? PROX_ROWS_IN_PLACE : PROX_ROWS_STAGED;
    const char *period = getenv("PERIOD"); /* PERIOD=L: prox_grid_desc.period, every axis */
    for (int k = 0; period && k < dim; k++)
        desc.period[k] = atof(period);
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair_buffer_init(&buffer, NULL);
    prox_lists_init(&lists, NULL);
    grid_run run = {.points = &points, .sink = sink_of(argv[3], &buffer, &lists)};
    if (prox_grid_create(&desc, &run.grid)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 1;
    }
#ifdef PROX_BENCH_LIMITS
    prox_grid_set_density_limits(run.grid, limit_of("TABLE_CELLS"), limit_of("SWEEP_RUN"),
                                 limit_of("HALF_PAIRS_RUN"));
#endif
    double best = ab_time_runs(argv[0], runs, build, query, &run);
    if (best < 0)
        return 1;
    const prox_stats *s = &run.stats;
    printf("pairs=%lld rechecked=%lld %s bytes=%lld kept=%lld method=%s best %.4f\n",
           (long long)s->pairs, (long long)s->rechecked,
           s->coords == PROX_COORDS_FIXED ? "fixed" : "double", (long long)s->bytes,
           (long long)s->kept_bytes, s->method ? s->method : "-", best);
    prox_grid_destroy(run.grid);
    prox_pair_buffer_free(&buffer);
    prox_lists_free(&lists);
    free(xyz);
    return 0;
}
