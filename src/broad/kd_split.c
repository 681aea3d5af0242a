/* kd_split.c: element splitting (Poirrier 2009, section 4) and the records of the
 * linear kd-tree: boxes quantized, their cells (section 5.3), split once
 * per axis at most where that lowers the cost of their records.
 *
 * A box's cell is the longest common prefix of its quantized corners'
 * Morton codes. A box crossing the next cutting plane of its cell is split
 * there, in the quantized integers, so that the pieces partition the
 * box's cells exactly; the split is kept only if the pieces (after their
 * own splits) cost less than the cell it avoids, a record costing its
 * cell's volume plus g->record_cost (linear_kdtree.c: the root's volume per
 * box times desc.kdtree_split_cost). With record_cost 0 this is Figure 7's
 * rule: the pieces' cells hold less volume. Pieces of one box lie in
 * disjoint cells.
 *
 * Two evaluations of the same rule: the paper's top-down recursion, a box
 * at a time (prox_kd_pieces_of), and, where the level's 64-bit lanes pay
 * (PQ_RECORDS, simd/vec_u64.h), a group of eight boxes at a time bottom-up
 * over every piece a box could have (records_of_group), written once over
 * those lanes: the recursion's decisions depend on the data at every
 * level, and one box at a time they are mispredicted branches.
 * `records_s` of prox_kdtree_info, printed by bench/broad_spheres.c, times
 * this step; docs/design.md compares the two. */
#include "broad/kd_split.h"

#include <stddef.h>

#include "simd/vec_u64.h"

/* ---- one box at a time ---------------------------------------------------- */

/* Section 5.3, axis by axis: where the corners first differ along axis k,
 * at bit p from the top, is cut p * dim + (dim - 1 - k) of the interleaved
 * sequence; a cell's length is the smallest such cut (depth when the
 * corners agree on every axis). */
static inline uint64_t spread(const prox_kd_geometry *g, int k, uint32_t v)
{
    return g->dim == 3 ? prox_morton_spread3(v) << k : prox_morton_spread2(v) << k;
}

static inline int first_cut(const prox_kd_geometry *g, int k, uint32_t lo, uint32_t hi)
{
    uint32_t x = lo ^ hi;
    return x ? (__builtin_clz(x) - (32 - g->bits)) * g->dim + g->dim - 1 - k : g->depth;
}

/* A box's splits, axis by axis: the first cut of the whole interval
 * [lo, hi] (side 0) and of its halves when the interval is split at its
 * first differing bit, [lo, mid - 1] (side 1) and [mid, hi] (side 2);
 * and the spread bits of each side's lower end, the pieces' Morton codes.
 * A split along one axis changes no other axis, so every piece of
 * section 4 is a choice of side per axis, and its cell is read from these
 * 3 x 3 numbers without touching the box again. */
typedef struct box_sides {
    int cut[3][3];
    uint64_t code[3][3];
} box_sides;

static void sides_of(const prox_kd_geometry *g, const uint32_t lo[3], const uint32_t hi[3],
                     box_sides *s)
{
    for (int k = 0; k < 3; k++) {
        uint64_t code = k < g->dim ? spread(g, k, lo[k]) : 0;
        s->code[k][0] = s->code[k][1] = s->code[k][2] = code;
        s->cut[k][0] = s->cut[k][1] = s->cut[k][2] = g->depth;
        if (k >= g->dim || lo[k] == hi[k])
            continue;
        int bit = 31 - __builtin_clz(lo[k] ^ hi[k]); /* lo has 0 there, hi 1 */
        uint32_t mid = hi[k] >> bit << bit;
        s->cut[k][0] = first_cut(g, k, lo[k], hi[k]);
        s->cut[k][1] = first_cut(g, k, lo[k], mid - 1);
        s->cut[k][2] = first_cut(g, k, mid, hi[k]);
        s->code[k][2] = spread(g, k, mid);
    }
}

typedef struct pieces {
    uint64_t *key;
    int count;
} pieces;

/* The key of a cell: its path (the code cut to len) and its length. */
static inline uint64_t cell_key(const prox_kd_geometry *g, uint64_t code, int len)
{
    int free_bits = g->depth - len;
    return ((code >> free_bits) << free_bits) << PROX_KD_LEN_BITS | (uint64_t)len;
}

static inline void add_piece(const prox_kd_geometry *g, const box_sides *s, const int side[3],
                             int len, pieces *out)
{
    uint64_t code = s->code[0][side[0]] | s->code[1][side[1]] | s->code[2][side[2]];
    out->key[out->count++] = cell_key(g, code, len);
}

/* Cells' volumes in deepest cells: 2^(depth - length), exact in 64 bits. */
static inline uint64_t volume_of(const prox_kd_geometry *g, int len)
{
    return (uint64_t)1 << (g->depth - len);
}

/* A record's cost: its cell's volume and the record itself. */
static inline uint64_t cost_of(const prox_kd_geometry *g, int len)
{
    return volume_of(g, len) + g->record_cost;
}

/* The records of the piece given by side[] (axes in `done` already split),
 * appended to out. A split is tried along the axis of the piece's next cut
 * (the paper's order, top-down); its pieces are kept only if they (after
 * their own splits) cost less than the cell they avoid (cost_of; Figure 7
 * when records cost nothing), else they are taken back and the piece stays
 * whole. Halves
 * with every axis split are leaves, decided here without a call. */
static void place(const prox_kd_geometry *g, const box_sides *s, int side[3], unsigned done,
                  bool split, pieces *out)
{
    int len = g->depth, axis = 0;
    for (int k = 0; k < g->dim; k++)
        if (s->cut[k][side[k]] < len) {
            len = s->cut[k][side[k]];
            axis = k;
        }
    unsigned below = done | 1u << axis;
    if (!split || len == g->depth || below == done) {
        add_piece(g, s, side, len, out);
        return;
    }
    if (below == (1u << g->dim) - 1) {
        int rest = g->depth;
        for (int k = 0; k < g->dim; k++)
            rest = k != axis && s->cut[k][side[k]] < rest ? s->cut[k][side[k]] : rest;
        int low = s->cut[axis][1] < rest ? s->cut[axis][1] : rest;
        int high = s->cut[axis][2] < rest ? s->cut[axis][2] : rest;
        if (cost_of(g, low) + cost_of(g, high) >= cost_of(g, len)) {
            add_piece(g, s, side, len, out);
            return;
        }
        side[axis] = 1;
        add_piece(g, s, side, low, out);
        side[axis] = 2;
        add_piece(g, s, side, high, out);
        side[axis] = 0;
        return;
    }
    int first = out->count;
    side[axis] = 1;
    place(g, s, side, below, true, out);
    side[axis] = 2;
    place(g, s, side, below, true, out);
    side[axis] = 0;
    uint64_t cost = 0;
    for (int p = first; p < out->count; p++)
        cost += cost_of(g, prox_kd_key_length(out->key[p]));
    if (cost < cost_of(g, len))
        return;
    out->count = first;
    add_piece(g, s, side, len, out);
}

int prox_kd_pieces_of(const prox_kd_geometry *g, const prox_aabb *box, bool split,
                      uint64_t key[PROX_KD_MAX_PIECES], uint32_t *qbox)
{
    uint32_t lo[3], hi[3];
    prox_kd_quantize_box(g, box, lo, hi);
    if (qbox)
        for (int k = 0; k < g->dim; k++) {
            qbox[k] = lo[k];
            qbox[g->dim + k] = hi[k];
        }
    box_sides s;
    sides_of(g, lo, hi, &s);
    int side[3] = {0, 0, 0};
    pieces out = {key, 0};
    place(g, &s, side, 0, split, &out);
    return out.count;
}

/* ---- a group of eight boxes at a time ------------------------------------ */

/* Boxes whose records come out together, state by state (records_of_group):
 * eight at every level that takes this path, in vectors of PQ_W, so that
 * all of them make the same records in the same order (and so sort equal
 * keys alike). */
#define GROUP 8
#define VECTORS (GROUP / PQ_W)

/* box_sides for PQ_W boxes, a lane each; code[k][1] is side 2's (sides 0
 * and 1 share the lower end). */
typedef struct sides_v {
    pq_u64 cut[3][3];
    pq_u64 code[3][2];
} sides_v;

/* prox_kd_quantize, lane by lane: the same operations and clamps. */
static inline pq_u64 quantize_v(const prox_kd_geometry *g, int k, pd_f64 a)
{
    pd_f64 t = pd_mul(pd_sub(a, pd_set1(g->lo[k])), pd_set1(g->scale[k]));
    return pq_quantize(t, g->max_qd);
}

/* spread(), lane by lane. */
static inline pq_u64 spread_v(int dim, int k, pq_u64 v)
{
    return pq_shl(pq_morton_spread(dim, v), k);
}

/* first_cut of each lane: the leading zeros of lo ^ hi in 64 bits are
 * 32 more than in 32. */
static inline pq_u64 first_cut_v(const prox_kd_geometry *g, int dim, int k, pq_u64 lo, pq_u64 hi)
{
    pq_u64 x = pq_xor(lo, hi);
    pq_u64 level = pq_sub(pq_lzcnt(x), pq_set1((uint64_t)(64 - g->bits)));
    pq_u64 cut = dim == 3 ? pq_add(level, pq_shl(level, 1)) : pq_shl(level, 1);
    cut = pq_add(cut, pq_set1((uint64_t)(dim - 1 - k)));
    return pq_select(pq_eq(x, pq_set1(0)), pq_set1((uint64_t)g->depth), cut);
}

/* sides_of, lane by lane; lo and hi are the quantized corners. */
static inline void sides_of_v(const prox_kd_geometry *g, int dim, const pq_u64 lo[3],
                              const pq_u64 hi[3], sides_v *s)
{
    pq_u64 depth = pq_set1((uint64_t)g->depth), one = pq_set1(1);
    for (int k = 0; k < dim; k++) {
        pq_u64 x = pq_xor(lo[k], hi[k]);
        pq_cmp same = pq_eq(x, pq_set1(0));
        /* the first differing bit; its lanes where lo == hi are unused */
        pq_u64 bit = pq_sub(pq_set1(63), pq_lzcnt(x));
        pq_u64 mid = pq_shlv(pq_shrv(hi[k], bit), bit);
        s->cut[k][0] = first_cut_v(g, dim, k, lo[k], hi[k]);
        s->cut[k][1] = pq_select(same, depth, first_cut_v(g, dim, k, lo[k], pq_sub(mid, one)));
        s->cut[k][2] = pq_select(same, depth, first_cut_v(g, dim, k, mid, hi[k]));
        s->code[k][0] = spread_v(dim, k, lo[k]);
        s->code[k][1] = pq_select(same, s->code[k][0], spread_v(dim, k, mid));
    }
}

/* The pieces as a table of every state a box's splitting can reach: state
 * s gives a side (0 whole, 1 lower half, 2 upper half) per axis, s = side0
 * + 3 side1 + 9 side2. In each lane, len is the state's cell, cost the
 * cost (cost_of) of the records it ends in; over the group, bit b of
 * axis[k] says whether box b's next cut is along k, of take whether it
 * splits: the recursion of `place`, each state decided once its children
 * are (children have larger indices). */
#define MAX_STATES 27

typedef struct states_v {
    pq_u64 len[MAX_STATES], cost[MAX_STATES];
} states_v;

typedef struct group_states {
    states_v v[VECTORS];
    pq_mask axis[MAX_STATES][3], take[MAX_STATES];
} group_states;

static const int stride3[3] = {1, 3, 9};

static inline int side_in(int s, int k)
{
    return s / stride3[k] % 3;
}

/* The states of vector v of the group (its boxes' bits from v * PQ_W on). */
static inline void decide_v(const prox_kd_geometry *g, int dim, const sides_v *sd, int v,
                            group_states *gs)
{
    states_v *st = &gs->v[v];
    pq_u64 depth = pq_set1((uint64_t)g->depth), one = pq_set1(1);
    pq_u64 record = pq_set1(g->record_cost);
#pragma GCC unroll 27 /* unrolled, each state's sides are constants: no divisions by 3 */
    for (int s = (dim == 3 ? 27 : 9) - 1; s >= 0; s--) {
        pq_u64 len = sd->cut[0][side_in(s, 0)];
        for (int k = 1; k < dim; k++)
            len = pq_min_u64(len, sd->cut[k][side_in(s, k)]);
        pq_cmp whole = pq_eq(len, depth), leaf = whole;
        pq_u64 whole_cost = pq_add(pq_shlv(one, pq_sub(depth, len)), record);
        pq_u64 halves = pq_set1(0);
        for (int k = 0; k < dim; k++) {
            /* cuts differ between axes below depth: one axis a lane */
            pq_cmp a = pq_cmp_andnot(pq_eq(sd->cut[k][side_in(s, k)], len), whole);
            if (v == 0)
                gs->axis[s][k] = 0;
            gs->axis[s][k] |= pq_bits(a) << (v * PQ_W);
            if (side_in(s, k)) /* already split along k: the piece stays whole */
                leaf = pq_cmp_or(leaf, a);
            else
                halves = pq_select(a, pq_add(st->cost[s + stride3[k]], st->cost[s + 2 * stride3[k]]),
                                   halves);
        }
        pq_cmp take = pq_cmp_andnot(pq_lt_u64(halves, whole_cost), leaf);
        if (v == 0)
            gs->take[s] = 0;
        gs->take[s] |= pq_bits(take) << (v * PQ_W);
        st->cost[s] = pq_select(take, halves, whole_cost);
        st->len[s] = len;
    }
}

/* The keys of state s's cells for the lanes `emit` of one vector (its
 * first box first_id), appended at key/id; returns how many. */
static inline int emit_v(const prox_kd_geometry *g, int dim, const sides_v *sd, pq_u64 len,
                         int s, pq_mask emit, uint32_t first_id, uint64_t *key, uint32_t *id)
{
    pq_u64 code = pq_set1(0);
    for (int k = 0; k < dim; k++)
        code = pq_or(code, sd->code[k][side_in(s, k) == 2]);
    pq_u64 free_bits = pq_sub(pq_set1((uint64_t)g->depth), len);
    pq_u64 path = pq_shlv(pq_shrv(code, free_bits), free_bits);
    pq_compress(key, pq_or(pq_shl(path, PROX_KD_LEN_BITS), len), emit);
    pd_compress_iota(id, first_id, emit);
    return prox_lanes_popcount(emit);
}

/* State s of the group, reached by the boxes of used[s]: the states its
 * splits reach marked in used[], the records of the boxes it ends in
 * appended at key/id; returns how many. */
static inline int emit_state(const prox_kd_geometry *g, int dim, const sides_v sd[VECTORS],
                             const group_states *gs, int s, pq_mask used[MAX_STATES],
                             uint32_t first_id, uint64_t *key, uint32_t *id)
{
    pq_mask splits = used[s] & gs->take[s];
    for (int k = 0; k < dim; k++)
        if (!side_in(s, k)) {
            used[s + stride3[k]] |= splits & gs->axis[s][k];
            used[s + 2 * stride3[k]] |= splits & gs->axis[s][k];
        }
    pq_mask emit = used[s] & ~gs->take[s];
    int at = 0;
    for (int v = 0; v < VECTORS; v++) {
        pq_mask lanes = emit >> (v * PQ_W) & pq_live(PQ_W);
        if (lanes)
            at += emit_v(g, dim, &sd[v], gs->v[v].len[s], s, lanes, first_id + (uint32_t)(v * PQ_W),
                         key + at, id + at);
    }
    return at;
}

/* The quantized corners of boxes i .. i + PQ_W - 1. */
static inline void quantize_boxes_v(const prox_kd_geometry *g, int dim, const prox_aabb *box,
                                    int64_t i, pq_u64 lo[3], pq_u64 hi[3])
{
    const int64_t stride = (int64_t)(sizeof(prox_aabb) / sizeof(double));
    for (int k = 0; k < dim; k++) {
        lo[k] = quantize_v(g, k, pq_gather_f64(&box[i].lo[k], stride));
        hi[k] = quantize_v(g, k, pq_gather_f64(&box[i].hi[k], stride));
    }
}

/* The quantized boxes of the group into qbox (lo[dim], hi[dim] a box). */
static inline void store_qboxes(int dim, pq_u64 lo[VECTORS][3], pq_u64 hi[VECTORS][3],
                                int64_t i, uint32_t *qbox)
{
    uint32_t q[6][GROUP];
    for (int v = 0; v < VECTORS; v++)
        for (int k = 0; k < dim; k++) {
            pq_store_u32(q[k] + v * PQ_W, lo[v][k]);
            pq_store_u32(q[dim + k] + v * PQ_W, hi[v][k]);
        }
    for (int b = 0; b < GROUP; b++)
        for (int c = 0; c < 2 * dim; c++)
            qbox[2 * dim * (i + b) + c] = q[c][b];
}

/* The records of boxes i .. i + GROUP - 1, state by state, each state's
 * boxes in order; returns how many. */
static inline int64_t records_of_group(const prox_kd_geometry *g, int dim, const prox_aabb *box,
                                       int64_t i, bool split, uint64_t *key, uint32_t *id,
                                       uint32_t *qbox)
{
    pq_u64 lo[VECTORS][3], hi[VECTORS][3];
    sides_v sd[VECTORS];
    for (int v = 0; v < VECTORS; v++) {
        quantize_boxes_v(g, dim, box, i + v * PQ_W, lo[v], hi[v]);
        sides_of_v(g, dim, lo[v], hi[v], &sd[v]);
    }
    if (qbox)
        store_qboxes(dim, lo, hi, i, qbox);
    int64_t at = 0;
    if (!split) { /* the boxes' own cells: state 0 */
        for (int v = 0; v < VECTORS; v++) {
            pq_u64 len = sd[v].cut[0][0];
            for (int k = 1; k < dim; k++)
                len = pq_min_u64(len, sd[v].cut[k][0]);
            at += emit_v(g, dim, &sd[v], len, 0, pq_live(PQ_W), (uint32_t)(i + v * PQ_W), key + at,
                         id + at);
        }
        return at;
    }
    group_states gs;
    for (int v = 0; v < VECTORS; v++)
        decide_v(g, dim, &sd[v], v, &gs);
    pq_mask used[MAX_STATES] = {(1u << GROUP) - 1};
    for (int s = 0; s < (dim == 3 ? 27 : 9); s++)
        if (used[s])
            at += emit_state(g, dim, sd, &gs, s, used, (uint32_t)i, key + at, id + at);
    return at;
}

int64_t prox_kd_records_of(const prox_kd_geometry *g, const prox_aabb *box, int64_t begin,
                           int64_t end, bool split, uint64_t *key, uint32_t *id, uint32_t *qbox)
{
    int64_t at = 0, i = begin;
    if (PQ_RECORDS)
        for (; i + GROUP <= end; i += GROUP)
            at += g->dim == 3 ? records_of_group(g, 3, box, i, split, key + at, id + at, qbox)
                              : records_of_group(g, 2, box, i, split, key + at, id + at, qbox);
    uint64_t piece[PROX_KD_MAX_PIECES];
    for (; i < end; i++) {
        int count = prox_kd_pieces_of(g, &box[i], split, piece,
                                      qbox ? qbox + 2 * g->dim * i : NULL);
        for (int p = 0; p < count; p++, at++) {
            key[at] = piece[p];
            id[at] = (uint32_t)i;
        }
    }
    return at;
}
