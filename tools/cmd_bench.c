/* cmd_bench.c: `prox bench`: time every algorithm on a standard workload and
 * print a table that can be pasted into the docs as it is. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "prox/prox.h"
#include "workloads.h"

static const char usage[] =
    "usage: prox bench sph3d|nns2d [OPTIONS]   (mixed2d, dem3d: see prox bench NAME --help)\n"
    "Generate a standard workload (docs/workloads.md) in memory and time every\n"
    "algorithm and task on it: grid with linear keys (coordinates kept in double\n"
    "and in fixed point), with Morton keys (cells of r and of r/2) and with hash\n"
    "keys, the hierarchical hash, and brute force when N <= 20000.\n"
    "  sph3d  tasks: pairs into a buffer (sorted, and unsorted: traversal order),\n"
    "         count only, full lists (rows sorted, and unsorted)\n"
    "  nns2d  tasks: full lists (rows sorted, and unsorted)\n"
    "\n"
    "Options:\n"
    "  -n, --n N          points (default 1000000)\n"
    "  -k, --k K          nns2d: mean neighbours per point (default 5)\n"
    "  -s, --seed S       workload seed (default 1)\n"
    "  -t, --threads T    threads, 0 = OpenMP default (default 0)\n"
    "      --runs R       runs per measurement; the table shows medians (default 5)\n"
    "  -h, --help         this help\n"
    "\n"
    "A row's runs share one grid and one output, as a simulation's steps do:\n"
    "each run builds from scratch into the memory the run before grew.\n"
    "Columns: coords (the coordinates the grid kept: double, or fixed point with\n"
    "the few pairs near the radius decided in double from the caller's points),\n"
    "build_s (grid build), query_s (search), total_s (build + query),\n"
    "seconds, medians over the runs; first_s (total_s of the first run, on a\n"
    "fresh grid: its pages faulted in); pairs (unordered pairs found); candidates\n"
    "(exact distance tests); struct_MB (memory the structure held, from the\n"
    "library's statistics); kept_MB (scratch the grid kept after the query:\n"
    "stats.kept_bytes); peak_MB (peak RSS of the whole process so far).\n"
    "rows: how sorted buffers and lists were written (prox_grid_desc.rows):\n"
    "staged in cell order then copied into place, or in place (counted first).\n"
    "Exit status 1 if the algorithms disagree on the number of pairs.\n";

#define BRUTE_MAX_N 20000

typedef enum bench_task {
    TASK_PAIRS, TASK_COUNT, TASK_LISTS, TASK_PAIRS_UNSORTED, TASK_LISTS_UNSORTED
} bench_task;
static const char *const task_names[] = { "pairs", "count", "lists", "pairs-unsorted",
                                          "lists-unsorted" };
static const bench_task sph3d_tasks[] = { TASK_PAIRS, TASK_PAIRS_UNSORTED, TASK_COUNT, TASK_LISTS,
                                          TASK_LISTS_UNSORTED };
static const bench_task nns2d_tasks[] = { TASK_LISTS, TASK_LISTS_UNSORTED };

typedef struct variant {
    const char *algo_name, *keys_name, *coords_name, *cell_name;
    prox_algo algo;
    prox_keys keys;
    prox_coords coords;
    int cell_divisions;
    prox_rows rows;
} variant;

/* Brute force stays last: it is skipped for large N. */
static const variant variants[] = {
    { "grid", "linear", "double", "r", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE, 1, PROX_ROWS_STAGED },
    { "grid", "linear", "fixed", "r", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_FIXED, 1, PROX_ROWS_STAGED },
    { "grid", "linear", "fixed", "r", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_FIXED, 1,
      PROX_ROWS_IN_PLACE },
    { "grid", "morton", "double", "r", PROX_ALGO_GRID, PROX_KEYS_MORTON, PROX_COORDS_DOUBLE, 1, PROX_ROWS_STAGED },
    { "grid", "morton", "double", "r/2", PROX_ALGO_GRID, PROX_KEYS_MORTON, PROX_COORDS_DOUBLE, 2, PROX_ROWS_STAGED },
    { "grid", "hash", "double", "r", PROX_ALGO_GRID, PROX_KEYS_HASH, PROX_COORDS_DOUBLE, 1, PROX_ROWS_STAGED },
    { "hierarchical", "-", "-", "r", PROX_ALGO_HIERARCHICAL, PROX_KEYS_MORTON, PROX_COORDS_AUTO,
      1, PROX_ROWS_AUTO }, /* Listing 3 */
    { "brute", "-", "-", "-", PROX_ALGO_BRUTE, PROX_KEYS_MORTON, PROX_COORDS_AUTO, 1,
      PROX_ROWS_AUTO },
};
#define VARIANTS ((int)(sizeof variants / sizeof variants[0]))

typedef struct bench_options {
    const char *workload;
    bool nns2d;
    int64_t n;
    double k;
    uint64_t seed;
    int threads;
    int runs;
} bench_options;

enum { OPT_N = 1, OPT_K, OPT_SEED, OPT_THREADS, OPT_RUNS, OPT_HELP };

static const opt_spec bench_specs[] = {
    { "n", 'n', true, OPT_N },
    { "k", 'k', true, OPT_K },
    { "seed", 's', true, OPT_SEED },
    { "threads", 't', true, OPT_THREADS },
    { "runs", 0, true, OPT_RUNS },
    { "help", 'h', false, OPT_HELP },
};

/* ---- options ----------------------------------------------------------- */

static bool apply_option(opt_parser *p, bench_options *o, int id, const char *v)
{
    switch (id) {
    case OPT_N: o->n = parse_count(p, v, 1, PROX_MAX_POINTS); break;
    case OPT_K: o->k = parse_double(p, v); break;
    case OPT_SEED: o->seed = parse_u64(p, v); break;
    case OPT_THREADS: o->threads = (int)parse_count(p, v, 0, 4096); break;
    case OPT_RUNS: o->runs = (int)parse_count(p, v, 1, 1000); break;
    case OPT_HELP: return false;
    }
    if (id == OPT_K && !(o->k > 0))
        die_usage("bench", "option '%s' must be > 0", p->current);
    return true;
}

/* Returns false when --help was asked for. */
static bool parse_options(int argc, char **argv, bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->n = 1000000;
    o->k = 5.0;
    o->seed = PROX_WL_DEFAULT_SEED;
    o->runs = 5;
    opt_parser p = opt_init("bench", bench_specs, sizeof bench_specs / sizeof bench_specs[0],
                            argc, argv);
    p.next = 1;
    const char *v;
    int id;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        if (id == OPT_ARG) {
            if (o->workload != NULL)
                die_usage("bench", "one workload only ('%s' and '%s')", o->workload, v);
            if (strcmp(v, "sph3d") != 0 && strcmp(v, "nns2d") != 0)
                die_usage("bench", "unknown workload '%s' (sph3d or nns2d)", v);
            o->workload = v;
        } else if (!apply_option(&p, o, id, v)) {
            return false;
        }
    }
    if (o->workload == NULL)
        die_usage("bench", "missing workload (sph3d or nns2d)");
    o->nns2d = strcmp(o->workload, "nns2d") == 0;
    return true;
}

/* ---- the header: machine and command ------------------------------------ */

static void read_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
            snprintf(buf, size, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

/* The command as typed, quoting the words a shell would split. */
static void print_command(int argc, char **argv)
{
    printf("command: prox");
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] != '\0' && strpbrk(argv[i], " \t'\"$\\*?;&|<>()") == NULL)
            printf(" %s", argv[i]);
        else
            printf(" '%s'", argv[i]);
    }
    printf("\n");
}

static void print_header(int argc, char **argv, const bench_options *o, double radius)
{
    struct utsname un;
    char cpu[256];
    read_cpu_model(cpu, sizeof cpu);
    if (uname(&un) != 0)
        snprintf(un.machine, sizeof un.machine, "unknown");
    print_command(argc, argv);
    printf("machine: %s, %ld CPUs online, %s\n", un.machine, sysconf(_SC_NPROCESSORS_ONLN), cpu);
    printf("build: prox %s, simd=%s, cc %s\n", PROX_VERSION_STRING, prox_simd_level(), __VERSION__);
    printf("workload: %s n=%lld seed=%llu radius=%.17g", o->workload, (long long)o->n,
           (unsigned long long)o->seed, radius);
    if (o->nns2d)
        printf(" k=%g", o->k);
    printf("\nthreads: %d; times in seconds, median of %d runs\n\n", effective_threads(o->threads),
           o->runs);
    printf("| algo | keys | coords | cell | rows | task | build_s | query_s | total_s | first_s "
           "| pairs | candidates | struct_MB | kept_MB | peak_MB |\n");
    printf("|------|------|--------|------|------|------|--------:|--------:|--------:|--------:"
           "|------:|-----------:|----------:|--------:|--------:|\n");
    fflush(stdout);
}

/* ---- measuring --------------------------------------------------------- */

typedef struct sinks {
    prox_pair_buffer buffer;
    prox_lists lists;
} sinks;

typedef struct timing {
    double build_s, query_s;
    prox_stats stats;
} timing;

static prox_sink sink_for(bench_task task, sinks *s)
{
    if (task == TASK_COUNT)
        return prox_sink_count();
    if (task == TASK_LISTS)
        return prox_sink_lists(&s->lists);
    if (task == TASK_LISTS_UNSORTED)
        return prox_sink_unsorted(prox_sink_lists(&s->lists));
    if (task == TASK_PAIRS_UNSORTED)
        return prox_sink_unsorted(prox_sink_buffer(&s->buffer));
    return prox_sink_buffer(&s->buffer);
}

/* One run; a grid runs on `grid`, which the row's runs share as a
 * simulation's steps do: each builds from scratch into the memory the
 * last one grew. */
static timing run_once(const variant *v, bench_task task, const prox_points *points,
                       const prox_grid_desc *desc, prox_grid *grid, sinks *s)
{
    timing t;
    memset(&t, 0, sizeof t);
    prox_status st;
    if (v->algo != PROX_ALGO_GRID) { /* brute, hierarchical: one-shot calls */
        double t0 = now_seconds();
        st = prox_pairs(points, desc, v->algo, sink_for(task, s), &t.stats);
        t.query_s = now_seconds() - t0;
        if (st != PROX_OK)
            die_status(st, "brute-force search failed");
        return t;
    }
    double t0 = now_seconds();
    st = prox_grid_build(grid, points);
    double t1 = now_seconds();
    if (st != PROX_OK)
        die_status(st, "cannot build the grid");
    st = prox_grid_pairs(grid, sink_for(task, s), &t.stats);
    t.build_s = t1 - t0;
    t.query_s = now_seconds() - t1;
    if (st != PROX_OK)
        die_status(st, "grid search failed");
    return t;
}

/* Runs one table row; returns its pair count, or -1 if the runs disagree. */
static int64_t measure_row(const variant *v, bench_task task, const prox_points *points,
                           const prox_grid_desc *base, int runs, sinks *s)
{
    prox_grid_desc desc = *base;
    desc.keys = v->keys;
    desc.coords = v->coords;
    desc.cell_divisions = v->cell_divisions;
    desc.rows = v->rows;
    double *build = xmalloc(sizeof(double) * 3 * (size_t)runs);
    double *query = build + runs, *total = query + runs;
    prox_grid *grid = NULL;
    if (v->algo == PROX_ALGO_GRID) {
        prox_status st = prox_grid_create(&desc, &grid);
        if (st != PROX_OK)
            die_status(st, "cannot create the grid");
    }
    timing first = run_once(v, task, points, &desc, grid, s);
    bool consistent = true;
    for (int r = 0; r < runs; r++) {
        timing t = r == 0 ? first : run_once(v, task, points, &desc, grid, s);
        consistent = consistent && t.stats.pairs == first.stats.pairs;
        build[r] = t.build_s;
        query[r] = t.query_s;
        total[r] = t.build_s + t.query_s;
    }
    /* the coordinates the grid kept (fixed point may fall back to doubles) */
    const char *coords = v->algo != PROX_ALGO_GRID                  ? "-"
                         : first.stats.coords == PROX_COORDS_FIXED ? "fixed"
                                                                   : "double";
    const char *rows = v->algo != PROX_ALGO_GRID        ? "-"
                       : v->rows == PROX_ROWS_IN_PLACE ? "in-place"
                                                       : "staged";
    double mb = 1024.0 * 1024.0;
    printf("| %s | %s | %s | %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %lld | %lld | %.1f | %.1f "
           "| %.1f |\n",
           v->algo_name, v->keys_name, coords, v->cell_name, rows, task_names[task],
           median(build, runs), median(query, runs), median(total, runs), total[0],
           (long long)first.stats.pairs, (long long)first.stats.candidates,
           (double)first.stats.bytes / mb, (double)first.stats.kept_bytes / mb, peak_rss_mb());
    fflush(stdout);
    prox_grid_destroy(grid);
    free(build);
    return consistent ? first.stats.pairs : -1;
}

/* Every row; returns false if two rows (or two runs) disagree on the pairs. */
static bool run_table(const bench_options *o, const prox_points *points, const prox_grid_desc *desc)
{
    sinks s;
    prox_pair_buffer_init(&s.buffer, NULL);
    prox_lists_init(&s.lists, NULL);
    int variant_count = o->n <= BRUTE_MAX_N ? VARIANTS : VARIANTS - 1;
    int64_t expected = -2;
    bool agree = true;
    for (int v = 0; v < variant_count; v++) {
        const bench_task *tasks = o->nns2d ? nns2d_tasks : sph3d_tasks;
        int task_count = o->nns2d ? (int)(sizeof nns2d_tasks / sizeof *nns2d_tasks)
                                  : (int)(sizeof sph3d_tasks / sizeof *sph3d_tasks);
        for (int t = 0; t < task_count; t++) {
            int64_t pairs = measure_row(&variants[v], tasks[t], points, desc, o->runs, &s);
            agree = agree && pairs >= 0 && (expected == -2 || pairs == expected);
            expected = pairs;
        }
    }
    if (variant_count < VARIANTS)
        printf("\nbrute force skipped: n = %lld > %d\n", (long long)o->n, BRUTE_MAX_N);
    prox_pair_buffer_free(&s.buffer);
    prox_lists_free(&s.lists);
    return agree;
}

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "mixed2d") == 0)
            return cmd_bench_boxes(argc, argv); /* the box family: cmd_bench_boxes.c */
        else if (strcmp(argv[i], "spheres3d") == 0)
            return cmd_bench_spheres(argc, argv); /* W3, Poirrier 2009, Tables 1-3 */
        else if (strcmp(argv[i], "dem3d") == 0)
            return cmd_bench_dem(argc, argv); /* W6, Poirrier 2009, Figure 11: cmd_bench_dem.c */
    bench_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.threads);
    int dim = o.nns2d ? 2 : 3;
    double *xyz = xmalloc(checked_size(o.n * dim, sizeof(double)));
    prox_grid_desc desc = prox_default_grid_desc();
    desc.threads = o.threads;
    if (o.nns2d) {
        prox_wl_nns2d(o.n, o.seed, xyz);
        desc.radius = prox_wl_nns2d_radius(o.n, o.k);
    } else {
        prox_wl_sph3d(o.n, o.seed, xyz);
        desc.radius = prox_wl_sph3d_radius(o.n);
    }
    prox_points points = prox_points_f64(xyz, o.n, dim);
    print_header(argc, argv, &o, desc.radius);
    bool agree = run_table(&o, &points, &desc);
    free(xyz);
    if (!agree) {
        fprintf(stderr, "prox: bench: the algorithms disagree on the number of pairs\n");
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}
