/* npy.h: numpy's .npy array files (format versions 1.0, 2.0 and 3.0), the
 * self-describing binary format of the CLI: a magic string, a version, and
 * a header (a Python dict literal) giving the dtype, the memory order and
 * the shape, then the values.
 *
 * What prox reads and writes: 2-D arrays in C order of little-endian
 * float64 ('<f8') or float32 ('<f4'), one row per point (or box, segment).
 * Anything else is refused by name: another dtype, big-endian values,
 * Fortran order, a shape that is not (rows, cols). */
#ifndef PROX_TOOLS_NPY_H
#define PROX_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "prox/core.h"

/* Bytes of the fixed prefix: magic (6), version (2), header length (2 in
 * version 1.0, 4 after). npy_prefix_length tells which from the first 8. */
#define NPY_MIN_PREFIX 10
/* The longest header accepted: numpy writes a few hundred bytes. */
#define NPY_MAX_HEADER (1 << 16)

typedef struct npy_array {
    prox_scalar scalar;
    int64_t rows;
    int cols;
    size_t data_offset; /* where the values start: prefix and header */
} npy_array;

/* The prefix of a file (at least NPY_MIN_PREFIX bytes of it): how many bytes
 * magic, version, header length and header take together. Fatal (EXIT_DATA,
 * naming path) when it is no .npy file or its version is unknown. */
size_t npy_header_bytes(const unsigned char *prefix, size_t len, const char *path);
/* The array that the first `len` bytes (npy_header_bytes of them) describe.
 * Fatal (EXIT_DATA, naming path and what is wrong) for anything prox does
 * not read. */
void npy_parse(const unsigned char *data, size_t len, const char *path, npy_array *out);
/* The most bytes npy_format_header writes. */
#define NPY_WRITTEN_MAX 128
/* A version 1.0 prefix and header for `rows` rows of `cols` values (f64 or
 * f32) into buf, padded to a multiple of 64 bytes as numpy pads it;
 * returns its length. */
size_t npy_format_header(unsigned char buf[NPY_WRITTEN_MAX], prox_scalar scalar, int64_t rows,
                         int cols);

#endif
