/* morton.h: Morton (Z-order) codes: the bits of the cell coordinates
 * interleaved, x lowest. 3D: 21 bits per axis in 63 bits; 2D: 32 bits per
 * axis in 64 bits. */
#ifndef PROX_MORTON_H
#define PROX_MORTON_H

#include <stdint.h>
#ifdef __BMI2__
#include <immintrin.h>
#endif

#define PROX_MORTON3_BITS 21
#define PROX_MORTON2_BITS 32

/* Spread the low 21 bits of v so that two zero bits separate each. */
static inline uint64_t prox_morton_spread3(uint64_t v)
{
    v &= 0x1fffffULL;
    v = (v | v << 32) & 0x1f00000000ffffULL;
    v = (v | v << 16) & 0x1f0000ff0000ffULL;
    v = (v | v << 8) & 0x100f00f00f00f00fULL;
    v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
    v = (v | v << 2) & 0x1249249249249249ULL;
    return v;
}

/* Spread the low 32 bits of v so that one zero bit separates each. */
static inline uint64_t prox_morton_spread2(uint64_t v)
{
    v &= 0xffffffffULL;
    v = (v | v << 16) & 0x0000ffff0000ffffULL;
    v = (v | v << 8) & 0x00ff00ff00ff00ffULL;
    v = (v | v << 4) & 0x0f0f0f0f0f0f0f0fULL;
    v = (v | v << 2) & 0x3333333333333333ULL;
    v = (v | v << 1) & 0x5555555555555555ULL;
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
 * axis where the machine has BMI2 (pdep: 3 cycles on Zen 3 and later). The
 * spreads above stay for loops the compiler vectorises. The kd-tree's
 * sweep (a code per candidate's reference point), W3 1M, one thread:
 * 0.140 -> 0.128 s. */
static inline uint64_t prox_morton3_point(uint32_t x, uint32_t y, uint32_t z)
{
#ifdef __BMI2__
    return _pdep_u64(x & 0x1fffffu, 0x1249249249249249ULL) |
           _pdep_u64(y & 0x1fffffu, 0x2492492492492492ULL) |
           _pdep_u64(z & 0x1fffffu, 0x4924924924924924ULL);
#else
    return prox_morton3(x, y, z);
#endif
}

static inline uint64_t prox_morton2_point(uint32_t x, uint32_t y)
{
#ifdef __BMI2__
    return _pdep_u64(x, 0x5555555555555555ULL) | _pdep_u64(y, 0xaaaaaaaaaaaaaaaaULL);
#else
    return prox_morton2(x, y);
#endif
}

#endif
