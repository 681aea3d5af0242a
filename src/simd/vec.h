/* vec.h: the vector operations the distance kernels are written in
 * (kernel_fixed.h), one implementation per SIMD level: AVX-512 (16 lanes,
 * masks in mask registers), AVX2 (8), SSE2 and NEON (4), and scalar (1
 * lane, plain C). A kernel written over these runs unchanged on each.
 *
 * Lanes are 32 bits: int32 coordinates, their float squares, uint32 ids,
 * and pairs of int16 (rel16 coordinates). A mask (pv_mask) holds lane k in
 * bit k; the comparisons named ...v (pv_eqv, pv_gtv_u32) give lanes of all
 * ones or zeros instead, for sums kept in vectors.
 *
 * Loads of n < PV_W lanes never read past the n-th element; dead lanes
 * read as 0. pv_load reads a whole vector, PV_W words, for arrays that
 * keep room past their last element (the grid's fixed-point coordinates
 * and ids: grid_private.h, GRID_READ_SLACK). A pv_pack collects words
 * into the lanes of one vector, a few at a time (the point sweep packs
 * ranges into one vector): a vector filled by masked loads where they
 * exist, else a small array that pv_pack_vec reads once. pv_compress
 * stores PV_W lanes whatever the mask, so its output needs PV_W entries
 * of room past the last kept one (PROX_KERNEL_SLACK). Where PV_TRANSPOSE
 * is 1 (AVX-512, AVX2, NEON: the levels whose row sort works on columns),
 * pv_transpose turns PV_W rows into PV_W columns and pv_blend_n takes the
 * first n lanes of one vector and the rest of another.
 *
 * Exactness: every float operation is the scalar one lane by lane (IEEE
 * single, round to nearest, no contraction), so each level decides as the
 * scalar code does. */
#ifndef PROX_VEC_H
#define PROX_VEC_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd/lane_order.h"
#include "simd/simd.h"

typedef uint32_t pv_mask;

/* The mask of the first n lanes: bits 0 .. n - 1, at most PV_W of them
 * (defined once PV_W is; n is read twice). */
#define pv_live(n) ((n) >= PV_W ? (pv_mask)((1ull << PV_W) - 1) : (pv_mask)((1u << (n)) - 1))

/* The lanes of 4 that m keeps, in order, to out[0 .. 4): the kept lanes'
 * indices from the table (lane_order.h), then four plain stores whatever
 * the mask (SSE2 and NEON have no permute by an index vector). No branch
 * on the mask: a loop over its bits mispredicts on hits that come at
 * random (W1's rows: one candidate in six). */
static inline void prox_compress_lanes4(uint32_t *out, const uint32_t lane[4], pv_mask m)
{
    uint32_t order = (uint32_t)prox_lane_order8[m & 15u];
    out[0] = lane[order & 3u];
    out[1] = lane[order >> 8 & 3u];
    out[2] = lane[order >> 16 & 3u];
    out[3] = lane[order >> 24 & 3u];
}

#if PROX_SIMD_AVX512 /* -------------------------------------------------- */

#define PV_W 16
typedef __m512i pv_i32;
typedef __m512 pv_f32;

static inline pv_i32 pv_set1_i32(int32_t v) { return _mm512_set1_epi32(v); }
static inline pv_f32 pv_set1_f32(float v) { return _mm512_set1_ps(v); }
static inline pv_i32 pv_iota(int64_t first)
{
    return _mm512_add_epi32(_mm512_set1_epi32((int32_t)first),
                            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}
/* Elements p[0 .. n) (n >= PV_W: all lanes), by a masked load. */
static inline pv_i32 pv_load_n(const void *p, int64_t n)
{
    return _mm512_maskz_loadu_epi32((__mmask16)pv_live(n), p);
}
/* Lanes at .. at + n - 1 of the pack loaded from p[0 .. n) (at + n <=
 * PV_W); nothing else read. The address of lane 0 may precede p: it is
 * made as an integer, and its masked lanes are never read (nor fault). */
typedef struct pv_pack { pv_i32 v; } pv_pack;
static inline void pv_pack_put(pv_pack *k, const uint32_t *p, int at, int n)
{
    __mmask16 lanes = (__mmask16)(((1u << n) - 1) << at);
    k->v = _mm512_mask_loadu_epi32(k->v, lanes, (const void *)((uintptr_t)p - (uintptr_t)at * 4u));
}
static inline pv_i32 pv_pack_vec(const pv_pack *k) { return k->v; }
static inline pv_i32 pv_add_i32(pv_i32 a, pv_i32 b) { return _mm512_add_epi32(a, b); }
static inline pv_i32 pv_sub_i32(pv_i32 a, pv_i32 b) { return _mm512_sub_epi32(a, b); }
static inline pv_i32 pv_sub_i16(pv_i32 a, pv_i32 b) { return _mm512_sub_epi16(a, b); }
static inline pv_i32 pv_madd_i16(pv_i32 a, pv_i32 b) { return _mm512_madd_epi16(a, b); }
static inline pv_i32 pv_and(pv_i32 a, pv_i32 b) { return _mm512_and_si512(a, b); }
static inline pv_i32 pv_or(pv_i32 a, pv_i32 b) { return _mm512_or_si512(a, b); }
static inline pv_i32 pv_eqv(pv_i32 a, pv_i32 b) { return _mm512_movm_epi32(_mm512_cmpeq_epi32_mask(a, b)); }
static inline int32_t pv_hsum(pv_i32 a) { return _mm512_reduce_add_epi32(a); }
static inline pv_i32 pv_gt_i32(pv_i32 a, pv_i32 b) { return _mm512_movm_epi32(_mm512_cmpgt_epi32_mask(a, b)); }
static inline pv_i32 pv_gtv_u32(pv_i32 a, pv_i32 b) { return _mm512_movm_epi32(_mm512_cmpgt_epu32_mask(a, b)); }
static inline pv_i32 pv_load(const void *p) { return _mm512_loadu_si512(p); }
static inline void pv_store(void *p, pv_i32 v) { _mm512_storeu_si512(p, v); }
static inline pv_i32 pv_sra_i32(pv_i32 a, int n) { return _mm512_sra_epi32(a, _mm_cvtsi32_si128(n)); }
static inline pv_i32 pv_shl16(pv_i32 a) { return _mm512_slli_epi32(a, 16); }
static inline pv_i32 pv_min_u32(pv_i32 a, pv_i32 b) { return _mm512_min_epu32(a, b); }
static inline pv_i32 pv_max_u32(pv_i32 a, pv_i32 b) { return _mm512_max_epu32(a, b); }
static inline pv_f32 pv_to_f32(pv_i32 a) { return _mm512_cvtepi32_ps(a); }
static inline pv_f32 pv_add_f32(pv_f32 a, pv_f32 b) { return _mm512_add_ps(a, b); }
static inline pv_f32 pv_mul_f32(pv_f32 a, pv_f32 b) { return _mm512_mul_ps(a, b); }
static inline pv_mask pv_bits(pv_i32 lanes) { return _mm512_movepi32_mask(lanes); }
static inline pv_mask pv_le_f32(pv_f32 a, pv_f32 b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline pv_mask pv_lt_f32(pv_f32 a, pv_f32 b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline pv_f32 pv_load_f32_n(const float *p, int64_t n)
{
    return _mm512_maskz_loadu_ps((__mmask16)pv_live(n), p);
}
static inline pv_mask pv_le_u32(pv_i32 a, pv_i32 b) { return _mm512_cmple_epu32_mask(a, b); }
static inline pv_mask pv_eq_i32(pv_i32 a, pv_i32 b) { return _mm512_cmpeq_epi32_mask(a, b); }
/* The lanes of v that m keeps, in order: compressed in a register, then
 * one plain store (a compressing store to memory is slow on some CPUs). */
static inline void pv_compress(uint32_t *out, pv_i32 v, pv_mask m)
{
    _mm512_storeu_si512((void *)out, _mm512_maskz_compress_epi32((__mmask16)m, v));
}
/* Elements p[0 .. n) (n >= PV_W: all lanes), `pad` in the lanes past n;
 * nothing past p[n - 1] read. */
static inline pv_i32 pv_load_pad_n(const void *p, int64_t n, uint32_t pad)
{
    return _mm512_mask_loadu_epi32(_mm512_set1_epi32((int32_t)pad), (__mmask16)pv_live(n), p);
}
/* Lanes 0 .. n - 1 of v to p[0 .. n) (n >= PV_W: all); nothing past. */
static inline void pv_store_n(void *p, pv_i32 v, int64_t n)
{
    _mm512_mask_storeu_epi32(p, (__mmask16)pv_live(n), v);
}
/* Rows v[0 .. 16) become columns: lane c of v[r] goes to lane r of v[c].
 * Pairs of lanes, pairs of pairs, then 128-bit quarters twice. */
#define PV_TRANSPOSE 1
static inline void pv_transpose(pv_i32 v[PV_W])
{
    __m512i t[16], u[16];
    for (int r = 0; r < 16; r += 2) {
        t[r] = _mm512_unpacklo_epi32(v[r], v[r + 1]);
        t[r + 1] = _mm512_unpackhi_epi32(v[r], v[r + 1]);
    }
    for (int r = 0; r < 16; r += 4)
        for (int h = 0; h < 2; h++) {
            u[r + h] = _mm512_unpacklo_epi64(t[r + h], t[r + 2 + h]);
            u[r + 2 + h] = _mm512_unpackhi_epi64(t[r + h], t[r + 2 + h]);
        }
    /* Quarter q of u[4g + j] holds column 4q + c of rows 4g .. 4g + 3,
     * with j = 0, 2, 1, 3 for c = 0 .. 3; the quarters are then
     * transposed as a 4 x 4 block, twice two-source shuffles. */
    static const int order[4] = {0, 2, 1, 3};
    for (int c = 0; c < 4; c++) {
        const __m512i *w = u + order[c];
        __m512i x0 = _mm512_shuffle_i32x4(w[0], w[4], 0x88), x1 = _mm512_shuffle_i32x4(w[0], w[4], 0xdd);
        __m512i y0 = _mm512_shuffle_i32x4(w[8], w[12], 0x88), y1 = _mm512_shuffle_i32x4(w[8], w[12], 0xdd);
        v[c] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        v[8 + c] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
        v[4 + c] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        v[12 + c] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
    }
}
/* Lanes below n of a, the others of b (n any int32: none of a below 1). */
static inline pv_i32 pv_blend_n(pv_i32 a, pv_i32 b, int32_t n)
{
    return _mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(_mm512_set1_epi32(n), pv_iota(0)), b, a);
}
/* A row of up to 64 entries sorted inside registers by networks of
 * pv_exchange steps (radix_sort.c, prox_sort_u32_long): a row alone, where
 * no group of rows fills the columns (PV_TRANSPOSE). */
#define PV_ROW_NETWORK 1
/* One compare-exchange step of a network within a register: lane i meets
 * lane i ^ j (j = 1, 2, 4 or 8) and keeps the larger of the two where
 * take_max has bit i, else the smaller. j must be a constant once inlined:
 * it picks the shuffle. Distances 1 and 2 stay within 128-bit lanes, whose
 * shuffles have a third of a full permute's latency; 4 and 8 move whole
 * 128-bit lanes. */
static PROX_ALWAYS_INLINE pv_i32 pv_exchange(pv_i32 v, int j, pv_mask take_max)
{
    __m512i partner;
    switch (j) {
    case 1:
        partner = _mm512_shuffle_epi32(v, _MM_PERM_CDAB);
        break;
    case 2:
        partner = _mm512_shuffle_epi32(v, _MM_PERM_BADC);
        break;
    case 4:
        partner = _mm512_shuffle_i32x4(v, v, 0xb1); /* 128-bit lanes 1 0 3 2 */
        break;
    default:
        partner = _mm512_shuffle_i32x4(v, v, 0x4e); /* 2 3 0 1 */
        break;
    }
    return _mm512_mask_blend_epi32((__mmask16)take_max, _mm512_min_epu32(v, partner),
                                   _mm512_max_epu32(v, partner));
}

#elif PROX_SIMD_AVX2 /* -------------------------------------------------- */

#define PV_W 8
typedef __m256i pv_i32;
typedef __m256 pv_f32;

static inline pv_i32 pv_set1_i32(int32_t v) { return _mm256_set1_epi32(v); }
static inline pv_f32 pv_set1_f32(float v) { return _mm256_set1_ps(v); }
static inline pv_i32 pv_iota(int64_t first)
{
    return _mm256_add_epi32(_mm256_set1_epi32((int32_t)first),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
/* All ones in the lanes below n, zeros above (n any int32). */
static inline __m256i pv_lanes_below(int32_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), pv_iota(0));
}
/* Elements p[0 .. n) (n >= PV_W: all lanes). */
static inline pv_i32 pv_load_n(const void *p, int64_t n)
{
    if (n >= PV_W)
        return _mm256_loadu_si256((const __m256i *)p);
    return _mm256_maskload_epi32((const int *)p, pv_lanes_below((int32_t)n));
}
/* Lanes 0 .. n - 1 of v to p[0 .. n) (n >= PV_W: all); nothing past. */
static inline void pv_store_n(void *p, pv_i32 v, int64_t n)
{
    if (n >= PV_W) {
        _mm256_storeu_si256((__m256i *)p, v);
        return;
    }
    _mm256_maskstore_epi32((int *)p, pv_lanes_below((int32_t)n), v);
}
/* Lanes below n of a, the others of b (n any int32: none of a below 1). */
static inline pv_i32 pv_blend_n(pv_i32 a, pv_i32 b, int32_t n)
{
    return _mm256_blendv_epi8(b, a, pv_lanes_below(n));
}
/* Rows v[0 .. PV_W) become columns: lane c of v[r] goes to lane r of v[c].
 * Pairs of lanes, then pairs of pairs, interleaved, then the halves. */
#define PV_TRANSPOSE 1
static inline void pv_transpose(pv_i32 v[PV_W])
{
    __m256i t[8], u[8];
    for (int r = 0; r < 8; r += 2) {
        t[r] = _mm256_unpacklo_epi32(v[r], v[r + 1]);
        t[r + 1] = _mm256_unpackhi_epi32(v[r], v[r + 1]);
    }
    for (int r = 0; r < 8; r += 4)
        for (int h = 0; h < 2; h++) {
            u[r + h] = _mm256_unpacklo_epi64(t[r + h], t[r + 2 + h]);
            u[r + 2 + h] = _mm256_unpackhi_epi64(t[r + h], t[r + 2 + h]);
        }
    for (int c = 0; c < 4; c++) {
        int from = (c & 1) * 2 + (c >> 1); /* u's order: 0, 2, 1, 3 */
        v[c] = _mm256_permute2x128_si256(u[from], u[4 + from], 0x20);
        v[c + 4] = _mm256_permute2x128_si256(u[from], u[4 + from], 0x31);
    }
}
typedef struct pv_pack { pv_i32 v; } pv_pack; /* as AVX-512's */
static inline void pv_pack_put(pv_pack *k, const uint32_t *p, int at, int n)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i lanes = _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(at - 1)),
                                     _mm256_cmpgt_epi32(_mm256_set1_epi32(at + n), lane));
    __m256i x = _mm256_maskload_epi32((const int *)((uintptr_t)p - (uintptr_t)at * 4u), lanes);
    k->v = _mm256_blendv_epi8(k->v, x, lanes);
}
static inline pv_i32 pv_pack_vec(const pv_pack *k) { return k->v; }
static inline pv_i32 pv_add_i32(pv_i32 a, pv_i32 b) { return _mm256_add_epi32(a, b); }
static inline pv_i32 pv_sub_i32(pv_i32 a, pv_i32 b) { return _mm256_sub_epi32(a, b); }
static inline pv_i32 pv_sub_i16(pv_i32 a, pv_i32 b) { return _mm256_sub_epi16(a, b); }
/* Lane k: lo16(a) * lo16(b) + hi16(a) * hi16(b), in int32 (pmaddwd). */
static inline pv_i32 pv_madd_i16(pv_i32 a, pv_i32 b) { return _mm256_madd_epi16(a, b); }
static inline pv_i32 pv_and(pv_i32 a, pv_i32 b) { return _mm256_and_si256(a, b); }
static inline pv_i32 pv_or(pv_i32 a, pv_i32 b) { return _mm256_or_si256(a, b); }
static inline pv_i32 pv_eqv(pv_i32 a, pv_i32 b) { return _mm256_cmpeq_epi32(a, b); }
static inline int32_t pv_hsum(pv_i32 a)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}
static inline pv_i32 pv_gt_i32(pv_i32 a, pv_i32 b) { return _mm256_cmpgt_epi32(a, b); }
static inline pv_i32 pv_gtv_u32(pv_i32 a, pv_i32 b) /* flipped signs, compared signed */
{
    const __m256i sign = _mm256_set1_epi32(INT32_MIN);
    return _mm256_cmpgt_epi32(_mm256_xor_si256(a, sign), _mm256_xor_si256(b, sign));
}
static inline pv_i32 pv_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void pv_store(void *p, pv_i32 v) { _mm256_storeu_si256((__m256i *)p, v); }
static inline pv_i32 pv_sra_i32(pv_i32 a, int n) { return _mm256_sra_epi32(a, _mm_cvtsi32_si128(n)); }
static inline pv_i32 pv_shl16(pv_i32 a) { return _mm256_slli_epi32(a, 16); }
static inline pv_i32 pv_min_u32(pv_i32 a, pv_i32 b) { return _mm256_min_epu32(a, b); }
static inline pv_i32 pv_max_u32(pv_i32 a, pv_i32 b) { return _mm256_max_epu32(a, b); }
static inline pv_f32 pv_to_f32(pv_i32 a) { return _mm256_cvtepi32_ps(a); }
static inline pv_f32 pv_add_f32(pv_f32 a, pv_f32 b) { return _mm256_add_ps(a, b); }
static inline pv_f32 pv_mul_f32(pv_f32 a, pv_f32 b) { return _mm256_mul_ps(a, b); }
static inline pv_mask pv_bits(pv_i32 lanes) /* the top bit of each lane */
{
    return (pv_mask)_mm256_movemask_ps(_mm256_castsi256_ps(lanes));
}
static inline pv_mask pv_le_f32(pv_f32 a, pv_f32 b)
{
    return (pv_mask)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LE_OQ));
}
static inline pv_mask pv_lt_f32(pv_f32 a, pv_f32 b)
{
    return (pv_mask)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ));
}
static inline pv_f32 pv_load_f32_n(const float *p, int64_t n)
{
    return _mm256_castsi256_ps(pv_load_n(p, n));
}
static inline pv_mask pv_le_u32(pv_i32 a, pv_i32 b)
{
    return pv_bits(_mm256_cmpeq_epi32(_mm256_max_epu32(a, b), b));
}
static inline pv_mask pv_eq_i32(pv_i32 a, pv_i32 b) { return pv_bits(_mm256_cmpeq_epi32(a, b)); }
/* The lanes of v that m keeps, stored in order at out (PV_W written):
 * their indices from a table (lane_order.h), then one permute. */
static inline void pv_compress(uint32_t *out, pv_i32 v, pv_mask m)
{
    __m256i index = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)prox_lane_order8[m]));
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permutevar8x32_epi32(v, index));
}

#elif PROX_SIMD_SSE2 /* ---------------------------------------------------- */

#define PV_W 4
typedef __m128i pv_i32;
typedef __m128 pv_f32;

static inline pv_i32 pv_set1_i32(int32_t v) { return _mm_set1_epi32(v); }
static inline pv_f32 pv_set1_f32(float v) { return _mm_set1_ps(v); }
static inline pv_i32 pv_iota(int64_t first)
{
    return _mm_add_epi32(_mm_set1_epi32((int32_t)first), _mm_setr_epi32(0, 1, 2, 3));
}
static inline pv_i32 pv_load_n(const void *p, int64_t n)
{
    if (n >= PV_W)
        return _mm_loadu_si128((const __m128i *)p);
    int32_t v[PV_W] = {0, 0, 0, 0};
    memcpy(v, p, (size_t)n * sizeof v[0]);
    return _mm_loadu_si128((const __m128i *)(const void *)v);
}
static inline pv_i32 pv_add_i32(pv_i32 a, pv_i32 b) { return _mm_add_epi32(a, b); }
static inline pv_i32 pv_sub_i32(pv_i32 a, pv_i32 b) { return _mm_sub_epi32(a, b); }
static inline pv_i32 pv_sub_i16(pv_i32 a, pv_i32 b) { return _mm_sub_epi16(a, b); }
static inline pv_i32 pv_madd_i16(pv_i32 a, pv_i32 b) { return _mm_madd_epi16(a, b); }
static inline pv_i32 pv_and(pv_i32 a, pv_i32 b) { return _mm_and_si128(a, b); }
static inline pv_i32 pv_or(pv_i32 a, pv_i32 b) { return _mm_or_si128(a, b); }
static inline pv_i32 pv_eqv(pv_i32 a, pv_i32 b) { return _mm_cmpeq_epi32(a, b); }
static inline int32_t pv_hsum(pv_i32 a)
{
    __m128i s = _mm_add_epi32(a, _mm_shuffle_epi32(a, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}
static inline pv_i32 pv_gt_i32(pv_i32 a, pv_i32 b) { return _mm_cmpgt_epi32(a, b); }
static inline pv_i32 pv_gtv_u32(pv_i32 a, pv_i32 b)
{
    const __m128i sign = _mm_set1_epi32(INT32_MIN);
    return _mm_cmpgt_epi32(_mm_xor_si128(a, sign), _mm_xor_si128(b, sign));
}
static inline pv_i32 pv_load(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline void pv_store(void *p, pv_i32 v) { _mm_storeu_si128((__m128i *)p, v); }
static inline pv_i32 pv_sra_i32(pv_i32 a, int n) { return _mm_sra_epi32(a, _mm_cvtsi32_si128(n)); }
static inline pv_i32 pv_shl16(pv_i32 a) { return _mm_slli_epi32(a, 16); }
/* No unsigned min or max (SSE4.1 has them): a compare, a select. */
static inline pv_i32 pv_max_u32(pv_i32 a, pv_i32 b)
{
    __m128i a_above = pv_gtv_u32(a, b);
    return _mm_or_si128(_mm_and_si128(a_above, a), _mm_andnot_si128(a_above, b));
}
static inline pv_i32 pv_min_u32(pv_i32 a, pv_i32 b)
{
    __m128i a_above = pv_gtv_u32(a, b);
    return _mm_or_si128(_mm_and_si128(a_above, b), _mm_andnot_si128(a_above, a));
}
static inline pv_f32 pv_to_f32(pv_i32 a) { return _mm_cvtepi32_ps(a); }
static inline pv_f32 pv_add_f32(pv_f32 a, pv_f32 b) { return _mm_add_ps(a, b); }
static inline pv_f32 pv_mul_f32(pv_f32 a, pv_f32 b) { return _mm_mul_ps(a, b); }
static inline pv_mask pv_bits(pv_i32 lanes)
{
    return (pv_mask)_mm_movemask_ps(_mm_castsi128_ps(lanes));
}
static inline pv_mask pv_le_f32(pv_f32 a, pv_f32 b) { return (pv_mask)_mm_movemask_ps(_mm_cmple_ps(a, b)); }
static inline pv_mask pv_lt_f32(pv_f32 a, pv_f32 b) { return (pv_mask)_mm_movemask_ps(_mm_cmplt_ps(a, b)); }
static inline pv_f32 pv_load_f32_n(const float *p, int64_t n)
{
    return _mm_castsi128_ps(pv_load_n(p, n));
}
static inline pv_mask pv_le_u32(pv_i32 a, pv_i32 b) /* no unsigned compare: flip the sign bits */
{
    const __m128i sign = _mm_set1_epi32(INT32_MIN);
    return ~pv_bits(_mm_cmpgt_epi32(_mm_xor_si128(a, sign), _mm_xor_si128(b, sign))) & 0xfu;
}
static inline pv_mask pv_eq_i32(pv_i32 a, pv_i32 b) { return pv_bits(_mm_cmpeq_epi32(a, b)); }
static inline void pv_compress(uint32_t *out, pv_i32 v, pv_mask m)
{
    uint32_t lane[PV_W];
    _mm_storeu_si128((__m128i *)(void *)lane, v);
    prox_compress_lanes4(out, lane, m);
}

#elif PROX_SIMD_NEON /* ---------------------------------------------------- */

#define PV_W 4
typedef int32x4_t pv_i32;
typedef float32x4_t pv_f32;

static inline pv_i32 pv_set1_i32(int32_t v) { return vdupq_n_s32(v); }
static inline pv_f32 pv_set1_f32(float v) { return vdupq_n_f32(v); }
static inline pv_i32 pv_iota(int64_t first)
{
    const int32_t step[4] = {0, 1, 2, 3};
    return vaddq_s32(vdupq_n_s32((int32_t)first), vld1q_s32(step));
}
static inline pv_i32 pv_load_n(const void *p, int64_t n)
{
    if (n >= PV_W)
        return vld1q_s32((const int32_t *)p);
    int32_t v[PV_W] = {0, 0, 0, 0};
    if (n > 0)
        memcpy(v, p, (size_t)n * sizeof v[0]);
    return vld1q_s32(v);
}
static inline void pv_store_n(void *p, pv_i32 v, int64_t n)
{
    if (n >= PV_W) {
        vst1q_s32((int32_t *)p, v);
        return;
    }
    int32_t lane[PV_W];
    vst1q_s32(lane, v);
    if (n > 0)
        memcpy(p, lane, (size_t)n * sizeof lane[0]);
}
/* Lanes below n of a, the others of b (n any int32: none of a below 1). */
static inline pv_i32 pv_blend_n(pv_i32 a, pv_i32 b, int32_t n)
{
    return vbslq_s32(vcgtq_s32(vdupq_n_s32(n), pv_iota(0)), a, b);
}
/* Rows to columns: lanes paired (trn1, trn2), then pairs of pairs. */
#define PV_TRANSPOSE 1
static inline void pv_transpose(pv_i32 v[PV_W])
{
    int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(v[0], v[1]));
    int64x2_t t1 = vreinterpretq_s64_s32(vtrn2q_s32(v[0], v[1]));
    int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(v[2], v[3]));
    int64x2_t t3 = vreinterpretq_s64_s32(vtrn2q_s32(v[2], v[3]));
    v[0] = vreinterpretq_s32_s64(vtrn1q_s64(t0, t2));
    v[1] = vreinterpretq_s32_s64(vtrn1q_s64(t1, t3));
    v[2] = vreinterpretq_s32_s64(vtrn2q_s64(t0, t2));
    v[3] = vreinterpretq_s32_s64(vtrn2q_s64(t1, t3));
}
static inline pv_i32 pv_add_i32(pv_i32 a, pv_i32 b) { return vaddq_s32(a, b); }
static inline pv_i32 pv_sub_i32(pv_i32 a, pv_i32 b) { return vsubq_s32(a, b); }
static inline pv_i32 pv_sub_i16(pv_i32 a, pv_i32 b)
{
    return vreinterpretq_s32_s16(vsubq_s16(vreinterpretq_s16_s32(a), vreinterpretq_s16_s32(b)));
}
static inline pv_i32 pv_madd_i16(pv_i32 a, pv_i32 b)
{
    int16x8_t x = vreinterpretq_s16_s32(a), y = vreinterpretq_s16_s32(b);
    int32x4_t lo = vmull_s16(vget_low_s16(x), vget_low_s16(y));
    int32x4_t hi = vmull_high_s16(x, y);
    return vpaddq_s32(lo, hi); /* lanes (0+1), (2+3) of lo, then of hi */
}
static inline pv_i32 pv_and(pv_i32 a, pv_i32 b) { return vandq_s32(a, b); }
static inline pv_i32 pv_or(pv_i32 a, pv_i32 b) { return vorrq_s32(a, b); }
static inline pv_i32 pv_eqv(pv_i32 a, pv_i32 b) { return vreinterpretq_s32_u32(vceqq_s32(a, b)); }
static inline int32_t pv_hsum(pv_i32 a) { return vaddvq_s32(a); }
static inline pv_i32 pv_gt_i32(pv_i32 a, pv_i32 b) { return vreinterpretq_s32_u32(vcgtq_s32(a, b)); }
static inline pv_i32 pv_gtv_u32(pv_i32 a, pv_i32 b)
{
    return vreinterpretq_s32_u32(vcgtq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}
static inline pv_i32 pv_load(const void *p) { return vld1q_s32((const int32_t *)p); }
static inline void pv_store(void *p, pv_i32 v) { vst1q_s32((int32_t *)p, v); }
static inline pv_i32 pv_sra_i32(pv_i32 a, int n) { return vshlq_s32(a, vdupq_n_s32(-n)); }
static inline pv_i32 pv_shl16(pv_i32 a) { return vshlq_n_s32(a, 16); }
static inline pv_i32 pv_min_u32(pv_i32 a, pv_i32 b)
{
    return vreinterpretq_s32_u32(vminq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}
static inline pv_i32 pv_max_u32(pv_i32 a, pv_i32 b)
{
    return vreinterpretq_s32_u32(vmaxq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}
static inline pv_f32 pv_to_f32(pv_i32 a) { return vcvtq_f32_s32(a); }
static inline pv_f32 pv_add_f32(pv_f32 a, pv_f32 b) { return vaddq_f32(a, b); }
static inline pv_f32 pv_mul_f32(pv_f32 a, pv_f32 b) { return vmulq_f32(a, b); }
static inline pv_mask pv_bits_u32(uint32x4_t lanes)
{
    const uint32_t weight[4] = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(lanes, vld1q_u32(weight)));
}
static inline pv_mask pv_bits(pv_i32 lanes)
{
    return pv_bits_u32(vcltq_s32(lanes, vdupq_n_s32(0)));
}
static inline pv_mask pv_le_f32(pv_f32 a, pv_f32 b) { return pv_bits_u32(vcleq_f32(a, b)); }
static inline pv_mask pv_lt_f32(pv_f32 a, pv_f32 b) { return pv_bits_u32(vcltq_f32(a, b)); }
static inline pv_f32 pv_load_f32_n(const float *p, int64_t n)
{
    return vreinterpretq_f32_s32(pv_load_n(p, n));
}
static inline pv_mask pv_le_u32(pv_i32 a, pv_i32 b)
{
    return pv_bits_u32(vcleq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}
static inline pv_mask pv_eq_i32(pv_i32 a, pv_i32 b) { return pv_bits_u32(vceqq_s32(a, b)); }
static inline void pv_compress(uint32_t *out, pv_i32 v, pv_mask m)
{
    uint32_t lane[PV_W];
    vst1q_u32(lane, vreinterpretq_u32_s32(v));
    prox_compress_lanes4(out, lane, m);
}

#else /* scalar: one lane ---------------------------------------------------- */

#define PV_W 1
typedef int32_t pv_i32;
typedef float pv_f32;

static inline pv_i32 pv_set1_i32(int32_t v) { return v; }
static inline pv_f32 pv_set1_f32(float v) { return v; }
static inline pv_i32 pv_iota(int64_t first) { return (int32_t)first; }
static inline pv_i32 pv_load_n(const void *p, int64_t n)
{
    (void)n; /* n >= 1 whenever a kernel loads */
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline pv_i32 pv_add_i32(pv_i32 a, pv_i32 b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline pv_i32 pv_sub_i32(pv_i32 a, pv_i32 b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
static inline pv_i32 pv_sub_i16(pv_i32 a, pv_i32 b)
{
    uint32_t x = (uint32_t)a, y = (uint32_t)b;
    return (int32_t)(((x - y) & 0xffffu) | (((x >> 16) - (y >> 16)) << 16));
}
static inline pv_i32 pv_madd_i16(pv_i32 a, pv_i32 b)
{
    int32_t lo = (int32_t)(int16_t)((uint32_t)a & 0xffff) * (int16_t)((uint32_t)b & 0xffff);
    int32_t hi = (int32_t)(int16_t)((uint32_t)a >> 16) * (int16_t)((uint32_t)b >> 16);
    return (int32_t)((uint32_t)lo + (uint32_t)hi);
}
static inline pv_i32 pv_and(pv_i32 a, pv_i32 b) { return a & b; }
static inline pv_i32 pv_or(pv_i32 a, pv_i32 b) { return a | b; }
static inline pv_i32 pv_eqv(pv_i32 a, pv_i32 b) { return a == b ? -1 : 0; }
static inline int32_t pv_hsum(pv_i32 a) { return a; }
static inline pv_i32 pv_gt_i32(pv_i32 a, pv_i32 b) { return a > b ? -1 : 0; }
static inline pv_i32 pv_gtv_u32(pv_i32 a, pv_i32 b) { return (uint32_t)a > (uint32_t)b ? -1 : 0; }
static inline pv_i32 pv_load(const void *p) { return pv_load_n(p, 1); }
static inline void pv_store(void *p, pv_i32 v) { memcpy(p, &v, sizeof v); }
static inline pv_i32 pv_sra_i32(pv_i32 a, int n) { return a >= 0 ? a >> n : ~(~a >> n); } /* a floor */
static inline pv_i32 pv_shl16(pv_i32 a) { return (int32_t)((uint32_t)a << 16); }
static inline pv_i32 pv_max_u32(pv_i32 a, pv_i32 b) { return (uint32_t)a > (uint32_t)b ? a : b; }
static inline pv_i32 pv_min_u32(pv_i32 a, pv_i32 b) { return (uint32_t)a < (uint32_t)b ? a : b; }
static inline pv_f32 pv_to_f32(pv_i32 a) { return (float)a; }
static inline pv_f32 pv_add_f32(pv_f32 a, pv_f32 b) { return a + b; }
static inline pv_f32 pv_mul_f32(pv_f32 a, pv_f32 b) { return a * b; }
static inline pv_mask pv_bits(pv_i32 lanes) { return (uint32_t)lanes >> 31; }
static inline pv_mask pv_le_f32(pv_f32 a, pv_f32 b) { return a <= b; }
static inline pv_mask pv_lt_f32(pv_f32 a, pv_f32 b) { return a < b; }
static inline pv_f32 pv_load_f32_n(const float *p, int64_t n) { return n > 0 ? p[0] : 0.0f; }
static inline pv_mask pv_le_u32(pv_i32 a, pv_i32 b) { return (uint32_t)a <= (uint32_t)b; }
static inline pv_mask pv_eq_i32(pv_i32 a, pv_i32 b) { return a == b; }
static inline void pv_compress(uint32_t *out, pv_i32 v, pv_mask m)
{
    (void)m; /* the caller advances by popcount(m): a store it skips is overwritten */
    out[0] = (uint32_t)v;
}

#endif /* ------------------------------------------------------------------ */

#if PV_W == 1
/* The scalar level's pack: one lane, a value. */
typedef struct pv_pack { pv_i32 v; } pv_pack;
static inline void pv_pack_put(pv_pack *k, const uint32_t *p, int at, int n)
{
    (void)at; /* 0: at + n <= 1 */
    if (n)
        k->v = (pv_i32)p[0];
}
static inline pv_i32 pv_pack_vec(const pv_pack *k) { return k->v; }
#elif !PROX_SIMD_AVX512 && !PROX_SIMD_AVX2
/* The pack where no masked load exists (SSE2, NEON): words stored one by
 * one into an array, read as a vector once it is full. SSE2 builds the
 * vector from the words, whose loads each take their value from its
 * store; a whole-vector load from four separate stores would wait for them
 * to retire, and the sweep reads a pack soon after filling it. */
typedef struct pv_pack { uint32_t lane[PV_W]; } pv_pack;
static inline void pv_pack_put(pv_pack *k, const uint32_t *p, int at, int n)
{
    /* Written out: as a loop the compiler calls memcpy for the few words. */
    uint32_t *to = k->lane + at;
    if (n > 0)
        to[0] = p[0];
    if (n > 1)
        to[1] = p[1];
    if (n > 2)
        to[2] = p[2];
    if (n > 3)
        to[3] = p[3];
}
static inline pv_i32 pv_pack_vec(const pv_pack *k)
{
#if PROX_SIMD_SSE2
    const uint32_t *w = k->lane;
    return _mm_setr_epi32((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
#else
    return pv_load_n(k->lane, PV_W);
#endif
}
#endif

#ifndef PV_ROW_NETWORK
#define PV_ROW_NETWORK 0
#endif
#ifndef PV_TRANSPOSE
#define PV_TRANSPOSE 0
#endif

/* ids above self (unsigned), as a mask: self + 1 <= id, which on AVX2
 * takes a max, a compare and a movemask, where ~(id <= self) needs two
 * more steps for the complement. self is a point's index, below
 * PROX_MAX_POINTS (UINT32_MAX), so self + 1 does not wrap. */
static inline pv_mask pv_above(pv_i32 ids, uint32_t self)
{
    return pv_le_u32(pv_set1_i32((int32_t)(self + 1)), ids);
}

/* The minimum image of each lane's difference along a periodic axis of P
 * units (P > 0), as the scalar code takes it: d - P above P/2, d + P
 * below -(P/2). */
static inline pv_i32 pv_min_image(pv_i32 d, int32_t P)
{
    pv_i32 above = pv_gt_i32(d, pv_set1_i32(P / 2));
    pv_i32 below = pv_gt_i32(pv_set1_i32(-(P / 2)), d);
    pv_i32 p = pv_set1_i32(P);
    return pv_add_i32(pv_sub_i32(d, pv_and(above, p)), pv_and(below, p));
}

#endif
