/* cmd_gen.c: `prox gen`: the standard workloads into files. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "npy.h"
#include "output.h"
#include "workloads.h"

static const char usage[] =
    "usage: prox gen WORKLOAD [OPTIONS] [-o FILE]\n"
    "Generate a standard workload exactly as docs/workloads.md specifies, bit for bit.\n"
    "\n"
    "Workloads:\n"
    "  sph3d      N points uniform in the unit cube; header gives the radius\n"
    "             r = cbrt(30 / (N * 4/3 * pi))               (default N 1000000)\n"
    "  nns2d      N points uniform in [0, 2^20)^2; header gives the radius\n"
    "             r = 2^20 * sqrt(K / (pi * N))               (default N 1000000, K 5)\n"
    "  spheres3d  centres of N unit spheres uniform in [0, L)^3 for volume\n"
    "             fraction D, L = cbrt(N * 4/3 * pi / D); spheres overlap when\n"
    "             their centres are <= 2 apart                (default N 1000000, D 0.1)\n"
    "  mixed2d    N boxes 'minx miny maxx maxy' into FILE, then Q query\n"
    "             segments 'x0 y0 x1 y1' into the segments file (default N 10000,\n"
    "             Q 1000000)\n"
    "\n"
    "Options:\n"
    "  -n, --n N              number of points, spheres or boxes (1e6 style accepted)\n"
    "  -s, --seed S           SplitMix64 seed (default 1)\n"
    "  -k, --k K              nns2d: mean neighbours per point\n"
    "      --d D              spheres3d: volume fraction\n"
    "  -q, --queries Q        mixed2d: number of segments (0: no segments file)\n"
    "      --queries-out SEG  mixed2d: segments file (default: FILE with '.segments'\n"
    "                         inserted before its extension: boxes.txt ->\n"
    "                         boxes.segments.txt)\n"
    "      --order input|z    sph3d, nns2d, spheres3d: the points as drawn (input,\n"
    "                         the default) or in Z-order (Morton order of their\n"
    "                         cells on a 2^21 (3D) or 2^32 (2D) grid over their\n"
    "                         box, ties kept as drawn), as codes that sort their\n"
    "                         particles in space hold them\n"
    "  -o, --output FILE      output (default stdout); FILE appears only when complete\n"
    "  -h, --help             this help\n"
    "\n"
    "Text output: '#' header lines (workload, N, seed, 'dim=D', and 'radius=R' or\n"
    "'L=...'), then one item per line, numbers printed with %.17g separated by\n"
    "single spaces. A FILE (or SEG) ending in .npy gets numpy's array file instead:\n"
    "float64 ('<f8'), shape (N, 2), (N, 3) or (N, 4), no comment header. One\n"
    "ending in .f64 or .f32 gets raw little-endian doubles or floats (rounded\n"
    "from the doubles), with no header at all (nothing in it says its shape).\n";

typedef enum workload { WL_SPH3D, WL_NNS2D, WL_SPHERES3D, WL_MIXED2D } workload;

typedef struct gen_options {
    workload wl;
    const char *name;
    int64_t n;
    uint64_t seed;
    double k, d;
    int64_t queries;
    const char *output;
    const char *queries_output;
    bool n_set, k_set, d_set, queries_set;
    bool z_order; /* --order z */
} gen_options;

enum {
    OPT_N = 1, OPT_SEED, OPT_K, OPT_D, OPT_QUERIES, OPT_QUERIES_OUT, OPT_ORDER, OPT_OUTPUT,
    OPT_HELP
};

static const opt_spec gen_specs[] = {
    { "n", 'n', true, OPT_N },
    { "seed", 's', true, OPT_SEED },
    { "k", 'k', true, OPT_K },
    { "d", 0, true, OPT_D },
    { "queries", 'q', true, OPT_QUERIES },
    { "queries-out", 0, true, OPT_QUERIES_OUT },
    { "order", 0, true, OPT_ORDER },
    { "output", 'o', true, OPT_OUTPUT },
    { "help", 'h', false, OPT_HELP },
};

/* ---- options ----------------------------------------------------------- */

static const char *const workload_names[] = { "sph3d", "nns2d", "spheres3d", "mixed2d" };
static const int64_t default_n[] = { 1000000, 1000000, 1000000, 10000 };

static void set_workload(gen_options *o, const char *name)
{
    for (int w = 0; w < 4; w++) {
        if (strcmp(name, workload_names[w]) == 0) {
            o->wl = (workload)w;
            o->name = workload_names[w];
            return;
        }
    }
    die_usage("gen", "unknown workload '%s' (sph3d, nns2d, spheres3d or mixed2d)", name);
}

/* Options that only one workload understands are errors elsewhere. */
static void check_applicable(const gen_options *o)
{
    if (o->k_set && o->wl != WL_NNS2D)
        die_usage("gen", "--k applies to nns2d only");
    if (o->d_set && o->wl != WL_SPHERES3D)
        die_usage("gen", "--d applies to spheres3d only");
    if ((o->queries_set || o->queries_output != NULL) && o->wl != WL_MIXED2D)
        die_usage("gen", "--queries and --queries-out apply to mixed2d only");
    if (o->z_order && o->wl == WL_MIXED2D)
        die_usage("gen", "--order applies to point workloads (sph3d, nns2d, spheres3d)");
    if (o->wl == WL_MIXED2D && o->queries > 0 && o->queries_output == NULL
        && (o->output == NULL || strcmp(o->output, "-") == 0))
        die_usage("gen", "mixed2d writing to stdout needs --queries-out SEG (or --queries 0)");
}

/* One option into o; returns false for --help. */
static bool apply_option(opt_parser *p, gen_options *o, int id, const char *v)
{
    switch (id) {
    case OPT_N:
        o->n = parse_count(p, v, 1, PROX_MAX_POINTS);
        o->n_set = true;
        break;
    case OPT_SEED: o->seed = parse_u64(p, v); break;
    case OPT_K:
        o->k = parse_double(p, v);
        o->k_set = true;
        break;
    case OPT_D:
        o->d = parse_double(p, v);
        o->d_set = true;
        break;
    case OPT_QUERIES:
        o->queries = parse_count(p, v, 0, PROX_MAX_POINTS);
        o->queries_set = true;
        break;
    case OPT_QUERIES_OUT: o->queries_output = v; break;
    case OPT_ORDER:
        if (strcmp(v, "z") != 0 && strcmp(v, "input") != 0)
            die_usage("gen", "--order must be input or z, not '%s'", v);
        o->z_order = strcmp(v, "z") == 0;
        break;
    case OPT_OUTPUT: o->output = v; break;
    case OPT_HELP: return false;
    }
    if ((id == OPT_K && !(o->k > 0)) || (id == OPT_D && !(o->d > 0)))
        die_usage("gen", "option '%s' must be > 0", p->current);
    return true;
}

/* Returns false when --help was asked for. */
static bool parse_options(int argc, char **argv, gen_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = PROX_WL_DEFAULT_SEED;
    o->k = 5.0;
    o->d = 0.1;
    o->queries = 1000000;
    opt_parser p = opt_init("gen", gen_specs, sizeof gen_specs / sizeof gen_specs[0], argc, argv);
    p.next = 1;
    const char *v;
    int id;
    while ((id = opt_next(&p, &v)) != OPT_END) {
        if (id == OPT_ARG) {
            if (o->name != NULL)
                die_usage("gen", "one workload only ('%s' and '%s')", o->name, v);
            set_workload(o, v);
        } else if (!apply_option(&p, o, id, v)) {
            return false;
        }
    }
    if (o->name == NULL)
        die_usage("gen", "missing WORKLOAD (sph3d, nns2d, spheres3d or mixed2d)");
    if (!o->n_set)
        o->n = default_n[o->wl];
    check_applicable(o);
    return true;
}

/* ---- files ------------------------------------------------------------- */

static char *copy_string(const char *s)
{
    char *copy = xmalloc(strlen(s) + 1);
    strcpy(copy, s);
    return copy;
}

/* "boxes.txt" -> "boxes.segments.txt"; "dir.v2/boxes" -> "dir.v2/boxes.segments". */
static char *default_segments_path(const char *boxes_path)
{
    const char *base = strrchr(boxes_path, '/');
    base = base != NULL ? base + 1 : boxes_path;
    const char *dot = strrchr(base, '.');
    size_t stem = dot != NULL && dot != base ? (size_t)(dot - boxes_path) : strlen(boxes_path);
    const char *ext = boxes_path + stem;
    char *path = xmalloc(stem + strlen(".segments") + strlen(ext) + 1);
    memcpy(path, boxes_path, stem);
    strcpy(path + stem, ".segments");
    strcat(path, ext);
    return path;
}

/* Rows of `cols` numbers: text with the header, .npy, or raw binary by name. */
static void write_rows(output *out, const char *path, const char *header, const double *values,
                       int64_t rows, int cols)
{
    if (path != NULL && has_suffix(path, ".npy")) {
        unsigned char prefix[NPY_WRITTEN_MAX];
        output_bytes(out, prefix, npy_format_header(prefix, PROX_F64, rows, cols));
        output_f64_le(out, values, rows * cols);
    } else if (path != NULL && has_suffix(path, ".f64")) {
        output_f64_le(out, values, rows * cols);
    } else if (path != NULL && has_suffix(path, ".f32")) {
        output_f32_le(out, values, rows * cols);
    } else {
        output_str(out, header);
        output_double_rows(out, values, rows, cols);
    }
}

/* The header's first line: the command that reproduces the file. */
static int describe(char *buf, size_t size, const gen_options *o)
{
    int n = snprintf(buf, size, "# prox gen %s n=%lld seed=%llu", o->name, (long long)o->n,
                     (unsigned long long)o->seed);
    if (o->wl == WL_NNS2D)
        n += snprintf(buf + n, size - (size_t)n, " k=%.17g", o->k);
    if (o->wl == WL_SPHERES3D)
        n += snprintf(buf + n, size - (size_t)n, " d=%.17g", o->d);
    if (o->wl == WL_MIXED2D)
        n += snprintf(buf + n, size - (size_t)n, " queries=%lld", (long long)o->queries);
    if (o->z_order)
        n += snprintf(buf + n, size - (size_t)n, " order=z");
    n += snprintf(buf + n, size - (size_t)n, "\n");
    return n;
}

/* ---- workloads --------------------------------------------------------- */

static void gen_points(const gen_options *o)
{
    int dim = o->wl == WL_NNS2D ? 2 : 3;
    double *v = xmalloc(checked_size(o->n * dim, sizeof(double)));
    char header[1024];
    int h = describe(header, sizeof header, o);
    h += snprintf(header + h, sizeof header - (size_t)h, "# dim=%d\n", dim);
    if (o->wl == WL_SPH3D) {
        prox_wl_sph3d(o->n, o->seed, v);
        snprintf(header + h, sizeof header - (size_t)h, "# radius=%.17g\n",
                 prox_wl_sph3d_radius(o->n));
    } else if (o->wl == WL_NNS2D) {
        prox_wl_nns2d(o->n, o->seed, v);
        snprintf(header + h, sizeof header - (size_t)h, "# radius=%.17g\n",
                 prox_wl_nns2d_radius(o->n, o->k));
    } else {
        prox_wl_spheres3d(o->n, o->d, o->seed, v);
        snprintf(header + h, sizeof header - (size_t)h,
                 "# L=%.17g\n# sphere_radius=1: spheres overlap when their centres are at most 2"
                 " apart (prox pairs --radius 2)\n",
                 prox_wl_spheres3d_side(o->n, o->d));
    }
    if (o->z_order && !prox_wl_order_z(v, o->n, dim))
        die(EXIT_NO_MEMORY, "out of memory for the Z-order of %lld points", (long long)o->n);
    output out;
    output_open(&out, o->output);
    write_rows(&out, o->output, header, v, o->n, dim);
    output_commit(&out);
    free(v);
}

static void gen_mixed2d(const gen_options *o)
{
    double *boxes = xmalloc(checked_size(o->n * 4, sizeof(double)));
    double *segments = xmalloc(checked_size(o->queries * 4, sizeof(double)));
    prox_wl_mixed2d(o->n, o->queries, o->seed, boxes, segments);
    char *seg_path = NULL;
    if (o->queries > 0)
        seg_path = o->queries_output != NULL ? copy_string(o->queries_output)
                                             : default_segments_path(o->output);

    char header[1024];
    int h = describe(header, sizeof header, o);
    /* Both files are complete before either is renamed into place. */
    output box_out, seg_out;
    output_open(&box_out, o->output);
    snprintf(header + h, sizeof header - (size_t)h, "# boxes: minx miny maxx maxy\n");
    write_rows(&box_out, o->output, header, boxes, o->n, 4);
    if (seg_path != NULL) {
        output_open(&seg_out, seg_path);
        snprintf(header + h, sizeof header - (size_t)h, "# segments: x0 y0 x1 y1\n");
        write_rows(&seg_out, seg_path, header, segments, o->queries, 4);
        output_flush(&seg_out);
    }
    output_commit(&box_out);
    if (seg_path != NULL)
        output_commit(&seg_out);
    free(seg_path);
    free(segments);
    free(boxes);
}

int cmd_gen(int argc, char **argv)
{
    gen_options o;
    if (!parse_options(argc, argv, &o)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    if (o.wl == WL_MIXED2D)
        gen_mixed2d(&o);
    else
        gen_points(&o);
    return EXIT_OK;
}
