/* test_hardening.c: the defects found by trying to break prox, each kept
 * fixed: radii outside the range where the exact test is exact are refused
 * by every structure alike, the ends of the range agree with brute force,
 * cell-count arithmetic never overflows into a false "out of memory" or into
 * undefined behaviour, every public entry point refuses NULL arguments
 * instead of crashing, the streamed pairs are the buffered ones, and empty
 * outputs do no arithmetic on a NULL pointer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "prox/prox.h"
#include "rng.h"

typedef struct variant {
    const char *name;
    prox_algo algo;
    prox_keys keys;
    prox_coords coords;
} variant;

static const variant variants[] = {
    {"grid linear fixed", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_FIXED},
    {"grid linear double", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE},
    {"grid morton", PROX_ALGO_GRID, PROX_KEYS_MORTON, PROX_COORDS_AUTO},
    {"grid hash", PROX_ALGO_GRID, PROX_KEYS_HASH, PROX_COORDS_AUTO},
    {"brute", PROX_ALGO_BRUTE, PROX_KEYS_LINEAR, PROX_COORDS_AUTO},
    {"hierarchical", PROX_ALGO_HIERARCHICAL, PROX_KEYS_LINEAR, PROX_COORDS_AUTO},
};
#define VARIANTS (int)(sizeof variants / sizeof variants[0])

static prox_grid_desc desc_of(const variant *v, double radius)
{
    prox_grid_desc d = prox_default_grid_desc();
    d.radius = radius;
    d.keys = v->keys;
    d.coords = v->coords;
    return d;
}

static int64_t count_with(const variant *v, const prox_points *p, double radius,
                          prox_status *status)
{
    prox_grid_desc d = desc_of(v, radius);
    prox_stats stats = {0};
    *status = prox_pairs(p, &d, v->algo, prox_sink_count(), &stats);
    return stats.pairs;
}

/* ---- defect 1: radii whose square is not a normal double ------------------ */

static void radius_outside_the_range_is_refused_everywhere(void **state)
{
    (void)state;
    /* 1e300 with points 2r apart: inf <= inf made brute force say 1; 1e-302
     * with points 100 radii apart: 0 <= 0 likewise */
    const double radii[] = {1e300, 1e308, 2e150, 1.0000001e150, 1e-302, 2e-311, 1e-151,
                            0.99999e-150};
    double xyz[6] = {-1e300, 0, 0, 1e300, 0, 0};
    prox_points p = prox_points_f64(xyz, 2, 3);
    for (size_t r = 0; r < sizeof radii / sizeof radii[0]; r++) {
        for (int v = 0; v < VARIANTS; v++) {
            prox_status st;
            count_with(&variants[v], &p, radii[r], &st);
            if (st != PROX_ERR_RANGE)
                fail_msg("%s, radius %g: status %s, expected range", variants[v].name, radii[r],
                         prox_status_string(st));
            assert_non_null(strstr(prox_last_error(), "outside"));
            prox_grid_desc d = desc_of(&variants[v], radii[r]);
            assert_int_equal(prox_query(&p, &p, &d, variants[v].algo, prox_sink_count(), NULL),
                             PROX_ERR_RANGE);
        }
        prox_grid_desc d = prox_default_grid_desc();
        d.radius = radii[r];
        prox_grid *g = (prox_grid *)&d; /* must be reset to NULL */
        assert_int_equal(prox_grid_create(&d, &g), PROX_ERR_RANGE);
        assert_null(g);
        prox_skin_list *l = NULL;
        assert_int_equal(prox_skin_list_create(&d, 0.0, &l), PROX_ERR_RANGE);
        assert_null(l);
    }
    /* radius + skin beyond the range */
    prox_grid_desc d = prox_default_grid_desc();
    d.radius = 1e150;
    prox_skin_list *l = NULL;
    assert_int_equal(prox_skin_list_create(&d, 1e150, &l), PROX_ERR_RANGE);
    assert_non_null(strstr(prox_last_error(), "radius + skin"));
    assert_null(l);
}

/* Every variant against brute force on points at multiples of r/4 around
 * `centre` (cell faces, exact distances of r, duplicates). */
static void expect_agreement(double radius, double centre, const char *what)
{
    enum { N = 64 };
    double xyz[3 * N];
    rng g = rng_seeded(7);
    for (int i = 0; i < 3 * N; i++)
        xyz[i] = centre + radius * (double)(rng_below(&g, 17) - 8) / 4.0;
    prox_points p = prox_points_f64(xyz, N, 3);
    prox_status st;
    int64_t want = count_with(&variants[4], &p, radius, &st);
    assert_int_equal(st, PROX_OK);
    assert_true(want > 0);
    for (int v = 0; v < VARIANTS; v++) {
        int64_t got = count_with(&variants[v], &p, radius, &st);
        if (st != PROX_OK || got != want)
            fail_msg("%s, %s: %lld pairs (%s), brute force %lld", what, variants[v].name,
                     (long long)got, prox_status_string(st), (long long)want);
    }
}

static void ends_of_the_range_agree_with_brute_force(void **state)
{
    (void)state;
    expect_agreement(PROX_RADIUS_MAX, 0.0, "largest radius at 0");
    expect_agreement(PROX_RADIUS_MAX, -3e150, "largest radius off 0");
    expect_agreement(PROX_RADIUS_MIN, 0.0, "smallest radius at 0");
    expect_agreement(PROX_RADIUS_MIN, 1e-140, "smallest radius off 0");
    expect_agreement(1.0, 0.0, "unit radius");
}

/* ---- defects 2 and 3: cell-count arithmetic ----------------------------- */

/* A huge radius used to make the grid's origin overflow into "out of memory
 * for -9223372036854775781 cells"; a tiny radius over a wide box must be a
 * range error, never a memory error. */
static void cell_counts_never_become_memory_errors(void **state)
{
    (void)state;
    double near[6] = {0, 0, 0, 0.5, 0, 0};
    prox_points p = prox_points_f64(near, 2, 3);
    for (int v = 0; v < VARIANTS; v++) {
        prox_status st;
        assert_int_equal(count_with(&variants[v], &p, PROX_RADIUS_MAX, &st), 1);
        assert_int_equal(st, PROX_OK);
    }
    double wide[6] = {0, 0, 0, 1e150, 1e150, 1e150};
    prox_points w = prox_points_f64(wide, 2, 3);
    for (int v = 0; v < VARIANTS; v++) {
        prox_status st;
        int64_t got = count_with(&variants[v], &w, PROX_RADIUS_MIN, &st);
        if (!(st == PROX_OK && got == 0) && st != PROX_ERR_RANGE)
            fail_msg("%s: %s (%s)", variants[v].name, prox_status_string(st), prox_last_error());
    }
}

/* Points spanning 1e7 with r = 0.05: 2e8 cells along each axis, whose
 * product overflowed a signed 64-bit integer (clang's UBSan saw it) even
 * where the keys had fallen back to Morton or hash. */
static void cell_products_do_not_overflow(void **state)
{
    (void)state;
    enum { N = 2000 };
    static double xyz[3 * N];
    rng g = rng_seeded(3);
    for (int i = 0; i < 3 * N; i++)
        xyz[i] = rng_range(&g, 0.0, 1e7);
    xyz[3] = xyz[0] + 0.03; /* one pair within the radius */
    xyz[4] = xyz[1];
    xyz[5] = xyz[2];
    prox_points p = prox_points_f64(xyz, N, 3);
    prox_status st;
    int64_t want = count_with(&variants[4], &p, 0.05, &st);
    assert_int_equal(st, PROX_OK);
    assert_true(want >= 1);
    for (int v = 0; v < VARIANTS; v++) {
        int64_t got = count_with(&variants[v], &p, 0.05, &st);
        if (!(st == PROX_OK && got == want) && st != PROX_ERR_RANGE)
            fail_msg("%s: %lld pairs (%s), brute force %lld", variants[v].name, (long long)got,
                     prox_status_string(st), (long long)want);
    }
}

/* ---- found by fuzz_broad: bounds of -0 --------------------------------- */

/* The grid's rows keyed a bound of -0 (less an origin of +0) by the bits of
 * -0.0f, which sort after every positive float: the pair of a point box at
 * +0 and one at -0 was missed. Every structure, both scalars, -0 on each
 * axis in turn. */
static void negative_zero_bounds_overlap_positive_zero(void **state)
{
    (void)state;
    for (int axis = 0; axis < 3; axis++)
        for (int dim = 2; dim <= 3; dim++) {
            if (axis >= dim)
                continue;
            /* three point boxes: +0, -0 on `axis`, and one farther along */
            double f64[18] = {0};
            float f32[18] = {0};
            int w = 2 * dim;
            f64[w + axis] = f64[w + dim + axis] = -0.0;
            f64[2 * w + axis] = f64[2 * w + dim + axis] = 1.0;
            for (int v = 0; v < 3 * w; v++)
                f32[v] = (float)f64[v];
            for (int scalar = 0; scalar < 2; scalar++) {
                prox_boxes boxes = scalar ? prox_boxes_f32(f32, 3, dim) : prox_boxes_f64(f64, 3, dim);
                for (int algo = PROX_BROAD_BRUTE; algo <= PROX_BROAD_SAP; algo++) {
                    prox_broad_desc d = prox_default_broad_desc();
                    d.algo = (prox_broad_algo)algo;
                    prox_broad *b = NULL;
                    prox_stats stats = {0};
                    assert_int_equal(prox_broad_create(&d, &b), PROX_OK);
                    assert_int_equal(prox_broad_build(b, &boxes), PROX_OK);
                    assert_int_equal(prox_broad_pairs(b, prox_sink_count(), &stats), PROX_OK);
                    if (stats.pairs != 1)
                        fail_msg("%s, %dD %s, -0 on axis %d: %lld pairs, expected 1",
                                 prox_broad_algo_name(d.algo), dim, scalar ? "f32" : "f64", axis,
                                 (long long)stats.pairs);
                    prox_broad_destroy(b);
                }
            }
        }
}

/* ---- defect 7: NULL arguments ------------------------------------------------ */

static int never(prox_index i, prox_index j, void *user)
{
    (void)i, (void)j, (void)user;
    return 0;
}

static int never_block(const prox_pair *pairs, int64_t count, void *user)
{
    (void)pairs, (void)count, (void)user;
    return 0;
}

static void null_arguments_are_invalid_not_crashes(void **state)
{
    (void)state;
    double xyz[6] = {0, 0, 0, 0.5, 0, 0};
    prox_points p = prox_points_f64(xyz, 2, 3);
    prox_grid_desc d = prox_default_grid_desc();
    d.radius = 1.0;
    prox_sink count = prox_sink_count();
    for (int algo = 0; algo < 3; algo++) {
        assert_int_equal(prox_pairs(&p, NULL, (prox_algo)algo, count, NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_pairs(NULL, &d, (prox_algo)algo, count, NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_query(&p, &p, NULL, (prox_algo)algo, count, NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_query(NULL, &p, &d, (prox_algo)algo, count, NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_query(&p, NULL, &d, (prox_algo)algo, count, NULL), PROX_ERR_INVALID);
        prox_sink no_buffer = {.kind = PROX_SINK_BUFFER};
        assert_int_equal(prox_pairs(&p, &d, (prox_algo)algo, no_buffer, NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_pairs_stream(&p, NULL, (prox_algo)algo, true, 0, never_block, NULL,
                                           NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_pairs_stream(NULL, &d, (prox_algo)algo, true, 0, never_block, NULL,
                                           NULL), PROX_ERR_INVALID);
        assert_int_equal(prox_pairs_stream(&p, &d, (prox_algo)algo, false, 0, NULL, NULL, NULL),
                         PROX_ERR_INVALID);
    }
    prox_grid *g = NULL;
    assert_int_equal(prox_grid_create(NULL, &g), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_create(&d, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_create(&d, &g), PROX_OK);
    assert_int_equal(prox_grid_build(NULL, &p), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_build(g, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_update(NULL, &p, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_update(g, NULL, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_pairs(NULL, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_query(NULL, &p, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_build(g, &p), PROX_OK);
    assert_int_equal(prox_grid_query(g, NULL, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_pairs(g, prox_sink_callback(NULL, NULL), NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_grid_pairs(g, prox_sink_callback(never, NULL), NULL), PROX_OK);
    prox_grid_trim(NULL);
    prox_grid_destroy(NULL);
    prox_grid_destroy(g);

    prox_skin_list *l = NULL;
    assert_int_equal(prox_skin_list_create(NULL, 0.1, &l), PROX_ERR_INVALID);
    assert_int_equal(prox_skin_list_create(&d, 0.1, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_skin_list_create(&d, 0.1, &l), PROX_OK);
    assert_int_equal(prox_skin_list_pairs(NULL, &p, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_skin_list_pairs(l, NULL, count, NULL), PROX_ERR_INVALID);
    prox_skin_list_destroy(l);
    prox_skin_list_destroy(NULL);

    double bounds[12] = {0, 0, 0, 1, 1, 1, 0.5, 0.5, 0.5, 2, 2, 2};
    prox_boxes boxes = prox_boxes_f64(bounds, 2, 3);
    prox_broad_desc bd = prox_default_broad_desc();
    prox_broad *b = NULL;
    assert_int_equal(prox_broad_create(NULL, &b), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_create(&bd, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_create(&bd, &b), PROX_OK);
    assert_int_equal(prox_broad_build(NULL, &boxes), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_build(b, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_pairs(NULL, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_build(b, &boxes), PROX_OK);
    assert_int_equal(prox_broad_query_boxes(NULL, &boxes, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_boxes(b, NULL, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_segments(NULL, &p, &p, true, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_segments(b, NULL, &p, true, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_segments(b, &p, NULL, true, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_swept(NULL, &boxes, &boxes, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_swept(b, NULL, &boxes, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_query_swept(b, &boxes, NULL, count, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_update(NULL, &boxes, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_update(b, NULL, NULL), PROX_ERR_INVALID);
    prox_kdtree_info info;
    assert_int_equal(prox_broad_kdtree_info(NULL, &info), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_kdtree_info(b, NULL), PROX_ERR_INVALID);
    prox_broad_algo algo;
    assert_int_equal(prox_broad_algo_parse(NULL, &algo), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_algo_parse("grid", NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_pair_buffer_reserve(NULL, 4), PROX_ERR_INVALID);
    prox_broad_trim(NULL);
    prox_broad_destroy(NULL);
    prox_broad_destroy(b);
    prox_pair_buffer_free(NULL);
    prox_lists_free(NULL);
}

/* ---- streamed pairs ------------------------------------------------------------ */

typedef struct collected {
    prox_pair *pairs;
    int64_t count, capacity, blocks, stop_after;
} collected;

static void add(collected *c, prox_index i, prox_index j)
{
    if (c->count == c->capacity) {
        c->capacity = c->capacity ? 2 * c->capacity : 256;
        c->pairs = realloc(c->pairs, (size_t)c->capacity * sizeof *c->pairs);
        assert_non_null(c->pairs);
    }
    c->pairs[c->count++] = (prox_pair){i, j};
}

static int on_block(const prox_pair *pairs, int64_t count, void *user)
{
    collected *c = user;
    for (int64_t k = 0; k < count; k++)
        add(c, pairs[k].i, pairs[k].j);
    c->blocks++;
    return c->stop_after > 0 && c->blocks >= c->stop_after;
}

static int on_pair(prox_index i, prox_index j, void *user)
{
    add(user, i, j);
    return 0;
}

static void expect_same(const collected *got, const prox_pair *want, int64_t count,
                        const char *what)
{
    if (got->count != count ||
        (count > 0 && memcmp(got->pairs, want, (size_t)count * sizeof *want) != 0))
        fail_msg("%s: %lld streamed pairs differ from %lld expected", what,
                 (long long)got->count, (long long)count);
}

static void streamed_pairs_are_the_buffered_ones(void **state)
{
    (void)state;
    enum { N = 1500 };
    static double xyz[3 * N];
    rng g = rng_seeded(11);
    for (int i = 0; i < 3 * N; i++) /* clusters and duplicates */
        xyz[i] = i % 7 == 0 ? 0.5 : rng_range(&g, 0.0, i % 3 == 0 ? 1.0 : 6.0);
    prox_points p = prox_points_f64(xyz, N, 3);
    /* one pair a block (every flush), the default, one that ends mid-row */
    const int64_t blocks[] = {1, 0, 4093};
    for (int v = 0; v < VARIANTS; v++) {
        prox_grid_desc d = desc_of(&variants[v], 0.3);
        prox_pair_buffer sorted;
        prox_pair_buffer_init(&sorted, NULL);
        assert_int_equal(prox_pairs(&p, &d, variants[v].algo, prox_sink_buffer(&sorted), NULL),
                         PROX_OK);
        collected order = {0};
        assert_int_equal(prox_pairs(&p, &d, variants[v].algo, prox_sink_callback(on_pair, &order),
                                    NULL), PROX_OK);
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
            for (int t = 1; t <= (blocks[b] == 0 ? 2 : 1); t++) {
                char what[128];
                d.threads = t;
                snprintf(what, sizeof what, "%s, blocks of %lld, %d threads", variants[v].name,
                         (long long)blocks[b], t);
                collected c = {0};
                prox_stats stats;
                assert_int_equal(prox_pairs_stream(&p, &d, variants[v].algo, true, blocks[b],
                                                   on_block, &c, &stats), PROX_OK);
                expect_same(&c, sorted.pairs, sorted.count, what);
                assert_int_equal(stats.pairs, sorted.count);
                free(c.pairs);
                c = (collected){0};
                assert_int_equal(prox_pairs_stream(&p, &d, variants[v].algo, false, blocks[b],
                                                   on_block, &c, &stats), PROX_OK);
                expect_same(&c, order.pairs, order.count, what);
                free(c.pairs);
            }
        /* the caller stops after the second block */
        collected c = {.stop_after = 2};
        prox_stats stats;
        assert_int_equal(prox_pairs_stream(&p, &d, variants[v].algo, true, 100, on_block, &c,
                                           &stats), PROX_STOPPED);
        assert_int_equal(c.count, 200);
        assert_int_equal(stats.pairs, 200);
        free(c.pairs);
        free(order.pairs);
        prox_pair_buffer_free(&sorted);
    }
}

/* ---- empty ranges: no arithmetic on a NULL pointer ------------------------ */

/* Pairs of every sink of every structure where some or all of the output
 * is empty: no points, points without a neighbour, a chunk whose first
 * points find none. Each empty range must be skipped, not written at
 * NULL + 0 (undefined; clang's UBSan, `make ubsan`, reports it). */
enum { SPREAD = 12 };

/* Sink number `sink` of four (buffer, unsorted buffer, lists, unsorted
 * lists) over b and l, both initialised here. */
static prox_sink sink_number(int sink, prox_pair_buffer *b, prox_lists *l)
{
    prox_pair_buffer_init(b, NULL);
    prox_lists_init(l, NULL);
    prox_sink s = sink < 2 ? prox_sink_buffer(b) : prox_sink_lists(l);
    return sink % 2 ? prox_sink_unsorted(s) : s;
}

static int64_t pairs_through(const prox_points *p, const prox_grid_desc *d, prox_algo algo,
                             int sink, const char *what)
{
    prox_pair_buffer b;
    prox_lists l;
    prox_sink s = sink_number(sink, &b, &l);
    prox_stats stats = {0};
    prox_status st = prox_pairs(p, d, algo, s, &stats);
    if (st != PROX_OK)
        fail_msg("%s, sink %d: status %d (%s)", what, sink, (int)st, prox_last_error());
    int64_t got = sink < 2 ? b.count : l.offsets[l.rows] / 2;
    prox_pair_buffer_free(&b);
    prox_lists_free(&l);
    return got;
}

/* A built structure's self pairs and its queries of its own items, through
 * whichever API it has. */
typedef struct self_search {
    prox_grid *grid;
    const prox_points *points;
    prox_broad *broad;
    const prox_boxes *boxes;
} self_search;

static prox_status self_pairs(const self_search *s, prox_sink sink)
{
    return s->grid ? prox_grid_pairs(s->grid, sink, NULL) : prox_broad_pairs(s->broad, sink, NULL);
}

static prox_status self_query(const self_search *s, prox_sink sink)
{
    return s->grid ? prox_grid_query(s->grid, s->points, sink, NULL)
                   : prox_broad_query_boxes(s->broad, s->boxes, sink, NULL);
}

/* Every sink (buffer and lists, sorted and not) gets `pairs` self pairs,
 * and n + 2 pairs from the queries: each item finds itself, and each
 * pair's items each other. */
static void expect_every_sink(const self_search *s, int64_t n, int64_t pairs)
{
    for (int sink = 0; sink < 4; sink++) {
        prox_pair_buffer b;
        prox_lists l;
        prox_sink k = sink_number(sink, &b, &l);
        assert_int_equal(self_pairs(s, k), PROX_OK);
        assert_int_equal(sink < 2 ? b.count : l.offsets[l.rows] / 2, pairs);
        assert_int_equal(self_query(s, k), PROX_OK);
        assert_int_equal(sink < 2 ? b.count : l.offsets[l.rows], n + 2 * pairs);
        prox_pair_buffer_free(&b);
        prox_lists_free(&l);
    }
}

static void empty_ranges_are_skipped_by_points(void **state)
{
    (void)state;
    /* SPREAD points 10 radii apart, then one beside the last: 1 pair */
    double xyz[3 * (SPREAD + 1)] = {0};
    for (int i = 0; i < SPREAD; i++)
        xyz[3 * i] = 10.0 * i;
    xyz[3 * SPREAD] = 10.0 * (SPREAD - 1) + 0.5;
    const struct { int64_t n, pairs; } sets[] = {{0, 0}, {1, 0}, {SPREAD, 0}, {SPREAD + 1, 1}};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        prox_points p = prox_points_f64(xyz, sets[k].n, 3);
        for (int v = 0; v < VARIANTS; v++)
            for (int form = 0; form < 3; form++) { /* as is; 2 cell divisions; rows in place */
                if (form > 0 && variants[v].algo != PROX_ALGO_GRID)
                    continue;
                for (int threads = 1; threads <= 2; threads++)
                    for (int sink = 0; sink < 4; sink++) {
                        prox_grid_desc d = desc_of(&variants[v], 1.0);
                        d.threads = threads;
                        d.cell_divisions = form == 1 ? 2 : 1;
                        d.rows = form == 2 ? PROX_ROWS_IN_PLACE : PROX_ROWS_AUTO;
                        char what[128];
                        snprintf(what, sizeof what, "%s, form %d, %lld points, %d threads",
                                 variants[v].name, form, (long long)sets[k].n, threads);
                        assert_int_equal(pairs_through(&p, &d, variants[v].algo, sink, what),
                                         sets[k].pairs);
                    }
            }
        /* a grid object: build, pairs, queries of the same points, update */
        for (int v = 0; v < VARIANTS; v++) {
            if (variants[v].algo != PROX_ALGO_GRID || variants[v].coords == PROX_COORDS_FIXED)
                continue;
            prox_grid_desc d = desc_of(&variants[v], 1.0);
            d.threads = 2;
            prox_grid *g = NULL;
            assert_int_equal(prox_grid_create(&d, &g), PROX_OK);
            assert_int_equal(prox_grid_build(g, &p), PROX_OK);
            expect_every_sink(&(self_search){.grid = g, .points = &p}, sets[k].n, sets[k].pairs);
            prox_stats stats = {0};
            assert_int_equal(prox_grid_update(g, &p, &stats), PROX_OK);
            prox_grid_destroy(g);
        }
    }
}

static void empty_ranges_are_skipped_by_boxes(void **state)
{
    (void)state;
    /* SPREAD unit boxes 10 apart, then one overlapping the last: 1 pair */
    double bounds[6 * (SPREAD + 1)] = {0};
    for (int i = 0; i <= SPREAD; i++) {
        double x = i < SPREAD ? 10.0 * i : 10.0 * (SPREAD - 1) + 0.5;
        double box[6] = {x, 0, 0, x + 1, 1, 1};
        memcpy(&bounds[6 * i], box, sizeof box);
    }
    const struct { int64_t n, pairs; } sets[] = {{0, 0}, {1, 0}, {SPREAD, 0}, {SPREAD + 1, 1}};
    for (int algo = PROX_BROAD_BRUTE; algo <= PROX_BROAD_AUTO; algo++)
        for (int threads = 1; threads <= 2; threads++)
            for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
                prox_boxes boxes = prox_boxes_f64(bounds, sets[k].n, 3);
                prox_broad_desc d = prox_default_broad_desc();
                d.algo = (prox_broad_algo)algo;
                d.threads = threads;
                prox_broad *b = NULL;
                assert_int_equal(prox_broad_create(&d, &b), PROX_OK);
                assert_int_equal(prox_broad_build(b, &boxes), PROX_OK);
                /* updates: the same boxes (nothing to relocate), then each set */
                for (size_t u = 0; u <= sizeof sets / sizeof sets[0]; u++) {
                    size_t now = u == 0 ? k : u - 1;
                    prox_boxes next = prox_boxes_f64(bounds, sets[now].n, 3);
                    prox_stats stats = {0};
                    if (prox_broad_update(b, &next, &stats) != PROX_OK)
                        fail_msg("%s, %d threads, %lld boxes then %lld: %s",
                                 prox_broad_algo_name(d.algo), threads, (long long)sets[k].n,
                                 (long long)sets[now].n, prox_last_error());
                    expect_every_sink(&(self_search){.broad = b, .boxes = &next}, sets[now].n,
                                      sets[now].pairs);
                }
                prox_broad_destroy(b);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(radius_outside_the_range_is_refused_everywhere),
        cmocka_unit_test(ends_of_the_range_agree_with_brute_force),
        cmocka_unit_test(cell_counts_never_become_memory_errors),
        cmocka_unit_test(cell_products_do_not_overflow),
        cmocka_unit_test(negative_zero_bounds_overlap_positive_zero),
        cmocka_unit_test(null_arguments_are_invalid_not_crashes),
        cmocka_unit_test(streamed_pairs_are_the_buffered_ones),
        cmocka_unit_test(empty_ranges_are_skipped_by_points),
        cmocka_unit_test(empty_ranges_are_skipped_by_boxes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
