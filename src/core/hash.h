/* hash.h: the hash functions of the project. */
#ifndef PROX_HASH_H
#define PROX_HASH_H

#include <stdint.h>

/* Teschner et al. 2003 (Pouchol et al. 2009, Eq. 1): XOR of the integer cell
 * coordinates times big primes, reduced into a power-of-two table. The
 * products wrap modulo 2^64 (unsigned), which is well defined for any
 * coordinate. In 2D pass z = 0. */
#define PROX_TESCHNER_P1 73856093ULL
#define PROX_TESCHNER_P2 19349663ULL
#define PROX_TESCHNER_P3 83492791ULL

static inline uint64_t prox_teschner_hash(int64_t x, int64_t y, int64_t z, uint64_t mask)
{
    return (((uint64_t)x * PROX_TESCHNER_P1) ^ ((uint64_t)y * PROX_TESCHNER_P2) ^
            ((uint64_t)z * PROX_TESCHNER_P3)) & mask;
}

/* Fibonacci hashing of a 64-bit key onto `bits` bits (open addressing). */
static inline uint64_t prox_hash64(uint64_t key, int bits)
{
    return (key * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
}

#endif
