/* cell_direct.h (cell_direct.c): the pairs of a few points in a periodic
 * cell of any shape, each point's row one pass over the images near the
 * cell (docs/design.md, "Few points: the images listed"). */
#ifndef PROX_CELL_DIRECT_H
#define PROX_CELL_DIRECT_H

#include <stdbool.h>

#include "points/cell_geometry.h"

/* The planner's bound: point sets up to this size are searched over their
 * listed images (about n^2 prod(1 + 2 reach) / 2 candidates); larger ones
 * are binned (cell.c). */
#define PROX_CELL_DIRECT_MAX_POINTS 256

/* Sets the bound (0: the default; below 0: no set is enumerated). For the
 * tests, which hold both searches against the oracle on the same small
 * sets, and the benchmarks; set it before any search, from one thread. */
void prox_cell_direct_set_max_points(int64_t count);

/* prox_cell_pairs for a point set within the bound; *served tells whether
 * it ran (false: a larger set or too many images, nothing done). The same
 * output, to the bit, as the binned search. */
prox_status prox_cell_direct_pairs(const prox_points *points, const prox_cell_desc *desc,
                                   const prox_cell_frame *frame, prox_geometry *out,
                                   prox_stats *stats, bool *served);

#endif
