/* cmd_query.c: `prox query`: for each query box or segment of a file, the
 * boxes of another file it meets. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "box_io.h"
#include "input.h"
#include "broad_options.h"
#include "cli.h"
#include "commands.h"
#include "prox/prox.h"

static const char usage[] =
    "usage: prox query [OPTIONS] BOXES QUERIES\n"
    "For each query of QUERIES, the boxes of BOXES it meets (closed boxes).\n"
    "\n"
    "BOXES: one box per line, min corner then max corner (2D: 4 numbers, 3D: 6).\n"
    "QUERIES: boxes in the same format, or with --segments one segment per line,\n"
    "start then end. Numbers are separated by spaces, tabs or commas; '#' starts a\n"
    "comment; '-' reads stdin (one of the two files). Names ending in .npy are\n"
    "numpy's array files ('<f8' or '<f4', shape (n, 4) or (n, 6)); names ending in\n"
    ".f64 or .f32 raw little-endian binary with no header (give --dim).\n"
    "\n"
    "Options:\n"
    "      --algo A        auto (default: grid for boxes of similar sizes, else\n"
    "                      hierarchical; --stats says which ran), brute, grid,\n"
    "                      multilevel, hierarchical, kdtree, sap\n"
    "      --dim 2|3       dimension (default: the first line's count or the .npy\n"
    "                      shape; 3 for raw binary)\n"
    "      --segments      QUERIES holds segments (moving particles' paths)\n"
    "      --exact         segments: the boxes a segment really crosses (default)\n"
    "      --broad-only    segments: the boxes its bounding box overlaps\n"
    "  -t, --threads T     threads, 0 = OpenMP default (default 0)\n"
    "      --table-size S  hash table slots (multilevel, hierarchical; 0 = automatic)\n"
    "      --growable      hierarchical: a growable table instead of a fixed one\n"
    "      --cell-size C   grid: the cell edge (default: the median longest box edge)\n"
    BROAD_KDTREE_HELP
    "      --count         print only the number of hits\n"
    "      --stats         print key=value timings and figures to stderr\n"
    "  -o, --output OUT    write to OUT (default stdout); OUT appears only when complete;\n"
    "                      an OUT that is an input file is refused (exit 2)\n"
    "  -h, --help          this help\n"
    "\n"
    "Output: one line 'q j' per hit: query q meets box j (0-based), sorted by (q, j);\n"
    "with --count, one line: the number of hits.\n"
    "\n"
    "Exit status: 0 ok, 2 usage error, 3 bad data (malformed file, NaN or infinite\n"
    "number, a box with min > max), 4 I/O error, 5 out of memory.\n";

enum { OPT_DIM = 1, OPT_SEGMENTS, OPT_EXACT, OPT_BROAD, OPT_COUNT, OPT_STATS, OPT_OUTPUT,
       OPT_HELP };

static const opt_spec specs[] = {
    BROAD_OPTION_SPECS,
    { "dim", 0, true, OPT_DIM },            { "segments", 0, false, OPT_SEGMENTS },
    { "exact", 0, false, OPT_EXACT },       { "broad-only", 0, false, OPT_BROAD },
    { "count", 0, false, OPT_COUNT },       { "stats", 0, false, OPT_STATS },
    { "output", 'o', true, OPT_OUTPUT },    { "help", 'h', false, OPT_HELP },
};

typedef struct query_options {
    const char *boxes, *queries, *output;
    int dim;
    prox_broad_desc desc;
    bool segments, exact_given, broad_only, count, stats;
} query_options;

static bool apply_option(opt_parser *p, query_options *o, int id, const char *v)
{
    if (broad_option(p, id, v, &o->desc))
        return true;
    switch (id) {
    case OPT_DIM: o->dim = (int)parse_count(p, v, 2, 3); break;
    case OPT_SEGMENTS: o->segments = true; break;
    case OPT_EXACT: o->exact_given = true; break;
    case OPT_BROAD: o->broad_only = true; break;
    case OPT_COUNT: o->count = true; break;
    case OPT_STATS: o->stats = true; break;
    case OPT_OUTPUT: o->output = v; break;
    case OPT_HELP: return false;
    }
    return true;
}

static bool parse_options(int argc, char **argv, query_options *o)
{
    memset(o, 0, sizeof *o);
    o->desc = prox_default_broad_desc();
    o->desc.borrow_boxes = true; /* the boxes read from the file stay put until exit */
    opt_parser p = opt_init("query", specs, sizeof specs / sizeof specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        if (id == OPT_ARG) {
            if (o->queries)
                die_usage(p.command, "two input files only (BOXES QUERIES), not '%s'", v);
            *(o->boxes ? &o->queries : &o->boxes) = v;
        } else if (!apply_option(&p, o, id, v)) {
            return false;
        }
    }
    if (!o->queries)
        die_usage(p.command, "missing %s", o->boxes ? "QUERIES" : "BOXES and QUERIES");
    if (o->exact_given && o->broad_only)
        die_usage(p.command, "--exact and --broad-only exclude each other");
    if ((o->exact_given || o->broad_only) && !o->segments)
        die_usage(p.command, "--exact and --broad-only apply to --segments");
    if (strcmp(o->boxes, "-") == 0 && strcmp(o->queries, "-") == 0)
        die_usage(p.command, "only one of BOXES and QUERIES can be stdin");
    return true;
}

/* Queries with at least one hit, from the sorted buffer. */
static int64_t queries_hit(const prox_pair_buffer *buffer)
{
    int64_t hit = 0;
    for (int64_t k = 0; k < buffer->count; k++)
        hit += k == 0 || buffer->pairs[k].i != buffer->pairs[k - 1].i;
    return hit;
}

/* A callback sink runs on one thread and hands each query's hits together:
 * a query with a hit starts where the query differs from the last one. */
typedef struct hit_counter {
    int64_t hit;
    prox_index last;
} hit_counter;

static int count_hit_queries(prox_index q, prox_index j, void *user)
{
    hit_counter *c = user;
    (void)j;
    c->hit += c->hit == 0 || q != c->last;
    c->last = q;
    return 0;
}

static prox_status run_query(prox_broad *broad, const query_options *o, const row_file *qf,
                             int dim, prox_sink sink, prox_stats *stats)
{
    if (!o->segments) {
        prox_boxes q = row_file_boxes(qf, dim);
        return prox_broad_query_boxes(broad, &q, sink, stats);
    }
    prox_points starts, ends;
    row_file_segments(qf, dim, &starts, &ends);
    return prox_broad_query_segments(broad, &starts, &ends, !o->broad_only, sink, stats);
}

int cmd_query(int argc, char **argv)
{
    query_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.desc.threads);
    output out;
    output_open(&out, o.output);
    output_refuse_input(&out, o.boxes);
    output_refuse_input(&out, o.queries);
    row_file bf, qf;
    bool binary = is_raw_binary_name(o.boxes);
    int dim = o.dim ? o.dim : binary ? 3 : 0;
    row_file_read(&bf, o.boxes, 2 * dim);
    dim = bf.cols / 2;
    row_file_read(&qf, o.queries, 2 * dim);
    prox_boxes boxes = row_file_boxes(&bf, dim);

    prox_broad *broad = NULL;
    prox_status st = prox_broad_create(&o.desc, &broad);
    if (st)
        die_status(st, "cannot create the broad phase");
    double c0 = cpu_seconds(), t0 = now_seconds();
    st = prox_broad_build(broad, &boxes);
    double c1 = cpu_seconds(), t1 = now_seconds();
    if (st)
        die_status(st, "cannot build the broad phase");
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_sink sink = o.count ? prox_sink_count() : prox_sink_buffer(&buffer);
    prox_stats stats;
    st = run_query(broad, &o, &qf, dim, sink, &stats);
    double c2 = cpu_seconds(), t2 = now_seconds();
    if (st)
        die_status(st, "query failed");
    if (o.count)
        output_printf(&out, "%lld\n", (long long)stats.pairs);
    else
        write_pair_lines(&out, &buffer);
    output_commit(&out);
    if (o.stats) {
        /* --count: the timed run only counted; one more (untimed) run counts
         * the queries with a hit */
        hit_counter counter = {0, 0};
        int64_t hit = queries_hit(&buffer);
        if (o.count) {
            prox_stats again;
            st = run_query(broad, &o, &qf, dim, prox_sink_callback(count_hit_queries, &counter),
                           &again);
            if (st)
                die_status(st, "query failed");
            hit = counter.hit;
        }
        fprintf(stderr,
                "algo=%s\ndim=%d\nn=%lld\nqueries=%lld\nkind=%s\nthreads=%d\nbuild_s=%.6f\n"
                "query_s=%.6f\nbuild_cpu_s=%.6f\nquery_cpu_s=%.6f\ncandidates=%lld\nhits=%lld\nhit_fraction=%.6f\ncells=%lld\n"
                "cells_visited=%lld\nstruct_mb=%.1f\npeak_rss_mb=%.1f\n",
                prox_broad_algo_name(o.desc.algo), dim, (long long)bf.rows, (long long)qf.rows,
                !o.segments ? "boxes" : o.broad_only ? "segments-broad" : "segments-exact",
                effective_threads(o.desc.threads), t1 - t0, t2 - t1, c1 - c0, c2 - c1,
                (long long)stats.candidates, (long long)stats.pairs,
                qf.rows ? (double)hit / (double)qf.rows : 0.0, (long long)stats.cells,
                (long long)stats.cells_visited, (double)stats.bytes / (1024.0 * 1024.0),
                peak_rss_mb());
    }
    prox_pair_buffer_free(&buffer);
    prox_broad_destroy(broad);
    row_file_free(&bf);
    row_file_free(&qf);
    return EXIT_OK;
}
