/* input.h: reading point files.
 *
 * .npy (a name ending in .npy): numpy's array file (npy.h), shape (n, 2) or
 * (n, 3) of '<f8' or '<f4'; its header gives the dimension, and floats
 * stay floats.
 * Text (any other name, or "-" for stdin): one point per line, its
 * coordinates separated by spaces, tabs or commas; '#' starts a comment
 * that runs to the end of the line; blank lines are ignored. Comment lines
 * before the first point may carry "radius=R" and "dim=D" (as `prox gen`
 * writes them). Read a block at a time: the first bad line stops the read.
 * Raw binary (a name ending in .f64 or .f32): packed little-endian doubles
 * or floats, x y [z] per point, with no header: nothing in the file says
 * what it holds (.npy does).
 * A binary file's size is checked against its header or its point size
 * before its values are read. Every problem is fatal: EXIT_DATA with
 * "FILE:LINE: what" for bad content, EXIT_IO when the file cannot be read.
 */
#ifndef PROX_TOOLS_INPUT_H
#define PROX_TOOLS_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prox/core.h"

typedef struct point_file {
    prox_scalar scalar; /* PROX_F32 only for .f32 files and '<f4' .npy files */
    int dim;
    int64_t count;
    void *coords;       /* count * dim doubles or floats, packed */
    bool has_radius;    /* the header said "radius=R" */
    double radius;
} point_file;

/* A text file ("-": stdin) a block at a time: line(ctx, number, text) for
 * each line, numbered from 1, text ending at its '\n' or at a NUL. A NUL
 * byte in the file is fatal as "PATH:LINE: NUL byte ..." once the lines
 * before it are handed over; so is a line over 16 MiB. EXIT_IO when the
 * file cannot be read. */
typedef void (*text_line_fn)(void *ctx, int64_t line, const char *text);
void read_text_lines(const char *path, text_line_fn line, void *ctx);

/* The values of a binary file: .npy, or raw .f64/.f32. */
typedef struct binary_file {
    prox_scalar scalar;
    int64_t rows;
    int cols;
    void *values; /* rows * cols doubles or floats, packed, in host order */
} binary_file;

/* .npy, .f64 or .f32. */
bool is_binary_name(const char *path);
/* .f64 or .f32: headerless, the caller says how many values a row has. */
bool is_raw_binary_name(const char *path);
/* A binary file of rows of `cols` values (raw files need cols > 0; a .npy
 * file's header gives them, and must agree with cols > 0). Every value must
 * be finite; `item` names a row in messages ("point", "row"). */
void read_binary_file(const char *path, int cols, const char *item, binary_file *bf);

/* The numbers at *p up to the end of its line (spaces, tabs or commas
 * between them; '#' starts a comment): the first `max` go to v[], all are
 * counted. *p is left on the '\n', '#' or NUL that ended them. A token that
 * is not a number, or a number that is not finite, is fatal as
 * "PATH:LINE: ..." (`what` names it: "coordinate", "number"). */
int line_numbers(const char *path, int64_t line, const char **p, double *v, int max,
                 const char *what);

/* dim 2 or 3; 0 takes a .npy file's shape, a text file's header "dim=D"
 * if there is one, else 3. */
void point_file_read(point_file *pf, const char *path, int dim);
void point_file_free(point_file *pf);
prox_points point_file_view(const point_file *pf);

#endif
