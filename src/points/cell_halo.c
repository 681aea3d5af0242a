/* cell_halo.c: prox_cell_pairs for a large periodic cell of any shape,
 * through the uniform grid (docs/design.md, "Periodic cells of any shape",
 * "Large cells: the halo").
 *
 * When every periodic height is at least four cutoffs, a pair has at most
 * one image within the cutoff, and only the points near a face have
 * images near the cell. The search is then three searches of the open
 * grid, whose kernels, rows and threads are those of prox_pairs:
 *
 * - the main search: every pair of the points where they lie, shift 0,
 *   with the cutoff itself. For two points inside the cell (their
 *   coordinates the caller's, unchanged), the grid's test is the rule of
 *   cell.h to the bit (the rule's shift term is a sum of zeros, which
 *   changes no magnitude), so these pairs need no second look;
 * - the halo search: the images across a face (shift S' != 0 in each of
 *   -1, 0, 1) of the points within reach of that face, against the points
 *   near a face, with a screen radius widened by a bound on the rounding
 *   of the images; each candidate is then decided by the rule, from the
 *   caller's positions;
 * - the moved search, only when some points lie outside the cell (more
 *   than HALO_INSIDE of a cell): those are searched at their wrapped
 *   positions against all points, screened and decided the same way, and
 *   their pairs of the main search are dropped.
 *
 * Each image pair is found twice by the halo search (from both of its
 * points), and once kept: in the orientation of the half list (i < j, or
 * i == j with S lexicographically positive). The kept pairs are bucketed
 * by row, sorted by (j, S), and merged row by row with the main search's
 * sorted pairs into the output (for i and j alone, into the main search's
 * rows in place: output_in_rows), so the output is the bins' (cell.c) to
 * the bit and does not depend on the thread count. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/exact.h"
#include "core/radix_sort.h"
#include "core/threads.h"
#include "points/cell_halo.h"
#include "points/cell_output.h"
#include "points/grid_split.h"
#include "prox/grid.h"

/* A point whose fraction along a periodic axis lies within this of the
 * cell [0, 1) (or within four bounds of a fraction's rounding, if more)
 * counts as inside and keeps the caller's coordinates: a point on a face,
 * its fraction rounded just out, does not move. */
#define HALO_INSIDE 0x1p-24

/* The largest cutoff over a periodic height served: at a quarter, one
 * pair has at most one image within the cutoff (two would be a cell
 * vector apart, at least a height, within twice the cutoff) and the images
 * are at most 2.4 times the points (the shell of a quarter each side). */
#define HALO_MAX_REACH 0.25

/* Bit 2k of a point's face mask: within reach of face 0 of axis k (an
 * image at shift +1); bit 2k + 1: of face 1 (an image at -1). */
#define HALO_MOVED 0x40 /* outside the cell: searched at its wrapped position */

typedef struct halo_hit {
    prox_index i, j;
    int32_t S[3];
} halo_hit;

typedef struct halo_hits {
    halo_hit *at;
    int64_t count, capacity;
} halo_hits;

typedef struct halo {
    const prox_points *points;
    const prox_cell_frame *frame;
    const prox_allocator *al;
    prox_grid_desc grid; /* the main search's options; the others widen the radius */
    int dim;
    int64_t n;
    double r2;       /* the rule: D.D <= r2 */
    double screen;   /* the images' screen radius */
    double reach[3]; /* a point whose fraction is within reach[k] of a face has an image across it */
    double eta;      /* the inside's slack, in fractions */
    double sure_in2; /* a candidate this near by the searches' coordinates is a pair */
    bool full, self_interaction;
    uint8_t *faces;  /* per point: the face bits and HALO_MOVED */
    int32_t *w;      /* 3 per point: the wrap, x = base + w . cell (NULL when none moved) */
    double *base;    /* dim per point: where the searches see the point (NULL when none moved) */
    int64_t moved;
} halo;

static int64_t halo_min_points = PROX_CELL_HALO_MIN_POINTS;

void prox_cell_halo_set_min_points(int64_t count)
{
    halo_min_points = count > 0 ? count : PROX_CELL_HALO_MIN_POINTS;
}

/* ---- the plan ----------------------------------------------------------- */

/* Whether the points are packed doubles (the common view), read as one
 * array: x, y[, z] of point i at 3i (2i in 2D). */
static bool packed_f64(const prox_points *p)
{
    bool packed = p->scalar == PROX_F64 && p->stride == (ptrdiff_t)(p->dim * sizeof(double));
    for (int k = 1; k < p->dim; k++)
        packed &= (const char *)p->axis[k] == (const char *)p->axis[0] + k * sizeof(double);
    return packed;
}

/* Point i's coordinates, 3 entries (0 past its dimension). */
static inline void load_point(const prox_points *p, bool packed, int64_t i, double *x)
{
    if (!packed) {
        prox_cell_load(p, i, x);
        return;
    }
    const double *v = (const double *)p->axis[0] + i * p->dim;
    x[0] = v[0];
    x[1] = v[1];
    x[2] = p->dim == 3 ? v[2] : 0.0;
}

/* The largest |coordinate|; false on a non-finite one. */
static bool measure(const halo *h, double *xmax)
{
    const prox_points *p = h->points;
    double xm = 0;
    bool finite = true;
    if (packed_f64(p)) {
        const double *x = p->axis[0];
        for (int64_t t = 0; t < h->n * p->dim; t++) {
            double a = fabs(x[t]);
            finite &= a <= DBL_MAX; /* false for inf and NaN */
            xm = a > xm ? a : xm;
        }
    } else
        for (int64_t i = 0; i < h->n; i++) {
            double x[3];
            prox_cell_load(p, i, x);
            for (int k = 0; k < 3; k++) {
                finite &= fabs(x[k]) <= DBL_MAX;
                xm = fmax(xm, fabs(x[k]));
            }
        }
    *xmax = xm;
    return finite;
}

/* A bound on every |fraction| of points within xmax of the origin. */
static double fraction_bound(const prox_cell_frame *c, double xmax)
{
    double big = 0;
    for (int k = 0; k < 3; k++)
        big = fmax(big, fabs(c->inv[0][k]) + fabs(c->inv[1][k]) + fabs(c->inv[2][k]));
    return xmax * big * (1 + 0x1p-40);
}

/* The screen radius and the reach of each face, each widened by bounds on
 * the rounding of what they compare: fractions (the inverse's condition
 * number times epsilon times their size, as cell.c bounds them) and the
 * images' coordinates (a few ulps of the largest coordinate or shift).
 * False when a reach exceeds HALO_MAX_REACH. */
static bool plan(halo *h, double cutoff, double xmax)
{
    const prox_cell_frame *c = h->frame;
    double fbig = fraction_bound(c, xmax);
    double nm = 0, ni = 0, rows = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            nm += c->m[r][k] * c->m[r][k];
            ni += c->inv[r][k] * c->inv[r][k];
            rows += fabs(c->m[r][k]);
        }
    double ferr = 64 * DBL_EPSILON * sqrt(nm * ni) * (fbig + 1);
    double xerr = 128 * DBL_EPSILON * (xmax + (fbig + 3) * rows);
    h->eta = fmax(HALO_INSIDE, 4 * ferr);
    h->screen = cutoff * (1 + 0x1p-40) + xerr;
    /* a screened candidate whose distance from the searches' coordinates
     * is within `band` of the cutoff is decided by the rule; the others
     * are decided by that distance, which cannot differ from the rule's
     * by as much */
    double band = 2 * (h->screen - cutoff);
    h->sure_in2 = cutoff > band ? (cutoff - band) * (cutoff - band) : -1;
    for (int k = 0; k < 3; k++) {
        h->reach[k] = 0;
        if (!c->pbc[k])
            continue;
        h->reach[k] = (h->screen + xerr) / c->height[k] + h->eta + 3 * ferr;
        if (!(h->reach[k] <= HALO_MAX_REACH))
            return false;
    }
    return fbig < 0x1p30;
}

/* The limits classify compares each axis' fraction with, as the plan set
 * them; an open axis gets limits no finite fraction passes. */
typedef struct face_limits {
    double out_lo[3], out_hi[3];   /* outside the cell: f < out_lo or f >= out_hi */
    double near_lo[3], near_hi[3]; /* near face 0: f < near_lo; near face 1: f >= near_hi */
} face_limits;

static face_limits face_limits_of(const halo *h)
{
    face_limits l;
    for (int k = 0; k < 3; k++) {
        bool pbc = h->frame->pbc[k];
        l.out_lo[k] = pbc ? -h->eta : -INFINITY;
        l.out_hi[k] = pbc ? 1 + h->eta : INFINITY;
        l.near_lo[k] = pbc ? h->reach[k] : -INFINITY;
        l.near_hi[k] = pbc ? 1 - h->reach[k] : INFINITY;
    }
    return l;
}

/* The wrap and the face bits of a point (x: its coordinates); true when
 * it lies outside the cell (then wrapped into it, w its whole cells). */
static inline bool classify(const prox_cell_frame *c, const face_limits *l, const double *x,
                            int32_t *w, uint8_t *faces)
{
    uint8_t bits = 0;
    bool moved = false;
    for (int k = 0; k < 3; k++) {
        double f = prox_cell_fraction(c, x, k);
        w[k] = 0;
        if (f < l->out_lo[k] || f >= l->out_hi[k]) { /* never along an open axis */
            double fl = floor(f);
            w[k] = (int32_t)fl;
            f -= fl;
            moved = true;
        }
        bits |= (uint8_t)((f < l->near_lo[k]) << (2 * k));
        bits |= (uint8_t)((f >= l->near_hi[k]) << (2 * k + 1));
    }
    *faces = (uint8_t)(bits | (moved ? HALO_MOVED : 0));
    return moved;
}

static void shift_of(const prox_cell_frame *c, const int32_t *S, double *t)
{
    double S0 = (double)S[0], S1 = (double)S[1], S2 = (double)S[2];
    for (int k = 0; k < 3; k++)
        t[k] = (S0 * c->m[0][k] + S1 * c->m[1][k]) + S2 * c->m[2][k];
}

/* Every point's face bits and wrap; the wrapped coordinates when some
 * point moved. False on no memory. */
static bool classify_all(halo *h)
{
    h->faces = prox_alloc_array(h->al, h->n, 1);
    if (!h->faces)
        return false;
    bool packed = packed_f64(h->points);
    /* local copies: the face bytes written may alias anything read through h */
    const face_limits limits = face_limits_of(h);
    const prox_cell_frame frame = *h->frame;
    const prox_points points = *h->points;
    uint8_t *faces = h->faces;
    for (int64_t i = 0; i < h->n; i++) {
        double x[3];
        int32_t w[3];
        load_point(&points, packed, i, x);
        if (!classify(&frame, &limits, x, w, &faces[i]))
            continue;
        if (!h->w) {
            h->w = prox_alloc_array(h->al, 3 * h->n, sizeof *h->w);
            if (!h->w)
                return false;
            memset(h->w, 0, (size_t)(3 * h->n) * sizeof *h->w);
        }
        memcpy(&h->w[3 * i], w, sizeof w);
        h->moved++;
    }
    if (!h->moved)
        return true;
    h->base = prox_alloc_array(h->al, h->n * h->dim, sizeof *h->base);
    if (!h->base)
        return false;
    for (int64_t i = 0; i < h->n; i++) {
        double x[3], t[3] = {0, 0, 0};
        prox_cell_load(h->points, i, x);
        if (h->faces[i] & HALO_MOVED)
            shift_of(h->frame, &h->w[3 * i], t);
        for (int k = 0; k < h->dim; k++)
            h->base[i * h->dim + k] = x[k] - t[k];
    }
    return true;
}

/* Where the searches see point i. */
static void base_of(const halo *h, int64_t i, double *x)
{
    if (h->base) {
        for (int k = 0; k < 3; k++)
            x[k] = k < h->dim ? h->base[i * h->dim + k] : 0.0;
        return;
    }
    prox_cell_load(h->points, i, x);
}

static prox_points base_view(const halo *h)
{
    return h->base ? prox_points_f64(h->base, h->n, h->dim) : *h->points;
}

/* ---- the rule and the kept hits ---------------------------------------- */

static inline const int32_t *wrap_of(const halo *h, prox_index i)
{
    static const int32_t none[3] = {0, 0, 0};
    return h->w ? &h->w[3 * (int64_t)i] : none;
}

/* The vector of the rule (cell.h) for (i, j, S) and its square. */
static double rule_vector(const halo *h, prox_index i, prox_index j, const int32_t *S, double *D)
{
    double xi[3], xj[3], t[3];
    prox_cell_load(h->points, i, xi);
    prox_cell_load(h->points, j, xj);
    shift_of(h->frame, S, t);
    for (int k = 0; k < 3; k++)
        D[k] = (xj[k] - xi[k]) + t[k];
    return D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
}

/* (i, j, S) as the half list holds it. */
static bool canonical(prox_index i, prox_index j, const int32_t *S)
{
    return i != j ? i < j : prox_cell_shift_positive(S);
}

/* The squared distance of the searches' coordinates (dim each). */
static double dist2(const double *a, const double *b, int dim)
{
    return prox_dist2(a[0] - b[0], a[1] - b[1], dim == 3 ? a[2] - b[2] : 0.0);
}

/* Candidate (i, j, S), canonical, at squared distance a2 by the searches'
 * coordinates: decided (by the rule near the cutoff) and kept. */
static bool offer(const halo *h, prox_index i, prox_index j, const int32_t *S, double a2,
                  halo_hits *out)
{
    double D[3];
    if (!(a2 <= h->sure_in2) && !(rule_vector(h, i, j, S, D) <= h->r2))
        return true;
    if (!prox_grow(h->al, (void **)&out->at, &out->capacity, out->count + 1, out->count,
                   sizeof *out->at))
        return false;
    halo_hit *x = &out->at[out->count++];
    x->i = i;
    x->j = j;
    memcpy(x->S, S, sizeof x->S);
    return true;
}

/* ---- the halo search ---------------------------------------------------- */

/* The images across the faces: coordinates (dim each), point, shift. */
typedef struct halo_images {
    double *x;
    prox_index *point;
    int8_t *shift; /* 3 per image */
    int64_t count;
} halo_images;

/* The shifts point i's images may take along each axis: 0, +1 near face
 * 0, -1 near face 1. */
static void shift_choices(uint8_t faces, int dim, int choices[3][3], int count[3])
{
    for (int k = 0; k < 3; k++) {
        count[k] = 0;
        choices[k][count[k]++] = 0;
        if (k < dim && (faces >> (2 * k)) & 1)
            choices[k][count[k]++] = 1;
        if (k < dim && (faces >> (2 * k + 1)) & 1)
            choices[k][count[k]++] = -1;
    }
}

/* Only shifts whose first nonzero entry is +1 make images: an image pair
 * (i, j, S') with S' != 0 is then found once, from i's query meeting the
 * image (j, S') or from j's meeting (i, -S'). */
static bool shift_forward(const int32_t *S)
{
    return S[0] ? S[0] > 0 : S[1] ? S[1] > 0 : S[2] > 0;
}

static int image_count(uint8_t faces, int dim)
{
    if (!(faces & 0x3f))
        return 0;
    int choices[3][3], count[3], c = 0;
    shift_choices(faces, dim, choices, count);
    for (int a0 = 0; a0 < count[0]; a0++)
        for (int a1 = 0; a1 < count[1]; a1++)
            for (int a2 = 0; a2 < count[2]; a2++) {
                int32_t S[3] = {choices[0][a0], choices[1][a1], choices[2][a2]};
                c += shift_forward(S);
            }
    return c;
}

/* A point near face 1 of some axis: the images across it may meet it. */
static bool near_face_one(uint8_t faces)
{
    return faces & 0x2a;
}

/* A point with images or a query of the halo search. */
static bool near_any(uint8_t faces, int dim)
{
    return near_face_one(faces) || image_count(faces, dim) > 0;
}

static void images_free(const halo *h, halo_images *g)
{
    prox_free(h->al, g->x);
    prox_free(h->al, g->point);
    prox_free(h->al, g->shift);
}

/* The images of point i, at b, through every forward shift its face
 * bits allow. */
static void images_of(const halo *h, int64_t i, const double *b, halo_images *g)
{
    int choices[3][3], count[3];
    shift_choices(h->faces[i], h->dim, choices, count);
    for (int a0 = 0; a0 < count[0]; a0++)
        for (int a1 = 0; a1 < count[1]; a1++)
            for (int a2 = 0; a2 < count[2]; a2++) {
                int32_t S[3] = {choices[0][a0], choices[1][a1], choices[2][a2]};
                if (!shift_forward(S))
                    continue;
                double t[3];
                shift_of(h->frame, S, t);
                int64_t at = g->count++;
                for (int k = 0; k < h->dim; k++)
                    g->x[at * h->dim + k] = b[k] + t[k];
                g->point[at] = (prox_index)i;
                for (int k = 0; k < 3; k++)
                    g->shift[3 * at + k] = (int8_t)S[k];
            }
}

/* The near points' order in space: by a coarse bin of their fractions
 * (HALO_ORDER_BINS a periodic axis), so that the halo search's queries
 * read the grid, and the images lie, near their neighbours. */
#define HALO_ORDER_BINS 32

static uint32_t order_key(const halo *h, const double *b)
{
    uint32_t key = 0;
    for (int k = 0; k < h->dim; k++) {
        double f = h->frame->pbc[k] ? prox_cell_fraction(h->frame, b, k) : 0;
        int v = (int)(f * HALO_ORDER_BINS);
        v = v < 0 ? 0 : v >= HALO_ORDER_BINS ? HALO_ORDER_BINS - 1 : v;
        key = key * HALO_ORDER_BINS + (uint32_t)v;
    }
    return key;
}

/* The points near a face (with images, or near face 1 of an axis: the
 * queries), in index order: their indices, coordinates (3 each) and order
 * keys. */
typedef struct near_set {
    prox_index *point;
    double *x;
    uint32_t *key;
    int64_t count;
} near_set;

static bool near_collect(const halo *h, near_set *s, int64_t *images)
{
    /* by the six face bits: the images a point has, and whether it is near */
    uint8_t count_of[64], near_of[64];
    for (int f = 0; f < 64; f++) {
        count_of[f] = (uint8_t)image_count((uint8_t)f, h->dim);
        near_of[f] = f && near_any((uint8_t)f, h->dim);
    }
    int64_t total = 0, nq = 0;
    for (int64_t i = 0; i < h->n; i++) {
        total += count_of[h->faces[i] & 0x3f];
        nq += near_of[h->faces[i] & 0x3f];
    }
    s->point = prox_alloc_array(h->al, nq, sizeof *s->point);
    s->x = prox_alloc_array(h->al, 3 * nq, sizeof *s->x);
    s->key = prox_alloc_array(h->al, nq, sizeof *s->key);
    if (!s->point || !s->x || !s->key)
        return false;
    s->count = 0;
    for (int64_t i = 0; i < h->n; i++)
        if (near_of[h->faces[i] & 0x3f]) {
            int64_t q = s->count++;
            s->point[q] = (prox_index)i;
            base_of(h, i, &s->x[3 * q]);
            s->key[q] = order_key(h, &s->x[3 * q]);
        }
    *images = total;
    return true;
}

static void near_free(const halo *h, near_set *s)
{
    prox_free(h->al, s->point);
    prox_free(h->al, s->x);
    prox_free(h->al, s->key);
}

/* The points near face 1 of an axis in order of space, the queries: their
 * indices (*near) and coordinates (*qx, dim each); and the images of the
 * points near a face, in the same order. */
static bool images_make(const halo *h, halo_images *g, prox_index **near, double **qx,
                        int64_t *near_count)
{
    near_set s = {0};
    int64_t total = 0;
    int64_t buckets = h->dim == 3 ? HALO_ORDER_BINS * HALO_ORDER_BINS * HALO_ORDER_BINS
                                  : HALO_ORDER_BINS * HALO_ORDER_BINS;
    bool ok = near_collect(h, &s, &total);
    memset(g, 0, sizeof *g);
    g->x = prox_alloc_array(h->al, total * h->dim, sizeof *g->x);
    g->point = prox_alloc_array(h->al, total, sizeof *g->point);
    g->shift = prox_alloc_array(h->al, 3 * total, sizeof *g->shift);
    *near = prox_alloc_array(h->al, s.count, sizeof **near);
    *qx = prox_alloc_array(h->al, s.count * h->dim, sizeof **qx);
    uint32_t *order = prox_alloc_array(h->al, s.count, sizeof *order);
    uint32_t *starts = prox_alloc_array(h->al, buckets + 1, sizeof *starts);
    ok = ok && g->x && g->point && g->shift && *near && *qx && order && starts;
    if (ok) {
        prox_counting_sort_u32(s.key, s.count, buckets, starts, order, NULL, 1);
        int64_t nq = 0;
        for (int64_t q = 0; q < s.count; q++) {
            int64_t from = order[q];
            prox_index i = s.point[from];
            if (near_face_one(h->faces[i])) {
                (*near)[nq] = i;
                memcpy(&(*qx)[nq++ * h->dim], &s.x[3 * from], (size_t)h->dim * sizeof **qx);
            }
            images_of(h, i, &s.x[3 * from], g);
        }
        *near_count = nq;
    }
    near_free(h, &s);
    prox_free(h->al, order);
    prox_free(h->al, starts);
    return ok;
}

/* Coordinates of the listed points where the searches see them. */
static double *bases_of(const halo *h, const prox_index *list, int64_t count)
{
    double *x = prox_alloc_array(h->al, count * h->dim, sizeof *x);
    if (!x)
        return NULL;
    for (int64_t q = 0; q < count; q++) {
        double b[3];
        base_of(h, list[q], b);
        memcpy(&x[q * h->dim], b, (size_t)h->dim * sizeof *x);
    }
    return x;
}

/* Candidates (query q, point t) of `queries` against `points` within the
 * screen radius, into *found (traversal order). */
static prox_status screen_search(const halo *h, const prox_points *points,
                                 const prox_points *queries, prox_pair_buffer *found,
                                 int64_t *candidates)
{
    prox_grid_desc d = h->grid;
    d.radius = h->screen;
    prox_stats st;
    prox_status s = prox_query(points, queries, &d, PROX_ALGO_GRID,
                               prox_sink_unsorted(prox_sink_buffer(found)), &st);
    *candidates += st.candidates;
    return s;
}

/* Each image pair once: query point i found the image (j, S') of j (S'
 * forward), whose shift from the caller's positions is S = S' + w_i - w_j;
 * kept as the half list holds it. */
static prox_status halo_search(const halo *h, halo_hits *hits, int64_t *candidates)
{
    halo_images g;
    prox_index *near = NULL;
    int64_t nq = 0;
    double *qx = NULL;
    prox_pair_buffer found;
    prox_pair_buffer_init(&found, h->al);
    prox_status st = PROX_ERR_NO_MEMORY;
    if (images_make(h, &g, &near, &qx, &nq)) {
        prox_points images = prox_points_f64(g.x, g.count, h->dim);
        prox_points queries = prox_points_f64(qx, nq, h->dim);
        st = screen_search(h, &images, &queries, &found, candidates);
    }
    for (int64_t p = 0; !st && p < found.count; p++) {
        prox_index i = near[found.pairs[p].i], at = found.pairs[p].j, j = g.point[at];
        const int32_t *wi = wrap_of(h, i), *wj = wrap_of(h, j);
        int32_t S[3];
        for (int k = 0; k < 3; k++)
            S[k] = g.shift[3 * (int64_t)at + k] + wi[k] - wj[k];
        double a2 = dist2(&g.x[(int64_t)at * h->dim], &qx[found.pairs[p].i * (int64_t)h->dim],
                          h->dim);
        int32_t R[3] = {-S[0], -S[1], -S[2]};
        bool ok = canonical(i, j, S) ? offer(h, i, j, S, a2, hits) : offer(h, j, i, R, a2, hits);
        if (!ok)
            st = PROX_ERR_NO_MEMORY;
    }
    prox_pair_buffer_free(&found);
    images_free(h, &g);
    prox_free(h->al, near);
    prox_free(h->al, qx);
    return st;
}

/* The pairs of the points outside the cell, from their wrapped positions
 * against every point: found once with a point inside (kept, oriented),
 * twice between two moved points (kept from the canonical side). */
static prox_status moved_search(const halo *h, halo_hits *hits, int64_t *candidates)
{
    prox_index *list = prox_alloc_array(h->al, h->moved, sizeof *list);
    double *qx = NULL;
    prox_pair_buffer found;
    prox_pair_buffer_init(&found, h->al);
    prox_status st = PROX_ERR_NO_MEMORY;
    if (list) {
        int64_t m = 0;
        for (int64_t i = 0; i < h->n; i++)
            if (h->faces[i] & HALO_MOVED)
                list[m++] = (prox_index)i;
        if ((qx = bases_of(h, list, h->moved))) {
            prox_points all = base_view(h);
            prox_points queries = prox_points_f64(qx, h->moved, h->dim);
            st = screen_search(h, &all, &queries, &found, candidates);
        }
    }
    for (int64_t p = 0; !st && p < found.count; p++) {
        prox_index j = list[found.pairs[p].i], i = found.pairs[p].j;
        if (i == j)
            continue;
        const int32_t *wi = wrap_of(h, i), *wj = wrap_of(h, j);
        int32_t S[3] = {wi[0] - wj[0], wi[1] - wj[1], wi[2] - wj[2]};
        bool keep = canonical(i, j, S);
        if (!keep && (h->faces[i] & HALO_MOVED))
            continue;
        int32_t R[3] = {-S[0], -S[1], -S[2]};
        double a2 = dist2(&h->base[(int64_t)i * h->dim], &qx[found.pairs[p].i * (int64_t)h->dim],
                          h->dim);
        bool ok = keep ? offer(h, i, j, S, a2, hits) : offer(h, j, i, R, a2, hits);
        if (!ok)
            st = PROX_ERR_NO_MEMORY;
    }
    prox_pair_buffer_free(&found);
    prox_free(h->al, list);
    prox_free(h->al, qx);
    return st;
}

/* ---- rows --------------------------------------------------------------- */

static bool hit_before(const halo_hit *a, const halo_hit *b)
{
    if (a->j != b->j)
        return a->j < b->j;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k];
    return false;
}

/* The hits in rows, each sorted by (j, S): row i is start[i] .. start[i +
 * 1] of `sorted` (n + 1 starts); a full list also holds each hit's
 * reverse (j, i, -S) in row j. The project's counting sort places them by
 * row; rows are short (the pairs across a face), so insertion sorts each. */
static bool hits_rows(const halo *h, const halo_hits *x, halo_hit **sorted, uint32_t **start)
{
    int64_t n = h->n, total = x->count * (h->full ? 2 : 1);
    if (total >= (int64_t)UINT32_MAX)
        return false;
    halo_hit *raw = h->full ? prox_alloc_array(h->al, total, sizeof *raw) : x->at;
    uint32_t *keys = prox_alloc_array(h->al, total, sizeof *keys);
    uint32_t *order = prox_alloc_array(h->al, total, sizeof *order);
    *start = prox_alloc_array(h->al, n + 1, sizeof **start);
    *sorted = prox_alloc_array(h->al, total, sizeof **sorted);
    bool ok = (raw || total == 0) && keys && order && *start && *sorted;
    for (int64_t p = 0; ok && h->full && p < x->count; p++) {
        halo_hit v = x->at[p];
        raw[2 * p] = v;
        raw[2 * p + 1] = (halo_hit){.i = v.j, .j = v.i, .S = {-v.S[0], -v.S[1], -v.S[2]}};
    }
    if (ok) {
        for (int64_t p = 0; p < total; p++)
            keys[p] = raw[p].i;
        prox_counting_sort_u32(keys, total, n, *start, order, NULL, 1);
        halo_hit *out = *sorted;
        const uint32_t *s = *start;
        for (int64_t p = 0; p < total; p++)
            out[p] = raw[order[p]];
        for (int64_t i = 0; i < n; i++)
            for (int64_t a = (int64_t)s[i] + 1; a < s[i + 1]; a++) {
                halo_hit v = out[a];
                int64_t at = a;
                for (; at > s[i] && hit_before(&v, &out[at - 1]); at--)
                    out[at] = out[at - 1];
                out[at] = v;
            }
    }
    if (raw != x->at)
        prox_free(h->al, raw);
    prox_free(h->al, keys);
    prox_free(h->al, order);
    return ok;
}

/* ---- the output --------------------------------------------------------- */

/* The main search's pairs: sorted half pairs (pairs), or full lists. */
typedef struct main_rows {
    const prox_pair *pairs;
    int64_t count, at; /* pairs: the next row's first pair */
    const prox_lists *lists;
} main_rows;

/* Row a of the main search: len entries j[0], j[stride], ... ascending. */
static void main_row(main_rows *m, prox_index a, const prox_index **j, int64_t *len, int *stride)
{
    if (m->lists) {
        *j = m->lists->indices + m->lists->offsets[a];
        *len = m->lists->offsets[a + 1] - m->lists->offsets[a];
        *stride = 1;
        return;
    }
    int64_t b = m->at;
    while (m->at < m->count && m->pairs[m->at].i == a)
        m->at++;
    *j = &m->pairs[b].j;
    *len = m->at - b;
    *stride = (int)(sizeof(prox_pair) / sizeof(prox_index));
}

typedef struct halo_out {
    const halo *h;
    prox_geometry *g; /* NULL: count only */
    main_rows main;
    const halo_hit *hits;
    const uint32_t *hit_start;
    int64_t written;
} halo_out;

static void write_entry(halo_out *o, prox_index i, prox_index j, const int32_t *S)
{
    int64_t p = o->written++;
    prox_geometry *g = o->g;
    if (!g)
        return;
    int dim = g->dim;
    if (g->i)
        g->i[p] = i;
    if (g->j)
        g->j[p] = j;
    if (g->d || g->D) {
        double D[3], d2 = rule_vector(o->h, i, j, S, D);
        if (g->d)
            g->d[p] = sqrt(d2);
        if (g->D)
            for (int k = 0; k < dim; k++)
                g->D[p * dim + k] = D[k];
    }
    if (g->S)
        for (int k = 0; k < dim; k++)
            g->S[p * dim + k] = S[k];
}

/* A main row of pairs inside the cell, shift 0, nothing to merge, i and j
 * asked for at most: copied. */
static void copy_row(halo_out *o, prox_index a, const prox_index *j, int64_t len, int stride)
{
    prox_geometry *g = o->g;
    int64_t p = o->written;
    o->written += len;
    if (!g)
        return;
    if (g->i)
        for (int64_t t = 0; t < len; t++)
            g->i[p + t] = a;
    if (g->j)
        for (int64_t t = 0; t < len; t++)
            g->j[p + t] = j[t * stride];
}

/* The rows read the caller's coordinates of their j in index order, which
 * is no order in space: each one is fetched this many entries ahead. */
#define HALO_PREFETCH 12

static inline void prefetch_point(const prox_points *p, prox_index i)
{
    for (int k = 0; k < p->dim; k++)
        __builtin_prefetch((const char *)p->axis[k] + (int64_t)i * p->stride);
}

static bool main_kept(const halo *h, prox_index i, prox_index j)
{
    return !h->w || !((h->faces[i] | h->faces[j]) & HALO_MOVED);
}

/* Row a in order: the main entries (shift 0), the kept hits and, with
 * self_interaction, (a, a, 0), merged by (j, S). */
static void emit_row(halo_out *o, prox_index a)
{
    static const int32_t zero[3] = {0, 0, 0};
    const halo *h = o->h;
    const prox_index *mj;
    int64_t len;
    int stride;
    main_row(&o->main, a, &mj, &len, &stride);
    int64_t x = o->hit_start[a], xe = o->hit_start[a + 1];
    bool self = h->self_interaction;
    bool plain = !o->g || !(o->g->d || o->g->D || o->g->S);
    if (plain && x == xe && !self && !h->w) {
        copy_row(o, a, mj, len, stride);
        return;
    }
    bool fetch = !plain;
    for (int64_t t = 0; t <= len; t++) {
        if (fetch && t + HALO_PREFETCH < len)
            prefetch_point(h->points, mj[(t + HALO_PREFETCH) * stride]);
        /* before main entry t (or the row's end): the hits, and self, below it */
        halo_hit probe = {.i = a, .j = t < len ? mj[t * stride] : 0, .S = {0, 0, 0}};
        for (; x < xe && (t == len || hit_before(&o->hits[x], &probe)); x++) {
            if (self && !hit_before(&o->hits[x], &(halo_hit){.j = a})) {
                write_entry(o, a, a, zero);
                self = false;
            }
            write_entry(o, a, o->hits[x].j, o->hits[x].S);
        }
        if (self && (t == len || a < probe.j)) {
            write_entry(o, a, a, zero);
            self = false;
        }
        if (t < len && main_kept(h, a, probe.j))
            write_entry(o, a, probe.j, zero);
    }
}

/* Main pairs from `at` with a first point below `a`, shift 0, nothing to
 * merge and i and j asked for at most: deinterleaved at once. Returns the
 * first pair not copied. */
static int64_t copy_pairs_below(halo_out *o, int64_t at, prox_index a)
{
    const prox_pair *pairs = o->main.pairs;
    int64_t end = at, p = o->written;
    while (end < o->main.count && pairs[end].i < a)
        end++;
    prox_geometry *g = o->g;
    prox_index *restrict gi = g ? g->i + p - at : NULL, *restrict gj = g ? g->j + p - at : NULL;
    if (g && g->i && g->j)
        for (int64_t t = at; t < end; t++) {
            gi[t] = pairs[t].i;
            gj[t] = pairs[t].j;
        }
    else if (g && g->i)
        for (int64_t t = at; t < end; t++)
            gi[t] = pairs[t].i;
    else if (g && g->j)
        for (int64_t t = at; t < end; t++)
            gj[t] = pairs[t].j;
    o->written += end - at;
    return end;
}

/* Whether rows without hits are the main search's, copied as they are. */
static bool rows_plain(const halo_out *o)
{
    const halo *h = o->h;
    return !h->self_interaction && !h->w && (!o->g || !(o->g->d || o->g->D || o->g->S));
}

/* The first main pair of row a or later. */
static int64_t main_row_start(const main_rows *m, prox_index a)
{
    if (m->lists)
        return m->lists->offsets[a];
    int64_t lo = 0, hi = m->count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (m->pairs[mid].i < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Rows [a0, a1) into the output from o->written on. */
static void emit_rows(halo_out *o, prox_index a0, prox_index a1)
{
    o->main.at = o->main.lists ? 0 : main_row_start(&o->main, a0);
    if (!rows_plain(o) || o->main.lists) {
        for (prox_index a = a0; a < a1; a++)
            emit_row(o, a);
        return;
    }
    for (prox_index a = a0; a < a1; a++)
        if (o->hit_start[a] < o->hit_start[a + 1]) {
            o->main.at = copy_pairs_below(o, o->main.at, a);
            emit_row(o, a);
        }
    copy_pairs_below(o, o->main.at, a1);
}

/* The entries of rows [a0, a1): the main search's kept, the hits
 * (reverses included) and the self pairs. */
static int64_t rows_count(const halo *h, const main_rows *m, const uint32_t *hit_start,
                          prox_index a0, prox_index a1)
{
    int64_t count = (int64_t)hit_start[a1] - hit_start[a0] + (h->self_interaction ? a1 - a0 : 0);
    int64_t b = main_row_start(m, a0), e = main_row_start(m, a1);
    if (!h->w)
        return count + e - b;
    for (prox_index a = a0; m->lists && a < a1; a++)
        for (int64_t t = m->lists->offsets[a]; t < m->lists->offsets[a + 1]; t++)
            count += main_kept(h, a, m->lists->indices[t]);
    for (int64_t p = b; !m->lists && p < e; p++)
        count += main_kept(h, m->pairs[p].i, m->pairs[p].j);
    return count;
}

/* Rows a part of the output's writing holds at least, so that each
 * part's copy outweighs its binary searches; parts run on the threads. */
#define HALO_PART_ROWS 16384

static prox_status write_output(const halo *h, main_rows main, const halo_hit *hits,
                                const uint32_t *hit_start, prox_geometry *g, int64_t *count)
{
    int threads = prox_threads_resolve(h->grid.threads);
    int64_t parts = h->n / HALO_PART_ROWS;
    parts = parts < 1 ? 1 : parts > 8 * threads ? 8 * threads : parts;
    int64_t *at = prox_alloc_array(h->al, parts + 1, sizeof *at);
    if (!at)
        return PROX_ERR_NO_MEMORY;
    at[0] = 0;
#pragma omp parallel for num_threads(threads) if (parts > 1) schedule(dynamic, 1)
    for (int64_t k = 0; k < parts; k++)
        at[k + 1] = rows_count(h, &main, hit_start, (prox_index)(h->n * k / parts),
                               (prox_index)(h->n * (k + 1) / parts));
    for (int64_t k = 0; k < parts; k++)
        at[k + 1] += at[k];
    *count = at[parts];
    prox_status st = g ? prox_geometry_alloc(g, *count, h->dim) : PROX_OK;
    if (g && !st) {
#pragma omp parallel for num_threads(threads) if (parts > 1) schedule(dynamic, 1)
        for (int64_t k = 0; k < parts; k++) {
            halo_out o = {.h = h, .g = g, .main = main, .hits = hits, .hit_start = hit_start,
                          .written = at[k]};
            emit_rows(&o, (prox_index)(h->n * k / parts), (prox_index)(h->n * (k + 1) / parts));
        }
    }
    prox_free(h->al, at);
    return st;
}

/* ---- the output in the main search's rows -------------------------------
 * When only i and j are asked for, every point lies inside the cell (its
 * main pairs all kept, at shift 0) and no self pair is wanted, the main
 * search writes its rows straight into the output's arrays with room for
 * each row's hits (prox_grid_split), and each row's hits are merged into
 * it as the grid places it, while it is in cache (merge_hits): no pairs
 * staged and copied. The output is the merge's above, to the bit. */

static bool output_in_rows(const halo *h, const prox_geometry *out)
{
    unsigned more = PROX_GEOMETRY_DISTANCE | PROX_GEOMETRY_VECTOR | PROX_GEOMETRY_SHIFT;
    return out && !h->w && !h->self_interaction && !(out->fields & more);
}

/* The room of row a (prox_grid_split's fill_room): its kept hits, sorted
 * by (j, S), merged with its main entries (shift 0, ascending) from the
 * row's end. A hit and a main entry never tie: a hit of the same j has a
 * nonzero S. */
typedef struct row_hits {
    const halo_hit *hits;
    const uint32_t *start;
} row_hits;

static void merge_hits(void *user, prox_index a, prox_index *row, int64_t entries, int64_t room)
{
    const row_hits *r = user;
    const halo_hit *hits = r->hits + r->start[a];
    int64_t m = entries - 1, x = room - 1;
    for (int64_t p = entries + room - 1; x >= 0; p--) {
        halo_hit main_entry = {.j = m >= 0 ? row[m] : 0};
        if (m >= 0 && hit_before(&hits[x], &main_entry))
            row[p] = row[m--];
        else
            row[p] = hits[x--].j;
    }
}

static prox_status main_rows_split(const halo *h, const prox_points *all, prox_grid_split *split,
                                   prox_stats *ms)
{
    prox_grid_desc d = h->grid;
    if (d.coords == PROX_COORDS_AUTO) /* the caller's points are held for the whole call */
        d.coords = prox_grid_coords_for_held_points();
    prox_grid *grid = NULL;
    prox_status st = prox_grid_create(&d, &grid);
    if (!st)
        st = prox_grid_build(grid, all);
    if (!st)
        st = prox_grid_pairs_split(grid, split, ms);
    prox_grid_destroy(grid);
    return st;
}

static prox_status output_from_rows(const halo *h, const halo_hit *hits,
                                    const uint32_t *hit_start, prox_geometry *out,
                                    prox_stats *ms)
{
    prox_points all = base_view(h);
    row_hits rows = {hits, hit_start};
    prox_grid_split split = {.full = h->full, .room_start = hit_start, .fill_room = merge_hits,
                             .user = &rows, .allocator = &out->allocator};
    prox_status st = main_rows_split(h, &all, &split, ms);
    if (st)
        return st;
    prox_free(&out->allocator, split.starts);
    out->i = split.i;
    out->j = split.j;
    if (!(out->fields & PROX_GEOMETRY_I)) {
        prox_free(&out->allocator, out->i);
        out->i = NULL;
    }
    if (!(out->fields & PROX_GEOMETRY_J)) {
        prox_free(&out->allocator, out->j);
        out->j = NULL;
    }
    out->count = split.count;
    out->dim = h->dim;
    return PROX_OK;
}

/* ---- the entry ---------------------------------------------------------- */

static void halo_free(halo *h)
{
    prox_free(h->al, h->faces);
    prox_free(h->al, h->w);
    prox_free(h->al, h->base);
}

/* The image pairs first (halo and moved searches, bucketed by row), then
 * the main search: into the output's rows where it can (output_in_rows),
 * otherwise as sorted pairs or lists merged with the hits into the output. */
static prox_status halo_run(halo *h, prox_geometry *out, prox_stats *stats)
{
    prox_pair_buffer pairs;
    prox_lists lists;
    prox_pair_buffer_init(&pairs, h->al);
    prox_lists_init(&lists, h->al);
    halo_hits hits = {0};
    halo_hit *sorted = NULL;
    uint32_t *start = NULL;
    int64_t candidates = 0, count = 0;
    prox_stats ms = {0};
    prox_status st = halo_search(h, &hits, &candidates);
    if (!st && h->moved)
        st = moved_search(h, &hits, &candidates);
    if (!st && !hits_rows(h, &hits, &sorted, &start))
        st = PROX_ERR_NO_MEMORY;
    prox_free(h->al, hits.at);
    if (!st && output_in_rows(h, out)) {
        st = output_from_rows(h, sorted, start, out, &ms);
        count = out->count;
    } else if (!st) {
        prox_points all = base_view(h);
        prox_sink sink = h->full ? prox_sink_lists(&lists) : prox_sink_buffer(&pairs);
        st = prox_pairs(&all, &h->grid, PROX_ALGO_GRID, sink, &ms);
        main_rows main = {.pairs = pairs.pairs, .count = pairs.count,
                          .lists = h->full ? &lists : NULL};
        if (!st)
            st = write_output(h, main, sorted, start, out, &count);
    }
    if (st == PROX_ERR_NO_MEMORY)
        st = prox_fail(st, "cell: no memory for the pairs of %lld points", (long long)h->n);
    if (stats && !st) {
        stats->pairs = count;
        stats->candidates = ms.candidates + candidates;
        stats->cells = ms.cells;
        stats->method = "cell.halo";
    }
    prox_pair_buffer_free(&pairs);
    prox_lists_free(&lists);
    prox_free(h->al, sorted);
    prox_free(h->al, start);
    return st;
}

prox_status prox_cell_halo_pairs(const prox_points *points, const prox_cell_desc *desc,
                                 const prox_cell_frame *frame, prox_geometry *out,
                                 prox_stats *stats, bool *served)
{
    *served = false;
    if (points->count < halo_min_points)
        return PROX_OK;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    halo h = {.points = points, .frame = frame, .al = &al, .dim = points->dim,
              .n = points->count, .r2 = desc->cutoff * desc->cutoff, .full = desc->full,
              .self_interaction = desc->self_interaction};
    double xmax;
    if (!measure(&h, &xmax) || !plan(&h, desc->cutoff, xmax))
        return PROX_OK;
    h.grid = prox_default_grid_desc();
    h.grid.radius = desc->cutoff;
    h.grid.threads = desc->threads;
    h.grid.allocator = al;
    prox_status st = PROX_OK;
    if (!classify_all(&h)) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld points", (long long)h.n);
        *served = true; /* refused here: the bins would need more */
    } else if (h.moved <= h.n / 8) {
        st = halo_run(&h, out, stats);
        *served = st != PROX_ERR_RANGE;
    }
    halo_free(&h);
    return *served ? st : PROX_OK;
}
