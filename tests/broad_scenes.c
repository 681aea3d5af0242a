/* broad_scenes.c: the box scenes and query runners the broad-phase tests
 * share (test_broad.c, test_sap.c): mixed sizes with zero-extent boxes,
 * points, touching boxes, copies and boxes wider than the scene; 1e9
 * offsets and negative coordinates; N = 0, 1 and all boxes identical;
 * segments and swept boxes; every sink; the naive loops that check brute
 * force. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broad_scenes.h"

const config BRUTE = {"brute", PROX_BROAD_BRUTE, 0, 0, false, 0, 0};

void (*create_hook)(const config *c, prox_broad_desc *d);

prox_broad *create(const config *c, int threads)
{
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = c->algo;
    d.cell_size = c->cell_size;
    d.table_size = c->table_size;
    d.growable_table = c->growable;
    d.min_class = c->min_class;
    d.max_class = c->max_class;
    d.threads = threads;
    if (create_hook)
        create_hook(c, &d);
    prox_broad *b = NULL;
    CHECK_STATUS(prox_broad_create(&d, &b), PROX_OK, c->name);
    return b;
}

/* ---- scenes --------------------------------------------------------------- */

void box_set_alloc(box_set *s, int dim, int64_t n)
{
    s->dim = dim;
    s->n = n;
    s->d = calloc((size_t)(2 * dim * n + 1), sizeof(double));
    s->f = calloc((size_t)(2 * dim * n + 1), sizeof(float));
}

void point_set_alloc(point_set *s, int dim, int64_t n)
{
    s->dim = dim;
    s->n = n;
    s->d = calloc((size_t)(dim * n + 1), sizeof(double));
    s->f = calloc((size_t)(dim * n + 1), sizeof(float));
}

double *box_at(const box_set *s, int64_t i)
{
    return s->d + 2 * s->dim * i;
}

/* Round to float when f32 (the doubles then hold what the library reads),
 * keeping min <= max. */
void finish(double *v, float *f, int64_t count, bool f32)
{
    for (int64_t k = 0; k < count; k++) {
        f[k] = (float)v[k];
        if (f32)
            v[k] = f[k];
    }
}

prox_boxes box_view(const box_set *s, bool f32)
{
    return f32 ? prox_boxes_f32(s->f, s->n, s->dim) : prox_boxes_f64(s->d, s->n, s->dim);
}

prox_points point_view(const point_set *s, bool f32)
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
double max_edge_exp = 15;

void mixed_boxes(box_set *s, rng *r, int dim, int64_t n, double origin, double side)
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

/* Edges 0.5 .. 1, dense enough for a few overlaps per box, with the special
 * cases: zero extent along y, a point, a face-touching neighbour, a copy,
 * and corner-touching pairs of unit boxes (their centres exactly the
 * longest extents apart on every axis: the edge of the centres' ball). */
static void similar_boxes(box_set *s, rng *r, int dim, int64_t n, double origin)
{
    box_set_alloc(s, dim, n);
    double side = dim == 2 ? sqrt((double)n) : 1.3 * cbrt((double)n);
    for (int64_t i = 0; i < n; i++) {
        double *b = box_at(s, i);
        for (int k = 0; k < dim; k++) {
            b[k] = origin + rng_range(r, 0, side);
            b[dim + k] = b[k] + rng_range(r, 0.5, 0.5);
        }
        const double *p = i > 0 ? box_at(s, i - 1) : NULL;
        if (i % 13 == 5)
            b[dim + 1] = b[1];
        if (i % 31 == 4)
            for (int k = 0; k < dim; k++)
                b[dim + k] = b[k];
        if (p && i % 19 == 7) {
            double w = b[dim] - b[0];
            b[0] = p[dim];
            b[dim] = b[0] + w;
            for (int k = 1; k < dim; k++) {
                b[k] = p[k];
                b[dim + k] = p[dim + k];
            }
        }
        if (p && i % 23 == 11)
            memcpy(b, p, 2 * (size_t)dim * sizeof(double));
        if (p && i % 41 == 13) { /* one double ulp past the previous box: apart, though */
            double w = b[dim] - b[0]; /* float copies of the bounds would touch */
            b[0] = nextafter(p[dim], INFINITY);
            b[dim] = b[0] + w;
            for (int k = 1; k < dim; k++) {
                b[k] = p[k];
                b[dim + k] = p[dim + k];
            }
        }
        if (p && i % 37 == 9) {
            double *q = box_at(s, i - 1);
            for (int k = 0; k < dim; k++) {
                q[dim + k] = q[k] + 1.0;
                b[k] = q[dim + k];
                b[dim + k] = b[k] + 1.0;
            }
        }
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

void scene_make(scene *sc, scene_kind kind, int dim, bool f32, int64_t n, int64_t m)
{
    memset(sc, 0, sizeof *sc);
    sc->dim = dim;
    sc->f32 = f32;
    rng r = rng_seeded(1000 + 10 * (uint64_t)kind + (uint64_t)dim);
    bool similar = kind == SCENE_SIMILAR || kind == SCENE_SIMILAR_OFFSET;
    double origin = kind == SCENE_OFFSET || kind == SCENE_SIMILAR_OFFSET ? 1e9 : similar ? -20 : -3e4;
    double side = similar ? 40 : 65536;
    int64_t count = kind == SCENE_EMPTY ? 0 : kind == SCENE_ONE ? 1 : n;
    static const char *names[] = {"mixed sizes", "1e9 offsets", "N = 0", "N = 1",
                                  "all boxes identical", "similar sizes",
                                  "similar sizes at 1e9"};
    sc->name = names[kind];
    if (similar)
        similar_boxes(&sc->boxes, &r, dim, count, origin);
    else
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

void scene_free(scene *sc)
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

const char *const kind_names[Q_KINDS] = {"self pairs", "box queries", "segments (exact)",
                                         "segments (broad only)", "swept boxes"};

prox_status run_kind(prox_broad *b, const scene *sc, query_kind k, prox_sink sink,
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

void result_free(result *r)
{
    prox_pair_buffer_free(&r->buffer);
    prox_lists_free(&r->lists);
    free(r->called);
    memset(r, 0, sizeof *r);
}

/* Every sink of one query kind, on a structure built over the scene. */
void run_all_sinks(const config *c, const scene *sc, query_kind k, int threads,
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

void expect_same_result(const result *want, const result *got, bool symmetric,
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

void check_scene(const scene *sc, const config *const *configs, int config_count)
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

void check_against_fresh_brute(prox_broad *b, const scene *sc, const char *context)
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

void check_scene_kind(scene_kind kind, int64_t n, int64_t m, const config *const *configs,
                      int config_count)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int f32 = 0; f32 <= 1; f32++) {
            scene sc;
            scene_make(&sc, kind, dim, f32, n, m);
            check_scene(&sc, configs, config_count);
            scene_free(&sc);
        }
}

void check_threads_agree(const config *c, const scene *sc, int kinds)
{
    for (int k = 0; k < kinds; k++) {
        char context[256];
        snprintf(context, sizeof context, "%s, %dD, %s, threads 1 vs 2 vs 3", c->name,
                 sc->boxes.dim, kind_names[k]);
        result one;
        run_all_sinks(c, sc, (query_kind)k, 1, &one, context);
        for (int t = 2; t <= 3; t++) {
            result many;
            run_all_sinks(c, sc, (query_kind)k, t, &many, context);
            expect_same_result(&one, &many, k == Q_PAIRS, context);
            CHECK(one.called_count == 0 ||
                      memcmp(one.called, many.called,
                             (size_t)one.called_count * sizeof(prox_pair)) == 0,
                  context, "callback order differs with %d threads", t);
            result_free(&many);
        }
        result_free(&one);
    }
}

void check_common_scenes(const config *const *configs, int config_count)
{
    check_scene_kind(SCENE_MIXED, 700, 300, configs, config_count);
    check_scene_kind(SCENE_OFFSET, 400, 200, configs, config_count);
    check_scene_kind(SCENE_EMPTY, 0, 50, configs, config_count);
    check_scene_kind(SCENE_ONE, 1, 50, configs, config_count);
    check_scene_kind(SCENE_SAME, 60, 40, configs, config_count);
    check_scene_kind(SCENE_SIMILAR, 700, 100, configs, config_count);
    check_scene_kind(SCENE_SIMILAR_OFFSET, 400, 100, configs, config_count);
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

void check_callback_stops(prox_broad *b, const scene *sc, const char *name)
{
    for (int k = 0; k < Q_KINDS; k++) {
        stopper s = {0, 5};
        prox_stats st;
        CHECK_STATUS(run_kind(b, sc, (query_kind)k, prox_sink_callback(stop_after, &s), &st),
                     PROX_STOPPED, name);
        CHECK(s.calls == 5 && st.pairs == 5, name, "%s: %lld calls, %lld pairs", kind_names[k],
              (long long)s.calls, (long long)st.pairs);
    }
}

static void *failing_alloc(size_t size, void *user)
{
    failing_allocator *f = user;
    if (f->left <= 0)
        return NULL;
    f->left--;
    f->live++;
    return malloc(size);
}

static void failing_free(void *ptr, void *user)
{
    failing_allocator *f = user;
    f->live--;
    free(ptr);
}

prox_allocator failing_allocator_hook(failing_allocator *f)
{
    return (prox_allocator){failing_alloc, failing_free, f};
}
