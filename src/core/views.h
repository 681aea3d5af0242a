/* views.h: checking the caller's point views. */
#ifndef PROX_VIEWS_H
#define PROX_VIEWS_H

#include "prox/core.h"

/* Shape checks only (dim, count, pointers, scalar type); `what` names the
 * view in the message ("points", "queries"). */
prox_status prox_points_check(const prox_points *p, const char *what);

/* Every coordinate finite (deterministic: reports the lowest bad index). */
prox_status prox_points_check_finite(const prox_points *p, const char *what, int threads);

#endif
