/* test_update.c: moving points. prox_grid_update after random walks, big
 * jumps and a far escape; prox_skin_list over small motions. After every
 * step the pairs must equal the oracle's for the current positions. */
#include "check.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- points that move -------------------------------------------------- */

typedef struct moving {
    cloud truth;     /* positions as the test moves them, in double */
    cloud seen;      /* what the library sees (truth rounded to float for f32) */
    float *as_float; /* the f32 array given to the library */
    prox_scalar scalar;
} moving;

static double step_value(double x)
{
    return nearbyint(x * 0x1.0p30) * 0x1.0p-30; /* dyadic: wraps exactly */
}

static void moving_init(moving *m, int dim, int64_t count, double box, prox_scalar scalar,
                        rng *r)
{
    cloud_uniform(&m->truth, dim, count, 0.0, box, r);
    m->scalar = scalar;
    m->seen.xyz = NULL;
    m->as_float = NULL;
}

/* Refreshes `seen` from `truth` and returns the view of it. */
static prox_points moving_view(moving *m)
{
    cloud_free(&m->seen);
    free(m->as_float);
    m->as_float = NULL;
    cloud_copy(&m->seen, &m->truth);
    if (m->scalar == PROX_F32) {
        m->as_float = cloud_round_to_float(&m->seen);
        return prox_points_f32(m->as_float, m->seen.count, m->seen.dim);
    }
    return prox_points_f64(m->seen.xyz, m->seen.count, m->seen.dim);
}

static void moving_free(moving *m)
{
    cloud_free(&m->truth);
    cloud_free(&m->seen);
    free(m->as_float);
}

/* Points 0 .. PINNED-1 never jiggle nor teleport: two of them hold the
 * corners of the box (so that small steps inside it never leave the cell
 * range of an open grid, which would force a documented rebuild), and
 * FAR_POINT is the one sent far away. */
enum { PINNED = 8, FAR_POINT = 7 };

static void pin_corners(moving *m, double box)
{
    for (int k = 0; k < m->truth.dim; k++) {
        cloud_point(&m->truth, 0)[k] = 0.0;
        cloud_point(&m->truth, 1)[k] = box - 0.0625;
    }
}

/* Every coordinate of the free points moves by at most `amplitude`; with
 * keep_inside they stay within [1/8, box - 1/8]. */
static void jiggle(moving *m, double amplitude, double box, bool keep_inside, rng *r)
{
    for (int64_t i = PINNED * m->truth.dim; i < m->truth.count * m->truth.dim; i++) {
        double x = m->truth.xyz[i] + step_value(rng_range(r, -amplitude, 2 * amplitude));
        if (keep_inside)
            x = x < 0.125 ? 0.125 : x > box - 0.125 ? box - 0.125 : x;
        m->truth.xyz[i] = x;
    }
}

static void teleport(moving *m, int64_t how_many, double box, rng *r)
{
    for (int64_t n = 0; n < how_many; n++) {
        double *p = cloud_point(&m->truth, PINNED + rng_below(r, m->truth.count - PINNED));
        for (int k = 0; k < m->truth.dim; k++)
            p[k] = step_value(rng_range(r, 0.0, box));
    }
}

/* ---- comparisons ------------------------------------------------------- */

static void expect_grid_pairs(prox_grid *grid, const moving *m, double radius,
                              const double *period, const char *context)
{
    pair_list want;
    oracle_pairs(&m->seen, radius, period, &want);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    CHECK_STATUS(prox_grid_pairs(grid, prox_sink_buffer(&buffer), NULL), PROX_OK, context);
    subject s = {context, &m->seen, &m->seen, radius, period};
    expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
    prox_pair_buffer_free(&buffer);
    pair_list_free(&want);
}

static void expect_grid_query(prox_grid *grid, const moving *m, const cloud *queries,
                              double radius, const double *period, const char *context)
{
    pair_list want;
    oracle_query_pairs(&m->seen, queries, radius, period, &want);
    prox_points view = prox_points_f64(queries->xyz, queries->count, queries->dim);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    CHECK_STATUS(prox_grid_query(grid, &view, prox_sink_buffer(&buffer), NULL), PROX_OK,
                 context);
    subject s = {context, queries, &m->seen, radius, period};
    expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
    prox_pair_buffer_free(&buffer);
    pair_list_free(&want);
}

/* ---- prox_grid_update -------------------------------------------------- */

typedef struct walk_params {
    const algo_config *config;
    int dim;
    prox_scalar scalar;
    bool periodic;
    double box; /* side of the box the points walk in; 0: 16 in 3D, 40 in 2D */
} walk_params;

enum { WALK_POINTS = 2000, WALK_STEPS = 50, FAR_STEP = 25 };

typedef enum step_kind { STEP_SMALL, STEP_BIG_JUMPS, STEP_FAR_AWAY } step_kind;

static step_kind kind_of_step(int step)
{
    if (step == FAR_STEP)
        return STEP_FAR_AWAY;
    return step % 10 == 5 ? STEP_BIG_JUMPS : STEP_SMALL;
}

static void take_step(moving *m, step_kind kind, double box, bool periodic, rng *r)
{
    if (kind == STEP_SMALL) {
        jiggle(m, 0.03, box, !periodic, r);
    } else if (kind == STEP_BIG_JUMPS) {
        teleport(m, 20, box, r);
    } else {
        double *far = cloud_point(&m->truth, FAR_POINT);
        far[0] = 1000.0 * box + 0.125; /* far outside the old bounding box */
        far[1] = -37.0 * box;
    }
}

static void walk_context(char *out, size_t size, const walk_params *w, int step, step_kind kind)
{
    static const char *const kinds[] = {"small steps", "20 big jumps", "one point far away"};
    snprintf(out, size, "prox_grid_update walk: algo=%s dim=%d scalar=%s %s N=%d step %d (%s)",
             w->config->name, w->dim, scalar_name(w->scalar), w->periodic ? "periodic" : "open",
             WALK_POINTS, step, kinds[kind]);
}

static void expect_partial_relocation(const prox_stats *stats, const char *context)
{
    CHECK(stats->relocated > 0 && stats->relocated < WALK_POINTS, context,
          "stats.relocated = %" PRId64 " on a small step of %d points (rebuilt=%d)",
          stats->relocated, WALK_POINTS, (int)stats->rebuilt);
}

static void run_walk(const walk_params *w)
{
    double box = w->box > 0 ? w->box : w->dim == 3 ? 16.0 : 40.0, radius = 1.0;
    double period[3] = {0, 0, 0};
    for (int k = 0; k < w->dim && w->periodic; k++)
        period[k] = box;
    rng r = rng_seeded(0xA11CE + (uint64_t)w->dim);
    moving m;
    moving_init(&m, w->dim, WALK_POINTS, box, w->scalar, &r);
    pin_corners(&m, box);
    prox_grid_desc desc = config_desc(w->config, radius, period, 2);
    prox_grid *grid = NULL;
    char context[300];
    walk_context(context, sizeof context, w, 0, STEP_SMALL);
    CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, context);
    prox_points view = moving_view(&m);
    CHECK_STATUS(prox_grid_build(grid, &view), PROX_OK, context);
    expect_grid_pairs(grid, &m, radius, period, context);
    for (int step = 1; step <= WALK_STEPS; step++) {
        step_kind kind = kind_of_step(step);
        walk_context(context, sizeof context, w, step, kind);
        take_step(&m, kind, box, w->periodic, &r);
        view = moving_view(&m);
        prox_stats stats;
        memset(&stats, 0, sizeof stats);
        CHECK_STATUS(prox_grid_update(grid, &view, &stats), PROX_OK, context);
        expect_grid_pairs(grid, &m, radius, period, context);
        if (kind == STEP_SMALL && stats.coords == PROX_COORDS_FIXED) /* reads the new view */
            CHECK(stats.rebuilt, context, "a grid of fixed-point coordinates updated in place");
        else if (kind == STEP_SMALL)
            expect_partial_relocation(&stats, context);
        if (w->box > 0 && step < FAR_STEP) /* the sparse walks: still linear keys */
            CHECK(stats.keys == PROX_KEYS_LINEAR, context, "stats.keys = %d, linear expected",
                  (int)stats.keys);
    }
    cloud queries;
    cloud_uniform(&queries, w->dim, 300, -2.0, box + 4.0, &r);
    expect_grid_query(grid, &m, &queries, radius, period, context);
    cloud_free(&queries);
    prox_grid_destroy(grid);
    moving_free(&m);
}

static void grid_update_follows_random_walk_3d(void **state)
{
    (void)state;
    for (int c = 0; c < GRID_CONFIG_COUNT; c++) {
        for (int periodic = 0; periodic <= 1; periodic++) {
            walk_params w = {GRID_CONFIGS[c], 3, PROX_F64, periodic, 0.0};
            run_walk(&w);
        }
    }
}

/* A box of about 100 cells per point: linear keys keep occupancy bits and
 * ranks instead of a table entry per cell (grid.c, index_sparse_runs),
 * rebuilt by every update. */
static void grid_update_follows_random_walk_sparse(void **state)
{
    (void)state;
    const algo_config *linear[] = {&CONFIG_LINEAR, &CONFIG_LINEAR_DIVISIONS_2};
    for (int c = 0; c < 2; c++)
        for (int periodic = 0; periodic <= 1; periodic++) {
            walk_params w3 = {linear[c], 3, PROX_F64, periodic, 60.0};
            run_walk(&w3);
            walk_params w2 = {linear[c], 2, PROX_F64, periodic, 450.0};
            run_walk(&w2);
        }
}

static void grid_update_follows_random_walk_2d_f32(void **state)
{
    (void)state;
    for (int c = 0; c < 2; c++) {
        for (int periodic = 0; periodic <= 1; periodic++) {
            walk_params w = {GRID_CONFIGS[c], 2, PROX_F32, periodic, 0.0};
            run_walk(&w);
        }
    }
}

/* ---- prox_skin_list ---------------------------------------------------- */

typedef struct skin_params {
    const algo_config *config;
    prox_scalar scalar;
    bool periodic;
} skin_params;

enum { SKIN_POINTS = 2000, SKIN_STEPS = 50 };
#define SKIN 0.3

/* Largest distance a point moved since the positions `anchor`. */
static double largest_displacement(const cloud *now, const cloud *anchor)
{
    double largest = 0.0;
    for (int64_t i = 0; i < now->count; i++) {
        double sum = 0.0;
        for (int k = 0; k < now->dim; k++) {
            double d = cloud_point(now, i)[k] - cloud_point(anchor, i)[k];
            sum += d * d;
        }
        if (sqrt(sum) > largest)
            largest = sqrt(sum);
    }
    return largest;
}

/* A few planted moves beyond skin / 2 among steps of at most 0.007. */
static void skin_step(moving *m, int step, rng *r)
{
    jiggle(m, 0.004, 16.0, false, r);
    if (step == 20)
        cloud_point(&m->truth, 11)[0] += 0.25;
    if (step == 35)
        cloud_point(&m->truth, 12)[1] -= 0.5;
    if (step == 42)
        cloud_point(&m->truth, 13)[2] += 5.0;
}

static void expect_skin_pairs(prox_skin_list *list, moving *m, prox_stats *stats,
                              double radius, const double *period, const char *context)
{
    prox_points view = moving_view(m);
    pair_list want;
    oracle_pairs(&m->seen, radius, period, &want);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    memset(stats, 0, sizeof *stats);
    CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_buffer(&buffer), stats), PROX_OK,
                 context);
    subject s = {context, &m->seen, &m->seen, radius, period};
    expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
    CHECK(stats->pairs == want.count, context, "stats.pairs = %" PRId64 ", expected %" PRId64,
          stats->pairs, want.count);
    prox_pair_buffer_free(&buffer);
    pair_list_free(&want);
}

/* Rebuilt exactly when some point moved more than skin / 2 since the last
 * rebuild (a relative margin of 1e-9 leaves rounding out of it). */
static void expect_rebuild_rule(bool rebuilt, double moved, const char *context)
{
    double half = SKIN / 2;
    if (moved > half * (1 + 1e-9))
        CHECK(rebuilt, context, "not rebuilt although a point moved %.6g > skin/2 = %.6g",
              moved, half);
    if (moved < half * (1 - 1e-9))
        CHECK(!rebuilt, context, "rebuilt although no point moved more than %.6g <= skin/2 = %.6g",
              moved, half);
}

static void run_skin_list(const skin_params *p)
{
    double box = 16.0, radius = 1.0, period[3] = {0, 0, 0};
    for (int k = 0; k < 3 && p->periodic; k++)
        period[k] = box;
    rng r = rng_seeded(0x5C1A);
    moving m;
    moving_init(&m, 3, SKIN_POINTS, box, p->scalar, &r);
    prox_grid_desc desc = config_desc(p->config, radius, period, 2);
    prox_skin_list *list = NULL;
    char context[300];
    snprintf(context, sizeof context, "prox_skin_list: algo=%s scalar=%s %s skin=%g step 0",
             p->config->name, scalar_name(p->scalar), p->periodic ? "periodic" : "open", SKIN);
    CHECK_STATUS(prox_skin_list_create(&desc, SKIN, &list), PROX_OK, context);
    prox_stats stats;
    expect_skin_pairs(list, &m, &stats, radius, period, context);
    CHECK(stats.rebuilt, context, "the first call must build the list");
    cloud anchor; /* what the library saw at the last rebuild */
    cloud_copy(&anchor, &m.seen);
    int rebuilds = 0;
    for (int step = 1; step <= SKIN_STEPS; step++) {
        snprintf(context, sizeof context, "prox_skin_list: algo=%s scalar=%s %s skin=%g step %d",
                 p->config->name, scalar_name(p->scalar), p->periodic ? "periodic" : "open",
                 SKIN, step);
        skin_step(&m, step, &r);
        expect_skin_pairs(list, &m, &stats, radius, period, context);
        expect_rebuild_rule(stats.rebuilt, largest_displacement(&m.seen, &anchor), context);
        if (stats.rebuilt) {
            rebuilds++;
            memcpy(anchor.xyz, m.seen.xyz, (size_t)(anchor.count * 3) * sizeof(double));
        }
    }
    CHECK(rebuilds >= 3 && rebuilds <= 6, context, "%d rebuilds in %d steps", rebuilds,
          SKIN_STEPS);
    cloud_free(&anchor);
    prox_skin_list_destroy(list);
    moving_free(&m);
}

static void skin_list_rebuilds_only_beyond_half_skin(void **state)
{
    (void)state;
    static const skin_params runs[] = {
        {&CONFIG_MORTON, PROX_F64, false},
        {&CONFIG_HASH, PROX_F64, false},
        {&CONFIG_DIVISIONS_2, PROX_F32, false},
        {&CONFIG_MORTON, PROX_F64, true},
        {&CONFIG_HASH, PROX_F32, true},
    };
    for (size_t n = 0; n < sizeof runs / sizeof runs[0]; n++)
        run_skin_list(&runs[n]);
}

/* Every sink of a skin list that did not rebuild still gives the exact
 * result. */
static void skin_list_serves_every_sink(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_CLUSTERED, 3, PROX_F64, PERIODIC_ALL);
    expectation e;
    expectation_compute(&e, &tc);
    prox_grid_desc desc = config_desc(&CONFIG_MORTON, tc.radius, tc.period, 2);
    prox_skin_list *list = NULL;
    const char *context = "prox_skin_list, clustered 3D periodic, all sinks on a kept list";
    CHECK_STATUS(prox_skin_list_create(&desc, 0.05, &list), PROX_OK, context);
    prox_points view = test_case_points(&tc);
    subject s = {context, &tc.points, &tc.points, tc.radius, tc.period};
    for (int call = 0; call < 2; call++) {
        prox_pair_buffer buffer;
        prox_lists lists;
        prox_stats stats;
        collector c;
        prox_pair_buffer_init(&buffer, NULL);
        prox_lists_init(&lists, NULL);
        collector_init(&c, 0);
        CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_buffer(&buffer), &stats),
                     PROX_OK, context);
        expect_same_pairs(&s, &e.pairs, buffer.pairs, buffer.count);
        CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_lists(&lists), &stats),
                     PROX_OK, context);
        CHECK(!stats.rebuilt, context, "rebuilt without any motion");
        expect_same_lists(&s, &e.lists, &lists);
        CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_count(), &stats), PROX_OK,
                     context);
        CHECK(stats.pairs == e.pairs.count, context, "count %" PRId64, stats.pairs);
        CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_callback(collector_fn, &c),
                                          &stats),
                     PROX_OK, context);
        pair_list_sort(&c.got);
        expect_same_pairs(&s, &e.pairs, c.got.items, c.got.count);
        collector_free(&c);
        prox_lists_free(&lists);
        prox_pair_buffer_free(&buffer);
    }
    prox_skin_list_destroy(list);
    expectation_free(&e);
    test_case_free(&tc);
}

/* Handing a skin list a different number of points: either a rebuild with
 * the right pairs or PROX_ERR_INVALID, never stale pairs. */
static void skin_list_count_change_rebuilds_or_is_rejected(void **state)
{
    (void)state;
    rng r = rng_seeded(31);
    cloud all;
    cloud_uniform(&all, 3, 1500, 0.0, 10.0, &r);
    prox_grid_desc desc = config_desc(&CONFIG_MORTON, 1.0, NULL, 2);
    prox_skin_list *list = NULL;
    const char *context = "prox_skin_list with 1500 then 1000 points";
    CHECK_STATUS(prox_skin_list_create(&desc, 0.2, &list), PROX_OK, context);
    prox_points view = prox_points_f64(all.xyz, 1500, 3);
    CHECK_STATUS(prox_skin_list_pairs(list, &view, prox_sink_count(), NULL), PROX_OK, context);
    view.count = 1000;
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_stats stats;
    prox_status status = prox_skin_list_pairs(list, &view, prox_sink_buffer(&buffer), &stats);
    CHECK(status == PROX_OK || status == PROX_ERR_INVALID, context, "status %s",
          prox_status_string(status));
    if (status == PROX_OK) {
        all.count = 1000;
        pair_list want;
        oracle_pairs(&all, 1.0, NULL, &want);
        subject s = {context, &all, &all, 1.0, NULL};
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        CHECK(stats.rebuilt, context, "a new point count needs a rebuild");
        pair_list_free(&want);
    }
    prox_pair_buffer_free(&buffer);
    prox_skin_list_destroy(list);
    cloud_free(&all);
}

/* ---- many points: the parallel paths ----------------------------------- */

enum { MANY = 70000, SAMPLED_ROWS = 200 };

static void expect_sampled_lists(prox_status status, const prox_lists *lists, const moving *m,
                                 double radius, const double *period, const char *context)
{
    CHECK_STATUS(status, PROX_OK, context);
    int64_t rows[SAMPLED_ROWS];
    for (int64_t n = 0; n < SAMPLED_ROWS; n++)
        rows[n] = (n * 6151 + 5) % m->seen.count;
    csr want;
    oracle_selected_rows(&m->seen, rows, SAMPLED_ROWS, radius, period, &want);
    subject s = {context, &m->seen, &m->seen, radius, period};
    expect_sampled_rows(&s, &want, rows, lists);
    csr_free(&want);
}

/* 70000 points (parallel build and relocation) over a few small steps. */
static void grid_update_of_many_points_matches_oracle_rows(void **state)
{
    (void)state;
    double box = 32.0, radius = 0.9, period[3] = {32.0, 32.0, 32.0};
    rng r = rng_seeded(70000);
    for (int c = 0; c < 2; c++) {
        moving m;
        moving_init(&m, 3, MANY, box, PROX_F64, &r);
        prox_grid_desc desc = config_desc(GRID_CONFIGS[c], radius, period, 2);
        prox_grid *grid = NULL;
        char context[200];
        snprintf(context, sizeof context, "prox_grid_update, %d points, algo=%s", MANY,
                 GRID_CONFIGS[c]->name);
        CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, context);
        prox_points view = moving_view(&m);
        CHECK_STATUS(prox_grid_build(grid, &view), PROX_OK, context);
        prox_lists lists;
        prox_lists_init(&lists, NULL);
        for (int step = 1; step <= 4; step++) {
            jiggle(&m, 0.02, box, false, &r);
            view = moving_view(&m);
            prox_stats stats;
            CHECK_STATUS(prox_grid_update(grid, &view, &stats), PROX_OK, context);
            CHECK(stats.relocated > 0 && stats.relocated < MANY, context,
                  "stats.relocated = %" PRId64, stats.relocated);
            expect_sampled_lists(prox_grid_pairs(grid, prox_sink_lists(&lists), NULL), &lists,
                                 &m, radius, period, context);
        }
        prox_lists_free(&lists);
        prox_grid_destroy(grid);
        moving_free(&m);
    }
}

/* 70000 points updated by grids of 1, 2 and 3 threads (the relocation is
 * split into one block of cells per thread): the same relocations and
 * rebuilds, and the same pairs in the same traversal order, step by step;
 * small steps, then a quarter and more of the points teleported (a
 * rebuild), in 2D and 3D, with dense and sparse linear keys, Morton and
 * hash keys. Sampled rows against the oracle besides. */
static void update_steps_agree_across_threads(const algo_config *config, int dim, double box,
                                              rng *r)
{
    enum { THREAD_COUNTS = 3, STEPS = 5 };
    double radius = 0.9;
    moving m;
    moving_init(&m, dim, MANY, box, PROX_F64, r);
    pin_corners(&m, box);
    prox_grid *grid[THREAD_COUNTS];
    prox_pair_buffer out[THREAD_COUNTS];
    char context[200];
    snprintf(context, sizeof context, "prox_grid_update, %d points, %dD, box %g, algo=%s", MANY,
             dim, box, config->name);
    prox_points view = moving_view(&m);
    for (int t = 0; t < THREAD_COUNTS; t++) {
        prox_grid_desc desc = config_desc(config, radius, NULL, t + 1);
        grid[t] = NULL;
        CHECK_STATUS(prox_grid_create(&desc, &grid[t]), PROX_OK, context);
        CHECK_STATUS(prox_grid_build(grid[t], &view), PROX_OK, context);
        prox_pair_buffer_init(&out[t], NULL);
    }
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    for (int step = 1; step <= STEPS; step++) {
        if (step == 3)
            teleport(&m, MANY / 3, box, r);
        else
            jiggle(&m, 0.02 * radius, box, true, r);
        view = moving_view(&m);
        prox_stats stats[THREAD_COUNTS];
        for (int t = 0; t < THREAD_COUNTS; t++) {
            CHECK_STATUS(prox_grid_update(grid[t], &view, &stats[t]), PROX_OK, context);
            out[t].count = 0;
            CHECK_STATUS(prox_grid_pairs(grid[t], prox_sink_unsorted(prox_sink_buffer(&out[t])),
                                         NULL),
                         PROX_OK, context);
        }
        CHECK(stats[0].rebuilt == (step == 3), context, "step %d: rebuilt = %d", step,
              (int)stats[0].rebuilt);
        for (int t = 1; t < THREAD_COUNTS; t++) {
            CHECK(stats[t].rebuilt == stats[0].rebuilt && stats[t].relocated == stats[0].relocated,
                  context, "step %d, %d threads: rebuilt %d relocated %" PRId64
                  " (1 thread: %d, %" PRId64 ")", step, t + 1, (int)stats[t].rebuilt,
                  stats[t].relocated, (int)stats[0].rebuilt, stats[0].relocated);
            CHECK(out[t].count == out[0].count &&
                      memcmp(out[t].pairs, out[0].pairs, (size_t)out[0].count * sizeof *out[0].pairs) == 0,
                  context, "step %d: %d threads give other pairs or another order than 1 (%" PRId64
                  " against %" PRId64 " pairs)", step, t + 1, out[t].count, out[0].count);
        }
        expect_sampled_lists(prox_grid_pairs(grid[1], prox_sink_lists(&lists), NULL), &lists, &m,
                             radius, NULL, context);
    }
    prox_lists_free(&lists);
    for (int t = 0; t < THREAD_COUNTS; t++) {
        prox_pair_buffer_free(&out[t]);
        prox_grid_destroy(grid[t]);
    }
    moving_free(&m);
}

static void grid_update_of_many_points_is_the_same_for_every_thread_count(void **state)
{
    (void)state;
    rng r = rng_seeded(70002);
    const algo_config *configs[] = {&CONFIG_LINEAR, &CONFIG_MORTON, &CONFIG_HASH};
    for (int c = 0; c < 3; c++) {
        update_steps_agree_across_threads(configs[c], 3, 32.0, &r);
        update_steps_agree_across_threads(configs[c], 2, 200.0, &r);
    }
    /* about 50 cells per point: occupancy bits and ranks (sparse) */
    update_steps_agree_across_threads(&CONFIG_LINEAR, 3, 130.0, &r);
    update_steps_agree_across_threads(&CONFIG_LINEAR, 2, 1700.0, &r);
}

/* 70000 points in a skin list: the parallel displacement check. */
static void skin_list_of_many_points_matches_oracle_rows(void **state)
{
    (void)state;
    double box = 32.0, radius = 0.9, period[3] = {0, 0, 0};
    rng r = rng_seeded(70001);
    moving m;
    moving_init(&m, 3, MANY, box, PROX_F64, &r);
    prox_grid_desc desc = config_desc(&CONFIG_MORTON, radius, period, 2);
    prox_skin_list *list = NULL;
    const char *context = "prox_skin_list, 70000 points";
    CHECK_STATUS(prox_skin_list_create(&desc, 0.2, &list), PROX_OK, context);
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    for (int step = 0; step < 4; step++) {
        if (step == 3)
            cloud_point(&m.truth, 4321)[0] += 0.15; /* > skin / 2 */
        else if (step > 0)
            jiggle(&m, 0.005, box, false, &r);
        prox_points view = moving_view(&m);
        prox_stats stats;
        prox_status status = prox_skin_list_pairs(list, &view, prox_sink_lists(&lists), &stats);
        expect_sampled_lists(status, &lists, &m, radius, period, context);
        CHECK(stats.rebuilt == (step == 0 || step == 3), context, "step %d: rebuilt = %d", step,
              (int)stats.rebuilt);
    }
    prox_lists_free(&lists);
    prox_skin_list_destroy(list);
    moving_free(&m);
}

/* Points drifting a little past the box they were built in (nothing
 * pinned, so the bounding box moves every step) are relocated, not rebuilt:
 * the grid keeps room around the data for them. */
static void grid_update_relocates_points_drifting_past_the_box(void **state)
{
    (void)state;
    enum { N = 3000, STEPS = 10 };
    static double xyz[N * 3];
    rng r = rng_seeded(11);
    for (int i = 0; i < N * 3; i++)
        xyz[i] = rng_uniform(&r);
    prox_points points = prox_points_f64(xyz, N, 3);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 0.05;
    prox_grid *grid = NULL;
    CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, "create");
    CHECK_STATUS(prox_grid_build(grid, &points), PROX_OK, "build");
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < N * 3; i++) /* outward on average: the box grows */
            xyz[i] += (xyz[i] < 0.5 ? -1.0 : 1.0) * 0.001 * rng_uniform(&r);
        prox_stats moved, by_grid, by_brute;
        CHECK_STATUS(prox_grid_update(grid, &points, &moved), PROX_OK, "update");
        if (moved.rebuilt || moved.relocated <= 0 || moved.relocated >= N / 4)
            fail_msg("step %d: rebuilt=%d relocated=%" PRId64 " (want a partial relocation)",
                     step, (int)moved.rebuilt, moved.relocated);
        CHECK_STATUS(prox_grid_pairs(grid, prox_sink_count(), &by_grid), PROX_OK, "grid pairs");
        CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_BRUTE, prox_sink_count(), &by_brute),
                     PROX_OK, "brute pairs");
        assert_int_equal(by_grid.pairs, by_brute.pairs);
    }
    prox_grid_destroy(grid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grid_update_follows_random_walk_3d),
        cmocka_unit_test(grid_update_relocates_points_drifting_past_the_box),
        cmocka_unit_test(grid_update_follows_random_walk_2d_f32),
        cmocka_unit_test(grid_update_follows_random_walk_sparse),
        cmocka_unit_test(grid_update_of_many_points_is_the_same_for_every_thread_count),
        cmocka_unit_test(skin_list_rebuilds_only_beyond_half_skin),
        cmocka_unit_test(skin_list_serves_every_sink),
        cmocka_unit_test(skin_list_count_change_rebuilds_or_is_rejected),
        cmocka_unit_test(grid_update_of_many_points_matches_oracle_rows),
        cmocka_unit_test(skin_list_of_many_points_matches_oracle_rows),
    };
    return cmocka_run_group_tests_name("update", tests, NULL, NULL);
}
