/* grid.c: the uniform grid for fixed-radius neighbour search.
 *
 * Build (seeds 002 and 004): every point gets integer cell coordinates and a
 * sort key (Morton code of the cell, or Teschner's hash slot of the cell,
 * seed 000 Eq. 1); points are radix-sorted by key into flat arrays (ids and
 * coordinates in cell order); consecutive points of one cell form a run.
 * A lookup finds the runs that may hold a given cell: an open-addressing
 * table over Morton keys, or the hash slot's range of runs (seed 002's
 * cellStart). Runs carry their exact cell coordinates, so hash collisions
 * cost a comparison, never a wrong or duplicated pair.
 *
 * Pairs (seed 001): each run meets its own later points, later runs of the
 * same cell, and the runs of the forward half of the stencil, so every pair
 * of cells, and so every pair of points, is examined exactly once.
 *
 * Exactness: cells are slightly larger than radius / divisions (by 2^-16
 * relative), and at most 2^31 cells fit along an axis. Two points within
 * the radius then always land within `divisions` cells of each other along
 * every axis, even after the rounding of (x - origin) / cell, whose error is
 * below 2^-21 cells there. The final decision is the shared exact test. */
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "hash.h"
#include "kernel.h"
#include "morton.h"
#include "pair_sink.h"
#include "radix_sort.h"
#include "search.h"
#include "threads.h"
#include "views.h"

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
/* How many iterations ahead random reads are prefetched. */
#define PREFETCH_AHEAD 16

typedef struct cell3 {
    int32_t c[3];
} cell3;

struct prox_grid {
    prox_grid_desc desc;
    prox_allocator allocator;
    prox_metric metric;
    int threads;
    bool built;

    /* geometry, fixed by prox_grid_build and kept by prox_grid_update */
    int dim;
    int keys; /* prox_keys in use */
    double origin[3];
    double inv_cell[3];
    int64_t ncell[3];
    int reach[3];
    bool periodic[3];
    uint64_t hash_mask; /* PROX_KEYS_HASH: table slots - 1 */

    /* points in cell order */
    int64_t n;
    prox_index *id;
    double *pos; /* axis-major: x[0..n), y[0..n), z[0..n); before the
                    coordinates are gathered it holds the sort keys */
    int64_t id_cap, pos_cap;

    /* runs of points in one cell: points [run_start[r], run_start[r+1]) */
    int64_t nruns, max_run; /* runs, and the most points in one */
    uint32_t *run_start;
    cell3 *run_cell;
    int64_t run_start_cap, run_cell_cap;

    /* lookup: Morton: open addressing, entry = run + 1 (0 = empty);
     * hash: first run of each slot, table_len = slots + 1 */
    uint32_t *table;
    int64_t table_len, table_cap;
    int table_bits;
    bool table_dense; /* Morton: table[key] directly */

    /* stencil offsets: the forward half (self pairs) first, then the rest;
     * the full set serves ball queries */
    cell3 *stencil;
    int stencil_forward, stencil_full;
};

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
     * prox_grid_update relocates them instead of rebuilding (seed 004). */
    double pad = floor(span / UPDATE_PAD_FRACTION) + UPDATE_PAD_CELLS;
    if (!(span + 2 * pad < (double)(MAX_CELLS_PER_AXIS - 4)))
        pad = 0;
    g->origin[k] = lo - pad * min_cell;
    g->inv_cell[k] = 1.0 / min_cell;
    g->ncell[k] = (int64_t)floor((hi - g->origin[k]) * g->inv_cell[k]) + 1 + (int64_t)pad;
    g->reach[k] = divisions;
    return PROX_OK;
}

/* Bounding box of the wrapped coordinates (open axes only matter). */
static void bounding_box(const prox_points *p, const double *period, int threads, double *lo,
                         double *hi)
{
    for (int k = 0; k < 3; k++) {
        double mn = INFINITY, mx = -INFINITY;
        if (k < p->dim) {
            int64_t n = p->count;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n > 65536) \
    reduction(min : mn) reduction(max : mx) schedule(static)
            for (int64_t i = 0; i < n; i++) {
                double v = prox_coord(p, i, k, period);
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
        }
        lo[k] = p->count ? mn : 0.0;
        hi[k] = p->count ? mx : 0.0;
    }
}

static prox_status choose_geometry(prox_grid *g, const prox_points *p)
{
    int d = g->desc.cell_divisions;
    double min_cell = g->desc.radius * CELL_MARGIN / d;
    double lo[3], hi[3];
    reset_geometry(g);
    bounding_box(p, g->desc.period, g->threads, lo, hi);
    for (int k = 0; k < p->dim; k++) {
        if (g->desc.period[k] > 0) {
            periodic_axis(g, k, min_cell, d);
        } else {
            prox_status st = open_axis(g, k, lo[k], hi[k], min_cell, d);
            if (st)
                return st;
        }
    }
    g->dim = p->dim;
    g->keys = g->desc.keys;
    if (g->keys == PROX_KEYS_MORTON && p->dim == 3)
        for (int k = 0; k < 3; k++)
            if (g->ncell[k] > MORTON3_CELLS)
                g->keys = PROX_KEYS_HASH; /* documented: too many cells for 63-bit codes */
    return PROX_OK;
}

/* Cell coordinate of a wrapped coordinate along axis k, for a built point
 * (always inside 0 .. ncell-1). */
static inline int32_t cell_of(const prox_grid *g, int k, double v)
{
    double u = floor((v - g->origin[k]) * g->inv_cell[k]);
    if (u < 0)
        return 0;
    if (u > (double)(g->ncell[k] - 1))
        return (int32_t)(g->ncell[k] - 1);
    return (int32_t)u;
}

static inline cell3 cell_of_point(const prox_grid *g, double x, double y, double z)
{
    cell3 c = {{cell_of(g, 0, x), cell_of(g, 1, y), g->dim == 3 ? cell_of(g, 2, z) : 0}};
    return c;
}

static inline uint64_t key_of_cell(const prox_grid *g, cell3 c)
{
    if (g->keys == PROX_KEYS_HASH)
        return prox_teschner_hash(c.c[0], c.c[1], c.c[2], g->hash_mask);
    if (g->dim == 3)
        return prox_morton3((uint32_t)c.c[0], (uint32_t)c.c[1], (uint32_t)c.c[2]);
    return prox_morton2((uint32_t)c.c[0], (uint32_t)c.c[1]);
}

static inline bool same_cell(cell3 a, cell3 b)
{
    return a.c[0] == b.c[0] && a.c[1] == b.c[1] && a.c[2] == b.c[2];
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

prox_status prox_grid_create(const prox_grid_desc *desc, prox_grid **out)
{
    if (!out)
        return prox_fail(PROX_ERR_INVALID, "prox_grid_create: out is NULL");
    *out = NULL;
    prox_status st = prox_grid_desc_check(desc, 3);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    prox_grid *g = prox_alloc_array(&al, 1, sizeof *g);
    if (!g)
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory");
    memset(g, 0, sizeof *g);
    g->desc = *desc;
    g->allocator = al;
    g->threads = prox_threads_resolve(desc->threads);
    *out = g;
    return PROX_OK;
}

void prox_grid_destroy(prox_grid *g)
{
    if (!g)
        return;
    prox_allocator al = g->allocator;
    void *blocks[] = {g->id, g->pos, g->run_start, g->run_cell, g->table, g->stencil};
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        prox_free(&al, blocks[b]);
    prox_free(&al, g);
}

static int64_t grid_bytes(const prox_grid *g)
{
    return g->id_cap * 4 + g->pos_cap * 8 + g->run_start_cap * 4 +
           g->run_cell_cap * (int64_t)sizeof(cell3) +
           g->table_cap * 4 + (int64_t)sizeof *g;
}

static bool reserve(prox_grid *g, void *ptr, int64_t *cap, int64_t count, size_t size)
{
    return prox_reserve(&g->allocator, (void **)ptr, cap, count, size);
}

static prox_status reserve_points(prox_grid *g, int64_t n)
{
    if (reserve(g, &g->id, &g->id_cap, n, sizeof *g->id) &&
        reserve(g, &g->pos, &g->pos_cap, 3 * n, sizeof *g->pos))
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

/* Keys and identity ids in input order. */
static void compute_keys(prox_grid *g, const prox_points *p)
{
    uint64_t *keys = sort_keys(g);
    const double *period = g->desc.period;
    int64_t n = p->count;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double z = p->dim == 3 ? prox_coord(p, i, 2, period) : 0.0;
        cell3 c = cell_of_point(g, prox_coord(p, i, 0, period), prox_coord(p, i, 1, period), z);
        keys[i] = key_of_cell(g, c);
        g->id[i] = (prox_index)i;
    }
}

/* Coordinates in cell order, from the caller's view. */
static void gather_positions(prox_grid *g, const prox_points *p)
{
    int64_t n = g->n;
    const double *period = g->desc.period;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t s = 0; s < n; s++) {
        if (s + PREFETCH_AHEAD < n) /* reads follow the sort: random in the input */
            __builtin_prefetch((const char *)p->axis[0] + g->id[s + PREFETCH_AHEAD] * p->stride);
        for (int k = 0; k < 3; k++)
            g->pos[k * n + s] = k < p->dim ? prox_coord(p, g->id[s], k, period) : 0.0;
    }
}

static cell3 cell_of_sorted(const prox_grid *g, int64_t s)
{
    int64_t n = g->n;
    return cell_of_point(g, g->pos[s], g->pos[n + s], g->pos[2 * n + s]);
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
    return key_of_cell(g, g->run_cell[r]);
}

#define MAX_BLOCKS 64

/* Runs: maximal stretches of sorted points in one cell. Finds where they
 * start, in parallel over blocks of points: count the runs each block
 * starts, then write them at the block's prefix-sum position. keys: the
 * sorted Morton keys, or NULL to compare cells. */
static prox_status find_run_starts(prox_grid *g, const uint64_t *keys)
{
    int64_t n = g->n;
    int blocks = g->threads > 1 && n > 65536 ? (g->threads < MAX_BLOCKS ? g->threads : MAX_BLOCKS) : 1;
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
    if (!reserve(g, &g->run_start, &g->run_start_cap, runs + 1, sizeof *g->run_start) ||
        !reserve(g, &g->run_cell, &g->run_cell_cap, runs > 0 ? runs : 1, sizeof *g->run_cell))
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

/* Each run's exact cell (from its first point) and the longest run. */
static void describe_runs(prox_grid *g)
{
    int64_t runs = g->nruns, max_run = 0;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && runs > 65536) \
    schedule(static) reduction(max : max_run)
    for (int64_t r = 0; r < runs; r++) {
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

/* Hash keys: seed 002's cellStart, over runs: the runs of slot s are
 * [table[s], table[s+1]). */
static prox_status index_hash_runs(prox_grid *g)
{
    int64_t slots = (int64_t)g->hash_mask + 1;
    if (!reserve(g, &g->table, &g->table_cap, slots + 1, sizeof *g->table))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for %lld hash slots",
                         (long long)slots);
    g->table_len = slots + 1;
    /* table[s] = first run whose slot is >= s: run r owns the slots after
     * its predecessor's slot, up to its own (each slot written once) */
    int64_t runs = g->nruns;
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && runs > 65536) \
    schedule(static)
    for (int64_t r = 0; r <= runs; r++) {
        int64_t from = r == 0 ? 0 : (int64_t)run_key(g, r - 1) + 1;
        int64_t to = r == runs ? slots : (int64_t)run_key(g, r);
        for (int64_t slot = from; slot <= to; slot++)
            g->table[slot] = (uint32_t)r;
    }
    return PROX_OK;
}

/* After the sort (keys in sort_keys): runs, coordinates, cell table. */
static prox_status index_runs(prox_grid *g, const prox_points *p)
{
    bool exact_keys = g->keys == PROX_KEYS_MORTON;
    prox_status st = exact_keys ? find_run_starts(g, sort_keys(g)) : PROX_OK;
    if (st)
        return st;
    gather_positions(g, p); /* overwrites the keys */
    if (!exact_keys && (st = find_run_starts(g, NULL)))
        return st;
    describe_runs(g);
    return exact_keys ? index_morton_runs(g) : index_hash_runs(g);
}

static void choose_hash_table(prox_grid *g, int64_t n)
{
    int64_t slots = g->desc.table_size;
    if (slots == 0)
        slots = next_pow2(2 * n > 16 ? 2 * n : 16); /* 2-4x the points (seed 002) */
    g->hash_mask = (uint64_t)slots - 1;
}

static prox_status check_build_input(prox_grid *g, const prox_points *p)
{
    prox_status st = prox_points_check(p, "points");
    if (!st)
        st = prox_grid_desc_check(&g->desc, p->dim);
    if (!st)
        st = prox_points_check_finite(p, "points", g->threads);
    return st;
}

prox_status prox_grid_build(prox_grid *g, const prox_points *p)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "prox_grid_build: grid is NULL");
    g->built = false;
    prox_status st = check_build_input(g, p);
    if (!st)
        st = choose_geometry(g, p);
    if (st)
        return st;
    g->metric = prox_metric_of(&g->desc, p->dim);
    g->n = p->count;
    choose_hash_table(g, g->n);
    st = reserve_points(g, g->n);
    if (!st)
        st = build_stencil(g);
    if (st)
        return st;
    compute_keys(g, p);
    prox_radix_sort64(sort_keys(g), g->id, scratch_keys(g), scratch_ids(g), g->n, g->threads);
    st = index_runs(g, p);
    g->built = st == PROX_OK;
    return st;
}

/* ---- lookup -------------------------------------------------------------- */

/* The cell at `base + offset`, wrapped on periodic axes; false when it lies
 * outside the occupied range of an open axis. */
static inline bool neighbour_cell(const prox_grid *g, const int64_t base[3], cell3 off,
                                  cell3 *out)
{
    for (int k = 0; k < 3; k++) {
        int64_t c = base[k] + off.c[k];
        if (c < 0 || c >= g->ncell[k]) {
            if (!g->periodic[k])
                return false;
            c = c < 0 ? c + g->ncell[k] : c - g->ncell[k];
        }
        out->c[k] = (int32_t)c;
    }
    return true;
}

/* Runs that may hold cell c: [*first, *last); each must still be checked
 * with same_cell (hash slots mix cells). */
static inline void runs_of_cell(const prox_grid *g, cell3 c, int64_t *first, int64_t *last)
{
    uint64_t key = key_of_cell(g, c);
    if (g->keys == PROX_KEYS_HASH) {
        *first = g->table[key];
        *last = g->table[key + 1];
        return;
    }
    if (g->table_dense) {
        uint32_t e = g->table[key];
        *first = e ? e - 1 : 0;
        *last = e ? e : 0;
        return;
    }
    uint64_t mask = (uint64_t)g->table_len - 1;
    for (uint64_t h = prox_hash64(key, g->table_bits);; h = (h + 1) & mask) {
        uint32_t e = g->table[h];
        if (e == 0)
            break;
        if (same_cell(g->run_cell[e - 1], c)) {
            *first = e - 1;
            *last = e;
            return;
        }
    }
    *first = *last = 0;
}

/* Start loading the table entry of cell c: stencil lookups are independent,
 * so issuing them all before using any lets their cache misses overlap. */
static inline void prefetch_cell(const prox_grid *g, cell3 c)
{
    uint64_t key = key_of_cell(g, c);
    if (g->keys == PROX_KEYS_MORTON && !g->table_dense)
        key = prox_hash64(key, g->table_bits);
    __builtin_prefetch(&g->table[key]);
}

/* Prefetch the table entries of the stencil offsets [o0, o1) around base. */
static inline void prefetch_stencil(const prox_grid *g, const int64_t base[3], int o0, int o1)
{
    for (int o = o0; o < o1; o++) {
        cell3 c;
        if (neighbour_cell(g, base, g->stencil[o], &c))
            prefetch_cell(g, c);
    }
}

/* ---- pair kernels ------------------------------------------------------- */

typedef struct query_counters {
    int64_t candidates;
    int64_t cells_visited;
} query_counters;

/* Per-chunk scratch: the points a run meets, gathered contiguously so the
 * kernel runs one long vector loop per point instead of one per cell. */
typedef struct gathered {
    double *x, *y, *z;
    prox_index *id;
    uint32_t *hits;
    int64_t count, cap;
    const prox_allocator *allocator;
    bool failed;
} gathered;

static void gathered_free(gathered *b)
{
    void *blocks[] = {b->x, b->y, b->z, b->id, b->hits};
    for (int k = 0; k < 5; k++)
        prox_free(b->allocator, blocks[k]);
}

static bool gathered_grow(gathered *b, int64_t need);

static inline bool gathered_reserve(gathered *b, int64_t need)
{
    return need + PROX_KERNEL_SLACK <= b->cap || gathered_grow(b, need);
}

static bool gathered_grow(gathered *b, int64_t need)
{
    int64_t cap = b->cap, want = need + need / 2 + 64 + PROX_KERNEL_SLACK;
    bool ok = true;
    int64_t c;
#define GROW(field)                                                                         \
    c = cap;                                                                                \
    ok = ok && prox_grow(b->allocator, (void **)&b->field, &c, want, b->count, sizeof *b->field);
    GROW(x) GROW(y) GROW(z) GROW(id) GROW(hits)
#undef GROW
    if (!ok) {
        b->failed = true;
        return false;
    }
    b->cap = want;
    return true;
}

/* Copy len coordinates and ids; ranges are short (a cell's points), so
 * masked 8-wide moves where AVX-512 is there, a plain loop otherwise. */
static inline void copy_points(double *restrict bx, double *restrict by, double *restrict bz,
                               prox_index *restrict bid, const double *x, const double *y,
                               const double *z, const prox_index *id, int64_t len)
{
#ifdef PROX_KERNEL_AVX512
    for (int64_t k = 0; k < len; k += 8) {
        __mmask8 live = prox_v_live(len - k);
        _mm512_mask_storeu_pd(bx + k, live, _mm512_maskz_loadu_pd(live, x + k));
        _mm512_mask_storeu_pd(by + k, live, _mm512_maskz_loadu_pd(live, y + k));
        _mm512_mask_storeu_pd(bz + k, live, _mm512_maskz_loadu_pd(live, z + k));
        _mm256_mask_storeu_epi32(bid + k, live, _mm256_maskz_loadu_epi32(live, id + k));
    }
#else
    for (int64_t k = 0; k < len; k++) {
        bx[k] = x[k];
        by[k] = y[k];
        bz[k] = z[k];
        bid[k] = id[k];
    }
#endif
}

/* Append sorted points [s0, s1) of the grid. */
static inline bool gather_range(gathered *b, const prox_grid *g, int64_t s0, int64_t s1)
{
    int64_t len = s1 - s0, n = g->n, at = b->count;
    if (!gathered_reserve(b, at + len))
        return false;
    copy_points(b->x + at, b->y + at, b->z + at, b->id + at, g->pos + s0, g->pos + n + s0,
                g->pos + 2 * n + s0, g->id + s0, len);
    b->count = at + len;
    return true;
}

/* Up to this many point ranges are resolved before any is copied. */
#define GATHER_BATCH 128

/* Append every run of the stencil cells [o0, o1) around `base`; when run
 * `own` is among them, *own_at gets the position of its first point. Two
 * passes: resolve the cells to point ranges and prefetch their data, then
 * copy, so that the cache misses of different cells overlap. */
static bool gather_stencil(gathered *b, const prox_grid *g, const int64_t base[3], int o0,
                           int o1, int64_t own, int64_t *own_at, query_counters *qc)
{
    prefetch_stencil(g, base, o0, o1);
    int64_t range[GATHER_BATCH][2], n = g->n;
    int ranges = 0, own_range = -1;
    for (int o = o0; o < o1; o++) {
        cell3 c;
        if (!neighbour_cell(g, base, g->stencil[o], &c))
            continue;
        qc->cells_visited++;
        int64_t first, last;
        runs_of_cell(g, c, &first, &last);
        for (int64_t s = first; s < last; s++) {
            if (!same_cell(g->run_cell[s], c))
                continue;
            if (ranges == GATHER_BATCH) { /* flush a full batch */
                for (int q = 0; q < ranges; q++) {
                    if (q == own_range)
                        *own_at = b->count;
                    if (!gather_range(b, g, range[q][0], range[q][1]))
                        return false;
                }
                ranges = 0;
                own_range = -1;
            }
            int64_t s0 = g->run_start[s];
            __builtin_prefetch(g->pos + s0);
            __builtin_prefetch(g->pos + n + s0);
            __builtin_prefetch(g->pos + 2 * n + s0);
            __builtin_prefetch(g->id + s0);
            if (s == own)
                own_range = ranges;
            range[ranges][0] = s0;
            range[ranges++][1] = g->run_start[s + 1];
        }
    }
    for (int q = 0; q < ranges; q++) {
        if (q == own_range)
            *own_at = b->count;
        if (!gather_range(b, g, range[q][0], range[q][1]))
            return false;
    }
    return true;
}

/* Run r's own points first, then every later run of its cell (hash slots
 * can split a cell) and the runs of the forward half of the stencil. */
static bool gather_forward(gathered *b, const prox_grid *g, int64_t r, query_counters *qc)
{
    cell3 a = g->run_cell[r];
    int64_t base[3] = {a.c[0], a.c[1], a.c[2]}, unused = -1;
    b->count = 0;
    if (!gather_range(b, g, g->run_start[r], g->run_start[r + 1]))
        return false;
    if (g->keys == PROX_KEYS_HASH) {
        int64_t first, last;
        runs_of_cell(g, a, &first, &last);
        for (int64_t s = r + 1; s < last; s++)
            if (same_cell(g->run_cell[s], a) &&
                !gather_range(b, g, g->run_start[s], g->run_start[s + 1]))
                return false;
    }
    return gather_stencil(b, g, base, 0, g->stencil_forward, -1, &unused, qc);
}

/* Pairs (id of i, id of each hit), smaller index first. */
static void emit_hits(prox_emitter *e, prox_index self, const prox_index *ids,
                      const uint32_t *hits, int64_t count)
{
    if (e->kind == PROX_SINK_CALLBACK) {
        for (int64_t t = 0; t < count && !e->stop; t++) {
            prox_index j = ids[hits[t]];
            prox_emit(e, self < j ? self : j, self < j ? j : self);
        }
        return;
    }
    if (!prox_emitter_reserve(e, count))
        return;
    prox_pair *out = e->pairs + e->count;
    for (int64_t t = 0; t < count; t++) {
        prox_index j = ids[hits[t]];
        out[t] = self < j ? (prox_pair){self, j} : (prox_pair){j, self};
    }
    e->count += count;
}

/* Every pair with a first point in run r: each pair of the grid is found
 * exactly once over all runs (seed 001). */
static void pairs_of_run(const prox_grid *g, int64_t r, gathered *b, prox_emitter *e,
                         query_counters *qc)
{
    if (!gather_forward(b, g, r, qc)) {
        e->stop = e->failed = true;
        return;
    }
    prox_block block = {b->x, b->y, g->dim == 3 ? b->z : NULL};
    const prox_metric *m = &g->metric;
    int64_t own = g->run_start[r + 1] - g->run_start[r];
    for (int64_t p = 0; p < own && !e->stop; p++) {
        double q[3] = {b->x[p], b->y[p], b->z[p]};
        qc->candidates += b->count - (p + 1);
        if (e->kind == PROX_SINK_COUNT) {
            e->count += prox_kernel_count(&block, p + 1, b->count, q, m);
            continue;
        }
        int64_t hits = prox_kernel_hits(&block, p + 1, b->count, q, m, b->hits);
        emit_hits(e, b->id[p], b->id, b->hits, hits);
    }
}

static void fill_stats(const prox_grid *g, prox_stats *stats, int64_t pairs,
                       const query_counters *qc);

/* ---- rows: sorted buffers and full lists without a scatter of pairs ------
 *
 * For the buffer and list sinks each point meets its whole stencil and
 * writes its own row (all neighbours for lists, those with a larger index
 * for the buffer), sorted. Rows come out in cell order, chunk by chunk;
 * whole rows are then copied to their place in input order. Every pair is
 * tested twice, but no pair is ever scattered on its own, which costs less
 * and is identical for every thread count. */

typedef struct row_chunk {
    prox_index *entries;
    int64_t count, cap;
    int64_t points_done, points_left;
    bool sized; /* reserved from the first run's neighbours per point */
    bool failed;
} row_chunk;

/* After the chunk's first run, reserve what its rate of neighbours per
 * point predicts for the rest (plus a quarter): one allocation instead of a
 * chain of doublings and copies. */
static void size_row_chunk(const prox_grid *g, row_chunk *rc)
{
    rc->sized = true;
    double per_point = (double)rc->count / (double)rc->points_done;
    int64_t want = rc->count + (int64_t)(1.25 * per_point * (double)rc->points_left) + 64;
    if (want > rc->cap)
        prox_grow(&g->allocator, (void **)&rc->entries, &rc->cap, want, rc->count,
                  sizeof *rc->entries); /* on failure, growth on demand still works */
}

/* Every run of every stencil cell (the run's own cell included); the
 * position of run r's first point in the gathered block goes to *own_at. */
static bool gather_full(gathered *b, const prox_grid *g, int64_t r, int64_t *own_at,
                        query_counters *qc)
{
    cell3 a = g->run_cell[r];
    int64_t base[3] = {a.c[0], a.c[1], a.c[2]};
    b->count = 0;
    *own_at = -1;
    return gather_stencil(b, g, base, 0, g->stencil_full, r, own_at, qc);
}

static void sort_ids(prox_index *a, int64_t n)
{
    prox_sort_u32(a, n);
}

/* Rows of the points of run r, appended to the chunk; row lengths go to
 * row_len[sorted position]. greater_only: keep neighbours j > i. */
static void rows_of_run(const prox_grid *g, int64_t r, gathered *b, row_chunk *rc,
                        uint32_t *row_len, bool greater_only, query_counters *qc)
{
    int64_t own_at;
    if (!gather_full(b, g, r, &own_at, qc)) {
        rc->failed = true;
        return;
    }
    prox_block block = {b->x, b->y, g->dim == 3 ? b->z : NULL};
    int64_t own = g->run_start[r + 1] - g->run_start[r];
    for (int64_t p = 0; p < own; p++) {
        int64_t u = own_at + p;
        double q[3] = {b->x[u], b->y[u], b->z[u]};
        if (rc->count + b->count > rc->cap &&
            !prox_grow(&g->allocator, (void **)&rc->entries, &rc->cap, rc->count + b->count,
                       rc->count, sizeof *rc->entries)) {
            rc->failed = true;
            return;
        }
        qc->candidates += b->count - 1;
        int64_t hits = prox_kernel_hits(&block, 0, u, q, &g->metric, b->hits);
        hits += prox_kernel_hits(&block, u + 1, b->count, q, &g->metric, b->hits + hits);
        prox_index self = b->id[u], *out = rc->entries + rc->count;
        int64_t kept = 0;
        for (int64_t t = 0; t < hits; t++) {
            prox_index j = b->id[b->hits[t]];
            out[kept] = j;
            kept += !greater_only || j > self;
        }
        sort_ids(out, kept);
        rc->count += kept;
        row_len[g->run_start[r] + p] = (uint32_t)kept;
    }
    rc->points_done += own;
    rc->points_left -= own;
    if (!rc->sized && rc->points_done >= 32)
        size_row_chunk(g, rc);
}

/* offsets[id + 1] = row length of point id, then prefix sums. */
static void offsets_by_id(const prox_grid *g, const uint32_t *row_len, int64_t *offsets)
{
    offsets[0] = 0;
    for (int64_t s = 0; s < g->n; s++)
        offsets[g->id[s] + 1] = row_len[s];
    for (int64_t i = 0; i < g->n; i++)
        offsets[i + 1] += offsets[i];
}

/* Copy chunk k's rows (sorted positions [s0, s1)) to their final place. */
static void place_rows(const prox_grid *g, const row_chunk *rc, int64_t s0, int64_t s1,
                       const uint32_t *row_len, const int64_t *offsets, prox_sink sink)
{
    const prox_index *from = rc->entries;
    for (int64_t s = s0; s < s1; s++) {
        if (s + PREFETCH_AHEAD < s1)
            __builtin_prefetch(&offsets[g->id[s + PREFETCH_AHEAD]]);
        prox_index self = g->id[s];
        int64_t len = row_len[s], at = offsets[self];
        if (sink.kind == PROX_SINK_LISTS) {
            memcpy(sink.lists->indices + at, from, (size_t)len * sizeof *from);
        } else {
            prox_pair *to = sink.buffer->pairs + at;
            for (int64_t t = 0; t < len; t++)
                to[t] = (prox_pair){self, from[t]};
        }
        from += len;
    }
}

static prox_status reserve_rows_output(prox_grid *g, prox_sink sink, int64_t total,
                                       int64_t **offsets)
{
    if (sink.kind == PROX_SINK_LISTS) {
        prox_lists *l = sink.lists;
        l->rows = 0;
        if (!prox_reserve(&l->allocator, (void **)&l->indices, &l->indices_capacity, total,
                          sizeof *l->indices) ||
            !prox_reserve(&l->allocator, (void **)&l->offsets, &l->offsets_capacity, g->n + 1,
                          sizeof *l->offsets))
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for lists of %lld entries",
                             (long long)total);
        *offsets = l->offsets;
        return PROX_OK;
    }
    sink.buffer->count = 0;
    prox_status st = prox_pair_buffer_reserve(sink.buffer, total);
    if (st)
        return st;
    *offsets = prox_alloc_array(&g->allocator, g->n + 1, sizeof **offsets);
    return *offsets ? PROX_OK : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for row offsets");
}

static prox_status grid_rows(prox_grid *g, prox_sink sink, prox_stats *stats)
{
    int count = prox_chunk_count(sink, g->threads, g->n);
    row_chunk *rows = prox_alloc_array(&g->allocator, count, sizeof *rows);
    uint32_t *row_len = prox_alloc_array(&g->allocator, g->n, sizeof *row_len);
    int64_t candidates = 0, cells_visited = 0, runs = g->nruns;
    bool lists = sink.kind == PROX_SINK_LISTS, failed = !rows || !row_len;
    if (rows)
        memset(rows, 0, (size_t)count * sizeof *rows);
    if (!failed) {
#pragma omp parallel for num_threads(g->threads) if (count > 1) schedule(dynamic, 1) \
    reduction(+ : candidates, cells_visited)
        for (int k = 0; k < count; k++) {
            query_counters qc = {0, 0};
            gathered scratch = {.allocator = &g->allocator};
            rows[k].points_left =
                g->run_start[runs * (k + 1) / count] - g->run_start[runs * k / count];
            for (int64_t r = runs * k / count; r < runs * (k + 1) / count && !rows[k].failed; r++)
                rows_of_run(g, r, &scratch, &rows[k], row_len, !lists, &qc);
            gathered_free(&scratch);
            candidates += qc.candidates;
            cells_visited += qc.cells_visited;
        }
    }
    int64_t total = 0;
    for (int k = 0; rows && k < count; k++) {
        failed |= rows[k].failed;
        total += rows[k].count;
    }
    int64_t *offsets = NULL;
    prox_status st = failed ? prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for rows")
                            : reserve_rows_output(g, sink, total, &offsets);
    if (!st) {
        offsets_by_id(g, row_len, offsets);
#pragma omp parallel for num_threads(g->threads) if (count > 1) schedule(static)
        for (int k = 0; k < count; k++)
            place_rows(g, &rows[k], g->run_start[runs * k / count],
                       g->run_start[runs * (k + 1) / count], row_len, offsets, sink);
        if (lists)
            sink.lists->rows = g->n;
        else
            sink.buffer->count = total;
    }
    if (!lists)
        prox_free(&g->allocator, offsets);
    for (int k = 0; rows && k < count; k++)
        prox_free(&g->allocator, rows[k].entries);
    prox_free(&g->allocator, rows);
    prox_free(&g->allocator, row_len);
    query_counters qc = {candidates, cells_visited};
    fill_stats(g, stats, lists ? total / 2 : total, &qc);
    return st;
}

static void fill_stats(const prox_grid *g, prox_stats *stats, int64_t pairs,
                       const query_counters *qc)
{
    if (!stats)
        return;
    *stats = (prox_stats){0};
    stats->pairs = pairs;
    stats->candidates = qc->candidates;
    stats->cells_visited = qc->cells_visited;
    stats->cells = g->nruns;
    stats->bytes = grid_bytes(g);
    stats->keys = g->keys;
}

static prox_status check_query_ready(const prox_grid *g, prox_sink sink)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "grid is NULL");
    if (!g->built)
        return prox_fail(PROX_ERR_INVALID, "the grid is not built: call prox_grid_build first");
    return prox_sink_check(sink);
}

prox_status prox_grid_pairs(prox_grid *g, prox_sink sink, prox_stats *stats)
{
    prox_status st = check_query_ready(g, sink);
    if (st)
        return st;
    if (sink.kind == PROX_SINK_BUFFER || sink.kind == PROX_SINK_LISTS)
        return grid_rows(g, sink, stats);
    prox_chunks chunks = {0};
    st = prox_chunks_init(&chunks, prox_chunk_count(sink, g->threads, g->n), sink,
                          &g->allocator);
    if (st)
        return st;
    int64_t candidates = 0, cells_visited = 0;
    int64_t runs = g->nruns;
#pragma omp parallel for num_threads(g->threads) if (chunks.count > 1) schedule(dynamic, 1) \
    reduction(+ : candidates, cells_visited)
    for (int k = 0; k < chunks.count; k++) {
        query_counters qc = {0, 0};
        prox_emitter *e = &chunks.emitter[k];
        gathered scratch = {.allocator = &g->allocator};
        int64_t r1 = runs * (k + 1) / chunks.count;
        for (int64_t r = runs * k / chunks.count; r < r1 && !e->stop; r++)
            pairs_of_run(g, r, &scratch, e, &qc);
        gathered_free(&scratch);
        candidates += qc.candidates;
        cells_visited += qc.cells_visited;
    }
    query_counters total = {candidates, cells_visited};
    int64_t pairs = 0;
    st = prox_chunks_deliver(&chunks, sink, g->n, true, &pairs);
    fill_stats(g, stats, pairs, &total);
    prox_chunks_free(&chunks);
    return st;
}

/* ---- ball queries of a second set ---------------------------------------- */

/* Cell coordinates of a query point, which may lie outside the built range
 * on open axes: false when no stencil cell can be occupied. */
static bool query_base_cell(const prox_grid *g, const double q[3], int64_t base[3])
{
    for (int k = 0; k < 3; k++) {
        if (k >= g->dim) {
            base[k] = 0;
            continue;
        }
        double u = floor((q[k] - g->origin[k]) * g->inv_cell[k]);
        if (g->periodic[k]) {
            base[k] = u < 0 ? 0 : u > (double)(g->ncell[k] - 1) ? g->ncell[k] - 1 : (int64_t)u;
            continue;
        }
        if (u < (double)-g->reach[k] || u > (double)(g->ncell[k] - 1 + g->reach[k]))
            return false;
        base[k] = (int64_t)u;
    }
    return true;
}

static void query_point(const prox_grid *g, prox_index q, const double qp[3], uint32_t *hits,
                        prox_emitter *e, query_counters *qc)
{
    int64_t base[3];
    if (!query_base_cell(g, qp, base))
        return;
    const int64_t n = g->n;
    prox_block block = {g->pos, g->pos + n, g->dim == 3 ? g->pos + 2 * n : NULL};
    const prox_metric *m = &g->metric;
    for (int o = 0; o < g->stencil_full && !e->stop; o++) {
        cell3 b;
        if (!neighbour_cell(g, base, g->stencil[o], &b))
            continue;
        qc->cells_visited++;
        int64_t first, last;
        runs_of_cell(g, b, &first, &last);
        for (int64_t s = first; s < last && !e->stop; s++) {
            if (!same_cell(g->run_cell[s], b))
                continue;
            int64_t j0 = g->run_start[s], j1 = g->run_start[s + 1];
            qc->candidates += j1 - j0;
            if (e->kind == PROX_SINK_COUNT) {
                e->count += prox_kernel_count(&block, j0, j1, qp, m);
                continue;
            }
            int64_t count = prox_kernel_hits(&block, j0, j1, qp, m, hits);
            for (int64_t t = 0; t < count && !e->stop; t++)
                prox_emit(e, q, g->id[hits[t]]);
        }
    }
}

static prox_status check_queries(const prox_grid *g, const prox_points *queries)
{
    prox_status st = prox_points_check(queries, "queries");
    if (!st && queries->dim != g->dim)
        st = prox_fail(PROX_ERR_INVALID, "queries are %dD but the grid holds %dD points",
                       queries->dim, g->dim);
    if (!st)
        st = prox_points_check_finite(queries, "queries", g->threads);
    return st;
}

prox_status prox_grid_query(prox_grid *g, const prox_points *queries, prox_sink sink,
                            prox_stats *stats)
{
    prox_status st = check_query_ready(g, sink);
    if (!st)
        st = check_queries(g, queries);
    if (st)
        return st;
    prox_chunks chunks = {0};
    int64_t nq = queries->count;
    st = prox_chunks_init(&chunks, prox_chunk_count(sink, g->threads, nq), sink, &g->allocator);
    if (st)
        return st;
    int64_t candidates = 0, cells_visited = 0;
#pragma omp parallel for num_threads(g->threads) if (chunks.count > 1) schedule(dynamic, 1) \
    reduction(+ : candidates, cells_visited)
    for (int k = 0; k < chunks.count; k++) {
        query_counters qc = {0, 0};
        prox_emitter *e = &chunks.emitter[k];
        gathered scratch = {.allocator = &g->allocator};
        if (!gathered_reserve(&scratch, g->max_run))
            e->stop = e->failed = true;
        int64_t q1 = nq * (k + 1) / chunks.count;
        for (int64_t q = nq * k / chunks.count; q < q1 && !e->stop; q++) {
            double qp[3] = {0, 0, 0};
            for (int a = 0; a < g->dim; a++)
                qp[a] = prox_coord(queries, q, a, g->desc.period);
            query_point(g, (prox_index)q, qp, scratch.hits, e, &qc);
        }
        gathered_free(&scratch);
        candidates += qc.candidates;
        cells_visited += qc.cells_visited;
    }
    query_counters total = {candidates, cells_visited};
    int64_t pairs = 0;
    st = prox_chunks_deliver(&chunks, sink, nq, false, &pairs);
    fill_stats(g, stats, pairs, &total);
    prox_chunks_free(&chunks);
    return st;
}

/* ---- moving points (seed 004: relocate only what changed cell) ----------- */

/* New cell of sorted point s from the caller's view; false when it falls
 * outside the built cell range of an open axis. */
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
        if (g->periodic[k]) {
            u = u < 0 ? 0 : u > (double)(g->ncell[k] - 1) ? (double)(g->ncell[k] - 1) : u;
        } else if (u < 0 || u > (double)(g->ncell[k] - 1)) {
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
 * and [20n, 24n) for ids. */
static prox_index *update_sort_ids(const prox_grid *g)
{
    return scratch_ids(g) + g->n;
}

/* Split sorted points into those that stayed (kept in order: ids at the
 * front of id[], keys in sort_keys) and those that moved (new keys and ids
 * in the scratch). Returns the number moved, or -1 when some point left the
 * cell range. */
static int64_t partition_moved(prox_grid *g, const prox_points *p)
{
    uint64_t *stay_key = sort_keys(g), *moved_key = scratch_keys(g);
    prox_index *moved_id = scratch_ids(g);
    int64_t stay = 0, moved = 0;
    for (int64_t r = 0; r < g->nruns; r++) {
        cell3 old = g->run_cell[r];
        uint64_t old_key = run_key(g, r);
        for (int64_t s = g->run_start[r]; s < g->run_start[r + 1]; s++) {
            if (s + PREFETCH_AHEAD < g->n) /* sorted order: random in the input */
                __builtin_prefetch((const char *)p->axis[0] + g->id[s + PREFETCH_AHEAD] * p->stride);
            cell3 c;
            if (!moved_cell(g, p, s, &c))
                return -1;
            if (same_cell(c, old)) {
                stay_key[stay] = old_key;
                g->id[stay++] = g->id[s];
            } else {
                moved_key[moved] = key_of_cell(g, c);
                moved_id[moved++] = g->id[s];
            }
        }
    }
    return moved;
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
        *stats = (prox_stats){0};
        stats->rebuilt = true;
        stats->relocated = p->count;
        stats->cells = g->nruns;
        stats->bytes = grid_bytes(g);
        stats->keys = g->keys;
    }
    return st;
}

prox_status prox_grid_update(prox_grid *g, const prox_points *p, prox_stats *stats)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "prox_grid_update: grid is NULL");
    prox_status st = check_build_input(g, p);
    if (st)
        return st;
    if (!g->built || p->count != g->n || p->dim != g->dim)
        return rebuild(g, p, stats);
    int64_t moved = partition_moved(g, p);
    if (moved < 0 || (double)moved > UPDATE_REBUILD_FRACTION * (double)g->n)
        return rebuild(g, p, stats);
    /* the moved points sort among themselves */
    int64_t stay = g->n - moved;
    prox_radix_sort64(scratch_keys(g), scratch_ids(g), sort_keys(g) + stay, update_sort_ids(g), moved,
                      g->threads);
    merge_moved(g, moved);
    g->built = false;
    st = index_runs(g, p);
    g->built = st == PROX_OK;
    if (stats) {
        *stats = (prox_stats){0};
        stats->relocated = moved;
        stats->cells = g->nruns;
        stats->bytes = grid_bytes(g);
        stats->keys = g->keys;
    }
    return st;
}
