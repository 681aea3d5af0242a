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

#endif
