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
 * `within` gets the candidate's position in the block, and counts in
 * `calls` those it had to decide from the caller's doubles. */
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

/* Every level: written once over simd/vec.h. */

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

/* The decision on float squared distances d2 of candidates k .. k +
 * PV_W - 1 (those in `lanes`): within by in2, beyond out2, the band
 * between rechecked. */
static PROX_ALWAYS_INLINE pv_mask pv_decide_f32(pv_f32 d2, int64_t k, pv_mask lanes,
                                                const prox_fixed_metric *m, prox_recheck *rc)
{
    pv_mask in = pv_le_f32(d2, pv_set1_f32(m->in2)) & lanes;
    pv_mask open = pv_le_f32(d2, pv_set1_f32(m->out2)) & lanes & ~in;
    if (__builtin_expect(open != 0, 0))
        in |= prox_recheck_lanes(rc, k, open);
    return in;
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
    return pv_decide_f32(d2, k, lanes, m, rc);
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
        count += prox_lanes_popcount(hit);
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
        count += prox_lanes_popcount(
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

/* The ids of candidates k .. k + PV_W - 1 (left of them live) kept by
 * `rule` and within the radius of q, as a mask over *id. */
static PROX_ALWAYS_INLINE pv_mask pv_ids_of(const prox_fixed_block *b, const uint32_t *ids,
                                            int64_t k, int64_t left, const int32_t q[3],
                                            const prox_fixed_metric *m, prox_recheck *rc,
                                            uint32_t self, prox_id_rule rule, pv_i32 *id,
                                            bool scaled, bool periodic)
{
    *id = pv_load_n(ids + k, left);
    pv_mask keep = pv_keep(*id, self, rule, pv_live(left));
    return pv_within(b, k, left, keep, q, m, rc, scaled, periodic);
}

/* Two whole vectors a turn, their distance chains in flight together,
 * then the rest a vector at a time. */
static PROX_ALWAYS_INLINE int64_t pv_ids(const prox_fixed_block *b, const uint32_t *ids,
                                         int64_t begin, int64_t end, const int32_t q[3],
                                         const prox_fixed_metric *m, prox_recheck *rc,
                                         uint32_t self, prox_id_rule rule, uint32_t *out,
                                         bool scaled, bool periodic)
{
    int64_t count = 0, k = begin;
    pv_i32 id0, id1;
    for (; k + 2 * PV_W <= end; k += 2 * PV_W) {
        pv_mask hit0 = pv_ids_of(b, ids, k, PV_W, q, m, rc, self, rule, &id0, scaled, periodic);
        pv_mask hit1 =
            pv_ids_of(b, ids, k + PV_W, PV_W, q, m, rc, self, rule, &id1, scaled, periodic);
        pv_compress(out + count, id0, hit0);
        count += prox_lanes_popcount(hit0);
        pv_compress(out + count, id1, hit1);
        count += prox_lanes_popcount(hit1);
    }
    for (; k < end; k += PV_W) {
        pv_mask hit = pv_ids_of(b, ids, k, end - k, q, m, rc, self, rule, &id0, scaled, periodic);
        pv_compress(out + count, id0, hit);
        count += prox_lanes_popcount(hit);
    }
    return count;
}

/* Local copies of the metric, the block and the query point for the
 * kernels that run over long ranges (ids, split): their fields then stay
 * in registers, where the loops' stores could otherwise alias them. The
 * count and hits kernels, called on short ranges by sparse data, keep the
 * plain form. */
#define PV_LOCALS                                                                        \
    const prox_fixed_metric local_m = *m;                                               \
    const prox_fixed_block local_b = *b;                                                \
    const int32_t local_q[3] = {q[0], q[1], q[2]}

/* The ids of those candidates kept by `rule` against self, written to
 * out[] (room for end - begin + PROX_KERNEL_SLACK); returns how many. */
static inline int64_t prox_fixed_ids(const prox_fixed_block *b, const uint32_t *ids,
                                     int64_t begin, int64_t end, const int32_t q[3],
                                     const prox_fixed_metric *m, prox_recheck *rc,
                                     uint32_t self, prox_id_rule rule, uint32_t *out)
{
    PV_LOCALS;
    return PROX_PV_VARIANT(&local_m, pv_ids, &local_b, ids, begin, end, local_q, &local_m, rc,
                           self, rule, out);
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
        u += prox_lanes_popcount(up);
        d += prox_lanes_popcount(down);
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
    PV_LOCALS;
    PROX_PV_VARIANT(&local_m, pv_split, &local_b, ids, pos, begin, end, local_q, &local_m, rc,
                    self, both, ups, downs, nu, nd);
}

/* One candidate, for the callers that test point by point (grid_sweep.c's
 * portable path). */
static inline bool prox_fixed_within(const prox_fixed_block *b, int64_t k, const int32_t q[3],
                                     const prox_fixed_metric *m, prox_recheck *rc)
{
    return prox_fixed_count(b, k, k + 1, q, m, rc) != 0;
}

/* Squared distances in rel16 units of candidates (cxy, cz), loaded, to
 * the query (vxy, vz), as unsigned lanes (below 2^32). */
static PROX_ALWAYS_INLINE pv_i32 pv_rel16_d2_of(pv_i32 cxy, pv_i32 cz, pv_i32 vxy, pv_i32 vz,
                                                bool three)
{
    pv_i32 dxy = pv_sub_i16(vxy, cxy);
    pv_i32 d2 = pv_madd_i16(dxy, dxy); /* dx^2 + dy^2 < 2^31 */
    if (three) {
        pv_i32 dz = pv_sub_i16(vz, cz);
        d2 = pv_add_i32(d2, pv_madd_i16(dz, dz)); /* < 2^32: compared unsigned */
    }
    return d2;
}

/* pv_rel16_d2_of for candidates k .. k + PV_W - 1 (left of them live). */
static PROX_ALWAYS_INLINE pv_i32 pv_rel16_d2(const prox_rel16_block *b, int64_t k, int64_t left,
                                             pv_i32 vxy, pv_i32 vz, bool three)
{
    pv_i32 cz = three ? pv_load_n(b->z0 + k, left) : pv_set1_i32(0);
    return pv_rel16_d2_of(pv_load_n(b->xy + k, left), cz, vxy, vz, three);
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

/* The ids of candidates k .. k + PV_W - 1 (left of them live) kept by
 * `rule` and within the radius, as a mask over *id. */
static PROX_ALWAYS_INLINE pv_mask pv_rel16_ids_of(const prox_rel16_block *b, const uint32_t *ids,
                                                  int64_t k, int64_t left, pv_i32 vxy, pv_i32 vz,
                                                  pv_i32 in2, pv_i32 out2, prox_recheck *rc,
                                                  uint32_t self, prox_id_rule rule, pv_i32 *id,
                                                  bool three)
{
    *id = pv_load_n(ids + k, left);
    pv_mask keep = pv_keep(*id, self, rule, pv_live(left));
    return pv_rel16_decide(pv_rel16_d2(b, k, left, vxy, vz, three), k, keep, in2, out2, rc);
}

/* Two whole vectors a turn, their distance chains in flight together,
 * then the rest a vector at a time. */
static PROX_ALWAYS_INLINE int64_t pv_rel16_ids(const prox_rel16_block *b, const uint32_t *ids,
                                               int64_t begin, int64_t end, uint32_t qxy,
                                               uint32_t qz0, const prox_rel16_metric *m,
                                               prox_recheck *rc, uint32_t self,
                                               prox_id_rule rule, uint32_t *out, bool three)
{
    const pv_i32 vxy = pv_set1_i32((int32_t)qxy), vz = pv_set1_i32((int32_t)qz0);
    const pv_i32 in2 = pv_set1_i32((int32_t)m->in2), out2 = pv_set1_i32((int32_t)m->out2);
    int64_t count = 0, k = begin;
    pv_i32 id0, id1;
    for (; k + 2 * PV_W <= end; k += 2 * PV_W) {
        pv_mask hit0 = pv_rel16_ids_of(b, ids, k, PV_W, vxy, vz, in2, out2, rc, self, rule, &id0, three);
        pv_mask hit1 = pv_rel16_ids_of(b, ids, k + PV_W, PV_W, vxy, vz, in2, out2, rc, self, rule,
                                       &id1, three);
        pv_compress(out + count, id0, hit0);
        count += prox_lanes_popcount(hit0);
        pv_compress(out + count, id1, hit1);
        count += prox_lanes_popcount(hit1);
    }
    for (; k < end; k += PV_W) {
        pv_mask hit = pv_rel16_ids_of(b, ids, k, end - k, vxy, vz, in2, out2, rc, self, rule, &id0, three);
        pv_compress(out + count, id0, hit);
        count += prox_lanes_popcount(hit);
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
        count += prox_lanes_popcount(hit);
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
        count += prox_lanes_popcount(pv_rel16_decide(pv_rel16_d2(b, k, end - k, vxy, vz, three), k,
                                                    pv_live(end - k), in2, out2, rc));
    return count;
}

/* The count of two queries that lead a block, p and p + 1 (a run's own
 * points, which the half stencil gathers first): each meets the
 * candidates after it, which the two share but for p + 1 itself, so each
 * candidate vector is loaded once for both. Sums kept in vectors as in
 * pv_rel16_count; no recheck here: band[t] says that some candidate of
 * query t fell between in2 and out2, and its count[t] must then be taken
 * again by a kernel that rechecks. */
static PROX_ALWAYS_INLINE void pv_rel16_count_two(const prox_rel16_block *b, int64_t p,
                                                  int64_t end, const prox_rel16_metric *m,
                                                  int64_t count[2], bool band[2], bool three)
{
    const pv_i32 in2 = pv_set1_i32((int32_t)m->in2), out2 = pv_set1_i32((int32_t)m->out2);
    const pv_i32 vxy0 = pv_set1_i32((int32_t)b->xy[p]), vxy1 = pv_set1_i32((int32_t)b->xy[p + 1]);
    const pv_i32 vz0 = pv_set1_i32(three ? (int32_t)b->z0[p] : 0);
    const pv_i32 vz1 = pv_set1_i32(three ? (int32_t)b->z0[p + 1] : 0);
    pv_i32 in0 = pv_set1_i32(0), out0 = in0, in1 = in0, out1 = in0, none = in0;
    int64_t k = p + 1;
    for (; k + PV_W <= end; k += PV_W) {
        pv_i32 cxy = pv_load_n(b->xy + k, PV_W), cz = three ? pv_load_n(b->z0 + k, PV_W) : none;
        pv_i32 d0 = pv_rel16_d2_of(cxy, cz, vxy0, vz0, three);
        pv_i32 d1 = pv_rel16_d2_of(cxy, cz, vxy1, vz1, three);
        in0 = pv_sub_i32(in0, pv_gtv_u32(d0, in2));
        out0 = pv_sub_i32(out0, pv_gtv_u32(d0, out2));
        in1 = pv_sub_i32(in1, pv_gtv_u32(d1, in2));
        out1 = pv_sub_i32(out1, pv_gtv_u32(d1, out2));
    }
    int32_t far0 = pv_hsum(in0), far1 = pv_hsum(in1);
    band[0] = far0 != pv_hsum(out0);
    band[1] = far1 != pv_hsum(out1);
    count[0] = (k - (p + 1)) - far0;
    count[1] = (k - (p + 1)) - far1 - 1; /* p + 1 met itself, at distance 0 */
    if (k < end) {
        pv_mask live = pv_live(end - k);
        pv_i32 cxy = pv_load_n(b->xy + k, end - k);
        pv_i32 cz = three ? pv_load_n(b->z0 + k, end - k) : none;
        pv_i32 d0 = pv_rel16_d2_of(cxy, cz, vxy0, vz0, three);
        pv_i32 d1 = pv_rel16_d2_of(cxy, cz, vxy1, vz1, three);
        pv_mask hit0 = pv_le_u32(d0, in2) & live, hit1 = pv_le_u32(d1, in2) & live;
        band[0] |= (pv_le_u32(d0, out2) & live & ~hit0) != 0;
        band[1] |= (pv_le_u32(d1, out2) & live & ~hit1) != 0;
        count[0] += prox_lanes_popcount(hit0);
        count[1] += prox_lanes_popcount(hit1);
    }
}

/* pv_rel16_count_two over the block's local copy (prox_rel16_hits). */
static inline void prox_rel16_count_two(const prox_rel16_block *b, int64_t p, int64_t end,
                                        const prox_rel16_metric *m, int64_t count[2],
                                        bool band[2])
{
    const prox_rel16_block lb = *b;
    const prox_rel16_metric lm = *m;
    if (lb.z0)
        pv_rel16_count_two(&lb, p, end, &lm, count, band, true);
    else
        pv_rel16_count_two(&lb, p, end, &lm, count, band, false);
}

/* Candidates [begin, end) of a rel16 block within the radius of (qxy,
 * qz0): their positions to hits[] (room for end - begin +
 * PROX_KERNEL_SLACK), or with hits NULL only counted; returns how many. */
static inline int64_t prox_rel16_hits(const prox_rel16_block *b, int64_t begin, int64_t end,
                                      uint32_t qxy, uint32_t qz0, const prox_rel16_metric *m,
                                      prox_recheck *rc, uint32_t *hits)
{
    /* local copies: their fields stay in registers, where the loops'
     * stores could otherwise alias them */
    const prox_rel16_block lb = *b;
    const prox_rel16_metric lm = *m;
    if (!hits)
        return lb.z0 ? pv_rel16_count(&lb, begin, end, qxy, qz0, &lm, rc, true)
                     : pv_rel16_count(&lb, begin, end, qxy, qz0, &lm, rc, false);
    return lb.z0 ? pv_rel16_hits(&lb, begin, end, qxy, qz0, &lm, rc, hits, true)
                 : pv_rel16_hits(&lb, begin, end, qxy, qz0, &lm, rc, hits, false);
}

/* As prox_fixed_ids over a rel16 block, the query's coordinates packed as
 * the block's (qxy, qz0). */
static inline int64_t prox_rel16_ids(const prox_rel16_block *b, const uint32_t *ids,
                                     int64_t begin, int64_t end, uint32_t qxy, uint32_t qz0,
                                     const prox_rel16_metric *m, prox_recheck *rc,
                                     uint32_t self, prox_id_rule rule, uint32_t *out)
{
    const prox_rel16_block lb = *b; /* local copies, as prox_rel16_hits */
    const prox_rel16_metric lm = *m;
    /* the rule a constant in each copy: no test of it in the loop */
    if (rule == PROX_IDS_ABOVE)
        return lb.z0 ? pv_rel16_ids(&lb, ids, begin, end, qxy, qz0, &lm, rc, self,
                                    PROX_IDS_ABOVE, out, true)
                     : pv_rel16_ids(&lb, ids, begin, end, qxy, qz0, &lm, rc, self,
                                    PROX_IDS_ABOVE, out, false);
    return lb.z0 ? pv_rel16_ids(&lb, ids, begin, end, qxy, qz0, &lm, rc, self, PROX_IDS_OTHER,
                                out, true)
                 : pv_rel16_ids(&lb, ids, begin, end, qxy, qz0, &lm, rc, self, PROX_IDS_OTHER,
                                out, false);
}

#endif
