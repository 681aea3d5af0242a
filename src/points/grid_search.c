/* grid_search.c: the grid's queries: prox_grid_pairs carries out the
 * planner's choice (grid_plan.c), prox_grid_query the ball queries of a
 * second point set. Here too are two traversals: rows through the full
 * stencil for sorted buffers and full lists (GRID_ROWS), and self pairs
 * over the stencil's cells for Morton and hash keys (GRID_CELLS); the
 * strips' and the fill's are in grid_strips.c and grid_fill.c. The grid
 * itself is built in grid.c. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/drive.h"
#include "points/grid_private.h"
#include "points/grid_split.h"
#include "simd/kernel.h"
#include "core/pair_sink.h"
#include "core/radix_sort.h"
#include "points/points_common.h"
#include "core/views.h"

/* ---- pair kernels ------------------------------------------------------- */

typedef struct query_counters {
    int64_t candidates;
    int64_t cells_visited;
    grid_recheck recheck; /* fixed-point coordinates: the exact decisions */
} query_counters;

static query_counters counters_for(const prox_grid *g, const prox_points *queries)
{
    query_counters qc = {.candidates = 0};
    prox_grid_recheck_init(&qc.recheck, g, queries);
    return qc;
}

/* Per-chunk scratch: the points a run meets, gathered contiguously so the
 * kernel runs one long vector loop per point instead of one per cell. */
typedef struct gathered {
    double *x, *y, *z;
    prox_index *id;
    uint32_t *hits;
    int64_t count, cap;
    const prox_allocator *allocator;
    bool failed;
    prox_fixed_gather fixed; /* linear keys, fixed point: a run's strips */
    prox_rel16_gather rel16; /* or as rel16 coordinates, with these bounds (else NULL) */
    const prox_rel16_metric *rel16_metric;
    bool gather; /* rows: the plan's gather rule (grid_plan_gathers) is on */
} gathered;

static void gathered_free(gathered *b)
{
    void *blocks[] = {b->x, b->y, b->z, b->id, b->hits};
    for (int k = 0; k < 5; k++)
        prox_free(b->allocator, blocks[k]);
    prox_fixed_gather_free(b->allocator, &b->fixed);
    prox_rel16_gather_free(b->allocator, &b->rel16);
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

/* Copy len coordinates (z is NULL in 2D) and ids; ranges are short (a
 * cell's points), so a vector of doubles at a time (vec_f64.h). */
static inline void copy_points(double *restrict bx, double *restrict by, double *restrict bz,
                               prox_index *restrict bid, const double *x, const double *y,
                               const double *z, const prox_index *id, int64_t len)
{
    for (int64_t k = 0; k < len; k += PD_W) {
        int64_t left = len - k;
        pd_copy_n(bx + k, x + k, left);
        pd_copy_n(by + k, y + k, left);
        if (z)
            pd_copy_n(bz + k, z + k, left);
        pd_copy_u32_n(bid + k, id + k, left);
    }
}

/* Append sorted points [s0, s1) of the grid. */
static inline bool gather_range(gathered *b, const prox_grid *g, int64_t s0, int64_t s1)
{
    int64_t len = s1 - s0, n = g->n, at = b->count;
    if (!gathered_reserve(b, at + len))
        return false;
    copy_points(b->x + at, b->y + at, b->z + at, b->id + at, g->pos + s0, g->pos + n + s0,
                g->dim == 3 ? g->pos + 2 * n + s0 : NULL, g->id + s0, len);
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
            if (g->dim == 3)
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

/* Every pair with a first point in run r: each pair of the grid is found
 * exactly once over all runs (the hash-multimap article). */
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
        double q[3] = {b->x[p], b->y[p], g->dim == 3 ? b->z[p] : 0.0};
        qc->candidates += b->count - (p + 1);
        if (e->kind == PROX_SINK_COUNT) {
            e->count += prox_kernel_count(&block, p + 1, b->count, q, m);
            continue;
        }
        int64_t hits = prox_kernel_hits(&block, p + 1, b->count, q, m, b->hits);
        prox_emit_hits(e, b->id[p], b->id, b->hits, hits);
    }
}


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
    const prox_allocator *allocator; /* the grid's, or the output buffer's (in_output) */
    bool in_output; /* entries is the output's own storage (PROX_ROWS_IN_OUTPUT, a split) */
    bool widened;   /* in_output: the storage becomes the pairs, two words an entry */
    bool sized;     /* reserved from the first run's neighbours per point */
    bool failed;
    int64_t sort_s, sort_at; /* first point whose row awaits sorting, its first entry */
    int64_t counted;         /* ROWS_COUNT: the entries of the chunk's rows */
    bool disagreed;          /* ROWS_DIRECT: a row other than its count (a bug) */
} row_chunk;

/* Where rows go: staged in the chunk's entries until every row is done
 * (ROWS_STAGE), only their lengths noted (ROWS_COUNT), or each batch,
 * once sorted, copied to its place in the lists (ROWS_DIRECT), the
 * chunk's entries then holding one batch at a time. */
typedef enum rows_pass { ROWS_STAGE, ROWS_COUNT, ROWS_DIRECT } rows_pass;

typedef struct row_dest {
    rows_pass pass;
    const int64_t *offsets; /* ROWS_DIRECT: each id's row start in indices */
    prox_index *indices;
} row_dest;

/* Sort the rows of points [rc->sort_s, s_end), whose entries end the
 * chunk's entries: the chunk keeps PROX_KERNEL_SLACK words past them. */
_Static_assert(PROX_KERNEL_SLACK >= PROX_SORT_ROWS_SLACK, "the row sort's slack");
static void sort_pending_rows(row_chunk *rc, const uint32_t *row_len, int64_t s_end)
{
    if (rc->count > rc->sort_at) /* else every row is empty, and entries may be NULL */
        prox_sort_u32_rows(rc->entries + rc->sort_at, row_len + rc->sort_s, s_end - rc->sort_s);
    rc->sort_s = s_end;
    rc->sort_at = rc->count;
}

/* After the chunk's first run, reserve what its rate of neighbours per
 * point predicts for the rest (plus a quarter): one allocation instead of a
 * chain of doublings and copies. A chunk staged in the output buffer
 * reserves twice that, the pairs' 8 bytes an entry, but faults in only
 * the staging's half now: the rest is written at the delivery, if at all. */
static void size_row_chunk(row_chunk *rc)
{
    rc->sized = true;
    double per_point = (double)rc->count / (double)rc->points_done;
    int64_t want = rc->count + (int64_t)(1.25 * per_point * (double)rc->points_left) + 64;
    if (want > rc->cap) /* on failure, growth on demand still works */
        prox_grow_part(rc->allocator, (void **)&rc->entries, &rc->cap,
                       rc->widened ? 2 * want : want, rc->count, want, sizeof *rc->entries, 1);
}

/* Every run of every stencil cell (the run's own cell included). */
static bool gather_full(gathered *b, const prox_grid *g, int64_t r, query_counters *qc)
{
    cell3 a = g->run_cell[r];
    int64_t base[3] = {a.c[0], a.c[1], a.c[2]}, unused = -1;
    b->count = 0;
    return gather_stencil(b, g, base, 0, g->stencil_full, -1, &unused, qc);
}

/* Where run r's candidates are: with linear keys, strips of the grid's own
 * arrays; otherwise the stencil's runs gathered into the scratch. */
typedef struct run_candidates {
    prox_block block;
    const prox_index *ids;
    prox_range range[PROX_STRIP_MAX_RANGES];
    int count;
    const prox_fixed_gather *fixed; /* the strips gathered, or NULL: read in place */
    const prox_rel16_gather *rel16; /* or gathered as rel16 coordinates around `cell` */
    const prox_rel16_metric *rel16_metric;
    cell3 cell;
} run_candidates;

static PROX_ALWAYS_INLINE bool candidates_of_run(const prox_grid *g, int64_t r,
                                                const prox_strip_rows *strips, gathered *b,
                                                run_candidates *c, query_counters *qc)
{
    c->fixed = NULL;
    c->rel16 = NULL;
    if (strips) {
        c->block = grid_block(g);
        c->ids = g->id;
        c->count = prox_grid_strip_ranges(g, strips, run_cell_of(g, r), c->range, &qc->cells_visited);
        if (!(b->gather && prox_gather_pays(g->run_start[r + 1] - g->run_start[r],
                                            prox_ranges_length(c->range, c->count))))
            return true;
        if (b->rel16_metric) {
            c->cell = run_cell_of(g, r);
            c->rel16_metric = b->rel16_metric;
            c->rel16 = &b->rel16;
            return prox_rel16_gather_ranges(g, b->rel16_metric, c->cell, c->range, c->count,
                                            true, &b->rel16);
        }
        if (g->fixed_on) {
            if (!prox_fixed_gather_ranges(g, c->range, c->count, false, &b->fixed))
                return false;
            c->fixed = &b->fixed;
            return true;
        }
        b->count = 0; /* doubles: the strips into the scratch block, as other keys */
        for (int k = 0; k < c->count; k++)
            if (!gather_range(b, g, c->range[k].begin, c->range[k].end))
                return false;
        c->block = (prox_block){b->x, b->y, g->dim == 3 ? b->z : NULL};
        c->ids = b->id;
        c->range[0] = (prox_range){0, b->count};
        c->count = 1;
        return true;
    }
    if (!gather_full(b, g, r, qc))
        return false;
    c->block = (prox_block){b->x, b->y, g->dim == 3 ? b->z : NULL};
    c->ids = b->id;
    c->range[0] = (prox_range){0, b->count};
    c->count = 1;
    return true;
}

/* Sorted point s's row among run candidates c: the ids kept by `rule`
 * within the radius, written to out[]; returns how many. */
static inline int64_t row_of_point(const prox_grid *g, int64_t s, const run_candidates *c,
                                   prox_id_rule rule, grid_recheck *rc, prox_index *out)
{
    int64_t found = 0;
    if (c->rel16) { /* one block, rel16 coordinates */
        uint32_t qxy, qz0;
        prox_rel16_block b =
            prox_rel16_gathered_query(g, c->rel16_metric, c->cell, s, c->rel16, rc, &qxy, &qz0);
        found = prox_rel16_ids(&b, c->rel16->id, 0, c->rel16->count, qxy, qz0, c->rel16_metric,
                               &rc->base, g->id[s], rule, out);
        rc->ids = NULL;
        return found;
    }
    if (c->fixed) { /* one block */
        int32_t q[3];
        prox_fixed_block b = prox_gathered_query(g, s, c->fixed, rc, q);
        found = prox_fixed_ids(&b, c->fixed->id, 0, c->fixed->count, q, &g->fixed_metric,
                               &rc->base, g->id[s], rule, out);
        rc->ids = NULL;
        return found;
    }
    if (g->fixed_on) { /* linear keys: strips of the grid's own arrays */
        assert(c->ids == g->id);
        prox_fixed_block b = fixed_block(g);
        int32_t q[3];
        fixed_point_of(g, s, q);
        prox_grid_recheck_self(rc, g, s);
        for (int k = 0; k < c->count; k++)
            found += prox_fixed_ids(&b, c->ids, c->range[k].begin, c->range[k].end, q,
                                    &g->fixed_metric, &rc->base, g->id[s], rule, out + found);
        return found;
    }
    double q[3];
    point_of(g, s, q);
    for (int k = 0; k < c->count; k++)
        found += prox_kernel_ids(&c->block, c->ids, c->range[k].begin, c->range[k].end, q,
                                 &g->metric, g->id[s], rule, out + found);
    return found;
}

/* The length of sorted point s's row of lists (rule OTHER) among run
 * candidates c: its neighbours within the radius counted, itself (at
 * distance 0, always among them) taken off. The count kernels decide each
 * candidate as the ids kernels of row_of_point do. */
static inline int64_t list_row_length(const prox_grid *g, int64_t s, const run_candidates *c,
                                      grid_recheck *rc)
{
    int64_t found = 0;
    if (c->rel16) {
        uint32_t qxy, qz0;
        prox_rel16_block b =
            prox_rel16_gathered_query(g, c->rel16_metric, c->cell, s, c->rel16, rc, &qxy, &qz0);
        found = prox_rel16_hits(&b, 0, c->rel16->count, qxy, qz0, c->rel16_metric, &rc->base,
                                NULL);
        rc->ids = NULL;
        return found - 1;
    }
    if (c->fixed) {
        int32_t q[3];
        prox_fixed_block b = prox_gathered_query(g, s, c->fixed, rc, q);
        found = prox_fixed_count(&b, 0, c->fixed->count, q, &g->fixed_metric, &rc->base);
        rc->ids = NULL;
        return found - 1;
    }
    if (g->fixed_on) {
        prox_fixed_block b = fixed_block(g);
        int32_t q[3];
        fixed_point_of(g, s, q);
        prox_grid_recheck_self(rc, g, s);
        for (int k = 0; k < c->count; k++)
            found += prox_fixed_count(&b, c->range[k].begin, c->range[k].end, q,
                                      &g->fixed_metric, &rc->base);
        return found - 1;
    }
    double q[3];
    point_of(g, s, q);
    for (int k = 0; k < c->count; k++)
        found += prox_kernel_count(&c->block, c->range[k].begin, c->range[k].end, q, &g->metric);
    return found - 1;
}

/* Rows of the points of run r, appended to the chunk; row lengths go to
 * row_len[sorted position]. rule ABOVE keeps neighbours j > i (the
 * buffer), OTHER every neighbour but i itself (lists); unless the sink
 * is unsorted, rows are sorted PROX_SORT_ROWS_BATCH points or more at a time. */
/* ROWS_DIRECT: the sorted rows of sorted positions [s0, s1), the whole of
 * the chunk's entries, copied to their places; the entries are then free.
 * Each place holds what the count found (offsets), never written past. */
static void flush_rows(const prox_grid *g, row_chunk *rc, const uint32_t *row_len, int64_t s0,
                       int64_t s1, const row_dest *d)
{
    int64_t at = 0;
    for (int64_t s = s0; s < s1; s++) {
        prox_index id = g->id[s];
        if (row_len[s] != d->offsets[id + 1] - d->offsets[id]) {
            rc->failed = rc->disagreed = true;
            break;
        }
        if (row_len[s])
            memcpy(d->indices + d->offsets[id], rc->entries + at,
                   row_len[s] * sizeof *rc->entries);
        at += row_len[s];
    }
    rc->count = rc->sort_at = 0;
}

/* Sort the pending rows up to s_end, and where they go straight to their
 * places, copy them there. */
static void finish_pending_rows(const prox_grid *g, row_chunk *rc, const uint32_t *row_len,
                                int64_t s_end, const row_dest *d)
{
    int64_t s0 = rc->sort_s;
    sort_pending_rows(rc, row_len, s_end);
    if (d->pass == ROWS_DIRECT)
        flush_rows(g, rc, row_len, s0, s_end, d);
}

/* ROWS_COUNT: the lengths of the lists' rows of run r's points. */
static void list_lengths_of_run(const prox_grid *g, int64_t r, const prox_strip_rows *strips,
                                gathered *b, row_chunk *rc, uint32_t *row_len,
                                query_counters *qc)
{
    run_candidates c;
    if (!candidates_of_run(g, r, strips, b, &c, qc)) {
        rc->failed = true;
        return;
    }
    int64_t total = prox_ranges_length(c.range, c.count);
    for (int64_t s = g->run_start[r]; s < g->run_start[r + 1]; s++) {
        int64_t found = list_row_length(g, s, &c, &qc->recheck);
        qc->candidates += total - 1;
        rc->counted += found;
        row_len[s] = (uint32_t)found;
    }
}

static void rows_of_run(const prox_grid *g, int64_t r, const prox_strip_rows *strips,
                        gathered *b, row_chunk *rc, uint32_t *row_len, prox_id_rule rule,
                        bool sorted, const row_dest *d, query_counters *qc)
{
    run_candidates c;
    if (!candidates_of_run(g, r, strips, b, &c, qc)) {
        rc->failed = true;
        return;
    }
    int64_t total = prox_ranges_length(c.range, c.count);
    for (int64_t s = g->run_start[r]; s < g->run_start[r + 1]; s++) {
        if (rc->count + total + PROX_KERNEL_SLACK > rc->cap &&
            !prox_grow(rc->allocator, (void **)&rc->entries, &rc->cap,
                       rc->count + total + PROX_KERNEL_SLACK, rc->count, sizeof *rc->entries)) {
            rc->failed = true;
            return;
        }
        prox_index *out = rc->entries + rc->count;
        int64_t found = row_of_point(g, s, &c, rule, &qc->recheck, out);
        qc->candidates += total - 1;
        rc->count += found;
        row_len[s] = (uint32_t)found;
    }
    int64_t own = g->run_start[r + 1] - g->run_start[r];
    if (sorted && g->run_start[r + 1] - rc->sort_s >= PROX_SORT_ROWS_BATCH)
        finish_pending_rows(g, rc, row_len, g->run_start[r + 1], d);
    rc->points_done += own;
    rc->points_left -= own;
    if (!rc->sized && rc->points_done >= 32) /* ROWS_DIRECT's chunks come sized */
        size_row_chunk(rc);
}

/* For each point of chunk rc (sorted positions [s0, s1)): offsets[id + 1]
 * = its row length, row_at[id] = its row in the chunk's entries. Each id
 * is written once; the writes scatter, the reads go in order. */
static void index_rows_by_id(const prox_grid *g, const row_chunk *rc, int64_t s0, int64_t s1,
                             const uint32_t *row_len, const uint32_t *room_start,
                             int64_t *offsets, const prox_index **row_at)
{
    int64_t at = 0; /* an index: entries is NULL while every row is empty */
    for (int64_t s = s0; s < s1; s++) {
        prox_index id = g->id[s];
        offsets[id + 1] = row_len[s] + (room_start ? room_start[id + 1] - room_start[id] : 0);
        row_at[id] = row_len[s] ? rc->entries + at : NULL;
        at += row_len[s];
    }
}

/* Rows ahead whose entries place_rows prefetches. */
#define PLACE_AHEAD PREFETCH_AHEAD

/* The rows of ids [i0, i1) to their place, in id order: the output is
 * written straight through, and the reads (each row's entries) are the
 * ones that scatter, fetched ahead. */
static PROX_ALWAYS_INLINE void place_rows_as(const int64_t *offsets,
                                             const prox_index *const *row_at, int64_t i0,
                                             int64_t i1, prox_sink sink, prox_index *columns,
                                             bool entries)
{
    for (int64_t i = i0; i < i1; i++) {
        if (i + PLACE_AHEAD < i1)
            __builtin_prefetch(row_at[i + PLACE_AHEAD]);
        const prox_index *from = row_at[i];
        int64_t at = offsets[i], len = offsets[i + 1] - at;
        if (entries) {
            prox_index *to = columns + at;
            for (int64_t t = 0; t < len; t++) /* rows are short: no call */
                to[t] = from[t];
        } else {
            prox_pair *to = sink.buffer->pairs + at;
            for (int64_t t = 0; t < len; t++)
                to[t] = (prox_pair){(prox_index)i, from[t]};
        }
    }
}

/* The rows' entries to the lists' indices, or to `columns` (a buffer's
 * rows staged in it, widened afterwards), or as pairs to the buffer. */
static void place_rows(const int64_t *offsets, const prox_index *const *row_at, int64_t i0,
                       int64_t i1, prox_sink sink, prox_index *columns)
{
    if (columns || sink.kind == PROX_SINK_LISTS)
        place_rows_as(offsets, row_at, i0, i1, sink, columns ? columns : sink.lists->indices,
                      true);
    else
        place_rows_as(offsets, row_at, i0, i1, sink, NULL, false);
}

/* Pairs [a, b) of the rows of ids whose offsets are given, each (i, j)
 * with j = columns[t], in place: pair t's 8 bytes cover the words 2t and
 * 2t + 1 of the buffer, where columns = words + total. In order, each
 * write lands on words already read (2t + 1 <= total + t for t < total);
 * the caller makes parallel ranges safe (widen_rows). */
static void widen_range(prox_pair *pairs, const int64_t *offsets, int64_t n, int64_t total,
                        int64_t a, int64_t b)
{
    const prox_index *columns = (const prox_index *)pairs + total;
    int64_t lo = 0, hi = n; /* the row holding entry a: offsets[i] <= a < offsets[i + 1] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (offsets[mid + 1] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int64_t i = lo; i < n && offsets[i] < b; i++) {
        int64_t from = offsets[i] > a ? offsets[i] : a, to = offsets[i + 1] < b ? offsets[i + 1] : b;
        for (int64_t t = from; t < to; t++) {
            prox_index j = columns[t]; /* read before the write that may cover it */
            pairs[t] = (prox_pair){(prox_index)i, j};
        }
    }
}

/* Below this many pairs the widening's last steps run on one thread. */
#define WIDEN_SERIAL 65536

/* The buffer's upper half (the rows' entries, in output order) widened
 * into pairs over the whole buffer. Pairs [done, next) write words
 * [2 done, 2 next), which lie below the entries [total + done, total +
 * next) they read while 2 next <= total + done: so each step takes half
 * of what is left, its parts in parallel, and the last ones run in order. */
static void widen_rows(prox_pair *pairs, const int64_t *offsets, int64_t n, int64_t total,
                       int threads)
{
    int64_t done = 0;
    while (threads > 1 && total - done > WIDEN_SERIAL) {
        int64_t next = (total + done) / 2;
        int parts = PROX_PARTS_PER_THREAD * threads;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int k = 0; k < parts; k++)
            widen_range(pairs, offsets, n, total, done + (next - done) * k / parts,
                        done + (next - done) * (k + 1) / parts);
        done = next;
    }
    widen_range(pairs, offsets, n, total, done, total);
}

/* Rows staged in the buffer itself (rc, the first chunk): the buffer
 * then holds its staged entries, and room for the pairs. */
static prox_status reserve_in_output(const prox_grid *g, row_chunk *rc, prox_pair_buffer *b,
                                     int64_t total)
{
    if (!prox_grow_part(rc->allocator, (void **)&rc->entries, &rc->cap, 2 * total, rc->count,
                        rc->count, sizeof *rc->entries, g->threads))
        return prox_fail(PROX_ERR_NO_MEMORY, "pair buffer: cannot hold %lld pairs",
                         (long long)total);
    b->pairs = (prox_pair *)rc->entries;
    b->capacity = rc->cap / 2;
    return PROX_OK;
}

static prox_status reserve_rows_output(const prox_grid *g, grid_work *w, row_chunk *first,
                                       prox_sink sink, int64_t total, int64_t **offsets)
{
    if (sink.kind == PROX_SINK_LISTS) {
        prox_status st = prox_lists_reserve(sink.lists, total, g->n, g->threads);
        *offsets = sink.lists->offsets;
        return st;
    }
    sink.buffer->count = 0;
    prox_status st = first->in_output
                         ? reserve_in_output(g, first, sink.buffer, total)
                         : prox_pair_buffer_reserve_threads(sink.buffer, total, g->threads);
    if (st)
        return st;
    *offsets = prox_workspace_scratch(&w->chunks, PROX_SCRATCH_OWNER + 1,
                                      (g->n + 1) * (int64_t)sizeof **offsets);
    return *offsets ? PROX_OK : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for row offsets");
}

/* rows[0 .. count) with the entry arrays the workspace kept from its last
 * query (none the first time); false when out of memory. */
static bool take_row_chunks(const prox_grid *g, grid_work *w, row_chunk *rows, int count)
{
    if (count > w->row_chunks) {
        prox_index **entries = prox_alloc_array(&g->allocator, count, sizeof *entries);
        int64_t *cap = prox_alloc_array(&g->allocator, count, sizeof *cap);
        if (!entries || !cap) {
            prox_free(&g->allocator, entries);
            prox_free(&g->allocator, cap);
            return false;
        }
        for (int k = 0; k < count; k++) {
            entries[k] = k < w->row_chunks ? w->row_entries[k] : NULL;
            cap[k] = k < w->row_chunks ? w->row_entries_cap[k] : 0;
        }
        prox_free(&g->allocator, w->row_entries);
        prox_free(&g->allocator, w->row_entries_cap);
        w->row_entries = entries;
        w->row_entries_cap = cap;
        w->row_chunks = count;
    }
    for (int k = 0; k < count; k++)
        rows[k] = (row_chunk){.entries = w->row_entries[k], .cap = w->row_entries_cap[k],
                              .allocator = &g->allocator};
    return true;
}

/* PROX_ROWS_IN_OUTPUT: the first chunk stages its rows in the sorted
 * buffer's own storage (whatever it held is replaced). */
static void stage_in_output(const prox_grid *g, row_chunk *rows, prox_sink sink)
{
    if (g->desc.rows != PROX_ROWS_IN_OUTPUT || sink.kind != PROX_SINK_BUFFER || sink.unsorted)
        return;
    prox_pair_buffer *b = sink.buffer;
    b->count = 0;
    rows[0] = (row_chunk){.entries = (prox_index *)b->pairs,
                          .cap = b->pairs ? 2 * b->capacity : 0,
                          .allocator = &b->allocator,
                          .in_output = true,
                          .widened = true};
}

/* A split's first chunk stages its rows in what becomes its i array. */
static void stage_in_split(row_chunk *rows, const prox_grid_split *split)
{
    rows[0] = (row_chunk){.allocator = split->allocator, .in_output = true};
}

/* The chunks' entry arrays (perhaps grown) back to the workspace; one
 * staged in the output stays the output's. */
static void keep_row_chunks(grid_work *w, const row_chunk *rows, int count)
{
    for (int k = 0; k < count; k++) {
        if (rows[k].in_output)
            continue;
        w->row_entries[k] = rows[k].entries;
        w->row_entries_cap[k] = rows[k].cap;
    }
}

/* The chunks' rows (total entries, lengths in row_len by sorted position)
 * into the sink, in input order: each id's row length and place noted,
 * the offsets summed, then the rows copied. */
static prox_status deliver_rows(const prox_grid *g, grid_work *w, row_chunk *rows, int count,
                                const uint32_t *row_len, int64_t total, prox_sink sink)
{
    int64_t n = g->n, runs = g->nruns, *offsets = NULL;
    prox_status st = reserve_rows_output(g, w, &rows[0], sink, total, &offsets);
    if (st)
        return st;
    const prox_index **row_at =
        prox_workspace_scratch(&w->chunks, PROX_SCRATCH_OWNER + 2, n * (int64_t)sizeof *row_at);
    if (!row_at)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for row places");
    offsets[0] = 0;
#pragma omp parallel for num_threads(g->threads) if (count > 1) schedule(dynamic, 1)
    for (int k = 0; k < count; k++)
        index_rows_by_id(g, &rows[k], g->run_start[runs * k / count],
                         g->run_start[runs * (k + 1) / count], row_len, NULL, offsets, row_at);
    if (rows[0].in_output) /* nothing is kept: its pages go before the pairs' come */
        prox_workspace_release(&w->chunks, PROX_SCRATCH_OWNER);
    prox_prefix_sums(offsets, n, g->threads);
    /* staged in the buffer: the entries go to its upper half, past the
     * staging, then are widened into pairs (widen_rows) */
    prox_index *columns = rows[0].in_output ? rows[0].entries + total : NULL;
    if (columns)
        prox_populate(rows[0].allocator, columns, total, sizeof *columns, g->threads);
    int parts = n > 65536 ? PROX_PARTS_PER_THREAD * g->threads : 1;
#pragma omp parallel for num_threads(g->threads) if (parts > 1) schedule(dynamic, 1)
    for (int k = 0; k < parts; k++)
        place_rows(offsets, row_at, n * k / parts, n * (k + 1) / parts, sink, columns);
    if (columns)
        widen_rows(sink.buffer->pairs, offsets, n, total, g->threads);
    if (sink.kind == PROX_SINK_LISTS)
        sink.lists->rows = n;
    else
        sink.buffer->count = total;
    return PROX_OK;
}

/* A split's rows (prox_grid_split): placed as deliver_rows places a
 * list's, each row then followed by its free slots. The first chunk's
 * staging becomes the i array (grown first, as the rows' places point
 * into it), written once the rows have been read out of it. */
static void place_split_rows(const prox_grid_split *split, const int64_t *starts,
                             const prox_index *const *row_at, int64_t i0, int64_t i1,
                             prox_index *j)
{
    const uint32_t *room = split->room_start;
    for (int64_t i = i0; i < i1; i++) {
        if (i + PLACE_AHEAD < i1)
            __builtin_prefetch(row_at[i + PLACE_AHEAD]);
        const prox_index *from = row_at[i];
        prox_index *to = j + starts[i];
        int64_t slots = room ? room[i + 1] - room[i] : 0, len = starts[i + 1] - starts[i] - slots;
        for (int64_t t = 0; t < len; t++)
            to[t] = from[t];
        if (slots && split->fill_room)
            split->fill_room(split->user, (prox_index)i, to, len, slots);
    }
}

static void fill_split_rows(const int64_t *starts, int64_t i0, int64_t i1, prox_index *out)
{
    for (int64_t i = i0; i < i1; i++)
        for (int64_t t = starts[i]; t < starts[i + 1]; t++)
            out[t] = (prox_index)i;
}

static prox_status deliver_split(const prox_grid *g, grid_work *w, row_chunk *rows, int count,
                                 const uint32_t *row_len, int64_t total, prox_grid_split *split)
{
    int64_t n = g->n, runs = g->nruns;
    const uint32_t *room = split->room_start;
    int64_t out = total + (room ? (int64_t)room[n] - room[0] : 0);
    row_chunk *first = &rows[0];
    const prox_allocator *al = split->allocator;
    if (!prox_grow_part(al, (void **)&first->entries, &first->cap, out, first->count,
                        first->count, sizeof *first->entries, g->threads))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: no memory for %lld row entries",
                         (long long)out);
    int64_t *starts = prox_alloc_array(al, n + 1, sizeof *starts);
    const prox_index **row_at =
        prox_workspace_scratch(&w->chunks, PROX_SCRATCH_OWNER + 2, n * (int64_t)sizeof *row_at);
    if (!starts || !row_at) {
        prox_free(al, starts);
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: no memory for the rows of %lld points",
                         (long long)n);
    }
    starts[0] = 0;
#pragma omp parallel for num_threads(g->threads) if (count > 1) schedule(dynamic, 1)
    for (int k = 0; k < count; k++)
        index_rows_by_id(g, &rows[k], g->run_start[runs * k / count],
                         g->run_start[runs * (k + 1) / count], row_len, room, starts, row_at);
    prox_workspace_release(&w->chunks, PROX_SCRATCH_OWNER); /* row_len: its pages before j's */
    prox_prefix_sums(starts, n, g->threads);
    prox_index *j = prox_alloc_array(al, out > 0 ? out : 1, sizeof *j);
    if (!j) {
        prox_free(al, starts);
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: no memory for %lld row entries",
                         (long long)out);
    }
    prox_populate(al, j, out, sizeof *j, g->threads);
    prox_populate(al, first->entries + first->count, out - first->count, sizeof *j, g->threads);
    int parts = n > 65536 ? PROX_PARTS_PER_THREAD * g->threads : 1;
#pragma omp parallel for num_threads(g->threads) if (parts > 1) schedule(dynamic, 1)
    for (int k = 0; k < parts; k++)
        place_split_rows(split, starts, row_at, n * k / parts, n * (k + 1) / parts, j);
#pragma omp parallel for num_threads(g->threads) if (parts > 1) schedule(dynamic, 1)
    for (int k = 0; k < parts; k++)
        fill_split_rows(starts, n * k / parts, n * (k + 1) / parts, first->entries);
    split->i = first->entries;
    split->j = j;
    split->starts = starts;
    split->count = out;
    first->entries = NULL;
    first->cap = 0;
    return PROX_OK;
}

/* One chunk of the sorted rows: its runs' rows into rows[chunk]. */
typedef struct rows_job {
    const prox_grid *g;
    grid_work *w;
    const prox_strip_rows *strips; /* GRID_ROWS over strips: linear keys */
    const prox_rel16_metric *rel16; /* the runs' candidates as rel16 coordinates, or NULL */
    row_chunk *rows;
    uint32_t *row_len;
    prox_id_rule rule;
    bool sorted;
    bool gather; /* the plan's gather rule is on */
    row_dest dest;
} rows_job;

static void rows_step(const void *job, points_chunk *chunk)
{
    const rows_job *j = job;
    const prox_grid *g = j->g;
    int64_t runs = g->nruns, k = chunk->index, count = chunk->count;
    query_counters qc = counters_for(g, &g->source);
    gathered scratch = {.allocator = &g->allocator, .rel16_metric = j->rel16,
                        .gather = j->gather};
    row_chunk rc = j->rows[k]; /* a local copy: rows[] neighbours share cache lines */
    prox_grid_ran(j->w, GRID_ROWS);
    int64_t s0 = g->run_start[runs * k / count], s1 = g->run_start[runs * (k + 1) / count];
    rc.points_left = s1 - s0;
    rc.sort_s = s0;
    int64_t r0 = runs * k / count, r1 = runs * (k + 1) / count;
    if (j->dest.pass == ROWS_COUNT)
        for (int64_t r = r0; r < r1 && !rc.failed; r++)
            list_lengths_of_run(g, r, j->strips, &scratch, &rc, j->row_len, &qc);
    else
        for (int64_t r = r0; r < r1 && !rc.failed; r++)
            rows_of_run(g, r, j->strips, &scratch, &rc, j->row_len, j->rule, j->sorted,
                        &j->dest, &qc);
    if (j->sorted && !rc.failed && j->dest.pass != ROWS_COUNT)
        finish_pending_rows(g, &rc, j->row_len, s1, &j->dest);
    j->rows[k] = rc;
    gathered_free(&scratch);
    chunk->candidates += qc.candidates;
    chunk->cells_visited += qc.cells_visited;
    chunk->rechecked += qc.recheck.base.calls;
}

/* The rows staged chunk by chunk (rows_step), then placed in input order
 * (deliver_rows). */
static prox_status rows_staged_then_placed(const prox_grid *g, rows_job *job, int count,
                                           prox_sink sink, prox_grid_split *split,
                                           points_chunk *total, int64_t *entries)
{
    row_chunk *rows = job->rows;
    points_drive_steps(rows_step, job, count, g->threads, total);
    bool failed = false;
    for (int k = 0; k < count; k++) {
        failed |= rows[k].failed;
        *entries += rows[k].count;
    }
    if (rows[0].widened) { /* the buffer holds what the chunk grew */
        sink.buffer->pairs = (prox_pair *)rows[0].entries;
        sink.buffer->capacity = rows[0].cap / 2;
    }
    if (failed)
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for rows");
    return split ? deliver_split(g, job->w, rows, count, job->row_len, *entries, split)
                 : deliver_rows(g, job->w, rows, count, job->row_len, *entries, sink);
}

/* PROX_ROWS_IN_OUTPUT's sorted lists: their rows counted by a first pass,
 * then written straight to their places, a sorted batch at a time: no
 * staging of the whole output. */
static bool lists_direct(const prox_grid *g, prox_sink sink)
{
    return g->desc.rows == PROX_ROWS_IN_OUTPUT && sink.kind == PROX_SINK_LISTS && !sink.unsorted;
}

/* ROWS_COUNT's lengths (by sorted position) as the lists' offsets. */
static void offsets_from_lengths(const prox_grid *g, const uint32_t *row_len, int64_t *offsets)
{
    int64_t n = g->n;
    offsets[0] = 0;
#pragma omp parallel for num_threads(g->threads) if (n > 65536) schedule(static)
    for (int64_t s = 0; s < n; s++)
        offsets[g->id[s] + 1] = row_len[s];
    prox_prefix_sums(offsets, n, g->threads);
}

static prox_status rows_counted_then_placed(const prox_grid *g, rows_job *job, int count,
                                            prox_sink sink, points_chunk *total,
                                            int64_t *entries)
{
    row_chunk *rows = job->rows;
    job->dest = (row_dest){.pass = ROWS_COUNT};
    points_chunk counted;
    points_drive_steps(rows_step, job, count, g->threads, &counted);
    bool failed = false;
    for (int k = 0; k < count; k++) {
        failed |= rows[k].failed;
        *entries += rows[k].counted;
    }
    prox_lists *l = sink.lists;
    prox_status st = failed ? prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for rows")
                            : prox_lists_reserve(l, *entries, g->n, g->threads);
    if (st)
        return st;
    offsets_from_lengths(g, job->row_len, l->offsets);
    job->dest = (row_dest){.pass = ROWS_DIRECT, .offsets = l->offsets, .indices = l->indices};
    for (int k = 0; k < count; k++)
        rows[k] = (row_chunk){.entries = rows[k].entries, .cap = rows[k].cap,
                              .allocator = rows[k].allocator, .sized = true};
    points_drive_steps(rows_step, job, count, g->threads, total);
    total->candidates += counted.candidates; /* both passes' tests */
    total->rechecked += counted.rechecked;
    for (int k = 0; k < count; k++)
        if (rows[k].disagreed)
            return prox_fail(PROX_ERR_DATA, "grid: a list's row differs from its count "
                                            "(a bug in prox: please report it)");
    for (int k = 0; k < count; k++)
        if (rows[k].failed)
            return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for rows");
    l->rows = g->n;
    return PROX_OK;
}

/* GRID_ROWS: each point's full row, chunk by chunk, staged or counted
 * first, then in input order into the sink, or into `split` (not NULL). */
static prox_status grid_rows(const prox_grid *g, grid_work *w, prox_sink sink,
                             prox_grid_split *split, prox_stats *stats, grid_plan plan)
{
    assert(plan.traversal == GRID_ROWS);
    int count = prox_chunk_count(sink, g->threads, g->n);
    row_chunk *rows = prox_alloc_array(&g->allocator, count, sizeof *rows);
    if (rows && !take_row_chunks(g, w, rows, count)) {
        prox_free(&g->allocator, rows);
        rows = NULL;
    }
    if (rows && split)
        stage_in_split(rows, split);
    else if (rows)
        stage_in_output(g, rows, sink);
    uint32_t *row_len = prox_workspace_scratch(&w->chunks, PROX_SCRATCH_OWNER,
                                               g->n * (int64_t)sizeof(uint32_t));
    bool lists = split ? split->full : sink.kind == PROX_SINK_LISTS;
    bool failed = !rows || !row_len;
    prox_strip_rows strip_rows;
    if (plan.strips)
        prox_grid_strip_rows(g, false, &strip_rows);
    rows_job job = {g, w, plan.strips ? &strip_rows : NULL, plan.rel16 ? &plan.rel16_metric : NULL,
                    rows, row_len, lists ? PROX_IDS_OTHER : PROX_IDS_ABOVE, !sink.unsorted,
                    plan.gather, {.pass = ROWS_STAGE}};
    points_chunk total = {0};
    int64_t entries = 0;
    prox_status st = PROX_OK;
    if (failed)
        st = prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for rows");
    else if (!split && lists_direct(g, sink))
        st = rows_counted_then_placed(g, &job, count, sink, &total, &entries);
    else
        st = rows_staged_then_placed(g, &job, count, sink, split, &total, &entries);
    if (rows && split) /* a staging that did not become the output */
        prox_free(split->allocator, rows[0].entries);
    if (rows)
        keep_row_chunks(w, rows, count);
    prox_free(&g->allocator, rows);
    prox_grid_search_stats(g, stats, lists ? entries / 2 : entries, &total,
                           prox_grid_method(g, plan));
    return st;
}

static prox_status check_query_ready(const prox_grid *g, prox_sink sink)
{
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "grid is NULL");
    if (!g->built)
        return prox_fail(PROX_ERR_INVALID, "the grid is not built: call prox_grid_build first");
    return prox_sink_check(sink);
}

/* GRID_CELLS: each run against the stencil's cells, gathered. */
typedef struct cells_job {
    const prox_grid *g;
    grid_work *w;
} cells_job;

static void cells_step(const void *job, points_chunk *chunk)
{
    const cells_job *j = job;
    const prox_grid *g = j->g;
    query_counters qc = counters_for(g, &g->source);
    prox_emitter *e = chunk->emitter;
    gathered scratch = {.allocator = &g->allocator};
    prox_grid_ran(j->w, GRID_CELLS);
    int64_t runs = g->nruns, r1 = runs * (chunk->index + 1) / chunk->count;
    for (int64_t r = runs * chunk->index / chunk->count; r < r1 && !e->stop; r++)
        pairs_of_run(g, r, &scratch, e, &qc);
    gathered_free(&scratch);
    chunk->candidates += qc.candidates;
    chunk->cells_visited += qc.cells_visited;
}

static prox_status cell_pairs(const prox_grid *g, grid_work *w, prox_sink sink,
                              prox_stats *stats, grid_plan plan)
{
    assert(plan.traversal == GRID_CELLS);
    cells_job job = {g, w};
    points_drive d = {.step = cells_step, .job = &job, .threads = g->threads, .work = g->n,
                      .rows = g->n, .symmetric = true, .workspace = &w->chunks,
                      .method = prox_grid_method(g, plan)};
    return prox_grid_drive(g, &d, sink, stats);
}

/* What every query ends with: PROX_ROWS_IN_OUTPUT keeps nothing, and the
 * fresh bytes since the last query are reported (from then on counted
 * afresh). */
static prox_status query_done(prox_grid *g, prox_status st, prox_stats *stats)
{
    if (g->desc.rows == PROX_ROWS_IN_OUTPUT)
        prox_grid_free_kept(g);
    int64_t now = prox_fresh_bytes();
    if (stats) {
        if (g->desc.rows == PROX_ROWS_IN_OUTPUT)
            stats->kept_bytes = 0;
        stats->fresh_bytes = now - g->fresh_mark;
        stats->huge_pages = prox_huge_pages();
    }
    g->fresh_mark = now;
    return st;
}

static prox_status grid_pairs_planned(prox_grid *g, prox_sink sink, prox_stats *stats)
{
    grid_plan plan = prox_grid_plan_pairs(g, sink);
    grid_work *w = &g->work;
    switch (plan.traversal) {
    case GRID_FILL: {
        bool done;
        prox_status st = prox_grid_fill_rows(g, w, sink, stats, plan, &done);
        return done ? st : grid_rows(g, w, sink, NULL, stats, prox_grid_rows_plan(g));
    }
    case GRID_ROWS:
        return grid_rows(g, w, sink, NULL, stats, plan);
    case GRID_SWEEP:
    case GRID_STRIPS:
        return prox_grid_strip_pairs(g, w, sink, stats, plan);
    default:
        return cell_pairs(g, w, sink, stats, plan);
    }
}

prox_status prox_grid_pairs(prox_grid *g, prox_sink sink, prox_stats *stats)
{
    prox_status st = check_query_ready(g, sink);
    if (st)
        return st;
    return query_done(g, grid_pairs_planned(g, sink, stats), stats);
}

prox_status prox_grid_pairs_split(prox_grid *g, prox_grid_split *split, prox_stats *stats)
{
    if (!split)
        return prox_fail(PROX_ERR_INVALID, "grid: the split output is NULL");
    split->i = split->j = NULL;
    split->starts = NULL;
    split->count = 0;
    if (!g)
        return prox_fail(PROX_ERR_INVALID, "grid is NULL");
    if (!g->built)
        return prox_fail(PROX_ERR_INVALID, "the grid is not built: call prox_grid_build first");
    prox_sink none = {.kind = PROX_SINK_BUFFER}; /* the split holds the output */
    prox_status st = grid_rows(g, &g->work, none, split, stats, prox_grid_rows_plan(g));
    return query_done(g, st, stats);
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
        if (g->periodic[k]) { /* a NaN (a query changed since its check) to 0 */
            base[k] = !(u >= 0) ? 0 : u > (double)(g->ncell[k] - 1) ? g->ncell[k] - 1 : (int64_t)u;
            continue;
        }
        if (!(u >= (double)-g->reach[k] && u <= (double)(g->ncell[k] - 1 + g->reach[k])))
            return false;
        base[k] = (int64_t)u;
    }
    return true;
}

/* A query point: in double (wrapped), and in fixed point when the grid
 * keeps fixed-point coordinates. */
typedef struct query_at {
    double p[3];
    int32_t fixed[3];
} query_at;

/* Hits of query q in the sorted points [j0, j1). */
static void query_range(const prox_grid *g, prox_index q, const query_at *at, int64_t j0,
                        int64_t j1, uint32_t *hits, prox_emitter *e, query_counters *qc)
{
    qc->candidates += j1 - j0;
    bool count_only = e->kind == PROX_SINK_COUNT;
    int64_t count;
    if (g->fixed_on) {
        prox_fixed_block b = fixed_block(g);
        prox_recheck *rc = &qc->recheck.base;
        qc->recheck.query = q;
        qc->recheck.query_pos = -1; /* not the grid's: its fixed point given */
        qc->recheck.query_fixed = at->fixed;
        count = count_only ? prox_fixed_count(&b, j0, j1, at->fixed, &g->fixed_metric, rc)
                           : prox_fixed_hits(&b, j0, j1, at->fixed, &g->fixed_metric, rc, hits);
    } else {
        prox_block b = grid_block(g);
        count = count_only ? prox_kernel_count(&b, j0, j1, at->p, &g->metric)
                           : prox_kernel_hits(&b, j0, j1, at->p, &g->metric, hits);
    }
    if (count_only) {
        e->count += count;
        return;
    }
    for (int64_t t = 0; t < count && !e->stop; t++)
        prox_emit(e, q, g->id[hits[t]]);
}

static void query_point(const prox_grid *g, const prox_strip_rows *strips, prox_index q,
                        query_at *at, uint32_t *hits, prox_emitter *e, query_counters *qc)
{
    int64_t base[3];
    if (!query_base_cell(g, at->p, base))
        return;
    if (g->fixed_on) /* within the reach of the grid's cells: in fixed point's range */
        prox_grid_fixed_of(g, at->p, at->fixed);
    if (strips) { /* linear keys: the stencil's rows as ranges */
        prox_range rg[PROX_STRIP_MAX_RANGES];
        int count = prox_grid_strip_ranges_around(g, strips, base, rg, &qc->cells_visited);
        for (int k = 0; k < count && !e->stop; k++)
            query_range(g, q, at, rg[k].begin, rg[k].end, hits, e, qc);
        return;
    }
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
            query_range(g, q, at, g->run_start[s], g->run_start[s + 1], hits, e, qc);
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

/* One chunk of the ball queries: its query points, in input order. */
typedef struct query_job {
    const prox_grid *g;
    grid_work *w;
    const prox_points *queries;
    const prox_strip_rows *strips; /* GRID_QUERY_STRIPS, else NULL */
    int64_t most;                  /* the most points one kernel call meets */
} query_job;

static void query_step(const void *job, points_chunk *chunk)
{
    const query_job *j = job;
    const prox_grid *g = j->g;
    query_counters qc = counters_for(g, j->queries);
    prox_emitter *e = chunk->emitter;
    prox_grid_ran(j->w, j->strips ? GRID_QUERY_STRIPS : GRID_QUERY_CELLS);
    uint32_t *hits = prox_alloc_array(&g->allocator, j->most + PROX_KERNEL_SLACK, sizeof *hits);
    if (!hits)
        e->stop = e->failed = true;
    int64_t nq = j->queries->count, q1 = nq * (chunk->index + 1) / chunk->count;
    for (int64_t q = nq * chunk->index / chunk->count; q < q1 && !e->stop; q++) {
        query_at at = {{0, 0, 0}, {0, 0, 0}};
        for (int a = 0; a < g->dim; a++)
            at.p[a] = prox_coord(j->queries, q, a, g->desc.period);
        query_point(g, j->strips, (prox_index)q, &at, hits, e, &qc);
    }
    prox_free(&g->allocator, hits);
    chunk->candidates += qc.candidates;
    chunk->cells_visited += qc.cells_visited;
    chunk->rechecked += qc.recheck.base.calls;
}

prox_status prox_grid_query(prox_grid *g, const prox_points *queries, prox_sink sink,
                            prox_stats *stats)
{
    prox_status st = check_query_ready(g, sink);
    if (!st)
        st = check_queries(g, queries);
    if (st)
        return st;
    grid_plan plan = prox_grid_plan_query(g);
    prox_strip_rows strip_rows;
    if (plan.strips)
        prox_grid_strip_rows(g, false, &strip_rows);
    /* the most points one kernel call meets: a run, or a strip of runs */
    int64_t most = plan.strips ? (2 * (int64_t)g->reach[0] + 1) * g->max_run : g->max_run;
    query_job job = {g, &g->work, queries, plan.strips ? &strip_rows : NULL, most};
    points_drive d = {.step = query_step, .job = &job, .threads = g->threads,
                      .work = queries->count, .rows = queries->count, .symmetric = false,
                      .workspace = &g->work.chunks, .method = prox_grid_method(g, plan)};
    return query_done(g, prox_grid_drive(g, &d, sink, stats), stats);
}
