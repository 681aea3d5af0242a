/* sized.h (sized.c): the search of particles of different sizes over sizes
 * already read and checked, for the structures that keep them
 * (sized_grid.c); the public calls are in include/prox/sizes.h. */
#ifndef PROX_SIZED_H
#define PROX_SIZED_H

#include "points/sized_load.h"

/* prox_sized_pairs (the planner, PROX_ALGO_GRID) for `points` whose sizes
 * are `set` under `rule`, as sized_check_rule and sized_load made them
 * for those points and as the periods of `desc` allow
 * (sized_check_periods): the options, the points and the sink are
 * checked, the sizes are not read again. */
prox_status sized_pairs_loaded(const prox_points *points, const sized_rule *rule,
                               const sized_set *set, const prox_grid_desc *desc, prox_sink sink,
                               prox_stats *stats);

#endif
