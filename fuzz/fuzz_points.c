/* fuzz_points.c: the points family on fuzzer-chosen points, radii and
 * options, with brute force as the oracle. Each input decodes into a point
 * set (2D or 3D, double or float, up to 64 points on a lattice of quarter
 * units, duplicates, values at the edges of double), a radius, periods, the
 * grid's options, a thread count and a sink, and runs one of: the one-shot
 * grid or hierarchical search, a grid object built, queried, moved and
 * updated, a skin list, or queries of a second set. Every answer must be
 * brute force's (the same pairs; the same bytes for 1 and several threads),
 * or a refusal: the same status as brute force's, or PROX_ERR_RANGE for a
 * point set too wide for the grid's cells. Anything else aborts. */
#include <stdio.h>

#include "fuzz_bytes.h"
#include "fuzz_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_POINTS 64

typedef struct point_set {
    double f64[3 * MAX_POINTS];
    float f32[3 * MAX_POINTS];
    prox_points view;
} point_set;

static void decode_points(fuzz_bytes *b, point_set *s, int64_t n, int dim, prox_scalar scalar,
                          double scale)
{
    for (int64_t i = 0; i < n * dim; i++) {
        s->f64[i] = fuzz_coordinate(b, scale);
        s->f32[i] = (float)s->f64[i];
        if (!isfinite(s->f32[i]))
            s->f32[i] = 0.0f;
    }
    s->view = scalar == PROX_F32 ? prox_points_f32(s->f32, n, dim) : prox_points_f64(s->f64, n, dim);
}

static double decode_radius(fuzz_bytes *b)
{
    static const double radii[] = {1.0, 0.25, 0.5, 3.0, 0.1, 1e-150, 1e150, 1e-151, 2e150,
                                   7.0, 1e-5, 1e5, 0.75, 1.0 + 0x1p-52};
    int k = fuzz_pick(b, 16);
    if (k < (int)(sizeof radii / sizeof radii[0]))
        return radii[k];
    return fabs(fuzz_raw_double(b));
}

static void decode_periods(fuzz_bytes *b, double period[3], int dim, double scale)
{
    static const double lengths[] = {0.0, 0.0, 0.0, 0.0, 10.0, 25.0, 7.5, 2.0, 1e7, 3.0};
    for (int k = 0; k < 3; k++)
        period[k] = k < dim ? lengths[fuzz_pick(b, 10)] * scale : 0.0;
}

typedef struct job {
    const char *what;
    prox_grid_desc desc; /* of the structure tried; brute force runs with the same radius */
    prox_algo algo;
    int sink;
    char context[256];
} job;

/* The structure's status against brute force's: true when the answers are
 * to be compared. */
static bool statuses_agree(prox_status brute, prox_status got, const job *j)
{
    const double *p = j->desc.period;
    bool periodic = p[0] > 0 || p[1] > 0 || p[2] > 0;
    /* the hierarchical hash refuses periodic axes (documented) before it
     * looks at anything brute force may refuse for */
    bool hierarchical_refusal =
        got == PROX_ERR_INVALID && j->algo == PROX_ALGO_HIERARCHICAL && periodic;
    if (brute != PROX_OK) {
        if (got != brute && !hierarchical_refusal)
            fuzz_fail("refused differently from brute force", j->context);
        return false;
    }
    if (got == PROX_OK)
        return true;
    if (got == PROX_ERR_RANGE)
        return false; /* too many cells: documented */
    if (hierarchical_refusal)
        return false;
    fuzz_fail("failed where brute force answers", j->context);
}

static prox_status brute(const prox_points *points, const prox_points *queries, const job *j,
                         prox_pair_buffer *want)
{
    prox_grid_desc d = j->desc;
    d.threads = 1;
    prox_pair_buffer_init(want, NULL);
    if (queries)
        return prox_query(points, queries, &d, PROX_ALGO_BRUTE, prox_sink_buffer(want), NULL);
    return prox_pairs(points, &d, PROX_ALGO_BRUTE, prox_sink_buffer(want), NULL);
}

/* One-shot prox_pairs or prox_query, with the job's threads and once more
 * with one thread: the same bytes. */
static void one_shot(const prox_points *points, const prox_points *queries, job *j)
{
    prox_pair_buffer want;
    prox_status sb = brute(points, queries, j, &want);
    fuzz_sink s, one;
    prox_stats stats = {0};
    prox_sink sink = fuzz_sink_open(&s, j->sink);
    prox_status st = queries ? prox_query(points, queries, &j->desc, j->algo, sink, &stats)
                             : prox_pairs(points, &j->desc, j->algo, sink, &stats);
    if (statuses_agree(sb, st, j)) {
        int64_t rows = queries ? queries->count : points->count;
        if (j->desc.threads != 1) {
            prox_grid_desc d = j->desc;
            d.threads = 1;
            prox_sink sink1 = fuzz_sink_open(&one, j->sink);
            st = queries ? prox_query(points, queries, &d, j->algo, sink1, NULL)
                         : prox_pairs(points, &d, j->algo, sink1, NULL);
            if (st != PROX_OK)
                fuzz_fail("one thread fails where several answer", j->context);
            fuzz_expect_identical(&s, &one, j->context);
            fuzz_sink_close(&one);
        }
        fuzz_expect_sink(&s, &want, stats.pairs, queries == NULL, rows, j->context);
    }
    fuzz_sink_close(&s);
    prox_pair_buffer_free(&want);
}

/* A grid object: build, pairs, query of `moved`, update to `moved`, pairs. */
static void grid_object(const prox_points *points, const prox_points *moved, job *j)
{
    prox_grid *g = NULL;
    prox_status st = prox_grid_create(&j->desc, &g);
    prox_pair_buffer want;
    prox_status sb = brute(points, NULL, j, &want);
    if (st != PROX_OK) {
        if (st != sb)
            fuzz_fail("create refused differently from brute force", j->context);
        prox_pair_buffer_free(&want);
        return;
    }
    st = prox_grid_build(g, points);
    bool built = statuses_agree(sb, st, j);
    fuzz_sink s;
    prox_stats stats = {0};
    if (built) {
        st = prox_grid_pairs(g, fuzz_sink_open(&s, j->sink), &stats);
        if (st != PROX_OK)
            fuzz_fail("pairs of a built grid failed", j->context);
        fuzz_expect_sink(&s, &want, stats.pairs, true, points->count, j->context);
        fuzz_sink_close(&s);
        if (moved->dim == points->dim) {
            prox_pair_buffer_free(&want);
            sb = brute(points, moved, j, &want);
            st = prox_grid_query(g, moved, fuzz_sink_open(&s, j->sink), &stats);
            if (statuses_agree(sb, st, j))
                fuzz_expect_sink(&s, &want, stats.pairs, false, moved->count, j->context);
            fuzz_sink_close(&s);
        }
    }
    prox_pair_buffer_free(&want);
    /* an update works on a built grid and on one whose build failed */
    sb = brute(moved, NULL, j, &want);
    st = prox_grid_update(g, moved, &stats);
    if (statuses_agree(sb, st, j)) {
        st = prox_grid_pairs(g, fuzz_sink_open(&s, j->sink), &stats);
        if (st != PROX_OK)
            fuzz_fail("pairs after an update failed", j->context);
        fuzz_expect_sink(&s, &want, stats.pairs, true, moved->count, j->context);
        fuzz_sink_close(&s);
    }
    prox_pair_buffer_free(&want);
    prox_grid_destroy(g);
}

static void skin_list(const prox_points *points, const prox_points *moved, double skin, job *j)
{
    prox_skin_list *l = NULL;
    prox_status st = prox_skin_list_create(&j->desc, skin, &l);
    if (st != PROX_OK) {
        prox_skin_list_destroy(l);
        return; /* radius + skin out of range, or against a period: checked by the tests */
    }
    const prox_points *steps[2] = {points, moved};
    for (int t = 0; t < 2; t++) {
        prox_pair_buffer want;
        prox_status sb = brute(steps[t], NULL, j, &want);
        fuzz_sink s;
        prox_stats stats = {0};
        st = prox_skin_list_pairs(l, steps[t], fuzz_sink_open(&s, j->sink), &stats);
        if (statuses_agree(sb, st, j))
            fuzz_expect_sink(&s, &want, stats.pairs, true, steps[t]->count, j->context);
        fuzz_sink_close(&s);
        prox_pair_buffer_free(&want);
    }
    prox_skin_list_destroy(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes b = {data, size};
    static const double scales[] = {1.0, 1.0, 1.0, 1e-150, 1e100, 1e-5, 1e150, 3.0};
    static const char *const modes[] = {"grid", "hierarchical", "grid object", "skin list",
                                        "query grid", "query hierarchical"};
    unsigned flags = fuzz_byte(&b);
    int dim = flags & 1 ? 3 : 2;
    prox_scalar scalar = flags & 2 ? PROX_F32 : PROX_F64;
    int mode = fuzz_pick(&b, 6);
    double scale = scales[fuzz_pick(&b, 8)];
    job j = {.desc = prox_default_grid_desc()};
    j.desc.radius = decode_radius(&b) * (scale == 1.0 || scale == 3.0 ? 1.0 : scale);
    j.desc.keys = (prox_keys)fuzz_pick(&b, 3);
    j.desc.coords = (prox_coords)fuzz_pick(&b, 3);
    j.desc.rows = (prox_rows)fuzz_pick(&b, 3);
    j.desc.cell_divisions = 1 + fuzz_pick(&b, 3);
    j.desc.table_size = fuzz_pick(&b, 4) == 0 ? 8 : 0;
    j.desc.threads = 1 + fuzz_pick(&b, 3);
    decode_periods(&b, j.desc.period, dim, scale);
    j.sink = fuzz_pick(&b, SINK_KINDS);
    j.algo = mode == 1 || mode == 5 ? PROX_ALGO_HIERARCHICAL : PROX_ALGO_GRID;
    double skin = j.desc.radius * (double)fuzz_pick(&b, 4) / 4.0;
    int64_t n = fuzz_pick(&b, MAX_POINTS + 1), m = fuzz_pick(&b, MAX_POINTS + 1);
    static point_set points, moved;
    decode_points(&b, &points, n, dim, scalar, scale);
    /* the second set: the first moved by small steps, or points of its own */
    if (m == n && (flags & 4)) {
        for (int64_t i = 0; i < n * dim; i++) {
            moved.f64[i] = points.f64[i] + fuzz_coordinate(&b, scale) / 64.0;
            moved.f32[i] = isfinite((float)moved.f64[i]) ? (float)moved.f64[i] : 0.0f;
        }
        moved.view = scalar == PROX_F32 ? prox_points_f32(moved.f32, m, dim)
                                        : prox_points_f64(moved.f64, m, dim);
    } else {
        decode_points(&b, &moved, m, dim, scalar, scale);
    }
    snprintf(j.context, sizeof j.context,
             "%s %dD %s n=%lld m=%lld r=%.17g keys=%d coords=%d rows=%d div=%d table=%lld "
             "threads=%d period=%g,%g,%g sink=%d",
             modes[mode], dim, scalar == PROX_F32 ? "f32" : "f64", (long long)n, (long long)m,
             j.desc.radius, (int)j.desc.keys, (int)j.desc.coords, (int)j.desc.rows,
             j.desc.cell_divisions, (long long)j.desc.table_size, j.desc.threads,
             j.desc.period[0], j.desc.period[1], j.desc.period[2], j.sink);
    switch (mode) {
    case 0:
    case 1: one_shot(&points.view, NULL, &j); break;
    case 2: grid_object(&points.view, &moved.view, &j); break;
    case 3: skin_list(&points.view, &moved.view, skin, &j); break;
    default: one_shot(&points.view, &moved.view, &j); break;
    }
    return 0;
}
