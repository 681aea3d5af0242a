/* sized_load.h (sized_load.c): particles of different sizes
 * (include/prox/sizes.h): the sizes read from the caller's views into
 * doubles and checked, and the rule that decides a pair from them, which
 * the class grids (sized_classes.c) and the front (sized.c) share. */
#ifndef PROX_SIZED_LOAD_H
#define PROX_SIZED_LOAD_H

#include "core/exact.h"
#include "prox/sizes.h"

/* One point set's sizes, read and checked: size[i] the radius (or h) in
 * double, or type[i] (TYPES); reach[i] the largest threshold point i can
 * have with any point of the other set (its radius; TYPES: the largest
 * cutoff of its type with a type present there). */
typedef struct sized_set {
    int64_t n;
    double *size;
    int32_t *type;
    double max_size;
} sized_set;

/* The rule of a call: the squared threshold of a pair from its sizes. */
typedef struct sized_rule {
    prox_size_rule rule;
    int types;
    double *cut;  /* TYPES: the caller's cutoff matrix, types*types */
    double *cut2; /* TYPES: each entry squared */
} sized_rule;

/* The pair's squared threshold: (s_i + s_j)^2, max(s_i, s_j)^2 or
 * cutoff[t_i][t_j]^2, each in double (sizes.h). */
static inline double sized_threshold2(const sized_rule *r, double si, double sj, int32_t ti,
                                      int32_t tj)
{
    double t;
    switch (r->rule) {
    case PROX_RULE_CONTACT: t = si + sj; break;
    case PROX_RULE_GATHER_SCATTER: t = si > sj ? si : sj; break;
    default: return r->cut2[(int64_t)ti * r->types + tj];
    }
    return t * t;
}

/* The neighbour rule with sizes: d2 <= t^2 and t > 0 (t >= PROX_RADIUS_MIN
 * when positive, so t^2 > 0 tells). */
static inline bool sized_within(double d2, double t2)
{
    return d2 <= t2 && t2 > 0;
}

/* The rule of `sizes`, its matrix checked (TYPES); then each set's sizes
 * read and checked under it (what: "points", "queries"). */
prox_status sized_check_rule(const prox_sizes *sizes, sized_rule *rule, const prox_allocator *al);
prox_status sized_load(const prox_sizes *sizes, const sized_rule *rule, int64_t count,
                       const char *what, const prox_allocator *al, sized_set *out);
void sized_set_free(sized_set *s, const prox_allocator *al);
void sized_rule_free(sized_rule *r, const prox_allocator *al);

/* The threshold every pair of the two sets has, if it is one value: true
 * and *t (the threshold, > 0) when all pairs share one positive
 * threshold. */
bool sized_uniform(const sized_rule *rule, const sized_set *a, const sized_set *b, double *t);

/* The largest threshold of a pair of the two sets (0 when none is
 * positive). */
double sized_largest(const sized_rule *rule, const sized_set *a, const sized_set *b);

/* The options as the sized searches see them: desc->radius is not read
 * (the smallest valid radius stands in, so every check of it passes).
 * sized_check_options checks them alone (for 3D, the widest period);
 * sized_check_search as prox_search_check does with the points, the
 * queries (NULL: self pairs), the sink and, when asked, finite
 * coordinates. */
prox_status sized_check_options(const prox_grid_desc *desc);
prox_status sized_check_search(const prox_points *points, const prox_points *queries,
                               const prox_grid_desc *desc, prox_sink sink, bool points_finite);

/* Refuses (PROX_ERR_INVALID) a largest threshold of the two sets at or
 * above half of a period (period[k] > 0) along the first `dim` axes:
 * minimum images need it below. */
prox_status sized_check_periods(const sized_rule *rule, const sized_set *a, const sized_set *b,
                                const double *period, int dim);

#endif
