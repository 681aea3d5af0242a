/* threads.h: the thread count a call uses. 1 means no parallel region is
 * ever entered (OpenMP `if` clauses), so no thread is spawned. */
#ifndef PROX_THREADS_H
#define PROX_THREADS_H

#include <omp.h>

static inline int prox_threads_resolve(int requested)
{
    if (requested > 0)
        return requested;
    int n = omp_get_max_threads();
    return n > 0 ? n : 1;
}

#endif
