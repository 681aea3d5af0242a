/* cell_output.h (cell_output.c): the geometry arrays (prox_geometry,
 * include/prox/cell.h) that the cell searches fill: made and released in
 * one place, through the result's own allocator. */
#ifndef PROX_CELL_OUTPUT_H
#define PROX_CELL_OUTPUT_H

#include "prox/cell.h"

/* The arrays g->fields asks for, n entries each (D and S: dim per entry),
 * g->count = n; on failure none, PROX_ERR_NO_MEMORY with a message. */
prox_status prox_geometry_alloc(prox_geometry *g, int64_t n, int dim);

/* Every array released, count 0; the fields and the allocator kept. */
void prox_geometry_release(prox_geometry *g);

#endif
