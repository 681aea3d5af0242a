/* cmd_bench_dem.c: `prox bench dem3d`: Poirrier 2009, Figure 11 and W6. The
 * falling spheres of examples/scenes/dem.h advance once; at every step each
 * broad-phase structure is updated (or rebuilt) over the same AABBs and
 * asked for the pairs, in turn, and must return exactly the pairs of the
 * first structure. The table gives each structure's time per step (update
 * + pairs) over steps 0-10 and 50-60, mean and standard deviation over
 * those steps and the runs, as the paper's Figure 11 does. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "dem.h"
#include "prox/prox.h"

static const char usage[] =
    "usage: prox bench dem3d [OPTIONS]\n"
    "W6 (Poirrier 2009, section 6, Figure 11): N spheres of radius 1 start as W3's spheres\n"
    "(d = 0.1), fall and pile up on the floor; overlapping pairs are resolved one by\n"
    "one after each step (examples/scenes/dem.h). At every step each structure is\n"
    "updated over the same boxes (prox_broad_update; --rebuild: prox_broad_build) and\n"
    "returns the overlapping pairs, which must be those of the first structure.\n"
    "\n"
    "Options:\n"
    "  -n, --n N          spheres (default 10000)\n"
    "      --steps S      steps simulated (default 61: steps 0..60)\n"
    "  -s, --seed S       W3 seed (default 1)\n"
    "  -t, --threads T    threads, 0 = OpenMP default (default 0)\n"
    "      --runs R       runs of the whole simulation (default 3)\n"
    "      --algo LIST    structures, comma-separated (default: every one available of\n"
    "                     kdtree,sap,hierarchical,multilevel,grid,brute)\n"
    "      --rebuild      build from scratch every step instead of updating\n"
    "      --cpu-time     time with the process CPU clock (use with --threads 1 on a\n"
    "                     shared machine)\n"
    "      --plot PNG     gnuplot chart of ms per step per structure (median over the\n"
    "                     runs) to PNG, its data to PNG with .dat in place of .png\n"
    "  -h, --help         this help\n"
    "\n"
    "Columns: ms per step (update + pairs), mean +- standard deviation over steps\n"
    "0-10 and 50-60 of every run (Poirrier 2009, Figure 11 a and b); candidates (exact box\n"
    "tests, prox_stats.candidates), box pairs (overlapping AABBs) and true pairs\n"
    "(overlapping spheres, centres <= 2 apart) as means over steps 50-60 of the last\n"
    "run; rebuilt: steps where the update rebuilt. Brute force answers only at the\n"
    "steps of the two windows (it is updated at every step). Exit status 1 if the\n"
    "structures disagree.\n";

#define MAX_STRUCTURES 8
static const char *const all_names[] = {"kdtree", "sap", "hierarchical", "multilevel", "grid",
                                        "brute"};

typedef struct bench_options {
    int64_t n, steps;
    uint64_t seed;
    int threads, runs;
    bool rebuild, cpu_time;
    const char *algo_list;
    const char *plot;
} bench_options;

typedef struct structure {
    const char *name;
    prox_broad_algo algo;
    prox_broad *broad;
    prox_pair_buffer pairs;
    double *ms;          /* runs x steps; NAN where not asked */
    double *candidates;  /* steps, last run */
    int64_t rebuilt;     /* last run */
    bool built;
} structure;

enum { OPT_N = 1, OPT_STEPS, OPT_SEED, OPT_THREADS, OPT_RUNS, OPT_ALGO, OPT_REBUILD,
       OPT_CPU_TIME, OPT_PLOT, OPT_HELP };

static const opt_spec specs[] = {
    {"n", 'n', true, OPT_N},
    {"steps", 0, true, OPT_STEPS},
    {"seed", 's', true, OPT_SEED},
    {"threads", 't', true, OPT_THREADS},
    {"runs", 0, true, OPT_RUNS},
    {"algo", 0, true, OPT_ALGO},
    {"rebuild", 0, false, OPT_REBUILD},
    {"cpu-time", 0, false, OPT_CPU_TIME},
    {"plot", 0, true, OPT_PLOT},
    {"help", 'h', false, OPT_HELP},
};

/* Returns false when --help was asked for. */
static bool parse_options(int argc, char **argv, bench_options *o)
{
    *o = (bench_options){.n = 10000, .steps = 61, .seed = 1, .runs = 3};
    opt_parser p = opt_init("bench", specs, sizeof specs / sizeof specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    bool workload = false;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        switch (id) {
        case OPT_ARG: parse_workload_name(&p, v, "dem3d", &workload); break;
        case OPT_N: o->n = parse_count(&p, v, 2, PROX_MAX_POINTS); break;
        case OPT_STEPS: o->steps = parse_count(&p, v, 1, 1000000); break;
        case OPT_SEED: o->seed = parse_u64(&p, v); break;
        case OPT_THREADS: o->threads = (int)parse_count(&p, v, 0, 4096); break;
        case OPT_RUNS: o->runs = (int)parse_count(&p, v, 1, 1000); break;
        case OPT_ALGO: o->algo_list = v; break;
        case OPT_REBUILD: o->rebuild = true; break;
        case OPT_CPU_TIME: o->cpu_time = true; break;
        case OPT_PLOT:
            if (!has_suffix(v, ".png"))
                die_usage("bench", "--plot: '%s' does not end in .png", v);
            o->plot = v;
            break;
        case OPT_HELP: return false;
        }
    }
    return true;
}

static bool available(prox_broad_algo algo)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = algo;
    prox_broad *b = NULL;
    bool ok = prox_broad_create(&desc, &b) == PROX_OK;
    prox_broad_destroy(b);
    return ok;
}

/* The structures named by --algo (all must exist), or every available one. */
static int select_structures(const bench_options *o, structure *s)
{
    int count = 0;
    char list[256];
    if (o->algo_list && strlen(o->algo_list) >= sizeof list)
        die_usage("bench", "--algo: list too long");
    snprintf(list, sizeof list, "%s", o->algo_list ? o->algo_list : "");
    int names = o->algo_list ? 0 : (int)(sizeof all_names / sizeof all_names[0]);
    const char *name[MAX_STRUCTURES];
    for (int k = 0; k < names; k++)
        name[k] = all_names[k];
    for (char *tok = o->algo_list ? strtok(list, ",") : NULL; tok; tok = strtok(NULL, ",")) {
        if (names == MAX_STRUCTURES)
            die_usage("bench", "--algo: at most %d structures", MAX_STRUCTURES);
        name[names++] = tok;
    }
    for (int k = 0; k < names; k++) {
        prox_broad_algo algo;
        if (prox_broad_algo_parse(name[k], &algo) != PROX_OK)
            die_usage("bench", "--algo: %s", prox_last_error());
        if (!available(algo)) {
            if (o->algo_list)
                die_usage("bench", "--algo: %s is not available in this build", name[k]);
            printf("%s: not available in this build (skipped)\n", name[k]);
            continue;
        }
        s[count] = (structure){.name = prox_broad_algo_name(algo), .algo = algo};
        s[count].ms = xmalloc(checked_size((int64_t)o->runs * o->steps, sizeof(double)));
        s[count].candidates = xmalloc(checked_size(o->steps, sizeof(double)));
        prox_pair_buffer_init(&s[count].pairs, NULL);
        count++;
    }
    if (count == 0)
        die_usage("bench", "no structure to run");
    return count;
}

static double clock_ms(bool cpu)
{
    struct timespec t;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static bool in_window(int64_t step)
{
    return step <= 10 || (step >= 50 && step <= 60);
}

/* One structure at one step: update (or build) and pairs; its time. */
static void broad_step(const bench_options *o, structure *s, const prox_boxes *boxes,
                       int64_t step, int run, bool alone)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = s->algo;
    desc.threads = o->threads;
    desc.cell_size = 2.0; /* the grid: one sphere diameter, as the scene uses */
    prox_status st = PROX_OK;
    if (!s->broad && (st = prox_broad_create(&desc, &s->broad)) != PROX_OK)
        die_status(st, s->name);
    bool ask = s->algo != PROX_BROAD_BRUTE || in_window(step) || alone;
    prox_stats update = {0}, pairs = {0};
    double t0 = clock_ms(o->cpu_time);
    if (!s->built || o->rebuild) {
        st = prox_broad_build(s->broad, boxes);
        update.rebuilt = true;
        s->built = true;
    } else {
        st = prox_broad_update(s->broad, boxes, &update);
    }
    if (st == PROX_OK && ask)
        st = prox_broad_pairs(s->broad, prox_sink_buffer(&s->pairs), &pairs);
    double t1 = clock_ms(o->cpu_time);
    if (st)
        die_status(st, s->name);
    s->ms[(int64_t)run * o->steps + step] = ask ? t1 - t0 : NAN;
    s->candidates[step] = ask ? (double)pairs.candidates : NAN;
    s->rebuilt += step > 0 && update.rebuilt;
}

static bool same_pairs(const prox_pair_buffer *a, const prox_pair_buffer *b)
{
    return a->count == b->count &&
           (a->count == 0 || memcmp(a->pairs, b->pairs, (size_t)a->count * sizeof *a->pairs) == 0);
}

typedef struct window_counts {
    double box_pairs, contacts; /* means over steps 50-60 of the last run */
    int64_t steps;
    double side; /* the initial cloud's side L */
} window_counts;

/* One run of the whole simulation; false if the structures disagreed. */
static bool run_once(const bench_options *o, structure *s, int count, int run, window_counts *wc)
{
    dem_params p = dem_default_params();
    p.spheres = o->n;
    p.seed = o->seed;
    p.threads = o->threads;
    dem_world w;
    prox_status st = dem_world_init(&w, &p);
    if (st)
        die_status(st, "setting up the spheres");
    *wc = (window_counts){.side = w.side};
    for (int k = 0; k < count; k++) {
        s[k].built = false;
        s[k].rebuilt = 0;
    }
    bool agree = true;
    for (int64_t step = 0; step < o->steps; step++) {
        dem_world_integrate(&w);
        prox_boxes boxes = prox_boxes_f64(w.bounds, w.n, 3);
        const prox_pair_buffer *reference = NULL;
        for (int k = 0; k < count; k++) {
            broad_step(o, &s[k], &boxes, step, run, count == 1);
            if (isnan(s[k].ms[(int64_t)run * o->steps + step]))
                continue;
            if (!reference) {
                reference = &s[k].pairs;
            } else if (!same_pairs(reference, &s[k].pairs)) {
                fprintf(stderr, "prox: bench dem3d: step %lld: %s returns %lld pairs, %s %lld\n",
                        (long long)step, s[k].name, (long long)s[k].pairs.count, s[0].name,
                        (long long)reference->count);
                agree = false;
            }
        }
        /* The physics goes on with the pairs every structure agreed on. */
        if ((st = prox_pair_buffer_reserve(&w.pairs, reference->count)) != PROX_OK)
            die_status(st, "pairs");
        memcpy(w.pairs.pairs, reference->pairs, (size_t)reference->count * sizeof *w.pairs.pairs);
        w.pairs.count = reference->count;
        dem_step_info info = {0};
        dem_world_narrow(&w, &info);
        if (step >= 50 && step <= 60) {
            wc->box_pairs += (double)reference->count;
            wc->contacts += (double)info.contacts;
            wc->steps++;
        }
    }
    if (wc->steps) {
        wc->box_pairs /= (double)wc->steps;
        wc->contacts /= (double)wc->steps;
    }
    dem_world_free(&w);
    return agree;
}

/* Mean and standard deviation of the times over steps [first, last] of every run. */
static void window_stats(const bench_options *o, const structure *s, int64_t first, int64_t last,
                         double *mean, double *sd, double *candidates)
{
    double sum = 0, sum2 = 0, cand = 0;
    int64_t n = 0, nc = 0;
    for (int r = 0; r < o->runs; r++)
        for (int64_t step = first; step <= last && step < o->steps; step++) {
            double t = s->ms[(int64_t)r * o->steps + step];
            if (isnan(t))
                continue;
            sum += t;
            sum2 += t * t;
            n++;
        }
    for (int64_t step = first; step <= last && step < o->steps; step++)
        if (!isnan(s->candidates[step])) {
            cand += s->candidates[step];
            nc++;
        }
    *mean = n ? sum / (double)n : NAN;
    *sd = n > 1 ? sqrt(fmax(0.0, (sum2 - sum * sum / (double)n) / (double)(n - 1))) : NAN;
    *candidates = nc ? cand / (double)nc : NAN;
}

/* "mean +- sd", or "-" for a window the run did not reach. */
static const char *format_window(char *buf, size_t size, double mean, double sd)
{
    if (isnan(mean))
        snprintf(buf, size, "-");
    else if (isnan(sd))
        snprintf(buf, size, "%.2f", mean);
    else
        snprintf(buf, size, "%.2f +- %.2f", mean, sd);
    return buf;
}

static void print_table(const bench_options *o, const structure *s, int count,
                        const window_counts *wc, double side)
{
    printf("workload: W6 dem3d n=%lld seed=%llu d=0.1 L=%.6g, %lld steps, %s each step\n",
           (long long)o->n, (unsigned long long)o->seed, side, (long long)o->steps,
           o->rebuild ? "rebuilt" : "updated");
    printf("threads: %d; %s clock; ms per step (update + pairs), mean +- sd over the steps "
           "of %d runs\n\n",
           effective_threads(o->threads), o->cpu_time ? "process CPU" : "wall", o->runs);
    printf("| structure | steps 0-10 ms | steps 50-60 ms | candidates 50-60 | box pairs 50-60 "
           "| true pairs 50-60 | rebuilt |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < count; k++) {
        double m0, sd0, c0, m1, sd1, c1;
        window_stats(o, &s[k], 0, 10, &m0, &sd0, &c0);
        window_stats(o, &s[k], 50, 60, &m1, &sd1, &c1);
        char early[64], late[64], counts[96] = "- | - | -";
        if (wc->steps > 0)
            snprintf(counts, sizeof counts, "%.0f | %.0f | %.0f", c1, wc->box_pairs,
                     wc->contacts);
        printf("| %s | %s | %s | %s | %lld/%lld |\n", s[k].name,
               format_window(early, sizeof early, m0, sd0),
               format_window(late, sizeof late, m1, sd1), counts, (long long)s[k].rebuilt,
               (long long)(o->steps - 1));
    }
    fflush(stdout);
}

/* Median over the runs of one structure's time at one step. */
static double step_median(const bench_options *o, const structure *s, int64_t step, double *tmp)
{
    int n = 0;
    for (int r = 0; r < o->runs; r++) {
        double t = s->ms[(int64_t)r * o->steps + step];
        if (!isnan(t))
            tmp[n++] = t;
    }
    if (n == 0)
        return NAN;
    return median(tmp, n);
}

static void write_plot(const bench_options *o, const structure *s, int count)
{
    size_t len = strlen(o->plot);
    char *data = xmalloc(len + 1);
    memcpy(data, o->plot, len - 4);
    memcpy(data + len - 4, ".dat", 5);
    FILE *f = fopen(data, "w");
    if (!f)
        die(EXIT_IO, "cannot write %s", data);
    double *tmp = xmalloc(checked_size(o->runs, sizeof(double)));
    fprintf(f, "# prox bench dem3d n=%lld: ms per step (median of %d runs)\n# step", (long long)o->n,
            o->runs);
    for (int k = 0; k < count; k++)
        fprintf(f, " %s", s[k].name);
    fprintf(f, "\n");
    for (int64_t step = 0; step < o->steps; step++) {
        fprintf(f, "%lld", (long long)step);
        for (int k = 0; k < count; k++) {
            double m = step_median(o, &s[k], step, tmp);
            fprintf(f, isnan(m) ? " NaN" : " %.4f", m);
        }
        fprintf(f, "\n");
    }
    free(tmp);
    if (fclose(f) != 0)
        die(EXIT_IO, "cannot write %s", data);
    FILE *g = popen("gnuplot", "w");
    if (!g)
        die(EXIT_IO, "cannot run gnuplot");
    fprintf(g, "set terminal pngcairo size 900,560 font ',11'\nset output '%s'\n", o->plot);
    fprintf(g, "set title 'W6 falling spheres, N = %lld: broad phase per step (update + pairs)'\n",
            (long long)o->n);
    fprintf(g, "set xlabel 'step'\nset ylabel 'ms per step'\nset logscale y\nset grid\n"
               "set key outside right\n");
    fprintf(g, "set object 1 rect from 0,graph 0 to 10,graph 1 fc rgb '#eeeeee' behind\n");
    fprintf(g, "set object 2 rect from 50,graph 0 to 60,graph 1 fc rgb '#eeeeee' behind\n");
    fprintf(g, "plot");
    for (int k = 0; k < count; k++)
        fprintf(g, "%s '%s' using 1:%d with linespoints pt 7 ps 0.5 title '%s'", k ? "," : "",
                data, k + 2, s[k].name);
    fprintf(g, "\n");
    if (pclose(g) != 0)
        die(EXIT_IO, "gnuplot failed writing %s", o->plot);
    printf("\nplot: %s (data: %s)\n", o->plot, data);
    free(data);
}

int cmd_bench_dem(int argc, char **argv)
{
    bench_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.threads);
    printf("command: prox");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    structure s[MAX_STRUCTURES];
    int count = select_structures(&o, s);
    bool agree = true;
    window_counts wc = {0};
    for (int run = 0; run < o.runs; run++)
        agree = run_once(&o, s, count, run, &wc) && agree;
    print_table(&o, s, count, &wc, wc.side);
    if (o.plot)
        write_plot(&o, s, count);
    printf("\n%s\n", agree ? "every structure returned the same pairs at every step"
                           : "STRUCTURES DISAGREE");
    for (int k = 0; k < count; k++) {
        prox_broad_destroy(s[k].broad);
        prox_pair_buffer_free(&s[k].pairs);
        free(s[k].ms);
        free(s[k].candidates);
    }
    return agree ? EXIT_OK : EXIT_INTERNAL;
}
