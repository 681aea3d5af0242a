/* cmd_collide.c: `prox collide`: every pair of overlapping boxes of a file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box_io.h"
#include "input.h"
#include "broad_options.h"
#include "cli.h"
#include "cli_mpi.h"
#include "commands.h"
#include "prox/prox.h"

static const char usage[] =
    "usage: prox collide [OPTIONS] BOXES\n"
    "Every pair of boxes of BOXES that overlap (closed boxes: touching boxes overlap).\n"
    "\n"
    "BOXES has one box per line: its min corner then its max corner (2D: 4 numbers,\n"
    "3D: 6), separated by spaces, tabs or commas; '#' starts a comment; '-' reads\n"
    "stdin. A name ending in .npy is numpy's array file (shape (n, 4) or (n, 6),\n"
    "'<f8' or '<f4'); one ending in .f64 or .f32 raw little-endian binary with no\n"
    "header (give --dim).\n"
    "\n"
    "Options:\n"
    "      --algo A        auto (default: grid for boxes of similar sizes, else\n"
    "                      hierarchical; --stats says which ran), brute, grid,\n"
    "                      multilevel, hierarchical, kdtree, sap\n"
    "      --dim 2|3       numbers per box: 4 or 6 (default: the first line's count;\n"
    "                      the .npy shape; 3 for raw binary files)\n"
    "  -t, --threads T     threads, 0 = OpenMP default (default 0)\n"
    "      --table-size S  hash table slots (multilevel, hierarchical; 0 = automatic)\n"
    "      --growable      hierarchical: a growable table instead of a fixed one\n"
    "      --cell-size C   grid: the cell edge (default: the median longest box edge)\n"
    BROAD_KDTREE_HELP
    "      --count         print only the number of pairs\n"
    "      --stats         print key=value timings and figures to stderr\n"
    "      --mpi           run over MPI ranks (mpirun -np P prox collide --mpi ...):\n"
    "                      rank 0 reads BOXES and writes the same output\n"
    "  -o, --output OUT    write to OUT (default stdout); OUT appears only when complete;\n"
    "                      an OUT that is the input file is refused (exit 2)\n"
    "  -h, --help          this help\n"
    "\n"
    "Output: one line 'i j' per pair: 0-based box indices, i < j, sorted by (i, j);\n"
    "with --count, one line: the number of pairs.\n"
    "\n"
    "Exit status: 0 ok, 2 usage error, 3 bad data (malformed file, NaN or infinite\n"
    "number, a box with min > max), 4 I/O error, 5 out of memory.\n";

enum { OPT_DIM = 1, OPT_COUNT, OPT_STATS, OPT_OUTPUT, OPT_HELP, OPT_MPI };

static const opt_spec specs[] = {
    BROAD_OPTION_SPECS,
    { "dim", 0, true, OPT_DIM },      { "count", 0, false, OPT_COUNT },
    { "stats", 0, false, OPT_STATS }, { "output", 'o', true, OPT_OUTPUT },
    { "help", 'h', false, OPT_HELP }, { "mpi", 0, false, OPT_MPI },
};

typedef struct collide_options {
    const char *input, *output;
    int dim;
    prox_broad_desc desc;
    bool count, stats, mpi;
} collide_options;

static bool apply_option(opt_parser *p, collide_options *o, int id, const char *v)
{
    if (broad_option(p, id, v, &o->desc))
        return true;
    switch (id) {
    case OPT_DIM: o->dim = (int)parse_count(p, v, 2, 3); break;
    case OPT_COUNT: o->count = true; break;
    case OPT_STATS: o->stats = true; break;
    case OPT_MPI: o->mpi = true; break;
    case OPT_OUTPUT: o->output = v; break;
    case OPT_HELP: return false;
    }
    return true;
}

static bool parse_options(int argc, char **argv, collide_options *o)
{
    memset(o, 0, sizeof *o);
    o->desc = prox_default_broad_desc();
    o->desc.borrow_boxes = true; /* the boxes read from the file stay put until exit */
    opt_parser p = opt_init("collide", specs, sizeof specs / sizeof specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        if (id == OPT_ARG) {
            if (o->input)
                die_usage(p.command, "one input file only ('%s' and '%s')", o->input, v);
            o->input = v;
        } else if (!apply_option(&p, o, id, v)) {
            return false;
        }
    }
    if (!o->input)
        die_usage(p.command, "missing input BOXES");
    return true;
}

/* --mpi: rank 0 reads and writes; every rank searches (cli_mpi.h). */
static int collide_over_mpi(const collide_options *o)
{
    int rank = cli_mpi_start("collide");
    output out;
    row_file rf;
    memset(&rf, 0, sizeof rf);
    prox_boxes boxes = { .dim = 3 };
    if (rank == 0) {
        output_open(&out, o->output);
        output_refuse_input(&out, o->input);
        bool binary = is_raw_binary_name(o->input);
        int dim = o->dim ? o->dim : binary ? 3 : 0;
        row_file_read(&rf, o->input, 2 * dim);
        boxes = row_file_boxes(&rf, rf.cols / 2);
    }
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_stats stats;
    cli_mpi_collide(&boxes, &o->desc, o->count ? prox_sink_count() : prox_sink_buffer(&buffer),
                    &stats, o->stats);
    if (rank == 0) {
        if (o->count)
            output_printf(&out, "%lld\n", (long long)stats.pairs);
        else
            write_pair_lines(&out, &buffer);
        output_commit(&out);
        row_file_free(&rf);
    }
    prox_pair_buffer_free(&buffer);
    cli_mpi_finish();
    return EXIT_OK;
}

int cmd_collide(int argc, char **argv)
{
    collide_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.desc.threads);
    if (o.mpi)
        return collide_over_mpi(&o);
    output out;
    output_open(&out, o.output);
    output_refuse_input(&out, o.input);
    row_file rf;
    bool binary = is_raw_binary_name(o.input);
    int dim = o.dim ? o.dim : binary ? 3 : 0;
    row_file_read(&rf, o.input, 2 * dim);
    dim = rf.cols / 2;
    prox_boxes boxes = row_file_boxes(&rf, dim);

    prox_broad *broad = NULL;
    prox_status st = prox_broad_create(&o.desc, &broad);
    if (st)
        die_status(st, "cannot create the broad phase");
    double t0 = now_seconds();
    st = prox_broad_build(broad, &boxes);
    double t1 = now_seconds();
    if (st)
        die_status(st, "cannot build the broad phase");
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_stats stats;
    st = prox_broad_pairs(broad, o.count ? prox_sink_count() : prox_sink_buffer(&buffer), &stats);
    double t2 = now_seconds();
    if (st)
        die_status(st, "collision search failed");
    if (o.count)
        output_printf(&out, "%lld\n", (long long)stats.pairs);
    else
        write_pair_lines(&out, &buffer);
    output_commit(&out);
    if (o.stats)
        fprintf(stderr,
                "algo=%s\ndim=%d\nn=%lld\nthreads=%d\nbuild_s=%.6f\nquery_s=%.6f\n"
                "candidates=%lld\npairs=%lld\ncells=%lld\nstruct_mb=%.1f\npeak_rss_mb=%.1f\n"
                "simd=%s\nmethod=%s\n",
                prox_broad_algo_name(o.desc.algo), dim, (long long)rf.rows,
                effective_threads(o.desc.threads), t1 - t0, t2 - t1, (long long)stats.candidates,
                (long long)stats.pairs, (long long)stats.cells,
                (double)stats.bytes / (1024.0 * 1024.0), peak_rss_mb(), prox_simd_level(),
                stats.method ? stats.method : "none");
    prox_pair_buffer_free(&buffer);
    prox_broad_destroy(broad);
    row_file_free(&rf);
    return EXIT_OK;
}
