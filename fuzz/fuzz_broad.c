/* fuzz_broad.c: the broad phase on fuzzer-chosen boxes and options, with
 * brute force as the oracle. Each input decodes into a box set (2D or 3D,
 * double or float, up to 48 boxes with corners on a lattice of quarter units,
 * zero extents, values at the edges of double), a structure with its
 * options, a thread count and a sink, and runs self pairs, then queries of
 * boxes, segments (exact or not) and swept boxes, then an update to a second
 * set. Every answer must be brute force's, or a refusal: the same status as
 * brute force's, or PROX_ERR_RANGE where a structure needs the extent in a
 * double. Anything else aborts. */
#include <stdio.h>

#include "fuzz_bytes.h"
#include "fuzz_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BOXES 48

typedef struct box_set {
    double f64[6 * MAX_BOXES];
    float f32[6 * MAX_BOXES];
    prox_boxes view;
    prox_points starts, ends; /* the same numbers read as segments */
} box_set;

/* Corners: min then max per box; a box's max is its min plus a lattice
 * extent (zero often), or any coordinate (min > max is then bad data). */
static void decode_boxes(fuzz_bytes *b, box_set *s, int64_t n, int dim, prox_scalar scalar,
                         double scale)
{
    for (int64_t i = 0; i < n; i++) {
        double *box = s->f64 + 2 * dim * i;
        for (int k = 0; k < dim; k++) {
            box[k] = fuzz_coordinate(b, scale);
            unsigned e = fuzz_byte(b);
            box[dim + k] = e < 224 ? box[k] + scale * (double)(e % 16) / 4.0
                                   : fuzz_coordinate(b, scale);
        }
    }
    for (int64_t v = 0; v < 2 * dim * n; v++) {
        s->f32[v] = (float)s->f64[v];
        if (!isfinite(s->f32[v]))
            s->f32[v] = 0.0f;
    }
    if (scalar == PROX_F32) {
        s->view = prox_boxes_f32(s->f32, n, dim);
        s->starts = prox_points_strided(s->f32, n, dim, scalar, 2 * dim * (ptrdiff_t)sizeof(float));
        s->ends = prox_points_strided(s->f32 + dim, n, dim, scalar,
                                      2 * dim * (ptrdiff_t)sizeof(float));
    } else {
        s->view = prox_boxes_f64(s->f64, n, dim);
        s->starts = prox_points_strided(s->f64, n, dim, scalar, 2 * dim * (ptrdiff_t)sizeof(double));
        s->ends = prox_points_strided(s->f64 + dim, n, dim, scalar,
                                      2 * dim * (ptrdiff_t)sizeof(double));
    }
}

static void decode_desc(fuzz_bytes *b, prox_broad_desc *d, double scale)
{
    static const double cells[] = {0.0, 0.0, 1.0, 0.25, 4.0, 1e-3, 1e3};
    static const double costs[] = {1.0, 0.0, 0.5, 10.0};
    d->algo = (prox_broad_algo)(1 + fuzz_pick(b, 5));
    d->threads = 1 + fuzz_pick(b, 3);
    d->borrow_boxes = fuzz_pick(b, 2);
    d->cell_size = cells[fuzz_pick(b, 7)] * scale;
    d->table_size = fuzz_pick(b, 3) == 0 ? 1 + fuzz_pick(b, 64) : 0;
    d->growable_table = fuzz_pick(b, 2);
    if (fuzz_pick(b, 3) == 0) {
        d->min_class = fuzz_pick(b, 9) - 6;
        d->max_class = d->min_class + fuzz_pick(b, 6);
    }
    d->kdtree_variant = 1 + fuzz_pick(b, 2);
    d->kdtree_split = fuzz_pick(b, 2);
    d->kdtree_split_cost = costs[fuzz_pick(b, 4)];
    if (fuzz_pick(b, 4) == 0)
        for (int k = 0; k < 3; k++) {
            d->root_lo[k] = fuzz_coordinate(b, scale);
            d->root_hi[k] = d->root_lo[k] + scale * (double)(1 + fuzz_pick(b, 64));
        }
}

typedef struct run {
    prox_broad_desc desc;
    int sink;
    char context[320];
} run;

static bool statuses_agree(prox_status brute, prox_status got, const run *r, const char *step)
{
    char where[400];
    snprintf(where, sizeof where, "%s: %s", step, r->context);
    if (got == PROX_ERR_INVALID && r->desc.algo == PROX_BROAD_KDTREE &&
        strstr(prox_last_error(), "root cell along"))
        return false; /* a given root is judged at build, against the boxes' dim (test_kdtree) */
    if (brute != PROX_OK) {
        if (got != brute)
            fuzz_fail("refused differently from brute force", where);
        return false;
    }
    if (got == PROX_OK)
        return true;
    if (got == PROX_ERR_RANGE)
        return false; /* extent beyond a double: documented */
    fuzz_fail("failed where brute force answers", where);
}

enum { STEP_PAIRS, STEP_BOXES, STEP_SEGMENTS, STEP_EXACT_SEGMENTS, STEP_SWEPT, STEPS };

static prox_status step(prox_broad *b, int kind, const box_set *q, const box_set *to,
                        prox_sink sink, prox_stats *stats)
{
    switch (kind) {
    case STEP_PAIRS: return prox_broad_pairs(b, sink, stats);
    case STEP_BOXES: return prox_broad_query_boxes(b, &q->view, sink, stats);
    case STEP_SEGMENTS:
        return prox_broad_query_segments(b, &q->starts, &q->ends, false, sink, stats);
    case STEP_EXACT_SEGMENTS:
        return prox_broad_query_segments(b, &q->starts, &q->ends, true, sink, stats);
    default: return prox_broad_query_swept(b, &q->view, &to->view, sink, stats);
    }
}

/* Every query kind on a built structure and on brute force, built over the
 * same boxes. */
static void queries(prox_broad *b, prox_broad *oracle, const box_set *q, const box_set *to,
                    int64_t built, const run *r)
{
    static const char *const names[] = {"pairs", "boxes", "segments", "exact segments",
                                        "swept"};
    for (int kind = 0; kind < STEPS; kind++) {
        prox_pair_buffer want;
        prox_pair_buffer_init(&want, NULL);
        prox_status sb = step(oracle, kind, q, to, prox_sink_buffer(&want), NULL);
        fuzz_sink s;
        prox_stats stats = {0};
        prox_status st = step(b, kind, q, to, fuzz_sink_open(&s, r->sink), &stats);
        if (statuses_agree(sb, st, r, names[kind])) {
            char where[400];
            snprintf(where, sizeof where, "%s: %s", names[kind], r->context);
            fuzz_expect_sink(&s, &want, stats.pairs, kind == STEP_PAIRS,
                             kind == STEP_PAIRS ? built : q->view.count, where);
        }
        fuzz_sink_close(&s);
        prox_pair_buffer_free(&want);
    }
}

static box_set boxes, other, later;

static void dump_set(const char *name, const box_set *s)
{
    int dim = s->view.dim;
    fprintf(stderr, "%s (%lld boxes, min then max):\n", name, (long long)s->view.count);
    for (int64_t i = 0; i < s->view.count; i++) {
        fprintf(stderr, "  %lld:", (long long)i);
        for (int k = 0; k < 2 * dim; k++)
            fprintf(stderr, " %.17g", k < dim ? prox_boxes_min(&s->view, i, k)
                                              : prox_boxes_max(&s->view, i, k - dim));
        fputc('\n', stderr);
    }
}

static void dump_input(void)
{
    dump_set("built", &boxes);
    dump_set("queries / update", &other);
    dump_set("swept to / after update", &later);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_dump_input = dump_input;
    fuzz_bytes b = {data, size};
    static const double scales[] = {1.0, 1.0, 1.0, 1e-300, 1e300, 1e-5, 1e150, 3.0};
    unsigned flags = fuzz_byte(&b);
    int dim = flags & 1 ? 3 : 2;
    prox_scalar scalar = flags & 2 ? PROX_F32 : PROX_F64;
    double scale = scales[fuzz_pick(&b, 8)];
    run r = {.desc = prox_default_broad_desc()};
    decode_desc(&b, &r.desc, scale);
    r.sink = fuzz_pick(&b, SINK_KINDS);
    int64_t n = fuzz_pick(&b, MAX_BOXES + 1), m = fuzz_pick(&b, MAX_BOXES + 1);
    decode_boxes(&b, &boxes, n, dim, scalar, scale);
    decode_boxes(&b, &other, m, dim, scalar, scale);
    decode_boxes(&b, &later, m, dim, scalar, scale);
    snprintf(r.context, sizeof r.context,
             "%s %dD %s n=%lld m=%lld threads=%d borrow=%d cell=%g table=%lld growable=%d "
             "classes=%d..%d kd=%d split=%d cost=%g root=%g..%g sink=%d",
             prox_broad_algo_name(r.desc.algo), dim, scalar == PROX_F32 ? "f32" : "f64",
             (long long)n, (long long)m, r.desc.threads, r.desc.borrow_boxes, r.desc.cell_size,
             (long long)r.desc.table_size, r.desc.growable_table, r.desc.min_class,
             r.desc.max_class, r.desc.kdtree_variant, r.desc.kdtree_split,
             r.desc.kdtree_split_cost, r.desc.root_lo[0], r.desc.root_hi[0], r.sink);

    prox_broad_desc od = prox_default_broad_desc();
    od.algo = PROX_BROAD_BRUTE;
    od.threads = 1;
    prox_broad *b1 = NULL, *oracle = NULL;
    if (prox_broad_create(&od, &oracle) != PROX_OK)
        fuzz_fail("brute force create", r.context);
    prox_status st = prox_broad_create(&r.desc, &b1);
    if (st != PROX_OK)
        fuzz_fail("create refused fuzzed options", r.context);
    prox_status sb = prox_broad_build(oracle, &boxes.view);
    st = prox_broad_build(b1, &boxes.view);
    if (statuses_agree(sb, st, &r, "build"))
        queries(b1, oracle, &other, &later, n, &r);
    /* the update to the second set: moved, added, removed */
    prox_stats stats;
    sb = prox_broad_build(oracle, &other.view);
    st = prox_broad_update(b1, &other.view, &stats);
    if (sb == PROX_OK && st == PROX_ERR_INVALID) {
        /* an update after a failed build is refused: build again */
        st = prox_broad_build(b1, &other.view);
    }
    if (statuses_agree(sb, st, &r, "update"))
        queries(b1, oracle, &later, &boxes, m, &r);
    prox_broad_destroy(b1);
    prox_broad_destroy(oracle);
    return 0;
}
