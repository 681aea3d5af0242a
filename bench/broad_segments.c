/* broad_segments.c: W4's segment queries (Pouchol et al. 2009, Figure 4) with one
 * structure: built and queried RUNS times on one object (each run: build,
 * then the exact hits of every segment, counted), printing each run's
 * seconds and the best. The driver behind the W4 A/B figures in
 * docs/design.md (the multilevel and hierarchical hashes):
 *
 *   build/prox gen mixed2d --n 10000 -o /tmp/w4.f64   (and w4.segments.f64)
 *   build/bench_broad_segments /tmp/w4.f64 /tmp/w4.segments.f64 hierarchical 5 1
 *
 * Arguments: BOXES.f64 (raw little-endian doubles, minx miny maxx maxy per
 * box) SEGMENTS.f64 (x0 y0 x1 y1 per segment) ALGO (as --algo) RUNS
 * THREADS. With MIN_CLASS and MAX_CLASS both set in the environment, the
 * hash structures get those size classes (prox_broad_desc.min_class,
 * max_class) instead of fitted ones (docs/design.md, "multilevel": the
 * classes of Eq. 2 against the fitted ones), e.g.
 *
 *   MIN_CLASS=3 MAX_CLASS=7 build/bench_broad_segments W4.f64 W4.segments.f64 hierarchical 3 1
 *
 * It prints the hits, candidates, cells visited, occupied cells and the
 * structure's bytes of the last run, and the best seconds. */
#include "ab_driver.h"

typedef struct segment_run {
    prox_broad *broad;
    const prox_boxes *boxes;
    const prox_points *starts, *ends;
    prox_stats stats;
} segment_run;

static prox_status build(void *ctx)
{
    segment_run *s = ctx;
    return prox_broad_build(s->broad, s->boxes);
}

static prox_status query(void *ctx)
{
    segment_run *s = ctx;
    return prox_broad_query_segments(s->broad, s->starts, s->ends, true, prox_sink_count(),
                                     &s->stats);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s BOXES.f64 SEGMENTS.f64 ALGO RUNS THREADS\n", argv[0]);
        return 2;
    }
    int64_t nbox = 0, nseg = 0;
    double *box = ab_read_doubles(argv[1], &nbox);
    double *seg = ab_read_doubles(argv[2], &nseg);
    if (!box || !seg) {
        fprintf(stderr, "%s: cannot read %s or %s\n", argv[0], argv[1], argv[2]);
        return 2;
    }
    prox_boxes boxes = prox_boxes_f64(box, nbox / 4, 2);
    prox_points starts = prox_points_strided(seg, nseg / 4, 2, PROX_F64, 4 * sizeof(double));
    prox_points ends = prox_points_strided(seg + 2, nseg / 4, 2, PROX_F64, 4 * sizeof(double));
    prox_broad_desc desc = prox_default_broad_desc();
    desc.threads = atoi(argv[5]);
    if (getenv("MIN_CLASS") && getenv("MAX_CLASS")) {
        desc.min_class = atoi(getenv("MIN_CLASS"));
        desc.max_class = atoi(getenv("MAX_CLASS"));
    }
    segment_run run = {.boxes = &boxes, .starts = &starts, .ends = &ends};
    if (prox_broad_algo_parse(argv[3], &desc.algo) || prox_broad_create(&desc, &run.broad)) {
        fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
        return 2;
    }
    double best = ab_time_runs(argv[0], atoi(argv[4]), build, query, &run);
    if (best < 0)
        return 1;
    printf("hits=%lld candidates=%lld cells_visited=%lld cells=%lld bytes=%lld best %.4f\n",
           (long long)run.stats.pairs, (long long)run.stats.candidates,
           (long long)run.stats.cells_visited, (long long)run.stats.cells,
           (long long)run.stats.bytes, best);
    prox_broad_destroy(run.broad);
    free(box);
    free(seg);
    return 0;
}
