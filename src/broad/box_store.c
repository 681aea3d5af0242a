/* box_store.c: copies of the built boxes in a structure's cell order.
 *
 * A hash structure keeps its cells' box ids sorted by cell (slot). Reading
 * the boxes of those ids from the built array is one random access per
 * candidate; on W4 (Pouchol et al. 2009, Figure 4) that would be most of the query time.
 * The store holds a copy of each stored box next to the others of its cell,
 * one array per bound (structure of arrays), so that the broad.c driver
 * reads a cell's candidates sequentially and tests them in blocks.
 *
 * Within a cell the copies ascend by lo[0] (ties by id): a query whose box
 * ends at x = h stops reading a cell at the first copy with lo[0] > h, for
 * none after it can overlap. On W4 the large boxes' cells are read about
 * half way. */
#include "core/alloc.h"
#include "broad/broad.h"
#include "core/radix_sort.h"

static bool reserve_store(broad_store *st, const prox_allocator *al, int64_t count, int dim,
                          bool levels)
{
    if (count <= st->capacity && (dim == 3) == (st->lo[2] != NULL) &&
        levels == (st->level != NULL))
        return true;
    prox_store_free(st, al);
    int64_t capacity = count > 0 ? count : 1;
    bool ok = true;
    for (int k = 0; k < dim; k++) {
        st->lo[k] = prox_alloc_array(al, capacity, sizeof(double));
        st->hi[k] = prox_alloc_array(al, capacity, sizeof(double));
        ok = ok && st->lo[k] && st->hi[k];
    }
    st->id = prox_alloc_array(al, capacity, sizeof(uint32_t));
    st->level = levels ? prox_alloc_array(al, capacity, sizeof(uint8_t)) : NULL;
    if (!ok || !st->id || (levels && !st->level)) {
        prox_store_free(st, al);
        return false;
    }
    st->capacity = capacity;
    return true;
}

bool prox_store_fill(broad_store *st, const prox_allocator *al, const prox_aabb *box,
                     const uint32_t *id, int64_t count, int dim, bool levels)
{
    if (!reserve_store(st, al, count, dim, levels))
        return false;
    for (int k = 0; k < dim; k++) {
        double *lo = st->lo[k], *hi = st->hi[k];
        for (int64_t e = 0; e < count; e++) {
            lo[e] = box[id[e]].lo[k];
            hi[e] = box[id[e]].hi[k];
        }
    }
    for (int64_t e = 0; e < count; e++)
        st->id[e] = id[e];
    st->count = count;
    return true;
}

/* ---- runs ordered by lo[0] ------------------------------------------------ */

/* The copies of one run, for the sorts below. */
typedef struct run_items {
    broad_store *st;
    int64_t begin;
    int dim;
} run_items;

/* Whether copy a of the run comes before copy b: by lo[0], then id. */
static bool copy_before(const void *ctx, int64_t a, int64_t b)
{
    const run_items *r = ctx;
    const broad_store *st = r->st;
    double x = st->lo[0][r->begin + a], y = st->lo[0][r->begin + b];
    return x < y || (x == y && st->id[r->begin + a] < st->id[r->begin + b]);
}

static void swap_copies(void *ctx, int64_t a, int64_t b)
{
    const run_items *r = ctx;
    broad_store *st = r->st;
    a += r->begin;
    b += r->begin;
    for (int k = 0; k < r->dim; k++) {
        double lo = st->lo[k][a], hi = st->hi[k][a];
        st->lo[k][a] = st->lo[k][b];
        st->hi[k][a] = st->hi[k][b];
        st->lo[k][b] = lo;
        st->hi[k][b] = hi;
    }
    uint32_t id = st->id[a];
    st->id[a] = st->id[b];
    st->id[b] = id;
    if (st->level) {
        uint8_t level = st->level[a];
        st->level[a] = st->level[b];
        st->level[b] = level;
    }
}

static void insertion_sort(run_items *r, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        for (int64_t j = i; j > 0 && copy_before(r, j, j - 1); j--)
            swap_copies(r, j, j - 1);
}

void prox_store_sort_runs(broad_store *st, const uint32_t *start, int64_t runs, int dim,
                          int threads)
{
    /* runs are independent: the result is the same for every thread count */
#pragma omp parallel for num_threads(threads) if (threads > 1 && st->count > 16384) \
    schedule(dynamic, 4096)
    for (int64_t r = 0; r < runs; r++) {
        run_items items = {st, start[r], dim};
        int64_t n = start[r + 1] - start[r];
        if (n <= 24)
            insertion_sort(&items, n);
        else /* in place and O(n log n) whatever the data (a cell can hold every box) */
            prox_heap_sort(&items, n, copy_before, swap_copies);
    }
}

void prox_store_free(broad_store *st, const prox_allocator *al)
{
    for (int k = 0; k < 3; k++) {
        prox_free(al, st->lo[k]);
        prox_free(al, st->hi[k]);
    }
    prox_free(al, st->id);
    prox_free(al, st->level);
    *st = (broad_store){0};
}

int64_t prox_store_bytes(const broad_store *st)
{
    int axes = st->lo[2] ? 3 : st->lo[0] ? 2 : 0;
    return st->capacity * (int64_t)(2 * axes * sizeof(double) + sizeof(uint32_t) +
                                    (st->level ? sizeof(uint8_t) : 0));
}
