/* cell.c: prox_cell_pairs, every image pair (i, j, S) within the cutoff in
 * a periodic cell of any shape (include/prox/cell.h; docs/design.md,
 * "Periodic cells of any shape").
 *
 * The points are binned by their wrapped fractional coordinates
 * (cell_geometry.c); each point visits the bins of its stencil, each
 * reached through a wrap that carries an integer shift s, as contiguous
 * runs of bins along the first axis. A candidate is first screened with
 * the wrapped coordinates (an approximation, widened by a bound on its
 * rounding), then decided by the rule of cell.h from the caller's
 * positions and the integer shift S = s + w_i - w_j, where w is each
 * point's wrap. Rows are produced in point order and sorted by (j, S), so
 * the output is the same for every thread count. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/views.h"
#include "prox/grid.h"
#include "points/cell_geometry.h"

/* The points in bin order. */
typedef struct cell_points {
    double *xw[3];      /* wrapped coordinates (screening only) */
    double *xo[3];      /* the caller's coordinates, widened (the rule) */
    int32_t *w[3];      /* the wrap: x = xw + w . cell */
    prox_index *index;  /* caller's index */
    int64_t *start;     /* bins + 1: bin t holds slots [start[t], start[t+1]) */
    int64_t *slot;      /* caller's index -> slot */
    int64_t *bin;       /* caller's index -> (b0, b1, b2) packed as a linear bin */
} cell_points;

typedef struct cell_hit {
    uint64_t key; /* (j, S) packed in lexicographic order (cell_search.keyed) */
    prox_index j;
    int32_t S[3];
    double D[3];
    double d2;
} cell_hit;

/* The current row's hits, and their sort keys. */
typedef struct cell_key {
    uint64_t key; /* (j, S) packed in lexicographic order */
    int64_t at;   /* the hit */
} cell_key;

typedef struct cell_row {
    cell_hit *hits;
    int64_t count, capacity;
    uint32_t *slots; /* the screen's survivors of one run */
    int64_t slot_capacity;
    cell_key *keys;
    int64_t key_capacity;
} cell_row;

/* One chunk of rows: its pairs in row order, in the arrays the output
 * asks for (with the output's allocator, so that a single chunk's arrays
 * become the output's). */
typedef struct cell_chunk {
    cell_row row;
    prox_geometry part;
    int64_t capacity[5];
    int64_t rows;       /* rows of the chunk */
    int64_t pairs;
    int64_t candidates;
    prox_status status;
} cell_chunk;

typedef struct cell_search {
    prox_cell_frame frame;
    prox_cell_bins bins;
    cell_points pts;
    int64_t count;
    double r2;      /* the rule */
    double screen2; /* the screen: r2 widened by the rounding of wrapped coordinates */
    bool full, self_interaction, store;
    /* The shifts a row may hold: S[k] - key_lo[k] of point i's row lies in
     * [0, key_range[k]), key_lo = image_lo + w_i - w_max; keyed when
     * count * key_range[0..2] stays below 2^62 */
    int64_t image_lo[3], w_max[3], key_range[3];
    bool keyed;
    const prox_allocator *al;
} cell_search;

prox_cell_desc prox_default_cell_desc(void)
{
    prox_cell_desc d;
    memset(&d, 0, sizeof d);
    return d;
}

void prox_geometry_init(prox_geometry *g, unsigned fields, const prox_allocator *allocator)
{
    memset(g, 0, sizeof *g);
    g->fields = fields ? fields : PROX_GEOMETRY_ALL;
    g->allocator = prox_allocator_resolve(allocator);
}

static void geometry_release(prox_geometry *g)
{
    prox_free(&g->allocator, g->i);
    prox_free(&g->allocator, g->j);
    prox_free(&g->allocator, g->d);
    prox_free(&g->allocator, g->D);
    prox_free(&g->allocator, g->S);
    g->i = g->j = NULL;
    g->d = g->D = NULL;
    g->S = NULL;
    g->count = 0;
}

void prox_geometry_free(prox_geometry *g)
{
    if (!g)
        return;
    geometry_release(g);
}

static prox_status check_desc(const prox_cell_desc *desc)
{
    if (!isfinite(desc->cutoff) || !(desc->cutoff > 0))
        return prox_fail(PROX_ERR_INVALID, "cutoff is %g; it must be positive and finite",
                         desc->cutoff);
    if (!(desc->cutoff >= PROX_RADIUS_MIN && desc->cutoff <= PROX_RADIUS_MAX))
        return prox_fail(PROX_ERR_RANGE, "cutoff %g is outside [%g, %g]: the rule squares it",
                         desc->cutoff, PROX_RADIUS_MIN, PROX_RADIUS_MAX);
    if (desc->threads < 0)
        return prox_fail(PROX_ERR_INVALID, "threads is %d; 0 means the default", desc->threads);
    return PROX_OK;
}

static void points_free(cell_points *p, const prox_allocator *al)
{
    for (int k = 0; k < 3; k++) {
        prox_free(al, p->xw[k]);
        prox_free(al, p->xo[k]);
        prox_free(al, p->w[k]);
    }
    prox_free(al, p->index);
    prox_free(al, p->start);
    prox_free(al, p->slot);
    prox_free(al, p->bin);
}

static bool points_alloc(cell_points *p, int64_t n, int64_t bins, const prox_allocator *al)
{
    bool ok = true;
    for (int k = 0; k < 3; k++) {
        ok &= (p->xw[k] = prox_alloc_array(al, n, sizeof(double))) != NULL;
        ok &= (p->xo[k] = prox_alloc_array(al, n, sizeof(double))) != NULL;
        ok &= (p->w[k] = prox_alloc_array(al, n, sizeof(int32_t))) != NULL;
    }
    ok &= (p->index = prox_alloc_array(al, n, sizeof(prox_index))) != NULL;
    ok &= (p->start = prox_alloc_array(al, bins + 1, sizeof(int64_t))) != NULL;
    ok &= (p->slot = prox_alloc_array(al, n, sizeof(int64_t))) != NULL;
    ok &= (p->bin = prox_alloc_array(al, n, sizeof(int64_t))) != NULL;
    return ok;
}

static void load_point(const prox_points *p, int64_t i, double *x)
{
    for (int k = 0; k < 3; k++)
        x[k] = k < p->dim ? prox_points_get(p, i, k) : 0.0;
}

/* Fraction range per axis and the largest coordinate and fraction; the
 * fractions are recomputed later rather than kept (3 doubles a point). */
typedef struct cell_extent {
    double fmin[3], fmax[3];
    double xmax;  /* largest |coordinate| */
    double fbig;  /* largest |fraction| */
} cell_extent;

static prox_status measure(const prox_points *p, const prox_cell_frame *c, cell_extent *e)
{
    for (int k = 0; k < 3; k++) {
        e->fmin[k] = INFINITY;
        e->fmax[k] = -INFINITY;
    }
    e->xmax = 0;
    e->fbig = 0;
    for (int64_t i = 0; i < p->count; i++) {
        double x[3];
        load_point(p, i, x);
        for (int k = 0; k < 3; k++) {
            double f = prox_cell_fraction(c, x, k);
            if (!isfinite(x[k]) || !isfinite(f))
                return prox_fail(PROX_ERR_DATA, "point %lld: coordinate %d is %g",
                                 (long long)i, k, x[k]);
            e->fmin[k] = f < e->fmin[k] ? f : e->fmin[k];
            e->fmax[k] = f > e->fmax[k] ? f : e->fmax[k];
            e->xmax = fabs(x[k]) > e->xmax ? fabs(x[k]) : e->xmax;
            e->fbig = fabs(f) > e->fbig ? fabs(f) : e->fbig;
        }
    }
    if (p->count == 0)
        for (int k = 0; k < 3; k++)
            e->fmin[k] = e->fmax[k] = 0;
    for (int k = 0; k < 3; k++)
        if (c->pbc[k] && !(e->fbig < 0x1p30))
            return prox_fail(PROX_ERR_RANGE,
                             "a point lies %g cells from the origin (at most 2^30): shifts "
                             "would overflow",
                             e->fbig);
    return PROX_OK;
}

/* A bound on the rounding error of a computed fraction: the inverse's
 * error (condition number times epsilon) times the fraction's size. */
static double fraction_error(const prox_cell_frame *c, const cell_extent *e)
{
    double nm = 0, ni = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            nm += c->m[r][k] * c->m[r][k];
            ni += c->inv[r][k] * c->inv[r][k];
        }
    return 64 * DBL_EPSILON * sqrt(nm * ni) * (e->fbig + 1);
}

/* Wrap of point x: its fractions, the integer wrap along periodic axes
 * and the linear bin. */
static int64_t wrap_point(const cell_search *s, const double *x, int32_t *w, double *xw)
{
    const prox_cell_frame *c = &s->frame;
    const prox_cell_bins *b = &s->bins;
    int64_t bin[3];
    for (int k = 0; k < 3; k++) {
        double f = prox_cell_fraction(c, x, k);
        w[k] = 0;
        if (c->pbc[k]) {
            double fl = floor(f);
            w[k] = (int32_t)fl;
            f -= fl;
        }
        bin[k] = prox_cell_bin_of(b, k, f);
    }
    for (int k = 0; k < 3; k++)
        xw[k] = x[k] - (((double)w[0] * c->m[0][k] + (double)w[1] * c->m[1][k]) +
                        (double)w[2] * c->m[2][k]);
    return bin[0] + b->nb[0] * (bin[1] + b->nb[1] * bin[2]);
}

/* Counting sort of the points into bin order. */
static void sort_points(cell_search *s, const prox_points *p)
{
    cell_points *q = &s->pts;
    int64_t bins = s->bins.total;
    memset(q->start, 0, (size_t)(bins + 1) * sizeof(int64_t));
    for (int64_t i = 0; i < p->count; i++) {
        double x[3], xw[3];
        int32_t w[3];
        load_point(p, i, x);
        q->bin[i] = wrap_point(s, x, w, xw);
        q->start[q->bin[i] + 1]++;
    }
    for (int64_t t = 0; t < bins; t++)
        q->start[t + 1] += q->start[t];
    for (int64_t i = 0; i < p->count; i++) {
        double x[3], xw[3];
        int32_t w[3];
        load_point(p, i, x);
        wrap_point(s, x, w, xw);
        int64_t at = q->start[q->bin[i]]++;
        for (int k = 0; k < 3; k++) {
            q->xw[k][at] = xw[k];
            q->xo[k][at] = x[k];
            q->w[k][at] = w[k];
        }
        q->index[at] = (prox_index)i;
        q->slot[i] = at;
    }
    for (int64_t t = bins; t > 0; t--)
        q->start[t] = q->start[t - 1];
    q->start[0] = 0;
}

static bool shift_positive(const int32_t *S)
{
    return S[0] != 0 ? S[0] > 0 : S[1] != 0 ? S[1] > 0 : S[2] > 0;
}

/* Whether (i, j, S) belongs to the output's orientation. */
static bool oriented(const cell_search *s, prox_index i, prox_index j, const int32_t *S)
{
    if (i != j)
        return s->full || i < j;
    if (S[0] == 0 && S[1] == 0 && S[2] == 0)
        return s->self_interaction;
    return s->full || shift_positive(S);
}

/* The per-point constants of the candidates' tests. */
typedef struct cell_query {
    prox_index i;
    int32_t w[3];      /* the point's wrap */
    double x[3];       /* the caller's coordinates */
    int64_t key_lo[3]; /* the lowest shift of the row, per axis */
} cell_query;

/* The row holds room for `more` hits beyond its count. */
static bool row_room(cell_row *row, const cell_search *s, int64_t more)
{
    return row->count + more <= row->capacity ||
           prox_grow(s->al, (void **)&row->hits, &row->capacity, row->count + more, row->count,
                     sizeof *row->hits);
}

/* Runs from which the screen is the SIMD kernel's (cell_screen.c); shorter
 * ones are screened here, where a call through the engine would cost more
 * than the run. */
#define CELL_KERNEL_RUN 16

/* The slots of [lo, hi) within the screen radius of qx, into `slots`
 * (room for hi - lo + PROX_CELL_SCREEN_SLACK). */
static int64_t screen_run(const cell_search *s, const double *qx, int64_t lo, int64_t hi,
                          uint32_t *restrict slots)
{
    const cell_points *q = &s->pts;
    if (hi - lo >= CELL_KERNEL_RUN)
        return prox_cell_screen(q->xw[0], q->xw[1], q->xw[2], lo, hi, qx, s->screen2, slots);
    const double *restrict xw0 = q->xw[0], *restrict xw1 = q->xw[1], *restrict xw2 = q->xw[2];
    double screen2 = s->screen2;
    int64_t passed = 0;
    for (int64_t t = lo; t < hi; t++) { /* branch-free: every slot written, the near kept */
        double dx = qx[0] - xw0[t], dy = qx[1] - xw1[t], dz = qx[2] - xw2[t];
        slots[passed] = (uint32_t)t;
        passed += dx * dx + dy * dy + dz * dz <= screen2;
    }
    return passed;
}

/* The candidates of slots [lo, hi) for point q, whose wrapped coordinates
 * seen through the bin shift `shift` are qx: screened (an approximation
 * widened by its rounding), then decided by the rule. */
static bool test_range(const cell_search *s, const cell_query *qp, const double *qx,
                       const int32_t *shift, int64_t lo, int64_t hi, cell_chunk *ch)
{
    const cell_points *q = &s->pts;
    cell_row *row = &ch->row;
    int64_t need = hi - lo + PROX_CELL_SCREEN_SLACK;
    if ((row->slot_capacity < need &&
         !prox_reserve(s->al, (void **)&row->slots, &row->slot_capacity, need,
                       sizeof *row->slots)) ||
        !row_room(row, s, hi - lo))
        return false;
    const double(*m)[3] = (const double(*)[3])s->frame.m;
    double r2 = s->r2;
    int64_t passed = screen_run(s, qx, lo, hi, row->slots);
    ch->candidates += hi - lo;
    for (int64_t p = 0; p < passed; p++) {
        int64_t t = row->slots[p];
        cell_hit *h = &row->hits[row->count];
        h->j = q->index[t];
        for (int k = 0; k < 3; k++)
            h->S[k] = shift[k] + qp->w[k] - q->w[k][t];
        if (!oriented(s, qp->i, h->j, h->S))
            continue;
        /* the rule of cell.h, term by term */
        double S0 = (double)h->S[0], S1 = (double)h->S[1], S2 = (double)h->S[2];
        for (int k = 0; k < 3; k++)
            h->D[k] = (q->xo[k][t] - qp->x[k]) + ((S0 * m[0][k] + S1 * m[1][k]) + S2 * m[2][k]);
        h->d2 = h->D[0] * h->D[0] + h->D[1] * h->D[1] + h->D[2] * h->D[2];
        if (!(h->d2 <= r2))
            continue;
        uint64_t key = h->j;
        for (int k = 0; k < 3; k++)
            key = key * (uint64_t)s->key_range[k] + (uint64_t)(h->S[k] - qp->key_lo[k]);
        h->key = key;
        row->count++;
    }
    return true;
}

/* floor(t / n) and t - n * floor(t / n) for n > 0. */
static void wrap_bin(int64_t t, int64_t n, int64_t *bin, int32_t *image)
{
    if (t >= 0 && t < n) {
        *bin = t;
        *image = 0;
        return;
    }
    int64_t im = t >= 0 ? t / n : -((-t + n - 1) / n);
    *image = (int32_t)im;
    *bin = t - im * n;
}

static cell_query query_of(const cell_search *s, int64_t si)
{
    const cell_points *q = &s->pts;
    cell_query qp;
    qp.i = q->index[si];
    for (int k = 0; k < 3; k++) {
        qp.w[k] = q->w[k][si];
        qp.x[k] = q->xo[k][si];
        qp.key_lo[k] = s->image_lo[k] + qp.w[k] - s->w_max[k];
    }
    return qp;
}

/* Every stencil bin of point slot si: for each (b1, b2) offset, the first
 * axis' bins as runs that share one image. */
static bool visit_point(const cell_search *s, int64_t si, cell_chunk *ch)
{
    const prox_cell_bins *b = &s->bins;
    const prox_cell_frame *c = &s->frame;
    const cell_points *q = &s->pts;
    cell_query qp = query_of(s, si);
    int64_t bin = q->bin[qp.i];
    int64_t b0 = bin % b->nb[0], b1 = (bin / b->nb[0]) % b->nb[1], b2 = bin / (b->nb[0] * b->nb[1]);
    double xw[3] = {q->xw[0][si], q->xw[1][si], q->xw[2][si]};
    for (int64_t o2 = -b->n[2]; o2 <= b->n[2]; o2++) {
        int64_t t2;
        int32_t s2;
        wrap_bin(b2 + o2, b->nb[2], &t2, &s2);
        if (!c->pbc[2] && s2 != 0)
            continue;
        double v2[3];
        for (int k = 0; k < 3; k++)
            v2[k] = (double)s2 * c->m[2][k];
        for (int64_t o1 = -b->n[1]; o1 <= b->n[1]; o1++) {
            int64_t t1;
            int32_t s1;
            wrap_bin(b1 + o1, b->nb[1], &t1, &s1);
            if (!c->pbc[1] && s1 != 0)
                continue;
            double v21[3];
            for (int k = 0; k < 3; k++)
                v21[k] = (double)s1 * c->m[1][k] + v2[k];
            int64_t row = b->nb[0] * (t1 + b->nb[1] * t2);
            int64_t t = b0 - b->n[0], end = b0 + b->n[0];
            while (t <= end) {
                int64_t t0;
                int32_t s0;
                wrap_bin(t, b->nb[0], &t0, &s0);
                int64_t last = t + (b->nb[0] - 1 - t0); /* the run ends at the image's last bin */
                last = last < end ? last : end;
                if (c->pbc[0] || s0 == 0) {
                    int32_t shift[3] = {s0, s1, s2};
                    double qx[3];
                    for (int k = 0; k < 3; k++) /* screening only: any rounding will do */
                        qx[k] = xw[k] - ((double)s0 * c->m[0][k] + v21[k]);
                    int64_t lo = q->start[row + t0], hi = q->start[row + t0 + (last - t) + 1];
                    if (lo < hi && !test_range(s, &qp, qx, shift, lo, hi, ch))
                        return false;
                }
                t = last + 1;
            }
        }
    }
    return true;
}

static int compare_keys(const void *pa, const void *pb)
{
    const cell_key *a = pa, *b = pb;
    return a->key < b->key ? -1 : a->key > b->key;
}

static int compare_hits(const cell_hit *a, const cell_hit *b)
{
    if (a->j != b->j)
        return a->j < b->j ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k] ? -1 : 1;
    return 0;
}

/* Sorts a row's hits by (j, S): by their packed keys when the search is
 * keyed (returns 1, the order in row->keys), else the records by
 * comparison (returns 0); -1 when out of memory. Insertion sort for the
 * short rows of small cells. */
static int sort_row(cell_row *row, const cell_search *s)
{
    int64_t n = row->count;
    if (n < 2)
        return 0;
    if (!s->keyed) {
        for (int64_t h = 1; h < n; h++) {
            cell_hit v = row->hits[h];
            int64_t at = h;
            for (; at > 0 && compare_hits(&row->hits[at - 1], &v) > 0; at--)
                row->hits[at] = row->hits[at - 1];
            row->hits[at] = v;
        }
        return 0;
    }
    if (row->key_capacity < n &&
        !prox_reserve(s->al, (void **)&row->keys, &row->key_capacity, n, sizeof *row->keys))
        return -1;
    for (int64_t h = 0; h < n; h++)
        row->keys[h] = (cell_key){row->hits[h].key, h};
    if (n > 48) {
        qsort(row->keys, (size_t)n, sizeof *row->keys, compare_keys);
        return 1;
    }
    for (int64_t h = 1; h < n; h++) {
        cell_key v = row->keys[h];
        int64_t at = h;
        for (; at > 0 && row->keys[at - 1].key > v.key; at--)
            row->keys[at] = row->keys[at - 1];
        row->keys[at] = v;
    }
    return 1;
}

/* The chunk's arrays hold at least `count` pairs. */
static bool part_reserve(cell_chunk *ch, int64_t count)
{
    prox_geometry *g = &ch->part;
    const prox_allocator *al = &g->allocator;
    int64_t keep = g->count, dim = g->dim;
    bool ok = true;
    if (g->fields & PROX_GEOMETRY_I)
        ok &= prox_grow(al, (void **)&g->i, &ch->capacity[0], count, keep, sizeof *g->i);
    if (g->fields & PROX_GEOMETRY_J)
        ok &= prox_grow(al, (void **)&g->j, &ch->capacity[1], count, keep, sizeof *g->j);
    if (g->fields & PROX_GEOMETRY_DISTANCE)
        ok &= prox_grow(al, (void **)&g->d, &ch->capacity[2], count, keep, sizeof *g->d);
    if (g->fields & PROX_GEOMETRY_VECTOR)
        ok &= prox_grow(al, (void **)&g->D, &ch->capacity[3], count * dim, keep * dim,
                        sizeof *g->D);
    if (g->fields & PROX_GEOMETRY_SHIFT)
        ok &= prox_grow(al, (void **)&g->S, &ch->capacity[4], count * dim, keep * dim,
                        sizeof *g->S);
    return ok;
}

/* Hit h of the row as pair p of the chunk. */
static void part_write(prox_geometry *g, int64_t p, prox_index i, const cell_hit *x)
{
    int dim = g->dim;
    if (g->fields == PROX_GEOMETRY_ALL && dim == 3) { /* ASE's "ijdDS" */
        g->i[p] = i;
        g->j[p] = x->j;
        g->d[p] = sqrt(x->d2);
        g->D[3 * p] = x->D[0];
        g->D[3 * p + 1] = x->D[1];
        g->D[3 * p + 2] = x->D[2];
        g->S[3 * p] = x->S[0];
        g->S[3 * p + 1] = x->S[1];
        g->S[3 * p + 2] = x->S[2];
        return;
    }
    if (g->i)
        g->i[p] = i;
    if (g->j)
        g->j[p] = x->j;
    if (g->d)
        g->d[p] = sqrt(x->d2);
    if (g->D)
        for (int k = 0; k < dim; k++)
            g->D[p * dim + k] = x->D[k];
    if (g->S)
        for (int k = 0; k < dim; k++)
            g->S[p * dim + k] = x->S[k];
}

/* The row of point i, sorted, appended to the chunk's arrays. */
static bool row_append(cell_chunk *ch, const cell_search *s, prox_index i)
{
    cell_row *row = &ch->row;
    prox_geometry *g = &ch->part;
    int keyed = sort_row(row, s);
    /* first reserve: room for rows like this one, a quarter more */
    int64_t want = g->count + row->count;
    if (g->count == 0 && row->count > 0)
        want = row->count * (ch->rows + 1) + (row->count * ch->rows) / 4;
    if (keyed < 0 || !part_reserve(ch, want))
        return false;
    for (int64_t h = 0; h < row->count; h++)
        part_write(g, g->count + h, i, &row->hits[keyed ? row->keys[h].at : h]);
    g->count += row->count;
    return true;
}

/* Rows [begin, end) in point order, each sorted by (j, S). */
/* Rows [begin, end): in point order, or with `row_count` in bin order
 * (slots), each row's length kept for the reorder (bin_order_gather). */
static void run_chunk(const cell_search *s, int64_t begin, int64_t end, int64_t *row_count,
                      cell_chunk *ch)
{
    ch->rows = end - begin;
    for (int64_t t = begin; t < end; t++) {
        int64_t si = row_count ? t : s->pts.slot[t];
        ch->row.count = 0;
        if (!visit_point(s, si, ch) ||
            (s->store && !row_append(ch, s, s->pts.index[si]))) {
            ch->status = PROX_ERR_NO_MEMORY;
            return;
        }
        ch->pairs += ch->row.count;
        if (row_count)
            row_count[si] = ch->row.count;
    }
}

/* Points from which rows run in bin order: neighbouring rows then read
 * neighbouring bins (cache), at the price of one reorder of the output. */
#define CELL_BIN_ORDER_MIN 4096

static void copy_part(void *to, const void *from, int64_t at, int64_t n, size_t size)
{
    if (to && from && n > 0)
        memcpy((char *)to + (size_t)at * size, from, (size_t)n * size);
}

static void copy_row(prox_geometry *to, int64_t at, const prox_geometry *from, int64_t src,
                     int64_t n)
{
    int64_t dim = to->dim;
    copy_part(to->i, from->i ? from->i + src : NULL, at, n, sizeof *to->i);
    copy_part(to->j, from->j ? from->j + src : NULL, at, n, sizeof *to->j);
    copy_part(to->d, from->d ? from->d + src : NULL, at, n, sizeof *to->d);
    copy_part(to->D, from->D ? from->D + src * dim : NULL, at * dim, n * dim, sizeof *to->D);
    copy_part(to->S, from->S ? from->S + src * dim : NULL, at * dim, n * dim, sizeof *to->S);
}

static prox_status alloc_output(prox_geometry *g, int64_t n, int dim)
{
    const prox_allocator *al = &g->allocator;
    bool ok = true;
    if (g->fields & PROX_GEOMETRY_I)
        ok &= (g->i = prox_alloc_array(al, n, sizeof *g->i)) != NULL;
    if (g->fields & PROX_GEOMETRY_J)
        ok &= (g->j = prox_alloc_array(al, n, sizeof *g->j)) != NULL;
    if (g->fields & PROX_GEOMETRY_DISTANCE)
        ok &= (g->d = prox_alloc_array(al, n, sizeof *g->d)) != NULL;
    if (g->fields & PROX_GEOMETRY_VECTOR)
        ok &= (g->D = prox_alloc_array(al, n * dim, sizeof *g->D)) != NULL;
    if (g->fields & PROX_GEOMETRY_SHIFT)
        ok &= (g->S = prox_alloc_array(al, n * dim, sizeof *g->S)) != NULL;
    g->count = n;
    g->dim = dim;
    if (!ok) {
        geometry_release(g);
        return prox_fail(PROX_ERR_NO_MEMORY, "geometry: no memory for %lld pairs", (long long)n);
    }
    return PROX_OK;
}

/* The chunks' arrays, in chunk order, as the output: a single chunk's
 * arrays are handed over as they are. */
static prox_status gather(cell_chunk *ch, int64_t chunks, int64_t total, prox_geometry *out)
{
    int dim = ch[0].part.dim;
    if (chunks == 1) {
        *out = ch[0].part;
        memset(&ch[0].part, 0, sizeof ch[0].part);
        return PROX_OK;
    }
    prox_status st = alloc_output(out, total, dim);
    for (int64_t k = 0, at = 0; !st && k < chunks; at += ch[k].part.count, k++) {
        const prox_geometry *g = &ch[k].part;
        copy_part(out->i, g->i, at, g->count, sizeof *g->i);
        copy_part(out->j, g->j, at, g->count, sizeof *g->j);
        copy_part(out->d, g->d, at, g->count, sizeof *g->d);
        copy_part(out->D, g->D, at * dim, g->count * dim, sizeof *g->D);
        copy_part(out->S, g->S, at * dim, g->count * dim, sizeof *g->S);
    }
    return st;
}

/* Rows found in bin order (lengths per slot), placed in point order:
 * each row's place from the lengths taken in point order, then every
 * chunk's rows copied there. */
static prox_status bin_order_gather(const cell_search *s, cell_chunk *ch, int64_t chunks,
                                    const int64_t *lengths, int64_t total, int threads,
                                    prox_geometry *out)
{
    int64_t n = s->count;
    int64_t *place = prox_alloc_array(s->al, n, sizeof *place);
    if (!place)
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory to order %lld rows", (long long)n);
    prox_status st = alloc_output(out, total, s->frame.dim);
    if (st) {
        prox_free(s->al, place);
        return st;
    }
    for (int64_t i = 0, at = 0; i < n; i++) {
        int64_t si = s->pts.slot[i];
        place[si] = at;
        at += lengths[si];
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
    for (int64_t k = 0; k < chunks; k++) {
        int64_t begin = n * k / chunks, end = n * (k + 1) / chunks, src = 0;
        for (int64_t si = begin; si < end; si++) {
            copy_row(out, place[si], &ch[k].part, src, lengths[si]);
            src += lengths[si];
        }
    }
    prox_free(s->al, place);
    return PROX_OK;
}

static int64_t chunk_count_for(int64_t n, int threads)
{
    if (threads <= 1 || n < 256)
        return 1;
    int64_t chunks = (int64_t)threads * PROX_PARTS_PER_THREAD;
    return chunks < n / 64 ? chunks : (n / 64 > 0 ? n / 64 : 1);
}

/* Runs the rows in chunks and gathers them into `out` (NULL: count). */
static prox_status search_rows(cell_search *s, int threads, prox_geometry *out, prox_stats *st)
{
    int64_t chunks = chunk_count_for(s->count, threads);
    cell_chunk *ch = prox_alloc_array(s->al, chunks, sizeof *ch);
    if (!ch)
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld chunks", (long long)chunks);
    memset(ch, 0, (size_t)chunks * sizeof *ch);
    for (int64_t k = 0; k < chunks; k++) {
        prox_geometry_init(&ch[k].part, out ? out->fields : PROX_GEOMETRY_I,
                           out ? &out->allocator : s->al);
        ch[k].part.dim = s->frame.dim;
    }
    int64_t n = s->count;
    int64_t *lengths = NULL; /* rows in bin order: their lengths per slot */
    if (out && n >= CELL_BIN_ORDER_MIN &&
        !(lengths = prox_alloc_array(s->al, n, sizeof *lengths))) {
        prox_free(s->al, ch);
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld rows", (long long)n);
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
    for (int64_t k = 0; k < chunks; k++)
        run_chunk(s, n * k / chunks, n * (k + 1) / chunks, lengths, &ch[k]);
    prox_status status = PROX_OK;
    int64_t total = 0, candidates = 0;
    for (int64_t k = 0; k < chunks; k++) {
        if (ch[k].status && !status)
            status = prox_fail(ch[k].status, "cell: no memory for the pairs");
        total += ch[k].pairs;
        candidates += ch[k].candidates;
    }
    if (!status && out)
        status = lengths ? bin_order_gather(s, ch, chunks, lengths, total, threads, out)
                         : gather(ch, chunks, total, out);
    prox_free(s->al, lengths);
    if (st) {
        st->pairs = total;
        st->candidates = candidates;
    }
    for (int64_t k = 0; k < chunks; k++) {
        prox_free(s->al, ch[k].row.hits);
        prox_free(s->al, ch[k].row.keys);
        prox_free(s->al, ch[k].row.slots);
        geometry_release(&ch[k].part);
    }
    prox_free(s->al, ch);
    return status;
}

/* The screen's radius: the rule's, widened by the rounding of the wrapped
 * coordinates and of the bin shifts (each a few ulps of the largest
 * coordinate or shifted cell), so that it never drops a pair of the rule. */
static double screen_radius(const cell_search *s, const cell_extent *e)
{
    double rows = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            rows += fabs(s->frame.m[r][k]);
    double reach = 0;
    for (int k = 0; k < 3; k++)
        reach = fmax(reach, (double)s->bins.n[k] / (double)s->bins.nb[k] + 2);
    double err = 16 * DBL_EPSILON * (e->xmax + (e->fbig + reach + 1) * rows);
    return sqrt(s->r2) * (1 + 0x1p-40) + 4 * err;
}

/* The span of the shifts a row may hold (cell_search.key_range): bin
 * images from the stencil, wraps from the points. */
static void plan_keys(cell_search *s)
{
    double span = (double)(s->count > 0 ? s->count : 1);
    for (int k = 0; k < 3; k++) {
        int64_t wlo = 0, whi = 0;
        for (int64_t t = 0; t < s->count; t++) {
            wlo = s->pts.w[k][t] < wlo ? s->pts.w[k][t] : wlo;
            whi = s->pts.w[k][t] > whi ? s->pts.w[k][t] : whi;
        }
        int64_t nb = s->bins.nb[k], n = s->bins.n[k];
        bool periodic = s->frame.pbc[k];
        s->image_lo[k] = periodic ? -((n + nb - 1) / nb) : 0;
        int64_t image_hi = periodic ? (nb - 1 + n) / nb : 0;
        s->w_max[k] = whi;
        s->key_range[k] = (image_hi - s->image_lo[k]) + (whi - wlo) + 1;
        span *= (double)s->key_range[k];
    }
    s->keyed = span < 0x1p62;
}

static prox_status cell_run(const prox_points *points, const prox_cell_desc *desc,
                            prox_geometry *out, prox_stats *stats)
{
    cell_search s;
    memset(&s, 0, sizeof s);
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    s.al = &al;
    prox_status st = prox_cell_frame_make(desc, points->dim, &s.frame);
    cell_extent e;
    if (!st)
        st = measure(points, &s.frame, &e);
    if (!st)
        st = prox_cell_bins_plan(&s.frame, desc->cutoff, points->count, e.fmin, e.fmax,
                                 fraction_error(&s.frame, &e), &s.bins);
    if (st)
        return st;
    s.count = points->count;
    s.r2 = desc->cutoff * desc->cutoff;
    s.full = desc->full;
    s.self_interaction = desc->self_interaction;
    s.store = out != NULL;
    double screen = screen_radius(&s, &e);
    s.screen2 = screen * screen;
    if (!points_alloc(&s.pts, s.count, s.bins.total, &al)) {
        points_free(&s.pts, &al);
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld points in %lld bins",
                         (long long)s.count, (long long)s.bins.total);
    }
    sort_points(&s, points);
    plan_keys(&s);
    st = search_rows(&s, prox_threads_resolve(desc->threads), out, stats);
    if (stats) {
        stats->cells = s.bins.total;
        stats->method = "cell.bins";
    }
    points_free(&s.pts, &al);
    return st;
}

prox_status prox_cell_pairs(const prox_points *points, const prox_cell_desc *desc,
                            prox_geometry *out, prox_stats *stats)
{
    prox_status st = prox_simd_check();
    if (st)
        return st;
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "prox_cell_pairs: options are NULL; start from "
                                           "prox_default_cell_desc()");
    if (!points)
        return prox_fail(PROX_ERR_INVALID, "prox_cell_pairs: points are NULL");
    if (out)
        geometry_release(out);
    st = check_desc(desc);
    if (!st)
        st = prox_points_check(points, "points");
    if (!st)
        st = cell_run(points, desc, out, stats);
    return st;
}
