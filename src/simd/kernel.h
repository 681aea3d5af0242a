/* kernel.h: the distance kernel every points structure runs: one point
 * against a contiguous block of candidates (axis-major x[], y[], z[]),
 * writing the indices of the candidates within the radius.
 *
 * Each candidate's squared distance is computed exactly as prox_dist2 /
 * prox_metric_dist2 do (same operations, same order, no FMA), so the
 * vector path and the scalar path agree bit for bit with brute force. */
#ifndef PROX_KERNEL_H
#define PROX_KERNEL_H

#include <stdint.h>

#include "core/exact.h"
#include "simd/simd.h"

#if PROX_SIMD_AVX512
#define PROX_KERNEL_AVX512 1
#endif

/* Extra entries a hits[] array needs beyond the candidates it may hold
 * (a vector of 16 lanes is stored whole: kernel_fixed.h). */
#define PROX_KERNEL_SLACK 16

typedef struct prox_block {
    const double *x, *y, *z; /* z may be NULL for 2D */
} prox_block;

#ifdef PROX_KERNEL_AVX512

static inline __m512d prox_v_min_image(__m512d d, double L)
{
    if (!(L > 0))
        return d;
    __m512d vl = _mm512_set1_pd(L), half = _mm512_set1_pd(0.5 * L);
    __mmask8 above = _mm512_cmp_pd_mask(d, half, _CMP_GT_OQ);
    __mmask8 below = _mm512_cmp_pd_mask(d, _mm512_sub_pd(_mm512_setzero_pd(), half), _CMP_LT_OQ);
    d = _mm512_mask_sub_pd(d, above, d, vl);
    return _mm512_mask_add_pd(d, below, d, vl);
}

/* Lanes of the 8 candidates from k on that exist (left = end - k). */
static inline __mmask8 prox_v_live(int64_t left)
{
    return left >= 8 ? 0xff : (__mmask8)((1u << left) - 1);
}

/* Squared distances from q to candidates k .. k+7 (dead lanes read as 0),
 * the same operations in the same order as prox_metric_dist2. */
static inline __m512d prox_v_dist2(const prox_block *b, int64_t k, __mmask8 live,
                                   const double q[3], const prox_metric *m)
{
    __m512d dx = _mm512_sub_pd(_mm512_set1_pd(q[0]), _mm512_maskz_loadu_pd(live, b->x + k));
    __m512d dy = _mm512_sub_pd(_mm512_set1_pd(q[1]), _mm512_maskz_loadu_pd(live, b->y + k));
    __m512d dz = b->z ? _mm512_sub_pd(_mm512_set1_pd(q[2]), _mm512_maskz_loadu_pd(live, b->z + k))
                      : _mm512_setzero_pd();
    if (m->periodic) {
        dx = prox_v_min_image(dx, m->period[0]);
        dy = prox_v_min_image(dy, m->period[1]);
        dz = prox_v_min_image(dz, m->period[2]);
    }
    return _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy)),
                         _mm512_mul_pd(dz, dz));
}

/* Candidates [begin, end) of the block within the radius of q: their
 * indices go to hits[], which needs room for end - begin + PROX_KERNEL_SLACK
 * entries; returns how many. */
static inline int64_t prox_kernel_hits(const prox_block *b, int64_t begin, int64_t end,
                                       const double q[3], const prox_metric *m,
                                       uint32_t *hits)
{
    const __m512d r2 = _mm512_set1_pd(m->r2);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 8) {
        __mmask8 live = prox_v_live(end - k);
        __m512d d2 = prox_v_dist2(b, k, live, q, m);
        __mmask8 hit = _mm512_mask_cmp_pd_mask(live, d2, r2, _CMP_LE_OQ);
        __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)k), lane);
        /* compress in a register, then a plain store: a compressing store
         * to memory is microcoded and slow on some cores (AMD Zen 4) */
        _mm256_storeu_si256((__m256i *)(void *)(hits + count), _mm256_maskz_compress_epi32(hit, idx));
        count += __builtin_popcount(hit);
    }
    return count;
}

/* How many candidates of [begin, end) lie within the radius of q. */
static inline int64_t prox_kernel_count(const prox_block *b, int64_t begin, int64_t end,
                                        const double q[3], const prox_metric *m)
{
    const __m512d r2 = _mm512_set1_pd(m->r2);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 8) {
        __mmask8 live = prox_v_live(end - k);
        __m512d d2 = prox_v_dist2(b, k, live, q, m);
        count += __builtin_popcount(_mm512_mask_cmp_pd_mask(live, d2, r2, _CMP_LE_OQ));
    }
    return count;
}

/* Which candidates a row keeps besides being within the radius: ids above
 * the row's own (each pair once, in the row of its smaller id) or every id
 * but its own (full lists). */
typedef enum prox_id_rule { PROX_IDS_ABOVE, PROX_IDS_OTHER } prox_id_rule;

static inline __mmask8 prox_v_id_keep(__m256i ids, uint32_t self, prox_id_rule rule)
{
    __m256i s = _mm256_set1_epi32((int)self);
    return rule == PROX_IDS_ABOVE ? _mm256_cmpgt_epu32_mask(ids, s) : _mm256_cmpneq_epu32_mask(ids, s);
}

/* How many candidates of [begin, end) lie within the radius of q and have
 * ids[k] kept by `rule` against self. */
static inline int64_t prox_kernel_count_ids(const prox_block *b, const uint32_t *ids,
                                            int64_t begin, int64_t end, const double q[3],
                                            const prox_metric *m, uint32_t self,
                                            prox_id_rule rule)
{
    const __m512d r2 = _mm512_set1_pd(m->r2);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 8) {
        __mmask8 live = prox_v_live(end - k);
        __m512d d2 = prox_v_dist2(b, k, live, q, m);
        __mmask8 keep = prox_v_id_keep(_mm256_maskz_loadu_epi32(live, ids + k), self, rule);
        count += __builtin_popcount(_mm512_mask_cmp_pd_mask(live & keep, d2, r2, _CMP_LE_OQ));
    }
    return count;
}

/* The ids of those candidates, written to out[] (room for end - begin +
 * PROX_KERNEL_SLACK entries); returns how many. */
static inline int64_t prox_kernel_ids(const prox_block *b, const uint32_t *ids, int64_t begin,
                                      int64_t end, const double q[3], const prox_metric *m,
                                      uint32_t self, prox_id_rule rule, uint32_t *out)
{
    const __m512d r2 = _mm512_set1_pd(m->r2);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 8) {
        __mmask8 live = prox_v_live(end - k);
        __m512d d2 = prox_v_dist2(b, k, live, q, m);
        __m256i id = _mm256_maskz_loadu_epi32(live, ids + k);
        __mmask8 keep = prox_v_id_keep(id, self, rule);
        __mmask8 hit = _mm512_mask_cmp_pd_mask(live & keep, d2, r2, _CMP_LE_OQ);
        _mm256_storeu_si256((__m256i *)(void *)(out + count), _mm256_maskz_compress_epi32(hit, id));
        count += __builtin_popcount(hit);
    }
    return count;
}

#else /* portable: the compiler may vectorise the distance loop */

static inline double prox_kernel_d2(const prox_block *b, int64_t k, const double q[3],
                                    const prox_metric *m)
{
    double dx = q[0] - b->x[k], dy = q[1] - b->y[k], dz = b->z ? q[2] - b->z[k] : 0.0;
    if (m->periodic) {
        if (m->period[0] > 0) dx = prox_min_image(dx, m->period[0]);
        if (m->period[1] > 0) dy = prox_min_image(dy, m->period[1]);
        if (m->period[2] > 0) dz = prox_min_image(dz, m->period[2]);
    }
    return prox_dist2(dx, dy, dz);
}

static inline int64_t prox_kernel_hits(const prox_block *b, int64_t begin, int64_t end,
                                       const double q[3], const prox_metric *m,
                                       uint32_t *hits)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k++) {
        hits[count] = (uint32_t)k; /* branch-free: kept only when within */
        count += prox_kernel_d2(b, k, q, m) <= m->r2;
    }
    return count;
}

static inline int64_t prox_kernel_count(const prox_block *b, int64_t begin, int64_t end,
                                        const double q[3], const prox_metric *m)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k++)
        count += prox_kernel_d2(b, k, q, m) <= m->r2;
    return count;
}

typedef enum prox_id_rule { PROX_IDS_ABOVE, PROX_IDS_OTHER } prox_id_rule;

static inline bool prox_id_keep(uint32_t id, uint32_t self, prox_id_rule rule)
{
    return rule == PROX_IDS_ABOVE ? id > self : id != self;
}

static inline int64_t prox_kernel_count_ids(const prox_block *b, const uint32_t *ids,
                                            int64_t begin, int64_t end, const double q[3],
                                            const prox_metric *m, uint32_t self,
                                            prox_id_rule rule)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k++)
        count += (prox_kernel_d2(b, k, q, m) <= m->r2) & prox_id_keep(ids[k], self, rule);
    return count;
}

static inline int64_t prox_kernel_ids(const prox_block *b, const uint32_t *ids, int64_t begin,
                                      int64_t end, const double q[3], const prox_metric *m,
                                      uint32_t self, prox_id_rule rule, uint32_t *out)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k++) {
        out[count] = ids[k];
        count += (prox_kernel_d2(b, k, q, m) <= m->r2) & prox_id_keep(ids[k], self, rule);
    }
    return count;
}

#endif
#endif
