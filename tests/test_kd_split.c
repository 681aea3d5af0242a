/* test_kd_split.c: the linear kd-tree's records (src/broad/kd_split.c).
 * At the levels that take the group (PQ_RECORDS in src/simd/vec_u64.h),
 * prox_kd_records_of splits eight boxes at a time bottom-up; each box must
 * get exactly the records of the paper's top-down recursion
 * (prox_kd_pieces_of), and the same quantized box. Boxes of every scale,
 * on cutting planes, degenerate, spanning and leaving the root; 2D and 3D;
 * splitting on and off, records costing nothing (Figure 7) or more, up to
 * the cap; ranges that start off a multiple of eight and end in a partial
 * group. The records must also partition each box: disjoint cells whose
 * volumes, with the records' cost, never exceed the unsplit cell's. And
 * the scalar point codes of morton.h match its spreads. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broad/kd_split.h"
#include "rng.h"

#define BOXES 4099

/* The root cell [lo, lo + side)^dim, as linear_kdtree.c sets it up. */
static prox_kd_geometry geometry(int dim, double lo, double side)
{
    prox_kd_geometry g = {.dim = dim};
    g.bits = dim == 3 ? PROX_KD_BITS_3D : PROX_KD_BITS_2D;
    g.depth = dim * g.bits;
    g.max_q = ((uint32_t)1 << g.bits) - 1;
    g.max_qd = (double)g.max_q;
    for (int k = 0; k < dim; k++) {
        g.lo[k] = lo;
        g.hi[k] = lo + side;
        g.scale[k] = ldexp(1.0, g.bits) / side;
    }
    return g;
}

/* A coordinate: uniform, on a cutting plane (a dyadic fraction of the
 * root), or outside the root. */
static double coordinate(rng *r, const prox_kd_geometry *g, int k)
{
    double side = g->hi[k] - g->lo[k];
    switch (rng_below(r, 8)) {
    case 0: return g->lo[k] + side * (double)rng_below(r, 17) / 16.0;
    case 1: return g->lo[k] + side * (double)rng_below(r, 1 << 12) / 4096.0;
    case 2: return g->lo[k] - side * rng_uniform(r);
    default: return rng_range(r, g->lo[k], side);
    }
}

/* Boxes of sizes from the root down to nothing, log-uniform. */
static void fill_boxes(rng *r, const prox_kd_geometry *g, prox_aabb *box, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        box[i] = (prox_aabb){{0, 0, 0}, {0, 0, 0}};
        int degenerate = rng_below(r, 10) == 0;
        for (int k = 0; k < g->dim; k++) {
            double side = g->hi[k] - g->lo[k];
            double size = degenerate ? 0.0 : side * ldexp(1.0, -(int)rng_below(r, 30));
            box[i].lo[k] = coordinate(r, g, k);
            box[i].hi[k] = box[i].lo[k] + size * rng_uniform(r) * 1.5;
        }
    }
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Is the cell of `inner` inside (or equal to) the cell of `outer`? */
static int cell_within(const prox_kd_geometry *g, uint64_t inner, uint64_t outer)
{
    int lo = prox_kd_key_length(outer), li = prox_kd_key_length(inner);
    if (li < lo)
        return 0;
    if (lo == 0) /* the root */
        return 1;
    int free_bits = g->depth - lo + PROX_KD_LEN_BITS;
    return (inner >> free_bits) == (outer >> free_bits);
}

/* The keys of box i among the records, sorted. */
static int keys_of_box(const uint64_t *key, const uint32_t *id, int64_t count, uint32_t i,
                       uint64_t *out)
{
    int m = 0;
    for (int64_t r = 0; r < count; r++)
        if (id[r] == i) {
            assert_true(m < PROX_KD_MAX_PIECES);
            out[m++] = key[r];
        }
    qsort(out, (size_t)m, sizeof *out, compare_u64);
    return m;
}

static void check_range(const prox_kd_geometry *g, const prox_aabb *box, int64_t begin,
                        int64_t end, int split)
{
    int64_t most = (end - begin) * PROX_KD_MAX_PIECES + PROX_KD_RECORD_SLACK;
    uint64_t *key = malloc((size_t)most * sizeof *key);
    uint32_t *id = malloc((size_t)most * sizeof *id);
    uint32_t *qbox = calloc((size_t)(2 * g->dim * end), sizeof *qbox);
    assert_non_null(key);
    assert_non_null(id);
    assert_non_null(qbox);
    int64_t count = prox_kd_records_of(g, box, begin, end, split, key, id, qbox);
    int64_t total = 0;
    for (int64_t r = 1; r < count; r++) /* boxes in order, groups of eight */
        assert_true((id[r] - begin) / 8 >= (id[r - 1] - begin) / 8);
    for (int64_t i = begin; i < end; i++) {
        uint64_t want[PROX_KD_MAX_PIECES], got[PROX_KD_MAX_PIECES], whole[PROX_KD_MAX_PIECES];
        uint32_t want_q[6];
        int w = prox_kd_pieces_of(g, &box[i], split, want, want_q);
        qsort(want, (size_t)w, sizeof *want, compare_u64);
        int m = keys_of_box(key, id, count, (uint32_t)i, got);
        assert_int_equal(m, w);
        assert_memory_equal(got, want, (size_t)w * sizeof *want);
        assert_memory_equal(qbox + 2 * g->dim * i, want_q, (size_t)(2 * g->dim) * sizeof *want_q);
        /* a partition: pieces in disjoint cells inside the unsplit cell, no
         * more volume than it */
        assert_int_equal(prox_kd_pieces_of(g, &box[i], 0, whole, NULL), 1);
        uint64_t volume = 0;
        for (int p = 0; p < w; p++) {
            assert_true(cell_within(g, want[p], whole[0]));
            for (int q = 0; q < p; q++)
                assert_false(cell_within(g, want[p], want[q]) || cell_within(g, want[q], want[p]));
            volume += (uint64_t)1 << (g->depth - prox_kd_key_length(want[p]));
        }
        uint64_t whole_volume = (uint64_t)1 << (g->depth - prox_kd_key_length(whole[0]));
        assert_true(volume <= whole_volume);
        assert_true(volume + g->record_cost * (uint64_t)w <= whole_volume + g->record_cost);
        assert_true(split || w == 1);
        total += w;
    }
    assert_int_equal(count, total);
    free(key);
    free(id);
    free(qbox);
}

static void records_match_the_recursion(void **state)
{
    (void)state;
    prox_aabb *box = malloc(BOXES * sizeof *box);
    assert_non_null(box);
    for (int dim = 2; dim <= 3; dim++)
        for (int trial = 0; trial < 3; trial++) {
            prox_kd_geometry g = geometry(dim, trial == 2 ? -1e9 : -3.25, 1000.0 * (trial + 1));
            rng r = rng_seeded(9100 + 10 * (uint64_t)dim + (uint64_t)trial);
            fill_boxes(&r, &g, box, BOXES);
            /* nothing (Figure 7), the default's cost for these boxes, more,
             * and linear_kdtree.c's cap */
            const uint64_t costs[] = {0, ((uint64_t)1 << g.depth) / BOXES,
                                      (uint64_t)1 << (g.depth - 4), (uint64_t)1 << 58};
            for (int c = 0; c < 4; c++) {
                g.record_cost = costs[c];
                for (int split = 0; split <= 1; split++) {
                    check_range(&g, box, 0, BOXES, split);
                    check_range(&g, box, 3, 3 + 8 * 50 + 5, split);
                    check_range(&g, box, 8, 8, split);
                }
            }
        }
    free(box);
}

/* The kd-tree's point codes (bit deposits where the machine has BMI2) are
 * the spreads' codes. */
static void point_codes_match_the_spreads(void **state)
{
    (void)state;
    rng r = rng_seeded(9200);
    for (int i = 0; i < 100000; i++) {
        uint64_t v = rng_next(&r);
        uint32_t x = (uint32_t)v, y = (uint32_t)(v >> 32), z = (uint32_t)(v >> 11);
        if (i % 4 == 0) /* the largest coordinates of each depth */
            x = y = z = (uint32_t)((1ull << (i % 33)) - 1);
        assert_int_equal(prox_morton3_point(x, y, z), prox_morton3(x, y, z));
        assert_int_equal(prox_morton2_point(x, y), prox_morton2(x, y));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(records_match_the_recursion),
        cmocka_unit_test(point_codes_match_the_spreads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
