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
#include "simd/vec_f64.h"

/* Extra entries a hits[] array needs beyond the candidates it may hold
 * (a vector of 16 lanes is stored whole: kernel_fixed.h). */
#define PROX_KERNEL_SLACK 16

typedef struct prox_block {
    const double *x, *y, *z; /* z may be NULL for 2D */
} prox_block;

/* Which candidates a row keeps besides being within the radius: ids above
 * the row's own (each pair once, in the row of its smaller id) or every id
 * but its own (full lists). */
typedef enum prox_id_rule { PROX_IDS_ABOVE, PROX_IDS_OTHER } prox_id_rule;

/* Squared distances from q to candidates k .. k + PD_W - 1 (left of them
 * live; dead lanes read as 0), the same operations in the same order as
 * prox_metric_dist2 (simd/vec_f64.h: lane by lane the scalar ones). */
static PROX_ALWAYS_INLINE pd_f64 pd_dist2(const prox_block *b, int64_t k, int64_t left,
                                          const double q[3], const prox_metric *m)
{
    pd_f64 dx = pd_sub(pd_set1(q[0]), pd_load_n(b->x + k, left));
    pd_f64 dy = pd_sub(pd_set1(q[1]), pd_load_n(b->y + k, left));
    pd_f64 dz = b->z ? pd_sub(pd_set1(q[2]), pd_load_n(b->z + k, left)) : pd_set1(0.0);
    if (m->periodic) {
        if (m->period[0] > 0)
            dx = pd_min_image(dx, m->period[0]);
        if (m->period[1] > 0)
            dy = pd_min_image(dy, m->period[1]);
        if (m->period[2] > 0)
            dz = pd_min_image(dz, m->period[2]);
    }
    return pd_add(pd_add(pd_mul(dx, dx), pd_mul(dy, dy)), pd_mul(dz, dz));
}

/* The neighbour rule (core/exact.h) on a vector of squared distances:
 * lane by lane prox_metric_within. */
static PROX_ALWAYS_INLINE pd_cmp pd_metric_within(const prox_metric *m, pd_f64 d2)
{
    return pd_le(d2, pd_set1(prox_metric_threshold2(m)));
}

/* Candidates k .. k + PD_W - 1 (left of them live) within the radius of q,
 * as bits. */
static PROX_ALWAYS_INLINE uint32_t pd_within(const prox_block *b, int64_t k, int64_t left,
                                             const double q[3], const prox_metric *m)
{
    return pd_bits(pd_metric_within(m, pd_dist2(b, k, left, q, m))) & pd_live(left);
}

/* Candidates [begin, end) of the block within the radius of q: their
 * indices go to hits[], which needs room for end - begin + PROX_KERNEL_SLACK
 * entries; returns how many. */
static inline int64_t prox_kernel_hits(const prox_block *b, int64_t begin, int64_t end,
                                       const double q[3], const prox_metric *m,
                                       uint32_t *hits)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PD_W) {
        uint32_t hit = pd_within(b, k, end - k, q, m);
        pd_compress_iota(hits + count, k, hit);
        count += prox_lanes_popcount(hit);
    }
    return count;
}

/* How many candidates of [begin, end) lie within the radius of q: whole
 * vectors tallied in a vector (no mask leaves the registers), then the
 * tail. */
static inline int64_t prox_kernel_count(const prox_block *b, int64_t begin, int64_t end,
                                        const double q[3], const prox_metric *m)
{
    pd_tally within = pd_tally_zero();
    int64_t k = begin;
    for (; k + PD_W <= end; k += PD_W)
        within = pd_tally_add(within, pd_metric_within(m, pd_dist2(b, k, PD_W, q, m)));
    int64_t count = pd_tally_sum(within);
    if (k < end)
        count += prox_lanes_popcount(pd_within(b, k, end - k, q, m));
    return count;
}

/* How many candidates of [begin, end) lie within the radius of q and have
 * ids[k] kept by `rule` against self. */
static inline int64_t prox_kernel_count_ids(const prox_block *b, const uint32_t *ids,
                                            int64_t begin, int64_t end, const double q[3],
                                            const prox_metric *m, uint32_t self,
                                            prox_id_rule rule)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PD_W) {
        uint32_t keep = pd_u32_bits(ids + k, end - k, self, rule == PROX_IDS_ABOVE);
        count += prox_lanes_popcount(keep & pd_within(b, k, end - k, q, m));
    }
    return count;
}

/* The ids of those candidates, written to out[] (room for end - begin +
 * PROX_KERNEL_SLACK entries); returns how many. */
static inline int64_t prox_kernel_ids(const prox_block *b, const uint32_t *ids, int64_t begin,
                                      int64_t end, const double q[3], const prox_metric *m,
                                      uint32_t self, prox_id_rule rule, uint32_t *out)
{
    int64_t count = 0;
    for (int64_t k = begin; k < end; k += PD_W) {
        uint32_t keep = pd_u32_bits(ids + k, end - k, self, rule == PROX_IDS_ABOVE);
        uint32_t hit = keep & pd_within(b, k, end - k, q, m);
        pd_compress_u32(out + count, ids + k, end - k, hit);
        count += prox_lanes_popcount(hit);
    }
    return count;
}

#endif
