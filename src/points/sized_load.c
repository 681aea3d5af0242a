/* sized_load.c: the sizes of include/prox/sizes.h read from the caller's
 * strided views into doubles and checked (sized_load.h): every radius finite,
 * 0 or within [PROX_RADIUS_MIN, PROX_RADIUS_MAX]; every type in range;
 * the cutoff matrix symmetric, bit for bit, with entries 0 or in range. */
#include <math.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/points_common.h"
#include "points/sized_load.h"

prox_sizes prox_sizes_radii_strided(const void *first, prox_scalar scalar, ptrdiff_t stride,
                                    prox_size_rule rule)
{
    return (prox_sizes){.rule = rule, .radius = first, .radius_stride = stride,
                        .radius_scalar = scalar};
}

prox_sizes prox_sizes_radii(const double *radius, prox_size_rule rule)
{
    return prox_sizes_radii_strided(radius, PROX_F64, (ptrdiff_t)sizeof(double), rule);
}

prox_sizes prox_sizes_types(const int32_t *type, int types, const double *cutoff)
{
    return (prox_sizes){.rule = PROX_RULE_TYPES, .type = type,
                        .type_stride = (ptrdiff_t)sizeof(int32_t), .types = types,
                        .cutoff = cutoff};
}

/* 0 or a value whose square is a normal double (grid.h, PROX_RADIUS_MIN). */
static prox_status check_size(double v, const char *what, const char *name, int64_t i)
{
    if (!isfinite(v) || v < 0)
        return prox_fail(PROX_ERR_DATA, "%s: %s %lld is %g; sizes must be finite and >= 0",
                         what, name, (long long)i, v);
    if (v != 0 && !(v >= PROX_RADIUS_MIN && v <= PROX_RADIUS_MAX))
        return prox_fail(PROX_ERR_RANGE,
                         "%s: %s %lld is %g, outside 0 and [%g, %g]: the exact test squares "
                         "it (scale the coordinates)",
                         what, name, (long long)i, v, PROX_RADIUS_MIN, PROX_RADIUS_MAX);
    return PROX_OK;
}

static prox_status check_matrix(const prox_sizes *s)
{
    if (s->types < 1 || s->types > PROX_MAX_TYPES)
        return prox_fail(PROX_ERR_INVALID, "sizes: types is %d; use 1 to %d", s->types,
                         PROX_MAX_TYPES);
    if (!s->cutoff)
        return prox_fail(PROX_ERR_INVALID, "sizes: the cutoff matrix is NULL");
    int64_t T = s->types;
    for (int64_t a = 0; a < T; a++)
        for (int64_t b = 0; b < T; b++) {
            double v = s->cutoff[a * T + b];
            if (!isfinite(v) || v < 0)
                return prox_fail(PROX_ERR_INVALID,
                                 "sizes: cutoff[%lld][%lld] is %g; cutoffs must be finite and "
                                 ">= 0",
                                 (long long)a, (long long)b, v);
            if (v != 0 && !(v >= PROX_RADIUS_MIN && v <= PROX_RADIUS_MAX))
                return prox_fail(PROX_ERR_RANGE,
                                 "sizes: cutoff[%lld][%lld] is %g, outside 0 and [%g, %g]",
                                 (long long)a, (long long)b, v, PROX_RADIUS_MIN,
                                 PROX_RADIUS_MAX);
            if (!(v == s->cutoff[b * T + a]))
                return prox_fail(PROX_ERR_INVALID,
                                 "sizes: the cutoff matrix is not symmetric: cutoff[%lld][%lld] "
                                 "= %.17g but cutoff[%lld][%lld] = %.17g",
                                 (long long)a, (long long)b, v, (long long)b, (long long)a,
                                 s->cutoff[b * T + a]);
        }
    return PROX_OK;
}

prox_status sized_check_rule(const prox_sizes *sizes, sized_rule *rule, const prox_allocator *al)
{
    *rule = (sized_rule){0};
    if (!sizes)
        return prox_fail(PROX_ERR_INVALID, "sizes are NULL; use prox_sizes_radii or "
                                           "prox_sizes_types");
    rule->rule = sizes->rule;
    if (sizes->rule == PROX_RULE_CONTACT || sizes->rule == PROX_RULE_GATHER_SCATTER)
        return PROX_OK;
    if (sizes->rule != PROX_RULE_TYPES)
        return prox_fail(PROX_ERR_INVALID,
                         "sizes: unknown rule %d; use PROX_RULE_CONTACT, "
                         "PROX_RULE_GATHER_SCATTER or PROX_RULE_TYPES",
                         (int)sizes->rule);
    prox_status st = check_matrix(sizes);
    if (st)
        return st;
    int64_t T = sizes->types;
    rule->types = sizes->types;
    rule->cut = prox_alloc_array(al, T * T, sizeof *rule->cut);
    rule->cut2 = prox_alloc_array(al, T * T, sizeof *rule->cut2);
    if (!rule->cut || !rule->cut2)
        return prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for the cutoff matrix");
    for (int64_t k = 0; k < T * T; k++) {
        rule->cut[k] = sizes->cutoff[k];
        rule->cut2[k] = sizes->cutoff[k] * sizes->cutoff[k];
    }
    return PROX_OK;
}

static prox_status load_radii(const prox_sizes *s, int64_t n, const char *what, sized_set *out)
{
    const char *name = s->rule == PROX_RULE_CONTACT ? "radius" : "h";
    if (n > 0 && !s->radius)
        return prox_fail(PROX_ERR_INVALID, "%s: the %s view is NULL", what, name);
    if (s->radius_scalar != PROX_F64 && s->radius_scalar != PROX_F32)
        return prox_fail(PROX_ERR_INVALID, "%s: unknown scalar type %d of the sizes", what,
                         (int)s->radius_scalar);
    for (int64_t i = 0; i < n; i++) {
        const char *at = (const char *)s->radius + i * s->radius_stride;
        double v = s->radius_scalar == PROX_F64 ? *(const double *)(const void *)at
                                                : (double)*(const float *)(const void *)at;
        prox_status st = check_size(v, what, name, i);
        if (st)
            return st;
        out->size[i] = v;
        if (v > out->max_size)
            out->max_size = v;
    }
    return PROX_OK;
}

static prox_status load_types(const prox_sizes *s, const sized_rule *rule, int64_t n,
                              const char *what, sized_set *out)
{
    if (n > 0 && !s->type)
        return prox_fail(PROX_ERR_INVALID, "%s: the type view is NULL", what);
    for (int64_t i = 0; i < n; i++) {
        int32_t t = *(const int32_t *)(const void *)((const char *)s->type + i * s->type_stride);
        if (t < 0 || t >= rule->types)
            return prox_fail(PROX_ERR_DATA, "%s: type of point %lld is %d, outside [0, %d)",
                             what, (long long)i, (int)t, rule->types);
        out->type[i] = t;
    }
    return PROX_OK;
}

prox_status sized_load(const prox_sizes *sizes, const sized_rule *rule, int64_t count,
                       const char *what, const prox_allocator *al, sized_set *out)
{
    *out = (sized_set){.n = count};
    if (!sizes)
        return prox_fail(PROX_ERR_INVALID, "%s: sizes are NULL", what);
    if (sizes->rule != rule->rule)
        return prox_fail(PROX_ERR_INVALID, "%s: rule %d differs from the points' rule %d", what,
                         (int)sizes->rule, (int)rule->rule);
    if (rule->rule == PROX_RULE_TYPES) {
        out->type = prox_alloc_array(al, count, sizeof *out->type);
        if (!out->type)
            return prox_fail(PROX_ERR_NO_MEMORY, "%s: out of memory for types", what);
        return load_types(sizes, rule, count, what, out);
    }
    out->size = prox_alloc_array(al, count, sizeof *out->size);
    if (!out->size)
        return prox_fail(PROX_ERR_NO_MEMORY, "%s: out of memory for radii", what);
    return load_radii(sizes, count, what, out);
}

void sized_set_free(sized_set *s, const prox_allocator *al)
{
    prox_free(al, s->size);
    prox_free(al, s->type);
    *s = (sized_set){0};
}

void sized_rule_free(sized_rule *r, const prox_allocator *al)
{
    prox_free(al, r->cut);
    prox_free(al, r->cut2);
    r->cut = r->cut2 = NULL;
}

/* present[t] for the types of s (types entries, zeroed by the caller). */
static void mark_types(const sized_set *s, unsigned char *present)
{
    for (int64_t i = 0; i < s->n; i++)
        present[s->type[i]] = 1;
}

/* The largest cutoff between the present types of a and b (0 when no
 * pair interacts); *uniform: every such pair has that one cutoff. */
static double types_largest_cut(const sized_rule *rule, const sized_set *a, const sized_set *b,
                                bool *uniform)
{
    int64_t T = rule->types;
    unsigned char present[2][PROX_MAX_TYPES] = {{0}};
    mark_types(a, present[0]);
    mark_types(b, present[1]);
    double largest = 0, first = -1;
    *uniform = true;
    for (int64_t x = 0; x < T; x++)
        for (int64_t y = 0; present[0][x] && y < T; y++) {
            if (!present[1][y])
                continue;
            double c = rule->cut[x * T + y];
            if (first < 0)
                first = c;
            *uniform &= c == first;
            if (c > largest)
                largest = c;
        }
    return largest;
}

/* All sizes of s equal (n > 0): true and *v. */
static bool single_size(const sized_set *s, double *v)
{
    for (int64_t i = 1; i < s->n; i++)
        if (s->size[i] != s->size[0])
            return false;
    *v = s->size[0];
    return true;
}

bool sized_uniform(const sized_rule *rule, const sized_set *a, const sized_set *b, double *t)
{
    if (a->n == 0 || b->n == 0)
        return false;
    if (rule->rule == PROX_RULE_TYPES) {
        bool uniform;
        *t = types_largest_cut(rule, a, b, &uniform);
        return uniform && *t > 0;
    }
    double sa, sb;
    if (!single_size(a, &sa) || !single_size(b, &sb))
        return false;
    *t = rule->rule == PROX_RULE_CONTACT ? sa + sb : (sa > sb ? sa : sb);
    return *t > 0;
}

double sized_largest(const sized_rule *rule, const sized_set *a, const sized_set *b)
{
    if (a->n == 0 || b->n == 0)
        return 0;
    if (rule->rule == PROX_RULE_TYPES) {
        bool uniform;
        return types_largest_cut(rule, a, b, &uniform);
    }
    double sa = a->max_size, sb = b->max_size;
    return rule->rule == PROX_RULE_CONTACT ? sa + sb : (sa > sb ? sa : sb);
}

prox_status sized_check_periods(const sized_rule *rule, const sized_set *a, const sized_set *b,
                                const double *period, int dim)
{
    double largest = sized_largest(rule, a, b);
    for (int k = 0; k < dim; k++) {
        double L = period[k];
        if (L > 0 && !(largest < 0.5 * L))
            return prox_fail(PROX_ERR_INVALID,
                             "sizes: the largest interaction %g must be below half the period "
                             "along %c (%g) for minimum images",
                             largest, "xyz"[k], L);
    }
    return PROX_OK;
}

prox_status sized_check_options(const prox_grid_desc *desc)
{
    prox_grid_desc d = *desc;
    d.radius = PROX_RADIUS_MIN;
    return prox_grid_desc_check(&d, 3);
}

prox_status sized_check_search(const prox_points *points, const prox_points *queries,
                               const prox_grid_desc *desc, prox_sink sink, bool points_finite)
{
    prox_grid_desc d = *desc;
    d.radius = PROX_RADIUS_MIN;
    return prox_search_check(points, queries, &d, sink, points_finite);
}
