/* cmd_pairs.c: `prox pairs`: every pair of points of a file within a radius. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_mpi.h"
#include "commands.h"
#include "input.h"
#include "output.h"
#include "prox/prox.h"

static const char usage[] =
    "usage: prox pairs [OPTIONS] FILE\n"
    "Every pair of points of FILE at distance <= R (the closed ball).\n"
    "\n"
    "FILE is text (one point per line; numbers separated by spaces, tabs or\n"
    "commas; '#' starts a comment; '-' reads stdin) or raw little-endian binary\n"
    "when its name ends in .f64 (doubles) or .f32 (floats, searched as floats).\n"
    "\n"
    "Options:\n"
    "  -r, --radius R          search radius, > 0 (default: the file's '# radius=R'\n"
    "                          header line, as written by 'prox gen')\n"
    "      --dim 2|3           coordinates per point (default: the file's '# dim=D'\n"
    "                          header line, else 3)\n"
    "      --algo grid|brute|hierarchical  uniform grid (default), every pair\n"
    "                          tested, or the hierarchical hash (seed 000 Listing 3;\n"
    "                          one thread, open axes)\n"
    "      --keys linear|morton|hash  grid cell keys (default linear: row-major over\n"
    "                          every cell, Morton when over 256 cells per point)\n"
    "      --coords fixed|double  coordinates the grid keeps (default fixed: 32-bit\n"
    "                          fixed point, pairs near the radius decided in double\n"
    "                          from the input; linear keys only, else double)\n"
    "      --rows staged|in-place  how sorted pairs and lists are written (default\n"
    "                          staged: fastest, holds 4 bytes per output entry;\n"
    "                          in-place: 6 bytes per point beyond the output,\n"
    "                          2 for lists, about 1.5-2x the search time;\n"
    "                          linear keys only)\n"
    "  -t, --threads T         threads, 0 = OpenMP default (default 0)\n"
    "      --periodic LX,LY[,LZ]  periodic box [0,LX)x[0,LY)[x[0,LZ)]: minimum-image\n"
    "                          distances, one period per dimension\n"
    "      --cell-divisions D  grid cells per radius (default 1)\n"
    "      --table-size S      hash slots, a power of two (default 0 = automatic)\n"
    "      --count             print only the number of pairs\n"
    "      --lists             print every point's neighbour list (both directions)\n"
    "      --unsorted          pairs (or each list's entries) in the search's\n"
    "                          traversal order instead of sorted: faster, and the\n"
    "                          same for every thread count\n"
    "      --stats             print key=value timings and figures to stderr\n"
    "      --mpi               run over MPI ranks (mpirun -np P prox pairs --mpi ...):\n"
    "                          rank 0 reads FILE and writes the same output; grid\n"
    "                          only; --stats prints each rank's figures\n"
    "  -o, --output OUT        write to OUT (default stdout); OUT appears only when\n"
    "                          complete\n"
    "  -h, --help              this help\n"
    "\n"
    "Output:\n"
    "  default   one line 'i j' per pair: 0-based indices, i < j, sorted by (i, j)\n"
    "            (--unsorted: traversal order)\n"
    "  --lists   a line '# lists rows=N entries=M', then one line per point i:\n"
    "            'i: j1 j2 ...' (its neighbours, ascending, or in traversal order\n"
    "            with --unsorted; 'i:' if none)\n"
    "  --count   one line: the number of pairs\n"
    "\n"
    "Exit status: 0 ok, 2 usage error, 3 bad data (malformed file, NaN or\n"
    "infinite coordinate, radius <= 0, rejected by the library), 4 I/O error,\n"
    "5 out of memory.\n";

typedef enum pairs_task { TASK_PAIRS, TASK_COUNT, TASK_LISTS } pairs_task;

typedef struct pairs_options {
    const char *input;
    const char *output;
    bool has_radius;
    double radius;
    int dim; /* 0: from the file */
    prox_algo algo;
    prox_keys keys;
    prox_coords coords;
    prox_rows rows;
    int threads;
    int periods; /* how many --periodic values */
    double period[3];
    int cell_divisions;
    int64_t table_size;
    pairs_task task;
    bool unsorted;
    bool stats;
    bool mpi;
} pairs_options;

enum {
    OPT_RADIUS = 1, OPT_DIM, OPT_ALGO, OPT_KEYS, OPT_COORDS, OPT_ROWS, OPT_THREADS, OPT_PERIODIC,
    OPT_DIVISIONS,
    OPT_TABLE, OPT_COUNT, OPT_LISTS, OPT_UNSORTED, OPT_STATS, OPT_OUTPUT, OPT_HELP, OPT_MPI,
};

static const opt_spec pairs_specs[] = {
    { "radius", 'r', true, OPT_RADIUS },
    { "dim", 0, true, OPT_DIM },
    { "algo", 0, true, OPT_ALGO },
    { "keys", 0, true, OPT_KEYS },
    { "coords", 0, true, OPT_COORDS },
    { "rows", 0, true, OPT_ROWS },
    { "threads", 't', true, OPT_THREADS },
    { "periodic", 0, true, OPT_PERIODIC },
    { "cell-divisions", 0, true, OPT_DIVISIONS },
    { "table-size", 0, true, OPT_TABLE },
    { "count", 0, false, OPT_COUNT },
    { "lists", 0, false, OPT_LISTS },
    { "unsorted", 0, false, OPT_UNSORTED },
    { "stats", 0, false, OPT_STATS },
    { "output", 'o', true, OPT_OUTPUT },
    { "help", 'h', false, OPT_HELP },
    { "mpi", 0, false, OPT_MPI },
};

/* ---- options ----------------------------------------------------------- */

static prox_algo parse_algo(const opt_parser *p, const char *v)
{
    if (strcmp(v, "grid") == 0)
        return PROX_ALGO_GRID;
    if (strcmp(v, "brute") == 0)
        return PROX_ALGO_BRUTE;
    if (strcmp(v, "hierarchical") == 0)
        return PROX_ALGO_HIERARCHICAL;
    die_usage(p->command, "--algo must be grid, brute or hierarchical, not '%s'", v);
}

static prox_keys parse_keys(const opt_parser *p, const char *v)
{
    if (strcmp(v, "morton") == 0)
        return PROX_KEYS_MORTON;
    if (strcmp(v, "hash") == 0)
        return PROX_KEYS_HASH;
    if (strcmp(v, "linear") == 0)
        return PROX_KEYS_LINEAR;
    die_usage(p->command, "--keys must be linear, morton or hash, not '%s'", v);
}

static prox_rows parse_rows(const opt_parser *p, const char *v)
{
    if (strcmp(v, "staged") == 0)
        return PROX_ROWS_STAGED;
    if (strcmp(v, "in-place") == 0)
        return PROX_ROWS_IN_PLACE;
    die_usage(p->command, "--rows must be staged or in-place, not '%s'", v);
}

static prox_coords parse_coords(const opt_parser *p, const char *v)
{
    if (strcmp(v, "fixed") == 0)
        return PROX_COORDS_FIXED;
    if (strcmp(v, "double") == 0)
        return PROX_COORDS_DOUBLE;
    die_usage(p->command, "--coords must be fixed or double, not '%s'", v);
}

static void set_task(const opt_parser *p, pairs_options *o, pairs_task task)
{
    if (o->task != TASK_PAIRS && o->task != task)
        die_usage(p->command, "--count and --lists exclude each other");
    o->task = task;
}

/* One option into o; returns false for --help. */
static bool apply_option(opt_parser *p, pairs_options *o, int id, const char *v)
{
    switch (id) {
    case OPT_RADIUS: o->radius = parse_double(p, v); o->has_radius = true; break;
    case OPT_DIM: o->dim = (int)parse_count(p, v, 2, 3); break;
    case OPT_ALGO: o->algo = parse_algo(p, v); break;
    case OPT_KEYS: o->keys = parse_keys(p, v); break;
    case OPT_COORDS: o->coords = parse_coords(p, v); break;
    case OPT_ROWS: o->rows = parse_rows(p, v); break;
    case OPT_THREADS: o->threads = (int)parse_count(p, v, 0, 4096); break;
    case OPT_PERIODIC: o->periods = parse_double_list(p, v, o->period, 3); break;
    case OPT_DIVISIONS: o->cell_divisions = (int)parse_count(p, v, 1, 64); break;
    case OPT_TABLE: o->table_size = parse_count(p, v, 0, INT64_MAX); break;
    case OPT_COUNT: set_task(p, o, TASK_COUNT); break;
    case OPT_LISTS: set_task(p, o, TASK_LISTS); break;
    case OPT_UNSORTED: o->unsorted = true; break;
    case OPT_STATS: o->stats = true; break;
    case OPT_OUTPUT: o->output = v; break;
    case OPT_MPI: o->mpi = true; break;
    case OPT_HELP: return false;
    }
    return true;
}

static void check_periods(const opt_parser *p, const pairs_options *o)
{
    for (int k = 0; k < o->periods; k++)
        if (!(o->period[k] > 0))
            die_usage(p->command, "--periodic: every period must be > 0");
    if (o->periods == 1)
        die_usage(p->command, "--periodic needs one period per dimension: LX,LY[,LZ]");
}

static void check_radius(double r)
{
    if (!(r > 0) || !isfinite(r))
        die(EXIT_DATA, "radius must be > 0 and finite, not %g", r);
}

/* Returns false when --help was asked for. */
static bool parse_options(int argc, char **argv, pairs_options *o)
{
    prox_grid_desc defaults = prox_default_grid_desc();
    memset(o, 0, sizeof *o);
    o->cell_divisions = defaults.cell_divisions;
    o->keys = defaults.keys;
    o->coords = PROX_COORDS_FIXED; /* the points outlive the grid */
    opt_parser p = opt_init("pairs", pairs_specs, sizeof pairs_specs / sizeof pairs_specs[0],
                            argc, argv);
    p.next = 1;
    const char *v;
    int id;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        if (id == OPT_ARG) {
            if (o->input != NULL)
                die_usage(p.command, "one input file only ('%s' and '%s')", o->input, v);
            o->input = v;
        } else if (!apply_option(&p, o, id, v)) {
            return false;
        }
    }
    if (o->input == NULL)
        die_usage(p.command, "missing input FILE");
    check_periods(&p, o);
    if (o->has_radius)
        check_radius(o->radius); /* before reading a big file */
    return true;
}

/* The radius from the options or the file's header. */
static double resolve_radius(const pairs_options *o, const point_file *pf)
{
    if (!o->has_radius && !pf->has_radius)
        die_usage("pairs", "missing --radius (and %s has no '# radius=' header line)", o->input);
    double r = o->has_radius ? o->radius : pf->radius;
    check_radius(r);
    return r;
}

static prox_grid_desc make_desc(const pairs_options *o, double radius, int dim)
{
    if (o->periods != 0 && o->periods != dim)
        die_usage("pairs", "--periodic gives %d periods for %dD points", o->periods, dim);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = radius;
    desc.keys = o->keys;
    desc.coords = o->coords;
    desc.rows = o->rows;
    desc.cell_divisions = o->cell_divisions;
    desc.table_size = o->table_size;
    desc.threads = o->threads;
    for (int k = 0; k < o->periods; k++)
        desc.period[k] = o->period[k];
    return desc;
}

/* ---- the search -------------------------------------------------------- */

typedef struct pairs_result {
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_stats stats;
    double build_s, query_s;
} pairs_result;

static prox_sink make_sink(pairs_task task, pairs_result *r)
{
    switch (task) {
    case TASK_COUNT: return prox_sink_count();
    case TASK_LISTS: return prox_sink_lists(&r->lists);
    default: return prox_sink_buffer(&r->buffer);
    }
}

/* The grid through the object API, so that building and querying are timed
 * apart; brute force through the one-shot call (nothing to build). */
static void run_search(const prox_points *points, const prox_grid_desc *desc, prox_algo algo,
                       const pairs_options *o, pairs_result *r)
{
    prox_sink sink = make_sink(o->task, r);
    if (o->unsorted)
        sink = prox_sink_unsorted(sink);
    if (algo != PROX_ALGO_GRID) { /* hierarchical: built on the fly (Listing 3) */
        double t0 = now_seconds();
        prox_status st = prox_pairs(points, desc, algo, sink, &r->stats);
        r->query_s = now_seconds() - t0;
        if (st != PROX_OK)
            die_status(st, algo == PROX_ALGO_BRUTE ? "brute-force search failed"
                                                   : "hierarchical search failed");
        return;
    }
    prox_grid *grid = NULL;
    prox_status st = prox_grid_create(desc, &grid);
    if (st != PROX_OK)
        die_status(st, "cannot create the grid");
    double t0 = now_seconds();
    st = prox_grid_build(grid, points);
    double t1 = now_seconds();
    if (st != PROX_OK)
        die_status(st, "cannot build the grid");
    st = prox_grid_pairs(grid, sink, &r->stats);
    r->build_s = t1 - t0;
    r->query_s = now_seconds() - t1;
    prox_grid_destroy(grid);
    if (st != PROX_OK)
        die_status(st, "grid search failed");
}

/* ---- output ------------------------------------------------------------ */

/* Pair lines "i j": i repeats over consecutive pairs, so its text is kept. */
static size_t pairs_bound(const void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    return (size_t)(end - begin) * 22; /* two 10-digit numbers, ' ', '\n' */
}

static size_t format_pairs(const void *ctx, int64_t begin, int64_t end, char *buf)
{
    const prox_pair *pairs = ctx;
    char prefix[16] = { 0 };
    size_t prefix_len = 0;
    int64_t prefix_of = -1;
    char *p = buf;
    for (int64_t k = begin; k < end; k++) {
        if (pairs[k].i != prefix_of) {
            prefix_of = pairs[k].i;
            prefix_len = (size_t)(format_u64(prefix, pairs[k].i) - prefix);
            prefix[prefix_len++] = ' ';
        }
        memcpy(p, prefix, sizeof prefix); /* fixed size: cheaper; OUTPUT_SLACK covers it */
        p = format_u64(p + prefix_len, pairs[k].j);
        *p++ = '\n';
    }
    return (size_t)(p - buf);
}

static void write_pairs(output *out, const prox_pair_buffer *buffer)
{
    output_parallel(out, buffer->count, 1 << 16, buffer->pairs, pairs_bound, format_pairs);
}

/* List lines "i: j1 j2 ...". */
static size_t lists_bound(const void *ctx, int64_t begin, int64_t end)
{
    const prox_lists *lists = ctx;
    int64_t entries = lists->offsets[end] - lists->offsets[begin];
    return (size_t)(end - begin) * 13 + (size_t)entries * 11;
}

static size_t format_lists(const void *ctx, int64_t begin, int64_t end, char *buf)
{
    const prox_lists *lists = ctx;
    char *p = buf;
    for (int64_t r = begin; r < end; r++) {
        p = format_u64(p, (uint64_t)r);
        *p++ = ':';
        for (int64_t k = lists->offsets[r]; k < lists->offsets[r + 1]; k++) {
            *p++ = ' ';
            p = format_u64(p, lists->indices[k]);
        }
        *p++ = '\n';
    }
    return (size_t)(p - buf);
}

static void write_lists(output *out, const prox_lists *lists)
{
    int64_t entries = lists->rows > 0 ? lists->offsets[lists->rows] : 0;
    output_printf(out, "# lists rows=%lld entries=%lld\n", (long long)lists->rows,
                  (long long)entries);
    output_parallel(out, lists->rows, 8192, lists, lists_bound, format_lists);
}

static void write_result(output *out, pairs_task task, const pairs_result *r)
{
    switch (task) {
    case TASK_COUNT: output_printf(out, "%lld\n", (long long)r->stats.pairs); break;
    case TASK_LISTS: write_lists(out, &r->lists); break;
    default: write_pairs(out, &r->buffer); break;
    }
}

static const char *keys_name(prox_algo algo, int keys)
{
    if (algo != PROX_ALGO_GRID)
        return "none";
    return keys == PROX_KEYS_HASH ? "hash" : keys == PROX_KEYS_LINEAR ? "linear" : "morton";
}

static const char *coords_name(prox_algo algo, int coords)
{
    if (algo != PROX_ALGO_GRID)
        return "none";
    return coords == PROX_COORDS_FIXED ? "fixed" : "double";
}

static void print_stats(const pairs_options *o, const point_file *pf, const prox_grid_desc *desc,
                        const pairs_result *r, double read_s, double write_s)
{
    const prox_stats *s = &r->stats;
    fprintf(stderr,
            "algo=%s\nkeys=%s\ncoords=%s\nscalar=%s\ndim=%d\nn=%lld\nradius=%.17g\nthreads=%d\n"
            "read_s=%.6f\nbuild_s=%.6f\nquery_s=%.6f\nwrite_s=%.6f\n"
            "pairs=%lld\ncandidates=%lld\nrechecked=%lld\ncells=%lld\ncells_visited=%lld\n"
            "struct_mb=%.1f\nrows=%s\nkept_mb=%.3f\npeak_rss_mb=%.1f\n",
            o->algo == PROX_ALGO_BRUTE ? "brute" : o->algo == PROX_ALGO_GRID ? "grid"
                                                                            : "hierarchical",
            keys_name(o->algo, s->keys), coords_name(o->algo, s->coords),
            pf->scalar == PROX_F32 ? "f32" : "f64", pf->dim, (long long)pf->count, desc->radius,
            effective_threads(desc->threads), read_s, r->build_s, r->query_s, write_s,
            (long long)s->pairs, (long long)s->candidates, (long long)s->rechecked,
            (long long)s->cells,
            (long long)s->cells_visited, (double)s->bytes / (1024.0 * 1024.0),
            desc->rows == PROX_ROWS_IN_PLACE ? "in-place" : "staged",
            (double)s->kept_bytes / (1024.0 * 1024.0), peak_rss_mb());
}

/* --mpi: rank 0 reads and writes; every rank searches (cli_mpi.h). */
static int pairs_over_mpi(const pairs_options *o)
{
    if (o->algo != PROX_ALGO_GRID)
        die_usage("pairs", "--mpi searches with the grid only");
    int rank = cli_mpi_start("pairs");
    output out;
    point_file pf;
    memset(&pf, 0, sizeof pf);
    prox_grid_desc desc = prox_default_grid_desc();
    prox_points points = { .dim = 3 };
    if (rank == 0) {
        output_open(&out, o->output);
        point_file_read(&pf, o->input, o->dim);
        desc = make_desc(o, resolve_radius(o, &pf), pf.dim);
        points = point_file_view(&pf);
    }
    pairs_result r;
    memset(&r, 0, sizeof r);
    prox_pair_buffer_init(&r.buffer, NULL);
    prox_lists_init(&r.lists, NULL);
    cli_mpi_pairs(&points, &desc, make_sink(o->task, &r), &r.stats, o->stats);
    if (rank == 0) {
        write_result(&out, o->task, &r);
        output_commit(&out);
        point_file_free(&pf);
    }
    prox_pair_buffer_free(&r.buffer);
    prox_lists_free(&r.lists);
    cli_mpi_finish();
    return EXIT_OK;
}

int cmd_pairs(int argc, char **argv)
{
    pairs_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.threads);
    if (o.mpi)
        return pairs_over_mpi(&o);
    output out;
    output_open(&out, o.output); /* first, so that a bad -o fails fast */

    double t0 = now_seconds();
    point_file pf;
    point_file_read(&pf, o.input, o.dim);
    double read_s = now_seconds() - t0;

    prox_grid_desc desc = make_desc(&o, resolve_radius(&o, &pf), pf.dim);
    prox_points points = point_file_view(&pf);
    pairs_result r;
    memset(&r, 0, sizeof r);
    prox_pair_buffer_init(&r.buffer, NULL);
    prox_lists_init(&r.lists, NULL);
    run_search(&points, &desc, o.algo, &o, &r);

    t0 = now_seconds();
    write_result(&out, o.task, &r);
    output_commit(&out);
    double write_s = now_seconds() - t0;

    if (o.stats)
        print_stats(&o, &pf, &desc, &r, read_s, write_s);
    prox_pair_buffer_free(&r.buffer);
    prox_lists_free(&r.lists);
    point_file_free(&pf);
    return EXIT_OK;
}
