/* box_rows.h: self pairs of boxes of similar sizes by rows of grid cells
 * swept along the remaining axis (box_rows.c). The uniform grid's engine
 * for W3's equal spheres, DEM grains and particles given as boxes. */
#ifndef PROX_BOX_ROWS_H
#define PROX_BOX_ROWS_H

#include "broad.h"

/* A box in row order: its bounds relative to the data's minimum corner,
 * rounded outwards to float (lo down, hi up), slot 0 the sweep axis and
 * slots 1, 2 the row axes, and its id. */
typedef struct row_box {
    float lo[3];
    uint32_t id;
    float hi[3];
    uint32_t row; /* the build's scratch (32 bytes: two boxes per cache line) */
} row_box;

typedef struct box_rows {
    int dim;
    int axis;    /* the sweep axis: the data's widest */
    int row[2];  /* the axes of the rows' cells (row[1] = -1 in 2D) */
    int64_t cells[2];  /* cells along row[0], row[1] (1 in 2D) */
    double inverse[2]; /* 1 / cell size along row[0], row[1] */
    double origin[3];  /* the data's minimum corner */
    float sure;        /* a float test passing by this margin holds for the doubles */
    float reach;       /* see sweep_from_row */
    row_box *box;      /* count boxes, row by row, each row by its keys */
    int64_t count, box_capacity;
    float *x_lo;       /* the sweep's keys: box[p].lo[0], rounded down by at most
                          2^-15 of itself (sort_short_row), sorted within a row */
    int64_t x_lo_capacity;
    uint32_t *start;   /* rows + 1 offsets into box */
    int64_t rows, start_capacity;
    int64_t occupied;  /* rows holding a box */
} box_rows;

/* Sorts the boxes into rows. PROX_ERR_RANGE (no message) when the extent
 * is too large for float offsets: the caller takes another path. */
prox_status prox_box_rows_build(box_rows *r, const broad_input *in);

/* Every overlapping pair once (i < j, after the exact test), the rows split
 * over the chunks in order. */
void prox_box_rows_pairs(const box_rows *r, const broad_input *in, prox_chunks *chunks,
                         prox_stats *stats);

void prox_box_rows_free(box_rows *r, const prox_allocator *allocator);
int64_t prox_box_rows_bytes(const box_rows *r);

#endif
