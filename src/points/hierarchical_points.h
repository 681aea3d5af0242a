/* hierarchical_points.h: neighbour search for particles with the
 * hierarchical hash (Pouchol et al. 2009, Listing 3), reached through prox_pairs and
 * prox_query with PROX_ALGO_HIERARCHICAL (search.c). */
#ifndef PROX_HIERARCHICAL_POINTS_H
#define PROX_HIERARCHICAL_POINTS_H

#include "prox/grid.h"

prox_status prox_hierarchical_pairs(const prox_points *points, const prox_grid_desc *desc,
                                    prox_sink sink, prox_stats *stats);
prox_status prox_hierarchical_query(const prox_points *points, const prox_points *queries,
                                    const prox_grid_desc *desc, prox_sink sink,
                                    prox_stats *stats);

#endif
