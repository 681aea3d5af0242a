/* cell_geometry.c: a cell's matrix, inverse and heights, and the bins that
 * hold the cutoff (cell_geometry.h). */
#include <float.h>
#include <math.h>

#include "core/error.h"
#include "points/cell_geometry.h"

static const char axis_name[3] = {'a', 'b', 'c'};

static double det3(double m[3][3])
{
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

static void cross(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static double norm3(const double *v)
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

static bool row_is_zero(const double *v)
{
    return v[0] == 0 && v[1] == 0 && v[2] == 0;
}

/* The zero rows of open axes (flagged in `zero`): the unit axis
 * directions that make the matrix best conditioned, over every choice (at
 * most 27). Their values never reach a result (S is 0 along an open axis);
 * they only orient the bins. */
static void fill_open_rows(double m[3][3], const bool *zero)
{
    double best = -1;
    int pick = 0;
    for (int choice = 0; choice < 27; choice++) {
        for (int k = 0, e = choice; k < 3; k++, e /= 3)
            if (zero[k]) {
                m[k][0] = m[k][1] = m[k][2] = 0;
                m[k][e % 3] = 1;
            }
        double d = fabs(det3(m));
        if (d > best) {
            best = d;
            pick = choice;
        }
    }
    for (int k = 0, e = pick; k < 3; k++, e /= 3)
        if (zero[k]) {
            m[k][0] = m[k][1] = m[k][2] = 0;
            m[k][e % 3] = 1;
        }
}

static prox_status check_2d(const prox_cell_desc *desc)
{
    const double(*c)[3] = (const double(*)[3])desc->cell;
    if (c[0][2] != 0 || c[1][2] != 0 || c[2][0] != 0 || c[2][1] != 0 || c[2][2] != 0)
        return prox_fail(PROX_ERR_INVALID,
                         "cell: 2D points take a 2x2 cell (the third row and column zero)");
    if (desc->pbc[2])
        return prox_fail(PROX_ERR_INVALID, "cell: 2D points have no periodic third axis (pbc[2])");
    return PROX_OK;
}

/* m^-1 by cofactors; det != 0 checked by the caller. */
static void invert(double m[3][3], double det, double inv[3][3])
{
    double c[3][3];
    cross(m[1], m[2], c[0]);
    cross(m[2], m[0], c[1]);
    cross(m[0], m[1], c[2]);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            inv[r][k] = c[k][r] / det; /* column k of the inverse is row k's cofactor / det */
}

prox_status prox_cell_frame_make(const prox_cell_desc *desc, int dim, prox_cell_frame *c)
{
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(desc->cell[r][k]))
                return prox_fail(PROX_ERR_INVALID, "cell[%d][%d] is %g; it must be finite", r, k,
                                 desc->cell[r][k]);
    if (dim == 2) {
        prox_status st = check_2d(desc);
        if (st)
            return st;
    }
    c->dim = dim;
    for (int k = 0; k < 3; k++) {
        c->pbc[k] = k < dim && desc->pbc[k];
        for (int l = 0; l < 3; l++)
            c->m[k][l] = desc->cell[k][l];
    }
    if (dim == 2) /* the plane's normal: z stays the third axis */
        c->m[2][2] = 1;
    bool zero[3];
    for (int k = 0; k < 3; k++) {
        zero[k] = row_is_zero(c->m[k]);
        if (zero[k] && c->pbc[k])
            return prox_fail(PROX_ERR_INVALID, "cell: vector %c is zero on a periodic axis",
                             axis_name[k]);
    }
    fill_open_rows(c->m, zero);
    double det = det3(c->m);
    double scale = norm3(c->m[0]) * norm3(c->m[1]) * norm3(c->m[2]);
    if (!(fabs(det) > 1e-12 * scale) || !isfinite(det))
        return prox_fail(PROX_ERR_INVALID,
                         "cell: the vectors are (nearly) linearly dependent (volume %g against "
                         "|a||b||c| = %g): a singular cell",
                         fabs(det), scale);
    invert(c->m, det, c->inv);
    for (int k = 0; k < 3; k++) {
        double face[3];
        cross(c->m[(k + 1) % 3], c->m[(k + 2) % 3], face);
        c->height[k] = fabs(det) / norm3(face);
    }
    return PROX_OK;
}

/* Bins and stencil along one axis for `divisions` bins per reach. reach
 * is the cutoff in fractions of the axis, rounding guard included. */
static void plan_axis(const prox_cell_frame *c, int k, double reach, double fmin, double fmax,
                      int divisions, prox_cell_bins *b)
{
    if (c->pbc[k]) {
        double nb = floor(divisions / reach);
        b->nb[k] = nb < 1 ? 1 : nb > (1 << 20) ? (1 << 20) : (int64_t)nb;
        b->lo[k] = 0;
    } else {
        double extent = fmax - fmin;
        double nb = extent > 0 ? floor(divisions * extent / reach) : 1;
        b->nb[k] = nb < 1 ? 1 : nb > (1 << 20) ? (1 << 20) : (int64_t)nb;
        b->lo[k] = fmin;
    }
}

static void plan_stencil(const prox_cell_frame *c, const double *reach, const double *fmin,
                         const double *fmax, prox_cell_bins *b)
{
    b->total = 1;
    for (int k = 0; k < 3; k++) {
        if (c->pbc[k]) {
            b->width[k] = 1.0 / (double)b->nb[k];
        } else {
            double extent = fmax[k] - fmin[k];
            /* the last bin reaches past fmax by a margin: no fraction lands beyond it */
            b->width[k] = extent > 0 ? extent * (1 + 1e-9) / (double)b->nb[k] : 1.0;
        }
        double n = ceil(reach[k] / b->width[k]);
        if (!c->pbc[k] && n > (double)(b->nb[k] - 1))
            n = (double)(b->nb[k] - 1);
        b->n[k] = n > 4e18 ? INT64_MAX / 4 : (int64_t)n;
        b->total *= b->nb[k];
    }
}

/* The cost of one point's search in candidate tests: each run of bins
 * along the first axis (a row of the stencil splits into one run per
 * image) costs about a dozen tests, each candidate one. */
static double plan_cost(const prox_cell_bins *b, int64_t count)
{
    double rows = 1, share = 1;
    for (int k = 0; k < 3; k++) {
        double span = (double)(2 * b->n[k] + 1);
        if (k > 0)
            rows *= span;
        share *= span / (double)b->nb[k];
    }
    double runs = ceil((double)(2 * b->n[0] + 1) / (double)b->nb[0]) + (b->nb[0] > 1);
    return 12 * rows * runs + share * (double)count;
}

prox_status prox_cell_bins_plan(const prox_cell_frame *c, double cutoff, int64_t count,
                                const double *fmin, const double *fmax, double ferr,
                                prox_cell_bins *out)
{
    double reach[3];
    double stencil = 1;
    for (int k = 0; k < 3; k++) {
        /* a pair within the cutoff is at most cutoff/height apart in fractions
         * of axis k; the guard covers the rounding of both fractions */
        reach[k] = k < c->dim ? cutoff / c->height[k] * (1 + 0x1p-30) + 2 * ferr : 0;
        if (c->pbc[k])
            stencil *= 2 * ceil(reach[k]) + 1;
    }
    if (!(stencil <= PROX_CELL_MAX_STENCIL))
        return prox_fail(PROX_ERR_RANGE,
                         "cutoff %g over cell heights %g, %g, %g would search %.3g images of "
                         "each point (at most %d): too many images",
                         cutoff, c->height[0], c->height[1], c->height[2], stencil,
                         PROX_CELL_MAX_STENCIL);
    double budget = count < 32 ? 64 : 2.0 * (double)count;
    double best_cost = INFINITY;
    for (int divisions = 1; divisions <= 3; divisions++) {
        prox_cell_bins b;
        for (int k = 0; k < 3; k++)
            plan_axis(c, k, reach[k] > 0 ? reach[k] : 1, fmin[k], fmax[k], divisions, &b);
        for (int guard = 0; guard < 64; guard++) {
            double total = (double)b.nb[0] * (double)b.nb[1] * (double)b.nb[2];
            if (total <= budget)
                break;
            double f = cbrt(budget / total);
            for (int k = 0; k < 3; k++) {
                int64_t nb = (int64_t)floor((double)b.nb[k] * f);
                b.nb[k] = nb < 1 ? 1 : nb < b.nb[k] ? nb : b.nb[k] - (b.nb[k] > 1);
            }
        }
        plan_stencil(c, reach, fmin, fmax, &b);
        double spans = 1;
        for (int k = 0; k < 3; k++)
            spans *= (double)(2 * b.n[k] + 1);
        if (!(spans <= PROX_CELL_MAX_STENCIL))
            continue;
        double cost = plan_cost(&b, count);
        if (cost < best_cost) {
            best_cost = cost;
            *out = b;
        }
    }
    if (best_cost == INFINITY)
        return prox_fail(PROX_ERR_RANGE, "cutoff %g: the cell's bins need a stencil of more "
                                         "than %d bins",
                         cutoff, PROX_CELL_MAX_STENCIL);
    return PROX_OK;
}

prox_status prox_cell_measure(const prox_points *p, const prox_cell_frame *c,
                              prox_cell_extent *e)
{
    for (int k = 0; k < 3; k++) {
        e->fmin[k] = INFINITY;
        e->fmax[k] = -INFINITY;
    }
    e->xmax = 0;
    e->fbig = 0;
    for (int64_t i = 0; i < p->count; i++) {
        double x[3];
        prox_cell_load(p, i, x);
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

double prox_cell_fraction_error(const prox_cell_frame *c, const prox_cell_extent *e)
{
    double nm = 0, ni = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            nm += c->m[r][k] * c->m[r][k];
            ni += c->inv[r][k] * c->inv[r][k];
        }
    return 64 * DBL_EPSILON * sqrt(nm * ni) * (e->fbig + 1);
}
