/* boxes.c: box views, their checks, structure names and broad-phase options. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "broad/broad.h"
#include "core/error.h"

static const char axis_name[] = "xyz";

/* ---- views ------------------------------------------------------------- */

prox_boxes prox_boxes_strided(const void *min_first, const void *max_first, int64_t count,
                              int dim, prox_scalar scalar, ptrdiff_t stride)
{
    size_t size = scalar == PROX_F32 ? sizeof(float) : sizeof(double);
    const char *lo = min_first, *hi = max_first;
    prox_boxes b = {{lo, lo + size, dim == 3 ? lo + 2 * size : NULL},
                    {hi, hi + size, dim == 3 ? hi + 2 * size : NULL},
                    stride, count, dim, scalar};
    return b;
}

prox_boxes prox_boxes_f64(const double *bounds, int64_t count, int dim)
{
    return prox_boxes_strided(bounds, bounds + dim, count, dim, PROX_F64,
                              (ptrdiff_t)(2 * dim * sizeof(double)));
}

prox_boxes prox_boxes_f32(const float *bounds, int64_t count, int dim)
{
    return prox_boxes_strided(bounds, bounds + dim, count, dim, PROX_F32,
                              (ptrdiff_t)(2 * dim * sizeof(float)));
}

/* ---- checks ------------------------------------------------------------ */

prox_status prox_boxes_check(const prox_boxes *b, const char *what)
{
    if (!b)
        return prox_fail(PROX_ERR_INVALID, "%s: the view is NULL", what);
    if (b->dim != 2 && b->dim != 3)
        return prox_fail(PROX_ERR_INVALID, "%s: dim is %d; prox handles 2 or 3", what, b->dim);
    if (b->scalar != PROX_F64 && b->scalar != PROX_F32)
        return prox_fail(PROX_ERR_INVALID, "%s: unknown scalar type %d", what, (int)b->scalar);
    if (b->count < 0)
        return prox_fail(PROX_ERR_INVALID, "%s: count is %lld", what, (long long)b->count);
    if (b->count > PROX_MAX_POINTS)
        return prox_fail(PROX_ERR_RANGE, "%s: count %lld outside 0..%lld", what,
                         (long long)b->count, (long long)PROX_MAX_POINTS);
    if (b->count > 0)
        for (int k = 0; k < b->dim; k++)
            if (!b->min[k] || !b->max[k])
                return prox_fail(PROX_ERR_INVALID, "%s: %s %c pointer is NULL", what,
                                 b->min[k] ? "max" : "min", axis_name[k]);
    return PROX_OK;
}

static bool box_is_valid(const prox_boxes *b, int64_t i)
{
    for (int k = 0; k < b->dim; k++) {
        double lo = prox_boxes_min(b, i, k), hi = prox_boxes_max(b, i, k);
        if (!isfinite(lo) || !isfinite(hi) || lo > hi)
            return false;
    }
    return true;
}

/* The message for a box known to be invalid. */
static prox_status box_failure(const prox_boxes *b, const char *what, int64_t i)
{
    for (int k = 0; k < b->dim; k++) {
        double lo = prox_boxes_min(b, i, k), hi = prox_boxes_max(b, i, k);
        if (!isfinite(lo))
            return prox_fail(PROX_ERR_DATA, "%s: box %lld has a non-finite min %c (%g)", what,
                             (long long)i, axis_name[k], lo);
        if (!isfinite(hi))
            return prox_fail(PROX_ERR_DATA, "%s: box %lld has a non-finite max %c (%g)", what,
                             (long long)i, axis_name[k], hi);
        if (lo > hi)
            return prox_fail(PROX_ERR_DATA, "%s: box %lld has min %c %.17g > max %c %.17g",
                             what, (long long)i, axis_name[k], lo, axis_name[k], hi);
    }
    return PROX_ERR_DATA; /* unreachable for an invalid box */
}

prox_status prox_boxes_check_values(const prox_boxes *b, const char *what, int threads)
{
    int64_t first_bad = INT64_MAX, n = b->count;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) \
    reduction(min : first_bad) schedule(static)
    for (int64_t i = 0; i < n; i++)
        if (i < first_bad && !box_is_valid(b, i))
            first_bad = i;
    return first_bad == INT64_MAX ? PROX_OK : box_failure(b, what, first_bad);
}

/* ---- names ------------------------------------------------------------- */

static const char *const algo_names[] = {"brute", "grid",   "multilevel", "hierarchical",
                                         "kdtree", "sap", "auto"};
#define ALGO_COUNT ((int)(sizeof algo_names / sizeof algo_names[0]))

const char *prox_broad_algo_name(prox_broad_algo algo)
{
    int a = (int)algo;
    return a >= 0 && a < ALGO_COUNT ? algo_names[a] : NULL;
}

prox_status prox_broad_algo_parse(const char *name, prox_broad_algo *out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_broad_algo_parse: out is NULL");
    for (int a = 0; name && a < ALGO_COUNT; a++)
        if (strcmp(name, algo_names[a]) == 0) {
            *out = (prox_broad_algo)a;
            return PROX_OK;
        }
    return prox_fail(PROX_ERR_INVALID,
                     "unknown broad-phase algorithm '%s' (auto, brute, grid, multilevel, "
                     "hierarchical, kdtree, sap)",
                     name ? name : "(null)");
}

/* ---- options ----------------------------------------------------------- */

prox_broad_desc prox_default_broad_desc(void)
{
    return (prox_broad_desc){
        .algo = PROX_BROAD_AUTO,
        .threads = 0,
        .cell_size = 0.0,
        .table_size = 0,
        .growable_table = false,
        .min_class = 0,
        .max_class = 0,
        .kdtree_variant = 2,
        .kdtree_split = true,
        .kdtree_split_cost = 1.0,
    };
}

/* Classes 2^c stay well inside the double range. */
#define CLASS_LIMIT 1000

prox_status prox_broad_desc_check(const prox_broad_desc *desc)
{
    prox_status simd = prox_simd_check(); /* PROX_SIMD names a level this CPU runs */
    if (simd)
        return simd;
    if (!desc)
        return prox_fail(PROX_ERR_INVALID,
                         "options are NULL; start from prox_default_broad_desc()");
    if (!prox_broad_algo_name(desc->algo))
        return prox_fail(PROX_ERR_INVALID, "algo is %d; not a prox_broad_algo", (int)desc->algo);
    if (desc->threads < 0)
        return prox_fail(PROX_ERR_INVALID, "threads is %d; use 0 (default) or more",
                         desc->threads);
    if (!isfinite(desc->cell_size) || desc->cell_size < 0)
        return prox_fail(PROX_ERR_INVALID,
                         "cell_size is %g; use 0 (fit the data) or a positive finite edge",
                         desc->cell_size);
    if (desc->table_size < 0 || desc->table_size > ((int64_t)1 << 40))
        return prox_fail(PROX_ERR_INVALID,
                         "table_size is %lld; use 0 (automatic) or 1 .. 2^40 slots",
                         (long long)desc->table_size);
    if (desc->min_class < -CLASS_LIMIT || desc->max_class > CLASS_LIMIT)
        return prox_fail(PROX_ERR_INVALID, "min_class %d / max_class %d outside -%d .. %d",
                         desc->min_class, desc->max_class, CLASS_LIMIT, CLASS_LIMIT);
    if (desc->min_class > desc->max_class)
        return prox_fail(PROX_ERR_INVALID, "min_class %d is above max_class %d",
                         desc->min_class, desc->max_class);
    if (desc->kdtree_variant != 1 && desc->kdtree_variant != 2)
        return prox_fail(PROX_ERR_INVALID, "kdtree_variant is %d; use 1 or 2",
                         desc->kdtree_variant);
    if (!(isfinite(desc->kdtree_split_cost) && desc->kdtree_split_cost >= 0))
        return prox_fail(PROX_ERR_INVALID,
                         "kdtree_split_cost is %g; use a finite number >= 0 (0 = every split "
                         "that shrinks the cells' volume, Poirrier 2009, Figure 7; default 1)",
                         desc->kdtree_split_cost);
    return PROX_OK;
}

/* ---- Eq. 2 ------------------------------------------------------------- */

int prox_size_class(double l)
{
    if (!(l > 0))
        return INT32_MIN;
    int e;
    double m = frexp(l, &e); /* l = m * 2^e, m in [0.5, 1) */
    return m == 0.5 ? e - 1 : e;
}
