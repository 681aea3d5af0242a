/* cell_knn.c: the k nearest images in a periodic cell of any shape
 * (prox_cell_knn, prox/cell.h): candidates from the open kNN search, then
 * one filter by the cell's rule (docs/design.md, "k nearest neighbours in
 * a cell").
 *
 * The points' images near the cell (every image whose fractions lie
 * within a margin m of [0, 1) on each periodic axis) are laid out as
 * points of their own and indexed by the open search (knn_build.c,
 * knn_search.c). Each query, wrapped into the cell, asks that index for
 * K > k candidates within m; each candidate (j, T) is then measured by
 * cell.h's rule, D = (x_j - x_q) + S.cell with S = T - U (U the query's
 * wrap), and the k best kept by (squared distance, j, S).
 *
 * Invariant: the open search measures the difference of two rounded
 * images, not the rule's vector, so the two distances differ by at most
 * eps (rounding_bound). A query's answer is proven when its k-th rule
 * distance plus eps lies strictly below the farthest candidate returned
 * and below the margin: every image within that distance by the rule is
 * then among the candidates. A query that is not proven asks again, for
 * twice the candidates (near ties: a lattice's shells) or over twice the
 * margin (its k-th image beyond the margin).
 * Risk: eps must bound both computations; it is deliberately generous,
 * which costs a retry only for images within eps of the k-th. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/radix_sort.h"
#include "core/threads.h"
#include "core/views.h"
#include "points/cell_geometry.h"
#include "points/knn_build.h"
#include "points/knn_result.h"
#include "prox/cell.h"
#include "prox/grid.h"

prox_cell_knn_desc prox_default_cell_knn_desc(void)
{
    return (prox_cell_knn_desc){.k = 1};
}

/* The search's fixed inputs: the caller's cell rows (the rule's), the
 * frame (fractions, heights), the points' and queries' wraps. */
typedef struct cell_knn {
    const prox_points *points, *queries;
    bool self;             /* queries are the points: (i, i, 0) left out unless include_self */
    bool include_self;
    int dim, k, threads, periodic;
    double r2;             /* max_radius^2, or +inf */
    double max_radius;     /* 0 = none */
    double cell[3][3];
    prox_cell_frame frame;
    double xmax;           /* largest |coordinate| of points and queries */
    double cell_sum;       /* sum of |cell entries|: bounds |S.cell| per unit of S */
    double ferr;           /* rounding bound of a fraction of a point or query */
    int32_t *wrap;         /* 3 per point: -floor(fraction) on periodic axes */
    double *q;             /* dim per query: its position wrapped into the cell */
    int32_t *U;            /* 3 per query: the wrap that took it there */
    int64_t wrap_max;      /* largest |wrap| entry of points and queries */
    double lo[3], span[3]; /* the wrapped fractions' range on each axis ([0, 1) if periodic) */
    uint32_t *query_order; /* the queries by bin of their wrapped position (spatial_orders) */
    double open_lo[3], open_hi[3]; /* the points' coordinates along the open rows */
    double *gap2;          /* per query: a lower bound on the squared distance, along the
                              open rows, to every point (NULL: no open row) */
    int64_t budget;        /* the most images a margin may lay out */
    const prox_allocator *al;
} cell_knn;

/* What the rule needs of an image, in one record (the candidates of a
 * query are read at random): the caller's position of its point,
 * widened, the shift T applied to it, and the point. */
typedef struct image_record {
    double x[3];
    int32_t T[3];
    prox_index of;
} image_record;

/* Images of the points within `margin` of the cell: positions, the point
 * each is of, and the shift T applied to the caller's position. */
typedef struct cell_images {
    double margin;
    int64_t count, tmax;   /* tmax: largest |T| entry */
    double *y;             /* dim per image: its position, for the index (freed once built) */
    image_record *rec;
} cell_images;

/* x + T.cell, component k, summed as cell.h's rule sums S.cell. */
static inline double shifted(const double (*c)[3], const double *x, const int32_t *T, int k)
{
    return x[k] + (((double)T[0] * c[0][k] + (double)T[1] * c[1][k]) + (double)T[2] * c[2][k]);
}

/* A bound on |rule distance - open search's distance| for images with
 * shifts up to the images' tmax and distances up to d (docs/design.md):
 * each vector component is a handful of roundings of terms below xmax or
 * |T|.cell_sum, and the norms add a relative error of a few units. */
static double rounding_bound(const cell_knn *s, const cell_images *im, double d)
{
    const double u = 0x1p-53;
    double shifts = (double)(im->tmax + 2 * s->wrap_max + 2);
    return 64 * u * (s->xmax + shifts * s->cell_sum) + 32 * u * d;
}

/* Fraction reach of the margin along periodic axis a: the margin over the
 * height, widened by the rounding of fractions and positions. */
static double axis_reach(const cell_knn *s, double margin, double eps, int a)
{
    return (margin + eps) / s->frame.height[a] * (1 + 0x1p-20) + 4 * s->ferr + 0x1p-30;
}

/* The range [lo, hi] of offsets G along each axis for a point whose wrapped
 * fractions are g; the image count. */
static int64_t offsets_of(const cell_knn *s, const double *g, const double *reach, int32_t *lo,
                          int32_t *hi)
{
    int64_t count = 1;
    for (int a = 0; a < 3; a++) {
        lo[a] = hi[a] = 0;
        if (s->frame.pbc[a]) {
            lo[a] = (int32_t)ceil(-reach[a] - g[a]);
            hi[a] = (int32_t)floor(1 + reach[a] - g[a]);
            count *= hi[a] >= lo[a] ? hi[a] - lo[a] + 1 : 0;
        }
    }
    return count;
}

/* The wrapped fractions of point j (its fractions plus its wrap). */
static void wrapped_fractions(const cell_knn *s, int64_t j, double *x, double *g)
{
    prox_cell_load(s->points, j, x);
    for (int a = 0; a < 3; a++)
        g[a] = s->frame.pbc[a] ? prox_cell_fraction(&s->frame, x, a) + s->wrap[3 * j + a] : 0;
}

static void images_free(cell_images *im, const prox_allocator *al)
{
    prox_free(al, im->y);
    prox_free(al, im->rec);
    memset(im, 0, sizeof *im);
}

/* ceil(length / height), held below 2^40 (larger ones are refused by the
 * reach they give). */
static int64_t cells_within(double length, double height)
{
    double c = ceil(length / height);
    return c < 0x1p40 ? (int64_t)c : (int64_t)1 << 40;
}

/* The reach in fractions of the margin along each periodic axis, and the
 * rounding bound eps of images that far. */
static void image_reach(const cell_knn *s, double margin, double *reach, double *eps)
{
    *eps = 0;
    for (int a = 0; a < 3; a++)
        reach[a] = 0;
    if (!s->periodic)
        return;
    cell_images bound = {0};
    for (int a = 0; a < 3; a++)
        if (s->frame.pbc[a]) {
            int64_t t = cells_within(margin, s->frame.height[a]) + 2;
            bound.tmax = t > bound.tmax ? t : bound.tmax;
        }
    *eps = rounding_bound(s, &bound, 2 * margin);
    for (int a = 0; a < 3; a++)
        reach[a] = s->frame.pbc[a] ? axis_reach(s, margin, *eps, a) : 0;
}

/* Point j's images, written from `at` on: positions, the caller's
 * position and the shifts. Returns the largest |T| entry. */
static int64_t images_of_point(const cell_knn *s, int64_t j, const double *reach,
                               cell_images *im, int64_t at)
{
    const double(*c)[3] = (const double(*)[3])s->cell;
    double x[3], g[3];
    int32_t lo[3], hi[3], G[3];
    wrapped_fractions(s, j, x, g);
    offsets_of(s, g, reach, lo, hi);
    int64_t tmax = 0;
    for (G[0] = lo[0]; G[0] <= hi[0]; G[0]++)
        for (G[1] = lo[1]; G[1] <= hi[1]; G[1]++)
            for (G[2] = lo[2]; G[2] <= hi[2]; G[2]++, at++) {
                image_record *r = im->rec + at;
                int32_t *T = r->T;
                for (int a = 0; a < 3; a++) {
                    T[a] = s->wrap[3 * j + a] + G[a];
                    int64_t size = T[a] < 0 ? -(int64_t)T[a] : T[a];
                    tmax = size > tmax ? size : tmax;
                }
                for (int k = 0; k < s->dim; k++)
                    im->y[at * s->dim + k] = shifted(c, x, T, k);
                memcpy(r->x, x, sizeof r->x);
                r->of = (prox_index)j;
            }
    return tmax;
}

static bool images_alloc(const cell_knn *s, int64_t count, cell_images *im)
{
    im->y = prox_alloc_array(s->al, count * s->dim, sizeof *im->y);
    im->rec = prox_alloc_array(s->al, count, sizeof *im->rec);
    return im->y && im->rec;
}

/* Counts, then lays out, the images within `margin`: each point's images
 * in the order of their offsets, the points in index order (the index
 * then puts them in its cell order: images_in_index_order). */
static prox_status images_build(const cell_knn *s, double margin, cell_images *im)
{
    double reach[3], eps;
    image_reach(s, margin, reach, &eps);
    for (int a = 0; a < 3; a++)
        if (!(reach[a] < 0x1p29))
            return prox_fail(PROX_ERR_RANGE,
                             "kNN in a cell: the images within %g of the cell (rounding %g at "
                             "coordinates up to %g) span more than 2^29 cells along axis %d",
                             margin, eps, s->xmax, a);
    int64_t n = s->points->count, count = 0;
    int64_t *start = prox_alloc_array(s->al, n, sizeof *start);
    if (!start)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld points",
                         (long long)n);
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && n > 4096) schedule(static)
    for (int64_t j = 0; j < n; j++) {
        double x[3], g[3];
        int32_t lo[3], hi[3];
        wrapped_fractions(s, j, x, g);
        start[j] = offsets_of(s, g, reach, lo, hi);
    }
    for (int64_t j = 0; j < n; j++) { /* the counts become starts */
        int64_t c = start[j];
        start[j] = count;
        count += c;
    }
    images_free(im, s->al);
    if (count > s->budget) {
        prox_free(s->al, start);
        return prox_fail(PROX_ERR_RANGE,
                         "kNN in a cell: k = %d needs the images within %g of the cell, "
                         "%lld of them (at most %lld for %lld points)",
                         s->k, margin, (long long)count, (long long)s->budget,
                         (long long)s->points->count);
    }
    if (!images_alloc(s, count, im)) {
        images_free(im, s->al);
        prox_free(s->al, start);
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld images",
                         (long long)count);
    }
    int64_t tmax = 0;
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && n > 4096) \
    schedule(static) reduction(max : tmax)
    for (int64_t j = 0; j < n; j++) {
        int64_t t = images_of_point(s, j, reach, im, start[j]);
        tmax = t > tmax ? t : tmax;
    }
    prox_free(s->al, start);
    im->margin = margin;
    im->count = count;
    im->tmax = tmax;
    return PROX_OK;
}

/* -floor(fraction) of x on each periodic axis (0 elsewhere). */
static void wrap_of(const cell_knn *s, const double *x, int32_t *w)
{
    for (int a = 0; a < 3; a++)
        w[a] = s->frame.pbc[a] ? -(int32_t)floor(prox_cell_fraction(&s->frame, x, a)) : 0;
}

static int64_t wrap_size(const int32_t *w)
{
    int64_t m = 0;
    for (int a = 0; a < 3; a++) {
        int64_t t = w[a] < 0 ? -(int64_t)w[a] : w[a];
        m = t > m ? t : m;
    }
    return m;
}

/* A lower bound on the squared distance from x to every point along the
 * open rows: the distance to the points' range there, less its rounding
 * (the open rows are orthonormal, frame_rows, so their fractions are
 * lengths). */
static double open_gap2(const cell_knn *s, const double *x)
{
    double slack = 64 * 0x1p-53 * s->xmax + 4 * s->ferr, sum = 0;
    for (int a = 0; a < s->dim; a++) {
        if (s->frame.pbc[a])
            continue;
        double f = prox_cell_fraction(&s->frame, x, a);
        double gap = f < s->open_lo[a] ? s->open_lo[a] - f : f > s->open_hi[a] ? f - s->open_hi[a] : 0;
        gap = gap > slack ? gap - slack : 0;
        sum += gap * gap;
    }
    return sum;
}

/* The wraps of the points and the wrapped queries. */
static prox_status wraps_make(cell_knn *s)
{
    int64_t n = s->points->count, nq = s->queries->count;
    s->wrap = prox_alloc_array(s->al, 3 * n, sizeof *s->wrap);
    s->U = prox_alloc_array(s->al, 3 * nq, sizeof *s->U);
    s->q = prox_alloc_array(s->al, nq * s->dim, sizeof *s->q);
    bool open = false;
    for (int a = 0; a < s->dim; a++)
        open |= !s->frame.pbc[a];
    if (open && s->periodic)
        s->gap2 = prox_alloc_array(s->al, nq, sizeof *s->gap2);
    if (!s->wrap || !s->U || !s->q || (open && s->periodic && !s->gap2))
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld points",
                         (long long)(n + nq));
    const double(*c)[3] = (const double(*)[3])s->cell;
    double x[3];
    for (int64_t j = 0; j < n; j++) {
        prox_cell_load(s->points, j, x);
        wrap_of(s, x, s->wrap + 3 * j);
        int64_t w = wrap_size(s->wrap + 3 * j);
        s->wrap_max = w > s->wrap_max ? w : s->wrap_max;
    }
    for (int64_t i = 0; i < nq; i++) {
        prox_cell_load(s->queries, i, x);
        if (s->gap2)
            s->gap2[i] = open_gap2(s, x);
        wrap_of(s, x, s->U + 3 * i);
        int64_t w = wrap_size(s->U + 3 * i);
        s->wrap_max = w > s->wrap_max ? w : s->wrap_max;
        for (int k = 0; k < s->dim; k++)
            s->q[i * s->dim + k] = shifted(c, x, s->U + 3 * i, k);
    }
    return PROX_OK;
}

/* The bin of a position with wrap w (w = 0 on open axes) among nb[a] per
 * axis over [lo, lo + span), row-major with the first axis fastest, as
 * the index orders its cells (knn_key), so that a chunk of queries reads
 * one slab of the index. */
static uint32_t bin_key(const cell_knn *s, const int64_t *nb, const double *x, const int32_t *w)
{
    uint64_t key = 0;
    for (int a = s->dim - 1; a >= 0; a--) {
        double u = (prox_cell_fraction(&s->frame, x, a) + w[a] - s->lo[a]) / s->span[a];
        double b = floor(u * (double)nb[a]);
        b = b >= 0 ? b : 0;
        key = key * (uint64_t)nb[a] + (uint64_t)(b < (double)nb[a] ? b : (double)(nb[a] - 1));
    }
    return (uint32_t)key;
}

/* `count` positions of p by bin, into order (stable: equal bins keep
 * index order). */
static bool order_by_bins(const cell_knn *s, const prox_points *p, const int32_t *wraps,
                          const int64_t *nb, int64_t bins, uint32_t *order)
{
    uint32_t *keys = prox_alloc_array(s->al, p->count, sizeof *keys);
    uint32_t *starts = prox_alloc_array(s->al, bins + 1, sizeof *starts);
    bool ok = keys && starts;
    double x[3];
    for (int64_t i = 0; ok && i < p->count; i++) {
        prox_cell_load(p, i, x);
        keys[i] = bin_key(s, nb, x, wraps + 3 * i);
    }
    if (ok)
        prox_counting_sort_u32(keys, p->count, bins, starts, order, NULL, 1);
    prox_free(s->al, keys);
    prox_free(s->al, starts);
    return ok;
}

/* The queries in spatial order: bins of about two queries over the
 * wrapped positions. The order decides nothing in the output; it keeps
 * each chunk's reads of the images and their index local. */
static prox_status spatial_orders(cell_knn *s)
{
    int64_t nq = s->queries->count;
    double target = (double)(nq > 2 ? nq / 2 : 1);
    target = target < (double)(1 << 21) ? target : (double)(1 << 21);
    int64_t nb[3] = {1, 1, 1}, bins = 1;
    for (int a = 0; a < s->dim; a++) {
        double per = floor(pow(target, 1.0 / s->dim));
        nb[a] = per >= 1 ? (int64_t)per : 1;
        bins *= nb[a];
    }
    s->query_order = prox_alloc_array(s->al, nq, sizeof *s->query_order);
    bool ok = s->query_order && order_by_bins(s, s->queries, s->U, nb, bins, s->query_order);
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory to order %lld queries",
                          (long long)nq);
}

/* One candidate measured by the rule. */
typedef struct ranked {
    double d2;
    prox_index j;
    int32_t S[3];
} ranked;

static inline bool ranks_before(const ranked *a, const ranked *b)
{
    if (a->d2 != b->d2)
        return a->d2 < b->d2;
    if (a->j != b->j)
        return a->j < b->j;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k];
    return false;
}

/* The candidates of query i measured by the rule, filtered (self,
 * max_radius) and sorted into best[0 .. return). They arrive in the open
 * search's order, nearly the rule's, so an insertion sort is short. */
static int rank_candidates(const cell_knn *s, const cell_images *im, int64_t i,
                           const prox_index *cand, int count, ranked *best)
{
    const double(*c)[3] = (const double(*)[3])s->cell;
    double xi[3];
    prox_cell_load(s->queries, i, xi);
    const int32_t *U = s->U + 3 * i;
    int kept = 0;
    for (int t = 0; t < count; t++) {
        ranked r;
        const image_record *rec = im->rec + cand[t];
        r.j = rec->of;
        const int32_t *T = rec->T;
        for (int a = 0; a < 3; a++)
            r.S[a] = T[a] - U[a];
        if (s->self && !s->include_self && r.j == (prox_index)i && r.S[0] == 0 && r.S[1] == 0 &&
            r.S[2] == 0)
            continue;
        const double *xj = rec->x;
        double D[3];
        for (int k = 0; k < 3; k++)
            D[k] = (xj[k] - xi[k]) + (((double)r.S[0] * c[0][k] + (double)r.S[1] * c[1][k]) +
                                      (double)r.S[2] * c[2][k]);
        r.d2 = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
        if (!(r.d2 <= s->r2))
            continue;
        int at = kept++;
        while (at > 0 && ranks_before(&r, &best[at - 1])) {
            best[at] = best[at - 1];
            at--;
        }
        best[at] = r;
    }
    return kept;
}

enum { PROVEN = 0, NEEDS_MORE = 1, NEEDS_WIDER = 2 };

/* Whether query i's best k are proven (the module's invariant), and if
 * not, what would prove them. */
static int verdict(const cell_knn *s, const cell_images *im, const ranked *best, int kept,
                   int asked, int count, double farthest, int64_t i)
{
    double bound = kept >= s->k ? sqrt(best[s->k - 1].d2)
                   : s->max_radius > 0 ? s->max_radius
                                       : INFINITY;
    if (!s->periodic && count < asked)
        return PROVEN; /* open axes only: every point was a candidate */
    double d = (s->periodic ? im->margin : 0) + (isfinite(bound) ? bound : 0);
    double eps = rounding_bound(s, im, d);
    double reach = bound + eps;
    int need = 0;
    if (count == asked && !(reach < farthest))
        need |= NEEDS_MORE;
    /* an image left out lies beyond the margin in the periodic rows' span
     * and at least the query's gap along the open rows */
    double cover = s->gap2 ? sqrt(im->margin * im->margin + s->gap2[i]) : im->margin;
    if (s->periodic && !(reach < cover))
        need |= NEEDS_WIDER;
    return need;
}

/* Query i's row of the result: its best k, padded. */
static void write_row(const cell_knn *s, const ranked *best, int kept, int64_t i,
                      prox_knn_result *out)
{
    int k = s->k, dim = s->dim, real = kept < k ? kept : k;
    prox_index *ind = out->indices + i * k;
    double *dist = out->distances + i * k;
    int32_t *S = out->shifts + i * k * dim;
    for (int t = 0; t < k; t++) {
        ind[t] = t < real ? best[t].j : (prox_index)s->points->count;
        dist[t] = t < real ? sqrt(best[t].d2) : INFINITY;
        for (int a = 0; a < dim; a++)
            S[t * dim + a] = t < real ? best[t].S[a] : 0;
    }
    out->counts[i] = real;
}

/* One round over the pending queries: ask the index for `asked`
 * candidates each, write the proven rows, keep the others pending and
 * return what they need (NEEDS_* bits). */
typedef struct round_state {
    int64_t *pending, count;
    int need;
    int64_t candidates;
    int64_t bytes;         /* the largest images and index held */
} round_state;

/* Queries per call of the index: their candidates stay in cache until
 * ranked. */
#define CELL_KNN_CHUNK 32768

/* Ranks the candidates of pending[0 .. m) (one chunk), writes the proven
 * rows and marks the others in need[]. */
static int64_t rank_chunk(const cell_knn *s, const cell_images *im, const prox_knn_result *cand,
                          const int64_t *pending, int64_t m, int asked, ranked *scratch,
                          int8_t *need, prox_knn_result *out)
{
    int64_t candidates = 0;
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && m > 256) \
    schedule(dynamic, 256) reduction(+ : candidates)
    for (int64_t t = 0; t < m; t++) {
        ranked *best = scratch + (int64_t)omp_get_thread_num() * asked;
        int count = cand->counts[t];
        int kept = rank_candidates(s, im, pending[t], cand->indices + t * asked, count, best);
        double farthest = count > 0 ? cand->distances[t * asked + count - 1] : 0;
        need[t] = (int8_t)verdict(s, im, best, kept, asked, count, farthest, pending[t]);
        if (!need[t])
            write_row(s, best, kept, pending[t], out);
        candidates += count;
    }
    return candidates;
}

/* The candidates of pending[0 .. m) from the index. */
static prox_status chunk_candidates(const cell_knn *s, const cell_images *im,
                                    const prox_knn_index *index, const int64_t *pending, int64_t m,
                                    int asked, double *qp, prox_knn_result *cand,
                                    int64_t *bytes)
{
    for (int64_t t = 0; t < m; t++)
        memcpy(qp + t * s->dim, s->q + pending[t] * s->dim, (size_t)s->dim * sizeof *qp);
    prox_points qpts = prox_points_f64(qp, m, s->dim);
    prox_knn_desc d = prox_default_knn_desc();
    d.k = asked;
    /* within the margin, where it is the cover (verdict); with open rows the
     * cover reaches past it, and every candidate may count */
    bool limit = !s->gap2 && im->margin >= PROX_RADIUS_MIN && im->margin <= PROX_RADIUS_MAX;
    d.max_radius = limit ? im->margin : 0;
    d.threads = s->threads;
    d.allocator = *s->al;
    prox_stats st;
    prox_status status = prox_knn_index_query(index, &qpts, &d, cand, &st);
    int64_t held = st.bytes + im->count * (int64_t)sizeof *im->rec;
    *bytes = held > *bytes ? held : *bytes;
    return status;
}

static prox_status query_round(const cell_knn *s, const cell_images *im,
                               const prox_knn_index *index, int asked, round_state *rs,
                               prox_knn_result *out)
{
    int64_t m = rs->count, chunk = m < CELL_KNN_CHUNK ? m : CELL_KNN_CHUNK;
    double *qp = prox_alloc_array(s->al, chunk * s->dim, sizeof *qp);
    int8_t *need = prox_alloc_array(s->al, m, sizeof *need);
    ranked *scratch = prox_alloc_array(s->al, (int64_t)s->threads * asked, sizeof *scratch);
    prox_knn_result cand;
    prox_knn_result_init(&cand, s->al);
    prox_status st = qp && need && scratch ? PROX_OK
                     : prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld rows",
                                 (long long)m);
    for (int64_t begin = 0; begin < m && !st; begin += chunk) {
        int64_t part = m - begin < chunk ? m - begin : chunk;
        st = chunk_candidates(s, im, index, rs->pending + begin, part, asked, qp, &cand,
                              &rs->bytes);
        if (!st)
            rs->candidates += rank_chunk(s, im, &cand, rs->pending + begin, part, asked, scratch,
                                         need + begin, out);
    }
    int64_t left = 0;
    rs->need = 0;
    for (int64_t t = 0; t < m && !st; t++)
        if (need[t]) {
            rs->need |= need[t];
            rs->pending[left++] = rs->pending[t];
        }
    if (!st)
        rs->count = left;
    prox_free(s->al, qp);
    prox_free(s->al, need);
    prox_free(s->al, scratch);
    prox_knn_result_free(&cand);
    return st;
}

/* The margin past which no query needs more: max_radius plus what proves
 * it (verdict's eps at that margin, with room); +inf without max_radius. */
static double widest_margin(const cell_knn *s)
{
    if (!(s->max_radius > 0))
        return INFINITY;
    double hmin = INFINITY;
    for (int a = 0; a < 3; a++)
        if (s->frame.pbc[a])
            hmin = s->frame.height[a] < hmin ? s->frame.height[a] : hmin;
    cell_images bound = {.tmax = s->wrap_max + 2 * cells_within(s->max_radius, hmin) + 4};
    return s->max_radius * (1 + 0x1p-20) + 4 * rounding_bound(s, &bound, 4 * s->max_radius);
}

/* A first margin: the radius holding about 2K images at the periodic
 * axes' density (open axes' spread ignored: an underestimate, which the
 * rounds widen), and no wider than max_radius needs. */
static double first_margin(const cell_knn *s, int asked)
{
    const double pi = 3.14159265358979323846, unit_ball[4] = {0, 2, pi, 4 * pi / 3};
    double area = 1, hmin = INFINITY;
    for (int a = 0; a < 3; a++)
        if (s->frame.pbc[a]) {
            area *= s->frame.height[a];
            hmin = s->frame.height[a] < hmin ? s->frame.height[a] : hmin;
        }
    double n = s->points->count > 0 ? (double)s->points->count : 1;
    double m = pow(2.0 * asked * area / (n * unit_ball[s->periodic]), 1.0 / s->periodic);
    if (!(m > 1e-9 * hmin))
        m = 1e-9 * hmin;
    double cap = widest_margin(s);
    return m < cap ? m : cap;
}

/* The next margin: twice the last, up to the widest needed. */
static bool widen(const cell_knn *s, double *margin)
{
    double next = 2 * *margin, cap = widest_margin(s);
    next = next < cap ? next : cap;
    if (!(next > *margin))
        return false;
    *margin = next;
    return true;
}

/* The image records put in the index's cell order, and the index's ids
 * made those positions: a query's candidates, near each other in cells,
 * then name records near each other. */
static prox_status images_in_index_order(const cell_knn *s, cell_images *im, prox_knn_index *x)
{
    image_record *sorted = prox_alloc_array(s->al, im->count, sizeof *sorted);
    if (!sorted)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld images",
                         (long long)im->count);
#pragma omp parallel for num_threads(s->threads) if (s->threads > 1 && im->count > 4096) \
    schedule(static)
    for (int64_t t = 0; t < im->count; t++) {
        sorted[t] = im->rec[x->id[t]];
        x->id[t] = (prox_index)t;
    }
    prox_free(s->al, im->rec);
    im->rec = sorted;
    return PROX_OK;
}

static prox_status index_images(const cell_knn *s, cell_images *im, int asked,
                                prox_knn_index **index)
{
    prox_knn_desc d = prox_default_knn_desc();
    d.k = asked;
    d.threads = s->threads;
    d.allocator = *s->al;
    prox_points y = prox_points_f64(im->y, im->count, s->dim);
    prox_status st = prox_knn_index_build(&y, &d, index);
    if (!st)
        st = images_in_index_order(s, im, *index);
    return st;
}

/* Rounds until every query is proven: the images and their index are
 * rebuilt when the margin widens; more candidates need no rebuild. */
static prox_status knn_rounds(const cell_knn *s, prox_knn_result *out, prox_stats *stats)
{
    round_state rs = {.count = s->queries->count};
    rs.pending = prox_alloc_array(s->al, rs.count, sizeof *rs.pending);
    if (!rs.pending)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld queries",
                         (long long)rs.count);
    for (int64_t t = 0; t < rs.count; t++)
        rs.pending[t] = s->query_order[t];
    int asked = s->k + (s->self && !s->include_self) + 1;
    double margin = s->periodic ? first_margin(s, asked) : INFINITY;
    cell_images im = {0};
    prox_knn_index *index = NULL;
    prox_status st = PROX_OK;
    while (rs.count > 0 && !st) {
        if (!index) {
            st = images_build(s, margin, &im);
            if (!st)
                st = index_images(s, &im, asked, &index);
            if (st)
                break;
            prox_free(s->al, im.y); /* the index holds its own copy */
            im.y = NULL;
        }
        st = query_round(s, &im, index, asked, &rs, out);
        if (st || rs.count == 0)
            break;
        if (rs.need & NEEDS_WIDER) {
            if (!widen(s, &margin)) {
                st = prox_fail(PROX_ERR_RANGE, "kNN in a cell: %lld queries unproven at "
                                               "the widest margin %g",
                               (long long)rs.count, margin);
                break;
            }
            prox_knn_index_destroy(index);
            index = NULL;
        }
        if ((rs.need & NEEDS_MORE) && asked <= im.count)
            asked = asked > (1 << 28) ? asked + (1 << 28) : 2 * asked;
    }
    stats->candidates = rs.candidates;
    stats->bytes = rs.bytes;
    prox_knn_index_destroy(index);
    images_free(&im, s->al);
    prox_free(s->al, rs.pending);
    return st;
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static bool unit3(double *v)
{
    double n = sqrt(dot3(v, v));
    if (!(n > 0) || !isfinite(n))
        return false;
    for (int k = 0; k < 3; k++)
        v[k] /= n;
    return true;
}

/* The frame's rows: the caller's periodic rows, and on open axes an
 * orthonormal basis of the directions orthogonal to them. Then the open
 * rows' fractions are plain coordinates along those directions, which no
 * periodic shift changes, and an image's distance splits into its part
 * in the periodic rows' span and its part along the open rows (verdict's
 * cover). With no periodic row, or rows that leave no such basis (a
 * degenerate cell, refused by the frame), the caller's rows stay. */
static void frame_rows(const prox_cell_knn_desc *desc, int dim, double m[3][3])
{
    memcpy(m, desc->cell, 9 * sizeof(double));
    int periodic[3], p = 0, open[3], o = 0;
    for (int a = 0; a < dim; a++) {
        if (desc->pbc[a])
            periodic[p++] = a;
        else
            open[o++] = a;
    }
    if (p == 0 || o == 0)
        return;
    double u[3], v[3], w[3];
    memcpy(u, desc->cell[periodic[0]], sizeof u);
    if (!unit3(u))
        return;
    if (dim == 2) { /* the in-plane normal of the one periodic row */
        double n[3] = {-u[1], u[0], 0};
        memcpy(m[open[0]], n, sizeof n);
        return;
    }
    if (p == 2) {
        const double *b = desc->cell[periodic[1]];
        double n[3] = {u[1] * b[2] - u[2] * b[1], u[2] * b[0] - u[0] * b[2],
                       u[0] * b[1] - u[1] * b[0]};
        if (unit3(n))
            memcpy(m[open[0]], n, sizeof n);
        return;
    }
    int e = fabs(u[0]) <= fabs(u[1]) && fabs(u[0]) <= fabs(u[2]) ? 0 : fabs(u[1]) <= fabs(u[2]) ? 1 : 2;
    for (int k = 0; k < 3; k++)
        v[k] = (k == e) - u[e] * u[k];
    unit3(v);
    w[0] = u[1] * v[2] - u[2] * v[1];
    w[1] = u[2] * v[0] - u[0] * v[2];
    w[2] = u[0] * v[1] - u[1] * v[0];
    memcpy(m[open[0]], v, sizeof v);
    memcpy(m[open[1]], w, sizeof w);
}

/* The cell, its frame and the extents of points and queries. */
static prox_status setup(const prox_points *points, const prox_points *queries,
                         const prox_cell_knn_desc *desc, cell_knn *s)
{
    /* the caller's cell is checked as prox_cell_pairs checks it, then the
     * search's own frame made (frame_rows) */
    prox_cell_desc cd = prox_default_cell_desc();
    memcpy(cd.cell, desc->cell, sizeof cd.cell);
    memcpy(cd.pbc, desc->pbc, sizeof cd.pbc);
    prox_status st = prox_cell_frame_make(&cd, points->dim, &s->frame);
    frame_rows(desc, points->dim, cd.cell);
    if (!st)
        st = prox_cell_frame_make(&cd, points->dim, &s->frame);
    prox_cell_extent ep, eq;
    if (!st)
        st = prox_cell_measure(points, &s->frame, &ep);
    if (!st)
        st = queries == points ? (eq = ep, PROX_OK) : prox_cell_measure(queries, &s->frame, &eq);
    if (st)
        return st;
    s->points = points;
    s->queries = queries;
    s->self = queries == points;
    s->include_self = desc->include_self;
    s->dim = points->dim;
    s->k = desc->k;
    s->threads = prox_threads_resolve(desc->threads);
    s->max_radius = desc->max_radius;
    s->r2 = desc->max_radius > 0 ? desc->max_radius * desc->max_radius : INFINITY;
    memcpy(s->cell, desc->cell, sizeof s->cell);
    for (int a = 0; a < 3; a++) {
        s->periodic += s->frame.pbc[a];
        for (int k = 0; k < 3; k++)
            s->cell_sum += fabs(desc->cell[a][k]);
    }
    for (int a = 0; a < 3; a++) {
        double lo = ep.fmin[a] < eq.fmin[a] ? ep.fmin[a] : eq.fmin[a];
        double hi = ep.fmax[a] > eq.fmax[a] ? ep.fmax[a] : eq.fmax[a];
        s->lo[a] = s->frame.pbc[a] ? 0 : lo;
        s->span[a] = s->frame.pbc[a] ? 1 : hi > lo ? hi - lo : 1;
    }
    for (int a = 0; a < 3; a++) {
        s->open_lo[a] = ep.fmin[a];
        s->open_hi[a] = ep.fmax[a];
    }
    int64_t budget = 32 * points->count;
    budget = budget > ((int64_t)1 << 20) ? budget : (int64_t)1 << 20;
    s->budget = budget < PROX_CELL_KNN_MAX_IMAGES ? budget : PROX_CELL_KNN_MAX_IMAGES;
    s->xmax = ep.xmax > eq.xmax ? ep.xmax : eq.xmax;
    double fp = prox_cell_fraction_error(&s->frame, &ep), fq = prox_cell_fraction_error(&s->frame, &eq);
    s->ferr = fp > fq ? fp : fq;
    return PROX_OK;
}

static prox_status args_check(const prox_points *points, const prox_points *queries,
                              const prox_cell_knn_desc *desc, const prox_knn_result *out)
{
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "prox_cell_knn: options are NULL; start from "
                                           "prox_default_cell_knn_desc()");
    if (!points || !out)
        return prox_fail(PROX_ERR_INVALID, "prox_cell_knn: %s is NULL",
                         points ? "the result" : "points");
    prox_status st = knn_check_k_radius(desc->k, desc->max_radius);
    if (!st)
        st = prox_points_check(points, "points");
    if (!st && queries != points)
        st = prox_points_check(queries, "queries");
    if (!st && queries->dim != points->dim)
        st = prox_fail(PROX_ERR_INVALID, "queries are %dD but points are %dD", queries->dim,
                       points->dim);
    if (!st && (int64_t)desc->k * queries->count > (INT64_MAX >> 6))
        st = prox_fail(PROX_ERR_RANGE, "k = %d neighbours of %lld queries cannot be held",
                       desc->k, (long long)queries->count);
    return st;
}

/* The result's room: rows x k neighbours and their shifts. */
static prox_status result_room(const cell_knn *s, prox_knn_result *out)
{
    prox_status st = knn_result_room(out, s->queries->count, s->k);
    if (st)
        return st;
    out->shifts = prox_alloc_array(&out->allocator, s->queries->count * s->k * s->dim,
                                   sizeof *out->shifts);
    if (out->shifts)
        return PROX_OK;
    prox_knn_result_free(out);
    return prox_fail(PROX_ERR_NO_MEMORY, "kNN in a cell: no memory for %lld x %d shifts",
                     (long long)s->queries->count, s->k);
}

prox_status prox_cell_knn(const prox_points *points, const prox_points *queries,
                          const prox_cell_knn_desc *desc, prox_knn_result *out,
                          prox_stats *stats)
{
    prox_status st = prox_simd_check();
    if (st)
        return st;
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!queries)
        queries = points;
    st = args_check(points, queries, desc, out);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    cell_knn s = {.al = &al};
    st = setup(points, queries, desc, &s);
    if (!st && s.periodic && desc->k > PROX_CELL_KNN_MAX_IMAGES)
        st = prox_fail(PROX_ERR_RANGE, "kNN in a cell: k = %d is more images than %lld",
                       desc->k, (long long)PROX_CELL_KNN_MAX_IMAGES);
    if (!st)
        st = wraps_make(&s);
    if (!st)
        st = spatial_orders(&s);
    if (!st)
        st = result_room(&s, out);
    prox_stats own = {0};
    if (!st && points->count == 0)
        for (int64_t i = 0; i < queries->count; i++)
            write_row(&s, NULL, 0, i, out);
    else if (!st)
        st = knn_rounds(&s, out, &own);
    if (st)
        prox_knn_result_free(out);
    prox_free(&al, s.wrap);
    prox_free(&al, s.U);
    prox_free(&al, s.q);
    prox_free(&al, s.query_order);
    prox_free(&al, s.gap2);
    if (stats && !st) {
        *stats = own;
        stats->method = "cell.knn";
        for (int64_t i = 0; i < queries->count; i++)
            stats->pairs += out->counts[i];
    }
    return st;
}
