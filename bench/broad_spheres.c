/* broad_spheres.c: W3's broad phase (unit spheres' boxes, centre +- 1) with
 * one structure, built and paired RUNS times on one object, printing each
 * run's seconds and the best; with PAIRS_ONLY set in the environment the
 * object is built once and only the pairs are timed, and SPLIT_COST=C sets
 * the kd-tree's prox_broad_desc.kdtree_split_cost (default 1; the scan
 * over costs in docs/design.md). The driver behind the kd-tree's and sweep
 * and prune's A/B figures in docs/design.md:
 *
 *   build/prox gen spheres3d --n 1000000 -o /tmp/w3.f64
 *   build/bench_broad_spheres /tmp/w3.f64 kdtree 5 1      (built by make)
 *
 * Arguments: CENTRES.f64 (raw little-endian doubles, x y z per sphere)
 * ALGO (as --algo: kdtree, sap, grid, ...) RUNS THREADS. Pairs go sorted
 * into a buffer. For the kd-tree it also prints its records, cells and
 * sweep pairs, and the last build's seconds making and sorting the
 * records (prox_kdtree_info). */
#include <stdbool.h>

#include "ab_driver.h"

/* One round's work on the object. */
typedef struct broad_run {
    prox_broad *broad;
    const prox_boxes *boxes;
    prox_pair_buffer buffer;
    prox_stats stats;
} broad_run;

static prox_status build(void *ctx)
{
    broad_run *b = ctx;
    return prox_broad_build(b->broad, b->boxes);
}

static prox_status query(void *ctx)
{
    broad_run *b = ctx;
    return prox_broad_pairs(b->broad, prox_sink_buffer(&b->buffer), &b->stats);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s CENTRES.f64 ALGO RUNS THREADS\n", argv[0]);
        return 2;
    }
    int64_t values = 0;
    double *centre = ab_read_doubles(argv[1], &values);
    int64_t n = values / 3;
    double *bounds = malloc((size_t)n * 48 + 8);
    if (!centre || !bounds) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            bounds[6 * i + k] = centre[3 * i + k] - 1;
            bounds[6 * i + 3 + k] = centre[3 * i + k] + 1;
        }
    prox_boxes boxes = prox_boxes_f64(bounds, n, 3);
    prox_broad_desc desc = prox_default_broad_desc();
    desc.threads = atoi(argv[4]);
    if (getenv("SPLIT_COST"))
        desc.kdtree_split_cost = atof(getenv("SPLIT_COST"));
    broad_run run = {.boxes = &boxes};
    if (prox_broad_algo_parse(argv[2], &desc.algo) || prox_broad_create(&desc, &run.broad)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 2;
    }
    prox_pair_buffer_init(&run.buffer, NULL);
    bool pairs_only = getenv("PAIRS_ONLY") != NULL;
    if (pairs_only && build(&run)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 1;
    }
    double best = ab_time_runs(argv[0], atoi(argv[3]), pairs_only ? NULL : build, query, &run);
    if (best < 0)
        return 1;
    printf("pairs=%lld best %.4f\n", (long long)run.stats.pairs, best);
    prox_kdtree_info info;
    if (desc.algo == PROX_BROAD_KDTREE && !prox_broad_kdtree_info(run.broad, &info))
        printf("deepest=%d records=%lld cells=%lld sweep_pairs=%lld last build: records_s=%.4f "
               "sort_s=%.4f\n",
               info.deepest, (long long)info.sub_elements, (long long)info.cells,
               (long long)info.sweep_pairs, info.records_s, info.sort_s);
    prox_broad_destroy(run.broad);
    prox_pair_buffer_free(&run.buffer);
    free(centre);
    free(bounds);
    return 0;
}
