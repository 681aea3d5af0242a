/* stream.c: prox_pairs_stream (stream.h), over the public calls: a callback
 * sink into one block for traversal order; row blocks searched as queries
 * for sorted order. */
#include "prox/stream.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/views.h"
#include "points/points_common.h"

#define DEFAULT_BLOCK_PAIRS ((int64_t)1 << 16)
/* A sorted stream's row blocks hold up to this many blocks of query output:
 * each query call costs a fixed overhead (threads, sorting), which larger
 * row blocks amortise. */
#define QUERY_BUDGET_BLOCKS 16

typedef struct block {
    prox_pair *pairs;
    int64_t count, capacity;
    int64_t delivered;
    prox_block_fn fn;
    void *user;
    bool stopped;
} block;

/* Hands the block to the caller; false once the caller has asked to stop. */
static bool flush(block *b)
{
    if (b->count > 0 && !b->stopped) {
        b->delivered += b->count;
        b->stopped = b->fn(b->pairs, b->count, b->user) != 0;
    }
    b->count = 0;
    return !b->stopped;
}

static bool push(block *b, prox_index i, prox_index j)
{
    b->pairs[b->count++] = (prox_pair){i, j};
    return b->count < b->capacity || flush(b);
}

static int on_pair(prox_index i, prox_index j, void *user)
{
    return !push(user, i, j);
}

static prox_status unsorted_stream(const prox_points *points, const prox_grid_desc *desc,
                                   prox_algo algo, block *b, prox_stats *stats)
{
    prox_status st = prox_pairs(points, desc, algo, prox_sink_callback(on_pair, b), stats);
    if (st == PROX_OK && !flush(b))
        st = PROX_STOPPED;
    return st;
}

/* Rows [first, first + rows) of the points, as a view of their own. */
static prox_points rows_of(const prox_points *p, int64_t first, int64_t rows)
{
    prox_points v = *p;
    for (int k = 0; k < p->dim; k++)
        v.axis[k] = (const char *)p->axis[k] + first * p->stride;
    v.count = rows;
    return v;
}

/* The points of a query sink's output: the grid when built, else a
 * one-shot query (brute force and the hierarchical hash build nothing
 * worth keeping). */
typedef struct searcher {
    const prox_points *points;
    const prox_grid_desc *desc;
    prox_algo algo;
    prox_grid *grid;
    int64_t candidates;
} searcher;

static prox_status search(searcher *s, const prox_points *rows, prox_sink sink, int64_t *found)
{
    prox_stats stats = {0};
    prox_status st = s->grid ? prox_grid_query(s->grid, rows, sink, &stats)
                             : prox_query(s->points, rows, s->desc, s->algo, sink, &stats);
    *found = stats.pairs;
    s->candidates += stats.candidates;
    return st;
}

/* Row blocks in order: counted, halved while their output would pass the
 * budget, then searched for their (q, j) pairs, sorted by (q, j); those
 * with j > q are the sorted pairs of those rows. */
static prox_status sorted_stream(searcher *s, block *b, prox_pair_buffer *hits)
{
    const prox_points *p = s->points;
    int64_t budget = QUERY_BUDGET_BLOCKS * b->capacity, rows = 1;
    for (int64_t first = 0; first < p->count;) {
        if (rows > p->count - first)
            rows = p->count - first;
        prox_points view = rows_of(p, first, rows);
        int64_t entries;
        prox_status st = search(s, &view, prox_sink_count(), &entries);
        if (st)
            return st;
        if (entries > budget && rows > 1) {
            rows /= 2;
            continue;
        }
        if ((st = search(s, &view, prox_sink_buffer(hits), &entries)))
            return st;
        for (int64_t k = 0; k < hits->count; k++) {
            prox_index i = (prox_index)(first + hits->pairs[k].i), j = hits->pairs[k].j;
            if (j > i && !push(b, i, j))
                return PROX_STOPPED;
        }
        first += rows;
        if (entries < budget / 4 && rows < INT64_MAX / 2)
            rows *= 2;
    }
    return flush(b) ? PROX_OK : PROX_STOPPED;
}

static prox_status check(const prox_points *points, const prox_grid_desc *desc,
                         prox_block_fn fn, int64_t block_pairs)
{
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "prox_pairs_stream: options are NULL; start from "
                                           "prox_default_grid_desc()");
    if (!fn)
        return prox_fail(PROX_ERR_INVALID, "prox_pairs_stream: the block function is NULL");
    if (block_pairs < 0)
        return prox_fail(PROX_ERR_INVALID, "prox_pairs_stream: block_pairs is %lld",
                         (long long)block_pairs);
    return prox_points_check(points, "points");
}

prox_status prox_pairs_stream(const prox_points *points, const prox_grid_desc *desc,
                              prox_algo algo, bool sorted, int64_t block_pairs, prox_block_fn fn,
                              void *user, prox_stats *stats)
{
    if (stats)
        *stats = (prox_stats){0};
    prox_status st = check(points, desc, fn, block_pairs);
    if (st)
        return st;
    block b = {.fn = fn, .user = user};
    b.capacity = block_pairs > 0 ? block_pairs : DEFAULT_BLOCK_PAIRS;
    b.pairs = prox_alloc_array(&desc->allocator, b.capacity, sizeof *b.pairs);
    if (!b.pairs)
        return prox_fail(PROX_ERR_NO_MEMORY, "stream: out of memory for a block of %lld pairs",
                         (long long)b.capacity);
    prox_stats found = {0};
    if (!sorted) {
        st = unsorted_stream(points, desc, algo, &b, &found);
    } else {
        searcher s = {points, desc, algo, NULL, 0};
        prox_pair_buffer hits;
        prox_pair_buffer_init(&hits, &desc->allocator);
        if (algo == PROX_ALGO_GRID) {
            prox_grid_desc d = *desc;
            if (d.coords == PROX_COORDS_AUTO) /* the points outlive the grid */
                d.coords = prox_grid_coords_for_held_points();
            st = prox_grid_create(&d, &s.grid);
            if (!st)
                st = prox_grid_build(s.grid, points);
        }
        if (!st)
            st = sorted_stream(&s, &b, &hits);
        found.candidates = s.candidates;
        prox_pair_buffer_free(&hits);
        prox_grid_destroy(s.grid);
    }
    prox_free(&desc->allocator, b.pairs);
    if (stats) {
        *stats = found;
        stats->pairs = b.delivered;
    }
    return st;
}
