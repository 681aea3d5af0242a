/* input.c: point files, text and binary. The text parser reads the whole
 * file into one buffer and walks it once, calling strtod per number: no
 * per-line allocation (`prox pairs --stats` prints the time, `read_s`). */
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
#include "prox/grid.h"

/* ---- whole file into memory --------------------------------------------- */

char *read_whole_file(const char *path, size_t *len_out)
{
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY);
    if (fd < 0)
        die(EXIT_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    size_t cap = 1 << 16;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1;
    char *buf = xmalloc(cap);
    size_t len = 0;
    for (;;) {
        if (len + 1 >= cap)
            buf = xrealloc(buf, cap *= 2);
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            die(EXIT_IO, "cannot read %s: %s", is_stdin ? "<stdin>" : path, strerror(errno));
        if (got == 0)
            break;
        len += (size_t)got;
    }
    if (!is_stdin)
        close(fd);
    buf[len] = '\0';
    *len_out = len;
    return buf;
}

/* ---- binary ------------------------------------------------------------ */

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

static void check_finite(const point_file *pf, const char *path)
{
    prox_points view = point_file_view(pf);
    for (int64_t i = 0; i < pf->count; i++)
        for (int k = 0; k < pf->dim; k++)
            if (!isfinite(prox_points_get(&view, i, k)))
                die(EXIT_DATA, "%s: point %lld, coordinate %d is not finite", path,
                    (long long)i, k);
}

static void parse_binary(point_file *pf, char *data, size_t len, const char *path)
{
    size_t value_size = pf->scalar == PROX_F64 ? sizeof(double) : sizeof(float);
    size_t point_size = value_size * (size_t)pf->dim;
    if (len % point_size != 0) {
        free(data);
        die(EXIT_DATA, "%s: size %zu bytes is not a multiple of %zu (%d coordinates of %zu bytes)",
            path, len, point_size, pf->dim, value_size);
    }
    if (len / point_size > (uint64_t)PROX_MAX_POINTS) {
        free(data);
        die(EXIT_DATA, "%s: too many points (%zu)", path, len / point_size);
    }
    to_host_order((unsigned char *)data, len / value_size, value_size);
    pf->coords = data;
    pf->count = (int64_t)(len / point_size);
    check_finite(pf, path);
}

/* ---- text -------------------------------------------------------------- */

typedef struct text_parser {
    const char *path; /* for messages */
    const char *end;  /* the buffer's terminating NUL */
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

void reject_nul_bytes(const char *data, size_t len, const char *path)
{
    const char *nul = memchr(data, '\0', len);
    if (nul == NULL)
        return;
    int64_t line = 1;
    for (const char *c = data; c < nul; c++)
        line += *c == '\n';
    die_at(EXIT_DATA, path, line,
           "NUL byte in a text file (binary files must be named *.f64 or *.f32)");
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

const char *next_line(const char *p, const char *end)
{
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    return eol != NULL ? eol + 1 : end;
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

/* One line starting at p; returns the start of the next one. */
static const char *parse_line(text_parser *tp, const char *p)
{
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
    return next_line(p, tp->end);
}

static void parse_text(point_file *pf, const char *text, size_t len, const char *path)
{
    text_parser tp = { path, text + len, 0, 0, pf, 0 };
    const char *p = text;
    while (p < tp.end) {
        tp.line++;
        p = parse_line(&tp, p);
    }
    if (pf->dim == 0)
        pf->dim = tp.header_dim != 0 ? tp.header_dim : 3;
    if (pf->coords == NULL)
        pf->coords = xmalloc(3 * sizeof(double)); /* no points: still a valid address */
}

/* ---- public ------------------------------------------------------------ */

void point_file_read(point_file *pf, const char *path, int dim)
{
    memset(pf, 0, sizeof *pf);
    pf->dim = dim;
    pf->scalar = has_suffix(path, ".f32") ? PROX_F32 : PROX_F64;
    bool binary = has_suffix(path, ".f64") || has_suffix(path, ".f32");
    size_t len;
    char *data = read_whole_file(path, &len);
    if (binary) {
        if (pf->dim == 0)
            pf->dim = 3;
        parse_binary(pf, data, len, path);
        return;
    }
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    reject_nul_bytes(data, len, name);
    parse_text(pf, data, len, name);
    free(data);
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
