/* broad_scenes.h: scenes of boxes, segments and swept boxes, running every
 * query kind with every sink, and comparing with brute force (checked
 * against naive loops), for the broad-phase tests. */
#ifndef PROX_TESTS_BROAD_SCENES_H
#define PROX_TESTS_BROAD_SCENES_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "rng.h"

/* One way of building a structure: the algorithm and its options. */
typedef struct config {
    const char *name;
    prox_broad_algo algo;
    double cell_size;
    int64_t table_size;
    bool growable;
    int min_class, max_class;
} config;

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

/* SIMILAR: boxes of similar sizes (the uniform grid then searches their
 * centres), some touching face to face or corner to corner; SIMILAR_OFFSET
 * the same at 1e9. */
typedef enum scene_kind {
    SCENE_MIXED, SCENE_OFFSET, SCENE_EMPTY, SCENE_ONE, SCENE_SAME, SCENE_SIMILAR,
    SCENE_SIMILAR_OFFSET
} scene_kind;

typedef enum query_kind {
    Q_PAIRS, Q_BOXES, Q_SEGMENTS, Q_SEGMENTS_BROAD, Q_SWEPT, Q_KINDS
} query_kind;

typedef struct result {
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_pair *called; /* callback order */
    int64_t called_count, called_capacity, count;
} result;

extern const config BRUTE;
extern const char *const kind_names[Q_KINDS];
/* Edges of mixed_boxes: 2^-4 .. 2^max_edge_exp (default 15). */
extern double max_edge_exp;

/* Called by create() when set, for options config does not hold (a test
 * may extend config by embedding it first in its own struct). */
extern void (*create_hook)(const config *c, prox_broad_desc *d);
prox_broad *create(const config *c, int threads);

void box_set_alloc(box_set *s, int dim, int64_t n);
void point_set_alloc(point_set *s, int dim, int64_t n);
double *box_at(const box_set *s, int64_t i);
/* Round to float when f32 (the doubles then hold what the library reads). */
void finish(double *v, float *f, int64_t count, bool f32);
prox_boxes box_view(const box_set *s, bool f32);
prox_points point_view(const point_set *s, bool f32);
/* Mixed sizes, with the special cases mixed in (see broad_scenes.c). */
void mixed_boxes(box_set *s, rng *r, int dim, int64_t n, double origin, double side);
void scene_make(scene *sc, scene_kind kind, int dim, bool f32, int64_t n, int64_t m);
void scene_free(scene *sc);

prox_status run_kind(prox_broad *b, const scene *sc, query_kind k, prox_sink sink,
                     prox_stats *stats);
void result_free(result *r);
/* Every sink of one query kind, on a structure built over the scene. */
void run_all_sinks(const config *c, const scene *sc, query_kind k, int threads, result *r,
                   const char *context);
void expect_same_result(const result *want, const result *got, bool symmetric,
                        const char *context);
/* Every query kind: brute force (checked against the naive loops) against
 * each of the configs, every sink, 2 threads. */
void check_scene(const scene *sc, const config *const *configs, int config_count);
/* Every query kind of a built structure against brute force over sc. */
void check_against_fresh_brute(prox_broad *b, const scene *sc, const char *context);
/* check_scene over the scene kind made in 2D and 3D, f64 and f32. */
void check_scene_kind(scene_kind kind, int64_t n, int64_t m, const config *const *configs,
                      int config_count);
/* Every query kind of the built structure b into a callback that asks to
 * stop at its 5th pair: PROX_STOPPED, 5 calls, stats.pairs 5. */
void check_callback_stops(prox_broad *b, const scene *sc, const char *name);

/* An allocator that fails once `left` allocations have been made; `live`
 * counts the blocks not yet freed. */
typedef struct failing_allocator {
    int64_t left, live;
} failing_allocator;
prox_allocator failing_allocator_hook(failing_allocator *f);

/* The scenes every structure meets (test_broad's): mixed sizes, offsets of
 * 1e9, empty and single, identical boxes. */
void check_common_scenes(const config *const *configs, int config_count);
/* Query kinds [0, kinds) of config c on 1, 2 and 3 threads: the same
 * results, and callbacks called in the same order. */
void check_threads_agree(const config *c, const scene *sc, int kinds);

#endif
