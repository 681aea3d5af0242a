/* box_rows.h: self pairs of boxes of similar sizes by rows of grid cells
 * swept along the remaining axis (box_rows.c). The uniform grid's engine
 * for W3's equal spheres, DEM grains and particles given as boxes. */
#ifndef PROX_BOX_ROWS_H
#define PROX_BOX_ROWS_H

#include "broad/broad.h"

/* A box in row order, 16 bytes (with its 4-byte sweep key, 20 per box):
 * its max along the sweep axis relative to the data's minimum corner,
 * rounded up to float; its id; and its bounds along the two row axes in
 * 16-bit quanta of its cell (box_rows.c, "Quanta"): {lo1, lo2, hi1, hi2}. */
typedef struct row_box {
    float hi;
    uint32_t id;
    uint16_t q[4];
} row_box;

typedef struct box_rows {
    int dim;
    int axis;    /* the sweep axis: the data's widest */
    int row[2];  /* the axes of the rows' cells (row[1] = -1 in 2D) */
    int64_t cells[2];  /* cells along row[0], row[1] (1 in 2D) */
    double inverse[2]; /* 1 / cell size along row[0], row[1] */
    double origin[3];  /* the data's minimum corner */
    int exponent;      /* the widest extent < 2^exponent */
    float sure;        /* a sweep-axis float test passing by this margin holds
                          for the doubles */
    float reach;       /* see sweep_from_row */
    row_box *box;      /* count boxes, row by row, each row by its keys */
    float *key;        /* the sweep's keys: each box's min along the sweep axis,
                          rounded down to float and then by at most 2^-15 of
                          itself (sort_short_row); ascending within a row */
    int64_t count, box_capacity, key_capacity;
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
