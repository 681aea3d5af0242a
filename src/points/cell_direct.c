/* cell_direct.c: the pairs of a few points in a periodic cell of any shape
 * (cell_direct.h; docs/design.md, "Few points: the images listed"),
 * LAMMPS' ghost atoms without the bins.
 *
 * A vector of length at most the cutoff moves a point by at most
 * reach[k] = cutoff / height[k] in fractions of axis k. So with every
 * point's fractions in [fmin[k], fmax[k]], the images x_j + S . cell that
 * can lie within the cutoff of some point have fractions within reach[k]
 * of that range: those are the ghosts, listed in the order (j, S) with the
 * vector v = S . cell of each computed as the rule of cell.h computes it.
 * The rule's D = (x_j - x_i) + v is then exact for every ghost, so one
 * pass of the SIMD kernel over the ghosts after point i's own
 * (prox_cell_image_hits) decides its half row in (j, S) order without a
 * sort; a full list adds the reverses (full_output). The positions are
 * used as the caller gave them (no wrap), so points far outside the cell
 * make many ghosts: past a bound, and past PROX_CELL_DIRECT_MAX_POINTS
 * points (the candidates are about n^2 prod(1 + 2 reach[k]) / 2), the bins
 * of cell.c serve instead. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/radix_sort.h"
#include "points/cell_direct.h"
#include "points/cell_output.h"
#include "simd/simd.h"

/* Ghosts beyond this many times the count wrapped points would make (the
 * points lie far out of the cell), or beyond DIRECT_MAX_GHOSTS, and the
 * bins serve: their memory is linear in the points. */
#define DIRECT_GHOST_EXCESS 4
#define DIRECT_MAX_GHOSTS (1 << 20)
/* reverse_of packs a ghost and a row in one word */
_Static_assert(DIRECT_MAX_GHOSTS <= 1 << 24 && PROX_CELL_DIRECT_MAX_POINTS <= 256,
               "a reversed hit's ghost and row fit 24 and 8 bits");

typedef struct direct_ghosts {
    double *x[3];     /* the caller's coordinates of the ghost's point, widened */
    double *v[3];     /* S . cell, as the rule computes it */
    double *vm[3];    /* (-S) . cell, as the rule computes it (the reversed pair's) */
    float *p[3];      /* (float)(x + v): the prescreen's image (prescreen_radius) */
    double bound;     /* at least every |x[k]| + |v[k]|, the prescreen's M (ghost_bound) */
    uint32_t *point;  /* j */
    int32_t *shift;   /* S, 3 a ghost */
    int64_t *own;     /* n: the ghost of point j at S = 0 */
    int64_t count;
} direct_ghosts;

typedef struct direct_search {
    const prox_cell_frame *c;
    int64_t n;
    double reach[3];  /* ghosts: fractions within reach[k] of [fmin[k], fmax[k]] */
    double fmin[3], fmax[3];
    /* point j's ghosts: shifts lo[j][k] .. hi[j][k] along axis k */
    int32_t lo[PROX_CELL_DIRECT_MAX_POINTS][3], hi[PROX_CELL_DIRECT_MAX_POINTS][3];
    direct_ghosts g;
    double r2;
    prox_cell_prescreen screen;
    bool screened;    /* screen serves (prescreen_radius) */
    bool full, self_interaction, store;
    uint32_t *hits;   /* the ghosts of every row's pairs, rows in order */
    int64_t *row_end; /* n: row i's hits end there */
    int64_t count, capacity;
    int64_t candidates;
    const prox_allocator *al;
} direct_search;

/* floor and ceil of v, |v| < 2^62, without libm's call at the baseline
 * level (the truncation of a double is one instruction). */
static inline int64_t floor_int(double v)
{
    int64_t t = (int64_t)v;
    return t - (v < (double)t);
}

static inline int64_t ceil_int(double v)
{
    int64_t t = (int64_t)v;
    return t + (v > (double)t);
}

/* The ghosts' reach, guarded by the rounding of the fractions (both ends
 * of a pair); the ghosts only need to hold every pair, the rule decides. */
static void plan_reach(direct_search *s, double cutoff, const prox_cell_extent *e)
{
    const prox_cell_frame *c = s->c;
    double ferr = prox_cell_fraction_error(c, e);
    for (int k = 0; k < 3; k++) {
        s->reach[k] = c->pbc[k] ? cutoff / c->height[k] * (1 + 0x1p-30) + 2 * ferr : 0;
        s->fmin[k] = e->fmin[k];
        s->fmax[k] = e->fmax[k];
    }
    s->r2 = cutoff * cutoff;
}

/* The shifts of point j's ghosts along axis k, [lo, hi]: fractions
 * f + S within reach of the points' range (S = 0 on open axes). */
static void ghost_range(const direct_search *s, double f, int k, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    if (s->c->pbc[k]) {
        *lo = ceil_int(s->fmin[k] - s->reach[k] - f);
        *hi = floor_int(s->fmax[k] + s->reach[k] - f);
    }
}

/* Every point's shift ranges (s->lo, s->hi); returns the ghosts they
 * make. The shifts fit 32 bits: the fractions are within 2^30
 * (prox_cell_measure), the reach within the bins' stencil. */
static int64_t plan_ghosts(direct_search *s, const prox_points *points)
{
    int64_t t = 0;
    for (int64_t j = 0; j < s->n; j++) {
        double x[3];
        prox_cell_load(points, j, x);
        int64_t per = 1;
        for (int k = 0; k < 3; k++) {
            int64_t lo, hi;
            ghost_range(s, prox_cell_fraction(s->c, x, k), k, &lo, &hi);
            s->lo[j][k] = (int32_t)lo;
            s->hi[j][k] = (int32_t)hi;
            per *= hi - lo + 1;
        }
        t += per;
    }
    return t;
}

/* What the ghosts would number were the points wrapped into the cell. */
static double wrapped_ghosts(const direct_search *s)
{
    double per = 1;
    for (int k = 0; k < 3; k++)
        if (s->c->pbc[k])
            per *= 2 * s->reach[k] + 2;
    return (double)s->n * per;
}

/* (-S) . cell from v = S . cell: each product and sum of the rule is the
 * negation of the forward one (round to nearest is symmetric), except an
 * exact zero, whose sign the rule does not negate; such an entry is
 * computed by the rule itself. */
static inline double reverse_vector(const double (*m)[3], const int64_t *S, int k, double v)
{
    if (v != 0)
        return -v;
    return ((double)-S[0] * m[0][k] + (double)-S[1] * m[1][k]) + (double)-S[2] * m[2][k];
}

/* Ghost t: point j (coordinates x) at shift S; part[k] is the rule's
 * first sum, S[0] * a[k] + S[1] * b[k], shared by the ghosts that differ
 * in S[2] alone. */
static void ghost_write(direct_search *s, int64_t t, int64_t j, const double *x,
                        const int64_t *S, const double *part)
{
    const double(*m)[3] = (const double(*)[3])s->c->m;
    direct_ghosts *g = &s->g;
    for (int k = 0; k < 3; k++) {
        double v = part[k] + (double)S[2] * m[2][k];
        g->x[k][t] = x[k];
        g->v[k][t] = v;
        g->vm[k][t] = reverse_vector(m, S, k, v);
        g->p[k][t] = (float)(x[k] + v);
        g->shift[3 * t + k] = (int32_t)S[k];
    }
    g->point[t] = (uint32_t)j;
    if (S[0] == 0 && S[1] == 0 && S[2] == 0)
        g->own[j] = t;
}

/* At least every |x[k]| + |v[k]| of the ghosts, with room for the
 * rounding of v: the largest coordinate plus, per cell row, the largest
 * |S| of the ghosts' ranges times the row's largest entry. */
static double ghost_bound(const direct_search *s, const prox_points *points)
{
    const double(*m)[3] = (const double(*)[3])s->c->m;
    double xmax = 0, reach = 0;
    for (int64_t j = 0; j < s->n; j++) {
        double x[3];
        prox_cell_load(points, j, x);
        for (int k = 0; k < 3; k++)
            xmax = fabs(x[k]) > xmax ? fabs(x[k]) : xmax;
    }
    for (int a = 0; a < 3; a++) {
        int64_t smax = 0;
        for (int64_t j = 0; j < s->n; j++) {
            int64_t lo = s->lo[j][a] < 0 ? -(int64_t)s->lo[j][a] : s->lo[j][a];
            int64_t hi = s->hi[j][a] < 0 ? -(int64_t)s->hi[j][a] : s->hi[j][a];
            smax = lo > smax ? lo : smax;
            smax = hi > smax ? hi : smax;
        }
        double row = fmax(fabs(m[a][0]), fmax(fabs(m[a][1]), fabs(m[a][2])));
        reach += (double)smax * row;
    }
    return (xmax + reach) * (1 + 0x1p-40);
}

static void list_ghosts(direct_search *s, const prox_points *points)
{
    const double(*m)[3] = (const double(*)[3])s->c->m;
    int64_t t = 0;
    for (int64_t j = 0; j < s->n; j++) {
        double x[3];
        int64_t S[3];
        const int32_t *lo = s->lo[j], *hi = s->hi[j];
        prox_cell_load(points, j, x);
        for (S[0] = lo[0]; S[0] <= hi[0]; S[0]++)
            for (S[1] = lo[1]; S[1] <= hi[1]; S[1]++) {
                double part[3];
                for (int k = 0; k < 3; k++)
                    part[k] = (double)S[0] * m[0][k] + (double)S[1] * m[1][k];
                for (S[2] = lo[2]; S[2] <= hi[2]; S[2]++)
                    ghost_write(s, t++, j, x, S, part);
            }
    }
    s->g.count = t;
    s->g.bound = ghost_bound(s, points);
}

/* The prescreen's float radius (prox_cell_prescreen, cell_screen.c), so
 * that no pair of the rule fails it; false where it does not serve. With
 * u = 2^-53 and w = 2^-24 the double and float units of rounding, M
 * (g.bound) at least every |x[k]| + |v[k]| of the ghosts (the queries are
 * ghosts of shift 0), and T = x_t - q + v_t exactly, per axis k:
 *  - the rule's D = (x_t - q) + v_t is within 2uM + u|D|/(1 - u) of T, and
 *    a pair of the rule has |D| <= sqrt(r2) (1 + 2u) (its sum of squares,
 *    each term rounded at most three times, is <= r2), so
 *    |T| <= sqrt(r2) (1 + 4u) + 4uM;
 *  - p = (float)(x_t + v_t) and (float)q are within (w + 2u)M and wM of
 *    x_t + v_t and q, and e = p - (float)q in float within w|e| more, so
 *    |e| <= (1 + w)(|T| + 3.5wM), and the float sum of squares is at most
 *    |e|^2 (1 + w)^3.
 * Hence the sum is at most (sqrt(r2) + 3.5wM)^2 (1 + 5.1w), below
 * (sqrt(r2) + 4wM)^2 (1 + 8w), whose double arithmetic and M's own
 * rounding the room covers; it is rounded up to float. Only where
 * M <= 2^60 and 2^-60 <= r2 <= 2^100: no float overflows (|e| <= 2^62,
 * the sum below 2^126) and a subnormal's absolute error (2^-149 an
 * operation) stays far below the room, 2.9w r2. */
static void prescreen_radius(direct_search *s)
{
    const double w = 0x1p-24;
    double M = s->g.bound;
    s->screened = M <= 0x1p60 && s->r2 >= 0x1p-60 && s->r2 <= 0x1p100;
    if (!s->screened)
        return;
    double b = sqrt(s->r2) + 4 * w * M;
    double r2f = b * b * (1 + 8 * w);
    float f = (float)r2f;
    s->screen.r2 = (double)f >= r2f ? f : nextafterf(f, INFINITY);
    for (int k = 0; k < 3; k++)
        s->screen.p[k] = s->g.p[k];
}

/* Ghosts [lo, hi) for row i: the pairs, as ghost indices after the
 * earlier rows' (or counted only). */
static bool row_part(direct_search *s, int64_t i, int64_t lo, int64_t hi)
{
    if (lo >= hi)
        return true;
    int64_t at = s->store ? s->count : 0; /* counting only: one row's room, reused */
    int64_t need = at + hi - lo + PROX_CELL_SCREEN_SLACK;
    if (s->capacity < need &&
        !prox_grow(s->al, (void **)&s->hits, &s->capacity, need, at, sizeof *s->hits))
        return false;
    double q[3] = {s->g.x[0][s->g.own[i]], s->g.x[1][s->g.own[i]], s->g.x[2][s->g.own[i]]};
    int64_t hits = prox_cell_image_hits((const double *const *)s->g.x,
                                        (const double *const *)s->g.v,
                                        s->screened ? &s->screen : NULL, lo, hi, q, s->r2,
                                        s->hits + at);
    s->candidates += hi - lo;
    s->count += hits;
    return true;
}

/* Row i of the half list: the ghosts after (i, i, 0), from it with
 * self_interaction. A full list is the half list and its reverse
 * (full_output). */
static bool search_row(direct_search *s, int64_t i)
{
    bool ok = row_part(s, i, s->g.own[i] + !s->self_interaction, s->g.count);
    s->row_end[i] = s->count;
    return ok;
}

/* The output's arrays (NULL: not asked for) and the ghosts' columns, as
 * restrict locals: the stores alias none of the loads. all3: a 3D list
 * with every array asked for (the common case, written without a test
 * per array). */
typedef struct direct_writer {
    prox_index *restrict i, *restrict j;
    double *restrict d, *restrict D;
    int32_t *restrict S;
    int dim;
    bool all3;
    const double *restrict x[3];
    const double *restrict v[3];
    const double *restrict vm[3];
    const uint32_t *restrict point;
    const int32_t *restrict shift;
    const int64_t *restrict own;
} direct_writer;

static direct_writer writer_of(const direct_search *s, prox_geometry *g)
{
    const direct_ghosts *gh = &s->g;
    direct_writer w = {g->i, g->j, g->d, g->D, g->S, g->dim,
                       g->dim == 3 && g->i && g->j && g->d && g->D && g->S,
                       {gh->x[0], gh->x[1], gh->x[2]}, {gh->v[0], gh->v[1], gh->v[2]},
                       {gh->vm[0], gh->vm[1], gh->vm[2]}, gh->point, gh->shift, gh->own};
    return w;
}

/* Pair p of an all3 writer: (a, b, sign * shift of ghost t), the vector
 * D and its length, the square summed as the kernel sums it. */
static PROX_ALWAYS_INLINE void write_pair3(const direct_writer *w, int64_t p, int64_t a,
                                           int64_t b, const double D[3], uint32_t t, int sign)
{
    const int32_t *S = w->shift + 3 * (int64_t)t;
    w->i[p] = (prox_index)a;
    w->j[p] = (prox_index)b;
    w->d[p] = sqrt((D[0] * D[0] + D[1] * D[1]) + D[2] * D[2]);
    w->D[3 * p] = D[0];
    w->D[3 * p + 1] = D[1];
    w->D[3 * p + 2] = D[2];
    w->S[3 * p] = sign * S[0];
    w->S[3 * p + 1] = sign * S[1];
    w->S[3 * p + 2] = sign * S[2];
}

/* Pair p of any writer: as write_pair3 for the arrays asked for, but d
 * holds the squared distance until finish_distances. */
static PROX_ALWAYS_INLINE void write_pair_any(const direct_writer *w, int64_t p, int64_t a,
                                              int64_t b, const double D[3], uint32_t t, int sign)
{
    if (w->i)
        w->i[p] = (prox_index)a;
    if (w->j)
        w->j[p] = (prox_index)b;
    if (w->d)
        w->d[p] = (D[0] * D[0] + D[1] * D[1]) + D[2] * D[2];
    const int32_t *S = w->shift + 3 * (int64_t)t;
    for (int k = 0; k < w->dim; k++) {
        if (w->D)
            w->D[p * w->dim + k] = D[k];
        if (w->S)
            w->S[p * w->dim + k] = sign * S[k];
    }
}

static PROX_ALWAYS_INLINE void write_pair(const direct_writer *w, bool all3, int64_t p,
                                          int64_t a, int64_t b, const double D[3], uint32_t t,
                                          int sign)
{
    if (all3)
        write_pair3(w, p, a, b, D, t, sign);
    else
        write_pair_any(w, p, a, b, D, t, sign);
}

/* d from the squared distances of write_pair_any, in a loop of its own:
 * independent square roots pipeline (the file is built without errno's
 * check, CMakeLists). */
static void finish_distances(const direct_writer *w, prox_geometry *g)
{
    double *d = g->d;
    for (int64_t p = 0; d && !w->all3 && p < g->count; p++)
        d[p] = sqrt(d[p]);
}

/* Row r's hits [from, to) as pairs p..: (r, j, S) with
 * D = (x_j - x_r) + S . cell; all3 is w->all3, a constant where inlined. */
static PROX_ALWAYS_INLINE void write_hits_as(const direct_writer *w, bool all3,
                                             const uint32_t *hits, int64_t p, int64_t r,
                                             int64_t from, int64_t to)
{
    int64_t own = w->own[r];
    double q[3] = {w->x[0][own], w->x[1][own], w->x[2][own]};
    for (int64_t h = from; h < to; h++, p++) {
        uint32_t t = hits[h];
        double D[3] = {(w->x[0][t] - q[0]) + w->v[0][t], (w->x[1][t] - q[1]) + w->v[1][t],
                       (w->x[2][t] - q[2]) + w->v[2][t]};
        write_pair(w, all3, p, r, w->point[t], D, t, 1);
    }
}

static void write_hits(const direct_writer *w, const uint32_t *hits, int64_t p, int64_t r,
                       int64_t from, int64_t to)
{
    if (w->all3)
        write_hits_as(w, true, hits, p, r, from, to);
    else
        write_hits_as(w, false, hits, p, r, from, to);
}

/* A hit of the half list to reverse: its ghost t (below 2^20,
 * DIRECT_MAX_GHOSTS) and its row r (below 256, PROX_CELL_DIRECT_MAX_POINTS)
 * in one word. */
static inline uint32_t reverse_of(uint32_t t, int64_t r)
{
    return t << 8 | (uint32_t)r;
}

/* The reverses order[0 .. count) of the hits as pairs p..: (j, r, -S) with
 * D = (x_r - x_j) + (-S) . cell. */
static PROX_ALWAYS_INLINE void write_reverses_as(const direct_writer *w, bool all3,
                                                 const uint32_t *hits, const uint32_t *order,
                                                 int64_t p, int64_t count)
{
    for (int64_t m = 0; m < count; m++, p++) {
        uint32_t r = hits[order[m]] & 0xff, t = hits[order[m]] >> 8;
        int64_t own = w->own[r];
        double D[3] = {(w->x[0][own] - w->x[0][t]) + w->vm[0][t],
                       (w->x[1][own] - w->x[1][t]) + w->vm[1][t],
                       (w->x[2][own] - w->x[2][t]) + w->vm[2][t]};
        write_pair(w, all3, p, w->point[t], r, D, t, -1);
    }
}

static void write_reverses(const direct_writer *w, const uint32_t *hits, const uint32_t *order,
                           int64_t p, int64_t count)
{
    if (w->all3)
        write_reverses_as(w, true, hits, order, p, count);
    else
        write_reverses_as(w, false, hits, order, p, count);
}

static int64_t row_start(const direct_search *s, int64_t i)
{
    return i ? s->row_end[i - 1] : 0;
}

static prox_status half_output(const direct_search *s, prox_geometry *out, int dim)
{
    prox_status st = prox_geometry_alloc(out, s->count, dim);
    if (st)
        return st;
    direct_writer w = writer_of(s, out);
    for (int64_t i = 0; i < s->n; i++)
        write_hits(&w, s->hits, row_start(s, i), i, row_start(s, i), s->row_end[i]);
    finish_distances(&w, out);
    return PROX_OK;
}

/* The full list's row i in (j, S) order: the reverses of the hits of rows
 * r <= i on point i (j = r < i, then i's own images of negative shift),
 * then row i's own hits (its images of positive shift, then j > i). The
 * reverses are listed rows ascending, each row's hits from its last (a
 * point's shifts descending within a row, so their negatives ascend), and
 * placed by the stable counting sort on their point (core/radix_sort.h).
 * (i, i, 0) of self_interaction is not reversed. */
static prox_status full_output(const direct_search *s, prox_geometry *out, int dim)
{
    const direct_ghosts *gh = &s->g;
    int64_t n = s->n, half = s->count, reversed = half - (s->self_interaction ? n : 0);
    /* each reverse's hit (its ghost and row packed, reverse_of), its point
     * (the sort's key), and their order */
    uint32_t *hit = prox_alloc_array(s->al, reversed + 1, sizeof *hit);
    uint32_t *key = prox_alloc_array(s->al, reversed + 1, sizeof *key);
    uint32_t *order = prox_alloc_array(s->al, reversed + 1, sizeof *order);
    uint32_t *starts = prox_alloc_array(s->al, n + 1, sizeof *starts);
    prox_status st = hit && key && order && starts
                         ? prox_geometry_alloc(out, half + reversed, dim)
                         : prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld pairs",
                                     (long long)(half + reversed));
    if (!st) {
        int64_t q = 0;
        for (int64_t r = 0; r < n; r++)
            for (int64_t h = s->row_end[r] - 1; h >= row_start(s, r); h--) {
                uint32_t t = s->hits[h];
                if (t == gh->own[r])
                    continue;
                hit[q] = reverse_of(t, r);
                key[q++] = gh->point[t];
            }
        prox_counting_sort_u32(key, reversed, n, starts, order, NULL, 1);
        direct_writer w = writer_of(s, out);
        int64_t p = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t count = (int64_t)starts[i + 1] - starts[i];
            write_reverses(&w, hit, order + starts[i], p, count);
            p += count;
            write_hits(&w, s->hits, p, i, row_start(s, i), s->row_end[i]);
            p += s->row_end[i] - row_start(s, i);
        }
        finish_distances(&w, out);
    }
    prox_free(s->al, hit);
    prox_free(s->al, key);
    prox_free(s->al, order);
    prox_free(s->al, starts);
    return st;
}

static void search_free(direct_search *s)
{
    for (int k = 0; k < 3; k++) {
        prox_free(s->al, s->g.x[k]);
        prox_free(s->al, s->g.v[k]);
        prox_free(s->al, s->g.vm[k]);
        prox_free(s->al, s->g.p[k]);
    }
    prox_free(s->al, s->g.point);
    prox_free(s->al, s->g.shift);
    prox_free(s->al, s->g.own);
    prox_free(s->al, s->hits);
    prox_free(s->al, s->row_end);
}

/* The ghosts' arrays and the rows' ends; the hits grow as rows need. */
static bool search_alloc(direct_search *s, int64_t ghosts)
{
    const prox_allocator *al = s->al;
    bool ok = true;
    for (int k = 0; k < 3; k++) {
        ok &= (s->g.x[k] = prox_alloc_array(al, ghosts, sizeof(double))) != NULL;
        ok &= (s->g.v[k] = prox_alloc_array(al, ghosts, sizeof(double))) != NULL;
        ok &= (s->g.vm[k] = prox_alloc_array(al, ghosts, sizeof(double))) != NULL;
        ok &= (s->g.p[k] = prox_alloc_array(al, ghosts, sizeof(float))) != NULL;
    }
    ok &= (s->g.point = prox_alloc_array(al, ghosts, sizeof(uint32_t))) != NULL;
    ok &= (s->g.shift = prox_alloc_array(al, 3 * ghosts, sizeof(int32_t))) != NULL;
    ok &= (s->g.own = prox_alloc_array(al, s->n, sizeof(int64_t))) != NULL;
    ok &= (s->row_end = prox_alloc_array(al, s->n, sizeof(int64_t))) != NULL;
    return ok;
}

static int64_t direct_max_points = PROX_CELL_DIRECT_MAX_POINTS;

void prox_cell_direct_set_max_points(int64_t count)
{
    direct_max_points = count == 0 ? PROX_CELL_DIRECT_MAX_POINTS : count;
}

static prox_status search_rows(direct_search *s, prox_geometry *out, int dim)
{
    for (int64_t i = 0; i < s->n; i++)
        if (!search_row(s, i))
            return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld pairs",
                             (long long)s->count + 1);
    if (!out)
        return PROX_OK;
    return s->full ? full_output(s, out, dim) : half_output(s, out, dim);
}

prox_status prox_cell_direct_pairs(const prox_points *points, const prox_cell_desc *desc,
                                   const prox_cell_frame *frame, prox_geometry *out,
                                   prox_stats *stats, bool *served)
{
    *served = false;
    if (points->count > direct_max_points || points->count > PROX_CELL_DIRECT_MAX_POINTS)
        return PROX_OK;
    prox_cell_extent e;
    prox_status st = prox_cell_measure(points, frame, &e);
    prox_cell_bins bins; /* its refusal of too many images, the same as the binned search's */
    if (!st)
        st = prox_cell_bins_plan(frame, desc->cutoff, points->count, e.fmin, e.fmax,
                                 prox_cell_fraction_error(frame, &e), &bins);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    direct_search s = {.c = frame, .n = points->count, .full = desc->full,
                       .self_interaction = desc->self_interaction, .store = out != NULL,
                       .al = &al};
    plan_reach(&s, desc->cutoff, &e);
    int64_t ghosts = plan_ghosts(&s, points);
    if (ghosts > DIRECT_MAX_GHOSTS || (double)ghosts > DIRECT_GHOST_EXCESS * wrapped_ghosts(&s))
        return PROX_OK; /* the bins serve */
    *served = true;
    if (!search_alloc(&s, ghosts)) {
        search_free(&s);
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld ghosts", (long long)ghosts);
    }
    list_ghosts(&s, points);
    prescreen_radius(&s);
    st = search_rows(&s, out, points->dim);
    if (stats) {
        stats->pairs = s.full ? 2 * s.count - (s.self_interaction ? s.n : 0) : s.count;
        stats->candidates = s.candidates;
        stats->cells = ghosts;
        stats->method = "cell.direct";
    }
    search_free(&s);
    return st;
}
