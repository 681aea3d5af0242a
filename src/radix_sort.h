/* radix_sort.h: the project's sorts (seed 004: construction by radix sort). */
#ifndef PROX_RADIX_SORT_H
#define PROX_RADIX_SORT_H

#include <stdint.h>

/* Stable LSD radix sort of (keys[i], values[i]) by key, 8-bit digits; a
 * digit that is the same for every key costs no pass. tmp_keys and
 * tmp_values are scratch of n elements. The result is in keys/values.
 * Parallel over `threads` (per-thread histograms, scatter in thread
 * order), so the result is identical for every thread count. */
void prox_radix_sort64(uint64_t *keys, uint32_t *values, uint64_t *tmp_keys,
                       uint32_t *tmp_values, int64_t n, int threads);

/* Ascending sort of a small array of indices (neighbour-list rows). */
void prox_sort_u32(uint32_t *a, int64_t n);

#endif
