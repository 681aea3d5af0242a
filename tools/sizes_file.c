/* sizes_file.c: the sizes of `prox pairs --radii` and `--types` /
 * `--cutoffs` read from their files (sizes_file.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "input.h"
#include "sizes_file.h"

typedef struct radii_text {
    const char *path;
    double *values;
    int64_t count, capacity;
} radii_text;

static void radii_push(radii_text *t, double v)
{
    if (t->count == t->capacity) {
        t->capacity = t->capacity ? 2 * t->capacity : 1024;
        t->values = realloc(t->values, checked_size(t->capacity, sizeof *t->values));
        if (!t->values)
            die(EXIT_NO_MEMORY, "out of memory for sizes");
    }
    t->values[t->count++] = v;
}

/* The numbers of one line, pushed ('#' comments, blank lines skipped);
 * returns how many. */
static int64_t numbers_line(radii_text *t, int64_t line, const char *text)
{
    int64_t n = 0;
    for (;;) {
        while (*text == ' ' || *text == '\t' || *text == '\r')
            text++;
        if (*text == '#' || *text == '\n' || *text == 0)
            return n;
        char *end;
        double v = strtod(text, &end);
        if (end == text || (*end && !strchr(" \t\r\n#", *end)))
            die(EXIT_DATA, "%s:%lld: expected numbers", t->path, (long long)line);
        radii_push(t, v);
        n++;
        text = end;
    }
}

/* One radius a line. */
static void radius_line(void *ctx, int64_t line, const char *text)
{
    radii_text *t = ctx;
    if (numbers_line(t, line, text) > 1)
        die(EXIT_DATA, "%s:%lld: expected one radius", t->path, (long long)line);
}

/* The radii of --radii (or the types of --types), one per point (widened
 * to double). */
static double *read_radii(const char *path, int64_t points, const char *what)
{
    double *r;
    int64_t count;
    if (is_binary_name(path)) {
        binary_file bf;
        read_binary_file(path, 1, "radius", &bf);
        count = bf.rows;
        r = xmalloc(checked_size(count + 1, sizeof *r));
        for (int64_t i = 0; i < count; i++)
            r[i] = bf.scalar == PROX_F64 ? ((const double *)bf.values)[i]
                                         : (double)((const float *)bf.values)[i];
        free(bf.values);
    } else {
        radii_text t = {path, NULL, 0, 0};
        read_text_lines(path, radius_line, &t);
        r = t.values ? t.values : xmalloc(sizeof *r);
        count = t.count;
    }
    if (count != points)
        die(EXIT_DATA, "%s: %lld %s for %lld points", path, (long long)count, what,
            (long long)points);
    return r;
}

/* Types as the library takes them: each value an integer of int32 (the
 * library checks the range of the matrix). */
static int32_t *types_of(const double *v, int64_t n, const char *path)
{
    for (int64_t i = 0; i < n; i++) /* checked first: nothing held when it exits */
        if (!(v[i] == floor(v[i]) && v[i] >= 0 && v[i] <= INT32_MAX))
            die(EXIT_DATA, "%s: the type of point %lld is %g; types are integers >= 0", path,
                (long long)i, v[i]);
    int32_t *t = xmalloc(checked_size(n + 1, sizeof *t));
    for (int64_t i = 0; i < n; i++)
        t[i] = (int32_t)v[i];
    return t;
}

/* One row of --cutoffs: each line holds as many numbers as the first. */
typedef struct matrix_text {
    radii_text values;
    int64_t rows, columns;
} matrix_text;

static void matrix_line(void *ctx, int64_t line, const char *text)
{
    matrix_text *m = ctx;
    int64_t n = numbers_line(&m->values, line, text);
    if (n == 0)
        return;
    if (m->rows == 0)
        m->columns = n;
    if (n != m->columns)
        die(EXIT_DATA, "%s:%lld: %lld numbers, but the first row has %lld", m->values.path,
            (long long)line, (long long)n, (long long)m->columns);
    m->rows++;
}

/* The square cutoff matrix of --cutoffs; *types its side. */
static double *read_cutoffs(const char *path, int *types)
{
    matrix_text m = {{path, NULL, 0, 0}, 0, 0};
    read_text_lines(path, matrix_line, &m);
    if (m.rows == 0 || m.rows != m.columns || m.rows > PROX_MAX_TYPES)
        die(EXIT_DATA, "%s: the cutoffs are %lld rows of %lld; expected a square matrix of 1 "
                       "to %d types",
            path, (long long)m.rows, (long long)m.columns, PROX_MAX_TYPES);
    *types = (int)m.rows;
    return m.values.values;
}

void sizes_files_load(const sizes_files *f, int64_t count, loaded_sizes *out)
{
    memset(out, 0, sizeof *out);
    out->radii = read_radii(f->types ? f->types : f->radii, count, f->types ? "types" : "radii");
    out->sizes = prox_sizes_radii(out->radii, f->rule);
    if (f->types) {
        int types;
        out->cutoff = read_cutoffs(f->cutoffs, &types);
        out->type = types_of(out->radii, count, f->types);
        out->sizes = prox_sizes_types(out->type, types, out->cutoff);
    }
}

void loaded_sizes_free(loaded_sizes *s)
{
    free(s->radii);
    free(s->type);
    free(s->cutoff);
}
