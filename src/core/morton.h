/* morton.h: Morton (Z-order) codes: the bits of the cell coordinates
 * interleaved, x lowest. 3D: 21 bits per axis in 63 bits; 2D: 32 bits per
 * axis in 64 bits. */
#ifndef PROX_MORTON_H
#define PROX_MORTON_H

#include <stdint.h>

#define PROX_MORTON3_BITS 21
#define PROX_MORTON2_BITS 32

/* A spread is five steps v = (v | v << shift) & mask, after keeping the
 * low bits of one axis; the last mask marks that axis's bits in a code
 * (the bit deposit's mask). Written once for the scalar spreads below and
 * the lane by lane ones of the kd-tree (pq_morton_spread, simd/vec_u64.h,
 * which this file includes once the steps are defined). */
#define PROX_MORTON_STEPS 5

typedef struct prox_morton_step {
    int shift;
    uint64_t mask;
} prox_morton_step;

static const prox_morton_step prox_morton3_steps[PROX_MORTON_STEPS] = {
    {32, 0x1f00000000ffffULL},   {16, 0x1f0000ff0000ffULL},  {8, 0x100f00f00f00f00fULL},
    {4, 0x10c30c30c30c30c3ULL}, {2, 0x1249249249249249ULL}};
static const prox_morton_step prox_morton2_steps[PROX_MORTON_STEPS] = {
    {16, 0x0000ffff0000ffffULL}, {8, 0x00ff00ff00ff00ffULL}, {4, 0x0f0f0f0f0f0f0f0fULL},
    {2, 0x3333333333333333ULL},  {1, 0x5555555555555555ULL}};

#define PROX_MORTON3_AXIS ((1ULL << PROX_MORTON3_BITS) - 1)
#define PROX_MORTON2_AXIS 0xffffffffULL

#include "simd/vec_u64.h" /* prox_pdep64; its pq_morton_spread reads the steps above */

/* Spread the low 21 bits of v so that two zero bits separate each. */
static inline uint64_t prox_morton_spread3(uint64_t v)
{
    v &= PROX_MORTON3_AXIS;
    for (int s = 0; s < PROX_MORTON_STEPS; s++)
        v = (v | v << prox_morton3_steps[s].shift) & prox_morton3_steps[s].mask;
    return v;
}

/* Spread the low 32 bits of v so that one zero bit separates each. */
static inline uint64_t prox_morton_spread2(uint64_t v)
{
    v &= PROX_MORTON2_AXIS;
    for (int s = 0; s < PROX_MORTON_STEPS; s++)
        v = (v | v << prox_morton2_steps[s].shift) & prox_morton2_steps[s].mask;
    return v;
}

static inline uint64_t prox_morton3(uint32_t x, uint32_t y, uint32_t z)
{
    return prox_morton_spread3(x) | prox_morton_spread3(y) << 1 | prox_morton_spread3(z) << 2;
}

static inline uint64_t prox_morton2(uint32_t x, uint32_t y)
{
    return prox_morton_spread2(x) | prox_morton_spread2(y) << 1;
}

/* The same codes for a single point in scalar code: one bit deposit an
 * axis where every CPU of the level runs it fast (PQ_PDEP, simd/vec_u64.h).
 * The spreads above stay for loops the compiler vectorises. The kd-tree's
 * sweep computes a code per candidate's reference point with it. */
static inline uint64_t prox_morton3_point(uint32_t x, uint32_t y, uint32_t z)
{
    if (!PQ_PDEP)
        return prox_morton3(x, y, z);
    uint64_t axis = prox_morton3_steps[PROX_MORTON_STEPS - 1].mask;
    return prox_pdep64(x & PROX_MORTON3_AXIS, axis) | prox_pdep64(y & PROX_MORTON3_AXIS, axis << 1) |
           prox_pdep64(z & PROX_MORTON3_AXIS, axis << 2);
}

static inline uint64_t prox_morton2_point(uint32_t x, uint32_t y)
{
    if (!PQ_PDEP)
        return prox_morton2(x, y);
    uint64_t axis = prox_morton2_steps[PROX_MORTON_STEPS - 1].mask;
    return prox_pdep64(x, axis) | prox_pdep64(y, axis << 1);
}

#endif
