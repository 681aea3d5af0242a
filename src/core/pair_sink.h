/* pair_sink.h: how query loops hand pairs to the caller's sink.
 *
 * A query splits its work into chunks in a fixed order. Each chunk owns an
 * emitter: it counts, calls the user's callback (only when the query runs
 * on one thread, in traversal order), or stores pairs into the chunk's own
 * growable array. prox_chunks_deliver then turns the stored chunks into
 * the sorted buffer or CSR lists; since that output is sorted, it does not
 * depend on how many threads produced the chunks. An unsorted sink gets
 * the chunks in chunk order, which covers the work in traversal order
 * whatever the chunk count: the same output again. */
#ifndef PROX_PAIR_SINK_H
#define PROX_PAIR_SINK_H

#include "core/threads.h"
#include "prox/pairs.h"

typedef struct prox_emitter {
    prox_sink_kind kind;
    int64_t count;
    prox_pair *pairs; /* stored pairs (kind BUFFER or LISTS) */
    int64_t capacity;
    const prox_allocator *allocator;
    prox_pair_fn fn;
    void *user;
    bool stop;   /* callback asked to stop, or an allocation failed */
    bool failed; /* an allocation failed */
    /* Chunks' emitters sit side by side in an array and are written on
     * every hit by whichever thread runs the chunk: this keeps two
     * emitters' fields off a shared cache line (false sharing cost W4 on
     * two threads 15-20% more CPU than one, and at 100,000 boxes nearly
     * twice the CPU). */
    char padding[64];
} prox_emitter;

/* Room for `more` pairs beyond count (false, and stop set, on failure). */
bool prox_emitter_grow(prox_emitter *e, int64_t more);

static inline bool prox_emitter_reserve(prox_emitter *e, int64_t more)
{
    return e->count + more <= e->capacity || prox_emitter_grow(e, more);
}

static inline void prox_emit(prox_emitter *e, prox_index i, prox_index j)
{
    switch (e->kind) {
    case PROX_SINK_COUNT:
        break;
    case PROX_SINK_CALLBACK:
        if (e->fn(i, j, e->user))
            e->stop = true;
        break;
    default:
        if (!prox_emitter_reserve(e, 1))
            return;
        e->pairs[e->count] = (prox_pair){i, j};
        break;
    }
    e->count++;
}

/* Pairs of a query point `self` and each of its hits, smaller id first:
 * hit t is candidate hits[t], whose id is ids[hits[t]] (hits may be NULL
 * for a count). The grid's half-stencil traversals and its point sweep
 * emit through it. */
static inline void prox_emit_hits(prox_emitter *e, prox_index self, const prox_index *ids,
                                  const uint32_t *hits, int64_t count)
{
    if (e->kind == PROX_SINK_COUNT) {
        e->count += count;
        return;
    }
    if (e->kind == PROX_SINK_CALLBACK) {
        for (int64_t t = 0; t < count && !e->stop; t++) {
            prox_index j = ids[hits[t]];
            prox_emit(e, self < j ? self : j, self < j ? j : self);
        }
        return;
    }
    /* No hit: nothing to place (e->pairs may still be NULL). */
    if (count == 0 || !prox_emitter_reserve(e, count))
        return;
    prox_pair *out = e->pairs + e->count;
    for (int64_t t = 0; t < count; t++) {
        prox_index j = ids[hits[t]];
        out[t] = self < j ? (prox_pair){self, j} : (prox_pair){j, self};
    }
    e->count += count;
}

/* Memory a structure keeps from one query to the next: the chunks'
 * emitters with their pair arrays, and the delivery's scratch. Fresh pages
 * are dear (faulting one in costs many times writing warm memory:
 * docs/design.md), so a structure
 * queried every step reuses what its last query grew instead of
 * allocating it again. One-shot calls keep a workspace for the call. */
enum {
    PROX_SCRATCH_SORT,    /* keys of the sparse sorted delivery; the lists' bucket copies */
    PROX_SCRATCH_OFFSETS, /* the delivery's bucket starts and cursors */
    PROX_SCRATCH_ENTRIES, /* the delivery's bucketed entries */
    PROX_SCRATCH_OWNER,   /* first slot for the owner's own use */
    PROX_SCRATCH_SLOTS = 8
};

typedef struct prox_workspace {
    prox_allocator allocator;
    prox_emitter *emitter; /* `emitters` of them, each keeping its pair array */
    int emitters;
    void *scratch[PROX_SCRATCH_SLOTS];
    int64_t scratch_bytes[PROX_SCRATCH_SLOTS];
    int64_t last_pairs; /* the last query's pairs: a caller's buffer is sized by it */
    int threads;        /* that fault fresh scratch in (alloc.h); init sets 1 */
} prox_workspace;

void prox_workspace_init(prox_workspace *w, const prox_allocator *allocator);
/* Frees everything it holds; the workspace is as after init, its
 * threads kept. */
void prox_workspace_free(prox_workspace *w);
int64_t prox_workspace_bytes(const prox_workspace *w);
/* At least `bytes` of scratch in `slot` (content not kept from the last
 * use); NULL when out of memory. */
void *prox_workspace_scratch(prox_workspace *w, int slot, int64_t bytes);
/* The scratch of `slot` freed now, before the rest of the workspace, its
 * pages given back at once (prox_free_pages). */
void prox_workspace_release(prox_workspace *w, int slot);

typedef struct prox_chunks {
    prox_emitter *emitter; /* the workspace's first `count` */
    int count;
    int threads; /* for the delivery; init sets 1, a caller may raise it */
    prox_workspace *workspace;
    prox_pair_buffer *adopted; /* the buffer of a lone chunk: emitter 0 stores into it */
    prox_pair *own_pairs;      /* emitter 0's array while the buffer's is lent to it */
    int64_t own_capacity;
} prox_chunks;

/* `count` emitters for `sink` (a callback sink needs count == 1), taken
 * from the workspace with the arrays they grew before, emptied. */
prox_status prox_chunks_init(prox_chunks *c, int count, prox_sink sink, prox_workspace *w);
/* The emitters go back to the workspace, arrays kept. */
void prox_chunks_free(prox_chunks *c);

/* Hand what the chunks gathered to the sink. symmetric: self pairs, stored
 * as (i, j) with i < j, rows = points, lists get both directions;
 * otherwise query pairs (q, j) with rows = queries. Sets *pairs to the
 * number of pairs. Returns PROX_STOPPED, PROX_ERR_NO_MEMORY or PROX_OK. */
prox_status prox_chunks_deliver(prox_chunks *c, prox_sink sink, int64_t rows, bool symmetric,
                                int64_t *pairs);

/* Deliver one array of pairs (already oriented as above, any order). */
prox_status prox_pairs_deliver(const prox_pair *pairs, int64_t count, prox_sink sink,
                               int64_t rows, bool symmetric, prox_workspace *w);



/* Row counts to row offsets, in place: at[0] = 0 and at[r + 1] = the count
 * of row r on entry; at[r] = the first entry of row r on return. Blocked
 * over `threads` for large inputs. */
void prox_prefix_sums(int64_t *at, int64_t rows, int threads);

/* Room in l for `entries` indices and rows + 1 offsets (contents not
 * kept), l->rows 0 until filled by `threads` threads (alloc.h's
 * prox_reserve_threads). PROX_ERR_NO_MEMORY with a message. */
prox_status prox_lists_reserve(prox_lists *l, int64_t entries, int64_t rows, int threads);

/* prox_pair_buffer_reserve for a buffer that `threads` threads will fill. */
prox_status prox_pair_buffer_reserve_threads(prox_pair_buffer *b, int64_t capacity, int threads);

/* The sink is usable: its buffer, lists or callback is there. */
prox_status prox_sink_check(prox_sink sink);

/* Chunks a query splits its work into: one for a callback (called in
 * traversal order on the calling thread), else a few per thread. */
static inline int prox_chunk_count(prox_sink sink, int threads, int64_t work)
{
    if (sink.kind == PROX_SINK_CALLBACK || threads <= 1 || work < 4096)
        return 1;
    return threads * PROX_PARTS_PER_THREAD;
}
#endif
