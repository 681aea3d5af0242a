/* cmd_knn.c: `prox knn`: the k nearest neighbours of every point of a
 * file (or of every point of a second file) among the points of the
 * first. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_pairs_cell.h"
#include "commands.h"
#include "input.h"
#include "output.h"
#include "prox/prox.h"

static const char usage[] =
    "usage: prox knn --k K [OPTIONS] POINTS\n"
    "For each point of POINTS (or of --queries FILE), its K nearest points of POINTS,\n"
    "nearest first; points at the same distance in ascending index order.\n"
    "\n"
    "POINTS: one point per line (x y [z], spaces, tabs or commas; '#' comments; '-'\n"
    "stdin), numpy's .npy ('<f8' or '<f4', shape (n, 2) or (n, 3)), or raw\n"
    "little-endian .f64 / .f32 (give --dim).\n"
    "\n"
    "Options:\n"
    "      --k K                 neighbours per query, >= 1 (required)\n"
    "      --max-radius R        only neighbours within R (closed ball): fewer than K\n"
    "                            where fewer are that near\n"
    "      --queries FILE        query the points of FILE (same dimension) instead of\n"
    "                            POINTS themselves\n"
    "      --include-self        a point of POINTS is its own neighbour (distance 0);\n"
    "                            by default it is left out (its duplicates are not)\n"
    "      --periodic LX,LY[,LZ] periodic box [0,LX)x[0,LY)[x[0,LZ)]: minimum images\n"
    "      --cell A[,B,...]      a periodic cell of any shape (include/prox/cell.h): D\n"
    "                            lengths, or the D*D numbers of its rows (the cell\n"
    "                            vectors); neighbours are images (j, S) of the points:\n"
    "                            x_j + S.cell, several of one j in a small cell, and\n"
    "                            a point's own images (S != 0) too\n"
    "      --pbc F,F[,F]         periodic axes of --cell: 1/0, true/false, yes/no\n"
    "                            (default: every axis)\n"
    "      --dim 2|3             dimension (default: the file's, 3 for raw binary)\n"
    "  -t, --threads T           threads, 0 = OpenMP default (default 0)\n"
    "      --count               print only the number of neighbours found\n"
    "      --stats               print key=value timings and figures to stderr\n"
    "  -o, --output OUT          write to OUT (default stdout); OUT appears only when\n"
    "                            complete; an OUT that is an input file is refused\n"
    "  -h, --help                this help\n"
    "\n"
    "Output: one line 'q j d' per neighbour: query q's neighbour j (0-based) at\n"
    "distance d (sqrt of the squared distance in double, printed to round-trip),\n"
    "queries in order, each query's neighbours nearest first; with --cell, lines\n"
    "'q j d Sx Sy [Sz]' (the image's integer shift S), ties in (j, S) order.\n"
    "\n"
    "Exit status: 0 ok, 2 usage error (K < 1, bad option), 3 bad data (malformed\n"
    "file, NaN or infinite coordinate), 4 I/O error, 5 out of memory.\n";

enum { OPT_K = 1, OPT_MAX_RADIUS, OPT_QUERIES, OPT_SELF, OPT_PERIODIC, OPT_CELL, OPT_PBC,
       OPT_DIM, OPT_THREADS, OPT_COUNT, OPT_STATS, OPT_OUTPUT, OPT_HELP };

static const opt_spec specs[] = {
    { "k", 0, true, OPT_K },                 { "max-radius", 0, true, OPT_MAX_RADIUS },
    { "queries", 0, true, OPT_QUERIES },     { "include-self", 0, false, OPT_SELF },
    { "periodic", 0, true, OPT_PERIODIC },   { "cell", 0, true, OPT_CELL },
    { "pbc", 0, true, OPT_PBC },             { "dim", 0, true, OPT_DIM },
    { "threads", 't', true, OPT_THREADS },   { "count", 0, false, OPT_COUNT },
    { "stats", 0, false, OPT_STATS },        { "output", 'o', true, OPT_OUTPUT },
    { "help", 'h', false, OPT_HELP },
};

typedef struct knn_options {
    const char *input, *queries, *output;
    int dim, periods;
    double period[3];
    pairs_cell_options cell; /* --cell and --pbc (cmd_pairs_cell.h) */
    prox_knn_desc desc;
    bool has_k, count, stats;
} knn_options;

static bool apply_option(opt_parser *p, knn_options *o, int id, const char *v)
{
    switch (id) {
    case OPT_K: o->desc.k = (int)parse_count(p, v, 1, 1 << 30); o->has_k = true; break;
    case OPT_MAX_RADIUS: o->desc.max_radius = parse_double(p, v); break;
    case OPT_QUERIES: o->queries = v; break;
    case OPT_SELF: o->desc.include_self = true; break;
    case OPT_PERIODIC: o->periods = parse_double_list(p, v, o->period, 3); break;
    case OPT_CELL: o->cell.cell_values = parse_double_list(p, v, o->cell.cell, 9); break;
    case OPT_PBC: parse_pbc(p, v, &o->cell); break;
    case OPT_DIM: o->dim = (int)parse_count(p, v, 2, 3); break;
    case OPT_THREADS: o->desc.threads = (int)parse_count(p, v, 0, 4096); break;
    case OPT_COUNT: o->count = true; break;
    case OPT_STATS: o->stats = true; break;
    case OPT_OUTPUT: o->output = v; break;
    case OPT_HELP: return false;
    }
    return true;
}

static bool parse_options(int argc, char **argv, knn_options *o)
{
    memset(o, 0, sizeof *o);
    o->desc = prox_default_knn_desc();
    opt_parser p = opt_init("knn", specs, sizeof specs / sizeof specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        if (id == OPT_ARG) {
            if (o->input)
                die_usage(p.command, "one input file only, not '%s' too", v);
            o->input = v;
        } else if (!apply_option(&p, o, id, v)) {
            return false;
        }
    }
    if (!o->input)
        die_usage(p.command, "missing POINTS");
    if (!o->has_k)
        die_usage(p.command, "missing --k");
    if (!(o->desc.max_radius >= 0) || !isfinite(o->desc.max_radius))
        die_usage(p.command, "--max-radius must be >= 0 and finite, not %g", o->desc.max_radius);
    for (int k = 0; k < o->periods; k++)
        if (!(o->period[k] > 0))
            die_usage(p.command, "--periodic: every period must be > 0");
    if (o->periods == 1)
        die_usage(p.command, "--periodic needs one period per dimension: LX,LY[,LZ]");
    if (o->periods && o->cell.cell_values)
        die_usage(p.command, "--periodic and --cell are two ways to give the box: one of them");
    if (o->cell.pbc_values && !o->cell.cell_values)
        die_usage(p.command, "--pbc needs --cell");
    if (o->queries && strcmp(o->input, "-") == 0 && strcmp(o->queries, "-") == 0)
        die_usage(p.command, "only one of POINTS and --queries can be stdin");
    return true;
}

/* Lines 'q j d' of every query's neighbours, in query order, with the
 * shift S of each image after them when the result has shifts. */
static void write_neighbours(output *out, const prox_knn_result *r, int dim)
{
    char line[160];
    for (int64_t q = 0; q < r->rows; q++)
        for (int c = 0; c < r->counts[q]; c++) {
            int64_t at = q * r->k + c;
            int len = snprintf(line, sizeof line, "%lld %u %.17g", (long long)q, r->indices[at],
                               r->distances[at]);
            for (int a = 0; r->shifts && a < dim; a++)
                len += snprintf(line + len, sizeof line - (size_t)len, " %d",
                                (int)r->shifts[at * dim + a]);
            line[len++] = '\n';
            output_bytes(out, line, (size_t)len);
        }
}

/* The search the options ask for: prox_knn, or prox_cell_knn with --cell. */
static prox_status run_knn(const knn_options *o, const prox_points *points,
                           const prox_points *queries, prox_knn_result *result, prox_stats *stats)
{
    if (!o->cell.cell_values)
        return prox_knn(points, queries, &o->desc, result, stats);
    prox_cell_knn_desc d = prox_default_cell_knn_desc();
    d.k = o->desc.k;
    d.max_radius = o->desc.max_radius;
    d.include_self = o->desc.include_self;
    d.threads = o->desc.threads;
    cell_rows_of(&o->cell, points->dim, "knn", d.cell, d.pbc);
    return prox_cell_knn(points, queries, &d, result, stats);
}

int cmd_knn(int argc, char **argv)
{
    knn_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.desc.threads);
    output out;
    output_open(&out, o.output);
    output_refuse_input(&out, o.input);
    if (o.queries)
        output_refuse_input(&out, o.queries);
    point_file pf, qf;
    int dim = o.dim ? o.dim : is_raw_binary_name(o.input) ? 3 : 0;
    point_file_read(&pf, o.input, dim);
    if (o.queries)
        point_file_read(&qf, o.queries, pf.dim);
    if (o.periods != 0 && o.periods != pf.dim)
        die_usage("knn", "--periodic gives %d periods for %dD points", o.periods, pf.dim);
    for (int k = 0; k < o.periods; k++)
        o.desc.period[k] = o.period[k];
    prox_points points = point_file_view(&pf), queries;
    if (o.queries)
        queries = point_file_view(&qf);
    prox_knn_result result;
    prox_knn_result_init(&result, NULL);
    prox_stats stats;
    double c0 = cpu_seconds(), t0 = now_seconds();
    prox_status st = run_knn(&o, &points, o.queries ? &queries : NULL, &result, &stats);
    double c1 = cpu_seconds(), t1 = now_seconds();
    if (st)
        die_status(st, "kNN failed");
    if (o.count)
        output_printf(&out, "%lld\n", (long long)stats.pairs);
    else
        write_neighbours(&out, &result, pf.dim);
    output_commit(&out);
    if (o.stats)
        fprintf(stderr,
                "method=%s\ndim=%d\nn=%lld\nqueries=%lld\nk=%d\nthreads=%d\nquery_s=%.6f\n"
                "query_cpu_s=%.6f\nneighbours=%lld\ncandidates=%lld\ncells=%lld\n"
                "cells_visited=%lld\nstruct_mb=%.1f\nstruct_bytes_per_point=%.2f\n"
                "peak_rss_mb=%.1f\n",
                stats.method ? stats.method : "none", pf.dim, (long long)pf.count,
                (long long)result.rows, o.desc.k, effective_threads(o.desc.threads), t1 - t0,
                c1 - c0, (long long)stats.pairs, (long long)stats.candidates,
                (long long)stats.cells, (long long)stats.cells_visited,
                (double)stats.bytes / (1024.0 * 1024.0),
                pf.count ? (double)stats.bytes / (double)pf.count : 0.0, peak_rss_mb());
    prox_knn_result_free(&result);
    point_file_free(&pf);
    if (o.queries)
        point_file_free(&qf);
    return EXIT_OK;
}
