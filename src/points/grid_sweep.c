/* grid_sweep.c: self pairs of a grid whose occupied cells hold about one
 * point each, point by point.
 *
 * There (W2 at k = 1: 1.17 points a run; a fluid at rest: 1.0) the search
 * run by run (grid_strips.c) spends its time on each run's bookkeeping and
 * on a kernel call per range for the one or two candidates each range
 * holds, whose loop exits are a coin toss. Here each sorted point looks up
 * the forward half of its stencil (the hash-multimap article: each pair
 * once) as ranges of sorted points, as grid_strips.c does, and packs every
 * candidate of every range into the lanes of one vector (vec.h's
 * pv_pack), range after range: one distance test for all of them, no
 * branch on how many there are. Ranges holding more than a vector's worth
 * fill several vectors in turn; at the scalar level a vector is one
 * candidate.
 *
 * Fixed-point coordinates, open axes of one scale; cell starts from the
 * flat-array article's cellStart, or over a sparse box from the occupancy
 * bits' ranks.
 * The pairs come in the order grid_strips.c finds them: by sorted point,
 * then range, then position. */
#include "points/grid_private.h"
#include "simd/kernel.h"
#include "core/pair_sink.h"

typedef prox_range range;

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static inline int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* The first sorted point of linear key c, or of the next occupied cell
 * after it: the flat-array article's cell start, or over a sparse box the start of the
 * run the occupancy bits' rank gives. */
static PROX_ALWAYS_INLINE int64_t cell_start(const prox_grid *g, int64_t c, bool sparse)
{
    return sparse ? g->run_start[sparse_rank(g, (uint64_t)c)] : g->table[c];
}

/* The forward half of sorted point s's stencil as ranges of sorted points:
 * rg[0] its own later points and those of cells x+1 .. x+own_reach of its
 * row, then each forward row's cells x-reach .. x+reach (an empty range for
 * a row outside the grid). Two cellStart lookups a range; selects, not
 * branches, for the grid's edges. Returns how many ranges. */
static PROX_ALWAYS_INLINE int forward_ranges(const prox_grid *g, const prox_strip_rows *rows,
                                             int nrows, int64_t s, bool three, bool sparse,
                                             range *rg, int64_t *cells)
{
    int64_t nx = g->ncell[0], ny = g->ncell[1], nz = g->ncell[2];
    cell3 c = cell_of_fixed(g, three ? 3 : 2, g->fixed, g->n, s);
    int64_t cx = c.c[0], cy = c.c[1], cz = c.c[2];
    int64_t own_end = min64(cx + rows->own_reach, nx - 1) + 1;
    /* s's cell is its run's unless a caller rewrote the points during the
     * build (grid.c, check_runs_hold_their_points): the range then stays
     * ordered, and only the answer is wrong */
    rg[0] = (range){s + 1, max64(s + 1, cell_start(g, (cz * ny + cy) * nx + own_end, sparse))};
    int64_t looked = 1 + rows->own_reach;
    for (int r = 0; r < nrows; r++) {
        int64_t y = cy + rows->dy[r], z = cz + rows->dz[r], reach = rows->reach[r];
        bool inside = (uint64_t)y < (uint64_t)ny && (uint64_t)z < (uint64_t)nz;
        int64_t row = inside ? (z * ny + y) * nx : 0;
        int64_t x0 = inside ? max64(cx - reach, 0) : 0;
        int64_t x1 = inside ? min64(cx + reach, nx - 1) + 1 : 0;
        rg[1 + r] = (range){cell_start(g, row + x0, sparse), cell_start(g, row + x1, sparse)};
        looked += inside ? 2 * reach + 1 : 0;
    }
    *cells += looked;
    return 1 + nrows;
}

/* Candidates packed into the lanes of one vector, range after range. */
typedef struct lanes {
    pv_pack x, y, z, id;
    int filled;
} lanes;

typedef struct sweep {
    const prox_grid *g;
    prox_fixed_block block;
    grid_recheck *rc;
    prox_emitter *e;
    int64_t candidates;
    uint32_t ids[PV_W]; /* the vector's ids: the recheck and the pairs read them */
} sweep;

/* Candidates [b, b + take) into lanes filled .. filled + take - 1. */
static PROX_ALWAYS_INLINE void put(const sweep *w, lanes *l, int64_t b, int take, bool three)
{
    pv_pack_put(&l->x, (const uint32_t *)w->block.x + b, l->filled, take);
    pv_pack_put(&l->y, (const uint32_t *)w->block.y + b, l->filled, take);
    if (three)
        pv_pack_put(&l->z, (const uint32_t *)w->block.z + b, l->filled, take);
    pv_pack_put(&l->id, w->g->id + b, l->filled, take);
    l->filled += take;
}

/* The filled lanes tested against sorted point s (fixed-point q), their
 * pairs emitted; the lanes emptied. */
static PROX_ALWAYS_INLINE void flush(sweep *w, int64_t s, const int32_t q[3], lanes *l,
                                     bool three)
{
    const prox_fixed_metric *m = &w->g->fixed_metric;
    pv_mask live = pv_live(l->filled);
    pv_f32 d2 = pv_add_f32(pv_axis(pv_pack_vec(&l->x), q[0], 1.0f, 0, false),
                           pv_axis(pv_pack_vec(&l->y), q[1], 1.0f, 0, false));
    if (three)
        d2 = pv_add_f32(d2, pv_axis(pv_pack_vec(&l->z), q[2], 1.0f, 0, false));
    pv_store(w->ids, pv_pack_vec(&l->id)); /* the recheck reads them */
    pv_mask hit = pv_decide_f32(d2, 0, live, m, &w->rc->base);
    l->filled = 0;
    prox_emitter *e = w->e;
    if (e->kind == PROX_SINK_COUNT) {
        e->count += prox_lanes_popcount(hit);
        return;
    }
    uint32_t hit_lanes[PV_W]; /* the hit lanes, in order (pv_compress writes PV_W) */
    pv_compress(hit_lanes, pv_iota(0), hit);
    prox_emit_hits(e, w->g->id[s], w->ids, hit_lanes, prox_lanes_popcount(hit));
}

/* Candidates of ranges rg[0 .. count) against sorted point s. */
static PROX_ALWAYS_INLINE void sweep_point(sweep *w, int64_t s, const range *rg, int count,
                                           bool three)
{
    int32_t q[3];
    fixed_point_of(w->g, s, q);
    prox_grid_recheck_self(w->rc, w->g, s);
    lanes l = {.filled = 0};
    int64_t total = 0;
    for (int k = 0; k < count; k++)
        total += rg[k].end - rg[k].begin;
    if (total <= PV_W) { /* about one point a cell: mostly */
        for (int k = 0; k < count; k++)
            put(w, &l, rg[k].begin, (int)(rg[k].end - rg[k].begin), three);
    } else {
        for (int k = 0; k < count; k++) {
            int64_t b = rg[k].begin, end = rg[k].end;
            while (b < end) {
                if (l.filled == PV_W)
                    flush(w, s, q, &l, three);
                int take = (int)min64(end - b, PV_W - l.filled);
                put(w, &l, b, take, three);
                b += take;
            }
        }
    }
    flush(w, s, q, &l, three); /* no branch on emptiness: a coin toss here */
    w->candidates += total;
}

/* nrows: the forward rows, a constant in the common stencils (cells of r:
 * one in 2D, four in 3D) so that their loop unrolls. */
static PROX_ALWAYS_INLINE void sweep_points(sweep *w, const prox_strip_rows *rows, int nrows,
                                            int64_t p0, int64_t p1, int64_t *cells, bool three,
                                            bool sparse)
{
    range rg[1 + PROX_STRIP_MAX_ROWS];
    for (int64_t s = p0; s < p1 && !w->e->stop; s++) {
        int count = forward_ranges(w->g, rows, nrows, s, three, sparse, rg, cells);
        sweep_point(w, s, rg, count, three);
    }
}

void prox_grid_sweep_pairs(const prox_grid *g, const prox_strip_rows *rows, int64_t p0,
                           int64_t p1, grid_recheck *rc, prox_emitter *e, prox_stats *counters)
{
    sweep w = {.g = g, .block = fixed_block(g), .rc = rc, .e = e};
    rc->ids = w.ids;
    rc->ranges = NULL; /* the lanes' positions are not kept: the doubles decide */
    int64_t *cells = &counters->cells_visited;
    bool sparse = g->sparse;
    if (g->dim == 2 && rows->count == 1 && !sparse)
        sweep_points(&w, rows, 1, p0, p1, cells, false, false);
    else if (g->dim == 2 && rows->count == 1)
        sweep_points(&w, rows, 1, p0, p1, cells, false, true);
    else if (g->dim == 3 && rows->count == 4 && !sparse)
        sweep_points(&w, rows, 4, p0, p1, cells, true, false);
    else if (g->dim == 3 && rows->count == 4)
        sweep_points(&w, rows, 4, p0, p1, cells, true, true);
    else
        sweep_points(&w, rows, rows->count, p0, p1, cells, g->dim == 3, sparse);
    rc->ids = NULL;
    counters->candidates += w.candidates;
}
