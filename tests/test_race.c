/* test_race.c: a caller whose points (or boxes) change during a call gets
 * an answer or a clean error, never a write out of bounds (run under ASan
 * and UBSan by `make asan` and `make ubsan`).
 *
 * Deterministic part: an allocator hook rewrites the caller's array at its
 * k-th allocation, for every k a call makes: the values then change between
 * the passes over the input (box, keys, gathered coordinates, recheck), the
 * interleavings a racing thread produces by chance. Racing part: a thread
 * rewrites the array while a two-thread call runs, for a bounded time. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "prox/prox.h"
#include "rng.h"

/* ---- what the array is rewritten with ------------------------------------ */

enum { MUT_NAN, MUT_INF, MUT_NEG_INF, MUT_HUGE, MUT_WIDE, MUT_FAR_CORNER, MUT_RESTORE, MUTATIONS };

/* Value written into coordinate j by mutation m (original: the value
 * before). */
static double mutated(int m, int64_t j, double original)
{
    switch (m) {
    case MUT_NAN: return NAN;
    case MUT_INF: return INFINITY;
    case MUT_NEG_INF: return -INFINITY;
    case MUT_HUGE: return j % 2 ? 1e300 : -1e300;
    case MUT_WIDE: return (double)(j % 97) * 1e6 - 4e7;
    case MUT_FAR_CORNER: return 1.0 - original; /* the other side of [0, 1] */
    default: return original;
    }
}

/* The caller's array and how the hook rewrites it. */
typedef struct victim {
    double *values, *original;
    int64_t count; /* doubles */
    int mutation;
    int64_t fire_at; /* the allocation that rewrites it (0: never) */
    int64_t allocations;
} victim;

static void rewrite(victim *v, int m)
{
    for (int64_t j = 0; j < v->count; j++)
        v->values[j] = mutated(m, j, v->original[j]);
}

static void *hook_alloc(size_t size, void *user)
{
    victim *v = user;
    if (++v->allocations == v->fire_at)
        rewrite(v, v->mutation);
    return malloc(size);
}

static void hook_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

static victim victim_make(int64_t count)
{
    victim v = {malloc((size_t)count * sizeof(double)), malloc((size_t)count * sizeof(double)),
                count, 0, 0, 0};
    assert_non_null(v.values);
    assert_non_null(v.original);
    rng r = rng_seeded(48);
    for (int64_t j = 0; j < count; j++)
        v.original[j] = rng_uniform(&r);
    memcpy(v.values, v.original, (size_t)count * sizeof(double));
    return v;
}

static void victim_free(victim *v)
{
    free(v->values);
    free(v->original);
}

static void victim_reset(victim *v, int mutation, int64_t fire_at)
{
    memcpy(v->values, v->original, (size_t)v->count * sizeof(double));
    v->mutation = mutation;
    v->fire_at = fire_at;
    v->allocations = 0;
}

/* A call's status: the answer or a clean error. */
static void assert_clean(prox_status st, int64_t pairs, int64_t n, const char *what, int m,
                         int64_t at)
{
    if (st != PROX_OK && st != PROX_ERR_DATA && st != PROX_ERR_RANGE &&
        st != PROX_ERR_NO_MEMORY && st != PROX_ERR_INVALID)
        fail_msg("%s: mutation %d at allocation %lld: status %d", what, m, (long long)at, (int)st);
    if (st == PROX_OK && (pairs < 0 || pairs > n * (n - 1) / 2))
        fail_msg("%s: mutation %d at allocation %lld: %lld pairs of %lld points", what, m,
                 (long long)at, (long long)pairs, (long long)n);
}

/* ---- points ------------------------------------------------------------- */

typedef struct variant {
    const char *name;
    prox_algo algo;
    prox_keys keys;
    prox_coords coords;
    prox_rows rows;
    double period; /* 0: open */
} variant;

static const variant variants[] = {
    {"grid linear fixed", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_FIXED, PROX_ROWS_AUTO, 0},
    {"grid linear fixed in place", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_FIXED,
     PROX_ROWS_IN_PLACE, 0},
    {"grid linear double", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_DOUBLE, PROX_ROWS_AUTO, 0},
    {"grid linear periodic", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_COORDS_AUTO, PROX_ROWS_AUTO, 1},
    {"grid morton", PROX_ALGO_GRID, PROX_KEYS_MORTON, PROX_COORDS_AUTO, PROX_ROWS_AUTO, 0},
    {"grid hash", PROX_ALGO_GRID, PROX_KEYS_HASH, PROX_COORDS_AUTO, PROX_ROWS_AUTO, 0},
    {"grid hash periodic", PROX_ALGO_GRID, PROX_KEYS_HASH, PROX_COORDS_AUTO, PROX_ROWS_AUTO, 1},
    {"brute", PROX_ALGO_BRUTE, PROX_KEYS_LINEAR, PROX_COORDS_AUTO, PROX_ROWS_AUTO, 0},
    {"hierarchical", PROX_ALGO_HIERARCHICAL, PROX_KEYS_LINEAR, PROX_COORDS_AUTO, PROX_ROWS_AUTO, 0},
};
#define VARIANTS (int)(sizeof variants / sizeof variants[0])

static prox_grid_desc desc_of(const variant *var, victim *v, int threads)
{
    prox_grid_desc d = prox_default_grid_desc();
    d.radius = 0.05;
    d.keys = var->keys;
    d.coords = var->coords;
    d.rows = var->rows;
    d.threads = threads;
    for (int k = 0; k < 3; k++)
        d.period[k] = var->period;
    d.allocator = (prox_allocator){hook_alloc, hook_free, v};
    return d;
}

/* One call of each output (count, sorted buffer, lists; 3: the points
 * queried with themselves, whose coordinates are read again as queries)
 * with the array rewritten at allocation `at`; returns the allocations it
 * made. */
static int64_t points_call(const variant *var, victim *v, int64_t n, int m, int64_t at, int task)
{
    victim_reset(v, m, at);
    prox_points p = prox_points_f64(v->values, n, 3);
    prox_grid_desc d = desc_of(var, v, 1);
    prox_stats stats = {0};
    prox_status st;
    if (task == 0) {
        st = prox_pairs(&p, &d, var->algo, prox_sink_count(), &stats);
    } else if (task == 1) {
        prox_pair_buffer buffer;
        prox_pair_buffer_init(&buffer, &d.allocator);
        st = prox_pairs(&p, &d, var->algo, prox_sink_buffer(&buffer), &stats);
        for (int64_t k = 0; st == PROX_OK && k < buffer.count; k++)
            if (!(buffer.pairs[k].i < (prox_index)n && buffer.pairs[k].j < (prox_index)n))
                fail_msg("%s: mutation %d at allocation %lld: pair (%lld, %lld) of %lld points",
                         var->name, m, (long long)at, (long long)buffer.pairs[k].i,
                         (long long)buffer.pairs[k].j, (long long)n);
        prox_pair_buffer_free(&buffer);
    } else if (task == 2) {
        prox_lists lists;
        prox_lists_init(&lists, &d.allocator);
        st = prox_pairs(&p, &d, var->algo, prox_sink_lists(&lists), &stats);
        assert_true(st != PROX_OK || lists.rows == n);
        prox_lists_free(&lists);
    } else {
        prox_lists lists;
        prox_lists_init(&lists, &d.allocator);
        st = prox_query(&p, &p, &d, var->algo, prox_sink_lists(&lists), &stats);
        prox_lists_free(&lists);
        stats.pairs = stats.pairs <= n * n ? 0 : -1; /* at most n * n hits */
    }
    assert_clean(st, stats.pairs, n, var->name, m, at);
    return v->allocations;
}

static void points_rewritten_between_passes(void **state)
{
    (void)state;
    const int64_t n = 2000;
    victim v = victim_make(3 * n);
    for (int i = 0; i < VARIANTS; i++)
        for (int task = 0; task < 4; task++) {
            int64_t calls = points_call(&variants[i], &v, n, MUT_RESTORE, 0, task);
            for (int m = 0; m < MUTATIONS; m++)
                for (int64_t at = 1; at <= calls; at++)
                    points_call(&variants[i], &v, n, m, at, task);
        }
    victim_free(&v);
}

/* ---- boxes -------------------------------------------------------------- */

static void boxes_rewritten_between_passes(void **state)
{
    (void)state;
    static const prox_broad_algo algos[] = {PROX_BROAD_BRUTE, PROX_BROAD_GRID,
                                            PROX_BROAD_MULTILEVEL, PROX_BROAD_HIERARCHICAL,
                                            PROX_BROAD_KDTREE, PROX_BROAD_SAP, PROX_BROAD_AUTO};
    const int64_t n = 1000;
    victim v = victim_make(6 * n);
    for (int64_t b = 0; b < n; b++) /* max corner = min corner + up to 0.02 */
        for (int k = 0; k < 3; k++)
            v.original[6 * b + 3 + k] = v.original[6 * b + k] + 0.02 * v.original[6 * b + 3 + k];
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++)
        for (int borrow = 0; borrow < 1; borrow++)
            for (int m = 0; m < MUTATIONS; m++)
                for (int64_t at = 1;; at++) {
                    victim_reset(&v, m, at);
                    prox_broad_desc d = prox_default_broad_desc();
                    d.algo = algos[a];
                    d.threads = 1;
                    d.borrow_boxes = borrow;
                    d.allocator = (prox_allocator){hook_alloc, hook_free, &v};
                    prox_boxes boxes = prox_boxes_f64(v.values, n, 3);
                    prox_broad *broad = NULL;
                    prox_stats stats = {0};
                    prox_status st = prox_broad_create(&d, &broad);
                    if (!st)
                        st = prox_broad_build(broad, &boxes);
                    if (!st)
                        st = prox_broad_pairs(broad, prox_sink_count(), &stats);
                    prox_broad_destroy(broad);
                    assert_clean(st, stats.pairs, n, prox_broad_algo_name(algos[a]), m, at);
                    if (v.allocations < at) /* the hook did not fire: every k done */
                        break;
                }
    victim_free(&v);
}

/* ---- a racing thread -------------------------------------------------------- */

typedef struct racer {
    victim *v;
    volatile int stop;
} racer;

/* Every 16th coordinate, from a place that moves each round: a few points
 * at a time collapse into one cell (NaN), two (1e300) or a hundred, so that
 * a call's pairs stay bounded. */
static void *race(void *arg)
{
    racer *r = arg;
    victim *v = r->v;
    for (int round = 0; !r->stop; round++) {
        for (int64_t j = round % 16; j < v->count; j += 16)
            v->values[j] = mutated(round % MUTATIONS, j, v->original[j]);
        struct timespec pause = {0, 200000}; /* 0.2 ms */
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Two-thread calls (the parallel passes start above 65536 points) on an
 * array another thread rewrites, for about two seconds. */
static void points_rewritten_by_a_thread(void **state)
{
    (void)state;
    const int64_t n = 70000;
    victim v = victim_make(3 * n);
    racer r = {&v, 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, race, &r), 0);
    double end = seconds_now() + 2.0;
    for (int call = 0; seconds_now() < end; call++) {
        const variant *var = &variants[call % VARIANTS];
        prox_points p = prox_points_f64(v.values, n, 3);
        prox_grid_desc d = prox_default_grid_desc();
        d.radius = var->algo == PROX_ALGO_BRUTE ? 1e-3 : 0.01;
        d.keys = var->keys;
        d.coords = var->coords;
        d.threads = 2;
        for (int k = 0; k < 3; k++)
            d.period[k] = var->period;
        prox_stats stats = {0};
        prox_status st;
        if (call % 4 == 3) { /* a grid object, updated: relocation reads the points again */
            d.coords = PROX_COORDS_DOUBLE;
            prox_grid *grid = NULL;
            st = prox_grid_create(&d, &grid);
            for (int step = 0; !st && step < 4; step++)
                st = step ? prox_grid_update(grid, &p, &stats) : prox_grid_build(grid, &p);
            if (!st)
                st = prox_grid_pairs(grid, prox_sink_count(), &stats);
            prox_grid_destroy(grid);
        } else if (var->algo == PROX_ALGO_BRUTE) { /* n^2: a slice of the points */
            p.count = 5000;
            st = prox_pairs(&p, &d, var->algo, prox_sink_count(), &stats);
            p.count = n;
        } else {
            prox_pair_buffer buffer;
            prox_pair_buffer_init(&buffer, NULL);
            st = prox_pairs(&p, &d, var->algo, prox_sink_buffer(&buffer), &stats);
            prox_pair_buffer_free(&buffer);
        }
        assert_clean(st, stats.pairs, n, var->name, -1, call);
    }
    r.stop = 1;
    pthread_join(thread, NULL);
    victim_free(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(points_rewritten_between_passes),
        cmocka_unit_test(boxes_rewritten_between_passes),
        cmocka_unit_test(points_rewritten_by_a_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
