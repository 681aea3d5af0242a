/* threads.h: the thread count a call uses. 1 means no parallel region is
 * ever entered (OpenMP `if` clauses), so no thread is spawned. */
#ifndef PROX_THREADS_H
#define PROX_THREADS_H

#include <omp.h>

/* Parts per thread of a parallel pass whose threads take parts as they ask
 * (schedule(dynamic, 1)): the query's chunks, the rows' placement, the
 * page faulting of a large block. Several, so that a thread the machine
 * slows (a virtual CPU its host runs late) leaves its share to the others;
 * few, so that each part stays long. */
#define PROX_PARTS_PER_THREAD 8

static inline int prox_threads_resolve(int requested)
{
    if (requested > 0)
        return requested;
    int n = omp_get_max_threads();
    return n > 0 ? n : 1;
}

#endif
