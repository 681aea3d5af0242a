/* linear_kdtree.h: the parts of the linear kd-tree (linear_kdtree.c,
 * Poirrier 2009) that the tests check directly. */
#ifndef PROX_LINEAR_KDTREE_H
#define PROX_LINEAR_KDTREE_H

#include <stdint.h>

/* Locational codes: key = (path << PROX_KD_LEN_BITS) | length, where path is
 * the cell's Morton path left-aligned in `depth` bits (zeros past its
 * length). Sorting keys as integers gives the order of Poirrier 2009, section 5.4:
 * a prefix before its extensions, then 0 before 1. */
#define PROX_KD_LEN_BITS 6
#define PROX_KD_LEN_MASK ((uint64_t)63)
/* Bits per axis: 3 x 19 = 57 levels in 3D, 2 x 29 = 58 in 2D, so that path
 * and length fit 64 bits. */
#define PROX_KD_BITS_3D 19
#define PROX_KD_BITS_2D 29

/* The largest key of the subtree of `key`'s cell (inclusive). */
static inline uint64_t prox_kd_subtree_last(uint64_t key, int depth)
{
    int len = (int)(key & PROX_KD_LEN_MASK);
    return key | ((((uint64_t)1 << (depth - len)) - 1) << PROX_KD_LEN_BITS) | PROX_KD_LEN_MASK;
}

/* The number of pairs (i, j), i < j, of the sorted keys[0 .. n) where the
 * cell of i is the cell of j or one of its ancestors: the candidate pairs
 * the sweep of section 5.5 submits (kd-tree-1), counted in O(n) with a stack
 * of open cells, in 64 bits. */
int64_t prox_kd_count_sweep_pairs(const uint64_t *keys, int64_t n, int depth);

#endif
