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
 * at a time (prox_kd_pieces_of), and, where the machine has AVX-512, eight
 * boxes at a time bottom-up over every piece a box could have (records8):
 * the recursion's decisions depend on the data at every level, and one box
 * at a time they were mispredicted branches. `records_s` of
 * prox_kdtree_info, printed by bench/broad_spheres.c, times this step;
 * docs/design.md compares the two. */
#include "broad/kd_split.h"

#include <stddef.h>

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

/* ---- eight boxes at a time ------------------------------------------------ */

#if PROX_SIMD_AVX512

/* box_sides for eight boxes, a lane each; code[k][1] is side 2's (sides 0
 * and 1 share the lower end). */
typedef struct sides8 {
    __m512i cut[3][3];
    __m512i code[3][2];
} sides8;

/* prox_kd_quantize, lane by lane: the same operations, and the clamps give
 * the same integers (NaN, never seen here, would give 0 too). */
static inline __m512i quantize8(const prox_kd_geometry *g, int k, __m512d a)
{
    __m512d t = _mm512_mul_pd(_mm512_sub_pd(a, _mm512_set1_pd(g->lo[k])),
                              _mm512_set1_pd(g->scale[k]));
    t = _mm512_max_pd(t, _mm512_setzero_pd());
    t = _mm512_min_pd(t, _mm512_set1_pd(g->max_qd));
    return _mm512_cvtepu32_epi64(_mm512_cvttpd_epu32(t));
}

/* prox_morton_spread3 / prox_morton_spread2 of each lane, shifted by k. */
static inline __m512i spread8(int dim, int k, __m512i v)
{
    return _mm512_slli_epi64(prox_morton_spread_x8(dim, v), (unsigned)k);
}

/* first_cut of each lane: the leading zeros of lo ^ hi in 64 bits are
 * 32 more than in 32. */
static inline __m512i first_cut8(const prox_kd_geometry *g, int dim, int k, __m512i lo,
                                 __m512i hi)
{
    __m512i x = _mm512_xor_si512(lo, hi);
    __m512i level = _mm512_sub_epi64(_mm512_lzcnt_epi64(x), _mm512_set1_epi64(64 - g->bits));
    __m512i cut = dim == 3 ? _mm512_add_epi64(level, _mm512_slli_epi64(level, 1))
                           : _mm512_slli_epi64(level, 1);
    cut = _mm512_add_epi64(cut, _mm512_set1_epi64(dim - 1 - k));
    __mmask8 same = _mm512_cmpeq_epi64_mask(x, _mm512_setzero_si512());
    return _mm512_mask_blend_epi64(same, cut, _mm512_set1_epi64(g->depth));
}

/* sides_of, lane by lane; lo and hi are the quantized corners. */
static inline void sides8_of(const prox_kd_geometry *g, int dim, const __m512i lo[3],
                             const __m512i hi[3], sides8 *s)
{
    __m512i depth = _mm512_set1_epi64(g->depth), one = _mm512_set1_epi64(1);
    for (int k = 0; k < dim; k++) {
        __m512i x = _mm512_xor_si512(lo[k], hi[k]);
        __mmask8 same = _mm512_cmpeq_epi64_mask(x, _mm512_setzero_si512());
        /* the first differing bit; its lanes where lo == hi are unused */
        __m512i bit = _mm512_sub_epi64(_mm512_set1_epi64(63), _mm512_lzcnt_epi64(x));
        __m512i mid = _mm512_sllv_epi64(_mm512_srlv_epi64(hi[k], bit), bit);
        s->cut[k][0] = first_cut8(g, dim, k, lo[k], hi[k]);
        s->cut[k][1] = _mm512_mask_blend_epi64(
            same, first_cut8(g, dim, k, lo[k], _mm512_sub_epi64(mid, one)), depth);
        s->cut[k][2] = _mm512_mask_blend_epi64(same, first_cut8(g, dim, k, mid, hi[k]), depth);
        s->code[k][0] = spread8(dim, k, lo[k]);
        s->code[k][1] = _mm512_mask_blend_epi64(same, spread8(dim, k, mid), s->code[k][0]);
    }
}

/* The pieces as a table of every state a box's splitting can reach: state
 * s gives a side (0 whole, 1 lower half, 2 upper half) per axis, s = side0
 * + 3 side1 + 9 side2. In each lane, len is the state's cell, axis[k]
 * whether its next cut is along k, take whether it splits, cost the cost
 * (cost_of) of the records it ends in: the recursion of `place`, each state
 * decided once its children are (children have larger indices). */
#define MAX_STATES 27

typedef struct states8 {
    __m512i len[MAX_STATES], cost[MAX_STATES];
    __mmask8 axis[MAX_STATES][3], take[MAX_STATES];
} states8;

static const int stride3[3] = {1, 3, 9};

static inline int side_in(int s, int k)
{
    return s / stride3[k] % 3;
}

static inline void decide8(const prox_kd_geometry *g, int dim, const sides8 *sd, states8 *st)
{
    __m512i depth = _mm512_set1_epi64(g->depth), one = _mm512_set1_epi64(1);
    for (int s = (dim == 3 ? 27 : 9) - 1; s >= 0; s--) {
        __m512i len = sd->cut[0][side_in(s, 0)];
        for (int k = 1; k < dim; k++)
            len = _mm512_min_epu64(len, sd->cut[k][side_in(s, k)]);
        __mmask8 whole = _mm512_cmpeq_epi64_mask(len, depth), leaf = whole;
        __m512i whole_cost = _mm512_add_epi64(_mm512_sllv_epi64(one, _mm512_sub_epi64(depth, len)),
                                              _mm512_set1_epi64((long long)g->record_cost));
        __m512i halves = _mm512_setzero_si512();
        for (int k = 0; k < dim; k++) {
            /* cuts differ between axes below depth: one axis a lane */
            __mmask8 a = _mm512_mask_cmpeq_epi64_mask((__mmask8)~whole,
                                                      sd->cut[k][side_in(s, k)], len);
            st->axis[s][k] = a;
            if (side_in(s, k)) /* already split along k: the piece stays whole */
                leaf |= a;
            else
                halves = _mm512_mask_add_epi64(halves, a, st->cost[s + stride3[k]],
                                               st->cost[s + 2 * stride3[k]]);
        }
        st->take[s] = (__mmask8)~leaf & _mm512_cmplt_epu64_mask(halves, whole_cost);
        st->cost[s] = _mm512_mask_blend_epi64(st->take[s], whole_cost, halves);
        st->len[s] = len;
    }
}

/* The keys of state s's cells, lanes `emit`, appended at key/id; returns
 * how many. */
static inline int emit8(const prox_kd_geometry *g, int dim, const sides8 *sd, const states8 *st,
                        int s, __mmask8 emit, uint32_t first_id, uint64_t *key, uint32_t *id)
{
    __m512i code = _mm512_setzero_si512();
    for (int k = 0; k < dim; k++)
        code = _mm512_or_si512(code, sd->code[k][side_in(s, k) == 2]);
    __m512i free_bits = _mm512_sub_epi64(_mm512_set1_epi64(g->depth), st->len[s]);
    __m512i path = _mm512_sllv_epi64(_mm512_srlv_epi64(code, free_bits), free_bits);
    __m512i keys = _mm512_or_si512(_mm512_slli_epi64(path, PROX_KD_LEN_BITS), st->len[s]);
    __m256i ids = _mm256_add_epi32(_mm256_set1_epi32((int)first_id),
                                   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    /* compressed in registers and stored whole: a compressing store to
     * memory is microcoded and slow on Zen 4 */
    _mm512_storeu_si512(key, _mm512_maskz_compress_epi64(emit, keys));
    _mm256_storeu_si256((__m256i *)id, _mm256_maskz_compress_epi32(emit, ids));
    return __builtin_popcount(emit);
}

/* The records of boxes i .. i + 7, state by state; returns how many. */
static inline int64_t records8(const prox_kd_geometry *g, int dim, const prox_aabb *box,
                               int64_t i, bool split, uint64_t *key, uint32_t *id,
                               uint32_t *qbox)
{
    const __m512i lanes = _mm512_setr_epi64(0, 6, 12, 18, 24, 30, 36, 42); /* doubles */
    __m512i lo[3], hi[3];
    for (int k = 0; k < dim; k++) {
        lo[k] = quantize8(g, k, _mm512_i64gather_pd(lanes, &box[i].lo[k], 8));
        hi[k] = quantize8(g, k, _mm512_i64gather_pd(lanes, &box[i].hi[k], 8));
    }
    if (qbox) {
        uint32_t q[6][8];
        for (int k = 0; k < dim; k++) {
            _mm256_storeu_si256((__m256i *)q[k], _mm512_cvtepi64_epi32(lo[k]));
            _mm256_storeu_si256((__m256i *)q[dim + k], _mm512_cvtepi64_epi32(hi[k]));
        }
        for (int b = 0; b < 8; b++)
            for (int c = 0; c < 2 * dim; c++)
                qbox[2 * dim * (i + b) + c] = q[c][b];
    }
    sides8 sd;
    sides8_of(g, dim, lo, hi, &sd);
    states8 st;
    if (!split) { /* the boxes' own cells: state 0 */
        st.len[0] = sd.cut[0][0];
        for (int k = 1; k < dim; k++)
            st.len[0] = _mm512_min_epu64(st.len[0], sd.cut[k][0]);
        return emit8(g, dim, &sd, &st, 0, 0xff, (uint32_t)i, key, id);
    }
    decide8(g, dim, &sd, &st);
    int64_t at = 0;
    __mmask8 used[MAX_STATES] = {0xff};
    for (int s = 0; s < (dim == 3 ? 27 : 9); s++) {
        if (!used[s])
            continue;
        __mmask8 splits = used[s] & st.take[s];
        for (int k = 0; k < dim; k++)
            if (!side_in(s, k)) {
                used[s + stride3[k]] |= splits & st.axis[s][k];
                used[s + 2 * stride3[k]] |= splits & st.axis[s][k];
            }
        __mmask8 emit = used[s] & (__mmask8)~st.take[s];
        if (emit)
            at += emit8(g, dim, &sd, &st, s, emit, (uint32_t)i, key + at, id + at);
    }
    return at;
}
#define RECORDS8 1
#endif

int64_t prox_kd_records_of(const prox_kd_geometry *g, const prox_aabb *box, int64_t begin,
                           int64_t end, bool split, uint64_t *key, uint32_t *id, uint32_t *qbox)
{
    int64_t at = 0, i = begin;
#ifdef RECORDS8
    for (; i + 8 <= end; i += 8)
        at += g->dim == 3 ? records8(g, 3, box, i, split, key + at, id + at, qbox)
                          : records8(g, 2, box, i, split, key + at, id + at, qbox);
#endif
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
