/* rng.h: SplitMix64, the deterministic source of every test input. */
#ifndef PROX_TESTS_RNG_H
#define PROX_TESTS_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t state;
} rng;

static inline rng rng_seeded(uint64_t seed)
{
    rng r = {seed};
    return r;
}

static inline uint64_t rng_next(rng *r)
{
    r->state += 0x9E3779B97F4A7C15ull;
    uint64_t z = r->state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 random bits. */
static inline double rng_uniform(rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [lo, lo + size). */
static inline double rng_range(rng *r, double lo, double size)
{
    return lo + size * rng_uniform(r);
}

/* Uniform integer in [0, n), n > 0 (the modulo bias is irrelevant here). */
static inline int64_t rng_below(rng *r, int64_t n)
{
    return (int64_t)(rng_next(r) % (uint64_t)n);
}

#endif
