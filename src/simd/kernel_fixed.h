/* kernel_fixed.h: the distance kernel over fixed-point coordinates, still
 * deciding exactly.
 *
 * A grid with PROX_COORDS_FIXED keeps each coordinate as a 32-bit integer:
 * its cell times 2^shift plus its place in the cell in units of 2^-shift
 * of a cell (grid.c, fixed_coord). Differences of two are exact integers;
 * converted to float (scaled to radii when the axes' units differ) and
 * squared, they give the squared distance within a bound `tol` of the one
 * brute force computes in double (grid.c, fixed_tolerance, derives it). So a
 * candidate whose float value is at most r^2 (1 - tol) is within the
 * radius, one above r^2 (1 + tol) is not (the metric's in2 and out2, in the
 * units compared), and the few in between are decided again in double from
 * the caller's points (prox_recheck): the results are brute force's, bit
 * for bit.
 *
 * Half the bytes of double coordinates, twice the lanes per vector. */
#ifndef PROX_KERNEL_FIXED_H
#define PROX_KERNEL_FIXED_H

#include <stdbool.h>
#include <stdint.h>

#include "simd/kernel.h"
#include "simd/vec.h"

typedef struct prox_fixed_block {
    const int32_t *x, *y, *z; /* z may be NULL for 2D */
} prox_fixed_block;

typedef struct prox_fixed_metric {
    /* unit_scale: every axis has units of the same length, and the squared
     * distance is compared in units^2 as it is; otherwise each axis's
     * difference is scaled to radii first and compared in radii^2 */
    bool unit_scale;
    float scale[3];    /* radii per unit of each axis (1 with unit_scale) */
    float in2, out2;   /* squared distance: <= in2 within, > out2 beyond */
    int32_t period[3]; /* units per period on a periodic axis, 0 = open */
    bool periodic;
} prox_fixed_metric;

/* The exact decision for the candidates the float value leaves open:
 * `within` gets the candidate's position in the block. */
typedef struct prox_recheck prox_recheck;
struct prox_recheck {
    bool (*within)(prox_recheck *rc, int64_t k);
    int64_t calls;
};

/* Rare: called for at most a few candidates in a thousand. */
__attribute__((noinline)) static uint32_t prox_recheck_lanes(prox_recheck *rc, int64_t k,
                                                             uint32_t lanes)
{
    uint32_t in = 0;
    for (uint32_t m = lanes; m; m &= m - 1) {
        int lane = __builtin_ctz(m);
        rc->calls++;
        if (rc->within(rc, k + lane))
            in |= 1u << lane;
    }
    return in;
}

/* Coordinates of 16 bits relative to the centre of a run's cell, for the
 * strips and rows of one-scaled grids (grid_search.c, "rel16"): each
 * fixed-point coordinate less the centre's, on a periodic axis taken to
 * its image nearest the centre, with `drop` low bits dropped, so that a
 * cell spans 2^14 units and a candidate of the stencil (within 1.5 cells
 * of the centre) fits an int16, as does its difference with a point of the
 * cell itself (at most 2^15 - 1). Squares summed in 32 bits (pairs by
 * vpmaddwd) are exact integers; in2 and out2 bound them so that the
 * dropped bits and the fixed point's own error cannot change a decision
 * (grid.c, prox_grid_rel16_metric), and the few in between are decided
 * again in double (prox_recheck). The kernels never wrap: the gather did. */
typedef struct prox_rel16_metric {
    int drop;           /* the fixed-point bits dropped (every axis: one scale) */
    uint32_t in2, out2; /* squared distance in units: <= in2 within, > out2 beyond */
    int32_t period[3];  /* fixed-point period of each periodic axis; 0 when open */
} prox_rel16_metric;

/* A gathered block of rel16 coordinates: xy holds x | y << 16 (two int16),
 * z0 holds z | 0 << 16 (NULL in 2D), so that one vpmaddwd squares and sums
 * two axes. */
typedef struct prox_rel16_block {
    const uint32_t *xy, *z0;
} prox_rel16_block;

static inline uint32_t prox_rel16_pack(int32_t lo, int32_t hi)
{
    return (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16;
}

#ifdef PROX_KERNEL_AVX512

static inline __m512i prox_vx_min_image(__m512i d, int32_t P)
{
    if (P == 0)
        return d;
    __m512i vp = _mm512_set1_epi32(P), half = _mm512_set1_epi32(P / 2);
    __mmask16 above = _mm512_cmpgt_epi32_mask(d, half);
    __mmask16 below = _mm512_cmplt_epi32_mask(d, _mm512_sub_epi32(_mm512_setzero_si512(), half));
    d = _mm512_mask_sub_epi32(d, above, d, vp);
    return _mm512_mask_add_epi32(d, below, d, vp);
}

/* One axis's squared differences of q and the candidates in c, as float. */
static PROX_ALWAYS_INLINE __m512 prox_vx_axis_of(__m512i c, int32_t q, float scale,
                                                 int32_t period, bool scaled)
{
    __m512i d = prox_vx_min_image(_mm512_sub_epi32(_mm512_set1_epi32(q), c), period);
    __m512 f = _mm512_cvtepi32_ps(d);
    if (scaled)
        f = _mm512_mul_ps(f, _mm512_set1_ps(scale));
    return _mm512_mul_ps(f, f);
}

static PROX_ALWAYS_INLINE __m512 prox_vx_axis(const int32_t *c, int64_t k, __mmask16 live,
                                              int32_t q, float scale, int32_t period,
                                              bool scaled)
{
    return prox_vx_axis_of(_mm512_maskz_loadu_epi32(live, c + k), q, scale, period, scaled);
}

/* The decision on squared distances d2 of candidates k .. k+15 (those in
 * `lanes`): within by the float value, beyond, or rechecked. */
static PROX_ALWAYS_INLINE __mmask16 prox_vx_decide(__m512 d2, int64_t k, __mmask16 lanes,
                                                   const prox_fixed_metric *m, prox_recheck *rc)
{
    __mmask16 in = _mm512_mask_cmp_ps_mask(lanes, d2, _mm512_set1_ps(m->in2), _CMP_LE_OQ);
    __mmask16 open = _mm512_mask_cmp_ps_mask(lanes, d2, _mm512_set1_ps(m->out2), _CMP_LE_OQ) & ~in;
    if (__builtin_expect(open != 0, 0))
        in |= (__mmask16)prox_recheck_lanes(rc, k, open);
    return in;
}

/* Candidates k .. k+15 among `lanes` within the radius of q. `scaled` and
 * `periodic` are constants in each caller's loop (the metric's unit_scale
 * and periodic, hoisted: PROX_VX_VARIANT). */
static PROX_ALWAYS_INLINE __mmask16 prox_vx_within(const prox_fixed_block *b, int64_t k,
                                                   __mmask16 lanes, const int32_t q[3],
                                                   const prox_fixed_metric *m,
                                                   prox_recheck *rc, bool scaled, bool periodic)
{
    const int32_t none[3] = {0, 0, 0}, *per = periodic ? m->period : none;
    const float *sc = m->scale;
    __m512 d2 = _mm512_add_ps(prox_vx_axis(b->x, k, lanes, q[0], sc[0], per[0], scaled),
                              prox_vx_axis(b->y, k, lanes, q[1], sc[1], per[1], scaled));
    if (b->z)
        d2 = _mm512_add_ps(d2, prox_vx_axis(b->z, k, lanes, q[2], sc[2], per[2], scaled));
    return prox_vx_decide(d2, k, lanes, m, rc);
}

/* fn(args..., scaled, periodic) in the variant metric m asks for, each a
 * loop of its own: open and unit-scaled (every open axis has the same
 * cell: grid.c, open_axis), or periodic, scaled or not (a box with no
 * periodic axis but different scales would take the scaled periodic loop,
 * whose periods of 0 change nothing). Callers pass local copies of the
 * metric, the block and the query point (PROX_VX_LOCALS): their fields
 * then stay in registers, where the loops' stores could otherwise alias
 * them. */
#define PROX_VX_LOCALS                                                                  \
    const prox_fixed_metric local_m = *m;                                              \
    const prox_fixed_block local_b = *b;                                               \
    const int32_t local_q[3] = {q[0], q[1], q[2]}
#define PROX_VX_VARIANT(m, fn, ...)                                                    \
    (!(m)->periodic && (m)->unit_scale ? fn(__VA_ARGS__, false, false)                 \
     : (m)->unit_scale                 ? fn(__VA_ARGS__, false, true)                  \
                                       : fn(__VA_ARGS__, true, true))

static inline __mmask16 prox_vx_live(int64_t left)
{
    return left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
}

static PROX_ALWAYS_INLINE int64_t prox_vx_hits(const prox_fixed_block *b, int64_t begin,
                                               int64_t end, const int32_t q[3],
                                               const prox_fixed_metric *m, prox_recheck *rc,
                                               uint32_t *hits, bool scaled, bool periodic)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 16) {
        __mmask16 hit = prox_vx_within(b, k, prox_vx_live(end - k), q, m, rc, scaled, periodic);
        __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int)k), lane);
        /* compressed in a register, then a plain store (kernel.h) */
        _mm512_storeu_si512((void *)(hits + count), _mm512_maskz_compress_epi32(hit, idx));
        count += __builtin_popcount(hit);
    }
    return count;
}

/* Candidates [begin, end) within the radius of q: their positions go to
 * hits[] (room for end - begin + PROX_KERNEL_SLACK); returns how many. */
static inline int64_t prox_fixed_hits(const prox_fixed_block *b, int64_t begin, int64_t end,
                                      const int32_t q[3], const prox_fixed_metric *m,
                                      prox_recheck *rc, uint32_t *hits)
{
    /* short ranges (sparse data's strips): no local copies, whose cost
     * the few candidates would not repay */
    return m->unit_scale ? prox_vx_hits(b, begin, end, q, m, rc, hits, false, m->periodic)
                         : prox_vx_hits(b, begin, end, q, m, rc, hits, true, m->periodic);
}

static PROX_ALWAYS_INLINE int64_t prox_vx_count(const prox_fixed_block *b, int64_t begin,
                                                int64_t end, const int32_t q[3],
                                                const prox_fixed_metric *m, prox_recheck *rc,
                                                bool scaled, bool periodic)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 16)
        count += __builtin_popcount(prox_vx_within(b, k, prox_vx_live(end - k), q, m, rc, scaled, periodic));
    return count;
}

static inline int64_t prox_fixed_count(const prox_fixed_block *b, int64_t begin, int64_t end,
                                       const int32_t q[3], const prox_fixed_metric *m,
                                       prox_recheck *rc)
{
    return m->unit_scale ? prox_vx_count(b, begin, end, q, m, rc, false, m->periodic)
                         : prox_vx_count(b, begin, end, q, m, rc, true, m->periodic);
}

/* The loop of the ids kernels (prox_vx_ids, prox_r16_ids_loop), over
 * ids[begin .. end) against `self` by `rule`, appending to out[]: two full
 * vectors a turn, both distance chains in flight at once, then the tail.
 * WITHIN(k, lanes) is the kernel's test of candidates k .. k + 15. */
#define PROX_IDS_LOOP(WITHIN)                                                             \
    const __m512i s_ = _mm512_set1_epi32((int)self);                                       \
    int64_t count = 0, k = begin;                                                         \
    for (; k + 32 <= end; k += 32) {                                                      \
        __m512i id0 = _mm512_loadu_si512(ids + k), id1 = _mm512_loadu_si512(ids + k + 16); \
        __mmask16 keep0 = rule == PROX_IDS_ABOVE ? _mm512_cmpgt_epu32_mask(id0, s_)        \
                                                 : _mm512_cmpneq_epu32_mask(id0, s_);      \
        __mmask16 keep1 = rule == PROX_IDS_ABOVE ? _mm512_cmpgt_epu32_mask(id1, s_)        \
                                                 : _mm512_cmpneq_epu32_mask(id1, s_);      \
        __mmask16 hit0 = WITHIN(k, keep0), hit1 = WITHIN(k + 16, keep1);                  \
        _mm512_storeu_si512((void *)(out + count), _mm512_maskz_compress_epi32(hit0, id0)); \
        count += __builtin_popcount(hit0);                                                \
        _mm512_storeu_si512((void *)(out + count), _mm512_maskz_compress_epi32(hit1, id1)); \
        count += __builtin_popcount(hit1);                                                \
    }                                                                                     \
    for (; k < end; k += 16) {                                                            \
        __mmask16 live = prox_vx_live(end - k);                                           \
        __m512i id = _mm512_maskz_loadu_epi32(live, ids + k);                             \
        __mmask16 keep = rule == PROX_IDS_ABOVE ? _mm512_mask_cmpgt_epu32_mask(live, id, s_) \
                                                : _mm512_mask_cmpneq_epu32_mask(live, id, s_); \
        __mmask16 hit = WITHIN(k, keep);                                                  \
        _mm512_storeu_si512((void *)(out + count), _mm512_maskz_compress_epi32(hit, id));  \
        count += __builtin_popcount(hit);                                                 \
    }                                                                                     \
    return count

static PROX_ALWAYS_INLINE int64_t prox_vx_ids(const prox_fixed_block *b, const uint32_t *ids,
                                              int64_t begin, int64_t end, const int32_t q[3],
                                              const prox_fixed_metric *m, prox_recheck *rc,
                                              uint32_t self, prox_id_rule rule, uint32_t *out,
                                              bool scaled, bool periodic)
{
#define PROX_VX_WITHIN(k, lanes) prox_vx_within(b, k, lanes, q, m, rc, scaled, periodic)
    PROX_IDS_LOOP(PROX_VX_WITHIN);
#undef PROX_VX_WITHIN
}

/* The ids of those candidates kept by `rule` against self, written to
 * out[] (room for end - begin + PROX_KERNEL_SLACK); returns how many. */
static inline int64_t prox_fixed_ids(const prox_fixed_block *b, const uint32_t *ids,
                                     int64_t begin, int64_t end, const int32_t q[3],
                                     const prox_fixed_metric *m, prox_recheck *rc,
                                     uint32_t self, prox_id_rule rule, uint32_t *out)
{
    PROX_VX_LOCALS;
    return PROX_VX_VARIANT(&local_m, prox_vx_ids, &local_b, ids, begin, end, local_q, &local_m, rc, self, rule,
                           out);
}

/* The split of grid_fill.c: each candidate within the radius either goes
 * to `ups` as its id (its id above self; every one with `both`), or to
 * `downs` as its position (pos[k], or k with pos NULL; the others; every
 * one with `both`), appended at *nu and *nd (room for end - begin +
 * PROX_KERNEL_SLACK more each). With ups NULL the ups are only counted. */
static PROX_ALWAYS_INLINE void prox_vx_split(const prox_fixed_block *b, const uint32_t *ids,
                                             const uint32_t *pos, int64_t begin, int64_t end,
                                             const int32_t q[3], const prox_fixed_metric *m,
                                             prox_recheck *rc, uint32_t self, bool both,
                                             uint32_t *ups, uint32_t *downs, int64_t *nu,
                                             int64_t *nd, bool scaled, bool periodic)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i s = _mm512_set1_epi32((int)self);
    int64_t u = *nu, d = *nd;
    for (int64_t k = begin; k < end; k += 16) {
        __mmask16 hit = prox_vx_within(b, k, prox_vx_live(end - k), q, m, rc, scaled, periodic);
        __m512i id = _mm512_maskz_loadu_epi32(hit, ids + k);
        __mmask16 up = both ? hit : _mm512_mask_cmpgt_epu32_mask(hit, id, s);
        __mmask16 down = both ? hit : hit & (__mmask16)~up;
        __m512i idx = pos ? _mm512_maskz_loadu_epi32(down, pos + k)
                          : _mm512_add_epi32(_mm512_set1_epi32((int)k), lane);
        if (ups) /* NULL: ups only counted */
            _mm512_storeu_si512((void *)(ups + u), _mm512_maskz_compress_epi32(up, id));
        _mm512_storeu_si512((void *)(downs + d), _mm512_maskz_compress_epi32(down, idx));
        u += __builtin_popcount(up);
        d += __builtin_popcount(down);
    }
    *nu = u;
    *nd = d;
}

static inline void prox_fixed_split(const prox_fixed_block *b, const uint32_t *ids,
                                    const uint32_t *pos, int64_t begin, int64_t end,
                                    const int32_t q[3], const prox_fixed_metric *m,
                                    prox_recheck *rc, uint32_t self, bool both, uint32_t *ups,
                                    uint32_t *downs, int64_t *nu, int64_t *nd)
{
    PROX_VX_LOCALS;
    PROX_VX_VARIANT(&local_m, prox_vx_split, &local_b, ids, pos, begin, end, local_q, &local_m, rc, self, both,
                    ups, downs, nu, nd);
}

static PROX_ALWAYS_INLINE __mmask16 prox_r16_within(const prox_rel16_block *b, int64_t k,
                                                    __mmask16 lanes, __m512i qxy, __m512i qz0,
                                                    __m512i in2, __m512i out2, prox_recheck *rc,
                                                    bool three)
{
    __m512i dxy = _mm512_sub_epi16(qxy, _mm512_maskz_loadu_epi32(lanes, b->xy + k));
    __m512i d2 = _mm512_madd_epi16(dxy, dxy); /* dx^2 + dy^2 < 2^31 */
    if (three) {
        __m512i dz = _mm512_sub_epi16(qz0, _mm512_maskz_loadu_epi32(lanes, b->z0 + k));
        d2 = _mm512_add_epi32(d2, _mm512_madd_epi16(dz, dz)); /* < 2^32: compared unsigned */
    }
    __mmask16 in = _mm512_mask_cmple_epu32_mask(lanes, d2, in2);
    __mmask16 open = _mm512_mask_cmple_epu32_mask(lanes, d2, out2) & ~in;
    if (__builtin_expect(open != 0, 0))
        in |= (__mmask16)prox_recheck_lanes(rc, k, open);
    return in;
}

static PROX_ALWAYS_INLINE int64_t prox_r16_ids_loop(const prox_rel16_block *b,
                                                    const uint32_t *ids, int64_t begin,
                                                    int64_t end, uint32_t qxy, uint32_t qz0,
                                                    const prox_rel16_metric *m, prox_recheck *rc,
                                                    uint32_t self, prox_id_rule rule,
                                                    uint32_t *out, bool three)
{
    const __m512i vxy = _mm512_set1_epi32((int)qxy), vz = _mm512_set1_epi32((int)qz0),
                  in2 = _mm512_set1_epi32((int)m->in2), out2 = _mm512_set1_epi32((int)m->out2);
#define PROX_R16_WITHIN(k, lanes) prox_r16_within(b, k, lanes, vxy, vz, in2, out2, rc, three)
    PROX_IDS_LOOP(PROX_R16_WITHIN);
#undef PROX_R16_WITHIN
}

/* Candidates [begin, end) of a rel16 block within the radius of (qxy,
 * qz0): their positions to hits[] (room for end - begin +
 * PROX_KERNEL_SLACK), or with hits NULL only counted; returns how many. */
static PROX_ALWAYS_INLINE int64_t prox_r16_hits_loop(const prox_rel16_block *b, int64_t begin,
                                                     int64_t end, uint32_t qxy, uint32_t qz0,
                                                     const prox_rel16_metric *m,
                                                     prox_recheck *rc, uint32_t *hits,
                                                     bool three)
{
    const __m512i vxy = _mm512_set1_epi32((int)qxy), vz = _mm512_set1_epi32((int)qz0),
                  in2 = _mm512_set1_epi32((int)m->in2), out2 = _mm512_set1_epi32((int)m->out2);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += 16) {
        __mmask16 hit = prox_r16_within(b, k, prox_vx_live(end - k), vxy, vz, in2, out2, rc, three);
        if (hits)
            _mm512_storeu_si512((void *)(hits + count),
                                _mm512_maskz_compress_epi32(
                                    hit, _mm512_add_epi32(_mm512_set1_epi32((int)k), lane)));
        count += __builtin_popcount(hit);
    }
    return count;
}

static inline int64_t prox_rel16_hits(const prox_rel16_block *b, int64_t begin, int64_t end,
                                      uint32_t qxy, uint32_t qz0, const prox_rel16_metric *m,
                                      prox_recheck *rc, uint32_t *hits)
{
    const prox_rel16_block local_b = *b;
    const prox_rel16_metric local_m = *m;
    if (!hits)
        return b->z0 ? prox_r16_hits_loop(&local_b, begin, end, qxy, qz0, &local_m, rc, NULL, true)
                     : prox_r16_hits_loop(&local_b, begin, end, qxy, qz0, &local_m, rc, NULL, false);
    return b->z0 ? prox_r16_hits_loop(&local_b, begin, end, qxy, qz0, &local_m, rc, hits, true)
                 : prox_r16_hits_loop(&local_b, begin, end, qxy, qz0, &local_m, rc, hits, false);
}

/* As prox_fixed_ids over a rel16 block, the query's coordinates packed as
 * the block's (qxy, qz0). */
static inline int64_t prox_rel16_ids(const prox_rel16_block *b, const uint32_t *ids,
                                     int64_t begin, int64_t end, uint32_t qxy, uint32_t qz0,
                                     const prox_rel16_metric *m, prox_recheck *rc,
                                     uint32_t self, prox_id_rule rule, uint32_t *out)
{
    const prox_rel16_block local_b = *b;
    const prox_rel16_metric local_m = *m;
    return b->z0 ? prox_r16_ids_loop(&local_b, ids, begin, end, qxy, qz0, &local_m, rc, self,
                                     rule, out, true)
                 : prox_r16_ids_loop(&local_b, ids, begin, end, qxy, qz0, &local_m, rc, self,
                                     rule, out, false);
}

#else /* every other level: written once over simd/vec.h */

/* One axis's squared differences of q and the candidates c, as float. */
static PROX_ALWAYS_INLINE pv_f32 pv_axis(pv_i32 c, int32_t q, float scale, int32_t period,
                                         bool scaled)
{
    pv_i32 d = pv_sub_i32(pv_set1_i32(q), c);
    if (period)
        d = pv_min_image(d, period);
    pv_f32 f = pv_to_f32(d);
    if (scaled)
        f = pv_mul_f32(f, pv_set1_f32(scale));
    return pv_mul_f32(f, f);
}

/* Candidates k .. k + PV_W - 1 among `lanes` within the radius of q: the
 * float value decides, the band between in2 and out2 is rechecked. */
static PROX_ALWAYS_INLINE pv_mask pv_within(const prox_fixed_block *b, int64_t k, int64_t left,
                                            pv_mask lanes, const int32_t q[3],
                                            const prox_fixed_metric *m, prox_recheck *rc,
                                            bool scaled, bool periodic)
{
    const int32_t none[3] = {0, 0, 0}, *per = periodic ? m->period : none;
    const float *sc = m->scale;
    pv_f32 d2 = pv_add_f32(pv_axis(pv_load_n(b->x + k, left), q[0], sc[0], per[0], scaled),
                           pv_axis(pv_load_n(b->y + k, left), q[1], sc[1], per[1], scaled));
    if (b->z)
        d2 = pv_add_f32(d2, pv_axis(pv_load_n(b->z + k, left), q[2], sc[2], per[2], scaled));
    pv_mask in = pv_le_f32(d2, pv_set1_f32(m->in2)) & lanes;
    pv_mask open = pv_le_f32(d2, pv_set1_f32(m->out2)) & lanes & ~in;
    if (__builtin_expect(open != 0, 0))
        in |= prox_recheck_lanes(rc, k, open);
    return in;
}

/* fn(args..., scaled, periodic) in the variant metric m asks for, each a
 * loop of its own (the constants hoisted out of the loops). */
#define PROX_PV_VARIANT(m, fn, ...)                                                    \
    (!(m)->periodic && (m)->unit_scale ? fn(__VA_ARGS__, false, false)                 \
     : (m)->unit_scale                 ? fn(__VA_ARGS__, false, true)                  \
                                       : fn(__VA_ARGS__, true, true))

static PROX_ALWAYS_INLINE int64_t pv_hits(const prox_fixed_block *b, int64_t begin, int64_t end,
                                          const int32_t q[3], const prox_fixed_metric *m,
                                          prox_recheck *rc, uint32_t *hits, bool scaled,
                                          bool periodic)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PV_W) {
        pv_mask hit = pv_within(b, k, end - k, pv_live(end - k), q, m, rc, scaled, periodic);
        pv_compress(hits + count, pv_iota(k), hit);
        count += __builtin_popcount(hit);
    }
    return count;
}

/* Candidates [begin, end) within the radius of q: their positions go to
 * hits[] (room for end - begin + PROX_KERNEL_SLACK); returns how many. */
static inline int64_t prox_fixed_hits(const prox_fixed_block *b, int64_t begin, int64_t end,
                                      const int32_t q[3], const prox_fixed_metric *m,
                                      prox_recheck *rc, uint32_t *hits)
{
    return PROX_PV_VARIANT(m, pv_hits, b, begin, end, q, m, rc, hits);
}

static PROX_ALWAYS_INLINE int64_t pv_count(const prox_fixed_block *b, int64_t begin, int64_t end,
                                           const int32_t q[3], const prox_fixed_metric *m,
                                           prox_recheck *rc, bool scaled, bool periodic)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PV_W)
        count += __builtin_popcount(
            pv_within(b, k, end - k, pv_live(end - k), q, m, rc, scaled, periodic));
    return count;
}

static inline int64_t prox_fixed_count(const prox_fixed_block *b, int64_t begin, int64_t end,
                                       const int32_t q[3], const prox_fixed_metric *m,
                                       prox_recheck *rc)
{
    return PROX_PV_VARIANT(m, pv_count, b, begin, end, q, m, rc);
}

/* The lanes of ids k .. k + PV_W - 1 that `rule` keeps against self. */
static PROX_ALWAYS_INLINE pv_mask pv_keep(pv_i32 id, uint32_t self, prox_id_rule rule,
                                          pv_mask live)
{
    pv_mask keep = rule == PROX_IDS_ABOVE ? pv_above(id, self)
                                          : ~pv_eq_i32(id, pv_set1_i32((int32_t)self));
    return keep & live;
}

static PROX_ALWAYS_INLINE int64_t pv_ids(const prox_fixed_block *b, const uint32_t *ids,
                                         int64_t begin, int64_t end, const int32_t q[3],
                                         const prox_fixed_metric *m, prox_recheck *rc,
                                         uint32_t self, prox_id_rule rule, uint32_t *out,
                                         bool scaled, bool periodic)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PV_W) {
        pv_i32 id = pv_load_n(ids + k, end - k);
        pv_mask keep = pv_keep(id, self, rule, pv_live(end - k));
        pv_mask hit = keep ? pv_within(b, k, end - k, keep, q, m, rc, scaled, periodic) : 0;
        pv_compress(out + count, id, hit);
        count += __builtin_popcount(hit);
    }
    return count;
}

/* The ids of those candidates kept by `rule` against self, written to
 * out[] (room for end - begin + PROX_KERNEL_SLACK); returns how many. */
static inline int64_t prox_fixed_ids(const prox_fixed_block *b, const uint32_t *ids,
                                     int64_t begin, int64_t end, const int32_t q[3],
                                     const prox_fixed_metric *m, prox_recheck *rc,
                                     uint32_t self, prox_id_rule rule, uint32_t *out)
{
    return PROX_PV_VARIANT(m, pv_ids, b, ids, begin, end, q, m, rc, self, rule, out);
}

static PROX_ALWAYS_INLINE void pv_split(const prox_fixed_block *b, const uint32_t *ids,
                                        const uint32_t *pos, int64_t begin, int64_t end,
                                        const int32_t q[3], const prox_fixed_metric *m,
                                        prox_recheck *rc, uint32_t self, bool both,
                                        uint32_t *ups, uint32_t *downs, int64_t *nu,
                                        int64_t *nd, bool scaled, bool periodic)
{
    int64_t u = *nu, d = *nd;
    for (int64_t k = begin; k < end; k += PV_W) {
        pv_mask hit = pv_within(b, k, end - k, pv_live(end - k), q, m, rc, scaled, periodic);
        pv_i32 id = pv_load_n(ids + k, end - k);
        pv_mask up = both ? hit : pv_above(id, self) & hit;
        pv_mask down = both ? hit : hit & ~up;
        pv_i32 idx = pos ? pv_load_n(pos + k, end - k) : pv_iota(k);
        if (ups) /* NULL: ups only counted */
            pv_compress(ups + u, id, up);
        pv_compress(downs + d, idx, down);
        u += __builtin_popcount(up);
        d += __builtin_popcount(down);
    }
    *nu = u;
    *nd = d;
}

/* The split of grid_fill.c: each candidate within the radius either goes
 * to `ups` as its id (its id above self; every one with `both`), or to
 * `downs` as its position (pos[k], or k with pos NULL; the others; every
 * one with `both`), appended at *nu and *nd (room for end - begin +
 * PROX_KERNEL_SLACK more each). With ups NULL the ups are only counted. */
static inline void prox_fixed_split(const prox_fixed_block *b, const uint32_t *ids,
                                    const uint32_t *pos, int64_t begin, int64_t end,
                                    const int32_t q[3], const prox_fixed_metric *m,
                                    prox_recheck *rc, uint32_t self, bool both, uint32_t *ups,
                                    uint32_t *downs, int64_t *nu, int64_t *nd)
{
    PROX_PV_VARIANT(m, pv_split, b, ids, pos, begin, end, q, m, rc, self, both, ups, downs, nu, nd);
}

/* One candidate, for the callers that test point by point (grid_sweep.c's
 * portable path). */
static inline bool prox_fixed_within(const prox_fixed_block *b, int64_t k, const int32_t q[3],
                                     const prox_fixed_metric *m, prox_recheck *rc)
{
    return prox_fixed_count(b, k, k + 1, q, m, rc) != 0;
}

/* Squared distances in rel16 units of candidates k .. k + PV_W - 1 (left
 * of them live) to the query (vxy, vz), as unsigned lanes (below 2^32). */
static PROX_ALWAYS_INLINE pv_i32 pv_rel16_d2(const prox_rel16_block *b, int64_t k, int64_t left,
                                             pv_i32 vxy, pv_i32 vz, bool three)
{
    pv_i32 dxy = pv_sub_i16(vxy, pv_load_n(b->xy + k, left));
    pv_i32 d2 = pv_madd_i16(dxy, dxy); /* dx^2 + dy^2 < 2^31 */
    if (three) {
        pv_i32 dz = pv_sub_i16(vz, pv_load_n(b->z0 + k, left));
        d2 = pv_add_i32(d2, pv_madd_i16(dz, dz)); /* < 2^32: compared unsigned */
    }
    return d2;
}

/* The decision on d2 for the candidates in `lanes`: within by in2, beyond
 * out2, the band between rechecked. */
static PROX_ALWAYS_INLINE pv_mask pv_rel16_decide(pv_i32 d2, int64_t k, pv_mask lanes, pv_i32 in2,
                                                  pv_i32 out2, prox_recheck *rc)
{
    pv_mask hit = pv_le_u32(d2, in2) & lanes;
    pv_mask open = pv_le_u32(d2, out2) & lanes & ~hit;
    if (__builtin_expect(open != 0, 0))
        hit |= prox_recheck_lanes(rc, k, open);
    return hit;
}

static PROX_ALWAYS_INLINE int64_t pv_rel16_ids(const prox_rel16_block *b, const uint32_t *ids,
                                               int64_t begin, int64_t end, uint32_t qxy,
                                               uint32_t qz0, const prox_rel16_metric *m,
                                               prox_recheck *rc, uint32_t self,
                                               prox_id_rule rule, uint32_t *out, bool three)
{
    const pv_i32 vxy = pv_set1_i32((int32_t)qxy), vz = pv_set1_i32((int32_t)qz0);
    const pv_i32 in2 = pv_set1_i32((int32_t)m->in2), out2 = pv_set1_i32((int32_t)m->out2);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PV_W) {
        int64_t left = end - k;
        pv_i32 id = pv_load_n(ids + k, left);
        pv_mask keep = pv_keep(id, self, rule, pv_live(left));
        pv_mask hit = pv_rel16_decide(pv_rel16_d2(b, k, left, vxy, vz, three), k, keep, in2, out2, rc);
        pv_compress(out + count, id, hit);
        count += __builtin_popcount(hit);
    }
    return count;
}

static PROX_ALWAYS_INLINE int64_t pv_rel16_hits(const prox_rel16_block *b, int64_t begin,
                                                int64_t end, uint32_t qxy, uint32_t qz0,
                                                const prox_rel16_metric *m, prox_recheck *rc,
                                                uint32_t *hits, bool three)
{
    const pv_i32 vxy = pv_set1_i32((int32_t)qxy), vz = pv_set1_i32((int32_t)qz0);
    const pv_i32 in2 = pv_set1_i32((int32_t)m->in2), out2 = pv_set1_i32((int32_t)m->out2);
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PV_W) {
        int64_t left = end - k;
        pv_mask hit = pv_rel16_decide(pv_rel16_d2(b, k, left, vxy, vz, three), k, pv_live(left),
                                      in2, out2, rc);
        if (hits)
            pv_compress(hits + count, pv_iota(k), hit);
        count += __builtin_popcount(hit);
    }
    return count;
}

/* The count alone, kept in vectors: each full vector adds its lanes beyond
 * in2 and beyond out2 to two sums, with no mask leaving the registers; the
 * sums differ only when some candidate fell in the band between, and then
 * the range is decided again lane by lane (pv_rel16_hits, rechecking). */
static PROX_ALWAYS_INLINE int64_t pv_rel16_count(const prox_rel16_block *b, int64_t begin,
                                                 int64_t end, uint32_t qxy, uint32_t qz0,
                                                 const prox_rel16_metric *m, prox_recheck *rc,
                                                 bool three)
{
    const pv_i32 vxy = pv_set1_i32((int32_t)qxy), vz = pv_set1_i32((int32_t)qz0);
    const pv_i32 in2 = pv_set1_i32((int32_t)m->in2), out2 = pv_set1_i32((int32_t)m->out2);
    pv_i32 beyond_in = pv_set1_i32(0), beyond_out = pv_set1_i32(0);
    int64_t k = begin;
    for (; k + PV_W <= end; k += PV_W) {
        pv_i32 d2 = pv_rel16_d2(b, k, PV_W, vxy, vz, three);
        beyond_in = pv_sub_i32(beyond_in, pv_gtv_u32(d2, in2));
        beyond_out = pv_sub_i32(beyond_out, pv_gtv_u32(d2, out2));
    }
    int32_t far = pv_hsum(beyond_in);
    if (__builtin_expect(far != pv_hsum(beyond_out), 0))
        return pv_rel16_hits(b, begin, end, qxy, qz0, m, rc, NULL, three);
    int64_t count = (k - begin) - far;
    if (k < end)
        count += __builtin_popcount(pv_rel16_decide(pv_rel16_d2(b, k, end - k, vxy, vz, three), k,
                                                    pv_live(end - k), in2, out2, rc));
    return count;
}

/* Candidates [begin, end) of a rel16 block within the radius of (qxy,
 * qz0): their positions to hits[] (room for end - begin +
 * PROX_KERNEL_SLACK), or with hits NULL only counted; returns how many. */
static inline int64_t prox_rel16_hits(const prox_rel16_block *b, int64_t begin, int64_t end,
                                      uint32_t qxy, uint32_t qz0, const prox_rel16_metric *m,
                                      prox_recheck *rc, uint32_t *hits)
{
    if (!hits)
        return b->z0 ? pv_rel16_count(b, begin, end, qxy, qz0, m, rc, true)
                     : pv_rel16_count(b, begin, end, qxy, qz0, m, rc, false);
    return b->z0 ? pv_rel16_hits(b, begin, end, qxy, qz0, m, rc, hits, true)
                 : pv_rel16_hits(b, begin, end, qxy, qz0, m, rc, hits, false);
}

/* As prox_fixed_ids over a rel16 block, the query's coordinates packed as
 * the block's (qxy, qz0). */
static inline int64_t prox_rel16_ids(const prox_rel16_block *b, const uint32_t *ids,
                                     int64_t begin, int64_t end, uint32_t qxy, uint32_t qz0,
                                     const prox_rel16_metric *m, prox_recheck *rc,
                                     uint32_t self, prox_id_rule rule, uint32_t *out)
{
    return b->z0 ? pv_rel16_ids(b, ids, begin, end, qxy, qz0, m, rc, self, rule, out, true)
                 : pv_rel16_ids(b, ids, begin, end, qxy, qz0, m, rc, self, rule, out, false);
}

#endif
#endif
