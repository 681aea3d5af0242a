/* test_faults.c: fault injection over every structure, sink and thread
 * count. Each subject (a sequence of calls that allocates through one
 * prox_allocator and frees all it made) runs once with an allocator that
 * never fails, which gives its result and how many allocations it asks for;
 * then again, for every N below that count, with an allocator that refuses
 * only the Nth request, and with one that refuses the Nth and every later
 * one. Each run must end in PROX_ERR_NO_MEMORY (with a message) or in
 * PROX_OK with the same result, byte for byte, and leave no block
 * allocated. (test_errors checks the budget form on the points family's
 * scenarios; under `make asan` LeakSanitizer watches both.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "prox/prox.h"
#include "rng.h"

/* ---- the failing allocator ----------------------------------------------- */

typedef struct fault_hook {
    atomic_llong requests, live, foreign;
    long long fail_at; /* < 0: never */
    bool and_after;    /* refuse every request from fail_at on */
} fault_hook;

#define HEADER 16
#define MAGIC 0x7a11u

static void *fault_alloc(size_t size, void *user)
{
    fault_hook *h = user;
    long long n = atomic_fetch_add(&h->requests, 1);
    if (h->fail_at >= 0 && (n == h->fail_at || (h->and_after && n > h->fail_at)))
        return NULL;
    unsigned char *block = malloc(size + HEADER);
    if (!block)
        return NULL;
    unsigned magic = MAGIC;
    memcpy(block, &magic, sizeof magic);
    atomic_fetch_add(&h->live, 1);
    return block + HEADER;
}

static void fault_free(void *ptr, void *user)
{
    fault_hook *h = user;
    if (!ptr)
        return;
    unsigned char *block = (unsigned char *)ptr - HEADER;
    unsigned magic;
    memcpy(&magic, block, sizeof magic);
    if (magic != MAGIC) {
        atomic_fetch_add(&h->foreign, 1);
        return;
    }
    memset(block, 0, sizeof magic);
    atomic_fetch_sub(&h->live, 1);
    free(block);
}

static prox_allocator hook_reset(fault_hook *h, long long fail_at, bool and_after)
{
    atomic_store(&h->requests, 0);
    atomic_store(&h->live, 0);
    atomic_store(&h->foreign, 0);
    h->fail_at = fail_at;
    h->and_after = and_after;
    return (prox_allocator){fault_alloc, fault_free, h};
}

/* ---- results as one fingerprint ------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0x100000001B3ull;
}

enum { SINK_COUNT, SINK_BUFFER, SINK_BUFFER_UNSORTED, SINK_LISTS, SINK_LISTS_UNSORTED,
       SINK_CALLBACK, SINKS };
static const char *const sink_names[] = {"count", "buffer", "unsorted buffer", "lists",
                                         "unsorted lists", "callback"};

typedef struct sink_state {
    int kind;
    prox_pair_buffer buffer;
    prox_lists lists;
    uint64_t called; /* fingerprint of the callback's pairs, in order */
    int64_t pairs;   /* stats.pairs */
} sink_state;

static int on_pair(prox_index i, prox_index j, void *user)
{
    sink_state *s = user;
    s->called = mix(mix(s->called, i), j);
    return 0;
}

static prox_sink sink_open(sink_state *s, int kind, const prox_allocator *hook)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    prox_pair_buffer_init(&s->buffer, hook);
    prox_lists_init(&s->lists, hook);
    switch (kind) {
    case SINK_BUFFER: return prox_sink_buffer(&s->buffer);
    case SINK_BUFFER_UNSORTED: return prox_sink_unsorted(prox_sink_buffer(&s->buffer));
    case SINK_LISTS: return prox_sink_lists(&s->lists);
    case SINK_LISTS_UNSORTED: return prox_sink_unsorted(prox_sink_lists(&s->lists));
    case SINK_CALLBACK: return prox_sink_callback(on_pair, s);
    default: return prox_sink_count();
    }
}

/* The sink's content, folded into h, then released (a failed call leaves
 * the content unspecified: only released then). */
static uint64_t sink_close(sink_state *s, uint64_t h, prox_status status)
{
    if (status != PROX_OK) {
        prox_pair_buffer_free(&s->buffer);
        prox_lists_free(&s->lists);
        return h;
    }
    h = mix(h, (uint64_t)s->pairs);
    if (s->kind == SINK_BUFFER || s->kind == SINK_BUFFER_UNSORTED)
        for (int64_t k = 0; k < s->buffer.count; k++)
            h = mix(mix(h, s->buffer.pairs[k].i), s->buffer.pairs[k].j);
    if ((s->kind == SINK_LISTS || s->kind == SINK_LISTS_UNSORTED) && s->lists.offsets) {
        for (int64_t r = 0; r <= s->lists.rows; r++)
            h = mix(h, (uint64_t)s->lists.offsets[r]);
        for (int64_t e = 0; e < s->lists.offsets[s->lists.rows]; e++)
            h = mix(h, s->lists.indices[e]);
    }
    h = mix(h, s->called);
    prox_pair_buffer_free(&s->buffer);
    prox_lists_free(&s->lists);
    return h;
}

/* ---- subjects -------------------------------------------------------------- */

typedef struct subject subject;
typedef prox_status (*subject_fn)(const subject *s, const prox_allocator *hook, uint64_t *result);

struct subject {
    char name[160];
    subject_fn run;
    int variant; /* algorithm or structure */
    int sink;
    int threads;
};

#define POINTS 240
static double points_xyz[3 * POINTS], moved_xyz[3 * POINTS];
#define BOXES 160
static double boxes_f64[6 * BOXES], moved_f64[6 * BOXES];

/* Clustered points (a quarter in a small ball, duplicates included) and the
 * same points moved a little; boxes of mixed sizes. */
static void make_inputs(void)
{
    rng r = rng_seeded(25);
    for (int i = 0; i < POINTS; i++)
        for (int k = 0; k < 3; k++) {
            double v = i % 4 == 0 ? rng_range(&r, 4.0, 0.3) : rng_range(&r, 0.0, 8.0);
            points_xyz[3 * i + k] = i % 17 == 1 ? points_xyz[3 * (i - 1) + k] : v;
            moved_xyz[3 * i + k] = points_xyz[3 * i + k] + rng_range(&r, -0.05, 0.1);
        }
    for (int b = 0; b < BOXES; b++)
        for (int k = 0; k < 3; k++) {
            double lo = rng_range(&r, 0.0, 10.0), edge = b % 13 == 0 ? 3.0 : rng_range(&r, 0.0, 0.8);
            boxes_f64[6 * b + k] = lo;
            boxes_f64[6 * b + 3 + k] = lo + edge;
            moved_f64[6 * b + k] = lo + 0.1;
            moved_f64[6 * b + 3 + k] = lo + edge + 0.1;
        }
}

typedef struct points_variant {
    const char *name;
    prox_algo algo;
    prox_keys keys;
    prox_rows rows;
    int divisions;
} points_variant;

static const points_variant point_variants[] = {
    {"grid linear", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_ROWS_STAGED, 1},
    {"grid linear in-place", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_ROWS_IN_PLACE, 1},
    {"grid linear in-output", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_ROWS_IN_OUTPUT, 1},
    {"grid linear div2", PROX_ALGO_GRID, PROX_KEYS_LINEAR, PROX_ROWS_STAGED, 2},
    {"grid morton", PROX_ALGO_GRID, PROX_KEYS_MORTON, PROX_ROWS_STAGED, 1},
    {"grid hash", PROX_ALGO_GRID, PROX_KEYS_HASH, PROX_ROWS_STAGED, 1},
    {"brute", PROX_ALGO_BRUTE, PROX_KEYS_LINEAR, PROX_ROWS_STAGED, 1},
    {"hierarchical", PROX_ALGO_HIERARCHICAL, PROX_KEYS_LINEAR, PROX_ROWS_STAGED, 1},
};
#define POINT_VARIANTS (int)(sizeof point_variants / sizeof point_variants[0])

static prox_grid_desc points_desc(const subject *s, const prox_allocator *hook)
{
    const points_variant *v = &point_variants[s->variant];
    prox_grid_desc d = prox_default_grid_desc();
    d.radius = 0.7;
    d.keys = v->keys;
    d.rows = v->rows;
    d.cell_divisions = v->divisions;
    d.threads = s->threads;
    d.allocator = *hook;
    return d;
}

/* prox_pairs, then prox_query of the moved points. */
static prox_status one_shot(const subject *s, const prox_allocator *hook, uint64_t *result)
{
    prox_grid_desc d = points_desc(s, hook);
    prox_points p = prox_points_f64(points_xyz, POINTS, 3), q = prox_points_f64(moved_xyz, POINTS, 3);
    prox_algo algo = point_variants[s->variant].algo;
    sink_state a, b;
    prox_stats st = {0};
    prox_status status = prox_pairs(&p, &d, algo, sink_open(&a, s->sink, hook), &st);
    a.pairs = st.pairs;
    *result = sink_close(&a, 0, status);
    if (status == PROX_OK) {
        status = prox_query(&p, &q, &d, algo, sink_open(&b, s->sink, hook), &st);
        b.pairs = st.pairs;
        *result = sink_close(&b, *result, status);
    }
    return status;
}

/* A grid object: create, build, pairs, update to the moved points, pairs,
 * query, trim. */
static prox_status grid_object(const subject *s, const prox_allocator *hook, uint64_t *result)
{
    prox_grid_desc d = points_desc(s, hook);
    prox_points p = prox_points_f64(points_xyz, POINTS, 3), q = prox_points_f64(moved_xyz, POINTS, 3);
    prox_grid *g = NULL;
    *result = 0;
    prox_status status = prox_grid_create(&d, &g);
    for (int step = 0; status == PROX_OK && step < 3; step++) {
        sink_state a;
        prox_stats st = {0};
        if (step == 0)
            status = prox_grid_build(g, &p);
        if (step == 1)
            status = prox_grid_update(g, &q, NULL);
        if (status != PROX_OK)
            break;
        prox_sink sink = sink_open(&a, s->sink, hook);
        status = step < 2 ? prox_grid_pairs(g, sink, &st) : prox_grid_query(g, &p, sink, &st);
        a.pairs = st.pairs;
        *result = sink_close(&a, *result, status);
    }
    prox_grid_trim(g);
    prox_grid_destroy(g);
    return status;
}

static prox_status skin_list(const subject *s, const prox_allocator *hook, uint64_t *result)
{
    prox_grid_desc d = points_desc(s, hook);
    prox_points steps[2] = {prox_points_f64(points_xyz, POINTS, 3),
                            prox_points_f64(moved_xyz, POINTS, 3)};
    prox_skin_list *l = NULL;
    *result = 0;
    prox_status status = prox_skin_list_create(&d, 0.2, &l);
    for (int t = 0; status == PROX_OK && t < 2; t++) {
        sink_state a;
        prox_stats st = {0};
        status = prox_skin_list_pairs(l, &steps[t], sink_open(&a, s->sink, hook), &st);
        a.pairs = st.pairs;
        *result = sink_close(&a, *result, status);
    }
    prox_skin_list_destroy(l);
    return status;
}

static int on_block(const prox_pair *pairs, int64_t count, void *user)
{
    uint64_t *h = user;
    for (int64_t k = 0; k < count; k++)
        *h = mix(mix(*h, pairs[k].i), pairs[k].j);
    return 0;
}

/* prox_pairs_stream, sorted (sink == 0) or not, in blocks of 97 pairs. */
static prox_status stream(const subject *s, const prox_allocator *hook, uint64_t *result)
{
    prox_grid_desc d = points_desc(s, hook);
    prox_points p = prox_points_f64(points_xyz, POINTS, 3);
    *result = 0;
    return prox_pairs_stream(&p, &d, point_variants[s->variant].algo, s->sink == 0, 97, on_block,
                             result, NULL);
}

/* A broad-phase object over every query kind, then an update. */
static prox_status broad(const subject *s, const prox_allocator *hook, uint64_t *result)
{
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = (prox_broad_algo)s->variant;
    d.threads = s->threads;
    d.allocator = *hook;
    prox_boxes boxes = prox_boxes_f64(boxes_f64, BOXES, 3);
    prox_boxes moved = prox_boxes_f64(moved_f64, BOXES, 3);
    prox_points starts = prox_points_strided(boxes_f64, BOXES, 3, PROX_F64, 6 * sizeof(double));
    prox_points ends = prox_points_strided(moved_f64 + 3, BOXES, 3, PROX_F64, 6 * sizeof(double));
    prox_broad *b = NULL;
    *result = 0;
    prox_status status = prox_broad_create(&d, &b);
    if (status == PROX_OK)
        status = prox_broad_build(b, &boxes);
    for (int step = 0; status == PROX_OK && step < 6; step++) {
        sink_state a;
        prox_stats st = {0};
        prox_sink sink = sink_open(&a, s->sink, hook);
        switch (step) {
        case 0: status = prox_broad_pairs(b, sink, &st); break;
        case 1: status = prox_broad_query_boxes(b, &moved, sink, &st); break;
        case 2: status = prox_broad_query_segments(b, &starts, &ends, true, sink, &st); break;
        case 3: status = prox_broad_query_swept(b, &boxes, &moved, sink, &st); break;
        case 4:
            status = prox_broad_update(b, &moved, NULL);
            if (status == PROX_OK)
                status = prox_broad_pairs(b, sink, &st);
            break;
        default: status = prox_broad_query_segments(b, &starts, &ends, false, sink, &st); break;
        }
        a.pairs = st.pairs;
        *result = sink_close(&a, *result, status);
    }
    prox_broad_trim(b);
    prox_broad_destroy(b);
    return status;
}

/* ---- the driver ------------------------------------------------------------ */

static int failures;

static void report(const subject *s, const char *what, long long n, bool and_after,
                   prox_status status)
{
    failures++;
    print_error("FAILED: %s, allocation %lld refused%s: %s (status %s: %s)\n", s->name, n,
                and_after ? " and every later one" : "", what, prox_status_string(status),
                prox_last_error());
}

/* Returns the number of runs made. */
static long long inject(const subject *s)
{
    fault_hook h;
    prox_allocator hook = hook_reset(&h, -1, false);
    uint64_t want = 0, got = 0;
    prox_status status = s->run(s, &hook, &want);
    long long requests = atomic_load(&h.requests);
    if (status != PROX_OK || atomic_load(&h.live) != 0 || atomic_load(&h.foreign) != 0) {
        report(s, "the run without faults failed or leaked", -1, false, status);
        return 1;
    }
    long long runs = 1;
    for (int mode = 0; mode < 2; mode++)
        for (long long n = 0; n < requests; n++, runs++) {
            hook = hook_reset(&h, n, mode == 1);
            status = s->run(s, &hook, &got);
            if (atomic_load(&h.live) != 0 || atomic_load(&h.foreign) != 0)
                report(s, "blocks left allocated or freed twice", n, mode == 1, status);
            else if (status == PROX_ERR_NO_MEMORY && prox_last_error()[0] == '\0')
                report(s, "no message", n, mode == 1, status);
            else if (status == PROX_OK && got != want)
                report(s, "a different result", n, mode == 1, status);
            else if (status != PROX_OK && status != PROX_ERR_NO_MEMORY)
                report(s, "an unexpected status", n, mode == 1, status);
            if (failures > 20)
                return runs;
        }
    return runs;
}

static void run_all(const subject *subjects, int count)
{
    long long runs = 0;
    for (int k = 0; k < count; k++)
        runs += inject(&subjects[k]);
    print_message("%d subjects, %lld runs\n", count, runs);
    assert_int_equal(failures, 0);
}

static const int thread_counts[] = {1, 2};

static void points_family_survives_every_failed_allocation(void **state)
{
    (void)state;
    static subject subjects[POINT_VARIANTS * 2 * (SINKS + 4)];
    int count = 0;
    for (int v = 0; v < POINT_VARIANTS; v++)
        for (int t = 0; t < 2; t++) {
            const char *name = point_variants[v].name;
            int threads = thread_counts[t];
            for (int k = 0; k < SINKS; k++) {
                subject *s = &subjects[count++];
                *s = (subject){"", one_shot, v, k, threads};
                snprintf(s->name, sizeof s->name, "prox_pairs/query %s, %s sink, %d threads",
                         name, sink_names[k], threads);
            }
            for (int sorted = 0; sorted < 2; sorted++) {
                subject *s = &subjects[count++];
                *s = (subject){"", stream, v, sorted ? 0 : 1, threads};
                snprintf(s->name, sizeof s->name, "prox_pairs_stream %s, %s, %d threads", name,
                         sorted ? "sorted" : "unsorted", threads);
            }
            if (point_variants[v].algo != PROX_ALGO_GRID)
                continue;
            subject *s = &subjects[count++];
            *s = (subject){"", grid_object, v, (v + t) % SINKS, threads};
            snprintf(s->name, sizeof s->name, "grid object %s, %s sink, %d threads", name,
                     sink_names[s->sink], threads);
            s = &subjects[count++];
            *s = (subject){"", skin_list, v, (v + t + 3) % SINKS, threads};
            snprintf(s->name, sizeof s->name, "skin list %s, %s sink, %d threads", name,
                     sink_names[s->sink], threads);
        }
    run_all(subjects, count);
}

static void broad_phase_survives_every_failed_allocation(void **state)
{
    (void)state;
    static subject subjects[6 * 2 * SINKS];
    int count = 0;
    for (int algo = PROX_BROAD_BRUTE; algo <= PROX_BROAD_SAP; algo++)
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < SINKS; k++) {
                subject *s = &subjects[count++];
                *s = (subject){"", broad, algo, k, thread_counts[t]};
                snprintf(s->name, sizeof s->name, "broad %s, %s sink, %d threads",
                         prox_broad_algo_name((prox_broad_algo)algo), sink_names[k],
                         thread_counts[t]);
            }
    run_all(subjects, count);
}

int main(void)
{
    make_inputs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(points_family_survives_every_failed_allocation),
        cmocka_unit_test(broad_phase_survives_every_failed_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
