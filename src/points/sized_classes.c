/* sized_classes.c: the size-class grids of the sized search
 * (sized_classes.h; docs/design.md, "Sizes").
 *
 * A class holds the points whose reach lies within five powers of two
 * (more where there would be over SIZED_MAX_CLASSES classes), so that its
 * cells can follow its own sizes instead of the largest particle's.
 * Cells are keyed row-major by their integer coordinates (x fastest, at
 * most 2^20 along an axis) and the members sorted by key (radix sort).
 * A dense class stores every cell's first member, so that the cells of a
 * row a query box covers are one run of members; a class whose dense
 * cells would be too coarse (members clustered in a wide box) stores the
 * occupied cells only, found through an open-addressing hash table
 * (class_cells). Correctness does not depend on the widths: a query
 * visits every cell its box overlaps. */
#include "points/sized_classes.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/radix_sort.h"
#include "points/points_common.h"

#define SIZED_AXIS_CELLS ((int64_t)1 << 20)
#define SIZED_CLASS_POWERS 5 /* powers of two of reach a class spans, at least */
#define SIZED_EMPTY UINT64_MAX
#define SIZED_SPARSE_LIMIT 4 /* dense cells at most this many self interactions wide */

#define SIZED_CELL_FRACTION 1.0 /* dense cells across: the self interaction wide */
#define SIZED_X_SPLIT 4.0       /* dense cells along x: that over four */
#define SIZED_DENSE_CELLS 4.0   /* dense cells at most this many a member */

/* The reach of point i: the largest threshold it can have with a point of
 * the partner set (types: from the partner's present types). */
static double point_reach(const sized_rule *rule, const sized_set *set, int64_t i,
                          const double *type_reach)
{
    return rule->rule == PROX_RULE_TYPES ? type_reach[set->type[i]] : set->size[i];
}

/* TYPES: out[t] = the largest cutoff of type t with a type present in s. */
static void types_reach(const sized_rule *rule, const sized_set *s, double *out)
{
    int64_t T = rule->types;
    unsigned char present[PROX_MAX_TYPES] = {0};
    for (int64_t i = 0; i < s->n; i++)
        present[s->type[i]] = 1;
    for (int64_t t = 0; t < T; t++) {
        out[t] = 0;
        for (int64_t u = 0; u < T; u++)
            if (present[u] && rule->cut[t * T + u] > out[t])
                out[t] = rule->cut[t * T + u];
    }
}

/* Class of a reach: 0 for reach 0, else the number of class bounds
 * (bound[c] = smallest * 2^(step c), c >= 1) at or below it, clamped;
 * any assignment is exact (a class's reach is its members' largest), the
 * bounds only decide the sizes a class mixes. */
static int class_of(double reach, const double *bound, int count)
{
    int c = 0;
    while (c + 1 < count && reach >= bound[c + 1])
        c++;
    return c;
}

/* The members' box and largest reach. */
static void class_box(sized_class *g, int dim)
{
    for (int k = 0; k < 3; k++) {
        g->lo[k] = k < dim ? INFINITY : 0;
        g->hi[k] = k < dim ? -INFINITY : 0;
    }
    const double *axis[3] = {g->x, g->y, g->z};
    for (int64_t i = 0; i < g->n; i++)
        for (int k = 0; k < dim; k++) {
            double v = axis[k][i];
            g->lo[k] = v < g->lo[k] ? v : g->lo[k];
            g->hi[k] = v > g->hi[k] ? v : g->hi[k];
        }
}

/* Per axis the cell count, origin and inverse width for cells `w` wide
 * along axis k; the number of cells in all (as a double: no overflow). */
static double class_layout(sized_class *g, const sized_classes *c, const double span[3],
                           const double w[3])
{
    double total = 1;
    for (int k = 0; k < 3; k++) {
        if (k >= c->dim) {
            g->ncell[k] = 1, g->origin[k] = 0, g->inv[k] = 0;
        } else if (c->period[k] > 0) {
            double n = floor(c->period[k] / w[k]);
            g->ncell[k] = n < 1 ? 1 : (n > SIZED_AXIS_CELLS ? SIZED_AXIS_CELLS : (int64_t)n);
            g->origin[k] = 0;
            g->inv[k] = (double)g->ncell[k] / c->period[k];
        } else {
            double wk = fmax(w[k], span[k] / (double)(SIZED_AXIS_CELLS - 2));
            double n = floor(span[k] / wk) + 1;
            /* a span that overflowed (members near both ends of the doubles):
             * one cell along the axis, inv 0 (every cell_of is 0) */
            bool one = !(n >= 1) || !isfinite(wk);
            g->ncell[k] = one ? 1 : (n > SIZED_AXIS_CELLS ? SIZED_AXIS_CELLS : (int64_t)n);
            g->origin[k] = g->lo[k];
            g->inv[k] = one ? 0 : 1 / wk;
        }
        total *= (double)g->ncell[k];
        g->top[k] = (double)(g->ncell[k] - 1);
    }
    return total;
}

/* The cells of a class. Dense (every cell's first point stored, so that
 * the cells a query box covers along x are one run of members): cells
 * SIZED_CELL_FRACTION of the self interaction wide across, x cut
 * SIZED_X_SPLIT times finer, widened evenly until the cells number at most
 * SIZED_DENSE_CELLS per member. Where that would take the cells past
 * SIZED_SPARSE_LIMIT times the self interaction and the members' spacing
 * (members clustered in a wide box), hashed: only the occupied cells
 * stored, cells between the self interaction and four times it, widened
 * toward the members' spacing (about a member a cell). */
static void class_cells(sized_class *g, const sized_classes *c, double self_cut)
{
    double volume = 1, span[3];
    for (int k = 0; k < c->dim; k++) {
        span[k] = c->period[k] > 0 ? c->period[k] : g->hi[k] - g->lo[k];
        volume *= span[k] > self_cut ? span[k] : (self_cut > 0 ? self_cut : 1);
    }
    double spacing = pow(volume / (double)(g->n > 0 ? g->n : 1), 1.0 / c->dim);
    double base = self_cut > 0 ? self_cut * SIZED_CELL_FRACTION : spacing;
    if (!(base > 0) || !isfinite(base))
        base = 1;
    double budget = SIZED_DENSE_CELLS * (double)g->n + 64;
    double scale = 1, w[3];
    for (int round = 0; round < 64; round++) {
        for (int k = 0; k < 3; k++)
            w[k] = base * scale / (k == 0 ? SIZED_X_SPLIT : 1);
        double total = class_layout(g, c, span, w);
        if (total <= budget)
            break;
        scale *= fmax(1.01, pow(total / budget, 1.0 / c->dim));
    }
    g->dense = class_layout(g, c, span, w) <= budget &&
               base * scale <= SIZED_SPARSE_LIMIT * (self_cut > 0 ? self_cut : spacing);
    if (g->dense)
        return;
    double width = self_cut > 0 ? fmax(self_cut, fmin(spacing, 4 * self_cut)) : spacing;
    if (!(width > 0) || !isfinite(width))
        width = 1;
    w[0] = w[1] = w[2] = width;
    class_layout(g, c, span, w);
}

/* Cell coordinate of v along axis k: monotone in v (a subtraction and a
 * product by a positive constant round monotonically), clamped; the
 * conversion truncates, which is the floor of a positive value. */
static inline int64_t cell_of(const sized_class *g, int k, double v)
{
    double c = (v - g->origin[k]) * g->inv[k];
    c = c > 0 ? c : 0;                   /* NaN too */
    c = c < g->top[k] ? c : g->top[k]; /* top = ncell - 1: the same cell as c >= ncell */
    return (int64_t)c;
}

/* The query box of probe p on open axes, one cell range per axis: the
 * pad is the reach plus 2^-40 of it and of the coordinate, the rounding of
 * the subtraction; false when the box misses the class. */
static inline bool open_ranges(const sized_class *g, int dim, const sized_probe *p,
                               int64_t lo[3][2], int64_t hi[3][2])
{
    for (int k = 0; k < dim; k++) {
        double v = p->q[k], pad = p->cut + (p->cut + fabs(v)) * 0x1p-40;
        if (v + pad < g->lo[k] || v - pad > g->hi[k])
            return false;
        lo[k][0] = cell_of(g, k, v - pad);
        hi[k][0] = cell_of(g, k, v + pad);
    }
    return true;
}

static inline uint64_t cell_key(const sized_class *g, int64_t cx, int64_t cy, int64_t cz)
{
    return (uint64_t)cx + (uint64_t)g->ncell[0] * ((uint64_t)cy + (uint64_t)g->ncell[1] * (uint64_t)cz);
}

/* The home slot of cell (cx, row): the row hashed, cx added, so that the
 * cells of one row, which a query box visits one after the other, sit in
 * neighbouring slots (one cache line, not one miss each). */
static inline uint64_t slot_of(const sized_class *g, uint64_t cx, uint64_t row)
{
    return (((row * 0x9E3779B97F4A7C15ull) >> g->shift) + cx) & g->mask;
}

/* The occupied cell (cx, row), or -1. */
static inline int64_t find_cell(const sized_class *g, uint64_t cx, uint64_t row)
{
    uint64_t key = cx + (uint64_t)g->ncell[0] * row;
    for (uint64_t s = slot_of(g, cx, row);; s = (s + 1) & g->mask) {
        if (g->slot_key[s] == key)
            return g->slot_cell[s];
        if (g->slot_key[s] == SIZED_EMPTY)
            return -1;
    }
}

static bool class_alloc(sized_class *g, const prox_allocator *al)
{
    int64_t n = g->n;
    g->x = prox_alloc_array(al, 3 * n, sizeof *g->x);
    g->size = prox_alloc_array(al, n, sizeof *g->size);
    g->type = prox_alloc_array(al, n, sizeof *g->type);
    g->id = prox_alloc_array(al, n, sizeof *g->id);
    if (!g->x || !g->size || !g->type || !g->id)
        return false;
    g->y = g->x + n;
    g->z = g->y + n;
    return true;
}

/* Dense: start[key] the first member of cell `key` in sorted order (of
 * the next occupied cell when empty), start[total] = n, so that the
 * members of cells [a, b] of a row are [start[a], start[b + 1]). */
static prox_status dense_starts(sized_class *g, const uint64_t *keys, const prox_allocator *al)
{
    int64_t total = g->ncell[0] * g->ncell[1] * g->ncell[2];
    g->start = prox_alloc_array(al, total + 1, sizeof *g->start);
    if (!g->start)
        return prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for a cell table");
    int64_t i = 0;
    for (int64_t key = 0; key <= total; key++) {
        while (i < g->n && keys[i] < (uint64_t)key)
            i++;
        g->start[key] = (uint32_t)i;
    }
    return PROX_OK;
}

/* Members sorted by cell key; cells and their hash table. */
static prox_status class_sort(sized_class *g, const sized_classes *c, int threads)
{
    const prox_allocator *al = c->al;
    int64_t n = g->n;
    uint64_t *keys = prox_alloc_array(al, 2 * n, sizeof *keys);
    uint32_t *order = prox_alloc_array(al, 2 * n, sizeof *order);
    double *tmp = prox_alloc_array(al, n, sizeof *tmp);
    prox_status st = PROX_OK;
    if (!keys || !order || !tmp) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for a class of %lld points",
                       (long long)n);
        goto done;
    }
    const double *axis[3] = {g->x, g->y, g->z};
    for (int64_t i = 0; i < n; i++) {
        keys[i] = cell_key(g, cell_of(g, 0, axis[0][i]), cell_of(g, 1, axis[1][i]),
                           c->dim == 3 ? cell_of(g, 2, axis[2][i]) : 0);
        order[i] = (uint32_t)i;
    }
    prox_radix_sort64(keys, order, keys + n, order + n, n, threads);
    double *cols[4] = {g->x, g->y, g->z, g->size};
    for (int a = 0; a < 4; a++) {
        for (int64_t i = 0; i < n; i++)
            tmp[i] = cols[a][order[i]];
        memcpy(cols[a], tmp, (size_t)n * sizeof *tmp);
    }
    int32_t *t32 = (int32_t *)(void *)(order + n); /* the sort's scratch, free now */
    for (int64_t i = 0; i < n; i++)
        t32[i] = g->type[order[i]];
    memcpy(g->type, t32, (size_t)n * sizeof *t32);
    for (int64_t i = 0; i < n; i++)
        t32[i] = (int32_t)g->id[order[i]];
    memcpy(g->id, t32, (size_t)n * sizeof *t32);
    g->cells = 0;
    for (int64_t i = 0; i < n; i++)
        g->cells += i == 0 || keys[i] != keys[i - 1];
    if (g->dense) {
        st = dense_starts(g, keys, al);
        goto done;
    }
    g->start = prox_alloc_array(al, g->cells + 1, sizeof *g->start);
    if (!g->start) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for a cell table");
        goto done;
    }
    g->cells = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || keys[i] != keys[i - 1])
            g->start[g->cells++] = (uint32_t)i;
    g->start[g->cells] = (uint32_t)n;
    int bits = 1;
    while (((int64_t)1 << bits) < 2 * g->cells)
        bits++;
    int64_t slots = (int64_t)1 << bits;
    g->shift = 64 - bits;
    g->mask = (uint64_t)slots - 1;
    g->slot_key = prox_alloc_array(al, slots, sizeof *g->slot_key);
    g->slot_cell = prox_alloc_array(al, slots, sizeof *g->slot_cell);
    if (!g->slot_key || !g->slot_cell) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for a cell table");
        goto done;
    }
    for (int64_t s = 0; s < slots; s++)
        g->slot_key[s] = SIZED_EMPTY;
    for (int64_t cell = 0; cell < g->cells; cell++) {
        uint64_t key = keys[g->start[cell]];
        uint64_t nx = (uint64_t)g->ncell[0];
        uint64_t s = slot_of(g, key % nx, key / nx);
        while (g->slot_key[s] != SIZED_EMPTY)
            s = (s + 1) & (uint64_t)(slots - 1);
        g->slot_key[s] = key;
        g->slot_cell[s] = (uint32_t)cell;
    }
done:
    prox_free(al, keys);
    prox_free(al, order);
    prox_free(al, tmp);
    return st;
}

/* How many classes, and how many powers of two each spans: two (a factor
 * of four: fewer class pairs against wider sizes within each, the better
 * trade on W7: docs/design.md, "Sizes"), more where there would be over
 * SIZED_MAX_CLASSES. */
static int class_count(double smallest, double largest, int *step)
{
    *step = SIZED_CLASS_POWERS;
    if (!(smallest > 0) || largest < 2 * smallest)
        return 1;
    int powers = (int)floor(log2(largest / smallest)) + 1;
    int needed = (powers + SIZED_MAX_CLASSES - 1) / SIZED_MAX_CLASSES;
    *step = needed > *step ? needed : *step;
    return (powers + *step - 1) / *step;
}

/* Each point's reach (TYPES: 0 for a point that reaches no type of the
 * partner set; it is left out), and the smallest positive and largest. */
static void reaches(const sized_rule *rule, const sized_set *set, const sized_set *partner,
                    double *reach, double *type_reach, double *smallest, double *largest)
{
    if (rule->rule == PROX_RULE_TYPES)
        types_reach(rule, partner, type_reach);
    *smallest = INFINITY;
    *largest = 0;
    for (int64_t i = 0; i < set->n; i++) {
        double r = reach[i] = point_reach(rule, set, i, type_reach);
        if (r > 0 && r < *smallest)
            *smallest = r;
        if (r > *largest)
            *largest = r;
    }
}

/* The class of every kept point (-1: left out), the classes' sizes, and
 * the empty classes dropped (c->count the occupied ones). */
static void assign(sized_classes *c, const sized_rule *rule, const sized_set *set,
                   const double *reach, double smallest, double largest, int *of)
{
    int step, count = class_count(smallest, largest, &step);
    double bound[SIZED_MAX_CLASSES];
    for (int k = 0; k < count; k++)
        bound[k] = ldexp(smallest, step * k);
    int64_t members[SIZED_MAX_CLASSES] = {0};
    for (int64_t i = 0; i < set->n; i++) {
        bool kept = rule->rule != PROX_RULE_TYPES || reach[i] > 0;
        of[i] = kept ? class_of(reach[i], bound, count) : -1;
        if (kept)
            members[of[i]]++;
    }
    int compact[SIZED_MAX_CLASSES];
    c->count = 0;
    for (int k = 0; k < count; k++) {
        compact[k] = members[k] ? c->count : -1;
        if (members[k])
            c->cls[c->count++].n = members[k];
    }
    for (int64_t i = 0; i < set->n; i++)
        if (of[i] >= 0)
            of[i] = compact[of[i]];
}

/* Members copied into their classes in input order, wrapped. */
static void fill(sized_classes *c, const prox_points *points, const sized_set *set,
                 const double *reach, const int *of)
{
    int64_t at[SIZED_MAX_CLASSES] = {0};
    for (int64_t i = 0; i < set->n; i++) {
        if (of[i] < 0)
            continue;
        sized_class *g = &c->cls[of[i]];
        int64_t p = at[of[i]]++;
        g->x[p] = prox_coord(points, i, 0, c->period);
        g->y[p] = prox_coord(points, i, 1, c->period);
        g->z[p] = c->dim == 3 ? prox_coord(points, i, 2, c->period) : 0.0;
        g->size[p] = set->size ? set->size[i] : 0.0;
        g->type[p] = set->type ? set->type[i] : 0;
        g->id[p] = (prox_index)i;
        if (reach[i] > g->reach)
            g->reach = reach[i];
    }
}

/* TYPES: which types a class holds and each type's largest cutoff with
 * them. */
static bool class_types(sized_class *g, const sized_rule *rule, const prox_allocator *al)
{
    int64_t T = rule->types;
    g->present = prox_alloc_array(al, T, 1);
    g->type_reach = prox_alloc_array(al, T, sizeof *g->type_reach);
    if (!g->present || !g->type_reach)
        return false;
    memset(g->present, 0, (size_t)T);
    for (int64_t i = 0; i < g->n; i++)
        g->present[g->type[i]] = 1;
    for (int64_t t = 0; t < T; t++) {
        g->type_reach[t] = 0;
        for (int64_t u = 0; u < T; u++)
            if (g->present[u] && rule->cut[t * T + u] > g->type_reach[t])
                g->type_reach[t] = rule->cut[t * T + u];
    }
    return true;
}

static int64_t class_bytes(const sized_class *g)
{
    int64_t members = g->n * (int64_t)(4 * sizeof(double) + 2 * sizeof(int32_t));
    if (g->dense)
        return members + (g->ncell[0] * g->ncell[1] * g->ncell[2] + 1) * 4;
    return members + (g->cells + 1) * 4 + ((int64_t)1 << (64 - g->shift)) * 12;
}

prox_status sized_classes_build(sized_classes *c, const prox_points *points, const sized_set *set,
                                const sized_set *partner, const sized_rule *rule,
                                const double period[3], int threads, const prox_allocator *al)
{
    memset(c, 0, sizeof *c);
    c->al = al;
    c->dim = points->dim;
    for (int k = 0; k < 3; k++)
        c->period[k] = k < points->dim ? period[k] : 0;
    double *reach = prox_alloc_array(al, set->n, sizeof *reach);
    int *of = prox_alloc_array(al, set->n, sizeof *of);
    double *type_reach = prox_alloc_array(al, rule->types > 0 ? rule->types : 1, sizeof(double));
    prox_status st = PROX_OK;
    if (!reach || !of || !type_reach) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for the classes");
        goto done;
    }
    double smallest, largest;
    reaches(rule, set, partner, reach, type_reach, &smallest, &largest);
    assign(c, rule, set, reach, smallest, largest, of);
    for (int k = 0; k < c->count && !st; k++)
        if (!class_alloc(&c->cls[k], al))
            st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for the classes");
    if (st)
        goto done;
    fill(c, points, set, reach, of);
    for (int k = 0; k < c->count && !st; k++)
        if (rule->rule == PROX_RULE_TYPES && !class_types(&c->cls[k], rule, al))
            st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for the classes");
    for (int k = 0; k < c->count && !st; k++) {
        sized_class *g = &c->cls[k];
        class_box(g, c->dim);
        class_cells(g, c, sized_class_pair_cut(rule, g, g));
        st = class_sort(g, c, threads);
        c->bytes += class_bytes(g);
    }
done:
    prox_free(al, reach);
    prox_free(al, of);
    prox_free(al, type_reach);
    return st;
}

void sized_classes_free(sized_classes *c)
{
    for (int k = 0; k < c->count; k++) {
        sized_class *g = &c->cls[k];
        prox_free(c->al, g->x);
        prox_free(c->al, g->size);
        prox_free(c->al, g->type);
        prox_free(c->al, g->id);
        prox_free(c->al, g->start);
        prox_free(c->al, g->slot_key);
        prox_free(c->al, g->slot_cell);
        prox_free(c->al, g->present);
        prox_free(c->al, g->type_reach);
    }
    c->count = 0;
}

double sized_class_cut(const sized_rule *rule, const sized_class *g, double s, int32_t t)
{
    switch (rule->rule) {
    case PROX_RULE_CONTACT: return s + g->reach;
    case PROX_RULE_GATHER_SCATTER: return s > g->reach ? s : g->reach;
    default: return g->type_reach[t];
    }
}

double sized_class_pair_cut(const sized_rule *rule, const sized_class *a, const sized_class *b)
{
    if (rule->rule != PROX_RULE_TYPES)
        return sized_class_cut(rule, b, a->reach, 0);
    double cut = 0;
    for (int64_t t = 0; t < rule->types; t++)
        if (a->present[t] && b->type_reach[t] > cut)
            cut = b->type_reach[t];
    return cut;
}

/* The cell ranges along axis k that a box of half-width `cut` around v
 * overlaps (periodic: up to two, wrapped); 0 when it misses the class. */
static int axis_ranges(const sized_classes *c, const sized_class *g, int k, double v, double cut,
                       int64_t lo[2], int64_t hi[2])
{
    if (k >= c->dim) {
        lo[0] = hi[0] = 0;
        return 1;
    }
    double L = c->period[k];
    if (L == 0) {
        if (v + cut < g->lo[k] || v - cut > g->hi[k])
            return 0;
        lo[0] = cell_of(g, k, v - cut);
        hi[0] = cell_of(g, k, v + cut);
        return 1;
    }
    int64_t n = g->ncell[k];
    double a = v - cut, b = v + cut;
    if (2 * cut >= L || n == 1) {
        lo[0] = 0, hi[0] = n - 1;
        return 1;
    }
    if (a >= 0 && b < L) {
        lo[0] = cell_of(g, k, a), hi[0] = cell_of(g, k, b);
        return 1;
    }
    /* [0, end of the low piece] and [start of the high piece, n - 1] */
    lo[0] = 0, hi[0] = cell_of(g, k, a < 0 ? b : b - L);
    lo[1] = cell_of(g, k, a < 0 ? a + L : a), hi[1] = n - 1;
    if (lo[1] <= hi[0] + 1) {
        hi[0] = n - 1;
        return 1;
    }
    return 2;
}

/* The hit of member j for the probe, as the half list holds it (the
 * smaller index first in a self search); false once the sink stops. */
static inline bool emit_hit(const sized_probe *p, prox_index j, prox_emitter *e)
{
    if (p->self && j < p->qid)
        prox_emit(e, j, p->qid);
    else
        prox_emit(e, p->qid, j);
    return !e->stop;
}

/* Members [begin, end) of cell order against the probe, under rule `R`
 * on open (P false) or periodic axes (constants in each caller below, so
 * the threshold's switch, the minimum images and the loads a rule does not
 * need leave the loop). The stop flag changes only at an emission. */
static inline __attribute__((always_inline)) void
test_run_as(prox_size_rule R, bool P, const sized_class *g, const sized_rule *rule,
            const prox_metric *m, const sized_probe *p, int64_t begin, int64_t end,
            prox_emitter *e)
{
    sized_rule r = *rule;
    r.rule = R;
    double qx = p->q[0], qy = p->q[1], qz = p->q[2];
    for (int64_t k = begin; k < end; k++) {
        double dx = qx - g->x[k], dy = qy - g->y[k], dz = qz - g->z[k];
        double d2 = P ? prox_metric_dist2(m, dx, dy, dz) : prox_dist2(dx, dy, dz);
        double t2 = sized_threshold2(&r, p->qs, R == PROX_RULE_TYPES ? 0 : g->size[k], p->qt,
                                     R == PROX_RULE_TYPES ? g->type[k] : 0);
        if (sized_within(d2, t2) && !emit_hit(p, g->id[k], e))
            return;
    }
}

/* Two doubles in one vector (GCC and Clang vector extensions, the
 * baseline's SSE2 width: each lane the IEEE operation of the scalar code,
 * no contraction), for the contact and gather-scatter tests on open axes. */
typedef double sized_v2 __attribute__((vector_size(16)));
typedef int64_t sized_m2 __attribute__((vector_size(16)));

static inline sized_v2 load2(const double *p)
{
    sized_v2 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Members [begin, end) on open axes, two at a time: lane by lane the
 * arithmetic of test_run_as (dx*dx + dy*dy + dz*dz against the squared
 * threshold), hits emitted in member order; the rest by test_run_as. */
static inline __attribute__((always_inline)) void
test_run2(prox_size_rule R, const sized_class *g, const sized_rule *rule, const prox_metric *m,
          const sized_probe *p, int64_t begin, int64_t end, prox_emitter *e)
{
    double qx = p->q[0], qy = p->q[1], qz = p->q[2], qs = p->qs;
    sized_v2 vqs = {qs, qs};
    int64_t k = begin;
    for (; k + 2 <= end; k += 2) {
        sized_v2 dx = qx - load2(g->x + k), dy = qy - load2(g->y + k), dz = qz - load2(g->z + k);
        sized_v2 d2 = dx * dx + dy * dy + dz * dz, s = load2(g->size + k), t;
        if (R == PROX_RULE_CONTACT) {
            t = vqs + s;
        } else { /* max(qs, s) as the scalar rule picks it: qs when qs > s */
            sized_m2 pick = (sized_m2)(vqs > s);
            t = (sized_v2)(((sized_m2)vqs & pick) | ((sized_m2)s & ~pick));
        }
        sized_v2 t2 = t * t;
        sized_m2 hit = (d2 <= t2) & (t2 > 0);
        if (!(hit[0] | hit[1]))
            continue;
        for (int l = 0; l < 2; l++)
            if (hit[l] && !emit_hit(p, g->id[k + l], e))
                return;
    }
    test_run_as(R, false, g, rule, m, p, k, end, e);
}

/* One run of members, those up to `after` skipped; false when stopped. */
static inline __attribute__((always_inline)) bool
run_as(prox_size_rule R, bool P, const sized_class *g, const sized_rule *rule,
       const prox_metric *m, const sized_probe *p, int64_t begin, int64_t end, prox_emitter *e,
       points_chunk *chunk)
{
    chunk->cells_visited++;
    if (begin <= p->after)
        begin = p->after + 1;
    if (begin >= end)
        return true;
    chunk->candidates += end - begin;
    if (!P && R != PROX_RULE_TYPES)
        test_run2(R, g, rule, m, p, begin, end, e);
    else
        test_run_as(R, P, g, rule, m, p, begin, end, e);
    return !e->stop;
}

/* Dense: each row the box covers, its cells [lo, hi] along x one run of
 * members (two where the box wraps along x). A self query skips the rows
 * before its own (their members precede it in cell order: keys are
 * row-major). */
static inline __attribute__((always_inline)) void
dense_as(prox_size_rule R, bool P, const sized_class *g, const sized_rule *rule,
         const prox_metric *m, const sized_probe *p, int64_t lo[3][2], int64_t hi[3][2],
         const int ranges[3], prox_emitter *e, points_chunk *chunk)
{
    int64_t nx = g->ncell[0], ny = g->ncell[1];
    int64_t own = p->after >= 0 ? cell_of(g, 1, p->q[1]) + ny * cell_of(g, 2, p->q[2]) : -1;
    int64_t a0 = lo[0][0], b0 = hi[0][0] + 1, a1 = lo[0][1], b1 = hi[0][1] + 1;
    bool wrap = ranges[0] == 2;
    for (int rz = 0; rz < ranges[2]; rz++)
        for (int64_t cz = lo[2][rz]; cz <= hi[2][rz]; cz++)
            for (int ry = 0; ry < ranges[1]; ry++)
                for (int64_t row = lo[1][ry] + ny * cz, last = hi[1][ry] + ny * cz; row <= last;
                     row++) {
                    if (row < own)
                        continue;
                    const uint32_t *s = g->start + row * nx;
                    if (!run_as(R, P, g, rule, m, p, s[a0], s[b0], e, chunk) ||
                        (wrap && !run_as(R, P, g, rule, m, p, s[a1], s[b1], e, chunk)))
                        return;
                }
}

static void test_run(const sized_class *g, const sized_rule *rule, const prox_metric *m,
                     const sized_probe *p, int64_t begin, int64_t end, prox_emitter *e)
{
    switch (rule->rule) {
    case PROX_RULE_CONTACT: test_run_as(PROX_RULE_CONTACT, true, g, rule, m, p, begin, end, e); break;
    case PROX_RULE_GATHER_SCATTER:
        test_run_as(PROX_RULE_GATHER_SCATTER, true, g, rule, m, p, begin, end, e);
        break;
    default: test_run_as(PROX_RULE_TYPES, true, g, rule, m, p, begin, end, e); break;
    }
}

#define SIZED_DENSE(R, P) dense_as(R, P, g, rule, m, p, lo, hi, ranges, e, chunk)

/* The dense traversal for the call's rule and metric. */
static void query_dense(const sized_class *g, const sized_rule *rule, const prox_metric *m,
                        const sized_probe *p, int64_t lo[3][2], int64_t hi[3][2],
                        const int ranges[3], prox_emitter *e, points_chunk *chunk)
{
    bool P = m->periodic;
    switch (rule->rule) {
    case PROX_RULE_CONTACT:
        P ? SIZED_DENSE(PROX_RULE_CONTACT, true) : SIZED_DENSE(PROX_RULE_CONTACT, false);
        break;
    case PROX_RULE_GATHER_SCATTER:
        P ? SIZED_DENSE(PROX_RULE_GATHER_SCATTER, true)
          : SIZED_DENSE(PROX_RULE_GATHER_SCATTER, false);
        break;
    default: P ? SIZED_DENSE(PROX_RULE_TYPES, true) : SIZED_DENSE(PROX_RULE_TYPES, false); break;
    }
}

void sized_class_query(const sized_classes *c, const sized_class *g, const sized_rule *rule,
                       const prox_metric *m, const sized_probe *p, prox_emitter *e,
                       points_chunk *chunk)
{
    int64_t lo[3][2] = {{0, 0}, {0, 0}, {0, 0}}, hi[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    int ranges[3] = {1, 1, 1};
    if (g->dense && !m->periodic) {
        /* open axes: one range each; the margin as below */
        if (!open_ranges(g, c->dim, p, lo, hi))
            return;
        query_dense(g, rule, m, p, lo, hi, ranges, e, chunk);
        return;
    }
    for (int k = 0; k < 3; k++) {
        /* a margin for the rounding of v - cut and of the distance: a pair
         * the rule accepts lies within it (2^-40 >> the few ulps at stake) */
        double pad = p->cut + (p->cut + fabs(p->q[k]) + c->period[k]) * 0x1p-40;
        ranges[k] = axis_ranges(c, g, k, p->q[k], pad, lo[k], hi[k]);
        if (!ranges[k])
            return;
    }
    if (g->dense) {
        query_dense(g, rule, m, p, lo, hi, ranges, e, chunk);
        return;
    }
    for (int rz = 0; rz < ranges[2]; rz++)
        for (int64_t cz = lo[2][rz]; cz <= hi[2][rz]; cz++)
            for (int ry = 0; ry < ranges[1]; ry++)
                for (int64_t cy = lo[1][ry]; cy <= hi[1][ry]; cy++) {
                    uint64_t row = (uint64_t)cy + (uint64_t)g->ncell[1] * (uint64_t)cz;
                    for (int rx = 0; rx < ranges[0]; rx++)
                        for (int64_t cx = lo[0][rx]; cx <= hi[0][rx]; cx++) {
                            int64_t cell = find_cell(g, (uint64_t)cx, row);
                            chunk->cells_visited++;
                            if (cell < 0)
                                continue;
                            int64_t begin = g->start[cell], end = g->start[cell + 1];
                            if (begin <= p->after)
                                begin = p->after + 1;
                            if (begin >= end)
                                continue;
                            chunk->candidates += end - begin;
                            test_run(g, rule, m, p, begin, end, e);
                            if (e->stop)
                                return;
                        }
                }
}

/* One open-axes query of a dense class under rule R: the box's cell
 * range per axis (the margin of sized_class_query), then its rows. */
static inline __attribute__((always_inline)) void
open_dense_as(prox_size_rule R, const sized_classes *c, const sized_class *g,
              const sized_rule *rule, const prox_metric *m, const sized_probe *p, prox_emitter *e,
              points_chunk *chunk)
{
    int64_t lo[3][2] = {{0, 0}, {0, 0}, {0, 0}}, hi[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    static const int ranges[3] = {1, 1, 1};
    if (!open_ranges(g, c->dim, p, lo, hi))
        return;
    dense_as(R, false, g, rule, m, p, lo, hi, ranges, e, chunk);
}

/* Members [from, to) of class q, each against g over its own largest
 * interaction with g, as sized_class_query; rule and layout decided once
 * for the batch. */
static inline __attribute__((always_inline)) void
batch_as(prox_size_rule R, bool fast, const sized_classes *c, const sized_class *g,
         const sized_rule *rule, const prox_metric *m, const sized_class *q, int64_t from,
         int64_t to, bool same, prox_emitter *e, points_chunk *chunk)
{
    for (int64_t i = from; i < to && !e->stop; i++) {
        double xyz[3] = {q->x[i], q->y[i], q->z[i]};
        double qs = R == PROX_RULE_TYPES ? 0 : q->size[i];
        int32_t qt = R == PROX_RULE_TYPES ? q->type[i] : 0;
        double cut = sized_class_cut(rule, g, qs, qt);
        if (!(cut > 0))
            continue;
        sized_probe probe = {xyz, qs, qt, q->id[i], cut, same ? i : -1, true};
        if (fast)
            open_dense_as(R, c, g, rule, m, &probe, e, chunk);
        else
            sized_class_query(c, g, rule, m, &probe, e, chunk);
    }
}

void sized_class_query_class(const sized_classes *c, const sized_class *g,
                             const sized_rule *rule, const prox_metric *m, const sized_class *q,
                             int64_t from, int64_t to, bool same, prox_emitter *e,
                             points_chunk *chunk)
{
    bool fast = g->dense && !m->periodic;
    switch (fast ? rule->rule : PROX_RULE_TYPES + 1) {
    case PROX_RULE_CONTACT:
        batch_as(PROX_RULE_CONTACT, true, c, g, rule, m, q, from, to, same, e, chunk);
        break;
    case PROX_RULE_GATHER_SCATTER:
        batch_as(PROX_RULE_GATHER_SCATTER, true, c, g, rule, m, q, from, to, same, e, chunk);
        break;
    case PROX_RULE_TYPES:
        batch_as(PROX_RULE_TYPES, true, c, g, rule, m, q, from, to, same, e, chunk);
        break;
    default: /* periodic or hashed: the general query, rule read per point */
        batch_as(rule->rule, false, c, g, rule, m, q, from, to, same, e, chunk);
        break;
    }
}

double sized_class_cost(const sized_classes *c, const sized_class *g, int64_t n_q, double cut)
{
    double lookups = 1, share = 1;
    for (int k = 0; k < c->dim; k++) {
        double w = 1 / g->inv[k];
        double extent = w * (double)g->ncell[k];
        double cells = 1 + 2 * cut / w;
        if (!g->dense || k > 0) /* dense: one lookup a row */
            lookups *= cells < (double)g->ncell[k] ? cells : (double)g->ncell[k];
        double f = (2 * cut + w) / extent;
        share *= f < 1 ? f : 1;
    }
    return (double)n_q * (lookups + share * (double)g->n);
}
