/* input.h: reading point files.
 *
 * Text (any name, or "-" for stdin): one point per line, its coordinates
 * separated by spaces, tabs or commas; '#' starts a comment that runs to the
 * end of the line; blank lines are ignored. Comment lines before the first
 * point may carry "radius=R" and "dim=D" (as `prox gen` writes them).
 * Binary (a name ending in .f64 or .f32): packed little-endian doubles or
 * floats, x y [z] per point; floats stay floats.
 * Every problem is fatal: EXIT_DATA with "FILE:LINE: what" for bad content,
 * EXIT_IO when the file cannot be read.
 */
#ifndef PROX_TOOLS_INPUT_H
#define PROX_TOOLS_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prox/core.h"

typedef struct point_file {
    prox_scalar scalar; /* PROX_F32 only for .f32 files */
    int dim;
    int64_t count;
    void *coords;       /* count * dim doubles or floats, packed */
    bool has_radius;    /* the header said "radius=R" */
    double radius;
} point_file;

/* The bytes of path ("-": stdin) followed by a NUL that is not counted;
 * EXIT_IO when it cannot be read. */
char *read_whole_file(const char *path, size_t *len);

/* The numbers at *p up to the end of its line (spaces, tabs or commas
 * between them; '#' starts a comment): the first `max` go to v[], all are
 * counted. *p is left on the '\n', '#' or NUL that ended them. A token that
 * is not a number, or a number that is not finite, is fatal as
 * "PATH:LINE: ..." (`what` names it: "coordinate", "number"). */
int line_numbers(const char *path, int64_t line, const char **p, double *v, int max,
                 const char *what);

/* A text file must hold no NUL byte: fatal as "PATH:LINE: NUL byte ...". */
void reject_nul_bytes(const char *data, size_t len, const char *path);

/* The start of the line after the one p is in (or end). */
const char *next_line(const char *p, const char *end);

/* dim 2 or 3; 0 takes the header's "dim=D" if there is one, else 3. */
void point_file_read(point_file *pf, const char *path, int dim);
void point_file_free(point_file *pf);
prox_points point_file_view(const point_file *pf);

#endif
