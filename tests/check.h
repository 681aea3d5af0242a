/* check.h: comparing the library's results with the oracle, for cmocka
 * tests. Every failing comparison prints what was compared (input class,
 * parameters, algorithm, sink) and the first differing pair or row. */
#ifndef PROX_TESTS_CHECK_H
#define PROX_TESTS_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the headers above first. */
#include <cmocka.h>

#include "inputs.h"
#include "oracle.h"
#include "prox/prox.h"

/* Fails the current test with the context line and a formatted reason. */
#define CHECK(condition, context, ...)                                                     \
    do {                                                                                   \
        if (!(condition)) {                                                                \
            print_error("FAILED: %s\n  in: %s\n  ", #condition, (context));                 \
            print_error(__VA_ARGS__);                                                      \
            print_error("\n");                                                             \
            fail();                                                                        \
        }                                                                                  \
    } while (0)

/* A status check that prints both statuses and prox_last_error(). */
#define CHECK_STATUS(got, want, context)                                                   \
    do {                                                                                   \
        prox_status got_ = (got), want_ = (want);                                          \
        CHECK(got_ == want_, context, "status %d (%s), expected %d (%s); last error: \"%s\"", \
              (int)got_, prox_status_string(got_), (int)want_, prox_status_string(want_),   \
              prox_last_error());                                                          \
    } while (0)

/* One way of running the library: an algorithm and its grid options. */
typedef struct algo_config {
    const char *name;
    prox_algo algo;
    prox_keys keys;
    int cell_divisions;
    int64_t table_size;
    prox_coords coords; /* AUTO: fixed point in one-shot calls, doubles on grid objects */
    prox_rows rows;
} algo_config;

extern const algo_config CONFIG_BRUTE;
extern const algo_config CONFIG_MORTON;
extern const algo_config CONFIG_HASH;
extern const algo_config CONFIG_DIVISIONS_2;
extern const algo_config CONFIG_HASH_TINY_TABLE; /* table_size 8: collisions everywhere */
extern const algo_config CONFIG_LINEAR;           /* row-major keys: the strip searches */
extern const algo_config CONFIG_LINEAR_IN_PLACE;  /* rows counted, then written in place */
extern const algo_config CONFIG_LINEAR_DIVISIONS_2; /* strips of 5 cells, fixed point always */
extern const algo_config CONFIG_LINEAR_DOUBLE;      /* strips of 5 cells, doubles always */
/* The grid configurations above. */
extern const algo_config *const GRID_CONFIGS[];
#define GRID_CONFIG_COUNT 9

prox_grid_desc config_desc(const algo_config *config, double radius, const double period[3],
                           int threads);

/* What a comparison is about, for the failure message. */
typedef struct subject {
    const char *context;
    const cloud *rows;    /* points of the first index (queries for queries) */
    const cloud *columns; /* points of the second index */
    double radius;
    const double *period;
} subject;

/* got[0..count) must equal want exactly (same pairs, same order). */
void expect_same_pairs(const subject *s, const pair_list *want, const prox_pair *got,
                       int64_t got_count);
/* got must equal want: rows, offsets, and every row's indices. */
void expect_same_lists(const subject *s, const csr *want, const prox_lists *got);

/* Rows rows[0..want->rows) of got must equal want's rows 0.. in turn. */
void expect_sampled_rows(const subject *s, const csr *want, const int64_t *rows,
                         const prox_lists *got);

/* Expected results of a test case. */
typedef struct expectation {
    pair_list pairs;
    csr lists;
    pair_list query_pairs;
    csr query_lists;
} expectation;

void expectation_compute(expectation *e, const test_case *tc);
void expectation_free(expectation *e);

/* Callback sink helper: records every pair, stops after `stop_after` calls
 * (0 = never). */
typedef struct collector {
    pair_list got;
    int64_t calls;
    int64_t stop_after;
} collector;

void collector_init(collector *c, int64_t stop_after);
void collector_free(collector *c);
int collector_fn(prox_index i, prox_index j, void *user);

/* Runs prox_pairs and prox_query of one case with every sink (buffer, lists,
 * count, callback, callback stopping after 5) and compares with e. */
void check_case(const test_case *tc, const expectation *e, const algo_config *config,
                int threads);
/* The same through the object API: prox_grid_create, prox_grid_build, then
 * prox_grid_pairs and prox_grid_query with every sink, prox_grid_destroy. */
void check_case_on_grid(const test_case *tc, const expectation *e, const algo_config *config,
                        int threads);
/* prox_grid_pairs of an already built grid must give e->pairs; `step` names
 * the moment for the failure message. */
void check_grid_against(prox_grid *grid, const test_case *tc, const expectation *e,
                        const algo_config *config, const char *step);
/* threads = 2, 3 and 0 give byte-identical buffers and lists and the same
 * callback order as threads = 1, for prox_pairs and prox_query. */
void check_thread_independence(const test_case *tc, const algo_config *config);
/* check_thread_independence on a few representative cases. */
void check_thread_independence_on_samples(const algo_config *config);
/* Every dimension, scalar and periodicity of one input class, against each
 * of `configs`. */
void check_class(input_class cls, const algo_config *const *configs, int config_count);

/* malloc and free that add the bytes handed out to *bytes. */
prox_allocator counting_allocator(int64_t *bytes);
/* Byte-identical results. */
bool same_pair_buffers(const prox_pair_buffer *a, const prox_pair_buffer *b);
bool same_lists(const prox_lists *a, const prox_lists *b);
/* A repeated query (`what`) allocated under an eighth of what the first
 * one did: it reused the memory the object kept. */
void check_repeat_allocates_little(int64_t repeat_bytes, int64_t first_bytes,
                                   const char *context, const char *what);
/* Self pairs of a grid or broad-phase object, behind one signature. */
typedef prox_status (*self_pairs_fn)(void *object, prox_sink sink, prox_stats *stats);
/* Self pairs into `again`, sorted, must equal `want` and allocate under an
 * eighth of `first_bytes` (*allocated: the object's counting allocator). */
void check_repeated_sorted_pairs(self_pairs_fn pairs, void *object, const prox_pair_buffer *want,
                                 prox_pair_buffer *again, const int64_t *allocated,
                                 int64_t first_bytes, const char *context);

#endif
