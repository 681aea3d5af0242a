/* box_store.c: copies of the built boxes in a structure's cell order.
 *
 * A hash structure keeps its cells' box ids sorted by cell (slot). Reading
 * the boxes of those ids from the built array is one random access per
 * candidate; on W4 (seed 000, Figure 4) that was most of the query time.
 * The store holds a copy of each stored box next to the others of its cell,
 * one array per bound (structure of arrays), so that the broad.c driver
 * reads a cell's candidates sequentially and tests them in blocks. */
#include "alloc.h"
#include "broad.h"

static bool reserve_store(broad_store *st, const prox_allocator *al, int64_t count, int dim)
{
    if (count <= st->capacity && (dim == 3) == (st->lo[2] != NULL))
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
    if (!ok || !st->id) {
        prox_store_free(st, al);
        return false;
    }
    st->capacity = capacity;
    return true;
}

bool prox_store_fill(broad_store *st, const prox_allocator *al, const prox_aabb *box,
                     const uint32_t *id, int64_t count, int dim)
{
    if (!reserve_store(st, al, count, dim))
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

void prox_store_free(broad_store *st, const prox_allocator *al)
{
    for (int k = 0; k < 3; k++) {
        prox_free(al, st->lo[k]);
        prox_free(al, st->hi[k]);
    }
    prox_free(al, st->id);
    *st = (broad_store){0};
}

int64_t prox_store_bytes(const broad_store *st)
{
    int axes = st->lo[2] ? 3 : st->lo[0] ? 2 : 0;
    return st->capacity * (int64_t)(2 * axes * sizeof(double) + sizeof(uint32_t));
}
