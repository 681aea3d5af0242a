/* mpi_scaling.c: the distributed layer's timings (bench/mpi_scaling.sh,
 * docs/scaling.md).
 *
 *   mpirun -np P bench_mpi_scaling WORKLOAD N REPS [THREADS [SINK]]
 *   bench_mpi_scaling --serial WORKLOAD N REPS THREADS [SINK]
 *
 * WORKLOAD: sph3d (W1), sph3d-periodic, spheres3d (W3, d = 0.1, boxes of
 * the spheres, the grid broad phase). Each rank generates its own block of the workload's items
 * (docs/workloads.md's stream, entered at the block's first draw), so the items
 * start spread at random over space. Per repetition: partition, migration,
 * halo build, pairs (SINK count or buffer: sorted local pairs); for boxes
 * build (partition, distribution, local build) and pairs. Rank 0 prints
 * the medians over REPS of each phase's slowest rank (step: halo build and
 * pairs; refresh_step: a refresh, which sends the ghosts again, and pairs), then each rank's
 * figures of the last repetition's halo and pairs (its exchange and compute
 * seconds, owned items, ghosts, messages and bytes sent). --serial times
 * the single-machine library on one process over all N items instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prox/mpi.h"
#include "workloads.h"

static int rank, size;

/* step: halo build + pairs; refresh_step: refresh (same positions: the
 * ghosts sent again) + pairs, a step of moving points between rebuilds */
enum { PHASES = 7 };
static const char *const phase_names[PHASES] = { "partition", "migrate",  "build",       "pairs",
                                                 "step",      "refresh", "refresh_step" };

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Items [i0, i1) of the workload: 3 draws each, the stream entered at draw 3 * i0. */
static double *generate(const char *workload, int64_t n, int64_t i0, int64_t i1, int *vals)
{
    bool boxes = strcmp(workload, "spheres3d") == 0;
    double hi = boxes ? prox_wl_spheres3d_side(n, 0.1) : 1.0;
    *vals = boxes ? 6 : 3;
    double *v = malloc(((size_t)(i1 - i0) + 1) * (size_t)*vals * sizeof *v);
    prox_wl_rng rng = prox_wl_rng_seed(PROX_WL_DEFAULT_SEED);
    rng.state += (uint64_t)(3 * i0) * 0x9E3779B97F4A7C15u;
    for (int64_t i = 0; i < i1 - i0; i++)
        for (int k = 0; k < 3; k++) {
            double c = prox_wl_uniform(&rng, 0, hi);
            if (boxes) {
                v[6 * i + k] = c - 1;
                v[6 * i + 3 + k] = c + 1;
            } else {
                v[3 * i + k] = c;
            }
        }
    return v;
}

static void die_on(prox_status st, const char *what)
{
    if (st == PROX_OK)
        return;
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, prox_dist_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* One repetition over points: phase seconds (slowest rank) into t. */
static int64_t points_rep(const char *workload, const double *mine, int64_t count, int64_t first,
                          int64_t n, int threads, bool buffer, double *t, prox_dist_stats *ds)
{
    prox_dist_desc desc = prox_default_dist_desc();
    desc.grid.radius = prox_wl_sph3d_radius(n);
    desc.grid.threads = threads;
    if (strcmp(workload, "sph3d-periodic") == 0)
        desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 1;
    prox_dist *d = NULL;
    die_on(prox_dist_create(MPI_COMM_WORLD, &desc, &d), "create");
    int64_t *ids = malloc(((size_t)count + 1) * sizeof *ids);
    for (int64_t i = 0; i < count; i++)
        ids[i] = first + i;
    prox_points pts = prox_points_f64(mine, count, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    die_on(prox_dist_partition(d, &pts), "partition");
    double t1 = MPI_Wtime();
    int64_t in = 0;
    die_on(prox_dist_migrate_count(d, &pts, &in), "migrate count");
    double *xyz = malloc(((size_t)in + 1) * 3 * sizeof *xyz);
    int64_t *own_ids = malloc(((size_t)in + 1) * sizeof *own_ids);
    die_on(prox_dist_migrate(d, &pts, ids, NULL, 0, xyz, own_ids, NULL), "migrate");
    double t2 = MPI_Wtime();
    prox_dist_reset_stats(d);
    prox_points own = prox_points_f64(xyz, in, 3);
    die_on(prox_dist_build(d, &own, own_ids), "build");
    double t3 = MPI_Wtime();
    prox_pair_buffer b;
    prox_pair_buffer_init(&b, NULL);
    prox_stats s;
    die_on(prox_dist_pairs(d, buffer ? prox_sink_buffer(&b) : prox_sink_count(), &s), "pairs");
    double t4 = MPI_Wtime();
    prox_dist_get_stats(d, ds);
    bool again;
    die_on(prox_dist_refresh(d, &own, &again), "refresh");
    double t5 = MPI_Wtime();
    die_on(prox_dist_pairs(d, buffer ? prox_sink_buffer(&b) : prox_sink_count(), &s), "pairs");
    double t6 = MPI_Wtime();
    t[5] = slowest(t5 - t4);
    t[6] = slowest(t6 - t4);
    t[0] = slowest(t1 - t0);
    t[1] = slowest(t2 - t1);
    t[2] = slowest(t3 - t2);
    t[3] = slowest(t4 - t3);
    t[4] = slowest(t4 - t2);
    int64_t total = 0;
    MPI_Reduce(&s.pairs, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    prox_pair_buffer_free(&b);
    prox_dist_destroy(d);
    free(ids);
    free(xyz);
    free(own_ids);
    return total;
}

static int64_t boxes_rep(const double *mine, int64_t count, int64_t first, int threads,
                         double *t, prox_dist_stats *ds)
{
    prox_dist_desc desc = prox_default_dist_desc();
    desc.broad.algo = PROX_BROAD_GRID; /* W3's fastest here, serial and local alike */
    desc.broad.threads = threads;
    prox_dist_broad *b = NULL;
    die_on(prox_dist_broad_create(MPI_COMM_WORLD, &desc, &b), "create");
    int64_t *ids = malloc(((size_t)count + 1) * sizeof *ids);
    for (int64_t i = 0; i < count; i++)
        ids[i] = first + i;
    prox_boxes boxes = prox_boxes_f64(mine, count, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    die_on(prox_dist_broad_build(b, &boxes, ids), "build");
    double t1 = MPI_Wtime();
    prox_stats s;
    die_on(prox_dist_broad_pairs(b, prox_id_sink_count(), &s), "pairs");
    double t2 = MPI_Wtime();
    prox_dist_broad_get_stats(b, ds);
    t[0] = t[1] = 0;
    t[2] = slowest(t1 - t0);
    t[3] = slowest(t2 - t1);
    t[4] = slowest(t2 - t0);
    int64_t total = 0;
    MPI_Reduce(&s.pairs, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    prox_dist_broad_destroy(b);
    free(ids);
    return total;
}

/* The single-machine library on every item, one process. */
static int64_t serial_rep(const char *workload, const double *all, int64_t n, int threads,
                          bool buffer, double *t)
{
    memset(t, 0, PHASES * sizeof *t);
    prox_stats s;
    double t0 = MPI_Wtime();
    if (strcmp(workload, "spheres3d") == 0) {
        prox_broad_desc desc = prox_default_broad_desc();
        desc.algo = PROX_BROAD_GRID;
        desc.threads = threads;
        prox_broad *b = NULL;
        prox_boxes boxes = prox_boxes_f64(all, n, 3);
        prox_broad_create(&desc, &b);
        die_on(prox_broad_build(b, &boxes), "serial build");
        t[2] = MPI_Wtime() - t0;
        die_on(prox_broad_pairs(b, prox_sink_count(), &s), "serial pairs");
        prox_broad_destroy(b);
    } else {
        prox_grid_desc desc = prox_default_grid_desc();
        desc.radius = prox_wl_sph3d_radius(n);
        desc.threads = threads;
        if (strcmp(workload, "sph3d-periodic") == 0)
            desc.period[0] = desc.period[1] = desc.period[2] = 1;
        prox_points pts = prox_points_f64(all, n, 3);
        prox_pair_buffer b;
        prox_pair_buffer_init(&b, NULL);
        die_on(prox_pairs(&pts, &desc, PROX_ALGO_GRID,
                          buffer ? prox_sink_buffer(&b) : prox_sink_count(), &s),
               "serial pairs");
        prox_pair_buffer_free(&b);
    }
    t[4] = MPI_Wtime() - t0;
    t[3] = t[4] - t[2];
    return s.pairs;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bool serial = argc > 1 && strcmp(argv[1], "--serial") == 0;
    int a = serial ? 2 : 1;
    if (argc < a + 3 || (serial && size != 1)) {
        if (rank == 0)
            fprintf(stderr, "usage: [mpirun -np P] bench_mpi_scaling [--serial] WORKLOAD N REPS "
                            "[THREADS [count|buffer]]\n");
        MPI_Finalize();
        return 2;
    }
    const char *workload = argv[a];
    int64_t n = atoll(argv[a + 1]);
    int reps = atoi(argv[a + 2]);
    int threads = argc > a + 3 ? atoi(argv[a + 3]) : 1;
    bool buffer = argc > a + 4 && strcmp(argv[a + 4], "buffer") == 0;
    bool boxes = strcmp(workload, "spheres3d") == 0;
    int64_t i0 = n * rank / size, i1 = n * (rank + 1) / size;
    int vals;
    double *mine = generate(workload, n, i0, i1, &vals);
    double *times = calloc((size_t)reps * PHASES, sizeof *times), col[64];
    prox_dist_stats ds = { 0 };
    int64_t pairs = 0;
    for (int r = 0; r < reps; r++) {
        double *t = times + (size_t)r * PHASES;
        pairs = serial ? serial_rep(workload, mine, n, threads, buffer, t)
                : boxes ? boxes_rep(mine, i1 - i0, i0, threads, t, &ds)
                        : points_rep(workload, mine, i1 - i0, i0, n, threads, buffer, t, &ds);
    }
    prox_dist_stats *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
    MPI_Gather(&ds, (int)sizeof ds, MPI_BYTE, all, (int)sizeof ds, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("workload=%s n=%lld ranks=%d threads=%d sink=%s mode=%s reps=%d pairs=%lld",
               workload, (long long)n, size, threads, buffer ? "buffer" : "count",
               serial ? "serial" : "dist", reps, (long long)pairs);
        for (int p = 0; p < PHASES; p++) {
            for (int r = 0; r < reps && r < 64; r++)
                col[r] = times[(size_t)r * PHASES + p];
            printf(" %s_s=%.4f", phase_names[p], median(col, reps < 64 ? reps : 64));
        }
        printf("\n");
        for (int r = 0; !serial && r < size; r++)
            printf("  rank=%d owned=%lld ghosts=%lld pairs=%lld messages=%lld bytes_sent=%lld "
                   "exchange_s=%.4f compute_s=%.4f\n",
                   r, (long long)all[r].owned, (long long)all[r].ghosts,
                   (long long)all[r].pairs, (long long)all[r].messages,
                   (long long)all[r].bytes_sent, all[r].exchange_s, all[r].compute_s);
    }
    free(all);
    free(times);
    free(mine);
    MPI_Finalize();
    return 0;
}
