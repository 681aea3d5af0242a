/* knn_build.c: a kNN index's cells (knn_build.h).
 *
 * The planner's one decision is the cell size. It starts from the mean
 * density of the points' box (a cell of knn_cell_points(k) points on
 * average) and measures the result: the occupancy a typical point sees
 * (the points-weighted median of the cells' counts). Clustered data
 * (blobs, surfaces in 3D, a far outlier stretching the box) puts most
 * points in cells far fuller than the mean; the size then shrinks by the
 * measured excess, with the dimension the data really fills estimated
 * from two measurements, until the typical point's cell holds about the
 * target (at most KNN_MAX_FITS sorts). The cells left empty by the
 * smaller size go to a hash of the occupied ones (sparse), so memory
 * follows the points, not the box. Every size gives exact results; the
 * size only decides the work. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/radix_sort.h"
#include "core/threads.h"
#include "points/knn_build.h"
#include "points/points_common.h"

/* Sorts of the keys the planner may spend fitting the cell size. */
#define KNN_MAX_FITS 5
/* A typical point's cell may hold this many times the target before the
 * size is fitted again. */
#define KNN_FIT_SLACK 3.0
/* A fitted size is kept only when it cut the typical occupancy to this
 * fraction of the last one or less. */
#define KNN_FIT_GAIN 0.7

/* The points a cell should hold for k neighbours: the query's cell and
 * the ring around it (27 cells in 3D, 9 in 2D, knn_search.c's near block)
 * then hold the k nearest of most queries, the others reading a few
 * cells of the next ring. 0.3 k in 3D and 0.45 k in 2D execute the
 * fewest instructions on W1 at k = 16 and W2 at k = 8 (callgrind: about
 * 11% fewer than k / 2 and 3k / 4). */
static double knn_cell_points(int k, int dim)
{
    double m = dim == 3 ? 0.3 * k : 0.45 * k;
    return m < 1.0 ? 1.0 : m;
}

typedef struct fit {
    double lo[3], hi[3], extent[3];
    int used;          /* axes with a positive extent */
    double cell;       /* edge of the cells along the used axes */
} fit;

static prox_status bounding_box(const prox_points *p, const prox_knn_desc *desc, fit *f)
{
    static const char axis_name[] = "xyz";
    for (int k = 0; k < 3; k++) {
        f->lo[k] = f->hi[k] = 0.0;
        f->extent[k] = 0.0;
    }
    f->used = 0;
    for (int k = 0; k < p->dim; k++) {
        if (desc->period[k] > 0) {
            f->extent[k] = desc->period[k];
            f->used++;
            continue;
        }
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; i < p->count; i++) {
            double v = prox_points_get(p, i, k);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        if (p->count == 0)
            lo = hi = 0.0;
        f->lo[k] = lo;
        f->hi[k] = hi;
        f->extent[k] = hi - lo;
        if (!isfinite(f->extent[k]))
            return prox_fail(PROX_ERR_RANGE,
                             "points span [%g, %g] along %c: the extent overflows a double "
                             "(scale the coordinates)",
                             lo, hi, axis_name[k]);
        f->used += f->extent[k] > 0;
    }
    return PROX_OK;
}

/* The geometry for cells of edge f->cell (ncell 1 along an axis of no
 * extent). Open axes: the origin at the minimum and one cell past the
 * unit of the maximum, so that no point's unit is ever clamped. Periodic
 * axes: whole cells over the period. */
static void set_geometry(prox_knn_index *x, const fit *f)
{
    int64_t most = x->dim == 3 ? KNN_MAX_CELLS_3D : KNN_MAX_CELLS_2D;
    for (int k = 0; k < 3; k++) {
        x->origin[k] = f->lo[k];
        x->ncell[k] = 1;
        x->cell[k] = 1.0;
        x->inv_cell[k] = 1.0;
        if (k >= x->dim || f->extent[k] <= 0)
            continue;
        double cells = f->extent[k] / f->cell;
        if (x->periodic[k]) {
            int64_t c = cells < 1.0 ? 1 : cells > (double)most ? most : (int64_t)cells;
            x->ncell[k] = c;
            x->cell[k] = f->extent[k] / (double)c;
            x->inv_cell[k] = (double)c / f->extent[k];
            continue;
        }
        double edge = cells > (double)(most - 2) ? f->extent[k] / (double)(most - 2) : f->cell;
        x->cell[k] = edge;
        x->inv_cell[k] = 1.0 / edge;
        double top = knn_cell_unit(x, k, f->hi[k]);
        x->ncell[k] = (int64_t)top + 1;
    }
}

static double coord(const prox_knn_index *x, const prox_points *p, int64_t i, int k)
{
    return prox_coord(p, i, k, x->period);
}

static uint64_t point_key(const prox_knn_index *x, const prox_points *p, int64_t i)
{
    int64_t c[3] = {0, 0, 0};
    for (int k = 0; k < x->dim; k++)
        c[k] = knn_cell_of_unit(x, k, knn_cell_unit(x, k, coord(x, p, i, k)));
    return knn_key(x, c);
}

/* keys[] and ids[] of every point in key order (stable: ids ascending
 * within a cell). tmp: 2n words of scratch keys, then ids. */
static void sort_by_cell(const prox_knn_index *x, const prox_points *p, uint64_t *keys,
                         uint32_t *ids, uint64_t *tmp_keys, uint32_t *tmp_ids, int threads)
{
    int64_t n = p->count;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        keys[i] = point_key(x, p, i);
        ids[i] = (uint32_t)i;
    }
    prox_radix_sort64(keys, ids, tmp_keys, tmp_ids, n, threads);
}

/* The occupancy a typical point sees: the points-weighted median of the
 * cells' counts, from sorted keys. */
static double typical_occupancy(const uint64_t *keys, int64_t n, uint32_t *scratch)
{
    if (n == 0)
        return 0.0;
    /* scratch: each point's cell count, by a walk over runs, then its median */
    int64_t s = 0;
    int64_t runs = 0;
    while (s < n) {
        int64_t e = s + 1;
        while (e < n && keys[e] == keys[s])
            e++;
        scratch[runs++] = (uint32_t)(e - s);
        s = e;
    }
    /* weighted median: the count c where the points in cells of count <= c
     * reach half; counts bucketed by powers of two for a linear pass */
    int64_t by_log[34] = {0};
    for (int64_t r = 0; r < runs; r++) {
        int b = 0;
        for (uint32_t c = scratch[r]; c > 1; c >>= 1)
            b++;
        by_log[b] += scratch[r];
    }
    int64_t seen = 0;
    for (int b = 0; b < 34; b++) {
        seen += by_log[b];
        if (2 * seen >= n)
            return ldexp(1.5, b); /* the bucket's middle, [2^b, 2^(b+1)) */
    }
    return (double)n;
}

static uint64_t total_cells(const prox_knn_index *x)
{
    return (uint64_t)x->ncell[0] * (uint64_t)x->ncell[1] * (uint64_t)x->ncell[2];
}

/* The runs and their keys: 4 bytes a key where every key fits 32 bits
 * (no more than 2^32 cells), else 8. */
static prox_status index_runs(prox_knn_index *x, const uint64_t *keys)
{
    int64_t n = x->n, runs = 0;
    for (int64_t s = 0; s < n; s++)
        runs += s == 0 || keys[s] != keys[s - 1];
    x->nruns = runs;
    bool narrow = total_cells(x) <= ((uint64_t)1 << 32);
    size_t key_bytes = narrow ? sizeof *x->run_key32 : sizeof *x->run_key64;
    x->run_start = prox_alloc_array(&x->allocator, runs + 1, sizeof *x->run_start);
    void *k = prox_alloc_array(&x->allocator, runs + 1, key_bytes);
    if (narrow)
        x->run_key32 = k;
    else
        x->run_key64 = k;
    if (!x->run_start || !k)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for %lld cells", (long long)runs);
    int64_t r = 0;
    for (int64_t s = 0; s < n; s++)
        if (s == 0 || keys[s] != keys[s - 1]) {
            x->run_start[r] = (uint32_t)s;
            if (narrow)
                x->run_key32[r++] = (uint32_t)keys[s];
            else
                x->run_key64[r++] = keys[s];
        }
    x->run_start[runs] = (uint32_t)n;
    x->bytes += (runs + 1) * (int64_t)(sizeof *x->run_start + key_bytes);
    return PROX_OK;
}

/* The home slot of a key among `slots` (any count below 2^32): the high
 * half of a multiplicative hash scaled onto the slots, so that the table
 * need not round up to a power of two. */
static inline uint64_t hash_slot(uint64_t key, uint64_t slots)
{
    uint64_t h = (key + 1) * 0x9E3779B97F4A7C15ull;
    return ((h >> 32) * slots) >> 32;
}

static inline uint64_t hash_next(uint64_t h, uint64_t slots)
{
    return h + 1 == slots ? 0 : h + 1;
}

/* The cell table: dense when there are no more cells than points (4
 * bytes a cell), else a hash of the runs (run + 1 per slot, 0 empty;
 * twice the runs' count of slots, 8 bytes a run). */
static prox_status index_table(prox_knn_index *x)
{
    uint64_t cells = total_cells(x);
    if (cells <= (uint64_t)x->n + 1024) {
        x->dense = true;
        x->cell_start = prox_alloc_array(&x->allocator, (int64_t)cells + 1, sizeof *x->cell_start);
        if (!x->cell_start)
            return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for a table of %llu cells",
                             (unsigned long long)cells);
        int64_t r = 0;
        for (uint64_t c = 0; c <= cells; c++) {
            while (r < x->nruns && knn_run_key(x, r) < c)
                r++;
            x->cell_start[c] = r < x->nruns ? x->run_start[r] : (uint32_t)x->n;
        }
        x->bytes += (int64_t)(cells + 1) * (int64_t)sizeof *x->cell_start;
        return PROX_OK;
    }
    int64_t slots = 2 * x->nruns + 16; /* at most half full */
    x->hash_slots = (uint64_t)slots;
    x->hash_run = prox_alloc_array(&x->allocator, slots, sizeof *x->hash_run);
    if (!x->hash_run)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for a hash of %lld cells",
                         (long long)x->nruns);
    memset(x->hash_run, 0, (size_t)slots * sizeof *x->hash_run);
    for (int64_t r = 0; r < x->nruns; r++) {
        uint64_t h = hash_slot(knn_run_key(x, r), x->hash_slots);
        while (x->hash_run[h])
            h = hash_next(h, x->hash_slots);
        x->hash_run[h] = (uint32_t)r + 1;
    }
    x->bytes += slots * (int64_t)sizeof *x->hash_run;
    return PROX_OK;
}

/* The run of cell `key`, or -1 (sparse table). */
static inline int64_t hash_find(const prox_knn_index *x, uint64_t key)
{
    for (uint64_t h = hash_slot(key, x->hash_slots);; h = hash_next(h, x->hash_slots)) {
        uint32_t e = x->hash_run[h];
        if (e == 0)
            return -1;
        if (knn_run_key(x, e - 1) == key)
            return (int64_t)e - 1;
    }
}

void knn_strip(const prox_knn_index *x, int64_t x0, int64_t x1, int64_t y, int64_t z, int64_t *b,
               int64_t *e)
{
    int64_t c[3] = {x0, y, z};
    uint64_t first = knn_key(x, c);
    if (x->dense) {
        *b = x->cell_start[first];
        *e = x->cell_start[first + (uint64_t)(x1 - x0) + 1];
        return;
    }
    /* the points of the strip's occupied cells are contiguous: from the
     * first occupied cell's first point to the last one's end. The first
     * through the hash; the others are the runs that follow it (runs are
     * in key order), read in order up to the strip's last key. */
    int64_t lo = -1;
    for (int64_t t = 0; t <= x1 - x0 && lo < 0; t++)
        lo = hash_find(x, first + (uint64_t)t);
    if (lo < 0) {
        *b = *e = 0;
        return;
    }
    uint64_t last = first + (uint64_t)(x1 - x0);
    int64_t hi = lo;
    while (hi + 1 < x->nruns && knn_run_key(x, hi + 1) <= last)
        hi++;
    *b = x->run_start[lo];
    *e = x->run_start[hi + 1];
}

/* The cell size: from the box's mean density, then fitted to the typical
 * point's cell (top of the file). Leaves keys and ids sorted for it. */
static void fit_cells(prox_knn_index *x, const prox_points *p, fit *f, int k, uint64_t *keys,
                      uint32_t *ids, uint64_t *tmp_keys, uint32_t *tmp_ids, int threads)
{
    double target = knn_cell_points(k, x->dim), volume = 1.0;
    for (int a = 0; a < x->dim; a++)
        volume *= f->extent[a] > 0 ? f->extent[a] : 1.0;
    int64_t n = p->count;
    f->cell = f->used ? pow(target * volume / (double)(n > 0 ? n : 1), 1.0 / f->used) : 1.0;
    double filled = f->used, last_cell = 0.0, last_seen = 0.0;
    for (x->levels_tried = 1;; x->levels_tried++) {
        set_geometry(x, f);
        sort_by_cell(x, p, keys, ids, tmp_keys, tmp_ids, threads);
        double seen = typical_occupancy(keys, n, tmp_ids);
        if (last_seen > 0 && seen > KNN_FIT_GAIN * last_seen) {
            /* smaller cells did not spread the points (duplicates): the
             * last size serves, and costs fewer empty cells */
            f->cell = last_cell;
            set_geometry(x, f);
            sort_by_cell(x, p, keys, ids, tmp_keys, tmp_ids, threads);
            return;
        }
        if (f->used == 0 || seen <= KNN_FIT_SLACK * target || x->levels_tried == KNN_MAX_FITS)
            return;
        if (last_seen > seen && last_cell > f->cell) { /* the dimension the data fills */
            double d = log(last_seen / seen) / log(last_cell / f->cell);
            filled = d < 1.0 ? 1.0 : d > f->used ? f->used : d;
        }
        last_cell = f->cell;
        last_seen = seen;
        f->cell *= pow(target / seen, 1.0 / filled);
    }
}

static prox_status gather_points(prox_knn_index *x, const prox_points *p)
{
    int64_t n = x->n;
    for (int k = 0; k < x->dim; k++) {
        x->pos[k] = prox_alloc_array(&x->allocator, n, sizeof(double));
        if (!x->pos[k])
            return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for %lld points", (long long)n);
    }
    /* one pass: each point's axes read together (the reads follow the
     * sorted ids, in no order of the caller's array) */
    for (int64_t s = 0; s < n; s++)
        for (int k = 0; k < x->dim; k++)
            x->pos[k][s] = coord(x, p, x->id[s], k);
    x->bytes += n * (int64_t)(x->dim * sizeof(double));
    return PROX_OK;
}

void prox_knn_index_destroy(prox_knn_index *x)
{
    if (!x)
        return;
    prox_allocator a = x->allocator;
    for (int k = 0; k < 3; k++)
        prox_free(&a, x->pos[k]);
    prox_free(&a, x->id);
    prox_free(&a, x->run_start);
    prox_free(&a, x->run_key32);
    prox_free(&a, x->run_key64);
    prox_free(&a, x->cell_start);
    prox_free(&a, x->hash_run);
    prox_free(&a, x);
}

/* The sort's arrays (keys, then the scratch) and the ids it leaves. */
static prox_status sort_points(prox_knn_index *x, const prox_points *p, fit *f, int k,
                               int threads)
{
    int64_t n = p->count;
    uint64_t *keys = prox_alloc_array(&x->allocator, 2 * n, sizeof *keys);
    uint32_t *tmp_ids = prox_alloc_array(&x->allocator, n, sizeof *tmp_ids);
    x->id = prox_alloc_array(&x->allocator, n, sizeof *x->id);
    prox_status st = PROX_OK;
    if (!keys || !tmp_ids || !x->id)
        st = prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory to sort %lld points", (long long)n);
    if (!st) {
        fit_cells(x, p, f, k, keys, x->id, keys + n, tmp_ids, threads);
        x->bytes += n * (int64_t)sizeof *x->id;
        st = index_runs(x, keys);
    }
    prox_free(&x->allocator, tmp_ids);
    prox_free(&x->allocator, keys);
    return st;
}

prox_status knn_build(const prox_points *points, const prox_knn_desc *desc, prox_knn_index **out)
{
    *out = NULL;
    prox_allocator a = prox_allocator_resolve(&desc->allocator);
    prox_knn_index *x = prox_alloc_array(&a, 1, sizeof *x);
    if (!x)
        return prox_fail(PROX_ERR_NO_MEMORY, "kNN: no memory for the index");
    *x = (prox_knn_index){.allocator = a, .dim = points->dim, .n = points->count,
                          .k_built = desc->k};
    for (int k = 0; k < 3; k++) {
        x->period[k] = desc->period[k];
        x->periodic[k] = desc->period[k] > 0;
    }
    x->bytes = (int64_t)sizeof *x;
    fit f;
    int threads = prox_threads_resolve(desc->threads);
    prox_status st = bounding_box(points, desc, &f);
    if (!st)
        st = sort_points(x, points, &f, desc->k, threads);
    if (!st)
        st = index_table(x);
    if (!st)
        st = gather_points(x, points);
    if (st) {
        prox_knn_index_destroy(x);
        return st;
    }
    *out = x;
    return PROX_OK;
}

const char *knn_method(const prox_knn_index *x)
{
    return x->dense ? "knn.cells.dense" : "knn.cells.sparse";
}
