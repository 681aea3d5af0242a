/* input.c: point files, text and binary. The text parser reads a block at
 * a time and walks each block once, calling strtod per number: no per-line
 * allocation (`prox pairs --stats` prints the time, `read_s`). */
#define _POSIX_C_SOURCE 200809L
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "npy.h"
#include "prox/grid.h"

/* ---- files -------------------------------------------------------------- */

/* The descriptor a read left open when die() returned instead of exiting
 * (only the fuzz targets' stub does): closed by the next open. */
static int open_fd = -1;

static int open_input(const char *path)
{
    if (open_fd > STDERR_FILENO)
        close(open_fd);
    open_fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY);
    if (open_fd < 0)
        die(EXIT_IO, "cannot open %s: %s", path, strerror(errno));
    return open_fd;
}

static void close_input(int fd)
{
    if (fd > STDERR_FILENO)
        close(fd);
    open_fd = -1;
}

/* Up to n bytes (fewer only at the end of the file). */
static size_t read_some(int fd, void *buf, size_t n, const char *name)
{
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(fd, (char *)buf + done, n - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            die(EXIT_IO, "cannot read %s: %s", name, strerror(errno));
        if (got == 0)
            break;
        done += (size_t)got;
    }
    return done;
}

/* The size of a regular file, -1 for a pipe, a device or stdin. */
static int64_t regular_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
}

/* ---- binary ------------------------------------------------------------ */

bool is_raw_binary_name(const char *path)
{
    return has_suffix(path, ".f64") || has_suffix(path, ".f32");
}

bool is_binary_name(const char *path)
{
    return is_raw_binary_name(path) || has_suffix(path, ".npy");
}

static void to_host_order(unsigned char *data, size_t count, size_t size)
{
    const uint16_t one = 1;
    if (*(const unsigned char *)&one == 1)
        return; /* little-endian host: nothing to do */
    for (size_t i = 0; i < count; i++) {
        unsigned char *v = data + i * size;
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = v[a];
            v[a] = v[b];
            v[b] = t;
        }
    }
}

static void check_finite(const binary_file *bf, const char *path, const char *item)
{
    for (int64_t k = 0; k < bf->rows * bf->cols; k++) {
        double v = bf->scalar == PROX_F32 ? ((const float *)bf->values)[k]
                                          : ((const double *)bf->values)[k];
        if (!isfinite(v))
            die(EXIT_DATA, "%s: %s %lld, number %d is not finite", path, item,
                (long long)(k / bf->cols), (int)(k % bf->cols));
    }
}

/* A .npy file's header, read from fd: scalar, rows and cols. */
static void read_npy_header(int fd, const char *path, binary_file *bf)
{
    unsigned char head[NPY_MAX_HEADER + 12];
    size_t got = read_some(fd, head, NPY_MIN_PREFIX + 2, path);
    size_t total = npy_header_bytes(head, got, path);
    if (total > got)
        got += read_some(fd, head + got, total - got, path);
    npy_array a;
    npy_parse(head, got, path, &a);
    bf->scalar = a.scalar;
    bf->rows = a.rows;
    bf->cols = a.cols;
    int64_t size = regular_size(fd);
    int64_t values = a.rows * a.cols * (a.scalar == PROX_F32 ? 4 : 8);
    if (size >= 0 && size - (int64_t)total != values)
        die(EXIT_DATA, "%s: the .npy header says %lld x %d values (%lld bytes), the file holds "
                       "%lld bytes after it", path, (long long)a.rows, a.cols,
            (long long)values, (long long)(size - (int64_t)total));
}

/* The values after the header: exactly `bytes` of them (a .npy file), or
 * all that is left (bytes < 0: a raw file), checked to be whole rows. */
static void read_values(int fd, const char *path, int64_t bytes, binary_file *bf)
{
    size_t value = bf->scalar == PROX_F32 ? sizeof(float) : sizeof(double);
    size_t row = value * (size_t)bf->cols;
    int64_t size = bytes >= 0 ? bytes : regular_size(fd);
    if (size >= 0 && (uint64_t)size % row != 0)
        die(EXIT_DATA, "%s: size %lld bytes is not a multiple of %zu (%d numbers of %zu bytes)",
            path, (long long)size, row, bf->cols, value);
    if (size >= 0 && (uint64_t)size / row > (uint64_t)PROX_MAX_POINTS)
        die(EXIT_DATA, "%s: too many rows (%lld)", path, (long long)((uint64_t)size / row));
    size_t cap = size >= 0 ? (size_t)size + 1 : (size_t)1 << 16, len = 0;
    char *data = xmalloc(cap);
    for (;;) { /* a pipe or a file growing while read: as much as comes */
        len += read_some(fd, data + len, cap - len, path);
        if (len < cap)
            break;
        data = xrealloc(data, cap = checked_size((int64_t)cap, 2));
    }
    bf->values = data;
    if (bytes >= 0 && len != (size_t)bytes)
        die(EXIT_DATA, "%s: %zu bytes of values where the .npy header says %lld", path, len,
            (long long)bytes);
    if (len % row != 0)
        die(EXIT_DATA, "%s: size %zu bytes is not a multiple of %zu (%d numbers of %zu bytes)",
            path, len, row, bf->cols, value);
    if (len / row > (uint64_t)PROX_MAX_POINTS)
        die(EXIT_DATA, "%s: too many rows (%zu)", path, len / row);
    bf->rows = (int64_t)(len / row);
}

void read_binary_file(const char *path, int cols, const char *item, binary_file *bf)
{
    memset(bf, 0, sizeof *bf);
    int fd = open_input(path);
    int64_t bytes = -1;
    if (has_suffix(path, ".npy")) {
        read_npy_header(fd, path, bf);
        if (cols > 0 && bf->cols != cols)
            die(EXIT_DATA, "%s: the .npy array has %d columns; %d expected", path, bf->cols,
                cols);
        bytes = bf->rows * bf->cols * (bf->scalar == PROX_F32 ? 4 : 8);
    } else {
        bf->scalar = has_suffix(path, ".f32") ? PROX_F32 : PROX_F64;
        bf->cols = cols;
    }
    read_values(fd, path, bytes, bf);
    close_input(fd);
    size_t value = bf->scalar == PROX_F32 ? sizeof(float) : sizeof(double);
    to_host_order(bf->values, (size_t)(bf->rows * bf->cols), value);
    check_finite(bf, path, item);
}

/* ---- text -------------------------------------------------------------- */

typedef struct text_parser {
    const char *path; /* for messages */
    int64_t line;
    int header_dim;   /* from "dim=D", 0 if none */
    point_file *pf;
    int64_t capacity; /* points */
} text_parser;

static bool is_separator(char c)
{
    return c == ' ' || c == ',' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool ends_token(char c)
{
    return is_separator(c) || c == '\n' || c == '#' || c == '\0';
}

/* At most this many bytes of a bad token are shown. */
#define TOKEN_SHOWN 60

/* The token at p (up to TOKEN_SHOWN bytes) for a message: printable ASCII
 * as it is, a backslash doubled, any other byte as \xHH, so that a file
 * cannot send escape sequences to the terminal. */
static const char *escape_token(const char *p, char out[TOKEN_SHOWN * 4 + 1])
{
    char *o = out;
    for (int n = 0; n < TOKEN_SHOWN && !ends_token(p[n]); n++) {
        unsigned char c = (unsigned char)p[n];
        if (c == '\\') {
            *o++ = '\\';
            *o++ = '\\';
        } else if (c >= 0x20 && c < 0x7f) {
            *o++ = (char)c;
        } else {
            o += sprintf(o, "\\x%02x", c);
        }
    }
    *o = '\0';
    return out;
}

int line_numbers(const char *path, int64_t line, const char **at, double *v, int max,
                 const char *what)
{
    const char *p = *at;
    int found = 0;
    for (;;) {
        while (is_separator(*p))
            p++;
        if (*p == '\n' || *p == '#' || *p == '\0')
            break;
        char *end;
        double x = strtod(p, &end);
        if (end == p || !ends_token(*end)) {
            char token[TOKEN_SHOWN * 4 + 1];
            die_at(EXIT_DATA, path, line, "not a number: '%s'", escape_token(p, token));
        }
        if (!isfinite(x))
            die_at(EXIT_DATA, path, line, "%s is not finite", what);
        if (found < max)
            v[found] = x;
        found++;
        p = end;
    }
    *at = p;
    return found;
}

static const char *next_line(const char *p, const char *end)
{
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    return eol != NULL ? eol + 1 : end;
}

/* Bytes read at a time, and the longest line held whole. */
#define TEXT_BLOCK ((size_t)1 << 20)
#define TEXT_LINE_MAX ((size_t)1 << 24)

/* The lines of [p, end) to fn; *end is a NUL. Returns the last line's number. */
static int64_t hand_lines(char *p, char *end, int64_t line, text_line_fn fn, void *ctx)
{
    while (p < end) {
        fn(ctx, ++line, p);
        p = (char *)next_line(p, end);
    }
    return line;
}

/* Just past the last '\n' in [from, to), or from. */
static char *after_last_newline(char *from, char *to)
{
    while (to > from && to[-1] != '\n')
        to--;
    return to;
}

/* buf[0, len) holds a NUL at nul: the lines before its line go to fn,
 * then its line is fatal. */
static _Noreturn void stop_at_nul(const char *name, char *buf, char *nul, int64_t line,
                                  text_line_fn fn, void *ctx)
{
    char *lines_end = after_last_newline(buf, nul);
    *lines_end = '\0';
    line = hand_lines(buf, lines_end, line, fn, ctx);
    die_at(EXIT_DATA, name, line + 1,
           "NUL byte in a text file (binary files must be named *.npy, *.f64 or *.f32)");
}

void read_text_lines(const char *path, text_line_fn fn, void *ctx)
{
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    int fd = open_input(path);
    size_t cap = TEXT_BLOCK + 1, len = 0; /* buf[0, len): the start of an unfinished line */
    char *buf = xmalloc(cap);
    int64_t line = 0;
    for (;;) {
        if (cap - 1 - len < TEXT_BLOCK / 2) { /* a long line: room to read on */
            if (len > TEXT_LINE_MAX)
                die_at(EXIT_DATA, name, line + 1, "line longer than %zu bytes", TEXT_LINE_MAX);
            buf = xrealloc(buf, cap = 2 * cap - 1);
        }
        size_t got = read_some(fd, buf + len, cap - 1 - len, name);
        char *nul = memchr(buf + len, '\0', got);
        len += got;
        if (nul != NULL)
            stop_at_nul(name, buf, nul, line, fn, ctx);
        bool at_end = len < cap - 1; /* read_some stops short only at the end */
        char *lines_end = at_end ? buf + len : after_last_newline(buf, buf + len);
        char kept = *lines_end;
        *lines_end = '\0';
        line = hand_lines(buf, lines_end, line, fn, ctx);
        if (at_end)
            break;
        *lines_end = kept;
        len = (size_t)(buf + len - lines_end);
        memmove(buf, lines_end, len);
    }
    close_input(fd);
    free(buf);
}

/* "# ... radius=R ... dim=D": words of a comment line before the data. */
static void read_header_comment(text_parser *tp, const char *p)
{
    while (*p != '\n' && *p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == '#')
            p++;
        char *end = (char *)p;
        if (strncmp(p, "radius=", 7) == 0) {
            double r = strtod(p + 7, &end);
            if (end == p + 7 || !ends_token(*end) || !(r >= PROX_RADIUS_MIN && r <= PROX_RADIUS_MAX)) {
                char token[TOKEN_SHOWN * 4 + 1];
                die_at(EXIT_DATA, tp->path, tp->line,
                       "bad header '%s': the radius must be a number in [%g, %g]",
                       escape_token(p, token), PROX_RADIUS_MIN, PROX_RADIUS_MAX);
            }
            tp->pf->has_radius = true;
            tp->pf->radius = r;
        } else if (strncmp(p, "dim=", 4) == 0) {
            long d = strtol(p + 4, &end, 10);
            if (end != p + 4 && ends_token(*end) && (d == 2 || d == 3))
                tp->header_dim = (int)d;
        }
        p = end;
        while (*p != '\n' && *p != '\0' && *p != ' ' && *p != '\t')
            p++;
    }
}

static void append_point(text_parser *tp, const double *v)
{
    point_file *pf = tp->pf;
    if (pf->dim == 0)
        pf->dim = tp->header_dim != 0 ? tp->header_dim : 3;
    if (pf->count == tp->capacity) {
        if (pf->count == PROX_MAX_POINTS)
            die_at(EXIT_DATA, tp->path, tp->line, "too many points");
        tp->capacity = tp->capacity < 1024 ? 1024 : 2 * tp->capacity;
        pf->coords = xrealloc(pf->coords, checked_size(tp->capacity * pf->dim, sizeof(double)));
    }
    memcpy((double *)pf->coords + pf->count * pf->dim, v, sizeof(double) * (size_t)pf->dim);
    pf->count++;
}

/* One line (read_text_lines' callback). */
static void parse_line(void *ctx, int64_t line, const char *p)
{
    text_parser *tp = ctx;
    tp->line = line;
    double v[3];
    int found = line_numbers(tp->path, tp->line, &p, v, 3, "coordinate");
    if (*p == '#' && found == 0 && tp->pf->count == 0)
        read_header_comment(tp, p);
    if (found > 0) {
        int dim = tp->pf->dim != 0 ? tp->pf->dim : tp->header_dim != 0 ? tp->header_dim : 3;
        if (found != dim)
            die_at(EXIT_DATA, tp->path, tp->line, "expected %d numbers, found %d", dim, found);
        append_point(tp, v);
    }
}

static void read_text(point_file *pf, const char *path)
{
    text_parser tp = { strcmp(path, "-") == 0 ? "<stdin>" : path, 0, 0, pf, 0 };
    read_text_lines(path, parse_line, &tp);
    if (pf->dim == 0)
        pf->dim = tp.header_dim != 0 ? tp.header_dim : 3;
    if (pf->coords == NULL)
        pf->coords = xmalloc(3 * sizeof(double)); /* no points: still a valid address */
}

/* .npy (its shape gives the dimension) or raw .f64/.f32 (3D unless told). */
static void read_binary_points(point_file *pf, const char *path)
{
    binary_file bf;
    bool npy = !is_raw_binary_name(path);
    read_binary_file(path, npy ? pf->dim : pf->dim ? pf->dim : 3, "point", &bf);
    if (bf.cols != 2 && bf.cols != 3)
        die(EXIT_DATA, "%s: %d coordinates a point; prox reads 2 or 3", path, bf.cols);
    pf->scalar = bf.scalar;
    pf->dim = bf.cols;
    pf->count = bf.rows;
    pf->coords = bf.values;
}

/* ---- public ------------------------------------------------------------ */

void point_file_read(point_file *pf, const char *path, int dim)
{
    memset(pf, 0, sizeof *pf);
    pf->dim = dim;
    pf->scalar = PROX_F64;
    if (is_binary_name(path))
        read_binary_points(pf, path);
    else
        read_text(pf, path);
}

void point_file_free(point_file *pf)
{
    free(pf->coords);
    memset(pf, 0, sizeof *pf);
}

prox_points point_file_view(const point_file *pf)
{
    if (pf->scalar == PROX_F32)
        return prox_points_f32(pf->coords, pf->count, pf->dim);
    return prox_points_f64(pf->coords, pf->count, pf->dim);
}
