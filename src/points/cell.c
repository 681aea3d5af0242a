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
    prox_index j;
    int32_t S[3];
    double D[3];
    double d2;
} cell_hit;

/* Hits of one chunk of rows, in row order. */
typedef struct cell_chunk {
    cell_hit *hits;
    int64_t count, capacity;
    prox_index *row;  /* row of each hit */
    int64_t row_capacity;
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

static bool chunk_push(cell_chunk *ch, const cell_search *s, prox_index row, const cell_hit *h)
{
    if (ch->count == ch->capacity) {
        if (!prox_grow(s->al, (void **)&ch->hits, &ch->capacity, ch->count + 1, ch->count,
                       sizeof *ch->hits))
            return false;
        int64_t keep = ch->count;
        if (!prox_grow(s->al, (void **)&ch->row, &ch->row_capacity, ch->capacity, keep,
                       sizeof *ch->row))
            return false;
    }
    ch->hits[ch->count] = *h;
    ch->row[ch->count] = row;
    ch->count++;
    return true;
}

/* The candidates of slots [lo, hi) for query point i (slot si), whose
 * wrapped coordinates are qx, seen through the bin shift s. */
static bool test_range(const cell_search *s, int64_t si, const double *qx, const int32_t *shift,
                       int64_t lo, int64_t hi, cell_chunk *ch)
{
    const cell_points *q = &s->pts;
    const prox_cell_frame *c = &s->frame;
    prox_index i = q->index[si];
    for (int64_t t = lo; t < hi; t++) {
        double dx = q->xw[0][t] - qx[0], dy = q->xw[1][t] - qx[1], dz = q->xw[2][t] - qx[2];
        if (!(dx * dx + dy * dy + dz * dz <= s->screen2))
            continue;
        cell_hit h;
        h.j = q->index[t];
        for (int k = 0; k < 3; k++)
            h.S[k] = shift[k] + q->w[k][si] - q->w[k][t];
        if (!oriented(s, i, h.j, h.S))
            continue;
        /* the rule of cell.h, term by term */
        for (int k = 0; k < 3; k++)
            h.D[k] = (q->xo[k][t] - q->xo[k][si]) +
                     (((double)h.S[0] * c->m[0][k] + (double)h.S[1] * c->m[1][k]) +
                      (double)h.S[2] * c->m[2][k]);
        h.d2 = h.D[0] * h.D[0] + h.D[1] * h.D[1] + h.D[2] * h.D[2];
        if (h.d2 <= s->r2 && !chunk_push(ch, s, i, &h))
            return false;
    }
    ch->candidates += hi - lo;
    return true;
}

/* floor(t / n) and t - n * floor(t / n) for n > 0. */
static void wrap_bin(int64_t t, int64_t n, int64_t *bin, int32_t *image)
{
    int64_t im = t >= 0 ? t / n : -((-t + n - 1) / n);
    *image = (int32_t)im;
    *bin = t - im * n;
}

/* Every stencil bin of point slot si: for each (b1, b2) offset, the first
 * axis' bins as runs that share one image. */
static bool visit_point(const cell_search *s, int64_t si, cell_chunk *ch)
{
    const prox_cell_bins *b = &s->bins;
    const prox_cell_frame *c = &s->frame;
    const cell_points *q = &s->pts;
    int64_t bin = q->bin[q->index[si]];
    int64_t b0 = bin % b->nb[0], b1 = (bin / b->nb[0]) % b->nb[1], b2 = bin / (b->nb[0] * b->nb[1]);
    double xw[3] = {q->xw[0][si], q->xw[1][si], q->xw[2][si]};
    for (int64_t o2 = -b->n[2]; o2 <= b->n[2]; o2++) {
        int64_t t2;
        int32_t s2;
        wrap_bin(b2 + o2, b->nb[2], &t2, &s2);
        if (!c->pbc[2] && s2 != 0)
            continue;
        for (int64_t o1 = -b->n[1]; o1 <= b->n[1]; o1++) {
            int64_t t1;
            int32_t s1;
            wrap_bin(b1 + o1, b->nb[1], &t1, &s1);
            if (!c->pbc[1] && s1 != 0)
                continue;
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
                    for (int k = 0; k < 3; k++)
                        qx[k] = xw[k] - (((double)s0 * c->m[0][k] + (double)s1 * c->m[1][k]) +
                                         (double)s2 * c->m[2][k]);
                    int64_t lo = q->start[row + t0], hi = q->start[row + t0 + (last - t) + 1];
                    if (!test_range(s, si, qx, shift, lo, hi, ch))
                        return false;
                }
                t = last + 1;
            }
        }
    }
    return true;
}

static int compare_hits(const void *pa, const void *pb)
{
    const cell_hit *a = pa, *b = pb;
    if (a->j != b->j)
        return a->j < b->j ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k] ? -1 : 1;
    return 0;
}

/* Rows [begin, end) in point order, each sorted by (j, S). */
static void run_chunk(const cell_search *s, int64_t begin, int64_t end, cell_chunk *ch)
{
    for (int64_t i = begin; i < end; i++) {
        int64_t first = ch->count;
        if (!visit_point(s, s->pts.slot[i], ch)) {
            ch->status = PROX_ERR_NO_MEMORY;
            return;
        }
        ch->pairs += ch->count - first;
        if (!s->store)
            ch->count = first;
        else if (ch->count - first > 1)
            qsort(ch->hits + first, (size_t)(ch->count - first), sizeof *ch->hits, compare_hits);
    }
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

static void write_chunk(prox_geometry *g, const cell_chunk *ch, int64_t at)
{
    int dim = g->dim;
    for (int64_t h = 0; h < ch->count; h++) {
        const cell_hit *x = &ch->hits[h];
        int64_t p = at + h;
        if (g->i)
            g->i[p] = ch->row[h];
        if (g->j)
            g->j[p] = x->j;
        if (g->d)
            g->d[p] = sqrt(x->d2);
        for (int k = 0; k < dim; k++) {
            if (g->D)
                g->D[p * dim + k] = x->D[k];
            if (g->S)
                g->S[p * dim + k] = x->S[k];
        }
    }
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
    int64_t n = s->count;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
    for (int64_t k = 0; k < chunks; k++)
        run_chunk(s, n * k / chunks, n * (k + 1) / chunks, &ch[k]);
    prox_status status = PROX_OK;
    int64_t total = 0, candidates = 0;
    for (int64_t k = 0; k < chunks; k++) {
        if (ch[k].status && !status)
            status = prox_fail(ch[k].status, "cell: no memory for the pairs");
        total += ch[k].pairs;
        candidates += ch[k].candidates;
    }
    if (!status && out) {
        status = alloc_output(out, total, s->frame.dim);
        for (int64_t k = 0, at = 0; !status && k < chunks; at += ch[k].count, k++)
            write_chunk(out, &ch[k], at);
    }
    if (st) {
        st->pairs = total;
        st->candidates = candidates;
    }
    for (int64_t k = 0; k < chunks; k++) {
        prox_free(s->al, ch[k].hits);
        prox_free(s->al, ch[k].row);
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
