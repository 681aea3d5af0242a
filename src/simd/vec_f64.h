/* vec_f64.h: lanes of doubles, for the code written once over them (the
 * double-precision distance kernels, kernel.h; the broad phase's exact box
 * and segment tests, broad.c), one implementation per SIMD level: AVX-512
 * (8 lanes), AVX2 (4), SSE2 and NEON (2), scalar (1, plain C). The
 * counterpart of vec.h's 32-bit lanes; beside the doubles it handles the
 * 32-bit words that go with them (indices, ids: pd_u32_bits,
 * pd_compress_u32).
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

#include "simd/lane_order.h"
#include "simd/simd.h"

/* The mask of the first n lanes: bits 0 .. n - 1, at most PD_W of them
 * (defined once PD_W is; n is read twice). */
#define pd_live(n) ((n) >= PD_W ? (1u << PD_W) - 1 : (1u << (n)) - 1)

#if PROX_SIMD_AVX512 /* -------------------------------------------------- */

#define PD_W 8
typedef __m512d pd_f64;
typedef __mmask8 pd_cmp;

static inline pd_f64 pd_set1(double v) { return _mm512_set1_pd(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    return _mm512_maskz_loadu_pd((__mmask8)pd_live(n), p);
}
static inline pd_f64 pd_add(pd_f64 a, pd_f64 b) { return _mm512_add_pd(a, b); }
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return _mm512_sub_pd(a, b); }
static inline pd_f64 pd_mul(pd_f64 a, pd_f64 b) { return _mm512_mul_pd(a, b); }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return _mm512_div_pd(a, b); }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return _mm512_cmp_pd_mask(a, b, _CMP_LE_OQ); }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return a & b; }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return _mm512_mask_blend_pd(m, b, a); }
static inline uint32_t pd_bits(pd_cmp m) { return m; }
/* A count of lanes kept by masks, summed across calls (pd_tally). */
typedef int64_t pd_tally;
static inline pd_tally pd_tally_zero(void) { return 0; }
static inline pd_tally pd_tally_add(pd_tally t, pd_cmp m) { return t + __builtin_popcount(m); }
static inline int64_t pd_tally_sum(pd_tally t) { return t; }
/* The lanes of the n (<= PD_W) 32-bit words at p above v (above) or other
 * than v (unsigned), as bits. */
static inline uint32_t pd_u32_bits(const uint32_t *p, int64_t n, uint32_t v, bool above)
{
    __mmask8 live = (__mmask8)pd_live(n);
    __m256i w = _mm256_maskz_loadu_epi32(live, p), s = _mm256_set1_epi32((int)v);
    return above ? _mm256_mask_cmpgt_epu32_mask(live, w, s) : _mm256_mask_cmpneq_epu32_mask(live, w, s);
}
/* The words of p[0 .. n) in the lanes of m, stored in order at out (PD_W
 * words written whatever m: out has room past its last kept word). */
static inline void pd_compress_u32(uint32_t *out, const uint32_t *p, int64_t n, uint32_t m)
{
    __mmask8 live = (__mmask8)pd_live(n);
    __m256i w = _mm256_maskz_loadu_epi32(live, p);
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_maskz_compress_epi32((__mmask8)m, w));
}
/* The positions first .. first + PD_W - 1 in the lanes of m, stored in
 * order at out (PD_W words written). */
static inline void pd_compress_iota(uint32_t *out, int64_t first, uint32_t m)
{
    __m256i at = _mm256_add_epi32(_mm256_set1_epi32((int)first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_maskz_compress_epi32((__mmask8)m, at));
}

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
static inline pd_f64 pd_add(pd_f64 a, pd_f64 b) { return _mm256_add_pd(a, b); }
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return _mm256_sub_pd(a, b); }
static inline pd_f64 pd_mul(pd_f64 a, pd_f64 b) { return _mm256_mul_pd(a, b); }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return _mm256_div_pd(a, b); }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return _mm256_cmp_pd(a, b, _CMP_LE_OQ); }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return _mm256_and_pd(a, b); }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return _mm256_blendv_pd(b, a, m); }
static inline uint32_t pd_bits(pd_cmp m) { return (uint32_t)_mm256_movemask_pd(m); }
/* Kept lanes counted in the vector: a mask lane is -1 as an integer. */
typedef __m256i pd_tally;
static inline pd_tally pd_tally_zero(void) { return _mm256_setzero_si256(); }
static inline pd_tally pd_tally_add(pd_tally t, pd_cmp m) { return _mm256_sub_epi64(t, _mm256_castpd_si256(m)); }
static inline int64_t pd_tally_sum(pd_tally t)
{
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    return _mm_cvtsi128_si64(h) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(h, h));
}
static inline __m128i pd_load_u32(const uint32_t *p, int64_t n)
{
    if (n >= PD_W)
        return _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i live = _mm_cmpgt_epi32(_mm_set1_epi32((int)n), _mm_setr_epi32(0, 1, 2, 3));
    return _mm_maskload_epi32((const int *)p, live);
}
static inline uint32_t pd_u32_bits(const uint32_t *p, int64_t n, uint32_t v, bool above)
{
    const __m128i sign = _mm_set1_epi32(INT32_MIN);
    __m128i w = pd_load_u32(p, n), s = _mm_set1_epi32((int)v);
    __m128i hit = above ? _mm_cmpgt_epi32(_mm_xor_si128(w, sign), _mm_xor_si128(s, sign))
                        : _mm_xor_si128(_mm_cmpeq_epi32(w, s), _mm_set1_epi32(-1));
    return (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(hit)) & pd_live(n);
}
/* The kept lanes' indices from a table (lane_order.h), one permute, as
 * vec.h's compress. */
static inline void pd_compress_u32(uint32_t *out, const uint32_t *p, int64_t n, uint32_t m)
{
    __m128i index = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)(uint32_t)prox_lane_order8[m]));
    __m128 w = _mm_castsi128_ps(pd_load_u32(p, n));
    _mm_storeu_si128((__m128i *)(void *)out, _mm_castps_si128(_mm_permutevar_ps(w, index)));
}
/* The kept lanes' indices are the positions less first: no permute. */
static inline void pd_compress_iota(uint32_t *out, int64_t first, uint32_t m)
{
    __m128i index = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)(uint32_t)prox_lane_order8[m]));
    _mm_storeu_si128((__m128i *)(void *)out, _mm_add_epi32(index, _mm_set1_epi32((int)first)));
}

#elif PROX_SIMD_SSE2 /* ------------------------------------------------- */

#define PD_W 2
typedef __m128d pd_f64;
typedef __m128d pd_cmp;

static inline pd_f64 pd_set1(double v) { return _mm_set1_pd(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    return n >= PD_W ? _mm_loadu_pd(p) : _mm_load_sd(p);
}
static inline pd_f64 pd_add(pd_f64 a, pd_f64 b) { return _mm_add_pd(a, b); }
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return _mm_sub_pd(a, b); }
static inline pd_f64 pd_mul(pd_f64 a, pd_f64 b) { return _mm_mul_pd(a, b); }
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
typedef __m128i pd_tally; /* as AVX2's */
static inline pd_tally pd_tally_zero(void) { return _mm_setzero_si128(); }
static inline pd_tally pd_tally_add(pd_tally t, pd_cmp m) { return _mm_sub_epi64(t, _mm_castpd_si128(m)); }
static inline int64_t pd_tally_sum(pd_tally t)
{
    return _mm_cvtsi128_si64(t) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(t, t));
}

#elif PROX_SIMD_NEON /* ------------------------------------------------- */

#define PD_W 2
typedef float64x2_t pd_f64;
typedef uint64x2_t pd_cmp;

static inline pd_f64 pd_set1(double v) { return vdupq_n_f64(v); }
static inline pd_f64 pd_load_n(const double *p, int64_t n)
{
    return n >= PD_W ? vld1q_f64(p) : vsetq_lane_f64(p[0], vdupq_n_f64(0.0), 0);
}
static inline pd_f64 pd_add(pd_f64 a, pd_f64 b) { return vaddq_f64(a, b); }
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return vsubq_f64(a, b); }
static inline pd_f64 pd_mul(pd_f64 a, pd_f64 b) { return vmulq_f64(a, b); }
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
typedef int64x2_t pd_tally; /* as AVX2's */
static inline pd_tally pd_tally_zero(void) { return vdupq_n_s64(0); }
static inline pd_tally pd_tally_add(pd_tally t, pd_cmp m) { return vsubq_s64(t, vreinterpretq_s64_u64(m)); }
static inline int64_t pd_tally_sum(pd_tally t) { return vaddvq_s64(t); }

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
static inline pd_f64 pd_add(pd_f64 a, pd_f64 b) { return a + b; }
static inline pd_f64 pd_sub(pd_f64 a, pd_f64 b) { return a - b; }
static inline pd_f64 pd_mul(pd_f64 a, pd_f64 b) { return a * b; }
static inline pd_f64 pd_div(pd_f64 a, pd_f64 b) { return a / b; }
static inline pd_cmp pd_le(pd_f64 a, pd_f64 b) { return a <= b; }
static inline pd_cmp pd_lt(pd_f64 a, pd_f64 b) { return a < b; }
static inline pd_cmp pd_gt(pd_f64 a, pd_f64 b) { return a > b; }
static inline pd_cmp pd_and(pd_cmp a, pd_cmp b) { return a && b; }
static inline pd_f64 pd_select(pd_cmp m, pd_f64 a, pd_f64 b) { return m ? a : b; }
static inline uint32_t pd_bits(pd_cmp m) { return m; }
typedef int64_t pd_tally;
static inline pd_tally pd_tally_zero(void) { return 0; }
static inline pd_tally pd_tally_add(pd_tally t, pd_cmp m) { return t + m; }
static inline int64_t pd_tally_sum(pd_tally t) { return t; }

#endif /* ------------------------------------------------------------------ */

/* Copies of the first min(n, PD_W) doubles, or of as many 32-bit words
 * (a cell's coordinates and ids into a gathered block); n >= 1, and nothing
 * past the n-th element is read or written. */
#if PROX_SIMD_AVX512
static inline void pd_copy_n(double *to, const double *from, int64_t n)
{
    __mmask8 live = (__mmask8)pd_live(n);
    _mm512_mask_storeu_pd(to, live, _mm512_maskz_loadu_pd(live, from));
}
static inline void pd_copy_u32_n(uint32_t *to, const uint32_t *from, int64_t n)
{
    __mmask8 live = (__mmask8)pd_live(n);
    _mm256_mask_storeu_epi32(to, live, _mm256_maskz_loadu_epi32(live, from));
}
#elif PROX_SIMD_AVX2
static inline void pd_copy_n(double *to, const double *from, int64_t n)
{
    if (n >= PD_W) {
        _mm256_storeu_pd(to, _mm256_loadu_pd(from));
        return;
    }
    __m256i live = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
    _mm256_maskstore_pd(to, live, _mm256_maskload_pd(from, live));
}
static inline void pd_copy_u32_n(uint32_t *to, const uint32_t *from, int64_t n)
{
    if (n >= PD_W) {
        _mm_storeu_si128((__m128i *)(void *)to, _mm_loadu_si128((const __m128i *)(const void *)from));
        return;
    }
    __m128i live = _mm_cmpgt_epi32(_mm_set1_epi32((int)n), _mm_setr_epi32(0, 1, 2, 3));
    _mm_maskstore_epi32((int *)(void *)to, live, _mm_maskload_epi32((const int *)(const void *)from, live));
}
#else /* SSE2, NEON, scalar: one or two elements */
static inline void pd_copy_n(double *to, const double *from, int64_t n)
{
    to[0] = from[0];
    if (PD_W > 1 && n > 1)
        to[1] = from[1];
}
static inline void pd_copy_u32_n(uint32_t *to, const uint32_t *from, int64_t n)
{
    to[0] = from[0];
    if (PD_W > 1 && n > 1)
        to[1] = from[1];
}
#endif

#if PD_W == 2 /* SSE2, NEON: word by word, without loops */
static inline uint32_t pd_u32_bits(const uint32_t *p, int64_t n, uint32_t v, bool above)
{
    uint32_t a = p[0], b = n >= 2 ? p[1] : v;
    return above ? (uint32_t)(a > v) | (uint32_t)(b > v) << 1
                 : (uint32_t)(a != v) | (uint32_t)(b != v) << 1;
}
/* out[0] is p[1] only when m keeps lane 1 alone */
static inline void pd_compress_u32(uint32_t *out, const uint32_t *p, int64_t n, uint32_t m)
{
    out[0] = p[(m >> 1) & ~m & 1u];
    out[1] = n >= 2 ? p[1] : p[0];
}
static inline void pd_compress_iota(uint32_t *out, int64_t first, uint32_t m)
{
    out[0] = (uint32_t)first + ((m >> 1) & ~m & 1u);
    out[1] = (uint32_t)first + 1;
}
#elif PD_W == 1
static inline uint32_t pd_u32_bits(const uint32_t *p, int64_t n, uint32_t v, bool above)
{
    (void)n;
    return above ? p[0] > v : p[0] != v;
}
static inline void pd_compress_u32(uint32_t *out, const uint32_t *p, int64_t n, uint32_t m)
{
    (void)n;
    (void)m; /* the caller advances by the count: a store it skips is overwritten */
    out[0] = p[0];
}
static inline void pd_compress_iota(uint32_t *out, int64_t first, uint32_t m)
{
    (void)m;
    out[0] = (uint32_t)first;
}
#endif

/* d taken to its minimum image along an axis of period L (L > 0), as
 * prox_min_image: d - L above L/2, d + L below -(L/2). */
static inline pd_f64 pd_min_image(pd_f64 d, double L)
{
    pd_f64 half = pd_set1(0.5 * L), l = pd_set1(L);
    pd_cmp above = pd_gt(d, half), below = pd_lt(d, pd_set1(-(0.5 * L)));
    d = pd_select(above, pd_sub(d, l), d);
    return pd_select(below, pd_add(d, l), d);
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
