/* grid_work.h (grid_work.c): what a grid query needs for itself, apart
 * from the built grid (grid_private.h): the chunks' emitters and scratch,
 * the sorted rows' entry arrays, grid_fill.c's arrays, and the blocks a
 * run's candidates are gathered into. A query takes what the last one
 * grew and gives it back grown, so that a grid queried every step faults
 * no fresh pages in (pair_sink.h). It includes no structure: the grid,
 * its traversals and the handle's release all reach it from above. */
#ifndef PROX_GRID_WORK_H
#define PROX_GRID_WORK_H

#include <stdint.h>

#include "core/pair_sink.h"

struct prox_range;

/* At least grid_plan.h's GRID_TRAVERSALS (grid_plan.c asserts it). */
#define GRID_WORK_TRAVERSALS 8

/* A run's candidate strips copied into one block (fixed-point coordinates):
 * each of the run's points then runs one long vector loop over them instead
 * of a short one per strip, whose many loop exits cost more than the copy
 * once a run holds two points or more (W1: 7) and its strips a vector's
 * worth of candidates (prox_gather_pays). */
typedef struct prox_fixed_gather {
    int32_t *x, *y, *z; /* z: 3D only */
    uint32_t *id;       /* input index of each candidate */
    uint32_t *pos;      /* sorted position of each, if asked for */
    int64_t count, cap;
    const struct prox_range *from; /* the ranges gathered (the caller's), in order */
    int from_count;
} prox_fixed_gather;

/* A chunk's working arrays in grid_fill.c, kept by the grid. */
typedef struct prox_fill_arrays {
    uint32_t *hits, *ups, *downs; /* a point's hits, split */
    uint32_t *row;                /* finished rows on their way to the output */
    uint32_t *placed;             /* those rows: index, start, length each */
    uint32_t *aside;              /* entries set aside for later rows */
    uint32_t *late;               /* rows finished after the others */
    uint32_t *pending;            /* a ring of the rows' entries ahead */
    uint32_t *cursor;             /* a ring of the points' places in it */
    int64_t hits_cap, row_cap, placed_cap, aside_cap, late_cap, pending_cap, cursor_cap;
    prox_fixed_gather gather;     /* a run's candidates */
} prox_fill_arrays;

/* A run's candidates gathered as rel16 coordinates around its cell a
 * (their ids too, unless the gather was told they are not wanted: a
 * count's recheck finds them through `from`). */
typedef struct prox_rel16_gather {
    uint32_t *xy, *z0, *id;
    int64_t count, cap;
    const struct prox_range *from; /* the ranges gathered (the caller's), in order */
    int from_count;
} prox_rel16_gather;

/* What a grid's queries keep for the next one: the chunks' pair arrays and
 * scratch (pair_sink.h), the row entries of each chunk of the sorted rows
 * (grid_search.c), and grid_fill.c's arrays, one set per chunk. */
typedef struct grid_work {
    prox_workspace chunks;
    prox_index **row_entries;
    int64_t *row_entries_cap;
    int row_chunks;
    prox_fill_arrays *fill;
    int fill_chunks;
    /* How often each traversal (grid_plan.h) ran its candidates, counted
     * by the traversal's own code where it commits to its way (a chunk, a
     * pass): tests hold it against the method stats names. */
    int64_t ran[GRID_WORK_TRAVERSALS];
} grid_work;

/* An empty workspace, its scratch faulted in by `threads` threads. */
void grid_work_init(grid_work *w, const prox_allocator *allocator, int threads);
/* Everything released; the workspace is as after init. */
void grid_work_free(grid_work *w);
int64_t grid_work_bytes(const grid_work *w);

/* One chunk's arrays of each kind released (and zeroed), and their bytes. */
void prox_fill_arrays_free(const prox_allocator *a, prox_fill_arrays *f);
int64_t prox_fill_arrays_bytes(const prox_fill_arrays *f);
void prox_fixed_gather_free(const prox_allocator *a, prox_fixed_gather *b);
void prox_rel16_gather_free(const prox_allocator *a, prox_rel16_gather *b);

#endif
