/* skin_motion.h (skin_list.c): the rebuild test that every skin list
 * shares (prox_skin_list, prox_sized_skin_list): the positions recorded at a
 * rebuild, and whether some point has since moved more than skin / 2, after
 * which a pair may have closed in from beyond threshold + skin. */
#ifndef PROX_SKIN_MOTION_H
#define PROX_SKIN_MOTION_H

#include "prox/grid.h"

/* True when some point of p (n points, p->dim axes) is more than skin / 2
 * from its position in reference (axis-major, as prox_skin_record writes),
 * under desc's periods and threads. */
bool prox_skin_moved_far(const double *reference, int64_t n, const prox_grid_desc *desc,
                         double skin, const prox_points *p);

/* The wrapped positions of p, axis-major, into *reference (grown to 3 *
 * count doubles, *cap its capacity). */
prox_status prox_skin_record(double **reference, int64_t *cap, const prox_points *p,
                             const double *period, const prox_allocator *al);

#endif
