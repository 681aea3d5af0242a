/* test_kdtree.c: the linear kd-tree (Poirrier 2009) against brute force.
 *
 * The scenes of test_broad.c (mixed sizes with points, zero-extent,
 * touching, copied and scene-spanning boxes; 1e9 offsets; N = 0, 1; all
 * boxes identical), every query kind and sink, 2D and 3D, float and double,
 * for kd-tree-1 and kd-tree-2, with and without splitting (by the default
 * split cost, by Figure 7's rule, and rarely: a high cost), with the root
 * cell fitted, larger than the data, and smaller than the data (boxes
 * outside it). Then: boxes exactly on cutting planes, the depth limit,
 * identical output for 1, 2 and 3 threads, the diagnostics, the sweep
 * counter beyond 2^32, bad options, allocation failures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broad_scenes.h"
#include "broad/linear_kdtree.h"

/* ---- configurations ------------------------------------------------------ */

/* A config with the kd-tree's options (create_hook applies them). */
typedef struct kd_config {
    config base;
    void (*tune)(prox_broad_desc *d);
} kd_config;

#define KD(name) {name, PROX_BROAD_KDTREE, 0, 0, false, 0, 0}

static void apply_tune(const config *c, prox_broad_desc *d)
{
    if (c->algo == PROX_BROAD_KDTREE)
        ((const kd_config *)(const void *)c)->tune(d);
}

static void v1(prox_broad_desc *d) { d->kdtree_variant = 1; }
static void v2(prox_broad_desc *d) { d->kdtree_variant = 2; }
static void v1_nosplit(prox_broad_desc *d) { d->kdtree_variant = 1; d->kdtree_split = false; }
static void v2_nosplit(prox_broad_desc *d) { d->kdtree_variant = 2; d->kdtree_split = false; }
static void v1_figure7(prox_broad_desc *d) { d->kdtree_variant = 1; d->kdtree_split_cost = 0; }
static void v2_figure7(prox_broad_desc *d) { d->kdtree_variant = 2; d->kdtree_split_cost = 0; }
static void v2_costly(prox_broad_desc *d) { d->kdtree_variant = 2; d->kdtree_split_cost = 50; }

/* The scenes span about -3e4 .. 1e5 (1e9 .. 1e9 + 1.3e5 with offsets). */
static void root_large(prox_broad_desc *d)
{
    for (int k = 0; k < 3; k++) {
        d->root_lo[k] = -1e12;
        d->root_hi[k] = 1e12;
    }
}

/* A root cell inside the data: most boxes lie (partly) outside it. */
static void root_small(prox_broad_desc *d)
{
    for (int k = 0; k < 3; k++) {
        d->root_lo[k] = 100.0;
        d->root_hi[k] = 4196.0;
    }
}

static void v1_root_small(prox_broad_desc *d) { v1(d); root_small(d); }

static const kd_config KD_CONFIGS[] = {
    {KD("kd-tree-2"), v2},
    {KD("kd-tree-1"), v1},
    {KD("kd-tree-2 no split"), v2_nosplit},
    {KD("kd-tree-1 no split"), v1_nosplit},
    {KD("kd-tree-2 split cost 0 (Figure 7)"), v2_figure7},
    {KD("kd-tree-1 split cost 0 (Figure 7)"), v1_figure7},
    {KD("kd-tree-2 split cost 50"), v2_costly},
    {KD("kd-tree-2 root 1e12"), root_large},
    {KD("kd-tree-2 root inside the data"), root_small},
    {KD("kd-tree-1 root inside the data"), v1_root_small},
};
#define CONFIG_COUNT ((int)(sizeof KD_CONFIGS / sizeof KD_CONFIGS[0]))
#define CONFIGS(c) (&KD_CONFIGS[c].base)

static const config *const *all_configs(void)
{
    static const config *list[CONFIG_COUNT];
    for (int c = 0; c < CONFIG_COUNT; c++)
        list[c] = CONFIGS(c);
    return list;
}

/* ---- the scenes of the other structures ------------------------------------ */

static void scenes_of_test_broad_match_brute_force(void **state)
{
    (void)state;
    check_common_scenes(all_configs(), CONFIG_COUNT);
}

/* ---- scenes of the kd-tree's own edge cases -------------------------------- */

/* The queries of a mixed scene with these boxes instead (boxes[] packed as
 * min corner, max corner). */
static void scene_with_boxes(scene *sc, int dim, bool f32, const double *boxes, int64_t n)
{
    scene_make(sc, SCENE_MIXED, dim, f32, 1, 200);
    free(sc->boxes.d);
    free(sc->boxes.f);
    box_set_alloc(&sc->boxes, dim, n);
    memcpy(sc->boxes.d, boxes, (size_t)(2 * dim * n) * sizeof(double));
    finish(sc->boxes.d, sc->boxes.f, 2 * dim * n, f32);
}

static void root_1024(prox_broad_desc *d)
{
    for (int k = 0; k < 3; k++) {
        d->root_lo[k] = 0.0;
        d->root_hi[k] = 1024.0;
    }
}

static void v1_root_1024(prox_broad_desc *d) { v1(d); root_1024(d); }
static void nosplit_root_1024(prox_broad_desc *d) { v2_nosplit(d); root_1024(d); }
static void figure7_root_1024(prox_broad_desc *d) { v2_figure7(d); root_1024(d); }

/* Boxes whose faces lie exactly on cutting planes of the root [0, 1024]^d
 * (multiples of 2^-2 .. 2^9), touching each other across them, and boxes
 * spanning the whole root. */
static void boxes_on_cutting_planes_match_brute_force(void **state)
{
    (void)state;
    const kd_config cfgs[] = {
        {KD("kd-tree-2 root 1024"), root_1024},
        {KD("kd-tree-1 root 1024"), v1_root_1024},
        {KD("kd-tree-2 no split, root 1024"), nosplit_root_1024},
        {KD("kd-tree-2 split cost 0, root 1024"), figure7_root_1024},
        {KD("kd-tree-2 fitted root"), v2},
    };
    const config *list[] = {&cfgs[0].base, &cfgs[1].base, &cfgs[2].base, &cfgs[3].base,
                            &cfgs[4].base};
    rng r = rng_seeded(31);
    for (int dim = 2; dim <= 3; dim++) {
        int64_t n = 600;
        double *b = calloc((size_t)(2 * dim * n), sizeof(double));
        for (int64_t i = 0; i < n; i++) {
            double *box = b + 2 * dim * i;
            for (int k = 0; k < dim; k++) {
                double step = ldexp(1.0, (int)rng_below(&r, 12) - 2); /* 2^-2 .. 2^9 */
                double lo = step * (double)rng_below(&r, (uint64_t)(1024 / step));
                box[k] = lo;
                box[dim + k] = fmin(1024.0, lo + step * (double)rng_below(&r, 3));
            }
            if (i % 50 == 7) /* the whole root */
                for (int k = 0; k < dim; k++) {
                    box[k] = 0;
                    box[dim + k] = 1024;
                }
        }
        for (int f32 = 0; f32 <= 1; f32++) {
            scene sc;
            scene_with_boxes(&sc, dim, f32, b, n);
            check_scene(&sc, list, 5);
            scene_free(&sc);
        }
        free(b);
    }
}

static void root_unit(prox_broad_desc *d)
{
    for (int k = 0; k < 3; k++) {
        d->root_lo[k] = 0.0;
        d->root_hi[k] = 1.0;
    }
}

/* Boxes far smaller than the deepest cell (2^-19 of the root in 3D, 2^-29
 * in 2D): tiny boxes, points and copies packed around a few spots, so that
 * codes reach the depth limit and many boxes share the deepest cells. */
static void depth_limit_is_reached_and_correct(void **state)
{
    (void)state;
    const kd_config kcfg = {KD("kd-tree-2 root unit cube"), root_unit};
    const config cfg = kcfg.base, *list[] = {&kcfg.base};
    rng r = rng_seeded(77);
    for (int dim = 2; dim <= 3; dim++) {
        int64_t n = 500;
        double *b = calloc((size_t)(2 * dim * n), sizeof(double));
        for (int64_t i = 0; i < n; i++) {
            double *box = b + 2 * dim * i;
            for (int k = 0; k < dim; k++) {
                box[k] = 0.25 + (double)(i % 3) * 0.125 + rng_range(&r, 0, 1e-9);
                box[dim + k] = box[k] + (i % 4 == 0 ? 0.0 : rng_range(&r, 0, 1e-10));
            }
        }
        scene sc;
        scene_with_boxes(&sc, dim, false, b, n);
        check_scene(&sc, list, 1);
        prox_broad *br = create(&kcfg.base, 1);
        prox_boxes v = box_view(&sc.boxes, false);
        CHECK_STATUS(prox_broad_build(br, &v), PROX_OK, cfg.name);
        prox_kdtree_info info;
        CHECK_STATUS(prox_broad_kdtree_info(br, &info), PROX_OK, cfg.name);
        CHECK(info.depth_limit == (dim == 3 ? 57 : 58) && info.deepest == info.depth_limit,
              cfg.name, "%dD: depth limit %d, deepest code %d", dim, info.depth_limit,
              info.deepest);
        prox_broad_destroy(br);
        scene_free(&sc);
        free(b);
    }
}

/* ---- threads, diagnostics, counting ---------------------------------------- */

static void results_do_not_depend_on_threads(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        scene sc;
        max_edge_exp = 8;
        /* several chunks, and more boxes than 2 x BLOCK (8192): records made
         * in slices, one a thread, cut at a multiple of eight */
        scene_make(&sc, SCENE_MIXED, dim, false, 9001, 4100);
        max_edge_exp = 15;
        for (int c = 0; c < 4; c++)
            check_threads_agree(CONFIGS(c), &sc, Q_KINDS);
        scene_free(&sc);
    }
}

/* Sub-elements within [n, 2^dim n] (n without splitting); kd-tree-1's
 * candidates are the sweep's pairs; kd-tree-2's are at most those and at
 * least the pairs; splitting selects fewer pairs than not splitting on
 * small boxes; the default root is a cube (square). */
static void diagnostics_are_consistent(void **state)
{
    (void)state;
    for (int dim = 2; dim <= 3; dim++) {
        scene sc;
        max_edge_exp = 6;
        scene_make(&sc, SCENE_MIXED, dim, false, 3000, 10);
        max_edge_exp = 15;
        prox_boxes v = box_view(&sc.boxes, false);
        int64_t sweep[4] = {0}, pairs[4] = {0};
        for (int c = 0; c < 4; c++) {
            prox_broad *b = create(CONFIGS(c), 2);
            CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, CONFIGS(c)->name);
            prox_kdtree_info info;
            CHECK_STATUS(prox_broad_kdtree_info(b, &info), PROX_OK, CONFIGS(c)->name);
            bool split = c < 2;
            int64_t n = sc.boxes.n;
            CHECK(info.elements == n && info.sub_elements >= n &&
                      info.sub_elements <= (split ? (1 << dim) * n : n) && info.cells > 0 &&
                      info.cell_volume > 0,
                  CONFIGS(c)->name, "%dD: %lld boxes, %lld sub-elements, %lld cells", dim,
                  (long long)info.elements, (long long)info.sub_elements,
                  (long long)info.cells);
            CHECK(info.records_s >= 0 && info.sort_s >= 0 && info.records_s < 60 &&
                      info.sort_s < 60,
                  CONFIGS(c)->name, "%dD: the build's phases took %g s and %g s", dim,
                  info.records_s, info.sort_s);
            double side = info.root_hi[0] - info.root_lo[0]; /* the default root: a cube */
            CHECK(side > 0 && info.root_hi[1] - info.root_lo[1] == side &&
                      (dim == 2 || info.root_hi[2] - info.root_lo[2] == side),
                  CONFIGS(c)->name, "%dD: root %g x %g x %g", dim, side,
                  info.root_hi[1] - info.root_lo[1], info.root_hi[2] - info.root_lo[2]);
            prox_stats st;
            CHECK_STATUS(prox_broad_pairs(b, prox_sink_count(), &st), PROX_OK, CONFIGS(c)->name);
            sweep[c] = info.sweep_pairs;
            pairs[c] = st.pairs;
            bool v1_variant = c % 2 == 1;
            CHECK(v1_variant ? st.candidates == info.sweep_pairs
                             : st.candidates <= info.sweep_pairs && st.candidates >= st.pairs,
                  CONFIGS(c)->name, "%dD: candidates %lld, sweep pairs %lld, pairs %lld", dim,
                  (long long)st.candidates, (long long)info.sweep_pairs, (long long)st.pairs);
            prox_broad_destroy(b);
        }
        CHECK(pairs[0] == pairs[1] && pairs[1] == pairs[2] && pairs[2] == pairs[3] &&
                  sweep[0] == sweep[1] && sweep[2] == sweep[3],
              "kdtree", "%dD: sweep pairs split %lld, unsplit %lld", dim, (long long)sweep[0],
              (long long)sweep[2]);
        scene_free(&sc);
    }
}

/* n equal boxes of edge 2 spread uniformly (W3 in miniature, Poirrier 2009
 * Table 1), bounds packed as doubles; the caller frees them. */
static double *small_equal_boxes(rng *r, int dim, int64_t n)
{
    double *b = calloc((size_t)(2 * dim * n), sizeof(double));
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < dim; k++) {
            b[2 * dim * i + k] = rng_range(r, 0, dim == 3 ? 40 : 150);
            b[2 * dim * i + dim + k] = b[2 * dim * i + k] + 2;
        }
    return b;
}

/* The diagnostics of a one-thread kd-tree-2 over v. */
static prox_kdtree_info info_of(const prox_boxes *v, bool split, double cost)
{
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = PROX_BROAD_KDTREE;
    d.threads = 1;
    d.kdtree_split = split;
    d.kdtree_split_cost = cost;
    prox_broad *br = NULL;
    prox_kdtree_info info = {0};
    CHECK_STATUS(prox_broad_create(&d, &br), PROX_OK, "kd-tree");
    CHECK_STATUS(prox_broad_build(br, v), PROX_OK, "kd-tree");
    CHECK_STATUS(prox_broad_kdtree_info(br, &info), PROX_OK, "kd-tree");
    prox_broad_destroy(br);
    return info;
}

/* Splitting at the default cost cuts the sweep's pairs several times
 * over, and the cost trades records for sweep pairs: Figure 7's rule
 * (cost 0) makes the most records, the default fewer, and a cost above any
 * volume a split could save makes none: the unsplit tree, record for
 * record. */
static void split_cost_trades_records_for_pairs(void **state)
{
    (void)state;
    rng r = rng_seeded(12);
    for (int dim = 2; dim <= 3; dim++) {
        int64_t n = 4000;
        double *b = small_equal_boxes(&r, dim, n);
        prox_boxes v = prox_boxes_f64(b, n, dim);
        prox_kdtree_info info[4] = {info_of(&v, true, 0.0), info_of(&v, true, 1.0),
                                    info_of(&v, true, 1e6), info_of(&v, false, 1.0)};
        CHECK(4 * info[1].sweep_pairs < info[3].sweep_pairs, "kdtree",
              "%dD: sweep pairs split %lld, unsplit %lld", dim, (long long)info[1].sweep_pairs,
              (long long)info[3].sweep_pairs);
        CHECK(info[0].sub_elements > info[1].sub_elements &&
                  info[1].sub_elements > info[2].sub_elements,
              "split cost", "%dD: records at cost 0, 1, 1e6: %lld, %lld, %lld", dim,
              (long long)info[0].sub_elements, (long long)info[1].sub_elements,
              (long long)info[2].sub_elements);
        CHECK(info[2].sub_elements == n && info[2].sweep_pairs == info[3].sweep_pairs &&
                  info[2].cells == info[3].cells,
              "split cost", "%dD: cost 1e6 gives %lld records, %lld sweep pairs; unsplit "
              "%lld sweep pairs", dim, (long long)info[2].sub_elements,
              (long long)info[2].sweep_pairs, (long long)info[3].sweep_pairs);
        free(b);
    }
}

static uint64_t key_at(uint64_t path, int len, int depth)
{
    return (path << (depth - len)) << PROX_KD_LEN_BITS | (uint64_t)len;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The O(n) counter against the naive sweep on random nested keys, and with
 * counts past 2^32: 100,000 records in one cell pair up 4,999,950,000
 * times; under them a chain of cells adds records each paired with all
 * above. */
static void sweep_counter_counts_in_64_bits(void **state)
{
    (void)state;
    const int depth = 57;
    rng r = rng_seeded(5);
    for (int round = 0; round < 20; round++) {
        int64_t n = 1 + (int64_t)rng_below(&r, 400);
        uint64_t *keys = malloc((size_t)n * sizeof *keys);
        for (int64_t i = 0; i < n; i++) {
            int len = (int)rng_below(&r, 7);
            keys[i] = key_at(rng_below(&r, (uint64_t)1 << len), len, depth);
        }
        qsort(keys, (size_t)n, sizeof *keys, compare_u64);
        int64_t naive = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n && keys[j] <= prox_kd_subtree_last(keys[i], depth); j++)
                naive++;
        int64_t fast = prox_kd_count_sweep_pairs(keys, n, depth);
        CHECK(fast == naive, "sweep counter", "round %d: %lld, naive %lld", round,
              (long long)fast, (long long)naive);
        free(keys);
    }
    int64_t same = 100000, chain = 40;
    uint64_t *keys = malloc((size_t)(same + chain + 1) * sizeof *keys);
    for (int64_t i = 0; i < same; i++)
        keys[i] = key_at(0, 0, depth);
    for (int64_t c = 0; c < chain; c++) /* cells 0, 00, 000, ... below the root */
        keys[same + c] = key_at(0, (int)c + 1, depth);
    keys[same + chain] = key_at(1, 1, depth); /* the root's upper child */
    int64_t want = same * (same - 1) / 2;
    for (int64_t c = 0; c < chain; c++)
        want += same + c;
    want += same;
    int64_t got = prox_kd_count_sweep_pairs(keys, same + chain + 1, depth);
    CHECK(got == want && want > ((int64_t)1 << 32), "sweep counter", "%lld, expected %lld",
          (long long)got, (long long)want);
    free(keys);
}

/* ---- options, errors, allocation --------------------------------------------- */

static void bad_options_are_rejected(void **state)
{
    (void)state;
    prox_broad_desc d = prox_default_broad_desc();
    prox_broad *b = NULL;
    d.algo = PROX_BROAD_KDTREE;
    d.kdtree_variant = 3;
    CHECK_STATUS(prox_broad_create(&d, &b), PROX_ERR_INVALID, "variant 3");
    CHECK(strstr(prox_last_error(), "kdtree_variant") != NULL, "variant 3", "%s",
          prox_last_error());
    const double bad_costs[] = {-1.0, NAN, INFINITY};
    for (int c = 0; c < 3; c++) {
        d = prox_default_broad_desc();
        d.algo = PROX_BROAD_KDTREE;
        d.kdtree_split_cost = bad_costs[c];
        CHECK_STATUS(prox_broad_create(&d, &b), PROX_ERR_INVALID, "split cost");
        CHECK(strstr(prox_last_error(), "kdtree_split_cost") != NULL && b == NULL, "split cost",
              "%g: %s", bad_costs[c], prox_last_error());
    }
    d = prox_default_broad_desc();
    d.algo = PROX_BROAD_KDTREE;
    d.root_lo[0] = 5;
    d.root_hi[0] = 1; /* lo > hi along x */
    CHECK_STATUS(prox_broad_create(&d, &b), PROX_OK, "root");
    double box[6] = {0, 0, 0, 1, 1, 1};
    prox_boxes v = prox_boxes_f64(box, 1, 3);
    CHECK_STATUS(prox_broad_build(b, &v), PROX_ERR_INVALID, "root lo > hi");
    CHECK(strstr(prox_last_error(), "root cell along x") != NULL, "root", "%s",
          prox_last_error());
    CHECK_STATUS(prox_broad_pairs(b, prox_sink_count(), NULL), PROX_ERR_INVALID,
                 "pairs after a failed build");
    prox_broad_destroy(b);
    d.root_lo[0] = 0;
    d.root_hi[0] = INFINITY;
    CHECK_STATUS(prox_broad_create(&d, &b), PROX_OK, "root");
    CHECK_STATUS(prox_broad_build(b, &v), PROX_ERR_INVALID, "infinite root");
    prox_kdtree_info info;
    CHECK_STATUS(prox_broad_kdtree_info(b, &info), PROX_ERR_INVALID, "info, not built");
    prox_broad_destroy(b);
    d = prox_default_broad_desc(); /* the hierarchical hash: no kd-tree info */
    CHECK_STATUS(prox_broad_create(&d, &b), PROX_OK, "hierarchical");
    CHECK_STATUS(prox_broad_build(b, &v), PROX_OK, "hierarchical");
    CHECK_STATUS(prox_broad_kdtree_info(b, &info), PROX_ERR_INVALID, "info of a hash");
    prox_broad_destroy(b);
}

static prox_status run_with_allocations(const kd_config *c, const scene *sc, int64_t budget)
{
    failing_allocator f = {budget, 0};
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = c->base.algo;
    c->tune(&d);
    d.threads = 1;
    d.allocator = failing_allocator_hook(&f);
    prox_broad *b = NULL;
    prox_status st = prox_broad_create(&d, &b);
    prox_boxes v = box_view(&sc->boxes, false);
    prox_pair_buffer buf;
    prox_pair_buffer_init(&buf, NULL);
    if (!st) st = prox_broad_build(b, &v);
    if (!st) st = prox_broad_pairs(b, prox_sink_buffer(&buf), NULL);
    if (!st) st = run_kind(b, sc, Q_SEGMENTS, prox_sink_buffer(&buf), NULL);
    if (!st) st = prox_broad_build(b, &v);
    prox_broad_destroy(b);
    prox_pair_buffer_free(&buf);
    return st;
}

static void allocation_failures_are_reported(void **state)
{
    (void)state;
    scene sc;
    scene_make(&sc, SCENE_MIXED, 3, false, 200, 50);
    for (int c = 0; c < 2; c++) {
        int64_t budget = 0;
        prox_status st;
        while ((st = run_with_allocations(&KD_CONFIGS[c], &sc, budget)) == PROX_ERR_NO_MEMORY &&
               budget < 1000)
            budget++;
        CHECK(st == PROX_OK, CONFIGS(c)->name, "status %d after %lld allocations: %s", (int)st,
              (long long)budget, prox_last_error());
    }
    scene_free(&sc);
}

int main(void)
{
    create_hook = apply_tune;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scenes_of_test_broad_match_brute_force),
        cmocka_unit_test(boxes_on_cutting_planes_match_brute_force),
        cmocka_unit_test(depth_limit_is_reached_and_correct),
        cmocka_unit_test(results_do_not_depend_on_threads),
        cmocka_unit_test(diagnostics_are_consistent),
        cmocka_unit_test(split_cost_trades_records_for_pairs),
        cmocka_unit_test(sweep_counter_counts_in_64_bits),
        cmocka_unit_test(bad_options_are_rejected),
        cmocka_unit_test(allocation_failures_are_reported),
    };
    return cmocka_run_group_tests_name("kdtree", tests, NULL, NULL);
}
