/* grid_fill.c: the sorted pair buffer and full lists, counted first, then
 * written row by row into the caller's output, with no staging of rows.
 *
 * Each pair is found once, by the forward half of the stencil (the hash-multimap article: each pair once),
 * in two passes over the points in cell order:
 *   1. the count: every row's length (the buffer's row of i holds the
 *      neighbours j > i; a list row holds every neighbour), turned into
 *      row starts in input order by prefix sums;
 *   2. the fill: each row is written once, sorted, to its place.
 * A pair (a, b) turns up while sorted point a is visited, b lying ahead in
 * cell order. An entry of a's own row ("up") goes into the row a is
 * finishing; one of b's row ("down") waits in a ring, in cell order, until
 * b is visited. Visiting a therefore completes a's row: every down it
 * receives came from points visited before it. The ring only spans the
 * points the forward stencil reaches ahead (a slab of cells), so it stays
 * in cache; each finished row is written once to the output, in batches
 * (flush_rows), as the staged rows were.
 *
 * Beyond the output this holds 6 bytes and a bit per point for the buffer:
 * the row lengths, then starts (32 bits), and each point's downs (16 bits);
 * plus the rings. Lists keep their lengths in their own offsets (output),
 * so 2 bytes and a bit. The output must hold fewer than 2^31 entries and no point may
 * take 65,535 downs or more; beyond that (*done false) the caller stages
 * rows instead.
 *
 * Each thread takes one contiguous chunk of runs. A down whose row is not ahead of
 * the writer in its own chunk (another chunk's, or one behind across a
 * periodic wrap) is set aside; its row is marked late, written unsorted
 * when visited, and completed and sorted after the parallel part. Every
 * row ends sorted, so the output is the same for every thread count. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/grid_private.h"
#include "simd/kernel.h"
#include "core/pair_sink.h"
#include "core/radix_sort.h"

#define FETCH_MARGIN 16   /* cursors prepared beyond the farthest forward range */
#define PREFETCH_ROWS 8   /* output rows fetched this many rows ahead */
#define ROWS_HELD 4096    /* entries of finished rows held before they are written */
#define MAX_DOWNS 0xffffu /* a point's downs, 16 bits */
#define MAX_ENTRIES INT32_MAX /* row starts, 31 bits */

typedef struct fill_job {
    const prox_grid *g;
    grid_work *w;           /* the query's: scratch, and each chunk's arrays */
    const grid_plan *plan;  /* its gather rule (grid_plan_gathers) */
    bool lists;
    const prox_strip_rows *rows;
    uint32_t *word;         /* the buffer's, per sorted point: row length, then row start */
    int64_t *offsets;       /* the lists' row offsets by input index (output): lengths first */
    uint16_t *downs;        /* per sorted point: downs it takes in its chunk */
    uint32_t max_downs;     /* limits (prox_grid_set_fill_limits) */
    int64_t max_entries;
    uint64_t *late;         /* per sorted point: it takes set-aside downs (NULL: none do) */
    prox_pair *pairs;       /* the buffer's output */
    prox_index *indices;    /* the lists' output */
    int64_t cursor_ring;    /* ring sizes: exactly what the fill holds at most */
    uint32_t pending_ring;
    struct fill_chunk *chunks; /* the pass under way (visit_chunks) */
    bool filling;
} fill_job;

typedef struct fill_chunk {
    int64_t r0, r1, p0, p1; /* runs, and their sorted points */
    prox_fill_arrays a;     /* the grid's, taken for the query */
    int64_t aside_count;    /* count: b each; fill: b, then the entry */
    int64_t late_count;     /* fill: b, then its row's start */
    int64_t row_count, placed_count; /* fill: finished rows held */
    int64_t at, at_slot;    /* fill: the point visited, and its slot in the cursor ring */
    int64_t entries;        /* count: the entries the chunk's rows take */
    int64_t reach;          /* count: the most points from a run to its farthest range */
    int64_t candidates, cells, rechecked;
    bool failed, too_many_downs;
} fill_chunk;

static bool reserve_u32(const prox_grid *g, uint32_t **p, int64_t *cap, int64_t need)
{
    return need <= *cap || prox_reserve(&g->allocator, (void **)p, cap, need, sizeof **p);
}

/* Room for `need` hits, split either way. */
static bool reserve_hits(const prox_grid *g, prox_fill_arrays *a, int64_t need)
{
    if (need <= a->hits_cap)
        return true;
    uint32_t **arrays[] = {&a->hits, &a->ups, &a->downs};
    int64_t cap = 0;
    for (int k = 0; k < 3; k++) {
        cap = a->hits_cap;
        if (!prox_reserve(&g->allocator, (void **)arrays[k], &cap, 2 * need, sizeof(uint32_t))) {
            for (int m = 0; m < 3; m++) { /* all or none: one capacity for the three */
                prox_free(&g->allocator, *arrays[m]);
                *arrays[m] = NULL;
            }
            a->hits_cap = 0;
            return false;
        }
    }
    a->hits_cap = cap;
    return true;
}

/* Append `count` words to a growing list of the chunk. */
static void append(const prox_grid *g, fill_chunk *c, uint32_t **list, int64_t *cap,
                   int64_t *used, uint32_t w0, uint32_t w1, int count)
{
    if (*used + count > *cap && !prox_grow(&g->allocator, (void **)list, cap, *used + count,
                                           *used, sizeof **list)) {
        c->failed = true;
        return;
    }
    (*list)[(*used)++] = w0;
    if (count == 2)
        (*list)[(*used)++] = w1;
}

/* A down may wait in the ring when its row is still ahead in the chunk. */
static inline bool direct(const fill_chunk *c, int64_t a, uint32_t b)
{
    return b > a && b < c->p1;
}

static int64_t farthest_end(const prox_range *rg, int count)
{
    int64_t far = 0;
    for (int k = 0; k < count; k++)
        far = rg[k].end > far ? rg[k].end : far;
    return far;
}

/* ---- pass 1: the count --------------------------------------------------- */

static void count_point(const fill_job *j, fill_chunk *c, int64_t a, int64_t ups, int64_t downs)
{
    if (j->lists) /* the downs are added in count_aside */
        j->offsets[j->g->id[a] + 1] = ups;
    else
        j->word[a] = (uint32_t)ups;
    for (int64_t t = 0; t < downs; t++) {
        uint32_t b = c->a.downs[t];
        if (direct(c, a, b)) {
            c->too_many_downs |= ++j->downs[b] == j->max_downs;
        } else {
            append(j->g, c, &c->a.aside, &c->a.aside_cap, &c->aside_count, b, 0, 1);
        }
    }
    c->entries += ups + downs;
}

/* ---- pass 2: the fill ------------------------------------------------------ */

/* The cursor ring holds the points [at, at + cursor_ring): the one visited
 * and those the forward ranges reach beyond it. */
static inline uint32_t *cursor_of(const fill_job *j, fill_chunk *c, int64_t s)
{
    int64_t slot = c->at_slot + (s - c->at);
    return &c->a.cursor[slot >= j->cursor_ring ? slot - j->cursor_ring : slot];
}

static void visit_point(const fill_job *j, fill_chunk *c, int64_t a)
{
    c->at_slot = (c->at_slot + (a - c->at)) % j->cursor_ring;
    c->at = a;
}

/* Where sorted point a's row starts in the output. */
static inline uint32_t row_start(const fill_job *j, int64_t a)
{
    return j->lists ? (uint32_t)j->offsets[j->g->id[a]] : j->word[a];
}

/* A late row's write cursor, for the entries set aside for it: the
 * buffer's word; for a list row, its own last slot, which the set-aside
 * entries reach last (a late row takes one at least). */
static inline void set_late_cursor(const fill_job *j, int64_t a, uint32_t cursor)
{
    if (j->lists)
        j->indices[j->offsets[j->g->id[a] + 1] - 1] = cursor;
    else
        j->word[a] = cursor;
}

/* One set-aside entry into late row b, at its cursor. */
static inline void put_aside(const fill_job *j, uint32_t b, uint32_t entry)
{
    prox_index self = j->g->id[b];
    if (!j->lists) {
        j->pairs[j->word[b]++] = (prox_pair){self, entry};
        return;
    }
    uint32_t last = (uint32_t)j->offsets[self + 1] - 1, at = j->indices[last];
    j->indices[at] = entry; /* the last one overwrites the cursor */
    if (at < last)
        j->indices[last] = at + 1;
}

/* Row `self` (`len` entries in row[]) into the output at `start`. */
static void write_row(const fill_job *j, prox_index self, const uint32_t *row, int64_t len,
                      uint32_t start)
{
    if (j->lists) {
        memcpy(j->indices + start, row, (size_t)len * sizeof *row);
        return;
    }
    prox_pair *to = j->pairs + start;
    for (int64_t t = 0; t < len; t++)
        to[t] = (prox_pair){self, row[t]};
}

/* The finished rows held in the chunk, written to their places in the
 * output back to back: each is a random place, and a write that misses the
 * cache holds up every store after it; written together, their misses
 * overlap (as in grid_search.c's place_rows). */
static void flush_rows(const fill_job *j, fill_chunk *c)
{
    const uint32_t *from = c->a.row, *placed = c->a.placed;
    for (int64_t k = 0; k < c->placed_count; k += 3) {
        if (k + 3 * PREFETCH_ROWS < c->placed_count) {
            uint32_t ahead = placed[k + 3 * PREFETCH_ROWS + 1];
            __builtin_prefetch(j->lists ? (const void *)(j->indices + ahead)
                                        : (const void *)(j->pairs + ahead), 1);
        }
        write_row(j, placed[k], from, placed[k + 2], placed[k + 1]);
        from += placed[k + 2];
    }
    c->placed_count = 0;
    c->row_count = 0;
}

/* Room for a row of `len` more entries among the held ones: flushed first
 * when full. */
static bool room_for_row(const fill_job *j, fill_chunk *c, int64_t len)
{
    if (c->row_count + len > c->a.row_cap || c->placed_count + 3 > c->a.placed_cap)
        flush_rows(j, c);
    return reserve_u32(j->g, &c->a.row, &c->a.row_cap, len > ROWS_HELD ? len : ROWS_HELD) &&
           reserve_u32(j->g, &c->a.placed, &c->a.placed_cap, 3 * 1024);
}

/* a's row: its downs from the ring, then its ups; sorted unless the row
 * is late (more entries come after the parallel part), and held for the
 * output. */
static void finish_row(const fill_job *j, fill_chunk *c, int64_t a, int64_t ups)
{
    int64_t downs = j->downs[a];
    int64_t len = downs + ups;
    bool late = j->late && j->late[a >> 6] >> (a & 63) & 1;
    if (len == 0 && !late)
        return;
    if (!room_for_row(j, c, len)) {
        c->failed = true;
        return;
    }
    uint32_t *row = c->a.row + c->row_count;
    uint32_t ring = j->pending_ring, end = *cursor_of(j, c, a);
    uint32_t at = end >= downs ? end - (uint32_t)downs : end + ring - (uint32_t)downs;
    for (int64_t t = 0; t < downs; t++) {
        row[t] = c->a.pending[at];
        at = at + 1 == ring ? 0 : at + 1;
    }
    for (int64_t t = 0; t < ups; t++)
        row[downs + t] = c->a.ups[t];
    if (!late)
        prox_sort_u32(row, len);
    uint32_t start = row_start(j, a);
    uint32_t *placed = c->a.placed + c->placed_count;
    placed[0] = j->g->id[a];
    placed[1] = start;
    placed[2] = (uint32_t)len;
    c->placed_count += 3;
    c->row_count += len;
    if (late) {
        append(j->g, c, &c->a.late, &c->a.late_cap, &c->late_count, (uint32_t)a, start, 2);
        set_late_cursor(j, a, start + (uint32_t)len);
    }
}

static void fill_point(const fill_job *j, fill_chunk *c, int64_t a, int64_t ups, int64_t downs)
{
    prox_index self = j->g->id[a];
    uint32_t ring = j->pending_ring;
    for (int64_t t = 0; t < downs; t++) {
        uint32_t b = c->a.downs[t];
        if (direct(c, a, b)) {
            uint32_t *at = cursor_of(j, c, b);
            c->a.pending[*at] = self;
            *at = *at + 1 == ring ? 0 : *at + 1;
        } else {
            append(j->g, c, &c->a.aside, &c->a.aside_cap, &c->aside_count, b, self, 2);
        }
    }
    finish_row(j, c, a, ups);
}

/* Cursors of the points [*ahead, upto): where each one's downs begin in
 * the ring, the running sum of the downs before it in the chunk (modulo
 * the ring, which holds any point's downs). */
static void prepare_cursors(const fill_job *j, fill_chunk *c, int64_t *ahead, uint32_t *sum,
                            int64_t upto)
{
    for (int64_t s = *ahead; s < upto; s++) {
        *cursor_of(j, c, s) = *sum;
        *sum += j->downs[s];
        *sum -= *sum >= j->pending_ring ? j->pending_ring : 0;
    }
    *ahead = upto > *ahead ? upto : *ahead;
}

/* ---- the passes over the runs ---------------------------------------------- */

static void visit_chunk(const fill_job *j, fill_chunk *c, bool fill)
{
    const prox_grid *g = j->g;
    grid_recheck rc;
    prox_grid_recheck_init(&rc, g, &g->source);
    c->aside_count = 0;
    c->late_count = 0;
    c->row_count = c->placed_count = 0;
    if (!fill)
        memset(j->downs + c->p0, 0, (size_t)(c->p1 - c->p0) * sizeof *j->downs);
    int64_t ahead = c->p0; /* fill: cursors ready for [p0, ahead) */
    uint32_t sum = 0;
    c->at = c->p0;
    c->at_slot = 0;
    for (int64_t r = c->r0; r < c->r1 && !c->failed; r++) {
        prox_range rg[PROX_STRIP_MAX_RANGES];
        int64_t cells = 0;
        int count = prox_grid_half_ranges(g, j->rows, r, rg, &cells);
        int64_t own = g->run_start[r], own_end = g->run_start[r + 1];
        int64_t others = prox_ranges_length(rg + 1, count - 1);
        int64_t far = farthest_end(rg, count) + FETCH_MARGIN;
        far = far < c->p1 ? far : c->p1;
        if (!reserve_hits(g, &c->a, rg[0].end - rg[0].begin + others + PROX_KERNEL_SLACK)) {
            c->failed = true;
            break;
        }
        if (fill) {
            c->cells += cells;
            visit_point(j, c, own);
            prepare_cursors(j, c, &ahead, &sum, far);
        } else {
            c->reach = far - own > c->reach ? far - own : c->reach;
        }
        const prox_fixed_gather *block = NULL;
        if (grid_plan_gathers(j->plan, own_end - own, rg[0].end - rg[0].begin + others)) {
            if (!prox_fixed_gather_ranges(g, rg, count, true, &c->a.gather)) {
                c->failed = true;
                break;
            }
            block = &c->a.gather;
        }
        for (int64_t a = own; a < own_end; a++) {
            int64_t ups, downs;
            prox_grid_point_split(g, a, rg, count, block, &rc, j->lists, c->a.hits,
                                  fill ? c->a.ups : NULL, c->a.downs, &ups, &downs);
            if (j->lists && a + PREFETCH_AHEAD < c->p1) /* offsets by input index */
                __builtin_prefetch(&j->offsets[g->id[a + PREFETCH_AHEAD]], 1);
            if (!fill) {
                count_point(j, c, a, ups, downs);
                continue;
            }
            c->candidates += rg[0].end - (a + 1) + others;
            visit_point(j, c, a);
            fill_point(j, c, a, ups, downs);
        }
    }
    if (fill) {
        flush_rows(j, c);
        c->rechecked += rc.base.calls;
    }
}

static void fill_step(const void *job, points_chunk *chunk)
{
    const fill_job *j = job;
    fill_chunk c = j->chunks[chunk->index]; /* a local copy: chunks[] neighbours share cache lines */
    visit_chunk(j, &c, j->filling);
    j->chunks[chunk->index] = c;
}

/* One pass over every chunk, through the chunk driver. */
static void visit_chunks(fill_job *j, fill_chunk *chunks, int count, bool fill)
{
    points_chunk unused;
    j->chunks = chunks;
    j->filling = fill;
    points_drive_steps(fill_step, j, count, j->g->threads, &unused);
}

/* ---- between the passes ----------------------------------------------------- */

/* Row lengths: each point's ups, its downs in the chunk and the downs set
 * aside for it; the rows taking those marked late (a bit per point, only
 * when there are such rows). */
static bool count_aside(fill_job *j, fill_chunk *chunks, int count)
{
    int64_t n = j->g->n;
    const prox_index *id = j->g->id;
#pragma omp parallel for num_threads(j->g->threads) if (j->g->threads > 1 && n > 65536) \
    schedule(static)
    for (int64_t s = 0; s < n; s++) {
        if (j->lists)
            j->offsets[id[s] + 1] += j->downs[s];
        else
            j->word[s] += j->downs[s];
    }
    int64_t aside = 0;
    for (int k = 0; k < count; k++)
        aside += chunks[k].aside_count;
    j->late = NULL;
    if (aside == 0)
        return true;
    int64_t words = (n + 63) / 64;
    j->late = prox_workspace_scratch(&j->w->chunks, PROX_SCRATCH_OWNER + 2,
                                     words * (int64_t)sizeof *j->late);
    if (!j->late)
        return false;
    memset(j->late, 0, (size_t)words * sizeof *j->late);
    for (int k = 0; k < count; k++)
        for (int64_t t = 0; t < chunks[k].aside_count; t++) {
            uint32_t b = chunks[k].a.aside[t];
            if (j->lists)
                j->offsets[id[b] + 1]++;
            else
                j->word[b]++;
            j->late[b >> 6] |= 1ull << (b & 63);
        }
    return true;
}

/* Ring sizes: cursors for the most points a run reaches ahead; pending
 * entries for the most downs any that many consecutive points of a chunk
 * take (the window the fill holds). */
static bool size_rings(fill_job *j, fill_chunk *chunks, int count)
{
    int64_t reach = 0;
    for (int k = 0; k < count; k++)
        reach = chunks[k].reach > reach ? chunks[k].reach : reach;
    j->cursor_ring = reach + 1;
    int64_t most = 0, w = reach + 1;
    for (int k = 0; k < count; k++) {
        int64_t window = 0;
        for (int64_t s = chunks[k].p0; s < chunks[k].p1; s++) {
            window += j->downs[s];
            if (s - w >= chunks[k].p0)
                window -= j->downs[s - w];
            most = window > most ? window : most;
        }
    }
    j->pending_ring = (uint32_t)most + 1; /* most < 2^31: it is a sum of entries */
    for (int k = 0; k < count; k++)
        if (!reserve_u32(j->g, &chunks[k].a.cursor, &chunks[k].a.cursor_cap, j->cursor_ring) ||
            !reserve_u32(j->g, &chunks[k].a.pending, &chunks[k].a.pending_cap, j->pending_ring))
            return false;
    return true;
}

/* Row lengths (by sorted point) to row starts, through offsets by input
 * index: offsets[id + 1] = length, prefix sums, gathered back. */
static void lengths_to_starts(const fill_job *j, int64_t *offsets)
{
    const prox_grid *g = j->g;
    int64_t n = g->n;
    offsets[0] = 0;
    if (j->lists) { /* the lengths are there already, by input index */
        prox_prefix_sums(offsets, n, g->threads);
        return;
    }
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) schedule(static)
    for (int64_t s = 0; s < n; s++)
        offsets[g->id[s] + 1] = j->word[s];
    prox_prefix_sums(offsets, n, g->threads);
#pragma omp parallel for num_threads(g->threads) if (g->threads > 1 && n > 65536) schedule(static)
    for (int64_t s = 0; s < n; s++)
        j->word[s] = (uint32_t)offsets[g->id[s]];
}

/* Sort the output's row of `self` at [start, end) in place. */
static bool sort_output_row(const fill_job *j, fill_chunk *c, prox_index self, uint32_t start,
                            uint32_t end)
{
    int64_t len = end - start;
    if (j->lists) {
        prox_sort_u32(j->indices + start, len);
        return true;
    }
    if (!reserve_u32(j->g, &c->a.row, &c->a.row_cap, len + 1))
        return false;
    for (int64_t t = 0; t < len; t++)
        c->a.row[t] = j->pairs[start + t].j;
    prox_sort_u32(c->a.row, len);
    write_row(j, self, c->a.row, len, start);
    return true;
}

/* The fill's set-aside downs written, then the late rows sorted. */
static bool finish_late_rows(const fill_job *j, fill_chunk *chunks, int count)
{
    for (int k = 0; k < count; k++)
        for (int64_t t = 0; t < chunks[k].aside_count; t += 2) {
            put_aside(j, chunks[k].a.aside[t], chunks[k].a.aside[t + 1]);
        }
    for (int k = 0; k < count; k++)
        for (int64_t t = 0; t < chunks[k].late_count; t += 2) {
            uint32_t b = chunks[k].a.late[t], start = chunks[k].a.late[t + 1];
            prox_index self = j->g->id[b];
            uint32_t end = j->lists ? (uint32_t)j->offsets[self + 1] : j->word[b];
            if (!sort_output_row(j, &chunks[0], self, start, end))
                return false;
        }
    return true;
}

/* ---- the query -------------------------------------------------------------- */

static prox_status reserve_output(const fill_job *j, prox_sink sink, int64_t total,
                                  int64_t **offsets)
{
    const prox_grid *g = j->g;
    int64_t n = g->n;
    if (j->lists) {
        prox_status st = prox_lists_reserve(sink.lists, total, n, g->threads);
        *offsets = sink.lists->offsets;
        return st;
    }
    sink.buffer->count = 0;
    prox_status st = prox_pair_buffer_reserve_threads(sink.buffer, total, g->threads);
    if (st)
        return st;
    /* the offsets by input index live in the output while it is that
     * large (the rows overwrite them later); else in scratch */
    *offsets = total >= n + 1 ? (int64_t *)sink.buffer->pairs
                              : prox_workspace_scratch(&j->w->chunks, PROX_SCRATCH_OWNER + 3,
                                                       (n + 1) * (int64_t)sizeof **offsets);
    return *offsets ? PROX_OK : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for row offsets");
}

/* The chunks' arrays back to the workspace (perhaps grown), for the next
 * query. */
static void free_chunks(const prox_grid *g, grid_work *w, fill_chunk *chunks, int count)
{
    for (int k = 0; chunks && k < count; k++)
        w->fill[k] = chunks[k].a;
    prox_free(&g->allocator, chunks);
}

/* `count` chunks of runs, with the arrays the workspace kept (grown to
 * `count` sets the first time). */
static fill_chunk *make_chunks(const prox_grid *g, grid_work *w, int count)
{
    if (count > w->fill_chunks) {
        prox_fill_arrays *grown = prox_alloc_array(&g->allocator, count, sizeof *grown);
        if (!grown)
            return NULL;
        for (int k = 0; k < count; k++)
            grown[k] = k < w->fill_chunks ? w->fill[k] : (prox_fill_arrays){0};
        prox_free(&g->allocator, w->fill);
        w->fill = grown;
        w->fill_chunks = count;
    }
    fill_chunk *chunks = prox_alloc_array(&g->allocator, count, sizeof *chunks);
    for (int k = 0; chunks && k < count; k++) {
        int64_t r0 = g->nruns * k / count, r1 = g->nruns * (k + 1) / count;
        chunks[k] = (fill_chunk){.r0 = r0, .r1 = r1, .p0 = g->run_start[r0],
                                 .p1 = g->run_start[r1], .a = w->fill[k]};
    }
    return chunks;
}

static bool chunks_failed(const fill_chunk *chunks, int count, bool *too_many_downs)
{
    bool failed = false;
    for (int k = 0; k < count; k++) {
        failed |= chunks[k].failed;
        *too_many_downs |= chunks[k].too_many_downs;
    }
    return failed;
}

/* Both passes, the output reserved between them; *total gets the entries.
 * *done false: too large an output or too many downs on a point, nothing
 * written. */
static prox_status count_then_fill(fill_job *j, fill_chunk *chunks, int count, prox_sink sink,
                                   int64_t *total, bool *done)
{
    bool too_many_downs = false;
    visit_chunks(j, chunks, count, false);
    if (chunks_failed(chunks, count, &too_many_downs))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory while counting rows");
    *total = 0;
    for (int k = 0; k < count; k++)
        *total += chunks[k].entries;
    if (too_many_downs || *total > j->max_entries) {
        *done = false;
        return PROX_OK;
    }
    if (!count_aside(j, chunks, count) || !size_rings(j, chunks, count))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for the row rings");
    int64_t *offsets = NULL;
    prox_status st = reserve_output(j, sink, *total, &offsets);
    if (st)
        return st;
    j->pairs = j->lists ? NULL : sink.buffer->pairs;
    j->indices = j->lists ? sink.lists->indices : NULL;
    lengths_to_starts(j, offsets);
    visit_chunks(j, chunks, count, true);
    if (chunks_failed(chunks, count, &too_many_downs) || !finish_late_rows(j, chunks, count))
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory while filling rows");
    if (j->lists)
        sink.lists->rows = j->g->n;
    else
        sink.buffer->count = *total;
    return PROX_OK;
}

prox_status prox_grid_fill_rows(const prox_grid *g, grid_work *w, prox_sink sink,
                                prox_stats *stats, grid_plan plan, bool *done)
{
    assert(plan.traversal == GRID_FILL && plan.strips);
    *done = true;
    int64_t n = g->n;
    /* a chunk per thread: each boundary sets a slab of downs aside */
    int count = g->threads > 1 && n >= 4096 ? g->threads : 1;
    prox_strip_rows rows;
    prox_grid_strip_rows(g, true, &rows);
    fill_job j = {.g = g, .w = w, .plan = &plan, .lists = sink.kind == PROX_SINK_LISTS, .rows = &rows,
                  .max_downs = g->fill_max_downs ? g->fill_max_downs : MAX_DOWNS,
                  .max_entries = g->fill_max_entries ? g->fill_max_entries : MAX_ENTRIES};
    bool ready;
    if (j.lists) { /* the row lengths go straight to the output's offsets */
        prox_lists *l = sink.lists;
        ready = prox_reserve(&l->allocator, (void **)&l->offsets, &l->offsets_capacity, n + 1,
                             sizeof *l->offsets);
        j.offsets = l->offsets;
    } else {
        j.word = prox_workspace_scratch(&w->chunks, PROX_SCRATCH_OWNER,
                                        n * (int64_t)sizeof *j.word);
        ready = j.word != NULL;
    }
    j.downs = prox_workspace_scratch(&w->chunks, PROX_SCRATCH_OWNER + 1,
                                     n * (int64_t)sizeof *j.downs);
    fill_chunk *chunks = ready && j.downs ? make_chunks(g, w, count) : NULL;
    if (!chunks)
        return prox_fail(PROX_ERR_NO_MEMORY, "grid: out of memory for row counts");
    int64_t total = 0;
    prox_status st = count_then_fill(&j, chunks, count, sink, &total, done);
    points_chunk counted = {0}; /* the fill's, kept in its chunks */
    for (int k = 0; k < count; k++) {
        counted.candidates += chunks[k].candidates;
        counted.cells_visited += chunks[k].cells;
        counted.rechecked += chunks[k].rechecked;
    }
    free_chunks(g, w, chunks, count);
    if (*done) {
        prox_grid_ran(w, GRID_FILL);
        prox_grid_search_stats(g, stats, j.lists ? total / 2 : total, &counted,
                               prox_grid_method(g, plan));
    }
    return st;
}

void prox_grid_set_fill_limits(prox_grid *g, uint32_t max_downs, int64_t max_entries)
{
    assert(max_downs <= MAX_DOWNS && max_entries <= MAX_ENTRIES);
    g->fill_max_downs = max_downs;
    g->fill_max_entries = max_entries;
}
