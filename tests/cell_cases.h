/* cell_cases.h (cell_cases.c): what the cell tests share: random cells,
 * heights, an fcc crystal, and the comparison of a geometry result with
 * the image oracle (cell_oracle.h). */
#ifndef PROX_TESTS_CELL_CASES_H
#define PROX_TESTS_CELL_CASES_H

#include "cell_oracle.h"
#include "rng.h"

/* The height of axis k: the distance between the faces the other rows span
 * (2D: the area over the other row's length); the least over the axes. */
double cell_height(double m[3][3], int dim, int k);
double cell_min_height(double m[3][3], int dim);

/* Lengths in [0.5, 1.5) times `scale`, angles in [30, 120) degrees, in
 * ASE's lower-triangular form or (3D, half the time) rotated into a
 * general one. */
void cell_random(rng *r, int dim, double scale, double m[3][3]);

/* n points (malloc'd, dim each, packed) at fractions of m in [-1.5, 2.5)
 * (unwrapped), some exactly on faces (fractions 0, 1, -1). */
double *cell_random_points(rng *r, double m[3][3], int dim, int64_t n);

/* The primitive fcc cell of lattice constant `a`, repeated L times along
 * each row (m), with one atom per primitive cell: x holds L^3 points. */
void cell_fcc_crystal(int L, double a, double m[3][3], double *x);

/* Fails the test unless g holds the oracle's images, every array to the
 * bit (i, j, d, D and S asked for). */
void check_geometry(const prox_geometry *g, const oracle_images *o, const char *context);

#endif
