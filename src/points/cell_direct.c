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
#include "points/cell_direct.h"
#include "points/cell_output.h"
#include "simd/simd.h"

/* Ghosts beyond this many times the count wrapped points would make (the
 * points lie far out of the cell), or beyond DIRECT_MAX_GHOSTS, and the
 * bins serve: their memory is linear in the points. */
#define DIRECT_GHOST_EXCESS 4
#define DIRECT_MAX_GHOSTS (1 << 20)
/* the hits are ghost indices of 32 bits */
_Static_assert(DIRECT_MAX_GHOSTS <= UINT32_MAX, "a ghost index fits 32 bits");

/* A ghost as the output's writers read it: one cache line. */
typedef struct direct_record {
    double x[3];      /* the caller's coordinates of the ghost's point, widened */
    double v[3];      /* S . cell, as the rule computes it */
    int32_t S[3];
    uint32_t point;   /* j */
} direct_record;

/* The ghosts: columns for the kernel, records for the writers. */
typedef struct direct_ghosts {
    double *x[3];     /* the records' x and v, by column */
    double *v[3];
    float *p[3];      /* (float)(x + v): the prescreen's image (prescreen_radius) */
    double bound;     /* at least every |x[k]| + |v[k]|, the prescreen's M (ghost_bound) */
    direct_record *rec;
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
 * make, held at GHOSTS_SATURATED once past it (points spread over many
 * cells: the caller then takes another search, and the ranges are not
 * used). The shifts fit 32 bits where they are used: the fractions are
 * within 2^30 (prox_cell_measure), the reach within the bins' stencil. */
#define GHOSTS_SATURATED (INT64_C(1) << 40)

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
            int64_t span = hi - lo + 1;
            per = span > 0 && per > GHOSTS_SATURATED / span ? GHOSTS_SATURATED : per * span;
        }
        t = t + per > GHOSTS_SATURATED ? GHOSTS_SATURATED : t + per;
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
static inline double reverse_vector(const double (*m)[3], const int32_t *S, int k, double v)
{
    if (v != 0)
        return -v;
    return ((double)-(int64_t)S[0] * m[0][k] + (double)-(int64_t)S[1] * m[1][k]) +
           (double)-(int64_t)S[2] * m[2][k];
}

/* Ghost t: point j (coordinates x) at shift S; part[k] is the rule's
 * first sum, S[0] * a[k] + S[1] * b[k], shared by the ghosts that differ
 * in S[2] alone. */
static void ghost_write(direct_search *s, int64_t t, int64_t j, const double *x,
                        const int64_t *S, const double *part)
{
    const double(*m)[3] = (const double(*)[3])s->c->m;
    direct_ghosts *g = &s->g;
    direct_record *rec = &g->rec[t];
    for (int k = 0; k < 3; k++) {
        double v = part[k] + (double)S[2] * m[2][k];
        g->x[k][t] = rec->x[k] = x[k];
        g->v[k][t] = rec->v[k] = v;
        g->p[k][t] = (float)(x[k] + v);
        rec->S[k] = (int32_t)S[k];
    }
    rec->point = (uint32_t)j;
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

/* The output's arrays (NULL: not asked for) and the ghosts. all3: a 3D
 * list with every array asked for (the common case, written without a
 * test per array). */
typedef struct direct_writer {
    prox_index *i, *j;
    double *d, *D;
    int32_t *S;
    int dim;
    bool all3;
    const direct_record *rec;
    const double (*m)[3]; /* the cell's rows */
    const int64_t *own;
} direct_writer;

static direct_writer writer_of(const direct_search *s, prox_geometry *g)
{
    direct_writer w = {g->i, g->j, g->d, g->D, g->S, g->dim,
                       g->dim == 3 && g->i && g->j && g->d && g->D && g->S, s->g.rec,
                       (const double(*)[3])s->c->m, s->g.own};
    return w;
}

static int64_t row_start(const direct_search *s, int64_t i)
{
    return i ? s->row_end[i - 1] : 0;
}

/* Pair p of any writer: (a, b, sign * S of ghost g) and the vector D, in
 * the arrays asked for; d holds the squared distance until
 * finish_distances. */
static void write_pair_any(const direct_writer *w, int64_t p, int64_t a, int64_t b,
                           const double D[3], const direct_record *g, int sign)
{
    if (w->i)
        w->i[p] = (prox_index)a;
    if (w->j)
        w->j[p] = (prox_index)b;
    if (w->d)
        w->d[p] = (D[0] * D[0] + D[1] * D[1]) + D[2] * D[2];
    for (int k = 0; k < w->dim; k++) {
        if (w->D)
            w->D[p * w->dim + k] = D[k];
        if (w->S)
            w->S[p * w->dim + k] = sign * g->S[k];
    }
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
 * D = (x_j - x_r) + S . cell, any writer. */
static void write_hits_any(const direct_writer *w, const uint32_t *hits, int64_t p, int64_t r,
                           int64_t from, int64_t to)
{
    const double *q = w->rec[w->own[r]].x;
    for (int64_t h = from; h < to; h++, p++) {
        const direct_record *g = &w->rec[hits[h]];
        double D[3] = {(g->x[0] - q[0]) + g->v[0], (g->x[1] - q[1]) + g->v[1],
                       (g->x[2] - q[2]) + g->v[2]};
        write_pair_any(w, p, r, g->point, D, g, 1);
    }
}

/* The same for an all3 writer, each array through its own restrict
 * pointer, d = sqrt of the square summed as the kernel sums it. */
static void write_hits3(const direct_writer *w, const uint32_t *restrict hits, int64_t p,
                        int64_t r, int64_t from, int64_t to)
{
    prox_index *restrict oi = w->i + p, *restrict oj = w->j + p;
    double *restrict od = w->d + p, *restrict oD = w->D + 3 * p;
    int32_t *restrict oS = w->S + 3 * p;
    const direct_record *restrict rec = w->rec;
    const double q[3] = {rec[w->own[r]].x[0], rec[w->own[r]].x[1], rec[w->own[r]].x[2]};
    for (int64_t h = from; h < to; h++, oi++, oj++, od++, oD += 3, oS += 3) {
        const direct_record *g = &rec[hits[h]];
        double D0 = (g->x[0] - q[0]) + g->v[0], D1 = (g->x[1] - q[1]) + g->v[1],
               D2 = (g->x[2] - q[2]) + g->v[2];
        *oi = (prox_index)r;
        *oj = g->point;
        *od = sqrt((D0 * D0 + D1 * D1) + D2 * D2);
        oD[0] = D0;
        oD[1] = D1;
        oD[2] = D2;
        oS[0] = g->S[0];
        oS[1] = g->S[1];
        oS[2] = g->S[2];
    }
}

/* Entry k of the reversed pair's D = (x_r - x_j) + (-S) . cell, ghost t
 * of point j reversed onto row r, by the rule. */
static inline double reverse_entry(const direct_writer *w, int64_t r, uint32_t t, int k)
{
    const direct_record *g = &w->rec[t];
    return (w->rec[w->own[r]].x[k] - g->x[k]) + reverse_vector(w->m, g->S, k, g->v[k]);
}

/* Pair p, any writer: the reverse (j, r, -S) of ghost t's hit in row r,
 * D = (x_r - x_j) + (-S) . cell by the rule. */
static void write_reverse_any(const direct_writer *w, int64_t p, int64_t r, uint32_t t)
{
    double D[3] = {reverse_entry(w, r, t, 0), reverse_entry(w, r, t, 1), reverse_entry(w, r, t, 2)};
    write_pair_any(w, p, w->rec[t].point, r, D, &w->rec[t], -1);
}

/* The zero entries of a reversed D, by the rule (write_reverses3); out of
 * line, as they are rare. */
static __attribute__((noinline)) void reverse_zeros(const direct_writer *w, int64_t r,
                                                    uint32_t t, double D[3])
{
    for (int k = 0; k < 3; k++)
        if (D[k] == 0)
            D[k] = reverse_entry(w, r, t, k);
}

/* Pair p of an all3 writer: the reverse of the forward pair fp (ghost t
 * of row r), all of it from that pair: (j, r, -S), d the same (its
 * squared distance is the forward one's), and D the forward one negated
 * (the difference, each product and each sum of the rule negate bit for
 * bit), except an exact zero, computed by the rule from this orientation. */
static inline void write_reverse3(const direct_writer *w, int64_t p, int64_t fp, int64_t r,
                                  uint32_t t)
{
    prox_index *restrict oi = w->i, *restrict oj = w->j;
    double *restrict od = w->d, *restrict oD = w->D;
    int32_t *restrict oS = w->S;
    const double *f = oD + 3 * fp;
    double D[3] = {-f[0], -f[1], -f[2]};
    if (f[0] * f[1] * f[2] == 0) /* or a product that underflows: each tested */
        reverse_zeros(w, r, t, D);
    oi[p] = oj[fp];
    oj[p] = (prox_index)r;
    od[p] = od[fp];
    oD[3 * p] = D[0];
    oD[3 * p + 1] = D[1];
    oD[3 * p + 2] = D[2];
    oS[3 * p] = -oS[3 * fp];
    oS[3 * p + 1] = -oS[3 * fp + 1];
    oS[3 * p + 2] = -oS[3 * fp + 2];
}

static prox_status half_output(const direct_search *s, prox_geometry *out, int dim)
{
    prox_status st = prox_geometry_alloc(out, s->count, dim);
    if (st)
        return st;
    direct_writer w = writer_of(s, out);
    for (int64_t i = 0; i < s->n; i++) {
        int64_t from = row_start(s, i);
        if (w.all3)
            write_hits3(&w, s->hits, from, i, from, s->row_end[i]);
        else
            write_hits_any(&w, s->hits, from, i, from, s->row_end[i]);
    }
    finish_distances(&w, out);
    return PROX_OK;
}

/* The reverses on each point: counted into starts[j + 1], then summed,
 * so that point j's are starts[j] .. starts[j + 1] - 1 of all reverses.
 * (i, i, 0) of self_interaction is not reversed. */
static void reverse_starts(const direct_search *s, int64_t *starts)
{
    memset(starts, 0, (size_t)(s->n + 1) * sizeof *starts);
    for (int64_t r = 0; r < s->n; r++)
        for (int64_t h = row_start(s, r); h < s->row_end[r]; h++)
            if (s->hits[h] != s->g.own[r])
                starts[s->g.rec[s->hits[h]].point + 1]++;
    for (int64_t j = 0; j < s->n; j++)
        starts[j + 1] += starts[j];
}

/* Every half row's hits reversed into row j = their point, placed as a
 * stable counting sort places them: rows r ascending, each row's hits
 * from its last (a point's shifts descend within a row, so their
 * negatives ascend). at[j] is row j's next free pair; half row r's
 * forward pairs start at row_start(r) + starts[r + 1]. all3 is w->all3, a
 * constant where inlined. */
static PROX_ALWAYS_INLINE void place_reverses(const direct_search *s, const direct_writer *w,
                                              bool all3, const int64_t *starts, int64_t *at)
{
    for (int64_t r = 0; r < s->n; r++) {
        int64_t fp = starts[r + 1];
        for (int64_t h = s->row_end[r] - 1; h >= row_start(s, r); h--) {
            uint32_t t = s->hits[h];
            if (t == s->g.own[r])
                continue;
            int64_t p = at[w->rec[t].point]++;
            if (all3)
                write_reverse3(w, p, fp + h, r, t);
            else
                write_reverse_any(w, p, r, t);
        }
    }
}

/* The full list's row i in (j, S) order: the reverses of the hits of rows
 * r <= i on point i (j = r < i, then i's own images of negative shift),
 * then row i's own hits (its images of positive shift, then j > i). With
 * starts (reverse_starts) every pair's place is known: the forward pairs
 * are written first, so that an all3 writer takes each reverse from its
 * forward pair (write_reverse3). */
static prox_status full_output(const direct_search *s, prox_geometry *out, int dim)
{
    int64_t n = s->n, half = s->count, reversed = half - (s->self_interaction ? n : 0);
    int64_t *starts = prox_alloc_array(s->al, n + 1, sizeof *starts);
    int64_t *at = prox_alloc_array(s->al, n, sizeof *at);
    prox_status st = starts && at ? prox_geometry_alloc(out, half + reversed, dim)
                                  : prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld pairs",
                                              (long long)(half + reversed));
    if (!st) {
        reverse_starts(s, starts);
        direct_writer w = writer_of(s, out);
        for (int64_t i = 0; i < n; i++) {
            int64_t from = row_start(s, i);
            at[i] = from + starts[i];
            if (w.all3)
                write_hits3(&w, s->hits, from + starts[i + 1], i, from, s->row_end[i]);
            else
                write_hits_any(&w, s->hits, from + starts[i + 1], i, from, s->row_end[i]);
        }
        if (w.all3)
            place_reverses(s, &w, true, starts, at);
        else
            place_reverses(s, &w, false, starts, at);
        finish_distances(&w, out);
    }
    prox_free(s->al, starts);
    prox_free(s->al, at);
    return st;
}

static void search_free(direct_search *s)
{
    for (int k = 0; k < 3; k++) {
        prox_free(s->al, s->g.x[k]);
        prox_free(s->al, s->g.v[k]);
        prox_free(s->al, s->g.p[k]);
    }
    prox_free(s->al, s->g.rec);
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
        ok &= (s->g.p[k] = prox_alloc_array(al, ghosts, sizeof(float))) != NULL;
    }
    ok &= (s->g.rec = prox_alloc_array(al, ghosts, sizeof(direct_record))) != NULL;
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
