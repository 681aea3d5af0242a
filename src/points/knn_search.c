/* knn_search.c: the exact kNN search over a kNN index's cells.
 *
 * Queries go in groups of one cell (a run of the index's own points, or
 * the second set sorted by cell), in cell order, chunks of groups over
 * the threads. A group copies its cell and the ring around it once into
 * a block (near_block, read as strips along x); each query then computes
 * the block's distances in one loop and selects its k best of them
 * (near_select: those within a guess of the k-th packed, ranked a vector
 * at a time, the order finished by an exact insertion), then walks
 * further rings only while a ring's nearest possible point could still
 * beat its k-th: the proof, whose candidates go through the best set
 * (best_set: sorted insertion for small k, a max-heap beyond). Grids whose ring would name a cell twice (a periodic
 * axis of 1 or 2 cells) take the box of cells nearest first instead.
 *
 * Why it is exact. Every point of cell j along axis k has a cell unit
 * (knn_cell_unit) in [j, j + 1] (knn_build.c never clamps a point), and
 * the unit is a monotone function of the coordinate, so the query's own
 * unit uq bounds the distance along k from below by the gap between uq
 * and [j, j + 1] (on periodic axes the smallest over the cell's images),
 * in cell edges. Bounds shrink by 2^-40 of the units' size and of their
 * square, far beyond the few roundings between them and the squared
 * distance the kernel computes, so a bound never exceeds the computed
 * squared distance of any point it stands for. A cell, strip or ring is
 * skipped only when its bound is strictly above the current k-th squared
 * distance (or max_radius^2 while fewer than k are held): every point
 * skipped is strictly worse than k points held, whatever its index, and a
 * point at the k-th distance itself is always examined, so ties go by
 * index exactly as in a full sort. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/exact.h"
#include "core/radix_sort.h"
#include "core/threads.h"
#include "points/drive.h"
#include "points/knn_result.h"
#include "points/knn_search.h"
#include "points/points_common.h"
#include "simd/kernel.h"
#include "simd/vec.h"

/* Up to this k the best set is a sorted array with insertion from its
 * end; beyond, a max-heap (insertion cost k against log k). */
#define KNN_SORTED_MAX 48

/* ---- the k best of one query -------------------------------------------- */

typedef struct best_set {
    int k, count;
    double limit; /* max_radius^2, or +inf */
    double *d2;
    prox_index *id;
} best_set;

/* The squared distance a candidate must not exceed to be considered
 * (ties then go by index in best_offer). */
static inline double best_worst(const best_set *b)
{
    if (b->count < b->k)
        return b->limit;
    return b->d2[b->k <= KNN_SORTED_MAX ? b->count - 1 : 0];
}

/* (d, i) worse than (e, j): farther, or as far with a larger index. */
static inline bool worse(double d, prox_index i, double e, prox_index j)
{
    return d > e || (d == e && i > j);
}

static void heap_down(best_set *b, int at, int count)
{
    for (;;) {
        int c = 2 * at + 1;
        if (c >= count)
            return;
        if (c + 1 < count && worse(b->d2[c + 1], b->id[c + 1], b->d2[c], b->id[c]))
            c++;
        if (!worse(b->d2[c], b->id[c], b->d2[at], b->id[at]))
            return;
        double d = b->d2[c];
        prox_index i = b->id[c];
        b->d2[c] = b->d2[at];
        b->id[c] = b->id[at];
        b->d2[at] = d;
        b->id[at] = i;
        at = c;
    }
}

static void heap_offer(best_set *b, double d2, prox_index id)
{
    if (b->count < b->k) {
        int at = b->count++;
        while (at > 0) {
            int up = (at - 1) / 2;
            if (!worse(d2, id, b->d2[up], b->id[up]))
                break;
            b->d2[at] = b->d2[up];
            b->id[at] = b->id[up];
            at = up;
        }
        b->d2[at] = d2;
        b->id[at] = id;
        return;
    }
    if (!worse(b->d2[0], b->id[0], d2, id))
        return;
    b->d2[0] = d2;
    b->id[0] = id;
    heap_down(b, 0, b->count);
}

/* Candidate (d2, id), already known d2 <= best_worst(b). */
static inline void best_offer(best_set *b, double d2, prox_index id)
{
    if (b->k > KNN_SORTED_MAX) {
        heap_offer(b, d2, id);
        return;
    }
    int at = b->count;
    if (at == b->k) {
        if (!worse(b->d2[at - 1], b->id[at - 1], d2, id))
            return;
        at--;
    } else {
        b->count++;
    }
    while (at > 0 && b->d2[at - 1] > d2) { /* farther: by distance alone */
        b->d2[at] = b->d2[at - 1];
        b->id[at] = b->id[at - 1];
        at--;
    }
    while (at > 0 && b->d2[at - 1] == d2 && b->id[at - 1] > id) { /* a tie: by index */
        b->d2[at] = b->d2[at - 1];
        b->id[at] = b->id[at - 1];
        at--;
    }
    b->d2[at] = d2;
    b->id[at] = id;
}

/* The set in ascending (d2, id) order. */
static void best_finish(best_set *b)
{
    if (b->k <= KNN_SORTED_MAX)
        return;
    for (int end = b->count - 1; end > 0; end--) { /* heapsort: the worst to the end */
        double d = b->d2[0];
        prox_index i = b->id[0];
        b->d2[0] = b->d2[end];
        b->id[0] = b->id[end];
        b->d2[end] = d;
        b->id[end] = i;
        heap_down(b, 0, end);
    }
}

/* ---- candidates ----------------------------------------------------------- */

/* One query: its wrapped coordinates, cell units, cell and own index. */
typedef struct query {
    double q[3], u[3];
    int64_t c[3];
    int64_t self; /* the index left out, or -1 */
} query;

typedef struct counters {
    int64_t candidates, cells;
} counters;

/* Candidates per block of the distance pass. */
#define KNN_BLOCK 64

/* d2[t] = the exact squared distance of candidate t to the query: the
 * vector kernel's pd_dist2 (simd/kernel.h), lane by lane prox_metric_dist2
 * (minimum images, then dx*dx + dy*dy + dz*dz in that order, no
 * contraction), so the same bits as brute force and the oracle at every
 * SIMD level. zs NULL: 2D. */
static inline void arrays_dist2(const prox_knn_index *x, const query *q, const double *xs,
                                const double *ys, const double *zs, int64_t len,
                                double *restrict d2)
{
    prox_block blk = {xs, ys, zs};
    prox_metric m = {{x->period[0], x->period[1], x->period[2]}, 0.0,
                     x->periodic[0] || x->periodic[1] || x->periodic[2]};
    int64_t t = 0;
    for (; t + PD_W <= len; t += PD_W) {
        pd_f64 v = pd_dist2(&blk, t, PD_W, q->q, &m);
        memcpy(d2 + t, &v, sizeof v);
    }
    if (t < len) { /* the tail: only its live lanes stored */
        pd_f64 v = pd_dist2(&blk, t, len - t, q->q, &m);
        memcpy(d2 + t, &v, (size_t)(len - t) * sizeof(double));
    }
}

/* The same for sorted points b .. b + len - 1 of the index. */
static inline void block_dist2(const prox_knn_index *x, const query *q, int64_t b, int len,
                               double *restrict d2)
{
    arrays_dist2(x, q, x->pos[0] + b, x->pos[1] + b, x->dim == 3 ? x->pos[2] + b : NULL, len,
                 d2);
}

/* Sorted points [b, e) offered to the query's best set. */
static void scan_range(const prox_knn_index *x, const query *q, int64_t b, int64_t e,
                       best_set *best, counters *n)
{
    double d2[KNN_BLOCK];
    const prox_index *id = x->id;
    n->candidates += e - b;
    for (int64_t s0 = b; s0 < e; s0 += KNN_BLOCK) {
        int len = e - s0 < KNN_BLOCK ? (int)(e - s0) : KNN_BLOCK;
        block_dist2(x, q, s0, len, d2);
        double worst = best_worst(best);
        for (int t = 0; t < len; t++)
            if (d2[t] <= worst && (int64_t)id[s0 + t] != q->self) {
                best_offer(best, d2[t], id[s0 + t]);
                worst = best_worst(best);
            }
    }
}

/* ---- geometry of rings ---------------------------------------------------- */

/* The offsets from the query's cell along axis k that name distinct cells:
 * [*lo, *hi] (open: the grid's cells; periodic: each cell once). */
static inline void offset_range(const prox_knn_index *x, const query *q, int k, int64_t *lo,
                                int64_t *hi)
{
    int64_t n = x->ncell[k];
    if (x->periodic[k]) {
        *lo = -((n - 1) / 2);
        *hi = n / 2;
    } else {
        *lo = -q->c[k];
        *hi = n - 1 - q->c[k];
    }
}

/* Slack of the bounds in cell units (top of the file). */
static inline double unit_slack(const prox_knn_index *x, const query *q, int k)
{
    return 0x1p-40 * ((double)x->ncell[k] + fabs(q->u[k]) + 1.0);
}

/* Lower bound of the distance along k from the query to any point of the
 * cell at offset d, in coordinate units. */
static inline double axis_gap(const prox_knn_index *x, const query *q, int k, int64_t d)
{
    double u = q->u[k], j = (double)(q->c[k] + d), g;
    g = j > u ? j - u : (u > j + 1.0 ? u - (j + 1.0) : 0.0);
    if (x->periodic[k]) {
        double n = (double)x->ncell[k];
        double below = j - n, above = j + n; /* the cell's images */
        double gb = below > u ? below - u : (u > below + 1.0 ? u - (below + 1.0) : 0.0);
        double ga = above > u ? above - u : (u > above + 1.0 ? u - (above + 1.0) : 0.0);
        g = gb < g ? gb : g;
        g = ga < g ? ga : g;
    }
    g -= unit_slack(x, q, k);
    return g > 0.0 ? g * x->cell[k] : 0.0;
}

/* A bound squared, shrunk so that it stays below the computed distances. */
static inline double bound2(double sum)
{
    return sum * (1.0 - 0x1p-40);
}

/* Cell index along k of offset d (wrapped on periodic axes). */
static inline int64_t cell_at(const prox_knn_index *x, const query *q, int k, int64_t d)
{
    int64_t c = q->c[k] + d, n = x->ncell[k];
    return c < 0 ? c + n : c >= n ? c - n : c;
}

/* The strip of x-offsets [a, b] in row (y, z) of the query, as at most two
 * ranges (a periodic x axis splits it at the seam). */
static int strip_ranges(const prox_knn_index *x, const query *q, int64_t a, int64_t b, int64_t y,
                        int64_t z, int64_t range[2][2])
{
    int64_t c0 = q->c[0] + a, c1 = q->c[0] + b, n = x->ncell[0];
    int count = 0;
    if (c0 < 0) {
        knn_strip(x, c0 + n, n - 1, y, z, &range[count][0], &range[count][1]);
        count++;
        c0 = 0;
    }
    int64_t wrap = c1 >= n ? c1 - n : -1;
    c1 = c1 >= n ? n - 1 : c1;
    knn_strip(x, c0, c1, y, z, &range[count][0], &range[count][1]);
    count++;
    if (wrap >= 0) {
        knn_strip(x, 0, wrap, y, z, &range[count][0], &range[count][1]);
        count++;
    }
    return count;
}

/* The smallest bound of any cell beyond ring R (some axis at |d| = R + 1),
 * squared; false when there is none (every cell seen). */
static bool beyond_ring(const prox_knn_index *x, const query *q, int64_t R, double *b2)
{
    double g = INFINITY;
    bool any = false;
    if (!x->periodic[0] && !x->periodic[1] && !x->periodic[2]) {
        /* open axes: axis_gap's arithmetic on the two cells at +-(R + 1) */
        for (int k = 0; k < x->dim; k++) {
            double u = q->u[k], c = (double)q->c[k], slack = unit_slack(x, q, k), t;
            if (q->c[k] - (R + 1) >= 0) {
                t = u - (c - (double)R) - slack;
                t = t > 0.0 ? t * x->cell[k] : 0.0;
                g = t < g ? t : g;
                any = true;
            }
            if (q->c[k] + R + 1 <= x->ncell[k] - 1) {
                t = (c + (double)(R + 1)) - u - slack;
                t = t > 0.0 ? t * x->cell[k] : 0.0;
                g = t < g ? t : g;
                any = true;
            }
        }
        *b2 = bound2(g * g);
        return any;
    }
    for (int k = 0; k < x->dim; k++) {
        int64_t lo, hi;
        offset_range(x, q, k, &lo, &hi);
        if (-(R + 1) >= lo) {
            double t = axis_gap(x, q, k, -(R + 1));
            g = t < g ? t : g;
            any = true;
        }
        if (R + 1 <= hi) {
            double t = axis_gap(x, q, k, R + 1);
            g = t < g ? t : g;
            any = true;
        }
    }
    *b2 = bound2(g * g);
    return any;
}

/* Ring R (R >= 2) of the query: rows (dy, dz) of the ring's faces whole,
 * the other rows' two end cells; each skipped when its bound exceeds the
 * k-th distance. */
static void scan_ring(const prox_knn_index *x, const query *q, int64_t R, best_set *best,
                      counters *n)
{
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        offset_range(x, q, k, &lo[k], &hi[k]);
    int64_t z0 = lo[2] > -R ? lo[2] : -R, z1 = hi[2] < R ? hi[2] : R;
    int64_t y0 = lo[1] > -R ? lo[1] : -R, y1 = hi[1] < R ? hi[1] : R;
    int64_t x0 = lo[0] > -R ? lo[0] : -R, x1 = hi[0] < R ? hi[0] : R;
    for (int64_t dz = z0; dz <= z1; dz++) {
        double gz = x->dim == 3 ? axis_gap(x, q, 2, dz) : 0.0;
        for (int64_t dy = y0; dy <= y1; dy++) {
            double gy = axis_gap(x, q, 1, dy), row = gz * gz + gy * gy;
            if (bound2(row) > best_worst(best))
                continue;
            bool face = (dz == -R || dz == R) || (dy == -R || dy == R);
            int64_t y = cell_at(x, q, 1, dy), z = cell_at(x, q, 2, dz);
            if (face) {
                int64_t r[2][2];
                int c = strip_ranges(x, q, x0, x1, y, z, r);
                n->cells += x1 - x0 + 1;
                for (int t = 0; t < c; t++)
                    scan_range(x, q, r[t][0], r[t][1], best, n);
                continue;
            }
            for (int side = 0; side < 2; side++) {
                int64_t dx = side ? R : -R;
                if (dx < x0 || dx > x1)
                    continue;
                double gx = axis_gap(x, q, 0, dx);
                if (bound2(row + gx * gx) > best_worst(best))
                    continue;
                int64_t b, e, c = cell_at(x, q, 0, dx);
                knn_strip(x, c, c, y, z, &b, &e);
                n->cells++;
                scan_range(x, q, b, e, best, n);
            }
        }
    }
}

/* The offset along k from the query's cell to cell c, as offset_range
 * names it (periodic: the one image in [lo, hi]). */
static inline int64_t offset_to(const prox_knn_index *x, const query *q, int k, int64_t c)
{
    int64_t d = c - q->c[k], lo, hi, n = x->ncell[k];
    offset_range(x, q, k, &lo, &hi);
    return d < lo ? d + n : d > hi ? d - n : d;
}

/* Every occupied cell outside rings 0 .. R, each skipped when its bound
 * exceeds the k-th distance: the rest of the search once the rings would
 * cross more cells than are occupied (a query far from the points, or
 * in a sparse region of clustered data), so that empty space never costs
 * more than the occupied cells' count. */
static void scan_runs_beyond(const prox_knn_index *x, const query *q, int64_t R, best_set *best,
                             counters *n)
{
    uint64_t n0 = (uint64_t)x->ncell[0], n01 = n0 * (uint64_t)x->ncell[1];
    for (int64_t r = 0; r < x->nruns; r++) {
        uint64_t key = knn_run_key(x, r);
        int64_t c[3] = {(int64_t)(key % n0), (int64_t)(key % n01 / n0), (int64_t)(key / n01)};
        double sum = 0.0;
        bool inside = true;
        for (int k = 0; k < x->dim; k++) {
            int64_t d = offset_to(x, q, k, c[k]);
            inside = inside && d >= -R && d <= R;
            double g = axis_gap(x, q, k, d);
            sum += g * g;
        }
        n->cells++;
        if (!inside && !(bound2(sum) > best_worst(best)))
            scan_range(x, q, x->run_start[r], x->run_start[r + 1], best, n);
    }
}

/* Cells of the box of rings 0 .. R. */
static inline double ring_box_cells(int dim, int64_t R)
{
    double side = (double)(2 * R + 1);
    return dim == 3 ? side * side * side : side * side;
}

/* ---- the box of cells around the query, nearest first ------------------ */

/* The box's half side: offsets -KNN_BOX .. KNN_BOX along each axis. */
#define KNN_BOX 3
#define KNN_BOX_SIDE (2 * KNN_BOX + 1)
#define KNN_BOX_CELLS (KNN_BOX_SIDE * KNN_BOX_SIDE * KNN_BOX_SIDE)

/* An offset of the box and the bound below every query's distance to its
 * cell: the cells between, (|d| - 1) edges along each axis, less the
 * bounds' largest slack (unit_slack for any query inside the grid; one
 * outside it is farther by more than its slack), squared by bound2. */
typedef struct box_offset {
    int d[3];
    double low2;
} box_offset;

typedef struct knn_box {
    int count;
    box_offset o[KNN_BOX_CELLS];
} knn_box;

static int by_low_bound(const void *a, const void *b)
{
    const box_offset *x = a, *y = b;
    if (x->low2 != y->low2)
        return x->low2 < y->low2 ? -1 : 1;
    int mx = abs(x->d[0]) + abs(x->d[1]) + abs(x->d[2]);
    int my = abs(y->d[0]) + abs(y->d[1]) + abs(y->d[2]);
    if (mx != my) /* the own cell first, then faces, edges, corners */
        return mx < my ? -1 : 1;
    for (int k = 2; k >= 0; k--)
        if (x->d[k] != y->d[k])
            return x->d[k] < y->d[k] ? -1 : 1;
    return 0;
}

/* Every offset of the box in ascending low bound (z = 0 only in 2D). */
static void box_make(const prox_knn_index *x, knn_box *box)
{
    int zr = x->dim == 3 ? KNN_BOX : 0;
    box->count = 0;
    for (int dz = -zr; dz <= zr; dz++)
        for (int dy = -KNN_BOX; dy <= KNN_BOX; dy++)
            for (int dx = -KNN_BOX; dx <= KNN_BOX; dx++) {
                int d[3] = {dx, dy, dz};
                double sum = 0.0;
                for (int k = 0; k < x->dim; k++) {
                    double slack = 0x1p-40 * (3.0 * (double)x->ncell[k] + 1.0);
                    double g = fabs((double)d[k]) - 1.0 - slack;
                    g = g > 0.0 ? g * x->cell[k] : 0.0;
                    sum += g * g;
                }
                box_offset *o = &box->o[box->count++];
                memcpy(o->d, d, sizeof d);
                o->low2 = bound2(sum);
            }
    qsort(box->o, (size_t)box->count, sizeof box->o[0], by_low_bound);
}

/* Per axis and offset of the box: the query's squared gap and the cell's
 * part of the key, or -1 where the offset names no cell of its own (past
 * an open axis's end, or a periodic cell another offset names). */
typedef struct box_axes {
    double g2[3][KNN_BOX_SIDE];
    int64_t key[3][KNN_BOX_SIDE];
} box_axes;

static void box_axes_of(const prox_knn_index *x, const query *q, box_axes *a)
{
    int64_t scale[3] = {1, x->ncell[0], x->ncell[0] * x->ncell[1]};
    for (int k = 0; k < 3; k++) {
        int64_t lo, hi;
        offset_range(x, q, k, &lo, &hi);
        for (int d = -KNN_BOX; d <= KNN_BOX; d++) {
            bool named = d >= lo && d <= hi;
            double g = named && k < x->dim ? axis_gap(x, q, k, d) : 0.0;
            a->g2[k][d + KNN_BOX] = g * g;
            a->key[k][d + KNN_BOX] = named ? cell_at(x, q, k, d) * scale[k] : -1;
        }
    }
}

/* The sorted points of the cell of key `key`: [*b, *e). */
static inline void cell_range(const prox_knn_index *x, int64_t key, int64_t *b, int64_t *e)
{
    if (x->dense) {
        *b = x->cell_start[key];
        *e = x->cell_start[key + 1];
        return;
    }
    knn_strip(x, key, key, 0, 0, b, e); /* a key of row 0: the cell itself */
}

/* The box's cells nearest first, each skipped when its bound exceeds the
 * k-th distance, until the low bound of the next exceeds it: then no
 * cell of the box is left that could hold a better point. */
static void scan_box(const prox_knn_index *x, const knn_box *box, const query *q,
                     best_set *best, counters *n)
{
    box_axes a;
    box_axes_of(x, q, &a);
    for (int t = 0; t < box->count; t++) {
        const box_offset *o = &box->o[t];
        double worst = best_worst(best);
        if (o->low2 > worst)
            return;
        int ix = o->d[0] + KNN_BOX, iy = o->d[1] + KNN_BOX, iz = o->d[2] + KNN_BOX;
        int64_t kx = a.key[0][ix], ky = a.key[1][iy], kz = a.key[2][iz];
        if (kx < 0 || ky < 0 || kz < 0)
            continue;
        if (bound2(a.g2[0][ix] + a.g2[1][iy] + a.g2[2][iz]) > worst)
            continue;
        int64_t b, e;
        cell_range(x, kx + ky + kz, &b, &e);
        n->cells++;
        scan_range(x, q, b, e, best, n);
    }
}

/* Query q's k best: the box nearest first, then rings beyond it until
 * proven, or the occupied cells beyond them once rings would cost more. */
static void search_one(const prox_knn_index *x, const knn_box *box, const query *q,
                       best_set *best, counters *n)
{
    best->count = 0;
    scan_box(x, box, q, best, n);
    double b2;
    for (int64_t R = KNN_BOX; beyond_ring(x, q, R, &b2) && b2 <= best_worst(best); R++) {
        if (ring_box_cells(x->dim, R + 1) > (double)(4 * x->nruns + 64)) {
            scan_runs_beyond(x, q, R, best, n);
            break;
        }
        scan_ring(x, q, R + 1, best, n);
    }
    best_finish(best);
}

/* The k-th squared distance a query of a group expects: the last query's
 * times this. A guess too small costs the block's positions taken again
 * (a vector compare per PD_W distances), one too large costs the rank of
 * the extra candidates it lets through; the k-th squared distance of
 * k = 16 in 3D varies by about 16% from query to query (on W1 at k = 16
 * 1.08 executes as many instructions, 1.25 and 1.3 more; on W2 at k = 8
 * 1.3 more). */
#define KNN_GUESS 1.15
/* A guess that lets fewer than k through grows by this, at most
 * KNN_GROWS times before the limit itself serves. */
#define KNN_GROW 1.5
#define KNN_GROWS 3
/* Candidates within the bound ranked (rank_sort) up to this many (their
 * positions fit the key's low 6 bits); more go through the best set's
 * bounded insertion. */
#define KNN_RANK_MAX 64

/* ---- a group's near block: its cell and the ring around it ------------- */

/* The candidates of a group's cell and its ring of cells (27 in 3D, 9 in
 * 2D), copied once per group into one block: each query of the group
 * then computes all their distances in one vector loop, keeps those
 * within a tentative bound, and offers only them. */
typedef struct near_block {
    double *x, *y, *z;
    prox_index *id;
    double *d2;     /* per query: the distances, padded with PD_W NaNs */
    double *cd;     /* per query: the candidates within the bound */
    prox_index *ci; /* and their indices */
    int32_t *ck;    /* their rank keys (rank_sort) */
    double *sd;     /* and the candidates in rank order (sd[-1] = -1: pack_sort's sentinel) */
    prox_index *si;
    int64_t count, cap;
} near_block;

static void near_block_free(const prox_allocator *a, near_block *nb)
{
    prox_free(a, nb->x);
    *nb = (near_block){0};
}

/* Entries each array of the near block keeps past its candidates: the
 * distances' NaN padding (PD_W), the rank keys' (PV_W). */
#define KNN_PAD 16

/* Room for `need` candidates and KNN_PAD past them (one allocation for
 * the ten arrays). */
static bool near_block_room(const prox_allocator *a, near_block *nb, int64_t need)
{
    if (nb->x && need + KNN_PAD <= nb->cap)
        return true;
    near_block_free(a, nb);
    int64_t cap = 2 * need + 64;
    double *m = prox_alloc_array(a, cap, 7 * sizeof(double) + 3 * sizeof(prox_index));
    if (!m)
        return false;
    prox_index *ids = (prox_index *)(m + 7 * cap);
    *nb = (near_block){.x = m, .y = m + cap, .z = m + 2 * cap, .d2 = m + 3 * cap,
                       .cd = m + 4 * cap, .ck = (int32_t *)(m + 5 * cap), .sd = m + 6 * cap + 1,
                       .id = ids, .ci = ids + cap, .si = ids + 2 * cap, .cap = cap - 1};
    nb->sd[-1] = -1.0; /* pack_sort's sentinel: below every squared distance */
    return true;
}

/* Whether the near block names each cell once: every periodic axis holds
 * 3 cells or more (fewer: the box path, which names each cell once). */
static bool near_block_fits(const prox_knn_index *x)
{
    for (int k = 0; k < x->dim; k++)
        if (x->periodic[k] && x->ncell[k] < 3)
            return false;
    return true;
}

/* The group's block around the cell of query q; false when out of memory. */
static bool near_block_fill(const prox_knn_index *x, const query *q, near_block *nb,
                            const prox_allocator *a, counters *n)
{
    int64_t ranges[18][2], count = 0, total = 0;
    int64_t zr = x->dim == 3 ? 1 : 0;
    for (int64_t dz = -zr; dz <= zr; dz++) {
        if (x->dim == 3 && !x->periodic[2] && (q->c[2] + dz < 0 || q->c[2] + dz >= x->ncell[2]))
            continue;
        for (int64_t dy = -1; dy <= 1; dy++) {
            if (!x->periodic[1] && (q->c[1] + dy < 0 || q->c[1] + dy >= x->ncell[1]))
                continue;
            int64_t lo = x->periodic[0] || q->c[0] > 0 ? -1 : 0;
            int64_t hi = x->periodic[0] || q->c[0] < x->ncell[0] - 1 ? 1 : 0;
            int64_t r[2][2];
            int c = strip_ranges(x, q, lo, hi, cell_at(x, q, 1, dy), cell_at(x, q, 2, dz), r);
            n->cells += hi - lo + 1;
            for (int t = 0; t < c; t++)
                if (r[t][1] > r[t][0]) {
                    ranges[count][0] = r[t][0];
                    ranges[count++][1] = r[t][1];
                    total += r[t][1] - r[t][0];
                }
        }
    }
    if (!near_block_room(a, nb, total))
        return false;
    int64_t at = 0;
    for (int64_t t = 0; t < count; t++) {
        int64_t b = ranges[t][0], len = ranges[t][1] - b;
        memcpy(nb->x + at, x->pos[0] + b, (size_t)len * sizeof(double));
        memcpy(nb->y + at, x->pos[1] + b, (size_t)len * sizeof(double));
        if (x->dim == 3)
            memcpy(nb->z + at, x->pos[2] + b, (size_t)len * sizeof(double));
        memcpy(nb->id + at, x->id + b, (size_t)len * sizeof(prox_index));
        at += len;
    }
    nb->count = total;
    return true;
}

/* The positions of the block's distances at most g, compressed a vector
 * at a time into pos[] (room for the block and PD_W more; no branch on
 * which lanes are kept): how many. Whole vectors: the distances are
 * padded with NaN, which no compare keeps. */
static int64_t near_within(const near_block *nb, double g, uint32_t *restrict pos)
{
    int64_t kept = 0;
    pd_f64 b = pd_set1(g);
    for (int64_t t = 0; t < nb->count; t += PD_W) {
        uint32_t bits = pd_bits(pd_le(pd_load_n(nb->d2 + t, PD_W), b));
        pd_compress_iota(pos + kept, t, bits);
        kept += prox_lanes_popcount(bits);
    }
    return kept;
}

/* The block's candidates within a bound, the query itself left out,
 * packed in block order into cd[], ci[]: how many. The bound is the
 * guess, grown until the block holds `need` distances within it (k, and
 * the query itself when it is one of the block's points), else the
 * limit. Exact either way: when `need` lie within the bound, the block's
 * k best (self left out) all do; when none serves, the limit keeps every
 * candidate the best set could take. The copy steps over the query
 * itself without a branch. */
static int64_t near_pack(const near_block *nb, const query *q, double guess, double limit,
                         int64_t need, double *restrict cd, prox_index *restrict ci,
                         uint32_t *restrict pos)
{
    double g = guess < limit ? guess : limit;
    int64_t kept = near_within(nb, g, pos);
    for (int grow = 0; kept < need && g < limit; grow++) {
        g = grow < KNN_GROWS && g * KNN_GROW < limit ? g * KNN_GROW : limit;
        kept = near_within(nb, g, pos);
    }
    int64_t m = 0;
    for (int64_t t = 0; t < kept; t++) {
        uint32_t u = pos[t];
        cd[m] = nb->d2[u];
        ci[m] = nb->id[u];
        m += (int64_t)nb->id[u] != q->self;
    }
    return m;
}

/* cd[0 .. m), ci[] sorted by (squared distance, index), from an order
 * that is already right but among nearly equal distances (rank_sort's):
 * one compare a candidate in order, an insertion (cd[-1] is a sentinel
 * below every distance) for the few that are not. */
static void pack_sort(double *restrict cd, prox_index *restrict ci, int64_t m)
{
    for (int64_t t = 1; t < m; t++) {
        if (cd[t - 1] < cd[t])
            continue;
        double d = cd[t];
        prox_index i = ci[t];
        int64_t at = t;
        while (cd[at - 1] > d) {
            cd[at] = cd[at - 1];
            ci[at] = ci[at - 1];
            at--;
        }
        while (at > 0 && cd[at - 1] == d && ci[at - 1] > i) { /* a tie: by index */
            cd[at] = cd[at - 1];
            ci[at] = ci[at - 1];
            at--;
        }
        cd[at] = d;
        ci[at] = i;
    }
}

/* cd[0 .. m), ci[] (m <= KNN_RANK_MAX) sorted into sd[], si[] by rank:
 * each candidate's rank is the number of keys below its own, counted
 * PV_W 32-bit lanes at a time with no branch. The key is the squared
 * distance rounded to a float (monotone: never reverses two distances),
 * its bits (below 2^31, so compared as signed integers whatever the
 * floating-point modes) with the low 6 replaced by the candidate's
 * position: unique keys, so the ranks are a permutation, in an order
 * that agrees with (squared distance, index) except among distances
 * equal in their key's high bits, which pack_sort then puts right (one
 * compare a candidate where the rest is sorted). */
static void rank_sort(near_block *nb, int64_t m)
{
    int32_t *ck = nb->ck;
    for (int64_t t = 0; t < m; t++) {
        float f = (float)nb->cd[t];
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        ck[t] = (int32_t)((bits & ~(uint32_t)63) | (uint32_t)t);
    }
    for (int t = 0; t < PV_W; t++) /* whole vectors: the padding is below no key */
        ck[m + t] = INT32_MAX;
    for (int64_t i = 0; i < m; i++) {
        pv_i32 key = pv_set1_i32(ck[i]);
        pv_i32 below = pv_set1_i32(0);
        for (int64_t j = 0; j < m; j += PV_W)
            below = pv_sub_i32(below, pv_gt_i32(key, pv_load(ck + j)));
        int64_t r = pv_hsum(below);
        nb->sd[r] = nb->cd[i];
        nb->si[r] = nb->ci[i];
    }
    pack_sort(nb->sd, nb->si, m);
}

/* The near block's k best into the best set (emptied first), whose
 * limit stays best->limit: the candidates within the bound packed, then
 * ranked (the common case: a good guess lets about 1.4 k through), or
 * offered through the bounded insertion when many or when k is past the
 * sorted set's (the heap). */
static void near_select(near_block *nb, const query *q, best_set *best, double guess)
{
    int64_t need = (int64_t)best->k + (q->self >= 0); /* the query is in its own cell */
    /* the positions borrow the rank keys' room, free until rank_sort */
    int64_t m = near_pack(nb, q, guess, best->limit, need, nb->cd, nb->ci, (uint32_t *)nb->ck);
    best->count = 0;
    if (m <= KNN_RANK_MAX && best->k <= KNN_SORTED_MAX) {
        rank_sort(nb, m);
        int keep = m < best->k ? (int)m : best->k;
        memcpy(best->d2, nb->sd, (size_t)keep * sizeof *best->d2);
        memcpy(best->id, nb->si, (size_t)keep * sizeof *best->id);
        best->count = keep;
        return;
    }
    for (int64_t t = 0; t < m; t++)
        if (nb->cd[t] <= best_worst(best))
            best_offer(best, nb->cd[t], nb->ci[t]);
}

/* Query q's k best: the near block, then rings from 2 on until proven.
 * *guess is the k-th squared distance a query of the group is expected
 * to have (the last one's, widened; +inf for none): near_pack makes any
 * guess exact. */
static void search_near(const prox_knn_index *x, near_block *nb, const query *q,
                        best_set *best, double *guess, counters *n)
{
    const double *zs = x->dim == 3 ? nb->z : NULL;
    arrays_dist2(x, q, nb->x, nb->y, zs, nb->count, nb->d2);
    for (int t = 0; t < PD_W; t++) /* the padding near_within relies on */
        nb->d2[nb->count + t] = NAN;
    n->candidates += nb->count;
    near_select(nb, q, best, *guess);
    double b2;
    for (int64_t R = 1; beyond_ring(x, q, R, &b2) && b2 <= best_worst(best); R++) {
        if (ring_box_cells(x->dim, R + 1) > (double)(4 * x->nruns + 64)) {
            scan_runs_beyond(x, q, R, best, n);
            break;
        }
        scan_ring(x, q, R + 1, best, n);
    }
    best_finish(best);
    *guess = best->count == best->k ? KNN_GUESS * best->d2[best->k - 1] : INFINITY;
}

/* ---- queries, groups, chunks -------------------------------------------- */

typedef struct knn_job {
    const prox_knn_index *x;
    const prox_points *queries; /* NULL: the index's own points */
    const uint32_t *order;      /* queries: their indices in cell order */
    const uint64_t *keys;       /* queries: their keys in that order */
    int64_t groups;             /* runs, or groups of queries of one cell */
    const uint32_t *group_start; /* queries: first of each group in `order` */
    int k;
    double limit;
    bool include_self;
    knn_out out;
    prox_index missing;
    int64_t *found;             /* per chunk: neighbours delivered */
    prox_status *status;        /* per chunk */
    int stop;                   /* a callback asked to stop */
    knn_box box;                /* the box's offsets, nearest first */
} knn_job;

static void query_at(const knn_job *j, int64_t s, query *q)
{
    const prox_knn_index *x = j->x;
    for (int k = 0; k < 3; k++) {
        double v = 0.0;
        if (k < x->dim)
            v = j->queries ? prox_coord(j->queries, s, k, x->period) : x->pos[k][s];
        q->q[k] = v;
        q->u[k] = k < x->dim ? knn_cell_unit(x, k, v) : 0.5;
        q->c[k] = knn_cell_of_unit(x, k, q->u[k]);
    }
    q->self = j->queries || j->include_self ? -1 : (int64_t)x->id[s];
}

/* The group's members: [*b, *e) of sorted points or of `order`. */
static void group_members(const knn_job *j, int64_t g, int64_t *b, int64_t *e)
{
    const uint32_t *start = j->queries ? j->group_start : j->x->run_start;
    *b = start[g];
    *e = start[g + 1];
}

/* Deliver query `row`'s neighbours; false when a callback asks to stop. */
static bool deliver(const knn_job *j, int64_t row, best_set *best)
{
    if (j->out.fn) {
        for (int t = 0; t < best->count; t++)
            best->d2[t] = sqrt(best->d2[t]);
        return j->out.fn(row, best->count, best->id, best->d2, j->out.user) == 0;
    }
    prox_knn_result *r = j->out.result;
    prox_index *ids = r->indices + row * j->k;
    double *dist = r->distances + row * j->k;
    for (int t = 0; t < best->count; t++) {
        ids[t] = best->id[t];
        dist[t] = sqrt(best->d2[t]);
    }
    for (int t = best->count; t < j->k; t++) {
        ids[t] = j->missing;
        dist[t] = INFINITY;
    }
    r->counts[row] = best->count;
    return true;
}

static void knn_step(const void *job, points_chunk *chunk)
{
    knn_job *j = (knn_job *)job;
    const prox_knn_index *x = j->x;
    int64_t g0 = j->groups * chunk->index / chunk->count;
    int64_t g1 = j->groups * (chunk->index + 1) / chunk->count;
    best_set best = {.k = j->k, .limit = j->limit};
    best.d2 = prox_alloc_array(&x->allocator, j->k, sizeof *best.d2);
    best.id = prox_alloc_array(&x->allocator, j->k, sizeof *best.id);
    counters n = {0, 0};
    int64_t found = 0;
    if (!best.d2 || !best.id) {
        j->status[chunk->index] = PROX_ERR_NO_MEMORY;
        g1 = g0;
    }
    bool near = near_block_fits(x);
    near_block nb = {0};
    /* carried from group to group: a neighbouring cell's k-th distance
     * is a better first guess than none (any guess is exact) */
    double guess = INFINITY;
    for (int64_t g = g0; g < g1 && !j->stop; g++) {
        int64_t b, e;
        group_members(j, g, &b, &e);
        query q;
        for (int64_t t = b; t < e && !j->stop; t++) {
            int64_t s = j->queries ? j->order[t] : t;
            query_at(j, s, &q);
            if (near && t == b && !near_block_fill(x, &q, &nb, &x->allocator, &n)) {
                j->status[chunk->index] = PROX_ERR_NO_MEMORY;
                g1 = g0;
                break;
            }
            if (near)
                search_near(x, &nb, &q, &best, &guess, &n);
            else
                search_one(x, &j->box, &q, &best, &n);
            found += best.count;
            int64_t row = j->queries ? s : (int64_t)x->id[s];
            if (!deliver(j, row, &best))
                j->stop = 1;
        }
    }
    near_block_free(&x->allocator, &nb);
    prox_free(&x->allocator, best.d2);
    prox_free(&x->allocator, best.id);
    chunk->candidates += n.candidates;
    chunk->cells_visited += n.cells;
    j->found[chunk->index] = found;
}

/* The second set's cell order: keys[] and order[] sorted, groups of one
 * key. The arrays are the caller's to free (*keys, *order, *starts). */
static prox_status order_queries(const prox_knn_index *x, const prox_points *qs, int threads,
                                 uint64_t **keys_out, uint32_t **order_out, uint32_t **starts_out,
                                 int64_t *groups)
{
    int64_t m = qs->count;
    const prox_allocator *a = &x->allocator;
    uint64_t *keys = prox_alloc_array(a, 2 * m, sizeof *keys);
    uint32_t *order = prox_alloc_array(a, 2 * m, sizeof *order);
    uint32_t *starts = prox_alloc_array(a, m + 1, sizeof *starts);
    *keys_out = keys;
    *order_out = order;
    *starts_out = starts;
    if (!keys || !order || !starts)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory to sort %lld queries", (long long)m);
#pragma omp parallel for num_threads(threads) if (threads > 1 && m > 65536) schedule(static)
    for (int64_t i = 0; i < m; i++) {
        int64_t c[3] = {0, 0, 0};
        for (int k = 0; k < x->dim; k++)
            c[k] = knn_cell_of_unit(x, k, knn_cell_unit(x, k, prox_coord(qs, i, k, x->period)));
        keys[i] = knn_key(x, c);
        order[i] = (uint32_t)i;
    }
    prox_radix_sort64(keys, order, keys + m, order + m, m, threads);
    int64_t g = 0;
    for (int64_t i = 0; i < m; i++)
        if (i == 0 || keys[i] != keys[i - 1])
            starts[g++] = (uint32_t)i;
    starts[g] = (uint32_t)m;
    *groups = g;
    return PROX_OK;
}

static int chunk_count(int64_t groups, int threads, bool callback)
{
    if (callback || threads <= 1 || groups < 2)
        return 1;
    int64_t c = (int64_t)threads * PROX_PARTS_PER_THREAD;
    return (int)(c < groups ? c : groups);
}

prox_status prox_knn_search(const prox_knn_index *x, const prox_points *queries,
                            const prox_knn_desc *desc, knn_out out, prox_stats *stats)
{
    int threads = prox_threads_resolve(desc->threads);
    int64_t rows = queries ? queries->count : x->n;
    knn_job j = {.x = x, .queries = queries, .k = desc->k, .include_self = desc->include_self,
                 .out = out, .missing = (prox_index)x->n, .groups = x->nruns,
                 .limit = desc->max_radius > 0 ? desc->max_radius * desc->max_radius : INFINITY};
    uint64_t *keys = NULL;
    uint32_t *order = NULL, *starts = NULL;
    prox_status st = PROX_OK;
    if (out.result)
        st = knn_result_room(out.result, rows, desc->k);
    if (!st && queries)
        st = order_queries(x, queries, threads, &keys, &order, &starts, &j.groups);
    j.order = order;
    j.keys = keys;
    box_make(x, &j.box);
    j.group_start = starts;
    int chunks = chunk_count(j.groups, threads, out.fn != NULL);
    int64_t *found = prox_alloc_array(&x->allocator, chunks, sizeof *found);
    prox_status *status = prox_alloc_array(&x->allocator, chunks, sizeof *status);
    if (!st && (!found || !status))
        st = prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for %d chunks", chunks);
    points_chunk total = {0};
    int64_t pairs = 0;
    if (!st && rows > 0) {
        for (int c = 0; c < chunks; c++)
            status[c] = PROX_OK;
        j.found = found;
        j.status = status;
        points_drive_steps(knn_step, &j, chunks, threads, &total);
        for (int c = 0; c < chunks; c++) {
            st = st ? st : status[c];
            pairs += found[c];
        }
        if (st)
            st = prox_fail(st, "kNN: no memory for a query's %d best", desc->k);
        else if (j.stop)
            st = PROX_STOPPED;
    }
    prox_free(&x->allocator, found);
    prox_free(&x->allocator, status);
    prox_free(&x->allocator, keys);
    prox_free(&x->allocator, order);
    prox_free(&x->allocator, starts);
    if (st && st != PROX_STOPPED && out.result)
        prox_knn_result_free(out.result);
    if (stats) {
        *stats = (prox_stats){0};
        stats->cells = x->nruns;
        stats->bytes = x->bytes;
        points_drive_report(stats, pairs, &total, knn_method(x));
    }
    return st;
}
