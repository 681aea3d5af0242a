/* simd.h: the one place that decides which vector instructions a
 * translation unit may use.
 *
 * The engine (the files CMakeLists.txt lists in PROX_ENGINE_SOURCES: the
 * grid's query, the radix and network sorts, the broad phase) is compiled
 * once per SIMD level of the target CPU family, each time with that level's
 * -m flags and PROX_LEVEL set to it; every other file is compiled once, for
 * the baseline. At run time the dispatcher (simd/dispatch.c) picks one
 * level for the whole process: the best the CPU has, or the one the
 * environment variable PROX_SIMD names.
 *
 * Code tests the PROX_SIMD_* macros below, never __AVX512F__ and friends,
 * so that what a file may use follows from its level and nothing else.
 *
 * Risk: the levels' copies of a structure's code share its data (a grid
 * built by the baseline code is queried by the AVX2 code), so no struct may
 * change layout with the level: never put a PROX_SIMD_* test inside a
 * struct shared across files. */
#ifndef PROX_SIMD_H
#define PROX_SIMD_H

#include <stdint.h>

/* The levels, each implying the ones below it in its family. */
#define PROX_LEVEL_SCALAR 0 /* no vector code of ours, no auto-vectorisation */
#define PROX_LEVEL_SSE2 1   /* x86-64 baseline */
#define PROX_LEVEL_AVX2 2   /* AVX2 with FMA, BMI1/2, POPCNT, LZCNT, F16C */
#define PROX_LEVEL_AVX512 3 /* AVX-512 F, VL, BW, DQ, CD on top of AVX2 */
#define PROX_LEVEL_NEON 4   /* AArch64 Advanced SIMD */

/* A native build (PROX_NATIVE) compiles one level, whichever the
 * building machine's -march=native gives. */
#ifdef PROX_LEVEL_NATIVE
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512BW__) && \
    defined(__AVX512DQ__) && defined(__BMI2__)
#define PROX_LEVEL PROX_LEVEL_AVX512
#elif defined(__AVX2__) && defined(__BMI2__) && defined(__FMA__)
#define PROX_LEVEL PROX_LEVEL_AVX2
#elif defined(__ARM_NEON) && defined(__aarch64__)
#define PROX_LEVEL PROX_LEVEL_NEON
#elif defined(__SSE2__)
#define PROX_LEVEL PROX_LEVEL_SSE2
#else
#define PROX_LEVEL PROX_LEVEL_SCALAR
#endif
#endif

#ifdef PROX_LEVEL /* an engine translation unit */
#define PROX_SIMD_SCALAR (PROX_LEVEL == PROX_LEVEL_SCALAR)
#define PROX_SIMD_SSE2 (PROX_LEVEL == PROX_LEVEL_SSE2)
#define PROX_SIMD_AVX2 (PROX_LEVEL == PROX_LEVEL_AVX2)
#define PROX_SIMD_AVX512 (PROX_LEVEL == PROX_LEVEL_AVX512)
#define PROX_SIMD_NEON (PROX_LEVEL == PROX_LEVEL_NEON)
#else /* compiled once: no vector code of ours */
#define PROX_SIMD_SCALAR 1
#define PROX_SIMD_SSE2 0
#define PROX_SIMD_AVX2 0
#define PROX_SIMD_AVX512 0
#define PROX_SIMD_NEON 0
#endif
#ifdef PROX_LEVEL
#if PROX_SIMD_AVX512
#define PROX_LEVEL_NAME "avx512"
#elif PROX_SIMD_AVX2
#define PROX_LEVEL_NAME "avx2"
#elif PROX_SIMD_SSE2
#define PROX_LEVEL_NAME "sse2"
#elif PROX_SIMD_NEON
#define PROX_LEVEL_NAME "neon"
#else
#define PROX_LEVEL_NAME "scalar"
#endif
#endif

/* pdep/pext (a point's Morton code in one deposit an axis) where they are
 * fast on every CPU of the level: AVX-512. The AVX2 level also runs on AMD
 * CPUs before Zen 3, which have BMI2 but run pdep/pext in microcode (tens
 * to hundreds of cycles), so it keeps the shifts and masks. */
#define PROX_SIMD_FAST_PDEP PROX_SIMD_AVX512

/* The flags must match the level: a level built without its instructions
 * would compile its portable fallbacks and report a level it never ran. */
#if PROX_SIMD_AVX512 && !(defined(__AVX512F__) && defined(__AVX512VL__) && \
                          defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__BMI2__))
#error "PROX_LEVEL avx512 needs -mavx512f -mavx512vl -mavx512bw -mavx512dq -mbmi2"
#endif
#if PROX_SIMD_AVX2 && !(defined(__AVX2__) && defined(__BMI2__) && defined(__FMA__))
#error "PROX_LEVEL avx2 needs -mavx2 -mbmi2 -mfma"
#endif
#if PROX_SIMD_NEON && !defined(__ARM_NEON)
#error "PROX_LEVEL neon needs an AArch64 target"
#endif

#if PROX_SIMD_AVX2 || PROX_SIMD_AVX512 || PROX_SIMD_SSE2
#include <immintrin.h>
#endif
#if PROX_SIMD_NEON
#include <arm_neon.h>
#endif

/* For the small helpers of the hot loops that the compiler would keep out
 * of line. */
#define PROX_ALWAYS_INLINE inline __attribute__((always_inline))

/* The set bits of a lane mask (vec.h, vec_f64.h: at most 16 lanes). Where
 * the level has no POPCNT (SSE2, the x86-64 baseline, and the scalar
 * level) __builtin_popcount is a call into libgcc; there the masks hold at
 * most 4 bits (4 lanes of 32, 2 of 64; 1 at the scalar level), summed by
 * shifts and adds. */
static inline int prox_lanes_popcount(unsigned m)
{
#if PROX_SIMD_SCALAR
    return (int)m;
#elif PROX_SIMD_SSE2
    m -= (m >> 1) & 0x5u;
    return (int)((m & 0x3u) + ((m >> 2) & 0x3u));
#else
    return __builtin_popcount(m);
#endif
}

/* The set bits of a 64-bit word (the sparse grid's occupancy ranks). As
 * for the lanes above, SSE2 and the scalar level have no POPCNT: there
 * shifts, adds and a multiply instead of a call into libgcc. */
static inline int prox_popcount64(uint64_t w)
{
#if PROX_SIMD_SSE2 || PROX_SIMD_SCALAR
    w -= (w >> 1) & 0x5555555555555555ull;
    w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
    w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int)((w * 0x0101010101010101ull) >> 56);
#else
    return __builtin_popcountll(w);
#endif
}

/* An engine function's name in this level's copy: every external symbol
 * the engine defines is renamed so (simd/leveled.h), and code outside the
 * engine reaches it through the dispatcher (simd/engine.h). */
#define PROX_LEVELED_CAT(name, level) name##_##level
#define PROX_LEVELED_WITH(name, level) PROX_LEVELED_CAT(name, level)
#ifdef PROX_LEVEL_SUFFIX
/* A level's copies of public functions stay hidden: the plain-named
 * forwarders are what the library exports. */
#define PROX_API
#define PROX_LEVELED(name) PROX_LEVELED_WITH(name, PROX_LEVEL_SUFFIX)
#include "simd/leveled.h"
#endif

#endif
