/* brute.h: brute force over points, every pair tested: the oracle of the
 * test suite, and PROX_ALGO_BRUTE. */
#ifndef PROX_BRUTE_H
#define PROX_BRUTE_H

#include "prox/grid.h"

/* Brute force: every pair tested (the oracle of the test suite). */
prox_status prox_brute_pairs(const prox_points *points, const prox_grid_desc *desc,
                             prox_sink sink, prox_stats *stats);
prox_status prox_brute_query(const prox_points *points, const prox_points *queries,
                             const prox_grid_desc *desc, prox_sink sink, prox_stats *stats);

#endif
