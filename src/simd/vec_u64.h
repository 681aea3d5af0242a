/* vec_u64.h: lanes of 64-bit unsigned integers, for the kernels written
 * once over them (the linear kd-tree's records, broad/kd_split.c, and its
 * sweep's filter, broad/linear_kdtree.c), one implementation per SIMD
 * level: AVX-512 (8 lanes, masks in mask registers), AVX2 (4), SSE2 and
 * NEON (2), scalar (1 lane, plain C). The counterpart of vec.h's 32-bit
 * lanes and vec_f64.h's doubles: PQ_W == PD_W at every level, so a vector
 * of doubles converts into one of these (pq_quantize), and PV_W is PQ_W
 * or twice it, so a vector of 32-bit lanes widens into one or two
 * (pq_widen). Beside the 64-bit lanes it gives the 32-bit helpers the
 * sweep's filter needs: gathers (pq_gather_u32), masks as lanes and
 * narrow stores (its unsigned max is vec.h's pv_max_u32).
 *
 * A comparison gives a pq_cmp, the level's own form of a lane mask (a mask
 * register, lanes of all ones, or a bool), which pq_select and the
 * pq_cmp_* operations take as it is (AVX2's, SSE2's and NEON's selects
 * take lanes: bits would be spread back into lanes at every select);
 * pq_bits turns it into a pq_mask, lane k in bit k, for popcounts,
 * compresses and the caller's loops. Loads of
 * n < PQ_W lanes never read past the n-th element (n >= 1); dead lanes
 * read as 0, so the caller masks them off (pq_live). pq_compress stores
 * PQ_W lanes whatever the mask, as vec.h's pv_compress: the caller
 * advances by the count of kept lanes, and its output has room for PQ_W
 * lanes past its last kept one.
 *
 * Shifts by a lane's own count (pq_shlv, pq_shrv) take counts 0 .. 63; a
 * larger count gives 0 at the x86 levels and the scalar one, and an
 * unspecified value at NEON, which reads a count's low byte as signed:
 * callers keep such lanes out of their results. pq_lzcnt is exact for
 * values below 2^51 (AVX2, SSE2 and NEON count through a double's
 * exponent); the kernels take it of quantized coordinates, at most 32
 * bits wide.
 *
 * Everything here is an integer operation but pq_quantize, which clamps
 * and truncates a double as prox_kd_quantize does (kd_split.h), so each
 * level computes the scalar code's integers exactly. */
#ifndef PROX_VEC_U64_H
#define PROX_VEC_U64_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"
#include "simd/vec.h"
#include "simd/vec_f64.h"

/* A bit deposit (pdep: the low bits of v into the set bits of mask, in
 * order) for the Morton codes of single points (core/morton.h). PQ_PDEP
 * is 1 where every CPU of the level runs it fast (PROX_SIMD_FAST_PDEP:
 * AVX-512; AMD CPUs before Zen 3 have BMI2 but run pdep in microcode).
 * Elsewhere prox_pdep64 is a loop over the mask's bits, exact but slow:
 * callers test PQ_PDEP and take shifts and masks instead. Defined before
 * core/morton.h is included below, since morton.h calls it. */
#if PROX_SIMD_FAST_PDEP
#define PQ_PDEP 1
static inline uint64_t prox_pdep64(uint64_t v, uint64_t mask) { return _pdep_u64(v, mask); }
#else
#define PQ_PDEP 0
static inline uint64_t prox_pdep64(uint64_t v, uint64_t mask)
{
    uint64_t out = 0;
    for (; mask; mask &= mask - 1, v >>= 1)
        out |= (v & 1) ? mask & -mask : 0;
    return out;
}
#endif

/* Morton's step tables, for pq_morton_spread (morton.h includes this file
 * after defining them, and this file includes morton.h after prox_pdep64:
 * either order sees both). */
#include "core/morton.h"

typedef uint32_t pq_mask;

/* The mask of the first n lanes: bits 0 .. n - 1, at most PQ_W of them
 * (defined once PQ_W is; n is read twice). */
#define pq_live(n) ((n) >= PQ_W ? (pq_mask)((1u << PQ_W) - 1) : (pq_mask)((1u << (n)) - 1))

#if PROX_SIMD_AVX512 /* -------------------------------------------------- */

#define PQ_W 8
typedef __m512i pq_u64;
typedef __mmask8 pq_cmp;

static inline pq_u64 pq_set1(uint64_t v) { return _mm512_set1_epi64((long long)v); }
static inline pq_u64 pq_load_n(const uint64_t *p, int64_t n)
{
    return _mm512_maskz_loadu_epi64((__mmask8)pq_live(n), p);
}
static inline void pq_store(uint64_t *p, pq_u64 v) { _mm512_storeu_si512((void *)p, v); }
/* The low 32 bits of each lane to p[0 .. PQ_W). */
static inline void pq_store_u32(uint32_t *p, pq_u64 v)
{
    _mm256_storeu_si256((__m256i *)(void *)p, _mm512_cvtepi64_epi32(v));
}
static inline pq_u64 pq_add(pq_u64 a, pq_u64 b) { return _mm512_add_epi64(a, b); }
static inline pq_u64 pq_sub(pq_u64 a, pq_u64 b) { return _mm512_sub_epi64(a, b); }
static inline pq_u64 pq_and(pq_u64 a, pq_u64 b) { return _mm512_and_si512(a, b); }
static inline pq_u64 pq_or(pq_u64 a, pq_u64 b) { return _mm512_or_si512(a, b); }
static inline pq_u64 pq_xor(pq_u64 a, pq_u64 b) { return _mm512_xor_si512(a, b); }
static inline pq_u64 pq_shl(pq_u64 a, int n) { return _mm512_slli_epi64(a, (unsigned)n); }
static inline pq_u64 pq_shr(pq_u64 a, int n) { return _mm512_srli_epi64(a, (unsigned)n); }
static inline pq_u64 pq_shlv(pq_u64 a, pq_u64 n) { return _mm512_sllv_epi64(a, n); }
static inline pq_u64 pq_shrv(pq_u64 a, pq_u64 n) { return _mm512_srlv_epi64(a, n); }
static inline pq_u64 pq_min_u64(pq_u64 a, pq_u64 b) { return _mm512_min_epu64(a, b); }
static inline pq_cmp pq_eq(pq_u64 a, pq_u64 b) { return _mm512_cmpeq_epi64_mask(a, b); }
static inline pq_cmp pq_lt_u64(pq_u64 a, pq_u64 b) { return _mm512_cmplt_epu64_mask(a, b); }
static inline pq_cmp pq_le_u64(pq_u64 a, pq_u64 b) { return _mm512_cmple_epu64_mask(a, b); }
static inline pq_u64 pq_select(pq_cmp m, pq_u64 a, pq_u64 b) { return _mm512_mask_blend_epi64(m, b, a); }
static inline pq_cmp pq_cmp_and(pq_cmp a, pq_cmp b) { return a & b; }
static inline pq_cmp pq_cmp_or(pq_cmp a, pq_cmp b) { return a | b; }
static inline pq_cmp pq_cmp_andnot(pq_cmp a, pq_cmp b) { return a & (pq_cmp)~b; }
static inline pq_cmp pq_cmp_none(void) { return 0; }
static inline pq_mask pq_bits(pq_cmp m) { return m; }
static inline pq_u64 pq_lzcnt(pq_u64 a) { return _mm512_lzcnt_epi64(a); }
/* t clamped to [0, max] (NaN gives 0: max_pd returns its second operand
 * on a NaN) and truncated; max < 2^32. */
static inline pq_u64 pq_quantize(pd_f64 t, double max)
{
    t = _mm512_min_pd(_mm512_max_pd(t, _mm512_setzero_pd()), _mm512_set1_pd(max));
    return _mm512_cvtepu32_epi64(_mm512_cvttpd_epu32(t));
}
/* The doubles p[0], p[stride], .. p[(PQ_W - 1) stride]. */
static inline pd_f64 pq_gather_f64(const double *p, int64_t stride)
{
    __m512i at = _mm512_mullo_epi64(_mm512_set1_epi64(stride), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm512_i64gather_pd(at, p, 8);
}
/* Compressed in a register, then one plain store (a compressing store to
 * memory is microcoded on some CPUs). */
static inline void pq_compress(uint64_t *out, pq_u64 v, pq_mask m)
{
    _mm512_storeu_si512((void *)out, _mm512_maskz_compress_epi64((__mmask8)m, v));
}
/* Lanes half * PQ_W .. of a vector of 32-bit lanes, zero-extended. */
static inline pq_u64 pq_widen(pv_i32 v, int half)
{
    return _mm512_cvtepu32_epi64(half ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v));
}
/* base[index lane] for the lanes half * PQ_W .. of index that live
 * keeps (bit k: lane half * PQ_W + k); the others 0 and not read. */
static inline pq_u64 pq_gather_u64(const uint64_t *base, pv_i32 index, int half, pq_mask live)
{
    __m256i at = half ? _mm512_extracti64x4_epi64(index, 1) : _mm512_castsi512_si256(index);
    return _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), (__mmask8)live, at,
                                       (const long long *)(const void *)base, 8);
}
/* base[index lane] for the 32-bit lanes live keeps; the others 0 and not
 * read. */
static inline pv_i32 pq_gather_u32(const uint32_t *base, pv_i32 index, pv_mask live)
{
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), (__mmask16)live, index, base, 4);
}
/* The 32-bit lanes of m as all ones, the others 0. */
static inline pv_i32 pq_lanes_u32(pv_mask m) { return _mm512_movm_epi32((__mmask16)m); }
/* The first PQ_W 32-bit lanes of v to p[0 .. PQ_W). */
static inline void pq_store_first_u32(int32_t *p, pv_i32 v)
{
    _mm256_storeu_si256((__m256i *)(void *)p, _mm512_castsi512_si256(v));
}
/* first, first + 1, .. first + PQ_W - 1 to p[0 .. PQ_W), as 32 bits. */
static inline void pq_store_iota_u32(int32_t *p, int64_t first)
{
    __m256i at = _mm256_add_epi32(_mm256_set1_epi32((int32_t)first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_storeu_si256((__m256i *)(void *)p, at);
}

#elif PROX_SIMD_AVX2 /* -------------------------------------------------- */

#define PQ_W 4
typedef __m256i pq_u64;
typedef __m256i pq_cmp;

static inline pq_u64 pq_set1(uint64_t v) { return _mm256_set1_epi64x((long long)v); }
/* A mask's bits as lanes of all ones (the masked loads' and gathers'
 * form). */
static inline __m256i pq_lanes_of(pq_mask m)
{
    const __m256i bit = _mm256_setr_epi64x(1, 2, 4, 8);
    return _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x((long long)m), bit), bit);
}
static inline pq_u64 pq_load_n(const uint64_t *p, int64_t n)
{
    if (n >= PQ_W)
        return _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm256_maskload_epi64((const long long *)(const void *)p, pq_lanes_of(pq_live(n)));
}
static inline void pq_store(uint64_t *p, pq_u64 v) { _mm256_storeu_si256((__m256i *)(void *)p, v); }
static inline void pq_store_u32(uint32_t *p, pq_u64 v)
{
    __m256i low = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(low));
}
static inline pq_u64 pq_add(pq_u64 a, pq_u64 b) { return _mm256_add_epi64(a, b); }
static inline pq_u64 pq_sub(pq_u64 a, pq_u64 b) { return _mm256_sub_epi64(a, b); }
static inline pq_u64 pq_and(pq_u64 a, pq_u64 b) { return _mm256_and_si256(a, b); }
static inline pq_u64 pq_or(pq_u64 a, pq_u64 b) { return _mm256_or_si256(a, b); }
static inline pq_u64 pq_xor(pq_u64 a, pq_u64 b) { return _mm256_xor_si256(a, b); }
static inline pq_u64 pq_shl(pq_u64 a, int n) { return _mm256_slli_epi64(a, n); }
static inline pq_u64 pq_shr(pq_u64 a, int n) { return _mm256_srli_epi64(a, n); }
static inline pq_u64 pq_shlv(pq_u64 a, pq_u64 n) { return _mm256_sllv_epi64(a, n); }
static inline pq_u64 pq_shrv(pq_u64 a, pq_u64 n) { return _mm256_srlv_epi64(a, n); }
static inline pq_cmp pq_eq(pq_u64 a, pq_u64 b) { return _mm256_cmpeq_epi64(a, b); }
/* No unsigned compare: the sign bits flipped, compared signed. */
static inline pq_cmp pq_lt_u64(pq_u64 a, pq_u64 b)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    return _mm256_cmpgt_epi64(_mm256_xor_si256(b, sign), _mm256_xor_si256(a, sign));
}
static inline pq_cmp pq_le_u64(pq_u64 a, pq_u64 b)
{
    return _mm256_xor_si256(pq_lt_u64(b, a), _mm256_set1_epi64x(-1));
}
static inline pq_u64 pq_select(pq_cmp m, pq_u64 a, pq_u64 b) { return _mm256_blendv_epi8(b, a, m); }
static inline pq_u64 pq_min_u64(pq_u64 a, pq_u64 b) { return pq_select(pq_lt_u64(a, b), a, b); }
static inline pq_cmp pq_cmp_and(pq_cmp a, pq_cmp b) { return _mm256_and_si256(a, b); }
static inline pq_cmp pq_cmp_or(pq_cmp a, pq_cmp b) { return _mm256_or_si256(a, b); }
static inline pq_cmp pq_cmp_andnot(pq_cmp a, pq_cmp b) { return _mm256_andnot_si256(b, a); }
static inline pq_cmp pq_cmp_none(void) { return _mm256_setzero_si256(); }
static inline pq_mask pq_bits(pq_cmp m) { return (pq_mask)_mm256_movemask_pd(_mm256_castsi256_pd(m)); }
/* No 64-bit lzcnt: y = 2a + 1 (never 0, below 2^52) becomes a double
 * exactly (its bits under 2^52's exponent, less 2^52), whose exponent e
 * is floor(log2 y) + 1023 = floor(log2 a) + 1024 (a > 0) or 1023 (a = 0):
 * lzcnt(a) = 1087 - e. */
static inline pq_u64 pq_lzcnt(pq_u64 a)
{
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000ll);
    __m256i y = _mm256_or_si256(_mm256_add_epi64(a, a), _mm256_set1_epi64x(1));
    __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(y, magic)), _mm256_castsi256_pd(magic));
    return _mm256_sub_epi64(_mm256_set1_epi64x(1087), _mm256_srli_epi64(_mm256_castpd_si256(d), 52));
}
/* As AVX-512's; max < 2^31 (a signed conversion). */
static inline pq_u64 pq_quantize(pd_f64 t, double max)
{
    t = _mm256_min_pd(_mm256_max_pd(t, _mm256_setzero_pd()), _mm256_set1_pd(max));
    return _mm256_cvtepu32_epi64(_mm256_cvttpd_epi32(t));
}
static inline pd_f64 pq_gather_f64(const double *p, int64_t stride)
{
    __m256i at = _mm256_setr_epi64x(0, stride, 2 * stride, 3 * stride);
    return _mm256_i64gather_pd(p, at, 8);
}
/* The kept lanes' indices from vec.h's table (lane_order.h), each made
 * the pair of 32-bit lanes 2L, 2L + 1, then one permute. */
static inline void pq_compress(uint64_t *out, pq_u64 v, pq_mask m)
{
    __m256i lane = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)(uint32_t)prox_lane_order8[m]));
    __m256i pair = _mm256_or_si256(_mm256_add_epi64(lane, lane),
                                   _mm256_add_epi64(_mm256_slli_epi64(lane, 33),
                                                    _mm256_set1_epi64x(1ll << 32)));
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permutevar8x32_epi32(v, pair));
}
static inline __m128i pq_half(pv_i32 v, int half)
{
    return half ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v);
}
static inline pq_u64 pq_widen(pv_i32 v, int half) { return _mm256_cvtepu32_epi64(pq_half(v, half)); }
static inline pq_u64 pq_gather_u64(const uint64_t *base, pv_i32 index, int half, pq_mask live)
{
    return _mm256_mask_i32gather_epi64(_mm256_setzero_si256(), (const long long *)(const void *)base,
                                       pq_half(index, half), pq_lanes_of(live), 8);
}
static inline pv_i32 pq_gather_u32(const uint32_t *base, pv_i32 index, pv_mask live)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i lanes = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)live), bit), bit);
    return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(const void *)base, index,
                                       lanes, 4);
}
static inline pv_i32 pq_lanes_u32(pv_mask m)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)m), bit), bit);
}
static inline void pq_store_first_u32(int32_t *p, pv_i32 v)
{
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(v));
}
static inline void pq_store_iota_u32(int32_t *p, int64_t first)
{
    __m128i at = _mm_add_epi32(_mm_set1_epi32((int32_t)first), _mm_setr_epi32(0, 1, 2, 3));
    _mm_storeu_si128((__m128i *)(void *)p, at);
}

#elif PROX_SIMD_SSE2 /* -------------------------------------------------- */

#define PQ_W 2
typedef __m128i pq_u64;
typedef __m128i pq_cmp;

static inline pq_u64 pq_set1(uint64_t v) { return _mm_set1_epi64x((long long)v); }
static inline pq_u64 pq_load_n(const uint64_t *p, int64_t n)
{
    return n >= PQ_W ? _mm_loadu_si128((const __m128i *)(const void *)p)
                     : _mm_loadl_epi64((const __m128i *)(const void *)p);
}
static inline void pq_store(uint64_t *p, pq_u64 v) { _mm_storeu_si128((__m128i *)(void *)p, v); }
static inline void pq_store_u32(uint32_t *p, pq_u64 v)
{
    _mm_storel_epi64((__m128i *)(void *)p, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 0, 2, 0)));
}
static inline pq_u64 pq_add(pq_u64 a, pq_u64 b) { return _mm_add_epi64(a, b); }
static inline pq_u64 pq_sub(pq_u64 a, pq_u64 b) { return _mm_sub_epi64(a, b); }
static inline pq_u64 pq_and(pq_u64 a, pq_u64 b) { return _mm_and_si128(a, b); }
static inline pq_u64 pq_or(pq_u64 a, pq_u64 b) { return _mm_or_si128(a, b); }
static inline pq_u64 pq_xor(pq_u64 a, pq_u64 b) { return _mm_xor_si128(a, b); }
static inline pq_u64 pq_shl(pq_u64 a, int n) { return _mm_slli_epi64(a, n); }
static inline pq_u64 pq_shr(pq_u64 a, int n) { return _mm_srli_epi64(a, n); }
/* One shift a lane (a shift's count is the low 64 bits of its operand),
 * lane 0 from the first, lane 1 from the second. */
static inline pq_u64 pq_lanes01(__m128i lane0, __m128i lane1)
{
    return _mm_castpd_si128(_mm_move_sd(_mm_castsi128_pd(lane1), _mm_castsi128_pd(lane0)));
}
static inline pq_u64 pq_shlv(pq_u64 a, pq_u64 n)
{
    return pq_lanes01(_mm_sll_epi64(a, n), _mm_sll_epi64(a, _mm_unpackhi_epi64(n, n)));
}
static inline pq_u64 pq_shrv(pq_u64 a, pq_u64 n)
{
    return pq_lanes01(_mm_srl_epi64(a, n), _mm_srl_epi64(a, _mm_unpackhi_epi64(n, n)));
}
/* No 64-bit compares: the 32-bit halves compared (unsigned, by flipped
 * sign bits), the high halves deciding unless equal, the result spread
 * over both halves of each lane. */
static inline pq_cmp pq_eq(pq_u64 a, pq_u64 b)
{
    __m128i e = _mm_cmpeq_epi32(a, b);
    return _mm_and_si128(e, _mm_shuffle_epi32(e, _MM_SHUFFLE(2, 3, 0, 1)));
}
static inline pq_cmp pq_lt_u64(pq_u64 a, pq_u64 b)
{
    const __m128i sign = _mm_set1_epi32(INT32_MIN);
    __m128i lt = _mm_cmpgt_epi32(_mm_xor_si128(b, sign), _mm_xor_si128(a, sign));
    __m128i eq = _mm_cmpeq_epi32(a, b);
    __m128i low_lt = _mm_shuffle_epi32(lt, _MM_SHUFFLE(2, 2, 0, 0));
    __m128i r = _mm_or_si128(lt, _mm_and_si128(eq, low_lt));
    return _mm_shuffle_epi32(r, _MM_SHUFFLE(3, 3, 1, 1));
}
static inline pq_cmp pq_le_u64(pq_u64 a, pq_u64 b)
{
    return _mm_xor_si128(pq_lt_u64(b, a), _mm_set1_epi32(-1));
}
static inline pq_u64 pq_select(pq_cmp m, pq_u64 a, pq_u64 b)
{
    return _mm_or_si128(_mm_and_si128(m, a), _mm_andnot_si128(m, b));
}
static inline pq_u64 pq_min_u64(pq_u64 a, pq_u64 b) { return pq_select(pq_lt_u64(a, b), a, b); }
static inline pq_cmp pq_cmp_and(pq_cmp a, pq_cmp b) { return _mm_and_si128(a, b); }
static inline pq_cmp pq_cmp_or(pq_cmp a, pq_cmp b) { return _mm_or_si128(a, b); }
static inline pq_cmp pq_cmp_andnot(pq_cmp a, pq_cmp b) { return _mm_andnot_si128(b, a); }
static inline pq_cmp pq_cmp_none(void) { return _mm_setzero_si128(); }
static inline pq_mask pq_bits(pq_cmp m) { return (pq_mask)_mm_movemask_pd(_mm_castsi128_pd(m)); }
/* Through a double's exponent, as AVX2's. */
static inline pq_u64 pq_lzcnt(pq_u64 a)
{
    const __m128i magic = _mm_set1_epi64x(0x4330000000000000ll);
    __m128i y = _mm_or_si128(_mm_add_epi64(a, a), _mm_set1_epi64x(1));
    __m128d d = _mm_sub_pd(_mm_castsi128_pd(_mm_or_si128(y, magic)), _mm_castsi128_pd(magic));
    return _mm_sub_epi64(_mm_set1_epi64x(1087), _mm_srli_epi64(_mm_castpd_si128(d), 52));
}
static inline pq_u64 pq_quantize(pd_f64 t, double max) /* max < 2^31 */
{
    t = _mm_min_pd(_mm_max_pd(t, _mm_setzero_pd()), _mm_set1_pd(max));
    return _mm_unpacklo_epi32(_mm_cvttpd_epi32(t), _mm_setzero_si128());
}
static inline pd_f64 pq_gather_f64(const double *p, int64_t stride)
{
    return _mm_loadh_pd(_mm_load_sd(p), p + stride);
}
/* out[0] is lane 1 only when m keeps lane 1 alone. */
static inline void pq_compress(uint64_t *out, pq_u64 v, pq_mask m)
{
    uint64_t lane[PQ_W];
    _mm_storeu_si128((__m128i *)(void *)lane, v);
    out[0] = lane[(m >> 1) & ~m & 1u];
    out[1] = lane[1];
}
static inline pq_u64 pq_widen(pv_i32 v, int half)
{
    return half ? _mm_unpackhi_epi32(v, _mm_setzero_si128()) : _mm_unpacklo_epi32(v, _mm_setzero_si128());
}
/* No gathers: a load a lane. */
static inline pq_u64 pq_gather_u64(const uint64_t *base, pv_i32 index, int half, pq_mask live)
{
    uint32_t at[PV_W];
    _mm_storeu_si128((__m128i *)(void *)at, index);
    long long w0 = live & 1 ? (long long)base[at[2 * half]] : 0;
    long long w1 = live & 2 ? (long long)base[at[2 * half + 1]] : 0;
    return _mm_set_epi64x(w1, w0);
}
static inline pv_i32 pq_gather_u32(const uint32_t *base, pv_i32 index, pv_mask live)
{
    uint32_t at[PV_W], w[PV_W];
    _mm_storeu_si128((__m128i *)(void *)at, index);
    for (int k = 0; k < PV_W; k++)
        w[k] = live >> k & 1 ? base[at[k]] : 0;
    return _mm_setr_epi32((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
}
static inline pv_i32 pq_lanes_u32(pv_mask m)
{
    const __m128i bit = _mm_setr_epi32(1, 2, 4, 8);
    return _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32((int)m), bit), bit);
}
static inline void pq_store_first_u32(int32_t *p, pv_i32 v) { _mm_storel_epi64((__m128i *)(void *)p, v); }
static inline void pq_store_iota_u32(int32_t *p, int64_t first)
{
    p[0] = (int32_t)first;
    p[1] = (int32_t)(first + 1);
}

#elif PROX_SIMD_NEON /* -------------------------------------------------- */

#define PQ_W 2
typedef uint64x2_t pq_u64;
typedef uint64x2_t pq_cmp;

static inline pq_u64 pq_set1(uint64_t v) { return vdupq_n_u64(v); }
static inline pq_u64 pq_load_n(const uint64_t *p, int64_t n)
{
    return n >= PQ_W ? vld1q_u64(p) : vsetq_lane_u64(p[0], vdupq_n_u64(0), 0);
}
static inline void pq_store(uint64_t *p, pq_u64 v) { vst1q_u64(p, v); }
static inline void pq_store_u32(uint32_t *p, pq_u64 v) { vst1_u32(p, vmovn_u64(v)); }
static inline pq_u64 pq_add(pq_u64 a, pq_u64 b) { return vaddq_u64(a, b); }
static inline pq_u64 pq_sub(pq_u64 a, pq_u64 b) { return vsubq_u64(a, b); }
static inline pq_u64 pq_and(pq_u64 a, pq_u64 b) { return vandq_u64(a, b); }
static inline pq_u64 pq_or(pq_u64 a, pq_u64 b) { return vorrq_u64(a, b); }
static inline pq_u64 pq_xor(pq_u64 a, pq_u64 b) { return veorq_u64(a, b); }
/* Shifts by a register (a negative count shifts right). */
static inline pq_u64 pq_shl(pq_u64 a, int n) { return vshlq_u64(a, vdupq_n_s64(n)); }
static inline pq_u64 pq_shr(pq_u64 a, int n) { return vshlq_u64(a, vdupq_n_s64(-n)); }
static inline pq_u64 pq_shlv(pq_u64 a, pq_u64 n) { return vshlq_u64(a, vreinterpretq_s64_u64(n)); }
static inline pq_u64 pq_shrv(pq_u64 a, pq_u64 n)
{
    return vshlq_u64(a, vnegq_s64(vreinterpretq_s64_u64(n)));
}
static inline pq_cmp pq_eq(pq_u64 a, pq_u64 b) { return vceqq_u64(a, b); }
static inline pq_cmp pq_lt_u64(pq_u64 a, pq_u64 b) { return vcltq_u64(a, b); }
static inline pq_cmp pq_le_u64(pq_u64 a, pq_u64 b) { return vcleq_u64(a, b); }
static inline pq_u64 pq_select(pq_cmp m, pq_u64 a, pq_u64 b) { return vbslq_u64(m, a, b); }
static inline pq_u64 pq_min_u64(pq_u64 a, pq_u64 b) { return vbslq_u64(vcltq_u64(a, b), a, b); }
static inline pq_cmp pq_cmp_and(pq_cmp a, pq_cmp b) { return vandq_u64(a, b); }
static inline pq_cmp pq_cmp_or(pq_cmp a, pq_cmp b) { return vorrq_u64(a, b); }
static inline pq_cmp pq_cmp_andnot(pq_cmp a, pq_cmp b) { return vbicq_u64(a, b); }
static inline pq_cmp pq_cmp_none(void) { return vdupq_n_u64(0); }
static inline pq_mask pq_bits(pq_cmp m)
{
    return (pq_mask)(vgetq_lane_u64(m, 0) & 1) | (pq_mask)(vgetq_lane_u64(m, 1) & 1) << 1;
}
/* No 64-bit clz: as AVX2's, y = 2a + 1 converted (exactly, below 2^53). */
static inline pq_u64 pq_lzcnt(pq_u64 a)
{
    uint64x2_t y = vorrq_u64(vaddq_u64(a, a), vdupq_n_u64(1));
    uint64x2_t e = vshrq_n_u64(vreinterpretq_u64_f64(vcvtq_f64_u64(y)), 52);
    return vsubq_u64(vdupq_n_u64(1087), e);
}
/* maxnm gives the number where one operand is a NaN: 0. */
static inline pq_u64 pq_quantize(pd_f64 t, double max)
{
    t = vminq_f64(vmaxnmq_f64(t, vdupq_n_f64(0.0)), vdupq_n_f64(max));
    return vcvtq_u64_f64(t);
}
static inline pd_f64 pq_gather_f64(const double *p, int64_t stride)
{
    return vcombine_f64(vld1_f64(p), vld1_f64(p + stride));
}
static inline void pq_compress(uint64_t *out, pq_u64 v, pq_mask m)
{
    uint64_t lane[PQ_W];
    vst1q_u64(lane, v);
    out[0] = lane[(m >> 1) & ~m & 1u];
    out[1] = lane[1];
}
static inline pq_u64 pq_widen(pv_i32 v, int half)
{
    uint32x4_t u = vreinterpretq_u32_s32(v);
    return vmovl_u32(half ? vget_high_u32(u) : vget_low_u32(u));
}
static inline pq_u64 pq_gather_u64(const uint64_t *base, pv_i32 index, int half, pq_mask live)
{
    uint32_t at[PV_W];
    vst1q_u32(at, vreinterpretq_u32_s32(index));
    uint64_t w[PQ_W] = {live & 1 ? base[at[2 * half]] : 0, live & 2 ? base[at[2 * half + 1]] : 0};
    return vld1q_u64(w);
}
static inline pv_i32 pq_gather_u32(const uint32_t *base, pv_i32 index, pv_mask live)
{
    uint32_t at[PV_W], w[PV_W];
    vst1q_u32(at, vreinterpretq_u32_s32(index));
    for (int k = 0; k < PV_W; k++)
        w[k] = live >> k & 1 ? base[at[k]] : 0;
    return vreinterpretq_s32_u32(vld1q_u32(w));
}
static inline pv_i32 pq_lanes_u32(pv_mask m)
{
    const uint32_t weight[4] = {1, 2, 4, 8};
    return vreinterpretq_s32_u32(vtstq_u32(vdupq_n_u32(m), vld1q_u32(weight)));
}
static inline void pq_store_first_u32(int32_t *p, pv_i32 v) { vst1_s32(p, vget_low_s32(v)); }
static inline void pq_store_iota_u32(int32_t *p, int64_t first)
{
    p[0] = (int32_t)first;
    p[1] = (int32_t)(first + 1);
}

#else /* scalar: one lane ------------------------------------------------ */

#define PQ_W 1
typedef uint64_t pq_u64;
typedef bool pq_cmp;

static inline pq_u64 pq_set1(uint64_t v) { return v; }
static inline pq_u64 pq_load_n(const uint64_t *p, int64_t n)
{
    (void)n; /* n >= 1 whenever a kernel loads */
    return p[0];
}
static inline void pq_store(uint64_t *p, pq_u64 v) { p[0] = v; }
static inline void pq_store_u32(uint32_t *p, pq_u64 v) { p[0] = (uint32_t)v; }
static inline pq_u64 pq_add(pq_u64 a, pq_u64 b) { return a + b; }
static inline pq_u64 pq_sub(pq_u64 a, pq_u64 b) { return a - b; }
static inline pq_u64 pq_and(pq_u64 a, pq_u64 b) { return a & b; }
static inline pq_u64 pq_or(pq_u64 a, pq_u64 b) { return a | b; }
static inline pq_u64 pq_xor(pq_u64 a, pq_u64 b) { return a ^ b; }
static inline pq_u64 pq_shl(pq_u64 a, int n) { return a << n; }
static inline pq_u64 pq_shr(pq_u64 a, int n) { return a >> n; }
static inline pq_u64 pq_shlv(pq_u64 a, pq_u64 n) { return n < 64 ? a << n : 0; }
static inline pq_u64 pq_shrv(pq_u64 a, pq_u64 n) { return n < 64 ? a >> n : 0; }
static inline pq_u64 pq_min_u64(pq_u64 a, pq_u64 b) { return a < b ? a : b; }
static inline pq_cmp pq_eq(pq_u64 a, pq_u64 b) { return a == b; }
static inline pq_cmp pq_lt_u64(pq_u64 a, pq_u64 b) { return a < b; }
static inline pq_cmp pq_le_u64(pq_u64 a, pq_u64 b) { return a <= b; }
static inline pq_u64 pq_select(pq_cmp m, pq_u64 a, pq_u64 b) { return m ? a : b; }
static inline pq_cmp pq_cmp_and(pq_cmp a, pq_cmp b) { return a && b; }
static inline pq_cmp pq_cmp_or(pq_cmp a, pq_cmp b) { return a || b; }
static inline pq_cmp pq_cmp_andnot(pq_cmp a, pq_cmp b) { return a && !b; }
static inline pq_cmp pq_cmp_none(void) { return false; }
static inline pq_mask pq_bits(pq_cmp m) { return m; }
static inline pq_u64 pq_lzcnt(pq_u64 a) { return a ? (pq_u64)__builtin_clzll(a) : 64; }
/* prox_kd_quantize's clamps; max < 2^32. */
static inline pq_u64 pq_quantize(pd_f64 t, double max)
{
    if (!(t > 0))
        return 0;
    return t >= max ? (pq_u64)max : (pq_u64)t;
}
static inline pd_f64 pq_gather_f64(const double *p, int64_t stride)
{
    (void)stride;
    return p[0];
}
static inline void pq_compress(uint64_t *out, pq_u64 v, pq_mask m)
{
    (void)m; /* the caller advances by the count: a store it skips is overwritten */
    out[0] = v;
}
static inline pq_u64 pq_widen(pv_i32 v, int half)
{
    (void)half;
    return (uint32_t)v;
}
static inline pq_u64 pq_gather_u64(const uint64_t *base, pv_i32 index, int half, pq_mask live)
{
    (void)half;
    return live ? base[(uint32_t)index] : 0;
}
static inline pv_i32 pq_gather_u32(const uint32_t *base, pv_i32 index, pv_mask live)
{
    return live ? (int32_t)base[(uint32_t)index] : 0;
}
static inline pv_i32 pq_lanes_u32(pv_mask m) { return m & 1 ? -1 : 0; }
static inline void pq_store_first_u32(int32_t *p, pv_i32 v) { p[0] = v; }
static inline void pq_store_iota_u32(int32_t *p, int64_t first) { p[0] = (int32_t)first; }

#endif /* ------------------------------------------------------------------ */

_Static_assert(PQ_W == PD_W, "a vector of doubles converts into one of 64-bit lanes");
_Static_assert(PV_W == PQ_W || PV_W == 2 * PQ_W, "a vector of 32-bit lanes widens into one or two");

/* Lanes of 32 bits per vector of 64-bit lanes' worth: pq_widen's halves. */
#define PQ_HALVES (PV_W / PQ_W)

/* Where the kernels over these lanes beat the scalar code they stand
 * beside, the one place that chooses (measured: docs/design.md).
 * PQ_RECORDS: the kd-tree's records a group of boxes at a time
 *   (kd_split.c), at AVX-512 and AVX2, where 64-bit compares, minimums and
 *   shifts by lane are an instruction or two. Not at SSE2, which has none
 *   of the three (each is several instructions here), nor at one lane
 *   (scalar), where deciding every state of every box costs more than the
 *   recursion's mispredicted branches over the states a box reaches; NEON
 *   has SSE2's two lanes, and takes the recursion too (not measured on
 *   AArch64 hardware).
 * PQ_SWEEP: kd-tree-2's blocked sweep (linear_kdtree.c), at AVX-512 only:
 *   its filter gathers both quantized boxes of every listed pair, where the
 *   sweep a pair at a time keeps a record's box in registers and stops at
 *   a pair's first failing compare; AVX2's gathers, and the loads a lane
 *   below them, lose to that.
 * PQ_RANK_SORT: the radix sort's small buckets of records by rank
 *   (radix_sort.c), at AVX-512 only: at four lanes and fewer (AVX2's and
 *   SSE2's unsigned 64-bit compares each several instructions) counting
 *   every key against every key costs more than insertion's mispredicted
 *   exits on the kd-tree's records. */
#define PQ_RECORDS (PROX_SIMD_AVX512 || PROX_SIMD_AVX2)
#define PQ_SWEEP PROX_SIMD_AVX512
#define PQ_RANK_SORT PROX_SIMD_AVX512

/* Every lane. */
static inline pq_cmp pq_cmp_all(void) { return pq_eq(pq_set1(0), pq_set1(0)); }

/* prox_morton_spread3 (dim 3) or prox_morton_spread2 (dim 2) of each lane:
 * the same steps (core/morton.h). */
static inline pq_u64 pq_morton_spread(int dim, pq_u64 v)
{
    const prox_morton_step *step = dim == 3 ? prox_morton3_steps : prox_morton2_steps;
    v = pq_and(v, pq_set1(dim == 3 ? PROX_MORTON3_AXIS : PROX_MORTON2_AXIS));
    for (int s = 0; s < PROX_MORTON_STEPS; s++)
        v = pq_and(pq_or(v, pq_shl(v, step[s].shift)), pq_set1(step[s].mask));
    return v;
}

#endif
