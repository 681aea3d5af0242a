/* test_errors.c: every documented failure: invalid arguments, bad data,
 * impossible periods, allocation failures at every allocation (no leak, no
 * crash, still usable afterwards), status strings and per-thread messages. */
#include "check.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

/* ---- small helpers ----------------------------------------------------- */

static void expect_message(const char *context)
{
    const char *message = prox_last_error();
    CHECK(message != NULL && message[0] != '\0', context, "prox_last_error() is empty");
}

/* The message contains `number` as a whole number (not inside another). */
static bool names_number(const char *message, int64_t number)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%" PRId64, number);
    size_t length = strlen(digits);
    for (const char *at = strstr(message, digits); at; at = strstr(at + 1, digits)) {
        bool starts = at == message || at[-1] < '0' || at[-1] > '9';
        bool ends = at[length] < '0' || at[length] > '9';
        if (starts && ends)
            return true;
    }
    return false;
}

static prox_grid_desc desc_with_radius(double radius)
{
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = radius;
    return desc;
}

/* The message must be set when a call failed. */
static void expect_message_if_failed(prox_status want, const char *context)
{
    if (want != PROX_OK)
        expect_message(context);
}

/* Runs every entry point that takes a desc and expects `want`. */
static void expect_every_entry_point(const prox_grid_desc *desc, const prox_points *points,
                                     prox_status want, const char *what);

/* The same with a skin list of the given skin (skin < 0: no skin list). */
static void expect_every_entry_point_skin(const prox_grid_desc *desc, const prox_points *points,
                                          prox_status want, const char *what, double skin);

static void expect_every_entry_point(const prox_grid_desc *desc, const prox_points *points,
                                     prox_status want, const char *what)
{
    expect_every_entry_point_skin(desc, points, want, what, 0.0625);
}

static void expect_every_entry_point_skin(const prox_grid_desc *desc, const prox_points *points,
                                          prox_status want, const char *what, double skin)
{
    char context[256];
    static const prox_algo algos[2] = {PROX_ALGO_GRID, PROX_ALGO_BRUTE};
    for (int a = 0; a < 2; a++) {
        snprintf(context, sizeof context, "%s: prox_pairs algo=%d", what, (int)algos[a]);
        CHECK_STATUS(prox_pairs(points, desc, algos[a], prox_sink_count(), NULL), want, context);
        expect_message_if_failed(want, context);
        snprintf(context, sizeof context, "%s: prox_query algo=%d", what, (int)algos[a]);
        CHECK_STATUS(prox_query(points, points, desc, algos[a], prox_sink_count(), NULL), want,
                     context);
        expect_message_if_failed(want, context);
    }
    snprintf(context, sizeof context, "%s: prox_grid_create + prox_grid_build", what);
    prox_grid *grid = NULL;
    prox_status status = prox_grid_create(desc, &grid);
    if (status == PROX_OK) /* some checks may only be possible at build time */
        status = prox_grid_build(grid, points);
    CHECK_STATUS(status, want, context);
    expect_message_if_failed(want, context);
    if (grid)
        prox_grid_destroy(grid);
    if (skin < 0)
        return;
    snprintf(context, sizeof context, "%s: prox_skin_list_create + pairs, skin %g", what, skin);
    prox_skin_list *list = NULL;
    status = prox_skin_list_create(desc, skin, &list);
    if (status == PROX_OK)
        status = prox_skin_list_pairs(list, points, prox_sink_count(), NULL);
    CHECK_STATUS(status, want, context);
    expect_message_if_failed(want, context);
    if (list)
        prox_skin_list_destroy(list);
}

static double some_points[60];

static prox_points small_view(int dim)
{
    rng r = rng_seeded(5);
    for (int n = 0; n < 60; n++)
        some_points[n] = rng_uniform(&r);
    return prox_points_f64(some_points, 20, dim);
}

/* ---- invalid arguments ------------------------------------------------- */

static void invalid_radius_is_rejected(void **state)
{
    (void)state;
    const double radii[] = {0.0, -0.0, -1.0, NAN, -NAN, INFINITY, -INFINITY, -1e-300};
    prox_points points = small_view(3);
    for (size_t n = 0; n < sizeof radii / sizeof radii[0]; n++) {
        char what[64];
        snprintf(what, sizeof what, "radius %g", radii[n]);
        prox_grid_desc desc = desc_with_radius(radii[n]);
        expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, what);
    }
}

static void dimension_other_than_2_or_3_is_rejected(void **state)
{
    (void)state;
    static const int dims[] = {0, 1, 4, -3};
    prox_grid_desc desc = desc_with_radius(0.1);
    for (size_t n = 0; n < sizeof dims / sizeof dims[0]; n++) {
        prox_points points = small_view(3);
        points.dim = dims[n];
        char what[64];
        snprintf(what, sizeof what, "dim %d", dims[n]);
        expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, what);
    }
}

/* A negative count is a bad argument (PROX_ERR_RANGE is documented as "data
 * too large to represent"). */
static void negative_count_is_rejected(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(0.1);
    prox_points points = small_view(3);
    points.count = -1;
    expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, "count -1");
}

static void unknown_scalar_type_is_rejected(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(0.1);
    prox_points points = small_view(3);
    points.scalar = (prox_scalar)7;
    expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, "scalar 7");
}

/* Beyond PROX_MAX_POINTS: refused before any coordinate is read. */
static void count_beyond_the_index_type_is_refused(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(0.1);
    prox_points points = small_view(3);
    points.count = PROX_MAX_POINTS + 1;
    static const prox_algo algos[2] = {PROX_ALGO_GRID, PROX_ALGO_BRUTE};
    for (int a = 0; a < 2; a++) {
        prox_status status = prox_pairs(&points, &desc, algos[a], prox_sink_count(), NULL);
        CHECK(status == PROX_ERR_RANGE || status == PROX_ERR_INVALID, "count 2^32",
              "status %s (%s)", prox_status_string(status), prox_last_error());
        expect_message("count 2^32");
    }
}

static void period_must_exceed_twice_the_radius(void **state)
{
    (void)state;
    prox_points points = small_view(3);
    for (int axis = 0; axis < 3; axis++) {
        prox_grid_desc desc = desc_with_radius(0.5);
        desc.period[axis] = 1.0; /* radius == L/2 */
        expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, "radius == period / 2");
        desc.period[axis] = 0.9;
        expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, "radius > period / 2");
        desc.period[axis] = nextafter(1.0, 2.0); /* just valid, without a skin */
        expect_every_entry_point_skin(&desc, &points, PROX_OK, "radius just below period / 2",
                                      -1.0);
    }
}

/* A skin list keeps pairs within radius + skin, which must stay below half
 * of every period. */
static void skin_list_needs_radius_plus_skin_below_half_period(void **state)
{
    (void)state;
    prox_points points = small_view(3);
    for (int axis = 0; axis < 3; axis++) {
        prox_grid_desc desc = desc_with_radius(0.5);
        desc.period[axis] = 1.5; /* radius + skin == L/2 */
        expect_every_entry_point_skin(&desc, &points, PROX_OK, "radius < L/2 (no skin)", -1.0);
        prox_skin_list *list = NULL;
        CHECK_STATUS(prox_skin_list_create(&desc, 0.25, &list), PROX_ERR_INVALID,
                     "skin list, radius + skin == period / 2");
        expect_message("skin list, radius + skin == period / 2");
        desc.period[axis] = 1.5 * (1 + 1e-9);
        CHECK_STATUS(prox_skin_list_create(&desc, 0.25, &list), PROX_OK,
                     "skin list, radius + skin below period / 2 by 1e-9 (relative)");
        prox_skin_list_destroy(list);
    }
}

static void period_must_be_finite_and_not_negative(void **state)
{
    (void)state;
    const double periods[] = {-1.0, NAN, INFINITY, -INFINITY};
    prox_points points = small_view(3);
    for (size_t n = 0; n < sizeof periods / sizeof periods[0]; n++) {
        prox_grid_desc desc = desc_with_radius(0.1);
        desc.period[1] = periods[n];
        char what[64];
        snprintf(what, sizeof what, "period %g", periods[n]);
        expect_every_entry_point(&desc, &points, PROX_ERR_INVALID, what);
    }
}

static void hash_table_size_must_be_a_power_of_two(void **state)
{
    (void)state;
    const int64_t sizes[] = {3, 12, 1000, -8, (int64_t)1 << 40 | 1};
    prox_points points = small_view(3);
    for (size_t n = 0; n < sizeof sizes / sizeof sizes[0]; n++) {
        prox_grid_desc desc = desc_with_radius(0.1);
        desc.keys = PROX_KEYS_HASH;
        desc.table_size = sizes[n];
        char what[64];
        snprintf(what, sizeof what, "table_size %" PRId64, sizes[n]);
        CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL),
                     PROX_ERR_INVALID, what);
        expect_message(what);
        prox_grid *grid = NULL;
        prox_status status = prox_grid_create(&desc, &grid);
        if (status == PROX_OK)
            status = prox_grid_build(grid, &points);
        CHECK_STATUS(status, PROX_ERR_INVALID, what);
        if (grid)
            prox_grid_destroy(grid);
    }
}

static void bad_grid_options_are_rejected(void **state)
{
    (void)state;
    prox_points points = small_view(3);
    const int divisions[] = {0, -1};
    for (size_t n = 0; n < sizeof divisions / sizeof divisions[0]; n++) {
        prox_grid_desc desc = desc_with_radius(0.1);
        desc.cell_divisions = divisions[n];
        char what[64];
        snprintf(what, sizeof what, "cell_divisions %d", divisions[n]);
        CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL),
                     PROX_ERR_INVALID, what);
        expect_message(what);
    }
    prox_grid_desc desc = desc_with_radius(0.1);
    desc.keys = (prox_keys)9;
    CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL),
                 PROX_ERR_INVALID, "keys 9");
    desc = desc_with_radius(0.1);
    CHECK_STATUS(prox_pairs(&points, &desc, (prox_algo)9, prox_sink_count(), NULL),
                 PROX_ERR_INVALID, "algo 9");
    expect_message("algo 9");
}

static void default_desc_is_documented(void **state)
{
    (void)state;
    prox_grid_desc desc = prox_default_grid_desc();
    assert_int_equal(desc.keys, PROX_KEYS_LINEAR);
    assert_int_equal(desc.cell_divisions, 1);
    assert_int_equal(desc.table_size, 0);
    for (int k = 0; k < 3; k++)
        assert_true(desc.period[k] == 0.0);
    assert_null(desc.allocator.alloc);
    assert_null(desc.allocator.free);
    prox_points points = small_view(3);
    CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL),
                 PROX_ERR_INVALID, "default desc has no radius");
}

static void queries_must_have_the_points_dimension(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(0.1);
    prox_points points = small_view(3), queries = small_view(2);
    for (int a = 0; a < 2; a++) {
        CHECK_STATUS(prox_query(&points, &queries, &desc, (prox_algo)a, prox_sink_count(), NULL),
                     PROX_ERR_INVALID, "3D points, 2D queries");
        expect_message("3D points, 2D queries");
    }
    prox_grid *grid = NULL;
    CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, "create");
    CHECK_STATUS(prox_grid_build(grid, &points), PROX_OK, "build");
    CHECK_STATUS(prox_grid_query(grid, &queries, prox_sink_count(), NULL), PROX_ERR_INVALID,
                 "prox_grid_query: 3D grid, 2D queries");
    prox_grid_destroy(grid);
}

/* An input with two faults, one every structure refuses (a NaN query, a
 * sink without its buffer) and one only the grid does (points spanning
 * more than 2^31 cells), is refused alike by every structure: the one-shot
 * calls check their arguments in one order before any structure looks. */
static void a_fault_every_structure_refuses_comes_first(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(1e-6);
    double wide[2][3] = {{-1e300, 0.0, 0.0}, {1e300, 0.0, 0.0}};
    double nan_query[2][3] = {{0.0, 0.0, 0.0}, {NAN, 0.0, 0.0}};
    prox_points points = prox_points_f64(&wide[0][0], 2, 3);
    prox_points queries = prox_points_f64(&nan_query[0][0], 2, 3);
    prox_sink no_buffer = prox_sink_buffer(NULL);
    static const prox_algo algos[3] = {PROX_ALGO_GRID, PROX_ALGO_BRUTE, PROX_ALGO_HIERARCHICAL};
    CHECK_STATUS(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL),
                 PROX_ERR_RANGE, "the grid alone refuses the points");
    char context[128];
    for (int a = 0; a < 3; a++) {
        snprintf(context, sizeof context, "a NaN query, algo=%d", (int)algos[a]);
        CHECK_STATUS(prox_query(&points, &queries, &desc, algos[a], prox_sink_count(), NULL),
                     PROX_ERR_DATA, context);
        expect_message(context);
        snprintf(context, sizeof context, "a sink without a buffer, algo=%d", (int)algos[a]);
        CHECK_STATUS(prox_pairs(&points, &desc, algos[a], no_buffer, NULL), PROX_ERR_INVALID,
                     context);
        CHECK_STATUS(prox_query(&points, &points, &desc, algos[a], no_buffer, NULL),
                     PROX_ERR_INVALID, context);
    }
}

/* prox_grid_update is for the same points: given another count it must
 * either refuse (PROX_ERR_INVALID) or rebuild, never keep stale points. */
static void update_with_another_count_rebuilds_or_is_rejected(void **state)
{
    (void)state;
    rng r = rng_seeded(8);
    cloud all;
    cloud_uniform(&all, 3, 500, 0.0, 4.0, &r);
    prox_grid_desc desc = desc_with_radius(0.5);
    prox_points points = prox_points_f64(all.xyz, 500, 3);
    prox_grid *grid = NULL;
    const char *context = "prox_grid_update with 400 points on a grid of 500";
    CHECK_STATUS(prox_grid_create(&desc, &grid), PROX_OK, context);
    CHECK_STATUS(prox_grid_build(grid, &points), PROX_OK, context);
    points.count = 400;
    prox_stats stats;
    memset(&stats, 0, sizeof stats);
    prox_status status = prox_grid_update(grid, &points, &stats);
    CHECK(status == PROX_OK || status == PROX_ERR_INVALID, context, "status %s",
          prox_status_string(status));
    if (status == PROX_OK) {
        CHECK(stats.rebuilt, context, "accepted a new count without a rebuild");
        all.count = 400;
        pair_list want;
        oracle_pairs(&all, 0.5, NULL, &want);
        prox_pair_buffer buffer;
        prox_pair_buffer_init(&buffer, NULL);
        CHECK_STATUS(prox_grid_pairs(grid, prox_sink_buffer(&buffer), NULL), PROX_OK, context);
        subject s = {context, &all, &all, 0.5, NULL};
        expect_same_pairs(&s, &want, buffer.pairs, buffer.count);
        prox_pair_buffer_free(&buffer);
        pair_list_free(&want);
    }
    prox_grid_destroy(grid);
    cloud_free(&all);
}

static void negative_or_nan_skin_is_rejected(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(0.1);
    const double skins[] = {-0.1, NAN, INFINITY};
    for (size_t n = 0; n < sizeof skins / sizeof skins[0]; n++) {
        prox_skin_list *list = NULL;
        char what[64];
        snprintf(what, sizeof what, "skin %g", skins[n]);
        CHECK_STATUS(prox_skin_list_create(&desc, skins[n], &list), PROX_ERR_INVALID, what);
        expect_message(what);
    }
}

/* ---- bad data ---------------------------------------------------------- */

enum { BAD_POINTS = 1000, BAD_INDEX = 737, BAD_QUERY = 212 };

typedef struct bad_data {
    cloud points;
    float *as_float;
    prox_points view;
} bad_data;

static void bad_data_make(bad_data *b, int dim, prox_scalar scalar, int64_t bad, int axis,
                          double value)
{
    rng r = rng_seeded(11);
    cloud_uniform(&b->points, dim, BAD_POINTS, 0.0, 10.0, &r);
    cloud_point(&b->points, bad)[axis] = value;
    b->as_float = NULL;
    if (scalar == PROX_F32) {
        b->as_float = cloud_round_to_float(&b->points);
        b->view = prox_points_f32(b->as_float, BAD_POINTS, dim);
    } else {
        b->view = prox_points_f64(b->points.xyz, BAD_POINTS, dim);
    }
}

static void bad_data_free(bad_data *b)
{
    cloud_free(&b->points);
    free(b->as_float);
}

static void expect_data_error(prox_status status, int64_t index, const char *context)
{
    CHECK_STATUS(status, PROX_ERR_DATA, context);
    CHECK(names_number(prox_last_error(), index), context,
          "message \"%s\" does not name point %" PRId64, prox_last_error(), index);
}

static void check_bad_points(const prox_grid_desc *desc, const bad_data *bad,
                             const prox_points *good, const char *what)
{
    char context[256];
    for (int a = 0; a < 2; a++) {
        snprintf(context, sizeof context, "%s: prox_pairs algo=%d", what, a);
        expect_data_error(prox_pairs(&bad->view, desc, (prox_algo)a, prox_sink_count(), NULL),
                          BAD_INDEX, context);
        snprintf(context, sizeof context, "%s in the points: prox_query algo=%d", what, a);
        expect_data_error(prox_query(&bad->view, good, desc, (prox_algo)a, prox_sink_count(),
                                     NULL),
                          BAD_INDEX, context);
    }
    prox_grid *grid = NULL;
    snprintf(context, sizeof context, "%s: prox_grid_build", what);
    CHECK_STATUS(prox_grid_create(desc, &grid), PROX_OK, context);
    expect_data_error(prox_grid_build(grid, &bad->view), BAD_INDEX, context);
    CHECK_STATUS(prox_grid_build(grid, good), PROX_OK, context);
    snprintf(context, sizeof context, "%s: prox_grid_update", what);
    prox_stats before, after;
    CHECK_STATUS(prox_grid_pairs(grid, prox_sink_count(), &before), PROX_OK, context);
    expect_data_error(prox_grid_update(grid, &bad->view, NULL), BAD_INDEX, context);
    /* rejected before anything moved: the grid still answers for `good` */
    CHECK_STATUS(prox_grid_pairs(grid, prox_sink_count(), &after), PROX_OK, context);
    CHECK(after.pairs == before.pairs, context, "%" PRId64 " pairs after the rejected update, "
          "%" PRId64 " before", after.pairs, before.pairs);
    prox_grid_destroy(grid);
    prox_skin_list *list = NULL;
    snprintf(context, sizeof context, "%s: prox_skin_list_pairs", what);
    CHECK_STATUS(prox_skin_list_create(desc, 0.1, &list), PROX_OK, context);
    expect_data_error(prox_skin_list_pairs(list, &bad->view, prox_sink_count(), NULL),
                      BAD_INDEX, context);
    prox_skin_list_destroy(list);
}

static void check_bad_queries(const prox_grid_desc *desc, const bad_data *bad_queries,
                              const prox_points *good, const char *what)
{
    char context[256];
    for (int a = 0; a < 2; a++) {
        snprintf(context, sizeof context, "%s in the queries: prox_query algo=%d", what, a);
        expect_data_error(prox_query(good, &bad_queries->view, desc, (prox_algo)a,
                                     prox_sink_count(), NULL),
                          BAD_QUERY, context);
    }
    prox_grid *grid = NULL;
    snprintf(context, sizeof context, "%s in the queries: prox_grid_query", what);
    CHECK_STATUS(prox_grid_create(desc, &grid), PROX_OK, context);
    CHECK_STATUS(prox_grid_build(grid, good), PROX_OK, context);
    expect_data_error(prox_grid_query(grid, &bad_queries->view, prox_sink_count(), NULL),
                      BAD_QUERY, context);
    prox_grid_destroy(grid);
}

static void nan_or_infinite_coordinate_is_a_data_error_naming_the_point(void **state)
{
    (void)state;
    const double values[] = {NAN, INFINITY, -INFINITY};
    static const prox_scalar scalars[2] = {PROX_F64, PROX_F32};
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        for (int dim = 2; dim <= 3; dim++) {
            for (int s = 0; s < 2; s++) {
                for (int periodic = 0; periodic <= 1; periodic++) {
                    prox_grid_desc desc = desc_with_radius(0.3);
                    for (int k = 0; k < dim && periodic; k++)
                        desc.period[k] = 10.0;
                    bad_data bad, bad_queries, good;
                    int axis = dim - 1;
                    bad_data_make(&bad, dim, scalars[s], BAD_INDEX, axis, values[v]);
                    bad_data_make(&bad_queries, dim, scalars[s], BAD_QUERY, 0, values[v]);
                    bad_data_make(&good, dim, scalars[s], 0, 0, 1.0);
                    char what[128];
                    snprintf(what, sizeof what, "%g on axis %d, dim=%d %s %s", values[v], axis,
                             dim, scalar_name(scalars[s]), periodic ? "periodic" : "open");
                    check_bad_points(&desc, &bad, &good.view, what);
                    check_bad_queries(&desc, &bad_queries, &good.view, what);
                    bad_data_free(&bad);
                    bad_data_free(&bad_queries);
                    bad_data_free(&good);
                }
            }
        }
    }
}

/* ---- allocator hooks --------------------------------------------------- */

/* Counts allocations through the hook, refuses those beyond `budget`
 * (budget < 0: never), and marks its blocks to catch foreign frees. */
typedef struct hook_state {
    atomic_llong attempts;
    atomic_llong allocations;
    atomic_llong frees;
    atomic_llong live;
    atomic_llong foreign_frees;
    long long budget;
} hook_state;

#define HOOK_HEADER 16
#define HOOK_MAGIC 0x50524F58u /* "PROX" */

static void *hook_alloc(size_t size, void *user)
{
    hook_state *h = user;
    long long attempt = atomic_fetch_add(&h->attempts, 1);
    if (h->budget >= 0 && attempt >= h->budget)
        return NULL;
    unsigned char *block = malloc(size + HOOK_HEADER);
    if (!block)
        return NULL;
    unsigned magic = HOOK_MAGIC;
    memcpy(block, &magic, sizeof magic);
    atomic_fetch_add(&h->allocations, 1);
    atomic_fetch_add(&h->live, 1);
    return block + HOOK_HEADER;
}

static void hook_free(void *ptr, void *user)
{
    hook_state *h = user;
    if (!ptr)
        return;
    unsigned char *block = (unsigned char *)ptr - HOOK_HEADER;
    unsigned magic;
    memcpy(&magic, block, sizeof magic);
    if (magic != HOOK_MAGIC) {
        atomic_fetch_add(&h->foreign_frees, 1);
        return; /* not ours: leave it (ASan reports it as a leak) */
    }
    memset(block, 0, sizeof magic);
    atomic_fetch_add(&h->frees, 1);
    atomic_fetch_sub(&h->live, 1);
    free(block);
}

static void hook_reset(hook_state *h, long long budget)
{
    atomic_store(&h->attempts, 0);
    atomic_store(&h->allocations, 0);
    atomic_store(&h->frees, 0);
    atomic_store(&h->live, 0);
    atomic_store(&h->foreign_frees, 0);
    h->budget = budget;
}

static prox_allocator hook_of(hook_state *h)
{
    prox_allocator a = {hook_alloc, hook_free, h};
    return a;
}

/* One sequence of calls that uses the allocator from end to end and frees
 * everything it made; returns the first failing status. On success it
 * checks its results against `expected`. */
typedef struct scenario {
    const char *name;
    prox_status (*run)(const struct scenario *s, const prox_allocator *hook);
    const algo_config *config;
    int threads;
    const test_case *tc;
    const expectation *e;
} scenario;

static prox_grid_desc scenario_desc(const scenario *s, const prox_allocator *hook)
{
    prox_grid_desc desc = config_desc(s->config, s->tc->radius, s->tc->period, s->threads);
    desc.allocator = *hook;
    return desc;
}

static void scenario_expect(const scenario *s, const pair_list *want, const prox_pair *got,
                            int64_t count, bool query)
{
    subject sub = {s->name, query ? &s->tc->queries : &s->tc->points, &s->tc->points,
                   s->tc->radius, s->tc->period};
    expect_same_pairs(&sub, want, got, count);
}

static prox_status one_shot_sinks(const scenario *s, const prox_allocator *hook)
{
    prox_grid_desc desc = scenario_desc(s, hook);
    prox_points points = test_case_points(s->tc), queries = test_case_queries(s->tc);
    prox_pair_buffer buffer, unsorted;
    prox_lists lists;
    prox_pair_buffer_init(&buffer, hook);
    prox_pair_buffer_init(&unsorted, hook);
    prox_lists_init(&lists, hook);
    collector c;
    collector_init(&c, 0);
    prox_status status =
        prox_pairs(&points, &desc, s->config->algo, prox_sink_buffer(&buffer), NULL);
    if (status == PROX_OK)
        status = prox_pairs(&points, &desc, s->config->algo,
                            prox_sink_unsorted(prox_sink_buffer(&unsorted)), NULL);
    if (status == PROX_OK)
        CHECK(unsorted.count == s->e->pairs.count, s->name,
              "unsorted buffer: %lld pairs, expected %lld", (long long)unsorted.count,
              (long long)s->e->pairs.count);
    if (status == PROX_OK)
        status = prox_pairs(&points, &desc, s->config->algo, prox_sink_lists(&lists), NULL);
    if (status == PROX_OK)
        status = prox_pairs(&points, &desc, s->config->algo, prox_sink_count(), NULL);
    if (status == PROX_OK)
        status = prox_pairs(&points, &desc, s->config->algo,
                            prox_sink_callback(collector_fn, &c), NULL);
    if (status == PROX_OK) {
        scenario_expect(s, &s->e->pairs, buffer.pairs, buffer.count, false);
        subject sub = {s->name, &s->tc->points, &s->tc->points, s->tc->radius, s->tc->period};
        expect_same_lists(&sub, &s->e->lists, &lists);
        status = prox_query(&points, &queries, &desc, s->config->algo,
                            prox_sink_buffer(&buffer), NULL);
    }
    if (status == PROX_OK) {
        scenario_expect(s, &s->e->query_pairs, buffer.pairs, buffer.count, true);
        status = prox_query(&points, &queries, &desc, s->config->algo, prox_sink_lists(&lists),
                            NULL);
    }
    collector_free(&c);
    prox_pair_buffer_free(&buffer);
    prox_pair_buffer_free(&unsorted);
    prox_lists_free(&lists);
    return status;
}

static prox_status object_lifecycle(const scenario *s, const prox_allocator *hook)
{
    prox_grid_desc desc = scenario_desc(s, hook);
    prox_points points = test_case_points(s->tc), queries = test_case_queries(s->tc);
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair_buffer_init(&buffer, hook);
    prox_lists_init(&lists, hook);
    prox_grid *grid = NULL;
    prox_status status = prox_grid_create(&desc, &grid);
    if (status == PROX_OK)
        status = prox_grid_build(grid, &points);
    if (status == PROX_OK)
        status = prox_grid_build(grid, &points);
    if (status == PROX_OK)
        status = prox_grid_update(grid, &points, NULL);
    if (status == PROX_OK)
        status = prox_grid_pairs(grid, prox_sink_buffer(&buffer), NULL);
    if (status == PROX_OK) {
        scenario_expect(s, &s->e->pairs, buffer.pairs, buffer.count, false);
        status = prox_grid_pairs(grid, prox_sink_lists(&lists), NULL);
    }
    if (status == PROX_OK)
        status = prox_grid_query(grid, &queries, prox_sink_buffer(&buffer), NULL);
    if (status == PROX_OK) {
        scenario_expect(s, &s->e->query_pairs, buffer.pairs, buffer.count, true);
        status = prox_grid_query(grid, &queries, prox_sink_lists(&lists), NULL);
    }
    if (grid) /* NULL when creation failed */
        prox_grid_destroy(grid);
    prox_pair_buffer_free(&buffer);
    prox_lists_free(&lists);
    return status;
}

static prox_status skin_lifecycle(const scenario *s, const prox_allocator *hook)
{
    prox_grid_desc desc = scenario_desc(s, hook);
    prox_points points = test_case_points(s->tc);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, hook);
    prox_skin_list *list = NULL;
    prox_status status = prox_skin_list_create(&desc, 0.1, &list);
    if (status == PROX_OK)
        status = prox_skin_list_pairs(list, &points, prox_sink_buffer(&buffer), NULL);
    if (status == PROX_OK)
        status = prox_skin_list_pairs(list, &points, prox_sink_buffer(&buffer), NULL);
    if (status == PROX_OK)
        scenario_expect(s, &s->e->pairs, buffer.pairs, buffer.count, false);
    if (list)
        prox_skin_list_destroy(list);
    prox_pair_buffer_free(&buffer);
    return status;
}

static void expect_all_freed(const hook_state *h, const char *context, long long budget)
{
    CHECK(atomic_load(&h->live) == 0, context,
          "%lld blocks still allocated after everything was freed (budget %lld)",
          (long long)atomic_load(&h->live), budget);
    CHECK(atomic_load(&h->foreign_frees) == 0, context,
          "%lld blocks given to the hook's free were not from its alloc",
          (long long)atomic_load(&h->foreign_frees));
}

/* Budget 0, 1, 2, ...: NO_MEMORY until the budget suffices, nothing left
 * allocated after each attempt, then success with the right results. */
static void fail_every_allocation_in_turn(const scenario *s)
{
    hook_state h;
    prox_allocator hook = hook_of(&h);
    char context[256];
    long long budget = 0;
    for (;; budget++) {
        snprintf(context, sizeof context, "%s: allocation %lld refused", s->name, budget);
        hook_reset(&h, budget);
        prox_status status = s->run(s, &hook);
        expect_all_freed(&h, context, budget);
        if (status == PROX_OK)
            break;
        CHECK_STATUS(status, PROX_ERR_NO_MEMORY, context);
        expect_message(context);
        CHECK(budget < 100000, context, "still failing after 100000 allocations");
    }
    snprintf(context, sizeof context, "%s: unlimited hook", s->name);
    hook_reset(&h, -1);
    CHECK_STATUS(s->run(s, &hook), PROX_OK, context);
    expect_all_freed(&h, context, -1);
    CHECK(atomic_load(&h.allocations) == atomic_load(&h.frees), context,
          "%lld allocations, %lld frees", (long long)atomic_load(&h.allocations),
          (long long)atomic_load(&h.frees));
    if (s->config->algo == PROX_ALGO_GRID)
        CHECK(atomic_load(&h.allocations) > 0, context,
              "a grid was built without a single allocation through the hook");
    prox_allocator plain = {0};
    snprintf(context, sizeof context, "%s: default allocator afterwards", s->name);
    CHECK_STATUS(s->run(s, &plain), PROX_OK, context);
}

static void every_allocation_failure_is_reported_and_cleaned_up(void **state)
{
    (void)state;
    test_case tc;
    test_case_make(&tc, INPUT_CLUSTERED, 3, PROX_F64, PERIODIC_X_ONLY);
    expectation e;
    expectation_compute(&e, &tc);
    const scenario scenarios[] = {
        {"one-shot sinks, grid-linear", one_shot_sinks, &CONFIG_LINEAR, 1, &tc, &e},
        {"one-shot sinks, grid-linear, 2 threads", one_shot_sinks, &CONFIG_LINEAR, 2, &tc, &e},
        {"grid object, grid-linear", object_lifecycle, &CONFIG_LINEAR, 1, &tc, &e},
        {"one-shot sinks, grid-morton", one_shot_sinks, &CONFIG_MORTON, 1, &tc, &e},
        {"one-shot sinks, grid-hash", one_shot_sinks, &CONFIG_HASH, 1, &tc, &e},
        {"one-shot sinks, grid-morton-div2", one_shot_sinks, &CONFIG_DIVISIONS_2, 1, &tc, &e},
        {"one-shot sinks, brute", one_shot_sinks, &CONFIG_BRUTE, 1, &tc, &e},
        {"one-shot sinks, grid-hash, 2 threads", one_shot_sinks, &CONFIG_HASH, 2, &tc, &e},
        {"one-shot sinks, brute, 2 threads", one_shot_sinks, &CONFIG_BRUTE, 2, &tc, &e},
        {"grid object, grid-morton", object_lifecycle, &CONFIG_MORTON, 1, &tc, &e},
        {"grid object, grid-hash-table8", object_lifecycle, &CONFIG_HASH_TINY_TABLE, 1, &tc, &e},
        {"grid object, grid-morton, 2 threads", object_lifecycle, &CONFIG_MORTON, 2, &tc, &e},
        {"skin list, grid-morton", skin_lifecycle, &CONFIG_MORTON, 1, &tc, &e},
        {"skin list, grid-hash", skin_lifecycle, &CONFIG_HASH, 1, &tc, &e},
    };
    for (size_t n = 0; n < sizeof scenarios / sizeof scenarios[0]; n++)
        fail_every_allocation_in_turn(&scenarios[n]);
    expectation_free(&e);
    test_case_free(&tc);
}

static void pair_buffer_reserve_reports_refused_memory(void **state)
{
    (void)state;
    hook_state h;
    hook_reset(&h, 1);
    prox_allocator hook = hook_of(&h);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, &hook);
    assert_int_equal(prox_pair_buffer_reserve(&buffer, 10), PROX_OK);
    buffer.pairs[0].i = 4;
    buffer.pairs[0].j = 9;
    buffer.count = 1;
    assert_int_equal(prox_pair_buffer_reserve(&buffer, 1000000), PROX_ERR_NO_MEMORY);
    assert_int_equal(buffer.count, 1); /* the old content survives */
    assert_int_equal(buffer.pairs[0].i, 4);
    assert_int_equal(buffer.pairs[0].j, 9);
    prox_pair_buffer_free(&buffer);
    expect_all_freed(&h, "prox_pair_buffer_reserve refused", 1);
}

/* ---- status strings and messages --------------------------------------- */

static void every_status_has_a_distinct_name(void **state)
{
    (void)state;
    const prox_status all[] = {PROX_OK, PROX_ERR_INVALID, PROX_ERR_DATA, PROX_ERR_RANGE,
                               PROX_ERR_NO_MEMORY, PROX_STOPPED};
    size_t count = sizeof all / sizeof all[0];
    for (size_t a = 0; a < count; a++) {
        const char *name = prox_status_string(all[a]);
        assert_non_null(name);
        assert_true(name[0] != '\0');
        for (size_t b = 0; b < a; b++)
            assert_string_not_equal(name, prox_status_string(all[b]));
    }
    assert_string_equal(prox_status_string(PROX_OK), "ok");
    assert_non_null(prox_status_string((prox_status)42));
}

static int fail_in_another_thread(void *arg)
{
    const char **seen_first = arg;
    *seen_first = prox_last_error();
    static char copy_of_first[256];
    snprintf(copy_of_first, sizeof copy_of_first, "%s", *seen_first ? *seen_first : "(null)");
    *seen_first = copy_of_first;
    bad_data bad;
    bad_data_make(&bad, 3, PROX_F64, BAD_INDEX, 1, NAN);
    prox_grid_desc desc = desc_with_radius(0.5);
    prox_status status = prox_pairs(&bad.view, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL);
    bool named = names_number(prox_last_error(), BAD_INDEX);
    bad_data_free(&bad);
    return status == PROX_ERR_DATA && named;
}

/* Messages belong to the thread that failed; a fresh thread has "". */
static void last_error_is_per_thread(void **state)
{
    (void)state;
    prox_grid_desc desc = desc_with_radius(-1.0);
    prox_points points = small_view(3);
    assert_int_equal(prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_count(), NULL),
                     PROX_ERR_INVALID);
    char mine[512];
    snprintf(mine, sizeof mine, "%s", prox_last_error());
    assert_true(mine[0] != '\0');
    const char *fresh = NULL;
    thrd_t thread;
    assert_int_equal(thrd_create(&thread, fail_in_another_thread, &fresh), thrd_success);
    int other_ok = 0;
    assert_int_equal(thrd_join(thread, &other_ok), thrd_success);
    assert_string_equal(fresh, "");
    assert_true(other_ok);
    assert_string_equal(prox_last_error(), mine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(invalid_radius_is_rejected),
        cmocka_unit_test(dimension_other_than_2_or_3_is_rejected),
        cmocka_unit_test(negative_count_is_rejected),
        cmocka_unit_test(unknown_scalar_type_is_rejected),
        cmocka_unit_test(count_beyond_the_index_type_is_refused),
        cmocka_unit_test(period_must_exceed_twice_the_radius),
        cmocka_unit_test(skin_list_needs_radius_plus_skin_below_half_period),
        cmocka_unit_test(period_must_be_finite_and_not_negative),
        cmocka_unit_test(hash_table_size_must_be_a_power_of_two),
        cmocka_unit_test(bad_grid_options_are_rejected),
        cmocka_unit_test(default_desc_is_documented),
        cmocka_unit_test(queries_must_have_the_points_dimension),
        cmocka_unit_test(a_fault_every_structure_refuses_comes_first),
        cmocka_unit_test(update_with_another_count_rebuilds_or_is_rejected),
        cmocka_unit_test(negative_or_nan_skin_is_rejected),
        cmocka_unit_test(nan_or_infinite_coordinate_is_a_data_error_naming_the_point),
        cmocka_unit_test(every_allocation_failure_is_reported_and_cleaned_up),
        cmocka_unit_test(pair_buffer_reserve_reports_refused_memory),
        cmocka_unit_test(every_status_has_a_distinct_name),
        cmocka_unit_test(last_error_is_per_thread),
    };
    return cmocka_run_group_tests_name("errors", tests, NULL, NULL);
}
