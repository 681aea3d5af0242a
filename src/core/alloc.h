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

/* Bytes prox_alloc_array has handed out in this process so far, every
 * thread's (stats.fresh_bytes: the difference over a call). */
int64_t prox_fresh_bytes(void);

/* 1 when large fresh blocks of the default allocator go on transparent
 * huge pages (PROX_HUGE_PAGES=1: 2 MiB-aligned, madvise(MADV_HUGEPAGE)
 * before they are faulted in), else 0 (stats.huge_pages). */
int prox_huge_pages(void);

/* Ensure *ptr holds at least `count` elements (content is NOT kept);
 * *capacity tracks the current size. Returns false on failure (the old
 * block is released and *ptr is NULL). */
bool prox_reserve(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                  size_t size);

/* Like prox_reserve but keeps the first `keep` elements; grows
 * geometrically. On failure the old block is kept. */
bool prox_grow(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
               int64_t keep, size_t size);

/* The same for a block that `threads` threads will fill: a fresh block's
 * pages are faulted in by that many threads at once. */
bool prox_reserve_threads(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                          size_t size, int threads);
bool prox_grow_threads(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                       int64_t keep, size_t size, int threads);

/* prox_grow_threads with only the first `touch` elements of a fresh block
 * faulted in now: the rest of `count` is written later, or never. */
bool prox_grow_part(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                    int64_t keep, int64_t touch, size_t size, int threads);

/* prox_free of a block of `bytes`, its pages given back to the kernel at
 * once where the default allocator made it (a heap may keep them). */
void prox_free_pages(const prox_allocator *a, void *ptr, int64_t bytes);

/* `count` elements of `size` bytes at p, in a block from `a` and about to
 * be written, faulted in as a fresh block's are (nothing for a caller's
 * own allocator, small spans, or pages already there). */
void prox_populate(const prox_allocator *a, void *p, int64_t count, size_t size, int threads);

#endif
