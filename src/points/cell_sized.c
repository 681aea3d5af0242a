/* cell_sized.c: prox_sized_cell_pairs (sizes.h), particles of different
 * sizes in a periodic cell of any shape (docs/design.md, "Sizes in a cell
 * of any shape").
 *
 * The cell search (prox_cell_pairs) at the largest threshold any pair of
 * the points can have finds every image pair the sizes' rule can keep: a
 * pair's threshold t is at most that largest one, so its squared distance,
 * at most t*t, is at most the largest one squared (squaring rounds
 * monotonically). Each pair found is then decided by the rule of sizes.h
 * with the squared distance of cell.h's rule, recomputed from the pair's
 * vector D as cell.h computes it, and the arrays compacted in place: the
 * output is the cell search's order, sorted by (i, j, S). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/sized_load.h"
#include "prox/cell.h"
#include "prox/sizes.h"

/* The squared distance of cell.h's rule from the pair's vector. */
static double vector_dist2(const double *D, int dim)
{
    double d2 = D[0] * D[0] + D[1] * D[1];
    return dim == 3 ? d2 + D[2] * D[2] : d2;
}

static bool shift_zero(const int32_t *S, int dim)
{
    for (int k = 0; k < dim; k++)
        if (S[k])
            return false;
    return true;
}

/* Pair p kept: its (i, i, 0) of self_interaction, or within its threshold. */
static bool keeps(const prox_geometry *g, int64_t p, const sized_rule *rule, const sized_set *s,
                  bool self_interaction)
{
    prox_index i = g->i[p], j = g->j[p];
    int dim = g->dim;
    if (self_interaction && i == j && shift_zero(&g->S[p * dim], dim))
        return true;
    double si = s->size ? s->size[i] : 0, sj = s->size ? s->size[j] : 0;
    int32_t ti = s->type ? s->type[i] : 0, tj = s->type ? s->type[j] : 0;
    return sized_within(vector_dist2(&g->D[p * dim], dim), sized_threshold2(rule, si, sj, ti, tj));
}

static void move_entry(prox_geometry *g, int64_t to, int64_t from)
{
    int dim = g->dim;
    g->i[to] = g->i[from];
    g->j[to] = g->j[from];
    if (g->d)
        g->d[to] = g->d[from];
    memmove(&g->D[to * dim], &g->D[from * dim], (size_t)dim * sizeof *g->D);
    memmove(&g->S[to * dim], &g->S[from * dim], (size_t)dim * sizeof *g->S);
}

/* The arrays asked for by `fields` kept, the others released. */
static void keep_fields(prox_geometry *g, unsigned fields)
{
    const prox_allocator *al = &g->allocator;
    if (!(fields & PROX_GEOMETRY_I)) {
        prox_free(al, g->i);
        g->i = NULL;
    }
    if (!(fields & PROX_GEOMETRY_J)) {
        prox_free(al, g->j);
        g->j = NULL;
    }
    if (!(fields & PROX_GEOMETRY_VECTOR)) {
        prox_free(al, g->D);
        g->D = NULL;
    }
    if (!(fields & PROX_GEOMETRY_SHIFT)) {
        prox_free(al, g->S);
        g->S = NULL;
    }
    g->fields = fields;
}

static const char *method_of(const char *cell_method)
{
    if (cell_method && strcmp(cell_method, "cell.halo") == 0)
        return "sized.cell.halo";
    return "sized.cell.bins";
}

prox_status prox_sized_cell_pairs(const prox_points *points, const prox_sizes *sizes,
                                  const prox_cell_desc *desc, prox_geometry *out,
                                  prox_stats *stats)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!points || !desc)
        return prox_fail(PROX_ERR_INVALID, "prox_sized_cell_pairs: %s NULL",
                         !points ? "points are" : "options are");
    if (out)
        prox_geometry_free(out); /* empty on failure */
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    sized_rule rule;
    sized_set set = {0};
    prox_status st = sized_check_rule(sizes, &rule, &al);
    if (!st)
        st = sized_load(sizes, &rule, points->count, "points", &al, &set);
    double largest = st ? 0 : sized_largest(&rule, &set, &set);
    prox_cell_desc d = *desc;
    /* no pair can be kept: the cell search still checks the cell and the
     * points, at a cutoff that finds nothing but self-images */
    d.cutoff = largest > 0 ? largest : PROX_RADIUS_MIN;
    prox_geometry g;
    unsigned fields = out ? out->fields : 0;
    prox_geometry_init(&g, fields | PROX_GEOMETRY_I | PROX_GEOMETRY_J | PROX_GEOMETRY_VECTOR |
                               PROX_GEOMETRY_SHIFT,
                       out ? &out->allocator : &al);
    prox_stats cs;
    if (!st)
        st = prox_cell_pairs(points, &d, &g, &cs);
    int64_t kept = 0;
    for (int64_t p = 0; !st && p < g.count; p++)
        if (keeps(&g, p, &rule, &set, desc->self_interaction))
            move_entry(&g, kept++, p);
    g.count = kept;
    if (!st && out) {
        prox_geometry_free(out);
        keep_fields(&g, fields);
        *out = g;
    } else
        prox_geometry_free(&g);
    if (!st && stats) {
        *stats = cs;
        stats->pairs = kept;
        stats->method = method_of(cs.method);
    }
    sized_set_free(&set, &al);
    sized_rule_free(&rule, &al);
    return st;
}
