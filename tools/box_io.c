/* box_io.c: row files (boxes, segments) and pair lines. */
#define _POSIX_C_SOURCE 200809L
#include "box_io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "input.h"

/* ---- reading ------------------------------------------------------------ */

typedef struct row_parser {
    const char *path; /* for messages */
    row_file *rf;
    int64_t capacity; /* rows */
} row_parser;

/* One line (read_text_lines' callback). */
static void parse_row(void *ctx, int64_t line, const char *p)
{
    row_parser *rp = ctx;
    row_file *rf = rp->rf;
    double v[6];
    int found = line_numbers(rp->path, line, &p, v, 6, "number");
    if (found == 0)
        return;
    if (rf->cols == 0) {
        if (found != 4 && found != 6)
            die_at(EXIT_DATA, rp->path, line, "expected 4 numbers (2D) or 6 (3D), found %d",
                   found);
        rf->cols = found;
    }
    if (found != rf->cols)
        die_at(EXIT_DATA, rp->path, line, "expected %d numbers, found %d", rf->cols, found);
    if (rf->rows == rp->capacity) {
        if (rf->rows == PROX_MAX_POINTS)
            die_at(EXIT_DATA, rp->path, line, "too many rows");
        rp->capacity = rp->capacity < 1024 ? 1024 : 2 * rp->capacity;
        rf->values = xrealloc(rf->values, checked_size(rp->capacity * rf->cols, sizeof(double)));
    }
    memcpy((double *)rf->values + rf->rows * rf->cols, v, sizeof(double) * (size_t)rf->cols);
    rf->rows++;
}

static void read_text(row_file *rf, const char *path)
{
    row_parser rp = {strcmp(path, "-") == 0 ? "<stdin>" : path, rf, 0};
    read_text_lines(path, parse_row, &rp);
    if (rf->cols == 0)
        rf->cols = 6; /* no rows: 3D, as for points */
    if (!rf->values)
        rf->values = xmalloc(6 * sizeof(double));
}

void row_file_read(row_file *rf, const char *path, int cols)
{
    memset(rf, 0, sizeof *rf);
    rf->cols = cols;
    rf->scalar = PROX_F64;
    if (!is_binary_name(path)) {
        read_text(rf, path);
        return;
    }
    if (cols == 0 && is_raw_binary_name(path))
        die_usage(NULL, "%s is raw binary (no header): give --dim", path);
    binary_file bf;
    read_binary_file(path, cols, "row", &bf);
    if (bf.cols != 4 && bf.cols != 6)
        die(EXIT_DATA, "%s: %d numbers a row; boxes and segments take 4 (2D) or 6 (3D)", path,
            bf.cols);
    rf->scalar = bf.scalar;
    rf->cols = bf.cols;
    rf->rows = bf.rows;
    rf->values = bf.values;
}

void row_file_free(row_file *rf)
{
    free(rf->values);
    memset(rf, 0, sizeof *rf);
}

prox_boxes row_file_boxes(const row_file *rf, int dim)
{
    if (rf->scalar == PROX_F32)
        return prox_boxes_f32(rf->values, rf->rows, dim);
    return prox_boxes_f64(rf->values, rf->rows, dim);
}

void row_file_segments(const row_file *rf, int dim, prox_points *starts, prox_points *ends)
{
    size_t value = rf->scalar == PROX_F32 ? sizeof(float) : sizeof(double);
    const char *base = rf->values;
    ptrdiff_t stride = (ptrdiff_t)(2 * (size_t)dim * value);
    *starts = prox_points_strided(base, rf->rows, dim, rf->scalar, stride);
    *ends = prox_points_strided(base + (size_t)dim * value, rf->rows, dim, rf->scalar, stride);
}

/* ---- pair lines ----------------------------------------------------------- */

static size_t pairs_bound(const void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    return (size_t)(end - begin) * 22;
}

static size_t format_pairs(const void *ctx, int64_t begin, int64_t end, char *buf)
{
    const prox_pair *pairs = ctx;
    char *p = buf;
    for (int64_t k = begin; k < end; k++) {
        p = format_u64(p, pairs[k].i);
        *p++ = ' ';
        p = format_u64(p, pairs[k].j);
        *p++ = '\n';
    }
    return (size_t)(p - buf);
}

void write_pair_lines(output *out, const prox_pair_buffer *buffer)
{
    output_parallel(out, buffer->count, 1 << 16, buffer->pairs, pairs_bound, format_pairs);
}
