/* inputs.h: deterministic point clouds for the test suite.
 *
 * A test_case is one input class in one dimension, scalar type and
 * periodicity. Its `points` hold the coordinates exactly as the library sees
 * them (for f32: the float values widened to double), so that the oracle can
 * run on them directly. */
#ifndef PROX_TESTS_INPUTS_H
#define PROX_TESTS_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prox/prox.h"
#include "rng.h"

/* Packed coordinates x,y[,z],... in double. */
typedef struct cloud {
    int dim;
    int64_t count;
    double *xyz;
} cloud;

void cloud_alloc(cloud *c, int dim, int64_t count);
void cloud_free(cloud *c);
void cloud_copy(cloud *dst, const cloud *src);
static inline double *cloud_point(const cloud *c, int64_t i)
{
    return c->xyz + i * c->dim;
}
/* count points uniform in [lo, lo + size) on every axis. */
void cloud_uniform(cloud *c, int dim, int64_t count, double lo, double size, rng *r);

typedef enum periodicity {
    PERIODIC_NONE = 0,
    PERIODIC_ALL,
    PERIODIC_X_ONLY,
    PERIODICITY_COUNT
} periodicity;

typedef enum input_class {
    INPUT_UNIFORM = 0,
    INPUT_CLUSTERED,
    INPUT_DUPLICATES,
    INPUT_LATTICE,         /* integer lattice, r = 1: pairs at exactly r */
    INPUT_HALF_LATTICE,    /* lattice of spacing r/2 */
    INPUT_DECIMAL_LATTICE, /* coordinates k * 0.1, r = 0.1 (inexact binary) */
    INPUT_NEGATIVE,        /* all coordinates in [-24, -16) */
    INPUT_MIXED_SIGN,      /* integer lattice from -4 to 3 */
    INPUT_HUGE_OFFSET,     /* 1e9 (f64) or 1e5 (f32) plus [0, 8) */
    INPUT_EMPTY,
    INPUT_SINGLE,
    INPUT_ALL_EQUAL,       /* 50 copies of one point: every pair */
    INPUT_TINY_RADIUS,     /* r = 1e-9 on unit data */
    INPUT_HUGE_RADIUS,     /* r = 1e6 on unit data: every pair */
    INPUT_OUTLIER,         /* unit data plus two points near 1e7 */
    INPUT_NARROW_PERIOD,   /* box of 2r + 1/16: two cells along each axis */
    INPUT_SEAM,            /* lattice k / 10 up to the period 1.3, r = 0.1: ties across the seam */
    INPUT_CLASS_COUNT
} input_class;

typedef struct test_case {
    input_class cls;
    int dim;
    prox_scalar scalar;
    periodicity periodic;
    double radius;
    double period[3]; /* as given to the library, 0 = open axis */
    bool valid;       /* false when the library must answer PROX_ERR_INVALID */
    cloud points;     /* the values the library sees, as double */
    cloud queries;    /* a second set for the query calls */
    float *points_f32;  /* scalar == PROX_F32: the arrays given to the library */
    float *queries_f32;
} test_case;

const char *input_class_name(input_class cls);
const char *periodicity_name(periodicity p);
const char *scalar_name(prox_scalar s);

void test_case_make(test_case *tc, input_class cls, int dim, prox_scalar scalar,
                    periodicity periodic);
/* `count` f64 points uniform in [0, box)^dim (shifted by whole periods on
 * periodic axes), `queries` in [-1, box + 1)^dim. */
void test_case_make_large_uniform(test_case *tc, int dim, int64_t count, int64_t queries,
                                  double box, double radius, periodicity periodic);
void test_case_free(test_case *tc);
prox_points test_case_points(const test_case *tc);
prox_points test_case_queries(const test_case *tc);
/* "class=uniform dim=3 scalar=f64 periodic=all N=1000 Q=300 r=1" */
void test_case_describe(const test_case *tc, char *out, size_t size);

/* Rounds every coordinate to float: returns the float array (the caller
 * frees it) and replaces c's values by the floats widened to double. */
float *cloud_round_to_float(cloud *c);

#endif
