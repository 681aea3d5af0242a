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

#include "check.h"
#include "rng.h"

/* ---- configurations ------------------------------------------------------ */

typedef struct config {
    const char *name;
    prox_broad_algo algo;
    double cell_size;
    int64_t table_size;
    bool growable;
    int min_class, max_class;
} config;

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
};
#define CONFIG_COUNT ((int)(sizeof CONFIGS / sizeof CONFIGS[0]))
static const config BRUTE = {"brute", PROX_BROAD_BRUTE, 0, 0, false, 0, 0};

static prox_broad *create(const config *c, int threads)
{
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = c->algo;
    d.cell_size = c->cell_size;
    d.table_size = c->table_size;
    d.growable_table = c->growable;
    d.min_class = c->min_class;
    d.max_class = c->max_class;
    d.threads = threads;
    prox_broad *b = NULL;
    CHECK_STATUS(prox_broad_create(&d, &b), PROX_OK, c->name);
    return b;
}

/* ---- scenes --------------------------------------------------------------- */

/* Packed boxes (min corner, max corner) and their float copies; with f32
 * the doubles hold the float values, so that the oracle sees what the
 * library sees. */
typedef struct box_set {
    int dim;
    int64_t n;
    double *d;
    float *f;
} box_set;

typedef struct point_set {
    int dim;
    int64_t n;
    double *d;
    float *f;
} point_set;

typedef struct scene {
    const char *name;
    int dim;
    bool f32;
    box_set boxes, queries, from, to;
    point_set starts, ends;
} scene;

static void box_set_alloc(box_set *s, int dim, int64_t n)
{
    s->dim = dim;
    s->n = n;
    s->d = calloc((size_t)(2 * dim * n + 1), sizeof(double));
    s->f = calloc((size_t)(2 * dim * n + 1), sizeof(float));
}

static void point_set_alloc(point_set *s, int dim, int64_t n)
{
    s->dim = dim;
    s->n = n;
    s->d = calloc((size_t)(dim * n + 1), sizeof(double));
    s->f = calloc((size_t)(dim * n + 1), sizeof(float));
}

static double *box_at(const box_set *s, int64_t i)
{
    return s->d + 2 * s->dim * i;
}

/* Round to float when f32 (the doubles then hold what the library reads),
 * keeping min <= max. */
static void finish(double *v, float *f, int64_t count, bool f32)
{
    for (int64_t k = 0; k < count; k++) {
        f[k] = (float)v[k];
        if (f32)
            v[k] = f[k];
    }
}

static prox_boxes box_view(const box_set *s, bool f32)
{
    return f32 ? prox_boxes_f32(s->f, s->n, s->dim) : prox_boxes_f64(s->d, s->n, s->dim);
}

static prox_points point_view(const point_set *s, bool f32)
{
    return f32 ? prox_points_f32(s->f, s->n, s->dim) : prox_points_f64(s->d, s->n, s->dim);
}

/* A box with edges 2^U(lo_exp, hi_exp) at a uniform place. */
static void random_box(rng *r, int dim, double origin, double side, double lo_exp,
                       double hi_exp, double *b)
{
    for (int k = 0; k < dim; k++) {
        double e = exp2(rng_range(r, lo_exp, hi_exp - lo_exp));
        b[k] = origin + rng_range(r, 0, side);
        b[dim + k] = b[k] + e;
    }
}

/* Mixed sizes, with the special cases mixed in. */
static double max_edge_exp = 15; /* edges 2^-4 .. 2^max_edge_exp */

static void mixed_boxes(box_set *s, rng *r, int dim, int64_t n, double origin, double side)
{
    box_set_alloc(s, dim, n);
    for (int64_t i = 0; i < n; i++) {
        double *b = box_at(s, i);
        random_box(r, dim, origin, side, -4, max_edge_exp, b);
        if (i % 13 == 5)
            b[dim + 1] = b[1]; /* zero extent along y */
        if (i % 17 == 3)
            for (int k = 0; k < dim; k++)
                b[dim + k] = b[k]; /* a point */
        if (i % 19 == 7 && i > 0) { /* touching the previous box along x */
            const double *p = box_at(s, i - 1);
            double w = b[dim] - b[0];
            b[0] = p[dim];
            b[dim] = b[0] + w;
            for (int k = 1; k < dim; k++) {
                b[k] = p[k];
                b[dim + k] = p[dim + k] + 1;
            }
        }
        if (i % 23 == 11 && i > 0)
            memcpy(b, box_at(s, i - 1), 2 * (size_t)dim * sizeof(double)); /* a copy */
        if (i % 29 == 1) /* larger than anything: wider than the side */
            b[dim] = b[0] + 2 * side;
    }
}

/* Segments: random, of length 0, axis-parallel, ending exactly on a face of
 * a built box, starting on a corner. */
static void segments(scene *sc, rng *r, int64_t m, double origin, double side)
{
    int dim = sc->dim;
    point_set_alloc(&sc->starts, dim, m);
    point_set_alloc(&sc->ends, dim, m);
    for (int64_t q = 0; q < m; q++) {
        double *a = sc->starts.d + dim * q, *z = sc->ends.d + dim * q;
        double len = exp2(rng_range(r, -4, 16));
        for (int k = 0; k < dim; k++) {
            a[k] = origin + rng_range(r, 0, side);
            z[k] = a[k] + len * rng_range(r, -1, 2);
        }
        if (q % 5 == 0)
            memcpy(z, a, (size_t)dim * sizeof(double));
        if (q % 7 == 1)
            for (int k = 1; k < dim; k++)
                z[k] = a[k];
        if (sc->boxes.n > 0 && q % 9 == 2) { /* end on the min-x face of a box */
            const double *b = box_at(&sc->boxes, rng_below(r, sc->boxes.n));
            z[0] = b[0];
            for (int k = 1; k < dim; k++)
                z[k] = b[k] + 0.5 * (b[dim + k] - b[k]);
            a[0] = z[0] - 3;
        }
        if (sc->boxes.n > 0 && q % 11 == 3) /* start on a corner */
            memcpy(a, box_at(&sc->boxes, rng_below(r, sc->boxes.n)) + dim,
                   (size_t)dim * sizeof(double));
    }
    finish(sc->starts.d, sc->starts.f, dim * m, sc->f32);
    finish(sc->ends.d, sc->ends.f, dim * m, sc->f32);
}

static void swept(scene *sc, rng *r, int64_t m, double origin, double side)
{
    mixed_boxes(&sc->from, r, sc->dim, m, origin, side);
    box_set_alloc(&sc->to, sc->dim, m);
    for (int64_t q = 0; q < m; q++) {
        double *f = box_at(&sc->from, q), *t = box_at(&sc->to, q);
        for (int k = 0; k < sc->dim; k++) {
            double step = rng_range(r, -64, 128);
            t[k] = f[k] + step;
            t[sc->dim + k] = f[sc->dim + k] + step;
        }
    }
}

typedef enum scene_kind { SCENE_MIXED, SCENE_OFFSET, SCENE_EMPTY, SCENE_ONE, SCENE_SAME } scene_kind;

static void scene_make(scene *sc, scene_kind kind, int dim, bool f32, int64_t n, int64_t m)
{
    memset(sc, 0, sizeof *sc);
    sc->dim = dim;
    sc->f32 = f32;
    rng r = rng_seeded(1000 + 10 * (uint64_t)kind + (uint64_t)dim);
    double origin = kind == SCENE_OFFSET ? 1e9 : -3e4, side = 65536;
    int64_t count = kind == SCENE_EMPTY ? 0 : kind == SCENE_ONE ? 1 : n;
    static const char *names[] = {"mixed sizes", "1e9 offsets", "N = 0", "N = 1",
                                  "all boxes identical"};
    sc->name = names[kind];
    mixed_boxes(&sc->boxes, &r, dim, count, origin, side);
    if (kind == SCENE_SAME)
        for (int64_t i = 1; i < count; i++)
            memcpy(box_at(&sc->boxes, i), box_at(&sc->boxes, 0),
                   2 * (size_t)dim * sizeof(double));
    finish(sc->boxes.d, sc->boxes.f, 2 * dim * count, f32);
    mixed_boxes(&sc->queries, &r, dim, m, origin, side);
    finish(sc->queries.d, sc->queries.f, 2 * dim * m, f32);
    segments(sc, &r, 2 * m, origin, side);
    swept(sc, &r, m, origin, side);
    finish(sc->from.d, sc->from.f, 2 * dim * m, f32);
    finish(sc->to.d, sc->to.f, 2 * dim * m, f32);
}

static void scene_free(scene *sc)
{
    box_set *b[] = {&sc->boxes, &sc->queries, &sc->from, &sc->to};
    for (int k = 0; k < 4; k++) {
        free(b[k]->d);
        free(b[k]->f);
    }
    free(sc->starts.d);
    free(sc->starts.f);
    free(sc->ends.d);
    free(sc->ends.f);
}

/* ---- running a query kind ---------------------------------------------------- */

typedef enum query_kind {
    Q_PAIRS, Q_BOXES, Q_SEGMENTS, Q_SEGMENTS_BROAD, Q_SWEPT, Q_KINDS
} query_kind;
static const char *const kind_names[] = {"self pairs", "box queries", "segments (exact)",
                                         "segments (broad only)", "swept boxes"};

static prox_status run_kind(prox_broad *b, const scene *sc, query_kind k, prox_sink sink,
                            prox_stats *stats)
{
    prox_boxes q = box_view(&sc->queries, sc->f32), from = box_view(&sc->from, sc->f32),
               to = box_view(&sc->to, sc->f32);
    prox_points s0 = point_view(&sc->starts, sc->f32), s1 = point_view(&sc->ends, sc->f32);
    switch (k) {
    case Q_PAIRS: return prox_broad_pairs(b, sink, stats);
    case Q_BOXES: return prox_broad_query_boxes(b, &q, sink, stats);
    case Q_SEGMENTS: return prox_broad_query_segments(b, &s0, &s1, true, sink, stats);
    case Q_SEGMENTS_BROAD: return prox_broad_query_segments(b, &s0, &s1, false, sink, stats);
    case Q_SWEPT: return prox_broad_query_swept(b, &from, &to, sink, stats);
    default: return PROX_ERR_INVALID;
    }
}

typedef struct result {
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair *called; /* callback order */
    int64_t called_count, called_capacity, count;
} result;

static int collect(prox_index i, prox_index j, void *user)
{
    result *r = user;
    if (r->called_count == r->called_capacity) {
        r->called_capacity = r->called_capacity ? 2 * r->called_capacity : 1024;
        r->called = realloc(r->called, (size_t)r->called_capacity * sizeof(prox_pair));
    }
    r->called[r->called_count++] = (prox_pair){i, j};
    return 0;
}

static void result_free(result *r)
{
    prox_pair_buffer_free(&r->buffer);
    prox_lists_free(&r->lists);
    free(r->called);
    memset(r, 0, sizeof *r);
}

/* Every sink of one query kind, on a structure built over the scene. */
static void run_all_sinks(const config *c, const scene *sc, query_kind k, int threads,
                          result *r, const char *context)
{
    memset(r, 0, sizeof *r);
    prox_pair_buffer_init(&r->buffer, NULL);
    prox_lists_init(&r->lists, NULL);
    prox_broad *b = create(c, threads);
    prox_boxes boxes = box_view(&sc->boxes, sc->f32);
    CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, context);
    prox_stats st;
    CHECK_STATUS(run_kind(b, sc, k, prox_sink_buffer(&r->buffer), &st), PROX_OK, context);
    CHECK(st.pairs == r->buffer.count, context, "stats.pairs %lld, buffer %lld",
          (long long)st.pairs, (long long)r->buffer.count);
    CHECK_STATUS(run_kind(b, sc, k, prox_sink_lists(&r->lists), NULL), PROX_OK, context);
    CHECK_STATUS(run_kind(b, sc, k, prox_sink_count(), &st), PROX_OK, context);
    r->count = st.pairs;
    CHECK_STATUS(run_kind(b, sc, k, prox_sink_callback(collect, r), NULL), PROX_OK, context);
    prox_broad_destroy(b);
}

static int compare_pairs(const void *a, const void *b)
{
    const prox_pair *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

static void expect_same_result(const result *want, const result *got, bool symmetric,
                               const char *context)
{
    CHECK(got->buffer.count == want->buffer.count, context, "%lld pairs, brute force %lld",
          (long long)got->buffer.count, (long long)want->buffer.count);
    for (int64_t p = 0; p < want->buffer.count; p++)
        CHECK(got->buffer.pairs[p].i == want->buffer.pairs[p].i &&
                  got->buffer.pairs[p].j == want->buffer.pairs[p].j,
              context, "pair %lld is (%u, %u), brute force (%u, %u)", (long long)p,
              got->buffer.pairs[p].i, got->buffer.pairs[p].j, want->buffer.pairs[p].i,
              want->buffer.pairs[p].j);
    CHECK(got->count == want->buffer.count, context, "count sink %lld, expected %lld",
          (long long)got->count, (long long)want->buffer.count);
    CHECK(got->lists.rows == want->lists.rows, context, "%lld rows, expected %lld",
          (long long)got->lists.rows, (long long)want->lists.rows);
    int64_t entries = want->lists.offsets[want->lists.rows];
    CHECK(entries == want->buffer.count * (symmetric ? 2 : 1), context, "lists hold %lld",
          (long long)entries);
    CHECK(memcmp(got->lists.offsets, want->lists.offsets,
                 (size_t)(want->lists.rows + 1) * sizeof(int64_t)) == 0,
          context, "list offsets differ");
    CHECK(memcmp(got->lists.indices, want->lists.indices, (size_t)entries * sizeof(prox_index)) ==
              0,
          context, "list entries differ");
    /* the callback delivers the same pairs (in traversal order) */
    CHECK(got->called_count == want->buffer.count, context, "callback called %lld times",
          (long long)got->called_count);
    prox_pair *sorted = malloc((size_t)(got->called_count + 1) * sizeof(prox_pair));
    bool same = true;
    if (got->called_count > 0) {
        memcpy(sorted, got->called, (size_t)got->called_count * sizeof(prox_pair));
        qsort(sorted, (size_t)got->called_count, sizeof(prox_pair), compare_pairs);
        same = memcmp(sorted, want->buffer.pairs,
                      (size_t)got->called_count * sizeof(prox_pair)) == 0;
    }
    free(sorted);
    CHECK(same, context, "callback pairs differ from the buffer");
}

/* ---- the naive oracle (independent of the library) ---------------------------- */

static bool naive_overlap(const double *a, const double *b, int dim)
{
    for (int k = 0; k < dim; k++)
        if (a[dim + k] < b[k] || b[dim + k] < a[k])
            return false;
    return true;
}

/* The query box of query q of kind k (not for exact segments). */
static void naive_query_box(const scene *sc, query_kind k, int64_t q, double *out)
{
    int dim = sc->dim;
    switch (k) {
    case Q_BOXES: memcpy(out, box_at(&sc->queries, q), 2 * (size_t)dim * sizeof(double)); break;
    case Q_SWEPT: {
        const double *f = box_at(&sc->from, q), *t = box_at(&sc->to, q);
        for (int a = 0; a < dim; a++) {
            out[a] = fmin(f[a], t[a]);
            out[dim + a] = fmax(f[dim + a], t[dim + a]);
        }
        break;
    }
    default: {
        const double *s = sc->starts.d + dim * q, *e = sc->ends.d + dim * q;
        for (int a = 0; a < dim; a++) {
            out[a] = fmin(s[a], e[a]);
            out[dim + a] = fmax(s[a], e[a]);
        }
    }
    }
}

static int64_t naive_count(const scene *sc, query_kind k)
{
    int64_t count = 0, n = sc->boxes.n;
    if (k == Q_PAIRS) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n; j++)
                count += naive_overlap(box_at(&sc->boxes, i), box_at(&sc->boxes, j), sc->dim);
        return count;
    }
    int64_t m = k == Q_BOXES ? sc->queries.n : k == Q_SWEPT ? sc->from.n : sc->starts.n;
    for (int64_t q = 0; q < m; q++) {
        double box[6];
        naive_query_box(sc, k, q, box);
        for (int64_t j = 0; j < n; j++)
            count += naive_overlap(box, box_at(&sc->boxes, j), sc->dim);
    }
    return count;
}

/* ---- tests -------------------------------------------------------------------- */

static void check_scene(const scene *sc, const config *const *configs, int config_count)
{
    for (int k = 0; k < Q_KINDS; k++) {
        char context[256];
        snprintf(context, sizeof context, "brute, %s, %dD %s, %s", sc->name, sc->dim,
                 sc->f32 ? "f32" : "f64", kind_names[k]);
        result want;
        run_all_sinks(&BRUTE, sc, (query_kind)k, 1, &want, context);
        if (k != Q_SEGMENTS) {
            int64_t naive = naive_count(sc, (query_kind)k);
            CHECK(want.buffer.count == naive, context, "brute force %lld, naive loops %lld",
                  (long long)want.buffer.count, (long long)naive);
        }
        for (int c = 0; c < config_count; c++) {
            snprintf(context, sizeof context, "%s, %s, %dD %s, %s", configs[c]->name, sc->name,
                     sc->dim, sc->f32 ? "f32" : "f64", kind_names[k]);
            result got;
            run_all_sinks(configs[c], sc, (query_kind)k, 2, &got, context);
            expect_same_result(&want, &got, k == Q_PAIRS, context);
            result_free(&got);
        }
        result_free(&want);
    }
}

static const config *const *all_configs(void)
{
    static const config *list[CONFIG_COUNT];
    for (int c = 0; c < CONFIG_COUNT; c++)
        list[c] = &CONFIGS[c];
    return list;
}

static void run_scene(scene_kind kind, int n, int m)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int f32 = 0; f32 <= 1; f32++) {
            scene sc;
            scene_make(&sc, kind, dim, f32, n, m);
            check_scene(&sc, all_configs(), CONFIG_COUNT);
            scene_free(&sc);
        }
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
        for (int k = 0; k < (c == 0 ? 1 : Q_KINDS); k++) { /* brute: its triangle split */
            char context[256];
            snprintf(context, sizeof context, "%s, %s, threads 1 vs 2 vs 3", picks[c]->name,
                     kind_names[k]);
            result one;
            run_all_sinks(picks[c], &sc, (query_kind)k, 1, &one, context);
            for (int t = 2; t <= 3; t++) {
                result many;
                run_all_sinks(picks[c], &sc, (query_kind)k, t, &many, context);
                expect_same_result(&one, &many, k == Q_PAIRS, context);
                CHECK(one.called_count == 0 ||
                          memcmp(one.called, many.called,
                                 (size_t)one.called_count * sizeof(prox_pair)) == 0,
                      context, "callback order differs with %d threads", t);
                result_free(&many);
            }
            result_free(&one);
        }
    scene_free(&sc);
}

typedef struct stopper {
    int64_t calls, stop_at;
} stopper;

static int stop_after(prox_index i, prox_index j, void *user)
{
    (void)i;
    (void)j;
    stopper *s = user;
    return ++s->calls >= s->stop_at;
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
        for (int k = 0; k < Q_KINDS; k++) {
            stopper s = {0, 5};
            prox_stats st;
            CHECK_STATUS(run_kind(b, &sc, (query_kind)k, prox_sink_callback(stop_after, &s), &st),
                         PROX_STOPPED, cfg->name);
            CHECK(s.calls == 5 && st.pairs == 5, cfg->name, "%s: %lld calls, %lld pairs",
                  kind_names[k], (long long)s.calls, (long long)st.pairs);
        }
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

/* Updates: moves inside cells, moves across cells, boxes added and removed,
 * many moved, a box leaving the data's extent; after each, every query
 * kind equals brute force over the new boxes, and the hierarchical hash
 * relocates (not rebuilds) while few boxes changed. */
static void check_against_fresh_brute(prox_broad *b, const scene *sc, const char *context)
{
    for (int k = 0; k < Q_KINDS; k++) {
        result want;
        run_all_sinks(&BRUTE, sc, (query_kind)k, 1, &want, context);
        prox_pair_buffer buf;
        prox_pair_buffer_init(&buf, NULL);
        CHECK_STATUS(run_kind(b, sc, (query_kind)k, prox_sink_buffer(&buf), NULL), PROX_OK,
                     context);
        CHECK(buf.count == want.buffer.count &&
                  (buf.count == 0 || memcmp(buf.pairs, want.buffer.pairs,
                                            (size_t)buf.count * sizeof(prox_pair)) == 0),
              context, "%s: %lld pairs, brute force %lld", kind_names[k], (long long)buf.count,
              (long long)want.buffer.count);
        prox_pair_buffer_free(&buf);
        result_free(&want);
    }
}

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

/* Allocation failures: with an allocator that fails after k allocations,
 * every call returns PROX_OK or PROX_ERR_NO_MEMORY, never crashes and
 * leaks nothing (the sanitizer build checks leaks); some k succeeds. */
typedef struct failing_allocator {
    int64_t left;
} failing_allocator;

static void *failing_alloc(size_t size, void *user)
{
    failing_allocator *f = user;
    if (f->left <= 0)
        return NULL;
    f->left--;
    return malloc(size);
}

static void failing_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

static prox_status run_with_allocations(const config *c, const scene *sc, int64_t budget)
{
    failing_allocator f = {budget};
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = c->algo;
    d.table_size = c->table_size;
    d.growable_table = c->growable;
    d.threads = 1;
    d.allocator = (prox_allocator){failing_alloc, failing_free, &f};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mixed_sizes_match_brute_force),
        cmocka_unit_test(offsets_of_1e9_match_brute_force),
        cmocka_unit_test(empty_and_single_match_brute_force),
        cmocka_unit_test(identical_boxes_match_brute_force),
        cmocka_unit_test(results_do_not_depend_on_threads),
        cmocka_unit_test(callback_can_stop_early),
        cmocka_unit_test(rebuilds_and_updates_forget_old_boxes),
        cmocka_unit_test(stats_are_consistent),
        cmocka_unit_test(updates_match_brute_force),
        cmocka_unit_test(allocation_failures_are_reported),
    };
    return cmocka_run_group_tests_name("broad", tests, NULL, NULL);
}
