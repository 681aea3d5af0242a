/* alloc.h: every allocation of the library goes through the caller's hook. */
#ifndef PROX_ALLOC_H
#define PROX_ALLOC_H

#include "prox/core.h"

/* The caller's allocator, or malloc/free when `a` is NULL or zeroed. */
prox_allocator prox_allocator_resolve(const prox_allocator *a);

/* `count` elements of `size` bytes; NULL on overflow or failure. A request
 * for zero bytes still returns a unique pointer. */
void *prox_alloc_array(const prox_allocator *a, int64_t count, size_t size);
void prox_free(const prox_allocator *a, void *ptr);

/* Ensure *ptr holds at least `count` elements (content is NOT kept);
 * *capacity tracks the current size. Returns false on failure (the old
 * block is released and *ptr is NULL). */
bool prox_reserve(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                  size_t size);

/* Like prox_reserve but keeps the first `keep` elements; grows
 * geometrically. On failure the old block is kept. */
bool prox_grow(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
               int64_t keep, size_t size);

/* How a fresh block is about to be written, for the default allocator's
 * faulting in (alloc.c, populate): by `threads` threads (its pages faulted
 * in by as many, a slice each), and whether it is a large output written
 * once through (`output`: 2 MiB pages asked for, see populate). Zero
 * means one thread, 4 KiB pages. */
typedef struct prox_fill {
    int threads;
    bool output;
} prox_fill;

/* prox_reserve and prox_grow for a block written as `fill` says. */
bool prox_reserve_for(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                      size_t size, prox_fill fill);
bool prox_grow_for(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                   int64_t keep, size_t size, prox_fill fill);

#endif
