/* test_boxes.c: box views and their checks, structure names, options, and
 * the exact tests of src/box_exact.h (closed box overlap, segment against
 * box, swept boxes), hand-computed edge cases and a randomised comparison
 * with an independent separating-axis test in long double. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "broad/box_exact.h"
#include "check.h"
#include "rng.h"

/* ---- views ---------------------------------------------------------------- */

static void packed_views_read_min_then_max(void **state)
{
    (void)state;
    const double b3[] = {1, 2, 3, 4, 5, 6, -1, -2, -3, 0, 0, 0};
    prox_boxes v = prox_boxes_f64(b3, 2, 3);
    assert_int_equal(v.count, 2);
    assert_int_equal(v.dim, 3);
    for (int k = 0; k < 3; k++) {
        assert_true(prox_boxes_min(&v, 0, k) == b3[k]);
        assert_true(prox_boxes_max(&v, 0, k) == b3[3 + k]);
        assert_true(prox_boxes_min(&v, 1, k) == b3[6 + k]);
        assert_true(prox_boxes_max(&v, 1, k) == b3[9 + k]);
    }
    const float f2[] = {0.5f, 1.5f, 2.5f, 3.5f, 4, 5, 6, 7};
    prox_boxes w = prox_boxes_f32(f2, 2, 2);
    assert_true(w.scalar == PROX_F32);
    assert_true(prox_boxes_min(&w, 1, 1) == 5.0 && prox_boxes_max(&w, 1, 0) == 6.0);
    assert_true(w.min[2] == NULL && w.max[2] == NULL);
}

typedef struct body {
    int tag;
    double lo[3];
    char pad[5];
    double hi[3];
} body;

static void strided_views_read_structs(void **state)
{
    (void)state;
    body bodies[3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            bodies[i].lo[k] = 10 * i + k;
            bodies[i].hi[k] = 10 * i + k + 0.5;
        }
    prox_boxes v = prox_boxes_strided(&bodies[0].lo[0], &bodies[0].hi[0], 3, 3, PROX_F64,
                                      sizeof(body));
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            assert_true(prox_boxes_min(&v, i, k) == 10 * i + k);
            assert_true(prox_boxes_max(&v, i, k) == 10 * i + k + 0.5);
        }
}

/* ---- checks through the API ------------------------------------------------ */

static prox_broad *make_broad(prox_broad_algo algo)
{
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = algo;
    d.threads = 1;
    prox_broad *b = NULL;
    assert_int_equal(prox_broad_create(&d, &b), PROX_OK);
    return b;
}

static void expect_message(const char *needle)
{
    if (!strstr(prox_last_error(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", prox_last_error(), needle);
}

/* An update with a bad box is rejected, naming it, and leaves every
 * structure as it was: the pairs before it, and a good update after. */
static void rejected_update_leaves_the_structure_usable(void **state)
{
    (void)state;
    double boxes[6 * 4] = {0, 0, 1, 1, 0.5, 0.5, 2, 2, 3, 3, 4, 4,
                           3.5, 0, 5, 1, 1, 1, 1.5, 1.5, 10, 10, 11, 11};
    double bad[6 * 4], moved[6 * 4];
    memcpy(bad, boxes, sizeof bad);
    bad[5 * 4 + 3] = NAN; /* box 5: max y */
    memcpy(moved, boxes, sizeof moved);
    moved[5 * 4 + 0] = moved[5 * 4 + 1] = 0.25; /* box 5 joins boxes 0, 1 and 4 */
    moved[5 * 4 + 2] = moved[5 * 4 + 3] = 1.25;
    prox_boxes v = prox_boxes_f64(boxes, 6, 2), vb = prox_boxes_f64(bad, 6, 2),
               vm = prox_boxes_f64(moved, 6, 2);
    for (int a = 0; a <= (int)PROX_BROAD_SAP; a++) {
        prox_broad *b = make_broad((prox_broad_algo)a);
        prox_stats st;
        assert_int_equal(prox_broad_build(b, &v), PROX_OK);
        assert_int_equal(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK);
        assert_int_equal(st.pairs, 3); /* (0 1) (0 4) (1 4) */
        assert_int_equal(prox_broad_update(b, &vb, NULL), PROX_ERR_DATA);
        expect_message("box 5");
        assert_int_equal(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK);
        assert_int_equal(st.pairs, 3);
        assert_int_equal(prox_broad_update(b, &vm, NULL), PROX_OK);
        assert_int_equal(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK);
        assert_int_equal(st.pairs, 6); /* and (0 5) (1 5) (4 5) */
        prox_broad_destroy(b);
    }
}

static void bad_boxes_name_the_box_and_axis(void **state)
{
    (void)state;
    prox_broad *b = make_broad(PROX_BROAD_HIERARCHICAL);
    double boxes[5 * 4] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
    boxes[3 * 4 + 1] = 2.0; /* box 3: min y 2 > max y 1 */
    prox_boxes v = prox_boxes_f64(boxes, 5, 2);
    assert_int_equal(prox_broad_build(b, &v), PROX_ERR_DATA);
    expect_message("box 3");
    expect_message("min y");
    boxes[3 * 4 + 1] = 0.0;
    boxes[2 * 4 + 2] = NAN; /* box 2: max x */
    assert_int_equal(prox_broad_build(b, &v), PROX_ERR_DATA);
    expect_message("box 2");
    expect_message("max x");
    boxes[2 * 4 + 2] = 1.0;
    boxes[4 * 4 + 0] = -INFINITY;
    assert_int_equal(prox_broad_build(b, &v), PROX_ERR_DATA);
    expect_message("box 4");
    boxes[4 * 4 + 0] = 0.0;
    assert_int_equal(prox_broad_build(b, &v), PROX_OK);
    /* a bad query box is named too */
    double q[] = {0, 0, 1, 1, 5, 5, 4, 6};
    prox_boxes qv = prox_boxes_f64(q, 2, 2);
    assert_int_equal(prox_broad_query_boxes(b, &qv, prox_sink_count(), NULL), PROX_ERR_DATA);
    expect_message("box 1");
    /* a NaN segment end */
    double s0[] = {0, 0}, s1[] = {NAN, 0};
    prox_points p0 = prox_points_f64(s0, 1, 2), p1 = prox_points_f64(s1, 1, 2);
    assert_int_equal(prox_broad_query_segments(b, &p0, &p1, true, prox_sink_count(), NULL),
                     PROX_ERR_DATA);
    prox_broad_destroy(b);
}

static void bad_shapes_are_invalid(void **state)
{
    (void)state;
    prox_broad *b = make_broad(PROX_BROAD_MULTILEVEL);
    double boxes[] = {0, 0, 1, 1};
    prox_boxes v = prox_boxes_f64(boxes, 1, 2);
    v.dim = 4;
    assert_int_equal(prox_broad_build(b, &v), PROX_ERR_INVALID);
    expect_message("dim");
    v = prox_boxes_f64(boxes, -1, 2);
    assert_int_equal(prox_broad_build(b, &v), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_build(b, NULL), PROX_ERR_INVALID);
    /* queries before a build */
    assert_int_equal(prox_broad_pairs(b, prox_sink_count(), NULL), PROX_ERR_INVALID);
    expect_message("not built");
    v = prox_boxes_f64(boxes, 1, 2);
    assert_int_equal(prox_broad_build(b, &v), PROX_OK);
    double q3[] = {0, 0, 0, 1, 1, 1};
    prox_boxes qv = prox_boxes_f64(q3, 1, 3);
    assert_int_equal(prox_broad_query_boxes(b, &qv, prox_sink_count(), NULL), PROX_ERR_INVALID);
    expect_message("3D");
    prox_boxes from = prox_boxes_f64(boxes, 1, 2), to = prox_boxes_f64(boxes, 0, 2);
    assert_int_equal(prox_broad_query_swept(b, &from, &to, prox_sink_count(), NULL),
                     PROX_ERR_INVALID);
    prox_sink bad = prox_sink_buffer(NULL);
    assert_int_equal(prox_broad_pairs(b, bad, NULL), PROX_ERR_INVALID);
    prox_broad_destroy(b);
}

/* Hash structures measure cells from the data's minimum corner; brute
 * force has no such limit. */
static void extents_beyond_the_double_range(void **state)
{
    (void)state;
    double boxes[] = {-1e308, 0, -1e308, 1, 1e308, 0, 1e308, 1};
    prox_boxes v = prox_boxes_f64(boxes, 2, 2);
    for (int a = PROX_BROAD_BRUTE; a <= PROX_BROAD_HIERARCHICAL; a++) {
        prox_broad *b = make_broad((prox_broad_algo)a);
        prox_status want = a == PROX_BROAD_BRUTE ? PROX_OK : PROX_ERR_RANGE;
        assert_int_equal(prox_broad_build(b, &v), want);
        if (want != PROX_OK)
            expect_message("overflows");
        prox_broad_destroy(b);
    }
    /* queries that far away are fine */
    double near[] = {0, 0, 1, 1};
    double s0[] = {-1e308, 0.5}, s1[] = {1e308, 0.5};
    prox_points p0 = prox_points_f64(s0, 1, 2), p1 = prox_points_f64(s1, 1, 2);
    for (int a = PROX_BROAD_BRUTE; a <= PROX_BROAD_HIERARCHICAL; a++) {
        prox_broad *b = make_broad((prox_broad_algo)a);
        prox_boxes nv = prox_boxes_f64(near, 1, 2);
        assert_int_equal(prox_broad_build(b, &nv), PROX_OK);
        prox_stats st;
        assert_int_equal(prox_broad_query_segments(b, &p0, &p1, true, prox_sink_count(), &st),
                         PROX_OK);
        assert_int_equal(st.pairs, 1);
        assert_int_equal(prox_broad_query_boxes(b, &v, prox_sink_count(), &st), PROX_OK);
        assert_int_equal(st.pairs, 0);
        prox_broad_destroy(b);
    }
}

/* ---- names and options ------------------------------------------------------ */

static void names_round_trip(void **state)
{
    (void)state;
    const char *names[] = {"brute", "grid", "multilevel", "hierarchical", "kdtree", "sap", "auto"};
    for (int a = 0; a < 7; a++) {
        assert_string_equal(prox_broad_algo_name((prox_broad_algo)a), names[a]);
        prox_broad_algo got;
        assert_int_equal(prox_broad_algo_parse(names[a], &got), PROX_OK);
        assert_int_equal((int)got, a);
    }
    assert_null(prox_broad_algo_name((prox_broad_algo)17));
    prox_broad_algo got;
    assert_int_equal(prox_broad_algo_parse("octree", &got), PROX_ERR_INVALID);
    expect_message("octree");
    expect_message("hierarchical");
}

/* Self pairs of n 2D boxes through `algo`, with the method that ran. */
static int64_t pairs_by(prox_broad_algo algo, const double *boxes, int64_t n,
                        prox_pair_buffer *out, const char **method)
{
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = algo;
    prox_broad *b = NULL;
    assert_int_equal(prox_broad_create(&d, &b), PROX_OK);
    prox_boxes v = prox_boxes_f64(boxes, n, 2);
    assert_int_equal(prox_broad_build(b, &v), PROX_OK);
    prox_stats st;
    assert_int_equal(prox_broad_pairs(b, prox_sink_buffer(out), &st), PROX_OK);
    *method = st.method;
    prox_broad_destroy(b);
    return out->count;
}

/* PROX_BROAD_AUTO takes the grid for boxes of one size and the
 * hierarchical hash for a wide spread of sizes, says so in stats.method,
 * and finds brute force's pairs either way. */
static void auto_chooses_by_the_spread_of_sizes(void **state)
{
    (void)state;
    enum { N = 400 };
    double *boxes = malloc(N * 4 * sizeof *boxes);
    assert_non_null(boxes);
    for (int spread = 0; spread < 2; spread++) {
        uint64_t x = 12345;
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            double cx = (double)(x >> 40) / (1 << 24) * 50, cy = (double)((x >> 16) & 0xffffff) / (1 << 24) * 50;
            double half = spread && i % 10 == 0 ? 20.0 : 0.6;
            double box[4] = {cx - half, cy - half, cx + half, cy + half};
            memcpy(boxes + 4 * i, box, sizeof box);
        }
        prox_pair_buffer got, want;
        prox_pair_buffer_init(&got, NULL);
        prox_pair_buffer_init(&want, NULL);
        const char *method = NULL, *brute = NULL;
        pairs_by(PROX_BROAD_AUTO, boxes, N, &got, &method);
        pairs_by(PROX_BROAD_BRUTE, boxes, N, &want, &brute);
        assert_string_equal(method, spread ? "hierarchical" : "grid");
        assert_string_equal(brute, "brute");
        assert_true(want.count > 0);
        assert_int_equal(got.count, want.count);
        assert_memory_equal(got.pairs, want.pairs, (size_t)want.count * sizeof *want.pairs);
        prox_pair_buffer_free(&got);
        prox_pair_buffer_free(&want);
    }
    free(boxes);
}

static void options_are_checked_by_field(void **state)
{
    (void)state;
    prox_broad_desc d = prox_default_broad_desc();
    assert_int_equal(d.algo, PROX_BROAD_AUTO);
    prox_broad *b = NULL;
    d.threads = -1;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    assert_null(b);
    expect_message("threads");
    d = prox_default_broad_desc();
    d.cell_size = -1;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    expect_message("cell_size");
    d.cell_size = NAN;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    d = prox_default_broad_desc();
    d.table_size = -5;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    expect_message("table_size");
    d = prox_default_broad_desc();
    d.min_class = 4;
    d.max_class = 2;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    expect_message("min_class");
    d = prox_default_broad_desc();
    d.algo = (prox_broad_algo)99;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    expect_message("algo");
    d = prox_default_broad_desc();
    d.algo = PROX_BROAD_KDTREE;
    d.kdtree_variant = 0;
    assert_int_equal(prox_broad_create(&d, &b), PROX_ERR_INVALID);
    expect_message("kdtree_variant is 0; use 1 or 2");
    assert_int_equal(prox_broad_create(&d, NULL), PROX_ERR_INVALID);
    assert_int_equal(prox_broad_create(NULL, &b), PROX_ERR_INVALID);
    prox_broad_destroy(NULL);
}

/* ---- exact tests -------------------------------------------------------------- */

static prox_aabb box2(double x0, double y0, double x1, double y1)
{
    return (prox_aabb){{x0, y0, 0}, {x1, y1, 0}};
}

static bool seg2(double x0, double y0, double x1, double y1, const prox_aabb *b)
{
    double p0[3] = {x0, y0, 0}, p1[3] = {x1, y1, 0};
    return prox_segment_hits_aabb(p0, p1, b);
}

static void closed_overlap_counts_touching(void **state)
{
    (void)state;
    prox_aabb a = box2(0, 0, 1, 1);
    prox_aabb touch_face = box2(1, 0.5, 2, 2), touch_corner = box2(1, 1, 3, 3);
    prox_aabb apart = box2(nextafter(1.0, 2.0), 0, 2, 1), point = box2(1, 1, 1, 1);
    assert_true(prox_aabb_overlap(&a, &touch_face) && prox_aabb_overlap(&touch_face, &a));
    assert_true(prox_aabb_overlap(&a, &touch_corner));
    assert_false(prox_aabb_overlap(&a, &apart) || prox_aabb_overlap(&apart, &a));
    assert_true(prox_aabb_overlap(&a, &point) && prox_aabb_overlap(&point, &point));
    prox_aabb z1 = {{0, 0, 0}, {1, 1, 1}}, z2 = {{0, 0, 1}, {1, 1, 2}},
              z3 = {{0, 0, 1.5}, {1, 1, 2}};
    assert_true(prox_aabb_overlap(&z1, &z2));
    assert_false(prox_aabb_overlap(&z1, &z3));
    prox_aabb u = prox_aabb_union(&a, &z3);
    assert_true(u.lo[2] == 0 && u.hi[2] == 2 && u.hi[0] == 1);
}

static void segment_cases_2d(void **state)
{
    (void)state;
    prox_aabb b = box2(0, 0, 1, 1);
    /* length 0: inside, on a face, on a corner, outside */
    assert_true(seg2(0.5, 0.5, 0.5, 0.5, &b));
    assert_true(seg2(1, 0.5, 1, 0.5, &b));
    assert_true(seg2(0, 0, 0, 0, &b));
    assert_false(seg2(1.5, 0.5, 1.5, 0.5, &b));
    assert_false(seg2(nextafter(1.0, 2.0), 0.5, nextafter(1.0, 2.0), 0.5, &b));
    /* parallel to an axis: along a face, just off it, through, outside the slab */
    assert_true(seg2(-1, 1, 2, 1, &b));
    assert_false(seg2(-1, nextafter(1.0, 2.0), 2, nextafter(1.0, 2.0), &b));
    assert_true(seg2(0.3, -5, 0.3, 5, &b));
    assert_false(seg2(-0.25, -5, -0.25, 5, &b));
    assert_false(seg2(-5, 0.5, -1, 0.5, &b));
    /* ending exactly on a face from outside, and one ulp short of it */
    assert_true(seg2(-1, 0.5, 0, 0.5, &b));
    assert_false(seg2(-1, 0.5, nextafter(0.0, -1.0), 0.5, &b));
    assert_true(seg2(0.5, 3, 0.5, 1, &b));
    assert_true(seg2(0.5, 1, 0.5, 3, &b)); /* starting on the face */
    /* diagonals: through a corner, along the anti-diagonal, and a near miss
     * whose bounding box overlaps the box */
    assert_true(seg2(-1, 1, 1, -1, &b));
    assert_true(seg2(-1, 2, 2, -1, &b));
    assert_false(seg2(-1, 0.5, 0.5, -1, &b));
    assert_false(seg2(0.75, 2, 2, 0.75, &b));
    assert_true(seg2(0.75, 1.25, 1.25, 0.75, &b)); /* clips the corner (1, 1) */
    assert_true(seg2(-3, -2, 3, 2, &b));           /* through the middle */
    /* huge coordinates: no overflow into a wrong answer */
    assert_true(seg2(-1e300, 0.5, 1e300, 0.5, &b));
    assert_true(seg2(-1e308, 0.5, 1e308, 0.5, &b)); /* p1 - p0 overflows to inf */
    assert_false(seg2(-1e308, 2, 1e308, 2, &b));
    assert_true(seg2(-1e300, -1e300, 1e300, 1e300, &b));
    assert_false(seg2(-1e300, -1e300 + 1e290, 1e300, 1e300 + 1e290, &b));
    /* tiny segments near the box */
    assert_false(seg2(nextafter(1.0, 2.0), 0.5, 1.5, 0.5, &b));
    assert_true(seg2(1 + 1e-300, 0.5, 1 + 2e-300, 0.5, &b)); /* 1 + 1e-300 rounds to 1 */
    assert_false(seg2(1.5, 0.5, 1.5 + 1e-300, 0.5 + 1e-300, &b));
    /* a box of zero extent (a point) */
    prox_aabb p = box2(0.5, 0.5, 0.5, 0.5);
    assert_true(seg2(0, 0, 1, 1, &p));
    assert_true(seg2(0.5, 0.5, 0.5, 0.5, &p));
    assert_false(seg2(0, 0, 1, 0.999, &p));
    assert_true(seg2(0.5, 0, 0.5, 1, &p));
    /* a box of zero extent along y (a segment itself) */
    prox_aabb flat = box2(0, 0.5, 1, 0.5);
    assert_true(seg2(0.5, 0, 0.5, 1, &flat));
    assert_true(seg2(-1, 0.5, 0, 0.5, &flat));
    assert_false(seg2(-1, 0.4, 2, 0.4, &flat));
}

static void segment_cases_3d(void **state)
{
    (void)state;
    prox_aabb b = {{0, 0, 0}, {1, 1, 1}};
    double a0[3] = {0.5, 0.5, -2}, a1[3] = {0.5, 0.5, 2};
    assert_true(prox_segment_hits_aabb(a0, a1, &b));
    double c0[3] = {1, 1, -2}, c1[3] = {1, 1, 2}; /* along an edge */
    assert_true(prox_segment_hits_aabb(c0, c1, &b));
    double d0[3] = {1.1, 1, -2}, d1[3] = {1.1, 1, 2};
    assert_false(prox_segment_hits_aabb(d0, d1, &b));
    /* skew: bounding box overlaps, segment passes beside the edge */
    double e0[3] = {-1, 0.5, 1.6}, e1[3] = {2, 0.5, -0.6};
    /* from (-1, .5, 1.6) to (2, .5, -0.6): z = 1.6 - 2.2 (x + 1) / 3; at x = 0, z = 0.8667 */
    assert_true(prox_segment_hits_aabb(e0, e1, &b));
    double f0[3] = {-1, 0.5, 2.5}, f1[3] = {2, 0.5, 0.9};
    /* z at x = 0: 2.5 - 1.6/3 = 1.967, at x = 1: 1.433: above the box */
    assert_false(prox_segment_hits_aabb(f0, f1, &b));
    double g0[3] = {-1, -1, -1}, g1[3] = {0, 0, 0}; /* ends on the corner */
    assert_true(prox_segment_hits_aabb(g0, g1, &b));
    double h0[3] = {2, 2, 2}, h1[3] = {3, -1, 0.5};
    assert_false(prox_segment_hits_aabb(h0, h1, &b));
}

/* Independent: the separating-axis test in long double; returns the margin
 * (> 0: separated by that much, < 0: intersecting), so only clear cases
 * are compared. 2D: axes x, y and the segment's normal. */
static long double sat_margin_2d(const double p0[2], const double p1[2], const prox_aabb *b)
{
    long double best = -INFINITY;
    for (int k = 0; k < 2; k++) {
        long double smin = fminl(p0[k], p1[k]), smax = fmaxl(p0[k], p1[k]);
        long double gap = fmaxl(b->lo[k] - smax, smin - b->hi[k]);
        best = fmaxl(best, gap);
    }
    long double nx = -((long double)p1[1] - p0[1]), ny = (long double)p1[0] - p0[0];
    long double len = sqrtl(nx * nx + ny * ny);
    if (len > 0) {
        nx /= len;
        ny /= len;
        long double s = nx * p0[0] + ny * p0[1];
        long double lo = INFINITY, hi = -INFINITY;
        for (int c = 0; c < 4; c++) {
            long double v = nx * (c & 1 ? b->hi[0] : b->lo[0]) + ny * (c & 2 ? b->hi[1] : b->lo[1]);
            lo = fminl(lo, v);
            hi = fmaxl(hi, v);
        }
        best = fmaxl(best, fmaxl(lo - s, s - hi));
    }
    return best;
}

static void segment_matches_separating_axes(void **state)
{
    (void)state;
    rng r = rng_seeded(42);
    int64_t hits = 0, misses = 0;
    for (int t = 0; t < 200000; t++) {
        double x0 = rng_range(&r, -2, 4), y0 = rng_range(&r, -2, 4);
        double p0[3] = {rng_range(&r, -3, 6), rng_range(&r, -3, 6), 0};
        double p1[3] = {p0[0] + rng_range(&r, -3, 6), p0[1] + rng_range(&r, -3, 6), 0};
        if (t % 7 == 0)
            p1[0] = p0[0]; /* axis-parallel */
        if (t % 11 == 0)
            p1[1] = p0[1];
        prox_aabb b = box2(x0, y0, x0 + rng_range(&r, 0, 2), y0 + rng_range(&r, 0, 2));
        long double m = sat_margin_2d(p0, p1, &b);
        if (fabsl(m) < 1e-9L)
            continue;
        bool want = m < 0, got = prox_segment_hits_aabb(p0, p1, &b);
        if (got != want)
            fail_msg("segment (%.17g %.17g)-(%.17g %.17g) box [%.17g %.17g]x[%.17g %.17g]: "
                     "got %d, margin %Lg", p0[0], p0[1], p1[0], p1[1], b.lo[0], b.hi[0],
                     b.lo[1], b.hi[1], got, m);
        hits += want;
        misses += !want;
    }
    if (hits < 10000 || misses < 10000)
        fail_msg("%lld hits, %lld misses: the cases are not mixed", (long long)hits, (long long)misses);
}

/* Through the library: brute force with one box answers the same. */
static void library_segments_use_the_exact_test(void **state)
{
    (void)state;
    prox_broad *b = make_broad(PROX_BROAD_BRUTE);
    double box[] = {0, 0, 1, 1};
    prox_boxes v = prox_boxes_f64(box, 1, 2);
    assert_int_equal(prox_broad_build(b, &v), PROX_OK);
    /* a near miss whose bounding box overlaps, a hit ending on a face, a point */
    double s0[] = {-1, 0.5, -1, 0.5, 0.5, 0.5}, s1[] = {0.5, -1, 0, 0.5, 0.5, 0.5};
    prox_points p0 = prox_points_f64(s0, 3, 2), p1 = prox_points_f64(s1, 3, 2);
    prox_pair_buffer buf;
    prox_pair_buffer_init(&buf, NULL);
    assert_int_equal(prox_broad_query_segments(b, &p0, &p1, true, prox_sink_buffer(&buf), NULL),
                     PROX_OK);
    assert_int_equal(buf.count, 2);
    assert_true(buf.pairs[0].i == 1 && buf.pairs[1].i == 2);
    assert_int_equal(prox_broad_query_segments(b, &p0, &p1, false, prox_sink_buffer(&buf), NULL),
                     PROX_OK);
    assert_int_equal(buf.count, 3); /* the bounding box of segment 0 overlaps */
    prox_pair_buffer_free(&buf);
    prox_broad_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(packed_views_read_min_then_max),
        cmocka_unit_test(strided_views_read_structs),
        cmocka_unit_test(bad_boxes_name_the_box_and_axis),
        cmocka_unit_test(rejected_update_leaves_the_structure_usable),
        cmocka_unit_test(bad_shapes_are_invalid),
        cmocka_unit_test(extents_beyond_the_double_range),
        cmocka_unit_test(names_round_trip),
        cmocka_unit_test(options_are_checked_by_field),
        cmocka_unit_test(auto_chooses_by_the_spread_of_sizes),
        cmocka_unit_test(closed_overlap_counts_touching),
        cmocka_unit_test(segment_cases_2d),
        cmocka_unit_test(segment_cases_3d),
        cmocka_unit_test(segment_matches_separating_axes),
        cmocka_unit_test(library_segments_use_the_exact_test),
    };
    return cmocka_run_group_tests_name("boxes", tests, NULL, NULL);
}
