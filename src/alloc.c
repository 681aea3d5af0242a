#include "alloc.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t size, void *user)
{
    (void)user;
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

void *prox_alloc_array(const prox_allocator *a, int64_t count, size_t size)
{
    if (count < 0 || (size != 0 && (uint64_t)count > SIZE_MAX / size))
        return NULL;
    size_t bytes = (size_t)count * size;
    prox_allocator al = prox_allocator_resolve(a);
    return al.alloc(bytes ? bytes : 1, al.user);
}

void prox_free(const prox_allocator *a, void *ptr)
{
    if (!ptr)
        return;
    prox_allocator al = prox_allocator_resolve(a);
    al.free(ptr, al.user);
}

bool prox_reserve(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
                  size_t size)
{
    if (*ptr && *capacity >= count)
        return true;
    prox_free(a, *ptr);
    *ptr = prox_alloc_array(a, count, size);
    *capacity = *ptr ? count : 0;
    return *ptr != NULL;
}

bool prox_grow(const prox_allocator *a, void **ptr, int64_t *capacity, int64_t count,
               int64_t keep, size_t size)
{
    if (*ptr && *capacity >= count)
        return true;
    int64_t want = *capacity > 0 ? *capacity : 16;
    while (want < count)
        want = want > INT64_MAX / 2 ? count : want * 2;
    void *grown = prox_alloc_array(a, want, size);
    if (!grown)
        return false;
    if (*ptr && keep > 0)
        memcpy(grown, *ptr, (size_t)keep * size);
    prox_free(a, *ptr);
    *ptr = grown;
    *capacity = want;
    return true;
}
