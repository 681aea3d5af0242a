/* error.h: setting the thread-local message behind prox_last_error(). */
#ifndef PROX_ERROR_H
#define PROX_ERROR_H

#include "prox/core.h"

#if defined(__GNUC__)
#define PROX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PROX_PRINTF(f, a)
#endif

/* Record a message for prox_last_error() and return `status`, so that a
 * failing path reads: return prox_fail(PROX_ERR_DATA, "point %lld ...", i); */
prox_status prox_fail(prox_status status, const char *format, ...) PROX_PRINTF(2, 3);
/* A check's status after a first pass found a bad value: the check's own
 * failure (naming the value), or PROX_ERR_DATA when the check found none,
 * because the caller changed its `what` (points, boxes) between the two
 * reads (another thread writing them during the call). */
prox_status prox_fail_recheck(prox_status check, const char *what);

#endif
