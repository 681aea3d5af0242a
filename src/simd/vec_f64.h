/* vec_f64.h: lanes of doubles, for the tests written once over them (the
 * broad phase's exact box and segment tests, broad.c), one implementation
 * per SIMD level: AVX-512 (8 lanes), AVX2 (4), SSE2 and NEON (2), scalar
 * (1, plain C). The counterpart of vec.h's 32-bit lanes.
 *
 * A comparison gives a pd_cmp, the level's own form of a lane mask (a mask
 * register, lanes of all ones, or a bool), which pd_select and pd_and take
 * as it is; pd_bits turns it into bits, lane k in bit k, for the caller's
 * loops. Loads of n < PD_W lanes never read past the n-th element; dead
 * lanes read as 0, so the caller masks them off (pd_live).
 *
 * Exactness: every operation is the scalar one lane by lane (IEEE double,
 * round to nearest, no contraction), and the comparisons are ordered (a NaN
 * compares false), as C's <, <= and > are, so each level decides as the
 * scalar code does. */
#ifndef PROX_VEC_F64_H
#define PROX_VEC_F64_H

#include <stdbool.h>
#include <stdint.h>

#include "simd/simd.h"

#if PROX_SIMD_AVX512 /* -------------------------------------------------- */

#define PD_W 8
typedef __m512d pd_f64;
typedef __mmask8 pd_cmp;

static inline pd_f64 pd_set1(double v) { return _mm512_set1_pd(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    return _mm512_maskz_loadu_pd(n >= PD_W ? 0xff : (__mmask8)((1u << n) - 1), p);
}
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return _mm512_sub_pd(a, b); }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return _mm512_div_pd(a, b); }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return _mm512_cmp_pd_mask(a, b, _CMP_LE_OQ); }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return a & b; }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return _mm512_mask_blend_pd(m, b, a); }
static inline uint32_t pd_bits(pd_cmp m) { return m; }

#elif PROX_SIMD_AVX2 /* ------------------------------------------------- */

#define PD_W 4
typedef __m256d pd_f64;
typedef __m256d pd_cmp;

static inline pd_f64 pd_set1(double v) { return _mm256_set1_pd(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    if (n >= PD_W)
        return _mm256_loadu_pd(p);
    __m256i live = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
    return _mm256_maskload_pd(p, live);
}
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return _mm256_sub_pd(a, b); }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return _mm256_div_pd(a, b); }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return _mm256_cmp_pd(a, b, _CMP_LE_OQ); }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return _mm256_and_pd(a, b); }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return _mm256_blendv_pd(b, a, m); }
static inline uint32_t pd_bits(pd_cmp m) { return (uint32_t)_mm256_movemask_pd(m); }

#elif PROX_SIMD_SSE2 /* ------------------------------------------------- */

#define PD_W 2
typedef __m128d pd_f64;
typedef __m128d pd_cmp;

static inline pd_f64 pd_set1(double v) { return _mm_set1_pd(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    return n >= PD_W ? _mm_loadu_pd(p) : _mm_load_sd(p);
}
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return _mm_sub_pd(a, b); }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return _mm_div_pd(a, b); }
/* cmple/cmplt are ordered (false on a NaN); a > b is b < a */
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return _mm_cmple_pd(a, b); }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return _mm_cmplt_pd(a, b); }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return _mm_cmplt_pd(b, a); }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return _mm_and_pd(a, b); }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b)
{
    return _mm_or_pd(_mm_and_pd(m, a), _mm_andnot_pd(m, b));
}
static inline uint32_t pd_bits(pd_cmp m) { return (uint32_t)_mm_movemask_pd(m); }

#elif PROX_SIMD_NEON /* ------------------------------------------------- */

#define PD_W 2
typedef float64x2_t pd_f64;
typedef uint64x2_t pd_cmp;

static inline pd_f64 pd_set1(double v) { return vdupq_n_f64(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    return n >= PD_W ? vld1q_f64(p) : vsetq_lane_f64(p[0], vdupq_n_f64(0.0), 0);
}
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return vsubq_f64(a, b); }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return vdivq_f64(a, b); }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return vcleq_f64(a, b); }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return vcltq_f64(a, b); }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return vcgtq_f64(a, b); }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return vandq_u64(a, b); }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return vbslq_f64(m, a, b); }
static inline uint32_t pd_bits(pd_cmp m)
{
    return (uint32_t)(vgetq_lane_u64(m, 0) & 1) | (uint32_t)(vgetq_lane_u64(m, 1) & 1) << 1;
}

#else /* scalar: one lane ------------------------------------------------ */

#define PD_W 1
typedef double pd_f64;
typedef bool pd_cmp;

static inline pd_f64 pd_set1(double v) { return v; }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    (void)n; /* n >= 1 whenever a test loads */
    return p[0];
}
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return a - b; }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return a / b; }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return a <= b; }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return a < b; }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return a > b; }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return a && b; }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return m ? a : b; }
static inline uint32_t pd_bits(pd_cmp m) { return m; }

#endif /* ------------------------------------------------------------------ */

/* The lanes of the PD_W elements from k on that exist (left = end - k). */
static inline uint32_t pd_live(int64_t left)
{
    return left >= PD_W ? (1u << PD_W) - 1 : (1u << left) - 1;
}

/* The lanes k of m whose byte p[k] is v (a tag stored beside the lanes'
 * doubles); bytes outside m are not read. */
static inline uint32_t pd_bytes_equal(const uint8_t *p, uint32_t m, uint8_t v)
{
#if PROX_SIMD_AVX512
    __m128i bytes = _mm_maskz_loadu_epi8((__mmask16)m, p);
    return _mm_mask_cmpeq_epi8_mask((__mmask16)m, bytes, _mm_set1_epi8((char)v));
#else
    for (uint32_t bits = m; bits; bits &= bits - 1)
        if (p[__builtin_ctz(bits)] != v)
            m &= ~(1u << __builtin_ctz(bits));
    return m;
#endif
}

#endif
