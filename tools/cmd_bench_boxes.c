/* cmd_bench_boxes.c: `prox bench mixed2d`: workload W4 of docs/workloads.md (Pouchol
 * et al. 2009, Figure 4): boxes of very different sizes, then segment queries (the
 * paths of moving particles), for every broad-phase structure. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "prox/prox.h"
#include "workloads.h"

static const char usage[] =
    "usage: prox bench mixed2d [OPTIONS]\n"
    "Workload W4 (docs/workloads.md): N boxes in [0, 8192)^2 of average edge 8, 64 or\n"
    "1024, and Q segments of length < 16. For each structure: build, then every\n"
    "segment's hits (the exact segment/box test, after the broad phase).\n"
    "\n"
    "Options:\n"
    "  -n, --n N          boxes (default 10000)\n"
    "  -q, --queries Q    segments (default 1000000)\n"
    "  -s, --seed S       workload seed (default 1)\n"
    "  -t, --threads T    threads, 0 = OpenMP default (default 0)\n"
    "      --runs R       runs per measurement; the table shows medians (default 5)\n"
    "      --algos LIST   comma-separated rows to run (default: all): grid,\n"
    "                     multilevel, hierarchical, hierarchical-growable, brute\n"
    "  -h, --help         this help\n"
    "\n"
    "A structure's runs share one object, as a simulation's steps do: each\n"
    "builds from scratch into the memory the run before grew.\n"
    "Columns: build_s, query_s (exact segment queries, count only), seconds,\n"
    "medians; first_s: build + queries of the first run, on a fresh object;\n"
    "cpu_s: CPU seconds of build + queries (all threads; on a shared\n"
    "machine the wall clock also counts other programs), median; candidates (exact tests); hits (segment-box intersections);\n"
    "broad_hits (boxes overlapping a segment's bounding box); hit_fraction\n"
    "(segments hitting at least one box: Figure 4's x axis); cells (occupied);\n"
    "cells_visited (lookups); struct_MB (the structure's memory, with the\n"
    "front's 48-byte copy of each box); peak_MB (peak\n"
    "RSS so far). Brute force runs only when N * Q <= 2e9.\n"
    "Exit status 1 if the structures disagree.\n";

#define BRUTE_MAX_WORK 2e9

typedef struct variant {
    const char *name;
    prox_broad_algo algo;
    bool growable;
} variant;

static const variant variants[] = {
    { "grid", PROX_BROAD_GRID, false },
    { "multilevel", PROX_BROAD_MULTILEVEL, false },
    { "hierarchical", PROX_BROAD_HIERARCHICAL, false },
    { "hierarchical-growable", PROX_BROAD_HIERARCHICAL, true },
    { "brute", PROX_BROAD_BRUTE, false },
};
#define VARIANTS ((int)(sizeof variants / sizeof variants[0]))

typedef struct bench_options {
    int64_t n, queries;
    uint64_t seed;
    int threads, runs;
    const char *algos; /* NULL: every row */
} bench_options;

enum { OPT_N = 1, OPT_QUERIES, OPT_SEED, OPT_THREADS, OPT_RUNS, OPT_ALGOS, OPT_HELP };

static const opt_spec specs[] = {
    { "n", 'n', true, OPT_N },         { "queries", 'q', true, OPT_QUERIES },
    { "seed", 's', true, OPT_SEED },   { "threads", 't', true, OPT_THREADS },
    { "runs", 0, true, OPT_RUNS },     { "algos", 0, true, OPT_ALGOS },
    { "help", 'h', false, OPT_HELP },
};

static bool parse_options(int argc, char **argv, bench_options *o)
{
    *o = (bench_options){.n = 10000, .queries = 1000000, .seed = PROX_WL_DEFAULT_SEED,
                         .runs = 5};
    opt_parser p = opt_init("bench", specs, sizeof specs / sizeof specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    bool workload = false;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        switch (id) {
        case OPT_ARG: parse_workload_name(&p, v, "mixed2d", &workload); break;
        case OPT_N: o->n = parse_count(&p, v, 0, PROX_MAX_POINTS); break;
        case OPT_QUERIES: o->queries = parse_count(&p, v, 0, PROX_MAX_POINTS); break;
        case OPT_SEED: o->seed = parse_u64(&p, v); break;
        case OPT_THREADS: o->threads = (int)parse_count(&p, v, 0, 4096); break;
        case OPT_RUNS: o->runs = (int)parse_count(&p, v, 1, 1000); break;
        case OPT_ALGOS: o->algos = v; break;
        case OPT_HELP: return false;
        }
    }
    for (const char *at = o->algos; at && *at;) {
        size_t len = strcspn(at, ",");
        bool known = false;
        for (int r = 0; r < VARIANTS; r++)
            known |= strlen(variants[r].name) == len && strncmp(variants[r].name, at, len) == 0;
        if (!known)
            die_usage("bench", "--algos: unknown row '%.*s'", (int)len, at);
        at += len + (at[len] == ',');
    }
    return true;
}

/* Is row `name` asked for (--algos)? */
static bool wanted(const bench_options *o, const char *name)
{
    size_t len = strlen(name);
    for (const char *at = o->algos; at && *at;) {
        size_t part = strcspn(at, ",");
        if (part == len && strncmp(at, name, len) == 0)
            return true;
        at += part + (at[part] == ',');
    }
    return o->algos == NULL;
}

typedef struct measure {
    double build_s, query_s, cpu_s;
    prox_stats stats;
} measure;

static prox_broad *create_variant(const variant *v, const bench_options *o)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = v->algo;
    desc.growable_table = v->growable;
    desc.threads = o->threads;
    prox_broad *b = NULL;
    prox_status st = prox_broad_create(&desc, &b);
    if (st)
        die_status(st, "cannot create the broad phase");
    return b;
}

/* One run on b, which a variant's runs share as a simulation's steps do:
 * each builds from scratch into the memory the run before grew. CPU
 * seconds of the process (all threads): on a shared machine the wall clock
 * also counts the time other programs ran. */
static measure run_once(prox_broad *b, const prox_boxes *boxes, const prox_points *starts,
                        const prox_points *ends)
{
    measure m;
    double c0 = cpu_seconds();
    double t0 = now_seconds();
    prox_status st = prox_broad_build(b, boxes);
    double t1 = now_seconds();
    if (st)
        die_status(st, "cannot build the broad phase");
    st = prox_broad_query_segments(b, starts, ends, true, prox_sink_count(), &m.stats);
    m.query_s = now_seconds() - t1;
    m.cpu_s = cpu_seconds() - c0;
    m.build_s = t1 - t0;
    if (st)
        die_status(st, "segment queries failed");
    return m;
}

/* Hits with the broad phase alone, and the fraction of segments with a hit
 * (from lists: one row per segment), with the default structure. */
static void reference(const bench_options *o, const prox_boxes *boxes, const prox_points *starts,
                      const prox_points *ends, int64_t *broad_hits, double *hit_fraction)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.threads = o->threads;
    prox_broad *b = NULL;
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    prox_stats stats;
    prox_status st = prox_broad_create(&desc, &b);
    if (!st) st = prox_broad_build(b, boxes);
    if (!st) st = prox_broad_query_segments(b, starts, ends, false, prox_sink_count(), &stats);
    *broad_hits = stats.pairs;
    if (!st) st = prox_broad_query_segments(b, starts, ends, true, prox_sink_lists(&lists), NULL);
    if (st)
        die_status(st, "reference queries failed");
    int64_t hit = 0;
    for (int64_t r = 0; r < lists.rows; r++)
        hit += lists.offsets[r + 1] > lists.offsets[r];
    *hit_fraction = lists.rows ? (double)hit / (double)lists.rows : 0.0;
    prox_lists_free(&lists);
    prox_broad_destroy(b);
}

int cmd_bench_boxes(int argc, char **argv)
{
    bench_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.threads);
    double *box = xmalloc(checked_size(4 * o.n + 4, sizeof(double)));
    double *seg = xmalloc(checked_size(4 * o.queries + 4, sizeof(double)));
    prox_wl_mixed2d(o.n, o.queries, o.seed, box, seg);
    prox_boxes boxes = prox_boxes_f64(box, o.n, 2);
    prox_points starts = prox_points_strided(seg, o.queries, 2, PROX_F64, 4 * sizeof(double));
    prox_points ends = prox_points_strided(seg + 2, o.queries, 2, PROX_F64, 4 * sizeof(double));

    int64_t broad_hits;
    double hit_fraction;
    reference(&o, &boxes, &starts, &ends, &broad_hits, &hit_fraction);
    printf("workload: mixed2d n=%lld queries=%lld seed=%llu\n", (long long)o.n,
           (long long)o.queries, (unsigned long long)o.seed);
    printf("threads: %d; times in seconds, median of %d runs; broad_hits=%lld "
           "hit_fraction=%.4f\n\n",
           effective_threads(o.threads), o.runs, (long long)broad_hits, hit_fraction);
    printf("| algo | build_s | query_s | total_s | cpu_s | first_s | candidates | hits | cells "
           "| cells_visited | struct_MB | peak_MB |\n");
    printf("|------|--------:|--------:|--------:|------:|--------:|-----------:|-----:|------:"
           "|--------------:|----------:|--------:|\n");
    fflush(stdout);
    bool agree = true;
    int64_t expected = -1;
    double *times = xmalloc(sizeof(double) * 4 * (size_t)o.runs);
    for (int v = 0; v < VARIANTS; v++) {
        if (!wanted(&o, variants[v].name))
            continue;
        if (variants[v].algo == PROX_BROAD_BRUTE && (double)o.n * (double)o.queries > BRUTE_MAX_WORK) {
            printf("\nbrute force skipped: n * queries = %.3g > %.0e\n",
                   (double)o.n * (double)o.queries, BRUTE_MAX_WORK);
            continue;
        }
        prox_broad *b = create_variant(&variants[v], &o);
        measure first = run_once(b, &boxes, &starts, &ends);
        for (int r = 0; r < o.runs; r++) {
            measure m = r == 0 ? first : run_once(b, &boxes, &starts, &ends);
            agree = agree && m.stats.pairs == first.stats.pairs;
            times[r] = m.build_s;
            times[o.runs + r] = m.query_s;
            times[2 * o.runs + r] = m.build_s + m.query_s;
            times[3 * o.runs + r] = m.cpu_s;
        }
        agree = agree && (expected < 0 || expected == first.stats.pairs);
        expected = first.stats.pairs;
        prox_broad_destroy(b);
        printf("| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %lld | %lld | %lld | %lld | %.3f | %.1f |\n",
               variants[v].name, median(times, o.runs), median(times + o.runs, o.runs),
               median(times + 2 * o.runs, o.runs), median(times + 3 * o.runs, o.runs),
               first.build_s + first.query_s,
               (long long)first.stats.candidates,
               (long long)first.stats.pairs, (long long)first.stats.cells,
               (long long)first.stats.cells_visited,
               (double)first.stats.bytes / (1024.0 * 1024.0), peak_rss_mb());
        fflush(stdout);
    }
    free(times);
    free(box);
    free(seg);
    if (!agree) {
        fprintf(stderr, "prox: bench: the structures disagree on the number of hits\n");
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}
