/* test_broad.c: every broad-phase structure against brute force, and brute
 * force against the test's own naive loops.
 *
 * Scenes: boxes of sizes 2^-4 .. 2^15 (some larger than the largest class
 * the options allow), zero-extent and point boxes, touching boxes, copies,
 * 1e9 offsets and negative coordinates; N = 0, 1, and all boxes identical.
 * Queries: self pairs, query boxes, segments (exact and broad only; length
 * 0, axis-parallel, ending exactly on a face, starting on a corner), swept
 * boxes. Every sink: sorted buffer, CSR lists, count, callback (and
 * stopping early). 2D and 3D, double and float. Also tables small enough
 * to force hash collisions everywhere, and identical output for 1, 2 and 3
 * threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broad_scenes.h"

/* ---- configurations ------------------------------------------------------ */

static const config CONFIGS[] = {
    {"grid", PROX_BROAD_GRID, 0, 0, false, 0, 0},
    {"grid cell 0.25 (big boxes oversize)", PROX_BROAD_GRID, 0.25, 0, false, 0, 0},
    {"grid cell 5000, table 8", PROX_BROAD_GRID, 5000, 8, false, 0, 0},
    {"multilevel", PROX_BROAD_MULTILEVEL, 0, 0, false, 0, 0},
    {"multilevel table 4", PROX_BROAD_MULTILEVEL, 0, 4, false, 0, 0},
    {"multilevel classes 0..3 (big boxes split)", PROX_BROAD_MULTILEVEL, 0, 0, false, 0, 3},
    {"hierarchical", PROX_BROAD_HIERARCHICAL, 0, 0, false, 0, 0},
    {"hierarchical table 2", PROX_BROAD_HIERARCHICAL, 0, 2, false, 0, 0},
    {"hierarchical table 64", PROX_BROAD_HIERARCHICAL, 0, 64, false, 0, 0},
    {"hierarchical growable", PROX_BROAD_HIERARCHICAL, 0, 0, true, 0, 0},
    {"hierarchical growable from 1 slot", PROX_BROAD_HIERARCHICAL, 0, 1, true, 0, 0},
    {"hierarchical classes -2..4", PROX_BROAD_HIERARCHICAL, 0, 0, false, -2, 4},
    /* borrow_boxes (borrow_hook): packed 3D doubles read in place, other
     * views copied */
    {"grid borrowing the boxes", PROX_BROAD_GRID, 0, 0, false, 0, 0},
    {"hierarchical borrowing the boxes", PROX_BROAD_HIERARCHICAL, 0, 0, false, 0, 0},
};
#define CONFIG_COUNT ((int)(sizeof CONFIGS / sizeof CONFIGS[0]))
#define BORROWING 2 /* the last configs */

static void borrow_hook(const config *c, prox_broad_desc *d)
{
    d->borrow_boxes = c >= &CONFIGS[CONFIG_COUNT - BORROWING] && c < &CONFIGS[CONFIG_COUNT];
}

/* ---- tests -------------------------------------------------------------------- */

static const config *const *all_configs(void)
{
    static const config *list[CONFIG_COUNT];
    for (int c = 0; c < CONFIG_COUNT; c++)
        list[c] = &CONFIGS[c];
    return list;
}

static void run_scene(scene_kind kind, int n, int m)
{
    check_scene_kind(kind, n, m, all_configs(), CONFIG_COUNT);
}

static void mixed_sizes_match_brute_force(void **state)
{
    (void)state;
    run_scene(SCENE_MIXED, 700, 300);
}

static void offsets_of_1e9_match_brute_force(void **state)
{
    (void)state;
    run_scene(SCENE_OFFSET, 400, 200);
}

static void empty_and_single_match_brute_force(void **state)
{
    (void)state;
    run_scene(SCENE_EMPTY, 0, 50);
    run_scene(SCENE_ONE, 1, 50);
}

static void identical_boxes_match_brute_force(void **state)
{
    (void)state;
    run_scene(SCENE_SAME, 60, 40);
}

/* The uniform grid's self pairs by rows of cells (box_rows.c). */
static void similar_sizes_match_brute_force(void **state)
{
    (void)state;
    run_scene(SCENE_SIMILAR, 700, 100);
    run_scene(SCENE_SIMILAR_OFFSET, 400, 100);
}

/* The grid (CONFIGS[0]) over `boxes` on `threads` threads, its sorted self
 * pairs checked against brute force's; returns brute force's pair count.
 * The grid is left in *grid when grid is not NULL (the caller destroys it). */
static int64_t grid_matches_brute_force(const prox_boxes *boxes, int threads,
                                        const char *context, prox_broad **grid)
{
    prox_pair_buffer want, got;
    prox_pair_buffer_init(&want, NULL);
    prox_pair_buffer_init(&got, NULL);
    prox_broad *brute = create(&BRUTE, 1), *g = create(&CONFIGS[0], threads);
    CHECK_STATUS(prox_broad_build(brute, boxes), PROX_OK, context);
    CHECK_STATUS(prox_broad_pairs(brute, prox_sink_buffer(&want), NULL), PROX_OK, context);
    CHECK_STATUS(prox_broad_build(g, boxes), PROX_OK, context);
    CHECK_STATUS(prox_broad_pairs(g, prox_sink_buffer(&got), NULL), PROX_OK, context);
    CHECK(same_pair_buffers(&got, &want), context, "%lld pairs, brute force %lld",
          (long long)got.count, (long long)want.count);
    int64_t count = want.count;
    prox_broad_destroy(brute);
    if (grid)
        *grid = g;
    else
        prox_broad_destroy(g);
    prox_pair_buffer_free(&want);
    prox_pair_buffer_free(&got);
    return count;
}

/* The uniform grid's rows (box_rows.c) with rows longer than its on-stack
 * sort takes, and enough boxes for several chunks: self pairs as brute
 * force finds them, and the same unsorted output for 1, 2 and 3 threads. */
static void long_rows_match_brute_force_for_every_thread_count(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        enum { N = 9000 };
        static double bounds[N * 6];
        rng r = rng_seeded(77 + (uint64_t)dim);
        for (int64_t i = 0; i < N; i++) {
            double *b = &bounds[2 * dim * i];
            bool in_line = i % 3 == 0; /* a third along one thin line: a long row */
            for (int k = 0; k < dim; k++) {
                double span = k == 0 ? 600 : in_line ? 0.3 : 40;
                b[k] = rng_range(&r, -300, span);
                b[dim + k] = b[k] + rng_range(&r, 0.6, 0.4);
            }
        }
        prox_boxes boxes = prox_boxes_f64(bounds, N, dim);
        prox_pair_buffer first, again;
        prox_pair_buffer_init(&first, NULL);
        prox_pair_buffer_init(&again, NULL);
        for (int threads = 1; threads <= 3; threads++) {
            char context[64];
            snprintf(context, sizeof context, "long rows, %dD, %d threads", dim, threads);
            prox_broad *grid;
            int64_t pairs = grid_matches_brute_force(&boxes, threads, context, &grid);
            CHECK(pairs > N, context, "only %lld pairs: too few to test", (long long)pairs);
            prox_pair_buffer *unsorted = threads == 1 ? &first : &again;
            CHECK_STATUS(prox_broad_pairs(grid, prox_sink_unsorted(prox_sink_buffer(unsorted)),
                                          NULL),
                         PROX_OK, context);
            CHECK(same_pair_buffers(unsorted, &first), context,
                  "unsorted output differs from one thread's");
            prox_broad_destroy(grid);
        }
        prox_pair_buffer_free(&first);
        prox_pair_buffer_free(&again);
    }
}

/* Self pairs of `boxes` into `out` (sorted, or in the structure's order). */
static void pairs_of(prox_broad_algo algo, const prox_boxes *boxes, int threads, bool unsorted,
                     prox_pair_buffer *out)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = algo;
    desc.threads = threads;
    prox_broad *b = NULL;
    assert_int_equal(prox_broad_create(&desc, &b), PROX_OK);
    assert_int_equal(prox_broad_build(b, boxes), PROX_OK);
    prox_sink sink = prox_sink_buffer(out);
    assert_int_equal(prox_broad_pairs(b, unsorted ? prox_sink_unsorted(sink) : sink, NULL), PROX_OK);
    prox_broad_destroy(b);
}

/* Over 65,536 boxes the rows are placed by several threads (box_rows.c:
 * the first pass in blocks of the input, the groups shared out): the
 * pairs must equal sweep and prune's, and come in the same order for 1, 2
 * and 3 threads, sorted or not. Unit boxes in a cube, W3's density. */
static void rows_placed_by_threads_match_sap(void **state)
{
    (void)state;
    enum { N = 90001 }; /* odd: group sizes of every parity */
    double *bounds = malloc(sizeof(double) * 6 * N);
    assert_non_null(bounds);
    rng r = rng_seeded(4242);
    double side = cbrt(N * 4.19 / 0.1);
    for (int64_t i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) {
            bounds[6 * i + k] = rng_range(&r, -side / 2, side);
            bounds[6 * i + 3 + k] = bounds[6 * i + k] + 2.0;
        }
    prox_boxes boxes = prox_boxes_f64(bounds, N, 3);
    prox_pair_buffer want, got, first_unsorted, unsorted;
    prox_pair_buffer_init(&want, NULL);
    prox_pair_buffer_init(&got, NULL);
    prox_pair_buffer_init(&first_unsorted, NULL);
    prox_pair_buffer_init(&unsorted, NULL);
    pairs_of(PROX_BROAD_SAP, &boxes, 1, false, &want);
    assert_true(want.count > N / 2);
    for (int threads = 1; threads <= 3; threads++) {
        char context[64];
        snprintf(context, sizeof context, "rows on %d threads", threads);
        pairs_of(PROX_BROAD_GRID, &boxes, threads, false, &got);
        CHECK(same_pair_buffers(&got, &want), context, "%lld pairs, sweep and prune %lld",
              (long long)got.count, (long long)want.count);
        pairs_of(PROX_BROAD_GRID, &boxes, threads, true, threads == 1 ? &first_unsorted : &unsorted);
        CHECK(threads == 1 || same_pair_buffers(&unsorted, &first_unsorted), context,
              "unsorted output differs from one thread's");
    }
    prox_pair_buffer_free(&want);
    prox_pair_buffer_free(&got);
    prox_pair_buffer_free(&first_unsorted);
    prox_pair_buffer_free(&unsorted);
    free(bounds);
}

/* Past 2^21 pairs, fewer than the boxes, the sorted buffer is cut in place
 * into parts by i before the radix sort (pairs.c, sort_sparse_pairs): unit
 * boxes 0.75 apart along a line, each meeting the next alone, the ids
 * shuffled, so that every part holds pairs from everywhere. The closed
 * form is the pair of each box and the next along the line. */
static void many_sparse_pairs_sort_in_parts(void **state)
{
    (void)state;
    enum { N = 2300000 };
    double *bounds = malloc(sizeof(double) * 6 * N);
    uint32_t *id = malloc(sizeof(uint32_t) * N);   /* place -> box id */
    prox_pair *expected = malloc(sizeof(prox_pair) * (N - 1));
    assert_non_null(bounds && id && expected);
    rng r = rng_seeded(2026);
    for (uint32_t k = 0; k < N; k++)
        id[k] = k;
    for (uint32_t k = N - 1; k > 0; k--) { /* Fisher-Yates */
        uint32_t other = (uint32_t)(rng_next(&r) % (k + 1)), t = id[k];
        id[k] = id[other];
        id[other] = t;
    }
    for (uint32_t k = 0; k < N; k++) {
        double *b = &bounds[6 * id[k]];
        b[0] = 0.75 * k;
        b[1] = b[2] = 0;
        b[3] = b[0] + 1;
        b[4] = b[5] = 1;
    }
    for (uint32_t k = 0; k + 1 < N; k++) {
        uint32_t a = id[k], b = id[k + 1];
        expected[k] = (prox_pair){a < b ? a : b, a < b ? b : a};
    }
    qsort(expected, N - 1, sizeof *expected, compare_pairs);
    prox_boxes boxes = prox_boxes_f64(bounds, N, 3);
    for (int threads = 1; threads <= 2; threads++) {
        prox_pair_buffer out;
        prox_pair_buffer_init(&out, NULL);
        pairs_of(PROX_BROAD_GRID, &boxes, threads, false, &out);
        assert_int_equal(out.count, N - 1);
        assert_memory_equal(out.pairs, expected, sizeof *expected * (N - 1));
        prox_pair_buffer_free(&out);
    }
    free(bounds);
    free(id);
    free(expected);
}

static prox_status broad_pairs(void *broad, prox_sink sink, prox_stats *stats)
{
    return prox_broad_pairs(broad, sink, stats);
}

/* A query keeps the memory it grew (broad.c, pair_sink.h): the next query
 * allocates next to nothing, and every sink still gets what it got from a
 * fresh object, in any order of sinks (an unsorted buffer of one chunk
 * lends its storage to the chunk and must get it back), on 1 and 2 threads;
 * trim releases it all, and queries go on working. */
static void repeated_queries_reuse_their_memory(void **state)
{
    (void)state;
    enum { N = 20000 };
    static double bounds[N * 6];
    rng r = rng_seeded(91);
    for (int64_t i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) {
            bounds[6 * i + k] = rng_range(&r, 0, 40);
            bounds[6 * i + 3 + k] = bounds[6 * i + k] + 1;
        }
    prox_boxes boxes = prox_boxes_f64(bounds, N, 3);
    for (int threads = 1; threads <= 2; threads++)
        for (int a = 0; a < 2; a++) {
            char context[96];
            snprintf(context, sizeof context, "repeated queries, %s, %d threads",
                     a ? "hierarchical" : "grid", threads);
            int64_t allocated = 0;
            prox_broad_desc d = prox_default_broad_desc();
            d.algo = a ? PROX_BROAD_HIERARCHICAL : PROX_BROAD_GRID;
            d.threads = threads;
            d.allocator = counting_allocator(&allocated);
            prox_broad *b;
            CHECK_STATUS(prox_broad_create(&d, &b), PROX_OK, context);
            CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, context);
            prox_pair_buffer sorted, unsorted, again;
            prox_pair_buffer_init(&sorted, NULL);
            prox_pair_buffer_init(&unsorted, NULL);
            prox_pair_buffer_init(&again, NULL);
            prox_stats st;
            int64_t before = allocated;
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_buffer(&sorted), &st), PROX_OK, context);
            int64_t first = allocated - before;
            CHECK(sorted.count > N && st.kept_bytes > 0, context,
                  "%lld pairs, %lld bytes kept", (long long)sorted.count,
                  (long long)st.kept_bytes);
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_unsorted(prox_sink_buffer(&unsorted)),
                                          NULL),
                         PROX_OK, context);
            check_repeated_sorted_pairs(broad_pairs, b, &sorted, &again, &allocated, first, context);
            prox_lists lists;
            prox_lists_init(&lists, NULL);
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_lists(&lists), NULL), PROX_OK, context);
            CHECK(lists.offsets[N] == 2 * sorted.count, context, "lists hold %lld entries",
                  (long long)lists.offsets[N]);
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_unsorted(prox_sink_buffer(&again)), NULL),
                         PROX_OK, context);
            CHECK(same_pair_buffers(&unsorted, &again), context, "a repeated unsorted query differs");
            int64_t kept = st.kept_bytes; /* with the sorted delivery's entries, 4 bytes a pair */
            prox_broad_trim(b);
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK, context);
            CHECK(st.kept_bytes < kept - 4 * sorted.count && st.pairs == sorted.count, context,
                  "after trim: %lld bytes kept (%lld before), %lld pairs",
                  (long long)st.kept_bytes, (long long)kept, (long long)st.pairs);
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_buffer(&again), NULL), PROX_OK, context);
            CHECK(same_pair_buffers(&sorted, &again), context, "the sorted query after trim differs");
            prox_lists_free(&lists);
            prox_pair_buffer_free(&sorted);
            prox_pair_buffer_free(&unsorted);
            prox_pair_buffer_free(&again);
            prox_broad_destroy(b);
        }
}

/* Over 4096 queries against a structure over 1 MiB, the driver runs the
 * queries in space order (broad.c, space_order): every query kind must
 * still give what brute force gives (self pairs take the same path; brute
 * force over 40,000 boxes would be too slow for them here). */
static void space_ordered_queries_match_brute_force(void **state)
{
    (void)state;
    scene sc;
    max_edge_exp = 8; /* smaller boxes: fewer candidates, a faster test */
    scene_make(&sc, SCENE_MIXED, 2, false, 40000, 4500);
    max_edge_exp = 15;
    const config *picks[] = {&CONFIGS[0], &CONFIGS[3], &CONFIGS[6], &CONFIGS[9]};
    prox_broad *brute = create(&BRUTE, 2);
    prox_boxes boxes = box_view(&sc.boxes, false);
    CHECK_STATUS(prox_broad_build(brute, &boxes), PROX_OK, "space order: brute");
    for (int k = Q_BOXES; k < Q_KINDS; k++) {
        prox_pair_buffer want;
        prox_pair_buffer_init(&want, NULL);
        CHECK_STATUS(run_kind(brute, &sc, (query_kind)k, prox_sink_buffer(&want), NULL),
                     PROX_OK, "space order: brute");
        for (int c = 0; c < 4; c++) {
            char context[256];
            snprintf(context, sizeof context, "space order: %s, %s", picks[c]->name,
                     kind_names[k]);
            prox_broad *b = create(picks[c], 2);
            prox_pair_buffer got;
            prox_pair_buffer_init(&got, NULL);
            prox_stats stats;
            CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, context);
            CHECK_STATUS(run_kind(b, &sc, (query_kind)k, prox_sink_buffer(&got), &stats),
                         PROX_OK, context);
            CHECK(stats.bytes > (int64_t)40000 * 48 + (1 << 20), context,
                  "the structure holds %lld bytes: too small to run in space order",
                  (long long)stats.bytes);
            CHECK(got.count == want.count &&
                      (got.count == 0 || memcmp(got.pairs, want.pairs,
                                                (size_t)got.count * sizeof(prox_pair)) == 0),
                  context, "%lld pairs, brute force %lld", (long long)got.count,
                  (long long)want.count);
            prox_pair_buffer_free(&got);
            prox_broad_destroy(b);
        }
        prox_pair_buffer_free(&want);
    }
    prox_broad_destroy(brute);
    scene_free(&sc);
}

/* Identical buffers, lists and callback order for 1, 2 and 3 threads, with
 * enough queries for several chunks. */
static void results_do_not_depend_on_threads(void **state)
{
    (void)state;
    scene sc;
    max_edge_exp = 8; /* smaller boxes: fewer candidates, a faster test */
    scene_make(&sc, SCENE_MIXED, 2, false, 4200, 4100); /* >= 4096: several chunks */
    max_edge_exp = 15;
    const config *picks[] = {&BRUTE, &CONFIGS[0], &CONFIGS[3], &CONFIGS[6], &CONFIGS[9]};
    for (int c = 0; c < 5; c++)
        check_threads_agree(picks[c], &sc, (c == 0 ? 1 : Q_KINDS)); /* brute: its triangle split */
    scene_free(&sc);
}

static void callback_can_stop_early(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 3, false, 300, 100);
    for (int c = -1; c < CONFIG_COUNT; c++) {
        const config *cfg = c < 0 ? &BRUTE : &CONFIGS[c];
        prox_broad *b = create(cfg, 3);
        prox_boxes boxes = box_view(&sc.boxes, false);
        CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, cfg->name);
        check_callback_stops(b, &sc, cfg->name);
        prox_broad_destroy(b);
    }
    scene_free(&sc);
}

/* Rebuilds reuse the structure (timestamps) and forget the old boxes;
 * update rebuilds. */
static void rebuilds_and_updates_forget_old_boxes(void **state)
{
    (void)state;
    scene a, b;
    scene_make(&a, SCENE_MIXED, 2, false, 500, 50);
    scene_make(&b, SCENE_OFFSET, 2, false, 300, 50);
    for (int c = 0; c < CONFIG_COUNT; c++) {
        prox_broad *br = create(&CONFIGS[c], 2);
        result want;
        run_all_sinks(&BRUTE, &b, Q_PAIRS, 1, &want, "brute");
        prox_boxes va = box_view(&a.boxes, false), vb = box_view(&b.boxes, false);
        for (int round = 0; round < 3; round++) {
            CHECK_STATUS(prox_broad_build(br, &va), PROX_OK, CONFIGS[c].name);
            prox_stats st;
            CHECK_STATUS(round == 2 ? prox_broad_update(br, &vb, &st) : prox_broad_build(br, &vb),
                         PROX_OK, CONFIGS[c].name);
            if (round == 2)
                CHECK(st.rebuilt, CONFIGS[c].name, "update did not say it rebuilt");
            prox_pair_buffer buf;
            prox_pair_buffer_init(&buf, NULL);
            CHECK_STATUS(prox_broad_pairs(br, prox_sink_buffer(&buf), &st), PROX_OK,
                         CONFIGS[c].name);
            CHECK(buf.count == want.buffer.count &&
                      memcmp(buf.pairs, want.buffer.pairs,
                             (size_t)buf.count * sizeof(prox_pair)) == 0,
                  CONFIGS[c].name, "after a rebuild: %lld pairs, expected %lld",
                  (long long)buf.count, (long long)want.buffer.count);
            prox_pair_buffer_free(&buf);
        }
        result_free(&want);
        prox_broad_destroy(br);
    }
    scene_free(&a);
    scene_free(&b);
}

/* A box moved into a cell that the last query found empty: the same query
 * finds it, after a relocation and after a rebuild (nothing a structure
 * or a chunk's scratch keeps between queries may outlive the build). */
static void queries_after_a_move_see_the_moved_box(void **state)
{
    (void)state;
    /* eight unit boxes along the diagonal; the query sits between them */
    double bounds[8][4];
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++)
            bounds[i][k] = 100.0 * i + (k < 2 ? 0.0 : 1.0);
    const double query[4] = {150.25, 150.25, 150.5, 150.5};
    prox_boxes q = prox_boxes_f64(query, 1, 2);
    for (int c = 0; c < CONFIG_COUNT; c++) {
        for (int update = 0; update < 2; update++) {
            prox_broad *b = create(&CONFIGS[c], 1);
            prox_boxes v = prox_boxes_f64(&bounds[0][0], 8, 2);
            CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, CONFIGS[c].name);
            prox_stats st;
            CHECK_STATUS(prox_broad_query_boxes(b, &q, prox_sink_count(), &st), PROX_OK,
                         CONFIGS[c].name);
            CHECK(st.pairs == 0, CONFIGS[c].name, "%lld hits before the move",
                  (long long)st.pairs);
            double moved[8][4];
            memcpy(moved, bounds, sizeof moved);
            const double box[4] = {150, 150, 151, 151};
            memcpy(moved[3], box, sizeof box);
            prox_boxes w = prox_boxes_f64(&moved[0][0], 8, 2);
            CHECK_STATUS(update ? prox_broad_update(b, &w, NULL) : prox_broad_build(b, &w),
                         PROX_OK, CONFIGS[c].name);
            CHECK_STATUS(prox_broad_query_boxes(b, &q, prox_sink_count(), &st), PROX_OK,
                         CONFIGS[c].name);
            CHECK(st.pairs == 1, CONFIGS[c].name, "%s: %lld hits after the move, expected 1",
                  update ? "update" : "rebuild", (long long)st.pairs);
            prox_broad_destroy(b);
        }
    }
}

/* Hundreds of rebuilds of one object: the hierarchical table's timestamps
 * (section 4.3) wrap around and the table is cleared; no cell of an old
 * build may survive it. Two scenes alternate, and every build's pairs
 * must equal brute force's over the scene just built. */
static void many_rebuilds_wrap_the_timestamps(void **state)
{
    (void)state;
    scene sc[2];
    scene_make(&sc[0], SCENE_MIXED, 2, false, 200, 10);
    scene_make(&sc[1], SCENE_OFFSET, 2, false, 150, 10);
    int64_t want[2];
    for (int k = 0; k < 2; k++) {
        result r;
        run_all_sinks(&BRUTE, &sc[k], Q_PAIRS, 1, &r, "brute");
        want[k] = r.buffer.count;
        result_free(&r);
    }
    for (int k = 0; k < CONFIG_COUNT; k++) {
        const config *cfg = &CONFIGS[k];
        if (cfg->algo != PROX_BROAD_HIERARCHICAL)
            continue;
        prox_broad *b = create(cfg, 1);
        for (int round = 0; round < 300; round++) {
            prox_boxes v = box_view(&sc[round & 1].boxes, false);
            CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, cfg->name);
            prox_stats st;
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK, cfg->name);
            CHECK(st.pairs == want[round & 1], cfg->name, "build %d: %lld pairs, expected %lld",
                  round, (long long)st.pairs, (long long)want[round & 1]);
        }
        prox_broad_destroy(b);
    }
    scene_free(&sc[0]);
    scene_free(&sc[1]);
}

/* Updates: moves inside cells, moves across cells, boxes added and removed,
 * many moved, a box leaving the data's extent; after each, every query
 * kind equals brute force over the new boxes, and the hierarchical hash
 * relocates (not rebuilds) while few boxes changed. */

typedef enum move_kind { MOVE_SMALL, MOVE_FEW, MOVE_ADD, MOVE_REMOVE, MOVE_MANY, MOVE_OUT } move_kind;

/* Moves the boxes of sc as `kind` says; returns the new count. */
static int64_t move_boxes(scene *sc, move_kind kind, rng *r)
{
    int dim = sc->dim;
    int64_t n = sc->boxes.n;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < dim; k++) {
            lo[k] = fmin(lo[k], box_at(&sc->boxes, i)[k]);
            hi[k] = fmax(hi[k], box_at(&sc->boxes, i)[dim + k]);
        }
    for (int64_t i = 0; i < n; i++) {
        double *b = box_at(&sc->boxes, i);
        bool moves = kind == MOVE_MANY ? i % 2 == 0 : i % 20 == 3;
        double step = kind == MOVE_SMALL ? 1e-9 : rng_range(r, -300, 600);
        if (!moves || kind == MOVE_ADD || kind == MOVE_REMOVE)
            continue;
        bool inside = true; /* small moves stay inside the data's extent */
        for (int k = 0; k < dim; k++)
            inside = inside && b[k] + step > lo[k] && b[dim + k] + step < hi[k];
        if (!inside && kind != MOVE_MANY)
            continue;
        for (int k = 0; k < 2 * dim; k++)
            b[k] += step;
    }
    if (kind == MOVE_OUT)
        for (int k = 0; k < 2 * dim; k++)
            box_at(&sc->boxes, 0)[k] += 1e6;
    if (kind == MOVE_ADD)
        n += n / 20; /* the arrays were allocated large enough */
    if (kind == MOVE_REMOVE)
        n -= n / 10;
    sc->boxes.n = n;
    finish(sc->boxes.d, sc->boxes.f, 2 * dim * n, sc->f32);
    return n;
}

static void updates_match_brute_force(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        for (int c = 0; c < CONFIG_COUNT; c++) {
            max_edge_exp = 9;
            scene sc;
            scene_make(&sc, SCENE_MIXED, dim, dim == 3, 800, 100);
            box_set bigger;
            mixed_boxes(&bigger, &(rng){77}, dim, 900, -3e4, 65536); /* boxes to add */
            memcpy(bigger.d, sc.boxes.d, (size_t)(2 * dim * 800) * sizeof(double));
            free(sc.boxes.d);
            free(sc.boxes.f);
            sc.boxes.d = bigger.d;
            sc.boxes.f = bigger.f;
            finish(sc.boxes.d, sc.boxes.f, 2 * dim * 900, sc.f32);
            max_edge_exp = 15;
            prox_broad *b = create(&CONFIGS[c], 2);
            prox_boxes v = box_view(&sc.boxes, sc.f32);
            CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, CONFIGS[c].name);
            rng r = rng_seeded(5);
            static const char *moves[] = {"tiny moves", "a few moved", "boxes added",
                                          "boxes removed", "half moved", "one left the extent"};
            for (int m = MOVE_SMALL; m <= MOVE_OUT; m++) {
                char context[256];
                snprintf(context, sizeof context, "%s, %dD, update: %s", CONFIGS[c].name, dim,
                         moves[m]);
                move_boxes(&sc, (move_kind)m, &r);
                v = box_view(&sc.boxes, sc.f32);
                prox_stats st;
                CHECK_STATUS(prox_broad_update(b, &v, &st), PROX_OK, context);
                if (CONFIGS[c].algo == PROX_BROAD_HIERARCHICAL && CONFIGS[c].table_size != 1 &&
                    CONFIGS[c].max_class == 0) { /* (classes -2..4: oversize boxes) */
                    bool should_rebuild = m == MOVE_MANY || m == MOVE_OUT;
                    CHECK(st.rebuilt == should_rebuild, context, "rebuilt %d", st.rebuilt);
                    CHECK(m != MOVE_SMALL || st.relocated == 0, context, "relocated %lld",
                          (long long)st.relocated);
                    CHECK(m != MOVE_FEW || st.relocated > 0, context, "relocated %lld",
                          (long long)st.relocated);
                }
                check_against_fresh_brute(b, &sc, context);
            }
            prox_broad_destroy(b);
            scene_free(&sc);
        }
    }
}

/* W4's mix (Pouchol et al. 2009, Figure 4): a tenth of the boxes about 32 times the
 * edge of the rest, and short segments. */
static void split_scene(scene *sc, int64_t n, int64_t m)
{
    memset(sc, 0, sizeof *sc);
    sc->name = "a tenth of the boxes large";
    sc->dim = 2;
    rng r = rng_seeded(404);
    box_set_alloc(&sc->boxes, 2, n);
    for (int64_t i = 0; i < n; i++) {
        double *b = box_at(&sc->boxes, i), edge = i % 10 == 0 ? 1024 : 32;
        for (int k = 0; k < 2; k++) {
            double w = rng_range(&r, 0.5 * edge, edge);
            b[k] = rng_range(&r, 0, 8192 - w);
            b[2 + k] = b[k] + w;
        }
    }
    box_set_alloc(&sc->queries, 2, 0);
    box_set_alloc(&sc->from, 2, 0);
    box_set_alloc(&sc->to, 2, 0);
    point_set_alloc(&sc->starts, 2, m);
    point_set_alloc(&sc->ends, 2, m);
    for (int64_t q = 0; q < m; q++)
        for (int k = 0; k < 2; k++) {
            sc->starts.d[2 * q + k] = rng_range(&r, 0, 8192);
            sc->ends.d[2 * q + k] = sc->starts.d[2 * q + k] + rng_range(&r, -8, 16);
        }
}

/* The classes fitted to such data stop below the large boxes' class, which
 * are split over smaller cells (multilevel_hash.c, split_ceiling): more
 * cells, fewer candidates, the same hits; relocating a split box is an
 * update, not a rebuild. Boxes of one size are left at their class. */
static void largest_boxes_split_when_cheap(void **state)
{
    (void)state;
    scene sc;
    split_scene(&sc, 3000, 5000);
    prox_boxes v = box_view(&sc.boxes, false);
    int largest = 11; /* Eq. 2 for edges up to 1536 */
    for (int a = 0; a < 2; a++) {
        prox_broad_algo algo = a ? PROX_BROAD_HIERARCHICAL : PROX_BROAD_MULTILEVEL;
        config fitted = {"fitted", algo, 0, 0, false, 0, 0};
        config eq2 = {"Eq. 2 classes", algo, 0, 0, false, 4, largest};
        prox_stats got[2];
        for (int c = 0; c < 2; c++) {
            const config *cfg = c ? &eq2 : &fitted;
            prox_broad *b = create(cfg, 2);
            CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, cfg->name);
            check_against_fresh_brute(b, &sc, cfg->name);
            CHECK_STATUS(run_kind(b, &sc, Q_SEGMENTS, prox_sink_count(), &got[c]), PROX_OK,
                         cfg->name);
            prox_broad_destroy(b);
        }
        CHECK(got[0].cells > got[1].cells && 2 * got[0].candidates < got[1].candidates &&
                  got[0].pairs == got[1].pairs,
              "split", "%s: fitted %lld cells, %lld candidates; Eq. 2 %lld cells, %lld",
              a ? "hierarchical" : "multilevel", (long long)got[0].cells,
              (long long)got[0].candidates, (long long)got[1].cells,
              (long long)got[1].candidates);
    }
    prox_broad *b = create(&CONFIGS[6], 1);
    CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, "hierarchical");
    for (int64_t i = 0; i < sc.boxes.n; i += 10) /* the large boxes move a little */
        for (int k = 0; k < 4; k++)
            box_at(&sc.boxes, i)[k] += 0.25;
    prox_stats st;
    CHECK_STATUS(prox_broad_update(b, &v, &st), PROX_OK, "hierarchical update");
    CHECK(!st.rebuilt, "hierarchical update", "split boxes moved: rebuilt");
    check_against_fresh_brute(b, &sc, "hierarchical, split boxes moved");
    prox_broad_destroy(b);
    scene_free(&sc);

    box_set cubes; /* edges in (1, 2): class 1; split to class 0 they would
                    * take three times the cells; a tenth of them small
                    * (class -2), so that lower classes are there to split to */
    box_set_alloc(&cubes, 3, 2000);
    rng r = rng_seeded(405);
    for (int64_t i = 0; i < cubes.n; i++) {
        double *c = box_at(&cubes, i);
        for (int k = 0; k < 3; k++) {
            c[k] = rng_range(&r, 0, 100);
            c[3 + k] = c[k] + (i % 10 ? rng_range(&r, 1.1, 0.8) : rng_range(&r, 0.15, 0.1));
        }
    }
    v = box_view(&cubes, false);
    int64_t cells[2];
    for (int c = 0; c < 2; c++) {
        config cfg = {"cubes", PROX_BROAD_HIERARCHICAL, 0, 0, false, -2 * c, c};
        b = create(&cfg, 1);
        CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, "cubes");
        CHECK_STATUS(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK, "cubes");
        cells[c] = st.cells;
        prox_broad_destroy(b);
    }
    CHECK(cells[0] == cells[1], "cubes", "fitted %lld cells, classes -2..1 %lld",
          (long long)cells[0], (long long)cells[1]);
    free(cubes.d);
    free(cubes.f);
}

/* Allocation failures: with an allocator that fails after k allocations,
 * every call returns PROX_OK or PROX_ERR_NO_MEMORY, never crashes and
 * leaks nothing (the sanitizer build checks leaks); some k succeeds. */
static prox_status run_with_allocations(const config *c, const scene *sc, int64_t budget)
{
    failing_allocator f = {budget, 0};
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = c->algo;
    d.table_size = c->table_size;
    d.growable_table = c->growable;
    d.threads = 1;
    d.allocator = failing_allocator_hook(&f);
    prox_broad *b = NULL;
    prox_status st = prox_broad_create(&d, &b);
    prox_boxes v = box_view(&sc->boxes, false);
    prox_pair_buffer buf;
    prox_lists lists;
    prox_pair_buffer_init(&buf, NULL);
    prox_lists_init(&lists, NULL);
    if (!st) st = prox_broad_build(b, &v);
    if (!st) st = prox_broad_pairs(b, prox_sink_buffer(&buf), NULL);
    if (!st) st = run_kind(b, sc, Q_SEGMENTS, prox_sink_lists(&lists), NULL);
    if (!st) st = run_kind(b, sc, Q_SWEPT, prox_sink_buffer(&buf), NULL);
    if (!st) st = prox_broad_update(b, &v, NULL);
    prox_broad_destroy(b);
    prox_pair_buffer_free(&buf);
    prox_lists_free(&lists);
    return st;
}

static void allocation_failures_are_reported(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 2, false, 200, 50);
    for (int c = 0; c < CONFIG_COUNT; c++) {
        int64_t budget = 0;
        prox_status st;
        while ((st = run_with_allocations(&CONFIGS[c], &sc, budget)) == PROX_ERR_NO_MEMORY &&
               budget < 10000)
            budget++;
        CHECK(st == PROX_OK, CONFIGS[c].name, "status %d after %lld allocations: %s", (int)st,
              (long long)budget, prox_last_error());
    }
    scene_free(&sc);
}

/* Stats say something true: candidates >= pairs, cells > 0 once built. */
static void stats_are_consistent(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 3, false, 400, 200);
    for (int c = 0; c < CONFIG_COUNT; c++) {
        prox_broad *b = create(&CONFIGS[c], 1);
        prox_boxes boxes = box_view(&sc.boxes, false);
        CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, CONFIGS[c].name);
        for (int k = 0; k < Q_KINDS; k++) {
            prox_stats st;
            CHECK_STATUS(run_kind(b, &sc, (query_kind)k, prox_sink_count(), &st), PROX_OK,
                         CONFIGS[c].name);
            CHECK(st.candidates >= st.pairs && st.bytes > 0 && st.cells > 0, CONFIGS[c].name,
                  "%s: candidates %lld, pairs %lld, bytes %lld, cells %lld", kind_names[k],
                  (long long)st.candidates, (long long)st.pairs, (long long)st.bytes,
                  (long long)st.cells);
        }
        prox_broad_destroy(b);
    }
    scene_free(&sc);
}

/* The grid's rows keep float offsets: at scales where floats underflow
 * (1e-300: every bound rounds to 0 or the smallest subnormal, so the
 * doubles decide every pair) or where the extent is too large for them
 * (1e35: the per-cell engine takes over), and in between, self pairs equal
 * brute force's. */
static void similar_boxes_at_extreme_scales_match_brute_force(void **state)
{
    (void)state;
    const double scales[] = {1e-300, 1e-30, 1e20, 1e35, 1e300};
    for (int dim = 2; dim <= 3; dim++)
        for (int k = 0; k < 5; k++) {
            scene sc;
            scene_make(&sc, SCENE_SIMILAR, dim, false, 600, 10);
            for (int64_t i = 0; i < 600; i++)
                for (int c = 0; c < 2 * dim; c++)
                    box_at(&sc.boxes, i)[c] *= scales[k];
            prox_boxes boxes = box_view(&sc.boxes, false);
            char context[64];
            snprintf(context, sizeof context, "scale %g, %dD", scales[k], dim);
            CHECK(grid_matches_brute_force(&boxes, 2, context, NULL) > 0, context,
                  "no pairs: nothing tested");
            scene_free(&sc);
        }
}

/* The rows' sweep keys round mins down by up to 2^-15 of themselves
 * (box_rows.c, sort_short_row). Pairs that touch at the full reach along
 * the sweep axis, in neighbouring rows, with an extent (1.0003) that is no
 * multiple of the keys' resolution; and clusters of mins closer than that
 * resolution whose order the ids reverse. */
static void mins_at_the_keys_resolution_match_brute_force(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        enum { N = 3000 };
        static double bounds[N * 6];
        rng r = rng_seeded(91 + (uint64_t)dim);
        const double edge = 1.0003;
        for (int k = 0; k < dim; k++) { /* box 0 at the origin: offsets = coordinates */
            bounds[k] = 0.0;
            bounds[dim + k] = 1.0;
        }
        int64_t i = 1;
        for (int x = 20; x < 60 && i + 2 <= N / 2; x++) { /* p touching b at x */
            double *p = &bounds[2 * dim * i++], *q = &bounds[2 * dim * i++];
            p[0] = x;
            p[dim] = x + edge;
            q[dim] = x;
            q[0] = x - edge;
            for (int k = 1; k < dim; k++) {
                p[k] = 5.0 + 0.37 * (double)(x % 7);
                p[dim + k] = p[k] + edge;
                q[k] = p[k] + 0.9; /* the next row up, overlapping */
                q[dim + k] = q[k] + edge;
            }
        }
        for (; i < N; i++) { /* clusters: mins fall as ids rise */
            double *p = &bounds[2 * dim * i];
            double x = 20.0 + 3.0 * (double)((i / 30) % 10);
            for (int k = 0; k < dim; k++) {
                p[k] = k == 0 ? x - 1e-6 * (double)(i % 30) : rng_range(&r, 0, 12);
                p[dim + k] = p[k] + rng_range(&r, 0.5, 0.5);
            }
        }
        prox_boxes boxes = prox_boxes_f64(bounds, N, dim);
        char context[64];
        snprintf(context, sizeof context, "keys' resolution, %dD", dim);
        grid_matches_brute_force(&boxes, 1, context, NULL);
    }
}

/* borrow_boxes: the packed doubles are read in place (the structure holds
 * 48 bytes a box less), results equal the copying build's, and an update
 * after the caller changed its array rebuilds from the new boxes. */
static void borrowed_boxes_are_read_in_place(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_SIMILAR, 3, false, 3000, 10);
    prox_boxes boxes = box_view(&sc.boxes, false);
    const config *grid = &CONFIGS[0], *borrowing = &CONFIGS[CONFIG_COUNT - BORROWING];
    prox_broad *copying = create(grid, 2), *reading = create(borrowing, 2);
    for (int step = 0; step < 2; step++) {
        prox_pair_buffer want, got;
        prox_pair_buffer_init(&want, NULL);
        prox_pair_buffer_init(&got, NULL);
        prox_stats copied, read;
        CHECK_STATUS(prox_broad_build(copying, &boxes), PROX_OK, "borrow: copying build");
        if (step == 0)
            CHECK_STATUS(prox_broad_build(reading, &boxes), PROX_OK, "borrow: build");
        else
            CHECK_STATUS(prox_broad_update(reading, &boxes, NULL), PROX_OK, "borrow: update");
        CHECK_STATUS(prox_broad_pairs(copying, prox_sink_buffer(&want), &copied), PROX_OK,
                     "borrow: copying pairs");
        CHECK_STATUS(prox_broad_pairs(reading, prox_sink_buffer(&got), &read), PROX_OK,
                     "borrow: pairs");
        CHECK(got.count == want.count && want.count > 0 &&
                  memcmp(got.pairs, want.pairs, (size_t)got.count * sizeof(prox_pair)) == 0,
              "borrow", "step %d: %lld pairs, copying build %lld", step, (long long)got.count,
              (long long)want.count);
        CHECK(copied.bytes - read.bytes >= 3000 * 48, "borrow",
              "step %d: %lld bytes held, %lld when copying", step, (long long)read.bytes,
              (long long)copied.bytes);
        prox_pair_buffer_free(&want);
        prox_pair_buffer_free(&got);
        for (int64_t i = 0; i < 3000; i++) /* the caller moves its boxes */
            for (int k = 0; k < 6; k++)
                box_at(&sc.boxes, i)[k] += i % 7 == 0 ? 0.75 : 0.0;
    }
    /* boxes inside larger structs: not packed, so copied */
    typedef struct body {
        double lo[3], hi[3], mass;
    } body;
    body *bodies = malloc(3000 * sizeof *bodies);
    for (int64_t i = 0; i < 3000; i++) {
        memcpy(bodies[i].lo, box_at(&sc.boxes, i), 6 * sizeof(double));
        bodies[i].mass = 1e300;
    }
    prox_boxes in_structs = prox_boxes_strided(bodies[0].lo, bodies[0].hi, 3000, 3, PROX_F64,
                                               sizeof(body));
    prox_pair_buffer want, got;
    prox_pair_buffer_init(&want, NULL);
    prox_pair_buffer_init(&got, NULL);
    CHECK_STATUS(prox_broad_build(copying, &boxes), PROX_OK, "borrow: copying build");
    CHECK_STATUS(prox_broad_build(reading, &in_structs), PROX_OK, "borrow: structs");
    CHECK_STATUS(prox_broad_pairs(copying, prox_sink_buffer(&want), NULL), PROX_OK, "borrow");
    CHECK_STATUS(prox_broad_pairs(reading, prox_sink_buffer(&got), NULL), PROX_OK, "borrow");
    CHECK(got.count == want.count &&
              memcmp(got.pairs, want.pairs, (size_t)got.count * sizeof(prox_pair)) == 0,
          "borrow", "boxes in structs: %lld pairs, packed copy %lld", (long long)got.count,
          (long long)want.count);
    prox_pair_buffer_free(&want);
    prox_pair_buffer_free(&got);
    free(bodies);
    prox_broad_destroy(copying);
    prox_broad_destroy(reading);
    scene_free(&sc);
}

int main(void)
{
    create_hook = borrow_hook;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mixed_sizes_match_brute_force),
        cmocka_unit_test(offsets_of_1e9_match_brute_force),
        cmocka_unit_test(empty_and_single_match_brute_force),
        cmocka_unit_test(identical_boxes_match_brute_force),
        cmocka_unit_test(similar_sizes_match_brute_force),
        cmocka_unit_test(long_rows_match_brute_force_for_every_thread_count),
        cmocka_unit_test(rows_placed_by_threads_match_sap),
        cmocka_unit_test(many_sparse_pairs_sort_in_parts),
        cmocka_unit_test(repeated_queries_reuse_their_memory),
        cmocka_unit_test(borrowed_boxes_are_read_in_place),
        cmocka_unit_test(similar_boxes_at_extreme_scales_match_brute_force),
        cmocka_unit_test(mins_at_the_keys_resolution_match_brute_force),
        cmocka_unit_test(space_ordered_queries_match_brute_force),
        cmocka_unit_test(results_do_not_depend_on_threads),
        cmocka_unit_test(callback_can_stop_early),
        cmocka_unit_test(rebuilds_and_updates_forget_old_boxes),
        cmocka_unit_test(many_rebuilds_wrap_the_timestamps),
        cmocka_unit_test(stats_are_consistent),
        cmocka_unit_test(updates_match_brute_force),
        cmocka_unit_test(largest_boxes_split_when_cheap),
        cmocka_unit_test(queries_after_a_move_see_the_moved_box),
        cmocka_unit_test(allocation_failures_are_reported),
    };
    return cmocka_run_group_tests_name("broad", tests, NULL, NULL);
}
