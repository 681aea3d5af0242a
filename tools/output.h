/* output.h: buffered output to stdout or to a file that appears only when
 * complete. A file is written as PATH.tmp.XXXXXX in the same directory and
 * renamed to PATH by output_commit; any die() before that removes it. */
#ifndef PROX_TOOLS_OUTPUT_H
#define PROX_TOOLS_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct output {
    int fd;
    bool close_fd;
    char *buf;
    size_t len, cap;
    const char *path; /* as given, for messages; "<stdout>" */
    char *final_path; /* where the temporary file is renamed to */
    char *temp_path;  /* NULL when writing stdout or a device in place */
    int cleanup_slot;
    bool keep_mode;   /* an existing file is replaced: its permission bits */
    unsigned mode;
} output;

/* path NULL or "-" means stdout; "" is a usage error; a path that exists
 * and is not a regular file (/dev/null, a FIFO) is written in place. A
 * symbolic link is followed: its target is replaced (or created, if the
 * link dangles) and the link stays. An existing file that is not writable is
 * refused; a replaced file keeps its permission bits. I/O failures exit with
 * EXIT_IO. */
void output_open(output *out, const char *path);
/* A usage error (exit 2) when the file out replaces is the file `input`
 * names ("-": what stdin reads), by device and inode: through a link,
 * another name or a redirection alike. Writing it would replace the input
 * with the results. */
void output_refuse_input(const output *out, const char *input);
/* Flush, close and rename into place (stdout: flush only). */
void output_commit(output *out);
void output_flush(output *out);

/* Room for at least n more bytes at out->buf + out->len (n <= 64 KiB). */
static inline char *output_room(output *out, size_t n)
{
    if (out->cap - out->len < n)
        output_flush(out);
    return out->buf + out->len;
}

void output_bytes(output *out, const void *data, size_t n);
static inline void output_str(output *out, const char *s)
{
    output_bytes(out, s, strlen(s));
}
void output_printf(output *out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Decimal digits of v at p; returns the end. At most 20 bytes. */
char *format_u64(char *p, uint64_t v);

/* Output formatted on every thread: items [0, items) are cut into blocks of
 * items_per_block; bound(ctx, begin, end) gives an upper bound of the bytes
 * that format(ctx, begin, end, buf) writes into buf for a block (format may
 * also scribble up to OUTPUT_SLACK bytes past its output). Blocks go out in
 * order, so the bytes are those of one serial loop. */
#define OUTPUT_SLACK 64
typedef size_t (*block_bound_fn)(const void *ctx, int64_t begin, int64_t end);
typedef size_t (*block_format_fn)(const void *ctx, int64_t begin, int64_t end, char *buf);
void output_parallel(output *out, int64_t items, int64_t items_per_block, const void *ctx,
                     block_bound_fn bound, block_format_fn format);

/* rows lines of cols doubles each, "%.17g" separated by single spaces.
 * Formatted on every thread (output_parallel). */
void output_double_rows(output *out, const double *values, int64_t rows, int cols);
/* Raw little-endian binary, as doubles or rounded to floats. */
void output_f64_le(output *out, const double *values, int64_t count);
void output_f32_le(output *out, const double *values, int64_t count);

#endif
