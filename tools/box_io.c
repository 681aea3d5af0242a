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

static void parse_text(row_file *rf, const char *text, size_t len, const char *path)
{
    int64_t capacity = 0, line = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        double v[6];
        int found = line_numbers(path, ++line, &p, v, 6, "number");
        p = next_line(p, end);
        if (found == 0)
            continue;
        if (rf->cols == 0) {
            if (found != 4 && found != 6)
                die_at(EXIT_DATA, path, line,
                       "expected 4 numbers (2D) or 6 (3D), found %d", found);
            rf->cols = found;
        }
        if (found != rf->cols)
            die_at(EXIT_DATA, path, line, "expected %d numbers, found %d", rf->cols, found);
        if (rf->rows == capacity) {
            if (rf->rows == PROX_MAX_POINTS)
                die_at(EXIT_DATA, path, line, "too many rows");
            capacity = capacity < 1024 ? 1024 : 2 * capacity;
            rf->values = xrealloc(rf->values, checked_size(capacity * rf->cols, sizeof(double)));
        }
        memcpy((double *)rf->values + rf->rows * rf->cols, v, sizeof(double) * (size_t)rf->cols);
        rf->rows++;
    }
    if (rf->cols == 0)
        rf->cols = 6; /* no rows: 3D, as for points */
    if (!rf->values)
        rf->values = xmalloc(6 * sizeof(double));
}

static void parse_binary(row_file *rf, char *data, size_t len, const char *path)
{
    size_t value = rf->scalar == PROX_F32 ? sizeof(float) : sizeof(double);
    size_t row = value * (size_t)rf->cols;
    if (len % row != 0)
        die(EXIT_DATA, "%s: size %zu bytes is not a multiple of %zu (%d numbers of %zu bytes)",
            path, len, row, rf->cols, value);
    rf->rows = (int64_t)(len / row);
    rf->values = data;
    for (int64_t k = 0; k < rf->rows * rf->cols; k++) {
        double x = rf->scalar == PROX_F32 ? ((float *)data)[k] : ((double *)data)[k];
        if (!isfinite(x))
            die(EXIT_DATA, "%s: row %lld, number %d is not finite", path,
                (long long)(k / rf->cols), (int)(k % rf->cols));
    }
}

void row_file_read(row_file *rf, const char *path, int cols)
{
    memset(rf, 0, sizeof *rf);
    rf->cols = cols;
    bool binary = has_suffix(path, ".f64") || has_suffix(path, ".f32");
    rf->scalar = has_suffix(path, ".f32") ? PROX_F32 : PROX_F64;
    size_t len;
    char *data = read_whole_file(path, &len);
    if (binary) {
        if (cols == 0)
            die_usage(NULL, "%s is binary: give --dim", path);
        parse_binary(rf, data, len, path); /* keeps data */
        return;
    }
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    reject_nul_bytes(data, len, name);
    parse_text(rf, data, len, name);
    free(data);
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
