/* grid_private.h: the built uniform grid (what grid.c's build and update
 * make: geometry, keys, cell table, sorted coordinates, runs) and the
 * traversals' shared declarations. A traversal (grid_search.c,
 * grid_strips.c, grid_fill.c, grid_sweep.c) reads a const grid and carries
 * out a plan (grid_plan.h) through the chunk driver (drive.h), into the
 * query's workspace (grid_work.h). */
#ifndef PROX_GRID_PRIVATE_H
#define PROX_GRID_PRIVATE_H

#include <assert.h>
#include <math.h>
#include <stdint.h>

#include "core/exact.h"
#include "core/hash.h"
#include "simd/kernel_fixed.h"
#include "core/morton.h"
#include "core/pair_sink.h"
#include "points/drive.h"
#include "points/grid_plan.h"
#include "points/grid_work.h"
#include "prox/grid.h"

/* How many iterations ahead random reads are prefetched. */
#define PREFETCH_AHEAD 16

typedef struct cell3 {
    int32_t c[3];
} cell3;

/* Words readable past the grid's per-point arrays: a whole vector at the
 * widest level (see prox_grid.id). */
#define GRID_READ_SLACK PROX_KERNEL_SLACK

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
    /* no axis is periodic, or every value of the points being built lies
     * in [0, period) on the periodic ones: the build reads them unwrapped
     * (grid.c, packed_unwrapped_f64). An update, whose points may have
     * left, clears it. */
    bool inside_periods;
    uint64_t hash_mask; /* PROX_KEYS_HASH: table slots - 1 */

    /* points in cell order. id[] and, with fixed point on, fixed[] (each
     * axis) keep GRID_READ_SLACK readable words past their last point, so
     * that a strip's gather loads whole vectors (pv_load): the lanes past
     * the strip's end are read, then overwritten or left in the block's
     * own slack. Past the last axis and past id[n) the words are zero,
     * written by each build (grid.c, clear_read_slack). */
    int64_t n;
    prox_index *id;
    double *pos; /* axis-major: x[0..n), y[0..n), z[0..n); before the
                    coordinates are gathered it holds the sort keys */
    int64_t id_cap, pos_cap;

    /* fixed-point coordinates (PROX_COORDS_FIXED in use, linear keys):
     * `fixed` takes pos's place (its storage); along axis k a point is
     * cell << fixed_shift[k] plus its offset in the cell in units of
     * 2^-fixed_shift[k] cells. `source` is the caller's view, borrowed:
     * candidates the fixed-point distance leaves open are decided in
     * double from it (kernel_fixed.h). */
    bool fixed_on;
    /* the keys' pass also converts the points to fixed point, an array
     * per axis above the keys, gathered by axis after the sort (grid.c,
     * converts_with_keys); pos then holds 4 more bytes a point */
    bool fixed_with_keys;
    int32_t *fixed;
    int fixed_shift[3];
    prox_fixed_metric fixed_metric;
    prox_points source;
    /* the recheck's first, exact-integer step (grid.c,
     * choose_fixed_recheck): fixed-point squared distances up to fixed_in2
     * are within, those above fixed_out2 beyond */
    bool fixed_recheck;
    uint64_t fixed_in2, fixed_out2;

    /* runs of points in one cell: points [run_start[r], run_start[r+1]);
     * run_cell only for Morton and hash keys (run_cell_of) */
    int64_t nruns, max_run; /* runs, and the most points in one */
    uint32_t *run_start;
    cell3 *run_cell;
    int64_t run_start_cap, run_cell_cap;

    /* lookup: Morton: open addressing, entry = run + 1 (0 = empty);
     * hash: first run of each slot, table_len = slots + 1; linear: first
     * point of each cell (a linear key's slot is its cell), cells + 1 */
    uint32_t *table;
    int64_t table_len, table_cap;
    int table_bits;
    bool table_dense; /* Morton: table[key] directly */

    /* linear keys over a sparse box (more than 1 cell per point): instead
     * of a table entry per cell, one bit per cell (occupied) and, per
     * 64-cell word, the occupied cells before it (rank): a cell's first
     * point is run_start[rank of the cell], 3/16 of a byte per cell */
    bool sparse;
    uint64_t *occupied; /* words + 1 (the last one empty) */
    uint32_t *rank;     /* words + 1 */
    int64_t occupied_cap, rank_cap;

    /* stencil offsets: the forward half (self pairs) first, then the rest;
     * the full set serves ball queries */
    cell3 *stencil;
    int stencil_forward, stencil_full;

    /* Not part of the built grid: what its queries keep for the next one
     * (grid_work.h). The handle carries it for the caller, who reuses it
     * query after query; build and update never touch it, and a traversal
     * gets it beside a const grid. */
    grid_work work;
    /* grid_fill.c's limits: the most downs a point takes (< 2^16) and the
     * most entries an output holds (< 2^31); tests lower them */
    uint32_t fill_max_downs;
    int64_t fill_max_entries;
    /* the densities where the grid changes mechanism (0: its default;
     * prox_grid_set_density_limits) */
    double table_cells_limit, sweep_limit, half_pairs_limit;
    /* prox_fresh_bytes() when the last query returned (or at creation):
     * a query's stats.fresh_bytes counts from there */
    int64_t fresh_mark;
};

/* For benchmarks and tests: the densities where the grid changes
 * mechanism, 0 keeping a default. table_cells_per_point: the most cells a
 * point for a table of every cell (linear keys; grid.c), read by the next
 * build; sweep_points_per_run: the most points a run for the point sweep
 * (grid_sweep.c); half_pairs_points_per_run: the most for lists from the
 * half stencil's pairs (grid_search.c). */
void prox_grid_set_density_limits(prox_grid *g, double table_cells_per_point,
                                  double sweep_points_per_run, double half_pairs_points_per_run);

/* Releases what the grid keeps between queries. */
void prox_grid_free_kept(prox_grid *g);

/* Memory the grid holds, in bytes. */
int64_t prox_grid_bytes(const prox_grid *g);
/* Memory it keeps for the next query (stats.kept_bytes). */
int64_t prox_grid_kept_bytes(const prox_grid *g);

/* *stats zeroed, then what every grid call reports: the grid's cells,
 * memory, keys and coordinates. */
static inline void prox_grid_base_stats(const prox_grid *g, prox_stats *stats)
{
    *stats = (prox_stats){0};
    stats->cells = g->nruns;
    stats->bytes = prox_grid_bytes(g);
    stats->kept_bytes = prox_grid_kept_bytes(g);
    stats->keys = g->keys;
    stats->coords = g->fixed_on ? PROX_COORDS_FIXED : PROX_COORDS_DOUBLE;
}

/* A search's stats (NULL: none wanted): what every grid call reports,
 * then the search's own (drive.h), `method` from prox_grid_method. */
static inline void prox_grid_search_stats(const prox_grid *g, prox_stats *stats, int64_t pairs,
                                          const points_chunk *total, const char *method)
{
    if (!stats)
        return;
    prox_grid_base_stats(g, stats);
    points_drive_report(stats, pairs, total, method);
}

/* A traversal's own record that it ran (grid_work.ran); chunks of one query
 * may count at once on several threads. */
static inline void prox_grid_ran(grid_work *w, grid_traversal t)
{
    __atomic_fetch_add(&w->ran[t], 1, __ATOMIC_RELAXED);
}

/* A grid traversal through the chunk driver, its stats as above. */
static inline prox_status prox_grid_drive(const prox_grid *g, const points_drive *d,
                                          prox_sink sink, prox_stats *stats)
{
    prox_stats search = {0};
    prox_status st = points_drive_run(d, sink, &search);
    if (stats) {
        prox_grid_base_stats(g, stats);
        stats->pairs = search.pairs;
        stats->candidates = search.candidates;
        stats->cells_visited = search.cells_visited;
        stats->rechecked = search.rechecked;
        stats->method = search.method;
    }
    return st;
}

/* ---- strips (grid_strips.c): linear keys only ---- */

/* Rows of the stencil: y and z offsets and how far along x they reach. */
#define PROX_STRIP_MAX_ROWS ((2 * 8 + 1) * (2 * 8 + 1)) /* cell_divisions <= 8 */
/* Ranges of one cell's stencil: a row wrapping a periodic x axis splits in
 * two; one more for the cell's own points. */
#define PROX_STRIP_MAX_RANGES (2 * PROX_STRIP_MAX_ROWS + 1)

typedef struct prox_strip_rows {
    int count;
    int dy[PROX_STRIP_MAX_ROWS], dz[PROX_STRIP_MAX_ROWS], reach[PROX_STRIP_MAX_ROWS];
    int own_reach; /* forward half: the own row's cells x+1 .. x+own_reach */
} prox_strip_rows;

typedef struct prox_range {
    int64_t begin, end; /* sorted points [begin, end) */
} prox_range;

/* The stencil's rows: all of them, or the forward half's (the own row
 * apart, in own_reach). */
void prox_grid_strip_rows(const prox_grid *g, bool forward_half, prox_strip_rows *rows);
/* The non-empty ranges of sorted points the rows cover around cell a (own
 * row excluded for the forward half); adds the cells covered to *cells. */
int prox_grid_strip_ranges(const prox_grid *g, const prox_strip_rows *rows, cell3 a,
                           prox_range *out, int64_t *cells);
/* Points in ranges r[0 .. count). */
static inline int64_t prox_ranges_length(const prox_range *r, int count)
{
    int64_t total = 0;
    for (int k = 0; k < count; k++)
        total += r[k].end - r[k].begin;
    return total;
}
/* The ranges of the full stencil around `base`, a cell that may lie up to
 * the reach outside an open axis (ball queries). */
int prox_grid_strip_ranges_around(const prox_grid *g, const prox_strip_rows *rows,
                                  const int64_t base[3], prox_range *out, int64_t *cells);
/* Self pairs into a count, callback or unsorted sink, each pair once
 * (GRID_STRIPS, GRID_SWEEP). */
prox_status prox_grid_strip_pairs(const prox_grid *g, grid_work *w, prox_sink sink,
                                  prox_stats *stats, grid_plan plan);
/* The forward half of run r's stencil (the hash-multimap article: each pair once) as
 * ranges: rg[0] the run's own cell (a point meets its later points only:
 * from s + 1 on), then its row's forward cells and the forward rows.
 * Adds the cells looked at to *cells; returns how many ranges. */
int prox_grid_half_ranges(const prox_grid *g, const prox_strip_rows *rows, int64_t r,
                          prox_range *rg, int64_t *cells);
typedef struct grid_recheck grid_recheck;
/* Self pairs whose first point (in cell order) is sorted point p0 .. p1-1,
 * from the forward half stencil (rows) of each, into e, in the order
 * grid_strips.c finds them; adds candidates and cells to *counters. */
void prox_grid_sweep_pairs(const prox_grid *g, const prox_strip_rows *rows, int64_t p0,
                           int64_t p1, grid_recheck *rc, prox_emitter *e, prox_stats *counters);

/* Copy the candidates of ranges rg[0 .. count) into *b, in order (room for
 * PROX_KERNEL_SLACK more), their sorted positions too with `positions`;
 * false when out of memory. */
bool prox_fixed_gather_ranges(const prox_grid *g, const prox_range *rg, int count, bool positions,
                              prox_fixed_gather *b);
static inline prox_fixed_block prox_fixed_gather_block(const prox_grid *g,
                                                       const prox_fixed_gather *b)
{
    return (prox_fixed_block){b->x, b->y, g->dim == 3 ? b->z : NULL};
}

/* The sorted buffer or full lists of a grid with linear keys, counted, then
 * filled in place (grid_fill.c). *done false: past its limits (2^31
 * entries, or a point taking 65,535 downs); nothing was written. */
prox_status prox_grid_fill_rows(const prox_grid *g, grid_work *w, prox_sink sink,
                                prox_stats *stats, grid_plan plan, bool *done);
/* For tests: lower grid_fill.c's limits (0 keeps one) to reach the staged
 * fallback with small inputs. */
void prox_grid_set_fill_limits(prox_grid *g, uint32_t max_downs, int64_t max_entries);
/* The same candidates split for grid_fill.c: the ids of those above s's
 * own (every one with `both`) to ups[], the positions of the others
 * (every one with `both`) to downs[]; their counts to *nu and *nd. With a
 * block, the ranges gathered with their positions are read instead.
 * hits[] is scratch; each array has room for every candidate plus
 * PROX_KERNEL_SLACK. */
void prox_grid_point_split(const prox_grid *g, int64_t s, const prox_range *rg, int count,
                           const prox_fixed_gather *block, grid_recheck *rc, bool both,
                           uint32_t *hits, uint32_t *ups, uint32_t *downs, int64_t *nu,
                           int64_t *nd);

/* Cell coordinate of a wrapped coordinate along axis k, for a built point
 * (always inside 0 .. ncell-1, even for a NaN or infinite v that a racing
 * caller wrote after the box pass: NaN goes to 0): clamped in selects, not
 * branches, so that loops over points vectorise (grid.c, packed_linear_keys). */
static inline int32_t cell_of(const prox_grid *g, int k, double v)
{
    double u = (v - g->origin[k]) * g->inv_cell[k], last = (double)(g->ncell[k] - 1);
    u = u >= 0.0 ? u : 0.0; /* floor commutes with a clamp to integers, and */
    u = u > last ? last : u; /* truncation is floor from 0 up: no floor() */
    return (int32_t)u;       /* call, which SSE2 lacks as an instruction */
}

static inline cell3 cell_of_point(const prox_grid *g, double x, double y, double z)
{
    cell3 c = {{cell_of(g, 0, x), cell_of(g, 1, y), g->dim == 3 ? cell_of(g, 2, z) : 0}};
    return c;
}

/* Runs before linear key c (occupied cells below c), for a sparse table. */
static inline uint64_t sparse_rank(const prox_grid *g, uint64_t c)
{
    uint64_t w = c >> 6, below = (1ull << (c & 63)) - 1;
    return g->rank[w] + (uint64_t)prox_popcount64(g->occupied[w] & below);
}

/* The cell of point i of fixed-point axes laid `stride` words apart from
 * f (axis k at f[k * stride + i]; z read in 3D only): the coordinates'
 * high bits, where fixed_coord puts the cell (grid.c). */
static inline cell3 cell_of_fixed(const prox_grid *g, int dim, const int32_t *f, int64_t stride,
                                  int64_t i)
{
    cell3 c = {{f[i] >> g->fixed_shift[0], f[stride + i] >> g->fixed_shift[1],
                dim == 3 ? f[2 * stride + i] >> g->fixed_shift[2] : 0}};
    return c;
}

/* The cell of run r: kept per run for Morton and hash keys; with linear
 * keys computed from the run's first point instead (12 bytes a run less).
 * During an update this reads the old coordinates of the run's first
 * point, which the update's scratch has not reached yet (grid.c). */
static inline cell3 run_cell_of(const prox_grid *g, int64_t r)
{
    if (g->fixed_on)
        return cell_of_fixed(g, g->dim, g->fixed, g->n, g->run_start[r]);
    if (g->keys == PROX_KEYS_LINEAR) {
        int64_t s = g->run_start[r], n = g->n;
        return cell_of_point(g, g->pos[s], g->pos[n + s], g->dim == 3 ? g->pos[2 * n + s] : 0.0);
    }
    return g->run_cell[r];
}

/* Row-major over every cell, x fastest. */
static inline uint64_t linear_key_of(const prox_grid *g, cell3 c)
{
    return ((uint64_t)c.c[2] * (uint64_t)g->ncell[1] + (uint64_t)c.c[1]) * (uint64_t)g->ncell[0] +
           (uint64_t)c.c[0];
}

static inline uint64_t key_of_cell(const prox_grid *g, cell3 c)
{
    if (g->keys == PROX_KEYS_HASH)
        return prox_teschner_hash(c.c[0], c.c[1], c.c[2], g->hash_mask);
    if (g->keys == PROX_KEYS_LINEAR)
        return linear_key_of(g, c);
    if (g->dim == 3)
        return prox_morton3((uint32_t)c.c[0], (uint32_t)c.c[1], (uint32_t)c.c[2]);
    return prox_morton2((uint32_t)c.c[0], (uint32_t)c.c[1]);
}

static inline bool same_cell(cell3 a, cell3 b)
{
    return a.c[0] == b.c[0] && a.c[1] == b.c[1] && a.c[2] == b.c[2];
}

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
 * with same_cell (hash slots mix cells). Not for linear keys, whose table
 * holds points: their searches go by strips (grid_strips.c). */
static inline void runs_of_cell(const prox_grid *g, cell3 c, int64_t *first, int64_t *last)
{
    assert(g->keys != PROX_KEYS_LINEAR);
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

/* ---- the grid's own points as kernel blocks (kernel.h, kernel_fixed.h) ---- */

static inline prox_block grid_block(const prox_grid *g)
{
    int64_t n = g->n;
    return (prox_block){g->pos, g->pos + n, g->dim == 3 ? g->pos + 2 * n : NULL};
}

static inline void point_of(const prox_grid *g, int64_t s, double q[3])
{
    int64_t n = g->n;
    q[0] = g->pos[s];
    q[1] = g->pos[n + s];
    q[2] = g->dim == 3 ? g->pos[2 * n + s] : 0.0;
}

static inline prox_fixed_block fixed_block(const prox_grid *g)
{
    int64_t n = g->n;
    return (prox_fixed_block){g->fixed, g->fixed + n, g->dim == 3 ? g->fixed + 2 * n : NULL};
}

static inline void fixed_point_of(const prox_grid *g, int64_t s, int32_t q[3])
{
    int64_t n = g->n;
    q[0] = g->fixed[s];
    q[1] = g->fixed[n + s];
    q[2] = g->dim == 3 ? g->fixed[2 * n + s] : 0;
}

/* The exact decision for one query point (kernel_fixed.h): the query is
 * point `query` of `queries` (the grid's own source for self pairs), the
 * candidate a sorted position of the grid. */
struct grid_recheck {
    prox_recheck base;
    const prox_grid *g;
    const prox_points *queries;
    int64_t query;
    int64_t query_pos;     /* a self pair's query: its sorted position; else -1 */
    const int32_t *query_fixed; /* a ball query's fixed-point coordinates, or NULL */
    const prox_index *ids; /* candidates' ids by their index (a gathered block's), or
                              NULL: the index is a sorted position */
    const prox_range *ranges; /* with ids: the ranges the block was gathered from (the
                                 ids are then read through them), or NULL */
    int nranges;
};

void prox_grid_recheck_init(grid_recheck *rc, const prox_grid *g, const prox_points *queries);

/* The recheck pointed at sorted point s as the query of self pairs. */
static inline void prox_grid_recheck_self(grid_recheck *rc, const prox_grid *g, int64_t s)
{
    rc->query = g->id[s];
    rc->query_pos = s;
    rc->query_fixed = NULL;
}

/* rel16 (kernel_fixed.h): whether the grid's rows may use them, and their
 * bounds (grid.c). */
bool prox_grid_rel16_metric(const prox_grid *g, prox_rel16_metric *m);

/* A fixed-point coordinate along axis k as a rel16 one, for a run in cell c
 * of that axis: floor((X - centre of c) / 2^drop), the floor written out
 * so that it holds for negative values on any compiler. */
static inline int32_t prox_rel16_centre(const prox_grid *g, int k, int64_t c)
{
    int shift = g->fixed_shift[k];
    return (int32_t)((c << shift) + ((int64_t)1 << (shift - 1)));
}

static inline int32_t prox_rel16_coord(const prox_grid *g, int k, int64_t c, int32_t fixed,
                                       int drop)
{
    int32_t d = fixed - prox_rel16_centre(g, k, c);
    return d >= 0 ? d >> drop : ~(~d >> drop);
}

bool prox_rel16_gather_ranges(const prox_grid *g, const prox_rel16_metric *m, cell3 a,
                              const prox_range *rg, int count, bool ids, prox_rel16_gather *b);

/* Sorted point s's rel16 coordinates around cell a, packed as a block's. */
static inline void prox_rel16_point(const prox_grid *g, const prox_rel16_metric *m, cell3 a,
                                    int64_t s, uint32_t *xy, uint32_t *z0)
{
    int64_t n = g->n;
    *xy = prox_rel16_pack(prox_rel16_coord(g, 0, a.c[0], g->fixed[s], m->drop),
                          prox_rel16_coord(g, 1, a.c[1], g->fixed[n + s], m->drop));
    *z0 = g->dim == 3
              ? prox_rel16_pack(prox_rel16_coord(g, 2, a.c[2], g->fixed[2 * n + s], m->drop), 0)
              : 0;
}

/* Sorted point s as the query over gathered block b: its fixed-point
 * coordinates to q, the recheck pointed at it and at the block's ids (the
 * caller sets rc->ids back to NULL after); returns the block's arrays. */
static inline prox_fixed_block prox_gathered_query(const prox_grid *g, int64_t s,
                                                   const prox_fixed_gather *b, grid_recheck *rc,
                                                   int32_t q[3])
{
    fixed_point_of(g, s, q);
    prox_grid_recheck_self(rc, g, s);
    rc->ids = b->id;
    rc->ranges = b->from;
    rc->nranges = b->from_count;
    return prox_fixed_gather_block(g, b);
}

/* Sorted point s as the query over rel16 block r16, gathered around cell
 * a: its packed coordinates to *qxy and *qz0, the recheck pointed at it
 * and at the block's ids (the caller sets rc->ids back to NULL after);
 * returns the block's arrays. */
static inline prox_rel16_block prox_rel16_gathered_query(const prox_grid *g,
                                                         const prox_rel16_metric *m, cell3 a,
                                                         int64_t s, const prox_rel16_gather *r16,
                                                         grid_recheck *rc, uint32_t *qxy,
                                                         uint32_t *qz0)
{
    prox_rel16_point(g, m, a, s, qxy, qz0);
    prox_grid_recheck_self(rc, g, s);
    rc->ids = r16->id;
    rc->ranges = r16->from;
    rc->nranges = r16->from_count;
    return (prox_rel16_block){r16->xy, g->dim == 3 ? r16->z0 : NULL};
}

/* Fixed-point coordinates of a query point given in double (wrapped), for
 * a grid that keeps them (fixed_on) and a query within the reach of its
 * cells (query_base_cell accepted it). */
void prox_grid_fixed_of(const prox_grid *g, const double q[3], int32_t out[3]);

#endif
