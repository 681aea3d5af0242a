/* vec_u8.h: 64 one-byte lanes tested against byte bounds, the filter of
 * sweep and prune (broad/sweep_and_prune.c): at AVX-512 one vector of 64
 * bytes and mask compares; at AVX2, SSE2 and NEON one loop over byte
 * vectors of 32 or 16, each level giving its loads, compares and bits;
 * at the scalar level eight 64-bit words of 8 bytes (SWAR).
 *
 * A box's bounds on two axes are quantised to bytes by a monotonic map, so
 * byte(lo_q) <= byte(hi_p) whenever lo_q <= hi_p: the test may keep a box
 * that does not overlap, never drop one that does. Unsigned compares come
 * from min and max where a level has no unsigned compare (AVX2, SSE2):
 * a <= b exactly when min(a, b) == a. */
#ifndef PROX_VEC_U8_H
#define PROX_VEC_U8_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"

/* The bounds one box is tested against: lo and hi on the first axis, lo
 * and hi on the second. */
typedef struct pb_bounds {
    uint8_t lo0, hi0, lo1, hi1;
} pb_bounds;

/* Bit j set: lane j may overlap b, that is lo0[j] <= b.hi0, hi0[j] >=
 * b.lo0, lo1[j] <= b.hi1 and hi1[j] >= b.lo1, for j < 64. Reads 64 bytes
 * from each array. */
static inline uint64_t pb_overlap64(const uint8_t *lo0, const uint8_t *hi0, const uint8_t *lo1,
                                    const uint8_t *hi1, pb_bounds b);

#if PROX_SIMD_AVX512 /* ---------------------------------------------------- */

static inline uint64_t pb_overlap64(const uint8_t *lo0, const uint8_t *hi0, const uint8_t *lo1,
                                    const uint8_t *hi1, pb_bounds b)
{
    uint64_t m = _mm512_cmple_epu8_mask(_mm512_loadu_si512((const void *)lo0),
                                        _mm512_set1_epi8((char)b.hi0));
    m = _mm512_mask_cmpge_epu8_mask(m, _mm512_loadu_si512((const void *)hi0),
                                    _mm512_set1_epi8((char)b.lo0));
    m = _mm512_mask_cmple_epu8_mask(m, _mm512_loadu_si512((const void *)lo1),
                                    _mm512_set1_epi8((char)b.hi1));
    return _mm512_mask_cmpge_epu8_mask(m, _mm512_loadu_si512((const void *)hi1),
                                       _mm512_set1_epi8((char)b.lo1));
}

#elif PROX_SIMD_AVX2 || PROX_SIMD_SSE2 || PROX_SIMD_NEON /* ----------------- */

/* Vectors of PB_W bytes whose compares give lanes of all ones or zeros;
 * pb_bits turns those into one bit a lane. AVX2 and SSE2 have no unsigned
 * byte compare: a <= b exactly when min(a, b) == a. */
#if PROX_SIMD_AVX2
#define PB_W 32
typedef __m256i pb_u8;
static inline pb_u8 pb_load(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }
static inline pb_u8 pb_set1(uint8_t v) { return _mm256_set1_epi8((char)v); }
static inline pb_u8 pb_le(pb_u8 a, pb_u8 b) { return _mm256_cmpeq_epi8(_mm256_min_epu8(a, b), a); }
static inline pb_u8 pb_ge(pb_u8 a, pb_u8 b) { return _mm256_cmpeq_epi8(_mm256_max_epu8(a, b), a); }
static inline pb_u8 pb_and(pb_u8 a, pb_u8 b) { return _mm256_and_si256(a, b); }
static inline uint64_t pb_bits(pb_u8 ok) { return (uint32_t)_mm256_movemask_epi8(ok); }
#elif PROX_SIMD_SSE2
#define PB_W 16
typedef __m128i pb_u8;
static inline pb_u8 pb_load(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }
static inline pb_u8 pb_set1(uint8_t v) { return _mm_set1_epi8((char)v); }
static inline pb_u8 pb_le(pb_u8 a, pb_u8 b) { return _mm_cmpeq_epi8(_mm_min_epu8(a, b), a); }
static inline pb_u8 pb_ge(pb_u8 a, pb_u8 b) { return _mm_cmpeq_epi8(_mm_max_epu8(a, b), a); }
static inline pb_u8 pb_and(pb_u8 a, pb_u8 b) { return _mm_and_si128(a, b); }
static inline uint64_t pb_bits(pb_u8 ok) { return (uint32_t)_mm_movemask_epi8(ok); }
#else /* NEON */
#define PB_W 16
typedef uint8x16_t pb_u8;
static inline pb_u8 pb_load(const uint8_t *p) { return vld1q_u8(p); }
static inline pb_u8 pb_set1(uint8_t v) { return vdupq_n_u8(v); }
static inline pb_u8 pb_le(pb_u8 a, pb_u8 b) { return vcleq_u8(a, b); }
static inline pb_u8 pb_ge(pb_u8 a, pb_u8 b) { return vcgeq_u8(a, b); }
static inline pb_u8 pb_and(pb_u8 a, pb_u8 b) { return vandq_u8(a, b); }
/* No movemask: the lanes weighted by 1, 2, .. 128 within each half, each
 * half summed. */
static inline uint64_t pb_bits(pb_u8 ok)
{
    static const uint8_t weight[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t w = vandq_u8(ok, vld1q_u8(weight));
    return (uint64_t)vaddv_u8(vget_low_u8(w)) | (uint64_t)vaddv_u8(vget_high_u8(w)) << 8;
}
#endif

static inline uint64_t pb_overlap64(const uint8_t *lo0, const uint8_t *hi0, const uint8_t *lo1,
                                    const uint8_t *hi1, pb_bounds b)
{
    pb_u8 blo0 = pb_set1(b.lo0), bhi0 = pb_set1(b.hi0), blo1 = pb_set1(b.lo1), bhi1 = pb_set1(b.hi1);
    uint64_t m = 0;
    for (int k = 0; k < 64; k += PB_W) {
        pb_u8 ok = pb_and(pb_and(pb_le(pb_load(lo0 + k), bhi0), pb_ge(pb_load(hi0 + k), blo0)),
                          pb_and(pb_le(pb_load(lo1 + k), bhi1), pb_ge(pb_load(hi1 + k), blo1)));
        m |= pb_bits(ok) << k;
    }
    return m;
}

#else /* scalar: eight lanes in a 64-bit word -------------------------------- */

#define PB_HIGH 0x8080808080808080ull

/* The high bit of each byte: x <= y, bytes unsigned. Below the high bit,
 * (y | 0x80) - (x & 0x7f) never borrows across bytes, and its high bit
 * says whether y's low seven bits reach x's; the high bits decide
 * otherwise. */
static inline uint64_t pb_le8(uint64_t x, uint64_t y)
{
    uint64_t low = (y | PB_HIGH) - (x & ~PB_HIGH);
    return ((y & ~x) | (~(x ^ y) & low)) & PB_HIGH;
}

/* The eight high bits gathered into bits 0 .. 7, byte k to bit k: a
 * multiply whose partial products never overlap. */
static inline uint64_t pb_bits8(uint64_t high)
{
    return (high * 0x0002040810204081ull) >> 56;
}

static inline uint64_t pb_word(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static inline uint64_t pb_overlap64(const uint8_t *lo0, const uint8_t *hi0, const uint8_t *lo1,
                                    const uint8_t *hi1, pb_bounds b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull;
    uint64_t bhi0 = b.hi0 * ones, blo0 = b.lo0 * ones, bhi1 = b.hi1 * ones, blo1 = b.lo1 * ones;
    uint64_t m = 0;
    for (int k = 0; k < 64; k += 8) {
        uint64_t ok = pb_le8(pb_word(lo0 + k), bhi0) & pb_le8(blo0, pb_word(hi0 + k)) &
                      pb_le8(pb_word(lo1 + k), bhi1) & pb_le8(blo1, pb_word(hi1 + k));
        m |= pb_bits8(ok) << k;
    }
    return m;
#else /* a byte at a time; & rather than &&: no branch on the data */
    uint64_t m = 0;
    for (int j = 0; j < 64; j++) {
        bool ok = (lo0[j] <= b.hi0) & (hi0[j] >= b.lo0) & (lo1[j] <= b.hi1) & (hi1[j] >= b.lo1);
        m |= (uint64_t)ok << j;
    }
    return m;
#endif
}

#endif /* ------------------------------------------------------------------ */

#endif
