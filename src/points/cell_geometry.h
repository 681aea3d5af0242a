/* cell_geometry.h (cell_geometry.c): the geometry of a periodic cell of any
 * shape: its matrix made invertible, fractional coordinates, heights, and
 * the bins and stencil that hold the cutoff (docs/design.md, "Periodic
 * cells of any shape"). It knows no traversal and no output. */
#ifndef PROX_CELL_GEOMETRY_H
#define PROX_CELL_GEOMETRY_H

#include <stdint.h>

#include "prox/cell.h"

typedef struct prox_cell_frame {
    double m[3][3];      /* the caller's rows, a zero row of an open axis replaced */
    double inv[3][3];    /* m^-1: f = x . inv (row vectors) */
    double height[3];    /* distance between the two faces spanned by the other rows */
    bool pbc[3];
    int dim;
} prox_cell_frame;

/* The caller's cell checked and made ready (message names the fault). */
prox_status prox_cell_frame_make(const prox_cell_desc *desc, int dim, prox_cell_frame *frame);

/* Fractional coordinate k of the point x (3 doubles). */
static inline double prox_cell_fraction(const prox_cell_frame *c, const double *x, int k)
{
    return (x[0] * c->inv[0][k] + x[1] * c->inv[1][k]) + x[2] * c->inv[2][k];
}

/* Point i of p widened to double, 3 entries (0 past its dimension). */
static inline void prox_cell_load(const prox_points *p, int64_t i, double *x)
{
    for (int k = 0; k < 3; k++)
        x[k] = k < p->dim ? prox_points_get(p, i, k) : 0.0;
}

/* The points seen in a frame: the fraction range per axis and the largest
 * coordinate and fraction (the bounds the searches' rounding guards
 * need). */
typedef struct prox_cell_extent {
    double fmin[3], fmax[3];
    double xmax;  /* largest |coordinate| */
    double fbig;  /* largest |fraction| */
} prox_cell_extent;

/* The extent of p; refuses a non-finite coordinate (PROX_ERR_DATA, the
 * message names the point) and a point more than 2^30 cells from the
 * origin along a periodic axis (PROX_ERR_RANGE: shifts would overflow). */
prox_status prox_cell_measure(const prox_points *p, const prox_cell_frame *c,
                              prox_cell_extent *e);

/* A bound on the rounding error of a fraction computed for a point of
 * extent e: the inverse's error (condition number times epsilon) times the
 * fraction's size. */
double prox_cell_fraction_error(const prox_cell_frame *c, const prox_cell_extent *e);

/* S lexicographically positive: its first nonzero entry above 0 (the
 * half list's orientation of a self-image, cell.h). */
static inline bool prox_cell_shift_positive(const int32_t *S)
{
    return S[0] != 0 ? S[0] > 0 : S[1] != 0 ? S[1] > 0 : S[2] > 0;
}

/* The bins: nb[k] along axis k (bin k covers fractions [lo + b*width,
 * lo + (b+1)*width) of axis k; periodic: lo = 0, width = 1/nb), and the
 * stencil n[k]: a pair within the cutoff lies at most n[k] bins apart
 * along axis k, rounding of the fractions included. */
typedef struct prox_cell_bins {
    int64_t nb[3];
    int64_t n[3];
    double lo[3];
    double width[3];
    int64_t total;        /* nb[0] * nb[1] * nb[2] */
} prox_cell_bins;

/* Chooses the bins for `count` points whose fractions lie in
 * [fmin[k], fmax[k]] (open axes) and are wrapped into [0, 1) (periodic
 * ones), with `ferr` a bound on the rounding error of a fraction. Refuses
 * (PROX_ERR_RANGE) a stencil of more than PROX_CELL_MAX_STENCIL bins. */
prox_status prox_cell_bins_plan(const prox_cell_frame *c, double cutoff, int64_t count,
                                const double *fmin, const double *fmax, double ferr,
                                prox_cell_bins *bins);

/* The bin along axis k of fraction f (wrapped for a periodic axis). */
static inline int64_t prox_cell_bin_of(const prox_cell_bins *b, int k, double f)
{
    double t = (f - b->lo[k]) / b->width[k];
    int64_t v = t >= 0 ? (int64_t)t : 0;
    return v < b->nb[k] ? v : b->nb[k] - 1;
}

/* The slots t of [lo, hi) whose (x[t], y[t], z[t]) lies within squared
 * distance r2 of q, ascending, into hits (room for hi - lo +
 * PROX_CELL_SCREEN_SLACK); returns how many. The engine's double kernel at
 * the SIMD level in use (cell_screen.c); a screen, so any level's answer
 * serves. */
#define PROX_CELL_SCREEN_SLACK 16
int64_t prox_cell_screen(const double *x, const double *y, const double *z, int64_t lo,
                         int64_t hi, const double q[3], double r2, uint32_t *hits);

/* An optional prescreen of prox_cell_image_hits: p[k][t] =
 * (float)(x[k][t] + v[k][t]), and the rule is evaluated only for images
 * with (e0^2 + e1^2) + e2^2 <= r2 in float, e[k] = p[k][t] - (float)q[k]:
 * r2 must be wide enough that no pair of the rule fails (the caller's
 * proof: cell_direct.c, prescreen_radius). */
typedef struct prox_cell_prescreen {
    const float *p[3];
    float r2;
} prox_cell_prescreen;

/* The images t of [lo, hi) within the cutoff of the point q by the rule of
 * cell.h, decided exactly: D[k] = (x[k][t] - q[k]) + v[k][t], with x the
 * caller's coordinates of the image's point and v its shift vector
 * S . cell as the rule computes it; indices ascending into hits (room for
 * hi - lo + PROX_CELL_SCREEN_SLACK). The engine's double lanes at the SIMD
 * level in use (cell_screen.c): every level gives the same bits.
 * screen: NULL, or the float prescreen above. */
int64_t prox_cell_image_hits(const double *const x[3], const double *const v[3],
                             const prox_cell_prescreen *screen, int64_t lo, int64_t hi,
                             const double q[3], double r2, uint32_t *hits);

#endif
