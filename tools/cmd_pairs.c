/* cmd_pairs.c: `prox pairs`: every pair of points of a file within a radius. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_mpi.h"
#include "cmd_pairs_cell.h"
#include "commands.h"
#include "input.h"
#include "output.h"
#include "prox/prox.h"
#include "sizes_file.h"

static const char usage[] =
    "usage: prox pairs [OPTIONS] FILE\n"
    "Every pair of points of FILE at distance <= R (the closed ball).\n"
    "\n"
    "FILE is numpy's array file when its name ends in .npy (shape (n, 2) or (n, 3),\n"
    "'<f8', or '<f4' searched as floats), raw little-endian binary with no header\n"
    "when it ends in .f64 (doubles) or .f32 (floats), else text (one point per\n"
    "line; numbers separated by spaces, tabs or commas; '#' starts a comment;\n"
    "'-' reads stdin).\n"
    "\n"
    "Options:\n"
    "  -r, --radius R          search radius, > 0 (default: the file's '# radius=R'\n"
    "                          header line, as written by 'prox gen')\n"
    "      --dim 2|3           coordinates per point (default: the file's '# dim=D'\n"
    "                          header line, else 3)\n"
    "      --algo grid|brute|hierarchical  uniform grid (default), every pair\n"
    "                          tested, or the hierarchical hash (Pouchol et al. 2009, Listing 3;\n"
    "                          one thread, open axes)\n"
    "      --keys linear|morton|hash  grid cell keys (default linear: row-major over\n"
    "                          every cell, Morton when over 256 cells per point)\n"
    "      --coords fixed|double  coordinates the grid keeps (default fixed: 32-bit\n"
    "                          fixed point, pairs near the radius decided in double\n"
    "                          from the input; linear keys only, else double;\n"
    "                          double by default at PROX_SIMD=scalar)\n"
    "      --rows staged|in-place|in-output  how sorted pairs and lists are\n"
    "                          written (default: in-output for one run's sorted\n"
    "                          pairs, else staged); staged: fastest, holds 4 bytes\n"
    "                          per output entry; in-place: 6 bytes per point\n"
    "                          beyond the output, 2 for lists, about 1.5-2x the\n"
    "                          search time, linear keys only; in-output: pairs\n"
    "                          staged in the output itself, lists counted first\n"
    "                          then written to their places (a pass more)\n"
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
    ;

static const char usage_more[] = /* apart: C99 promises strings of 4095 bytes */
    "      --stream            write the pairs in blocks as they are found, holding\n"
    "                          a fixed buffer instead of the whole output (same\n"
    "                          order: sorted, or traversal order with --unsorted;\n"
    "                          sorted streams search each pair four times)\n"
    "      --max-memory BYTES  refuse (exit 5) before the search a job whose memory\n"
    "                          (input, structure, output: pairs estimated from a\n"
    "                          sample of the points) would pass BYTES; suffixes\n"
    "                          K, M, G, T (powers of 1024)\n"
    "      --runs R            build and search R times on one grid and one output,\n"
    "                          as a simulation's steps do (default 1); --stats then\n"
    "                          gives build_s and query_s as medians of the runs after\n"
    "                          the first (memory kept from the run before) and\n"
    "                          first_s, the first run's build + search\n"
    "      --stats             print key=value timings and figures to stderr\n"
    "      --mpi               over MPI ranks (mpirun -np P prox pairs --mpi): the same\n"
    "                          output; grid only\n"
    "  -o, --output OUT        write to OUT (default stdout); OUT appears only when\n"
    "                          complete. A symbolic link is followed (its target\n"
    "                          is written, the link stays); a read-only OUT is\n"
    "                          refused (exit 4); a replaced OUT keeps its mode; an\n"
    "                          OUT that is the input file is refused (exit 2)\n"
    "  -h, --help              this help\n";

static const char usage_sizes[] = /* apart: C99 promises strings of 4095 bytes */
    "Particles of different sizes:\n"
    "      --radii FILE        particles of different sizes: one radius per point\n"
    "                          (text, one number a line, or .f64/.f32/.npy of one\n"
    "                          column); pairs with d <= r_i + r_j instead of R\n"
    "                          (grid, brute or --cell; not with --stream, --runs,\n"
    "                          --mpi)\n"
    "      --rule contact|gather-scatter  with --radii: d <= r_i + r_j (default)\n"
    "                          or d <= max(h_i, h_j)\n"
    "      --types FILE        one integer type per point (0 to T-1; read as --radii\n"
    "                          reads); pairs with d <= cutoff[t_i][t_j]; needs\n"
    "      --cutoffs FILE      the symmetric T x T cutoff matrix: text, T lines of\n"
    "                          T numbers (limits as --radii)\n"
    "\n";
static const char usage_cell[] = /* apart: C99 promises strings of 4095 bytes */
    "\n"
    "Cells of any shape (include/prox/cell.h):\n"
    "      --cell A[,B,...]    a periodic cell of any shape: D lengths, or the D*D\n"
    "                          numbers of its rows (the cell vectors a, b[, c]:\n"
    "                          ax,ay,az,bx,...); every image within R, as ASE's\n"
    "                          neighbor_list: a pair per integer shift S with\n"
    "                          |x_j + S.cell - x_i| <= R, any R, self-images too;\n"
    "                          pairs i < j (and i = j with S > 0) unless --full\n"
    "      --pbc F,F[,F]       periodic axes of --cell: 1/0, true/false, yes/no\n"
    "                          (default every axis)\n"
    "      --geometry          with --cell: lines 'i j d Dx Dy [Dz] Sx Sy [Sz]'\n"
    "                          (distance, vector x_j + S.cell - x_i, shift)\n"
    "      --full              with --cell: both directions of every pair\n"
    "      --self-interaction  with --cell: also (i, i, S = 0)\n"
;

static const char usage_output[] = /* apart: C99 promises strings of 4095 bytes */
    "\n"
    "Output:\n"
    "  default   one line 'i j' per pair: 0-based indices, i < j, sorted by (i, j)\n"
    "            (--unsorted: traversal order; --cell: sorted by (i, j, S), a line\n"
    "            per image, 'i j d Dx Dy Dz Sx Sy Sz' with --geometry)\n"
    "  --lists   a line '# lists rows=N entries=M', then one line per point i:\n"
    "            'i: j1 j2 ...' (its neighbours, ascending, or in traversal order\n"
    "            with --unsorted; 'i:' if none)\n"
    "  --count   one line: the number of pairs\n"
    "\n"
    "Exit status: 0 ok, 2 usage error, 3 bad data (malformed file, NaN or\n"
    "infinite coordinate, radius outside [1e-150, 1e150], rejected by the\n"
    "library), 4 I/O error, 5 out of memory (or over --max-memory; sorted pairs and\n"
    "lists whose estimated output cannot be held are refused before the search).\n"
    "On failure or on a signal that can be caught, neither OUT nor its temporary\n"
    "file remains (SIGKILL can leave the temporary file).\n";

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
    bool stream;
    int64_t max_memory; /* 0: no limit */
    bool mpi;
    int runs; /* searches on one grid and output (--runs) */
    sizes_files sizes;     /* --radii, --rule, --types, --cutoffs (sizes_file.h) */
    pairs_cell_options cell; /* --cell and its options (cmd_pairs_cell.h) */
    bool cell_only;          /* an option that needs --cell was given */
} pairs_options;

enum {
    OPT_RADIUS = 1, OPT_DIM, OPT_ALGO, OPT_KEYS, OPT_COORDS, OPT_ROWS, OPT_THREADS, OPT_PERIODIC,
    OPT_DIVISIONS,
    OPT_TABLE, OPT_COUNT, OPT_LISTS, OPT_UNSORTED, OPT_STATS, OPT_OUTPUT, OPT_HELP, OPT_STREAM,
    OPT_MAX_MEMORY, OPT_MPI, OPT_RUNS, OPT_RADII, OPT_RULE, OPT_TYPES, OPT_CUTOFFS,
    OPT_CELL, OPT_PBC, OPT_GEOMETRY, OPT_FULL, OPT_SELF_INTERACTION,
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
    { "stream", 0, false, OPT_STREAM },
    { "max-memory", 0, true, OPT_MAX_MEMORY },
    { "mpi", 0, false, OPT_MPI },
    { "runs", 0, true, OPT_RUNS },
    { "radii", 0, true, OPT_RADII },
    { "rule", 0, true, OPT_RULE },
    { "types", 0, true, OPT_TYPES },
    { "cutoffs", 0, true, OPT_CUTOFFS },
    { "cell", 0, true, OPT_CELL },
    { "pbc", 0, true, OPT_PBC },
    { "geometry", 0, false, OPT_GEOMETRY },
    { "full", 0, false, OPT_FULL },
    { "self-interaction", 0, false, OPT_SELF_INTERACTION },
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
    if (strcmp(v, "in-output") == 0)
        return PROX_ROWS_IN_OUTPUT;
    die_usage(p->command, "--rows must be staged, in-place or in-output, not '%s'", v);
}

/* The rows asked for; by default a single run stages a sorted buffer's
 * rows in the output itself, as the one-shot calls do, lists and several
 * runs keep the grid's own choice (prox_rows: lists in the output take a
 * counting pass more). */
static prox_rows effective_rows(const pairs_options *o)
{
    if (o->rows != PROX_ROWS_AUTO)
        return o->rows;
    return o->runs == 1 && o->task != TASK_LISTS ? PROX_ROWS_IN_OUTPUT : PROX_ROWS_AUTO;
}

static const char *rows_name(prox_rows rows)
{
    switch (rows) {
    case PROX_ROWS_IN_PLACE: return "in-place";
    case PROX_ROWS_IN_OUTPUT: return "in-output";
    default: return "staged";
    }
}

static prox_coords parse_coords(const opt_parser *p, const char *v)
{
    if (strcmp(v, "fixed") == 0)
        return PROX_COORDS_FIXED;
    if (strcmp(v, "double") == 0)
        return PROX_COORDS_DOUBLE;
    die_usage(p->command, "--coords must be fixed or double, not '%s'", v);
}

/* BYTES with an optional K, M, G or T (powers of 1024). */
static int64_t parse_bytes(const opt_parser *p, const char *v)
{
    static const char units[] = "KMGT";
    size_t n = strlen(v);
    const char *unit = n > 0 ? strchr(units, v[n - 1]) : NULL;
    if (unit == NULL || v[n - 1] == '\0')
        return parse_count(p, v, 1, INT64_MAX);
    char digits[64];
    if (n - 1 >= sizeof digits)
        die_usage(p->command, "--max-memory: '%s' is too long", v);
    memcpy(digits, v, n - 1);
    digits[n - 1] = '\0';
    int shift = 10 * (int)(unit - units + 1);
    return parse_count(p, digits, 1, INT64_MAX >> shift) << shift;
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
    case OPT_RUNS: o->runs = (int)parse_count(p, v, 1, 1000000); break;
    case OPT_OUTPUT: o->output = v; break;
    case OPT_STREAM: o->stream = true; break;
    case OPT_MAX_MEMORY: o->max_memory = parse_bytes(p, v); break;
    case OPT_MPI: o->mpi = true; break;
    case OPT_RADII: o->sizes.radii = v; break;
    case OPT_TYPES: o->sizes.types = v; break;
    case OPT_CUTOFFS: o->sizes.cutoffs = v; break;
    case OPT_RULE:
        if (strcmp(v, "contact") && strcmp(v, "gather-scatter"))
            die_usage(p->command, "--rule must be contact or gather-scatter, not '%s'", v);
        o->sizes.rule = strcmp(v, "contact") ? PROX_RULE_GATHER_SCATTER : PROX_RULE_CONTACT;
        break;
    case OPT_CELL: o->cell.cell_values = parse_double_list(p, v, o->cell.cell, 9); break;
    case OPT_PBC: parse_pbc(p, v, &o->cell); o->cell_only = true; break;
    case OPT_GEOMETRY: o->cell.geometry = o->cell_only = true; break;
    case OPT_FULL: o->cell.full = o->cell_only = true; break;
    case OPT_SELF_INTERACTION: o->cell.self_interaction = o->cell_only = true; break;
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
    if (!(r >= PROX_RADIUS_MIN && r <= PROX_RADIUS_MAX))
        die(EXIT_DATA,
            "radius %g is outside [%g, %g]: the exact test squares it, and its square must be "
            "a normal double (scale the coordinates)",
            r, PROX_RADIUS_MIN, PROX_RADIUS_MAX);
}

/* --cell runs its own search: which other options go with it. */
static void check_cell_options(const opt_parser *p, const pairs_options *o)
{
    if (o->cell_only && o->cell.cell_values == 0)
        die_usage(p->command, "--pbc, --geometry, --full and --self-interaction need --cell");
    if (o->cell.cell_values == 0)
        return;
    if (o->mpi)
        die_usage(p->command, "--mpi does not take --cell: the MPI layer searches open axes and "
                              "orthogonal periodic boxes only (--periodic LX,LY[,LZ])");
    if (o->periods)
        die_usage(p->command, "--cell and --periodic exclude each other (--cell L1,L2,L3 is "
                              "an orthogonal cell with every image)");
    if (o->stream || o->task == TASK_LISTS || o->unsorted || o->runs > 1 || o->max_memory > 0 ||
        o->algo != PROX_ALGO_GRID)
        die_usage(p->command, "--cell writes sorted pairs or a count: not with --stream, "
                              "--lists, --unsorted, --runs, --max-memory or --algo");
    if (o->cell.geometry && o->task == TASK_COUNT)
        die_usage(p->command, "--geometry and --count exclude each other");
}

/* Returns false when --help was asked for. */
static bool parse_options(int argc, char **argv, pairs_options *o)
{
    prox_grid_desc defaults = prox_default_grid_desc();
    memset(o, 0, sizeof *o);
    o->cell_divisions = defaults.cell_divisions;
    o->keys = defaults.keys;
    o->coords = PROX_COORDS_AUTO;
    o->runs = 1;
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
    if (o->stream && o->task != TASK_PAIRS)
        die_usage(p.command, "--stream writes pairs: not with --count or --lists");
    if (o->runs > 1 && (o->stream || o->mpi))
        die_usage(p.command, "--runs repeats a search held in memory: not with --stream or --mpi");
    if (!o->sizes.types != !o->sizes.cutoffs)
        die_usage(p.command, "--types and --cutoffs go together");
    if (o->sizes.types && o->sizes.radii)
        die_usage(p.command, "--radii and --types exclude each other");
    if (o->sizes.types && o->has_radius)
        die_usage(p.command, "--radius and --types exclude each other");
    if (o->sizes.types && (o->stream || o->runs > 1 || o->mpi || o->max_memory > 0 ||
                           o->algo == PROX_ALGO_HIERARCHICAL))
        die_usage(p.command, "--types searches with the grid, brute force or --cell, without "
                             "--stream, --runs, --mpi or --max-memory");
    if (o->sizes.radii && (o->stream || o->runs > 1 || o->mpi || o->max_memory > 0 ||
                           o->algo == PROX_ALGO_HIERARCHICAL))
        die_usage(p.command, "--radii searches with the grid, brute force or --cell, without "
                             "--stream, --runs, --mpi or --max-memory");
    if (o->sizes.radii && o->has_radius)
        die_usage(p.command, "--radius and --radii exclude each other");
    if (o->has_radius)
        check_radius(o->radius); /* before reading a big file */
    check_cell_options(&p, o);
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
    /* the points outlive the grid: AUTO as the one-shot calls take it */
    desc.coords = o->coords == PROX_COORDS_AUTO ? prox_grid_coords_for_held_points() : o->coords;
    desc.rows = effective_rows(o);
    desc.cell_divisions = o->cell_divisions;
    desc.table_size = o->table_size;
    desc.threads = o->threads;
    for (int k = 0; k < o->periods; k++)
        desc.period[k] = o->period[k];
    return desc;
}

/* ---- the search -------------------------------------------------------- */

/* Pairs per block of a stream. */
#define STREAM_BLOCK_PAIRS ((int64_t)1 << 16)

typedef struct pairs_result {
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_stats stats;
    double build_s, query_s; /* one run, or medians of the runs after the first */
    double first_s;          /* the first run's build + query */
    int64_t estimate_fresh;  /* the estimate's sample query: its stats.fresh_bytes (the build) */
} pairs_result;

static prox_sink make_sink(pairs_task task, pairs_result *r)
{
    switch (task) {
    case TASK_COUNT: return prox_sink_count();
    case TASK_LISTS: return prox_sink_lists(&r->lists);
    default: return prox_sink_buffer(&r->buffer);
    }
}

static void reserve_estimated_output(prox_grid *grid, const prox_points *points,
                                     prox_sink sink, prox_rows rows, pairs_result *r);

/* One run: brute force and the hierarchical hash through the one-shot call
 * (built on the fly: Listing 3), the grid through the object API, so that
 * building and querying are timed apart. `first`: the grid's first run,
 * which reserves the output it estimates (untimed). */
static void run_once(const prox_points *points, const prox_grid_desc *desc, prox_algo algo,
                     prox_grid *grid, prox_sink sink, pairs_result *r, double *build_s,
                     double *query_s, bool first)
{
    double t0 = now_seconds();
    if (algo != PROX_ALGO_GRID) {
        prox_status st = prox_pairs(points, desc, algo, sink, &r->stats);
        *build_s = 0.0;
        *query_s = now_seconds() - t0;
        if (st != PROX_OK)
            die_status(st, algo == PROX_ALGO_BRUTE ? "brute-force search failed"
                                                   : "hierarchical search failed");
        return;
    }
    prox_status st = prox_grid_build(grid, points);
    double t1 = now_seconds();
    if (st != PROX_OK)
        die_status(st, "cannot build the grid");
    if (first)
        reserve_estimated_output(grid, points, sink, desc->rows, r);
    double t2 = now_seconds();
    st = prox_grid_pairs(grid, sink, &r->stats);
    *build_s = t1 - t0;
    *query_s = now_seconds() - t2;
    if (st != PROX_OK)
        die_status(st, "grid search failed");
}

/* o->runs runs on one grid and one output: each run after the first
 * rebuilds and searches into the memory the run before grew, as a
 * simulation's steps do. */
static void run_search(const prox_points *points, const prox_grid_desc *desc, prox_algo algo,
                       const pairs_options *o, pairs_result *r)
{
    prox_sink sink = make_sink(o->task, r);
    if (o->unsorted)
        sink = prox_sink_unsorted(sink);
    prox_grid *grid = NULL;
    if (algo == PROX_ALGO_GRID) {
        prox_status st = prox_grid_create(desc, &grid);
        if (st != PROX_OK)
            die_status(st, "cannot create the grid");
    }
    int later = o->runs - 1;
    double *times = later ? xmalloc(checked_size(2 * (int64_t)later, sizeof *times)) : NULL;
    run_once(points, desc, algo, grid, sink, r, &r->build_s, &r->query_s, true);
    r->first_s = r->build_s + r->query_s;
    for (int k = 0; k < later; k++)
        run_once(points, desc, algo, grid, sink, r, &times[k], &times[later + k], false);
    if (later) {
        r->build_s = median(times, later);
        r->query_s = median(times + later, later);
    }
    free(times);
    prox_grid_destroy(grid);
}

/* ---- particles of different sizes (--radii, --types) ------------------- */

static void run_sized(const prox_points *points, const prox_grid_desc *desc,
                      const pairs_options *o, pairs_result *r)
{
    loaded_sizes ls;
    sizes_files_load(&o->sizes, points->count, &ls);
    prox_sink sink = make_sink(o->task, r);
    if (o->unsorted)
        sink = prox_sink_unsorted(sink);
    double t0 = now_seconds();
    prox_status st = prox_sized_pairs(points, &ls.sizes, desc, o->algo, sink, &r->stats);
    r->query_s = now_seconds() - t0;
    r->first_s = r->query_s;
    loaded_sizes_free(&ls);
    if (st != PROX_OK)
        die_status(st, o->sizes.types ? "search with --types failed" : "search with --radii failed");
}

/* ---- streaming (--stream) ---------------------------------------------- */

/* A block of pairs as "i j" lines, as they come. */
static int write_block(const prox_pair *pairs, int64_t count, void *user)
{
    output *out = user;
    for (int64_t k = 0; k < count; k++) {
        char *start = output_room(out, 22), *p = start;
        p = format_u64(p, pairs[k].i);
        *p++ = ' ';
        p = format_u64(p, pairs[k].j);
        *p++ = '\n';
        out->len += (size_t)(p - start);
    }
    return 0;
}

static void run_stream(const prox_points *points, const prox_grid_desc *desc,
                       const pairs_options *o, output *out, pairs_result *r)
{
    double t0 = now_seconds();
    prox_status st = prox_pairs_stream(points, desc, o->algo, !o->unsorted, STREAM_BLOCK_PAIRS,
                                       write_block, out, &r->stats);
    r->query_s = now_seconds() - t0;
    r->first_s = r->query_s;
    if (st != PROX_OK)
        die_status(st, "streamed search failed");
}

/* ---- memory estimate (--max-memory) -------------------------------------- */

/* The structure while it is built and searched, per point: ids, fixed-point
 * or double coordinates, the sort's keys and scratch, cell table (the grid
 * holds 28 to 44 bytes a point; brute force and the hierarchical hash
 * less): a bound, not a measure. */
#define STRUCTURE_BYTES_PER_POINT 64
/* Fixed costs: the output buffer, formatting blocks, the stream's buffers. */
#define FIXED_BYTES ((int64_t)16 << 20)
/* Points whose neighbours are counted to estimate the pairs. */
#define SAMPLE_POINTS 16384

/* Evenly spaced points, SAMPLE_POINTS of them or every point. */
static prox_points sample_of(const prox_points *points)
{
    int64_t n = points->count, step = n > SAMPLE_POINTS ? n / SAMPLE_POINTS : 1;
    prox_points sample = *points;
    sample.stride *= step;
    sample.count = n / step;
    return sample;
}

/* Pairs of the whole set from the `found` neighbours of the sample (exact
 * when every point is in the sample). */
static double pairs_of_sample(int64_t found, const prox_points *points,
                              const prox_points *sample)
{
    double others = (double)(found - sample->count); /* each point finds itself */
    return others * ((double)points->count / (double)sample->count) / 2.0;
}

static double estimate_pairs(const prox_points *points, const prox_grid_desc *desc,
                             prox_algo algo)
{
    if (points->count == 0)
        return 0.0;
    prox_points sample = sample_of(points);
    prox_stats stats;
    prox_status st = prox_query(points, &sample, desc, algo, prox_sink_count(), &stats);
    if (st != PROX_OK)
        die_status(st, "cannot estimate the output");
    return pairs_of_sample(stats.pairs, points, &sample);
}

/* Sorted pairs and lists stage their rows (4 bytes an entry) before the
 * output is reserved: an output too large for memory would be refused
 * only after the whole search, its staged rows paged in. So the grid's
 * first run estimates the output from a sample of queries on the built
 * grid and reserves the pair buffer (probes the lists' room) before the
 * search: such a job fails at once, as the unsorted buffer's reservation
 * after its count pass does. An estimate below the truth only leaves the
 * library to grow the buffer. Rows staged in the output only probe. */
static void reserve_estimated_output(prox_grid *grid, const prox_points *points,
                                     prox_sink sink, prox_rows rows, pairs_result *r)
{
    bool lists = sink.kind == PROX_SINK_LISTS;
    if (sink.unsorted || sink.kind == PROX_SINK_COUNT || points->count == 0)
        return;
    prox_points sample = sample_of(points);
    prox_stats stats;
    if (prox_grid_query(grid, &sample, prox_sink_count(), &stats) != PROX_OK)
        return; /* the search will say what is wrong */
    r->estimate_fresh = stats.fresh_bytes;
    double pairs = pairs_of_sample(stats.pairs, points, &sample);
    double bytes = pairs * (lists ? 16.0 : 12.0); /* output and staged rows, at most */
    /* volatile: a compiler may drop an allocation freed unused, and with
     * it the probe (clang does) */
    void *volatile probe = NULL;
    bool fits = bytes < 0x1p62 && (probe = malloc((size_t)bytes + 1)) != NULL;
    free(probe);
    /* rows staged in the output grow it themselves, to the pairs found: a
     * reserve from the estimate would fault in its overshoot too */
    if (fits && !lists && pairs >= 1.0 && rows != PROX_ROWS_IN_OUTPUT)
        fits = prox_pair_buffer_reserve(&r->buffer, (int64_t)pairs) == PROX_OK;
    if (!fits)
        die(EXIT_NO_MEMORY, "out of memory: the output holds about %.4g pairs (%.3g bytes with "
                            "the staged rows); --count, --stream or --unsorted need less",
            pairs, bytes);
}

/* Bytes per pair of each output: the buffer's 8 plus the staged rows' 4;
 * lists hold both directions, 4 bytes an entry, staged alike. Rows in the
 * output stage nothing beyond it. */
static double bytes_per_pair(const pairs_options *o)
{
    if (o->task == TASK_COUNT || o->stream)
        return 0.0;
    bool staged = !o->unsorted && effective_rows(o) != PROX_ROWS_IN_OUTPUT;
    if (o->task == TASK_LISTS)
        return staged ? 16.0 : 8.0;
    return staged ? 12.0 : 8.0;
}

static void refuse_over_limit(const pairs_options *o, double need, const char *what)
{
    if (need <= (double)o->max_memory)
        return;
    die(EXIT_NO_MEMORY, "the job needs about %.0f bytes (%s), over --max-memory %lld%s", need,
        what, (long long)o->max_memory,
        o->stream || o->task == TASK_COUNT ? "" : "; --stream or --count need less");
}

static void check_memory(const pairs_options *o, const point_file *pf, const prox_points *points,
                         const prox_grid_desc *desc)
{
    double n = (double)pf->count;
    double input = n * pf->dim * (pf->scalar == PROX_F32 ? 4.0 : 8.0);
    double base = input + n * STRUCTURE_BYTES_PER_POINT + (double)FIXED_BYTES;
    if (o->stream && !o->unsorted)
        base += 8.0 * n; /* a row block's query output: one row may hold them all */
    char what[256];
    snprintf(what, sizeof what, "%.0f points: input and structure", n);
    refuse_over_limit(o, base, what);
    double per_pair = bytes_per_pair(o);
    if (per_pair == 0.0)
        return;
    double pairs = estimate_pairs(points, desc, o->algo);
    snprintf(what, sizeof what,
             "%.0f points: input and structure %.0f, about %.3g pairs at %.0f bytes each", n,
             base, pairs, per_pair);
    refuse_over_limit(o, base + pairs * per_pair + (o->task == TASK_LISTS ? 20.0 * n : 0.0),
                      what);
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
            "read_s=%.6f\nruns=%d\nfirst_s=%.6f\nbuild_s=%.6f\nquery_s=%.6f\nwrite_s=%.6f\n"
            "pairs=%lld\ncandidates=%lld\nrechecked=%lld\ncells=%lld\ncells_visited=%lld\n"
            "struct_mb=%.1f\nrows=%s\nkept_mb=%.3f\nfresh_mb=%.1f\nhuge_pages=%d\n"
            "peak_rss_mb=%.1f\nsimd=%s\nmethod=%s\n",
            o->algo == PROX_ALGO_BRUTE ? "brute" : o->algo == PROX_ALGO_GRID ? "grid"
                                                                            : "hierarchical",
            keys_name(o->algo, s->keys), coords_name(o->algo, s->coords),
            pf->scalar == PROX_F32 ? "f32" : "f64", pf->dim, (long long)pf->count,
            o->sizes.radii || o->sizes.types ? 0.0 : desc->radius, /* sizes: no single radius */
            effective_threads(desc->threads), read_s, o->runs, r->first_s, r->build_s, r->query_s,
            write_s,
            (long long)s->pairs, (long long)s->candidates, (long long)s->rechecked,
            (long long)s->cells,
            (long long)s->cells_visited, (double)s->bytes / (1024.0 * 1024.0),
            rows_name(desc->rows),
            (double)s->kept_bytes / (1024.0 * 1024.0),
            /* one run: its build's fresh bytes went to the estimate's sample query */
            (double)(s->fresh_bytes + (o->runs == 1 ? r->estimate_fresh : 0)) / (1024.0 * 1024.0),
            s->huge_pages, peak_rss_mb(), prox_simd_level(),
            s->method ? s->method : "none");
}

/* --mpi: rank 0 reads and writes; every rank searches (cli_mpi.h). */
static int pairs_over_mpi(const pairs_options *o)
{
    if (o->algo != PROX_ALGO_GRID)
        die_usage("pairs", "--mpi searches with the grid only");
    if (o->stream || o->max_memory > 0)
        die_usage("pairs", "--mpi excludes --stream and --max-memory");
    int rank = cli_mpi_start("pairs");
    output out;
    point_file pf;
    memset(&pf, 0, sizeof pf);
    prox_grid_desc desc = prox_default_grid_desc();
    prox_points points = { .dim = 3 };
    if (rank == 0) {
        output_open(&out, o->output);
        output_refuse_input(&out, o->input);
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
        fputs(usage_more, stdout);
        fputs(usage_sizes, stdout);
        fputs(usage_cell, stdout);
        fputs(usage_output, stdout);
        return EXIT_OK;
    }
    set_thread_limit(o.threads);
    if (o.cell.cell_values)
        return pairs_in_cell(&o.cell, &o.sizes, o.input, o.output, o.dim, o.has_radius,
                             o.radius, o.threads, o.task == TASK_COUNT, o.stats);
    if (o.mpi)
        return pairs_over_mpi(&o);
    output out;
    output_open(&out, o.output); /* first, so that a bad -o fails fast */
    output_refuse_input(&out, o.input);

    double t0 = now_seconds();
    point_file pf;
    point_file_read(&pf, o.input, o.dim);
    double read_s = now_seconds() - t0;

    prox_grid_desc desc =
        make_desc(&o, o.sizes.radii || o.sizes.types ? PROX_RADIUS_MIN : resolve_radius(&o, &pf), pf.dim);
    prox_points points = point_file_view(&pf);
    pairs_result r;
    memset(&r, 0, sizeof r);
    prox_pair_buffer_init(&r.buffer, NULL);
    prox_lists_init(&r.lists, NULL);
    if (o.max_memory > 0)
        check_memory(&o, &pf, &points, &desc);
    double write_s = 0.0;
    if (o.stream) {
        run_stream(&points, &desc, &o, &out, &r); /* writes as it searches */
        output_commit(&out);
    } else {
        if (o.sizes.radii || o.sizes.types)
            run_sized(&points, &desc, &o, &r);
        else
            run_search(&points, &desc, o.algo, &o, &r);
        t0 = now_seconds();
        write_result(&out, o.task, &r);
        output_commit(&out);
        write_s = now_seconds() - t0;
    }

    if (o.stats)
        print_stats(&o, &pf, &desc, &r, read_s, write_s);
    prox_pair_buffer_free(&r.buffer);
    prox_lists_free(&r.lists);
    point_file_free(&pf);
    return EXIT_OK;
}
