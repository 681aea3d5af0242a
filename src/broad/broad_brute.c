/* broad_brute.c: brute force for boxes: no structure at all; the query
 * driver (broad.c) tests every built box (for self pairs, every j > i), in
 * chunks over the queries. The baseline, and the oracle of the tests. */
#include "broad/broad.h"

static prox_status brute_build(void **impl, const broad_input *in)
{
    (void)in;
    *impl = NULL;
    return PROX_OK;
}

static void brute_destroy(void *impl, const prox_allocator *allocator)
{
    (void)impl;
    (void)allocator;
}

static int64_t brute_zero(const void *impl)
{
    (void)impl;
    return 0;
}

const broad_ops prox_broad_brute_ops = {
    .name = "brute",
    .build = brute_build,
    .destroy = brute_destroy,
    .gather = NULL, /* the driver scans every box */
    .bytes = brute_zero,
    .cells = brute_zero,
};
