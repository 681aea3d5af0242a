/* sized_grid.c: a grid of particles of different sizes kept between calls
 * (include/prox/sizes.h, prox_sized_grid; docs/design.md, "Sizes": the
 * kept grid), so that moving particles are relocated, not binned again.
 *
 * The particles are grouped by their reach (contact: the radius;
 * gather-scatter: h; types: the largest cutoff of the particle's type with
 * a type present), SIZED_GRID_CLASS_SPAN powers of two a class, and each
 * class is a prox_grid (grid.h) over its members at the class's radius:
 * the largest threshold two members can have (contact: twice the largest
 * radius; otherwise the largest reach). A pair of members of one class is
 * within that radius; a pair across classes within the larger class's
 * radius (the smaller one's reach is no more than the larger's), so the
 * members of each smaller class are queried against each larger grid.
 * prox_grid_update relocates each class's members; what the grids find is
 * a superset of the pairs (t <= radius gives t*t <= radius*radius in
 * double), and every candidate is decided by the sizes rule with the
 * arithmetic of prox_sized_pairs and prox_sized_skin_list (the wrapped
 * coordinates of the kept copy, the metric's minimum image, the rule's
 * threshold): the same pairs to the bit. Particles that reach nothing (a
 * type whose cutoffs are all 0) are in no class; radii of 0 join the
 * smallest class, which reaches them. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/pair_sink.h"
#include "points/points_common.h"
#include "points/sized_load.h"

/* Powers of two of reach in one class: the grid of a class whose reaches
 * span 2^5 visits at most that factor more cells than one sized for each
 * member, the planner's choice for the one-shot search (sized.c). */
#define SIZED_GRID_CLASS_SPAN 5
#define SIZED_GRID_MAX_CLASSES 24

typedef struct sized_grid_class {
    prox_grid *grid;
    prox_index *id;     /* the members, ascending */
    double *xyz;        /* their coordinates, dim a member */
    int64_t n;
    double radius;
} sized_grid_class;

struct prox_sized_grid {
    prox_grid_desc desc;
    prox_allocator al;
    sized_rule rule;
    sized_set set;
    double *x;          /* the built points widened to double, dim a point */
    int64_t n;
    int dim;
    sized_grid_class cls[SIZED_GRID_MAX_CLASSES];
    int classes;
    prox_pair_buffer found;  /* one grid's candidates */
    prox_pair *kept;
    int64_t kept_cap;
    prox_workspace work;
    bool built;
};

prox_status prox_sized_grid_create(const prox_grid_desc *desc, prox_sized_grid **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_sized_grid_create: out is NULL");
    *out = NULL;
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "sized grid: options are NULL; start from "
                                           "prox_default_grid_desc()");
    prox_grid_desc d = *desc;
    d.radius = PROX_RADIUS_MIN; /* not read: the sizes give the thresholds */
    prox_status st = prox_grid_desc_check(&d, 3);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    prox_sized_grid *g = prox_alloc_array(&al, 1, sizeof *g);
    if (!g)
        return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory");
    memset(g, 0, sizeof *g);
    g->desc = *desc;
    g->desc.allocator = al;
    g->al = al;
    prox_pair_buffer_init(&g->found, &al);
    prox_workspace_init(&g->work, &al);
    *out = g;
    return PROX_OK;
}

static void classes_free(prox_sized_grid *g)
{
    for (int c = 0; c < g->classes; c++) {
        prox_grid_destroy(g->cls[c].grid);
        prox_free(&g->al, g->cls[c].id);
        prox_free(&g->al, g->cls[c].xyz);
    }
    memset(g->cls, 0, sizeof g->cls);
    g->classes = 0;
}

void prox_sized_grid_destroy(prox_sized_grid *g)
{
    if (!g)
        return;
    classes_free(g);
    sized_set_free(&g->set, &g->al);
    sized_rule_free(&g->rule, &g->al);
    prox_free(&g->al, g->x);
    prox_pair_buffer_free(&g->found);
    prox_free(&g->al, g->kept);
    prox_workspace_free(&g->work);
    prox_allocator al = g->al;
    prox_free(&al, g);
}

/* The largest threshold of point i with any built point (0: none). */
static double reach_of(const prox_sized_grid *g, int64_t i, const double *type_reach)
{
    if (g->rule.rule == PROX_RULE_TYPES)
        return type_reach[g->set.type[i]];
    return g->set.size[i];
}

/* TYPES: the largest cutoff of each type with a type present. */
static prox_status types_reach(const prox_sized_grid *g, double **out)
{
    int types = g->rule.types;
    double *r = prox_alloc_array(&g->al, types, sizeof *r);
    unsigned char *present = prox_alloc_array(&g->al, types, 1);
    if (!r || !present) {
        prox_free(&g->al, r);
        prox_free(&g->al, present);
        return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory for the types");
    }
    memset(present, 0, (size_t)types);
    for (int64_t i = 0; i < g->n; i++)
        present[g->set.type[i]] = 1;
    for (int a = 0; a < types; a++) {
        r[a] = 0;
        for (int b = 0; b < types; b++)
            if (present[b] && g->rule.cut[(int64_t)a * types + b] > r[a])
                r[a] = g->rule.cut[(int64_t)a * types + b];
    }
    prox_free(&g->al, present);
    *out = r;
    return PROX_OK;
}

/* The class of a reach v > 0 above the smallest positive reach lo. */
static int class_of(double v, double lo)
{
    int c = (int)(floor(log2(v / lo)) / SIZED_GRID_CLASS_SPAN);
    return c < 0 ? 0 : c >= SIZED_GRID_MAX_CLASSES ? SIZED_GRID_MAX_CLASSES - 1 : c;
}

/* Class c's members' coordinates gathered from the kept copy. */
static void gather_members(const prox_sized_grid *g, sized_grid_class *k)
{
    for (int64_t m = 0; m < k->n; m++)
        memcpy(k->xyz + m * g->dim, g->x + (int64_t)k->id[m] * g->dim,
               (size_t)g->dim * sizeof *g->x);
}

static prox_points members_view(const prox_sized_grid *g, const sized_grid_class *k)
{
    return prox_points_f64(k->xyz, k->n, g->dim);
}

/* The members of each class (ascending ids) and each class's radius. */
static prox_status plan_classes(prox_sized_grid *g, const double *type_reach)
{
    double lo = INFINITY;
    for (int64_t i = 0; i < g->n; i++) {
        double v = reach_of(g, i, type_reach);
        lo = v > 0 && v < lo ? v : lo;
    }
    if (!(lo < INFINITY))
        return PROX_OK; /* nothing reaches anything: no pairs */
    int64_t count[SIZED_GRID_MAX_CLASSES] = {0};
    double top[SIZED_GRID_MAX_CLASSES] = {0};
    for (int64_t i = 0; i < g->n; i++) {
        double v = reach_of(g, i, type_reach);
        if (v == 0 && g->rule.rule == PROX_RULE_TYPES)
            continue;
        int c = v > 0 ? class_of(v, lo) : 0;
        count[c]++;
        top[c] = v > top[c] ? v : top[c];
    }
    int map[SIZED_GRID_MAX_CLASSES];
    for (int c = 0; c < SIZED_GRID_MAX_CLASSES; c++) {
        map[c] = -1;
        if (count[c] == 0)
            continue;
        sized_grid_class *k = &g->cls[g->classes];
        k->radius = g->rule.rule == PROX_RULE_CONTACT ? top[c] + top[c] : top[c];
        k->id = prox_alloc_array(&g->al, count[c], sizeof *k->id);
        k->xyz = prox_alloc_array(&g->al, count[c] * g->dim, sizeof *k->xyz);
        map[c] = g->classes++;
        if (!k->id || !k->xyz)
            return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory for the classes");
    }
    for (int64_t i = 0; i < g->n; i++) {
        double v = reach_of(g, i, type_reach);
        if (v == 0 && g->rule.rule == PROX_RULE_TYPES)
            continue;
        sized_grid_class *k = &g->cls[map[v > 0 ? class_of(v, lo) : 0]];
        k->id[k->n++] = (prox_index)i;
    }
    return PROX_OK;
}

/* Each class's grid built over its members. A class of radii all 0 (no
 * pair within it) takes the smallest radius the grid allows. */
static prox_status build_grids(prox_sized_grid *g)
{
    for (int c = 0; c < g->classes; c++) {
        sized_grid_class *k = &g->cls[c];
        prox_grid_desc d = g->desc;
        d.radius = k->radius > PROX_RADIUS_MIN ? k->radius : PROX_RADIUS_MIN;
        d.coords = PROX_COORDS_DOUBLE;
        gather_members(g, k);
        prox_points view = members_view(g, k);
        prox_status st = prox_grid_create(&d, &k->grid);
        if (!st)
            st = prox_grid_build(k->grid, &view);
        if (st)
            return st;
    }
    return PROX_OK;
}

/* The options' periods against the largest radius (minimum images). */
static prox_status check_periods(const prox_sized_grid *g)
{
    double largest = sized_largest(&g->rule, &g->set, &g->set);
    for (int k = 0; k < g->dim; k++) {
        double L = g->desc.period[k];
        if (L > 0 && !(largest < 0.5 * L))
            return prox_fail(PROX_ERR_INVALID,
                             "sizes: the largest interaction %g must be below half the period "
                             "along %c (%g) for minimum images",
                             largest, "xyz"[k], L);
    }
    return PROX_OK;
}

/* The caller's points widened into the kept copy. */
static prox_status keep_points(prox_sized_grid *g, const prox_points *p)
{
    prox_free(&g->al, g->x);
    g->x = prox_alloc_array(&g->al, p->count * p->dim + 1, sizeof *g->x);
    if (!g->x)
        return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory for the points");
    for (int64_t i = 0; i < p->count; i++)
        for (int k = 0; k < p->dim; k++)
            g->x[i * p->dim + k] = prox_points_get(p, i, k);
    g->n = p->count;
    g->dim = p->dim;
    return PROX_OK;
}

prox_status prox_sized_grid_build(prox_sized_grid *g, const prox_points *points,
                                  const prox_sizes *sizes)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "sized grid is NULL");
    g->built = false;
    classes_free(g);
    sized_set_free(&g->set, &g->al);
    sized_rule_free(&g->rule, &g->al);
    prox_grid_desc d = g->desc;
    d.radius = PROX_RADIUS_MIN;
    prox_status st = prox_search_check(points, NULL, &d, prox_sink_count(), true);
    if (!st)
        st = sized_check_rule(sizes, &g->rule, &g->al);
    if (!st)
        st = sized_load(sizes, &g->rule, points->count, "points", &g->al, &g->set);
    if (!st)
        st = keep_points(g, points);
    if (!st)
        st = check_periods(g);
    double *type_reach = NULL;
    if (!st && g->rule.rule == PROX_RULE_TYPES)
        st = types_reach(g, &type_reach);
    if (!st)
        st = plan_classes(g, type_reach);
    prox_free(&g->al, type_reach);
    if (!st)
        st = build_grids(g);
    if (st) {
        classes_free(g);
        return st;
    }
    g->built = true;
    return PROX_OK;
}

prox_status prox_sized_grid_update(prox_sized_grid *g, const prox_points *points,
                                   prox_stats *stats)
{
    if (!g || !g->built)
        return prox_fail(PROX_ERR_INVALID, "sized grid: update before a build");
    prox_grid_desc d = g->desc;
    d.radius = PROX_RADIUS_MIN;
    prox_status st = prox_search_check(points, NULL, &d, prox_sink_count(), true);
    if (st)
        return st;
    if (points->count != g->n || points->dim != g->dim)
        return prox_fail(PROX_ERR_INVALID,
                         "sized grid: %lld points of dimension %d given, %lld of dimension %d "
                         "built (the sizes belong to those: build again)",
                         (long long)points->count, points->dim, (long long)g->n, g->dim);
    for (int64_t i = 0; i < g->n; i++)
        for (int k = 0; k < g->dim; k++)
            g->x[i * g->dim + k] = prox_points_get(points, i, k);
    bool rebuilt = false;
    for (int c = 0; c < g->classes && !st; c++) {
        sized_grid_class *k = &g->cls[c];
        gather_members(g, k);
        prox_points view = members_view(g, k);
        prox_stats s = {0};
        st = prox_grid_update(k->grid, &view, &s);
        rebuilt |= s.rebuilt;
    }
    if (st) {
        g->built = false; /* a class may be half updated */
        return st;
    }
    if (stats) {
        *stats = (prox_stats){0};
        stats->rebuilt = rebuilt;
        stats->method = "sized.grid.update";
    }
    return PROX_OK;
}

/* The candidates the grid found (local indices a of class `ka` and b of
 * class `kb`) decided by the rule, appended to the kept pairs as (i < j). */
static prox_status keep_within(prox_sized_grid *g, const sized_grid_class *ka,
                               const sized_grid_class *kb, const prox_metric *m, int64_t *kept)
{
    if (!prox_grow(&g->al, (void **)&g->kept, &g->kept_cap, *kept + g->found.count + 1, *kept,
                   sizeof *g->kept))
        return prox_fail(PROX_ERR_NO_MEMORY, "sized grid: out of memory for the pairs");
    prox_points p = prox_points_f64(g->x, g->n, g->dim);
    const sized_set *s = &g->set;
    for (int64_t c = 0; c < g->found.count; c++) {
        prox_index a = ka->id[g->found.pairs[c].i], b = kb->id[g->found.pairs[c].j];
        prox_index i = a < b ? a : b, j = a < b ? b : a;
        double d[3] = {0, 0, 0};
        for (int k = 0; k < g->dim; k++)
            d[k] = prox_coord(&p, i, k, g->desc.period) - prox_coord(&p, j, k, g->desc.period);
        double t2 = sized_threshold2(&g->rule, s->size ? s->size[i] : 0, s->size ? s->size[j] : 0,
                                     s->type ? s->type[i] : 0, s->type ? s->type[j] : 0);
        if (sized_within(prox_metric_dist2(m, d[0], d[1], d[2]), t2))
            g->kept[(*kept)++] = (prox_pair){i, j};
    }
    return PROX_OK;
}

prox_status prox_sized_grid_pairs(prox_sized_grid *g, prox_sink sink, prox_stats *stats)
{
    if (!g || !g->built)
        return prox_fail(PROX_ERR_INVALID, "sized grid: pairs before a build");
    prox_metric m = prox_metric_of(&g->desc, g->dim);
    int64_t kept = 0, candidates = 0;
    prox_status st = PROX_OK;
    for (int a = 0; a < g->classes && !st; a++)
        for (int b = a; b < g->classes && !st; b++) {
            /* a within itself; a's members queried against the larger b's grid */
            prox_points qa = members_view(g, &g->cls[a]);
            prox_sink found = prox_sink_unsorted(prox_sink_buffer(&g->found));
            st = a == b ? prox_grid_pairs(g->cls[a].grid, found, NULL)
                        : prox_grid_query(g->cls[b].grid, &qa, found, NULL);
            candidates += g->found.count;
            if (!st)
                st = keep_within(g, &g->cls[a], &g->cls[b], &m, &kept);
        }
    if (!st)
        st = prox_pairs_deliver(g->kept, kept, sink, g->n, true, &g->work);
    if (stats && (st == PROX_OK || st == PROX_STOPPED)) {
        *stats = (prox_stats){0};
        stats->pairs = kept;
        stats->candidates = candidates;
        stats->cells = g->classes;
        stats->method = g->classes > 1 ? "sized.grid.classes" : "sized.grid";
    }
    return st;
}
