/* grid.c: the uniform grid for fixed-radius neighbour search.
 *
 * Build (the flat-array article and the fluid-hash chapter): every point gets
 * integer cell coordinates and a
 * sort key (Morton code of the cell, or Teschner's hash slot of the cell,
 * Pouchol et al. 2009, Eq. 1); points are radix-sorted by key into flat arrays (ids and
 * coordinates in cell order); consecutive points of one cell form a run.
 * A lookup finds the runs that may hold a given cell: an open-addressing
 * table over Morton keys, or the hash slot's range of runs (the flat-array article's
 * cellStart). Runs carry their exact cell coordinates, so hash collisions
 * cost a comparison, never a wrong or duplicated pair.
 *
 * Pairs (the hash-multimap article): each run meets its own later points, later runs of the
 * same cell, and the runs of the forward half of the stencil, so every pair
 * of cells, and so every pair of points, is examined exactly once.
 *
 * Exactness: cells are slightly larger than radius / divisions (by 2^-16
 * relative), and at most 2^31 cells fit along an axis. Two points within
 * the radius then always land within `divisions` cells of each other along
 * every axis, even after the rounding of (x - origin) / cell, whose error is
 * below 2^-21 cells there. The final decision is the shared exact test.
 *
 * This file holds geometry, stencil, build and update; grid_search.c the
 * searches; grid_private.h the data both share. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/grid_private.h"
#include "core/radix_sort.h"
#include "points/points_common.h"
#include "core/threads.h"
#include "core/views.h"

#define CELL_MARGIN (1.0 + 1.0 / 65536.0)
#define MAX_CELLS_PER_AXIS ((int64_t)1 << 31)
#define MORTON3_CELLS ((int64_t)1 << PROX_MORTON3_BITS)
/* Relocating moved points beats a full re-sort while fewer than this
 * fraction moved. */
#define UPDATE_REBUILD_FRACTION 0.25
/* Empty cells around the data's box along open axes: a 64th of the span
 * plus two cells on each side. */
#define UPDATE_PAD_FRACTION 64.0
#define UPDATE_PAD_CELLS 2.0

/* ---- geometry ----------------------------------------------------------- */

static int64_t next_pow2(int64_t v)
{
    int64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static void reset_geometry(prox_grid *g)
{
    for (int k = 0; k < 3; k++) {
        g->origin[k] = 0.0;
        g->inv_cell[k] = 0.0;
        g->ncell[k] = 1;
        g->reach[k] = 0;
        g->periodic[k] = false;
    }
}

/* Cell size and count along a periodic axis: the largest count whose cells
 * are still at least the minimum size; an axis too short for a stencil of
 * distinct cells becomes one cell (every point a candidate along it). */
static void periodic_axis(prox_grid *g, int k, double min_cell, int divisions)
{
    double L = g->desc.period[k];
    double fit = floor(L / min_cell);
    int64_t nc = fit > (double)(MAX_CELLS_PER_AXIS - 1) ? MAX_CELLS_PER_AXIS - 1 : (int64_t)fit;
    if (nc < 2 * divisions + 1)
        nc = 1;
    g->periodic[k] = true;
    g->ncell[k] = nc;
    g->inv_cell[k] = (double)nc / L;
    g->reach[k] = nc == 1 ? 0 : divisions;
}

static prox_status open_axis(prox_grid *g, int k, double lo, double hi, double min_cell,
                             int divisions)
{
    static const char axis_name[] = "xyz";
    double span = (hi - lo) / min_cell;
    if (!(span < (double)(MAX_CELLS_PER_AXIS - 2)))
        return prox_fail(PROX_ERR_RANGE,
                         "the points span %g cells of size %g along %c; at most 2^31 fit "
                         "(use a larger radius, or split the domain)",
                         span, min_cell, axis_name[k]);
    /* Empty cells on both sides give moving points room, so that
     * prox_grid_update relocates them instead of rebuilding (the fluid-hash chapter). */
    double pad = floor(span / UPDATE_PAD_FRACTION) + UPDATE_PAD_CELLS;
    if (!(span + 2 * pad < (double)(MAX_CELLS_PER_AXIS - 4)))
        pad = 0;
    g->origin[k] = lo - pad * min_cell;
    g->inv_cell[k] = 1.0 / min_cell;
    double last = floor((hi - g->origin[k]) * g->inv_cell[k]);
    /* (the radius's range keeps both finite; a guard, so that no
     * conversion below can overflow) */
    if (!isfinite(g->origin[k]) || !(last + pad < (double)(MAX_CELLS_PER_AXIS - 1)))
        return prox_fail(PROX_ERR_RANGE,
                         "the points along %c (%g .. %g) do not fit cells of size %g",
                         axis_name[k], lo, hi, min_cell);
    g->ncell[k] = (int64_t)last + 1 + (int64_t)pad;
    g->reach[k] = divisions;
    return PROX_OK;
}

/* Bounding box of the coordinates as given (only open axes' are read), and
 * whether every coordinate is finite: one pass over the points, where the
 * box took one per axis and the finiteness check another (the build reads
 * the caller's points twice more: keys, then coordinates in cell order).
 * v - v is +0 for a finite v and NaN for an infinite or NaN one, so the OR
 * of its bits is 0 exactly when all are finite: no branch, and an integer
 * chain instead of a floating-point sum's. */
static bool box_pass(const prox_points *p, int threads, int dim, double lo[3], double hi[3])
{
    double mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    uint64_t nonfinite = 0;
    int64_t n = p->count;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) \
    reduction(min : mn[:3]) reduction(max : mx[:3]) reduction(| : nonfinite) schedule(static)
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < dim; k++) {
            double v = prox_points_get(p, i, k), zero = v - v;
            uint64_t bits;
            memcpy(&bits, &zero, sizeof bits);
            mn[k] = v < mn[k] ? v : mn[k];
            mx[k] = v > mx[k] ? v : mx[k];
            nonfinite |= bits;
        }
    for (int k = 0; k < 3; k++) {
        lo[k] = n > 0 && k < dim ? mn[k] : 0.0;
        hi[k] = n > 0 && k < dim ? mx[k] : 0.0;
    }
    return nonfinite == 0;
}

/* The points as one array of packed doubles (prox_points_f64: x, y[, z],
 * x, ...) on open axes: blocks of 8 points, each value with an accumulator
 * of its own place in the block, which the compiler turns into vector
 * min, max and add (the per-coordinate loop above stays scalar); the
 * places are folded per axis at the end. The sum of v - v per place is 0
 * exactly when all its values are finite (NaN sticks). */
#define BOX_BLOCK 8

static bool packed_box_pass(const double *xyz, int64_t n, int threads, int dim,
                            double lo[3], double hi[3])
{
    enum { PLACES = 3 * BOX_BLOCK };
    double mn[PLACES], mx[PLACES], zero[PLACES];
    for (int j = 0; j < PLACES; j++) {
        mn[j] = INFINITY;
        mx[j] = -INFINITY;
        zero[j] = 0.0;
    }
    int64_t blocks = n / BOX_BLOCK, width = (int64_t)dim * BOX_BLOCK;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) \
    reduction(min : mn[:PLACES]) reduction(max : mx[:PLACES]) reduction(+ : zero[:PLACES]) \
    schedule(static)
    for (int64_t b = 0; b < blocks; b++)
        for (int j = 0; j < width; j++) {
            double v = xyz[b * width + j];
            mn[j] = v < mn[j] ? v : mn[j];
            mx[j] = v > mx[j] ? v : mx[j];
            zero[j] += v - v;
        }
    for (int64_t at = blocks * width; at < n * dim; at++) { /* the last points */
        double v = xyz[at];
        int j = (int)(at - blocks * width);
        mn[j] = v < mn[j] ? v : mn[j];
        mx[j] = v > mx[j] ? v : mx[j];
        zero[j] += v - v;
    }
    bool finite = true;
    for (int k = 0; k < 3; k++) {
        double a = INFINITY, z = -INFINITY;
        for (int j = k; j < width && k < dim; j += dim) {
            a = mn[j] < a ? mn[j] : a;
            z = mx[j] > z ? mx[j] : z;
            finite = finite && zero[j] == 0.0;
        }
        lo[k] = n > 0 && k < dim ? a : 0.0;
        hi[k] = n > 0 && k < dim ? z : 0.0;
    }
    return finite;
}

/* The caller's points as packed doubles (prox_points_f64's layout): the
 * passes over them then read one flat array, without the view's tests of
 * scalar type and period per coordinate. NULL otherwise. */
static const double *packed_f64(const prox_points *p)
{
    const double *x = p->axis[0];
    bool fits = p->scalar == PROX_F64 && p->stride == p->dim * (ptrdiff_t)sizeof(double);
    for (int k = 0; k < p->dim; k++)
        fits = fits && p->axis[k] == (const void *)(x + k);
    return fits ? x : NULL;
}

/* packed_f64 where the build may read the values as they are: on open
 * axes, or with every value of a periodic axis already in [0, period)
 * (choose_geometry's box), where wrapping changes nothing but the sign of
 * a -0.0, which no cell, fixed-point coordinate or squared difference
 * sees. */
static const double *packed_unwrapped_f64(const prox_grid *g, const prox_points *p)
{
    return g->inside_periods ? packed_f64(p) : NULL;
}

/* The periods packed_coord wraps packed doubles by: NULL where
 * packed_unwrapped_f64 reads them as they are. */
static const double *packed_wrap(const prox_grid *g, const prox_points *p)
{
    return packed_unwrapped_f64(g, p) ? NULL : g->desc.period;
}

/* Coordinate k of packed point i, wrapped as prox_coord wraps it, or as
 * it is with period NULL (packed_unwrapped_f64). */
static inline double packed_coord(const double *xyz, int dim, int64_t i, int k,
                                  const double *period)
{
    double v = xyz[dim * i + k];
    return period ? prox_wrap_axis(v, k, period) : v;
}

/* The box of the caller's values, unwrapped: periodic axes' lo and hi are
 * not read (periodic_axis), and a value is finite exactly when its wrap
 * is. */
static bool bounding_box(const prox_points *p, int threads, double lo[3], double hi[3])
{
    const double *x = packed_f64(p);
    /* (a constant dim would not reach the loops: OpenMP outlines each
     * parallel loop into one function that reads dim at run time) */
    if (x)
        return packed_box_pass(x, p->count, threads, p->dim, lo, hi);
    return box_pass(p, threads, p->dim, lo, hi);
}

/* Linear keys index every cell of the box: a table entry per cell (4 bytes)
 * up to LINEAR_CELLS_PER_POINT cells per point; beyond, occupancy bits and
 * ranks (3/16 of a byte per cell) up to SPARSE_CELLS_PER_POINT, or up to
 * SPARSE_MIN_CELLS cells (3 MiB) for few points; sparser still, Morton keys.
 * One cell a point keeps the table within 4 bytes a point: W2 at k = 1
 * (3.35 cells a point) holds 18.1 bytes a point with the bits against 30.8
 * with a table, for a little more time (docs/design.md, "Keys"). */
#define LINEAR_CELLS_PER_POINT 1
#define LINEAR_MIN_CELLS 65536
#define SPARSE_CELLS_PER_POINT 256
#define SPARSE_MIN_CELLS (1 << 24)

/* ---- fixed-point coordinates (PROX_COORDS_FIXED) ---------------------- */

/* Fixed point is used up to this many cells along an axis (with a query's
 * reach on both sides): the offset in a cell then keeps at least 13 bits
 * (see fixed_tolerance). */
#define FIXED_MAX_CELLS ((int64_t)1 << 17)
/* The units of an axis (cells, plus a query's reach and one beyond on each
 * side) stay below 2^30, so that differences and periods fit in 32 bits. */
#define FIXED_UNITS_LOG2 30

/* e of axis k (fixed_tolerance, below): how far a stored coordinate lies
 * from its double, as a length. */
static double fixed_coord_error(const prox_grid *g, int k)
{
    double cell = 1.0 / g->inv_cell[k];
    double q = ldexp(cell, -g->fixed_shift[k]);
    double spanned = (double)(g->ncell[k] + 2 * g->reach[k] + 2);
    return q * (1.0 + 0x1p-20) + cell * spanned * 0x1p-50;
}

/* The bound `tol` (in radii^2) on the difference between the squared
 * distance the fixed-point kernel computes in float and the one brute force
 * computes in double (kernel_fixed.h), for candidates whose offsets along
 * every axis are at most 2r (a candidate farther along some axis has a
 * float value above 1.5 and a true one above 4: both say no).
 * - A stored coordinate is within e = q (1 + 2^-20) of its double, q being
 *   the unit (2^-shift of a cell): truncation to the unit, and the double
 *   arithmetic that placed it in its cell (relative 2^-52 of the cells
 *   spanned). Two of them: a difference within a = 2e of the double one,
 *   which itself is within 2^-52 relative of the true one.
 * - A squared difference then errs by at most (2 |dx| + a) a <= (4r + a) a.
 * - Float: the conversion of the integer difference, the scale (rounded
 *   from double) and the product err 3 * 2^-24 relative on dx, 7.1 * 2^-24
 *   on its square; two additions 2 * 2^-24 on the sum; all of it at most
 *   110 * 2^-24 r^2 = 2^-17.2 r^2 for three terms of at most 4 r^2 each.
 *   2^-15 r^2 covers it with room, and the double's own rounding.
 * So tol = sum over axes of (4r + a) a, plus 2^-15 r^2. */
static double fixed_tolerance(const prox_grid *g)
{
    double r = g->desc.radius, tol = 0x1p-15;
    for (int k = 0; k < g->dim; k++) {
        double a = 2.0 * fixed_coord_error(g, k) / r; /* in radii */
        tol += (4.0 + a) * a;
    }
    return tol;
}

/* The bounds of the first recheck (grid_within): the squared difference of
 * two points' fixed-point coordinates, an exact integer in 64 bits, for a
 * grid of one scale. Along an axis the difference is within 2e of that of
 * the doubles (two coordinates, each within e of its double); on a
 * periodic axis the minimum image adds the period's rounding, a few 2^-52
 * of it (period = cells times the cell length), for which 2^-48 of the
 * period is taken. So the distance is within eps sqrt(dim) units of the
 * doubles' (the triangle inequality), eps the largest axis's in units q,
 * as rel16's bounds with no bits dropped: a value up to (R - eps
 * sqrt(dim))^2 is within the radius R = r/q and one above (R + eps
 * sqrt(dim))^2 is not, with a relative 2^-30 of room for the doubles' own
 * rounding and the bounds' computation. Where the two minimum images
 * differ, both differences lie near half the period, which a periodic
 * axis of at least 4 radii puts beyond 2r: both say no. The band between
 * the bounds is some 2^-20 of r^2 on the standard workloads, a thousandth
 * of rel16's; only it goes on to the doubles. Units stay below 2^30, so
 * squares and their sum fit 64 bits. */
static void choose_fixed_recheck(prox_grid *g)
{
    const prox_fixed_metric *m = &g->fixed_metric;
    g->fixed_recheck = false;
    if (!g->fixed_on || !m->unit_scale)
        return;
    double q = ldexp(1.0 / g->inv_cell[0], -g->fixed_shift[0]), a = 0.0;
    for (int k = 0; k < g->dim; k++) {
        double period = g->periodic[k] ? g->desc.period[k] : 0.0;
        if (g->periodic[k] && period < 4.0 * g->desc.radius)
            return;
        double ak = 2.0 * fixed_coord_error(g, k) + ldexp(period, -48);
        a = ak > a ? ak : a;
    }
    double eps = a / q * sqrt((double)g->dim), R = g->desc.radius / q;
    if (R <= eps + 2.0 || R + eps >= 0x1p31)
        return;
    double in = (R - eps) * (R - eps) * (1.0 - 0x1p-30), out = (R + eps) * (R + eps) * (1.0 + 0x1p-30);
    g->fixed_in2 = (uint64_t)floor(in) - 1;
    g->fixed_out2 = (uint64_t)ceil(out) + 1;
    g->fixed_recheck = true;
}

/* The rel16 coordinates of kernel_fixed.h: a cell spans 2^REL16_CELL_BITS
 * units, and the stencil's candidates lie within 1.5 cells of the centre
 * of the run's cell. */
#define REL16_CELL_BITS 14

/* A periodic axis of 4 cells or more has half a period of at least 2 cells
 * around the centre: the stencil image of a candidate (within 1.5 cells) is
 * then the only one within half a period, which the gather takes, and every
 * other image lies over 2 cells from each point of the run's cell, beyond
 * the radius (at most a cell) by far more than the bounds' rounding. With
 * 3 cells the other image of a far candidate can come within a rounding of
 * the radius. */
#define REL16_MIN_PERIODIC_CELLS 4

/* Whether a grid's strips and rows may use rel16 coordinates (one scale:
 * fixed-point axes with at least REL16_CELL_BITS bits a cell; a reach of
 * one cell; periodic axes of at least REL16_MIN_PERIODIC_CELLS cells), and
 * their bounds:
 * - a unit u is 2^-14 cells; a coordinate keeps floor((X - centre) / 2^drop)
 *   of its fixed-point X, so that the difference of two is within one u of
 *   their fixed-point difference, itself within 2e of the difference of the
 *   doubles (fixed_tolerance's e): per axis within eps = 1 + 2e/u units;
 * - the distance of the units' differences is then within eps sqrt(dim) of
 *   the double one (the triangle inequality), so that a squared value up to
 *   (R - eps sqrt(dim))^2 is within the radius R = r/u, and one above
 *   (R + eps sqrt(dim))^2 is not, with a relative 2^-30 of room for the
 *   doubles' own rounding and the bounds' computation;
 * - the radius is at most a cell, so R < 2^14 and out2 < 2^29. */
bool prox_grid_rel16_metric(const prox_grid *g, prox_rel16_metric *m)
{
    const prox_fixed_metric *fm = &g->fixed_metric;
    if (!g->fixed_on || !fm->unit_scale || g->fixed_shift[0] < REL16_CELL_BITS)
        return false;
    for (int k = 0; k < g->dim; k++) /* strips of 3 cells: within 1.5 cells of the centre */
        if (g->reach[k] != 1 || (g->periodic[k] && g->ncell[k] < REL16_MIN_PERIODIC_CELLS))
            return false;
    double cell = 1.0 / g->inv_cell[0], u = ldexp(cell, -REL16_CELL_BITS), e = 0.0;
    for (int k = 0; k < g->dim; k++)
        e = fixed_coord_error(g, k) > e ? fixed_coord_error(g, k) : e;
    double eps = (1.0 + 2.0 * e / u) * sqrt((double)g->dim), R = g->desc.radius / u;
    if (R + eps >= 0x1p15 || R <= eps + 2.0) /* in2 >= 2: no wrap below 0 */
        return false;
    double in = (R - eps) * (R - eps) * (1.0 - 0x1p-30), out = (R + eps) * (R + eps) * (1.0 + 0x1p-30);
    m->drop = g->fixed_shift[0] - REL16_CELL_BITS;
    m->in2 = (uint32_t)floor(in) - 1;
    m->out2 = (uint32_t)ceil(out) + 1;
    return true;
}

/* The float just below (dir < 0) or above v: the bounds of the kernel's
 * decision stay on the safe side of their double values. */
static float float_beyond(double v, int dir)
{
    float f = (float)v;
    if (dir < 0 && (double)f >= v)
        f = nextafterf(f, -INFINITY);
    if (dir > 0 && (double)f <= v)
        f = nextafterf(f, INFINITY);
    return f;
}

/* Fixed point wherever the level has vectors: half the bytes and twice the
 * lanes of doubles, and rel16 strips and rows. The scalar level keeps
 * doubles: with one lane, the conversions and rechecks of fixed point cost
 * more than they save (PROX_SIMD=scalar prox pairs --count --stats with
 * --coords fixed, then double, compares the two: query_s). */
prox_coords prox_grid_coords_for_held_points(void)
{
    return PV_W == 1 ? PROX_COORDS_DOUBLE : PROX_COORDS_FIXED;
}

/* Fixed point when asked for, with linear keys, and when every axis has at
 * most FIXED_MAX_CELLS cells; otherwise doubles. Axes whose cells have one
 * size (all open axes) share one shift, so that their units are equal and
 * the kernel compares squared units without scaling (unit_scale). */
static void choose_coords(prox_grid *g)
{
    g->fixed_on = false;
    if (g->desc.coords != PROX_COORDS_FIXED || g->keys != PROX_KEYS_LINEAR)
        return;
    prox_fixed_metric *m = &g->fixed_metric;
    *m = (prox_fixed_metric){0};
    int least = FIXED_UNITS_LOG2;
    m->unit_scale = true;
    for (int k = 0; k < 3; k++) {
        int64_t units = g->ncell[k] + 2 * g->reach[k] + 2;
        if (units > FIXED_MAX_CELLS)
            return;
        int bits = 0;
        while (((int64_t)1 << bits) < units)
            bits++;
        g->fixed_shift[k] = FIXED_UNITS_LOG2 - bits; /* units << shift <= 2^30 */
        if (k < g->dim) {
            least = g->fixed_shift[k] < least ? g->fixed_shift[k] : least;
            m->unit_scale &= g->inv_cell[k] == g->inv_cell[0];
        }
    }
    /* the neighbour rule's threshold, r^2 (core/exact.h), in the units
     * compared: in2 and out2 bound it from below and above */
    double r = g->desc.radius, bound2 = 1.0;
    for (int k = 0; k < g->dim; k++) {
        if (m->unit_scale)
            g->fixed_shift[k] = least;
        double unit = ldexp(1.0 / g->inv_cell[k], -g->fixed_shift[k]); /* length */
        m->scale[k] = m->unit_scale ? 1.0f : (float)(unit / r);
        if (m->unit_scale)
            bound2 = (r / unit) * (r / unit);
        if (g->periodic[k])
            m->period[k] = (int32_t)(g->ncell[k] << g->fixed_shift[k]);
        m->periodic |= g->periodic[k];
    }
    double tol = fixed_tolerance(g); /* in radii^2 */
    m->in2 = float_beyond(bound2 * (1.0 - tol), -1);
    m->out2 = float_beyond(bound2 * (1.0 + tol), +1);
    g->fixed_on = true;
    choose_fixed_recheck(g);
}

static bool cells_fit(const prox_grid *g, int64_t n, double per_point, double minimum)
{
    double cells = (double)g->ncell[0] * (double)g->ncell[1] * (double)g->ncell[2];
    double limit = per_point * (double)n;
    return cells <= (limit > minimum ? limit : minimum);
}

static prox_status choose_geometry(prox_grid *g, const prox_points *p)
{
    int d = g->desc.cell_divisions;
    double min_cell = g->desc.radius * CELL_MARGIN / d;
    double lo[3], hi[3];
    reset_geometry(g);
    if (!bounding_box(p, g->threads, lo, hi))
        return prox_fail_recheck(prox_points_check_finite(p, "points", g->threads), "points");
    g->inside_periods = true;
    for (int k = 0; k < p->dim; k++) {
        double period = g->desc.period[k];
        g->inside_periods &= period == 0 || (lo[k] >= 0.0 && hi[k] < period);
        if (period > 0) {
            periodic_axis(g, k, min_cell, d);
        } else {
            prox_status st = open_axis(g, k, lo[k], hi[k], min_cell, d);
            if (st)
                return st;
        }
    }
    g->dim = p->dim;
    g->keys = g->desc.keys;
    g->sparse = false;
    double table_cells = g->table_cells_limit > 0 ? g->table_cells_limit : LINEAR_CELLS_PER_POINT;
    if (g->keys == PROX_KEYS_LINEAR && !cells_fit(g, p->count, table_cells, LINEAR_MIN_CELLS)) {
        if (cells_fit(g, p->count, SPARSE_CELLS_PER_POINT, SPARSE_MIN_CELLS))
            g->sparse = true;
        else
            g->keys = PROX_KEYS_MORTON; /* documented: too sparse even for occupancy bits */
    }
    if (g->keys == PROX_KEYS_MORTON && p->dim == 3)
        for (int k = 0; k < 3; k++)
            if (g->ncell[k] > MORTON3_CELLS)
                g->keys = PROX_KEYS_HASH; /* documented: too many cells for 63-bit codes */
    choose_coords(g);
    return PROX_OK;
}

/* ---- stencil ------------------------------------------------------------ */

/* An offset is in the forward half when its last non-zero component is
 * positive: exactly one of o and -o is. */
static bool is_forward(const int o[3])
{
    for (int k = 2; k >= 0; k--)
        if (o[k] != 0)
            return o[k] > 0;
    return false;
}

/* Cells whose closest points are farther apart than the radius along the
 * offset can hold no neighbour (only with cell_divisions >= 3). */
static bool offset_can_reach(const prox_grid *g, const int o[3])
{
    double gap2 = 0.0;
    for (int k = 0; k < g->dim; k++) {
        if (g->periodic[k] || o[k] == 0)
            continue; /* periodic cells can be wider: stay conservative */
        double gap = (fabs((double)o[k]) - 1.0) / g->inv_cell[k];
        gap2 += gap * gap;
    }
    return gap2 <= g->desc.radius * g->desc.radius;
}

static prox_status build_stencil(prox_grid *g)
{
    int side[3], total = 1;
    for (int k = 0; k < 3; k++) {
        side[k] = 2 * g->reach[k] + 1;
        total *= side[k];
    }
    prox_free(&g->allocator, g->stencil);
    g->stencil = prox_alloc_array(&g->allocator, total, sizeof *g->stencil);
    if (!g->stencil)
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for the stencil");
    /* forward offsets first, then the others (zero included) */
    int count = 0, forward = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int a = 0; a < total; a++) {
            int o[3] = {a % side[0] - g->reach[0], a / side[0] % side[1] - g->reach[1],
                        a / (side[0] * side[1]) - g->reach[2]};
            if (is_forward(o) == (pass == 0) && offset_can_reach(g, o))
                g->stencil[count++] = (cell3){{o[0], o[1], o[2]}};
        }
        if (pass == 0)
            forward = count;
    }
    g->stencil_forward = forward;
    g->stencil_full = count;
    return PROX_OK;
}

/* ---- lifetime ------------------------------------------------------------ */

void prox_grid_set_density_limits(prox_grid *g, double table_cells_per_point,
                                  double sweep_points_per_run, double half_pairs_points_per_run)
{
    assert(table_cells_per_point >= 0 && sweep_points_per_run >= 0 &&
           half_pairs_points_per_run >= 0);
    g->table_cells_limit = table_cells_per_point;
    g->sweep_limit = sweep_points_per_run;
    g->half_pairs_limit = half_pairs_points_per_run;
}

prox_status prox_grid_create(const prox_grid_desc *desc, prox_grid **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_grid_create: out is NULL");
    *out = NULL;
    prox_status st = prox_grid_desc_check(desc, 3);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    int64_t fresh = prox_fresh_bytes();
    prox_grid *g = prox_alloc_array(&al, 1, sizeof *g);
    if (!g)
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory");
    memset(g, 0, sizeof *g);
    g->fresh_mark = fresh;
    g->desc = *desc;
    g->allocator = al;
    g->threads = prox_threads_resolve(desc->threads);
    grid_work_init(&g->work, &al, g->threads);
    *out = g;
    return PROX_OK;
}

void prox_grid_destroy(prox_grid *g)
{
    if (!g)
        return;
    prox_allocator al = g->allocator;
    void *blocks[] = {g->id,    g->pos,      g->run_start, g->run_cell,
                      g->table, g->occupied, g->rank,      g->stencil};
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        prox_free(&al, blocks[b]);
    prox_grid_free_kept(g);
    prox_free(&al, g);
}

void prox_grid_free_kept(prox_grid *g)
{
    grid_work_free(&g->work);
}

void prox_grid_trim(prox_grid *g)
{
    if (g)
        prox_grid_free_kept(g);
}

int64_t prox_grid_kept_bytes(const prox_grid *g)
{
    return grid_work_bytes(&g->work);
}

int64_t prox_grid_bytes(const prox_grid *g)
{
    return g->id_cap * 4 + g->pos_cap * 8 + g->run_start_cap * 4 +
           g->run_cell_cap * (int64_t)sizeof(cell3) +
           g->table_cap * 4 + g->occupied_cap * 8 + g->rank_cap * 4 + (int64_t)sizeof *g;
}

static bool reserve(prox_grid *g, void *ptr, int64_t *cap, int64_t count, size_t size)
{
    return prox_reserve_threads(&g->allocator, (void **)ptr, cap, count, size, g->threads);
}

/* Cells of the box, saturated at INT64_MAX: up to 2^31 along each axis,
 * their product can exceed 64 bits (then only the comparisons against the
 * table's limits read it). */
static int64_t linear_cells(const prox_grid *g)
{
    int64_t cells = 1;
    for (int k = 0; k < 3; k++) {
        if (g->ncell[k] > INT64_MAX / cells)
            return INT64_MAX;
        cells *= g->ncell[k];
    }
    return cells;
}

/* Linear keys sort by counting (the flat-array article), into a table of every cell or
 * over a sparse box into occupancy bits; the other keys by radix. */
static bool builds_by_counting(const prox_grid *g)
{
    return g->keys == PROX_KEYS_LINEAR && linear_cells(g) < UINT32_MAX;
}

/* Doubles the coordinate array holds: one per axis and point, and at least
 * 2.5 per point with doubles (an update's scratch: 20 bytes), and the room
 * the sort's keys and scratch need meanwhile: 20 bytes for the radix sort,
 * about 12 for the counting sort (build_by_counting). Fixed point takes 4
 * bytes per axis and point, and 4 more when the keys' pass converts the
 * points (converts_with_keys). */
static int64_t coordinate_slots(const prox_grid *g, int64_t n)
{
    int64_t cells = linear_cells(g);
    int64_t fixed_words = g->fixed_with_keys ? (g->dim + 1) * n : g->dim * n;
    int64_t coords = g->fixed_on ? (fixed_words + 1) / 2 : g->dim == 3 ? 3 * n : (5 * n + 1) / 2;
    int64_t sort = !builds_by_counting(g) ? (5 * n + 1) / 2
                   : g->sparse            ? (n + 1) / 2 + prox_sparse_sort_words(n, cells)
                                          : (n + 1) / 2 + prox_counting_sort_sliced_words(n, cells);
    return coords > sort ? coords : sort;
}

static prox_status reserve_points(prox_grid *g, int64_t n)
{
    int64_t slack_slots = (GRID_READ_SLACK + 1) / 2; /* pos[] holds 2 words a slot */
    if (reserve(g, &g->id, &g->id_cap, n + GRID_READ_SLACK, sizeof *g->id) &&
        reserve(g, &g->pos, &g->pos_cap, coordinate_slots(g, n) + slack_slots, sizeof *g->pos))
        return PROX_OK;
    return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld points", (long long)n);
}

/* Sorting happens before the coordinates are gathered, so the coordinate
 * array (24 bytes per point) holds the sort's keys and scratch meanwhile:
 * bytes [0, 8n) the keys, [8n, 16n) scratch keys, [16n, 20n) scratch ids.
 * The storage is malloc'd, so reusing it under another type is well
 * defined. The grid keeps no key per point afterwards: runs carry their
 * exact cells, and a run's key is computed from its cell when needed. */
static uint64_t *sort_keys(const prox_grid *g)
{
    return (uint64_t *)(void *)g->pos;
}

static uint64_t *scratch_keys(const prox_grid *g)
{
    return (uint64_t *)(void *)(g->pos + g->n);
}

static prox_index *scratch_ids(const prox_grid *g)
{
    return (prox_index *)(void *)(g->pos + 2 * g->n);
}

/* ---- building ------------------------------------------------------------ */

/* The cell of the caller's point i (wrapped on periodic axes). */
static inline cell3 cell_of_input(const prox_grid *g, const prox_points *p, int64_t i)
{
    const double *period = g->desc.period;
    double z = p->dim == 3 ? prox_coord(p, i, 2, period) : 0.0;
    return cell_of_point(g, prox_coord(p, i, 0, period), prox_coord(p, i, 1, period), z);
}

/* Keys and identity ids in input order. */
static void compute_keys(prox_grid *g, const prox_points *p)
{
    uint64_t *keys = sort_keys(g);
    int64_t n = p->count;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t i = 0; i < n; i++) {
        keys[i] = key_of_cell(g, cell_of_input(g, p, i));
        g->id[i] = (prox_index)i;
    }
}

/* Coordinates in cell order, from the caller's view. */
/* Packed doubles that need no wrap (packed_unwrapped_f64): the coordinates read
 * straight from the flat array, dim a constant in each loop (a few percent
 * on W1 and W2 over the generic view). */
static void gather_packed(prox_grid *g, const double *xyz, int dim)
{
    int64_t n = g->n;
    double *x = g->pos, *y = g->pos + n, *z = g->pos + 2 * n;
    if (dim == 3) {
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
        for (int64_t s = 0; s < n; s++) {
            if (s + PREFETCH_AHEAD < n) /* reads follow the sort: random in the input */
                __builtin_prefetch(xyz + 3 * (int64_t)g->id[s + PREFETCH_AHEAD]);
            const double *q = xyz + 3 * (int64_t)g->id[s];
            x[s] = q[0];
            y[s] = q[1];
            z[s] = q[2];
        }
        return;
    }
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t s = 0; s < n; s++) {
        if (s + PREFETCH_AHEAD < n)
            __builtin_prefetch(xyz + 2 * (int64_t)g->id[s + PREFETCH_AHEAD]);
        const double *q = xyz + 2 * (int64_t)g->id[s];
        x[s] = q[0];
        y[s] = q[1];
    }
}

/* floor(t) for |t| < 2^51, in operations the compiler vectorises (it
 * keeps floor() and conversions scalar, since they may trap): t rounded to
 * the nearest integer by adding and taking away 1.5 * 2^52, then one less
 * if that went above t. */
static inline double floor_small(double t)
{
    double r = (t + 0x1.8p52) - 0x1.8p52;
    return r > t ? r - 1.0 : r;
}

/* What fixed_coord needs of axis k, read once. */
typedef struct fixed_axis {
    double origin, inv_cell, last, unit; /* last: the last cell; unit: 2^shift */
} fixed_axis;

static fixed_axis fixed_axis_of(const prox_grid *g, int k)
{
    return (fixed_axis){g->origin[k], g->inv_cell[k], (double)(g->ncell[k] - 1),
                        ldexp(1.0, g->fixed_shift[k])};
}

/* Fixed-point coordinate of a wrapped coordinate v: its cell (as cell_of
 * computes it: the same cell as the point's key) times 2^shift plus its
 * offset in the cell truncated to 2^-shift cells. `clamp` keeps the cell in
 * the grid (built points, and periodic axes); a query's may lie up to the
 * reach outside an open axis. Written in selects, with the result (an
 * integer of magnitude below 2^30, offset by 2^31 to be positive) read from
 * the low bits of its sum with 2^52, so that a loop over points vectorises
 * (fixed_block_of). */
static inline int32_t fixed_coord(const fixed_axis *a, double v, bool clamp)
{
    double t = (v - a->origin) * a->inv_cell, c = floor_small(t); /* cell_of's t */
    if (clamp) {
        c = c > 0 ? c : 0;
        c = c < a->last ? c : a->last;
    }
    double f = floor_small((t - c) * a->unit);
    f = f > 0 ? f : 0;
    f = f < a->unit - 1 ? f : a->unit - 1;
    double y = c * a->unit + f + 0x1p31 + 0x1p52;
    uint64_t bits;
    memcpy(&bits, &y, sizeof bits);
    return (int32_t)((uint32_t)bits - 0x80000000u);
}

void prox_grid_fixed_of(const prox_grid *g, const double q[3], int32_t out[3])
{
    assert(g->fixed_on);
    for (int k = 0; k < 3; k++) {
        fixed_axis a = fixed_axis_of(g, k);
        out[k] = k < g->dim ? fixed_coord(&a, q[k], g->periodic[k]) : 0;
    }
}

/* fixed_coord(v, clamp = true) of built points over a block of doubles,
 * in the form every level vectorises: each floor is taken of a value first
 * clamped to [0, an integer], where it commutes with the clamp and equals
 * truncation (a double-to-int32 conversion, an instruction on every level;
 * fixed_coord's selects around floor_small vectorise only with AVX-512's
 * masks). Same bits as fixed_coord, for any t. */
static void fixed_block_of(const prox_grid *g, int k, const double *restrict v,
                           int32_t *restrict out, int64_t count)
{
    const fixed_axis a = fixed_axis_of(g, k);
    const int32_t shift = g->fixed_shift[k];
    const double top = a.unit - 1.0;
    for (int64_t j = 0; j < count; j++) {
        double t = (v[j] - a.origin) * a.inv_cell, c = t > 0.0 ? t : 0.0;
        c = c < a.last ? c : a.last;
        int32_t cell = (int32_t)c;
        double f = (t - (double)cell) * a.unit;
        f = f > 0.0 ? f : 0.0;
        f = f < top ? f : top;
        out[j] = (int32_t)((uint32_t)cell << shift) + (int32_t)f;
    }
}

/* Points gathered a block at a time into doubles, then converted. */
#define FIXED_BLOCK 256

/* Sorted points [s0, s0 + count) from packed doubles (dim a constant once
 * inlined: no OpenMP region in here) or from any view. */
static inline void gather_block(const prox_grid *g, const prox_points *p, const double *xyz,
                                const double *period, int dim, int64_t s0, int64_t count,
                                double v[3][FIXED_BLOCK])
{
    int64_t n = g->n;
    for (int64_t j = 0; j < count; j++) {
        int64_t s = s0 + j, i = g->id[s];
        if (s + 2 * PREFETCH_AHEAD < n) { /* reads follow the sort: random in the input */
            const char *ahead = (const char *)p->axis[0] + g->id[s + 2 * PREFETCH_AHEAD] * p->stride;
            __builtin_prefetch(ahead); /* a point's first line and its last (a quarter */
            __builtin_prefetch(ahead + (dim - 1) * sizeof(double)); /* of packed 3D straddle) */
        }
        for (int k = 0; k < dim; k++)
            v[k][j] = xyz ? packed_coord(xyz, dim, i, k, period) : prox_coord(p, i, k, g->desc.period);
    }
}

/* period: NULL on open axes (no wrap). */
static void fixed_of_block(prox_grid *g, const prox_points *p, const double *xyz,
                           const double *period, int64_t b)
{
    double v[3][FIXED_BLOCK];
    int64_t n = g->n, s0 = b * FIXED_BLOCK;
    int64_t count = n - s0 < FIXED_BLOCK ? n - s0 : FIXED_BLOCK;
    if (xyz && p->dim == 3)
        gather_block(g, p, xyz, period, 3, s0, count, v);
    else if (xyz)
        gather_block(g, p, xyz, period, 2, s0, count, v);
    else
        gather_block(g, p, NULL, NULL, p->dim, s0, count, v);
    for (int k = 0; k < p->dim; k++)
        fixed_block_of(g, k, v[k], g->fixed + k * n + s0, count);
}

static void gather_fixed(prox_grid *g, const prox_points *p)
{
    int64_t n = g->n, blocks = (n + FIXED_BLOCK - 1) / FIXED_BLOCK;
    const double *xyz = packed_f64(p);
    const double *wrap = packed_wrap(g, p);
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t b = 0; b < blocks; b++)
        fixed_of_block(g, p, xyz, wrap, b);
}

/* Candidate k's sorted position: k itself, or its place in the ranges its
 * block was gathered from; -1 where neither is known. */
static int64_t candidate_position(const grid_recheck *c, int64_t k)
{
    if (!c->ids)
        return k;
    for (int r = 0; c->ranges && r < c->nranges; r++) {
        int64_t len = c->ranges[r].end - c->ranges[r].begin;
        if (k < len)
            return c->ranges[r].begin + k;
        k -= len;
    }
    return -1;
}

/* The first recheck, in exact integers (choose_fixed_recheck), of the
 * candidate at sorted position t (-1: unknown): 1 within, 0 beyond, -1
 * when the band between leaves it to the doubles, or when the grid or the
 * points do not allow it. The query is a point of the
 * grid (query_pos) or a ball query's point in fixed point (query_fixed),
 * within e of its double as the grid's are. */
static int fixed_verdict(const grid_recheck *c, int64_t t)
{
    const prox_grid *g = c->g;
    if (t < 0 || !g->fixed_recheck || (c->query_pos < 0 && !c->query_fixed))
        return -1;
    uint64_t d2 = 0;
    for (int a = 0; a < g->dim; a++) {
        int64_t q = c->query_fixed ? c->query_fixed[a] : g->fixed[a * g->n + c->query_pos];
        int64_t d = q - g->fixed[a * g->n + t];
        int64_t P = g->fixed_metric.period[a]; /* 0 on an open axis */
        if (P) /* the minimum image, as pv_min_image takes it */
            d = d > P / 2 ? d - P : d < -(P / 2) ? d + P : d;
        d2 += (uint64_t)(d * d);
    }
    return d2 <= g->fixed_in2 ? 1 : d2 > g->fixed_out2 ? 0 : -1;
}

static bool grid_within(prox_recheck *rc, int64_t k)
{
    const grid_recheck *c = (const grid_recheck *)(void *)rc;
    const prox_grid *g = c->g;
    int64_t t = candidate_position(c, k);
    int verdict = fixed_verdict(c, t);
    if (verdict >= 0)
        return verdict;
    rc->calls++;
    const double *period = g->desc.period;
    prox_index j = t >= 0 ? g->id[t] : c->ids[k];
    double d[3] = {0.0, 0.0, 0.0};
    for (int a = 0; a < g->dim; a++)
        d[a] = prox_coord(c->queries, c->query, a, period) - prox_coord(&g->source, j, a, period);
    return prox_metric_within(&g->metric, prox_metric_dist2(&g->metric, d[0], d[1], d[2]));
}

void prox_grid_recheck_init(grid_recheck *rc, const prox_grid *g, const prox_points *queries)
{
    *rc = (grid_recheck){.base = {.within = grid_within}, .g = g, .queries = queries,
                         .query_pos = -1};
}

static void gather_positions(prox_grid *g, const prox_points *p)
{
    int64_t n = g->n;
    const double *period = g->desc.period;
    if (g->fixed_on) {
        gather_fixed(g, p);
        return;
    }
    const double *xyz = packed_unwrapped_f64(g, p);
    if (xyz) {
        gather_packed(g, xyz, p->dim);
        return;
    }
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t s = 0; s < n; s++) {
        if (s + PREFETCH_AHEAD < n) /* reads follow the sort: random in the input */
            __builtin_prefetch((const char *)p->axis[0] + g->id[s + PREFETCH_AHEAD] * p->stride);
        for (int k = 0; k < p->dim; k++)
            g->pos[k * n + s] = prox_coord(p, g->id[s], k, period);
    }
}

static cell3 cell_of_sorted(const prox_grid *g, int64_t s)
{
    int64_t n = g->n;
    return cell_of_point(g, g->pos[s], g->pos[n + s], g->dim == 3 ? g->pos[2 * n + s] : 0.0);
}

/* Sorted point s begins a run. With Morton keys (exact), when its key
 * differs from its predecessor's, read from the sorted keys before the
 * coordinates overwrite them; with hash keys (a slot mixes cells), when its
 * cell differs, read from the gathered coordinates. */
static inline bool starts_run(const prox_grid *g, const uint64_t *keys, int64_t s)
{
    if (s == 0)
        return true;
    if (keys)
        return keys[s] != keys[s - 1];
    return !same_cell(cell_of_sorted(g, s), cell_of_sorted(g, s - 1));
}

static inline uint64_t run_key(const prox_grid *g, int64_t r)
{
    return key_of_cell(g, run_cell_of(g, r));
}

#define MAX_BLOCKS 64

/* Blocks a pass over `work` items splits into: one per thread (at most
 * MAX_BLOCKS), or one when single-threaded or too small to be worth it. */
static int parallel_blocks(const prox_grid *g, int64_t work)
{
    if (g->threads <= 1 || work <= 65536)
        return 1;
    return g->threads < MAX_BLOCKS ? g->threads : MAX_BLOCKS;
}

/* Runs: maximal stretches of sorted points in one cell. Finds where they
 * start, in parallel over blocks of points: count the runs each block
 * starts, then write them at the block's prefix-sum position. keys: the
 * sorted Morton keys, or NULL to compare cells. */
static prox_status find_run_starts(prox_grid *g, const uint64_t *keys)
{
    int64_t n = g->n;
    int blocks = parallel_blocks(g, n);
    int64_t first_run[MAX_BLOCKS + 1] = {0};
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static)
    for (int k = 0; k < blocks; k++) {
        int64_t runs = 0;
        for (int64_t s = n * k / blocks; s < n * (k + 1) / blocks; s++)
            runs += starts_run(g, keys, s);
        first_run[k + 1] = runs;
    }
    for (int k = 0; k < blocks; k++)
        first_run[k + 1] += first_run[k];
    int64_t runs = first_run[blocks];
    bool cells = g->keys != PROX_KEYS_LINEAR; /* linear: run_cell_of computes them */
    if (!reserve(g, &g->run_start, &g->run_start_cap, runs + 1, sizeof *g->run_start) ||
        (cells &&
         !reserve(g, &g->run_cell, &g->run_cell_cap, runs > 0 ? runs : 1, sizeof *g->run_cell)))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld cells", (long long)runs);
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static)
    for (int k = 0; k < blocks; k++) {
        int64_t r = first_run[k], s1 = n * (k + 1) / blocks;
        for (int64_t s = n * k / blocks; s < s1; s++)
            if (starts_run(g, keys, s))
                g->run_start[r++] = (uint32_t)s;
    }
    g->run_start[runs] = (uint32_t)n;
    g->nruns = runs;
    return PROX_OK;
}

/* Each run's exact cell (from its first point; not kept for linear keys)
 * and the longest run. */
static void describe_runs(prox_grid *g)
{
    int64_t runs = g->nruns, max_run = 0;
    bool cells = g->keys != PROX_KEYS_LINEAR;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && runs > 65536) \
    schedule(static) reduction(max : max_run)
    for (int64_t r = 0; r < runs; r++) {
        if (cells)
            g->run_cell[r] = cell_of_sorted(g, g->run_start[r]);
        int64_t len = g->run_start[r + 1] - g->run_start[r];
        max_run = len > max_run ? len : max_run;
    }
    g->max_run = max_run;
}

/* Morton keys: a direct table indexed by key when the codes of the
 * occupied box are few (at most 8 per point): neighbouring cells then sit
 * near each other in the table, which matters most for sparse grids (W2,
 * k = 1: about one point per cell). Otherwise open addressing from a cell's
 * key to its (single) run. Entries are run + 1. */
static prox_status index_morton_runs(prox_grid *g)
{
    cell3 corner = {{(int32_t)(g->ncell[0] - 1), (int32_t)(g->ncell[1] - 1),
                     (int32_t)(g->ncell[2] - 1)}};
    uint64_t codes = key_of_cell(g, corner) + 1; /* Morton codes grow with each coordinate */
    int64_t dense_limit = 8 * g->n > 4096 ? 8 * g->n : 4096;
    g->table_dense = codes <= (uint64_t)dense_limit;
    int64_t len = g->table_dense ? (int64_t)codes : next_pow2(2 * g->nruns > 16 ? 2 * g->nruns : 16);
    if (!reserve(g, &g->table, &g->table_cap, len, sizeof *g->table))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for the cell table");
    memset(g->table, 0, (size_t)len * sizeof *g->table);
    g->table_len = len;
    if (g->table_dense) {
        int64_t runs = g->nruns; /* distinct keys: every entry written once */
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && runs > 65536) \
    schedule(static)
        for (int64_t r = 0; r < runs; r++)
            g->table[run_key(g, r)] = (uint32_t)(r + 1);
        return PROX_OK;
    }
    g->table_bits = 0;
    while (((int64_t)1 << g->table_bits) < len)
        g->table_bits++;
    uint64_t mask = (uint64_t)len - 1;
    for (int64_t r = 0; r < g->nruns; r++) {
        uint64_t h = prox_hash64(run_key(g, r), g->table_bits);
        while (g->table[h])
            h = (h + 1) & mask;
        g->table[h] = (uint32_t)(r + 1);
    }
    return PROX_OK;
}

/* Hash and linear keys: the flat-array article's cellStart, over runs: the runs of slot
 * s are [table[s], table[s+1]); a linear key is its cell's own slot. */
static prox_status index_slot_runs(prox_grid *g)
{
    int64_t slots = g->keys == PROX_KEYS_HASH ? (int64_t)g->hash_mask + 1
                                              : linear_cells(g);
    if (!reserve(g, &g->table, &g->table_cap, slots + 1, sizeof *g->table))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld hash slots",
                         (long long)slots);
    g->table_len = slots + 1;
    /* table[s] = first run whose slot is >= s: run r owns the slots after
     * its predecessor's slot, up to its own (each slot written once). With
     * linear keys the entry is that run's first point instead: a strip of
     * cells is then two independent loads (grid_strips.c). */
    int64_t runs = g->nruns;
    bool points = g->keys == PROX_KEYS_LINEAR;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && runs > 65536) \
    schedule(static)
    for (int64_t r = 0; r <= runs; r++) {
        int64_t from = r == 0 ? 0 : (int64_t)run_key(g, r - 1) + 1;
        int64_t to = r == runs ? slots : (int64_t)run_key(g, r);
        uint32_t entry = points ? g->run_start[r] : (uint32_t)r;
        for (int64_t slot = from; slot <= to; slot++)
            g->table[slot] = entry;
    }
    return PROX_OK;
}

/* The first run whose key (its first point's sorted key) is >= key. */
static int64_t first_run_at_or_after(const prox_grid *g, const uint64_t *keys, uint64_t key)
{
    int64_t lo = 0, hi = g->nruns;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[g->run_start[mid]] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Linear keys over a sparse box: a bit per cell, set for the occupied
 * ones, and per 64-bit word the occupied cells before it (runs are in key
 * order, so that count is the run index of the word's first occupied cell).
 * Read from the sorted keys, before the coordinates overwrite them; in
 * parallel over blocks of words, each block setting the bits of the runs
 * whose keys fall in its words. */
static prox_status mark_occupied_cells(prox_grid *g, const uint64_t *keys)
{
    int64_t cells = linear_cells(g), words = cells / 64 + 1;
    if (!reserve(g, &g->occupied, &g->occupied_cap, words, sizeof *g->occupied) ||
        !reserve(g, &g->rank, &g->rank_cap, words, sizeof *g->rank))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld cells' bits",
                         (long long)cells);
    int blocks = parallel_blocks(g, words + g->nruns);
    uint32_t occupied_before[MAX_BLOCKS + 1] = {0};
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static)
    for (int k = 0; k < blocks; k++) {
        int64_t w0 = words * k / blocks, w1 = words * (k + 1) / blocks;
        memset(g->occupied + w0, 0, (size_t)(w1 - w0) * sizeof *g->occupied);
        for (int64_t r = first_run_at_or_after(g, keys, (uint64_t)w0 * 64); r < g->nruns; r++) {
            uint64_t key = keys[g->run_start[r]];
            if ((int64_t)(key >> 6) >= w1)
                break;
            g->occupied[key >> 6] |= 1ull << (key & 63);
        }
        uint32_t count = 0;
        for (int64_t w = w0; w < w1; w++)
            count += (uint32_t)prox_popcount64(g->occupied[w]);
        occupied_before[k + 1] = count;
    }
    for (int k = 0; k < blocks; k++)
        occupied_before[k + 1] += occupied_before[k];
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static)
    for (int k = 0; k < blocks; k++) {
        uint32_t before = occupied_before[k];
        for (int64_t w = words * k / blocks; w < words * (k + 1) / blocks; w++) {
            g->rank[w] = before;
            before += (uint32_t)prox_popcount64(g->occupied[w]);
        }
    }
    return PROX_OK;
}

/* After the sort (keys in sort_keys): runs, coordinates, cell table. */
static prox_status index_runs(prox_grid *g, const prox_points *p)
{
    bool exact_keys = g->keys != PROX_KEYS_HASH;
    prox_status st = exact_keys ? find_run_starts(g, sort_keys(g)) : PROX_OK;
    if (!st && g->sparse)
        st = mark_occupied_cells(g, sort_keys(g));
    if (st)
        return st;
    gather_positions(g, p); /* overwrites the keys */
    if (!exact_keys && (st = find_run_starts(g, NULL)))
        return st;
    describe_runs(g);
    if (g->keys == PROX_KEYS_MORTON)
        return index_morton_runs(g);
    return g->sparse ? PROX_OK : index_slot_runs(g);
}

/* ---- building with linear keys: the flat-array article's counting sort ----------------- */

/* Each point's linear key (its cell's slot), 32 bits, in the coordinate
 * array's first 4n bytes. */
static uint32_t *linear_keys(const prox_grid *g)
{
    return (uint32_t *)(void *)g->pos;
}

/* Linear keys of packed doubles on open axes: through the generic view, its
 * per-coordinate dispatch is most of the keys' cost (W2 at k = 1: 91
 * instructions a point, callgrind). */
static void packed_linear_keys(const prox_grid *g, const double *xyz, int dim, int64_t n,
                               uint32_t *keys)
{
    if (dim == 2) {
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
        for (int64_t i = 0; i < n; i++)
            keys[i] = (uint32_t)linear_key_of(g, cell_of_point(g, xyz[2 * i], xyz[2 * i + 1], 0.0));
        return;
    }
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t i = 0; i < n; i++)
        keys[i] = (uint32_t)linear_key_of(
            g, cell_of_point(g, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]));
}

/* Linear keys of packed doubles with periodic axes, each coordinate
 * wrapped as prox_coord wraps it. */
static void packed_periodic_keys(const prox_grid *g, const double *xyz, int dim, int64_t n,
                                 uint32_t *keys)
{
    const double *period = g->desc.period;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t i = 0; i < n; i++) {
        keys[i] = (uint32_t)linear_key_of(
            g, cell_of_point(g, packed_coord(xyz, dim, i, 0, period),
                             packed_coord(xyz, dim, i, 1, period),
                             dim == 3 ? packed_coord(xyz, dim, i, 2, period) : 0.0));
    }
}

static void compute_linear_keys(prox_grid *g, const prox_points *p)
{
    uint32_t *keys = linear_keys(g);
    int64_t n = p->count;
    const double *xyz = packed_unwrapped_f64(g, p);
    if (xyz) {
        packed_linear_keys(g, xyz, p->dim, n, keys);
        return;
    }
    if ((xyz = packed_f64(p))) {
        packed_periodic_keys(g, xyz, p->dim, n, keys);
        return;
    }
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t i = 0; i < n; i++)
        keys[i] = (uint32_t)key_of_cell(g, cell_of_input(g, p, i));
}

/* Past this many cells (1 MiB of counters) the counting sort goes a slice
 * of the table at a time (radix_sort.h), its scratch in the coordinate
 * array after the keys: 6 bytes a point and a word per slice (a sparse
 * box's sort, two words a slice; coordinate_slots). */
#define SLICED_COUNT_MIN_CELLS (1 << 18)

static bool counts_in_slices(const prox_grid *g)
{
    return linear_cells(g) > SLICED_COUNT_MIN_CELLS;
}

static uint64_t *sliced_count_scratch(const prox_grid *g)
{
    return (uint64_t *)(void *)(g->pos + (g->n + 1) / 2);
}

/* Runs from the cell table (table[c] = first point of cell c): one per
 * occupied cell, in parallel over blocks of cells like find_run_starts. */
static prox_status runs_from_table(prox_grid *g, int64_t cells)
{
    int blocks = parallel_blocks(g, cells);
    int64_t first_run[MAX_BLOCKS + 1] = {0};
    const uint32_t *t = g->table;
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static)
    for (int k = 0; k < blocks; k++) {
        int64_t runs = 0;
        for (int64_t c = cells * k / blocks; c < cells * (k + 1) / blocks; c++)
            runs += t[c + 1] > t[c];
        first_run[k + 1] = runs;
    }
    for (int k = 0; k < blocks; k++)
        first_run[k + 1] += first_run[k];
    int64_t runs = first_run[blocks];
    /* one slot past the end: where a block writes once its runs are done */
    if (!reserve(g, &g->run_start, &g->run_start_cap, runs + 2, sizeof *g->run_start))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld cells", (long long)runs);
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static)
    for (int k = 0; k < blocks; k++) {
        /* every cell written, the next slot taken when it is occupied: no
         * branch on occupancy, a coin toss on sparse data (W2 k = 1: 27%) */
        int64_t r = first_run[k], end = first_run[k + 1];
        for (int64_t c = cells * k / blocks; c < cells * (k + 1) / blocks; c++) {
            g->run_start[r < end ? r : runs + 1] = t[c];
            r += t[c + 1] > t[c];
        }
    }
    g->run_start[runs] = (uint32_t)g->n;
    g->nruns = runs;
    return PROX_OK;
}

/* Linear keys over a sparse box: the counting sort a slice of cells at a
 * time (radix_sort.h), into the occupancy bits and their ranks, and the
 * runs' starts; no table of every cell, even while building. */
static prox_status sparse_by_counting(prox_grid *g, int64_t cells)
{
    int64_t words = cells / 64 + 1;
    if (!reserve(g, &g->occupied, &g->occupied_cap, words, sizeof *g->occupied) ||
        !reserve(g, &g->rank, &g->rank_cap, words, sizeof *g->rank))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld cells' bits",
                         (long long)cells);
    prox_sparse_sort sort = {linear_keys(g), g->n, cells, sliced_count_scratch(g),
                             g->occupied, g->rank, g->threads};
    int64_t runs = prox_sparse_sort_occupancy(&sort);
    uint32_t *counts =
        prox_alloc_array(&g->allocator, prox_sparse_sort_counters(g->threads), sizeof *counts);
    if (!counts || !reserve(g, &g->run_start, &g->run_start_cap, runs + 1, sizeof *g->run_start)) {
        prox_free(&g->allocator, counts);
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld cells", (long long)runs);
    }
    prox_sparse_sort_place(&sort, g->run_start, g->id, counts);
    prox_free(&g->allocator, counts);
    g->nruns = runs;
    return PROX_OK;
}

/* Linear keys over a table of every cell: the table is the counting
 * sort's histogram, so one pass over the points counts, a second places
 * their ids, and the table comes out as the flat-array article's cellStart (no key sort,
 * no run search over the points). The other threads' counts need
 * (threads - 1) * cells scratch: allowed up to one counter per point, else
 * the sort counts on one thread. */
static prox_status table_by_counting(prox_grid *g, int64_t cells)
{
    int64_t n = g->n;
    if (!reserve(g, &g->table, &g->table_cap, cells + 1, sizeof *g->table))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld cells",
                         (long long)cells);
    g->table_len = cells + 1;
    if (counts_in_slices(g)) {
        prox_counting_sort_u32_sliced(linear_keys(g), n, cells, g->table, g->id,
                                      sliced_count_scratch(g), g->threads);
    } else {
        int threads = g->threads > 1 && (g->threads - 1) * cells <= n ? g->threads : 1;
        uint32_t *hist = NULL;
        if (threads > 1 &&
            !(hist = prox_alloc_array(&g->allocator, (threads - 1) * cells, sizeof *hist)))
            threads = 1; /* one thread needs no scratch */
        prox_counting_sort_u32(linear_keys(g), n, cells, g->table, g->id, hist, threads);
        prox_free(&g->allocator, hist);
    }
    return runs_from_table(g, cells);
}

/* ---- fixed point converted with the keys ---------------------------------
 *
 * The pass that computes the keys reads every point in input order. With
 * packed doubles it can convert each point to fixed point as well, into
 * one array of n words per axis above the keys in the coordinate array;
 * after the sort, each axis is gathered in cell order from its array (4
 * bytes a point, which the caches hold at sizes where the caller's points,
 * 16 or 24 bytes a point, and their random order in the gather would reach
 * memory). Gathering axis k writes the words of the array of axis k - 1,
 * or of the keys, both done with. The coordinate array grows by the keys'
 * 4 bytes a point, so a grid that asks for the least memory (rows in
 * place) gathers from the caller's points instead; so do the sliced and
 * sparse sorts, which keep their scratch above the keys. The values are
 * fixed_block_of's, as gather_fixed computes them. */

static bool converts_with_keys(const prox_grid *g, const prox_points *p)
{
    return g->fixed_on && builds_by_counting(g) && !g->sparse && !counts_in_slices(g) &&
           packed_f64(p) != NULL &&
           g->desc.rows != PROX_ROWS_IN_PLACE; /* asked for the least memory */
}

/* Axis k's fixed-point array in input order, while the grid builds. */
static int32_t *input_order_axis(const prox_grid *g, int k)
{
    return g->fixed + (k + 1) * g->n;
}

/* Fixed-point coordinates and keys of input points [i0, i0 + count) (dim
 * a constant once inlined; period as packed_coord takes it). Each key
 * comes from the coordinates' cells (cell_of_fixed), as run_cell_of reads
 * them back: fixed_block_of computes the cell as cell_of does. */
static inline void keys_and_fixed_block(prox_grid *g, const double *xyz, const double *period,
                                        int dim, int64_t i0, int64_t count)
{
    double v[3][FIXED_BLOCK];
    for (int64_t j = 0; j < count; j++)
        for (int k = 0; k < dim; k++)
            v[k][j] = packed_coord(xyz, dim, i0 + j, k, period);
    for (int k = 0; k < dim; k++)
        fixed_block_of(g, k, v[k], input_order_axis(g, k) + i0, count);
    uint32_t *keys = linear_keys(g);
    for (int64_t i = i0; i < i0 + count; i++)
        keys[i] = (uint32_t)linear_key_of(g, cell_of_fixed(g, dim, input_order_axis(g, 0), g->n, i));
}

static void keys_and_fixed(prox_grid *g, const prox_points *p)
{
    int64_t n = g->n, blocks = (n + FIXED_BLOCK - 1) / FIXED_BLOCK;
    const double *xyz = packed_f64(p);
    const double *wrap = packed_wrap(g, p);
    int dim = p->dim;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t i0 = b * FIXED_BLOCK, count = n - i0 < FIXED_BLOCK ? n - i0 : FIXED_BLOCK;
        if (dim == 3)
            keys_and_fixed_block(g, xyz, wrap, 3, i0, count);
        else
            keys_and_fixed_block(g, xyz, wrap, 2, i0, count);
    }
}

/* Each axis from its input-order array into cell order, axis 0 first. */
static void gather_fixed_axes(prox_grid *g)
{
    int64_t n = g->n;
    for (int k = 0; k < g->dim; k++) {
        const int32_t *from = input_order_axis(g, k);
        int32_t *to = g->fixed + k * n;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
        for (int64_t s = 0; s < n; s++)
            to[s] = from[g->id[s]];
    }
}

/* Linear keys: sorted by counting into the table or the occupancy bits,
 * then the coordinates gathered in cell order. */
static prox_status build_by_counting(prox_grid *g, const prox_points *p)
{
    int64_t cells = linear_cells(g);
    if (g->fixed_with_keys)
        keys_and_fixed(g, p);
    else
        compute_linear_keys(g, p);
    prox_status st = g->sparse ? sparse_by_counting(g, cells) : table_by_counting(g, cells);
    if (st)
        return st;
    if (g->fixed_with_keys)
        gather_fixed_axes(g); /* overwrites the keys */
    else
        gather_positions(g, p); /* overwrites the keys */
    describe_runs(g);
    return PROX_OK;
}

static void choose_hash_table(prox_grid *g, int64_t n)
{
    int64_t slots = g->desc.table_size;
    if (slots == 0)
        slots = next_pow2(2 * n > 16 ? 2 * n : 16); /* 2-4x the points (the flat-array article) */
    g->hash_mask = (uint64_t)slots - 1;
}

/* The view and the options; finiteness is the box pass's (choose_geometry)
 * when building, checked here when updating. */
static prox_status check_build_input(prox_grid *g, const prox_points *p, bool finiteness)
{
    prox_status st = prox_points_check(p, "points");
    if (!st)
        st = prox_grid_desc_check(&g->desc, p->dim);
    if (!st && finiteness)
        st = prox_points_check_finite(p, "points", g->threads);
    return st;
}

/* The words a whole-vector gather reads past id[n) and past the last
 * fixed-point axis (prox_grid.id): zero, so that they are defined. An
 * update that moves points keeps them (it writes id[0, n) alone, and a
 * grid in fixed point rebuilds). */
static void clear_read_slack(prox_grid *g)
{
    memset(g->id + g->n, 0, GRID_READ_SLACK * sizeof *g->id);
    if (g->fixed_on)
        memset(g->fixed + (int64_t)g->dim * g->n, 0, GRID_READ_SLACK * sizeof *g->fixed);
}

/* ---- points that changed while read ---------------------------------------
 *
 * The build reads the caller's points more than once (box, keys, then the
 * coordinates in cell order), except where the keys' pass stores the
 * coordinates the grid keeps (fixed_with_keys). A caller that rewrites its
 * array during the build (another thread) can make the second read disagree
 * with the first: cells stay inside the grid (cell_of clamps, NaN to 0), but
 * a point could then lie outside its run's cell, or a run outside the
 * table's order, and a search step outside a range: linear keys find a
 * run's ranges from its first point's cell, and a hash slot's runs must
 * come in slot order (index_slot_runs). The build then checks those, run
 * by run (Morton keys reach a run by its key alone: a wrong cell there
 * only misses pairs), and fails cleanly if not. */

/* Linear keys: run r holds exactly the points of its cell c (its first
 * point's, run_cell_of), as the table (or the occupancy bits) has them.
 * The traversals find a run's ranges from that cell. The one that starts
 * from a point's own cell, the sweep, keeps its ranges ordered itself
 * (grid_sweep.c, forward_ranges), so the check goes run by run, with no
 * pass over the points: a point outside its run's cell can only give a
 * wrong answer (rel16 offsets wrap in their 16 bits). */
static bool linear_run_holds_its_points(const prox_grid *g, int64_t r)
{
    cell3 c = run_cell_of(g, r);
    uint64_t k = linear_key_of(g, c);
    return g->sparse ? (g->occupied[k >> 6] >> (k & 63) & 1) && sparse_rank(g, k) == (uint64_t)r
                     : g->table[k] == g->run_start[r] && g->table[k + 1] == g->run_start[r + 1];
}

/* The runs of [r0, r1) that disagree with the table, for a grid that
 * keeps doubles (dim and sparse constants once inlined): the test of
 * linear_run_holds_its_points with the grid's cases decided outside the
 * loop and no branch inside it. */
static inline int64_t runs_astray_in_doubles(const prox_grid *g, int dim, bool sparse, int64_t r0,
                                             int64_t r1)
{
    const double *x = g->pos, *y = g->pos + g->n, *z = g->pos + 2 * g->n;
    const uint32_t *start = g->run_start;
    int64_t bad = 0;
    for (int64_t r = r0; r < r1; r++) {
        uint32_t s = start[r];
        cell3 c = {{cell_of(g, 0, x[s]), cell_of(g, 1, y[s]), dim == 3 ? cell_of(g, 2, z[s]) : 0}};
        uint64_t k = linear_key_of(g, c);
        if (sparse)
            bad += !(g->occupied[k >> 6] >> (k & 63) & 1) | (sparse_rank(g, k) != (uint64_t)r);
        else
            bad += (g->table[k] != s) | (g->table[k + 1] != start[r + 1]);
    }
    return bad;
}

static int64_t runs_astray(const prox_grid *g, int64_t r0, int64_t r1)
{
    bool linear = g->keys == PROX_KEYS_LINEAR;
    if (linear && !g->fixed_on) {
        if (g->sparse)
            return g->dim == 3 ? runs_astray_in_doubles(g, 3, true, r0, r1)
                               : runs_astray_in_doubles(g, 2, true, r0, r1);
        return g->dim == 3 ? runs_astray_in_doubles(g, 3, false, r0, r1)
                           : runs_astray_in_doubles(g, 2, false, r0, r1);
    }
    int64_t bad = 0;
    for (int64_t r = r0; r < r1; r++)
        bad += linear ? !linear_run_holds_its_points(g, r)
                      : r > 0 && run_key(g, r) < run_key(g, r - 1); /* hash slots in order */
    return bad;
}

static prox_status check_runs_hold_their_points(const prox_grid *g)
{
    if (g->keys == PROX_KEYS_MORTON)
        return PROX_OK;
    int blocks = parallel_blocks(g, g->nruns);
    int64_t bad = 0;
#pragma omp parallel for num_threads(blocks) if (blocks > 1) schedule(static) reduction(+ : bad)
    for (int b = 0; b < blocks; b++)
        bad += runs_astray(g, g->nruns * b / blocks, g->nruns * (b + 1) / blocks);
    if (bad)
        return prox_fail(PROX_ERR_DATA, "grid: the points changed while the grid was built "
                                        "(%lld runs disagree between two reads)",
                         (long long)bad);
    return PROX_OK;
}

prox_status prox_grid_build(prox_grid *g, const prox_points *p)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "prox_grid_build: grid is NULL");
    g->built = false;
    prox_status st = check_build_input(g, p, false);
    if (!st)
        st = choose_geometry(g, p);
    if (st)
        return st;
    g->metric = prox_metric_of(&g->desc, p->dim);
    g->n = p->count;
    choose_hash_table(g, g->n);
    g->fixed_with_keys = converts_with_keys(g, p);
    st = reserve_points(g, g->n);
    if (!st)
        st = build_stencil(g);
    if (st)
        return st;
    g->fixed = g->fixed_on ? (int32_t *)(void *)g->pos : NULL;
    g->source = *p;
    if (builds_by_counting(g)) {
        st = build_by_counting(g, p);
    } else {
        compute_keys(g, p);
        prox_radix_sort64(sort_keys(g), g->id, scratch_keys(g), scratch_ids(g), g->n, g->threads);
        st = index_runs(g, p);
    }
    if (!st && !g->fixed_with_keys)
        st = check_runs_hold_their_points(g);
    if (!st)
        clear_read_slack(g);
    g->built = st == PROX_OK;
    return st;
}

/* ---- moving points (the fluid-hash chapter: relocate only what changed cell) ----------- */

/* New cell of sorted point s from the caller's view; false when it falls
 * outside the built cell range of an open axis. (check_build_input has
 * ruled out NaN and inf before; one written since, by a caller racing the
 * call, is out of range or cell 0: none reaches the cast.) */
static bool moved_cell(const prox_grid *g, const prox_points *p, int64_t s, cell3 *out)
{
    prox_index i = g->id[s];
    for (int k = 0; k < 3; k++) {
        if (k >= g->dim) {
            out->c[k] = 0;
            continue;
        }
        double v = prox_coord(p, i, k, g->desc.period);
        double u = floor((v - g->origin[k]) * g->inv_cell[k]);
        if (g->periodic[k]) { /* NaN (changed since the check) to 0 */
            u = u >= 0 ? u > (double)(g->ncell[k] - 1) ? (double)(g->ncell[k] - 1) : u : 0;
        } else if (!(u >= 0 && u <= (double)(g->ncell[k] - 1))) {
            return false;
        }
        out->c[k] = (int32_t)u;
    }
    return true;
}

/* Update's scratch, in the coordinate array like the build's (they are
 * regathered afterwards): keys of the points that stayed in [0, 8n), keys
 * and ids of the moved ones at the build's scratch keys and ids. Sorting the
 * moved ones borrows [8 * stayed, 8n) for keys (exactly 8 * moved bytes)
 * and the bytes after the moved keys for ids (8 * stayed >= 4 * moved,
 * since at most a quarter moved: more rebuilds before sorting). */
static prox_index *update_sort_ids(const prox_grid *g, int64_t moved)
{
    return (prox_index *)(void *)(scratch_keys(g) + moved);
}

/* The partition runs over blocks of runs, in parallel. Block b first keeps
 * everything inside its own points' slots, whose coordinates it has
 * already read: stayed ids and keys at the front of its stretch of id[]
 * and the sort keys, moved keys at its stretch of the scratch keys (the y
 * coordinates), moved ids from the z coordinate of its first point on
 * (2D: from its first point's slot of the scratch ids).
 * Then close_up_blocks moves the pieces together, in block order, which
 * gives the serial partition's layout whatever the thread count. */
typedef struct update_block {
    int64_t r0, r1; /* runs [r0, r1) */
    int64_t s0;     /* its first point */
    int64_t stayed, moved;
} update_block;

/* Points between two looks at the moved total, to give up early. */
#define UPDATE_CHECK_EVERY 4096

static prox_index *block_moved_ids(const prox_grid *g, int64_t s0)
{
    if (g->dim == 2) /* no z coordinates: the scratch ids are free */
        return scratch_ids(g) + s0;
    return (prox_index *)(void *)(g->pos + 2 * g->n + s0);
}

/* One block's partition. It sets *give_up (rebuild instead) when a point
 * left the cell range, or when the moved points of all blocks so far passed
 * the limit (then the full count would too: the decision is the same for
 * every thread count). */
static void partition_block(prox_grid *g, const prox_points *p, update_block *b, int64_t limit,
                            int64_t *moved_total, int *give_up)
{
    uint64_t *stay_key = sort_keys(g), *moved_key = scratch_keys(g) + b->s0;
    prox_index *moved_id = block_moved_ids(g, b->s0);
    int64_t stay = b->s0, moved = 0, told = 0, end = g->run_start[b->r1];
    int64_t next_look = b->s0 + UPDATE_CHECK_EVERY;
    for (int64_t r = b->r0; r < b->r1; r++) {
        cell3 old = run_cell_of(g, r); /* before this run's points are overwritten */
        uint64_t old_key = key_of_cell(g, old);
        int64_t s1 = g->run_start[r + 1];
        for (int64_t s = g->run_start[r]; s < s1; s++) {
            if (s + PREFETCH_AHEAD < end) /* sorted order: random in the input */
                __builtin_prefetch((const char *)p->axis[0] + g->id[s + PREFETCH_AHEAD] * p->stride);
            cell3 c;
            if (!moved_cell(g, p, s, &c)) {
#pragma omp atomic write
                *give_up = 1;
                return;
            }
            if (same_cell(c, old)) {
                stay_key[stay] = old_key;
                g->id[stay++] = g->id[s];
            } else {
                moved_key[moved] = key_of_cell(g, c);
                moved_id[moved++] = g->id[s];
            }
        }
        if (s1 >= next_look || r + 1 == b->r1) {
            int64_t total;
#pragma omp atomic capture
            {
                *moved_total += moved - told;
                total = *moved_total;
            }
            told = moved;
            next_look = s1 + UPDATE_CHECK_EVERY;
            int stop;
#pragma omp atomic read
            stop = *give_up;
            if (stop || total > limit) {
#pragma omp atomic write
                *give_up = 1;
                return;
            }
        }
    }
    b->stayed = stay - b->s0;
    b->moved = moved;
}

/* The blocks' pieces, moved down in block order (each destination starts
 * at or before its source, and past every earlier block's). */
static int64_t close_up_blocks(prox_grid *g, const update_block *blocks, int nblocks)
{
    uint64_t *stay_key = sort_keys(g), *moved_key = scratch_keys(g);
    prox_index *moved_id = scratch_ids(g);
    int64_t stayed = 0, moved = 0;
    for (int k = 0; k < nblocks; k++) {
        const update_block *b = &blocks[k];
        memmove(g->id + stayed, g->id + b->s0, (size_t)b->stayed * sizeof *g->id);
        memmove(stay_key + stayed, stay_key + b->s0, (size_t)b->stayed * sizeof *stay_key);
        memmove(moved_key + moved, moved_key + b->s0, (size_t)b->moved * sizeof *moved_key);
        memmove(moved_id + moved, block_moved_ids(g, b->s0), (size_t)b->moved * sizeof *moved_id);
        stayed += b->stayed;
        moved += b->moved;
    }
    return moved;
}

/* Split sorted points into those that stayed (kept in order: ids at the
 * front of id[], keys in sort_keys) and those that moved (new keys and ids
 * in the scratch). Returns the number moved, or -1 to rebuild instead: some
 * point left the cell range, or more than
 * UPDATE_REBUILD_FRACTION of them moved. */
static int64_t partition_moved(prox_grid *g, const prox_points *p)
{
    update_block blocks[MAX_BLOCKS];
    int nblocks = parallel_blocks(g, g->n); /* a block without runs is empty */
    for (int k = 0; k < nblocks; k++) {
        blocks[k].r0 = g->nruns * k / nblocks;
        blocks[k].r1 = g->nruns * (k + 1) / nblocks;
        blocks[k].s0 = g->run_start[blocks[k].r0];
    }
    int64_t limit = (int64_t)(UPDATE_REBUILD_FRACTION * (double)g->n), moved_total = 0;
    int give_up = 0;
#pragma omp parallel for num_threads(nblocks) if (nblocks > 1) schedule(static)
    for (int k = 0; k < nblocks; k++)
        partition_block(g, p, &blocks[k], limit, &moved_total, &give_up);
    return give_up ? -1 : close_up_blocks(g, blocks, nblocks);
}

/* Merge the stayed points (n - moved) with the sorted moved ones, by key,
 * from the back, in place: ids into id[], keys into sort_keys (whose tail
 * the moved points' sort has finished with). */
static void merge_moved(prox_grid *g, int64_t moved)
{
    uint64_t *key = sort_keys(g);
    const uint64_t *moved_key = scratch_keys(g);
    const prox_index *moved_id = scratch_ids(g);
    int64_t a = g->n - moved - 1, b = moved - 1, out = g->n - 1;
    while (b >= 0) {
        if (a >= 0 && key[a] > moved_key[b]) {
            key[out] = key[a];
            g->id[out--] = g->id[a--];
        } else {
            key[out] = moved_key[b];
            g->id[out--] = moved_id[b--];
        }
    }
}

static prox_status rebuild(prox_grid *g, const prox_points *p, prox_stats *stats)
{
    prox_status st = prox_grid_build(g, p);
    if (stats) {
        prox_grid_base_stats(g, stats);
        stats->rebuilt = true;
        stats->relocated = p->count;
    }
    return st;
}

prox_status prox_grid_update(prox_grid *g, const prox_points *p, prox_stats *stats)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "prox_grid_update: grid is NULL");
    /* checked before anything moves: a rejected update leaves the grid as
     * it was */
    prox_status st = check_build_input(g, p, true);
    if (st)
        return st;
    if (!g->built || p->count != g->n || p->dim != g->dim || g->fixed_on)
        return rebuild(g, p, stats); /* fixed point: the build reads the new view */
    for (int k = 0; k < g->dim; k++)
        g->inside_periods &= !g->periodic[k]; /* the new values are not boxed */
    int64_t moved = partition_moved(g, p);
    if (moved < 0)
        return rebuild(g, p, stats);
    /* the moved points sort among themselves */
    int64_t stay = g->n - moved;
    prox_radix_sort64(scratch_keys(g), scratch_ids(g), sort_keys(g) + stay, update_sort_ids(g, moved), moved,
                      g->threads);
    merge_moved(g, moved);
    g->built = false;
    st = index_runs(g, p);
    if (!st)
        st = check_runs_hold_their_points(g);
    g->built = st == PROX_OK;
    if (stats) {
        prox_grid_base_stats(g, stats);
        stats->relocated = moved;
    }
    return st;
}

