/* test_grid_fill.c: sorted buffers and full lists written in place
 * (src/grid_fill.c, prox_grid_desc.rows = PROX_ROWS_IN_PLACE) against
 * brute force, where the class tests' small inputs do not reach: several
 * chunks (threads, n >= 4096) whose boundaries set entries aside, rows
 * finished late across periodic wraps, dense clusters, and the fallback to
 * staged rows past the limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"
#include "points/grid_private.h"
#include "inputs.h"

#define POINTS 12000

typedef struct scene {
    cloud points;
    double period[3]; /* all 0: open */
    prox_pair_buffer want_pairs;
    prox_lists want_lists;
} scene;

/* Uniform points over a box of side `size`, and with `cluster` of them
 * packed into a box of side 2 (hundreds of neighbours each); r = 1. */
static void scene_make(scene *s, int dim, bool periodic, int64_t cluster, uint64_t seed)
{
    rng r = rng_seeded(seed);
    double size = dim == 3 ? 20.0 : 60.0; /* about 6 and 10 neighbours a point */
    cloud_uniform(&s->points, dim, POINTS, 0.0, size, &r);
    for (int64_t i = 0; i < cluster; i++)
        for (int k = 0; k < dim; k++)
            cloud_point(&s->points, i)[k] = 5.0 + 2.0 * rng_uniform(&r);
    for (int k = 0; k < 3; k++)
        s->period[k] = periodic && k < dim ? size : 0.0;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 1.0;
    for (int k = 0; k < 3; k++)
        desc.period[k] = s->period[k];
    prox_points view = prox_points_f64(s->points.xyz, s->points.count, dim);
    prox_pair_buffer_init(&s->want_pairs, NULL);
    prox_lists_init(&s->want_lists, NULL);
    CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_BRUTE, prox_sink_buffer(&s->want_pairs), NULL),
                 PROX_OK, "brute-force pairs");
    CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_BRUTE, prox_sink_lists(&s->want_lists), NULL),
                 PROX_OK, "brute-force lists");
}

static void scene_free(scene *s)
{
    cloud_free(&s->points);
    prox_pair_buffer_free(&s->want_pairs);
    prox_lists_free(&s->want_lists);
}

static prox_grid *grid_of(const scene *s, prox_rows rows, prox_coords coords, int threads,
                          const char *context)
{
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 1.0;
    desc.rows = rows;
    desc.coords = coords;
    desc.threads = threads;
    for (int k = 0; k < 3; k++)
        desc.period[k] = s->period[k];
    prox_grid *g = NULL;
    CHECK_STATUS(prox_grid_create(&desc, &g), PROX_OK, context);
    prox_points view = prox_points_f64(s->points.xyz, s->points.count, s->points.dim);
    CHECK_STATUS(prox_grid_build(g, &view), PROX_OK, context);
    return g;
}

static int compare_indices(const void *a, const void *b)
{
    prox_index x = *(const prox_index *)a, y = *(const prox_index *)b;
    return (x > y) - (x < y);
}

/* The sorted buffer, the lists and the unsorted lists of grid g must be
 * brute force's; returns the buffer query's stats. */
static prox_stats expect_brute_force(prox_grid *g, const scene *s, const char *context)
{
    prox_pair_buffer pairs;
    prox_lists lists;
    prox_pair_buffer_init(&pairs, NULL);
    prox_lists_init(&lists, NULL);
    prox_stats stats;
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&pairs), &stats), PROX_OK, context);
    CHECK(same_pair_buffers(&pairs, &s->want_pairs), context,
          "sorted buffer: %lld pairs, brute force %lld", (long long)pairs.count,
          (long long)s->want_pairs.count);
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&lists), NULL), PROX_OK, context);
    CHECK(same_lists(&lists, &s->want_lists), context, "lists differ from brute force");
    CHECK_STATUS(prox_grid_pairs(g, prox_sink_unsorted(prox_sink_lists(&lists)), NULL), PROX_OK,
                 context);
    for (int64_t r = 0; r < lists.rows; r++) /* staged rows come unsorted */
        qsort(lists.indices + lists.offsets[r], (size_t)(lists.offsets[r + 1] - lists.offsets[r]),
              sizeof *lists.indices, compare_indices);
    CHECK(same_lists(&lists, &s->want_lists), context, "unsorted lists differ from brute force");
    prox_pair_buffer_free(&pairs);
    prox_lists_free(&lists);
    return stats;
}

static void in_place_rows_match_brute_force_across_chunks(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++)
        for (int periodic = 0; periodic <= 1; periodic++)
            for (int clustered = 0; clustered <= 1; clustered++) {
                scene s;
                scene_make(&s, dim, periodic, clustered ? 1000 : 0, 40 + (uint64_t)dim);
                for (int threads = 1; threads <= 3; threads++)
                    for (int fixed = 0; fixed <= 1; fixed++) {
                        char context[160];
                        snprintf(context, sizeof context,
                                 "in place: dim=%d periodic=%d clustered=%d threads=%d %s", dim,
                                 periodic, clustered, threads, fixed ? "fixed" : "double");
                        prox_grid *g =
                            grid_of(&s, PROX_ROWS_IN_PLACE,
                                    fixed ? PROX_COORDS_FIXED : PROX_COORDS_DOUBLE, threads, context);
                        expect_brute_force(g, &s, context);
                        prox_grid_destroy(g);
                    }
                scene_free(&s);
            }
}

/* Past either limit the rows are staged instead (the full stencil's
 * candidates tell), with the same results. */
static void in_place_rows_fall_back_to_staged_past_the_limits(void **state)
{
    (void)state;
    scene s;
    scene_make(&s, 3, true, 1000, 7);
    const struct {
        uint32_t downs;
        int64_t entries;
    } limits[] = {{0, 0}, {2, 0}, {0, 1000}};
    int64_t half_candidates = 0;
    for (int k = 0; k < 3; k++)
        for (int threads = 1; threads <= 2; threads++) {
            char context[120];
            snprintf(context, sizeof context, "limits: downs %u entries %lld, threads %d",
                     limits[k].downs, (long long)limits[k].entries, threads);
            prox_grid *g = grid_of(&s, PROX_ROWS_IN_PLACE, PROX_COORDS_FIXED, threads, context);
            prox_grid_set_fill_limits(g, limits[k].downs, limits[k].entries);
            prox_stats stats = expect_brute_force(g, &s, context);
            if (k == 0)
                half_candidates = stats.candidates;
            else
                CHECK(stats.candidates > half_candidates, context,
                      "%lld candidates: the rows were not staged (in place: %lld)",
                      (long long)stats.candidates, (long long)half_candidates);
            prox_grid_destroy(g);
        }
    scene_free(&s);
}

/* What the query keeps: 6 bytes and a bit a point plus small rings in
 * place (2 and a bit for lists), against the staged rows' 4 bytes an
 * entry. */
static void in_place_rows_keep_little_memory(void **state)
{
    (void)state;
    scene s;
    scene_make(&s, 3, false, 1000, 9);
    prox_rows modes[] = {PROX_ROWS_STAGED, PROX_ROWS_IN_PLACE};
    int64_t kept[2], kept_lists[2];
    for (int m = 0; m < 2; m++) {
        prox_grid *g = grid_of(&s, modes[m], PROX_COORDS_FIXED, 1, "memory");
        prox_pair_buffer pairs;
        prox_pair_buffer_init(&pairs, NULL);
        prox_stats stats;
        CHECK_STATUS(prox_grid_pairs(g, prox_sink_buffer(&pairs), &stats), PROX_OK, "memory");
        kept[m] = stats.kept_bytes;
        prox_pair_buffer_free(&pairs);
        prox_grid_destroy(g);
        g = grid_of(&s, modes[m], PROX_COORDS_FIXED, 1, "memory, lists"); /* fresh: no scratch */
        prox_lists lists;
        prox_lists_init(&lists, NULL);
        CHECK_STATUS(prox_grid_pairs(g, prox_sink_lists(&lists), &stats), PROX_OK, "memory");
        kept_lists[m] = stats.kept_bytes;
        prox_lists_free(&lists);
        prox_grid_destroy(g);
    }
    int64_t entries = s.want_pairs.count;
    CHECK(kept[0] >= 4 * entries, "memory", "staged rows kept %lld bytes for %lld entries",
          (long long)kept[0], (long long)entries);
    CHECK(kept[1] < kept[0] / 2 && kept[1] < 8 * (int64_t)POINTS + 512 * 1024, "memory",
          "in place kept %lld bytes (staged %lld) for %d points", (long long)kept[1],
          (long long)kept[0], POINTS);
    /* lists: their lengths go to their own offsets (2 bytes and a bit a
     * point); the cluster's many downs fill the ring here */
    CHECK(kept_lists[0] >= 8 * entries, "memory, lists", "staged lists kept %lld bytes",
          (long long)kept_lists[0]);
    CHECK(kept_lists[1] < kept_lists[0] / 2 && kept_lists[1] < 8 * (int64_t)POINTS + 1024 * 1024,
          "memory, lists", "in place kept %lld bytes for lists (staged %lld) for %d points",
          (long long)kept_lists[1], (long long)kept_lists[0], POINTS);
    scene_free(&s);
}

/* A skin list builds its candidates with the desc's rows: in place, over
 * moving points, against brute force after each step (rebuilt or not). */
static void skin_list_with_rows_in_place_matches_brute_force(void **state)
{
    (void)state;
    scene s;
    scene_make(&s, 3, true, 0, 11);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 1.0;
    desc.rows = PROX_ROWS_IN_PLACE;
    desc.threads = 2;
    for (int k = 0; k < 3; k++)
        desc.period[k] = s.period[k];
    prox_skin_list *list = NULL;
    CHECK_STATUS(prox_skin_list_create(&desc, 0.3, &list), PROX_OK, "skin list");
    rng r = rng_seeded(12);
    prox_pair_buffer got, want;
    prox_pair_buffer_init(&got, NULL);
    prox_pair_buffer_init(&want, NULL);
    int rebuilds = 0;
    for (int step = 0; step < 6; step++) {
        char context[64];
        snprintf(context, sizeof context, "skin list, rows in place, step %d", step);
        prox_points view = prox_points_f64(s.points.xyz, s.points.count, 3);
        prox_stats stats;
        CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_buffer(&got), &stats), PROX_OK,
                     context);
        rebuilds += stats.rebuilt;
        CHECK_STATUS(prox_pairs(&view, &desc, PROX_ALGO_BRUTE, prox_sink_buffer(&want), NULL),
                     PROX_OK, context);
        CHECK(same_pair_buffers(&got, &want), context, "%lld pairs, brute force %lld",
              (long long)got.count, (long long)want.count);
        for (int64_t i = 0; i < s.points.count; i++) /* moves of up to 0.1 per axis */
            for (int k = 0; k < 3; k++)
                cloud_point(&s.points, i)[k] += 0.2 * (rng_uniform(&r) - 0.5);
    }
    CHECK(rebuilds >= 2, "skin list", "%d rebuilds in 6 steps: the in-place rebuild ran once",
          rebuilds);
    prox_skin_list_destroy(list);
    prox_pair_buffer_free(&got);
    prox_pair_buffer_free(&want);
    scene_free(&s);
}

static void unknown_rows_mode_is_rejected(void **state)
{
    (void)state;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 1.0;
    desc.rows = (prox_rows)7;
    prox_grid *g = NULL;
    CHECK_STATUS(prox_grid_create(&desc, &g), PROX_ERR_INVALID, "rows = 7");
    CHECK(g == NULL, "rows = 7", "a grid was made");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_place_rows_match_brute_force_across_chunks),
        cmocka_unit_test(in_place_rows_fall_back_to_staged_past_the_limits),
        cmocka_unit_test(in_place_rows_keep_little_memory),
        cmocka_unit_test(skin_list_with_rows_in_place_matches_brute_force),
        cmocka_unit_test(unknown_rows_mode_is_rejected),
    };
    return cmocka_run_group_tests_name("grid_fill", tests, NULL, NULL);
}
