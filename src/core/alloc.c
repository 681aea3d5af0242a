/* madvise and MADV_POPULATE_WRITE (glibc shows them to strict C11 only on request) */
#define _DEFAULT_SOURCE
#include "core/alloc.h"
#include "core/threads.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Blocks from here up are faulted in by one call when they are made. */
#define POPULATE_MIN ((size_t)1 << 20)
/* Blocks from here up go on transparent huge pages when they are asked for. */
#define HUGE_MIN ((size_t)8 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

/* 1 when PROX_HUGE_PAGES=1 asks for large fresh blocks on transparent huge
 * pages, read once. Off by default: on a virtual machine whose balloon
 * reports freed memory to the host, a fresh huge page can cost far more
 * than its 512 small ones, or far less, depending on what the guest freed
 * before; no probe at start-up can tell which the next call will meet
 * (docs/design.md, "Fresh pages are faulted in by one call"). */
int prox_huge_pages(void)
{
    static int on = -1; /* racing first readers store the same value */
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("PROX_HUGE_PAGES");
        v = e && e[0] == '1' && e[1] == '\0';
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

static void *default_alloc(size_t size, void *user)
{
    (void)user;
#if defined(__linux__)
    void *p = NULL;
    if (size >= HUGE_MIN && prox_huge_pages()) /* whole huge pages from its start */
        return posix_memalign(&p, HUGE_PAGE, size) == 0 ? p : NULL;
#endif
    return malloc(size);
}

static void default_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

prox_allocator prox_allocator_resolve(const prox_allocator *a)
{
    if (a && a->alloc && a->free)
        return *a;
    return (prox_allocator){default_alloc, default_free, NULL};
}

/* Bytes allocated so far by the whole process (stats.fresh_bytes is a
 * difference of two readings). Relaxed: a reading needs no order with
 * other memory, only every addition counted once. */
static int64_t fresh_total;

int64_t prox_fresh_bytes(void)
{
    return __atomic_load_n(&fresh_total, __ATOMIC_RELAXED);
}

void *prox_alloc_array(const prox_allocator *a, int64_t count, size_t size)
{
    if (count < 0 || (size != 0 && (uint64_t)count > SIZE_MAX / size))
        return NULL;
    size_t bytes = (size_t)count * size;
    prox_allocator al = prox_allocator_resolve(a);
    bytes = bytes ? bytes : 1;
    void *p = al.alloc(bytes, al.user);
    if (p)
        __atomic_fetch_add(&fresh_total, (int64_t)bytes, __ATOMIC_RELAXED);
    return p;
}

void prox_free(const prox_allocator *a, void *ptr)
{
    if (!ptr)
        return;
    prox_allocator al = prox_allocator_resolve(a);
    al.free(ptr, al.user);
}

/* The first `bytes` of a block just allocated by the default allocator,
 * about to be written: their pages faulted in by one call instead of a
 * trap per page at the first write (Linux 5.14 on: MADV_POPULATE_WRITE;
 * elsewhere, or where it fails, nothing happens). A trap costs
 * microseconds, and W1's first sorted buffer on a fresh grid takes tens of
 * thousands (docs/design.md, "Fresh pages are faulted in by one call").
 * The kernel clears each page as it faults it in, the larger part of the
 * cost: `threads` threads share a large block's slices (W1's sorted
 * buffer is 117 MB). A caller's own allocator is left alone: its memory
 * may be meant to be touched later or elsewhere. */
static void populate(const prox_allocator *a, void *p, size_t bytes, int threads)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    if (bytes < POPULATE_MIN || prox_allocator_resolve(a).alloc != default_alloc)
        return;
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~((uintptr_t)page - 1);
    if (hi <= lo)
        return;
    if (bytes >= HUGE_MIN && prox_huge_pages()) { /* its whole 2 MiB spans */
        uintptr_t h0 = (lo + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        uintptr_t h1 = hi & ~(uintptr_t)(HUGE_PAGE - 1);
#ifdef MADV_HUGEPAGE
        if (h1 > h0)
            (void)madvise((void *)h0, h1 - h0, MADV_HUGEPAGE);
#endif
    }
    uintptr_t pages = (hi - lo) / (uintptr_t)page;
    int parts = threads > 1 && hi - lo >= 2 * POPULATE_MIN ? threads : 1;
    if (parts > 1 && hi - lo >= 2 * PROX_PARTS_PER_THREAD * POPULATE_MIN * (uintptr_t)threads)
        parts *= PROX_PARTS_PER_THREAD; /* slices of 2 MiB and up */
#pragma omp parallel for num_threads(threads) if (parts > 1) schedule(dynamic, 1)
    for (int k = 0; k < parts; k++) {
        uintptr_t from = lo + pages * (uintptr_t)k / (uintptr_t)parts * (uintptr_t)page;
        uintptr_t to = lo + pages * (uintptr_t)(k + 1) / (uintptr_t)parts * (uintptr_t)page;
        if (to > from)
            (void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
    }
#else
    (void)a;
    (void)p;
    (void)bytes;
    (void)threads;
#endif
}

/* The whole pages of a default-allocator block about to be freed handed
 * back to the kernel first: free() may keep the block in the heap, its
 * pages resident, where a call that frees scratch before its output's
 * pages are faulted in wants them gone. Only pages strictly inside the
 * block: free() writes its bookkeeping at the block's start and end. */
void prox_free_pages(const prox_allocator *a, void *ptr, int64_t bytes)
{
#if defined(__linux__) && defined(MADV_DONTNEED)
    if (ptr && bytes >= (int64_t)POPULATE_MIN && prox_allocator_resolve(a).alloc == default_alloc) {
        long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
        uintptr_t lo = ((uintptr_t)ptr + 2 * (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        uintptr_t hi = ((uintptr_t)ptr + (uintptr_t)bytes - (uintptr_t)page) & ~((uintptr_t)page - 1);
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    }
#endif
    prox_free(a, ptr);
}

void prox_populate(const prox_allocator *a, void *p, int64_t count, size_t size, int threads)
{
    if (p && count > 0)
        populate(a, p, (size_t)count * size, threads);
}

bool prox_reserve(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                  size_t size)
{
    return prox_reserve_threads(a, ptr, capacity, count, size, 1);
}

bool prox_reserve_threads(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                          size_t size, int threads)
{
    if (*ptr && *capacity >= count)
        return true;
    prox_free(a, *ptr);
    *ptr = prox_alloc_array(a, count, size);
    *capacity = *ptr ? count : 0;
    if (*ptr)
        populate(a, *ptr, (size_t)count * size, threads);
    return *ptr != NULL;
}

bool prox_grow(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
               int64_t keep, size_t size)
{
    return prox_grow_threads(a, ptr, capacity, count, keep, size, 1);
}

bool prox_grow_threads(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                       int64_t keep, size_t size, int threads)
{
    return prox_grow_part(a, ptr, capacity, count, keep, count, size, threads);
}

bool prox_grow_part(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                    int64_t keep, int64_t touch, size_t size, int threads)
{
    if (*ptr && *capacity >= count)
        return true;
    int64_t want = *capacity > 0 ? *capacity : 16;
    while (want < count)
        want = want > INT64_MAX / 2 ? count : want * 2;
    void *grown = prox_alloc_array(a, want, size);
    if (!grown)
        return false;
    populate(a, grown, (size_t)(touch < count ? touch : count) * size, threads); /* about to be used */
    if (*ptr && keep > 0)
        memcpy(grown, *ptr, (size_t)keep * size);
    prox_free(a, *ptr);
    *ptr = grown;
    *capacity = want;
    return true;
}
