/* box_store.c: copies of the built boxes in a structure's cell order.
 *
 * A hash structure keeps its cells' box ids sorted by cell (slot). Reading
 * the boxes of those ids from the built array is one random access per
 * candidate; on W4 (seed 000, Figure 4) that was most of the query time.
 * The store holds a copy of each stored box next to the others of its cell,
 * one array per bound (structure of arrays), so that the broad.c driver
 * reads a cell's candidates sequentially and tests them in blocks.
 *
 * Within a cell the copies ascend by lo[0] (ties by id): a query whose box
 * ends at x = h stops reading a cell at the first copy with lo[0] > h, for
 * none after it can overlap. On W4 the large boxes' cells are read about
 * half way. */
#include "alloc.h"
#include "broad.h"

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

static inline bool copy_before(const broad_store *st, int64_t a, int64_t b)
{
    double x = st->lo[0][a], y = st->lo[0][b];
    return x < y || (x == y && st->id[a] < st->id[b]);
}

static inline void swap_copies(broad_store *st, int64_t a, int64_t b, int dim)
{
    for (int k = 0; k < dim; k++) {
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

static void insertion_sort(broad_store *st, int64_t begin, int64_t end, int dim)
{
    for (int64_t i = begin + 1; i < end; i++)
        for (int64_t j = i; j > begin && copy_before(st, j, j - 1); j--)
            swap_copies(st, j, j - 1, dim);
}

/* Copies begin + i for i < n form a max-heap below i = root. */
static void sift_down(broad_store *st, int64_t begin, int64_t root, int64_t n, int dim)
{
    for (int64_t child = 2 * root + 1; child < n; root = child, child = 2 * root + 1) {
        if (child + 1 < n && copy_before(st, begin + child, begin + child + 1))
            child++;
        if (!copy_before(st, begin + root, begin + child))
            return;
        swap_copies(st, begin + root, begin + child, dim);
    }
}

/* Heapsort: in place and O(n log n) whatever the data (one cell can hold
 * every box). */
static void heap_sort(broad_store *st, int64_t begin, int64_t end, int dim)
{
    int64_t n = end - begin;
    for (int64_t i = n / 2; i-- > 0;)
        sift_down(st, begin, i, n, dim);
    for (int64_t last = n - 1; last > 0; last--) {
        swap_copies(st, begin, begin + last, dim);
        sift_down(st, begin, 0, last, dim);
    }
}

void prox_store_sort_runs(broad_store *st, const uint32_t *start, int64_t runs, int dim)
{
    for (int64_t r = 0; r < runs; r++) {
        int64_t begin = start[r], end = start[r + 1];
        if (end - begin <= 24)
            insertion_sort(st, begin, end, dim);
        else
            heap_sort(st, begin, end, dim);
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
