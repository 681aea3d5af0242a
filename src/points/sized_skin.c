/* sized_skin.c: skin (Verlet) lists of particles of different sizes
 * (include/prox/sizes.h, prox_sized_skin_list). A rebuild gathers, through
 * prox_sized_pairs, every pair within its threshold + skin: each size is
 * widened so that the rule itself gives threshold + skin (contact: r +
 * skin/2 each; gather-scatter: h + skin; types: every cutoff + skin), times
 * 1 + 2^-40 so that rounding can never lose a pair. Every call keeps the
 * candidates within their true threshold at the current positions, by the
 * same arithmetic as prox_sized_pairs (sized_load.h). The list is rebuilt
 * when any size, type or cutoff differs from the last rebuild's, or when some
 * particle moved more than skin / 2 since then (skin_motion.h, shared with
 * prox_skin_list): otherwise no pair can have closed in from beyond its
 * threshold + skin. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/pair_sink.h"
#include "core/views.h"
#include "points/points_common.h"
#include "points/sized_load.h"
#include "points/skin_motion.h"

#define SIZED_SKIN_GUARD (1.0 + 0x1p-40)

struct prox_sized_skin_list {
    prox_grid_desc desc;
    double skin;
    prox_allocator allocator;
    sized_rule rule;    /* the last rebuild's rule and sizes */
    sized_set set;
    prox_pair_buffer candidates;
    prox_pair *kept;
    int64_t kept_cap;
    double *reference;  /* positions at the last rebuild (skin_motion.h) */
    int64_t reference_cap;
    double *wide;       /* the widened radii or cutoffs of a rebuild */
    int64_t wide_cap;
    prox_workspace work;
    int dim;
    bool valid;
};

prox_status prox_sized_skin_list_create(const prox_grid_desc *desc, double skin,
                                        prox_sized_skin_list **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_sized_skin_list_create: out is NULL");
    *out = NULL;
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "sized skin list: options are NULL; start from "
                                           "prox_default_grid_desc()");
    prox_status st = sized_check_options(desc);
    if (st)
        return st;
    if (!isfinite(skin) || skin < 0)
        return prox_fail(PROX_ERR_INVALID, "skin is %g; it must be zero or positive", skin);
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    prox_sized_skin_list *l = prox_alloc_array(&al, 1, sizeof *l);
    if (!l)
        return prox_fail(PROX_ERR_NO_MEMORY, "sized skin list: out of memory");
    memset(l, 0, sizeof *l);
    l->desc = *desc;
    l->desc.allocator = al;
    l->skin = skin;
    l->allocator = al;
    prox_pair_buffer_init(&l->candidates, &al);
    prox_workspace_init(&l->work, &al);
    *out = l;
    return PROX_OK;
}

void prox_sized_skin_list_destroy(prox_sized_skin_list *l)
{
    if (!l)
        return;
    sized_set_free(&l->set, &l->allocator);
    sized_rule_free(&l->rule, &l->allocator);
    prox_pair_buffer_free(&l->candidates);
    prox_free(&l->allocator, l->kept);
    prox_free(&l->allocator, l->reference);
    prox_free(&l->allocator, l->wide);
    prox_workspace_free(&l->work);
    prox_free(&l->allocator, l);
}

/* Whether two loads of sizes are the same, bit for bit. */
static bool same_sizes(const sized_rule *ra, const sized_set *a, const sized_rule *rb,
                       const sized_set *b)
{
    if (ra->rule != rb->rule || ra->types != rb->types || a->n != b->n)
        return false;
    if (ra->rule == PROX_RULE_TYPES)
        return !memcmp(ra->cut, rb->cut, (size_t)ra->types * ra->types * sizeof *ra->cut) &&
               !memcmp(a->type, b->type, (size_t)a->n * sizeof *a->type);
    return !memcmp(a->size, b->size, (size_t)a->n * sizeof *a->size);
}

/* A size widened by `by` (0 stays 0 when by is 0), within the valid range. */
static double widen(double v, double by)
{
    double w = (v + by) * SIZED_SKIN_GUARD;
    return w > 0 && w < PROX_RADIUS_MIN ? PROX_RADIUS_MIN : w;
}

/* The candidates: every pair within threshold + skin at p's positions. */
static prox_status gather_candidates(prox_sized_skin_list *l, const prox_points *p)
{
    const sized_rule *r = &l->rule;
    int64_t count = r->rule == PROX_RULE_TYPES ? (int64_t)r->types * r->types : l->set.n;
    if (!prox_reserve(&l->allocator, (void **)&l->wide, &l->wide_cap, count > 0 ? count : 1,
                      sizeof *l->wide))
        return prox_fail(PROX_ERR_NO_MEMORY, "sized skin list: out of memory for sizes");
    double by = r->rule == PROX_RULE_CONTACT ? 0.5 * l->skin : l->skin;
    const double *from = r->rule == PROX_RULE_TYPES ? r->cut : l->set.size;
    for (int64_t k = 0; k < count; k++)
        l->wide[k] = widen(from[k], by);
    prox_sizes wide = r->rule == PROX_RULE_TYPES
                          ? prox_sizes_types(l->set.type, r->types, l->wide)
                          : prox_sizes_radii(l->wide, r->rule);
    prox_grid_desc d = l->desc;
    if (d.coords == PROX_COORDS_AUTO)
        d.coords = prox_grid_coords_for_held_points();
    return prox_sized_pairs(p, &wide, &d, PROX_ALGO_GRID, prox_sink_buffer(&l->candidates),
                            NULL);
}

/* Candidates still within their true threshold, in the candidates' order. */
static int64_t filter_candidates(prox_sized_skin_list *l, const prox_points *p)
{
    prox_metric m = prox_metric_of(&l->desc, p->dim);
    const sized_set *s = &l->set;
    int64_t kept = 0;
    for (int64_t c = 0; c < l->candidates.count; c++) {
        prox_pair pr = l->candidates.pairs[c];
        double d[3] = {0, 0, 0};
        for (int k = 0; k < p->dim; k++)
            d[k] = prox_coord(p, pr.i, k, l->desc.period) - prox_coord(p, pr.j, k, l->desc.period);
        double t2 = sized_threshold2(&l->rule, s->size ? s->size[pr.i] : 0,
                                     s->size ? s->size[pr.j] : 0, s->type ? s->type[pr.i] : 0,
                                     s->type ? s->type[pr.j] : 0);
        if (sized_within(prox_metric_dist2(&m, d[0], d[1], d[2]), t2))
            l->kept[kept++] = pr;
    }
    return kept;
}

/* The sizes of this call read and checked; the list takes them and is
 * marked for a rebuild when they differ from the last rebuild's. */
static prox_status take_sizes(prox_sized_skin_list *l, const prox_sizes *sizes, int64_t n)
{
    sized_rule rule;
    sized_set set = {0};
    prox_status st = sized_check_rule(sizes, &rule, &l->allocator);
    if (!st)
        st = sized_load(sizes, &rule, n, "points", &l->allocator, &set);
    if (!st && l->valid && same_sizes(&rule, &set, &l->rule, &l->set)) {
        sized_set_free(&set, &l->allocator);
        sized_rule_free(&rule, &l->allocator);
        return PROX_OK;
    }
    if (st) {
        sized_set_free(&set, &l->allocator);
        sized_rule_free(&rule, &l->allocator);
        return st;
    }
    sized_set_free(&l->set, &l->allocator);
    sized_rule_free(&l->rule, &l->allocator);
    l->rule = rule;
    l->set = set;
    l->valid = false;
    return PROX_OK;
}

static prox_status rebuild(prox_sized_skin_list *l, const prox_points *p)
{
    l->valid = false;
    prox_status st = gather_candidates(l, p);
    if (!st)
        st = prox_skin_record(&l->reference, &l->reference_cap, p, l->desc.period,
                              &l->allocator);
    if (st)
        return st;
    l->dim = p->dim;
    l->valid = true;
    return PROX_OK;
}

prox_status prox_sized_skin_list_pairs(prox_sized_skin_list *l, const prox_points *p,
                                       const prox_sizes *sizes, prox_sink sink, prox_stats *stats)
{
    if (!l)
        return prox_fail(PROX_ERR_INVALID, "sized skin list is NULL");
    prox_status st = sized_check_search(p, NULL, &l->desc, sink, true);
    if (!st)
        st = take_sizes(l, sizes, p->count);
    if (st)
        return st;
    bool rebuilt = !l->valid || p->dim != l->dim ||
                   prox_skin_moved_far(l->reference, l->set.n, &l->desc, l->skin, p);
    if (rebuilt && (st = rebuild(l, p)))
        return st;
    if (!prox_reserve(&l->allocator, (void **)&l->kept, &l->kept_cap, l->candidates.count,
                      sizeof *l->kept))
        return prox_fail(PROX_ERR_NO_MEMORY, "sized skin list: out of memory");
    int64_t kept = filter_candidates(l, p);
    st = prox_pairs_deliver(l->kept, kept, sink, l->set.n, true, &l->work);
    if (stats) {
        *stats = (prox_stats){0};
        stats->pairs = kept;
        stats->candidates = l->candidates.count;
        stats->rebuilt = rebuilt;
        stats->method = "sized.skin";
    }
    return st;
}
