/* kd_split.h: the linear kd-tree's records (Poirrier 2009, sections 4 and 5.2-5.3):
 * boxes quantized onto the root cell, their locational codes, and element
 * splitting. Used by linear_kdtree.c; kd_split.c holds the splitting. */
#ifndef PROX_KD_SPLIT_H
#define PROX_KD_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "broad/box_exact.h"
#include "broad/linear_kdtree.h"
#include "core/morton.h"

/* Up to this many records a box: one split per axis at most. */
#define PROX_KD_MAX_PIECES 8
/* prox_kd_records_of may write up to this many records past the ones it
 * returns (whole vector stores); its output arrays need the room. */
#define PROX_KD_RECORD_SLACK 8

/* The root cell and its quantization: each axis maps onto `bits` bits,
 * q(a) = floor((a - lo) * scale), clamped to [0, max_q]; cells of length
 * len are the first len cuts of the Morton order, depth = dim * bits. */
typedef struct prox_kd_geometry {
    int dim, bits, depth;
    uint32_t max_q;
    double max_qd;
    double lo[3], hi[3], scale[3];
    uint64_t record_cost; /* element splitting's cost of a record, in deepest cells (<= 2^58) */
} prox_kd_geometry;

/* Monotonic in a; never undefined (0 * inf, overflow): clamped first. */
static inline uint32_t prox_kd_quantize(const prox_kd_geometry *g, int k, double a)
{
    double t = (a - g->lo[k]) * g->scale[k];
    if (!(t > 0))
        return 0;
    return t >= g->max_qd ? g->max_q : (uint32_t)t;
}

static inline void prox_kd_quantize_box(const prox_kd_geometry *g, const prox_aabb *b,
                                        uint32_t lo[3], uint32_t hi[3])
{
    for (int k = 0; k < 3; k++) {
        lo[k] = k < g->dim ? prox_kd_quantize(g, k, b->lo[k]) : 0;
        hi[k] = k < g->dim ? prox_kd_quantize(g, k, b->hi[k]) : 0;
    }
}

static inline uint64_t prox_kd_morton(const prox_kd_geometry *g, const uint32_t q[3])
{
    return g->dim == 3 ? prox_morton3_point(q[0], q[1], q[2]) : prox_morton2_point(q[0], q[1]);
}

static inline int prox_kd_key_length(uint64_t key)
{
    return (int)(key & PROX_KD_LEN_MASK);
}

/* The records of one box, the paper's top-down recursion (section 4,
 * Figure 7): its keys into key[], how many returned. With split false,
 * the box's one cell. qbox, when given, receives the quantized box
 * (lo[dim] then hi[dim]). */
int prox_kd_pieces_of(const prox_kd_geometry *g, const prox_aabb *box, bool split,
                      uint64_t key[PROX_KD_MAX_PIECES], uint32_t *qbox);

/* The records (key, box id) of boxes [begin, end), from key[0] and id[0]
 * on, boxes in order; each box's keys are prox_kd_pieces_of's, in an order
 * that depends only on begin (eight boxes at a time at the levels that
 * take the group, PQ_RECORDS in simd/vec_u64.h). qbox, when given,
 * receives every box's quantized box at qbox + 2 * dim * i. Returns the
 * number of records; up to PROX_KD_RECORD_SLACK more may have been
 * written. */
int64_t prox_kd_records_of(const prox_kd_geometry *g, const prox_aabb *box, int64_t begin,
                           int64_t end, bool split, uint64_t *key, uint32_t *id, uint32_t *qbox);

#endif
