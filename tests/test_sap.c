/* test_sap.c: sweep and prune (PROX_BROAD_SAP) against brute force.
 *
 * - The scenes of test_broad (broad_scenes.c): mixed sizes with zero-extent
 *   boxes, points, touching boxes and copies, 1e9 offsets, N = 0 and 1, all
 *   boxes identical; every query kind and sink; 2D and 3D, f32 and f64.
 * - The same scenes snapped to a coarse lattice (many equal mins along
 *   every axis, touching boxes, zero extents), then negated, scaled to
 *   1e299 (huge, and queries reaching +-1.7e308), to subnormals (the byte
 *   filter's scale at its cap), and flattened (every box with the same
 *   bounds on one axis: a zero extent for the filter).
 * - Identical output (buffers, lists, callback order) for 1, 2 and 3
 *   threads; a callback that stops early.
 * - Incremental updates over many random-walk frames, with boxes added and
 *   removed, big jumps and a shuffle: after each, the pairs and queries
 *   equal a fresh build's and brute force's; small moves never rebuild.
 * - Allocation failure at every allocation of build, queries and updates:
 *   PROX_ERR_NO_MEMORY, nothing leaked (sanitizer build), and the object
 *   works again afterwards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broad_scenes.h"

static const config SAP = {"sap", PROX_BROAD_SAP, 0, 0, false, 0, 0};

static void check_sap(const scene *sc)
{
    const config *list[] = {&SAP};
    check_scene(sc, list, 1);
}

/* ---- the scenes of test_broad ------------------------------------------- */

static void run_scene(scene_kind kind, int n, int m)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int f32 = 0; f32 <= 1; f32++) {
            scene sc;
            scene_make(&sc, kind, dim, f32, n, m);
            check_sap(&sc);
            scene_free(&sc);
        }
}

static void scenes_of_test_broad_match_brute_force(void **state)
{
    (void)state;
    run_scene(SCENE_MIXED, 700, 300);
    run_scene(SCENE_OFFSET, 400, 200);
    run_scene(SCENE_EMPTY, 0, 50);
    run_scene(SCENE_ONE, 1, 50);
    run_scene(SCENE_SAME, 60, 40);
}

/* ---- lattices: ties, touching, zero extents, huge and tiny values ------- */

/* x -> floor(x / 8192) * scale + offset: monotonic (for scale > 0), so
 * boxes stay boxes; the scenes' coordinates (about -3e4 .. 1.7e5) land on
 * a few dozen values. A negative scale mirrors (lo and hi swap). `flat`:
 * this axis gets the same value everywhere (-1: none). */
typedef struct lattice {
    double scale, offset;
    int flat;
} lattice;

static double snap(const lattice *l, double x, int axis)
{
    if (axis == l->flat)
        return l->offset;
    return floor(x / 8192) * l->scale + l->offset;
}

static void snap_boxes(box_set *s, const lattice *l, bool f32)
{
    int dim = s->dim;
    for (int64_t i = 0; i < s->n; i++) {
        double *b = box_at(s, i);
        for (int k = 0; k < dim; k++) {
            double lo = snap(l, b[k], k), hi = snap(l, b[dim + k], k);
            b[k] = fmin(lo, hi);
            b[dim + k] = fmax(lo, hi);
        }
    }
    finish(s->d, s->f, 2 * dim * s->n, f32);
}

static void snap_points(point_set *s, const lattice *l, bool f32)
{
    for (int64_t i = 0; i < s->n; i++)
        for (int k = 0; k < s->dim; k++)
            s->d[s->dim * i + k] = snap(l, s->d[s->dim * i + k], k);
    finish(s->d, s->f, s->dim * s->n, f32);
}

static void snap_scene(scene *sc, const lattice *l)
{
    snap_boxes(&sc->boxes, l, sc->f32);
    snap_boxes(&sc->queries, l, sc->f32);
    snap_boxes(&sc->from, l, sc->f32);
    snap_boxes(&sc->to, l, sc->f32);
    snap_points(&sc->starts, l, sc->f32);
    snap_points(&sc->ends, l, sc->f32);
}

/* Queries at the ends of the doubles: the byte filter's arithmetic
 * overflows to infinity there and must still clamp. */
static void extreme_queries(scene *sc)
{
    int dim = sc->dim;
    for (int64_t q = 0; q < sc->queries.n; q += 7) {
        double *b = box_at(&sc->queries, q);
        for (int k = 0; k < dim; k++) {
            if (q % 2)
                b[k] = -1.7e308;
            else
                b[dim + k] = 1.7e308;
        }
    }
    finish(sc->queries.d, sc->queries.f, 2 * dim * sc->queries.n, false);
}

static void lattices_match_brute_force(void **state)
{
    (void)state;
    static const struct {
        lattice l;
        bool f32, extreme;
        const char *name;
    } cases[] = {
        {{1, 0, -1}, true, false, "lattice"},
        {{0.5, -3, -1}, true, false, "negative lattice"},
        {{-1, 0, -1}, true, false, "mirrored lattice"},
        {{1e299, -2e300, -1}, false, true, "huge lattice"},
        {{-1e299, 1e299, -1}, false, true, "huge mirrored lattice"},
        {{1e-320, 0, -1}, false, false, "subnormal lattice"},
        {{1, 5, 0}, true, false, "flat along x"},
        {{1, 5, 1}, true, false, "flat along y"},
        {{1, 5, 2}, true, false, "flat along z"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int dim = 2; dim <= 3; dim++)
            for (int f32 = 0; f32 <= (int)cases[c].f32; f32++) {
                scene sc;
                scene_make(&sc, SCENE_MIXED, dim, f32, 500, 150);
                snap_scene(&sc, &cases[c].l);
                if (cases[c].extreme)
                    extreme_queries(&sc);
                sc.name = cases[c].name;
                check_sap(&sc);
                scene_free(&sc);
            }
}

/* ---- threads ----------------------------------------------------------- */

static void results_do_not_depend_on_threads(void **state)
{
    (void)state;
    scene sc;
    max_edge_exp = 10; /* smaller boxes: a faster test */
    scene_make(&sc, SCENE_MIXED, 3, false, 6000, 4200); /* several chunks */
    max_edge_exp = 15;
    check_threads_agree(&SAP, &sc, Q_KINDS);
    scene_free(&sc);
}

static void callback_can_stop_early(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 3, false, 300, 100);
    prox_broad *b = create(&SAP, 3);
    prox_boxes boxes = box_view(&sc.boxes, false);
    CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, "sap");
    check_callback_stops(b, &sc, "sap");
    prox_broad_destroy(b);
    scene_free(&sc);
}

static void stats_are_consistent(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 3, false, 400, 200);
    prox_broad *b = create(&SAP, 1);
    prox_boxes boxes = box_view(&sc.boxes, false);
    CHECK_STATUS(prox_broad_build(b, &boxes), PROX_OK, "sap");
    for (int k = 0; k < Q_KINDS; k++) {
        prox_stats st;
        CHECK_STATUS(run_kind(b, &sc, (query_kind)k, prox_sink_count(), &st), PROX_OK,
                     kind_names[k]);
        CHECK(st.candidates >= st.pairs && st.bytes > 0 && st.cells == 400 &&
                  st.cells_visited > 0,
              kind_names[k], "candidates %lld, pairs %lld, bytes %lld, cells %lld, visited %lld",
              (long long)st.candidates, (long long)st.pairs, (long long)st.bytes,
              (long long)st.cells, (long long)st.cells_visited);
    }
    prox_broad_destroy(b);
    scene_free(&sc);
}

/* ---- incremental updates ----------------------------------------------- */

/* The pairs of a fresh structure of `c` over sc's boxes (1 thread). */
static void fresh_pairs(const config *c, const scene *sc, prox_pair_buffer *out)
{
    prox_broad *b = create(c, 1);
    prox_boxes v = box_view(&sc->boxes, sc->f32);
    prox_pair_buffer_init(out, NULL);
    CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, c->name);
    CHECK_STATUS(prox_broad_pairs(b, prox_sink_buffer(out), NULL), PROX_OK, c->name);
    prox_broad_destroy(b);
}

static void expect_same_buffer(const prox_pair_buffer *want, const prox_pair_buffer *got,
                               const char *context, const char *what)
{
    CHECK(got->count == want->count &&
              (got->count == 0 ||
               memcmp(got->pairs, want->pairs, (size_t)got->count * sizeof(prox_pair)) == 0),
          context, "%s: %lld pairs, expected %lld", what, (long long)got->count,
          (long long)want->count);
}

typedef enum frame_kind {
    FRAME_WALK,   /* every box a small step */
    FRAME_ADD,    /* a small step, and boxes appended */
    FRAME_REMOVE, /* a small step, and the tail removed */
    FRAME_JUMPS,  /* a small step, and a few boxes jump across the scene */
    FRAME_SHUFFLE /* every box somewhere else */
} frame_kind;

static frame_kind frame_of(int f)
{
    if (f % 29 == 28)
        return FRAME_SHUFFLE;
    if (f % 7 == 3)
        return FRAME_ADD;
    if (f % 7 == 5)
        return FRAME_REMOVE;
    if (f % 5 == 4)
        return FRAME_JUMPS;
    return FRAME_WALK;
}

/* A box of edges 1 .. 9 somewhere in [0, side)^dim, at (a lattice of)
 * quarter units now and then, so that mins tie. */
static void place(double *b, int dim, double side, rng *r)
{
    bool ties = rng_below(r, 4) == 0;
    for (int k = 0; k < dim; k++) {
        double lo = rng_range(r, 0, side), e = rng_range(r, 0, 8) + (rng_below(r, 9) ? 1 : 0);
        if (ties) {
            lo = floor(lo * 4) / 4;
            e = floor(e);
        }
        b[k] = lo;
        b[dim + k] = lo + e;
    }
}

/* Moves sc's boxes as the frame says; returns the new count. */
static int64_t step_frame(scene *sc, frame_kind kind, int64_t capacity, double side, rng *r)
{
    int dim = sc->dim;
    int64_t n = sc->boxes.n;
    for (int64_t i = 0; i < n; i++) {
        double *b = box_at(&sc->boxes, i);
        if (kind == FRAME_SHUFFLE || (kind == FRAME_JUMPS && rng_below(r, 50) == 0)) {
            place(b, dim, side, r);
            continue;
        }
        for (int k = 0; k < dim; k++) { /* a small step, sometimes none */
            double d = rng_below(r, 3) ? rng_range(r, -0.05, 0.1) : 0.0;
            b[k] += d;
            b[dim + k] += d;
        }
    }
    if (kind == FRAME_ADD) {
        int64_t more = 1 + rng_below(r, n / 8 + 1);
        more = n + more > capacity ? capacity - n : more;
        for (int64_t i = n; i < n + more; i++)
            place(box_at(&sc->boxes, i), dim, side, r);
        n += more;
    }
    if (kind == FRAME_REMOVE)
        n -= rng_below(r, n / 8 + 1);
    sc->boxes.n = n;
    finish(sc->boxes.d, sc->boxes.f, 2 * dim * n, sc->f32);
    return n;
}

static void check_frames(int dim, bool f32, int64_t n, int frames)
{
    scene sc;
    scene_make(&sc, SCENE_MIXED, dim, f32, 0, 60);
    int64_t capacity = 4 * n;
    free(sc.boxes.d);
    free(sc.boxes.f);
    box_set_alloc(&sc.boxes, dim, capacity);
    double side = dim == 3 ? 40 : 160; /* a few overlaps per box */
    rng r = rng_seeded(4242 + (uint64_t)dim);
    for (int64_t i = 0; i < n; i++)
        place(box_at(&sc.boxes, i), dim, side, &r);
    sc.boxes.n = n;
    finish(sc.boxes.d, sc.boxes.f, 2 * dim * n, f32);
    /* queries over the same region */
    for (int64_t q = 0; q < sc.queries.n; q++) {
        place(box_at(&sc.queries, q), dim, side, &r);
        place(box_at(&sc.from, q), dim, side, &r);
        place(box_at(&sc.to, q), dim, side, &r);
    }
    for (int64_t q = 0; q < sc.starts.n; q++)
        for (int k = 0; k < dim; k++) {
            sc.starts.d[dim * q + k] = rng_range(&r, 0, side);
            sc.ends.d[dim * q + k] = sc.starts.d[dim * q + k] + rng_range(&r, -4, 8);
        }
    finish(sc.queries.d, sc.queries.f, 2 * dim * sc.queries.n, f32);
    finish(sc.from.d, sc.from.f, 2 * dim * sc.from.n, f32);
    finish(sc.to.d, sc.to.f, 2 * dim * sc.to.n, f32);
    finish(sc.starts.d, sc.starts.f, dim * sc.starts.n, f32);
    finish(sc.ends.d, sc.ends.f, dim * sc.ends.n, f32);

    prox_broad *b = create(&SAP, 2);
    prox_boxes v = box_view(&sc.boxes, f32);
    CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, "sap");
    int64_t incremental = 0;
    for (int f = 0; f < frames; f++) {
        frame_kind kind = frame_of(f);
        step_frame(&sc, kind, capacity, side, &r);
        char context[256];
        snprintf(context, sizeof context, "sap update, %dD %s, frame %d (kind %d), N = %lld", dim,
                 f32 ? "f32" : "f64", f, (int)kind, (long long)sc.boxes.n);
        v = box_view(&sc.boxes, f32);
        prox_stats st;
        CHECK_STATUS(prox_broad_update(b, &v, &st), PROX_OK, context);
        if (kind == FRAME_WALK || kind == FRAME_REMOVE)
            CHECK(!st.rebuilt, context, "small moves rebuilt the list");
        if (kind == FRAME_SHUFFLE) /* past the insertion sort's budget */
            CHECK(st.rebuilt, context, "a shuffle did not rebuild");
        incremental += !st.rebuilt;
        prox_pair_buffer got, fresh, brute;
        prox_pair_buffer_init(&got, NULL);
        CHECK_STATUS(prox_broad_pairs(b, prox_sink_buffer(&got), NULL), PROX_OK, context);
        fresh_pairs(&SAP, &sc, &fresh);
        fresh_pairs(&BRUTE, &sc, &brute);
        expect_same_buffer(&brute, &fresh, context, "fresh build");
        expect_same_buffer(&brute, &got, context, "after the update");
        prox_pair_buffer_free(&got);
        prox_pair_buffer_free(&fresh);
        prox_pair_buffer_free(&brute);
        if (f % 10 == 9) /* the queries too, now and then */
            check_against_fresh_brute(b, &sc, context);
    }
    CHECK(incremental > frames / 2, "sap update", "only %lld of %d frames were incremental",
          (long long)incremental, frames);
    prox_broad_destroy(b);
    scene_free(&sc);
}

static void updates_match_fresh_builds(void **state)
{
    (void)state;
    check_frames(3, false, 1500, 60);
    check_frames(2, true, 1200, 40);
    check_frames(3, true, 300, 40);
}

/* Every query kind after an update that removes every box, and one that
 * brings them back. */
static void updates_to_and_from_nothing(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 3, false, 200, 40);
    prox_broad *b = create(&SAP, 2);
    prox_boxes v = box_view(&sc.boxes, false);
    CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, "sap");
    prox_stats st;
    for (int round = 0; round < 2; round++) {
        sc.boxes.n = round ? 200 : 0;
        v = box_view(&sc.boxes, false);
        CHECK_STATUS(prox_broad_update(b, &v, &st), PROX_OK, "update");
        check_against_fresh_brute(b, &sc, round ? "back to 200 boxes" : "no boxes left");
    }
    prox_broad_destroy(b);
    scene_free(&sc);
}

/* ---- allocation failures ------------------------------------------------ */

/* Build, pairs, queries, an incremental update (moves and additions), an
 * update that rebuilds; the first failure ends the sequence. Afterwards,
 * with memory again, the same object must build and find the right pairs. */
static prox_status run_with_allocations(const scene *sc, const scene *moved,
                                        const prox_pair_buffer *want, int64_t budget)
{
    failing_allocator f = {budget, 0};
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = PROX_BROAD_SAP;
    d.threads = 2;
    d.allocator = failing_allocator_hook(&f);
    prox_broad *b = NULL;
    prox_status st = prox_broad_create(&d, &b);
    prox_boxes v = box_view(&sc->boxes, false), w = box_view(&moved->boxes, false);
    prox_pair_buffer buf;
    prox_lists lists;
    prox_pair_buffer_init(&buf, NULL);
    prox_lists_init(&lists, NULL);
    if (!st) st = prox_broad_build(b, &v);
    if (!st) st = prox_broad_pairs(b, prox_sink_buffer(&buf), NULL);
    if (!st) st = run_kind(b, sc, Q_SEGMENTS, prox_sink_lists(&lists), NULL);
    if (!st) st = run_kind(b, sc, Q_BOXES, prox_sink_buffer(&buf), NULL);
    if (!st) st = prox_broad_update(b, &w, NULL);
    if (!st) st = prox_broad_pairs(b, prox_sink_buffer(&buf), NULL);
    if (!st) st = prox_broad_update(b, &v, NULL); /* far fewer boxes */
    if (b && st) { /* memory again: the same object recovers */
        f.left = INT64_MAX;
        CHECK_STATUS(prox_broad_build(b, &w), PROX_OK, "after a failure");
        prox_pair_buffer again;
        prox_pair_buffer_init(&again, NULL);
        CHECK_STATUS(prox_broad_pairs(b, prox_sink_buffer(&again), NULL), PROX_OK,
                     "after a failure");
        expect_same_buffer(want, &again, "after a failure", "pairs");
        prox_pair_buffer_free(&again);
    }
    prox_broad_destroy(b);
    prox_pair_buffer_free(&buf);
    prox_lists_free(&lists);
    CHECK(f.live == 0, "allocation failures", "%lld blocks not freed (budget %lld)",
          (long long)f.live, (long long)budget);
    return st;
}

static void allocation_failures_are_reported(void **state)
{
    (void)state;
    scene sc, moved;
    scene_make(&sc, SCENE_MIXED, 3, false, 150, 40);
    scene_make(&moved, SCENE_MIXED, 3, false, 250, 0);
    /* the same first 150 boxes, moved a little: an incremental update */
    for (int64_t i = 0; i < 150 * 6; i++)
        moved.boxes.d[i] = sc.boxes.d[i] + (double)(i / 6 % 5) * 0.5;
    prox_pair_buffer want;
    fresh_pairs(&BRUTE, &moved, &want);
    int64_t budget = 0;
    prox_status st;
    while ((st = run_with_allocations(&sc, &moved, &want, budget)) == PROX_ERR_NO_MEMORY &&
           budget < 10000)
        budget++;
    CHECK(st == PROX_OK, "allocation failures", "status %d after %lld allocations: %s", (int)st,
          (long long)budget, prox_last_error());
    CHECK(budget > 10, "allocation failures", "only %lld allocations", (long long)budget);
    prox_pair_buffer_free(&want);
    scene_free(&sc);
    scene_free(&moved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scenes_of_test_broad_match_brute_force),
        cmocka_unit_test(lattices_match_brute_force),
        cmocka_unit_test(results_do_not_depend_on_threads),
        cmocka_unit_test(callback_can_stop_early),
        cmocka_unit_test(stats_are_consistent),
        cmocka_unit_test(updates_match_fresh_builds),
        cmocka_unit_test(updates_to_and_from_nothing),
        cmocka_unit_test(allocation_failures_are_reported),
    };
    return cmocka_run_group_tests_name("sap", tests, NULL, NULL);
}
