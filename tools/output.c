/* output.c: fast buffered output and the write-then-rename protocol. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"

#define OUTPUT_BUFFER_BYTES (4u << 20)

/* Devices, FIFOs and the like (/dev/null, /dev/stdout) are written in place:
 * renaming a file over them would replace them. */
static bool open_in_place(output *out, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return false;
    out->fd = open(path, O_WRONLY);
    if (out->fd < 0)
        die(EXIT_IO, "cannot open %s: %s", path, strerror(errno));
    out->close_fd = true;
    return true;
}

static char *copy_string(const char *text)
{
    char *copy = xmalloc(strlen(text) + 1);
    strcpy(copy, text);
    return copy;
}

/* The target of the symbolic link at path, relative to the link's
 * directory when the link is relative; NULL if path is not a link. */
static char *link_target(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return NULL;
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0 || (size_t)n >= sizeof target - 1)
        die(EXIT_IO, "cannot read the link %s: %s", path, n < 0 ? strerror(errno) : "too long");
    target[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (target[0] == '/' || slash == NULL)
        return copy_string(target);
    size_t dir = (size_t)(slash - path) + 1;
    char *joined = xmalloc(dir + (size_t)n + 1);
    memcpy(joined, path, dir);
    memcpy(joined + dir, target, (size_t)n + 1);
    return joined;
}

/* Where the file will be: the path, or what a symbolic link points to,
 * followed to the end (so that the rename replaces the target, not the link;
 * a dangling link's target is created, as a plain write through it would). */
static char *final_path_of(const char *path)
{
    char *at = copy_string(path);
    for (int hops = 0; hops < 40; hops++) {
        char *next = link_target(at);
        if (next == NULL)
            return at;
        free(at);
        at = next;
    }
    die(EXIT_IO, "cannot write %s: too many levels of symbolic links", path);
}

/* An existing OUT is replaced only if it could be written in place: a
 * read-only file stays as it is (exit 4, as a shell's '>' would fail). The
 * new file then gets the old one's permission bits. */
static void check_replaceable(output *out)
{
    struct stat st;
    if (stat(out->final_path, &st) != 0)
        return;
    if (access(out->final_path, W_OK) != 0)
        die(EXIT_IO, "cannot write %s: %s", out->path, strerror(errno));
    out->keep_mode = true;
    out->mode = st.st_mode & 07777;
}

static void create_temp(output *out)
{
    static const char suffix[] = ".tmp.XXXXXX";
    size_t n = strlen(out->final_path);
    out->temp_path = xmalloc(n + sizeof suffix);
    memcpy(out->temp_path, out->final_path, n);
    memcpy(out->temp_path + n, suffix, sizeof suffix);
    out->fd = mkstemp(out->temp_path);
    if (out->fd < 0)
        die(EXIT_IO, "cannot create %s: %s", out->path, strerror(errno));
    out->cleanup_slot = cleanup_register(out->temp_path);
    out->close_fd = true;
    /* mkstemp makes the file 0600; give it the mode a plain create would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(out->fd, out->keep_mode ? out->mode : 0666 & ~mask);
}

void output_open(output *out, const char *path)
{
    memset(out, 0, sizeof *out);
    out->cap = OUTPUT_BUFFER_BYTES;
    out->buf = xmalloc(out->cap);
    out->cleanup_slot = -1;
    if (path == NULL || strcmp(path, "-") == 0) {
        out->fd = STDOUT_FILENO;
        out->path = "<stdout>";
        return;
    }
    if (path[0] == '\0')
        die_usage(NULL, "the output file name is empty (-o '')");
    out->path = path;
    if (open_in_place(out, path))
        return;
    out->final_path = final_path_of(path);
    check_replaceable(out);
    create_temp(out);
}

void output_refuse_input(const output *out, const char *input)
{
    struct stat o, i;
    if (out->final_path == NULL || stat(out->final_path, &o) != 0)
        return; /* stdout, a device or FIFO written in place, or a new file */
    bool is_stdin = strcmp(input, "-") == 0;
    if ((is_stdin ? fstat(STDIN_FILENO, &i) : stat(input, &i)) != 0)
        return; /* reading it will say why */
    if (o.st_dev == i.st_dev && o.st_ino == i.st_ino)
        die(EXIT_USAGE, "the output %s is the input %s: it would be replaced by the results; "
                        "write them to another file", out->path, is_stdin ? "<stdin>" : input);
}

static void write_all(output *out, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t done = write(out->fd, data, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            die(EXIT_IO, "cannot write %s: %s", out->path, strerror(errno));
        data += done;
        n -= (size_t)done;
    }
}

void output_flush(output *out)
{
    write_all(out, out->buf, out->len);
    out->len = 0;
}

void output_commit(output *out)
{
    output_flush(out);
    if (out->close_fd && close(out->fd) != 0)
        die(EXIT_IO, "cannot write %s: %s", out->path, strerror(errno));
    if (out->temp_path != NULL) {
        if (rename(out->temp_path, out->final_path) != 0)
            die(EXIT_IO, "cannot rename %s to %s: %s", out->temp_path, out->final_path,
                strerror(errno));
        cleanup_forget(out->cleanup_slot);
    }
    free(out->temp_path);
    free(out->final_path);
    free(out->buf);
    memset(out, 0, sizeof *out);
    out->fd = -1;
}

void output_bytes(output *out, const void *data, size_t n)
{
    if (out->cap - out->len < n) {
        output_flush(out);
        if (n > out->cap) {
            write_all(out, data, n);
            return;
        }
    }
    memcpy(out->buf + out->len, data, n);
    out->len += n;
}

void output_printf(output *out, const char *fmt, ...)
{
    char line[1024];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    if (n >= (int)sizeof line) {
        char *big = xmalloc((size_t)n + 1);
        va_start(args, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, args);
        va_end(args);
        output_bytes(out, big, (size_t)n);
        free(big);
    } else if (n > 0) {
        output_bytes(out, line, (size_t)n);
    }
}

/* "00" "01" ... "99": two digits per division. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static int decimal_digits(uint64_t v)
{
    int n = 1;
    while (v >= 10000) {
        v /= 10000;
        n += 4;
    }
    return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

char *format_u64(char *p, uint64_t v)
{
    char *end = p + decimal_digits(v), *q = end;
    while (v >= 100) {
        q -= 2;
        memcpy(q, digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10)
        memcpy(q - 2, digit_pairs + 2 * v, 2);
    else
        q[-1] = (char)('0' + v);
    return end;
}

/* ---- formatting in parallel -------------------------------------------- */

void output_parallel(output *out, int64_t items, int64_t items_per_block, const void *ctx,
                     block_bound_fn bound, block_format_fn format)
{
    int blocks_per_batch = 2 * effective_threads(0);
    char **bufs = xmalloc(sizeof *bufs * (size_t)blocks_per_batch);
    size_t *caps = xmalloc(sizeof *caps * (size_t)blocks_per_batch);
    size_t *lens = xmalloc(sizeof *lens * (size_t)blocks_per_batch);
    for (int b = 0; b < blocks_per_batch; b++) {
        bufs[b] = NULL;
        caps[b] = 0;
    }
    int64_t batch_items = (int64_t)blocks_per_batch * items_per_block;
    for (int64_t first = 0; first < items; first += batch_items) {
        int blocks = 0;
        for (int64_t begin = first; begin < items && blocks < blocks_per_batch; blocks++) {
            int64_t end = items - begin < items_per_block ? items : begin + items_per_block;
            size_t need = bound(ctx, begin, end) + OUTPUT_SLACK;
            if (need > caps[blocks]) {
                bufs[blocks] = xrealloc(bufs[blocks], need);
                caps[blocks] = need;
            }
            begin = end;
        }
#pragma omp parallel for schedule(dynamic, 1)
        for (int b = 0; b < blocks; b++) {
            int64_t begin = first + (int64_t)b * items_per_block;
            int64_t end = items - begin < items_per_block ? items : begin + items_per_block;
            lens[b] = format(ctx, begin, end, bufs[b]);
        }
        for (int b = 0; b < blocks; b++)
            output_bytes(out, bufs[b], lens[b]);
    }
    for (int b = 0; b < blocks_per_batch; b++)
        free(bufs[b]);
    free(lens);
    free(caps);
    free(bufs);
}

/* ---- doubles as text --------------------------------------------------- */

/* "%.17g" is at most 24 characters ("-2.2250738585072014e-308"). */
#define MAX_DOUBLE_CHARS 25

typedef struct double_rows {
    const double *values;
    int cols;
} double_rows;

static size_t double_rows_bound(const void *ctx, int64_t begin, int64_t end)
{
    const double_rows *rows = ctx;
    return (size_t)(end - begin) * (size_t)rows->cols * (MAX_DOUBLE_CHARS + 1);
}

static size_t format_double_rows(const void *ctx, int64_t begin, int64_t end, char *buf)
{
    const double_rows *rows = ctx;
    char *p = buf;
    for (int64_t r = begin; r < end; r++) {
        for (int c = 0; c < rows->cols; c++) {
            if (c > 0)
                *p++ = ' ';
            p += snprintf(p, MAX_DOUBLE_CHARS, "%.17g", rows->values[r * rows->cols + c]);
        }
        *p++ = '\n';
    }
    return (size_t)(p - buf);
}

void output_double_rows(output *out, const double *values, int64_t rows, int cols)
{
    double_rows ctx = { values, cols };
    output_parallel(out, rows, 8192, &ctx, double_rows_bound, format_double_rows);
}

/* ---- raw binary -------------------------------------------------------- */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static void store_le(unsigned char *dst, const void *src, size_t size)
{
    const unsigned char *s = src;
    for (size_t i = 0; i < size; i++)
        dst[i] = host_is_little_endian() ? s[i] : s[size - 1 - i];
}

void output_f64_le(output *out, const double *values, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        store_le((unsigned char *)output_room(out, 8), &values[i], 8);
        out->len += 8;
    }
}

void output_f32_le(output *out, const double *values, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        float f = (float)values[i]; /* rounds to nearest */
        store_le((unsigned char *)output_room(out, 4), &f, 4);
        out->len += 4;
    }
}
