/* box_io.h: the files of `prox collide` and `prox query`, and the pair
 * lines they write.
 *
 * A row file holds rows of `cols` numbers: boxes (min corner then max
 * corner: 4 numbers in 2D, 6 in 3D) or segments (start then end).
 * .npy (a name ending in .npy): numpy's array file, shape (rows, 4) or
 * (rows, 6) of '<f8' or '<f4' (npy.h).
 * Text (any other name, "-" for stdin): one row per line, numbers separated
 * by spaces, tabs or commas; '#' starts a comment; blank lines are ignored.
 * Raw binary (a name ending in .f64 or .f32): packed little-endian doubles
 * or floats, row after row, with no header. Files are read as input.h
 * reads points. Problems are fatal: EXIT_DATA with "FILE:LINE: what" for
 * bad content, EXIT_IO when the file cannot be read. */
#ifndef PROX_TOOLS_BOX_IO_H
#define PROX_TOOLS_BOX_IO_H

#include <stdint.h>

#include "output.h"
#include "prox/prox.h"

typedef struct row_file {
    prox_scalar scalar; /* PROX_F32 only for .f32 files and '<f4' .npy files */
    int cols;
    int64_t rows;
    void *values; /* rows * cols doubles or floats */
} row_file;

/* cols > 0: rows of exactly cols numbers. cols == 0 (text and .npy): as
 * many as the first row (the .npy shape) has, which must be 4 (2D) or 6
 * (3D); 6 when a text file has no row (empty, or comments only: zero boxes,
 * 3D as for points). */
void row_file_read(row_file *rf, const char *path, int cols);
void row_file_free(row_file *rf);

/* The rows as boxes of dimension dim (cols == 2 * dim). */
prox_boxes row_file_boxes(const row_file *rf, int dim);
/* The rows as segments: starts (first dim numbers) and ends. */
void row_file_segments(const row_file *rf, int dim, prox_points *starts, prox_points *ends);

/* "i j" per pair, in buffer order. */
void write_pair_lines(output *out, const prox_pair_buffer *buffer);

#endif
