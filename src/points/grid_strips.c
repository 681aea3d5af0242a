/* grid_strips.c: the stencil of a cell as strips, over linear (row-major)
 * cell keys.
 *
 * With keys in row-major order, x fastest, the cells x-m .. x+m of one
 * stencil row (fixed y and z offsets) hold consecutive sorted points. A cell
 * then meets its whole stencil as 9 contiguous ranges of the grid's own
 * arrays in 3D (3 in 2D), found with two lookups each in the flat-array article's
 * cellStart, and the distance kernel reads them in place, or, where the
 * plan's gather rule says a run pays for it (grid_plan_gathers), from one
 * block the ranges are copied into (fixed point or rel16). Self pairs for
 * counts, callbacks and unsorted buffers run here over the forward half
 * of the stencil (the hash-multimap article: each pair once): the cell's
 * own later points and the cells x+1 .. x+m of its row (one range), then
 * the 4 forward rows in 3D (1 in 2D), each chunk of runs one step of the
 * chunk driver (drive.h). The sorted buffer and full lists take the full
 * stencil's ranges (prox_grid_strip_ranges) in grid_search.c. */
#include <assert.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/grid_private.h"
#include "simd/kernel.h"
#include "core/pair_sink.h"
#include "core/radix_sort.h"
#include "core/views.h"

typedef prox_strip_rows strip_rows;
typedef prox_range range;
#define MAX_ROWS PROX_STRIP_MAX_ROWS
#define MAX_RANGES PROX_STRIP_MAX_RANGES

/* The rows of the stencil: every row for the full stencil; for the forward
 * half (an offset is forward when its last non-zero component is positive)
 * the rows with dz > 0 or dz == 0 < dy, and the own row apart. A row's
 * reachable offsets are exactly |dx| <= reach (the stencil drops offsets by
 * distance, which grows with |dx|). */
void prox_grid_strip_rows(const prox_grid *g, bool forward_half, strip_rows *rows)
{
    rows->count = 0;
    rows->own_reach = 0;
    for (int o = 0; o < g->stencil_full; o++) {
        cell3 c = g->stencil[o];
        int dx = c.c[0] < 0 ? -c.c[0] : c.c[0], dy = c.c[1], dz = c.c[2];
        if (forward_half && dy == 0 && dz == 0) {
            rows->own_reach = dx > rows->own_reach ? dx : rows->own_reach;
            continue;
        }
        if (forward_half && !(dz > 0 || (dz == 0 && dy > 0)))
            continue;
        int r = 0;
        while (r < rows->count && (rows->dy[r] != dy || rows->dz[r] != dz))
            r++;
        if (r == rows->count) {
            rows->dy[r] = dy;
            rows->dz[r] = dz;
            rows->reach[r] = 0;
            rows->count++;
        }
        rows->reach[r] = dx > rows->reach[r] ? dx : rows->reach[r];
    }
}

/* The coordinate c + d along axis k: wrapped on a periodic axis; false
 * outside an open axis. */
static inline bool shift_axis(const prox_grid *g, int k, int64_t c, int d, int64_t *out)
{
    int64_t v = c + d, n = g->ncell[k];
    if (v < 0 || v >= n) {
        if (!g->periodic[k])
            return false;
        v = v < 0 ? v + n : v - n;
    }
    *out = v;
    return true;
}

/* Sorted points of cells x0 .. x1 of row (y, z): two cellStart lookups
 * (the table holds each cell's first point), or for a sparse box two ranks
 * in the occupancy bits. */
static inline range cells_range(const prox_grid *g, int64_t x0, int64_t x1, int64_t y, int64_t z)
{
    uint64_t row = ((uint64_t)z * (uint64_t)g->ncell[1] + (uint64_t)y) * (uint64_t)g->ncell[0];
    if (g->sparse) { /* runs of the cells; no run: an empty range, no point read */
        uint64_t r0 = sparse_rank(g, row + (uint64_t)x0), r1 = sparse_rank(g, row + (uint64_t)x1 + 1);
        return r0 == r1 ? (range){0, 0} : (range){g->run_start[r0], g->run_start[r1]};
    }
    return (range){g->table[row + (uint64_t)x0], g->table[row + (uint64_t)x1 + 1]};
}

/* Cells x + lo .. x + hi of row (y, z) as sorted ranges: clipped on an open
 * x axis, split in two where they wrap a periodic one (whose cells are
 * distinct: at least 2 * reach + 1 of them, or one). Empty ranges are
 * dropped. Returns how many were appended. */
static PROX_ALWAYS_INLINE int row_ranges(const prox_grid *g, int64_t x, int lo, int hi, int64_t y,
                                         int64_t z, range *out)
{
    int64_t nx = g->ncell[0], x0 = x + lo, x1 = x + hi;
    range a, b;
    if (nx == 1 || !g->periodic[0]) { /* the common case: one range, no array */
        x0 = x0 < 0 ? 0 : x0;
        x1 = x1 > nx - 1 ? nx - 1 : x1;
        if (x0 > x1)
            return 0;
        a = cells_range(g, x0, x1, y, z);
        out[0] = a; /* no branch: on sparse data emptiness is a coin toss */
        return a.begin < a.end;
    }
    if (x0 < 0) {
        a = cells_range(g, x0 + nx, nx - 1, y, z);
        b = cells_range(g, 0, x1, y, z);
    } else if (x1 > nx - 1) {
        a = cells_range(g, x0, nx - 1, y, z);
        b = cells_range(g, 0, x1 - nx, y, z);
    } else {
        a = cells_range(g, x0, x1, y, z);
        b = (range){0, 0};
    }
    int kept = 0;
    out[kept] = a;
    kept += a.begin < a.end;
    out[kept] = b;
    kept += b.begin < b.end;
    return kept;
}

static inline int strip_ranges_around(const prox_grid *g, const strip_rows *rows,
                                      const int64_t base[3], range *out, int64_t *cells)
{
    int count = 0;
    for (int r = 0; r < rows->count; r++) {
        int64_t y, z;
        if (!shift_axis(g, 1, base[1], rows->dy[r], &y) || !shift_axis(g, 2, base[2], rows->dz[r], &z))
            continue;
        count += row_ranges(g, base[0], -rows->reach[r], rows->reach[r], y, z, out + count);
        *cells += 2 * rows->reach[r] + 1;
    }
    return count;
}

int prox_grid_strip_ranges_around(const prox_grid *g, const strip_rows *rows,
                                  const int64_t base[3], range *out, int64_t *cells)
{
    return strip_ranges_around(g, rows, base, out, cells);
}

int prox_grid_strip_ranges(const prox_grid *g, const strip_rows *rows, cell3 a, range *out,
                           int64_t *cells)
{
    int64_t base[3] = {a.c[0], a.c[1], a.c[2]};
    return strip_ranges_around(g, rows, base, out, cells);
}

/* Strips are short (W1: about 21 points): a call to memcpy for each of
 * their four arrays cost more than the copy. Whole vectors are loaded and
 * stored: from[] is one of the grid's arrays, readable GRID_READ_SLACK
 * words past its end (prox_grid.id), and to[] has PROX_KERNEL_SLACK words
 * of room past the block; the words past the strip's end are overwritten
 * by the next strip or left in that room. */
static inline void copy_words(uint32_t *to, const uint32_t *from, int64_t len)
{
    for (int64_t t = 0; t < len; t += PV_W)
        pv_store(to + t, pv_load(from + t));
}

/* Room in *block for `arrays` arrays of `need` words each, laid one after
 * the other `*cap` words apart: reallocated at twice the need when short
 * (contents not kept). False when out of memory (*block NULL, *cap 0). */
static bool block_room(const prox_grid *g, void **block, int64_t *cap, int64_t need, int arrays)
{
    if (need <= *cap)
        return true;
    prox_free(&g->allocator, *block);
    *cap = 2 * need;
    *block = prox_alloc_array(&g->allocator, *cap, (size_t)arrays * sizeof(uint32_t));
    *cap = *block ? *cap : 0;
    return *block != NULL;
}

bool prox_fixed_gather_ranges(const prox_grid *g, const range *rg, int count, bool positions,
                              prox_fixed_gather *b)
{
    int64_t total = prox_ranges_length(rg, count), cap = b->cap;
    void *block = b->x;
    if (!block_room(g, &block, &cap, total + PROX_KERNEL_SLACK, 5)) {
        *b = (prox_fixed_gather){0};
        return false;
    }
    int32_t *w = block;
    *b = (prox_fixed_gather){w, w + cap, w + 2 * cap, (uint32_t *)(w + 3 * cap),
                             (uint32_t *)(w + 4 * cap), 0, cap, rg, count};
    const int32_t *from[3] = {g->fixed, g->fixed + g->n, g->fixed + 2 * g->n};
    int32_t *to[3] = {b->x, b->y, b->z};
    int64_t at = 0;
    for (int k = 0; k < count; k++) {
        int64_t begin = rg[k].begin, len = rg[k].end - begin;
        for (int a = 0; a < g->dim; a++)
            copy_words((uint32_t *)to[a] + at, (const uint32_t *)from[a] + begin, len);
        copy_words(b->id + at, g->id + begin, len);
        for (int64_t t = 0; positions && t < len; t++)
            b->pos[at + t] = (uint32_t)(begin + t);
        at += len;
    }
    b->count = total;
    return true;
}

/* len rel16 coordinates of one axis pair from fixed-point arrays fx, fy
 * (fy NULL: z alone, with 0 above) around centres cx, cy, each difference
 * taken to its image nearest the centre on a periodic axis (px, py: the
 * periods, 0 when open), packed into to[]. Whole vectors are loaded and
 * stored, as in copy_words. */
static PROX_ALWAYS_INLINE void rel16_words(const int32_t *fx, const int32_t *fy, int32_t cx,
                                           int32_t cy, int32_t px, int32_t py, int drop,
                                           uint32_t *to, int64_t len)
{
    const pv_i32 vx = pv_set1_i32(cx), vy = pv_set1_i32(cy), low = pv_set1_i32(0xffff);
    for (int64_t t = 0; t < len; t += PV_W) { /* arithmetic shifts: floors */
        pv_i32 dx = pv_sub_i32(pv_load(fx + t), vx);
        if (px)
            dx = pv_min_image(dx, px);
        pv_i32 w = pv_and(pv_sra_i32(dx, drop), low);
        if (fy) {
            pv_i32 dy = pv_sub_i32(pv_load(fy + t), vy);
            if (py)
                dy = pv_min_image(dy, py);
            w = pv_or(w, pv_shl16(pv_sra_i32(dy, drop)));
        }
        pv_store(to + t, w);
    }
}

/* Whether a run in cell c of axis k has stencil cells across a periodic
 * axis's seam: with rel16's reach of one cell, only in the first or the
 * last cell. Elsewhere every candidate lies within 1.5 cells of the centre,
 * less than half a period (rel16 takes periods of 4 cells and more), so its
 * difference is already its nearest image and needs no wrap. */
static bool seam_in_reach(const prox_grid *g, int k, int32_t c)
{
    return g->periodic[k] && (c == 0 || c == g->ncell[k] - 1);
}

bool prox_rel16_gather_ranges(const prox_grid *g, const prox_rel16_metric *m, cell3 a,
                              const range *rg, int count, bool ids, prox_rel16_gather *b)
{
    int64_t total = prox_ranges_length(rg, count), cap = b->cap;
    void *block = b->xy;
    if (!block_room(g, &block, &cap, total + PROX_KERNEL_SLACK, 3)) {
        *b = (prox_rel16_gather){0};
        return false;
    }
    uint32_t *w = block;
    *b = (prox_rel16_gather){w, w + cap, w + 2 * cap, 0, cap, rg, count};
    int64_t n = g->n, at = 0;
    int32_t centre[3], p[3]; /* p: the period where a candidate may lie across the seam, else 0 */
    for (int k = 0; k < 3; k++) {
        centre[k] = k < g->dim ? prox_rel16_centre(g, k, a.c[k]) : 0;
        p[k] = k < g->dim && seam_in_reach(g, k, a.c[k]) ? g->fixed_metric.period[k] : 0;
    }
    for (int k = 0; k < count; k++) {
        int64_t begin = rg[k].begin, len = rg[k].end - begin;
        rel16_words(g->fixed + begin, g->fixed + n + begin, centre[0], centre[1], p[0], p[1],
                    m->drop, b->xy + at, len);
        if (g->dim == 3)
            rel16_words(g->fixed + 2 * n + begin, NULL, centre[2], 0, p[2], 0, m->drop,
                        b->z0 + at, len);
        if (ids)
            copy_words(b->id + at, g->id + begin, len);
        at += len;
    }
    b->count = total;
    return true;
}

/* ---- counts and callbacks: the forward half ------------------------------ */

typedef struct half_scratch {
    uint32_t *hits;
    int64_t cap;
    /* a run's ranges, gathered as rel16 coordinates where the grid allows
     * them (rel16_metric not NULL), else as fixed-point ones */
    const prox_rel16_metric *rel16_metric;
    const grid_plan *plan; /* its gather rule (grid_plan_gathers) */
    prox_rel16_gather rel16;
    prox_fixed_gather fixed;
} half_scratch;

static inline int64_t point_hits(const prox_grid *g, int64_t s, const range *rg, int count,
                                 grid_recheck *rc, uint32_t *hits)
{
    int64_t found = 0;
    if (g->fixed_on) {
        prox_fixed_block b = fixed_block(g);
        const prox_fixed_metric *m = &g->fixed_metric;
        int32_t q[3];
        fixed_point_of(g, s, q);
        prox_grid_recheck_self(rc, g, s);
        for (int k = 0; k < count; k++) {
            int64_t begin = k == 0 ? s + 1 : rg[k].begin;
            found += hits ? prox_fixed_hits(&b, begin, rg[k].end, q, m, &rc->base, hits + found)
                          : prox_fixed_count(&b, begin, rg[k].end, q, m, &rc->base);
        }
        return found;
    }
    prox_block b = grid_block(g);
    double q[3];
    point_of(g, s, q);
    for (int k = 0; k < count; k++) {
        int64_t begin = k == 0 ? s + 1 : rg[k].begin;
        found += hits ? prox_kernel_hits(&b, begin, rg[k].end, q, &g->metric, hits + found)
                      : prox_kernel_count(&b, begin, rg[k].end, q, &g->metric);
    }
    return found;
}

/* Sorted point s's candidates within the radius among a block gathered
 * from prox_grid_half_ranges (own_begin: the first point of s's run; s
 * meets the run's later points only): block indices to hits[], or with
 * hits NULL only counted. */
static int64_t gathered_hits(const prox_grid *g, int64_t s, int64_t own_begin,
                             const prox_fixed_gather *b, grid_recheck *rc, uint32_t *hits)
{
    const prox_fixed_metric *m = &g->fixed_metric;
    int32_t q[3];
    prox_fixed_block fb = prox_gathered_query(g, s, b, rc, q);
    int64_t begin = s + 1 - own_begin;
    int64_t found = hits ? prox_fixed_hits(&fb, begin, b->count, q, m, &rc->base, hits)
                         : prox_fixed_count(&fb, begin, b->count, q, m, &rc->base);
    rc->ids = NULL;
    return found;
}

int prox_grid_half_ranges(const prox_grid *g, const strip_rows *rows, int64_t r, range *rg,
                          int64_t *cells)
{
    cell3 a = run_cell_of(g, r);
    int64_t own_end = g->run_start[r + 1];
    /* the own cell's later points, then its row's forward cells (one range
     * unless a periodic x axis wraps: then two) */
    range ahead[2];
    int count = row_ranges(g, a.c[0], 1, rows->own_reach, a.c[1], a.c[2], ahead);
    rg[0] = (range){g->run_start[r], own_end};
    int k = 0;
    if (count > 0 && ahead[0].begin == own_end) /* contiguous: one range */
        rg[0].end = ahead[k++].end;
    int at = 1;
    for (; k < count; k++)
        rg[at++] = ahead[k];
    *cells += 1 + rows->own_reach;
    int64_t base[3] = {a.c[0], a.c[1], a.c[2]};
    return at + strip_ranges_around(g, rows, base, rg + at, cells);
}

void prox_grid_point_split(const prox_grid *g, int64_t s, const range *rg, int count,
                           const prox_fixed_gather *block, grid_recheck *rc, bool both,
                           uint32_t *hits, uint32_t *ups, uint32_t *downs, int64_t *nu,
                           int64_t *nd)
{
    prox_index self = g->id[s];
    *nu = *nd = 0;
    if (block) { /* rg[0], the own cell's range, leads the block */
        int32_t q[3];
        prox_fixed_block b = prox_gathered_query(g, s, block, rc, q);
        prox_fixed_split(&b, block->id, block->pos, s + 1 - rg[0].begin, block->count, q,
                         &g->fixed_metric, &rc->base, self, both, ups, downs, nu, nd);
        rc->ids = NULL;
        return;
    }
    if (g->fixed_on) {
        prox_fixed_block b = fixed_block(g);
        int32_t q[3];
        fixed_point_of(g, s, q);
        prox_grid_recheck_self(rc, g, s);
        for (int k = 0; k < count; k++)
            prox_fixed_split(&b, g->id, NULL, k == 0 ? s + 1 : rg[k].begin, rg[k].end, q,
                             &g->fixed_metric, &rc->base, self, both, ups, downs, nu, nd);
        return;
    }
    int64_t found = point_hits(g, s, rg, count, rc, hits), u = 0, d = 0;
    for (int64_t t = 0; t < found; t++) { /* no branch: the side is a coin toss */
        uint32_t b = hits[t];
        prox_index other = g->id[b];
        bool up = both || other > self;
        if (ups)
            ups[u] = other;
        downs[d] = b;
        u += up;
        d += both || !up;
    }
    *nu = u;
    *nd = d;
}

/* As gathered_hits over a block of rel16 coordinates around cell a. */
static int64_t gathered_rel16_hits(const prox_grid *g, int64_t s, int64_t own_begin, cell3 a,
                                   const half_scratch *hs, grid_recheck *rc, uint32_t *hits)
{
    uint32_t qxy, qz0;
    prox_rel16_block b =
        prox_rel16_gathered_query(g, hs->rel16_metric, a, s, &hs->rel16, rc, &qxy, &qz0);
    int64_t found = prox_rel16_hits(&b, s + 1 - own_begin, hs->rel16.count, qxy, qz0,
                                    hs->rel16_metric, &rc->base, hits);
    rc->ids = NULL;
    return found;
}

/* The count of the run's points [own_begin, own_end) two at a time over
 * its gathered rel16 block (others: the block's candidates past the run's
 * own points), a point whose band was met counted again with the
 * recheck; returns the point where an odd one is left. */
static int64_t count_pairs_of_points(const prox_grid *g, int64_t own_begin, int64_t own_end,
                                     int64_t others, cell3 a, const half_scratch *hs,
                                     grid_recheck *rc, prox_emitter *e, prox_stats *counters)
{
    prox_rel16_block b = {hs->rel16.xy, g->dim == 3 ? hs->rel16.z0 : NULL};
    int64_t s = own_begin;
    for (; s + 2 <= own_end; s += 2) {
        int64_t count[2];
        bool band[2];
        prox_rel16_count_two(&b, s - own_begin, hs->rel16.count, hs->rel16_metric, count, band);
        for (int t = 0; t < 2; t++) {
            counters->candidates += own_end - (s + t + 1) + others;
            e->count += band[t] ? gathered_rel16_hits(g, s + t, own_begin, a, hs, rc, NULL)
                                : count[t];
        }
    }
    return s;
}

/* Run r's ranges gathered into the scratch: rel16 coordinates where the
 * grid allows them (their ids too unless only counted), else fixed-point
 * ones. Returns the block's ids, or NULL when out of memory. */
static const prox_index *gather_half_ranges(const prox_grid *g, int64_t r, const range *rg,
                                            int count, bool counted, half_scratch *hs)
{
    if (hs->rel16_metric)
        return prox_rel16_gather_ranges(g, hs->rel16_metric, run_cell_of(g, r), rg, count,
                                        !counted, &hs->rel16)
                   ? hs->rel16.id
                   : NULL;
    return prox_fixed_gather_ranges(g, rg, count, false, &hs->fixed) ? hs->fixed.id : NULL;
}

/* Pairs whose first point (in cell order) lies in run r. */
static void half_pairs_of_run(const prox_grid *g, const strip_rows *rows, int64_t r,
                              half_scratch *hs, grid_recheck *rc, prox_emitter *e,
                              prox_stats *counters)
{
    range rg[MAX_RANGES];
    int64_t own_begin = g->run_start[r], own_end = g->run_start[r + 1];
    int count = prox_grid_half_ranges(g, rows, r, rg, &counters->cells_visited);
    int64_t others = prox_ranges_length(rg + 1, count - 1);
    if (e->kind != PROX_SINK_COUNT && hs->cap < rg[0].end - rg[0].begin + others + PROX_KERNEL_SLACK) {
        int64_t want = 2 * (rg[0].end - rg[0].begin + others) + PROX_KERNEL_SLACK;
        if (!prox_reserve(&g->allocator, (void **)&hs->hits, &hs->cap, want, sizeof *hs->hits)) {
            e->stop = e->failed = true;
            return;
        }
    }
    /* gathered: the block's ids; else the candidates are read in place */
    const prox_index *ids = g->id;
    bool gathered =
        grid_plan_gathers(hs->plan, own_end - own_begin, rg[0].end - rg[0].begin + others);
    if (gathered &&
        !(ids = gather_half_ranges(g, r, rg, count, e->kind == PROX_SINK_COUNT, hs))) {
        e->stop = e->failed = true;
        return;
    }
    cell3 a = run_cell_of(g, r);
    uint32_t *hits = e->kind == PROX_SINK_COUNT ? NULL : hs->hits;
    int64_t s = own_begin;
    if (gathered && hs->rel16_metric && !hits)
        s = count_pairs_of_points(g, own_begin, own_end, others + (rg[0].end - own_end), a, hs,
                                  rc, e, counters);
    for (; s < own_end && !e->stop; s++) {
        counters->candidates += rg[0].end - (s + 1) + others;
        int64_t found = !gathered          ? point_hits(g, s, rg, count, rc, hits)
                        : hs->rel16_metric ? gathered_rel16_hits(g, s, own_begin, a, hs, rc, hits)
                                           : gathered_hits(g, s, own_begin, &hs->fixed, rc, hits);
        prox_emit_hits(e, g->id[s], ids, hits, found);
    }
}

/* Pairs of a fresh block faulted in at a time, ahead of the writes. */
#define TOUCH_AHEAD ((int64_t)1 << 19)

/* After a chunk's first runs, room for what their pairs per point predict
 * for the whole chunk (plus a quarter): one allocation instead of a chain
 * of doublings, each copying and touching fresh pages. With `ahead`, of
 * a fresh block only the part the writes are about to reach is faulted in
 * (TOUCH_AHEAD pairs past the count; touch_ahead the rest as they come),
 * else all it predicts. Returns where the faulted-in part ends, or 0 when
 * no fresh block was made. */
static int64_t reserve_predicted(const prox_grid *g, prox_emitter *e, int64_t r0, int64_t done,
                                 int64_t r1, bool ahead)
{
    int64_t points_done = g->run_start[done] - g->run_start[r0];
    int64_t points = g->run_start[r1] - g->run_start[r0];
    if (points_done <= 0)
        return 0;
    double want = 1.25 * (double)e->count / (double)points_done * (double)points + 64;
    if (want <= (double)e->capacity)
        return 0;
    void *p = e->pairs;
    int64_t touch = ahead ? e->count + TOUCH_AHEAD : (int64_t)want;
    if (!prox_grow_part(e->allocator, &p, &e->capacity, (int64_t)want, e->count, touch,
                        sizeof(prox_pair), 1))
        return 0; /* a failure keeps the old block: growth on demand */
    e->pairs = p;
    return touch < e->capacity ? touch : e->capacity;
}

/* A fresh block's next TOUCH_AHEAD pairs faulted in by one call once the
 * writes come within half of that of the end of what is (faulted in up
 * to `touched`, 0: not a fresh block); where that now ends. A margin the
 * writes never reach is never touched, so it costs neither time nor
 * resident memory. */
static inline int64_t touch_ahead(const prox_emitter *e, int64_t touched)
{
    if (!touched || e->count + TOUCH_AHEAD / 2 < touched || touched >= e->capacity)
        return touched;
    int64_t to = touched + TOUCH_AHEAD < e->capacity ? touched + TOUCH_AHEAD : e->capacity;
    prox_populate(e->allocator, e->pairs + touched, to - touched, sizeof(prox_pair), 1);
    return to;
}

/* One chunk of the half stencil's pairs (GRID_STRIPS, GRID_SWEEP). */
typedef struct half_job {
    const prox_grid *g;
    grid_work *w;
    const grid_plan *plan;
    const strip_rows *rows; /* the forward half */
} half_job;

/* Pairs of the chunk's runs into its emitter; a growable buffer is sized
 * after the chunk's first 64 runs (reserve_predicted). */
static void half_step(const void *job, points_chunk *chunk)
{
    const half_job *j = job;
    const prox_grid *g = j->g;
    const grid_plan *plan = j->plan;
    prox_emitter *e = chunk->emitter;
    half_scratch hs = {.rel16_metric = plan->rel16 ? &plan->rel16_metric : NULL, .plan = plan};
    grid_recheck rc;
    prox_grid_recheck_init(&rc, g, &g->source);
    prox_stats counters = {0};
    int64_t r0 = g->nruns * chunk->index / chunk->count;
    int64_t r1 = g->nruns * (chunk->index + 1) / chunk->count;
    /* the first 64 runs, the emitter sized from their pairs, then the rest */
    bool predict = e->kind == PROX_SINK_BUFFER && !chunk->window;
    int64_t first = predict && r1 - r0 > 64 ? r0 + 64 : r0;
    prox_grid_ran(j->w, plan->traversal == GRID_SWEEP ? GRID_SWEEP : GRID_STRIPS);
    if (plan->traversal == GRID_SWEEP) {
        prox_grid_sweep_pairs(g, j->rows, g->run_start[r0], g->run_start[first], &rc, e,
                              &counters);
        if (first > r0)
            reserve_predicted(g, e, r0, first, r1, false);
        prox_grid_sweep_pairs(g, j->rows, g->run_start[first], g->run_start[r1], &rc, e,
                              &counters);
    } else {
        int64_t touched = 0;
        for (int64_t r = r0; r < r1 && !e->stop; r++) {
            half_pairs_of_run(g, j->rows, r, &hs, &rc, e, &counters);
            if (r + 1 == first)
                touched = reserve_predicted(g, e, r0, first, r1, true);
            touched = touch_ahead(e, touched);
        }
    }
    chunk->candidates += counters.candidates;
    chunk->cells_visited += counters.cells_visited;
    chunk->rechecked += rc.base.calls;
    prox_free(&g->allocator, hs.hits);
    prox_fixed_gather_free(&g->allocator, &hs.fixed);
    prox_rel16_gather_free(&g->allocator, &hs.rel16);
}

prox_status prox_grid_strip_pairs(const prox_grid *g, grid_work *w, prox_sink sink,
                                  prox_stats *stats, grid_plan plan)
{
    assert(plan.traversal == GRID_STRIPS || plan.traversal == GRID_SWEEP);
    strip_rows rows;
    prox_grid_strip_rows(g, true, &rows);
    half_job job = {g, w, &plan, &rows};
    points_drive d = {.step = half_step, .job = &job, .threads = g->threads, .work = g->n,
                      .rows = g->n, .symmetric = true, .repeatable = true,
                      .workspace = &w->chunks, .method = prox_grid_method(g, plan)};
    return prox_grid_drive(g, &d, sink, stats);
}
