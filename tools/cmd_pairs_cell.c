/* cmd_pairs_cell.c: `prox pairs --cell` (cmd_pairs_cell.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_pairs_cell.h"
#include "input.h"
#include "output.h"
#include "prox/prox.h"
#include "sizes_file.h"

void parse_pbc(const opt_parser *p, const char *text, pairs_cell_options *c)
{
    const char *at = text;
    c->pbc_values = 0;
    while (*at) {
        size_t len = strcspn(at, ",");
        if (c->pbc_values == 3)
            die_usage(p->command, "--pbc: at most 3 flags, not '%s'", text);
        bool on = (len == 1 && at[0] == '1') || (len == 4 && !strncmp(at, "true", 4)) ||
                  (len == 3 && !strncmp(at, "yes", 3));
        bool off = (len == 1 && at[0] == '0') || (len == 5 && !strncmp(at, "false", 5)) ||
                   (len == 2 && !strncmp(at, "no", 2));
        if (!on && !off)
            die_usage(p->command, "--pbc: flags are 1/0, true/false or yes/no, not '%.*s'",
                      (int)len, at);
        c->pbc[c->pbc_values++] = on;
        at += len + (at[len] == ',');
    }
    if (c->pbc_values == 0)
        die_usage(p->command, "--pbc: expected one flag per axis, e.g. 1,1,0");
}

void cell_rows_of(const pairs_cell_options *c, int dim, const char *command, double cell[3][3],
                  bool pbc[3])
{
    memset(cell, 0, 9 * sizeof(double));
    if (c->cell_values == dim) {
        for (int k = 0; k < dim; k++)
            cell[k][k] = c->cell[k];
    } else if (c->cell_values == dim * dim) {
        for (int r = 0; r < dim; r++)
            for (int k = 0; k < dim; k++)
                cell[r][k] = c->cell[r * dim + k];
    } else {
        die_usage(command, "--cell gives %d numbers for %dD points: %d lengths or %d for the "
                           "rows of the cell",
                  c->cell_values, dim, dim, dim * dim);
    }
    if (c->pbc_values != 0 && c->pbc_values != dim)
        die_usage(command, "--pbc gives %d flags for %dD points", c->pbc_values, dim);
    for (int k = 0; k < 3; k++)
        pbc[k] = k < dim && (c->pbc_values == 0 || c->pbc[k]);
}

/* The options as the library's description, checked against the points' dimension. */
static prox_cell_desc cell_desc(const pairs_cell_options *c, int dim, double radius, int threads)
{
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = radius;
    d.threads = threads;
    d.full = c->full;
    d.self_interaction = c->self_interaction;
    cell_rows_of(c, dim, "pairs", d.cell, d.pbc);
    return d;
}

typedef struct geometry_text {
    const prox_geometry *g;
    bool geometry;
} geometry_text;

static size_t geometry_bound(const void *ctx, int64_t begin, int64_t end)
{
    const geometry_text *t = ctx;
    /* two indices, then d and D (25 bytes a double) and S (12 bytes an int) */
    return (size_t)(end - begin) * (t->geometry ? 22 + 25 * 4 + 12 * 3 + 8 : 22);
}

static size_t format_geometry(const void *ctx, int64_t begin, int64_t end, char *buf)
{
    const geometry_text *t = ctx;
    const prox_geometry *g = t->g;
    char *p = buf;
    for (int64_t k = begin; k < end; k++) {
        p = format_u64(p, g->i[k]);
        *p++ = ' ';
        p = format_u64(p, g->j[k]);
        if (t->geometry) {
            p += sprintf(p, " %.17g", g->d[k]);
            for (int a = 0; a < g->dim; a++)
                p += sprintf(p, " %.17g", g->D[k * g->dim + a]);
            for (int a = 0; a < g->dim; a++)
                p += sprintf(p, " %d", (int)g->S[k * g->dim + a]);
        }
        *p++ = '\n';
    }
    return (size_t)(p - buf);
}

int pairs_in_cell(const pairs_cell_options *c, const sizes_files *sizes, const char *input,
                  const char *output_path, int dim, bool has_radius, double radius, int threads,
                  bool count, bool stats)
{
    output out;
    output_open(&out, output_path);
    output_refuse_input(&out, input);
    double t0 = now_seconds();
    point_file pf;
    point_file_read(&pf, input, dim);
    double read_s = now_seconds() - t0;
    bool sized = sizes->radii || sizes->types;
    if (!sized && !has_radius && !pf.has_radius)
        die_usage("pairs", "missing --radius (and %s has no '# radius=' header line)", input);
    prox_cell_desc d = cell_desc(c, pf.dim, sized ? 0 : has_radius ? radius : pf.radius, threads);
    prox_points points = point_file_view(&pf);
    loaded_sizes ls = {0};
    if (sized)
        sizes_files_load(sizes, pf.count, &ls);
    prox_geometry g;
    prox_geometry_init(&g, c->geometry ? PROX_GEOMETRY_ALL : PROX_GEOMETRY_I | PROX_GEOMETRY_J,
                       NULL);
    prox_stats st;
    t0 = now_seconds();
    prox_status status = sized ? prox_sized_cell_pairs(&points, &ls.sizes, &d, count ? NULL : &g, &st)
                               : prox_cell_pairs(&points, &d, count ? NULL : &g, &st);
    double query_s = now_seconds() - t0;
    loaded_sizes_free(&ls);
    if (status)
        die_status(status, "pairs --cell");
    t0 = now_seconds();
    if (count) {
        output_printf(&out, "%lld\n", (long long)st.pairs);
    } else {
        geometry_text text = {&g, c->geometry};
        output_parallel(&out, g.count, 1 << 14, &text, geometry_bound, format_geometry);
    }
    output_commit(&out);
    double write_s = now_seconds() - t0;
    if (stats)
        fprintf(stderr,
                "algo=cell\ndim=%d\nn=%lld\nradius=%.17g\nthreads=%d\nread_s=%.6f\n"
                "query_s=%.6f\nwrite_s=%.6f\npairs=%lld\ncandidates=%lld\ncells=%lld\n"
                "peak_rss_mb=%.1f\nsimd=%s\nmethod=%s\n",
                pf.dim, (long long)pf.count, d.cutoff, effective_threads(threads), read_s,
                query_s, write_s, (long long)st.pairs, (long long)st.candidates,
                (long long)st.cells, peak_rss_mb(), prox_simd_level(),
                st.method ? st.method : "none");
    prox_geometry_free(&g);
    point_file_free(&pf);
    return EXIT_OK;
}
