/* cell_halo.h (cell_halo.c): the pairs of a large periodic cell of any
 * shape through the uniform grid: the points as they lie, plus the images
 * of those near the cell's faces (the halo), LAMMPS' ghost atoms
 * (docs/design.md, "Periodic cells of any shape", "Large cells"). */
#ifndef PROX_CELL_HALO_H
#define PROX_CELL_HALO_H

#include "points/cell_geometry.h"
#include "prox/cell.h"

/* The least points for which the halo serves by default; smaller sets
 * take the bins of cell.c, whose setup is cheaper than a grid's. */
#define PROX_CELL_HALO_MIN_POINTS 2048

/* Sets that least count (0: the default). For the tests, which hold the
 * halo against an O(N^2) oracle on small sets, and the benchmarks; set it
 * before any search, from one thread. */
void prox_cell_halo_set_min_points(int64_t count);

/* prox_cell_pairs through the halo, with *served = true; or nothing done
 * and *served = false when the halo does not apply: fewer than
 * PROX_CELL_HALO_MIN_POINTS points, a cutoff beyond a quarter of a
 * periodic height (several images of one pair, or more images than
 * points), more than an eighth of the points outside the cell, a
 * non-finite coordinate or one 2^30 cells out (cell.c then reports it),
 * or a grid the points' extent refuses. `frame` is the checked cell of
 * `desc`; `out` is empty. */
prox_status prox_cell_halo_pairs(const prox_points *points, const prox_cell_desc *desc,
                                 const prox_cell_frame *frame, prox_geometry *out,
                                 prox_stats *stats, bool *served);

#endif
