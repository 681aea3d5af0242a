/* test_vec_u64.c: the 64-bit lanes of src/simd/vec_u64.h (pq_*) against
 * the plain C they stand for, lane by lane. Compiled once per SIMD level
 * (tests/CMakeLists.txt), since the layer is a header of the engine: each
 * copy checks its own level's implementation, including the operations a
 * level emulates (AVX2's and SSE2's unsigned compares and leading zeros,
 * SSE2's shifts by lane, the gathers below AVX2), and the operations of
 * vec.h's 32-bit lanes that the box rows and the row networks use. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "simd/vec_u64.h"

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

/* A value of a random width (0 to 64 bits), so that small values, the
 * kernels' own, come often. */
static uint64_t any_width(uint64_t *x)
{
    int bits = (int)(next(x) % 65);
    uint64_t v = next(x);
    return bits == 64 ? v : v & ((1ull << bits) - 1);
}

typedef struct lanes {
    uint64_t w[PQ_W];
} lanes;

static lanes of(pq_u64 v)
{
    lanes l;
    pq_store(l.w, v);
    return l;
}

static pq_u64 load(const uint64_t *w) { return pq_load_n(w, PQ_W); }

static int reference_lzcnt(uint64_t v) { return v ? __builtin_clzll(v) : 64; }

static void arithmetic_and_logic(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int r = 0; r < 20000; r++) {
        uint64_t a[PQ_W], b[PQ_W], n[PQ_W];
        for (int k = 0; k < PQ_W; k++) {
            a[k] = any_width(&x);
            b[k] = r % 4 == 0 ? a[k] : any_width(&x); /* equal lanes too */
            n[k] = next(&x) % 64;
        }
        int c = (int)(next(&x) % 64);
        lanes add = of(pq_add(load(a), load(b))), sub = of(pq_sub(load(a), load(b)));
        lanes and = of(pq_and(load(a), load(b))), or = of(pq_or(load(a), load(b)));
        lanes xor = of(pq_xor(load(a), load(b))), min = of(pq_min_u64(load(a), load(b)));
        lanes shl = of(pq_shl(load(a), c)), shr = of(pq_shr(load(a), c));
        lanes shlv = of(pq_shlv(load(a), load(n))), shrv = of(pq_shrv(load(a), load(n)));
        pq_mask eq = pq_bits(pq_eq(load(a), load(b))), lt = pq_bits(pq_lt_u64(load(a), load(b)));
        pq_mask le = pq_bits(pq_le_u64(load(a), load(b)));
        lanes sel = of(pq_select(pq_lt_u64(load(a), load(b)), load(a), load(b)));
        for (int k = 0; k < PQ_W; k++) {
            assert_true(add.w[k] == a[k] + b[k] && sub.w[k] == a[k] - b[k]);
            assert_true(and.w[k] == (a[k] & b[k]) && or.w[k] == (a[k] | b[k]));
            assert_true(xor.w[k] == (a[k] ^ b[k]));
            assert_true(min.w[k] == (a[k] < b[k] ? a[k] : b[k]));
            assert_true(sel.w[k] == min.w[k]);
            assert_true(shl.w[k] == a[k] << c && shr.w[k] == a[k] >> c);
            assert_true(shlv.w[k] == a[k] << n[k] && shrv.w[k] == a[k] >> n[k]);
            assert_int_equal(eq >> k & 1, a[k] == b[k]);
            assert_int_equal(lt >> k & 1, a[k] < b[k]);
            assert_int_equal(le >> k & 1, a[k] <= b[k]);
        }
        assert_true(eq < 1u << PQ_W && lt < 1u << PQ_W && le < 1u << PQ_W);
    }
}

static void masks(void **state)
{
    (void)state;
    uint64_t x = 0x2545f4914f6cdd1dull;
    assert_int_equal(pq_bits(pq_cmp_all()), pq_live(PQ_W));
    assert_int_equal(pq_bits(pq_cmp_none()), 0);
    for (int n = 0; n <= PQ_W; n++)
        assert_int_equal(pq_live(n), (1u << n) - 1);
    for (int r = 0; r < 2000; r++) {
        uint64_t a[PQ_W], b[PQ_W], c[PQ_W];
        for (int k = 0; k < PQ_W; k++) {
            a[k] = next(&x) % 3;
            b[k] = next(&x) % 3;
            c[k] = next(&x) % 3;
        }
        pq_cmp p = pq_lt_u64(load(a), load(b)), q = pq_lt_u64(load(b), load(c));
        pq_mask pb = pq_bits(p), qb = pq_bits(q);
        assert_int_equal(pq_bits(pq_cmp_and(p, q)), pb & qb);
        assert_int_equal(pq_bits(pq_cmp_or(p, q)), pb | qb);
        assert_int_equal(pq_bits(pq_cmp_andnot(p, q)), pb & ~qb);
    }
}

/* Every value below 2^51 that the emulations could get wrong: 0, powers of
 * two, one less, and random widths. */
static void leading_zeros(void **state)
{
    (void)state;
    uint64_t v[PQ_W] = {0};
    for (int bit = 0; bit < 51; bit++)
        for (int d = -1; d <= 1; d++) {
            uint64_t value = (1ull << bit) + (uint64_t)d;
            for (int k = 0; k < PQ_W; k++)
                v[k] = k % 2 ? value : value >> 1;
            lanes z = of(pq_lzcnt(load(v)));
            for (int k = 0; k < PQ_W; k++)
                assert_int_equal(z.w[k], reference_lzcnt(v[k]));
        }
    uint64_t x = 0x7f4a7c159e3779b9ull;
    for (int r = 0; r < 20000; r++) {
        for (int k = 0; k < PQ_W; k++)
            v[k] = any_width(&x) >> 13;
        lanes z = of(pq_lzcnt(load(v)));
        for (int k = 0; k < PQ_W; k++)
            assert_int_equal(z.w[k], reference_lzcnt(v[k]));
    }
}

/* prox_kd_quantize's clamps: NaN and below 0 give 0, max and above give
 * max, the rest truncate. */
static uint64_t reference_quantize(double t, double max)
{
    if (!(t > 0))
        return 0;
    return t >= max ? (uint64_t)max : (uint64_t)t;
}

static void quantize_and_gather_doubles(void **state)
{
    (void)state;
    const double max = 536870911.0; /* 2^29 - 1, the 2D kd-tree's */
    const double special[] = {NAN, -INFINITY, -1.0, -0.0, 0.0, 0.25, 1.0, 1.999999, 12345.5,
                              max - 0.5, max, max + 0.5, 1e300, INFINITY};
    const int specials = (int)(sizeof special / sizeof special[0]);
    uint64_t x = 0x1234567887654321ull;
    enum { STRIDE = 6 };
    double d[STRIDE * PQ_W];
    for (int r = 0; r < 20000; r++) {
        for (int k = 0; k < STRIDE * PQ_W; k++)
            d[k] = next(&x) % 2 ? special[next(&x) % (uint64_t)specials]
                                : ldexp((double)(next(&x) >> 11), -(int)(next(&x) % 40));
        for (int start = 0; start < STRIDE; start++) {
            lanes q = of(pq_quantize(pq_gather_f64(d + start, STRIDE), max));
            for (int k = 0; k < PQ_W; k++)
                assert_int_equal(q.w[k], reference_quantize(d[start + STRIDE * k], max));
        }
    }
}

static void compress_and_narrow(void **state)
{
    (void)state;
    uint64_t v[PQ_W];
    for (int k = 0; k < PQ_W; k++)
        v[k] = 0x1111111100000000ull * (uint64_t)(k + 1) + (uint64_t)k;
    uint32_t low[PQ_W];
    pq_store_u32(low, load(v));
    for (int k = 0; k < PQ_W; k++)
        assert_int_equal(low[k], (uint32_t)v[k]);
    for (pq_mask m = 0; m < 1u << PQ_W; m++) {
        uint64_t out[PQ_W];
        pq_compress(out, load(v), m);
        int at = 0;
        for (int k = 0; k < PQ_W; k++)
            if (m >> k & 1)
                assert_true(out[at++] == v[k]);
    }
}

static void loads_of_a_few_lanes(void **state)
{
    (void)state;
    uint64_t v[PQ_W];
    for (int k = 0; k < PQ_W; k++)
        v[k] = ~(uint64_t)k;
    for (int n = 1; n <= PQ_W; n++) {
        lanes l = of(pq_load_n(v, n));
        for (int k = 0; k < PQ_W; k++)
            assert_true(l.w[k] == (k < n ? v[k] : 0));
    }
}

/* The 32-bit helpers: widening halves, gathers of 64- and 32-bit words by
 * 32-bit indices, vec.h's unsigned max and min, masks as lanes, and the stores of
 * PQ_W lanes (nothing past them). */
static void thirty_two_bit_lanes(void **state)
{
    (void)state;
    uint64_t x = 0xdeadbeefcafef00dull;
    uint64_t table64[256];
    uint32_t table32[256];
    for (int k = 0; k < 256; k++) {
        table64[k] = next(&x);
        table32[k] = (uint32_t)next(&x);
    }
    for (int r = 0; r < 5000; r++) {
        uint32_t index[PV_W], a[PV_W], b[PV_W];
        for (int k = 0; k < PV_W; k++) {
            index[k] = (uint32_t)(next(&x) % 256);
            a[k] = (uint32_t)any_width(&x);
            b[k] = r % 5 == 0 ? a[k] : (uint32_t)any_width(&x);
        }
        pv_mask live = (pv_mask)next(&x) & pv_live(PV_W);
        pv_i32 at = pv_load_n(index, PV_W);
        uint32_t got[PV_W], max[PV_W], min[PV_W], ones[PV_W];
        int32_t first[PV_W] = {0};
        pv_store(got, pq_gather_u32(table32, at, live));
        pv_store(max, pv_max_u32(pv_load_n(a, PV_W), pv_load_n(b, PV_W)));
        pv_store(min, pv_min_u32(pv_load_n(a, PV_W), pv_load_n(b, PV_W)));
        pv_store(ones, pq_lanes_u32(live));
        pq_store_first_u32(first, pv_load_n(a, PV_W));
        int32_t iota[PV_W] = {0};
        pq_store_iota_u32(iota, (int64_t)index[0] - 3);
        for (int k = 0; k < PV_W; k++) {
            assert_int_equal(got[k], live >> k & 1 ? table32[index[k]] : 0);
            assert_int_equal(max[k], a[k] > b[k] ? a[k] : b[k]);
            assert_int_equal(min[k], a[k] < b[k] ? a[k] : b[k]);
            assert_int_equal(ones[k], live >> k & 1 ? UINT32_MAX : 0);
            assert_int_equal((uint32_t)first[k], k < PQ_W ? a[k] : 0);
            assert_int_equal(iota[k], k < PQ_W ? (int32_t)index[0] - 3 + k : 0);
        }
        for (int half = 0; half < PQ_HALVES; half++) {
            pq_mask half_live = live >> (half * PQ_W) & pq_live(PQ_W);
            lanes wide = of(pq_widen(pv_load_n(a, PV_W), half));
            lanes words = of(pq_gather_u64(table64, at, half, half_live));
            for (int k = 0; k < PQ_W; k++) {
                assert_true(wide.w[k] == a[half * PQ_W + k]);
                assert_true(words.w[k] == (half_live >> k & 1 ? table64[index[half * PQ_W + k]] : 0));
            }
        }
    }
}

static uint64_t reference_pdep(uint64_t v, uint64_t mask)
{
    uint64_t out = 0;
    for (int bit = 0, from = 0; bit < 64; bit++)
        if (mask >> bit & 1)
            out |= (v >> from++ & 1) << bit;
    return out;
}

static void morton_spreads_and_deposits(void **state)
{
    (void)state;
    uint64_t x = 0x0123456789abcdefull;
    for (int r = 0; r < 20000; r++) {
        uint64_t v[PQ_W];
        for (int k = 0; k < PQ_W; k++)
            v[k] = next(&x) >> (next(&x) % 64);
        lanes s3 = of(pq_morton_spread(3, load(v))), s2 = of(pq_morton_spread(2, load(v)));
        for (int k = 0; k < PQ_W; k++) {
            assert_true(s3.w[k] == prox_morton_spread3(v[k]));
            assert_true(s2.w[k] == prox_morton_spread2(v[k]));
        }
        uint64_t mask = next(&x) & next(&x);
        assert_true(prox_pdep64(v[0], mask) == reference_pdep(v[0], mask));
    }
}

/* vec.h's float lanes as the box rows' window reads them: loads of the
 * first n keys (0 to PV_W, dead lanes 0, nothing past read) and the
 * ordered compares to bit masks, against C's < and <= (ties, signed
 * zeros, a NaN). */
static void float_windows(void **state)
{
    (void)state;
    uint64_t x = 0x2545f4914f6cdd1dull;
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, NAN, 3.0e38f, -3.0e38f};
    for (int r = 0; r < 20000; r++) {
        float key[PV_W], bound = special[next(&x) % 8];
        for (int k = 0; k < PV_W; k++)
            key[k] = r % 3 ? (float)(int)(next(&x) % 9) * 0.25f - 1.0f : special[next(&x) % 8];
        if (r % 3)
            bound = (float)(int)(next(&x) % 9) * 0.25f - 1.0f;
        int n = (int)(next(&x) % (PV_W + 1));
        pv_f32 v = pv_load_f32_n(key, n);
        pv_mask lt = pv_lt_f32(v, pv_set1_f32(bound)), le = pv_le_f32(v, pv_set1_f32(bound));
        for (int k = 0; k < PV_W; k++) {
            float lane = k < n ? key[k] : 0.0f;
            assert_true(((lt >> k) & 1) == (lane < bound));
            assert_true(((le >> k) & 1) == (lane <= bound));
        }
    }
}

/* vec.h's compress of kept lanes, for every mask: the kept lanes in
 * order, then PV_W stores in all (nothing past them). */
static void compress_of_every_mask(void **state)
{
    (void)state;
    uint32_t in[PV_W];
    for (int k = 0; k < PV_W; k++)
        in[k] = 0x80000000u + 7u * (uint32_t)k; /* above 2^31 too */
    pv_i32 v = pv_load_n(in, PV_W);
    for (uint32_t m = 0; m < (1u << PV_W); m++) {
        uint32_t out[2 * PV_W];
        for (int k = 0; k < 2 * PV_W; k++)
            out[k] = 0xdeadbeefu;
        pv_compress(out, v, (pv_mask)m);
        int kept = 0;
        for (int k = 0; k < PV_W; k++)
            if (m >> k & 1)
                assert_int_equal(out[kept++], in[k]);
        assert_int_equal(kept, prox_lanes_popcount(m));
        for (int k = PV_W; k < 2 * PV_W; k++)
            assert_int_equal(out[k], 0xdeadbeefu);
    }
}

#if PV_ROW_NETWORK
/* The row networks' step (pv_exchange: lane i meets lane i ^ j, keeps the
 * max where take_max has bit i) for each distance, and the padded load and
 * the store of the first n lanes that writes nothing past them. */
static void check_exchange(const uint32_t *in, int j, pv_mask take_max, pv_i32 got)
{
    uint32_t out[PV_W];
    pv_store(out, got);
    for (int i = 0; i < PV_W; i++) {
        uint32_t a = in[i], b = in[i ^ j];
        uint32_t want = (take_max >> i) & 1 ? (a > b ? a : b) : (a < b ? a : b);
        assert_true(out[i] == want);
    }
}

static void network_steps(void **state)
{
    (void)state;
    uint64_t x = 0x853c49e6748fea9bull;
    for (int r = 0; r < 20000; r++) {
        uint32_t in[PV_W];
        for (int k = 0; k < PV_W; k++)
            in[k] = r % 2 ? (uint32_t)next(&x) : (uint32_t)(next(&x) % 4); /* ties too */
        pv_mask take_max = (pv_mask)next(&x) & pv_live(PV_W);
        pv_i32 v = pv_load_n(in, PV_W);
        check_exchange(in, 1, take_max, pv_exchange(v, 1, take_max));
        check_exchange(in, 2, take_max, pv_exchange(v, 2, take_max));
        check_exchange(in, 4, take_max, pv_exchange(v, 4, take_max));
        check_exchange(in, 8, take_max, pv_exchange(v, 8, take_max));
        int n = (int)(next(&x) % (PV_W + 1));
        uint32_t padded[PV_W], stored[PV_W + 1];
        pv_store(padded, pv_load_pad_n(in, n, UINT32_MAX));
        for (int k = 0; k <= PV_W; k++)
            stored[k] = 0x5a5a5a5au;
        pv_store_n(stored, v, n);
        for (int k = 0; k < PV_W; k++) {
            assert_true(padded[k] == (k < n ? in[k] : UINT32_MAX));
            assert_true(stored[k] == (k < n ? in[k] : 0x5a5a5a5au));
        }
        assert_true(stored[PV_W] == 0x5a5a5a5au);
    }
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arithmetic_and_logic),
        cmocka_unit_test(masks),
        cmocka_unit_test(leading_zeros),
        cmocka_unit_test(quantize_and_gather_doubles),
        cmocka_unit_test(compress_and_narrow),
        cmocka_unit_test(loads_of_a_few_lanes),
        cmocka_unit_test(thirty_two_bit_lanes),
        cmocka_unit_test(morton_spreads_and_deposits),
        cmocka_unit_test(float_windows),
        cmocka_unit_test(compress_of_every_mask),
#if PV_ROW_NETWORK
        cmocka_unit_test(network_steps),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
