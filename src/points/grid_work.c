/* grid_work.c: what a grid's queries keep for the next one (grid_work.h),
 * and its release. */
#include "points/grid_work.h"

#include "core/alloc.h"

void grid_work_init(grid_work *w, const prox_allocator *allocator, int threads)
{
    *w = (grid_work){0};
    prox_workspace_init(&w->chunks, allocator);
    w->chunks.threads = threads;
}

void grid_work_free(grid_work *w)
{
    const prox_allocator *al = &w->chunks.allocator;
    for (int k = 0; k < w->row_chunks; k++)
        prox_free(al, w->row_entries[k]);
    prox_free(al, w->row_entries);
    prox_free(al, w->row_entries_cap);
    w->row_entries = NULL;
    w->row_entries_cap = NULL;
    w->row_chunks = 0;
    for (int k = 0; k < w->fill_chunks; k++)
        prox_fill_arrays_free(al, &w->fill[k]);
    prox_free(al, w->fill);
    w->fill = NULL;
    w->fill_chunks = 0;
    prox_workspace_free(&w->chunks);
}

int64_t grid_work_bytes(const grid_work *w)
{
    int64_t bytes = prox_workspace_bytes(&w->chunks) +
                    w->row_chunks * (int64_t)(sizeof *w->row_entries + sizeof *w->row_entries_cap);
    for (int k = 0; k < w->row_chunks; k++)
        bytes += w->row_entries_cap[k] * (int64_t)sizeof(prox_index);
    bytes += w->fill_chunks * (int64_t)sizeof *w->fill;
    for (int k = 0; k < w->fill_chunks; k++)
        bytes += prox_fill_arrays_bytes(&w->fill[k]);
    return bytes;
}

void prox_fill_arrays_free(const prox_allocator *alloc, prox_fill_arrays *f)
{
    uint32_t *arrays[] = {f->hits, f->ups,   f->downs,   f->row,   f->placed,
                          f->aside, f->late, f->pending, f->cursor};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        prox_free(alloc, arrays[k]);
    prox_fixed_gather_free(alloc, &f->gather);
    *f = (prox_fill_arrays){0};
}

int64_t prox_fill_arrays_bytes(const prox_fill_arrays *f)
{
    int64_t words = 3 * f->hits_cap + f->row_cap + f->placed_cap + f->aside_cap + f->late_cap +
                    f->pending_cap + f->cursor_cap + 5 * f->gather.cap; /* hits, ups, downs share a cap */
    return words * (int64_t)sizeof(uint32_t);
}

void prox_fixed_gather_free(const prox_allocator *a, prox_fixed_gather *b)
{
    prox_free(a, b->x);
    *b = (prox_fixed_gather){0};
}

void prox_rel16_gather_free(const prox_allocator *a, prox_rel16_gather *b)
{
    prox_free(a, b->xy);
    *b = (prox_rel16_gather){0};
}
