/* pairs.h: where results go.
 *
 * Every query writes into a prox_sink, one of:
 *   - count only (nothing stored; the count is in prox_stats.pairs);
 *   - a growable pair buffer: each unordered pair once, i < j, sorted by
 *     (i, j); for queries of a second set, pairs (q, j) sorted by (q, j);
 *   - CSR lists: row i holds every neighbour of i (both directions for self
 *     pairs; the hits of query q for queries), each row sorted ascending;
 *   - a callback called once per pair (same pairs and orientation as the
 *     buffer, in a deterministic traversal order that is not sorted), always
 *     on the calling thread and never concurrently (a query with a callback
 *     sink runs its search on one thread); it returns nonzero to stop, and
 *     the query then returns PROX_STOPPED.
 * The same input always gives the same output in the same order, whatever
 * the number of threads.
 *
 * prox_sink_unsorted(sink) skips the final sort of a buffer or lists sink:
 * the buffer then holds the same pairs (each once, i < j for self pairs) in
 * the search's traversal order (for the grid, the callback's order), and
 * each CSR row its entries in traversal order. Still the same output for
 * every thread count; it saves the staging and sorting that sorted output
 * costs (W1: docs/benchmarks.md). Structures without a faster unsorted path
 * deliver sorted output, which is one valid traversal order.
 */
#ifndef PROX_PAIRS_H
#define PROX_PAIRS_H

#include "prox/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prox_pair {
    prox_index i, j;
} prox_pair;

typedef struct prox_pair_buffer {
    prox_pair *pairs;
    int64_t count;
    int64_t capacity;
    prox_allocator allocator;
} prox_pair_buffer;

/* allocator may be NULL (malloc/free). */
PROX_API void prox_pair_buffer_init(prox_pair_buffer *buffer, const prox_allocator *allocator);
PROX_API void prox_pair_buffer_free(prox_pair_buffer *buffer);
/* Make room for at least `capacity` pairs (keeps the content). */
PROX_API prox_status prox_pair_buffer_reserve(prox_pair_buffer *buffer, int64_t capacity);

/* Compressed sparse rows: the neighbours of row r are
 * indices[offsets[r] .. offsets[r + 1]). */
typedef struct prox_lists {
    int64_t *offsets;    /* rows + 1 entries */
    prox_index *indices; /* offsets[rows] entries */
    int64_t rows;
    int64_t offsets_capacity;
    int64_t indices_capacity;
    prox_allocator allocator;
} prox_lists;

PROX_API void prox_lists_init(prox_lists *lists, const prox_allocator *allocator);
PROX_API void prox_lists_free(prox_lists *lists);

/* Return nonzero to stop the query. */
typedef int (*prox_pair_fn)(prox_index i, prox_index j, void *user);

typedef enum prox_sink_kind {
    PROX_SINK_COUNT = 0,
    PROX_SINK_BUFFER,
    PROX_SINK_LISTS,
    PROX_SINK_CALLBACK,
} prox_sink_kind;

typedef struct prox_sink {
    prox_sink_kind kind;
    prox_pair_buffer *buffer; /* PROX_SINK_BUFFER: replaced by the result */
    prox_lists *lists;        /* PROX_SINK_LISTS: replaced by the result */
    prox_pair_fn fn;          /* PROX_SINK_CALLBACK */
    void *user;               /* PROX_SINK_CALLBACK */
    bool unsorted;            /* BUFFER, LISTS: traversal order (prox_sink_unsorted) */
} prox_sink;

PROX_API prox_sink prox_sink_count(void);
PROX_API prox_sink prox_sink_buffer(prox_pair_buffer *buffer);
PROX_API prox_sink prox_sink_lists(prox_lists *lists);
PROX_API prox_sink prox_sink_callback(prox_pair_fn fn, void *user);
/* The same sink, delivered in traversal order instead of sorted. */
PROX_API prox_sink prox_sink_unsorted(prox_sink sink);

#ifdef __cplusplus
}
#endif
#endif
