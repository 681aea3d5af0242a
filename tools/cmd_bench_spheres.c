/* cmd_bench_spheres.c: `prox bench spheres3d`: workload W3 of docs/workloads.md,
 * the tables of Poirrier 2009: Table 1 (element splitting in the
 * linear kd-tree, N = 10,000), Tables 2 and 3 (time, candidates and memory
 * per structure up to N = 5,000,000, d = 0.1).
 *
 * The spheres' AABBs (centre +- 1) are built from scratch and their
 * overlapping pairs delivered into a sorted buffer, as a highly dynamic
 * simulation does each step. For Tables 2 and 3 each structure runs in a
 * child process (fork), so that its peak resident memory is its own: the
 * input boxes plus what the library holds. The parent never enters OpenMP
 * (a forked child of a process with an OpenMP pool may hang). */
#define _DEFAULT_SOURCE /* wait4 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "prox/prox.h"
#include "workloads.h"

static const char usage[] =
    "usage: prox bench spheres3d [OPTIONS]\n"
    "Workload W3 (docs/workloads.md, Poirrier 2009): N unit spheres, centres uniform in a\n"
    "cube of side cbrt(N 4/3 pi / d); the broad phase over their bounding boxes,\n"
    "built from scratch, pairs into a sorted buffer.\n"
    "\n"
    "Options:\n"
    "      --table 1|2|3  1: element splitting in the kd-tree (Poirrier 2009, Table 1) at\n"
    "                     d = 0.01 .. 1.0; 2 (and 3, the same rows): time, candidates\n"
    "                     and memory per structure (default 2)\n"
    "  -n, --n N          spheres (default: Table 1 10000; Tables 2, 3: 50000,\n"
    "                     100000, 500000, 1000000, 5000000)\n"
    "      --d D          volume fraction (default: Table 1 all five; else 0.1)\n"
    "      --algo A       Tables 2, 3: only this structure (brute, sap, kdtree-1,\n"
    "                     kdtree-2, multilevel, hierarchical, grid)\n"
    "  -s, --seed S       workload seed (default 1)\n"
    "  -t, --threads T    threads, 0 = OpenMP default (default 0)\n"
    "      --runs R       runs per measurement; the tables show medians (default 5)\n"
    "      --borrow       Tables 2, 3: the structures read the input boxes in place\n"
    "                     (prox_broad_desc.borrow_boxes) instead of copying them\n"
    "      --unsorted     Tables 2, 3: pairs in the structure's order\n"
    "                     (prox_sink_unsorted) instead of sorted by (i, j)\n"
    "      --split-cost C Tables 2, 3: the kd-tree's element splitting with\n"
    "                     prox_broad_desc.kdtree_split_cost C (default 1; 0 =\n"
    "                     every split that shrinks the volume, the paper's Figure 7)\n"
    "  -h, --help         this help\n"
    "\n"
    "Table 1 rows per d: split no (none), figure7 (every split that shrinks the\n"
    "cells' volume, as the paper) and cost1 (the default, kdtree_split_cost 1).\n"
    "Table 1 columns: sub_per_N (records after splitting / N), Vn_Ve (enclosing\n"
    "cells' volume over the spheres' volume), selected (the sweep's candidate\n"
    "pairs, repeats included), aabb_pairs (distinct overlapping boxes), true\n"
    "(centre distance <= 2).\n"
    "Tables 2, 3: each structure runs R times on one object and one pair buffer,\n"
    "as a simulation's steps: every run builds from scratch, into the memory the\n"
    "run before grew. Columns: build_s, pairs_s, total_s (wall clock), cpu_s\n"
    "(process CPU time of build + pairs, all threads), medians; first_s (total_s\n"
    "of the first run, on a fresh object: its pages faulted in); candidates (pairs\n"
    "given the exact box test; kdtree-1 counts repeats); pairs (overlapping boxes);\n"
    "true (overlapping spheres); struct_MB (the structure, the front's copy of\n"
    "the boxes included unless --borrow); peak_MB (peak RSS of the child\n"
    "process that ran it: input boxes included); input_MB (the boxes, 48 bytes\n"
    "each).\n"
    "Brute force runs up to N = 100,000. A structure not available yet is\n"
    "skipped. Exit status 1 if the structures disagree.\n";

#define BRUTE_MAX_N 100000
#define MAX_SIZES 16
#define MAX_D 8

typedef struct variant {
    const char *name;
    prox_broad_algo algo;
    int kdtree_variant;
} variant;

static const variant variants[] = {
    { "brute", PROX_BROAD_BRUTE, 2 },       { "sap", PROX_BROAD_SAP, 2 },
    { "kdtree-1", PROX_BROAD_KDTREE, 1 },   { "kdtree-2", PROX_BROAD_KDTREE, 2 },
    { "multilevel", PROX_BROAD_MULTILEVEL, 2 }, { "hierarchical", PROX_BROAD_HIERARCHICAL, 2 },
    { "grid", PROX_BROAD_GRID, 2 },
};
#define VARIANTS ((int)(sizeof variants / sizeof variants[0]))

typedef struct bench_options {
    int64_t n[MAX_SIZES];
    int sizes;
    double d[MAX_D];
    int ds;
    int table, threads, runs;
    bool borrow, unsorted;
    double split_cost;
    uint64_t seed;
    const char *algo;
} bench_options;

enum { OPT_N = 1, OPT_D, OPT_TABLE, OPT_ALGO, OPT_SEED, OPT_THREADS, OPT_RUNS, OPT_BORROW,
       OPT_UNSORTED, OPT_SPLIT_COST, OPT_HELP };

static const opt_spec specs[] = {
    { "n", 'n', true, OPT_N },         { "d", 0, true, OPT_D },
    { "table", 0, true, OPT_TABLE },   { "algo", 0, true, OPT_ALGO },
    { "seed", 's', true, OPT_SEED },   { "threads", 't', true, OPT_THREADS },
    { "runs", 0, true, OPT_RUNS },     { "borrow", 0, false, OPT_BORROW },
    { "unsorted", 0, false, OPT_UNSORTED }, { "split-cost", 0, true, OPT_SPLIT_COST },
    { "help", 'h', false, OPT_HELP },
};

static bool parse_options(int argc, char **argv, bench_options *o)
{
    *o = (bench_options){.table = 2, .runs = 5, .seed = PROX_WL_DEFAULT_SEED,
                         .split_cost = prox_default_broad_desc().kdtree_split_cost};
    opt_parser p = opt_init("bench", specs, sizeof specs / sizeof specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    bool workload = false;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        switch (id) {
        case OPT_ARG: parse_workload_name(&p, v, "spheres3d", &workload); break;
        case OPT_N:
            if (o->sizes == MAX_SIZES)
                die_usage("bench", "at most %d values of --n", MAX_SIZES);
            o->n[o->sizes++] = parse_count(&p, v, 1, PROX_MAX_POINTS);
            break;
        case OPT_D:
            o->d[0] = parse_double(&p, v);
            o->ds = 1;
            if (!(o->d[0] > 0 && o->d[0] <= 10))
                die_usage("bench", "--d must be in (0, 10]");
            break;
        case OPT_TABLE: o->table = (int)parse_count(&p, v, 1, 3); break;
        case OPT_ALGO: o->algo = v; break;
        case OPT_SEED: o->seed = parse_u64(&p, v); break;
        case OPT_THREADS: o->threads = (int)parse_count(&p, v, 0, 4096); break;
        case OPT_RUNS: o->runs = (int)parse_count(&p, v, 1, 1000); break;
        case OPT_BORROW: o->borrow = true; break;
        case OPT_UNSORTED: o->unsorted = true; break;
        case OPT_SPLIT_COST:
            o->split_cost = parse_double(&p, v);
            if (!(o->split_cost >= 0))
                die_usage("bench", "--split-cost must be >= 0");
            break;
        case OPT_HELP: return false;
        }
    }
    if (o->algo) {
        bool known = false;
        for (int k = 0; k < VARIANTS; k++)
            known = known || strcmp(o->algo, variants[k].name) == 0;
        if (!known)
            die_usage("bench", "--algo: unknown structure '%s'", o->algo);
    }
    static const int64_t table2_sizes[] = {50000, 100000, 500000, 1000000, 5000000};
    static const double table1_d[] = {0.01, 0.05, 0.1, 0.5, 1.0};
    if (o->sizes == 0 && o->table == 1)
        o->n[o->sizes++] = 10000;
    for (int k = 0; o->sizes == 0 && k < 5; k++)
        o->n[k] = table2_sizes[k];
    o->sizes = o->sizes ? o->sizes : 5;
    if (o->ds == 0 && o->table == 1)
        for (int k = 0; k < 5; k++)
            o->d[o->ds++] = table1_d[k];
    if (o->ds == 0)
        o->d[o->ds++] = 0.1;
    return true;
}

/* ---- the workload --------------------------------------------------------- */

/* Packed boxes (min x, y, z, max x, y, z) of the W3 spheres. */
static double *sphere_boxes(int64_t n, double d, uint64_t seed)
{
    double *c = xmalloc(checked_size(3 * n, sizeof(double)));
    double *b = xmalloc(checked_size(6 * n, sizeof(double)));
    prox_wl_spheres3d(n, d, seed, c);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            b[6 * i + k] = c[3 * i + k] - 1.0;
            b[6 * i + 3 + k] = c[3 * i + k] + 1.0;
        }
    free(c);
    return b;
}

/* Pairs whose spheres overlap: centre distance <= 2 (centres from the boxes). */
static int64_t true_overlaps(const double *b, const prox_pair_buffer *buf)
{
    int64_t count = 0;
    for (int64_t k = 0; k < buf->count; k++) {
        const double *p = b + 6 * (int64_t)buf->pairs[k].i, *q = b + 6 * (int64_t)buf->pairs[k].j;
        double d2 = 0.0;
        for (int a = 0; a < 3; a++) {
            double diff = 0.5 * (p[a] + p[3 + a]) - 0.5 * (q[a] + q[3 + a]);
            d2 += diff * diff;
        }
        count += d2 <= 4.0;
    }
    return count;
}

/* CPU time of the process, all threads (on a shared machine, one thread's
 * CPU time is steadier than the wall clock). */
static prox_broad_desc desc_for(const variant *v, int threads, double split_cost)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = v->algo;
    desc.kdtree_variant = v->kdtree_variant;
    desc.kdtree_split_cost = split_cost;
    desc.threads = threads;
    return desc;
}

/* ---- Table 1 -------------------------------------------------------------- */

/* Table 1's splitting rules: none, the paper's (Figure 7), the default. */
typedef struct split_rule {
    const char *name;
    bool split;
    double cost;
} split_rule;

static const split_rule split_rules[] = {{"no", false, 0.0}, {"figure7", true, 0.0},
                                         {"cost1", true, 1.0}};

static void table1_row(const bench_options *o, double d, const split_rule *rule)
{
    int64_t n = o->n[0];
    double *b = sphere_boxes(n, d, o->seed);
    prox_boxes boxes = prox_boxes_f64(b, n, 3);
    prox_broad_desc desc = desc_for(&variants[2], o->threads, rule->cost);
    desc.kdtree_split = rule->split;
    prox_broad *br = NULL;
    prox_pair_buffer buf;
    prox_pair_buffer_init(&buf, NULL);
    prox_kdtree_info info;
    prox_status st = prox_broad_create(&desc, &br);
    if (!st) st = prox_broad_build(br, &boxes);
    if (!st) st = prox_broad_kdtree_info(br, &info);
    if (!st) st = prox_broad_pairs(br, prox_sink_buffer(&buf), NULL);
    if (st)
        die_status(st, "kd-tree failed");
    double sphere_volume = 4.0 / 3.0 * 3.14159265358979323846;
    printf("| %g | %s | %.2f | %.4g | %lld | %lld | %lld |\n", d, rule->name,
           (double)info.sub_elements / (double)n, info.cell_volume / ((double)n * sphere_volume),
           (long long)info.sweep_pairs, (long long)buf.count, (long long)true_overlaps(b, &buf));
    fflush(stdout);
    prox_pair_buffer_free(&buf);
    prox_broad_destroy(br);
    free(b);
}

static int table1(const bench_options *o)
{
    printf("workload: spheres3d (W3) n=%lld seed=%llu; Poirrier 2009, Table 1\n", (long long)o->n[0],
           (unsigned long long)o->seed);
    printf("\n| d | split | sub_per_N | Vn_Ve | selected | aabb_pairs | true |\n");
    printf("|--:|:-----:|----------:|------:|---------:|-----------:|-----:|\n");
    for (int k = 0; k < o->ds; k++)
        for (int r = 0; r < 3; r++)
            table1_row(o, o->d[k], &split_rules[r]);
    return EXIT_OK;
}

/* ---- Tables 2 and 3 ------------------------------------------------------- */

typedef struct row {
    int available; /* 0: not available yet; 1: measured; -1: failed */
    double build_s, pairs_s, total_s, cpu_s, first_s, struct_mb;
    int64_t candidates, pairs, trues;
} row;

static row measure(const variant *v, const bench_options *o, const double *b, int64_t n)
{
    row r = {.available = 1};
    prox_boxes boxes = prox_boxes_f64(b, n, 3);
    prox_broad_desc desc = desc_for(v, o->threads, o->split_cost);
    desc.borrow_boxes = o->borrow;
    double *t = xmalloc(sizeof(double) * 4 * (size_t)o->runs);
    /* One object and one buffer for every run, as a simulation's steps: each
     * run builds from scratch, into the memory the last run grew. */
    prox_broad *br = NULL;
    prox_status st = prox_broad_create(&desc, &br);
    if (st == PROX_ERR_INVALID && strstr(prox_last_error(), "not available"))
        r.available = 0;
    prox_pair_buffer buf;
    prox_pair_buffer_init(&buf, NULL);
    for (int run = 0; run < o->runs && r.available == 1; run++) {
        prox_stats stats;
        double c0 = cpu_seconds(), t0 = now_seconds();
        if (!st) st = prox_broad_build(br, &boxes);
        double t1 = now_seconds();
        prox_sink sink = prox_sink_buffer(&buf);
        if (!st) st = prox_broad_pairs(br, o->unsorted ? prox_sink_unsorted(sink) : sink, &stats);
        double t2 = now_seconds(), c2 = cpu_seconds();
        if (st) {
            fprintf(stderr, "prox: bench: %s: %s\n", v->name, prox_last_error());
            r.available = -1;
            break;
        }
        t[run] = t1 - t0;
        t[o->runs + run] = t2 - t1;
        t[2 * o->runs + run] = t2 - t0;
        t[3 * o->runs + run] = c2 - c0;
        if (run == 0) {
            r.candidates = stats.candidates;
            r.pairs = stats.pairs;
            r.struct_mb = (double)stats.bytes / (1024.0 * 1024.0);
            r.trues = true_overlaps(b, &buf);
        }
    }
    prox_pair_buffer_free(&buf);
    prox_broad_destroy(br);
    if (r.available == 1) {
        r.first_s = t[2 * o->runs];
        r.build_s = median(t, o->runs);
        r.pairs_s = median(t + o->runs, o->runs);
        r.total_s = median(t + 2 * o->runs, o->runs);
        r.cpu_s = median(t + 3 * o->runs, o->runs);
    }
    free(t);
    return r;
}

/* Runs one structure in a child; its peak RSS comes from wait4. */
static row measure_in_child(const variant *v, const bench_options *o, const double *b,
                            int64_t n, double *peak_mb)
{
    int fd[2];
    if (pipe(fd) != 0)
        die(EXIT_INTERNAL, "bench: pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die(EXIT_INTERNAL, "bench: fork failed");
    if (pid == 0) {
        close(fd[0]);
        row r = measure(v, o, b, n);
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    row r = {.available = -1};
    ssize_t got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || got != (ssize_t)sizeof r || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        r.available = -1;
    *peak_mb = (double)ru.ru_maxrss / 1024.0;
    return r;
}

static bool table2_size(const bench_options *o, int64_t n, double d)
{
    double *b = sphere_boxes(n, d, o->seed);
    printf("\nN = %lld, d = %g, side %.4g, input_MB = %.1f\n\n", (long long)n, d,
           prox_wl_spheres3d_side(n, d), 48.0 * (double)n / (1024.0 * 1024.0));
    printf("| algo | build_s | pairs_s | total_s | cpu_s | first_s | candidates | pairs | true "
           "| struct_MB | peak_MB |\n");
    printf("|------|--------:|--------:|--------:|------:|--------:|-----------:|------:|-----:"
           "|----------:|--------:|\n");
    fflush(stdout);
    bool agree = true;
    int64_t expected = -1;
    for (int k = 0; k < VARIANTS; k++) {
        const variant *v = &variants[k];
        if (o->algo && strcmp(o->algo, v->name) != 0)
            continue;
        if (v->algo == PROX_BROAD_BRUTE && n > BRUTE_MAX_N)
            continue;
        double peak = 0;
        row r = measure_in_child(v, o, b, n, &peak);
        if (r.available == 0) {
            printf("| %s | not available yet | | | | | | | | | |\n", v->name);
            continue;
        }
        if (r.available < 0) {
            printf("| %s | failed | | | | | | | | | |\n", v->name);
            agree = false;
            continue;
        }
        agree = agree && (expected < 0 || expected == r.pairs);
        expected = r.pairs;
        printf("| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %lld | %lld | %lld | %.1f | %.1f |\n",
               v->name, r.build_s, r.pairs_s, r.total_s, r.cpu_s, r.first_s,
               (long long)r.candidates,
               (long long)r.pairs,
               (long long)r.trues, r.struct_mb, peak);
        fflush(stdout);
    }
    free(b);
    return agree;
}

int cmd_bench_spheres(int argc, char **argv)
{
    bench_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.threads);
    if (o.table == 1)
        return table1(&o);
    printf("workload: spheres3d (W3) seed=%llu; Poirrier 2009, Tables 2 and 3\n",
           (unsigned long long)o.seed);
    printf("threads: %d; times in seconds, median of %d runs; each structure in its own "
           "process%s%s; kd-tree split cost %g\n",
           effective_threads(o.threads), o.runs,
           o.borrow ? "; boxes read in place (--borrow)" : "",
           o.unsorted ? "; pairs in the structures' order (--unsorted)" : "", o.split_cost);
    bool agree = true;
    for (int k = 0; k < o.sizes; k++)
        agree = table2_size(&o, o.n[k], o.d[0]) && agree;
    if (!agree) {
        fprintf(stderr, "prox: bench: the structures disagree on the number of pairs\n");
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}
